"""`codecell serve` against cells that flood it with results: what comes
out of a sandbox is bounded in the server's memory (limits.result_limit),
whether the flood is forged on the kernel's event pipe (fd 4, which the
cell's own code can write to) or made of real figures, answered as one
JSON object or streamed as NDJSON.  The bound is a memory bound, read
from the server's VmHWM, never a timing."""
import http.client
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import BUILD, Serve, check, eq, main, test  # noqa: E402

MIB = 1 << 20
OUTPUT_LIMIT = 1 * MIB   # the defaults (README, "Limits")
RESULT_LIMIT = 8 * MIB
LINE_MAX = RESULT_LIMIT + 2 * OUTPUT_LIMIT + 64 * 1024
# The README's per-execution bound for the server (4 x the line cap +
# 7 x result_limit + 50 x output_limit = 11 x result_limit + 58 x
# output_limit + 256 KiB, outputs[] included), with the defaults:
# 146.25 MiB.
BOUND = 4 * LINE_MAX + 7 * RESULT_LIMIT + 50 * OUTPUT_LIMIT
SANITIZED = BUILD == "build-san"


class Server(Serve):
    """A `codecell serve` on a free loopback port (port 0, read back)."""

    def stream(self, path, body, timeout=300):
        """Every event of an NDJSON answer."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request("POST", path, body=json.dumps(body),
                      headers={"Content-Type": "application/json",
                               "Accept": "application/x-ndjson"})
            r = c.getresponse()
            eq(r.status, 200, "stream status")
            return [json.loads(line) for line in r.read().splitlines()]
        finally:
            c.close()

    def execute(self, sid, code):
        # a generous timeout: the figures take a while on a busy machine
        st, j = self.post("/v1/sessions/%s/execute" % sid, {"code": code, "timeout": 600},
                          timeout=900)
        eq(st, 200, "execute: %r" % (j,))
        return j

    def hwm(self):
        """The server's peak resident memory so far, in bytes."""
        with open("/proc/%d/status" % self.p.pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        raise AssertionError("no VmHWM for the server")

    def stop(self):
        return Serve.stop(self, timeout=60)


# Forged events at the running cell's id (the kernel's state is reachable
# from the cell: it is Python in the same process; gc.get_objects() does
# not list it in a pooled kernel, whose template froze it).
FORGE = r'''
import os, sys
f = sys._getframe()  # the kernel's state, from the frames running this cell
while "_S" not in f.f_globals:
    f = f.f_back
S = f.f_globals["_S"]
def forge(line, times):
    data = memoryview(line.encode() * times)
    while data:
        data = data[os.write(4, data):]
big = '{"type":"display","id":%d,"data":{"text/plain":"%s"}}\n' % (S.cur_id, "x" * (1 << 20))
for _ in range(%(big)d):
    forge(big, 1)
forge('{"type":"display","id":%d,"data":{"text/plain":"y"}}\n' % S.cur_id, %(tiny)d)
forge('{"type":"display","id":%d,"data":{"v":[%s]}}\n' % (S.cur_id, ",".join(["0"] * 4000)), %(wide)d)
print("forged")
'''
FLOOD = FORGE.replace("%(big)d", "300").replace("%(tiny)d", "200000").replace("%(wide)d", "2000")

# The worst case of JSON escaping: results of 2-byte characters (3x as
# ASCII JSON), lines just under the line cap, stdout and stderr of control
# bytes (6x), and a forged error whose texts are control bytes too.
ESCAPES = r'''
import json, os, sys
f = sys._getframe()  # the kernel's state, from the frames running this cell
while "_S" not in f.f_globals:
    f = f.f_back
S = f.f_globals["_S"]
def forge(line, times):
    data = memoryview(line.encode() * times)
    while data:
        data = data[os.write(4, data):]
n = (%(line_max)d - 200) // 2
forge('{"type":"display","id":%%d,"data":{"text/plain":"%%s"}}\n' %% (S.cur_id, "\u00e9" * n), 3)
forge('{"type":"display","id":%%d,"data":{"text/plain":"%%s"}}\n' %% (S.cur_id, "\u00e9" * (1 << 19)), 60)
for i in range(7):
    sys.stdout.write("\x01" * (1 << 20))
    sys.stderr.write("\x02" * (1 << 20))
sys.stdout.flush()
text = "\x03" * (200 << 10) + "v" * (3 << 20)  # a line under the cap, a text over output_limit
forge(json.dumps({"type": "error", "id": S.cur_id, "name": "E", "value": text,
                  "traceback": text}) + "\n", 1)
''' % {"line_max": LINE_MAX}

FIGURES = r'''
import numpy as np
import matplotlib.pyplot as plt
rng = np.random.default_rng(1)
for i in range(24):
    fig = plt.figure(figsize=(10, 10), dpi=100)
    plt.imshow(rng.random((1000, 1000, 3)))
    plt.show()
print("shown")
'''


def check_truncated(res, what):
    eq(res["status"], "ok", "%s: status (%r)" % (what, res.get("error")))
    eq(res["truncated"]["results"], True, what + ": truncated.results")
    check("output" in res["limits_hit"], "%s: limits_hit %r" % (what, res["limits_hit"]))
    last = res["results"][-1]
    check("dropped: over the result limit" in last.get("text/plain", ""),
          "%s: no marker at the end of results: %r" % (what, last.get("text/plain", "")[:200]))
    # as the kernel wrote them: UTF-8, not the server's ASCII escapes
    kept = sum(len(json.dumps(b, ensure_ascii=False).encode()) for b in res["results"])
    check(kept <= RESULT_LIMIT + 4096, "%s: %d bytes of results kept" % (what, kept))


def flood(code, stream, what):
    s = Server()
    try:
        sid = s.session()
        s.execute(sid, "import gc, os, json\n1")
        base = s.hwm()
        if stream:
            evs = s.stream("/v1/sessions/%s/execute" % sid, {"code": code, "timeout": 600},
                           timeout=900)
            end = evs[-1]
            eq(end["type"], "end", what + ": last event")
            res = end["result"]
        else:
            res = s.execute(sid, code)
        grew = s.hwm() - base
        print("# %s: the server grew by %.1f MiB (bound %.1f MiB)"
              % (what, grew / MIB, BOUND / MIB), flush=True)
        # Under ASan (make sanitize) a freed block waits in its quarantine
        # (256 MiB) and every byte has shadow: the peak is not the
        # server's own memory, and the bound is judged by the plain build
        # of the same CI run.  What the flood does to results is checked
        # in both.
        if not SANITIZED:
            check(grew <= BOUND, "%s: the server grew by %.1f MiB, over the bound of %.1f MiB"
                  % (what, grew / MIB, BOUND / MIB))
        check_truncated(res, what)
        # and it still serves, the session too
        eq(s.execute(sid, "6 * 7")["results"][0]["text/plain"], "42", what + ": next cell")
        return res
    finally:
        s.stop()


@test
def regression_forged_display_flood_is_capped_in_the_server():
    res = flood(FLOOD, False, "forged flood")
    eq(res["logs"]["stdout"], "forged\n")


@test
def regression_forged_display_flood_is_capped_in_a_stream():
    flood(FLOOD, True, "forged flood, streamed")


@test
def regression_real_figures_are_capped_in_the_server():
    res = flood(FIGURES, False, "figures")
    pngs = [b for b in res["results"] if "image/png" in b]
    check(pngs, "no figure kept at all")


@test
def regression_real_figures_are_capped_in_a_stream():
    flood(FIGURES, True, "figures, streamed")


@test
def regression_escaping_worst_case_stays_within_the_bound():
    res = flood(ESCAPES, False, "escapes")
    eq((res["error"]["name"], res["truncated"]["stdout"]), ("E", True))
    check(len(res["error"]["traceback"]) < 2 * OUTPUT_LIMIT, "the error's text is not capped")


@test
def regression_escaping_worst_case_stays_within_the_bound_in_a_stream():
    flood(ESCAPES, True, "escapes, streamed")


@test
def result_limit_is_a_limit_of_the_session():
    s = Server()
    try:
        # 3 figures of a few KiB fit in 1 MiB; a 2 MiB forged line does not
        st, j = s.post("/v1/sessions", {"limits": {"result_limit": "1M"}})
        eq((st, j["limits"]["result_limit"]), (201, MIB), "the session object")
        sid = j["id"]
        res = s.execute(sid, FORGE.replace("%(big)d", "2").replace("%(tiny)d", "3")
                        .replace("%(wide)d", "0"))
        eq([b.get("text/plain") for b in res["results"][:3]], ["y", "y", "y"])
        check("2 results" in res["results"][-1]["text/plain"], res["results"][-1])
        eq(res["truncated"]["results"], True)
        # under the limit nothing is cut
        res = s.execute(sid, "import matplotlib.pyplot as plt\nplt.plot([1, 2]); plt.show()")
        eq((res["truncated"]["results"], len(res["results"])), (False, 1))
        st, j = s.post("/v1/sessions", {"limits": {"result_limit": "65M"}})
        eq((st, j["error"]["code"]), (400, "invalid_value"))
        check("must be at most 64M (the ceiling of 'result_limit')" in j["error"]["message"], j)
    finally:
        s.stop()


@test
def regression_unparsable_event_lines_are_counted_not_silent():
    s = Server()
    try:
        sid = s.session()
        res = s.execute(sid, "import os\nos.write(4, b'not json\\n[1,2]\\n')\n'after'")
        eq(res["status"], "ok")
        eq(res["results"][0]["text/plain"], "'after'")
        check("2 event lines from the kernel were not JSON objects" in res.get("warning", ""),
              res.get("warning"))
        res = s.execute(sid, "1")
        check("warning" not in res, "the warning stays: %r" % res.get("warning"))
    finally:
        s.stop()


main()
