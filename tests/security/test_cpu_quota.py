"""The CPU quota (--cpus, limits.cpus): busy processes, and busy loops a
cell leaves behind, are held to the quota of the whole tree, read from the
host (the result's usage and the sandbox's own cgroup).

These are limit checks, not timings: a quota of 0.5 cores lets a tree use
at most 0.5 s of CPU per second of wall time (plus one period's burst);
the assertions allow 1.5 times that and more, far below what four busy
processes take without a quota on any machine with two or more cores.
A loaded machine only lowers what the tree gets, so these upper bounds
hold at any load.  Whether the quota held a tree back is not assumed from
the work it was given (on a machine at a load average of 60 even 0.05
cores may never be reached): the tests read the sandbox cgroup's own
nr_throttled and let the busy loops run until it counts a throttled
period."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import http.client

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import (Serve, CODECELL, HANG_S, check, children, codecell, eq, main, run_code,
                    test)  # noqa: E402

BUSY4 = r"""
import os, time
for i in range(4):
    if os.fork() == 0:
        t = time.monotonic()
        while time.monotonic() - t < 2:
            pass
        os._exit(0)
for i in range(4):
    os.wait()
"""


def descendants(pid):
    """Every process under pid (our own tree only), breadth first."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop(0)
        for c in children(p):
            out.append(c)
            todo.append(c)
    return out


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def usage_file(pid):
    """The CPU usage file of pid's cgroup (v1 cpuacct or v2 cpu.stat)."""
    with open("/proc/%d/cgroup" % pid) as f:
        lines = f.read().splitlines()
    for l in lines:
        _, ctrls, path = l.split(":", 2)
        if "cpuacct" in ctrls.split(","):
            return "/sys/fs/cgroup/cpuacct" + path + "/cpuacct.usage"
    for l in lines:
        if l.startswith("0::"):
            return "/sys/fs/cgroup" + l[3:] + "/cpu.stat"
    raise AssertionError("no cpu accounting cgroup for %d: %r" % (pid, lines))


def read_usage_s(path):
    with open(path) as f:
        text = f.read()
    if path.endswith("cpuacct.usage"):
        return int(text) / 1e9
    for l in text.splitlines():
        if l.startswith("usage_usec "):
            return int(l.split()[1]) / 1e6
    raise AssertionError("no usage_usec in %s" % path)


def cpu_stat_file(pid):
    """The cpu.stat of pid's cgroup (the v1 cpu controller's, or v2's)."""
    with open("/proc/%d/cgroup" % pid) as f:
        lines = f.read().splitlines()
    for l in lines:
        _, ctrls, path = l.split(":", 2)
        if "cpu" in ctrls.split(","):
            return "/sys/fs/cgroup/cpu" + path + "/cpu.stat"
    for l in lines:
        if l.startswith("0::"):
            return "/sys/fs/cgroup" + l[3:] + "/cpu.stat"
    raise AssertionError("no cpu cgroup for %d: %r" % (pid, lines))


def throttled(path):
    """nr_throttled of a cpu.stat: the periods the quota held the tree back."""
    with open(path) as f:
        for l in f:
            if l.startswith("nr_throttled "):
                return int(l.split()[1])
    raise AssertionError("no nr_throttled in %s" % path)


def busy_under(root, marker):
    """The busy processes under root whose command line holds marker."""
    busy = []
    deadline = time.monotonic() + HANG_S
    while not busy and time.monotonic() < deadline:
        busy = [p for p in descendants(root) if marker in cmdline(p)]
        time.sleep(0.05)
    check(busy, "no busy process with %r under %d" % (marker, root))
    return busy


def await_throttled(path, above=0):
    """Wait until the cgroup's nr_throttled exceeds above: busy loops
    under a quota of 0.05 cores reach it however little CPU a loaded host
    leaves them (any period in which they get their 5 ms counts).  Up to
    HANG_S; a quota that never throttles fails."""
    deadline = time.monotonic() + HANG_S
    n = throttled(path)
    while n <= above and time.monotonic() < deadline:
        time.sleep(0.05)
        n = throttled(path)
    check(n > above, "never throttled in %d s (%s)" % (HANG_S, path))
    return n


def tree_cpu_rate(root, marker, seconds=2.0):
    """CPU cores used by the sandbox cgroup holding the process under root
    whose command line contains marker, over `seconds` of wall time."""
    busy = []
    for _ in range(100):
        busy = [p for p in descendants(root) if marker in cmdline(p)]
        if busy:
            break
        time.sleep(0.05)
    check(busy, "no busy process with %r under %d" % (marker, root))
    path = usage_file(busy[0])
    check("sb-" in path, "the busy loop is not in a sandbox cgroup: %s" % path)
    u0, t0 = read_usage_s(path), time.monotonic()
    time.sleep(seconds)
    u1, t1 = read_usage_s(path), time.monotonic()
    return (u1 - u0) / (t1 - t0), path


def leave_busy_loops(marker, n=4):
    """Python for a cell: n busy loops, double-forked (reparented to the
    init), still running when the cell returns."""
    return ("import subprocess\n"
            "subprocess.run(['/bin/sh', '-c', %r])\n"
            "print('left')" % ("; ".join(
                "(/usr/bin/python3 -c 'while True: pass' %s &)" % marker for _ in range(n)) + "; true"))


@test
def four_busy_processes_are_held_to_half_a_core():
    r = run_code(BUSY4, "--cpus", "0.5")
    eq(r.json["status"], "ok", r)
    wall = r.json["duration_ms"] / 1000
    cpu = r.json["usage"]["cpu_ms"] / 1000
    check(wall >= 1.9, "the loops ran %.2f s" % wall)
    # at most 0.5 core-seconds per second, with generous slack
    check(cpu <= 0.5 * wall * 1.5 + 0.2,
          "4 busy processes used %.2f s of CPU in %.2f s under --cpus 0.5" % (cpu, wall))
    eq(r.json.get("limits_unenforced", []), [], "the quota is enforced here")
    # held back: reported
    held_back_is_reported()
    # one busy process under a quota of two cores is never held back
    r = run_code("import time\nt = time.monotonic()\nwhile time.monotonic() - t < 0.5:\n    pass\n",
                 "--cpus", "2")
    eq((r.json["status"], r.json["limits_hit"]), ("ok", []), r)


def held_back_is_reported():
    """Four busy loops under --cpus 0.05 run until the sandbox cgroup has
    counted a throttled period; then the test kills them, the program
    ends, and its result must say "cpu"."""
    marker = "cc-held-%d" % os.getpid()
    code = ("import subprocess\n"
            "ps = [subprocess.Popen(['/usr/bin/python3', '-c', 'while True: pass', %r])"
            " for _ in range(4)]\n"
            "print([p.wait() for p in ps])\n" % marker)
    p = subprocess.Popen([CODECELL, "run", "--json", "--cpus", "0.05", "--timeout",
                          str(4 * HANG_S), "-"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        p.stdin.write(code)
        p.stdin.close()
        busy = busy_under(p.pid, marker)
        await_throttled(cpu_stat_file(busy[0]))
        # the program may still be starting its last loops (the quota
        # holds it back too): kill what runs until it has ended
        deadline = time.monotonic() + HANG_S
        while p.poll() is None and time.monotonic() < deadline:
            for b in descendants(p.pid):
                if marker in cmdline(b):
                    os.kill(b, signal.SIGKILL)  # our own descendants
            time.sleep(0.1)
        out = p.stdout.read()
        p.wait(timeout=HANG_S)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    j = json.loads(out)
    eq((j["status"], j["logs"]["stdout"]), ("ok", "[-9, -9, -9, -9]\n"), j)
    check("cpu" in j["limits_hit"], "held back, not reported: %r" % j["limits_hit"])


@test
def the_default_quota_is_one_core():
    r = run_code(BUSY4)
    eq(r.json["status"], "ok", r)
    wall = r.json["duration_ms"] / 1000
    cpu = r.json["usage"]["cpu_ms"] / 1000
    check(cpu <= 1.0 * wall * 1.3 + 0.2,
          "4 busy processes used %.2f s of CPU in %.2f s with the default quota" % (cpu, wall))


@test
def bad_cpus_values_are_refused_with_a_message():
    for v in ("0", "-1", "abc", "1e3", "nan", "0.001", "2000", ".5", "1."):
        r = codecell("run", "--cpus", v, "-", stdin="print(1)\n")
        eq(r.status, 125, "--cpus %s: %r" % (v, r))
        check("--cpus" in r.stderr and "cores" in r.stderr, r.stderr)
    r = codecell("run", "--cpus", "1.5", "-", stdin="print(1)\n")
    eq((r.status, r.stdout), (0, "1\n"), r)


@test
def check_lists_cpu_among_enforced_limits():
    r = codecell("check")
    eq(r.status, 0, r)
    line = [l for l in r.stdout.splitlines() if l.startswith("enforced limits:")]
    check(line and " cpu" in line[0].split(":", 1)[1] + " ", r.stdout)
    check("cpu" in line[0].split(), r.stdout)


@test
def busy_loops_a_session_cell_leaves_behind_are_held_to_the_quota():
    marker = "cc-busy-%d" % os.getpid()
    # 0.05 cores: reached even when the host is so busy that all of
    # codecell's cgroups together get little CPU
    p = subprocess.Popen([CODECELL, "shell", "--json", "--cpus", "0.05", "--timeout",
                          str(4 * HANG_S)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        p.stdin.write(leave_busy_loops(marker).replace("\n", ";") + "\n")
        p.stdin.flush()
        line = p.stdout.readline()
        check(line, "no result: %r" % p.stderr.read() if p.poll() is not None else "no result")
        j = json.loads(line)
        eq(j["status"], "ok", j)
        eq(j["logs"]["stdout"], "left\n", j)
        # the loops run into the quota (else the bound below tests nothing)
        await_throttled(cpu_stat_file(busy_under(p.pid, marker)[0]))
        rate, path = tree_cpu_rate(p.pid, marker)
        check(rate <= 0.05 * 1.5 + 0.1,
              "the cell's leftover loops use %.2f cores under --cpus 0.05 (%s)" % (rate, path))
        # the next cell runs while the quota holds the loops back: it says
        # so.  It waits until the test has seen a period throttled after
        # it began: it leaves a file that says it has begun, and the test
        # removes it through the loops' /proc/PID/root (host root cannot
        # create files there: its uid is not mapped in the sandbox)
        busy = busy_under(p.pid, marker)
        root = "/proc/%d/root/tmp/" % busy[0]
        p.stdin.write("import os, time; open('/tmp/begun', 'w').close(); "
                      "[time.sleep(0.05) for _ in iter(lambda: os.path.exists('/tmp/begun'), False)]"
                      "\n")
        p.stdin.flush()
        deadline = time.monotonic() + HANG_S
        while not os.path.exists(root + "begun") and time.monotonic() < deadline:
            time.sleep(0.05)
        check(os.path.exists(root + "begun"), "the cell did not begin")
        path = cpu_stat_file(busy[0])
        await_throttled(path, throttled(path))
        os.unlink(root + "begun")
        j = json.loads(p.stdout.readline())
        eq(j["status"], "ok", j)
        check("cpu" in j["limits_hit"], "throttled, not reported: %r" % j)
    finally:
        p.stdin.close()
        try:
            p.wait(timeout=HANG_S)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise


# a `codecell serve` this test starts on a free loopback port
Server = Serve


@test
def a_pooled_cell_gets_the_quota_and_limits_cpus_is_taken():
    marker = "cc-pool-busy-%d" % os.getpid()
    s = Server("--pool", "1")
    try:
        for _ in range(200):  # the pool fills in the background
            st, j = s.post("/v1/sessions", {})
            eq(st, 201, j)
            if j["pooled"]:
                break
            time.sleep(0.05)
        eq(j["pooled"], True, j)
        eq(j["limits"]["cpus"], 1.0, j)
        st, r = s.post("/v1/sessions/%s/execute" % j["id"], {"code": leave_busy_loops(marker)})
        eq((st, r["status"]), (200, "ok"), r)
        rate, path = tree_cpu_rate(s.p.pid, marker)
        check(rate <= 1.0 * 1.3 + 0.1,
              "a pooled cell's leftover loops use %.2f cores (default quota 1) (%s)" % (rate, path))
        # the API takes limits.cpus (a cold session: the pool has 1 core)
        st, j2 = s.post("/v1/sessions", {"limits": {"cpus": 0.2}})
        eq(st, 201, j2)
        eq((j2["pooled"], j2["limits"]["cpus"]), (False, 0.2), j2)
        st, r = s.post("/v1/sessions/%s/execute" % j2["id"],
                       {"code": leave_busy_loops(marker + "x")})
        eq((st, r["status"]), (200, "ok"), r)
        rate, path = tree_cpu_rate(s.p.pid, marker + "x")
        check(rate <= 0.2 * 1.5 + 0.1,
              "limits.cpus 0.2: the leftover loops use %.2f cores (%s)" % (rate, path))
        for bad in (0, -1, "half", 65, 0.001):
            st, e = s.post("/v1/sessions", {"limits": {"cpus": bad}})
            eq(st, 400, "limits.cpus %r: %r" % (bad, e))
        st, r = s.post("/v1/execute", {"code": BUSY4, "limits": {"cpus": 0.5}})
        eq((st, r["status"]), (200, "ok"), r)
        check(r["usage"]["cpu_ms"] <= 0.5 * r["duration_ms"] * 1.5 + 200, r["usage"])
    finally:
        eq(s.stop(), 0)


if __name__ == "__main__":
    main()
