/* Loading the build-time seccomp programs (no libseccomp at run time). */
#include "sandbox/seccomp.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/banned.h"

int sandbox_seccomp_load(const struct sock_fprog *progs, int n)
{
	for (int i = 0; i < n; i++)
		if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &progs[i]) < 0)
			return -errno;
	return 0;
}
