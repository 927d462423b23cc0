"""Information leaks and mounts: the environment is an allowlist, the
host's names, processes, mounts, IPC objects, network and cgroups are not
visible; the root is read-only but for /tmp and the workspace, writable
mounts are nosuid,nodev, /dev is minimal, /sys is absent; nothing started
inside outlives the run or shows on the host (sandbox-anchors.md section
11, rows 9, 17, 18)."""
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import (CODECELL, codecell, run_code, test, main, check, eq,  # noqa: E402
                    leftovers, tmpdir, write, children, await_empty, HANG_S, MountNs, Run)

SECRET = "cctest-secret-0d6f1c"


def py(code, *args, env=None, user=None):
    r = run_code(code, *args, env=env, user=user)
    check(r.stdout.startswith("{"), "no JSON result: %r" % (r,))
    eq(r.json["status"], "ok", "python run: %r" % (r.json.get("error"),))
    return r.json["logs"]["stdout"]


def sh(script, *args, env=None):
    r = codecell("run", "--json", "--lang", "bash", *args, "-", stdin=script, env=env)
    check(r.stdout.startswith("{"), "no JSON result: %r" % (r,))
    return r


def host_env(**extra):
    env = dict(os.environ)
    env["CODECELL_TEST_SECRET"] = SECRET
    env["AWS_SECRET_ACCESS_KEY"] = SECRET
    env.update(extra)
    return env


# ---- environment ---------------------------------------------------------

# src/engine/run.c build_envp
BASE_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/home/user",
    "USER": "user",
    "LANG": "C.UTF-8",
    "TZ": "UTC",
    "TMPDIR": "/tmp",
    "MPLBACKEND": "Agg",
    "MPLCONFIGDIR": "/tmp/.matplotlib",
    "XDG_CACHE_HOME": "/tmp/.cache",
}


@test
def python_environment_is_the_allowlist():
    out = py("import os, json\nprint(json.dumps(dict(os.environ)))\n",
             "--env", "CCTEST_ASKED=yes", env=host_env())
    env = json.loads(out)
    want = dict(BASE_ENV, CCTEST_ASKED="yes")
    eq(env, want, "python's environment")


@test
def bash_environment_is_the_allowlist():
    r = sh("env -0\n", "--env", "CCTEST_ASKED=yes", env=host_env())
    eq(r.json["status"], "ok", "bash run")
    env = dict(kv.split("=", 1) for kv in r.json["logs"]["stdout"].split("\0") if kv)
    # what bash itself adds for the programs it runs
    shell_own = {"PWD", "SHLVL", "_", "OLDPWD"}
    extra = set(env) - set(BASE_ENV) - {"CCTEST_ASKED"} - shell_own
    check(not extra, "unexpected variables in bash's children: %r" % sorted(extra))
    for k, v in BASE_ENV.items():
        eq(env.get(k), v, "bash: %s" % k)
    eq(env.get("CCTEST_ASKED"), "yes", "--env variable")


@test
def javascript_environment_is_the_allowlist():
    r = codecell("run", "--json", "--lang", "javascript", "-",
                 stdin="console.log(JSON.stringify(process.env))\n", env=host_env())
    eq(r.json["status"], "ok", "node run: %r" % (r.json.get("error"),))
    eq(json.loads(r.json["logs"]["stdout"]), BASE_ENV, "node's environment")


@test
def host_secret_nowhere_inside():
    # not in any environ or cmdline readable inside, nor in any file under
    # /etc, /tmp, the workspace.  (The script is a file in the workspace:
    # it holds the secret in hex only, so the search cannot find itself.)
    out = py(r"""
import os, json
secret = bytes.fromhex(%r)
hits = []
for p in os.listdir("/proc"):
    if p.isdigit() or p == "self":
        for leaf in ("environ", "cmdline"):
            try:
                if secret in open("/proc/%%s/%%s" %% (p, leaf), "rb").read():
                    hits.append("/proc/%%s/%%s" %% (p, leaf))
            except OSError:
                pass
for top in ("/etc", "/tmp", "/home"):
    for d, _, files in os.walk(top):
        for f in files:
            try:
                if secret in open(os.path.join(d, f), "rb").read():
                    hits.append(os.path.join(d, f))
            except OSError:
                pass
print(json.dumps(hits))
""" % SECRET.encode().hex(), env=host_env())
    eq(json.loads(out), [], "host secret found inside")


@test
def host_command_line_not_visible():
    # The init (PID 1 inside) is a clone of codecell, so /proc/1/cmdline
    # (readable by anyone) holds the supervisor's argv: host paths of the
    # code file, --file, --workspace, --db, and every --env pair.
    d = tmpdir()
    try:
        code = write(os.path.join(d, "cctest_hostpath_marker.py"), r"""
import os, json
seen = {}
for p in os.listdir("/proc"):
    if p.isdigit():
        try:
            seen[p] = open("/proc/%s/cmdline" % p, "rb").read().replace(b"\0", b" ").decode()
        except OSError:
            pass
print(json.dumps(seen))
""")
        r = codecell("run", "--json", "--env", "CCTEST_ONLY_FOR_THE_PROGRAM=1", code)
        eq(r.json["status"], "ok", "run: %r" % (r,))
        seen = json.loads(r.json["logs"]["stdout"])
        # the file's base name is passed on on purpose (tracebacks show
        # it); its host directory and codecell's own path are not
        leaks = {p: c[:300] for p, c in seen.items()
                 if d in c or os.path.dirname(CODECELL) in c}
        check(not leaks, "host command line visible inside: %r" % leaks)
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---- names -----------------------------------------------------------------


@test
def hostname_is_codecell():
    out = py("import os, socket, json\n"
             "print(json.dumps([socket.gethostname(), os.uname().nodename,"
             " open('/proc/sys/kernel/hostname').read().strip(),"
             " open('/etc/hostname').read().strip()]))\n")
    eq(json.loads(out), ["codecell"] * 4, "hostname")


@test
def host_domainname_not_inherited():
    # Run codecell from a private UTS namespace whose NIS domain name is a
    # marker (the real host is left alone).  The sandbox's own UTS
    # namespace is copied from codecell's: unless codecell sets the domain
    # name, the host's leaks in.
    marker = "cctest-leak.example"
    script = ("domainname; cat /proc/sys/kernel/domainname; "
              "python3 -c 'import os; print(os.uname().nodename)'\n")
    p = subprocess.run(
        ["unshare", "--uts", "sh", "-c",
         'hostname cctest-host && domainname "$1" && exec "$2" run --lang bash -',
         "sh", marker, CODECELL],
        input=script, capture_output=True, text=True, timeout=60)
    eq(p.returncode, 0, "codecell in a private UTS namespace: %r" % (p.stderr,))
    lines = p.stdout.split()
    eq(len(lines), 3, "output %r" % p.stdout)
    eq(lines[2], "codecell", "hostname")
    check(marker not in p.stdout, "the host's NIS domain name leaks in: %r" % lines[:2])


# ---- processes ---------------------------------------------------------------


@test
def proc_shows_only_sandbox_processes():
    marker = "61.%d" % os.getpid()
    host = subprocess.Popen(["sleep", marker])
    try:
        out = py(r"""
import os, json
procs = {}
for p in os.listdir("/proc"):
    if p.isdigit():
        try:
            procs[p] = open("/proc/%s/cmdline" % p, "rb").read().replace(b"\0", b" ").decode()
        except OSError as e:
            procs[p] = "?" + str(e.errno)
print(json.dumps(procs))
""")
        procs = json.loads(out)
        check(all(marker not in c for c in procs.values()),
              "host process visible inside: %r" % procs)
        check(str(host.pid) not in procs or marker not in procs[str(host.pid)],
              "host pid %d visible: %r" % (host.pid, procs))
        check("1" in procs, "no pid 1 inside: %r" % procs)
        # the init, the python program: nothing else
        check(len(procs) <= 3, "more processes than the sandbox's own: %r" % procs)
        check(max(int(p) for p in procs) < 50, "host-sized pids inside: %r" % procs)
    finally:
        host.kill()
        host.wait()


@test
def nothing_started_inside_survives_the_run():
    tag = "4242.%d" % os.getpid()
    script = r"""
setsid sleep %(t)s1 >/dev/null 2>&1 < /dev/null &
( sleep %(t)s2 >/dev/null 2>&1 < /dev/null & ) &
nohup sleep %(t)s3 >/dev/null 2>&1 &
python3 -c 'import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "%(t)s4"])
' &
for i in $(seq 40); do
  n=0
  for p in /proc/[0-9]*; do
    [ "$(cat $p/comm 2>/dev/null)" = sleep ] && grep -q %(t)s $p/cmdline 2>/dev/null && n=$((n+1))
  done
  [ $n -ge 4 ] && break
  sleep 0.05
done
echo "inside=$n"
""" % {"t": tag}
    before = set(leftovers())
    r = sh(script)
    eq(r.json["status"], "ok", "run: %r" % (r,))
    # all four daemons were alive inside, so the check below is real
    check("inside=4" in r.json["logs"]["stdout"], "daemons not running inside: %r" % (r,))
    # they sleep for over an hour: a slow machine waits here, a broken
    # kill still fails
    deadline = time.monotonic() + HANG_S
    alive = []
    while time.monotonic() < deadline:
        alive = []
        for p in os.listdir("/proc"):
            if not p.isdigit():
                continue
            try:
                with open("/proc/%s/cmdline" % p, "rb") as f:
                    if tag.encode() in f.read():
                        alive.append(p)
            except OSError:
                pass
        if not alive:
            break
        time.sleep(0.05)
    for p in alive:  # do not leave them behind for the next test
        try:
            os.kill(int(p), 9)
        except OSError:
            pass
    check(not alive, "processes started inside still run on the host: %r" % alive)
    # other people's sandboxes may be running: only new, ownerless ones count
    left = await_empty(lambda: [c for c in leftovers()
                                if c not in before and not _owner_alive(c)])
    eq(left, [], "cgroups left behind")


def _owner_alive(cgdir):
    """sb-PID-N: is codecell PID still running?"""
    m = re.match(r"sb-(\d+)-", os.path.basename(cgdir))
    return bool(m) and os.path.exists("/proc/%s" % m.group(1))


def _pids_with(tag):
    found = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open("/proc/%s/cmdline" % p, "rb") as f:
                    if tag.encode() in f.read():
                        found.append(int(p))
            except OSError:
                pass
    return found


@test
def sandbox_dies_with_its_supervisor():
    # codecell killed with SIGKILL (OOM killer, crash, operator) cannot
    # clean up; the sandbox must not outlive it, or the program runs on
    # with no wall-clock limit.  The init asks for PR_SET_PDEATHSIG, but
    # it does so before changing its uid, and a change of effective uid
    # clears the parent-death signal (prctl(2)).
    errors = []
    for user in (None, 1000):
        who = "as root" if user is None else "as uid %d" % user
        # the program sleeps for over an hour (the tag is its duration):
        # however long the polls below wait, it cannot end on its own
        tag = "4243.%d%d" % (os.getpid(), 7 if user is None else 8)
        cmd = [CODECELL, "run", "--lang", "bash", "-"]
        if user is not None:  # setpriv execs codecell: same pid
            cmd = ["setpriv", "--reuid=%d" % user, "--regid=%d" % user,
                   "--clear-groups"] + cmd
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, text=True)
        p.stdin.write("sleep %s\n" % tag)
        p.stdin.close()
        survivors, inits = [], []
        try:
            deadline = time.monotonic() + HANG_S
            while time.monotonic() < deadline and not _pids_with("sleep\0" + tag):
                time.sleep(0.02)
            check(_pids_with("sleep\0" + tag), "the program never started %s" % who)
            inits = children(p.pid)  # the sandbox's init, to clean up after
            p.kill()
            p.wait()
            deadline = time.monotonic() + HANG_S
            while time.monotonic() < deadline:
                survivors = _pids_with("sleep\0" + tag)
                if not survivors:
                    break
                time.sleep(0.05)
        finally:
            # killing the init takes its whole PID namespace
            for pid in inits + survivors:
                try:
                    os.kill(pid, 9)
                except OSError:
                    pass
            # the killed codecell could not remove its cgroups: do it (the
            # killed tasks may take a moment to leave them)
            for _ in range(40):
                mine = [c for c in leftovers()
                        if os.path.basename(c).startswith("sb-%d-" % p.pid)]
                for c in mine:
                    try:
                        os.rmdir(c)
                    except OSError:
                        pass
                if not mine:
                    break
                time.sleep(0.05)
        if survivors:
            errors.append("%s: the sandbox's program (host pids %r) outlived codecell "
                          "killed with SIGKILL" % (who, survivors))
    check(not errors, "; ".join(errors))


# ---- mounts ------------------------------------------------------------------


def mountinfo():
    out = py("print(open('/proc/self/mountinfo').read())\n")
    mounts = []
    for line in out.strip().splitlines():
        pre, _, post = line.partition(" - ")
        f = pre.split()
        g = post.split()
        mounts.append({"root": f[3], "point": f[4], "opts": f[5].split(","),
                       "fstype": g[0], "source": g[1], "super": g[2] if len(g) > 2 else "",
                       "line": line})
    check(len(mounts) >= 5, "mountinfo too short: %r" % out)
    return mounts


DEV_NODES = {"null": (1, 3), "zero": (1, 5), "full": (1, 7), "random": (1, 8),
             "urandom": (1, 9)}


# host details /proc would show, masked by an empty read-only file
# (src/sandbox/rootfs.c, proc_masks)
PROC_MASKS = ("/proc/cmdline", "/proc/config.gz", "/proc/interrupts", "/proc/softirqs",
              "/proc/locks", "/proc/diskstats", "/proc/partitions", "/proc/swaps",
              "/proc/vmstat", "/proc/zoneinfo", "/proc/buddyinfo", "/proc/pagetypeinfo",
              "/proc/iomem", "/proc/ioports", "/proc/pressure/cpu", "/proc/pressure/io",
              "/proc/pressure/memory", "/proc/pressure/irq", "/proc/sys/fs/dentry-state",
              "/proc/sys/fs/dentry-negative", "/proc/sys/fs/inode-nr", "/proc/sys/fs/inode-state",
              "/proc/sys/fs/file-nr", "/proc/sys/fs/aio-nr", "/proc/sys/kernel/pty/nr",
              "/proc/sys/kernel/tainted", "/proc/sys/kernel/hung_task_detect_count")
# directories masked by an empty read-only tmpfs, and files replaced by the
# sandbox's own (test_host_identity.py checks their content)
PROC_DIR_MASKS = ("/proc/fs", "/proc/bus", "/proc/irq", "/proc/driver", "/proc/sys/fs/quota")
PROC_VIRTUAL = ("/proc/sys/kernel/random/boot_id", "/proc/stat", "/proc/loadavg",
                "/proc/meminfo")
CGROUP_FS = ("cgroup", "cgroup2")


@test
def proc_masks_hide_host_boot_arguments():
    r = run_code("import os\n"
                 "for p in %r:\n"
                 "    print(p, os.path.exists(p) and repr(open(p, 'rb').read()))\n"
                 "    try:\n"
                 "        open(p, 'w').write('x')\n"
                 "        print('WRITABLE', p)\n"
                 "    except OSError as e:\n"
                 "        print('ro', e.errno)\n" % (PROC_MASKS,))
    eq(r.json["status"], "ok", r.stderr)
    out = r.json["logs"]["stdout"]
    check("WRITABLE" not in out, out)
    for p in PROC_MASKS:
        if os.path.exists(p):
            check("%s b''" % p in out, "host %s visible: %r" % (p, out))


def is_site_pyc(m):
    """codecell's compiled sitecustomize, a file of the sandbox's own root
    tmpfs (under /etc there), bound over the host's (rootfs.c)."""
    return (re.fullmatch(r"/usr/lib/python3\.\d+/__pycache__/sitecustomize\.cpython-3\d+\.pyc",
                         m["point"]) is not None
            and re.fullmatch(r"/etc/python3\.\d+/__pycache__/sitecustomize\.cpython-3\d+\.pyc",
                             m["root"]) is not None
            and m["fstype"] == "tmpfs")


@test
def mountinfo_shows_no_host_paths():
    ms = mountinfo()
    for m in ms:
        for bad in ("/work", "/root", "/home/", "/tmp/", "/var/", "/run/", "/srv", "/opt",
                    "cctest"):
            check(bad not in m["root"] and bad not in m["super"],
                  "host path %r in mount: %s" % (bad, m["line"]))
        # a bind's root is a path in the host filesystem: only /usr, /etc
        # entries and the device nodes may appear
        ok_root = (m["root"] == "/" or m["root"] == "/usr" or m["root"].startswith("/usr/")
                   or m["root"].startswith("/etc/")
                   or m["root"] in {"/" + n for n in DEV_NODES})
        check(ok_root, "unexpected host subtree bound: %s" % m["line"])
        ok_point = (m["point"] in ("/", "/usr", "/proc", "/dev", "/tmp", "/home/user",
                                   "/dev/pts")
                    or m["point"].startswith("/etc/")
                    or (m["point"].startswith("/sys/fs/cgroup") and m["fstype"] in CGROUP_FS)
                    or m["point"] in {"/dev/" + n for n in DEV_NODES}
                    or m["point"] in PROC_MASKS or m["point"] in PROC_DIR_MASKS
                    or m["point"] in PROC_VIRTUAL
                    or is_site_pyc(m))
        check(ok_point, "unexpected mount point: %s" % m["line"])
    points = [m["point"] for m in ms]
    for want in ("/", "/usr", "/proc", "/dev", "/tmp", "/home/user"):
        check(want in points, "%s not mounted: %r" % (want, points))
    eq(len(points), len(set(points)), "mounts stacked on one another: %r" % points)


@test
def writable_mounts_are_nosuid_nodev():
    for m in mountinfo():
        if "rw" not in m["opts"]:
            continue
        if m["point"] in {"/dev/" + n for n in DEV_NODES}:
            # a single device node bound from the host's devtmpfs: it has
            # to stay a device; checked in dev_is_minimal
            eq(m["fstype"], "devtmpfs", "device bind %s" % m["line"])
            continue
        if m["point"] == "/dev/pts":
            # the sandbox's own devpts instance (issue 13): its ptys are
            # device nodes, which nodev would make unopenable (bwrap and
            # Docker mount it nosuid,noexec too); it holds nothing else
            eq(m["fstype"], "devpts", m["line"])
            check("nosuid" in m["opts"] and "noexec" in m["opts"], m["line"])
            continue
        check("nosuid" in m["opts"] and "nodev" in m["opts"],
              "writable mount without nosuid,nodev: %s" % m["line"])
    # and the ones that should be writable are
    opts = {m["point"]: m["opts"] for m in mountinfo()}
    check("rw" in opts["/tmp"] and "rw" in opts["/home/user"], "tmp/workspace: %r" % opts)
    for p in ("/", "/usr", "/dev"):
        check("ro" in opts[p], "%s not read-only: %r" % (p, opts[p]))
    for p, o in opts.items():
        if p.startswith("/sys"):
            check("ro" in o, "%s not read-only: %r" % (p, o))


@test
def dev_is_minimal():
    out = py(r"""
import os, json, stat
d = {}
for n in sorted(os.listdir("/dev")):
    st = os.lstat("/dev/" + n)
    if stat.S_ISLNK(st.st_mode):
        d[n] = ["link", os.readlink("/dev/" + n)]
    elif stat.S_ISCHR(st.st_mode):
        d[n] = ["chr", os.major(st.st_rdev), os.minor(st.st_rdev)]
    else:
        d[n] = ["other", oct(st.st_mode)]
print(json.dumps(d))
""")
    d = json.loads(out)
    want = {n: ["chr", ma, mi] for n, (ma, mi) in DEV_NODES.items()}
    want.update({"fd": ["link", "/proc/self/fd"], "stdin": ["link", "/proc/self/fd/0"],
                 "stdout": ["link", "/proc/self/fd/1"], "stderr": ["link", "/proc/self/fd/2"],
                 "shm": ["link", "/tmp"],
                 # the sandbox's own ptys (issue 13), nothing of the host's
                 "ptmx": ["link", "pts/ptmx"], "pts": ["other", "0o40755"]})
    eq(d, want, "/dev")
    eq(py("import os; print(sorted(os.listdir('/dev/pts')))").strip(), "['ptmx']",
       "/dev/pts of a new sandbox")


@test
def root_usr_etc_dev_are_read_only():
    out = py(r"""
import errno, json, os
res = {}
def t(name, fn):
    try:
        fn()
        res[name] = "OK"
    except OSError as e:
        res[name] = errno.errorcode.get(e.errno, str(e.errno))
t("create /x", lambda: open("/x", "w"))
t("mkdir /d", lambda: os.mkdir("/d"))
t("create /usr/x", lambda: open("/usr/x", "w"))
t("mkdir /usr/lib/d", lambda: os.mkdir("/usr/lib/d"))
t("write /usr/bin/python3", lambda: open("/usr/bin/python3", "r+b"))
t("create /etc/x", lambda: open("/etc/x", "w"))
t("write /etc/passwd", lambda: open("/etc/passwd", "a"))
t("chmod /etc/passwd", lambda: os.chmod("/etc/passwd", 0o666))
t("rename /etc/hosts", lambda: os.rename("/etc/hosts", "/etc/hosts2"))
t("create /etc/fonts/x", lambda: open("/etc/fonts/x", "w"))
t("create /dev/x", lambda: open("/dev/x", "w"))
t("symlink /dev/y", lambda: os.symlink("/tmp", "/dev/y"))
t("unlink /dev/null", lambda: os.unlink("/dev/null"))
t("create /root/x", lambda: open("/root/x", "w"))
t("create /home/x", lambda: open("/home/x", "w"))
t("create /tmp/x", lambda: open("/tmp/x", "w"))
t("create ./x", lambda: open("x", "w"))
print(json.dumps(res))
""")
    res = json.loads(out)
    for k, v in res.items():
        if k in ("create /tmp/x", "create ./x"):
            eq(v, "OK", k)
        elif k == "write /usr/bin/python3":
            # owned by the host's root: permission fails before the mount
            check(v in ("EROFS", "EACCES"), "%s: %s" % (k, v))
        else:
            eq(v, "EROFS", k)


@test
def sys_has_only_the_cgroups_and_no_fs_can_be_mounted():
    # /sys holds only /sys/fs/cgroup: the sandbox's own cgroups, read-only
    # (issue 13; test_sandbox_compat.py checks what they show), and the
    # files of /sys/devices/system/cpu, copied into the read-only root
    # (test_host_identity.py).  No sysfs, and nothing can be mounted.
    r = sh(r"""
ls /sys; ls /sys/fs; ls /sys/devices; ls /sys/devices/system
grep -E ' - (sysfs|debugfs|securityfs|configfs|bpf|tracefs) ' /proc/self/mountinfo && echo fs-present
grep -E ' - cgroup2? ' /proc/self/mountinfo | grep -vE ' /sys/fs/cgroup(/[a-z,]+)? ro,' && echo cgroup-elsewhere
mkdir -p /tmp/cg && mount -t cgroup2 none /tmp/cg 2>/dev/null && echo mounted-cgroup2
mount -t cgroup -o memory none /tmp/cg 2>/dev/null && echo mounted-cgroup1
mount -t sysfs none /tmp/cg 2>/dev/null && echo mounted-sysfs
mount -o remount,rw /sys/fs/cgroup/memory 2>/dev/null && echo remounted
echo end
""")
    out = r.json["logs"]["stdout"].split()
    eq(out, ["devices", "fs", "cgroup", "system", "cpu", "end"],
       "sysfs/cgroupfs reachable: %r" % (r,))


@test
def cgroup_paths_are_namespaced():
    out = py("print(open('/proc/self/cgroup').read())\n")
    lines = [l for l in out.splitlines() if l.strip()]
    check(lines, "empty /proc/self/cgroup")
    for line in lines:
        hid, ctrl, path = line.split(":", 2)
        eq(path, "/", "cgroup path for %s (cgroup namespace)" % (ctrl or "v2"))


@test
def ipc_objects_of_the_host_invisible():
    p = subprocess.run(["ipcmk", "-M", "4096"], capture_output=True, text=True)
    m = re.search(r"id:\s*(\d+)", p.stdout)
    check(m, "ipcmk failed: %r" % (p.stdout + p.stderr))
    shmid = m.group(1)
    try:
        r = sh("cat /proc/sysvipc/shm /proc/sysvipc/msg /proc/sysvipc/sem | grep -vc key\n")
        eq(r.json["logs"]["stdout"].split(), ["0"], "host SysV IPC visible: %r" % (r,))
    finally:
        subprocess.run(["ipcrm", "-m", shmid], capture_output=True)


@test
def network_is_loopback_only():
    out = py(r"""
import json
devs = [l.split(":")[0].strip() for l in open("/proc/net/dev").read().splitlines()[2:]]
unix = open("/proc/net/unix").read().splitlines()[1:]
tcp = open("/proc/net/tcp").read().splitlines()[1:] + open("/proc/net/tcp6").read().splitlines()[1:]
print(json.dumps({"devs": devs, "unix": unix, "tcp": tcp}))
""")
    got = json.loads(out)
    eq(got["devs"], ["lo"], "network interfaces")
    eq(got["unix"], [], "unix sockets of the host visible")
    eq(got["tcp"], [], "tcp sockets of the host visible")


@test
def filesystem_tree_is_the_sandboxs():
    out = py(r"""
import os, json
print(json.dumps({"root": sorted(os.listdir("/")), "home": sorted(os.listdir("/home")),
                  "roothome": sorted(os.listdir("/root")), "etc": sorted(os.listdir("/etc")),
                  "passwd": open("/etc/passwd").read()}))
""")
    got = json.loads(out)
    host_top = [n for n in ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
                if os.path.lexists("/" + n)]
    eq(got["root"], sorted(host_top + ["dev", "etc", "home", "proc", "root", "sys", "tmp",
                                       "usr"]),
       "top-level entries")
    eq(got["home"], ["user"], "/home")
    eq(got["roothome"], [], "/root")
    for secret in ("shadow", "gshadow", "ssh", "sudoers", "machine-id", "ssl/private"):
        check(secret not in got["etc"], "/etc/%s inside: %r" % (secret, got["etc"]))
    users = [l.split(":")[0] for l in got["passwd"].splitlines()]
    # no root: uid 0 is never mapped (issue 13); nobody names the overflow id
    eq(users, ["user", "nobody"], "/etc/passwd is the generated one")


@test
def no_mount_leaks_to_the_host():
    # codecell in a mount namespace of this test's, whose mounts propagate
    # like the host's: a leak shows there, and other work on the host
    # (which changes the host's table meanwhile) does not
    with MountNs() as ns:
        before = ns.mounts()
        p = subprocess.run(ns.prefix() + [CODECELL, "run", "--json", "--lang", "bash", "-"],
                           input="mount -t tmpfs none /tmp 2>/dev/null; echo done\n",
                           capture_output=True, text=True, timeout=2 * HANG_S)
        r = Run(p, 0)
        check(r.stdout.startswith("{"), "no JSON result: %r" % (r,))
        eq(r.json["status"], "ok", "run")
        eq(sorted(ns.mounts() ^ before), [], "mounts changed by a run")


if __name__ == "__main__":
    main()
