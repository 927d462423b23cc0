/* The init's reports on its socket: reading one (with the fd it may
 * pass), taking them all, and whether what they said is final.  Used by
 * the spawn, the wait and the teardown. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "sandbox/internal.h"
#include "util/banned.h"

int sandbox_recv_msg(int sock, struct msg *m, int *ret_fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { m, sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm;
	ssize_t n;

	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return 0;
	if (n != sizeof(*m))
		return -EBADMSG;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS && ret_fd)
			memcpy(ret_fd, CMSG_DATA(cm), sizeof(int));
	return 1;
}

/* Take the init's reports.  True once the socket is at EOF: the init
 * closed its files on the way out (its namespaces go next, then the
 * pidfd fires). */
bool sandbox_drain_reports(struct sandbox *sb)
{
	struct msg m;
	int r;

	if (sb->sock_eof)
		return true;
	while ((r = sandbox_recv_msg(sb->sock, &m, NULL)) > 0) {
		if (m.kind == MSG_EXITED) {
			sb->got_exit = true;
			sb->wstatus = m.wstatus;
		} else if (m.kind == MSG_SETUP_ERROR && !sb->failed_err) {
			sb->failed_step = m.step;
			sb->failed_err = m.err;
		}
	}
	if (r == 0)
		sb->sock_eof = true;
	return r == 0;
}

/* sandbox_wait_opts.return_at_report: is the result final already?
 * The init (CHILD_EXEC) reports the program's end only once it has
 * killed and reaped everything else in the namespace, then exits: with
 * its report in, its end of the socket and every channel closed, no
 * process of the sandbox runs or can write.  What is left, the init's
 * own exit, the namespaces' teardown and the cgroups, changes nothing
 * the result holds; the usage is read from the cgroup, so without the
 * cpuacct and memory cgroups (whose figures the init's rusage would
 * otherwise replace) the wait goes on to the reap. */
bool sandbox_final_at_report(const struct sandbox *sb)
{
	return sb->got_exit && sb->sock_eof && !sb->killed && !sb->cell && !sb->template_init &&
	       !sb->failed_err && sb->cg.path[CGROUP_CTRL_CPUACCT] &&
	       sb->cg.path[CGROUP_CTRL_MEMORY];
}
