/* struct buf: a growable byte buffer with a mandatory size cap (curl's
 * dynbuf, git's strbuf).  The contents are always NUL-terminated so they
 * can be used as a C string when they hold text.
 *
 * Every buffer fed by untrusted input has a cap; appending past it fails
 * with -E2BIG and leaves the buffer unchanged. */
#ifndef CODECELL_UTIL_BUF_H
#define CODECELL_UTIL_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct buf {
	char *data; /* owned; NULL until the first append */
	size_t len;
	size_t alloc;
	size_t max; /* largest len allowed */
};

void buf_init(struct buf *b, size_t max);
void buf_release(struct buf *b);
/* Empty the buffer, keeping its allocation. */
void buf_reset(struct buf *b);
/* Returns 0, -E2BIG past the cap, -ENOMEM. */
int buf_append(struct buf *b, const void *data, size_t n);
int buf_puts(struct buf *b, const char *s);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The text so far; "" for an empty buffer.  Owned by the buffer. */
const char *buf_str(const struct buf *b);
/* Hand the data to the caller (free() it); the buffer is left empty. */
char *buf_detach(struct buf *b, size_t *ret_len);

/* Read fd until EOF into b.  Returns 0, -E2BIG when the file is larger
 * than the cap, or -errno. */
int buf_read_fd(struct buf *b, int fd);
/* Read a whole file by path (O_CLOEXEC).  Same returns as buf_read_fd. */
int buf_read_file(struct buf *b, const char *path);

#endif
