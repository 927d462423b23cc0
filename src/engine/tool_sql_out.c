/* The sql tool's result under its caps, and its stop test: shared by
 * the SQLite and PostgreSQL drivers (tool_sql_sqlite.c, tool_sql_pg.c). */
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "engine/tool_sql_internal.h"
#include "util/base64.h"
#include "util/timeutil.h"
#include "util/banned.h"

void sql_out_column(struct sql_out *o, const char *name, const char *type)
{
	o->bytes += strlen(name) + strlen(type);
	json_array_append_new(o->columns, json_pack("{s:s, s:s}", "name", name, "type", type));
}

bool sql_out_room(struct sql_out *o, uint64_t n)
{
	if (o->bytes + n > o->max_bytes) {
		o->trunc_bytes = true;
		return false;
	}
	o->bytes += n;
	return true;
}

json_t *sql_binary(const void *p, size_t n)
{
	char *b = base64_encode(p, n);
	json_t *j = b ? json_pack("{s:s}", "base64", b) : NULL;

	free(b);
	return j;
}

void sql_out_error(struct sql_out *o, const char *message, const char *sqlstate)
{
	size_t n = strnlen(message, SQL_MESSAGE_MAX);
	json_t *v;

	/* a server's message is passed on, cut and made valid UTF-8 (a cut
	 * may split a character) */
	while (n && !(v = json_stringn(message, n)))
		n--;
	if (!n)
		v = NULL;
	json_decref(o->error);
	o->error = json_pack("{s:s, s:o, s:o}", "name", "SQLError", "value",
			     v ? v : json_string("(the message is not UTF-8)"), "sqlstate",
			     sqlstate ? json_string(sqlstate) : json_null());
}

bool sql_stopped(const struct sql_query *q)
{
	static __thread uint64_t next_ns;
	struct pollfd p = { .fd = q->hangup_fd, .events = POLLRDHUP };
	uint64_t now;

	if (q->stop_flag && __atomic_load_n(q->stop_flag, __ATOMIC_SEQ_CST))
		return true;
	if (q->hangup_fd < 0 || (now = now_ns()) < next_ns)
		return false;
	next_ns = now + 100000000;
	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}
