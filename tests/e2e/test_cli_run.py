"""codecell run, without --json unless a test says otherwise: the four
languages, code on stdin, program arguments, --env, exit statuses (the
program's own, 128+signal, 124 timeout, 137 memory, 141 output flood),
stdout/stderr passthrough and head/tail truncation."""
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import CODECELL, HANG_S, TIMEOUTS_S, check, codecell, eq, main, scratch, test, tmpdir, write  # noqa: E402



def raw(*args, stdin=b"", timeout=60, env=None):
    """codecell with bytes in and out (for output that is not UTF-8)."""
    p = subprocess.run([CODECELL] + list(args), input=stdin, capture_output=True,
                       timeout=timeout, env=env)
    return p.returncode, p.stdout, p.stderr


def ok(r, status=0):
    eq(r.status, status, "exit status of %r" % (r,))


# --- the four languages ---------------------------------------------------

@test
def python_file_runs_like_python3():
    with scratch() as d:
        p = write(os.path.join(d, "script.py"), "print(6*7)\nprint('done')\n")
        r = codecell("run", p)
        ok(r)
        eq(r.stdout, "42\ndone\n", "stdout")
        eq(r.stderr, "", "stderr")


@test
def python_code_on_stdin():
    r = codecell("run", "-", stdin="print(6*7)\n")
    ok(r)
    eq(r.stdout, "42\n", "stdout")
    eq(r.stderr, "", "stderr")


@test
def python_unicode_output_roundtrip():
    r = codecell("run", "-", stdin="print('h\u00e9llo \u2603 \U0001f600')\n")
    ok(r)
    eq(r.stdout, "h\u00e9llo \u2603 \U0001f600\n", "stdout")


@test
def javascript_by_lang_option_and_by_extension():
    with scratch() as d:
        p = write(os.path.join(d, "app.js"),
                  "console.log(6*7);\nconsole.error('to stderr');\n")
        for args in (("--lang", "javascript"), ()):
            r = codecell("run", *args, p)
            ok(r)
            eq(r.stdout, "42\n", "stdout %r" % (args,))
            eq(r.stderr, "to stderr\n", "stderr %r" % (args,))
    r = codecell("run", "--lang", "js", "-", stdin="console.log([1,2,3].map(x => x*2).join(','))")
    ok(r)
    eq(r.stdout, "2,4,6\n", "js alias on stdin")


@test
def bash_by_lang_option_and_by_extension():
    with scratch() as d:
        p = write(os.path.join(d, "job.sh"), 'echo "sum=$((6*7))"\necho oops >&2\n')
        for args in (("--lang", "bash"), ()):
            r = codecell("run", *args, p)
            ok(r)
            eq(r.stdout, "sum=42\n", "stdout %r" % (args,))
            eq(r.stderr, "oops\n", "stderr %r" % (args,))


@test
def sql_in_memory_by_lang_and_extension():
    r = codecell("run", "--lang", "sql", "-", stdin="select 6*7 as answer;\n")
    ok(r)
    check("answer" in r.stdout and "42" in r.stdout, "sql output: %r" % (r,))
    with scratch() as d:
        p = write(os.path.join(d, "query.sql"),
                  "create table t(a int);\ninsert into t values (20),(22);\n"
                  "select sum(a) as total from t;\n")
        r = codecell("run", p)
        ok(r)
        check("total" in r.stdout and "42" in r.stdout, "sql by extension: %r" % (r,))


@test
def lang_option_overrides_extension():
    with scratch() as d:
        p = write(os.path.join(d, "thing.py"), "echo from-bash\n")
        r = codecell("run", "--lang", "bash", p)
        ok(r)
        eq(r.stdout, "from-bash\n", "stdout")
        # no known extension: python is the default
        p = write(os.path.join(d, "noext"), "print('py default')\n")
        r = codecell("run", p)
        ok(r)
        eq(r.stdout, "py default\n", "default language")


@test
def python_main_module_idioms_work():
    # `python3 script.py` gives __name__ == "__main__" and __file__
    with scratch() as d:
        p = write(os.path.join(d, "script.py"),
                  "import os, sys\n"
                  "def main():\n    print('main ran')\n"
                  "if __name__ == '__main__':\n    main()\n"
                  "print(os.path.basename(__file__))\n"
                  "print(sys.path[0] == os.getcwd())\n")
        r = codecell("run", p)
        ok(r)
        eq(r.stdout, "main ran\nscript.py\nTrue\n", "stdout")


@test
def javascript_main_module_idioms_work():
    # `node app.js` gives require.main === module, __filename, __dirname
    with scratch() as d:
        p = write(os.path.join(d, "app.js"),
                  "const path = require('path');\n"
                  "function main() { console.log('main ran'); }\n"
                  "if (require.main === module) main();\n"
                  "console.log(path.basename(__filename));\n"
                  "console.log(typeof __dirname);\n")
        r = codecell("run", p)
        ok(r)
        eq(r.stdout, "main ran\napp.js\nstring\n", "stdout")


# --- arguments and environment --------------------------------------------

ARGV_PY = "import sys, json\nprint(json.dumps(sys.argv))\n"


@test
def python_arguments_reach_sys_argv():
    with scratch() as d:
        p = write(os.path.join(d, "argv.py"), ARGV_PY)
        # options after FILE belong to the program, not to codecell
        r = codecell("run", p, "a", "b c", "--json", "--timeout", "-", "")
        ok(r)
        eq(json.loads(r.stdout), ["argv.py", "a", "b c", "--json", "--timeout", "-", ""],
           "sys.argv")


@test
def stdin_code_gets_arguments_too():
    r = codecell("run", "-", "x", "--help", stdin=ARGV_PY)
    ok(r)
    argv = json.loads(r.stdout)
    eq(argv[1:], ["x", "--help"], "sys.argv[1:]")


@test
def double_dash_ends_codecell_options():
    with scratch() as d:
        p = write(os.path.join(d, "-dash.py"), ARGV_PY)
        r = codecell("run", "--timeout", "5", "--", p, "--lang")
        ok(r)
        eq(json.loads(r.stdout)[1:], ["--lang"], "sys.argv[1:]")
        # --opt=value form
        r = codecell("run", "--timeout=5", "--lang=python", p, "z")
        ok(r)
        eq(json.loads(r.stdout)[1:], ["z"], "sys.argv[1:] with --opt=value")


@test
def javascript_arguments_reach_process_argv():
    with scratch() as d:
        p = write(os.path.join(d, "app.js"),
                  "console.log(JSON.stringify(process.argv.slice(2)))\n")
        r = codecell("run", p, "one", "two words", "--flag")
        ok(r)
        eq(json.loads(r.stdout), ["one", "two words", "--flag"], "process.argv.slice(2)")


@test
def bash_arguments_reach_positional_parameters():
    with scratch() as d:
        p = write(os.path.join(d, "job.sh"), 'echo "n=$#"\nfor a in "$@"; do echo "[$a]"; done\n')
        r = codecell("run", p, "a b", "", "-x")
        ok(r)
        eq(r.stdout, "n=3\n[a b]\n[]\n[-x]\n", "bash $@")


@test
def env_reaches_python_js_and_bash():
    r = codecell("run", "--env", "FOO=bar", "--env", "EMPTY=", "--env", "EQ=a=b c", "-",
                 stdin="import os, json\nprint(json.dumps([os.environ.get(k) for k in "
                       "('FOO', 'EMPTY', 'EQ')]))\n")
    ok(r)
    eq(json.loads(r.stdout), ["bar", "", "a=b c"], "python os.environ")
    r = codecell("run", "--lang", "javascript", "--env", "FOO=js", "-",
                 stdin="console.log(process.env.FOO)")
    ok(r)
    eq(r.stdout, "js\n", "node process.env")
    r = codecell("run", "--lang", "bash", "--env", "FOO=sh", "-", stdin='echo "$FOO"')
    ok(r)
    eq(r.stdout, "sh\n", "bash $FOO")


@test
def env_repeated_key_last_one_wins_everywhere():
    # like `env A=1 A=2 prog` or `docker run -e A=1 -e A=2`: one variable,
    # the last value, the same in every language
    args = ("--env", "DUP=first", "--env", "DUP=second")
    seen = {}
    r = codecell("run", *args, "-", stdin="import os\nprint(os.environ['DUP'])\n")
    seen["python"] = r.stdout.strip()
    r = codecell("run", "--lang", "javascript", *args, "-", stdin="console.log(process.env.DUP)")
    seen["javascript"] = r.stdout.strip()
    r = codecell("run", "--lang", "bash", *args, "-", stdin='echo "$DUP"')
    seen["bash"] = r.stdout.strip()
    eq(seen, {"python": "second", "javascript": "second", "bash": "second"}, "DUP seen as")
    r = codecell("run", *args, "-", stdin="print(open('/proc/self/environ', 'rb').read().count(b'DUP='))")
    eq(r.stdout, "1\n", "DUP entries in the environment block")


@test
def env_can_override_a_default_variable():
    # --env TZ=... must either take effect or be refused; never be
    # silently shadowed by codecell's own TZ=UTC
    r = codecell("run", "--env", "TZ=Asia/Tokyo", "-",
                 stdin="import os\nprint(os.environ.get('TZ'))\n")
    if r.status == 125:
        check("TZ" in r.stderr, "refused without naming TZ: %r" % r.stderr)
        return
    ok(r)
    eq(r.stdout, "Asia/Tokyo\n", "python's TZ after --env TZ=Asia/Tokyo")
    r = codecell("run", "--lang", "javascript", "--env", "TZ=Asia/Tokyo", "-",
                 stdin="console.log(process.env.TZ)")
    eq(r.stdout, "Asia/Tokyo\n", "node's TZ after --env TZ=Asia/Tokyo")


@test
def host_environment_does_not_leak_in():
    env = dict(os.environ, CODECELL_TEST_SECRET="hunter2")
    r = codecell("run", "-", env=env,
                 stdin="import os\nprint(os.environ.get('CODECELL_TEST_SECRET'))\n"
                       "print(os.environ.get('HOME'))\n")
    ok(r)
    eq(r.stdout.splitlines()[0], "None", "host variable visible inside")
    check(r.stdout.splitlines()[1] != os.environ.get("HOME"), "host HOME inside: %r" % (r,))


# --- exit statuses ---------------------------------------------------------

@test
def exit_status_is_the_programs():
    r = codecell("run", "-", stdin="import sys\nsys.exit(3)\n")
    ok(r, 3)
    r = codecell("run", "-", stdin="raise ValueError('x')\n")
    ok(r, 1)
    r = codecell("run", "--lang", "javascript", "-", stdin="process.exit(7)")
    ok(r, 7)
    r = codecell("run", "--lang", "bash", "-", stdin="exit 42")
    ok(r, 42)
    r = codecell("run", "--lang", "bash", "-", stdin="exit 0")
    ok(r, 0)


@test
def signal_death_is_128_plus_signal():
    r = codecell("run", "-", stdin="import os, signal\nprint('before', flush=True)\n"
                                   "os.kill(os.getpid(), signal.SIGTERM)\nprint('after')\n")
    ok(r, 143)
    eq(r.stdout, "before\n", "stdout")
    r = codecell("run", "--lang", "bash", "-", stdin="kill -TERM $$\necho after\n")
    ok(r, 143)
    eq(r.stdout, "", "bash stdout")
    r = codecell("run", "--lang", "javascript", "-", stdin="process.kill(process.pid, 'SIGTERM')")
    ok(r, 143)
    r = codecell("run", "-", stdin="import os, signal\nos.kill(os.getpid(), signal.SIGUSR1)\n")
    ok(r, 128 + 10)


@test
def timeout_is_124_and_says_so():
    for t in TIMEOUTS_S:
        t0 = time.monotonic()
        r = codecell("run", "--timeout", str(t), "-", timeout=2 * HANG_S,
                     stdin="import time\nprint('started', flush=True)\ntime.sleep(600)\n")
        elapsed = time.monotonic() - t0
        ok(r, 124)
        check("time limit" in r.stderr and "--timeout" in r.stderr, "stderr: %r" % (r.stderr,))
        # no sooner; later only as the load makes it (a sleep the timeout
        # does not stop fails codecell()'s own bound)
        check(elapsed >= t - 0.1, "took %.1f s for --timeout %d" % (elapsed, t))
        if r.stdout:  # Python got to print before the timeout
            break
    eq(r.stdout, "started\n", "output before the timeout")


@test
def timeout_kills_the_whole_tree_and_takes_ms():
    t0 = time.monotonic()
    r = codecell("run", "--lang", "bash", "--timeout", "500ms", "-", timeout=2 * HANG_S,
                 stdin="sleep 600 &\nsleep 600\necho never\n")
    elapsed = time.monotonic() - t0
    ok(r, 124)
    eq(r.stdout, "", "stdout")
    # a background sleep that kept the run alive would keep it 600 s
    check(elapsed < HANG_S, "took %.1f s for --timeout 500ms (background child kept it?)"
          % elapsed)


@test
def memory_limit_is_137_and_says_so():
    r = codecell("run", "--memory", "64M", "-",
                 stdin="print('start', flush=True)\nx = bytearray(400 * 1024 * 1024)\n"
                       "print('survived')\n")
    ok(r, 137)
    eq(r.stdout, "start\n", "stdout")
    check("memory limit" in r.stderr and "--memory" in r.stderr, "stderr: %r" % (r.stderr,))


@test
def memory_limit_applies_to_node():
    r = codecell("run", "--lang", "javascript", "--memory", "128M", "-",
                 stdin="const a = []; while (true) a.push(Buffer.alloc(1 << 20, 1));")
    ok(r, 137)


@test
def output_flood_is_141_and_output_stays_capped():
    r = codecell("run", "--output-limit", "1K", "-",
                 stdin="import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n")
    ok(r, 141)
    check(len(r.stdout) < 2048, "stdout not capped: %d bytes" % len(r.stdout))
    check(r.stdout.startswith("x" * 512), "head kept: %r" % r.stdout[:80])
    check("bytes cut" in r.stdout, "marker: %r" % r.stdout[-200:])
    check("--output-limit" in r.stderr, "stderr: %r" % (r.stderr,))


@test
def output_flood_on_stderr_is_141_too():
    r = codecell("run", "--output-limit", "1K", "--lang", "bash", "-",
                 stdin="while true; do head -c 65536 /dev/zero | tr '\\0' e >&2; done\n")
    ok(r, 141)
    check(r.stderr.startswith("e" * 512), "stderr head: %r" % r.stderr[:80])
    check(len(r.stderr) < 4096, "stderr not capped: %d bytes" % len(r.stderr))


# --- passthrough and truncation ------------------------------------------

@test
def stdout_and_stderr_pass_through_separately():
    r = codecell("run", "-", stdin="import sys\nprint('out 1')\nprint('err 1', file=sys.stderr)\n"
                                   "print('out 2')\nsys.stderr.write('err 2\\n')\n")
    ok(r)
    eq(r.stdout, "out 1\nout 2\n", "stdout")
    eq(r.stderr, "err 1\nerr 2\n", "stderr")
    check("{" not in r.stdout, "no result object without --json")


@test
def output_before_an_exception_is_kept_and_traceback_on_stderr():
    r = codecell("run", "-", stdin="print('partial')\nraise KeyError('k')\n")
    ok(r, 1)
    eq(r.stdout, "partial\n", "stdout")
    check("Traceback (most recent call last)" in r.stderr, "stderr: %r" % r.stderr)
    check(r.stderr.rstrip().endswith("KeyError: 'k'"), "stderr: %r" % r.stderr)


@test
def non_utf8_output_passes_through_unchanged():
    code = b"import sys\nsys.stdout.buffer.write(b'a\\xff\\xfeb\\x00c')\n" \
           b"sys.stderr.buffer.write(b'\\xc3(')\n"
    rc, out, err = raw("run", "-", stdin=code)
    eq(rc, 0, "exit status")
    eq(out, b"a\xff\xfeb\x00c", "stdout bytes")
    eq(err, b"\xc3(", "stderr bytes")


@test
def large_output_under_the_limit_is_intact():
    r = codecell("run", "-", stdin="for i in range(20000):\n    print('line %05d' % i)\n")
    ok(r)
    expect = "".join("line %05d\n" % i for i in range(20000))
    eq(len(r.stdout), len(expect), "length")
    check(r.stdout == expect, "stdout differs from the program's output")


TRUNC_PY = ("import sys\nsys.{s}.write('H' * 100 + 'M' * 10000 + 'T' * 100)\n"
            "sys.{s}.flush()\n")
TRUNC_EXPECT = "H" * 100 + "\n[... 10000 bytes cut ...]\n" + "T" * 100


@test
def truncation_keeps_head_and_tail_stdout():
    r = codecell("run", "--output-limit", "200", "-", stdin=TRUNC_PY.format(s="stdout"))
    ok(r)
    eq(r.stdout, TRUNC_EXPECT, "truncated stdout")


@test
def truncation_keeps_head_and_tail_stderr():
    r = codecell("run", "--output-limit", "200", "-", stdin=TRUNC_PY.format(s="stderr"))
    ok(r)
    eq(r.stdout, "", "stdout")
    check(r.stderr.startswith(TRUNC_EXPECT), "truncated stderr: %r" % r.stderr[:400])


@test
def truncation_keeps_head_and_tail_in_json():
    r = codecell("run", "--json", "--output-limit", "200", "-",
                 stdin=TRUNC_PY.format(s="stdout") + TRUNC_PY.format(s="stderr"))
    ok(r)
    j = r.json
    eq(j["logs"]["stdout"], TRUNC_EXPECT, "logs.stdout")
    eq(j["logs"]["stderr"], TRUNC_EXPECT, "logs.stderr")
    eq(j["truncated"], {"stdout": True, "stderr": True}, "truncated")
    eq(j["status"], "ok", "status")


@test
def truncation_with_many_small_writes():
    # 3000 lines of 10 bytes, limit 1000: head 500 bytes, tail 500 bytes
    code = "for i in range(3000):\n    print('%09d' % i)\n"
    r = codecell("run", "--output-limit", "1000", "-", stdin=code)
    ok(r)
    full = "".join("%09d\n" % i for i in range(3000))
    expect = full[:500] + "\n[... %d bytes cut ...]\n" % (len(full) - 1000) + full[-500:]
    eq(r.stdout, expect, "truncated stdout")
    r = codecell("run", "--json", "--output-limit", "1000", "-", stdin=code)
    eq(r.json["logs"]["stdout"], expect, "logs.stdout")


@test
def output_exactly_at_the_limit_is_not_truncated():
    r = codecell("run", "--json", "--output-limit", "200", "-",
                 stdin="import sys\nsys.stdout.write('z' * 200)\n")
    ok(r)
    eq(r.json["logs"]["stdout"], "z" * 200, "logs.stdout")
    eq(r.json["truncated"]["stdout"], False, "truncated.stdout")


# --- limits together --------------------------------------------------------

NET_PY = """import socket, threading, errno
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
c = socket.socket(); c.settimeout(2)
try:
    c.connect(s.getsockname()); print("net: connected")
except OSError as e:
    print("net: failed", errno.errorcode.get(e.errno))
ev = threading.Event(); n = 0
try:
    for i in range(200):
        threading.Thread(target=ev.wait, daemon=True).start(); n += 1
    print("threads: all")
except RuntimeError:
    print("threads: stopped at", n)
ev.set()
"""


@test
def all_limits_together_and_net_none():
    with scratch() as d:
        p = write(os.path.join(d, "script.py"), NET_PY)
        r = codecell("run", "--timeout", "10", "--memory", "256M", "--pids", "64",
                     "--output-limit", "1M", "--net", "none", p)
        ok(r)
        lines = r.stdout.splitlines()
        eq(lines[0], "net: failed ENETUNREACH", "--net none: loopback reachable?")
        check(lines[1].startswith("threads: stopped at"), "--pids 64 not enforced: %r" % lines)
        check(int(lines[1].split()[-1]) < 64, "more threads than --pids: %r" % lines)
        check("process limit" in r.stderr, "no word on --pids in stderr: %r" % r.stderr)
        r = codecell("run", "--net", "loopback", p)
        ok(r)
        eq(r.stdout.splitlines()[0], "net: connected", "--net loopback")


if __name__ == "__main__":
    main()
