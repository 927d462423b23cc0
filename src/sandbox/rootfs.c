/* The sandbox's root filesystem: a tmpfs with read-only binds of what
 * interpreters need, a generated /etc, fresh /proc, a minimal /dev, and
 * size-capped /tmp and workspace. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "sandbox/internal.h"
#include "util/fs.h"
#include "util/banned.h"

static const char etc_passwd[] =
	"root:x:0:0:root:/root:/usr/sbin/nologin\n"
	"user:x:1000:1000:codecell:" SANDBOX_HOME ":/bin/bash\n"
	"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
static const char etc_group[] = "root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n";
static const char etc_hosts[] = "127.0.0.1\tlocalhost " SANDBOX_HOSTNAME
				"\n::1\tlocalhost ip6-localhost ip6-loopback\n";
static const char etc_nsswitch[] = "passwd: files\ngroup: files\nhosts: files\n";

/* Host /etc entries that programs read at run time and that hold no
 * secrets.  Files are copied into the root tmpfs (cheaper than a bind
 * mount, which costs two mount calls to set up and one to tear down);
 * directories are bound read-only. */
static const char *const etc_copies[] = {
	"ld.so.cache", "matplotlibrc", "mime.types", "ssl/openssl.cnf",
	"bash.bashrc", "inputrc", "localtime", NULL,
};
static const char *const etc_binds[] = { "alternatives", "fonts", NULL };
/* A copied file larger than this is left out (no allocation in the
 * child: copies go through a stack buffer, and /etc files are small). */
#define ETC_COPY_MAX (1 << 20)
/* Top-level host paths: a symlink is copied as a symlink (merged /usr),
 * a directory is bound read-only. */
static const char *const top_links[] = { "bin", "sbin", "lib", "lib32", "lib64", "libx32", NULL };
static const char *const proc_masks[] = { "/proc/cmdline", "/proc/config.gz", NULL };
static const char *const dev_nodes[] = { "null", "zero", "full", "random", "urandom", NULL };

static int add(struct rootfs *fs, enum rootfs_op_type t, const char *src,
	       const char *dst, const char *data, unsigned long flags)
{
	if (fs->n >= ROOTFS_MAX_OPS)
		return -E2BIG;
	fs->ops[fs->n++] = (struct rootfs_op){ t, src, dst, data, flags, false };
	return 0;
}

static const char *keep(struct rootfs *fs, char *s)
{
	if (!s || fs->n_strings >= ROOTFS_MAX_OPS) {
		free(s);
		return NULL;
	}
	fs->strings[fs->n_strings++] = s;
	return s;
}

static int add_tmpfs(struct rootfs *fs, const char *dst, uint64_t size,
		     const char *mode, bool owned)
{
	char *opts = NULL;

	/* an inode cap too: empty files and directories cost no blocks, and
	 * without one a 1 MiB tmpfs holds a million of them */
	uint64_t inodes = size / 4096 < 64 ? 64 : size / 4096;

	if (asprintf(&opts, "mode=%s,size=%" PRIu64 ",nr_inodes=%" PRIu64 "%s", mode, size,
		     inodes, owned ? ",uid=1000,gid=1000" : "") < 0)
		return -ENOMEM;
	if (!keep(fs, opts))
		return -ENOMEM;
	return add(fs, OP_TMPFS, NULL, dst, opts, MS_NOSUID | MS_NODEV);
}

static int add_host_binds(struct rootfs *fs)
{
	char path[512], target[512];
	struct stat st;
	int r = 0;

	for (const char *const *t = top_links; *t && r == 0; t++) {
		ssize_t n;

		snprintf(path, sizeof(path), "/%s", *t);
		if (lstat(path, &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			n = readlink(path, target, sizeof(target) - 1);
			if (n < 0)
				continue;
			target[n] = '\0';
			r = add(fs, OP_SYMLINK, keep(fs, strdup(target)), *t, NULL, 0);
		} else if (S_ISDIR(st.st_mode)) {
			r = add(fs, OP_BIND_RO, keep(fs, strdup(path)), *t, NULL, 0);
			fs->ops[fs->n - 1].is_dir = true;
		}
	}
	for (const char *const *e = etc_binds; *e && r == 0; e++) {
		snprintf(path, sizeof(path), "/etc/%s", *e);
		if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		snprintf(target, sizeof(target), "etc/%s", *e);
		r = add(fs, OP_BIND_RO, keep(fs, strdup(path)), keep(fs, strdup(target)), NULL, 0);
		fs->ops[fs->n - 1].is_dir = true;
	}
	for (const char *const *e = etc_copies; *e && r == 0; e++) {
		snprintf(path, sizeof(path), "/etc/%s", *e);
		if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > ETC_COPY_MAX)
			continue;
		if (strchr(*e, '/') && (r = add(fs, OP_DIR, NULL, "etc/ssl", NULL, 0)) < 0)
			break;
		snprintf(target, sizeof(target), "etc/%s", *e);
		r = add(fs, OP_COPY, keep(fs, strdup(path)), keep(fs, strdup(target)), NULL, 0);
	}
	return r;
}

int rootfs_build(struct rootfs *fs, const struct sandbox_limits *l)
{
	int r;

	memset(fs, 0, sizeof(*fs));
	r = add(fs, OP_BIND_RO, "/usr", "usr", NULL, 0);
	if (r == 0)
		fs->ops[0].is_dir = true;
	if (r == 0)
		r = add(fs, OP_DIR, NULL, "etc", NULL, 0);
	if (r == 0)
		r = add_host_binds(fs);
	if (r == 0)
		r = add(fs, OP_FILE, NULL, "etc/passwd", etc_passwd, 0);
	if (r == 0)
		r = add(fs, OP_FILE, NULL, "etc/group", etc_group, 0);
	if (r == 0)
		r = add(fs, OP_FILE, NULL, "etc/hosts", etc_hosts, 0);
	if (r == 0)
		r = add(fs, OP_FILE, NULL, "etc/hostname", SANDBOX_HOSTNAME "\n", 0);
	if (r == 0)
		r = add(fs, OP_FILE, NULL, "etc/nsswitch.conf", etc_nsswitch, 0);
	if (r == 0)
		r = add(fs, OP_FILE, NULL, "etc/resolv.conf", "", 0);
	if (r == 0)
		r = add(fs, OP_PROC, NULL, "proc", NULL, 0);
	/* the host's boot arguments and kernel config say more about the
	 * host than a program needs (Docker masks these too) */
	/* the mask is an empty file we made anyway: resolv.conf */
	for (const char *const *m = proc_masks; *m && r == 0; m++)
		if (access(*m, F_OK) == 0)
			r = add(fs, OP_MASK, "etc/resolv.conf", *m + 1, NULL, 0);
	if (r == 0)
		r = add_tmpfs(fs, "dev", 65536, "0755", false);
	for (const char *const *d = dev_nodes; *d && r == 0; d++) {
		char *src = NULL, *dst = NULL;

		if (asprintf(&src, "/dev/%s", *d) < 0 || asprintf(&dst, "dev/%s", *d) < 0) {
			free(src);
			return -ENOMEM;
		}
		r = add(fs, OP_BIND_DEV, keep(fs, src), keep(fs, dst), NULL, 0);
	}
	if (r == 0)
		r = add(fs, OP_SYMLINK, "/proc/self/fd", "dev/fd", NULL, 0);
	if (r == 0)
		r = add(fs, OP_SYMLINK, "/proc/self/fd/0", "dev/stdin", NULL, 0);
	if (r == 0)
		r = add(fs, OP_SYMLINK, "/proc/self/fd/1", "dev/stdout", NULL, 0);
	if (r == 0)
		r = add(fs, OP_SYMLINK, "/proc/self/fd/2", "dev/stderr", NULL, 0);
	/* POSIX shm and semaphores land in /tmp's size cap */
	if (r == 0)
		r = add(fs, OP_SYMLINK, "/tmp", "dev/shm", NULL, 0);
	if (r == 0)
		r = add(fs, OP_RO, NULL, "dev", NULL, MS_NOSUID | MS_NOEXEC);
	if (r == 0)
		r = add_tmpfs(fs, "tmp", l->tmp_bytes, "1777", false);
	if (r == 0)
		r = add(fs, OP_DIR, NULL, "home", NULL, 0);
	if (r == 0)
		r = add_tmpfs(fs, SANDBOX_HOME + 1, l->workspace_bytes, "0755", true);
	if (r == 0)
		r = add(fs, OP_DIR, NULL, "root", NULL, 0);
	if (r < 0)
		rootfs_release(fs);
	return r;
}

void rootfs_release(struct rootfs *fs)
{
	for (size_t i = 0; i < fs->n_strings; i++)
		free(fs->strings[i]);
	fs->n_strings = 0;
	fs->n = 0;
}

/* ---- child side: no allocation from here on ---- */

/* Flags a read-only remount must keep: in a user namespace the kernel
 * refuses to clear flags the parent mount has locked. */
static unsigned long locked_flags(const char *path)
{
	static const struct {
		unsigned long st, ms;
	} map[] = {
		{ ST_NOSUID, MS_NOSUID },     { ST_NODEV, MS_NODEV },
		{ ST_NOEXEC, MS_NOEXEC },     { ST_NOATIME, MS_NOATIME },
		{ ST_NODIRATIME, MS_NODIRATIME }, { ST_RELATIME, MS_RELATIME },
	};
	struct statvfs sv;
	unsigned long f = 0;

	if (statvfs(path, &sv) < 0)
		return 0;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (sv.f_flag & map[i].st)
			f |= map[i].ms;
	return f;
}

static int remount_ro(const char *path, unsigned long extra)
{
	unsigned long f = MS_BIND | MS_REMOUNT | MS_RDONLY | extra | locked_flags(path);

	return mount(NULL, path, NULL, f, NULL) < 0 ? -errno : 0;
}

static int make_file(const char *path, const char *data)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	int r = 0;

	if (fd < 0)
		return -errno;
	if (data)
		r = write_all(fd, data, strlen(data));
	close(fd);
	return r;
}

static int copy_file(const char *src, const char *dst)
{
	char chunk[16384];
	int in, out, r = 0;
	ssize_t n;

	in = open(src, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (in < 0)
		return errno == ENOENT ? 0 : -errno; /* gone since the parent looked */
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (out < 0) {
		r = -errno;
		close(in);
		return r;
	}
	while ((n = read(in, chunk, sizeof(chunk))) > 0 && r == 0)
		r = write_all(out, chunk, (size_t)n);
	if (n < 0 && r == 0)
		r = -errno;
	close(in);
	close(out);
	return r;
}

static int mkdir_ok(const char *path, mode_t mode)
{
	return mkdir(path, mode) < 0 && errno != EEXIST ? -errno : 0;
}

static int apply_op(const struct rootfs_op *op)
{
	int r;

	switch (op->type) {
	case OP_DIR:
		return mkdir_ok(op->dst, 0755);
	case OP_TMPFS:
		r = mkdir_ok(op->dst, 0755);
		if (r == 0 && mount("tmpfs", op->dst, "tmpfs", op->flags, op->data) < 0)
			r = -errno;
		return r;
	case OP_BIND_RO:
		r = op->is_dir ? mkdir_ok(op->dst, 0755) : make_file(op->dst, NULL);
		if (r < 0)
			return r;
		if (mount(op->src, op->dst, NULL, MS_BIND | MS_REC, NULL) < 0)
			return -errno;
		return remount_ro(op->dst, MS_NOSUID | MS_NODEV);
	case OP_BIND_DEV:
		r = make_file(op->dst, NULL);
		if (r == 0 && mount(op->src, op->dst, NULL, MS_BIND, NULL) < 0)
			r = -errno;
		return r;
	case OP_MASK:
		if (mount(op->src, op->dst, NULL, MS_BIND, NULL) < 0)
			return -errno;
		return remount_ro(op->dst, MS_NOSUID | MS_NODEV | MS_NOEXEC);
	case OP_SYMLINK:
		return symlink(op->src, op->dst) < 0 ? -errno : 0;
	case OP_FILE:
		return make_file(op->dst, op->data);
	case OP_COPY:
		return copy_file(op->src, op->dst);
	case OP_PROC:
		r = mkdir_ok(op->dst, 0555);
		if (r == 0 && mount("proc", op->dst, "proc",
				    MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
			r = -errno;
		return r;
	case OP_RO:
		return remount_ro(op->dst, op->flags);
	}
	return -EINVAL;
}

int rootfs_apply(const struct rootfs *fs, const char *base)
{
	if (chdir(base) < 0)
		return -errno;
	for (size_t i = 0; i < fs->n; i++) {
		int r = apply_op(&fs->ops[i]);

		if (r < 0)
			return r;
	}
	return 0;
}
