"""Discovery tools: find tables (search_tables), read one (describe_table), join two
(find_join_path), and read raw catalog objects (query_catalog). Each is a thin adapter from typed
arguments to the `ToolContext` reads (tables, cards of the semantic read model) and back to the
output models; `register` publishes them on a server."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

import catalog_core as cc
from catalog_core import lake
from catalog_core.errors import CatalogError
from mcp_server.mcp import models as M
from mcp_server.mcp.args import READ, Cursor, QueryLimit, SearchLimit, Snapshot, TableName
from mcp_server.mcp.auth import is_admin
from mcp_server.mcp.bounds import args_key, cut, cut_value, page
from mcp_server.mcp.context import (
    LIMITS,
    TEXT_FULL,
    TEXT_SUMMARY,
    VALUE_CHARS,
    ToolContext,
    cell,
    finding,
    grain_text,
    int_or_none,
    iso,
    not_for_reporting,
)
from mcp_server.mcp.errors import CodedToolError, catalog_error, closest, coded, guard
from mcp_server.mcp.relevance import Use
from mcp_server.mcp.results import ToolResult
from semantic.guard import marked
from semantic.models import Status, TableCard

if TYPE_CHECKING:  # the tools run without the SDK too (front.py, results.py: issue 47)
    from mcp_server.mcp.results import ToolServer

__all__ = ["register", "search", "describe", "join_path", "catalog_objects"]


def register(server: ToolServer, s: ToolContext) -> None:
    """Publish the discovery tools of `s` on `server`."""

    @server.tool(annotations=READ)
    def search_tables(
        query: Annotated[str, Field(description="words describing the data, e.g. 'net revenue by store'")] = "",
        snapshot: Snapshot = None, limit: SearchLimit = LIMITS["search_tables"][0],
        cursor: Cursor = None,
    ) -> Annotated[ToolResult, M.SearchOut]:
        """Find tables for a question: ranked names with grain, one-line description, deprecation
        (and successor), freshness and warnings. Use before describe_table."""
        return guard(lambda: search(s, query, snapshot, limit, cursor))

    @server.tool(annotations=READ)
    def describe_table(
        table: TableName,
        detail: Annotated[Literal["summary", "full"], Field(
            description="summary: columns with descriptions; full: also stats, annotations with provenance, findings")]
        = "summary",
        columns: Annotated[list[str] | None, Field(description="only these columns")] = None,
        snapshot: Snapshot = None,
        limit: Annotated[int | None, Field(ge=1, le=LIMITS["describe_table"][1],
                                           description="columns per page (default 40 summary, 20 full, at most 200)")]
        = None,
        cursor: Cursor = None,
    ) -> Annotated[ToolResult, M.DescribeOut]:
        """Read one table before querying it: columns (paged), meaning, grain, stats, freshness,
        relationships, metrics, verified questions and warnings."""
        return guard(lambda: describe(s, table, detail, columns, snapshot, limit, cursor))

    @server.tool(annotations=READ)
    def find_join_path(
        from_table: TableName, to_table: TableName, snapshot: Snapshot = None,
    ) -> Annotated[ToolResult, M.JoinOut]:
        """How to join two tables: hops over declared relationships, SQL join clauses, cardinality,
        canonical or not, and fan-out warnings. Use it instead of guessing join keys."""
        return guard(lambda: join_path(s, from_table, to_table, snapshot))

    @server.tool(annotations=READ)
    def query_catalog(
        query: Annotated[str, Field(description='path query, e.g. /[obj_id = "acme"]/*/[obj_type = "table" '
                                                'and stats.row_count > 1000]')],
        snapshot: Snapshot = None, limit: QueryLimit = LIMITS["query_catalog"][0], cursor: Cursor = None,
    ) -> Annotated[ToolResult, M.QueryOut]:
        """Raw catalog objects matching a path query (one step per tree level: catalog, namespace,
        table, partition, file). For metadata questions the other tools do not answer."""
        return guard(lambda: catalog_objects(s, query, snapshot, limit, cursor))


def search(s: ToolContext, query: str | None, snapshot: int | str | None, limit: int,
                  cursor: str | None) -> tuple[M.SearchOut, str]:
    key = args_key(query=query or "")
    vid, offset = s.at(snapshot, cursor, "search_tables", key)
    ranked = _rank(s, query or "", vid)
    pg = page(ranked, limit, offset, "search_tables", vid, key)
    hits = [_hit(s, name, score, vid) for name, score in pg.items]
    out = M.SearchOut(snapshot=s.snap(vid), tables=hits, total=pg.total, truncated=pg.truncated,
                      next_cursor=pg.next_cursor)
    top = ", ".join(h.name for h in hits[:3])
    return s.fit(out, f"{len(hits)} of {pg.total} tables for {query!r} at vid {vid}" + (f": {top}" if top else ""),
                    "tables", "search_tables", vid, key, offset)


def _rank(s: ToolContext, query: str, vid: int) -> list[tuple[str, float]]:
    """Every table by name for an empty query; otherwise the read model's ranking."""
    tables = s.tables(vid)
    if not query.strip():
        return [(n, 0.0) for n in sorted(tables)]
    return s.reads.rank(s.cat, query, vid, tables)


def _hit(s: ToolContext, name: str, score: float, vid: int) -> M.TableHit:
    obj = s.tables(vid).get(name)
    rows = ((obj.value.get("stats") or {}).get("row_count") if obj else None)
    hit = M.TableHit(name=name, score=score, row_count=rows if isinstance(rows, int) else None)
    card = s.card(name, vid)
    if card is not None:
        desc = card.annotations.get("description")
        grain = card.annotations.get("grain")
        hit.description = None if desc is None else cut(marked(desc.value, desc.source), TEXT_SUMMARY)
        hit.grain = None if grain is None else cut(grain_text(grain.value), 160)
        if card.deprecation is not None:
            hit.deprecated = M.DeprecationOut(reason=cut(card.deprecation.reason, 160), since=card.deprecation.since,
                                              successor=card.deprecation.successor)
        nfr = card.annotations.get("not_for_reporting")
        hit.not_for_reporting = not_for_reporting(None if nfr is None else nfr.value, 160)
        hit.freshness = card.freshness.status
        _completeness_hit(hit, card.freshness.completeness)
    hit.warnings = s.table_warnings(name, vid)
    return hit


def describe(s: ToolContext, table: str, detail: str, columns: list[str] | None, snapshot: int | str | None,
                   limit: int | None, cursor: str | None) -> tuple[M.DescribeOut, str]:
    key = args_key(table=table, detail=detail, columns=columns)
    vid, offset = s.at(snapshot, cursor, "describe_table", key)
    obj = s.table(table, vid)
    name = lake.name_of(obj.path)
    full = detail == "full"
    from mcp_server.mcp.data import SQL_TIMEOUT_S

    # in the background: SQL on it comes next (after the answer, for a session's first call: issue 47, cold start)
    s.after_answer(lambda: cc.warm_sql(s.cat, [name], snapshot=vid, timeout_s=SQL_TIMEOUT_S))
    limit = limit or (LIMITS["describe_table"][0] if not full else 20)
    tv = lake.TableValue.from_raw(obj.value)
    cols = list(tv.columns)
    if columns:
        by = {c.name: c for c in cols}
        missing = [c for c in columns if c not in by]
        if missing:
            close = closest(missing[0], by)
            hint = ("did you mean " + " or ".join(repr(c) for c in close) + "?") if close else \
                "describe_table without columns lists them"
            raise CodedToolError(f"table {name} has no column {missing[0]!r}; {hint}", "NotFoundError")
        cols = [by[c] for c in dict.fromkeys(columns)]
    pg = page(cols, limit, offset, "describe_table", vid, key)
    stats = obj.value.get("stats") or {}
    text_limit = TEXT_FULL if full else TEXT_SUMMARY
    out = M.DescribeOut(snapshot=s.snap(vid), table=name, detail="full" if full else "summary",
                        schema_id=tv.schema.schema_id, partition_by=tv.partition_columns,
                        stats=M.StatsOut(row_count=int_or_none(stats.get("row_count")),
                                         file_count=int_or_none(stats.get("file_count")),
                                         size_bytes=int_or_none(stats.get("size_bytes"))),
                        freshness=_freshness_meta(s, stats), columns=[], total=pg.total,
                        truncated=pg.truncated, next_cursor=pg.next_cursor)
    col_stats = stats.get("columns") or {}
    card = s.card(name, vid)
    by_id = {c.id: c for c in card.columns} if card is not None else {}
    for c in pg.items:
        cid = 0 if c.id is None else int(c.id)
        co = M.ColumnOut(id=cid, name=c.name, type=str(c.type), nullable=c.is_nullable)
        if full:
            st = col_stats.get(co.name)
            if isinstance(st, dict):
                co.stats = M.ColumnStatsOut(min=cell(st.get("min")), max=cell(st.get("max")),
                                            null_count=int_or_none(st.get("null_count")))
        fields: dict[str, Any] = {}
        status: Status | None = None
        if card is not None and cid in by_id:
            fields = {k: marked(v.value, v.source) if k == "description" else v.value  # an agent's: marked
                      for k, v in by_id[cid].annotations.items()}
            # a read model that hides staleness gives statuses of None: then the column has none
            sts = [v.status for v in by_id[cid].annotations.values() if v.status is not None]
            status = "stale" if "stale" in sts else "suspect" if "suspect" in sts else ("fresh" if sts else None)
        _column_fields(co, fields, full, text_limit)
        co.status = status
        out.columns.append(co)
    if card is not None:
        _from_card(out, card, full, text_limit)
        hidden = s.hidden(vid)  # grants: no relationship to (nor finding naming) a table it may not see
        if hidden:
            _hide_unseen(out, s.tables(vid), hidden)
    out.warnings = s.table_warnings(name, vid)
    return s.fit(out, (f"{name} at vid {vid}: {len(out.columns)} of {pg.total} columns"
                          f"{' (more: next_cursor)' if pg.truncated else ''}, {out.stats.row_count} rows"
                          f"{', ' + str(len(out.warnings)) + ' warnings' if out.warnings else ''}"
                          f"{_completeness_line(out.freshness)}"),
                    "columns", "describe_table", vid, key, offset)


def _completeness_out(out: M.FreshnessOut, c: Any) -> None:
    """The card's `Completeness` on describe_table's freshness (at most MAX_INCOMPLETE periods); a
    read model that hides statuses gives a completeness without periods, then only the load log shows."""
    if c is None:
        return
    out.load_log = c.load_log
    if c.latest_period is None:
        return
    out.completeness, out.latest_period, out.complete_through = c.status, c.latest_period, c.latest_complete
    out.incomplete = [cut(f"{p.period} {p.status} ({p.note})" if p.note else f"{p.period} {p.status}", 120)
                      for p in c.incomplete] + (["(more)"] if c.truncated else [])


def _completeness_hit(hit: M.TableHit, c: Any) -> None:
    """A search hit's latest complete period and load log."""
    if c is None:
        return
    hit.load_log = c.load_log
    if c.latest_period is not None:
        hit.completeness, hit.complete_through = c.status, c.latest_complete


def _completeness_line(fr: M.FreshnessOut) -> str:
    """", latest period 2025-03-10 partial, complete through 2025-03-09" for the summary line."""
    if fr.completeness in (None, "unknown", "complete"):
        return ""
    return f", latest period {fr.latest_period} {fr.completeness}, complete through {fr.complete_through or 'none'}"


def _freshness_meta(s: ToolContext, stats: dict[str, Any]) -> M.FreshnessOut:
    ldc = stats.get("last_data_commit") if isinstance(stats.get("last_data_commit"), dict) else None
    fr = M.FreshnessOut()
    if ldc and isinstance(ldc.get("time"), (int, float)):
        fr.last_data_commit_vid = int_or_none(ldc.get("vid"))
        fr.last_data_commit_time = iso(float(ldc["time"]))
        fr.age_hours = round((s.now() - float(ldc["time"])) / 3600, 1)
    return fr


def _column_fields(co: M.ColumnOut, fields: dict[str, Any], full: bool, text_limit: int) -> None:
    if isinstance(fields.get("description"), str):
        co.description = cut(fields["description"], text_limit, "(detail='full' has more)" if not full else "")
    for f in ("role", "unit"):
        if isinstance(fields.get(f), str):
            setattr(co, f, fields[f])
    if full:
        for f in ("synonyms", "enum", "sample_values"):
            if isinstance(fields.get(f), list):
                setattr(co, f, fields[f][:50])
    elif isinstance(fields.get("enum"), list):
        co.enum = fields["enum"][:20]
    if isinstance(fields.get("labels"), dict):  # what a coded column's values mean
        co.labels = dict(list(fields["labels"].items())[:50 if full else 20])
    add = fields.get("additivity")
    if isinstance(add, dict) and add.get("kind") in ("additive", "semi_additive", "non_additive"):
        co.additivity = M.AdditivityOut(kind=add["kind"], non_additive_dimension=add.get("non_additive_dimension"),
                                        window=add.get("window"))
    nw = fields.get("null_when")
    if isinstance(nw, dict) and isinstance(nw.get("state"), str):
        co.null_when = M.NullWhenOut(state=cut(nw["state"], 80), column=nw.get("column"),
                                     values=list(nw.get("values") or [])[:20])


def _hide_unseen(out: M.DescribeOut, seen: Mapping[str, Any], hidden: Sequence[str]) -> None:
    """Under grants: the card without its relationships to tables the caller may not see (`hidden`),
    and without annotations and findings whose text names one."""
    def names(v: Any) -> bool:
        return any(h in json.dumps(v, default=str) for h in hidden)

    out.relationships = [r for r in out.relationships if r.to in seen and not names(r.model_dump())]
    out.annotations = [a for a in out.annotations if not names(a.model_dump())]
    out.findings = [f for f in out.findings if not names(f.model_dump())]


def _from_card(out: M.DescribeOut, card: TableCard, full: bool, text_limit: int) -> None:
    """The table-level parts of a describe_table answer, from the card (statuses as the card gives them)."""
    anns = card.annotations

    def val(field: str) -> Any:
        a = anns.get(field)
        if a is None:
            return None
        return marked(a.value, a.source) if field in ("description", "instructions", "owner") else a.value
    if isinstance(val("description"), str):
        out.description = cut(val("description"), text_limit, "" if full else "(detail='full' has more)")
    if val("grain") is not None:
        out.grain = cut(grain_text(val("grain")), text_limit)
        g = val("grain")
        out.grain_keys = list(g.get("keys") or []) if isinstance(g, dict) else None
    for f in ("owner", "instructions"):
        if isinstance(val(f), str):
            setattr(out, f, cut(val(f), text_limit))
    for f in ("tags", "synonyms"):
        if isinstance(val(f), list):
            setattr(out, f, [str(x) for x in val(f)][:30])
    if isinstance(val("certified"), bool):
        out.certified = val("certified")
    if card.deprecation is not None:
        out.deprecation = M.DeprecationOut(reason=cut(card.deprecation.reason, text_limit),
                                           since=card.deprecation.since, successor=card.deprecation.successor)
    out.not_for_reporting = not_for_reporting(val("not_for_reporting"), text_limit)
    out.unreviewed = [a.key for a in [*anns.values(), *(v for c in card.columns for v in c.annotations.values())]
                      if a.unreviewed][:50]
    fr = card.freshness
    out.freshness.sla = fr.sla
    if fr.status is not None:  # a read model that hides staleness leaves the default ("unknown")
        out.freshness.status = fr.status
    out.status = card.status
    _completeness_out(out.freshness, fr.completeness)
    out.relationships = [M.RelationshipOut(name=r.name, to=r.to, on=[list(p) for p in r.on],
                                           cardinality=r.cardinality, canonical=r.canonical,
                                           condition=r.condition, status=r.status)
                         for r in card.relationships[:50]]
    out.metrics = [m.name for m in card.metrics[:50]]
    out.verified_questions = [cut(q.question, 200) for q in card.verified_questions[:20]]
    if full:
        now = card.snapshot_time
        out.annotations = [M.AnnotationOut(key=a.key, value=cut_value(a.value, 600)[0], author=a.author,
                                           source=a.source, confidence=a.confidence, vid=a.vid,
                                           age_commits=a.age_commits,
                                           age_days=round(max(now - a.written_at, 0) / 86400, 1),
                                           status=a.status, note=a.note, unreviewed=a.unreviewed)
                           for a in list(anns.values())[:60]]
        out.findings = [finding(f) for f in card.findings[:50]]


def join_path(s: ToolContext, from_table: str, to_table: str, snapshot: int | str | None) -> tuple[M.JoinOut, str]:
    vid = s.resolve(snapshot)
    a = lake.name_of(s.table(from_table, vid).path)
    b = lake.name_of(s.table(to_table, vid).path)
    if a == b:
        raise CodedToolError("from_table and to_table are the same table; no join is needed", "InvalidValueError")
    try:
        if s.limits(vid) is None:
            jp = s.reads.join_path(s.cat, a, b, vid)
        else:  # grants: never through (nor naming) a table the caller may not see
            seen = s.tables(vid)
            jp = s.reads.join_path(s.cat, a, b, vid, usable=seen.__contains__)
    except CatalogError as exc:
        raise catalog_error(exc, lambda: list(s.tables(vid))) from None
    hops = [M.HopOut(from_table=h.from_table, to_table=h.to_table, on=[list(p) for p in h.on],
                     cardinality=h.cardinality, canonical=h.canonical, relationship=h.relationship,
                     condition=h.condition) for h in jp.hops]
    path = [a] + [h.to_table for h in jp.hops]
    keys = frozenset(c.lower() for h in jp.hops for pair in h.on for c in pair)
    warns = s.warnings_for(path + [b], vid, Use(frozenset(path + [b]), keys))
    for w in jp.warnings:
        warns.append(M.Warning(table=a, kind="finding", status="suspect", reason="fan_out", message=cut(w, 240)))
    out = M.JoinOut(snapshot=s.snap(vid), from_table=a, to_table=b, hops=hops, sql=jp.sql,
                    cardinality=jp.cardinality, canonical=jp.canonical, warnings=warns)
    return out, f"{a} -> {b}: {len(hops)} hops, {jp.cardinality}{'' if jp.canonical else ', not canonical'}"


# Keys of catalog values that hold a location in the server's file system (table roots, data files, metadata).
_FILE_KEYS = frozenset({"path", "location", "metadata_location", "uri", "file", "file_path", "root", "warehouse",
                        "data_dir", "manifest", "manifest_list"})
_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


def _absolute(v: str) -> bool:
    return v.startswith(("/", "file:", "\\")) or bool(_DRIVE.match(v))


def hide_paths(value: Any, depth: int = 0) -> Any:
    """`value` with every absolute file-system location (under a key such as `path` or `location`)
    cut to its last component, ".../part-0.parquet": the server's directories are no business of a
    token that is not admin (issue 48). Bounded depth; other values unchanged."""
    if depth > 8:
        return value
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if isinstance(v, str) and k in _FILE_KEYS and _absolute(v):
                base = v.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]
                out[k] = f".../{base}" if base and not base.endswith(":") else "..."
            else:
                out[k] = hide_paths(v, depth + 1)
        return out
    if isinstance(value, list):
        return [hide_paths(v, depth + 1) for v in value]
    return value


def catalog_objects(s: ToolContext, query: str, snapshot: int | str | None, limit: int,
                  cursor: str | None) -> tuple[M.QueryOut, str]:
    if not isinstance(query, str) or not query.strip():
        raise CodedToolError('query must be a path query such as /[obj_id = "acme"]/*/[obj_type = "table"]', "InvalidValueError")
    key = args_key(query=query)
    vid, offset = s.at(snapshot, cursor, "query_catalog", key)
    try:
        objs = s.cat.query(query, vid=vid)
    except CatalogError as exc:
        raise coded(exc, f"{exc}; path queries look like /[obj_id = \"acme\"]/*/[obj_type = \"table\"] "
                        "(one step per tree level)") from None
    objs = [o for o in objs if s.shows(o.path, vid)]
    pg = page(objs, limit, offset, "query_catalog", vid, key)
    items = []
    admin = is_admin()
    for o in pg.items:
        shown = o.value if admin else hide_paths(o.value)
        value, was_cut = cut_value(shown, VALUE_CHARS, "(query a narrower path, or describe_table)")
        items.append(M.ObjectOut(path=o.path, obj_type=o.value.get("obj_type"), vid=o.vid, leaf=o.leaf,
                                 value=value, cut=was_cut))
    out = M.QueryOut(snapshot=s.snap(vid), objects=items, total=pg.total, truncated=pg.truncated,
                     next_cursor=pg.next_cursor)
    return s.fit(out, f"{len(items)} of {pg.total} objects at vid {vid}", "objects", "query_catalog", vid, key,
                    offset)
