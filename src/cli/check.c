/* `codecell check`: what this host supports, and whether a sandbox can
 * actually be built here (it builds one and runs /bin/true). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cli/cli.h"
#include "engine/setup.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/banned.h"

static void line(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(const char *what, const char *fmt, ...)
{
	va_list ap;

	printf("  %-18s ", what);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* Landlock is a wall, not a limit: not listed among them */
static void print_limits(const char *title, unsigned bits)
{
	struct buf b;

	bits &= SANDBOX_LIMIT_LANDLOCK - 1;
	buf_init(&b, 256);
	(void)engine_limit_names_of(bits, " ", &b);
	printf("%s %s\n", title, bits ? buf_str(&b) : "(none)");
	buf_release(&b);
}

/* Build a sandbox and run /bin/true in it: the only honest test. */
static int try_sandbox(double *ret_ms, const char **ret_step)
{
	struct run_request req;
	struct run_result res;
	uint64_t t0 = now_ns();
	int r;

	run_request_init(&req);
	req.lang = LANG_BASH;
	req.code = "exit 0\n";
	req.code_len = strlen(req.code);
	r = engine_run(&req, &res);
	*ret_ms = (double)(now_ns() - t0) / 1e6;
	if (r == 0 && res.message) {
		static char msg[512];

		snprintf(msg, sizeof(msg), "%s", res.message);
		*ret_step = msg;
		r = -EPERM;
	} else if (r == 0 && res.status != RESULT_OK) {
		*ret_step = "run a program";
		r = -EIO;
	}
	run_result_release(&res);
	return r;
}

int cli_check(int argc, char **argv)
{
	struct sandbox_host_info hi;
	struct utsname u;
	char buf[64] = "?";
	const char *step = NULL;
	double ms = 0;
	int r;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: codecell check\n\nReport what this host offers the sandbox (user namespaces,\n"
		       "seccomp, Landlock, cgroups), which limits are enforced, and build a\n"
		       "sandbox to run a program in.  Exit status 0 if that works, 1 if not.\n");
		return 0;
	}
	if (argc > 1) {
		log_error("'codecell check' takes no arguments");
		return EXIT_CODECELL_ERROR;
	}
	engine_host_info(&hi);
	uname(&u);
	printf("codecell check: what this host offers the sandbox\n");
	line("kernel:", "%s %s", u.sysname, u.release);
	line("running as:", "%s (uid %d)", geteuid() == 0 ? "root" : "an ordinary user",
	     (int)geteuid());
	if (read_small_fileat(AT_FDCWD, "/proc/sys/user/max_user_namespaces", buf, sizeof(buf)) ==
	    0)
		buf[strcspn(buf, "\n")] = '\0';
	line("user namespaces:", "max %s", buf);
	if (read_small_fileat(AT_FDCWD, "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
			      buf, sizeof(buf)) == 0 &&
	    buf[0] == '1')
		line("", "AppArmor restricts unprivileged user namespaces (Ubuntu 24.04+): "
			 "an ordinary user needs an AppArmor profile allowing userns");
	line("seccomp:", "2 stacked filters, %u and %u instructions (compiled at build time by %s)",
	     hi.seccomp_insns[0], hi.seccomp_insns[1], hi.seccomp_built_with);
	if (hi.landlock_abi)
		line("landlock:", "ABI %d", hi.landlock_abi);
	else
		line("landlock:", "unavailable (the mount namespace is the only filesystem wall)");
	if (hi.cgroup_version)
		line("cgroups:", "v%d, sandboxes under %s", hi.cgroup_version,
		     hi.cgroup_parent ? hi.cgroup_parent : "?");
	else
		line("cgroups:", "none usable: %s", hi.cgroup_why ? hi.cgroup_why : "unknown");
	if (geteuid() != 0)
		line("host ids:",
		     "the caller's own uid and gid (an ordinary user maps only to itself)");
	else if (hi.ids_error == 0)
		line("host ids:", "uids %u-%u, gids %u-%u (from %s): one of its own per sandbox",
		     hi.ids_uid_base, hi.ids_uid_base + hi.ids_count - 1, hi.ids_gid_base,
		     hi.ids_gid_base + hi.ids_count - 1, hi.ids_source);
	else
		line("host ids:",
		     "NONE: %s; add a 'codecell:BASE:COUNT' line to /etc/subuid and /etc/subgid (scripts/setup.sh does) or set CODECELL_ID_RANGE=BASE:COUNT",
		     strerror(-hi.ids_error));
	print_limits("enforced limits:", hi.enforceable);
	print_limits("not enforced:   ",
		     (SANDBOX_LIMIT_MEMORY | SANDBOX_LIMIT_PIDS | SANDBOX_LIMIT_CPUS) &
			     ~hi.enforceable);
	r = try_sandbox(&ms, &step);
	if (r < 0) {
		printf("sandbox: DOES NOT WORK: %s\n", step ? step : strerror(-r));
		printf("codecell will refuse to run code on this host.\n");
		return 1;
	}
	printf("sandbox: works (built one and ran a program in %.1f ms)\n", ms);
	return 0;
}
