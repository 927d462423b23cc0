#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include "util/banned.h"

static void log_v(const char *level, const char *fmt, va_list ap)
{
	fprintf(stderr, "codecell: %s: ", level);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

int log_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_v("error", fmt, ap);
	va_end(ap);
	return -1;
}

void log_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_v("warning", fmt, ap);
	va_end(ap);
}
