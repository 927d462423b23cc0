#include "util/buf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/macro.h"
#include "util/banned.h"

void buf_init(struct buf *b, size_t max)
{
	b->data = NULL;
	b->len = 0;
	b->alloc = 0;
	b->max = max;
}

void buf_release(struct buf *b)
{
	free(b->data);
	buf_init(b, b->max);
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

static int buf_grow(struct buf *b, size_t need)
{
	size_t want;
	char *p;

	if (need > b->max)
		return -E2BIG;
	if (need + 1 <= b->alloc)
		return 0;
	want = b->alloc ? b->alloc : 64;
	while (want < need + 1)
		want *= 2;
	if (want > b->max + 1)
		want = b->max + 1;
	p = realloc(b->data, want);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->alloc = want;
	return 0;
}

int buf_append(struct buf *b, const void *data, size_t n)
{
	int r;

	if (n > b->max - b->len)
		return -E2BIG;
	r = buf_grow(b, b->len + n);
	if (r < 0)
		return r;
	if (n)
		memcpy(b->data + b->len, data, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int buf_puts(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n, r;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n > b->max - b->len)
		return -E2BIG;
	r = buf_grow(b, b->len + (size_t)n);
	if (r < 0)
		return r;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

const char *buf_str(const struct buf *b)
{
	return b->data ? b->data : "";
}

char *buf_detach(struct buf *b, size_t *ret_len)
{
	char *p = b->data;

	if (!p) {
		p = calloc(1, 1);
		if (!p)
			return NULL;
	}
	if (ret_len)
		*ret_len = b->len;
	buf_init(b, b->max);
	return p;
}

int buf_read_fd(struct buf *b, int fd)
{
	char chunk[65536];

	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		int r;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return 0;
		r = buf_append(b, chunk, (size_t)n);
		if (r < 0)
			return r;
	}
}

int buf_read_file(struct buf *b, const char *path)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return -errno;
	return buf_read_fd(b, fd);
}
