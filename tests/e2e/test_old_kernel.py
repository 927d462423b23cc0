"""codecell on an older kernel, made to look so by a preload shim
(tests/shims/): features the sandbox uses when the kernel has them must
not be needed where it has not.

Without time namespaces (before Linux 5.6, or without CONFIG_TIME_NS) a
run keeps the host's clocks.  It must still run: as root, the uid change
makes the init and the early worker non-dumpable, and the one call that
made them dumpable again is in the time namespace's set-up, so anything
that asks whether one may ptrace the other (a setns() through a pidfd
does) fails there.  The worker and the init hand each other namespace
fds instead (child.c, worker_prepare)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import BUILD, ROOT, check, codecell, eq, main, test  # noqa: E402

SHIM = os.path.join(ROOT, BUILD, "shims", "no_timens.so")
UPTIME = "echo ok; cut -d. -f1 /proc/uptime\n"


def run_uptime(net, env=None):
    """The sandbox's uptime in whole seconds, from a run with --net net."""
    r = codecell("run", "--lang", "bash", "--net", net, "-", stdin=UPTIME, env=env)
    eq(r.status, 0, r)
    lines = r.stdout.split()
    eq(lines[0], "ok", r)
    return int(lines[1])


def host_uptime():
    with open("/proc/uptime") as f:
        return int(float(f.read().split()[0]))


@test
def a_run_works_without_time_namespaces():
    check(os.path.isfile(SHIM), "shim not built: %s (make all)" % SHIM)
    # control: with them, the sandbox's uptime starts at 0
    check(run_uptime("loopback") < 60, "the sandbox's uptime is not its own")
    if host_uptime() < 120:
        print("# skip: the host booted less than two minutes ago")
        return
    # an ASan build must come first in the library list; the shim asks
    # nothing of it
    env = dict(os.environ, LD_PRELOAD=SHIM,
               ASAN_OPTIONS="verify_asan_link_order=0:" + os.environ.get("ASAN_OPTIONS", ""))
    for net in ("loopback", "none"):
        up = run_uptime(net, env)
        # the shim took: the clocks are the host's
        check(up >= 60, "--net %s: no time namespace, yet the uptime is %d s" % (net, up))


if __name__ == "__main__":
    main()
