"""Every process of a sandbox is in the sandbox's own cgroup, seen from the
host, in every hierarchy codecell uses.

The init joins by itself (and on v1 a program's worker, forked before it
joins, does too): on v1 it writes "0" into "tasks" files the
supervisor opened for it, on v2 it is cloned straight into its cgroup
(CLONE_INTO_CGROUP); see src/sandbox/cgroup.h.  This checks the outcome
from outside, for the init, the program and what the program starts, on
whatever this host has (v1 controllers here, v2 on most machines)."""
import os
import secrets
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import CODECELL, HANG_S, check, eq, main, test  # noqa: E402

V1_CONTROLLERS = ("memory", "pids", "cpuacct", "cpu")


def hierarchies():
    """The v1 controllers this host mounts, or [] on a v2-only host."""
    with open("/proc/self/mounts") as f:
        opts = [line.split()[3].split(",") for line in f if line.split()[2] == "cgroup"]
    return [c for c in V1_CONTROLLERS if any(c in o for o in opts)]


def cgroup_lines(pid):
    """{controller or '' (v2): path} of /proc/pid/cgroup."""
    out = {}
    with open("/proc/%d/cgroup" % pid) as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            for c in ctrls.split(",") if ctrls else [""]:
                out[c] = path
    return out


def ppid(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def procs_with(token):
    found = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                if token.encode() in f.read():
                    found.append(int(p))
        except OSError:
            pass
    return found


@test
def the_init_the_program_and_its_children_are_in_the_sandbox_cgroup():
    token = "cc-join-" + secrets.token_hex(4)
    # the run lasts until the test kills it: a timeout that ended it while
    # a loaded machine still walks /proc would fail the test for nothing
    p = subprocess.Popen([CODECELL, "run", "--timeout", "3600", "--lang", "bash", "-"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        p.stdin.write("(exec -a %s-a sleep 3600) & (exec -a %s-b sleep 3600) &\n"
                      "echo started; wait\n" % (token, token))
        p.stdin.close()
        eq(p.stdout.readline().strip(), "started", "program did not start")
        # the subshells exec sleep after the echo: give them a moment
        deadline = time.monotonic() + HANG_S
        while len(procs_with(token)) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        sleeps = procs_with(token)
        eq(len(sleeps), 2, "the two sleeps, found by their token")
        shell = ppid(sleeps[0])
        init = ppid(shell)
        eq(ppid(init), p.pid, "the init is codecell's child")
        want = "/sb-%d-" % p.pid
        ctrls = hierarchies() or [""]
        for pid in sleeps + [shell, init]:
            lines = cgroup_lines(pid)
            for c in ctrls:
                check(want in lines.get(c, ""),
                      "pid %d (%s) is not in the sandbox's %s cgroup: %r"
                      % (pid, "init" if pid == init else "program",
                         c or "v2", lines.get(c)))
        # and in one cgroup namespace, the init's own (on v1 the program's
        # worker is forked before the init joins, and joins and enters it
        # by itself: child.c, worker_prepare)
        nss = {pid: os.stat("/proc/%d/ns/cgroup" % pid).st_ino for pid in sleeps + [shell, init]}
        eq(len(set(nss.values())), 1, "one cgroup namespace for the init and the program: %r" % nss)
        check(os.stat("/proc/self/ns/cgroup").st_ino not in nss.values(),
              "the program is in the host's cgroup namespace: %r" % nss)
    finally:
        p.kill()
        p.wait()


@test
def the_supervisor_stays_where_it_was():
    # the join moves only the child's own thread: codecell itself and its
    # caller keep their cgroups
    mine = cgroup_lines(os.getpid())
    p = subprocess.Popen([CODECELL, "run", "--timeout", "3600", "--lang", "bash", "-"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        p.stdin.write("echo started; sleep 3600\n")
        p.stdin.close()
        eq(p.stdout.readline().strip(), "started", "program did not start")
        sup = cgroup_lines(p.pid)
        for c in hierarchies() or [""]:
            eq(sup.get(c), mine.get(c), "codecell's own %s cgroup" % (c or "v2"))
        eq(cgroup_lines(os.getpid()), mine, "the caller's cgroups")
    finally:
        p.kill()
        p.wait()


def v1_dir_of(ctrl):
    """This process's cgroup directory in the v1 hierarchy of ctrl."""
    with open("/proc/self/cgroup") as f:
        lines = f.read().splitlines()
    rel = next(line.split(":", 2)[2] for line in lines
               if ctrl in line.split(":", 2)[1].split(","))
    return os.path.realpath("/sys/fs/cgroup/" + ctrl) + rel


@test
def a_cgroup_that_cannot_be_limited_fails_the_run_before_the_program():
    # On v1 the supervisor makes and limits the cgroups while the init
    # builds the root (src/sandbox/sandbox.c, late_cgroups): a limit the
    # kernel refuses must still end the run cleanly, before the program.
    # v1 refuses a CPU quota above the parent's: run codecell in a cpu
    # cgroup of our own with a 0.1-CPU quota and ask for one CPU.
    check("cpu" in hierarchies(), "this test needs the cgroup v1 cpu hierarchy")
    d = os.path.join(v1_dir_of("cpu"), "cc-join-test-%d" % os.getpid())
    os.mkdir(d)
    try:
        with open(os.path.join(d, "cpu.cfs_quota_us"), "w") as f:
            f.write("10000")
        p = subprocess.Popen(["sh", "-c", 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"',
                              "sh", d, CODECELL, "run", "--cpus", "1", "--timeout", "20",
                              "--lang", "bash", "-"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        out, err = p.communicate("echo the program ran\n", timeout=120)
        eq(p.returncode, 125, "exit status (stderr %r)" % err)
        eq(out, "", "the program must not have run")
        check("cgroup" in err, "the message names the cgroup: %r" % err)
        # a failed set-up is torn down before codecell exits: none of
        # its cgroups (sb-PID-N, PID codecell's: sh exec'd it) is left
        for c in hierarchies():
            parent = os.path.join(d if c == "cpu" else v1_dir_of(c), "codecell")
            left = os.listdir(parent) if os.path.isdir(parent) else []
            eq([e for e in left if e.startswith("sb-%d-" % p.pid)], [],
               "sandbox cgroups left in %s" % c)
    finally:
        for sub in (os.path.join(d, "codecell"), d):
            for _ in range(100):
                try:
                    if os.path.isdir(sub):
                        os.rmdir(sub)
                    break
                except OSError:
                    time.sleep(0.1)


if __name__ == "__main__":
    main()
