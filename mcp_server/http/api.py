"""The engine API over HTTP, under /v1. Endpoints are plain `def`s: FastAPI runs them in its
thread pool, so blocking engine calls (and group commit, which batches concurrent committers)
never stall the event loop. Responses are pre-encoded JSON; query results stream as NDJSON:
one `{"objects": [...]}` line per batch, then `{"end": {"stats": ...}}` (or `{"error": ...}`)."""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from itertools import islice
from typing import Any, TypeVar

from fastapi import APIRouter, Request

try:  # optional speed-up; the stdlib encoder is the fallback
    import orjson
except ImportError:  # pragma: no cover - depends on the environment
    orjson = None  # type: ignore[assignment]
from fastapi.responses import Response, StreamingResponse

from catalog_core.api import CatalogAPI
from catalog_core.errors import CatalogError, InvalidValueError, PermissionDeniedError, ShuttingDownError
from catalog_core.lake import SEMANTIC
from catalog_core.model import FileObj, Obj, QueryStats
from catalog_core.paths import split
from catalog_core.remote.wire import (
    BeginBody,
    CloneBody,
    CommitBody,
    DiffBody,
    DropBranchBody,
    ErrorBody,
    ExplainBody,
    PlanFilesBody,
    PublishBody,
    QueryBody,
    SnapshotBody,
    TxnCloneBody,
    TxnCommitBody,
    TxnQueryBody,
    TxnWritesBody,
    WireOp,
)
from mcp_server.http import access
from mcp_server.http.access import audit, check_select, check_write_paths, committed, visible, visible_iter
from mcp_server.http.auth import Tokens
from mcp_server.http.policy import ANONYMOUS, requires
from mcp_server.http.sessions import SessionManager
from mcp_server.http.writer import writer_of

__all__ = ["ApiContext", "Gate", "NDJSONResponse", "build_router", "commit_write_set", "dumps", "error_responses",
           "json_response", "record_ops"]

log = logging.getLogger("semcat.server")
NDJSON = "application/x-ndjson"
_INT = re.compile(r"-?[0-9]+")  # ASCII digits only: `\d` would read '٣' as 3

T = TypeVar("T")


class NDJSONResponse(StreamingResponse):
    media_type = NDJSON


_ERRORS = {
    400: "Bad request: malformed JSON, an unknown field or wrong type, a bad path, ref or query",
    401: "Missing or unknown bearer token (when the server has tokens)",
    403: "The token's role may not do this (a read token writing)",
    404: "Not found: the vid, snapshot, table, object or transaction does not exist",
    408: "A SQL statement ran past its time limit",
    409: "Conflict: concurrency control aborted the transaction, or the name/object already exists",
    410: "The transaction was already committed, aborted or expired",
    412: "A write's precondition failed at commit; nothing was written",
    413: "The request body is larger than the server accepts",
    415: "The request body is not JSON (send Content-Type: application/json)",
    421: "The Host header is not a name this server answers to (DNS rebinding protection)",
    429: "A cap is reached (open requests, transactions or clones, per token or in total); see Retry-After",
    503: "The server is shutting down; nothing was done",
}


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses=` for a route: the errors every route can return (400, 401, 403 for a
    foreign Origin, 413, 415, 421, 429, 503) plus `codes`, each with the `{error, message, details}` body."""
    every = {400, 401, 403, 413, 415, 421, 429, 503}
    return {c: {"model": ErrorBody, "description": _ERRORS[c]} for c in sorted(every | set(codes))}


class Gate:
    """Counts engine calls in flight so shutdown can stop new ones and wait for the rest
    before the catalog is closed (a thread still inside RocksDB must not see it close)."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._active = 0
        self.closed = False

    def __enter__(self) -> "Gate":
        with self._cv:
            if self.closed:
                raise ShuttingDownError("the server is shutting down; nothing was done — retry after it restarts")
            self._active += 1
        return self

    def __exit__(self, *exc: object) -> None:
        with self._cv:
            self._active -= 1
            if self._active == 0:
                self._cv.notify_all()

    def close(self, timeout: float) -> bool:
        """Refuse new calls; wait up to `timeout` s for running ones. True if all finished."""
        with self._cv:
            self.closed = True
            return self._cv.wait_for(lambda: self._active == 0, timeout)


class ApiContext:
    def __init__(self, catalog: CatalogAPI, sessions: SessionManager, gate: Gate) -> None:
        self.catalog, self.sessions, self.gate = catalog, sessions, gate


def _default(o: object) -> object:
    if isinstance(o, (tuple, set, frozenset)):
        return list(o)
    if isinstance(o, bytes):
        return o.decode("utf-8", "replace")
    raise TypeError(f"{type(o).__name__} is not JSON serializable")


def dumps(data: object) -> bytes:
    """Compact UTF-8 JSON; orjson when installed (about 10x faster on large file lists)."""
    if orjson is not None:
        try:
            return orjson.dumps(data, default=_default, option=orjson.OPT_NON_STR_KEYS)
        except (TypeError, orjson.JSONEncodeError):
            pass  # e.g. an int wider than 64 bits: the stdlib encoder handles it
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False, default=_default).encode()


def json_response(data: object, status: int = 200) -> Response:
    return Response(dumps(data), status_code=status, media_type="application/json")


def _file_json(f: Obj | FileObj) -> bytes:
    """One planned file as JSON. A file stored as JSON is copied into the response as stored:
    neither decoded nor re-encoded (a remote client's 365-day plan is 80k files)."""
    raw = getattr(f, "raw", None)
    value = raw if raw is not None and raw[:1] == b"{" else dumps(f.value)
    return b'{"path":' + dumps(f.path) + b',"value":' + value + b',"vid":' + str(f.vid).encode() + b',"leaf":true}'


MAX_VID_DIGITS = 19  # a vid is a 64-bit integer; a longer number is no vid (and int() of 4,300+ digits raises)


def parse_ref(text: str | None) -> int | str | None:
    """A vid/ref from a query string: ASCII digits are a vid, anything else a name or time (the
    catalog refuses a name written with non-ASCII digits, so '१' is never read as vid 1)."""
    if text is None or text == "":
        return None
    if _INT.fullmatch(text):
        if len(text.lstrip("-")) > MAX_VID_DIGITS:
            raise InvalidValueError(f"vid {text[:24]}... has {len(text.lstrip('-'))} digits; a vid has at most "
                                    f"{MAX_VID_DIGITS} (list vids with GET /v1/commits)", ref=text[:40])
        return int(text)
    return text


def _role(request: Request) -> str:
    return str(request.scope.get("state", {}).get("role", "write"))


def _principal(request: Request) -> str | None:
    """The bearer token's digest (set by the Guard); transaction sessions are bound to it."""
    principal = request.scope.get("state", {}).get("principal")
    return principal if isinstance(principal, str) else None


def _cap_key(request: Request) -> str:
    """Whose caps a request counts against: its principal, or everyone's when auth is off."""
    return _principal(request) or ANONYMOUS


def commit_author(state: Mapping[str, Any] | None, author: str,
                  meta: Mapping[str, Any] | None = None) -> tuple[str, dict[str, Any] | None]:
    """(author, meta) of a commit made through the API. With authentication the author is the
    authenticated principal (`writer.writer_of`), never the body's claim: a different `author` in the
    body is kept as `meta["requested_author"]` (an ETL job naming itself), so history says who
    really wrote. Without authentication (a loopback server) the body's author stands."""
    w = writer_of(state)
    if not w.authenticated:
        return author, dict(meta) if meta is not None else None
    out = dict(meta or {})
    if author and author != w.principal:
        out["requested_author"] = author
    return w.principal, out or None


def need_write(request: Request, action: str) -> None:
    Tokens.require(_role(request), "write", action)


def _obj(o: Obj | None) -> dict[str, Any] | None:
    return None if o is None else o.to_dict()


def record_ops(txn: Any, ops: list[WireOp], request: Request | Mapping[str, Any] | None,
               cat: CatalogAPI | None = None) -> None:
    """Add wire ops to an engine transaction through its public methods (same checks as embedded).
    An op under a `_semantic` folder first passes `semantic.guard.guard_op` for the request's
    writer (`writer.writer_of`): the annotation is validated, its author is the writer's principal,
    and the provenance policy's reads are made in `txn` (issue 35). `request`: the request, or its
    scope's `state`. With `cat`, the write set first passes the grants (`access.check_write_paths`:
    grant objects are an admin's alone; under grants every path needs commit or annotate)."""
    writer = None
    if cat is not None:
        check_write_paths(cat, request.scope.get("state") if isinstance(request, Request) else request,
                          [op.path for op in ops])
    for i, op in enumerate(ops):
        try:
            if f"/{SEMANTIC}" in op.path:
                from semantic.guard import guard_op, is_semantic_path

                if is_semantic_path(op.path):
                    if writer is None:
                        state = request.scope.get("state") if isinstance(request, Request) else request
                        writer = writer_of(state)
                    value = guard_op(txn, op.kind, op.path, op.value, writer)
                    op = op.model_copy(update={"value": value})
            if op.kind == "add":
                txn.add(op.path, op.value, op.leaf)
            elif op.leaf:
                raise InvalidValueError(f"leaf=True only goes with add; leaves are immutable ({op.kind} on {op.path!r})")
            elif op.kind == "update":
                txn.update(op.path, op.value)
            elif op.kind == "remove":
                if op.value is not None:
                    raise InvalidValueError(f"remove takes no value ({op.path!r})", path=op.path)
                txn.remove(op.path)
            else:
                txn.merge(op.path, op.value)
        except CatalogError as exc:
            exc.details.setdefault("op_index", i)
            raise


# ------------------------------------------------------------------ NDJSON streams
def _take(it: Iterator[T], n: int) -> list[T]:
    return list(islice(it, n))


def stream_objects(gate: Gate, make_iter: Callable[[QueryStats], Iterator[Any]], batch_size: int,
                   on_end: Callable[[], None] | None = None) -> NDJSONResponse:
    """Start the query and fetch its first batch before answering, so a bad query or ref is an
    HTTP error status; later batches are produced lazily as the client reads."""
    stats = QueryStats()
    try:
        with gate:
            it = make_iter(stats)
            first = _take(it, batch_size)
    except BaseException:
        if on_end is not None:
            on_end()
        raise

    def lines() -> Iterator[bytes]:
        try:
            batch = first
            while True:
                if batch:
                    yield dumps({"objects": [o.to_dict() for o in batch]}) + b"\n"
                if len(batch) < batch_size:
                    break
                with gate:
                    batch = _take(it, batch_size)
            yield dumps({"end": {"stats": stats.to_dict()}}) + b"\n"
        except CatalogError as exc:
            yield dumps({"error": exc.to_dict()}) + b"\n"
        except Exception as exc:  # the status line is gone; report in-band, never hang the client
            log.exception("query stream failed")
            yield dumps({"error": CatalogError(f"internal error while streaming: {exc}").to_dict()}) + b"\n"
        finally:
            if on_end is not None:
                on_end()

    return NDJSONResponse(lines(), media_type=NDJSON)


# ------------------------------------------------------------------ routes
def build_router(ctx: ApiContext) -> APIRouter:
    r = APIRouter(prefix="/v1")
    cat, gate = ctx.catalog, ctx.gate

    @r.get("/catalog", summary="Latest vid, concurrency protocol, and group-commit batches written",
           responses=error_responses())
    @requires("read")
    def info() -> Response:
        with gate:
            info = getattr(cat, "engine_info", None)  # the embedded engine's counters
            groups = info()["groups"] if info is not None else None
            return json_response({"latest_vid": cat.latest_vid, "protocol": cat.protocol, "commit_groups": groups})

    @r.get("/objects", summary="One object at a vid/ref (null if absent)", responses=error_responses(404))
    @requires("read")
    def get(path: str, request: Request, vid: str | None = None) -> Response:
        with gate:
            obj = cat.get(path, parse_ref(vid))  # under grants an ungranted object is absent (null)
            shown = visible(cat, request.scope.get("state"), [obj] if obj is not None else [])
            return json_response({"object": _obj(shown[0] if shown else None)})

    @r.get("/children", summary="Children of an object at a vid/ref", responses=error_responses(404))
    @requires("read")
    def children(path: str, request: Request, vid: str | None = None) -> Response:
        with gate:
            split(path)
            found = visible(cat, request.scope.get("state"), cat.children(path, parse_ref(vid)))
            return json_response({"objects": [o.to_dict() for o in found]})

    @r.get("/history", summary="Every committed version of one object", responses=error_responses())
    @requires("read")
    def history(path: str, request: Request) -> Response:
        with gate:
            split(path)
            if not access.shows_path(cat, request.scope.get("state"), path):
                return json_response({"versions": []})  # grants: as for an object that never existed
            return json_response({"versions": [v.to_dict() for v in cat.history(path)]})

    @r.post("/query", summary="Path query at a vid/ref; NDJSON batches", response_class=NDJSONResponse,
            responses=error_responses(404))
    @requires("read")
    def query(body: QueryBody, request: Request) -> NDJSONResponse:
        state = request.scope.get("state")
        return stream_objects(gate, lambda st: visible_iter(cat, state, cat.iter_query(body.query, _body_ref(body.vid),
                                                                                        st)), body.batch_size)

    @r.post("/explain", summary="Work counters of a path query", responses=error_responses(404))
    @requires("read")
    def explain(body: ExplainBody, request: Request) -> Response:
        access.check_explain(cat, request.scope.get("state"))
        with gate:
            return json_response({"stats": cat.explain(body.query, _body_ref(body.vid)).to_dict()})

    @r.get("/commits", summary="Commit log, optionally by vid/ref range and path prefix",
           responses=error_responses(404))
    @requires("read")
    def commits(request: Request, since: str | None = None, until: str | None = None, prefix: str | None = None,
                limit: int | None = None) -> Response:
        with gate:
            found = cat.commits(parse_ref(since), parse_ref(until), prefix, limit)
            # grants: commits of objects the principal may not see are left out or redacted
            return json_response({"commits": access.commits_view(cat, request.scope.get("state"), found)})

    @r.get("/snapshots", summary="Named snapshots, oldest vid first", responses=error_responses())
    @requires("read")
    def snapshots() -> Response:
        with gate:
            return json_response({"snapshots": [s.to_dict() for s in cat.snapshots()]})

    @r.post("/snapshots", status_code=201, summary="Name a vid (immutable)",
            responses=error_responses(403, 404, 409))
    @requires("write")
    def snapshot(body: SnapshotBody, request: Request) -> Response:
        need_write(request, "create snapshots")
        with gate:
            return json_response(cat.snapshot(body.name, _body_ref(body.vid)).to_dict(), 201)

    @r.get("/resolve", summary="The vid of a vid, snapshot name or ISO time", responses=error_responses(404))
    @requires("read")
    def resolve(ref: str | None = None) -> Response:
        with gate:
            return json_response({"vid": cat.resolve(parse_ref(ref))})

    @r.post("/clone", summary="Zero-copy clone of a subtree; returns the commit vid",
            responses=error_responses(403, 404, 409, 412))
    @requires("write")
    def clone(body: CloneBody, request: Request) -> Response:
        need_write(request, "clone")
        access.check_clone(cat, request.scope.get("state"), body.src, body.dst)
        with gate, ctx.sessions.clones.hold(_cap_key(request)):
            author, _ = commit_author(request.scope.get("state"), body.author)
            vid = cat.clone(body.src, body.dst, _body_ref(body.vid), author=author, message=body.message)
            return json_response({"vid": vid})

    @r.post("/plan_files", summary="A table's files at a vid/ref, pruned by `where`",
            responses=error_responses(404))
    @requires("read")
    def plan_files(body: PlanFilesBody, request: Request) -> Response:
        with gate:
            state = request.scope.get("state")
            check_select(cat, state, body.table, _body_ref(body.vid))
            stats = QueryStats()
            files = cat.plan_files(body.table, body.where, _body_ref(body.vid), stats)
            audit(cat, state, "v1", "plan_files", tables=[body.table], statement=body.where,
                  vid=cat.resolve(_body_ref(body.vid)), rows=len(files))
            out = b",".join(_file_json(f) for f in files)
            return Response(b'{"files":[' + out + b'],"stats":' + dumps(stats.to_dict()) + b"}",
                            media_type="application/json")

    @r.post("/commit", summary="Commit a whole write set (a transaction that read nothing)",
            responses=error_responses(403, 404, 409, 412))
    @requires("write")
    def commit(body: CommitBody, request: Request) -> Response:
        # Served by fastpath.FastCommit in normal operation; this route documents it and is
        # the same code path for apps mounted without the Guard middleware.
        need_write(request, "commit")
        return json_response(commit_write_set(ctx, body, request.scope.get("state")))

    _branch_routes(r, ctx)
    _txn_routes(r, ctx)
    _audit_route(r, ctx)
    return r


def _audit_route(r: APIRouter, ctx: ApiContext) -> None:
    @r.get("/audit", summary="The audit log: data reads and writes by principal (admin tokens only)",
           responses=error_responses(403))
    @requires("read")
    def audit_entries(request: Request, principal: str | None = None, table: str | None = None,
                      since: str | None = None, limit: int = 100) -> Response:
        from catalog_core.model import parse_time
        from mcp_server.audit import audit_log
        from mcp_server.http.access import is_admin

        if not is_admin(request.scope.get("state")):
            raise PermissionDeniedError("only an admin token reads the audit log (a token with role admin)",
                                        needed="admin")
        when = None if since is None else parse_time(float(since) if since.replace(".", "", 1).isdigit() else since)
        if since is not None and when is None:
            raise InvalidValueError(f"since {since!r} is not an ISO-8601 time or epoch seconds, e.g. "
                                    "2026-12-01T00:00:00Z")
        if not 1 <= limit <= 10_000:
            raise InvalidValueError(f"limit must be 1..10000, got {limit}")
        log = audit_log(ctx.catalog)
        entries, more = log.read(principal, table, when, limit) if log is not None else ([], False)
        return json_response({"entries": entries, "truncated": more})


def _branch_routes(r: APIRouter, ctx: ApiContext) -> None:
    cat, gate = ctx.catalog, ctx.gate

    @r.post("/diff", summary="Objects added, removed and updated between two vids/refs; NDJSON batches",
            response_class=NDJSONResponse, responses=error_responses(404))
    @requires("read")
    def diff(body: DiffBody, request: Request) -> NDJSONResponse:
        # lines: {"objects": [change, ...]} per batch, then {"end": ...}; grants: only objects it may see
        state = request.scope.get("state")
        return stream_objects(gate, lambda _st: access.changes_view(cat, state, cat.diff(
            _body_ref(body.from_ref), _body_ref(body.to_ref), body.prefix)), body.batch_size)

    @r.get("/branches", summary="Branches (clones with a branch record), optionally under a prefix",
           responses=error_responses(404))
    @requires("read")
    def branches(prefix: str | None = None, vid: str | None = None) -> Response:
        with gate:
            return json_response({"branches": [b.to_dict() for b in cat.branches(prefix, parse_ref(vid))]})

    @r.post("/publish", summary="Publish a branch onto its source in one three-way merged commit",
            responses=error_responses(403, 404, 409, 412))
    @requires("write")
    def publish(body: PublishBody, request: Request) -> Response:
        need_write(request, "publish")
        access.check_write_paths(cat, request.scope.get("state"), [body.branch, body.onto])
        with gate:
            author, _ = commit_author(request.scope.get("state"), body.author)
            vid = cat.publish(body.branch, body.onto, author=author, message=body.message, keep=body.keep)
            return json_response({"vid": vid})

    @r.post("/branches/drop", summary="Remove a branch and its record in one commit",
            responses=error_responses(403, 404, 409, 412))
    @requires("write")
    def drop_branch(body: DropBranchBody, request: Request) -> Response:
        need_write(request, "drop branches")
        access.check_write_paths(cat, request.scope.get("state"), [body.branch])
        with gate:
            author, _ = commit_author(request.scope.get("state"), body.author)
            return json_response({"vid": cat.drop_branch(body.branch, author=author, message=body.message)})


def commit_write_set(ctx: ApiContext, body: CommitBody, state: Mapping[str, Any] | None) -> dict[str, int]:
    """One-request transaction: record the write set, commit; nothing is written on error.
    `state`: the request scope's state (who writes: `record_ops`)."""
    with ctx.gate:
        author, meta = commit_author(state, body.author, body.meta)
        txn = ctx.catalog.transaction(author=author, message=body.message, meta=meta, time=body.time)
        try:
            record_ops(txn, body.ops, state, ctx.catalog)
            vid = txn.commit()
            committed(ctx.catalog, state, [op.path for op in body.ops], vid)
            return {"vid": vid}
        finally:
            txn.abort()  # no-op after a commit; releases the read vid otherwise


def _body_ref(ref: int | str | None) -> int | str | None:
    return parse_ref(ref) if isinstance(ref, str) else ref


def _txn_routes(r: APIRouter, ctx: ApiContext) -> None:
    gate, sessions = ctx.gate, ctx.sessions

    @r.post("/transactions", status_code=201, summary="Begin a transaction session (bound to this token)",
            responses=error_responses(429))
    @requires("read")
    def begin(body: BeginBody, request: Request) -> Response:
        with gate:
            author, meta = commit_author(request.scope.get("state"), body.author, body.meta)
            s = sessions.begin(author, body.message, meta, body.time, owner=_principal(request))
            return json_response({"txn_id": s.id, "read_vid": s.txn.read_vid,
                                  "timeout_s": sessions.timeout_s}, 201)

    @r.get("/transactions/{txn_id}/objects", summary="Read one object in a transaction (recorded)",
           responses=error_responses(404, 410))
    @requires("read")
    def txn_get(txn_id: str, path: str, request: Request) -> Response:
        with gate, sessions.use(txn_id, _principal(request)) as s:
            got = s.txn.get(path)  # recorded either way; grants: an object it may not see is absent
            shown = visible(ctx.catalog, request.scope.get("state"), [got] if got is not None else [])
            return json_response({"object": _obj(shown[0] if shown else None)})

    @r.post("/transactions/{txn_id}/query", summary="Path query in a transaction (recorded); NDJSON",
            response_class=NDJSONResponse, responses=error_responses(404, 410))
    @requires("read")
    def txn_query(txn_id: str, body: TxnQueryBody, request: Request) -> NDJSONResponse:
        s = sessions.acquire(txn_id, _principal(request))
        state = request.scope.get("state")
        return stream_objects(gate, lambda st: visible_iter(ctx.catalog, state, s.txn.iter_query(body.query, st)),
                              body.batch_size,
                              on_end=lambda: sessions.release(s))

    @r.post("/transactions/{txn_id}/writes", summary="Send buffered writes to the session (all or none)",
            responses=error_responses(403, 404, 409, 410, 412))
    @requires("write")
    def txn_writes(txn_id: str, body: TxnWritesBody, request: Request) -> Response:
        # Under mgl the session locks them now, as an embedded transaction's writes are locked.
        need_write(request, "write")
        with gate, sessions.use(txn_id, _principal(request)) as s:
            before = len(s.txn.ops)
            try:
                record_ops(s.txn, body.ops, request, ctx.catalog)
            except BaseException:
                del s.txn.ops[before:]  # a rejected op leaves the session's earlier writes only
                raise
            return json_response({"ops": len(s.txn.ops)})

    @r.post("/transactions/{txn_id}/clone", summary="Clone inside a transaction (after the buffered writes)",
            responses=error_responses(403, 404, 409, 410, 412))
    @requires("write")
    def txn_clone(txn_id: str, body: TxnCloneBody, request: Request) -> Response:
        need_write(request, "clone")
        with gate, sessions.use(txn_id, _principal(request)) as s:
            access.check_clone(ctx.catalog, request.scope.get("state"), body.src, body.dst)
            sessions.note_clone(s)  # a clone buffers the subtree in the session: capped per token
            record_ops(s.txn, body.ops, request, ctx.catalog)
            s.txn.clone(body.src, body.dst, body.vid)
            return json_response({"ops": len(s.txn.ops)})

    @r.post("/transactions/{txn_id}/commit", summary="Validate and commit the session with its write set",
            responses=error_responses(403, 404, 409, 410, 412))
    @requires("write")
    def txn_commit(txn_id: str, body: TxnCommitBody, request: Request) -> Response:
        need_write(request, "commit")
        owner = _principal(request)
        with gate:
            s = sessions.take(txn_id, "being committed", owner)
            try:
                record_ops(s.txn, body.ops, request, ctx.catalog)
                vid = s.txn.commit()
            except BaseException as exc:
                s.txn.abort()
                sessions.mark(txn_id, f"aborted by its commit ({type(exc).__name__})", owner)
                raise
            sessions.mark(txn_id, f"committed at vid {vid}", owner)
            committed(ctx.catalog, request.scope.get("state"), [op.path for op in s.txn.ops], vid)
            return json_response({"vid": vid})

    @r.post("/transactions/{txn_id}/abort", summary="Abort a transaction session",
            responses=error_responses(404, 410))
    @requires("read")
    def txn_abort(txn_id: str, request: Request) -> Response:
        s = sessions.take(txn_id, "aborted by the client", _principal(request))
        s.txn.abort()
        return json_response({"aborted": txn_id})
