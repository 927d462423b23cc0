"""The kernel surface report (tests/surface/x86_64.txt) is current: the
prober (tests/helpers/surface.c), run in a one-shot run and in a pool cell,
finds exactly the checked-in surface, and every verdict agrees with the
policy in src/sandbox/seccomp_policy.c.  A filter change that widens the
surface fails here until `make surface-update` rewrites the report (and a
reviewer reads the diff).

On a kernel whose major.minor differs from the report's, the comparison
cannot hold: the tests say so and pass (the policy check still runs)."""
import difflib
import os
import platform
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "surface"))
from cctest import test, main, check, eq  # noqa: E402
import surface  # noqa: E402

_gen = {}


def generated():
    if not _gen:
        _gen["rows"], _gen["names"], _gen["text"] = surface.generate()
    return _gen["rows"], _gen["names"], _gen["text"]


def checked_in():
    with open(surface.REPORT) as f:
        return f.read()


# Rows whose errno depends on the host's CPU, not on the filter: the
# filter lets them through either way, and the kernel's answer follows
# the CPU's mitigations.  PR_SET_SPECULATION_CTRL with zero arguments
# (store bypass, no control bit): ENXIO where the CPU's store-bypass
# mitigation cannot be controlled per task, ERANGE where it can (the
# bad control value is checked then).  Both machines of this workplace
# were seen, one each.
HOST_CPU_ROWS = {"PR_SET_SPECULATION_CTRL": {"allow=ENXIO", "allow=ERANGE"}}


def comparable(text):
    """The report's lines without the kernel's build name (another build
    of the same major.minor compares), and with the answers of
    HOST_CPU_ROWS folded into one."""
    out = []
    for line in text.splitlines():
        if line.startswith("# kernel: "):
            continue
        parts = line.split()
        if len(parts) == 4 and parts[1] in HOST_CPU_ROWS:
            same = HOST_CPU_ROWS[parts[1]]
            parts = parts[:2] + ["|".join(sorted(same)) if v in same else v for v in parts[2:]]
            line = "%-16s %-36s %-22s %s" % tuple(parts)
        out.append(line)
    return out


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
    # not its surface, and so is an answer that follows the CPU
    diff = "\n".join(difflib.unified_diff(comparable(old), comparable(text), "checked-in",
                                          "now", lineterm="", n=0))
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
    for abi in ("x32", "i386"):
        got = {v for k, a, b in rows if k.startswith(abi + " ") for v in (a, b)}
        eq(got, {"SIGSYS"}, "%s entry: every number must kill" % abi)
    # and the controls: the guard really sees allowed calls
    eq(d.get("clone plain"), ("allow", "allow"), "plain clone")
    eq(d.get("ioctl FIONREAD+bit32"), ("allow=EBADF", "allow=EBADF"), "FIONREAD")




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
