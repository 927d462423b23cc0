/* libFuzzer target: what the sandboxed code can put on the report channel
 * (fd 4) and in its output, through the parser and into the result
 * object.  The object must always serialize. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct run_result r = { 0 };
	json_t *j;
	char *s;

	engine_parse_report((const char *)data, size, &r);
	/* the same bytes as program output: UTF-8 repair must hold */
	r.out = malloc(size + 1);
	if (!r.out)
		return 0;
	memcpy(r.out, data, size);
	r.out[size] = '\0';
	r.out_len = size;
	j = run_result_to_json(&r);
	s = json_dumps(j, JSON_COMPACT);
	if (!s)
		abort(); /* the result object must always serialize */
	free(s);
	json_decref(j);
	run_result_release(&r);
	return 0;
}
