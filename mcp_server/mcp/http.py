"""Streamable HTTP at /mcp of `semcat serve` (the plugin `mount_mcp` that mcp_server.http.server loads).

The MCP endpoint sits behind the server's `Guard`, so it has the same bearer tokens: no or an
unknown token gets 401 (with WWW-Authenticate) before anything else, and the Guard's Host / Origin
checks, caps and body limit (`MCP_BODY`, a JSON 413) come before the SDK reads anything; a GET
(an SSE stream, which in stateless mode never carries a message) is capped per token and ends
when idle (mcp_server.http.policy.Limits). A request whose JSON-RPC `id` is not a string or an
integer is answered with the JSON-RPC error -32600 (the SDK took it for a notification: 202). A `read` token may call every
read tool; its tools/list leaves out `annotate`, and a `tools/call` of it gets a tool result with
isError and code "PermissionDeniedError" saying which role it needs (`SemcatServer`), not an
HTTP 403, which MCP clients show only as "Server returned an error response". Transport:
stateless (pinning is by handle, so no tool needs a session), JSON responses, except an SSE stream
for a request that asks for progress or log notifications (`_Endpoint`); a request whose
`MCP-Protocol-Version` is 2026-07-28 is served by the SDK's per-request (handshake-free) entry,
older versions by `initialize` (the versions: `server.PROTOCOL_VERSIONS`, docs/mcp.md). DNS-rebinding
protection (Host / Origin checks) is set for the address the server binds: loopback names for a
loopback bind, the bound host otherwise, plus the configured names (`--allowed-host`,
`SEMCAT_ALLOWED_HOSTS`, `SEMCAT_MCP_ALLOWED_HOSTS`) and origins; this is the SDK's own check, behind
the Guard's (mcp_server.http.origin), which covers every route. While it runs, `semcat serve` names
itself in DATA_DIR/serve.json (`served.advertised`) for a `semcat mcp --data DATA_DIR`.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import orjson
from fastapi import FastAPI
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import Response
from starlette.routing import Route

from catalog_core.errors import ShuttingDownError
from mcp_server.http.asgi import error_response
from mcp_server.http.policy import MCP_BODY, declare
from mcp_server.mcp import notices
from mcp_server.mcp.served import advertised
from mcp_server.mcp.server import create_server
from mcp_server.mcp.stdio import prepare_first_sql

__all__ = ["mount_mcp", "security_for", "MCP_PATH"]

log = logging.getLogger("uvicorn.error")
MCP_PATH = "/mcp"
_PEEK_LIMIT = 4 * 1024 * 1024  # the SDK's own request body limit: a larger body is refused anyway
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def security_for(host: str, extra: str | None = None, origins: Sequence[str] = ()) -> TransportSecuritySettings:
    """Host/Origin checks for a server bound to `host`; `extra`: comma-separated configured names
    (default: SEMCAT_MCP_ALLOWED_HOSTS); `origins`: configured origins."""
    names = [h.strip() for h in (extra if extra is not None else os.environ.get("SEMCAT_MCP_ALLOWED_HOSTS", "")).split(",")
             if h.strip()]
    if host in _LOOPBACK or host.startswith("127."):
        hosts = ["127.0.0.1", "localhost", "[::1]", host if ":" not in host else f"[{host}]"]
    elif host in ("0.0.0.0", "::", ""):
        if not names:
            return TransportSecuritySettings(enable_dns_rebinding_protection=False)
        hosts = []
    else:
        hosts = [host if ":" not in host else f"[{host}]"]
    hosts += names
    allowed = sorted({h for base in hosts for h in (base, f"{base}:*")})
    allowed_origins = sorted({f"{scheme}://{h}" for h in allowed for scheme in ("http", "https")} | set(origins))
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=allowed,
                                     allowed_origins=allowed_origins)


def _bad_id(body: bytes) -> Response | None:
    """The JSON-RPC error -32600 for a message whose `id` is present but not a string or an
    integer (MCP: "MUST be a string or integer", never null); None for anything else, which the SDK
    parses and answers itself."""
    try:
        msg = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(msg, dict) or "id" not in msg:
        return None
    rid = msg["id"]
    if isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool)):
        return None
    err = {"jsonrpc": "2.0", "id": None, "error": {
        "code": -32600, "message": f"Invalid Request: 'id' must be a string or an integer, got "
                                   f"{type(rid).__name__ if rid is not None else 'null'}; "
                                   "a notification has no 'id' at all"}}
    return Response(orjson.dumps(err), status_code=400, media_type="application/json")


class _Endpoint:
    """The ASGI app at /mcp: the SDK's streamable HTTP handler (the Guard in front set the role).
    A POST that asks for notifications (`notices.wants_stream`: a progress token or a log level in
    its `_meta`) goes to `streaming`, which answers with an SSE stream that carries them before the
    result; every other request to `handler`, which answers with JSON."""

    def __init__(self) -> None:
        self.handler: StreamableHTTPASGIApp | None = None
        self.streaming: StreamableHTTPASGIApp | None = None

    async def __call__(self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        if self.handler is None:
            resp = error_response(ShuttingDownError("the MCP endpoint is not running; retry shortly"))
            return await resp(scope, receive, send)
        if scope.get("method") != "POST" or self.streaming is None:
            return await self.handler(scope, receive, send)
        body, replay = await _buffered(receive)
        bad = _bad_id(body) if body is not None else None  # a JSON-RPC id that is not a string or number
        if bad is not None:
            return await bad(scope, replay, send)
        chosen = self.streaming if body is not None and notices.wants_stream(body) else self.handler
        return await chosen(scope, replay, send)


async def _buffered(receive: Callable[..., Any]) -> tuple[bytes | None, Callable[..., Any]]:
    """The request body (None past _PEEK_LIMIT, or when the client left) and a `receive` that
    replays what was read, then goes on reading: the handler sees the request unchanged."""
    messages: list[dict[str, Any]] = []
    size, more = 0, True
    while more and size <= _PEEK_LIMIT:
        message = await receive()
        messages.append(message)
        if message.get("type") != "http.request":
            break
        size += len(message.get("body", b""))
        more = bool(message.get("more_body"))
    body = b"".join(m.get("body", b"") for m in messages if m.get("type") == "http.request")
    complete = not more and all(m.get("type") == "http.request" for m in messages)

    async def replay() -> Any:
        return messages.pop(0) if messages else await receive()

    return (body if complete else None), replay


def mount_mcp(app: FastAPI) -> contextlib.AbstractAsyncContextManager[None]:
    """Add /mcp to `app`; the returned context manager runs the MCP session manager for the
    app's lifetime. Options: `app.state.mcp_options` (keyword arguments of `create_server`)."""
    endpoint = declare(_Endpoint(), "read", body="json", max_bytes=MCP_BODY, stream_methods=frozenset({"GET"}))
    app.router.routes.append(Route(MCP_PATH, endpoint=endpoint, methods=["GET", "POST", "DELETE"]))

    @contextlib.asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        host = str(getattr(app.state, "bind_host", "127.0.0.1"))
        options = dict(getattr(app.state, "mcp_options", None) or {})
        server = create_server(app.state.catalog, **options)
        prepare_first_sql(app.state.catalog)  # the first run_sql does not build the snapshot's database
        names = ",".join(getattr(app.state, "allowed_hosts", None) or [])
        security = security_for(host, names, getattr(app.state, "allowed_origins", None) or ())
        if not security.enable_dns_rebinding_protection:
            log.warning("semcat: /mcp on wildcard address %s checks no Host header; set SEMCAT_MCP_ALLOWED_HOSTS "
                        "to the names clients use", host)
        server.streamable_http_app(stateless_http=True, json_response=True, transport_security=security, host=host)
        manager = server.session_manager
        # the same server answering as SSE, for the requests that asked for notifications
        streaming = StreamableHTTPSessionManager(app=server._lowlevel_server, stateless=True, json_response=False,
                                                 security_settings=security)
        port, data_dir = getattr(app.state, "bind_port", None), getattr(app.state.catalog, "data_dir", None)
        # `semcat serve` (which sets bind_port) names itself in DIR/serve.json for `semcat mcp --data DIR`
        named = (advertised(str(data_dir), host, int(port), tokens=bool(getattr(app.state, "tokens", None)))
                 if port and isinstance(data_dir, str) else contextlib.nullcontext())
        async with manager.run(), streaming.run():
            with named:
                endpoint.handler = StreamableHTTPASGIApp(manager)
                endpoint.streaming = StreamableHTTPASGIApp(streaming)
                try:
                    yield
                finally:
                    endpoint.handler = endpoint.streaming = None

    return lifespan()
