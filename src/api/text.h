/* api/text.h: UTF-8 and JSON text helpers (text.c). */
#ifndef CODECELL_API_TEXT_H
#define CODECELL_API_TEXT_H

#include <stddef.h>

#include <jansson.h>

/* Length of the longest prefix of s[0..n) that does not end inside a
 * UTF-8 sequence that could still be completed by more bytes. */
size_t api_utf8_complete_len(const char *s, size_t n);
/* A valid UTF-8 copy of s[0..n): each invalid byte becomes U+FFFD.
 * Owned by the caller; NULL on ENOMEM. */
char *api_utf8_repair(const char *s, size_t n, size_t *ret_len);
/* j as JSON text (json_dumpb flags) in one allocation of its exact size,
 * NUL-terminated; *ret_len (may be NULL) its length.  Owned by the
 * caller; NULL on ENOMEM or an unserializable j. */
char *api_json_dump(const json_t *j, size_t flags, size_t *ret_len);

#endif
