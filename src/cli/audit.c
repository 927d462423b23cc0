/* `codecell audit`: the lines of an audit log (engine/audit.h) that match,
 * as they are; with --follow, the lines appended after, across
 * rotations. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli.h"
#include "engine/audit.h"
#include "util/log.h"
#include "util/macro.h"
#include "util/parse.h"
#include "util/banned.h"

static const char audit_usage[] =
	"usage: codecell audit [FILE] [--session ID] [--since T] [--status S] [--follow]\n"
	"\n"
	"Print the records of an audit log that match every option given, one JSON\n"
	"object a line.  serve and mcp write one by default; run, shell and agent\n"
	"with --audit FILE.\n"
	"\n"
	"options:\n"
	"  FILE, --file FILE the log (default: $CODECELL_AUDIT_FILE, else the one\n"
	"                  serve and mcp write: $XDG_STATE_HOME/codecell/audit.jsonl,\n"
	"                  or ~/.local/state/codecell/audit.jsonl)\n"
	"  --session ID    records of this session\n"
	"  --since T       records from T on: a UTC time such as 2026-11-23T22:00:00Z\n"
	"                  (or a prefix: 2026-11-23), or a duration back from now (10m)\n"
	"  --status S      ok, error, timeout, memory_limit, output_limit, killed, rejected\n"
	"  --follow        then wait for new records (as tail -f does; Ctrl-C ends)\n"
	"  -h, --help      this text\n";

struct audit_opts {
	const char *file, *session, *status;
	char default_path[4096];
	char since[40];
	bool follow, help;
};

static int parse_since(const char *v, char *out, size_t n)
{
	double secs;
	time_t t;
	struct tm tm;

	if (strlen(v) >= 4 && v[4] == '-' && strlen(v) < n) {
		snprintf(out, n, "%s", v);
		return 0;
	}
	if (parse_duration(v, &secs) < 0)
		return -EINVAL;
	t = time(NULL) - (time_t)secs;
	gmtime_r(&t, &tm);
	strftime(out, n, "%Y-%m-%dT%H:%M:%S", &tm);
	return 0;
}

static int audit_opts_parse(int argc, char **argv, struct audit_opts *o, struct buf *err)
{
	const char *named = NULL;

	memset(o, 0, sizeof(*o));
	o->file = getenv("CODECELL_AUDIT_FILE");
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			o->help = true;
			continue;
		}
		if (!strcmp(a, "--follow")) {
			o->follow = true;
			continue;
		}
		if (a[0] != '-' || !a[1]) {
			if (named)
				return buf_printf(err, "one audit log at a time: '%s' and '%s'",
						  named, a),
				       -EINVAL;
			o->file = named = a;
			continue;
		}
		if (strcmp(a, "--file") && strcmp(a, "--session") && strcmp(a, "--since") &&
		    strcmp(a, "--status"))
			return buf_printf(err, "unknown option '%s' (see 'codecell audit --help')",
					  a),
			       -EINVAL;
		if (!v)
			return buf_printf(err, "option '%s' needs a value", a), -EINVAL;
		i++;
		if (!strcmp(a, "--file")) {
			if (named)
				return buf_printf(err, "one audit log at a time: '%s' and '%s'",
						  named, v),
				       -EINVAL;
			o->file = named = v;
		} else if (!strcmp(a, "--session"))
			o->session = v;
		else if (!strcmp(a, "--status"))
			o->status = v;
		else if (parse_since(v, o->since, sizeof(o->since)) < 0)
			return buf_printf(err,
					  "invalid --since '%s': expected a UTC time such as "
					  "2026-11-23T22:00:00Z, or a duration such as 10m",
					  v),
			       -EINVAL;
	}
	/* the one serve and mcp write by default */
	if (!o->file &&
	    cli_state_path(CLI_AUDIT_DEFAULT, false, o->default_path, sizeof(o->default_path)) ==
		    0 &&
	    access(o->default_path, F_OK) == 0)
		o->file = o->default_path;
	if (!o->file && !o->help)
		return buf_puts(
			       err,
			       "no audit log: give FILE (or set CODECELL_AUDIT_FILE); the default "
			       "one serve and mcp write, $XDG_STATE_HOME/codecell/audit.jsonl, is not "
			       "there"),
		       -EINVAL;
	return 0;
}

static bool field_is(json_t *o, const char *key, const char *want)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s && !strcmp(s, want);
}

static bool matches(const struct audit_opts *o, const char *line, size_t len)
{
	json_t *j = json_loadb(line, len, 0, NULL);
	const char *t;
	bool ok;

	if (!j)
		return false; /* not a record: never written by codecell */
	t = json_string_value(json_object_get(j, "time"));
	ok = (!o->session || field_is(j, "session", o->session)) &&
	     (!o->status || field_is(j, "status", o->status)) &&
	     (!o->since[0] || (t && strcmp(t, o->since) >= 0));
	json_decref(j);
	return ok;
}

/* Print the matching complete lines of fd from where it is; a partial
 * last line is kept in carry for the next call. */
static void drain(const struct audit_opts *o, int fd, struct buf *carry)
{
	char chunk[65536];
	ssize_t n;

	while ((n = read(fd, chunk, sizeof(chunk))) > 0) {
		if (buf_append(carry, chunk, (size_t)n) < 0) {
			buf_reset(carry); /* a line over the cap: not codecell's */
			continue;
		}
		for (char *nl; carry->len && (nl = memchr(carry->data, '\n', carry->len));) {
			size_t l = (size_t)(nl - carry->data);

			if (matches(o, carry->data, l))
				fwrite(carry->data, 1, l + 1, stdout);
			memmove(carry->data, nl + 1, carry->len - l - 1);
			carry->len -= l + 1;
		}
	}
	fflush(stdout);
}

int cli_audit(int argc, char **argv)
{
	struct audit_opts o;
	struct buf err, carry;
	struct stat st, now;
	int fd;

	buf_init(&err, 1024);
	if (audit_opts_parse(argc, argv, &o, &err) < 0) {
		log_error("%s", buf_str(&err));
		buf_release(&err);
		return EXIT_CODECELL_ERROR;
	}
	buf_release(&err);
	if (o.help)
		return fputs(audit_usage, stdout), 0;
	fd = open(o.file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return log_error("cannot open the audit log '%s': %s", o.file, strerror(errno)),
		       EXIT_CODECELL_ERROR;
	buf_init(&carry, 4 * AUDIT_LINE_MAX);
	drain(&o, fd, &carry);
	while (o.follow) {
		usleep(200 * 1000);
		drain(&o, fd, &carry);
		/* rotated: FILE is a new file; the old one was read to its end */
		if (stat(o.file, &now) == 0 && fstat(fd, &st) == 0 && now.st_ino != st.st_ino) {
			int nfd = open(o.file, O_RDONLY | O_CLOEXEC);

			if (nfd >= 0) {
				drain(&o, fd, &carry);
				close(fd);
				fd = nfd;
				buf_reset(&carry);
			}
		}
	}
	buf_release(&carry);
	close(fd);
	return 0;
}
