/* The result object as text: what a model is shown of a run, whether it
 * came through MCP (run_code's text content) or the agent loop. */
#include <errno.h>
#include <string.h>

#include "engine/result_text.h"
#include "util/macro.h"
#include "util/banned.h"

static const char *str_at(json_t *o, const char *a, const char *b)
{
	json_t *v = json_object_get(o, a);

	return json_string_value(b ? json_object_get(v, b) : v);
}

/* Back off to the start of a UTF-8 character, so a cut never splits one
 * (a model's tokenizer, or jansson, would choke on the half). */
static size_t char_start(const char *s, size_t i, size_t n)
{
	while (i > 0 && i < n && ((unsigned char)s[i] & 0xC0) == 0x80)
		i--;
	return i;
}

int text_head_tail(const char *s, size_t n, size_t max, struct buf *b)
{
	size_t half, head, tail;
	int r;

	if (max < 64)
		max = 64;
	if (n <= max)
		return buf_append(b, s, n);
	half = (max - 48) / 2;
	head = char_start(s, half, n);
	tail = char_start(s, n - half, n);
	r = buf_append(b, s, head);
	if (r >= 0)
		r = buf_printf(b, "\n[... %zu bytes left out ...]\n", tail - head);
	if (r >= 0)
		r = buf_append(b, s + tail, n - tail);
	return r;
}

static int section(struct buf *b, const char *title, const char *text, size_t max)
{
	size_t n;
	int r;

	if (!text || !*text)
		return 0;
	n = strlen(text);
	r = buf_printf(b, "%s[%s]\n", b->len ? "\n" : "", title);
	if (r >= 0)
		r = max ? text_head_tail(text, n, max, b) : buf_append(b, text, n);
	if (r >= 0 && b->data[b->len - 1] != '\n')
		r = buf_puts(b, "\n");
	return r;
}

static int error_section(json_t *res, size_t max, struct buf *b)
{
	json_t *err = json_object_get(res, "error");
	const char *tb = str_at(err, "traceback", NULL), *err_text = str_at(res, "logs", "stderr");

	if (!json_is_object(err))
		return 0;
	/* a one-shot run's traceback is on stderr already */
	if (tb && *tb && err_text && strstr(err_text, tb))
		return 0;
	if (tb && *tb)
		return section(b, "error", tb, max);
	return buf_printf(b, "%s[error]\n%s: %s\n", b->len ? "\n" : "",
			  str_at(err, "name", NULL) ? str_at(err, "name", NULL) : "Error",
			  str_at(err, "value", NULL) ? str_at(err, "value", NULL) : "");
}

static int status_line(json_t *res, struct buf *b)
{
	const char *status = str_at(res, "status", NULL);
	json_t *v;
	size_t i;
	int r;

	r = buf_printf(b, "%sstatus: %s", b->len ? "\n" : "", status ? status : "?");
	if (r >= 0 && json_is_integer(json_object_get(res, "exit_code")))
		r = buf_printf(b, ", exit code %lld",
			       (long long)json_integer_value(json_object_get(res, "exit_code")));
	if (r >= 0 && json_is_true(json_object_get(res, "restarted")))
		r = buf_puts(
			b, " (the session was restarted: its variables are gone, its files kept)");
	json_array_foreach (json_object_get(res, "limits_hit"), i, v) {
		if (r >= 0 && json_is_string(v))
			r = buf_printf(b, "%s%s",
				       i ? ", " : "; limits hit: ", json_string_value(v));
	}
	return r;
}

static int images(json_t *res, struct buf *b)
{
	static const char *const types[] = { "image/png", "image/jpeg", "image/svg+xml" };
	json_t *bundle;
	size_t i;
	int r = 0;

	json_array_foreach (json_object_get(res, "results"), i, bundle) {
		for (size_t k = 0; k < ARRAY_SIZE(types) && r >= 0; k++) {
			const char *data = str_at(bundle, types[k], NULL);

			if (data)
				r = buf_printf(
					b,
					"\n[image: %s, %zu bytes of base64; a figure the code "
					"showed, not sent]",
					types[k], strlen(data));
		}
	}
	return r;
}

int result_text(json_t *res, size_t section_max, bool describe_images, struct buf *b)
{
	json_t *bundle;
	size_t i;
	int r;

	r = section(b, "stdout", str_at(res, "logs", "stdout"), section_max);
	if (r >= 0)
		r = section(b, "stderr", str_at(res, "logs", "stderr"), section_max);
	json_array_foreach (json_object_get(res, "results"), i, bundle) {
		if (r >= 0 && json_is_true(json_object_get(bundle, "is_main_result")))
			r = section(b, "result", str_at(bundle, "text/plain", NULL), section_max);
	}
	if (r >= 0)
		r = error_section(res, section_max, b);
	if (r >= 0)
		r = status_line(res, b);
	if (r >= 0 && describe_images)
		r = images(res, b);
	return r;
}
