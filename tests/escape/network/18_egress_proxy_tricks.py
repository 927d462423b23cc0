# class: network
# tries: reach the host listener through the allowlist network's proxy (CONNECT and absolute URIs to 127.0.0.1, localhost, decimal, octal, hex, short and mapped spellings, a smuggled Host and two body lengths), then directly
# oracle: tcp
# modes: run
# net: allowlist
import socket

P = @@TCP_PORT@@


def ask(head):
    try:
        s = socket.create_connection(("127.0.0.1", 3128), timeout=3)
        s.sendall(head.encode())
        data = s.recv(300)
        s.close()
        return data.split(b"\r\n")[0].decode("latin-1")
    except OSError as e:
        return "no proxy: %s" % e.strerror


for host in ("127.0.0.1", "localhost", "2130706433", "0177.0.0.1", "0x7f000001", "127.1",
             "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::1]", "0.0.0.0", "127.0.0.1."):
    print(host, "CONNECT:", ask("CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host, P, host, P)))
    print(host, "GET:", ask("GET http://%s:%d/ HTTP/1.1\r\nHost: %s\r\n\r\n" % (host, P, host)))
# the allowed name in the URI, the listener in Host, and a body framed two ways
print("smuggle:", ask("GET http://example.invalid/ HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                      "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" % P))
try:
    socket.create_connection(("127.0.0.1", P), timeout=3).close()
    print("connected directly")
except OSError as e:
    print("direct:", e.strerror)
