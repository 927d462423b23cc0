/* http/text.h: JSON text helpers (text.c); UTF-8 is util/utf8.h's. */
#ifndef CODECELL_HTTP_TEXT_H
#define CODECELL_HTTP_TEXT_H

#include <stddef.h>

#include <jansson.h>

/* j as JSON text (json_dumpb flags) in one allocation of its exact size,
 * NUL-terminated; *ret_len (may be NULL) its length.  Owned by the
 * caller; NULL on ENOMEM or an unserializable j. */
char *api_json_dump(const json_t *j, size_t flags, size_t *ret_len);

#endif
