/* A host project behind an overlay: the supervisor's half.  The lower
 * layer is the project directory as a detached mount the init attaches
 * under its workspace and stacks an overlay on (child.c,
 * project_overlay()).
 *
 * Ownership.  The sandbox runs as uid 1000 of its user namespace, which
 * is one host id of codecell's range (ids.c); the project's files
 * belong to some host user.  Unmapped owners show as nobody inside, and
 * overlayfs refuses to copy such a file up (it cannot give the copy an
 * owner the namespace has), so the code could not even edit them.  As
 * root, the mount is therefore idmapped (mount_setattr(2),
 * MOUNT_ATTR_IDMAP) with a user namespace that maps the directory's
 * owner to the sandbox's host id: through that mount, and only through
 * it, the owner's files are the sandbox user's.  The mount is also
 * read-only, nosuid, nodev and noatime: the overlay never writes a lower
 * layer, and reading leaves no trace either.  Files of other owners keep
 * showing as nobody (readable by their mode, not editable).  Without
 * root no idmapped mount can be made (it needs CAP_SYS_ADMIN over the
 * filesystem's namespace): the init bind-mounts the directory itself
 * (opened in its own mount namespace before the new root hides it),
 * and the caller's own files are the sandbox user's anyway, since the
 * caller is who uid 1000 maps to. */
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/internal.h"
#include "util/banned.h"

static int write_proc(pid_t pid, const char *file, const char *text)
{
	char path[64];
	int fd, r = 0;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		r = -errno;
	close(fd);
	return r;
}

/* A user namespace mapping uid from to uid to and gid gfrom to gto, as
 * an fd: a child that unshares one and waits, whose namespace outlives
 * it through the fd. */
static int idmap_userns(uid_t from, uid_t to, gid_t gfrom, gid_t gto)
{
	char map[64], b = 0;
	int p[2], r, fd = -1;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = (pid_t)syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, NULL);
	if (pid == 0) {
		/* only system calls here: a clone of a threaded process */
		close(p[1]);
		if (read(p[0], &b, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(p[0]);
	if (pid < 0) {
		close(p[1]);
		return -errno;
	}
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)from, (unsigned)to);
	r = write_proc(pid, "uid_map", map);
	if (r == 0)
		r = write_proc(pid, "setgroups", "deny");
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gfrom, (unsigned)gto);
	if (r == 0)
		r = write_proc(pid, "gid_map", map);
	if (r == 0) {
		snprintf(map, sizeof(map), "/proc/%d/ns/user", (int)pid);
		fd = open(map, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			r = -errno;
	}
	close(p[1]); /* the child's read returns: it exits */
	while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
		;
	return r < 0 ? r : fd;
}

int project_lower_open(const char *dir, bool privileged, uid_t host_uid, gid_t host_gid,
		       int *ret_fd, bool *ret_is_mount)
{
	struct stat st;
	int dfd, tree, ns, r = 0;

	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if (!privileged) {
		/* the init opens it again in its own mount namespace (a bind
		 * needs its source there) */
		close(dfd);
		*ret_fd = -1;
		*ret_is_mount = false;
		return 0;
	}
	if (fstat(dfd, &st) < 0) {
		r = -errno;
		close(dfd);
		return r;
	}
	tree = (int)syscall(SYS_open_tree, dfd, "",
			    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
	close(dfd);
	if (tree < 0)
		return -errno;
	{
		struct mount_attr a = {
			.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
				    MOUNT_ATTR_NOATIME,
			/* changing the atime mode needs its whole field cleared */
			.attr_clr = MOUNT_ATTR__ATIME,
		};

		ns = -1;
		if (st.st_uid != host_uid || st.st_gid != host_gid) {
			ns = idmap_userns(st.st_uid, host_uid, st.st_gid, host_gid);
			if (ns < 0) {
				close(tree);
				return ns;
			}
			a.attr_set |= MOUNT_ATTR_IDMAP;
			a.userns_fd = (uint64_t)ns;
		}
		if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &a, sizeof(a)) < 0)
			r = -errno;
		if (ns >= 0)
			close(ns);
	}
	if (r < 0) {
		close(tree);
		return r;
	}
	*ret_fd = tree;
	*ret_is_mount = true;
	return 0;
}
