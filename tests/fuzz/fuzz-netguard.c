/* libFuzzer target: netguard's parsers (IP literals, host names, the
 * allowlist).  An accepted literal formats back to text that parses to the
 * same address and class; an accepted list has sane entries and answers
 * netguard_check with a reason whenever it refuses. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/netguard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void literal(const char *s)
{
	struct sockaddr_storage ss, again;
	char text[NETGUARD_ADDR_STRLEN], name[NETGUARD_HOST_MAX + 2];
	socklen_t len, len2;
	int r = netguard_parse_ip(s, &ss, &len);

	if (r == 0) {
		netguard_format((struct sockaddr *)&ss, text, sizeof(text));
		if (netguard_parse_ip(text, &again, &len2) < 0 || len != len2 ||
		    memcmp(&ss, &again, len))
			abort();
		if (netguard_classify((struct sockaddr *)&ss) >= NG_INVALID)
			abort();
		return;
	}
	if (r != -EINVAL && r != -ERANGE)
		abort();
	/* a name is normalized within its buffer */
	if (r == -EINVAL && strlen(s) < sizeof(name)) {
		memcpy(name, s, strlen(s) + 1);
		if (netguard_name_normalize(name) == 0 && strlen(name) > NETGUARD_HOST_MAX)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sockaddr_storage ss;
	struct netguard_list l;
	char *s, err[256], why[256];
	socklen_t len;

	if (size > 4096 || !(s = malloc(size + 1)))
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	literal(s);
	if (netguard_list_parse(s, &l, err, sizeof(err)) < 0) {
		if (!err[0])
			abort();
	} else {
		for (size_t i = 0; i < l.n; i++)
			if (l.v[i].port > 65535 || (l.v[i].kind == NGE_NET && l.v[i].prefix > 128))
				abort();
		netguard_parse_ip("127.0.0.1", &ss, &len);
		if (netguard_check(&l, "localhost", 80, (struct sockaddr *)&ss, why, sizeof(why)) <
			    0 &&
		    !why[0])
			abort();
		if (netguard_check(&l, s, 443, NULL, why, sizeof(why)) < 0 && !why[0])
			abort();
		netguard_list_release(&l);
	}
	free(s);
	return 0;
}
