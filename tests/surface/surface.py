"""The kernel surface report: runs build/helpers/surface (tests/helpers/
surface.c) inside a one-shot run and inside a pool cell, writes
tests/surface/x86_64.txt (one line per probe: what, number, one-shot, pool
cell), and checks it against the checked-in file and against the policy
in src/sandbox/seccomp_policy.c.

    surface.py --check    regenerate, diff against the file, check the
                          policy (make surface); exit 1 on any difference
    surface.py --update   rewrite the file (make surface-update)
    surface.py --print    the report on stdout

The report only means something on the kernel that produced it: --check
skips, saying so, when the running kernel's major.minor differs from the
one in the file's header.

Some hosts refuse an entry themselves: a kernel without 32-bit emulation
kills int 0x80 with SIGSEGV before any filter sees it.  So the entry
sections (x32, i386) are also probed unsandboxed on the same host (the
control: `surface control`, nothing run), and a row the host itself
refuses is reported "n/a(V)", not applicable on this host (V: what the
sandbox got), and left out of the comparison with the checked-in file.
Where the host takes the entry, the sandbox's verdict is checked as ever.
LD_PRELOAD=build/shims/no_ia32.so on the control stands in for such a
host (tests/security/test_surface_report.py).
"""
import difflib
import json
import os
import platform
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from cctest import ROOT, HELPERS, Serve, codecell, check  # noqa: E402

REPORT = os.path.join(ROOT, "tests", "surface", "x86_64.txt")
PROBER = os.path.join(HELPERS, "surface")
POLICY = os.path.join(ROOT, "src", "sandbox", "seccomp_policy.c")
ASM = "/usr/include/x86_64-linux-gnu/asm"

# Numbers newer than Debian 12's headers (linux-libc-dev 6.1): from the
# kernel's arch/x86/entry/syscalls/syscall_64.tbl (and syscall_32.tbl,
# which uses the same numbers from 424 on), up to 6.18.
NEWER = {335: "uretprobe", 336: "uprobe", 451: "cachestat", 452: "fchmodat2", 453: "map_shadow_stack", 454: "futex_wake",
         455: "futex_wait", 456: "futex_requeue", 457: "statmount", 458: "listmount",
         459: "lsm_get_self_attr", 460: "lsm_set_self_attr", 461: "lsm_list_modules",
         462: "mseal", 463: "setxattrat", 464: "getxattrat", 465: "listxattrat",
         466: "removexattrat", 467: "open_tree_attr", 468: "file_getattr",
         469: "file_setattr"}

# Calls no seccomp filter can refuse: the kernel lets uretprobe (335,
# Linux 6.14) and uprobe (336, 6.16) past every filter, since only its own
# uprobe trampolines make them (kernel/seccomp.c, "passthrough").  Made
# from anywhere else, uretprobe kills the caller with SIGILL and uprobe
# answers ENXIO: the probe sees those answers, not a filter's.  Any other
# answer from them, or from any other call, fails the check.
KERNEL_BYPASS = {"sys 335": "SIGILL", "sys 336": "ENXIO"}

AF = ["UNSPEC", "UNIX", "INET", "AX25", "IPX", "APPLETALK", "NETROM", "BRIDGE", "ATMPVC",
      "X25", "INET6", "ROSE", "DECnet", "NETBEUI", "SECURITY", "KEY", "NETLINK", "PACKET",
      "ASH", "ECONET", "ATMSVC", "RDS", "SNA", "IRDA", "PPPOX", "WANPIPE", "LLC", "IB",
      "MPLS", "CAN", "TIPC", "BLUETOOTH", "IUCV", "RXRPC", "ISDN", "PHONET", "IEEE802154",
      "CAIF", "ALG", "NFC", "VSOCK", "KCM", "QIPCRTR", "SMC", "XDP", "MCTP"]
SOCK = {1: "STREAM", 2: "DGRAM", 3: "RAW", 4: "RDM", 5: "SEQPACKET", 10: "PACKET"}
NETLINK = ["ROUTE", "UNUSED", "USERSOCK", "FIREWALL", "SOCK_DIAG", "NFLOG", "XFRM", "SELINUX",
           "ISCSI", "AUDIT", "FIB_LOOKUP", "CONNECTOR", "NETFILTER", "IP6_FW", "DNRTMSG",
           "KOBJECT_UEVENT", "GENERIC", "-", "SCSITRANSPORT", "ECRYPTFS", "RDMA", "CRYPTO",
           "SMC"]

# The sections whose rows the control run probes too, each of numbers
# 0..NR_MAX-1 (surface.c).
ENTRY_SECTIONS = ("x32", "i386")
NR_MAX = 600

FAMILIES_ALLOWED = {1, 2, 10, 16}  # sandbox_seccomp_families: unix, inet, inet6, netlink
FILTER_VERDICTS = {"ENOSYS", "EPERM", "EAFNOSUPPORT", "SIGSYS"}


# ---- names ------------------------------------------------------------------

def _header_names(path, x32=False):
    names = {}
    with open(path) as f:
        for line in f:
            if x32:
                m = re.match(r"#define __NR_(\w+) \(__X32_SYSCALL_BIT \+ (\d+)\)", line)
            else:
                m = re.match(r"#define __NR_(\w+) (\d+)$", line.strip())
            if m:
                names.setdefault(int(m.group(2)), m.group(1))
    return names


def syscall_names():
    """{abi: {nr: name}} for x86_64, x32 and i386."""
    n64 = _header_names(os.path.join(ASM, "unistd_64.h"))
    nx32 = _header_names(os.path.join(ASM, "unistd_x32.h"), x32=True)
    n32 = _header_names(os.path.join(ASM, "unistd_32.h"))
    for nr, name in NEWER.items():
        n64.setdefault(nr, name)
        if name not in ("map_shadow_stack", "uretprobe", "uprobe"):  # x86_64 only
            nx32.setdefault(nr, name)
            n32.setdefault(nr, name)
    prctl = {}
    with open("/usr/include/linux/prctl.h") as f:
        for line in f:
            m = re.match(r"#define (PR_\w+)\s+(0x[0-9a-fA-F]+|\d+)", line)
            if m:
                prctl.setdefault(int(m.group(2), 0), m.group(1))
    return {"sys": n64, "x32": nx32, "i386": n32, "prctl": prctl}


def policy_lists():
    """(allowed, denied) name sets as written in seccomp_policy.c."""
    with open(POLICY) as f:
        src = f.read()
    out = []
    for var in ("sandbox_seccomp_allowed", "sandbox_seccomp_denied"):
        m = re.search(var + r"\[\]\s*=\s*\{(.*?)\};", src, re.S)
        check(m, "%s not found in %s" % (var, POLICY))
        out.append(set(re.findall(r'"([a-z0-9_]+)"', m.group(1))))
    # calls newer than libseccomp's table, allowed by number in
    # add_by_number(): { 452 /* fchmodat2 */, ... }
    m = re.search(r"add_by_number\(.*?nrs\[\]\s*=\s*\{(.*?)\};", src, re.S)
    if m:
        out[0] |= set(re.findall(r"/\*\s*([a-z0-9_]+)\s*\*/", m.group(1)))
    return out


# ---- running the prober ------------------------------------------------------

def _lines(text, where):
    lines = text.splitlines()
    check(lines and lines[0] == "surface 1", "%s: the prober printed no header: %r"
          % (where, text[:500]))
    check(lines[-1] == "end", "%s: the prober did not finish: %r" % (where, text[-500:]))
    return lines[1:-1]


def run_oneshot():
    check(os.access(PROBER, os.X_OK), "prober not built: %s (make all)" % PROBER)
    r = codecell("run", "--json", "--lang", "bash", "--output-limit", "8M", "--timeout", "600",
                 "--file", PROBER, "-", stdin="./surface\n", timeout=900)
    check(r.stdout.startswith("{"), "one-shot run: no JSON result: %r" % (r,))
    j = r.json
    check(j["status"] == "ok", "one-shot run: status %r, stderr %r" % (j["status"],
                                                                        j["logs"]["stderr"][-2000:]))
    return _lines(j["logs"]["stdout"], "one-shot run")


POOL_CODE = r"""
import os, subprocess
os.chmod("surface", 0o755)
r = subprocess.run(["./surface"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
print(r.stdout.decode(), end="")
if r.returncode:
    print("exit %d: %s" % (r.returncode, r.stderr.decode()[-2000:]))
"""


def run_pool():
    check(os.access(PROBER, os.X_OK), "prober not built: %s (make all)" % PROBER)
    s = Serve("--pool", "1")
    try:
        j = None
        for _ in range(600):  # the pool fills in the background
            st, j = s.post("/v1/sessions", {"timeout": 600})
            check(st == 201, "create a session: %r %r" % (st, j))
            if j["pooled"]:
                break
            s.request("DELETE", "/v1/sessions/%s" % j["id"])
            time.sleep(0.1)
        check(j["pooled"], "no pooled session: %r (server log %r)" % (j, s.log()[-2000:]))
        sid = j["id"]
        with open(PROBER, "rb") as f:
            st, up = s.request("PUT", "/v1/sessions/%s/files/surface" % sid, f.read())
        check(st in (200, 201), "upload the prober: %r %r" % (st, up))
        st, r = s.request("POST", "/v1/sessions/%s/execute" % sid, {"code": POOL_CODE},
                          timeout=900)
        check(st == 200 and r["status"] == "ok", "pool cell: %r %r" % (st, r))
        return _lines(r["logs"]["stdout"], "pool cell")
    finally:
        s.stop()


def run_control(preload=None):
    """The entry sections probed unsandboxed, on this host: {key: verdict}.
    preload: a shim that stands in for another host (it is loaded into
    env, which execs the static prober under its filter)."""
    check(os.access(PROBER, os.X_OK), "prober not built: %s (make all)" % PROBER)
    cmd, env = [PROBER, "control"], None
    if preload:
        cmd, env = ["/usr/bin/env"] + cmd, dict(os.environ, LD_PRELOAD=preload)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=env, timeout=600)
    check(p.returncode == 0, "the control run failed (exit %d): %r" % (p.returncode,
                                                                       p.stderr[-2000:]))
    return dict(_key_value(l) for l in _lines(p.stdout, "control run"))


def host_refuses(control, key):
    """What the bare host answered for an entry row it refuses itself (its
    signal or errno), or None where it took the call.  A control that
    answered neither fails the check: the control is broken, and no row
    may be called not applicable on its word."""
    v = control.get(key)
    check(v is not None, "the control run has no row %r" % key)
    if v == "allow":
        return None
    check(re.match(r"^(SIG[A-Z0-9]+|E[A-Z0-9]+)$", v),
          "the control run answered %r for %r: not a refusal, not the guard" % (v, key))
    return v


NA = "n/a"

# ---- the report ----------------------------------------------------------------

def _key_value(line):
    """'sys 12 allow=ok' -> ('sys 12', 'allow=ok'); ioctl families keep
    their counts in the value."""
    parts = line.split()
    if parts[0] in ("ioctlfam",):
        return " ".join(parts[:3]), " ".join(parts[3:])
    return " ".join(parts[:-1]), parts[-1]


def merge(oneshot, pool, control):
    """[(key, oneshot verdict, pool verdict)] in the prober's order; an
    entry row the bare host refuses (control) has "n/a(V)" for V."""
    a = [_key_value(l) for l in oneshot]
    b = dict(_key_value(l) for l in pool)
    keys = [k for k, _ in a] + [k for k in b if k not in dict(a)]
    da = dict(a)
    rows = []
    for k in keys:
        va, vb = da.get(k, "-"), b.get(k, "-")
        if k.split()[0] in ENTRY_SECTIONS and host_refuses(control, k):
            va, vb = "%s(%s)" % (NA, va), "%s(%s)" % (NA, vb)
        rows.append((k, va, vb))
    return rows


def not_applicable(v):
    """The sandbox's verdict inside "n/a(V)", or None."""
    m = re.match(r"^n/a\((.*)\)$", v)
    return m.group(1) if m else None


def label(key, names):
    """A readable name for a row: the syscall name, the family name..."""
    parts = key.split()
    if parts[0] in ("sys", "x32", "i386"):
        try:
            nr = int(parts[1], 0)
        except ValueError:
            return key
        if parts[0] == "sys" and nr >= 1 << 32:
            return "%s(+bit32)" % names["sys"].get(nr & 0xffffffff, "?")
        return names[parts[0]].get(nr, "-")
    if parts[0] in ("socket", "socketproto"):
        fam = int(parts[1], 0)
        text = "AF_" + AF[fam & 0xffffffff] if (fam & 0xffffffff) < len(AF) else "-"
        if fam >= 1 << 32:
            text += "+bit32"
        text += " SOCK_" + SOCK.get(int(parts[2]), "?")
        if parts[0] == "socketproto":
            text += " proto " + parts[3]
        return text
    if parts[0] == "netlink":
        nr = int(parts[1])
        return "NETLINK_" + NETLINK[nr] if nr < len(NETLINK) and NETLINK[nr] != "-" else "-"
    if parts[0] == "prctl":
        op = int(parts[1], 0)
        name = names["prctl"].get(op & 0xffffffff, "-")
        return name + "+bit32" if op >= 1 << 32 else name
    return ""


def classify(v):
    if not_applicable(v) is not None:
        return "n/a"
    if v.startswith("allow=ENOSYS"):
        return "kernel-enosys"
    if v.startswith("allow"):
        return "reachable"
    if v in FILTER_VERDICTS:
        return "refused"
    return "other"


# Calls the policy decides by an argument (seccomp_policy.c's add_*_rules),
# and its verdict for the prober's arguments (all bits set).
ARG_RULES = {
    "mknod": "EPERM",        # mode -1: type 0xf000, no file type: EPERM
    "mknodat": "EPERM",
    "personality": "allow",  # 0xffffffff only asks
}


def intended(key, allowed, denied, names):
    """What the policy source says for a row: 'allow', an errno or 'SIGSYS';
    None when the policy does not decide (fd scans)."""
    parts = key.split()
    kind = parts[0]
    if kind in ("x32", "i386"):
        return "SIGSYS"
    if kind == "sys":
        nr = int(parts[1], 0)
        if nr == 0xffffffff:
            return "ENOSYS"  # -1: libseccomp lets the kernel's "no call" by
        if nr & 0x40000000 and nr < 1 << 32:
            return "SIGSYS"  # libseccomp: an x32 number on the x86_64 filter
        name = names["sys"].get(nr & 0xffffffff)
        if name == "clone":
            return "EPERM"  # the probe passes flags -1: namespace bits set
        if name in ARG_RULES:
            return ARG_RULES[name]
        if name in allowed:
            return "allow"
        if name in denied:
            return "EPERM"
        return "ENOSYS"
    if kind == "clone":
        return "allow" if parts[1] in ("plain", "bit32", "hi32-all", "thread") else "EPERM"
    if kind == "clone3":
        return "ENOSYS"
    if kind in ("socket",):
        fam = int(parts[1], 0) & 0xffffffff
        if fam < 64 and fam not in FAMILIES_ALLOWED:
            return "EAFNOSUPPORT"
        return "allow"  # the kernel answers for families past 63
    if kind in ("socketproto", "netlink", "prctl"):
        return "allow"
    if kind == "ioctl":
        return "EPERM" if parts[1].startswith(("TIOCSTI", "TIOCLINUX", "TIOCSETD")) else "allow"
    return None


def policy_check(rows, names):
    """(failures, notes): rows whose verdict the policy does not explain."""
    allowed, denied = policy_lists()
    bypass = KERNEL_BYPASS
    fails, notes = [], []
    na = {}
    for key, a, b in rows:
        want = intended(key, allowed, denied, names)
        if want is None:
            continue
        for where, v in (("one-shot", a), ("pool", b)):
            what = "%s (%s) %s: %s" % (key, label(key, names) or "-", where, v)
            if classify(v) == "n/a":
                # the host refuses the entry itself: nothing of the
                # filter to judge, but the call must not have got through
                if classify(not_applicable(v)) in ("reachable", "kernel-enosys", "n/a"):
                    fails.append("%s: REACHABLE in the sandbox, though the host itself "
                                 "refuses the entry" % what)
                else:
                    na.setdefault((key.split()[0], where), []).append(not_applicable(v))
            elif classify(v) == "other":
                if bypass.get(key) == v:
                    notes.append("%s: the kernel passes it by every seccomp filter "
                                 "(KERNEL_BYPASS)" % what)
                else:
                    fails.append("%s: not a verdict of the filter (policy: %s)" % (what, want))
            elif want == "allow":
                if classify(v) == "refused":
                    notes.append("%s: the policy allows it, the filter refuses it "
                                 "(a name libseccomp does not know?)" % what)
            elif classify(v) in ("reachable", "kernel-enosys"):
                fails.append("%s: REACHABLE, the policy refuses it with %s" % (what, want))
            elif v != want:
                fails.append("%s: refused with %s, the policy says %s" % (what, v, want))
    for (kind, where), got in sorted(na.items()):
        notes.append("%s entry, %s: %d rows not applicable on this host (run unsandboxed, "
                     "the host itself refuses them; the sandbox got %s)"
                     % (kind, where, len(got), "/".join(sorted(set(got)))))
    return fails, notes


def summary(rows):
    """Counts for the header, per column, over the x86_64 numbers 0..599."""
    out = []
    for col, where in ((1, "one-shot"), (2, "pool cell")):
        counts = {"reachable": 0, "refused": 0, "kernel-enosys": 0, "other": 0}
        for row in rows:
            if row[0].startswith("sys ") and not row[0].startswith("sys 0x"):
                counts[classify(row[col])] += 1
        out.append("%s: %d reachable, %d refused by the filter, %d reachable but ENOSYS "
                   "from the kernel, %d other" % (where, counts["reachable"], counts["refused"],
                                                  counts["kernel-enosys"], counts["other"]))
    return out


HEADER = """\
# codecell's kernel surface on x86_64: what sandboxed code can reach.
# Generated by tests/surface/surface.py, which runs build/helpers/surface
# (tests/helpers/surface.c) in a one-shot run and in a pool cell.
# `make surface` regenerates it and fails on any difference;
# `make surface-update` rewrites it.  Do not edit.
#
# kernel: {release}
# (the check compares only on a kernel with the same major.minor)
#
# Columns: probe, name, one-shot run, pool cell.  Verdicts:
#   allow=E   the filter let the call through and the kernel ran it with
#             harmless arguments (fd -1, pointer -1, ...): it answered E
#             (ok: success).  allow=ENOSYS: the kernel has no such call.
#   allow     the filter let it through; not run (no harmless arguments:
#             exit, pause, fork, sync, ...), or the prober does not vet it
#   ENOSYS, EPERM, EAFNOSUPPORT
#             the filter refused with this errno: the kernel never saw it
#   SIGSYS    the filter killed the process (wrong architecture)
#   other     an answer no filter gave: uretprobe and uprobe, which the
#             kernel lets past every seccomp filter (KERNEL_BYPASS in
#             surface.py); anything else fails the check
#   n/a(V)    x32 and i386 rows: not applicable on this host.  Each entry
#             row is also probed unsandboxed (the control); where the host
#             itself refuses it (no 32-bit emulation: SIGSEGV), there is
#             no filter to judge.  V: what the sandbox got.  Left out of
#             the comparison with this file.
# A refused call is judged without being made (a seccomp USER_NOTIF guard
# holds every call the filter lets through; tests/helpers/surface.c).
#
# x86_64 numbers 0..599:
{summary}
"""

SECTIONS = [
    ("sys", "system calls, x86_64 (syscall instruction)"),
    ("x32", "x32 ABI: number | 0x40000000"),
    ("i386", "i386 ABI: int 0x80"),
    ("clone", "clone() flags (the kernel reads the low 32 bits)"),
    ("clone3", "clone3() (flags in memory: refused outright)"),
    ("socket", "socket(family, type, 0): family type"),
    ("socketproto", "socket(family, type, protocol): raw and ping sockets"),
    ("netlink", "socket(AF_NETLINK, SOCK_RAW, protocol)"),
    ("ioctl", "ioctl(-1, request): the filter's ioctl rules, with high bits"),
    ("prctl", "prctl(option, 0, 0, 0, 0)"),
    ("fd", "fds the ioctl scan used"),
    ("ioctlfam", "ioctl type bytes a handler answers, per fd: commands, errnos "
     "(scan: every number 0..255 unsized, and _IOR/_IOW/_IOWR of 4 and 8 bytes, "
     "argument pointer -1)"),
    ("ioctleacces", "ioctl commands refused with EACCES (Landlock, device files)"),
    ("ioctleinval", "ioctl type bytes whose every command gets EINVAL (a catch-all)"),
]


def render(rows, names, release=None):
    release = release or platform.release()
    out = [HEADER.format(release=release,
                         summary="\n".join("#   " + s for s in summary(rows))).rstrip("\n")]
    for kind, title in SECTIONS:
        sel = [r for r in rows if r[0].split()[0] == kind]
        if not sel:
            continue
        out.append("")
        out.append("## %s" % title)
        for key, a, b in sel:
            name = label(key, names)
            if kind in ("sys", "x32", "i386"):
                out.append("%-22s %-5s %-18s %s" % (name or "-", key.split()[1], a, b))
            elif kind in ("ioctlfam", "ioctleacces", "ioctleinval", "fd"):
                out.append("%-28s %-22s %s" % (" ".join(key.split()[1:]), a, b))
            else:
                out.append("%-16s %-36s %-22s %s" % (" ".join(key.split()[1:]), name, a, b))
    return "\n".join(out) + "\n"


def report(oneshot, pool, control):
    """rows, names, text from the prober's lines and the control's."""
    names = syscall_names()
    rows = merge(oneshot, pool, control)
    return rows, names, render(rows, names)


def generate():
    return report(run_oneshot(), run_pool(), run_control())


# Rows whose errno depends on the host's CPU, not on the filter: the
# filter lets them through either way, and the kernel's answer follows
# the CPU's mitigations.  PR_SET_SPECULATION_CTRL with zero arguments
# (store bypass, no control bit): ENXIO where the CPU's store-bypass
# mitigation cannot be controlled per task, ERANGE where it can (the
# bad control value is checked then).  Both machines of this workplace
# were seen, one each.
HOST_CPU_ROWS = {"PR_SET_SPECULATION_CTRL": {"allow=ENXIO", "allow=ERANGE"}}


def _entry_rows(text):
    """The report's lines, and its entry rows as [(line index, (section,
    number), values)]."""
    lines, out, section = text.splitlines(), [], None
    titles = {t: k for k, t in SECTIONS}
    for i, line in enumerate(lines):
        if line.startswith("## "):
            section = titles.get(line[3:])
        elif section in ENTRY_SECTIONS and line and not line.startswith("#"):
            parts = line.split()
            if len(parts) >= 4:
                out.append((i, (section, parts[1]), parts[2:]))
    return lines, out


def comparable(text, skip=()):
    """The report's lines without the kernel's build name (another build
    of the same major.minor compares), with the answers of HOST_CPU_ROWS
    folded into one, and without the entry rows in skip."""
    lines, entries = _entry_rows(text)
    drop = {i for i, key, _ in entries if key in skip}
    out = []
    for i, line in enumerate(lines):
        if line.startswith("# kernel: ") or i in drop:
            continue
        parts = line.split()
        if len(parts) == 4 and parts[1] in HOST_CPU_ROWS:
            same = HOST_CPU_ROWS[parts[1]]
            parts = parts[:2] + ["|".join(sorted(same)) if v in same else v for v in parts[2:]]
            line = "%-16s %-36s %-22s %s" % tuple(parts)
        out.append(line)
    return out


def not_applicable_rows(text):
    """The entry rows (section, number) a report calls not applicable."""
    return {key for _, key, vals in _entry_rows(text)[1]
            if any(not_applicable(v) is not None for v in vals)}


def diff_reports(old, new):
    """The unified diff of two reports, as lines: what differs in the
    surface.  An entry row that either host refuses itself (n/a) is not
    compared: the wall there is the host's, on one side or the other."""
    skip = not_applicable_rows(old) | not_applicable_rows(new)
    return list(difflib.unified_diff(comparable(old, skip), comparable(new, skip),
                                     os.path.relpath(REPORT, ROOT), "now", lineterm="", n=0))


def kernel_of(text):
    m = re.search(r"^# kernel: (\S+)", text, re.M)
    return m.group(1) if m else None


def major_minor(release):
    m = re.match(r"(\d+)\.(\d+)", release or "")
    return m.groups() if m else None


def main(argv):
    mode = argv[1] if len(argv) > 1 else "--check"
    if mode == "--check" and os.path.exists(REPORT):
        with open(REPORT) as f:
            old = f.read()
        made_on = kernel_of(old)
        if major_minor(made_on) != major_minor(platform.release()):
            print("surface: skipped: %s was made on kernel %s, this is %s; "
                  "make surface-update regenerates it" % (os.path.relpath(REPORT, ROOT), made_on,
                                                          platform.release()))
            return 0
    rows, names, text = generate()
    fails, notes = policy_check(rows, names)
    for n in notes:
        print("surface: note: " + n)
    for f in fails:
        print("surface: POLICY: " + f)
    if mode == "--print":
        sys.stdout.write(text)
        return 1 if fails else 0
    if mode == "--update":
        with open(REPORT, "w") as f:
            f.write(text)
        print("surface: wrote %s" % os.path.relpath(REPORT, ROOT))
        return 1 if fails else 0
    old = ""
    if os.path.exists(REPORT):
        with open(REPORT) as f:
            old = f.read()
    diff = diff_reports(old, text)
    if diff:
        print("surface: the kernel surface differs from %s (a filter change? "
              "make surface-update rewrites it, then review the diff):" % os.path.relpath(REPORT, ROOT))
        print("\n".join(diff))
    if not diff and not fails:
        print("surface: %s matches, and agrees with the policy" % os.path.relpath(REPORT, ROOT))
    return 1 if diff or fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
