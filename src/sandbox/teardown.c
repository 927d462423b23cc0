/* The end of a sandbox: sandbox_free() (kill, reap, close, remove the
 * cgroups), the reap of one that exited on its own, and the detached
 * teardown: a child of ours that waits for the init and removes the
 * cgroups while the caller goes on (sandbox_free_detached,
 * sandbox_start_reaper). */
#include "sandbox/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/cgroup.h"
#include "sandbox/egress.h"
#include "sandbox/internal.h"
#include "util/fs.h"
#include "util/macro.h"
#include "util/timeutil.h"
#include "util/banned.h"

void sandbox_free(struct sandbox *sb)
{
	if (!sb)
		return;
	if (sb->pid > 0 && !sb->reaped) {
		sandbox_kill_tree(sb, SANDBOX_END_KILLED, 0);
		sandbox_reap(sb);
	}
	egress_stop(TAKE_PTR(sb->egress));
	close_fd(&sb->ws_fd);
	close_fd(&sb->upper_fd);
	close_fd(&sb->egress_fd);
	close_fd(&sb->timer_fd);
	close_fd(&sb->ep);
	close_fd(&sb->sock);
	close_fd(&sb->pidfd);
	cgroup_destroy(&sb->cg);
	/* a reaper finds the cgroups gone (ENOENT) */
	close_fd(&sb->reaper_hold);
	if (sb->n_cpus)
		sandbox_cpus_release(&sb->cpus);
	/* last: the id is free once nothing of the tree is left */
	close_fd(&sb->id_lock_fd);
	free(sb);
}

bool sandbox_reap_exited(struct sandbox *sb)
{
	int st;

	if (sb->pid <= 0 || sb->cell)
		return false;
	if (!sb->reaped) {
		/* WNOHANG: an init that has not exited yet is left running.
		 * ECHILD: reaped by the kernel already (SIGCHLD ignored, or
		 * SA_NOCLDWAIT, in a program that embeds the library) */
		pid_t r = wait4(sb->pid, &st, WNOHANG | __WALL, &sb->ru);

		if (r == 0 || (r < 0 && errno != ECHILD))
			return false;
		sb->reaped = true;
	}
	return cgroup_remove_dirs(&sb->cg);
}

/* Close every fd from 3 up but the n in keep (sorted here). */
static void close_all_but(int *keep, size_t n)
{
	unsigned lo = 3;

	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];

			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	for (size_t i = 0; i < n; i++) {
		if (keep[i] < 0 || (unsigned)keep[i] < lo)
			continue;
		if ((unsigned)keep[i] > lo)
			(void)close_range(lo, (unsigned)keep[i] - 1, 0);
		lo = (unsigned)keep[i] + 1;
	}
	(void)close_range(lo, ~0U, 0);
}

/* sandbox_free_detached()'s child, made then or while the program runs
 * (sandbox_start_reaper; hold: the read end of the caller's hold, or
 * -1): out of the caller's session and files, wait (bounded, by max_s)
 * for the init to be gone and the caller to let go, then what
 * sandbox_free() does after the reap.  The init is not our child: the
 * pidfd says when it has exited, after it left its cgroups. */
__attribute__((noreturn)) static void teardown_child(struct sandbox *sb, int hold, double max_s)
{
	struct pollfd p[2] = { { .fd = sb->pidfd, .events = POLLIN },
			       { .fd = hold, .events = POLLIN } };
	int keep[3] = { sb->pidfd, sb->id_lock_fd, hold };
	uint64_t deadline = now_ns() + (uint64_t)(max_s * 1e9);
	sigset_t none;

	(void)setsid();
	/* as the caller had them: not the blocked SIGINT/SIGTERM/SIGHUP of a
	 * run in progress (cli/run.c), nor its handlers */
	{
		struct sigaction dfl = { .sa_handler = SIG_DFL };

		(void)sigaction(SIGINT, &dfl, NULL);
		(void)sigaction(SIGTERM, &dfl, NULL);
		(void)sigaction(SIGHUP, &dfl, NULL);
	}
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	stdio_to_devnull();
	/* fds 0-2 stay (/dev/null): nothing may open a file as them */
	close_all_but(keep, ARRAY_SIZE(keep));
	/* the init's exit, and the hold's end-of-file (the caller closed it
	 * or died); each fd is set to -1 (which poll ignores) once it has
	 * said so, and a hold of -1 has nothing to say */
	while (p[0].fd >= 0 || p[1].fd >= 0) {
		uint64_t now = now_ns();

		if (now >= deadline)
			break;
		if (poll(p, 2, (int)((deadline - now) / 1000000 + 1)) < 0 && errno != EINTR)
			break;
		if (p[0].revents & POLLIN)
			p[0].fd = -1;
		if (p[1].revents)
			p[1].fd = -1;
	}
	for (int i = 0; i < CGROUP_STAT_FILES; i++)
		sb->cg.stat_fd1[i] = 0; /* closed above */
	sb->cg.oom_efd = -1;
	sb->cg.press_fd = -1;
	if (sb->pidfd >= 0 && p[0].fd < 0 && p[1].fd < 0)
		cgroup_destroy(&sb->cg);
	if (g_sweep_deferred)
		cgroup_host_sweep(&g_cgroups);
	/* the id lock goes with us, last */
	_exit(0);
}

void sandbox_start_reaper(struct sandbox *sb)
{
	int hold[2];
	pid_t p;

	/* what sandbox_free_detached() will hand over, and a proxy's thread
	 * makes a fork unsafe (see there) */
	if (sb->reaper > 0 || sb->pid <= 0 || sb->cell || sb->template_init || sb->egress ||
	    !sb->started)
		return;
	if (pipe2(hold, O_CLOEXEC) < 0)
		return;
	p = fork();
	if (p == 0) {
		close(hold[1]);
		teardown_child(sb, hold[0],
			       (sb->timeout_s > 0 ? sb->timeout_s : 3600) + SANDBOX_TEARDOWN_MAX_S);
	}
	close(hold[0]);
	if (p < 0) {
		close(hold[1]);
		return;
	}
	sb->reaper = p;
	sb->reaper_hold = hold[1];
}

void sandbox_free_detached(struct sandbox *sb)
{
	pid_t p;

	if (!sb)
		return;
	if (sb->reaped || sb->pid <= 0 || sb->egress || !sandbox_final_at_report(sb)) {
		/* a reaper made early finds the init gone and the cgroups
		 * removed by then (ENOENT), and exits */
		sandbox_free(sb);
		return;
	}
	/* one that gave up waiting, or is gone, is no reaper */
	if (sb->reaper > 0 && waitpid(sb->reaper, NULL, WNOHANG) != 0) {
		sb->reaper = 0;
		close_fd(&sb->reaper_hold);
	}
	if (sb->reaper <= 0) {
		p = fork();
		if (p < 0) {
			sandbox_free(sb);
			return;
		}
		if (p == 0)
			teardown_child(sb, -1, SANDBOX_TEARDOWN_MAX_S);
	}
	/* the reaper's turn (it holds the pidfd, the cgroups and the id) */
	close_fd(&sb->reaper_hold);
	/* The child holds the pidfd, the cgroups and the id lock (an open
	 * file description's lock lives while any fd to it is open). */
	close_fd(&sb->ws_fd);
	close_fd(&sb->upper_fd);
	close_fd(&sb->timer_fd);
	close_fd(&sb->ep);
	close_fd(&sb->sock);
	close_fd(&sb->pidfd);
	cgroup_forget(&sb->cg);
	if (sb->n_cpus)
		sandbox_cpus_release(&sb->cpus);
	close_fd(&sb->id_lock_fd);
	free(sb);
}
