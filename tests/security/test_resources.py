#!/usr/bin/python3
"""Security: resource exhaustion is contained, the result names the limit,
and nothing is left behind (escape class 14 of
research/sandbox-anchors.md section 11).

Other test runs may share this machine, so leftovers are checked for our
own codecell processes (cgroups are named sb-<codecell pid>-N) and our own
programs (each carries a unique token in its command line)."""
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import CODECELL, HANG_S, MountNs, Run, await_empty, check, eq, leftovers, main, test  # noqa: E402



def _codecell_uids():
    """The host uids sandboxes run as: codecell's range (as root), and
    65534, which they used to run as."""
    uids = {65534}
    try:
        with open("/etc/subuid") as f:
            for l in f:
                name, base, count = (l.strip().split(":") + ["", ""])[:3]
                if name == "codecell" and base.isdigit() and count.isdigit():
                    uids |= set(range(int(base), int(base) + int(count)))
    except OSError:
        pass
    return uids


SANDBOX_HOST_UIDS = _codecell_uids()


def tmp_entries():
    """Entries of the host /tmp that could be codecell's.  Other test runs
    share this /tmp, so only what a sandbox or codecell would leave
    counts: anything owned by the sandbox's host uids, or named like
    codecell's things.  (TMPDIR and the working directory are fresh empty
    dirs per run, checked separately.)"""
    out = set()
    for n in os.listdir("/tmp"):
        # test scripts' own temp dirs (test_tool_sql's cc-pg-* is uid
        # 1000's, and another run's may appear meanwhile)
        if n.startswith(("cctest-", "cc-")):
            continue
        try:
            uid = os.lstat(os.path.join("/tmp", n)).st_uid
        except OSError:
            continue
        if uid in SANDBOX_HOST_UIDS or uid == 1000 or "codecell" in n or n.startswith("sb-"):
            out.add(n)
    return out


def procs_with(token):
    """Host processes whose command line holds token: [(pid, uid, cmdline)]."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("latin-1")
            uid = os.stat("/proc/%s" % pid).st_uid
        except OSError:
            continue
        if token in cmd:
            found.append((int(pid), uid, cmd))
    return found


def sandbox_uid_procs(token):
    """Those of the processes holding token that run as a sandbox's host
    uid, as pids."""
    return {pid for pid, uid, _ in procs_with(token) if uid in SANDBOX_HOST_UIDS}


def our_cgroups(pid):
    return [c for c in leftovers() if os.path.basename(c).startswith("sb-%d-" % pid)]


class Proc:
    def __init__(self, returncode, stdout, stderr):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def run(code, *args, lang="python", user=None, timeout=2 * HANG_S):
    """codecell run --json; returns the Run, after checking that it left
    no cgroup, mount or /tmp entry behind (codecell runs in a mount
    namespace of this test's: the host's mount table is everyone's, and
    changes while other work runs).  A run that does not end within
    timeout seconds fails as hung: the programs here never end on their
    own, so that is what a limit that does not stop them looks like (the
    tests assert no other time: a loaded machine makes every run slow)."""
    cmd = [CODECELL, "run", "--json", "--lang", lang] + list(args) + ["-"]
    if user is not None:
        cmd = ["setpriv", "--reuid=%d" % user, "--regid=%d" % user, "--clear-groups"] + cmd
    ns = MountNs()
    cmd = ns.prefix() + cmd
    mounts, tmps = ns.mounts(), tmp_entries()
    scratch = tempfile.mkdtemp(prefix="cctest-res-")
    os.chmod(scratch, 0o777)
    env = dict(os.environ, TMPDIR=scratch)
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env, cwd=scratch)
    try:
        try:
            out, err = p.communicate(code, timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            raise AssertionError("codecell itself hung for %ss: %r" % (timeout, err[-2000:]))
        r = Run(Proc(p.returncode, out, err), time.monotonic() - t0)
        check(r.stdout.strip(), "no result object: %r" % r)
        r.json  # must parse
        eq(await_empty(lambda: our_cgroups(p.pid)), [], "cgroups left behind")
        eq(sorted(ns.mounts() ^ mounts), [], "mounts in codecell's namespace changed")
        eq(tmp_entries() - tmps, set(), "new entries in the host /tmp")
        eq(os.listdir(scratch), [], "files left in TMPDIR / the working directory")
    finally:
        ns.close()
        shutil.rmtree(scratch, ignore_errors=True)
    return r


def limits(r):
    return r.json["limits_hit"]


PY_FORK_BOMB = """
import os
while True:
    try:
        os.fork()
    except OSError:
        pass
"""


@test
def python_fork_bomb_is_contained():
    # the bomb never ends: that run() returns at all is the teardown's check.
    # It must reach the pids limit before the timeout: 3 s did not always
    # start Python and fork 32 copies at a load of 30 (a CPU quota of 1)
    r = run(PY_FORK_BOMB, "--pids", "32", "--timeout", "10")
    j = r.json
    eq(j["status"], "timeout", "status: %r" % r)
    check("pids" in limits(r), "limits_hit lacks pids: %r" % j["limits_hit"])
    check("wall_time" in limits(r), "limits_hit lacks wall_time: %r" % j["limits_hit"])
    eq(r.status, 124, "exit status")


@test
def bash_fork_bomb_is_contained():
    # the classic: the script itself returns at once, the bomb runs in the
    # background until the init's exit takes the namespace down
    r = run(":(){ :|:& };:\n", "--pids", "32", "--timeout", "3", lang="bash")
    check(r.json["status"] in ("ok", "timeout"), "status: %r" % r)
    # and one that keeps the session alive
    r = run(":(){ :|:& };:\nsleep 600\n", "--pids", "32", "--timeout", "10", lang="bash")
    eq(r.json["status"], "timeout", "status: %r" % r)
    check("pids" in limits(r), "limits_hit lacks pids: %r" % r)


@test
def fork_count_is_capped_by_pids():
    r = run("""
import os, time
n = 0
for i in range(500):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(600)
        os._exit(0)
    n += 1
print(n)
""", "--pids", "32", "--timeout", str(HANG_S))
    # had the sleeping children kept the run alive, its timeout would
    # have ended it: status "timeout", wall_time hit
    eq(r.json["status"], "ok", "status: %r" % r)
    check("wall_time" not in limits(r), "the sleeping children kept the run alive: %r" % r)
    n = int(r.json["logs"]["stdout"])
    check(0 < n <= 31, "forked %d processes under --pids 32" % n)
    check("pids" in limits(r), "limits_hit lacks pids")


BALLOON = """
a = []
while True:
    a.append(bytearray(8 << 20))
"""


@test
def memory_balloon_hits_memory_limit():
    r = run(BALLOON, "--memory", "128M", "--timeout", "20")
    j = r.json
    eq(j["status"], "memory_limit", "status: %r" % r)
    check("memory" in limits(r), "limits_hit lacks memory")
    eq(r.status, 137, "exit status")
    check(j["usage"]["max_rss_kb"] <= 160 * 1024, "peak %d kB over a 128M limit"
          % j["usage"]["max_rss_kb"])


@test
def memory_balloon_in_children_hits_memory_limit():
    # four children of 48M each: only the tree as a whole is over 128M
    r = run("""
import os, time
for i in range(4):
    if os.fork() == 0:
        a = [bytearray(1 << 20) for _ in range(48)]
        time.sleep(600)
        os._exit(0)
time.sleep(600)
""", "--memory", "128M", "--timeout", str(HANG_S))
    eq(r.json["status"], "memory_limit", "status: %r" % r)
    check("memory" in limits(r), "limits_hit lacks memory")
    # had only one child been killed, the others and the parent would
    # sleep on until the timeout
    check("wall_time" not in limits(r), "the tree was not killed: %r" % r)


DISK_FILL = """
import errno, os
path = %r
n = 0
try:
    with open(path, "wb") as f:
        while n < 64 << 20:
            f.write(b"x" * 65536)
            f.flush()
            n += 65536
    print("NO ERROR", n)
except OSError as e:
    print(errno.errorcode.get(e.errno), os.path.getsize(path))
"""


@test
def tmp_fill_sees_enospc():
    r = run(DISK_FILL % "/tmp/fill", "--tmp-size", "1M")
    eq(r.json["status"], "ok", "status: %r" % r)
    word, size = r.json["logs"]["stdout"].split()
    eq(word, "ENOSPC", "filling /tmp")
    check(int(size) <= 1 << 20, "wrote %s bytes into a 1M /tmp" % size)


@test
def workspace_fill_sees_enospc_and_names_disk():
    r = run(DISK_FILL % "/home/user/fill", "--workspace-size", "1M")
    eq(r.json["status"], "ok", "status: %r" % r)
    word, size = r.json["logs"]["stdout"].split()
    eq(word, "ENOSPC", "filling the workspace")
    check(int(size) <= 1 << 20, "wrote %s bytes into a 1M workspace" % size)
    check("disk" in limits(r), "limits_hit lacks disk: %r" % r.json["limits_hit"])


@test
def output_flood_is_cut():
    r = run('while True:\n    print("x" * 1000)\n', "--output-limit", "1K", "--timeout", "20")
    j = r.json
    eq(j["status"], "output_limit", "status: %r" % r)
    check("output" in limits(r), "limits_hit lacks output")
    eq(j["truncated"]["stdout"], True, "truncated.stdout")
    eq(r.status, 141, "exit status")
    out = j["logs"]["stdout"]
    check(len(out) <= 2 * 1024 + 100, "kept %d bytes under a 1K limit" % len(out))
    head, sep, tail = out.partition("\n[... ")
    check(sep, "no cut marker in %r" % out[:200])
    check(head.startswith("x" * 100), "no head: %r" % head[:100])
    num, sep2, tail = tail.partition(" bytes cut ...]\n")
    check(sep2 and num.isdigit() and int(num) > 0, "bad marker: %r" % out[len(head):len(head) + 80])
    check(tail.strip("x\n") == "" and len(tail) > 100, "no tail: %r" % tail[-100:])


@test
def stderr_flood_is_cut():
    r = run('import sys\nwhile True:\n    sys.stderr.write("e" * 1000 + "\\n")\n',
            "--output-limit", "1K", "--timeout", "20")
    j = r.json
    eq(j["status"], "output_limit", "status: %r" % r)
    eq(j["truncated"]["stderr"], True, "truncated.stderr")
    check(len(j["logs"]["stderr"]) <= 2 * 1024 + 100, "stderr kept %d bytes"
          % len(j["logs"]["stderr"]))


@test
def busy_loop_times_out():
    r = run("while True:\n    pass\n", "--timeout", "1")
    j = r.json
    eq(j["status"], "timeout", "status: %r" % r)
    check("wall_time" in limits(r), "limits_hit lacks wall_time")
    # no sooner than the timeout; how much later depends on the load
    # (run() fails a loop the timeout never stops as hung)
    check(j["duration_ms"] >= 1000, "duration %.0f ms" % j["duration_ms"])
    eq(r.status, 124, "exit status")


@test
def sleep_times_out():
    r = run("import time\ntime.sleep(10**6)\n", "--timeout", "1")
    eq(r.json["status"], "timeout", "status: %r" % r)
    check(r.json["duration_ms"] >= 1000, "duration %.0f ms" % r.json["duration_ms"])


@test
def daemonized_grandchild_does_not_survive():
    token = str(4000 + secrets.randbelow(5000))
    r = run("""
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for fd in (0, 1, 2):
            os.close(fd)
        os.execv("/bin/sleep", ["sleep", "%s"])
    os._exit(0)
time.sleep(0.3)
print("parent exits")
""" % token, "--timeout", "10")
    eq(r.json["status"], "ok", "status: %r" % r)
    # the daemon sleeps for over an hour: gone within HANG_S, or it survived
    await_gone(token)
    eq(procs_with("sleep " + token), [], "the daemon survived the run")
    # none of the sandbox ids' processes is ours (other runs may share
    # the machine, so only ours count)
    eq(sandbox_uid_procs(token), set(), "processes of a sandbox's uid left")


@test
def user_mode_fork_bomb_is_contained():
    r = run(PY_FORK_BOMB, "--pids", "32", "--timeout", "3", user=1000)
    j = r.json
    eq(j["status"], "timeout", "status: %r" % r)
    for lim in ("memory", "pids"):
        check(lim in j["limits_unenforced"], "limits_unenforced lacks %s: %r"
              % (lim, j["limits_unenforced"]))
    r = run("""
import os, time
n = 0
for i in range(500):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    n += 1
print(n)
""", "--pids", "32", "--timeout", "10", user=1000)
    n = int(r.json["logs"]["stdout"])
    check(0 < n <= 31, "forked %d processes under --pids 32 (RLIMIT_NPROC)" % n)


@test
def user_mode_balloon_is_contained():
    r = run(BALLOON, "--memory", "128M", "--timeout", "20", user=1000)
    j = r.json
    # RLIMIT_DATA: the allocation fails inside the program
    check(j["status"] in ("error", "memory_limit"), "status: %r" % r)
    if j["status"] == "error":
        eq(j["error"]["name"], "MemoryError", "error")
    check(j["usage"]["max_rss_kb"] <= 160 * 1024, "peak %d kB" % j["usage"]["max_rss_kb"])
    for lim in ("memory", "pids"):
        check(lim in j["limits_unenforced"], "limits_unenforced lacks %s" % lim)


def start_supervised(token):
    p = subprocess.Popen([CODECELL, "run", "--timeout", "60", "--lang", "bash", "-"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    p.stdin.write("echo ready\nsleep %s\n" % token)
    p.stdin.close()
    check(p.stdout.readline().strip() == "ready", "sandbox did not start")
    # bash starts the sleep after the echo: on a loaded machine, later
    deadline = time.monotonic() + HANG_S
    while not procs_with("sleep " + token) and time.monotonic() < deadline:
        time.sleep(0.05)
    check(procs_with("sleep " + token), "the sandboxed sleep is not running")
    return p


def await_gone(token):
    """Wait (up to HANG_S) for the `sleep TOKEN` processes to go.  The
    sleeps run for hours, so one still there then has survived; a loaded
    machine only makes their end later."""
    deadline = time.monotonic() + HANG_S
    while procs_with("sleep " + token) and time.monotonic() < deadline:
        time.sleep(0.1)


def cleanup_after_supervisor(pid, token):
    """Kill what our test left running (by pid, only ours) and remove its
    cgroups, so one failure does not leak into the next tests."""
    for cpid, uid, cmd in procs_with("sleep " + token):
        try:
            os.kill(cpid, signal.SIGKILL)
        except OSError:
            pass
    # the sandbox init is codecell's child, now orphaned: find it by its
    # cgroup and kill it so the namespace goes
    for cg in our_cgroups(pid):
        try:
            with open(os.path.join(cg, "cgroup.procs")) as f:
                for line in f:
                    os.kill(int(line), signal.SIGKILL)
        except OSError:
            pass
    time.sleep(0.3)
    for cg in our_cgroups(pid):
        try:
            os.rmdir(cg)
        except OSError:
            pass


@test
def sandbox_dies_with_its_supervisor():
    """SIGKILL to codecell (OOM killer, a crashed API server): the sandbox
    must not run on unsupervised, without its timeout."""
    token = str(10000 + secrets.randbelow(9000))
    p = start_supervised(token)
    try:
        p.kill()
        p.wait()
        await_gone(token)
        eq(procs_with("sleep " + token), [], "the sandbox outlived its supervisor")
    finally:
        cleanup_after_supervisor(p.pid, token)


@test
def sigterm_to_supervisor_tears_the_sandbox_down():
    token = str(20000 + secrets.randbelow(9000))
    p = start_supervised(token)
    try:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=HANG_S)
        await_gone(token)
        eq(procs_with("sleep " + token), [], "the sandbox outlived SIGTERM to codecell")
        eq(our_cgroups(p.pid), [], "cgroups left after SIGTERM")
    finally:
        cleanup_after_supervisor(p.pid, token)


main()
