/* `codecell diff|apply|discard CHANGES`: the changes a run with
 * --project kept (engine/changes.h), and the helpers `codecell run` and
 * `codecell shell` use for them. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/changes.h"
#include "cli/cli.h"
#include "engine/changes.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/macro.h"
#include "util/parse.h"
#include "util/banned.h"

static const char changes_usage[] =
	"usage: codecell diff [--json] [--max-bytes SIZE] CHANGES\n"
	"       codecell apply [--yes] CHANGES\n"
	"       codecell discard CHANGES\n"
	"\n"
	"CHANGES is the directory 'codecell run --project DIR' kept: what the\n"
	"program wrote and deleted in DIR's overlay.\n"
	"\n"
	"  diff     show the changes as a unified diff (text files), 'Binary files\n"
	"           ... differ' for the others, deletions and new directories\n"
	"           included; --json: {project, changes: [{path, change, type,\n"
	"           size, mode}], diff, truncated, diff_truncated}; --max-bytes:\n"
	"           cap of the diff's text (default 1M)\n"
	"  apply    copy the changes into DIR, as DIR's owner, then remove CHANGES.\n"
	"           Asks first on a terminal (--yes: do not ask; without a terminal\n"
	"           --yes is required).  Refused, with nothing written, if a path\n"
	"           the changes touch (or the directory of one that is missing)\n"
	"           changed in DIR since the run started\n"
	"  discard  remove CHANGES; DIR is not touched\n"
	"\n"
	"exit status: 0 done (diff: shown), 1 refused or declined, 125 error\n";

/* "codecell: <message>" on stderr: what was done. */
__attribute__((format(printf, 1, 2))) static void note(const char *fmt, ...)
{
	va_list ap;

	fputs("codecell: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli_changes_default_dir(const char *project, char *out, size_t n)
{
	const char *base = strrchr(project, '/');
	char parent[4096];
	struct timespec ts;
	struct tm tm;
	int k;

	k = cli_state_path("changes", true, parent, sizeof(parent));
	if (k == 0)
		k = mkdir_p(parent, 0700);
	if (k < 0)
		return k;
	base = base && base[1] ? base + 1 : "project";
	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	k = snprintf(out, n, "%s/%.64s-%04d%02d%02d-%02d%02d%02d-%d", parent, base,
		     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		     (int)getpid());
	return k < 0 || (size_t)k >= n ? -ENAMETOOLONG : 0;
}

/* The changes now, read whole (their digest); said on failure. */
static int read_changes(int upper_fd, const struct changes_base *b, struct engine_changes *ret)
{
	int r = engine_changes_read(upper_fd, b, ret);

	if (r < 0)
		log_error("cannot read the changes to '%s': %s", b->project,
			  r == -ECANCELED
				  ? "they moved while they were read (code in the session still "
				    "writes); try again once it stops"
				  : strerror(-r));
	return r;
}

int cli_changes_show(int upper_fd, const struct changes_base *b, size_t max_bytes, bool json,
		     FILE *f)
{
	struct engine_changes c;
	struct buf diff;
	bool cut = false;
	int r = read_changes(upper_fd, b, &c);

	if (r < 0)
		return r;
	buf_init(&diff, max_bytes);
	r = engine_changes_diff(upper_fd, b, &c, &diff, &cut);
	if (r < 0)
		log_error("cannot diff the changes to '%s': %s", b->project, strerror(-r));
	else if (json) {
		json_t *j = engine_changes_json(b, &c, &diff, cut);
		char *s;

		s = j ? json_dumps(j, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
		if (s)
			fprintf(f, "%s\n", s);
		free(s);
		json_decref(j);
	} else {
		fputs(buf_str(&diff), f);
		if (cut)
			fprintf(f, "... the diff is cut at %zu bytes (--max-bytes)\n", max_bytes);
		if (c.l.truncated)
			fprintf(f, "... more than %u changes: the rest are not listed\n",
				CHANGES_MAX_ENTRIES);
		if (!c.l.n)
			fprintf(f, "no changes to '%s'\n", b->project);
		else /* what apply's question names: the person can hold one against the other */
			fprintf(f, "%zu change%s, %" PRIu64 " bytes, sha256 %.16s\n", c.l.n,
				c.l.n == 1 ? "" : "s", c.bytes, c.sha256);
	}
	fflush(f);
	buf_release(&diff);
	engine_changes_release(&c);
	return r;
}

/* A person's yes on the terminal. */
static bool ask(const char *question)
{
	char line[32];

	fprintf(stderr, "%s [y/N] ", question);
	fflush(stderr);
	if (!fgets(line, sizeof(line), stdin))
		return false;
	return line[0] == 'y' || line[0] == 'Y';
}

int cli_changes_apply(int upper_fd, struct changes_base *b, bool yes)
{
	struct engine_changes c;
	char msg[1024], q[4400];
	size_t done = 0;
	int r = read_changes(upper_fd, b, &c);

	if (r < 0)
		return r;
	if (!c.l.n) {
		note("no changes to apply to '%s'", b->project);
		engine_changes_release(&c);
		return 0;
	}
	if (c.l.truncated) {
		log_error("more than %u changes: too many to apply at once; copy them by hand",
			  CHANGES_MAX_ENTRIES);
		engine_changes_release(&c);
		return -E2BIG;
	}
	r = engine_changes_check(b, &c, msg, sizeof(msg));
	if (r < 0) {
		log_error("%s", msg);
		engine_changes_release(&c);
		return -ESTALE;
	}
	if (!yes) {
		/* the question names what the yes is for: what is applied
		 * after it is that, byte for byte, or nothing */
		snprintf(q, sizeof(q),
			 "apply %zu change%s (%" PRIu64 " bytes, sha256 %.16s) to '%s'?", c.l.n,
			 c.l.n == 1 ? "" : "s", c.bytes, c.sha256, b->project);
		if (!isatty(STDIN_FILENO)) {
			log_error(
				"not applied: no terminal to ask on; give --yes to apply without asking");
			engine_changes_release(&c);
			return -ECANCELED;
		}
		if (!ask(q)) {
			log_error("not applied");
			engine_changes_release(&c);
			return -ECANCELED;
		}
	}
	r = engine_changes_apply(upper_fd, b, c.sha256, &done, msg, sizeof(msg));
	if (r == -ECANCELED || r == -ESTALE || r == -E2BIG)
		log_error("%s", msg);
	else if (r < 0)
		log_error("applying to '%s': %s", b->project, msg);
	else
		note("applied %zu change%s to '%s'", done, done == 1 ? "" : "s", b->project);
	engine_changes_release(&c);
	return r;
}

static int status_of(int r)
{
	return r == 0						? 0
	       : r == -ESTALE || r == -ECANCELED || r == -E2BIG ? 1
								: EXIT_CODECELL_ERROR;
}

static int do_apply(const char *dir, struct changes_base *b, int up, bool yes)
{
	_cleanup_close_ int dst = open(b->project, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int r;

	if (dst < 0) {
		log_error("cannot open the project '%s': %s", b->project, strerror(errno));
		return EXIT_CODECELL_ERROR;
	}
	r = cli_changes_apply(up, b, yes);
	if (r == 0 && engine_changes_remove(dir) < 0)
		log_warn("cannot remove '%s' after applying it", dir);
	return status_of(r);
}

int cli_changes(int argc, char **argv)
{
	const char *cmd = argv[0], *dir = NULL;
	bool json = false, yes = false;
	uint64_t max = CHANGES_DIFF_MAX;
	struct changes_base b;
	char msg[1024];
	_cleanup_close_ int up = -1;
	int r;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(changes_usage, stdout);
			return 0;
		} else if (!strcmp(argv[i], "--json") && !strcmp(cmd, "diff")) {
			json = true;
		} else if (!strcmp(argv[i], "--yes") && !strcmp(cmd, "apply")) {
			yes = true;
		} else if (!strcmp(argv[i], "--max-bytes") && !strcmp(cmd, "diff") &&
			   i + 1 < argc) {
			if (parse_size(argv[++i], &max) < 0 || max < 1024 || max > (256u << 20)) {
				log_error(
					"invalid --max-bytes '%s': expected a size from 1K to 256M",
					argv[i]);
				return EXIT_CODECELL_ERROR;
			}
		} else if (argv[i][0] == '-' || dir) {
			log_error("unexpected '%s' (see 'codecell %s --help')", argv[i], cmd);
			return EXIT_CODECELL_ERROR;
		} else {
			dir = argv[i];
		}
	}
	if (!dir) {
		log_error("no CHANGES directory given (see 'codecell %s --help')", cmd);
		return EXIT_CODECELL_ERROR;
	}
	r = engine_changes_open(dir, &b, &up, msg, sizeof(msg));
	if (r < 0) {
		log_error("%s", msg);
		return EXIT_CODECELL_ERROR;
	}
	if (!strcmp(cmd, "diff"))
		return cli_changes_show(up, &b, (size_t)max, json, stdout) < 0 ? EXIT_CODECELL_ERROR
									       : 0;
	if (!strcmp(cmd, "apply"))
		return do_apply(dir, &b, up, yes);
	r = engine_changes_remove(dir);
	if (r < 0) {
		log_error("cannot remove '%s': %s", dir, strerror(-r));
		return EXIT_CODECELL_ERROR;
	}
	note("discarded the changes to '%s'", b.project);
	return 0;
}
