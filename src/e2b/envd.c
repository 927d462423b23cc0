/* envd's routes (E2b-Sandbox-Port 49983): GET/POST /files, the
 * filesystem.Filesystem calls the SDK's `files` uses, and
 * process.Process Start (a Connect server stream), SendSignal and List
 * for `commands`.  Connect with its JSON codec: unary calls are plain
 * JSON POSTs, a stream's messages are enveloped (connect.h).
 *
 * Files go through files.c (the same openat2(RESOLVE_BENEATH) walk, the
 * same streamed uploads renamed into place) in the sandbox's workspace,
 * /home/user; commands through the helper in the sandbox's kernel
 * (e2b_helper.py), so they run in the sandbox and see its files. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "e2b/connect.h"
#include "e2b/internal.h"
#include "http/log.h"
#include "http/upload.h"
#include "http/policy.h"
#include "http/text.h"
#include "e2b/e2b.h"
#include "util/base64.h"
#include "util/buf.h"
#include "util/envname.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/macro.h"
#include "util/utf8.h"
#include "util/timeutil.h"
#include "util/banned.h"

#define JSON_FLAGS (JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(6))
#define PROC_POLL_S "0.2"	    /* how long one poll cell waits for output */
#define PROC_KEEPALIVE_MS 20000	    /* under the SDK's 50 s */
#define PROC_FRAME_DATA (48u << 10) /* bytes of output per data event */
#define PROC_PENDING_MAX (8u << 20)
#define PROC_ARGS_MAX 256
#define HELPER_TIMEOUT_S 60.0
/* after the supervisor saw the command exit, how long its output may
 * still drain through the helper before the end is sent anyway */
#define PROC_DRAIN_MS 2000

/* ---- errors ---- */

/* The engine's table, envd's statuses (E2B's SDK maps 400, 404 and 507
 * to its own errors). */
static enum MHD_Result fs_error(struct api_call *c, int err, const char *what, const char *path)
{
	return api_files_error(c, err, what, path, true);
}

/* The sandbox's session and workspace, locked: 0, or answered. */
static int ws_lock(struct api_call *c, struct engine_session **ret_e, struct engine_ws *w,
		   enum MHD_Result *ret)
{
	struct engine_session *e = e2b_sandbox_session(c, ret);
	int r;

	if (!e)
		return -ESRCH;
	pthread_mutex_lock(&e->lock);
	r = api_ws_of(e, w);
	if (r < 0) {
		pthread_mutex_unlock(&e->lock);
		engine_session_unref(e);
		*ret = api_respond_errorf(c, 502, "sandbox_not_found",
					  "the sandbox '%s' was killed", e2b_of(c)->id);
		return r;
	}
	*ret_e = e;
	return 0;
}

static void ws_unlock(struct engine_session *e)
{
	pthread_mutex_unlock(&e->lock);
	engine_session_unref(e);
}

/* ---- uploads: POST /files ---- */

enum { MP_HEAD, MP_DATA, MP_AFTER, MP_END, MP_RAW };

/* At routing: where the file goes (?path=, or the part's file name),
 * and how the body is framed. */
int e2b_upload_start(struct api_call *c, struct api_error *e)
{
	struct e2b_call *x = e2b_of(c);
	const char *type = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, "Content-Type");
	const char *enc = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, "Content-Encoding");
	char path[API_PATH_MAX + 64];
	int k;

	memcpy(c->route.session_id, x->id, sizeof(c->route.session_id));
	/* files.c writes it as the body of a PUT */
	c->method = "PUT";
	if (enc && strcasecmp(enc, "identity") != 0)
		return api_error_set(
			e, 400, "unsupported_encoding",
			"Content-Encoding '%.32s' is not supported: send the file uncompressed (no gzip option)",
			enc);
	k = e2b_query(c, "path", path, sizeof(path), e);
	if (k < 0 || (k == 1 && e2b_path(path, &c->route, e) < 0))
		return -EINVAL;
	x->path_from_part = k == 0;
	k = e2b_multipart_delim(type, x->mp.delim, sizeof(x->mp.delim), &x->mp.delim_len);
	if (k < 0)
		return api_error_set(e, 400, "bad_multipart",
				     "the multipart boundary is empty or too long");
	if (k == 1) {
		x->multipart = true;
		x->mp.state = MP_HEAD;
		return 0;
	}
	x->mp.state = MP_RAW;
	if (x->path_from_part)
		return api_error_set(
			e, 400, "invalid_path",
			"POST /files needs ?path= for a body that is not multipart/form-data");
	return 0;
}

static void upload_fail(struct e2b_call *x, const char *why)
{
	if (!x->upload_err) {
		x->upload_err = -EINVAL;
		snprintf(x->upload_why, sizeof(x->upload_why), "%s", why);
	}
}

/* A part's head: "--boundary\r\n", its headers, "\r\n\r\n".  The bytes
 * of data it used. */
static size_t mp_head(struct api_call *c, const char *data, size_t len)
{
	struct e2b_multipart *m = &e2b_of(c)->mp;
	size_t take =
		len < sizeof(m->head) - 1 - m->head_len ? len : sizeof(m->head) - 1 - m->head_len;
	char *end, name[API_PATH_MAX + 64];
	struct api_error e;
	size_t used;

	memcpy(m->head + m->head_len, data, take);
	m->head_len += take;
	m->head[m->head_len] = '\0';
	end = memmem(m->head, m->head_len, "\r\n\r\n", 4);
	if (!end) {
		if (m->head_len == sizeof(m->head) - 1)
			upload_fail(e2b_of(c), "the multipart part's headers are over 8 KiB");
		return len;
	}
	if (strncmp(m->head, m->delim + 2, m->delim_len - 2) != 0 ||
	    strncmp(m->head + m->delim_len - 2, "\r\n", 2) != 0) {
		upload_fail(e2b_of(c), "the body does not begin with the multipart boundary");
		return len;
	}
	*end = '\0';
	if (e2b_of(c)->path_from_part) {
		if (e2b_part_filename(m->head, name, sizeof(name)) < 0) {
			upload_fail(e2b_of(c),
				    "the multipart part has no file name (and there is no ?path=)");
			return len;
		}
		if (e2b_path(name, &c->route, &e) < 0) {
			upload_fail(e2b_of(c), e.message);
			return len;
		}
	}
	used = (size_t)(end + 4 - m->head) - (m->head_len - take);
	m->head_len = 0;
	m->state = MP_DATA;
	return used;
}

/* Part data: everything but what may begin the delimiter goes to the
 * file; the delimiter ends it.  The bytes of data it used. */
static size_t mp_data(struct api_call *c, const char *data, size_t len)
{
	struct e2b_multipart *m = &e2b_of(c)->mp;
	size_t n = m->hold_len + len, keep, held = m->hold_len;
	char *all = malloc(n ? n : 1), *hit;

	if (!all) {
		upload_fail(e2b_of(c), "out of memory");
		return len;
	}
	memcpy(all, m->hold, m->hold_len);
	memcpy(all + m->hold_len, data, len);
	hit = memmem(all, n, m->delim, m->delim_len);
	if (hit) {
		/* a delimiter is longer than what is held: it ends in data */
		size_t used = (size_t)(hit - all) + m->delim_len - held;

		api_upload_data(c, all, (size_t)(hit - all));
		m->state = MP_AFTER;
		m->hold_len = 0;
		free(all);
		return used;
	}
	keep = n < m->delim_len - 1 ? n : m->delim_len - 1;
	api_upload_data(c, all, n - keep);
	memcpy(m->hold, all + n - keep, keep);
	m->hold_len = keep;
	free(all);
	return len;
}

/* A part is complete and another follows: put this one in place now
 * (each is an upload of files.c's), note it for the answer. */
static void mp_next_part(struct api_call *c)
{
	struct e2b_call *x = e2b_of(c);
	struct e2b_multipart *m = &x->mp;
	struct engine_session *e;
	bool replaced;
	int r;

	if (!x->path_from_part) {
		upload_fail(
			x, "several files in one request need no ?path=: each part names its file");
		return;
	}
	if (!c->route.path_len) {
		upload_fail(x, "a part names the workspace itself: name a file");
		return;
	}
	e = api_session_get(c, c->route.session_id);
	r = e ? 0 : -ESRCH;
	if (e) {
		/* POST /v1's check of an upload, each part its own; a refusal
		 * is answered once the body is read (e2b_refuse) */
		enum MHD_Result ignored;

		x->answer_later = true;
		if (api_check_file(c, e, ACTION_WRITE_FILE, c->upload.u.size, &ignored) < 0)
			r = -EPERM;
		x->answer_later = false;
	}
	if (r == 0) {
		uint64_t size = c->upload.u.size;

		r = api_upload_finish(c, e, &replaced);
		api_audit_file(c, e, ACTION_WRITE_FILE, size, NULL, r);
	}
	engine_session_unref(e);
	if (r == -EPERM) {
		x->upload_err = r;
		api_upload_release(c);
		return;
	}
	if (r < 0) {
		x->upload_err = r;
		snprintf(x->upload_why, sizeof(x->upload_why), "%s", c->route.path);
		return;
	}
	if (!x->written)
		x->written = json_array();
	if (json_array_size(x->written) + 1 >= E2B_UPLOAD_FILES_MAX) {
		upload_fail(x, "over 64 files in one request: send them in several");
		return;
	}
	json_array_append_new(x->written, json_string(c->route.path));
	api_upload_release(c);
	memset(&c->upload, 0, sizeof(c->upload));
	c->route.path[0] = '\0';
	c->route.path_len = 0;
	/* the next part's head, its "--boundary\r\n" already read */
	m->head_len = (size_t)snprintf(m->head, sizeof(m->head), "%s\r\n", m->delim + 2);
	m->state = MP_HEAD;
}

/* After a delimiter: "--" ends the body, CRLF begins another part. */
static size_t mp_after(struct api_call *c, const char *data, size_t len)
{
	struct e2b_multipart *m = &e2b_of(c)->mp;
	size_t used = 0;

	while (used < len && m->hold_len < 2)
		m->hold[m->hold_len++] = data[used++];
	if (m->hold_len < 2)
		return used;
	if (!strncmp(m->hold, "--", 2))
		m->state = MP_END;
	else if (!strncmp(m->hold, "\r\n", 2))
		mp_next_part(c);
	else
		upload_fail(e2b_of(c),
			    "the multipart boundary is followed by neither '--' nor a line end");
	m->hold_len = 0;
	return used;
}

void e2b_upload_data(struct api_call *c, const char *data, size_t len)
{
	struct e2b_multipart *m = &e2b_of(c)->mp;

	if (m->state == MP_RAW) {
		if (!e2b_of(c)->upload_err)
			api_upload_data(c, data, len);
		return;
	}
	while (len && !e2b_of(c)->upload_err && m->state != MP_END) {
		size_t used = m->state == MP_HEAD   ? mp_head(c, data, len)
			      : m->state == MP_DATA ? mp_data(c, data, len)
						    : mp_after(c, data, len);

		data += used;
		len -= used;
	}
	/* the epilogue, after the closing delimiter, is dropped */
}

static enum MHD_Result files_post(struct api_call *c)
{
	struct e2b_call *x = e2b_of(c);
	struct engine_session *e;
	enum MHD_Result ret;
	bool replaced = false;
	char abs[API_PATH_MAX + 32];
	json_t *arr;
	int r;

	if (!x->upload_err && x->multipart && x->mp.state != MP_END)
		upload_fail(x, "the multipart body is cut short (no closing boundary)");
	if (x->upload_err == -EINVAL) {
		api_upload_release(c);
		return api_respond_errorf(c, 400, "bad_upload", "%s", x->upload_why);
	}
	if (x->upload_err == -EPERM)
		return api_respond_error(c, &x->refusal);
	if (x->upload_err < 0)
		return fs_error(c, x->upload_err, "write", x->upload_why);
	if (!c->route.path_len)
		return api_respond_errorf(c, 400, "invalid_path",
					  "the path names the workspace itself: name a file");
	e = e2b_sandbox_session(c, &ret);
	if (!e)
		return ret;
	/* PUT /v1/sessions/{id}/files' check: the file's size against the
	 * policy's max_file, the client's rate, approvals */
	if (api_check_file(c, e, ACTION_WRITE_FILE, c->upload.u.size, &ret) < 0) {
		engine_session_unref(e);
		api_upload_release(c);
		return ret;
	}
	{
		uint64_t size = c->upload.u.size;

		r = api_upload_finish(c, e, &replaced);
		api_audit_file(c, e, ACTION_WRITE_FILE, size, NULL, r);
	}
	engine_session_unref(e);
	if (r < 0)
		return fs_error(c, r, "write", c->route.path);
	if (!x->written)
		x->written = json_array();
	json_array_append_new(x->written, json_string(c->route.path));
	arr = json_array();
	for (size_t i = 0; i < json_array_size(x->written); i++) {
		const char *rel = json_string_value(json_array_get(x->written, i));
		const char *name;

		if (!rel)
			continue;
		name = strrchr(rel, '/');
		e2b_abs_path(rel, abs, sizeof(abs));
		json_array_append_new(arr, json_pack("{s:s, s:s, s:s}", "path", abs, "name",
						     name ? name + 1 : rel, "type", "file"));
	}
	return api_respond_json(c, 200, arr);
}

static enum MHD_Result files_get(struct api_call *c)
{
	char path[API_PATH_MAX + 64];
	struct engine_session *e;
	struct api_error err;
	struct engine_ws w;
	struct stat st;
	enum MHD_Result ret;
	int k = e2b_query(c, "path", path, sizeof(path), &err), fd;

	if (k == 0)
		return api_respond_errorf(c, 400, "invalid_path", "GET /files needs ?path=");
	if (k < 0 || e2b_path(path, &c->route, &err) < 0)
		return api_respond_error(c, &err);
	if (ws_lock(c, &e, &w, &ret) < 0)
		return ret;
	fd = engine_files_open(&w, c->route.path, &st);
	ws_unlock(e);
	if (fd < 0 && fd != -ENXIO)
		return fs_error(c, fd, "read", path);
	if (fd < 0 || !S_ISREG(st.st_mode)) {
		if (fd >= 0)
			close(fd);
		return api_respond_errorf(c, 400, "not_a_file", "'%s' is not a file", path);
	}
	return api_send_file(c, fd, &st);
}

enum MHD_Result e2b_handle_files(struct api_call *c)
{
	return e2b_of(c)->route == E2B_R_FILES_POST ? files_post(c) : files_get(c);
}

/* ---- filesystem.Filesystem ---- */

static void permissions(mode_t m, char out[11])
{
	static const char rwx[] = "rwxrwxrwx";

	out[0] = S_ISDIR(m) ? 'd' : S_ISLNK(m) ? 'l' : '-';
	for (int i = 0; i < 9; i++)
		out[1 + i] = m & (1u << (8 - i)) ? rwx[i] : '-';
	out[10] = '\0';
}

/* E2B's EntryInfo of name in dir (rel: its workspace path; stp its
 * stat, or NULL to take it). */
static json_t *entry_info(int dir, const char *name, const char *rel, const struct stat *stp)
{
	char abs[API_PATH_MAX + 32], perm[11], mtime[48];
	struct stat st;
	struct tm tm;
	json_t *j;

	if (stp)
		st = *stp;
	else if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return NULL;
	e2b_abs_path(rel, abs, sizeof(abs));
	permissions(st.st_mode, perm);
	gmtime_r(&st.st_mtim.tv_sec, &tm);
	snprintf(mtime, sizeof(mtime), "%04d-%02d-%02dT%02d:%02d:%02d.%09ldZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, st.st_mtim.tv_nsec);
	j = json_pack("{s:s, s:s, s:s, s:s, s:i, s:s, s:s, s:s, s:s}", "name",
		      *rel ? (strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel) : "user", "type",
		      S_ISDIR(st.st_mode)   ? "FILE_TYPE_DIRECTORY"
		      : S_ISLNK(st.st_mode) ? "FILE_TYPE_SYMLINK"
					    : "FILE_TYPE_FILE",
		      "path", abs, "size", "0", "mode", (int)(st.st_mode & 07777), "permissions",
		      perm, "owner", "user", "group", "user", "modifiedTime", mtime);
	if (j) {
		char size[24];

		/* int64 is a string in proto3's JSON */
		snprintf(size, sizeof(size), "%lld", (long long)st.st_size);
		json_object_set_new(j, "size", json_string(size));
	}
	if (j && S_ISLNK(st.st_mode)) {
		char target[API_PATH_MAX + 1];
		ssize_t n = readlinkat(dir, name, target, sizeof(target) - 1);

		if (n >= 0) {
			target[n] = '\0';
			json_object_set_new(j, "symlinkTarget", json_string(target));
		}
	}
	return j;
}

/* An entry of a ListDir (engine_files_list): its EntryInfo. */
static int list_entry(void *arg, int dir, const char *name, const char *rel, const struct stat *st)
{
	json_t *j;

	if (strlen(rel) > API_PATH_MAX)
		return 0;
	j = entry_info(dir, name, rel, st);
	if (!j || !json_string_value(json_object_get(j, "path"))) {
		json_decref(j);
		return 0;
	}
	return json_array_append_new(arg, j) < 0 ? -ENOMEM : 0;
}

/* A string field that is a workspace path, into r. */
static int path_field(json_t *body, const char *name, struct api_route *r, struct api_error *e)
{
	json_t *v = json_object_get(body, name);

	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
		return api_error_set(e, 400, "invalid_argument", "'%s' must be a path (a string)",
				     name);
	return e2b_path(json_string_value(v), r, e);
}

static bool unary_json(struct api_call *c, struct api_error *e)
{
	const char *type = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, "Content-Type");

	if (type && strncasecmp(type, "application/json", 16) != 0) {
		api_error_set(
			e, 415, "unsupported_media_type",
			"codecell speaks Connect with the JSON codec: send 'Content-Type: application/json'");
		return false;
	}
	return true;
}

static enum MHD_Result fs_listdir(struct api_call *c, json_t *body, const struct api_route *r)
{
	json_t *jd = json_object_get(body, "depth"), *arr;
	struct engine_files_listing l = { .depth = 1 };
	struct engine_session *e;
	struct engine_ws w;
	enum MHD_Result ret;
	int k;

	if (jd && !json_is_null(jd)) {
		if (!json_is_integer(jd) || json_integer_value(jd) < 0)
			return api_respond_errorf(c, 400, "invalid_argument",
						  "'depth' must be a whole number");
		/* the engine caps it (FILES_DEPTH_MAX) */
		l.depth = json_integer_value(jd) > FILES_DEPTH_MAX
				  ? FILES_DEPTH_MAX
				  : (unsigned)json_integer_value(jd);
	}
	if (ws_lock(c, &e, &w, &ret) < 0)
		return ret;
	arr = json_array();
	k = engine_files_list(&w, r->path, &l, list_entry, arr);
	ws_unlock(e);
	if (k < 0) {
		json_decref(arr);
		return fs_error(c, k, "list", r->path);
	}
	return api_respond_json(c, 200, json_pack("{s:o}", "entries", arr));
}

/* Stat, and the answer of MakeDir and Move: {"entry": EntryInfo}. */
static enum MHD_Result entry_answer(struct api_call *c, const struct engine_ws *w, const char *rel)
{
	char parent[API_PATH_MAX + 1];
	const char *name;
	json_t *j = NULL;
	int dir;

	if (!*rel) {
		j = entry_info(w->fd, ".", "", NULL);
	} else {
		engine_files_split(rel, parent, sizeof(parent), &name);
		dir = engine_files_open_dir(w, parent, false);
		if (dir < 0)
			return fs_error(c, dir, "stat", rel);
		j = entry_info(dir, name, rel, NULL);
		close(dir);
	}
	if (!j)
		return fs_error(c, -ENOENT, "stat", rel);
	return api_respond_json(c, 200, json_pack("{s:o}", "entry", j));
}

/* The policy check and audit record of a change: MakeDir is a write
 * (of nothing), Remove a delete, and Move a delete too (it takes the
 * source's name away and may replace the destination); /v1's uploads
 * and DELETEs pass the same.  0, or answered. */
static int fs_check(struct api_call *c, enum e2b_route route, const struct api_route *r,
		    const struct api_route *to, enum MHD_Result *ret)
{
	struct engine_session *e = e2b_sandbox_session(c, ret);
	int k;

	if (!e)
		return -ESRCH;
	memcpy(c->route.session_id, e2b_of(c)->id, sizeof(c->route.session_id));
	memcpy(c->route.path, r->path, r->path_len + 1);
	c->route.path_len = r->path_len;
	k = route == E2B_R_FS_MAKEDIR ? api_check_file(c, e, ACTION_WRITE_FILE, 0, ret)
	    : route == E2B_R_FS_MOVE ? api_check_file_to(c, e, ACTION_DELETE_FILE, 0, to->path, ret)
				     : api_check_file(c, e, ACTION_DELETE_FILE, 0, ret);
	engine_session_unref(e);
	return k;
}

enum MHD_Result e2b_handle_fs(struct api_call *c)
{
	enum e2b_route route = e2b_of(c)->route;
	struct api_route r, to;
	struct engine_session *e;
	struct api_error err;
	struct engine_ws w;
	enum MHD_Result ret;
	json_t *body;
	int k = 0;

	if (!unary_json(c, &err) || !(body = e2b_body(c, &err)))
		return api_respond_error(c, &err);
	if (path_field(body, route == E2B_R_FS_MOVE ? "source" : "path", &r, &err) < 0 ||
	    (route == E2B_R_FS_MOVE && path_field(body, "destination", &to, &err) < 0)) {
		json_decref(body);
		return api_respond_error(c, &err);
	}
	if (route == E2B_R_FS_LISTDIR) {
		ret = fs_listdir(c, body, &r);
		json_decref(body);
		return ret;
	}
	json_decref(body);
	if (route != E2B_R_FS_STAT && fs_check(c, route, &r, &to, &ret) < 0)
		return ret;
	if (ws_lock(c, &e, &w, &ret) < 0)
		return ret;
	switch (route) {
	case E2B_R_FS_STAT:
		ret = entry_answer(c, &w, r.path);
		break;
	case E2B_R_FS_MAKEDIR:
		k = engine_files_mkdir(&w, r.path);
		ret = k < 0 ? fs_error(c, k, "make the directory", r.path)
			    : entry_answer(c, &w, r.path);
		break;
	case E2B_R_FS_MOVE:
		k = engine_files_move(&w, r.path, to.path);
		ret = k < 0 ? fs_error(c, k, "move", r.path) : entry_answer(c, &w, to.path);
		break;
	default: /* Remove */
		k = engine_files_remove(&w, r.path);
		ret = k < 0 ? fs_error(c, k, "remove", r.path)
			    : api_respond_json(c, 200, json_object());
		break;
	}
	/* fs_check's record, once the change ran (c->route is r) */
	if (route != E2B_R_FS_STAT)
		api_audit_file(c, e,
			       route == E2B_R_FS_MAKEDIR ? ACTION_WRITE_FILE : ACTION_DELETE_FILE,
			       0, route == E2B_R_FS_MOVE ? to.path : NULL, k);
	ws_unlock(e);
	return ret;
}

/* ---- process.Process ---- */

/* Run a helper call in the sandbox's kernel, as a cell of at most
 * timeout_s: 0 and *res, or -errno. */
static int helper_for(struct engine_session *e, const char *call, double timeout_s,
		      struct run_result *res)
{
	char *cell = e2b_helper_cell(call);
	int r;

	if (!cell)
		return -ENOMEM;
	r = e2b_cell(e, cell, timeout_s, res);
	free(cell);
	return r;
}

static int helper(struct engine_session *e, const char *call, struct run_result *res)
{
	return helper_for(e, call, HELPER_TIMEOUT_S, res);
}

struct proc_stream {
	struct api_server *srv;
	struct engine_session *e;
	/* a command started here (not a stream reattached): the policy's
	 * execution slot it holds, and its audit record at the end */
	struct engine_client *client;
	bool holds;
	char *code; /* what ran (command_text), NULL: nothing to record */
	char request_id[AUDIT_ID_LEN + 1], approval_id[AUDIT_ID_LEN + 1];
	uint64_t t0;
	struct run_result res; /* status, exit code, signal, output bytes */
	unsigned pid;
	/* the command's process seen from outside the sandbox: its end and
	 * exit status come from here, never from the helper, which code in
	 * the sandbox can replace; -1 for a stream that ends at once */
	int pidfd;
	uint64_t exited_ms;   /* when the pidfd first showed it exited, 0 */
	uint64_t deadline_ms; /* monotonic; 0: none (a stream that ends at once) */
	uint64_t last_ms;     /* the last frame */
	int client_fd;
	bool started, ended;
	bool finished; /* the command is over (ended can be the stream's overflow) */
	struct buf out;
	size_t off;
};

static void frame(struct proc_stream *p, unsigned flags, json_t *j)
{
	size_t len = 0, before;
	char *s = j ? api_json_dump(j, JSON_FLAGS, &len) : NULL;
	unsigned char h[CONNECT_HEADER_LEN];

	json_decref(j);
	if (!s)
		return;
	connect_header(h, flags, (uint32_t)len);
	before = p->out.len;
	if (buf_append(&p->out, (const char *)h, sizeof(h)) < 0 ||
	    buf_append(&p->out, s, len) < 0) {
		/* a client this far behind: the stream cannot go on (no half
		 * frame); the command goes on without it, as when the client
		 * goes away */
		p->out.len = before;
		p->ended = true;
	}
	free(s);
	p->last_ms = api_now_ms();
}

static void frame_error(struct proc_stream *p, const char *code, const char *msg)
{
	frame(p, CONNECT_FLAG_END,
	      json_pack("{s:{s:s, s:s}}", "error", "code", code, "message", msg));
	p->ended = true;
}

static void frame_output(struct proc_stream *p, const char *key, const char *data, size_t n)
{
	/* counted, not kept: the audit record's output_bytes */
	if (!strcmp(key, "stdout"))
		p->res.out_len += n;
	else
		p->res.err_len += n;
	for (size_t i = 0; i < n; i += PROC_FRAME_DATA) {
		size_t k = n - i < PROC_FRAME_DATA ? n - i : PROC_FRAME_DATA;
		char *enc = base64_encode(data + i, k);

		if (enc)
			frame(p, 0, json_pack("{s:{s:{s:s}}}", "event", "data", key, enc));
		free(enc);
	}
}

static const char *signal_status(int sig)
{
	switch (sig) {
	case SIGKILL:
		return "signal: killed";
	case SIGTERM:
		return "signal: terminated";
	case SIGINT:
		return "signal: interrupt";
	default:
		return "signal: other";
	}
}

static void frame_end(struct proc_stream *p, long rc)
{
	char status[48];

	if (rc < 0)
		snprintf(status, sizeof(status), "%s", signal_status((int)-rc));
	else
		snprintf(status, sizeof(status), "exit status %ld", rc);
	p->res.status = rc == 0 ? RESULT_OK : rc > 0 ? RESULT_ERROR : RESULT_KILLED;
	p->res.has_exit_code = rc >= 0;
	p->res.exit_code = rc >= 0 ? (int)rc : 0;
	p->res.signal = rc < 0 ? (int)-rc : 0;
	frame(p, 0,
	      json_pack("{s:{s:{s:i, s:b, s:s}}}", "event", "end", "exitCode",
			rc < 0 ? -1 : (int)rc, "exited", rc >= 0, "status", status));
	frame(p, CONNECT_FLAG_END, json_object());
	p->ended = true;
	p->finished = true;
}

/* From outside the sandbox: the helper's kill is code in the sandbox,
 * which need not kill anything. */
static void proc_kill(struct proc_stream *p)
{
	if (p->pidfd >= 0)
		(void)engine_process_kill(p->pidfd);
}

/* The command's exit as the supervisor sees it: its frame_end code
 * (-signal when signalled), or -EAGAIN while it runs. */
static int proc_exit_code(const struct proc_stream *p, long *ret)
{
	int ws, r = engine_process_status(p->pidfd, &ws);

	if (r < 0)
		return r;
	*ret = WIFEXITED(ws) ? WEXITSTATUS(ws) : WIFSIGNALED(ws) ? -(long)WTERMSIG(ws) : -SIGKILL;
	return 0;
}

/* Wait up to ms for the command's process to end (a helper that says
 * it has, or cannot say, must not make the stream spin). */
static void proc_wait_exit(const struct proc_stream *p, int ms)
{
	struct pollfd pf = { .fd = p->pidfd, .events = POLLIN };

	(void)poll(&pf, 1, ms);
}

/* One poll of the command: its output as data events (the helper's:
 * output is the sandbox's to say), its end (the supervisor's: the
 * helper's claim only says the output has drained). */
static void proc_poll(struct proc_stream *p)
{
	uint64_t now = api_now_ms(), left = p->deadline_ms > now ? p->deadline_ms - now : 0;
	double cell_s = (double)left / 1000.0 + 1;
	char call[64];
	struct run_result res;
	bool claims_end;
	long rc;
	int r;

	/* a poll that hangs must not outlast the command's deadline much */
	snprintf(call, sizeof(call), "poll(%u, " PROC_POLL_S ")", p->pid);
	r = helper_for(p->e, call, cell_s < HELPER_TIMEOUT_S ? cell_s : HELPER_TIMEOUT_S, &res);
	if (r < 0) {
		p->finished = true;
		frame_error(p, "unavailable", "the sandbox was killed or its kernel ended");
		return;
	}
	frame_output(p, "stdout", res.out, res.out_len);
	frame_output(p, "stderr", res.err, res.err_len);
	/* a number: ended and drained; an error: the helper lost it (another
	 * stream took its end, or the kernel restarted) */
	claims_end = e2b_cell_text(&res) || res.has_error;
	run_result_release(&res);
	if (proc_exit_code(p, &rc) < 0) {
		if (claims_end)
			proc_wait_exit(p, 200);
		return;
	}
	if (!p->exited_ms)
		p->exited_ms = api_now_ms();
	if (claims_end || api_now_ms() - p->exited_ms >= PROC_DRAIN_MS)
		frame_end(p, rc);
}

static bool client_gone(const struct proc_stream *p)
{
	struct pollfd pf = { .fd = p->client_fd, .events = POLLRDHUP };

	return p->client_fd >= 0 && poll(&pf, 1, 0) > 0 &&
	       (pf.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static void proc_step_once(struct proc_stream *p)
{
	if (!p->started) {
		p->started = true;
		frame(p, 0, json_pack("{s:{s:{s:i}}}", "event", "start", "pid", (int)p->pid));
		return;
	}
	if (p->deadline_ms && api_now_ms() >= p->deadline_ms) {
		proc_kill(p);
		p->res.status = RESULT_TIMEOUT;
		p->finished = true;
		frame_error(p, "deadline_exceeded",
			    "the command ran past its timeout and was killed");
		return;
	}
	proc_poll(p);
	if (!p->ended && p->out.len == p->off && api_now_ms() - p->last_ms >= PROC_KEEPALIVE_MS)
		frame(p, 0, json_pack("{s:{s:{}}}", "event", "keepalive"));
}

/* The command's record, as /v1's execution's (api_audit_exec), and its
 * execution slot back.  A command whose stream ended first (the client
 * went away or fell too far behind, a background command) goes on in the
 * sandbox, as in E2B: its record says "detached". */
static void command_done(struct proc_stream *p)
{
	if (p->code && p->e)
		api_audit_command(p->srv, p->client, p->request_id, p->approval_id, p->e, p->code,
				  strlen(p->code), p->finished ? &p->res : NULL, p->t0,
				  p->finished ? NULL : "detached");
	if (p->holds)
		engine_release(p->client, ACTION_SESSION_EXEC);
	p->holds = false;
	free(p->code);
	p->code = NULL;
}

/* One step of the stream: its start, a poll, a keepalive.  A command
 * that ended gives its slot back and is recorded here, before its end
 * reaches the client: a client that starts another once it has read the
 * end must find the slot free. */
static void proc_step(struct proc_stream *p)
{
	proc_step_once(p);
	if (p->finished)
		command_done(p);
}

#define PROC_DEADLINE_WAIT_MS 5000

/* The client went away.  A deadline close ahead is the SDK's timeout:
 * kill at the deadline as if the client were still there. */
static void proc_gone(struct proc_stream *p)
{
	uint64_t now = api_now_ms();

	if (!p->started || p->ended || !p->deadline_ms ||
	    p->deadline_ms > now + PROC_DEADLINE_WAIT_MS)
		return;
	if (p->deadline_ms > now) {
		struct timespec ts = { (time_t)((p->deadline_ms - now) / 1000),
				       (long)((p->deadline_ms - now) % 1000) * 1000000L };

		nanosleep(&ts, NULL);
	}
	proc_kill(p);
}

static ssize_t proc_read(void *cls, uint64_t pos, char *out, size_t max)
{
	struct proc_stream *p = cls;

	(void)pos;
	for (;;) {
		size_t avail = p->out.len - p->off;

		if (avail) {
			size_t n = avail < max ? avail : max;

			memcpy(out, p->out.data + p->off, n);
			p->off += n;
			if (p->off == p->out.len) {
				buf_reset(&p->out);
				p->off = 0;
			}
			return (ssize_t)n;
		}
		if (p->ended)
			return MHD_CONTENT_READER_END_OF_STREAM;
		/* the command goes on without its stream, as in E2B; but the
		 * SDK goes away at its timeoutMs, a moment before the
		 * deadline here (Connect-Timeout-Ms), which ends it */
		if (client_gone(p) || __atomic_load_n(&p->srv->stopping, __ATOMIC_SEQ_CST)) {
			proc_gone(p);
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
		proc_step(p);
	}
}

static void proc_free(void *cls)
{
	struct proc_stream *p = cls;

	command_done(p);
	if (p->pidfd >= 0)
		close(p->pidfd);
	engine_session_unref(p->e);
	buf_release(&p->out);
	free(p);
}

/* A Connect stream that ends at once with an error (HTTP 200: Connect
 * streams carry their errors in the end message). */
static enum MHD_Result stream_answer(struct api_call *c, struct proc_stream *p)
{
	return api_respond_stream(c, "application/connect+json", proc_read, p, proc_free);
}

/* Start's errors: Connect streams carry them in their end message, with
 * HTTP 200 (an HTTP status would reach the SDK as another code). */
enum MHD_Result e2b_stream_error(struct api_call *c, const struct api_error *err)
{
	struct proc_stream *p = calloc(1, sizeof(*p));
	size_t len;
	char *msg;

	if (!p)
		return MHD_NO;
	p->srv = c->srv;
	p->client_fd = -1;
	p->pidfd = -1;
	buf_init(&p->out, PROC_PENDING_MAX);
	msg = utf8_repair(err->message, strlen(err->message), &len);
	frame_error(p, e2b_connect_code(err->http), msg ? msg : "");
	free(msg);
	return stream_answer(c, p);
}

static enum MHD_Result stream_errorf(struct api_call *c, int http, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static enum MHD_Result stream_errorf(struct api_call *c, int http, const char *fmt, ...)
{
	struct api_error err = { .http = http, .code = "" };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err.message, sizeof(err.message), fmt, ap);
	va_end(ap);
	return e2b_stream_error(c, &err);
}

/* {"process": {"cmd", "args", "envs", "cwd"}} as a helper call. */
static int start_call(json_t *req, char **ret_call, struct api_error *e)
{
	json_t *proc = json_object_get(req, "process"), *cmd, *args, *envs, *cwd, *v;
	char *lcmd, *largs, *lenvs, *lcwd;
	const char *k;
	size_t i;
	int r = 0;

	if (json_object_get(req, "pty") && !json_is_null(json_object_get(req, "pty")))
		return api_error_set(e, 501, "unimplemented",
				     "codecell runs commands without a PTY");
	if (!json_is_object(proc))
		return api_error_set(e, 400, "invalid_argument", "'process' must be an object");
	cmd = json_object_get(proc, "cmd");
	args = json_object_get(proc, "args");
	envs = json_object_get(proc, "envs");
	cwd = json_object_get(proc, "cwd");
	if (!json_is_string(cmd) || !json_string_length(cmd) ||
	    strlen(json_string_value(cmd)) != json_string_length(cmd))
		return api_error_set(e, 400, "invalid_argument", "'process.cmd' must be a string");
	if (args && !json_is_null(args)) {
		if (!json_is_array(args) || json_array_size(args) > PROC_ARGS_MAX)
			return api_error_set(e, 400, "invalid_argument",
					     "'process.args' must be an array of strings");
		json_array_foreach (args, i, v)
			if (!json_is_string(v) ||
			    strlen(json_string_value(v)) != json_string_length(v))
				return api_error_set(e, 400, "invalid_argument",
						     "'process.args' must be strings without NUL");
	}
	if (envs && !json_is_null(envs)) {
		if (!json_is_object(envs) || json_object_size(envs) > SESSION_MAX_ENV)
			return api_error_set(e, 400, "invalid_argument",
					     "'process.envs' must be an object of strings");
		json_object_foreach (envs, k, v)
			if (!json_is_string(v) || env_name_check(k, strlen(k), ENV_NAME_ANY) < 0 ||
			    strlen(json_string_value(v)) != json_string_length(v))
				return api_error_set(
					e, 400, "invalid_argument",
					"'process.envs' must be strings without NUL, names without '=' "
					"of 1 to %d bytes",
					ENV_NAME_MAX);
	}
	if (cwd && !json_is_null(cwd) &&
	    (!json_is_string(cwd) || json_string_value(cwd)[0] != '/' ||
	     strlen(json_string_value(cwd)) != json_string_length(cwd)))
		return api_error_set(e, 400, "invalid_argument",
				     "'process.cwd' must be an absolute path");
	lcmd = e2b_py_literal(cmd);
	largs = args && !json_is_null(args) ? e2b_py_literal(args) : strdup("[]");
	lenvs = envs && !json_is_null(envs) ? e2b_py_literal(envs) : strdup("{}");
	lcwd = cwd && !json_is_null(cwd) ? e2b_py_literal(cwd) : strdup("None");
	if (!lcmd || !largs || !lenvs || !lcwd ||
	    asprintf(ret_call, "start(%s, %s, %s, %s)", lcmd, largs, lenvs, lcwd) < 0)
		r = api_error_set(e, 500, "internal", "out of memory");
	free(lcmd);
	free(largs);
	free(lenvs);
	free(lcwd);
	return r;
}

/* A reattached stream's timeout: what Connect-Timeout-Ms asks, at most
 * the sandbox's own (its cell timeout: the policy's ceiling when it was
 * made); none asked is that, never no limit. */
static uint64_t reconnect_timeout_ms(uint64_t asked, const struct engine_session *e)
{
	uint64_t most = e->limits.timeout_s > 0 ? (uint64_t)(e->limits.timeout_s * 1000)
						: E2B_COMMAND_TIMEOUT_MAX_MS;

	return asked && asked < most ? asked : most;
}

/* The stream of a command already running (commands.connect): as
 * Start's from its start event on.  Its output goes to whichever of its
 * streams polls first. */
static enum MHD_Result proc_connect(struct api_call *c)
{
	const union MHD_ConnectionInfo *ci;
	const unsigned char *msg;
	const char *why;
	struct proc_stream *p;
	struct engine_session *e = NULL;
	struct run_result res;
	struct json_body_error jerr;
	enum MHD_Result ret;
	char call[64];
	bool known;
	json_t *req, *pid;
	size_t len;

	if (connect_unwrap((const unsigned char *)c->body, c->body_len, E2B_JSON_MAX, &msg, &len,
			   &why) < 0)
		return stream_errorf(c, 400, "%s", why);
	if (json_body_read((const char *)msg, len, 0, &req, &jerr) < 0)
		return stream_errorf(c, 400, "%s", jerr.message);
	pid = json_object_get(json_object_get(req, "process"), "pid");
	if (!json_is_integer(pid) || json_integer_value(pid) <= 0 ||
	    json_integer_value(pid) > 1 << 22) {
		json_decref(req);
		return stream_errorf(c, 400, "Connect needs process.pid");
	}
	p = calloc(1, sizeof(*p));
	if (p) {
		p->pid = (unsigned)json_integer_value(pid);
		p->pidfd = -1;
	}
	json_decref(req);
	if (!p)
		return MHD_NO;
	pthread_mutex_lock(&e2b_state_of(c->srv)->lock);
	{
		struct e2b_sandbox *sb = e2b_find_seen(c, e2b_of(c)->id);

		if (sb) {
			e = sb->entry;
			engine_session_ref(e);
		}
	}
	pthread_mutex_unlock(&e2b_state_of(c->srv)->lock);
	if (!e) {
		free(p);
		return stream_errorf(
			c, 502,
			"the sandbox '%s' was not found: it was killed or its timeout ran out",
			e2b_of(c)->id);
	}
	snprintf(call, sizeof(call), "has(%u)", p->pid);
	if (helper(e, call, &res) < 0) {
		engine_session_unref(e);
		free(p);
		return stream_errorf(c, 502, "the sandbox '%s' was killed", e2b_of(c)->id);
	}
	known = e2b_cell_text(&res) && !strcmp(e2b_cell_text(&res), "True");
	run_result_release(&res);
	if (known)
		p->pidfd = engine_session_process_open(e, (pid_t)p->pid);
	if (!known || p->pidfd < 0) {
		engine_session_unref(e);
		ret = stream_errorf(c, 404, "no process %u in the sandbox", p->pid);
		free(p);
		return ret;
	}
	p->srv = c->srv;
	p->e = e;
	p->last_ms = api_now_ms();
	p->deadline_ms = p->last_ms + reconnect_timeout_ms(e2b_of(c)->timeout_ms, e);
	buf_init(&p->out, PROC_PENDING_MAX);
	ci = MHD_get_connection_info(c->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	p->client_fd = ci ? ci->connect_fd : -1;
	return stream_answer(c, p);
}

/* What a command runs, for its audit record: the script of `bash -c
 * SCRIPT` (what commands.run was given: the SDK sends "/bin/bash", "-l",
 * "-c", SCRIPT), else cmd and its args joined by spaces.  NULL on
 * ENOMEM. */
static char *command_text(json_t *req)
{
	json_t *proc = json_object_get(req, "process"), *args = json_object_get(proc, "args"), *v;
	const char *cmd = json_string_value(json_object_get(proc, "cmd"));
	size_t n = json_array_size(args), i;
	struct buf b;
	char *out;

	if (n >= 2 && !strcmp(json_string_value(json_array_get(args, n - 2)) ?: "", "-c") &&
	    json_is_string(json_array_get(args, n - 1)))
		return strdup(json_string_value(json_array_get(args, n - 1)));
	buf_init(&b, E2B_JSON_MAX);
	(void)buf_puts(&b, cmd ? cmd : "");
	json_array_foreach (args, i, v)
		(void)buf_printf(&b, " %s", json_string_value(v) ?: "");
	out = strdup(buf_str(&b));
	buf_release(&b);
	return out;
}

/* The sandbox of the request with a new reference to its session, or
 * NULL. */
static struct engine_session *sandbox_ref(struct api_call *c)
{
	struct engine_session *e = NULL;
	struct e2b_sandbox *sb;

	pthread_mutex_lock(&e2b_state_of(c->srv)->lock);
	sb = e2b_find_seen(c, e2b_of(c)->id);
	if (sb) {
		e = sb->entry;
		engine_session_ref(e);
	}
	pthread_mutex_unlock(&e2b_state_of(c->srv)->lock);
	return e;
}

static enum MHD_Result proc_start(struct api_call *c)
{
	const union MHD_ConnectionInfo *ci;
	const unsigned char *msg;
	const char *why, *t;
	struct proc_stream *p;
	struct run_result res;
	struct api_error err;
	struct json_body_error jerr;
	struct engine_verdict v = { 0 };
	enum MHD_Result ret;
	size_t len;
	char *call = NULL;
	double timeout_s;
	json_t *req;
	int r;

	if (connect_unwrap((const unsigned char *)c->body, c->body_len, E2B_JSON_MAX, &msg, &len,
			   &why) < 0)
		return stream_errorf(c, 400, "%s", why);
	if (json_body_read((const char *)msg, len, 0, &req, &jerr) < 0)
		return stream_errorf(c, 400, "the Connect message: %s", jerr.message);
	r = start_call(req, &call, &err);
	p = r < 0 ? NULL : calloc(1, sizeof(*p));
	if (p && !(p->code = command_text(req))) {
		free(p);
		p = NULL;
	}
	json_decref(req);
	if (r < 0)
		return e2b_stream_error(c, &err);
	if (!p) {
		free(call);
		return MHD_NO;
	}
	p->srv = c->srv;
	p->client = c->client;
	p->client_fd = -1;
	p->pidfd = -1;
	p->res.status = RESULT_KILLED; /* until its end event says otherwise */
	buf_init(&p->out, PROC_PENDING_MAX);
	p->e = sandbox_ref(c);
	if (!p->e) {
		free(call);
		proc_free(p);
		return stream_errorf(
			c, 502,
			"the sandbox '%s' was not found: it was killed or its timeout ran out",
			e2b_of(c)->id);
	}
	/* POST /v1/sessions/{id}/execute's check, in bash: the language,
	 * the timeout against the policy's, the client's rate and an
	 * execution slot held while the command runs */
	timeout_s = (double)e2b_of(c)->timeout_ms / 1000.0;
	if (api_check_command(c, p->e, p->code, strlen(p->code), &timeout_s, &v, &ret) < 0) {
		free(call);
		free(p->code);
		p->code = NULL; /* recorded already */
		proc_free(p);
		return ret;
	}
	p->holds = v.holds_execution;
	p->t0 = now_ns();
	memcpy(p->request_id, c->request_id, sizeof(p->request_id));
	memcpy(p->approval_id, c->approval_id, sizeof(p->approval_id));
	r = helper(p->e, call, &res);
	free(call);
	if (r < 0) {
		p->ended = p->finished = true; /* recorded as an error, not as detached */
		p->res.status = RESULT_ERROR;
		proc_free(p);
		return stream_errorf(
			c, 502,
			"the sandbox '%s' was not found: it was killed or its timeout ran out",
			e2b_of(c)->id);
	}
	t = e2b_cell_text(&res);
	if (res.has_error || !t) {
		ret = stream_errorf(c, 400, "cannot start the command: %s: %s",
				    res.error_name ? res.error_name : "error",
				    res.error_value ? res.error_value : "no pid");
		run_result_release(&res);
		p->ended = p->finished = true;
		p->res.status = RESULT_ERROR;
		proc_free(p);
		return ret;
	}
	p->pid = (unsigned)strtoul(t, NULL, 10);
	run_result_release(&res);
	/* the command's process as the supervisor sees it, or no command: an
	 * exit status nobody outside the sandbox can vouch for is not one */
	p->pidfd = engine_session_process_open(p->e, (pid_t)p->pid);
	if (p->pidfd < 0) {
		r = p->pidfd;
		p->ended = p->finished = true;
		p->res.status = RESULT_ERROR;
		proc_free(p);
		return stream_errorf(
			c, 500, "cannot see the command's process from outside the sandbox: %s%s",
			strerror(-r),
			r == -ENOTTY || r == -EINVAL ? " (E2B commands need Linux 6.15 or later)"
						     : "");
	}
	p->last_ms = api_now_ms();
	p->deadline_ms = p->last_ms + (uint64_t)(timeout_s * 1000);
	ci = MHD_get_connection_info(c->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	p->client_fd = ci ? ci->connect_fd : -1;
	return stream_answer(c, p);
}

static enum MHD_Result proc_signal(struct api_call *c, json_t *body)
{
	json_t *proc = json_object_get(body, "process"), *pid = json_object_get(proc, "pid"),
	       *sig = json_object_get(body, "signal");
	struct engine_session *e;
	struct run_result res;
	enum MHD_Result ret;
	const char *t;
	char call[64];
	int s = 0, r;

	if (json_is_string(sig))
		s = !strcmp(json_string_value(sig), "SIGNAL_SIGKILL")	? SIGKILL
		    : !strcmp(json_string_value(sig), "SIGNAL_SIGTERM") ? SIGTERM
									: 0;
	else if (json_is_integer(sig) &&
		 (json_integer_value(sig) == SIGKILL || json_integer_value(sig) == SIGTERM))
		s = (int)json_integer_value(sig);
	if (!s || !json_is_integer(pid) || json_integer_value(pid) <= 0 ||
	    json_integer_value(pid) > 1 << 22)
		return api_respond_errorf(
			c, 400, "invalid_argument",
			"SendSignal needs process.pid and signal SIGNAL_SIGKILL or SIGNAL_SIGTERM");
	e = e2b_sandbox_session(c, &ret);
	if (!e)
		return ret;
	/* POST /v1/sessions/{id}/interrupt's check and record */
	{
		struct engine_session_error err;
		struct engine_caller cl;
		int k;

		api_caller(c, &cl);
		k = engine_session_check(&cl, e, ACTION_SESSION_INTERRUPT, &err);
		if (k < 0) {
			engine_session_unref(e);
			return api_session_refused(c, &cl, k, &err);
		}
	}
	snprintf(call, sizeof(call), "kill(%d, %d)", (int)json_integer_value(pid), s);
	r = helper(e, call, &res);
	engine_session_unref(e);
	if (r < 0)
		return api_respond_errorf(c, 502, "sandbox_not_found",
					  "the sandbox '%s' was killed", e2b_of(c)->id);
	t = e2b_cell_text(&res);
	ret = t && !strcmp(t, "True")
		      ? api_respond_json(c, 200, json_object())
		      : api_respond_errorf(c, 404, "not_found", "no running process %d",
					   (int)json_integer_value(pid));
	run_result_release(&res);
	return ret;
}

static enum MHD_Result proc_list(struct api_call *c)
{
	struct engine_session *e;
	struct run_result res;
	enum MHD_Result ret;
	const char *t;
	json_t *arr;
	int r;

	e = e2b_sandbox_session(c, &ret);
	if (!e)
		return ret;
	r = helper(e, "list()", &res);
	engine_session_unref(e);
	if (r < 0)
		return api_respond_errorf(c, 502, "sandbox_not_found",
					  "the sandbox '%s' was killed", e2b_of(c)->id);
	t = e2b_cell_text(&res);
	arr = t ? json_loads(t, 0, NULL) : NULL;
	run_result_release(&res);
	if (!json_is_array(arr)) {
		json_decref(arr);
		return api_respond_errorf(c, 500, "internal",
					  "the sandbox's process list is unreadable");
	}
	return api_respond_json(c, 200, json_pack("{s:o}", "processes", arr));
}

enum MHD_Result e2b_handle_process(struct api_call *c)
{
	struct api_error err;
	enum MHD_Result ret;
	json_t *body;

	if (e2b_of(c)->route == E2B_R_PROC_START)
		return proc_start(c);
	if (e2b_of(c)->route == E2B_R_PROC_CONNECT)
		return proc_connect(c);
	if (!unary_json(c, &err) || !(body = e2b_body(c, &err)))
		return api_respond_error(c, &err);
	ret = e2b_of(c)->route == E2B_R_PROC_SIGNAL ? proc_signal(c, body) : proc_list(c);
	json_decref(body);
	return ret;
}
