/* libFuzzer target: what `codecell agent` does with a model's reply text
 * (src/agent/extract.c: tags, fences) and with long output
 * (engine/result_text.c: the head-and-tail cut).  Both read bytes from
 * outside: the model's reply, the sandboxed program's output.
 *
 * The first byte picks the language and the cut's size; the rest is the
 * reply.  Checked: extraction returns 0 or -E2BIG; code, when found, is
 * not empty and no longer than the reply; a cut reply has no code; the
 * cut of valid UTF-8 stays valid UTF-8 and near its size. */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/agent/extract.c"
#include "engine/result_text.h"
#include "util/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const langs[] = { "python", "javascript", "bash" };
	const char *text = (const char *)data + 1;
	struct agent_code c;
	size_t n = size - 1, max;
	uint64_t bad;
	struct buf b;
	int r;

	if (size < 1)
		return 0;
	r = agent_extract(text, n, langs[data[0] % 3], &c);
	assert(r == 0 || r == -E2BIG);
	if (r == 0 && c.code) {
		assert(*c.code);
		assert(strlen(c.code) <= n);
		assert(!c.cut);
	}
	agent_code_release(&c);
	if (utf8_valid(text, n, &bad)) {
		max = 64 + (size_t)data[0] * 16;
		buf_init(&b, 1u << 20);
		assert(text_head_tail(text, n, max, &b) == 0);
		assert(utf8_valid(b.data ? b.data : "", b.len, &bad));
		assert(b.len <= (n < max ? n : max + 16));
		buf_release(&b);
	}
	return 0;
}
