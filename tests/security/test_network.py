#!/usr/bin/python3
"""Security: the network inside is loopback only (or nothing, with
--net none); host sockets (TCP on 127.0.0.1, abstract and named AF_UNIX)
are out of reach, and sandboxes cannot reach each other (escape classes 10
and 13 of research/sandbox-anchors.md section 11).

Workplace rule: no traffic to any address outside 127.0.0.0/8 and ::1.
That there is no way out is shown by the routing tables, not by trying."""
import fcntl
import json
import os
import secrets
import shutil
import socket
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cctest import (CODECELL, HANG_S, check, descendants, eq, main, run_code, test,  # noqa: E402
                    tmpdir)


def probe(code, *args, **kw):
    """Run Python code that prints one JSON document last; return it."""
    r = run_code(code, *args, **kw)
    j = r.json
    eq(j["status"], "ok", "probe did not run cleanly: %r" % r)
    return json.loads(j["logs"]["stdout"].strip().splitlines()[-1])


CONNECT_PROBE = r'''
import json, socket
targets = %r
out = {}
for name, fam, addr in targets:
    fam = getattr(socket, fam)
    if isinstance(addr, list):
        addr = tuple(addr)
    elif addr.startswith("@"):
        addr = b"\0" + addr[1:].encode()
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect(addr)
        out[name] = ["connected", s.recv(64).decode("latin-1")]
    except OSError as e:
        out[name] = ["error", e.errno]
    s.close()
print(json.dumps(out))
'''


def pending(listener):
    """Did anything connect to this host listener?"""
    listener.setblocking(False)
    try:
        c, _ = listener.accept()
        c.close()
        return True
    except BlockingIOError:
        return False


@test
def host_tcp_listener_on_loopback_is_unreachable():
    srv4 = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv4.bind(("127.0.0.1", 0))
    srv4.listen(8)
    srv6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    srv6.bind(("::1", 0))
    srv6.listen(8)
    p4, p6 = srv4.getsockname()[1], srv6.getsockname()[1]
    try:
        got = probe(CONNECT_PROBE % ([
            ["v4", "AF_INET", ["127.0.0.1", p4]],
            ["v4-other", "AF_INET", ["127.0.0.2", p4]],
            ["localhost", "AF_INET", ["localhost", p4]],
            ["v6", "AF_INET6", ["::1", p6]],
        ],))
        for k, v in got.items():
            eq(v[0], "error", "connect to host listener via %s succeeded: %r" % (k, got))
        check(not pending(srv4) and not pending(srv6), "host listener saw a connection")
        # control: the listener does work from the host
        c = socket.create_connection(("127.0.0.1", p4), timeout=2)
        time.sleep(0.05)
        check(pending(srv4), "control connection not seen: the test proves nothing")
        c.close()
    finally:
        srv4.close()
        srv6.close()


@test
def host_abstract_unix_socket_is_unreachable():
    name = "codecell-test-" + secrets.token_hex(6)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(b"\0" + name.encode())
    srv.listen(8)
    dg = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    dg.bind(b"\0" + name.encode() + b"-dgram")
    dg.setblocking(False)
    try:
        got = probe(CONNECT_PROBE % ([["abstract", "AF_UNIX", "@" + name]],) +
                    "\nimport socket\n"
                    "d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
                    "try:\n"
                    "    d.sendto(b'hello', b'\\0%s-dgram')\n"
                    "    out['dgram'] = ['sent', 0]\n"
                    "except OSError as e:\n"
                    "    out['dgram'] = ['error', e.errno]\n"
                    "print(json.dumps(out))\n" % name)
        eq(got["abstract"][0], "error", "connected to a host abstract socket")
        eq(got["dgram"][0], "error", "sent a datagram to a host abstract socket")
        check(not pending(srv), "host abstract listener saw a connection")
        try:
            data = dg.recv(64)
        except BlockingIOError:
            data = None
        eq(data, None, "host abstract datagram socket received data")
        # control
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(b"\0" + name.encode())
        time.sleep(0.05)
        check(pending(srv), "control connection not seen")
        c.close()
    finally:
        srv.close()
        dg.close()


@test
def host_named_unix_sockets_are_unreachable():
    d = tmpdir()
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path = os.path.join(d, "s.sock")
    srv.bind(path)
    os.chmod(path, 0o777)
    srv.listen(8)
    try:
        targets = [["tempdir", "AF_UNIX", path]]
        # and every socket the host has in the usual places (D-Bus,
        # systemd, docker, X11...)
        for top in ("/run", "/var/run", "/tmp", "/dev"):
            for dp, dns, fns in os.walk(top):
                for n in fns:
                    p = os.path.join(dp, n)
                    try:
                        if stat.S_ISSOCK(os.lstat(p).st_mode):
                            targets.append([p, "AF_UNIX", p])
                    except OSError:
                        pass
        got = probe(CONNECT_PROBE % (targets,))
        for name, v in got.items():
            eq(v[0], "error", "connected to host socket %s: %r" % (name, v))
        check(not pending(srv), "host named socket saw a connection")
    finally:
        srv.close()
        shutil.rmtree(d, ignore_errors=True)


@test
def only_loopback_and_no_route_out():
    got = probe(r'''
import json, os, socket
def lines(p):
    try:
        with open(p) as f:
            return f.read().splitlines()
    except OSError as e:
        return ["ERR %d" % e.errno]
dev = [l.split(":")[0].strip() for l in lines("/proc/net/dev")[2:]]
route = lines("/proc/net/route")
route6 = [l.split() for l in lines("/proc/net/ipv6_route")]
print(json.dumps({"dev": dev, "route": route, "route6": route6,
                  "if_nameindex": [n for _, n in socket.if_nameindex()],
                  "sys_class_net": os.path.exists("/sys/class/net")}))
''')
    eq(got["dev"], ["lo"], "interfaces in /proc/net/dev")
    eq(got["if_nameindex"], ["lo"], "interfaces by if_nameindex")
    check(not got["sys_class_net"], "/sys/class/net is visible")
    # IPv4: the header line only, no default route, no route at all
    eq(len(got["route"]), 1, "IPv4 routes inside: %r" % got["route"])
    check(got["route"][0].startswith("Iface"), "odd /proc/net/route: %r" % got["route"])
    # IPv6: every route is on lo; the only non-host routes are the
    # unreachable defaults the kernel adds (flags 0x00200200: REJECT)
    for r in got["route6"]:
        eq(r[-1], "lo", "an IPv6 route through %r" % r)
        if r[0] == "0" * 32 and r[1] == "00":
            check(int(r[8], 16) & 0x0200, "IPv6 default route that is not a reject: %r" % r)


@test
def loopback_inside_works_by_default():
    got = probe(r'''
import json, socket
out = {}
for fam, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.bind((host, 0))
    s.listen(1)
    c = socket.create_connection(s.getsockname()[:2], timeout=2)
    a, _ = s.accept()
    c.sendall(b"ping")
    out[host] = a.recv(4).decode()
print(json.dumps(out))
''')
    eq(got, {"127.0.0.1": "ping", "::1": "ping"}, "loopback traffic inside")


@test
def net_none_has_loopback_down():
    got = probe(r'''
import fcntl, json, socket, struct
out = {}
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
r = fcntl.ioctl(s.fileno(), 0x8913, struct.pack("16sH14x", b"lo", 0))  # SIOCGIFFLAGS
out["lo_up"] = bool(struct.unpack("16sH14x", r)[1] & 1)
for fam, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
    srv = socket.socket(fam, socket.SOCK_STREAM)
    try:
        srv.bind((host, 0))
        srv.listen(1)
        port = srv.getsockname()[1]
        out["bind " + host] = "ok"
    except OSError as e:
        out["bind " + host] = e.errno
        port = 9
    c = socket.socket(fam, socket.SOCK_STREAM)
    c.settimeout(2)
    try:
        c.connect((host, port))
        out["connect " + host] = "ok"
    except OSError as e:
        out["connect " + host] = e.errno
print(json.dumps(out))
''', "--net", "none")
    eq(got["lo_up"], False, "lo is up with --net none")
    for host in ("127.0.0.1", "::1"):
        check(got["connect " + host] != "ok", "loopback traffic with --net none: %r" % got)


NS_GET_USERNS = 0xB701  # linux/nsfs.h: _IO(0xb7, 0x1)


def ns_id(path):
    return os.stat(path).st_ino


@test
def every_process_of_a_run_is_in_its_private_network_namespace():
    """A one-shot run's network namespace is made by its worker, not by
    the clone (child.c, worker_prepare), and the init joins it: seen from
    the host, the init, the program and the program's child must all be
    in one namespace that is not the host's and is owned by the
    sandbox's own user namespace (so the host's network is never the
    one they got, and nothing in it is the host's to configure)."""
    for net in ("loopback", "none"):
        p = subprocess.Popen([CODECELL, "run", "--lang", "bash", "--net", net, "-"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            p.stdin.write("sleep %d & echo ready; wait\n" % (4 * HANG_S))
            p.stdin.close()
            eq(p.stdout.readline().strip(), "ready", "the program did not start")
            # the sandbox's: the init, bash and its sleep, whatever else is
            # below, all in the run's PID namespace; not codecell's own
            # process that ends the run (sandbox_start_reaper), which is
            # in codecell's namespaces and no part of the sandbox
            own = ns_id("/proc/%d/ns/pid" % p.pid)
            pids = [q for q in descendants(p.pid) if ns_id("/proc/%d/ns/pid" % q) != own]
            check(len(pids) >= 3, "%s: processes below codecell: %r" % (net, pids))
            nets = {pid: ns_id("/proc/%d/ns/net" % pid) for pid in pids}
            host = ns_id("/proc/self/ns/net")
            eq(len(set(nets.values())), 1, "%s: one namespace for the whole run: %r" % (net, nets))
            check(host not in nets.values(), "%s: a sandbox process in the host's network "
                  "namespace: %r" % (net, nets))
            fd = os.open("/proc/%d/ns/net" % pids[0], os.O_RDONLY)
            try:
                owner = fcntl.ioctl(fd, NS_GET_USERNS)
                try:
                    eq(os.fstat(owner).st_ino, ns_id("/proc/%d/ns/user" % pids[0]),
                       "%s: the namespace's owner is the sandbox's user namespace" % net)
                finally:
                    os.close(owner)
            finally:
                os.close(fd)
        finally:
            p.kill()
            p.wait()


def start_listener_sandbox(name, seconds):
    """A sandbox that listens on 127.0.0.1 (TCP) and on an abstract unix
    name, says READY <port> on stdout (live, no --json), then waits."""
    code = r'''
import select, socket, sys, time
t = socket.socket(); t.bind(("127.0.0.1", 0)); t.listen(8)
u = socket.socket(socket.AF_UNIX); u.bind(b"\0%s"); u.listen(8)
# control: our own listener answers us
c = socket.create_connection(t.getsockname(), timeout=2)
a, _ = t.accept(); a.close(); c.close()
print("READY", t.getsockname()[1], flush=True)
end = time.time() + %f
while time.time() < end:
    r, _, _ = select.select([t, u], [], [], 0.1)
    for s in r:
        conn, _ = s.accept()
        print("ACCEPTED", "tcp" if s is t else "unix", flush=True)
        conn.close()
print("DONE", flush=True)
''' % (name, seconds)
    p = subprocess.Popen([CODECELL, "run", "--timeout", "20", "-"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    p.stdin.write(code)
    p.stdin.close()
    line = p.stdout.readline().split()
    check(line and line[0] == "READY", "listener sandbox did not start: %r %r"
          % (line, p.stderr.read() if p.poll() is not None else ""))
    return p, int(line[1])


@test
def concurrent_sandboxes_cannot_reach_each_other():
    name = "codecell-test-" + secrets.token_hex(6)
    a, port = start_listener_sandbox(name, 2.5)
    try:
        got = probe(CONNECT_PROBE % ([["tcp", "AF_INET", ["127.0.0.1", port]],
                                      ["unix", "AF_UNIX", "@" + name]],))
        eq(got["tcp"][0], "error", "sandbox B reached A's TCP listener: %r" % got)
        eq(got["unix"][0], "error", "sandbox B reached A's abstract socket: %r" % got)
        # nor can the host reach A's loopback (a host service on the same
        # port may answer; what matters is that A never sees it)
        h = socket.socket()
        h.settimeout(1)
        try:
            h.connect(("127.0.0.1", port))
        except OSError:
            pass
        h.close()
        rest = a.stdout.read()
        a.wait(timeout=20)
        check("DONE" in rest, "listener sandbox did not finish: %r" % rest)
        check("ACCEPTED" not in rest, "listener sandbox accepted a connection: %r" % rest)
    finally:
        if a.poll() is None:
            a.kill()
            a.wait()


main()
