#include "sandbox/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>

#include "sandbox/sandbox.h"
#include "util/fs.h"
#include "util/macro.h"
#include "util/banned.h"

static bool retry_pending(void);

static const char *const ctrl_names[_CGROUP_CTRL_MAX] = {
	[CGROUP_CTRL_MEMORY] = "memory",
	[CGROUP_CTRL_PIDS] = "pids",
	[CGROUP_CTRL_CPUACCT] = "cpuacct",
	[CGROUP_CTRL_CPU] = "cpu",
};

const char *cgroup_ctrl_name(enum cgroup_ctrl ctrl)
{
	return ctrl < _CGROUP_CTRL_MAX ? ctrl_names[ctrl] : NULL;
}

/* Does the space-separated list contain word? */
static bool list_has_word(const char *list, const char *word)
{
	size_t wl = strlen(word);

	for (const char *p = list; (p = strstr(p, word)); p += wl)
		if ((p == list || p[-1] == ' ') && (p[wl] == ' ' || p[wl] == '\0'))
			return true;
	return false;
}

/* Does the comma list [s, e) contain word? */
static bool list_has(const char *s, const char *e, const char *word)
{
	size_t wl = strlen(word);

	while (s < e) {
		const char *c = memchr(s, ',', (size_t)(e - s));
		const char *end = c ? c : e;

		if ((size_t)(end - s) == wl && !memcmp(s, word, wl))
			return true;
		s = end + 1;
	}
	return false;
}

int cgroup_self_path(enum cgroup_version v, const char *text, enum cgroup_ctrl ctrl, char *out,
		     size_t n)
{
	const char *line = text;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		const char *end = nl ? nl : line + strlen(line);
		const char *c1 = memchr(line, ':', (size_t)(end - line));
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
		bool match;

		if (c2) {
			if (v == CGROUP_V2)
				match = c1 - line == 1 && line[0] == '0' && c2 == c1 + 1;
			else
				match = list_has(c1 + 1, c2, ctrl_names[ctrl]);
			if (match) {
				size_t len = (size_t)(end - c2 - 1);

				if (len + 1 > n)
					return -ENAMETOOLONG;
				memcpy(out, c2 + 1, len);
				out[len] = '\0';
				return 0;
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	return -ENOENT;
}

static bool is_fs(const char *path, long magic)
{
	struct statfs sf;

	return statfs(path, &sf) == 0 && sf.f_type == magic;
}

/* mkdir that accepts an existing directory. */
static int mkdir_ok(const char *path)
{
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Can we make cgroups here and move processes into them? */
static bool writable_cgroup(const char *dir)
{
	_cleanup_free_ char *procs = NULL;

	if (access(dir, W_OK) < 0 || asprintf(&procs, "%s/cgroup.procs", dir) < 0)
		return false;
	return access(procs, W_OK) == 0;
}

static char *path_join3(const char *a, const char *b, const char *c)
{
	char *p;

	if (asprintf(&p, "%s/%s/%s", a, b, c) < 0)
		return NULL;
	/* collapse the "//" a cgroup path of "/" leaves */
	for (char *s = p; (s = strstr(s, "//"));)
		memmove(s, s + 1, strlen(s));
	return p;
}

/* Supervisors found alive by this probe.  Every codecell process probes
 * once, and a host running sessions and pools has hundreds of sb-*
 * directories of a few live supervisors in each hierarchy: asking the
 * kernel once per pid, not once per directory and hierarchy, took
 * hundreds of system calls off each one-shot run. */
struct live_pids {
	pid_t pid[256];
	size_t n;
};

static bool pid_alive(struct live_pids *lp, pid_t pid)
{
	for (size_t i = 0; i < lp->n; i++)
		if (lp->pid[i] == pid)
			return true;
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return false;
	if (lp->n < ARRAY_SIZE(lp->pid))
		lp->pid[lp->n++] = pid;
	return true;
}

/* A supervisor killed with SIGKILL cannot remove its cgroup: remove the
 * sb-<pid>-<n> directories of supervisors that are gone (rmdir fails
 * while a cgroup still has tasks, so this never disturbs a live one). */
static void collect_stale(const char *parent, struct live_pids *lp)
{
	DIR *d = opendir(parent);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char path[4096];
		long pid;
		char *end;

		if (strncmp(de->d_name, "sb-", 3) != 0)
			continue;
		pid = strtol(de->d_name + 3, &end, 10);
		if (end == de->d_name + 3 || *end != '-' || pid <= 0)
			continue;
		if (pid_alive(lp, (pid_t)pid))
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", parent, de->d_name) <
		    sizeof(path))
			(void)rmdir(path);
	}
	closedir(d);
}

static void probe_v1(const char *root, const char *self, struct cgroup_host *h)
{
	char rel[4096];

	h->version = CGROUP_V1;
	for (int c = 0; c < _CGROUP_CTRL_MAX; c++) {
		_cleanup_free_ char *dir = NULL;
		char *parent;

		if (cgroup_self_path(CGROUP_V1, self, c, rel, sizeof(rel)) < 0) {
			h->why = "controller not mounted";
			continue;
		}
		if (asprintf(&dir, "%s/%s", root, ctrl_names[c]) < 0)
			continue;
		parent = path_join3(dir, rel, "codecell");
		if (!parent)
			continue;
		/* co-mounted controllers ("cpu,cpuacct" with cpu and cpuacct
		 * as symlinks to it) get one directory: cgroup_create() makes
		 * it once for all of them.  Only the hierarchy's own name can
		 * be such a link: one readlink, not one per component. */
		int made = mkdir_ok(parent);
		char link[64];

		if (made == 0 && readlink(dir, link, sizeof(link)) >= 0) {
			char *real = realpath(parent, NULL);

			if (real) {
				free(parent);
				parent = real;
			}
		}
		if (made < 0 || !writable_cgroup(parent)) {
			h->why =
				"no permission to create a cgroup (run as root, or on cgroup v2 set CODECELL_CGROUP to a delegated cgroup)";
			free(parent);
			continue;
		}
		h->parent[c] = parent;
	}
}

/* Enable what can be enabled for dir's children, one controller at a
 * time (one unavailable controller fails a combined write whole). */
static void v2_enable(const char *dir)
{
	static const char *const want[] = { "+memory", "+pids", "+cpu" };
	_cleanup_free_ char *p = NULL;

	if (asprintf(&p, "%s/cgroup.subtree_control", dir) < 0)
		return;
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		(void)write_string_file(p, want[i]);
}

/* Is controller name enabled for dir's children? */
static bool v2_has(const char *dir, const char *name)
{
	_cleanup_free_ char *p = NULL;
	char text[512];

	if (asprintf(&p, "%s/cgroup.subtree_control", dir) < 0 ||
	    read_small_fileat(AT_FDCWD, p, text, sizeof(text)) < 0)
		return false;
	text[strcspn(text, "\n")] = '\0';
	return list_has_word(text, name);
}

static void probe_v2(const char *root, const char *env_override, struct cgroup_host *h)
{
	char *parent = NULL;

	h->version = CGROUP_V2;
	if (env_override && *env_override) {
		if (writable_cgroup(env_override))
			parent = strdup(env_override);
		else
			h->why = "CODECELL_CGROUP is not a cgroup we can write to";
	} else if (geteuid() == 0) {
		/* The root cgroup is exempt from the no-internal-processes
		 * rule, so controllers can be enabled for our subtree. */
		if (asprintf(&parent, "%s/codecell", root) < 0)
			parent = NULL;
		else if (mkdir_ok(parent) < 0) {
			h->why = "cannot create a cgroup under the cgroup v2 root";
			free(parent);
			parent = NULL;
		} else {
			v2_enable(root);
			v2_enable(parent);
		}
	} else {
		h->why = "an ordinary user needs a delegated cgroup: set CODECELL_CGROUP";
	}
	if (!parent)
		return;
	/* one directory; a controller counts only if delegated to it.
	 * CPU usage (cpu.stat) is there in every v2 cgroup. */
	if (v2_has(parent, "memory"))
		h->parent[CGROUP_CTRL_MEMORY] = strdup(parent);
	else
		h->why = "the memory controller is not enabled in the cgroup's subtree_control";
	if (v2_has(parent, "pids"))
		h->parent[CGROUP_CTRL_PIDS] = strdup(parent);
	else
		h->why = "the pids controller is not enabled in the cgroup's subtree_control";
	if (v2_has(parent, "cpu"))
		h->parent[CGROUP_CTRL_CPU] = strdup(parent);
	else
		h->why = "the cpu controller is not enabled in the cgroup's subtree_control";
	h->parent[CGROUP_CTRL_CPUACCT] = parent;
}

void cgroup_host_probe(const char *root, const char *self, const char *env_override,
		       struct cgroup_host *ret)
{
	memset(ret, 0, sizeof(*ret));
	/* a v2 CODECELL_CGROUP counts on a hybrid host too (v1 controllers
	 * with a v2 hierarchy beside them) */
	if (is_fs(root, CGROUP2_SUPER_MAGIC) ||
	    (env_override && *env_override && is_fs(env_override, CGROUP2_SUPER_MAGIC)))
		probe_v2(root, env_override, ret);
	else if (is_fs(root, TMPFS_MAGIC) || is_fs(root, CGROUP_SUPER_MAGIC))
		probe_v1(root, self, ret);
	else
		ret->why = "no cgroup filesystem mounted";
	if (!ret->parent[CGROUP_CTRL_MEMORY] && !ret->parent[CGROUP_CTRL_PIDS] &&
	    !ret->parent[CGROUP_CTRL_CPUACCT])
		ret->version = CGROUP_NONE;
}

void cgroup_host_sweep(const struct cgroup_host *h)
{
	struct live_pids lp = { .n = 0 };

	for (int c = 0; c < _CGROUP_CTRL_MAX; c++) {
		bool seen = false;

		/* v2 and co-mounted v1 controllers share a directory */
		for (int d = 0; d < c && !seen; d++)
			seen = h->parent[d] && h->parent[c] && !strcmp(h->parent[d], h->parent[c]);
		if (h->parent[c] && !seen)
			collect_stale(h->parent[c], &lp);
	}
}

void cgroup_host_release(struct cgroup_host *h)
{
	for (int c = 0; c < _CGROUP_CTRL_MAX; c++) {
		free(h->parent[c]);
		h->parent[c] = NULL;
	}
}

unsigned cgroup_host_enforceable(const struct cgroup_host *h)
{
	unsigned bits = 0;

	if (h->parent[CGROUP_CTRL_MEMORY])
		bits |= SANDBOX_LIMIT_MEMORY;
	if (h->parent[CGROUP_CTRL_PIDS])
		bits |= SANDBOX_LIMIT_PIDS;
	if (h->parent[CGROUP_CTRL_CPU])
		bits |= SANDBOX_LIMIT_CPUS;
	return bits;
}

static int write_knob(const char *dir, const char *knob, const char *value)
{
	_cleanup_free_ char *p = NULL;

	if (asprintf(&p, "%s/%s", dir, knob) < 0)
		return -ENOMEM;
	return write_string_file(p, value);
}

/* "key value" lines: the value of key, or 0. */
static uint64_t keyed_value(const char *text, const char *key)
{
	size_t kl = strlen(key);

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, key, kl) && l[kl] == ' ')
			return strtoull(l + kl + 1, NULL, 10);
	return 0;
}

static int v1_arm_oom(struct cgroup *cg)
{
	_cleanup_close_ int ocfd = -1;
	_cleanup_close_ int efd = -1;
	_cleanup_free_ char *p = NULL;
	char line[64];

	if (asprintf(&p, "%s/memory.oom_control", cg->path[CGROUP_CTRL_MEMORY]) < 0)
		return -ENOMEM;
	ocfd = open(p, O_RDONLY | O_CLOEXEC);
	if (ocfd < 0)
		return -errno;
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (efd < 0)
		return -errno;
	snprintf(line, sizeof(line), "%d %d", efd, ocfd);
	if (write_knob(cg->path[CGROUP_CTRL_MEMORY], "cgroup.event_control", line) < 0)
		return -errno;
	cg->oom_efd = TAKE_FD(efd);
	return 0;
}

/* v1: an eventfd that memory.pressure_level signals at "critical", the
 * level vmpressure reports when reclaim in this cgroup frees next to
 * nothing of what it scans.  Not there on every kernel: a cgroup without
 * it relies on the OOM notification alone. */
static int v1_arm_pressure(struct cgroup *cg)
{
	_cleanup_close_ int pfd = -1;
	_cleanup_close_ int efd = -1;
	_cleanup_free_ char *p = NULL;
	char line[64];

	if (asprintf(&p, "%s/memory.pressure_level", cg->path[CGROUP_CTRL_MEMORY]) < 0)
		return -ENOMEM;
	pfd = open(p, O_RDONLY | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (efd < 0)
		return -errno;
	snprintf(line, sizeof(line), "%d %d critical", efd, pfd);
	if (write_knob(cg->path[CGROUP_CTRL_MEMORY], "cgroup.event_control", line) < 0)
		return -errno;
	cg->press_fd = TAKE_FD(efd);
	return 0;
}

/* v2: memory.events itself; kernfs wakes its pollers with EPOLLPRI when
 * a counter changes ("max" counts the charges that hit the limit). */
static int v2_arm_pressure(struct cgroup *cg)
{
	_cleanup_free_ char *p = NULL;
	int fd;

	if (asprintf(&p, "%s/memory.events", cg->path[CGROUP_CTRL_MEMORY]) < 0)
		return -ENOMEM;
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	cg->press_fd = fd;
	return 0;
}

void cgroup_pressure_ack(const struct cgroup *cg)
{
	char text[512];
	uint64_t v;

	if (cg->press_fd < 0)
		return;
	if (cg->version == CGROUP_V2)
		(void)!pread(cg->press_fd, text, sizeof(text), 0);
	else
		(void)!read(cg->press_fd, &v, sizeof(v));
}

bool cgroup_stat_full(enum cgroup_version v, uint64_t usage, const char *stat, uint64_t limit)
{
	bool v1 = v == CGROUP_V1;
	/* v2 also counts kernel caches reclaim frees (dentries, inodes);
	 * v1's memory.stat does not list them */
	uint64_t file = keyed_value(stat, v1 ? "total_active_file" : "active_file") +
			keyed_value(stat, v1 ? "total_inactive_file" : "inactive_file") +
			(v1 ? 0 : keyed_value(stat, "slab_reclaimable"));
	uint64_t kept = usage > file ? usage - file : 0;

	return limit && kept + CGROUP_FULL_MARGIN(limit) >= limit;
}

/* The first number in dir/name, or 0. */
static uint64_t read_number(const char *dir, const char *name)
{
	_cleanup_free_ char *p = NULL;
	char text[32];

	if (asprintf(&p, "%s/%s", dir, name) < 0 ||
	    read_small_fileat(AT_FDCWD, p, text, sizeof(text)) < 0)
		return 0;
	return strtoull(text, NULL, 10);
}

enum cgroup_mem_state cgroup_memory_state(const struct cgroup *cg)
{
	const char *dir = cg->path[CGROUP_CTRL_MEMORY];
	_cleanup_free_ char *p = NULL;
	char stat[4096];
	uint64_t usage;

	if (!dir || !cg->memory_limit)
		return CGROUP_MEM_BELOW;
	usage = read_number(dir,
			    cg->version == CGROUP_V2 ? "memory.current" : "memory.usage_in_bytes");
	if (usage + CGROUP_FULL_MARGIN(cg->memory_limit) < cg->memory_limit)
		return CGROUP_MEM_BELOW; /* one small read settles most calls */
	if (asprintf(&p, "%s/memory.stat", dir) < 0 ||
	    read_small_fileat(AT_FDCWD, p, stat, sizeof(stat)) < 0)
		return CGROUP_MEM_AT_LIMIT;
	return cgroup_stat_full(cg->version, usage, stat, cg->memory_limit) ? CGROUP_MEM_FULL
									    : CGROUP_MEM_AT_LIMIT;
}

static int set_memory(struct cgroup *cg, uint64_t memory)
{
	const char *dir = cg->path[CGROUP_CTRL_MEMORY];
	char v[32];
	int r;

	snprintf(v, sizeof(v), "%" PRIu64, memory);
	cg->memory_limit = memory;
	if (cg->version == CGROUP_V2) {
		r = write_knob(dir, "memory.max", v);
		if (r < 0)
			return r;
		/* swap 0; absent when the kernel has no swap accounting */
		(void)write_knob(dir, "memory.swap.max", "0");
		/* the OOM killer takes the whole tree, not one process */
		r = write_knob(dir, "memory.oom.group", "1");
		if (r == 0)
			(void)v2_arm_pressure(cg);
		return r;
	}
	r = write_knob(dir, "memory.limit_in_bytes", v);
	if (r < 0)
		return r;
	/* memsw = memory + swap: equal means no swap.  Absent without
	 * swap accounting; swappiness 0 is the fallback. */
	if (write_knob(dir, "memory.memsw.limit_in_bytes", v) < 0)
		(void)write_knob(dir, "memory.swappiness", "0");
	r = v1_arm_oom(cg);
	if (r == 0)
		(void)v1_arm_pressure(cg);
	return r;
}

uint64_t cgroup_cpu_quota_us(double cpus)
{
	double q = cpus * CGROUP_CPU_PERIOD_US;

	if (!(q >= 1000))
		return 1000;
	/* far above any machine's cores; keeps the cast defined */
	if (q > 1e12)
		return 1000000000000ull;
	return (uint64_t)q;
}

/* A quota for the whole tree: every process in the cgroup shares it,
 * whatever it forks (CFS bandwidth control, sched-bwc.rst). */
static int set_cpus(struct cgroup *cg, double cpus)
{
	const char *dir = cg->path[CGROUP_CTRL_CPU];
	char v[64];

	if (cg->version == CGROUP_V2) {
		snprintf(v, sizeof(v), "%" PRIu64 " %d", cgroup_cpu_quota_us(cpus),
			 CGROUP_CPU_PERIOD_US);
		return write_knob(dir, "cpu.max", v);
	}
	/* a new v1 cgroup's cpu.cfs_period_us is the kernel's default,
	 * CGROUP_CPU_PERIOD_US: one write less on every sandbox's path */
	snprintf(v, sizeof(v), "%" PRIu64, cgroup_cpu_quota_us(cpus));
	return write_knob(dir, "cpu.cfs_quota_us", v);
}

int cgroup_set_cpu_weight(const struct cgroup *cg, unsigned weight)
{
	const char *dir = cg->path[CGROUP_CTRL_CPU];
	char v[32];

	if (!dir)
		return -ENOENT;
	if (weight < 1)
		weight = 1;
	if (weight > 10000)
		weight = 10000;
	if (cg->version == CGROUP_V2) {
		snprintf(v, sizeof(v), "%u", weight);
		return write_knob(dir, "cpu.weight", v);
	}
	snprintf(v, sizeof(v), "%u", weight * 1024 / 100);
	return write_knob(dir, "cpu.shares", v);
}

#ifndef SCHED_FLAG_RESET_ON_FORK
#define SCHED_FLAG_RESET_ON_FORK 0x01
#endif

/* struct sched_attr, as the kernel has it since 4.13 (glibc has no
 * wrapper). */
struct slice_attr {
	uint32_t size;
	uint32_t sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime;
	uint64_t sched_deadline;
	uint64_t sched_period;
	uint32_t sched_util_min;
	uint32_t sched_util_max;
};

/* One thread's slice; its policy and nice stay as they are.  Only the
 * ordinary policy has a slice: a thread the sandbox made SCHED_IDLE or
 * SCHED_BATCH is left alone. */
static void set_thread_slice(pid_t tid, uint64_t slice_ns)
{
	struct slice_attr a = { 0 };

	if (syscall(SYS_sched_getattr, tid, &a, (unsigned)sizeof(a), 0) < 0 ||
	    a.sched_policy != SCHED_OTHER)
		return;
	a.size = sizeof(a);
	/* the thread's own reset-on-fork stays; nothing else is asked for */
	a.sched_flags &= SCHED_FLAG_RESET_ON_FORK;
	a.sched_runtime = slice_ns;
	(void)syscall(SYS_sched_setattr, tid, &a, 0);
}

int cgroup_set_cpu_slice(const struct cgroup *cg, uint64_t slice_ns)
{
	const char *dir = cg->path[CGROUP_CTRL_CPU];
	_cleanup_free_ char *p = NULL;
	FILE *f;
	long tid;

	if (!dir)
		return -ENOENT;
	if (asprintf(&p, "%s/%s", dir, cg->version == CGROUP_V2 ? "cgroup.threads" : "tasks") < 0)
		return -ENOMEM;
	f = fopen(p, "re");
	if (!f)
		return -errno;
	while (fscanf(f, "%ld", &tid) == 1)
		if (tid > 0)
			set_thread_slice((pid_t)tid, slice_ns);
	fclose(f);
	return 0;
}

/* The path of an earlier slot whose parent is the same directory (v2, or
 * v1 co-mounted controllers), or NULL. */
static const char *shared_path(const struct cgroup_host *h, const struct cgroup *cg, int c)
{
	for (int d = 0; d < c; d++)
		if (cg->path[d] && h->parent[d] && !strcmp(h->parent[d], h->parent[c]))
			return cg->path[d];
	return NULL;
}

/* v2 keeps one directory in every slot: any set slot names it. */
static const char *cgroup_first_path(const struct cgroup *cg)
{
	for (int c = 0; c < _CGROUP_CTRL_MAX; c++)
		if (cg->path[c])
			return cg->path[c];
	return NULL;
}

int cgroup_create(const struct cgroup_host *h, const char *name, uint64_t memory, uint64_t pids,
		  double cpus, struct cgroup *ret)
{
	struct cgroup cg = { .version = h->version, .oom_efd = -1, .press_fd = -1 };
	char v[32];
	int r = 0;

	(void)retry_pending();
	for (int c = 0; c < _CGROUP_CTRL_MAX; c++) {
		const char *shared;

		if (!h->parent[c])
			continue;
		/* one directory for controllers that share a hierarchy */
		shared = shared_path(h, &cg, c);
		if (shared) {
			cg.path[c] = strdup(shared);
			if (!cg.path[c]) {
				r = -ENOMEM;
				goto fail;
			}
			continue;
		}
		if (asprintf(&cg.path[c], "%s/%s", h->parent[c], name) < 0) {
			cg.path[c] = NULL;
			r = -ENOMEM;
			goto fail;
		}
		if (mkdir(cg.path[c], 0755) < 0) {
			r = -errno;
			free(cg.path[c]);
			cg.path[c] = NULL;
			goto fail;
		}
	}
	if (memory && cg.path[CGROUP_CTRL_MEMORY]) {
		r = set_memory(&cg, memory);
		if (r < 0)
			goto fail;
	}
	if (pids && cg.path[CGROUP_CTRL_PIDS]) {
		snprintf(v, sizeof(v), "%" PRIu64, pids);
		r = write_knob(cg.path[CGROUP_CTRL_PIDS], "pids.max", v);
		if (r < 0)
			goto fail;
	}
	if (cpus > 0 && cg.path[CGROUP_CTRL_CPU]) {
		r = set_cpus(&cg, cpus);
		if (r < 0)
			goto fail;
	}
	*ret = cg;
	return 0;
fail:
	cgroup_destroy(&cg);
	return r;
}

int cgroup_attach(const struct cgroup *cg, pid_t pid)
{
	char v[32];

	snprintf(v, sizeof(v), "%d", (int)pid);
	if (cg->version == CGROUP_V2)
		return cgroup_first_path(cg) ? write_knob(cgroup_first_path(cg), "cgroup.procs", v)
					     : 0;
	for (int c = 0; c < _CGROUP_CTRL_MAX; c++) {
		int r;

		if (!cg->path[c])
			continue;
		r = write_knob(cg->path[c], "cgroup.procs", v);
		if (r < 0)
			return r;
	}
	return 0;
}

int cgroup_open_join_fds(const struct cgroup *cg, int fds[_CGROUP_CTRL_MAX])
{
	int n = 0, r;

	if (cg->version != CGROUP_V1)
		return 0;
	for (int c = 0; c < _CGROUP_CTRL_MAX; c++) {
		_cleanup_free_ char *p = NULL;

		bool dup = false;

		for (int d = 0; d < c; d++)
			dup = dup ||
			      (cg->path[d] && cg->path[c] && !strcmp(cg->path[d], cg->path[c]));
		if (!cg->path[c] || dup)
			continue;
		if (asprintf(&p, "%s/tasks", cg->path[c]) < 0) {
			p = NULL;
			r = -ENOMEM;
			goto fail;
		}
		fds[n] = open(p, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fds[n] < 0) {
			r = -errno;
			goto fail;
		}
		n++;
	}
	return n;
fail:
	while (n > 0)
		close(fds[--n]);
	return r;
}

int cgroup_open_dir(const struct cgroup *cg)
{
	const char *dir = cgroup_first_path(cg);
	int fd;

	if (cg->version != CGROUP_V2 || !dir)
		return -EOPNOTSUPP;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int cgroup_kill(const struct cgroup *cg)
{
	if (cg->version != CGROUP_V2 || !cgroup_first_path(cg))
		return -EOPNOTSUPP;
	return write_knob(cgroup_first_path(cg), "cgroup.kill", "1");
}

/* The files cgroup_read_stats() reads, by slot: the controller's
 * directory and the file's name on v1 and on v2.  Each is opened once
 * and re-read from offset 0 after: a session reads its cgroup's counters
 * twice per statement. */
static const struct {
	enum cgroup_ctrl ctrl;
	const char *v1, *v2;
} stat_files[CGROUP_STAT_FILES] = {
	{ CGROUP_CTRL_MEMORY, "memory.max_usage_in_bytes", "memory.peak" },
	{ CGROUP_CTRL_MEMORY, "memory.oom_control", "memory.events" },
	{ CGROUP_CTRL_CPUACCT, "cpuacct.usage", "cpu.stat" },
	{ CGROUP_CTRL_PIDS, "pids.events", "pids.events" },
	{ CGROUP_CTRL_CPU, "cpu.stat", "cpu.stat" }, /* v1 and v2 alike, with a quota set */
};
enum { STAT_PEAK, STAT_OOM, STAT_CPU, STAT_PIDS, STAT_THROTTLED };

/* The fd of slot's file, opened now if it was not: -errno */
static int stat_fd(struct cgroup *cg, int slot)
{
	const char *dir = cg->path[stat_files[slot].ctrl];
	_cleanup_free_ char *p = NULL;
	int fd;

	if (cg->stat_fd1[slot])
		return cg->stat_fd1[slot] - 1;
	if (!dir)
		return -ENOENT;
	if (asprintf(&p, "%s/%s", dir,
		     cg->version == CGROUP_V2 ? stat_files[slot].v2 : stat_files[slot].v1) < 0)
		return -ENOMEM;
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	cg->stat_fd1[slot] = fd + 1;
	return fd;
}

void cgroup_open_stats(struct cgroup *cg)
{
	for (int i = 0; i < CGROUP_STAT_FILES; i++)
		(void)stat_fd(cg, i);
}

static int read_stat(struct cgroup *cg, int slot, char *out, size_t n)
{
	int fd = stat_fd(cg, slot);
	ssize_t got;

	if (fd < 0)
		return fd;
	got = pread(fd, out, n - 1, 0);
	if (got < 0)
		return -errno;
	out[got] = '\0';
	return 0;
}

uint64_t cgroup_read_cpu(struct cgroup *cg)
{
	char text[2048];

	if (read_stat(cg, STAT_CPU, text, sizeof(text)) < 0)
		return 0;
	return cg->version == CGROUP_V2 ? keyed_value(text, "usage_usec") * 1000
					: strtoull(text, NULL, 10);
}

/* The threads' run queue waits: the second number of each
 * /proc/TID/schedstat, for the TIDs the tasks file lists (v1: the pids
 * or cpuacct controller's "tasks"; v2: "cgroup.threads"). */
static uint64_t threads_run_delay(const struct cgroup *cg)
{
	const char *dir = cg->path[CGROUP_CTRL_PIDS] ? cg->path[CGROUP_CTRL_PIDS]
						     : cg->path[CGROUP_CTRL_CPUACCT];
	_cleanup_free_ char *p = NULL;
	uint64_t sum = 0;
	char line[32], stat[96];
	FILE *f;

	if (!dir ||
	    asprintf(&p, "%s/%s", dir, cg->version == CGROUP_V2 ? "cgroup.threads" : "tasks") < 0)
		return 0;
	f = fopen(p, "re");
	if (!f)
		return 0;
	/* bounded: a tree has at most its pids limit of threads */
	while (fgets(line, sizeof(line), f)) {
		char sp[48];
		unsigned long long run, delay;

		snprintf(sp, sizeof(sp), "/proc/%d/schedstat", (int)strtol(line, NULL, 10));
		if (read_small_fileat(AT_FDCWD, sp, stat, sizeof(stat)) == 0 &&
		    sscanf(stat, "%llu %llu", &run, &delay) == 2)
			sum += delay;
	}
	fclose(f);
	return sum;
}

uint64_t cgroup_read_cpu_wait(struct cgroup *cg)
{
	char text[2048];
	uint64_t throttled = 0;

	if (read_stat(cg, STAT_THROTTLED, text, sizeof(text)) == 0)
		throttled = cg->version == CGROUP_V2 ? keyed_value(text, "throttled_usec") * 1000
						     : keyed_value(text, "throttled_time");
	return threads_run_delay(cg) + throttled;
}

void cgroup_read_stats(struct cgroup *cg, bool with_oom, struct cgroup_stats *ret)
{
	char text[2048];

	memset(ret, 0, sizeof(*ret));
	if (read_stat(cg, STAT_PEAK, text, sizeof(text)) == 0)
		ret->peak_memory = strtoull(text, NULL, 10);
	if (with_oom && read_stat(cg, STAT_OOM, text, sizeof(text)) == 0)
		ret->oom_kills = keyed_value(text, "oom_kill");
	ret->cpu_ns = cgroup_read_cpu(cg);
	if (read_stat(cg, STAT_PIDS, text, sizeof(text)) == 0)
		ret->pids_max_hits = keyed_value(text, "max");
	if (read_stat(cg, STAT_THROTTLED, text, sizeof(text)) == 0)
		ret->cpu_throttled = keyed_value(text, "nr_throttled");
}

/* Free the paths, close the fds; the directories stay. */
void cgroup_forget(struct cgroup *cg)
{
	for (int i = 0; i < CGROUP_STAT_FILES; i++)
		if (cg->stat_fd1[i]) {
			close(cg->stat_fd1[i] - 1);
			cg->stat_fd1[i] = 0;
		}
	for (int c = 0; c < _CGROUP_CTRL_MAX; c++) {
		free(cg->path[c]); /* each slot its own copy, shared or not */
		cg->path[c] = NULL;
	}
	close_fd(&cg->oom_efd);
	close_fd(&cg->press_fd);
}

bool cgroup_remove_dirs(const struct cgroup *cg)
{
	bool gone = true;

	for (int c = 0; c < _CGROUP_CTRL_MAX; c++)
		/* v2's shared one: ENOENT after the first */
		if (cg->path[c] && rmdir(cg->path[c]) < 0 && errno != ENOENT)
			gone = false;
	return gone;
}

/* Directories that cgroup_destroy() could not remove within its second
 * (a task still leaving: on a host at a load of 120, a killed tree's last
 * task took longer, and the soak found a memory cgroup left behind).
 * They are tried again whenever a cgroup is made, and at exit for up to
 * two seconds more.  Bounded: past CGROUP_PENDING_MAX the oldest is
 * given up to the next process's sweep (cgroup_host_sweep). */
#define CGROUP_PENDING_MAX 64
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static char *pending[CGROUP_PENDING_MAX];
static size_t n_pending;

static void defer_rmdir(char *path)
{
	pthread_mutex_lock(&pending_lock);
	if (n_pending == CGROUP_PENDING_MAX) {
		free(pending[0]);
		memmove(pending, pending + 1, (CGROUP_PENDING_MAX - 1) * sizeof(pending[0]));
		n_pending--;
	}
	pending[n_pending++] = path;
	pthread_mutex_unlock(&pending_lock);
}

/* Try each deferred directory once; true if none is left. */
static bool retry_pending(void)
{
	size_t kept = 0;
	bool none;

	pthread_mutex_lock(&pending_lock);
	for (size_t i = 0; i < n_pending; i++) {
		if (rmdir(pending[i]) == 0 || errno != EBUSY)
			free(pending[i]);
		else
			pending[kept++] = pending[i];
	}
	n_pending = kept;
	none = !kept;
	pthread_mutex_unlock(&pending_lock);
	return none;
}

__attribute__((destructor)) static void pending_at_exit(void)
{
	for (int i = 0; i < 200 && !retry_pending(); i++) {
		struct timespec ts = { 0, 10000000 };

		nanosleep(&ts, NULL);
	}
}

void cgroup_destroy(struct cgroup *cg)
{
	for (int i = 0; i < CGROUP_STAT_FILES; i++)
		if (cg->stat_fd1[i]) {
			close(cg->stat_fd1[i] - 1);
			cg->stat_fd1[i] = 0;
		}
	for (int c = 0; c < _CGROUP_CTRL_MAX; c++) {
		if (!cg->path[c])
			continue;
		/* Tasks killed a moment ago may still be leaving: retry
		 * EBUSY for up to a second. */
		bool busy = false;

		for (int i = 0; i < 1000; i++) {
			struct timespec ts = { 0, 1000000 };

			busy = false;
			if (rmdir(cg->path[c]) == 0 || errno == ENOENT)
				break;
			if (errno != EBUSY)
				break;
			busy = true;
			nanosleep(&ts, NULL);
		}
		/* v2 shares one directory between all slots */
		for (int d = c + 1; d < _CGROUP_CTRL_MAX; d++)
			if (cg->path[d] && !strcmp(cg->path[d], cg->path[c])) {
				free(cg->path[d]);
				cg->path[d] = NULL;
			}
		if (busy)
			defer_rmdir(cg->path[c]);
		else
			free(cg->path[c]);
		cg->path[c] = NULL;
	}
	close_fd(&cg->oom_efd);
	close_fd(&cg->press_fd);
}
