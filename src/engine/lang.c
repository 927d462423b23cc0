#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine/engine.h"
#include "util/parse.h"
#include "util/banned.h"

static const struct {
	const char *name;
	const char *title;
	const char *aliases[4];
	const char *exts[4];
	int session; /* enum session_lang, or -1: no sessions */
} langs[_LANG_MAX] = {
	[LANG_PYTHON] = { "python", "Python", { "py", "python3" }, { ".py" }, SESSION_PYTHON },
	[LANG_JAVASCRIPT] = { "javascript",
			      "JavaScript",
			      { "js", "node", "nodejs" },
			      { ".js", ".cjs", ".mjs" },
			      SESSION_JAVASCRIPT },
	[LANG_BASH] = { "bash", "bash", { "sh", "shell" }, { ".sh", ".bash" }, SESSION_BASH },
	[LANG_SQL] = { "sql", "SQL", { "sqlite", "sqlite3" }, { ".sql" }, -1 },
};

const char *engine_lang_title(enum engine_lang l)
{
	return l < _LANG_MAX ? langs[l].title : "unknown";
}

int engine_lang_session(enum engine_lang l, enum session_lang *ret)
{
	if (l >= _LANG_MAX || langs[l].session < 0)
		return -EINVAL;
	*ret = (enum session_lang)langs[l].session;
	return 0;
}

enum engine_lang engine_lang_of_session(enum session_lang s)
{
	for (int l = 0; l < _LANG_MAX; l++)
		if (langs[l].session == (int)s)
			return l;
	return LANG_PYTHON;
}

const char *engine_lang_name(enum engine_lang l)
{
	return l < _LANG_MAX ? langs[l].name : "unknown";
}

const char *engine_lang_list(void)
{
	return "python, javascript, bash, sql";
}

int engine_lang_parse(const char *name, enum engine_lang *ret)
{
	for (int l = 0; l < _LANG_MAX; l++) {
		if (!strcasecmp(name, langs[l].name)) {
			*ret = l;
			return 0;
		}
		for (int a = 0; a < 4 && langs[l].aliases[a]; a++)
			if (!strcasecmp(name, langs[l].aliases[a])) {
				*ret = l;
				return 0;
			}
	}
	return -EINVAL;
}

int engine_lang_from_path(const char *path, enum engine_lang *ret)
{
	const char *dot = strrchr(path, '.');

	if (!dot || strchr(dot, '/'))
		return -ENOENT;
	for (int l = 0; l < _LANG_MAX; l++)
		for (int e = 0; e < 4 && langs[l].exts[e]; e++)
			if (!strcasecmp(dot, langs[l].exts[e])) {
				*ret = l;
				return 0;
			}
	return -ENOENT;
}


/* An identifier of Python's, ASCII only: what a module path's parts and
 * an alias are made of. */
static size_t ident_len(const char *s)
{
	size_t n = 0;

	if (!(isalpha((unsigned char)*s) || *s == '_'))
		return 0;
	while (isalnum((unsigned char)s[n]) || s[n] == '_')
		n++;
	return n;
}

static const char *skip_blanks(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* One item: "a.b.c" or "a.b.c as name", blanks around it; the end of it
 * (a ',' or the NUL), or NULL. */
static const char *preload_item(const char *s)
{
	size_t n;

	s = skip_blanks(s);
	for (;;) {
		n = ident_len(s);
		if (!n)
			return NULL;
		s += n;
		if (*s != '.')
			break;
		s++;
	}
	if (*s == ' ' || *s == '\t') {
		s = skip_blanks(s);
		if (!strncmp(s, "as", 2) && (s[2] == ' ' || s[2] == '\t')) {
			s = skip_blanks(s + 2);
			n = ident_len(s);
			if (!n)
				return NULL;
			s = skip_blanks(s + n);
		}
	}
	return *s == ',' || !*s ? s : NULL;
}

int engine_preload_check(const char *list, char *err, size_t n)
{
	const char *s = list;

	if (!*skip_blanks(s))
		return 0;
	for (;;) {
		const char *end = preload_item(s);

		if (!end) {
			size_t len = strcspn(s, ",");

			snprintf(err, n,
				 "preload: \"%.*s\" is not a module, or 'module as name' (e.g. "
				 "\"numpy as np,pandas as pd,matplotlib.pyplot as plt\")",
				 (int)(len > 64 ? 64 : len), s);
			return -EINVAL;
		}
		if (!*end)
			return 0;
		s = end + 1;
	}
}

int engine_seed_parse(const char *text, uint64_t *ret, char *err, size_t n)
{
	uint64_t v;

	if (parse_u64(text, &v) < 0 || v > ENGINE_SEED_MAX) {
		snprintf(err, n, "invalid seed '%.64s': expected a whole number from 0 to %llu",
			 text, ENGINE_SEED_MAX);
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

/* bash reads BASH_ENV before a script, after expanding it: the
 * arithmetic assigns $RANDOM (which seeds it) and adds nothing to the
 * name, /dev/null. */
#define BASH_SEED "BASH_ENV=/dev/null${CODECELL_SEED:+${RANDOM:0:$((RANDOM=CODECELL_SEED, 0))}}"

char **engine_seed_env(const char *const *env, uint64_t seed)
{
	size_t n = 0, k = 0;
	char **out;

	while (env && env[n])
		n++;
	out = calloc(n + 4, sizeof(*out));
	if (!out)
		return NULL;
	for (; k < n; k++)
		if (!(out[k] = strdup(env[k])))
			goto fail;
	if (asprintf(&out[k++], "CODECELL_SEED=%llu", (unsigned long long)seed) < 0 ||
	    asprintf(&out[k++], "PYTHONHASHSEED=%llu", (unsigned long long)seed) < 0 ||
	    !(out[k++] = strdup(BASH_SEED))) {
		out[k - 1] = NULL;
		goto fail;
	}
	return out;
fail:
	engine_env_free(out);
	return NULL;
}

void engine_env_free(char **env)
{
	for (size_t i = 0; env && env[i]; i++)
		free(env[i]);
	free(env);
}
