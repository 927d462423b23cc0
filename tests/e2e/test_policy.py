"""One engine for every door: the limits table (the same floors and
ceilings for `codecell run`, `codecell serve` and `codecell mcp`), the
policy file, the audit log and the seed option."""
import hashlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import CODECELL, Serve, call, check, codecell, eq, main, test, write  # noqa: E402


def sha(s):
    return hashlib.sha256(s.encode()).hexdigest()


KEYS = {"alice": "alice-key-0123456789", "bob": "bob-key-0123456789", "carol": "carol-key-0123456789"}

POLICY = """
# a test policy
[default]
languages = python, bash
limit.memory = 1G      ; a comment after a value
max_file = 1K
approval = delete_file

[policy narrow]
languages = python
rate = 1/h
burst = 3

[policy few]
max_sessions = 1

[client alice]
key_sha256 = %s
[client bob]
key_sha256 = %s
policy = narrow
[client carol]
key_sha256 = %s
policy = few
""" % (sha(KEYS["alice"]), sha(KEYS["bob"]), sha(KEYS["carol"]))


def rejected(st, j, http, rule):
    eq((st, j.get("status"), j.get("rule")), (http, "rejected", rule), "rejection: %r" % j)
    check(("rule '%s'" % rule) in j["error"]["value"], j)


def srv(*args):
    return Serve(*args)


@test
def api_memory_below_its_floor_is_a_clear_400():
    """{"limits": {"memory": 1}} reached the sandbox and came back as
    "SandboxError: cannot synchronize with the supervisor: Broken pipe";
    the CLI's --memory 1 was refused with a message naming the floor."""
    s = srv()
    try:
        st, j = s.post("/v1/execute", {"code": "print(1)", "limits": {"memory": 1}})
        eq(st, 400, "status: %r" % j)
        check("must be at least 16M (the floor of 'memory'" in j["error"]["message"], j)
        st, j = s.post("/v1/sessions", {"limits": {"memory": "1K"}})
        eq(st, 400, "session: %r" % j)
        check("the floor of 'memory'" in j["error"]["message"], j)
    finally:
        s.stop()
    r = codecell("run", "--memory", "1", "-", stdin="print(1)")
    eq(r.status, 125)
    check("must be at least 16M (the floor of 'memory'" in r.stderr, r.stderr)


@test
def run_refuses_idle_timeout_even_at_ten_minutes():
    """`codecell run --idle-timeout 10m` was accepted and ignored (600 s
    was the mark for "not given")."""
    r = codecell("run", "--idle-timeout", "10m", "-", stdin="print(1)")
    eq(r.status, 125, r.stdout)
    check("--idle-timeout go with 'codecell shell'" in r.stderr, r.stderr)


@test
def help_lists_the_tables_limits():
    r = codecell("run", "--help")
    check("(default 512M; 16M to 16G)" in r.stdout, r.stdout)
    r = codecell("shell", "--help")
    check("(default 10m; 1s to 24h)" in r.stdout, r.stdout)


@test
def serve_policy_rules_per_client():
    with tempfile.TemporaryDirectory() as d:
        pol, audit = os.path.join(d, "p.ini"), os.path.join(d, "audit.log")
        write(pol, POLICY)
        s = srv("--policy", pol, "--audit", audit)
        try:
            a, b, c = KEYS["alice"], KEYS["bob"], KEYS["carol"]
            eq(call(s, "POST", "/v1/execute", {"code": "print(1)"})[0], 401, "no key")
            eq(call(s, "POST", "/v1/execute", {"code": "print(1)"}, key="x" * 20)[0], 401, "unknown key")
            st, j = call(s, "POST", "/v1/execute", {"code": "echo hi", "language": "bash",
                                                     "env": {"TOKEN": "hunter2"}}, key=a)
            eq((st, j["status"], j["logs"]["stdout"]), (200, "ok", "hi\n"))
            rejected(*call(s, "POST", "/v1/execute", {"code": "1", "language": "javascript"}, key=a),
                     403, "languages")
            rejected(*call(s, "POST", "/v1/execute", {"code": "1", "limits": {"memory": "2G"}}, key=a),
                     403, "limits.memory")
            st, j = call(s, "POST", "/v1/sessions", {}, key=a)
            eq(st, 201, j)
            sid = j["id"]
            rejected(*call(s, "PUT", "/v1/sessions/%s/files/big.bin" % sid, raw=b"x" * 2048, key=a),
                     413, "max_file")
            eq(call(s, "PUT", "/v1/sessions/%s/files/small.txt" % sid, raw=b"x" * 10, key=a)[0], 201)
            st, j = call(s, "DELETE", "/v1/sessions/%s/files/small.txt" % sid, key=a,
                         headers={"Prefer": "respond-async"})
            eq((st, j["status"], j["rule"]), (202, "pending", "approval"), j)
            # bob: python only, a burst of 3 calls then one an hour
            rejected(*call(s, "POST", "/v1/execute", {"code": "echo", "language": "bash"}, key=b),
                     403, "languages")
            for _ in range(2):
                eq(call(s, "POST", "/v1/execute", {"code": "print(2)"}, key=b)[1]["status"], "ok")
            rejected(*call(s, "POST", "/v1/execute", {"code": "print(3)"}, key=b), 429, "rate")
            # alice's calls are not bob's
            eq(call(s, "POST", "/v1/execute", {"code": "print(4)"}, key=a)[1]["status"], "ok")
            # carol: one session at a time
            st, j = call(s, "POST", "/v1/sessions", {}, key=c)
            eq(st, 201, j)
            rejected(*call(s, "POST", "/v1/sessions", {}, key=c), 429, "max_sessions")
            eq(call(s, "DELETE", "/v1/sessions/" + j["id"], key=c)[0], 200)
            st, j = call(s, "POST", "/v1/sessions", {}, key=c)
            eq(st, 201, "after a delete: %r" % j)
            # a fork is a session made: carol has hers
            rejected(*call(s, "POST", "/v1/sessions/%s/fork" % j["id"], key=c), 429, "max_sessions")
            eq(call(s, "POST", "/v1/sessions/%s/interrupt" % sid, key=a)[0], 200)
        finally:
            eq(s.stop(), 0)
        lines = [json.loads(x) for x in open(audit)]
        by_rule = {x["rule"] for x in lines if x["decision"] == "rejected"}
        eq(by_rule, {"languages", "limits.memory", "max_file", "rate", "max_sessions"})
        eq([x["approval"]["state"] for x in lines if x["approval"]], ["pending"])
        bash = [x for x in lines if x["code_sha256"] == sha("echo hi")]
        eq(len(bash), 1, "the bash call")
        eq((bash[0]["client"], bash[0]["door"], bash[0]["status"], bash[0]["exit_code"]),
           ("alice", "api", "ok", 0))
        check("hunter2" not in open(audit).read(), "the env value is redacted")
        check(all(len(x["request_id"]) == 16 for x in lines), "request ids")
        tools = {x["tool"] for x in lines}
        check({"run", "session_create", "session_close", "session_interrupt", "session_fork",
               "write_file", "delete_file"} <= tools, tools)


@test
def a_session_is_its_makers():
    """Another client's session is answered as one that does not exist
    (its id is not a capability): not listed, not read, run, forked,
    interrupted, restarted, deleted, nor its files; the operator (the
    server's token) sees every session, as it sees every approval."""
    with tempfile.TemporaryDirectory() as d:
        pol, tokf = os.path.join(d, "p.ini"), os.path.join(d, "token")
        op = "operator-token-0123456789"
        write(tokf, op + "\n", 0o600)
        write(pol, POLICY)
        s = srv("--policy", pol, "--token-file", tokf)
        a, b = KEYS["alice"], KEYS["bob"]
        try:
            st, j = call(s, "POST", "/v1/sessions", {}, key=a)
            eq(st, 201, j)
            sid = j["id"]
            eq(call(s, "PUT", "/v1/sessions/%s/files/x.txt" % sid, raw=b"mine", key=a)[0], 201)
            eq(call(s, "POST", "/v1/sessions/%s/execute" % sid, {"code": "secret = 42"},
                    key=a)[1]["status"], "ok")
            st, j = call(s, "GET", "/v1/sessions", key=b)
            eq((st, j["sessions"], j["count"]), (200, [], 0), j)
            for method, path, body in (
                    ("GET", "", None), ("POST", "/execute", {"code": "print(secret)"}),
                    ("POST", "/interrupt", None), ("POST", "/restart", None), ("POST", "/fork", None),
                    ("GET", "/files/x.txt", None), ("GET", "/files", None),
                    ("PUT", "/files/y.txt", None), ("DELETE", "/files/x.txt", None),
                    ("GET", "/changes", None), ("DELETE", "", None)):
                st, j = call(s, method, "/v1/sessions/" + sid + path, body,
                             raw=b"theirs" if method == "PUT" else None, key=b)
                eq(st, 404, (method, path, j))
                check("session_not_found" in json.dumps(j), (method, path, j))
            # still there, untouched, for its maker and for the operator
            eq(call(s, "GET", "/v1/sessions/%s/files/x.txt" % sid, key=a), (200, b"mine"))
            eq(call(s, "POST", "/v1/sessions/%s/execute" % sid, {"code": "secret"},
                    key=a)[1]["results"][0]["text/plain"], "42")
            st, j = call(s, "GET", "/v1/sessions", key=a)
            eq([x["id"] for x in j["sessions"]], [sid], j)
            st, j = call(s, "GET", "/v1/sessions", key=op)
            eq([x["id"] for x in j["sessions"]], [sid], j)
            eq(call(s, "DELETE", "/v1/sessions/" + sid, key=op)[0], 200)
        finally:
            s.stop()


@test
def e2b_sandboxes_pass_the_policy_and_are_audited():
    """The E2B door makes its sandboxes through the same policy check and
    audit record as POST /v1/sessions (a Python kernel each)."""
    with tempfile.TemporaryDirectory() as d:
        pol, audit = os.path.join(d, "p.ini"), os.path.join(d, "audit.log")
        e2b = {"X-API-Key": "e2b_0"}
        write(pol, "[default]\nlanguages = bash\n")
        s = srv("--policy", pol, "--audit", audit)
        try:
            st, j = call(s, "POST", "/sandboxes", {"templateID": "base"}, headers=e2b)
            eq(st, 403, j)
            check("rule 'languages'" in json.dumps(j), j)
        finally:
            eq(s.stop(), 0)
        write(pol, "[default]\nlanguages = python\nmax_sessions = 1\n")
        s = srv("--policy", pol, "--audit", audit)
        try:
            st, j = call(s, "POST", "/sandboxes", {"templateID": "base"}, headers=e2b)
            eq(st, 201, j)
            st, j2 = call(s, "POST", "/sandboxes", {"templateID": "base"}, headers=e2b)
            eq(st, 429, j2)
            eq(call(s, "DELETE", "/sandboxes/" + j["sandboxID"], headers=e2b)[0], 204)
        finally:
            eq(s.stop(), 0)
        lines = [json.loads(x) for x in open(audit)]
        made = [x for x in lines if x["tool"] == "session_create"]
        eq([(x["decision"], x.get("rule")) for x in made],
           [("rejected", "languages"), ("allowed", None), ("rejected", "max_sessions")])
        eq(made[1]["session"], j["sandboxID"])


@test
def the_agent_route_runs_under_the_clients_policy():
    """POST /v1/agent under a policy file: its session passes the
    client's policy as POST /v1/sessions does (a language the policy
    forbids is refused before the model is asked), and every step is
    checked and audited at the API's door under the client's name (the
    route was refused with 403 agent_not_under_policy before)."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
    from llm_standin import StandIn
    with tempfile.TemporaryDirectory() as d:
        pol, audit = os.path.join(d, "p.ini"), os.path.join(d, "audit.log")
        write(pol, "[default]\nlanguages = bash\n[policy py]\nlanguages = python\n"
                   "limit.timeout = 20s\n[client alice]\nkey_sha256 = %s\npolicy = py\n"
                   % sha(KEYS["alice"]))
        with StandIn(["<execute_python>print(6 * 7)</execute_python>", "42."]) as m:
            env = dict(os.environ, OPENAI_BASE_URL=m.url, CODECELL_MODEL="standin")
            env.pop("OPENAI_API_KEY", None)
            s = Serve("--policy", pol, "--audit", audit, env=env)
            try:
                eq(call(s, "GET", "/healthz", key=KEYS["alice"])[1]["agent"], True)
                # over its ceiling: refused before anything runs
                st, j = call(s, "POST", "/v1/agent", {"question": "6*7?", "timeout": 60},
                             key=KEYS["alice"])
                rejected(st, j, 403, "limits.timeout")
                eq(len(m.requests), 0, "the model was not asked")
                st, data = call(s, "POST", "/v1/agent", {"question": "6*7?", "timeout": 15},
                                key=KEYS["alice"])
                eq(st, 200, data)
                evs = [json.loads(x) for x in data.decode().splitlines()]
                eq([e["type"] for e in evs], ["start", "code", "observation", "done"], evs)
                eq(evs[2]["result"]["logs"]["stdout"], "42\n", evs[2])
            finally:
                eq(s.stop(), 0)
        lines = [json.loads(x) for x in open(audit)]
        steps = [x for x in lines if x["code_sha256"] == sha("print(6 * 7)")]
        eq([(x["client"], x["door"], x["tool"], x["decision"], x["status"]) for x in steps],
           [("alice", "api", "session_exec", "allowed", "ok")], lines)
        made = [(x["client"], x["decision"], x.get("rule")) for x in lines if x["tool"] == "session_create"]
        eq(made, [("alice", "rejected", "limits.timeout"), ("alice", "allowed", None)], lines)


@test
def one_call_after_another_always_finds_its_slot_free():
    """max_executions = 1, max_sessions = 1: a client that starts its next
    call as soon as it has read the end of the last (a streamed
    execution's end event, an agent run's "done") is never refused.  The
    slots were given back when the server freed the response, a moment
    after the client could read its end: under load, a refusal now and
    then."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
    from llm_standin import StandIn
    n = 25
    nd = {"Accept": "application/x-ndjson"}
    with tempfile.TemporaryDirectory() as d:
        pol = os.path.join(d, "p.ini")
        write(pol, "[default]\nmax_executions = 1\nmax_sessions = 1\n")
        with StandIn(["42."] * n) as m:
            env = dict(os.environ, OPENAI_BASE_URL=m.url, CODECELL_MODEL="standin")
            env.pop("OPENAI_API_KEY", None)
            s = Serve("--policy", pol, "--pool", "0", env=env)
            try:
                def last_event(st, data):
                    lines = data.decode().splitlines() if isinstance(data, bytes) else []
                    return st, json.loads(lines[-1]) if lines else data

                for i in range(n):
                    st, ev = last_event(*s.request("POST", "/v1/execute",
                                                   {"code": "echo %d" % i, "language": "bash"},
                                                   headers=nd))
                    eq((st, ev.get("type"), ev.get("status")), (200, "end", "ok"),
                       "one-shot %d: %r" % (i, ev))
                st, j = s.request("POST", "/v1/sessions", {"language": "bash"})
                eq(st, 201, j)
                for i in range(n):
                    st, ev = last_event(*s.request("POST", "/v1/sessions/%s/execute" % j["id"],
                                                   {"code": "echo %d" % i}, headers=nd))
                    eq((st, ev.get("type"), ev.get("status")), (200, "end", "ok"),
                       "session execution %d: %r" % (i, ev))
                eq(s.request("DELETE", "/v1/sessions/" + j["id"])[0], 200)
                for i in range(n):
                    st, data = s.request("POST", "/v1/agent", {"question": "6*7?"})
                    evs = [json.loads(x) for x in data.decode().splitlines()] \
                        if isinstance(data, bytes) else [data]
                    eq((st, evs[-1].get("type"), evs[-1].get("outcome")), (200, "done", "answered"),
                       "agent run %d: %r" % (i, evs))
            finally:
                eq(s.stop(), 0, s.log()[-2000:])


@test
def mcp_run_code_passes_the_policy():
    with tempfile.TemporaryDirectory() as d:
        pol, audit = os.path.join(d, "p.ini"), os.path.join(d, "audit.log")
        write(pol, "[default]\nlanguages = python\nlimit.timeout = 5s\nmax_file = 8\n")
        p = subprocess.Popen([CODECELL, "mcp", "--policy", pol, "--audit", audit],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            def rpc(i, method, params):
                p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method,
                                          "params": params}).encode() + b"\n")
                p.stdin.flush()
                r, _, _ = select.select([p.stdout], [], [], 120)
                check(r, "no reply")
                return json.loads(p.stdout.readline())

            rpc(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                  "clientInfo": {"name": "t", "version": "1"}})
            r = rpc(2, "tools/call", {"name": "run_code", "arguments": {"code": "echo x", "language": "bash"}})
            sc = r["result"]["structuredContent"]
            eq((sc["status"], sc["rule"]), ("rejected", "languages"), r)
            r = rpc(3, "tools/call", {"name": "run_code", "arguments": {"code": "print(1)", "timeout": 6}})
            eq(r["result"]["structuredContent"]["rule"], "limits.timeout", r)
            r = rpc(4, "tools/call", {"name": "run_code", "arguments": {"code": "print(5)"}})
            eq(r["result"]["structuredContent"]["status"], "ok", r)
            r = rpc(5, "tools/call", {"name": "create_session", "arguments": {"language": "bash"}})
            check(r["result"]["isError"], r)
            # the limits table's ceiling, as the CLI and the API have it
            r = rpc(6, "tools/call", {"name": "run_code", "arguments": {"code": "1", "timeout": 3601}})
            check("error" in r and "3600" in r["error"]["message"], r)
            # a file write takes the pipeline too: its check, then its record
            r = rpc(7, "tools/call", {"name": "create_session", "arguments": {}})
            sid = r["result"]["structuredContent"]["session_id"]
            r = rpc(8, "tools/call", {"name": "write_file", "arguments": {
                "session_id": sid, "path": "a.txt", "content": "four"}})
            check(not r["result"]["isError"], r)
            r = rpc(9, "tools/call", {"name": "write_file", "arguments": {
                "session_id": sid, "path": "b.txt", "content": "x" * 9}})
            check(r["result"]["isError"], r)
        finally:
            p.stdin.close()
            eq(p.wait(timeout=60), 0)
            p.stdout.close()
            p.stderr.close()
        lines = [json.loads(x) for x in open(audit)]
        eq([(x["door"], x["tool"], x["decision"], x["rule"]) for x in lines],
           [("mcp", "run", "rejected", "languages"), ("mcp", "run", "rejected", "limits.timeout"),
            ("mcp", "run", "allowed", None), ("mcp", "session_create", "rejected", "languages"),
            ("mcp", "session_create", "allowed", None),
            ("mcp", "write_file", "allowed", None), ("mcp", "write_file", "rejected", "max_file")])
        w = [x for x in lines if x["tool"] == "write_file"]
        eq([(x["session"], x["arguments"], x["status"]) for x in w],
           [(sid, {"path": "a.txt"}, "ok"), (sid, {"path": "b.txt"}, "rejected")], w)


@test
def file_operations_are_recorded_after_they_ran():
    """A write or delete through /v1 is recorded once it ran, with its
    outcome: one that fails (a path through a file, a missing file) is
    "error" with the reason, never "ok"."""
    with tempfile.TemporaryDirectory() as d:
        audit = os.path.join(d, "audit.log")
        s = srv("--audit", audit, "--pool", "0")
        try:
            st, j = s.request("POST", "/v1/sessions", {})
            eq(st, 201, j)
            sid = j["id"]
            f = "/v1/sessions/%s/files/" % sid
            check(s.request("PUT", f + "a.txt", b"hello")[0] in (200, 201))
            eq(s.request("PUT", f + "a.txt/b.txt", b"x")[0], 400)
            eq(s.request("DELETE", f + "missing.txt")[0], 404)
            eq(s.request("DELETE", f + "a.txt")[0], 200)
        finally:
            eq(s.stop(), 0)
        got = [(x["tool"], x["arguments"]["path"], x["status"], x["output_bytes"],
                x["arguments"].get("error"))
               for x in (json.loads(line) for line in open(audit))
               if x["tool"] in ("write_file", "delete_file")]
        eq(got, [("write_file", "a.txt", "ok", 5, None),
                 ("write_file", "a.txt/b.txt", "error", 0, "Not a directory"),
                 ("delete_file", "missing.txt", "error", 0, "No such file or directory"),
                 ("delete_file", "a.txt", "ok", 0, None)])


@test
def a_policy_file_error_names_the_line():
    with tempfile.TemporaryDirectory() as d:
        pol = os.path.join(d, "p.ini")
        write(pol, "[default]\n\nlimit.pids = 0\n")
        for cmd in (["run", "--policy", pol, "-"], ["serve", "--policy", pol, "--listen", "127.0.0.1:0"],
                    ["mcp", "--policy", pol], ["shell", "--policy", pol]):
            r = codecell(*cmd, stdin="print(1)")
            eq(r.status, 125, cmd)
            check("p.ini:3: invalid limit.pids '0': must be at least 1" in r.stderr, (cmd, r.stderr))


@test
def the_audit_log_survives_a_killed_server():
    """SIGKILL the server during a burst: every line parses, and every
    call that got its whole answer is in the log."""
    with tempfile.TemporaryDirectory() as d:
        audit = os.path.join(d, "audit.log")
        s = srv("--audit", audit)
        done, lock, stop = [], threading.Lock(), threading.Event()

        def client(k):
            for i in range(1000):
                if stop.is_set():
                    return
                code = "print(%d)" % (k * 10000 + i)
                try:
                    st, j = call(s, "POST", "/v1/execute", {"code": code})
                except Exception:
                    return
                if st == 200 and j.get("status") == "ok":
                    with lock:
                        done.append(code)

        threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 240
        while len(done) < 8 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(s.pid, signal.SIGKILL)
        stop.set()
        for t in threads:
            t.join(60)
        s.p.wait(30)
        check(len(done) >= 8, "only %d calls answered" % len(done))
        text = open(audit, "rb").read()
        check(text.endswith(b"\n"), "the last line is whole")
        lines = [json.loads(x) for x in text.decode().splitlines()]
        logged = {x["code_sha256"] for x in lines}
        missing = [c for c in done if sha(c) not in logged]
        eq(missing, [], "answered calls missing from the log")


@test
def codecell_audit_reads_the_log():
    with tempfile.TemporaryDirectory() as d:
        audit, pol = os.path.join(d, "a.log"), os.path.join(d, "p.ini")
        write(pol, "[default]\nlimit.memory = 1G\n")
        for i in range(3):
            r = codecell("run", "--audit", audit, "-", stdin="print(%d)" % i)
            eq(r.status, 0, r.stderr)
        r = codecell("run", "--audit", audit, "--policy", pol, "--memory", "2G", "-", stdin="print(9)")
        eq(r.status, 125)
        r = codecell("audit", "--file", audit)
        eq((r.status, len(r.stdout.splitlines())), (0, 4), r.stderr)
        r = codecell("audit", "--file", audit, "--status", "ok")
        eq(len(r.stdout.splitlines()), 3, r.stdout)
        r = codecell("audit", "--file", audit, "--status", "rejected")
        eq(json.loads(r.stdout)["code_sha256"], sha("print(9)"))
        r = codecell("audit", "--file", audit, "--since", "2999-01-01T00:00:00Z")
        eq(r.stdout, "")


@test
def regression_one_client_cannot_fill_the_approval_table():
    """The server holds at most 256 calls for approval, for every client
    together: one client's pending calls could fill the table, and every
    other client's call that needs a person was refused."""
    keys = {"mallory": "mallory-key-0123456789", "alice": "alice-key-0123456789"}
    with tempfile.TemporaryDirectory() as d:
        pol = os.path.join(d, "p.ini")
        write(pol, "[default]\napproval = run\n[client mallory]\nkey_sha256 = %s\n"
              "[client alice]\nkey_sha256 = %s\n" % (sha(keys["mallory"]), sha(keys["alice"])))
        for flag, most in ((["--max-pending-approvals", "3"], 3), ([], 32)):
            s = srv("--policy", pol, "--pool", "0", *flag)
            try:
                later = {"Prefer": "respond-async"}
                for i in range(most):
                    st, j = call(s, "POST", "/v1/execute", {"code": "print(%d)" % i},
                                 key=keys["mallory"], headers=later)
                    eq((st, j["status"]), (202, "pending"), "call %d: %r" % (i, j))
                st, j = call(s, "POST", "/v1/execute", {"code": "print('more')"},
                             key=keys["mallory"], headers=later)
                rejected(st, j, 429, "approval")
                check("client 'mallory' has %d calls held" % most in j["error"]["value"] and
                      "--max-pending-approvals %d" % most in j["error"]["value"], j)
                st, j = call(s, "POST", "/v1/execute", {"code": "print(1)"}, key=keys["alice"],
                             headers=later)
                eq((st, j["status"]), (202, "pending"), "alice is held up: %r" % j)
            finally:
                s.stop()
    r = codecell("serve", "--max-pending-approvals", "0")
    eq(r.status, 125, r)
    check("--max-pending-approvals '0': expected a number from 1 to 256" in r.stderr, r.stderr)


@test
def approvals_hold_delete_until_the_operator_decides():
    """A policy's approval actions: the call is held with an id; the
    operator (the --token-file token) approves or denies it; an agent
    cannot approve its own; an undecided call times out to denied."""
    with tempfile.TemporaryDirectory() as d:
        pol, audit, tokf = (os.path.join(d, x) for x in ("p.ini", "audit.log", "token"))
        op, agent = "operator-token-0123456789", "agent-key-0123456789"
        write(tokf, op + "\n", 0o600)
        hasty = "hasty-key-0123456789"
        write(pol, "[default]\n[policy careful]\napproval = delete_file\napproval_timeout = 10m\n"
              "[policy hasty]\napproval = delete_file\napproval_timeout = 1s\n"
              "[client agent]\npolicy = careful\nkey_sha256 = %s\n"
              "[client hasty]\npolicy = hasty\nkey_sha256 = %s\n" % (sha(agent), sha(hasty)))
        s = srv("--policy", pol, "--audit", audit, "--token-file", tokf)
        url = "http://127.0.0.1:%d" % s.port
        try:
            st, j = call(s, "POST", "/v1/sessions", {}, key=agent)
            eq(st, 201, j)
            sid = j["id"]
            for name in ("a.txt", "b.txt", "c.txt"):
                eq(call(s, "PUT", "/v1/sessions/%s/files/%s" % (sid, name), raw=b"x", key=agent)[0], 201)
            fa = "/v1/sessions/%s/files/a.txt" % sid
            # pending at once
            st, j = call(s, "DELETE", fa, key=agent, headers={"Prefer": "respond-async"})
            eq((st, j["status"]), (202, "pending"), j)
            aid = j["approval_id"]
            eq(call(s, "POST", "/v1/approvals/" + aid, {"decision": "approve"}, key=agent)[0], 403,
               "the agent approves its own call")
            st, j = call(s, "GET", "/v1/approvals", key=agent)
            eq([(x["id"], x["state"], x["action"]) for x in j["approvals"]], [(aid, "pending", "delete_file")])
            st, j = call(s, "DELETE", fa, key=agent, headers={"X-Approval-Id": aid})
            eq((st, j["status"]), (202, "pending"), "not decided yet")
            r = codecell("approvals", "--url", url, "--token-file", tokf, "list")
            check(r.status == 0 and aid in r.stdout, r)
            r = codecell("approvals", "--url", url, "--token-file", tokf, "approve", aid)
            eq(r.status, 0, r.stderr + r.stdout)
            eq(call(s, "DELETE", fa, key=agent, headers={"X-Approval-Id": aid}),
               (200, {"path": "a.txt", "deleted": True}))
            # used up; and good for that call only
            rejected(*call(s, "DELETE", fa, key=agent, headers={"X-Approval-Id": aid}), 403, "approval")
            # waiting: the operator denies while the agent waits
            got = {}
            t = threading.Thread(target=lambda: got.update(r=call(
                s, "DELETE", "/v1/sessions/%s/files/b.txt" % sid, key=agent)))
            t.start()
            deadline, pending = time.monotonic() + 60, []
            while not pending and time.monotonic() < deadline:
                pending = [x["id"] for x in call(s, "GET", "/v1/approvals", key=op)[1]["approvals"]
                           if x["state"] == "pending"]
                if not pending:
                    time.sleep(0.05)
            check(pending, "the held call is listed")
            eq(call(s, "POST", "/v1/approvals/" + pending[0], {"decision": "deny"}, key=op)[0], 200)
            t.join(60)
            rejected(*got["r"], 403, "approval")
            check("denied" in got["r"][1]["error"]["value"], got)
            # nobody decides: denied after the policy's approval_timeout
            st, j = call(s, "POST", "/v1/sessions", {}, key=hasty)
            eq(st, 201, j)
            fc = "/v1/sessions/%s/files/c.txt" % j["id"]
            eq(call(s, "PUT", fc, raw=b"x", key=hasty)[0], 201)
            st, j = call(s, "DELETE", fc, key=hasty)
            rejected(st, j, 403, "approval")
            check("not decided in time" in j["error"]["value"], j)
            eq(call(s, "GET", fc, key=hasty)[0], 200, "c.txt is kept")
        finally:
            eq(s.stop(), 0)
        held = [x for x in map(json.loads, open(audit)) if x["approval"]]
        eq({x["approval"]["state"] for x in held}, {"pending", "approved", "used", "denied", "expired"})


SEEDED = {
    "python": "import random, numpy\nprint(random.random(), numpy.random.rand(), hash('abc'))",
    "javascript": "console.log(Math.random(), Math.random())",
    "bash": "echo $RANDOM $RANDOM",
}


@test
def the_same_seed_gives_the_same_output_at_every_door():
    outs = {}
    for lang, code in SEEDED.items():
        a = [codecell("run", "--lang", lang, "--seed", "42", "-", stdin=code).stdout for _ in range(2)]
        b = codecell("run", "--lang", lang, "--seed", "43", "-", stdin=code).stdout
        eq(a[0], a[1], lang)
        check(a[0].strip() and a[0] != b, "%s: seed 42 %r, seed 43 %r" % (lang, a[0], b))
        outs[lang] = a[0]
    r = codecell("run", "--seed", "-1", "-", stdin="1")
    check(r.status == 125 and "from 0 to 4294967295" in r.stderr, r.stderr)
    s = srv()
    try:
        for lang, code in SEEDED.items():
            st, j = s.post("/v1/execute", {"code": code, "language": lang, "seed": 42})
            eq((st, j["logs"]["stdout"]), (200, outs[lang]), lang)
        for lang in ("python", "bash"):
            # a session: seeded when made, the same on each new one
            got = []
            for _ in range(2):
                sid = s.session(language=lang, seed=42)
                st, j = s.post("/v1/sessions/%s/execute" % sid,
                               {"code": "import random\nprint(random.random())" if lang == "python"
                                else "echo $RANDOM"})
                got.append(j["logs"]["stdout"])
            eq(got[0], got[1], "session " + lang)
        st, j = s.post("/v1/execute", {"code": "1", "seed": "x"})
        eq(st, 400)
    finally:
        s.stop()


if __name__ == "__main__":
    main()
