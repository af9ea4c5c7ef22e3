"""`/iceberg`: the Apache Iceberg REST catalog protocol of `semcat serve` (DESIGN.md, Iceberg REST
catalog), thin over `catalog_core.iceberg.rest`. A client's `uri` is `http://HOST:PORT/iceberg`, its
`warehouse` a semcat catalog; pyiceberg:

    load_catalog("semcat", type="rest", uri="http://127.0.0.1:8765/iceberg", warehouse="acme", token=T)

Errors are the specification's ErrorModel, `{"error": {"message", "type", "code"}}`, with semcat's
one-line message (what was wrong and what to do). Auth is the server's: the Guard middleware checks
the bearer token and puts its role in `scope["state"]["role"]`; read tokens may read, and get
`403 ForbiddenException` for anything that writes.

semcat's annotations travel as read-only table properties under `semcat.` (this module maps them:
catalog_core does not import the semantic layer): `semcat.description` (also the Iceberg-standard
`comment`), `semcat.grain`, `semcat.grain.keys`, `semcat.owner`, `semcat.deprecated`,
`semcat.successor`, `semcat.freshness` (ok / missed / unknown), `semcat.freshness.sla`,
`semcat.status`, `semcat.findings.count`, `semcat.findings.kinds`, and `semcat.vid` (the last commit
that touched the table). A commit that sets or removes one is refused (403 ForbiddenException).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

import anyio
from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from catalog_core.errors import CatalogError, InvalidValueError, PermissionDeniedError
from mcp_server.http import access
from mcp_server.http.api import ApiContext
from mcp_server.http.policy import requires

__all__ = ["build_iceberg_router", "semantic_properties", "error_body", "iceberg_error_body", "OAUTH_PATH"]

log = logging.getLogger("semcat.iceberg")
COMMIT_SNAPSHOTS_HEADER = "x-semcat-commit-snapshots"   # opt-in: a commit answered with the refs' snapshots only
COMMIT_TIME_HEADER = "x-semcat-commit-time"             # a backdated commit, on a server whose operator allows it
COMMIT_TIME_ENV = "SEMCAT_ICEBERG_COMMIT_TIME"          # "1": commits honour COMMIT_TIME_HEADER (serve --iceberg-commit-time)
SEP = "\x1f"   # the namespace separator of the specification (pyiceberg's default)


def error_body(err: CatalogError) -> tuple[int, bytes]:
    from catalog_core.iceberg.rest import iceberg_error_type

    status = int(err.details.get("status_hint") or err.http_status)
    body = {"error": {"message": err.message, "type": iceberg_error_type(err), "code": status}}
    return status, json.dumps(body, default=str, ensure_ascii=True).encode()


OAUTH_PATH = "/iceberg/v1/oauth/tokens"
# The largest request body of an /iceberg route (below the server's --max-request-mb): the
# specification's request objects are small (manifests are files), and a table's metadata is at
# most catalog_core.iceberg.safety.MAX_TABLE_BYTES; a larger body is a 413 before it is read.
MAX_BODY_BYTES = 8 * 1024 * 1024
# The type an Iceberg client sees for an error semcat's server answers before (or instead of) a route
# of this module: the Guard's refusals, unknown routes, malformed requests, internal errors.
_TYPES = {400: "BadRequestException", 401: "NotAuthorizedException", 403: "ForbiddenException",
          404: "NotFoundException", 405: "MethodNotAllowedException", 406: "NotAcceptableException",
          408: "RequestTimeoutException", 409: "ConflictException", 410: "GoneException",
          412: "PreconditionFailedException", 413: "RequestTooLargeException",
          415: "UnsupportedMediaTypeException", 421: "MisdirectedRequestException",
          429: "TooManyRequestsException", 500: "ServiceFailureException", 501: "NotImplementedException",
          503: "ServiceUnavailableException"}
_OAUTH_CODES = {400: "invalid_request", 401: "invalid_client", 403: "unauthorized_client"}


def iceberg_error_body(path: str, status: int, body: bytes) -> bytes | None:
    """The Guard's hook for every error answered under /iceberg (asgi.ErrorBodyHook): semcat's error
    body `{error: <class>, message, details}` becomes the specification's ErrorModel
    `{"error": {"message", "type", "code"}}` (the OAuth token endpoint's: `{"error", "error_description"}`),
    keeping semcat's message; a body already in the Iceberg shape is kept (None)."""
    try:
        old = json.loads(body) if body else {}
    except ValueError:
        old = {}
    if not isinstance(old, dict):
        old = {}
    if isinstance(old.get("error"), dict) or (path == OAUTH_PATH and "error_description" in old):
        return None
    message = str(old.get("message") or old.get("error") or f"HTTP {status}")
    raw_details = old.get("details")
    details: dict[str, Any] = raw_details if isinstance(raw_details, dict) else {}
    if status == 403 and details.get("needed") == "write":
        message = (f"a {details.get('role')!r} token may only read over Iceberg REST: creating, committing, "
                   "renaming and dropping need a token with role 'write'")
    elif status == 401 and message.startswith("this server requires a bearer token"):
        message = ("this server requires a bearer token: configure the Iceberg client with token=<a semcat token> "
                   "(or credential='<any id>:<token>')")
    elif status in (404, 405) and message in ("Not Found", "Method Not Allowed"):
        message = (f"{message}: {path} is not an operation semcat's Iceberg REST catalog serves; GET "
                   "/iceberg/v1/config lists them (endpoints)")
    if path == OAUTH_PATH:
        out: dict[str, Any] = {"error": _OAUTH_CODES.get(status, "invalid_request"), "error_description": message}
    else:
        out = {"error": {"message": message, "type": _TYPES.get(status, "RESTException"), "code": status}}
    return json.dumps(out, ensure_ascii=True).encode()


def _error(err: CatalogError) -> Response:
    status, body = error_body(err)
    return Response(body, status_code=status, media_type="application/json")


_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_DELEGATION = frozenset({"vended-credentials", "remote-signing"})


def _check_headers(request: Request) -> None:
    """The specification's request headers, checked on every /iceberg route: `Idempotency-Key` is
    a UUID (36 characters), `X-Iceberg-Access-Delegation` a comma-separated list of
    vended-credentials / remote-signing (accepted; semcat vends no credentials: the engine reads
    the table locations itself)."""
    key = request.headers.get("idempotency-key")
    if key is not None and not _UUID.fullmatch(key):
        raise InvalidValueError(f"Idempotency-Key {key[:60]!r} is not a UUID (36 characters, e.g. "
                                "017F22E2-79B0-7CC3-98C4-DC0C0C07398F): send a new UUID per operation",
                                iceberg_type="BadRequestException")
    delegation = request.headers.get("x-iceberg-access-delegation")
    if delegation is not None and not {d.strip() for d in delegation.split(",")} <= _DELEGATION:
        raise InvalidValueError(f"X-Iceberg-Access-Delegation {delegation[:60]!r}: the specification's mechanisms "
                                "are vended-credentials and remote-signing (comma-separated)",
                                iceberg_type="BadRequestException")


def _string_map(value: Any, what: str) -> dict[str, str]:
    """A properties object of the specification: names to text (pass `body.get(key, {})`: null is refused)."""
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise InvalidValueError(f"{what} must be an object of text values, e.g. {{\"owner\": \"data-eng\"}}",
                                iceberg_type="BadRequestException")
    from catalog_core.iceberg.safety import check_properties

    check_properties(value, what)
    return value


def _json(obj: Any, status: int = 200) -> Response:
    return Response(json.dumps(obj, default=str).encode(), status_code=status, media_type="application/json")


def _head(status: int) -> Response:
    """A HEAD answer: no body; an error still names the JSON type its GET would carry (the
    specification documents application/json for the error statuses)."""
    return Response(status_code=status, media_type="application/json" if status >= 400 else None)


def _oauth_error(code: str, message: str, status: int, basic: bool = False) -> Response:
    resp = _json({"error": code, "error_description": message}, status)
    if basic:   # RFC 6749 5.2: a failed HTTP Basic client authentication names the scheme
        resp.headers["WWW-Authenticate"] = 'Basic realm="semcat iceberg"'
    return resp


def _basic_credentials(header: str | None) -> tuple[str, str] | None:
    """(client_id, client_secret) of an `Authorization: Basic` header (RFC 6749 2.3.1: each
    form-urlencoded, then joined by ':' and base64-encoded); None without one; ValueError if malformed."""
    import base64
    import binascii
    from urllib.parse import unquote_plus

    if not header or not header[:6].lower() == "basic ":
        return None
    try:
        text = base64.b64decode(header[6:].strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise ValueError("malformed HTTP Basic credentials: send base64(client_id:client_secret)") from None
    cid, sep, secret = text.partition(":")
    if not sep:
        raise ValueError("HTTP Basic credentials need client_id:client_secret (a ':' between them)")
    return unquote_plus(cid), unquote_plus(secret)


def semantic_properties(cat: Any) -> Callable[[str, int], dict[str, str]]:
    """The `semcat.*` properties (and `comment`) of a table from its annotations and findings, as of `vid`."""
    def props(name: str, vid: int) -> dict[str, str]:
        import semantic as sm

        try:
            card = sm.describe(cat, name, snapshot=vid)
        except Exception as exc:  # noqa: BLE001 - the annotations must never make a table unloadable
            log.warning("semcat properties of %s unavailable: %s", name, exc)
            return {}
        out: dict[str, str] = {}
        ann = card.annotations
        desc = ann.get("description")
        if desc is not None and desc.value:
            out["semcat.description"] = str(desc.value)
            out["comment"] = str(desc.value)
        grain = ann.get("grain")
        if grain is not None and grain.value:
            g = grain.value
            out["semcat.grain"] = str(g.get("text") or g.get("description") or json.dumps(g)) if isinstance(g, dict) else str(g)
            if isinstance(g, dict) and g.get("keys"):
                out["semcat.grain.keys"] = ",".join(str(k) for k in g["keys"])
        owner = ann.get("owner")
        if owner is not None and owner.value:
            out["semcat.owner"] = str(owner.value)
        if card.deprecation is not None:
            out["semcat.deprecated"] = card.deprecation.reason or "true"
            if card.deprecation.successor:
                out["semcat.successor"] = card.deprecation.successor
        out["semcat.freshness"] = card.freshness.status
        if card.freshness.sla:
            out["semcat.freshness.sla"] = card.freshness.sla
        out["semcat.status"] = card.status
        out["semcat.findings.count"] = str(len(card.findings))
        if card.findings:
            out["semcat.findings.kinds"] = ",".join(sorted({str(f.reason) for f in card.findings}))
        return out
    return props


ROOTS_ENV = "SEMCAT_ICEBERG_ROOTS"


def storage_roots(declared: Sequence[str] = ()) -> list[str]:
    """The operator's storage roots besides the warehouse: `declared` (`semcat serve --iceberg-root`)
    and SEMCAT_ICEBERG_ROOTS (os.pathsep-separated), as absolute directories."""
    out = [*declared, *(p for p in os.environ.get(ROOTS_ENV, "").split(os.pathsep) if p.strip())]
    bad = [p for p in out if not os.path.isabs(p.removeprefix("file://"))]
    if bad:
        raise InvalidValueError(f"storage root {bad[0]!r} is not an absolute directory: pass absolute paths to "
                                f"--iceberg-root / {ROOTS_ENV}")
    return [os.path.abspath(p.removeprefix("file://")) for p in out]


def commit_time_of(request: Request, allowed: bool) -> float | None:
    """The commit time a writer asks for with `X-Semcat-Commit-Time` (seconds since the epoch or ISO-8601),
    None without the header. Only a server whose operator allows it (`semcat serve --iceberg-commit-time`,
    SEMCAT_ICEBERG_COMMIT_TIME=1: simulated histories, imports, the trap generator) takes it; elsewhere the
    header is refused (400) rather than ignored, so a writer never believes it backdated a commit. A time
    earlier than the latest commit's is refused by the transaction (commit times never go back)."""
    from catalog_core.model import parse_time

    raw = request.headers.get(COMMIT_TIME_HEADER)
    if raw is None:
        return None
    if not allowed:
        raise InvalidValueError(f"{COMMIT_TIME_HEADER}: this server does not take commit times from writers (its "
                                "operator starts it with --iceberg-commit-time to allow backdated commits)",
                                iceberg_type="BadRequestException")
    try:
        t: float | None = float(raw.strip())
    except ValueError:
        t = parse_time(raw.strip())
    if t is None or t != t or abs(t) == float("inf"):
        raise InvalidValueError(f"{COMMIT_TIME_HEADER}: {raw[:40]!r} is not seconds since the epoch or an ISO-8601 "
                                "time", iceberg_type="BadRequestException")
    return float(t)


def build_iceberg_router(ctx: ApiContext, root: str | None = None, location_root: str | None = None,  # noqa: C901 - one short route per operation of the specification
                         properties: Callable[[str, int], dict[str, str]] | None = None,
                         roots: Sequence[str] = ()) -> APIRouter:
    """The `/iceberg` routes over `ctx.catalog`; metadata files go under `root` (default
    `<data dir>/warehouse/_iceberg`), new tables under `location_root` (default `<data dir>/warehouse`);
    table locations may also go under the storage `roots` (and SEMCAT_ICEBERG_ROOTS)."""
    cat = ctx.catalog
    extra_roots = storage_roots(roots)
    commit_time_allowed = os.environ.get(COMMIT_TIME_ENV, "").strip() == "1"
    data_dir = getattr(cat, "data_dir", None)
    if root is None:
        if data_dir is None:
            raise InvalidValueError("the Iceberg REST routes need an embedded catalog (or an explicit root)")
        root = os.path.join(data_dir, "warehouse", "_iceberg")
    if location_root is None:
        location_root = os.path.join(data_dir, "warehouse") if data_dir else os.path.join(root, "tables")
    props = properties if properties is not None else semantic_properties(cat)
    holder: list[Any] = []
    lock = threading.Lock()

    class _Rest:
        """The IcebergRest service, built on the first request: pyiceberg (and pyarrow) take seconds
        to import, which `semcat serve` should not pay at start."""

        def __getattr__(self, name: str) -> Any:
            if not holder:
                with lock:
                    if not holder:
                        from catalog_core.iceberg.rest import IcebergRest

                        holder.append(IcebergRest(cat, str(root), location_root, props, extra_roots))
            return getattr(holder[0], name)

    rest = _Rest()
    router = APIRouter(prefix="/iceberg", tags=["iceberg"], include_in_schema=False,
                       dependencies=[Depends(_check_headers)])

    async def run(request: Request, fn: Callable[..., Any], *args: Any, write: bool = False,
                  status: int = 200) -> Response:
        try:
            role = getattr(request.state, "role", "write")
            if write and role != "write":
                raise PermissionDeniedError(f"a {role!r} token cannot change the catalog over Iceberg REST; use a "
                                            "token with role 'write'", iceberg_type="ForbiddenException")
            if write and (denied := access.iceberg_write_refusal(cat, request.scope.get("state"),
                                                                 request.path_params, args)) is not None:
                raise denied  # grants (issue 48): commit on the table, admin on namespaces
            principal = getattr(request.state, "principal", None)
            author = f"iceberg:{principal[:12]}" if principal else "iceberg"

            def call() -> Any:
                with ctx.gate:
                    return fn(*args, author) if write else fn(*args)

            out = await anyio.to_thread.run_sync(call)
        except CatalogError as exc:
            return _error(exc)
        if out is None:
            return Response(status_code=204)
        if isinstance(out, Response):
            return out
        if isinstance(out, bytes):
            return Response(out, status_code=status, media_type="application/json")
        return _json(out, status)

    async def body_of(request: Request) -> dict[str, Any]:
        """The request's JSON object (every request body of the specification is one)."""
        raw = await request.body()
        if not raw:
            raise InvalidValueError(f"{request.method} {request.url.path} needs a JSON request body (the specification's "
                                    "request object)", iceberg_type="BadRequestException")
        try:
            body = json.loads(raw)
        except ValueError as exc:
            raise InvalidValueError(f"request body is not valid JSON: {exc}", iceberg_type="BadRequestException") from None
        if not isinstance(body, dict):
            raise InvalidValueError(f"request body must be a JSON object, got {type(body).__name__}: send the "
                                    "specification's request object", iceberg_type="BadRequestException")
        return body

    def ns(text: str) -> list[str]:
        return text.split(SEP)

    def ids(parts: list[str]) -> list[str]:
        """semcat ids of Iceberg names, as catalog_core.iceberg.names.to_id stores them (a dot is
        `%2E`): what the grants of access.py are written against (that module imports no pyiceberg)."""
        return [p.replace(".", "%2E") for p in parts]

    def granted_tables(state: Any, prefix: str, out: Any) -> Any:
        """A ListTablesResponse without the tables the principal may not describe (grants name semcat ids)."""
        if not isinstance(out, dict):
            return out
        idents = out.get("identifiers") or []
        stored = [{"namespace": ids(list(i.get("namespace", []))), "name": ids([i.get("name", "")])[0]} for i in idents]
        kept = access.iceberg_tables(cat, state, prefix, {**out, "identifiers": stored})
        keep = {(tuple(i["namespace"]), i["name"]) for i in (kept.get("identifiers") or [])}
        return {**out, "identifiers": [i for i, s in zip(idents, stored, strict=True)
                                       if (tuple(s["namespace"]), s["name"]) in keep]}

    def page(request: Request) -> tuple[str | None, int | None]:
        size = request.query_params.get("pageSize")
        if size is not None and not (size.isascii() and size.isdigit() and int(size) >= 1):
            raise InvalidValueError(f"pageSize {size!r} is not a whole number of at least 1; omit it for every entry",
                                    iceberg_type="BadRequestException")
        return request.query_params.get("pageToken"), (int(size) if size is not None else None)

    @router.get("/v1/config")
    @requires("read", body="none")
    async def config(request: Request) -> Response:
        return await run(request, rest.config, request.query_params.get("warehouse"))

    @router.get("/v1/{prefix}/namespaces")
    @requires("read", body="none")
    async def list_namespaces(request: Request, prefix: str) -> Response:
        parent = request.query_params.get("parent")
        state = request.scope.get("state")  # grants (issue 48): namespaces holding something it may see
        return await run(request, lambda *a: access.iceberg_namespaces(cat, state, prefix, rest.list_namespaces(*a)),
                         prefix, ns(parent) if parent else None, *page(request))

    @router.post("/v1/{prefix}/namespaces")
    @requires("write", body="json", max_bytes=MAX_BODY_BYTES)
    async def create_namespace(request: Request, prefix: str) -> Response:
        try:
            body = await body_of(request)
            namespace = body.get("namespace")
            if not isinstance(namespace, list) or not all(isinstance(p, str) for p in namespace):
                raise InvalidValueError("CreateNamespaceRequest needs 'namespace': a list of names, e.g. [\"core\"]",
                                        iceberg_type="BadRequestException")
            props = _string_map(body.get("properties", {}), "CreateNamespaceRequest 'properties'")
        except CatalogError as exc:
            return _error(exc)
        return await run(request, rest.create_namespace, prefix, namespace, props, write=True)

    @router.get("/v1/{prefix}/namespaces/{namespace}")
    @requires("read", body="none")
    async def load_namespace(request: Request, prefix: str, namespace: str) -> Response:
        if (denied := access.iceberg_namespace_refusal(cat, request.scope.get("state"), prefix, ns(namespace))):
            return _error(denied)  # grants (issue 48): a namespace it may see nothing of does not exist
        return await run(request, rest.load_namespace, prefix, ns(namespace))

    @router.head("/v1/{prefix}/namespaces/{namespace}")
    @requires("read", body="none")
    async def namespace_exists(request: Request, prefix: str, namespace: str) -> Response:
        if access.iceberg_namespace_refusal(cat, request.scope.get("state"), prefix, ns(namespace)):
            return _head(404)  # grants (issue 48)
        resp = await run(request, rest.load_namespace, prefix, ns(namespace))
        return _head(204 if resp.status_code == 200 else resp.status_code)

    @router.delete("/v1/{prefix}/namespaces/{namespace}")
    @requires("write", body="none")
    async def drop_namespace(request: Request, prefix: str, namespace: str) -> Response:
        return await run(request, rest.drop_namespace, prefix, ns(namespace), write=True)

    @router.post("/v1/{prefix}/namespaces/{namespace}/properties")
    @requires("write", body="json", max_bytes=MAX_BODY_BYTES)
    async def update_namespace(request: Request, prefix: str, namespace: str) -> Response:
        try:
            body = await body_of(request)
            removals = body.get("removals", [])
            if not isinstance(removals, list) or not all(isinstance(k, str) for k in removals) \
                    or len(set(removals)) != len(removals):
                raise InvalidValueError("UpdateNamespacePropertiesRequest 'removals' must be a list of distinct "
                                        "property names", iceberg_type="BadRequestException")
            updates = _string_map(body.get("updates", {}), "UpdateNamespacePropertiesRequest 'updates'")
        except CatalogError as exc:
            return _error(exc)
        return await run(request, rest.update_namespace_properties, prefix, ns(namespace), removals, updates, write=True)

    @router.get("/v1/{prefix}/namespaces/{namespace}/tables")
    @requires("read", body="none")
    async def list_tables(request: Request, prefix: str, namespace: str) -> Response:
        state = request.scope.get("state")  # grants (issue 48): only the tables the principal may describe
        return await run(request, lambda *a: granted_tables(state, prefix, rest.list_tables(*a)), prefix,
                         ns(namespace), *page(request))

    @router.post("/v1/{prefix}/namespaces/{namespace}/tables")
    @requires("write", body="json", max_bytes=MAX_BODY_BYTES)
    async def create_table(request: Request, prefix: str, namespace: str) -> Response:
        try:
            body = await body_of(request)
        except CatalogError as exc:
            return _error(exc)
        return await run(request, rest.create_table, prefix, ns(namespace), body, write=True)

    @router.post("/v1/{prefix}/namespaces/{namespace}/register")
    @requires("write", body="json", max_bytes=MAX_BODY_BYTES)
    async def register_table(request: Request, prefix: str, namespace: str) -> Response:
        try:
            body = await body_of(request)
        except CatalogError as exc:
            return _error(exc)
        return await run(request, rest.register_table, prefix, ns(namespace), body, write=True)

    @router.get("/v1/{prefix}/namespaces/{namespace}/tables/{table}")
    @requires("read", body="none")
    async def load_table(request: Request, prefix: str, namespace: str, table: str) -> Response:
        snapshots = request.query_params.get("snapshots")
        if snapshots not in (None, "all", "refs"):
            raise InvalidValueError(f"snapshots={snapshots[:40]!r}: use 'all' (every snapshot, the default) or 'refs' "
                                    "(the snapshots refs point at)", iceberg_type="BadRequestException")
        denied = access.iceberg_refusal(cat, request.scope.get("state"), prefix, ids(ns(namespace)), ids([table])[0])  # issue 48
        if denied is not None:
            return _error(denied)
        tagged: list[str] = []

        def load(*a: Any) -> bytes:
            body, etag = rest.load_table_tagged(*a)   # both made once per cached view (no hashing per request)
            assert isinstance(body, bytes) and isinstance(etag, str)
            tagged.append(etag)
            return body

        resp = await run(request, load, prefix, ns(namespace), table, snapshots)
        access.audit(cat, request.scope.get("state"), "iceberg", "loadTable", tables=[f"{prefix}.{namespace}.{table}"],
                     ok=resp.status_code == 200, error=None if resp.status_code == 200 else str(resp.status_code))
        if resp.status_code == 200 and tagged:
            wanted = {t.strip().removeprefix("W/") for t in (request.headers.get("if-none-match") or "").split(",")}
            if tagged[0] in wanted or "*" in wanted:
                return Response(status_code=304, headers={"ETag": tagged[0]})
            resp.headers["ETag"] = tagged[0]
        return resp

    @router.head("/v1/{prefix}/namespaces/{namespace}/tables/{table}")
    @requires("read", body="none")
    async def table_exists(request: Request, prefix: str, namespace: str, table: str) -> Response:
        if access.iceberg_refusal(cat, request.scope.get("state"), prefix, ids(ns(namespace)), ids([table])[0], "describe"):
            return _head(404)  # grants (issue 48): an ungranted table does not exist
        try:
            found = await anyio.to_thread.run_sync(rest.table_exists, prefix, ns(namespace), table)
        except CatalogError as exc:
            return _head(error_body(exc)[0])
        return _head(204 if found else 404)

    @router.post("/v1/{prefix}/namespaces/{namespace}/tables/{table}")
    @requires("write", body="json", max_bytes=MAX_BODY_BYTES)
    async def commit_table(request: Request, prefix: str, namespace: str, table: str) -> Response:
        try:
            body = await body_of(request)
        except CatalogError as exc:
            return _error(exc)
        if body.get("identifier") is None:  # optional on this route (the path names the table)
            body["identifier"] = {"namespace": ns(namespace), "name": table}
        key = request.headers.get("idempotency-key")
        # opt-in: the answer's metadata with only the snapshots refs point at (docs/iceberg-rest.md)
        snapshots = request.headers.get(COMMIT_SNAPSHOTS_HEADER, "all").strip().lower()
        if snapshots not in ("all", "refs"):
            return _error(InvalidValueError(f"{COMMIT_SNAPSHOTS_HEADER}: {snapshots[:40]!r}: use 'refs' (only the "
                                            "snapshots refs point at) or 'all' (every snapshot, the default)"))
        try:
            at = commit_time_of(request, commit_time_allowed)
        except CatalogError as exc:
            return _error(exc)
        return await run(request, functools.partial(rest.commit_table, snapshots=snapshots, time=at), prefix,
                         ns(namespace), table, body, key, write=True)

    @router.delete("/v1/{prefix}/namespaces/{namespace}/tables/{table}")
    @requires("write", body="none")
    async def drop_table(request: Request, prefix: str, namespace: str, table: str) -> Response:
        flag = request.query_params.get("purgeRequested", "false")
        if flag.lower() not in ("true", "false"):
            raise InvalidValueError(f"purgeRequested={flag[:40]!r}: use true (also delete the table's files) or false",
                                    iceberg_type="BadRequestException")
        purge = flag.lower() == "true"
        return await run(request, rest.drop_table, prefix, ns(namespace), table, purge, write=True)

    @router.post("/v1/{prefix}/tables/rename")
    @requires("write", body="json", max_bytes=MAX_BODY_BYTES)
    async def rename_table(request: Request, prefix: str) -> Response:
        try:
            body = await body_of(request)
        except CatalogError as exc:
            return _error(exc)
        return await run(request, rest.rename_table, prefix, body, write=True)

    @router.post("/v1/{prefix}/transactions/commit")
    @requires("write", body="json", max_bytes=MAX_BODY_BYTES)
    async def commit_transaction(request: Request, prefix: str) -> Response:
        try:
            body = await body_of(request)
        except CatalogError as exc:
            return _error(exc)
        key = request.headers.get("idempotency-key")
        try:
            at = commit_time_of(request, commit_time_allowed)
        except CatalogError as exc:
            return _error(exc)
        return await run(request, functools.partial(rest.commit_transaction, time=at), prefix, body, key, write=True)

    @router.post("/v1/oauth/tokens")
    @requires("open", body="form")
    async def oauth_tokens(request: Request) -> Response:
        """The client-credentials grant, for clients configured with `credential="<id>:<secret>"`:
        the secret is one of the server's bearer tokens, handed back as the access token (the id is
        free text). The client authenticates with HTTP Basic (client_secret_basic, RFC 6749 2.3.1,
        which a server must support) or in the form (client_secret_post), never both. The
        specification deprecates this endpoint; prefer `token=`."""
        form = await request.form()
        tokens = request.app.state.tokens
        try:
            basic = _basic_credentials(request.headers.get("authorization"))
        except ValueError as exc:
            return _oauth_error("invalid_client", str(exc), 401, basic=True)
        if basic is not None and (form.get("client_secret") is not None or form.get("client_id") is not None):
            return _oauth_error("invalid_request", "the client authenticated twice (HTTP Basic and client_id / "
                                "client_secret in the form): use one method (RFC 6749 2.3)", 400)
        secret = basic[1] if basic is not None else str(form.get("client_secret") or "")
        if form.get("grant_type") != "client_credentials":
            return _oauth_error("unsupported_grant_type", "only grant_type=client_credentials is supported; or "
                                "configure the client with token=<bearer token>", 400)
        if tokens:
            try:
                tokens.role_of(f"Bearer {secret}")
            except CatalogError:
                return _oauth_error("invalid_client", "unknown client secret: use one of the server's bearer tokens "
                                    "as the secret (credential='<any id>:<token>'), sent by HTTP Basic or in the form",
                                    401, basic=basic is not None)
        return _json({"access_token": secret or "anonymous", "token_type": "bearer", "expires_in": 86400,
                      "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"})

    return router
