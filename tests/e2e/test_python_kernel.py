"""kernels/python_kernel.py run directly, not through codecell: the
session kernel's protocol (requests on fd 3, events on fd 4, newline-
delimited JSON), started as the sandbox starts it
(/usr/bin/python3 -u -c <source> [--preload ...], fd 0 /dev/null,
stdout and stderr pipes, the sandbox's environment).  Covers start-up and
preload, state across cells, results and displays, errors and their
tracebacks, SystemExit and SIGINT, the complete and reseed ops, output
limits, fd inheritance and exit on EOF."""
import ast
import atexit
import base64
import fcntl
import json
import os
import random
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import (HANG_S, PYTHON, READS, ROOT, SLEEPS, await_blocked, check, eq, main, test,  # noqa: E402
                    tmpdir)

with open(os.path.join(ROOT, "kernels", "python_kernel.py")) as _f:
    SRC = _f.read()

# one workspace and one matplotlib cache for the whole file (a fresh font
# cache costs a fraction of a second each time)
WORK = tmpdir()
MPLDIR = tmpdir()
atexit.register(shutil.rmtree, WORK, True)
atexit.register(shutil.rmtree, MPLDIR, True)

# Keep fds 3 and 4 of this process busy, so that no pipe of subprocess
# (its exec-error pipe above all) lands there: the child dup2()s the
# kernel's pipes onto 3 and 4 after fork.
while True:
    _fd = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
    if _fd >= 4:
        break

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def sandbox_env(**changes):
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": WORK, "LANG": "C.UTF-8",
           "TZ": "UTC", "TMPDIR": "/tmp", "MPLBACKEND": "module://codecell_inline",
           "MPLCONFIGDIR": os.path.join(MPLDIR, "mpl"),
           "XDG_CACHE_HOME": os.path.join(MPLDIR, "cache")}
    for k, v in changes.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


class Kernel:
    """One kernel process.  Events, stdout and stderr are read in one
    select() loop, so that a cell's output is never stuck in a pipe."""

    def __init__(self, preload=None, env=None, cwd=None, socket_requests=False):
        if socket_requests:  # as codecell gives fd 3: a socket
            a, b = socket.socketpair()
            self.req_w, req_r = a.detach(), b.detach()
        else:
            req_r, self.req_w = os.pipe()
        ev_r, ev_w = os.pipe()
        hi_r = fcntl.fcntl(req_r, fcntl.F_DUPFD_CLOEXEC, 100)
        hi_w = fcntl.fcntl(ev_w, fcntl.F_DUPFD_CLOEXEC, 100)
        for fd in (req_r, ev_w):
            os.close(fd)
        args = [PYTHON, "-u", "-c", SRC]
        if preload:
            args += ["--preload", preload]

        def child_fds():
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)

        self.p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, pass_fds=(3, 4),
                                  preexec_fn=child_fds, cwd=cwd or WORK,
                                  env=env or sandbox_env())
        os.close(hi_r)
        os.close(hi_w)
        self.ev_fd = ev_r
        self.bufs = {ev_r: bytearray(), self.p.stdout.fileno(): bytearray(),
                     self.p.stderr.fileno(): bytearray()}
        self.open = set(self.bufs)
        self.next_id = 0
        try:
            self.ready = self.event()
        except BaseException:
            self.kill()
            raise

    # ---- reading --------------------------------------------------------

    def pump(self, timeout):
        """Read whatever is ready (waiting up to timeout); False if nothing."""
        fds = [fd for fd in self.open]
        if not fds:
            return False
        r, _, _ = select.select(fds, [], [], timeout)
        for fd in r:
            chunk = os.read(fd, 1 << 20)
            if chunk:
                self.bufs[fd] += chunk
            else:
                self.open.discard(fd)
        return bool(r)

    def drain(self):
        """All output already in the pipes (written before the last event)."""
        while self.pump(0):
            pass

    def event(self, timeout=30):
        deadline = time.monotonic() + timeout
        buf = self.bufs[self.ev_fd]
        while b"\n" not in buf:
            if self.ev_fd not in self.open:
                raise AssertionError("event pipe closed; status %r, stderr %r"
                                     % (self.p.poll(), self.err()[-3000:]))
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no event within %ss; stderr %r" % (timeout, self.err()[-3000:]))
            self.pump(left)
        line, _, rest = bytes(buf).partition(b"\n")
        buf[:] = rest
        # what the C side's parser (jansson) needs: strict UTF-8, no NUL
        check(b"\\u0000" not in line, "NUL in event %r" % line[:200])
        return json.loads(line.decode("utf-8"))

    def out(self):
        return self.bufs[self.p.stdout.fileno()].decode("utf-8", "replace")

    def err(self):
        return self.bufs[self.p.stderr.fileno()].decode("utf-8", "replace")

    def take_out(self):
        s = self.out()
        self.bufs[self.p.stdout.fileno()].clear()
        return s

    def wait_output(self, text, timeout=20):
        deadline = time.monotonic() + timeout
        while text not in self.out():
            left = deadline - time.monotonic()
            check(left > 0, "no %r on stdout within %ss" % (text, timeout))
            self.pump(left)

    # ---- requests -------------------------------------------------------

    def send(self, obj):
        os.write(self.req_w, (json.dumps(obj) + "\n").encode())

    def new_id(self):
        self.next_id += 1
        return self.next_id

    def start(self, code):
        rid = self.new_id()
        self.send({"op": "execute", "id": rid, "code": code})
        return rid

    def collect(self, rid, timeout=30):
        """Events of request rid up to and including "done"."""
        events = []
        while True:
            e = self.event(timeout)
            eq(e.get("id"), rid, "event id (event %r)" % (e,))
            events.append(e)
            if e["type"] == "done":
                self.drain()
                return events

    def execute(self, code, timeout=30):
        return Cell(self.collect(self.start(code), timeout))

    def run_ok(self, code):
        c = self.execute(code)
        eq(c.status, "ok", "status of %r (error %r)" % (code, c.error))
        return c

    def value(self, code):
        """text/plain of the cell's result (the cell must succeed)."""
        c = self.run_ok(code)
        check(c.result is not None, "no result from %r: %r" % (code, c.events))
        return c.result["data"]["text/plain"]

    def close(self, timeout=20):
        if self.req_w is not None:
            os.close(self.req_w)
            self.req_w = None
        deadline = time.monotonic() + timeout
        while self.open and time.monotonic() < deadline:
            self.pump(deadline - time.monotonic())
        try:
            return self.p.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            return None

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()
        for fd in (self.req_w, self.ev_fd):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.req_w = self.ev_fd = None
        self.p.stdout.close()
        self.p.stderr.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()


class Cell:
    def __init__(self, events):
        self.events = events
        self.done = events[-1]
        self.status = self.done["status"]
        self.count = self.done["execution_count"]
        kinds = [e["type"] for e in events]
        check(kinds.count("result") <= 1, "more than one result: %r" % kinds)
        check(kinds.count("error") <= 1, "more than one error: %r" % kinds)
        check(kinds.count("done") == 1, "done not only last: %r" % kinds)
        self.result = next((e for e in events if e["type"] == "result"), None)
        self.error = next((e for e in events if e["type"] == "error"), None)
        self.displays = [e for e in events if e["type"] == "display"]
        if self.error is not None:
            eq(kinds.index("error"), len(kinds) - 2, "error is not just before done")
            eq(self.status, "error", "status with an error event")


def check_traceback(tb):
    check("<string>" not in tb, "kernel frames in traceback: %r" % tb)
    check("\x1b[" not in tb, "ANSI codes in traceback: %r" % tb)
    check("python_kernel" not in tb and "_execute" not in tb and "_run_cell" not in tb,
          "kernel names in traceback: %r" % tb)


# ---- start-up -----------------------------------------------------------

@test
def ready_reports_preloaded_and_failed_modules():
    with Kernel(preload="numpy,pandas,matplotlib,codecell_no_such_module") as k:
        eq(k.ready["type"], "ready", "first event")
        eq(k.ready["preloaded"], ["numpy", "pandas", "matplotlib"], "preloaded")
        eq(list(k.ready["failed"]), ["codecell_no_such_module"], "failed")
        check("ModuleNotFoundError" in k.ready["failed"]["codecell_no_such_module"],
              "failure text: %r" % k.ready["failed"])
        # loaded, and bound as `import numpy` binds it (agents expect it)
        eq(k.value("import sys\n[m in sys.modules for m in ('numpy', 'pandas', 'matplotlib')]"),
           "[True, True, True]", "modules loaded")
        eq(k.value("'numpy' in globals(), 'pandas' in globals()"), "(True, True)",
           "names bound")
    with Kernel(preload="numpy as np, matplotlib.pyplot as plt,os.path") as k:
        eq(k.ready["preloaded"], ["numpy as np", "matplotlib.pyplot as plt", "os.path"])
        eq(k.value("np.__name__, plt.__name__, os.path.__name__, 'numpy' in globals()"),
           "('numpy', 'matplotlib.pyplot', 'posixpath', False)", "aliases bound")
        eq(k.close(), 0, "exit status")


@test
def ready_without_preload_and_clean_namespace():
    with Kernel() as k:
        eq(k.ready, {"type": "ready", "preloaded": [], "failed": {}}, "ready")
        names = ast.literal_eval(k.value("sorted(globals())"))
        eq([n for n in names if not (n.startswith("__") and n.endswith("__"))], [],
           "kernel names in the user's namespace")
        eq(k.value("__name__"), "'__main__'", "__name__")
        eq(k.value("import __main__\n__main__.__dict__ is globals()"), "True",
           "sys.modules['__main__'] is the namespace")
        # the kernel never imports matplotlib itself; its backend is registered
        eq(k.value("import sys\n'matplotlib' in sys.modules, 'codecell_inline' in sys.modules"),
           "(False, True)", "matplotlib / backend in sys.modules")
        eq(k.value("sys.argv, sys.path[0] == __import__('os').getcwd(), "
                   "'/usr/lib/python3/dist-packages' in sys.path"),
           "([''], True, True)", "argv and path")


# ---- state and results ----------------------------------------------------

@test
def state_persists_across_100_cells():
    with Kernel() as k:
        k.run_ok("x = 0")
        for i in range(100):
            c = k.run_ok("x = x + 1")
            eq(c.count, i + 2, "execution_count")
            eq(c.result, None, "result of an assignment")
        c = k.execute("x")
        eq(c.result["data"]["text/plain"], "100", "x")
        eq(c.count, 102, "final execution_count")
        # functions and imports persist too
        k.run_ok("import math\ndef area(r):\n    return math.pi * r * r")
        eq(k.value("round(area(2), 3)"), "12.566", "function from an earlier cell")


@test
def trailing_expression_gives_result():
    with Kernel() as k:
        c = k.execute("a = 6\na * 7")
        eq(c.status, "ok", "status")
        eq(c.result["is_main_result"], True, "is_main_result")
        eq(c.result["data"], {"text/plain": "42"}, "data")
        eq(k.value("_ + 1"), "43", "_ holds the last result")
        eq(k.execute("None").result, None, "None gives no result")
        eq(k.execute("a = 1").result, None, "assignment gives no result")
        eq(k.execute("print('p')").result, None, "print() gives no result")
        eq(k.value("'a\\nb'"), "'a\\nb'", "repr of a string")
        # top-level await, as in a notebook
        eq(k.value("import asyncio\nawait asyncio.sleep(0.01)\n6 * 7"), "42", "await")
        # __future__ imports carry over to later cells, as in the REPL
        k.run_ok("from __future__ import annotations")
        eq(k.value("def f(x: undefined_name): pass\nf.__annotations__"),
           "{'x': 'undefined_name'}", "future flag kept")


@test
def dataframe_result_has_html():
    with Kernel() as k:
        c = k.run_ok("import pandas as pd\npd.DataFrame({'alpha': [1, 2], 'beta': [3, 4]})")
        data = c.result["data"]
        check("alpha" in data["text/plain"] and "beta" in data["text/plain"],
              "text/plain: %r" % data["text/plain"])
        check("<table" in data["text/html"] and "<th>alpha</th>" in data["text/html"],
              "text/html: %r" % data["text/html"][:500])
        # a plain value has no html; a class (unbound _repr_html_) neither
        eq(list(k.run_ok("[1, 2]").result["data"]), ["text/plain"], "list mimetypes")
        eq(list(k.run_ok("pd.DataFrame").result["data"]), ["text/plain"], "class mimetypes")


@test
def traceback_carets_without_a_trailing_newline():
    """Code from the API rarely ends in a newline; the carets under the
    failing part must be where they are for the same code with one."""
    with Kernel() as k:
        k.run_ok("x = [1]")
        for code in ("y = x[0] + x[5]", "y = x[0] + x[5]\n", "x[0] + x[5]"):
            tb = k.execute(code).error["traceback"]
            lines = tb.splitlines()
            src = next(i for i, l in enumerate(lines) if "x[0] + x[5]" in l)
            col = lines[src].index("x[5]")
            eq(lines[src + 1].index("~"), col, "caret column for %r:\n%s" % (code, tb))


@test
def notebook_idioms_shell_lines_and_magics():
    """What models trained on notebooks write: !cmd (output in order with
    print), x = !cmd, %time, %timeit, %matplotlib inline, %%bash,
    %%writefile, %cd/%pwd/%env, display() in order; unknown magics are a
    UsageError; valid Python is never rewritten."""
    with Kernel(cwd=WORK) as k:
        k.take_out()
        k.run_ok("print('a', flush=True)\n!echo b; echo c >&2\nprint('d')")
        eq(k.take_out(), "a\nb\nd\n", "shell output between the prints")
        check("c" in k.err(), k.err())
        k.run_ok("name = 'w o'\nfiles = !printf '%s\\n' one '{name}' \"$name\"")
        eq(k.value("files"), "['one', 'w o', 'w o']", "x = !cmd with {expr} and $name")
        k.take_out()
        eq(k.value("r = %time sum(range(10))\nr"), "45", "%time returns the value")
        out = k.take_out()
        check("CPU times: user" in out and "Wall time:" in out, out)
        k.run_ok("%timeit -n 3 -r 2 sum(range(10))")
        out = k.take_out()
        check("per loop (mean ± std. dev. of 2 runs, 3 loops each)" in out, out)
        k.run_ok("%matplotlib inline")
        k.run_ok("%%bash\nx=4\necho $((x * 10))")
        eq(k.take_out(), "40\n", "%%bash cell")
        k.run_ok("%%writefile nb_test.txt\nhello\nworld\n")
        check(open(os.path.join(WORK, "nb_test.txt")).read() == "hello\nworld\n", "written")
        check("Writing nb_test.txt" in k.take_out(), "writefile says so")
        eq(k.value("%pwd"), repr(WORK), "%pwd")
        k.run_ok("%env NB_X=5")
        eq(k.value("import os\nos.environ['NB_X']"), "'5'", "%env set")
        # display(): in order with the output, a DataFrame with its HTML
        c = k.run_ok("import pandas as pd\nprint('before')\ndisplay(pd.DataFrame({'a': [1]}), 7)\n'after'")
        eq(len(c.displays), 2, "two displays")
        check("<table" in c.displays[0]["data"]["text/html"], c.displays[0])
        eq(c.displays[1]["data"], {"text/plain": "7"}, "a plain value")
        eq(c.result["data"]["text/plain"], "'after'", "the main result after")
        # an unknown magic: a UsageError naming what exists
        c = k.execute("%nosuchmagic 1")
        eq(c.error["name"], "UsageError", "unknown magic")
        check("%timeit" in c.error["value"], c.error["value"])
        check("%nosuchmagic 1" in c.error["traceback"], "the line as typed: " + c.error["traceback"])
        # valid Python is left alone: % is modulo, ! inside strings is text
        eq(k.value("x = (10\n% 3)\nx"), "1", "modulo on a continuation line")
        eq(k.value('s = """\n!not a command\n"""\ns.strip()'), "'!not a command'", "string")
        # a real syntax error stays the original one
        c = k.execute("!echo fine\ndef f(:\n    pass")
        eq(c.error["name"], "SyntaxError", "syntax error kept")


@test
def output_reaches_pipes_before_done():
    # with the sandbox's environment, and without PYTHONUNBUFFERED (a
    # block-buffered stdout): either way the kernel flushes before "done"
    for env in (sandbox_env(), sandbox_env(PYTHONUNBUFFERED=None)):
        with Kernel(env=env) as k:
            k.take_out()
            k.run_ok("import sys\nprint('line-one')\nsys.stdout.write('no-newline')\n"
                     "sys.stderr.write('err-text')")
            eq(k.take_out(), "line-one\nno-newline", "stdout after done (%s)"
               % ("unbuffered" if "PYTHONUNBUFFERED" in env else "buffered"))
            check(k.err().endswith("err-text"), "stderr: %r" % k.err())
            k.run_ok("print('x' * 200000)")
            eq(len(k.take_out()), 200001, "200 kB of stdout")


# ---- errors ---------------------------------------------------------------

@test
def error_traceback_is_trimmed_and_quotes_source():
    with Kernel() as k:
        d = k.run_ok("def inner(v):\n    raise ValueError('bad value %d' % v)\n\n"
                     "def outer():\n    return inner(7)\n")
        c = k.execute("y = 1\nouter()")
        eq(c.status, "error", "status")
        eq(c.count, d.count + 1, "count after an error")
        e = c.error
        eq(e["name"], "ValueError", "name")
        eq(e["value"], "bad value 7", "value")
        tb = e["traceback"]
        check(tb.startswith("Traceback (most recent call last):\n"), tb)
        check_traceback(tb)
        for piece in ('File "<cell-%d>", line 2, in <module>' % c.count, "    outer()",
                      'File "<cell-%d>", line 5, in outer' % d.count, "return inner(7)",
                      "raise ValueError('bad value %d' % v)", "ValueError: bad value 7"):
            check(piece in tb, "%r not in traceback:\n%s" % (piece, tb))
        # chained exceptions are trimmed too
        c = k.execute("try:\n    {}['k']\nexcept KeyError as ex:\n    raise RuntimeError('wrapped') from ex")
        tb = c.error["traceback"]
        check_traceback(tb)
        check("KeyError: 'k'" in tb and "direct cause" in tb and "RuntimeError: wrapped" in tb, tb)
        # the kernel goes on
        eq(k.value("y"), "1", "variable from the failed cell")


@test
def syntax_error_is_reported():
    with Kernel() as k:
        c = k.execute("x = 1\n1 +* 2")
        eq(c.status, "error", "status")
        eq(c.count, 1, "execution_count")
        eq(c.error["name"], "SyntaxError", "name")
        tb = c.error["traceback"]
        check_traceback(tb)
        check('File "<cell-1>", line 2' in tb and "1 +* 2" in tb and "^" in tb, tb)
        eq(k.execute("x").result, None, "nothing of the cell ran")
        eq(k.execute("x").error["name"], "NameError", "x not defined")
        eq(k.execute("1").count, 4, "count goes on")


@test
def system_exit_does_not_end_kernel():
    with Kernel() as k:
        k.run_ok("z = 5")
        for code, value in (("exit(3)", "3"), ("import sys\nsys.exit('bye')", "bye"),
                            ("quit()", ""), ("raise SystemExit", "")):
            c = k.execute(code)
            eq(c.error["name"], "SystemExit", "name for %r" % code)
            eq(c.error["value"], value, "value for %r" % code)
            check_traceback(c.error["traceback"])
        eq(k.p.poll(), None, "kernel alive")
        eq(k.value("z"), "5", "state kept")


@test
def repr_that_raises_does_not_break_kernel():
    with Kernel() as k:
        c = k.run_ok("class Bad:\n    def __repr__(self):\n        raise RuntimeError('no repr')\n"
                     "    def _repr_html_(self):\n        raise RuntimeError('no html')\nBad()")
        text = c.result["data"]["text/plain"]
        check("Bad" in text and "no repr" in text, "note: %r" % text)
        eq(list(c.result["data"]), ["text/plain"], "mimetypes")
        # an object that claims every attribute is not asked for html
        c = k.run_ok("class Any:\n    def __getattr__(self, name):\n        return lambda: 'junk'\n"
                     "    def __repr__(self):\n        return 'Any()'\nAny()")
        eq(c.result["data"], {"text/plain": "Any()"}, "data")


# ---- SIGINT ---------------------------------------------------------------

@test
def sigint_interrupts_running_cell():
    with Kernel() as k:
        k.run_ok("kept = 41")
        rid = k.start("import time\nprint('started', flush=True)\ntime.sleep(600)\nkept = 0")
        k.wait_output("started")
        await_blocked(k.p.pid, SLEEPS)  # in time.sleep() (else the traceback quotes print())
        t0 = time.monotonic()
        k.p.send_signal(signal.SIGINT)
        c = Cell(k.collect(rid, timeout=HANG_S))
        # a sleep not interrupted would last 600 s
        check(time.monotonic() - t0 < HANG_S, "interrupt took %.1fs" % (time.monotonic() - t0))
        eq(c.error["name"], "KeyboardInterrupt", "error name")
        tb = c.error["traceback"]
        check_traceback(tb)
        check("time.sleep(600)" in tb, tb)
        eq(k.value("kept + 1"), "42", "state after the interrupt")
        # a busy loop in Python code is interrupted too
        rid = k.start("print('spin', flush=True)\nwhile True:\n    pass")
        k.wait_output("spin")
        k.p.send_signal(signal.SIGINT)
        eq(Cell(k.collect(rid, timeout=HANG_S)).error["name"], "KeyboardInterrupt", "loop")
        # and a handler replaced by user code is put back between cells
        k.run_ok("import signal\nsignal.signal(signal.SIGINT, signal.SIG_DFL)")
        k.p.send_signal(signal.SIGINT)
        time.sleep(0.3)
        eq(k.p.poll(), None, "alive after user code set SIG_DFL")


@test
def a_cell_says_when_it_has_started():
    """The supervisor holds back an interrupt until the cell has started
    (a SIGINT before that finds the kernel idle and is ignored): the
    kernel says "started" once a cell's code begins, first of its events."""
    with Kernel() as k:
        c = k.execute("print(1)\n2")
        eq([e["type"] for e in c.events], ["started", "result", "done"], "events")
        eq(c.events[0]["id"], c.done["id"], "its id")
        c = k.execute("def f(:")
        eq([e["type"] for e in c.events][0], "started", "a syntax error starts too")
        c = Cell(k.collect(k.start("1"), HANG_S))
        eq(c.status, "ok")


@test
def sigint_while_idle_is_ignored():
    with Kernel() as k:
        k.run_ok("v = 'still here'")
        for _ in range(5):
            k.p.send_signal(signal.SIGINT)
            time.sleep(0.05)
        # handled: back in its wait for the next request (a dead kernel
        # returns at once, and fails below)
        await_blocked(k.p.pid, READS, signal.SIGINT)
        eq(k.p.poll(), None, "kernel alive")
        c = k.execute("v")
        eq(c.status, "ok", "no pending interrupt reaches the next cell")
        eq(c.result["data"]["text/plain"], "'still here'", "state")
        check("KeyboardInterrupt" not in k.err(), "stderr: %r" % k.err())


@test
def sigint_storm_keeps_protocol_intact():
    # SIGINTs at random moments, while cells run, end and write large
    # events: every event line must stay whole and the kernel alive
    with Kernel() as k:
        k.run_ok("import matplotlib.pyplot as plt")
        stop = threading.Event()

        def storm():
            while not stop.is_set():
                k.p.send_signal(signal.SIGINT)
                time.sleep(random.random() * 0.003)

        cells = ["n = 1", "'y' * 300000",
                 "for i in range(2):\n    plt.figure(figsize=(1, 1), dpi=20); plt.plot([i]); plt.show()",
                 "plt.figure(figsize=(1, 1), dpi=20); plt.plot([1]); 'z' * 100000"]
        th = threading.Thread(target=storm)
        th.start()
        names = set()
        try:
            # a number of cells, not a time: a loaded machine runs fewer
            # cells a second (the deadline only catches a hang)
            deadline = time.monotonic() + HANG_S
            n = 0
            while (n <= 20 or "KeyboardInterrupt" not in names) and time.monotonic() < deadline:
                c = k.execute(random.choice(cells))
                if c.error:
                    names.add(c.error["name"])
                n += 1
        finally:
            stop.set()
            th.join()
        check(n > 20, "only %d cells ran in %d s" % (n, HANG_S))
        check("KeyboardInterrupt" in names, "no interrupt seen in %d cells" % n)
        time.sleep(0.2)
        k.drain()
        eq(k.bufs[k.ev_fd], bytearray(), "stray event bytes")
        eq(k.value("6 * 7"), "42", "kernel works after the storm")


# ---- matplotlib -------------------------------------------------------------

def png_of(display):
    data = display["data"]
    png = base64.b64decode(data["image/png"], validate=True)
    eq(png[:8], PNG_SIGNATURE, "PNG signature")
    return png


@test
def plt_show_emits_one_png():
    with Kernel() as k:
        c = k.run_ok("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()")
        eq(len(c.displays), 1, "displays: %r" % [e["type"] for e in c.events])
        png = png_of(c.displays[0])
        check(len(png) > 1000, "PNG of %d bytes" % len(png))
        eq(c.displays[0]["data"]["text/plain"], "<Figure size 640x480 with 1 Axes>", "text/plain")
        eq(c.result, None, "plt.show() gives no result")
        eq(k.value("len(plt.get_fignums())"), "0", "figures closed after show()")
        eq(k.value("import matplotlib\nmatplotlib.get_backend()"),
           "'module://codecell_inline'", "backend")


@test
def figure_left_open_is_emitted_at_cell_end():
    with Kernel() as k:
        c = k.run_ok("import matplotlib.pyplot as plt\nfig = plt.figure()\nplt.plot([3, 1, 2])\nn = 1")
        eq(len(c.displays), 1, "displays")
        png_of(c.displays[0])
        eq(k.value("len(plt.get_fignums())"), "0", "figure closed at cell end")
        # order: show() displays as they happen, the result, then figures
        # still open; an empty figure shows nothing
        c = k.run_ok("plt.plot([1]); plt.show()\nplt.figure(); plt.plot([2])\nplt.figure()\n'value'")
        eq([e["type"] for e in c.events], ["started", "display", "result", "display", "done"], "order")
        for d in c.displays:
            png_of(d)
        # a figure that cannot be drawn is the cell's error, and is closed
        c = k.execute("plt.plot([1])\nplt.title('$\\\\frac{$')\nok = 1")
        eq(c.status, "error", "status of a figure that cannot render")
        check_traceback(c.error["traceback"])
        eq(k.value("ok, len(plt.get_fignums())"), "(1, 0)", "cell ran and figure closed")
        # a user who switches to Agg keeps their figures
        c = k.run_ok("plt.switch_backend('agg')\nplt.plot([1])\nlen(plt.get_fignums())")
        eq((len(c.displays), c.result["data"]["text/plain"]), (0, "1"), "Agg figures kept")


# ---- the other ops ----------------------------------------------------------

@test
def complete_op_follows_codeop():
    # lines end in a newline, as codecell shell sends them (the last one's
    # may be missing); a block needs a blank line after it
    cases = [("x = 1", "complete"), ("x = 1\n", "complete"), ("x = (1,", "incomplete"),
             ("x = (1,\n", "incomplete"), ("x = (1,\n2)\n", "complete"),
             ("if x:", "incomplete"), ("if x:\n", "incomplete"),
             ("if x:\n    pass", "incomplete"), ("if x:\n    pass\n", "incomplete"),
             ("if x:\n    pass\n\n", "complete"), ("if x:\n    pass\n  \n", "complete"),
             ("if x:\n    a = 1\n    b = 2\n", "incomplete"),
             ("if x:\n    pass\nelse:\n", "incomplete"),
             ("for i in range(3): print(i)\n", "incomplete"),
             ("def f():\n    return 1\n", "incomplete"), ("def f():\n    return 1\n\n", "complete"),
             ("@decorator\n", "incomplete"), ("1 +* 2", "invalid"), ("1 +* 2\n", "invalid"),
             ("x = 1\ny = 2\n", "complete"), ("x = 1\nif x:\n", "incomplete"),
             ("x = 1\nif x:\n    y = 2\n", "incomplete"), ("x = 1\nif x:\n    y = 2\n\n", "complete"),
             ("'''abc\n", "incomplete"), ("", "complete"), ("\n", "complete"), ("# note\n", "complete"),
             ("x = 1\n1 +* 2\n", "invalid"), ("await something()\n", "complete")]
    with Kernel() as k:
        for code, want in cases:
            rid = k.new_id()
            k.send({"op": "complete", "id": rid, "code": code})
            eq(k.event(), {"type": "complete", "id": rid, "status": want}, "complete %r" % code)
        eq(k.execute("1").count, 1, "complete does not count as an execution")


@test
def names_op_completes_from_the_namespace():
    """Tab completion in codecell shell: rlcompleter's matches for a name
    or a dotted name, sorted; underscore names only when asked for."""
    with Kernel() as k:
        k.run_ok("import collections\nmy_value = 1\nmy_func = len\n_hidden = 2\n"
                 "class C:\n    attr = 1\n    _private = 2\nc = C()")

        def names(text):
            rid = k.new_id()
            k.send({"op": "names", "id": rid, "text": text})
            e = k.event()
            eq((e["type"], e["id"]), ("names", rid), "event %r" % (e,))
            return e["names"]
        eq(names("my_"), ["my_func(", "my_value"], "user names; callables get (")
        check("print(" in names("pri"), "builtins")
        check("import " in names("imp"), "keywords")
        eq(names("collections.Ordered"), ["collections.OrderedDict("], "attributes after a dot")
        eq(names("c."), ["c.attr"], "no underscore names unless asked")
        eq(names("c._"), ["c._private"], "asked")
        eq(names("_hid"), ["_hidden"], "asked, globally")
        eq(names("nothing_like_this"), [], "no match")
        eq(names(""), [], "nothing to complete")
        check(len(names("c")) <= 200, "capped")
        eq(k.execute("1").count, 2, "names does not count as an execution")


@test
def reseed_changes_random_streams():
    with Kernel() as k:
        k.run_ok("import random\nimport numpy as np\nr1 = random.getstate()\n"
                 "n1 = np.random.get_state()[1].copy()")
        rid = k.new_id()
        k.send({"op": "reseed", "id": rid})
        eq(k.event(), {"type": "done", "id": rid, "execution_count": 1, "status": "ok"}, "reseed")
        eq(k.value("random.getstate() != r1, bool((np.random.get_state()[1] != n1).any())"),
           "(True, True)", "streams changed")
        eq(k.execute("1").count, 3, "reseed does not count as an execution")
    # two kernels do not share a stream
    streams = []
    for _ in range(2):
        with Kernel(preload="random") as k:
            streams.append(k.value("import random\n[random.random() for _ in range(3)]"))
    check(streams[0] != streams[1], "same stream in two kernels: %r" % streams)


@test
def huge_values_are_capped():
    cap = 1 << 20
    with Kernel() as k:
        text = k.value("'ab' * 1500000")
        check(len(text) <= cap, "text/plain of %d characters" % len(text))
        check(len(text) > cap - 100, "cut too much: %d" % len(text))
        check(text.startswith("'abab") and text.endswith("abab'"), "head/tail kept")
        check("characters cut ...]" in text, "no marker")
        e = k.execute("raise ValueError('e' * 2000000)").error
        check(len(e["value"]) <= cap and "characters cut" in e["value"], "value capped")
        check(len(e["traceback"]) <= cap and e["traceback"].endswith("eee\n"), "traceback capped")
        html = k.run_ok("class H:\n    def _repr_html_(self):\n        return '<p>' + 'h' * 3000000\nH()")
        check(len(html.result["data"]["text/html"]) <= cap, "html capped")
        # lone surrogates are escaped, so the event stays valid UTF-8; NUL
        # is escaped too (jansson refuses \u0000)
        c = k.run_ok("class S:\n    def __repr__(self):\n        return 'bad\\udcff\\0'\nS()")
        eq(c.result["data"]["text/plain"], "bad\\udcff\\x00", "surrogate and NUL escaped")
        e = k.execute("raise ValueError('nul\\0here')").error
        eq(e["value"], "nul\\x00here", "NUL in an error value")
        check("\0" not in e["traceback"], "NUL in traceback")


@test
def bad_requests_get_errors_and_kernel_goes_on():
    with Kernel() as k:
        os.write(k.req_w, b"this is not json\n")
        e = k.event()
        eq((e["type"], e["id"], e["name"]), ("error", None, "InvalidRequest"), "bad JSON")
        eq(k.event(), {"type": "done", "id": None, "execution_count": 0, "status": "error"}, "done")
        k.send({"op": "frobnicate", "id": 7})
        eq(k.event()["name"], "InvalidRequest", "unknown op")
        eq(k.event()["id"], 7, "done of the unknown op")
        eq(k.value("'fine'"), "'fine'", "kernel goes on")


@test
def a_restore_that_waits_runs_nothing_before_go():
    """A fork's restore is sent before the workspace is copied: with
    "wait", the kernel runs no code of the state before {"op":"go"} with
    the restore's id (here a reconstructor that creates a file), and
    anything else in its place is refused, the state untouched."""
    marker = os.path.join(tmpdir(), "rebuilt")
    with Kernel() as src:
        src.run_ok("class Mark:\n"
                   "    def __reduce__(self):\n"
                   "        return (open, (%r, 'w'))\n"
                   "m = Mark()\nx = 41" % marker)
        rid = src.new_id()
        src.send({"op": "snapshot", "id": rid})
        snap = src.event()
        eq((snap["type"], snap["id"], snap["skipped"]), ("snapshot", rid, {}), snap)
    with Kernel() as k:
        rid = k.new_id()
        k.send({"op": "restore", "id": rid, "data": snap["data"], "wait": True})
        try:
            e = k.event(0.5)
        except AssertionError:
            e = None
        eq(e, None, "the kernel answered before go")
        check(not os.path.exists(marker), "a reconstructor ran before go")
        os.write(k.req_w, b"\n")  # blank lines are skipped, as between requests
        k.send({"op": "go", "id": rid})
        eq(k.event()["status"], "ok", "the restore after go")
        check(os.path.exists(marker), "the reconstructor did not run after go")
        eq(k.value("x + 1"), "42", "the state after go")
    os.unlink(marker)
    with Kernel() as k:
        rid = k.new_id()
        k.send({"op": "restore", "id": rid, "data": snap["data"], "wait": True})
        k.send({"op": "go", "id": rid + 1})
        e = k.event()
        eq((e["type"], e["id"], e["name"]), ("error", rid, "InvalidRequest"), e)
        eq(k.event()["status"], "error", "done of the refused restore")
        eq(k.value("'x' in globals()"), "False", "a refused restore takes nothing over")
        check(not os.path.exists(marker), "a refused restore ran a reconstructor")


@test
def forked_child_does_not_speak_protocol():
    with Kernel() as k:
        c = k.run_ok("import os\npid = os.fork()\nif pid == 0:\n    print('in child', flush=True)\n"
                     "    'child result'\nelse:\n    _, st = os.waitpid(pid, 0)\n"
                     "    print('child status', os.waitstatus_to_exitcode(st))")
        eq(c.result, None, "no result from the child")
        check("in child" in k.out() and "child status 0" in k.out(), k.out())
        time.sleep(0.2)
        k.drain()
        eq(k.bufs[k.ev_fd], bytearray(), "stray events")
        eq(k.value("1 + 1"), "2", "parent goes on")


# ---- process ----------------------------------------------------------------

@test
def fds_3_and_4_are_not_inherited():
    with Kernel() as k:
        r = ast.literal_eval(k.value(
            "import os, subprocess\n"
            "mine = [os.readlink('/proc/self/fd/%d' % fd) for fd in (3, 4)]\n"
            "out = subprocess.run(['ls', '-l', '/proc/self/fd'], capture_output=True, text=True).stdout\n"
            "mine, [m for m in mine if m in out], os.get_inheritable(3), os.get_inheritable(4), out"))
        mine, leaked, inh3, inh4, listing = r
        check(all(m.startswith("pipe:[") for m in mine), "fds 3/4: %r" % mine)
        check("pipe:[" in listing, "ls shows no pipes at all: %r" % listing)
        eq(leaked, [], "kernel pipes in the child (%s)" % listing)
        eq((inh3, inh4), (False, False), "inheritable")


@test
def requests_over_a_socket():
    with Kernel(socket_requests=True) as k:
        eq(k.value("import os, stat\nstat.S_ISSOCK(os.fstat(3).st_mode)"), "True", "fd 3 is a socket")
        big = "s = '" + "q" * 300000 + "'\nlen(s)"
        eq(k.value(big), "300000", "a 300 kB request")
        eq(k.close(), 0, "exit status after the socket closes")


@test
def eof_on_requests_exits_0():
    ws = tmpdir()
    try:
        with Kernel(cwd=ws) as k:
            k.run_ok("f = open('left-open.txt', 'w')\nf.write('kept')\n"
                     "import atexit\natexit.register(lambda: open('atexit.txt', 'w').write('ran'))")
            k.run_ok("import threading, time\n"
                     "threading.Thread(target=time.sleep, args=(600,)).start()")
            t0 = time.monotonic()
            eq(k.close(), 0, "exit status")
            # waiting for the thread would take 600 s
            check(time.monotonic() - t0 < HANG_S, "waited for a user thread")
        with open(os.path.join(ws, "left-open.txt")) as f:
            eq(f.read(), "kept", "unclosed file flushed at exit")
        with open(os.path.join(ws, "atexit.txt")) as f:
            eq(f.read(), "ran", "atexit handler")
    finally:
        shutil.rmtree(ws, ignore_errors=True)


main()
