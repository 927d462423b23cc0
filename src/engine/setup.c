/* A door's setup (setup.h): the lower tiers' calls, behind the engine's
 * names. */
#include "engine/setup.h"

#include <stdbool.h>

#include "util/buf.h"
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

void engine_host_info(struct sandbox_host_info *ret)
{
	sandbox_host_info(ret);
}

int engine_limit_names_of(unsigned bits, const char *sep, struct buf *out)
{
	bool first = true;
	int r = 0;

	for (unsigned bit = 1; bit <= SANDBOX_LIMIT_LANDLOCK && r >= 0; bit <<= 1) {
		if (!(bits & bit))
			continue;
		r = buf_printf(out, "%s%s", first ? "" : sep, sandbox_limit_name(bit));
		first = false;
	}
	return r < 0 ? r : 0;
}

void engine_run_defer_sweep(void)
{
	sandbox_defer_sweep();
}

void engine_run_end_detached(struct sandbox *sb)
{
	sandbox_free_detached(sb);
}
