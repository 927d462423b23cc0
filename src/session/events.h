/* events: a kernel's event stream (its fd 4), read as untrusted input.
 *
 * The cell's own code can write to that pipe, so every line may be
 * forged: lines are split with a cap on each (a longer one is skipped to
 * its newline, counted, never buffered), parsed, and the results they
 * carry are counted against a per-execution byte budget (the session's
 * result_limit); what does not fit is dropped and counted, and the result
 * says so with a marker.  Pure: no I/O, no sandbox (tests/fuzz/fuzz-events.c). */
#ifndef CODECELL_SESSION_EVENTS_H
#define CODECELL_SESSION_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "util/buf.h"

struct event_reader {
	struct buf line;   /* the partial line; its cap is the line cap */
	bool skipping;	   /* inside a line over the cap: drop to its newline */
	uint64_t skip_len; /* bytes of that line so far */
	/* since the last event_reader_clear_counts() */
	unsigned long_lines; /* lines dropped for their length or values */
	uint64_t long_bytes; /* their bytes */
	unsigned bad_lines;  /* lines that were not a JSON object */
};

/* A line with more JSON values than this is dropped unparsed (counted
 * with the long lines); what is kept costs its length plus
 * EVENT_VALUE_COST per value, about what the parsed tree takes. */
#define EVENT_MAX_VALUES 4096
#define EVENT_VALUE_COST 256

/* Called with each complete line that is a JSON object: ev is borrowed
 * (the callee may change it, or take a reference); cost is the line's
 * length plus EVENT_VALUE_COST per JSON value in it. */
typedef void (*event_fn)(void *userdata, json_t *ev, size_t cost);

void event_reader_init(struct event_reader *r, size_t line_max);
/* A new line cap (per exchange).  A partial line already longer than it
 * is skipped to its end. */
void event_reader_set_max(struct event_reader *r, size_t line_max);
void event_reader_clear_counts(struct event_reader *r);
/* Forget a partial line (the kernel was replaced); keep the cap. */
void event_reader_reset(struct event_reader *r);
/* Give back the line buffer's memory if it grew past keep bytes (an idle
 * session should not hold the largest line it ever saw). */
void event_reader_trim(struct event_reader *r, size_t keep);
void event_reader_release(struct event_reader *r);
/* Split data into lines, parse each, call fn for each object.  Never
 * fails: a line that cannot be kept is counted. */
void event_reader_feed(struct event_reader *r, const char *data, size_t n, event_fn fn,
		       void *userdata);

/* The results of one execution, capped in bytes (the event lines that
 * carried them, as the kernel wrote them). */
struct result_budget {
	uint64_t limit, used;
	unsigned dropped;	/* results not kept */
	uint64_t dropped_bytes; /* their bytes */
};

void result_budget_init(struct result_budget *b, uint64_t limit);
/* Does a result of cost bytes fit?  Counted either way. */
bool result_budget_take(struct result_budget *b, uint64_t cost);
/* Count lines dropped before they could be parsed (too long). */
void result_budget_drop(struct result_budget *b, unsigned lines, uint64_t bytes);
/* The bundle that ends results[] when some were dropped:
 * {"text/plain": "[... N results (B bytes) dropped: over the result limit
 * of L bytes ...]", "is_main_result": false}.  New reference; NULL when
 * nothing was dropped. */
json_t *result_budget_marker(const struct result_budget *b);

/* A result bundle from a display/result event: its "data" object with
 * is_main_result set (a new reference, taken from ev, not copied), or
 * NULL when the event has no data object. */
json_t *event_bundle(json_t *ev, bool main);

#endif
