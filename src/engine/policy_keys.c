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
	static const char *const yes[] = { "on", "true", "yes", "1" };
	static const char *const no[] = { "off", "false", "no", "0" };

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (!strcmp(v, yes[i]))
			return *ret = true, 0;
		if (!strcmp(v, no[i]))
			return *ret = false, 0;
	}
	return -EINVAL;
}

static int add_lang(struct parser *p, const char *w)
{
	enum engine_lang l;

	if (engine_lang_parse(w, &l) < 0)
		return policy_fail(p, "languages: unknown language '%.64s' (known: %s)", w,
				   engine_lang_list());
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
	return policy_fail(
		p,
		"approval: unknown action '%.64s' (known: run, session_create, session_exec, "
		"session_close, session_interrupt, session_restart, session_fork, read_file, "
		"write_file, delete_file, network, sql, http, apply; or none)",
		w);
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
	return policy_fail(p, "tools: unknown tool '%.64s' (known: sql, http; or none)", w);
}

/* projects = DIR, ...: where a server's client may open a project */
static int add_project(struct parser *p, const char *w)
{
	size_t len = strlen(w);

	if (!strcmp(w, "none"))
		return 0;
	if (w[0] != '/' || strstr(w, "/../") || (len >= 3 && !strcmp(w + len - 3, "/..")))
		return policy_fail(p, "projects: '%.64s' is not an absolute path without '..'", w);
	if (len >= POLICY_PROJECT_MAX)
		return policy_fail(p, "projects: '%.64s...' is longer than %d bytes", w,
				   POLICY_PROJECT_MAX - 1);
	if (p->pol->n_projects >= POLICY_MAX_PROJECTS)
		return policy_fail(p, "projects: at most %d directories", POLICY_MAX_PROJECTS);
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

/* ---- the keys' table ---- */

/* One key of a section: its name (a prefix when it ends in '.'), the
 * parser of its type, where its value lands (an offset into the
 * section's struct, for the typed parsers), the bounds of a number or a
 * size, what the value must be (the words of the messages, and of any
 * listing), and whether setting it twice in a section is an error
 * (p->seen, a bit by its index).  Parsing and the unknown-key messages
 * read the same table. */
struct key {
	const char *name;
	int (*parse)(struct parser *p, const struct key *k, const char *key, char *v, void *at);
	size_t at;
	uint64_t min, max;
	const char *doc;
	bool once;
};

/* on or off (parse_bool) */
static int key_bool(struct parser *p, const struct key *k, const char *key, char *v, void *at)
{
	if (parse_bool(v, at) < 0)
		return policy_fail(p, "%s: expected %s, not '%.64s'", key, k->doc, v);
	return 0;
}

/* a size (parse_size) from min to max bytes */
static int key_size(struct parser *p, const struct key *k, const char *key, char *v, void *at)
{
	uint64_t *x = at;

	if (parse_size(v, x) < 0 || *x < k->min || *x > k->max)
		return policy_fail(p, "%s: expected %s, not '%.64s'", key, k->doc, v);
	return 0;
}

/* a duration (parse_duration: above 0) up to max seconds */
static int key_duration(struct parser *p, const struct key *k, const char *key, char *v, void *at)
{
	double *x = at;

	if (parse_duration(v, x) < 0 || *x > (double)k->max)
		return policy_fail(p, "%s: expected %s, not '%.64s'", key, k->doc, v);
	return 0;
}

static int key_rate(struct parser *p, const struct key *k, const char *key, char *v, void *at)
{
	if (parse_rate(v, at) < 0)
		return policy_fail(p, "%s: expected %s, not '%.64s'", key, k->doc, v);
	return 0;
}

/* a whole number from min to max; a min of 0 is "no cap" */
static int whole(struct parser *p, const struct key *k, const char *key, const char *v,
		 uint64_t *ret)
{
	if (parse_u64(v, ret) < 0 || *ret < k->min || *ret > k->max)
		return policy_fail(p,
				   "%s: expected a whole number from %llu to %llu%s, not '%.64s'",
				   key, (unsigned long long)k->min, (unsigned long long)k->max,
				   k->min ? "" : " (0: no cap)", v);
	return 0;
}

static int key_count(struct parser *p, const struct key *k, const char *key, char *v, void *at)
{
	uint64_t x;

	if (whole(p, k, key, v, &x) < 0)
		return -EINVAL;
	*(unsigned *)at = (unsigned)x;
	return 0;
}

static int key_count64(struct parser *p, const struct key *k, const char *key, char *v, void *at)
{
	return whole(p, k, key, v, at);
}

/* burst: a count, kept as the bucket's double */
static int key_burst(struct parser *p, const struct key *k, const char *key, char *v, void *at)
{
	uint64_t x;

	if (whole(p, k, key, v, &x) < 0)
		return -EINVAL;
	*(double *)at = (double)x;
	return 0;
}

/* comma-separated words (each_word), the list cleared first */
static int key_languages(struct parser *p, const struct key *k, const char *key, char *v, void *at)
{
	(void)k;
	memset(at, 0, sizeof(p->pol->languages));
	return policy_each_word(p, v, key, add_lang);
}

static int key_approval(struct parser *p, const struct key *k, const char *key, char *v, void *at)
{
	(void)k;
	*(unsigned *)at = 0;
	return policy_each_word(p, v, key, add_approval);
}

static int key_tools(struct parser *p, const struct key *k, const char *key, char *v, void *at)
{
	(void)k;
	*(unsigned *)at = 0;
	return policy_each_word(p, v, key, add_tool);
}

static int key_projects(struct parser *p, const struct key *k, const char *key, char *v, void *at)
{
	(void)k;
	*(unsigned *)at = 0;
	return policy_each_word(p, v, key, add_project);
}

/* sql.databases: the names are resolved once every section is read, a
 * [database] may come later (resolve_databases) */
static int key_sql_databases(struct parser *p, const struct key *k, const char *key, char *v,
			     void *at)
{
	struct engine_policy *pol = p->pol;
	size_t i = pol == &p->ps->def ? 0 : (size_t)(pol - p->ps->named) + 1;

	(void)k;
	(void)at;
	if (!*v)
		return policy_fail(p, "'%s' has no value (none: no named databases)", key);
	free(p->pol_dbs[i]);
	p->pol_dbs[i] = strdup(v);
	p->pol_dbs_line[i] = p->line;
	return p->pol_dbs[i] ? 0 : policy_fail(p, "out of memory");
}

/* http.hosts: util/netguard's list; set twice when it holds hosts */
static int key_http_hosts(struct parser *p, const struct key *k, const char *key, char *v, void *at)
{
	struct netguard_list *l = at;
	char msg[256];

	(void)k;
	if (l->n)
		return policy_fail(p, "'%s' is set twice in this section", key);
	if (netguard_list_parse(v, l, msg, sizeof(msg)) < 0)
		return policy_fail(p, "http.hosts: %s", msg);
	return 0;
}

/* egress = host, host:port, *.example.com, ...: the allowlist network's
 * hosts, checked here and kept as text (the sandbox's proxy parses it) */
static int key_egress(struct parser *p, const struct key *k, const char *key, char *v, void *at)
{
	struct netguard_list l;
	char msg[256];

	(void)k;
	(void)key;
	(void)at;
	if (p->pol->egress[0])
		return policy_fail(p, "'egress' is set twice in this section");
	if (!*v)
		return policy_fail(
			p, "'egress' has no value: list hosts such as pypi.org, *.example.com:443");
	if (netguard_list_parse(v, &l, msg, sizeof(msg)) < 0)
		return policy_fail(p, "egress: %s", msg);
	netguard_list_release(&l);
	snprintf(p->pol->egress, sizeof(p->pol->egress), "%s", v);
	return 0;
}

/* limit.NAME: the limits table's parser and messages (engine/limits.c) */
static int key_limit(struct parser *p, const struct key *k, const char *key, char *v, void *at)
{
	const struct engine_limit *l = engine_limit_find(key + strlen(k->name));
	char msg[300];

	(void)at;
	if (!l || key[6] == '-')
		return policy_fail(p, "unknown limit '%.64s' (known: %s)", key,
				   engine_limit_names());
	if (engine_limit_parse((enum engine_limit_id)(l - engine_limits), key, v,
			       &p->pol->ceiling[l - engine_limits], msg, sizeof(msg)) < 0)
		return policy_fail(p, "%s", msg);
	return 0;
}

/* [database NAME]'s driver and connection string */
static int key_db_driver(struct parser *p, const struct key *k, const char *key, char *v, void *at)
{
	enum engine_db_driver *d = at;

	if (!strcmp(v, "postgresql") || !strcmp(v, "postgres"))
		*d = DB_POSTGRESQL;
	else if (!strcmp(v, "sqlite"))
		*d = DB_SQLITE;
	else
		return policy_fail(p, "%s: expected %s, not '%.64s'", key, k->doc, v);
	return 0;
}

/* The connection string is never quoted back: it may hold a password. */
static int key_db_connection(struct parser *p, const struct key *k, const char *key, char *v,
			     void *at)
{
	char **conninfo = at;

	(void)k;
	if (!*v || strlen(v) > POLICY_CONNINFO_MAX)
		return policy_fail(p, "%s: expected a connection string of 1 to %d bytes", key,
				   POLICY_CONNINFO_MAX);
	*conninfo = strdup(v);
	return *conninfo ? 0 : policy_fail(p, "out of memory");
}

#define IN_POLICY(f) offsetof(struct engine_policy, f)

/* A policy's keys ([default], [policy NAME]), in the order the
 * unknown-key message lists them. */
static const struct key policy_keys[] = {
	{ "languages", key_languages, IN_POLICY(languages), 0, 0, "language names", true },
	{ "network", key_bool, IN_POLICY(network), 0, 0, "on or off", true },
	{ "approval", key_approval, IN_POLICY(approval), 0, 0, "action names, or none", true },
	{ "max_file", key_size, IN_POLICY(max_file), 0, 4ull << 30, "a size up to 4G such as 16M",
	  true },
	{ "max_sessions", key_count, IN_POLICY(max_sessions), 0, 100000, "a count", true },
	{ "max_executions", key_count, IN_POLICY(max_executions), 0, 100000, "a count", true },
	{ "rate", key_rate, IN_POLICY(rate), 0, 0,
	  "calls per second, minute or hour such as 10, 10/s, 600/m (0: no limit)", true },
	{ "burst", key_burst, IN_POLICY(burst), 0, 1000000, "a count", true },
	{ "approval_timeout", key_duration, IN_POLICY(approval_timeout_s), 0, 86400,
	  "a duration up to 24h such as 5m", true },
	{ "tools", key_tools, IN_POLICY(tools), 0, 0, "sql, http, or none", true },
	{ "sql.databases", key_sql_databases, 0, 0, 0, "database names, or none", true },
	{ "sql.workspace", key_bool, IN_POLICY(sql_workspace), 0, 0, "on or off", true },
	{ "sql.writes", key_bool, IN_POLICY(sql_writes), 0, 0, "on or off", true },
	{ "http.hosts", key_http_hosts, IN_POLICY(http_hosts), 0, 0, "host names and addresses",
	  false },
	{ "http.max_response", key_size, IN_POLICY(http_max_response), 1, HTTP_RESPONSE_MAX,
	  "a size from 1 to 64M such as 1M", false },
	{ "egress", key_egress, IN_POLICY(egress), 0, 0,
	  "hosts such as pypi.org, *.example.com:443", false },
	{ "projects", key_projects, IN_POLICY(n_projects), 0, 0, "absolute directories, or none",
	  true },
	{ "limit.", key_limit, 0, 0, 0, "a limit's value (engine/limits.c)", false },
};
_Static_assert(HTTP_RESPONSE_MAX == 64u << 20, "http.max_response's doc says 64M");

#define IN_DATABASE(f) offsetof(struct engine_database, f)

/* A [database NAME] section's keys. */
static const struct key database_keys[] = {
	{ "driver", key_db_driver, IN_DATABASE(driver), 0, 0, "postgresql or sqlite", true },
	{ "connection", key_db_connection, IN_DATABASE(conninfo), 0, 0, "a connection string",
	  true },
	{ "writes", key_bool, IN_DATABASE(writes), 0, 0, "on or off", true },
	{ "timeout", key_duration, IN_DATABASE(timeout_s), 0, (uint64_t)DB_TIMEOUT_MAX_S,
	  "a duration above 0 and up to 1h such as 30s", true },
	{ "max_rows", key_count64, IN_DATABASE(max_rows), 1, DB_MAX_ROWS_MAX, "a count", true },
	{ "max_bytes", key_size, IN_DATABASE(max_bytes), 1024, DB_MAX_BYTES_MAX,
	  "a size from 1K to 64M such as 1M", true },
	{ "max_connections", key_count, IN_DATABASE(max_connections), 1, DB_CONNECTIONS_MAX,
	  "a count", true },
	{ "superuser", key_bool, IN_DATABASE(superuser), 0, 0, "on or off", true },
};
_Static_assert(DB_MAX_BYTES_MAX == 64u << 20 && (long)DB_TIMEOUT_MAX_S == 3600,
	       "the database keys' docs say 64M and 1h");

/* The names of the table's keys, from prefix on ("" for all), comma
 * separated, a prefix key as "limit.NAME". */
static void known(const struct key *t, size_t n, const char *prefix, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && len < size; i++) {
		size_t l = strlen(t[i].name);

		if (strncmp(t[i].name, prefix, strlen(prefix)))
			continue;
		len += (size_t)snprintf(buf + len, size - len, "%s%s%s", len ? ", " : "", t[i].name,
					t[i].name[l - 1] == '.' ? "NAME" : "");
	}
}

/* The table's key for this name: the same, or a prefix of it. */
static const struct key *key_find(const struct key *t, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(key, t[i].name))
			return &t[i];
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(t[i].name);

		if (t[i].name[l - 1] == '.' && !strncmp(key, t[i].name, l))
			return &t[i];
	}
	return NULL;
}

/* A key of a section whose struct is at base, through its table. */
static int key_set(struct parser *p, const struct key *t, size_t n, const char *key, char *v,
		   void *base)
{
	const struct key *k = key_find(t, n, key);
	unsigned bit;

	if (!k)
		return -ENOENT;
	bit = 1u << (k - t);
	if (k->once && (p->seen & bit))
		return policy_fail(p, "'%s' is set twice in this section", key);
	p->seen |= k->once ? bit : 0;
	return k->parse(p, k, key, v, (char *)base + k->at);
}

int policy_key(struct parser *p, const char *key, char *v)
{
	char list[512];
	int r = key_set(p, policy_keys, ARRAY_SIZE(policy_keys), key, v, p->pol);

	if (r != -ENOENT)
		return r;
	if (!strncmp(key, "http.", 5)) {
		known(policy_keys, ARRAY_SIZE(policy_keys), "http.", list, sizeof(list));
		return policy_fail(p, "unknown key '%.64s' (known: %s)", key, list);
	}
	known(policy_keys, ARRAY_SIZE(policy_keys), "", list, sizeof(list));
	return policy_fail(p, "unknown key '%.64s' in a policy (known: %s)", key, list);
}

int database_key(struct parser *p, const char *key, char *v)
{
	char list[512];
	int r = key_set(p, database_keys, ARRAY_SIZE(database_keys), key, v, p->db);

	if (r != -ENOENT)
		return r;
	known(database_keys, ARRAY_SIZE(database_keys), "", list, sizeof(list));
	return policy_fail(p, "unknown key '%.64s' in a database (known: %s)", key, list);
}

/* "Name: value": a token, then a value without control characters (the
 * value is a secret: it is not quoted back in a message). */
static bool header_ok(const char *v)
{
	size_t n = strspn(
		v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-.^_`|~");

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
		return policy_fail(p, "unknown key '%.64s' in a host (known: header)", key);
	if (!header_ok(v))
		return policy_fail(p,
				   "header: expected 'Name: value' (the value is not shown here)");
	if (h->n_headers >= POLICY_HOST_HEADERS)
		return policy_fail(p, "too many headers for host '%s': at most %d", h->name,
				   POLICY_HOST_HEADERS);
	if (!(h->headers[h->n_headers] = strdup(v)))
		return policy_fail(p, "out of memory");
	h->n_headers++;
	return 0;
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
			return policy_fail(p, "'key_sha256' is set twice in this section");
		if (hex_digest(v, p->client->key) < 0)
			return policy_fail(
				p,
				"key_sha256: expected 64 hex digits (printf %%s KEY | sha256sum)");
		p->client->has_key = true;
		return 0;
	}
	if (!strcmp(key, "policy")) {
		if (p->client_policy[i])
			return policy_fail(p, "'policy' is set twice in this section");
		p->client_policy[i] = strdup(v);
		return p->client_policy[i] ? 0 : policy_fail(p, "out of memory");
	}
	return policy_fail(p, "unknown key '%.64s' in a client (known: key_sha256, policy)", key);
}
