/* The policy file's parser: its lines, its sections, and what is
 * resolved once every section is read (clients' policies, databases'
 * names, bursts); errors with line numbers (fuzzed).  The keys of each
 * section are policy_keys.c's. */
#include "engine/policy_parse.h"

#include <errno.h>
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
#include "util/timeutil.h"
#include "util/banned.h"

/* ---- the parser ---- */

static bool name_ok(const char *s)
{
	size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-");

	return n > 0 && n < POLICY_NAME_MAX && !s[n];
}


static int database_section(struct parser *p, const char *name)
{
	struct engine_database *nd;

	for (size_t i = 0; i < p->ps->n_databases; i++)
		if (!strcmp(p->ps->databases[i].name, name))
			return policy_fail(p, "database '%s' is given twice", name);
	if (p->ps->n_databases >= POLICY_MAX_DATABASES)
		return policy_fail(p, "too many databases: at most %d", POLICY_MAX_DATABASES);
	nd = realloc(p->ps->databases, (p->ps->n_databases + 1) * sizeof(*nd));
	if (!nd)
		return policy_fail(p, "out of memory");
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

static int add_database(struct parser *p, const char *w)
{
	if (!strcmp(w, "none"))
		return 0;
	for (size_t i = 0; i < p->ps->n_databases; i++)
		if (!strcmp(p->ps->databases[i].name, w)) {
			p->pol->sql_databases |= 1ull << i;
			return 0;
		}
	return policy_fail(
		p, "sql.databases: no database '%.64s' (give it a [database %.64s] section)", w, w);
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
	r = policy_each_word(p, p->pol_dbs[i], "sql.databases", add_database);
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

/* ---- [host NAME] sections ---- */

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
		return policy_fail(p, "'[host %.64s]': not a host name or an IP address", name);
	for (size_t i = 0; i < p->ps->n_hosts; i++)
		if (!strcmp(p->ps->hosts[i].name, norm))
			return policy_fail(p, "host '%s' is given twice", norm);
	if (p->ps->n_hosts >= POLICY_MAX_HOSTS)
		return policy_fail(p, "too many [host NAME] sections: at most %d",
				   POLICY_MAX_HOSTS);
	h = realloc(p->ps->hosts, (p->ps->n_hosts + 1) * sizeof(*h));
	if (!h)
		return policy_fail(p, "out of memory");
	p->ps->hosts = h;
	p->host = &h[p->ps->n_hosts++];
	memset(p->host, 0, sizeof(*p->host));
	snprintf(p->host->name, sizeof(p->host->name), "%s", norm);
	return 0;
}

static int section(struct parser *p, char *s)
{
	char *end = strchr(s, ']'), *name;

	if (!end || *policy_trim(end + 1))
		return policy_fail(p,
				   "a section is '[default]', '[policy NAME]', '[client NAME]' or "
				   "'[database NAME]' on a line of its own");
	*end = '\0';
	s = policy_trim(s + 1);
	p->seen = 0;
	p->pol = NULL;
	p->client = NULL;
	p->db = NULL;
	p->host = NULL;
	if (!strcmp(s, "default")) {
		if (p->ps->def.name[0] == '!')
			return policy_fail(p, "[default] is given twice");
		p->pol = &p->ps->def;
		p->ps->def.name[0] = '!'; /* seen; the name is set back at the end */
		return 0;
	}
	name = s + strcspn(s, " \t");
	if (*name)
		*name++ = '\0';
	name = policy_trim(name);
	if (!name_ok(name))
		return policy_fail(
			p, "'[%.16s %.64s]': a name is 1 to %d letters, digits, '_', '.' or '-'", s,
			name, POLICY_NAME_MAX - 1);
	if (!strcmp(s, "policy")) {
		struct engine_policy *np;

		if (find_policy(p->ps, name) || !strcmp(name, "!default"))
			return policy_fail(p, "policy '%s' is given twice", name);
		if (p->ps->n_named >= POLICY_MAX_POLICIES)
			return policy_fail(p, "too many policies: at most %d", POLICY_MAX_POLICIES);
		np = realloc(p->ps->named, (p->ps->n_named + 1) * sizeof(*np));
		if (!np)
			return policy_fail(p, "out of memory");
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
				return policy_fail(p, "client '%s' is given twice", name);
		if (p->ps->n_clients > POLICY_MAX_CLIENTS)
			return policy_fail(p, "too many clients: at most %d", POLICY_MAX_CLIENTS);
		nc = realloc(p->ps->clients, (p->ps->n_clients + 1) * sizeof(*nc));
		if (!nc)
			return policy_fail(p, "out of memory");
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
	return policy_fail(
		p,
		"unknown section '[%.64s]': use [default], [policy NAME], [client NAME], "
		"[database NAME] or [host NAME]",
		s);
}


static int line(struct parser *p, char *s)
{
	char *eq, *key, *v;

	/* a connection string may hold '#' or ';' (in a password): on its
	 * line everything after '=' is the value */
	if (strncmp(policy_trim(s), "connection", 10) ||
	    policy_trim(s)[10 + strspn(policy_trim(s) + 10, " \t")] != '=')
		s[strcspn(s, "#;")] = '\0';
	s = policy_trim(s);
	if (!*s)
		return 0;
	if (*s == '[')
		return section(p, s);
	eq = strchr(s, '=');
	if (!eq)
		return policy_fail(p, "expected 'key = value' or a [section], not '%.64s'", s);
	*eq = '\0';
	key = policy_trim(s);
	v = policy_trim(eq + 1);
	if (p->pol)
		return policy_key(p, key, v);
	if (p->client)
		return client_key(p, key, v);
	if (p->db)
		return database_key(p, key, v);
	if (p->host)
		return host_key(p, key, v);
	return policy_fail(p, "'%.64s' comes before any section: start with [default]", key);
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
			return policy_fail(p, "database '%s' has no 'connection'",
					   ps->databases[i].name);
	}
	for (size_t i = 1; i < ps->n_clients; i++) {
		struct engine_client *c = &ps->clients[i];
		const char *pn = p->client_policy[i] ? p->client_policy[i] : "default";

		p->line = 0;
		if (!c->has_key)
			return policy_fail(p, "client '%s' has no key_sha256", c->name);
		if (!(c->policy = find_policy(ps, pn)))
			return policy_fail(
				p,
				"client '%s': no policy '%.64s' (give it a [policy %.64s] section)",
				c->name, pn, pn);
		for (size_t j = 1; j < i; j++)
			if (!memcmp(ps->clients[j].key, c->key, SHA256_LEN))
				return policy_fail(p, "clients '%s' and '%s' have the same key",
						   ps->clients[j].name, c->name);
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
			r = policy_fail(&p, "the line is over %d bytes", POLICY_LINE_MAX);
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
				POLICY_FILE_MAX),
		       -EINVAL;
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
