/* codecell: run code written by AI agents in a sealed Linux sandbox. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "util/log.h"
#include "version.h"
#include "util/banned.h"

static const char usage[] =
	"usage: codecell COMMAND [ARGS...]\n"
	"\n"
	"commands:\n"
	"  run      run a file or stdin in a sealed sandbox (codecell run --help)\n"
	"  shell    a Python, JavaScript or bash session: state persists between\n"
	"           statements (codecell shell --help)\n"
	"  serve    the HTTP/JSON API and the web playground (codecell serve --help)\n"
	"  mcp      an MCP server on stdio for MCP clients (codecell mcp --help)\n"
	"  agent    ask a model a question; the code it writes runs here, step by\n"
	"           step, until it answers (codecell agent --help)\n"
	"  audit    read the audit log of --audit FILE (codecell audit --help)\n"
	"  approvals  list, approve or deny calls a server holds for a person\n"
	"  diff, apply, discard\n"
	"           the changes a run with --project kept (codecell diff --help)\n"
	"  check    report what this host supports and whether the sandbox works\n"
	"  version  print the version\n"
	"\n"
	"codecell help COMMAND is codecell COMMAND --help.  Documentation: README.md\n"
	"and docs/ (one page per command).\n";

static int cmd_version(int argc, char **argv)
{
	(void)argc, (void)argv;
	printf("codecell %s\n", CODECELL_VERSION);
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} commands[] = {
	{ "run", cli_run },	      { "check", cli_check },
	{ "shell", cli_shell },	      { "serve", cli_serve },
	{ "mcp", cli_mcp },	      { "agent", cli_agent },
	{ "audit", cli_audit },	      { "approvals", cli_approvals },
	{ "diff", cli_changes },      { "apply", cli_changes },
	{ "discard", cli_changes },   { "version", cmd_version },
	{ "--version", cmd_version },
};

int main(int argc, char **argv)
{
	/* 'codecell help run' is 'codecell run --help' (as git and go do): the
	 * docs send users to it, and the general text would hide the options. */
	if (argc >= 3 && !strcmp(argv[1], "help")) {
		char *help_argv[] = { argv[2], (char *)"--help", NULL };

		for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			if (!strcmp(argv[2], commands[i].name))
				return commands[i].fn(2, help_argv);
		log_error("unknown command '%s' (see 'codecell --help')", argv[2]);
		return EXIT_CODECELL_ERROR;
	}
	if (argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "-h")) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_CODECELL_ERROR : 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	log_error("unknown command '%s' (see 'codecell --help')", argv[1]);
	return EXIT_CODECELL_ERROR;
}
