"""The kernel surface report (tests/surface/x86_64.txt) is current: the
prober (tests/helpers/surface.c), run in a one-shot run and in a pool cell,
finds exactly the checked-in surface, and every verdict agrees with the
policy in src/sandbox/seccomp_policy.c.  A filter change that widens the
surface fails here until `make surface-update` rewrites the report (and a
reviewer reads the diff).

On a kernel whose major.minor differs from the report's, the comparison
cannot hold: the tests say so and pass (the policy check still runs).

A host that refuses an entry itself (no 32-bit emulation: int 0x80 dies
of SIGSEGV, sandboxed or not) makes those rows not applicable: the
report compares each entry row with the same probe run unsandboxed (the
control).  build/shims/no_ia32.so on the control stands in for such a
host here, where int 0x80 works."""
import os
import platform
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "surface"))
from cctest import test, main, check, eq  # noqa: E402
import surface  # noqa: E402

SHIM = os.path.join(surface.ROOT, os.environ.get("CODECELL_BUILD", "build"), "shims",
                    "no_ia32.so")

_gen = {}


def probed():
    """The prober's lines from a one-shot run and a pool cell (run once)."""
    if "oneshot" not in _gen:
        _gen["oneshot"], _gen["pool"] = surface.run_oneshot(), surface.run_pool()
    return _gen["oneshot"], _gen["pool"]


def generated(control=None):
    """rows, names, text; control: the control's answers (default: run
    unsandboxed here, once)."""
    if control is None:
        if "control" not in _gen:
            _gen["control"] = surface.run_control()
        control = _gen["control"]
    return surface.report(*probed(), control)


def checked_in():
    with open(surface.REPORT) as f:
        return f.read()


@test
def report_matches_the_checked_in_file():
    old = checked_in()
    made_on = surface.kernel_of(old)
    if surface.major_minor(made_on) != surface.major_minor(platform.release()):
        print("# skip: %s was made on kernel %s, this is %s" % (surface.REPORT, made_on,
                                                               platform.release()))
        return
    _, _, text = generated()
    # the kernel's own build name (6.18.44-fc-v595) is the report's note,
    # not its surface, and so is an answer that follows the CPU, and an
    # entry this host refuses itself (surface.diff_reports)
    diff = "\n".join(surface.diff_reports(old, text))
    check(not diff, "the kernel surface changed (make surface-update, then review):\n" + diff)


@test
def every_verdict_agrees_with_the_policy():
    rows, names, _ = generated()
    fails, notes = surface.policy_check(rows, names)
    for n in notes:
        print("# " + n)
    check(not fails, "verdicts the policy does not explain:\n" + "\n".join(fails))


@test
def bypass_tricks_are_refused_in_both_contexts():
    rows, _, _ = generated()
    d = {k: (a, b) for k, a, b in rows}
    for k, want in (("clone3 plain", "ENOSYS"), ("clone3 NEWUSER", "ENOSYS"),
                    ("clone NEWUSER+bit32", "EPERM"), ("ioctl TIOCSTI+bit32", "EPERM"),
                    ("ioctl TIOCSTI+hi32-all", "EPERM"), ("ioctl TIOCLINUX+hi32-all", "EPERM"),
                    ("socket 0x100000028 1", "EAFNOSUPPORT"), ("socket 40 1", "EAFNOSUPPORT")):
        eq(d.get(k), (want, want), k)
    control = _gen["control"]
    for abi in ("x32", "i386"):
        # where this host takes the entry unsandboxed, the filter must
        # kill every number; where it refuses it itself, not applicable
        took = [k for k in control if k.startswith(abi + " ") and control[k] == "allow"]
        got = {v for k, a, b in rows if k in took for v in (a, b)}
        check(not took or got == {"SIGSYS"}, "%s entry: every number must kill: %r" % (abi, got))
        if len(took) < surface.NR_MAX:
            print("# %s entry: %d of %d numbers not applicable on this host (refused "
                  "unsandboxed too)" % (abi, surface.NR_MAX - len(took), surface.NR_MAX))
    # and the controls: the guard really sees allowed calls
    eq(d.get("clone plain"), ("allow", "allow"), "plain clone")
    eq(d.get("ioctl FIONREAD+bit32"), ("allow=EBADF", "allow=EBADF"), "FIONREAD")



@test
def an_entry_the_host_refuses_is_not_applicable():
    """The control run under build/shims/no_ia32.so (every i386 call
    refused, as on a kernel without 32-bit emulation): each i386 row says
    n/a, the report still matches the checked-in file and the policy,
    and the x32 rows, which the control still takes, are judged as
    ever."""
    check(os.path.exists(SHIM), "shim not built: %s (make all)" % SHIM)
    control = surface.run_control(preload=SHIM)
    eq({v for k, v in control.items() if k.startswith("i386 ")}, {"ENOSYS"},
       "the control under the shim")
    rows, names, text = generated(control)
    i386 = [(k, a, b) for k, a, b in rows if k.startswith("i386 ")]
    eq(len(i386), surface.NR_MAX, "i386 rows")
    for k, a, b in i386:
        check(surface.not_applicable(a) is not None and surface.not_applicable(b) is not None,
              "%s: %s %s, not n/a" % (k, a, b))
    check(re.search(r"^restart_syscall +0 +n/a\(SIGSYS\) +n/a\(SIGSYS\)$", text, re.M),
          "the report's i386 rows: %r"
          % [l for l in text.splitlines() if l.startswith("restart_syscall")])
    eq({v for k, a, b in rows if k.startswith("x32 ") for v in (a, b)}, {"SIGSYS"}, "x32 rows")
    fails, notes = surface.policy_check(rows, names)
    check(not fails, "verdicts the policy does not explain:\n" + "\n".join(fails))
    check(any("i386 entry" in n and "600 rows not applicable" in n for n in notes), notes)
    old = checked_in()
    if surface.major_minor(surface.kernel_of(old)) == surface.major_minor(platform.release()):
        diff = surface.diff_reports(old, text)
        check(not diff, "n/a rows compared with the checked-in file:\n" + "\n".join(diff))


@test
def not_applicable_hides_no_wall():
    """The checker: a row the host refuses must still not be reachable in
    the sandbox, a row the host takes must still be the filter's kill,
    and a broken control calls nothing not applicable."""
    oneshot, pool = probed()
    control = dict(_gen.get("control") or surface.run_control())
    refusing = dict(control, **{"i386 20": "SIGSEGV"})
    # the host refuses getpid's entry, yet the sandbox ran it: caught
    ran = [l.replace("i386 20 SIGSYS", "i386 20 allow=ok") for l in oneshot]
    check(ran != oneshot, "no i386 20 row in the prober's output")
    rows, names, _ = surface.report(ran, pool, refusing)
    fails, _ = surface.policy_check(rows, names)
    check(any("i386 20 " in f and "REACHABLE" in f for f in fails), "not caught: %r" % fails)
    # the host takes it, the sandbox saw a fault, not the filter: caught
    faulted = [l.replace("i386 20 SIGSYS", "i386 20 SIGSEGV") for l in oneshot]
    rows, names, _ = surface.report(faulted, pool, dict(control, **{"i386 20": "allow"}))
    fails, _ = surface.policy_check(rows, names)
    check(any("i386 20 " in f for f in fails), "a fault passed for the filter's kill: %r" % fails)
    # a control that timed out or broke is no refusal
    for bad in ("timeout", "error:guard:EPERM", "allow=ok"):
        try:
            surface.report(oneshot, pool, dict(control, **{"i386 20": bad}))
        except AssertionError:
            continue
        raise AssertionError("a control answering %r made a row not applicable" % bad)


@test
def the_policy_check_catches_a_reachable_refused_call():
    # the checker itself: a row the policy refuses, made reachable, must
    # fail it (so a widening cannot pass by a bug in the comparison)
    rows, names, _ = generated()
    widened = [(k, "allow=EINVAL" if k == "sys 165" else a, b) for k, a, b in rows]
    eq(dict((k, a) for k, a, b in rows).get("sys 165"), "EPERM", "mount")
    fails, _ = surface.policy_check(widened, names)
    check(any("sys 165" in f and "REACHABLE" in f for f in fails), "not caught: %r" % fails)


if __name__ == "__main__":
    main()
