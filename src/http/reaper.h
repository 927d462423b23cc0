/* http/reaper.h: the server's thread of once-a-second chores
 * (reaper.c). */
#ifndef CODECELL_HTTP_REAPER_H
#define CODECELL_HTTP_REAPER_H

/* The thread's body; arg is the server.  Returns when it stops. */
void *api_reaper_main(void *arg);

#endif
