"""The E2B door under a policy file: the same checks and audit records as
/v1 for its commands (process.Process Start, SendSignal) and its file
calls (POST /files, filesystem.* MakeDir, Move, Remove), errors in E2B's
shapes, and a policy's client keys taken as E2B API keys (X-API-Key),
through E2B's published JS SDK (tests/node/e2b_client.mjs) and raw
HTTP."""
import hashlib
import http.client
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import ROOT, Serve, check, eq, main, test, write  # noqa: E402

NODE_DIR = os.path.join(ROOT, "tests", "node")
SDK = os.path.join(NODE_DIR, "node_modules", "@e2b", "code-interpreter", "package.json")
ENVD = {"E2b-Sandbox-Port": "49983"}
ALICE, BOB = "alice-key-0123456789", "e2b_bob0123456789abcdef"


def sha(s):
    return hashlib.sha256(s.encode()).hexdigest()


def audit_lines(path):
    with open(path) as f:
        return [json.loads(x) for x in f]


def create(s, headers=None):
    st, j = s.request("POST", "/sandboxes", {"templateID": "base"}, headers=headers)
    eq(st, 201, "create: %r" % (j,))
    return j


def to(sb, **more):
    h = dict(ENVD, **{"E2b-Sandbox-Id": sb["sandboxID"]}, **more)
    if sb.get("envdAccessToken"):
        h["X-Access-Token"] = sb["envdAccessToken"]
    return h


def rpc(s, sb, name, body, **more):
    return s.request("POST", "/filesystem.Filesystem/" + name, body,
                     headers=to(sb, **more))


def envelope(msg, flags=0):
    data = json.dumps(msg).encode()
    return struct.pack(">BI", flags, len(data)) + data


def frames(data):
    out = []
    while len(data) >= 5:
        flags, n = struct.unpack(">BI", data[:5])
        out.append((flags, json.loads(data[5:5 + n])))
        data = data[5 + n:]
    return out


def start(s, sb, script, timeout_ms=60000):
    st, data = s.request("POST", "/process.Process/Start",
                         envelope({"process": {"cmd": "/bin/bash", "args": ["-l", "-c", script]}}),
                         headers=to(sb, **{"Content-Type": "application/connect+json",
                                           "Connect-Timeout-Ms": str(timeout_ms)}))
    eq(st, 200, data)
    return frames(data)


def start_waiting(s, sb, script):
    """start() in a thread (its frames in got["ev"] once joined), back
    when the script has made the file 'started'."""
    got = {}
    t = threading.Thread(target=lambda: got.update(ev=start(s, sb, script)))
    t.start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if s.request("GET", "/files?path=started", headers=to(sb))[0] == 200:
            break
        time.sleep(0.05)
    return t, got


def decided(s, decision, call):
    """call() in a thread: it is held for approval; the operator (this
    loopback server's default client) finds it pending and decides."""
    got = {}
    t = threading.Thread(target=lambda: got.update(r=call()))
    t.start()
    deadline, pending = time.monotonic() + 120, []
    while not pending and time.monotonic() < deadline:
        pending = [x["id"] for x in s.request("GET", "/v1/approvals")[1]["approvals"]
                   if x["state"] == "pending"]
        if not pending:
            time.sleep(0.05)
    check(len(pending) == 1, "one held call: %r" % pending)
    eq(s.request("POST", "/v1/approvals/" + pending[0], {"decision": decision})[0], 200)
    t.join(120)
    return got["r"]


def upload(s, sb, path, data):
    return s.request("POST", "/files?path=" + path, data,
                     headers=to(sb, **{"Content-Type": "application/octet-stream"}))


@test
def e2b_commands_and_file_calls_pass_the_policy_and_are_audited():
    """Raw HTTP, the default policy (no client keys): a command is bash
    code (languages), an upload a write_file (max_file), a Remove a
    delete_file held for approval; each has /v1's audit record."""
    with tempfile.TemporaryDirectory() as d:
        pol, audit = os.path.join(d, "p.ini"), os.path.join(d, "audit.log")
        write(pol, "[default]\nlanguages = python\nmax_file = 1K\napproval = delete_file\n"
              "approval_timeout = 10m\n")
        s = Serve("--policy", pol, "--audit", audit, "--pool", "0")
        try:
            sb = create(s)
            sid = sb["sandboxID"]
            # a command: bash, which this policy does not allow
            ev = start(s, sb, "echo hi > ran.txt")
            eq(len(ev), 1, ev)
            eq(ev[0][1]["error"]["code"], "permission_denied", ev)
            check("rule 'languages'" in ev[0][1]["error"]["message"], ev)
            # an upload over max_file; one under it
            st, j = upload(s, sb, "big.bin", b"x" * 2048)
            eq((st, j["code"]), (413, 413), j)
            check("rule 'max_file'" in j["message"], j)
            eq(upload(s, sb, "small.txt", b"x" * 10)[0], 200)
            # a multipart upload: the second part is over max_file
            body = (b"--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"p1.txt\"\r\n\r\n"
                    b"one\r\n--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"p2.bin\"\r\n\r\n"
                    + b"y" * 2048 + b"\r\n--B\r\nContent-Disposition: form-data; name=\"file\"; "
                    b"filename=\"p3.txt\"\r\n\r\nthree\r\n--B--\r\n")
            st, j = s.request("POST", "/files", body,
                              headers=to(sb, **{"Content-Type": "multipart/form-data; boundary=B"}))
            eq((st, j["code"]), (413, 413), j)
            check("rule 'max_file'" in j["message"], j)
            st, _ = s.request("GET", "/files?path=p2.bin", headers=to(sb))
            eq(st, 404, "the refused part is not there")
            # MakeDir is a write (allowed); Remove and Move are deletes,
            # held while the SDK's call waits: the operator denies them
            st, j = rpc(s, sb, "MakeDir", {"path": "/home/user/dir"})
            eq(st, 200, j)
            # one that fails is recorded as failed, not "ok"
            st, j = rpc(s, sb, "MakeDir", {"path": "/home/user/dir"})
            check(st != 200, j)
            st, j = decided(s, "deny", lambda: rpc(s, sb, "Remove", {"path": "/home/user/small.txt"}))
            eq((st, j["code"]), (403, "permission_denied"), j)
            check("rule 'approval'" in j["message"] and "denied" in j["message"], j)
            st, j = decided(s, "deny", lambda: rpc(s, sb, "Move", {
                "source": "/home/user/small.txt", "destination": "/home/user/dir/moved.txt"}))
            eq((st, j["code"]), (403, "permission_denied"), j)
            st, data = s.request("GET", "/files?path=small.txt", headers=to(sb))
            eq((st, data), (200, b"x" * 10), "small.txt is kept")
            # approved: the call goes on
            eq(decided(s, "approve", lambda: rpc(s, sb, "Remove", {"path": "/home/user/small.txt"})),
               (200, {}), "the approved Remove")
            eq(s.request("GET", "/files?path=small.txt", headers=to(sb))[0], 404, "removed")
            # a kill is an interrupt: allowed, recorded
            st, j = s.request("POST", "/process.Process/SendSignal",
                              {"process": {"pid": 999999}, "signal": "SIGNAL_SIGKILL"},
                              headers=to(sb))
            eq(st, 404, j)
            eq(s.request("DELETE", "/sandboxes/" + sid)[0], 204)
        finally:
            eq(s.stop(), 0, s.log()[-3000:])
        lines = audit_lines(audit)
        mine = [x for x in lines if x["session"] == sid]
        rej = sorted((x["tool"], x["rule"]) for x in mine if x["decision"] == "rejected")
        eq(rej, [("delete_file", "approval"), ("delete_file", "approval"),
                 ("session_exec", "languages"), ("write_file", "max_file"),
                 ("write_file", "max_file")])
        cmd = [x for x in mine if x["tool"] == "session_exec" and x["language"] == "bash"]
        eq((cmd[0]["code_sha256"], cmd[0]["door"], cmd[0]["rule"]),
           (sha("echo hi > ran.txt"), "api", "languages"), cmd)
        ok = sorted(x["tool"] for x in mine if x["decision"] == "allowed" and x["status"] == "ok" and
                    x["tool"] in ("write_file", "delete_file", "session_interrupt"))
        failed = [(x["tool"], x["arguments"]["path"], x["arguments"]["error"]) for x in mine
                  if x["status"] == "error"]
        eq(failed, [("write_file", "dir", "File exists")], mine)
        # small.txt, p1.txt, MakeDir; the approved Remove; the kill
        eq(ok, ["delete_file", "session_interrupt", "write_file", "write_file", "write_file"])
        held = [x for x in mine if x["approval"]]
        check({x["approval"]["state"] for x in held} >= {"denied", "approved"}, held)
        moved = [x for x in mine if x["tool"] == "delete_file" and "to" in (x.get("arguments") or {})]
        eq(len(moved), 1, "the Move's record names its destination")


@test
def e2b_run_code_is_checked_in_its_contexts_language():
    """runCode in a JavaScript context runs in the Python kernel's
    sandbox (e2b/jupyter.c) but is JavaScript: a policy without it
    refuses it, as an error event naming the rule (it ran before)."""
    with tempfile.TemporaryDirectory() as d:
        pol, audit = os.path.join(d, "p.ini"), os.path.join(d, "audit.log")
        write(pol, "[default]\nlanguages = python\n")
        s = Serve("--policy", pol, "--audit", audit, "--pool", "0")
        try:
            sb = create(s)
            jup = dict(to(sb), **{"E2b-Sandbox-Port": "49999"})
            st, data = s.request("POST", "/execute", {"code": "1+1", "language": "javascript"},
                                 headers=jup)
            events = [json.loads(x) for x in data.splitlines()]
            eq((st, [e["type"] for e in events]), (200, ["error", "end_of_execution"]), events)
            check(events[0]["name"] == "rejected" and "rule 'languages'" in events[0]["value"], events)
            st, data = s.request("POST", "/execute", {"code": "6*7"}, headers=jup)
            check(b'"42"' in data, data)
            eq(s.request("DELETE", "/sandboxes/" + sb["sandboxID"])[0], 204)
        finally:
            eq(s.stop(), 0, s.log()[-3000:])
        runs = [(x["language"], x["decision"], x["rule"]) for x in audit_lines(audit)
                if x["tool"] == "session_exec"]
        eq(sorted(runs), [("javascript", "rejected", "languages"), ("python", "allowed", None)])


@test
def e2b_commands_hold_an_execution_slot_and_are_recorded_at_their_end():
    """max_executions = 1: a command running holds the client's slot (a
    second is refused, 429 resource_exhausted); once it ends, its record
    has its exit code and output bytes."""
    with tempfile.TemporaryDirectory() as d:
        pol, audit = os.path.join(d, "p.ini"), os.path.join(d, "audit.log")
        write(pol, "[default]\nmax_executions = 1\n")
        s = Serve("--policy", pol, "--audit", audit, "--pool", "0")
        try:
            sb = create(s)
            first = "touch started; while [ ! -e go ]; do sleep 0.05; done; echo done; exit 3"
            t, got = start_waiting(s, sb, first)
            ev = start(s, sb, "echo second")
            eq(ev[-1][1]["error"]["code"], "resource_exhausted", ev)
            check("rule 'max_executions'" in ev[-1][1]["error"]["message"], ev)
            eq(upload(s, sb, "go", b"")[0], 200)
            t.join(120)
            end = [f[1]["event"]["end"] for f in got["ev"] if "event" in f[1] and "end" in f[1]["event"]]
            eq(end[0]["exitCode"], 3, got)
            # the slot is back, as soon as the client has read the end
            # (it was given back when the server freed the stream, a
            # moment later: the next command was refused now and then)
            for i in range(15):
                ev = start(s, sb, "echo %d" % i)
                check(any("end" in f[1].get("event", {}) for f in ev), (i, ev))
            eq(s.request("DELETE", "/sandboxes/" + sb["sandboxID"])[0], 204)
        finally:
            eq(s.stop(), 0, s.log()[-3000:])
        cmds = [x for x in audit_lines(audit) if x["tool"] == "session_exec"]
        ran = [x for x in cmds if x["code_sha256"] == sha(
            "touch started; while [ ! -e go ]; do sleep 0.05; done; echo done; exit 3")]
        eq(len(ran), 1, cmds)
        eq((ran[0]["status"], ran[0]["exit_code"], ran[0]["output_bytes"]), ("error", 3, 5), ran)
        eq([x["rule"] for x in cmds if x["decision"] == "rejected"], ["max_executions"])


def start_with(s, sb, script, **headers):
    """process.Process/Start with these headers (Connect-Timeout-Ms
    among them, or not): its frames."""
    st, data = s.request("POST", "/process.Process/Start",
                         envelope({"process": {"cmd": "/bin/bash", "args": ["-l", "-c", script]}}),
                         headers=to(sb, **{"Content-Type": "application/connect+json"}, **headers))
    eq(st, 200, data)
    return frames(data)


@test
def e2b_command_timeout_0_is_the_policys_ceiling_not_none():
    """commands.run with timeoutMs 0 (Connect-Timeout-Ms 0, or none):
    the command runs under the policy's limit.timeout, is killed at it
    (deadline_exceeded) and recorded as a timeout; it used to run on
    with no limit at all."""
    with tempfile.TemporaryDirectory() as d:
        pol, audit = os.path.join(d, "p.ini"), os.path.join(d, "audit.log")
        write(pol, "[default]\nlimit.timeout = 2s\n")
        s = Serve("--policy", pol, "--audit", audit, "--pool", "0")
        try:
            sb = create(s)
            for h in ({"Connect-Timeout-Ms": "0"}, {}):
                ev = start_with(s, sb, "sleep 20; echo never", **h)
                out = b"".join(__import__("base64").b64decode(f[1]["event"]["data"]["stdout"])
                               for f in ev if "data" in f[1].get("event", {}))
                eq((out, ev[-1][1].get("error", {}).get("code")), (b"", "deadline_exceeded"), (h, ev))
            # runCode with timeoutMs 0 (the client never goes away): the
            # cell's own timeout is the ceiling too
            st, data = s.request("POST", "/execute", {"code": "import time; time.sleep(20); print('never')"},
                                 headers=dict(to(sb), **{"E2b-Sandbox-Port": "49999"}))
            check(st == 200 and b"\"type\":\"stdout\"" not in data and b"KeyboardInterrupt" in data, data)
            # asked for more than the ceiling: refused, as on /v1
            ev = start_with(s, sb, "echo hi", **{"Connect-Timeout-Ms": "60000"})
            eq(ev[-1][1]["error"]["code"], "permission_denied", ev)
            check("limits.timeout" in ev[-1][1]["error"]["message"], ev)
            eq(s.request("DELETE", "/sandboxes/" + sb["sandboxID"])[0], 204)
        finally:
            eq(s.stop(), 0, s.log()[-3000:])
        ran = [x["status"] for x in audit_lines(audit)
               if x["tool"] == "session_exec" and x["code_sha256"] == sha("sleep 20; echo never")]
        eq(ran, ["timeout", "timeout"])


@test
def e2b_huge_connect_timeout_ms_does_not_kill_a_reattached_command():
    """commands.connect with a Connect-Timeout-Ms near 2^64: taken as the
    ceiling.  It used to wrap the deadline (now + timeout) into the past,
    and the reattached command was killed at once."""
    s = Serve("--pool", "0")
    try:
        sb = create(s)
        script = "touch started; while [ ! -e go ]; do sleep 0.05; done; echo fine; exit 4"
        t, got = start_waiting(s, sb, script)
        st, j = s.request("POST", "/process.Process/List", {}, headers=to(sb))
        eq(st, 200, j)
        pid = j["processes"][0]["pid"]
        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=120)
        conn.request("POST", "/process.Process/Connect", envelope({"process": {"pid": pid}}),
                     headers=to(sb, **{"Content-Type": "application/connect+json",
                                       "Connect-Timeout-Ms": "18446744073709551615"}))
        resp = conn.getresponse()
        eq(resp.status, 200)
        # the reattached stream's start event, then let the command end
        head = resp.read(5)
        first = head + resp.read(struct.unpack(">BI", head)[1])
        check("start" in frames(first)[0][1].get("event", {}), first)
        eq(upload(s, sb, "go", b"")[0], 200)
        data = first + resp.read()
        conn.close()
        t.join(120)
        ev = frames(data) + got["ev"]
        ends = [f[1]["event"]["end"]["exitCode"] for f in ev if "end" in f[1].get("event", {})]
        errs = [f[1]["error"]["code"] for f in ev if "error" in f[1]]
        # whichever stream polls first passes the end on (the other may
        # find the process gone); neither is killed by a deadline
        eq((set(ends), "deadline_exceeded" in errs), ({4}, False), ev)
        eq(s.request("DELETE", "/sandboxes/" + sb["sandboxID"])[0], 204)
    finally:
        eq(s.stop(), 0, s.log()[-3000:])


FORGE_EXIT = """
import builtins
_A = builtins._codecell_e2b
_A.real_poll = _A.poll
_A.poll = lambda pid, wait: None if _A.real_poll(pid, wait) is None else 0
"""
FORGE_SILENCE = """
import time
_A.poll = lambda pid, wait: time.sleep(wait)
_A.real_kill, _A.kill = _A.kill, lambda pid, sig: True
"""
RESTORE = "_A.poll, _A.kill = _A.real_poll, _A.real_kill"


@test
def e2b_command_exit_code_and_end_come_from_outside_the_sandbox():
    """Code in the sandbox replaces the in-sandbox helper (as an attacker
    would): its poll reports every command as exit 0, then reports no end
    at all and its kill kills nothing.  The end event and the audit
    record still carry the real exit code (3), seen by the supervisor;
    a command whose end never comes is killed at its timeout from
    outside and gives its execution slot back (max_executions = 1)."""
    with tempfile.TemporaryDirectory() as d:
        pol, audit = os.path.join(d, "p.ini"), os.path.join(d, "audit.log")
        write(pol, "[default]\nmax_executions = 1\n")
        s = Serve("--policy", pol, "--audit", audit, "--pool", "0")
        try:
            sb = create(s)
            jup = dict(to(sb), **{"E2b-Sandbox-Port": "49999"})

            def cell(code):
                st, data = s.request("POST", "/execute", {"code": code}, headers=jup)
                check(st == 200 and b'"type":"error"' not in data, data)
                return data

            ev = start(s, sb, "echo warm")  # the helper is in the kernel now
            check(any("end" in f[1].get("event", {}) for f in ev), ev)
            cell(FORGE_EXIT)
            ev = start(s, sb, "echo forged; exit 3")
            ends = [f[1]["event"]["end"] for f in ev if "end" in f[1].get("event", {})]
            eq([(x["exitCode"], x["status"]) for x in ends], [(3, "exit status 3")], ev)
            # no end ever reported, no kill done in the sandbox
            cell(FORGE_SILENCE)
            ev = start(s, sb, "sleep 600", timeout_ms=2000)
            eq(ev[-1][1].get("error", {}).get("code"), "deadline_exceeded", ev)
            pid = ev[0][1]["event"]["start"]["pid"]
            # killed from outside: a zombie the forged helper never reaps
            data = cell("import time\nst = lambda: open('/proc/%d/stat').read().split(')')[-1].split()[0]\n"
                        "t = time.monotonic()\nwhile st() != 'Z' and time.monotonic() < t + 60: time.sleep(0.05)\n"
                        "st()" % pid)
            check(b"'Z'" in data, data)
            # and the slot is back
            cell(RESTORE)
            ev = start(s, sb, "echo next")
            check(any("end" in f[1].get("event", {}) for f in ev), ev)
            eq(s.request("DELETE", "/sandboxes/" + sb["sandboxID"])[0], 204)
        finally:
            eq(s.stop(), 0, s.log()[-3000:])
        cmds = {x["code_sha256"]: x for x in audit_lines(audit) if x["tool"] == "session_exec"
                and x["language"] == "bash"}
        forged = cmds[sha("echo forged; exit 3")]
        eq((forged["status"], forged["exit_code"]), ("error", 3), forged)
        eq(cmds[sha("sleep 600")]["status"], "timeout", cmds[sha("sleep 600")])
        eq(cmds[sha("echo next")]["decision"], "allowed", cmds[sha("echo next")])


@test
def e2b_api_keys_are_a_policy_files_client_keys():
    """Raw HTTP: with client keys in the policy file, X-API-Key is the
    client's key (with or without 'e2b_' before it); a sandbox's own
    calls carry its access token and get its maker's policy; a wrong key
    gets E2B's 401."""
    with tempfile.TemporaryDirectory() as d:
        pol, audit = os.path.join(d, "p.ini"), os.path.join(d, "audit.log")
        write(pol, "[default]\n[policy bob]\nlanguages = python\n"
              "[client alice]\nkey_sha256 = %s\n[client bob]\npolicy = bob\nkey_sha256 = %s\n"
              % (sha(ALICE), sha(BOB)))
        s = Serve("--policy", pol, "--audit", audit, "--pool", "0")
        try:
            st, j = s.request("GET", "/sandboxes")
            eq((st, j["code"]), (401, 401), j)
            st, j = s.request("GET", "/sandboxes", headers={"X-API-Key": "e2b_nobody-0123456789"})
            eq((st, j["code"]), (401, 401), j)
            eq(s.request("GET", "/sandboxes", headers={"X-API-Key": ALICE})[0], 200)
            eq(s.request("GET", "/sandboxes", headers={"X-API-Key": "e2b_" + ALICE})[0], 200)
            a = create(s, headers={"X-API-Key": ALICE})
            b = create(s, headers={"X-API-Key": BOB})
            check(len(a["envdAccessToken"]) == 32, a)
            # a sandbox is its maker's: another client neither lists, reads nor kills it
            for k, mine, other in ((ALICE, a, b), (BOB, b, a)):
                st, j = s.request("GET", "/sandboxes", headers={"X-API-Key": k})
                eq([x["sandboxID"] for x in j], [mine["sandboxID"]], j)
                eq(s.request("GET", "/sandboxes/" + other["sandboxID"], headers={"X-API-Key": k})[0],
                   404)
                eq(s.request("DELETE", "/sandboxes/" + other["sandboxID"],
                             headers={"X-API-Key": k})[0], 404)
                eq(s.request("GET", "/sandboxes/" + mine["sandboxID"], headers={"X-API-Key": k})[0],
                   200)
            # no token, or another sandbox's: 401 in Connect's shape
            h = to(a)
            del h["X-Access-Token"]
            st, j = s.request("POST", "/filesystem.Filesystem/Stat", {"path": "/home/user"}, headers=h)
            eq((st, j["code"]), (401, "unauthenticated"), j)
            h["X-Access-Token"] = b["envdAccessToken"]
            st, j = s.request("POST", "/filesystem.Filesystem/Stat", {"path": "/home/user"}, headers=h)
            eq(st, 401, j)
            # alice's sandbox runs bash; bob's does not (his policy)
            ev = start(s, a, "echo hi")
            eq(json.loads(json.dumps(ev[-1][1]))["error"] if "error" in ev[-1][1] else None, None, ev)
            ev = start(s, b, "echo hi")
            eq(ev[-1][1]["error"]["code"], "permission_denied", ev)
            # /v1 still takes keys as Bearer only
            eq(s.request("GET", "/v1/sessions", headers={"X-API-Key": ALICE})[0], 401)
            for sb, k in ((a, ALICE), (b, BOB)):
                eq(s.request("DELETE", "/sandboxes/" + sb["sandboxID"], headers={"X-API-Key": k})[0], 204)
        finally:
            eq(s.stop(), 0, s.log()[-3000:])
        cmds = [(x["client"], x["decision"]) for x in audit_lines(audit) if x["tool"] == "session_exec"]
        eq(sorted(cmds), [("alice", "allowed"), ("bob", "rejected")])


@test
def the_e2b_sdk_with_a_client_key_gets_that_clients_policy():
    """E2B's JS SDK, unmodified, E2B_API_KEY a policy file's client key."""
    node = shutil.which("node")
    check(node, "node is not installed (scripts/setup.sh installs nodejs)")
    check(os.path.exists(SDK), "the E2B SDK is not installed: run 'npm ci' in tests/node")
    with tempfile.TemporaryDirectory() as d:
        pol, audit = os.path.join(d, "p.ini"), os.path.join(d, "audit.log")
        write(pol, "[default]\nlanguages = python\n"
              "[policy alice]\nlanguages = python, javascript, bash\nmax_file = 1K\n"
              "approval = delete_file\napproval_timeout = 1s\n"
              "[policy bob]\nlanguages = python\n"
              "[client alice]\npolicy = alice\nkey_sha256 = %s\n"
              "[client bob]\npolicy = bob\nkey_sha256 = %s\n" % (sha(ALICE), sha(BOB)))
        s = Serve("--policy", pol, "--audit", audit, "--pool", "0")
        try:
            url = "http://127.0.0.1:%d" % s.port
            env = dict(os.environ, E2B_API_URL=url, E2B_SANDBOX_URL=url, E2B_API_KEY=ALICE,
                       CC_ALICE=ALICE, CC_BOB=BOB)
            p = subprocess.run([node, os.path.join(NODE_DIR, "e2b_client.mjs"), "policy"],
                               capture_output=True, text=True, timeout=300, cwd=NODE_DIR, env=env)
            ok = p.returncode == 0 and "not ok" not in p.stdout and "ok - " in p.stdout
            check(ok, "e2b_client.mjs policy failed:\n%s\n%s\nserver log:\n%s" % (
                p.stdout[-6000:], p.stderr[-3000:], s.log()[-2000:]))
        finally:
            eq(s.stop(), 0, s.log()[-3000:])
        lines = audit_lines(audit)
        bash = [x for x in lines if x["tool"] == "session_exec" and x["code_sha256"] == sha("echo hi")]
        eq(sorted((x["client"], x["decision"], x["language"]) for x in bash),
           [("alice", "allowed", "bash"), ("bob", "rejected", "bash")])
        rules = {(x["client"], x["rule"]) for x in lines if x["decision"] == "rejected"}
        check({("alice", "max_file"), ("alice", "approval"), ("bob", "languages")} <= rules, rules)


if __name__ == "__main__":
    main()
