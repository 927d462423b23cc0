/* util/json: the one reader of JSON a client sends (request bodies of
 * /v1 and the E2B door, MCP messages over HTTP and stdio).
 *
 * Duplicate keys are always refused, at every depth: RFC 8259 section 4
 * leaves their meaning open, and two readers that pick different ones
 * (jansson takes the last) are how a check and a use come to disagree
 * about one request.  Bytes that are not UTF-8 are refused, and so is
 * "\u0000" unless the caller can hold it. */
#ifndef CODECELL_UTIL_JSON_H
#define CODECELL_UTIL_JSON_H

#include <stddef.h>

#include <jansson.h>

enum json_body_flags {
	JSON_BODY_ANY_VALUE = 1 << 0,	 /* any JSON value, not only an object */
	JSON_BODY_ALLOW_NUL = 1 << 1,	 /* "\u0000" inside strings (not keys) */
	JSON_BODY_EMPTY_OBJECT = 1 << 2, /* an empty body reads as {} */
};

enum json_body_problem {
	JSON_BODY_EMPTY = 1, /* no bytes at all */
	JSON_BODY_SYNTAX,    /* not JSON, or bytes after the value */
	JSON_BODY_UTF8,	     /* not UTF-8 */
	JSON_BODY_NUL,	     /* "\u0000" without JSON_BODY_ALLOW_NUL, or in a key */
	JSON_BODY_DUPLICATE, /* a key twice in one object */
	JSON_BODY_NOT_OBJECT,
	JSON_BODY_NOMEM,
};

/* Why a body was refused: the problem, where (1-based line and column,
 * 0-based byte offset as jansson counts them; 0 when none applies), and
 * a message for the client, lower-case, that says what to do. */
struct json_body_error {
	enum json_body_problem problem;
	int line, column, position;
	char message[256];
};

/* Parse data[0..len).  On success *ret is a new reference (json_decref()
 * it) and 0 is returned; else -EINVAL (-ENOMEM for JSON_BODY_NOMEM) with
 * *err filled and *ret untouched.  err may be NULL. */
int json_body_read(const char *data, size_t len, unsigned flags, json_t **ret,
		   struct json_body_error *err);

/* A JSON string of s[0..n), cut before the first byte that is not UTF-8
 * (a message that quotes a client may have split a character).  New
 * reference, or NULL without memory. */
json_t *json_utf8_prefix(const char *s, size_t n);

#endif
