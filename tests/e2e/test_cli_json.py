"""codecell run --json: the result object.  Its shape for a clean run, for
Python exceptions (traceback without ANSI codes or the driver's frames,
chained exceptions, SyntaxError, SystemExit), JavaScript and SQL errors,
and for timeout, memory_limit, output_limit and killed; program output
that is not UTF-8; exactly one JSON object on stdout."""
import contextlib
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import HANG_S, TIMEOUTS_S, check, codecell, eq, main, run_code, scratch, test, tmpdir, write  # noqa: E402

KEYS = {"status", "logs", "outputs", "results", "error", "exit_code", "signal", "execution_count",
        "duration_ms", "usage", "truncated", "limits_unenforced", "limits_hit"}
STATUSES = {"ok", "error", "timeout", "memory_limit", "output_limit", "killed", "rejected"}
DRIVER_MARKS = ("<string>", "_codecell", "exec(code", "python_run", "node_run",
                "[eval]", "node:internal", "Module._compile")



def one_object(r):
    """stdout holds exactly one JSON object (one line); return it, checked
    for the documented shape."""
    s = r.stdout
    check(s.endswith("\n") and s.count("\n") == 1, "stdout is not one line: %r" % s[:500])
    obj, end = json.JSONDecoder().raw_decode(s)
    eq(s[end:], "\n", "text after the JSON object")
    check(isinstance(obj, dict), "not an object: %r" % (obj,))
    missing = KEYS - set(obj)
    check(not missing, "keys missing: %r" % missing)
    extra = set(obj) - KEYS - {"warning"}
    check(not extra, "unexpected keys: %r" % extra)
    check(obj["status"] in STATUSES, "status %r" % obj["status"])
    check(isinstance(obj["logs"], dict) and set(obj["logs"]) == {"stdout", "stderr"},
          "logs: %r" % obj["logs"])
    check(all(isinstance(v, str) for v in obj["logs"].values()), "logs not strings")
    # outputs: the logs' bytes in order, each stream's pieces joined are its log
    check(isinstance(obj["outputs"], list) and all(
        isinstance(o, dict) and set(o) == {"stream", "text"} and o["stream"] in ("stdout", "stderr")
        and isinstance(o["text"], str) and o["text"] for o in obj["outputs"]),
        "outputs: %r" % (obj["outputs"],))
    for stream in ("stdout", "stderr"):
        eq("".join(o["text"] for o in obj["outputs"] if o["stream"] == stream),
           obj["logs"][stream], "outputs of %s" % stream)
    check(isinstance(obj["results"], list), "results not a list")
    check(obj["error"] is None or (isinstance(obj["error"], dict) and
                                   set(obj["error"]) == {"name", "value", "traceback"} and
                                   all(isinstance(v, str) for v in obj["error"].values())),
          "error: %r" % (obj["error"],))
    check(obj["exit_code"] is None or isinstance(obj["exit_code"], int), "exit_code type")
    check(obj["signal"] is None or isinstance(obj["signal"], str), "signal type")
    check(isinstance(obj["duration_ms"], (int, float)) and obj["duration_ms"] >= 0,
          "duration_ms: %r" % obj["duration_ms"])
    check(isinstance(obj["usage"], dict) and set(obj["usage"]) == {"cpu_ms", "max_rss_kb"},
          "usage: %r" % obj["usage"])
    check(isinstance(obj["usage"]["cpu_ms"], (int, float)), "usage.cpu_ms type")
    check(isinstance(obj["usage"]["max_rss_kb"], int), "usage.max_rss_kb type")
    eq(set(obj["truncated"]), {"stdout", "stderr"}, "truncated keys")
    check(all(isinstance(v, bool) for v in obj["truncated"].values()), "truncated not bool")
    check(isinstance(obj["limits_unenforced"], list), "limits_unenforced not a list")
    check(isinstance(obj["limits_hit"], list), "limits_hit not a list")
    return obj


def no_driver_frames(tb):
    for mark in DRIVER_MARKS:
        check(mark not in tb, "driver frame %r in traceback:\n%s" % (mark, tb))
    check("\x1b" not in tb, "ANSI escape in traceback: %r" % tb)


# --- ok --------------------------------------------------------------------

@test
def ok_result_shape():
    r = run_code("import sys\nprint(6*7)\nprint('note', file=sys.stderr)\n")
    eq(r.status, 0, "exit status")
    j = one_object(r)
    eq(j["status"], "ok", "status")
    eq(j["logs"], {"stdout": "42\n", "stderr": "note\n"}, "logs")
    eq(j["results"], [], "results")
    eq(j["error"], None, "error")
    eq(j["exit_code"], 0, "exit_code")
    eq(j["signal"], None, "signal")
    eq(j["execution_count"], None, "execution_count")
    # in milliseconds: within the run as the test timed it from outside
    check(0 < j["duration_ms"] <= r.elapsed * 1000, "duration_ms %r in a run of %.3f s"
          % (j["duration_ms"], r.elapsed))
    check(j["usage"]["max_rss_kb"] > 0, "usage.max_rss_kb %r" % j["usage"])
    check(j["usage"]["cpu_ms"] >= 0, "usage.cpu_ms %r" % j["usage"])
    eq(j["truncated"], {"stdout": False, "stderr": False}, "truncated")
    eq(j["limits_hit"], [], "limits_hit")
    eq(j["limits_unenforced"], [], "limits_unenforced (as root, cgroups usable)")
    eq(r.stderr, "", "codecell's own stderr")


@test
def ok_in_every_language():
    for lang, code, out in (("javascript", "console.log(6*7)", "42\n"),
                            ("bash", "echo $((6*7))", "42\n")):
        r = run_code(code, lang=lang)
        eq(r.status, 0, "exit status %s" % lang)
        j = one_object(r)
        eq(j["status"], "ok", "status %s" % lang)
        eq(j["logs"]["stdout"], out, "stdout %s" % lang)
        eq(j["error"], None, "error %s" % lang)
    r = run_code("select 6*7;", lang="sql")
    j = one_object(r)
    eq(j["status"], "ok", "status sql")
    check("42" in j["logs"]["stdout"], "sql stdout %r" % j["logs"])


@test
def cpu_time_and_rss_are_measured():
    r = run_code("x = bytearray(50 * 1024 * 1024)\nfor i in range(3000000): pass\n")
    j = one_object(r)
    eq(j["status"], "ok", "status")
    check(j["usage"]["max_rss_kb"] >= 40 * 1024, "max_rss_kb %r for 50 MB" % j["usage"])
    check(j["usage"]["cpu_ms"] >= 20, "cpu_ms %r for a busy loop" % j["usage"])
    check(j["duration_ms"] >= j["usage"]["cpu_ms"] * 0.5, "duration vs cpu: %r" % j)


@test
def program_output_looking_like_json_stays_inside_logs():
    r = run_code('print(\'{"status": "ok"}\')\nprint("}{\\n")\n')
    j = one_object(r)
    eq(j["logs"]["stdout"], '{"status": "ok"}\n}{\n\n', "logs.stdout")


# --- Python exceptions --------------------------------------------------

@test
def python_exception_name_value_traceback():
    code = ("def inner(x):\n"
            "    raise ValueError('bad %d' % x)\n"
            "\n"
            "def outer():\n"
            "    inner(42)\n"
            "\n"
            "print('before')\n"
            "outer()\n")
    r = run_code(code)
    eq(r.status, 1, "exit status")
    j = one_object(r)
    eq(j["status"], "error", "status")
    eq(j["exit_code"], 1, "exit_code")
    eq(j["logs"]["stdout"], "before\n", "stdout before the exception")
    e = j["error"]
    eq(e["name"], "ValueError", "error.name")
    eq(e["value"], "bad 42", "error.value")
    tb = e["traceback"]
    check(tb.startswith("Traceback (most recent call last):\n"), "traceback start: %r" % tb)
    check(tb.rstrip("\n").endswith("ValueError: bad 42"), "traceback end: %r" % tb)
    # the user's frames, in order, with their source lines
    # (code without a name is a real file, main.py, as `python3 main.py`
    # names it)
    want = ['File "/home/user/main.py", line 8, in <module>', "    outer()",
            'File "/home/user/main.py", line 5, in outer', "    inner(42)",
            'File "/home/user/main.py", line 2, in inner', "    raise ValueError('bad %d' % x)"]
    pos = 0
    for w in want:
        k = tb.find(w, pos)
        check(k >= 0, "%r not found (in order) in traceback:\n%s" % (w, tb))
        pos = k + len(w)
    eq(tb.count('File "'), 3, "number of frames:\n%s" % tb)
    no_driver_frames(tb)
    check(tb in j["logs"]["stderr"], "traceback also in logs.stderr")


@test
def python_traceback_names_the_file_not_the_host_path():
    with scratch() as d:
        p = write(os.path.join(d, "analysis.py"), "x = 1\ny = x / 0\n")
        r = codecell("run", "--json", p)
        j = one_object(r)
        e = j["error"]
        eq(e["name"], "ZeroDivisionError", "error.name")
        eq(e["value"], "division by zero", "error.value")
        # the script is at its path in the workspace, as python3 names it
        check('File "/home/user/analysis.py", line 2, in <module>' in e["traceback"],
              e["traceback"])
        check("y = x / 0" in e["traceback"], "source line missing:\n" + e["traceback"])
        check(d not in e["traceback"] and d not in j["logs"]["stderr"], "host path leaks")
        no_driver_frames(e["traceback"])


@test
def python_traceback_has_no_ansi_even_when_colour_is_forced():
    r = run_code("def f():\n    return {}['missing']\nf()\n",
                 "--env", "PYTHON_COLORS=1", "--env", "FORCE_COLOR=1",
                 "--env", "TERM=xterm-256color")
    j = one_object(r)
    eq(j["error"]["name"], "KeyError", "error.name")
    eq(j["error"]["value"], "'missing'", "error.value")
    no_driver_frames(j["error"]["traceback"])
    check("\x1b" not in j["logs"]["stderr"], "ANSI in logs.stderr: %r" % j["logs"]["stderr"])


@test
def python_chained_exception_from():
    code = ("def load():\n"
            "    raise KeyError('cfg')\n"
            "try:\n"
            "    load()\n"
            "except KeyError as e:\n"
            "    raise RuntimeError('could not load') from e\n")
    j = one_object(run_code(code))
    e = j["error"]
    eq(e["name"], "RuntimeError", "error.name")
    eq(e["value"], "could not load", "error.value")
    tb = e["traceback"]
    a = tb.find("KeyError: 'cfg'")
    b = tb.find("The above exception was the direct cause of the following exception")
    c = tb.find("RuntimeError: could not load")
    check(0 <= a < b < c, "chain out of order or missing:\n%s" % tb)
    check("raise KeyError('cfg')" in tb and "raise RuntimeError('could not load') from e" in tb,
          "source lines missing:\n%s" % tb)
    eq(tb.count("Traceback (most recent call last):"), 2, "two tracebacks:\n%s" % tb)
    no_driver_frames(tb)


@test
def python_chained_exception_during_handling():
    code = "try:\n    1/0\nexcept ZeroDivisionError:\n    undefined_name\n"
    j = one_object(run_code(code))
    e = j["error"]
    eq(e["name"], "NameError", "error.name")
    eq(e["value"], "name 'undefined_name' is not defined", "error.value")
    tb = e["traceback"]
    check("ZeroDivisionError: division by zero" in tb, tb)
    check("During handling of the above exception, another exception occurred" in tb, tb)
    no_driver_frames(tb)


@test
def python_syntax_error():
    j = one_object(run_code("print('fine')\nx = (1,\n"))
    eq(j["status"], "error", "status")
    eq(j["exit_code"], 1, "exit_code")
    eq(j["logs"]["stdout"], "", "nothing ran")
    e = j["error"]
    eq(e["name"], "SyntaxError", "error.name")
    check("never closed" in e["value"], "error.value %r" % e["value"])
    tb = e["traceback"]
    check('File "/home/user/main.py", line 2' in tb, tb)
    check("x = (1," in tb and "^" in tb, "source line and caret:\n%s" % tb)
    check(tb.rstrip("\n").endswith("SyntaxError: '(' was never closed"), tb)
    no_driver_frames(tb)


@test
def python_indentation_error_is_a_syntax_error_subclass():
    e = one_object(run_code("if True:\nprint(1)\n"))["error"]
    eq(e["name"], "IndentationError", "error.name")
    check("indented block" in e["value"], "error.value %r" % e["value"])
    no_driver_frames(e["traceback"])


@test
def python_system_exit_with_code():
    r = run_code("import sys\nprint('bye')\nsys.exit(5)\n")
    eq(r.status, 5, "exit status")
    j = one_object(r)
    eq(j["status"], "error", "status")
    eq(j["exit_code"], 5, "exit_code")
    eq(j["error"], None, "SystemExit is an exit, not an exception")
    eq(j["logs"], {"stdout": "bye\n", "stderr": ""}, "logs")
    # a message: printed to stderr, status 1, like python3
    r = run_code("raise SystemExit('giving up')\n")
    eq(r.status, 1, "exit status")
    j = one_object(r)
    eq(j["exit_code"], 1, "exit_code")
    eq(j["logs"]["stderr"], "giving up\n", "logs.stderr")
    check("Traceback" not in j["logs"]["stderr"], "traceback for SystemExit")
    # exit() and quit() exist although site is skipped
    r = run_code("exit(2)\n")
    eq(one_object(r)["exit_code"], 2, "exit(2)")
    r = run_code("import sys\nsys.exit(0)\n")
    j = one_object(r)
    eq((j["status"], j["exit_code"], j["error"]), ("ok", 0, None), "sys.exit(0)")


@test
def python_keyboard_interrupt_and_custom_exceptions():
    code = ("class MyError(Exception):\n    pass\n"
            "raise MyError('custom', 7)\n")
    e = one_object(run_code(code))["error"]
    eq(e["name"], "MyError", "error.name")
    eq(e["value"], "('custom', 7)", "error.value")
    e = one_object(run_code("raise KeyboardInterrupt\n"))["error"]
    eq(e["name"], "KeyboardInterrupt", "error.name for a BaseException")


@test
def python_exception_with_unprintable_str():
    code = "class E(Exception):\n    def __str__(self):\n        raise RuntimeError\nraise E()\n"
    r = run_code(code)
    j = one_object(r)
    eq(j["error"]["name"], "E", "error.name")
    check(j["error"]["value"] != "", "error.value empty")
    no_driver_frames(j["error"]["traceback"])


@test
def python_exception_with_a_lone_surrogate_keeps_its_error_object():
    # a str built from a non-UTF-8 file name (surrogateescape) is an
    # ordinary Python str; its exception must not vanish from the result
    code = ("name = b'caf\\xe9.csv'.decode('utf-8', 'surrogateescape')\n"
            "raise FileNotFoundError('missing input: ' + name)\n")
    r = run_code(code)
    eq(r.status, 1, "exit status")
    j = one_object(r)
    check(j["error"] is not None, "error object lost: %r" % (j,))
    eq(j["error"]["name"], "FileNotFoundError", "error.name")
    check(j["error"]["value"].startswith("missing input: caf"), j["error"]["value"])
    no_driver_frames(j["error"]["traceback"])


@test
def python_exception_with_a_huge_message_keeps_its_error_object():
    r = run_code("raise ValueError('x' * 2000000)\n")
    eq(r.status, 1, "exit status")
    j = one_object(r)
    check(j["error"] is not None, "error object lost for a 2 MB message")
    eq(j["error"]["name"], "ValueError", "error.name")
    check(j["error"]["value"].startswith("xxxx"), "error.value start")


@test
def error_object_respects_the_output_limit():
    # --output-limit caps what comes back; the traceback is output too
    r = run_code("raise ValueError('y' * 300000)\n", "--output-limit", "4K")
    j = one_object(r)
    eq(j["error"]["name"], "ValueError", "error.name")
    check(len(j["logs"]["stderr"]) < 5000, "logs.stderr %d bytes" % len(j["logs"]["stderr"]))
    check(len(r.stdout) < 64 * 1024,
          "a 4K output limit gave a %d-byte result object (error.value %d, traceback %d)"
          % (len(r.stdout), len(j["error"]["value"]), len(j["error"]["traceback"])))


# --- JavaScript and SQL errors --------------------------------------------

@test
def javascript_error_object():
    with scratch() as d:
        p = write(os.path.join(d, "app.js"),
                  "function f() {\n  throw new TypeError('nope');\n}\nconsole.log('before');\nf();\n")
        r = codecell("run", "--json", p)
        eq(r.status, 1, "exit status")
        j = one_object(r)
        eq(j["status"], "error", "status")
        eq(j["exit_code"], 1, "exit_code")
        eq(j["logs"]["stdout"], "before\n", "logs.stdout")
        e = j["error"]
        eq(e["name"], "TypeError", "error.name")
        eq(e["value"], "nope", "error.value")
        tb = e["traceback"]
        check(tb.startswith("TypeError: nope"), tb)
        check("at f (" in tb and "app.js:2:" in tb, "user frame missing:\n%s" % tb)
        check(d not in tb, "host path in traceback:\n%s" % tb)
        no_driver_frames(tb)


@test
def javascript_traceback_keeps_a_message_that_mentions_node():
    # the filter for node's internal frames must not eat the message line
    j = one_object(run_code("throw new Error('lost at node:5 in the [eval] step');",
                            lang="javascript"))
    tb = j["error"]["traceback"]
    eq(j["error"]["value"], "lost at node:5 in the [eval] step", "error.value")
    check(tb.startswith("Error: lost at node:5 in the [eval] step"),
          "message line missing from the traceback: %r" % tb)


@test
def javascript_unhandled_rejection():
    j = one_object(run_code("Promise.reject(new RangeError('rejected!'));", lang="javascript"))
    eq(j["status"], "error", "status")
    eq(j["error"]["name"], "RangeError", "error.name")
    eq(j["error"]["value"], "rejected!", "error.value")
    no_driver_frames(j["error"]["traceback"])
    code = "async function g() { await null; throw new Error('async boom'); }\ng();\n"
    j = one_object(run_code(code, lang="javascript"))
    eq((j["error"]["name"], j["error"]["value"]), ("Error", "async boom"), "async error")
    check("at g (" in j["error"]["traceback"], j["error"]["traceback"])
    # a rejection with a value that is not an Error
    j = one_object(run_code("Promise.reject('plain reason');", lang="javascript"))
    eq(j["status"], "error", "status")
    eq(j["error"]["value"], "plain reason", "error.value")


@test
def javascript_syntax_error_and_timer_error():
    j = one_object(run_code("let x = ;\n", lang="javascript"))
    eq(j["error"]["name"], "SyntaxError", "error.name")
    check("Unexpected token" in j["error"]["value"], j["error"]["value"])
    no_driver_frames(j["error"]["traceback"])
    j = one_object(run_code("setTimeout(() => { throw new Error('later'); }, 5);",
                            lang="javascript"))
    eq((j["error"]["name"], j["error"]["value"]), ("Error", "later"), "timer error")
    eq(j["exit_code"], 1, "exit_code")


@test
def sql_error_object():
    r = run_code("select 1 as one;\nselect * from nosuch;\nselect 3;\n", lang="sql")
    eq(r.status, 1, "exit status")
    j = one_object(r)
    eq(j["status"], "error", "status")
    eq(j["exit_code"], 1, "exit_code")
    e = j["error"]
    eq(e["name"], "SQLError", "error.name")
    check("no such table: nosuch" in e["value"], "error.value %r" % e["value"])
    check("\n" not in e["value"], "error.value is one line: %r" % e["value"])
    check("no such table: nosuch" in e["traceback"], "error.traceback %r" % e["traceback"])
    check("one" in j["logs"]["stdout"], "first statement's output: %r" % j["logs"])
    check("3" not in j["logs"]["stdout"].replace("one", ""), "ran past the error (-bail)")
    j = one_object(run_code("selec 2;", lang="sql"))
    eq(j["error"]["name"], "SQLError", "syntax error name")
    check("syntax error" in j["error"]["value"], j["error"]["value"])


# --- limits and kills -----------------------------------------------------

@test
def timeout_object():
    for t in TIMEOUTS_S:
        r = run_code("import time\nprint('started', flush=True)\ntime.sleep(600)\n",
                     "--timeout", str(t), timeout=2 * HANG_S)
        eq(r.status, 124, "exit status")
        j = one_object(r)
        eq(j["status"], "timeout", "status")
        eq(j["exit_code"], None, "exit_code")
        eq(j["error"], None, "error")
        check("wall_time" in j["limits_hit"], "limits_hit %r" % j["limits_hit"])
        # no sooner; how much later depends on the load
        check(t * 1000 - 100 <= j["duration_ms"] <= r.elapsed * 1000,
              "duration_ms %r for --timeout %d in a run of %.3f s"
              % (j["duration_ms"], t, r.elapsed))
        if j["logs"]["stdout"]:  # Python got to print before the timeout
            break
    eq(j["logs"]["stdout"], "started\n", "output before the timeout")


@test
def cpu_time_limit_is_a_timeout():
    r = run_code("while True:\n    pass\n", "--cpu-time", "1", "--timeout", "20")
    eq(r.status, 124, "exit status")
    j = one_object(r)
    eq(j["status"], "timeout", "status")
    check("cpu_time" in j["limits_hit"], "limits_hit %r" % j["limits_hit"])
    check(j["usage"]["cpu_ms"] >= 900, "cpu_ms %r" % j["usage"])


@test
def memory_limit_object():
    r = run_code("print('start', flush=True)\nx = bytearray(400 * 1024 * 1024)\n",
                 "--memory", "64M")
    eq(r.status, 137, "exit status")
    j = one_object(r)
    eq(j["status"], "memory_limit", "status")
    eq(j["exit_code"], None, "exit_code")
    check("memory" in j["limits_hit"], "limits_hit %r" % j["limits_hit"])
    eq(j["logs"]["stdout"], "start\n", "logs.stdout")
    check(j["usage"]["max_rss_kb"] <= 80 * 1024, "max_rss_kb above the limit: %r" % j["usage"])


@test
def output_limit_object():
    r = run_code("import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n",
                 "--output-limit", "1K")
    eq(r.status, 141, "exit status")
    j = one_object(r)
    eq(j["status"], "output_limit", "status")
    check("output" in j["limits_hit"], "limits_hit %r" % j["limits_hit"])
    eq(j["truncated"]["stdout"], True, "truncated.stdout")
    out = j["logs"]["stdout"]
    check(out.startswith("x" * 512) and out.endswith("x" * 512), "head/tail: %r" % out[:100])
    check("bytes cut ...]" in out, "marker: %r" % out)
    check(len(out) < 1200, "logs.stdout %d bytes for a 1K limit" % len(out))
    check(len(r.stdout) < 4096, "the object is %d bytes" % len(r.stdout))


@test
def pids_limit_hit_is_reported():
    code = ("import threading\nev = threading.Event(); n = 0\n"
            "try:\n    for i in range(100):\n"
            "        threading.Thread(target=ev.wait, daemon=True).start(); n += 1\n"
            "except RuntimeError:\n    pass\nev.set()\nprint(n)\n")
    j = one_object(run_code(code, "--pids", "16"))
    eq(j["status"], "ok", "status")
    check(int(j["logs"]["stdout"]) < 16, "threads started: %r" % j["logs"]["stdout"])
    check("pids" in j["limits_hit"], "limits_hit %r" % j["limits_hit"])


@test
def killed_object():
    r = run_code("import os, signal\nprint('x', flush=True)\nos.kill(os.getpid(), signal.SIGTERM)\n")
    eq(r.status, 143, "exit status")
    j = one_object(r)
    eq(j["status"], "killed", "status")
    eq(j["signal"], "SIGTERM", "signal")
    eq(j["exit_code"], None, "exit_code")
    eq(j["error"], None, "error")
    eq(j["logs"]["stdout"], "x\n", "logs.stdout")
    r = run_code("kill -SEGV $$\n", lang="bash")
    eq(r.status, 139, "exit status")
    j = one_object(r)
    eq((j["status"], j["signal"]), ("killed", "SIGSEGV"), "SIGSEGV")


# --- encoding and framing --------------------------------------------------

@test
def non_utf8_output_is_still_valid_json():
    code = ("import sys\nsys.stdout.buffer.write(b'ok \\xff\\xfe end')\n"
            "sys.stderr.buffer.write(b'e\\xc3')\n")
    r = run_code(code)
    eq(r.status, 0, "exit status")
    j = one_object(r)
    out = j["logs"]["stdout"]
    check(out.startswith("ok ") and out.endswith(" end"), "ASCII kept: %r" % out)
    check("\ufffd" in out, "no replacement character: %r" % out)
    check("\ufffd" in j["logs"]["stderr"] and j["logs"]["stderr"].startswith("e"),
          "stderr: %r" % j["logs"]["stderr"])
    # valid multi-byte UTF-8 survives as is
    j = one_object(run_code("print('\u00e9\u2603\U0001f600')\n"))
    eq(j["logs"]["stdout"], "\u00e9\u2603\U0001f600\n", "UTF-8 output")


@test
def non_utf8_output_cut_by_truncation_is_valid_json():
    # the cut may land inside a multi-byte character
    code = "import sys\nsys.stdout.write('\u00e9' * 5000)\n"
    for limit in ("101", "103", "64"):
        r = run_code(code, "--output-limit", limit)
        j = one_object(r)
        eq(j["truncated"]["stdout"], True, "truncated at %s" % limit)
        check(j["logs"]["stdout"].startswith("\u00e9"), "head at %s" % limit)


@test
def exactly_one_object_even_when_the_program_fails_loudly():
    code = ("import sys\nfor i in range(100):\n    print('{}', i)\n"
            "    print('[]', file=sys.stderr)\nraise SystemError('x')\n")
    r = run_code(code)
    j = one_object(r)
    eq(j["error"]["name"], "SystemError", "error.name")
    eq(len(j["logs"]["stdout"].splitlines()), 100, "stdout lines in logs")


@test
def rejected_request_in_json_mode():
    r = run_code("   \n\t\n")
    eq(r.status, 125, "exit status")
    j = one_object(r)
    eq(j["status"], "rejected", "status")
    eq(j["error"]["name"], "InvalidRequest", "error.name")
    check("empty" in j["error"]["value"], "error.value %r" % j["error"]["value"])


@test
def program_cannot_forge_the_error_record():
    # the driver's error channel must not be a way for the program to
    # make a clean run look like an exception
    code = ("import os\nfor fd in range(3, 10):\n    try:\n"
            "        os.write(fd, b'{\"error\": {\"name\": \"Forged\", \"value\": \"x\", "
            "\"traceback\": \"\"}}\\n')\n    except OSError:\n        pass\nprint('clean')\n")
    r = run_code(code)
    eq(r.status, 0, "exit status")
    j = one_object(r)
    eq(j["logs"]["stdout"], "clean\n", "logs.stdout")
    eq(j["error"], None, "a clean exit reports a forged error")
    eq(j["status"], "ok", "status of a clean exit")


if __name__ == "__main__":
    main()
