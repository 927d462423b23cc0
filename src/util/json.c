/* Reading a client's JSON (util/json.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/json.h"
#include "util/utf8.h"
#include "util/banned.h"

static int fail(struct json_body_error *err, enum json_body_problem p, const json_error_t *je,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int fail(struct json_body_error *err, enum json_body_problem p, const json_error_t *je,
		const char *fmt, ...)
{
	va_list ap;

	if (err) {
		err->problem = p;
		err->line = je ? je->line : 0;
		err->column = je ? je->column : 0;
		err->position = je ? je->position : 0;
		va_start(ap, fmt);
		vsnprintf(err->message, sizeof(err->message), fmt, ap);
		va_end(ap);
	}
	return p == JSON_BODY_NOMEM ? -ENOMEM : -EINVAL;
}

/* jansson names the token it stopped at: "... near '\"key\"'"; the key as
 * the client wrote it, escapes and all, or "" */
static void near_token(const char *text, char *out, size_t n)
{
	const char *p = strstr(text, "near '");
	size_t len;

	out[0] = '\0';
	if (!p)
		return;
	p += 6;
	len = strlen(p);
	if (len && p[len - 1] == '\'')
		len--;
	snprintf(out, n, "%.*s", (int)(len > 64 ? 64 : len), p);
}

static int load_error(const json_error_t *je, struct json_body_error *err)
{
	char tok[80];

	switch (json_error_code(je)) {
	case json_error_duplicate_key:
		near_token(je->text, tok, sizeof(tok));
		return fail(
			err, JSON_BODY_DUPLICATE, je,
			"the key %s appears twice in one object (line %d, column %d): send each key once",
			tok, je->line, je->column);
	case json_error_invalid_utf8:
		return fail(err, JSON_BODY_UTF8, je,
			    "the JSON is not valid UTF-8 (at byte %d): send it as UTF-8",
			    je->position);
	case json_error_null_character:
	case json_error_null_byte_in_key:
		return fail(err, JSON_BODY_NUL, je,
			    "a string holds a NUL character (\\u0000): leave it out");
	case json_error_out_of_memory:
		return fail(err, JSON_BODY_NOMEM, je, "out of memory: try again");
	default:
		return fail(err, JSON_BODY_SYNTAX, je, "malformed JSON at line %d, column %d: %s",
			    je->line, je->column, je->text);
	}
}

int json_body_read(const char *data, size_t len, unsigned flags, json_t **ret,
		   struct json_body_error *err)
{
	size_t jflags = JSON_REJECT_DUPLICATES;
	json_error_t je;
	json_t *j;

	if (len == 0) {
		if (!(flags & JSON_BODY_EMPTY_OBJECT))
			return fail(err, JSON_BODY_EMPTY, NULL,
				    "the body is empty: send a JSON object");
		if (!(j = json_object()))
			return fail(err, JSON_BODY_NOMEM, NULL, "out of memory: try again");
		*ret = j;
		return 0;
	}
	if (flags & JSON_BODY_ANY_VALUE)
		jflags |= JSON_DECODE_ANY;
	if (flags & JSON_BODY_ALLOW_NUL)
		jflags |= JSON_ALLOW_NUL;
	j = json_loadb(data, len, jflags, &je);
	if (!j)
		return load_error(&je, err);
	if (!(flags & JSON_BODY_ANY_VALUE) && !json_is_object(j)) {
		json_decref(j);
		return fail(err, JSON_BODY_NOT_OBJECT, NULL, "the body must be a JSON object");
	}
	*ret = j;
	return 0;
}

json_t *json_utf8_prefix(const char *s, size_t n)
{
	uint64_t bad;

	if (!utf8_valid(s, n, &bad))
		n = (size_t)bad;
	return json_stringn(s, n);
}
