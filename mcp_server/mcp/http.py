"""Streamable HTTP at /mcp of `semcat serve` (the plugin `mount_mcp` that mcp_server.http.server loads).

The MCP endpoint sits behind the server's `Guard`, so it has the same bearer tokens: no or an
unknown token gets 401 before anything else; a `read` token may call every read tool, and a
`tools/call` of `annotate` with a `read` token gets 403 (checked on the JSON-RPC body here, and
again inside the tool). Transport: stateless (MCP 2026-07-28 is sessionless; pinning is by
handle), JSON responses. DNS-rebinding protection (Host / Origin checks) is set for the address
the server binds: loopback names for a loopback bind, the bound host otherwise, plus the names in
`SEMCAT_MCP_ALLOWED_HOSTS` (comma-separated `host` or `host:port`); a wildcard bind (0.0.0.0, ::)
without that variable checks no Host (tokens are mandatory there).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import FastAPI
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.routing import Route

from catalog_core.errors import PermissionDeniedError, ShuttingDownError
from mcp_server.http.asgi import error_response
from mcp_server.mcp.server import WRITE_TOOLS, create_server

__all__ = ["mount_mcp", "security_for", "MCP_PATH"]

log = logging.getLogger("uvicorn.error")
MCP_PATH = "/mcp"
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def security_for(host: str, extra: str | None = None) -> TransportSecuritySettings:
    """Host/Origin checks for a server bound to `host`."""
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
    origins = sorted({f"{scheme}://{h}" for h in allowed for scheme in ("http", "https")})
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=allowed,
                                     allowed_origins=origins)


def _write_calls(body: bytes) -> list[str]:
    """Names of write tools that a JSON-RPC body (one message or a batch) calls."""
    try:
        msg = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return []
    out = []
    for m in msg if isinstance(msg, list) else [msg]:
        if isinstance(m, dict) and m.get("method") == "tools/call":
            name = (m.get("params") or {}).get("name") if isinstance(m.get("params"), dict) else None
            if name in WRITE_TOOLS:
                out.append(str(name))
    return out


class _Endpoint:
    """The ASGI app at /mcp: role check for write tools, then the SDK's streamable HTTP handler."""

    def __init__(self) -> None:
        self.handler: StreamableHTTPASGIApp | None = None

    async def __call__(self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        if self.handler is None:
            resp = error_response(ShuttingDownError("the MCP endpoint is not running; retry shortly"))
            return await resp(scope, receive, send)
        role = str((scope.get("state") or {}).get("role") or "write")
        if scope.get("method") == "POST" and role != "write":
            chunks, more = [], True
            while more:
                msg = await receive()
                if msg["type"] != "http.request":
                    return None
                chunks.append(msg.get("body", b""))
                more = msg.get("more_body", False)
            body = b"".join(chunks)
            denied = _write_calls(body)
            if denied:
                err = PermissionDeniedError(f"a {role!r} token cannot call {denied[0]}; use a token with role 'write'",
                                            role=role, needed="write")
                return await error_response(err)(scope, receive, send)
            sent = False

            async def replay() -> dict[str, Any]:
                nonlocal sent
                if not sent:
                    sent = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()
            return await self.handler(scope, replay, send)
        return await self.handler(scope, receive, send)


def mount_mcp(app: FastAPI) -> contextlib.AbstractAsyncContextManager[None]:
    """Add /mcp to `app`; the returned context manager runs the MCP session manager for the
    app's lifetime. Options: `app.state.mcp_options` (keyword arguments of `create_server`)."""
    endpoint = _Endpoint()
    app.router.routes.append(Route(MCP_PATH, endpoint=endpoint, methods=["GET", "POST", "DELETE"]))

    @contextlib.asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        host = str(getattr(app.state, "bind_host", "127.0.0.1"))
        options = dict(getattr(app.state, "mcp_options", None) or {})
        server = create_server(app.state.catalog, **options)
        security = security_for(host)
        if not security.enable_dns_rebinding_protection:
            log.warning("semcat: /mcp on wildcard address %s checks no Host header; set SEMCAT_MCP_ALLOWED_HOSTS "
                        "to the names clients use", host)
        server.streamable_http_app(stateless_http=True, json_response=True, transport_security=security, host=host)
        manager = server.session_manager
        async with manager.run():
            endpoint.handler = StreamableHTTPASGIApp(manager)
            try:
                yield
            finally:
                endpoint.handler = None

    return lifespan()
