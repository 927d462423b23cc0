/* The child side: the init (PID 1 of the new namespaces) and the worker
 * it forks, which becomes the program.  Everything here runs between
 * clone and exec: no allocation, no stdio; a failed step is reported as
 * {step, errno} on the socket and the process _exits (git's child_err,
 * bubblewrap's SetupOp). */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <net/if.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <linux/mount.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <grp.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/egress.h"
#include "sandbox/internal.h"
#include "sandbox/landlock.h"
#include "sandbox/seccomp.h"
#include "util/fs.h"
#include "util/banned.h"

/* Where the new root is assembled, inside our private mount namespace
 * (the tmpfs over it is invisible to the host). */
#define NEWROOT "/tmp"

static void send_msg(int sock, int kind, int step, int err, int wstatus)
{
	struct msg m = { kind, step, err, wstatus };

	(void)!send(sock, &m, sizeof(m), MSG_NOSIGNAL);
}

__attribute__((noreturn)) static void fail(const struct child_ctx *c, int step, int err)
{
	send_msg(c->sock, MSG_SETUP_ERROR, step, err < 0 ? -err : err, 0);
	_exit(127);
}

static int wait_byte(int sock)
{
	char b;
	ssize_t n;

	do
		n = recv(sock, &b, 1, 0);
	while (n < 0 && errno == EINTR);
	return n == 1 ? 0 : (n == 0 ? -EPIPE : -errno);
}

/* The supervisor's "go", with the v1 cgroup "tasks" files it opened
 * for us: writing "0" moves this thread (all of us: the init has one)
 * into each, without the global lock a move by pid takes (cgroup.h).
 * The fds were opened by the supervisor, whose credentials the kernel
 * checks, and are closed before anything else runs here (keep: kept
 * open there instead, *n_keep of them, for the worker, which joins them
 * too: pass_cgroups).  *ret_kind: the message's byte ("G": go, the
 * cgroups come later, join_late). */
static int wait_go_keep(int sock, char *ret_kind, int *keep, size_t *n_keep)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * _CGROUP_CTRL_MAX)];
		struct cmsghdr align;
	} u;
	char b;
	struct iovec iov = { &b, 1 };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm;
	ssize_t n;
	int r = 0;

	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		size_t k;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (r == 0 && write(fd, "0", 1) != 1)
				r = -errno;
			if (keep && *n_keep < _CGROUP_CTRL_MAX)
				keep[(*n_keep)++] = fd;
			else
				close(fd);
		}
	}
	if (r < 0)
		return r;
	if (mh.msg_flags & MSG_CTRUNC)
		return -EBADMSG;
	*ret_kind = b;
	return n == 1 ? 0 : -EPIPE;
}

static int wait_go(int sock, char *ret_kind)
{
	return wait_go_keep(sock, ret_kind, NULL, NULL);
}

/* Join the cgroups the supervisor made while we built the root, then
 * unshare the cgroup namespace (it needs us in our cgroup) before the
 * root's cgroup mounts (rootfs.c, n_early), so before anything of the
 * sandbox's runs: the worker, and all it forks, is always inside the
 * limits.  Until then the init's own set-up is charged to the
 * supervisor's cgroups: one process, its namespaces and at most the
 * root's 1 MiB tmpfs (rootfs.c), whatever the sandbox will run. */
static void join_late(struct child_ctx *c, int *keep, size_t *n_keep)
{
	char kind = 0;
	int r = wait_go_keep(c->sock, &kind, keep, n_keep);

	if (r < 0)
		fail(c, r == -EPIPE || r == -EBADMSG ? STEP_SYNC : STEP_CGROUP, r);
	if (kind != 'c')
		fail(c, STEP_SYNC, -EBADMSG);
	if (unshare(CLONE_NEWCGROUP) < 0)
		fail(c, STEP_CGROUP_NS, -errno);
}

static int loopback_up(void)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int r = 0;

	if (fd < 0)
		return -errno;
	strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		r = -errno;
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (r == 0 && ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		r = -errno;
	close(fd);
	return r;
}

static int pivot(void)
{
	/* pivot_root(".", ".") stacks the old root under the new one; the
	 * detach then drops it (pivot_root(2), "NOTES"). */
	if (chdir(NEWROOT) < 0)
		return -errno;
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		return -errno;
	if (umount2(".", MNT_DETACH) < 0)
		return -errno;
	if (chdir("/") < 0)
		return -errno;
	return 0;
}

/* The root itself read-only, once every file of /etc is in it: only
 * /tmp and the workspace are writable. */
static int root_read_only(void)
{
	if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) <
	    0)
		return -errno;
	return 0;
}

/* Append "name -SECS 0\n" to out at *len: a negative offset of secs (no
 * stdio here). */
static void put_offset(char *out, size_t *len, const char *name, long long secs)
{
	char digits[24];
	int n = 0;

	while (*name)
		out[(*len)++] = *name++;
	out[(*len)++] = ' ';
	if (secs > 0)
		out[(*len)++] = '-';
	do
		digits[n++] = (char)('0' + secs % 10);
	while ((secs /= 10) > 0 && n < (int)sizeof(digits));
	while (n > 0)
		out[(*len)++] = digits[--n];
	memcpy(out + *len, " 0\n", 3);
	*len += 3;
}

/* A time namespace whose clocks start at 0: the host's CLOCK_MONOTONIC
 * and CLOCK_BOOTTIME (and /proc/uptime, and btime, which the kernel
 * shifts by the same offset) are its uptime, which tells when it booted
 * and lets two sandboxes learn that they share it.  Our children enter
 * it (time_namespaces(7)); the offsets must be written before they do. */
static int time_ns(void)
{
	struct timespec mono, boot;
	char text[128];
	size_t len = 0;
	int fd, r = 0;

	/* EINVAL: a kernel without time namespaces (CONFIG_TIME_NS, 5.6):
	 * the clocks stay the host's, as before */
	if (unshare(CLONE_NEWTIME) < 0)
		return errno == EINVAL ? 0 : -errno;
	if (clock_gettime(CLOCK_MONOTONIC, &mono) < 0 || clock_gettime(CLOCK_BOOTTIME, &boot) < 0)
		return -errno;
	put_offset(text, &len, "monotonic", (long long)mono.tv_sec);
	put_offset(text, &len, "boottime", (long long)boot.tv_sec);
	/* the uid change made us non-dumpable, which gives our /proc files
	 * to root; we turn that off again before anything else runs */
	(void)prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	fd = open("/proc/self/timens_offsets", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len)
		r = errno ? -errno : -EIO;
	close(fd);
	return r;
}

/* A message with one fd (SCM_RIGHTS); the fd is ours and is closed. */
static int send_fd(int sock, int kind, int fd)
{
	struct msg m = { kind, 0, 0, 0 };
	int r = send_with_fds(sock, &m, sizeof(m), &fd, 1);

	close(fd);
	return r;
}

/* The one-shot's script into the workspace, as the sandbox user (its
 * owner, like everything the program makes there).  A stack buffer: no
 * allocation in the init. */
static int write_script(const struct child_ctx *c)
{
	char chunk[16384];
	off_t off = 0;
	ssize_t n;
	int dir, fd, r = 0;

	dir = open(SANDBOX_HOME, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return -errno;
	fd = openat(dir, c->cfg->script_name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		    0644);
	r = fd < 0 ? -errno : 0;
	close(dir);
	while (r == 0 && (n = pread(c->fd_script, chunk, sizeof(chunk), off)) != 0) {
		if (n < 0) {
			r = errno == EINTR ? 0 : -errno;
			continue;
		}
		for (ssize_t done = 0, w; r == 0 && done < n; done += w)
			if ((w = write(fd, chunk + done, (size_t)(n - done))) < 0)
				r = -errno;
		off += n;
	}
	if (fd >= 0)
		close(fd);
	return r;
}

/* egress.h; here since the init calls it (cell.so has no egress.c) */
int egress_listen_here(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(EGRESS_PORT),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1, fd, r;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(fd, 64) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

static int send_workspace(int sock, int upper, int egress)
{
	int fd, r;

	if (egress >= 0 && (r = send_fd(sock, MSG_EGRESS, egress)) < 0) {
		if (upper >= 0)
			close(upper);
		return r;
	}
	if (upper >= 0 && (r = send_fd(sock, MSG_UPPER, upper)) < 0)
		return r;
	fd = open(SANDBOX_HOME, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : send_fd(sock, MSG_READY, fd);
}

/* The layers live in the workspace's tmpfs (so its size caps what the
 * program can change), under the overlay mounted over it: the program
 * never sees them.  Names relative to the new root (our cwd). */
#define LAYER_LOWER "home/user/.lower"
#define LAYER_UPPER "home/user/.upper"
#define LAYER_WORK "home/user/.work"

/* Mount an overlay of the project (fd_lower) on the workspace; returns an
 * O_PATH fd of the upper layer, or -errno.  userxattr: in a user
 * namespace overlayfs keeps its whiteouts and opaque marks in user.*
 * xattrs (tmpfs has them since Linux 6.6), and then only with
 * redirect_dir=nofollow and without metacopy, its defaults there: a
 * copy-up copies the whole file, and a renamed lower directory is copied
 * (EXDEV to rename(2), which mv handles), so the upper layer alone says
 * what changed. */
static int project_overlay(struct child_ctx *c)
{
	int fs, mnt, upper, r = 0;

	if (mkdir(LAYER_LOWER, 0700) < 0 || mkdir(LAYER_UPPER, 0755) < 0 ||
	    mkdir(LAYER_WORK, 0700) < 0)
		return -errno;
	if (c->lower_is_mount) {
		if (syscall(SYS_move_mount, c->fd_lower, "", AT_FDCWD, LAYER_LOWER,
			    MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return -errno;
	} else {
		char path[40] = "/proc/self/fd/";
		size_t len = strlen(path);
		int n = c->fd_lower, d = 1;

		while (n / d >= 10)
			d *= 10;
		for (; d > 0; d /= 10)
			path[len++] = (char)('0' + n / d % 10);
		path[len] = '\0';
		unsigned long keep = 0;
		struct statvfs sv;

		if (mount(path, LAYER_LOWER, NULL, MS_BIND, NULL) < 0)
			return -errno;
		/* in a user namespace a remount must keep the flags the
		 * source's mount has locked (noexec, the atime mode) */
		if (statvfs(LAYER_LOWER, &sv) == 0)
			keep = (sv.f_flag & ST_NOEXEC ? MS_NOEXEC : 0) |
			       (sv.f_flag & ST_NOATIME ? MS_NOATIME : 0) |
			       (sv.f_flag & ST_NODIRATIME ? MS_NODIRATIME : 0) |
			       (sv.f_flag & ST_RELATIME ? MS_RELATIME : 0);
		if (mount(NULL, LAYER_LOWER, NULL,
			  MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | keep, NULL) < 0)
			return -errno;
	}
	close(c->fd_lower);
	c->fd_lower = -1;
	upper = open(LAYER_UPPER, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (upper < 0)
		return -errno;
	fs = (int)syscall(SYS_fsopen, "overlay", FSOPEN_CLOEXEC);
	if (fs < 0)
		r = -errno;
	if (r == 0 &&
	    (syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "lowerdir+", LAYER_LOWER, 0) < 0 ||
	     syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "upperdir", LAYER_UPPER, 0) < 0 ||
	     syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "workdir", LAYER_WORK, 0) < 0 ||
	     syscall(SYS_fsconfig, fs, FSCONFIG_SET_FLAG, "userxattr", NULL, 0) < 0 ||
	     syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0))
		r = -errno;
	mnt = r == 0 ? (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC,
				    MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)
		     : -1;
	if (r == 0 && mnt < 0)
		r = -errno;
	if (r == 0 && syscall(SYS_move_mount, mnt, "", AT_FDCWD, &SANDBOX_HOME[1],
			      MOVE_MOUNT_F_EMPTY_PATH) < 0)
		r = -errno;
	if (mnt >= 0)
		close(mnt);
	if (fs >= 0)
		close(fs);
	if (r < 0) {
		close(upper);
		return r;
	}
	return upper;
}

/* ---- the worker: becomes the program ---- */

static int reset_signals(void)
{
	struct sigaction sa = { .sa_handler = SIG_DFL };
	sigset_t all;

	for (int s = 1; s < _NSIG; s++)
		(void)sigaction(s, &sa, NULL); /* EINVAL for KILL/STOP */
	sigemptyset(&all);
	return sigprocmask(SIG_SETMASK, &all, NULL) < 0 ? -errno : 0;
}

static int setup_fds(struct child_ctx *c)
{
	const struct sandbox_config *cfg = c->cfg;
	int src[3 + SANDBOX_MAX_PASS_FDS];
	int n = 3 + (int)cfg->n_pass_fds;
	int devnull = -1;

	if (c->fd_stdin < 0) {
		devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (devnull < 0)
			return -errno;
	}
	src[0] = c->fd_stdin < 0 ? devnull : c->fd_stdin;
	src[1] = c->fd_stdout;
	src[2] = c->fd_stderr;
	for (size_t i = 0; i < cfg->n_pass_fds; i++)
		src[3 + i] = c->fd_pass[i];
	/* Move the sources out of the target range first so dup2 never
	 * clobbers a source still to be copied; the report socket too, so
	 * a later step can still report on it. */
	for (int i = 0; i < n; i++) {
		src[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 64);
		if (src[i] < 0)
			return -errno;
	}
	c->sock = fcntl(c->sock, F_DUPFD_CLOEXEC, 64);
	if (c->sock < 0)
		return -errno;
	for (int i = 0; i < n; i++)
		if (dup2(src[i], i) < 0) /* dup2 clears CLOEXEC on the target */
			return -errno;
	/* Everything else closes at exec, the report socket included; it
	 * stays usable until then. */
	if (close_range((unsigned)n, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		return -errno;
	return 0;
}

static int set_ids(const struct child_ctx *c)
{
	/* Raw calls, not glibc's: those apply the change to every thread
	 * glibc knows of and wait for each, and the init is a clone() of a
	 * supervisor that may have many threads (a server): glibc's list
	 * still names them, and the wait never ends. */
	if (c->set_groups && syscall(SYS_setgroups, 0, NULL) < 0)
		return -errno;
	if (syscall(SYS_setresgid, SANDBOX_GID, SANDBOX_GID, SANDBOX_GID) < 0)
		return -errno;
	if (syscall(SYS_setresuid, SANDBOX_UID, SANDBOX_UID, SANDBOX_UID) < 0)
		return -errno;
	return 0;
}

static int set_rlimits(const struct child_ctx *c)
{
	struct rlimit zero = { 0, 0 };

	if (setrlimit(RLIMIT_CORE, &zero) < 0)
		return -errno;
	if (c->has_fsize && setrlimit(RLIMIT_FSIZE, &c->rl_fsize) < 0)
		return -errno;
	if (c->has_nofile && setrlimit(RLIMIT_NOFILE, &c->rl_nofile) < 0)
		return -errno;
	if (c->has_cpu && setrlimit(RLIMIT_CPU, &c->rl_cpu) < 0)
		return -errno;
	/* fallbacks when no cgroup: per process, not per tree */
	if (c->has_data && setrlimit(RLIMIT_DATA, &c->rl_data) < 0)
		return -errno;
	if (c->has_nproc && setrlimit(RLIMIT_NPROC, &c->rl_nproc) < 0)
		return -errno;
	return 0;
}

/* The bounding and ambient sets go first, while we still hold
 * CAP_SETPCAP; the ids change next (needs CAP_SETUID); then the rest. */
static int drop_bounding_caps(void)
{
	/* EINVAL: past the kernel's last capability, and so are the rest */
	for (int cap = 0; cap <= 63; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
			if (errno == EINVAL)
				break;
			return -errno;
		}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;
	return 0;
}

static int drop_caps(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { { 0 } };

	/* The creator of a user namespace is not its uid 0, so setresuid()
	 * did not clear the sets: clear them explicitly. */
	return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
}

/* What a template needs to build cells, in its own user namespace only:
 * unshare, mount and pivot_root (SYS_ADMIN), loopback up (NET_ADMIN),
 * dropping supplementary groups (SETGID) and the bounding set (SETPCAP),
 * the sandbox ids (SETUID). */
static const int template_caps[] = { CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_SETUID, CAP_SETGID,
				     CAP_SETPCAP };

static bool is_template_cap(int cap)
{
	for (size_t i = 0; i < sizeof(template_caps) / sizeof(template_caps[0]); i++)
		if (template_caps[i] == cap)
			return true;
	return false;
}

/* The template's worker: a bounding set of template_caps only, and the
 * same in the permitted, effective, inheritable and ambient sets, since
 * uid 1000 loses everything else at exec (capabilities(7)). */
static int keep_template_caps(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { { 0 } };

	for (int cap = 0; cap <= 63; cap++)
		if (!is_template_cap(cap) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 &&
		    errno != EINVAL)
			return -errno;
	for (size_t i = 0; i < sizeof(template_caps) / sizeof(template_caps[0]); i++) {
		unsigned bit = 1u << (template_caps[i] % 32);

		d[template_caps[i] / 32].permitted |= bit;
		d[template_caps[i] / 32].effective |= bit;
		d[template_caps[i] / 32].inheritable |= bit;
	}
	if (syscall(SYS_capset, &h, d) < 0)
		return -errno;
	for (size_t i = 0; i < sizeof(template_caps) / sizeof(template_caps[0]); i++)
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, template_caps[i], 0, 0) < 0)
			return -errno;
	return 0;
}

/* The worker's steps up to the exec (or, for a cell, the return into the
 * template's code).  early: the root is not built yet (worker_early,
 * below), so the steps that need it (the working directory, Landlock's
 * paths) are left for after the init's word; the seccomp filter, which
 * allows those, goes on now. */
static void worker_lockdown(struct child_ctx *c, bool early)
{
	int r;

	/* a cell keeps the template's handlers (Python's own SIGINT handler
	 * is how the kernel interrupts a cell); only the mask is reset */
	if (c->mode != CHILD_CELL && (r = reset_signals()) < 0)
		fail(c, STEP_SIGNALS, r);
	if (c->mode == CHILD_CELL) {
		sigset_t none;

		sigemptyset(&none);
		(void)sigprocmask(SIG_SETMASK, &none, NULL);
	}
	if (setsid() < 0)
		fail(c, STEP_SETSID, -errno);
	if ((r = setup_fds(c)) < 0)
		fail(c, STEP_FDS, r);
	if ((r = set_rlimits(c)) < 0)
		fail(c, STEP_RLIMITS, r);
	if (!early && chdir(c->cwd ? c->cwd : SANDBOX_HOME) < 0)
		fail(c, STEP_CHDIR, -errno);
	if (c->mode == CHILD_TEMPLATE) {
		if ((r = set_ids(c)) < 0)
			fail(c, STEP_IDS, r);
		if ((r = keep_template_caps()) < 0)
			fail(c, STEP_CAPS, r);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			fail(c, STEP_NO_NEW_PRIVS, -errno);
		return;
	}
	if ((r = drop_bounding_caps()) < 0)
		fail(c, STEP_CAPS, r);
	if ((r = set_ids(c)) < 0)
		fail(c, STEP_IDS, r);
	if ((r = drop_caps()) < 0)
		fail(c, STEP_CAPS, r);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		fail(c, STEP_NO_NEW_PRIVS, -errno);
	if (!early && (r = sandbox_landlock_apply(SANDBOX_HOME)) < 0)
		fail(c, STEP_LANDLOCK, r);
	/* seccomp last: everything above needs calls the filter denies */
	if ((r = sandbox_seccomp_load(c->seccomp, SANDBOX_SECCOMP_N)) < 0)
		fail(c, STEP_SECCOMP, r);
	if (c->mode == CHILD_CELL) {
		/* no exec to close what was marked close-on-exec: the
		 * template's fds (its control socket above all) and the report
		 * socket go now */
		if (close_range(3 + (unsigned)c->cfg->n_pass_fds, ~0U, 0) < 0)
			fail(c, STEP_FDS, -errno);
	}
}

__attribute__((noreturn)) static void worker_main(struct child_ctx *c)
{
	worker_lockdown(c, false);
	execve(c->argv[0], c->argv, c->envp);
	fail(c, STEP_EXEC, -errno);
}

/* A program's worker (CHILD_EXEC) is forked as soon as the init has
 * mounted the new root's tmpfs (in its time namespace, and on cgroup v2
 * in its cgroups), and does on a CPU other than the init's what needs
 * no mount, while the init mounts (worker_prepare):
 *  - it makes the sandbox's network namespace and brings loopback up:
 *    most of what a clone with CLONE_NEWNET costs, about 0.3 ms, which
 *    the supervisor waited for.  It still has its capabilities in the
 *    sandbox's user namespace, which owns the new one;
 *  - it writes the files of /etc (rootfs_apply_etc_files), about 0.3 ms
 *    in all: the two share them out file by file, and the init, done
 *    with its mounts, takes the ones the worker has not come to;
 *  - on cgroup v1 with late cgroups (go "G"), it was forked before the
 *    init joined them: the init passes it the "tasks" files it was
 *    given, and it joins them itself (writing "0", as the init did) and
 *    enters the init's new cgroup namespace, before anything else;
 * then says so with one byte.  The init, in the new root by then
 * (pivot), waits for that byte before it makes the root read-only (the
 * files must be in it first) and joins the network namespace (join_worker; the worker sends an fd of
 * it, and the init sends the worker one of its cgroup namespace), before the egress proxy's
 * socket is made: every process of the sandbox is in that namespace
 * before the program starts.
 *
 * Then the worker goes through its lockdown, seccomp included (the
 * resets and the filter's load, about 0.3 ms).  The init gives it the
 * CPUs outside the pin for all this (the pin would keep it queued
 * behind the init), and it takes the pin back before exec.  Then it
 * waits for the init's word that the root is finished (read-only,
 * masked, the program's file written) and, where autostart is off,
 * that the supervisor said start: only then its working directory,
 * Landlock, and exec.  A failure in the worker is reported by the
 * worker; the init then reads end-of-file and exits too.  An init that
 * fails exits, and its PID namespace's end kills the worker with it;
 * end-of-file instead of the word means the same. */
/* The other side's byte of kind want, with one fd: 0, -EPIPE at
 * end-of-file, -EBADMSG for another message. */
static int recv_kind_fd(int sock, char want, int *ret_fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	char kind = 0;
	struct iovec iov = { &kind, 1 };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm;
	ssize_t n;
	int fd = -1;

	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -EPIPE;
	cm = CMSG_FIRSTHDR(&mh);
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
	    cm->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	if (kind != want || fd < 0 || (mh.msg_flags & MSG_CTRUNC)) {
		if (fd >= 0)
			close(fd);
		return -EBADMSG;
	}
	*ret_fd = fd;
	return 0;
}

static void worker_prepare(struct child_ctx *c, int chan, bool late_cgroups, unsigned *etc_next)
{
	char kind = 0;
	int r, net, cgns;

	/* the project's directory is the init's to mount */
	if (c->fd_lower >= 0) {
		close(c->fd_lower);
		c->fd_lower = -1;
	}
	if (unshare(CLONE_NEWNET) < 0)
		fail(c, STEP_NET_NS, -errno);
	if (c->cfg->net != SANDBOX_NET_NONE && (r = loopback_up()) < 0)
		fail(c, STEP_LOOPBACK, r);
	/* an fd of it for the init: a setns() through our pidfd would ask
	 * whether it may ptrace us, which a root-run sandbox, made
	 * non-dumpable by its uid change, refuses.  /proc is the host's,
	 * or the sandbox's if the init has pivoted by now: either knows us
	 * as "self", and our own files are always ours to open. */
	net = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (net < 0)
		fail(c, STEP_NET_NS, -errno);
	/* our working directory is the new root's top, from the init: not
	 * a path, which its pivot() may have changed by now */
	r = rootfs_apply_etc_files(c->fs, etc_next, c->fd_host_root);
	close(c->fd_host_root);
	c->fd_host_root = -1;
	if (r < 0)
		fail(c, STEP_ROOTFS, r);
	if (late_cgroups) {
		if ((r = wait_go(chan, &kind)) < 0 || kind != 'c')
			fail(c, STEP_CGROUP, r < 0 ? r : -EBADMSG);
		if ((r = recv_kind_fd(chan, 'C', &cgns)) < 0)
			fail(c, STEP_CGROUP_NS, r);
		if (setns(cgns, CLONE_NEWCGROUP) < 0)
			fail(c, STEP_CGROUP_NS, -errno);
		close(cgns);
	}
	if ((r = send_with_fds(chan, "n", 1, &net, 1)) < 0)
		fail(c, STEP_SYNC, r);
	close(net);
}

/* The init's half: write the files of /etc the worker has not come
 * to, wait for its word and enter its network namespace. */
static void join_worker(struct child_ctx *c, int chan, unsigned *etc_next)
{
	int net, r;

	r = rootfs_apply_etc_files(c->fs, etc_next, c->fd_host_root);
	close(c->fd_host_root);
	c->fd_host_root = -1;
	if (r < 0)
		fail(c, STEP_ROOTFS, r);
	(void)munmap(etc_next, sizeof(*etc_next));
	r = recv_kind_fd(chan, 'n', &net);
	if (r == -EPIPE)
		_exit(127); /* the worker has reported why */
	if (r < 0)
		fail(c, STEP_NET_JOIN, r);
	if (setns(net, CLONE_NEWNET) < 0)
		fail(c, STEP_NET_JOIN, -errno);
	close(net);
}

/* The init's half of the v1 cgroups: give the worker the "tasks" files
 * we joined (join_late), then close ours, and an fd of our new cgroup
 * namespace (for the same reason as worker_prepare's of its network). */
static void pass_cgroups(struct child_ctx *c, int chan, int *fds, size_t n_fds)
{
	int r = send_with_fds(chan, "c", 1, fds, n_fds), cgns;

	for (size_t i = 0; i < n_fds; i++)
		close(fds[i]);
	if (r < 0)
		fail(c, STEP_SYNC, r);
	cgns = open("/proc/self/ns/cgroup", O_RDONLY | O_CLOEXEC);
	if (cgns < 0)
		fail(c, STEP_CGROUP_NS, -errno);
	r = send_with_fds(chan, "C", 1, &cgns, 1);
	close(cgns);
	if (r < 0)
		fail(c, STEP_SYNC, r);
}

__attribute__((noreturn)) static void worker_early(struct child_ctx *c, int chan, bool late_cgroups,
						   unsigned *etc_next)
{
	/* asked before the filter: Landlock comes after it here, and a
	 * filter built with a libseccomp that does not know its calls would
	 * make it look absent (seccomp_policy.c adds them by number too) */
	int landlock = sandbox_landlock_abi();
	char b;
	ssize_t n;
	int r;

	worker_prepare(c, chan, late_cgroups, etc_next);
	worker_lockdown(c, true);
	do
		n = recv(chan, &b, 1, 0);
	while (n < 0 && errno == EINTR);
	if (n != 1)
		_exit(127);
	close(chan);
	/* a stdin of /dev/null was opened before the root existed: the
	 * sandbox's own, as the program would open it */
	if (c->fd_stdin < 0) {
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (null < 0 || dup2(null, 0) < 0)
			fail(c, STEP_FDS, -errno);
		close(null);
	}
	/* our working directory is the new root (worker_prepare), but
	 * start from "/" all the same: a relative cwd is under it */
	if (chdir("/") < 0 || chdir(c->cwd ? c->cwd : SANDBOX_HOME) < 0)
		fail(c, STEP_CHDIR, -errno);
	r = sandbox_landlock_apply(SANDBOX_HOME);
	if (r == 0 && landlock > 0)
		r = -ENOSYS; /* the kernel has it and we could not reach it */
	if (r < 0)
		fail(c, STEP_LANDLOCK, r);
	if (c->fs->n_cpus)
		(void)sched_setaffinity(0, sizeof(c->fs->cpus), &c->fs->cpus);
	execve(c->argv[0], c->argv, c->envp);
	fail(c, STEP_EXEC, -errno);
}

/* The init's half: fork the worker now (see worker_prepare); *ret_chan
 * is our end of the socket pair between us (its word, the cgroups, our
 * word that lets it go on), *ret_etc_next the count of files of /etc
 * taken, in a page we share (rootfs_apply_etc_files). */
static pid_t fork_worker_early(struct child_ctx *c, bool late_cgroups, int *ret_chan,
			       unsigned **ret_etc_next)
{
	unsigned *etc_next;
	int sv[2];
	pid_t w;

	etc_next = mmap(NULL, sizeof(*etc_next), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			-1, 0);
	if (etc_next == MAP_FAILED)
		fail(c, STEP_FORK, -errno);
	*etc_next = 0;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		fail(c, STEP_FORK, -errno);
	w = _Fork(); /* no atfork handlers: their locks may be held (see set_ids) */
	if (w < 0)
		fail(c, STEP_FORK, -errno);
	if (w == 0) {
		close(sv[0]);
		worker_early(c, sv[1], late_cgroups, etc_next);
	}
	close(sv[1]);
	/* a lone sandbox's CPU is the caller's (cpus.c), where the scheduler
	 * has room now: the worker goes there at once and execs there, and
	 * we stay unpinned.  Otherwise off our CPU: a new task starts where
	 * its parent runs, and the pin would keep it queued behind us until
	 * we sleep. */
	if (c->fs->n_cpus && c->lone_pin) {
		(void)sched_setaffinity(w, sizeof(c->fs->cpus), &c->fs->cpus);
	} else if (c->fs->n_cpus) {
		cpu_set_t others;

		/* of the CPUs the caller may use: not one the operator kept
		 * codecell off (taskset, CPUAffinity) */
		CPU_ZERO(&others);
		for (int i = 0; i < CPU_SETSIZE; i++)
			if (CPU_ISSET(i, &c->cpus_allowed) && !CPU_ISSET(i, &c->fs->cpus))
				CPU_SET(i, &others);
		if (CPU_COUNT(&others) > 0)
			(void)sched_setaffinity(w, sizeof(others), &others);
	}
	*ret_chan = sv[0];
	*ret_etc_next = etc_next;
	return w;
}

/* ---- the init ---- */

/* Keep exactly the fds the init needs (the report socket and what the
 * worker will get), renumbered to 3.., everything else closed: the init
 * must not hold the caller's files, terminal or pipe ends (runc
 * CVE-2024-21626).  Host stdio becomes /dev/null. */
static int keep_only_needed_fds(struct child_ctx *c)
{
	int *slots[3 + SANDBOX_MAX_PASS_FDS + 2];
	int tmp[3 + SANDBOX_MAX_PASS_FDS + 2];
	int n = 0, null;

	slots[n++] = &c->sock;
	slots[n++] = &c->fd_stdout;
	slots[n++] = &c->fd_stderr;
	if (c->fd_stdin >= 0)
		slots[n++] = &c->fd_stdin;
	for (size_t i = 0; i < c->cfg->n_pass_fds; i++)
		slots[n++] = &c->fd_pass[i];
	if (c->fd_script >= 0)
		slots[n++] = &c->fd_script;
	if (c->has_lower && c->fd_lower >= 0)
		slots[n++] = &c->fd_lower;
	/* above every target first, so no dup3 clobbers a source */
	for (int i = 0; i < n; i++) {
		tmp[i] = fcntl(*slots[i], F_DUPFD_CLOEXEC, 3 + n);
		if (tmp[i] < 0)
			return -errno;
	}
	for (int i = 0; i < n; i++) {
		if (dup3(tmp[i], 3 + i, O_CLOEXEC) < 0)
			return -errno;
		*slots[i] = 3 + i;
	}
	if (close_range((unsigned)(3 + n), ~0U, 0) < 0)
		return -errno;
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0)
		return -errno;
	for (int i = 0; i < 3; i++)
		if (dup3(null, i, O_CLOEXEC) < 0)
			return -errno;
	if (null > 2)
		close(null);
	return 0;
}

/* /proc/1/cmdline would show codecell's own command line (host paths,
 * --env values) to the program: zero our copy of the argument area,
 * found through /proc/self/stat (fields 48 and 49, arg_start/arg_end). */
static void scrub_cmdline(void)
{
	char stat[1024];
	unsigned long start = 0, end = 0;
	ssize_t n;
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	char *p;
	int field;

	if (fd < 0)
		return;
	n = read(fd, stat, sizeof(stat) - 1);
	close(fd);
	if (n <= 0)
		return;
	stat[n] = '\0';
	/* field 2 (comm) may hold spaces: count from its closing paren */
	p = strrchr(stat, ')');
	for (field = 2; p && *p && field < 48; p++)
		if (*p == ' ')
			field++;
	if (!p || field != 48)
		return;
	for (; *p >= '0' && *p <= '9'; p++)
		start = start * 10 + (unsigned long)(*p - '0');
	if (*p++ != ' ')
		return;
	for (; *p >= '0' && *p <= '9'; p++)
		end = end * 10 + (unsigned long)(*p - '0');
	if (start && end > start && end - start < (1ul << 24))
		memset((void *)start, 0, end - start);
}

/* The supervisor interrupts the program (a session's cell on timeout)
 * by signalling the init, which passes SIGINT on to the worker.  A
 * handler is what makes PID 1 receive the signal at all; it is
 * async-signal-safe (kill only). */
static volatile pid_t g_worker;

static void forward_sigint(int sig)
{
	if (g_worker > 0)
		kill(g_worker, sig);
}

/* SIGUSR1 from the supervisor: kill every process but the worker (a
 * session cell's fork bomb, say).  The handler only sets a flag; the
 * reap loop does the work when waitpid() returns EINTR. */
static volatile sig_atomic_t g_kill_strays;

static void want_kill_strays(int sig)
{
	(void)sig;
	g_kill_strays = 1;
}

static void install_forwarder(void)
{
	struct sigaction sa = { .sa_handler = forward_sigint, .sa_flags = SA_RESTART };
	struct sigaction su = { .sa_handler = want_kill_strays }; /* no SA_RESTART */
	sigset_t set;

	sigemptyset(&sa.sa_mask);
	sigemptyset(&su.sa_mask);
	(void)sigaction(SIGINT, &sa, NULL);
	(void)sigaction(SIGUSR1, &su, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	(void)sigprocmask(SIG_UNBLOCK, &set, NULL);
}

/* Whether pid is a child of worker that leads its own process group
 * (the fields after the command name in /proc/PID/stat: state, ppid,
 * pgrp).  A stack buffer: no allocation in the init. */
static bool leads_a_group_under(int dirfd, const char *name, pid_t pid, pid_t worker)
{
	char buf[512];
	long field[2] = { 0, 0 };
	ssize_t n;
	int fd, dir = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dir < 0)
		return false;
	fd = openat(dir, "stat", O_RDONLY | O_CLOEXEC);
	close(dir);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* the command name may hold anything, ')' too: the last one ends
	 * it; then " S ppid pgrp " */
	const char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2] || p[3] != ' ')
		return false;
	p += 4;
	for (int i = 0; i < 2; i++, p++) {
		if (*p < '0' || *p > '9')
			return false;
		for (; *p >= '0' && *p <= '9'; p++)
			field[i] = field[i] * 10 + (*p - '0');
		if (*p != ' ')
			return false;
	}
	return field[0] == worker && field[1] == pid;
}

/* Every pid in our /proc but ours and the worker's (and, with
 * keep_group_leaders, the worker's children that lead a process group)
 * gets SIGKILL.  getdents64 into a stack buffer: no allocation in the
 * init.  Repeated while any was found, since a fork bomb forks while we
 * kill. */
static void kill_strays(const struct child_ctx *c, pid_t worker)
{
	for (int round = 0; round < 64; round++) {
		char dents[8192];
		int fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		bool found = false;
		long n;

		if (fd < 0)
			return;
		while ((n = syscall(SYS_getdents64, fd, dents, sizeof(dents))) > 0) {
			for (long off = 0; off < n;) {
				struct {
					uint64_t ino;
					int64_t off;
					unsigned short reclen;
					unsigned char type;
					char name[];
				} *d = (void *)(dents + off);
				pid_t pid = 0;
				const char *name_end = d->name;

				for (; *name_end >= '0' && *name_end <= '9'; name_end++)
					pid = pid * 10 + (*name_end - '0');
				if (!*name_end && pid > 1 && pid != worker &&
				    !(c->keep_group_leaders &&
				      leads_a_group_under(fd, d->name, pid, worker))) {
					kill(pid, SIGKILL);
					found = true;
				}
				off += d->reclen;
			}
		}
		close(fd);
		if (!found)
			return;
	}
}

/* The program ended: kill what is left of the namespace and reap it
 * all, as the kernel would once we exit, but before the report, so that
 * the report means that nothing in the sandbox runs any more: the
 * supervisor can read the workspace and the output as final without
 * waiting for our own exit and the namespaces' teardown (sandbox_wait's
 * return_at_report).  We are the PID namespace's init: kill(-1) reaches
 * every process in it and no other, and every process whose parent dies
 * becomes our child, so waiting until ECHILD waits for all of them.  A
 * fork racing the kill is caught by the kernel (a group signal pending
 * restarts fork) and by the next round. */
static void end_namespace(void)
{
	for (int round = 0; round < 64; round++) {
		int st;

		if (kill(-1, SIGKILL) < 0 && errno == ESRCH)
			return; /* nothing left to signal */
		while (waitpid(-1, &st, __WALL) > 0 || errno == EINTR)
			;
	}
}

/* Reap what has ended.  Returns when nothing more has; exits when the
 * program (worker) ended (the kernel then kills whatever else is left in
 * the PID namespace), or for a template's init when no child is left. */
static void reap_ended(const struct child_ctx *c, pid_t *worker)
{
	for (;;) {
		int st;
		pid_t p = waitpid(-1, &st, __WALL | WNOHANG);

		if (p < 0 && errno == EINTR)
			continue;
		/* a template's init outlives the template while cells it
		 * made (reparented to us) live */
		if (p < 0 && errno == ECHILD && c->mode == CHILD_TEMPLATE && *worker == 0)
			_exit(0);
		if (p < 0)
			_exit(126);
		if (p == 0)
			return;
		if (p == *worker) {
			if (c->mode == CHILD_EXEC)
				end_namespace();
			send_msg(c->sock, MSG_EXITED, 0, 0, st);
			/* the report is final: the socket's end-of-file tells
			 * the supervisor so now, not once our exit has got as
			 * far as closing our files (about 0.3 ms later) */
			if (c->mode != CHILD_TEMPLATE) {
				close(c->sock);
				_exit(0);
			}
			*worker = 0;
			g_worker = 0;
		}
	}
}

/* Reap until the program ends, and end with the supervisor: its end of
 * the report socket closes when its process dies, however it dies.
 * (PR_SET_PDEATHSIG would fire when the thread that made the sandbox
 * exits, and a server makes them from threads that come and go.) */
__attribute__((noreturn)) static void reap_until(const struct child_ctx *c, pid_t worker)
{
	sigset_t chld;
	int sfd;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	(void)sigprocmask(SIG_BLOCK, &chld, NULL);
	sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		_exit(126);
	for (;;) {
		struct pollfd fds[2] = { { c->sock, POLLIN, 0 }, { sfd, POLLIN, 0 } };
		struct signalfd_siginfo si;
		char b;

		reap_ended(c, &worker);
		if (poll(fds, 2, -1) < 0 && errno != EINTR)
			_exit(126);
		if (g_kill_strays) {
			g_kill_strays = 0;
			kill_strays(c, worker);
		}
		if ((fds[0].revents & (POLLHUP | POLLERR)) ||
		    ((fds[0].revents & POLLIN) && recv(c->sock, &b, 1, MSG_DONTWAIT) == 0))
			_exit(125); /* the supervisor is gone: the namespace goes with us */
		while (read(sfd, &si, sizeof(si)) == sizeof(si))
			;
	}
}

/* The init's steps from the supervisor's "go" to its "start": the
 * cgroup namespace, the sandbox user, the new root, the network, the
 * hand-over of the workspace.  A program's worker (CHILD_EXEC) is forked
 * on the way, as soon as the init is in the sandbox's cgroups and time
 * namespace, and let go at the end: its pid, or 0 for the other modes
 * (the caller forks theirs). */
static pid_t init_build(struct child_ctx *c)
{
	int r, upper = -1, egress = -1, chan = -1;
	int join[_CGROUP_CTRL_MAX];
	unsigned *etc_next = NULL;
	size_t n_join = 0;
	bool early = c->mode == CHILD_EXEC;
	pid_t worker = 0;
	char go = 0;

	if ((r = wait_go(c->sock, &go)) < 0)
		fail(c, r == -EPIPE || r == -EBADMSG ? STEP_SYNC : STEP_CGROUP, r);
	/* Now in our cgroup: it becomes the root of the namespace's view. */
	if (go != 'G' && unshare(CLONE_NEWCGROUP) < 0)
		fail(c, STEP_CGROUP_NS, -errno);
	/* Become the sandbox user now: files we create in the new root must
	 * have a mapped owner (else EOVERFLOW), and host root is never
	 * mapped.  We keep our capabilities in the namespace: its creator
	 * is not its uid 0, so setresuid() does not clear them. */
	if ((r = set_ids(c)) < 0)
		fail(c, STEP_IDS, r);
	/* the worker is forked into the time namespace: it comes first
	 * (/proc is still the host's here, which knows us by our host pid) */
	if (early && (r = time_ns()) < 0)
		fail(c, STEP_TIME_NS, r);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		fail(c, STEP_MOUNT_PRIVATE, -errno);
	/* without root: the project as our namespace has it, before the new
	 * root's tmpfs can hide it (it may be under /tmp) */
	if (c->has_lower && !c->lower_is_mount &&
	    (c->fd_lower = open(c->cfg->project_dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		fail(c, STEP_PROJECT, -errno);
	/* the host's files of /etc are copied from here: pivot() takes them
	 * out of reach by path before the worker and we are done */
	if ((c->fd_host_root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		fail(c, STEP_ROOTFS, -errno);
	if (mount("tmpfs", NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV,
		  "mode=0755,size=1048576,nr_inodes=4096") < 0)
		fail(c, STEP_ROOTFS, -errno);
	/* the root's paths are relative to its top from here on, and the
	 * worker starts there too: it writes the files of /etc into it
	 * (worker_prepare) while we mount, and pivot() moves its root */
	if (chdir(NEWROOT) < 0)
		fail(c, STEP_ROOTFS, -errno);
	if (early)
		worker = fork_worker_early(c, go == 'G', &chan, &etc_next);
	if (go != 'G') {
		if ((r = rootfs_apply_ops(c->fs, 0, c->fs->n, early, c->fd_host_root)) < 0)
			fail(c, STEP_ROOTFS, r);
	} else {
		if ((r = rootfs_apply_ops(c->fs, 0, c->fs->n_early, early, c->fd_host_root)) < 0)
			fail(c, STEP_ROOTFS, r);
		join_late(c, early ? join : NULL, &n_join);
		if (early)
			pass_cgroups(c, chan, join, n_join);
		if ((r = rootfs_apply_ops(c->fs, c->fs->n_early, c->fs->n, early,
					  c->fd_host_root)) < 0)
			fail(c, STEP_ROOTFS, r);
	}
	/* ours are written (a program's worker and join_worker() write
	 * the rest, and close theirs) */
	if (!early) {
		close(c->fd_host_root);
		c->fd_host_root = -1;
	}
	if (c->has_lower && (upper = project_overlay(c)) < 0)
		fail(c, STEP_PROJECT, upper);
	/* Into the new root before the worker's word: dropping the old
	 * root waits for an RCU grace period (about 0.1 ms), which this
	 * overlaps with the worker's network namespace.  The worker's
	 * working directory is the new root's top, so its paths into /etc
	 * are the same before, during and after; pivot_root(2) moves its
	 * root, the old one, to the new. */
	if ((r = pivot()) < 0)
		fail(c, STEP_PIVOT_ROOT, r);
	/* a program's network namespace is its worker's, which we join
	 * once its files are in the root (before it is read-only); a
	 * template's came with the clone */
	if (early)
		join_worker(c, chan, etc_next);
	else if (c->cfg->net != SANDBOX_NET_NONE && (r = loopback_up()) < 0)
		fail(c, STEP_LOOPBACK, r);
	/* The egress proxy's socket is made here, in our network namespace,
	 * and handed to the supervisor, which serves it from its own: an
	 * ordinary user's codecell cannot enter this namespace (setns()
	 * takes CAP_SYS_ADMIN in its own user namespace too). */
	if (c->cfg->net == SANDBOX_NET_ALLOWLIST && (egress = egress_listen_here()) < 0)
		fail(c, STEP_EGRESS, egress);
	if (sethostname(SANDBOX_HOSTNAME, strlen(SANDBOX_HOSTNAME)) < 0 ||
	    setdomainname("(none)", 6) < 0)
		fail(c, STEP_HOSTNAME, -errno);
	if ((r = root_read_only()) < 0)
		fail(c, STEP_PIVOT_ROOT, r);
	if ((r = rootfs_apply_late(c->fs)) < 0)
		fail(c, STEP_ROOTFS, r);
	/* under a CPU quota: as many CPUs as it is worth (rootfs.c,
	 * pick_cpus); a hint, not a limit (the program may widen it, the
	 * quota holds), so a failure is no reason to stop */
	if (c->fs->n_cpus && !c->lone_pin)
		(void)sched_setaffinity(0, sizeof(c->fs->cpus), &c->fs->cpus);
	/* a cell stays in its template's, made when the template was; a
	 * program's init made it before its worker */
	if (c->mode == CHILD_TEMPLATE && (r = time_ns()) < 0)
		fail(c, STEP_TIME_NS, r);
	/* /proc/1 must not be a way to our fds or our binary
	 * (CVE-2019-5736, CVE-2024-21626). */
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (c->fd_script >= 0) {
		if ((r = write_script(c)) < 0)
			fail(c, STEP_SCRIPT, r);
		close(c->fd_script);
		c->fd_script = -1;
	}
	if ((r = send_workspace(c->sock, upper, egress)) < 0)
		fail(c, STEP_WORKSPACE, r);
	if (!c->cfg->autostart && (r = wait_byte(c->sock)) < 0)
		fail(c, STEP_SYNC, r);
	if (worker > 0) {
		if (send(chan, "g", 1, MSG_NOSIGNAL) != 1)
			fail(c, STEP_FORK, -errno);
		close(chan);
	}
	return worker;
}

__attribute__((noreturn)) void sandbox_child_main(struct child_ctx *c)
{
	pid_t worker;
	int r;

	/* A supervisor that dies shows as EOF on the socket, at the next
	 * sync or in the reap loop.  Until the uid change in init_build()
	 * clears it, the parent-death signal also covers the first steps, so
	 * an init stuck there cannot outlive the thread waiting for it (it
	 * is not re-armed after: a session must outlive the thread that made
	 * it). */
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	close(c->parent_sock);
	if ((r = keep_only_needed_fds(c)) < 0)
		fail(c, STEP_FDS, r);
	/* out of the caller's session and away from its terminal */
	if (setsid() < 0)
		fail(c, STEP_SETSID, -errno);
	scrub_cmdline();
	worker = init_build(c);
	if (worker == 0)
		worker = _Fork(); /* no atfork handlers: their locks may be held (see set_ids) */
	if (worker < 0)
		fail(c, STEP_FORK, -errno);
	if (worker == 0)
		worker_main(c);
	/* The program's fds were ours only to hand over: without our copies
	 * its output pipes reach end-of-file when its last process is gone
	 * (end_namespace, before the report), not when we exit.  The report
	 * socket is fd 3 (keep_only_needed_fds). */
	(void)close_range(4, ~0U, 0);
	g_worker = worker;
	install_forwarder();
	reap_until(c, worker);
}

/* A cell's init tells the supervisor who it is with a pidfd (the
 * supervisor is not our parent and sees other pids than we do). */
static int send_hello(int sock)
{
	int fd = (int)syscall(SYS_pidfd_open, getpid(), 0);

	return fd < 0 ? -errno : send_fd(sock, MSG_HELLO, fd);
}

int sandbox_cell_main(struct child_ctx *c)
{
	pid_t worker;
	int r;

	if ((r = keep_only_needed_fds(c)) < 0)
		fail(c, STEP_FDS, r);
	if (setsid() < 0)
		fail(c, STEP_SETSID, -errno);
	scrub_cmdline();
	if ((r = send_hello(c->sock)) < 0)
		fail(c, STEP_SYNC, r);
	(void)init_build(c);
	worker = _Fork();
	if (worker < 0)
		fail(c, STEP_FORK, -errno);
	if (worker == 0) {
		worker_lockdown(c, false);
		return 0;
	}
	g_worker = worker;
	install_forwarder();
	reap_until(c, worker);
}

void child_ctx_set_rlimits(struct child_ctx *c, const struct sandbox_limits *l, unsigned unenforced)
{
	/* Without a cgroup, rlimits are the fallback: RLIMIT_DATA per
	 * process, and RLIMIT_NPROC, which since Linux 5.14 counts the
	 * sandbox user's processes in its own user namespace only. */
	if (unenforced & SANDBOX_LIMIT_MEMORY) {
		c->rl_data = (struct rlimit){ l->memory_bytes, l->memory_bytes };
		c->has_data = true;
	}
	if (unenforced & SANDBOX_LIMIT_PIDS) {
		c->rl_nproc = (struct rlimit){ l->pids, l->pids };
		c->has_nproc = true;
	}
	if (l->file_size) {
		c->rl_fsize = (struct rlimit){ l->file_size, l->file_size };
		c->has_fsize = true;
	}
	if (l->open_files) {
		c->rl_nofile = (struct rlimit){ l->open_files, l->open_files };
		c->has_nofile = true;
	}
	if (l->cpu_seconds) {
		/* SIGXCPU at the soft limit, SIGKILL a second later */
		c->rl_cpu = (struct rlimit){ l->cpu_seconds, l->cpu_seconds + 1 };
		c->has_cpu = true;
	}
}
