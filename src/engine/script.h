/* The script at its path (see script.c). */
#ifndef CODECELL_ENGINE_SCRIPT_H
#define CODECELL_ENGINE_SCRIPT_H

#include <stdbool.h>
#include <stddef.h>

struct run_result;
struct ws_owner;

/* Write code as workspace file name (a plain name) owned by o.  A file
 * already there with the same text is taken as it is.  0 (*created says
 * whether this call made it), -EEXIST (a different file has the name),
 * or -errno. */
int script_place(int wsfd, const char *name, const char *code, size_t len, const struct ws_owner *o,
		 bool *created);
void script_remove(int wsfd, const char *name);
/* The uncaught exception at the end of Python's stderr s, as r's error
 * (name, value, traceback); nothing when there is none or r has one. */
void script_python_error(const char *s, size_t len, struct run_result *r);
bool script_python_efbig(const struct run_result *r);

#endif
