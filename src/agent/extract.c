/* Code out of a model's reply.  Models write code three ways: in the tags
 * the system prompt asks for, in Markdown fences (small models forget the
 * tags), or as a native tool call (read by loop.c from the reply's JSON).
 * Tags win over fences: a reply that uses both has fences inside tags or
 * quoted in prose. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "util/macro.h"
#include "util/banned.h"

#define CODE_MAX (8u << 20) /* as ENGINE_CODE_MAX: the engine refuses more */

/* Fence labels per language. */
static bool label_matches(const char *lang, const char *label, size_t n)
{
	static const struct {
		const char *lang, *labels[4];
	} table[] = {
		{ "python", { "python", "py", "python3", NULL } },
		{ "javascript", { "javascript", "js", "node", "nodejs" } },
		{ "bash", { "bash", "sh", "shell", NULL } },
	};

	for (size_t i = 0; i < ARRAY_SIZE(table); i++) {
		if (strcmp(table[i].lang, lang))
			continue;
		for (size_t k = 0; k < ARRAY_SIZE(table[i].labels) && table[i].labels[k]; k++)
			if (strlen(table[i].labels[k]) == n &&
			    !strncasecmp(label, table[i].labels[k], n))
				return true;
	}
	return false;
}

static const char *line_end(const char *p, const char *end)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));

	return nl ? nl : end;
}

/* A fence line: up to three blanks, ``` and a label.  Sets the label. */
static bool fence_line(const char *p, const char *eol, const char **ret_label, size_t *ret_n)
{
	int blanks = 0;

	while (p < eol && *p == ' ' && blanks < 3)
		p++, blanks++;
	if (eol - p < 3 || memcmp(p, "```", 3))
		return false;
	p += 3;
	while (p < eol && *p == '`')
		p++;
	*ret_label = p;
	while (p < eol && *p != ' ' && *p != '\r' && *p != '{')
		p++;
	*ret_n = (size_t)(p - *ret_label);
	return true;
}

static int add(struct buf *out, const char *p, size_t n)
{
	/* trim blank lines around, keep indentation */
	while (n && (*p == '\n' || *p == '\r'))
		p++, n--;
	while (n && (p[n - 1] == '\n' || p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	if (!n)
		return 0;
	if (out->len && buf_puts(out, "\n\n") < 0)
		return -E2BIG;
	return buf_append(out, p, n);
}

/* Contents of a tag, without a fence around them (models often put one
 * inside the tags). */
static int add_tag_body(struct buf *out, const char *p, const char *end)
{
	const char *label, *eol;
	size_t n;

	while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	eol = line_end(p, end);
	if (fence_line(p, eol, &label, &n) && eol < end) {
		const char *last = end;

		while (last > eol && (last[-1] == '\n' || last[-1] == ' ' || last[-1] == '\r'))
			last--;
		if (last - eol >= 3 && !memcmp(last - 3, "```", 3))
			return add(out, eol + 1, (size_t)(last - 3 - (eol + 1)));
	}
	return add(out, p, (size_t)(end - p));
}

static int from_tags(const char *text, const char *end, const char *lang, struct buf *out,
		     bool *cut)
{
	char open[64], close[64];
	const char *p = text;
	size_t on, cn;

	on = (size_t)snprintf(open, sizeof(open), "<execute_%s>", lang);
	cn = (size_t)snprintf(close, sizeof(close), "</execute_%s>", lang);
	while ((p = memmem(p, (size_t)(end - p), open, on))) {
		const char *body = p + on, *e = memmem(body, (size_t)(end - body), close, cn);

		if (!e) {
			*cut = true;
			break;
		}
		if (add_tag_body(out, body, e) < 0)
			return -E2BIG;
		p = e + cn;
	}
	return 0;
}

static int from_fences(const char *text, const char *end, const char *lang, struct buf *out,
		       bool *cut)
{
	const char *p = text, *label;
	size_t n;

	while (p < end) {
		const char *eol = line_end(p, end), *body, *q;
		bool mine;

		if (!fence_line(p, eol, &label, &n)) {
			p = eol + 1;
			continue;
		}
		mine = label_matches(lang, label, n);
		body = q = eol < end ? eol + 1 : end;
		for (;;) {
			const char *l2, *e2;
			size_t n2;

			/* the last line had no newline: q is one past the end,
			 * and line_end() would search a negative length */
			if (q >= end) {
				if (mine)
					*cut = true;
				return 0;
			}
			e2 = line_end(q, end);
			if (fence_line(q, e2, &l2, &n2) && n2 == 0) {
				if (mine && add(out, body, (size_t)(q - body)) < 0)
					return -E2BIG;
				p = e2 + 1;
				break;
			}
			q = e2 + 1;
		}
	}
	return 0;
}

int agent_extract(const char *text, size_t len, const char *lang, struct agent_code *ret)
{
	const char *end = text + len;
	struct buf out;
	bool cut = false;
	int r;

	memset(ret, 0, sizeof(*ret));
	/* the reply came as a JSON string, which jansson hands over without
	 * NUL bytes; a NUL here ends the text, so the code is a C string */
	end = text + strnlen(text, len);
	buf_init(&out, CODE_MAX);
	r = from_tags(text, end, lang, &out, &cut);
	if (r >= 0 && out.len)
		ret->source = "tag";
	if (r >= 0 && !out.len && !cut) {
		r = from_fences(text, end, lang, &out, &cut);
		if (out.len)
			ret->source = "fence";
	}
	if (r < 0) {
		buf_release(&out);
		return r;
	}
	ret->cut = cut && !out.len;
	ret->code = out.len ? buf_detach(&out, NULL) : NULL;
	buf_release(&out);
	return 0;
}

void agent_code_release(struct agent_code *c)
{
	free(c->code);
	memset(c, 0, sizeof(*c));
}
