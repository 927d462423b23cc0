/* util/percent: percent-decoding (RFC 3986 section 2.1), the one decoder
 * of the tree.  Its variants are flags, each named after the syntax that
 * needs it, so a caller says which one it reads:
 *
 *   0                    a URL path or a query value: every escape is two
 *                        hex digits, a malformed one or %00 is refused
 *   PERCENT_PLUS_SPACE   '+' is a space (application/x-www-form-urlencoded)
 *   PERCENT_LENIENT      a malformed escape or %00 is kept as it stands
 *                        (WHATWG's URLSearchParams), nothing is refused
 *   PERCENT_FORM_NAME    only %22, %0D and %0A are escapes, any other '%' is
 *                        itself: a multipart part's name or file name as
 *                        WHATWG's FormData writes it (HTML's "multipart/
 *                        form-data encoding algorithm"); implies LENIENT */
#ifndef CODECELL_UTIL_PERCENT_H
#define CODECELL_UTIL_PERCENT_H

#include <stddef.h>

enum percent_flags {
	PERCENT_PLUS_SPACE = 1 << 0,
	PERCENT_LENIENT = 1 << 1,
	PERCENT_FORM_NAME = 1 << 2,
};

/* Decode src[0..n) into out, which has room for size bytes; the result is
 * NUL-terminated and *ret_len (may be NULL) is its length.  out may be
 * src itself (decoding in place, size n + 1 at least): it never runs ahead
 * of src.  Returns 0, -EINVAL for a '%' not followed by two hex digits,
 * -EILSEQ for %00 (a NUL would cut a C string short), -ENOBUFS when the
 * result and its NUL do not fit in size.  Without PERCENT_LENIENT, out
 * holds a prefix on failure. */
int percent_decode(const char *src, size_t n, unsigned flags, char *out, size_t size,
		   size_t *ret_len);

#endif
