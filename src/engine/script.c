/* The script at its path: a one-shot run's code as a real file in the
 * workspace, where __file__ / __filename say it is (multiprocessing's
 * spawn, child_process.fork, inspect.getsource read it from there); and
 * Python's error, read from what the interpreter itself printed. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/script.h"
#include "session/workspace.h"
#include "util/fs.h"
#include "util/macro.h"
#include "util/banned.h"

/* Does the file at name hold exactly code?  1, 0, or -errno. */
static int same_content(int wsfd, const char *name, const char *code, size_t len)
{
	_cleanup_close_ int fd = openat_beneath(wsfd, name, O_RDONLY | O_NOFOLLOW, 0);
	char chunk[16384];
	size_t off = 0;

	if (fd < 0)
		return fd;
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return off == len;
		if ((size_t)n > len - off || memcmp(chunk, code + off, (size_t)n))
			return 0;
		off += (size_t)n;
	}
}

int script_place(int wsfd, const char *name, const char *code, size_t len, const struct ws_owner *o,
		 bool *created)
{
	struct ws_fsid prev;
	int fd, k;

	*created = false;
	if (!*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
		return -EINVAL;
	prev = ws_become_owner(o);
	fd = openat_beneath(wsfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644);
	ws_restore_ids(prev);
	if (fd == -EEXIST) {
		/* the workspace brought it (--workspace-dir holding the script
		 * run): the same text is the same script */
		k = same_content(wsfd, name, code, len);
		return k < 0 ? k : k ? 0 : -EEXIST;
	}
	if (fd < 0)
		return fd;
	k = write_all(fd, code, len);
	close(fd);
	if (k < 0) {
		(void)unlinkat(wsfd, name, 0); /* no half script left */
		return k;
	}
	*created = true;
	return 0;
}

void script_remove(int wsfd, const char *name)
{
	(void)unlinkat(wsfd, name, 0);
}

/* ---- Python's error, from its stderr ----
 *
 * The interpreter prints an uncaught exception as
 *   Traceback (most recent call last):
 *     File "...", line N, in f          (frames: indented)
 *   Name: value                         (may span lines; notes follow)
 * chained ones joined by one of CHAIN; a SyntaxError of the script itself
 * has no "Traceback" line, only its indented File line.  The last such
 * block at the end of stderr is the error.  The program can print the
 * same text: like the report channel before, this is what the program
 * says, not a verdict (an exit status 0 clears it). */

static const char *const CHAIN[] = {
	"\nDuring handling of the above exception, another exception occurred:\n\n",
	"\nThe above exception was the direct cause of the following exception:\n\n",
};

#define TB_HEAD "Traceback (most recent call last):\n"
/* an ExceptionGroup's block: its lines after this one start with "  | " */
#define GROUP_HEAD "  + Exception Group Traceback (most recent call last):\n"
#define GROUP_BAR "  | "

/* The last occurrence of needle in s[0..end) at a line start, or -1. */
static ssize_t last_line_with(const char *s, size_t end, const char *needle)
{
	size_t n = strlen(needle);

	for (size_t i = end; i-- > 0;)
		if ((i == 0 || s[i - 1] == '\n') && end - i >= n && !memcmp(s + i, needle, n))
			return (ssize_t)i;
	return -1;
}

static bool ends_with_at(const char *s, size_t at, const char *suffix)
{
	size_t n = strlen(suffix);

	return at >= n && !memcmp(s + at - n, suffix, n);
}

/* The exception's line in block s[b..e): its first line at column 0 (in a
 * group's block, after "  | "; *val_end is then that line's end, else 0)
 * after the header; the name is what comes before ": " (or the whole
 * line), without its module. */
static bool exception_line(const char *s, size_t b, size_t e, size_t *val_end, size_t *name_b,
			   size_t *name_e)
{
	size_t i = b;
	bool group = e - b >= strlen(GROUP_HEAD) && !memcmp(s + b, GROUP_HEAD, strlen(GROUP_HEAD));

	if (e - b >= strlen(TB_HEAD) && !memcmp(s + b, TB_HEAD, strlen(TB_HEAD)))
		i += strlen(TB_HEAD);
	if (group)
		i += strlen(GROUP_HEAD);
	while (i < e) {
		size_t nl = i;

		while (nl < e && s[nl] != '\n')
			nl++;
		if (group && nl - i > strlen(GROUP_BAR) &&
		    !memcmp(s + i, GROUP_BAR, strlen(GROUP_BAR)))
			i += strlen(GROUP_BAR);
		else if (group)
			return false;
		if (s[i] != ' ' && s[i] != '\n') {
			size_t k = i, dot = i;

			/* an identifier's bytes (UTF-8 ones included) and dots */
			while (k < nl &&
			       (s[k] == '_' || s[k] == '.' || (s[k] >= '0' && s[k] <= '9') ||
				((s[k] | 0x20) >= 'a' && (s[k] | 0x20) <= 'z') ||
				(unsigned char)s[k] >= 0x80)) {
				if (s[k] == '.')
					dot = k + 1;
				k++;
			}
			if (k == i || (k < nl && s[k] != ':'))
				return false;
			*val_end = group ? nl : 0; /* a group's value is its line */
			*name_b = dot;
			*name_e = k;
			return true;
		}
		i = nl + 1;
	}
	return false;
}

void script_python_error(const char *s, size_t len, struct run_result *r)
{
	ssize_t tb;
	size_t b, val_end, nb, ne, vb, ve;

	if (r->has_error || !s || !len)
		return;
	tb = last_line_with(s, len, TB_HEAD);
	{
		ssize_t g = last_line_with(s, len, GROUP_HEAD);

		if (g > tb)
			tb = g;
	}
	if (tb < 0) {
		/* a SyntaxError (or IndentationError) of the script: the
		 * interpreter's block is '  File "...", line N' to the end */
		tb = last_line_with(s, len, "  File \"");
		if (tb < 0)
			return;
	}
	b = (size_t)tb;
	/* chained exceptions: the block before belongs to the same error */
	for (bool more = true; more;) {
		more = false;
		for (size_t c = 0; c < ARRAY_SIZE(CHAIN); c++) {
			ssize_t prev;

			if (!ends_with_at(s, b, CHAIN[c]))
				continue;
			prev = last_line_with(s, b - strlen(CHAIN[c]), TB_HEAD);
			if (prev >= 0) {
				b = (size_t)prev;
				more = true;
			}
			break;
		}
	}
	if (!exception_line(s, (size_t)tb, len, &val_end, &nb, &ne))
		return;
	vb = ne;
	if (vb < len && s[vb] == ':')
		vb++;
	if (vb < len && s[vb] == ' ')
		vb++;
	ve = val_end ? val_end : len;
	while (ve > vb && s[ve - 1] == '\n')
		ve--;
	r->has_error = true;
	r->error_name = strndup(s + nb, ne - nb);
	r->error_value = strndup(s + vb, ve - vb);
	r->error_traceback = strndup(s + b, len - b);
	if (!r->error_name || !r->error_value || !r->error_traceback) {
		free(r->error_name);
		free(r->error_value);
		free(r->error_traceback);
		r->error_name = r->error_value = r->error_traceback = NULL;
		r->has_error = false;
	}
}

/* "[Errno 27] File too large" (an OSError's value) is the file-size
 * limit. */
bool script_python_efbig(const struct run_result *r)
{
	char want[32];

	snprintf(want, sizeof(want), "[Errno %d]", EFBIG);
	return r->has_error && r->error_value && !strncmp(r->error_value, want, strlen(want));
}
