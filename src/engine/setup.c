/* A door's setup (setup.h): the lower tiers' calls, behind the engine's
 * names. */
#include "engine/setup.h"
#include "util/banned.h"

void engine_session_opts_init(struct session_opts *o)
{
	session_opts_init(o);
}

int engine_pool_new(const struct session_opts *o, unsigned size, struct session_pool **ret,
		    char **ret_error)
{
	return session_pool_new(o, size, ret, ret_error);
}

void engine_pool_health(struct session_pool *p, struct session_pool_health *ret)
{
	session_pool_health(p, ret);
}

void engine_pool_free(struct session_pool *p)
{
	session_pool_free(p);
}

void engine_host_probe(void)
{
	struct sandbox_host_info hi;

	sandbox_host_info(&hi);
}

const char *engine_limit_hit_name(unsigned bit)
{
	return bit == SANDBOX_LIMIT_LANDLOCK ? NULL : sandbox_limit_name(bit);
}
