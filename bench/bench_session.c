/* Session figures through the library API (include/codecell.h):
 * a new session ready, cold and from a warm pool, with and without the
 * preload set; a trivial execution's round trip; df.describe() in a warm
 * session; memory added per idle pooled session (PSS); the first cells of
 * a pooled session against a plain Python that did the same imports, in
 * the same run (`bench_session first [N]` runs that part alone).  Medians
 * and p99 of N runs; the other baselines are measured by
 * bench/bench_run.py in the same `make bench`. */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codecell.h"
#include "util/timeutil.h"
#include "../tests/lib/proctree.h"

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double load1(void)
{
	double l[1] = {0};

	return getloadavg(l, 1) == 1 ? l[0] : -1;
}

static void report(const char *what, double *t, int n)
{
	qsort(t, (size_t)n, sizeof(double), cmp);
	printf("  %-44s median %8.3f ms  p99 %8.3f ms  (n=%d)\n", what, t[n / 2],
	       t[(int)ceil(n * 0.99) - 1], n);
}

#define PRELOAD "numpy,pandas,matplotlib.pyplot"

static struct session *start_from(struct session_pool *pool, const char *preload, double *ms)
{
	struct session_opts o;
	struct session *s;
	char *err = NULL;
	uint64_t t0;

	session_opts_init(&o);
	o.preload = preload;
	o.pool = pool;
	t0 = now_ns();
	if (session_new(&o, &s, &err) < 0) {
		fprintf(stderr, "bench: cannot start a session: %s\n", err ? err : "?");
		exit(1);
	}
	*ms = (double)(now_ns() - t0) / 1e6;
	return s;
}

static struct session *start(const char *preload, double *ms)
{
	return start_from(NULL, preload, ms);
}

/* Wall time of one execution; its CPU time (the kernel's cgroup) in
 * *ret_cpu_ms if not NULL. */
static double exec_cpu_ms(struct session *s, const char *code, double *ret_cpu_ms)
{
	struct run_result r;
	uint64_t t0 = now_ns();

	if (engine_session_exec(s, code, strlen(code), NULL, &r) < 0 || r.status != RESULT_OK) {
		fprintf(stderr, "bench: '%s' failed: %s\n", code,
			r.error_value ? r.error_value : "?");
		exit(1);
	}
	if (ret_cpu_ms)
		*ret_cpu_ms = r.cpu_ms;
	run_result_release(&r);
	return (double)(now_ns() - t0) / 1e6;
}

static double exec_ms(struct session *s, const char *code)
{
	return exec_cpu_ms(s, code, NULL);
}

static void wait_full(struct session_pool *p, unsigned size)
{
	for (int i = 0; i < 3000 && session_pool_ready(p) < size; i++)
		usleep(2000);
}

/* The warm pool: a template with the preload set, POOL kernels ready. */
static void pool_figures(int n, double *t)
{
	enum { POOL = 4, IDLE = 8 };
	struct session_opts o;
	struct session_pool *p = NULL;
	struct session *idle[2 * IDLE];
	char *err = NULL;
	uint64_t t0 = now_ns();
	long pss_k, pss_2k;

	session_opts_init(&o);
	o.preload = PRELOAD;
	if (session_pool_new(&o, POOL, &p, &err) < 0) {
		fprintf(stderr, "bench: cannot make a pool: %s\n", err ? err : "?");
		exit(1);
	}
	wait_full(p, POOL);
	printf("warm pool (numpy+pandas+pyplot imported once by the template: %.0f ms to a full pool of %d)\n",
	       (double)(now_ns() - t0) / 1e6, POOL);
	for (int i = 0; i < n; i++) {
		wait_full(p, POOL);
		session_free(start_from(p, PRELOAD, &t[i]));
	}
	report("new session ready, from a full pool", t, n);
	wait_full(p, POOL);
	for (int i = 0; i < n; i++)
		session_free(start_from(p, PRELOAD, &t[i]));
	report("new sessions back to back (pool refilling)", t, n);
	/* memory: what IDLE more idle sessions add, with the pool full both
	 * times, divided by IDLE */
	for (int i = 0; i < IDLE; i++) {
		idle[i] = start_from(p, PRELOAD, &t[0]);
		exec_ms(idle[i], "x = 1");
	}
	wait_full(p, POOL);
	usleep(200000);
	pss_k = proctree_pss_kb();
	for (int i = IDLE; i < 2 * IDLE; i++) {
		idle[i] = start_from(p, PRELOAD, &t[0]);
		exec_ms(idle[i], "x = 1");
	}
	wait_full(p, POOL);
	usleep(200000);
	pss_2k = proctree_pss_kb();
	printf("memory: each idle pooled session adds %.1f MiB PSS (%d more sessions: %.1f -> %.1f MiB "
	       "for the whole tree); about %ld fit in 4 GiB\n",
	       (double)(pss_2k - pss_k) / IDLE / 1024, IDLE, (double)pss_k / 1024,
	       (double)pss_2k / 1024, 4l * 1024 * 1024 / ((pss_2k - pss_k) / IDLE));
	for (int i = 0; i < 2 * IDLE; i++)
		session_free(idle[i]);
	session_pool_free(p);
}

/* The first cells of a new session, in the order a user runs them: a
 * trivial cell twice, a describe() and a plot (rendered by the inline
 * backend at the end of the cell) twice, the second ones for what a cell
 * costs once nothing is done for the first time.  The plain Python baseline runs
 * the same code and renders the same way (repr and _repr_html_ of the
 * result, the figure saved as PNG with bbox_inches="tight"). */
static const char *const first_cells[] = {
	"1+1",
	"1+1",
	"pd.DataFrame(np.random.rand(100, 4), columns=list('abcd')).describe()",
	"plt.plot([1, 3, 2]); plt.title('first')",
	"pd.DataFrame(np.random.rand(100, 4), columns=list('abcd')).describe()",
	"plt.plot([1, 3, 2]); plt.title('first')",
};
#define FIRST_CELLS (sizeof(first_cells) / sizeof(first_cells[0]))
#define FIRST_PRELOAD "numpy as np,pandas as pd,matplotlib.pyplot as plt"

/* A fresh python3 imports what the pool preloads, then runs and times each
 * of first_cells in its own process (no sandbox, no round trip); wall and
 * CPU time in ms of each go to ret[2 * i] and ret[2 * i + 1]. */
static const char plain_py[] =
	"import sys, time, io, json\n"
	"import numpy as np, pandas as pd, matplotlib.pyplot as plt\n"
	"from matplotlib import _pylab_helpers\n"
	"ns = {'np': np, 'pd': pd, 'plt': plt}\n"
	"out = []\n"
	"for code in json.loads(sys.argv[1]):\n"
	"    t0, c0 = time.perf_counter(), time.process_time()\n"
	"    lines = code.split('; ')\n"
	"    exec('\\n'.join(lines[:-1]), ns)\n"
	"    v = eval(lines[-1], ns)\n"
	"    if v is not None:\n"
	"        repr(v)\n"
	"        getattr(v, '_repr_html_', lambda: None)()\n"
	"    for m in _pylab_helpers.Gcf.get_all_fig_managers():\n"
	"        b = io.BytesIO()\n"
	"        m.canvas.figure.savefig(b, format='png', bbox_inches='tight')\n"
	"        plt.close(m.canvas.figure)\n"
	"    out += [(time.perf_counter() - t0) * 1e3, (time.process_time() - c0) * 1e3]\n"
	"print(' '.join('%.3f' % x for x in out))\n";

static void plain_first(double ret[2 * FIRST_CELLS])
{
	char cells[1024] = "[", line[512] = "", *p, *end;
	char *argv[] = {"/usr/bin/python3", "-c", (char *)plain_py, cells, NULL};
	char *envp[] = {"PATH=/usr/bin:/bin", "MPLBACKEND=Agg", "LANG=C.UTF-8", NULL};
	posix_spawn_file_actions_t fa;
	int pfd[2], st;
	pid_t pid;
	FILE *f;

	for (size_t i = 0; i < FIRST_CELLS; i++)
		snprintf(cells + strlen(cells), sizeof(cells) - strlen(cells), "%s\"%s\"",
			 i ? "," : "", first_cells[i]);
	snprintf(cells + strlen(cells), sizeof(cells) - strlen(cells), "]");
	if (pipe2(pfd, O_CLOEXEC) < 0)
		exit(1);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	if (posix_spawn(&pid, argv[0], &fa, NULL, argv, envp) != 0) {
		fprintf(stderr, "bench: cannot run python3\n");
		exit(1);
	}
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	f = fdopen(pfd[0], "r");
	if (!f || !fgets(line, sizeof(line), f))
		line[0] = 0;
	if (f)
		fclose(f);
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "bench: the plain python3 baseline failed\n");
		exit(1);
	}
	p = line;
	for (size_t i = 0; i < 2 * FIRST_CELLS; i++, p = end) {
		ret[i] = strtod(p, &end);
		if (end == p) {
			fprintf(stderr, "bench: the plain python3 baseline said '%s'\n", line);
			exit(1);
		}
	}
}

/* Rounds that alternate: a session from a full pool (its create and first
 * cells), then a fresh plain Python.  Wall and CPU medians of each, and
 * the median of the per-round differences of wall time. */
static void first_figures(int n)
{
	enum { POOL = 4, W = 2 * FIRST_CELLS + 1 };
	/* per round: create, then wall and CPU of each cell */
	double (*pooled)[W] = calloc((size_t)n, sizeof(*pooled));
	double (*plain)[W] = calloc((size_t)n, sizeof(*plain));
	double *col = calloc((size_t)n * 5, sizeof(double));
	static const char *const names[] = {
		"first cell 1+1", "second cell 1+1", "first describe()", "first plot",
		"second describe()", "second plot",
	};
	struct session_opts o;
	struct session_pool *p = NULL;
	char *err = NULL;
	double l0 = load1();

	session_opts_init(&o);
	o.preload = FIRST_PRELOAD;
	if (!pooled || !plain || !col || session_pool_new(&o, POOL, &p, &err) < 0) {
		fprintf(stderr, "bench: cannot make a pool: %s\n", err ? err : "?");
		exit(1);
	}
	for (int r = 0; r < n; r++) {
		struct session *s;

		wait_full(p, POOL);
		usleep(100000); /* the refill's last cell settles */
		s = start_from(p, FIRST_PRELOAD, &pooled[r][0]);
		for (size_t c = 0; c < FIRST_CELLS; c++)
			pooled[r][2 * c + 1] = exec_cpu_ms(s, first_cells[c], &pooled[r][2 * c + 2]);
		session_free(s);
		plain_first(&plain[r][1]);
	}
	printf("first cells of a pooled session (pool of %d: %s), against a fresh python3 that did "
	       "the same imports and runs the same cells in-process; %d rounds alternating, "
	       "load average %.1f before, %.1f after\n", POOL, FIRST_PRELOAD, n, l0, load1());
	for (int r = 0; r < n; r++)
		col[r] = pooled[r][0];
	qsort(col, (size_t)n, sizeof(double), cmp);
	printf("  %-17s pooled wall %7.2f ms (p90 %7.2f)\n", "create", col[n / 2],
	       col[(n * 9) / 10]);
	for (size_t c = 0; c < FIRST_CELLS; c++) {
		double *v[5];

		for (int k = 0; k < 5; k++)
			v[k] = col + (size_t)k * (size_t)n;
		for (int r = 0; r < n; r++) {
			v[0][r] = pooled[r][2 * c + 1];
			v[1][r] = pooled[r][2 * c + 2];
			v[2][r] = plain[r][2 * c + 1];
			v[3][r] = plain[r][2 * c + 2];
			v[4][r] = v[0][r] - v[2][r];
		}
		for (int k = 0; k < 5; k++)
			qsort(v[k], (size_t)n, sizeof(double), cmp);
		printf("  %-17s pooled wall %7.2f ms (p90 %7.2f) CPU %6.2f ms   plain wall %6.2f ms "
		       "(p90 %6.2f) CPU %6.2f ms   paired %+7.2f ms\n", names[c], v[0][n / 2],
		       v[0][(n * 9) / 10], v[1][n / 2], v[2][n / 2], v[2][(n * 9) / 10], v[3][n / 2],
		       v[4][n / 2]);
	}
	printf("  (pooled: each cell's round trip through engine_session_exec, CPU of the kernel's "
	       "cgroup; plain: inside python3, its process time; paired: median of the per-round "
	       "differences of wall time)\n");
	session_pool_free(p);
	free(col);
	free(pooled);
	free(plain);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 20;
	double *t;
	struct session *s;

	if (argc > 1 && !strcmp(argv[1], "first")) {
		first_figures(argc > 2 ? (int)strtol(argv[2], NULL, 10) : 20);
		return 0;
	}
	t = calloc((size_t)(n > 1000 ? n : 1000), sizeof(double));
	printf("sessions (library API)\n");
	for (int i = 0; i < n; i++)
		session_free(start(NULL, &t[i]));
	report("new session ready, cold, no preload", t, n);
	for (int i = 0; i < n; i++)
		session_free(start(PRELOAD, &t[i]));
	report("new session ready, cold, numpy+pandas+pyplot", t, n);

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
	pool_figures(n, t);
	first_figures(n);
	free(t);
	return 0;
}
