/* The doors' parsers of client bytes, without a server: the /v1 router's
 * path decoding, its body reader, and the E2B door's form parsers
 * (e2b/parse.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "e2b/internal.h"
#include "http/request.h"
#include "http/route.h"
#include "api/route.h"

static void route_decodes_paths_strictly(void **state)
{
	struct api_route r;
	struct api_error e;
	static const char *const bad[] = { "/v1/sessions/%zz", "/v1/sessions/a%",
					   "/v1/sessions/a%4", "/v1/ex%00ecute" };

	(void)state;
	assert_int_equal(api_route_parse("/v1/ex%65cute?x=%zz", &r, &e), 0);
	assert_int_equal(r.id, API_R_EXECUTE);
	assert_int_equal(
		api_route_parse("/v1/sessions/0123456789abcdef0123456789abcdef/files/a%20b%2Bc", &r,
				&e),
		0);
	assert_string_equal(r.path, "a b+c");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(api_route_parse(bad[i], &r, &e), -EINVAL);
		assert_int_equal(e.http, 400);
		assert_string_equal(e.code, "bad_url");
	}
	assert_non_null(strstr((api_route_parse("/v1/a%00", &r, &e), e.message), "NUL"));
}

static void request_bodies_refuse_a_key_twice(void **state)
{
	static const char *const dup[] = {
		"{\"code\": \"1\", \"code\": \"2\"}",
		"{\"code\": \"1\", \"env\": {\"A\": \"1\", \"A\": \"2\"}}",
		"{\"code\": \"1\", \"limits\": {\"memory\": \"1G\", \"memory\": \"8G\"}}",
	};
	struct api_request r;
	struct api_error e;

	(void)state;
	for (size_t i = 0; i < sizeof(dup) / sizeof(dup[0]); i++) {
		assert_int_equal(
			api_request_parse(API_BODY_EXECUTE, dup[i], strlen(dup[i]), &r, &e),
			-EINVAL);
		assert_int_equal(e.http, 400);
		assert_string_equal(e.code, "bad_json");
		assert_non_null(strstr(e.message, "send each key once"));
	}
	assert_int_equal(api_request_parse(API_BODY_EXECUTE, "{\"code\": \"\xff\"}", 13, &r, &e),
			 -EINVAL);
	assert_string_equal(e.code, "invalid_utf8");
	assert_int_equal(api_request_parse(API_BODY_EXECUTE, "{\"code\": \"1\"}", 13, &r, &e), 0);
	api_request_release(&r);
}

static void e2b_multipart_boundary(void **state)
{
	char d[E2B_BOUNDARY_MAX + 8], big[E2B_BOUNDARY_MAX + 64];
	size_t len = 0;

	(void)state;
	assert_int_equal(
		e2b_multipart_delim("multipart/form-data; boundary=abc", d, sizeof(d), &len), 1);
	assert_string_equal(d, "\r\n--abc");
	assert_int_equal(len, 7);
	assert_int_equal(e2b_multipart_delim("Multipart/Form-Data; BOUNDARY=\"q r\"; x=1", d,
					     sizeof(d), &len),
			 1);
	assert_string_equal(d, "\r\n--q r");
	assert_int_equal(e2b_multipart_delim("application/octet-stream", d, sizeof(d), &len), 0);
	assert_int_equal(e2b_multipart_delim("multipart/form-data", d, sizeof(d), &len), 0);
	assert_int_equal(e2b_multipart_delim(NULL, d, sizeof(d), &len), 0);
	assert_int_equal(e2b_multipart_delim("multipart/form-data; boundary=", d, sizeof(d), &len),
			 -EINVAL);
	snprintf(big, sizeof(big), "multipart/form-data; boundary=%0*d", E2B_BOUNDARY_MAX + 1, 0);
	assert_int_equal(e2b_multipart_delim(big, d, sizeof(d), &len), -EINVAL);
}

static void e2b_part_file_names(void **state)
{
	char out[64], tiny[4];

	(void)state;
	assert_int_equal(e2b_part_filename("Content-Disposition: form-data; name=\"file\"; "
					   "filename=\"a%22b%0d%0A%41%25.txt\"",
					   out, sizeof(out)),
			 0);
	/* FormData escapes only ", CR and LF: %41 and %25 are themselves */
	assert_string_equal(out, "a\"b\r\n%41%25.txt");
	assert_int_equal(e2b_part_filename("name=\"file\"", out, sizeof(out)), -ENOENT);
	assert_int_equal(e2b_part_filename("filename=\"cut", out, sizeof(out)), -EINVAL);
	assert_int_equal(e2b_part_filename("filename=\"long.txt\"", tiny, sizeof(tiny)),
			 -ENAMETOOLONG);
}

static void e2b_metadata_filters(void **state)
{
	json_t *meta = json_pack("{s:s, s:s}", "user", "a b+c", "k=1", "v&w");

	(void)state;
	/* the SDK encodes each key and value, then URLSearchParams the pairs */
	assert_true(e2b_metadata_matches(meta, "user=a%2520b%252Bc"));
	assert_true(e2b_metadata_matches(meta, "user=a%2520b%252Bc&k%253D1=v%2526w"));
	assert_true(e2b_metadata_matches(meta, ""));
	assert_false(e2b_metadata_matches(meta, "user=a+b"));
	assert_false(e2b_metadata_matches(meta, "user"));
	assert_false(e2b_metadata_matches(meta, "other=1"));
	json_decref(meta);
	/* a pair longer than the parser holds is no match, not its head's */
	{
		char q[4096];
		json_t *m = json_object();

		memset(q, 'x', sizeof(q) - 1);
		q[sizeof(q) - 1] = '\0';
		q[0] = 'k';
		q[1] = '=';
		json_object_set_new(m, "k", json_stringn(q + 2, 2045));
		assert_false(e2b_metadata_matches(m, q));
		json_decref(m);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(route_decodes_paths_strictly),
		cmocka_unit_test(request_bodies_refuse_a_key_twice),
		cmocka_unit_test(e2b_multipart_boundary),
		cmocka_unit_test(e2b_part_file_names),
		cmocka_unit_test(e2b_metadata_filters),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
