"""Streamable HTTP at /mcp of `semcat serve` (the plugin `mount_mcp` that mcp_server.http.server loads).

The MCP endpoint sits behind the server's `Guard`, so it has the same bearer tokens: no or an
unknown token gets 401 (with WWW-Authenticate) before anything else. A `read` token may call every
read tool; its tools/list leaves out `annotate`, and a `tools/call` of it gets a tool result with
isError and code "PermissionDeniedError" saying which role it needs (`SemcatServer`), not an
HTTP 403, which MCP clients show only as "Server returned an error response". Transport:
stateless (pinning is by handle, so no tool needs a session), JSON responses; a request whose
`MCP-Protocol-Version` is 2026-07-28 is served by the SDK's per-request (handshake-free) entry,
older versions by `initialize` (the versions: `server.PROTOCOL_VERSIONS`, docs/mcp.md). DNS-rebinding
protection (Host / Origin checks) is set for the address the server binds: loopback names for a
loopback bind, the bound host otherwise, plus the names in `SEMCAT_MCP_ALLOWED_HOSTS` (comma-separated `host` or `host:port`); a wildcard bind (0.0.0.0, ::)
without that variable checks no Host (tokens are mandatory there). While it runs, `semcat serve`
names itself in DATA_DIR/serve.json (`served.advertised`) for a `semcat mcp --data DATA_DIR`.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import FastAPI
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.routing import Route

from catalog_core.errors import ShuttingDownError
from mcp_server.http.asgi import error_response
from mcp_server.mcp.served import advertised
from mcp_server.mcp.server import create_server

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


class _Endpoint:
    """The ASGI app at /mcp: the SDK's streamable HTTP handler (the Guard in front set the role)."""

    def __init__(self) -> None:
        self.handler: StreamableHTTPASGIApp | None = None

    async def __call__(self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        if self.handler is None:
            resp = error_response(ShuttingDownError("the MCP endpoint is not running; retry shortly"))
            return await resp(scope, receive, send)
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
        port, data_dir = getattr(app.state, "bind_port", None), getattr(app.state.catalog, "data_dir", None)
        # `semcat serve` (which sets bind_port) names itself in DIR/serve.json for `semcat mcp --data DIR`
        named = (advertised(str(data_dir), host, int(port), tokens=bool(getattr(app.state, "tokens", None)))
                 if port and isinstance(data_dir, str) else contextlib.nullcontext())
        async with manager.run():
            with named:
                endpoint.handler = StreamableHTTPASGIApp(manager)
                try:
                    yield
                finally:
                    endpoint.handler = None

    return lifespan()
