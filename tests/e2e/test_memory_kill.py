"""A cell that runs out of memory is reported as memory_limit, never as a
timeout, in every mode (one-shot, cold, pooled and forked sessions), with
both CPUs kept busy by processes this test starts.

The kernel's OOM killer comes only after rounds of reclaim, each of which
yields the CPU; on a loaded host that took long enough for a cell's
deadline to pass first, and the cell was then reported as a timeout that
"did not stop at the interrupt".  codecell now watches the cgroup's
memory pressure and stops a tree whose unreclaimable memory fills its
limit itself.  `oom_killer_off` checks exactly that, without depending on
the kernel's timing: with the kernel's OOM killer turned off for the
session's cgroup (v1's memory.oom_control), only codecell can stop the
cell before its deadline.  How long the kill takes is a figure of
bench/bench_memkill.py, not a check here."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import (Serve, check, cgroup_parents, codecell, cpus_busy, eq, main,  # noqa: E402
                    sandbox_cgroups, test)

LIMIT = "128M"
# written page by page: the pages are really used
GROW = "b = bytearray(400 << 20)\nfor i in range(0, len(b), 4096):\n    b[i] = 1\nlen(b)"


def out_of_memory(r, what):
    eq(r["status"], "memory_limit", "%s: %s" % (what, json.dumps(r)[:600]))
    check("memory" in r["limits_hit"], "%s: limits_hit %r" % (what, r["limits_hit"]))
    check(r.get("restarted"), "%s: the session is not said restarted" % what)
    eq(r["error"]["name"], "KernelDied", what)
    check("ran out of memory" in r["error"]["value"], "%s: %r" % (what, r["error"]["value"]))


def session_cells(pool, fork=False):
    """(what, result) of GROW in a session of the given kind, then the
    session's next cell, which must run in a fresh kernel."""
    s = Serve("--pool", str(pool), "--preload", "numpy")
    try:
        sid = s.session(limits={"memory": LIMIT}, timeout=60)
        s.execute(sid, "x = 1")
        if fork:
            st, j = s.request("POST", "/v1/sessions/%s/fork" % sid)
            eq(st, 201, "fork: %r" % j)
            sid = j["id"]
        st, r = s.post("/v1/sessions/%s/execute" % sid, {"code": GROW})
        eq(st, 200, "execute: %r" % r)
        st, nxt = s.post("/v1/sessions/%s/execute" % sid, {"code": "2 + 2"})
        eq((st, nxt["status"]), (200, "ok"), "the next cell: %r" % nxt)
        return r
    finally:
        s.stop()


@test
def oneshot_out_of_memory_is_memory_limit_with_cpus_busy():
    with cpus_busy():
        p = codecell("run", "--json", "--memory", LIMIT, "--timeout", "60s", "-",
                     stdin=GROW, timeout=120)
    eq(p.json["status"], "memory_limit", p.stdout[:600])
    eq(p.status, 137, "the exit status of a memory kill")


@test
def cold_session_out_of_memory_is_memory_limit_with_cpus_busy():
    with cpus_busy():
        out_of_memory(session_cells(0), "cold")


@test
def pooled_session_out_of_memory_is_memory_limit_with_cpus_busy():
    with cpus_busy():
        out_of_memory(session_cells(2), "pooled")


@test
def forked_session_out_of_memory_is_memory_limit_with_cpus_busy():
    with cpus_busy():
        out_of_memory(session_cells(2, fork=True), "forked")


@test
def oom_killer_off_codecell_stops_the_cell_itself():
    """With the kernel's OOM killer off for the session's cgroup, a cell
    past its limit waits in the kernel for memory that never comes: an
    interrupt cannot stop it, and before codecell watched the pressure it
    ended at its deadline as "timeout" (the kernel did not stop at the
    interrupt and was killed)."""
    s = Serve("--pool", "0")
    try:
        parents = [p for p in cgroup_parents(s.pid) if "/memory/" in p]
        check(parents, "no v1 memory hierarchy: this test needs memory.oom_control (cgroup v1)")
        before = set(sandbox_cgroups(parents, s.pid))
        sid = s.session(limits={"memory": LIMIT}, timeout=20)
        s.execute(sid, "x = 1")
        mine = sorted(set(sandbox_cgroups(parents, s.pid)) - before)
        eq(len(mine), 1, "the session's memory cgroup: %r" % mine)
        with open(os.path.join(mine[0], "memory.oom_control"), "w") as f:
            f.write("1")
        st, r = s.post("/v1/sessions/%s/execute" % sid, {"code": GROW}, timeout=120)
        eq(st, 200, "execute: %r" % r)
        out_of_memory(r, "OOM killer off")
        st, nxt = s.post("/v1/sessions/%s/execute" % sid, {"code": "x"})
        eq(nxt["status"], "error", "the variables went with the kernel: %r" % nxt)
    finally:
        s.stop()


@test
def memory_held_near_the_limit_while_sleeping_is_a_timeout_not_memory():
    """No pressure, no memory kill: a cell that holds memory close to its
    limit and then outlives its deadline is interrupted as a timeout, and
    the session keeps its variables."""
    s = Serve("--pool", "0")
    try:
        sid = s.session(limits={"memory": LIMIT})
        s.execute(sid, "x = 7")
        code = ("b = bytearray(100 << 20)\nfor i in range(0, len(b), 4096):\n    b[i] = 1\n"
                "import time\ntime.sleep(30)")
        st, r = s.post("/v1/sessions/%s/execute" % sid, {"code": code, "timeout": 3})
        eq((st, r["status"]), (200, "timeout"), json.dumps(r)[:600])
        check(not r.get("restarted"), "the kernel was restarted: %r" % r)
        eq(s.execute(sid, "x"), "7", "the variables survive the timeout")
    finally:
        s.stop()


if __name__ == "__main__":
    main()
