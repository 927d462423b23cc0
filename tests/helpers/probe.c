/* probe: looks at the kernel surface and the process's own privileges from
 * inside the sandbox, for tests/security/test_kernel_surface.py and
 * test_privilege.py.  Built static (Makefile), copied into the workspace
 * with --file and run from bash as ./probe MODE [ARGS].
 *
 * Every check prints one JSON object on its own line; the Python tests
 * parse them and assert.  Nothing here may do harm if the sandbox were
 * broken:
 *   - the denied calls run in a child that first stacks its own seccomp
 *     filter answering SECCOMP_RET_TRACE for exactly those numbers.  The
 *     kernel takes the most restrictive verdict of all filters, and
 *     ERRNO beats TRACE: if codecell's filter says EPERM the call fails
 *     EPERM; if it (wrongly) allows the call, TRACE wins and, with no
 *     tracer attached, the call is not executed and fails ENOSYS.  So
 *     EPERM proves codecell's filter denied it, and the call never runs;
 *   - anything that could change the probe's own state (clone, unshare,
 *     wrong-architecture entry) runs in a forked child, and the parent
 *     reports what became of it.
 *
 * Modes:
 *   syscalls       denied calls, unknown numbers, clone/unshare/clone3,
 *                  TIOCSTI/TIOCLINUX on every open fd, x32 and int 0x80
 *   sockets        which address families socket() accepts
 *   fds            the open fds and where they point
 *   climb          fchdir()/openat("..") from every inherited fd
 *   status         capability, no_new_privs, seccomp, id lines of
 *                  /proc/self/status
 *   proc [PID...]  open /proc/PID/{exe,root,cwd,fd,environ,mem} (default 1)
 *   suid PATH...   vfork+exec PATH, stop it, read its credentials
 *   all            syscalls, sockets, fds, climb, status, proc 1
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "errname.h"

#ifndef __x86_64__
#error "probe: x86_64 only (syscall numbers and int 0x80 below)"
#endif

#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#define X32_BIT 0x40000000UL

/* ---- output ---- */

static void json_str(const char *s)
{
	putchar('"');
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static const char *errname(int e)
{
	const char *s = e ? errno_name(e) : "OK";

	return s ? s : "E?";
}

/* {"check": NAME, "ret": RET, "errno": E, "err": "ENAME"[, EXTRA]} */
static void emit_ret(const char *check, long ret, int err, const char *extra)
{
	printf("{\"check\": ");
	json_str(check);
	printf(", \"ret\": %ld, \"errno\": %d, \"err\": \"%s\"%s%s}\n", ret, ret < 0 ? err : 0,
	       ret < 0 ? errname(err) : "OK", extra ? ", " : "", extra ? extra : "");
	fflush(stdout);
}

/* ---- running a check in a child ---- */

struct fate {
	int exited, code, signaled, sig;
};

static const char *signame(int s)
{
	switch (s) {
	case SIGSYS: return "SIGSYS";
	case SIGKILL: return "SIGKILL";
	case SIGSEGV: return "SIGSEGV";
	case SIGILL: return "SIGILL";
	case SIGBUS: return "SIGBUS";
	case SIGABRT: return "SIGABRT";
	case SIGTRAP: return "SIGTRAP";
	case SIGSTOP: return "SIGSTOP";
	}
	return "SIG?";
}

static void emit_fate(const char *check, struct fate f, const char *extra)
{
	printf("{\"check\": ");
	json_str(check);
	if (f.signaled)
		printf(", \"fate\": \"signal\", \"signal\": %d, \"signame\": \"%s\"", f.sig,
		       signame(f.sig));
	else if (f.exited)
		printf(", \"fate\": \"exit\", \"code\": %d", f.code);
	else
		printf(", \"fate\": \"unknown\"");
	printf("%s%s}\n", extra ? ", " : "", extra ? extra : "");
	fflush(stdout);
}

static struct fate wait_fate(pid_t pid)
{
	struct fate f = { 0 };
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return f;
	if (WIFEXITED(st)) {
		f.exited = 1;
		f.code = WEXITSTATUS(st);
	} else if (WIFSIGNALED(st)) {
		f.signaled = 1;
		f.sig = WTERMSIG(st);
	}
	return f;
}

/* ---- denied system calls ---- */

struct sc {
	const char *name;
	long nr;
};

/* sandbox_seccomp_denied, x86_64 numbers (arch/x86/entry/syscalls/
 * syscall_64.tbl); the test checks this list against seccomp.c. */
static const struct sc denied[] = {
	{ "unshare", 272 },	      { "setns", 308 },
	{ "mount", 165 },	      { "umount2", 166 },
	{ "pivot_root", 155 },	      { "chroot", 161 },
	{ "move_mount", 429 },	      { "open_tree", 428 },
	{ "fsopen", 430 },	      { "fsconfig", 431 },
	{ "fsmount", 432 },	      { "fspick", 433 },
	{ "mount_setattr", 442 },     { "bpf", 321 },
	{ "io_uring_setup", 425 },    { "io_uring_enter", 426 },
	{ "io_uring_register", 427 }, { "userfaultfd", 323 },
	{ "perf_event_open", 298 },   { "keyctl", 250 },
	{ "add_key", 248 },	      { "request_key", 249 },
	{ "ptrace", 101 },	      { "process_vm_readv", 310 },
	{ "process_vm_writev", 311 }, { "process_madvise", 440 },
	{ "pidfd_getfd", 438 },	      { "kcmp", 312 },
	{ "init_module", 175 },	      { "finit_module", 313 },
	{ "delete_module", 176 },     { "kexec_load", 246 },
	{ "kexec_file_load", 320 },   { "open_by_handle_at", 304 },
	{ "name_to_handle_at", 303 }, { "reboot", 169 },
	{ "swapon", 167 },	      { "swapoff", 168 },
	{ "acct", 163 },	      { "quotactl", 179 },
	{ "quotactl_fd", 443 },	      { "syslog", 103 },
	{ "settimeofday", 164 },      { "clock_settime", 227 },
	{ "clock_adjtime", 305 },     { "adjtimex", 159 },
	{ "iopl", 172 },	      { "ioperm", 173 },
	{ "uselib", 134 },
	{ "ustat", 136 },	      { "sysfs", 139 },
	{ "vhangup", 153 },	      { "lookup_dcookie", 212 },
	{ "fanotify_init", 300 },     { "capset", 126 },
	{ "sethostname", 170 },	      { "setdomainname", 171 },
	{ "nfsservctl", 180 },	      { "migrate_pages", 256 },
	{ "move_pages", 279 },
};
#define N_DENIED (sizeof(denied) / sizeof(denied[0]))

/* A filter that answers SECCOMP_RET_TRACE for the given numbers and
 * allows everything else: see the comment at the top. */
static int install_trace_guard(const struct sc *calls, size_t n)
{
	struct sock_filter f[4 + 2 * N_DENIED + 2];
	struct sock_fprog prog;
	size_t k = 0;

	if (n > N_DENIED)
		return -E2BIG;
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, arch));
	f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, nr));
	for (size_t i = 0; i < n; i++) {
		f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						      (uint32_t)calls[i].nr, 0, 1);
		f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE);
	}
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	prog.len = (unsigned short)k;
	prog.filter = f;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		return -errno;
	return 0;
}

/* Arguments for a call: all zero, except where zero could mean "do
 * something" had the call been allowed and the guard failed. */
static void args_for(const char *name, long a[6])
{
	memset(a, 0, 6 * sizeof(long));
	if (!strcmp(name, "ptrace"))
		a[0] = 2; /* PTRACE_PEEKTEXT of pid 0: no such process */
	else if (!strcmp(name, "reboot"))
		a[0] = 0; /* bad magic: EINVAL */
	else if (!strcmp(name, "kcmp") || !strcmp(name, "process_vm_readv") ||
		 !strcmp(name, "process_vm_writev"))
		a[0] = -1; /* no such pid */
	else if (!strcmp(name, "setns") || !strcmp(name, "pidfd_getfd") ||
		 !strcmp(name, "process_madvise") || !strcmp(name, "quotactl_fd") ||
		 !strcmp(name, "finit_module") || !strcmp(name, "kexec_file_load") ||
		 !strcmp(name, "fsconfig") || !strcmp(name, "fsmount") ||
		 !strcmp(name, "io_uring_enter") || !strcmp(name, "io_uring_register"))
		a[0] = -1; /* bad fd */
	else if (!strcmp(name, "acct") || !strcmp(name, "swapoff") || !strcmp(name, "swapon"))
		a[0] = 0; /* NULL path: EFAULT */
}

static void check_denied(void)
{
	pid_t pid;
	int r;

	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		emit_ret("guard", -1, errno, NULL);
		return;
	}
	if (pid == 0) {
		r = install_trace_guard(denied, N_DENIED);
		emit_ret("guard", r < 0 ? -1 : 0, -r, NULL);
		if (r < 0)
			_exit(1);
		for (size_t i = 0; i < N_DENIED; i++) {
			char check[64], extra[32];
			long a[6], ret;

			args_for(denied[i].name, a);
			errno = 0;
			ret = syscall(denied[i].nr, a[0], a[1], a[2], a[3], a[4], a[5]);
			snprintf(check, sizeof(check), "denied:%s", denied[i].name);
			snprintf(extra, sizeof(extra), "\"nr\": %ld", denied[i].nr);
			emit_ret(check, ret, errno, extra);
		}
		_exit(0);
	}
	{
		struct fate f = wait_fate(pid);

		emit_fate("denied-child", f, NULL);
	}
}

/* Calls that exist but are on neither list, with arguments the kernel
 * would answer with something other than ENOSYS (EFAULT, EBADF, EINVAL):
 * ENOSYS means the filter's default action answered.  And numbers that
 * no kernel assigns. */
static void check_unlisted(void)
{
	static const struct {
		const char *name;
		long nr, a0;
	} calls[] = {
		{ "process_mrelease", 448, -1 }, /* kernel: EBADF */
		{ "cachestat", 451, -1 },	 /* kernel: EBADF */
		{ "statmount", 457, 0 },	 /* kernel: EFAULT */
		{ "listmount", 458, 0 },	 /* kernel: EFAULT */
		{ "lsm_list_modules", 461, 0 },	 /* kernel: EFAULT */
		{ "futex_wake", 454, 0 },	 /* kernel: EINVAL */
		{ "set_mempolicy_home_node", 450, 0 },
		{ "memfd_secret", 447, -1 },	/* kernel: EINVAL */
		{ "open_tree_attr", 467, -1 },	/* kernel: EBADF */
	};
	static const long unassigned[] = { 1000, 4095, 0x3ffffffe };

	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		char check[64];
		long ret;

		errno = 0;
		ret = syscall(calls[i].nr, calls[i].a0, 0, 0, 0, 0, 0);
		snprintf(check, sizeof(check), "unlisted:%s", calls[i].name);
		emit_ret(check, ret, errno, NULL);
	}
	for (size_t i = 0; i < sizeof(unassigned) / sizeof(unassigned[0]); i++) {
		char check[64];
		long ret;

		errno = 0;
		ret = syscall(unassigned[i], 0, 0, 0, 0, 0, 0);
		snprintf(check, sizeof(check), "unknown:%ld", unassigned[i]);
		emit_ret(check, ret, errno, NULL);
	}
}

/* clone() with namespace flags: raw, fork-like (no new stack).  A child
 * that should not exist exits at once. */
static void check_clone(const char *check, unsigned long flags)
{
	long ret;
	int err;

	fflush(stdout);
	ret = syscall(SYS_clone, flags, 0, 0, 0, 0);
	err = errno;
	if (ret == 0)
		_exit(0);
	if (ret > 0) {
		int st;

		waitpid((pid_t)ret, &st, __WALL);
		emit_ret(check, 1, 0, "\"created\": true");
		return;
	}
	emit_ret(check, -1, err, NULL);
}

static void check_clone3(void)
{
	/* struct clone_args (linux/sched.h), v0 size 64 */
	uint64_t args[8] = { 0 };
	long ret;
	int err;

	args[0] = CLONE_NEWUSER; /* flags */
	args[4] = SIGCHLD;	 /* exit_signal */
	fflush(stdout);
	ret = syscall(435 /* clone3 */, args, sizeof(args));
	err = errno;
	if (ret == 0)
		_exit(0);
	if (ret > 0) {
		waitpid((pid_t)ret, NULL, __WALL);
		emit_ret("clone3:NEWUSER", 1, 0, "\"created\": true");
	} else {
		emit_ret("clone3:NEWUSER", -1, err, NULL);
	}
	/* plain clone3 too: it is unfilterable, so it must be refused */
	memset(args, 0, sizeof(args));
	args[4] = SIGCHLD;
	fflush(stdout);
	ret = syscall(435, args, sizeof(args));
	err = errno;
	if (ret == 0)
		_exit(0);
	if (ret > 0) {
		waitpid((pid_t)ret, NULL, __WALL);
		emit_ret("clone3:plain", 1, 0, "\"created\": true");
	} else {
		emit_ret("clone3:plain", -1, err, NULL);
	}
}

/* unshare in a child: if it were allowed it would change the caller. */
static void check_unshare(const char *check, int flags)
{
	int p[2];
	pid_t pid;
	int res[2] = { 0, 0 };

	if (pipe(p) < 0)
		return;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int out[2];

		out[0] = (int)syscall(SYS_unshare, flags);
		out[1] = errno;
		(void)!write(p[1], out, sizeof(out));
		_exit(0);
	}
	close(p[1]);
	if (pid < 0 || read(p[0], res, sizeof(res)) != sizeof(res)) {
		res[0] = -1;
		res[1] = pid < 0 ? errno : EIO;
	}
	close(p[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	emit_ret(check, res[0], res[1], NULL);
}

/* The fds open now, ascending; returns the count. */
static int open_fds(int *fds, int max)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0, self;

	if (!d)
		return 0;
	self = dirfd(d);
	while ((de = readdir(d)) && n < max) {
		char *end;
		long fd = strtol(de->d_name, &end, 10);

		if (*end || end == de->d_name || fd == self)
			continue;
		fds[n++] = (int)fd;
	}
	closedir(d);
	for (int i = 1; i < n; i++) /* insertion sort */
		for (int j = i; j > 0 && fds[j - 1] > fds[j]; j--) {
			int t = fds[j];

			fds[j] = fds[j - 1];
			fds[j - 1] = t;
		}
	return n;
}

static void check_tty_ioctls(void)
{
	static const struct {
		const char *name;
		unsigned long req;
	} reqs[] = {
		{ "TIOCSTI", TIOCSTI },
		{ "TIOCSTI_hi", (0x123UL << 32) | TIOCSTI },
		{ "TIOCSTI_hiall", 0xffffffff00000000UL | TIOCSTI },
		{ "TIOCLINUX", TIOCLINUX },
		{ "TIOCLINUX_hi", (0x123UL << 32) | TIOCLINUX },
	};
	int fds[256], n = open_fds(fds, 256);

	/* 0, 1, 2 even if closed, every other open fd, and one never open */
	for (int want = 0; want < 3; want++) {
		int have = 0;

		for (int i = 0; i < n; i++)
			have |= fds[i] == want;
		if (!have && n < 256)
			fds[n++] = want;
	}
	if (n < 256)
		fds[n++] = 1000;
	for (int i = 0; i < n; i++)
		for (size_t r = 0; r < sizeof(reqs) / sizeof(reqs[0]); r++) {
			char check[64], extra[64];
			char c = '#'; /* TIOCSTI: one byte; TIOCLINUX: subcode */
			long ret;

			if (!strncmp(reqs[r].name, "TIOCLINUX", 9))
				c = 0x7f; /* no such subcode */
			errno = 0;
			ret = syscall(SYS_ioctl, fds[i], reqs[r].req, &c);
			snprintf(check, sizeof(check), "ioctl:%s:%d", reqs[r].name, fds[i]);
			snprintf(extra, sizeof(extra), "\"fd\": %d, \"req\": \"0x%lx\"", fds[i],
				 reqs[r].req);
			emit_ret(check, ret, errno, extra);
		}
}

/* Wrong-architecture entries, each in a child that must die of SIGSYS.
 * A child whose call returned exits 100 + (errno & 0x3f). */
static void check_wrong_arch(void)
{
	static const struct {
		const char *name;
		int kind;
		long nr;
	} cases[] = {
		{ "x32:getpid", 0, 39 },
		{ "x32:unshare", 0, 272 },
		{ "x32:x32_only_execve", 0, 520 },
		{ "int80:getpid", 1, 20 },
		{ "int80:unshare", 1, 310 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		pid_t pid;

		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			long ret;

			if (cases[i].kind == 0) {
				ret = syscall(cases[i].nr | X32_BIT, 0, 0, 0, 0, 0, 0);
				_exit(100 + ((ret < 0 ? errno : 0) & 0x3f));
			}
			ret = cases[i].nr;
			__asm__ volatile("int $0x80" : "+a"(ret) : "b"(0), "c"(0), "d"(0)
					 : "memory", "r8", "r9", "r10", "r11");
			_exit(100 + (ret < 0 ? (int)(-ret & 0x3f) : 0));
		}
		if (pid < 0) {
			emit_ret(cases[i].name, -1, errno, NULL);
			continue;
		}
		emit_fate(cases[i].name, wait_fate(pid), NULL);
	}
}

static void mode_syscalls(void)
{
	check_denied();
	check_unlisted();
	/* control: a plain fork-like clone must work */
	check_clone("clone:plain", SIGCHLD);
	check_clone("clone:NEWUSER", CLONE_NEWUSER | SIGCHLD);
	check_clone("clone:NEWNS", CLONE_NEWNS | SIGCHLD);
	check_clone("clone:NEWPID", CLONE_NEWPID | SIGCHLD);
	check_clone("clone:NEWNET", CLONE_NEWNET | SIGCHLD);
	check_clone("clone:NEWIPC", CLONE_NEWIPC | SIGCHLD);
	check_clone("clone:NEWUTS", CLONE_NEWUTS | SIGCHLD);
	check_clone("clone:NEWCGROUP", CLONE_NEWCGROUP | SIGCHLD);
	check_clone("clone:NEWUSER_hi", (1UL << 32) | CLONE_NEWUSER | SIGCHLD);
	check_clone("clone:NEWUSER_NEWNS_NEWPID",
		    CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | SIGCHLD);
	check_clone3();
	check_unshare("unshare:NEWUSER", CLONE_NEWUSER);
	check_unshare("unshare:NEWNET", CLONE_NEWNET);
	check_unshare("unshare:NEWNS", CLONE_NEWNS);
	check_unshare("unshare:NEWTIME", CLONE_NEWTIME);
	check_unshare("unshare:zero", 0);
	check_tty_ioctls();
	check_wrong_arch();
}

/* ---- sockets ---- */

static void mode_sockets(void)
{
	static const struct {
		const char *name;
		int family, type, proto;
	} s[] = {
		{ "AF_UNIX", AF_UNIX, SOCK_STREAM, 0 },
		{ "AF_INET", AF_INET, SOCK_STREAM, 0 },
		{ "AF_INET_RAW", AF_INET, SOCK_RAW, 1 /* ICMP */ },
		{ "AF_INET_PING", AF_INET, SOCK_DGRAM, 1 /* ICMP */ },
		{ "AF_PACKET", AF_PACKET, SOCK_RAW, 0 },
		{ "AF_NETLINK_ROUTE", AF_NETLINK, SOCK_RAW, 0 },
		{ "AF_NETLINK_AUDIT", AF_NETLINK, SOCK_RAW, 9 },
		{ "AF_NETLINK_UEVENT", AF_NETLINK, SOCK_RAW, 15 },
		{ "AF_VSOCK", 40, SOCK_STREAM, 0 },
		{ "AF_VSOCK_DGRAM", 40, SOCK_DGRAM, 0 },
		{ "AF_ALG", 38, SOCK_SEQPACKET, 0 },
		{ "AF_KEY", 15, SOCK_RAW, 2 },
		{ "AF_XDP", 44, SOCK_RAW, 0 },
		{ "AF_TIPC", 30, SOCK_RDM, 0 },
		{ "AF_RDS", 21, SOCK_SEQPACKET, 0 },
		{ "AF_BLUETOOTH", 31, SOCK_RAW, 0 },
	};

	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
		char check[64];
		int fd;

		errno = 0;
		/* socket() only: nothing is bound, connected or sent */
		fd = socket(s[i].family, s[i].type | SOCK_CLOEXEC, s[i].proto);
		snprintf(check, sizeof(check), "socket:%s", s[i].name);
		emit_ret(check, fd < 0 ? -1 : 0, errno, NULL);
		if (fd >= 0)
			close(fd);
	}
}

/* ---- fds ---- */

static void mode_fds(void)
{
	int fds[256], n = open_fds(fds, 256);

	for (int i = 0; i < n; i++) {
		char link[64], target[PATH_MAX];
		ssize_t k;
		int fl = fcntl(fds[i], F_GETFD);
		int st = fcntl(fds[i], F_GETFL);

		snprintf(link, sizeof(link), "/proc/self/fd/%d", fds[i]);
		k = readlink(link, target, sizeof(target) - 1);
		target[k < 0 ? 0 : k] = '\0';
		printf("{\"check\": \"fd\", \"fd\": %d, \"target\": ", fds[i]);
		json_str(target);
		printf(", \"cloexec\": %s, \"accmode\": %d}\n", fl >= 0 && (fl & FD_CLOEXEC) ? "true" : "false",
		       st >= 0 ? (st & O_ACCMODE) : -1);
	}
	printf("{\"check\": \"fd_count\", \"count\": %d}\n", n);
	fflush(stdout);
}

/* ---- climb ---- */

static void emit_dir(const char *check, int fd, int dfd, int err, const char *how)
{
	struct stat st, root;
	char link[64], target[PATH_MAX];
	ssize_t k = -1;

	target[0] = '\0';
	if (dfd >= 0) {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", dfd);
		k = readlink(link, target, sizeof(target) - 1);
		target[k < 0 ? 0 : k] = '\0';
	}
	printf("{\"check\": \"%s\", \"fd\": %d, \"how\": \"%s\", \"ok\": %s, \"err\": \"%s\"", check,
	       fd, how, dfd >= 0 ? "true" : "false", dfd >= 0 ? "OK" : errname(err));
	if (dfd >= 0 && fstat(dfd, &st) == 0 && stat("/", &root) == 0) {
		printf(", \"target\": ");
		json_str(target);
		printf(", \"dev\": %lu, \"ino\": %lu, \"root_dev\": %lu, \"root_ino\": %lu",
		       (unsigned long)st.st_dev, (unsigned long)st.st_ino,
		       (unsigned long)root.st_dev, (unsigned long)root.st_ino);
	}
	printf("}\n");
	fflush(stdout);
}

static void mode_climb(void)
{
	int fds[256], n = open_fds(fds, 256);
	char cwd[PATH_MAX];
	int home = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);

	for (int i = 0; i < n; i++) {
		int fd = fds[i], up, e;

		if (fd == home)
			continue;
		/* openat(fd, "..") as it is, and as O_PATH */
		up = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		e = errno;
		emit_dir("climb:openat", fd, up, e, "openat_dotdot");
		if (up >= 0) {
			/* keep climbing: 64 levels is past any real root */
			for (int k = 0; k < 64; k++) {
				int next = openat(up, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

				if (next < 0)
					break;
				close(up);
				up = next;
			}
			emit_dir("climb:openat_top", fd, up, 0, "openat_dotdot_x64");
			close(up);
		}
		up = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		e = errno;
		emit_dir("climb:openat_path", fd, up, e, "openat_opath_dotdot");
		if (up >= 0)
			close(up);
		/* fchdir, then chdir("..") 64 times */
		if (fchdir(fd) == 0) {
			int top;

			for (int k = 0; k < 64; k++)
				if (chdir("..") < 0)
					break;
			top = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			e = errno;
			if (!getcwd(cwd, sizeof(cwd)))
				snprintf(cwd, sizeof(cwd), "(getcwd: %s)", errname(errno));
			emit_dir("climb:fchdir_top", fd, top, e, "fchdir_chdir_dotdot_x64");
			printf("{\"check\": \"climb:fchdir_cwd\", \"fd\": %d, \"cwd\": ", fd);
			json_str(cwd);
			printf("}\n");
			if (top >= 0)
				close(top);
			if (home >= 0)
				(void)!fchdir(home);
		} else {
			emit_dir("climb:fchdir", fd, -1, errno, "fchdir");
		}
	}
	if (home >= 0)
		close(home);
	fflush(stdout);
}

/* ---- status ---- */

static void mode_status(void)
{
	static const char *const keys[] = { "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb",
					    "NoNewPrivs", "Seccomp", "Seccomp_filters", "Uid",
					    "Gid", "Groups", NULL };
	FILE *f = fopen("/proc/self/status", "r");
	char line[512];
	int first = 1;

	printf("{\"check\": \"status\"");
	while (f && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':'), *v;

		if (!colon)
			continue;
		*colon = '\0';
		for (int i = 0; keys[i]; i++) {
			if (strcmp(line, keys[i]))
				continue;
			v = colon + 1;
			while (*v == ' ' || *v == '\t')
				v++;
			v[strcspn(v, "\n")] = '\0';
			for (char *t = v; *t; t++)
				if (*t == '\t')
					*t = ' ';
			printf(", ");
			json_str(keys[i]);
			printf(": ");
			json_str(v);
		}
		first = 0;
	}
	if (f)
		fclose(f);
	printf(", \"read\": %s, \"dumpable\": %d, \"euid\": %d, \"egid\": %d}\n",
	       first ? "false" : "true", prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), (int)geteuid(),
	       (int)getegid());
	fflush(stdout);
}

/* ---- /proc/PID ---- */

static void try_open(const char *check, const char *path, int flags, const char *how)
{
	int fd, e;
	char extra[PATH_MAX + 64];

	errno = 0;
	fd = open(path, flags | O_CLOEXEC | O_NOCTTY);
	e = errno;
	snprintf(extra, sizeof(extra), "\"path\": \"%s\", \"how\": \"%s\"", path, how);
	emit_ret(check, fd < 0 ? -1 : 0, e, extra);
	if (fd >= 0)
		close(fd);
}

static void mode_proc(const char *pid)
{
	char p[128], check[128], target[PATH_MAX];
	static const char *const leaves[] = { "exe", "root", "cwd", "fd", "environ", "mem",
					      "fd/0", "fd/1", "fd/3", "map_files", NULL };

	for (int i = 0; leaves[i]; i++) {
		snprintf(p, sizeof(p), "/proc/%s/%s", pid, leaves[i]);
		snprintf(check, sizeof(check), "proc:%s:%s:rdonly", pid, leaves[i]);
		try_open(check, p, O_RDONLY, "O_RDONLY");
		snprintf(check, sizeof(check), "proc:%s:%s:wronly", pid, leaves[i]);
		try_open(check, p, O_WRONLY, "O_WRONLY");
		snprintf(check, sizeof(check), "proc:%s:%s:rdwr", pid, leaves[i]);
		try_open(check, p, O_RDWR, "O_RDWR");
		snprintf(check, sizeof(check), "proc:%s:%s:path", pid, leaves[i]);
		try_open(check, p, O_PATH, "O_PATH");
	}
	/* readlink and a directory listing */
	for (int i = 0; i < 3; i++) {
		ssize_t k;
		int e;

		snprintf(p, sizeof(p), "/proc/%s/%s", pid, leaves[i]);
		errno = 0;
		k = readlink(p, target, sizeof(target) - 1);
		e = errno;
		target[k < 0 ? 0 : k] = '\0';
		printf("{\"check\": \"proc:%s:%s:readlink\", \"ret\": %ld, \"err\": \"%s\", \"target\": ",
		       pid, leaves[i], (long)k, k < 0 ? errname(e) : "OK");
		json_str(target);
		printf("}\n");
	}
	{
		DIR *d;
		int n = 0;

		snprintf(p, sizeof(p), "/proc/%s/fd", pid);
		errno = 0;
		d = opendir(p);
		if (d) {
			struct dirent *de;

			while ((de = readdir(d)))
				if (de->d_name[0] != '.')
					n++;
			closedir(d);
		}
		printf("{\"check\": \"proc:%s:fd:list\", \"ok\": %s, \"err\": \"%s\", \"entries\": %d}\n",
		       pid, d ? "true" : "false", d ? "OK" : errname(errno), n);
	}
	fflush(stdout);
}

/* ---- setuid binaries ---- */

static int read_field(pid_t pid, const char *key, char *out, size_t outlen)
{
	char p[64], line[512];
	FILE *f;
	size_t kl = strlen(key);

	out[0] = '\0';
	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	f = fopen(p, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			char *v = line + kl + 1;

			while (*v == ' ' || *v == '\t')
				v++;
			v[strcspn(v, "\n")] = '\0';
			for (char *t = v; *t; t++)
				if (*t == '\t')
					*t = ' ';
			snprintf(out, outlen, "%s", v);
			break;
		}
	fclose(f);
	return 0;
}

/* AT_SECURE from /proc/PID/auxv: 1 if the kernel applied set-id bits. */
static long at_secure(pid_t pid)
{
	char p[64];
	unsigned long v[2];
	long r = -1;
	int fd;

	snprintf(p, sizeof(p), "/proc/%d/auxv", (int)pid);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -2;
	while (read(fd, v, sizeof(v)) == sizeof(v) && v[0] != 0)
		if (v[0] == 23 /* AT_SECURE */)
			r = (long)v[1];
	close(fd);
	return r;
}

static void mode_suid(int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		const char *path = argv[i];
		struct stat st;
		char uid[128], gid[128], capeff[64], capprm[64], state[64];
		char *const args[] = { (char *)path, "--help", NULL };
		int in[2];
		pid_t pid;
		long secure;

		if (stat(path, &st) < 0) {
			printf("{\"check\": \"suid\", \"path\": ");
			json_str(path);
			printf(", \"exists\": false}\n");
			continue;
		}
		if (pipe(in) < 0)
			continue;
		fflush(stdout);
		/* vfork: the parent resumes only once the child has
		 * exec'd; SIGSTOP then freezes the new image before it
		 * can drop any privilege it was given */
		pid = vfork();
		if (pid == 0) {
			dup2(in[0], 0);
			execv(path, args);
			_exit(127);
		}
		if (pid < 0) {
			close(in[0]);
			close(in[1]);
			continue;
		}
		kill(pid, SIGSTOP);
		close(in[0]);
		{
			/* wait until it is stopped (or gone) */
			int st2;

			if (waitpid(pid, &st2, WUNTRACED) == pid && !WIFSTOPPED(st2)) {
				printf("{\"check\": \"suid\", \"path\": ");
				json_str(path);
				printf(", \"exists\": true, \"ran\": false, \"mode\": \"%o\", "
				       "\"owner\": %u, \"setuid_bit\": %s, \"status\": %d}\n",
				       (unsigned)st.st_mode & 07777, (unsigned)st.st_uid,
				       (st.st_mode & S_ISUID) ? "true" : "false", st2);
				close(in[1]);
				continue;
			}
		}
		read_field(pid, "Uid", uid, sizeof(uid));
		read_field(pid, "Gid", gid, sizeof(gid));
		read_field(pid, "CapEff", capeff, sizeof(capeff));
		read_field(pid, "CapPrm", capprm, sizeof(capprm));
		read_field(pid, "State", state, sizeof(state));
		secure = at_secure(pid);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(in[1]);
		printf("{\"check\": \"suid\", \"path\": ");
		json_str(path);
		printf(", \"exists\": true, \"ran\": true, \"mode\": \"%o\", \"owner\": %u, "
		       "\"setuid_bit\": %s, \"Uid\": ",
		       (unsigned)st.st_mode & 07777, (unsigned)st.st_uid,
		       (st.st_mode & S_ISUID) ? "true" : "false");
		json_str(uid);
		printf(", \"Gid\": ");
		json_str(gid);
		printf(", \"CapEff\": ");
		json_str(capeff);
		printf(", \"CapPrm\": ");
		json_str(capprm);
		printf(", \"State\": ");
		json_str(state);
		printf(", \"at_secure\": %ld}\n", secure);
		fflush(stdout);
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "all";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "syscalls")) {
		mode_syscalls();
	} else if (!strcmp(mode, "sockets")) {
		mode_sockets();
	} else if (!strcmp(mode, "fds")) {
		mode_fds();
	} else if (!strcmp(mode, "climb")) {
		mode_climb();
	} else if (!strcmp(mode, "status")) {
		mode_status();
	} else if (!strcmp(mode, "proc")) {
		if (argc > 2)
			for (int i = 2; i < argc; i++)
				mode_proc(argv[i]);
		else
			mode_proc("1");
	} else if (!strcmp(mode, "suid")) {
		mode_suid(argc - 2, argv + 2);
	} else if (!strcmp(mode, "all")) {
		mode_syscalls();
		mode_sockets();
		mode_fds();
		mode_climb();
		mode_status();
		mode_proc("1");
	} else {
		fprintf(stderr, "usage: probe syscalls|sockets|fds|climb|status|proc [PID...]|"
				"suid PATH...|all\n");
		return 2;
	}
	printf("{\"check\": \"done\", \"mode\": ");
	json_str(mode);
	printf("}\n");
	return 0;
}
