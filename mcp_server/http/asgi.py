"""The outer ASGI layer: JSON error bodies, and the `Guard` every request passes before any route
sees it, in this order (issue 35): Host allow-list (421) and Origin check (403, mcp_server.http.origin);
the route's declared policy (mcp_server.http.policy): authentication (401) and role (403); caps per
principal and in total on open requests and event streams (429 + Retry-After); the route's body
limit, by Content-Length up front (413), the principal's budget of body bytes held in memory
(429, issue 48) and the body's content type (415), then the body read under that limit (413) and,
for JSON, parsed once with a bound on nesting (400, mcp_server.http.jsonsafe). Nothing of a body is read before all of these passed. Also the fast path
for one-request commits (the hot path of many small writers)."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import orjson
from fastapi.responses import Response
from pydantic import ValidationError
from starlette.requests import cookie_parser

from catalog_core.errors import AuthError, CatalogError, InvalidValueError, PermissionDeniedError
from catalog_core.remote.wire import CommitBody
from mcp_server.http.api import ApiContext, commit_write_set, dumps, json_response
from mcp_server.http.auth import Principal, Tokens, set_state
from mcp_server.http.jsonsafe import check_depth, depth_error, might_be_deep
from mcp_server.http.oauth import METADATA_PATH, challenge_headers
from mcp_server.http.origin import SameOrigin
from mcp_server.http.policy import ANONYMOUS, Cap, Limits, Policy, iter_routes, policy_of

__all__ = ["Guard", "FastCommit", "OPEN_PATHS", "ErrorBodyHook", "error_response", "internal_error_response",
           "validation_error_response", "MisdirectedRequestError", "CrossOriginError",
           "UnsupportedMediaTypeError", "UI_COOKIE"]

log = logging.getLogger("uvicorn.error")

# No token needed: liveness, the API description (FastAPI's own routes, declared "open" by create_app), the
# OAuth protected resource metadata (RFC 9728) and the Iceberg client-credentials grant (it checks its secret).
OPEN_PATHS = frozenset({"/healthz", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc", METADATA_PATH,
                        "/iceberg/v1/oauth/tokens"})
UI_COOKIE = "semcat_token"  # the /ui session cookie: the bearer token a browser logged in with


def _is_ui(path: str) -> bool:
    return path == "/ui" or path.startswith("/ui/")


class MisdirectedRequestError(CatalogError):
    """The Host header names no address or configured name of this server (DNS rebinding)."""

    http_status = 421


class CrossOriginError(PermissionDeniedError):
    """A browser page of another origin (another site, or another port of this host)."""


class UnsupportedMediaTypeError(InvalidValueError):
    """The body's Content-Type is not the one the route takes (JSON, or a form for /ui)."""

    http_status = 415


FastRoute = Callable[[bytes, str, dict[str, Any]], Awaitable[Response]]  # (body, role, scope["state"])
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
    """`{error, message, details}` with the error class's HTTP status; a 429 says when to retry."""
    status = status or err.http_status
    if status == 429:
        retry = err.details.get("retry_after_s", 1)
        headers = {"Retry-After": str(max(1, int(retry) if isinstance(retry, (int, float)) else 1)), **(headers or {})}
    return Response(_error_body(err), status_code=status, media_type="application/json", headers=headers)


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

    async def __call__(self, body: bytes, role: str, state: dict[str, Any]) -> Response:
        try:
            Tokens.require(role, "write", "commit")
            req = CommitBody.model_validate_json(body)
            loop = asyncio.get_running_loop()
            return json_response(await loop.run_in_executor(self.pool, commit_write_set, self.ctx, req, state))
        except ValidationError as exc:
            return validation_error_response(exc.errors())
        except CatalogError as exc:
            return error_response(exc)
        except Exception as exc:
            return internal_error_response(exc)


# ------------------------------------------------------------------ auth + body size
def _media_type(ctype: str | None) -> str:
    return (ctype or "").split(";", 1)[0].strip().lower()


def _is_json(ctype: str | None) -> bool:
    media = _media_type(ctype)
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def _not_json(body: bytes) -> Response | None:
    """A 400 for a body that is not strict JSON: invalid UTF-8 or a lone surrogate escape
    (`"\\ud800"`), which the stdlib parser FastAPI uses would let through to the engine, or one
    nested deeper than `jsonsafe.MAX_DEPTH` (the parsers and the code after them recurse)."""
    try:
        check_depth(orjson.loads(body), body)  # deep nesting: a 400 before anything recurses through it
    except InvalidValueError as exc:
        return error_response(exc, 400)
    except orjson.JSONDecodeError as exc:
        if "depth" in str(exc):
            return error_response(depth_error(), 400)
        err = InvalidValueError(f"request body is not valid JSON: {exc}; send UTF-8 JSON text without "
                                "unpaired surrogates", errors=[{"loc": ["body"], "msg": str(exc), "type": "json_invalid"}])
        return error_response(err, 400)
    return None


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def _headers(scope: Scope) -> dict[bytes, str]:
    """The request headers by (lowercase) name, the first of repeated ones."""
    out: dict[bytes, str] = {}
    for key, value in scope.get("headers", ()):
        out.setdefault(bytes(key), bytes(value).decode("latin-1"))
    return out


ErrorBodyHook = Callable[[str, int, bytes], "bytes | None"]
"""(path, status, the JSON error body) -> the body the clients of a sub-API expect instead (None: keep it)."""


def _rebodied(send: Send, path: str, hook: ErrorBodyHook) -> Send:
    """`send` with the body of every one-message error response (status >= 400) passed through `hook`:
    the Guard's refusals and the app's own errors alike get the sub-API's error shape."""
    held: Message | None = None

    async def wrapped(msg: Message) -> None:
        nonlocal held
        if msg["type"] == "http.response.start" and int(msg.get("status", 200)) >= 400:
            held = msg
            return
        if held is not None and msg["type"] == "http.response.body":
            start, held = held, None
            if not msg.get("more_body", False):
                body = hook(path, int(start["status"]), bytes(msg.get("body", b"")))
                if body is not None:
                    headers = [(k, v) for k, v in start.get("headers", ()) if bytes(k).lower() != b"content-length"]
                    start = {**start, "headers": [*headers, (b"content-length", str(len(body)).encode())]}
                    msg = {**msg, "body": body}
            await send(start)
        await send(msg)
    return wrapped


async def _send(send: Send, resp: Response) -> None:
    await send({"type": "http.response.start", "status": resp.status_code, "headers": resp.raw_headers})
    await send({"type": "http.response.body", "body": resp.body})


# Routes nobody declared (a plugin's): any valid token, no body to speak of. The route table test
# (tests/security/test_roles_and_caps.py) fails for them, so this is a fallback, not a policy.
_UNDECLARED = Policy("read", body="none")
_UNDECLARED_UI = Policy("read", auth="cookie", body="none")
_SSE_COMMENT = b":"


class _Routes:
    """The declared policy of each route of the app, found by path and method without running
    the router (static paths by dict lookup, templated ones by their regex)."""

    def __init__(self, routes: list[Any]) -> None:
        self.size = len(routes)
        self.static: dict[str, list[tuple[frozenset[str] | None, Policy | None]]] = {}
        self.dynamic: list[tuple[Any, frozenset[str] | None, Policy | None, Any]] = []
        for route in iter_routes(routes):
            methods = getattr(route, "methods", None)
            methods = frozenset(methods) | ({"HEAD"} if "GET" in methods else set()) if methods else None
            policy = policy_of(route)
            path = getattr(route, "path", None)
            regex = getattr(route, "path_regex", None)
            if policy is None:
                log.warning("semcat: route %s declares no role (mcp_server.http.policy.requires); it needs a "
                            "valid token and takes no body", path)
            if isinstance(path, str) and "{" not in path and getattr(route, "routes", None) is None:
                self.static.setdefault(path, []).append((methods, policy))
            elif regex is not None:
                self.dynamic.append((regex, methods, policy, route))

    def find(self, path: str, method: str) -> Policy:
        partial: Policy | None = None
        for methods, policy in self.static.get(path, ()):
            if methods is None or method in methods:
                return policy or _UNDECLARED
            partial = partial or policy or _UNDECLARED
        for regex, methods, policy, _route in self.dynamic:
            if regex.match(path):
                if methods is None or method in methods:
                    return policy or _UNDECLARED
                partial = partial or policy or _UNDECLARED
        if partial is not None:  # the app answers 405: authenticate as the route does, read no body
            return Policy(partial.role, auth=partial.auth, body="none")
        return _UNDECLARED_UI if _is_ui(path) else _UNDECLARED


class Guard:
    """Every request passes it before the app; see the module docstring for the order of checks.
    Sets scope["state"] (`mcp_server.http.auth.set_state`): `role` ("read" | "write"; None on a /ui page
    without a valid cookie), `principal` (the principal's name: transaction sessions are bound to it,
    so only the principal that began a session can use or end it) and `source`. Tokens are static or
    OAuth JWTs (`Tokens.authenticate`). `allowed_hosts` / `allowed_origins`: configured names
    (mcp_server.http.origin); `limits`: the caps (mcp_server.http.policy.Limits); `error_bodies`: path
    prefix -> ErrorBodyHook, the error shape of a sub-API (/iceberg answers the Iceberg ErrorModel)."""

    def __init__(self, app: Any, tokens: Tokens, max_bytes: int,
                 fast: dict[tuple[str, str], FastRoute] | None = None, limits: Limits | None = None,
                 allowed_hosts: Sequence[str] = (), allowed_origins: Sequence[str] = (),
                 bind_host: Callable[[], str | None] | None = None,
                 error_bodies: Mapping[str, ErrorBodyHook] | None = None) -> None:
        self.app, self.tokens, self.max_bytes, self.fast = app, tokens, max_bytes, fast or {}
        self.error_bodies = dict(error_bodies or {})
        self.limits = Limits.of(limits)
        self.requests = Cap("open requests", *self.limits.requests, 1.0,
                            "wait for some of this token's requests to finish")
        self.streams = Cap("event streams (GET /mcp)", *self.limits.streams, min(self.limits.stream_idle_s, 30.0),
                           f"close some; an idle stream ends after {self.limits.stream_idle_s:g} s")
        per, total = self.limits.body_bytes
        per = max(per, max_bytes)  # every body the server takes can be sent, one at a time
        self.bodies = Cap("bytes of request bodies in memory", per, max(total, per), 1.0,
                          "wait for some of this token's large requests to finish, or send smaller bodies")
        self._allowed_hosts, self._allowed_origins = list(allowed_hosts), list(allowed_origins)
        self._bind_host = bind_host or (lambda: None)
        self._same: SameOrigin | None = None
        self._routes: _Routes | None = None

    # ---------------------------------------------------------------- pieces
    def same_origin(self) -> SameOrigin:
        if self._same is None:  # lazily: the bind address is known once the server runs
            self._same = SameOrigin(self._bind_host(), self._allowed_hosts, self._allowed_origins)
        return self._same

    def policy(self, scope: Scope) -> Policy:
        app = scope.get("app")
        routes = getattr(getattr(app, "router", None), "routes", None)
        if routes is None:
            return _UNDECLARED
        if self._routes is None or self._routes.size != len(routes):
            self._routes = _Routes(routes)
        return self._routes.find(scope["path"], scope["method"])

    async def authenticate(self, authorization: str | None) -> Principal:
        """The principal of an Authorization header value (`Tokens.authenticate`: a static token or an
        OAuth access token); raises AuthError (401), PermissionDeniedError (403, a JWT without a semcat
        scope) or the issuer's unavailability (503). The one place a token is checked."""
        return await self.tokens.authenticate(authorization)

    def _too_large(self, size: str, limit: int, path: str) -> Response:
        hint = ("split the write set into several transactions or raise --max-request-mb" if limit == self.max_bytes
                else f"{path} takes at most {limit} bytes")
        err = InvalidValueError(f"request body is {size} bytes; this server accepts at most {limit} ({hint})",
                                limit=limit)
        return error_response(err, 413, headers={"Connection": "close"})

    def _same_origin_error(self, scope: Scope, headers: dict[bytes, str], policy: Policy | None) -> Response | None:
        same = self.same_origin()
        host = headers.get(b"host")
        if not same.host_ok(host, scope):
            names = ", ".join(same.describe(scope)[:8])
            return error_response(MisdirectedRequestError(
                f"Host {host!r} is not a name this server answers to ({names}); use one of those, or start "
                "`semcat serve` with --allowed-host NAME (DNS-rebinding protection)", host=host))
        origin = headers.get(b"origin")
        if origin is not None:
            if not same.origin_ok(origin, host, scope):
                return error_response(CrossOriginError(
                    f"Origin {origin!r} may not use this server: only pages of this server's own origin may; "
                    "allow another with `semcat serve --allowed-origin URL`", origin=origin))
            return None
        site = headers.get(b"sec-fetch-site")
        if site in ("cross-site", "same-site"):
            # a browser request from another origin that carries no Origin header: a GET from an
            # <img>, <script> or a link. Only a top-level navigation to a /ui page is served.
            navigate = headers.get(b"sec-fetch-mode") == "navigate" and scope["method"] in ("GET", "HEAD")
            if not (navigate and policy is not None and policy.auth == "cookie"):
                return error_response(CrossOriginError(
                    f"a request from another site (Sec-Fetch-Site: {site}) may not use this server; "
                    "open the page of this server itself"))
        return None

    # ---------------------------------------------------------------- ASGI
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._other(scope, receive, send)
            return
        started = False

        async def tracked(msg: Message) -> None:
            nonlocal started
            started = started or msg["type"] == "http.response.start"
            await send(msg)

        path = scope.get("path", "")
        hook = next((h for p, h in self.error_bodies.items() if path.startswith(p) or path == p.rstrip("/")), None)
        out: Send = tracked if hook is None else _rebodied(tracked, path, hook)
        try:
            await self._http(scope, receive, out)
        except Exception as exc:
            # Answer a bug with a normal 500 instead of letting it reach the server, which would
            # reset the keep-alive connection and fail the client's next, unrelated request.
            if started:
                log.error("error after the response started", exc_info=exc)
                return  # the response is cut short; the server closes this connection
            await _send(out, internal_error_response(exc))

    async def _other(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            headers = _headers(scope)
            same = self.same_origin()
            origin = headers.get(b"origin")
            host = headers.get(b"host")
            if not same.host_ok(host, scope) or (origin is not None and not same.origin_ok(origin, host, scope)):
                await send({"type": "websocket.close", "code": 1008})  # policy violation
                return
            if self.tokens:
                try:
                    set_state(scope, await self.authenticate(headers.get(b"authorization")))
                except CatalogError:
                    await send({"type": "websocket.close", "code": 1008})
                    return
        await self.app(scope, receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = _headers(scope)
        policy = self.policy(scope)
        refused = self._same_origin_error(scope, headers, policy)
        if refused is not None:
            return await _send(send, refused)
        # ---- who, and may they
        state = scope.setdefault("state", {})
        role: str | None = "write"
        principal: str | None = None
        if policy.auth == "cookie":  # a /ui page: the login cookie, or an Authorization header as on /v1
            token = cookie_parser(headers.get(b"cookie", "")).get(UI_COOKIE) if b"cookie" in headers else None
            try:
                who = await self.authenticate(headers.get(b"authorization") or (f"Bearer {token}" if token else None))
                set_state(scope, who)
                role, principal = who.role, who.name
            except CatalogError:
                role = None
                state["role"], state["principal"] = None, None
            if role is None and policy.role != "open" and scope["method"] not in ("GET", "HEAD"):
                err = AuthError("log in first: this page needs a token (GET /ui/login)")
                return await _send(send, error_response(err, headers=challenge_headers(self.tokens, scope, err)))
        elif policy.role != "open":
            try:
                who = await self.authenticate(headers.get(b"authorization"))
            except CatalogError as exc:  # 401, 403 insufficient_scope, 503 issuer unreachable
                return await _send(send, error_response(exc, headers=challenge_headers(self.tokens, scope, exc)))
            set_state(scope, who)
            role, principal = who.role, who.name
        if policy.role == "write" and role is not None and role != "write":
            action = next((p for p in reversed(scope["path"].split("/")) if p and not p.startswith("{")), "")
            return await _send(send, error_response(PermissionDeniedError(
                f"a {role!r} token cannot {action} ({scope['method']} {scope['path']}); use a token with role "
                "'write'", role=role, needed="write")))
        # ---- caps, then the body's size and type, before reading it
        key = principal or ANONYMOUS
        stream = scope["method"] in policy.stream_methods
        try:
            self.requests.acquire(key)
        except CatalogError as exc:
            return await _send(send, error_response(exc))
        try:
            if stream:
                try:
                    self.streams.acquire(key)
                except CatalogError as exc:
                    return await _send(send, error_response(exc))
            held = [0]  # bytes of this request's body counted against the token's budget
            try:
                await self._checked(scope, receive, send, headers, policy, role, stream, key, held)
            finally:
                self.bodies.release(key, held[0])
                if stream:
                    self.streams.release(key)
        finally:
            self.requests.release(key)

    async def _checked(self, scope: Scope, receive: Receive, send: Send, headers: dict[bytes, str], policy: Policy,
                       role: str | None, stream: bool, key: str, held: list[int]) -> None:
        limit = policy.limit(self.max_bytes)
        length = headers.get(b"content-length")
        if length is not None:
            refused = self._reserve(length, limit, scope["path"], key, held)
            if refused is not None:
                return await _send(send, refused)
        has_body = (length is not None and int(length) > 0) or b"transfer-encoding" in headers
        ctype = headers.get(b"content-type")
        if has_body and policy.body == "json" and not _is_json(ctype):
            return await _send(send, error_response(UnsupportedMediaTypeError(
                f"{scope['path']} takes a JSON body: send Content-Type: application/json (got {ctype!r})",
                content_type=ctype)))
        if has_body and policy.body == "form" and _media_type(ctype) != "application/x-www-form-urlencoded":
            return await _send(send, error_response(UnsupportedMediaTypeError(
                f"{scope['path']} takes a form: send Content-Type: application/x-www-form-urlencoded (got {ctype!r})",
                content_type=ctype)))
        body = await self._read_body(receive, limit, scope["path"], key, held, length is None)
        if body is None:
            return None  # client went away
        if isinstance(body, Response):
            return await _send(send, body)
        fast = self.fast.get((scope["method"], scope["path"]))
        if fast is not None and might_be_deep(body):  # a small write set skips the second parse
            bad = _not_json(body)
            if bad is not None:
                return await _send(send, bad)
        if fast is not None:
            return await _send(send, await fast(body, role or "read", scope.get("state") or {}))
        if body and policy.body == "json":
            bad = _not_json(body)
            if bad is not None:
                return await _send(send, bad)
        first: Message | None = {"type": "http.request", "body": body, "more_body": False}

        async def replay() -> Message:
            nonlocal first
            if first is not None:
                msg, first = first, None
                return msg
            return await receive()  # later: http.disconnect, which streaming responses wait for

        if stream:
            return await self._idle_limited(scope, replay, send)
        await self.app(scope, replay, send)

    def _reserve(self, length: str, limit: int, path: str, key: str, held: list[int]) -> Response | None:
        """Check a Content-Length against the route's limit and take its bytes from the token's body
        budget (they are held until the request ends) before any is read; the refusal, or None."""
        if not (length.strip().isascii() and length.strip().isdigit()):
            return error_response(InvalidValueError(f"bad Content-Length {length!r}"))
        if int(length) > limit:
            return self._too_large(length.strip(), limit, path)
        try:
            self.bodies.acquire(key, int(length))
        except CatalogError as exc:
            return error_response(exc, headers={"Connection": "close"})
        held[0] = int(length)
        return None

    async def _idle_limited(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run a streaming response that ends once it sent nothing but SSE comments (pings) for
        `stream_idle_s`: in stateless mode a GET /mcp stream never carries a message."""
        idle_s = self.limits.stream_idle_s
        last = time.monotonic()
        started = ended = False

        async def watched(msg: Message) -> None:
            nonlocal last, started, ended
            if msg["type"] == "http.response.start":
                started = True
            elif msg["type"] == "http.response.body":
                chunk = bytes(msg.get("body", b""))
                if any(line and not line.startswith(_SSE_COMMENT) for line in chunk.splitlines()):
                    last = time.monotonic()
                ended = not msg.get("more_body", False)
            await send(msg)

        async with anyio.create_task_group() as tg:
            async def watchdog() -> None:
                while True:
                    left = last + idle_s - time.monotonic()
                    if left <= 0:
                        tg.cancel_scope.cancel()
                        return
                    await anyio.sleep(left)

            tg.start_soon(watchdog)
            await self.app(scope, receive, watched)
            tg.cancel_scope.cancel()
        if started and not ended:
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _read_body(self, receive: Receive, limit: int, path: str, key: str, held: list[int],
                         count: bool) -> bytes | Response | None:
        """The body, read under `limit`; with `count` (no Content-Length reserved it up front) its
        bytes are taken from the token's body budget as they arrive (`held` says how many)."""
        chunks, total, more = [], 0, True
        while more:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                return None
            chunk = msg.get("body", b"")
            total += len(chunk)
            if total > limit:
                return self._too_large(f"more than {limit}", limit, path)
            if count and chunk:
                try:
                    self.bodies.acquire(key, len(chunk))
                except CatalogError as exc:
                    return error_response(exc, headers={"Connection": "close"})
                held[0] += len(chunk)
            chunks.append(chunk)
            more = msg.get("more_body", False)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
