/* cli: a project's changes, for `codecell run`, `codecell shell` and
 * `codecell diff|apply|discard` (changes.c). */
#ifndef CODECELL_CLI_CHANGES_H
#define CODECELL_CLI_CHANGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "engine/changes.h"

/* A new changes directory's path for project: under $XDG_STATE_HOME (or
 * ~/.local/state)/codecell/changes, which is made.  0 or -errno. */
int cli_changes_default_dir(const char *project, char *out, size_t n);
/* The diff (or its JSON) on f, with a line when there is nothing.  0 or
 * -errno (said). */
int cli_changes_show(int upper_fd, const struct changes_base *b, size_t max_bytes, bool json,
		     FILE *f);
/* Read, check, ask (unless yes; refused without a terminal) naming the
 * changes' count, bytes and digest, then apply exactly those into the
 * project as its owner (engine_changes_apply).  0, -ESTALE (the project
 * changed), -ECANCELED (declined, or the changes changed after the
 * question), -errno; every outcome is said on stderr. */
int cli_changes_apply(int upper_fd, struct changes_base *b, bool yes);

#endif
