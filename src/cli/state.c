/* Where the CLI keeps what outlives a command: $XDG_STATE_HOME/codecell
 * (or ~/.local/state/codecell), as the XDG base directory rules say for
 * logs and history.  The changes a --project run kept and the audit log
 * `serve` and `mcp` write by default live there. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "engine/audit.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/banned.h"

int cli_state_path(const char *leaf, bool make_parent, char *out, size_t n)
{
	const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	char *slash;
	int k;

	/* a relative XDG_STATE_HOME is invalid (the spec says ignore it) */
	if (state && *state == '/')
		k = snprintf(out, n, "%s/codecell/%s", state, leaf);
	else if (home && *home == '/')
		k = snprintf(out, n, "%s/.local/state/codecell/%s", home, leaf);
	else
		return -ENOENT;
	if (k < 0 || (size_t)k >= n)
		return -ENAMETOOLONG;
	if (!make_parent)
		return 0;
	slash = strrchr(out, '/');
	*slash = '\0';
	k = mkdir_p(out, 0700);
	*slash = '/';
	return k;
}

int cli_audit_open(const char *given, bool by_default, struct engine_audit **ret)
{
	char path[4096], msg[600];
	int r;

	*ret = NULL;
	if (given && !strcmp(given, "off"))
		return 0;
	if (given) {
		r = engine_audit_open(given, 0, ret, msg, sizeof(msg));
		if (r < 0)
			log_error("--audit: %s", msg);
		return r;
	}
	if (!by_default)
		return 0;
	r = cli_state_path(CLI_AUDIT_DEFAULT, true, path, sizeof(path));
	if (r == 0)
		r = engine_audit_open(path, 0, ret, msg, sizeof(msg));
	else
		snprintf(msg, sizeof(msg), "%s",
			 r == -ENOENT ? "neither XDG_STATE_HOME nor HOME is set" : strerror(-r));
	if (r < 0)
		log_warn(
			"no audit log: the default one cannot be opened: %s (give --audit FILE, or "
			"--audit off to go without it)",
			msg);
	return 0;
}
