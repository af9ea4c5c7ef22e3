"""Metrics: `define_metric` stores one (validated), `metrics` lists them, `metric_sql` compiles one
with dimensions, a filter, a time range and a time grain into a single DuckDB statement.

Scope. A metric's expression and filter, and `metric_sql`'s dimensions and `where`, may use the
columns of the metric's table and of every table reachable from it by canonical relationships read
in their many-to-one (or one-to-one) direction, so joining never multiplies the metric's rows. A
column is named bare (`status`) or qualified by the table's short or full name
(`fct_orders.status`). A bare name resolves to the metric's table first, else to the nearest
table that has it; two equally near tables with that column are an error asking to qualify it.

Grains. `day`, `week` (ISO weeks starting Monday), `month`, `quarter`, `year` truncate the metric's
`time_column`. `fiscal_week`, `fiscal_period`, `fiscal_quarter` and `fiscal_year` read the date
dimension: a table with a DATE column `date` and `fiscal_*` columns that some relationship reaches
(found by its columns and annotations, never by name). The metric's table joins it directly on
`time_column = date` when a relationship says so, else on the date of `time_column`; the result
has `fiscal_year` plus the grain's own column."""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from catalog_core.errors import InvalidValueError
from semantic import _sql
from semantic._model import model, table_info
from semantic._tables import Column, TableInfo, catalog_names, short
from semantic.annotations import check_provenance, new_annotation, write_annotations
from semantic.errors import (
    InvalidAnnotationError,
    InvalidExpressionError,
    UnknownColumnError,
    UnknownMetricError,
    did_you_mean,
    listing,
    suggest,
)
from semantic.joins import Aliases, Edge, join_clause, live_graph, shortest
from semantic.models import Metric, MetricView, RelationshipView

if TYPE_CHECKING:
    from catalog_core.api import CatalogAPI, SnapshotRef

__all__ = ["define_metric", "metrics", "metric_sql", "MetricView", "GRAINS", "FISCAL_GRAINS"]

CALENDAR_GRAINS = ("day", "week", "month", "quarter", "year")
FISCAL_GRAINS = ("fiscal_week", "fiscal_period", "fiscal_quarter", "fiscal_year")
GRAINS = CALENDAR_GRAINS + FISCAL_GRAINS
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_TIME_FAMILIES = ("date", "timestamp")


# ---------------------------------------------------------------- scope

@dataclass
class Scope:
    """The metric's table and the tables its canonical many-to-one joins reach, nearest first."""

    base: TableInfo
    tables: dict[str, TableInfo]
    paths: dict[str, list[Edge]]
    vid: int
    joins: dict[tuple[Any, ...], str] = field(default_factory=dict)  # generated JOIN clauses

    def ordered(self) -> list[TableInfo]:
        return sorted(self.tables.values(), key=lambda t: (len(self.paths[t.name]), t.name))

    def columns(self) -> list[str]:
        out = [c.name for c in self.base.columns]
        for t in self.ordered()[1:]:
            out += [f"{t.short}.{c.name}" for c in t.columns]
        return out

    def resolve(self, node: exp.Column, text: str, what: str) -> tuple[TableInfo, Column]:
        """The table and column a (maybe qualified) column reference names."""
        name = node.name
        if node.table:
            q = ".".join(p for p in (node.catalog, node.db, node.table) if p)
            hits = [t for t in self.ordered() if q in (t.name, t.short)]
            if not hits:
                close = did_you_mean(q, [t.short for t in self.ordered()])
                raise UnknownColumnError(f"{what}: table {q!r} is not {self.base.name} or reachable from it by "
                                        f"canonical many-to-one joins{suggest(close)} "
                                        f"(reachable tables: {listing(t.name for t in self.ordered())})"
                                        f"{_sql.at(text, node)}", table=q, did_you_mean=close)
            col = hits[0].find(name)
            if col is None:
                close = did_you_mean(name, [c.name for c in hits[0].columns])
                raise UnknownColumnError(f"{what}: {name!r} is not a column of {hits[0].name}{suggest(close)}"
                                         f"{_sql.at(text, node)}", column=name, did_you_mean=close)
            return hits[0], col
        found = self.base.find(name)
        if found is not None:
            return self.base, found
        near = [(len(self.paths[t.name]), t) for t in self.ordered() if t.find(name) is not None]
        if not near:
            close = did_you_mean(name, self.columns())
            raise UnknownColumnError(f"{what}: unknown column {name!r}{suggest(close)} "
                                     f"(columns reachable from {self.base.name} by canonical many-to-one joins: "
                                     f"{listing(self.columns(), limit=60)}){_sql.at(text, node)}", column=name,
                                     did_you_mean=close)
        nearest = [t for d, t in near if d == near[0][0]]
        if len(nearest) > 1:
            options = " or ".join(f"{t.short}.{name}" for t in nearest)
            raise InvalidValueError(f"{what}: column {name!r} is ambiguous ({options}); qualify it"
                                    f"{_sql.at(text, node)}", column=name)
        t = nearest[0]
        col = t.find(name)
        assert col is not None
        return t, col


def _many_to_one(e: Edge) -> bool:
    return e.rel.canonical and e.cardinality in ("many_to_one", "one_to_one")


def scope(cat: CatalogAPI, table: TableInfo, vid: int) -> Scope:
    memo = model(cat, table.name.split(".")[0], vid).memo
    key = ("scope", table.name)
    if key not in memo:
        g, tables = live_graph(cat, vid, [table.name.split(".")[0]])
        paths = shortest(g, table.name, usable=_many_to_one)
        tables[table.name] = table
        memo[key] = Scope(table, {t: tables[t] for t in paths}, paths, vid)
    return memo[key]


def _refs(tree: exp.Expression, sc: Scope, text: str, what: str) -> list[tuple[exp.Column, TableInfo, Column]]:
    return [(c, *sc.resolve(c, text, what)) for c in list(tree.find_all(exp.Column))]


def _check_aggregate(tree: exp.Expression, text: str) -> None:
    what = "metric expression"
    for node in tree.walk():
        if isinstance(node, exp.Window):
            raise InvalidExpressionError(f"{what} must not use window functions (OVER ...); a metric is one aggregate per group")
    if tree.find(exp.AggFunc) is None:
        raise InvalidExpressionError(f"{what} {text!r} must be an aggregate such as sum(x), count(DISTINCT id), avg(x) or "
                       "sum(a) / count(b)", text=text)
    for c in tree.find_all(exp.Column):
        parent = c.parent
        while parent is not None and not isinstance(parent, exp.AggFunc):
            parent = parent.parent
        if parent is None:
            raise InvalidExpressionError(f"{what}: column {c.name!r} is outside an aggregate; put every column inside one "
                           f"(e.g. sum({c.name})){_sql.at(text, c)}", text=text, column=c.name)


def _check_condition(tree: exp.Expression, text: str, what: str) -> None:
    agg = tree.find(exp.AggFunc)
    if agg is not None or tree.find(exp.Window) is not None:
        raise InvalidExpressionError(f"{what} must be a row condition, without aggregates or window functions: {text!r}",
                       text=text)


# ---------------------------------------------------------------- define_metric

def define_metric(cat: CatalogAPI, table: str, name: str, *, expression: str, filter: str | None = None,
                  time_column: str | None = None, unit: str | None = None, description: str | None = None,
                  synonyms: Iterable[str] = (), author: str, source: str = "human", confidence: float = 1.0,
                  note: str | None = None, time: float | str | None = None) -> int:
    """Store metric `name` on `table`: `expression` is one SQL aggregate, `filter` a row condition,
    both over columns in scope (the table's, and those of tables reachable by canonical many-to-one
    joins); `time_column` (a DATE or TIMESTAMP column of the table) dates it for time ranges and
    grains. Validated before anything is written; returns the commit's vid (`time` backdates it)."""
    check_provenance(author, source, confidence, note)
    vid = cat.resolve(None)
    t = table_info(cat, table, vid)
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidAnnotationError(f"metric name must start with a letter and hold only letters, digits and '_' "
                                f"(it becomes a SQL column name), got {name!r}")
    sc = scope(cat, t, vid)
    tree = _sql.parse_fragment(expression, "metric expression")
    _check_aggregate(tree, expression)
    used = [(tt, c) for _, tt, c in _refs(tree, sc, expression, "metric expression")]
    if filter is not None:
        ftree = _sql.parse_fragment(filter, "metric filter")
        _check_condition(ftree, filter, "metric filter")
        used += [(tt, c) for _, tt, c in _refs(ftree, sc, filter, "metric filter")]
    if time_column is not None:
        tc = t.column(time_column, "time_column")
        if tc.family not in _TIME_FAMILIES:
            raise InvalidAnnotationError(f"time_column {tc.name!r} of {t.name} is {tc.type}; it must be a DATE or "
                                    "TIMESTAMP column", column=tc.name)
        time_column = tc.name
        used.append((t, tc))
    for label, v in (("unit", unit), ("description", description)):
        if v is not None and not isinstance(v, str):
            raise InvalidAnnotationError(f"{label} must be text or None, got {v!r}", field=label)
    if isinstance(synonyms, str):
        synonyms = [synonyms]
    syn = list(synonyms)
    if not all(isinstance(s, str) and s.strip() for s in syn):
        raise InvalidAnnotationError(f"synonyms must be a list of non-empty strings, got {syn!r}", field="synonyms")
    value = Metric(expression=expression.strip(), filter=filter.strip() if filter else None, time_column=time_column,
                   unit=unit, description=description, synonyms=syn).model_dump(mode="json")
    cols = sorted({c.name for tt, c in used if tt.name == t.name})
    ann = new_annotation(cat, t.name, "metric", f"metric.{name}", value, columns=cols, author=author, source=source,
                         confidence=confidence, note=note, vid=vid, time=time, table=t.obj)
    return write_annotations(cat, [ann], time=time, message=f"define metric {t.name}.{name}")


# ---------------------------------------------------------------- metrics

def metrics(cat: CatalogAPI, table: str | None = None, snapshot: SnapshotRef = None) -> list[MetricView]:
    """The metrics defined on `table` (or on every table) at `snapshot`, by qualified name."""
    vid = cat.resolve(snapshot)
    if table is not None:
        anns = table_info(cat, table, vid).annotations
    else:
        anns = [a for c in catalog_names(cat, vid) for a in model(cat, c, vid).annotations("metric")]
    out = [m for m in map(MetricView.of, anns) if m is not None]
    return sorted(out, key=lambda m: m.qualified)


def _all_metrics(cat: CatalogAPI, vid: int) -> list[MetricView]:
    """Every metric at `vid` (memoized on the first catalog's model; the list is not mutated)."""
    cats = catalog_names(cat, vid)
    if not cats:
        return []
    memo = model(cat, cats[0], vid).memo
    if "metrics" not in memo:
        memo["metrics"] = metrics(cat, snapshot=vid)
    return memo["metrics"]


def find_metric(cat: CatalogAPI, metric: Any, vid: int) -> MetricView:
    """A metric by `name`, `table.name` (short table name) or `catalog.ns.table.name`; a `MetricView` is
    taken as given (its definition, whatever is stored: the review validates a value before writing it)."""
    if isinstance(metric, MetricView):
        return metric
    if not isinstance(metric, str) or not metric:
        raise InvalidValueError(f"metric must be a metric name such as 'net_revenue' or "
                                f"'fct_order_items.net_revenue', got {metric!r}")
    every = _all_metrics(cat, vid)
    prefix, _, name = metric.rpartition(".")
    if not prefix:
        hits = [m for m in every if m.name == metric]
    else:
        hits = [m for m in every if m.name == name and prefix in (m.table, short(m.table))]
    if len(hits) == 1:
        return hits[0]
    if len(hits) > 1:
        raise InvalidValueError(f"metric {metric!r} is ambiguous: {', '.join(m.qualified for m in hits)}; "
                                "qualify it as table.metric", metric=metric)
    names = [m.qualified for m in every] + [m.name for m in every] + [f"{short(m.table)}.{m.name}" for m in every]
    close = did_you_mean(metric, names)
    raise UnknownMetricError(f"no metric {metric!r} at vid {vid}{suggest(close)} "
                             f"(defined metrics: {listing(m.qualified for m in every) or 'none'})", metric=metric,
                             did_you_mean=close)


# ---------------------------------------------------------------- metric_sql

def _date_literal(value: Any, family: str, label: str) -> exp.Expression:
    try:
        if family == "date":
            if isinstance(value, _dt.datetime):
                if value.time() != _dt.time(0):
                    raise ValueError("a date column needs a date bound")
                value = value.date()
            d = value if isinstance(value, _dt.date) else _dt.date.fromisoformat(str(value))
            return exp.Cast(this=exp.Literal.string(d.isoformat()), to=_sql.dtype("DATE"))
        if isinstance(value, _dt.date) and not isinstance(value, _dt.datetime):
            value = _dt.datetime.combine(value, _dt.time(0))
        ts = value if isinstance(value, _dt.datetime) else _dt.datetime.fromisoformat(str(value))
        return exp.Cast(this=exp.Literal.string(ts.isoformat(sep=" ")), to=_sql.dtype("TIMESTAMP"))
    except (ValueError, TypeError):
        raise InvalidValueError(f"time_range {label} must be an ISO date ('2025-02-02') or a date/datetime, "
                                f"got {value!r}") from None


def _time_range(time_range: Any) -> tuple[Any, Any]:
    if (not isinstance(time_range, (list, tuple)) or len(time_range) != 2
            or all(v is None for v in time_range)):
        raise InvalidValueError(f"time_range must be (start, end): start inclusive, end exclusive, either may be "
                                f"None but not both, e.g. ('2025-02-02', '2025-03-02'); got {time_range!r}")
    return time_range[0], time_range[1]


def _fiscal_candidates(sc: Scope, cat: CatalogAPI, grain: str) -> list[TableInfo]:
    """Date dimensions: a DATE column `date` plus fiscal_year and the grain's column, reached by a
    relationship on `date` (from anywhere in the catalog) or in the metric's scope."""
    need = {"fiscal_year", grain}
    m = model(cat, sc.base.name.split(".")[0], sc.vid)
    related = set(sc.tables)
    for rel in map(RelationshipView.of, m.annotations("relationship")):
        if rel is None:
            continue
        if any(b.lower() == "date" for _, b in rel.on):
            related.add(rel.to)
        if any(a.lower() == "date" for a, _ in rel.on):
            related.add(rel.from_table)
    out = []
    for t in m.tables.values():
        d = t.find("date")
        if t.name in related and d is not None and d.family == "date" and all(t.find(c) for c in need):
            out.append(t)
    if len(out) > 1:  # prefer those whose declared grain is the date
        keyed = [t for t in out if _grain_keys(t) == ["date"]]
        out = keyed or out
    return out


def _grain_keys(t: TableInfo) -> list[str] | None:
    a = t.annotation("table.grain")
    v = a.value if a is not None else None
    if isinstance(v, dict) and isinstance(v.get("keys"), list):
        return [str(k).lower() for k in v["keys"]]
    return None


class _Compiler:
    def __init__(self, cat: CatalogAPI, sc: Scope) -> None:
        self.cat, self.sc = cat, sc
        self.aliases = Aliases()
        self.aliases.of(sc.base.name)
        self.needed: list[str] = []  # tables to join, in join order
        self.extra_joins: list[exp.Join] = []

    def need(self, table: str) -> str:
        for e in self.sc.paths[table]:
            if e.dst not in self.needed:
                self.needed.append(e.dst)
                self.aliases.of(e.dst)
        return self.aliases.of(table)

    def qualify(self, tree: exp.Expression, text: str, what: str) -> exp.Expression:
        refs = {id(c): (t, col) for c, t, col in _refs(tree, self.sc, text, what)}

        def fix(node: exp.Expression) -> exp.Expression:
            if isinstance(node, exp.Column) and id(node) in refs:
                t, col = refs[id(node)]
                return _sql.col(col.name, self.need(t.name))
            return node
        return tree.transform(fix, copy=False)

    def join_sql(self) -> list[str]:
        """The LEFT JOIN clauses, each generated once per (hop, aliases) at the vid."""
        memo = self.sc.joins
        out = []
        for table in self.needed:
            e = self.sc.paths[table][-1]
            src, dst = self.aliases.of(e.src), self.aliases.of(e.dst)
            key = (e.rel.from_table, e.rel.name, e.reversed, src, dst)
            if key not in memo:
                memo[key] = _sql.gen(join_clause(e, src, dst, self.sc.tables, kind="LEFT"))
            out.append(memo[key])
        return out + [_sql.gen(j) for j in self.extra_joins]


def _fiscal_join(comp: _Compiler, m: MetricView, tcol: Column, grain: str) -> str:
    """The alias of the date dimension joined on the metric's time column."""
    sc = comp.sc
    cands = _fiscal_candidates(sc, comp.cat, grain)
    if not cands:
        raise InvalidValueError(
            f"grain {grain!r} needs a date dimension: a table with a DATE column 'date' and columns fiscal_year "
            f"and {grain}, related to the lake (relate(cat, {sc.base.name!r}, <date table>, "
            f"on=[({tcol.name!r}, 'date')])); none found in {sc.base.name.split('.')[0]}")
    if len(cands) > 1:
        raise InvalidValueError(f"grain {grain!r}: several date dimensions qualify ({listing(t.name for t in cands)}); "
                                "annotate the right one's grain as keys ['date'] (table.grain)")
    dd = cands[0]
    path = sc.paths.get(dd.name)
    if path and len(path) == 1 and path[0].pairs == [(tcol.name, dd.find("date").name)]:  # type: ignore[union-attr]
        return comp.need(dd.name)
    alias = comp.aliases.new(f"{dd.short}_{tcol.name}")
    left: exp.Expression = _sql.col(tcol.name, comp.aliases.of(sc.base.name))
    if tcol.family != "date":
        left = exp.Cast(this=left, to=_sql.dtype("DATE"))
    on = exp.EQ(this=left, expression=_sql.col(dd.find("date").name, alias))  # type: ignore[union-attr]
    comp.extra_joins.append(exp.Join(this=_sql.table_expr(dd.name, alias), on=on, side="LEFT"))
    return alias


def _dimensions(comp: _Compiler, sc: Scope, group_by: Sequence[Any]) -> list[tuple[exp.Expression, str]]:
    """The group_by columns as (expression, output name), each once; a name taken by an earlier
    dimension is prefixed with its table's short name. Joins them into `comp` in order."""
    dims: list[tuple[exp.Expression, str]] = []  # (expression, output name)
    seen: dict[tuple[str, str], str] = {}
    for d in group_by:
        if not isinstance(d, str) or not d.strip():
            raise InvalidValueError(f"group_by entries must be column names, got {d!r}")
        tree = _sql.parse_fragment(d, f"dimension {d!r}")
        if not isinstance(tree, exp.Column):
            raise InvalidValueError(f"dimension {d!r} must be a column (e.g. 'channel' or 'dim_store.region'); "
                                    f"dimensions available: {listing(sc.columns(), limit=60)}")
        t, c = sc.resolve(tree, d, f"dimension {d!r}")
        if (t.name, c.name) in seen:
            continue
        out_name = c.name if all(n != c.name for _, n in dims) else f"{t.short}__{c.name}"
        seen[(t.name, c.name)] = out_name
        dims.append((_sql.col(c.name, comp.need(t.name)), out_name))
    return dims


def _grains(comp: _Compiler, m: MetricView, tcol: Column | None, grain: str | None,
            base_alias: str) -> list[tuple[exp.Expression, str]]:
    """The time grain's output columns: the day, a calendar period's first day, or the fiscal
    year and period (joining the date dimension into `comp`)."""
    grains: list[tuple[exp.Expression, str]] = []
    if grain is None or tcol is None:
        return grains
    tc = _sql.col(tcol.name, base_alias)
    if grain == "day":
        grains.append((exp.Cast(this=tc, to=_sql.dtype("DATE")), "day"))
    elif grain in CALENDAR_GRAINS:
        trunc = exp.Anonymous(this="date_trunc", expressions=[exp.Literal.string(grain), tc])
        grains.append((exp.Cast(this=trunc, to=_sql.dtype("DATE")), grain))
    else:
        dd_alias = _fiscal_join(comp, m, tcol, grain)
        for fc in dict.fromkeys(("fiscal_year", grain)):
            grains.append((_sql.col(fc, dd_alias), fc))
    return grains


def _conditions(comp: _Compiler, m: MetricView, where: str | None, time_range: Sequence[Any] | None,
                tcol: Column | None, base_alias: str) -> list[exp.Expression]:
    """The WHERE conjuncts, in order: the metric's filter, `where`, then the time range's bounds."""
    conds: list[exp.Expression] = []
    if m.filter:
        conds.append(exp.Paren(this=comp.qualify(_sql.parse_fragment(m.filter, f"filter of metric {m.qualified}"),
                                                 m.filter, f"filter of metric {m.qualified}")))
    if where is not None:
        wtree = _sql.parse_fragment(where, "where")
        _check_condition(wtree, where, "where")
        conds.append(exp.Paren(this=comp.qualify(wtree, where, "where")))
    if time_range is not None and tcol is not None:
        start, end = _time_range(time_range)
        fam = tcol.family or "date"
        tc = _sql.col(tcol.name, base_alias)
        if start is not None:
            conds.append(exp.GTE(this=tc.copy(), expression=_date_literal(start, fam, "start")))
        if end is not None:
            conds.append(exp.LT(this=tc.copy(), expression=_date_literal(end, fam, "end")))
    return conds


def metric_sql(cat: CatalogAPI, metric: str | MetricView, group_by: Sequence[str] | str = (), where: str | None = None,
               time_range: Sequence[Any] | None = None, grain: str | None = None,
               snapshot: SnapshotRef = None) -> str:
    """One DuckDB SELECT computing `metric` per `group_by` dimension (columns of the metric's table or
    of tables reachable by canonical many-to-one joins) and per `grain` of its time column, over rows
    matching the metric's filter, `where` and `time_range` (start inclusive, end exclusive), ordered
    by the grain and the dimensions. Tables are named catalog.namespace.table, as in
    `cc.open_duckdb` and `cc.run_sql` at the same snapshot."""
    vid = cat.resolve(snapshot)
    m = find_metric(cat, metric, vid)
    base = table_info(cat, m.table, vid)
    sc = scope(cat, base, vid)
    comp = _Compiler(cat, sc)
    if isinstance(group_by, str):
        group_by = [group_by]
    if not isinstance(group_by, (list, tuple)):
        raise InvalidValueError(f"group_by must be a list of column names, got {group_by!r}")
    if grain is not None and grain not in GRAINS:
        raise InvalidValueError(f"grain must be one of {', '.join(GRAINS)}, got {grain!r}"
                                f"{suggest(did_you_mean(str(grain), GRAINS))}")
    tcol = None
    if grain is not None or time_range is not None:
        if not m.time_column:
            raise InvalidValueError(f"metric {m.qualified} has no time_column, so it has no grain or time range; "
                                    f"redefine it with define_metric(..., time_column=<date column>)")
        tcol = base.column(m.time_column, f"time_column of metric {m.qualified}")
    base_alias = comp.aliases.of(base.name)

    dims = _dimensions(comp, sc, group_by)
    grains = _grains(comp, m, tcol, grain, base_alias)
    names = {n for _, n in grains}
    dims = [(e, n if n not in names else f"{n}__dim") for e, n in dims]
    conds = _conditions(comp, m, where, time_range, tcol, base_alias)
    measure = comp.qualify(_sql.parse_fragment(m.expression, f"expression of metric {m.qualified}"),
                           m.expression, f"expression of metric {m.qualified}")

    # The statement is assembled from generated pieces: sqlglot's builder methods copy the whole
    # tree on every call, which was most of the compile time.
    keys = grains + dims
    cols = [f"{_sql.gen(e)} AS {_sql.quote(n)}" for e, n in keys] + [f"{_sql.gen(measure)} AS {_sql.quote(m.name)}"]
    parts = ["SELECT " + ", ".join(cols), "FROM " + _sql.gen(_sql.table_expr(base.name, base_alias))]
    parts += comp.join_sql()
    if conds:
        parts.append("WHERE " + " AND ".join(_sql.gen(c) for c in conds))
    if keys:
        ordinals = ", ".join(str(i) for i in range(1, len(keys) + 1))
        parts += [f"GROUP BY {ordinals}", f"ORDER BY {ordinals}"]
    return " ".join(parts)
