"""The semantic layer over HTTP, under /v1/semantic: annotate, verify a query, describe a table,
staleness findings, join paths, metrics and metric SQL. The routes call the same `semantic` functions on the server's catalog; writes
need a `write` token.

    POST /v1/semantic/annotate        {target, fields, column?, author?, source?, confidence?, note?, time?} -> {vid}
    POST /v1/semantic/verify_query    {question, sql, author?, source?, confidence?, note?} -> {vid}
    GET  /v1/semantic/describe/{table}?snapshot=&now=                                      -> TableCard
    GET  /v1/semantic/staleness?table=&snapshot=&depth=metadata|data&now=                 -> {findings: [...]}
    GET  /v1/semantic/join_path?from_table=&to_table=&snapshot=&depth=metadata|data       -> JoinPath
    GET  /v1/semantic/metrics?table=&snapshot=                                             -> {metrics: [...]}
    POST /v1/semantic/metric_sql      {metric, group_by?, where?, time_range?, grain?, snapshot?} -> {sql, vid}

Who wrote an annotation comes from the request's principal (`writer.writer_of`), never from the
body: with authentication the author is the principal and the body's `author` is ignored; without
(a loopback server: the local person) the body's `author` is kept. `source` defaults to the
writer's (`human` for a person, `agent` otherwise); a token of an agent or a service may claim only
`agent` (403 otherwise, naming the token to use), and an agent's write over a person's annotation,
or of the human-only keys, is stored as a proposal (`semantic.guard`).

Errors are the `semantic.errors` classes in the usual error body; `cc.connect` clients rebuild them
(catalog_core.errors.error_from_dict) once `semantic` is imported.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict

from catalog_core import lake
from catalog_core.errors import PermissionDeniedError
from mcp_server.http import access
from mcp_server.http.api import ApiContext, error_responses, json_response, need_write, parse_ref
from mcp_server.http.policy import requires
from mcp_server.http.writer import writer_of

__all__ = ["build_semantic_router", "AnnotateBody", "VerifyQueryBody", "MetricSqlBody", "provenance_of"]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AnnotateBody(_Body):
    target: str
    fields: dict[str, Any]
    column: str | None = None
    author: str | None = None
    source: str | None = None
    confidence: float = 1.0
    note: str | None = None
    time: float | str | None = None


class VerifyQueryBody(_Body):
    question: str
    sql: str
    author: str | None = None
    source: str | None = None
    confidence: float = 1.0
    note: str | None = None


class MetricSqlBody(_Body):
    metric: str
    group_by: list[str] = []
    where: str | None = None
    time_range: tuple[str | None, str | None] | None = None
    grain: str | None = None
    snapshot: int | str | None = None


def _hide_unseen(card: Any, seen: set[str], every: list[str]) -> Any:
    """The card without relationships, annotations, metrics, verified questions and findings that
    name a table the caller may not see (as MCP describe_table under grants), and without a hidden
    successor: an ungranted table is refused like a missing one, so no answer may name it."""
    import json

    hidden = [n for n in every if n not in seen]
    if not hidden:
        return card

    def names(v: Any) -> bool:
        text = json.dumps(v.model_dump(mode="json") if hasattr(v, "model_dump") else v, default=str)
        return any(h in text for h in hidden)

    upd: dict[str, Any] = {
        "relationships": [r for r in card.relationships if not names(r)],
        "referenced_by": [r for r in card.referenced_by if not names(r)],
        "metrics": [m for m in card.metrics if not names(m)],
        "verified_questions": [q for q in card.verified_questions if not names(q)],
        "findings": [f for f in card.findings if not names(f)],
        "annotations": {k: a for k, a in card.annotations.items() if not names(a)},
        "orphaned": [a for a in card.orphaned if not names(a)],
    }
    if card.deprecation is not None and names(card.deprecation):
        upd["deprecation"] = card.deprecation.model_copy(update={"successor": None})
    return card.model_copy(update=upd)


def provenance_of(request: Request, author: str | None, source: str | None) -> tuple[str, str]:
    """(author, source) of a semantic write: the author is the authenticated principal (the body's
    only without authentication); the source the body's when the writer may claim it (a person
    any, an agent or a service only `agent`), else PermissionDeniedError (403)."""
    w = writer_of(request.scope.get("state"))
    claimed = source if source is not None else ("human" if w.source == "human" else "agent")
    if w.source != "human" and claimed != "agent":
        raise PermissionDeniedError(
            f"{w.principal} ({'an agent' if w.source == 'agent' else 'a service'}) cannot write annotations with "
            f"source {claimed!r}: "
            "its annotations are source 'agent' (over a person's they are stored as proposals for review); to "
            "write as a person, use a person's token", role=w.source, needed="human")
    name = w.principal if w.authenticated else (author if author is not None and author.strip() else w.principal)
    return name, claimed


def _now(text: str | None) -> float | str | None:
    if text is None or text == "":
        return None
    try:
        return float(text)
    except ValueError:
        return text


def build_semantic_router(ctx: ApiContext) -> APIRouter:
    import semantic as sm

    r = APIRouter(prefix="/v1/semantic", tags=["semantic"])
    cat, gate = ctx.catalog, ctx.gate

    @r.post("/annotate", summary="Annotate a table, column, namespace or catalog (write token)",
            responses=error_responses(403, 404))
    @requires("write")
    def annotate(body: AnnotateBody, request: Request) -> Response:
        need_write(request, "annotate")
        author, source = provenance_of(request, body.author, body.source)
        state = request.scope.get("state")
        if access.Access.of(cat, state) is not None:  # grants: `annotate` on the target (table, ns, catalog)
            access.check_write_paths(cat, state, [_semantic_of(body.target)])
        with gate:
            vid = sm.annotate(cat, body.target, body.fields, column=body.column, author=author,
                              source=source, confidence=body.confidence, note=body.note, time=body.time)
        return json_response({"vid": vid})

    @r.post("/verify_query", summary="Run a query and store it as verified on every table it reads (write token)",
            responses=error_responses(403, 404, 408))
    @requires("write")
    def verify_query(body: VerifyQueryBody, request: Request) -> Response:
        need_write(request, "verify a query")
        author, source = provenance_of(request, body.author, body.source)
        state = request.scope.get("state")
        access.require_sql(cat, state, body.sql)  # grants: select on every table it reads
        if access.Access.of(cat, state) is not None:  # and annotate on them (it is stored on each)
            with gate:
                from semantic.annotations import sql_tables

                tables, _cols = sql_tables(cat, body.sql, cat.latest_vid)
            access.check_write_paths(cat, state, [_semantic_of(t) for t in tables])
        with gate:
            vid = sm.verify_query(cat, body.question, body.sql, author=author, source=source,
                                  confidence=body.confidence, note=body.note)
        return json_response({"vid": vid})

    @r.get("/describe/{table}", summary="The table card: schema, annotations with provenance, findings",
           responses=error_responses(404))
    @requires("read")
    def describe(table: str, request: Request, snapshot: str | None = None, now: str | None = None) -> Response:
        with gate:
            limit = access.require_table(cat, request.scope.get("state"), table, parse_ref(snapshot))
            card = sm.describe(cat, table, snapshot=parse_ref(snapshot), now=_now(now))
            if limit is not None:  # grants: nothing on the card names a table the principal may not see
                every = [lake.name_of(o.path) for o in cat.query(lake.tables_query(), vid=card.snapshot)
                         if lake.is_table(o.value)]
                card = _hide_unseen(card, set(access.visible_tables(cat, limit, card.snapshot)), every)
        return Response(card.model_dump_json(), media_type="application/json")

    @r.get("/staleness", summary="Staleness findings of one table or the whole catalog",
           responses=error_responses(404))
    @requires("read")
    def staleness(request: Request, table: str | None = None, snapshot: str | None = None, depth: str = "metadata",
                  now: str | None = None) -> Response:
        with gate:
            limit = access.require_table(cat, request.scope.get("state"), table or None, parse_ref(snapshot))
            found = sm.staleness(cat, table=table or None, snapshot=parse_ref(snapshot), depth=depth, now=_now(now))
            if limit is not None:  # grants: findings of tables the principal may describe
                seen = set(access.visible_tables(cat, limit, parse_ref(snapshot)))
                found = [f for f in found if access.table_of_name(f.target) in seen]
        return json_response({"findings": [f.model_dump(mode="json") for f in found]})

    @r.get("/join_path", summary="How two tables join: hops, SQL join clauses, cardinality, fan-out warnings",
           responses=error_responses(404))
    @requires("read")
    def join_path(from_table: str, to_table: str, request: Request, snapshot: str | None = None,
                  depth: str = "metadata") -> Response:
        with gate:
            state = request.scope.get("state")
            access.require_table(cat, state, from_table, parse_ref(snapshot))
            access.require_table(cat, state, to_table, parse_ref(snapshot))
            jp = access.join_path(cat, state, from_table, to_table, parse_ref(snapshot), depth)
        return Response(jp.model_dump_json(), media_type="application/json")

    @r.get("/metrics", summary="Metrics defined on one table or on every table",
           responses=error_responses(404))
    @requires("read")
    def metrics(request: Request, table: str | None = None, snapshot: str | None = None) -> Response:
        with gate:
            limit = access.require_table(cat, request.scope.get("state"), table or None, parse_ref(snapshot))
            found = sm.metrics(cat, table or None, snapshot=parse_ref(snapshot))
            if limit is not None:  # grants: metrics of tables the principal may describe
                seen = set(access.visible_tables(cat, limit, parse_ref(snapshot)))
                found = [m for m in found if m.table in seen]
        return json_response({"metrics": [m.model_dump(mode="json") for m in found]})

    @r.post("/metric_sql", summary="Compile a metric with dimensions, filter, time range and grain to DuckDB SQL",
            responses=error_responses(404))
    @requires("read")
    def metric_sql(body: MetricSqlBody, request: Request) -> Response:
        with gate:
            vid = cat.resolve(body.snapshot)
            access.require_metric(cat, request.scope.get("state"), body.metric, vid)
            sql = sm.metric_sql(cat, body.metric, group_by=body.group_by, where=body.where,
                                time_range=body.time_range, grain=body.grain, snapshot=vid)
            access.require_sql(cat, request.scope.get("state"), sql, vid)  # every table the metric reads
        return json_response({"sql": sql, "vid": vid})

    return r


def _semantic_of(target: str) -> str:
    """The `_semantic` folder of an annotation target (a column's is its table's)."""
    from catalog_core import lake

    parts = target.split(".") if isinstance(target, str) else []
    return lake.semantic_path(".".join(parts[:3])) if parts and all(parts) else f"/{target}"
