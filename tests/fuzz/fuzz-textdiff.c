/* libFuzzer target: util/textdiff.c on two texts a program in a sandbox
 * wrote (the project's file and its changed copy), the input cut at its
 * first NUL.  Invariant: the hunks, applied to a, give b (the diff is
 * correct, whatever the lines, the missing last newlines, and the edit
 * count past which one hunk replaces the middle). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/textdiff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The next line of s[*at..n) (with its newline): its length, 0 at the end. */
static size_t next_line(const char *s, size_t n, size_t at)
{
	const char *nl = at < n ? memchr(s + at, '\n', n - at) : NULL;

	return at >= n ? 0 : nl ? (size_t)(nl - s) + 1 - at : n - at;
}

/* Apply the diff d to a into out; abort on anything that does not fit. */
static void apply(const char *a, size_t alen, const char *d, size_t dlen, struct buf *out)
{
	size_t ai = 0, aline = 0, di = 0;

	while (di < dlen) {
		size_t l = next_line(d, dlen, di);
		unsigned long as, al, bs, bl;

		if (sscanf(d + di, "@@ -%lu,%lu +%lu,%lu @@", &as, &al, &bs, &bl) != 4)
			abort();
		di += l;
		/* lines before the hunk: as is 1-based, or the line before for 0 */
		while (aline + 1 < as + (al == 0)) {
			size_t k = next_line(a, alen, ai);

			if (!k || buf_append(out, a + ai, k) < 0)
				abort();
			ai += k, aline++;
		}
		while (di < dlen && d[di] != '@') {
			size_t k = next_line(d, dlen, di), body = k - 1;
			bool has_nl = d[di + k - 1] == '\n';
			bool no_nl = di + k < dlen && d[di + k] == '\\';
			size_t lk = body - (has_nl ? 1 : 0) + (no_nl ? 0 : 1);

			if (d[di] == ' ' || d[di] == '-') {
				size_t ak = next_line(a, alen, ai);

				if (ak != lk || memcmp(a + ai, d + di + 1, lk))
					abort();
				if (d[di] == ' ' && buf_append(out, a + ai, ak) < 0)
					abort();
				ai += ak, aline++;
			} else if (d[di] == '+') {
				if (buf_append(out, d + di + 1, lk) < 0)
					abort();
			} else {
				abort();
			}
			di += k;
			if (no_nl)
				di += next_line(d, dlen, di);
		}
	}
	if (buf_append(out, a + ai, alen - ai) < 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data, *z = memchr(s, '\0', size);
	size_t alen = z ? (size_t)(z - s) : size;
	const char *b = z ? z + 1 : "";
	size_t blen = z ? size - alen - 1 : 0;
	struct buf d, out;

	buf_init(&d, 64u << 20);
	buf_init(&out, 64u << 20);
	if (text_diff(s, alen, b, blen, &d) != 0)
		abort();
	apply(s, alen, d.data ? d.data : "", d.len, &out);
	if (out.len != blen || (blen && memcmp(out.data, b, blen)))
		abort();
	buf_release(&d);
	buf_release(&out);
	return 0;
}
