/* Small fd and filesystem helpers: the host side, and the sandbox's set-up
 * (those it calls allocate nothing). */
#ifndef CODECELL_UTIL_FS_H
#define CODECELL_UTIL_FS_H

#include <stddef.h>
#include <sys/types.h>

/* Write all of data to fd, retrying on EINTR/short writes.  0 or -errno. */
int write_all(int fd, const void *data, size_t n);
/* A memfd (close-on-exec) holding data, sealed against any change and
 * positioned at 0.  The fd, or -errno. */
int sealed_memfd(const char *name, const void *data, size_t n);
/* Write a short string to a file that exists (sysfs/cgroupfs/procfs
 * knobs).  0 or -errno. */
int write_string_file(const char *path, const char *s);
/* Same, relative to a directory fd. */
int write_string_fileat(int dirfd, const char *name, const char *s);
/* Read a small file relative to dirfd into out (NUL-terminated, at most
 * n-1 bytes).  0 or -errno. */
int read_small_fileat(int dirfd, const char *name, char *out, size_t n);

/* The pid, in this process's PID namespace, of the process a pidfd
 * refers to (its /proc/self/fdinfo "Pid:" line): 0 when the process is
 * not visible here, -1 when it has exited or the fdinfo cannot be read. */
pid_t pidfd_pid(int pidfd);
/* mkdir -p: create path and missing parents.  0 or -errno. */
int mkdir_p(const char *path, mode_t mode);
/* Point fds 0, 1 and 2 at /dev/null (what was there is closed). */
void stdio_to_devnull(void);
/* Remove a directory tree under dirfd without following symlinks and
 * without crossing mount points.  0 or -errno of the first failure. */
int rm_rf_at(int dirfd, const char *name);
/* openat2() with RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS: the path can never
 * leave dirfd, whatever symlinks the sandboxed code planted.  Returns an
 * O_CLOEXEC fd or -errno.  ENOSYS where openat2 is missing. */
int openat_beneath(int dirfd, const char *path, int flags, mode_t mode);
/* openat2() with RESOLVE_IN_ROOT|RESOLVE_NO_MAGICLINKS: path (relative)
 * looked up with rootfd as the root, so that an absolute symlink on the
 * way means rootfd's path, not the caller's root's; plain openat() where
 * openat2 is missing (before Linux 5.6).  An O_CLOEXEC fd or -errno. */
int openat_in_root(int rootfd, const char *path, int flags);
/* One message of len bytes on a unix socket with n fds (SCM_RIGHTS;
 * none if n is 0), MSG_NOSIGNAL.  No allocation: usable in a child of a
 * multi-threaded process.  0 or -errno (-EINVAL above SEND_FDS_MAX). */
#define SEND_FDS_MAX 32
int send_with_fds(int sock, const void *data, size_t len, const int *fds, size_t n);

#endif
