/* What a sandbox used and how it ended: the cgroup's figures while it
 * runs, and at its end the exit, the signal and the limits it hit
 * (sandbox_fill_exit, for sandbox_wait). */
#include "sandbox/sandbox.h"

#include <signal.h>
#include <string.h>
#include <sys/vfs.h>
#include <sys/wait.h>

#include "sandbox/cgroup.h"
#include "sandbox/internal.h"
#include "util/timeutil.h"
#include "util/banned.h"

void sandbox_usage_so_far(struct sandbox *sb, struct sandbox_usage *ret)
{
	/* an OOM kill ends a sandbox through the notification (v1) or shows
	 * in sandbox_fill_exit(): a running sandbox has none to report */
	struct cgroup_stats cs;

	cgroup_read_stats(&sb->cg, false, &cs);
	ret->cpu_ns = cs.cpu_ns;
	ret->peak_memory = cs.peak_memory;
	ret->limits_hit = cs.pids_max_hits ? SANDBOX_LIMIT_PIDS : 0;
	ret->pids_max_hits = cs.pids_max_hits;
	ret->cpu_throttled = cs.cpu_throttled;
	if (cs.cpu_throttled)
		ret->limits_hit |= SANDBOX_LIMIT_CPUS;
	sb->last_usage = *ret;
}

void sandbox_usage_cheap(struct sandbox *sb, struct sandbox_usage *ret)
{
	*ret = sb->last_usage;
	ret->cpu_ns = cgroup_read_cpu(&sb->cg);
}

void sandbox_fill_exit(struct sandbox *sb, struct sandbox_exit *e)
{
	struct cgroup_stats cs = { 0 };
	struct statfs sf;
	uint64_t ru_ns =
		(uint64_t)(sb->ru.ru_utime.tv_sec + sb->ru.ru_stime.tv_sec) * 1000000000ull +
		(uint64_t)(sb->ru.ru_utime.tv_usec + sb->ru.ru_stime.tv_usec) * 1000ull;

	memset(e, 0, sizeof(*e));
	e->duration_ns = now_ns() - sb->start_ns;
	cgroup_read_stats(&sb->cg, true, &cs);
	/* the larger: the cgroup also counts processes nobody waited for,
	 * and the init's rusage (its reaped children included) can be ahead
	 * of the cgroup's counter by the last slices of a killed program
	 * (a run stopped by --cpu-time 1 read 0.89 s from cpuacct) */
	e->cpu_ns = cs.cpu_ns > ru_ns ? cs.cpu_ns : ru_ns;
	e->peak_memory = cs.peak_memory ? cs.peak_memory : (uint64_t)sb->ru.ru_maxrss * 1024;
	if (cs.oom_kills)
		e->limits_hit |= SANDBOX_LIMIT_MEMORY;
	if (cs.pids_max_hits)
		e->limits_hit |= SANDBOX_LIMIT_PIDS;
	/* the quota held the tree back at least once */
	if (cs.cpu_throttled)
		e->limits_hit |= SANDBOX_LIMIT_CPUS;
	if (sb->ws_fd >= 0 && fstatfs(sb->ws_fd, &sf) == 0 && sf.f_bavail == 0)
		e->limits_hit |= SANDBOX_LIMIT_DISK;
	/* a step after the fork failed: the worker reported it, then exited
	 * 127 (so an EXITED report follows; the failure is what counts) */
	if (sb->failed_err) {
		e->end = SANDBOX_END_SETUP_FAILED;
		e->failed_step = sandbox_step_name(sb->failed_step);
		e->error = sb->failed_err;
		return;
	}
	if (sb->got_exit && WIFSIGNALED(sb->wstatus)) {
		e->signal = WTERMSIG(sb->wstatus);
		/* RLIMIT_CPU: SIGXCPU at the soft limit, SIGKILL at the hard */
		if (e->signal == SIGXCPU || (e->signal == SIGKILL && sb->cpu_limit_s &&
					     e->cpu_ns >= sb->cpu_limit_s * 1000000000ull))
			e->limits_hit |= SANDBOX_LIMIT_CPU;
		if (e->signal == SIGXFSZ)
			e->limits_hit |= SANDBOX_LIMIT_FILE_SIZE;
	}
	if (sb->killed) {
		e->end = sb->kill_cause;
		e->kill_reason = sb->kill_reason;
		e->signal = SIGKILL;
		if (sb->kill_cause == SANDBOX_END_TIMEOUT)
			e->limits_hit |= SANDBOX_LIMIT_WALL;
		if (sb->kill_cause == SANDBOX_END_MEMORY)
			e->limits_hit |= SANDBOX_LIMIT_MEMORY;
		return;
	}
	if (!sb->got_exit) {
		/* init died without a report: only an outside kill does that */
		e->end = SANDBOX_END_SIGNALED;
		e->signal = SIGKILL;
		return;
	}
	if (WIFSIGNALED(sb->wstatus)) {
		/* the OOM killer's SIGKILL under a memory limit */
		if (e->signal == SIGKILL && cs.oom_kills)
			e->end = SANDBOX_END_MEMORY;
		else
			e->end = SANDBOX_END_SIGNALED;
		return;
	}
	e->end = SANDBOX_END_EXITED;
	e->exit_code = WEXITSTATUS(sb->wstatus);
}
