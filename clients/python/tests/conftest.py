"""Servers the client's tests start for themselves: `codecell serve` on an
ephemeral loopback port (port 0, read back from its first line), with a
token file and a policy, stopped with SIGTERM at the end.

The binary: CODECELL_BIN, else the repository's $CODECELL_BUILD/codecell
(build/ by default). Not there is a failure, not a skip."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from typing import Iterator

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "src"))

TOKEN = "client-test-token-0123456789abcdef"
# a client of the policy file whose deletes a person must approve
CAREFUL_KEY = "careful-key-0123456789abcdef"


def _sha(s: str) -> str:
    return hashlib.sha256(s.encode()).hexdigest()


POLICY = """\
[default]
languages = python,bash,javascript
limit.memory = 1G
max_file = 256K
tools = sql

[policy careful]
languages = python
approval = delete_file
approval_timeout = 10m

[client careful]
key_sha256 = %s
policy = careful
""" % _sha(CAREFUL_KEY)


def binary() -> str:
    path = os.environ.get("CODECELL_BIN") or os.path.join(
        ROOT, os.environ.get("CODECELL_BUILD", "build"), "codecell")
    if not os.access(path, os.X_OK):
        pytest.fail("no codecell binary at %s: run 'make' at the repository's root, or set "
                    "CODECELL_BIN" % path)
    return path


class Server:
    """One `codecell serve` of the test's own."""

    def __init__(self, *args: str) -> None:
        self.dir = tempfile.TemporaryDirectory(prefix="cc-pyclient-")
        tok = os.path.join(self.dir.name, "token")
        pol = os.path.join(self.dir.name, "policy")
        for path, text in ((tok, TOKEN + "\n"), (pol, POLICY)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(text)
        # stderr to a file: a pipe nobody reads could fill and block the server
        self.log = tempfile.TemporaryFile(mode="w+")
        cmd = [binary(), "serve", "--listen", "127.0.0.1:0", "--token-file", tok,
               "--policy", pol] + list(args)
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log, text=True)
        assert self.p.stdout is not None
        line = self.p.stdout.readline()
        if not line.startswith("codecell serve: listening on http://"):
            self.stop()
            pytest.fail("the server did not start: %r\n%s" % (line, self.stderr()))
        self.url = line.split()[4].rstrip("/")

    def stderr(self) -> str:
        self.log.seek(0)
        return self.log.read()

    def stop(self) -> None:
        if self.p.poll() is None:
            self.p.terminate()
        try:
            self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        self.dir.cleanup()


def _serve(*args: str) -> Iterator[Server]:
    s = Server(*args)
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    yield from _serve("--pool", "1")


@pytest.fixture(scope="session")
def server_one() -> Iterator[Server]:
    """A server that holds one session at most."""
    yield from _serve("--pool", "0", "--max-sessions", "1")


@pytest.fixture
def client(server: Server):
    import codecell
    return codecell.Client(server.url, token=TOKEN)


@pytest.fixture
def aclient(server: Server):
    import codecell
    return codecell.AsyncClient(server.url, token=TOKEN)
