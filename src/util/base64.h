/* util/base64: RFC 4648 base64, the standard alphabet with '=' padding
 * (section 4), the one codec of the tree: binary values of the sql and
 * http tools, process output of the E2B door, files of the MCP door. */
#ifndef CODECELL_UTIL_BASE64_H
#define CODECELL_UTIL_BASE64_H

#include <stddef.h>

#include "util/buf.h"

/* The encoding of data[0..n), padded, NUL-terminated: 4 * ceil(n / 3)
 * characters.  Owned by the caller (free()); NULL on ENOMEM or an n so
 * large that the length would overflow. */
char *base64_encode(const void *data, size_t n);

/* Decode in[0..n), strictly: the alphabet only (no whitespace, no NUL, no
 * URL-safe "-_"), a length that is a multiple of 4, at most two '=' and
 * only at the end.  Unused low bits of the last group are not checked.
 * The bytes are appended to out.  Returns 0, -EINVAL for text that is not
 * such base64 (out may then hold a prefix), -E2BIG past out's cap,
 * -ENOMEM. */
int base64_decode(const char *in, size_t n, struct buf *out);

#endif
