"""What a sandbox can learn of the host it runs on: values under /proc,
/sys and /etc that name the host (its boot id, machine id, boot time,
uptime, hostname) or that two sandboxes could compare to learn that they
share it (host-wide counters, locks, load).  Each is masked, virtualized or
the sandbox's own; README "What a sandbox can see of the host" lists what
stays visible and why."""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import http.client
import signal

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import Serve, CODECELL, check, eq, main, run_code, test  # noqa: E402

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")

# the sandbox's view, as one JSON object
VIEW = r"""
import json, os, time
def read(p):
    try:
        with open(p) as f:
            return f.read()
    except OSError as e:
        return "error: " + e.strerror
v = {p: read(p) for p in (
    "/proc/sys/kernel/random/boot_id", "/proc/stat", "/proc/uptime", "/proc/loadavg",
    "/proc/locks", "/proc/interrupts", "/proc/softirqs", "/proc/diskstats", "/proc/vmstat",
    "/proc/sys/fs/file-nr", "/proc/sys/fs/dentry-state", "/proc/sys/fs/inode-nr",
    "/proc/sys/kernel/pty/nr", "/proc/pressure/cpu", "/proc/cmdline",
    "/proc/sys/kernel/hostname", "/etc/hostname")}
v["monotonic"] = time.monotonic()
v["boottime"] = time.clock_gettime(time.CLOCK_BOOTTIME)
v["cpu_count"] = os.cpu_count()
v["affinity"] = len(os.sched_getaffinity(0))
v["/sys"] = sorted(os.path.join(dp, n)[:60] for dp, dns, fns in os.walk("/sys")
                  if not dp.startswith(("/sys/fs/cgroup", "/sys/devices/system/cpu"))
                  for n in dns + fns)
v["machine-id"] = [p for p in ("/etc/machine-id", "/var/lib/dbus/machine-id") if os.path.exists(p)]
v["dirs"] = {d: (os.listdir(d) if os.path.isdir(d) else None)
             for d in ("/proc/fs", "/proc/bus", "/proc/irq", "/proc/driver")}
print(json.dumps(v))
"""

# Walk /proc (but the processes' own directories), /sys, /etc, /run and
# /var, and read every file the sandbox can; print the paths holding one
# of the host's identifiers.
AUDIT = r"""
import json, os, sys
needles = [n for n in json.loads(sys.argv[1]) if n]
hits, n = [], 0
for top in ("/proc", "/sys", "/etc", "/run", "/var"):
    for dp, dns, fns in os.walk(top):
        if dp == "/proc":
            dns[:] = [d for d in dns if not d.isdigit() and d not in ("self", "thread-self")]
        for f in fns:
            p = os.path.join(dp, f)
            try:
                with open(p, "rb") as fh:
                    data = fh.read(1 << 16).decode(errors="replace")
            except OSError:
                continue
            n += 1
            hits += [[p, x] for x in needles if x in data]
print(json.dumps({"read": n, "hits": hits}))
"""


def host(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def host_btime():
    return re.search(r"^btime (\d+)$", host("/proc/stat"), re.M).group(1)


def view():
    r = run_code(VIEW)
    eq(r.json["status"], "ok", r)
    return json.loads(r.json["logs"]["stdout"])


@test
def the_boot_id_is_the_sandboxes_own():
    a, b = view(), view()
    host_id = host("/proc/sys/kernel/random/boot_id").strip()
    check(host_id, "the host has no boot id to compare with")
    ia = a["/proc/sys/kernel/random/boot_id"].strip()
    ib = b["/proc/sys/kernel/random/boot_id"].strip()
    check(ia != host_id, "the sandbox reads the host's boot id %s" % ia)
    check(ia != ib, "two sandboxes read the same boot id %s" % ia)
    check(UUID.match(ia) and UUID.match(ib), "not UUIDs: %r %r" % (ia, ib))


@test
def boot_time_uptime_and_clocks_are_the_sandboxes_own():
    # the sandbox's clocks start at 0 when it starts (whole seconds: the
    # offsets are), so they read at most the time the run took, by the
    # host's own uptime before and after it, plus that second; the host's
    # uptime is far more.  No constant: a loaded machine may take a minute
    # to start the sandbox, and that must not read as the host's uptime.
    host_before = float(host("/proc/uptime").split()[0])
    t0 = time.time()
    v = view()
    t1 = time.time()
    host_after = float(host("/proc/uptime").split()[0])
    took = host_after - host_before
    check(host_before > took + 2,
          "the host booted %.1f s ago: too recently to tell its uptime apart" % host_before)
    btime = re.search(r"^btime (\d+)$", v["/proc/stat"], re.M)
    check(btime, "no btime in the sandbox's /proc/stat: %r" % v["/proc/stat"])
    check(btime.group(1) != host_btime(), "the sandbox reads the host's btime")
    # the sandbox "booted" during the run (whole seconds)
    check(int(t0) - 1 <= int(btime.group(1)) <= t1 + 1,
          "btime %s, the run from %d to %d" % (btime.group(1), t0, t1))
    up = float(v["/proc/uptime"].split()[0])
    check(up <= took + 1, "the sandbox's uptime is %.1f s, the run took %.1f s (the host's uptime %.1f s)"
          % (up, took, host_after))
    check(v["monotonic"] <= took + 1 and v["boottime"] <= took + 1,
          "CLOCK_MONOTONIC %.1f, CLOCK_BOOTTIME %.1f, the run took %.1f s: the host's uptime"
          % (v["monotonic"], v["boottime"], took))


@test
def host_wide_counters_are_zero_or_masked():
    v = view()
    stat = v["/proc/stat"]
    for line in stat.splitlines():
        if line.startswith("cpu"):
            eq(set(line.split()[1:]), {"0"}, "counters of %r" % line)
    # glibc counts CPUs from /proc/stat here (no /sys/devices): the CPUs the
    # sandbox is pinned to under its CPU quota (a run's default is 1 CPU;
    # issue 13), never more than the host's
    eq(v["cpu_count"], v["affinity"], "os.cpu_count() against sched_getaffinity")
    check(1 <= v["cpu_count"] <= os.cpu_count(), "os.cpu_count() in the sandbox: %r" % v)
    eq(v["/proc/loadavg"], "0.00 0.00 0.00 1/1 1\n", "/proc/loadavg")
    for p in ("/proc/locks", "/proc/interrupts", "/proc/softirqs", "/proc/diskstats",
              "/proc/vmstat", "/proc/sys/fs/file-nr", "/proc/sys/fs/dentry-state",
              "/proc/sys/fs/inode-nr", "/proc/sys/kernel/pty/nr", "/proc/pressure/cpu",
              "/proc/cmdline"):
        if os.path.exists(p):
            eq(v[p], "", "%s in the sandbox (host: %r)" % (p, host(p)[:80]))
    for d, entries in v["dirs"].items():
        if os.path.isdir(d):
            eq(entries, [], "%s in the sandbox" % d)


# /sys: the sandbox's cgroups and its copy of /sys/devices/system/cpu
# (cpu_view_agrees_with_the_pinning), what is in them not listed
SYS = ["/sys/devices", "/sys/devices/system", "/sys/devices/system/cpu", "/sys/fs",
       "/sys/fs/cgroup"]


@test
def no_sys_and_no_machine_id():
    v = view()
    eq(v["/sys"], SYS, "/sys in the sandbox")
    eq(v["machine-id"], [], "a machine id in the sandbox")
    eq((v["/proc/sys/kernel/hostname"], v["/etc/hostname"]), ("codecell\n", "codecell\n"),
       "the hostname (the host's is %r)" % socket.gethostname())


@test
def nothing_under_proc_sys_or_etc_holds_a_host_identifier():
    needles = [host("/proc/sys/kernel/random/boot_id").strip(),
               host("/etc/machine-id").strip(),
               host("/sys/devices/virtual/dmi/id/product_uuid").strip(),
               "btime " + host_btime()]
    hn = socket.gethostname()
    if len(hn) >= 8 and hn not in ("codecell", "localhost"):  # a short one is in any text
        needles.append(hn)
    # run_code gives no argv: the needles go in the code itself
    r = run_code(AUDIT.replace("json.loads(sys.argv[1])", "json.loads(%r)" % json.dumps(needles)),
                 "--timeout", "60")
    eq(r.json["status"], "ok", r)
    got = json.loads(r.json["logs"]["stdout"])
    check(got["read"] > 100, "the audit read only %d files" % got["read"])
    eq(got["hits"], [], "host identifiers readable in the sandbox")


# /sys/devices/system/cpu as the sandbox sees it, and what CPU counters
# make of it
CPU_VIEW = r"""
import ctypes, json, os, subprocess
top = "/sys/devices/system/cpu"
v = {"affinity": sorted(os.sched_getaffinity(0)), "cpu_count": os.cpu_count(),
     "conf": os.sysconf("SC_NPROCESSORS_CONF"), "files": {}, "writable": [], "errors": []}
for dp, dns, fns in os.walk(top):
    for f in fns:
        p = os.path.join(dp, f)
        v["files"][p] = open(p).read()
        if os.access(p, os.W_OK):
            try:
                with open(p, "w") as fh:
                    fh.write("0")
                v["writable"].append(p)
            except OSError as e:
                v["errors"].append(e.strerror)
for d in (top, top + "/cpu%d" % v["affinity"][0]):
    try:
        open(d + "/new", "w").close()
        v["writable"].append(d)
    except OSError as e:
        v["errors"].append(e.strerror)
v["rdonly"] = bool(os.statvfs(top).f_flag & os.ST_RDONLY)
v["mounts"] = [l.split()[4] for l in open("/proc/self/mountinfo") if l.split()[4].startswith("/sys/devices")]
v["nproc"] = subprocess.run(["nproc", "--all"], capture_output=True, text=True).stdout.strip()
import joblib, numpy
v["joblib"] = joblib.cpu_count()
blas = [l.split()[-1] for l in open("/proc/self/maps") if "libopenblas" in l]
v["openblas"] = ctypes.CDLL(blas[0]).openblas_get_num_procs() if blas else None
print(json.dumps(v))
"""

# what the view may hold: these names and no others
CPU_TOP = {"online", "possible", "present", "offline", "kernel_max"}
CPU_NAMES = {"online", "physical_package_id", "die_id", "cluster_id", "core_id", "book_id",
             "drawer_id", "thread_siblings", "thread_siblings_list", "core_cpus",
             "core_cpus_list", "core_siblings", "core_siblings_list", "cluster_cpus",
             "cluster_cpus_list", "die_cpus", "die_cpus_list", "package_cpus",
             "package_cpus_list", "id", "level", "type", "size", "coherency_line_size",
             "ways_of_associativity", "number_of_sets", "physical_line_partition",
             "shared_cpu_map", "shared_cpu_list"}


def cpulist(text):
    out = set()
    for part in text.strip().split(","):
        if part:
            a, _, b = part.partition("-")
            out |= set(range(int(a), int(b or a) + 1))
    return out


def cpumask(text):
    return {i for i in range(1024) if int(text.strip().replace(",", ""), 16) >> i & 1}


def check_cpu_view(v, where):
    """The view lists exactly the CPUs the tree may use, everywhere, holds
    the host's values for them, is read-only, and every counter agrees."""
    top = "/sys/devices/system/cpu/"
    aff = set(v["affinity"])
    n = len(aff)
    files = v["files"]
    for name in ("online", "possible", "present"):
        eq(cpulist(files[top + name]), aff, "%s %s" % (where, name))
    eq(files[top + "offline"], "\n", "%s offline" % where)
    eq((v["cpu_count"], v["conf"], int(v["nproc"]), v["joblib"], v["openblas"]), (n,) * 5,
       "%s: os.cpu_count, _SC_NPROCESSORS_CONF, nproc --all, joblib, OpenBLAS against "
       "the pinning %r" % (where, sorted(aff)))
    dirs = {p[len(top):].split("/")[0] for p in files if "/" in p[len(top):]}
    eq(dirs, {"cpu%d" % c for c in aff}, "%s: cpuN directories" % where)
    check(any("/cache/index" in p for p in files) or not os.path.isdir(top + "cpu0/cache"),
          "%s: no cache information: %r" % (where, sorted(files)[:20]))
    for p, text in files.items():
        name = os.path.basename(p)
        check(name in (CPU_TOP if os.path.dirname(p) + "/" == top else CPU_NAMES),
              "%s: %s is not one of the copied names" % (where, p))
        if name.endswith("_list"):
            got = cpulist(text)
            check(got <= aff and got, "%s: %s lists %r, pinned to %r" % (where, p, got, aff))
            if name == "thread_siblings_list" or name == "shared_cpu_list":
                mask = cpumask(files[p[:-len("_list")].replace("shared_cpu", "shared_cpu_map")
                                     if name == "shared_cpu_list" else p[:-len("_list")]])
                eq(mask, got, "%s: %s's mask" % (where, p))
        elif name not in ("online", "possible", "present", "offline") and name not in (
                "thread_siblings", "core_cpus", "core_siblings", "cluster_cpus", "die_cpus",
                "package_cpus", "shared_cpu_map"):
            eq(text, host(p), "%s: %s against the host's" % (where, p))
    eq(v["writable"], [], "%s: writable in the view" % where)
    check(v["rdonly"] and set(v["errors"]) <= {"Read-only file system", "Permission denied"}
          and v["errors"], "%s: %r" % (where, v["errors"]))
    # files in the sandbox's own read-only root: no mount of the host's
    # sysfs, nor a bind of any of it
    eq(v["mounts"], [], "%s: mounts under /sys/devices" % where)


@test
def cpu_view_agrees_with_the_pinning():
    """/sys/devices/system/cpu (issue "Hold up, round three", 13): programs
    that count CPUs or read the topology from it find the CPUs the sandbox
    is pinned to, with the host's topology and caches for those, read-only,
    and nothing else of the host's sysfs."""
    check(os.path.isdir("/sys/devices/system/cpu/cpu0"), "the host has no CPU sysfs to compare")
    for args in ((), ("--cpus", str(os.cpu_count()))):
        r = run_code(CPU_VIEW, *args)
        eq(r.json["status"], "ok", r)
        v = json.loads(r.json["logs"]["stdout"])
        check_cpu_view(v, "one-shot %s" % " ".join(args))
    eq(len(v["affinity"]), os.cpu_count(), "unpinned: every CPU (%r)" % v["affinity"])


# a `codecell serve` this test starts on a free loopback port
Server = Serve


@test
def a_pooled_cell_sees_no_more_of_the_host():
    s = Server("--pool", "1")
    try:
        for _ in range(200):
            st, j = s.post("/v1/sessions", {})
            eq(st, 201, j)
            if j["pooled"]:
                break
            time.sleep(0.05)
        eq(j["pooled"], True, j)
        st, r = s.post("/v1/sessions/%s/execute" % j["id"], {"code": VIEW})
        eq((st, r["status"]), (200, "ok"), r)
        v = json.loads(r["logs"]["stdout"])
        check(v["/proc/sys/kernel/random/boot_id"].strip() !=
              host("/proc/sys/kernel/random/boot_id").strip(), "the host's boot id in a cell")
        check(v["monotonic"] < 60, "CLOCK_MONOTONIC %.1f in a cell" % v["monotonic"])
        eq(v["/proc/locks"], "", "/proc/locks in a cell")
        check("btime " + host_btime() not in v["/proc/stat"], "the host's btime in a cell")
        eq(v["/sys"], SYS, "/sys in a cell")
        # the cell's copy of /sys/devices/system/cpu is made from its
        # template's, which has every CPU: the cell's own pinning is what
        # it must show
        st, r = s.post("/v1/sessions/%s/execute" % j["id"], {"code": CPU_VIEW})
        eq((st, r["status"]), (200, "ok"), r)
        cv = json.loads(r["logs"]["stdout"])
        check_cpu_view(cv, "pool cell")
        check(len(cv["affinity"]) < os.cpu_count() or os.cpu_count() == 1,
              "the cell is not pinned: %r" % cv["affinity"])
    finally:
        eq(s.stop(), 0)


if __name__ == "__main__":
    main()
