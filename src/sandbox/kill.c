/* Killing a sandbox's tree (cgroup.kill and SIGKILL to its init), the
 * interrupt, the strays of a pool's cell, and the reap of the init. */
#include "sandbox/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/cgroup.h"
#include "sandbox/internal.h"
#include "util/fs.h"
#include "util/macro.h"
#include "util/banned.h"

void sandbox_kill_tree(struct sandbox *sb, enum sandbox_end cause, int reason)
{
	if (!sb->killed) {
		sb->killed = true;
		sb->kill_cause = cause;
		sb->kill_reason = reason;
	}
	if (sb->reaped)
		return;
	/* SIGKILL to the namespace's init takes every process in it
	 * (pid_namespaces(7)); cgroup.kill also catches any process that
	 * could be in the cgroup outside the namespace. */
	(void)cgroup_kill(&sb->cg);
	if (sb->pidfd >= 0)
		(void)syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
}

void sandbox_kill(struct sandbox *sb)
{
	sandbox_kill_tree(sb, SANDBOX_END_KILLED, 0);
}

void sandbox_kill_for(struct sandbox *sb, int reason)
{
	sandbox_kill_tree(sb, SANDBOX_END_KILLED, reason);
}

void sandbox_stop(struct sandbox *sb)
{
	sandbox_kill_tree(sb, SANDBOX_END_KILLED, 0);
	sandbox_reap(sb);
}

int sandbox_interrupt(struct sandbox *sb)
{
	if (sb->reaped || sb->pidfd < 0)
		return -ESRCH;
	if (syscall(SYS_pidfd_send_signal, sb->pidfd, SIGINT, NULL, 0) < 0)
		return -errno;
	return 0;
}

/* The children of pid, appended to q (bounded).  -1 if unreadable. */
static int children_of(pid_t pid, pid_t *q, size_t *n, size_t max)
{
	char path[64], text[16384], *save = NULL;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	if (read_small_fileat(AT_FDCWD, path, text, sizeof(text)) < 0)
		return -1;
	for (char *t = strtok_r(text, " \n", &save); t && *n < max;
	     t = strtok_r(NULL, " \n", &save))
		q[(*n)++] = (pid_t)strtol(t, NULL, 10);
	return 0;
}

static bool is_zombie(pid_t pid)
{
	char path[64], st[512], *rp;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (read_small_fileat(AT_FDCWD, path, st, sizeof(st)) < 0)
		return true; /* gone */
	rp = strrchr(st, ')');
	return rp && rp[1] == ' ' && rp[2] == 'Z';
}

/* Is every process in the sandbox but the init and the worker dead?
 * The worker is the init's first child: /proc lists children in the
 * order they joined, and the worker is never reparented.  The others are
 * the worker's children and the orphans the init adopted; their own
 * children are killed with them by the init's sweep. */
static bool strays_dead(const struct sandbox *sb)
{
	pid_t q[4096];
	size_t n = 0;

	if (children_of(sb->pid, q, &n, ARRAY_SIZE(q)) < 0 || n == 0)
		return true;
	/* the init's other children must be gone, not only dead: it reaps
	 * them itself, and a zombie it has not reaped yet still shows in the
	 * next cell's /proc (the CPU quota can hold the init back for a
	 * period after a fork bomb used it up) */
	if (n > 1)
		return false;
	/* then the worker's (q[0] is the worker) */
	if (children_of(q[0], q, &n, ARRAY_SIZE(q)) < 0)
		return true;
	for (size_t i = 1; i < n; i++) {
		if (!is_zombie(q[i]))
			return false;
	}
	return true;
}

int sandbox_kill_strays(struct sandbox *sb)
{
	if (sb->reaped || sb->pidfd < 0)
		return -ESRCH;
	if (syscall(SYS_pidfd_send_signal, sb->pidfd, SIGUSR1, NULL, 0) < 0)
		return -errno;
	/* return once they are dead (up to 2 s): the next cell must not
	 * see them run.  Dead children of the worker stay zombies until the
	 * worker reaps them; that is the caller's business. */
	for (int i = 0; i < 2000; i++) {
		struct timespec ts = { 0, 1000000 };

		if (strays_dead(sb))
			return 0;
		nanosleep(&ts, NULL);
	}
	return -ETIMEDOUT;
}

void sandbox_reap(struct sandbox *sb)
{
	int st;

	if (sb->reaped || sb->pid <= 0)
		return;
	if (sb->cell) {
		/* the template's init reaps it: wait until it has exited */
		struct pollfd p = { .fd = sb->pidfd, .events = POLLIN };

		while (poll(&p, 1, -1) < 0 && errno == EINTR)
			;
		sb->reaped = true;
		return;
	}
	while (wait4(sb->pid, &st, __WALL, &sb->ru) < 0 && errno == EINTR)
		;
	sb->reaped = true;
}
