"""What a new user and a model meet first: notebook idioms in a real
sandboxed session (`codecell shell --json`) run as they would in Jupyter,
and tracebacks point at the right column.  The kernel-level cases of the
idioms are in test_python_kernel.py."""
import fcntl
import json
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import termios
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import CODECELL, HANG_S, Serve, check, codecell, eq, main, run_code, scratch, test, write  # noqa: E402


def session(*stmts):
    """Run single-line statements in one session; one result each."""
    return session_with(stmts=stmts)


def session_with(*args, stmts):
    r = codecell("shell", "--json", *args, stdin="".join(s + "\n" for s in stmts), timeout=120)
    results = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    eq(len(results), len(stmts), "one result a statement: %r" % (r,))
    return results


@test
def shell_lines_run_in_the_sandbox():
    out = session("!id -un; pwd", "names = !ls -a /home/user", "names[:2]", "!exit 3")
    eq(out[0]["logs"]["stdout"], "user\n/home/user\n", "bash as the sandbox's user")
    eq(out[2]["results"][0]["text/plain"], "['.', '..']", "x = !cmd")
    eq(out[3]["status"], "ok", "a failing command is not a Python error (as in IPython)")


@test
def pip_install_without_network_is_a_clear_error():
    out = session("%pip install requests")
    eq(out[0]["status"], "error", "status")
    check("no network" in out[0]["error"]["value"], out[0]["error"])


@test
def display_and_time_in_a_session():
    out = session("display(6 * 7, 'x')", "%time sum(range(100))", "%matplotlib inline")
    eq([r["text/plain"] for r in out[0]["results"]], ["42", "'x'"], "display() results in order")
    eq([r["is_main_result"] for r in out[0]["results"]], [False, False], "displays are not main")
    check("Wall time:" in out[1]["logs"]["stdout"], out[1])
    eq(out[1]["results"][0]["text/plain"], "4950", "%time's value is the result")
    eq(out[2]["status"], "ok", "%matplotlib inline is accepted")


@test
def one_shot_carets_without_a_trailing_newline():
    """{"code": "..."} through the API rarely ends in a newline."""
    for code in ("x = [1]\ny = x[0] + x[5]", "x = [1]\ny = x[0] + x[5]\n"):
        tb = run_code(code).json["error"]["traceback"].splitlines()
        src = next(i for i, l in enumerate(tb) if "x[0] + x[5]" in l)
        eq(tb[src + 1].index("~"), tb[src].index("x[5]"), "caret column for %r" % code)


@test
def a_file_of_another_language_is_refused_not_run_as_python():
    with scratch() as d:
        rb = write(os.path.join(d, "hello.rb"), "puts 'hi'\n")
        r = codecell("run", rb)
        eq(r.status, 125, r)
        check("cannot tell the language of" in r.stderr and "--lang" in r.stderr, r.stderr)
        r = codecell("run", "--json", rb)
        eq((r.status, r.json["status"], r.json["error"]["name"]), (125, "rejected", "InvalidRequest"))
        # a #! line, or no extension at all, still decide
        tool = write(os.path.join(d, "tool.run"), "#!/usr/bin/env python3\nprint(6 * 7)\n")
        eq(codecell("run", tool).stdout, "42\n")
        plain = write(os.path.join(d, "script"), "print(7)\n")
        eq(codecell("run", plain).stdout, "7\n")
        eq(codecell("run", "--lang", "bash", write(os.path.join(d, "job.txt"), "echo ok\n")).stdout,
           "ok\n")


@test
def a_binary_given_as_code_is_named():
    with open("/bin/true", "rb") as f:
        elf = f.read()
    p = subprocess.run([CODECELL, "run", "--json", "-"], input=elf, capture_output=True, timeout=60)
    j = json.loads(p.stdout)
    eq((p.returncode, j["status"]), (125, "rejected"))
    check("ELF executable" in j["error"]["value"] and "UTF-8" not in j["error"]["value"], j["error"])
    p = subprocess.run([CODECELL, "run", "-"], input=b"PK\x03\x04" + b"\0" * 40, capture_output=True,
                       timeout=60)
    check(b"zip archive" in p.stderr, p.stderr)


@test
def every_session_object_says_how_long_its_kernel_took():
    """startup_ms was documented on the session object, but only create
    returned it."""
    s = Serve("--pool", "0")
    try:
        sid = s.session()
        for method, path, want in (("GET", "/v1/sessions/" + sid, 200),
                                   ("POST", "/v1/sessions/%s/restart" % sid, 200),
                                   ("POST", "/v1/sessions/%s/fork" % sid, 201)):
            st, j = s.request(method, path)
            eq(st, want, "%s %s: %r" % (method, path, j))
            check(isinstance(j.get("startup_ms"), float) and j["startup_ms"] > 0, (path, j))
        st, j = s.request("GET", "/v1/sessions")
        check(all(x["startup_ms"] > 0 for x in j["sessions"]), j)
    finally:
        eq(s.stop(), 0)


@test
def preload_binds_the_names_agents_expect():
    """--preload "numpy as np,pandas as pd" imported pandas but left pd a
    NameError: preloads are bound as import statements bind them."""
    out = session_with("--preload", "numpy as np, pandas as pd,matplotlib.pyplot as plt,json",
                       stmts=["(np.__name__, pd.__name__, plt.__name__, json.__name__)"])
    eq(out[0]["results"][0]["text/plain"], "('numpy', 'pandas', 'matplotlib.pyplot', 'json')")
    r = codecell("shell", "--preload", "numpy as", stdin="")
    eq(r.status, 125)
    check("is not a module, or 'module as name'" in r.stderr, r.stderr)
    # the server: a pool with aliases serves a session that asks for some
    # of them (blanks aside), warm, with the names bound
    s = Serve("--pool", "1", "--preload", "numpy as np,json")
    try:
        st, j = s.request("POST", "/v1/sessions", {"preload": " numpy  as np "})
        eq((st, j["pooled"]), (201, True), j)
        eq(s.execute(j["id"], "np.zeros(2).tolist()"), "[0.0, 0.0]")
        st, j = s.request("POST", "/v1/sessions", {"preload": "numpy as"})
        eq((st, j["error"]["code"]), (400, "invalid_value"), j)
        check("module as name" in j["error"]["message"], j)
    finally:
        eq(s.stop(), 0)


class Terminal:
    """`codecell shell` on a pseudo-terminal of its own, as a person runs
    it: keys go in as bytes, the screen's bytes come out."""

    def __init__(self, *args):
        self.home = tempfile.mkdtemp(prefix="cctest-home-")
        master, slave = pty.openpty()
        env = {"PATH": "/usr/bin:/bin", "HOME": self.home, "TERM": "xterm", "LANG": "C.UTF-8"}
        def controlling_tty():
            # a session of its own, with the terminal as its controlling
            # one: Ctrl-C there is then a SIGINT, as in a real terminal
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        self.p = subprocess.Popen([CODECELL, "shell"] + list(args), stdin=slave, stdout=slave,
                                  stderr=slave, env=env, preexec_fn=controlling_tty)
        os.close(slave)
        self.fd = master
        self.screen = b""
        self.expect(b">>> ")

    def keys(self, data):
        os.write(self.fd, data)

    def editing(self):
        """Once libedit has the terminal out of canonical mode (it does so a
        moment after the prompt shows): before that, a ^D is an end-of-file
        for a read nobody makes, and a Tab is a blank.  A person does not
        type that fast; a test on a loaded machine does, whatever pause it
        takes, so it waits for the mode itself (termios on the master end
        reads the terminal's)."""
        deadline = time.monotonic() + HANG_S
        while termios.tcgetattr(self.fd)[3] & termios.ICANON:
            check(time.monotonic() < deadline, "the terminal stays in canonical mode; it shows %r"
                  % self.screen[-2000:])
            time.sleep(0.01)

    def expect(self, what, timeout=HANG_S, count=1):
        """Read until what has appeared count times (from the start)."""
        deadline = time.monotonic() + timeout
        while self.screen.count(what) < count:
            left = deadline - time.monotonic()
            check(left > 0, "no %r on the terminal; it shows %r" % (what, self.screen[-2000:]))
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:
                    chunk = b""
                check(chunk, "the shell went away; it showed %r" % self.screen[-2000:])
                self.screen += chunk

    def wait(self, timeout=HANG_S):
        deadline = time.monotonic() + timeout
        while self.p.poll() is None and time.monotonic() < deadline:
            r, _, _ = select.select([self.fd], [], [], 0.1)
            if r:
                try:
                    self.screen += os.read(self.fd, 65536)
                except OSError:
                    pass
        return self.p.wait(1)

    def close(self):
        if self.p.poll() is None:
            os.killpg(self.p.pid, signal.SIGKILL)
            self.p.wait()
        os.close(self.fd)
        shutil.rmtree(self.home, ignore_errors=True)


@test
def terminal_shell_edits_lines_and_recalls_history():
    t = Terminal()
    try:
        t.keys(b"print(6 * 7)\r")
        t.expect(b"42\r\n>>> ")
        # Up brings the line back; Enter runs it again (it was an error:
        # "invalid non-printable character U+001B")
        t.keys(b"\x1b[A\r")
        t.expect(b"42\r\n>>> ", count=2)
        check(b"U+001B" not in t.screen, t.screen)
        # Left and a character inserted mid-line
        t.keys(b"print(1 + 3)\x1b[D0\r")
        t.expect(b"31\r\n>>> ")
        # Ctrl-C while typing drops the line, as python3 does
        t.keys(b"this is not code\x03")
        t.expect(b"KeyboardInterrupt\r\n>>> ")
        t.keys(b"print('after')\r")
        t.expect(b"after\r\n>>> ")
        check(b"NameError" not in t.screen and b"SyntaxError" not in t.screen, t.screen)
        # Ctrl-D ends the shell, once libedit reads keys (editing())
        t.editing()
        t.keys(b"\x04")
        eq(t.wait(), 0, "exit status after Ctrl-D")
        hist = open(os.path.join(t.home, ".codecell_history"), "rb").read()
        check(b"print(6" in hist and b"after" in hist, "history kept in $HOME: %r" % hist)
    finally:
        t.close()


@test
def tab_completes_names_from_the_kernel():
    t = Terminal()
    try:
        t.keys(b"my_long_variable = 41\r")
        t.expect(b"= 41\r\n>>> ")
        t.editing()
        # one match: inserted
        t.keys(b"my_lo\t + 1\r")
        t.expect(b"42\r\n>>> ")
        # a module's attributes after a dot
        t.keys(b"import collections\r")
        t.expect(b"collections\r\n>>> ")
        t.editing()
        t.keys(b"collections.Ordered\t)\r")
        t.expect(b"OrderedDict()\r\n>>> ")
        # several: their list below the line, then the line again
        t.keys(b"alpha_one = 1; alpha_two = 2\r")
        t.expect(b"alpha_two = 2\r\n>>> ")
        t.editing()
        t.keys(b"alpha_\t")
        t.expect(b"alpha_one  alpha_two")
        t.keys(b"t\t\r")
        t.expect(b"2\r\n>>> ")
        # Tab after blanks indents, as before
        t.keys(b"if True:\r\tprint('in')\r\r")
        t.expect(b"in\r\n>>> ")
        check(b"Error" not in t.screen, t.screen)
    finally:
        t.close()


@test
def idle_timeout_ends_a_shell_waiting_at_its_prompt():
    t = Terminal("--idle-timeout", "1")
    try:
        t.keys(b"x = 1")  # typed, never entered
        eq(t.wait(20), 125, "exit status of an expired session")
        check(b"expired after 1 s without input" in t.screen, t.screen)
    finally:
        t.close()
    # on a pipe that stays open and silent as well
    p = subprocess.Popen([CODECELL, "shell", "--idle-timeout", "1"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        eq(p.wait(20), 125, "exit status on a pipe")
        check(b"expired" in p.stderr.read(), "message")
    finally:
        if p.poll() is None:
            p.kill()
        p.wait()
        p.stdin.close()


if __name__ == "__main__":
    main()
