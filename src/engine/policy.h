/* engine/policy: the rules a call must pass, whatever door it came in by
 * (README "Policy"; examples/policy.sample.ini is the format, commented).
 *
 * A policy file holds a [default] policy (the CLI's, MCP's, and the
 * server's for a client without a policy of its own), named policies
 * ([policy NAME]) and the server's clients ([client NAME]: the SHA-256 of
 * its API key and the policy it gets).  Every policy starts from the safe
 * built-in default (engine_policy_default) and changes what it names.
 *
 * engine_check() is the one check every door calls before it executes;
 * a rejection names the rule. */
#ifndef CODECELL_ENGINE_POLICY_H
#define CODECELL_ENGINE_POLICY_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "util/netguard.h"
#include "util/sha256.h"

#define POLICY_FILE_MAX (1u << 20) /* bytes of a policy file */
#define POLICY_LINE_MAX 4096
#define POLICY_NAME_MAX 64 /* a policy's or a client's name */
#define POLICY_MAX_POLICIES 64
#define POLICY_MAX_CLIENTS 1024
#define POLICY_MAX_DATABASES 64	      /* [database NAME] sections */
#define POLICY_CONNINFO_MAX 1024      /* bytes of a database's connection string */
#define POLICY_MAX_HOSTS 256	      /* [host NAME] sections */
#define POLICY_HOST_HEADERS 16	      /* headers of one [host NAME] */
#define HTTP_RESPONSE_MAX (64u << 20) /* the most http.max_response may be */
#define POLICY_MAX_PROJECTS 16	      /* directories in `projects` */
#define POLICY_PROJECT_MAX 1024	      /* bytes of one */

/* What a call does: the tools of DESIGN.md, and the actions a policy may
 * hold for approval. */
enum engine_action {
	ACTION_RUN, /* one-shot execution */
	ACTION_SESSION_CREATE,
	ACTION_SESSION_EXEC,
	ACTION_SESSION_CLOSE,
	ACTION_READ_FILE,
	ACTION_WRITE_FILE, /* an upload, MCP's write_file */
	ACTION_DELETE_FILE,
	ACTION_NETWORK, /* a sandbox with a network */
	ACTION_SESSION_INTERRUPT,
	ACTION_SESSION_RESTART,
	ACTION_SESSION_FORK, /* counts as a session made */
	ACTION_SQL,	     /* the sql tool (engine/tool_sql.c) */
	ACTION_HTTP,	     /* the http tool (engine/tool_http.c) */
	ACTION_APPLY,	     /* a project's changes copied into it */
	ACTION_EGRESS,	     /* a connection through the egress proxy (audit only) */
	_ACTION_MAX
};
const char *engine_action_name(enum engine_action a);

enum engine_door { DOOR_CLI, DOOR_API, DOOR_MCP, _DOOR_MAX };
const char *engine_door_name(enum engine_door d);

struct engine_policy {
	char name[POLICY_NAME_MAX];
	bool languages[_LANG_MAX];
	double ceiling[_LIMIT_MAX]; /* the most a call may ask for */
	bool network;		    /* false: sandboxes get no network at all */
	unsigned approval;	    /* bits of enum engine_action */
	uint64_t max_file;	    /* bytes of one file written or uploaded */
	unsigned max_sessions;	    /* open at once per client; 0: no cap */
	unsigned max_executions;    /* running at once per client; 0: no cap */
	double rate;		    /* calls per second per client; 0: no limit */
	double burst;		    /* calls at once before rate applies */
	double approval_timeout_s;  /* a held call not decided by then is denied */
	/* tools besides code (engine/tool.h): bits of enum engine_action
	 * (ACTION_SQL, ACTION_HTTP); 0 by default: no tools */
	unsigned tools;
	/* sql: the [database NAME] sections it may use (bits of their index
	 * in engine_policies.databases); SQLite files in a session's
	 * workspace when sql_workspace, writable when sql_writes */
	uint64_t sql_databases;
	bool sql_workspace;
	bool sql_writes;
	/* the http tool: the hosts it may reach (empty: none; util/netguard.h
	 * has the rule for non-public addresses) and the most bytes of a
	 * response body it keeps */
	struct netguard_list http_hosts;
	uint64_t http_max_response;
	/* the hosts the allowlist network reaches (util/netguard.h's list
	 * syntax, checked when the file is read); "": none, the mode is
	 * refused */
	char egress[POLICY_LINE_MAX];
	/* where a server's client may open a project (session "project"):
	 * absolute directories, the project inside one of them; none: no
	 * projects.  The CLI takes any directory its user can read. */
	char projects[POLICY_MAX_PROJECTS][POLICY_PROJECT_MAX];
	unsigned n_projects;
};

/* A [host NAME] section: headers the http tool adds to every request to
 * that host (an Authorization header, an API key).  Secrets: they never
 * appear in a result, a message or the audit log. */
struct engine_host {
	char name[NETGUARD_HOST_MAX + 1];   /* normalized: a lower-case name or an IPv4 address */
	char *headers[POLICY_HOST_HEADERS]; /* "Name: value", owned */
	size_t n_headers;
};

enum engine_db_driver { DB_POSTGRESQL, DB_SQLITE };

/* The sql tool's caps, defaults and most (a [database] section's keys). */
#define DB_TIMEOUT_DEFAULT_S 10.0
#define DB_TIMEOUT_MAX_S 3600.0
#define DB_MAX_ROWS_DEFAULT 1000
#define DB_MAX_ROWS_MAX 1000000
#define DB_MAX_BYTES_DEFAULT (1u << 20)
#define DB_MAX_BYTES_MAX (64u << 20)
#define DB_CONNECTIONS_DEFAULT 4
#define DB_CONNECTIONS_MAX 64

/* A named database connection ([database NAME]).  conninfo is a secret
 * (it may hold a password): never in a message, a result or the log. */
struct engine_database {
	char name[POLICY_NAME_MAX];
	enum engine_db_driver driver;
	char *conninfo;	    /* libpq conninfo or URI; SQLite: a host path (owned) */
	bool writes;	    /* false: read-only */
	double timeout_s;   /* per query */
	uint64_t max_rows;  /* rows returned at most */
	uint64_t max_bytes; /* bytes of the rows' values at most */
	/* PostgreSQL: queries at once (a backend each, and for a moment a
	 * second to end one stopped at a cap) */
	unsigned max_connections;
	/* PostgreSQL: may the role be a superuser, or have the privileges
	 * of pg_execute_server_program, pg_read_server_files or
	 * pg_write_server_files (COPY ... TO PROGRAM runs a shell command
	 * on the database's host)?  false: such a role is refused */
	bool superuser;
};
/* "postgresql", "sqlite" */
const char *engine_db_driver_name(enum engine_db_driver d);
/* A database's caps as for a SQLite file in a workspace: the defaults,
 * writes as the policy says. */
void engine_database_workspace(const struct engine_policy *p, struct engine_database *ret);

/* A client of the server: who, its policy, its counters.  Thread-safe. */
struct engine_client {
	char name[POLICY_NAME_MAX];
	unsigned char key[SHA256_LEN]; /* the SHA-256 of its API key */
	bool has_key;
	const struct engine_policy *policy;
	size_t policy_index; /* while loading */
	pthread_mutex_t lock;
	double tokens;
	uint64_t refill_ns;
	unsigned sessions, executions;
};

/* A loaded policy file (or the built-in default: engine_policies_new). */
struct engine_policies {
	struct engine_policy def;
	struct engine_policy *named;
	size_t n_named;
	/* clients[0] is "default": the CLI, MCP, the server's token or
	 * loopback client; then the file's clients */
	struct engine_client *clients;
	size_t n_clients;
	struct engine_database *databases; /* [database NAME] */
	size_t n_databases;
	struct engine_host *hosts;
	size_t n_hosts;
};

/* The safe built-in default: every language, the limits table's
 * ceilings, loopback network, no approvals, files up to 64M, no per-client
 * caps beyond the server's, no rate limit. */
void engine_policy_default(struct engine_policy *p);

/* Only the built-in default.  NULL on ENOMEM. */
struct engine_policies *engine_policies_new(void);
/* Parse a policy file's text (pure; fuzzed).  0, or -EINVAL with
 * "LINE: message" in err (n bytes). */
int engine_policies_parse(const char *text, size_t len, struct engine_policies **ret, char *err,
			  size_t n);
/* Read and parse FILE.  0, or -errno with "FILE:LINE: message". */
int engine_policies_load(const char *path, struct engine_policies **ret, char *err, size_t n);
void engine_policies_free(struct engine_policies *ps);
/* The client whose key this is (compared by digest), or NULL. */
struct engine_client *engine_policies_client(struct engine_policies *ps, const char *key,
					     size_t len);
/* The database of that name, or NULL. */
const struct engine_database *engine_policies_database(const struct engine_policies *ps,
						       const char *name);
/* The [host NAME] section for this host (a URL's host, normalized by
 * the lookup), or NULL. */
const struct engine_host *engine_policies_host(const struct engine_policies *ps, const char *host);
/* Does the file name any client?  (The server then requires a key.) */
bool engine_policies_has_clients(const struct engine_policies *ps);

/* One call, as the engine sees it. */
struct engine_call {
	enum engine_door door;
	enum engine_action action;
	enum engine_lang lang;
	bool has_lang;
	/* the limits the caller asked for (bits of enum engine_limit_id in
	 * asked; others are the defaults) */
	struct engine_limit_values *limits;
	unsigned asked;
	enum sandbox_net *net; /* NULL: the call makes no sandbox */
	bool net_asked;
	/* out: the policy's egress list when *net is SANDBOX_NET_ALLOWLIST
	 * (borrowed from the policy) */
	const char **egress;
	uint64_t bytes; /* ACTION_WRITE_FILE: the file's size */
};

struct engine_verdict {
	/* in: a person approved this very call (engine/approval.h): the
	 * approval rule passes.  Zero the verdict before a check. */
	bool approved;
	bool allowed;
	const char *rule;	   /* "languages", "limits.memory", "rate", ... (static) */
	int http;		   /* 403 (a rule forbids it), 429 (rate or a count) */
	double approval_timeout_s; /* needs_approval: how long a person has */
	bool needs_approval;
	char message[256];
	bool holds_execution; /* engine_release(ACTION_RUN) when it ends */
	bool holds_session;   /* engine_release(ACTION_SESSION_CREATE) at close */
};

/* The policy check, for every door.  Lowers the defaults of limits not
 * asked for to the policy's ceilings (and the network to none when the
 * policy has none); rejects anything asked above a ceiling, a language
 * or action not allowed, a file over the cap, a call over the rate or
 * over the client's sessions or executions.  An allowed execution or
 * session holds a slot until engine_release().  Returns 0 when allowed,
 * -EPERM when not (v says why). */
int engine_check(struct engine_client *c, struct engine_call *call, struct engine_verdict *v);
/* A rejected call as a result: status rejected, the message, the rule. */
void engine_verdict_result(const struct engine_verdict *v, struct run_result *r);
/* Give back a slot engine_check took (ACTION_RUN / ACTION_SESSION_EXEC:
 * an execution; ACTION_SESSION_CREATE: a session). */
void engine_release(struct engine_client *c, enum engine_action a);

/* engine_check() for the structs the doors hold: a one-shot run (its
 * limits, output limit and network lowered in place where the policy's
 * ceilings are below the defaults), a new session, a cell in a session
 * (timeout: the cell's, 0 for the session's own).  asked: bits of enum
 * engine_limit_id the caller gave. */
int engine_check_run(struct engine_client *c, enum engine_door door, struct run_request *req,
		     unsigned asked, bool net_asked, struct engine_verdict *v);
int engine_check_session(struct engine_client *c, enum engine_door door, struct session_opts *so,
			 unsigned asked, bool net_asked, struct engine_verdict *v);
int engine_check_exec(struct engine_client *c, enum engine_door door, enum session_lang lang,
		      double timeout_s, struct engine_verdict *v);
/* A command in a session (E2B's process Start): bash, with a timeout of
 * its own.  *timeout_s: what was asked (0: none), and on success the
 * timeout it runs with: 0 becomes the policy's ceiling, never no limit. */
int engine_check_command(struct engine_client *c, enum engine_door door, double *timeout_s,
			 struct engine_verdict *v);
/* A session's interrupt, restart or fork (a fork holds a session slot,
 * engine_release(ACTION_SESSION_CREATE)). */
int engine_check_action(struct engine_client *c, enum engine_door door, enum engine_action a,
			enum session_lang lang, struct engine_verdict *v);
/* A tool besides code (a = ACTION_SQL, ACTION_HTTP): rule 'tools' when the
 * policy does not enable it, then the approval and the rate. */
int engine_check_tool(struct engine_client *c, enum engine_door door, enum engine_action a,
		      struct engine_verdict *v);
/* A project for a session (door API, MCP: inside one of the policy's
 * `projects`, symlinks resolved; the CLI: any directory).  0 with the
 * resolved path in real (n bytes), or -EPERM (v says why, rule
 * "projects"). */
int engine_check_project(struct engine_client *c, enum engine_door door, const char *dir,
			 char *real, size_t n, struct engine_verdict *v);
/* A file written into a session's workspace (an upload), or deleted. */
int engine_check_file(struct engine_client *c, enum engine_door door, enum engine_action a,
		      uint64_t bytes, struct engine_verdict *v);

#endif
