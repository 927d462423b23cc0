/* engine/changes: a project's changes (session/changes.h) as a person
 * approves them and as they are applied.  What is approved is a digest
 * of the exact bytes (changes_digest: every entry's path, change, type,
 * mode and content, binary and large files included), and an apply
 * writes those bytes or nothing: the changes are read again and
 * compared with the digest, and each file is checked against its own
 * digest as it is copied, so a program still running in the sandbox
 * cannot slip in what nobody saw.  Every door's apply goes through
 * here (/v1 by engine_session_apply, the CLI's apply and :apply).
 *
 * The changes are where a door finds them: a live session's upper layer
 * (engine_session_project, engine/sessions.h) or a changes directory a
 * run kept (engine_changes_open); what is read, shown, applied or discarded of
 * them is here, so that no door calls session/changes.h itself. */
#ifndef CODECELL_ENGINE_CHANGES_H
#define CODECELL_ENGINE_CHANGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "session/changes.h"
#include "util/buf.h"
#include "util/sha256.h"


struct engine_changes {
	struct change_list l;
	char sha256[2 * SHA256_LEN + 1]; /* changes_sha256 */
	uint64_t bytes;			 /* of the new files and link targets */
};

/* The changes of upper_fd against b now, every entry read for the
 * digest.  0 or -errno (-ENOENT: the project is gone; -ECANCELED: an
 * entry moved while it was read: read again). */
int engine_changes_read(int upper_fd, const struct changes_base *b, struct engine_changes *ret);
void engine_changes_release(struct engine_changes *c);

/* Apply the changes if they are still the ones sha256 names: read
 * again and compared, the project checked (changes_check), copied as
 * read, as the project's owner; then b->since_ns is now.  *ret_n: the
 * entries applied.  0, or -errno with msg: -ECANCELED (not the changes
 * named: nothing written; or a file changed during the copy: it is not
 * written, the copy stops there and msg says how far it got), -ESTALE
 * (the project changed underneath: nothing written), -E2BIG (over
 * CHANGES_MAX_ENTRIES), another (what was done stays done). */
int engine_changes_apply(int upper_fd, struct changes_base *b, const char *sha256, size_t *ret_n,
			 char *msg, size_t n);

/* Whether the project is still what the changes started from, where
 * they would write (changes_check): asked before a person is, so that
 * nobody approves what cannot be applied.  0, or -ESTALE with the path
 * in msg. */
int engine_changes_check(const struct changes_base *b, const struct engine_changes *c, char *msg,
			 size_t n);
/* The changes as a person reads them (a unified diff; "Binary files ...
 * differ"), up to diff's cap: *ret_cut when the rest did not fit.  0 or
 * -errno. */
int engine_changes_diff(int upper_fd, const struct changes_base *b, const struct engine_changes *c,
			struct buf *diff, bool *ret_cut);
/* {"project", "changes": [...], "truncated", "diff", "diff_truncated",
 * "changes_sha256", "bytes"}: what GET .../changes and `codecell diff
 * --json` answer; the digest is the one an apply names.  A new
 * reference, NULL out of memory. */
json_t *engine_changes_json(const struct changes_base *b, const struct engine_changes *c,
			    const struct buf *diff, bool cut);

/* A changes directory `codecell run --project` kept: its project (*b)
 * and an O_PATH fd of its upper layer (the caller's).  0, or -errno
 * with msg. */
int engine_changes_open(const char *dir, struct changes_base *b, int *ret_upper_fd, char *msg,
			size_t n);
/* Remove such a directory (once applied, or to discard it; the project
 * is not touched).  0 or -errno. */
int engine_changes_remove(const char *dir);

#endif
