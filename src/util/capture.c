#include "util/capture.h"
#include "util/fs.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/banned.h"

/* Buffers grow as output comes: most cells print a line or nothing, and
 * allocating the whole cap up front (two 512 KiB blocks per stream at the
 * default limit) cost every execution page faults and returns to the
 * kernel. */
#define HEAD_FIRST_ALLOC 4096

int capture_init(struct capture *c, size_t cap)
{
	memset(c, 0, sizeof(*c));
	if (cap < 2)
		cap = 2;
	c->head_cap = cap / 2;
	c->tail_cap = cap - c->head_cap;
	return 0;
}

void capture_release(struct capture *c)
{
	free(c->head);
	free(c->tail);
	memset(c, 0, sizeof(*c));
}

/* Room for need bytes in the head; false without memory. */
static bool head_room(struct capture *c, size_t need)
{
	size_t want = c->head_alloc ? c->head_alloc : HEAD_FIRST_ALLOC;
	char *p;

	if (need <= c->head_alloc)
		return true;
	while (want < need)
		want *= 2;
	if (want > c->head_cap)
		want = c->head_cap;
	p = realloc(c->head, want);
	if (!p)
		return false;
	c->head = p;
	c->head_alloc = want;
	return true;
}

void capture_add(struct capture *c, const char *data, size_t n, size_t *ret_live)
{
	size_t to_head = c->head_cap - c->head_len;

	if (to_head > n)
		to_head = n;
	c->total += n;
	if (ret_live)
		*ret_live = 0;
	/* without memory, bytes are dropped, counted (the text says "cut") */
	if (to_head) {
		if (!head_room(c, c->head_len + to_head))
			return;
		memcpy(c->head + c->head_len, data, to_head);
		c->head_len += to_head;
	}
	if (ret_live)
		*ret_live = to_head;
	data += to_head;
	n -= to_head;
	/* only the last tail_cap bytes can survive */
	if (n > c->tail_cap) {
		data += n - c->tail_cap;
		n = c->tail_cap;
	}
	if (n > 0 && !c->tail && !(c->tail = malloc(c->tail_cap)))
		return;
	while (n > 0) {
		size_t chunk = c->tail_cap - c->tail_pos;

		if (chunk > n)
			chunk = n;
		memcpy(c->tail + c->tail_pos, data, chunk);
		c->tail_pos = (c->tail_pos + chunk) % c->tail_cap;
		if (c->tail_len < c->tail_cap)
			c->tail_len = c->tail_len + chunk > c->tail_cap ? c->tail_cap
									: c->tail_len + chunk;
		data += chunk;
		n -= chunk;
	}
}

bool capture_truncated(const struct capture *c)
{
	return c->total > (uint64_t)(c->head_len + c->tail_len);
}

/* The "[... N bytes cut ...]" line, or "" when nothing was cut. */
static size_t marker(const struct capture *c, char *m, size_t size)
{
	m[0] = '\0';
	if (capture_truncated(c))
		snprintf(m, size, "\n[... %" PRIu64 " bytes cut ...]\n",
			 c->total - (uint64_t)(c->head_len + c->tail_len));
	return strlen(m);
}

size_t capture_marker_len(const struct capture *c)
{
	char m[96];

	return marker(c, m, sizeof(m));
}

static char *build(const struct capture *c, bool with_head, size_t *ret_len)
{
	char marker_text[96];
	size_t mlen = marker(c, marker_text, sizeof(marker_text)), len, off = 0, start;
	char *out;

	len = (with_head ? c->head_len : 0) + mlen + c->tail_len;
	out = malloc(len + 1);
	if (!out)
		return NULL;
	if (with_head && c->head_len) { /* no head yet: head is NULL */
		memcpy(out, c->head, c->head_len);
		off = c->head_len;
	}
	memcpy(out + off, marker_text, mlen);
	off += mlen;
	/* oldest tail byte: at tail_pos once the ring has wrapped */
	start = c->tail_len < c->tail_cap ? 0 : c->tail_pos;
	for (size_t i = 0; i < c->tail_len; i++)
		out[off + i] = c->tail[(start + i) % c->tail_cap];
	out[len] = '\0';
	*ret_len = len;
	return out;
}

char *capture_text(const struct capture *c, size_t *ret_len)
{
	return build(c, true, ret_len);
}

char *capture_rest(const struct capture *c, size_t *ret_len)
{
	return build(c, false, ret_len);
}

void capture_write_rest(const struct capture *c, int fd)
{
	size_t len;
	char *rest;

	if (fd < 0)
		return;
	rest = capture_rest(c, &len);
	if (rest)
		(void)write_all(fd, rest, len);
	free(rest);
}
