/* e2b/connect: the envelope of Connect's streaming protocol
 * (https://connectrpc.com/docs/protocol): each message is
 * [flags: 1 byte][length: 4 bytes, big-endian][length bytes].  Flag 0x01:
 * compressed; 0x02: the end of the stream (its message is JSON with an
 * optional "error" and "metadata").  Pure, no I/O; fuzzed by
 * tests/fuzz/fuzz-connect.c. */
#ifndef CODECELL_E2B_CONNECT_H
#define CODECELL_E2B_CONNECT_H

#include <stddef.h>
#include <stdint.h>

#define CONNECT_FLAG_COMPRESSED 0x01u
#define CONNECT_FLAG_END 0x02u
#define CONNECT_HEADER_LEN 5

/* The one message of a server-streaming request body: body[0..len) must
 * be exactly one envelope, flags 0 (not compressed, not an end), its
 * message at most max bytes.  0 with *ret_msg (into body) and *ret_len,
 * or -EINVAL with *ret_why a static message: too short, cut short,
 * compressed, an end-of-stream flag, unknown flags, over max, bytes
 * after it. */
int connect_unwrap(const unsigned char *body, size_t len, size_t max, const unsigned char **ret_msg,
		   size_t *ret_len, const char **ret_why);

/* The 5-byte header of a message of len bytes. */
void connect_header(unsigned char out[CONNECT_HEADER_LEN], unsigned flags, uint32_t len);

#endif
