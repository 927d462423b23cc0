/* CPUs for sandboxes under a CPU quota.
 *
 * A quota of cpus cores is worth ceil(cpus) CPUs, and programs size
 * their thread and process pools from what sched_getaffinity says
 * (nproc, os.process_cpu_count, Go, libuv's availableParallelism, and
 * glibc's count from /sys/devices/system/cpu and /proc/stat, which the
 * root lists the same CPUs in: rootfs.c): the sandbox's init pins the
 * tree to that many.  Which ones: those
 * the fewest of this process's live sandboxes are pinned to, so that a
 * busy pair does not share one CPU while another stands idle (the
 * scheduler cannot move a pinned task).  Sandboxes of other codecell
 * processes are not counted.  Between CPUs as free as each other, not
 * the one the caller runs on: the init then builds the root beside the
 * supervisor, which makes the cgroups meanwhile (v1), instead of waiting
 * for it to sleep (0.25 ms more for a `codecell run`, half of the time,
 * when the pick was at random).
 *
 * Except for the process's only sandbox under one CPU (every `codecell
 * run`): it takes the caller's CPU, and only its program is pinned (the
 * worker from its fork, child.c), not its init.  The scheduler put the
 * caller where it had room; a CPU picked by us knows nothing of the
 * host's load, and on a loaded 2-CPU host every step the init and the
 * worker made there waited for it: a `print(1+1)` run's overhead was
 * +27 to +39 ms against +10 ms (README, One-shot runs). */
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <sys/random.h>
#include <unistd.h>

#include "sandbox/internal.h"
#include "util/banned.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned g_users[CPU_SETSIZE];
/* where ties start, an index into the caller's CPUs: at random in each
 * process (separate `codecell run`s count nothing of each other's, and
 * must not all take the first CPU), then after the last one taken */
static unsigned g_next;
static bool g_seeded;

/* Is a sandbox pinned to one CPU this process's only one, and the CPU
 * we run on one of ours?  Then it takes that one (see the top). */
static bool lone(const int *list, unsigned n, int here)
{
	bool ours = false;

	for (unsigned k = 0; k < n; k++) {
		if (g_users[list[k]])
			return false;
		ours |= list[k] == here;
	}
	return ours;
}

unsigned sandbox_cpus_take(double cpus, cpu_set_t *ret, bool *ret_alone)
{
	int list[CPU_SETSIZE];
	cpu_set_t have;
	unsigned want, n = 0, got = 0;
	int here;

	CPU_ZERO(ret);
	if (ret_alone)
		*ret_alone = false;
	if (cpus <= 0 || sched_getaffinity(0, sizeof(have), &have) < 0)
		return 0;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &have))
			list[n++] = c;
	want = (unsigned)cpus;
	if ((double)want < cpus)
		want++;
	if (want == 0 || want >= n)
		return 0;
	here = sched_getcpu();
	pthread_mutex_lock(&g_lock);
	if (!g_seeded) {
		if (getrandom(&g_next, sizeof(g_next), GRND_NONBLOCK) != sizeof(g_next))
			g_next = (unsigned)getpid();
		g_seeded = true;
	}
	if (ret_alone && want == 1 && lone(list, n, here)) {
		CPU_SET(here, ret);
		g_users[here]++;
		pthread_mutex_unlock(&g_lock);
		*ret_alone = true;
		return 1;
	}
	for (; got < want; got++) {
		unsigned best = n;

		for (unsigned k = 0; k < n; k++) {
			unsigned i = (g_next + k) % n;

			if (!CPU_ISSET(list[i], ret) &&
			    (best == n || g_users[list[i]] < g_users[list[best]] ||
			     (g_users[list[i]] == g_users[list[best]] && list[best] == here)))
				best = i;
		}
		if (best == n)
			break;
		CPU_SET(list[best], ret);
		g_users[list[best]]++;
		g_next = best + 1;
	}
	pthread_mutex_unlock(&g_lock);
	return got;
}

void sandbox_cpus_release(const cpu_set_t *set)
{
	pthread_mutex_lock(&g_lock);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, set) && g_users[c] > 0)
			g_users[c]--;
	pthread_mutex_unlock(&g_lock);
}
