/* Environment variable names (util/envname.h). */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "util/envname.h"
#include "util/banned.h"

/* ASCII only, whatever the locale (isalnum() is the locale's) */
static bool ident_char(char c, bool first)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
	       (!first && c >= '0' && c <= '9');
}

int env_name_check(const char *name, size_t len, enum env_name_rule rule)
{
	if (len == 0 || len > ENV_NAME_MAX)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		bool ok = rule == ENV_NAME_IDENTIFIER ? ident_char(name[i], i == 0)
						      : name[i] != '=' && name[i] != '\0';

		if (!ok)
			return -EINVAL;
	}
	return 0;
}
