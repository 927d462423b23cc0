/* The wait: one epoll set over the init's report socket, its pidfd, the
 * deadline's timerfd, the OOM and memory-pressure notifications and the
 * caller's output channels, kept from call to call; the deadline's grace
 * and the kills it decides (out of time, out of memory, a stop asked
 * for, an output flood). */
#include "sandbox/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "sandbox/cgroup.h"
#include "sandbox/internal.h"
#include "util/fs.h"
#include "util/macro.h"
#include "util/timeutil.h"
#include "util/banned.h"

enum { EV_SOCK = 100, EV_PIDFD, EV_TIMER, EV_OOM, EV_STOP, EV_HANGUP, EV_PRESSURE };

static int ep_add(int ep, int fd, uint64_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = tag };

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

/* Arm the sandbox's timer to fire in t seconds (made on first use).  It
 * stays armed between calls: an expiry nobody waited for is harmless, and
 * re-arming drops it (timerfd_settime zeroes the expiry count). */
static int arm_timer(struct sandbox *sb, double t)
{
	struct itimerspec its = { 0 };

	if (sb->timer_fd < 0) {
		sb->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		if (sb->timer_fd < 0)
			return -errno;
	}
	its.it_value.tv_sec = (time_t)t;
	its.it_value.tv_nsec = (long)((t - (double)(time_t)t) * 1e9);
	if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
		its.it_value.tv_nsec = 1;
	return timerfd_settime(sb->timer_fd, 0, &its, NULL) < 0 ? -errno : 0;
}

/* Read one chunk from a channel.  Returns bytes read, 0 at EOF. */
static ssize_t pump(struct sandbox *sb, const struct sandbox_wait_opts *o, size_t i)
{
	char chunk[SANDBOX_READ_CHUNK];
	ssize_t n = read(o->channel_fds[i], chunk, sizeof(chunk));

	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? -EAGAIN : 0;
	if (n > 0 && o->on_output) {
		int k = o->on_output(o->userdata, (int)i, chunk, (size_t)n);

		if (k > 0)
			sandbox_kill_tree(sb, SANDBOX_END_KILLED, k);
	}
	return n;
}

/* The memory-pressure watch (cgroup.h, press_fd): v1's eventfd is
 * readable; v2's memory.events signals EPOLLPRI, edge-triggered, since
 * kernfs keeps reporting it until the file is read again. */
static int ep_add_pressure(struct sandbox *sb)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = EV_PRESSURE };

	if (sb->cg.version == CGROUP_V2)
		ev.events = EPOLLPRI | EPOLLET;
	return epoll_ctl(sb->ep, EPOLL_CTL_ADD, sb->cg.press_fd, &ev) < 0 ? -errno : 0;
}

/* The cgroup reclaims at its limit.  If what it cannot give back fills
 * the limit, the program can only go on by evicting its own files, and
 * the kernel's OOM killer would come seconds later on a loaded host (and
 * a deadline first, reported as a timeout): stop it now, as the memory
 * limit.  Page cache at the limit is not this: reclaim frees it. */
static void on_pressure(struct sandbox *sb)
{
	cgroup_pressure_ack(&sb->cg);
	sb->pressure_ns = now_ns();
	if (!sb->killed && !sb->reaped && cgroup_memory_state(&sb->cg) == CGROUP_MEM_FULL)
		sandbox_kill_tree(sb, SANDBOX_END_MEMORY, 0);
}

/* At a deadline: is the tree out of memory rather than out of time?  At
 * its limit, with reclaim failing in the last second (it evicts its own
 * files, or waits for the kernel's OOM killer): it would not stop at an
 * interrupt either.  A program that holds memory near its limit and
 * computes or sleeps sees no such pressure, and times out as usual. */
#define SANDBOX_PRESSURE_RECENT_NS 1000000000ull

static bool out_of_memory(struct sandbox *sb)
{
	return sb->pressure_ns && now_ns() - sb->pressure_ns < SANDBOX_PRESSURE_RECENT_NS &&
	       cgroup_memory_state(&sb->cg) != CGROUP_MEM_BELOW;
}

/* How much longer a grace runs out by (SANDBOX_GRACE_MAX_FACTOR): the
 * program was asked to stop (a SIGINT, which Python sees only between
 * bytecodes, after the C call it is in), and the grace is meant as CPU
 * time to get there.  On a loaded host the tree may have had a small
 * part of that: while, in the last grace, it used less than half of it
 * on a CPU and waited for one (runnable on a run queue, or held back by
 * its quota) at least a quarter of it, another grace follows, up to
 * SANDBOX_GRACE_MAX_FACTOR graces of wall time in all.  A tree that
 * sleeps or blocks does not wait for a CPU: it gets one grace.  Under
 * the soak (64 clients on 2 cores) a plot being rendered at its deadline
 * got a few percent of a CPU, and a wall-clock grace killed it and lost
 * the session's variables. */
#define SANDBOX_GRACE_MAX_FACTOR 10

static bool grace_starved(struct sandbox *sb)
{
	uint64_t cpu = cgroup_read_cpu(&sb->cg), wait = cgroup_read_cpu_wait(&sb->cg);
	uint64_t waited = now_ns() - sb->grace_start_ns;
	bool starved = cpu && cpu - sb->grace_cpu_ns < (uint64_t)(sb->grace_s * 0.5e9) &&
		       wait - sb->grace_wait_ns >= (uint64_t)(sb->grace_s * 0.25e9);

	sb->grace_cpu_ns = cpu;
	sb->grace_wait_ns = wait;
	return starved && (double)waited < sb->grace_s * SANDBOX_GRACE_MAX_FACTOR * 1e9;
}

/* The deadline passed: kill, or (sessions) let the caller interrupt and
 * re-arm for the grace it asks for; the grace's end kills, unless the
 * tree was starved of CPU during it (grace_starved).  A tree out of
 * memory at either point is killed as that, however long it took to get
 * there. */
static void on_timer(struct sandbox *sb, const struct sandbox_wait_opts *o, int ep)
{
	double grace = 0;
	uint64_t v;

	(void)ep;
	if (read(sb->timer_fd, &v, sizeof(v)) != sizeof(v))
		return; /* not expired after all (re-armed meanwhile) */
	if (out_of_memory(sb)) {
		sandbox_kill_tree(sb, SANDBOX_END_MEMORY, 0);
		return;
	}
	if (sb->in_grace && grace_starved(sb) && arm_timer(sb, sb->grace_s) == 0)
		return;
	if (o->on_deadline && !sb->in_grace)
		grace = o->on_deadline(o->userdata);
	if (grace > 0) {
		sb->in_grace = true;
		sb->grace_s = grace;
		sb->grace_start_ns = now_ns();
		sb->grace_cpu_ns = cgroup_read_cpu(&sb->cg);
		sb->grace_wait_ns = cgroup_read_cpu_wait(&sb->cg);
		if (arm_timer(sb, grace) == 0)
			return;
	}
	sandbox_kill_tree(sb, SANDBOX_END_TIMEOUT, 0);
}

static int wait_loop(struct sandbox *sb, const struct sandbox_wait_opts *o, int ep)
{
	bool open_ch[SANDBOX_MAX_CHANNELS];
	size_t n_open = o->n_channels;
	uint64_t drain_deadline = 0;

	for (size_t i = 0; i < o->n_channels; i++)
		open_ch[i] = true;
	while (!sb->reaped || n_open > 0) {
		struct epoll_event evs[16];
		int timeout = -1, n;

		if (o->return_at_report && n_open == 0 && sandbox_final_at_report(sb))
			break;

		/* a kill asked for (an output flood, say) wins over the awaited
		 * event that came in the same batch: the caller must see this
		 * call end in the kill, or the next call is blamed for it */
		if (o->until && !sb->reaped && !sb->killed && o->until(o->userdata))
			return 1;
		if (sb->reaped) {
			/* every process is gone; the pipes are at EOF or about
			 * to be: never hang on one */
			if (!drain_deadline)
				drain_deadline = now_ns() + 2000000000ull;
			if (now_ns() >= drain_deadline)
				break;
			timeout = 100;
		}
		n = epoll_wait(ep, evs, (int)ARRAY_SIZE(evs), timeout);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		for (int k = 0; k < n; k++) {
			uint64_t tag = evs[k].data.u64;
			uint64_t v;

			if (tag < SANDBOX_MAX_CHANNELS) {
				ssize_t got = pump(sb, o, tag);

				if (got == 0 && open_ch[tag]) {
					open_ch[tag] = false;
					n_open--;
					(void)epoll_ctl(ep, EPOLL_CTL_DEL, o->channel_fds[tag],
							NULL);
					sb->ep_ok = false;
				}
			} else if (tag == EV_SOCK) {
				/* at EOF the socket stays readable: stop watching
				 * it, or this loop spins while the init's namespaces
				 * are torn down */
				if (sandbox_drain_reports(sb)) {
					(void)epoll_ctl(ep, EPOLL_CTL_DEL, sb->sock, NULL);
					sb->ep_ok = false;
				}
			} else if (tag == EV_PIDFD) {
				sandbox_drain_reports(sb);
				sandbox_reap(sb);
				(void)epoll_ctl(ep, EPOLL_CTL_DEL, sb->pidfd, NULL);
				sb->ep_ok = false;
			} else if (tag == EV_TIMER) {
				on_timer(sb, o, ep);
			} else if (tag == EV_STOP) {
				if (o->on_stop && !o->on_stop(o->userdata))
					continue;
				sandbox_kill_tree(sb, SANDBOX_END_KILLED, SANDBOX_KILL_STOP);
				(void)epoll_ctl(ep, EPOLL_CTL_DEL, o->stop_fd, NULL);
				sb->stop_watched = false;
			} else if (tag == EV_HANGUP) {
				(void)epoll_ctl(ep, EPOLL_CTL_DEL, o->hangup_fd, NULL);
				sb->hangup_watched = false;
				if (o->on_hangup)
					o->on_hangup(o->userdata);
			} else if (tag == EV_OOM) {
				if (read(sb->cg.oom_efd, &v, sizeof(v)) == sizeof(v))
					sandbox_kill_tree(sb, SANDBOX_END_MEMORY, 0);
			} else if (tag == EV_PRESSURE) {
				on_pressure(sb);
			}
		}
	}
	return 0;
}

/* Is ep still watching these channels?  The same numbers must also be
 * the same files: a number closed and reused would have left the set. */
static bool ep_current(struct sandbox *sb, const struct sandbox_wait_opts *o)
{
	struct stat st;

	if (!sb->ep_ok || sb->ep < 0 || sb->ep_nch != o->n_channels)
		return false;
	for (size_t i = 0; i < o->n_channels; i++)
		if (sb->ep_ch[i] != o->channel_fds[i] || fstat(o->channel_fds[i], &st) < 0 ||
		    st.st_dev != sb->ep_dev[i] || st.st_ino != sb->ep_ino[i])
			return false;
	return true;
}

/* (Re)build the epoll set: the channels (made non-blocking), the report
 * socket, the pidfd, the timer and the OOM notification. */
static int ep_build(struct sandbox *sb, const struct sandbox_wait_opts *o)
{
	struct stat st;
	int r;

	close_fd(&sb->ep);
	sb->ep_ok = false;
	sb->ep = epoll_create1(EPOLL_CLOEXEC);
	if (sb->ep < 0)
		return -errno;
	for (size_t i = 0; i < o->n_channels; i++) {
		int fd = o->channel_fds[i], fl = fcntl(fd, F_GETFL);

		if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 || fstat(fd, &st) < 0)
			return -errno;
		if ((r = ep_add(sb->ep, fd, i)) < 0)
			return r;
		sb->ep_ch[i] = fd;
		sb->ep_dev[i] = st.st_dev;
		sb->ep_ino[i] = st.st_ino;
	}
	sb->ep_nch = o->n_channels;
	if (fcntl(sb->sock, F_SETFL, O_NONBLOCK) < 0)
		return -errno;
	if ((r = ep_add(sb->ep, sb->sock, EV_SOCK)) < 0)
		return r;
	if (!sb->reaped && (r = ep_add(sb->ep, sb->pidfd, EV_PIDFD)) < 0)
		return r;
	if ((r = arm_timer(sb, 3600)) < 0 || (r = ep_add(sb->ep, sb->timer_fd, EV_TIMER)) < 0)
		return r;
	if (sb->cg.oom_efd >= 0 && (r = ep_add(sb->ep, sb->cg.oom_efd, EV_OOM)) < 0)
		return r;
	if (sb->cg.press_fd >= 0 && (r = ep_add_pressure(sb)) < 0)
		return r;
	sb->ep_ok = true;
	return 0;
}

int sandbox_wait(struct sandbox *sb, const struct sandbox_wait_opts *o, struct sandbox_exit *ret)
{
	int r;

	if (!sb->started)
		return -EINVAL;
	if (!ep_current(sb, o) && (r = ep_build(sb, o)) < 0)
		return r;
	r = arm_timer(sb, o->deadline_s > 0   ? o->deadline_s
			  : sb->timeout_s > 0 ? sb->timeout_s
					      : 1e9);
	if (r < 0)
		return r;
	sb->stop_watched = o->stop_fd > 0;
	if (sb->stop_watched && (r = ep_add(sb->ep, o->stop_fd, EV_STOP)) < 0) {
		sb->stop_watched = false;
		goto out;
	}
	sb->hangup_watched = o->hangup_fd > 0;
	if (sb->hangup_watched) {
		struct epoll_event ev = { .events = EPOLLRDHUP, .data.u64 = EV_HANGUP };

		if (epoll_ctl(sb->ep, EPOLL_CTL_ADD, o->hangup_fd, &ev) < 0) {
			r = -errno;
			sb->hangup_watched = false;
			goto out;
		}
	}
	r = wait_loop(sb, o, sb->ep);
out:
	if (sb->stop_watched)
		(void)epoll_ctl(sb->ep, EPOLL_CTL_DEL, o->stop_fd, NULL);
	if (sb->hangup_watched)
		(void)epoll_ctl(sb->ep, EPOLL_CTL_DEL, o->hangup_fd, NULL);
	sb->in_grace = false;
	if (r < 0) {
		sb->ep_ok = false;
		return r;
	}
	if (r == 1) {
		memset(ret, 0, sizeof(*ret));
		ret->end = SANDBOX_END_RUNNING;
		return 0;
	}
	sandbox_drain_reports(sb);
	sandbox_fill_exit(sb, ret);
	return 0;
}
