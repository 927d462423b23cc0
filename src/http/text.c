/* JSON text for the HTTP doors (api/text.h). */
#include <stdlib.h>
#include <string.h>

#include "http/text.h"
#include "util/banned.h"

char *api_json_dump(const json_t *j, size_t flags, size_t *ret_len)
{
	/* json_dumps() builds in a buffer that doubles as it goes, then
	 * copies it whole: three times the text at its peak, for a result of
	 * tens of megabytes.  Measuring first costs a second pass of CPU. */
	size_t n = j ? json_dumpb(j, NULL, 0, flags) : 0;
	char *s;

	if (!n || !(s = malloc(n + 1)))
		return NULL;
	if (json_dumpb(j, s, n, flags) != n) {
		free(s);
		return NULL;
	}
	s[n] = '\0';
	if (ret_len)
		*ret_len = n;
	return s;
}
