"""codecell: a Python client for codecell's HTTP API (`codecell serve`).

    import codecell
    with codecell.Client("http://127.0.0.1:8080") as cc:
        print(cc.run("print(6 * 7)").stdout)
        with cc.create_session() as s:
            s.execute("x = 6")
            print(s.execute("x * 7").text)          # 42

Sync (`Client`, on http.client) and async (`AsyncClient`, on asyncio
streams); the standard library only. The token comes from `token=` or
CODECELL_TOKEN.
"""
from ._common import __version__
from .aio import AsyncClient, AsyncFiles, AsyncSession, SessionStart
from .client import Client, Files, Session
from .errors import (APIError, ApprovalPending, BadRequest, CodecellError, Conflict,
                     ExecutionError, Forbidden, NotFound, PayloadTooLarge, PolicyForbidden,
                     PolicyRateLimited, PolicyRejected, PolicyTooLarge, RateLimited, ServerError,
                     StreamFailed, TransportError, Unauthorized)
from .types import (Approval, Execution, FileEntry, FileWritten, Output, Result, SessionInfo,
                    Tool)

__all__ = [
    "__version__", "Client", "Session", "Files", "AsyncClient", "AsyncSession", "AsyncFiles",
    "SessionStart", "Execution", "Result", "Output", "SessionInfo", "FileEntry", "FileWritten",
    "Tool", "Approval", "CodecellError", "TransportError", "ExecutionError", "APIError",
    "BadRequest", "Unauthorized", "Forbidden", "NotFound", "Conflict", "PayloadTooLarge",
    "RateLimited", "ServerError", "PolicyRejected", "PolicyForbidden", "PolicyTooLarge",
    "PolicyRateLimited", "ApprovalPending", "StreamFailed",
]
