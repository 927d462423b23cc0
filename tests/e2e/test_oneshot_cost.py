"""What a one-shot run costs beyond the program, checked by what it does,
never by its time (the figures are bench/bench_run.py's): Python in the
sandbox loads codecell's sitecustomize from a compiled .pyc instead of
compiling the source on every start, and that .pyc is the same code (the
seed option still seeds); `codecell run --help` says what --cpus
does to the CPUs the tree may use; the run exits with its result and
leaves nothing behind; and the /etc files that the init and the early
worker write side by side are whole in every run."""
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import (CODECELL, HANG_S, await_empty, cgroup_parents, check, codecell, eq, main,  # noqa: E402
                    children, run_code, sandbox_cgroups, test, tmpdir, write)

# python3 -v says where each module's code object came from
VERBOSE = "python3 -v -c pass 2>&1 | grep sitecustomize\n"


def host_site_pyc():
    """The host's compiled sitecustomize of /usr/bin/python3 (Debian's),
    which the sandbox's is bound over; None where there is none."""
    ver = os.path.basename(os.path.realpath("/usr/bin/python3"))  # python3.11
    minor = ver.split(".")[-1]
    path = "/usr/lib/%s/__pycache__/sitecustomize.cpython-3%s.pyc" % (ver, minor)
    link = "/usr/lib/%s/sitecustomize.py" % ver
    return path if os.path.isfile(path) and os.path.islink(link) else None


@test
def python_loads_the_sitecustomize_from_its_pyc():
    pyc = host_site_pyc()
    if not pyc:
        print("# skip: no Debian sitecustomize .pyc on this host")
        return
    r = run_code(VERBOSE, lang="bash")
    eq(r.json["status"], "ok", r)
    out = r.json["logs"]["stdout"]
    # before: "# bytecode is stale for 'sitecustomize'" and the code
    # object came from the .py, compiled on every start
    check("code object from '%s'" % pyc in out, "sitecustomize compiled again: %r" % out)
    check("stale" not in out, out)


@test
def the_pyc_is_read_only_and_still_seeds():
    if not host_site_pyc():
        print("# skip: no Debian sitecustomize .pyc on this host")
        return
    code = ("import random, sys\n"
            "pyc = sys.modules['sitecustomize'].__spec__.cached\n"
            "try:\n"
            "    open(pyc, 'ab')\n"
            "    print('writable')\n"
            "except OSError as e:\n"
            "    print(e.errno)\n"
            "print(random.random())\n")
    a = run_code(code, "--seed", "7")
    b = run_code(code, "--seed", "7")
    eq(a.json["status"], "ok", a)
    lines = a.json["logs"]["stdout"].split()
    check(lines[0] != "writable", "the sandbox could write the .pyc: %r" % lines)
    eq(a.json["logs"]["stdout"], b.json["logs"]["stdout"], "the same seed, the same numbers")


@test
def run_help_says_the_tree_is_pinned_to_ceil_cpus():
    r = codecell("run", "--help")
    eq(r.status, 0, r)
    text = " ".join(r.stdout.split())
    check("pinned to ceil(N)" in text, "--cpus help: %r" % text)


def cpus_allowed(pid):
    """The CPUs pid may run on, from /proc (Cpus_allowed_list)."""
    with open("/proc/%d/status" % pid) as f:
        text = next(l for l in f if l.startswith("Cpus_allowed_list:")).split(":", 1)[1]
    out = set()
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


@test
def a_lone_runs_program_is_pinned_and_its_init_is_not():
    # codecell run's one sandbox under the default quota (one CPU): the
    # CPU is the one codecell runs on, the worker is pinned to it from its
    # fork, and the init stays on every CPU.  Before, the init was pinned
    # to a CPU picked before the clone (not the caller's), and the worker
    # moved there to exec: every step of the init, and the exec, waited
    # for that one CPU, which on a loaded 2-CPU host took most of a run
    # (README, One-shot runs).  nproc still says 1.
    allowed = os.sched_getaffinity(0)
    if len(allowed) < 2:
        print("# skip: one CPU, nothing to pin to")
        return
    d = tmpdir()
    path = os.path.join(d, "wait.sh")
    write(path, "nproc\nread x\n")
    p = subprocess.Popen([CODECELL, "run", "--lang", "bash", path], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # nproc has run: the program is past its exec, and its pin
        eq(p.stdout.readline(), "1\n", "nproc")
        tree = None
        deadline = time.monotonic() + HANG_S
        while not tree and time.monotonic() < deadline:
            # the init is the child of codecell's that has a child (the
            # program); the other child, which tears the sandbox down, has none
            tree = [(k, g) for k in children(p.pid) for g in children(k)]
            time.sleep(0.01)
        check(tree, "no sandbox below codecell run")
        init, prog = tree[0]
        eq(cpus_allowed(init), allowed, "the init's CPUs")
        eq(len(cpus_allowed(prog)), 1, "the program's CPUs")
        check(cpus_allowed(prog) <= allowed, cpus_allowed(prog))
    finally:
        out, err = p.communicate("x\n", timeout=HANG_S)
    eq((p.returncode, out), (0, ""), err)
    shutil.rmtree(d)


# Runs `codecell run` as a child subreaper, so that what codecell leaves
# to end after it exits (its sandbox's init, the process that tears the
# sandbox down) becomes ours: reaps until none is left (ECHILD) or the
# deadline, and says what it saw.
TEARDOWN_WATCH = r"""
import ctypes, json, os, subprocess, sys, time
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
    sys.exit("prctl: %d" % ctypes.get_errno())
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)
out, err = p.communicate(timeout=120)
orphans, left = 0, True
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    try:
        pid, _ = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        left = False
        break
    if pid:
        orphans += 1
    else:
        time.sleep(0.01)
print(json.dumps({"pid": p.pid, "rc": p.returncode, "out": out, "err": err,
                  "orphans": orphans, "left": left}))
"""


def run_watched(*args):
    """codecell run ARGS under TEARDOWN_WATCH, with TMPDIR and the working
    directory an empty scratch directory that must stay empty."""
    scratch = tmpdir()
    env = dict(os.environ, TMPDIR=scratch)
    r = subprocess.run([sys.executable, "-c", TEARDOWN_WATCH, CODECELL, "run"] + list(args),
                       capture_output=True, text=True, timeout=240, env=env, cwd=scratch)
    eq(r.returncode, 0, r.stderr)
    eq(os.listdir(scratch), [], "files left in TMPDIR / the working directory")
    os.rmdir(scratch)
    return json.loads(r.stdout)


@test
def run_exits_with_the_result_and_leaves_nothing_behind():
    # codecell exits once the result is final; the sandbox's init and
    # cgroups go a moment later (sandbox_free_detached): the status and
    # the output are the program's, and within the deadline no process
    # and no cgroup of the run is left, also with a daemon the program
    # started (killed with the namespace before the result)
    d = tmpdir()
    cases = [
        ("exit 0\n", 0, ""),
        ("echo out; echo err >&2; exit 7\n", 7, "out\n"),
        ("(exec </dev/null >/dev/null 2>&1; setsid sleep 60) & echo bye\n", 0, "bye\n"),
    ]
    for i, (code, rc, out) in enumerate(cases):
        path = os.path.join(d, "c%d.sh" % i)
        write(path, code)
        w = run_watched(path)
        eq(w["rc"], rc, w)
        eq(w["out"], out, w)
        if rc == 7:
            eq(w["err"], "err\n", w)
        check(not w["left"], "processes of the run still alive after 30 s: %r" % w)
        parents = cgroup_parents(os.getpid())
        eq(await_empty(lambda: sandbox_cgroups(parents, w["pid"])), [],
           "cgroups of the run left behind")
    w = run_watched("--json", os.path.join(d, "c1.sh"))
    j = json.loads(w["out"])
    eq((j["status"], j["exit_code"], j["logs"]["stdout"]), ("error", 7, "out\n"), j)
    check(j["usage"]["cpu_ms"] > 0, "no CPU time reported: %r" % j)
    check(not w["left"], w)
    shutil.rmtree(d)


def children_of(pid):
    with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
        return [int(c) for c in f.read().split()]


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@test
def a_killed_run_leaves_no_cgroups_and_no_process():
    # `codecell run` killed while its program runs (SIGKILL: no handler,
    # no exit path).  The sandbox's init ends with it (its socket's end),
    # and the process codecell made for the end of the run when the
    # program started (sandbox_start_reaper) removes the cgroups then and
    # exits.  Before it was made that early, they stayed until another
    # codecell's sweep.
    d = tmpdir()
    path = os.path.join(d, "s.sh")
    write(path, "echo up; sleep 60\n")
    parents = cgroup_parents(os.getpid())
    p = subprocess.Popen([CODECELL, "run", path], stdout=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        eq(p.stdout.readline(), "up\n")
        check(sandbox_cgroups(parents, p.pid), "no cgroups while the program runs")
        kids = children_of(p.pid)
        eq(len(kids), 2, "the init and the end's process: %r" % kids)
    finally:
        p.kill()
        p.wait()
        p.stdout.close()
    eq(await_empty(lambda: sandbox_cgroups(parents, p.pid)), [], "cgroups of the run left behind")
    eq(await_empty(lambda: [k for k in kids if alive(k)]), [], "processes of the run left")
    shutil.rmtree(d)


# The files of the sandbox's /etc that are copies of the host's (rootfs.c,
# etc_copies) and some it generates: the init and the early worker write
# them side by side (child.c, worker_prepare), and the root goes
# read-only once both are done.  Each must be whole in every run.
ETC_COPIES = ("ld.so.cache", "matplotlibrc", "mime.types", "ssl/openssl.cnf", "bash.bashrc",
              "inputrc", "localtime", "services", "protocols")
ETC_HASHES = r"""
for f in %s; do
  if [ -e "/etc/$f" ]; then sha256sum "/etc/$f"; else echo "- /etc/$f"; fi
done
cat /etc/hostname /etc/passwd /etc/group /etc/hosts /etc/nsswitch.conf | sha256sum
""" % " ".join(ETC_COPIES)


@test
def the_etc_files_are_whole_in_every_run():
    want = {}
    for f in ETC_COPIES:
        path = "/etc/" + f
        if os.path.isfile(path) and os.path.getsize(path) <= 1 << 20:
            with open(path, "rb") as fh:
                want["/etc/" + f] = hashlib.sha256(fh.read()).hexdigest()
    check(len(want) >= 5, "too few of the copied /etc files on this host: %r" % want)
    generated = None
    for i in range(20):
        r = run_code(ETC_HASHES, lang="bash")
        eq(r.json["status"], "ok", r)
        got = {}
        lines = r.json["logs"]["stdout"].splitlines()
        for line in lines[:-1]:
            digest, name = line.split()
            got[name] = digest
        for name, digest in want.items():
            eq(got.get(name), digest, "run %d: %s is not the host's" % (i, name))
        # the generated files are the same in every run
        if generated is None:
            generated = lines[-1]
        eq(lines[-1], generated, "run %d: the generated /etc files differ" % i)


# A host whose /etc files are absolute symlinks to paths the sandbox does
# not have (NixOS, Guix): the copies must still be the host's.  The init
# may pivot into the new root while the files are being copied (child.c),
# so an absolute link must be read from the host's root (rootfs.c,
# open_host), not from the caller's root of the moment.  The host's /etc
# is an overlay in a mount namespace of this test's own, with three of
# the copied files turned into links into a directory under /var/tmp.
ETC_LINKED = r"""
set -e
mkdir -p "$D/upper" "$D/work" "$D/real"
chmod 755 "$D/real"
for f in services protocols mime.types; do
  printf 'linked %s\n' "$f" > "$D/real/$f"
  ln -s "$D/real/$f" "$D/upper/$f"
done
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$D/upper,workdir=$D/work" /etc
for i in $(seq 10); do
  "$CC" run --lang bash - <<'EOS'
for f in services protocols mime.types; do head -1 "/etc/$f" 2>/dev/null || echo "missing $f"; done
EOS
done
"""


@test
def etc_copies_follow_the_hosts_absolute_symlinks():
    if os.geteuid() != 0 or not shutil.which("unshare"):
        print("# skip: needs root and unshare(1) for a mount namespace of its own")
        return
    d = tempfile.mkdtemp(prefix="cctest-etc-", dir="/var/tmp")
    os.chmod(d, 0o755)  # the init copies as the sandbox's user
    try:
        r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", ETC_LINKED],
                           capture_output=True, text=True, timeout=240,
                           env=dict(os.environ, D=d, CC=CODECELL))
        if r.returncode != 0 and "overlay" in r.stderr:
            print("# skip: no overlayfs here: %s" % r.stderr.strip())
            return
        eq(r.returncode, 0, r.stderr)
        want = "linked services\nlinked protocols\nlinked mime.types\n"
        runs = [r.stdout[i:i + len(want)] for i in range(0, len(r.stdout), len(want))]
        eq(len(runs), 10, r.stdout)
        for i, out in enumerate(runs):
            eq(out, want, "run %d" % i)
    finally:
        shutil.rmtree(d)


if __name__ == "__main__":
    main()
