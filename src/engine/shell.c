/* A REPL's session (shell.h): the session tier's calls, under the
 * entry's lock, so that the shell reaches its session only through the
 * engine. */
#include "engine/shell.h"

#include <errno.h>
#include <stdlib.h>

#include "util/banned.h"

int engine_session_complete(struct engine_session *e, const char *code)
{
	int r;

	pthread_mutex_lock(&e->lock);
	r = e->s && !engine_session_gone(e) ? session_complete(e->s, code) : -ESRCH;
	pthread_mutex_unlock(&e->lock);
	return r;
}

int engine_session_names(struct engine_session *e, const char *text, char ***ret, size_t *ret_n)
{
	int r;

	*ret = NULL;
	*ret_n = 0;
	pthread_mutex_lock(&e->lock);
	r = e->s && !engine_session_gone(e) ? session_names(e->s, text, ret, ret_n) : -ESRCH;
	pthread_mutex_unlock(&e->lock);
	return r;
}

void engine_session_names_free(char **names, size_t n)
{
	session_names_free(names, n);
}

bool engine_session_expired(struct engine_session *e)
{
	bool r;

	pthread_mutex_lock(&e->lock);
	r = !e->s || engine_session_gone(e) || session_expired(e->s);
	pthread_mutex_unlock(&e->lock);
	return r;
}

int engine_session_sync_workspace(struct engine_session *e, char **ret_warning)
{
	int r;

	*ret_warning = NULL;
	pthread_mutex_lock(&e->lock);
	r = e->s && !engine_session_gone(e) ? session_sync_workspace(e->s, ret_warning) : -ESRCH;
	pthread_mutex_unlock(&e->lock);
	return r;
}
