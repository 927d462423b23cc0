"""Uploads to `codecell serve` (PUT /v1/sessions/{id}/files/{path}) are
streamed into the workspace as they arrive, never held whole in the
server's memory; an upload that does not complete leaves nothing behind."""
import hashlib
import json
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import Serve, check, eq, main, proc_status, test  # noqa: E402

MiB = 1 << 20
# libmicrohttpd's per-connection memory (MHD_OPTION_CONNECTION_MEMORY_LIMIT
# in src/http/server.c): the buffer each chunk of a body passes through
CONNECTION_BUFFER = 128 << 10
TEMP_PREFIX = ".codecell-upload-"


def chunk(i, k):
    """The k-th MiB of upload i: distinct for every upload and offset."""
    head = b"upload %d MiB %d " % (i, k)
    return (head + bytes((i * 7 + k + j) & 0xFF for j in range(256)) * 4096)[:MiB]


class Put:
    """A PUT sent by hand over a socket, so that the test decides when
    each part of the body goes out, or that the rest never does."""

    def __init__(self, srv, path, length, chunked=False):
        self.s = socket.create_connection(("127.0.0.1", srv.port), timeout=120)
        framing = ("Transfer-Encoding: chunked" if chunked
                   else "Content-Length: %d" % length)
        self.chunked = chunked
        self.s.sendall(("PUT %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%s\r\n"
                        "Content-Type: application/octet-stream\r\nConnection: close\r\n\r\n"
                        % (path, srv.port, framing)).encode())

    def send(self, data):
        if self.chunked:
            data = b"%x\r\n%s\r\n" % (len(data), data)
        self.s.sendall(data)

    def finish(self):
        """Send the end of a chunked body and read the answer: (status, JSON)."""
        if self.chunked:
            self.s.sendall(b"0\r\n\r\n")
        raw = b""
        while True:
            try:
                got = self.s.recv(65536)
            except ConnectionResetError:
                break
            if not got:
                break
            raw += got
        self.s.close()
        head, _, body = raw.partition(b"\r\n\r\n")
        check(head.startswith(b"HTTP/1.1 "), "no HTTP answer: %r" % raw[:200])
        return int(head.split()[1]), json.loads(body) if body else None

    def abandon(self):
        """The client goes away in the middle of the body."""
        self.s.close()


def listing(srv, sid, path=""):
    st, j = srv.request("GET", "/v1/sessions/%s/files/%s" % (sid, path))
    eq(st, 200, "listing: %r" % (j,))
    return {e["name"]: e for e in j["entries"]}


def temps(srv, sid, path=""):
    return {n: e["size"] for n, e in listing(srv, sid, path).items() if n.startswith(TEMP_PREFIX)}


def wait_for(what, cond, deadline_s=60):
    """Wait until cond() is true; the deadline only stops a test that
    would otherwise hang (it is no performance bound)."""
    end = time.monotonic() + deadline_s
    while True:
        v = cond()
        if v:
            return v
        check(time.monotonic() < end, "never happened: %s" % what)
        time.sleep(0.05)


def ready_session(srv, **body):
    sid = srv.session(**body)
    srv.execute(sid, "x = 1")  # the kernel (and its workspace) is up
    return sid


@test
def concurrent_uploads_go_to_the_workspace_not_to_server_memory():
    """Eight 48 MiB uploads in flight at once.  Held in memory they added
    some 480 MiB to the server's RSS; streamed, each costs its connection's
    buffer and thread, whatever the size of the file."""
    n, size_mib = 8, 48
    srv = Serve("--max-sessions", "4")
    try:
        sid = ready_session(srv, limits={"workspace_size": "%dM" % (n * size_mib + 64)})
        rss_before = proc_status(srv.pid, "VmRSS")
        half = threading.Barrier(n)
        answers, digests = [None] * n, [None] * n

        def upload(i):
            h = hashlib.sha256()
            p = Put(srv, "/v1/sessions/%s/files/up/f%d.bin" % (sid, i), size_mib * MiB)
            for k in range(size_mib):
                if k == size_mib // 2:
                    # every upload is half sent before any completes
                    half.wait(timeout=120)
                c = chunk(i, k)
                h.update(c)
                p.send(c)
            answers[i] = p.finish()
            digests[i] = h.hexdigest()

        threads = [threading.Thread(target=upload, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        growth = proc_status(srv.pid, "VmHWM") - rss_before
        for i in range(n):
            eq(answers[i], (201, {"path": "up/f%d.bin" % i, "size": size_mib * MiB,
                                  "replaced": False}), "upload %d" % i)
        got = srv.execute(sid, "import hashlib\n[hashlib.sha256(open('up/f%d.bin' % i, 'rb')"
                               ".read()).hexdigest() for i in range(" + str(n) + ")]")
        eq(got, repr(digests), "what arrived is what was sent")
        eq(temps(srv, sid, "up"), {}, "no temporary file left")
        # per upload in flight: its connection's buffer, and 1 MiB for its
        # thread (stack pages, malloc arena); 16 MiB for the rest of the
        # server.  One upload held whole would be 48 MiB alone.
        bound = n * (CONNECTION_BUFFER + MiB) + 16 * MiB
        print("# server RSS grew by %.1f MiB for %d x %d MiB uploads (bound %.1f MiB)"
              % (growth / MiB, n, size_mib, bound / MiB))
        check(growth < bound, "the server's peak RSS grew by %.1f MiB (bound %.1f MiB)"
              % (growth / MiB, bound / MiB))
    finally:
        srv.stop()


@test
def interrupted_upload_leaves_no_partial_file_and_the_server_serves_on():
    srv = Serve()
    try:
        sid = ready_session(srv)
        base = "/v1/sessions/%s/files/" % sid
        p = Put(srv, base + "part.bin", 10 * MiB)
        for k in range(4):
            p.send(chunk(0, k))
        # streamed: what came so far is already in the workspace, under a
        # temporary name beside the target
        wait_for("4 MiB of the upload in a temporary file",
                 lambda: any(s >= 4 * MiB for s in temps(srv, sid).values()))
        check("part.bin" not in listing(srv, sid), "the target appears only when complete")
        p.abandon()
        wait_for("the temporary file removed", lambda: not temps(srv, sid))
        check("part.bin" not in listing(srv, sid), "no partial file under the target's name")
        # the server and the session go on
        st, j = srv.request("GET", "/healthz")
        eq((st, j["status"]), (200, "ok"))
        st, j = srv.request("PUT", base + "part.bin", body=b"whole")
        eq((st, j), (201, {"path": "part.bin", "size": 5, "replaced": False}))
        eq(srv.execute(sid, "open('part.bin').read(), x"), "('whole', 1)")
    finally:
        srv.stop()


@test
def chunked_uploads_are_streamed_and_capped():
    srv = Serve()
    try:
        sid = ready_session(srv, limits={"workspace_size": "200M"})
        base = "/v1/sessions/%s/files/" % sid
        p = Put(srv, base + "c.bin", 0, chunked=True)
        for k in range(3):
            p.send(chunk(1, k))
        eq(p.finish(), (201, {"path": "c.bin", "size": 3 * MiB, "replaced": False}))
        # no Content-Length to refuse up front: the cap (64 MiB) applies as
        # the body arrives, and what was written is removed
        p = Put(srv, base + "huge.bin", 0, chunked=True)
        for k in range(66):
            p.send(chunk(2, k))
        st, j = p.finish()
        eq((st, j["error"]["code"]), (413, "body_too_large"), j)
        names = listing(srv, sid)
        check("huge.bin" not in names and not temps(srv, sid), names)
        eq(srv.execute(sid, "import os; os.path.getsize('c.bin')"), str(3 * MiB))
    finally:
        srv.stop()


@test
def an_upload_that_fills_the_workspace_is_refused_and_removed():
    srv = Serve()
    try:
        sid = ready_session(srv, limits={"workspace_size": "2M"})
        base = "/v1/sessions/%s/files/" % sid
        p = Put(srv, base + "big.bin", 4 * MiB)
        for k in range(4):
            p.send(chunk(3, k))
        st, j = p.finish()
        eq((st, j["error"]["code"]), (507, "workspace_full"), j)
        check("limits.workspace_size" in j["error"]["message"], j)
        names = listing(srv, sid)
        check("big.bin" not in names and not temps(srv, sid), names)
        st, j = srv.request("PUT", base + "small.txt", body=b"fits")
        eq(st, 201, j)
    finally:
        srv.stop()


@test
def a_restart_during_an_upload_refuses_it_and_carries_no_partial_file():
    srv = Serve()
    try:
        sid = ready_session(srv)
        base = "/v1/sessions/%s/files/" % sid
        st, j = srv.request("PUT", base + "kept.txt", body=b"kept")
        eq(st, 201, j)
        p = Put(srv, base + "during.bin", 3 * MiB)
        p.send(chunk(4, 0))
        wait_for("the upload under way", lambda: temps(srv, sid))
        st, j = srv.request("POST", "/v1/sessions/%s/restart" % sid)
        eq(st, 200, j)
        p.send(chunk(4, 1))
        p.send(chunk(4, 2))
        st, j = p.finish()
        eq((st, j["error"]["code"]), (409, "session_restarting"), j)
        names = listing(srv, sid)
        check("kept.txt" in names, "files carried over the restart: %r" % names)
        check("during.bin" not in names and not temps(srv, sid), names)
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
