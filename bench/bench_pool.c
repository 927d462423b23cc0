/* The warm pool at scale and under load, through the library API.
 *
 *   bench_pool scale [MAX]   idle pooled sessions (numpy, pandas and
 *                            matplotlib.pyplot preloaded) up to MAX (1000):
 *                            at N = 100, 500, 1000 the PSS per idle
 *                            session, create p50 (the last 50 creates
 *                            before N) and execute p50 (50 sessions)
 *   bench_pool load [SECONDS] [CLIENTS] [THINK_MS]
 *                            CLIENTS threads (64) for SECONDS (20), each a
 *                            mix of create, fork, restart, execute and
 *                            delete on its own sessions, with a random
 *                            pause of 0 to THINK_MS (0) between operations
 *                            (an agent waiting on its model): p50/p99 of
 *                            each and how the pool served its takes.  With
 *                            no pause the clients ask for kernels as fast
 *                            as the machine makes them: a stress test
 *   bench_pool busy [BUSY] [FORKS]
 *                            FORKS (40) forks and creates on a quiet pool,
 *                            then while BUSY (8) other sessions run busy
 *                            loops: p50/p95 of both rounds (a fork's
 *                            snapshot and restore run in kernels that
 *                            compete with the busy ones for the CPUs)
 *
 * Prints figures and asserts nothing.  Each session holds about 12-14
 * fds of this process: RLIMIT_NOFILE is raised to its hard limit. */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "codecell.h"
#include "util/timeutil.h"
#include "../tests/lib/proctree.h"

#define PRELOAD "numpy,pandas,matplotlib.pyplot"

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(double *t, int n, double p)
{
	int i = (int)ceil(n * p) - 1;

	if (n <= 0)
		return NAN;
	qsort(t, (size_t)n, sizeof(double), cmp);
	return t[i < 0 ? 0 : i];
}

static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
		printf("RLIMIT_NOFILE %llu\n", (unsigned long long)rl.rlim_cur);
	}
}

static struct session_pool *make_pool(unsigned size)
{
	struct session_opts o;
	struct session_pool *p = NULL;
	char *err = NULL;

	session_opts_init(&o);
	o.preload = PRELOAD;
	if (session_pool_new(&o, size, &p, &err) < 0) {
		fprintf(stderr, "bench: cannot make a pool: %s\n", err ? err : "?");
		exit(1);
	}
	for (int i = 0; i < 6000 && session_pool_ready(p) < size; i++)
		usleep(10000);
	return p;
}

static struct session *create(struct session_pool *p, double *ms)
{
	struct session_opts o;
	struct session *s = NULL;
	char *err = NULL;
	uint64_t t0;

	session_opts_init(&o);
	o.preload = PRELOAD;
	o.pool = p;
	t0 = now_ns();
	if (session_new(&o, &s, &err) < 0) {
		fprintf(stderr, "bench: cannot start a session: %s\n", err ? err : "?");
		free(err);
		return NULL;
	}
	*ms = (double)(now_ns() - t0) / 1e6;
	return s;
}

static double exec_ms(struct session *s, const char *code)
{
	struct run_result r;
	uint64_t t0 = now_ns();
	bool ok = engine_session_exec(s, code, strlen(code), NULL, &r) == 0;

	if (ok) {
		ok = r.status == RESULT_OK;
		run_result_release(&r);
	}
	return ok ? (double)(now_ns() - t0) / 1e6 : NAN;
}

/* A number in a file of the v1 memory cgroup of pid, or -1. */
static long long memcg_value(pid_t pid, const char *file)
{
	char path[600], text[8192] = "", *m;
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(text, sizeof(text), f) && !(m = strstr(text, ":memory:")))
		;
	fclose(f);
	if (!(m = strstr(text, ":memory:")))
		return -1;
	m[8 + strcspn(m + 8, "\n")] = '\0';
	snprintf(path, sizeof(path), "/sys/fs/cgroup/memory%s/%s", m + 8, file);
	if ((f = fopen(path, "r"))) {
		if (fscanf(f, "%lld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static void print_health(struct session_pool *p)
{
	struct session_pool_health h;

	session_pool_health(p, &h);
	/* the init's: the template's own thread visits each cell's cgroup
	 * while it forks it */
	if (h.template_init_pid > 0 && memcg_value(h.template_init_pid, "memory.usage_in_bytes") >= 0)
		printf("  template's cgroup: %.1f MiB (kernel %.1f MiB) of its %.0f MiB limit\n",
		       (double)memcg_value(h.template_init_pid, "memory.usage_in_bytes") / 1048576,
		       (double)memcg_value(h.template_init_pid, "memory.kmem.usage_in_bytes") / 1048576,
		       (double)memcg_value(h.template_init_pid, "memory.limit_in_bytes") / 1048576);
	printf("  pool: ready %u target %u, template %s, restarts %llu; takes ready %llu, "
	       "direct %llu, cold %llu; dead discarded %llu, cell failures %llu%s%s\n",
	       h.ready, h.target, h.template_alive ? "alive" : "DOWN",
	       (unsigned long long)h.stats.template_restarts,
	       (unsigned long long)h.stats.taken_ready, (unsigned long long)h.stats.taken_direct,
	       (unsigned long long)h.stats.cold, (unsigned long long)h.stats.discarded,
	       (unsigned long long)h.stats.cell_failures, h.degraded ? "; degraded: " : "",
	       h.degraded ? h.why : "");
}

static int scale(int max)
{
	static const int marks[] = { 100, 500, 1000 };
	enum { POOL = 8, WINDOW = 50 };
	struct session_pool *p = make_pool(POOL);
	struct session **s = calloc((size_t)max, sizeof(*s));
	double *create_ms = calloc((size_t)max, sizeof(double)), t[WINDOW];
	long base;
	int n = 0;

	usleep(500000);
	base = proctree_pss_kb();
	printf("idle pooled sessions (" PRELOAD "), pool of %d; template + pool: %.1f MiB PSS\n",
	       POOL, (double)base / 1024);
	for (size_t m = 0; m < sizeof(marks) / sizeof(marks[0]) && marks[m] <= max; m++) {
		int k = 0;
		long pss;

		for (; n < marks[m]; n++) {
			s[n] = create(p, &create_ms[n]);
			if (!s[n] || isnan(exec_ms(s[n], "x = 1"))) {
				fprintf(stderr, "bench: session %d failed\n", n);
				goto out;
			}
		}
		for (int i = n - WINDOW; i < n; i++)
			t[k++] = create_ms[i];
		printf("N = %4d: create p50 %7.2f ms p99 %7.2f ms (last %d)", n, pct(t, k, 0.5),
		       pct(t, k, 0.99), WINDOW);
		for (int i = 0; i < WINDOW; i++)
			t[i] = exec_ms(s[(i * 7919) % n], "x = x + 1");
		printf(", execute p50 %6.2f ms p99 %6.2f ms", pct(t, WINDOW, 0.5),
		       pct(t, WINDOW, 0.99));
		for (int i = 0; i < 200 && session_pool_ready(p) < POOL; i++)
			usleep(10000);
		pss = proctree_pss_kb();
		printf(", PSS per idle session %.2f MiB (tree %.0f MiB)\n",
		       (double)(pss - base) / n / 1024, (double)pss / 1024);
		print_health(p);
		fflush(stdout);
	}
out:
	for (int i = 0; i < n; i++)
		session_free(s[i]);
	session_pool_free(p);
	free(s);
	free(create_ms);
	return 0;
}

/* ---- load: a mix of operations from many clients ---- */

enum op { OP_CREATE, OP_FORK, OP_RESTART, OP_EXEC, OP_DELETE, OP_MAX };
static const char *const op_names[OP_MAX] = { "create", "fork", "restart", "execute", "delete" };

#define MAX_SAMPLES 200000
struct load {
	struct session_pool *p;
	uint64_t until_ns;
	int think_ms;
	pthread_mutex_t lock;
	double *ms[OP_MAX];
	int n[OP_MAX];
	unsigned failures;
	unsigned empty_samples, samples;
};

static void record(struct load *l, enum op op, double ms)
{
	pthread_mutex_lock(&l->lock);
	if (isnan(ms))
		l->failures++;
	else if (l->n[op] < MAX_SAMPLES)
		l->ms[op][l->n[op]++] = ms;
	pthread_mutex_unlock(&l->lock);
}

static void *client(void *arg)
{
	enum { KEEP = 3 };
	struct load *l = arg;
	struct session *mine[KEEP] = { 0 };
	unsigned seed = (unsigned)(uintptr_t)&mine;

	while (now_ns() < l->until_ns) {
		int i = rand_r(&seed) % KEEP, r = rand_r(&seed) % 100;
		double ms;
		uint64_t t0;

		if (l->think_ms > 0)
			usleep((useconds_t)(rand_r(&seed) % (l->think_ms * 1000)));
		t0 = now_ns();
		if (!mine[i]) {
			mine[i] = create(l->p, &ms);
			record(l, OP_CREATE, mine[i] ? ms : NAN);
		} else if (r < 15) {
			struct session *f = NULL;
			char *msg = NULL;
			int k = (i + 1) % KEEP;

			if (session_fork(mine[i], &f, &msg) == 0) {
				record(l, OP_FORK, (double)(now_ns() - t0) / 1e6);
				session_free(mine[k]);
				mine[k] = f;
			} else {
				record(l, OP_FORK, NAN);
			}
			free(msg);
		} else if (r < 30) {
			record(l, OP_RESTART,
			       session_restart(mine[i]) == 0 ? (double)(now_ns() - t0) / 1e6 : NAN);
		} else if (r < 50) {
			session_free(mine[i]);
			mine[i] = NULL;
			record(l, OP_DELETE, (double)(now_ns() - t0) / 1e6);
		} else {
			record(l, OP_EXEC, exec_ms(mine[i], "x = 1"));
		}
	}
	for (int i = 0; i < KEEP; i++)
		session_free(mine[i]);
	return NULL;
}

static int load(double seconds, int clients, int think_ms)
{
	enum { POOL = 16 };
	struct load l = { .p = make_pool(POOL), .think_ms = think_ms };
	pthread_t *th = calloc((size_t)clients, sizeof(*th));

	pthread_mutex_init(&l.lock, NULL);
	for (int o = 0; o < OP_MAX; o++)
		l.ms[o] = calloc(MAX_SAMPLES, sizeof(double));
	printf("load: %d clients for %.0f s, 0-%d ms between operations, pool of %d (" PRELOAD ")\n",
	       clients, seconds, think_ms, POOL);
	l.until_ns = now_ns() + (uint64_t)(seconds * 1e9);
	for (int i = 0; i < clients; i++)
		pthread_create(&th[i], NULL, client, &l);
	while (now_ns() < l.until_ns) {
		usleep(100000);
		l.samples++;
		l.empty_samples += session_pool_ready(l.p) == 0;
	}
	for (int i = 0; i < clients; i++)
		pthread_join(th[i], NULL);
	for (int o = 0; o < OP_MAX; o++) {
		int n = l.n[o];

		printf("  %-8s n=%6d  p50 %8.2f ms  p99 %8.2f ms  max %8.2f ms\n", op_names[o], n,
		       pct(l.ms[o], n, 0.5), pct(l.ms[o], n, 0.99), pct(l.ms[o], n, 1.0));
		free(l.ms[o]);
	}
	printf("  failures %u; the pool was empty at %u of %u samples (every 100 ms)\n", l.failures,
	       l.empty_samples, l.samples);
	print_health(l.p);
	session_pool_free(l.p);
	pthread_mutex_destroy(&l.lock);
	free(th);
	return 0;
}

/* ---- busy: forks while sessions keep the CPUs busy ---- */

struct spinner {
	struct session *s;
	pthread_t th;
};

static void *spin(void *arg)
{
	struct spinner *sp = arg;
	struct session_exec_opts eo = { .timeout_s = 3600, .live_stdout = -1, .live_stderr = -1 };
	struct run_result r;
	const char *code = "while True:\n    pass";

	if (engine_session_exec(sp->s, code, strlen(code), &eo, &r) == 0)
		run_result_release(&r);
	return NULL;
}

/* n forks of src (each freed at once) and n creates: p50 and p95. */
static void fork_round(struct session_pool *p, struct session *src, int n, const char *label)
{
	double *f = calloc((size_t)n, sizeof(double)), *c = calloc((size_t)n, sizeof(double));
	int nf = 0, nc = 0;

	for (int i = 0; i < n; i++) {
		struct session *k = NULL;
		char *msg = NULL;
		uint64_t t0 = now_ns();

		if (session_fork(src, &k, &msg) == 0)
			f[nf++] = (double)(now_ns() - t0) / 1e6;
		free(msg);
		session_free(k);
		k = create(p, &c[nc]);
		nc += k != NULL;
		session_free(k);
		usleep(50000); /* the pool refills: a fork, not a cell's start */
	}
	printf("  %-26s fork p50 %7.2f ms p95 %7.2f ms (n=%d)   create p50 %6.2f ms p95 %6.2f ms\n",
	       label, pct(f, nf, 0.5), pct(f, nf, 0.95), nf, pct(c, nc, 0.5), pct(c, nc, 0.95));
	free(f);
	free(c);
}

/* Forks of a session with some state (a DataFrame, a function, a
 * list), first on a quiet pool, then while `busy` other sessions each
 * run a busy loop (their CPU quota, one core, lets them fill the
 * machine): the second round is what a fork costs under load. */
static int busy(int nbusy, int n)
{
	struct session_pool *p = make_pool(8);
	struct spinner *sp = calloc((size_t)nbusy, sizeof(*sp));
	struct session *src;
	double ms;

	printf("busy: %d forks of a session on a quiet pool, then with %d sessions in busy loops\n", n,
	       nbusy);
	src = create(p, &ms);
	if (!src || isnan(exec_ms(src, "import pandas as pd\ndf = pd.DataFrame({'a': range(100)})\n"
				       "def inc(v):\n    return v + 1\nitems = list(range(1000))")))
		return 1;
	fork_round(p, src, n, "quiet:");
	for (int i = 0; i < nbusy; i++) {
		sp[i].s = create(p, &ms);
		if (sp[i].s)
			pthread_create(&sp[i].th, NULL, spin, &sp[i]);
	}
	sleep(2); /* the loops are running */
	{
		char label[64];

		snprintf(label, sizeof(label), "%d busy sessions:", nbusy);
		fork_round(p, src, n, label);
	}
	for (int i = 0; i < nbusy; i++) {
		if (!sp[i].s)
			continue;
		(void)session_interrupt(sp[i].s);
		pthread_join(sp[i].th, NULL);
		session_free(sp[i].s);
	}
	session_free(src);
	print_health(p);
	session_pool_free(p);
	free(sp);
	return 0;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "scale";

	raise_nofile();
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(what, "scale"))
		return scale(argc > 2 ? (int)strtol(argv[2], NULL, 10) : 1000);
	if (!strcmp(what, "load"))
		return load(argc > 2 ? strtod(argv[2], NULL) : 20,
			    argc > 3 ? (int)strtol(argv[3], NULL, 10) : 64,
			    argc > 4 ? (int)strtol(argv[4], NULL, 10) : 0);
	if (!strcmp(what, "busy"))
		return busy(argc > 2 ? (int)strtol(argv[2], NULL, 10) : 8,
			    argc > 3 ? (int)strtol(argv[3], NULL, 10) : 40);
	fprintf(stderr, "usage: bench_pool scale [MAX] | load [SECONDS] [CLIENTS] [THINK_MS] | busy [BUSY] [FORKS]\n");
	return 2;
}
