"""The http tool through the doors (POST /v1/tools/http, MCP tools/call)
against a server this test starts on 127.0.0.1 (port 0), which the policy
names.  Each trick to reach another address is refused before any
connection: the server counts what it gets.  The test runs in a network
namespace of its own (only loopback) when it can make one, so that not
even a broken guard could reach another host."""
import ctypes
import fcntl
import http.server
import json
import os
import select
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import CODECELL, Serve, check, codecell, eq, main, scratch, test, write  # noqa: E402
from llm_standin import StandIn, tool_call  # noqa: E402

SECRET = "s3cr3t-t0ken-e2e-4242"
API_KEY = "apikey-e2e-0123456789"
CLONE_NEWNET = 0x40000000


def own_netns():
    """Only loopback from here on, if this process may unshare."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) != 0:
        return False
    # lo up: SIOCGIFFLAGS, IFF_UP, SIOCSIFFLAGS on struct ifreq
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sk:
        ifr = bytearray(struct.pack("16sH22x", b"lo", 0))
        fcntl.ioctl(sk, 0x8913, ifr)
        flags = struct.unpack_from("H", ifr, 16)[0] | 1
        fcntl.ioctl(sk, 0x8914, struct.pack("16sH22x", b"lo", flags))
    return True


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    count = 0
    last = ""

    def log_message(self, *a):
        pass

    def reply(self, code, body, ctype="text/plain", extra=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        Handler.count += 1
        Handler.last = str(self.headers)
        u = urllib.parse.urlsplit(self.path)
        if u.path == "/json":
            self.reply(200, b'{"hello": "world", "n": [1, 2]}', "application/json")
        elif u.path == "/echo":
            self.reply(200, str(self.headers).encode(), "text/plain",
                       [("X-Echo", self.headers.get("Authorization", ""))])
        elif u.path == "/r":
            to = urllib.parse.parse_qs(u.query)["to"][0]
            self.reply(302, b"", extra=[("Location", to)])
        elif u.path == "/slow":
            time.sleep(5)
            self.reply(200, b"late")
        elif u.path == "/huge":
            self.reply(200, b"x" * (4 << 20))
        elif u.path == "/cut":
            # the caller's Authorization (the policy's secret) with its
            # first `at` bytes the last ones under the 64K cap
            at = int(urllib.parse.parse_qs(u.query)["at"][0])
            self.reply(200, b"x" * (65536 - at) + self.headers.get("Authorization", "").encode()
                       + b"y" * 1000)
        else:
            self.reply(404, b"no")

    do_POST = do_GET


class Server:
    def __enter__(self):
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        # a client that stops reading (the size cap) is expected
        self.httpd.handle_error = lambda *a: None
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *a):
        self.httpd.shutdown()
        self.httpd.server_close()


def policy(d, port, hosts=None):
    path = os.path.join(d, "p.ini")
    write(path, "[default]\ntools = http\nhttp.hosts = %s\nhttp.max_response = 64K\n"
                "[host 127.0.0.1]\nheader = Authorization: Bearer %s\nheader = X-Api-Key: %s\n"
          % (hosts or "127.0.0.1:%d, localhost:%d private" % (port, port), SECRET, API_KEY))
    return path


def no_secret(where, text):
    check(SECRET not in text and API_KEY not in text, "a secret in %s: %r" % (where, text[:2000]))


@test
def api_door_gets_json_and_lists_the_tool():
    with Server() as h, scratch() as d:
        s = Serve("--policy", policy(d, h.port))
        try:
            st, j = s.request("GET", "/v1/tools")
            eq(st, 200)
            check("http" in [t["name"] for t in j["tools"]], "listed: %r" % j)
            st, j = s.post("/v1/tools/http", {"arguments": {"url": "http://127.0.0.1:%d/json" % h.port}})
            eq(st, 200, repr(j))
            eq(j["status"], 200)
            eq(j["json"], {"hello": "world", "n": [1, 2]})
            eq(j["address"], "127.0.0.1")
        finally:
            s.stop()


@test
def bypass_tricks_are_refused_before_connecting():
    tricks = ["2130706433", "0177.0.0.1", "0x7f.1", "127.1", "[::ffff:127.0.0.1]", "[::1]",
              "0.0.0.0", "169.254.169.254", "[fd00:ec2::254]", "0xa9fea9fe", "10.0.0.1", "localhost"]
    with Server() as h, scratch() as d:
        # any public host, nothing else
        s = Serve("--policy", policy(d, h.port, hosts="*"))
        try:
            before = Handler.count
            for host in tricks:
                st, j = s.post("/v1/tools/http",
                               {"arguments": {"url": "http://%s:%d/json" % (host, h.port)}})
                eq(st, 403, "%s: %r" % (host, j))
                eq(j["error"]["code"], "rejected", host)
            eq(Handler.count, before, "no request reached the server")
        finally:
            s.stop()


@test
def redirects_to_refused_addresses_are_refused():
    with Server() as h, scratch() as d:
        s = Serve("--policy", policy(d, h.port))
        try:
            for to in ["http://169.254.169.254/latest/meta-data/", "http://[::1]:%d/json" % h.port,
                       "http://0.0.0.0:%d/json" % h.port, "file:///etc/passwd"]:
                before = Handler.count
                st, j = s.post("/v1/tools/http", {"arguments": {
                    "url": "http://127.0.0.1:%d/r?%s" % (h.port, urllib.parse.urlencode({"to": to}))}})
                eq(st, 403, "%s: %r" % (to, j))
                check("redirect" in j["error"]["message"], repr(j))
                eq(Handler.count, before + 1, "only the first hop")
            st, j = s.post("/v1/tools/http", {"arguments": {
                "url": "http://127.0.0.1:%d/r?to=/json" % h.port}})
            eq((st, j["redirects"], j["json"]["hello"]), (200, 1, "world"))
        finally:
            s.stop()


@test
def slow_and_huge_responses():
    with Server() as h, scratch() as d:
        s = Serve("--policy", policy(d, h.port))
        try:
            st, j = s.post("/v1/tools/http", {"arguments": {
                "url": "http://127.0.0.1:%d/slow" % h.port, "timeout": 1}})
            eq((st, j["error"]["name"]), (200, "Timeout"), repr(j))
            st, j = s.post("/v1/tools/http", {"arguments": {"url": "http://127.0.0.1:%d/huge" % h.port}})
            eq((st, j["truncated"], j["bytes"], len(j["text"])), (200, True, 65536, 65536))
        finally:
            s.stop()


@test
def secrets_never_appear_in_results_messages_or_the_audit_log():
    with Server() as h, scratch() as d:
        audit = os.path.join(d, "audit.log")
        s = Serve("--policy", policy(d, h.port), "--audit", audit)
        try:
            st, j = s.post("/v1/tools/http", {"arguments": {
                "url": "http://127.0.0.1:%d/echo" % h.port, "headers": {"X-Mine": "1"}}})
            eq(st, 200, repr(j))
            check("Bearer " + SECRET in Handler.last and API_KEY in Handler.last,
                  "the server got the policy's headers: %r" % Handler.last)
            check("[REDACTED]" in j["text"] and "[REDACTED]" in j["headers"]["x-echo"], repr(j))
            no_secret("the result", json.dumps(j))
            # a message quoting a URL with the secret in it
            st, j = s.post("/v1/tools/http", {"arguments": {
                "url": "http://127.0.0.1:%d/r?to=http://169.254.169.254/%s" % (h.port, SECRET)}})
            eq(st, 403)
            no_secret("the message", json.dumps(j))
            # another host gets none of them
            st, j = s.post("/v1/tools/http", {"arguments": {"url": "http://localhost:%d/echo" % h.port}})
            eq(st, 200, repr(j))
            check(SECRET not in Handler.last, "sent to localhost: %r" % Handler.last)
        finally:
            s.stop()
        log = open(audit).read()
        check('"http"' in log, "audited: %r" % log[:500])
        no_secret("the audit log", log)
        no_secret("the server's log", s.log())


@test
def a_secret_cut_by_max_response_is_redacted():
    """The 64K cap falls inside the Authorization value the tool added:
    neither the secret nor any beginning of it comes back."""
    value = "Bearer " + SECRET
    with Server() as h, scratch() as d:
        s = Serve("--policy", policy(d, h.port))
        try:
            for at in range(1, len(value)):
                st, j = s.post("/v1/tools/http", {"arguments": {
                    "url": "http://127.0.0.1:%d/cut?at=%d" % (h.port, at)}})
                eq((st, j.get("truncated")), (200, True), repr(j)[:300])
                no_secret("a cut body (at=%d)" % at, j["text"])
                # what is left is the padding, and the mark where the cut was
                eq(j["text"], "x" * (65536 - at) + "[REDACTED]", "at=%d" % at)
        finally:
            s.stop()


@test
def messages_answer_no_guess_at_a_secret():
    """The caller's URL is quoted in messages.  A secret in it is redacted
    whole, before the quote is cut at 200 bytes; nothing is redacted for
    being like a secret's beginning, or each reply would tell whether a
    guess of the next byte was right (the review's oracle recovered 17
    bytes of a token that way)."""
    value = "Bearer " + SECRET
    with Server() as h, scratch() as d:
        s = Serve("--policy", policy(d, h.port))
        try:
            # the next byte of the secret, guessed: not a URL, so quoted
            guesses = ["Bearer " + SECRET[:k] + c for k in (0, 5) for c in "as3x"]
            st, j = s.post("/v1/tools/http", {"arguments": {"url": "|".join(guesses)}})
            eq(st, 400, repr(j)[:300])
            msg = j["error"]["message"]
            check("[REDACTED]" not in msg, "a guess was answered: %r" % msg[:400])
            for g in guesses:
                check(g in msg, "%r is not quoted as sent: %r" % (g, msg[:400]))
            # the whole secret across the 200th byte of the quote
            for pad in (190, 195, 199):
                url = "x" * pad + value
                st, j = s.post("/v1/tools/http", {"arguments": {"url": url}})
                msg = j["error"]["message"]
                no_secret("a quoted URL (pad %d)" % pad, msg)
                for k in range(4, len(value)):
                    check(value[:k] + "'" not in msg and not msg.endswith(value[:k]),
                          "%d bytes of the secret at the cut: %r" % (k, msg[-80:]))
        finally:
            s.stop()


def free_port():
    """A port free on 127.0.0.1 now (the server below must know its own
    port before it starts: its policy names it)."""
    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        return sk.getsockname()[1]


@test
def the_tool_never_reaches_its_own_server_nor_approves_its_own_call():
    """A keyless server on loopback whose http.hosts names its own address
    and port: the model cannot call the API through the tool, in any
    spelling of the address, and so cannot approve a call it made."""
    import sqlite3
    port = free_port()
    with scratch() as d:
        db = os.path.join(d, "a.db")
        c = sqlite3.connect(db)
        c.execute("CREATE TABLE t (v TEXT)")
        c.commit()
        c.close()
        pol = os.path.join(d, "p.ini")
        write(pol, "[default]\ntools = http, sql\napproval = sql\nsql.databases = a\n"
                   "http.hosts = 127.0.0.1:%d, localhost:%d private, [::ffff:127.0.0.1]:%d\n"
                   "[database a]\ndriver = sqlite\nconnection = %s\n" % (port, port, port, db))
        s = Serve("--policy", pol, listen="127.0.0.1:%d" % port)
        out = {}
        try:
            eq(s.port, port)
            held = threading.Thread(target=lambda: out.update(r=s.post("/v1/tools/sql", {
                "arguments": {"database": "a", "query": "SELECT 1"}})))
            held.start()
            pending = s.await_pending()
            aid = pending[0]["id"]
            for host in ("127.0.0.1", "localhost", "[::ffff:127.0.0.1]", "2130706433", "127.1"):
                for method, path, body in (("GET", "/v1/approvals?pending", None),
                                           ("POST", "/v1/approvals/" + aid, {"decision": "approve"})):
                    args = {"method": method, "url": "http://%s:%d%s" % (host, port, path)}
                    if body:
                        args["body"] = body
                    st, j = s.post("/v1/tools/http", {"arguments": args})
                    eq(st, 403, "%s %s: %r" % (method, args["url"], j))
                    check("own listening address" in j["error"]["message"], j)
            # still pending: a person decides
            st, j = s.request("GET", "/v1/approvals?pending")
            eq([a["id"] for a in j["approvals"] if a["state"] == "pending"], [aid], j)
            eq(s.post("/v1/approvals/" + aid, {"decision": "deny"})[0], 200)
            held.join(60)
            eq(out["r"][0], 403, out)
        finally:
            s.stop()


@test
def mcp_door_and_a_name_resolving_to_loopback():
    with Server() as h, scratch() as d:
        # localhost on another port: the 127.0.0.1 entry (its port only)
        # does not name that address
        pol = policy(d, h.port, hosts="127.0.0.1:%d, localhost:1" % h.port)
        p = subprocess.Popen([CODECELL, "mcp", "--policy", pol], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        def rpc(i, method, params):
            p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method,
                                      "params": params}) + "\n")
            p.stdin.flush()
            return json.loads(p.stdout.readline())

        try:
            rpc(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                  "clientInfo": {"name": "t", "version": "1"}})
            tools = rpc(2, "tools/list", {})["result"]["tools"]
            check("http" in [t["name"] for t in tools], repr(tools))
            r = rpc(3, "tools/call", {"name": "http", "arguments": {
                "url": "http://127.0.0.1:%d/echo" % h.port}})
            check(not r["result"].get("isError"), repr(r))
            no_secret("the MCP result", json.dumps(r))
            check("[REDACTED]" in json.dumps(r), repr(r))
            # localhost is listed, but not marked private: public addresses only
            before = Handler.count
            r = rpc(4, "tools/call", {"name": "http", "arguments": {
                "url": "http://localhost:1/json"}})
            text = json.dumps(r)
            check(("error" in r or r["result"].get("isError")) and "loopback" in text, text)
            eq(Handler.count, before)
        finally:
            p.stdin.close()
            p.wait(timeout=60)
            no_secret("the MCP server's stderr", p.stderr.read())


@test
def the_agent_is_offered_the_tool_and_never_sees_a_secret():
    with Server() as h, scratch() as d:
        call = tool_call(None, name="http", call_id="call_http",
                         raw_args=json.dumps({"url": "http://127.0.0.1:%d/echo" % h.port}))
        with StandIn([{"content": None, "tool_calls": [call], "finish_reason": "tool_calls"},
                      "Done."]) as s:
            e = dict(os.environ, OPENAI_BASE_URL=s.url, CODECELL_MODEL="standin")
            e.pop("OPENAI_API_KEY", None)
            audit = os.path.join(d, "audit.log")
            r = codecell("agent", "--policy", policy(d, h.port), "--audit", audit, "--json",
                         "what does the echo say?", env=e, timeout=120)
            eq(r.status, 0, r)
            names = [t["function"]["name"] for t in s.requests[0]["tools"]]
            check("http" in names, names)
            msg = s.requests[1]["messages"][-1]
            eq((msg["role"], msg["tool_call_id"]), ("tool", "call_http"))
            check("[REDACTED]" in msg["content"], msg)
            check("Bearer " + SECRET in Handler.last, "the server got the header")
            no_secret("what the model was sent", json.dumps(s.requests))
            no_secret("the agent's output", r.stdout + r.stderr)
            no_secret("the audit log", open(audit).read())


@test
def https_verifies_the_certificate():
    """A server with a certificate no CA signed: the tool refuses to talk
    to it (TLSError), so the host's headers never reach it."""
    import ssl
    with Server() as h, scratch() as d:
        key, crt = os.path.join(d, "k.pem"), os.path.join(d, "c.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", crt,
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-days", "1"], check=True, capture_output=True)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(crt, key)
        h.httpd.socket = ctx.wrap_socket(h.httpd.socket, server_side=True)
        s = Serve("--policy", policy(d, h.port))
        try:
            before = Handler.count
            st, j = s.post("/v1/tools/http", {"arguments": {"url": "https://127.0.0.1:%d/echo" % h.port}})
            eq((st, j["error"]["name"]), (200, "TLSError"), repr(j))
            check("certificate" in j["error"]["value"], repr(j))
            eq(Handler.count, before, "no request was sent")
        finally:
            s.stop()


NETNS = False


@test
def a_name_lookup_that_is_never_answered_ends_with_the_timeout():
    """A resolver that never answers (a UDP socket on 127.0.0.1:53 of this
    test's own network namespace, named by a resolv.conf bound over the
    host's in a mount namespace of codecell's own) with resolv.conf
    options that would wait 90 s: the http tool gives up at its
    `timeout`, the egress proxy at its 10 s connect timeout (504)."""
    check(NETNS, "this test needs a network namespace of its own (run as root)")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as hole, scratch() as d:
        hole.bind(("127.0.0.1", 53))  # in this test's own network namespace
        resolv = write(os.path.join(d, "resolv.conf"),
                       "nameserver 127.0.0.1\noptions timeout:30 attempts:3\n")
        pol = write(os.path.join(d, "p.ini"), "[default]\ntools = http\n"
                    "http.hosts = slow.example\negress = slow.example\n")

        def under_resolv(*args):
            return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                    'mount --bind "$0" /etc/resolv.conf && exec "$@"', resolv, CODECELL] + list(args)

        p = subprocess.Popen(under_resolv("mcp", "--policy", pol), stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            for i, (method, params) in enumerate((
                    ("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "t", "version": "1"}}),
                    ("tools/call", {"name": "http", "arguments": {
                        "url": "http://slow.example/", "timeout": 2}}))):
                p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method,
                                          "params": params}) + "\n")
                p.stdin.flush()
                ready = select.select([p.stdout], [], [], 60)[0]
                check(ready, "no answer to %s within 60 s" % method)
                r = json.loads(p.stdout.readline())
            text = json.dumps(r)
            check(r["result"].get("isError") or "ConnectionError" in text, text)
            check("slow.example" in text and "timed out" in text, text)
        finally:
            p.stdin.close()
            p.wait(timeout=60)
        code = ("import urllib.request, urllib.error\n"
                "try:\n"
                "    urllib.request.urlopen('http://slow.example/', timeout=100)\n"
                "except urllib.error.HTTPError as e:\n"
                "    print(e.code, e.reason)\n")
        r = subprocess.run(under_resolv("run", "--policy", pol, "--net", "allowlist", "-"),
                           input=code, capture_output=True, text=True, timeout=60)
        eq(r.returncode, 0, r)
        check(r.stdout.startswith("504 ") and "timed out" in r.stdout, r)


if __name__ == "__main__":
    NETNS = own_netns()
    main()
