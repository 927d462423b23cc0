"""The synchronous client, on http.client: one connection per call, so a
Client may be shared between threads."""
from __future__ import annotations

import http.client
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _common as c
from .errors import NotFound, TransportError, error_from_response
from .types import Approval, Execution, FileEntry, FileWritten, SessionInfo, Tool

__all__ = ["Client", "Session", "Files"]


class Client(c.ClientBase):
    """A connection to `codecell serve`.

    base_url: the server (default: CODECELL_URL, else http://127.0.0.1:8080).
    token: the bearer token (default: CODECELL_TOKEN; none for a loopback
    server without --token-file). timeout: seconds to wait for an answer
    (None: forever); an execution waits at least its own timeout plus a
    minute. respond_async: a call the policy holds for a person raises
    ApprovalPending at once instead of waiting for the decision."""

    # ---- transport ----------------------------------------------------------

    def _open(self, call: c.Call) -> Tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        wait = self.timeout if call.wait is c._DEFAULT else call.wait
        cls = (http.client.HTTPSConnection if self._ep.scheme == "https"
               else http.client.HTTPConnection)
        conn = cls(self._ep.host, self._ep.port, timeout=wait)
        try:
            conn.request(call.method, self._ep.prefix + call.path, body=call.body,
                         headers=call.header_list(self._headers))
            return conn, conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise c.unreachable(self.base_url, e) from None

    def _send(self, call: c.Call) -> Tuple[int, str, bytes]:
        conn, resp = self._open(call)
        try:
            return resp.status, resp.getheader("Content-Type", ""), resp.read()
        except (OSError, http.client.HTTPException) as e:
            raise TransportError("the answer from %s was cut: %s" % (self.base_url, e)) from None
        finally:
            conn.close()

    def _json(self, call: c.Call) -> Any:
        status, _, data = self._send(call)
        return c.decode_json(status, data)

    def _execute(self, call: c.Call, cbs: Dict[str, c.Callback]) -> Execution:
        if not cbs:
            return Execution.from_json(self._json(call))
        call.stream = True
        conn, resp = self._open(call)
        try:
            if resp.status != 200:
                raise error_from_response(resp.status, resp.read())
            if not resp.getheader("Content-Type", "").startswith(c.NDJSON):
                return Execution.from_json(c.decode_json(resp.status, resp.read()))
            for line in iter(resp.readline, b""):
                step = c.route_event(line, cbs)
                if isinstance(step, Execution):
                    return step
                if step is not None:
                    step[0](step[1])
            raise c.stream_ended()
        except (OSError, http.client.HTTPException) as e:
            raise TransportError("the stream from %s was cut: %s" % (self.base_url, e)) from None
        finally:
            conn.close()

    # ---- one-shot runs and sessions ----------------------------------------

    def run(self, code: str, lang: Optional[str] = None, *, timeout: Optional[c.Duration] = None,
            limits: Optional[Mapping[str, Any]] = None, env: Optional[Mapping[str, str]] = None,
            network: Optional[str] = None, seed: Optional[int] = None,
            on_stdout: Optional[c.Callback] = None, on_stderr: Optional[c.Callback] = None,
            on_result: Optional[c.Callback] = None, on_error: Optional[c.Callback] = None,
            approval_id: Optional[str] = None, **limit_kw: Any) -> Execution:
        """Run code once in a fresh sandbox (`POST /v1/execute`). lang:
        python (default), javascript, bash or sql. Limits as keywords
        (memory="256M", cpus=0.5, ...) or limits={...}. Callbacks get the
        output as it comes (on_stdout(str), on_stderr(str), on_error(ExecutionError))."""
        body = c.run_body(code, lang, timeout, c.merge_limits(limits, limit_kw), env, network, seed)
        call = c.json_call("POST", "/v1/execute", body, self._held(approval_id),
                           wait=c.exec_wait(self.timeout, timeout))
        return self._execute(call, c.callbacks(on_stdout, on_stderr, on_result, on_error))

    def create_session(self, lang: Optional[str] = None, *, timeout: Optional[c.Duration] = None,
                       limits: Optional[Mapping[str, Any]] = None,
                       env: Optional[Mapping[str, str]] = None, network: Optional[str] = None,
                       preload: Union[str, Sequence[str], None] = None,
                       idle_timeout: Optional[c.Duration] = None, seed: Optional[int] = None,
                       project: Optional[str] = None, approval_id: Optional[str] = None,
                       **limit_kw: Any) -> "Session":
        """A new session (`POST /v1/sessions`): a kernel that keeps its
        variables and workspace between executions. timeout is each
        execution's default. Close it (or use `with`) to free it."""
        body = c.session_body(lang, timeout, c.merge_limits(limits, limit_kw), env, network,
                              preload, idle_timeout, seed, project)
        j = self._json(c.json_call("POST", "/v1/sessions", body, self._held(approval_id)))
        return Session(self, SessionInfo.from_json(j))

    def get_session(self, session_id: str) -> "Session":
        """A session that exists already (made earlier, or by another door)."""
        return Session(self, SessionInfo.from_json(self._json(c.json_call(
            "GET", c.session_path(session_id)))))

    def list_sessions(self) -> List[SessionInfo]:
        j = self._json(c.json_call("GET", "/v1/sessions"))
        return [SessionInfo.from_json(s) for s in j.get("sessions") or []]

    # ---- tools --------------------------------------------------------------

    def list_tools(self) -> List[Tool]:
        """The tools besides code this client's policy enables."""
        j = self._json(c.json_call("GET", "/v1/tools"))
        return [Tool.from_json(t) for t in j.get("tools") or []]

    def call_tool(self, name: str, arguments: Mapping[str, Any], *,
                  session_id: Optional[str] = None, approval_id: Optional[str] = None) -> Any:
        """Call a tool (`POST /v1/tools/{name}`); its result as JSON. A tool's
        own failure (an SQLError) is a result with "error", not an exception."""
        return self._json(c.tool_call(name, arguments, session_id, self._held(approval_id)))

    # ---- approvals ----------------------------------------------------------

    def list_approvals(self) -> List[Approval]:
        j = self._json(c.json_call("GET", "/v1/approvals"))
        return [Approval.from_json(a) for a in j.get("approvals") or []]

    def get_approval(self, approval_id: str) -> Approval:
        return Approval.from_json(self._json(c.approval_call(approval_id)))

    def decide_approval(self, approval_id: str, approve: bool) -> Approval:
        """Approve or deny a held call (the operator's token only)."""
        return Approval.from_json(self._json(c.approval_call(approval_id, approve)))

    def wait_for_approval(self, approval_id: str, timeout: Optional[float] = None,
                          poll: float = 0.5) -> Approval:
        """Poll until the approval is decided (or expires); the approval.
        TimeoutError after timeout seconds if given."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            a = self.get_approval(approval_id)
            if a.state != "pending":
                return a
            if deadline is not None and time.monotonic() >= deadline:
                raise c.still_pending(approval_id, timeout)
            time.sleep(poll)

    def health(self) -> Dict[str, Any]:
        """`GET /healthz`: status, sessions, pool."""
        return dict(self._json(c.json_call("GET", "/healthz")))

    def close(self) -> None:
        """Nothing to release (one connection per call); for symmetry."""

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Files:
    """A session's workspace (`/home/user` inside); paths are relative to it."""

    def __init__(self, session: "Session") -> None:
        self._s = session

    def read(self, path: str) -> bytes:
        cl, sid = self._s._client, self._s.id
        status, ctype, data = cl._send(c.json_call("GET", c.file_path(sid, path)))
        if status != 200:
            raise error_from_response(status, data)
        if ctype.startswith("application/json"):
            raise c.not_a_file(path)
        return data

    def read_text(self, path: str, encoding: str = "utf-8") -> str:
        return self.read(path).decode(encoding)

    def write(self, path: str, data: Union[bytes, str], *,
              approval_id: Optional[str] = None) -> FileWritten:
        """Write a file (parents made as needed); str is written as UTF-8."""
        cl = self._s._client
        j = cl._json(c.upload_call(self._s.id, path, data, cl._held(approval_id)))
        return FileWritten(str(j["path"]), int(j["size"]), bool(j["replaced"]))

    def list(self, path: str = "") -> List[FileEntry]:
        """A directory's entries (the workspace root by default)."""
        j = self._s._client._json(c.json_call("GET", c.file_path(self._s.id, path)))
        return c.decode_listing(j)

    def delete(self, path: str, *, approval_id: Optional[str] = None) -> None:
        """Delete a file, or a directory with its contents."""
        cl = self._s._client
        cl._json(c.json_call("DELETE", c.file_path(self._s.id, path), None, cl._held(approval_id)))


class Session:
    """A session on the server. `with client.create_session() as s:` closes
    it at the end of the block."""

    def __init__(self, client: Client, info: SessionInfo) -> None:
        self._client = client
        self.info = info
        self.id = info.id
        self.files = Files(self)

    def execute(self, code: str, *, timeout: Optional[c.Duration] = None,
                on_stdout: Optional[c.Callback] = None, on_stderr: Optional[c.Callback] = None,
                on_result: Optional[c.Callback] = None, on_error: Optional[c.Callback] = None,
                approval_id: Optional[str] = None) -> Execution:
        """Run a cell. With callbacks the answer is streamed: on_stdout(str)
        and on_stderr(str) as output comes, on_result(Result) for each figure
        shown and the main result, on_error(ExecutionError). The cell's own
        exception is on the returned Execution's `error`, not raised."""
        cl = self._client
        call = c.execute_call(self.id, code, timeout, self.info.limits.get("timeout"),
                              cl.timeout, cl._held(approval_id))
        return cl._execute(call, c.callbacks(on_stdout, on_stderr, on_result, on_error))

    def interrupt(self) -> bool:
        """KeyboardInterrupt in the running cell; False if none was running."""
        j = self._client._json(c.json_call("POST", c.session_path(self.id, "/interrupt")))
        return bool(j.get("interrupted"))

    def restart(self) -> SessionInfo:
        """A fresh kernel; the workspace stays."""
        self.info = SessionInfo.from_json(self._client._json(c.json_call(
            "POST", c.session_path(self.id, "/restart"))))
        return self.info

    def fork(self, *, approval_id: Optional[str] = None) -> "Session":
        """A new session with a copy of this one's variables and workspace
        (Python only); changes on either side are not seen by the other."""
        cl = self._client
        j = cl._json(c.json_call("POST", c.session_path(self.id, "/fork"), None,
                                 cl._held(approval_id)))
        return Session(cl, SessionInfo.from_json(j))

    def refresh(self) -> SessionInfo:
        self.info = SessionInfo.from_json(self._client._json(c.json_call(
            "GET", c.session_path(self.id))))
        return self.info

    def close(self) -> None:
        """End the session (a running cell is killed). Closing a session that
        is gone already (deleted, expired) is not an error."""
        try:
            self._client._json(c.json_call("DELETE", c.session_path(self.id)))
        except NotFound:
            pass

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return "Session(id=%r, language=%r)" % (self.id, self.info.language)

