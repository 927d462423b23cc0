/* The seccomp policy and its compilation with libseccomp.  Linked into
 * tools/gen-seccomp and the tests only: the codecell binary carries the
 * compiled programs (build/gen/seccomp_bpf.c) and does not load libseccomp. */
#include "sandbox/seccomp.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/macro.h"
#include "util/banned.h"

/* What an interpreter, a shell, node or sqlite does on a normal day.
 * Names libseccomp does not know on this architecture are skipped. */
const char *const sandbox_seccomp_allowed[] = {
	"read", "write", "readv", "writev", "pread64", "pwrite64", "preadv",
	"pwritev", "preadv2", "pwritev2", "open", "openat", "close",
	"close_range", "creat", "stat", "fstat", "lstat", "newfstatat", "statx",
	"statfs", "fstatfs", "access", "faccessat", "faccessat2", "lseek",
	"poll", "ppoll", "select", "pselect6", "epoll_create", "epoll_create1",
	"epoll_ctl", "epoll_wait", "epoll_pwait", "epoll_pwait2", "mmap",
	"mprotect", "munmap", "mremap", "msync", "mincore", "madvise", "brk",
	"mlock", "mlock2", "munlock", "mlockall", "munlockall", "membarrier",
	"pkey_mprotect", "pkey_alloc", "pkey_free", "rt_sigaction",
	"rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigtimedwait",
	"rt_sigqueueinfo", "rt_tgsigqueueinfo", "rt_sigsuspend", "sigaltstack",
	"ioctl", "pipe", "pipe2", "dup", "dup2", "dup3", "fcntl", "flock",
	"fsync", "fdatasync", "sync", "syncfs", "sync_file_range", "truncate",
	"ftruncate", "fallocate", "fadvise64", "readahead", "getdents",
	"getdents64", "getcwd", "chdir", "fchdir", "rename", "renameat",
	"renameat2", "mkdir", "mkdirat", "rmdir", "link", "linkat", "unlink",
	"unlinkat", "symlink", "symlinkat", "readlink", "readlinkat", "chmod",
	"fchmod", "fchmodat", "chown", "fchown", "lchown", "fchownat", "umask",
	"utime", "utimes", "utimensat", "futimesat", "getxattr", "lgetxattr",
	"fgetxattr", "listxattr", "llistxattr", "flistxattr", "setxattr",
	"lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
	"sendfile", "copy_file_range", "splice", "tee", "vmsplice", "memfd_create",
	"openat2",
	"socket", "socketpair", "connect", "accept", "accept4", "bind",
	"listen", "shutdown", "getsockname", "getpeername", "setsockopt",
	"getsockopt", "sendto", "recvfrom", "sendmsg", "recvmsg", "sendmmsg",
	"recvmmsg", "fork", "vfork", "execve", "execveat", "exit",
	"exit_group", "wait4", "waitid", "kill", "tkill", "tgkill",
	"pidfd_open", "pidfd_send_signal", "getpid", "getppid", "gettid",
	"getpgid", "setpgid", "getpgrp", "getsid", "setsid", "getuid",
	"geteuid", "getgid", "getegid", "getresuid", "getresgid", "getgroups",
	"setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid",
	"setfsuid", "setfsgid", "setgroups", "capget", "capset", "uname", "sysinfo",
	"getrlimit", "setrlimit", "prlimit64", "getrusage", "times", "getcpu",
	"getpriority", "setpriority", "sched_yield", "sched_getaffinity",
	"sched_setaffinity", "sched_getparam", "sched_setparam",
	"sched_getscheduler", "sched_setscheduler", "sched_get_priority_max",
	"sched_get_priority_min", "sched_rr_get_interval", "sched_getattr",
	"sched_setattr", "ioprio_get", "ioprio_set", "prctl", "arch_prctl",
	"set_tid_address", "set_robust_list", "get_robust_list", "rseq",
	"futex", "futex_waitv", "restart_syscall", "nanosleep",
	"clock_nanosleep", "clock_gettime", "clock_getres", "gettimeofday",
	"time", "getitimer", "setitimer", "alarm", "pause", "timer_create",
	"timer_settime", "timer_gettime", "timer_getoverrun", "timer_delete",
	"timerfd_create", "timerfd_settime", "timerfd_gettime", "eventfd",
	"eventfd2", "signalfd", "signalfd4", "inotify_init", "inotify_init1",
	"inotify_add_watch", "inotify_rm_watch", "getrandom", "shmget",
	"shmat", "shmdt", "shmctl", "semget", "semop", "semtimedop", "semctl",
	"msgget", "msgsnd", "msgrcv", "msgctl", "mq_open", "mq_unlink",
	"mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
	"get_mempolicy", "set_mempolicy", "mbind", "landlock_create_ruleset",
	"landlock_add_rule", "landlock_restrict_self", "seccomp", NULL,
};

/* Decided one by one (issue 13), and why:
 *  - vmsplice: allowed.  A pipe operation like splice and tee, which are
 *    allowed; it moves the caller's own pages into its own pipe.
 *  - openat2: allowed.  openat with a struct of flags (RESOLVE_BENEATH
 *    and friends only narrow the lookup); Landlock and the mounts judge
 *    the path as for openat, and no argument of openat is filtered here
 *    either.
 *  - fchmodat2 (6.6): allowed, by number (add_by_number): fchmodat with
 *    AT_SYMLINK_NOFOLLOW, which glibc 2.39+ calls for lchmod.
 *  - io_setup and the rest of native AIO: refused with ENOSYS, the
 *    default.  Every io_setup takes from one host-wide count
 *    (fs.aio-max-nr, 65536 by default), so one sandbox could take it
 *    all and make io_setup fail for the host and every other sandbox;
 *    ENOSYS is the answer callers already handle as "no native AIO"
 *    (libaio users fall back to threads; POSIX aio in glibc uses
 *    threads anyway).
 *  - personality: queries and the harmless execution domains only
 *    (add_personality_rules), as Docker's default profile; others ENOSYS.
 *  - mknod, mknodat: FIFOs, regular files and sockets, what open, mkfifo
 *    and bind make anyway; device nodes refused (add_mknod_rules). */

/* Never reachable (DESIGN.md): fail with EPERM. */
const char *const sandbox_seccomp_denied[] = {
	"unshare", "setns", "mount", "umount2", "pivot_root", "chroot",
	"move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick",
	"mount_setattr", "bpf", "io_uring_setup", "io_uring_enter",
	"io_uring_register", "userfaultfd", "perf_event_open", "keyctl",
	"add_key", "request_key", "ptrace", "process_vm_readv",
	"process_vm_writev", "process_madvise", "pidfd_getfd", "kcmp",
	"init_module", "finit_module", "delete_module", "kexec_load",
	"kexec_file_load", "open_by_handle_at", "name_to_handle_at", "reboot",
	"swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "syslog",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "iopl",
	"ioperm", "uselib", "ustat", "sysfs", "vhangup",
	"lookup_dcookie", "fanotify_init", "sethostname", "setdomainname", "nfsservctl", "migrate_pages",
	"move_pages", NULL,
};

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#define NS_FLAGS                                                               \
	(CLONE_NEWNS | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET |           \
	 CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP | CLONE_NEWTIME)

static int add_names(scmp_filter_ctx ctx, const char *const *names, uint32_t action)
{
	for (; *names; names++) {
		int nr = seccomp_syscall_resolve_name(*names);
		int r;

		if (nr == __NR_SCMP_ERROR || nr < 0)
			continue; /* not on this architecture */
		r = seccomp_rule_add(ctx, action, nr, 0);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Calls newer than the libseccomp we build with may be missing from its
 * table: by number, where the number is the same on every architecture
 * (the unified table from 424 on).  x86_64 only for now (and aarch64,
 * which shares those numbers). */
static int add_by_number(scmp_filter_ctx ctx)
{
#if defined(__x86_64__) || defined(__aarch64__)
	/* Landlock's three as well: the early worker applies Landlock
	 * under the filter (child.c, worker_early) */
	static const int nrs[] = { 444, 445, 446 /* landlock_* */, 452 /* fchmodat2 */ };

	for (size_t i = 0; i < ARRAY_SIZE(nrs); i++) {
		int r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nrs[i], 0);

		if (r < 0 && r != -EEXIST)
			return r;
	}
#else
	(void)ctx;
#endif
	return 0;
}

/* personality(2): 0xffffffff only asks (setarch, Python's test suite);
 * PER_LINUX, PER_LINUX32 and UNAME26 (and the two together) change what
 * uname says and the 32-bit address limit, nothing else (Docker's
 * default profile allows the same five).  Every other value gets the
 * default ENOSYS (ADDR_NO_RANDOMIZE above all, which turns ASLR off for
 * what the process execs, and READ_IMPLIES_EXEC): libseccomp cannot say
 * "none of these values" in one rule (two comparisons of one argument
 * are EINVAL) and an unconditional EPERM rule would override the allowed
 * values.  The kernel reads an unsigned int: compare the low 32 bits
 * only. */
static int add_personality_rules(scmp_filter_ctx ctx)
{
	static const uint32_t ok[] = { 0x0, 0x8, 0x20000, 0x20008, 0xffffffffu };

	for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
		int r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(personality), 1,
					 SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, ok[i]));

		if (r < 0)
			return r;
	}
	return 0;
}

/* mknod(path, mode, dev), mknodat(dirfd, path, mode, dev): the kernel
 * reads mode as a umode_t and its type from the S_IFMT bits.  FIFOs
 * (mkfifo), regular files (type 0 or S_IFREG) and sockets are what open
 * and bind make anyway, in the places Landlock lets the sandbox write;
 * character and block devices, and types no kernel knows, are EPERM
 * (nodev mounts, no CAP_MKNOD and Landlock refuse devices too). */
static int add_mknod_rules(scmp_filter_ctx ctx)
{
	static const struct {
		int nr;
		unsigned arg;
	} calls[] = { { SCMP_SYS(mknod), 1 }, { SCMP_SYS(mknodat), 2 } };

	for (size_t c = 0; c < ARRAY_SIZE(calls); c++) {
		if (calls[c].nr < 0)
			continue; /* mknod: not on aarch64 */
		for (unsigned t = 0; t < 16; t++) {
			unsigned type = t << 12;
			bool ok = type == 0 || type == S_IFIFO || type == S_IFREG || type == S_IFSOCK;
			struct scmp_arg_cmp cmp = {
				.arg = calls[c].arg, .op = SCMP_CMP_MASKED_EQ,
				.datum_a = S_IFMT, .datum_b = type,
			};
			int r = seccomp_rule_add_array(ctx, ok ? SCMP_ACT_ALLOW : SCMP_ACT_ERRNO(EPERM),
						       calls[c].nr, 1, &cmp);

			if (r < 0)
				return r;
		}
	}
	return 0;
}

static int add_clone_rules(scmp_filter_ctx ctx)
{
	int r;

	/* clone without namespace flags runs; with any, EPERM. */
	r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
			     SCMP_A0(SCMP_CMP_MASKED_EQ, NS_FLAGS, 0));
	if (r < 0)
		return r;
	for (unsigned long bit = 1; bit <= NS_FLAGS; bit <<= 1) {
		if (!(NS_FLAGS & bit))
			continue;
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, bit, bit));
		if (r < 0)
			return r;
	}
	/* clone3 needs no rule: the default action already answers ENOSYS
	 * (and libseccomp refuses a rule equal to the default). */
	return 0;
}

const int sandbox_seccomp_families[] = { AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, -1 };

/* Families are compared on the low 32 bits (the kernel reads an int);
 * every family number the kernel could know but ours is refused. */
static int add_family_rules(scmp_filter_ctx ctx)
{
	for (int fam = 0; fam < 64; fam++) {
		bool ok = false;
		int r;

		for (const int *f = sandbox_seccomp_families; *f >= 0; f++)
			ok |= *f == fam;
		if (ok)
			continue;
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, (scmp_datum_t)fam));
		if (r < 0)
			return r;
	}
	return 0;
}

/* TIOCSTI and TIOCLINUX push keystrokes into a terminal (CVE-2017-5226
 * class).  TIOCSETD too, since the sandbox has ptys of its own: changing
 * a tty's line discipline reaches n_gsm, n_hdlc and the like, a steady
 * source of kernel bugs (CVE-2017-2636, CVE-2023-6546), and can load
 * their modules where dev.tty.ldisc_autoload is on; programs other than
 * pppd and slattach never call it. */
static int add_tty_rules(scmp_filter_ctx ctx)
{
	static const unsigned long tty_ioctls[] = { TIOCSTI, TIOCLINUX, TIOCSETD };

	/* Compare only the low 32 bits: the kernel does, and a request
	 * with high bits set must not slip through (CVE-2019-10063). */
	for (size_t i = 0; i < ARRAY_SIZE(tty_ioctls); i++) {
		int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
					 SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, tty_ioctls[i]));

		if (r < 0)
			return r;
	}
	return 0;
}

static int export_bpf(scmp_filter_ctx ctx, struct sock_fprog **ret)
{
	_cleanup_close_ int fd = memfd_create("codecell-seccomp", MFD_CLOEXEC);
	struct sock_fprog *prog;
	struct buf b;
	size_t len;
	int r;

	if (fd < 0)
		return -errno;
	r = seccomp_export_bpf(ctx, fd);
	if (r < 0)
		return r;
	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	buf_init(&b, 1 << 20);
	r = buf_read_fd(&b, fd);
	if (r < 0 || b.len == 0 || b.len % sizeof(struct sock_filter)) {
		buf_release(&b);
		return r < 0 ? r : -EINVAL;
	}
	prog = malloc(sizeof(*prog));
	if (!prog) {
		buf_release(&b);
		return -ENOMEM;
	}
	prog->filter = (struct sock_filter *)buf_detach(&b, &len);
	prog->len = (unsigned short)(len / sizeof(struct sock_filter));
	*ret = prog;
	return 0;
}

int sandbox_seccomp_build(int which, struct sock_fprog **ret)
{
	scmp_filter_ctx ctx;
	int r;

	if (which != SECCOMP_MAIN && which != SECCOMP_ARGS)
		return -EINVAL;
	ctx = seccomp_init(which == SECCOMP_MAIN ? SCMP_ACT_ERRNO(ENOSYS) : SCMP_ACT_ALLOW);
	if (!ctx)
		return -ENOMEM;
	/* Wrong architecture (int 0x80 on x86_64, x32): kill. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (r < 0)
		goto out;
	/* We set no_new_privs ourselves, earlier, for Landlock too. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	if (r < 0)
		goto out;
	/* a binary tree of syscall numbers: fewer instructions per call */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (r < 0)
		goto out;
	if (which == SECCOMP_ARGS) {
		r = add_tty_rules(ctx);
		if (r == 0)
			r = add_family_rules(ctx);
	} else {
		r = add_names(ctx, sandbox_seccomp_allowed, SCMP_ACT_ALLOW);
		if (r == 0)
			r = add_names(ctx, sandbox_seccomp_denied, SCMP_ACT_ERRNO(EPERM));
		if (r == 0)
			r = add_clone_rules(ctx);
		if (r == 0)
			r = add_by_number(ctx);
		if (r == 0)
			r = add_personality_rules(ctx);
		if (r == 0)
			r = add_mknod_rules(ctx);
	}
	if (r == 0)
		r = export_bpf(ctx, ret);
out:
	seccomp_release(ctx);
	return r;
}

void sandbox_seccomp_free(struct sock_fprog *prog)
{
	if (!prog)
		return;
	free(prog->filter);
	free(prog);
}

