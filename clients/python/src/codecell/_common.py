"""What the sync and the async client share: the server's address, the
request bodies, the answers' decoding and the NDJSON events. No I/O here."""
from __future__ import annotations

import json
import os
import urllib.parse
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from .errors import ExecutionError, StreamFailed, TransportError, error_from_response
from .types import Execution, FileEntry, Result

__version__ = "0.1.0"

DEFAULT_URL = "http://127.0.0.1:8080"
DEFAULT_TIMEOUT = 300.0
# what an execution may take on top of its own timeout before the client
# stops waiting: the server ends every cell at its timeout, then needs a
# moment (the grace before a kill, a slow machine) to answer
EXEC_MARGIN_S = 60.0
# the server's ceiling for a cell's timeout: an execution whose timeout the
# client does not know waits this long (plus the margin) at most
EXEC_CEILING_S = 3600.0
NDJSON = "application/x-ndjson"

Number = Union[int, float]
Duration = Union[int, float, str]
Size = Union[int, str]
Callback = Callable[[Any], Any]

# the limits the server knows (docs/API.md); passed as keyword arguments
LIMIT_NAMES = ("memory", "pids", "cpus", "cpu_time", "file_size", "open_files", "tmp_size",
               "workspace_size", "output_limit", "result_limit")


@dataclass(frozen=True)
class Endpoint:
    """Where the server is, from a base URL such as `http://127.0.0.1:8080`."""

    scheme: str
    host: str
    port: int
    prefix: str

    @classmethod
    def parse(cls, base_url: str) -> "Endpoint":
        u = urllib.parse.urlsplit(base_url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError("base_url must be an http:// or https:// URL such as "
                             "'http://127.0.0.1:8080', not %r" % base_url)
        port = u.port or (443 if u.scheme == "https" else 80)
        return cls(u.scheme, u.hostname, port, u.path.rstrip("/"))

    @property
    def host_header(self) -> str:
        host = "[%s]" % self.host if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else "%s:%d" % (host, self.port)


def resolve_token(token: Optional[str]) -> Optional[str]:
    """The token given, else CODECELL_TOKEN, else none (a loopback server
    without --token-file needs none)."""
    if token is None:
        token = os.environ.get("CODECELL_TOKEN") or None
    return token.strip() if token else None


def base_headers(token: Optional[str]) -> Dict[str, str]:
    h = {"User-Agent": "codecell-python/" + __version__, "Accept": "application/json"}
    if token:
        h["Authorization"] = "Bearer " + token
    return h


def call_headers(respond_async: bool, approval_id: Optional[str]) -> Dict[str, str]:
    """The headers of a call the policy may hold for approval."""
    h = {}
    if respond_async:
        h["Prefer"] = "respond-async"
    if approval_id:
        h["X-Approval-Id"] = approval_id
    return h


def json_body(body: Mapping[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode("utf-8")


def session_path(session_id: str, *rest: str) -> str:
    return "/v1/sessions/" + urllib.parse.quote(session_id, safe="") + "".join(rest)


def file_path(session_id: str, path: str) -> str:
    """The route of a workspace path; each component percent-encoded, so
    that a name with `?`, `#` or `%` reaches the server as it is."""
    return session_path(session_id, "/files/", urllib.parse.quote(path.lstrip("/"), safe="/"))


def merge_limits(limits: Optional[Mapping[str, Any]], kw: Mapping[str, Any]) -> Dict[str, Any]:
    unknown = [k for k in kw if k not in LIMIT_NAMES]
    if unknown:
        raise TypeError("unknown argument %s (limits are: %s; others go in limits={...})"
                        % (", ".join(repr(k) for k in unknown), ", ".join(LIMIT_NAMES)))
    out = dict(limits or {})
    out.update({k: v for k, v in kw.items() if v is not None})
    return out


def _put(body: Dict[str, Any], **fields: Any) -> Dict[str, Any]:
    body.update({k: v for k, v in fields.items() if v is not None})
    return body


def run_body(code: str, lang: Optional[str], timeout: Optional[Duration],
             limits: Dict[str, Any], env: Optional[Mapping[str, str]], network: Optional[str],
             seed: Optional[int]) -> Dict[str, Any]:
    return _put({"code": code}, language=lang, timeout=timeout, limits=limits or None,
                env=dict(env) if env is not None else None, network=network, seed=seed)


def session_body(lang: Optional[str], timeout: Optional[Duration], limits: Dict[str, Any],
                 env: Optional[Mapping[str, str]], network: Optional[str],
                 preload: Union[str, Sequence[str], None], idle_timeout: Optional[Duration],
                 seed: Optional[int], project: Optional[str]) -> Dict[str, Any]:
    if preload is not None and not isinstance(preload, str):
        preload = list(preload)
    return _put({}, language=lang, timeout=timeout, limits=limits or None,
                env=dict(env) if env is not None else None, network=network, preload=preload,
                idle_timeout=idle_timeout, seed=seed, project=project)


def exec_wait(client_timeout: Optional[float], cell_timeout: Any) -> Optional[float]:
    """How long to wait for an execution's answer: the client's timeout, or
    the cell's own plus a margin when that is longer (a number of seconds;
    a string such as "2m" counts as the server's ceiling)."""
    if client_timeout is None:
        return None
    if isinstance(cell_timeout, (int, float)) and not isinstance(cell_timeout, bool):
        cell = float(cell_timeout)
    elif cell_timeout is None:
        cell = 0.0
    else:
        cell = EXEC_CEILING_S
    return max(client_timeout, cell + EXEC_MARGIN_S)


def decode_json(status: int, data: bytes) -> Any:
    """The JSON of a successful answer; an APIError for any other status."""
    if status == 202 or status >= 300:
        raise error_from_response(status, data)
    try:
        return json.loads(data.decode("utf-8")) if data else None
    except (UnicodeDecodeError, ValueError) as e:
        raise TransportError("the server's answer (HTTP %d) is not JSON: %s: %r"
                             % (status, e, data[:200])) from None


def decode_listing(j: Mapping[str, Any]) -> List[FileEntry]:
    if j.get("type") != "directory":
        raise TransportError("not a directory listing: %r" % (dict(j),))
    return [FileEntry.from_json(e) for e in j.get("entries") or []]


Event = Tuple[str, Any]


def parse_event(line: bytes) -> Optional[Event]:
    """One NDJSON line of a streamed execution as (kind, value): ("stdout",
    str), ("stderr", str), ("result", Result), ("error", ExecutionError) or
    ("end", Execution). None for an empty line or a type this client does
    not know (a newer server's). An end without a result raises StreamFailed."""
    line = line.strip()
    if not line:
        return None
    try:
        ev = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise TransportError("a line of the stream is not JSON: %s: %r" % (e, line[:200])) from None
    kind = ev.get("type") if isinstance(ev, dict) else None
    if kind in ("stdout", "stderr"):
        return kind, str(ev.get("text", ""))
    if kind == "result":
        return kind, Result.from_json(ev.get("data") or {})
    if kind == "error":
        return kind, ExecutionError.from_json(ev)
    if kind == "end":
        res = ev.get("result")
        if isinstance(res, dict):
            return kind, Execution.from_json(res)
        err = ev.get("error") if isinstance(ev.get("error"), dict) else {}
        raise StreamFailed(200, str(err.get("code") or "stream_failed"),
                           str(err.get("message") or "the execution ended without a result"),
                           ev, exec_status=ev.get("status"))
    return None


def callbacks(on_stdout: Optional[Callback], on_stderr: Optional[Callback],
              on_result: Optional[Callback], on_error: Optional[Callback]) -> Dict[str, Callback]:
    cbs = {"stdout": on_stdout, "stderr": on_stderr, "result": on_result, "error": on_error}
    return {k: v for k, v in cbs.items() if v is not None}


def stream_ended() -> TransportError:
    return TransportError("the stream ended before its 'end' event (the connection was cut)")


_DEFAULT = object()


@dataclass
class Call:
    """One request, built the same way for both clients: `stream` asks for
    NDJSON (`Accept: application/x-ndjson`); `wait` is how long to wait
    for the answer (_DEFAULT: the client's timeout)."""

    method: str
    path: str
    body: Optional[bytes] = None
    content_type: Optional[str] = None
    headers: Optional[Dict[str, str]] = None
    wait: Any = _DEFAULT
    stream: bool = False

    def header_list(self, base: Mapping[str, str]) -> Dict[str, str]:
        h = dict(base)
        h.update(self.headers or {})
        if self.stream:
            h["Accept"] = NDJSON
        if self.content_type:
            h["Content-Type"] = self.content_type
        return h


def json_call(method: str, path: str, body: Optional[Mapping[str, Any]] = None,
              headers: Optional[Dict[str, str]] = None, wait: Any = _DEFAULT,
              stream: bool = False) -> Call:
    if body is None:
        return Call(method, path, headers=headers, wait=wait, stream=stream)
    return Call(method, path, json_body(body), "application/json", headers, wait, stream)


def upload_call(session_id: str, path: str, data: Union[bytes, str],
                headers: Dict[str, str]) -> Call:
    if isinstance(data, str):
        data = data.encode("utf-8")
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError("data must be bytes or str, not %s" % type(data).__name__)
    return Call("PUT", file_path(session_id, path), bytes(data), "application/octet-stream",
                headers)


def unreachable(url: str, e: BaseException) -> TransportError:
    return TransportError("cannot reach codecell at %s: %s (is 'codecell serve' running there?)"
                          % (url, e))


def not_a_file(path: str) -> IsADirectoryError:
    return IsADirectoryError("'%s' is a directory in the workspace: list it with files.list(%r)"
                             % (path, path))


def execute_call(session_id: str, code: str, timeout: Optional[Duration],
                 session_timeout: Any, client_timeout: Optional[float],
                 headers: Dict[str, str]) -> Call:
    """A session's execute: waits for the cell's timeout, else the session's."""
    body: Dict[str, Any] = {"code": code}
    if timeout is not None:
        body["timeout"] = timeout
    wait = exec_wait(client_timeout, timeout if timeout is not None else session_timeout)
    return json_call("POST", session_path(session_id, "/execute"), body, headers, wait=wait)


def tool_call(name: str, arguments: Mapping[str, Any], session_id: Optional[str],
              headers: Dict[str, str]) -> Call:
    body: Dict[str, Any] = {"arguments": dict(arguments)}
    if session_id is not None:
        body["session_id"] = session_id
    return json_call("POST", "/v1/tools/" + urllib.parse.quote(name, safe=""), body, headers)


def approval_call(approval_id: str, approve: Optional[bool] = None) -> Call:
    """GET an approval, or (approve given) POST the operator's decision."""
    path = "/v1/approvals/" + urllib.parse.quote(approval_id, safe="")
    if approve is None:
        return json_call("GET", path)
    return json_call("POST", path, {"decision": "approve" if approve else "deny"})


def still_pending(approval_id: str, timeout: Optional[float]) -> TimeoutError:
    return TimeoutError("approval '%s' still pending after %g s: the operator has not decided "
                        "(codecell approvals approve ID)" % (approval_id, timeout or 0))


class ClientBase:
    """What Client and AsyncClient hold: the server, the headers of every
    call, the timeout and whether held calls answer at once."""

    def __init__(self, base_url: Optional[str] = None, token: Optional[str] = None,
                 timeout: Optional[float] = DEFAULT_TIMEOUT, respond_async: bool = False) -> None:
        self.base_url = (base_url or os.environ.get("CODECELL_URL") or DEFAULT_URL).rstrip("/")
        self._ep = Endpoint.parse(self.base_url)
        self._headers = base_headers(resolve_token(token))
        self.timeout = timeout
        self.respond_async = respond_async

    def _held(self, approval_id: Optional[str]) -> Dict[str, str]:
        return call_headers(self.respond_async, approval_id)


def route_event(line: bytes, cbs: Mapping[str, Callback]) -> Union[
        Execution, Tuple[Callback, Any], None]:
    """What a stream's line asks for: the Execution at its end, a callback
    and its argument, or nothing (no callback for it, an empty line)."""
    ev = parse_event(line)
    if ev is None:
        return None
    if isinstance(ev[1], Execution):
        return ev[1]
    cb = cbs.get(ev[0])
    return (cb, ev[1]) if cb is not None else None
