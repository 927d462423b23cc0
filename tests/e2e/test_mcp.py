"""`codecell mcp`: the MCP server on stdio, driven with raw JSON-RPC lines
over a pipe.  The lifecycle and version negotiation, malformed and
oversized input, wrong types, batches, the stateless 2026-07-28 revision,
the tools (runs, sessions, files) and what is left after EOF."""
import base64
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import CODECELL, HANG_S, await_descendants, check, codecell, eq, main, test  # noqa: E402

MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {},
               "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}}


class Mcp:
    """A live `codecell mcp`; send() writes one line, recv() reads one."""

    def __init__(self, *args, version="2025-11-25", init=True):
        self.p = subprocess.Popen([CODECELL, "mcp"] + list(args), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.next_id = 100
        self.buf = b""
        if init:
            r = self.request("initialize", {"protocolVersion": version, "capabilities": {},
                                            "clientInfo": {"name": "test", "version": "1"}})
            eq(r["result"]["protocolVersion"], version, "negotiated")
            self.notify("notifications/initialized")

    def send_raw(self, data):
        self.p.stdin.write(data)
        self.p.stdin.flush()

    def send(self, obj):
        self.send_raw(json.dumps(obj).encode() + b"\n")

    def recv(self, timeout=120):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            check(left > 0, "no reply within %d s" % timeout)
            r, _, _ = select.select([self.p.stdout], [], [], left)
            if r:
                chunk = os.read(self.p.stdout.fileno(), 1 << 20)
                check(chunk, "codecell mcp closed stdout (stderr %r)" % self.stderr_now())
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def stderr_now(self):
        if self.p.poll() is None:
            return ""
        return self.p.stderr.read().decode(errors="replace")

    def request(self, method, params=None, timeout=120):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        r = self.recv(timeout)
        eq(r.get("id"), self.next_id, "reply id for %s: %r" % (method, r))
        return r

    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def call(self, tool, wait=120, **arguments):
        """tools/call; returns the CallToolResult (fails on a JSON-RPC error)."""
        r = self.request("tools/call", {"name": tool, "arguments": arguments}, wait)
        check("result" in r, "tools/call %s: %r" % (tool, r))
        return r["result"]

    def call_error(self, tool, arguments):
        r = self.request("tools/call", {"name": tool, "arguments": arguments})
        check("error" in r, "expected a JSON-RPC error for %s %r: %r" % (tool, arguments, r))
        return r["error"]

    def close(self, timeout=60):
        self.p.stdin.close()
        rc = self.p.wait(timeout=timeout)
        self.stderr = self.p.stderr.read().decode(errors="replace")
        self.p.stdout.close()
        return rc


def text_of(result):
    return "".join(c["text"] for c in result["content"] if c["type"] == "text")


def descendants(pid):
    """Every process below pid, from /proc (ours only)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            for tid in os.listdir("/proc/%d/task" % p):
                with open("/proc/%d/task/%s/children" % (p, tid)) as f:
                    kids = [int(x) for x in f.read().split()]
                    out += kids
                    todo += kids
        except OSError:
            pass
    return out


def start_time(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except OSError:
        return None


def cgroups_of(pid):
    dirs = set()
    try:
        with open("/proc/%d/cgroup" % pid) as f:
            for line in f:
                _, ctrls, path = line.rstrip("\n").split(":", 2)
                for c in ctrls.split(","):
                    if c in ("memory", "pids") and "sb-" in path:
                        dirs.add("/sys/fs/cgroup/%s%s" % (c, path))
    except OSError:
        pass
    return dirs


# ---- lifecycle and versions ----------------------------------------------

@test
def initialize_answers_each_known_version_with_itself():
    for v in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"):
        m = Mcp(version=v)
        r = m.request("ping")
        eq(r["result"], {}, "ping after initialize")
        eq(m.close(), 0)


@test
def initialize_with_an_unknown_version_gets_the_latest():
    for asked in ("1999-01-01", "2026-07-28", "draft"):
        m = Mcp(init=False)
        r = m.request("initialize", {"protocolVersion": asked, "capabilities": {},
                                     "clientInfo": {"name": "t", "version": "1"}})
        eq(r["result"]["protocolVersion"], "2025-11-25", asked)
        eq(r["result"]["serverInfo"]["name"], "codecell")
        check("tools" in r["result"]["capabilities"], r)
        # once only
        r = m.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                     "clientInfo": {"name": "t", "version": "1"}})
        eq(r["error"]["code"], -32600, "a second initialize")
        m.close()


@test
def calls_before_initialize_get_an_error_but_ping_works():
    m = Mcp(init=False)
    for method in ("tools/list", "tools/call"):
        r = m.request(method, {"name": "run_code", "arguments": {"code": "1"}})
        eq(r["error"]["code"], -32600, method)
        check("initialize" in r["error"]["message"], r)
    eq(m.request("ping")["result"], {})
    r = m.request("initialize", {"capabilities": {}})
    eq(r["error"]["code"], -32602, "initialize without protocolVersion")
    eq(m.close(), 0)


@test
def unknown_methods_and_tools_are_jsonrpc_errors():
    m = Mcp()
    r = m.request("resources/list")
    eq(r["error"]["code"], -32601)
    e = m.call_error("rm_rf", {})
    eq(e["code"], -32602)
    check("run_code" in e["message"], e)
    m.close()


@test
def tools_list_has_schemas_for_every_tool():
    m = Mcp()
    tools = {t["name"]: t for t in m.request("tools/list")["result"]["tools"]}
    eq(sorted(tools), sorted(["run_code", "create_session", "close_session", "list_sessions",
                              "list_files", "read_file", "write_file"]))
    for t in tools.values():
        eq(t["inputSchema"]["type"], "object", t["name"])
        eq(t["outputSchema"]["type"], "object", t["name"])
    eq(tools["run_code"]["inputSchema"]["required"], ["code"])
    eq(tools["run_code"]["inputSchema"]["properties"]["language"]["enum"],
       ["python", "javascript", "bash", "sql"])
    m.close()
    # before outputSchema existed (2025-06-18), none is sent
    old = Mcp(version="2025-03-26")
    for t in old.request("tools/list")["result"]["tools"]:
        check("outputSchema" not in t, t)
    r = old.call("run_code", code="print('hi')")
    check("structuredContent" not in r, r)
    eq(text_of(r), "[stdout]\nhi\n\nstatus: ok, exit code 0")
    old.close()


# ---- malformed input -------------------------------------------------------

@test
def malformed_json_is_a_parse_error_and_the_server_goes_on():
    m = Mcp()
    for bad in (b"garbage", b"{", b'{"jsonrpc": "2.0", "id": 1, "method": "ping"', b"\xff\xfe{}",
                b'{"a": 1, "a": 2}', b"[1, 2"):
        m.send_raw(bad + b"\n")
        r = m.recv()
        eq(r["error"]["code"], -32700, bad)
        eq(r["id"], None)
    m.send_raw(b"\n   \n")  # blank lines are no messages
    eq(m.request("ping")["result"], {})
    eq(m.close(), 0)


@test
def a_key_twice_is_a_parse_error_that_names_it():
    m = Mcp()
    for bad, key in ((b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "method": "tools/list"}', '"method"'),
                     (b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": '
                      b'{"name": "run_code", "arguments": {"code": "1", "code": "2"}}}', '"code"')):
        m.send_raw(bad + b"\n")
        r = m.recv()
        eq(r["error"]["code"], -32700, bad)
        eq(r["id"], None)
        check(key in r["error"]["message"] and "send each key once" in r["error"]["message"], r)
    eq(m.request("ping")["result"], {})
    eq(m.close(), 0)


@test
def a_line_over_16_mib_is_a_parse_error_and_the_server_goes_on():
    m = Mcp()
    big = b'{"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"x": "' + \
        b"a" * (17 << 20) + b'"}}\n'
    m.send_raw(big)
    r = m.recv()
    eq(r["error"]["code"], -32700)
    check("limit" in r["error"]["message"], r)
    eq(m.request("ping")["result"], {})
    # just under the cap is read (and answered)
    ok = b'{"jsonrpc": "2.0", "id": 8, "method": "ping", "params": {"x": "' + \
        b"a" * (15 << 20) + b'"}}\n'
    m.send_raw(ok)
    eq(m.recv(), {"jsonrpc": "2.0", "id": 8, "result": {}})
    eq(m.close(), 0)


@test
def wrong_types_in_the_envelope_are_invalid_requests():
    m = Mcp()
    cases = [
        ({"jsonrpc": "1.0", "id": 1, "method": "ping"}, -32600),
        ({"id": 1, "method": "ping"}, -32600),
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, -32600),
        ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}, -32600),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, -32600),
        ({"jsonrpc": "2.0", "id": 1, "method": 5}, -32600),
        ({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]}, -32602),
        ("a string", -32600),
        (42, -32600),
    ]
    for msg, code in cases:
        m.send(msg)
        r = m.recv()
        eq(r["error"]["code"], code, repr(msg))
    # a response from the client needs no answer: the next line is the ping's
    m.send({"jsonrpc": "2.0", "id": 99, "result": {}})
    eq(m.request("ping")["result"], {})
    m.close()


@test
def errors_that_quote_long_names_are_still_answered():
    """Messages quote the client's method, tool or argument name cut to a
    length, which once split a UTF-8 character: the error could not be
    made and the request got no reply at all."""
    m = Mcp()
    for n in (1, 99, 100, 3000):
        name = "é" * n
        r = m.request(name)
        eq(r["error"]["code"], -32601, "method of %d characters" % n)
        e = m.call_error(name, {})
        eq(e["code"], -32602, "tool of %d characters" % n)
        check(e["message"].startswith("unknown tool"), e)
        e = m.call_error("run_code", {"code": "1", name: 1})
        check(e["message"].startswith("unknown argument"), e)
    r = m.call("read_file", session_id="x" * 64, path="d/" * 2000 + "f")
    eq(r["isError"], True)
    check(text_of(r).startswith("no session"), r)
    m.close()


@test
def arguments_that_do_not_fit_the_schema_are_invalid_params():
    m = Mcp()
    bad = [
        ("run_code", {}),
        ("run_code", {"code": 42}),
        ("run_code", {"code": "1", "language": "cobol"}),
        ("run_code", {"code": "1", "timeout": -1}),
        ("run_code", {"code": "1", "timeout": 1e9}),
        ("run_code", {"code": "1", "timeout": "5"}),
        ("run_code", {"code": "1", "extra": True}),
        ("run_code", {"code": "print(1)\u0000"}),
        ("read_file", {"session_id": "x"}),
        ("write_file", {"session_id": "x", "path": "a", "content": None}),
        ("create_session", {"language": "sql"}),
        ("list_sessions", {"verbose": True}),
    ]
    for tool, args in bad:
        e = m.call_error(tool, args)
        eq(e["code"], -32602, "%s %r" % (tool, args))
        check(e["message"], e)
    r = m.request("tools/call", {"name": "run_code", "arguments": "print(1)"})
    eq(r["error"]["code"], -32602, "arguments not an object")
    r = m.request("tools/call", {"arguments": {"code": "1"}})
    eq(r["error"]["code"], -32602, "no name")
    m.close()


@test
def batches_only_in_2025_03_26():
    m = Mcp(version="2025-03-26")
    m.send([{"jsonrpc": "2.0", "id": "a", "method": "ping"},
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
            {"jsonrpc": "2.0", "id": "b", "method": "nope"}])
    r = m.recv()
    eq(len(r), 2, r)
    eq(r[0], {"jsonrpc": "2.0", "id": "a", "result": {}})
    eq(r[1]["error"]["code"], -32601)
    # notifications only: no reply at all
    m.send([{"jsonrpc": "2.0", "method": "notifications/initialized"}])
    m.send([])
    eq(m.recv()["error"]["code"], -32600, "empty batch")
    eq(m.request("ping")["result"], {})
    m.close()
    m = Mcp(version="2025-11-25")
    m.send([{"jsonrpc": "2.0", "id": "a", "method": "ping"}])
    r = m.recv()
    eq(r["error"]["code"], -32600)
    check("2025-03-26" in r["error"]["message"], r)
    m.close()


# ---- 2026-07-28: no handshake ---------------------------------------------

@test
def stateless_revision_with_server_discover_and_meta():
    m = Mcp(init=False)
    r = m.request("server/discover", {"_meta": MODERN_META})["result"]
    eq(r["supportedVersions"][0], "2026-07-28")
    check("2024-11-05" in r["supportedVersions"], r)
    eq(r["resultType"], "complete")
    eq(r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "codecell")
    r = m.request("tools/list", {"_meta": MODERN_META})["result"]
    eq(r["resultType"], "complete")
    check(r["ttlMs"] > 0 and r["cacheScope"] in ("public", "private"), r)
    r = m.request("tools/call", {"_meta": MODERN_META, "name": "run_code",
                                 "arguments": {"code": "print(6 * 7)"}})["result"]
    eq(r["structuredContent"]["logs"]["stdout"], "42\n")
    eq(r["resultType"], "complete")
    # an unknown version: the list of what we speak
    meta = dict(MODERN_META, **{"io.modelcontextprotocol/protocolVersion": "2099-01-01"})
    r = m.request("tools/list", {"_meta": meta})
    eq(r["error"]["code"], -32022)
    eq(r["error"]["data"]["requested"], "2099-01-01")
    check("2026-07-28" in r["error"]["data"]["supported"], r)
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    eq(m.request("tools/list", {"_meta": meta})["error"]["code"], -32602, "no clientCapabilities")
    r = m.request("initialize", {"_meta": MODERN_META, "protocolVersion": "2026-07-28"})
    eq(r["error"]["code"], -32600, "initialize is not part of 2026-07-28")
    # the legacy era still works on the same connection
    r = m.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "t", "version": "1"}})
    eq(r["result"]["protocolVersion"], "2025-06-18")
    eq(m.close(), 0)


# ---- tools -----------------------------------------------------------------

@test
def structured_content_has_outputs_in_order():
    m = Mcp()
    code = 'import sys\nsys.stderr.write("A\\n"); print("B"); sys.stderr.write("C\\n")\n'
    for tool in ("one-shot", "session"):
        if tool == "one-shot":
            r = m.call("run_code", code=code)
        else:
            sid = m.call("create_session")["structuredContent"]["session_id"]
            r = m.call("run_code", session_id=sid, code=code)
        eq(r["structuredContent"]["outputs"],
           [{"stream": "stderr", "text": "A\n"}, {"stream": "stdout", "text": "B\n"},
            {"stream": "stderr", "text": "C\n"}], tool)
    eq(m.close(), 0)


@test
def a_failing_program_is_a_tool_result_with_is_error_and_the_traceback():
    m = Mcp()
    r = m.call("run_code", code="def f():\n    return 1 / 0\nf()\n")
    eq(r["isError"], True)
    eq(r["structuredContent"]["status"], "error")
    eq(r["structuredContent"]["error"]["name"], "ZeroDivisionError")
    t = text_of(r)
    check("ZeroDivisionError: division by zero" in t and "line 2, in f" in t, t)
    r = m.call("run_code", code="console.log('js'); process.exit(3)", language="javascript")
    eq(r["isError"], True)
    eq(r["structuredContent"]["exit_code"], 3)
    r = m.call("run_code", code="echo ok", language="bash")
    eq(r["isError"], False)
    eq(r["structuredContent"]["logs"]["stdout"], "ok\n")
    m.close()


@test
def state_persists_across_run_code_calls_in_a_session():
    m = Mcp()
    s = m.call("create_session")["structuredContent"]
    sid = s["session_id"]
    eq(s["language"], "python")
    r = m.call("run_code", code="x = 41\nimport math", session_id=sid)
    eq(r["isError"], False, r)
    r = m.call("run_code", code="x + 1", session_id=sid)
    sc = r["structuredContent"]
    eq(sc["session_id"], sid)
    eq([b["text/plain"] for b in sc["results"] if b.get("is_main_result")], ["42"])
    eq(sc["execution_count"], 2)
    check("[result]\n42\n" in text_of(r), text_of(r))
    # a one-shot run does not see it
    r = m.call("run_code", code="print(x)")
    eq(r["structuredContent"]["error"]["name"], "NameError")
    # a session in another language; and the language may not change
    js = m.call("create_session", language="javascript")["structuredContent"]["session_id"]
    m.call("run_code", code="let y = 5", session_id=js)
    eq(m.call("run_code", code="y * 2", session_id=js)["structuredContent"]["results"][0]["text/plain"], "10")
    r = m.call("run_code", code="1", session_id=js, language="python")
    eq(r["isError"], True)
    check("javascript" in text_of(r), r)
    lst = m.call("list_sessions")["structuredContent"]
    eq(sorted(s["session_id"] for s in lst["sessions"]), sorted([sid, js]))
    eq(m.call("close_session", session_id=js)["structuredContent"], {"session_id": js, "closed": True})
    r = m.call("run_code", code="1", session_id=js)
    eq(r["isError"], True)
    check("no session" in text_of(r), r)
    eq(m.call("close_session", session_id=js)["isError"], True)
    eq(m.close(), 0)


@test
def a_timeout_interrupts_the_cell_and_keeps_the_session():
    m = Mcp()
    sid = m.call("create_session")["structuredContent"]["session_id"]
    m.call("run_code", code="kept = 'yes'", session_id=sid)
    r = m.call("run_code", code="while True: pass", session_id=sid, timeout=0.5)
    eq(r["isError"], True)
    eq(r["structuredContent"]["status"], "timeout")
    r = m.call("run_code", code="kept", session_id=sid)
    eq(r["structuredContent"]["results"][0]["text/plain"], "'yes'")
    m.close()


@test
def a_plot_comes_back_as_image_content():
    m = Mcp()
    sid = m.call("create_session")["structuredContent"]["session_id"]
    r = m.call("run_code", session_id=sid,
               code="import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()")
    eq(r["isError"], False, r)
    images = [c for c in r["content"] if c["type"] == "image"]
    eq(len(images), 1, r["content"])
    eq(images[0]["mimeType"], "image/png")
    check(base64.b64decode(images[0]["data"]).startswith(b"\x89PNG\r\n\x1a\n"), "a PNG")
    # a figure saved to a file comes back as an image from read_file too
    m.call("run_code", session_id=sid, code="plt.figure(); plt.bar([1], [2]); plt.savefig('fig.png')")
    r = m.call("read_file", session_id=sid, path="fig.png")
    eq(r["structuredContent"]["encoding"], "base64")
    eq([c["mimeType"] for c in r["content"] if c["type"] == "image"], ["image/png"])
    m.close()


@test
def files_write_read_and_list_in_a_session_workspace():
    m = Mcp()
    sid = m.call("create_session")["structuredContent"]["session_id"]
    r = m.call("write_file", session_id=sid, path="data/in.txt", content="héllo\n")
    eq(r["isError"], False, r)
    eq(r["structuredContent"]["size"], len("héllo\n".encode()))
    eq(r["structuredContent"]["replaced"], False)
    r = m.call("run_code", session_id=sid,
               code="import os\nprint(open('data/in.txt').read().upper(), end='')\n"
                    "open('out.bin', 'wb').write(bytes(range(256)))\nos.getcwd()")
    eq(r["structuredContent"]["logs"]["stdout"], "HÉLLO\n")
    r = m.call("list_files", session_id=sid)["structuredContent"]
    names = {e["name"]: e for e in r["entries"]}
    eq(names["data"]["type"], "directory")
    eq(names["out.bin"]["size"], 256)
    r = m.call("list_files", session_id=sid, path="data")["structuredContent"]
    eq([e["name"] for e in r["entries"]], ["in.txt"])
    r = m.call("read_file", session_id=sid, path="out.bin")["structuredContent"]
    eq(r["encoding"], "base64")
    eq(base64.b64decode(r["content"]), bytes(range(256)))
    r = m.call("read_file", session_id=sid, path="/home/user/data/in.txt")
    eq(r["structuredContent"]["content"], "héllo\n")
    eq(text_of(r), "héllo\n")
    r = m.call("write_file", session_id=sid, path="data/in.txt",
               content=base64.b64encode(b"\x00\x01bin").decode(), encoding="base64")
    eq(r["structuredContent"]["replaced"], True)
    r = m.call("run_code", session_id=sid, code="open('data/in.txt', 'rb').read()")
    eq(r["structuredContent"]["results"][0]["text/plain"], "b'\\x00\\x01bin'")
    eq(m.call("read_file", session_id=sid, path="out.bin", encoding="text")["isError"], True)
    eq(m.call("write_file", session_id=sid, path="x", content="not base64!",
              encoding="base64")["isError"], True)
    m.close()


@test
def file_paths_never_leave_the_workspace():
    m = Mcp()
    sid = m.call("create_session")["structuredContent"]["session_id"]
    m.call("run_code", session_id=sid, code="import os\nos.symlink('/etc/passwd', 'link')\n"
                                           "os.symlink('/', 'root')\nos.mkfifo('fifo')")
    for tool, args in [
        ("read_file", {"path": "../../etc/passwd"}),
        ("read_file", {"path": "/etc/passwd"}),
        ("read_file", {"path": "link"}),
        ("read_file", {"path": "root/etc/hostname"}),
        ("read_file", {"path": "fifo"}),
        ("read_file", {"path": "missing.txt"}),
        ("read_file", {"path": "."}),
        ("list_files", {"path": ".."}),
        ("list_files", {"path": "root"}),
        ("write_file", {"path": "../escape.txt", "content": "x"}),
        ("write_file", {"path": "root/tmp/escape.txt", "content": "x"}),
        ("write_file", {"path": "/tmp/escape.txt", "content": "x"}),
    ]:
        r = m.call(tool, session_id=sid, **args)
        eq(r["isError"], True, "%s %r: %r" % (tool, args, r))
        check(text_of(r), r)
    check(not os.path.exists("/tmp/escape.txt"), "written outside")
    # writing over the planted symlink replaces it, never writes through it
    r = m.call("write_file", session_id=sid, path="link", content="mine")
    eq(r["isError"], False, r)
    r = m.call("run_code", session_id=sid, code="os.path.islink('link'), open('link').read()")
    eq(r["structuredContent"]["results"][0]["text/plain"], "(False, 'mine')")
    r = m.call("read_file", session_id="nosuch", path="x")
    eq(r["isError"], True)
    m.close()


@test
def output_is_capped_per_result():
    m = Mcp("--output-limit", "64K")
    r = m.call("run_code", code="print('x' * (4 << 20))")
    sc = r["structuredContent"]
    eq(sc["truncated"]["stdout"], True)
    check(len(sc["logs"]["stdout"]) < 80 << 10, len(sc["logs"]["stdout"]))
    check(len(text_of(r)) < 80 << 10, len(text_of(r)))
    m.close()


@test
def max_sessions_is_a_tool_error():
    m = Mcp("--max-sessions", "1")
    m.call("create_session")
    r = m.call("create_session")
    eq(r["isError"], True)
    check("max-sessions" in text_of(r), r)
    m.close()


@test
def eof_closes_every_session_and_leaves_no_process_or_cgroup():
    m = Mcp()
    for lang in ("python", "bash"):
        m.call("create_session", language=lang)
    sid = m.call("create_session")["structuredContent"]["session_id"]
    m.call("run_code", session_id=sid, code="import subprocess\n"
                                           "p = subprocess.Popen(['sleep', '1000'])")
    procs = {p: start_time(p) for p in descendants(m.p.pid)}
    check(len(procs) >= 3, "sandbox processes under codecell mcp: %r" % procs)
    groups = set()
    for p in procs:
        groups |= cgroups_of(p)
    eq(m.close(), 0)
    left = [p for p, t in procs.items() if t is not None and start_time(p) == t]
    eq(left, [], "processes left after EOF")
    eq(sorted(g for g in groups if os.path.exists(g)), [], "cgroups left after EOF")


@test
def sigterm_stops_a_running_cell_and_closes_sessions():
    m = Mcp()
    sid = m.call("create_session")["structuredContent"]["session_id"]
    m.call("run_code", session_id=sid, code="1")
    procs = {p: start_time(p) for p in descendants(m.p.pid)}
    m.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
            "params": {"name": "run_code", "arguments": {
                "session_id": sid, "code": "import subprocess\nsubprocess.run(['sleep', '3600'])"}}})
    # SIGTERM once the cell runs (its sleep is there), not after a pause
    # a loaded machine may not have started it in; the sleep must go too
    sleeper = await_descendants(m.p.pid, "sleep 3600", HANG_S)
    check(sleeper, "the cell did not start")
    procs.update({p: start_time(p) for p in sleeper})
    m.p.send_signal(signal.SIGTERM)
    rc = m.p.wait(timeout=60)
    eq(rc, 128 + signal.SIGTERM)
    left = [p for p, t in procs.items() if t is not None and start_time(p) == t]
    eq(left, [], "processes left after SIGTERM")


@test
def a_cancelled_call_is_stopped_and_gets_no_reply():
    m = Mcp()
    sid = m.call("create_session")["structuredContent"]["session_id"]
    m.call("run_code", session_id=sid, code="kept = 7")
    for args in ({"session_id": sid, "code": "import time\ntime.sleep(600)"},
                 {"code": "import time\ntime.sleep(600)"}):
        m.send({"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
                "params": {"name": "run_code", "arguments": args}})
        time.sleep(0.5)  # the cell may or may not have started: either way it is stopped
        m.notify("notifications/cancelled", {"requestId": "slow", "reason": "user"})
        # the next reply is the ping's: the cancelled call's never comes
        r = m.request("ping", timeout=60)
        eq(r["result"], {})
    # the session and its variables are still there
    r = m.call("run_code", session_id=sid, code="kept * 6")
    eq(r["structuredContent"]["results"][0]["text/plain"], "42", r)
    # a cancel for a call that already ended (or never was) harms nothing
    m.notify("notifications/cancelled", {"requestId": 12345})
    r = m.call("run_code", session_id=sid, code="kept")
    eq(r["structuredContent"]["status"], "ok", r)
    eq(m.close(), 0)


@test
def idle_sessions_expire_and_sandbox_options_apply():
    m = Mcp("--idle-timeout", "1s", "--env", "GREETING=hello", "--net", "none", "--memory", "64M")
    sid = m.call("create_session")["structuredContent"]["session_id"]
    r = m.call("run_code", session_id=sid, code="import os\nos.environ['GREETING']")
    eq(r["structuredContent"]["results"][0]["text/plain"], "'hello'")
    r = m.call("run_code", code="import fcntl, os, socket, struct\n"
                                "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                                "r = fcntl.ioctl(s.fileno(), 0x8913, struct.pack('16sH14x', b'lo', 0))\n"
                                "print(os.environ['GREETING'], struct.unpack('16sH14x', r)[1] & 1)")
    eq(r["structuredContent"]["logs"]["stdout"], "hello 0\n", r)  # --net none: lo is down
    r = m.call("run_code", code="x = bytearray(200 << 20)")
    eq(r["structuredContent"]["status"], "memory_limit", r)
    time.sleep(2.5)  # past the idle timeout: expiry is checked at the next call
    lst = m.call("list_sessions")["structuredContent"]
    eq(lst["count"], 0, lst)
    r = m.call("run_code", session_id=sid, code="1")
    eq(r["isError"], True)
    eq(m.close(), 0)
    check("expired" in m.stderr, m.stderr)


@test
def options_are_checked():
    r = codecell("mcp", "--bogus")
    eq(r.status, 125)
    check("unknown option '--bogus'" in r.stderr and "codecell mcp --help" in r.stderr, r)
    r = codecell("mcp", "script.py")
    eq(r.status, 125)
    check("takes no arguments" in r.stderr, r)
    for bad in (["--pool", "65"], ["--max-sessions", "0"], ["--memory", "1"], ["--timeout"],
                ["--output-limit", "17M"], ["--lang", "python"], ["--file", "x"], ["--pool=x"]):
        r = codecell("mcp", *bad)
        eq(r.status, 125, bad)
        check(r.stderr.strip(), r)
    r = codecell("mcp", "--help")
    eq(r.status, 0)
    check("mcpServers" in r.stdout and "--pool" in r.stdout, r)
    # EOF at once: nothing on stdout, exit 0
    r = codecell("mcp", stdin="")
    eq((r.status, r.stdout), (0, ""))


@test
def a_warm_pool_gives_sessions_and_initialize_is_not_held_up_by_it():
    m = Mcp("--pool", "1", "--preload", "json", init=False)
    r = m.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "t", "version": "1"}}, timeout=30)
    eq(r["result"]["protocolVersion"], "2025-11-25")
    s = m.call("create_session")["structuredContent"]
    eq(s["pooled"], True, s)
    eq(s["preloaded"], "json")
    r = m.call("run_code", session_id=s["session_id"], code="import json, sys\njson.dumps([1])")
    eq(r["structuredContent"]["results"][0]["text/plain"], "'[1]'", r)
    eq(m.close(), 0)


@test
def create_session_takes_a_project_under_the_policys_projects():
    """As POST /v1/sessions: `project` only inside the policy's projects
    (symlinks resolved), the directory untouched by what the code does."""
    with tempfile.TemporaryDirectory() as base:
        root = os.path.join(base, "repos")
        d = os.path.join(root, "p")
        os.makedirs(d)
        os.chmod(base, 0o755)
        with open(os.path.join(d, "README.md"), "w") as f:
            f.write("hello project\n")
        os.symlink("/etc", os.path.join(root, "escape"))
        pol = os.path.join(base, "p.ini")
        with open(pol, "w") as f:
            f.write("[default]\nprojects = %s\n" % root)
        m = Mcp("--policy", pol, "--pool", "0")
        try:
            for bad in (os.path.join(root, "escape"), base, "/etc"):
                r = m.call("create_session", project=bad)
                eq(r["isError"], True, r)
                check("projects" in text_of(r), r)
            s = m.call("create_session", project=d)
            eq(s.get("isError"), False, s)
            s = s["structuredContent"]
            eq(s["project"], d, s)
            r = m.call("run_code", session_id=s["session_id"],
                       code="import os\nprint(open('README.md').read(), end='')\nos.remove('README.md')")
            eq(r["structuredContent"]["status"], "ok", r)
            check("hello project" in text_of(r), r)
            eq(os.listdir(d), ["README.md"], "the project changed")
        finally:
            m.close()
        # the default policy has no projects
        m = Mcp("--pool", "0")
        try:
            r = m.call("create_session", project=d)
            eq(r["isError"], True, r)
            check("projects" in text_of(r), r)
        finally:
            m.close()


if __name__ == "__main__":
    main()
