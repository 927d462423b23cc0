/* surface: maps the kernel surface a sandboxed program can reach, for
 * tests/surface/surface.py (`make surface`).  Built static (Makefile),
 * copied into a sandbox and run there; it prints one line per probe,
 * space-separated, in a fixed order, and nothing that varies between runs
 * on the same kernel.
 *
 * How a call is judged without running it.  Each probe forks a child that
 * shares the parent's fd table (CLONE_FILES) and stacks one more seccomp
 * filter of its own, with a listener fd: SECCOMP_RET_USER_NOTIF for
 * exactly the probed (architecture, number) made from exactly one
 * instruction (the probe's own syscall/int 0x80 site; every other call,
 * from anywhere else, is allowed).  The kernel runs every filter and takes
 * the most restrictive verdict: KILL > ERRNO > USER_NOTIF > ALLOW.  So
 *   - codecell's filter refuses (ERRNO, KILL): that verdict wins, the
 *     call never reaches the kernel, and the child sees the filter's errno
 *     or dies of SIGSYS: reported as the errno ("ENOSYS", "EPERM", ...) or
 *     "SIGSYS";
 *   - codecell's filter allows: our USER_NOTIF wins, the call is held and
 *     the parent is notified: the call is reachable.  It is still not run.
 *     Only if this file vets harmless arguments for that call does the
 *     parent answer SECCOMP_USER_NOTIF_FLAG_CONTINUE, letting the kernel
 *     run it, and the report says what the kernel answered ("allow=EBADF",
 *     "allow=ok", "allow=ENOSYS" for a number this kernel does not
 *     implement).  Any other allowed call is answered with an error by the
 *     parent and reported as "allow" (reachable, not run).
 * This tells the filter's ENOSYS (codecell's default action) from the
 * kernel's, and no call outside the vetted table ever runs, whatever a
 * broken filter lets through: reboot, kexec, mount and friends are
 * judged, never made.
 *
 * The vetted arguments (table `vetted` below) are invalid on purpose:
 * fd -1 (EBADF), pointer -1 (EFAULT), flags -1 (EINVAL), pid 0x7ffffff0
 * (no such process) with signal -1 (EINVAL).  Calls with no harmless
 * arguments are never run: exit, exit_group, pause, rt_sigreturn, fork,
 * vfork, clone, clone3 (would create processes), sync (flushes the host's
 * disks).  Calls that act on the calling process only (umask, setsid,
 * alarm, prctl options with zero arguments, ...) run: the child is thrown
 * away.  Socket creation runs (it binds nothing); ioctl scans run on the
 * prober's own fds with an invalid pointer argument, only when the
 * process holds no capability (below).
 *
 * `surface control` is the one exception: run outside the sandbox, it
 * probes the x32 and i386 entries with every call held and failed unrun,
 * so that the report can say where the host itself refuses an entry
 * (tests/surface/surface.py: "not applicable on this host").
 *
 * Otherwise it refuses to run unless it is under a seccomp filter with
 * no_new_privs and no effective capability: outside a sandbox it would be
 * pointless, and it must never run privileged (an ioctl scan as root on
 * host fds could freeze a filesystem).  Children are made non-dumpable with
 * RLIMIT_CORE 0: the SIGSYS deaths leave no core files.
 *
 * Sections (each line starts with its section name):
 *   sys NR V          x86_64 numbers 0..599 and a few far numbers
 *   x32 NR V          NR | 0x40000000 (the x32 ABI), NR 0..599
 *   i386 NR V         int 0x80 (the i386 ABI), NR 0..599
 *   clone LABEL V     clone() with each namespace flag, high bits
 *   clone3 LABEL V
 *   socket FAM TYPE V every family 0..63 (and high bits) x common types
 *   netlink PROTO V   socket(AF_NETLINK, SOCK_RAW, PROTO), PROTO 0..31
 *   ioctl LABEL V     the filter's ioctl rules, with high bits
 *   prctl OP V        every prctl option, zero arguments
 *   fd KIND STATE     the fds the ioctl scan used
 *   ioctlfam KIND TYPE N ERRNOS  per fd, per ioctl type byte: N commands
 *                     a handler answered (not ENOTTY, not EACCES)
 *   ioctleacces KIND N  commands refused with EACCES (Landlock's rule for
 *                     ioctls on device files)
 *   ioctleinval KIND N  type bytes whose every command got EINVAL (a
 *                     catch-all handler)
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "errname.h"

#ifndef __x86_64__
#error "surface: x86_64 only (syscall numbers and int 0x80 below)"
#endif

#define X32_BIT 0x40000000L
#define NR_MAX 600
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef AUDIT_ARCH_I386
#define AUDIT_ARCH_I386 0x40000003
#endif

/* ---- the two call sites the guard recognises ---- */

long surface_sc(long nr, long a0, long a1, long a2, long a3, long a4, long a5);
long surface_i386(long nr, long a0, long a1, long a2, long a3, long a4);
extern char surface_sc_ret[], surface_i386_ret[];

/* x86_64 syscall: nr in rax, arguments in rdi rsi rdx r10 r8 r9; returns
 * -errno raw.  i386 int 0x80: nr in eax, ebx ecx edx esi edi ebp. */
__asm__(".text\n"
	".globl surface_sc\n"
	".type surface_sc,@function\n"
	"surface_sc:\n"
	"\tmov %rdi, %rax\n"
	"\tmov %rsi, %rdi\n"
	"\tmov %rdx, %rsi\n"
	"\tmov %rcx, %rdx\n"
	"\tmov %r8, %r10\n"
	"\tmov %r9, %r8\n"
	"\tmov 8(%rsp), %r9\n"
	"\tsyscall\n"
	".globl surface_sc_ret\n"
	"surface_sc_ret:\n"
	"\tret\n"
	".size surface_sc, .-surface_sc\n"
	".globl surface_i386\n"
	".type surface_i386,@function\n"
	"surface_i386:\n"
	"\tpush %rbx\n"
	"\tpush %rbp\n"
	"\tmov %rdi, %rax\n"
	"\tmov %rsi, %rbx\n"
	"\tmov %rcx, %r10\n"
	"\tmov %rdx, %rcx\n"
	"\tmov %r10, %rdx\n"
	"\tmov %r8, %rsi\n"
	"\tmov %r9, %rdi\n"
	"\txor %ebp, %ebp\n"
	"\tint $0x80\n"
	".globl surface_i386_ret\n"
	"surface_i386_ret:\n"
	"\tcltq\n"
	"\tpop %rbp\n"
	"\tpop %rbx\n"
	"\tret\n"
	".size surface_i386, .-surface_i386\n");

/* ---- errno and signal names (the report is text, not numbers) ---- */

static const char *errname(int e)
{
	static char other[16];
	const char *s = e ? errno_name(e) : "ok";

	if (s)
		return s;
	snprintf(other, sizeof(other), "E%d", e);
	return other;
}

static const char *signame(int s)
{
	static char other[16];

	switch (s) {
	case SIGSYS: return "SIGSYS";
	case SIGKILL: return "SIGKILL";
	case SIGSEGV: return "SIGSEGV";
	case SIGILL: return "SIGILL";
	case SIGBUS: return "SIGBUS";
	case SIGABRT: return "SIGABRT";
	case SIGTRAP: return "SIGTRAP";
	case SIGALRM: return "SIGALRM";
	case SIGXCPU: return "SIGXCPU";
	case SIGXFSZ: return "SIGXFSZ";
	}
	snprintf(other, sizeof(other), "SIG%d", s);
	return other;
}

/* ---- one guarded probe ---- */

enum entry { ENTRY_64, ENTRY_I386 };

struct call {
	enum entry entry;
	long nr;
	long a[6];
	int run; /* vetted: let the kernel run it when the filter allows */
};

/* what the child wrote back; shared memory (MAP_SHARED) */
struct shared {
	volatile int fd;    /* the guard's listener, -1 before, -2 on failure */
	volatile int gerr;  /* errno of a failed guard */
	volatile int done;  /* the probed call returned */
	volatile long ret;  /* its raw return (-errno) */
};

static struct shared *sh;
/* fds from here up are the probes' (calls that make an fd make it in the
 * shared table): closed after each probe */
static int fd_base;

static int install_guard(uint32_t arch, uint32_t nr, uint64_t ip)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 0, 7),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 5),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, instruction_pointer)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)ip, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, instruction_pointer) + 4),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(ip >> 32), 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	long fd = surface_sc(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			     SECCOMP_FILTER_FLAG_NEW_LISTENER, (long)&prog, 0, 0, 0);

	return (int)fd;
}

static void child_probe(const struct call *c)
{
	struct rlimit no_core = { 0, 0 };
	uint32_t arch = c->entry == ENTRY_I386 ? AUDIT_ARCH_I386 : AUDIT_ARCH_X86_64;
	uint64_t ip = (uint64_t)(uintptr_t)(c->entry == ENTRY_I386 ? surface_i386_ret : surface_sc_ret);
	int fd;
	long ret;

	setrlimit(RLIMIT_CORE, &no_core);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	fd = install_guard(arch, (uint32_t)c->nr, ip);
	if (fd < 0) {
		sh->gerr = -fd;
		sh->fd = -2;
		_exit(3);
	}
	__atomic_store_n(&sh->fd, fd, __ATOMIC_SEQ_CST);
	if (c->entry == ENTRY_I386)
		ret = surface_i386(c->nr, c->a[0], c->a[1], c->a[2], c->a[3], c->a[4]);
	else
		ret = surface_sc(c->nr, c->a[0], c->a[1], c->a[2], c->a[3], c->a[4], c->a[5]);
	sh->ret = ret;
	__atomic_store_n(&sh->done, 1, __ATOMIC_SEQ_CST);
	_exit(0);
}

static void nap(void)
{
	struct timespec ts = { 0, 200 * 1000 };

	nanosleep(&ts, NULL);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Answer the held call: let it run (vetted) or fail it unrun. */
static int answer(int fd, int run)
{
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;

	memset(&req, 0, sizeof(req));
	if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
		return -errno;
	memset(&resp, 0, sizeof(resp));
	resp.id = req.id;
	if (run)
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	else
		resp.error = -ENOTRECOVERABLE;
	if (ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0)
		return -errno;
	return 0;
}

/* The verdict for one call, as report text, in out. */
static void probe(const struct call *c, char *out, size_t cap)
{
	int notified = 0, timed_out = 0, st = 0, fd = -1;
	double deadline = now() + 20;
	long pid;

	sh->fd = -1;
	sh->gerr = 0;
	sh->done = 0;
	sh->ret = 0;
	fflush(stdout);
	pid = syscall(SYS_clone, CLONE_FILES | SIGCHLD, 0, 0, 0, 0);
	if (pid < 0) {
		snprintf(out, cap, "error:clone:%s", errname(errno));
		return;
	}
	if (pid == 0)
		child_probe(c);
	for (;;) {
		long w = waitpid((pid_t)pid, &st, WNOHANG);

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			snprintf(out, cap, "error:waitpid:%s", errname(errno));
			return;
		}
		fd = __atomic_load_n(&sh->fd, __ATOMIC_SEQ_CST);
		if (fd >= 0 && !notified) {
			struct pollfd p = { .fd = fd, .events = POLLIN };

			if (poll(&p, 1, 5) > 0 && (p.revents & POLLIN) && answer(fd, c->run) == 0)
				notified = 1;
		} else {
			nap();
		}
		if (!timed_out && now() > deadline) {
			kill((pid_t)pid, SIGKILL);
			timed_out = 1;
		}
	}
	/* the listener, and whatever fd the probed call made */
	syscall(SYS_close_range, fd_base, ~0U, 0);
	if (sh->fd == -2) {
		snprintf(out, cap, "error:guard:%s", errname(sh->gerr));
		return;
	}
	if (timed_out) {
		snprintf(out, cap, "%s", notified ? "allow=timeout" : "timeout");
		return;
	}
	if (notified && !c->run) {
		snprintf(out, cap, "allow");
		return;
	}
	if (sh->done) {
		long r = sh->ret;

		snprintf(out, cap, "%s%s", notified ? "allow=" : "",
			 r < 0 && r > -4096 ? errname((int)-r) : "ok");
		if (!notified && !(r < 0 && r > -4096))
			snprintf(out, cap, "error:ran-unseen");
		return;
	}
	if (WIFSIGNALED(st))
		snprintf(out, cap, "%s%s", notified ? "allow=" : "", signame(WTERMSIG(st)));
	else
		snprintf(out, cap, "%sexit%d", notified ? "allow=" : "", WEXITSTATUS(st));
}

/* ---- the vetted x86_64 calls: harmless arguments ---- */

#define BAD -1L		/* fd, pointer, flags, length: always refused */
#define NOPID 0x7ffffff0L /* no such process (pid_max is at most 2^22) */

struct vet {
	long nr;
	long a[6];
};

#define V(name) { __NR_##name, { BAD, BAD, BAD, BAD, BAD, BAD } }
#define VA(name, ...) { __NR_##name, { __VA_ARGS__ } }

static const struct vet vetted[] = {
	V(read), V(write), V(readv), V(writev), V(pread64), V(pwrite64), V(preadv),
	V(pwritev), V(preadv2), V(pwritev2), V(open), V(openat), V(close), V(close_range),
	V(creat), V(stat), V(fstat), V(lstat), V(newfstatat), V(statx), V(statfs), V(fstatfs),
	V(access), V(faccessat), V(faccessat2), V(lseek), V(poll), V(ppoll), V(select),
	V(pselect6), V(epoll_create), V(epoll_create1), V(epoll_ctl), V(epoll_wait),
	V(epoll_pwait), V(epoll_pwait2),
	/* len 0: EINVAL before anything is mapped */
	VA(mmap, 0, 0, 0, 0, BAD, 0),
	V(mprotect), V(munmap), V(mremap), V(msync), V(mincore), V(madvise),
	VA(brk, 0), /* brk(0) only reads the break */
	/* 0x1000 is below mmap_min_addr, never mapped: ENOMEM */
	VA(mlock, 0x1000, 0x1000), VA(munlock, 0x1000, 0x1000), V(mlock2), V(mlockall),
	VA(munlockall), V(membarrier), V(pkey_mprotect), V(pkey_alloc), V(pkey_free),
	V(rt_sigaction), V(rt_sigprocmask), V(rt_sigpending), V(rt_sigtimedwait),
	/* a pid that does not exist and signal -1 (EINVAL/ESRCH) */
	VA(rt_sigqueueinfo, NOPID, BAD, BAD), VA(rt_tgsigqueueinfo, NOPID, NOPID, BAD, BAD),
	V(rt_sigsuspend), V(sigaltstack), V(ioctl), V(pipe), V(pipe2), V(dup), V(dup2),
	V(dup3), V(fcntl),
	/* LOCK_SH: cmd -1 has LOCK_MAND, which the kernel ignores with a warning
	 * in its log */
	VA(flock, BAD, 1), V(fsync), V(fdatasync), V(syncfs), V(sync_file_range),
	V(truncate), V(ftruncate), V(fallocate), V(fadvise64), V(readahead), V(getdents),
	V(getdents64), V(getcwd), V(chdir), V(fchdir), V(rename), V(renameat), V(renameat2),
	V(mkdir), V(mkdirat), V(rmdir), V(link), V(linkat), V(unlink), V(unlinkat),
	V(symlink), V(symlinkat), V(readlink), V(readlinkat), V(chmod), V(fchmod),
	V(fchmodat), V(chown), V(fchown), V(lchown), V(fchownat), V(umask), V(utime),
	V(utimes), V(utimensat), V(futimesat), V(getxattr), V(lgetxattr), V(fgetxattr),
	V(listxattr), V(llistxattr), V(flistxattr), V(setxattr), V(lsetxattr), V(fsetxattr),
	V(removexattr), V(lremovexattr), V(fremovexattr), V(sendfile), V(copy_file_range),
	V(splice), V(tee), V(memfd_create), V(socket), V(socketpair), V(connect), V(accept),
	V(accept4), V(bind), V(listen), V(shutdown), V(getsockname), V(getpeername),
	V(setsockopt), V(getsockopt), V(sendto), V(recvfrom), V(sendmsg), V(recvmsg),
	V(sendmmsg), V(recvmmsg), V(execve), V(execveat), V(wait4), V(waitid),
	VA(kill, NOPID, BAD), VA(tkill, NOPID, BAD), VA(tgkill, NOPID, NOPID, BAD),
	V(pidfd_open), V(pidfd_send_signal), V(getpid), V(getppid), V(gettid), V(getpgid),
	V(setpgid), V(getpgrp), V(getsid), V(setsid), V(getuid), V(geteuid), V(getgid),
	V(getegid), V(getresuid), V(getresgid), V(getgroups), V(setuid), V(setgid),
	V(setreuid), V(setregid), V(setresuid), V(setresgid), V(setfsuid), V(setfsgid),
	V(setgroups), V(capget), V(capset), V(uname), V(sysinfo), V(getrlimit), V(setrlimit),
	VA(prlimit64, NOPID, BAD, BAD, BAD), V(getrusage), V(times), V(getcpu),
	V(getpriority), V(setpriority), V(sched_yield), VA(sched_getaffinity, NOPID, BAD, BAD),
	V(sched_setaffinity), V(sched_getparam), V(sched_setparam), V(sched_getscheduler),
	V(sched_setscheduler), V(sched_get_priority_max), V(sched_get_priority_min),
	V(sched_rr_get_interval), V(sched_getattr), V(sched_setattr), V(ioprio_get),
	V(ioprio_set), V(prctl), V(arch_prctl), V(set_tid_address), V(set_robust_list),
	VA(get_robust_list, NOPID, BAD, BAD), V(rseq),
	/* FUTEX_WAKE on an unaligned address: EINVAL */
	VA(futex, BAD, 1, 0, 0, 0, 0), V(futex_waitv), V(restart_syscall), V(nanosleep),
	V(clock_nanosleep), V(clock_gettime), V(clock_getres), V(gettimeofday), V(time),
	V(getitimer), V(setitimer), V(alarm), V(timer_create), V(timer_settime),
	V(timer_gettime), V(timer_getoverrun), V(timer_delete), V(timerfd_create),
	V(timerfd_settime), V(timerfd_gettime), V(eventfd), V(eventfd2), V(signalfd),
	V(signalfd4), VA(inotify_init), V(inotify_init1), V(inotify_add_watch),
	V(inotify_rm_watch), V(getrandom),
	/* System V IPC: look up key -1 without IPC_CREAT: ENOENT, nothing made */
	VA(shmget, BAD, 0, 0), V(shmat), V(shmdt), V(shmctl), VA(semget, BAD, 0, 0),
	V(semop), V(semtimedop), V(semctl), VA(msgget, BAD, 0), V(msgsnd), V(msgrcv),
	V(msgctl), V(mq_open), V(mq_unlink), V(mq_timedsend), V(mq_timedreceive),
	V(mq_notify), V(mq_getsetattr), V(get_mempolicy), V(set_mempolicy), V(mbind),
	V(landlock_create_ruleset), V(landlock_add_rule), V(landlock_restrict_self),
	V(seccomp),
};

static const struct vet *find_vetted(long nr)
{
	for (size_t i = 0; i < sizeof(vetted) / sizeof(vetted[0]); i++)
		if (vetted[i].nr == nr)
			return &vetted[i];
	return NULL;
}

/* ---- sections ---- */

/* The control run (main): outside any sandbox, where nothing may run */
static int control;

static void emit(const char *prefix, const struct call *c)
{
	struct call held = *c;
	char v[64];

	/* in the control, every call the guard sees is failed unrun */
	if (control)
		held.run = 0;
	probe(&held, v, sizeof(v));
	printf("%s %s\n", prefix, v);
}

static void call_nr(struct call *c, enum entry e, long nr)
{
	memset(c, 0, sizeof(*c));
	c->entry = e;
	c->nr = nr;
	for (int i = 0; i < 6; i++)
		c->a[i] = BAD;
}

static void section_sys(void)
{
	static const long far[] = { 1000, 4095, 0x3ffffffe, 0x3fffffff, 0x7fffffff,
				    0xffffffffL, 0x100000027L /* getpid + bit 32 */ };
	char prefix[48];
	struct call c;

	for (long nr = 0; nr < NR_MAX; nr++) {
		const struct vet *v = find_vetted(nr);

		call_nr(&c, ENTRY_64, nr);
		if (v) {
			memcpy(c.a, v->a, sizeof(c.a));
			c.run = 1;
		}
		snprintf(prefix, sizeof(prefix), "sys %ld", nr);
		emit(prefix, &c);
	}
	for (size_t i = 0; i < sizeof(far) / sizeof(far[0]); i++) {
		call_nr(&c, ENTRY_64, far[i]);
		snprintf(prefix, sizeof(prefix), "sys 0x%lx", far[i]);
		emit(prefix, &c);
	}
}

static void section_x32(void)
{
	char prefix[48];
	struct call c;

	for (long nr = 0; nr < NR_MAX; nr++) {
		call_nr(&c, ENTRY_64, nr | X32_BIT);
		snprintf(prefix, sizeof(prefix), "x32 %ld", nr);
		emit(prefix, &c);
	}
}

static void section_i386(void)
{
	char prefix[48];
	struct call c;

	for (long nr = 0; nr < NR_MAX; nr++) {
		call_nr(&c, ENTRY_I386, nr);
		snprintf(prefix, sizeof(prefix), "i386 %ld", nr);
		emit(prefix, &c);
	}
}

static void section_clone(void)
{
	static const struct {
		const char *label;
		unsigned long flags;
	} cl[] = {
		{ "plain", SIGCHLD },
		{ "NEWNS", CLONE_NEWNS | SIGCHLD },
		{ "NEWUSER", CLONE_NEWUSER | SIGCHLD },
		{ "NEWPID", CLONE_NEWPID | SIGCHLD },
		{ "NEWNET", CLONE_NEWNET | SIGCHLD },
		{ "NEWIPC", CLONE_NEWIPC | SIGCHLD },
		{ "NEWUTS", CLONE_NEWUTS | SIGCHLD },
		{ "NEWCGROUP", CLONE_NEWCGROUP | SIGCHLD },
		{ "NEWTIME", CLONE_NEWTIME | SIGCHLD },
		{ "NEWUSER+bit32", (1UL << 32) | CLONE_NEWUSER | SIGCHLD },
		{ "bit32", (1UL << 32) | SIGCHLD },
		{ "hi32-all", 0xffffffff00000000UL | SIGCHLD },
		{ "all", ~0UL },
		{ "thread", CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD },
	};
	char prefix[64];
	struct call c;

	for (size_t i = 0; i < sizeof(cl) / sizeof(cl[0]); i++) {
		call_nr(&c, ENTRY_64, __NR_clone);
		c.a[0] = (long)cl[i].flags;
		c.a[1] = 0; /* never run: the verdict only */
		snprintf(prefix, sizeof(prefix), "clone %s", cl[i].label);
		emit(prefix, &c);
	}
	{
		static uint64_t args[11];

		call_nr(&c, ENTRY_64, 435);
		memset(args, 0, sizeof(args));
		args[4] = SIGCHLD;
		c.a[0] = (long)args;
		c.a[1] = 88;
		emit("clone3 plain", &c);
		args[0] = CLONE_NEWUSER;
		emit("clone3 NEWUSER", &c);
	}
}

static void section_socket(void)
{
	static const int types[] = { SOCK_STREAM, SOCK_DGRAM, SOCK_RAW, SOCK_SEQPACKET,
				     SOCK_RDM, 10 /* SOCK_PACKET */ };
	static const long odd[] = { 0x100000028L /* AF_VSOCK + bit 32 */,
				    0x100000001L /* AF_UNIX + bit 32 */, 0xffffffffL, 64, 255,
				    0x7fffffff };
	char prefix[64];
	struct call c;

	for (long fam = 0; fam < 64; fam++)
		for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
			call_nr(&c, ENTRY_64, __NR_socket);
			c.a[0] = fam;
			c.a[1] = types[t] | SOCK_CLOEXEC;
			c.a[2] = 0;
			c.run = 1;
			snprintf(prefix, sizeof(prefix), "socket %ld %d", fam, types[t]);
			emit(prefix, &c);
		}
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		call_nr(&c, ENTRY_64, __NR_socket);
		c.a[0] = odd[i];
		c.a[1] = SOCK_STREAM | SOCK_CLOEXEC;
		c.a[2] = 0;
		c.run = 1;
		snprintf(prefix, sizeof(prefix), "socket 0x%lx 1", odd[i]);
		emit(prefix, &c);
	}
	/* raw and ping sockets of the two IP families */
	for (int fam = AF_INET; fam <= AF_INET6; fam += AF_INET6 - AF_INET) {
		static const int proto[][2] = { { SOCK_RAW, 1 }, { SOCK_RAW, 6 }, { SOCK_DGRAM, 1 },
						{ SOCK_DGRAM, 58 }, { SOCK_RAW, 58 } };

		for (size_t i = 0; i < sizeof(proto) / sizeof(proto[0]); i++) {
			call_nr(&c, ENTRY_64, __NR_socket);
			c.a[0] = fam;
			c.a[1] = proto[i][0] | SOCK_CLOEXEC;
			c.a[2] = proto[i][1];
			c.run = 1;
			snprintf(prefix, sizeof(prefix), "socketproto %d %d %d", fam, proto[i][0],
				 proto[i][1]);
			emit(prefix, &c);
		}
	}
	for (long proto = 0; proto < 32; proto++) {
		call_nr(&c, ENTRY_64, __NR_socket);
		c.a[0] = AF_NETLINK;
		c.a[1] = SOCK_RAW | SOCK_CLOEXEC;
		c.a[2] = proto;
		c.run = 1;
		snprintf(prefix, sizeof(prefix), "netlink %ld", proto);
		emit(prefix, &c);
	}
}

static void section_ioctl_filter(void)
{
	static const struct {
		const char *label;
		unsigned long cmd;
	} io[] = {
		{ "TIOCSTI", TIOCSTI },
		{ "TIOCSTI+bit32", (1UL << 32) | TIOCSTI },
		{ "TIOCSTI+hi32-all", 0xffffffff00000000UL | TIOCSTI },
		{ "TIOCLINUX", TIOCLINUX },
		{ "TIOCLINUX+bit32", (1UL << 32) | TIOCLINUX },
		{ "TIOCLINUX+hi32-all", 0xffffffff00000000UL | TIOCLINUX },
		{ "FIONREAD", FIONREAD },
		{ "FIONREAD+bit32", (1UL << 32) | FIONREAD },
		{ "TIOCSCTTY", TIOCSCTTY },
		{ "TIOCCONS", TIOCCONS },
		{ "TIOCSETD", TIOCSETD },
	};
	char prefix[64];
	struct call c;

	for (size_t i = 0; i < sizeof(io) / sizeof(io[0]); i++) {
		/* fd -1: EBADF from the kernel if the filter lets it by */
		call_nr(&c, ENTRY_64, __NR_ioctl);
		c.a[1] = (long)io[i].cmd;
		c.run = 1;
		snprintf(prefix, sizeof(prefix), "ioctl %s", io[i].label);
		emit(prefix, &c);
	}
}

static void section_prctl(void)
{
	static const long far[] = { PR_SET_PTRACER, PR_SET_VMA, 0x41555856 /* PR_GET_AUXV */,
				    0x100000000L | PR_SET_NAME };
	char prefix[48];
	struct call c;

	for (long op = 0; op < 100; op++) {
		call_nr(&c, ENTRY_64, __NR_prctl);
		memset(c.a, 0, sizeof(c.a));
		c.a[0] = op;
		c.run = 1;
		snprintf(prefix, sizeof(prefix), "prctl %ld", op);
		emit(prefix, &c);
	}
	for (size_t i = 0; i < sizeof(far) / sizeof(far[0]); i++) {
		call_nr(&c, ENTRY_64, __NR_prctl);
		memset(c.a, 0, sizeof(c.a));
		c.a[0] = far[i];
		c.run = 1;
		snprintf(prefix, sizeof(prefix), "prctl 0x%lx", far[i]);
		emit(prefix, &c);
	}
}

/* ---- ioctl families per fd ---- */

struct fdkind {
	const char *kind;
	int (*open)(void);
};

static int open_path(const char *p, int flags)
{
	return open(p, flags | O_CLOEXEC);
}

static int fd_devnull(void) { return open_path("/dev/null", O_RDWR); }
static int fd_devzero(void) { return open_path("/dev/zero", O_RDWR); }
static int fd_devfull(void) { return open_path("/dev/full", O_RDWR); }
static int fd_urandom(void) { return open_path("/dev/urandom", O_RDONLY); }
static int fd_random(void) { return open_path("/dev/random", O_RDONLY); }
static int fd_ptmx(void) { return open_path("/dev/ptmx", O_RDWR | O_NOCTTY); }
static int fd_tty(void) { return open_path("/dev/tty", O_RDWR | O_NOCTTY); }
static int fd_stdin(void) { return fcntl(0, F_DUPFD_CLOEXEC, 10); }
static int fd_stdout(void) { return fcntl(1, F_DUPFD_CLOEXEC, 10); }
static int fd_dot(void) { return open_path(".", O_RDONLY | O_DIRECTORY); }
static int fd_procstatus(void) { return open_path("/proc/self/status", O_RDONLY); }
static int fd_nsnet(void) { return open_path("/proc/self/ns/net", O_RDONLY); }
static int fd_nsuser(void) { return open_path("/proc/self/ns/user", O_RDONLY); }

static int fd_file(void)
{
	/* a file in the workspace (the working directory), unlinked at once */
	char name[64];
	int fd;

	snprintf(name, sizeof(name), ".surface-probe-%d", getpid());
	fd = open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd >= 0) {
		if (write(fd, "surface\n", 8) != 8) {
			close(fd);
			unlink(name);
			return -1;
		}
		unlink(name);
	}
	return fd;
}

static int fd_tmpfile(void) { return open_path("/tmp", O_TMPFILE | O_RDWR); }

static int fd_pipe(void)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	close(p[0]);
	return p[1];
}

static int fd_unix(void)
{
	int p[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) < 0)
		return -1;
	close(p[1]);
	return p[0];
}

static int fd_tcp(void) { return socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0); }
static int fd_udp(void) { return socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0); }
static int fd_tcp6(void) { return socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0); }
static int fd_netlink(void) { return socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0); }
static int fd_eventfd(void) { return eventfd(0, EFD_CLOEXEC); }
static int fd_timerfd(void) { return timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC); }
static int fd_epoll(void) { return epoll_create1(EPOLL_CLOEXEC); }
static int fd_inotify(void) { return inotify_init1(IN_CLOEXEC); }
static int fd_memfd(void) { return memfd_create("surface", MFD_CLOEXEC); }

static int fd_signalfd(void)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	return signalfd(-1, &s, SFD_CLOEXEC);
}

static int fd_pidfd(void)
{
	return (int)syscall(SYS_pidfd_open, getpid(), 0);
}

static const struct fdkind fdkinds[] = {
	{ "stdin", fd_stdin },	     { "stdout", fd_stdout },	{ "devnull", fd_devnull },
	{ "devzero", fd_devzero },   { "devfull", fd_devfull }, { "urandom", fd_urandom },
	{ "random", fd_random },     { "ptmx", fd_ptmx },	{ "tty", fd_tty },
	{ "file", fd_file },	     { "tmpfile", fd_tmpfile }, { "dir", fd_dot },
	{ "pipe", fd_pipe },	     { "unix", fd_unix },	{ "tcp", fd_tcp },
	{ "udp", fd_udp },	     { "tcp6", fd_tcp6 },	{ "netlink", fd_netlink },
	{ "eventfd", fd_eventfd },   { "timerfd", fd_timerfd }, { "signalfd", fd_signalfd },
	{ "epoll", fd_epoll },	     { "inotify", fd_inotify }, { "memfd", fd_memfd },
	{ "pidfd", fd_pidfd },	     { "procfile", fd_procstatus }, { "ns-net", fd_nsnet },
	{ "ns-user", fd_nsuser },
};

/* Commands scanned per type byte: every number 0..255 in the old
 * encoding (no direction or size: the 'T' terminal and 0x89 socket
 * commands), and with each direction and the sizes of an int and a long
 * (most sized commands).  A command of an unusual size is missed. */
static const unsigned dirs[] = { 1 /* W */, 2 /* R */, 3 /* RW */ };
static const unsigned sizes[] = { 4, 8 };

/* ENOTTY: no handler took the command.  EACCES: Landlock's ioctl rule
 * for device files refused it (counted per fd, not listed per family).
 * Anything else reached a handler. */
static void scan_fd(const char *kind, int fd, FILE *out)
{
	unsigned long eacces = 0;
	unsigned einval_families = 0;

	for (unsigned type = 0; type < 256; type++) {
		unsigned n = 0, tried = 0, einval = 0;
		unsigned char seen[4097]; /* per errno; [0] "ok" */

		memset(seen, 0, sizeof(seen));

		for (unsigned variant = 0; variant < 1 + 3 * 2; variant++) {
			for (unsigned nr = 0; nr < 256; nr++) {
				unsigned long cmd;
				long r;

				if (variant == 0)
					cmd = type << 8 | nr;
				else
					cmd = _IOC(dirs[(variant - 1) / 2], type, nr,
						   sizes[(variant - 1) % 2]);
				/* the filter's own answers are reported above */
				if (cmd == TIOCSTI || cmd == TIOCLINUX)
					continue;
				r = surface_sc(__NR_ioctl, fd, (long)cmd, BAD, 0, 0, 0);
				tried++;
				if (r == -ENOTTY)
					continue;
				if (r == -EACCES) {
					eacces++;
					continue;
				}
				n++;
				einval += r == -EINVAL;
				seen[r >= 0 || r <= -4096 ? 0 : -r] = 1;
			}
		}
		if (!n)
			continue;
		/* a handler that answers EINVAL to every command (epoll) is
		 * a catch-all, counted, not listed */
		if (einval == tried) {
			einval_families++;
			continue;
		}
		fprintf(out, "ioctlfam %s 0x%02x %u", kind, type, n);
		for (int e = 0, first = 1; e < 4097; e++) {
			if (!seen[e])
				continue;
			fprintf(out, "%s%s", first ? " " : ",", errname(e));
			first = 0;
		}
		fprintf(out, "\n");
	}
	fprintf(out, "ioctleacces %s %lu\n", kind, eacces);
	fprintf(out, "ioctleinval %s %u\n", kind, einval_families);
}

static void section_ioctl_families(void)
{
	for (size_t i = 0; i < sizeof(fdkinds) / sizeof(fdkinds[0]); i++) {
		int fd;
		pid_t pid;
		int st;

		fd = fdkinds[i].open();
		if (fd < 0) {
			printf("fd %s unavailable:%s\n", fdkinds[i].kind, errname(errno));
			continue;
		}
		printf("fd %s open\n", fdkinds[i].kind);
		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			struct rlimit no_core = { 0, 0 };

			setrlimit(RLIMIT_CORE, &no_core);
			prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
			alarm(60);
			scan_fd(fdkinds[i].kind, fd, stdout);
			fflush(stdout);
			_exit(0);
		}
		close(fd);
		if (pid < 0 || waitpid(pid, &st, 0) != pid) {
			printf("fd %s error:fork\n", fdkinds[i].kind);
			continue;
		}
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			printf("fd %s scan-died:%s\n", fdkinds[i].kind,
			       WIFSIGNALED(st) ? signame(WTERMSIG(st)) : "exit");
	}
}

/* ---- safety gate ---- */

static int status_field(const char *key, char *val, size_t cap)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");
	size_t kl = strlen(key);
	int found = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			char *v = line + kl + 1;

			v += strspn(v, " \t");
			v[strcspn(v, "\n")] = 0;
			snprintf(val, cap, "%s", v);
			found = 1;
			break;
		}
	fclose(f);
	return found;
}

static int sandboxed(void)
{
	char v[64];

	if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) != 2)
		return 0;
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
		return 0;
	if (!status_field("CapEff", v, sizeof(v)) || strspn(v, "0") != strlen(v))
		return 0;
	return 1;
}

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : "all";
	int all = !strcmp(only, "all");

	/* The control: the entry sections (x32, i386) run unsandboxed, to
	 * tell what the host itself refuses (a kernel without 32-bit
	 * emulation kills int 0x80 with SIGSEGV before any filter sees it)
	 * from what the sandbox's filter refuses.  Safe anywhere, as root
	 * too: every call is held by the guard and failed unrun, and a call
	 * the guard never sees never reached the kernel's table.
	 * no_new_privs lets the guard stack without CAP_SYS_ADMIN. */
	if (!strcmp(only, "control")) {
		control = 1;
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
			fprintf(stderr, "surface: cannot set no_new_privs: %s\n", strerror(errno));
			return 1;
		}
	} else if (!sandboxed()) {
		fprintf(stderr, "surface: not inside a sandbox (expected a seccomp filter, "
				"no_new_privs and no capabilities); refusing to probe\n");
		return 2;
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		fprintf(stderr, "surface: cannot map shared memory: %s\n", strerror(errno));
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	fd_base = fcntl(0, F_DUPFD_CLOEXEC, 0);
	if (fd_base < 0) {
		fprintf(stderr, "surface: cannot find a free fd: %s\n", strerror(errno));
		return 1;
	}
	close(fd_base);
	printf("surface 1\n");
	if (all || !strcmp(only, "sys"))
		section_sys();
	if (all || control || !strcmp(only, "x32"))
		section_x32();
	if (all || control || !strcmp(only, "i386"))
		section_i386();
	if (all || !strcmp(only, "clone"))
		section_clone();
	if (all || !strcmp(only, "socket"))
		section_socket();
	if (all || !strcmp(only, "ioctl"))
		section_ioctl_filter();
	if (all || !strcmp(only, "prctl"))
		section_prctl();
	if (all || !strcmp(only, "ioctlfam"))
		section_ioctl_families();
	printf("end\n");
	return 0;
}
