/* libmicrohttpd, loaded when the server starts rather than linked.  It
 * brings gnutls and a dozen more libraries with it: linked, every
 * `codecell run` paid for loading them (about 2.5 ms) and for the page
 * tables each clone() then copies (about as much again).  The few MHD
 * functions the server calls are defined here, with the header's
 * prototypes, and forward to the library's. */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <microhttpd.h>

#include "http/mhd.h"
#include "util/banned.h"

#define MHD_LIBRARY "libmicrohttpd.so.12"

static struct {
	struct MHD_Daemon *(*start_daemon_va)(unsigned int, uint16_t, MHD_AcceptPolicyCallback,
					      void *, MHD_AccessHandlerCallback, void *, va_list);
	void (*stop_daemon)(struct MHD_Daemon *);
	MHD_socket (*quiesce_daemon)(struct MHD_Daemon *);
	const union MHD_DaemonInfo *(*get_daemon_info)(struct MHD_Daemon *, enum MHD_DaemonInfoType,
						       ...);
	const union MHD_ConnectionInfo *(*get_connection_info)(struct MHD_Connection *,
							       enum MHD_ConnectionInfoType, ...);
	const char *(*lookup_connection_value)(struct MHD_Connection *, enum MHD_ValueKind,
					       const char *);
	int (*get_connection_values)(struct MHD_Connection *, enum MHD_ValueKind,
				     MHD_KeyValueIterator, void *);
	enum MHD_Result (*queue_response)(struct MHD_Connection *, unsigned int,
					  struct MHD_Response *);
	struct MHD_Response *(*create_response_from_buffer)(size_t, void *,
							    enum MHD_ResponseMemoryMode);
	struct MHD_Response *(*create_response_from_callback)(uint64_t, size_t,
							      MHD_ContentReaderCallback, void *,
							      MHD_ContentReaderFreeCallback);
	enum MHD_Result (*add_response_header)(struct MHD_Response *, const char *, const char *);
	void (*destroy_response)(struct MHD_Response *);
} mhd;

int api_mhd_load(char **ret_error)
{
	static const char *const names[] = {
		"MHD_start_daemon_va",
		"MHD_stop_daemon",
		"MHD_quiesce_daemon",
		"MHD_get_daemon_info",
		"MHD_get_connection_info",
		"MHD_lookup_connection_value",
		"MHD_get_connection_values",
		"MHD_queue_response",
		"MHD_create_response_from_buffer",
		"MHD_create_response_from_callback",
		"MHD_add_response_header",
		"MHD_destroy_response",
	};
	void **slots = (void **)&mhd;
	void *lib;

	*ret_error = NULL;
	if (mhd.start_daemon_va)
		return 0;
	lib = dlopen(MHD_LIBRARY, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		if (asprintf(ret_error, "cannot load %s (%s): install Debian's libmicrohttpd12",
			     MHD_LIBRARY, dlerror()) < 0)
			*ret_error = NULL;
		return -ENOENT;
	}
	_Static_assert(sizeof(mhd) == sizeof(names) / sizeof(names[0]) * sizeof(void *),
		       "one name per slot");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		slots[i] = dlsym(lib, names[i]);
		if (!slots[i]) {
			if (asprintf(ret_error, "%s has no %s: it is too old", MHD_LIBRARY,
				     names[i]) < 0)
				*ret_error = NULL;
			memset(&mhd, 0, sizeof(mhd));
			return -ENOENT;
		}
	}
	return 0;
}

struct MHD_Daemon *MHD_start_daemon(unsigned int flags, uint16_t port, MHD_AcceptPolicyCallback apc,
				    void *apc_cls, MHD_AccessHandlerCallback dh, void *dh_cls, ...)
{
	struct MHD_Daemon *d;
	va_list ap;

	va_start(ap, dh_cls);
	d = mhd.start_daemon_va(flags, port, apc, apc_cls, dh, dh_cls, ap);
	va_end(ap);
	return d;
}

void MHD_stop_daemon(struct MHD_Daemon *daemon)
{
	mhd.stop_daemon(daemon);
}

MHD_socket MHD_quiesce_daemon(struct MHD_Daemon *daemon)
{
	return mhd.quiesce_daemon(daemon);
}

/* Only info types without further arguments are asked for. */
const union MHD_DaemonInfo *MHD_get_daemon_info(struct MHD_Daemon *daemon,
						enum MHD_DaemonInfoType info_type, ...)
{
	return mhd.get_daemon_info(daemon, info_type);
}

const union MHD_ConnectionInfo *MHD_get_connection_info(struct MHD_Connection *connection,
							enum MHD_ConnectionInfoType info_type, ...)
{
	return mhd.get_connection_info(connection, info_type);
}

const char *MHD_lookup_connection_value(struct MHD_Connection *connection, enum MHD_ValueKind kind,
					const char *key)
{
	return mhd.lookup_connection_value(connection, kind, key);
}

int MHD_get_connection_values(struct MHD_Connection *connection, enum MHD_ValueKind kind,
			      MHD_KeyValueIterator iterator, void *iterator_cls)
{
	return mhd.get_connection_values(connection, kind, iterator, iterator_cls);
}

enum MHD_Result MHD_queue_response(struct MHD_Connection *connection, unsigned int status_code,
				   struct MHD_Response *response)
{
	return mhd.queue_response(connection, status_code, response);
}

struct MHD_Response *MHD_create_response_from_buffer(size_t size, void *buffer,
						     enum MHD_ResponseMemoryMode mode)
{
	return mhd.create_response_from_buffer(size, buffer, mode);
}

struct MHD_Response *MHD_create_response_from_callback(uint64_t size, size_t block_size,
						       MHD_ContentReaderCallback crc, void *crc_cls,
						       MHD_ContentReaderFreeCallback crfc)
{
	return mhd.create_response_from_callback(size, block_size, crc, crc_cls, crfc);
}

enum MHD_Result MHD_add_response_header(struct MHD_Response *response, const char *header,
					const char *content)
{
	return mhd.add_response_header(response, header, content);
}

void MHD_destroy_response(struct MHD_Response *response)
{
	mhd.destroy_response(response);
}
