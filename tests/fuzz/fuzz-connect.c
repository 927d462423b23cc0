/* libFuzzer target: the Connect envelope parser of the E2B door
 * (src/e2b/connect.c), which reads process.Process/Start's request body
 * as the client sent it.  A body it accepts must be exactly one
 * uncompressed, non-final envelope whose message lies inside the body
 * and under the cap; the header written back for that message must be
 * the bytes it came with.  A body it refuses says why and hands out
 * nothing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "e2b/connect.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one(const uint8_t *data, size_t size, size_t max)
{
	const unsigned char *msg = (const unsigned char *)"x";
	const char *why = NULL;
	unsigned char h[CONNECT_HEADER_LEN];
	size_t len = 7;

	if (connect_unwrap(data, size, max, &msg, &len, &why) < 0) {
		if (!why || msg || len)
			abort();
		return;
	}
	if (size < CONNECT_HEADER_LEN || msg != data + CONNECT_HEADER_LEN ||
	    len != size - CONNECT_HEADER_LEN || len > max || data[0] != 0)
		abort();
	connect_header(h, 0, (uint32_t)len);
	if (memcmp(h, data, sizeof(h)) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* the door's cap, none to speak of, and a tight one */
	one(data, size, 64u << 10);
	one(data, size, SIZE_MAX);
	one(data, size, size > 8 ? size - 8 : 0);
	return 0;
}
