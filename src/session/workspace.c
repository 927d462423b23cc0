#include "session/workspace.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fs.h"
#include "util/macro.h"
#include "util/banned.h"

/* in to out in the kernel (sendfile: page cache to page cache, no copy
 * through our memory; a fork copies every file of the workspace while
 * its caller waits).  1: done; 0: nothing copied and sendfile cannot do
 * these two (the caller copies with read and write); -errno. */
static int copy_fd_kernel(int in, int out)
{
	bool any = false;

	for (;;) {
		ssize_t n = sendfile(out, in, NULL, 1 << 30);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && !any && (errno == EINVAL || errno == ENOSYS))
			return 0;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 1;
		any = true;
	}
}

static int copy_fd(int in, int out)
{
	char chunk[65536];
	int k = copy_fd_kernel(in, out);

	if (k != 0)
		return k < 0 ? k : 0;

	for (;;) {
		ssize_t n = read(in, chunk, sizeof(chunk));
		int r;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		r = write_all(out, chunk, (size_t)n);
		if (r < 0)
			return r;
	}
}

/* The workspace tmpfs belongs to the sandbox's user namespace: a new
 * entry must have an owner mapped there, or the kernel refuses with
 * EOVERFLOW.  Host root is not mapped, so root creates entries with the
 * workspace owner's fsuid/fsgid (host files are opened before, as
 * ourselves).  setfsuid() returns the previous value. */
struct ws_fsid ws_become_owner(const struct ws_owner *o)
{
	struct ws_fsid prev = { -1, -1 };

	if (o->chown) {
		prev.gid = setfsgid(o->gid);
		prev.uid = setfsuid(o->uid);
	}
	return prev;
}

void ws_restore_ids(struct ws_fsid prev)
{
	if (prev.uid >= 0) {
		(void)setfsuid((uid_t)prev.uid);
		(void)setfsgid((gid_t)prev.gid);
	}
}

static int create_beneath(int wsfd, const char *name, mode_t mode, const struct ws_owner *o)
{
	struct ws_fsid prev = ws_become_owner(o);
	int fd = openat_beneath(wsfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);

	ws_restore_ids(prev);
	return fd;
}

static int mkdir_beneath(int wsfd, const char *name, const struct ws_owner *o)
{
	struct ws_fsid prev = ws_become_owner(o);
	int r = mkdirat(wsfd, name, 0755) < 0 && errno != EEXIST ? -errno : 0;

	ws_restore_ids(prev);
	return r;
}

static int copy_in_fd(int wsfd, int in, const char *name, mode_t mode, const struct ws_owner *o)
{
	_cleanup_close_ int out = -1;
	int r;

	out = create_beneath(wsfd, name, (mode & 0111) ? 0755 : 0644, o);
	if (out < 0)
		return out;
	r = copy_fd(in, out);
	if (r < 0)
		(void)unlinkat(wsfd, name, 0); /* no half file left */
	return r;
}

int ws_copy_in_file(int wsfd, const char *path, const char *name, const struct ws_owner *o)
{
	_cleanup_close_ int in = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	struct stat st;

	if (in < 0)
		return -errno;
	if (fstat(in, &st) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	return copy_in_fd(wsfd, in, name, st.st_mode, o);
}

/* A DIR stream on a new open file description of dirfd (readdir must
 * not share its offset with the caller's fd).  NULL with errno set. */
static DIR *open_dir(int dirfd_)
{
	int fd = openat(dirfd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d) {
		int e = errno;

		close(fd);
		errno = e;
	}
	return d;
}

static int copy_in_tree(int wsfd, int hostdir, const char *rel, const struct ws_owner *o, int depth,
			bool between)
{
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (depth > WS_DEPTH_MAX)
		return -ELOOP;
	d = open_dir(hostdir);
	if (!d)
		return -errno;
	while (r == 0 && (de = readdir(d))) {
		char path[4096];
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (between && !strncmp(de->d_name, WS_UPLOAD_PREFIX, strlen(WS_UPLOAD_PREFIX)))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s%s%s", rel, *rel ? "/" : "",
				     de->d_name) >= sizeof(path)) {
			r = -ENAMETOOLONG;
			break;
		}
		if (S_ISREG(st.st_mode)) {
			_cleanup_close_ int in =
				openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

			r = in < 0 ? -errno : copy_in_fd(wsfd, in, path, st.st_mode, o);
		} else if (S_ISDIR(st.st_mode)) {
			_cleanup_close_ int sub =
				openat(dirfd(d), de->d_name,
				       O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);

			if (sub < 0) {
				r = -errno;
				break;
			}
			r = mkdir_beneath(wsfd, path, o);
			if (r == 0)
				r = copy_in_tree(wsfd, sub, path, o, depth + 1, between);
		}
	}
	closedir(d);
	return r;
}

int ws_copy_between(int from_wsfd, int to_wsfd, const struct ws_owner *o)
{
	/* the sandbox hands out O_PATH fds: reopen the source for reading */
	_cleanup_close_ int from = openat_beneath(from_wsfd, ".", O_RDONLY | O_DIRECTORY, 0);

	if (from < 0)
		return from;
	return copy_in_tree(to_wsfd, from, "", o, 0, true);
}

int ws_copy_in_dir(int wsfd, const char *dir, const struct ws_owner *o)
{
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	return copy_in_tree(wsfd, fd, "", o, 0, false);
}

/* Write a file into the host directory without trusting what is there:
 * a new temporary file, then rename() over the name.  Whatever the name
 * was (a FIFO that would block, a device, a hard link to a file outside
 * the directory, a symlink) is replaced, never written through.  Copied
 * out files are never executable: the sandbox must not be able to plant
 * a program (a git hook, say) that the host later runs. */
static int replace_file(int dst, const char *name, int in)
{
	char tmp[64];
	int out, r;

	for (int i = 0;; i++) {
		snprintf(tmp, sizeof(tmp), ".codecell-%d-%d.tmp", (int)getpid(), i);
		out = openat(dst, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (out >= 0 || errno != EEXIST || i > 100)
			break;
	}
	if (out < 0)
		return -errno;
	r = copy_fd(in, out);
	close(out);
	if (r == 0 && renameat(dst, tmp, dst, name) < 0)
		r = -errno;
	if (r < 0)
		(void)unlinkat(dst, tmp, 0);
	return r;
}

static int copy_out_tree(int src, int dst, const char *rel, struct buf *skipped, int depth)
{
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (depth > WS_DEPTH_MAX)
		return -ELOOP;
	d = open_dir(src);
	if (!d)
		return -errno;
	while (r == 0 && (de = readdir(d))) {
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISREG(st.st_mode)) {
			_cleanup_close_ int in =
				openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

			if (in < 0)
				continue;
			r = replace_file(dst, de->d_name, in);
		} else if (S_ISDIR(st.st_mode)) {
			_cleanup_close_ int sin =
				openat(dirfd(d), de->d_name,
				       O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
			_cleanup_close_ int sout = -1;
			char sub[4096];

			if ((size_t)snprintf(sub, sizeof(sub), "%s%s/", rel, de->d_name) >=
			    sizeof(sub)) {
				r = -ENAMETOOLONG;
				break;
			}
			if (sin < 0)
				continue;
			if (mkdirat(dst, de->d_name, 0755) < 0 && errno != EEXIST) {
				r = -errno;
				break;
			}
			sout = openat(dst, de->d_name,
				      O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
			if (sout < 0) {
				r = -errno;
				break;
			}
			r = copy_out_tree(sin, sout, sub, skipped, depth + 1);
		} else if (skipped) {
			(void)buf_printf(skipped, "%s%s\n", rel, de->d_name);
		}
	}
	closedir(d);
	return r;
}

int ws_copy_out(int wsfd, const char *dir, struct buf *skipped)
{
	_cleanup_close_ int root = -1;
	_cleanup_close_ int out = -1;

	/* The sandbox hands out an O_PATH fd; reopen it for reading. */
	root = openat_beneath(wsfd, ".", O_RDONLY | O_DIRECTORY, 0);
	if (root < 0)
		return root;
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	out = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (out < 0)
		return -errno;
	return copy_out_tree(root, out, "", skipped, 0);
}

static int fail_msg(char **ret_msg, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail_msg(char **ret_msg, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(ret_msg, fmt, ap) < 0)
		*ret_msg = NULL;
	va_end(ap);
	return err;
}

int ws_prepare_dir(const char *dir, char **ret_msg)
{
	struct stat st;
	int k;

	*ret_msg = NULL;
	if (!dir)
		return 0;
	if (!*dir)
		return fail_msg(ret_msg, -EINVAL, "--workspace needs a directory name");
	k = mkdir_p(dir, 0755);
	if (k < 0)
		return fail_msg(ret_msg, k, "cannot create workspace directory '%s': %s", dir,
				strerror(-k));
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return fail_msg(ret_msg, -ENOTDIR, "--workspace '%s' is not a directory", dir);
	return 0;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

int ws_fill(int wsfd, const struct ws_owner *o, const char *dir, const char *const *files,
	    const char *db, char **ret_msg)
{
	int k;

	*ret_msg = NULL;
	if (dir && access(dir, F_OK) == 0) {
		k = ws_copy_in_dir(wsfd, dir, o);
		if (k < 0)
			return fail_msg(ret_msg, k, "cannot copy workspace '%s' in: %s%s", dir,
					strerror(-k),
					k == -ENOSPC ? " (raise --workspace-size)" : "");
	}
	for (size_t i = 0; files && files[i]; i++) {
		k = ws_copy_in_file(wsfd, files[i], base_name(files[i]), o);
		if (k < 0)
			return fail_msg(ret_msg, k, "cannot copy '%s' into the workspace: %s%s",
					files[i], strerror(-k),
					k == -EISDIR   ? " (use --workspace DIR for a directory)"
					: k == -ENOSPC ? " (raise --workspace-size)"
					: k == -EEXIST ? " (two inputs have the same name)"
						       : "");
	}
	if (db) {
		k = ws_copy_in_file(wsfd, db, base_name(db), o);
		if (k < 0 && k != -EEXIST)
			return fail_msg(ret_msg, k, "cannot copy database '%s' in: %s", db,
					strerror(-k));
	}
	return 0;
}

int ws_sync_out(int wsfd, const char *dir, char **ret_warning)
{
	struct buf skipped;
	int k;

	*ret_warning = NULL;
	if (!dir)
		return 0;
	buf_init(&skipped, 64 << 10);
	k = ws_copy_out(wsfd, dir, &skipped);
	if (k < 0) {
		(void)fail_msg(ret_warning, k, "cannot copy the workspace out to '%s': %s", dir,
			       strerror(-k));
	} else if (skipped.len) {
		/* one name a line -> "a, b, c" */
		for (size_t i = 0; i < skipped.len; i++)
			if (skipped.data[i] == '\n')
				skipped.data[i] = i + 1 == skipped.len ? '\0' : ',';
		(void)fail_msg(ret_warning, 0, "not copied out (not regular files): %s",
			       buf_str(&skipped));
	}
	buf_release(&skipped);
	return k;
}
