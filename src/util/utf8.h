/* util/utf8: UTF-8 (RFC 3629), the one checker of the tree.  Valid means
 * what RFC 3629 and JSON (RFC 8259) accept: no overlong forms, no
 * surrogates (U+D800..U+DFFF), nothing past U+10FFFF, no cut sequence.
 * NUL is valid UTF-8; callers that cannot hold it check for it. */
#ifndef CODECELL_UTIL_UTF8_H
#define CODECELL_UTIL_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether s[0..n) is valid UTF-8.  On failure *ret_offset (may be NULL)
 * is the offset of the first byte that does not begin a valid sequence. */
bool utf8_valid(const char *s, uint64_t n, uint64_t *ret_offset);

/* The length of the longest prefix of s[0..n) that does not end inside a
 * sequence more bytes could still complete: output that arrives in chunks
 * is cut there and the rest waits for the next chunk. */
size_t utf8_complete_len(const char *s, size_t n);

/* A valid UTF-8 copy of s[0..n), NUL-terminated: each byte that does not
 * begin a valid sequence becomes U+FFFD, so nothing is dropped silently.
 * *ret_len (may be NULL) is its length.  Owned by the caller (free());
 * NULL on ENOMEM. */
char *utf8_repair(const char *s, size_t n, size_t *ret_len);

#endif
