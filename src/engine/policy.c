/* The policy file's parser and the one policy check (engine_check). */
#include "engine/policy.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/macro.h"
#include "util/netguard.h"
#include "util/parse.h"
#include "util/timeutil.h"
#include "util/banned.h"

static const char *const action_names[_ACTION_MAX] = {
	[ACTION_RUN] = "run",
	[ACTION_SESSION_CREATE] = "session_create",
	[ACTION_SESSION_EXEC] = "session_exec",
	[ACTION_SESSION_CLOSE] = "session_close",
	[ACTION_READ_FILE] = "read_file",
	[ACTION_WRITE_FILE] = "write_file",
	[ACTION_DELETE_FILE] = "delete_file",
	[ACTION_NETWORK] = "network",
	[ACTION_SESSION_INTERRUPT] = "session_interrupt",
	[ACTION_SESSION_RESTART] = "session_restart",
	[ACTION_SESSION_FORK] = "session_fork",
	[ACTION_SQL] = "sql",
	[ACTION_HTTP] = "http",
	[ACTION_APPLY] = "apply",
	[ACTION_EGRESS] = "egress",
};

const char *engine_action_name(enum engine_action a)
{
	return a < _ACTION_MAX ? action_names[a] : "unknown";
}

const char *engine_door_name(enum engine_door d)
{
	static const char *const n[_DOOR_MAX] = { "cli", "api", "mcp" };

	return d < _DOOR_MAX ? n[d] : "unknown";
}

void engine_policy_default(struct engine_policy *p)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "default");
	for (int l = 0; l < _LANG_MAX; l++)
		p->languages[l] = true;
	for (int i = 0; i < _LIMIT_MAX; i++)
		p->ceiling[i] = engine_limits[i].ceiling;
	/* loopback only: the sandbox's own network namespace with lo up;
	 * there is no route out of it */
	p->network = true;
	p->max_file = 64u << 20;
	p->approval_timeout_s = 300;
	/* no tools (tools = sql enables it); with sql, a session's own
	 * SQLite files, read-only */
	p->sql_workspace = true;
	p->http_max_response = 1u << 20;
}

/* ---- the parser ---- */

struct parser {
	struct engine_policies *ps;
	struct engine_policy *pol; /* the section's, or NULL */
	struct engine_client *client;
	struct engine_database *db;
	/* sql.databases of [default] (0) and of each [policy] (1 + i), and
	 * the line each was on: resolved once every section is read */
	char *pol_dbs[POLICY_MAX_POLICIES + 1];
	int pol_dbs_line[POLICY_MAX_POLICIES + 1];
	struct engine_host *host;  /* a [host NAME] section's */
	unsigned seen;		   /* keys set in this section (bits) */
	char *client_policy[POLICY_MAX_CLIENTS + 1];
	int line;
	char *err;
	size_t n;
};

static int fail(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct parser *p, const char *fmt, ...)
{
	int k = snprintf(p->err, p->n, "line %d: ", p->line);
	va_list ap;

	if (k < 0 || (size_t)k >= p->n)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(p->err + k, p->n - (size_t)k, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static bool name_ok(const char *s)
{
	size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-");

	return n > 0 && n < POLICY_NAME_MAX && !s[n];
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

/* ---- [database NAME] ---- */

static int parse_bool(const char *v, bool *ret);
static int each_word(struct parser *p, char *v, const char *key,
		     int (*fn)(struct parser *p, const char *word));

const char *engine_db_driver_name(enum engine_db_driver d)
{
	return d == DB_SQLITE ? "sqlite" : "postgresql";
}

void engine_database_workspace(const struct engine_policy *p, struct engine_database *ret)
{
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->name, sizeof(ret->name), "workspace");
	ret->driver = DB_SQLITE;
	ret->writes = p->sql_writes;
	ret->timeout_s = DB_TIMEOUT_DEFAULT_S;
	ret->max_rows = DB_MAX_ROWS_DEFAULT;
	ret->max_bytes = DB_MAX_BYTES_DEFAULT;
	ret->max_connections = DB_CONNECTIONS_DEFAULT;
}

static int database_section(struct parser *p, const char *name)
{
	struct engine_database *nd;

	for (size_t i = 0; i < p->ps->n_databases; i++)
		if (!strcmp(p->ps->databases[i].name, name))
			return fail(p, "database '%s' is given twice", name);
	if (p->ps->n_databases >= POLICY_MAX_DATABASES)
		return fail(p, "too many databases: at most %d", POLICY_MAX_DATABASES);
	nd = realloc(p->ps->databases, (p->ps->n_databases + 1) * sizeof(*nd));
	if (!nd)
		return fail(p, "out of memory");
	p->ps->databases = nd;
	p->db = &nd[p->ps->n_databases++];
	memset(p->db, 0, sizeof(*p->db));
	snprintf(p->db->name, sizeof(p->db->name), "%s", name);
	p->db->timeout_s = DB_TIMEOUT_DEFAULT_S;
	p->db->max_rows = DB_MAX_ROWS_DEFAULT;
	p->db->max_bytes = DB_MAX_BYTES_DEFAULT;
	p->db->max_connections = DB_CONNECTIONS_DEFAULT;
	return 0;
}

static const char *const database_keys[] = { "driver",	"connection", "writes",
					     "timeout",	"max_rows",   "max_bytes",
					     "max_connections", "superuser" };

/* The connection string is never quoted back: it may hold a password. */
static int database_key(struct parser *p, const char *key, const char *v)
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

static int add_database(struct parser *p, const char *w)
{
	if (!strcmp(w, "none"))
		return 0;
	for (size_t i = 0; i < p->ps->n_databases; i++)
		if (!strcmp(p->ps->databases[i].name, w)) {
			p->pol->sql_databases |= 1ull << i;
			return 0;
		}
	return fail(p, "sql.databases: no database '%.64s' (give it a [database %.64s] section)", w, w);
}

/* sql.databases of policy i (0: [default]) into bits. */
static int resolve_databases(struct parser *p, struct engine_policy *pol, size_t i)
{
	struct engine_policy *saved = p->pol;
	int r;

	if (!p->pol_dbs[i])
		return 0;
	p->pol = pol;
	p->line = p->pol_dbs_line[i];
	r = each_word(p, p->pol_dbs[i], "sql.databases", add_database);
	p->pol = saved;
	return r;
}

static struct engine_policy *find_policy(struct engine_policies *ps, const char *name)
{
	if (!strcmp(name, "default"))
		return &ps->def;
	for (size_t i = 0; i < ps->n_named; i++)
		if (!strcmp(ps->named[i].name, name))
			return &ps->named[i];
	return NULL;
}

/* ---- the http tool's keys and [host NAME] sections ---- */

static int host_section(struct parser *p, const char *name)
{
	struct sockaddr_storage ss;
	struct engine_host *h;
	char norm[NETGUARD_HOST_MAX + 1];
	socklen_t len;
	int r;

	snprintf(norm, sizeof(norm), "%s", name);
	r = netguard_parse_ip(norm, &ss, &len);
	if (r == 0)
		netguard_format((struct sockaddr *)&ss, norm, sizeof(norm));
	else if (r != -EINVAL || netguard_name_normalize(norm) < 0)
		return fail(p, "'[host %.64s]': not a host name or an IP address", name);
	for (size_t i = 0; i < p->ps->n_hosts; i++)
		if (!strcmp(p->ps->hosts[i].name, norm))
			return fail(p, "host '%s' is given twice", norm);
	if (p->ps->n_hosts >= POLICY_MAX_HOSTS)
		return fail(p, "too many [host NAME] sections: at most %d", POLICY_MAX_HOSTS);
	h = realloc(p->ps->hosts, (p->ps->n_hosts + 1) * sizeof(*h));
	if (!h)
		return fail(p, "out of memory");
	p->ps->hosts = h;
	p->host = &h[p->ps->n_hosts++];
	memset(p->host, 0, sizeof(*p->host));
	snprintf(p->host->name, sizeof(p->host->name), "%s", norm);
	return 0;
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

static int host_key(struct parser *p, const char *key, const char *v)
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

static int section(struct parser *p, char *s)
{
	char *end = strchr(s, ']'), *name;

	if (!end || *trim(end + 1))
		return fail(p, "a section is '[default]', '[policy NAME]', '[client NAME]' or "
			       "'[database NAME]' on a line of its own");
	*end = '\0';
	s = trim(s + 1);
	p->seen = 0;
	p->pol = NULL;
	p->client = NULL;
	p->db = NULL;
	p->host = NULL;
	if (!strcmp(s, "default")) {
		if (p->ps->def.name[0] == '!')
			return fail(p, "[default] is given twice");
		p->pol = &p->ps->def;
		p->ps->def.name[0] = '!'; /* seen; the name is set back at the end */
		return 0;
	}
	name = s + strcspn(s, " \t");
	if (*name)
		*name++ = '\0';
	name = trim(name);
	if (!name_ok(name))
		return fail(p, "'[%.16s %.64s]': a name is 1 to %d letters, digits, '_', '.' or '-'", s,
			    name, POLICY_NAME_MAX - 1);
	if (!strcmp(s, "policy")) {
		struct engine_policy *np;

		if (find_policy(p->ps, name) || !strcmp(name, "!default"))
			return fail(p, "policy '%s' is given twice", name);
		if (p->ps->n_named >= POLICY_MAX_POLICIES)
			return fail(p, "too many policies: at most %d", POLICY_MAX_POLICIES);
		np = realloc(p->ps->named, (p->ps->n_named + 1) * sizeof(*np));
		if (!np)
			return fail(p, "out of memory");
		p->ps->named = np;
		p->pol = &np[p->ps->n_named++];
		engine_policy_default(p->pol);
		snprintf(p->pol->name, sizeof(p->pol->name), "%s", name);
		return 0;
	}
	if (!strcmp(s, "client")) {
		struct engine_client *nc;

		for (size_t i = 0; i < p->ps->n_clients; i++)
			if (!strcmp(p->ps->clients[i].name, name))
				return fail(p, "client '%s' is given twice", name);
		if (p->ps->n_clients > POLICY_MAX_CLIENTS)
			return fail(p, "too many clients: at most %d", POLICY_MAX_CLIENTS);
		nc = realloc(p->ps->clients, (p->ps->n_clients + 1) * sizeof(*nc));
		if (!nc)
			return fail(p, "out of memory");
		p->ps->clients = nc;
		p->client = &nc[p->ps->n_clients++];
		memset(p->client, 0, sizeof(*p->client));
		snprintf(p->client->name, sizeof(p->client->name), "%s", name);
		return 0;
	}
	if (!strcmp(s, "host"))
		return host_section(p, name);
	if (!strcmp(s, "database"))
		return database_section(p, name);
	return fail(p, "unknown section '[%.64s]': use [default], [policy NAME], [client NAME], "
		       "[database NAME] or [host NAME]", s);
}

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

/* Comma-separated words, each handed to fn; empty items are errors. */
static int each_word(struct parser *p, char *v, const char *key,
		     int (*fn)(struct parser *p, const char *word))
{
	char *save = NULL;

	if (!*v)
		return fail(p, "'%s' has no value", key);
	for (char *w = strtok_r(v, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		w = trim(w);
		if (!*w)
			return fail(p, "'%s': an empty item", key);
		if (fn(p, w) < 0)
			return -EINVAL;
	}
	return 0;
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
		if (a != ACTION_EGRESS && !strcmp(w, action_names[a])) {
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
		if (!strcmp(w, action_names[tools[i]])) {
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

static int policy_key(struct parser *p, const char *key, char *v)
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

static int client_key(struct parser *p, const char *key, const char *v)
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

static int line(struct parser *p, char *s)
{
	char *eq, *key, *v;

	/* a connection string may hold '#' or ';' (in a password): on its
	 * line everything after '=' is the value */
	if (strncmp(trim(s), "connection", 10) || trim(s)[10 + strspn(trim(s) + 10, " \t")] != '=')
		s[strcspn(s, "#;")] = '\0';
	s = trim(s);
	if (!*s)
		return 0;
	if (*s == '[')
		return section(p, s);
	eq = strchr(s, '=');
	if (!eq)
		return fail(p, "expected 'key = value' or a [section], not '%.64s'", s);
	*eq = '\0';
	key = trim(s);
	v = trim(eq + 1);
	if (p->pol)
		return policy_key(p, key, v);
	if (p->client)
		return client_key(p, key, v);
	if (p->db)
		return database_key(p, key, v);
	if (p->host)
		return host_key(p, key, v);
	return fail(p, "'%.64s' comes before any section: start with [default]", key);
}

/* Clients' policies by name, their keys distinct; rates' bursts; the
 * databases each policy names. */
static int resolve(struct parser *p)
{
	struct engine_policies *ps = p->ps;

	snprintf(ps->def.name, sizeof(ps->def.name), "default");
	for (size_t i = 0; i < ps->n_named + 1; i++) {
		struct engine_policy *pol = i ? &ps->named[i - 1] : &ps->def;

		if (pol->rate > 0 && pol->burst < 1)
			pol->burst = pol->rate < 1 ? 1 : ceil(pol->rate);
		if (resolve_databases(p, pol, i) < 0)
			return -EINVAL;
	}
	for (size_t i = 0; i < ps->n_databases; i++) {
		p->line = 0;
		if (!ps->databases[i].conninfo)
			return fail(p, "database '%s' has no 'connection'", ps->databases[i].name);
	}
	for (size_t i = 1; i < ps->n_clients; i++) {
		struct engine_client *c = &ps->clients[i];
		const char *pn = p->client_policy[i] ? p->client_policy[i] : "default";

		p->line = 0;
		if (!c->has_key)
			return fail(p, "client '%s' has no key_sha256", c->name);
		if (!(c->policy = find_policy(ps, pn)))
			return fail(p, "client '%s': no policy '%.64s' (give it a [policy %.64s] section)",
				    c->name, pn, pn);
		for (size_t j = 1; j < i; j++)
			if (!memcmp(ps->clients[j].key, c->key, SHA256_LEN))
				return fail(p, "clients '%s' and '%s' have the same key", ps->clients[j].name,
					    c->name);
	}
	return 0;
}

static void clients_init(struct engine_policies *ps)
{
	ps->clients[0].policy = &ps->def;
	for (size_t i = 0; i < ps->n_clients; i++) {
		struct engine_client *c = &ps->clients[i];

		pthread_mutex_init(&c->lock, NULL);
		c->tokens = c->policy->burst;
		c->refill_ns = now_ns();
	}
}

struct engine_policies *engine_policies_new(void)
{
	struct engine_policies *ps = calloc(1, sizeof(*ps));

	if (!ps || !(ps->clients = calloc(1, sizeof(*ps->clients)))) {
		free(ps);
		return NULL;
	}
	engine_policy_default(&ps->def);
	ps->n_clients = 1;
	snprintf(ps->clients[0].name, sizeof(ps->clients[0].name), "default");
	clients_init(ps);
	return ps;
}

int engine_policies_parse(const char *text, size_t len, struct engine_policies **ret, char *err,
			  size_t n)
{
	struct parser p = { .err = err, .n = n };
	char buf[POLICY_LINE_MAX + 2];
	const char *s = text, *end = text + len;
	int r = 0;

	if (len > POLICY_FILE_MAX)
		return snprintf(err, n, "the file is over %u bytes", POLICY_FILE_MAX), -EINVAL;
	if (memchr(text, '\0', len))
		return snprintf(err, n, "the file holds a NUL byte: is it text?"), -EINVAL;
	p.ps = engine_policies_new();
	if (!p.ps)
		return snprintf(err, n, "out of memory"), -ENOMEM;
	/* clients[0] is the default client; the parser appends after it */
	while (s < end && r == 0) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t l = nl ? (size_t)(nl - s) : (size_t)(end - s);

		p.line++;
		if (l > POLICY_LINE_MAX) {
			r = fail(&p, "the line is over %d bytes", POLICY_LINE_MAX);
			break;
		}
		memcpy(buf, s, l);
		buf[l] = '\0';
		r = line(&p, buf);
		s += l + 1;
	}
	if (r == 0)
		r = resolve(&p);
	for (size_t i = 0; i < ARRAY_SIZE(p.client_policy); i++)
		free(p.client_policy[i]);
	for (size_t i = 0; i < ARRAY_SIZE(p.pol_dbs); i++)
		free(p.pol_dbs[i]);
	if (r < 0) {
		engine_policies_free(p.ps);
		return r;
	}
	clients_init(p.ps);
	*ret = p.ps;
	return 0;
}

int engine_policies_load(const char *path, struct engine_policies **ret, char *err, size_t n)
{
	char msg[512], *text;
	struct stat st;
	ssize_t got;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return r = -errno, snprintf(err, n, "cannot open '%s': %s", path, strerror(-r)), r;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > POLICY_FILE_MAX) {
		close(fd);
		return snprintf(err, n, "'%s' is not a regular file of at most %u bytes", path,
				POLICY_FILE_MAX), -EINVAL;
	}
	text = malloc((size_t)st.st_size + 1);
	if (!text) {
		close(fd);
		return snprintf(err, n, "out of memory"), -ENOMEM;
	}
	got = read(fd, text, (size_t)st.st_size + 1);
	r = got < 0 ? -errno : 0;
	close(fd);
	if (r < 0) {
		free(text);
		return snprintf(err, n, "cannot read '%s': %s", path, strerror(-r)), r;
	}
	r = engine_policies_parse(text, (size_t)got, ret, msg, sizeof(msg));
	free(text);
	if (r < 0)
		snprintf(err, n, "%s:%s", path, msg + (strncmp(msg, "line ", 5) ? 0 : 5));
	return r;
}

void engine_policies_free(struct engine_policies *ps)
{
	if (!ps)
		return;
	for (size_t i = 0; i < ps->n_databases; i++) {
		/* the connection string may hold a password */
		if (ps->databases[i].conninfo)
			explicit_bzero(ps->databases[i].conninfo, strlen(ps->databases[i].conninfo));
		free(ps->databases[i].conninfo);
	}
	free(ps->databases);
	netguard_list_release(&ps->def.http_hosts);
	for (size_t i = 0; i < ps->n_named; i++)
		netguard_list_release(&ps->named[i].http_hosts);
	for (size_t i = 0; i < ps->n_hosts; i++)
		for (size_t j = 0; j < ps->hosts[i].n_headers; j++)
			free(ps->hosts[i].headers[j]);
	free(ps->hosts);
	free(ps->named);
	free(ps->clients);
	free(ps);
}

struct engine_client *engine_policies_client(struct engine_policies *ps, const char *key,
					     size_t len)
{
	unsigned char d[SHA256_LEN];
	struct sha256 s;

	sha256_init(&s);
	sha256_update(&s, key, len);
	sha256_final(&s, d);
	for (size_t i = 1; i < ps->n_clients; i++)
		if (!memcmp(ps->clients[i].key, d, SHA256_LEN))
			return &ps->clients[i];
	return NULL;
}

const struct engine_database *engine_policies_database(const struct engine_policies *ps,
						       const char *name)
{
	for (size_t i = 0; ps && i < ps->n_databases; i++)
		if (!strcmp(ps->databases[i].name, name))
			return &ps->databases[i];
	return NULL;
}

const struct engine_host *engine_policies_host(const struct engine_policies *ps, const char *host)
{
	char norm[NETGUARD_HOST_MAX + 2];
	struct sockaddr_storage ss;
	socklen_t len;

	if (!ps || strlen(host) >= sizeof(norm))
		return NULL;
	if (netguard_parse_ip(host, &ss, &len) == 0)
		netguard_format((struct sockaddr *)&ss, norm, sizeof(norm));
	else if (snprintf(norm, sizeof(norm), "%s", host), netguard_name_normalize(norm) < 0)
		return NULL;
	for (size_t i = 0; i < ps->n_hosts; i++)
		if (!strcmp(ps->hosts[i].name, norm))
			return &ps->hosts[i];
	return NULL;
}

bool engine_policies_has_clients(const struct engine_policies *ps)
{
	return ps->n_clients > 1;
}
