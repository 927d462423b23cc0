/* UTF-8 (util/utf8.h).  Output arrives in chunks that may split a
 * character, and sandboxed code may write any bytes; JSON strings must be
 * valid UTF-8. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"
#include "util/banned.h"

/* Bytes in the sequence a lead byte starts; 0 for a byte that cannot
 * start one. */
static size_t seq_len(unsigned char c)
{
	return c < 0x80			? 1
	       : c >= 0xc2 && c <= 0xdf ? 2
	       : c >= 0xe0 && c <= 0xef ? 3
	       : c >= 0xf0 && c <= 0xf4 ? 4
					: 0;
}

/* Is s[0..n) (n = seq_len of s[0]) one valid character?  Rejects
 * overlongs, surrogates and code points past U+10FFFF. */
static bool seq_valid(const unsigned char *s, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return false;
	if (n == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0)))
		return false;
	if (n == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90)))
		return false;
	return true;
}

/* The length of the valid sequence that begins s[0..n), or 0. */
static size_t seq_at(const unsigned char *s, size_t n)
{
	size_t l = seq_len(s[0]);

	return l && l <= n && seq_valid(s, l) ? l : 0;
}

bool utf8_valid(const char *str, uint64_t n, uint64_t *ret_offset)
{
	const unsigned char *s = (const unsigned char *)str;

	for (uint64_t i = 0; i < n;) {
		size_t l = seq_at(s + i, n - i);

		if (!l) {
			if (ret_offset)
				*ret_offset = i;
			return false;
		}
		i += l;
	}
	return true;
}

size_t utf8_complete_len(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;

	/* a sequence is at most 4 bytes: look at the last 3 for a lead byte
	 * whose sequence runs past the end */
	for (size_t back = 1; back <= 3 && back <= n; back++) {
		unsigned char c = u[n - back];

		if ((c & 0xc0) == 0x80)
			continue; /* a continuation byte: look further back */
		return seq_len(c) > back ? n - back : n;
	}
	return n;
}

char *utf8_repair(const char *s, size_t n, size_t *ret_len)
{
	const unsigned char *u = (const unsigned char *)s;
	char *out =
		n <= (SIZE_MAX - 1) / 3 ? malloc(n * 3 + 1) : NULL; /* each bad byte becomes 3 */
	size_t o = 0;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n;) {
		size_t l = seq_at(u + i, n - i);

		if (l) {
			memcpy(out + o, s + i, l);
			o += l;
			i += l;
		} else {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	out[o] = '\0';
	if (ret_len)
		*ret_len = o;
	return out;
}
