"""How long a cell that runs out of memory takes to be stopped and
reported, in each mode (one-shot, cold, pooled and forked sessions), on a
quiet machine and with every CPU kept busy.

The cell allocates page by page up to 32 MiB below its limit, prints the
time, then goes on past the limit.  The figure is from that print to the
client holding the result (for a session: after its kernel was restarted,
which the reply waits for).  It also says how each ended: memory_limit
is right; timeout (the deadline came first) is the defect this measures.

  python3 bench/bench_memkill.py [BUILD] [--vs OTHER_BUILD] [--rounds N]

With --vs, the same rounds run against OTHER_BUILD's codecell in turn,
for the before and after of a change.  Loopback only; every process it
starts it stops."""
import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "lib"))
from cctest import cpus_busy  # noqa: E402

LIMIT_MB = 256
CODE = ("import sys, time\nb = []\n"
        "for i in range(%d):\n"
        "    b.append(bytearray(1 << 20))\n"
        "    if i == %d:\n"
        "        print(repr(time.time()), flush=True)\n" % (LIMIT_MB + 256, LIMIT_MB - 32))
TIMEOUT_S = 60


class Server:
    def __init__(self, codecell, pool):
        self.p = subprocess.Popen([codecell, "serve", "--listen", "127.0.0.1:0", "--pool", str(pool)],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.port = int(re.search(r"127\.0\.0\.1:(\d+)", self.p.stdout.readline()).group(1))

    def req(self, method, path, body=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
        try:
            c.request(method, path, body=json.dumps(body) if body is not None else None,
                      headers={"Content-Type": "application/json"} if body is not None else {})
            r = c.getresponse()
            return r.status, json.loads(r.read() or b"null")
        finally:
            c.close()

    def stop(self):
        self.p.terminate()
        self.p.wait(timeout=60)


def figure(result, t_end):
    out = (result.get("logs") or {}).get("stdout", "").split()
    return (t_end - float(out[0])) * 1000 if out else None, result["status"]


def oneshot(codecell):
    t = None
    p = subprocess.run([codecell, "run", "--json", "--memory", "%dM" % LIMIT_MB,
                        "--timeout", "%ds" % TIMEOUT_S, "-"], input=CODE, capture_output=True,
                       text=True, timeout=300)
    t = time.time()
    return figure(json.loads(p.stdout), t)


def in_session(srv, fork):
    st, s = srv.req("POST", "/v1/sessions", {"limits": {"memory": "%dM" % LIMIT_MB},
                                             "timeout": TIMEOUT_S})
    sid = s["id"]
    if fork:
        st, f = srv.req("POST", "/v1/sessions/%s/fork" % sid)
        srv.req("DELETE", "/v1/sessions/" + sid)
        sid = f["id"]
    st, r = srv.req("POST", "/v1/sessions/%s/execute" % sid, {"code": CODE})
    t = time.time()
    srv.req("DELETE", "/v1/sessions/" + sid)
    return figure(r, t)


def mode_runs(codecell, mode, rounds):
    if mode == "one-shot":
        return [oneshot(codecell) for _ in range(rounds)]
    srv = Server(codecell, 0 if mode == "cold" else 2)
    try:
        return [in_session(srv, mode == "forked") for _ in range(rounds)]
    finally:
        srv.stop()


def line(label, runs):
    ms = [m for m, _ in runs if m is not None]
    ends = {}
    for _, st in runs:
        ends[st] = ends.get(st, 0) + 1
    med = statistics.median(ms) if ms else float("nan")
    print("  %-34s %8.0f %8.0f  %s" % (label, med, max(ms) if ms else float("nan"),
                                       ", ".join("%s %d" % kv for kv in sorted(ends.items()))),
          flush=True)
    return med


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--vs")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    builds = [("this", os.path.join(a.build, "codecell"))]
    if a.vs:
        builds.append(("vs", os.path.join(a.vs, "codecell")))
    print("memory kill: %d MiB limit; ms from 32 MiB below the limit to the result (median, max), "
          "%d rounds" % (LIMIT_MB, a.rounds))
    for busy in (False, True):
        print("%s (load %.1f)" % ("every CPU busy" if busy else "quiet", os.getloadavg()[0]))
        with cpus_busy(busy):
            for mode in ("one-shot", "cold", "pooled", "forked"):
                meds = [line("%s %s" % (mode, name), mode_runs(cc, mode, a.rounds))
                        for name, cc in builds]
                if len(meds) == 2 and meds[1] == meds[1] and meds[1] > 0:
                    print("  %-34s %8.2f" % ("  ratio this/vs", meds[0] / meds[1]))


if __name__ == "__main__":
    main()
