#include "util/outorder.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "util/banned.h"

#define HALF (OUTORDER_KEEP / 2)

void outorder_init(struct outorder *o)
{
	memset(o, 0, sizeof(*o));
	o->last = -1;
}

void outorder_release(struct outorder *o)
{
	free(o->head);
	free(o->ring);
	outorder_init(o);
}

static struct outorder_seg *newest(struct outorder *o)
{
	if (o->n_ring)
		return &o->ring[(o->ring_pos + HALF - 1) % HALF];
	return o->n_head ? &o->head[o->n_head - 1] : NULL;
}

/* A new segment: in the head while it has room, else in the ring (the
 * oldest there is dropped).  NULL without memory: those bytes are left
 * out of the list (the logs keep them). */
static struct outorder_seg *push(struct outorder *o)
{
	if (o->n_head < HALF) {
		if (!o->head && !(o->head = calloc(HALF, sizeof(*o->head))))
			return NULL;
		return &o->head[o->n_head++];
	}
	if (!o->ring && !(o->ring = calloc(HALF, sizeof(*o->ring))))
		return NULL;
	if (o->n_ring == HALF)
		o->evicted++;
	else
		o->n_ring++;
	o->ring_pos = (o->ring_pos + 1) % HALF;
	return &o->ring[(o->ring_pos + HALF - 1) % HALF];
}

void outorder_add(struct outorder *o, unsigned stream, size_t n)
{
	struct outorder_seg *s;

	if (stream > 1 || !n)
		return;
	s = newest(o);
	if (!s || o->last != (int)stream) {
		struct outorder_seg *t = push(o);

		if (t) {
			*t = (struct outorder_seg){ o->total[stream], o->total[stream], stream };
			s = t;
			o->last = (int)stream;
		}
	}
	o->total[stream] += n;
	if (s && s->stream == stream)
		s->end = o->total[stream];
}

/* Where offset x of the stream lands in its capture_text(): head, the
 * cut marker (given to the segment holding the first cut byte), tail. */
static size_t text_pos(const struct capture *c, uint64_t x)
{
	uint64_t tail_start = c->total - c->tail_len;
	size_t marker;

	if (x <= c->head_len || !capture_truncated(c))
		return (size_t)x;
	marker = capture_marker_len(c);
	if (x < tail_start)
		return c->head_len + marker;
	return c->head_len + marker + (size_t)(x - tail_start);
}

struct chunk_list {
	struct outorder_chunk *v;
	size_t n;
};

static void emit(struct chunk_list *l, const struct capture *caps[2], unsigned stream, uint64_t a,
		 uint64_t b)
{
	size_t from, to;

	if (a >= b)
		return;
	from = text_pos(caps[stream], a);
	to = text_pos(caps[stream], b);
	if (from >= to)
		return;
	if (l->n && l->v[l->n - 1].stream == stream &&
	    l->v[l->n - 1].off + l->v[l->n - 1].len == from) {
		l->v[l->n - 1].len += to - from;
		return;
	}
	l->v[l->n++] = (struct outorder_chunk){ stream, from, to - from };
}

int outorder_chunks(const struct outorder *o, const struct capture *caps[2],
		    struct outorder_chunk **ret, size_t *ret_n)
{
	struct chunk_list l = { NULL, 0 };
	uint64_t gap_from[2] = { 0, 0 }, gap_to[2];
	size_t oldest = o->n_ring == HALF ? o->ring_pos : 0;

	*ret = NULL;
	*ret_n = 0;
	if (!o->n_head)
		return 0;
	/* head, the gap (one range per stream), ring; +2 for the gap */
	l.v = calloc(o->n_head + o->n_ring + 2, sizeof(*l.v));
	if (!l.v)
		return -ENOMEM;
	for (size_t i = 0; i < o->n_head; i++) {
		emit(&l, caps, o->head[i].stream, o->head[i].start, o->head[i].end);
		gap_from[o->head[i].stream] = o->head[i].end;
	}
	gap_to[0] = o->total[0];
	gap_to[1] = o->total[1];
	for (size_t i = o->n_ring; i-- > 0;) {
		const struct outorder_seg *s = &o->ring[(oldest + i) % HALF];

		gap_to[s->stream] = s->start;
	}
	emit(&l, caps, 0, gap_from[0], gap_to[0]);
	emit(&l, caps, 1, gap_from[1], gap_to[1]);
	for (size_t i = 0; i < o->n_ring; i++) {
		const struct outorder_seg *s = &o->ring[(oldest + i) % HALF];

		emit(&l, caps, s->stream, s->start, s->end);
	}
	if (!l.n) {
		free(l.v);
		return 0;
	}
	*ret = l.v;
	*ret_n = l.n;
	return 0;
}
