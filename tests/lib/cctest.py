"""Tiny test library for codecell's end-to-end and security tests.

Each test file is a script run by tests/run.sh with /usr/bin/python3.  It
defines functions decorated with @test and calls main() at the bottom.
Output is TAP ("ok N - name" / "not ok N - name"), which run.sh counts.
A test that needs something the host lacks must fail, not skip: CI runs
on the same kind of machine, and a silent skip hides a broken sandbox.
"""
import atexit
import base64
import contextlib
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("CODECELL_BUILD", "build")
CODECELL = os.path.join(ROOT, BUILD, "codecell")
HELPERS = os.path.join(ROOT, BUILD, "helpers")
PYTHON = "/usr/bin/python3"

_tests = []

# What a codecell keeps past a command (the audit log `serve` and `mcp`
# write by default, a --project run's changes) goes under
# $XDG_STATE_HOME/codecell: for every codecell a test starts, a directory
# of the test's own, never the user's.
STATE_HOME = tempfile.mkdtemp(prefix="cctest-state-")
os.environ["XDG_STATE_HOME"] = STATE_HOME
atexit.register(shutil.rmtree, STATE_HOME, True)

# A bound for what, when broken, never ends or runs for ten minutes (the
# tests' sleeps under a timeout are 600 s or endless loops): a working run
# on a machine at a load average of 100 takes far less, a broken one always
# more.  It is not a speed check (the rule: no timed assertions; speed is
# measured in bench/), only what tells "ended" from "hung".
HANG_S = 60

# A --timeout for a cell that does real work (imports pandas or
# matplotlib) where the timeout is not what the test is about: the default
# 30 s is a second of CPU on an idle machine but can pass before the
# import ends at a load average of 100.  Like HANG_S it only bounds a hang.
WORK_S = 300

# --timeout values for a test that needs its program to get somewhere (to
# print a first line) before the timeout ends it: on a loaded machine the
# start alone can take over a second, so the test tries again with twice
# the time until the program got there.  Each try checks everything else.
TIMEOUTS_S = (1, 2, 4, 8, 16, 32)


def test(fn):
    _tests.append(fn)
    return fn


class Run:
    """The outcome of one codecell invocation."""

    def __init__(self, proc, elapsed):
        self.status = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.elapsed = elapsed
        self._json = None

    @property
    def json(self):
        if self._json is None:
            self._json = json.loads(self.stdout)
        return self._json

    def __repr__(self):
        return "Run(status=%r, stdout=%r, stderr=%r)" % (
            self.status, self.stdout[-2000:], self.stderr[-2000:])


def codecell(*args, stdin=None, timeout=60, user=None, env=None, cwd=None):
    """Run the codecell binary; args are strings.  user=1000 runs it as an
    ordinary user through setpriv."""
    cmd = [CODECELL] + list(args)
    if user is not None:
        cmd = ["setpriv", "--reuid=%d" % user, "--regid=%d" % user,
               "--clear-groups"] + cmd
    t0 = time.monotonic()
    p = subprocess.run(cmd, input=stdin, capture_output=True, text=True,
                       timeout=timeout, env=env, cwd=cwd)
    return Run(p, time.monotonic() - t0)


class JsonShell:
    """A live `codecell shell --json [--lang LANG] ARGS`, fed one statement
    at a time: piped input runs each complete statement as it arrives, and
    each gives one result line.  user=1000 runs it as an ordinary user."""

    def __init__(self, *args, lang="python", user=None):
        cmd = [CODECELL, "shell", "--json", "--lang", lang] + list(args)
        if user is not None:
            cmd = ["setpriv", "--reuid=%d" % user, "--regid=%d" % user, "--clear-groups"] + cmd
        self.lang = lang
        self.elapsed = None
        self.stderr = None
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)

    def send(self, stmt):
        self.p.stdin.write(stmt.rstrip("\n") + "\n")
        if self.lang == "python" and ("\n" in stmt.strip() or stmt.rstrip().endswith(":")):
            self.p.stdin.write("\n")  # close a compound statement
        self.p.stdin.flush()

    def result(self):
        t0 = time.monotonic()
        line = self.p.stdout.readline()
        check(line, "no result (stderr %r)" % (self.p.stderr.read()
                                               if self.p.poll() is not None else "",))
        self.elapsed = time.monotonic() - t0
        return json.loads(line)

    def run(self, stmt):
        self.send(stmt)
        return self.result()

    def close(self):
        self.p.stdin.close()
        rc = self.p.wait(timeout=HANG_S)
        self.stderr = self.p.stderr.read()
        return rc


def run_code(code, *args, lang="python", **kw):
    """codecell run --json --lang LANG - with code on stdin; returns Run."""
    return codecell("run", "--json", "--lang", lang, *args, "-", stdin=code, **kw)


def tmpdir():
    d = tempfile.mkdtemp(prefix="cctest-")
    os.chmod(d, 0o755)
    return d


def write(path, text, mode=0o644):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


@contextlib.contextmanager
def scratch():
    """A temporary directory, removed afterwards."""
    d = tmpdir()
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def children(pid):
    """Direct children of pid, from /proc: of each of its threads (a
    thread's children are listed under that thread).  A thread that ends
    hands its children to another thread of its process: a listing made
    while that happens can miss them (read the new parent's list before,
    the old one's after), so the listing is made again until two agree.
    A thread that ends between the listing and the read is skipped, not
    the rest with it: a server's connection threads come and go all the
    time."""
    last = None
    for _ in range(20):
        kids = _children_once(pid)  # in the kernel's order: callers may rely on it
        if last is not None and sorted(kids) == sorted(last):
            break
        last = kids
    return kids


def _children_once(pid):
    kids = []
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return kids
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                kids += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return kids


# ---- the static probe (tests/helpers/probe.c) inside a bash run ----------

PROBE = os.path.join(HELPERS, "probe")
_embed_cache = None
_file_works = {}


def embedded_probe_script(commands):
    """The probe shipped inside the script itself (gzip+base64)."""
    global _embed_cache
    if _embed_cache is None:
        with open(PROBE, "rb") as f:
            _embed_cache = base64.b64encode(gzip.compress(f.read(), 6)).decode()
    return ("base64 -d <<'__PROBE__' | gzip -dc > probe\n%s\n__PROBE__\n"
            "chmod 755 probe\n%s\n" % (_embed_cache, commands))


def run_probe(commands, user=None, args=(), env=None):
    """Run a bash script in which ./probe is the helper.  The probe goes in
    with --file; should codecell be unable to copy files in (as root it
    once failed with EOVERFLOW; test_privilege.py
    workspace_file_copied_in_unprivileged guards that), it is embedded in
    the script instead, so that the checks still run.
    Returns (Run, [probe records])."""
    check(os.access(PROBE, os.X_OK), "probe not built: %s (make all)" % PROBE)
    r = None
    if _file_works.get(user, True):
        r = codecell("run", "--json", "--lang", "bash", "--file", PROBE, *args, "-",
                     stdin=commands + "\n", user=user, env=env)
        if r.status == 125 and "cannot copy" in (r.stdout + r.stderr):
            _file_works[user] = False
            r = None
    if r is None:
        r = codecell("run", "--json", "--lang", "bash", *args, "-",
                     stdin=embedded_probe_script(commands), user=user, env=env)
    check(r.stdout.startswith("{"), "no JSON result: %r" % (r,))
    recs = [json.loads(l) for l in r.json["logs"]["stdout"].splitlines() if l.startswith("{")]
    return r, recs


def check(cond, msg="check failed"):
    if not cond:
        raise AssertionError(msg)


def eq(a, b, msg=""):
    if a != b:
        raise AssertionError("%s: %r != %r" % (msg or "not equal", a, b))


def descendants(pid):
    """Every process below pid: what a codecell process this test started
    runs (its sandboxes and what runs in them).  Tests find "their"
    processes this way, never by name or uid across the host, where
    another codecell's sessions may be running."""
    out, todo = [], [pid]
    while todo:
        for kid in children(todo.pop()):
            if kid not in out:
                out.append(kid)
                todo.append(kid)
    return out


def holder_of(root, mark):
    """The descendant of root with a file whose path holds mark open (a
    cell that opens a file of a fresh name is seen running this way)."""
    for pid in descendants(root):
        try:
            fds = os.listdir("/proc/%d/fd" % pid)
        except OSError:
            continue
        for fd in fds:
            try:
                if mark in os.readlink("/proc/%d/fd/%s" % (pid, fd)):
                    return pid
            except OSError:
                pass
    return None


def cmdline(pid):
    """The argv of pid joined by spaces ("" once it is gone)."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


# the v1 controllers whose directories codecell makes for each sandbox
CONTROLLERS = ("memory", "pids", "cpuacct")


def cgroup_parents(pid):
    """Where pid's sandboxes get their cgroups: <controller>/<pid's
    cgroup>/codecell, for each v1 controller codecell uses."""
    out = []
    with open("/proc/%d/cgroup" % pid) as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            for c in ctrls.split(","):
                if c in CONTROLLERS:
                    out.append(os.path.normpath("/sys/fs/cgroup/%s/%s/codecell" % (c, path)))
    return out


def sandbox_cgroups(parents, server_pid):
    """The sb-<server_pid>-<n> directories under parents."""
    prefix = "sb-%d-" % server_pid
    out = []
    for p in parents:
        try:
            out += [os.path.join(p, d) for d in os.listdir(p) if d.startswith(prefix)]
        except OSError:
            pass
    return sorted(out)


def template_of(server_pid):
    """(the pool template's init, the template): the template is a child
    of a child of the server (its init), started with --template.  Cells
    forked from it keep that command line: a cell's init becomes the
    init's child too (its parent, a fork of the template, exits) and has
    that command line until it scrubs it.  The template is the oldest."""
    for init in children(server_pid):
        found = [(proc_start(pid), pid) for pid in children(init)
                 if "--template" in cmdline(pid).split()]
        found = [f for f in found if f[0] is not None]
        if found:
            return init, min(found)[1]
    return None, None


# system calls (x86_64) a process sleeps in: where node's event loop
# waits, where Python's time.sleep() does, where a kernel waits for its
# next request (read, poll, select, pselect6, ppoll)
EPOLL_WAITS = {"232", "281", "441"}
SLEEPS = {"35", "230", "23", "270"}
READS = {"0", "7", "23", "270", "271"}


def await_blocked(pid, calls, signo=None):
    """Once pid's main thread sleeps (state S) in one of the system calls
    calls (numbers, as /proc/PID/syscall gives them) and, with signo, that
    signal is no longer pending: a process seen there, not one assumed
    there after a pause.  Returns at once should pid be gone (what the
    caller checks next then fails)."""
    deadline = time.monotonic() + HANG_S
    bit = 1 << (signo - 1) if signo else 0
    while True:
        try:
            with open("/proc/%d/status" % pid) as f:
                st = dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
        except OSError:
            return
        state = st["State"].split()[0]
        if state in ("Z", "X"):
            return
        with open("/proc/%d/syscall" % pid) as f:  # unreadable: fail, not pass
            call = f.read().split()[0]
        pending = int(st["SigPnd"], 16) | int(st["ShdPnd"], 16)
        if state == "S" and call in calls and not pending & bit:
            return
        check(time.monotonic() < deadline, "pid %d never blocked in %r: %s %s" % (pid, calls, state, call))
        time.sleep(0.02)


def descendants_running(pid, needle):
    """The descendants of pid whose command line holds needle."""
    return [p for p in descendants(pid) if needle in cmdline(p)]


def await_descendants(pid, needle, timeout=10):
    """descendants_running(pid, needle), waiting (up to timeout seconds)
    for one to show up: a child just forked may not have exec'd yet, and
    reads as "" for a moment."""
    deadline = time.monotonic() + timeout
    found = descendants_running(pid, needle)
    while not found and time.monotonic() < deadline:
        time.sleep(0.02)
        found = descendants_running(pid, needle)
    return found


def proc_start(pid):
    """pid's start time (clock ticks since boot), or None once it is gone
    or a zombie: with the pid, it names one process even after the pid
    is reused."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] in ("Z", "X") else int(fields[19])


def snapshot(pids):
    """{pid: start time} of the processes still running among pids."""
    snap = {p: proc_start(p) for p in pids}
    return {p: t for p, t in snap.items() if t is not None}


def still_running(snap):
    """The pids of a snapshot() that still run (the same processes)."""
    return sorted(p for p, t in snap.items() if proc_start(p) == t)


def proc_status(pid, field):
    """A "kB" field of /proc/PID/status (VmRSS, VmHWM, ...) in bytes."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no %s in /proc/%d/status" % (field, pid))


class Serve:
    """A `codecell serve` this test starts on a free loopback port (port 0,
    read back from its first line), stopped with SIGTERM."""

    def __init__(self, *args, env=None, listen="127.0.0.1:0", preexec_fn=None):
        import subprocess as sp
        # stderr to a file: a pipe nobody reads fills up under a flood of
        # log lines and blocks the server's logging thread, which looks
        # like a hang of the server itself
        self.errf = tempfile.TemporaryFile(mode="w+")
        self.p = sp.Popen([CODECELL, "serve", "--listen", listen] + list(args),
                          stdout=sp.PIPE, stderr=self.errf, text=True, env=env,
                          preexec_fn=preexec_fn)
        line = self.p.stdout.readline()
        check(line.startswith("codecell serve: listening on http://"),
              "no listening line: %r %r" % (line, "" if line else self.log()))
        self.port = int(line.split()[4].rstrip("/").rsplit(":", 1)[1])
        self.pid = self.p.pid

    def request(self, method, path, body=None, headers=None, timeout=120, key=None):
        """(status, JSON or bytes): the JSON of a JSON answer (None when
        empty), the bytes of any other.  body: a dict or list goes as
        JSON, anything else as it is.  key: a policy's client key, sent
        as a Bearer token."""
        import http.client
        headers = dict(headers or {})
        if key:
            headers["Authorization"] = "Bearer " + key
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
            headers["Content-Type"] = "application/json"
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            data = r.read()
            ctype = r.getheader("Content-Type", "")
        finally:
            c.close()
        return r.status, json.loads(data or b"null") if ctype.startswith("application/json") else data

    def post(self, path, body, timeout=120):
        return self.request("POST", path, body, timeout=timeout)

    def session(self, **body):
        st, j = self.request("POST", "/v1/sessions", body)
        check(st == 201, "create: %r %r" % (st, j))
        return j["id"]

    def execute(self, sid, code):
        st, j = self.request("POST", "/v1/sessions/%s/execute" % sid, {"code": code})
        check(st == 200 and j["status"] == "ok", "execute %r: %r %r" % (code, st, j))
        return j["results"][0]["text/plain"] if j["results"] else None

    def await_pending(self, timeout=60):
        """The approvals pending once there is one (a call the policy holds
        for a person, started by another thread)."""
        deadline = time.monotonic() + timeout
        while True:
            st, j = self.request("GET", "/v1/approvals?pending")
            pending = [a for a in j["approvals"] if a["state"] == "pending"]
            if pending:
                return pending
            check(time.monotonic() < deadline, "the call was never held: %r" % j)
            time.sleep(0.1)

    def stop(self, sig=15, timeout=30):
        """Signal it (SIGTERM), wait; its exit status.  self.stderr: its log."""
        if self.p.poll() is None:
            self.p.send_signal(sig)
        rc = self.p.wait(timeout=timeout)
        self.stderr = self.log()
        return rc

    def log(self):
        self.errf.seek(0)
        return self.errf.read()


def call(s, method, path, body=None, key=None, raw=None, headers=None):
    """(status, JSON or bytes) of one request to the Serve s as the client
    whose key is key: body goes as JSON, raw (bytes) as it is."""
    return s.request(method, path, body if body is not None else raw, headers, key=key)


class MountNs:
    """A mount namespace of the test's own to run codecell in, so that a
    check of mounts left behind sees only what the test started: a copy
    of the host's mounts, cut off from the host's (private, so mounts
    that other work makes on the host meanwhile do not show here), then
    shared again within itself, so that a sandbox that failed to make its
    mounts private would still leak them into this namespace, where
    mounts() sees them.  A holder process keeps it alive until close()."""

    def __init__(self):
        import subprocess as sp
        self.holder = sp.Popen(["unshare", "--mount", "--propagation", "private", "--", "sh",
                                "-c", "mount --make-rshared / && echo ready && exec sleep 100000"],
                               stdout=sp.PIPE, text=True)
        line = self.holder.stdout.readline()
        check(line == "ready\n", "cannot make a mount namespace for the test: %r" % line)
        self.path = "/proc/%d/ns/mnt" % self.holder.pid

    def prefix(self):
        """The command prefix that runs a program in the namespace."""
        return ["nsenter", "--mount=" + self.path, "--"]

    def enter(self):
        """For a preexec_fn: join the namespace (after fork, before exec)."""
        import ctypes
        fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            if ctypes.CDLL(None, use_errno=True).setns(fd, 0x00020000) != 0:  # CLONE_NEWNS
                raise OSError(ctypes.get_errno(), "setns " + self.path)
        finally:
            os.close(fd)

    def mounts(self):
        """The namespace's mounts, as "id point" strings: a mount made and
        removed again has another id than the one it replaced."""
        with open("/proc/%d/mountinfo" % self.holder.pid) as f:
            return {" ".join(line.split()[0:5:4]) for line in f}

    def close(self):
        self.holder.kill()
        self.holder.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def leftovers():
    """Processes, cgroups and temp dirs a sandbox might leave behind."""
    left = []
    for ctrl in ("memory", "pids", "cpuacct", "cpu"):
        base = "/sys/fs/cgroup/" + ctrl
        for dirpath, dirnames, _ in os.walk(base):
            for d in dirnames:
                if d.startswith("sb-"):
                    left.append(os.path.join(dirpath, d))
    return left


def await_empty(fn, timeout=30):
    """fn()'s value once it is empty (polled), or its last value after
    timeout seconds.  `codecell run` exits as soon as its result is final:
    its sandbox's init ends and its cgroups are removed a moment later,
    by a process of codecell's own (sandbox_free_detached)."""
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if not v or time.monotonic() >= deadline:
            return v
        time.sleep(0.02)


def main():
    """Run every test, or (CCTEST_ONLY=substring) those whose name has it."""
    failed = 0
    only = os.environ.get("CCTEST_ONLY")
    for i, fn in enumerate(_tests, 1):
        name = fn.__name__
        if only and only not in name:
            continue
        try:
            fn()
            print("ok %d - %s" % (i, name), flush=True)
        except Exception:
            failed += 1
            print("not ok %d - %s" % (i, name), flush=True)
            for line in traceback.format_exc().splitlines():
                print("#   " + line, flush=True)
    print("1..%d" % len(_tests), flush=True)
    sys.exit(1 if failed else 0)


@contextlib.contextmanager
def cpus_busy(on=True):
    """Every CPU spinning, in processes of the caller's own (killed at the
    end): a loaded machine made by the test, not found on the host."""
    spin = [subprocess.Popen(["/usr/bin/python3", "-c", "while True: pass"])
            for _ in range(os.cpu_count() or 2)] if on else []
    try:
        yield
    finally:
        for p in spin:
            p.kill()
            p.wait()
