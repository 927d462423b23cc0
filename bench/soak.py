"""Soak `codecell serve`: many clients for a long time, with attacks mixed
in, watching the server for leaks.  Run by `make soak` (bench/soak.sh).

    soak.py CODECELL [--seconds N] [--clients N] [--pool N] [--preload LIST] [--baseline-seconds N]

Starts `codecell serve` on a free loopback port, waits for its warm pool,
runs the same mix from one client first (the baseline, 30 s; its figures
are printed beside the loaded ones), then runs the clients: each keeps a session and does, at random, cells
(plain, numpy/pandas, figures), NDJSON streams, uploads and downloads,
interrupts, forks, restarts, timeouts, the memory and pids limits,
one-shot runs, session deletes, and attacks (half-sent requests, output
floods, forged kernel events on fd 4, large and too-large uploads,
clients that hang up in the middle of a stream).  Every outcome is
counted by kind; outcomes that are not what the action expects are
unexpected and flagged.  Every 10 s it prints the server's RSS, fds,
threads, processes (its descendants) and sandbox cgroups (sb-PID-*
under its own cgroup).  At the end every session is deleted and the
figures are compared with the start: they must come back (flat).

Exit status: 0, or 1 on unexpected outcomes, a server that died, figures
not back to the start, or a SIGTERM that did not end the server cleanly.
Loopback only; bounded in time (each request has a timeout, the whole
run a deadline); kills only the server it started.

Latencies are printed twice: as the clients saw them (HTTP included, and
the clients' own wait for Python's GIL), and as the server timed them
(codecell_session_operation_duration_seconds in /metrics).  The clients'
own CPU time is printed too."""
import argparse
import ctypes
import hashlib
import http.client
import json
import os
import random
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lib"))
from cctest import cgroup_parents, descendants, sandbox_cgroups, template_of  # noqa: E402

REQ_TIMEOUT = 180  # seconds for one request on a loaded 2-core machine
EXEC_TIMEOUT = 60  # the cells' own timeout (server side)


# ---- the server, from /proc ----------------------------------------------------

def proc_state(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def status_field(pid, name):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    return 0


def cgroup_counts(parents, pid):
    """How many sandbox cgroups of server pid each controller holds."""
    return [len(sandbox_cgroups([p], pid)) for p in parents]


def cgroup_files(parents, pid, names):
    """name: contents, of the sandbox cgroup (under parents) that holds pid."""
    out = {}
    for par in parents:
        try:
            dirs = os.listdir(par)
        except OSError:
            continue
        for d in dirs:
            path = os.path.join(par, d)
            try:
                with open(os.path.join(path, "tasks")) as f:
                    if str(pid) not in f.read().split():
                        continue
            except OSError:
                continue
            for n in names:
                try:
                    with open(os.path.join(path, n)) as f:
                        out[n] = " ".join(f.read().split())[:200]
                except OSError:
                    pass
    return out


TEMPLATE_STATS = ("memory.usage_in_bytes", "memory.max_usage_in_bytes", "memory.limit_in_bytes",
                  "memory.failcnt", "memory.oom_control", "pids.current", "pids.events")


def cpu_split(server_pid, parents):
    """Seconds of CPU so far: the server process itself (its threads:
    HTTP, the supervisors of every sandbox), the sandboxes (the cpuacct
    cgroup codecell makes them under), this process (the clients); and
    the host's CPU pressure (PSI "some": seconds in which a runnable task
    waited for a CPU), the time spent off CPU for want of one."""
    hz = os.sysconf("SC_CLK_TCK")
    with open("/proc/%d/stat" % server_pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    server = (int(fields[11]) + int(fields[12])) / hz
    sandboxes = 0.0
    for p in parents:
        if "/cpuacct" in p:
            try:
                with open(os.path.join(p, "cpuacct.usage")) as f:
                    sandboxes = int(f.read()) / 1e9
            except OSError:
                pass
    ru = resource.getrusage(resource.RUSAGE_SELF)
    waited = float("nan")
    try:
        with open("/proc/pressure/cpu") as f:
            waited = int(f.readline().split("total=")[1]) / 1e6
    except (OSError, IndexError, ValueError):
        pass
    return {"server": server, "sandboxes": sandboxes, "clients": ru.ru_utime + ru.ru_stime,
            "cpu pressure": waited}


class Sample:
    def __init__(self, pid, parents):
        self.t = time.monotonic()
        self.rss_mb = status_field(pid, "VmRSS") / 1024
        self.threads = status_field(pid, "Threads")
        self.fds = len(os.listdir("/proc/%d/fd" % pid))
        procs = descendants(pid)
        self.procs = len(procs)
        self.zombies = sum(1 for p in procs if proc_state(p) == "Z")
        self.cgroups = cgroup_counts(parents, pid)

    def line(self):
        return ("rss %7.1f MB  fds %4d  threads %3d  procs %4d (zombies %d)  cgroups %s" %
                (self.rss_mb, self.fds, self.threads, self.procs, self.zombies,
                 "/".join(str(n) for n in self.cgroups)))


# ---- HTTP ----------------------------------------------------------------------

class Http:
    def __init__(self, port):
        self.port = port

    def request(self, method, path, body=None, headers=None, timeout=REQ_TIMEOUT):
        """(status, JSON or bytes, seconds)."""
        h = dict(headers or {})
        if isinstance(body, dict):
            body = json.dumps(body)
            h["Content-Type"] = "application/json"
        t0 = time.monotonic()
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            data = r.read()
            ctype = r.getheader("Content-Type", "")
        finally:
            c.close()
        if ctype.startswith("application/json"):
            data = json.loads(data)
        return r.status, data, time.monotonic() - t0


class Unexpected(Exception):
    """An outcome the action does not expect; str is its kind."""

    def __init__(self, kind, detail=""):
        super().__init__(kind)
        self.kind = kind
        self.detail = detail


def want(cond, kind, detail=""):
    if not cond:
        raise Unexpected(kind, detail)


def brief(x, n=300):
    s = json.dumps(x) if isinstance(x, (dict, list)) else repr(x)
    return s if len(s) <= n else s[:n] + "..."


# ---- the clients ---------------------------------------------------------------

class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.outcomes = {}   # (action, outcome) -> count
        self.unexpected = {}  # kind -> count
        self.samples = {}    # kind -> first details
        self.lat = {"create": [], "fork": [], "restart": [], "execute": []}
        self.executions = 0

    def outcome(self, action, what):
        with self.lock:
            self.outcomes[(action, what)] = self.outcomes.get((action, what), 0) + 1

    def bad(self, kind, detail):
        with self.lock:
            self.unexpected[kind] = self.unexpected.get(kind, 0) + 1
            self.samples.setdefault(kind, [])
            if len(self.samples[kind]) < 3:
                self.samples[kind].append(detail)

    def latency(self, kind, secs):
        with self.lock:
            self.lat[kind].append(secs)

    def executed(self, n=1):
        with self.lock:
            self.executions += n


class Client:
    def __init__(self, i, http_, stats, stop, deadline):
        self.i = i
        self.h = http_
        self.st = stats
        self.stop = stop
        self.deadline = deadline
        self.rng = random.Random(i * 7919 + int(time.time()))
        self.sid = None
        self.n = None  # the counter this client's session should hold

    # -- helpers --

    def create(self):
        st, j, dt = self.h.request("POST", "/v1/sessions", {"timeout": EXEC_TIMEOUT})
        want(st == 201, "create: HTTP %d" % st, brief(j))
        self.st.latency("create", dt)
        self.sid = j["id"]
        self.n = None

    def path(self, tail=""):
        return "/v1/sessions/%s%s" % (self.sid, tail)

    def execute(self, code, timeout=None, record=False, sid=None):
        body = {"code": code}
        if timeout is not None:
            body["timeout"] = timeout
        st, j, dt = self.h.request("POST", "/v1/sessions/%s/execute" % (sid or self.sid), body)
        want(st == 200 and isinstance(j, dict), "execute: HTTP %d" % st, brief(j))
        self.st.executed()
        if record:
            self.st.latency("execute", dt)
        if j.get("restarted"):
            self.n = None
        return j

    def text(self, r):
        for b in r.get("results") or []:
            if b.get("is_main_result"):
                return b.get("text/plain")
        return None

    # -- actions: each returns the name of an expected outcome or raises --

    def a_counter(self):
        r = self.execute("_n = globals().get('_n', 0) + 1\n_n", record=True)
        want(r["status"] == "ok", "counter: status %s" % r["status"], brief(r))
        got = int(self.text(r))
        if self.n is not None:
            want(got == self.n + 1, "counter: state lost", "had %d, got %d" % (self.n, got))
        self.n = got
        return "ok"

    def a_numpy(self):
        r = self.execute("import numpy as np, pandas as pd\n"
                         "df = pd.DataFrame(np.arange(12).reshape(3, 4))\nint(df.values.sum())")
        want(r["status"] == "ok" and self.text(r) == "66", "numpy: wrong answer", brief(r))
        return "ok"

    def a_figure(self):
        r = self.execute("import matplotlib.pyplot as plt\nplt.plot([1, 3, 2]); plt.show()\n'shown'")
        want(r["status"] == "ok" and any("image/png" in b for b in r["results"]),
             "figure: no image", brief(r))
        return "ok"

    def a_stream(self):
        c = http.client.HTTPConnection("127.0.0.1", self.h.port, timeout=REQ_TIMEOUT)
        try:
            c.request("POST", self.path("/execute"),
                      body=json.dumps({"code": "import time\nfor i in range(5):\n"
                                       "    print('line', i, flush=True); time.sleep(0.05)\n7 * 6"}),
                      headers={"Content-Type": "application/json",
                               "Accept": "application/x-ndjson"})
            r = c.getresponse()
            if r.status != 200:
                raise Unexpected("stream: HTTP %d" % r.status, brief(r.read()[:300]))
            evs = [json.loads(line) for line in iter(r.readline, b"")]
        finally:
            c.close()
        self.st.executed()
        want(evs and evs[-1]["type"] == "end", "stream: no end event", brief(evs[-3:]))
        end = evs[-1]
        if end["status"] == "killed" or (end.get("result") or {}).get("restarted"):
            self.n = None
        want(end["status"] == "ok", "stream: status %s" % end["status"], brief(end))
        out = "".join(e["text"] for e in evs if e["type"] == "stdout")
        want(out == "".join("line %d\n" % i for i in range(5)), "stream: stdout", brief(out))
        want(any(e["type"] == "result" and e["data"].get("text/plain") == "42" for e in evs),
             "stream: no result event", brief(evs))
        return "ok"

    def a_files(self):
        size = self.rng.choice((0, 1, 1000, 65536, 1 << 20, 3 << 20))
        blob = os.urandom(size)
        name = "d%d/f%d.bin" % (self.rng.randrange(3), self.rng.randrange(5))
        st, j, _ = self.h.request("PUT", self.path("/files/" + name), body=blob)
        want(st in (200, 201) and j["size"] == size, "upload: HTTP %d" % st, brief(j))
        st, data, _ = self.h.request("GET", self.path("/files/" + name))
        want(st == 200 and data == blob, "download: HTTP %d or bytes differ" % st,
             "%d bytes, sha %s" % (len(data), hashlib.sha1(data).hexdigest()[:8]
                                   if isinstance(data, bytes) else brief(data)))
        r = self.execute("import os, hashlib\nhashlib.sha1(open(%r, 'rb').read()).hexdigest()" % name)
        want(r["status"] == "ok", "files: the cell reading the upload: status %s" % r["status"],
             brief(r))
        want(self.text(r) == repr(hashlib.sha1(blob).hexdigest()), "upload: the kernel sees other bytes",
             brief(r))
        st, j, _ = self.h.request("GET", self.path("/files/"))
        want(st == 200 and j.get("type") == "directory", "list: HTTP %d" % st, brief(j))
        if self.rng.random() < 0.5:
            st, j, _ = self.h.request("DELETE", self.path("/files/" + name.split("/")[0]))
            want(st == 200, "delete file: HTTP %d" % st, brief(j))
        return "ok"

    def a_large_upload(self):
        if self.rng.random() < 0.3:
            # over the 64 MiB upload limit: 413, and the server goes on
            st, j, _ = self.h.request("PUT", self.path("/files/toobig.bin"), body=b"\0" * (65 << 20))
            want(st == 413, "too large upload: HTTP %d" % st, brief(j))
            return "413"
        blob = os.urandom(1 << 20) * 40
        st, j, _ = self.h.request("PUT", self.path("/files/large.bin"), body=blob)
        if st == 507:
            return "507 workspace_full"  # other uploads of this client fill it
        want(st in (200, 201) and j["size"] == len(blob), "large upload: HTTP %d" % st, brief(j))
        st, data, _ = self.h.request("GET", self.path("/files/large.bin"))
        want(st == 200 and data == blob, "large download differs", "HTTP %d" % st)
        self.h.request("DELETE", self.path("/files/large.bin"))
        return "ok"

    def a_interrupt(self):
        out = {}

        def run():
            try:
                out["r"] = self.execute("import time\nwhile True:\n    time.sleep(0.05)", timeout=30)
            except Exception as e:  # noqa: BLE001
                out["r"] = e
        th = threading.Thread(target=run, daemon=True)
        th.start()
        interrupted = False
        for _ in range(100):
            time.sleep(0.3)
            st, j, _ = self.h.request("POST", self.path("/interrupt"), timeout=60)
            want(st == 200, "interrupt: HTTP %d" % st, brief(j))
            if j["interrupted"]:
                interrupted = True
                break
            if not th.is_alive():
                break
        th.join(REQ_TIMEOUT)
        r = out.get("r")
        want(isinstance(r, dict), "interrupt: the cell's request failed", brief(repr(r)))
        want(interrupted, "interrupt: never running", brief(r))
        want(r["status"] == "error" and r["error"]["name"] == "KeyboardInterrupt",
             "interrupt: status %s" % r["status"], brief(r))
        return "KeyboardInterrupt"

    def a_fork(self):
        self.execute("_f = 'forked'")
        st, j, dt = self.h.request("POST", self.path("/fork"))
        want(st == 201, "fork: HTTP %d" % st, brief(j))
        self.st.latency("fork", dt)
        kid = j["id"]
        try:
            r = self.execute("_f", sid=kid)
            want(self.text(r) == "'forked'", "fork: state not copied", brief(r))
        finally:
            st, j, _ = self.h.request("DELETE", "/v1/sessions/" + kid)
            want(st == 200, "delete fork: HTTP %d" % st, brief(j))
        return "ok"

    def a_restart(self):
        st, j, dt = self.h.request("POST", self.path("/restart"))
        want(st == 200, "restart: HTTP %d" % st, brief(j))
        self.st.latency("restart", dt)
        self.n = None
        r = self.execute("'_n' in globals()")
        want(self.text(r) == "False", "restart: state kept", brief(r))
        return "ok"

    def a_timeout(self):
        r = self.execute("import time\ntime.sleep(10)", timeout=0.5)
        want(r["status"] == "timeout", "timeout: status %s" % r["status"], brief(r))
        return "timeout"

    def a_memory(self):
        # the default memory limit is 512 MiB; bytes are written, so the
        # pages are really used
        r = self.execute("b = b'x' * (900 << 20)\nlen(b)")
        if r["status"] == "memory_limit":
            want(r["restarted"], "memory: not restarted", brief(r))
            return "memory_limit"
        want(r["status"] == "error" and r["error"]["name"] == "MemoryError",
             "memory: status %s" % r["status"], brief(r))
        return "MemoryError"

    def a_pids(self):
        # every thread is held until the loop ends (all 400 started, or
        # the pids limit refused one): a thread that ended early would
        # give its pid back, and on a slow machine the early ones did
        # before the late ones started.  The wait's bound only keeps a
        # broken run from leaving threads behind past the cell.
        r = self.execute("import threading\nev = threading.Event()\nts = []\n"
                         "try:\n    for i in range(400):\n"
                         "        t = threading.Thread(target=ev.wait, args=(%d,), daemon=True)\n"
                         "        t.start(); ts.append(t)\n"
                         "except RuntimeError:\n    pass\nev.set()\nfor t in ts: t.join()\nlen(ts)"
                         % (2 * EXEC_TIMEOUT))
        want(r["status"] == "ok" and "pids" in r["limits_hit"], "pids: not hit", brief(r))
        want(int(self.text(r)) < 400, "pids: all threads started", brief(r))
        return "pids hit"

    def a_oneshot(self):
        lang, code, out = self.rng.choice((("python", "print(6 * 7)", "42\n"),
                                           ("bash", "echo $((6 * 7))", "42\n")))
        st, j, _ = self.h.request("POST", "/v1/execute", {"code": code, "language": lang})
        want(st == 200 and j["status"] == "ok" and j["logs"]["stdout"] == out,
             "one-shot %s: HTTP %d" % (lang, st), brief(j))
        self.st.executed()
        return "ok"

    def a_recreate(self):
        st, j, _ = self.h.request("DELETE", self.path())
        want(st == 200, "delete: HTTP %d" % st, brief(j))
        self.sid = None
        self.create()
        return "ok"

    # -- attacks --

    def a_half_request(self):
        s = socket.create_connection(("127.0.0.1", self.h.port), timeout=30)
        try:
            body = json.dumps({"code": "print('never')"}).encode()
            head = (b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n" % (self.path("/execute").encode(), len(body) + 500))
            kind = self.rng.randrange(3)
            if kind == 0:
                s.sendall(head[: len(head) // 2])  # half the headers
            elif kind == 1:
                s.sendall(head + body)  # 500 bytes of body never come
            else:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 12")
            time.sleep(self.rng.random())
        finally:
            s.close()
        return "sent half"

    def a_flood(self):
        big = self.rng.random() < 0.3
        mb = 40 if big else 8
        r = self.execute("import sys\nchunk = 'y' * 65535 + '\\n'\n"
                         "for i in range(%d * 16):\n    sys.stdout.write(chunk)\n'end'" % mb)
        if big:
            # past 16 x the 1 MiB output limit the kernel is stopped
            want(r["status"] != "ok" or not r["truncated"]["stdout"],
                 "flood: 40 MiB ended ok, truncated: the kill past 16 x the output limit was missed",
                 "limits_hit %r" % r["limits_hit"])
            want(r["status"] == "output_limit", "flood: status %s" % r["status"], brief(r))
            return "output_limit"
        want(r["status"] == "ok" and r["truncated"]["stdout"], "flood: status %s" % r["status"],
             brief(r))
        want(len(r["logs"]["stdout"]) <= (1 << 20) + 4096, "flood: output not capped",
             len(r["logs"]["stdout"]))
        return "truncated"

    def a_forge(self):
        # the kernel's event pipe is fd 4: write events for ids this
        # request may have, a line that is not JSON, and one that is not
        # an object; then a normal result
        r = self.execute(
            "import os, json\n"
            "for i in range(1, 400):\n"
            "    os.write(4, (json.dumps({'type': 'display', 'id': i, 'data': {'text/plain': 'forged'}})"
            " + '\\n').encode())\n"
            "os.write(4, b'not json at all\\n')\n"
            "os.write(4, b'[1, 2, 3]\\n')\n"
            "os.write(4, b'{\"type\": 7, \"id\": \"x\"}\\n')\n"
            "'real'")
        want(r["status"] == "ok", "forge: status %s" % r["status"], brief(r))
        want(self.text(r) == "'real'", "forge: the real result is lost", brief(r))
        return "ok"

    def a_hangup_stream(self):
        s = socket.create_connection(("127.0.0.1", self.h.port), timeout=60)
        try:
            body = json.dumps({"code": "import time\nwhile True:\n    print('tick', flush=True); "
                                       "time.sleep(0.1)"}).encode()
            s.sendall(b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      b"Accept: application/x-ndjson\r\nContent-Length: %d\r\n\r\n%s"
                      % (self.path("/execute").encode(), len(body), body))
            got = b""
            while b"tick" not in got and len(got) < 65536:
                d = s.recv(4096)
                if not d:
                    break
                got += d
            want(b"tick" in got, "hang-up: no output before hanging up", brief(got[:300]))
        finally:
            s.close()
        # the cell is interrupted; the session goes on
        r = self.execute("'after'")
        want(self.text(r) == "'after'", "hang-up: the session did not go on", brief(r))
        return "interrupted"

    ACTIONS = (
        ("counter", a_counter, 30), ("numpy", a_numpy, 6), ("figure", a_figure, 3),
        ("stream", a_stream, 10), ("files", a_files, 10), ("large_upload", a_large_upload, 1),
        ("interrupt", a_interrupt, 3), ("fork", a_fork, 4), ("restart", a_restart, 3),
        ("timeout", a_timeout, 3), ("memory", a_memory, 1), ("pids", a_pids, 1),
        ("oneshot", a_oneshot, 3), ("recreate", a_recreate, 3),
        ("half_request", a_half_request, 2), ("flood", a_flood, 1), ("forge", a_forge, 2),
        ("hangup_stream", a_hangup_stream, 2),
    )

    def run(self):
        names = [a for a, _, _ in self.ACTIONS]
        weights = [w for _, _, w in self.ACTIONS]
        fns = {a: f for a, f, _ in self.ACTIONS}
        while not self.stop.is_set() and time.monotonic() < self.deadline:
            action = "create"
            try:
                if self.sid is None:
                    self.create()
                action = self.rng.choices(names, weights)[0]
                self.st.outcome(action, fns[action](self))
            except Unexpected as e:
                self.st.outcome(action, "UNEXPECTED")
                self.st.bad(e.kind, e.detail)
                time.sleep(0.5)
            except (OSError, http.client.HTTPException, ValueError, KeyError, TypeError) as e:
                self.st.outcome(action, "UNEXPECTED")
                self.st.bad("%s: %s" % (action, type(e).__name__), brief(str(e)))
                time.sleep(0.5)
            time.sleep(self.rng.random() * 0.1)
        if self.sid:
            try:
                st, j, _ = self.h.request("DELETE", self.path())
                if st != 200:
                    self.st.bad("final delete: HTTP %d" % st, brief(j))
            except (OSError, http.client.HTTPException) as e:
                self.st.bad("final delete: %s" % type(e).__name__, str(e))


# ---- the run ----------------------------------------------------------------------

def bucket_pct(buckets, p):
    """The p quantile of a cumulative histogram, interpolated within
    its bucket as Prometheus's histogram_quantile does."""
    if not buckets or not buckets[-1][1]:
        return float("nan")
    want_n = p * buckets[-1][1]
    lo, below = 0.0, 0
    for le, cum in buckets:
        if cum >= want_n:
            if le == float("inf"):
                return lo
            return lo + (le - lo) * (want_n - below) / max(cum - below, 1)
        lo, below = le, cum
    return lo


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))] if xs else float("nan")


class Soak:
    def __init__(self, args):
        self.args = args
        self.tmp = tempfile.mkdtemp(prefix="codecell-soak-")
        self.errf = open(os.path.join(self.tmp, "server.log"), "w+")
        self.server_tmp = os.path.join(self.tmp, "tmp")
        os.mkdir(self.server_tmp)
        self.p = None
        self.failures = []
        # set by the phases that measure them; a run cut short has none
        self.clients_cg = None
        self.baseline_elapsed = 1.0
        self.split = None
        self.op_buckets = {}

    def start(self):
        cmd = [self.args.codecell, "serve", "--listen", "127.0.0.1:0",
               "--max-sessions", str(max(64, 3 * self.args.clients)), "--pool", str(self.args.pool)]
        if self.args.preload:
            cmd += ["--preload", self.args.preload]
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.errf, text=True,
                                  env=dict(os.environ, TMPDIR=self.server_tmp))
        line = self.p.stdout.readline()
        if not line.startswith("codecell serve: listening on http://"):
            sys.exit("soak: the server did not start: %r\n%s" % (line, self.log()[-2000:]))
        self.port = int(line.split()[4].rstrip("/").rsplit(":", 1)[1])
        self.pid = self.p.pid
        self.parents = cgroup_parents(self.pid)
        self.h = Http(self.port)
        print("soak: %s (pid %d), cgroups under %s" % (" ".join(cmd), self.pid,
                                                        ", ".join(self.parents)), flush=True)

    def log(self):
        self.errf.flush()
        with open(self.errf.name) as f:
            return f.read()

    def health(self):
        st, j, _ = self.h.request("GET", "/healthz", timeout=60)
        return j if st == 200 else {}

    def wait_pool(self, limit=300):
        t0 = time.monotonic()
        while time.monotonic() - t0 < limit:
            if self.p.poll() is not None:
                return False
            if self.health().get("pool_ready") == self.args.pool:
                return True
            time.sleep(0.5)
        return False

    def sample(self, label, extra=""):
        s = Sample(self.pid, self.parents)
        print("%-8s %s%s" % (label, s.line(), extra), flush=True)
        return s

    def watch_template(self, stats):
        """The pool's template and its init should live as long as the
        server: say so, once, when they do not (with their cgroup's
        counters, read while they lived)."""
        init, tmpl = template_of(self.pid)
        if (init, tmpl) != self.template:
            stats.bad("the pool's template changed or died",
                      "was %r, now %r; its cgroup before: %r" % (self.template, (init, tmpl),
                                                                 self.template_stats))
            self.template = (init, tmpl)
        if init:
            self.template_stats = cgroup_files(self.parents, init, TEMPLATE_STATS)

    def sampler(self, stats, stop, t0):
        next_sample = t0 + 10
        while not stop.wait(1):
            self.watch_template(stats)
            if time.monotonic() < next_sample:
                continue
            next_sample += 10
            if self.p.poll() is not None:
                print("soak: the server died (exit %r)" % self.p.returncode, flush=True)
                stop.set()
                return
            try:
                h = self.health()
            except (OSError, http.client.HTTPException) as e:
                h = {"error": type(e).__name__}
            self.sample("%5.0f s" % (time.monotonic() - t0),
                        "  sessions %s  pool %s  executions %d  unexpected %d" % (
                            h.get("sessions"), h.get("pool_ready"), stats.executions,
                            sum(stats.unexpected.values())))

    def settle(self, base, limit=120):
        """Wait until the figures that must come back do."""
        t0 = time.monotonic()
        while True:
            s = Sample(self.pid, self.parents)
            h = self.health()
            same = (s.procs, s.cgroups, s.fds, s.threads) == (base.procs, base.cgroups, base.fds,
                                                              base.threads)
            if (same and h.get("sessions") == 0 and h.get("pool_ready") == self.base_ready) \
                    or time.monotonic() - t0 > limit:
                return s, h
            time.sleep(1)

    def clients_apart(self):
        """The clients stand in for remote ones, which do not share the
        server's CPUs: once the server runs (it stays where it started),
        this process and its client threads move into a cpu cgroup of
        their own (cgroup v1; default weight), so that its 64 threads
        compete as one, as all of the server's sandboxes do under
        codecell/, not as 64 tasks beside the server.  Removed at the end."""
        if not self.args.clients_apart:
            return
        with open("/proc/self/cgroup") as f:
            path = next((ln.rstrip("\n").split(":", 2)[2] for ln in f
                         if ln.split(":")[1].split(",").count("cpu")), None)
        if path is None or not os.path.isdir("/sys/fs/cgroup/cpu"):
            print("soak: no cgroup v1 cpu hierarchy: the clients share the CPUs with the server",
                  flush=True)
            return
        self.clients_cg = "/sys/fs/cgroup/cpu%s/soak-clients-%d" % (path.rstrip("/"), os.getpid())
        self.clients_from = "/sys/fs/cgroup/cpu%s" % path.rstrip("/")
        os.mkdir(self.clients_cg)
        with open(os.path.join(self.clients_cg, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
        print("soak: the clients run in %s (cpu.shares 1024): they stand in for remote clients"
              % self.clients_cg, flush=True)

    def clients_back(self):
        if not self.clients_cg:
            return
        try:
            with open(os.path.join(self.clients_from, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
            os.rmdir(self.clients_cg)
        except OSError as e:
            print("soak: cannot remove %s: %s" % (self.clients_cg, e), flush=True)
        self.clients_cg = None

    def run(self):
        self.start()
        self.clients_apart()
        if not self.wait_pool():
            sys.exit("soak: the warm pool did not fill\n%s" % self.log()[-2000:])
        self.base_ready = self.health().get("pool_ready")
        time.sleep(1)  # the thread of that health check's connection ends
        base = self.sample("start")
        self.template = template_of(self.pid)
        self.template_stats = {}
        stats = Stats()
        stop = threading.Event()
        ru = resource.getrusage(resource.RUSAGE_SELF)
        self.cpu0 = ru.ru_utime + ru.ru_stime
        # the baseline: the same mix from one client, on the same server
        # just before, so that the loaded figures have something of the
        # same machine and hour to be set against
        self.baseline = Stats()
        if self.args.baseline_seconds > 0:
            print("soak: baseline, 1 client for %d s" % self.args.baseline_seconds, flush=True)
            t0 = time.monotonic()
            self.phase(1, t0 + self.args.baseline_seconds, self.baseline, threading.Event())
            self.baseline_elapsed = time.monotonic() - t0
        print("soak: %d clients for %d s" % (self.args.clients, self.args.seconds), flush=True)
        self.split0 = cpu_split(self.pid, self.parents)
        t0 = time.monotonic()
        deadline = t0 + self.args.seconds
        smp = threading.Thread(target=self.sampler, args=(stats, stop, t0), daemon=True)
        smp.start()
        self.phase(self.args.clients, deadline, stats, stop)
        stop.set()
        elapsed = time.monotonic() - t0
        split1 = cpu_split(self.pid, self.parents)
        self.split = {k: split1[k] - self.split0[k] for k in split1}
        ru = resource.getrusage(resource.RUSAGE_SELF)
        self.client_cpu = ru.ru_utime + ru.ru_stime - self.cpu0  # the clients' run only
        died = self.p.poll() is not None
        if died:
            self.failures.append("the server died (exit %r)" % self.p.returncode)
        else:
            self.op_buckets = self.server_latency()
            self.cleanup_sessions(stats)
            end, h = self.settle(base)
            print("%-8s %s  sessions %s  pool %s" % ("end", end.line(), h.get("sessions"),
                                                    h.get("pool_ready")), flush=True)
            self.compare(base, end, h.get("pool_ready"))
        self.report(stats, elapsed)
        if not died:
            self.stop_server()
        return 1 if self.failures or stats.unexpected or self.baseline.unexpected else 0

    def phase(self, n, deadline, stats, stop):
        """n clients until deadline; a client still busy long after it
        is a failure."""
        clients = [Client(i, self.h, stats, stop, deadline) for i in range(n)]
        threads = [threading.Thread(target=c.run, daemon=True) for c in clients]
        for t in threads:
            t.start()
        for t in threads:
            t.join(max(1, deadline - time.monotonic()) + 2 * REQ_TIMEOUT)
        hung = sum(1 for t in threads if t.is_alive())
        if hung:
            self.failures.append("%d clients did not finish" % hung)

    def server_latency(self):
        """{op: [(upper bound, cumulative count)]} of the server's own
        timing of creates, forks and restarts (GET /metrics)."""
        out = {}
        try:
            st, text, _ = self.h.request("GET", "/metrics", timeout=60)
        except (OSError, http.client.HTTPException) as e:
            print("soak: GET /metrics failed at the end: %s" % e, flush=True)
            return out
        if st != 200:
            return out
        if isinstance(text, bytes):
            text = text.decode()
        for line in text.splitlines():
            m = re.match(r'codecell_session_operation_duration_seconds_bucket'
                         r'\{op="(\w+)",le="([^"]+)"\} (\d+)$', line)
            if m:
                out.setdefault(m.group(1), []).append((float(m.group(2)), int(m.group(3))))
        return out

    def cleanup_sessions(self, stats):
        st, j, _ = self.h.request("GET", "/v1/sessions")
        left = [x["id"] for x in j.get("sessions", [])] if st == 200 else []
        if left:
            stats.bad("sessions left after the clients deleted theirs", "%d" % len(left))
        for sid in left:
            self.h.request("DELETE", "/v1/sessions/" + sid)

    def compare(self, base, end, ready):
        print("soak: after every session is deleted, against the start:")
        # a pool that grows with demand may hold more kernels at the end:
        # each is two processes (its init and the kernel) and one cgroup
        # per controller; their fds are not told apart, so not compared
        more = (ready or 0) - (self.base_ready or 0)
        if more:
            print("  the pool holds %s ready kernels, %s at the start: procs and cgroups are "
                  "compared net of them, fds are not compared" % (ready, self.base_ready))
        for name in ("procs", "zombies", "fds", "threads", "cgroups"):
            a, b = getattr(base, name), getattr(end, name)
            if more and name == "procs":
                b -= 2 * more
            elif more and name == "cgroups":
                b = [n - more for n in b]
            elif more and name == "fds":
                print("  %-8s %12s -> %-12s not compared" % (name, a, b))
                continue
            flat = a == b
            print("  %-8s %12s -> %-12s %s" % (name, a, b, "flat" if flat else "NOT FLAT"))
            if not flat:
                self.failures.append("%s not back to the start: %s -> %s" % (name, a, b))
        print("  %-8s %9.1f MB -> %.1f MB (%+.1f MB; not judged: malloc keeps freed memory)"
              % ("rss", base.rss_mb, end.rss_mb, end.rss_mb - base.rss_mb))

    def stop_server(self):
        procs = descendants(self.pid)
        self.p.send_signal(signal.SIGTERM)
        try:
            rc = self.p.wait(60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = self.p.wait()
            self.failures.append("SIGTERM did not stop the server in 60 s")
        left = [p for p in procs if proc_state(p) not in (None, "Z")]
        cg = cgroup_counts(self.parents, self.pid)
        print("soak: SIGTERM: exit %d, processes left %d, cgroups left %s, server TMPDIR entries %d"
              % (rc, len(left), "/".join(map(str, cg)), len(os.listdir(self.server_tmp))))
        if rc != 0 or left or any(cg) or os.listdir(self.server_tmp):
            self.failures.append("the server did not stop cleanly")

    def report(self, stats, elapsed):
        print("\nsoak: %d clients, %.0f s, %d executions (%.1f/s)" % (
            self.args.clients, elapsed, stats.executions, stats.executions / max(elapsed, 1)))
        cpu = self.client_cpu
        print("soak: the clients themselves used %.0f s of CPU (%.0f %% of the machine's %d CPUs)"
              % (cpu, 100 * cpu / max(elapsed, 1) / (os.cpu_count() or 1), os.cpu_count() or 1))
        split = self.split
        if split:
            cpus = (os.cpu_count() or 1) * max(elapsed, 1)
            print("soak: where the time went (CPU seconds, %% of the %d CPUs' %.0f s): %s; "
                  "the rest of the host %.0f s; a runnable task waited for a CPU %.0f s of the "
                  "run (PSI some)" % (
                      os.cpu_count() or 1, cpus,
                      ", ".join("%s %.0f s (%.0f %%)" % (k, split[k], 100 * split[k] / cpus)
                                for k in ("sandboxes", "server", "clients")),
                      cpus - split["sandboxes"] - split["server"] - split["clients"],
                      split["cpu pressure"]))
        print("outcomes (action: outcome count):")
        for (action, what), n in sorted(stats.outcomes.items()):
            print("  %-14s %-20s %6d%s" % (action, what, n, "   <-- !!" if what == "UNEXPECTED" else ""))
        # in ms with a decimal: the target (issue 9) is a p50 under 5 ms,
        # which a figure in whole milliseconds cannot tell
        base = self.baseline
        if base.executions:
            be = self.baseline_elapsed
            print("baseline (1 client, %.0f s, this run): %d executions (%.1f/s); the %d clients "
                  "ran %.1f times as many a second" % (be, base.executions, base.executions / be,
                                                      self.args.clients,
                                                      stats.executions / max(elapsed, 1) /
                                                      max(base.executions / be, 1e-9)))
        print("latency (ms):       n      p50      p95      max   baseline p50   p50 ratio")
        for kind in ("create", "fork", "restart", "execute"):
            xs, bx = stats.lat[kind], base.lat[kind]
            print("  %-10s %8d %8.1f %8.1f %8.1f %14.1f %11.1f" % (
                kind, len(xs), 1e3 * pct(xs, 0.5), 1e3 * pct(xs, 0.95),
                1e3 * max(xs) if xs else float("nan"), 1e3 * pct(bx, 0.5),
                pct(xs, 0.5) / pct(bx, 0.5) if bx and pct(bx, 0.5) else float("nan")))
        for (action, what), n in sorted(base.outcomes.items()):
            if what == "UNEXPECTED":
                print("  !! baseline %s: UNEXPECTED %d" % (action, n))
        ops = self.op_buckets
        if ops:
            print("as the server timed them, ms (GET /metrics: interpolated within buckets, "
                  "as Prometheus's histogram_quantile does):")
            for kind in ("create", "fork", "restart"):
                b = ops.get(kind, [])
                print("  %-10s %8d %8.1f %8.1f" % (kind, b[-1][1] if b else 0,
                                                   1e3 * bucket_pct(b, 0.5),
                                                   1e3 * bucket_pct(b, 0.95)))
        if stats.unexpected:
            print("UNEXPECTED outcomes:")
            for kind, n in sorted(stats.unexpected.items(), key=lambda kv: -kv[1]):
                print("  !! %-50s %5d" % (kind, n))
                for d in stats.samples[kind]:
                    print("       e.g. %s" % d)
        else:
            print("no unexpected outcomes")
        for f in self.failures:
            print("FAILED: %s" % f)
        log = self.log().splitlines()
        # libmicrohttpd's notes on clients that hang up are the attacks'
        noise = ("Connection was closed by remote side", "Closing connection (application error")
        quiet = [line for line in log if not any(n in line for n in noise)]
        print("server stderr: %d lines, %d about clients that went away; the others (last 30):"
              % (len(log), len(log) - len(quiet)))
        for line in quiet[-30:]:
            print("  | " + line[:300])
        sys.stdout.flush()

    def cleanup(self):
        self.clients_back()
        if self.p and self.p.poll() is None:
            self.p.kill()
            self.p.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("codecell")
    ap.add_argument("--seconds", type=int, default=int(os.environ.get("SOAK_SECONDS", "600")))
    ap.add_argument("--clients", type=int, default=int(os.environ.get("SOAK_CLIENTS", "64")))
    ap.add_argument("--pool", type=int, default=8)
    ap.add_argument("--baseline-seconds", type=int,
                    default=int(os.environ.get("SOAK_BASELINE_SECONDS", "30")),
                    help="first, the same mix from one client for this long (0: none)")
    ap.add_argument("--no-clients-apart", dest="clients_apart", action="store_false",
                    help="leave the clients' threads beside the server (see Soak.clients_apart)")
    ap.add_argument("--preload", default="numpy,pandas,matplotlib.pyplot")
    args = ap.parse_args()
    # a sandbox orphaned by a dying server comes here, not to init
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    soak = Soak(args)
    try:
        rc = soak.run()
    finally:
        soak.cleanup()
    sys.exit(rc)


if __name__ == "__main__":
    main()
