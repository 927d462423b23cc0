/* The audit log: records, atomic appends, rotation by size. */
#include "engine/audit.h"

#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/egress.h"
#include "util/sha256.h"
#include "util/timeutil.h"
#include "util/banned.h"

struct engine_audit {
	pthread_mutex_t lock; /* rotation */
	char *path;
	int fd;
	uint64_t rotate;
};

static int open_log(const char *path)
{
	int fd =
		open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW, 0600);

	return fd < 0 ? -errno : fd;
}

int engine_audit_open(const char *path, uint64_t rotate_bytes, struct engine_audit **ret, char *err,
		      size_t n)
{
	struct engine_audit *a = calloc(1, sizeof(*a));
	int fd;

	if (!a || !(a->path = strdup(path))) {
		free(a);
		return snprintf(err, n, "out of memory"), -ENOMEM;
	}
	fd = open_log(path);
	if (fd < 0) {
		snprintf(err, n, "cannot open the audit log '%s': %s", path, strerror(-fd));
		free(a->path);
		free(a);
		return fd;
	}
	a->fd = fd;
	a->rotate = rotate_bytes ? rotate_bytes : AUDIT_ROTATE_DEFAULT;
	pthread_mutex_init(&a->lock, NULL);
	*ret = a;
	return 0;
}

void engine_audit_close(struct engine_audit *a)
{
	if (!a)
		return;
	close(a->fd);
	pthread_mutex_destroy(&a->lock);
	free(a->path);
	free(a);
}

void engine_audit_id(char out[AUDIT_ID_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char b[AUDIT_ID_LEN / 2];

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
		uint64_t t = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32;

		memcpy(b, &t, sizeof(b) < sizeof(t) ? sizeof(b) : sizeof(t));
	}
	for (size_t i = 0; i < sizeof(b); i++) {
		out[2 * i] = hex[b[i] >> 4];
		out[2 * i + 1] = hex[b[i] & 15];
	}
	out[AUDIT_ID_LEN] = '\0';
}

static bool secret_key(const char *k)
{
	static const char *const words[] = { "env",	 "key",		  "token",     "secret",
					     "password", "authorization", "credential" };

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strcasestr(k, words[i]))
			return true;
	return false;
}

/* A copy of args with the values of secret keys replaced (an env object
 * keeps its names: which variables were set is worth knowing). */
static json_t *redact(json_t *v)
{
	const char *k;
	json_t *o, *x;

	if (!json_is_object(v))
		return json_deep_copy(v);
	o = json_object();
	json_object_foreach (v, k, x) {
		if (!secret_key(k)) {
			json_object_set_new(o, k, redact(x));
		} else if (json_is_object(x)) {
			json_t *names = json_object();
			const char *k2;
			json_t *x2;

			json_object_foreach (x, k2, x2)
				json_object_set_new(names, k2, json_string("[redacted]"));
			json_object_set_new(o, k, names);
		} else {
			json_object_set_new(o, k, json_string("[redacted]"));
		}
	}
	return o;
}

json_t *engine_audit_run_args(const struct run_request *req, unsigned asked)
{
	struct engine_limit_values lv;
	json_t *o = json_object(), *lim = json_object(), *env = json_object();

	engine_limit_from_sandbox(&req->limits, &lv);
	lv.v[LIMIT_OUTPUT] = (double)req->output_limit;
	for (int i = 0; i < _LIMIT_MAX; i++)
		if (asked & (1u << i) && i != LIMIT_RESULT && i != LIMIT_IDLE_TIMEOUT)
			json_object_set_new(lim, engine_limits[i].name, json_real(lv.v[i]));
	for (size_t i = 0; req->env && req->env[i]; i++) {
		const char *eq = strchr(req->env[i], '=');
		char k[ENGINE_ENV_KEY_MAX + 1];

		if (!eq || (size_t)(eq - req->env[i]) > ENGINE_ENV_KEY_MAX)
			continue;
		snprintf(k, sizeof(k), "%.*s", (int)(eq - req->env[i]), req->env[i]);
		json_object_set_new(env, k, json_string(eq + 1));
	}
	json_object_set_new(o, "limits", lim);
	json_object_set_new(o, "network", json_string(sandbox_net_name(req->net)));
	json_object_set_new(o, "env", env);
	json_object_set_new(o, "filename", json_string(req->filename ? req->filename : ""));
	return o;
}

static json_t *iso_time(void)
{
	char s[64];

	iso8601_ms(epoch_ms(), s, sizeof(s));
	return json_string(s);
}

static json_t *opt_string(const char *s)
{
	return s ? json_string(s) : json_null();
}

static void result_fields(json_t *o, const struct engine_audit_record *r)
{
	const struct run_result *res = r->res;
	const char *status = r->status && !strcmp(r->status, "pending") ? "pending"
			     : r->verdict && !r->verdict->allowed	? "rejected"
									: r->status;

	if (!res) {
		json_object_set_new(o, "status", opt_string(status ? status : "ok"));
		json_object_set_new(o, "exit_code", json_null());
		json_object_set_new(o, "signal", json_null());
		json_object_set_new(o, "limits_hit", json_array());
		json_object_set_new(o, "output_bytes", json_integer((json_int_t)r->bytes));
		return;
	}
	json_object_set_new(o, "status", json_string(result_status_name(res->status)));
	json_object_set_new(o, "exit_code",
			    res->has_exit_code ? json_integer(res->exit_code) : json_null());
	json_object_set_new(o, "signal", res->signal ? json_integer(res->signal) : json_null());
	json_object_set_new(o, "limits_hit", run_result_limits_json(res->limits_hit));
	json_object_set_new(o, "output_bytes",
			    json_integer((json_int_t)(res->out_len + res->err_len)));
}

json_t *engine_audit_json(const struct engine_audit_record *r)
{
	char id[AUDIT_ID_LEN + 1], digest[2 * SHA256_LEN + 1];
	const struct engine_verdict *v = r->verdict;
	json_t *o = json_object();

	if (!o)
		return NULL;
	if (!r->request_id)
		engine_audit_id(id);
	json_object_set_new(o, "time", iso_time());
	json_object_set_new(o, "request_id", json_string(r->request_id ? r->request_id : id));
	json_object_set_new(o, "client", opt_string(r->client));
	json_object_set_new(o, "session", opt_string(r->session));
	json_object_set_new(o, "door", json_string(engine_door_name(r->door)));
	json_object_set_new(o, "tool", json_string(engine_action_name(r->action)));
	json_object_set_new(o, "language",
			    r->has_lang ? json_string(engine_lang_name(r->lang)) : json_null());
	if (r->code)
		sha256_hex(r->code, r->code_len, digest);
	json_object_set_new(o, "code_sha256", r->code ? json_string(digest) : json_null());
	json_object_set_new(o, "arguments", r->args ? redact(r->args) : json_object());
	json_object_set_new(o, "decision",
			    json_string(r->status && !strcmp(r->status, "pending") ? "pending"
					: v && !v->allowed			   ? "rejected"
										   : "allowed"));
	json_object_set_new(o, "rule",
			    v && !v->allowed && v->rule ? json_string(v->rule) : json_null());
	json_object_set_new(o, "approval",
			    r->approval_id ? json_pack("{s:s, s:s?}", "id", r->approval_id, "state",
						       r->approval_state)
					   : json_null());
	json_object_set_new(o, "duration_ms", json_real(round(r->duration_ms * 1000) / 1000));
	result_fields(o, r);
	return o;
}

/* FILE.(k) -> FILE.(k+1), FILE -> FILE.1, a new FILE.  Under a->lock. */
static void rotate(struct engine_audit *a)
{
	char from[4096], to[4096];
	int fd;

	for (int k = AUDIT_KEEP - 1; k >= 1; k--) {
		snprintf(from, sizeof(from), "%s.%d", a->path, k);
		snprintf(to, sizeof(to), "%s.%d", a->path, k + 1);
		(void)rename(from, to);
	}
	snprintf(to, sizeof(to), "%s.1", a->path);
	if (rename(a->path, to) < 0)
		return;
	fd = open_log(a->path);
	if (fd >= 0) {
		close(a->fd);
		a->fd = fd;
	}
}

/* Another process that writes the same log (two servers, or a server
 * and `codecell mcp` with the default log) may have rotated it: our fd
 * is FILE.1 then, and our records go to the path's file from now on.
 * Under a->lock.  true: the fd changed. */
static bool follow(struct engine_audit *a)
{
	struct stat p, f;
	int fd;

	if (stat(a->path, &p) == 0 && fstat(a->fd, &f) == 0 && p.st_ino == f.st_ino &&
	    p.st_dev == f.st_dev)
		return false;
	fd = open_log(a->path);
	if (fd < 0)
		return false; /* the old file still takes the records */
	close(a->fd);	      /* and with it our lock on it, if any */
	a->fd = fd;
	return true;
}

static char *dump(json_t *o)
{
	return json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(12));
}

/* o's line is over AUDIT_LINE_MAX (len bytes): its arguments become
 * {"truncated": true, "length": N, "head": "..."}, the head of their
 * JSON text (N bytes in all) cut at a character, as long as the line
 * allows once escaped.  Escaping only grows the text, so cutting as
 * many bytes more as the line is over converges in a step or two. */
static char *cut_arguments(json_t *o, size_t len)
{
	char *text = json_dumps(json_object_get(o, "arguments"), JSON_COMPACT | JSON_ENCODE_ANY);
	size_t n = text ? strlen(text) : 0, keep, over;
	char *line = NULL;

	if (!text)
		return NULL;
	keep = len - n < AUDIT_LINE_MAX - 256 ? AUDIT_LINE_MAX - 256 - (len - n) : 0;
	for (int tries = 0; tries < 8; tries++) {
		keep = keep < n ? keep : n;
		while (keep && ((unsigned char)text[keep] & 0xc0) == 0x80)
			keep--; /* not into a character */
		json_object_set_new(o, "arguments",
				    json_pack("{s:b, s:I, s:s%}", "truncated", 1, "length",
					      (json_int_t)n, "head", text, keep));
		free(line);
		line = dump(o);
		if (!line || strlen(line) < AUDIT_LINE_MAX || !keep)
			break;
		over = strlen(line) - AUDIT_LINE_MAX + 1;
		keep = keep > over ? keep - over : 0;
	}
	if (line && strlen(line) >= AUDIT_LINE_MAX) {
		/* the rest of the record is over already: the marker alone */
		free(line);
		json_object_set_new(
			o, "arguments",
			json_pack("{s:b, s:I}", "truncated", 1, "length", (json_int_t)n));
		line = dump(o);
	}
	free(text);
	return line;
}

int engine_audit_write(struct engine_audit *a, const struct engine_audit_record *r)
{
	json_t *o;
	char *line;
	size_t len;
	ssize_t w;
	struct stat st;
	int k = 0;

	if (!a)
		return 0;
	o = engine_audit_json(r);
	if (!o)
		return -ENOMEM;
	line = dump(o);
	if (line && (len = strlen(line)) >= AUDIT_LINE_MAX) {
		free(line);
		line = cut_arguments(o, len);
	}
	json_decref(o);
	if (!line)
		return -ENOMEM;
	len = strlen(line);
	line[len++] = '\n'; /* json_dumps's NUL becomes the newline */
	pthread_mutex_lock(&a->lock);
	follow(a);
	if (fstat(a->fd, &st) == 0 && (uint64_t)st.st_size + len > a->rotate && st.st_size > 0) {
		/* one rotation at a time among the processes writing the
		 * log: the lock is the file's, and whoever comes second finds
		 * the path moved on (follow) and a small file again */
		(void)flock(a->fd, LOCK_EX);
		if (!follow(a) && fstat(a->fd, &st) == 0 && (uint64_t)st.st_size + len > a->rotate)
			rotate(a);
		(void)flock(a->fd, LOCK_UN);
	}
	/* one write: O_APPEND puts it whole at the end */
	w = write(a->fd, line, len);
	if (w < 0)
		k = -errno;
	else if ((size_t)w != len)
		k = -EIO;
	pthread_mutex_unlock(&a->lock);
	free(line);
	return k;
}

int engine_audit_egress(struct engine_audit *a, const struct engine_audit_record *base,
			const struct egress_event *ev, size_t n, uint64_t dropped)
{
	struct engine_verdict refused = { .allowed = false, .rule = "egress", .http = 403 };
	int r = 0, k;

	if (!a)
		return 0;
	for (size_t i = 0; i < n; i++) {
		struct engine_audit_record rec = *base;
		char at[64];

		iso8601_ms(ev[i].time_ms, at, sizeof(at));
		rec.action = ACTION_EGRESS;
		rec.has_lang = false;
		rec.code = NULL;
		rec.res = NULL;
		rec.approval_id = rec.approval_state = NULL;
		rec.duration_ms = 0;
		rec.bytes = 0;
		rec.verdict = ev[i].status == 200 ? NULL : &refused;
		rec.status = ev[i].status == 200 ? "ok" : NULL;
		rec.args =
			json_pack("{s:s, s:s, s:i, s:s?, s:i, s:s?, s:s}", "method", ev[i].method,
				  "host", ev[i].host, "port", (int)ev[i].port, "address",
				  ev[i].address[0] ? ev[i].address : NULL, "proxy_status",
				  ev[i].status, "why", ev[i].why[0] ? ev[i].why : NULL, "at", at);
		k = engine_audit_write(a, &rec);
		json_decref(rec.args);
		if (k < 0)
			r = k;
	}
	if (dropped) {
		struct engine_audit_record rec = *base;

		rec.action = ACTION_EGRESS;
		rec.has_lang = false;
		rec.code = NULL;
		rec.res = NULL;
		rec.verdict = NULL;
		rec.approval_id = rec.approval_state = NULL;
		rec.status = "dropped";
		rec.args = json_pack("{s:I}", "count", (json_int_t)dropped);
		k = engine_audit_write(a, &rec);
		json_decref(rec.args);
		if (k < 0)
			r = k;
	}
	return r;
}
