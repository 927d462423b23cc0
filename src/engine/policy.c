/* Policies: the actions' and doors' names, the built-in default, a
 * loaded file's lookups (a client by its key, a database, a host) and
 * its release.  The parser is policy_parse.c (the keys policy_keys.c),
 * the check policy_check.c. */
#include "engine/policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/netguard.h"
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

/* ---- [database NAME] ---- */

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

void engine_policies_free(struct engine_policies *ps)
{
	if (!ps)
		return;
	for (size_t i = 0; i < ps->n_databases; i++) {
		/* the connection string may hold a password */
		if (ps->databases[i].conninfo)
			explicit_bzero(ps->databases[i].conninfo,
				       strlen(ps->databases[i].conninfo));
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
