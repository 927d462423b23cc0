"""Privilege inside the sandbox: no capabilities in any set, no_new_privs,
seccomp in filter mode, uid/gid 1000; setuid binaries do not elevate;
no nested user or network namespaces; the init (PID 1) cannot be reached
through /proc (CVE-2019-5736, CVE-2024-21626 class); only the expected fds
are open and none leads to a host directory (sandbox-anchors.md section
11, rows 2, 3, 5, 12).  The checks that matter run twice: codecell
started as root and as an ordinary user (uid 1000 through setpriv)."""
import base64
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import (CODECELL, HELPERS, PROBE, codecell, embedded_probe_script, run_code,  # noqa: E402
                    run_probe, test, main, check, eq, tmpdir, write, children,
                    await_descendants, HANG_S)

USERS = (None, 1000)  # None: as root (the caller of this script)

# ---- running the probe (same scheme as test_kernel_surface.py) ----------

def probe(mode, user=None):
    r, recs = run_probe("./probe %s" % mode, user=user)
    check(any(x["check"] == "done" for x in recs), "probe %s did not finish: %r" % (mode, r))
    eq(r.json["status"], "ok", "probe %s (%r)" % (mode, r))
    return recs


def who(user):
    return "as root" if user is None else "as uid %d" % user


ZERO_CAPS = "0000000000000000"

# ---- status --------------------------------------------------------------


def check_status(st, ctx):
    for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        eq(st.get(k), ZERO_CAPS, "%s %s" % (k, ctx))
    eq(st.get("NoNewPrivs"), "1", "NoNewPrivs %s" % ctx)
    eq(st.get("Seccomp"), "2", "Seccomp mode %s" % ctx)
    eq(st.get("Uid"), "1000 1000 1000 1000", "Uid %s" % ctx)
    eq(st.get("Gid"), "1000 1000 1000 1000", "Gid %s" % ctx)
    eq(st.get("Groups", "").strip(), "", "supplementary groups %s" % ctx)


@test
def no_capabilities_nnp_seccomp_uid_1000():
    for user in USERS:
        recs = probe("status", user=user)
        st = [x for x in recs if x["check"] == "status"][0]
        check(st["read"], "could not read /proc/self/status")
        check_status(st, "(probe, %s)" % who(user))
        eq((st["euid"], st["egid"]), (1000, 1000), "euid/egid %s" % who(user))


@test
def python_and_its_children_unprivileged():
    code = r"""
import json, subprocess
def status(text):
    d = {}
    for line in text.splitlines():
        k, _, v = line.partition(":")
        d[k] = " ".join(v.split())
    return d
me = status(open("/proc/self/status").read())
child = status(subprocess.run(["cat", "/proc/self/status"], capture_output=True,
                              text=True).stdout)
print(json.dumps({"me": me, "child": child}))
"""
    for user in USERS:
        r = run_code(code, user=user)
        eq(r.json["status"], "ok", "python run %s (%r)" % (who(user), r))
        got = json.loads(r.json["logs"]["stdout"])
        check_status(got["me"], "(python, %s)" % who(user))
        check_status(got["child"], "(python's child, %s)" % who(user))


# ---- setuid ----------------------------------------------------------------


def host_setuid_binaries():
    p = subprocess.run(["find", "/usr", "-xdev", "-perm", "-4000", "-type", "f"],
                       capture_output=True, text=True)
    found = sorted(p.stdout.split())
    check(len(found) >= 3, "expected setuid binaries on the host, found %r" % found)
    return found


@test
def setuid_binaries_do_not_elevate():
    paths = host_setuid_binaries()
    for want in ("/usr/bin/su", "/usr/bin/passwd", "/usr/bin/newgrp"):
        if os.path.exists(want):
            check(want in paths, "%s not setuid on the host?" % want)
    for user in USERS:
        recs = probe("suid " + " ".join(paths), user=user)
        got = {x["path"]: x for x in recs if x["check"] == "suid"}
        eq(sorted(got), paths, "every setuid binary probed %s" % who(user))
        ran = 0
        for path, x in sorted(got.items()):
            ctx = "%s %s: %r" % (path, who(user), x)
            check(x["exists"], "not visible inside: " + ctx)
            check(x["setuid_bit"], "setuid bit not visible inside (test is moot): " + ctx)
            if not x["ran"]:
                continue
            ran += 1
            # caught right after exec, before the program could drop
            # anything it was given: real, effective, saved, fs uid
            eq(x["Uid"], "1000 1000 1000 1000", "uids after exec of " + ctx)
            eq(x["Gid"], "1000 1000 1000 1000", "gids after exec of " + ctx)
            eq(x["CapEff"], ZERO_CAPS, "CapEff after exec of " + ctx)
            eq(x["CapPrm"], ZERO_CAPS, "CapPrm after exec of " + ctx)
            eq(x["at_secure"], 0, "AT_SECURE (kernel applied set-id bits) " + ctx)
        check(ran >= 3, "too few setuid binaries caught running %s: %d" % (who(user), ran))


@test
def su_and_newgrp_stay_uid_1000():
    script = r"""
su root -c 'id -u' </dev/null 2>&1; echo "su=$?"
printf 'id -u\nid -g\n' | newgrp user 2>&1; echo "newgrp=$?"
id -u
"""
    for user in USERS:
        r = codecell("run", "--json", "--lang", "bash", "-", stdin=script, user=user)
        out = r.json["logs"]["stdout"]
        lines = out.split()
        check("su=0" not in lines, "su succeeded %s: %r" % (who(user), out))
        check("0" not in lines, "something printed uid 0 %s: %r" % (who(user), out))
        eq(lines[-1], "1000", "id -u at the end %s: %r" % (who(user), out))


# ---- namespaces --------------------------------------------------------------


@test
def unshare_command_fails():
    script = r"""
for a in -U -n -m -p -r -i -u -C; do
  unshare $a true 2>/dev/null; echo "unshare $a rc=$?"
done
unshare -U true 2>&1 | head -1
"""
    for user in USERS:
        r = codecell("run", "--json", "--lang", "bash", "-", stdin=script, user=user)
        out = r.json["logs"]["stdout"]
        for a in ("-U", "-n", "-m", "-p", "-r", "-i", "-u", "-C"):
            check(("unshare %s rc=0" % a) not in out,
                  "unshare %s succeeded %s: %r" % (a, who(user), out))
            check(("unshare %s rc=" % a) in out, "no result for unshare %s: %r" % (a, out))
        check("Operation not permitted" in out,
              "unshare -U did not fail with EPERM %s: %r" % (who(user), out))


# ---- the init through /proc ----------------------------------------------------


@test
def init_not_reachable_through_proc():
    for user in USERS:
        recs = probe("proc 1", user=user)
        d = {x["check"]: x for x in recs}
        ctx = who(user)
        for leaf in ("exe", "root", "cwd", "fd", "environ", "mem", "fd/0", "fd/1",
                     "fd/3", "map_files"):
            for how in ("rdonly", "wronly", "rdwr"):
                k = "proc:1:%s:%s" % (leaf, how)
                eq(d[k]["ret"], -1, "%s opened %s" % (k, ctx))
        # O_PATH on the magic links would be a handle on the init's binary
        # or root; on /proc/1/fd/N a handle on the init's files
        for leaf in ("exe", "root", "cwd", "fd/0", "fd/1", "fd/3"):
            k = "proc:1:%s:path" % leaf
            eq(d[k]["ret"], -1, "%s opened %s" % (k, ctx))
        for leaf in ("exe", "root", "cwd"):
            k = "proc:1:%s:readlink" % leaf
            eq(d[k]["ret"], -1, "%s readable %s: %r" % (k, ctx, d[k]))
        eq(d["proc:1:fd:list"]["ok"], False, "/proc/1/fd listable %s" % ctx)


@test
def cannot_signal_init():
    script = "kill -0 1 2>/dev/null; echo kill0=$?; kill -KILL 1 2>/dev/null; echo kill9=$?; echo alive\n"
    for user in USERS:
        r = codecell("run", "--json", "--lang", "bash", "-", stdin=script, user=user)
        out = r.json["logs"]["stdout"].split()
        check("kill0=0" not in out, "kill -0 1 succeeded %s" % who(user))
        check("kill9=0" not in out, "kill -KILL 1 succeeded %s" % who(user))
        eq(out[-1], "alive", "run survived %s" % who(user))
        eq(r.json["status"], "ok", "status %s (%r)" % (who(user), r))


# ---- fds ---------------------------------------------------------------------


def fd_table(recs):
    return {x["fd"]: x["target"] for x in recs if x["check"] == "fd"}


@test
def bash_program_has_only_expected_fds():
    for user in USERS:
        fds = fd_table(probe("fds", user=user))
        ctx = "%s: %r" % (who(user), fds)
        eq(sorted(fds), [0, 1, 2, 3, 4], "open fds " + ctx)
        eq(fds[0], "/dev/null", "fd 0 " + ctx)
        check(fds[1].startswith("pipe:"), "fd 1 " + ctx)
        check(fds[2].startswith("pipe:"), "fd 2 " + ctx)
        check(fds[3].startswith("/memfd:codecell-code"), "fd 3 " + ctx)
        check(fds[4].startswith("pipe:"), "fd 4 " + ctx)


@test
def python_child_sees_only_stdio():
    code = r"""
import json, os, subprocess
out = subprocess.run(["ls", "-l", "/proc/self/fd"], capture_output=True, text=True).stdout
child = {}
for line in out.splitlines():
    parts = line.split()
    if "->" in parts:
        i = parts.index("->")
        child[parts[i - 1]] = " ".join(parts[i + 1:])
me = {}
for fd in os.listdir("/proc/self/fd"):
    try:
        me[fd] = os.readlink("/proc/self/fd/" + fd)
    except OSError:
        pass
print(json.dumps({"child": child, "me": me}))
"""
    for user in USERS:
        r = run_code(code, user=user)
        eq(r.json["status"], "ok", "python run %s (%r)" % (who(user), r))
        got = json.loads(r.json["logs"]["stdout"])
        # ls's own directory fd on /proc/<pid>/fd is not inherited
        child = {fd: t for fd, t in got["child"].items()
                 if not (t.startswith("/proc/") and t.endswith("/fd"))}
        eq(sorted(child, key=int), ["0", "1", "2"], "fds of a subprocess %s: %r"
           % (who(user), got["child"]))
        me = {fd: t for fd, t in got["me"].items()
              if not (t.startswith("/proc/") and t.endswith("/fd"))}
        extra = set(me) - {"0", "1", "2", "3", "4"}
        check(not extra, "python itself holds unexpected fds %s: %r" % (who(user), me))


@test
def no_inherited_fd_leads_out():
    for user in USERS:
        recs = probe("climb", user=user)
        ctx = who(user)
        tops = [x for x in recs if x["check"] in ("climb:openat_top", "climb:fchdir_top")]
        opened = [x for x in recs if x["check"] in ("climb:openat", "climb:openat_path")
                  and x["ok"]]
        # every climb that got anywhere must end at the sandbox's own root
        for x in tops:
            check(x["ok"], "climb lost its fd %s: %r" % (ctx, x))
            eq((x["dev"], x["ino"]), (x["root_dev"], x["root_ino"]),
               "climb from fd %d ended outside the sandbox root %s: %r" % (x["fd"], ctx, x))
        for x in opened:
            t = x.get("target", "")
            for bad in ("/work", "/root", "/tmp/cctest", "/proc/1/"):
                check(not t.startswith(bad), "fd %d .. is %s %s" % (x["fd"], t, ctx))
        for x in recs:
            if x["check"] == "climb:fchdir_cwd":
                check(x["cwd"].startswith("/") and not x["cwd"].startswith("/work"),
                      "cwd after climbing %s: %r" % (ctx, x))
        # the inherited fds are 0-4: none is a directory
        fchdirs = [x for x in recs if x["check"] == "climb:fchdir"]
        eq(sorted(x["fd"] for x in fchdirs), [0, 1, 2, 3, 4], "fds tried %s" % ctx)
        for x in fchdirs:
            eq(x["err"], "ENOTDIR", "fchdir(%d) %s: %r" % (x["fd"], ctx, x))


@test
def cwd_climb_stays_in_sandbox():
    # the old root is detached: ".." from the workspace ends at the new /
    code = r"""
import os, json
fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
for _ in range(64):
    up = os.open("..", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
    os.close(fd); fd = up
st = os.fstat(fd); root = os.stat("/")
os.fchdir(fd)
print(json.dumps({"same": [st.st_dev, st.st_ino] == [root.st_dev, root.st_ino],
                  "cwd": os.getcwd(), "ls": sorted(os.listdir("."))}))
"""
    for user in USERS:
        r = run_code(code, user=user)
        got = json.loads(r.json["logs"]["stdout"])
        check(got["same"], "'..' x64 from the workspace is not / %s: %r" % (who(user), got))
        eq(got["cwd"], "/", "cwd %s" % who(user))
        check("work" not in got["ls"], "host /work visible: %r" % got)


def _popen_codecell(script, pass_fds=(), user=None):
    """codecell run in the background, the script on stdin (from a file,
    so that the caller can inspect the process while it runs)."""
    cmd = [CODECELL, "run", "--lang", "bash", "-"]
    if user is not None:
        cmd = ["setpriv", "--reuid=%d" % user, "--regid=%d" % user, "--clear-groups"] + cmd
    with tempfile.TemporaryFile("w+") as f:
        f.write(script)
        f.flush()
        f.seek(0)
        return subprocess.Popen(cmd, stdin=f, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, pass_fds=pass_fds)


def _leaky_fds():
    """A host directory and a host file, opened without CLOEXEC, as a
    careless caller of codecell would leave them."""
    d = tmpdir()
    write(os.path.join(d, "secret.txt"), "host secret\n", 0o644)
    dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    ffd = os.open(os.path.join(d, "secret.txt"), os.O_RDONLY)
    os.set_inheritable(dfd, True)
    os.set_inheritable(ffd, True)
    return d, dfd, ffd


@test
def callers_fds_do_not_reach_the_program():
    d, dfd, ffd = _leaky_fds()
    try:
        for user in USERS:
            script = embedded_probe_script("./probe fds")
            p = _popen_codecell(script, pass_fds=(dfd, ffd), user=user)
            out, err = p.communicate(timeout=60)
            fds = {}
            for line in out.splitlines():
                if line.startswith("{"):
                    x = json.loads(line)
                    if x["check"] == "fd":
                        fds[x["fd"]] = x["target"]
            eq(sorted(fds), [0, 1, 2, 3, 4], "program fds with leaky caller %s: %r (%s)"
               % (who(user), fds, err))
            for t in fds.values():
                check(d not in t, "caller's fd reached the program: %r" % fds)
        # a host file (or directory) on codecell's stdin is not handed in
        # either: the program's fd 0 would be a host inode
        code = write(os.path.join(d, "fds.sh"), embedded_probe_script("./probe fds"))
        for src in (os.path.join(d, "secret.txt"), d):
            stdin = os.open(src, os.O_RDONLY)
            try:
                p = subprocess.run([CODECELL, "run", "--lang", "bash", code], stdin=stdin,
                                   capture_output=True, text=True, timeout=60)
            finally:
                os.close(stdin)
            fds = {}
            for line in p.stdout.splitlines():
                if line.startswith("{"):
                    x = json.loads(line)
                    if x["check"] == "fd":
                        fds[x["fd"]] = x["target"]
            eq(fds.get(0), "/dev/null", "fd 0 with %s on codecell's stdin: %r (%s)"
               % (src, fds, p.stderr))
    finally:
        os.close(dfd)
        os.close(ffd)
        shutil.rmtree(d, ignore_errors=True)


@test
def init_holds_none_of_the_callers_fds():
    # The init (PID 1 inside) is a clone of the supervisor: it keeps every
    # fd the supervisor had, and it runs with full capabilities in the
    # sandbox's user namespace, without seccomp or Landlock.  Today only
    # PR_SET_DUMPABLE(0), Landlock's ptrace scoping and the ptrace deny
    # stand between the program and those fds (runc CVE-2024-21626 was
    # exactly a leaked directory fd).  Seen from the host: the init must
    # not hold the caller's directory or file.
    d, dfd, ffd = _leaky_fds()
    # the program sleeps until the test is done looking: however slow
    # the machine, the init is seen after its hand-shake and before its end
    p = _popen_codecell("sleep %d\n" % (4 * HANG_S), pass_fds=(dfd, ffd))
    try:
        sleeping = await_descendants(p.pid, "sleep %d" % (4 * HANG_S), timeout=HANG_S)
        check(sleeping, "the program never started under codecell %d" % p.pid)
        kids = children(p.pid)
        init = kids[0] if kids else None
        check(init is not None, "could not find the sandbox init under codecell %d" % p.pid)
        held = {}
        for fd in os.listdir("/proc/%d/fd" % init):
            try:
                held[int(fd)] = os.readlink("/proc/%d/fd/%s" % (init, fd))
            except OSError:
                pass
        leaked = {fd: t for fd, t in held.items() if t.startswith(d)}
        check(not leaked, "the sandbox init (host pid %d) holds the caller's fds %r; "
              "all its fds: %r" % (init, leaked, held))
    finally:
        p.terminate()  # codecell ends the sandbox and everything in it
        p.communicate(timeout=HANG_S)
        os.close(dfd)
        os.close(ffd)
        shutil.rmtree(d, ignore_errors=True)


# ---- files copied in ------------------------------------------------------------


@test
def workspace_file_copied_in_unprivileged():
    # --file keeps the exec bit but must never carry setuid/setgid, and the
    # copy belongs to the sandbox user.  (Started as root this once failed
    # with EOVERFLOW: the supervisor created the file as host root inside a
    # tmpfs owned by the sandbox's user namespace, where root has no
    # mapping.)
    d = tmpdir()
    try:
        f = write(os.path.join(d, "tool.sh"), "#!/bin/sh\necho tool ran as $(id -u)\n", 0o6755)
        os.chmod(f, 0o6755)
        errors = []
        # as an ordinary user first: it shows the check itself is sound
        for user in reversed(USERS):
            r = codecell("run", "--json", "--lang", "bash", "--file", f, "-",
                         stdin="stat -c '%a %u %g' tool.sh; ./tool.sh\n", user=user)
            check(r.stdout.startswith("{"), "no result %s: %r" % (who(user), r))
            if r.json["status"] != "ok":
                errors.append("--file run %s: %s %r" % (who(user), r.json["status"],
                                                        r.json.get("error")))
                continue
            lines = r.json["logs"]["stdout"].splitlines()
            eq(lines[0], "755 1000 1000", "mode/owner of the copy %s" % who(user))
            eq(lines[1], "tool ran as 1000", "the copy runs as the sandbox user %s" % who(user))
        check(not errors, "; ".join(errors))
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
