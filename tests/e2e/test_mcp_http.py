"""MCP over Streamable HTTP at /mcp on `codecell serve`, with raw HTTP
fixtures: the Mcp-Session-Id lifecycle (2025-03-26 and later), the
stateless 2026-07-28 revision and its headers, GET and DELETE, the
server's token and Origin rules, malformed input.  The official SDK
client over HTTP is in test_mcp_sdk.py."""
import hashlib
import http.client
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import (HANG_S, Serve, check, descendants, eq, main, scratch, snapshot,  # noqa: E402
                    still_running, test, write)

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}}
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}
ACCEPT = "application/json, text/event-stream"


def post(srv, body, headers=None, raw=None):
    """(status, headers dict lower-cased, parsed JSON or None)."""
    c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=120)
    h = {"Content-Type": "application/json", "Accept": ACCEPT}
    h.update(headers or {})
    try:
        c.request("POST", "/mcp", body=raw if raw is not None else json.dumps(body), headers=h)
        r = c.getresponse()
        data = r.read()
        hs = {k.lower(): v for k, v in r.getheaders()}
    finally:
        c.close()
    return r.status, hs, json.loads(data) if data else None


def initialize(srv, headers=None):
    st, hs, j = post(srv, INIT, headers)
    eq(st, 200, j)
    eq(j["result"]["protocolVersion"], "2025-11-25")
    sid = hs.get("mcp-session-id", "")
    check(len(sid) == 32 and all(ch in "0123456789abcdef" for ch in sid), hs)
    h = dict(headers or {}, **{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"})
    st, _, j = post(srv, {"jsonrpc": "2.0", "method": "notifications/initialized"}, h)
    eq(st, 202, j)
    eq(j, None)
    return h


def call(srv, h, name, args, id=7):
    st, _, j = post(srv, {"jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": {"name": name, "arguments": args}}, h)
    eq(st, 200, j)
    eq(j["id"], id)
    return j


@test
def a_session_id_carries_the_connection_and_sessions_keep_state():
    srv = Serve("--pool", "0")
    try:
        h = initialize(srv)
        st, _, j = post(srv, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, h)
        eq(st, 200, j)
        eq(len(j["result"]["tools"]), 7)
        sid = call(srv, h, "create_session", {})["result"]["structuredContent"]["session_id"]
        call(srv, h, "run_code", {"session_id": sid, "code": "x = 41"})
        r = call(srv, h, "run_code", {"session_id": sid, "code": "x + 1"})["result"]
        eq(r["isError"], False)
        eq(r["structuredContent"]["results"][0]["text/plain"], "42")
        r = call(srv, h, "run_code", {"session_id": sid, "code": "1/0"})["result"]
        eq(r["isError"], True)
        check("ZeroDivisionError" in r["content"][0]["text"], r)
        # two MCP sessions share the server's sandbox sessions
        h2 = initialize(srv)
        check(h2["Mcp-Session-Id"] != h["Mcp-Session-Id"])
        r = call(srv, h2, "list_sessions", {})["result"]["structuredContent"]
        eq(r["count"], 1)
    finally:
        srv.stop()


@test
def unknown_and_ended_session_ids_are_404_and_delete_ends_one():
    srv = Serve("--pool", "0")
    try:
        h = initialize(srv)
        st, _, j = post(srv, {"jsonrpc": "2.0", "id": 3, "method": "ping"},
                        dict(h, **{"Mcp-Session-Id": "0" * 32}))
        eq(st, 404, j)
        eq(j["id"], 3)
        c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
        c.request("DELETE", "/mcp", headers={"Mcp-Session-Id": h["Mcp-Session-Id"]})
        r = c.getresponse()
        r.read()
        c.close()
        eq(r.status, 200)
        st, _, j = post(srv, {"jsonrpc": "2.0", "id": 4, "method": "ping"}, h)
        eq(st, 404, j)
        st, j = srv.request("DELETE", "/mcp")
        eq(st, 400, j)
    finally:
        srv.stop()


@test
def get_is_405_and_other_methods_too():
    srv = Serve("--pool", "0")
    try:
        for m in ("GET", "PUT"):
            st, j = srv.request(m, "/mcp", headers={"Accept": "text/event-stream"})
            eq(st, 405, (m, j))
    finally:
        srv.stop()


@test
def the_stateless_revision_is_served_without_a_session_and_its_headers_checked():
    srv = Serve("--pool", "0")
    try:
        hm = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"}
        st, hs, j = post(srv, {"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                               "params": {"_meta": META}}, hm)
        eq(st, 200, j)
        check("2026-07-28" in j["result"]["supportedVersions"], j)
        check("mcp-session-id" not in hs, hs)
        body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "run_code", "arguments": {"code": "print(2**10)"}, "_meta": META}}
        h = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "run_code"}
        st, _, j = post(srv, body, h)
        eq(st, 200, j)
        eq(j["result"]["structuredContent"]["logs"]["stdout"], "1024\n")
        for bad in ({"Mcp-Name": "read_file"}, {"Mcp-Name": None}, {"Mcp-Method": "ping"},
                    {"Mcp-Method": None}):
            hb = dict(h)
            for k, v in bad.items():
                if v is None:
                    del hb[k]
                else:
                    hb[k] = v
            st, _, j = post(srv, body, hb)
            eq(st, 400, (bad, j))
            eq(j["id"], 2)
            check("Mcp-" in j["error"]["message"], j)
    finally:
        srv.stop()


@test
def an_unknown_protocol_version_header_is_400():
    srv = Serve("--pool", "0")
    try:
        st, _, j = post(srv, {"jsonrpc": "2.0", "id": 9, "method": "ping"},
                        {"MCP-Protocol-Version": "1999-01-01"})
        eq(st, 400, j)
        check("1999-01-01" in j["error"]["message"], j)
    finally:
        srv.stop()


@test
def malformed_bodies_get_json_rpc_errors():
    srv = Serve("--pool", "0")
    try:
        st, _, j = post(srv, None, raw="{not json")
        eq(st, 200, j)
        eq(j["error"]["code"], -32700)
        st, _, j = post(srv, {"jsonrpc": "2.0", "id": 5, "method": "tools/list"})
        eq(st, 200, j)
        eq(j["error"]["code"], -32600)   # not initialized, no session
        st, _, j = post(srv, {"jsonrpc": "2.0", "id": 6, "method": "initialize", "params": 5})
        eq(st, 200, j)
        check("error" in j, j)
        st, j = srv.request("POST", "/mcp", body="{}", headers={"Content-Type": "text/plain"})
        eq(st, 415, j)
    finally:
        srv.stop()


@test
def a_key_twice_is_400_before_anything_reads_either():
    # the door peeked at the method with the last "method" while the core
    # refused the message: now both refuse it, with the key named
    srv = Serve("--pool", "0")
    try:
        dup = ('{"jsonrpc": "2.0", "id": 3, "method": "tools/list", "method": "initialize", '
               '"params": {"protocolVersion": "2025-11-25", "capabilities": {}, '
               '"clientInfo": {"name": "raw", "version": "1"}}}')
        st, hs, j = post(srv, None, raw=dup)
        eq(st, 400, j)
        eq(j["error"]["code"], -32700, j)
        check('"method"' in j["error"]["message"] and "twice" in j["error"]["message"], j)
        check("mcp-session-id" not in hs, hs)
        h = initialize(srv)
        st, _, j = post(srv, None, h, raw='{"jsonrpc": "2.0", "id": 4, "id": 5, "method": "ping"}')
        eq(st, 400, j)
        check('"id"' in j["error"]["message"] and "twice" in j["error"]["message"], j)
        st, _, j = post(srv, {"jsonrpc": "2.0", "id": 6, "method": "ping"}, h)
        eq((st, j["result"]), (200, {}))
    finally:
        srv.stop()


@test
def the_servers_token_and_origin_rules_apply():
    with scratch() as d:
        tok = write(os.path.join(d, "token"), "s3cret-token-0123456789\n", 0o600)
        srv = Serve("--pool", "0", "--token-file", tok)
        try:
            st, _, j = post(srv, INIT)
            eq(st, 401, j)
            auth = {"Authorization": "Bearer s3cret-token-0123456789"}
            initialize(srv, auth)
        finally:
            srv.stop()
    srv = Serve("--pool", "0")
    try:
        st, _, j = post(srv, INIT, {"Origin": "http://evil.example"})
        eq(st, 403, j)
        st, _, j = post(srv, INIT, {"Host": "evil.example:80"})
        eq(st, 403, j)
        port = srv.port
        st, _, j = post(srv, INIT, {"Origin": "http://127.0.0.1:%d" % port})
        eq(st, 200, j)
    finally:
        srv.stop()


@test
def sessions_made_through_mcp_end_with_the_server():
    srv = Serve("--pool", "0")
    try:
        h = initialize(srv)
        r = call(srv, h, "create_session", {})["result"]
        eq(r.get("isError"), False, "create_session: %r" % r)
        check(r["structuredContent"].get("session_id"), r)
        # pid and start time: a pid reused by another process is not ours
        kids = snapshot(descendants(srv.pid))
        check(kids, "no session process")
    finally:
        eq(srv.stop(), 0)
    deadline = time.monotonic() + HANG_S
    while still_running(kids):
        check(time.monotonic() < deadline, "left behind: %r" % still_running(kids))
        time.sleep(0.1)


def busy_sessions(srv):
    """The ids of the sandbox sessions running a cell now (GET
    /v1/sessions lists MCP's too)."""
    st, j = srv.request("GET", "/v1/sessions")
    eq(st, 200, j)
    return {x["id"] for x in j["sessions"] if x["busy"]}


@test
def calls_of_one_mcp_session_run_side_by_side():
    """The door's lock guards its table of connections, not the calls:
    while one tools/call sleeps in a cell, a second one on the same
    Mcp-Session-Id is answered (and not after the first)."""
    import threading
    srv = Serve("--pool", "0")
    try:
        h = initialize(srv)
        sids = [call(srv, h, "create_session", {}, id=20 + i)["result"]["structuredContent"]["session_id"]
                for i in range(2)]
        done = []
        slow = {}

        def long_call():
            try:
                slow["r"] = post(srv, {"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                                       "params": {"name": "run_code", "arguments": {
                                           "session_id": sids[0], "timeout": 900,
                                           "code": "import time\ntime.sleep(600)"}}}, h)
            except Exception as e:  # the server may close the connection
                slow["r"] = e
            done.append("slow")
        t = threading.Thread(target=long_call, daemon=True)
        t.start()
        deadline = time.monotonic() + HANG_S
        while sids[0] not in busy_sessions(srv):
            check(time.monotonic() < deadline, "the slow cell did not start")
            time.sleep(0.1)
        r = call(srv, h, "run_code", {"session_id": sids[1], "code": "6 * 7"}, id=9)["result"]
        done.append("fast")
        eq(r["structuredContent"]["results"][0]["text/plain"], "42")
        eq(done, ["fast"])
        check(t.is_alive(), "the slow call returned: %r" % slow)
    finally:
        eq(srv.stop(timeout=HANG_S), 0)  # and the slow call with it
    t.join(HANG_S)
    check(not t.is_alive(), "the slow call did not end with the server")


@test
def a_shutdown_stops_every_call_in_flight_of_one_client():
    import threading
    srv = Serve("--pool", "0")
    h = initialize(srv)
    sids = [call(srv, h, "create_session", {}, id=20 + i)["result"]["structuredContent"]["session_id"]
            for i in range(2)]
    threads = []
    for i, sid in enumerate(sids):
        def one(sid=sid, i=i):
            try:
                post(srv, {"jsonrpc": "2.0", "id": 30 + i, "method": "tools/call",
                           "params": {"name": "run_code", "arguments": {
                               "session_id": sid, "timeout": 900,
                               "code": "import time\ntime.sleep(600)"}}}, h)
            except Exception:  # the server may close the connection
                pass
        threads.append(threading.Thread(target=one, daemon=True))
        threads[-1].start()
    try:
        deadline = time.monotonic() + HANG_S
        while busy_sessions(srv) != set(sids):
            check(time.monotonic() < deadline, "the two cells did not start")
            time.sleep(0.1)
        srv.p.terminate()
        # each cell's own timeout is 900 s: the server must stop both itself
        eq(srv.p.wait(timeout=HANG_S), 0)
    finally:
        if srv.p.poll() is None:  # it did not stop: none of it is left
            srv.p.kill()
            srv.p.wait(timeout=HANG_S)
    for t in threads:
        t.join(30)


@test
def a_long_call_does_not_hold_up_the_servers_shutdown():
    import threading
    import time
    srv = Serve("--pool", "0")
    h = initialize(srv)
    seen = {}

    def long_call():
        try:
            seen["r"] = post(srv, {"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                                   "params": {"name": "run_code", "arguments": {
                                       "code": "print('go', flush=True)\nimport time\ntime.sleep(600)",
                                       "timeout": 900}}}, h)
        except Exception as e:  # the server may close the connection
            seen["r"] = e
    t = threading.Thread(target=long_call, daemon=True)
    t.start()
    deadline = time.monotonic() + 60
    while not any("python" in open("/proc/%d/cmdline" % k).read()
                  for k in descendants(srv.pid) if os.path.exists("/proc/%d/cmdline" % k)):
        check(time.monotonic() < deadline, "the run did not start")
        time.sleep(0.1)
    srv.p.terminate()
    # the run's own timeout is 900 s: the server must stop it itself
    eq(srv.p.wait(timeout=60), 0)
    t.join(30)


@test
def regression_mcp_sessions_count_against_max_sessions_and_show_in_listings_and_metrics():
    """/mcp ignored --max-sessions (each client's MCP core had a table of
    its own, of --max-sessions more), and its sessions were missing from
    GET /v1/sessions and /metrics."""
    srv = Serve("--pool", "0", "--max-sessions", "2")
    try:
        h = initialize(srv)
        st, j = srv.request("POST", "/v1/sessions", {})
        eq(st, 201, j)
        api_sid = j["id"]
        r = call(srv, h, "create_session", {})["result"]
        eq(r["isError"], False, r)
        mcp_sid = r["structuredContent"]["session_id"]
        # the table is full, whichever door asks
        r = call(srv, h, "create_session", {})["result"]
        check(r["isError"] and "--max-sessions 2" in r["content"][0]["text"], r)
        st, j = srv.request("POST", "/v1/sessions", {})
        eq((st, j["error"]["code"]), (429, "too_many_sessions"), j)
        # one listing, each session with its door
        st, j = srv.request("GET", "/v1/sessions")
        eq(sorted((x["id"], x["door"]) for x in j["sessions"]),
           sorted([(api_sid, "api"), (mcp_sid, "mcp")]), j)
        eq((j["count"], j["max_sessions"]), (2, 2))
        st, m = srv.request("GET", "/metrics")
        text = m.decode()
        check("\ncodecell_sessions 2\n" in "\n" + text, text[:400])
        check('codecell_sessions_by_door{door="mcp"} 1\n' in text and
              'codecell_sessions_by_door{door="api"} 1\n' in text, text[:800])
        # MCP's tools see their own door's sessions only
        r = call(srv, h, "list_sessions", {})["result"]["structuredContent"]
        eq(([x["session_id"] for x in r["sessions"]], r["max_sessions"]), ([mcp_sid], 2), r)
        r = call(srv, h, "run_code", {"session_id": api_sid, "code": "1"})["result"]
        check(r["isError"] and "no session" in r["content"][0]["text"], r)
        # /v1 uses the same client's MCP session: one engine table
        call(srv, h, "run_code", {"session_id": mcp_sid, "code": "x = 6 * 7"})
        st, j = srv.request("POST", "/v1/sessions/%s/execute" % mcp_sid, {"code": "x"})
        eq((st, j["results"][0]["text/plain"]), (200, "42"), j)
        # ended by /v1: gone for MCP too, and its place is free again
        st, j = srv.request("DELETE", "/v1/sessions/" + mcp_sid)
        eq(st, 200, j)
        r = call(srv, h, "run_code", {"session_id": mcp_sid, "code": "x"})["result"]
        check(r["isError"] and "no session" in r["content"][0]["text"], r)
        r = call(srv, h, "write_file", {"session_id": mcp_sid, "path": "a", "content": "x"})["result"]
        check(r["isError"], r)
        r = call(srv, h, "create_session", {})["result"]
        eq(r["isError"], False, r)
    finally:
        srv.stop()


@test
def each_client_key_gets_its_own_policy_and_sessions():
    """/mcp calls run under the policy of the client whose key they carry
    (they all ran under [default] before), and one client's MCP sessions
    and Mcp-Session-Ids are not another's."""
    keys = {"alice": "alice-mcp-key-0123456789", "bob": "bob-mcp-key-0123456789"}
    digest = {k: hashlib.sha256(v.encode()).hexdigest() for k, v in keys.items()}
    with scratch() as d:
        pol = write(os.path.join(d, "policy.ini"),
                    "[default]\nlanguages = python\n[policy shell]\nlanguages = bash\n"
                    "[client alice]\nkey_sha256 = %s\n"
                    "[client bob]\nkey_sha256 = %s\npolicy = shell\n" % (digest["alice"], digest["bob"]))
        audit = os.path.join(d, "audit.log")
        srv = Serve("--pool", "0", "--policy", pol, "--audit", audit)
        try:
            a = initialize(srv, {"Authorization": "Bearer " + keys["alice"]})
            b = initialize(srv, {"Authorization": "Bearer " + keys["bob"]})
            j = call(srv, a, "run_code", {"code": "print(6 * 7)"})
            eq(j["result"]["structuredContent"]["status"], "ok", j)
            j = call(srv, b, "run_code", {"code": "print(6 * 7)"})
            eq(j["result"]["structuredContent"].get("rule"), "languages", j)
            j = call(srv, b, "run_code", {"code": "echo $((6 * 7))", "language": "bash"})
            eq(j["result"]["structuredContent"]["logs"]["stdout"], "42\n", j)
            sid = call(srv, a, "create_session", {})["result"]["structuredContent"]["session_id"]
            j = call(srv, b, "list_sessions", {})
            eq(j["result"]["structuredContent"]["sessions"], [], "bob sees none of alice's")
            j = call(srv, b, "run_code", {"session_id": sid, "code": "1"})
            check(j["result"]["isError"], j)
            # GET /v1/sessions: alice's MCP session is hers alone
            st, j = srv.request("GET", "/v1/sessions", key=keys["alice"])
            eq([(x["id"], x["door"]) for x in j["sessions"]], [(sid, "mcp")], j)
            st, j = srv.request("GET", "/v1/sessions", key=keys["bob"])
            eq(j["sessions"], [], j)
            eq(srv.request("POST", "/v1/sessions/%s/execute" % sid, {"code": "1"},
                           key=keys["bob"])[0], 404)
            # alice's Mcp-Session-Id with bob's key
            st, _, j = post(srv, {"jsonrpc": "2.0", "id": 9, "method": "tools/list"},
                            dict(a, Authorization="Bearer " + keys["bob"]))
            eq(st, 404, j)
        finally:
            srv.stop()
        runs = [json.loads(x) for x in open(audit) if '"run"' in x]
        eq(sorted((x["client"], x["decision"]) for x in runs if x["door"] == "mcp"),
           [("alice", "allowed"), ("bob", "allowed"), ("bob", "rejected")])


main()
