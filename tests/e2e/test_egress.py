"""The allowlist network: sandboxed code reaches the hosts of the policy's
`egress` list through codecell's proxy at 127.0.0.1:3128 inside, and
nothing else.

Every target is a server this test starts on the host's loopback (port 0),
named explicitly in the policy as 127.0.0.1:PORT.  Inside the sandbox
127.0.0.1 is the sandbox's own loopback, so the code clears NO_PROXY to
send 127.0.0.1 through the proxy.  Addresses refused before any connect
(192.0.2.1, TEST-NET-1, has no route inside; names the list lacks are
refused by the proxy) are never reached."""
import base64
import hashlib
import http.server
import io
import json
import os
import shutil
import socketserver
import sys
import threading
import time
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import JsonShell, Serve, check, codecell, eq, main, scratch, test, write  # noqa: E402

NOPROXY = ["--env", "NO_PROXY=", "--env", "no_proxy="]


def make_wheel():
    """A tiny pure-Python wheel: tinypkg 0.1, `tinypkg.VALUE == 42`."""
    files = {
        "tinypkg/__init__.py": b"VALUE = 42\n",
        "tinypkg-0.1.dist-info/METADATA": b"Metadata-Version: 2.1\nName: tinypkg\nVersion: 0.1\n",
        "tinypkg-0.1.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: cctest\n"
                                       b"Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (name, digest, len(data)))
    record.append("tinypkg-0.1.dist-info/RECORD,,")
    files["tinypkg-0.1.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return out.getvalue()


WHEEL = make_wheel()
BIG = bytes(range(256)) * 8192  # 2 MiB: more than the proxy buffers, both ways
WHEEL_NAME = "tinypkg-0.1-py3-none-any.whl"


class Origin(http.server.BaseHTTPRequestHandler):
    """The allowed host: /hello, a PEP 503 index at /simple/, the wheel."""
    seen = []  # (method, path, headers) of every request

    def log_message(self, *args):
        pass

    def reply(self, body, ctype="text/plain"):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self):
        Origin.seen.append((self.command, self.path, dict(self.headers)))
        if self.path == "/hello":
            return self.reply(b"hello from the origin")
        if self.path == "/headers":
            return self.reply(json.dumps(dict(self.headers)).encode(), "application/json")
        if self.path in ("/simple/", "/simple/tinypkg/"):
            sha = hashlib.sha256(WHEEL).hexdigest()
            page = '<html><body><a href="/files/%s#sha256=%s">%s</a></body></html>' % (
                WHEEL_NAME, sha, WHEEL_NAME)
            return self.reply(page.encode(), "text/html")
        if self.path == "/files/" + WHEEL_NAME:
            return self.reply(WHEEL, "application/octet-stream")
        if self.path == "/big":
            return self.reply(BIG, "application/octet-stream")
        self.send_error(404)

    do_HEAD = do_GET

    def do_POST(self):
        Origin.seen.append((self.command, self.path, dict(self.headers)))
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.reply(hashlib.sha256(body).hexdigest().encode())


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


ORIGIN = Server(("127.0.0.1", 0), Origin)
PORT = ORIGIN.server_address[1]
threading.Thread(target=ORIGIN.serve_forever, daemon=True).start()


def policy(d, egress, extra=""):
    text = "[default]\n%s" % extra
    if egress is not None:
        text += "egress = %s\n" % egress
    return write(os.path.join(d, "policy.ini"), text)


def run(d, code, *args, lang="python", egress="127.0.0.1:%d" % PORT, net="allowlist", extra=""):
    p = policy(d, egress, extra)
    src = write(os.path.join(d, "main.py" if lang == "python" else "main.sh"), code)
    return codecell("run", "--policy", p, "--net", net, "--lang", lang, *args, src, timeout=120)


# A client of the proxy on raw sockets: what a program would send, and the
# status line it gets back.
RAW = r'''
import socket, sys
def ask(head):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=30)
    s.sendall(head.encode())
    data = b""
    while b"\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    s.close()
    return data.split(b"\r\n")[0].decode()
'''


@test
def allowed_host_through_the_proxy_python():
    code = (
        "import os, urllib.request\n"
        "print(os.environ['HTTPS_PROXY'], os.environ['HTTP_PROXY'], os.environ['ALL_PROXY'])\n"
        "print(urllib.request.urlopen('http://127.0.0.1:%(p)d/hello', timeout=30).read().decode())\n"
        "import hashlib\n"
        "big = urllib.request.urlopen('http://127.0.0.1:%(p)d/big', timeout=60).read()\n"
        "print(len(big), hashlib.sha256(big).hexdigest())\n"
        "up = urllib.request.urlopen('http://127.0.0.1:%(p)d/up', data=big, timeout=60).read()\n"
        "print(up.decode())\n" % {"p": PORT})
    with scratch() as d:
        r = run(d, code, *NOPROXY)
    eq(r.status, 0, r)
    lines = r.stdout.splitlines()
    eq(lines[0], "http://127.0.0.1:3128 " * 2 + "http://127.0.0.1:3128", r)
    eq(lines[1], "hello from the origin", r)
    sha = hashlib.sha256(BIG).hexdigest()
    eq(lines[2:], ["%d %s" % (len(BIG), sha), sha], r)


@test
def connect_tunnel_python_and_curl():
    """CONNECT (what HTTPS uses) to the allowed host, by Python's
    http.client and by curl --proxytunnel in a bash one-shot run."""
    code = (
        "import http.client\n"
        "c = http.client.HTTPConnection('127.0.0.1', 3128, timeout=30)\n"
        "c.set_tunnel('127.0.0.1', %d)\n"
        "c.request('GET', '/hello')\n"
        "print('tunnel:', c.getresponse().read().decode())\n" % PORT)
    with scratch() as d:
        r = run(d, code)
    eq(r.status, 0, r)
    check("tunnel: hello from the origin" in r.stdout, r)
    check(shutil.which("curl"), "curl is not installed: the bash half of this test needs it")
    with scratch() as d:
        r = run(d, "curl -sS --noproxy '' --proxytunnel http://127.0.0.1:%d/hello\n" % PORT,
                lang="bash")
    eq(r.status, 0, r)
    eq(r.stdout, "hello from the origin", r)


@test
def host_not_on_the_list_is_refused_with_a_reason():
    code = (
        "import urllib.request, urllib.error\n"
        "for url in ('http://not-listed.example/', 'https://not-listed.example/'):\n"
        "    try:\n"
        "        urllib.request.urlopen(url, timeout=30)\n"
        "        print('reached', url)\n"
        "    except urllib.error.HTTPError as e:\n"
        "        print('http', e.code, e.read().decode().strip())\n"
        "    except urllib.error.URLError as e:\n"
        "        print('url', e.reason)\n")
    n = len(Origin.seen)
    with scratch() as d:
        r = run(d, code)
    eq(r.status, 0, r)
    lines = r.stdout.splitlines()
    eq(len(lines), 2, r)
    check(lines[0].startswith("http 403 codecell egress: 'not-listed.example' (port 80)"), r)
    check("Tunnel connection failed: 403 codecell egress: 'not-listed.example' (port 443)"
          in lines[1], r)
    check("not" in lines[0] and "allowed" in lines[0], r)
    eq(len(Origin.seen), n, "the origin saw a request")


@test
def direct_connections_have_no_route():
    """Without the proxy: no route (at once), and 127.0.0.1 is the
    sandbox's own loopback, not the host's."""
    code = (
        "import socket, errno\n"
        "for addr in (('192.0.2.1', 80), ('127.0.0.1', %d)):\n"
        "    try:\n"
        "        socket.create_connection(addr, timeout=30)\n"
        "        print('connected', addr)\n"
        "    except OSError as e:\n"
        "        print(errno.errorcode[e.errno])\n" % PORT)
    with scratch() as d:
        r = run(d, code)
    eq(r.status, 0, r)
    eq(r.stdout.split(), ["ENETUNREACH", "ECONNREFUSED"], r)


@test
def address_tricks_are_refused():
    """A name on the list that resolves to loopback, and loopback spelled
    as decimal, octal, hex, short and IPv4-mapped IPv6 while the list
    names only a public host: all refused, none reaches the origin."""
    code = RAW + (
        "for target in ('localhost:%(p)d', '2130706433:%(p)d', '0177.0.0.1:%(p)d',\n"
        "               '0x7f.0.0.1:%(p)d', '127.1:%(p)d', '[::ffff:127.0.0.1]:%(p)d',\n"
        "               '[::1]:%(p)d', '0.0.0.0:%(p)d', '169.254.169.254:80'):\n"
        "    print(target, '|', ask('CONNECT %%s HTTP/1.1\\r\\nHost: %%s\\r\\n\\r\\n' %% (target, target)))\n"
        "    print(target, '|', ask('GET http://%%s/hello HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n' %% target))\n"
        % {"p": PORT})
    n = len(Origin.seen)
    with scratch() as d:
        r = run(d, code, egress="pypi.org, localhost:%d" % PORT)
    eq(r.status, 0, r)
    lines = r.stdout.splitlines()
    eq(len(lines), 18, r)
    for line in lines:
        target, status = line.split(" | ")
        check(status.split()[1] in ("403", "400"), "not refused: %r" % line)
        check("codecell egress:" in status, line)
    check("loopback" in lines[0], "the loopback class is named: %r" % lines[0])
    eq(len(Origin.seen), n, "the origin saw a request")


@test
def proxy_requests_that_would_smuggle_or_mislead():
    """Two body lengths, folded headers and bare LFs are refused; the Host
    the origin sees is the one checked, whatever the client wrote; the
    codecell server's own port is not on the list."""
    code = RAW + (
        "print(ask('GET http://127.0.0.1:%(p)d/hello HTTP/1.1\\r\\nContent-Length: 1\\r\\n"
        "Transfer-Encoding: chunked\\r\\n\\r\\n0\\r\\n\\r\\n'))\n"
        "print(ask('GET http://127.0.0.1:%(p)d/hello HTTP/1.1\\r\\nX: a\\r\\n folded\\r\\n\\r\\n'))\n"
        "print(ask('GET http://127.0.0.1:%(p)d/hello HTTP/1.1\\nHost: a\\n\\n'))\n"
        "print(ask('GET http://user@127.0.0.1:%(p)d/hello HTTP/1.1\\r\\n\\r\\n'))\n"
        "print(ask('CONNECT 127.0.0.1:3128 HTTP/1.1\\r\\n\\r\\n'))\n"
        "import urllib.request\n"
        "req = urllib.request.Request('http://127.0.0.1:%(p)d/headers',\n"
        "                             headers={'Host': 'evil.example', 'Proxy-Authorization': 'x'})\n"
        "print(urllib.request.urlopen(req, timeout=30).read().decode())\n" % {"p": PORT})
    with scratch() as d:
        r = run(d, code, *NOPROXY)
    eq(r.status, 0, r)
    lines = r.stdout.splitlines()
    eq(len(lines), 6, r)
    for line in lines[:4]:
        check(line.startswith("HTTP/1.1 400 codecell egress:"), line)
    check(lines[4].startswith("HTTP/1.1 403 codecell egress:"), lines[4])
    seen = json.loads(lines[5])
    eq(seen.get("Host"), "127.0.0.1:%d" % PORT, seen)
    check(not any(k.lower().startswith("proxy-") for k in seen), seen)
    eq(seen.get("Connection"), "close", seen)


@test
def pip_installs_from_an_index_on_the_list():
    code = (
        "set -e\n"
        "python3 -m pip --disable-pip-version-check --no-cache-dir download -q "
        "--index-url http://127.0.0.1:%(p)d/simple/ -d /tmp/dl tinypkg\n"
        "ls /tmp/dl\n"
        "python3 -m pip --disable-pip-version-check --no-cache-dir install -q --no-deps "
        "--target /tmp/site --index-url http://127.0.0.1:%(p)d/simple/ tinypkg\n"
        "PYTHONPATH=/tmp/site python3 -c 'import tinypkg; print(tinypkg.VALUE)'\n" % {"p": PORT})
    with scratch() as d:
        r = run(d, code, *NOPROXY, "--timeout", "2m", lang="bash")
    eq(r.status, 0, r)
    eq(r.stdout.split(), [WHEEL_NAME, "42"], r)


@test
def policy_refuses_allowlist_without_hosts_or_network():
    with scratch() as d:
        r = run(d, "print(1)\n", egress=None)
        check(r.status != 0 and "egress" in r.stderr and "rule 'egress'" in r.stderr, r)
        r = run(d, "print(1)\n", extra="network = off\n")
        check(r.status != 0 and "rule 'network'" in r.stderr, r)
        r = run(d, "print(1)\n", egress="bad host name!")
        check(r.status != 0 and ":2: egress:" in r.stderr, r)
        r = run(d, "print(1)\n", net="everywhere")
        check(r.status != 0 and "none, loopback or allowlist" in r.stderr, r)


@test
def an_ordinary_user_gets_the_proxy_too():
    """codecell run and a session (with a restart) as uid 1000: the
    sandbox's init makes the proxy's socket in its own network namespace,
    which an ordinary user's codecell could not enter.  The list still
    holds: a host not on it is refused."""
    refused = ("import urllib.request, urllib.error, os\n"
               "os.environ['NO_PROXY'] = os.environ['no_proxy'] = ''\n"
               "try:\n"
               "    urllib.request.urlopen('http://127.0.0.2:%d/hello', timeout=30)\n"
               "except urllib.error.HTTPError as e:\n"
               "    print(e.code)\n" % PORT)
    with scratch() as d:
        p = policy(d, "127.0.0.1:%d" % PORT)
        r = codecell("run", "--policy", p, "--net", "allowlist", "-", timeout=120, user=1000,
                     stdin=FETCH.replace("urllib.request.urlopen", "print(urllib.request.urlopen")
                     .replace(".decode()\n", ".decode())\n"))
        eq((r.status, r.stdout), (0, "hello from the origin\n"), r)
        sh = JsonShell("--policy", p, "--net", "allowlist", user=1000)
        setup = "import urllib.request, os; os.environ['NO_PROXY'] = os.environ['no_proxy'] = ''"
        fetch = ("print(urllib.request.urlopen('http://127.0.0.1:%d/hello', timeout=30)"
                 ".read().decode())" % PORT)
        try:
            for stmt in (setup, fetch, "os.kill(os.getpid(), 9)", setup, fetch):
                j = sh.run(stmt)
                if stmt == fetch:
                    eq((j["status"], j["logs"]["stdout"]), ("ok", "hello from the origin\n"), j)
                elif stmt.startswith("os.kill"):
                    check(j["restarted"], j)  # a new kernel, with a new proxy
            j = sh.run("exec(%r)" % refused)
            eq((j["status"], j["logs"]["stdout"]), ("ok", "403\n"), j)
        finally:
            eq(sh.close(), 0, sh.stderr)


@test
def each_connection_is_in_the_audit_log():
    """codecell run --audit: one record per connection the proxy decided,
    under the run's request id, the allowed one with the address it
    reached, the refused one with the rule and the reason."""
    code = ("import urllib.request, urllib.error\n"
            "print(urllib.request.urlopen('http://127.0.0.1:%(p)d/hello', timeout=30).status)\n"
            "try:\n"
            "    urllib.request.urlopen('http://evil.example/', timeout=30)\n"
            "except urllib.error.HTTPError as e:\n"
            "    print(e.code)\n" % {"p": PORT})
    with scratch() as d:
        log = os.path.join(d, "audit.log")
        r = run(d, code, *NOPROXY, "--audit", log)
        eq((r.status, r.stdout), (0, "200\n403\n"), r)
        with open(log) as f:
            recs = [json.loads(line) for line in f]
    eq([x["tool"] for x in recs], ["run", "egress", "egress"], recs)
    eq(len({x["request_id"] for x in recs}), 1, recs)
    ok, refused = recs[1], recs[2]
    eq((ok["decision"], ok["status"]), ("allowed", "ok"), ok)
    eq({k: ok["arguments"].get(k) for k in ("method", "host", "port", "address", "proxy_status")},
       {"method": "GET", "host": "127.0.0.1", "port": PORT, "address": "127.0.0.1",
        "proxy_status": 200}, ok)
    eq((refused["decision"], refused["rule"], refused["arguments"]["host"],
        refused["arguments"]["proxy_status"]), ("rejected", "egress", "evil.example", 403), refused)
    check("not one of the allowed hosts" in refused["arguments"]["why"], refused)


@test
def none_and_loopback_are_unchanged():
    """No proxy, no variables: loopback has lo only (3128 is nobody's),
    none has not even lo."""
    code = (
        "import os, socket, errno\n"
        "print(sorted(k for k in os.environ if 'proxy' in k.lower()))\n"
        "try:\n"
        "    socket.create_connection(('127.0.0.1', 3128), timeout=30)\n"
        "    print('connected')\n"
        "except OSError as e:\n"
        "    print(errno.errorcode[e.errno])\n")
    for net, want in (("loopback", "ECONNREFUSED"), ("none", "ENETUNREACH")):
        with scratch() as d:
            r = run(d, code, net=net)
        eq(r.status, 0, r)
        eq(r.stdout.split("\n")[:2], ["[]", want], (net, r))


def egress_threads(pid):
    """The proxy threads of process pid, by their names."""
    names = []
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, t)) as f:
                names.append(f.read().strip())
        except OSError:
            pass
    return sorted(n for n in names if n.startswith("egress-"))


@test
def connections_are_capped_and_the_proxy_ends_with_its_session():
    """32 connections at once per sandbox: the 33rd gets 503 at once.
    Closing the session ends the proxy's threads, a tunnel still open
    included."""
    with scratch() as d:
        p = policy(d, "127.0.0.1:%d" % PORT)
        s = Serve("--pool", "0", "--policy", p)
        try:
            eq(egress_threads(s.pid), [])
            st, j = s.request("POST", "/v1/sessions", {"network": "allowlist"})
            eq(st, 201, j)
            sid = j["id"]
            code = RAW + (
                "held = [socket.create_connection(('127.0.0.1', 3128), timeout=30) for _ in range(32)]\n"
                "print(ask('CONNECT 127.0.0.1:%d HTTP/1.1\\r\\n\\r\\n'))\n"
                "for h in held: h.close()\n"
                "import time\n"
                # the proxy's threads free the slots of the closed
                # connections as they see them close: a few tries
                "for _ in range(100):\n"
                "    tunnel = socket.create_connection(('127.0.0.1', 3128), timeout=30)\n"
                "    tunnel.sendall(b'CONNECT 127.0.0.1:%d HTTP/1.1\\r\\n\\r\\n')\n"
                "    line = tunnel.recv(100).split(b'\\r\\n')[0].decode()\n"
                "    if ' 503 ' not in line:\n"
                "        break\n"
                "    tunnel.close()\n"
                "    time.sleep(0.1)\n"
                "print(line)\n" % (PORT, PORT))
            st, j = s.request("POST", "/v1/sessions/%s/execute" % sid, {"code": code})
            eq((st, j["status"]), (200, "ok"), j)
            eq(j["logs"]["stdout"].splitlines(),
               ["HTTP/1.1 503 codecell egress: too many connections at once from this sandbox",
                "HTTP/1.1 200 Connection established"], j)
            check("egress-accept" in egress_threads(s.pid), egress_threads(s.pid))
            st, j = s.request("DELETE", "/v1/sessions/%s" % sid)
            eq(st, 200, j)
            deadline = time.monotonic() + 60
            while egress_threads(s.pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            eq(egress_threads(s.pid), [])
        finally:
            s.stop()


FETCH = ("import urllib.request, os\n"
         "os.environ['NO_PROXY'] = os.environ['no_proxy'] = ''\n"
         "urllib.request.urlopen('http://127.0.0.1:%d/hello', timeout=30).read().decode()\n" % PORT)


@test
def sessions_pooled_and_cold_over_the_api():
    """A pooled Python session takes a kernel made with lo only and gets
    its proxy then; a restart and a fork get new ones; a bash session (never
    pooled) starts cold with it; a loopback session beside them has no
    proxy; a one-shot /v1/execute gets it too."""
    with scratch() as d:
        p = policy(d, "127.0.0.1:%d" % PORT)
        s = Serve("--pool", "1", "--policy", p)
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                st, h = s.request("GET", "/healthz")
                if h.get("pool_ready", 0) >= 1:
                    break
                time.sleep(0.2)
            st, j = s.request("POST", "/v1/sessions", {"network": "allowlist"})
            eq(st, 201, j)
            eq(j["pooled"], True, j)
            sid = j["id"]
            eq(s.execute(sid, FETCH), "'hello from the origin'")
            st, j = s.request("POST", "/v1/sessions/%s/restart" % sid)
            eq(st, 200, j)
            eq(s.execute(sid, FETCH), "'hello from the origin'")
            st, j = s.request("POST", "/v1/sessions/%s/fork" % sid)
            eq(st, 201, j)
            eq(s.execute(j["id"], FETCH), "'hello from the origin'")

            st, j = s.request("POST", "/v1/sessions", {"network": "allowlist", "language": "bash"})
            eq(st, 201, j)
            st, j = s.request("POST", "/v1/sessions/%s/execute" % j["id"],
                              {"code": "curl -sS --noproxy '' http://127.0.0.1:%d/hello" % PORT})
            eq((st, j["status"], j["logs"]["stdout"]), (200, "ok", "hello from the origin"), j)

            st, j = s.request("POST", "/v1/sessions", {"network": "loopback"})
            eq(st, 201, j)
            st, j = s.request("POST", "/v1/sessions/%s/execute" % j["id"],
                              {"code": "import os; print(os.environ.get('HTTPS_PROXY'))"})
            eq(j["logs"]["stdout"], "None\n", j)

            st, j = s.request("POST", "/v1/execute", {"network": "allowlist", "code": FETCH.replace(
                "urllib.request.urlopen", "print(urllib.request.urlopen").replace(
                    ".decode()\n", ".decode())\n")})
            eq((st, j["status"], j["logs"]["stdout"]), (200, "ok", "hello from the origin\n"), j)
        finally:
            s.stop()


@test
def the_servers_cells_and_runs_record_their_connections():
    """codecell serve --audit: a session's cell (pooled: its proxy came
    when it was taken) and a one-shot /v1/execute each write a record per
    connection, under the call's request id."""
    with scratch() as d:
        p, log = policy(d, "127.0.0.1:%d" % PORT), os.path.join(d, "audit.log")
        s = Serve("--pool", "1", "--policy", p, "--audit", log)
        try:
            st, j = s.request("POST", "/v1/sessions", {"network": "allowlist"})
            eq(st, 201, j)
            eq(s.execute(j["id"], FETCH), "'hello from the origin'")
            st, j = s.request("POST", "/v1/execute", {"network": "allowlist", "code": FETCH})
            eq((st, j["status"]), (200, "ok"), j)
        finally:
            s.stop()
        with open(log) as f:
            recs = [json.loads(line) for line in f]
    for tool in ("session_exec", "run"):
        call = [x for x in recs if x["tool"] == tool]
        eq(len(call), 1, recs)
        conns = [x for x in recs if x["tool"] == "egress" and x["request_id"] == call[0]["request_id"]]
        eq([(x["arguments"]["host"], x["arguments"]["port"], x["decision"]) for x in conns],
           [("127.0.0.1", PORT, "allowed")], recs)
        eq(conns[0]["session"], call[0]["session"], conns)



@test
def the_proxy_never_reaches_its_own_server():
    """A keyless server whose egress list names its own address and port:
    sandboxed code cannot reach the API through the proxy (to approve a
    call, say), in a session or a one-shot run; another port still
    passes."""
    import socket
    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        port = sk.getsockname()[1]
    code = ("import urllib.request, urllib.error, os\n"
            "os.environ['NO_PROXY'] = os.environ['no_proxy'] = ''\n"
            "for url in ('http://127.0.0.1:%(s)d/v1/approvals?pending', "
            "'http://localhost:%(s)d/healthz', 'http://127.0.0.1:%(o)d/hello'):\n"
            "    try:\n"
            "        print(urllib.request.urlopen(url, timeout=30).read().decode()[:40])\n"
            "    except urllib.error.HTTPError as e:\n"
            "        print(e.code, e.read().decode().strip())\n" % {"s": port, "o": PORT})
    with scratch() as d:
        p = policy(d, "127.0.0.1:%d, localhost:%d private, 127.0.0.1:%d" % (port, port, PORT))
        s = Serve("--pool", "0", "--policy", p, listen="127.0.0.1:%d" % port)
        try:
            eq(s.port, port)
            st, j = s.request("POST", "/v1/execute", {"network": "allowlist", "code": code})
            eq((st, j["status"]), (200, "ok"), j)
            lines = j["logs"]["stdout"].splitlines()
            for line in lines[:2]:
                check(line.startswith("403 codecell egress:") and "own listening address" in line,
                      lines)
            eq(lines[2], "hello from the origin", lines)
        finally:
            s.stop()


# A program left running after its cell: it waits for 'go' (a file the
# test uploads, which runs no cell), fetches, then says 'done'.
LEFT_RUNNING = ("import subprocess, sys\n"
                "subprocess.Popen([sys.executable, '-c', %r], start_new_session=True)\n" % (
                    "import os, time\n"
                    "while not os.path.exists('go'):\n"
                    "    time.sleep(0.05)\n" + FETCH +
                    "open('done', 'w').close()\n"
                    "time.sleep(600)\n"))


@test
def connections_after_the_last_cell_are_recorded_when_the_session_ends():
    """A background process's connection made after the session's last
    cell is recorded when the session ends (deleted, or at shutdown),
    under the session and its client, not lost with the sandbox."""
    with scratch() as d:
        p, log = policy(d, "127.0.0.1:%d" % PORT), os.path.join(d, "audit.log")
        s = Serve("--pool", "1", "--policy", p, "--audit", log)
        sids = []
        try:
            for end in ("delete", "shutdown"):
                st, j = s.request("POST", "/v1/sessions", {"network": "allowlist"})
                eq(st, 201, j)
                sid = j["id"]
                sids.append(sid)
                s.execute(sid, LEFT_RUNNING)
                check(s.request("PUT", "/v1/sessions/%s/files/go" % sid, b"")[0] in (200, 201))
                deadline = time.monotonic() + 60
                while s.request("GET", "/v1/sessions/%s/files/done" % sid)[0] != 200:
                    check(time.monotonic() < deadline, "the background fetch never ended")
                    time.sleep(0.05)
                if end == "delete":
                    eq(s.request("DELETE", "/v1/sessions/" + sid)[0], 200)
        finally:
            eq(s.stop(), 0)
        with open(log) as f:
            recs = [json.loads(line) for line in f]
    for sid in sids:
        conns = [x for x in recs if x["tool"] == "egress" and x["session"] == sid]
        eq([(x["arguments"]["host"], x["arguments"]["port"], x["decision"], x["client"])
            for x in conns], [("127.0.0.1", PORT, "allowed", "default")], recs)
        cells = [x for x in recs if x["tool"] == "session_exec" and x["session"] == sid]
        check(conns[0]["request_id"] != cells[0]["request_id"], "recorded with the cell")


main()
