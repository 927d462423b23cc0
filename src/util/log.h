/* Messages for the person at the terminal.  Only the top tier (cli/)
 * prints; library tiers return -errno and let the caller decide. */
#ifndef CODECELL_UTIL_LOG_H
#define CODECELL_UTIL_LOG_H

/* "codecell: error: <message>" on stderr.  Returns -1 for convenience. */
int log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
