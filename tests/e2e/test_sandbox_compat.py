"""Real programs behave as on the host (issue 13, the sandbox's side):
pseudo-terminals of the sandbox's own, FIFOs, /etc/services, protocols and
the CA bundle, the personality query and the calls decided one by one, an
/etc/passwd of usable ids only, the memory limit visible in /proc/meminfo
and in the sandbox's own read-only cgroups at /sys/fs/cgroup, and the CPU
count under a CPU quota; in one-shot runs, sessions and pool cells.  What
stays refused (TIOCSTI, device nodes, writes to the cgroups, the host's
other cgroups) is checked next to what now works."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import (JsonShell, Serve, await_empty, check, children, eq, main,  # noqa: E402
                    run_code, test)


def run_json(code, *args):
    """Run Python code in a one-shot sandbox; its last stdout line is JSON."""
    r = run_code(code, *args, timeout=120)
    eq(r.json["status"], "ok", "run (%r)" % (r,))
    return json.loads(r.json["logs"]["stdout"].strip().splitlines()[-1])


# ---- pseudo-terminals ------------------------------------------------------

PTY_CODE = r"""
import errno, fcntl, json, os, pty, struct, subprocess, termios
out = {}
m, s = os.openpty()
out["ttyname"] = os.ttyname(s)
os.write(m, b"ping\n")
out["echo"] = os.read(s, 100).decode()
# a pty between two processes: a child writes on the slave, we read the
# master (a fresh pair: the first one echoes what was typed)
m, s = os.openpty()
pid = os.fork()
if pid == 0:
    os.close(m)
    os.write(s, b"from-child\n")
    os._exit(0)
os.close(s)
os.waitpid(pid, 0)
out["child"] = os.read(m, 100).decode().replace("\r", "")
# pty.fork: the child's stdio is a terminal
pid, fd = pty.fork()
if pid == 0:
    print("isatty", os.isatty(0), os.isatty(1))
    os._exit(0)
buf = b""
while True:
    try:
        chunk = os.read(fd, 100)
    except OSError:
        break
    if not chunk:
        break
    buf += chunk
os.waitpid(pid, 0)
out["fork"] = buf.decode().strip()
p = subprocess.run(["script", "-qc", "tty; echo via-script", "/dev/null"],
                   capture_output=True, text=True, timeout=60)
out["script"] = [p.returncode, p.stdout.replace("\r", "").split()]
# keystroke injection stays refused on a terminal of our own
m2, s2 = os.openpty()
# and so does changing the line discipline (n_gsm, n_hdlc: kernel bugs)
for name, req, arg in (("TIOCSTI", termios.TIOCSTI, b"x"), ("TIOCLINUX", 0x541C, b"x"),
                       ("TIOCSETD", termios.TIOCSETD, struct.pack("i", 0))):
    try:
        fcntl.ioctl(s2, req, arg)
        out[name] = 0
    except OSError as e:
        out[name] = e.errno
out["pts"] = sorted(os.listdir("/dev/pts"))
out["ptmx"] = os.readlink("/dev/ptmx")
print(json.dumps(out))
"""


def check_ptys(out):
    check(out["ttyname"].startswith("/dev/pts/"), out)
    eq(out["echo"], "ping\n", out)
    eq(out["child"], "from-child\n", out)
    eq(out["fork"], "isatty True True", out)
    eq(out["script"][0], 0, out)
    check(out["script"][1][0].startswith("/dev/pts/"), out)
    eq(out["script"][1][1], "via-script", out)
    eq(out["TIOCSTI"], 1, "TIOCSTI on a pty of our own: %r" % out)
    eq(out["TIOCLINUX"], 1, "TIOCLINUX on a pty of our own: %r" % out)
    eq(out["TIOCSETD"], 1, "TIOCSETD on a pty of our own: %r" % out)
    eq(out["ptmx"], "pts/ptmx", out)


@test
def ptys_work_in_a_run_and_tiocsti_stays_refused():
    check_ptys(run_json(PTY_CODE))


@test
def ptys_work_in_a_session():
    sh = JsonShell()
    try:
        # one statement, so that the shell gives one result
        r = sh.run("exec(%r)" % PTY_CODE)
        eq(r.get("status"), "ok", r)
        check_ptys(json.loads(r["logs"]["stdout"].strip().splitlines()[-1]))
    finally:
        sh.close()


def wait_pool(s, n, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st, h = s.request("GET", "/healthz")
        if st == 200 and h.get("pool_ready", 0) >= n:
            return
        time.sleep(0.3)
    raise AssertionError("pool never filled: %r" % (h,))


def execute(s, sid, code):
    st, j = s.request("POST", "/v1/sessions/%s/execute" % sid, {"code": code})
    check(st == 200 and j["status"] == "ok", "execute: %r %r" % (st, j))
    return j["logs"]["stdout"]


@test
def pool_cells_have_ptys_of_their_own():
    # two cells forked from one template: each mounts its own devpts
    # instance, so a pty one opens is not in the other's /dev/pts
    s = Serve("--pool", "2")
    try:
        wait_pool(s, 2)
        ids = []
        for _ in range(2):
            st, j = s.request("POST", "/v1/sessions", {})
            eq(st, 201, j)
            eq(j.get("pooled"), True, "not a pool cell: %r" % j)
            ids.append(j["id"])
        a, b = ids
        got = execute(s, a, "import os\nkeep = [os.openpty() for _ in range(3)]\n"
                            "print(sorted(os.listdir('/dev/pts')))")
        eq(got.strip(), "['0', '1', '2', 'ptmx']", "ptys in cell a")
        got = execute(s, b, "import os\nprint(sorted(os.listdir('/dev/pts')))")
        eq(got.strip(), "['ptmx']", "cell b sees cell a's ptys")
        check_ptys(json.loads(execute(s, b, PTY_CODE).strip().splitlines()[-1]))
        # the template's /dev/pts is not the cells' either
        got = execute(s, a, "import os\nprint(os.stat('/dev/pts').st_dev)")
        other = execute(s, b, "import os\nprint(os.stat('/dev/pts').st_dev)")
        check(got.strip() != other.strip(), "one devpts for two cells: %s" % got)
    finally:
        s.stop()


# ---- FIFOs and device nodes ------------------------------------------------

@test
def fifos_carry_data_and_device_nodes_stay_refused():
    code = r"""
import json, os, stat
out = {}
os.mkfifo("fifo")
out["is_fifo"] = stat.S_ISFIFO(os.stat("fifo").st_mode)
pid = os.fork()
if pid == 0:
    with open("fifo", "w") as f:
        f.write("through the fifo\n")
    os._exit(0)
with open("fifo") as f:
    out["data"] = f.read()
os.waitpid(pid, 0)
os.mknod("/tmp/fifo2", stat.S_IFIFO | 0o600)
out["mknod_fifo"] = stat.S_ISFIFO(os.stat("/tmp/fifo2").st_mode)
for name, mode in (("chr", stat.S_IFCHR), ("blk", stat.S_IFBLK)):
    try:
        os.mknod("dev-" + name, mode | 0o600, os.makedev(1, 3))
        out[name] = 0
    except OSError as e:
        out[name] = e.errno
    out[name + "_exists"] = os.path.exists("dev-" + name)
print(json.dumps(out))
"""
    out = run_json(code)
    eq(out["is_fifo"], True, out)
    eq(out["data"], "through the fifo\n", out)
    eq(out["mknod_fifo"], True, out)
    eq((out["chr"], out["blk"]), (1, 1), "device nodes not refused EPERM: %r" % out)
    eq((out["chr_exists"], out["blk_exists"]), (False, False), out)


# ---- /etc --------------------------------------------------------------------

@test
def services_protocols_and_ca_bundle_are_there():
    code = r"""
import json, socket, ssl
out = {"https": socket.getservbyname("https"),
       "tcp": socket.getprotobyname("tcp"),
       "gai": sorted({a[4][1] for a in socket.getaddrinfo("localhost", "https")}),
       "cas": ssl.create_default_context().cert_store_stats()["x509_ca"]}
print(json.dumps(out))
"""
    out = run_json(code)
    eq(out["https"], 443, out)
    eq(out["tcp"], 6, out)
    eq(out["gai"], [443], out)
    check(out["cas"] > 10, "no CA certificates: %r" % out)


@test
def passwd_lists_only_ids_the_sandbox_has():
    code = r"""
import json
uids = [int(l.split(":")[2]) for l in open("/etc/passwd") if l.strip()]
gids = [int(l.split(":")[2]) for l in open("/etc/group") if l.strip()]
mapped = [int(l.split()[0]) for l in open("/proc/self/uid_map")]
gmapped = [int(l.split()[0]) for l in open("/proc/self/gid_map")]
over = int(open("/proc/sys/fs/overflowuid").read())
gover = int(open("/proc/sys/fs/overflowgid").read())
print(json.dumps([uids, gids, mapped, gmapped, over, gover]))
"""
    uids, gids, mapped, gmapped, over, gover = run_json(code)
    check(1000 in uids and 1000 in gids, (uids, gids))
    eq(sorted(set(uids) - set(mapped) - {over}), [], "unusable uids in /etc/passwd")
    eq(sorted(set(gids) - set(gmapped) - {gover}), [], "unusable gids in /etc/group")


# ---- system calls decided one by one --------------------------------------

@test
def personality_query_and_new_calls_work():
    code = r"""
import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(nr, *a):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(x) for x in a])
    return ["ok", r] if r >= 0 else ["err", ctypes.get_errno()]
open("f", "w").close()
path = ctypes.c_char_p(b"f")
how = (ctypes.c_uint64 * 3)(os.O_RDONLY, 0, 0)
out = {
  "query": call(135, 0xffffffff),
  "linux32": call(135, 0x0008),
  "back": call(135, 0),
  "no_aslr": call(135, 0x0040000),
  "openat2": call(437, -100, ctypes.cast(path, ctypes.c_void_p).value,
                  ctypes.addressof(how), 24),
  "fchmodat2": call(452, -100, ctypes.cast(path, ctypes.c_void_p).value, 0o600, 0),
  "io_setup": call(206, 1, 0),
}
r, w = os.pipe()
buf = ctypes.create_string_buffer(b"spliced")
iov = (ctypes.c_void_p * 2)(ctypes.cast(buf, ctypes.c_void_p).value, 7)
out["vmsplice"] = call(278, w, ctypes.addressof(iov), 1, 0)
out["vmsplice_data"] = os.read(r, 7).decode() if out["vmsplice"][0] == "ok" else None
out["mode"] = oct(os.stat("f").st_mode & 0o777)
print(json.dumps(out))
"""
    out = run_json(code)
    eq(out["query"][0], "ok", out)
    eq(out["linux32"][0], "ok", out)
    eq(out["no_aslr"], ["err", 38], "personality(ADDR_NO_RANDOMIZE) not refused: %r" % out)
    eq(out["openat2"][0], "ok", out)
    eq(out["fchmodat2"], ["ok", 0], out)
    eq(out["mode"], "0o600", out)
    eq(out["vmsplice"], ["ok", 7], out)
    eq(out["vmsplice_data"], "spliced", out)
    eq(out["io_setup"], ["err", 38], "io_setup is refused ENOSYS (host-wide aio-nr): %r" % out)


# ---- limits made visible ---------------------------------------------------

CGROUP_CODE = r"""
import json, os
out = {"meminfo": {}, "cgroup": {}, "write": {}}
for line in open("/proc/meminfo"):
    k, v = line.split(":")
    out["meminfo"][k] = int(v.split()[0])
root = "/sys/fs/cgroup"
v2 = os.path.exists(root + "/cgroup.controllers")
out["v2"] = v2
if v2:
    mem, pids, cpu = root + "/memory.max", root + "/pids.max", root + "/cpu.max"
else:
    mem = root + "/memory/memory.limit_in_bytes"
    pids = root + "/pids/pids.max"
    cpu = root + "/cpu/cpu.cfs_quota_us"
for k, p in (("memory", mem), ("pids", pids), ("cpu", cpu)):
    try:
        out["cgroup"][k] = open(p).read().split()[0]
    except OSError as e:
        out["cgroup"][k] = "errno %d" % e.errno
    try:
        with open(p, "w") as f:
            f.write("max\n" if k != "cpu" else "-1\n")
        out["write"][k] = 0
    except OSError as e:
        out["write"][k] = e.errno
try:
    os.mkdir(os.path.join(os.path.dirname(mem), "escape"))
    out["mkdir"] = 0
except OSError as e:
    out["mkdir"] = e.errno
# every directory under /sys/fs/cgroup but the hierarchies' roots (v1:
# /sys/fs/cgroup/<controller>; v2: /sys/fs/cgroup): none, since each root
# is the sandbox's own cgroup and it has made none below it
tops = {root} if v2 else {root} | {os.path.join(root, d) for d in os.listdir(root)}
out["subdirs"] = sorted(d for d, ds, fs in os.walk(root) if d not in tops)
out["sys"] = sorted(os.listdir("/sys"))
out["self_cgroup"] = sorted({l.strip().split(":", 2)[2] for l in open("/proc/self/cgroup")})
out["nproc"] = len(os.sched_getaffinity(0))
out["cpu_count"] = os.cpu_count()
out["host_cpus"] = HOST_CPUS
print(json.dumps(out))
""".replace("HOST_CPUS", str(len(os.sched_getaffinity(0))))

MIB = 1024 * 1024


def check_limits_visible(out, memory, pids, quota_us):
    mi = out["meminfo"]
    eq(mi["MemTotal"], memory // 1024, "MemTotal under --memory: %r" % mi)
    eq(mi["MemAvailable"], memory // 1024, "MemAvailable at the start: %r" % mi)
    eq(mi["MemFree"], memory // 1024, mi)
    eq((mi.get("SwapTotal", 0), mi.get("SwapFree", 0)), (0, 0), mi)
    cg = out["cgroup"]
    eq(int(cg["memory"]), memory, "memory limit in /sys/fs/cgroup: %r" % cg)
    eq(int(cg["pids"]), pids, cg)
    if quota_us is not None:
        eq(int(cg["cpu"]), quota_us, cg)
    EROFS, EACCES = 30, 13
    for k, e in out["write"].items():
        check(e in (EROFS, EACCES), "write to the %s cgroup: %r" % (k, out["write"]))
    check(out["mkdir"] in (EROFS, EACCES), "mkdir in /sys/fs/cgroup: %r" % out["mkdir"])
    eq(out["subdirs"], [], "more than the sandbox's own cgroups under /sys/fs/cgroup")
    eq(out["sys"], ["devices", "fs"], "/sys beyond the cgroups and the CPU view")
    eq(out["self_cgroup"], ["/"], "/proc/self/cgroup")


@test
def memory_limit_and_cgroups_visible_in_a_run():
    out = run_json(CGROUP_CODE, "--memory", "300M", "--pids", "77", "--cpus", "1")
    check_limits_visible(out, 300 * MIB, 77, 100000)


@test
def cpu_count_follows_the_cpu_quota():
    out = run_json(CGROUP_CODE, "--memory", "300M", "--cpus", "1")
    if out["host_cpus"] >= 2:
        eq(out["nproc"], 1, "sched_getaffinity under --cpus 1: %r" % out)
        eq(out["cpu_count"], 1, "os.cpu_count() under --cpus 1: %r" % out)
    out = run_json(CGROUP_CODE, "--memory", "300M", "--cpus", "0.3")
    if out["host_cpus"] >= 2:
        eq(out["nproc"], 1, "ceil(0.3) is 1: %r" % out)
    # a quota worth more CPUs than there are: all of them
    out = run_json(CGROUP_CODE, "--memory", "300M", "--cpus", str(out["host_cpus"] + 0.5))
    eq(out["nproc"], out["host_cpus"], out)
    eq(out["cpu_count"], out["host_cpus"], out)


@test
def memory_limit_visible_to_node():
    import shutil
    node = shutil.which("node")
    check(node, "node is not installed (scripts/setup.sh installs it)")
    r = run_code("const os = require('os');\n"
                  "console.log(JSON.stringify({total: os.totalmem(), cpus: os.availableParallelism ?"
                  " os.availableParallelism() : null}));\n",
                  "--memory", "256M", "--cpus", "1", lang="javascript", timeout=120)
    eq(r.json["status"], "ok", r)
    got = json.loads(r.json["logs"]["stdout"].strip().splitlines()[-1])
    eq(got["total"], 256 * MIB, "os.totalmem() under --memory 256M: %r" % got)
    if os.cpu_count() >= 2 and got["cpus"] is not None:
        eq(got["cpus"], 1, got)


@test
def pool_cells_see_their_own_limits():
    s = Serve("--pool", "1")
    try:
        wait_pool(s, 1)
        st, j = s.request("POST", "/v1/sessions", {})
        eq(st, 201, j)
        eq(j.get("pooled"), True, "not a pool cell: %r" % j)
        out = json.loads(execute(s, j["id"], CGROUP_CODE).strip().splitlines()[-1])
        # a session's default limits (README): 512 MiB, 128 pids, 1 CPU
        check_limits_visible(out, 512 * MIB, 128, 100000)
        if out["host_cpus"] >= 2:
            eq((out["nproc"], out["cpu_count"]), (1, 1), out)
    finally:
        s.stop()


CGROUP2_MAGIC = 0x63677270


def v2_root():
    """This host's cgroup v2 hierarchy (see test_cgroup_v2.py), or None."""
    for d in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
        try:
            import subprocess
            out = subprocess.run(["stat", "-f", "-c", "%t", d], capture_output=True,
                                 text=True).stdout.strip()
        except OSError:
            continue
        if out and int(out, 16) == CGROUP2_MAGIC:
            return d
    return None


@test
def cgroup_v2_layout_where_the_sandbox_has_a_v2_cgroup():
    # the v2 path (on this v1 host: a CODECELL_CGROUP in the empty v2
    # hierarchy): cgroup2 read-only at /sys/fs/cgroup, rooted at the
    # sandbox's own cgroup
    root = v2_root()
    check(root is not None, "no cgroup v2 hierarchy on this host")
    d = os.path.join(root, "codecell-compat-%d" % os.getpid())
    os.makedirs(d, exist_ok=True)
    try:
        env = dict(os.environ, CODECELL_CGROUP=d)
        code = r"""
import json, os
out = {"mounts": [l.split(" - ")[1].split()[0] + " " + l.split()[4] + " " + l.split()[5].split(",")[0]
                  for l in open("/proc/self/mountinfo") if "cgroup" in l.split(" - ")[1].split()[0]],
       "controllers": os.path.exists("/sys/fs/cgroup/cgroup.controllers"),
       "dirs": [x for x in os.listdir("/sys/fs/cgroup")
                if os.path.isdir(os.path.join("/sys/fs/cgroup", x))]}
try:
    open("/sys/fs/cgroup/cgroup.procs", "w").write("0")
    out["write"] = 0
except OSError as e:
    out["write"] = e.errno
print(json.dumps(out))
"""
        r = run_code(code, env=env, timeout=120)
        eq(r.json["status"], "ok", r)
        out = json.loads(r.json["logs"]["stdout"].strip().splitlines()[-1])
        eq(out["mounts"], ["cgroup2 /sys/fs/cgroup ro"], out)
        eq(out["controllers"], True, out)
        eq(out["dirs"], [], "more than the sandbox's own cgroup: %r" % out)
        eq(out["write"], 30, "write to cgroup.procs: %r" % out)
    finally:
        # codecell removes its sandbox's cgroup just after it exits
        await_empty(lambda: [x for x in os.listdir(d) if x.startswith("sb-")], timeout=10)
        for x in os.listdir(d):
            if x.startswith("sb-"):
                os.rmdir(os.path.join(d, x))
        os.rmdir(d)


def template_pids(server_pid):
    """Processes below the server whose command line says --template."""
    out, todo = [], [server_pid]
    while todo:
        for k in children(todo.pop()):
            todo.append(k)
            try:
                with open("/proc/%d/cmdline" % k, "rb") as f:
                    if b"\0--template" in f.read():
                        out.append(k)
            except OSError:
                pass
    return out


@test
def pool_cells_spread_over_the_cpus():
    # the template, under the default 1-CPU quota, keeps every CPU (its
    # cells inherit its affinity); each cell is pinned to the CPU the
    # fewest of the server's sandboxes have, so two cells under a 1-CPU
    # quota on a 2-CPU host do not share one
    s = Serve("--pool", "2")
    try:
        wait_pool(s, 2)
        tpls = template_pids(s.pid)
        check(tpls, "no template process found")
        host = os.sched_getaffinity(0)
        for pid in tpls:
            eq(os.sched_getaffinity(pid), host, "the template's CPUs (pid %d)" % pid)
        cpus = []
        for _ in range(2):
            st, j = s.request("POST", "/v1/sessions", {})
            eq(st, 201, j)
            eq(j.get("pooled"), True, "not a pool cell: %r" % j)
            cpus.append(execute(s, j["id"], "import os\nprint(sorted(os.sched_getaffinity(0)))")
                        .strip())
        if len(host) >= 2:
            check(cpus[0] != cpus[1], "two cells on one CPU: %r" % cpus)
            for c in cpus:
                eq(len(json.loads(c)), 1, "a cell under a 1-CPU quota: %r" % cpus)
    finally:
        s.stop()


if __name__ == "__main__":
    main()
