"""Bad input to codecell: exit status 125, a message on stderr that names the
problem, nothing on stdout (without --json), and the code never runs.
Also the command-line surface: --help, run --help, version, unknown
commands."""
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import CODECELL, check, codecell, eq, main, scratch, test, tmpdir, write  # noqa: E402

# A program that would leave a trace if it ran.
SCRIPT = "print('RAN')\n"



def refused(r, *words, what=""):
    """Exit 125, every word (case-insensitive) in stderr; stdout empty, or
    with --json exactly one object with status "rejected" naming it too."""
    label = what or "%r" % (r,)
    eq(r.status, 125, "exit status for %s (stderr %r)" % (label, r.stderr))
    if r.stdout:
        obj = json.loads(r.stdout)  # exactly one object, nothing else
        eq(obj["status"], "rejected", "status for %s" % label)
        value = obj["error"]["value"].lower()
        for w in words:
            check(w.lower() in value, "%r not in error.value for %s: %r" % (w, label, value))
    check("RAN" not in r.stderr, "the program ran: %s" % label)
    low = r.stderr.lower()
    for w in words:
        check(w.lower() in low, "%r not in stderr for %s: %r" % (w, label, r.stderr))
    check(r.stderr.count("\n") <= 3, "a short message, not a dump: %r" % r.stderr)


def script(d, name="script.py", text=SCRIPT):
    return write(os.path.join(d, name), text)


# --- the code -------------------------------------------------------------

@test
def missing_file():
    with scratch() as d:
        p = os.path.join(d, "nosuch.py")
        refused(codecell("run", p), "nosuch.py", "no such file")
        refused(codecell("run", "--json", p), "nosuch.py", "no such file")


@test
def directory_as_file():
    with scratch() as d:
        refused(codecell("run", d), d, "directory")
        os.mkdir(os.path.join(d, "dir.py"))
        refused(codecell("run", os.path.join(d, "dir.py")), "dir.py", "directory")


@test
def unreadable_file_as_ordinary_user():
    with scratch() as d:
        p = script(d)
        os.chmod(p, 0o600)
        refused(codecell("run", p, user=1000), "script.py", "permission denied")


@test
def no_file_given():
    refused(codecell("run"), "no code given", "FILE")
    refused(codecell("run", "--json", "--timeout", "5"), "no code given")


@test
def code_not_utf8():
    with scratch() as d:
        p = write(os.path.join(d, "latin1.py"), "")
        with open(p, "wb") as f:
            f.write(b"print('caf\xe9')\n")
        refused(codecell("run", p), "latin1.py", "UTF-8")
    q = subprocess.run([CODECELL, "run", "-"], input=b"print('\xff\xfe')\n",
                       capture_output=True, timeout=60)
    eq(q.returncode, 125, "exit status for non-UTF-8 stdin")
    eq(q.stdout, b"", "stdout")
    check(b"UTF-8" in q.stderr, "stderr: %r" % q.stderr)


@test
def code_with_nul_byte():
    with scratch() as d:
        p = os.path.join(d, "bin.py")
        with open(p, "wb") as f:
            f.write(b"print(1)\n\x00\x01\x02\n")
        refused(codecell("run", p), "bin.py", "NUL")


@test
def empty_or_whitespace_code():
    with scratch() as d:
        refused(codecell("run", script(d, "empty.py", "")), "empty")
        refused(codecell("run", script(d, "blank.py", "  \n\t\n\r\n")), "empty")
    refused(codecell("run", "-", stdin=""), "empty")
    refused(codecell("run", "-", stdin="\n\n   \n"), "empty")
    refused(codecell("run", "--lang", "bash", "-", stdin=" "), "empty")


@test
def code_too_large():
    big = "#" * (8 * 1024 * 1024 + 10) + "\nprint('RAN')\n"
    refused(codecell("run", "-", stdin=big), "too large")


# --- options --------------------------------------------------------------

@test
def unknown_language():
    with scratch() as d:
        p = script(d)
        refused(codecell("run", "--lang", "cobol", p), "unknown language", "cobol",
                "python", "javascript", "bash", "sql")
        refused(codecell("run", "--lang", "", p), "unknown language")


@test
def unknown_option():
    with scratch() as d:
        p = script(d)
        refused(codecell("run", "--bogus", p), "unknown option", "--bogus")
        refused(codecell("run", "-x", p), "unknown option", "-x")
        refused(codecell("run", "--time", "5", p), "unknown option", "--time")


@test
def option_missing_its_value():
    for opt in ("--timeout", "--memory", "--pids", "--lang", "--file", "--workspace", "--db",
                "--env", "--output-limit", "--net", "--cpu-time"):
        refused(codecell("run", opt), opt, "needs a value", what=opt)


@test
def flag_given_a_value():
    with scratch() as d:
        refused(codecell("run", "--json=yes", script(d)), "--json", "takes no value")


@test
def malformed_timeout():
    with scratch() as d:
        p = script(d)
        for bad in ("abc", "0", "-1", "1x", "", "1e400", "nan"):
            refused(codecell("run", "--timeout", bad, p), "--timeout", "'%s'" % bad,
                    "duration", what="--timeout %r" % bad)


@test
def malformed_memory():
    with scratch() as d:
        p = script(d)
        for bad in ("12Q", "abc", "-5M", "", "M"):
            refused(codecell("run", "--memory", bad, p), "--memory", "'%s'" % bad, "size",
                    what="--memory %r" % bad)
        refused(codecell("run", "--memory", "1M", p), "--memory", "at least")


@test
def malformed_pids():
    with scratch() as d:
        p = script(d)
        for bad in ("-1", "0", "1.5", "abc", "", "99999999999999999999999"):
            refused(codecell("run", "--pids", bad, p), "--pids", "'%s'" % bad, "whole number",
                    what="--pids %r" % bad)


@test
def malformed_other_limits():
    with scratch() as d:
        p = script(d)
        refused(codecell("run", "--output-limit", "2G", p), "--output-limit", "at most")
        refused(codecell("run", "--output-limit", "10", p), "--output-limit")
        refused(codecell("run", "--output-limit", "lots", p), "--output-limit", "size")
        refused(codecell("run", "--net", "host", p), "--net", "host", "none", "loopback")
        refused(codecell("run", "--cpu-time", "0", p), "--cpu-time")
        refused(codecell("run", "--open-files", "3", p), "--open-files")
        refused(codecell("run", "--file-size", "0", p), "--file-size")


@test
def db_without_lang_sql():
    with scratch() as d:
        db = write(os.path.join(d, "data.sqlite"), "")
        refused(codecell("run", "--db", db, script(d)), "--db", "sql")
        refused(codecell("run", "--lang", "python", "--db", db, "-", stdin=SCRIPT), "--db",
                "sql")


@test
def db_that_does_not_exist_or_is_a_directory():
    with scratch() as d:
        q = script(d, "q.sql", "select 'RAN';\n")
        refused(codecell("run", "--lang", "sql", "--db", os.path.join(d, "nosuch.db"), q),
                "nosuch.db", "no such file")
        refused(codecell("run", "--lang", "sql", "--db", d, q), "directory")


@test
def file_that_does_not_exist():
    with scratch() as d:
        refused(codecell("run", "--file", os.path.join(d, "nosuch.csv"), script(d)),
                "nosuch.csv", "no such file")


@test
def file_that_is_a_directory():
    with scratch() as d:
        sub = os.path.join(d, "inputs")
        os.mkdir(sub)
        refused(codecell("run", "--file", sub, script(d)), "inputs", "directory", "--workspace")


@test
def workspace_that_is_a_file():
    with scratch() as d:
        p = script(d)
        refused(codecell("run", "--workspace", p, p), "workspace", "not a directory")


@test
def env_without_equals():
    with scratch() as d:
        p = script(d)
        refused(codecell("run", "--env", "FOO", p), "--env", "FOO", "KEY=VALUE")
        refused(codecell("run", "--env", "=value", p), "--env", "KEY=VALUE")
        refused(codecell("run", "--env", "1ABC=x", p), "--env", "KEY=VALUE")
        refused(codecell("run", "--env", "A-B=x", p), "--env", "KEY=VALUE")


@test
def too_many_files_or_envs():
    with scratch() as d:
        p = script(d)
        args = []
        for i in range(65):
            args += ["--env", "V%d=x" % i]
        refused(codecell("run", *args, p), "--env", "at most")
        args = []
        for i in range(65):
            args += ["--file", p]
        refused(codecell("run", *args, p), "--file", "at most")


@test
def bad_input_in_json_mode_gives_no_mixed_output():
    # with --json, stdout is either empty (usage errors) or exactly one
    # object with status "rejected"; never partial text
    with scratch() as d:
        cases = [("--json", "--timeout", "abc", script(d)),
                 ("--json", "--file", os.path.join(d, "nosuch.csv"), script(d)),
                 ("--json", script(d, "empty.py", ""))]
        for args in cases:
            r = codecell("run", *args)
            eq(r.status, 125, "exit status for %r" % (args,))
            if r.stdout:
                j = json.loads(r.stdout)
                eq(r.stdout.count("\n"), 1, "one line for %r" % (args,))
                eq(j["status"], "rejected", "status for %r" % (args,))
                eq(j["error"]["name"], "InvalidRequest", "error.name for %r" % (args,))
                check(j["error"]["value"], "empty error.value for %r" % (args,))
            else:
                check(r.stderr.strip(), "no message at all for %r" % (args,))


# --- the command line surface --------------------------------------------

@test
def top_level_help():
    for arg in ("--help", "-h", "help"):
        r = codecell(arg)
        eq(r.status, 0, "exit status for %s" % arg)
        check(r.stdout.startswith("usage: codecell"), "stdout for %s: %r" % (arg, r.stdout))
        for w in ("run", "check", "version"):
            check(w in r.stdout, "%r missing from --help" % w)


@test
def no_command_prints_usage_and_fails():
    r = codecell()
    check(r.status != 0, "exit status 0 without a command")
    check("usage: codecell" in r.stderr, "usage on stderr: %r" % r.stderr)
    eq(r.stdout, "", "stdout")


@test
def run_help():
    for arg in ("--help", "-h"):
        r = codecell("run", arg)
        eq(r.status, 0, "exit status")
        check(r.stdout.startswith("usage: codecell run"), r.stdout[:200])
        for opt in ("--lang", "--json", "--timeout", "--memory", "--pids", "--output-limit",
                    "--net", "--file", "--workspace", "--db", "--env", "--strict"):
            check(opt in r.stdout, "%s missing from run --help" % opt)
        for code in ("124", "137", "141", "125"):
            check(code in r.stdout, "exit status %s not documented" % code)
        eq(r.stderr, "", "stderr")


@test
def version():
    for arg in ("version", "--version"):
        r = codecell(arg)
        eq(r.status, 0, "exit status")
        check(re.fullmatch(r"codecell \d+\.\d+\.\d+\n", r.stdout), "version: %r" % r.stdout)


@test
def unknown_command():
    r = codecell("bogus")
    check(r.status != 0, "exit status 0 for an unknown command")
    eq(r.stdout, "", "stdout")
    check("unknown command" in r.stderr and "bogus" in r.stderr, "stderr: %r" % r.stderr)


@test
def check_takes_no_arguments():
    r = codecell("check", "extra")
    eq(r.status, 125, "exit status")
    check("no arguments" in r.stderr, "stderr: %r" % r.stderr)


if __name__ == "__main__":
    main()
