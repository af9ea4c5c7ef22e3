"""Data tools: a column's distinct values (get_column_values), one read-only SQL statement
(run_sql), the defined metrics (list_metrics) and a metric's rows (query_metric). Each reads the
data at exactly the vid its `snapshot` resolved to (`catalog_core.run_sql`) and carries the
warnings of the tables it read, only those the answer rests on. `register` publishes them."""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

import catalog_core as cc
from catalog_core import lake
from catalog_core.errors import CatalogError
from mcp_server.mcp import models as M
from mcp_server.mcp.args import (
    READ,
    ColumnValuesLimit,
    Cursor,
    MetricRowsLimit,
    MetricsLimit,
    Snapshot,
    SqlLimit,
    TableName,
)
from mcp_server.mcp.bounds import Cursor as PageCursor
from mcp_server.mcp.bounds import args_key, cut, encode_cursor, page
from mcp_server.mcp.context import LIMITS, TEXT_SUMMARY, ToolContext, cell
from mcp_server.mcp.errors import CodedToolError, catalog_error, closest, coded, guard, table_suggestions
from mcp_server.mcp.relevance import Use
from mcp_server.mcp.results import ToolResult
from mcp_server.mcp.sdk_errors import ToolError
from semantic.models import MetricView

if TYPE_CHECKING:  # the tools run without the SDK too (front.py, results.py: issue 47)
    from mcp_server.mcp.results import ToolServer

__all__ = ["register", "column_values", "sql_rows", "metrics", "metric_rows", "SQL_TIMEOUT_S"]

SQL_TIMEOUT_S = 10.0        # the tools' fixed time limit per statement


def register(server: ToolServer, s: ToolContext) -> None:
    """Publish the data tools of `s` on `server` (in the order the tool list shows them)."""

    @server.tool(annotations=READ)
    def get_column_values(
        table: TableName,
        column: Annotated[str, Field(description="column name")],
        query: Annotated[str | None, Field(description="only values containing this text (case-insensitive)")] = None,
        snapshot: Snapshot = None, limit: ColumnValuesLimit = LIMITS["get_column_values"][0],
        cursor: Cursor = None,
    ) -> Annotated[ToolResult, M.ColumnValuesOut]:
        """Distinct values of a column with counts, from the data: use it to write filter literals
        exactly as stored (e.g. 'Northeast' vs 'NE')."""
        return guard(lambda: column_values(s, table, column, query, snapshot, limit, cursor))

    @server.tool(annotations=READ)
    def list_metrics(
        table: Annotated[str | None, Field(description="only metrics of this table")] = None,
        query: Annotated[str | None, Field(description="words matching a metric's name, description or synonyms")]
        = None,
        snapshot: Snapshot = None, limit: MetricsLimit = LIMITS["list_metrics"][0], cursor: Cursor = None,
    ) -> Annotated[ToolResult, M.MetricsOut]:
        """Defined business metrics with their SQL definitions: use these definitions (or
        query_metric) rather than inventing an aggregate."""
        return guard(lambda: metrics(s, table, query, snapshot, limit, cursor))

    @server.tool(annotations=READ)
    def query_metric(
        metric: Annotated[str, Field(description="metric name (table.metric when ambiguous)")],
        group_by: Annotated[list[str] | None, Field(description="dimension columns, e.g. ['dim_store.region']")] = None,
        where: Annotated[str | None, Field(description="extra SQL row condition")] = None,
        time_range: Annotated[list[str | None] | None, Field(
            min_length=2, max_length=2, description="[start inclusive, end exclusive] ISO dates; either may be null")]
        = None,
        grain: Annotated[Literal["day", "week", "month", "quarter", "year", "fiscal_week", "fiscal_period",
                                 "fiscal_quarter", "fiscal_year"] | None, Field(
            description="time grain of the metric's time column")] = None,
        snapshot: Snapshot = None, limit: MetricRowsLimit = LIMITS["query_metric"][0],
        cursor: Cursor = None,
    ) -> Annotated[ToolResult, M.MetricQueryOut]:
        """Compute a defined metric by dimensions and time grain: returns rows and the SQL it ran."""
        return guard(lambda: metric_rows(s, metric, group_by, where, time_range, grain, snapshot, limit, cursor))

    @server.tool(annotations=READ)
    def run_sql(
        sql: Annotated[str, Field(description="one read-only DuckDB SELECT; tables as catalog.namespace.table")],
        snapshot: Snapshot = None, limit: SqlLimit = LIMITS["run_sql"][0],
        cursor: Cursor = None,
    ) -> Annotated[ToolResult, M.SqlOut]:
        """Run one read-only SQL statement over exactly the files of the snapshot: rows (bounded),
        the tables it read, and warnings for deprecated or stale tables it used."""
        return guard(lambda: sql_rows(s, sql, snapshot, limit, cursor))


def column_values(s: ToolContext, table: str, column: str, query: str | None, snapshot: int | str | None,
                      limit: int, cursor: str | None = None) -> tuple[M.ColumnValuesOut, str]:
    key = args_key(table=table, column=column, query=query)
    vid, offset = s.at(snapshot, cursor, "get_column_values", key)
    obj = s.table(table, vid, "select")
    name = lake.name_of(obj.path)
    cols = lake.TableValue.from_raw(obj.value).schema.names
    if column not in cols:
        close = closest(column, cols) if isinstance(column, str) else []
        hint = ("did you mean " + " or ".join(repr(c) for c in close) + "?") if close else \
            f"its columns are {', '.join(cols[:30])}" + (" ..." if len(cols) > 30 else "")
        raise CodedToolError(f"table {name} has no column {column!r}; {hint}", "NotFoundError")
    q = '"' + column.replace('"', '""') + '"'
    where = ""
    if query:
        lit = "'%" + query.replace("'", "''").replace("%", "\\%").replace("_", "\\_") + "%'"
        where = f" WHERE CAST({q} AS VARCHAR) ILIKE {lit} ESCAPE '\\'"
    sql = (f"SELECT {q} AS value, count(*) AS n, count(*) OVER () AS distinct_values FROM {name}{where} "
           f"GROUP BY {q} ORDER BY n DESC, value NULLS LAST LIMIT {int(limit)} OFFSET {int(offset)}")
    try:
        res = cc.run_sql(s.cat, sql, snapshot=vid, limit=limit, timeout_s=SQL_TIMEOUT_S)
    except CatalogError as exc:
        raise coded(exc, f"could not read the values of {name}.{column}: {cut(str(exc), 600)}") from None
    values = [M.ValueCount(value=cell(r[0]), count=int(r[1])) for r in res.rows]
    total = int(res.rows[0][2]) if res.rows else 0
    more = total > offset + len(values)
    out = M.ColumnValuesOut(snapshot=s.snap(vid), table=name, column=column, values=values, total=total,
                            truncated=more, warnings=s.table_warnings(
                                name, vid, Use(frozenset({name}), frozenset({column.lower()}))),
                            next_cursor=encode_cursor(PageCursor("get_column_values", vid, offset + len(values), key))
                            if more else None)
    return s.fit(out, f"{len(values)} of {total} distinct values of {name}.{column} at vid {vid}", "values",
                    "get_column_values", vid, key, offset)


def sql_rows(s: ToolContext, sql: str, snapshot: int | str | None, limit: int,
            cursor: str | None = None) -> tuple[M.SqlOut, str]:
    if not isinstance(sql, str) or not sql.strip():
        raise CodedToolError("sql must be one read-only SELECT statement", "InvalidValueError")
    key = args_key(sql=sql)
    vid, offset = s.at(snapshot, cursor, "run_sql", key)
    s.check_sql(sql, vid)  # under grants: an ungranted table is refused as a missing one
    tables = s.sql_tables(sql, vid)
    try:  # a later page runs the statement again at the same snapshot and skips the rows already shown
        res = cc.run_sql(s.cat, sql, snapshot=vid, limit=offset + limit, timeout_s=SQL_TIMEOUT_S)
    except CatalogError as exc:
        raise _sql_error(s, exc, sql, vid) from None
    rows = [[cell(v) for v in r] for r in res.rows[offset:]]
    nxt = encode_cursor(PageCursor("run_sql", vid, offset + len(rows), key)) if res.truncated else None
    out = M.SqlOut(snapshot=s.snap(vid), columns=[M.SqlColumnOut(name=c.name, type=c.type) for c in res.columns],
                   rows=rows, row_count=len(rows), truncated=res.truncated, next_cursor=nxt, tables=tables,
                   warnings=s.warnings_for(tables, vid, s.sql_use(sql, tables)) + s.period_warnings(sql, tables, vid))
    more = " (truncated)" if res.truncated else ""
    out, summary = s.fit(out, f"{len(rows)} rows{more} x {len(res.columns)} columns at vid {vid} from "
                            f"{', '.join(tables) or 'no table'}", "rows", "run_sql", vid, key, offset)
    out.row_count = len(out.rows)
    return out, summary


def _sql_error(s: ToolContext, exc: CatalogError, sql: str, vid: int) -> ToolError:
    msg = str(exc)
    m = re.search(r"Table with name (\S+) does not exist", msg) or re.search(r"Catalog \"?([\w.]+)\"? does not exist", msg)
    hint = ""
    if m:
        hint = "; " + table_suggestions(m.group(1).strip('"'), s.tables(vid))
    else:
        m = re.search(r'column "?([\w]+)"? not found|Referenced column "?(\w+)"? not found', msg, re.I)
        if m:
            word = m.group(1) or m.group(2)
            cols = [n for t in s.sql_tables(sql, vid) for n in lake.TableValue.from_raw(s.tables(vid)[t].value).schema.names]
            close = closest(word, cols)
            if close:
                hint = "; did you mean " + " or ".join(repr(c) for c in close) + "?"
    if hint and "describe_table" not in msg:
        hint += "; describe_table shows a table's columns"
    return coded(exc, cut(msg, 1200) + hint)


def metrics(s: ToolContext, table: str | None, query: str | None, snapshot: int | str | None, limit: int,
                 cursor: str | None) -> tuple[M.MetricsOut, str]:
    key = args_key(table=table, query=query)
    vid, offset = s.at(snapshot, cursor, "list_metrics", key)
    name = None if not table else lake.name_of(s.table(table, vid).path)
    try:
        found = s.reads.metrics(s.cat, name, vid)
    except CatalogError as exc:
        raise catalog_error(exc, lambda: list(s.tables(vid))) from None
    if s.limits(vid) is not None:  # under grants: the metrics of tables the caller may describe
        visible = s.tables(vid)
        found = [m for m in found if m.table in visible]
    if query:
        from rapidfuzz import fuzz

        q = query.lower()

        def score(m: MetricView) -> float:
            text = " ".join([m.name, m.description or "", " ".join(m.synonyms)]).lower().replace("_", " ")
            return max(fuzz.WRatio(q, m.name.lower()), fuzz.token_set_ratio(q, text), fuzz.partial_ratio(q, text))
        found = sorted((m for m in found if score(m) >= 60), key=lambda m: -score(m))
    pg = page(found, limit, offset, "list_metrics", vid, key)
    items = [M.MetricOut(name=m.qualified, table=m.table, expression=cut(m.expression, 600),
                         filter=None if m.filter is None else cut(m.filter, 400), time_column=m.time_column,
                         unit=m.unit, description=None if m.description is None else cut(m.description, TEXT_SUMMARY),
                         synonyms=list(m.synonyms)[:10], status=_metric_status(s, m, vid))
             for m in pg.items]
    out = M.MetricsOut(snapshot=s.snap(vid), metrics=items, total=pg.total, truncated=pg.truncated,
                       next_cursor=pg.next_cursor, warnings=s.warnings_for([m.table for m in items], vid))
    return s.fit(out, f"{len(items)} of {pg.total} metrics at vid {vid}" + (
        f": {', '.join(m.name for m in items[:5])}" if items else ""), "metrics", "list_metrics", vid, key, offset)


def _metric_status(s: ToolContext, m: MetricView, vid: int) -> Any:
    """The status the metric's table card gives it (None without a card)."""
    card = s.card(m.table, vid)
    if card is None:
        return None
    for mv in card.metrics:
        if mv.name == m.name:
            return mv.status
    return None


def _check_metric(s: ToolContext, metric: str, vid: int) -> None:
    """Under grants: a metric of a table the caller may not select is refused as an unknown metric
    would be by a caller who may (one message for both, naming only metrics it may see)."""
    if s.limits(vid) is None or not isinstance(metric, str):
        return
    every = s.reads.metrics(s.cat, None, vid)
    mine = [m for m in every if m.table in s.tables(vid) and s.may("select", lake.table_path(m.table), vid)]
    if any(metric in (m.qualified, m.name) for m in mine):
        return
    names = [m.qualified for m in mine]
    close = closest(metric, names + [n.rsplit(".", 1)[-1] for n in names])
    hint = ("did you mean " + " or ".join(repr(c) for c in close) + "?") if close else "list_metrics lists the metrics"
    raise CodedToolError(f"unknown metric {metric!r}; {hint}", "NotFoundError")


def metric_rows(s: ToolContext, metric: str, group_by: list[str] | None, where: str | None,
                 time_range: list[str | None] | None, grain: str | None, snapshot: int | str | None,
                 limit: int, cursor: str | None = None) -> tuple[M.MetricQueryOut, str]:
    key = args_key(metric=metric, group_by=group_by, where=where, time_range=time_range, grain=grain)
    vid, offset = s.at(snapshot, cursor, "query_metric", key)
    _check_metric(s, metric, vid)
    try:
        sql = s.reads.metric_sql(s.cat, metric, group_by=list(group_by or []), where=where,
                                 time_range=None if time_range is None else tuple(time_range), grain=grain, vid=vid)
    except CatalogError as exc:
        msg = str(exc)
        if "did you mean" not in msg.lower() and "metric" in msg.lower():
            names = [m.qualified for m in s.reads.metrics(s.cat, None, vid)]
            close = closest(metric, names + [n.rsplit(".", 1)[-1] for n in names])
            if close:
                msg += "; did you mean " + " or ".join(repr(c) for c in close) + "?"
            else:
                msg += "; list_metrics lists the metrics"
        raise coded(exc, msg) from None
    s.check_sql(sql, vid)
    try:
        res = cc.run_sql(s.cat, sql, snapshot=vid, limit=offset + limit, timeout_s=SQL_TIMEOUT_S)
    except CatalogError as exc:
        raise coded(exc, f"the metric's SQL failed: {cut(str(exc), 800)}; SQL: {cut(sql, 800)}") from None
    rows = [[cell(v) for v in r] for r in res.rows[offset:]]
    nxt = encode_cursor(PageCursor("query_metric", vid, offset + len(rows), key)) if res.truncated else None
    tables = s.sql_tables(sql, vid)
    use = dataclasses.replace(s.sql_use(sql, tables), metric=metric, uses_metrics=True)
    out = M.MetricQueryOut(snapshot=s.snap(vid), metric=metric, sql=sql,
                           columns=[M.SqlColumnOut(name=c.name, type=c.type) for c in res.columns], rows=rows,
                           truncated=res.truncated, next_cursor=nxt,
                           warnings=s.warnings_for(tables, vid, use) + s.period_warnings(sql, tables, vid))
    return s.fit(out, f"{metric}: {len(rows)} rows{' (truncated)' if res.truncated else ''} at vid {vid}", "rows",
                    "query_metric", vid, key, offset)
