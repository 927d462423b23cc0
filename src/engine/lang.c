#include <errno.h>
#include <string.h>
#include <strings.h>

#include "engine/engine.h"
#include "util/banned.h"

static const struct {
	const char *name;
	const char *aliases[4];
	const char *exts[4];
} langs[_LANG_MAX] = {
	[LANG_PYTHON] = { "python", { "py", "python3" }, { ".py" } },
	[LANG_JAVASCRIPT] = { "javascript", { "js", "node", "nodejs" }, { ".js", ".cjs", ".mjs" } },
	[LANG_BASH] = { "bash", { "sh", "shell" }, { ".sh", ".bash" } },
	[LANG_SQL] = { "sql", { "sqlite", "sqlite3" }, { ".sql" } },
};

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

