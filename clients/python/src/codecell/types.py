"""The objects the server answers with, typed. Each keeps the JSON it was
made from in `raw`, so fields this version does not name are not lost."""
from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Union

from .errors import ExecutionError

__all__ = ["Result", "Output", "Execution", "SessionInfo", "FileEntry", "FileWritten", "Tool",
           "Approval"]

# MIME types whose data the server sends as base64 (everything the kernels
# send that is not text): decoded to bytes by Result.get
_TEXT_MIMES = ("text/", "application/json", "application/javascript", "image/svg+xml")


def _is_binary(mime: str) -> bool:
    return not mime.startswith(_TEXT_MIMES) and not mime.endswith(("+json", "+xml"))


@dataclass
class Result:
    """One rich result of a cell: a figure it showed, or the value of its last
    expression (`is_main_result`). `data` maps MIME type to what the server
    sent (base64 text for binary types); `get` and the properties decode."""

    data: Dict[str, str]
    is_main_result: bool = False

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> "Result":
        data = {k: v for k, v in j.items() if k != "is_main_result" and isinstance(v, str)}
        return cls(data, bool(j.get("is_main_result", False)))

    @property
    def mimes(self) -> List[str]:
        """The MIME types this result has, in the server's order."""
        return list(self.data)

    def get(self, mime: str) -> Optional[Union[str, bytes]]:
        """The content of one MIME type: bytes for binary types (`image/png`),
        str for text ones; None when the result does not have it."""
        v = self.data.get(mime)
        if v is None or not _is_binary(mime):
            return v
        return base64.b64decode(v)

    @property
    def text(self) -> Optional[str]:
        return self.data.get("text/plain")

    @property
    def html(self) -> Optional[str]:
        return self.data.get("text/html")

    @property
    def markdown(self) -> Optional[str]:
        return self.data.get("text/markdown")

    @property
    def png(self) -> Optional[bytes]:
        v = self.get("image/png")
        return v if isinstance(v, bytes) else None

    @property
    def jpeg(self) -> Optional[bytes]:
        v = self.get("image/jpeg")
        return v if isinstance(v, bytes) else None

    def __repr__(self) -> str:
        return "Result(mimes=%r, is_main_result=%r)" % (self.mimes, self.is_main_result)


@dataclass
class Output:
    """A piece of stdout or stderr, in the order the supervisor read them."""

    stream: str
    text: str


@dataclass
class Execution:
    """The result object of one execution (one-shot or a session's cell).

    `status` is `ok`, `error` (the code raised: see `error`), `timeout`,
    or another end the server names (`killed`, `memory`, ...). Python's
    exceptions are on `error`, never raised by the call itself."""

    status: str
    stdout: str
    stderr: str
    outputs: List[Output]
    results: List[Result]
    error: Optional[ExecutionError]
    exit_code: Optional[int] = None
    signal: Optional[int] = None
    execution_count: Optional[int] = None
    restarted: bool = False
    duration_ms: float = 0.0
    usage: Dict[str, Any] = field(default_factory=dict)
    truncated: Dict[str, bool] = field(default_factory=dict)
    limits_hit: List[str] = field(default_factory=list)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> "Execution":
        logs = j.get("logs") or {}
        err = j.get("error")
        return cls(
            status=str(j.get("status", "")),
            stdout=str(logs.get("stdout", "")),
            stderr=str(logs.get("stderr", "")),
            outputs=[Output(str(o.get("stream", "")), str(o.get("text", "")))
                     for o in j.get("outputs") or []],
            results=[Result.from_json(r) for r in j.get("results") or []],
            error=ExecutionError.from_json(err) if isinstance(err, dict) else None,
            exit_code=j.get("exit_code"),
            signal=j.get("signal"),
            execution_count=j.get("execution_count"),
            restarted=bool(j.get("restarted", False)),
            duration_ms=float(j.get("duration_ms") or 0.0),
            usage=dict(j.get("usage") or {}),
            truncated=dict(j.get("truncated") or {}),
            limits_hit=list(j.get("limits_hit") or []),
            raw=dict(j),
        )

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def main_result(self) -> Optional[Result]:
        """The value of the cell's last expression, if it had one."""
        for r in self.results:
            if r.is_main_result:
                return r
        return None

    @property
    def text(self) -> Optional[str]:
        """The text/plain of the main result (`"42"` for a cell ending in
        `6*7`), or None."""
        r = self.main_result
        return r.text if r else None

    def raise_for_error(self) -> "Execution":
        """Raise the cell's ExecutionError if it had one (status `error`,
        `timeout`, ...); otherwise return self, for chaining."""
        if self.error is not None:
            raise self.error
        if self.status != "ok":
            raise ExecutionError(self.status, "the execution ended with status '%s' (limits "
                                 "hit: %s)" % (self.status, ", ".join(self.limits_hit) or "none"),
                                 "")
        return self


@dataclass
class SessionInfo:
    """The session object: its id, language, limits and how it started."""

    id: str
    language: str
    created_at: str = ""
    last_used_at: str = ""
    executions: int = 0
    busy: bool = False
    idle_timeout: float = 0.0
    network: str = ""
    limits: Dict[str, Any] = field(default_factory=dict)
    pooled: bool = False
    forked_from: Optional[str] = None
    not_copied: Any = None
    door: str = ""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> "SessionInfo":
        return cls(id=str(j["id"]), language=str(j.get("language", "")),
                   created_at=str(j.get("created_at", "")),
                   last_used_at=str(j.get("last_used_at", "")),
                   executions=int(j.get("executions") or 0), busy=bool(j.get("busy")),
                   idle_timeout=float(j.get("idle_timeout") or 0.0),
                   network=str(j.get("network", "")), limits=dict(j.get("limits") or {}),
                   pooled=bool(j.get("pooled")), forked_from=j.get("forked_from"),
                   not_copied=j.get("not_copied"), door=str(j.get("door", "")), raw=dict(j))


@dataclass
class FileEntry:
    """One entry of a workspace directory."""

    name: str
    type: str
    size: int
    mtime: int

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> "FileEntry":
        return cls(str(j.get("name", "")), str(j.get("type", "")), int(j.get("size") or 0),
                   int(j.get("mtime") or 0))


@dataclass
class FileWritten:
    """The answer to a write: the path, its size and whether it replaced a file."""

    path: str
    size: int
    replaced: bool


@dataclass
class Tool:
    """A tool besides code that this client's policy enables (`sql`, `http`)."""

    name: str
    title: str
    description: str
    input_schema: Dict[str, Any]
    annotations: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> "Tool":
        return cls(str(j.get("name", "")), str(j.get("title", "")),
                   str(j.get("description", "")), dict(j.get("input_schema") or {}),
                   dict(j.get("annotations") or {}))


@dataclass
class Approval:
    """A call held for a person: `state` is `pending`, `approved`, `denied`
    (or another the server names)."""

    id: str
    state: str
    action: str = ""
    client: str = ""
    description: str = ""
    arguments: Dict[str, Any] = field(default_factory=dict)
    decided_by: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> "Approval":
        return cls(id=str(j.get("id", "")), state=str(j.get("state", "")),
                   action=str(j.get("action", "")), client=str(j.get("client", "")),
                   description=str(j.get("description", "")),
                   arguments=dict(j.get("arguments") or {}), decided_by=j.get("decided_by"),
                   raw=dict(j))
