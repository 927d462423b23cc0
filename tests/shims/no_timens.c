/* LD_PRELOAD shim for tests/e2e/test_old_kernel.py: unshare() with
 * CLONE_NEWTIME fails with EINVAL, as on a kernel without time
 * namespaces (before Linux 5.6, or built without CONFIG_TIME_NS).
 * Everything else goes to the kernel.  The sandbox's init is a clone of
 * codecell, so it calls this unshare() too. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

int unshare(int flags)
{
	if (flags & CLONE_NEWTIME) {
		errno = EINVAL;
		return -1;
	}
	return (int)syscall(SYS_unshare, flags);
}
