"""Relationships and the join graph: `relate` declares one, `join_path` finds how two tables join.

A relationship is stored on its FROM table (`relationship.<name>`) and is usable in both directions:
read backwards, `many_to_one` becomes `one_to_many` and the column pairs swap. `join_path` is a
shortest path with canonical edges first: a path made only of canonical relationships beats any path
that uses a non-canonical one, then fewer hops win, then fewer fan-out (one_to_many) hops, then the
names (so the answer is deterministic)."""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field
from sqlglot import exp

from catalog_core.errors import InvalidValueError
from semantic import _sql
from semantic._model import model, table_info, tables_of
from semantic._tables import TableInfo, catalog_names, short
from semantic.annotations import check_provenance, new_annotation, write_annotations
from semantic.errors import (
    InvalidAnnotationError,
    InvalidExpressionError,
    NoJoinPathError,
    UnknownColumnError,
    did_you_mean,
    listing,
    suggest,
)
from semantic.models import Cardinality, Relationship, RelationshipView

if TYPE_CHECKING:
    from catalog_core.api import CatalogAPI, SnapshotRef

__all__ = ["relate", "join_path", "relationships", "RelationshipView", "Hop", "JoinPath", "CardinalityCheck",
           "CARDINALITIES"]

CARDINALITIES: tuple[str, ...] = Cardinality.__args__  # type: ignore[attr-defined]
_REVERSE = {"many_to_one": "one_to_many", "one_to_many": "many_to_one", "one_to_one": "one_to_one"}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-]*\Z")


# ---------------------------------------------------------------- models

class Hop(BaseModel):
    """One join step as traversed (`reversed`: the relationship was declared the other way)."""

    from_table: str
    to_table: str
    from_alias: str
    to_alias: str
    on: list[tuple[str, str]] = Field(description="(column of from_table, column of to_table) pairs")
    cardinality: Cardinality = Field(description="as traversed: one_to_many multiplies from_table rows")
    canonical: bool
    condition: str | None
    relationship: str = Field(description="the relationship's name")
    declared_on: str = Field(description="the table that stores the relationship (its FROM table)")
    reversed: bool
    fan_out: bool
    sql: str = Field(description="the JOIN clause of this hop")


class CardinalityCheck(BaseModel):
    """depth='data': a hop's declared cardinality against the rows at the snapshot."""

    hop: int
    declared: Cardinality
    found: Cardinality | Literal["many_to_many"]
    ok: bool
    duplicate_keys_from: int = Field(description="key values of from_table held by more than one row")
    duplicate_keys_to: int = Field(description="key values of to_table held by more than one row")
    rows_from: int
    matched_from: int = Field(description="from_table rows with non-null keys that find a to_table row")
    match_rate: float | None
    message: str


class JoinPath(BaseModel):
    from_table: str
    to_table: str
    vid: int
    hops: list[Hop]
    cardinality: Cardinality | Literal["many_to_many"]
    canonical: bool = Field(description="every hop uses a canonical relationship")
    sql: str = Field(description="FROM ... JOIN ... clauses joining from_table to to_table")
    aliases: dict[str, str]
    warnings: list[str]
    depth: Literal["metadata", "data"] = "metadata"
    checks: list[CardinalityCheck] = Field(default_factory=list)


# ---------------------------------------------------------------- reading relationships

def relationships(cat: CatalogAPI, table: str | None = None, snapshot: SnapshotRef = None,
                  catalogs: Iterable[str] | None = None) -> list[RelationshipView]:
    """Relationships declared at `snapshot`: those touching `table` (either end), or all of the
    given catalogs (default: the table's catalog, else every catalog)."""
    vid = cat.resolve(snapshot)
    if catalogs is None:
        catalogs = [table.split(".")[0]] if table else catalog_names(cat, vid)
    out = _all_relationships(cat, vid, list(catalogs))
    if table is not None:
        out = [r for r in out if table in (r.from_table, r.to_table)]
    return out


def _all_relationships(cat: CatalogAPI, vid: int, catalogs: list[str]) -> list[RelationshipView]:
    """Relationships of the catalogs, and of every catalog their targets live in."""
    seen: set[str] = set()
    todo = list(dict.fromkeys(catalogs))
    out: list[RelationshipView] = []
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for a in model(cat, name, vid).annotations("relationship"):
            rel = RelationshipView.of(a)
            if rel is None:
                continue
            out.append(rel)
            target_catalog = rel.to_table.split(".")[0]
            if target_catalog not in seen:
                todo.append(target_catalog)
    return out


# ---------------------------------------------------------------- the graph

class Edge:
    """A relationship as traversed from `src` to `dst`."""

    __slots__ = ("rel", "reversed", "src", "dst", "pairs", "cardinality")

    def __init__(self, rel: RelationshipView, reverse: bool) -> None:
        self.rel, self.reversed = rel, reverse
        if reverse:
            self.src, self.dst = rel.to_table, rel.from_table
            self.pairs = [(b, a) for a, b in rel.on]
            self.cardinality = _REVERSE[rel.cardinality]
        else:
            self.src, self.dst = rel.from_table, rel.to_table
            self.pairs = list(rel.on)
            self.cardinality = rel.cardinality

    @property
    def fan_out(self) -> bool:
        return self.cardinality == "one_to_many"

    def sort_key(self) -> tuple[str, str, str, bool]:
        return (self.dst, self.rel.from_table, self.rel.name, self.reversed)


def graph(rels: Iterable[RelationshipView]) -> dict[str, list[Edge]]:
    g: dict[str, list[Edge]] = {}
    for r in rels:
        for rev in (False, True):
            e = Edge(r, rev)
            g.setdefault(e.src, []).append(e)
    for edges in g.values():
        edges.sort(key=Edge.sort_key)
    return g


def shortest(g: dict[str, list[Edge]], start: str, goal: str | None = None,
             usable: Any = None) -> dict[str, list[Edge]]:
    """Best path from `start` to every reachable table (or until `goal`), by
    (non-canonical hops, hops, fan-out hops, names). `usable(edge)` filters edges."""
    best: dict[str, tuple] = {start: (0, 0, 0, ())}
    paths: dict[str, list[Edge]] = {start: []}
    heap: list[tuple[tuple, str]] = [((0, 0, 0, ()), start)]
    done: set[str] = set()
    while heap:
        cost, node = heapq.heappop(heap)
        if node in done:
            continue
        done.add(node)
        if node == goal:
            break
        for e in g.get(node, []):
            if e.dst in done or (usable is not None and not usable(e)):
                continue
            nc = (cost[0] + (not e.rel.canonical), cost[1] + 1, cost[2] + e.fan_out, cost[3] + (e.sort_key(),))
            if e.dst not in best or nc < best[e.dst]:
                best[e.dst] = nc
                paths[e.dst] = paths[node] + [e]
                heapq.heappush(heap, (nc, e.dst))
    return {t: p for t, p in paths.items() if t in done}


def compose(cards: Iterable[str]) -> str:
    """The cardinality of a chain of hops."""
    left = right = False
    for c in cards:
        left |= c == "many_to_one"
        right |= c == "one_to_many"
    return {(False, False): "one_to_one", (True, False): "many_to_one", (False, True): "one_to_many",
            (True, True): "many_to_many"}[(left, right)]


class Aliases:
    """Unique SQL aliases per table (the short name, then `_2`, `_3`, ...)."""

    def __init__(self) -> None:
        self.by_table: dict[str, str] = {}
        self.used: set[str] = set()

    def new(self, base: str) -> str:
        alias, n = base, 1
        while alias.lower() in self.used:
            n += 1
            alias = f"{base}_{n}"
        self.used.add(alias.lower())
        return alias

    def of(self, table: str) -> str:
        if table not in self.by_table:
            self.by_table[table] = self.new(short(table))
        return self.by_table[table]


# ---------------------------------------------------------------- conditions

def _sides(cond: exp.Expression, text: str, left: TableInfo, right: TableInfo, what: str) -> list[tuple[exp.Column, str]]:
    """Each column of a relationship condition with the side it belongs to ("from" or "to").
    Unqualified columns are looked up in the TO table first, then the FROM table."""
    out = []
    for c in cond.find_all(exp.Column):
        q = c.table
        if q:
            full = ".".join(p for p in (c.catalog, c.db, q) if p)
            sides = [s for s, t in (("to", right), ("from", left)) if full in (t.name, t.short)]
            if not sides:
                raise InvalidExpressionError(f"{what}: {full!r} is neither {left.name} nor {right.name}; qualify "
                                        f"columns with {left.short!r} or {right.short!r}{_sql.at(text, c)}")
            side = sides[0]
            t = right if side == "to" else left
            if t.find(c.name) is None:
                close = did_you_mean(c.name, [x.name for x in t.columns])
                raise UnknownColumnError(f"{what}: {c.name!r} is not a column of {t.name}{suggest(close)}"
                                         f"{_sql.at(text, c)}", table=t.name, column=c.name, did_you_mean=close)
        elif right.find(c.name) is not None:
            side = "to"
        elif left.find(c.name) is not None:
            side = "from"
        else:
            close = did_you_mean(c.name, [x.name for x in right.columns] + [x.name for x in left.columns])
            raise UnknownColumnError(f"{what}: {c.name!r} is not a column of {right.name} or {left.name}"
                                     f"{suggest(close)}{_sql.at(text, c)}", column=c.name, did_you_mean=close)
        out.append((c, side))
    return out


def qualified_condition(rel: RelationshipView, from_alias: str, to_alias: str, tables: dict[str, TableInfo]) -> exp.Expression:
    """The relationship's condition with every column qualified by its side's alias (aliases
    given for the relationship's own FROM and TO tables)."""
    assert rel.condition is not None
    text = rel.condition
    tree = _sql.parse_fragment(text, f"condition of relationship {rel.name!r}")
    sides = dict((id(c), s) for c, s in _sides(tree, text, tables[rel.from_table], tables[rel.to_table],
                                                f"condition of relationship {rel.name!r}"))

    def fix(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and id(node) in sides:
            return _sql.col(node.name, to_alias if sides[id(node)] == "to" else from_alias)
        return node
    return tree.transform(fix, copy=False)


def condition_for(rel: RelationshipView, side_table: str, alias: str, tables: dict[str, TableInfo]) -> exp.Expression | None:
    """The conjuncts of the condition that only use columns of `side_table` (the FROM or TO end),
    qualified by `alias`; None when there are none."""
    if rel.condition is None:
        return None
    text = rel.condition
    what = f"condition of relationship {rel.name!r}"
    keep = []
    side = "to" if side_table == rel.to_table else "from"
    for part in _sql.conjuncts(_sql.parse_fragment(text, what)):
        found = _sides(part, text, tables[rel.from_table], tables[rel.to_table], what)
        if all(s == side for _, s in found):
            ids = {id(c) for c, _ in found}
            keep.append(part.transform(lambda n, ids=ids: _sql.col(n.name, alias) if id(n) in ids else n,
                                       copy=False))
    return exp.and_(*keep) if keep else None  # type: ignore[return-value]


def join_on(edge: Edge, src_alias: str, dst_alias: str, tables: dict[str, TableInfo]) -> exp.Expression:
    parts: list[exp.Expression] = [exp.EQ(this=_sql.col(a, src_alias), expression=_sql.col(b, dst_alias))
                                   for a, b in edge.pairs]
    if edge.rel.condition:
        fa, ta = (dst_alias, src_alias) if edge.reversed else (src_alias, dst_alias)
        parts.append(exp.Paren(this=qualified_condition(edge.rel, fa, ta, tables)))
    return exp.and_(*parts)  # type: ignore[return-value]


def join_clause(edge: Edge, src_alias: str, dst_alias: str, tables: dict[str, TableInfo],
                kind: str | None = None) -> exp.Join:
    return exp.Join(this=_sql.table_expr(edge.dst, dst_alias), on=join_on(edge, src_alias, dst_alias, tables),
                    side=kind)


# ---------------------------------------------------------------- relate

def _pairs(on: Any) -> list[tuple[str, str]]:
    if isinstance(on, str):
        on = [on]
    if not isinstance(on, (list, tuple)) or not on:
        raise InvalidAnnotationError(f"on must be a list of (from_column, to_column) pairs, got {on!r}")
    out = []
    for item in on:
        if isinstance(item, str):
            out.append((item, item))
        elif (isinstance(item, (list, tuple)) and len(item) == 2 and all(isinstance(x, str) and x for x in item)):
            out.append((item[0], item[1]))
        else:
            raise InvalidAnnotationError(f"on must be a list of (from_column, to_column) pairs of column names; "
                                    f"{item!r} is not one")
    if len(set(out)) != len(out):
        raise InvalidAnnotationError(f"on lists a column pair twice: {on!r}")
    return out


def check_cardinality(cardinality: Any) -> str:
    if cardinality not in CARDINALITIES:
        close = did_you_mean(str(cardinality).replace("-", "_").replace(" ", "_").lower(), CARDINALITIES, cutoff=50)
        raise InvalidAnnotationError(f"cardinality must be one of {', '.join(CARDINALITIES)}, got {cardinality!r}"
                                     f"{suggest(close)}", field="cardinality", did_you_mean=close)
    return str(cardinality)


def default_name(owner: TableInfo, to: str, pairs: Sequence[tuple[str, str]]) -> str:
    """`<to table>` unless the FROM table already relates to another table under that name or to
    the same table on other columns; then `<to table>__<from columns>`."""
    base = short(to)
    rels = [r for r in map(RelationshipView.of, owner.annotations) if r is not None]
    for rel in rels:
        if rel.to_table == to and list(rel.on) == list(pairs):
            return rel.name  # the same relationship: replace it
    taken = {r.name for r in rels}
    if base not in taken:
        return base
    name = base + "__" + "_".join(a for a, _ in pairs)
    n = 2
    while name in taken:
        name, n = f"{base}__{'_'.join(a for a, _ in pairs)}_{n}", n + 1
    return name


def relate(cat: CatalogAPI, from_table: str, to_table: str, on: Sequence[tuple[str, str]] | Sequence[str] | str,
           cardinality: str = "many_to_one", canonical: bool = True, name: str | None = None,
           condition: str | None = None, *, author: str, source: str = "human", confidence: float = 1.0,
           note: str | None = None, time: float | str | None = None) -> int:
    """Declare that rows of `from_table` join rows of `to_table` on the column pairs `on`
    (`[("order_id", "order_id")]`; a bare name means the same column on both sides). Everything is
    checked before anything is written: both tables exist, the columns exist on their side with
    comparable types, the cardinality is known, and `condition` (extra SQL such as `is_current`,
    over columns of either table) parses and names existing columns. Returns the commit's vid;
    `time` backdates the commit (simulated histories, imports)."""
    check_provenance(author, source, confidence, note)
    vid = cat.resolve(None)
    left = table_info(cat, from_table, vid, "from_table")
    right = table_info(cat, to_table, vid, "to_table")
    card = check_cardinality(cardinality)
    if not isinstance(canonical, bool):
        raise InvalidAnnotationError(f"canonical must be true or false, got {canonical!r}")
    pairs = []
    for a, b in _pairs(on):
        ca, cb = left.column(a, "from column"), right.column(b, "to column")
        if ca.family != cb.family and ca.family is not None and cb.family is not None:
            raise InvalidAnnotationError(
                f"cannot join {left.name}.{ca.name} ({ca.type}) to {right.name}.{cb.name} ({cb.type}): "
                f"{ca.family} and {cb.family} values never compare equal without a cast; relate columns of "
                "comparable types (or build a mapping table)", from_column=ca.name, to_column=cb.name)
        pairs.append((ca.name, cb.name))
    if condition is not None:
        text = condition
        _sides(_sql.parse_fragment(text, "condition"), text, left, right, "condition")
        condition = text.strip()
    if name is None:
        name = default_name(left, right.name, pairs)
    elif not isinstance(name, str) or not _NAME.match(name):
        raise InvalidAnnotationError(f"relationship name must be letters, digits, '_' or '-' (not starting with "
                                f"'_' or '-'), got {name!r}")
    value = Relationship(to=right.name, on=pairs, cardinality=card, canonical=canonical,  # type: ignore[arg-type]
                         condition=condition).model_dump(mode="json")
    ann = new_annotation(cat, left.name, "relationship", f"relationship.{name}", value,
                         columns=[a for a, _ in pairs], author=author, source=source, confidence=confidence,
                         note=note, vid=vid, time=time, table=left.obj)
    return write_annotations(cat, [ann], time=time, message=f"relate {left.name} -> {right.name} ({name})")


# ---------------------------------------------------------------- join_path

def live_graph(cat: CatalogAPI, vid: int, catalogs: list[str]) -> tuple[dict[str, list[Edge]], dict[str, TableInfo]]:
    """The join graph at `vid` over relationships whose both ends exist, and those tables."""
    rels = _all_relationships(cat, vid, catalogs)
    tables = tables_of(cat, vid, [r.from_table for r in rels] + [r.to_table for r in rels])
    rels = [r for r in rels if r.from_table in tables and r.to_table in tables]
    return graph(rels), tables


def join_path(cat: CatalogAPI, from_table: str, to_table: str, snapshot: SnapshotRef = None,
              depth: str = "metadata", usable: Callable[[str], bool] | None = None) -> JoinPath:
    """How `from_table` joins `to_table` at `snapshot`: the hops (canonical relationships first,
    then the fewest hops), their JOIN clauses with declared conditions, the cardinality of the whole
    path and warnings for every hop that fans out. `depth="data"` also checks each hop's declared
    cardinality and match rate against the rows at the snapshot (DuckDB). `usable(table)`: the tables
    a path may go through (grants: those the caller may see); the others are as if they did not exist."""
    if depth not in ("metadata", "data"):
        raise InvalidValueError(f"depth must be 'metadata' or 'data', got {depth!r}")
    vid = cat.resolve(snapshot)
    a = table_info(cat, from_table, vid, "from_table")
    b = table_info(cat, to_table, vid, "to_table")
    g, tables = live_graph(cat, vid, [a.name.split(".")[0], b.name.split(".")[0]])
    tables.setdefault(a.name, a)
    tables.setdefault(b.name, b)
    ok = None if usable is None else (lambda e: usable(e.dst))
    paths = shortest(g, a.name, goal=b.name, usable=ok)
    if b.name not in paths:
        reach = sorted(t for t in shortest(g, a.name, usable=ok) if t != a.name)
        what = f"tables reachable from {a.name}: {listing(reach)}" if reach else \
            f"{a.name} has no relationships at vid {vid}"
        raise NoJoinPathError(f"no join path from {a.name} to {b.name} at vid {vid} ({what}); declare one with "
                            f"relate(cat, {a.name!r}, {b.name!r}, on=[(from_column, to_column)], ...)",
                            from_table=a.name, to_table=b.name, reachable=reach)
    edges = paths[b.name]
    aliases = Aliases()
    aliases.of(a.name)
    hops: list[Hop] = []
    warnings: list[str] = []
    select = exp.select(exp.Star()).from_(_sql.table_expr(a.name, aliases.of(a.name)))
    prev_alias = aliases.of(a.name)
    for i, e in enumerate(edges, 1):
        # A table met twice on one path gets a new alias for its second appearance.
        dst_alias = aliases.new(short(e.dst)) if e.dst in aliases.by_table else aliases.of(e.dst)
        join = join_clause(e, prev_alias, dst_alias, tables)
        select = select.join(join.copy())
        hops.append(Hop(from_table=e.src, to_table=e.dst, from_alias=prev_alias, to_alias=dst_alias, on=e.pairs,
                        cardinality=e.cardinality, canonical=e.rel.canonical, condition=e.rel.condition,  # type: ignore[arg-type]
                        relationship=e.rel.name, declared_on=e.rel.from_table, reversed=e.reversed,
                        fan_out=e.fan_out, sql=_sql.gen(join)))
        if e.fan_out:
            warnings.append(f"hop {i} ({e.src} -> {e.dst}) is one_to_many: each {short(e.src)} row matches many "
                            f"{short(e.dst)} rows, so sums and counts of {short(e.src)} columns after this join "
                            f"are multiplied; aggregate {short(e.dst)} first or count distinct keys")
        if not e.rel.canonical:
            warnings.append(f"hop {i} uses the non-canonical relationship {e.rel.name!r} of {e.rel.from_table} "
                            f"(source {e.rel.source}, confidence {e.rel.confidence})")
        prev_alias = dst_alias
    card = compose(h.cardinality for h in hops)
    text = _sql.gen(select)
    from_sql = text[text.index(" FROM ") + 1:]
    out = JoinPath(from_table=a.name, to_table=b.name, vid=vid, hops=hops, cardinality=card,  # type: ignore[arg-type]
                   canonical=all(h.canonical for h in hops), sql=from_sql, aliases=dict(aliases.by_table),
                   warnings=warnings, depth=depth)  # type: ignore[arg-type]
    if depth == "data":
        for i, e in enumerate(edges, 1):
            check = check_hop(cat, vid, i, e, tables)
            out.checks.append(check)
            if not check.ok:
                out.warnings.append(check.message)
    return out


# ---------------------------------------------------------------- depth="data"

def _scalar_row(cat: CatalogAPI, select: exp.Expression, vid: int) -> list[Any]:
    from catalog_core import run_sql

    res = run_sql(cat, _sql.gen(select), snapshot=vid, limit=1)
    return list(res.rows[0]) if res.rows else []


def _dup_keys(cat: CatalogAPI, vid: int, table: str, cols: list[str], cond: exp.Expression | None) -> int:
    alias = "t"
    where = exp.and_(*[exp.Not(this=exp.Is(this=_sql.col(c, alias), expression=exp.Null())) for c in cols],
                     *( [cond] if cond is not None else []))
    inner = (exp.select(*[_sql.col(c, alias) for c in cols]).from_(_sql.table_expr(table, alias)).where(where)
             .group_by(*[_sql.col(c, alias) for c in cols])
             .having(exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(1))))
    q = exp.select(exp.Count(this=exp.Star())).from_(inner.subquery("d"))
    row = _scalar_row(cat, q, vid)
    return int(row[0] or 0) if row else 0


def check_hop(cat: CatalogAPI, vid: int, index: int, e: Edge, tables: dict[str, TableInfo]) -> CardinalityCheck:
    """Duplicate keys on both ends and the share of from-rows that find a match, with the
    conditions of each end applied to that end."""
    src_cols = [a for a, _ in e.pairs]
    dst_cols = [b for _, b in e.pairs]
    src_cond = condition_for(e.rel, e.src, "t", tables)
    dst_cond_t = condition_for(e.rel, e.dst, "t", tables)
    dup_src = _dup_keys(cat, vid, e.src, src_cols, src_cond)
    dup_dst = _dup_keys(cat, vid, e.dst, dst_cols, dst_cond_t)
    # match rate: from rows with non-null keys that find a to row (the to side deduplicated)
    m_where = exp.and_(*[exp.Not(this=exp.Is(this=_sql.col(c, "m"), expression=exp.Null())) for c in dst_cols],
                       *([condition_for(e.rel, e.dst, "m", tables)] if dst_cond_t is not None else []))
    m = (exp.select(*[_sql.col(c, "m").as_(f"k{i}", quoted=True) for i, c in enumerate(dst_cols)],
                    exp.true().as_("hit", quoted=True))
         .distinct().from_(_sql.table_expr(e.dst, "m")).where(m_where))
    on = exp.and_(*[exp.EQ(this=_sql.col(a, "f"), expression=exp.column(f"k{i}", "mm", quoted=True))
                    for i, a in enumerate(src_cols)])
    f_where = exp.and_(*[exp.Not(this=exp.Is(this=_sql.col(c, "f"), expression=exp.Null())) for c in src_cols],
                       *([condition_for(e.rel, e.src, "f", tables)] if src_cond is not None else []))
    q = (exp.select(exp.Count(this=exp.Star()), exp.Count(this=exp.column("hit", "mm", quoted=True)))
         .from_(_sql.table_expr(e.src, "f")).join(m.subquery("mm"), on=on, join_type="left").where(f_where))
    row = _scalar_row(cat, q, vid)
    rows, matched = (int(row[0] or 0), int(row[1] or 0)) if row else (0, 0)
    found = compose((["many_to_one"] if dup_src else []) + (["one_to_many"] if dup_dst else []))
    declared = e.cardinality
    # A declared "many" end may hold unique keys (that is allowed); a declared "one" end may not.
    ok = not ((declared in ("many_to_one", "one_to_one") and dup_dst) or
              (declared in ("one_to_many", "one_to_one") and dup_src))
    rate = matched / rows if rows else None
    if ok:
        msg = f"hop {index} ({e.src} -> {e.dst}) holds as declared ({declared})"
    else:
        side = []
        if dup_dst and declared in ("many_to_one", "one_to_one"):
            side.append(f"{dup_dst} key values of {e.dst} ({', '.join(dst_cols)}) occur more than once")
        if dup_src and declared in ("one_to_many", "one_to_one"):
            side.append(f"{dup_src} key values of {e.src} ({', '.join(src_cols)}) occur more than once")
        msg = (f"hop {index} ({e.src} -> {e.dst}) is declared {declared} but the data at vid {vid} is {found}: "
               + "; ".join(side) + "; joining multiplies rows (add a condition such as is_current, or fix the "
               "relationship's cardinality)")
    if rate is not None:
        msg += f"; {matched} of {rows} {short(e.src)} rows find a match ({rate:.1%})"
    return CardinalityCheck(hop=index, declared=declared, found=found, ok=ok,  # type: ignore[arg-type]
                            duplicate_keys_from=dup_src, duplicate_keys_to=dup_dst, rows_from=rows,
                            matched_from=matched, match_rate=rate, message=msg)
