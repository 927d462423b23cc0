/* session/events: a kernel's event stream read as untrusted input (lines
 * with a cap, a cap on JSON values, counted drops) and the per-execution
 * result budget. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "session/events.h"

struct seen {
	int n;
	char types[8][16];
	size_t costs[8];
};

static void collect(void *userdata, json_t *ev, size_t cost)
{
	struct seen *s = userdata;
	const char *t = json_string_value(json_object_get(ev, "type"));

	if (s->n < 8) {
		snprintf(s->types[s->n], sizeof(s->types[0]), "%s", t ? t : "?");
		s->costs[s->n] = cost;
	}
	s->n++;
}

static void feed(struct event_reader *r, const char *text, struct seen *s)
{
	event_reader_feed(r, text, strlen(text), collect, s);
}

static void lines_split_across_reads_are_joined(void **state)
{
	struct event_reader r;
	struct seen s = { 0 };

	(void)state;
	event_reader_init(&r, 1024);
	feed(&r, "{\"type\":\"disp", &s);
	assert_int_equal(s.n, 0);
	feed(&r, "lay\"}\n{\"type\":\"done\"}\n{\"ty", &s);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.types[0], "display");
	assert_string_equal(s.types[1], "done");
	/* cost: the line's bytes plus EVENT_VALUE_COST per value (the object
	 * and its member) */
	assert_int_equal(s.costs[1], strlen("{\"type\":\"done\"}") + 2 * EVENT_VALUE_COST);
	feed(&r, "pe\":\"x\"}\n", &s);
	assert_int_equal(s.n, 3);
	assert_int_equal(r.bad_lines + r.long_lines, 0);
	event_reader_release(&r);
}

static void a_line_over_the_cap_is_skipped_not_buffered(void **state)
{
	struct event_reader r;
	struct seen s = { 0 };
	char big[300];

	(void)state;
	event_reader_init(&r, 64);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	feed(&r, "{\"type\":\"display\",\"data\":\"", &s);
	for (int i = 0; i < 10; i++) {
		feed(&r, big, &s);
		assert_true(r.line.len <= 64);
	}
	feed(&r, "\"}\n{\"type\":\"done\"}\n", &s);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.types[0], "done");
	assert_int_equal(r.long_lines, 1);
	assert_true(r.long_bytes > 10 * 299);
	event_reader_release(&r);
}

static void lines_that_are_not_objects_are_counted(void **state)
{
	struct event_reader r;
	struct seen s = { 0 };

	(void)state;
	event_reader_init(&r, 1024);
	feed(&r, "not json\n[1,2]\n\n{\"type\":\"done\"} trailing\n{\"type\":\"done\"}\n", &s);
	assert_int_equal(s.n, 1);
	assert_int_equal(r.bad_lines, 4);
	event_reader_clear_counts(&r);
	assert_int_equal(r.bad_lines, 0);
	event_reader_release(&r);
}

static void a_line_of_too_many_values_is_dropped_unparsed(void **state)
{
	struct event_reader r;
	struct seen s = { 0 };
	size_t n = 2 * EVENT_MAX_VALUES;
	char *line = malloc(2 * n + 64);
	size_t off;

	(void)state;
	assert_non_null(line);
	off = (size_t)snprintf(line, 64, "{\"type\":\"display\",\"data\":{\"v\":[");
	for (size_t i = 0; i < n; i++) {
		line[off++] = '0';
		line[off++] = ',';
	}
	memcpy(line + off - 1, "]}}\n", 5);
	event_reader_init(&r, 1 << 20);
	feed(&r, line, &s);
	assert_int_equal(s.n, 0);
	assert_int_equal(r.long_lines, 1);
	/* commas and brackets inside strings are text, not values */
	feed(&r, "{\"type\":\"display\",\"data\":{\"t\":\"[,[,{,\\\",\"}}\n", &s);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.costs[0],
			 strlen("{\"type\":\"display\",\"data\":{\"t\":\"[,[,{,\\\",\"}}") +
				 4 * EVENT_VALUE_COST);
	free(line);
	event_reader_release(&r);
}

static void the_budget_keeps_what_fits_and_counts_the_rest(void **state)
{
	struct result_budget b;
	json_t *m;

	(void)state;
	result_budget_init(&b, 100);
	assert_null(result_budget_marker(&b));
	assert_true(result_budget_take(&b, 60));
	assert_false(result_budget_take(&b, 60));
	assert_true(result_budget_take(&b, 40));
	assert_false(result_budget_take(&b, 1));
	result_budget_drop(&b, 2, 1000);
	assert_int_equal(b.used, 100);
	assert_int_equal(b.dropped, 4);
	assert_int_equal(b.dropped_bytes, 1061);
	m = result_budget_marker(&b);
	assert_string_equal(
		json_string_value(json_object_get(m, "text/plain")),
		"[... 4 results (1061 bytes) dropped: over the result limit of 100 bytes ...]");
	assert_true(json_is_false(json_object_get(m, "is_main_result")));
	json_decref(m);
}

static void a_bundle_is_taken_from_its_event(void **state)
{
	json_t *ev = json_loads("{\"type\":\"result\",\"data\":{\"text/plain\":\"42\"}}", 0, NULL);
	json_t *b;

	(void)state;
	b = event_bundle(ev, true);
	assert_non_null(b);
	assert_string_equal(json_string_value(json_object_get(b, "text/plain")), "42");
	assert_true(json_is_true(json_object_get(b, "is_main_result")));
	assert_null(json_object_get(ev, "data"));
	json_decref(b);
	json_decref(ev);
	ev = json_loads("{\"type\":\"display\",\"data\":[1]}", 0, NULL);
	assert_null(event_bundle(ev, false));
	json_decref(ev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lines_split_across_reads_are_joined),
		cmocka_unit_test(a_line_over_the_cap_is_skipped_not_buffered),
		cmocka_unit_test(lines_that_are_not_objects_are_counted),
		cmocka_unit_test(a_line_of_too_many_values_is_dropped_unparsed),
		cmocka_unit_test(the_budget_keeps_what_fits_and_counts_the_rest),
		cmocka_unit_test(a_bundle_is_taken_from_its_event),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
