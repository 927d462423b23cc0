/* What the policy's parser and its keys share: an error with the line
 * it is on, a value without its blanks, a comma list word by word.
 * Below both policy_parse.c and policy_keys.c, which call each other's
 * entry points only through policy_parse.h. */
#include "engine/policy_parse.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/banned.h"

int policy_fail(struct parser *p, const char *fmt, ...)
{
	int k = snprintf(p->err, p->n, "line %d: ", p->line);
	va_list ap;

	if (k < 0 || (size_t)k >= p->n)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(p->err + k, p->n - (size_t)k, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

char *policy_trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

/* Comma-separated words, each handed to fn; empty items are errors. */
int policy_each_word(struct parser *p, char *v, const char *key,
		     int (*fn)(struct parser *p, const char *word))
{
	char *save = NULL;

	if (!*v)
		return policy_fail(p, "'%s' has no value", key);
	for (char *w = strtok_r(v, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		w = policy_trim(w);
		if (!*w)
			return policy_fail(p, "'%s': an empty item", key);
		if (fn(p, w) < 0)
			return -EINVAL;
	}
	return 0;
}
