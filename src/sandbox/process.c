/* A process inside a sandbox as the supervisor sees it: a pidfd of it,
 * its end and exit status, a kill.  For what a door runs through an
 * in-sandbox helper (E2B's commands): whatever the helper says, what the
 * supervisor records comes from here, outside the sandbox. */
#include "sandbox/sandbox.h"
#include <errno.h>
#include <fcntl.h>
#include <linux/types.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "sandbox/internal.h"
#include "util/banned.h"

/* Linux 6.15's uapi (linux/pidfd.h, linux/nsfs.h), which the build
 * host's headers may predate. */
struct cc_pidfd_info {
	__u64 mask;
	__u64 cgroupid;
	__u32 pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
	__s32 exit_code;
};
#define CC_PIDFD_INFO_EXIT (1u << 3)
#define CC_PIDFD_GET_PID_NAMESPACE _IO(0xFF, 5)
#define CC_PIDFD_GET_INFO _IOWR(0xFF, 11, struct cc_pidfd_info)
#define CC_NS_GET_TGID_FROM_PIDNS _IOR(0xb7, 0x7, int)
#define CC_PIDFD_SIGNAL_PROCESS_GROUP (1u << 2)

/* The sandbox's PID namespace, through its init's pidfd (no pid to be
 * reused in between). */
static int pid_ns_open(const struct sandbox *sb)
{
	int fd = sandbox_pidfd(sb);

	if (fd < 0)
		return -ESRCH;
	fd = ioctl(fd, CC_PIDFD_GET_PID_NAMESPACE, 0);
	return fd < 0 ? -errno : fd;
}

int sandbox_process_open(const struct sandbox *sb, pid_t pid)
{
	int ns, host, fd, again;

	/* 1 is the init: a door's process is never it */
	if (pid <= 1)
		return -EINVAL;
	ns = pid_ns_open(sb);
	if (ns < 0)
		return ns;
	host = ioctl(ns, CC_NS_GET_TGID_FROM_PIDNS, pid);
	if (host < 0) {
		host = -errno;
		close(ns);
		return host;
	}
	fd = (int)syscall(SYS_pidfd_open, host, 0);
	if (fd < 0) {
		fd = -errno;
		close(ns);
		return fd;
	}
	/* the same pid in the sandbox after the pidfd was made: the pidfd is
	 * of that process, not of one that took its host pid meanwhile */
	again = ioctl(ns, CC_NS_GET_TGID_FROM_PIDNS, pid);
	close(ns);
	if (again != host) {
		close(fd);
		return -ESRCH;
	}
	return fd;
}

int sandbox_process_status(int pidfd, int *ret_wstatus)
{
	struct cc_pidfd_info info = { .mask = CC_PIDFD_INFO_EXIT };

	if (ioctl(pidfd, CC_PIDFD_GET_INFO, &info) < 0)
		return -errno;
	if (!(info.mask & CC_PIDFD_INFO_EXIT))
		return -EAGAIN;
	*ret_wstatus = info.exit_code;
	return 0;
}

int sandbox_process_kill(int pidfd)
{
	/* its process group (a command leads its own); a process that leads
	 * none is killed alone */
	if (syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, CC_PIDFD_SIGNAL_PROCESS_GROUP) ==
	    0)
		return 0;
	if (syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) < 0 && errno != ESRCH)
		return -errno;
	return 0;
}
