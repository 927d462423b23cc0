/* RFC 4648 base64. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "util/base64.h"
#include "util/banned.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *base64_encode(const void *data, size_t n)
{
	const unsigned char *p = data;
	char *out, *o;

	if (n > (SIZE_MAX - 1) / 4 * 3 - 2)
		return NULL;
	out = malloc((n + 2) / 3 * 4 + 1);
	if (!out)
		return NULL;
	o = out;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) |
			     (i + 2 < n ? p[i + 2] : 0);

		*o++ = alphabet[v >> 18 & 63];
		*o++ = alphabet[v >> 12 & 63];
		*o++ = i + 1 < n ? alphabet[v >> 6 & 63] : '=';
		*o++ = i + 2 < n ? alphabet[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

/* The value of one character of the alphabet; -1 for any other byte. */
static int sextet(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

int base64_decode(const char *in, size_t n, struct buf *out)
{
	unsigned v = 0, bits = 0;
	size_t pad = 0;

	if (n % 4)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		int s = sextet(in[i]);

		if (in[i] == '=' && i >= n - 2) {
			pad++;
			continue;
		}
		if (s < 0 || pad)
			return -EINVAL;
		v = v << 6 | (unsigned)s;
		bits += 6;
		if (bits >= 8) {
			char c = (char)(v >> (bits - 8) & 0xff);
			int r;

			bits -= 8;
			r = buf_append(out, &c, 1);
			if (r < 0)
				return r;
		}
	}
	return 0;
}
