"""One-shot overhead: `codecell run` of print(1+1) against bare Python and
against bwrap, measured in the same run.

The commands run interleaved (one of each per round, in rotating order),
so that a change in the machine's load during the run falls on all of
them alike; medians over BENCH_RUNS rounds (default 200), with the load
average before and after.  The overhead of a sandbox is its median minus
bare Python's; the target (issue 13) is codecell's overhead at or under
bwrap's, with every layer of codecell on (cgroup, seccomp, Landlock,
rlimits, the generated root), and the run says PASS or MISS.

On cgroup v1, the bench moves itself into a cpu and cpuacct cgroup of its
own first (removed at the end), so that codecell's sandboxes get their
cgroups under it: otherwise they share the host-wide codecell/ group with
every other codecell process's sandboxes (a server's sessions, a warm
pool), whose CPU use the scheduler then charges against ours, while bare
Python and bwrap compete only as processes.  Every command measured runs
in that one cgroup.  Both sandboxes exit once their pid 1 has reported
the program's status, without waiting for it: bwrap reads the status from
a pipe; `codecell run` hands the init's exit, the namespaces' teardown and
the removal of the cgroups to a child of its own.  Neither's wall time
includes that teardown, and the CPU column (the reaped tree) counts the
front process only: not the pid 1, not the program, not the teardown.
Run with `make bench`.
"""
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CODECELL = os.path.join(ROOT, os.environ.get("CODECELL_BUILD", "build"), "codecell")
PY = "/usr/bin/python3"
RUNS = int(os.environ.get("BENCH_RUNS", "200"))
V1_CTRLS = ("cpu", "cpuacct")


def hyperfine(cmds):
    """Median and p90 wall time (ms) of each command (hyperfine: one
    command's runs after the other's, for the slow ones below)."""
    out = tempfile.mktemp(suffix=".json")
    args = ["hyperfine", "-N", "--style", "none", "-w", "10", "-r", str(RUNS),
            "--export-json", out] + cmds
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        data = json.load(f)
    os.unlink(out)
    res = []
    for r in data["results"]:
        times = sorted(r["times"])
        res.append((r["median"] * 1e3, times[int(len(times) * 0.9)] * 1e3))
    return res


def run_once(argv, devnull):
    """Wall time and CPU time (user+sys of the reaped tree), in ms."""
    t0 = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, os.environ,
                         file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1)])
    _, status, ru = os.wait4(pid, 0)
    wall = (time.perf_counter_ns() - t0) / 1e6
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("bench: %s failed (%d)" % (" ".join(argv), os.waitstatus_to_exitcode(status)))
    return wall, (ru.ru_utime + ru.ru_stime) * 1e3


def interleaved(cmds, rounds, warmup=10):
    """Each command once per round, the order rotating; returns per
    command the list of (wall, cpu) of the measured rounds."""
    devnull = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
    res = [[] for _ in cmds]
    try:
        for r in range(warmup + rounds):
            for k in range(len(cmds)):
                i = (r + k) % len(cmds)
                m = run_once(cmds[i], devnull)
                if r >= warmup:
                    res[i].append(m)
    finally:
        os.close(devnull)
    return res


def med(xs):
    return statistics.median(xs)


def p90(xs):
    return sorted(xs)[int(len(xs) * 0.9)]


def load():
    return "%.1f %.1f %.1f" % os.getloadavg()


class OwnCgroup:
    """A cgroup v1 cpu and cpuacct group of the bench's own (see the top),
    left and removed at the end; nothing when there is no v1 cpu
    hierarchy or we may not make one."""

    def __init__(self):
        self.dirs = []
        self.old = {}
        self.why = None

    def __enter__(self):
        if not os.path.isdir("/sys/fs/cgroup/cpu") or os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
            self.why = "not cgroup v1: the sandboxes' cgroups are under the shared codecell/ group"
            return self
        try:
            with open("/proc/self/cgroup") as f:
                lines = f.read().splitlines()
            for ctrl in V1_CTRLS:
                rel = next(l.split(":", 2)[2] for l in lines
                           if ctrl in l.split(":", 2)[1].split(","))
                base = os.path.realpath("/sys/fs/cgroup/" + ctrl)
                d = os.path.join(base + rel, "ccbench-%d" % os.getpid())
                if d in self.dirs:
                    continue  # co-mounted with one already made
                os.mkdir(d)
                self.dirs.append(d)
                self.old[d] = base + rel
                with open(os.path.join(d, "cgroup.procs"), "w") as f:
                    f.write(str(os.getpid()))
        except (OSError, StopIteration) as e:
            self.why = "no cgroup of its own (%s): the sandboxes' cgroups are under the " \
                       "shared codecell/ group" % e
            self.__exit__()
        return self

    def __exit__(self, *exc):
        for d in reversed(self.dirs):
            try:
                with open(os.path.join(self.old[d], "cgroup.procs"), "w") as f:
                    f.write(str(os.getpid()))
            except OSError:
                pass
            # codecell's own parent inside, then ours
            for sub in (os.path.join(d, "codecell"), d):
                for _ in range(50):
                    try:
                        if os.path.isdir(sub):
                            os.rmdir(sub)
                        break
                    except OSError:
                        time.sleep(0.1)  # the last tasks are still leaving
        self.dirs = []
        return False


def oneshot(work):
    """The one-shot figures: python print(1+1), then a program that does
    nothing, each bare, under codecell and under bwrap, interleaved."""
    script = os.path.join(work, "p.py")
    nothing = os.path.join(work, "t.sh")
    with open(script, "w") as f:
        f.write("print(1+1)\n")
    with open(nothing, "w") as f:
        f.write("exit 0\n")
    os.chmod(work, 0o755)
    os.chmod(script, 0o644)
    os.chmod(nothing, 0o644)
    bwrap = shutil.which("bwrap")
    unshare = shutil.which("unshare")
    bw = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr",
          "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
          "--symlink", "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
          "--ro-bind", work, work] if bwrap else None
    # codecell runs the script as `python3 p.py` does (site and all):
    # the baseline is that, and bwrap runs the same command
    groups = [
        ("print(1+1)", [PY, script], [CODECELL, "run", script]),
        ("bash exit 0", ["/bin/bash", nothing], [CODECELL, "run", "--lang", "bash", nothing]),
    ]
    verdict = None
    before = os.getloadavg()[0]
    with OwnCgroup() as cg:
        print("one-shot runs: %d rounds, the commands interleaved (each once per round), "
              "medians; load average %s (1, 5, 15 min)" % (RUNS, load()))
        print("  " + ("every command in a cpu cgroup of the bench's own (v1)" if not cg.why
                      else cg.why))
        for name, bare, cc in groups:
            cmds = [bare, cc] + ([bw + bare] if bw else [])
            if name == "bash exit 0" and unshare:
                # the namespaces alone, nothing else: the kernel's floor
                cmds.append([unshare, "-Urmnpif", "--mount-proc"] + bare)
            res = interleaved(cmds, RUNS)
            walls = [[w for w, _ in r] for r in res]
            cpus = [[c for _, c in r] for r in res]
            base = med(walls[0])
            labels = ["bare", "codecell run", "bwrap --unshare-all", "unshare -Urmnpif (floor)"]
            if not bw:
                labels.remove("bwrap --unshare-all")
            print("%s:" % name)
            for lab, w, c in zip(labels, walls, cpus):
                paired = med([x - y for x, y in zip(w, walls[0])])
                print("  %-26s median %6.2f ms  p90 %6.2f ms  overhead %+6.2f ms (paired %+6.2f)"
                      "  CPU %5.2f ms" % (lab, med(w), p90(w), med(w) - base, paired, med(c)))
            if bw:
                cc_o, bw_o = med(walls[1]) - base, med(walls[2]) - base
                ratio = cc_o / bw_o if bw_o > 0 else float("inf")
                print("  codecell's overhead / bwrap's: %.2f (%+.2f ms / %+.2f ms)" % (ratio, cc_o, bw_o))
                if name == "print(1+1)":
                    verdict = ratio
        print("  load average after: %s" % load())
        busy = max(os.getloadavg()[0], before) > 2 * (os.cpu_count() or 1)
        if busy:
            print("  the load average was above twice the CPUs (%d): waits for a CPU, not the "
                  "sandboxes' work, make most of these figures; see the CPU column, and "
                  "re-measure on an idle machine" % (os.cpu_count() or 1))
    if verdict is not None:
        print("target (issue 13): codecell's one-shot overhead at or under bwrap's, every layer "
              "on: %s (%.2f)" % ("PASS" if verdict <= 1.0 else "MISS", verdict))
    else:
        print("target (issue 13): not measured (no bwrap)")
    print("  (CPU: user+sys of the reaped tree.  bwrap and codecell both exit once their pid 1 "
          "reports the program's status, without waiting for it (codecell leaves the init's exit "
          "and the cgroups' removal to a child of its own): for both, the CPU column counts "
          "the front process only, and the wall time leaves out the pid 1's exit and the "
          "namespaces' teardown)")


def peak_rss_kb(cmd):
    """Largest resident set in cmd's process tree, by GNU time (%M).
    (ru_maxrss seen from Python would include the forking Python: the
    high-water mark survives exec.)"""
    p = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    return int(p.stderr.strip().splitlines()[-1])


def main():
    sys.stdout.reconfigure(line_buffering=True)  # interleave with bench_session
    if not os.path.exists(CODECELL):
        sys.exit("bench: build first (make all)")
    work = tempfile.mkdtemp(prefix="cc-bench-")
    oneshot(work)
    if os.environ.get("BENCH_ONESHOT_ONLY"):
        shutil.rmtree(work)
        return
    script = os.path.join(work, "p.py")
    # Memory: the supervisor and the init are what codecell adds.
    bare_rss = peak_rss_kb(["/bin/bash", os.path.join(work, "t.sh")])
    cc_rss = peak_rss_kb([CODECELL, "run", "--lang", "bash", os.path.join(work, "t.sh")])
    py_rss = peak_rss_kb([PY, script])  # what codecell runs: python3 p.py
    ccpy_rss = peak_rss_kb([CODECELL, "run", script])
    print("peak RSS (largest process of the tree):")
    print("  bash exit 0: bare %d KiB, under codecell %d KiB (codecell's supervisor is the largest)"
          % (bare_rss, cc_rss))
    print("  print(1+1):  bare %d KiB, under codecell %d KiB (overhead %+d KiB)"
          % (py_rss, ccpy_rss, ccpy_rss - py_rss))
    sessions(work)
    shutil.rmtree(work)


def pss_kb(pid):
    """Proportional set size of pid and all its descendants."""
    total = 0
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            with open("/proc/%d/smaps_rollup" % p) as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
            for tid in os.listdir("/proc/%d/task" % p):
                with open("/proc/%d/task/%s/children" % (p, tid)) as f:
                    todo += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return total


def sessions(work):
    """Session figures: the C program for the library API, and here the
    baselines it is compared with, and memory per idle session."""
    print()
    # in a cgroup of the bench's own, as the one-shot runs: the first
    # cells of a pooled session are compared there with a plain python3
    # (bench_session's last part), and both must compete alike
    with OwnCgroup() as cg:
        if cg.why:
            print("(sessions: %s)" % cg.why)
        subprocess.run([os.path.join(ROOT, os.environ.get("CODECELL_BUILD", "build"),
                                     "bench", "bench_session"), "20"], check=True)
    desc = os.path.join(work, "describe.py")
    with open(desc, "w") as f:
        f.write("import numpy as np, pandas as pd\n"
                "df = pd.DataFrame(np.random.rand(10000, 4), columns=list('abcd'))\n"
                "print(df.describe())\n")
    os.chmod(desc, 0o644)
    runs = os.environ.get("BENCH_RUNS", "200")
    os.environ["BENCH_RUNS"] = "20"
    global RUNS
    saved, RUNS = RUNS, 20
    res = hyperfine([PY + " -c 'import pandas'", "%s %s" % (PY, desc),
                     "%s run %s" % (CODECELL, desc)])
    RUNS = saved
    os.environ["BENCH_RUNS"] = runs
    print("baselines (hyperfine, 20 runs each)")
    for name, (med, p90) in zip(["cold python3 -c 'import pandas'",
                                 "df.describe() as bare python3 script",
                                 "df.describe() as codecell run (one-shot)"], res):
        print("  %-44s median %8.2f ms  p90 %8.2f ms" % (name, med, p90))
    # memory: idle sessions with the preload set, no sharing yet
    shells = []
    for _ in range(4):
        sh = subprocess.Popen([CODECELL, "shell", "--json", "--preload",
                               "numpy,pandas,matplotlib.pyplot"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        sh.stdin.write("1\n")
        sh.stdin.flush()
        sh.stdout.readline()
        shells.append(sh)
    per = [pss_kb(sh.pid) for sh in shells]
    for sh in shells:
        sh.stdin.close()
        sh.wait()
    avg = sum(per) / len(per)
    print("memory: idle session with numpy+pandas+pyplot, PSS of its tree: %.1f MiB "
          "(4 sessions: %s); about %d fit in 4 GiB" % (avg / 1024,
                                                         ", ".join("%.1f" % (x / 1024) for x in per),
                                                         int(4 * 1024 * 1024 / avg)))


if __name__ == "__main__":
    main()
