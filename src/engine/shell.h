/* engine/shell: what a REPL (`codecell shell`) needs of its session
 * besides running cells (engine_session_run): whether a statement is
 * complete, tab completion, idle expiry, and the workspace copied out at
 * the end.  A server's sessions have none of these (requests come whole,
 * the reaper expires them), so they are not in engine/sessions.h.  Each
 * takes e->lock; -ESRCH once e was closed. */
#ifndef CODECELL_ENGINE_SHELL_H
#define CODECELL_ENGINE_SHELL_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/sessions.h"

/* Is code a complete statement, as the kernel's interpreter says
 * (session_complete)?  1 complete, 0 more lines wanted, -EINVAL
 * invalid, another -errno when the kernel could not answer. */
int engine_session_complete(struct engine_session *e, const char *code);
/* What text (a name or a dotted name, as typed) can become, from the
 * kernel's namespace (Python; others: -EOPNOTSUPP), checked as
 * session_names() does (the kernel is untrusted): *ret a heap array of
 * *ret_n heap strings, for engine_session_names_free().  0 or -errno. */
int engine_session_names(struct engine_session *e, const char *text, char ***ret, size_t *ret_n);
void engine_session_names_free(char **names, size_t n);
/* Whether e was idle longer than its idle timeout (a gone one too). */
bool engine_session_expired(struct engine_session *e);
/* Copy the workspace out to the directory it was made with
 * (session_opts.workspace_dir; none: nothing to do).  0 or -errno;
 * *ret_warning (free()) names what could not be copied. */
int engine_session_sync_workspace(struct engine_session *e, char **ret_warning);

#endif
