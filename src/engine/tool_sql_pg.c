/* The sql tool's PostgreSQL driver.  libpq is loaded with dlopen (as
 * agent/llm.c loads libcurl): codecell runs where it is absent, and the
 * tool then says it is unavailable.
 *
 * One connection per call, in a transaction: BEGIN READ ONLY unless the
 * database allows writes, SET LOCAL statement_timeout, the statement,
 * then COMMIT (writes) or ROLLBACK.  The statement goes through the
 * extended protocol (PQsendQueryParams), which refuses a text of more
 * than one statement, with its parameters bound, never pasted in.  Rows
 * come one at a time (single-row mode), so the row and byte caps bound
 * what is held, and the client keeps its own deadline besides the
 * server's statement_timeout (a statement may SET it off).
 *
 * A statement stopped at a cap (time, rows, bytes, the caller gone) may
 * not stop: a DO block can catch query_canceled and go on, and its
 * backend would outlive the call and, repeated, take every connection
 * slot of the database.  So at a cap the backend is cancelled, given
 * PG_CANCEL_GRACE_S, then terminated from a second connection
 * (pg_terminate_backend: a FATAL no handler catches), and the call
 * returns once pg_stat_activity no longer shows it.  A backend that is
 * still there after PG_STOP_WAIT_S keeps its slot: a database's
 * max_connections counts the calls running and such strays, and a call
 * past it is refused (53300) after one more attempt to end them.
 *
 * The role must not be a superuser nor have the privileges of
 * pg_execute_server_program, pg_read_server_files or
 * pg_write_server_files unless the database says `superuser = on`:
 * COPY ... TO PROGRAM runs a shell command on the database's host, and
 * read-only transactions do not stop it.
 *
 * The connection string may hold a password, and a unix socket's path
 * is a path on the host: messages from libpq are scrubbed of both
 * before they go anywhere. */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <postgresql/libpq-fe.h>

#include "engine/tool_sql_internal.h"
#include "util/macro.h"
#include "util/timeutil.h"
#include "util/banned.h"

#define PQ_LIBRARY "libpq.so.5"
#define PG_CONNECT_TIMEOUT "10"
#define PG_GRACE_S 2.0	      /* past statement_timeout before the client cancels */
#define PG_CANCEL_GRACE_S 1.0 /* after a cancel, before the backend is terminated */
#define PG_STOP_WAIT_S 5.0    /* for a terminated backend to be gone */
#define PG_HOLDERS_MAX 128    /* connection strings with backends at once */

static struct {
	PGconn *(*connectdb_params)(const char *const *, const char *const *, int);
	ConnStatusType (*status)(const PGconn *);
	char *(*error_message)(const PGconn *);
	void (*finish)(PGconn *);
	PGresult *(*exec)(PGconn *, const char *);
	int (*send_query_params)(PGconn *, const char *, int, const Oid *, const char *const *,
				 const int *, const int *, int);
	int (*set_single_row_mode)(PGconn *);
	PGresult *(*get_result)(PGconn *);
	int (*consume_input)(PGconn *);
	int (*is_busy)(PGconn *);
	int (*socket)(const PGconn *);
	ExecStatusType (*result_status)(const PGresult *);
	char *(*result_error_field)(const PGresult *, int);
	char *(*result_error_message)(const PGresult *);
	void (*clear)(PGresult *);
	int (*ntuples)(const PGresult *);
	int (*nfields)(const PGresult *);
	char *(*fname)(const PGresult *, int);
	Oid (*ftype)(const PGresult *, int);
	char *(*getvalue)(const PGresult *, int, int);
	int (*getlength)(const PGresult *, int, int);
	int (*getisnull)(const PGresult *, int, int);
	char *(*cmd_tuples)(PGresult *);
	PGcancel *(*get_cancel)(PGconn *);
	int (*cancel)(PGcancel *, char *, int);
	void (*free_cancel)(PGcancel *);
	PQconninfoOption *(*conninfo_parse)(const char *, char **);
	void (*conninfo_free)(PQconninfoOption *);
	void (*freemem)(void *);
	unsigned char *(*unescape_bytea)(const unsigned char *, size_t *);
	PQnoticeProcessor (*set_notice_processor)(PGconn *, PQnoticeProcessor, void *);
	int (*backend_pid)(const PGconn *);
	PGresult *(*exec_params)(PGconn *, const char *, int, const Oid *, const char *const *,
				 const int *, const int *, int);
} pq;

static pthread_mutex_t pq_lock = PTHREAD_MUTEX_INITIALIZER;

static int pq_load(char *msg, size_t n)
{
	static const char *const names[] = {
		"PQconnectdbParams",
		"PQstatus",
		"PQerrorMessage",
		"PQfinish",
		"PQexec",
		"PQsendQueryParams",
		"PQsetSingleRowMode",
		"PQgetResult",
		"PQconsumeInput",
		"PQisBusy",
		"PQsocket",
		"PQresultStatus",
		"PQresultErrorField",
		"PQresultErrorMessage",
		"PQclear",
		"PQntuples",
		"PQnfields",
		"PQfname",
		"PQftype",
		"PQgetvalue",
		"PQgetlength",
		"PQgetisnull",
		"PQcmdTuples",
		"PQgetCancel",
		"PQcancel",
		"PQfreeCancel",
		"PQconninfoParse",
		"PQconninfoFree",
		"PQfreemem",
		"PQunescapeBytea",
		"PQsetNoticeProcessor",
		"PQbackendPID",
		"PQexecParams",
	};
	void **slots = (void **)&pq;
	void *lib;
	int r = 0;

	_Static_assert(sizeof(pq) == ARRAY_SIZE(names) * sizeof(void *), "one name per slot");
	pthread_mutex_lock(&pq_lock);
	if (pq.connectdb_params)
		goto out;
	lib = dlopen(PQ_LIBRARY, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		snprintf(msg, n,
			 "PostgreSQL is unavailable: cannot load %s (install Debian's libpq5)",
			 PQ_LIBRARY);
		r = -ENOENT;
		goto out;
	}
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (!(slots[i] = dlsym(lib, names[i]))) {
			snprintf(msg, n, "PostgreSQL is unavailable: %s has no %s (too old)",
				 PQ_LIBRARY, names[i]);
			memset(&pq, 0, sizeof(pq));
			r = -ENOENT;
			break;
		}
out:
	pthread_mutex_unlock(&pq_lock);
	return r;
}

/* ---- messages without the password ---- */

/* Replace every occurrence of secret in s (in place, s has room for n). */
static void scrub_one(char *s, size_t n, const char *secret)
{
	static const char mark[] = "[redacted]";
	size_t k = secret ? strlen(secret) : 0;
	char *p;

	if (k < 1)
		return;
	while ((p = strstr(s, secret))) {
		size_t tail = strlen(p + k);

		if ((size_t)(p - s) + sizeof(mark) - 1 + tail >= n) {
			*p = '\0';
			break;
		}
		memmove(p + sizeof(mark) - 1, p + k, tail + 1);
		memcpy(p, mark, sizeof(mark) - 1);
	}
}

/* libpq names a unix socket by its path ('on socket "/run/.../.s.PGSQL.5432"',
 * 'Unix domain socket "..."'), a path on the host, whatever the
 * connection string said (the default directory when it said none):
 * the quoted text after "socket " goes. */
static void scrub_sockets(char *s, size_t n)
{
	static const char mark[] = "[a unix socket]";
	char *p = s;

	while ((p = strstr(p, "socket \""))) {
		char *name = p + 8, *close = strchr(name, '"');
		size_t tail;

		if (!close)
			break;
		tail = strlen(close) + 1;
		if ((size_t)(name - s) + sizeof(mark) - 1 + tail > n) {
			*name = '\0';
			break;
		}
		memmove(name + sizeof(mark) - 1, close, tail);
		memcpy(name, mark, sizeof(mark) - 1);
		p = name + sizeof(mark);
	}
}

/* Every unix socket directory of a host list ("/tmp,db.example.com"). */
static void scrub_hosts(char *out, size_t n, const char *hosts)
{
	char one[POLICY_CONNINFO_MAX + 1];

	for (const char *h = hosts; h && *h;) {
		size_t k = strcspn(h, ",");

		if (h[0] == '/' && k > 1 && k < sizeof(one)) {
			memcpy(one, h, k);
			one[k] = '\0';
			scrub_one(out, n, one);
		}
		h += k + (h[k] == ',');
	}
}

/* A libpq message into out, without the connection string's password
 * (or the whole string, which may be a URI holding it) and without a
 * socket's path. */
static void scrub(const char *conninfo, const char *in, char *out, size_t n)
{
	PQconninfoOption *opts = pq.conninfo_parse(conninfo, NULL);

	snprintf(out, n, "%s", in ? in : "");
	for (size_t k = strlen(out); k && out[k - 1] == '\n';)
		out[--k] = '\0';
	scrub_one(out, n, conninfo);
	for (PQconninfoOption *o = opts; o && o->keyword; o++) {
		if (!strcmp(o->keyword, "password") && o->val && *o->val)
			scrub_one(out, n, o->val);
		if (!strcmp(o->keyword, "host") && o->val)
			scrub_hosts(out, n, o->val);
	}
	if (opts)
		pq.conninfo_free(opts);
	scrub_sockets(out, n);
}

static void pg_error(const struct sql_query *q, const PGresult *res, PGconn *c, struct sql_out *o)
{
	char m[SQL_MESSAGE_MAX];
	const char *primary = res ? pq.result_error_field(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;

	scrub(q->db->conninfo, primary ? primary : c ? pq.error_message(c) : "", m, sizeof(m));
	sql_out_error(o, m, res ? pq.result_error_field(res, PG_DIAG_SQLSTATE) : NULL);
}

/* ---- values ---- */

/* Type names for the common built-in OIDs (pg_type.dat). */
static const char *type_name(Oid t, char *buf, size_t n)
{
	static const struct {
		Oid oid;
		const char *name;
	} types[] = {
		{ 16, "boolean" },     { 17, "bytea" },
		{ 18, "char" },	       { 19, "name" },
		{ 20, "bigint" },      { 21, "smallint" },
		{ 23, "integer" },     { 25, "text" },
		{ 26, "oid" },	       { 114, "json" },
		{ 700, "real" },       { 701, "double precision" },
		{ 1042, "character" }, { 1043, "character varying" },
		{ 1082, "date" },      { 1083, "time" },
		{ 1114, "timestamp" }, { 1184, "timestamptz" },
		{ 1186, "interval" },  { 1700, "numeric" },
		{ 2950, "uuid" },      { 3802, "jsonb" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(types); i++)
		if (types[i].oid == t)
			return types[i].name;
	snprintf(buf, n, "oid %u", t);
	return buf;
}

/* A value in PostgreSQL's text format, typed for JSON. */
static json_t *pg_value(const PGresult *res, int c, Oid t, struct sql_out *o)
{
	const char *s = pq.getvalue(res, 0, c);
	size_t len = (size_t)pq.getlength(res, 0, c);
	json_t *j = NULL;

	if (pq.getisnull(res, 0, c))
		return sql_out_room(o, 4) ? json_null() : NULL;
	if (!sql_out_room(o, t == 17 ? len * 2 / 3 : len))
		return NULL;
	switch (t) {
	case 16:
		return json_boolean(s[0] == 't');
	case 20:
	case 21:
	case 23:
	case 26: {
		char *end;
		long long v = strtoll(s, &end, 10);

		j = !*end ? json_integer(v) : NULL;
		break;
	}
	case 700:
	case 701: {
		char *end;
		double d = strtod(s, &end);

		/* NaN and Infinity have no JSON number: they stay text */
		j = !*end ? json_real(d) : NULL;
		break;
	}
	case 114:
	case 3802:
		j = json_loadb(s, len, JSON_DECODE_ANY, NULL);
		break;
	case 17: {
		size_t blen = 0;
		unsigned char *b = pq.unescape_bytea((const unsigned char *)s, &blen);

		j = b ? sql_binary(b, blen) : NULL;
		pq.freemem(b);
		break;
	}
	default:
		break;
	}
	if (!j)
		j = json_stringn(s, len);
	return j ? j : sql_binary(s, len);
}

/* ---- the exchange ---- */

/* Wait for the result without blocking past the deadline or the stop
 * flag.  true: a result can be read without blocking. */
static bool pg_wait(PGconn *c, const struct sql_query *q, uint64_t deadline_ns, bool *ret_late)
{
	while (pq.is_busy(c)) {
		struct pollfd p = { .fd = pq.socket(c), .events = POLLIN };
		uint64_t now = now_ns();

		if (now >= deadline_ns || sql_stopped(q)) {
			*ret_late = now >= deadline_ns;
			return false;
		}
		/* 200 ms slices: the stop flag is read between them */
		(void)poll(&p, 1,
			   (int)((deadline_ns - now) / 1000000 > 200
					 ? 200
					 : (deadline_ns - now) / 1000000 + 1));
		if (!pq.consume_input(c))
			return true; /* the error comes with the result */
	}
	return true;
}

static void pg_cancel(PGconn *c)
{
	PGcancel *k = pq.get_cancel(c);
	char buf[256];

	if (k) {
		(void)pq.cancel(k, buf, sizeof(buf));
		pq.free_cancel(k);
	}
}

/* ---- the backends codecell holds ---- */

/* A backend, as pg_stat_activity names it: its pid and its start, the
 * epoch as text ("": unknown) (a pid alone may be another backend's by
 * the time it is looked at). */
struct pg_backend {
	int pid;
	char start[64];
};

/* Per connection string (one server, one role): the calls that hold a
 * connection and the backends that outlived theirs. */
struct pg_holder {
	char *conninfo; /* owned; NULL: a free entry */
	unsigned busy;
	struct pg_backend strays[DB_CONNECTIONS_MAX];
	size_t n_strays;
	bool reaping;
};

static struct pg_holder holders[PG_HOLDERS_MAX];
static pthread_mutex_t holders_lock = PTHREAD_MUTEX_INITIALIZER;

static struct pg_holder *holder_find(const char *conninfo)
{
	struct pg_holder *free_one = NULL;

	for (size_t i = 0; i < PG_HOLDERS_MAX; i++) {
		struct pg_holder *h = &holders[i];

		if (h->conninfo && !strcmp(h->conninfo, conninfo))
			return h;
		if (h->conninfo && !h->busy && !h->n_strays && !h->reaping) {
			free(h->conninfo);
			h->conninfo = NULL;
		}
		if (!h->conninfo && !free_one)
			free_one = h;
	}
	if (free_one && !(free_one->conninfo = strdup(conninfo)))
		return NULL;
	return free_one;
}

static void pg_pause(double s)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)(s * 1e9) };

	nanosleep(&ts, NULL);
}

/* A connection of ours to end other backends with (no statement of the
 * caller's runs on it).  NULL when none can be made. */
static PGconn *pg_connect_quiet(const char *conninfo)
{
	const char *const keys[] = { "connect_timeout", "application_name", "dbname", NULL };
	const char *const vals[] = { PG_CONNECT_TIMEOUT, "codecell", conninfo, NULL };
	PGconn *c = pq.connectdb_params(keys, vals, 1);

	if (c && pq.status(c) == CONNECTION_OK)
		return c;
	pq.finish(c);
	return NULL;
}

/* Terminate b and wait for pg_stat_activity to stop showing it.  true:
 * gone (or never there).  Matched by pid and start time both: a pid alone
 * may have been reused by another backend by now, and a backend whose
 * start is unknown is never matched. */
static bool pg_terminate(PGconn *k, const struct pg_backend *b)
{
	static const char sql[] =
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
		"WHERE pid = $1::int AND extract(epoch FROM backend_start)::text = $2";
	uint64_t until = now_ns() + (uint64_t)(PG_STOP_WAIT_S * 1e9);
	char pid[16];
	const char *vals[] = { pid, b->start };

	snprintf(pid, sizeof(pid), "%d", b->pid);
	for (;;) {
		PGresult *res = pq.exec_params(k, sql, 2, NULL, vals, NULL, NULL, 0);
		bool ok = res && pq.result_status(res) == PGRES_TUPLES_OK,
		     gone = ok && !pq.ntuples(res);

		pq.clear(res);
		if (gone || !ok)
			return gone;
		if (now_ns() >= until)
			return false;
		pg_pause(0.02);
	}
}

/* End the strays of h that can be ended (one caller at a time). */
static void holder_reap(struct pg_holder *h)
{
	struct pg_backend v[DB_CONNECTIONS_MAX];
	bool gone[DB_CONNECTIONS_MAX] = { false };
	size_t n;
	PGconn *k;

	pthread_mutex_lock(&holders_lock);
	if (h->reaping || !h->n_strays) {
		pthread_mutex_unlock(&holders_lock);
		return;
	}
	h->reaping = true;
	n = h->n_strays;
	memcpy(v, h->strays, n * sizeof(v[0]));
	pthread_mutex_unlock(&holders_lock);
	if ((k = pg_connect_quiet(h->conninfo))) {
		for (size_t i = 0; i < n; i++)
			gone[i] = pg_terminate(k, &v[i]);
		pq.finish(k);
	}
	pthread_mutex_lock(&holders_lock);
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; gone[i] && j < h->n_strays; j++)
			if (h->strays[j].pid == v[i].pid &&
			    !strcmp(h->strays[j].start, v[i].start)) {
				h->strays[j] = h->strays[--h->n_strays];
				break;
			}
	}
	h->reaping = false;
	pthread_mutex_unlock(&holders_lock);
}

/* A connection slot of db, or NULL with o->error: the calls running and
 * the backends that outlived theirs are max_connections already. */
static struct pg_holder *holder_take(const struct engine_database *db, struct sql_out *o)
{
	struct pg_holder *h;
	char m[320];

	for (int attempt = 0;; attempt++) {
		size_t strays = 0;

		pthread_mutex_lock(&holders_lock);
		h = holder_find(db->conninfo);
		if (h && h->busy + h->n_strays < db->max_connections) {
			h->busy++;
			pthread_mutex_unlock(&holders_lock);
			return h;
		}
		if (h)
			strays = h->n_strays;
		pthread_mutex_unlock(&holders_lock);
		if (!h) {
			sql_out_error(o,
				      "too many PostgreSQL servers in use at once: try again later",
				      "53300");
			return NULL;
		}
		if (!strays || attempt)
			break;
		holder_reap(h);
	}
	snprintf(m, sizeof(m),
		 "database '%s' has %u queries running or being stopped, its "
		 "max_connections: try again when one ends, or raise max_connections in "
		 "[database %s]",
		 db->name, db->max_connections, db->name);
	sql_out_error(o, m, "53300");
	return NULL;
}

/* Give the slot back; a backend that could not be ended keeps it. */
static void holder_give(struct pg_holder *h, const struct pg_backend *stray)
{
	pthread_mutex_lock(&holders_lock);
	h->busy--;
	if (stray && stray->pid > 0 && h->n_strays < DB_CONNECTIONS_MAX)
		h->strays[h->n_strays++] = *stray;
	pthread_mutex_unlock(&holders_lock);
}

/* Wait up to PG_CANCEL_GRACE_S for the results to end after a cancel.
 * true: the backend is idle (it took the cancel). */
static bool pg_settle(PGconn *c)
{
	uint64_t until = now_ns() + (uint64_t)(PG_CANCEL_GRACE_S * 1e9);

	while (now_ns() < until) {
		struct pollfd p = { .fd = pq.socket(c), .events = POLLIN };

		if (!pq.consume_input(c))
			return false;
		while (!pq.is_busy(c)) {
			PGresult *res = pq.get_result(c);
			ExecStatusType st = res ? pq.result_status(res) : PGRES_EMPTY_QUERY;

			pq.clear(res);
			if (!res)
				return true;
			/* a COPY state never ends by itself */
			if (st == PGRES_COPY_OUT || st == PGRES_COPY_IN || st == PGRES_COPY_BOTH)
				return false;
		}
		(void)poll(&p, 1, 50);
	}
	return false;
}

/* The statement was stopped at a cap: cancel it, give it the grace, and
 * finish the connection; then from a second connection terminate the
 * backend if it is still there and wait until pg_stat_activity no longer
 * shows it (even an idle backend exits only once it has read our
 * Terminate: the call returns with it gone).  true: gone. */
static bool pg_end(PGconn *c, const char *conninfo, const struct pg_backend *b)
{
	PGconn *k;
	bool gone;

	pg_cancel(c);
	(void)pg_settle(c);
	pq.finish(c);
	if (b->pid <= 0)
		return true; /* the connection never got as far as a statement */
	if (!(k = pg_connect_quiet(conninfo)))
		return false;
	gone = pg_terminate(k, b);
	pq.finish(k);
	return gone;
}

static void pg_columns(const PGresult *res, struct sql_out *o)
{
	char buf[32];

	for (int i = 0; i < pq.nfields(res); i++)
		sql_out_column(o, pq.fname(res, i), type_name(pq.ftype(res, i), buf, sizeof(buf)));
}

/* One row (a PGRES_SINGLE_TUPLE result).  false: a cap is hit. */
static bool pg_row(const PGresult *res, struct sql_out *o)
{
	json_t *row;

	if (json_array_size(o->rows) >= o->max_rows) {
		o->trunc_rows = true;
		return false;
	}
	row = json_array();
	for (int i = 0; i < pq.nfields(res); i++) {
		json_t *v = pg_value(res, i, pq.ftype(res, i), o);

		if (!v) {
			json_decref(row);
			return false;
		}
		json_array_append_new(row, v);
	}
	json_array_append_new(o->rows, row);
	return true;
}

/* The statement's results, row by row.  false: stopped early (a cap,
 * the deadline or the stop flag, COPY): the statement may still run,
 * pg_end() ends it. */
static bool pg_results(PGconn *c, const struct sql_query *q, uint64_t deadline_ns,
		       struct sql_out *o)
{
	bool late = false, first = true;
	PGresult *res;

	for (;;) {
		if (!pg_wait(c, q, deadline_ns, &late)) {
			if (late) {
				char m[128];

				o->timed_out = true;
				snprintf(m, sizeof(m),
					 "the query ran past the time cap of %g s and was "
					 "stopped",
					 q->db->timeout_s);
				sql_out_error(o, m, "57014");
			} else {
				sql_out_error(o, "the call was stopped", "57014");
			}
			return false;
		}
		res = pq.get_result(c);
		if (!res)
			return true;
		switch (pq.result_status(res)) {
		case PGRES_SINGLE_TUPLE:
			if (first)
				pg_columns(res, o);
			first = false;
			if (!pg_row(res, o)) {
				pq.clear(res);
				return false;
			}
			break;
		case PGRES_TUPLES_OK:
			if (first)
				pg_columns(res, o);
			first = false;
			break;
		case PGRES_COMMAND_OK:
			o->changed = strtoll(pq.cmd_tuples(res), NULL, 10);
			break;
		case PGRES_COPY_OUT:
		case PGRES_COPY_IN:
		case PGRES_COPY_BOTH:
			/* libpq would hand this state back forever: the
			 * connection goes instead */
			pq.clear(res);
			sql_out_error(o, "COPY is not supported: SELECT the rows instead", "0A000");
			return false;
		default:
			if (!o->error) {
				if (!strcmp(pq.result_error_field(res, PG_DIAG_SQLSTATE) ?: "",
					    "57014"))
					o->timed_out = true;
				pg_error(q, res, c, o);
			}
			break;
		}
		pq.clear(res);
	}
}

/* A command of ours (BEGIN, SET, COMMIT).  0 or -EIO with o->error. */
static int pg_command(PGconn *c, const struct sql_query *q, const char *sql, struct sql_out *o)
{
	PGresult *res = pq.exec(c, sql);
	int r = res && pq.result_status(res) == PGRES_COMMAND_OK ? 0 : -EIO;

	if (r < 0 && !o->error)
		pg_error(q, res, c, o);
	pq.clear(res);
	return r;
}

/* Parameters as text: JSON strings as they are, numbers and booleans in
 * their JSON spelling, null as SQL NULL.  $1, $2... by position; an
 * object is refused (PostgreSQL has no named parameters). */
static int pg_params(const struct sql_query *q, char **vals, char *msg, size_t n)
{
	size_t i;
	json_t *v;

	if (json_is_object(q->params) && json_object_size(q->params))
		return snprintf(msg, n,
				"PostgreSQL takes $1, $2, ... with params as an array, not an "
				"object"),
		       -EINVAL;
	json_array_foreach (q->params, i, v) {
		if (json_is_null(v))
			continue;
		if (json_is_string(v))
			vals[i] = strndup(json_string_value(v), json_string_length(v));
		else if (json_is_boolean(v))
			vals[i] = strdup(json_is_true(v) ? "true" : "false");
		else if (json_is_number(v))
			vals[i] = json_dumps(v, JSON_ENCODE_ANY);
		else
			return snprintf(msg, n,
					"parameter $%zu is %s: parameters are strings, numbers, "
					"booleans or null",
					i + 1, json_is_array(v) ? "an array" : "an object"),
			       -EINVAL;
		if (!vals[i])
			return -ENOMEM;
	}
	return 0;
}

/* NOTICE and WARNING messages (RAISE NOTICE in the statement) would go
 * to the server's stderr: they are dropped. */
static void pg_notice(void *arg, const char *message)
{
	(void)arg, (void)message;
}

static PGconn *pg_connect(const struct sql_query *q, struct sql_out *o)
{
	/* dbname with expand_dbname: the policy's string may be a URI or
	 * key=value pairs, and its values win over the ones before it.
	 * UTF8: the server converts text, so it comes back as JSON text */
	const char *const keys[] = { "connect_timeout", "application_name", "client_encoding",
				     "dbname", NULL };
	const char *const vals[] = { PG_CONNECT_TIMEOUT, "codecell", "UTF8", q->db->conninfo,
				     NULL };
	PGconn *c = pq.connectdb_params(keys, vals, 1);

	if (!c || pq.status(c) != CONNECTION_OK) {
		char m[SQL_MESSAGE_MAX], full[SQL_MESSAGE_MAX + 128];

		scrub(q->db->conninfo, c ? pq.error_message(c) : "out of memory", m, sizeof(m));
		snprintf(full, sizeof(full), "cannot connect to database '%s': %s", q->db->name, m);
		sql_out_error(o, full, "08001");
		pq.finish(c);
		return NULL;
	}
	pq.set_notice_processor(c, pg_notice, NULL);
	return c;
}

/* Who the connection is: its backend (for pg_end), and whether its role
 * may reach the database host's files and programs, or make itself able
 * to (ADMIN OPTION on one of those roles; CREATEROLE before PostgreSQL
 * 16, which grants any role), refused unless the database says
 * superuser = on.  0, or -EPERM with o->error. */
static int pg_identify(PGconn *c, const struct sql_query *q, struct pg_backend *b,
		       struct sql_out *o)
{
	static const char sql[] =
		"SELECT (SELECT extract(epoch FROM backend_start)::text FROM pg_stat_activity "
		"WHERE pid = pg_backend_pid()), session_user, NULLIF(concat_ws(', ', "
		"(SELECT string_agg(rolname, ', ' ORDER BY rolname) FROM pg_roles WHERE (rolsuper OR "
		"rolname IN ('pg_execute_server_program', 'pg_read_server_files', "
		"'pg_write_server_files')) AND (pg_has_role(session_user, oid, 'MEMBER') OR "
		"pg_has_role(session_user, oid, 'MEMBER WITH ADMIN OPTION'))), "
		"(SELECT 'CREATEROLE (before PostgreSQL 16 it grants itself any role)' FROM pg_roles "
		"WHERE rolname = session_user AND rolcreaterole AND "
		"current_setting('server_version_num')::int < 160000)), '')";
	PGresult *res = pq.exec(c, sql);
	char m[SQL_MESSAGE_MAX];
	int r = 0;

	if (!res || pq.result_status(res) != PGRES_TUPLES_OK || pq.ntuples(res) != 1) {
		pg_error(q, res, c, o);
		r = -EIO;
	} else if (!q->db->superuser && !pq.getisnull(res, 0, 2)) {
		snprintf(
			m, sizeof(m),
			"database '%s' connects as role '%.64s', which has the "
			"privileges of %.256s: such a role can run programs and read and write files "
			"on the database's host (COPY ... TO PROGRAM): connect as an ordinary role, or "
			"set 'superuser = on' in [database %s]",
			q->db->name, pq.getvalue(res, 0, 1), pq.getvalue(res, 0, 2), q->db->name);
		sql_out_error(o, m, "42501");
		r = -EPERM;
	} else {
		b->pid = pq.backend_pid(c);
		snprintf(b->start, sizeof(b->start), "%s", pq.getvalue(res, 0, 0));
	}
	pq.clear(res);
	return r;
}

/* The statement (or our COMMIT) through the extended protocol, rows one
 * at a time, under the deadline.  false: stopped early, see pg_end(). */
static bool pg_statement(PGconn *c, const struct sql_query *q, const char *text, int np,
			 char **vals, uint64_t deadline, struct sql_out *o)
{
	if (!pq.send_query_params(c, text, np, NULL, (const char *const *)vals, NULL, NULL, 0)) {
		pg_error(q, NULL, c, o);
		return true;
	}
	(void)pq.set_single_row_mode(c);
	return pg_results(c, q, deadline, o);
}

/* Up to the end of the transaction.  false: stopped early. */
static bool pg_transaction(PGconn *c, const struct sql_query *q, int np, char **vals,
			   struct sql_out *o)
{
	uint64_t deadline = now_ns() + (uint64_t)((q->db->timeout_s + PG_GRACE_S) * 1e9);
	json_int_t changed;
	char set[96];

	snprintf(set, sizeof(set), "SET LOCAL statement_timeout = %llu",
		 (unsigned long long)(q->db->timeout_s * 1000));
	if (pg_command(c, q, q->db->writes ? "BEGIN" : "BEGIN READ ONLY", o) < 0 ||
	    pg_command(c, q, set, o) < 0)
		return true;
	if (!pg_statement(c, q, q->text, np, vals, deadline, o))
		return false;
	if (o->error || !q->db->writes)
		return pg_command(c, q, "ROLLBACK", o), true;
	/* a deferred trigger runs at COMMIT: under the same caps */
	changed = o->changed;
	if (!pg_statement(c, q, "COMMIT", 0, NULL, deadline, o))
		return false;
	o->changed = changed;
	return true;
}

int sql_pg_run(const struct sql_query *q, struct sql_out *o, char *msg, size_t n)
{
	size_t np = json_is_array(q->params) ? json_array_size(q->params) : 0;
	char **vals = calloc(np + 1, sizeof(*vals));
	struct pg_backend b = { .pid = 0 };
	struct pg_holder *h = NULL;
	bool stray = false;
	PGconn *c = NULL;
	int r;

	if (!vals)
		return -ENOMEM;
	r = pq_load(msg, n);
	if (r == 0)
		r = pg_params(q, vals, msg, n);
	if (r < 0 || !(h = holder_take(q->db, o)) || !(c = pg_connect(q, o)) ||
	    pg_identify(c, q, &b, o) < 0)
		goto out;
	if (!pg_transaction(c, q, (int)np, vals, o)) {
		/* a cap: what came is the result; the backend goes */
		stray = !pg_end(c, q->db->conninfo, &b);
		c = NULL;
	}
out:
	if (c)
		pq.finish(c);
	if (h)
		holder_give(h, stray ? &b : NULL);
	for (size_t i = 0; i < np; i++)
		free(vals[i]);
	free(vals);
	return r;
}
