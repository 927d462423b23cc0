/* sandbox: seccomp policy construction and behaviour, cgroup path logic
 * and lifecycle, and the spawn/wait/free API against real programs. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <linux/audit.h>
#include <linux/seccomp.h>

#include "sandbox/cgroup.h"
#include "sandbox/ids.h"
#include "sandbox/internal.h"
#include "sandbox/sandbox.h"
#include "sandbox/seccomp.h"
#include "util/buf.h"
#include "util/fs.h"

static void seccomp_lists_are_disjoint(void **state)
{
	(void)state;
	for (const char *const *d = sandbox_seccomp_denied; *d; d++)
		for (const char *const *a = sandbox_seccomp_allowed; *a; a++)
			if (!strcmp(*a, *d))
				fail_msg("'%s' is both allowed and denied", *a);
}

static void seccomp_embedded_matches_fresh_build(void **state)
{
	(void)state;
	for (int w = 0; w < SANDBOX_SECCOMP_N; w++) {
		struct sock_fprog *p;

		assert_int_equal(sandbox_seccomp_build(w, &p), 0);
		assert_int_equal(p->len, sandbox_seccomp_programs[w].len);
		assert_memory_equal(p->filter, sandbox_seccomp_programs[w].filter,
				    p->len * sizeof(struct sock_filter));
		sandbox_seccomp_free(p);
	}
}

/* The main filter as loaded (compact on x86_64) and as libseccomp
 * compiles it give the same verdict for every call number, x32's and
 * other architectures', and every argument value the rules look at,
 * with the high words and the other bits varied. */
static void seccomp_compact_main_acts_as_libseccomps(void **state)
{
	static const uint32_t arches[] = { AUDIT_ARCH_X86_64, AUDIT_ARCH_I386, AUDIT_ARCH_AARCH64,
					   0 };
	static const uint32_t special[] = { 0x0,     0x1,	 0x8,	      0x11,	   0x20000,
					    0x20008, 0x20009,	 0xffffffffu, 0xfffffffeu, 0x1000,
					    0x2000,  0x4000,	 0x6000,      0x8000,	   0xa000,
					    0xc000,  0xe000,	 0xf000,      0x11a4,	   0x81a4,
					    0x21a4,  0x01200011, 0x003d0f00 };
	const struct sock_fprog *loaded = &sandbox_seccomp_programs[SECCOMP_MAIN];
	struct sock_fprog *ref;
	static uint32_t values[64 + 32 + 2 * 3 * 1024];
	size_t n_values = 0, checked = 0;
	uint64_t rnd = 0x9e3779b97f4a7c15ull;

	(void)state;
	assert_int_equal(sandbox_seccomp_build_reference(SECCOMP_MAIN, &ref), 0);
	for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++)
		values[n_values++] = special[i];
	for (int b = 0; b < 32; b++) /* each flag bit alone (the namespace ones among them) */
		values[n_values++] = 1u << b;
	while (n_values < 64 + 32) {
		rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
		values[n_values++] = (uint32_t)(rnd >> 32);
	}
	/* and where a comparison of either program can change the verdict */
	n_values += sandbox_bpf_constants(ref, values + n_values,
					  sizeof(values) / sizeof(values[0]) - n_values);
	n_values += sandbox_bpf_constants(loaded, values + n_values,
					  sizeof(values) / sizeof(values[0]) - n_values);
	for (size_t a = 0; a < sizeof(arches) / sizeof(arches[0]); a++) {
		for (uint64_t nr = 0;
		     nr < 1100 || (nr >= 0x3ffffff0u && nr < 0x40000010u) || nr >= 0xfffffff0u;) {
			struct seccomp_data d = { .nr = (int)nr, .arch = arches[a] };
			bool ref_args = false, args = false;
			uint32_t want = sandbox_bpf_run(ref, &d, &ref_args);

			assert_int_not_equal(want, SANDBOX_BPF_BAD);

			if (sandbox_bpf_run(loaded, &d, &args) != want)
				fail_msg("call %llu, arch %#x, no arguments: %#x, libseccomp's %#x",
					 (unsigned long long)nr, arches[a],
					 sandbox_bpf_run(loaded, &d, NULL), want);
			checked++;
			/* a call whose verdict may hang on an argument: each
			 * argument's low word through the values, the rest varied */
			if (ref_args || args) {
				for (int i = 0; i < 6; i++)
					for (size_t v = 0; v < n_values; v++) {
						rnd = rnd * 6364136223846793005ull +
						      1442695040888963407ull;
						for (int k = 0; k < 6; k++)
							d.args[k] =
								k == i ? ((rnd &
									   0xffffffff00000000ull) |
									  values[v])
								       : (rnd >> (k * 7));
						if (v % 2)
							d.args[i] &=
								0xffffffffull; /* high word 0 too */
						want = sandbox_bpf_run(ref, &d, NULL);
						if (sandbox_bpf_run(loaded, &d, NULL) != want)
							fail_msg(
								"call %llu, arg %d = %#llx: %#x, libseccomp's %#x",
								(unsigned long long)nr, i,
								(unsigned long long)d.args[i],
								sandbox_bpf_run(loaded, &d, NULL),
								want);
						checked++;
					}
			}
			nr = nr == 1099 ? 0x3ffffff0u : nr == 0x4000000fu ? 0xfffffff0u : nr + 1;
			if (nr > 0xffffffffu)
				break;
		}
	}
	/* the argument rules were reached, and the tree is smaller */
	assert_true(checked > 4 * 1100 + 4 * 6 * 64);
#ifdef __x86_64__
	assert_true(loaded->len * 2 < ref->len);
#endif
	sandbox_seccomp_free(ref);
}

/* In a child: load the filter, then report each call's errno through the
 * exit status, one call per child. */
static int errno_under_filter(int which)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		long r = 0;

		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    sandbox_seccomp_load(sandbox_seccomp_programs, SANDBOX_SECCOMP_N) < 0)
			_exit(255);
		errno = 0;
		switch (which) {
		case 0:
			r = syscall(SYS_mount, "none", "/tmp", "tmpfs", 0, NULL);
			break;
		case 1:
			r = syscall(SYS_unshare, CLONE_NEWUSER);
			break;
		case 2:
			r = syscall(SYS_clone, CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0);
			break;
		case 3:
			r = syscall(SYS_clone3, NULL, 0);
			break;
		case 4:
			r = syscall(SYS_bpf, 0, NULL, 0);
			break;
		case 5:
			r = ioctl(0, TIOCSTI, "x");
			break;
		case 6:
			r = syscall(SYS_ioctl, 0, (0x123UL << 32) | TIOCSTI, "x");
			break;
		case 7:
			r = syscall(SYS_getpid) > 0 ? 0 : -1;
			errno = 0;
			break;
		case 8:
			r = syscall(442);
			break; /* mount_setattr: denied */
		case 9:
			r = syscall(1023);
			break; /* no such call */
		case 10:
			r = syscall(SYS_ptrace, 0, 0, 0, 0);
			break;
		}
		_exit(r < 0 ? errno : 0);
	}
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static void seccomp_filter_behaviour(void **state)
{
	(void)state;
	assert_int_equal(errno_under_filter(0), EPERM);
	assert_int_equal(errno_under_filter(1), EPERM);
	assert_int_equal(errno_under_filter(2), EPERM);
	assert_int_equal(errno_under_filter(3), ENOSYS);
	assert_int_equal(errno_under_filter(4), EPERM);
	assert_int_equal(errno_under_filter(5), EPERM);
	assert_int_equal(errno_under_filter(6), EPERM);
	assert_int_equal(errno_under_filter(7), 0);
	assert_int_equal(errno_under_filter(8), EPERM);
	assert_int_equal(errno_under_filter(9), ENOSYS);
	assert_int_equal(errno_under_filter(10), EPERM);
}

static void seccomp_wrong_arch_kills(void **state)
{
	pid_t pid;
	int st;

	(void)state;
	pid = fork();
	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    sandbox_seccomp_load(sandbox_seccomp_programs, SANDBOX_SECCOMP_N) < 0)
			_exit(255);
		syscall(39 | 0x40000000); /* x32 getpid */
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGSYS);
}

static void cgroup_paths(void **state)
{
	const char *v1 = "12:pids:/user.slice\n"
			 "4:memory:/process_api/abc\n"
			 "3:cpu,cpuacct:/\n"
			 "0::/init.scope\n";
	const char *v2 = "0::/user.slice/session-1.scope\n";
	char out[256];

	(void)state;
	assert_int_equal(cgroup_self_path(CGROUP_V1, v1, CGROUP_CTRL_MEMORY, out, sizeof(out)), 0);
	assert_string_equal(out, "/process_api/abc");
	assert_int_equal(cgroup_self_path(CGROUP_V1, v1, CGROUP_CTRL_PIDS, out, sizeof(out)), 0);
	assert_string_equal(out, "/user.slice");
	/* a controller inside a comma list */
	assert_int_equal(cgroup_self_path(CGROUP_V1, v1, CGROUP_CTRL_CPUACCT, out, sizeof(out)), 0);
	assert_string_equal(out, "/");
	assert_int_equal(cgroup_self_path(CGROUP_V2, v1, CGROUP_CTRL_MEMORY, out, sizeof(out)), 0);
	assert_string_equal(out, "/init.scope");
	assert_int_equal(cgroup_self_path(CGROUP_V2, v2, CGROUP_CTRL_PIDS, out, sizeof(out)), 0);
	assert_string_equal(out, "/user.slice/session-1.scope");
	assert_int_equal(cgroup_self_path(CGROUP_V1, v2, CGROUP_CTRL_MEMORY, out, sizeof(out)),
			 -ENOENT);
	/* "cpuacctx" is not "cpuacct" */
	assert_int_equal(cgroup_self_path(CGROUP_V1, "3:cpuacctx:/a\n", CGROUP_CTRL_CPUACCT, out,
					  sizeof(out)),
			 -ENOENT);
	assert_int_equal(cgroup_self_path(CGROUP_V1, v1, CGROUP_CTRL_MEMORY, out, 4),
			 -ENAMETOOLONG);
}

/* On this host (root, cgroup v1 or v2): make a cgroup, check the limits
 * landed, put a process in, read its stats, destroy, nothing left. */
/* Full is what reclaim cannot give back (all but the file pages) within
 * the margin of the limit: page cache at the limit is not full. */
static void cgroup_full_counts_only_what_cannot_be_reclaimed(void **state)
{
	const uint64_t M = 1u << 20, lim = 512 * M;
	char stat[256];

	(void)state;
	assert_int_equal(CGROUP_FULL_MARGIN(lim), 16 * M);
	assert_int_equal(CGROUP_FULL_MARGIN(16 * M), M);
	snprintf(stat, sizeof(stat), "cache 1\ntotal_active_file %llu\ntotal_inactive_file %llu\n",
		 (unsigned long long)(200 * M), (unsigned long long)(100 * M));
	/* 512M used, 300M of it files: 212M kept */
	assert_false(cgroup_stat_full(CGROUP_V1, lim, stat, lim));
	snprintf(stat, sizeof(stat), "total_active_file %llu\ntotal_inactive_file %llu\n",
		 (unsigned long long)(2 * M), (unsigned long long)(3 * M));
	assert_true(cgroup_stat_full(CGROUP_V1, lim, stat, lim));
	/* just outside the margin, just inside */
	assert_false(cgroup_stat_full(CGROUP_V1, lim - 12 * M, stat, lim));
	assert_true(cgroup_stat_full(CGROUP_V1, lim - 11 * M, stat, lim));
	/* v1's local keys are not v1's hierarchical ones, nor v2's */
	assert_true(cgroup_stat_full(CGROUP_V1, lim, "active_file 104857600\n", lim));
	assert_false(cgroup_stat_full(CGROUP_V2, lim, "active_file 104857600\n", lim));
	assert_true(cgroup_stat_full(CGROUP_V2, lim, "total_active_file 104857600\n", lim));
	/* v2: reclaimable kernel caches are given back too */
	assert_true(cgroup_stat_full(CGROUP_V2, lim, "active_file 1\n", lim));
	assert_false(cgroup_stat_full(CGROUP_V2, lim, "slab_reclaimable 104857600\n", lim));
	/* no limit, never full; usage below the files reads as 0 kept */
	assert_false(cgroup_stat_full(CGROUP_V2, lim, "", 0));
	assert_false(cgroup_stat_full(CGROUP_V2, M, "active_file 104857600\n", lim));
}

/* This process's cgroups, as a sandbox would get them; root only. */
static void host_cgroups(struct cgroup_host *h)
{
	struct buf self;

	buf_init(&self, 65536);
	assert_int_equal(buf_read_file(&self, "/proc/self/cgroup"), 0);
	cgroup_host_probe("/sys/fs/cgroup", buf_str(&self), NULL, h);
	buf_release(&self);
	if (geteuid() != 0 || h->version == CGROUP_NONE)
		fail_msg("needs root and a usable cgroup hierarchy (%s)", h->why ? h->why : "?");
}

/* A cgroup whose last task is still there when cgroup_destroy() gives up
 * (its second of retries) is not left behind: the next cgroup made
 * removes it once the task is gone.  The soak, at a load of 120, left
 * one such memory cgroup. */
static void cgroup_busy_at_destroy_is_removed_later(void **state)
{
	struct cgroup_host h;
	struct cgroup cg, next;
	char name[64], path[4096];
	pid_t pid;
	int s;

	(void)state;
	host_cgroups(&h);
	snprintf(name, sizeof(name), "unit-busy-%d", (int)getpid());
	assert_int_equal(cgroup_create(&h, name, 64u << 20, 0, 0, &cg), 0);
	pid = fork();
	if (pid == 0) {
		pause();
		_exit(0);
	}
	assert_int_equal(cgroup_attach(&cg, pid), 0);
	snprintf(path, sizeof(path), "%s", cg.path[CGROUP_CTRL_MEMORY]);
	cgroup_destroy(&cg); /* the task is still in it: EBUSY */
	assert_int_equal(access(path, F_OK), 0);
	kill(pid, SIGKILL);
	waitpid(pid, &s, 0);
	snprintf(name, sizeof(name), "unit-next-%d", (int)getpid());
	assert_int_equal(cgroup_create(&h, name, 0, 0, 0, &next), 0);
	assert_int_equal(access(path, F_OK), -1);
	cgroup_destroy(&next);
	cgroup_host_release(&h);
}

static void cgroup_lifecycle_on_host(void **state)
{
	struct cgroup_host h;
	struct cgroup cg;
	struct cgroup_stats st;
	char v[64], path[4096];
	pid_t pid;
	int s, sync[2];

	(void)state;
	host_cgroups(&h);
	snprintf(v, sizeof(v), "unit-test-%d", (int)getpid());
	assert_int_equal(cgroup_create(&h, v, 64u << 20, 17, 0.5, &cg), 0);
	snprintf(path, sizeof(path), "%s/%s", cg.path[CGROUP_CTRL_PIDS], "pids.max");
	assert_int_equal(read_small_fileat(AT_FDCWD, path, v, sizeof(v)), 0);
	assert_string_equal(v, "17\n");
	/* the CPU quota: half a core of every 100 ms period */
	assert_non_null(cg.path[CGROUP_CTRL_CPU]);
	snprintf(path, sizeof(path), "%s/%s", cg.path[CGROUP_CTRL_CPU],
		 h.version == CGROUP_V2 ? "cpu.max" : "cpu.cfs_quota_us");
	assert_int_equal(read_small_fileat(AT_FDCWD, path, v, sizeof(v)), 0);
	assert_string_equal(v, h.version == CGROUP_V2 ? "50000 100000\n" : "50000\n");
	snprintf(path, sizeof(path), "%s/%s", cg.path[CGROUP_CTRL_MEMORY],
		 h.version == CGROUP_V2 ? "memory.max" : "memory.limit_in_bytes");
	assert_int_equal(read_small_fileat(AT_FDCWD, path, v, sizeof(v)), 0);
	assert_int_equal(strtoull(v, NULL, 10), 64u << 20);
	assert_int_equal(pipe(sync), 0);
	pid = fork();
	if (pid == 0) {
		char b;
		volatile char *mem;

		close(sync[1]);
		if (read(sync[0], &b, 1) != 1)
			_exit(1);
		/* charged to the cgroup: allocated after the move */
		/* volatile: the compiler must not fold the writes away */
		mem = malloc(8 << 20);
		for (int i = 0; i < (8 << 20); i += 4096)
			mem[i] = 1;
		_exit(mem[4096]);
	}
	close(sync[0]);
	assert_int_equal(cgroup_attach(&cg, pid), 0);
	assert_int_equal(write(sync[1], "g", 1), 1);
	close(sync[1]);
	waitpid(pid, &s, 0);
	assert_true(WIFEXITED(s) && WEXITSTATUS(s) == 1);
	cgroup_read_stats(&cg, true, &st);
	if (st.peak_memory < (8u << 20))
		fail_msg("peak memory %llu, expected >= 8 MiB", (unsigned long long)st.peak_memory);
	snprintf(path, sizeof(path), "%s", cg.path[CGROUP_CTRL_MEMORY]);
	cgroup_destroy(&cg);
	assert_int_equal(access(path, F_OK), -1);
	cgroup_host_release(&h);
}

struct collected {
	struct buf out;
};

static int collect(void *ud, int ch, const char *data, size_t n)
{
	struct collected *c = ud;

	(void)ch;
	(void)buf_append(&c->out, data, n);
	return 0;
}

/* Run argv in a sandbox; returns the exit description. */
/* the working directory run_in_sandbox asks for (NULL: the default) */
static const char *g_cwd;

static int run_in_sandbox(const char *const *argv, double timeout, struct sandbox_exit *x,
			  struct buf *out, const char **ret_step)
{
	static const char *const envp[] = { "PATH=/usr/bin:/bin", NULL };
	struct sandbox_config cfg = { 0 };
	struct sandbox *sb = NULL;
	struct collected c;
	int p[2], r;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	cfg.argv = argv;
	cfg.envp = envp;
	cfg.cwd = g_cwd;
	cfg.stdin_fd = -1;
	cfg.stdout_fd = p[1];
	cfg.stderr_fd = p[1];
	cfg.limits.timeout_s = timeout;
	cfg.limits.tmp_bytes = 1 << 20;
	cfg.limits.workspace_bytes = 1 << 20;
	cfg.limits.pids = 16;
	cfg.host_uid = cfg.host_gid = 65534;
	r = sandbox_new(&cfg, &sb, ret_step);
	if (r < 0)
		print_error("sandbox_new: %s (step: %s)\n", strerror(-r),
			    ret_step && *ret_step ? *ret_step : "?");
	close(p[1]);
	if (r == 0)
		r = sandbox_start(sb);
	if (r == 0) {
		struct sandbox_wait_opts o = { .channel_fds = { p[0] },
					       .n_channels = 1,
					       .on_output = collect,
					       .userdata = &c };

		buf_init(&c.out, 1 << 20);
		r = sandbox_wait(sb, &o, x);
		if (out)
			(void)buf_puts(out, buf_str(&c.out));
		buf_release(&c.out);
	}
	sandbox_free(sb);
	close(p[0]);
	return r;
}

static void sandbox_runs_and_reports_exit(void **state)
{
	const char *const argv[] = { "/bin/sh", "-c", "echo $(id -u) $(hostname); exit 7", NULL };
	const char *step = NULL;
	struct sandbox_exit x;
	struct buf out;

	(void)state;
	buf_init(&out, 4096);
	assert_int_equal(run_in_sandbox(argv, 10, &x, &out, &step), 0);
	assert_int_equal(x.end, SANDBOX_END_EXITED);
	assert_int_equal(x.exit_code, 7);
	assert_string_equal(buf_str(&out), "1000 codecell\n");
	buf_release(&out);
}

static void sandbox_signal_and_timeout(void **state)
{
	const char *const killself[] = { "/bin/sh", "-c", "kill -TERM $$", NULL };
	const char *const sleeper[] = { "/bin/sh", "-c", "sleep 600 & sleep 600", NULL };
	struct sandbox_exit x;

	(void)state;
	assert_int_equal(run_in_sandbox(killself, 10, &x, NULL, NULL), 0);
	assert_int_equal(x.end, SANDBOX_END_SIGNALED);
	assert_int_equal(x.signal, SIGTERM);
	assert_int_equal(run_in_sandbox(sleeper, 0.3, &x, NULL, NULL), 0);
	assert_int_equal(x.end, SANDBOX_END_TIMEOUT);
	assert_true(x.limits_hit & SANDBOX_LIMIT_WALL);
	/* no sooner than the timeout; the upper bound only tells "killed"
	 * from "waited for the 600 s sleeps": how much later than 0.3 s
	 * depends on the machine's load, not on the code */
	assert_true(x.duration_ns >= 300000000ull && x.duration_ns < 60000000000ull);
}

static void sandbox_exec_failure_is_setup_failure(void **state)
{
	const char *const argv[] = { "/nonexistent/program", NULL };
	struct sandbox_exit x;

	(void)state;
	assert_int_equal(run_in_sandbox(argv, 10, &x, NULL, NULL), 0);
	assert_int_equal(x.end, SANDBOX_END_SETUP_FAILED);
	assert_int_equal(x.error, ENOENT);
	assert_string_equal(x.failed_step, "execute the program");
}

/* A relative working directory starts from the sandbox's root.  The
 * program's process is forked before pivot_root (child.c, worker_early),
 * in the caller's directory: a relative chdir from there went into the
 * host's tree. */
static void relative_cwd_is_inside(void **state)
{
	const char *const argv[] = { "/bin/sh", "-c", "pwd", NULL };
	struct sandbox_exit x;
	struct buf out;
	char here[4096];

	(void)state;
	/* /var/tmp exists on the host, so that a chdir from the host's
	 * directory would succeed and show (from the host's root it would
	 * not: pivot_root moves a working directory at the old root) */
	assert_non_null(getcwd(here, sizeof(here)));
	assert_int_equal(chdir("/var"), 0);
	buf_init(&out, 4096);
	g_cwd = "tmp";
	assert_int_equal(run_in_sandbox(argv, 10, &x, &out, NULL), 0);
	g_cwd = NULL;
	assert_int_equal(chdir(here), 0);
	assert_int_equal(x.end, SANDBOX_END_EXITED);
	assert_int_equal(x.exit_code, 0);
	assert_string_equal(buf_str(&out), "/tmp\n");
	buf_release(&out);
}

/* The files of /etc that the early worker writes (rootfs_apply_etc_files)
 * must not lie under anything the init mounts: the worker could write
 * into the mount, or into the directory it is about to hide, while the
 * init works (child.c, worker_prepare). */
static void etc_files_are_not_under_mounts(void **state)
{
	struct sandbox_limits l = { .tmp_bytes = 1 << 20,
				    .workspace_bytes = 1 << 20,
				    .memory_bytes = 64 << 20 };
	struct rootfs *fs = calloc(1, sizeof(*fs));
	size_t n_files = 0;

	(void)state;
	assert_non_null(fs);
	assert_int_equal(rootfs_build(fs, &l, NULL), 0);
	for (size_t i = 0; i < fs->n; i++) {
		const struct rootfs_op *f = &fs->ops[i];

		if ((f->type != OP_FILE && f->type != OP_COPY) || strncmp(f->dst, "etc/", 4))
			continue;
		n_files++;
		for (size_t j = 0; j < fs->n; j++) {
			const struct rootfs_op *m = &fs->ops[j];
			size_t len = strlen(m->dst);

			if (m->type != OP_BIND_RO && m->type != OP_TMPFS && m->type != OP_MOUNT &&
			    m->type != OP_PROC && m->type != OP_BIND_DEV && m->type != OP_MASK)
				continue;
			if (!strncmp(f->dst, m->dst, len) && (f->dst[len] == '/' || !f->dst[len]))
				fail_msg("/%s is under the mount at /%s", f->dst, m->dst);
		}
	}
	/* passwd, group, hosts, hostname, nsswitch.conf, resolv.conf at least */
	assert_true(n_files >= 6);
	rootfs_release(fs);
	free(fs);
}

static void sandbox_rejects_bad_config(void **state)
{
	const char *const rel[] = { "sh", NULL };
	struct sandbox_exit x;

	(void)state;
	assert_int_equal(run_in_sandbox(rel, 10, &x, NULL, NULL), -EINVAL);
}

/* The /etc/subuid format and the ranges root may map sandboxes to. */
static void ids_ranges(void **state)
{
	uint64_t b = 0, c = 0;

	(void)state;
	assert_int_equal(
		ids_subid_find("alice:100000:65536\ncodecell:1048576:65536\n", "codecell", &b, &c),
		0);
	assert_true(b == 1048576 && c == 65536);
	/* a name that only starts with ours is not ours; the first line wins */
	assert_int_equal(
		ids_subid_find("codecellx:1:2\ncodecell:7:8\ncodecell:9:9", "codecell", &b, &c), 0);
	assert_true(b == 7 && c == 8);
	assert_int_equal(ids_subid_find("alice:1:2\n", "codecell", &b, &c), -ENOENT);
	assert_int_equal(ids_subid_find("", "codecell", &b, &c), -ENOENT);
	assert_int_equal(ids_subid_find("codecell:-1:5\n", "codecell", &b, &c), -EINVAL);
	assert_int_equal(ids_subid_find("codecell:12\n", "codecell", &b, &c), -EINVAL);
	assert_int_equal(ids_subid_find("codecell:12:x\n", "codecell", &b, &c), -EINVAL);
	assert_int_equal(ids_parse_range("2000000:10", &b, &c), 0);
	assert_true(b == 2000000 && c == 10);
	assert_int_equal(ids_parse_range("2000000", &b, &c), -EINVAL);
	assert_int_equal(ids_parse_range(":5", &b, &c), -EINVAL);
	assert_int_equal(ids_check_range(1048576, 65536), 0);
	assert_int_equal(ids_check_range(0, 10), -ERANGE);	 /* root */
	assert_int_equal(ids_check_range(65000, 1000), -ERANGE); /* nobody */
	assert_int_equal(ids_check_range(100, 0), -ERANGE);
	assert_int_equal(ids_check_range(0xfffffff0ull, 16), -ERANGE); /* -1, -2 */
	assert_int_equal(ids_check_range(0x100000000ull, 1), -ERANGE);
	assert_int_equal(ids_check_range(0xfffffff0ull, 14), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(seccomp_lists_are_disjoint),
		cmocka_unit_test(cgroup_full_counts_only_what_cannot_be_reclaimed),
		cmocka_unit_test(cgroup_busy_at_destroy_is_removed_later),
		cmocka_unit_test(seccomp_embedded_matches_fresh_build),
		cmocka_unit_test(seccomp_compact_main_acts_as_libseccomps),
		cmocka_unit_test(seccomp_filter_behaviour),
		cmocka_unit_test(seccomp_wrong_arch_kills),
		cmocka_unit_test(cgroup_paths),
		cmocka_unit_test(cgroup_lifecycle_on_host),
		cmocka_unit_test(ids_ranges),
		cmocka_unit_test(sandbox_runs_and_reports_exit),
		cmocka_unit_test(sandbox_signal_and_timeout),
		cmocka_unit_test(sandbox_exec_failure_is_setup_failure),
		cmocka_unit_test(sandbox_rejects_bad_config),
		cmocka_unit_test(relative_cwd_is_inside),
		cmocka_unit_test(etc_files_are_not_under_mounts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
