"""cgroup v2 code paths on whatever v2 hierarchy this host has.

On a v2-only host that is /sys/fs/cgroup itself; on a hybrid host (this
project's CI machine: v1 controllers, an empty v2 hierarchy at
/sys/fs/cgroup/unified) codecell is pointed at a v2 directory with
CODECELL_CGROUP.  Controllers the hierarchy does not delegate must show up
in limits_unenforced; attach, cgroup.kill and removal must work either way.
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import CODECELL, HANG_S, await_empty, check, codecell, eq, main, test  # noqa: E402

CGROUP2_MAGIC = 0x63677270


def v2_root():
    for d in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
        try:
            out = subprocess.run(["stat", "-f", "-c", "%t", d], capture_output=True,
                                 text=True).stdout.strip()
        except OSError:
            continue
        if out and int(out, 16) == CGROUP2_MAGIC:
            return d
    return None


def delegated_dir():
    root = v2_root()
    check(root is not None, "no cgroup v2 hierarchy on this host")
    d = os.path.join(root, "codecell-e2e-%d" % os.getpid())
    os.makedirs(d, exist_ok=True)
    return d


def env_with(d):
    e = dict(os.environ)
    e["CODECELL_CGROUP"] = d
    return e


def controllers(d):
    with open(os.path.join(d, "cgroup.subtree_control")) as f:
        return f.read().split()


def sb_dirs(d):
    return [x for x in os.listdir(d) if x.startswith("sb-")]


@test
def run_in_a_v2_cgroup_reports_what_it_cannot_enforce():
    d = delegated_dir()
    try:
        r = codecell("run", "--json", "--lang", "bash", "-",
                     stdin="cat /proc/self/cgroup\n", env=env_with(d))
        eq(r.json["status"], "ok", r.stderr)
        want = sorted(x for x in ("memory", "pids", "cpu") if x not in controllers(d))
        eq(sorted(r.json["limits_unenforced"]), want, "limits_unenforced")
        # the cgroup namespace root is the sandbox's own cgroup
        check("0::/\n" in r.json["logs"]["stdout"], r.json["logs"]["stdout"])
        eq(await_empty(lambda: sb_dirs(d)), [], "sandbox cgroup left behind")
    finally:
        os.rmdir(d)


@test
def the_tree_lives_in_the_cgroup_and_is_killed_with_it():
    d = delegated_dir()
    try:
        p = subprocess.Popen([CODECELL, "run", "--timeout", "2", "--lang", "bash", "-"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env_with(d))
        p.stdin.write("sleep 600 & sleep 600 & echo started; wait\n")
        p.stdin.close()
        check(p.stdout.readline().strip() == "started", "program did not start")
        sbs = sb_dirs(d)
        eq(len(sbs), 1, "one sandbox cgroup")
        with open(os.path.join(d, sbs[0], "cgroup.procs")) as f:
            pids = f.read().split()
        # init, the shell, two sleeps
        check(len(pids) >= 4, "processes in the sandbox cgroup: %r" % pids)
        t0 = time.monotonic()
        rc = p.wait(timeout=2 * HANG_S)
        eq(rc, 124, "timeout status (stderr %r)" % p.stderr.read())
        # the sleeps would last 600 s: the bound tells killed from not
        check(time.monotonic() - t0 < HANG_S, "killed promptly")
        eq(sb_dirs(d), [], "sandbox cgroup removed")
        for pid in pids:
            check(not os.path.exists("/proc/%s" % pid), "process %s survived" % pid)
    finally:
        os.rmdir(d)


@test
def a_cgroup_the_user_cannot_write_is_reported_with_its_reason():
    d = delegated_dir()  # made by root: uid 1000 may not write it
    try:
        e = env_with(d)
        r = codecell("check", env=e, user=1000)
        eq(r.status, 0, r.stderr)
        check("CODECELL_CGROUP is not a cgroup we can write to" in r.stdout, r.stdout)
        r = codecell("run", "--json", "-", stdin="print(1)\n", env=e, user=1000)
        eq(r.json["status"], "ok", r.stderr)
        eq(sorted(r.json["limits_unenforced"]), ["cpu", "memory", "pids"], "limits_unenforced")
        check("CODECELL_CGROUP is not a cgroup we can write to" in r.stderr, r.stderr)
        r = codecell("run", "--json", "--strict", "-", stdin="print(1)\n", env=e, user=1000)
        eq((r.status, r.json["status"]), (125, "rejected"), "--strict refuses")
    finally:
        os.rmdir(d)


if __name__ == "__main__":
    main()
