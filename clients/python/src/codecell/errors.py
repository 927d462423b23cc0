"""Exceptions.

Two kinds, kept apart on purpose: an `APIError` is the server refusing or
failing a call (an HTTP status and a stable `code`), raised by the call; an
`ExecutionError` is the code you ran raising, which is a normal outcome of
an execution: it is on the result (`Execution.error`), raised only when you
ask (`Execution.raise_for_error()`).
"""
from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Optional, Type

__all__ = [
    "CodecellError", "TransportError", "ExecutionError", "APIError", "BadRequest",
    "Unauthorized", "Forbidden", "NotFound", "Conflict", "PayloadTooLarge", "RateLimited",
    "ServerError", "PolicyRejected", "PolicyForbidden", "PolicyTooLarge", "PolicyRateLimited",
    "ApprovalPending", "StreamFailed",
]


class CodecellError(Exception):
    """The base of every exception this package raises."""


class TransportError(CodecellError):
    """The server could not be reached, or its answer was not HTTP/JSON that
    this client understands (a proxy's page, a cut connection)."""


class ExecutionError(CodecellError):
    """An error raised by the executed code: `name` (`ZeroDivisionError`),
    `value` (its message) and the `traceback` text as the kernel printed it."""

    def __init__(self, name: str, value: str, traceback: str) -> None:
        super().__init__("%s: %s" % (name, value) if value else name)
        self.name = name
        self.value = value
        self.traceback = traceback

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> "ExecutionError":
        return cls(str(j.get("name") or "Error"), str(j.get("value") or ""),
                   str(j.get("traceback") or ""))


class APIError(CodecellError):
    """The server answered a call with an error: `status` (HTTP), `code`
    (stable, e.g. `session_not_found`), `message` (says what to do) and
    `body` (the decoded JSON answer, or None)."""

    def __init__(self, status: int, code: str, message: str, body: Any = None) -> None:
        super().__init__("%s (HTTP %d %s)" % (message, status, code))
        self.status = status
        self.code = code
        self.message = message
        self.body = body


class BadRequest(APIError):
    """400: the request was malformed or a value was out of range."""


class Unauthorized(APIError):
    """401: no token or a wrong one (pass `token=` or set CODECELL_TOKEN)."""


class Forbidden(APIError):
    """403: refused (a policy rule, an Origin or Host the server refuses)."""


class NotFound(APIError):
    """404: no such session, file, tool or approval."""


class Conflict(APIError):
    """409: the target is in a state that forbids the call (a directory, a
    session restarting, an approval already decided)."""


class PayloadTooLarge(APIError):
    """413: a body, file or code over a limit."""


class RateLimited(APIError):
    """429: too many sessions, executions or calls."""


class ServerError(APIError):
    """5xx: the server failed or is shutting down."""


class PolicyRejected(APIError):
    """The client's policy refused the call: `rule` names the rule
    (`limits.memory`, `max_file`, `tools`, `approval`). Raised as one of
    PolicyForbidden (403), PolicyTooLarge (413) or PolicyRateLimited (429),
    so `except PolicyRejected` catches them all and `except RateLimited`
    catches both kinds of 429."""

    def __init__(self, status: int, code: str, message: str, body: Any = None,
                 rule: Optional[str] = None) -> None:
        super().__init__(status, code, message, body)
        self.rule = rule


class PolicyForbidden(PolicyRejected, Forbidden):
    """403 from the policy."""


class PolicyTooLarge(PolicyRejected, PayloadTooLarge):
    """413 from the policy (`max_file`)."""


class PolicyRateLimited(PolicyRejected, RateLimited):
    """429 from the policy (`rate`, `max_sessions`, `max_executions`, too
    many calls held for approval)."""


class ApprovalPending(APIError):
    """202: the policy holds the call for a person's approval (only when the
    client asked not to wait: `respond_async=True`). Once approved (see
    `Client.wait_for_approval`), make the same call again with
    `approval_id=e.approval_id`."""

    def __init__(self, status: int, code: str, message: str, body: Any = None,
                 approval_id: str = "") -> None:
        super().__init__(status, code, message, body)
        self.approval_id = approval_id


class StreamFailed(APIError):
    """A streamed execution ended without a result: the session was deleted
    while the call waited, the server is stopping, or the result was too
    large for the stream (`code`, `message`; `exec_status` when known)."""

    def __init__(self, status: int, code: str, message: str, body: Any = None,
                 exec_status: Optional[str] = None) -> None:
        super().__init__(status, code, message, body)
        self.exec_status = exec_status


_BY_STATUS: Dict[int, Type[APIError]] = {
    400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 409: Conflict,
    413: PayloadTooLarge, 429: RateLimited,
}
_POLICY_BY_STATUS: Dict[int, Type[PolicyRejected]] = {
    403: PolicyForbidden, 413: PolicyTooLarge, 429: PolicyRateLimited,
}


def error_from_response(status: int, data: bytes) -> APIError:
    """The exception for an answer whose status is not a success. The
    server's errors are `{"error": {"code", "message"}}`; a policy refusal
    of code is a result object with `status: "rejected"` and `rule`."""
    try:
        body = json.loads(data.decode("utf-8")) if data else None
    except (UnicodeDecodeError, ValueError):
        body = None
    code, message, rule = "http_%d" % status, "", None
    if isinstance(body, dict):
        err = body.get("error")
        if body.get("status") == "rejected" and isinstance(err, dict):
            code, message, rule = "rejected", str(err.get("value") or ""), body.get("rule")
        elif isinstance(err, dict):
            code, message = str(err.get("code") or code), str(err.get("message") or "")
        if status == 202 and body.get("status") == "pending":
            return ApprovalPending(status, "approval_pending", str(body.get("message") or ""),
                                   body, approval_id=str(body.get("approval_id") or ""))
    if not message:
        snippet = data[:200].decode("utf-8", "replace").strip()
        message = "the server answered HTTP %d%s" % (status, (": " + snippet) if snippet else "")
    if code == "rejected" and status in _POLICY_BY_STATUS:
        if rule is None and "rule '" in message:
            rule = message.split("rule '", 1)[1].split("'", 1)[0]
        return _POLICY_BY_STATUS[status](status, code, message, body, rule=rule)
    cls = _BY_STATUS.get(status, ServerError if status >= 500 else APIError)
    return cls(status, code, message, body)
