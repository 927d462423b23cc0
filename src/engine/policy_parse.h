/* Internal to engine/policy*.c: the policy file's parser, shared by the
 * parser (the lines, the sections, what is resolved at the end) and the
 * keys of each section (policy_keys.c). */
#ifndef CODECELL_ENGINE_POLICY_PARSE_H
#define CODECELL_ENGINE_POLICY_PARSE_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/policy.h"

struct parser {
	struct engine_policies *ps;
	struct engine_policy *pol; /* the section's, or NULL */
	struct engine_client *client;
	struct engine_database *db;
	/* sql.databases of [default] (0) and of each [policy] (1 + i), and
	 * the line each was on: resolved once every section is read */
	char *pol_dbs[POLICY_MAX_POLICIES + 1];
	int pol_dbs_line[POLICY_MAX_POLICIES + 1];
	struct engine_host *host; /* a [host NAME] section's */
	unsigned seen;		  /* keys set in this section (bits) */
	char *client_policy[POLICY_MAX_CLIENTS + 1];
	int line;
	char *err;
	size_t n;
};

/* "line N: " and the message into p->err; returns -EINVAL. */
int policy_fail(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s without its leading and trailing blanks (in place). */
char *policy_trim(char *s);
/* Comma-separated words, each handed to fn; empty items are errors. */
int policy_each_word(struct parser *p, char *v, const char *key,
		     int (*fn)(struct parser *p, const char *word));

/* A key = value line in the section p is in (policy_keys.c): 0, or
 * policy_fail()'s -EINVAL. */
int policy_key(struct parser *p, const char *key, char *v);
int database_key(struct parser *p, const char *key, char *v);
int host_key(struct parser *p, const char *key, const char *v);
int client_key(struct parser *p, const char *key, const char *v);

#endif
