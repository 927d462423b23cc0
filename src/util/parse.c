#include "util/parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "util/banned.h"

int parse_u64(const char *s, uint64_t *ret)
{
	unsigned long long v;
	char *end;

	if (!s || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end != '\0')
		return -EINVAL;
	*ret = v;
	return 0;
}

/* Split "1.5G" into a finite non-negative number and a suffix. */
static int parse_number_suffix(const char *s, double *ret_v, const char **ret_suffix)
{
	double v;
	char *end;

	if (!s || !(isdigit((unsigned char)s[0]) || s[0] == '.'))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno == ERANGE || !isfinite(v))
		return -ERANGE;
	if (end == s)
		return -EINVAL;
	*ret_v = v;
	*ret_suffix = end;
	return 0;
}

int parse_size(const char *s, uint64_t *ret)
{
	static const struct {
		const char *suffix;
		double mult;
	} units[] = {
		{ "", 1 },
		{ "B", 1 },
		{ "K", 1024.0 },
		{ "KB", 1024.0 },
		{ "KiB", 1024.0 },
		{ "M", 1048576.0 },
		{ "MB", 1048576.0 },
		{ "MiB", 1048576.0 },
		{ "G", 1073741824.0 },
		{ "GB", 1073741824.0 },
		{ "GiB", 1073741824.0 },
		{ "T", 1099511627776.0 },
		{ "TB", 1099511627776.0 },
		{ "TiB", 1099511627776.0 },
	};
	const char *suffix;
	double v;
	int r;

	r = parse_number_suffix(s, &v, &suffix);
	if (r < 0)
		return r;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		double bytes;

		if (strcasecmp(suffix, units[i].suffix) != 0)
			continue;
		bytes = v * units[i].mult;
		if (bytes >= 18446744073709551616.0)
			return -ERANGE;
		if (bytes != floor(bytes) && units[i].mult == 1)
			return -EINVAL;
		*ret = (uint64_t)bytes;
		return 0;
	}
	return -EINVAL;
}

int parse_duration(const char *s, double *ret_seconds)
{
	static const struct {
		const char *suffix;
		double mult;
	} units[] = {
		{ "", 1 }, { "s", 1 }, { "ms", 0.001 }, { "m", 60 }, { "h", 3600 },
	};
	const char *suffix;
	double v;
	int r;

	r = parse_number_suffix(s, &v, &suffix);
	if (r < 0)
		return r;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(suffix, units[i].suffix) != 0)
			continue;
		v *= units[i].mult;
		if (v <= 0)
			return -EINVAL;
		if (v > 31536000.0) /* a year: anything longer is a typo */
			return -ERANGE;
		*ret_seconds = v;
		return 0;
	}
	return -EINVAL;
}
