/* A project's changes: the overlay's upper layer against the project
 * (changes.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "session/changes.h"
#include "util/fs.h"
#include "util/macro.h"
#include "util/textdiff.h"
#include "util/banned.h"

#define OPAQUE_XATTR "user.overlay.opaque"
#define APPLY_TMP ".codecell-apply-"

const char *change_kind_name(enum change_kind k)
{
	return k == CHANGE_ADDED ? "added" : k == CHANGE_MODIFIED ? "modified" : "deleted";
}

const char *change_type_name(enum change_type t)
{
	return t == CHANGE_FILE ? "file" : t == CHANGE_DIR ? "dir" : "symlink";
}

int changes_base_init(struct changes_base *b, const char *dir)
{
	char real[PATH_MAX];
	struct stat st;

	memset(b, 0, sizeof(*b));
	if (!realpath(dir, real))
		return -errno;
	if (strlen(real) >= sizeof(b->project))
		return -ENAMETOOLONG;
	if (stat(real, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	snprintf(b->project, sizeof(b->project), "%s", real);
	b->dev = st.st_dev;
	b->ino = st.st_ino;
	b->uid = st.st_uid;
	b->gid = st.st_gid;
	b->since_ns = changes_start_ns();
	return 0;
}

/* A change's ctime is the coarse clock's, or finer (multigrain
 * timestamps, Linux 6.13), and the coarse clock may lag real time by
 * more than a tick: neither clock read from here orders a file's ctime
 * against "now".  A file's own ctime does: a fence, a memfd whose ctime
 * is set after it was looked at (so, on a multigrain filesystem, finely,
 * which also raises the floor every later coarse stamp is kept above).
 * A change after the fence has a ctime at or past it; one before it, an
 * earlier one (or, without multigrain timestamps, at most the same
 * coarse tick: a refusal too many, never one too few). */
int64_t changes_start_ns(void)
{
	struct stat st;
	struct timespec ts;
	int fd = memfd_create("codecell-fence", MFD_CLOEXEC);

	if (fd >= 0 && fstat(fd, &st) == 0 && fchmod(fd, 0600) == 0 && fstat(fd, &st) == 0) {
		close(fd);
		return (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
	}
	if (fd >= 0)
		close(fd);
	/* no memfd: the coarse clock, a tick back (a refusal too many) */
	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - 20000000;
}

void change_list_release(struct change_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].path);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* ---- resolving beneath a root ---- */

static int open_at2(int root, const char *path, int flags, mode_t mode)
{
	struct open_how how = { .flags = (uint64_t)(flags | O_CLOEXEC),
				.mode = mode,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					   RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV };
	long fd;

	do
		fd = syscall(SYS_openat2, root, path, &how, sizeof(how));
	while (fd < 0 && errno == EAGAIN);
	return fd < 0 ? -errno : (int)fd;
}

/* The directory holding path under root (O_PATH) and path's last name. */
static int open_parent(int root, const char *path, const char **ret_name)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];

	if (!slash) {
		*ret_name = path;
		return open_at2(root, ".", O_PATH | O_DIRECTORY, 0);
	}
	if ((size_t)(slash - path) >= sizeof(dir))
		return -ENAMETOOLONG;
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	*ret_name = slash + 1;
	return open_at2(root, dir, O_PATH | O_DIRECTORY, 0);
}

/* lstat of path beneath root; -ENOENT also when a parent is missing or
 * not a directory (or a symlink: never followed). */
static int stat_beneath(int root, const char *path, struct stat *st)
{
	const char *name;
	_cleanup_close_ int p = open_parent(root, path, &name);

	if (p < 0)
		return p == -ENOTDIR || p == -ELOOP || p == -EXDEV ? -ENOENT : p;
	if (fstatat(p, name, st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOTDIR ? -ENOENT : -errno;
	return 0;
}

static bool is_whiteout(const struct stat *st)
{
	return S_ISCHR(st->st_mode) && st->st_rdev == makedev(0, 0);
}

/* ---- the walk ---- */

static int add(struct change_list *l, const char *path, enum change_kind k, enum change_type t,
	       const struct stat *st)
{
	struct change *c;

	if (l->n >= CHANGES_MAX_ENTRIES) {
		l->truncated = true;
		return -E2BIG;
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct change *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	c = &l->v[l->n];
	*c = (struct change){ .kind = k,
			      .type = t,
			      .size = S_ISREG(st->st_mode) ? (uint64_t)st->st_size : 0,
			      .mode = st->st_mode & 07777 };
	c->path = strdup(path);
	if (!c->path)
		return -ENOMEM;
	l->n++;
	return 0;
}

static int type_of(mode_t m, enum change_type *t)
{
	if (S_ISREG(m))
		*t = CHANGE_FILE;
	else if (S_ISDIR(m))
		*t = CHANGE_DIR;
	else if (S_ISLNK(m))
		*t = CHANGE_SYMLINK;
	else
		return -1;
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in directory fd (not . and ..), sorted; at most cap. */
static int list_dir(int fd, char ***ret, size_t *ret_n, size_t cap)
{
	int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char **v = NULL;
	size_t n = 0, alloc = 0;
	struct dirent *e;
	DIR *d;

	if (dfd < 0)
		return -errno;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -errno;
	}
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (n >= cap)
			break;
		if (n == alloc) {
			char **nv = realloc(v, (alloc = alloc ? 2 * alloc : 16) * sizeof(*v));

			if (!nv)
				break;
			v = nv;
		}
		if (!(v[n] = strdup(e->d_name)))
			break;
		n++;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), cmp_names);
	*ret = v;
	*ret_n = n;
	return 0;
}

static void free_names(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static int join(char *out, size_t n, const char *dir, const char *name)
{
	int k = snprintf(out, n, "%s%s%s", dir, *dir ? "/" : "", name);

	return k < 0 || (size_t)k >= n ? -ENAMETOOLONG : 0;
}

/* Every entry of the project at path (lst its stat) as deleted,
 * directories before what they hold. */
static int add_deleted(struct change_list *l, int lower_dir, const char *name, const char *path,
		       const struct stat *lst, int depth)
{
	enum change_type t;
	char **names = NULL;
	size_t n = 0;
	int sub, r;

	if (type_of(lst->st_mode, &t) < 0)
		return 0;
	r = add(l, path, CHANGE_DELETED, t, lst);
	if (r < 0 || t != CHANGE_DIR || depth >= CHANGES_MAX_DEPTH)
		return r;
	sub = openat(lower_dir, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub < 0)
		return 0;
	r = list_dir(sub, &names, &n, CHANGES_MAX_ENTRIES);
	for (size_t i = 0; r == 0 && i < n; i++) {
		char child[PATH_MAX];
		struct stat st;

		if (join(child, sizeof(child), path, names[i]) < 0 ||
		    fstatat(sub, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		r = add_deleted(l, sub, names[i], child, &st, depth + 1);
	}
	free_names(names, n);
	close(sub);
	return r;
}

/* Same bytes?  Both regular files, up to any size, read in chunks. */
static bool same_content(int a_dir, const char *a_name, int b_dir, const char *b_name)
{
	char x[16384], y[16384];
	_cleanup_close_ int a =
		openat(a_dir, a_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	_cleanup_close_ int b =
		openat(b_dir, b_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (a < 0 || b < 0)
		return false;
	for (;;) {
		ssize_t n = read(a, x, sizeof(x)), m;

		if (n < 0)
			return false;
		m = n ? read(b, y, (size_t)n) : read(b, y, 1);
		if (m != n || (n && memcmp(x, y, (size_t)n)))
			return false;
		if (n == 0)
			return true;
	}
}

static bool same_link(int a_dir, const char *a_name, int b_dir, const char *b_name)
{
	char x[PATH_MAX], y[PATH_MAX];
	ssize_t n = readlinkat(a_dir, a_name, x, sizeof(x));
	ssize_t m = readlinkat(b_dir, b_name, y, sizeof(y));

	return n >= 0 && n == m && !memcmp(x, y, (size_t)n);
}

static bool opaque(int dir, const char *name)
{
	_cleanup_close_ int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	char v[4];

	return fd >= 0 && fgetxattr(fd, OPAQUE_XATTR, v, sizeof(v)) == 1 && v[0] == 'y';
}

static int walk(struct change_list *l, int up, int low, const char *dir, bool hide_lower,
		int depth);

/* One name of an upper directory against the project's (low, or -1). */
static int walk_entry(struct change_list *l, int up, int low, const char *path, const char *name,
		      bool hide_lower, int depth)
{
	struct stat st, lst;
	bool has_low = low >= 0 && fstatat(low, name, &lst, AT_SYMLINK_NOFOLLOW) == 0;
	enum change_type t;
	int r = 0;

	if (fstatat(up, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0; /* gone since the listing: the program runs on */
	if (is_whiteout(&st))
		return has_low ? add_deleted(l, low, name, path, &lst, depth) : 0;
	if (type_of(st.st_mode, &t) < 0) {
		l->skipped++;
		return 0;
	}
	/* the project has something else by that name: it goes first */
	if (has_low && ((lst.st_mode ^ st.st_mode) & S_IFMT)) {
		r = add_deleted(l, low, name, path, &lst, depth);
		has_low = false;
	}
	if (r < 0)
		return r;
	if (t == CHANGE_DIR) {
		bool hide = hide_lower || opaque(up, name);
		int sub_up, sub_low = -1;

		if (!has_low && (r = add(l, path, CHANGE_ADDED, t, &st)) < 0)
			return r;
		if (depth >= CHANGES_MAX_DEPTH)
			return 0;
		sub_up = openat(up, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub_up < 0)
			return 0;
		if (has_low)
			sub_low = openat(low, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		r = walk(l, sub_up, sub_low, path, hide, depth + 1);
		close(sub_up);
		if (sub_low >= 0)
			close(sub_low);
		return r;
	}
	if (!has_low)
		return add(l, path, CHANGE_ADDED, t, &st);
	if (t == CHANGE_SYMLINK)
		return same_link(up, name, low, name) ? 0 : add(l, path, CHANGE_MODIFIED, t, &st);
	if (st.st_size == lst.st_size && same_content(up, name, low, name)) {
		if ((st.st_mode & 0777) == (lst.st_mode & 0777))
			return 0;
		r = add(l, path, CHANGE_MODIFIED, t, &st);
		if (r == 0)
			l->v[l->n - 1].mode_only = true;
	} else {
		r = add(l, path, CHANGE_MODIFIED, t, &st);
	}
	if (r == 0)
		l->v[l->n - 1].old_mode = lst.st_mode & 07777;
	return r;
}

/* An upper directory (up) against the project's (low, or -1).
 * hide_lower: an opaque directory here or above: what the project has
 * and the upper layer does not is deleted. */
static int walk(struct change_list *l, int up, int low, const char *dir, bool hide_lower, int depth)
{
	char **names = NULL, **lnames = NULL;
	size_t n = 0, ln = 0;
	int r = list_dir(up, &names, &n, CHANGES_MAX_ENTRIES);

	for (size_t i = 0; r == 0 && i < n; i++) {
		char path[PATH_MAX];

		if (join(path, sizeof(path), dir, names[i]) < 0)
			continue;
		r = walk_entry(l, up, low, path, names[i], hide_lower, depth);
	}
	if (r == 0 && hide_lower && low >= 0 &&
	    list_dir(low, &lnames, &ln, CHANGES_MAX_ENTRIES) == 0) {
		for (size_t i = 0; r == 0 && i < ln; i++) {
			char path[PATH_MAX];
			struct stat st;

			if (bsearch(&lnames[i], names, n, sizeof(*names), cmp_names) ||
			    join(path, sizeof(path), dir, lnames[i]) < 0 ||
			    fstatat(low, lnames[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			r = add_deleted(l, low, lnames[i], path, &st, depth);
		}
		free_names(lnames, ln);
	}
	free_names(names, n);
	return r;
}

int changes_list(int upper_fd, const struct changes_base *b, struct change_list *ret)
{
	_cleanup_close_ int low = open(b->project, O_PATH | O_DIRECTORY | O_CLOEXEC);
	_cleanup_close_ int up = openat(upper_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int r;

	memset(ret, 0, sizeof(*ret));
	if (low < 0 || up < 0)
		return -errno;
	r = walk(ret, up, low, "", false, 0);
	if (r == -E2BIG)
		r = 0; /* truncated says so */
	if (r < 0)
		change_list_release(ret);
	return r;
}

/* ---- the unified diff ---- */

struct text {
	struct buf b;
	bool binary, too_big, missing;
};

/* Read a regular file (or a symlink's target) beneath root into t. */
static void text_read(struct text *t, int root, const char *path, enum change_type type)
{
	const char *name;
	_cleanup_close_ int p = -1;
	_cleanup_close_ int fd = -1;

	memset(t, 0, sizeof(*t));
	buf_init(&t->b, CHANGES_TEXT_MAX);
	p = open_parent(root, path, &name);
	if (p < 0) {
		t->missing = true;
		return;
	}
	if (type == CHANGE_SYMLINK) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(p, name, target, sizeof(target));

		if (n < 0 || buf_append(&t->b, target, (size_t)n) < 0)
			t->missing = true;
	} else {
		struct stat st;

		fd = openat(p, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			t->missing = true;
			return;
		}
		if (buf_read_fd(&t->b, fd) < 0) {
			t->too_big = true;
			return;
		}
	}
	t->binary = t->b.len && memchr(t->b.data, '\0', t->b.len);
}

static int diff_one(struct buf *out, int up, int low, const struct change *c)
{
	const char *p = c->path;
	unsigned mode = (c->type == CHANGE_SYMLINK ? 0120000u : 0100000u) | (c->mode & 0777);
	struct text a = { 0 }, b = { 0 };
	int r;

	if (c->type == CHANGE_DIR)
		return buf_printf(out, "%s directory %s/\n",
				  c->kind == CHANGE_DELETED ? "deleted" : "new", p);
	r = buf_printf(out, "diff --git a/%s b/%s\n", p, p);
	if (r == 0 && c->kind == CHANGE_ADDED)
		r = buf_printf(out, "new file mode %06o\n", mode);
	if (r == 0 && c->kind == CHANGE_DELETED)
		r = buf_printf(out, "deleted file mode %06o\n", mode);
	if (r == 0 && c->kind == CHANGE_MODIFIED && (c->old_mode & 0777) != (c->mode & 0777))
		r = buf_printf(out, "old mode %06o\nnew mode %06o\n",
			       0100000u | (c->old_mode & 0777), mode);
	if (r < 0 || c->mode_only)
		return r;
	if (c->kind != CHANGE_ADDED)
		text_read(&a, low, p, c->type);
	else
		buf_init(&a.b, 1);
	if (c->kind != CHANGE_DELETED)
		text_read(&b, up, p, c->type);
	else
		buf_init(&b.b, 1);
	if (a.binary || b.binary || a.too_big || b.too_big || a.missing || b.missing)
		r = buf_printf(out, "Binary files %s%s and %s%s differ\n",
			       c->kind == CHANGE_ADDED ? "/dev/null" : "a/",
			       c->kind == CHANGE_ADDED ? "" : p,
			       c->kind == CHANGE_DELETED ? "/dev/null" : "b/",
			       c->kind == CHANGE_DELETED ? "" : p);
	else {
		r = buf_printf(out, "--- %s%s\n+++ %s%s\n",
			       c->kind == CHANGE_ADDED ? "/dev/null" : "a/",
			       c->kind == CHANGE_ADDED ? "" : p,
			       c->kind == CHANGE_DELETED ? "/dev/null" : "b/",
			       c->kind == CHANGE_DELETED ? "" : p);
		if (r == 0)
			r = text_diff(a.b.data ? a.b.data : "", a.b.len, b.b.data ? b.b.data : "",
				      b.b.len, out);
	}
	buf_release(&a.b);
	buf_release(&b.b);
	return r;
}

int changes_diff(int upper_fd, const struct changes_base *b, const struct change_list *l,
		 struct buf *out)
{
	_cleanup_close_ int low = open(b->project, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int r = 0;

	if (low < 0)
		return -errno;
	for (size_t i = 0; i < l->n && r == 0; i++) {
		size_t keep = out->len;

		r = diff_one(out, upper_fd, low, &l->v[i]);
		if (r == -E2BIG) {
			/* whole entries only */
			out->len = keep;
			if (out->data)
				out->data[keep] = '\0';
		}
	}
	return r;
}

json_t *changes_json(const struct changes_base *b, const struct change_list *l,
		     const struct buf *diff, bool diff_truncated)
{
	json_t *arr = json_array(), *o;

	if (!arr)
		return NULL;
	for (size_t i = 0; i < l->n; i++) {
		const struct change *c = &l->v[i];
		json_t *e = json_pack("{s:s, s:s, s:s}", "path", c->path, "change",
				      change_kind_name(c->kind), "type", change_type_name(c->type));

		if (!e)
			continue;
		if (c->type == CHANGE_FILE) {
			json_object_set_new(e, "size", json_integer((json_int_t)c->size));
			json_object_set_new(e, "mode", json_integer((json_int_t)(c->mode & 0777)));
		}
		if (c->mode_only)
			json_object_set_new(e, "mode_only", json_true());
		json_array_append_new(arr, e);
	}
	o = json_pack("{s:s, s:o, s:b, s:s, s:b}", "project", b->project, "changes", arr,
		      "truncated", l->truncated, "diff", diff ? buf_str(diff) : "",
		      "diff_truncated", diff_truncated);
	return o;
}

/* ---- the digest ---- */

/* Read fd to its end into h; *n: the bytes read. */
static int hash_fd(int fd, struct sha256 *h, uint64_t *n)
{
	char chunk[65536];
	ssize_t k;

	while ((k = read(fd, chunk, sizeof(chunk))) > 0) {
		sha256_update(h, chunk, (size_t)k);
		*n += (uint64_t)k;
	}
	return k < 0 ? -errno : 0;
}

/* A name that no longer resolves as listed (gone, or a directory on the
 * way replaced by a symlink or a file) is a change since the listing. */
static int moved(int r)
{
	return r == -ENOENT || r == -ELOOP || r == -ENOTDIR || r == -EXDEV || r == -EINVAL
		       ? -ECANCELED
		       : r;
}

/* c's new side from up into c->sha256, its size into *ret_size. */
static int hash_entry(int up, struct change *c, uint64_t *ret_size)
{
	const char *name;
	_cleanup_close_ int p = -1;
	_cleanup_close_ int fd = -1;
	struct sha256 h;
	struct stat st;
	uint64_t n = 0;
	int r = 0;

	sha256_init(&h);
	if (c->kind != CHANGE_DELETED && c->type != CHANGE_DIR) {
		p = open_parent(up, c->path, &name);
		if (p < 0)
			return moved(p);
		if (c->type == CHANGE_SYMLINK) {
			char target[PATH_MAX];
			ssize_t k = readlinkat(p, name, target, sizeof(target));

			if (k < 0)
				return moved(-errno);
			sha256_update(&h, target, (size_t)k);
			n = (uint64_t)k;
		} else {
			fd = openat(p, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
			if (fd < 0)
				return moved(-errno);
			if (fstat(fd, &st) < 0)
				return -errno;
			if (!S_ISREG(st.st_mode))
				return -ECANCELED;
			r = hash_fd(fd, &h, &n);
			c->size = n;
		}
	}
	sha256_final(&h, c->sha256);
	*ret_size = n;
	return r;
}

static void hex(const unsigned char *d, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = "0123456789abcdef"[d[i] >> 4];
		out[2 * i + 1] = "0123456789abcdef"[d[i] & 15];
	}
	out[2 * n] = '\0';
}

int changes_digest(int upper_fd, struct change_list *l, char out[2 * SHA256_LEN + 1],
		   uint64_t *ret_bytes)
{
	unsigned char d[SHA256_LEN];
	uint64_t total = 0;
	struct sha256 all;

	sha256_init(&all);
	for (size_t i = 0; i < l->n; i++) {
		struct change *c = &l->v[i];
		char head[128], content[2 * SHA256_LEN + 1];
		uint64_t size;
		int r = hash_entry(upper_fd, c, &size), k;

		if (r < 0)
			return r;
		total += size;
		hex(c->sha256, SHA256_LEN, content);
		/* the path with its length first: no name can pass for two */
		k = snprintf(head, sizeof(head), "%zu:", strlen(c->path));
		sha256_update(&all, head, (size_t)k);
		sha256_update(&all, c->path, strlen(c->path));
		k = snprintf(head, sizeof(head), " %s %s %04o %" PRIu64 " ",
			     change_kind_name(c->kind), change_type_name(c->type),
			     (unsigned)(c->mode & 0777), size);
		sha256_update(&all, head, (size_t)k);
		sha256_update(&all, content, 2 * SHA256_LEN);
		sha256_update(&all, "\n", 1);
	}
	sha256_final(&all, d);
	hex(d, SHA256_LEN, out);
	l->planned = true;
	*ret_bytes = total;
	return 0;
}

/* ---- the check ---- */

static int64_t ctime_ns(const struct stat *st)
{
	return (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}

int changes_check(const struct changes_base *b, const struct change_list *l, char *msg, size_t n)
{
	_cleanup_close_ int root = open(b->project, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat st;

	if (root < 0 || fstat(root, &st) < 0) {
		snprintf(msg, n, "cannot open the project '%s': %s", b->project, strerror(errno));
		return -ESTALE;
	}
	if (st.st_dev != b->dev || st.st_ino != b->ino) {
		snprintf(msg, n, "the project '%s' is another directory now", b->project);
		return -ESTALE;
	}
	for (size_t i = 0; i < l->n; i++) {
		char path[PATH_MAX];
		int r;

		snprintf(path, sizeof(path), "%s", l->v[i].path);
		r = stat_beneath(root, path, &st);
		/* missing: the nearest ancestor there is tells whether an entry
		 * went or came since */
		while (r == -ENOENT) {
			char *slash = strrchr(path, '/');

			if (!slash) {
				r = fstat(root, &st) < 0 ? -errno : 0;
				break;
			}
			*slash = '\0';
			r = stat_beneath(root, path, &st);
		}
		if (r < 0) {
			snprintf(msg, n, "cannot check '%s' in '%s': %s", l->v[i].path, b->project,
				 strerror(-r));
			return -ESTALE;
		}
		if (ctime_ns(&st) >= b->since_ns) {
			snprintf(msg, n,
				 "'%s' changed in '%s' since the session started: the changes were "
				 "not applied; look at both, then apply by hand or discard",
				 l->v[i].path, b->project);
			return -ESTALE;
		}
	}
	return 0;
}

/* ---- copying ---- */

static int remove_entry(int parent, const char *name)
{
	if (unlinkat(parent, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	return rm_rf_at(parent, name);
}

static int tmp_name(char *out, size_t n)
{
	unsigned char r[8];

	if (getrandom(r, sizeof(r), 0) != sizeof(r))
		return -EIO;
	snprintf(out, n, APPLY_TMP "%02x%02x%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3], r[4],
		 r[5], r[6], r[7]);
	return 0;
}

static bool same_digest(const void *data, size_t n, const struct change *want)
{
	unsigned char d[SHA256_LEN];
	struct sha256 h;

	sha256_init(&h);
	sha256_update(&h, data, n);
	sha256_final(&h, d);
	return !memcmp(d, want->sha256, SHA256_LEN);
}

/* in to its end into out; with want, the bytes copied must be want's
 * (its digest and size), or -ECANCELED: the file is then not renamed
 * into place, so what lands is what was read for the digest, byte for
 * byte, whatever the sandbox writes meanwhile. */
static int copy_fd_all(int in, int out, const struct change *want)
{
	char chunk[65536];
	unsigned char d[SHA256_LEN];
	struct sha256 h;
	uint64_t n = 0;
	ssize_t k;

	sha256_init(&h);
	while ((k = read(in, chunk, sizeof(chunk))) > 0) {
		int r = write_all(out, chunk, (size_t)k);

		if (r < 0)
			return r;
		if (want)
			sha256_update(&h, chunk, (size_t)k);
		n += (uint64_t)k;
	}
	if (k < 0)
		return -errno;
	sha256_final(&h, d);
	return want && (n != want->size || memcmp(d, want->sha256, SHA256_LEN)) ? -ECANCELED : 0;
}

/* A new file or symlink under a temporary name, renamed over name: a
 * hard link at name keeps its contents. */
static int put_file(int src_parent, const char *src_name, const struct stat *sst, int dst_parent,
		    const char *name, const struct ws_owner *o, const struct changes_base *gate,
		    const struct change *want)
{
	char tmp[64], target[PATH_MAX];
	_cleanup_close_ int in = -1;
	_cleanup_close_ int out = -1;
	struct ws_fsid prev;
	int r = 0;

	if (tmp_name(tmp, sizeof(tmp)) < 0)
		return -EIO;
	if (S_ISLNK(sst->st_mode)) {
		ssize_t k = readlinkat(src_parent, src_name, target, sizeof(target) - 1);

		if (k < 0)
			return want ? moved(-errno) : -errno;
		target[k] = '\0';
		if (want && !same_digest(target, (size_t)k, want))
			return -ECANCELED;
	} else {
		/* read as ourselves, before the fsuid change */
		struct stat ist;

		in = openat(src_parent, src_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (in < 0)
			return -errno;
		/* swapped for a FIFO or the like since it was listed */
		if (fstat(in, &ist) < 0 || !S_ISREG(ist.st_mode))
			return want ? -ECANCELED : -EINVAL;
		/* into a sandbox: only what it could read through its lower
		 * layer (the owner's files by the owner's bit, others' by the
		 * others' bit); the rest stays as the program left it */
		if (gate &&
		    !(ist.st_uid == gate->uid ? ist.st_mode & S_IRUSR : ist.st_mode & S_IROTH))
			return 1;
	}
	prev = ws_become_owner(o);
	if (S_ISLNK(sst->st_mode)) {
		if (symlinkat(target, dst_parent, tmp) < 0)
			r = -errno;
	} else {
		/* permission bits only: no set-id bits in the project */
		out = openat(dst_parent, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			     sst->st_mode & 0777);
		if (out < 0)
			r = -errno;
		if (r == 0)
			r = copy_fd_all(in, out, want);
		if (r == 0 && fchmod(out, sst->st_mode & 0777) < 0)
			r = -errno;
	}
	if (r == 0 && renameat(dst_parent, tmp, dst_parent, name) < 0) {
		r = -errno;
		if (r == -EISDIR || r == -ENOTEMPTY || r == -EEXIST) {
			r = remove_entry(dst_parent, name);
			if (r == 0 && renameat(dst_parent, tmp, dst_parent, name) < 0)
				r = -errno;
		}
	}
	if (r < 0)
		(void)unlinkat(dst_parent, tmp, 0);
	ws_restore_ids(prev);
	return r;
}

static int put_dir(int dst_parent, const char *name, mode_t mode, const struct ws_owner *o)
{
	struct ws_fsid prev = ws_become_owner(o);
	struct stat st;
	int r = 0;

	if (fstatat(dst_parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode))
		r = remove_entry(dst_parent, name);
	if (r == 0 && mkdirat(dst_parent, name, (mode & 0777) | 0700) < 0 && errno != EEXIST)
		r = -errno;
	ws_restore_ids(prev);
	return r;
}

/* A deletion or a directory of a planned apply: the deletion removes,
 * the directory is made with the planned mode (files and symlinks come
 * from the staging directory: copy_planned_all). */
static int copy_planned(int dst, const struct change *c, const struct ws_owner *o)
{
	const char *dname;
	_cleanup_close_ int dp = open_parent(dst, c->path, &dname);

	/* the parent went with an earlier entry (a directory removed) */
	if (dp < 0)
		return dp == -ENOENT && c->kind == CHANGE_DELETED ? 0 : dp;
	if (c->kind == CHANGE_DELETED) {
		struct ws_fsid prev = ws_become_owner(o);
		int r = remove_entry(dp, dname);

		ws_restore_ids(prev);
		return r;
	}
	return put_dir(dp, dname, c->mode, o);
}

static int copy_one(int src, int dst, const struct change *c, const struct ws_owner *o,
		    const struct changes_base *gate)
{
	const char *sname, *dname;
	_cleanup_close_ int sp = open_parent(src, c->path, &sname);
	_cleanup_close_ int dp = open_parent(dst, c->path, &dname);
	struct stat st;
	bool there =
		sp >= 0 && fstatat(sp, sname, &st, AT_SYMLINK_NOFOLLOW) == 0 && !is_whiteout(&st);

	/* the parent went with an earlier entry (a directory removed) */
	if (dp < 0)
		return dp == -ENOENT && !there ? 0 : dp;
	if (!there) {
		struct ws_fsid prev = ws_become_owner(o);
		int r = remove_entry(dp, dname);

		ws_restore_ids(prev);
		return r;
	}
	if (S_ISDIR(st.st_mode))
		return put_dir(dp, dname, st.st_mode, o);
	if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))
		return put_file(sp, sname, &st, dp, dname, o, gate, NULL);
	return 0; /* FIFOs and the like are never carried */
}

/* Staged entry i of a planned apply into place at c->path: renamed from
 * the staging directory (the same filesystem as the project's top), or
 * copied where a directory on another filesystem is in the way (the
 * staged bytes are ours, checked already). */
static int place_staged(int stage, size_t i, int dst, const struct change *c,
			const struct ws_owner *o)
{
	const char *dname;
	_cleanup_close_ int dp = open_parent(dst, c->path, &dname);
	struct stat st = { .st_mode = (c->type == CHANGE_SYMLINK ? S_IFLNK : S_IFREG) |
				      (c->mode & 0777) };
	struct ws_fsid prev;
	char name[24];
	int r = 0;

	if (dp < 0)
		return dp;
	snprintf(name, sizeof(name), "%zu", i);
	prev = ws_become_owner(o);
	if (renameat(stage, name, dp, dname) < 0) {
		r = -errno;
		if (r == -EISDIR || r == -ENOTEMPTY || r == -EEXIST) {
			r = remove_entry(dp, dname);
			if (r == 0 && renameat(stage, name, dp, dname) < 0)
				r = -errno;
		}
	}
	ws_restore_ids(prev);
	if (r == -EXDEV)
		r = put_file(stage, name, &st, dp, dname, o, NULL, c);
	return r;
}

/* A planned apply is all or nothing where the sandbox can make it fail:
 * every file and symlink is first copied into a staging directory at
 * the project's top and checked against its digest there; one that the
 * sandbox changed since it was read (or that is gone) removes the
 * staging directory, and nothing in the project changed.  Only then are
 * deletions made, directories made and the staged entries renamed into
 * place, in the list's order: that step fails only as the filesystem
 * does (no space for a directory, an I/O error), and says how far it
 * got. */
static int copy_planned_all(int src_fd, int dst_fd, const struct change_list *l,
			    const struct ws_owner *o, char *msg, size_t n)
{
	char stage_name[64];
	_cleanup_close_ int stage = -1;
	struct ws_fsid prev;
	size_t i;
	int r = tmp_name(stage_name, sizeof(stage_name));

	if (r == 0) {
		prev = ws_become_owner(o);
		if (mkdirat(dst_fd, stage_name, 0700) < 0)
			r = -errno;
		else if ((stage = openat(dst_fd, stage_name,
					 O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
			r = -errno;
		ws_restore_ids(prev);
	}
	if (r < 0) {
		snprintf(msg, n,
			 "cannot make a staging directory in the project: %s; nothing was "
			 "written",
			 strerror(-r));
		return r;
	}
	for (i = 0; r == 0 && i < l->n; i++) {
		const struct change *c = &l->v[i];
		struct stat st = { .st_mode = (c->type == CHANGE_SYMLINK ? S_IFLNK : S_IFREG) |
					      (c->mode & 0777) };
		const char *sname;
		_cleanup_close_ int sp = -1;
		char name[24];

		if (c->kind == CHANGE_DELETED || c->type == CHANGE_DIR)
			continue;
		snprintf(name, sizeof(name), "%zu", i);
		sp = open_parent(src_fd, c->path, &sname);
		r = sp < 0 ? moved(sp) : put_file(sp, sname, &st, stage, name, o, NULL, c);
	}
	if (r < 0) {
		const char *path = l->v[i - 1].path;

		if (r == -ECANCELED)
			snprintf(msg, n,
				 "'%s' changed in the sandbox since the changes were read: "
				 "nothing was written; look at the changes again",
				 path);
		else
			snprintf(msg, n, "cannot stage '%s': %s; nothing was written", path,
				 strerror(-r));
	}
	for (i = 0; r == 0 && i < l->n; i++) {
		const struct change *c = &l->v[i];

		r = c->kind == CHANGE_DELETED || c->type == CHANGE_DIR
			    ? copy_planned(dst_fd, c, o)
			    : place_staged(stage, i, dst_fd, c, o);
		if (r < 0)
			snprintf(msg, n, "cannot write '%s': %s (%zu of %zu changes done)", c->path,
				 strerror(-r), i, l->n);
	}
	prev = ws_become_owner(o);
	(void)rm_rf_at(dst_fd, stage_name);
	ws_restore_ids(prev);
	return r;
}

static int copy_all(int src_fd, int dst_fd, const struct change_list *l, const struct ws_owner *o,
		    const struct changes_base *gate, char *msg, size_t n)
{
	int kept = 0;

	if (l->planned)
		return copy_planned_all(src_fd, dst_fd, l, o, msg, n);
	for (size_t i = 0; i < l->n; i++) {
		int r = copy_one(src_fd, dst_fd, &l->v[i], o, gate);

		kept += r == 1;
		if (r < 0) {
			snprintf(msg, n, "cannot write '%s': %s (%zu of %zu changes done)",
				 l->v[i].path, strerror(-r), i, l->n);
			return r;
		}
	}
	return kept;
}

int changes_copy(int src_fd, int dst_fd, const struct change_list *l, const struct ws_owner *o,
		 char *msg, size_t n)
{
	int r = copy_all(src_fd, dst_fd, l, o, NULL, msg, n);

	return r < 0 ? r : 0;
}

int changes_revert(int ws_fd, const struct changes_base *b, const struct change_list *l,
		   const struct ws_owner *o, char *msg, size_t n)
{
	_cleanup_close_ int src = open(b->project, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (src < 0) {
		snprintf(msg, n, "cannot open the project '%s': %s", b->project, strerror(errno));
		return -errno;
	}
	return copy_all(src, ws_fd, l, o, b, msg, n);
}

/* ---- a changes directory on the host ---- */

static int save_tree(int src, int dst, int depth, size_t *budget)
{
	char **names = NULL;
	size_t n = 0;
	int r;

	if (depth > CHANGES_MAX_DEPTH)
		return 0;
	r = list_dir(src, &names, &n, CHANGES_MAX_ENTRIES);
	for (size_t i = 0; r == 0 && i < n; i++) {
		const char *name = names[i];
		struct stat st;

		if (*budget == 0) {
			r = -E2BIG;
			break;
		}
		(*budget)--;
		if (fstatat(src, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (is_whiteout(&st)) {
			if (mknodat(dst, name, S_IFCHR | 0600, makedev(0, 0)) < 0)
				r = -errno;
		} else if (S_ISDIR(st.st_mode)) {
			int s2, d2;

			if (mkdirat(dst, name, 0700) < 0) {
				r = -errno;
				break;
			}
			s2 = openat(src, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			d2 = openat(dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (s2 < 0 || d2 < 0)
				r = -errno;
			if (r == 0 && opaque(src, name) &&
			    fsetxattr(d2, OPAQUE_XATTR, "y", 1, 0) < 0)
				r = -errno;
			if (r == 0)
				r = save_tree(s2, d2, depth + 1, budget);
			if (r == 0 && fchmod(d2, (st.st_mode & 0777) | 0700) < 0)
				r = -errno;
			if (s2 >= 0)
				close(s2);
			if (d2 >= 0)
				close(d2);
		} else if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) {
			r = put_file(src, name, &st, dst, name, &(struct ws_owner){ 0 }, NULL,
				     NULL);
		}
	}
	free_names(names, n);
	return r;
}

int changes_save(int upper_fd, const struct changes_base *b, const char *dir, char *msg, size_t n)
{
	_cleanup_close_ int d = -1;
	_cleanup_close_ int up = -1;
	_cleanup_close_ int src = openat(upper_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	size_t budget = CHANGES_MAX_ENTRIES;
	char text[4300];
	int r;

	if (src < 0 || mkdir(dir, 0700) < 0) {
		snprintf(msg, n, "cannot create the changes directory '%s': %s", dir,
			 strerror(errno));
		return -errno;
	}
	d = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d < 0 || mkdirat(d, CHANGES_UPPER_DIR, 0700) < 0 ||
	    (up = openat(d, CHANGES_UPPER_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) <
		    0) {
		r = -errno;
		snprintf(msg, n, "cannot fill the changes directory '%s': %s", dir, strerror(-r));
		return r;
	}
	snprintf(text, sizeof(text),
		 "project=%s\nsince_ns=%" PRId64 "\ndev=%" PRIu64 "\nino=%" PRIu64
		 "\nuid=%u\ngid=%u\n",
		 b->project, b->since_ns, (uint64_t)b->dev, (uint64_t)b->ino, (unsigned)b->uid,
		 (unsigned)b->gid);
	{
		_cleanup_close_ int f =
			openat(d, CHANGES_BASE_FILE,
			       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

		r = f < 0 ? -errno : write_all(f, text, strlen(text));
	}
	if (r == 0)
		r = save_tree(src, up, 0, &budget);
	if (r < 0)
		snprintf(msg, n, "cannot save the changes into '%s': %s", dir,
			 r == -E2BIG ? "too many entries" : strerror(-r));
	return r;
}

static int base_field(const char *text, const char *key, char *out, size_t n)
{
	size_t kl = strlen(key);

	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (!strncmp(p, key, kl) && p[kl] == '=') {
			size_t len = strcspn(p + kl + 1, "\n");

			if (len >= n)
				return -ENAMETOOLONG;
			memcpy(out, p + kl + 1, len);
			out[len] = '\0';
			return 0;
		}
	}
	return -EBADMSG;
}

int changes_load(const char *dir, struct changes_base *b, int *ret_upper_fd, char *msg, size_t n)
{
	char text[8192], v[64];
	_cleanup_close_ int d = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int up, r;

	memset(b, 0, sizeof(*b));
	if (d < 0) {
		r = -errno;
		snprintf(msg, n, "cannot open the changes directory '%s': %s", dir, strerror(-r));
		return r;
	}
	r = read_small_fileat(d, CHANGES_BASE_FILE, text, sizeof(text));
	if (r == 0)
		r = base_field(text, "project", b->project, sizeof(b->project));
	if (r == 0 && (r = base_field(text, "since_ns", v, sizeof(v))) == 0)
		b->since_ns = strtoll(v, NULL, 10);
	if (r == 0 && (r = base_field(text, "dev", v, sizeof(v))) == 0)
		b->dev = (dev_t)strtoull(v, NULL, 10);
	if (r == 0 && (r = base_field(text, "ino", v, sizeof(v))) == 0)
		b->ino = (ino_t)strtoull(v, NULL, 10);
	if (r == 0 && (r = base_field(text, "uid", v, sizeof(v))) == 0)
		b->uid = (uid_t)strtoul(v, NULL, 10);
	if (r == 0 && (r = base_field(text, "gid", v, sizeof(v))) == 0)
		b->gid = (gid_t)strtoul(v, NULL, 10);
	if (r < 0) {
		snprintf(msg, n,
			 "'%s' is not a changes directory (from 'codecell run --project'): %s", dir,
			 r == -ENOENT ? "no '" CHANGES_BASE_FILE "' in it" : strerror(-r));
		return r;
	}
	up = openat(d, CHANGES_UPPER_DIR, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (up < 0) {
		r = -errno;
		snprintf(msg, n, "'%s' has no '" CHANGES_UPPER_DIR "' directory: %s", dir,
			 strerror(-r));
		return r;
	}
	*ret_upper_fd = up;
	return 0;
}

int changes_remove(const char *dir)
{
	char parent[PATH_MAX], *slash;
	const char *name;
	struct stat st;
	_cleanup_close_ int p = -1;

	if (snprintf(parent, sizeof(parent), "%s", dir) >= (int)sizeof(parent))
		return -ENAMETOOLONG;
	while ((slash = strrchr(parent, '/')) && slash[1] == '\0' && slash != parent)
		*slash = '\0';
	slash = strrchr(parent, '/');
	if (slash) {
		*slash = '\0';
		name = slash + 1;
		p = open(slash == parent ? "/" : parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
	} else {
		name = parent;
		p = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	if (p < 0)
		return -errno;
	/* only a directory that is one */
	if (fstatat(p, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	{
		char check[PATH_MAX + 16];

		if ((size_t)snprintf(check, sizeof(check), "%s/" CHANGES_BASE_FILE, name) >=
		    sizeof(check))
			return -ENAMETOOLONG;
		if (fstatat(p, check, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			return -EBADMSG;
	}
	return rm_rf_at(p, name);
}
