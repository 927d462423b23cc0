/* textdiff: the hunks of a unified diff between two texts (pure). */
#ifndef CODECELL_UTIL_TEXTDIFF_H
#define CODECELL_UTIL_TEXTDIFF_H

#include <stddef.h>

#include "util/buf.h"

/* Myers' search stops past this many edits (its memory grows with the
 * square): the middle of the texts is then one hunk that replaces it
 * all, still a correct diff. */
#define TEXTDIFF_EDITS_MAX 1000
#define TEXTDIFF_CONTEXT 3

/* Append to out the hunks turning a[0..alen) into b[0..blen), lines split
 * after each '\n': "@@ -l,n +l,n @@", then ' ', '-' and '+' lines with
 * TEXTDIFF_CONTEXT lines of context, and "\ No newline at end of file"
 * after a last line without one (git's and diff -u's format).  Nothing
 * for equal texts.  0, -E2BIG at out's cap (what fit stays), -ENOMEM. */
int text_diff(const char *a, size_t alen, const char *b, size_t blen, struct buf *out);

#endif
