/* Connect's envelope: one message in, headers out (connect.h). */
#include "e2b/connect.h"

#include <errno.h>

#include "util/banned.h"

int connect_unwrap(const unsigned char *body, size_t len, size_t max, const unsigned char **ret_msg,
		   size_t *ret_len, const char **ret_why)
{
	uint32_t n;

	*ret_msg = NULL;
	*ret_len = 0;
	if (len < CONNECT_HEADER_LEN) {
		*ret_why = "the body is shorter than a Connect envelope's 5-byte header";
		return -EINVAL;
	}
	if (body[0] & CONNECT_FLAG_COMPRESSED) {
		*ret_why = "compressed Connect messages are not supported: send them uncompressed";
		return -EINVAL;
	}
	if (body[0] & CONNECT_FLAG_END) {
		*ret_why = "the request's envelope has the end-of-stream flag";
		return -EINVAL;
	}
	if (body[0]) {
		*ret_why = "unknown flags in the Connect envelope";
		return -EINVAL;
	}
	n = (uint32_t)body[1] << 24 | (uint32_t)body[2] << 16 | (uint32_t)body[3] << 8 | body[4];
	if (n > max) {
		*ret_why = "the Connect message is over the size limit";
		return -EINVAL;
	}
	if (n > len - CONNECT_HEADER_LEN) {
		*ret_why = "the Connect message is cut short (its length is over the body's)";
		return -EINVAL;
	}
	if (n < len - CONNECT_HEADER_LEN) {
		*ret_why = "bytes after the Connect message: a server-streaming request has one";
		return -EINVAL;
	}
	*ret_msg = body + CONNECT_HEADER_LEN;
	*ret_len = n;
	return 0;
}

void connect_header(unsigned char out[CONNECT_HEADER_LEN], unsigned flags, uint32_t len)
{
	out[0] = (unsigned char)flags;
	out[1] = (unsigned char)(len >> 24);
	out[2] = (unsigned char)(len >> 16);
	out[3] = (unsigned char)(len >> 8);
	out[4] = (unsigned char)len;
}
