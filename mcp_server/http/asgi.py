"""The outer ASGI layer: JSON error bodies, bearer-token check, request size cap, and the fast
path for one-request commits (the hot path of many small writers)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

import orjson
from fastapi.responses import Response
from pydantic import ValidationError

from catalog_core.errors import AuthError, CatalogError, InvalidValueError
from catalog_core.remote.wire import CommitBody
from mcp_server.http.api import ApiContext, commit_write_set, dumps, json_response
from mcp_server.http.auth import Tokens

__all__ = ["Guard", "FastCommit", "OPEN_PATHS", "error_response", "internal_error_response",
           "validation_error_response", "principal_of"]

log = logging.getLogger("uvicorn.error")

# No token needed: liveness and the API description.
OPEN_PATHS = frozenset({"/healthz", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc",
                        "/iceberg/v1/oauth/tokens"})  # the Iceberg client-credentials grant checks its secret itself

def _is_ui(path: str) -> bool:
    """The web page (mcp_server.http.ui) checks its token itself, from a cookie a browser sends."""
    return path == "/ui" or path.startswith("/ui/")


FastRoute = Callable[[bytes, str], Awaitable[Response]]
# ASGI: a scope and its messages are open JSON-like dicts (the ASGI spec defines their keys)
Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


# ------------------------------------------------------------------ errors as JSON
def _error_body(err: CatalogError) -> bytes:
    try:
        return dumps(err.to_dict())
    except (TypeError, ValueError):  # odd details must not turn an error into a 500
        # ensure_ascii: even a lone surrogate in the message or details is escaped, never fatal
        return json.dumps({"error": type(err).__name__, "message": err.message,
                           "details": {k: str(v) for k, v in err.details.items()}},
                          separators=(",", ":"), ensure_ascii=True).encode()


def internal_error_response(exc: BaseException) -> Response:
    """A 500 for a bug: a normal JSON response (the connection stays usable), logged with its traceback."""
    log.error("unhandled error", exc_info=exc)
    return error_response(CatalogError(f"internal server error: {type(exc).__name__}: {exc}"), 500)


def error_response(err: CatalogError, status: int | None = None, headers: dict[str, str] | None = None) -> Response:
    """`{error, message, details}` with the error class's HTTP status."""
    return Response(_error_body(err), status_code=status or err.http_status, media_type="application/json",
                    headers=headers)


def validation_error_response(raw: Sequence[Any]) -> Response:
    """400 for a body that is not JSON, has unknown fields or wrong types, naming each problem."""
    errors = [{"loc": [str(x) for x in e.get("loc", ())], "msg": e.get("msg", ""), "type": e.get("type", "")}
              for e in raw]
    if any(e["type"] == "json_invalid" for e in errors):
        msg = "request body is not valid JSON: " + "; ".join(e["msg"] for e in errors)
    else:
        parts = [f"{'.'.join(x for x in e['loc'] if x != 'body') or 'body'}: {e['msg']}" for e in errors[:5]]
        more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
        msg = "invalid request: " + "; ".join(parts) + more
    return error_response(InvalidValueError(msg, errors=errors), 400)


# ------------------------------------------------------------------ fast path
class FastCommit:
    """POST /v1/commit without FastAPI's routing, dependency solving and request objects: the
    same body model (extra="forbid"), the same engine call, the same errors. Its own thread pool
    (plain `run_in_executor`) skips anyio's per-call bookkeeping; enough threads that concurrent
    commits reach the engine together and share a group commit."""

    def __init__(self, ctx: ApiContext, threads: int = 64) -> None:
        self.ctx = ctx
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="semcat-commit")

    async def __call__(self, body: bytes, role: str) -> Response:
        try:
            Tokens.require(role, "write", "commit")
            req = CommitBody.model_validate_json(body)
            loop = asyncio.get_running_loop()
            return json_response(await loop.run_in_executor(self.pool, commit_write_set, self.ctx, req))
        except ValidationError as exc:
            return validation_error_response(exc.errors())
        except CatalogError as exc:
            return error_response(exc)
        except Exception as exc:
            return internal_error_response(exc)


# ------------------------------------------------------------------ auth + body size
def principal_of(tokens: Tokens, authorization: str | None) -> str | None:
    """Who sent a request: a digest of its bearer token (None when auth is off). Transaction
    sessions are bound to it, so only the token that began a session can use or end it."""
    if not tokens or not authorization:
        return None
    return hashlib.sha256(authorization.partition(" ")[2].strip().encode("latin-1")).hexdigest()


def _json_content(scope: Scope) -> bool:
    """FastAPI parses a body as JSON when it has no content type or a JSON one."""
    ctype = _header(scope, b"content-type")
    return ctype is None or "json" in ctype.lower()


def _not_json(body: bytes) -> Response | None:
    """A 400 for a body that is not strict JSON: invalid UTF-8 or a lone surrogate escape
    (`"\\ud800"`), which the stdlib parser FastAPI uses would let through to the engine."""
    try:
        orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        err = InvalidValueError(f"request body is not valid JSON: {exc}; send UTF-8 JSON text without "
                                "unpaired surrogates", errors=[{"loc": ["body"], "msg": str(exc), "type": "json_invalid"}])
        return error_response(err, 400)
    return None


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


async def _send(send: Send, resp: Response) -> None:
    await send({"type": "http.response.start", "status": resp.status_code, "headers": resp.raw_headers})
    await send({"type": "http.response.body", "body": resp.body})


class Guard:
    """Checks the bearer token (the role goes to scope["state"]["role"]) and caps the request
    body, by Content-Length up front and by counting streamed chunks, before the app sees it."""

    def __init__(self, app: Any, tokens: Tokens, max_bytes: int,
                 fast: dict[tuple[str, str], FastRoute] | None = None) -> None:
        self.app, self.tokens, self.max_bytes, self.fast = app, tokens, max_bytes, fast or {}

    def _too_large(self, size: str) -> Response:
        err = InvalidValueError(f"request body is {size} bytes; this server accepts at most {self.max_bytes} "
                                "(split the write set into several transactions or raise --max-request-mb)",
                                limit=self.max_bytes)
        return error_response(err, 413, headers={"Connection": "close"})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._other(scope, receive, send)
            return
        started = False

        async def tracked(msg: Message) -> None:
            nonlocal started
            started = started or msg["type"] == "http.response.start"
            await send(msg)

        try:
            await self._http(scope, receive, tracked)
        except Exception as exc:
            # Answer a bug with a normal 500 instead of letting it reach the server, which would
            # reset the keep-alive connection and fail the client's next, unrelated request.
            if started:
                log.error("error after the response started", exc_info=exc)
                return  # the response is cut short; the server closes this connection
            await _send(tracked, internal_error_response(exc))

    async def _other(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket" and self.tokens:
            try:
                scope.setdefault("state", {})["role"] = self.tokens.role_of(_header(scope, b"authorization"))
            except AuthError:
                await send({"type": "websocket.close", "code": 1008})  # policy violation
                return
        await self.app(scope, receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        role = "write"
        if scope["path"] not in OPEN_PATHS and not _is_ui(scope["path"]):
            authorization = _header(scope, b"authorization")
            try:
                role = self.tokens.role_of(authorization)
            except AuthError as exc:
                return await _send(send, error_response(exc, headers={"WWW-Authenticate": "Bearer"}))
            state = scope.setdefault("state", {})
            state["role"], state["principal"] = role, principal_of(self.tokens, authorization)
        length = _header(scope, b"content-length")
        if length is not None:
            if not (length.strip().isascii() and length.strip().isdigit()):
                return await _send(send, error_response(InvalidValueError(f"bad Content-Length {length!r}")))
            if int(length) > self.max_bytes:
                return await _send(send, self._too_large(length.strip()))
        body = await self._read_body(receive)
        if body is None:
            return None  # client went away
        if isinstance(body, Response):
            return await _send(send, body)
        fast = self.fast.get((scope["method"], scope["path"]))
        if fast is not None:
            return await _send(send, await fast(body, role))
        if body and scope["path"].startswith("/v1/") and _json_content(scope):
            bad = _not_json(body)
            if bad is not None:
                return await _send(send, bad)
        first: Message | None = {"type": "http.request", "body": body, "more_body": False}

        async def replay() -> Message:
            nonlocal first
            if first is not None:
                msg, first = first, None
                return msg
            return cast(Message, await receive())  # later: http.disconnect, which streaming responses wait for

        await self.app(scope, replay, send)

    async def _read_body(self, receive: Receive) -> bytes | Response | None:
        chunks, total, more = [], 0, True
        while more:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                return None
            chunk = msg.get("body", b"")
            total += len(chunk)
            if total > self.max_bytes:
                return self._too_large(f"more than {self.max_bytes}")
            chunks.append(chunk)
            more = msg.get("more_body", False)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
