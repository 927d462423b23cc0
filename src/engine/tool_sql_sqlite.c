/* The sql tool's SQLite: a file in the session's workspace or a database
 * the policy names.
 *
 * libsqlite3 is loaded with dlopen, like libcurl (agent/llm.c) and libpq
 * (tool_sql_pg.c): linked, it would be loaded by every `codecell run`
 * for a tool few calls use, and codecell must still run where it is
 * absent (the tool then says it is unavailable).
 *
 * A workspace file is untrusted: the sandboxed code made it, and may
 * have planted symlinks to host files (the tool runs as the server, often
 * root).  The file's directory is opened with openat2 RESOLVE_BENEATH
 * under the workspace, and SQLite opens /proc/self/fd/D/NAME: the kernel
 * follows the magic link to that very directory, and the unix VFS opens
 * NAME with O_NOFOLLOW, so a symlink planted there is refused (ELOOP).
 * The VFS is the unix one with an xFullPathname that takes the path as it
 * is: the stock one resolves every symlink in it, /proc/self/fd/D too,
 * and would reopen by a host path whose components the sandbox can swap.
 * Its journal and WAL files sit beside the database, as usual.  Its
 * open(2) adds O_NONBLOCK under /proc/self/fd, so a FIFO swapped in for
 * the file cannot block the thread.  ATTACH (which would open any host
 * file) is refused by the authorizer and by SQLITE_LIMIT_ATTACHED 0,
 * which also stops VACUUM INTO. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "engine/tool.h"
#include "engine/tool_sql_internal.h"
#include "sandbox/sandbox.h"
#include "session/workspace.h"
#include "util/fs.h"
#include "util/macro.h"
#include "util/timeutil.h"
#include "util/banned.h"

#define SQLITE_LIBRARY "libsqlite3.so.0"
#define FD_VFS_NAME "codecell-fd"
#define PROGRESS_OPS 1000 /* VM steps between checks of the clock */

#define SQLITE_LIBRARY "libsqlite3.so.0"
#define FD_VFS_NAME "codecell-fd"
#define PROGRESS_OPS 1000 /* VM steps between checks of the clock */

static struct {
	int (*open_v2)(const char *, sqlite3 **, int, const char *);
	int (*close_v2)(sqlite3 *);
	int (*prepare_v2)(sqlite3 *, const char *, int, sqlite3_stmt **, const char **);
	int (*finalize)(sqlite3_stmt *);
	int (*step)(sqlite3_stmt *);
	int (*column_count)(sqlite3_stmt *);
	const char *(*column_name)(sqlite3_stmt *, int);
	const char *(*column_decltype)(sqlite3_stmt *, int);
	int (*column_type)(sqlite3_stmt *, int);
	sqlite3_int64 (*column_int64)(sqlite3_stmt *, int);
	double (*column_double)(sqlite3_stmt *, int);
	const unsigned char *(*column_text)(sqlite3_stmt *, int);
	const void *(*column_blob)(sqlite3_stmt *, int);
	int (*column_bytes)(sqlite3_stmt *, int);
	int (*bind_parameter_count)(sqlite3_stmt *);
	const char *(*bind_parameter_name)(sqlite3_stmt *, int);
	int (*bind_int64)(sqlite3_stmt *, int, sqlite3_int64);
	int (*bind_double)(sqlite3_stmt *, int, double);
	int (*bind_text)(sqlite3_stmt *, int, const char *, int, void (*)(void *));
	int (*bind_null)(sqlite3_stmt *, int);
	const char *(*errmsg)(sqlite3 *);
	int (*extended_errcode)(sqlite3 *);
	void (*progress_handler)(sqlite3 *, int, int (*)(void *), void *);
	int (*exec)(sqlite3 *, const char *, int (*)(void *, int, char **, char **), void *,
		    char **);
	sqlite3_vfs *(*vfs_find)(const char *);
	int (*vfs_register)(sqlite3_vfs *, int);
	int (*set_authorizer)(sqlite3 *,
			      int (*)(void *, int, const char *, const char *, const char *,
				      const char *),
			      void *);
	int (*limit)(sqlite3 *, int, int);
	int (*changes)(sqlite3 *);
	int (*db_config)(sqlite3 *, int, ...);
} sq;

static pthread_mutex_t sq_lock = PTHREAD_MUTEX_INITIALIZER;
static sqlite3_vfs fd_vfs;
static int (*unix_open)(const char *, int, int);

static int fd_open(const char *path, int flags, int mode)
{
	if (!strncmp(path, "/proc/self/fd/", 14))
		flags |= O_NONBLOCK;
	return unix_open(path, flags, mode);
}

/* The unix VFS, but a path is taken as it is: /proc/self/fd/N stays the
 * magic link, which open(2) follows to the checked inode. */
static int fd_full_pathname(sqlite3_vfs *vfs, const char *path, int n, char *out)
{
	(void)vfs;
	if (strlen(path) >= (size_t)n)
		return SQLITE_CANTOPEN;
	snprintf(out, (size_t)n, "%s", path);
	return SQLITE_OK;
}

static int sqlite_load(char *msg, size_t n)
{
	static const char *const names[] = {
		"sqlite3_open_v2",
		"sqlite3_close_v2",
		"sqlite3_prepare_v2",
		"sqlite3_finalize",
		"sqlite3_step",
		"sqlite3_column_count",
		"sqlite3_column_name",
		"sqlite3_column_decltype",
		"sqlite3_column_type",
		"sqlite3_column_int64",
		"sqlite3_column_double",
		"sqlite3_column_text",
		"sqlite3_column_blob",
		"sqlite3_column_bytes",
		"sqlite3_bind_parameter_count",
		"sqlite3_bind_parameter_name",
		"sqlite3_bind_int64",
		"sqlite3_bind_double",
		"sqlite3_bind_text",
		"sqlite3_bind_null",
		"sqlite3_errmsg",
		"sqlite3_extended_errcode",
		"sqlite3_progress_handler",
		"sqlite3_exec",
		"sqlite3_vfs_find",
		"sqlite3_vfs_register",
		"sqlite3_set_authorizer",
		"sqlite3_limit",
		"sqlite3_changes",
		"sqlite3_db_config",
	};
	void **slots = (void **)&sq;
	void *lib;
	int r = 0;

	_Static_assert(sizeof(sq) == ARRAY_SIZE(names) * sizeof(void *), "one name per slot");
	pthread_mutex_lock(&sq_lock);
	if (sq.open_v2)
		goto out;
	lib = dlopen(SQLITE_LIBRARY, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		snprintf(
			msg, n,
			"the sql tool is unavailable: cannot load %s (install Debian's libsqlite3-0)",
			SQLITE_LIBRARY);
		r = -ENOENT;
		goto out;
	}
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (!(slots[i] = dlsym(lib, names[i]))) {
			snprintf(msg, n, "the sql tool is unavailable: %s has no %s (too old)",
				 SQLITE_LIBRARY, names[i]);
			memset(&sq, 0, sizeof(sq));
			r = -ENOENT;
			goto out;
		}
	fd_vfs = *sq.vfs_find("unix");
	fd_vfs.zName = FD_VFS_NAME;
	fd_vfs.xFullPathname = fd_full_pathname;
	unix_open = (int (*)(const char *, int, int))fd_vfs.xGetSystemCall(&fd_vfs, "open");
	if (!unix_open ||
	    fd_vfs.xSetSystemCall(&fd_vfs, "open", (sqlite3_syscall_ptr)fd_open) != SQLITE_OK ||
	    sq.vfs_register(&fd_vfs, 0) != SQLITE_OK) {
		snprintf(msg, n, "the sql tool is unavailable: cannot register SQLite's VFS");
		memset(&sq, 0, sizeof(sq));
		r = -ENOENT;
	}
out:
	pthread_mutex_unlock(&sq_lock);
	return r;
}

struct sq_run {
	const struct sql_query *q;
	uint64_t deadline_ns;
	bool timed_out;
	const char *denied; /* why the authorizer refused, for the message */
};

static int sq_progress(void *arg)
{
	struct sq_run *r = arg;

	if (now_ns() > r->deadline_ns) {
		r->timed_out = true;
		return 1;
	}
	return sql_stopped(r->q);
}

/* What a statement may do: reads, and writes when the database allows
 * them; never ATTACH (any host file), never PRAGMA but a few that only
 * describe the schema. */
static int sq_authorize(void *arg, int action, const char *a1, const char *a2, const char *a3,
			const char *a4)
{
	static const char *const pragmas[] = { "table_info", "table_xinfo", "index_list",
					       "index_info", "index_xinfo", "foreign_key_list",
					       "table_list" };
	struct sq_run *run = arg;

	(void)a3, (void)a4;
	switch (action) {
	case SQLITE_FUNCTION:
		/* fts3_tokenizer(NAME) returns the tokenizer's address (a
		 * host pointer: ASLR undone), and with a bound NAME even when
		 * SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER is off */
		if (a2 && !strcasecmp(a2, "fts3_tokenizer")) {
			run->denied = "fts3_tokenizer() is not allowed";
			return SQLITE_DENY;
		}
		return SQLITE_OK;
	case SQLITE_SELECT:
	case SQLITE_READ:
	case SQLITE_RECURSIVE:
		return SQLITE_OK;
	case SQLITE_PRAGMA:
		for (size_t i = 0; i < ARRAY_SIZE(pragmas) && a1; i++)
			if (!strcasecmp(a1, pragmas[i]) &&
			    !(a2 && !strcasecmp(pragmas[i], "table_list")))
				return SQLITE_OK;
		run->denied =
			"PRAGMA is not allowed here, but for table_info, table_xinfo, "
			"index_list, index_info, index_xinfo, foreign_key_list and table_list";
		return SQLITE_DENY;
	case SQLITE_ATTACH:
	case SQLITE_DETACH:
		run->denied = "ATTACH and DETACH are not allowed: query one database per call";
		return SQLITE_DENY;
	case SQLITE_TRANSACTION:
	case SQLITE_SAVEPOINT:
		run->denied = "transactions are not allowed: each call is one statement of its own";
		return SQLITE_DENY;
	default:
		if (run->q->db->writes)
			return SQLITE_OK;
		run->denied = "the database is read-only here (the policy allows no writes)";
		return SQLITE_DENY;
	}
}

static void sq_fail(sqlite3 *db, struct sql_out *o, const struct sq_run *run)
{
	char code[16], m[512];

	/* SQLite has no SQLSTATE; its extended result code stands in */
	snprintf(code, sizeof(code), "SQLITE_%d", sq.extended_errcode(db));
	if (run && run->denied && sq.extended_errcode(db) == SQLITE_AUTH)
		snprintf(m, sizeof(m), "not authorized: %s", run->denied);
	else
		snprintf(m, sizeof(m), "%s", sq.errmsg(db));
	sql_out_error(o, m, NULL);
	json_object_set_new(o->error, "code", json_string(code));
}

static int sq_bind_one(sqlite3_stmt *st, int i, json_t *v, char *msg, size_t n)
{
	if (json_is_null(v))
		return sq.bind_null(st, i);
	if (json_is_boolean(v))
		return sq.bind_int64(st, i, json_is_true(v));
	if (json_is_integer(v))
		return sq.bind_int64(st, i, json_integer_value(v));
	if (json_is_real(v))
		return sq.bind_double(st, i, json_real_value(v));
	if (json_is_string(v))
		return sq.bind_text(st, i, json_string_value(v), (int)json_string_length(v),
				    SQLITE_TRANSIENT);
	snprintf(msg, n, "parameter %d is %s: parameters are strings, numbers, booleans or null", i,
		 json_is_array(v) ? "an array" : "an object");
	return -EINVAL;
}

/* params: an array for ?, ?NNN and $N (by position), an object for
 * :name, @name, $name (by name, without its sigil). */
static int sq_bind(sqlite3_stmt *st, json_t *params, char *msg, size_t n)
{
	int count = sq.bind_parameter_count(st);
	size_t given = json_is_array(params)	? json_array_size(params)
		       : json_is_object(params) ? json_object_size(params)
						: 0;

	if ((size_t)count != given && !(json_is_object(params) && given > (size_t)count))
		return snprintf(msg, n, "the query has %d parameter%s and %zu %s given", count,
				count == 1 ? "" : "s", given, given == 1 ? "was" : "were"),
		       -EINVAL;
	for (int i = 1; i <= count; i++) {
		const char *name = sq.bind_parameter_name(st, i);
		json_t *v;
		int r;

		if (json_is_array(params)) {
			v = json_array_get(params, (size_t)i - 1);
		} else {
			v = name && name[0] != '?' ? json_object_get(params, name + 1) : NULL;
			if (!v)
				return snprintf(
					       msg, n,
					       "parameter %d (%s) has no value in params: name "
					       "parameters :name and give params as an object, or use ? "
					       "and an array",
					       i, name ? name : "?"),
				       -EINVAL;
		}
		r = sq_bind_one(st, i, v, msg, n);
		if (r == -EINVAL)
			return r;
		if (r != SQLITE_OK)
			return snprintf(msg, n, "cannot bind parameter %d", i), -EINVAL;
	}
	return 0;
}

/* Only blanks, comments and empty statements may follow the first. */
static bool sq_single(sqlite3 *db, const char *tail)
{
	while (tail && *tail) {
		sqlite3_stmt *st = NULL;
		const char *next = NULL;
		int r = sq.prepare_v2(db, tail, -1, &st, &next);

		if (st || r != SQLITE_OK) {
			sq.finalize(st);
			return false;
		}
		if (!next || next == tail)
			break;
		tail = next;
	}
	return true;
}

static json_t *sq_value(sqlite3_stmt *st, int c, struct sql_out *o)
{
	int type = sq.column_type(st, c);
	size_t len;

	switch (type) {
	case SQLITE_NULL:
		return sql_out_room(o, 4) ? json_null() : NULL;
	case SQLITE_INTEGER:
		return sql_out_room(o, 8) ? json_integer(sq.column_int64(st, c)) : NULL;
	case SQLITE_FLOAT: {
		double d = sq.column_double(st, c);

		if (!sql_out_room(o, 8))
			return NULL;
		return isfinite(d) ? json_real(d)
				   : json_string(isnan(d) ? "NaN"
						 : d > 0  ? "Infinity"
							  : "-Infinity");
	}
	case SQLITE_TEXT: {
		const char *s;
		json_t *j;

		/* text, then bytes: the order SQLite documents (a UTF-16
		 * database converts in column_text, bounded by
		 * SQLITE_LIMIT_LENGTH) */
		s = (const char *)sq.column_text(st, c);
		len = (size_t)sq.column_bytes(st, c);
		if (!sql_out_room(o, len))
			return NULL;
		j = s ? json_stringn(s, len) : json_string("");
		return j ? j : sql_binary(s, len);
	}
	default: {
		const void *b = sq.column_blob(st, c);

		len = (size_t)sq.column_bytes(st, c);
		/* base64 is 4/3 the size */
		if (!sql_out_room(o, len + len / 3))
			return NULL;
		return sql_binary(b, len);
	}
	}
}

static void sq_rows(sqlite3 *db, sqlite3_stmt *st, struct sql_out *o, const struct sq_run *run)
{
	int cols = sq.column_count(st), r;

	for (int c = 0; c < cols; c++) {
		const char *t = sq.column_decltype(st, c);

		sql_out_column(o, sq.column_name(st, c) ? sq.column_name(st, c) : "", t ? t : "");
	}
	while ((r = sq.step(st)) == SQLITE_ROW) {
		json_t *row;

		if (json_array_size(o->rows) >= o->max_rows) {
			o->trunc_rows = true;
			return;
		}
		row = json_array();
		for (int c = 0; c < cols; c++) {
			json_t *v = sq_value(st, c, o);

			if (!v) {
				json_decref(row);
				return;
			}
			json_array_append_new(row, v);
		}
		json_array_append_new(o->rows, row);
	}
	if (r != SQLITE_DONE)
		sq_fail(db, o, run);
	else
		o->changed = cols ? -1 : sq.changes(db);
}

/* The connection: read-only unless writes, ATTACH off, defensive. */
static int sq_open(const struct sql_query *q, struct sq_run *run, sqlite3 **ret, struct sql_out *o)
{
	int flags = (q->db->writes ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY) |
		    SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_PRIVATECACHE;
	sqlite3 *db = NULL;
	int r = sq.open_v2(q->sqlite_path, &db, flags, q->sqlite_fd_path ? FD_VFS_NAME : NULL);

	if (r != SQLITE_OK) {
		if (db)
			sq_fail(db, o, NULL);
		else
			sql_out_error(o, "cannot open the database", NULL);
		sq.close_v2(db);
		return -EIO;
	}
	sq.limit(db, SQLITE_LIMIT_ATTACHED, 0);
	/* a value over the byte cap cannot come back: none is made either
	 * (randomblob(1e9) would take a gigabyte of the server's memory) */
	sq.limit(db, SQLITE_LIMIT_LENGTH, (int)(q->db->max_bytes + 1024));
	sq.db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
	sq.db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
	sq.db_config(db, SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER, 0, NULL);
	/* a file the sandboxed code made is untrusted input: SQLite's advice
	 * for such files (cell_size_check, no mmap), then query_only */
	if ((q->sqlite_fd_path && sq.exec(db, "PRAGMA cell_size_check = ON; PRAGMA mmap_size = 0",
					  NULL, NULL, NULL) != SQLITE_OK) ||
	    (!q->db->writes &&
	     sq.exec(db, "PRAGMA query_only = ON", NULL, NULL, NULL) != SQLITE_OK)) {
		sq_fail(db, o, NULL);
		sq.close_v2(db);
		return -EIO;
	}
	sq.set_authorizer(db, sq_authorize, run);
	*ret = db;
	return 0;
}

int sql_sqlite_run(const struct sql_query *q, struct sql_out *o, char *msg, size_t n)
{
	struct sq_run run = { .q = q,
			      .deadline_ns = now_ns() + (uint64_t)(q->db->timeout_s * 1e9) };
	sqlite3_stmt *st = NULL;
	const char *tail = NULL;
	sqlite3 *db = NULL;
	int r = sqlite_load(msg, n);

	if (r < 0)
		return r;
	if (sq_open(q, &run, &db, o) < 0)
		return 0;
	sq.progress_handler(db, PROGRESS_OPS, sq_progress, &run);
	if (sq.prepare_v2(db, q->text, (int)strlen(q->text), &st, &tail) != SQLITE_OK) {
		sq_fail(db, o, &run);
	} else if (!st) {
		sql_out_error(o, "the query holds no statement", NULL);
	} else if (!sq_single(db, tail)) {
		sql_out_error(o, "the query holds more than one statement: send one at a time",
			      NULL);
	} else if ((r = sq_bind(st, q->params, msg, n)) == 0) {
		sq_rows(db, st, o, &run);
	}
	if (run.timed_out) {
		char m[128];

		o->timed_out = true;
		snprintf(m, sizeof(m), "the query ran past the time cap of %g s and was stopped",
			 q->db->timeout_s);
		sql_out_error(o, m, "57014");
	}
	sq.finalize(st);
	sq.close_v2(db);
	return r;
}
