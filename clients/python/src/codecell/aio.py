"""The asyncio client: HTTP/1.1 on asyncio streams (no third-party HTTP
library), one connection per call. Callbacks may be plain functions or
coroutine functions."""
from __future__ import annotations

import asyncio
import inspect
import ssl
import time
from typing import (Any, AsyncIterator, Awaitable, Coroutine, Dict, Generator, List, Mapping,
                    Optional, Sequence, Tuple, Union)

from . import _common as c
from .errors import NotFound, TransportError, error_from_response
from .types import Approval, Execution, FileEntry, FileWritten, SessionInfo, Tool

__all__ = ["AsyncClient", "AsyncSession", "AsyncFiles", "SessionStart"]

# bounds on what the server's head may be: a line, and how many headers
_MAX_HEAD_LINE = 16 * 1024
_MAX_HEADERS = 100
_READ = 64 * 1024


class _Response:
    """An answer being read: status, headers, then the body as chunks."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 wait: Optional[float]) -> None:
        self._r = reader
        self._w = writer
        self._wait_s = wait
        self.status = 0
        self.headers: Dict[str, str] = {}

    async def _wait(self, aw: Awaitable[Any]) -> Any:
        try:
            return await asyncio.wait_for(aw, self._wait_s)
        except asyncio.TimeoutError:
            raise TransportError("no answer from the server within %g s"
                                 % (self._wait_s or 0)) from None
        except (asyncio.IncompleteReadError, ConnectionError) as e:
            raise TransportError("the answer was cut: %s" % e) from None
        except ValueError:
            # StreamReader.readline() turns its LimitOverrunError into this
            raise TransportError("a line of the server's answer is too long") from None

    async def _line(self) -> bytes:
        line = await self._wait(self._r.readline())
        if len(line) > _MAX_HEAD_LINE:
            raise TransportError("a line of the server's answer is too long")
        return bytes(line)

    async def read_head(self) -> None:
        parts = (await self._line()).split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
            raise TransportError("not an HTTP/1.1 answer: %r" % (parts,))
        self.status = int(parts[1])
        for _ in range(_MAX_HEADERS + 1):
            line = await self._line()
            if line in (b"\r\n", b"\n"):
                return
            if not line:
                raise TransportError("the answer ended in its headers")
            name, _, value = line.decode("latin-1").partition(":")
            self.headers[name.strip().lower()] = value.strip()
        raise TransportError("the answer has more than %d headers" % _MAX_HEADERS)

    async def chunks(self) -> AsyncIterator[bytes]:
        if self.status in (204, 304):
            return
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            while True:
                size_line = (await self._line()).split(b";", 1)[0].strip()
                try:
                    size = int(size_line, 16)
                except ValueError:
                    raise TransportError("a bad chunk size: %r" % size_line) from None
                if size == 0:
                    while (await self._line()) not in (b"\r\n", b"\n", b""):
                        pass
                    return
                data = await self._wait(self._r.readexactly(size))
                await self._wait(self._r.readexactly(2))
                yield data
        elif "content-length" in self.headers:
            try:
                left = int(self.headers["content-length"])
            except ValueError:
                raise TransportError("the answer's Content-Length is not a number: %r"
                                     % self.headers["content-length"]) from None
            while left > 0:
                data = await self._wait(self._r.read(min(_READ, left)))
                if not data:
                    raise TransportError("the answer ended %d bytes early" % left)
                left -= len(data)
                yield data
        else:
            while True:
                data = await self._wait(self._r.read(_READ))
                if not data:
                    return
                yield data

    async def read(self) -> bytes:
        return b"".join([d async for d in self.chunks()])

    async def lines(self) -> AsyncIterator[bytes]:
        # pieces of a line kept apart until its end: a result's line can be
        # megabytes, and joining as it comes would copy it over and over
        pending: List[bytes] = []
        async for data in self.chunks():
            while True:
                i = data.find(b"\n")
                if i < 0:
                    pending.append(data)
                    break
                pending.append(data[:i])
                yield b"".join(pending)
                pending, data = [], data[i + 1:]
        if pending:
            yield b"".join(pending)

    def close(self) -> None:
        self._w.close()


async def _call_back(cb: c.Callback, value: Any) -> None:
    r = cb(value)
    if inspect.isawaitable(r):
        await r


class AsyncClient(c.ClientBase):
    """The asyncio twin of `codecell.Client`: the same arguments and methods,
    each a coroutine. `async with AsyncClient(...) as cc:`."""

    _ssl: Optional[ssl.SSLContext] = None

    # ---- transport ----------------------------------------------------------

    async def _open(self, call: c.Call) -> _Response:
        wait = self.timeout if call.wait is c._DEFAULT else call.wait
        ctx = None
        if self._ep.scheme == "https":
            # loading the CA store is the costly part: once a client
            if self._ssl is None:
                self._ssl = ssl.create_default_context()
            ctx = self._ssl
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(self._ep.host, self._ep.port, ssl=ctx,
                                        limit=_MAX_HEAD_LINE * 2), wait)
        except (OSError, asyncio.TimeoutError) as e:
            raise c.unreachable(self.base_url, e) from None
        head = ["%s %s HTTP/1.1" % (call.method, self._ep.prefix + call.path),
                "Host: " + self._ep.host_header, "Connection: close",
                "Content-Length: %d" % len(call.body or b"")]
        head += ["%s: %s" % kv for kv in call.header_list(self._headers).items()]
        resp = _Response(reader, writer, wait)
        try:
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + (call.body or b""))
            await resp._wait(writer.drain())
            await resp.read_head()
        except BaseException:
            resp.close()
            raise
        return resp

    async def _send(self, call: c.Call) -> Tuple[int, str, bytes]:
        resp = await self._open(call)
        try:
            return resp.status, resp.headers.get("content-type", ""), await resp.read()
        finally:
            resp.close()

    async def _json(self, call: c.Call) -> Any:
        status, _, data = await self._send(call)
        return c.decode_json(status, data)

    async def _execute(self, call: c.Call, cbs: Dict[str, c.Callback]) -> Execution:
        if not cbs:
            return Execution.from_json(await self._json(call))
        call.stream = True
        resp = await self._open(call)
        try:
            if resp.status != 200:
                raise error_from_response(resp.status, await resp.read())
            if not resp.headers.get("content-type", "").startswith(c.NDJSON):
                return Execution.from_json(c.decode_json(resp.status, await resp.read()))
            async for line in resp.lines():
                step = c.route_event(line, cbs)
                if isinstance(step, Execution):
                    return step
                if step is not None:
                    await _call_back(step[0], step[1])
            raise c.stream_ended()
        finally:
            resp.close()

    # ---- one-shot runs and sessions ----------------------------------------

    async def run(self, code: str, lang: Optional[str] = None, *,
                  timeout: Optional[c.Duration] = None,
                  limits: Optional[Mapping[str, Any]] = None,
                  env: Optional[Mapping[str, str]] = None, network: Optional[str] = None,
                  seed: Optional[int] = None, on_stdout: Optional[c.Callback] = None,
                  on_stderr: Optional[c.Callback] = None, on_result: Optional[c.Callback] = None,
                  on_error: Optional[c.Callback] = None, approval_id: Optional[str] = None,
                  **limit_kw: Any) -> Execution:
        """See `Client.run`."""
        body = c.run_body(code, lang, timeout, c.merge_limits(limits, limit_kw), env, network, seed)
        call = c.json_call("POST", "/v1/execute", body, self._held(approval_id),
                           wait=c.exec_wait(self.timeout, timeout))
        return await self._execute(call, c.callbacks(on_stdout, on_stderr, on_result, on_error))

    def create_session(self, lang: Optional[str] = None, *,
                       timeout: Optional[c.Duration] = None,
                       limits: Optional[Mapping[str, Any]] = None,
                       env: Optional[Mapping[str, str]] = None,
                       network: Optional[str] = None,
                       preload: Union[str, Sequence[str], None] = None,
                       idle_timeout: Optional[c.Duration] = None,
                       seed: Optional[int] = None, project: Optional[str] = None,
                       approval_id: Optional[str] = None,
                       **limit_kw: Any) -> "SessionStart":
        """See `Client.create_session`. Await it (`s = await cc.create_session()`)
        or use it as `async with cc.create_session() as s:`, which closes it."""
        body = c.session_body(lang, timeout, c.merge_limits(limits, limit_kw), env, network,
                              preload, idle_timeout, seed, project)
        return SessionStart(self._create(body, approval_id))

    async def _create(self, body: Dict[str, Any], approval_id: Optional[str]) -> "AsyncSession":
        j = await self._json(c.json_call("POST", "/v1/sessions", body, self._held(approval_id)))
        return AsyncSession(self, SessionInfo.from_json(j))

    async def get_session(self, session_id: str) -> "AsyncSession":
        j = await self._json(c.json_call("GET", c.session_path(session_id)))
        return AsyncSession(self, SessionInfo.from_json(j))

    async def list_sessions(self) -> List[SessionInfo]:
        j = await self._json(c.json_call("GET", "/v1/sessions"))
        return [SessionInfo.from_json(s) for s in j.get("sessions") or []]

    # ---- tools and approvals ------------------------------------------------

    async def list_tools(self) -> List[Tool]:
        j = await self._json(c.json_call("GET", "/v1/tools"))
        return [Tool.from_json(t) for t in j.get("tools") or []]

    async def call_tool(self, name: str, arguments: Mapping[str, Any], *,
                        session_id: Optional[str] = None,
                        approval_id: Optional[str] = None) -> Any:
        """See `Client.call_tool`."""
        return await self._json(c.tool_call(name, arguments, session_id, self._held(approval_id)))

    async def list_approvals(self) -> List[Approval]:
        j = await self._json(c.json_call("GET", "/v1/approvals"))
        return [Approval.from_json(a) for a in j.get("approvals") or []]

    async def get_approval(self, approval_id: str) -> Approval:
        return Approval.from_json(await self._json(c.approval_call(approval_id)))

    async def decide_approval(self, approval_id: str, approve: bool) -> Approval:
        return Approval.from_json(await self._json(c.approval_call(approval_id, approve)))

    async def wait_for_approval(self, approval_id: str, timeout: Optional[float] = None,
                                poll: float = 0.5) -> Approval:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            a = await self.get_approval(approval_id)
            if a.state != "pending":
                return a
            if deadline is not None and time.monotonic() >= deadline:
                raise c.still_pending(approval_id, timeout)
            await asyncio.sleep(poll)

    async def health(self) -> Dict[str, Any]:
        return dict(await self._json(c.json_call("GET", "/healthz")))

    async def close(self) -> None:
        """Nothing to release (one connection per call); for symmetry."""

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


class SessionStart:
    """A session being made: awaitable (the AsyncSession) and an async
    context manager (which closes the session at the end of the block)."""

    def __init__(self, coro: Coroutine[Any, Any, "AsyncSession"]) -> None:
        self._coro = coro
        self._session: Optional[AsyncSession] = None

    def __await__(self) -> Generator[Any, None, "AsyncSession"]:
        return self._coro.__await__()

    async def __aenter__(self) -> "AsyncSession":
        self._session = await self._coro
        return self._session

    async def __aexit__(self, *exc: Any) -> None:
        if self._session is not None:
            await self._session.close()


class AsyncFiles:
    """See `codecell.Files`."""

    def __init__(self, session: "AsyncSession") -> None:
        self._s = session

    async def read(self, path: str) -> bytes:
        status, ctype, data = await self._s._client._send(
            c.json_call("GET", c.file_path(self._s.id, path)))
        if status != 200:
            raise error_from_response(status, data)
        if ctype.startswith("application/json"):
            raise c.not_a_file(path)
        return data

    async def read_text(self, path: str, encoding: str = "utf-8") -> str:
        return (await self.read(path)).decode(encoding)

    async def write(self, path: str, data: Union[bytes, str], *,
                    approval_id: Optional[str] = None) -> FileWritten:
        cl = self._s._client
        j = await cl._json(c.upload_call(self._s.id, path, data, cl._held(approval_id)))
        return FileWritten(str(j["path"]), int(j["size"]), bool(j["replaced"]))

    async def list(self, path: str = "") -> List[FileEntry]:
        return c.decode_listing(await self._s._client._json(
            c.json_call("GET", c.file_path(self._s.id, path))))

    async def delete(self, path: str, *, approval_id: Optional[str] = None) -> None:
        cl = self._s._client
        await cl._json(c.json_call("DELETE", c.file_path(self._s.id, path), None,
                                   cl._held(approval_id)))


class AsyncSession:
    """See `codecell.Session`; `async with` closes it."""

    def __init__(self, client: AsyncClient, info: SessionInfo) -> None:
        self._client = client
        self.info = info
        self.id = info.id
        self.files = AsyncFiles(self)

    async def execute(self, code: str, *, timeout: Optional[c.Duration] = None,
                      on_stdout: Optional[c.Callback] = None,
                      on_stderr: Optional[c.Callback] = None,
                      on_result: Optional[c.Callback] = None,
                      on_error: Optional[c.Callback] = None,
                      approval_id: Optional[str] = None) -> Execution:
        """See `Session.execute`; callbacks may be coroutine functions."""
        cl = self._client
        call = c.execute_call(self.id, code, timeout, self.info.limits.get("timeout"),
                              cl.timeout, cl._held(approval_id))
        return await cl._execute(call, c.callbacks(on_stdout, on_stderr, on_result, on_error))

    async def interrupt(self) -> bool:
        j = await self._client._json(c.json_call("POST", c.session_path(self.id, "/interrupt")))
        return bool(j.get("interrupted"))

    async def restart(self) -> SessionInfo:
        self.info = SessionInfo.from_json(await self._client._json(c.json_call(
            "POST", c.session_path(self.id, "/restart"))))
        return self.info

    async def fork(self, *, approval_id: Optional[str] = None) -> "AsyncSession":
        cl = self._client
        j = await cl._json(c.json_call("POST", c.session_path(self.id, "/fork"), None,
                                       cl._held(approval_id)))
        return AsyncSession(cl, SessionInfo.from_json(j))

    async def refresh(self) -> SessionInfo:
        self.info = SessionInfo.from_json(await self._client._json(c.json_call(
            "GET", c.session_path(self.id))))
        return self.info

    async def close(self) -> None:
        try:
            await self._client._json(c.json_call("DELETE", c.session_path(self.id)))
        except NotFound:
            pass

    async def __aenter__(self) -> "AsyncSession":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    def __repr__(self) -> str:
        return "AsyncSession(id=%r, language=%r)" % (self.id, self.info.language)
