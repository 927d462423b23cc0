/* util/envname: the one rule for an environment variable's name, in the
 * two variants the doors need (each caller names the one it applies):
 *
 *   ENV_NAME_IDENTIFIER  a letter or '_', then letters, digits and '_'
 *                        (ASCII): a name every shell and language can
 *                        read back (POSIX.1-2017 XBD 8.1, lower case
 *                        allowed).  /v1, the CLI and E2B's envVars.
 *   ENV_NAME_ANY         any bytes but '=' and NUL: what execve(2) and
 *                        Python's os.environ take.  E2B's process.envs
 *                        and its code interpreter's env_vars, where
 *                        E2B's own server takes any such name.
 *
 * Both: not empty, at most ENV_NAME_MAX bytes. */
#ifndef CODECELL_UTIL_ENVNAME_H
#define CODECELL_UTIL_ENVNAME_H

#include <stddef.h>

#define ENV_NAME_MAX 128

enum env_name_rule {
	ENV_NAME_IDENTIFIER,
	ENV_NAME_ANY,
};

/* Whether name[0..len) is a variable name under rule: 0 or -EINVAL. */
int env_name_check(const char *name, size_t len, enum env_name_rule rule);

#endif
