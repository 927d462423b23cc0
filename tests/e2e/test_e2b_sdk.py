"""The E2B door of `codecell serve`: E2B's published JS SDK
(@e2b/code-interpreter, pinned in tests/node/package-lock.json;
scripts/setup.sh runs `npm ci` there), unmodified, pointed at the server
with E2B_API_URL and E2B_SANDBOX_URL (tests/node/e2b_client.mjs); then
what a client that is not the SDK may send: malformed JSON, unknown ids,
paths out of the workspace, oversize bodies, broken Connect envelopes
and multipart bodies, and the same host and token checks as /v1."""
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
from cctest import ROOT, Serve, check, eq, main, test  # noqa: E402

NODE_DIR = os.path.join(ROOT, "tests", "node")
SDK = os.path.join(NODE_DIR, "node_modules", "@e2b", "code-interpreter", "package.json")
TOKEN = "0123456789abcdef0123456789abcdef"

_servers = {}


def server(kind="plain"):
    """One server per kind for the whole file, stopped at the end."""
    if kind not in _servers:
        if kind == "plain":
            _servers[kind] = Serve("--pool", "1")
        elif kind == "one":
            _servers[kind] = Serve("--max-sessions", "1", "--pool", "0")
        else:
            f = tempfile.NamedTemporaryFile("w", delete=False)
            f.write(TOKEN + "\n")
            f.close()
            _servers[kind] = Serve("--token-file", f.name, "--pool", "0")
            os.unlink(f.name)
    return _servers[kind]


def sdk(group, kind="plain", key="e2b_00"):
    node = shutil.which("node")
    check(node, "node is not installed (scripts/setup.sh installs nodejs)")
    check(os.path.exists(SDK), "the E2B SDK is not installed: run 'npm ci' in tests/node "
          "(scripts/setup.sh does)")
    srv = server(kind)
    url = "http://127.0.0.1:%d" % srv.port
    env = dict(os.environ, E2B_API_URL=url, E2B_SANDBOX_URL=url, E2B_API_KEY=key)
    p = subprocess.run([node, os.path.join(NODE_DIR, "e2b_client.mjs"), group], capture_output=True,
                       text=True, timeout=300, cwd=NODE_DIR, env=env)
    ok = p.returncode == 0 and "not ok" not in p.stdout and "ok - " in p.stdout
    check(ok, "e2b_client.mjs %s failed:\n%s\n%s\nserver log:\n%s" % (
        group, p.stdout[-6000:], p.stderr[-3000:], srv.log()[-2000:]))
    return p.stdout


@test
def the_e2b_sdk_creates_runs_code_with_every_callback_and_kills():
    sdk("code")


@test
def the_e2b_sdk_contexts_in_python_javascript_and_bash_share_files():
    sdk("contexts")


@test
def the_e2b_sdk_writes_reads_lists_and_removes_files():
    sdk("files")


@test
def the_e2b_sdk_runs_commands_in_the_foreground_and_the_background():
    sdk("commands")


@test
def the_e2b_sdk_gets_its_own_error_types():
    sdk("errors", kind="one")


@test
def the_e2b_sdk_with_an_api_key_and_access_tokens():
    out = sdk("auth", kind="token", key="e2b_" + TOKEN)
    check("wrong API key" in out, out)
    # the same token in hex is the same key
    sdk("auth", kind="token", key="e2b_" + TOKEN.encode().hex())


# ---- raw HTTP ----

ENVD = {"E2b-Sandbox-Port": "49983"}
JUPYTER = {"E2b-Sandbox-Port": "49999"}


def create(srv, headers=None):
    st, j = srv.request("POST", "/sandboxes", {"templateID": "base"}, headers=headers)
    eq(st, 201, "create: %r" % (j,))
    return j


def kill(srv, sid, headers=None):
    st, _ = srv.request("DELETE", "/sandboxes/" + sid, headers=headers)
    eq(st, 204)


def to(sid, port_headers, **more):
    return dict(port_headers, **{"E2b-Sandbox-Id": sid}, **more)


@test
def control_plane_bad_input_gets_e2b_error_shapes():
    srv = server()
    st, j = srv.request("POST", "/sandboxes", b"{not json", {"Content-Type": "application/json"})
    eq(st, 400)
    eq(j["code"], 400)
    check("JSON" in j["message"], j)
    st, j = srv.request("POST", "/v2/sandboxes", [1, 2])
    eq((st, j["code"]), (400, 400))
    st, j = srv.request("POST", "/sandboxes", {"templateID": "base", "timeout": "long"})
    eq(st, 400, j)
    st, j = srv.request("POST", "/sandboxes", {"templateID": "base", "envVars": {"1BAD": "x"}})
    eq(st, 400, j)
    st, j = srv.request("POST", "/sandboxes", b"{" + b" " * (70 << 10) + b"}",
                        {"Content-Type": "application/json"})
    eq(st, 413, j)
    st, j = srv.request("GET", "/sandboxes/" + "a" * 300)
    eq((st, j["code"]), (414, 414), j)
    for path in ("/sandboxes/0123456789abcdef0123456789abcdef", "/sandboxes/short",
                 "/sandboxes/%2e%2e%2fv1"):
        st, j = srv.request("GET", path)
        eq((st, j["code"]), (404, 404), path)
    st, j = srv.request("POST", "/sandboxes/0123456789abcdef0123456789abcdef/pause", {})
    eq((st, j["code"]), (400, 400), j)  # not supported, whatever the sandbox


@test
def sandbox_routes_refuse_unknown_sandboxes_ports_and_routes():
    srv = server()
    st, j = srv.request("POST", "/execute", {"code": "1"},
                        headers=to("0123456789abcdef0123456789abcdef", JUPYTER))
    eq(st, 502, j)  # E2B's proxy answers 502 for a sandbox that is gone
    st, j = srv.request("GET", "/files?path=a", headers=to("../../etc", ENVD))
    eq(st, 502, j)
    sb = create(srv)
    try:
        st, j = srv.request("GET", "/health", headers=to(sb["sandboxID"], {"E2b-Sandbox-Port": "22"}))
        eq(st, 400, j)
        st, _ = srv.request("GET", "/health", headers=to(sb["sandboxID"], ENVD))
        eq(st, 204)
        st, j = srv.request("GET", "/nope", headers=to(sb["sandboxID"], JUPYTER))
        eq(st, 404, j)
        st, j = srv.request("POST", "/execute", b"{\"code\": ", headers=to(
            sb["sandboxID"], JUPYTER, **{"Content-Type": "application/json"}))
        eq(st, 400, j)
        st, j = srv.request("POST", "/execute", {"code": 5}, headers=to(sb["sandboxID"], JUPYTER))
        eq(st, 400, j)
        st, j = srv.request("POST", "/execute", {"code": "1", "context_id": "nope"},
                            headers=to(sb["sandboxID"], JUPYTER))
        eq(st, 404, j)
        st, j = srv.request("DELETE", "/contexts/nope", headers=to(sb["sandboxID"], JUPYTER))
        eq(st, 404, j)
        # the sandbox is a session of the same registry: /v1 lists it
        st, j = srv.request("GET", "/v1/sessions")
        check(sb["sandboxID"] in [s["id"] for s in j["sessions"]], j)
    finally:
        kill(srv, sb["sandboxID"])


@test
def file_paths_out_of_the_workspace_are_refused():
    srv = server()
    sb = create(srv)
    h = to(sb["sandboxID"], ENVD)
    try:
        for q in ("/etc/passwd", "../etc/passwd", "a/../../x", "/home/user/../root", "a%00b",
                  "%2e%2e/x", "/home/userx/a", "a//b"):
            st, j = srv.request("GET", "/files?path=" + q, headers=h)
            eq(st, 400, "%s: %r" % (q, j))
            st, j = srv.request("POST", "/files?path=" + q, b"data",
                                dict(h, **{"Content-Type": "application/octet-stream"}))
            eq(st, 400, "%s: %r" % (q, j))
        st, j = srv.request("POST", "/filesystem.Filesystem/ListDir", {"path": "/"}, headers=h)
        eq((st, j["code"]), (400, "invalid_argument"), j)
        st, j = srv.request("POST", "/filesystem.Filesystem/Move",
                            {"source": "a", "destination": "/tmp/a"}, headers=h)
        eq((st, j["code"]), (400, "invalid_argument"), j)
        # a symlink the code planted does not lead out
        st, body = srv.request("POST", "/execute", {"code": "import os\nos.symlink('/etc', 'l')"},
                               headers=to(sb["sandboxID"], JUPYTER))
        eq(st, 200)
        check(b'"error"' not in body, body)
        st, j = srv.request("GET", "/files?path=l/passwd", headers=h)
        eq(st, 400, j)
        st, j = srv.request("POST", "/filesystem.Filesystem/Stat", {"path": "l/passwd"}, headers=h)
        eq((st, j["code"]), (400, "invalid_argument"), j)
        st, j = srv.request("POST", "/filesystem.Filesystem/Remove", {"path": "l/passwd"}, headers=h)
        eq(st, 400, j)
        check(os.path.exists("/etc/passwd"), "/etc/passwd")
        st, j = srv.request("POST", "/filesystem.Filesystem/Remove", {"path": "/home/user"}, headers=h)
        eq(st, 400, j)
    finally:
        kill(srv, sb["sandboxID"])


def frames(data):
    """Connect envelopes: [(flags, json)]."""
    out, i = [], 0
    while i < len(data):
        check(len(data) - i >= 5, "a cut envelope: %r" % data[i:])
        flags, n = struct.unpack(">BI", data[i:i + 5])
        out.append((flags, json.loads(data[i + 5:i + 5 + n])))
        i += 5 + n
    return out


@test
def connect_envelope_framing_errors_end_the_stream_with_invalid_argument():
    srv = server()
    sb = create(srv)
    h = to(sb["sandboxID"], ENVD, **{"Content-Type": "application/connect+json"})
    msg = json.dumps({"process": {"cmd": "/bin/echo", "args": ["hi"]}}).encode()
    try:
        bad = [b"", b"\x00\x00\x00", b"\x00\x00\x00\x00\x10" + msg[:5],
               b"\x01" + struct.pack(">I", len(msg)) + msg, b"\x02" + struct.pack(">I", len(msg)) + msg,
               b"\x80" + struct.pack(">I", len(msg)) + msg,
               b"\x00" + struct.pack(">I", len(msg)) + msg + b"\x00",
               b"\x00" + struct.pack(">I", 5) + b"[1,2]",
               b"\x00\xff\xff\xff\xff" + msg]
        for body in bad:
            st, data = srv.request("POST", "/process.Process/Start", body, h)
            eq(st, 200, body)
            fr = frames(data)
            eq(len(fr), 1, fr)
            eq(fr[0][0], 2, fr)
            eq(fr[0][1]["error"]["code"], "invalid_argument", (body, fr))
        # and a good one: start, data, end, end of stream
        st, data = srv.request("POST", "/process.Process/Start",
                               b"\x00" + struct.pack(">I", len(msg)) + msg, h)
        eq(st, 200)
        fr = frames(data)
        check("start" in fr[0][1]["event"], fr)
        eq(fr[-1], (2, {}), fr)
        ends = [f[1]["event"]["end"] for f in fr if f[0] == 0 and "end" in f[1]["event"]]
        eq(ends, [{"exitCode": 0, "exited": True, "status": "exit status 0"}], fr)
        out = b"".join(__import__("base64").b64decode(f[1]["event"]["data"]["stdout"])
                       for f in fr if f[0] == 0 and "data" in f[1]["event"])
        eq(out, b"hi\n")
        # unary calls: JSON only, a size cap, unknown calls
        st, j = srv.request("POST", "/filesystem.Filesystem/ListDir", b"\x08\x01",
                            dict(h, **{"Content-Type": "application/proto"}))
        eq((st, j["code"]), (415, "invalid_argument"), j)
        st, j = srv.request("POST", "/filesystem.Filesystem/ListDir",
                            {"path": "a" * (70 << 10)}, headers=to(sb["sandboxID"], ENVD))
        eq((st, j["code"]), (413, "invalid_argument"), j)
        st, j = srv.request("POST", "/process.Process/SendInput", {}, headers=to(sb["sandboxID"], ENVD))
        eq((st, j["code"]), (501, "unimplemented"), j)
        st, j = srv.request("POST", "/process.Process/SendSignal",
                            {"process": {"pid": 99999}, "signal": "SIGNAL_SIGKILL"},
                            headers=to(sb["sandboxID"], ENVD))
        eq((st, j["code"]), (404, "not_found"), j)
    finally:
        kill(srv, sb["sandboxID"])


@test
def duplicate_keys_are_refused_in_every_e2b_body():
    # the control plane, the code interpreter, envd's unary calls and its
    # Connect stream: a key twice is a 400 that names it, never the last
    srv = server()
    sb = create(srv)
    sid = sb["sandboxID"]
    try:
        for path, body, h in (
                ("/sandboxes", b'{"templateID": "base", "templateID": "other"}', {}),
                ("/sandboxes/%s/timeout" % sid, b'{"timeout": 60, "timeout": 1}', {}),
                ("/execute", b'{"code": "1", "code": "2"}', to(sid, JUPYTER)),
                ("/contexts", b'{"language": "python", "language": "bash"}', to(sid, JUPYTER)),
                ("/filesystem.Filesystem/ListDir", b'{"path": "/home/user", "path": "/"}',
                 to(sid, ENVD))):
            st, j = srv.request("POST", path, body, dict(h, **{"Content-Type": "application/json"}))
            eq(st, 400, (path, j))
            check("twice" in json.dumps(j) and "send each key once" in json.dumps(j), (path, j))
        msg = b'{"process": {"cmd": "/bin/echo", "cmd": "/bin/sh", "args": ["hi"]}}'
        st, data = srv.request("POST", "/process.Process/Start", b"\x00" + struct.pack(">I", len(msg)) + msg,
                               to(sid, ENVD, **{"Content-Type": "application/connect+json"}))
        eq(st, 200)
        fr = frames(data)
        eq(fr[0][1]["error"]["code"], "invalid_argument", fr)
        check('"cmd"' in fr[0][1]["error"]["message"] and "twice" in fr[0][1]["error"]["message"], fr)
    finally:
        kill(srv, sid)


@test
def multipart_uploads_are_framed_strictly():
    srv = server()
    sb = create(srv)
    h = to(sb["sandboxID"], ENVD, **{"Content-Type": "multipart/form-data; boundary=XyZ"})
    part = b'--XyZ\r\nContent-Disposition: form-data; name="file"; filename="up.txt"\r\n\r\n'
    try:
        st, j = srv.request("POST", "/files", part + b"hello\r\n--XyZ--\r\n", h)
        eq(st, 200, j)
        eq(j, [{"path": "/home/user/up.txt", "name": "up.txt", "type": "file"}])
        st, data = srv.request("GET", "/files?path=up.txt", headers=to(sb["sandboxID"], ENVD))
        eq((st, data), (200, b"hello"))
        # data that begins like the delimiter and is not
        st, j = srv.request("POST", "/files?path=crlf.txt", part + b"a\r\n--Xy\r\n-\r\n--XyZ--", h)
        eq(st, 200, j)
        st, data = srv.request("GET", "/files?path=crlf.txt", headers=to(sb["sandboxID"], ENVD))
        eq(data, b"a\r\n--Xy\r\n-")
        # several files, each part naming its own
        two = part.replace(b"up.txt", b"d/one.txt") + b"1\r\n--XyZ\r\n" + \
            part[7:].replace(b"up.txt", b"/home/user/d/two.txt") + b"22\r\n--XyZ--\r\n"
        st, j = srv.request("POST", "/files", two, h)
        eq(st, 200, j)
        eq([e["path"] for e in j], ["/home/user/d/one.txt", "/home/user/d/two.txt"])
        st, data = srv.request("GET", "/files?path=d/two.txt", headers=to(sb["sandboxID"], ENVD))
        eq(data, b"22")
        st, j = srv.request("POST", "/files?path=x.txt", two, h)
        eq(st, 400, "?path= with two parts: %r" % (j,))
        for body, why in ((part + b"hello", "no closing boundary"),
                          (b"garbage\r\n\r\nhello\r\n--XyZ--", "no opening boundary"),
                          (part + b"a\r\n--XyZb\r\n--XyZ--", "the boundary inside the data"),
                          (part.replace(b'; filename="up.txt"', b"") + b"x\r\n--XyZ--", "no file name"),
                          (part.replace(b"up.txt", b"../../x") + b"x\r\n--XyZ--", "a path out"),
                          (b"--XyZ\r\n" + b"X" * 9000, "headers too long")):
            st, j = srv.request("POST", "/files", body, h)
            eq(st, 400, "%s: %r" % (why, j))
        st, data = srv.request("POST", "/filesystem.Filesystem/ListDir", {"path": ""},
                               headers=to(sb["sandboxID"], ENVD))
        names = sorted(e["name"] for e in data["entries"])
        eq(names, ["crlf.txt", "d", "up.txt"],
           "nothing else was written")
        st, j = srv.request("POST", "/files?path=big", b"x" * ((64 << 20) + 1),
                            to(sb["sandboxID"], ENVD, **{"Content-Type": "application/octet-stream"}))
        eq(st, 413, j)
        st, j = srv.request("POST", "/files?path=gz", b"x",
                            to(sb["sandboxID"], ENVD, **{"Content-Type": "application/octet-stream",
                                                         "Content-Encoding": "gzip"}))
        eq(st, 400, j)
    finally:
        kill(srv, sb["sandboxID"])


@test
def the_e2b_door_has_the_same_host_and_token_checks_as_v1():
    srv = server()
    st, j = srv.request("POST", "/sandboxes", {}, headers={"Host": "evil.example:80"})
    eq(st, 403, j)
    st, j = srv.request("GET", "/sandboxes", headers={"X-Forwarded-For": "1.2.3.4"})
    eq(st, 403, j)
    tok = server("token")
    st, j = tok.request("GET", "/sandboxes")
    eq((st, j["code"]), (401, 401), j)
    st, j = tok.request("GET", "/sandboxes", headers={"X-API-Key": "e2b_" + TOKEN[:-1] + "0"})
    eq(st, 401, j)
    key = {"X-API-Key": "e2b_" + TOKEN}
    sb = create(tok, headers=key)
    try:
        check(len(sb["envdAccessToken"]) == 32 and sb["envdAccessToken"] != TOKEN, sb)
        h = to(sb["sandboxID"], ENVD)
        st, j = tok.request("GET", "/files?path=a", headers=h)
        eq(st, 401, j)
        st, j = tok.request("GET", "/files?path=a", headers=dict(h, **{"X-Access-Token": "0" * 32}))
        eq(st, 401, j)
        st, j = tok.request("POST", "/files?path=a", b"x", dict(h, **{
            "X-Access-Token": sb["envdAccessToken"], "Content-Type": "application/octet-stream"}))
        eq(st, 200, j)
        # one sandbox's token opens no other sandbox
        other = create(tok, headers=key)
        st, j = tok.request("GET", "/files?path=a", headers=to(other["sandboxID"], ENVD, **{
            "X-Access-Token": sb["envdAccessToken"]}))
        eq(st, 401, j)
        kill(tok, other["sandboxID"], headers=key)
        # /v1 takes the bearer token, not the API key
        st, j = tok.request("GET", "/v1/sessions", headers=key)
        eq(st, 401, j)
    finally:
        kill(tok, sb["sandboxID"], headers=key)


@test
def restarting_the_default_context_ends_a_cell_that_ignores_sigint():
    """As POST /v1/sessions/{id}/restart (the engine's one restart): the
    cell is interrupted, and its kernel killed after the grace period when
    it does not stop; the E2B door once waited for the cell to end."""
    srv = server()
    sb = create(srv)
    sid = sb["sandboxID"]
    cell = ("import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            "time.sleep(3000)\n")
    done = []
    t = threading.Thread(target=lambda: done.append(srv.request(
        "POST", "/execute", {"code": cell}, headers=to(sid, JUPYTER), timeout=600)), daemon=True)
    try:
        t.start()
        for _ in range(600):  # until the cell runs (the session is busy)
            st, j = srv.request("GET", "/v1/sessions/" + sid)
            if st == 200 and j["busy"]:
                break
            time.sleep(0.1)
        check(j["busy"], "the cell never started: %r" % (j,))
        # generous: the grace period is 2 s; before, this waited 3000 s
        st, j = srv.request("POST", "/contexts/default-python/restart", headers=to(sid, JUPYTER),
                            timeout=180)
        eq(st, 204, j)
        t.join(180)
        check(done, "the cell's request did not end")
        st, j = srv.request("POST", "/execute", {"code": "print(6 * 7)"}, headers=to(sid, JUPYTER))
        eq(st, 200, j)
    finally:
        kill(srv, sid)


def op_counts(srv):
    """{op: observations} of codecell_session_operation_duration_seconds."""
    st, text = srv.request("GET", "/metrics")
    eq(st, 200, text)
    out = {}
    for line in text.decode().splitlines():
        if line.startswith("codecell_session_operation_duration_seconds_count{op=\""):
            out[line.split('"')[1]] = int(line.rsplit(" ", 1)[1])
    check(set(out) == {"create", "fork", "restart"}, out)
    return out


@test
def sandbox_creates_and_context_restarts_are_timed_in_metrics():
    """The E2B door's creates and restarts of the default context are the
    engine's, and /metrics times them as /v1's."""
    srv = server()
    before = op_counts(srv)
    sb = create(srv)
    try:
        st, j = srv.request("POST", "/contexts/default-python/restart",
                            headers=to(sb["sandboxID"], JUPYTER), timeout=180)
        eq(st, 204, j)
        after = op_counts(srv)
        eq(after, dict(before, create=before["create"] + 1, restart=before["restart"] + 1),
           (before, after))
    finally:
        kill(srv, sb["sandboxID"])


@test
def every_server_stops_cleanly_with_nothing_reported():
    """Last: SIGTERM ends each server with status 0 (under ASan, a leak or
    a memory error would make it other) and nothing in their logs."""
    for kind, srv in list(_servers.items()):
        eq(srv.stop(), 0, "%s server: %s" % (kind, srv.log()[-3000:]))
        check("ERROR" not in srv.log() and "runtime error" not in srv.log(), srv.log()[-3000:])
        del _servers[kind]


if __name__ == "__main__":
    try:
        main()
    finally:
        for s in _servers.values():
            s.stop()
