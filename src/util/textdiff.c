/* textdiff: a unified diff's hunks (textdiff.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/textdiff.h"
#include "util/banned.h"

/* A text as lines: starts and lengths (with the newline, if any). */
struct text {
	const char **line;
	size_t *len;
	size_t n;
};

static int split(struct text *t, const char *s, size_t n)
{
	size_t cnt = 0;

	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i < n; i++)
		cnt += s[i] == '\n';
	cnt += n && s[n - 1] != '\n';
	t->line = calloc(cnt + 1, sizeof(*t->line));
	t->len = calloc(cnt + 1, sizeof(*t->len));
	if (!t->line || !t->len)
		return -ENOMEM;
	for (size_t at = 0; at < n;) {
		const char *nl = memchr(s + at, '\n', n - at);
		size_t e = nl ? (size_t)(nl - s) + 1 : n;

		t->line[t->n] = s + at;
		t->len[t->n++] = e - at;
		at = e;
	}
	return 0;
}

static void text_release(struct text *t)
{
	free(t->line);
	free(t->len);
}

static bool same_line(const struct text *a, size_t i, const struct text *b, size_t j)
{
	return a->len[i] == b->len[j] && !memcmp(a->line[i], b->line[j], a->len[i]);
}

enum { OP_EQ, OP_DEL, OP_INS };

/* Myers' greedy diff of a[lo..n) and b[lo..m) (common prefix and suffix
 * already cut), appended to ops (reversed; the caller reverses).  Past
 * TEXTDIFF_EDITS_MAX edits: everything deleted and inserted (still a
 * correct diff, only a longer one). */
static size_t myers(const struct text *a, size_t alo, size_t n, const struct text *b, size_t blo,
		    size_t m, unsigned char *ops)
{
	long N = (long)(n - alo), M = (long)(m - blo), D = -1, max = N + M;
	long dmax = max < TEXTDIFF_EDITS_MAX ? max : TEXTDIFF_EDITS_MAX;
	long *v = calloc((size_t)(2 * dmax + 3), sizeof(long));
	long *trace = calloc((size_t)((dmax + 1) * (dmax + 1)), sizeof(long));
	size_t k_ops = 0;

	if (v && trace) {
		for (long d = 0; d <= dmax && D < 0; d++) {
			for (long k = -d; k <= d; k += 2) {
				long x, y;

				if (k == -d ||
				    (k != d && v[k - 1 + dmax + 1] < v[k + 1 + dmax + 1]))
					x = v[k + 1 + dmax + 1];
				else
					x = v[k - 1 + dmax + 1] + 1;
				y = x - k;
				while (x < N && y < M &&
				       same_line(a, (size_t)(alo + x), b, (size_t)(blo + y)))
					x++, y++;
				v[k + dmax + 1] = x;
				trace[d * d + (k + d)] = x;
				if (x >= N && y >= M)
					D = d;
			}
		}
	}
	if (D < 0) {
		for (long j = M; j > 0; j--)
			ops[k_ops++] = OP_INS;
		for (long i = N; i > 0; i--)
			ops[k_ops++] = OP_DEL;
	} else {
		long x = N, y = M;

		for (long d = D; d > 0; d--) {
			long k = x - y, pk, px, py;
			const long *prev = &trace[(d - 1) * (d - 1)];

			/* prev[kk + d - 1] is V[kk] after round d - 1 */
			if (k == -d || (k != d && prev[k - 1 + d - 1] < prev[k + 1 + d - 1]))
				pk = k + 1;
			else
				pk = k - 1;
			px = prev[pk + d - 1];
			py = px - pk;
			while (x > px && y > py && x > 0 && y > 0)
				ops[k_ops++] = OP_EQ, x--, y--;
			ops[k_ops++] = pk == k + 1 ? OP_INS : OP_DEL;
			x = px, y = py;
		}
		while (x > 0 && y > 0)
			ops[k_ops++] = OP_EQ, x--, y--;
	}
	free(v);
	free(trace);
	return k_ops;
}

static int put_line(struct buf *out, char tag, const char *s, size_t len)
{
	int r = buf_append(out, &tag, 1);

	if (r == 0)
		r = buf_append(out, s, len);
	if (r == 0 && (len == 0 || s[len - 1] != '\n'))
		r = buf_puts(out, "\n\\ No newline at end of file\n");
	return r;
}

/* The hunks of ops (in order) over a and b. */
static int put_hunks(struct buf *out, const struct text *a, const struct text *b,
		     const unsigned char *ops, size_t n_ops)
{
	size_t i = 0, ai = 0, bi = 0;
	int r = 0;

	while (i < n_ops && r == 0) {
		size_t s, e, ca = 0, cb = 0, as, bs, k, x, y;

		if (ops[i] == OP_EQ) {
			i++, ai++, bi++;
			continue;
		}
		/* a hunk: back TEXTDIFF_CONTEXT lines, on while changes come within
		 * 2 * TEXTDIFF_CONTEXT equal lines */
		s = i;
		k = 0;
		while (s > 0 && k < TEXTDIFF_CONTEXT && ops[s - 1] == OP_EQ)
			s--, k++;
		as = ai - k, bs = bi - k;
		e = i;
		for (;;) {
			size_t run = 0;

			while (e < n_ops && ops[e] != OP_EQ)
				e++;
			while (e + run < n_ops && ops[e + run] == OP_EQ &&
			       run <= 2 * TEXTDIFF_CONTEXT)
				run++;
			if (e + run < n_ops && run <= 2 * TEXTDIFF_CONTEXT) {
				e += run;
				continue;
			}
			e += run < TEXTDIFF_CONTEXT ? run : TEXTDIFF_CONTEXT;
			break;
		}
		for (k = s; k < e; k++)
			ca += ops[k] != OP_INS, cb += ops[k] != OP_DEL;
		r = buf_printf(out, "@@ -%zu,%zu +%zu,%zu @@\n", ca ? as + 1 : as, ca,
			       cb ? bs + 1 : bs, cb);
		for (k = s, x = as, y = bs; k < e && r == 0; k++) {
			if (ops[k] == OP_EQ)
				r = put_line(out, ' ', a->line[x], a->len[x]), x++, y++;
			else if (ops[k] == OP_DEL)
				r = put_line(out, '-', a->line[x], a->len[x]), x++;
			else
				r = put_line(out, '+', b->line[y], b->len[y]), y++;
		}
		/* where the loop above stopped, in both files */
		for (k = i; k < e; k++)
			ai += ops[k] != OP_INS, bi += ops[k] != OP_DEL;
		i = e;
	}
	return r;
}

static int diff_lines(struct buf *out, const struct text *a, const struct text *b)
{
	size_t pre = 0, suf = 0, n_ops = 0;
	unsigned char *ops;
	int r;

	while (pre < a->n && pre < b->n && same_line(a, pre, b, pre))
		pre++;
	while (suf < a->n - pre && suf < b->n - pre &&
	       same_line(a, a->n - 1 - suf, b, b->n - 1 - suf))
		suf++;
	ops = malloc(a->n + b->n + 1);
	if (!ops)
		return -ENOMEM;
	for (size_t i = 0; i < suf; i++)
		ops[n_ops++] = OP_EQ;
	n_ops += myers(a, pre, a->n - suf, b, pre, b->n - suf, ops + n_ops);
	for (size_t i = 0; i < pre; i++)
		ops[n_ops++] = OP_EQ;
	for (size_t i = 0; i < n_ops / 2; i++) {
		unsigned char t = ops[i];

		ops[i] = ops[n_ops - 1 - i];
		ops[n_ops - 1 - i] = t;
	}
	r = put_hunks(out, a, b, ops, n_ops);
	free(ops);
	return r;
}


int text_diff(const char *a, size_t alen, const char *b, size_t blen, struct buf *out)
{
	struct text x, y;
	int r = split(&x, a, alen);

	if (r == 0)
		r = split(&y, b, blen);
	else
		memset(&y, 0, sizeof(y));
	if (r == 0)
		r = diff_lines(out, &x, &y);
	text_release(&x);
	text_release(&y);
	return r;
}
