# What an escape attempt sees from inside: every line should say "blocked".
import ctypes
import os
import socket

libc = ctypes.CDLL(None, use_errno=True)


def attempt(what, fn):
    try:
        result = fn()
        print(f"NOT BLOCKED {what}: {result!r}")
    except Exception as e:
        print(f"blocked     {what}: {type(e).__name__}: {e}")


def syscall_fails(name, *args):
    if getattr(libc, name)(*args) == 0:
        return "succeeded"
    err = ctypes.get_errno()
    raise OSError(err, os.strerror(err))


def host_root():
    entries = os.listdir("/root")
    if entries:
        return entries
    raise PermissionError("/root here is an empty sandbox directory, not the host's")


attempt("read the host's /etc/shadow", lambda: open("/etc/shadow").read()[:20])
attempt("list the host's /root", host_root)
attempt("write into /usr/bin", lambda: open("/usr/bin/evil", "w"))
attempt("connect to a host service on 127.0.0.1:22",
        lambda: socket.create_connection(("127.0.0.1", 22), timeout=1))
attempt("create a user namespace", lambda: syscall_fails("unshare", 0x10000000))
attempt("mount a tmpfs", lambda: syscall_fails("mount", b"x", b"/tmp", b"tmpfs", 0, None))
attempt("read pid 1's memory", lambda: open("/proc/1/mem", "rb").read(1))
print("processes visible:", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
