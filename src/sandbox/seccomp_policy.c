/* The seccomp policy and its compilation with libseccomp.  Linked into
 * tools/gen-seccomp and the tests only: the codecell binary carries the
 * compiled programs (build/gen/seccomp_bpf.c) and does not load libseccomp. */
#include "sandbox/seccomp.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <stddef.h>
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
/* the names as the kernel lists them, a few a line */
/* clang-format off */
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
/* clang-format on */

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
/* the names as the kernel lists them, a few a line */
/* clang-format off */
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
/* clang-format on */

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#define NS_FLAGS                                                                                   \
	(CLONE_NEWNS | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | \
	 CLONE_NEWCGROUP | CLONE_NEWTIME)

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
			bool ok =
				type == 0 || type == S_IFIFO || type == S_IFREG || type == S_IFSOCK;
			struct scmp_arg_cmp cmp = {
				.arg = calls[c].arg,
				.op = SCMP_CMP_MASKED_EQ,
				.datum_a = S_IFMT,
				.datum_b = type,
			};
			int r = seccomp_rule_add_array(ctx,
						       ok ? SCMP_ACT_ALLOW : SCMP_ACT_ERRNO(EPERM),
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

uint32_t sandbox_bpf_run(const struct sock_fprog *prog, const struct seccomp_data *d,
			 bool *read_args)
{
	uint32_t a = 0, x = 0;
	unsigned pc = 0;

	if (read_args)
		*read_args = false;
	while (pc < prog->len) {
		const struct sock_filter *in = &prog->filter[pc++];
		uint32_t operand = BPF_SRC(in->code) == BPF_X ? x : in->k;

		switch (BPF_CLASS(in->code)) {
		case BPF_LD:
			if (BPF_MODE(in->code) != BPF_ABS || BPF_SIZE(in->code) != BPF_W ||
			    in->k > sizeof(*d) - 4 || in->k % 4)
				return SANDBOX_BPF_BAD; /* the kernel refuses these */
			memcpy(&a, (const char *)d + in->k, 4);
			if (read_args && in->k >= offsetof(struct seccomp_data, args))
				*read_args = true;
			break;
		case BPF_ALU:
			if (BPF_OP(in->code) != BPF_AND)
				return SANDBOX_BPF_BAD; /* in neither program */
			a &= operand;
			break;
		case BPF_JMP:
			if (BPF_OP(in->code) == BPF_JA)
				pc += in->k;
			else if (BPF_OP(in->code) == BPF_JEQ)
				pc += a == operand ? in->jt : in->jf;
			else if (BPF_OP(in->code) == BPF_JGT)
				pc += a > operand ? in->jt : in->jf;
			else if (BPF_OP(in->code) == BPF_JGE)
				pc += a >= operand ? in->jt : in->jf;
			else if (BPF_OP(in->code) == BPF_JSET)
				pc += a & operand ? in->jt : in->jf;
			else
				return SANDBOX_BPF_BAD;
			break;
		case BPF_RET:
			return BPF_RVAL(in->code) == BPF_A ? a : in->k;
		case BPF_MISC:
			if (BPF_MISCOP(in->code) == BPF_TAX)
				x = a;
			else
				a = x;
			break;
		default:
			return SANDBOX_BPF_BAD;
		}
	}
	return SANDBOX_BPF_BAD; /* ran off the end: the kernel refuses it */
}

size_t sandbox_bpf_constants(const struct sock_fprog *prog, uint32_t *out, size_t max)
{
	size_t n = 0;

	for (unsigned i = 0; i < prog->len; i++) {
		const struct sock_filter *in = &prog->filter[i];

		if (BPF_CLASS(in->code) != BPF_JMP || BPF_OP(in->code) == BPF_JA ||
		    BPF_SRC(in->code) != BPF_K)
			continue;
		for (int d = -1; d <= 1; d++)
			if (n < max)
				out[n++] = in->k + (uint32_t)d;
	}
	return n;
}

#ifdef __x86_64__
/* ---- The main filter in fewer instructions ----
 *
 * libseccomp's binary tree compares every listed call on its own: 515
 * instructions, which the kernel checks, converts and JITs at each load,
 * about 0.1 ms on a sandbox's start path.  The calls allowed, refused
 * and left to the default come in runs of neighbouring numbers, so the
 * same verdicts fit a search tree over the runs' first numbers, read off
 * libseccomp's own program by running it for every number up to NR_SCAN.
 * The few calls whose verdict depends on an argument (clone,
 * personality, mknod, mknodat) get the same tests written out here.
 * Before it is written out, same_verdicts() runs both programs wherever
 * a comparison in either can change the verdict (every number up to
 * NR_SCAN, every constant and its neighbours, as a call number and as
 * each argument, under five architecture values) and the build stops on
 * any difference; test-sandbox does the same with random arguments
 * besides (seccomp_compact_main_acts_as_libseccomps). */

#define NR_SCAN 1024 /* past the highest call number, with room */
#define X32_BIT 0x40000000u

struct emitter {
	struct sock_filter *in;
	unsigned n, cap;
	bool too_far;
};

static void put(struct emitter *e, uint16_t code, unsigned jt, unsigned jf, uint32_t k)
{
	if (jt > 255 || jf > 255)
		e->too_far = true;
	if (e->n < e->cap)
		e->in[e->n] = (struct sock_filter){ code, (uint8_t)jt, (uint8_t)jf, k };
	e->n++;
}

/* A run: the numbers from lo up to the next run's lo, one verdict.  nr >= 0
 * names a call whose verdict needs its arguments (a run of its own). */
struct run {
	uint32_t lo, action;
	int nr;
};

#define ARG_LO(i) ((uint32_t)(offsetof(struct seccomp_data, args) + 8 * (i)))

/* ALLOW if the low word of argument arg, masked, is one of vals, else
 * other */
static void emit_one_of(struct emitter *e, unsigned arg, uint32_t mask, const uint32_t *vals,
			unsigned n, uint32_t other)
{
	put(e, BPF_LD | BPF_W | BPF_ABS, 0, 0, ARG_LO(arg));
	if (mask != 0xffffffffu)
		put(e, BPF_ALU | BPF_AND | BPF_K, 0, 0, mask);
	for (unsigned i = 0; i < n; i++)
		put(e, BPF_JMP | BPF_JEQ | BPF_K, n - i, 0, vals[i]);
	put(e, BPF_RET | BPF_K, 0, 0, other);
	put(e, BPF_RET | BPF_K, 0, 0, SCMP_ACT_ALLOW);
}

/* The rules of add_clone_rules, add_personality_rules and add_mknod_rules */
static int emit_args_block(struct emitter *e, int nr, uint32_t dflt)
{
	static const uint32_t personalities[] = { 0x0, 0x8, 0x20000, 0x20008, 0xffffffffu };
	static const uint32_t node_types[] = { 0, S_IFIFO, S_IFREG, S_IFSOCK };

	if (nr == __NR_clone) {
		/* any namespace flag: EPERM (they are all in the low word) */
		put(e, BPF_LD | BPF_W | BPF_ABS, 0, 0, ARG_LO(0));
		put(e, BPF_JMP | BPF_JSET | BPF_K, 0, 1, NS_FLAGS);
		put(e, BPF_RET | BPF_K, 0, 0, SCMP_ACT_ERRNO(EPERM));
		put(e, BPF_RET | BPF_K, 0, 0, SCMP_ACT_ALLOW);
	} else if (nr == __NR_personality) {
		emit_one_of(e, 0, 0xffffffffu, personalities, ARRAY_SIZE(personalities), dflt);
	} else if (nr == __NR_mknod) {
		emit_one_of(e, 1, S_IFMT, node_types, ARRAY_SIZE(node_types),
			    SCMP_ACT_ERRNO(EPERM));
	} else if (nr == __NR_mknodat) {
		emit_one_of(e, 2, S_IFMT, node_types, ARRAY_SIZE(node_types),
			    SCMP_ACT_ERRNO(EPERM));
	} else {
		return -ENOTSUP; /* a new argument rule: write it out above */
	}
	return 0;
}

/* The runs [i, j): a comparison with the middle run's first number, the
 * lower half next, the upper half after it. */
static int emit_tree(struct emitter *e, const struct run *runs, size_t i, size_t j, uint32_t dflt)
{
	size_t m;
	unsigned at;
	int r;

	if (j - i == 1) {
		if (runs[i].nr < 0) {
			put(e, BPF_RET | BPF_K, 0, 0, runs[i].action);
			return 0;
		}
		return emit_args_block(e, runs[i].nr, dflt);
	}
	m = i + (j - i) / 2;
	at = e->n;
	put(e, BPF_JMP | BPF_JGE | BPF_K, 0, 0, runs[m].lo);
	r = emit_tree(e, runs, i, m, dflt);
	if (r < 0)
		return r;
	/* jt: over the lower half */
	if (e->n - at - 1 > 255)
		e->too_far = true;
	else if (at < e->cap)
		e->in[at].jt = (uint8_t)(e->n - at - 1);
	return emit_tree(e, runs, m, j, dflt);
}

static uint32_t verdict(const struct sock_fprog *ref, uint32_t arch, uint32_t nr, bool *read_args)
{
	struct seccomp_data d = { .nr = (int)nr, .arch = arch };

	return sandbox_bpf_run(ref, &d, read_args);
}

/* The generator's own check, before the program is written out: both
 * programs, on every number and argument value where a comparison in
 * either can change the verdict (each constant, one below, one above)
 * and for every call number up to NR_SCAN, give the same verdict, and
 * one the interpreter knows.  -EPROTO if not (the build stops). */
static int same_verdicts(const struct sock_fprog *ref, const struct sock_fprog *got)
{
	static const uint32_t arches[] = { AUDIT_ARCH_X86_64, AUDIT_ARCH_I386, AUDIT_ARCH_AARCH64,
					   0, 0xffffffffu };
	/* room for every jump of two programs of the largest size */
	static uint32_t nums[2 * 3 * BPF_MAXINSNS + NR_SCAN + 8];
	size_t n = 0;

	n += sandbox_bpf_constants(ref, nums + n, ARRAY_SIZE(nums) - n - NR_SCAN - 8);
	n += sandbox_bpf_constants(got, nums + n, ARRAY_SIZE(nums) - n - NR_SCAN - 8);
	for (uint32_t nr = 0; nr <= NR_SCAN; nr++)
		nums[n++] = nr;
	nums[n++] = 0xffffffffu;
	nums[n++] = X32_BIT;
	for (size_t a = 0; a < ARRAY_SIZE(arches); a++)
		for (size_t i = 0; i < n; i++) {
			struct seccomp_data d = { .nr = (int)nums[i], .arch = arches[a] };
			bool ref_args, got_args;
			uint32_t want = sandbox_bpf_run(ref, &d, &ref_args);

			if (want == SANDBOX_BPF_BAD || sandbox_bpf_run(got, &d, &got_args) != want)
				return -EPROTO;
			if (!ref_args && !got_args)
				continue;
			/* each argument through the constants, its high word 0
			 * and all ones, the others 0 */
			for (int k = 0; k < 6; k++)
				for (size_t v = 0; v < n; v++)
					for (int hi = 0; hi < 2; hi++) {
						struct seccomp_data da = d;

						da.args[k] =
							(hi ? 0xffffffff00000000ull : 0) | nums[v];
						want = sandbox_bpf_run(ref, &da, NULL);
						if (want == SANDBOX_BPF_BAD ||
						    sandbox_bpf_run(got, &da, NULL) != want)
							return -EPROTO;
					}
		}
	return 0;
}

static int compact(const struct sock_fprog *ref, struct sock_fprog **ret)
{
	static const uint32_t x32_probes[] = { X32_BIT, X32_BIT + 1, 0x7fffffffu, 0x80000000u,
					       0xfffffffeu };
	static const uint32_t high_probes[] = { NR_SCAN, NR_SCAN + 1, 0x10000, X32_BIT - 1 };
	struct run runs[NR_SCAN + 1];
	struct emitter e = { 0 };
	size_t n = 0;
	uint32_t dflt, x32, minus1, badarch;
	struct sock_fprog *prog;
	int r;

	/* the numbers past the table, x32's and -1, other architectures:
	 * one verdict each, or this shape does not fit */
	dflt = verdict(ref, AUDIT_ARCH_X86_64, NR_SCAN, NULL);
	for (size_t i = 0; i < ARRAY_SIZE(high_probes); i++)
		if (verdict(ref, AUDIT_ARCH_X86_64, high_probes[i], NULL) != dflt)
			return -ENOTSUP;
	x32 = verdict(ref, AUDIT_ARCH_X86_64, X32_BIT, NULL);
	for (size_t i = 0; i < ARRAY_SIZE(x32_probes); i++)
		if (verdict(ref, AUDIT_ARCH_X86_64, x32_probes[i], NULL) != x32)
			return -ENOTSUP;
	minus1 = verdict(ref, AUDIT_ARCH_X86_64, 0xffffffffu, NULL);
	badarch = verdict(ref, AUDIT_ARCH_I386, 0, NULL);
	if (verdict(ref, 0, 0, NULL) != badarch ||
	    verdict(ref, AUDIT_ARCH_AARCH64, 0, NULL) != badarch)
		return -ENOTSUP;
	/* the last run, from NR_SCAN, is the default's up to x32's numbers */
	for (uint32_t nr = 0; nr <= NR_SCAN; nr++) {
		bool args;
		uint32_t v = verdict(ref, AUDIT_ARCH_X86_64, nr, &args);

		if (nr == NR_SCAN || args || n == 0 || runs[n - 1].nr >= 0 ||
		    runs[n - 1].action != v)
			runs[n++] = (struct run){ nr, v, args ? (int)nr : -1 };
	}
	/* twice: to count, then to write */
	for (int pass = 0; pass < 2; pass++) {
		e.n = 0;
		e.too_far = false;
		put(&e, BPF_LD | BPF_W | BPF_ABS, 0, 0, offsetof(struct seccomp_data, arch));
		put(&e, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, AUDIT_ARCH_X86_64);
		put(&e, BPF_RET | BPF_K, 0, 0, badarch);
		put(&e, BPF_LD | BPF_W | BPF_ABS, 0, 0, offsetof(struct seccomp_data, nr));
		put(&e, BPF_JMP | BPF_JGE | BPF_K, 0, 3, X32_BIT);
		put(&e, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0xffffffffu);
		put(&e, BPF_RET | BPF_K, 0, 0, minus1);
		put(&e, BPF_RET | BPF_K, 0, 0, x32);
		r = emit_tree(&e, runs, 0, n, dflt);
		if (r < 0 || e.too_far || e.n > BPF_MAXINSNS) {
			free(e.in);
			return r < 0 ? r : -E2BIG;
		}
		if (pass == 0) {
			e.cap = e.n;
			e.in = calloc(e.n, sizeof(*e.in));
			if (!e.in)
				return -ENOMEM;
		}
	}
	prog = malloc(sizeof(*prog));
	if (!prog) {
		free(e.in);
		return -ENOMEM;
	}
	prog->filter = e.in;
	prog->len = (unsigned short)e.n;
	r = same_verdicts(ref, prog);
	if (r < 0) {
		sandbox_seccomp_free(prog);
		return r;
	}
	*ret = prog;
	return 0;
}
#endif

int sandbox_seccomp_build(int which, struct sock_fprog **ret)
{
#ifdef __x86_64__
	struct sock_fprog *ref;
	int r;

	if (which != SECCOMP_MAIN)
		return sandbox_seccomp_build_reference(which, ret);
	r = sandbox_seccomp_build_reference(which, &ref);
	if (r < 0)
		return r;
	r = compact(ref, ret);
	sandbox_seccomp_free(ref);
	return r;
#else
	return sandbox_seccomp_build_reference(which, ret);
#endif
}

int sandbox_seccomp_build_reference(int which, struct sock_fprog **ret)
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
