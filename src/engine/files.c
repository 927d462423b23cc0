/* engine/files: a session's workspace files for every door (files.h).
 * Moved here from api/files.c, api/e2b_envd.c and mcp/tools.c, which
 * each had their own walk, depth cap and errno messages. */
#include "engine/files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "session/session.h"
#include "util/fs.h"
#include "util/macro.h"
#include "util/utf8.h"
#include "util/banned.h"

int engine_ws_of_session(const struct session *s, struct engine_ws *w)
{
	*w = (struct engine_ws){ .fd = -1 };
	if (!s)
		return -ESRCH;
	/* the workspace fd changes when the kernel restarts */
	w->fd = session_workspace_fd(s);
	if (w->fd < 0)
		return -ENOENT;
	session_workspace_owner(s, &w->owner.uid, &w->owner.gid);
	w->owner.chown = geteuid() == 0;
	return 0;
}

void engine_files_split(const char *path, char *parent, size_t n, const char **ret_name)
{
	const char *slash = strrchr(path, '/');

	if (!slash) {
		snprintf(parent, n, ".");
		*ret_name = path;
	} else {
		snprintf(parent, n, "%.*s", (int)(slash - path), path);
		*ret_name = slash + 1;
	}
}

static const char *or_root(const char *path)
{
	return path && *path ? path : ".";
}

static int mkdir_as_owner(const struct engine_ws *w, int dir, const char *name)
{
	struct ws_fsid prev = ws_become_owner(&w->owner);
	int r = mkdirat(dir, name, 0755) < 0 && errno != EEXIST ? -errno : 0;

	ws_restore_ids(prev);
	return r;
}

int engine_files_open_dir(const struct engine_ws *w, const char *path, bool mkdir)
{
	char comp[FILES_NAME_MAX + 1];
	unsigned depth = 0;
	int dir = openat_beneath(w->fd, ".", O_PATH | O_DIRECTORY, 0);

	while (dir >= 0 && *path) {
		size_t n = strcspn(path, "/");
		int next;

		if (n > FILES_NAME_MAX || ++depth > FILES_DEPTH_MAX) {
			close(dir);
			return -ENAMETOOLONG;
		}
		memcpy(comp, path, n);
		comp[n] = '\0';
		path += n + (path[n] == '/');
		if (!n || !strcmp(comp, "."))
			continue;
		next = mkdir ? mkdir_as_owner(w, dir, comp) : 0;
		if (next == 0)
			next = openat_beneath(dir, comp, O_PATH | O_DIRECTORY, 0);
		close(dir);
		dir = next;
	}
	return dir;
}

int engine_files_open(const struct engine_ws *w, const char *path, struct stat *st)
{
	int fd = openat_beneath(w->fd, or_root(path), O_RDONLY | O_NOCTTY | O_NONBLOCK, 0);

	if (fd < 0)
		return fd; /* -ENXIO: a socket the sandboxed code bound */
	if (fstat(fd, st) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode)) {
		close(fd);
		return -ENXIO;
	}
	return fd;
}

int engine_files_stat(const struct engine_ws *w, const char *path, struct stat *st)
{
	char parent[PATH_MAX];
	const char *name;
	_cleanup_close_ int dir = -1;

	if (!strcmp(or_root(path), "."))
		return fstat(w->fd, st) < 0 ? -errno : 0;
	engine_files_split(path, parent, sizeof(parent), &name);
	dir = engine_files_open_dir(w, parent, false);
	if (dir < 0)
		return dir;
	return fstatat(dir, name, st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

/* ---- listing ---- */

struct walk {
	struct engine_files_listing *l;
	engine_files_entry_fn fn;
	void *arg;
	size_t n;
};

/* The entries of the open directory fd (its workspace path rel), levels
 * down; fd is taken. */
static int walk_dir(struct walk *wk, int fd, const char *rel, unsigned levels)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;
	int r = 0;

	if (!d) {
		r = -errno;
		close(fd);
		return r;
	}
	while (r == 0 && !wk->l->truncated && (de = readdir(d))) {
		char sub[PATH_MAX];
		struct stat st;
		uint64_t bad;
		int n;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    (!wk->l->uploads &&
		     !strncmp(de->d_name, WS_UPLOAD_PREFIX, sizeof(WS_UPLOAD_PREFIX) - 1)))
			continue;
		if (!utf8_valid(de->d_name, strlen(de->d_name), &bad)) {
			wk->l->skipped++;
			continue;
		}
		if (wk->n == FILES_LIST_MAX) {
			wk->l->truncated = true;
			break;
		}
		n = snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", de->d_name);
		if (n < 0 || (size_t)n >= sizeof(sub) ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		r = wk->fn(wk->arg, dirfd(d), de->d_name, sub, &st);
		wk->n++;
		if (r == 0 && levels > 1 && S_ISDIR(st.st_mode)) {
			int sfd = openat(dirfd(d), de->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (sfd >= 0)
				r = walk_dir(wk, sfd, sub, levels - 1);
		}
	}
	closedir(d);
	return r;
}

int engine_files_list(const struct engine_ws *w, const char *path, struct engine_files_listing *l,
		      engine_files_entry_fn fn, void *arg)
{
	struct walk wk = { .l = l, .fn = fn, .arg = arg };
	struct stat st;
	int fd = engine_files_open(w, path, &st);

	l->truncated = false;
	l->skipped = 0;
	if (fd < 0)
		return fd == -ENXIO ? -ENOTDIR : fd;
	if (!S_ISDIR(st.st_mode)) {
		close(fd);
		return -ENOTDIR;
	}
	return walk_dir(&wk, fd, !strcmp(or_root(path), ".") ? "" : path,
			l->depth == 0		     ? 1
			: l->depth > FILES_DEPTH_MAX ? FILES_DEPTH_MAX
						     : l->depth);
}

/* ---- changes ---- */

int engine_files_mkdir(const struct engine_ws *w, const char *path)
{
	char parent[PATH_MAX];
	const char *name;
	struct ws_fsid prev;
	_cleanup_close_ int dir = -1;
	int r = 0;

	if (!strcmp(or_root(path), "."))
		return -EEXIST;
	engine_files_split(path, parent, sizeof(parent), &name);
	dir = engine_files_open_dir(w, parent, true);
	if (dir < 0)
		return dir;
	prev = ws_become_owner(&w->owner);
	if (mkdirat(dir, name, 0755) < 0)
		r = -errno;
	ws_restore_ids(prev);
	return r;
}

int engine_files_move(const struct engine_ws *w, const char *from, const char *to)
{
	char pf[PATH_MAX], pt[PATH_MAX];
	const char *nf, *nt;
	struct ws_fsid prev;
	_cleanup_close_ int df = -1;
	_cleanup_close_ int dt = -1;
	int r = 0;

	if (!strcmp(or_root(from), ".") || !strcmp(or_root(to), "."))
		return -EBUSY;
	engine_files_split(from, pf, sizeof(pf), &nf);
	engine_files_split(to, pt, sizeof(pt), &nt);
	df = engine_files_open_dir(w, pf, false);
	if (df < 0)
		return df;
	dt = engine_files_open_dir(w, pt, true);
	if (dt < 0)
		return dt;
	prev = ws_become_owner(&w->owner);
	if (renameat(df, nf, dt, nt) < 0)
		r = -errno;
	ws_restore_ids(prev);
	return r;
}

/* rm_rf_at() with a bound on its depth (FILES_DEPTH_MAX): a removal of
 * a tree nested tens of thousands deep overflowed the connection
 * thread's stack and took the whole server down.  Past the bound:
 * -EMLINK, once what lies above it is removed.  Never follows a symlink
 * (O_NOFOLLOW, one component at a time) nor crosses a mount. */
static int remove_tree(int parent, const char *name, unsigned depth)
{
	struct stat st, pst;
	struct dirent *de;
	DIR *d;
	int fd, r = 0;

	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(parent, name, 0) < 0 ? -errno : 0;
	if (depth >= FILES_DEPTH_MAX)
		return -EMLINK;
	if (fstat(parent, &pst) == 0 && pst.st_dev != st.st_dev)
		return -EXDEV;
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		r = -errno;
		close(fd);
		return r;
	}
	while ((de = readdir(d))) {
		int k;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		k = remove_tree(dirfd(d), de->d_name, depth + 1);
		if (k < 0 && r == 0)
			r = k;
	}
	closedir(d);
	if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && r == 0)
		r = -errno;
	return r;
}

int engine_files_remove(const struct engine_ws *w, const char *path)
{
	char parent[PATH_MAX];
	const char *name;
	struct stat st;
	struct ws_fsid prev;
	_cleanup_close_ int dir = -1;
	int r;

	if (!strcmp(or_root(path), "."))
		return -EBUSY;
	engine_files_split(path, parent, sizeof(parent), &name);
	dir = engine_files_open_dir(w, parent, false);
	if (dir < 0)
		return dir;
	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	prev = ws_become_owner(&w->owner);
	if (S_ISDIR(st.st_mode))
		r = remove_tree(dir, name, 0);
	else
		r = unlinkat(dir, name, 0) < 0 ? -errno : 0;
	ws_restore_ids(prev);
	return r;
}

/* ---- writes ---- */

int engine_upload_open(struct engine_upload *u, const struct engine_ws *w, const char *path)
{
	char parent[PATH_MAX];
	unsigned char rnd[8];
	const char *name;
	struct ws_fsid prev;
	struct stat st;
	int dir, fd;

	*u = (struct engine_upload){ .dir = -1, .fd = -1, .owner = w->owner };
	engine_files_split(path, parent, sizeof(parent), &name);
	if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
		return -EISDIR;
	if (fstat(w->fd, &st) < 0)
		return -errno;
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return -EIO;
	dir = engine_files_open_dir(w, parent, true);
	if (dir < 0)
		return dir;
	snprintf(u->tmp, sizeof(u->tmp), WS_UPLOAD_PREFIX "%02x%02x%02x%02x%02x%02x%02x%02x",
		 rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
	prev = ws_become_owner(&w->owner);
	fd = openat_beneath(dir, u->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644);
	ws_restore_ids(prev);
	if (fd < 0) {
		close(dir);
		return fd;
	}
	u->dir = dir;
	u->fd = fd;
	u->ws_dev = st.st_dev;
	u->ws_ino = st.st_ino;
	return 0;
}

int engine_upload_write(struct engine_upload *u, const void *data, size_t len, uint64_t max)
{
	int r;

	if (u->fd < 0)
		return -EBADF;
	if (u->size > max || len > max - u->size)
		return -E2BIG;
	r = write_all(u->fd, data, len);
	if (r == 0)
		u->size += len;
	return r;
}

int engine_upload_commit(struct engine_upload *u, const struct engine_ws *w, const char *path,
			 bool *ret_replaced)
{
	char parent[PATH_MAX];
	const char *name;
	struct stat st;
	struct ws_fsid prev;
	int r = 0;

	*ret_replaced = false;
	if (u->fd < 0)
		return -ESTALE;
	engine_files_split(path, parent, sizeof(parent), &name);
	if (fstat(w->fd, &st) < 0)
		return -errno;
	if (st.st_dev != u->ws_dev || st.st_ino != u->ws_ino)
		return -ESTALE;
	/* the sandboxed code may have truncated or grown it meanwhile */
	if (fstat(u->fd, &st) < 0)
		return -errno;
	if ((uint64_t)st.st_size != u->size)
		return -EIO;
	*ret_replaced = fstatat(u->dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (*ret_replaced && S_ISDIR(st.st_mode))
		return -EISDIR;
	prev = ws_become_owner(&u->owner);
	if (renameat(u->dir, u->tmp, u->dir, name) < 0)
		r = -errno;
	ws_restore_ids(prev);
	if (r == 0)
		u->done = true;
	return r;
}

void engine_upload_drop(struct engine_upload *u)
{
	struct ws_fsid prev;

	if (u->fd < 0)
		return;
	if (!u->done) {
		prev = ws_become_owner(&u->owner);
		(void)unlinkat(u->dir, u->tmp, 0);
		ws_restore_ids(prev);
	}
	close(u->fd);
	close(u->dir);
	u->fd = u->dir = -1;
}

int engine_files_write(const struct engine_ws *w, const char *path, const void *data, size_t len,
		       bool *ret_replaced)
{
	struct engine_upload u;
	int r = engine_upload_open(&u, w, path);

	*ret_replaced = false;
	if (r == 0)
		r = engine_upload_write(&u, data, len, len);
	if (r == 0)
		r = engine_upload_commit(&u, w, path, ret_replaced);
	engine_upload_drop(&u);
	return r;
}

/* ---- errors ---- */

/* One row per errno: /v1's status and code, envd's status, and the
 * message: with_what, "%s" the operation then "%s" the path; else the
 * path only. */
static const struct {
	int err, http, e2b_http;
	const char *code;
	bool with_what;
	const char *fmt;
} errors[] = {
	{ ENOENT, 404, 404, "file_not_found", false,
	  "no such file or directory in the workspace: '%s'" },
	{ EXDEV, 400, 400, "invalid_path", false,
	  "'%s' leads out of the workspace (through a symlink or '..'): paths are relative to it" },
	{ ELOOP, 400, 400, "invalid_path", false,
	  "'%s' leads out of the workspace (through a symlink or '..'): paths are relative to it" },
	{ ENOTDIR, 400, 400, "invalid_path", false, "a component of '%s' is not a directory" },
	{ EISDIR, 409, 400, "is_a_directory", false, "'%s' is a directory" },
	{ EEXIST, 409, 409, "already_exists", false, "'%s' already exists" },
	{ ENXIO, 400, 400, "not_a_file", false, "'%s' is neither a file nor a directory" },
	{ ENOSPC, 507, 507, "workspace_full", true,
	  "the workspace is full (%s '%s'): remove files" },
	{ EDQUOT, 507, 507, "workspace_full", true,
	  "the workspace is full (%s '%s'): remove files" },
	{ E2BIG, 413, 413, "body_too_large", false,
	  "'%s' is over the largest file this server takes in one request" },
	{ EFBIG, 413, 413, "file_too_large", false, "'%s' is over the sandbox's file size limit" },
	{ ENAMETOOLONG, 400, 400, "invalid_path", false,
	  "'%s' has a name over 255 bytes or directories nested over 128 levels deep" },
	{ ESTALE, 409, 409, "session_restarting", false,
	  "the session restarted during the upload of '%s' and has a new workspace: send the file again" },
	{ EMLINK, 409, 409, "too_deep", false,
	  "'%s' holds directories nested over 128 levels deep and was removed only in part: remove the rest from code in the session ('rm -rf')" },
	{ EBUSY, 400, 400, "invalid_path", true,
	  "cannot %s the workspace itself ('%s'): name a file or directory in it" },
};
_Static_assert(FILES_DEPTH_MAX == 128 && FILES_NAME_MAX == 255, "the messages above name them");

void engine_files_error(int err, const char *what, const char *path, struct engine_files_error *out)
{
	path = or_root(path);
	for (size_t i = 0; i < ARRAY_SIZE(errors); i++)
		if (errors[i].err == -err) {
			out->http = errors[i].http;
			out->e2b_http = errors[i].e2b_http;
			out->code = errors[i].code;
			if (errors[i].with_what)
				snprintf(out->message, sizeof(out->message), errors[i].fmt, what,
					 path);
			else
				snprintf(out->message, sizeof(out->message), errors[i].fmt, path);
			return;
		}
	out->http = out->e2b_http = 500;
	out->code = "file_error";
	snprintf(out->message, sizeof(out->message), "cannot %s '%s': %s", what, path,
		 strerror(-err));
}
