#include "util/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/macro.h"
#include "util/banned.h"

int write_all(int fd, const void *data, size_t n)
{
	const char *p = data;

	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int write_string_fileat(int dirfd, const char *name, const char *s)
{
	_cleanup_close_ int fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);

	if (fd < 0)
		return -errno;
	/* Kernel knobs take one write; a short write is an error. */
	if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		return errno ? -errno : -EIO;
	return 0;
}

int write_string_file(const char *path, const char *s)
{
	return write_string_fileat(AT_FDCWD, path, s);
}

int read_small_fileat(int dirfd, const char *name, char *out, size_t n)
{
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	ssize_t r;

	if (fd < 0)
		return -errno;
	r = read(fd, out, n - 1);
	if (r < 0)
		return -errno;
	out[r] = '\0';
	return 0;
}

int mkdir_p(const char *path, mode_t mode)
{
	char tmp[4096];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(tmp))
		return len ? -ENAMETOOLONG : -EINVAL;
	memcpy(tmp, path, len + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int rm_rf_at(int parentfd, const char *name)
{
	_cleanup_close_ int fd = -1;
	struct stat st, parent;
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (fstatat(parentfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(parentfd, name, 0) < 0 ? -errno : 0;
	if (fstat(parentfd, &parent) == 0 && parent.st_dev != st.st_dev)
		return -EXDEV;
	fd = openat(parentfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d)
		return -errno;
	fd = -1; /* owned by d now */
	while ((de = readdir(d))) {
		int k;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		k = rm_rf_at(dirfd(d), de->d_name);
		if (k < 0 && r == 0)
			r = k;
	}
	closedir(d);
	if (unlinkat(parentfd, name, AT_REMOVEDIR) < 0 && r == 0)
		r = -errno;
	return r;
}

static int openat2_resolve(int dirfd, const char *path, int flags, mode_t mode, uint64_t resolve)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
		.resolve = resolve,
	};
	long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));

	return fd < 0 ? -errno : (int)fd;
}

int openat_beneath(int dirfd, const char *path, int flags, mode_t mode)
{
	return openat2_resolve(dirfd, path, flags, mode,
			       RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV);
}

int openat_in_root(int rootfd, const char *path, int flags)
{
	int fd = openat2_resolve(rootfd, path, flags, 0, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);

	if (fd == -ENOSYS) {
		fd = openat(rootfd, path, flags | O_CLOEXEC);
		if (fd < 0)
			fd = -errno;
	}
	return fd;
}

int sealed_memfd(const char *name, const void *data, size_t n)
{
	_cleanup_close_ int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	int r;

	if (fd < 0)
		return -errno;
	r = write_all(fd, data, n);
	if (r < 0)
		return r;
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0)
		return -errno;
	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	return TAKE_FD(fd);
}

pid_t pidfd_pid(int pidfd)
{
	char path[64], text[1024], *p;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	if (read_small_fileat(AT_FDCWD, path, text, sizeof(text)) < 0)
		return -1;
	p = strstr(text, "\nPid:");
	return p ? (pid_t)strtol(p + 5, NULL, 10) : -1;
}

void stdio_to_devnull(void)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	for (int fd = 0; fd < 3 && null >= 0; fd++)
		if (null != fd)
			(void)dup2(null, fd);
	if (null > 2)
		close(null);
}

int send_with_fds(int sock, const void *data, size_t len, const int *fds, size_t n)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * SEND_FDS_MAX)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { (void *)data, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;

	if (n > SEND_FDS_MAX)
		return -EINVAL;
	if (n) {
		memset(u.buf, 0, sizeof(u.buf));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * n);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * n);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * n);
	}
	return sendmsg(sock, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
}
