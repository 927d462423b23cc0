"""Faults from outside against `codecell serve`: a kernel, the warm pool's
template and the template's init killed with SIGKILL; the server itself
killed with SIGKILL, or stopped with SIGTERM, in the middle of a burst of
executions and uploads; forged kernel events and an output flood; a full
workspace.  For each: the caller gets a clear answer, nothing is left
behind (processes, cgroups, temporary files), and the server keeps
serving.

Everything here is found from the server this file started: its
descendants through /proc (never by name), its sandbox cgroups by the
names it gives them (sb-<server pid>-<n>) under its own cgroup.  This
process makes itself a child subreaper, so a sandbox process orphaned by
a killed server is reparented here, where it is seen and reaped."""
import ctypes
import http.client
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import (HANG_S, MountNs, Serve, cgroup_parents, check, children, descendants,  # noqa: E402
                    eq, holder_of, main, sandbox_cgroups, template_of, test)

PR_SET_CHILD_SUBREAPER = 36
def become_subreaper():
    libc = ctypes.CDLL(None, use_errno=True)
    check(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0,
          "prctl(PR_SET_CHILD_SUBREAPER): %s" % os.strerror(ctypes.get_errno()))


# ---- /proc ---------------------------------------------------------------

def stat_of(pid):
    """(state, ppid, starttime) of pid, or None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            rest = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return rest[0], int(rest[1]), int(rest[19])


def alive(ident):
    """ident is (pid, starttime): the same process, not a zombie."""
    st = stat_of(ident[0])
    return st is not None and st[2] == ident[1] and st[0] != "Z"


def ident(pid):
    st = stat_of(pid)
    return (pid, st[2]) if st else None


def gone(ident):
    """ident (pid, starttime) is reaped: no such pid, or another process
    has it now."""
    st = stat_of(ident[0])
    return st is None or st[2] != ident[1]


def reap_orphans(keep=()):
    """Reap zombies reparented to this subreaper (not the Popen'd ones);
    return the ones still running."""
    running = []
    for kid in children(os.getpid()):
        if kid in keep:
            continue
        st = stat_of(kid)
        if st and st[0] == "Z":
            try:
                os.waitpid(kid, os.WNOHANG)
            except ChildProcessError:
                pass
        elif st:
            running.append(kid)
    return running


def procs_in_cgroups(server_pid):
    """Every process on the host in one of server_pid's sandbox cgroups
    (matched by its cgroup path, so only that server's)."""
    mark = "/codecell/sb-%d-" % server_pid
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/cgroup" % name) as f:
                if mark in f.read():
                    st = stat_of(int(name))
                    if st and st[0] != "Z":
                        found.append(int(name))
        except OSError:
            pass
    return found


def eventually(cond, what, limit=60):
    """Poll cond until it holds; a liveness bound, not a measurement."""
    t0 = time.monotonic()
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() - t0 > limit:
            raise AssertionError("%s: still not so after %d s" % (what, limit))
        time.sleep(0.2)


# ---- the server -------------------------------------------------------------

class Server(Serve):
    """A `codecell serve` on a free loopback port with its own TMPDIR."""

    def __init__(self, *args, tmpdir=None, mountns=None):
        self.tmp = tmpdir or tempfile.mkdtemp(prefix="cctest-faults-")
        Serve.__init__(self, *args, env=dict(os.environ, TMPDIR=self.tmp),
                       preexec_fn=mountns.enter if mountns else None)
        self.cg_parents = cgroup_parents(self.pid)

    def session(self, **body):
        st, j = self.request("POST", "/v1/sessions", body)
        check(st == 201, "create: %r %r" % (st, j))
        return j

    def execute(self, sid, code, **kw):
        st, j = self.request("POST", "/v1/sessions/%s/execute" % sid, dict(code=code, **kw))
        check(st == 200, "execute: %r %r" % (st, j))
        return j

    def healthz(self):
        st, j = self.request("GET", "/healthz", timeout=30)
        eq(st, 200, "healthz")
        return j

    def serves(self):
        """The server still does the whole round: create, run, delete."""
        j = self.session()
        r = self.execute(j["id"], "6 * 7")
        eq((r["status"], r["results"][0]["text/plain"]), ("ok", "42"), "a fresh session runs")
        st, _ = self.request("DELETE", "/v1/sessions/" + j["id"])
        eq(st, 200, "delete")

    def cleanup(self):
        if self.p.poll() is None:
            self.stop(signal.SIGKILL)
        shutil.rmtree(self.tmp, ignore_errors=True)


def marked_kernel(s, sid):
    """The host pid of the session's kernel: it holds a file open whose
    name is unique, which is found under /proc/PID/fd."""
    mark = "ccmark-" + uuid.uuid4().hex
    s.execute(sid, "_ccmark = open('/tmp/%s', 'w')" % mark)
    pid = holder_of(s.pid, mark)
    check(pid, "the kernel of %s is not among the server's descendants" % sid)
    return pid


def in_background(fn, *args):
    out = {}

    def run():
        try:
            out["r"] = fn(*args)
        except Exception as e:  # noqa: BLE001 (the outcome is checked)
            out["r"] = e
    th = threading.Thread(target=run, daemon=True)
    th.start()
    return th, out


def assert_nothing_left(server_pid, procs, ns, mounts_before, tmp):
    """After a server is gone: none of its processes run (those recorded
    and any reparented here), none runs in its cgroups, no mount was
    added in its mount namespace (the test's: MountNs), its TMPDIR is
    empty."""
    eventually(lambda: not [p for p in procs if alive(p)] or None,
               "the old server's processes still run: %r" % [p for p in procs if alive(p)], HANG_S)
    eventually(lambda: not reap_orphans(keep=(ns.holder.pid,)) or None, "orphans reparented here still run", HANG_S)
    eq(procs_in_cgroups(server_pid), [], "processes in the old server's sandbox cgroups")
    eq(sorted(ns.mounts() - mounts_before), [], "mounts added in the server's namespace")
    eq(os.listdir(tmp), [], "files left in the server's TMPDIR")


# ---- a kernel ----------------------------------------------------------------

@test
def kernel_killed_mid_execution_reports_and_the_session_goes_on():
    s = Server()
    try:
        sid = s.session()["id"]
        s.execute(sid, "x = 1\nopen('kept.txt', 'w').write('kept')")
        k = marked_kernel(s, sid)
        # killed mid-execution: once the cell runs (it opens a file of its
        # own), not after a pause that a loaded machine may not start it in
        running = "ccrun-" + uuid.uuid4().hex
        th, out = in_background(lambda: s.execute(
            sid, "import time\n_ccrun = open('/tmp/%s', 'w')\ntime.sleep(600)" % running,
            timeout=3600))
        eventually(lambda: holder_of(s.pid, running) == k or None, "the cell runs", HANG_S)
        os.kill(k, signal.SIGKILL)
        th.join(2 * HANG_S)
        r = out.get("r")
        check(isinstance(r, dict), "the caller got no answer: %r" % (r,))
        eq((r["status"], r["restarted"], r["error"]["name"]), ("killed", True, "KernelDied"), r)
        check("restarted" in r["error"]["value"], r["error"])
        r = s.execute(sid, "open('kept.txt').read(), 'x' in dir()")
        eq(r["results"][0]["text/plain"], "('kept', False)", "a fresh kernel, the same files")

        # killed while idle: the next execution says so, the one after runs
        k = marked_kernel(s, sid)
        os.kill(k, signal.SIGKILL)
        eventually(lambda: not alive(ident(k) or (k, -1)) or None, "the kernel dies", HANG_S)
        r = s.execute(sid, "1 + 1")
        eq((r["status"], r["restarted"]), ("killed", True), r)
        eq(s.execute(sid, "1 + 1")["results"][0]["text/plain"], "2")

        # killed under a stream: the stream still ends with its end event
        k = marked_kernel(s, sid)
        c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=60)
        c.request("POST", "/v1/sessions/%s/execute" % sid,
                  body=json.dumps({"code": "import time\nprint('go', flush=True)\ntime.sleep(60)"}),
                  headers={"Content-Type": "application/json", "Accept": "application/x-ndjson"})
        resp = c.getresponse()
        eq(resp.status, 200)
        first = json.loads(resp.readline())
        eq(first["type"], "stdout", first)
        os.kill(k, signal.SIGKILL)
        evs = [json.loads(line) for line in iter(resp.readline, b"")]
        c.close()
        check(evs and evs[-1]["type"] == "end", "no end event: %r" % evs[-3:])
        eq((evs[-1]["status"], evs[-1]["result"]["restarted"]), ("killed", True), evs[-1])
        s.serves()
        eq(s.execute(sid, "2 + 2")["results"][0]["text/plain"], "4")
    finally:
        eq(s.stop(), 0, "clean exit")
        s.cleanup()


# ---- the warm pool -------------------------------------------------------------

POOL_REFILL_S = HANG_S  # a liveness bound: a pool refills in about a second


def pool_refilled(s, size):
    """The pool holds at least its size again (a pool that grows with
    demand may hold more)."""
    return s.healthz()["pool_ready"] >= size or None


@test
def pool_template_killed_the_server_serves_and_the_pool_heals():
    s = Server("--pool", "2")
    try:
        eventually(lambda: pool_refilled(s, 2), "the pool fills")
        init, tmpl = template_of(s.pid)
        check(tmpl, "no template among %r" % descendants(s.pid))
        init_id = ident(init)
        os.kill(tmpl, signal.SIGKILL)
        # more sessions than the pool held: every one is served, pooled
        # or cold
        ids = [s.session()["id"] for _ in range(4)]
        for sid in ids:
            eq(s.execute(sid, "6 * 7")["results"][0]["text/plain"], "42")
        for sid in ids:
            s.request("DELETE", "/v1/sessions/" + sid)
        s.serves()
        # the old init outlived its template while cells it made lived;
        # with none left it exits, and the server reaps it
        eventually(lambda: gone(init_id) or None,
                   "the dead template's init %d is left as %r" % (init, stat_of(init)), HANG_S)
        # the pool comes back: a new template, full again, pooled sessions
        eventually(lambda: pool_refilled(s, 2), "the pool refills after its template died "
                   "(healthz: %r)" % s.healthz(), POOL_REFILL_S)
        j = s.session()
        eq(j["pooled"], True, "a pooled session again")
        eq(s.execute(j["id"], "1")["status"], "ok")
    finally:
        eq(s.stop(), 0, "clean exit")
        s.cleanup()


class Soft:
    """Checks that do not stop at the first failure, so that one run
    lists every fault a scenario shows; fails at the end if any did."""

    def __init__(self):
        self.failures = []

    def check(self, fn, *args, **kw):
        try:
            return fn(*args, **kw)
        except AssertionError as e:
            self.failures.append(str(e))
            return None

    def done(self):
        check(not self.failures, "; ".join(self.failures))


@test
def pool_template_init_killed_nothing_is_left_and_the_pool_heals():
    s = Server("--pool", "2")
    soft = Soft()
    try:
        eventually(lambda: pool_refilled(s, 2), "the pool fills")
        # a session running on a pooled kernel: its kernel dies with the
        # template's init (the cells live in its PID namespace)
        sid = s.session()["id"]
        s.execute(sid, "x = 1")
        # a second session that nothing touches until the end: its dead
        # kernel still refers to the template, and must not keep the
        # template's init (a zombie) and cgroups until it is used again
        idle = s.session()
        eq(idle["pooled"], True, "the idle session's kernel comes from the pool")
        idle = idle["id"]
        eq(s.execute(idle, "y = 2")["status"], "ok")
        init, tmpl = template_of(s.pid)
        check(init and init != s.pid, "no template init: %r" % ((init, tmpl),))
        init_cgroups = [d for d in sandbox_cgroups(s.cg_parents, s.pid)
                        if str(init) in open(os.path.join(d, "tasks")).read().split()]
        check(init_cgroups, "the template init's cgroups")
        pool = s.healthz()["pool"]
        init_id = ident(init)
        os.kill(init, signal.SIGKILL)
        eventually(lambda: (stat_of(init) or ("Z",))[0] == "Z" or None, "the init dies", HANG_S)
        # the ready kernels died with it: the pool drops them before any
        # take (one no take reached held the init and its cgroups, and
        # counted as ready)
        soft.check(eventually,
                   lambda: s.healthz()["pool"]["discarded"] >= pool["discarded"] + pool["ready"]
                   or None, "the dead ready kernels are dropped (healthz before the kill: %r, "
                   "after: %r)" % (pool, s.healthz()["pool"]), HANG_S)
        r = s.execute(sid, "1 + 1")
        eq((r["status"], r["restarted"], (r["error"] or {}).get("name")),
           ("killed", True, "KernelDied"), r)
        # the restart must not hand the session a pooled kernel that died
        # with the template's init
        r = s.execute(sid, "1 + 1")
        soft.check(eq, (r["status"], r["results"][0]["text/plain"] if r["results"] else None),
                   ("ok", "2"), "the first execution after the restart")
        soft.check(s.serves)
        # the dead init is reaped (not a zombie child of the server) and
        # its cgroups removed
        soft.check(eventually, lambda: gone(init_id) or None,
                   "the template's init %d is left as %r" % (init, stat_of(init)), HANG_S)
        soft.check(eventually, lambda: not [d for d in init_cgroups if os.path.exists(d)] or None,
                   "the template's cgroups are left", HANG_S)
        soft.check(eventually, lambda: pool_refilled(s, 2),
                   "the pool refills after its template's init died (healthz: %r)" % s.healthz(),
                   POOL_REFILL_S)
        j = s.session()
        soft.check(eq, j["pooled"], True, "a pooled session again")
        # the idle session learns of its kernel's death when it is used
        r = s.execute(idle, "1 + 1")
        soft.check(eq, (r["status"], r["restarted"]), ("killed", True), "the idle session: %r" % r)
        r = s.execute(idle, "1 + 1")
        soft.check(eq, (r["status"], r["results"][0]["text/plain"] if r["results"] else None),
                   ("ok", "2"), "the idle session after its restart")
        soft.done()
    finally:
        eq(s.stop(), 0, "clean exit")
        s.cleanup()


# ---- the server killed or stopped under load -----------------------------------

class Burst:
    """Clients that run session cells and one-shot runs and upload until
    told to stop; what they get is counted by kind, not judged (the
    server goes away)."""

    def __init__(self, s, sids, n_threads=6):
        self.s = s
        self.sids = sids
        self.stop = threading.Event()
        self.kinds = {}
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.client, args=(i,), daemon=True)
                        for i in range(n_threads)]
        for t in self.threads:
            t.start()

    def note(self, kind):
        with self.lock:
            self.kinds[kind] = self.kinds.get(kind, 0) + 1

    def served(self):
        """True once each kind of request has been answered in full (the
        clients go on): the burst is running, not still starting, when
        the server is stopped, however slow the machine."""
        with self.lock:
            return all(self.kinds.get(k) for k in ("upload 201", "execute 200 ok", "one-shot 200 ok"))

    def client(self, i):
        sid = self.sids[i % len(self.sids)]
        n = 0
        while not self.stop.is_set():
            n += 1
            try:
                if n % 3 == 0:
                    st, j = self.s.request("PUT", "/v1/sessions/%s/files/up%d.bin" % (sid, i),
                                           body=os.urandom(1 << 20), timeout=60)
                    self.note("upload %d" % st)
                elif n % 3 == 1:
                    st, j = self.s.request("POST", "/v1/sessions/%s/execute" % sid,
                                           {"code": "import time\ntime.sleep(0.3)\nprint('x' * 1000)"},
                                           timeout=60)
                    self.note("execute %d %s" % (st, j.get("status") if isinstance(j, dict) else ""))
                else:
                    st, j = self.s.request("POST", "/v1/execute",
                                           {"code": "echo hi; sleep 0.2", "language": "bash"},
                                           timeout=60)
                    self.note("one-shot %d %s" % (st, j.get("status") if isinstance(j, dict) else ""))
            except (OSError, http.client.HTTPException) as e:
                self.note("connection: %s" % type(e).__name__)
                time.sleep(0.05)

    def join(self):
        self.stop.set()
        for t in self.threads:
            t.join(90)
        check(not any(t.is_alive() for t in self.threads), "a client hung")


@test
def server_killed_during_a_burst_leaves_nothing_after_a_restart():
    become_subreaper()
    ns = MountNs()
    mounts = ns.mounts()
    s = Server("--pool", "2", mountns=ns)
    s2 = None
    try:
        eventually(lambda: pool_refilled(s, 2), "the pool fills")
        sids = [s.session()["id"] for _ in range(3)]
        sids.append(s.session(limits={"memory": "256M"})["id"])  # a cold one too
        s.execute(sids[0], "import subprocess\nsubprocess.Popen(['sleep', '1000'])")
        burst = Burst(s, sids)
        eventually(burst.served, "each kind of request of the burst answered", HANG_S)
        procs = [ident(p) for p in descendants(s.pid)]
        procs = [p for p in procs if p]
        cgroups = sandbox_cgroups(s.cg_parents, s.pid)
        check(len(procs) >= 8 and cgroups, "sandboxes are running: %r %r" % (procs, cgroups))
        os.kill(s.pid, signal.SIGKILL)
        eq(s.p.wait(30), -signal.SIGKILL)
        burst.join()
        check(any(k.startswith("connection") for k in burst.kinds), burst.kinds)
        assert_nothing_left(s.pid, procs, ns, mounts, s.tmp)
        # a new server, in the same cgroups, removes what the killed one
        # could not: its sandbox cgroups
        s2 = Server("--pool", "1", tmpdir=s.tmp)
        eventually(lambda: pool_refilled(s2, 1), "the new server's pool fills")
        s2.serves()
        eq([d for d in cgroups if os.path.exists(d)], [], "the killed server's cgroups")
        eq(sandbox_cgroups(s.cg_parents, s.pid), [], "any cgroup of the killed server")
    finally:
        s.cleanup()
        if s2:
            eq(s2.stop(), 0, "the new server's clean exit")
            s2.cleanup()
        reap_orphans()
        ns.close()


@test
def sigterm_during_a_burst_exits_cleanly_and_leaves_nothing():
    become_subreaper()
    ns = MountNs()
    mounts = ns.mounts()
    s = Server("--pool", "2", mountns=ns)
    try:
        eventually(lambda: pool_refilled(s, 2), "the pool fills")
        sids = [s.session()["id"] for _ in range(3)]
        sids.append(s.session(language="bash")["id"])
        s.execute(sids[3], "sleep 1000 &")
        burst = Burst(s, sids)
        eventually(burst.served, "each kind of request of the burst answered", HANG_S)
        procs = [p for p in (ident(p) for p in descendants(s.pid)) if p]
        cgroups = sandbox_cgroups(s.cg_parents, s.pid)
        check(len(procs) >= 8 and cgroups, "sandboxes are running: %r %r" % (procs, cgroups))
        eq(s.stop(signal.SIGTERM, timeout=60), 0, "exit status after SIGTERM: %s" % s.log()[-2000:])
        burst.join()
        # what the clients saw: answers, 503s or closed connections; no
        # 500s
        check(not [k for k in burst.kinds if " 500" in k], burst.kinds)
        assert_nothing_left(s.pid, procs, ns, mounts, s.tmp)
        eq(sandbox_cgroups(s.cg_parents, s.pid), [], "cgroups left after a clean exit")
    finally:
        s.cleanup()
        ns.close()
        reap_orphans()


# ---- forged kernel events ----------------------------------------------------------

FORGE_MB = 160
FORGE = """import json, os, sys
f = sys._getframe()  # the kernel's state, from the frames running this cell
while '_S' not in f.f_globals:
    f = f.f_back
state = f.f_globals['_S']
line = (json.dumps({'type': 'display', 'id': state.cur_id,
                    'data': {'text/plain': 'A' * (1 << 20)}}) + '\\n').encode()
for i in range(%d):
    os.write(4, line)
'real'
""" % FORGE_MB


@test
def forged_display_events_cannot_flood_the_server():
    """User code can write to the kernel's event pipe (fd 4), and find the
    id of the request it runs in: every event line is capped (32 MiB) but
    not their number, so one cell could make the server hold its results
    in memory without bound.  What comes back must be capped like output
    (the server's ceiling for output is 64 MiB)."""
    s = Server()
    try:
        sid = s.session(timeout=120)["id"]
        st, j = s.request("POST", "/v1/sessions/%s/execute" % sid, {"code": FORGE}, timeout=300)
        eq(st, 200, "the answer to the flood")
        total = sum(len(json.dumps(b)) for b in j["results"])
        check(total <= 64 << 20, "%d results, %d MiB of them, from a cell that forged %d MiB of "
              "display events: no cap" % (len(j["results"]), total >> 20, FORGE_MB))
        s.serves()
    finally:
        eq(s.stop(), 0, "clean exit")
        s.cleanup()


# A cell that crosses the output flood line (16 x the 1 MiB output limit)
# with its last write, and whose "done" comes at once: forged on fd 4
# here, so that both are read in one batch every time (under load the
# kernel's own "done" does the same now and then: seen in the soak).
FLOOD_DONE = """import json, os, sys, time
# the kernel's state, from the frames that run this cell (gc.get_objects()
# does not list it in a pooled kernel: the template froze it)
f = sys._getframe()
while '_S' not in f.f_globals:
    f = f.f_back
state = f.f_globals['_S']
done = (json.dumps({'type': 'done', 'id': state.cur_id, 'execution_count': 1,
                    'status': 'ok'}) + '\\n').encode()
block = b'y' * 65536
for i in range(16 * 16 - 1):
    os.write(1, block)
time.sleep(0.3)
%s
time.sleep(1)
"""
CROSS_THEN_DONE = FLOOD_DONE % "os.write(1, block + b'z')\nos.write(4, done)"
DONE_THEN_CROSS = FLOOD_DONE % "os.write(4, done)\nos.write(1, block + b'z')"


@test
def output_flood_is_reported_by_the_cell_that_wrote_it():
    """The kill past the flood line must be reported by the cell that
    wrote the output, never by the next one.  It was not: the cell ended
    'ok' (its 'done' was read in the same batch as the kill) and the next,
    innocent cell was reported output_limit with its kernel restarted;
    and crossing bytes read in the drain after 'done' were ignored."""
    s = Server()
    soft = Soft()
    try:
        sid = s.session(timeout=60)["id"]
        for name, code in (("crossing, then done", CROSS_THEN_DONE),
                           ("done, then crossing", DONE_THEN_CROSS)):
            flood = s.execute(sid, code)
            nxt = s.execute(sid, "1 + 1")
            soft.check(eq, (nxt["status"], nxt["restarted"]), ("ok", False),
                       "%s: the next cell after a flood that ended %r" % (name, flood["status"]))
            # a cell that forges its own "done" ends its own result early
            # (what it writes after that is not its result's); only the
            # innocent next cell matters there
            if code is CROSS_THEN_DONE:
                soft.check(eq, (flood["status"], "output" in flood["limits_hit"]),
                           ("output_limit", True), "%s: the flooding cell" % name)
            s.execute(sid, "1")  # whatever happened, the session goes on
        s.serves()
        soft.done()
    finally:
        eq(s.stop(), 0, "clean exit")
        s.cleanup()


# ---- a full workspace ------------------------------------------------------------

@test
def full_workspace_gives_a_clear_error_and_the_session_goes_on():
    s = Server()
    try:
        sid = s.session(limits={"workspace_size": "8M"})["id"]
        base = "/v1/sessions/%s/files/" % sid
        # the code fills it: an OSError in the cell, not a dead kernel
        r = s.execute(sid, "with open('fill.bin', 'wb') as f:\n    f.write(b'x' * (16 << 20))")
        eq((r["status"], r["restarted"], r["error"]["name"]), ("error", False, "OSError"), r)
        check("No space left on device" in r["error"]["value"], r["error"])
        # TODO(limits_hit): once the workspace fix lands, limits_hit may
        # name "disk" here; not asserted yet
        # an upload into the full workspace: 507 that says what to do
        st, j = s.request("PUT", base + "more.bin", body=b"y" * (1 << 20))
        eq((st, j["error"]["code"]), (507, "workspace_full"), j)
        check("workspace_size" in j["error"]["message"], j)
        # no half-written upload is left behind
        st, j = s.request("GET", base)
        names = sorted(e["name"] for e in j["entries"])
        eq(names, ["fill.bin"], "the workspace after a refused upload")
        # freeing space makes room again
        eq(s.request("DELETE", base + "fill.bin")[0], 200)
        st, j = s.request("PUT", base + "more.bin", body=b"y" * (1 << 20))
        eq((st, j["size"]), (201, 1 << 20), j)
        eq(s.execute(sid, "import os; os.path.getsize('more.bin')")["results"][0]["text/plain"],
           str(1 << 20))
        # an upload larger than the whole workspace
        st, j = s.request("PUT", base + "huge.bin", body=b"z" * (12 << 20))
        eq((st, j["error"]["code"]), (507, "workspace_full"), j)
        s.serves()
    finally:
        eq(s.stop(), 0, "clean exit")
        s.cleanup()


if __name__ == "__main__":
    main()
