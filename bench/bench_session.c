/* Session figures through the library API (include/codecell.h):
 * a new session ready (cold: no warm pool yet), with and without the
 * preload set; a trivial execution's round trip; df.describe() in a warm
 * session.  Medians and p99 of N runs; baselines are measured by
 * bench/bench_run.py in the same `make bench`. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codecell.h"
#include "util/timeutil.h"

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *what, double *t, int n)
{
	qsort(t, (size_t)n, sizeof(double), cmp);
	printf("  %-44s median %8.3f ms  p99 %8.3f ms  (n=%d)\n", what, t[n / 2],
	       t[(int)ceil(n * 0.99) - 1], n);
}

static struct session *start(const char *preload, double *ms)
{
	struct session_opts o;
	struct session *s;
	char *err = NULL;
	uint64_t t0;

	session_opts_init(&o);
	o.preload = preload;
	t0 = now_ns();
	if (session_new(&o, &s, &err) < 0) {
		fprintf(stderr, "bench: cannot start a session: %s\n", err ? err : "?");
		exit(1);
	}
	*ms = (double)(now_ns() - t0) / 1e6;
	return s;
}

static double exec_ms(struct session *s, const char *code)
{
	struct run_result r;
	uint64_t t0 = now_ns();

	if (engine_session_exec(s, code, strlen(code), NULL, &r) < 0 || r.status != RESULT_OK) {
		fprintf(stderr, "bench: '%s' failed: %s\n", code,
			r.error_value ? r.error_value : "?");
		exit(1);
	}
	run_result_release(&r);
	return (double)(now_ns() - t0) / 1e6;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 20;
	double *t = calloc((size_t)(n > 1000 ? n : 1000), sizeof(double));
	struct session *s;

	printf("sessions (library API, cold start: there is no warm pool yet)\n");
	for (int i = 0; i < n; i++)
		session_free(start(NULL, &t[i]));
	report("new session ready, no preload", t, n);
	for (int i = 0; i < n; i++)
		session_free(start("numpy,pandas,matplotlib.pyplot", &t[i]));
	report("new session ready, numpy+pandas+pyplot", t, n);

	s = start("numpy,pandas", &t[0]);
	exec_ms(s, "x = 0");
	for (int i = 0; i < 1000; i++)
		t[i] = exec_ms(s, "x = x + 1");
	report("execute x = x + 1 (round trip)", t, 1000);
	exec_ms(s, "import numpy as np, pandas as pd");
	exec_ms(s, "df = pd.DataFrame(np.random.rand(10000, 4), columns=list('abcd'))");
	for (int i = 0; i < n; i++)
		t[i] = exec_ms(s, "df.describe()");
	report("df.describe() on 10,000 rows, warm session", t, n);
	session_free(s);
	free(t);
	return 0;
}
