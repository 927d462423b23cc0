/* Percent-decoding (util/percent.h has the variants). */
#include <errno.h>
#include <stdbool.h>

#include "util/percent.h"
#include "util/banned.h"

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The byte the escape at s[0..n) (s[0] == '%') stands for, or -EINVAL,
 * -EILSEQ. */
static int escape(const char *s, size_t n, unsigned flags)
{
	int hi = n >= 3 ? hexval(s[1]) : -1, lo = hi < 0 ? -1 : hexval(s[2]), c;

	if (hi < 0 || lo < 0)
		return -EINVAL;
	c = hi << 4 | lo;
	if ((flags & PERCENT_FORM_NAME) && c != '"' && c != '\r' && c != '\n')
		return -EINVAL;
	return c ? c : -EILSEQ;
}

int percent_decode(const char *src, size_t n, unsigned flags, char *out, size_t size,
		   size_t *ret_len)
{
	bool lenient = flags & (PERCENT_LENIENT | PERCENT_FORM_NAME);
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		char ch = src[i];

		if (ch == '%') {
			int c = escape(src + i, n - i, flags);

			if (c >= 0) {
				ch = (char)c;
				i += 2;
			} else if (!lenient) {
				if (size)
					out[o] = '\0';
				return c;
			}
		} else if (ch == '+' && (flags & PERCENT_PLUS_SPACE)) {
			ch = ' ';
		}
		if (o + 1 >= size) {
			if (size)
				out[o] = '\0';
			return -ENOBUFS;
		}
		out[o++] = ch;
	}
	if (!size)
		return -ENOBUFS;
	out[o] = '\0';
	if (ret_len)
		*ret_len = o;
	return 0;
}
