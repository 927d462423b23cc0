/* http/mhd.h: libmicrohttpd, loaded when the server starts (mhd.c). */
#ifndef CODECELL_HTTP_MHD_H
#define CODECELL_HTTP_MHD_H

/* Load libmicrohttpd, once, before any MHD call.  0, or -errno and a
 * message in *ret_error (free()). */
int api_mhd_load(char **ret_error);

#endif
