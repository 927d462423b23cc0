"""JavaScript sessions through `codecell shell --lang javascript --json`:
one result object per statement.  State, results, output, errors,
top-level await, require, timeouts, interrupts, errors thrown later,
multi-line statements and bad input."""
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import (CODECELL, EPOLL_WAITS, HANG_S, JsonShell, await_blocked, check, children, codecell, eq, holder_of,  # noqa: E402
                    main, test)

KERNEL_FRAMES = ("[eval]", "node:repl", "node:vm", "node:internal/timers", "runCellSync")


class Shell(JsonShell):
    """A live `codecell shell --lang javascript --json`."""

    def __init__(self, *args):
        super().__init__(*args, lang="javascript")


def await_mark(sh, what):
    """A fresh file name for the kernel to open (JavaScript that opens it,
    and a wait for the kernel to hold it open): the moment a cell or a
    timer got somewhere, seen from the host, where a fixed pause is too
    short on a loaded machine."""
    mark = "/tmp/ccmark-" + uuid.uuid4().hex
    code = "globalThis.__ccmark = require('fs').openSync(%r, 'w')" % mark

    def wait():
        deadline = time.monotonic() + HANG_S
        while not holder_of(sh.p.pid, mark):
            check(time.monotonic() < deadline, "%s: never seen" % what)
            time.sleep(0.02)
    return code, wait


def text(r):
    """The main result's text/plain, or None."""
    main_results = [x for x in r["results"] if x.get("is_main_result")]
    return main_results[0]["text/plain"] if main_results else None


def kernel_of(shell_pid):
    """The pids of node processes under a codecell shell (its kernel)."""
    found, todo = [], [shell_pid]
    while todo:
        pid = todo.pop()
        for kid in children(pid):
            try:
                with open("/proc/%d/cmdline" % kid, "rb") as f:
                    if f.read().startswith(b"/usr/bin/node\0-e\0"):
                        found.append(kid)
            except OSError:
                pass
            todo.append(kid)
    return found


@test
def let_const_var_function_and_class_persist_across_many_cells():
    sh = Shell()
    for stmt in ("let n = 0", "const base = 100", "var label = 'count'",
                 "function bump(k) { return k + 1 }",
                 "class Box { constructor(v) { this.v = v } get twice() { return this.v * 2 } }"):
        eq(sh.run(stmt)["status"], "ok", stmt)
    for i in range(100):
        eq(sh.run("n = bump(n);")["status"], "ok", "execution %d" % i)
    r = sh.run("[label, base + n, new Box(n).twice]")
    eq(text(r), "[ 'count', 200, 200 ]")
    eq(r["execution_count"], 106, "execution_count grows by one per statement")
    # a const stays a const
    r = sh.run("base = 1")
    eq((r["status"], r["error"]["name"]), ("error", "TypeError"), r)
    eq(sh.run("base")["execution_count"], 108)
    eq(sh.close(), 0)


@test
def trailing_expression_is_the_main_result_and_undefined_gives_none():
    sh = Shell()
    eq(sh.run("6 * 7")["results"], [{"text/plain": "42", "is_main_result": True}])
    eq(sh.run("let quiet = 1")["results"], [])
    eq(sh.run("undefined")["results"], [])
    eq(text(sh.run("'text'")), "'text'", "util.inspect quotes strings")
    eq(text(sh.run("{ a: 1, b: [1, 2] }")), "{ a: 1, b: [ 1, 2 ] }",
       "a cell that is an object literal is one, as in the node REPL")
    eq(text(sh.run("new Map([['k', 1]])")), "Map(1) { 'k' => 1 }")
    eq(text(sh.run("quiet = 5")), "5")
    sh.close()


@test
def console_output_goes_to_logs_and_is_all_there_before_the_result():
    sh = Shell("--output-limit", "16M")
    r = sh.run("console.log('hello', {x: 1}); console.error('oops'); 3")
    eq((r["logs"]["stdout"], r["logs"]["stderr"], text(r)), ("hello { x: 1 }\n", "oops\n", "3"))
    r = sh.run("console.log('not a result')")
    eq((r["results"], r["logs"]["stdout"]), ([], "not a result\n"))
    # 300 kB written in a synchronous burst: all of it is in this cell's
    # logs, none in the next one's
    r = sh.run("for (let i = 0; i < 3000; i++) process.stdout.write('x'.repeat(99) + '\\n')")
    eq(len(r["logs"]["stdout"]), 300000, "all the output")
    eq(sh.run("1")["logs"]["stdout"], "", "nothing left over for the next cell")
    # 8 MiB in one write, far more than a pipe holds
    r = sh.run("process.stdout.write('y'.repeat(8 << 20));"
               " process.stderr.write('z'.repeat(4 << 20))")
    eq((len(r["logs"]["stdout"]), len(r["logs"]["stderr"])), (8 << 20, 4 << 20), "all the output")
    eq(r["truncated"], {"stdout": False, "stderr": False, "results": False})
    r = sh.run("2")
    eq((r["logs"], text(r)), ({"stdout": "", "stderr": ""}, "2"), "nothing left over")
    sh.close()


@test
def errors_come_back_without_kernel_frames_and_the_session_lives_on():
    sh = Shell()
    sh.run("const keep = 'yes'")
    sh.run("function inner() { throw new TypeError('bad thing') }")
    sh.run("function outer() { return inner() }")
    r = sh.run("outer()")
    eq(r["status"], "error")
    eq((r["error"]["name"], r["error"]["value"]), ("TypeError", "bad thing"))
    tb = r["error"]["traceback"]
    check(tb.startswith("TypeError: bad thing\n"), tb)
    for frame in ("at inner (<cell-2>:1:", "at outer (<cell-3>:1:", "at <cell-4>:1:1"):
        check(frame in tb, tb)
    check(not any(k in tb for k in KERNEL_FRAMES) and "\x1b[" not in tb, tb)
    # an error of node itself keeps its properties
    r = sh.run("require('fs').readFileSync('no-such-file')")
    eq(r["error"]["name"], "Error")
    check("ENOENT" in r["error"]["value"] and "code: 'ENOENT'" in r["error"]["traceback"], r)
    check(not any(k in r["error"]["traceback"] for k in KERNEL_FRAMES), r["error"])
    r = sh.run("throw 5")
    eq((r["error"]["name"], r["error"]["value"]), ("Uncaught", "5"))
    r = sh.run("let = = 2")
    eq(r["error"]["name"], "SyntaxError")
    check("at " not in r["error"]["traceback"], r["error"]["traceback"])
    r = sh.run("keep")
    eq((r["status"], text(r)), ("ok", "'yes'"))
    eq(r["execution_count"], 8, "failed cells count too")
    sh.close()


@test
def top_level_await_works_and_its_declarations_persist():
    sh = Shell()
    r = sh.run("const v = await Promise.resolve(6)")
    eq((r["status"], r["results"]), ("ok", []), r)
    eq(text(sh.run("v * 7")), "42")
    r = sh.run("await new Promise(r => setTimeout(() => r('late'), 100))")
    eq(text(r), "'late'")
    check(sh.elapsed >= 0.1, "it waited: %.3f s" % sh.elapsed)
    r = sh.run("await Promise.reject(new RangeError('nope'))")
    eq((r["status"], r["error"]["name"], r["error"]["value"]), ("error", "RangeError", "nope"))
    check(not any(k in r["error"]["traceback"] for k in KERNEL_FRAMES), r["error"])
    r = sh.run("const { setTimeout: sleep } = require('timers/promises'); await sleep(10, 'slept')")
    eq(text(r), "'slept'")
    eq(text(sh.run("typeof sleep")), "'function'")
    sh.close()


@test
def require_finds_core_modules_and_files_in_the_workspace():
    sh = Shell()
    eq(text(sh.run("require('path').join('a', 'b')")), "'a/b'")
    eq(text(sh.run("os.platform()")), "'linux'", "core modules are globals, as in the REPL")
    eq(text(sh.run("process.cwd()")), "'/home/user'")
    sh.run("fs.writeFileSync('helper.js', 'module.exports = (x) => x * 3')")
    eq(text(sh.run("require('./helper')(14)")), "42", "relative to the working directory")
    eq(text(sh.run("fs.readFileSync('helper.js', 'utf8')")), "'module.exports = (x) => x * 3'",
       "files persist")
    r = sh.run("require('no-such-module')")
    eq(r["error"]["name"], "Error")
    check("Cannot find module 'no-such-module'" in r["error"]["value"], r)
    sh.close()


@test
def timeout_interrupts_an_infinite_loop_and_keeps_the_state():
    sh = Shell("--timeout", "1")
    sh.run("let total = 41")
    r = sh.run("while (true) {}")
    eq(r["status"], "timeout", r)
    eq((r["error"]["name"], r["restarted"]), ("Interrupted", False), r)
    check("wall_time" in r["limits_hit"], r)
    # the loop never ends: the bound tells interrupted from not
    check(sh.elapsed < HANG_S, "interrupted in time: %.1f s" % sh.elapsed)
    eq(text(sh.run("total + 1")), "42")
    # a cell waiting on a promise that never settles is given up
    r = sh.run("await new Promise(() => {})")
    eq((r["status"], r["error"]["name"], r["restarted"]), ("timeout", "Interrupted", False), r)
    eq(text(sh.run("total")), "41")
    # showing the result runs user code too
    r = sh.run("({ [Symbol.for('nodejs.util.inspect.custom')]() { for (;;) {} } })")
    eq((r["status"], r["error"]["name"], r["restarted"]), ("timeout", "Interrupted", False), r)
    eq(text(sh.run("total")), "41")
    # nor does a frozen global object get in the way
    sh.run("Object.freeze(globalThis)")
    r = sh.run("for (;;) {}")
    eq((r["status"], r["error"]["name"], r["restarted"]), ("timeout", "Interrupted", False), r)
    eq(text(sh.run("total")), "41")
    eq(sh.close(), 0)


@test
def a_busy_loop_after_an_await_restarts_the_kernel_keeping_files():
    # JavaScript run from the event loop cannot be stopped by SIGINT: the
    # kernel is killed after the grace period and a fresh one started
    sh = Shell("--timeout", "1")
    sh.run("fs.writeFileSync('data.txt', 'survives'); var v = 1")
    r = sh.run("await null; while (true) {}")
    eq((r["status"], r["restarted"]), ("timeout", True), r)
    check(sh.elapsed < HANG_S, "killed after the grace period: %.1f s" % sh.elapsed)
    eq(text(sh.run("fs.readFileSync('data.txt', 'utf8')")), "'survives'", "the workspace is kept")
    eq(sh.run("v")["error"]["name"], "ReferenceError", "the variables are not")
    sh.close()


@test
def ctrl_c_interrupts_the_cell_and_sigint_between_cells_is_ignored():
    sh = Shell()
    sh.run("const kept = 9")
    kernels = kernel_of(sh.p.pid)
    eq(len(kernels), 1, "one node kernel")
    # between cells: straight to the kernel, which ignores it
    os.kill(kernels[0], signal.SIGINT)
    # handled once node's loop sleeps again: libuv's handler only writes
    # to a pipe the loop watches, and the loop does not sleep while that
    # pipe has something to read
    await_blocked(kernels[0], EPOLL_WAITS, signal.SIGINT)
    r = sh.run("kept")
    eq((r["status"], text(r), r["restarted"]), ("ok", "9", False), r)
    # Ctrl-C once the cell runs, not before the shell has sent it
    opened, running = await_mark(sh, "the cell")
    sh.send(opened + "; while (true) {}")
    running()
    sh.p.send_signal(signal.SIGINT)
    r = sh.result()
    eq((r["status"], r["error"]["name"], r["restarted"]), ("error", "Interrupted", False), r)
    eq(text(sh.run("kept")), "9", "state kept after Ctrl-C")
    eq(sh.close(), 0)


@test
def errors_thrown_later_do_not_kill_the_kernel():
    sh = Shell()
    sh.run("let alive = 'still'")
    # thrown by a timer between cells: written to the next cell's stderr
    # (the next cell goes once the timer has run, seen from here: its
    # throw follows in the same callback, before the kernel reads again)
    opened, fired = await_mark(sh, "the timer")
    r = sh.run("setTimeout(() => { %s; throw new Error('from a timer') }, 10); 1" % opened)
    eq(r["status"], "ok", r)
    fired()
    r = sh.run("alive")
    eq((r["status"], text(r)), ("ok", "'still'"), r)
    check(r["logs"]["stderr"].startswith("Uncaught Error: from a timer\n"), r["logs"])
    check("<cell-2>" in r["logs"]["stderr"] and "[eval]" not in r["logs"]["stderr"], r["logs"])
    # a rejection the cell left unhandled is that cell's error
    r = sh.run("Promise.reject(new Error('unhandled')); 2")
    eq((r["status"], r["error"]["value"], text(r)), ("error", "unhandled", "2"), r)
    # one that comes while a cell waits ends that cell
    r = sh.run("setTimeout(() => { throw new Error('mid-wait') }, 20); await new Promise(() => {})")
    eq((r["status"], r["error"]["value"]), ("error", "mid-wait"), r)
    r = sh.run("alive")
    eq((text(r), r["restarted"], r["logs"]["stderr"]), ("'still'", False, ""), r)
    # user code that takes the kernel's handlers away does not take it down
    opened, fired = await_mark(sh, "the timers")
    sh.run("for (const ev of ['uncaughtException', 'unhandledRejection', 'SIGINT'])"
           " process.removeAllListeners(ev);"
           " setTimeout(() => { throw new Error('after removal') }, 10);"
           " setTimeout(() => Promise.reject(new Error('rejected later')), 10);"
           " setTimeout(() => { %s }, 10); 0" % opened)
    fired()
    r = sh.run("alive")
    eq((text(r), r["restarted"]), ("'still'", False), r)
    check("Uncaught Error: after removal" in r["logs"]["stderr"], r["logs"])
    check("Uncaught (in promise) Error: rejected later" in r["logs"]["stderr"], r["logs"])
    # a flood between cells is cut short
    sh.run("for (let i = 0; i < 50; i++) setTimeout(() => { throw new Error('e' + i) }, 1)")
    # the timers fire between cells; on a loaded host not all of them by
    # the next cell: what the cells after them report, added up
    # until all 50 are accounted for (HANG_S tells lost ones from late)
    err, deadline = "", time.monotonic() + HANG_S
    while True:
        time.sleep(0.1)
        err += sh.run("alive")["logs"]["stderr"]
        more = [int(n) for n in re.findall(r"\[\.\.\. (\d+) more uncaught errors\]", err)]
        shown = err.count("Uncaught Error: e")
        if shown + sum(more) >= 50 or time.monotonic() > deadline:
            break
    # ten shown per stretch between cells, the rest counted: all 50 are
    # accounted for (one stretch unless the load split them)
    check(more and shown >= 10 and shown + sum(more) == 50 and shown <= 10 * (len(more) + 1),
          err)
    eq(sh.close(), 0)


@test
def process_exit_ends_the_cell_and_the_shell_with_its_status():
    sh = Shell()
    sh.run("let x = 1")
    r = sh.run("process.exit(3)")
    eq((r["status"], r["error"]["name"], r["error"]["value"]), ("error", "SystemExit", "3"), r)
    eq(sh.close(), 3, "the shell exits with the status, as python's exit() does")
    r = codecell("shell", "--lang", "javascript",
                 stdin="console.log('before')\nprocess.exit()\nconsole.log('after')\n")
    eq((r.status, r.stdout, r.stderr), (0, "before\n", ""))


@test
def piped_script_runs_statement_by_statement_via_complete():
    script = ("const xs = [1, 2,\n  3]\n"
              "function total(a) {\n  let s = 0\n  for (const v of a) {\n    s += v\n  }\n"
              "  return s\n}\n"
              "console.log(total(xs))\n"
              "const cfg = {\n  name: 'demo',\n  size: 2,\n}\n"
              "console.log(`${cfg.name}:\n${cfg.size}`)\n"
              "/* a comment\n   over lines */ console.log('after comment')\n"
              "xs.map((v) =>\n  v * 10\n)\n"
              "try {\n  JSON.parse('{')\n}\ncatch (e) {\n  console.log(e.name)\n}\n")
    r = codecell("shell", "--lang", "javascript", stdin=script)
    eq(r.status, 0, r.stderr)
    eq(r.stdout, "6\ndemo:\n2\nafter comment\n[ 10, 20, 30 ]\nSyntaxError\n")
    eq(r.stderr, "")
    # one result object per statement
    r = codecell("shell", "--lang", "javascript", "--json", stdin=script)
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    eq(len(lines), 8, r.stdout)
    eq([x["execution_count"] for x in lines], list(range(1, 9)))
    check(all(x["status"] == "ok" for x in lines), lines)


@test
def plain_shell_prints_results_and_errors_like_node():
    r = codecell("shell", "--lang", "javascript",
                 stdin="2 * 21\nnoSuchName\n'still' + ' alive'\n")
    eq(r.stdout, "42\n'still alive'\n")
    check(r.stderr.startswith("ReferenceError: noSuchName is not defined\n    at <cell-2>:1:1"),
          r.stderr)
    eq(r.status, 0, "the last statement succeeded")


@test
def kernel_channels_are_not_in_globals_nor_passed_to_children():
    sh = Shell()
    r = sh.run("Object.getOwnPropertyNames(globalThis).filter((n) => /codecell|kernel/i.test(n))")
    eq(text(r), "[]")
    for name in ("exports", "__filename", "__dirname"):
        eq(text(sh.run("typeof " + name)), "'undefined'", name)
    # a child sees its stdio and nothing else of the kernel's
    r = sh.run("require('child_process').execFileSync('/bin/sh', ['-c', "
               "'for f in 3 4 5 6 7 8 9; do [ -e /proc/$$/fd/$f ] && echo $f; done; true'],"
               " {encoding: 'utf8'})")
    eq((r["status"], text(r)), ("ok", "''"), r)
    sh.close()


@test
def awkward_text_in_errors_and_results_keeps_the_protocol_whole():
    sh = Shell()
    r = sh.run("throw new Error('lone \\ud800 and nul \\u0000 here')")
    eq(r["error"]["value"], "lone \\ud800 and nul \\x00 here", r)
    # over the 1 MiB cap: head and tail around a marker.  200 long
    # values, not 200,000 short ones: as much text for inspect() to cut
    # at a thousandth of the work (the many keys took seconds at idle and
    # over the 30 s cell timeout on a loaded machine)
    r = sh.run("Object.fromEntries(Array.from({length: 200}, "
               "(_, i) => ['key' + i, String(i).padStart(9000, '.')]))")
    t = text(r)
    check(len(t) <= (1 << 20) and "characters cut ...]" in t, len(t))
    check(t.startswith("{\n  key0: '....") and t.endswith("  key199: '" + "." * 8997 + "199'\n}"),
          t[-100:])
    r = sh.run("throw new Error('y'.repeat(3000000))")
    check(len(r["error"]["value"]) <= (1 << 20) and "characters cut" in r["error"]["value"],
          len(r["error"]["value"]))
    eq(text(sh.run("'\\u00e9t\\u00e9 \\u{1F600}'")), "'\u00e9t\u00e9 \U0001F600'")
    sh.close()


@test
def bad_input_is_refused_with_a_message():
    r = codecell("shell", "--lang", "javascript", "--preload", "lodash")
    eq(r.status, 125)
    check("--preload is for Python" in r.stderr, r.stderr)
    p = subprocess.run([CODECELL, "shell", "--lang", "javascript", "--json"],
                       input=b"let s = '\xff'\n1 + 1\n", capture_output=True, timeout=60)
    lines = [json.loads(x) for x in p.stdout.decode().splitlines()]
    eq(lines[0]["status"], "rejected", lines)
    eq(lines[1]["results"][0]["text/plain"], "2", "the session goes on")
    # a stray closing brace is invalid at once, not waited on
    r = codecell("shell", "--lang", "javascript", "--json", stdin="}\n'next'\n")
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    eq([x["status"] for x in lines], ["error", "ok"], lines)
    eq(lines[0]["error"]["name"], "SyntaxError")
    # a statement still open at the end of the input runs as it is
    r = codecell("shell", "--lang", "javascript", "--json",
                 stdin="let fine = 1\nfunction f() {\n  return 1\n")
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    eq([x["status"] for x in lines], ["ok", "error"], lines)
    eq((lines[1]["error"]["name"], lines[1]["error"]["value"]),
       ("SyntaxError", "Unexpected end of input"))
    r = codecell("shell", "--lang", "javascript", "--json", stdin="import fs from 'fs'\n")
    err = json.loads(r.stdout)["error"]
    check(err["name"] == "SyntaxError" and "require()" in err["value"], err)


if __name__ == "__main__":
    main()
