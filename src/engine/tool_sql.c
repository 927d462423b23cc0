/* The sql tool: one parameterized statement against a SQLite file in the
 * session's workspace or a named database of the policy (PostgreSQL,
 * SQLite), read-only unless the policy allows writes, under a time cap,
 * a row cap and a byte cap.  The result under its caps is
 * tool_sql_out.c's; SQLite is tool_sql_sqlite.c's, PostgreSQL
 * tool_sql_pg.c's. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/tool.h"
#include "engine/tool_sql_internal.h"
#include "sandbox/sandbox.h"
#include "session/workspace.h"
#include "util/fs.h"
#include "util/macro.h"
#include "util/banned.h"

static const char schema[] =
	"{\"type\": \"object\", \"properties\": {"
	"\"database\": {\"type\": \"string\", \"description\": \"a database the policy names "
	"(sql.databases), or the path of a SQLite file in the session's workspace\"},"
	"\"query\": {\"type\": \"string\", \"description\": \"one SQL statement; values go in "
	"params, never in the text: ? or $1 (params an array), :name (params an object)\"},"
	"\"params\": {\"type\": [\"array\", \"object\"], \"description\": \"the statement's "
	"parameters: strings, numbers, booleans, null\"},"
	"\"session_id\": {\"type\": \"string\", \"description\": \"the session whose workspace "
	"holds the SQLite file (where the door has sessions)\"}},"
	"\"required\": [\"database\", \"query\"], \"additionalProperties\": false}";

/* ---- the tool ---- */

/* A workspace path as the model may write it: relative, or absolute
 * under the sandbox's home. */
static const char *ws_rel(const char *path)
{
	size_t n = strlen(SANDBOX_HOME);

	if (!strncmp(path, SANDBOX_HOME, n) && path[n] == '/')
		path += n + 1;
	return path;
}

/* The directory of a workspace file, opened beneath the workspace (an
 * O_PATH fd), and the file's name in it, checked to be a regular file
 * there now (no symlink, no FIFO).  The fd or -errno with msg. */
static int ws_open(const struct engine_tool_ctx *ctx, const char *path, const char **ret_name,
		   char *msg, size_t n)
{
	const char *rel = ws_rel(path), *slash = strrchr(rel, '/'), *name = slash ? slash + 1 : rel;
	char dirpath[1100];
	int ws = ctx->workspace_fd, dir, fd, e;
	struct stat st;

	if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
		return snprintf(msg, n, "'%.200s' does not name a file", path), -EINVAL;
	snprintf(dirpath, sizeof(dirpath), "%.*s", slash ? (int)(slash - rel) : 1,
		 slash ? rel : ".");
	if (ws < 0) {
		ws = open(ctx->workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (ws < 0)
			return e = -errno,
			       snprintf(msg, n, "cannot open the workspace: %s", strerror(-e)), e;
	}
	dir = openat_beneath(ws, *dirpath ? dirpath : "/", O_PATH | O_DIRECTORY, 0);
	if (ws != ctx->workspace_fd)
		close(ws);
	fd = dir < 0 ? dir
		     : openat(dir, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	e = fd < 0 && dir >= 0 ? -errno : fd;
	if (fd < 0) {
		snprintf(msg, n, "cannot open '%.200s' in the workspace: %s%s", path, strerror(-e),
			 e == -EXDEV   ? " (it leads outside the workspace)"
			 : e == -ELOOP ? " (a symlink is not followed)"
				       : "");
		if (dir >= 0)
			close(dir);
		return e;
	}
	e = fstat(fd, &st) < 0 || !S_ISREG(st.st_mode);
	close(fd);
	if (e) {
		close(dir);
		snprintf(msg, n, "'%.200s' in the workspace is not a regular file", path);
		return -EINVAL;
	}
	*ret_name = name;
	return dir;
}

static void list_names(const struct engine_tool_ctx *ctx, char *out, size_t n)
{
	const struct engine_policy *p = ctx->client->policy;
	size_t k = 0;

	out[0] = '\0';
	for (size_t i = 0; ctx->policies && i < ctx->policies->n_databases && k < n; i++)
		if (p->sql_databases & (1ull << i)) {
			int w = snprintf(out + k, n - k, "%s'%s'", k ? ", " : "",
					 ctx->policies->databases[i].name);

			k += w > 0 ? (size_t)w : 0;
		}
	if (!out[0])
		snprintf(out, n, "none");
}

/* Which database: a name the policy allows, or a workspace file. */
static int resolve(const struct engine_tool_ctx *ctx, const char *name,
		   const struct engine_database **ret_db, struct engine_database *ws, int *ret_fd,
		   const char **ret_file, char *msg, size_t n)
{
	const struct engine_policy *p = ctx->client->policy;
	const struct engine_database *db = engine_policies_database(ctx->policies, name);
	char names[256];

	*ret_fd = -1;
	if (db) {
		if (!(p->sql_databases & (1ull << (db - ctx->policies->databases)))) {
			list_names(ctx, names, sizeof(names));
			return snprintf(msg, n,
					"policy '%s' does not allow database '%s' (allowed: %s)",
					p->name, name, names),
			       -EPERM;
		}
		*ret_db = db;
		return 0;
	}
	if (!p->sql_workspace || (ctx->workspace_fd < 0 && !ctx->workspace)) {
		list_names(ctx, names, sizeof(names));
		return snprintf(msg, n, "no database '%.64s' here (allowed: %s%s)", name, names,
				p->sql_workspace
					? "; a SQLite file needs a session's workspace: give "
					  "session_id"
					: ""),
		       -EPERM;
	}
	engine_database_workspace(p, ws);
	*ret_fd = ws_open(ctx, name, ret_file, msg, n);
	if (*ret_fd < 0)
		return *ret_fd == -ENOMEM ? -ENOMEM : -EINVAL;
	*ret_db = ws;
	return 0;
}

static int check_text(json_t *args, char *msg, size_t n, const char **ret)
{
	json_t *q = json_object_get(args, "query"), *d = json_object_get(args, "database");
	json_t *p = json_object_get(args, "params");

	if (!json_is_string(q) || !json_is_string(d))
		return snprintf(msg, n, "'database' and 'query' must be strings"), -EINVAL;
	if (json_string_length(q) > SQL_QUERY_MAX ||
	    strlen(json_string_value(q)) != json_string_length(q))
		return snprintf(msg, n, "'query' must be at most %u bytes, without NUL characters",
				SQL_QUERY_MAX),
		       -EINVAL;
	if (!json_string_length(d) || strlen(json_string_value(d)) != json_string_length(d) ||
	    json_string_length(d) > 1024)
		return snprintf(msg, n, "'database' must be a name or a path of 1 to 1024 bytes"),
		       -EINVAL;
	if (p && !json_is_array(p) && !json_is_object(p) && !json_is_null(p))
		return snprintf(msg, n, "'params' must be an array or an object"), -EINVAL;
	if ((json_is_array(p) && json_array_size(p) > SQL_PARAMS_MAX) ||
	    (json_is_object(p) && json_object_size(p) > SQL_PARAMS_MAX))
		return snprintf(msg, n, "at most %d parameters", SQL_PARAMS_MAX), -EINVAL;
	*ret = json_string_value(d);
	return 0;
}

static json_t *out_json(struct sql_out *o, const struct engine_database *db)
{
	json_t *j;

	if (o->error) {
		j = json_pack("{s:O}", "error", o->error);
		if (o->timed_out)
			json_object_set_new(j, "truncated", json_pack("{s:b}", "time", 1));
		return j;
	}
	j = json_pack("{s:O, s:O, s:I, s:{s:b, s:b}, s:s}", "columns", o->columns, "rows", o->rows,
		      "row_count", (json_int_t)json_array_size(o->rows), "truncated", "rows",
		      o->trunc_rows, "bytes", o->trunc_bytes, "driver",
		      engine_db_driver_name(db->driver));
	if (j && o->changed >= 0)
		json_object_set_new(j, "rows_changed", json_integer(o->changed));
	if (j && (o->trunc_rows || o->trunc_bytes))
		json_object_set_new(j, "limits",
				    json_pack("{s:I, s:I}", "max_rows", (json_int_t)db->max_rows,
					      "max_bytes", (json_int_t)db->max_bytes));
	return j;
}

static int sql_call(const struct engine_tool_ctx *ctx, json_t *args, json_t **ret, char *msg,
		    size_t n)
{
	struct engine_database ws;
	const struct engine_database *db = NULL;
	struct sql_out o = { .columns = json_array(), .rows = json_array(), .changed = -1 };
	struct sql_query q = { .stop_flag = ctx->stop_flag,
			       .hangup_fd = ctx->hangup_fd,
			       .params = json_object_get(args, "params") };
	const char *name = NULL, *file = NULL;
	char fdpath[64 + 256];
	int fd = -1, r;

	r = check_text(args, msg, n, &name);
	if (r == 0)
		r = resolve(ctx, name, &db, &ws, &fd, &file, msg, n);
	if (r < 0)
		goto out;
	q.db = db;
	q.text = json_string_value(json_object_get(args, "query"));
	o.max_rows = db->max_rows;
	o.max_bytes = db->max_bytes;
	if (db->driver == DB_SQLITE && fd >= 0) {
		struct ws_owner owner = { .chown = geteuid() == 0 };
		struct ws_fsid prev;
		struct stat st;

		/* as the workspace's owner: its journal is created in the
		 * workspace (where root may not even be mapped), and no
		 * file the owner could not open is opened */
		if (fstat(fd, &st) == 0) {
			owner.uid = st.st_uid;
			owner.gid = st.st_gid;
		}
		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d/%.255s", fd, file);
		q.sqlite_path = fdpath;
		q.sqlite_fd_path = true;
		prev = ws_become_owner(&owner);
		r = sql_sqlite_run(&q, &o, msg, n);
		ws_restore_ids(prev);
	} else if (db->driver == DB_SQLITE) {
		q.sqlite_path = db->conninfo;
		r = sql_sqlite_run(&q, &o, msg, n);
	} else {
		r = sql_pg_run(&q, &o, msg, n);
	}
	if (r == -ENOENT) {
		/* the driver's library is missing: a result the caller reads */
		sql_out_error(&o, msg, NULL);
		r = 0;
	}
	if (r == 0)
		*ret = out_json(&o, db);
	if (r == 0 && !*ret)
		r = -ENOMEM;
out:
	if (fd >= 0)
		close(fd);
	json_decref(o.columns);
	json_decref(o.rows);
	json_decref(o.error);
	return r;
}

const struct engine_tool engine_tool_sql = {
	.name = "sql",
	.action = ACTION_SQL,
	.title = "Query a database",
	.description =
		"Run one SQL statement with bound parameters against a database the policy "
		"names (PostgreSQL or SQLite) or a SQLite file in the session's workspace. "
		"Read-only unless the policy allows writes; results are capped in time, rows "
		"and bytes (truncated says which cap was hit). Returns columns (name, type) "
		"and rows as JSON values; binary values as {\"base64\": ...}; an error as "
		"{\"error\": {\"name\": \"SQLError\", \"value\", \"sqlstate\"}}.",
	.input_schema = schema,
	.read_only = false,
	.destructive = false,
	.idempotent = false,
	.open_world = false,
	.call = sql_call,
};
