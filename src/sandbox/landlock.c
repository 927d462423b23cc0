#include "sandbox/landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/macro.h"
#include "util/banned.h"

/* Debian 12's headers stop at ABI 2: carry what we use. */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LL_SCOPE_SIGNAL (1ULL << 1)

struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net; /* ABI 4 */
	uint64_t scoped;	     /* ABI 6 */
};

#define FS_READ \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
#define FS_ABI1                                                                    \
	(FS_READ | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR | \
	 LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |           \
	 LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |               \
	 LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |             \
	 LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM)

int sandbox_landlock_abi(void)
{
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

	return abi < 0 ? 0 : (int)abi;
}

static uint64_t fs_rights(int abi)
{
	uint64_t r = FS_ABI1;

	if (abi >= 2)
		r |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		r |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 5)
		r |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	return r;
}

static int allow_path(int ruleset, const char *path, uint64_t rights)
{
	struct landlock_path_beneath_attr pb = { .allowed_access = rights };
	int r = 0;

	pb.parent_fd = open(path, O_PATH | O_CLOEXEC);
	if (pb.parent_fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
		r = -errno;
	close(pb.parent_fd);
	return r;
}

int sandbox_landlock_apply(const char *workspace)
{
	int abi = sandbox_landlock_abi();
	struct ll_ruleset_attr attr = { 0 };
	uint64_t all, rw_files;
	size_t size;
	int ruleset, r;

	if (abi <= 0)
		return 0;
	all = fs_rights(abi);
	/* Reading and writing existing device nodes, no ioctl on them. */
	rw_files = FS_READ | LANDLOCK_ACCESS_FS_WRITE_FILE |
		   (abi >= 3 ? LANDLOCK_ACCESS_FS_TRUNCATE : 0);
	attr.handled_access_fs = all;
	size = sizeof(attr.handled_access_fs);
	if (abi >= 6) {
		attr.scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL;
		size = sizeof(attr);
	}
	ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
	if (ruleset < 0)
		return -errno;
	r = allow_path(ruleset, "/", FS_READ);
	if (r == 0)
		r = allow_path(ruleset, "/dev", rw_files);
	/* the sandbox's own ptys (rootfs.c, add_devpts): a terminal is
	 * driven by ioctls (TCGETS, TIOCSPTLCK, TIOCGPTN, TIOCSWINSZ, ...);
	 * seccomp still refuses TIOCSTI and TIOCLINUX on every fd */
	if (r == 0)
		r = allow_path(ruleset, "/dev/pts",
			       rw_files | (abi >= 5 ? LANDLOCK_ACCESS_FS_IOCTL_DEV : 0));
	if (r == 0)
		r = allow_path(ruleset, "/tmp", all & ~LANDLOCK_ACCESS_FS_IOCTL_DEV);
	if (r == 0)
		r = allow_path(ruleset, workspace, all & ~LANDLOCK_ACCESS_FS_IOCTL_DEV);
	if (r == 0 && syscall(SYS_landlock_restrict_self, ruleset, 0) < 0)
		r = -errno;
	close(ruleset);
	return r < 0 ? r : abi;
}
