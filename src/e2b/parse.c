/* The E2B door's parsers of client bytes that need no server: the list's
 * ?metadata= filter, and a multipart upload's boundary and file names.
 * Kept apart from the handlers so tests/fuzz/fuzz-e2b-forms.c can drive
 * them alone (e2b/internal.h has their contracts). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "e2b/internal.h"
#include "util/percent.h"
#include "util/banned.h"

/* Percent-decode s in place ('+' is a space, as in a form); a bad
 * escape or %00 is kept as it is. */
static void form_decode(char *s)
{
	(void)percent_decode(s, strlen(s), PERCENT_PLUS_SPACE | PERCENT_LENIENT, s, strlen(s) + 1,
			     NULL);
}

bool e2b_metadata_matches(const json_t *meta, const char *q)
{
	char pair[2048];

	while (*q) {
		size_t n = strcspn(q, "&");
		char *eq;
		const json_t *v;

		/* a pair cut to fit would compare its head only */
		if (n >= sizeof(pair))
			return false;
		snprintf(pair, sizeof(pair), "%.*s", (int)n, q);
		q += n + (q[n] == '&');
		eq = strchr(pair, '=');
		if (!eq)
			return false;
		*eq = '\0';
		form_decode(pair);
		form_decode(eq + 1);
		form_decode(pair);
		form_decode(eq + 1);
		v = json_object_get(meta, pair);
		if (!json_is_string(v) || strcmp(json_string_value(v), eq + 1) != 0)
			return false;
	}
	return true;
}

int e2b_part_filename(const char *head, char *out, size_t n)
{
	const char *p = strcasestr(head, "filename=\""), *end;
	int r;

	if (!p)
		return -ENOENT;
	p += 10;
	end = strchr(p, '"');
	r = percent_decode(p, end ? (size_t)(end - p) : strlen(p), PERCENT_FORM_NAME, out, n, NULL);
	if (r < 0)
		return r == -ENOBUFS ? -ENAMETOOLONG : r;
	return end ? 0 : -EINVAL;
}

int e2b_multipart_delim(const char *type, char *out, size_t n, size_t *ret_len)
{
	const char *b;
	size_t len;
	int w;

	if (!type || strncasecmp(type, "multipart/form-data", 19) != 0 ||
	    !(b = strcasestr(type, "boundary=")))
		return 0;
	b += 9;
	if (*b == '"')
		b++;
	len = strcspn(b, "\";");
	if (len == 0 || len > E2B_BOUNDARY_MAX)
		return -EINVAL;
	w = snprintf(out, n, "\r\n--%.*s", (int)len, b);
	if (w < 0 || (size_t)w >= n)
		return -EINVAL;
	*ret_len = (size_t)w;
	return 1;
}
