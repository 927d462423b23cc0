/* libFuzzer target: the E2B door's hand parsers of client bytes
 * (src/e2b/parse.c, and e2b.c's query decoding, which is
 * util/percent.h's strict variant): a multipart Content-Type's boundary,
 * a part's file name, the ?metadata= filter's form pairs, a query value.
 * The first byte picks one, the rest is its input.  Besides not crashing:
 * a delimiter is "\r\n--" and the boundary, within the cap; a file name
 * or a query value decodes to no more bytes than it came in; a metadata
 * filter of pairs that are all in the object matches it. */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "e2b/internal.h"
#include "util/percent.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void delim(const char *s)
{
	char out[E2B_BOUNDARY_MAX + 8];
	size_t len = 0;
	int k = e2b_multipart_delim(s, out, sizeof(out), &len);

	assert(k >= -EINVAL && k <= 1);
	if (k == 1) {
		assert(len == strlen(out) && len > 4 && len <= E2B_BOUNDARY_MAX + 4);
		assert(!memcmp(out, "\r\n--", 4));
		assert(!strpbrk(out + 4, "\";"));
	}
}

static void filename(const char *s, size_t n)
{
	static const size_t sizes[] = { 1, 8, API_PATH_MAX + 64 };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		char *out = malloc(sizes[i]);
		int r = e2b_part_filename(s, out, sizes[i]);

		assert(r == 0 || r == -ENOENT || r == -ENAMETOOLONG || r == -EINVAL);
		if (r == 0)
			assert(strlen(out) < sizes[i] && strlen(out) <= n);
		free(out);
	}
}

/* the metadata object is the pairs themselves, decoded as the door
 * decodes them: the filter must match it */
static void metadata(const char *s)
{
	json_t *meta = json_object();

	(void)e2b_metadata_matches(meta, s);
	if (!strchr(s, '&') && strchr(s, '=') && strlen(s) < 2047) {
		char *pair = strdup(s), *eq = strchr(pair, '=');

		*eq = '\0';
		for (int i = 0; i < 2; i++) {
			(void)percent_decode(pair, strlen(pair),
					     PERCENT_PLUS_SPACE | PERCENT_LENIENT, pair,
					     strlen(pair) + 1, NULL);
			(void)percent_decode(eq + 1, strlen(eq + 1),
					     PERCENT_PLUS_SPACE | PERCENT_LENIENT, eq + 1,
					     strlen(eq + 1) + 1, NULL);
		}
		json_object_set_new(meta, pair, json_string(eq + 1));
		if (json_object_get(meta, pair) && json_is_string(json_object_get(meta, pair)))
			assert(e2b_metadata_matches(meta, s));
		free(pair);
	}
	json_decref(meta);
}

static void query(const char *s, size_t n)
{
	char out[256];
	size_t len = 0;
	int r = percent_decode(s, n, 0, out, sizeof(out), &len);

	assert(r == 0 || r == -EINVAL || r == -EILSEQ || r == -ENOBUFS);
	if (r == 0)
		assert(len <= n && len < sizeof(out) && !memchr(out, '\0', len) &&
		       out[len] == '\0');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;

	if (size < 1)
		return 0;
	s = malloc(size);
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	switch (data[0] & 3) {
	case 0:
		delim(s);
		break;
	case 1:
		filename(s, strlen(s));
		break;
	case 2:
		metadata(s);
		break;
	default:
		query(s, strlen(s));
		break;
	}
	free(s);
	return 0;
}
