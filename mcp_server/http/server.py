"""`semcat serve`: the catalog over HTTP (FastAPI on uvicorn, one process owns the catalog).

    app = create_app(catalog, tokens=load_tokens(file))     # the FastAPI app; /v1, /healthz
    run(data_dir, host, port, ...)                           # what `semcat serve` calls
    handle = serve_in_thread(catalog)                        # tests/benchmarks: handle.url, handle.stop()

The MCP layer mounts `/mcp` on the same app through a plugin: a callable `plugin(app)` that adds
routes (it finds the catalog, sessions and tokens on `app.state`) and may return an async context
manager that is entered for the app's lifetime (e.g. the MCP session manager). `run()` loads
`mcp_server.mcp.http:mount_mcp` as a plugin when that module exists.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import re
import signal
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import anyio
import uvicorn
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from catalog_core import Catalog, open_catalog
from catalog_core.errors import AuthError, CatalogError, NotFoundError
from catalog_core.remote.wire import ErrorBody
from mcp_server.http.api import ApiContext, Gate, build_router, dumps
from mcp_server.http.asgi import OPEN_PATHS, ErrorBodyHook, FastCommit, Guard, error_response, validation_error_response
from mcp_server.http.auth import Tokens, UnsafeBindError, check_bind, load_tokens
from mcp_server.http.oauth import METADATA_PATH, JwtVerifier, OAuthConfig
from mcp_server.http.origin import SameOrigin, env_names
from mcp_server.http.policy import Limits, declare, iter_routes, requires
from mcp_server.http.protocol import uvicorn_http_options
from mcp_server.http.sessions import SessionManager

__all__ = ["create_app", "run", "serve_in_thread", "ServerHandle", "Plugin", "DEFAULT_MAX_REQUEST_BYTES"]

log = logging.getLogger("uvicorn.error")

DEFAULT_MAX_REQUEST_BYTES = 64 * 1024 * 1024
MCP_PLUGIN = "mcp_server.mcp.http:mount_mcp"

Plugin = Callable[[FastAPI], "contextlib.AbstractAsyncContextManager[Any] | None"]


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(CatalogError)
    async def catalog_error(_req: Request, exc: CatalogError) -> Response:
        headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, AuthError) else None
        return error_response(exc, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def bad_request(_req: Request, exc: RequestValidationError) -> Response:
        return validation_error_response(exc.errors())

    @app.exception_handler(StarletteHTTPException)
    async def http_error(req: Request, exc: StarletteHTTPException) -> Response:
        cls = NotFoundError if exc.status_code == 404 else CatalogError
        headers = dict(exc.headers or {})
        if exc.status_code == 405:  # every method any route of this path takes, not just the first route's
            headers["Allow"] = _allowed_methods(req.app, req.url.path) or headers.get("Allow", "")
        return error_response(cls(f"{exc.detail}", status=exc.status_code), exc.status_code, headers=headers)

    # Unexpected exceptions are answered by the Guard middleware (a JSON 500 on a connection that
    # stays open); an `Exception` handler here would re-raise them to uvicorn, which resets it.


def _allowed_methods(app: FastAPI, path: str) -> str:
    """The methods the OpenAPI document lists for `path`, and those of routes it leaves out
    (/iceberg, /ui) whose path matches ('' if there are none)."""
    methods: set[str] = set()
    for template, item in app.openapi().get("paths", {}).items():
        if re.fullmatch(re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template)), path):
            methods |= {m.upper() for m in item if m in _HTTP_METHODS}
    for route in iter_routes(app.routes):
        regex, declared = getattr(route, "path_regex", None), getattr(route, "methods", None)
        if not getattr(route, "include_in_schema", True) and regex is not None and declared and regex.match(path):
            methods |= {str(m).upper() for m in declared}
    return ", ".join(sorted(methods))


_HTTP_METHODS = frozenset({"get", "put", "post", "delete", "options", "head", "patch", "trace"})


# ------------------------------------------------------------------ the app
def create_app(catalog: Catalog, *, tokens: Tokens | None = None,
               max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES, txn_timeout_s: float = 60.0,
               owns_catalog: bool = False, threads: int = 64, drain_timeout_s: float = 30.0,
               plugins: Sequence[Plugin] = (), limits: Limits | dict[str, Any] | None = None,
               allowed_hosts: Sequence[str] = (), allowed_origins: Sequence[str] = ()) -> FastAPI:
    """The FastAPI app serving `catalog`. With `owns_catalog` the app closes it at shutdown,
    after refusing new engine calls and waiting for running ones. `limits`: caps per token and in
    total (mcp_server.http.policy.Limits); `allowed_hosts` / `allowed_origins`: names and origins
    besides the server's own (mcp_server.http.origin; also SEMCAT_ALLOWED_HOSTS / _ORIGINS)."""
    tokens = tokens if tokens is not None else Tokens()
    caps = Limits.of(limits)
    hosts = [*allowed_hosts, *env_names("SEMCAT_ALLOWED_HOSTS", "SEMCAT_MCP_ALLOWED_HOSTS")]
    origins = [*allowed_origins, *env_names("SEMCAT_ALLOWED_ORIGINS")]
    SameOrigin(None, hosts, origins)  # a malformed name or origin is refused here, not at the first request
    gate = Gate()
    sessions = SessionManager(catalog, txn_timeout_s, limits=caps)
    ctx = ApiContext(catalog, sessions, gate)
    fast_commit = FastCommit(ctx, threads)
    contexts: list[Any] = []

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        # Enough threads that concurrent commits reach the engine together and group-commit.
        anyio.to_thread.current_default_thread_limiter().total_tokens = threads
        sessions.start()
        try:
            async with contextlib.AsyncExitStack() as stack:
                for cm in contexts:
                    await stack.enter_async_context(cm)
                yield
        finally:
            # Its own thread: requests stuck in the engine may hold every token of the default limiter.
            drained = await anyio.to_thread.run_sync(gate.close, drain_timeout_s, limiter=anyio.CapacityLimiter(1))
            fast_commit.pool.shutdown(wait=False)
            sessions.close()
            if owns_catalog and drained:
                catalog.close()
                log.info("semcat: catalog closed at vid %s", catalog.latest_vid)
            elif owns_catalog:
                log.error("semcat: engine calls still running after %s s; leaving the catalog open "
                          "(every acknowledged commit is already durable)", drain_timeout_s)

    app = FastAPI(title="semcat", version="1", lifespan=lifespan,
                  description="Versioned, transactional catalog for data lakes: the engine API under /v1.")
    app.state.catalog, app.state.sessions, app.state.gate, app.state.tokens = catalog, sessions, gate, tokens
    app.state.limits, app.state.allowed_hosts, app.state.allowed_origins = caps, hosts, origins
    _install_error_handlers(app)

    @app.get("/healthz", summary="Liveness (no token needed)",
             responses={503: {"model": ErrorBody, "description": "The server is shutting down"}})
    @requires("open")
    def healthz() -> Response:
        # `now`: the time this server judges freshness at (`semcat serve --now`; absent: its clock), so a CLI
        # command against it (--url) judges at the same time (issue 47, one clock)
        now = (getattr(app.state, "mcp_options", None) or {}).get("now")
        body: dict[str, Any] = {"status": "ok" if not gate.closed else "stopping"}
        if now is not None:
            body["now"] = now
        return Response(dumps(body),
                        status_code=200 if not gate.closed else 503, media_type="application/json")

    app.include_router(build_router(ctx))
    from mcp_server.http.oauth import install_metadata

    install_metadata(app)  # /.well-known/oauth-protected-resource (RFC 9728), public
    from mcp_server.http.semantic_api import build_semantic_router

    app.include_router(build_semantic_router(ctx))
    error_bodies: dict[str, ErrorBodyHook] = {}
    if getattr(catalog, "data_dir", None):  # the Iceberg REST catalog at /iceberg (metadata files under the data dir)
        from mcp_server.http.iceberg import build_iceberg_router, iceberg_error_body

        app.include_router(build_iceberg_router(ctx))
        error_bodies["/iceberg/"] = iceberg_error_body  # its clients parse the spec's ErrorModel, whoever refuses
    from mcp_server.http.ui import build_ui_router

    app.include_router(build_ui_router(app))
    for plugin in plugins:
        cm = plugin(app)
        if cm is not None:
            contexts.append(cm)
    for route in app.routes:  # FastAPI's own (the API description) and the OAuth metadata: no token
        path = getattr(route, "path", None)
        if path in OPEN_PATHS - {"/healthz"} or (isinstance(path, str) and path.startswith(METADATA_PATH + "/")):
            declare(route, "open")
    app.add_middleware(Guard, tokens=tokens, max_bytes=max_request_bytes,
                       fast={("POST", "/v1/commit"): fast_commit}, limits=caps, allowed_hosts=hosts,
                       allowed_origins=origins, bind_host=lambda: getattr(app.state, "bind_host", None),
                       error_bodies=error_bodies)
    _describe_errors(app, secured=bool(tokens))
    return app


def _describe_errors(app: FastAPI, secured: bool) -> None:
    """OpenAPI as served: a malformed request is a 400 with the error body (FastAPI's default 422
    is never sent), and with tokens configured every /v1 operation needs a bearer token."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = generate()
        for path, item in schema.get("paths", {}).items():
            for op in item.values():
                responses = op.get("responses", {})
                responses.pop("422", None)
                for code, resp in responses.items():  # errors are JSON, also on NDJSON routes
                    content = resp.get("content")
                    if code[:1] in "45" and content and "application/json" not in content:
                        resp["content"] = {"application/json": next(iter(content.values()))}
                if secured and path.startswith("/v1/"):
                    op["security"] = [{"bearer": []}]
        comps = schema.setdefault("components", {})
        schemas = comps.get("schemas", {})
        for name in ("HTTPValidationError", "ValidationError"):  # drop them once nothing refers to them
            if name in schemas and f'"#/components/schemas/{name}"' not in json.dumps(schema):
                del schemas[name]
        if secured:
            comps["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def default_plugins() -> list[Plugin]:
    module, _, name = MCP_PLUGIN.partition(":")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module.startswith(exc.name):  # the MCP layer is not built yet
            return []
        raise
    return [getattr(mod, name)]


# ------------------------------------------------------------------ running it
def _refuse(exc: Exception) -> None:
    import click

    raise click.ClickException(str(exc))


def run(data_dir: str, host: str = "127.0.0.1", port: int = 8765, tokens_file: str | None = None,
        protocol: str = "ospl", max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        txn_timeout_s: float = 60.0, plugins: Sequence[Plugin] | None = None,
        graceful_timeout_s: float = 10.0, create: bool = False, mcp_options: dict[str, Any] | None = None,
        oauth: OAuthConfig | None = None, limits: Limits | dict[str, Any] | None = None,
        allowed_hosts: Sequence[str] = (), allowed_origins: Sequence[str] = ()) -> None:
    """Serve until SIGTERM/SIGINT, then finish in-flight requests and close the catalog. `data_dir` must
    hold a catalog (a directory that does not, e.g. a lake root, is refused naming the catalogs below
    it); `create` makes a new empty one there instead. With `oauth` the server also accepts JWT access
    tokens of that issuer (mcp_server.http.oauth)."""
    try:
        tokens = load_tokens(tokens_file, oauth=JwtVerifier(oauth) if oauth is not None else None)
        check_bind(host, tokens)
    except (ValueError, UnsafeBindError) as exc:
        _refuse(exc)
    try:
        catalog = open_catalog(data_dir, create=create, protocol=protocol)
    except CatalogError as exc:
        _refuse(exc)
    try:
        app = create_app(catalog, tokens=tokens, max_request_bytes=max_request_bytes, txn_timeout_s=txn_timeout_s,
                         owns_catalog=True, plugins=default_plugins() if plugins is None else plugins,
                         limits=limits, allowed_hosts=allowed_hosts, allowed_origins=allowed_origins)
    except ValueError as exc:
        catalog.close()
        _refuse(exc)
    app.state.bind_host = host  # the MCP plugin sets DNS-rebinding protection for it
    app.state.bind_port = port  # and names the server in DATA_DIR/serve.json (mcp_server.mcp.served)
    app.state.mcp_options = dict(mcp_options or {})  # create_server's options for /mcp (token_budget, now, author)
    # No access log and no proxy-header rewriting: both cost CPU on every request.
    config = uvicorn.Config(app, host=host, port=port, lifespan="on", access_log=False, proxy_headers=False,
                            timeout_graceful_shutdown=int(graceful_timeout_s), log_level="info",
                            **uvicorn_http_options())
    server = uvicorn.Server(config)
    log.info("semcat: serving %s on http://%s:%s (engine API /v1, MCP tools /mcp; auth: %s)", catalog.data_dir,
             host, port, _describe_auth(tokens))
    # uvicorn re-raises the signal after its graceful shutdown; exit 0 then instead of dying by it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        server.run()
    except KeyboardInterrupt:
        _exit_even_if_stuck(EXIT_GRACE_S)
    except SystemExit:  # SIGTERM, re-raised by uvicorn after its graceful shutdown
        _exit_even_if_stuck(EXIT_GRACE_S)
        raise


EXIT_GRACE_S = 10.0


def _describe_auth(tokens: Tokens) -> str:
    if not tokens:
        return "off, loopback only: --tokens FILE or --oauth-issuer URL to turn it on"
    parts = [f"{len(tokens)} static token(s)"] if len(tokens) else []
    if tokens.oauth is not None:
        parts.append(f"OAuth issuer {tokens.oauth.config.issuer} for resource {tokens.oauth.config.resource}")
    return ", ".join(parts)


def _exit_even_if_stuck(grace_s: float) -> None:
    """The process is exiting after the server stopped (the catalog is closed, or left open with
    every acknowledged commit durable): a thread still stuck in a request must not keep it alive
    (the interpreter joins worker threads at exit). Exit anyway after `grace_s`."""
    def watchdog() -> None:
        time.sleep(grace_s)
        busy = [t.name for t in threading.enumerate() if t.is_alive() and t is not threading.current_thread()]
        log.error("semcat: %d thread(s) still running %s s after the server stopped (%s); exiting anyway",
                  len(busy), grace_s, ", ".join(busy[:8]))
        logging.shutdown()
        os._exit(0)

    threading.Thread(target=watchdog, name="semcat-exit-watchdog", daemon=True).start()


class ServerHandle:
    """A uvicorn server running in a background thread of this process."""

    def __init__(self, server: uvicorn.Server, thread: threading.Thread, url: str, app: FastAPI) -> None:
        self.server, self.thread, self.url, self.app = server, thread, url, app

    def stop(self, timeout: float = 30.0) -> None:
        self.server.should_exit = True
        self.thread.join(timeout)

    def __enter__(self) -> "ServerHandle":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def serve_in_thread(catalog: Catalog, host: str = "127.0.0.1", port: int = 0, **app_kwargs: Any) -> ServerHandle:
    """Start a real uvicorn server for `catalog` on a free loopback port (port=0)."""
    app = create_app(catalog, **app_kwargs)
    app.state.bind_host = host
    config = uvicorn.Config(app, host=host, port=port, lifespan="on", access_log=False, proxy_headers=False,
                            log_level="warning", timeout_graceful_shutdown=5, **uvicorn_http_options())
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="semcat-http", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the HTTP server did not start on {host}:{port}")
        time.sleep(0.005)
    bound = server.servers[0].sockets[0].getsockname()[1]
    return ServerHandle(server, thread, f"http://{host}:{bound}", app)
