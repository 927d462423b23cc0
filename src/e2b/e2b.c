/* The E2B door (e2b.h): which requests are its, their routes, auth, error
 * shapes, the sandboxes' table and the control plane (create, list,
 * info, kill, set-timeout, connect). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include "e2b/internal.h"
#include "http/metrics.h"
#include "http/policy.h"
#include "e2b/e2b.h"
#include "engine/limits.h"
#include "engine/setup.h"
#include "util/timeutil.h"
#include "util/envname.h"
#include "util/json.h"
#include "util/macro.h"
#include "util/parse.h"
#include "util/percent.h"
#include "util/utf8.h"
#include "util/sha256.h"
#include "util/banned.h"

#define JSON_FLAGS (JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(6))
#define E2B_METADATA_MAX 64 /* metadata keys of one sandbox */
#define E2B_METADATA_VALUE_MAX 1024

static int random_hex(char *out, size_t bytes)
{
	unsigned char b[32];

	if (bytes > sizeof(b) || getrandom(b, bytes, 0) != (ssize_t)bytes)
		return -EIO;
	for (size_t i = 0; i < bytes; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
	return 0;
}

/* ---- state ---- */

static int e2b_init(struct api_server *srv, void **ret_state)
{
	struct e2b_state *st = calloc(1, sizeof(*st));

	(void)srv;
	if (!st)
		return -ENOMEM;
	pthread_mutex_init(&st->lock, NULL);
	*ret_state = st;
	return 0;
}

static void e2b_sandbox_free(struct e2b_sandbox *sb)
{
	engine_session_unref(sb->entry);
	json_decref(sb->metadata);
	free(sb);
}

/* The sessions themselves are ended with the registry's (server.c). */
static void e2b_free(void *state)
{
	struct e2b_state *st = state;

	if (!st)
		return;
	while (st->head) {
		struct e2b_sandbox *sb = st->head;

		st->head = sb->next;
		e2b_sandbox_free(sb);
	}
	pthread_mutex_destroy(&st->lock);
	free(st);
}


static void unlink_sandbox(struct e2b_state *st, struct e2b_sandbox *sb)
{
	for (struct e2b_sandbox **p = &st->head; *p; p = &(*p)->next)
		if (*p == sb) {
			*p = sb->next;
			return;
		}
}

/* End the sandbox's session and free it (out of the table already). */
static void e2b_sandbox_end(struct api_server *srv, struct e2b_sandbox *sb)
{
	if (engine_session_close(&srv->reg, NULL, sb->entry))
		api_metrics_add(&srv->metrics, &srv->metrics.sessions_deleted);
	e2b_sandbox_free(sb);
}

static void e2b_sweep(struct api_server *srv, void *state)
{
	struct e2b_state *st = state;
	struct e2b_sandbox *dead = NULL;
	uint64_t now = epoch_ms();

	if (!st)
		return;
	pthread_mutex_lock(&st->lock);
	for (struct e2b_sandbox **p = &st->head; *p;) {
		struct e2b_sandbox *sb = *p;

		if (e2b_sandbox_alive(sb, now)) {
			p = &sb->next;
			continue;
		}
		*p = sb->next;
		sb->next = dead;
		dead = sb;
	}
	pthread_mutex_unlock(&st->lock);
	while (dead) {
		struct e2b_sandbox *sb = dead;

		dead = sb->next;
		e2b_sandbox_end(srv, sb);
	}
}

/* ---- which requests, which routes ---- */

static bool has_prefix(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

static bool e2b_claims(struct MHD_Connection *conn, const char *url)
{
	if (MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "E2b-Sandbox-Id"))
		return true;
	return !strcmp(url, "/sandboxes") || has_prefix(url, "/sandboxes/") ||
	       !strcmp(url, "/v2/sandboxes") || has_prefix(url, "/v2/sandboxes/");
}

/* "{id}" or "{id}/verb" after a control-plane prefix. */
static int route_sandbox(struct e2b_call *x, const char *method, const char *rest,
			 struct api_error *e)
{
	size_t n = strcspn(rest, "/");
	const char *verb = rest[n] ? rest + n + 1 : NULL;
	static const char *const unsupported[] = { "pause", "resume",  "snapshots",
						   "fork",  "network", "logs" };

	if (n != API_ID_LEN) {
		return api_error_set(e, 404, "not_found", "sandbox '%.*s' not found",
				     (int)(n > 64 ? 64 : n), rest);
	}
	memcpy(x->id, rest, API_ID_LEN);
	x->id[API_ID_LEN] = '\0';
	if (!api_session_id_valid(x->id))
		return api_error_set(e, 404, "not_found", "sandbox '%s' not found", x->id);
	if (!verb || !*verb) {
		if (!strcmp(method, "GET"))
			x->route = E2B_R_INFO;
		else if (!strcmp(method, "DELETE"))
			x->route = E2B_R_KILL;
		else
			return api_error_set(e, 405, "method_not_allowed", "%s is not allowed here",
					     method);
		return 0;
	}
	if (!strcmp(verb, "timeout"))
		x->route = E2B_R_TIMEOUT;
	else if (!strcmp(verb, "connect") || !strcmp(verb, "resume"))
		x->route = E2B_R_CONNECT;
	else if (!strcmp(verb, "refreshes"))
		x->route = E2B_R_REFRESH;
	else if (!strcmp(verb, "metrics"))
		x->route = E2B_R_METRICS;
	else {
		x->route = E2B_R_UNSUPPORTED;
		for (size_t i = 0; i < ARRAY_SIZE(unsupported); i++)
			if (!strcmp(verb, unsupported[i]))
				return 0;
		return api_error_set(e, 404, "not_found", "no such route: /sandboxes/{id}/%.64s",
				     verb);
	}
	if (x->route == E2B_R_METRICS ? strcmp(method, "GET") : strcmp(method, "POST"))
		return api_error_set(e, 405, "method_not_allowed", "%s is not allowed here",
				     method);
	return 0;
}

static int route_control(struct e2b_call *x, const char *method, const char *path,
			 struct api_error *e)
{
	if (has_prefix(path, "/v2/"))
		path += 3;
	if (!strcmp(path, "/sandboxes") || !strcmp(path, "/sandboxes/")) {
		if (!strcmp(method, "POST"))
			x->route = E2B_R_CREATE;
		else if (!strcmp(method, "GET"))
			x->route = E2B_R_LIST;
		else
			return api_error_set(e, 405, "method_not_allowed", "%s is not allowed here",
					     method);
		return 0;
	}
	return route_sandbox(x, method, path + strlen("/sandboxes/"), e);
}

static const struct {
	const char *path;
	enum e2b_route route;
} envd_rpcs[] = {
	{ "/filesystem.Filesystem/ListDir", E2B_R_FS_LISTDIR },
	{ "/filesystem.Filesystem/Stat", E2B_R_FS_STAT },
	{ "/filesystem.Filesystem/MakeDir", E2B_R_FS_MAKEDIR },
	{ "/filesystem.Filesystem/Move", E2B_R_FS_MOVE },
	{ "/filesystem.Filesystem/Remove", E2B_R_FS_REMOVE },
	{ "/process.Process/Start", E2B_R_PROC_START },
	{ "/process.Process/SendSignal", E2B_R_PROC_SIGNAL },
	{ "/process.Process/List", E2B_R_PROC_LIST },
	{ "/process.Process/Connect", E2B_R_PROC_CONNECT },
};

static int route_envd(struct api_call *c, struct e2b_call *x, const char *path, struct api_error *e)
{
	const char *m = c->method;

	if (!strcmp(path, "/health")) {
		x->route = E2B_R_HEALTH;
		return 0;
	}
	if (!strcmp(path, "/files")) {
		if (!strcmp(m, "GET") || !strcmp(m, "HEAD"))
			x->route = E2B_R_FILES_GET;
		else if (!strcmp(m, "POST"))
			x->route = E2B_R_FILES_POST;
		else
			return api_error_set(e, 405, "method_not_allowed", "%s is not allowed here",
					     m);
		return x->route == E2B_R_FILES_POST ? e2b_upload_start(c, e) : 0;
	}
	if (has_prefix(path, "/filesystem.Filesystem/") || has_prefix(path, "/process.Process/")) {
		x->connect = true;
		x->rpc = path + 1;
		x->route = E2B_R_RPC_UNIMPLEMENTED;
		for (size_t i = 0; i < ARRAY_SIZE(envd_rpcs); i++)
			if (!strcmp(path, envd_rpcs[i].path))
				x->route = envd_rpcs[i].route;
		if (strcmp(m, "POST") != 0)
			return api_error_set(e, 405, "method_not_allowed",
					     "Connect calls are POSTs");
		return 0;
	}
	return api_error_set(e, 404, "not_found", "no such route on envd: %.64s", path);
}

static int route_jupyter(struct api_call *c, struct e2b_call *x, const char *path,
			 struct api_error *e)
{
	const char *m = c->method;
	const char *rest;
	size_t n;

	if (!strcmp(path, "/health")) {
		x->route = E2B_R_HEALTH;
		return 0;
	}
	if (!strcmp(path, "/execute")) {
		x->route = E2B_R_EXECUTE;
		return strcmp(m, "POST")
			       ? api_error_set(e, 405, "method_not_allowed", "POST /execute")
			       : 0;
	}
	if (!strcmp(path, "/contexts")) {
		if (!strcmp(m, "GET"))
			x->route = E2B_R_CTX_LIST;
		else if (!strcmp(m, "POST"))
			x->route = E2B_R_CTX_CREATE;
		else
			return api_error_set(e, 405, "method_not_allowed", "%s is not allowed here",
					     m);
		return 0;
	}
	if (!has_prefix(path, "/contexts/"))
		return api_error_set(e, 404, "not_found",
				     "no such route on the code interpreter: %.64s", path);
	rest = path + strlen("/contexts/");
	n = strcspn(rest, "/");
	if (n == 0 || n > E2B_CTX_ID_LEN)
		return api_error_set(e, 404, "not_found", "context '%.64s' not found", rest);
	memcpy(x->ctx, rest, n);
	x->ctx[n] = '\0';
	if (!rest[n] && !strcmp(m, "DELETE"))
		x->route = E2B_R_CTX_DELETE;
	else if (!strcmp(rest + n, "/restart") && !strcmp(m, "POST"))
		x->route = E2B_R_CTX_RESTART;
	else
		return api_error_set(e, 404, "not_found",
				     "no such route on the code interpreter: %.64s", path);
	return 0;
}

enum { E2B_R_ALL = 1 }; /* the door's one route (http/door.h) */

static int e2b_start(struct api_call *c, const char *url, struct api_error *e)
{
	struct MHD_Connection *conn = c->conn;
	const char *id = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "E2b-Sandbox-Id");
	const char *port = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "E2b-Sandbox-Port");
	const char *tmo = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Connect-Timeout-Ms");
	struct e2b_call *x = calloc(1, sizeof(*x));
	char path[256];
	uint64_t v;

	c->door = &e2b_door;
	c->route.id = E2B_R_ALL; /* the door's one route, which routes by itself */
	if (!x)
		return api_error_set(e, 500, "internal", "out of memory");
	c->door_call = x;
	if (strcspn(url, "?") >= sizeof(path))
		return api_error_set(e, 414, "url_too_long", "the path is over %zu bytes",
				     sizeof(path) - 1);
	snprintf(path, sizeof(path), "%.*s", (int)strcspn(url, "?"), url);
	/* the most any door grants: a larger value would wrap the deadline
	 * arithmetic (now + timeout) into the past */
	if (tmo && parse_u64(tmo, &v) == 0)
		x->timeout_ms = v < E2B_COMMAND_TIMEOUT_MAX_MS ? v : E2B_COMMAND_TIMEOUT_MAX_MS;
	if (!id)
		return route_control(x, c->method, path, e);
	if (strlen(id) != API_ID_LEN || !api_session_id_valid(id))
		return api_error_set(
			e, 502, "sandbox_not_found",
			"the sandbox '%.64s' was not found: it was killed or its timeout ran out",
			id);
	memcpy(x->id, id, API_ID_LEN + 1);
	if (!port || parse_u64(port, &v) < 0 || (v != 49983 && v != 49999))
		return api_error_set(
			e, 400, "bad_port",
			"E2b-Sandbox-Port must be 49983 (envd) or 49999 (the code interpreter)");
	x->port = (int)v;
	return x->port == 49983 ? route_envd(c, x, path, e) : route_jupyter(c, x, path, e);
}

static size_t e2b_body_max(const struct api_call *c)
{
	switch (e2b_of(c)->route) {
	case E2B_R_EXECUTE:
		return API_BODY_MAX;
	case E2B_R_FILES_POST:
		/* the file and the multipart framing around it */
		return API_FILE_MAX + E2B_PART_HEAD_MAX + 2 * E2B_BOUNDARY_MAX;
	default:
		return E2B_JSON_MAX;
	}
}

static bool e2b_data(struct api_call *c, const char *data, size_t len)
{
	if (e2b_of(c)->route != E2B_R_FILES_POST)
		return false;
	e2b_upload_data(c, data, len);
	return true;
}

static void e2b_release(struct api_call *c)
{
	if (e2b_of(c))
		json_decref(e2b_of(c)->written);
	free(e2b_of(c));
	c->door_call = NULL;
}

/* ---- auth ---- */

/* "e2b_" and then the token itself (a token made of lowercase hex, as
 * `openssl rand -hex 32` makes), or the token's bytes in hex. */
static bool api_key_valid(const struct api_server *srv, const char *key)
{
	const char *t = srv->token;
	size_t tlen = srv->cfg.token_len, klen;
	unsigned char d = 0;

	if (!t || !key || strncmp(key, "e2b_", 4) != 0)
		return false;
	key += 4;
	klen = strlen(key);
	if (secret_equal(key, klen, t, tlen))
		return true;
	if (klen != 2 * tlen)
		return false;
	for (size_t i = 0; i < tlen; i++) {
		char hx[3];

		snprintf(hx, sizeof(hx), "%02x", (unsigned char)t[i]);
		d |= (unsigned char)((key[2 * i] | 0x20) ^ hx[0]) |
		     (unsigned char)((key[2 * i + 1] | 0x20) ^ hx[1]);
	}
	return d == 0;
}

/* The client whose key the SDK sent (E2B_API_KEY): a policy file's
 * client key as it is or after "e2b_" (E2B's keys begin so, and some
 * tools insist on it), compared by digest as /v1's Bearer keys are; or
 * the server's token (the default policy's).  NULL: none. */
static struct engine_client *key_client(struct api_server *srv, const char *key)
{
	struct engine_client *c;

	if (!key)
		return NULL;
	c = engine_policies_client(srv->policies, key, strlen(key));
	if (!c && !strncmp(key, "e2b_", 4))
		c = engine_policies_client(srv->policies, key + 4, strlen(key + 4));
	if (!c && api_key_valid(srv, key))
		c = &srv->policies->clients[0];
	return c;
}

static int e2b_auth(struct api_server *srv, struct MHD_Connection *conn,
		    struct engine_client **ret_client, struct api_error *e)
{
	const char *key = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-API-Key");
	const char *id = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "E2b-Sandbox-Id");
	const char *tokens[2] = {
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Access-Token"),
		MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "E2B-Traffic-Access-Token"),
	};
	struct engine_client *client = key_client(srv, key);

	if (client) {
		*ret_client = client;
		return 0;
	}
	if (!id)
		return api_error_set(
			e, 401, "unauthorized",
			key ? "the API key is wrong: it is one of the policy file's client keys, or 'e2b_' followed by the server's token (see 'Coming from E2B' in the README)"
			    : "this server needs an API key: set E2B_API_KEY to your client key (or 'e2b_' followed by the server's token)");
	/* a sandbox's own calls carry its access token instead, and are its
	 * maker's: the same client, the same policy */
	pthread_mutex_lock(&e2b_state_of(srv)->lock);
	{
		struct e2b_sandbox *sb = e2b_find(e2b_state_of(srv), id);

		for (size_t i = 0; sb && !client && i < ARRAY_SIZE(tokens); i++)
			if (tokens[i] && sb->access[0] &&
			    secret_equal(tokens[i], strlen(tokens[i]), sb->access,
					 strlen(sb->access)))
				client = sb->entry->client ? sb->entry->client
							   : &srv->policies->clients[0];
	}
	pthread_mutex_unlock(&e2b_state_of(srv)->lock);
	if (!client)
		return api_error_set(
			e, 401, "unauthorized",
			"the sandbox's access token (X-Access-Token) is missing or wrong");
	*ret_client = client;
	return 0;
}

/* runCode refused: the stream of an execution whose error is the
 * rejection, as a limit or a timeout is (exec.c), so the SDK's
 * execution.error names the rule (an HTTP error reaches the caller as
 * "403 Forbidden" and no more). */
static enum MHD_Result refuse_execution(struct api_call *c, const struct api_error *e)
{
	json_t *ev = json_pack("{s:s, s:s, s:s, s:s}", "type", "error", "name", "rejected", "value",
			       e->message, "traceback", "");
	char *line = ev ? json_dumps(ev, JSON_FLAGS) : NULL;
	char *body = NULL;
	int n;

	json_decref(ev);
	n = line ? asprintf(&body, "%s\n{\"type\":\"end_of_execution\"}\n", line) : -1;
	free(line);
	if (n < 0)
		return MHD_NO;
	return api_respond_owned(c, "application/x-ndjson", body, (size_t)n);
}

static enum MHD_Result e2b_refuse(struct api_call *c, const struct engine_verdict *v)
{
	struct api_error e = { .http = v->http ? v->http : 403, .code = "rejected" };
	struct e2b_call *x = e2b_of(c);

	snprintf(e.message, sizeof(e.message), "%s", v->message);
	if (x && x->answer_later) {
		/* a part of a multipart upload, refused while the body is
		 * read: files_post answers once it is */
		x->refusal = e;
		x->refused = true;
		return MHD_YES;
	}
	if (x && (x->route == E2B_R_PROC_START || x->route == E2B_R_PROC_CONNECT))
		return e2b_stream_error(c, &e);
	if (x && x->route == E2B_R_EXECUTE)
		return refuse_execution(c, &e);
	return e2b_respond_error(c, &e);
}

/* ---- the control plane ---- */

/* E2B's sandbox object; with secrets for create and connect. */
static json_t *sandbox_json(const struct e2b_sandbox *sb, bool secrets)
{
	char started[64], end[64];
	json_t *j;

	iso8601_ms(sb->started_ms, started, sizeof(started));
	iso8601_ms(sb->end_ms, end, sizeof(end));
	j = json_pack("{s:s, s:s, s:s, s:s, s:O, s:s, s:s, s:s, s:i, s:i, s:I, s:[]}", "sandboxID",
		      sb->id, "templateID", sb->template_id, "clientID", "codecell", "envdVersion",
		      E2B_ENVD_VERSION, "metadata", sb->metadata, "startedAt", started, "endAt",
		      end, "state", "running", "cpuCount", 1, "memoryMB",
		      (int)(sb->entry->limits.memory_bytes >> 20), "diskSizeMB",
		      (json_int_t)(sb->entry->limits.workspace_bytes >> 20), "volumeMounts");
	if (j && secrets && sb->access[0]) {
		json_object_set_new(j, "envdAccessToken", json_string(sb->access));
		json_object_set_new(j, "trafficAccessToken", json_string(sb->access));
	}
	return j;
}

/* "timeout": whole seconds, 0 < t <= E2B_TIMEOUT_MAX_S. */
static int get_timeout(json_t *body, uint64_t *ret_s, struct api_error *e)
{
	json_t *t = json_object_get(body, "timeout");

	if (!t || json_is_null(t))
		return 0;
	if (!json_is_integer(t) || json_integer_value(t) < 0 ||
	    json_integer_value(t) > E2B_TIMEOUT_MAX_S)
		return api_error_set(e, 400, "invalid_value",
				     "'timeout' must be whole seconds from 0 to %d",
				     E2B_TIMEOUT_MAX_S);
	*ret_s = (uint64_t)json_integer_value(t);
	return 0;
}

/* envVars: an object of strings with names of letters, digits and '_';
 * into env[] as "KEY=VALUE" (freed by the caller). */
static int get_env(json_t *body, char **env, size_t max, size_t *ret_n, struct api_error *e)
{
	json_t *o = json_object_get(body, "envVars"), *v;
	const char *k;

	*ret_n = 0;
	if (!o || json_is_null(o))
		return 0;
	if (!json_is_object(o))
		return api_error_set(e, 400, "invalid_type",
				     "'envVars' must be an object of strings");
	if (json_object_size(o) > max)
		return api_error_set(e, 400, "invalid_value", "'envVars' has over %zu variables",
				     max);
	json_object_foreach (o, k, v) {
		size_t kl = strlen(k);

		if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v) ||
		    json_string_length(v) > API_ENV_VALUE_MAX)
			return api_error_set(
				e, 400, "invalid_value",
				"envVars '%.64s' must be a string without NUL of at most %u bytes",
				k, API_ENV_VALUE_MAX);
		if (env_name_check(k, kl, ENV_NAME_IDENTIFIER) < 0)
			return api_error_set(
				e, 400, "invalid_value",
				"envVars: '%.64s' is not a variable name (letters, digits and '_')",
				k);
		if (asprintf(&env[*ret_n], "%s=%s", k, json_string_value(v)) < 0)
			return api_error_set(e, 500, "internal", "out of memory");
		(*ret_n)++;
	}
	return 0;
}

static int get_metadata(json_t *body, json_t **ret, struct api_error *e)
{
	json_t *o = json_object_get(body, "metadata"), *v;
	const char *k;

	*ret = json_object();
	if (!o || json_is_null(o))
		return 0;
	if (!json_is_object(o) || json_object_size(o) > E2B_METADATA_MAX)
		return api_error_set(e, 400, "invalid_value",
				     "'metadata' must be an object of at most %d strings",
				     E2B_METADATA_MAX);
	json_object_foreach (o, k, v) {
		if (!json_is_string(v) || json_string_length(v) > E2B_METADATA_VALUE_MAX ||
		    strlen(k) > 256)
			return api_error_set(
				e, 400, "invalid_value",
				"metadata '%.64s' must be a string of at most %d bytes", k,
				E2B_METADATA_VALUE_MAX);
		json_object_set(*ret, k, v);
	}
	return 0;
}

/* Templates: both are a Python kernel with the server's preload (and
 * its warm pool); "base" is what the plain `e2b` SDK asks for. */
static bool template_known(const char *t)
{
	return !strcmp(t, "code-interpreter-v1") || !strcmp(t, "code-interpreter") ||
	       !strcmp(t, "base");
}

/* -ECANCELED: the engine refused the sandbox (the policy) or could not
 * start it, and *refused holds the answer already given (in E2B's
 * shape). */
static int make_sandbox(struct api_call *c, json_t *body, struct e2b_sandbox **ret,
			struct api_error *e, enum MHD_Result *refused)
{
	struct api_server *srv = c->srv;
	json_t *tpl = json_object_get(body, "templateID");
	const char *template_id =
		json_is_string(tpl) ? json_string_value(tpl) : "code-interpreter-v1";
	char *env[SESSION_MAX_ENV + 1] = { 0 };
	uint64_t timeout_s = E2B_TIMEOUT_DEFAULT_S;
	struct e2b_sandbox *sb = NULL;
	size_t n_env = 0;
	json_t *meta = NULL;
	int r;

	if (tpl && !json_is_string(tpl) && !json_is_null(tpl))
		return api_error_set(e, 400, "invalid_type", "'templateID' must be a string");
	if (!template_known(template_id))
		return api_error_set(
			e, 404, "template_not_found",
			"template '%.64s' not found: codecell serves 'code-interpreter-v1' and 'base'",
			template_id);
	r = get_timeout(body, &timeout_s, e);
	if (r == 0)
		r = get_env(body, env, SESSION_MAX_ENV, &n_env, e);
	if (r == 0)
		r = get_metadata(body, &meta, e);
	if (r == 0 && !(sb = calloc(1, sizeof(*sb))))
		r = api_error_set(e, 500, "internal", "out of memory");
	/* with keys to check, the sandbox's own calls carry a token of
	 * its own, which says whose sandbox it is (e2b_auth) */
	if (r == 0 && (srv->token || engine_policies_has_clients(srv->policies)) &&
	    random_hex(sb->access, API_ID_LEN / 2) < 0)
		r = api_error_set(e, 500, "internal", "no random bytes for the access token");
	if (r == 0) {
		struct engine_session_spec spec = { 0 };
		struct engine_session_error err;
		struct engine_caller cl;
		uint64_t t0;

		engine_session_opts_init(&spec.so);
		spec.so.preload = srv->preload;
		spec.so.pool = srv->pool;
		spec.so.env = n_env ? (const char *const *)env : NULL;
		/* a cell runs until the sandbox's end; its client's timeout
		 * (runCode's timeoutMs) ends it sooner by going away */
		spec.so.limits.timeout_s = engine_limits[LIMIT_TIMEOUT].ceiling;
		spec.so.idle_timeout_s = 0; /* the sandbox's timeout ends it (e2b_sweep) */
		spec.door = "e2b";
		/* the same pipeline as POST /v1/sessions: the SDK asks for no
		 * limit, so ceilings lower the defaults; the client's session
		 * slot goes back with the entry */
		api_caller(c, &cl);
		t0 = now_ns();
		r = engine_session_new(&srv->reg, &cl, &spec, &sb->entry, &err);
		if (err.start_failed)
			api_metrics_add(&srv->metrics, &srv->metrics.session_failures);
		if (r == -EBUSY) {
			r = api_error_set(
				e, 429, "too_many_sessions",
				"%u sandboxes and sessions are open, the most this server allows (--max-sessions): kill one first",
				srv->cfg.max_sessions);
		} else if (r < 0) {
			*refused = api_session_refused(c, &cl, r, &err);
			r = -ECANCELED;
		} else {
			api_metrics_session_op(&srv->metrics, API_OP_CREATE, t0);
			api_metrics_add(&srv->metrics, &srv->metrics.sessions_created);
		}
	}
	for (size_t i = 0; i < n_env; i++)
		free(env[i]);
	if (r < 0) {
		json_decref(meta);
		free(sb);
		return r;
	}
	memcpy(sb->id, sb->entry->id, sizeof(sb->id));
	snprintf(sb->template_id, sizeof(sb->template_id), "%s", template_id);
	sb->metadata = meta;
	sb->started_ms = epoch_ms();
	sb->end_ms = sb->started_ms + timeout_s * 1000;
	snprintf(sb->ctx[0].id, sizeof(sb->ctx[0].id), "default-python");
	sb->ctx[0].lang = E2B_PYTHON;
	sb->ctx[0].main = true;
	snprintf(sb->ctx[0].cwd, sizeof(sb->ctx[0].cwd), "%s", SANDBOX_HOME);
	sb->n_ctx = 1;
	*ret = sb;
	return 0;
}

static enum MHD_Result handle_create(struct api_call *c)
{
	struct e2b_state *st = e2b_state_of(c->srv);
	struct e2b_sandbox *sb = NULL;
	struct api_error e;
	enum MHD_Result refused = MHD_NO;
	json_t *body = e2b_body(c, &e), *j;
	int r = body ? make_sandbox(c, body, &sb, &e, &refused) : -EINVAL;

	if (r < 0) {
		json_decref(body);
		return r == -ECANCELED ? refused : api_respond_error(c, &e);
	}
	json_decref(body);
	pthread_mutex_lock(&st->lock);
	sb->next = st->head;
	st->head = sb;
	j = sandbox_json(sb, true);
	pthread_mutex_unlock(&st->lock);
	return api_respond_json(c, 201, j);
}

static enum MHD_Result handle_list(struct api_call *c)
{
	struct e2b_state *st = e2b_state_of(c->srv);
	char meta[2048];
	struct api_error e;
	json_t *arr = json_array();
	int has_meta = e2b_query(c, "metadata", meta, sizeof(meta), &e);

	if (has_meta < 0) {
		json_decref(arr);
		return api_respond_error(c, &e);
	}
	pthread_mutex_lock(&st->lock);
	for (struct e2b_sandbox *sb = st->head; sb; sb = sb->next)
		if (e2b_sandbox_alive(sb, epoch_ms()) && api_sees(c, sb->entry) &&
		    (!has_meta || e2b_metadata_matches(sb->metadata, meta)))
			json_array_append_new(arr, sandbox_json(sb, false));
	pthread_mutex_unlock(&st->lock);
	return api_respond_json(c, 200, arr);
}

static enum MHD_Result not_found(struct api_call *c)
{
	return api_respond_errorf(c, 404, "not_found",
				  "sandbox '%s' not found: it was killed or its timeout ran out",
				  e2b_of(c)->id);
}

static enum MHD_Result handle_kill(struct api_call *c)
{
	struct e2b_state *st = e2b_state_of(c->srv);
	struct e2b_sandbox *sb;

	pthread_mutex_lock(&st->lock);
	sb = e2b_find_seen(c, e2b_of(c)->id);
	if (sb)
		unlink_sandbox(st, sb);
	pthread_mutex_unlock(&st->lock);
	if (!sb)
		return not_found(c);
	e2b_sandbox_end(c->srv, sb);
	return e2b_respond_empty(c, 204);
}

/* info (GET), timeout (POST {timeout}), connect (POST {timeout?}) and
 * refreshes: the sandbox object, or nothing. */
static enum MHD_Result handle_sandbox(struct api_call *c)
{
	struct e2b_state *st = e2b_state_of(c->srv);
	enum e2b_route route = e2b_of(c)->route;
	uint64_t timeout_s = 0;
	struct e2b_sandbox *sb;
	struct api_error e;
	json_t *body = NULL, *j = NULL;

	if (route != E2B_R_INFO && route != E2B_R_METRICS) {
		body = e2b_body(c, &e);
		if (!body || get_timeout(body, &timeout_s, &e) < 0) {
			json_decref(body);
			return api_respond_error(c, &e);
		}
		json_decref(body);
	}
	pthread_mutex_lock(&st->lock);
	sb = e2b_find_seen(c, e2b_of(c)->id);
	if (sb && timeout_s && (route == E2B_R_TIMEOUT || route == E2B_R_CONNECT))
		/* E2B: set-timeout sets the end from now; connect only
		 * extends it */
		if (route == E2B_R_TIMEOUT || epoch_ms() + timeout_s * 1000 > sb->end_ms)
			sb->end_ms = epoch_ms() + timeout_s * 1000;
	if (sb && (route == E2B_R_INFO || route == E2B_R_CONNECT))
		j = sandbox_json(sb, route == E2B_R_CONNECT);
	pthread_mutex_unlock(&st->lock);
	if (!sb)
		return not_found(c);
	if (route == E2B_R_METRICS)
		return api_respond_json(c, 200, json_array());
	if (j)
		return api_respond_json(c, route == E2B_R_CONNECT ? 201 : 200, j);
	return e2b_respond_empty(c, 204);
}

static enum MHD_Result handle_health(struct api_call *c)
{
	enum MHD_Result ret;
	struct engine_session *e = e2b_sandbox_session(c, &ret);

	if (!e)
		return ret;
	engine_session_unref(e);
	if (e2b_of(c)->port == 49983)
		return e2b_respond_empty(c, 204);
	return api_respond_json(c, 200, json_pack("{s:s}", "status", "ok"));
}

static enum MHD_Result e2b_handle(struct api_call *c)
{
	switch (e2b_of(c)->route) {
	case E2B_R_CREATE:
		return handle_create(c);
	case E2B_R_LIST:
		return handle_list(c);
	case E2B_R_KILL:
		return handle_kill(c);
	case E2B_R_INFO:
	case E2B_R_TIMEOUT:
	case E2B_R_CONNECT:
	case E2B_R_REFRESH:
	case E2B_R_METRICS:
		return handle_sandbox(c);
	case E2B_R_UNSUPPORTED:
		return api_respond_errorf(
			c, 400, "not_supported",
			"codecell does not pause, snapshot or fork E2B sandboxes (see 'Coming from E2B' in the README)");
	case E2B_R_HEALTH:
		return handle_health(c);
	case E2B_R_EXECUTE:
		return e2b_handle_execute(c);
	case E2B_R_CTX_LIST:
	case E2B_R_CTX_CREATE:
	case E2B_R_CTX_DELETE:
	case E2B_R_CTX_RESTART:
		return e2b_handle_contexts(c);
	case E2B_R_FILES_GET:
	case E2B_R_FILES_POST:
		return e2b_handle_files(c);
	case E2B_R_FS_LISTDIR:
	case E2B_R_FS_STAT:
	case E2B_R_FS_MAKEDIR:
	case E2B_R_FS_MOVE:
	case E2B_R_FS_REMOVE:
		return e2b_handle_fs(c);
	case E2B_R_PROC_START:
	case E2B_R_PROC_SIGNAL:
	case E2B_R_PROC_LIST:
	case E2B_R_PROC_CONNECT:
		return e2b_handle_process(c);
	case E2B_R_RPC_UNIMPLEMENTED:
	default:
		return api_respond_errorf(c, 501, "unimplemented",
					  "%s is not implemented by codecell",
					  e2b_of(c)->rpc ? e2b_of(c)->rpc : "this call");
	}
}

/* ---- the door ---- */

/* One route: the door routes by itself (e2b_start), has its own auth and
 * body limits, and reads forms of any type. */
static const struct http_route routes[] = {
	{ E2B_R_ALL, HTTP_GET | HTTP_HEAD | HTTP_POST | HTTP_PUT | HTTP_DELETE, e2b_handle, false,
	  API_BODY_MAX, true, e2b_data, e2b_body_max },
};

const struct http_door e2b_door = {
	.name = "e2b",
	.routes = routes,
	.n_routes = ARRAY_SIZE(routes),
	.claims = e2b_claims,
	.start = e2b_start,
	.auth = e2b_auth,
	.release = e2b_release,
	.respond_error = e2b_respond_error,
	.refuse = e2b_refuse,
	.stream = &e2b_stream_shape,
	.no_pending = true,
	.lang_per_call = true,
	.init = e2b_init,
	.tick = e2b_sweep,
	.free = e2b_free,
};
