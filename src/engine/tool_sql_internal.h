/* engine/tool_sql: what the sql tool's files share.  Not a public
 * interface.
 *
 *   tool_sql.c     the tool: arguments, which database, the result
 *                  object under its caps, and the SQLite driver
 *   tool_sql_pg.c  the PostgreSQL driver (libpq, loaded with dlopen) */
#ifndef CODECELL_ENGINE_TOOL_SQL_INTERNAL_H
#define CODECELL_ENGINE_TOOL_SQL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "engine/policy.h"

#define SQL_QUERY_MAX (1u << 20) /* bytes of a query's text */
#define SQL_PARAMS_MAX 1000	 /* parameters of one query */
#define SQL_MESSAGE_MAX 2048	 /* bytes of a server's error message passed on */

/* One query to run. */
struct sql_query {
	const struct engine_database *db; /* caps, writes, driver, conninfo */
	const char *sqlite_path;	  /* SQLite: what to open */
	bool sqlite_fd_path;		  /* ... a /proc/self/fd/N of a checked file */
	const char *text;
	json_t *params; /* array, object or NULL */
	const int *stop_flag;
	int hangup_fd; /* the caller's socket, or -1 */
};

/* What comes back, built under the caps. */
struct sql_out {
	json_t *columns, *rows;
	uint64_t bytes; /* of values and names so far */
	uint64_t max_bytes, max_rows;
	bool trunc_rows, trunc_bytes;
	bool timed_out;
	json_t *error;	    /* {"name": "SQLError", "value", "sqlstate"} */
	json_int_t changed; /* rows a write changed; -1: not known */
};

/* A column, its name and type. */
void sql_out_column(struct sql_out *o, const char *name, const char *type);
/* Room for a row of n more bytes?  false: the byte cap is hit (marked). */
bool sql_out_room(struct sql_out *o, uint64_t n);
/* A value that is not JSON text: {"base64": "..."} (bytea, blob, text
 * that is not UTF-8).  New reference. */
json_t *sql_binary(const void *p, size_t n);
/* The error result: message (cut at SQL_MESSAGE_MAX, made UTF-8), the
 * SQLSTATE or NULL. */
void sql_out_error(struct sql_out *o, const char *message, const char *sqlstate);
/* Has the stop flag been raised, or the caller hung up?  The socket is
 * looked at once per 100 ms at most (a poll(2) per check would slow a
 * SQLite query down: the check runs every 1000 VM steps). */
bool sql_stopped(const struct sql_query *q);

/* Run q.  0 with o filled (an SQL error is o->error); -EINVAL with msg
 * for parameters that do not fit the query; -ENOENT with msg when the
 * driver's library cannot be loaded. */
int sql_sqlite_run(const struct sql_query *q, struct sql_out *o, char *msg, size_t n);
int sql_pg_run(const struct sql_query *q, struct sql_out *o, char *msg, size_t n);

#endif
