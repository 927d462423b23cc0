/* The keys of a policy file's sections: [default] and [policy NAME],
 * [database NAME], [host NAME], [client NAME]; each key's value checked
 * and set, with a message that says what was expected
 * (engine/policy_parse.h). */
#include "engine/policy_parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/macro.h"
#include "util/netguard.h"
#include "util/parse.h"
#include "util/banned.h"

static int parse_bool(const char *v, bool *ret)
{
	static const char *const yes[] = { "on", "true", "yes", "1" }, *const no[] = { "off", "false", "no", "0" };

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (!strcmp(v, yes[i]))
			return *ret = true, 0;
		if (!strcmp(v, no[i]))
			return *ret = false, 0;
	}
	return -EINVAL;
}

static const char *const database_keys[] = { "driver",	"connection", "writes",
					     "timeout",	"max_rows",   "max_bytes",
					     "max_connections", "superuser" };

/* The connection string is never quoted back: it may hold a password. */
int database_key(struct parser *p, const char *key, const char *v)
{
	struct engine_database *db = p->db;
	size_t k;

	for (k = 0; k < ARRAY_SIZE(database_keys); k++)
		if (!strcmp(key, database_keys[k]))
			break;
	if (k == ARRAY_SIZE(database_keys))
		return fail(p, "unknown key '%.64s' in a database (known: driver, connection, writes, "
			       "timeout, max_rows, max_bytes, max_connections, superuser)", key);
	if (p->seen & (1u << k))
		return fail(p, "'%s' is set twice in this section", key);
	p->seen |= 1u << k;
	switch (k) {
	case 0:
		if (!strcmp(v, "postgresql") || !strcmp(v, "postgres"))
			db->driver = DB_POSTGRESQL;
		else if (!strcmp(v, "sqlite"))
			db->driver = DB_SQLITE;
		else
			return fail(p, "driver: expected postgresql or sqlite, not '%.64s'", v);
		return 0;
	case 1:
		if (!*v || strlen(v) > POLICY_CONNINFO_MAX)
			return fail(p, "connection: expected a connection string of 1 to %d bytes",
				    POLICY_CONNINFO_MAX);
		db->conninfo = strdup(v);
		return db->conninfo ? 0 : fail(p, "out of memory");
	case 2:
		if (parse_bool(v, &db->writes) < 0)
			return fail(p, "writes: expected on or off, not '%.64s'", v);
		return 0;
	case 3:
		if (parse_duration(v, &db->timeout_s) < 0 || !(db->timeout_s > 0) ||
		    db->timeout_s > DB_TIMEOUT_MAX_S)
			return fail(p, "timeout: expected a duration above 0 and up to 1h such as 30s, "
				       "not '%.64s'", v);
		return 0;
	case 4:
		if (parse_u64(v, &db->max_rows) < 0 || db->max_rows < 1 || db->max_rows > DB_MAX_ROWS_MAX)
			return fail(p, "max_rows: expected a whole number from 1 to %u, not '%.64s'",
				    DB_MAX_ROWS_MAX, v);
		return 0;
	case 5:
		if (parse_size(v, &db->max_bytes) < 0 || db->max_bytes < 1024 ||
		    db->max_bytes > DB_MAX_BYTES_MAX)
			return fail(p, "max_bytes: expected a size from 1K to 64M such as 1M, not '%.64s'", v);
		return 0;
	case 6: {
		uint64_t m;

		if (parse_u64(v, &m) < 0 || m < 1 || m > DB_CONNECTIONS_MAX)
			return fail(p, "max_connections: expected a whole number from 1 to %d, not '%.64s'",
				    DB_CONNECTIONS_MAX, v);
		db->max_connections = (unsigned)m;
		return 0;
	}
	default:
		if (parse_bool(v, &db->superuser) < 0)
			return fail(p, "superuser: expected on or off, not '%.64s'", v);
		return 0;
	}
}

/* "Name: value": a token, then a value without control characters (the
 * value is a secret: it is not quoted back in a message). */
static bool header_ok(const char *v)
{
	size_t n = strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-.^_`|~");

	if (!n || v[n] != ':')
		return false;
	for (v += n + 1; *v == ' '; v++)
		;
	if (!*v)
		return false;
	for (; *v; v++)
		if (((unsigned char)*v < 0x20 && *v != '\t') || *v == 0x7f)
			return false;
	return true;
}

int host_key(struct parser *p, const char *key, const char *v)
{
	struct engine_host *h = p->host;

	if (strcmp(key, "header"))
		return fail(p, "unknown key '%.64s' in a host (known: header)", key);
	if (!header_ok(v))
		return fail(p, "header: expected 'Name: value' (the value is not shown here)");
	if (h->n_headers >= POLICY_HOST_HEADERS)
		return fail(p, "too many headers for host '%s': at most %d", h->name, POLICY_HOST_HEADERS);
	if (!(h->headers[h->n_headers] = strdup(v)))
		return fail(p, "out of memory");
	h->n_headers++;
	return 0;
}

static int http_key(struct parser *p, const char *key, const char *v)
{
	struct engine_policy *pol = p->pol;
	char msg[256];

	if (!strcmp(key, "http.hosts")) {
		if (pol->http_hosts.n)
			return fail(p, "'%s' is set twice in this section", key);
		if (netguard_list_parse(v, &pol->http_hosts, msg, sizeof(msg)) < 0)
			return fail(p, "http.hosts: %s", msg);
		return 0;
	}
	if (!strcmp(key, "http.max_response")) {
		if (parse_size(v, &pol->http_max_response) < 0 || pol->http_max_response < 1 ||
		    pol->http_max_response > HTTP_RESPONSE_MAX)
			return fail(p, "http.max_response: expected a size from 1 to %uM such as 1M, not "
				       "'%.64s'", HTTP_RESPONSE_MAX >> 20, v);
		return 0;
	}
	return fail(p, "unknown key '%.64s' (known: http.hosts, http.max_response)", key);
}

static int add_lang(struct parser *p, const char *w)
{
	enum engine_lang l;

	if (engine_lang_parse(w, &l) < 0)
		return fail(p, "languages: unknown language '%.64s' (known: %s)", w, engine_lang_list());
	p->pol->languages[l] = true;
	return 0;
}

static int add_approval(struct parser *p, const char *w)
{
	if (!strcmp(w, "none"))
		return 0;
	/* egress: the list decides each connection, nobody is asked */
	for (int a = 0; a < _ACTION_MAX; a++)
		if (a != ACTION_EGRESS && !strcmp(w, engine_action_name(a))) {
			p->pol->approval |= 1u << a;
			return 0;
		}
	return fail(p, "approval: unknown action '%.64s' (known: run, session_create, session_exec, "
		       "session_close, session_interrupt, session_restart, session_fork, read_file, "
		       "write_file, delete_file, network, sql, http, apply; or none)", w);
}

/* tools = sql, http: the tools' actions (engine/tool.h) */
static int add_tool(struct parser *p, const char *w)
{
	static const enum engine_action tools[] = { ACTION_SQL, ACTION_HTTP };

	if (!strcmp(w, "none"))
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(tools); i++)
		if (!strcmp(w, engine_action_name(tools[i]))) {
			p->pol->tools |= 1u << tools[i];
			return 0;
		}
	return fail(p, "tools: unknown tool '%.64s' (known: sql, http; or none)", w);
}

/* projects = DIR, ...: where a server's client may open a project */
static int add_project(struct parser *p, const char *w)
{
	size_t len = strlen(w);

	if (!strcmp(w, "none"))
		return 0;
	if (w[0] != '/' || strstr(w, "/../") || (len >= 3 && !strcmp(w + len - 3, "/..")))
		return fail(p, "projects: '%.64s' is not an absolute path without '..'", w);
	if (len >= POLICY_PROJECT_MAX)
		return fail(p, "projects: '%.64s...' is longer than %d bytes", w, POLICY_PROJECT_MAX - 1);
	if (p->pol->n_projects >= POLICY_MAX_PROJECTS)
		return fail(p, "projects: at most %d directories", POLICY_MAX_PROJECTS);
	snprintf(p->pol->projects[p->pol->n_projects++], POLICY_PROJECT_MAX, "%s", w);
	return 0;
}

/* "10", "10/s", "600/m", "3600/h": calls per second. */
static int parse_rate(const char *v, double *ret)
{
	static const struct {
		const char *suffix;
		double per;
	} units[] = { { "", 1 }, { "/s", 1 }, { "/m", 60 }, { "/h", 3600 } };
	char *end;
	double d;

	if (!isdigit((unsigned char)*v))
		return -EINVAL;
	d = strtod(v, &end);
	for (size_t i = 0; i < ARRAY_SIZE(units); i++)
		if (!strcmp(end, units[i].suffix) && isfinite(d) && d <= 1e6) {
			*ret = d / units[i].per;
			return 0;
		}
	return -EINVAL;
}

static int count(struct parser *p, const char *key, const char *v, uint64_t max, unsigned *ret)
{
	uint64_t x;

	if (parse_u64(v, &x) < 0 || x > max)
		return fail(p, "%s: expected a whole number from 0 to %llu (0: no cap), not '%.64s'", key,
			    (unsigned long long)max, v);
	*ret = (unsigned)x;
	return 0;
}

static const char *const policy_keys[] = { "languages", "network", "approval", "max_file",
					   "max_sessions", "max_executions", "rate", "burst",
					   "approval_timeout", "tools", "sql.databases",
					   "sql.workspace", "sql.writes", "projects" };

/* The tools' keys (policy_keys from index 9). */
static int tool_key(struct parser *p, size_t k, const char *key, char *v)
{
	struct engine_policy *pol = p->pol;
	size_t i = pol == &p->ps->def ? 0 : (size_t)(pol - p->ps->named) + 1;

	switch (k) {
	case 9:
		pol->tools = 0;
		return each_word(p, v, key, add_tool);
	case 10:
		/* names resolved at the end: a [database] may come later */
		if (!*v)
			return fail(p, "'%s' has no value (none: no named databases)", key);
		free(p->pol_dbs[i]);
		p->pol_dbs[i] = strdup(v);
		p->pol_dbs_line[i] = p->line;
		return p->pol_dbs[i] ? 0 : fail(p, "out of memory");
	case 11:
		if (parse_bool(v, &pol->sql_workspace) < 0)
			return fail(p, "sql.workspace: expected on or off, not '%.64s'", v);
		return 0;
	default:
		if (parse_bool(v, &pol->sql_writes) < 0)
			return fail(p, "sql.writes: expected on or off, not '%.64s'", v);
		return 0;
	}
}

/* egress = host, host:port, *.example.com, ...: the allowlist network's
 * hosts, checked here and kept as text (the sandbox's proxy parses it) */
static int egress_key(struct parser *p, const char *v)
{
	struct netguard_list l;
	char msg[256];

	if (p->pol->egress[0])
		return fail(p, "'egress' is set twice in this section");
	if (!*v)
		return fail(p, "'egress' has no value: list hosts such as pypi.org, *.example.com:443");
	if (netguard_list_parse(v, &l, msg, sizeof(msg)) < 0)
		return fail(p, "egress: %s", msg);
	netguard_list_release(&l);
	snprintf(p->pol->egress, sizeof(p->pol->egress), "%s", v);
	return 0;
}

int policy_key(struct parser *p, const char *key, char *v)
{
	struct engine_policy *pol = p->pol;
	char msg[300];
	size_t k;

	if (!strncmp(key, "http.", 5))
		return http_key(p, key, v);
	if (!strncmp(key, "limit.", 6)) {
		const struct engine_limit *l = engine_limit_find(key + 6);

		if (!l || key[6] == '-')
			return fail(p, "unknown limit '%.64s' (known: %s)", key, engine_limit_names());
		if (engine_limit_parse((enum engine_limit_id)(l - engine_limits), key, v,
				       &pol->ceiling[l - engine_limits], msg, sizeof(msg)) < 0)
			return fail(p, "%s", msg);
		return 0;
	}
	if (!strcmp(key, "egress"))
		return egress_key(p, v);
	for (k = 0; k < ARRAY_SIZE(policy_keys); k++)
		if (!strcmp(key, policy_keys[k]))
			break;
	if (k == ARRAY_SIZE(policy_keys))
		return fail(p, "unknown key '%.64s' in a policy (known: languages, network, approval, "
			       "max_file, max_sessions, max_executions, rate, burst, approval_timeout, "
			       "tools, sql.databases, sql.workspace, sql.writes, http.hosts, "
			       "http.max_response, egress, projects, limit.NAME)", key);
	if (p->seen & (1u << k))
		return fail(p, "'%s' is set twice in this section", key);
	p->seen |= 1u << k;
	if (k >= 9 && k <= 12)
		return tool_key(p, k, key, v);
	switch (k) {
	case 0:
		memset(pol->languages, 0, sizeof(pol->languages));
		return each_word(p, v, key, add_lang);
	case 1:
		if (parse_bool(v, &pol->network) < 0)
			return fail(p, "network: expected on or off, not '%.64s'", v);
		return 0;
	case 2:
		pol->approval = 0;
		return each_word(p, v, key, add_approval);
	case 3:
		if (parse_size(v, &pol->max_file) < 0 || pol->max_file > (4ull << 30))
			return fail(p, "max_file: expected a size up to 4G such as 16M, not '%.64s'", v);
		return 0;
	case 4:
		return count(p, key, v, 100000, &pol->max_sessions);
	case 5:
		return count(p, key, v, 100000, &pol->max_executions);
	case 6:
		if (parse_rate(v, &pol->rate) < 0)
			return fail(p, "rate: expected calls per second, minute or hour such as 10, 10/s, "
				       "600/m (0: no limit), not '%.64s'", v);
		return 0;
	case 8:
		if (parse_duration(v, &pol->approval_timeout_s) < 0 || pol->approval_timeout_s > 86400)
			return fail(p, "approval_timeout: expected a duration up to 24h such as 5m, not '%.64s'", v);
		return 0;
	case 13:
		pol->n_projects = 0;
		return each_word(p, v, key, add_project);
	default: {
		unsigned b = 0;

		if (count(p, key, v, 1000000, &b) < 0)
			return -EINVAL;
		pol->burst = b;
		return 0;
	}
	}
}

static int hex_digest(const char *v, unsigned char *out)
{
	for (int i = 0; i < SHA256_LEN; i++) {
		unsigned x;

		if (!isxdigit((unsigned char)v[2 * i]) || !isxdigit((unsigned char)v[2 * i + 1]))
			return -EINVAL;
		if (sscanf(v + 2 * i, "%2x", &x) != 1)
			return -EINVAL;
		out[i] = (unsigned char)x;
	}
	return v[2 * SHA256_LEN] ? -EINVAL : 0;
}

int client_key(struct parser *p, const char *key, const char *v)
{
	size_t i = (size_t)(p->client - p->ps->clients);

	if (!strcmp(key, "key_sha256")) {
		if (p->client->has_key)
			return fail(p, "'key_sha256' is set twice in this section");
		if (hex_digest(v, p->client->key) < 0)
			return fail(p, "key_sha256: expected 64 hex digits (printf %%s KEY | sha256sum)");
		p->client->has_key = true;
		return 0;
	}
	if (!strcmp(key, "policy")) {
		if (p->client_policy[i])
			return fail(p, "'policy' is set twice in this section");
		p->client_policy[i] = strdup(v);
		return p->client_policy[i] ? 0 : fail(p, "out of memory");
	}
	return fail(p, "unknown key '%.64s' in a client (known: key_sha256, policy)", key);
}
