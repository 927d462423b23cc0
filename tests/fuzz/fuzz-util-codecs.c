/* libFuzzer target: util's decoders of client bytes, each once in the
 * tree (base64, percent-decoding, UTF-8, variable names, the JSON body
 * reader).  Besides not crashing, each keeps its contract: what base64
 * decodes encodes back to text that decodes the same; a repair is valid
 * UTF-8 and leaves valid text as it was; decoding in place is decoding
 * into another buffer; an identifier is a name under the looser rule too;
 * a body the reader takes has no key twice (jansson agrees). */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/base64.h"
#include "util/buf.h"
#include "util/envname.h"
#include "util/json.h"
#include "util/percent.h"
#include "util/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void base64(const char *s, size_t n)
{
	struct buf a, b;
	char *enc;

	buf_init(&a, 1 << 20);
	if (base64_decode(s, n, &a) == 0) {
		enc = base64_encode(a.data ? a.data : "", a.len);
		assert(enc && strlen(enc) == n);
		buf_init(&b, 1 << 20);
		assert(base64_decode(enc, strlen(enc), &b) == 0);
		assert(a.len == b.len && (!a.len || !memcmp(a.data, b.data, a.len)));
		buf_release(&b);
		free(enc);
	}
	buf_release(&a);
	enc = base64_encode(s, n);
	assert(enc);
	buf_init(&a, n + 1);
	assert(base64_decode(enc, strlen(enc), &a) == 0 && a.len == n &&
	       (!n || !memcmp(a.data, s, n)));
	buf_release(&a);
	free(enc);
}

static void utf8(const char *s, size_t n)
{
	size_t len, keep = utf8_complete_len(s, n);
	char *t = utf8_repair(s, n, &len);

	assert(keep <= n && n - keep <= 3);
	assert(t && utf8_valid(t, len, NULL));
	if (utf8_valid(s, n, NULL))
		assert(len == n && !memcmp(t, s, n));
	free(t);
}

static void percent(const char *s, size_t n, unsigned flags)
{
	char *out = malloc(n + 1), *in = malloc(n + 1);
	size_t a = 0, b = 0;
	int r1 = percent_decode(s, n, flags, out, n + 1, &a), r2;

	memcpy(in, s, n);
	in[n] = '\0';
	r2 = percent_decode(in, n, flags, in, n + 1, &b);
	assert(r1 == r2);
	if (r1 == 0)
		assert(a == b && a <= n && !memcmp(out, in, a) && out[a] == '\0');
	if (flags & (PERCENT_LENIENT | PERCENT_FORM_NAME))
		assert(r1 == 0);
	free(out);
	free(in);
}

static void json(const char *s, size_t n)
{
	struct json_body_error err;
	json_t *j = NULL;

	if (json_body_read(s, n, JSON_BODY_ANY_VALUE | JSON_BODY_ALLOW_NUL, &j, &err) == 0) {
		json_t *k = json_loadb(
			s, n, JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, NULL);

		assert(k);
		json_decref(k);
		json_decref(j);
	} else {
		assert(err.problem >= JSON_BODY_EMPTY && err.problem <= JSON_BODY_NOMEM &&
		       err.message[0]);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data + 1;
	size_t n = size ? size - 1 : 0;

	if (size < 1)
		return 0;
	switch (data[0] % 5) {
	case 0:
		base64(s, n);
		break;
	case 1:
		utf8(s, n);
		break;
	case 2:
		percent(s, n, data[0] >> 3 & 7);
		break;
	case 3:
		if (env_name_check(s, n, ENV_NAME_IDENTIFIER) == 0)
			assert(env_name_check(s, n, ENV_NAME_ANY) == 0);
		break;
	default:
		json(s, n);
		break;
	}
	return 0;
}
