/* UTF-8 for JSON: output arrives in chunks that may split a character, and
 * sandboxed code may write any bytes; JSON strings must be valid UTF-8. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/text.h"
#include "util/banned.h"

/* Bytes in the sequence a lead byte starts; 0 for a byte that cannot
 * start one. */
static size_t seq_len(unsigned char c)
{
	return c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
		: c >= 0xf0 && c <= 0xf4 ? 4 : 0;
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

size_t api_utf8_complete_len(const char *s, size_t n)
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

char *api_utf8_repair(const char *s, size_t n, size_t *ret_len)
{
	const unsigned char *u = (const unsigned char *)s;
	char *out = malloc(n * 3 + 1); /* each bad byte becomes 3 */
	size_t o = 0;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n;) {
		size_t l = seq_len(u[i]);

		if (l && i + l <= n && seq_valid(u + i, l)) {
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
	*ret_len = o;
	return out;
}

char *api_json_dump(const json_t *j, size_t flags, size_t *ret_len)
{
	/* json_dumps() builds in a buffer that doubles as it goes, then
	 * copies it whole: three times the text at its peak, for a result of
	 * tens of megabytes.  Measuring first costs a second pass of CPU. */
	size_t n = j ? json_dumpb(j, NULL, 0, flags) : 0;
	char *s;

	if (!n || !(s = malloc(n + 1)))
		return NULL;
	if (json_dumpb(j, s, n, flags) != n) {
		free(s);
		return NULL;
	}
	s[n] = '\0';
	if (ret_len)
		*ret_len = n;
	return s;
}
