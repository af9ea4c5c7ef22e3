"""Class `definitions`, the values definitions name: a metric's filter and a verified query compare
a column with literals (`status = 'returned'`), group by a column's values, and an enum or sample
values list them. When a literal no longer occurs among the column's values the definition is false
(the metric counts nothing, or everything but nothing). The checks here say so, naming the
annotation and the literal, and offer `value_map` (old literal -> new value) only on paired
evidence: the old value disappeared and a new one appeared in the same rows (the grain's keys match
them across the change) or, without keys, in the same change for as many rows; at metadata depth,
in the same file bounds of the same change, spelled alike. Anything else (rows removed, a merge
into a value that already occurred, no evidence of what became of it) is a finding whose fix says
what to look at (`investigate`; a verified query: `reverify`).

Evidence, metadata depth (`filter_values`, `enum_respelled`): the column's statistics now and at
the annotation's basis (a literal outside the range now, inside it then), the values the files
record as bounds (a literal recorded then, by no file now; the change that dropped it found by
bisecting the data commits), the bounds per partition either side of that change (what took the
literal's place). Data depth (`filter_values_now`, `enum_respelled_now`, `grouped_values_now`):
the literal against the column's distinct values now and at the basis, every statement bounded
like `run_sql` (`Duck`).

A filter may name another table's column (`fct_orders.status <> 'cancelled'` on a metric of the
order items): the column is looked up on that table (by the qualifier's name in the catalog); a
verified query's columns resolve through its FROM clause's aliases. Annotations the table check of
restatements already names (values_units.restatements: a full rewrite of an appended table) are
left to it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from catalog_core.errors import CatalogError
from semantic._bounded import literals
from semantic.history import Context, type_family
from semantic.models import Annotation, Finding
from semantic.staleness.claim_rules import clauses
from semantic.staleness.core import (
    Duck,
    Table,
    cause_of,
    day_of,
    declared_keys,
    duck_at,
    finding,
    make_fix,
    quote_id,
    quote_table,
    resolve_table,
    stats_at,
)
from semantic.staleness.values_units import (
    FUNCTION_WORDS,
    MAX_VALUES,
    clause_names,
    file_values,
    parsed_sql,
    partition_bounds,
    restatements,
    spelled_alike,
    truncates,
    word_in,
)

MAP_ROWS = 2000        # rows holding a vanished value carried across the change to see what they hold after
SAME_ROWS = 0.9        # of those rows, the share one new value must hold (the rest: removed, or split)
MAX_PROBES = 16        # snapshots read to find the change that dropped a value (bisection)
PARTIAL_MIN = 5        # rows moved off a value that still occurs, fewer is no evidence of a partial respelling
MERGED_MIN = 2         # rows of a value gone since that all hold one kept value now: a merge (one row: a correction);
#                        a small dimension's category holds a few rows (TPC-DS ship_mode: four per type)


@dataclass(frozen=True)
class Gone:
    """What became of value `old` of `table.column` after vid `since`: it no longer occurs since the
    data commit `vid`; `new` the value that took its place (paired evidence, `how`), else None."""

    table: str
    column: str
    old: str
    vid: int
    time: float
    new: str | None = None
    how: str = ""                    # "rows" | "change" | "bounds" | "" (no pairing)
    rows: int = 0                    # rows of `old` the pairing followed (data depth)
    certain: bool = True             # metadata: out of the column's range (else only its bounds moved)
    extra: dict[str, Any] = field(default_factory=dict)


# ------------------------------------------------------------------ which column a definition names

def sql_aliases(ctx: Context, home: Table, tree: Any, tables: dict[str, Table | None]) -> dict[str, Table]:
    """alias (or table name) -> table, of the tables a statement's FROM clauses read."""
    from sqlglot import exp

    out: dict[str, Table] = {}
    for node in tree.find_all(exp.Table):
        full = ".".join(p for p in (node.catalog, node.db, node.name) if p)
        tbl = resolve_table(ctx, home, full, tables) if full else None
        if tbl is not None:
            out[node.name.lower()] = tbl
            if node.alias:
                out[node.alias.lower()] = tbl
    return out


def _column_table(c: Any, home: Table, scope: dict[str, Table], ctx: Context,
                  tables: dict[str, Table | None]) -> Table | None:
    """The table whose string column `c` (a sqlglot Column) is: through its qualifier, else the one
    table of the statement that has it (the home table first, for a metric's filter)."""
    if c.table:
        tbl = scope.get(c.table.lower()) or resolve_table(ctx, home, c.table, tables)
    else:
        has = list(dict.fromkeys(t for t in [*scope.values()] if t.col(c.name) is not None))
        tbl = home if not scope and home.col(c.name) is not None else (has[0] if len(has) == 1 else None)
    cur = tbl.col(c.name) if tbl is not None else None
    return tbl if cur is not None and type_family(cur.type) == "string" else None


def compared_literals(ctx: Context, home: Table, ann: Annotation,
                      tables: dict[str, Table | None]) -> list[tuple[Table, str, list[str]]]:
    """(table, column, string literals) a metric's filter or a verified query compares a string column
    with (=, <>, IN), in the order they appear."""
    from sqlglot import exp

    val = ann.value or {}
    text = str(val.get("filter") or "") if ann.kind == "metric" else str(val.get("sql") or "")
    tree = parsed_sql(text) if text else None
    if tree is None:
        return []
    scope = sql_aliases(ctx, home, tree, tables) if ann.kind == "verified_query" else {}
    got: dict[tuple[str, str], tuple[Table, str, list[str]]] = {}

    def add(c: Any, lits: list[Any]) -> None:
        if not isinstance(c, exp.Column):
            return
        tbl = _column_table(c, home, scope, ctx, tables)
        if tbl is None:
            return
        col = tbl.col(c.name)
        assert col is not None
        for lit in lits:
            if isinstance(lit, exp.Literal) and lit.is_string:
                row = got.setdefault((tbl.name, col.name), (tbl, col.name, []))
                if lit.this not in row[2]:
                    row[2].append(lit.this)

    for node in tree.find_all(exp.EQ, exp.NEQ, exp.In):
        if isinstance(node, exp.In):
            add(node.this, list(node.expressions))
        else:
            add(node.this, [node.expression])
            add(node.expression, [node.this])
    return list(got.values())


def grouped_columns(ctx: Context, home: Table, ann: Annotation, tables: dict[str, Table | None],
                    listing: bool = False) -> list[tuple[Table, str]]:
    """(table, column) of the columns a verified query's SELECTs show, in the order they appear.
    By default the string columns it selects or groups by, each mapped to its table by `_column_table`
    (through its qualifier; an unqualified name only when one table of the statement has it). With
    `listing`, the columns of any type that list a column's values: those it groups by, then those it
    selects DISTINCT, an unqualified name mapped to the first table of the statement that has it."""
    from sqlglot import exp

    tree = parsed_sql(str((ann.value or {}).get("sql") or ""))
    if tree is None:
        return []
    scope = sql_aliases(ctx, home, tree, tables)
    out: dict[tuple[str, str], tuple[Table, str]] = {}
    for sel in tree.find_all(exp.Select):
        group = list((sel.args.get("group") or exp.Group()).expressions)
        if listing:
            exprs = group + (list(sel.expressions) if sel.args.get("distinct") else [])
        else:
            exprs = list(sel.expressions) + group
        for e in exprs:
            for c in e.find_all(exp.Column):
                if not listing:
                    tbl = _column_table(c, home, scope, ctx, tables)
                elif c.table:
                    tbl = scope.get(c.table.lower())
                else:
                    tbl = next((x for x in dict.fromkeys(scope.values()) if x.col(c.name) is not None), None)
                cur = tbl.col(c.name) if tbl is not None else None
                if tbl is not None and cur is not None:
                    out.setdefault((tbl.name, cur.name), (tbl, cur.name))
    return list(out.values())


# ------------------------------------------------------------------ evidence: metadata

def rewriting(tbl: Table, since: int) -> list[tuple[int, float]]:
    """The data commits of `tbl` after vid `since` that may have removed rows: all but those the
    commit's write log (`meta.writes`) records as appends to the table. A value that occurred at
    `since` can only have disappeared at one of them."""
    short = {tbl.name, tbl.name.split(".", 1)[-1]}
    out = []
    for v, tt in tbl.tl.data_after(since):
        c = tbl.ctx.commit(v)
        ws = [w for w in ((c.meta or {}).get("writes") or []) if isinstance(w, dict) and str(w.get("table")) in short] \
            if c is not None else []
        if not (ws and all(w.get("mode") == "append" for w in ws)):
            out.append((v, tt))
    return out


def _bounds(tbl: Table, col: str, vid: int) -> set[str]:
    return file_values(tbl, vid).get(col, set()) if vid > 0 else set()


def _in_range(s: dict[str, Any] | None, v: str) -> bool | None:
    """Is `v` within the statistics' [min, max] (None: no string range recorded)?"""
    lo, hi = (s or {}).get("min"), (s or {}).get("max")
    if not isinstance(lo, str) or not isinstance(hi, str):
        return None
    return lo <= v <= hi


def _first(commits: list[tuple[int, float]], gone_at: Any) -> tuple[int, float] | None:
    """The first of `commits` at which `gone_at(vid)` holds (it holds at the last; bisection, at
    most MAX_PROBES reads), or None when it does not hold at the last."""
    if not commits or not gone_at(commits[-1][0]):
        return None
    lo, hi, probes = 0, len(commits) - 1, 0
    while lo < hi and probes < MAX_PROBES:
        mid = (lo + hi) // 2
        probes += 1
        if gone_at(commits[mid][0]):
            hi = mid
        else:
            lo = mid + 1
    return commits[hi]


def gone_meta(tbl: Table, col: str, values: list[str], since: int) -> dict[str, Gone]:
    """The values of `values` that occurred in `tbl.col` at vid `since` and, by the statistics, no
    longer do: outside the column's range now and inside it then (certain), or recorded as a file's
    bound then and by no file now with a value spelled alike in their place in every partition, new
    in that change (paired). A value only some bounds stopped recording, with nothing alike in its
    place, is left to the data depth (a compaction or a new file split moves bounds too)."""
    ctx = tbl.ctx
    commits = rewriting(tbl, since)
    if not commits:
        return {}  # appends alone remove no value
    now_b = _bounds(tbl, col, ctx.vid)
    s_now, s_then = tbl.stat(col), stats_at(tbl, since).get(col)
    out: dict[str, Gone] = {}
    for v in dict.fromkeys(values):
        if v in now_b or any(truncates(x, v) for x in now_b):
            continue  # recorded now (a truncated bound stands for it)
        out_now = _in_range(s_now, v) is False
        if not out_now and not any(x != v and spelled_alike(v, x) for x in now_b):
            continue  # inside the range, and no bound now spelled like it: nothing the statistics can pair
        if not (_in_range(s_then, v) or v in _bounds(tbl, col, since)):
            continue  # not there when the annotation was written: no change of ours
        if out_now:
            hit = _first(commits, lambda x, v=v: _in_range(stats_at(tbl, x).get(col), v) is False)
        elif v in _bounds(tbl, col, since):
            hit = _first(commits, lambda x, v=v: v not in _bounds(tbl, col, x))
        else:
            continue
        if hit is None:
            continue
        new = _paired_bounds(tbl, col, v, hit[0])
        if not out_now and new is None:
            continue
        out[v] = Gone(tbl.name, col, v, hit[0], hit[1], new, "bounds" if new else "", certain=out_now)
    return out


def _paired_bounds(tbl: Table, col: str, old: str, vid: int) -> str | None:
    """The value that took `old`'s place in the files' bounds at the change `vid`: new in that change
    (recorded by no file before it) and spelled alike; the one in `old`'s place in every partition
    that recorded it, else the only such value the change brought (a respelling may sort elsewhere).
    None when there is no such single value."""
    pb, pa = partition_bounds(tbl, vid - 1), partition_bounds(tbl, vid)
    before, after = _bounds(tbl, col, vid - 1), _bounds(tbl, col, vid)
    seen: set[str] = set()
    for part, cols in pb.items():
        b, a = cols.get(col), pa.get(part, {}).get(col)
        for i in (0, 1):
            if b is not None and b[i] == old and a is not None:
                seen.add(a[i])
    fresh = {x for x in after - before if x != old and spelled_alike(old, x)
             and not any(truncates(x, k) for k in (old, *before))}  # a cut bound of a value there before is it
    placed = seen & fresh
    if len(placed) == 1 and len(seen) == 1:
        return next(iter(placed))
    return next(iter(fresh)) if len(fresh) == 1 else None


# ------------------------------------------------------------------ evidence: data

def distinct_values(duck: Duck, tbl: Table, col: str, lim: int) -> set[str]:
    """The column's distinct non-null values (as text) at `duck`'s vid, at most `lim` (a CatalogError
    when the statement cannot run)."""
    q = quote_id(col)
    return {str(r[0]) for r in duck.sql(f"SELECT DISTINCT {q} FROM {quote_table(tbl.name)} WHERE {q} IS NOT NULL "
                                        f"LIMIT {lim}")}


def _present(duck: Duck, tbl: Table, col: str, values: list[str]) -> set[str]:
    q = quote_id(col)
    return {str(r[0]) for r in duck.sql(f"SELECT DISTINCT {q} FROM {quote_table(tbl.name)} "
                                        f"WHERE {q} IN ({literals(values)})")}


def _grain_keys(tbl: Table, col: str) -> list[str]:
    """The grain's keys that follow a row across a change of `col`: none when `col` is one of them (a
    value respelled moves its rows to another key; the other keys pair each with every value of the column:
    the round-25 Acme tester's finance mart by month and region, 'online' renamed 'digital', was told
    "its rows now hold 'east', a value that occurred before (a merge?)")."""
    keys = declared_keys(tbl.ctx.annotations(tbl.name))
    if any(k.lower() == col.lower() for k in keys):
        return []
    return [k for k in keys if tbl.col(k) is not None]


def gone_data(tbl: Table, col: str, values: list[str], since: int, duck: Duck) -> dict[str, Gone]:
    """The values of `values` that occurred in `tbl.col` at vid `since` and occur no more (the data
    at both snapshots), each with the data commit that dropped it (bisection) and, when the same
    rows hold one new value after it, that value (`rows`: by the grain's keys; `change`: without
    keys, the one value new in that change held by as many rows)."""
    ctx = tbl.ctx
    commits = rewriting(tbl, since)
    if not commits or since <= 0:
        return {}  # appends alone remove no value
    vals = list(dict.fromkeys(values))
    missing = [v for v in vals if v not in _present(duck, tbl, col, vals)]
    if not missing:
        return {}
    try:
        then = _present(duck_at(ctx, since), tbl, col, missing)
    except CatalogError:  # the basis snapshot cannot be read: no evidence the value was there
        return {}
    out: dict[str, Gone] = {}
    for v in [x for x in missing if x in then]:
        def gone_at(x: int, v: str = v) -> bool:
            try:
                return not _present(duck_at(ctx, x), tbl, col, [v])
            except CatalogError:
                return False
        hit = _first(commits, gone_at)
        if hit is None:
            continue
        out[v] = _pair_rows(tbl, col, v, hit[0], hit[1])
    return out


def _keys_holding(duck: Duck, tbl: Table, col: str, keys: list[str], value: str) -> list[list[Any]]:
    """The grain's `keys` of the rows of `tbl` whose `col` holds `value` at `duck`'s vid (at most MAP_ROWS)."""
    kq = ", ".join(quote_id(k) for k in keys)
    return duck.sql(f"SELECT {kq} FROM {quote_table(tbl.name)} WHERE {quote_id(col)} = {literals([value])} "
                    f"LIMIT {MAP_ROWS}")


def _joined_by_keys(rows: list[list[Any]], tbl: Table, keys: list[str], alias: str) -> str:
    """A FROM clause matching the key tuples `rows` to the rows of `tbl` (as `alias`) by the grain's `keys`."""
    names = ", ".join(f"k{i}" for i in range(len(keys)))
    vals = ", ".join(f"({literals(list(r))})" for r in rows)
    on = " AND ".join(f"o.k{i} = {alias}.{quote_id(k)}" for i, k in enumerate(keys))
    return f"(VALUES {vals}) AS o({names}) JOIN {quote_table(tbl.name)} {alias} ON {on}"


def _took_others(before: Duck, after: Duck, tbl: Table, col: str, keys: list[str], old: str, new: str
                 ) -> tuple[int, list[str], int]:
    """Of the rows (by the grain's `keys`, at most MAP_ROWS) that hold `new` after a change, how many
    existed before it holding another value than `old` (a respelling of `old` takes its rows only);
    which of those other values still occur after it (none: the values were merged into `new`); and the
    fewest rows any of them gave (a value of one row that went whole is no evidence of a merge)."""
    rows = _keys_holding(after, tbl, col, keys, new)
    if not rows:
        return 0, [], 0
    q = quote_id(col)
    got = before.sql(f"SELECT b.{q}, count(*) FROM {_joined_by_keys(rows, tbl, keys, 'b')} "
                     f"WHERE b.{q} IS DISTINCT FROM {literals([old])} GROUP BY 1 LIMIT {MAX_VALUES}")
    others = [str(v) for v, _ in got if v is not None]
    left = sorted(_present(after, tbl, col, others)) if others else []
    return sum(int(c) for _, c in got), left, min((int(c) for _, c in got), default=0)


def _pair_rows(tbl: Table, col: str, old: str, vid: int, tt: float) -> Gone:
    """What the rows that held `old` just before the change at `vid` hold after it (see `gone_data`)."""
    ctx = tbl.ctx
    q, tq = quote_id(col), quote_table(tbl.name)
    before, after = duck_at(ctx, vid - 1), duck_at(ctx, vid)
    plain = Gone(tbl.name, col, old, vid, tt)
    keys = _grain_keys(tbl, col)
    try:
        if keys:
            rows = _keys_holding(before, tbl, col, keys, old)
            if not rows:
                return plain
            got = after.sql(f"SELECT n.{q}, count(*) FROM {_joined_by_keys(rows, tbl, keys, 'n')} "
                            f"WHERE n.{q} IS NOT NULL GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 5")
            if not got:
                return Gone(tbl.name, col, old, vid, tt, extra={"rows_before": len(rows), "rows_kept": 0})
            new, cnt = str(got[0][0]), int(got[0][1])
            ev = {"rows_before": len(rows), "rows_kept": cnt}
            if cnt >= SAME_ROWS * len(rows) and new != old and not _present(before, tbl, col, [new]):
                took, left, fewest = _took_others(before, after, tbl, col, keys, old, new)
                if took <= (1 - SAME_ROWS) * cnt:
                    return Gone(tbl.name, col, old, vid, tt, new, "rows", cnt, extra=ev)
                if not left and min(cnt, fewest) >= PARTIAL_MIN:
                    # the other values it took occur no more either, each of several rows that all went:
                    # merged into the new value (bands re-cut); values of a row or two drawn into a new
                    # value are no merge (a new code written over a few rows)
                    return Gone(tbl.name, col, old, vid, tt, new, "rows", cnt, extra={**ev, "merged_into_new": True})
                # rows that held other values went there too (several values into one new value, a new
                # code drawn over them): no respelling of this one
                return Gone(tbl.name, col, old, vid, tt, extra={**ev, "now_held": new, "others_moved": took})
            # the same rows now hold a value that occurred before: merged into it (when nearly all did)
            return Gone(tbl.name, col, old, vid, tt,
                        extra={**ev, "now_held": new, **({"merged": True} if cnt >= SAME_ROWS * len(rows) else {})})
        n_old = int(before.sql(f"SELECT count(*) FROM {tq} WHERE {q} = {literals([old])}")[0][0])
        lim = MAX_VALUES * 4
        b = distinct_values(before, tbl, col, lim)
        a = after.sql(f"SELECT {q}, count(*) FROM {tq} WHERE {q} IS NOT NULL GROUP BY 1 LIMIT {lim}")
        if len(b) >= lim or len(a) >= lim:
            return plain
        fresh = [(str(x), int(c)) for x, c in a if str(x) not in b]
        same = [x for x, c in fresh if c == n_old]
        if len(same) == 1 and n_old > 0:
            return Gone(tbl.name, col, old, vid, tt, same[0], "change", n_old, extra={"rows_before": n_old})
    except CatalogError:  # the pairing is evidence for the fix, not the finding: go on without it
        pass
    return plain


def values_now(tbl: Table, col: str, duck: Duck | None) -> list[str] | None:
    """The column's distinct values now (data depth, at most MAX_VALUES), None at metadata depth or more."""
    if duck is None:
        return None
    q = quote_id(col)
    try:
        rows = duck.sql(f"SELECT DISTINCT {q} FROM {quote_table(tbl.name)} WHERE {q} IS NOT NULL ORDER BY 1 "
                        f"LIMIT {MAX_VALUES + 1}")
    except CatalogError:
        return None
    return None if len(rows) > MAX_VALUES else [str(r[0]) for r in rows]


# ------------------------------------------------------------------ what restatements already names

def restated_keys(ctx: Context, t: Table, anns: list[Annotation], duck: Duck | None) -> set[str]:
    """Annotation keys of `t` the table check of restatements names at this depth (cached per table,
    vid and depth; its findings are computed once more by the table check, from the same caches)."""
    key = ("restated_keys", t.obj.path, ctx.vid, duck is not None)
    got = ctx.cache.findings.take(key)
    if got is None:
        try:
            keys = {k for f in restatements(t, anns, duck) for k in f.annotations}
        except CatalogError:
            keys = set()
        got = ctx.cache.findings.put(key, (keys,))
    return set(got[0])


# ------------------------------------------------------------------ the checks

def _since(ann: Annotation) -> int:
    val = ann.value if isinstance(ann.value, dict) else {}
    return int((val or {}).get("verified_at_vid") or ann.provenance.basis.vid or 0) if ann.kind == "verified_query" \
        else int(ann.provenance.basis.vid or 0)


def _fix_for(ann: Annotation, col: str, gone: list[Gone], now: list[str] | None, grouped: bool) -> list[Any]:
    """The repair of a claim naming values `gone`: a query re-verified; paired values (respelled) mapped
    in the claim; a description naming values whose rows (followed by the grain's keys) all now hold a
    value that occurred before (merged into it) says that value instead (`value_map`); otherwise what to
    look at (`investigate`)."""
    paired = {g.old: g.new for g in gone if g.new is not None}
    if ann.kind == "verified_query" and (grouped or len(paired) < len(gone)):
        return [make_fix("reverify")]
    merged = {g.old: str(g.extra["now_held"]) for g in gone if g.new is None and g.extra.get("merged")}
    if merged and ann.field == "description" and len(paired) + len(merged) == len(gone):
        return [make_fix("value_map", column=col, map={**paired, **merged})]
    if len(paired) < len(gone):
        return [make_fix("investigate", columns=[col])]
    if ann.kind == "verified_query" or ann.field == "labels":  # a query's literals, a code's meaning: the map alone
        return [make_fix("value_map", column=col, map=paired)]
    return [make_fix("value_map", column=col, map=paired, values=now)]


def _describe(g: Gone) -> str:
    if g.new is None:
        held = g.extra.get("now_held")
        return (f"{g.old!r} no longer occurs in {g.table}.{g.column} since vid {g.vid} ({day_of(g.time)})"
                + (f"; its rows (by the grain's keys) now hold {held!r}, a value that occurred before: merged into it"
                   if held and g.extra.get("merged") else
                   f"; its rows now hold {held!r}, a value that occurred before (a merge?)" if held else
                   "; nothing shows what took its place (rows removed, or respelled among other changes)"))
    by = {"rows": f"the same {g.rows} rows (by the grain's keys) now hold {g.new!r}",
          "change": f"{g.new!r} appeared in that change, held by as many rows ({g.rows})",
          "bounds": f"{g.new!r} took its place in the files' bounds of that change"}[g.how]
    how = "merged into a new value with the other values it took, which occur no more either" \
        if g.extra.get("merged_into_new") else "respelled"
    return f"{g.old!r} no longer occurs in {g.table}.{g.column} since vid {g.vid} ({day_of(g.time)}): {by} ({how})"


def _findings(t: Table, ann: Annotation, tbl: Table, col: str, gone: list[Gone], duck: Duck | None,
              grouped: bool = False, literal: bool = True, values: list[str] | None = None) -> Finding:
    """One finding about annotation `ann` (of table `t`): the values `gone` of `tbl.col` it names."""
    olds = [g.old for g in gone]
    if ann.kind == "metric":
        what = f"metric {(ann.value or {}).get('name') or ann.key}'s filter compares {col} with"
    elif ann.kind == "verified_query":
        what = f"the verified query compares {col} with" if literal else f"the verified query groups by {col}, whose values"
    elif ann.kind == "table":
        what = f"the table's {ann.field} names {col}'s"
    elif ann.kind == "column" and ann.column and ann.column.lower() != col.lower():
        what = f"the {ann.field} of {ann.column} names values of {col}:"
    else:
        what = f"the {ann.field} of {col} " + ("names" if ann.field == "description" else "lists")
    now = values if values is not None else \
        values_now(tbl, col, duck) if any(g.new for g in gone) and ann.kind != "verified_query" else None
    fixes = _fix_for(ann, col, gone, now, grouped)
    reason = "verified_query_changed" if ann.kind == "verified_query" else "values_restated"
    status = "stale" if duck is not None or all(g.certain for g in gone) else "suspect"
    vmap = (fixes[0].params.get("map") or {}) if fixes[0].action == "value_map" else {}
    sugg = {"value_map": "restate " + ", ".join(f"{a} -> {b}" for a, b in vmap.items()) + f" in {ann.key}",
            "reverify": "re-run the query and re-verify it",
            "investigate": f"check what became of {', '.join(map(repr, olds))} in {tbl.name}.{col}"}[fixes[0].action]
    first = gone[0]
    return finding(ann, f"{t.name}.{ann.column}" if ann.kind == "column" else t.name, reason, status,
                   f"{what} {', '.join(map(repr, olds))}: " + "; ".join(_describe(g) for g in gone),
                   [first.vid], [first.time],
                   {"table": tbl.name, "column": col, "literal": olds[0], "values": olds, "change_vid": first.vid,
                    "map": {g.old: g.new for g in gone if g.new}, "pairing": {g.old: g.how for g in gone},
                    "rows": {g.old: g.extra for g in gone if g.extra}, "values_now": now},
                   sugg, fixes, cause=cause_of("rewrite" if fixes[0].action != "reverify" else "answer", tbl.name,
                                               first.vid, col))


def partly_respelled(tbl: Table, col: str, values: list[str], since: int, duck: Duck) -> tuple[str, str, int] | None:
    """A value of `values` that still occurs in `tbl.col`, part of whose rows a rewrite since vid `since`
    respelled: a value new since then whose rows that existed then (by the grain's keys, at least
    PARTIAL_MIN) all held that one value (a new value drawn over rows of several values is no
    respelling of any). (old, new, rows moved), or None. A text testing the column against `old` no
    longer selects those rows. Read only when the table was rewritten since (appends move no row) and
    on a hint (`_respelling_hint`: the column's range moved, or it holds a value its enum does not list)."""
    keys = _grain_keys(tbl, col)
    if not keys or not since or not rewriting(tbl, since) or not _respelling_hint(tbl, col, since, duck):
        return None  # a new value moves the column's range or lies outside its enum: else none is read
    return _followed(tbl, col, keys, values, since, duck, back=True)


def _then_now(tbl: Table, col: str, since: int, duck: Duck) -> tuple[Duck, set[str], set[str]] | None:
    """The runner at vid `since`, and the column's distinct values there and at `duck` (at most MAX_VALUES
    x 4 each; more: None, too many values to follow). Raises CatalogError when a snapshot cannot be read."""
    lim = MAX_VALUES * 4
    basis = duck_at(tbl.ctx, since)
    then, now = distinct_values(basis, tbl, col, lim), distinct_values(duck, tbl, col, lim)
    return None if len(then) >= lim or len(now) >= lim else (basis, then, now)


def _followed(tbl: Table, col: str, keys: list[str], values: list[str], since: int, duck: Duck, back: bool
              ) -> tuple[str, str, int] | None:
    """The column's values at vid `since` and now (at most MAX_VALUES x 4 each; more: None), and
    `_rows_went` over them: with `back`, the rows of each value new since followed back to `since` (a
    value of `values` they all held: respelled); else the rows of each value gone since followed to now
    (a value of `values` they all hold: merged into it). None when a snapshot cannot be read."""
    try:
        got = _then_now(tbl, col, since, duck)
        if got is None:
            return None
        basis, then, now = got
        if back:
            return _rows_went(duck, basis, tbl, col, keys, now - then, values, now)
        return _rows_went(basis, duck, tbl, col, keys, then - now, values, then, least=MERGED_MIN)
    except CatalogError:
        return None


def _rows_went(src: Duck, dst: Duck, tbl: Table, col: str, keys: list[str], cands: set[str], values: list[str],
               present: set[str], least: int = PARTIAL_MIN) -> tuple[str, str, int] | None:
    """For each value of `cands` (in order): the rows holding it at `src` (by the grain's `keys`,
    `least` or more) all hold one value at `dst`, a value of `values` that `present` holds too:
    (that value, the candidate, how many rows), the first found, or None. Raises CatalogError when a
    statement cannot run."""
    q = quote_id(col)
    for cand in sorted(cands):
        rows = _keys_holding(src, tbl, col, keys, cand)
        if len(rows) < least:
            continue
        got = dst.sql(f"SELECT a.{q}, count(*) FROM {_joined_by_keys(rows, tbl, keys, 'a')} GROUP BY 1 "
                      "ORDER BY 2 DESC LIMIT 2")
        if len(got) == 1 and got[0][0] is not None and str(got[0][0]) in values and str(got[0][0]) in present \
                and int(got[0][1]) >= least:
            return str(got[0][0]), cand, int(got[0][1])
    return None


def merged_gain(tbl: Table, col: str, values: list[str], since: int, duck: Duck) -> tuple[str, str, int] | None:
    """A value of `values` that still occurs in `tbl.col` and took every row of another value that
    occurred at vid `since` and occurs no more (a category merged into it: 'returned' into 'refunded'),
    by the grain's keys (MERGED_MIN rows at least, all of them holding the one kept value now):
    (kept, merged, rows). A text testing the column against the kept value now selects those rows
    too. Read only when the table was rewritten since (appends move no row) and a value vanished
    (the column's distinct values at both snapshots, at most MAX_VALUES x 4). None otherwise."""
    keys = _grain_keys(tbl, col)
    if not keys or not since or not rewriting(tbl, since):
        return None
    return _followed(tbl, col, keys, values, since, duck, back=False)


REPLACED_SHARE = 0.01  # a value replaced in the new loads held this share of the earlier rows at least
REPLACED_MIN = 8       # ... and so this many of the rows loaded since were expected to hold it, at least: a value
#                        that occurred at random with that rate leaves the rows since under a tenth of it (below)
#                        with a chance under 1 in 3,000 (Poisson, mean 8: P(0) = 3e-4)
REPLACED_LEFT = 0.1    # the rows since that still hold the old value: a tenth of those expected at most (a late
#                        record of the old system: 1 of 14 expected)
ALIKE_SHARE, ALIKE_MIN = 0.01, 2  # the same for a new value spelled like the old ('canceled', 'cancelled')
ALIKE_RATIO = 85       # rapidfuzz ratio (0-100) of two spellings of one value, case and separators aside


def near_spelling(a: str, b: str) -> bool:
    """Two spellings of one value: the same letters but for case, separators ('single family',
    'single-family') and a letter doubled or dropped ('canceled', 'cancelled'): rapidfuzz's ratio of
    the lower-cased texts without separators `ALIKE_RATIO` or more, neither a prefix of the other, the
    same digits in both. Stricter than `values_units.spelled_alike`, which takes a value containing
    the other ('refunded' and 'partially_refunded' are two statuses)."""
    from rapidfuzz import fuzz

    x, y = (re.sub(r"[\s_\-]+", "", v.lower()) for v in (a, b))
    if re.sub(r"\D", "", x) != re.sub(r"\D", "", y):
        return False  # codes numbered apart ('region01', 'region02') are two values
    return (x == y and a != b) or (not (x.startswith(y) or y.startswith(x)) and fuzz.ratio(x, y) >= ALIKE_RATIO)


def _listed(tbl: Table, col: str) -> set[str]:
    """The values the column's own annotations list (enum, sample values, the codes its labels explain)."""
    cur = tbl.col(col)
    out: set[str] = set()
    for a in tbl.ctx.annotations(tbl.name):
        if a.kind == "column" and cur is not None and a.column_id == cur.id and a.field in ("enum", "sample_values"):
            out |= {str(v) for v in a.value or [] if v is not None}
        elif a.kind == "column" and cur is not None and a.column_id == cur.id and a.field == "labels" \
                and isinstance(a.value, dict):
            out |= {str(k) for k in a.value}
    return out


SAME_SHARE = (0.8, 1.25)  # a new value holding this share of the rows the old one was expected to is that value


class Replaced(NamedTuple):
    """A value replaced in the new loads (`replaced_in_loads`): `old` held `share` of the rows before
    `new` first appeared; of the `rows_since` rows loaded since, `left` still hold `old` and `took` hold
    `new`. `same`: the new value is the old one written anew: spelled alike (`near_spelling`, or one a
    prefix of the other: 'Y', 'Yes'), or holding the rows the old one was expected to (a code
    renumbered, 'M23' -> 'M26', taking its share: `SAME_SHARE`)."""
    old: str
    new: str
    rows_since: int
    share: float
    left: int
    took: int
    same: bool


def replaced_in_loads(tbl: Table, col: str, values: list[str], since: int, duck: Duck, known: set[str] | None = None
                      ) -> Replaced | None:
    """A value of `values` that the rows loaded since a value new since vid `since` first appeared no
    longer hold, while that new value holds about as many of them: the value written under a new
    spelling by the new loads, the older rows keeping the old one ('captured' -> 'settled' from a
    payment processor's migration on). Evidence: a column every load since `since` lies beyond
    (`row_relations.newer_rows`: a growing id, a load date) orders the rows; from the first row holding
    the new value on, the old value (REPLACED_SHARE of the earlier rows or more, so REPLACED_MIN of the
    later ones expected or more) holds a tenth of those expected at most (`REPLACED_LEFT`: none, or a late
    record of the old system), and the new value at least half as many as the old one was expected to
    and did not get. The new value is none the column's annotations list (`_listed`) or `known` names
    (a status lifecycle: the newest orders still 'placed' where older ones are 'delivered', values the enum
    and the text both list, is no respelling). (old, new, rows since, the old value's share before, the rows since
    still holding it) or None.
    Appends only: a rewrite's respellings are `partly_respelled`'s and `gone_data`'s."""
    from semantic.staleness.row_relations import newer_rows

    newer = newer_rows(tbl, since) if since else None
    if newer is None:
        return None
    lim, q, n, tq = MAX_VALUES * 4, quote_id(col), quote_id(newer[0]), quote_table(tbl.name)
    try:
        got = _then_now(tbl, col, since, duck)
        if got is None:
            return None
        _basis, then, now = got
        listed = _listed(tbl, col) | set(known or ())
        found: list[tuple[tuple[int, float], str, str, int, float, int, int, bool, float]] = []
        for new in sorted(now - then - listed):
            lo = duck.sql(f"SELECT min({n}) FROM {tq} WHERE CAST({q} AS VARCHAR) = {literals([new])}")[0][0]
            if lo is None:
                continue

            def counts(cond: str, lo: Any = lo) -> dict[str, int]:
                return {str(v): int(c) for v, c in duck.sql(
                    f"SELECT CAST({q} AS VARCHAR), count(*) FROM {tq} WHERE {n} {cond} {literals([lo])} "
                    f"GROUP BY 1 LIMIT {lim}")}

            after, before = counts(">="), counts("<")
            total_a, total_b = sum(after.values()), sum(before.values())
            if not total_a or not total_b:
                continue
            for old in values:
                share = before.get(old, 0) / total_b
                expected = share * total_a
                # a new value spelled like the old one needs less of the rows to tell (a rare status)
                least = (ALIKE_SHARE, ALIKE_MIN) if near_spelling(old, new) else (REPLACED_SHARE, REPLACED_MIN)
                left = after.get(old, 0)
                if old in then and share >= least[0] and expected >= least[1] and left <= REPLACED_LEFT * expected \
                        and after.get(new, 0) >= (expected - left) / 2:
                    # of the new values that could take its place, the one spelled like it ('Y' -> 'Yes'), else
                    # the one holding about the rows it was expected to
                    alike = near_spelling(old, new) or new.lower().startswith(old.lower()) or \
                        old.lower().startswith(new.lower())
                    found.append(((0 if alike else 1, abs(after.get(new, 0) - expected) / max(expected, 1.0)),
                                  old, new, total_a, share, left, after.get(new, 0), alike, expected))
    except CatalogError:
        return None
    if not found:
        return None
    first = next(o for o in values if any(f[1] == o for f in found))  # the first value, in the order given
    _rank, old, new, total_a, share, left, took, alike, expected = min(f for f in found if f[1] == first)
    same = alike or SAME_SHARE[0] * expected <= took <= SAME_SHARE[1] * expected
    return Replaced(old, new, total_a, share, left, took, same)


def _replaced_finding(t: Table, ann: Annotation, tbl: Table, col: str, got: Replaced,
                      since: int, reason: str, said: str, so: str) -> Finding:
    """The finding of a value replaced in the new loads (`replaced_in_loads`) on `ann`, which `said`
    something of the old value: suspect; a metric's filter testing the old value, when the new one is
    the same value (`Replaced.same`), gets `value_map` keeping the old spelling (the filter tests both:
    the older rows still hold the old one), else `investigate`."""
    old, new, n, share, left = got.old, got.new, got.rows_since, got.share, got.left
    joined = {} if tbl.name == t.name else {"table": tbl.name}  # a joined table's column (`fct_orders.status`)
    fix = make_fix("value_map", column=col, map={old: new}, keep=True, **joined) \
        if ann.kind == "metric" and got.same else make_fix("investigate", columns=[col])
    held = f"hold no {old!r}" if not left else f"hold {left} {old!r} where {share * n:.0f} were expected"
    return finding(ann, t.name, reason, "suspect",
                   f"{said}; the {n} rows of {tbl.name} loaded since {new!r} first appeared {held} (it was "
                   f"{share:.1%} of the rows before) and {new!r}, new since, takes its place: {so}",
                   [since, t.ctx.vid], values={"table": tbl.name, "column": col, "old": old, "new": new,
                                               "rows_since": n, "share_before": round(share, 4), "still_old": left},
                   suggestion=f"test {old!r} and {new!r} both (the rows before {new!r} first appeared hold "
                              f"{old!r})" if fix.action == "value_map" else
                   f"check whether {new!r} is the new loads' spelling of {old!r}",
                   fixes=[fix], cause=cause_of("respelled_loads", tbl.name, None, col))


def filter_values(ctx: Context, t: Table, ann: Annotation, anns: list[Annotation], tables: dict[str, Table | None],
                  duck: Duck | None = None, checked: set[tuple[str | None, str]] | None = None,
                  already: set[tuple[str | None, str]] | None = None) -> list[Finding]:
    """A metric's filter or a verified query comparing a column with a literal that no longer occurs
    (metadata: `gone_meta`; data: `gone_data`): values_restated (a metric) or verified_query_changed,
    naming the annotation and the literal; see the module for the fix. At data depth, a literal that
    still occurs but part of whose rows a rewrite respelled to a new value (`partly_respelled`) is the
    same reason, suspect, `investigate`. One finding per annotation."""
    vq = ann.kind == "verified_query"
    reason = "verified_query_changed" if vq else "values_restated"
    if vq and already is not None and (ann.key, reason) in already | (checked or set()):
        return []  # the metadata depth named the change it reads (and its fix), or its answer is unchanged
    since = _since(ann)
    grouped = {(tb.name, c) for tb, c in grouped_columns(ctx, t, ann, tables)} if vq else set()
    for tbl, col, lits in compared_literals(ctx, t, ann, tables):
        if checked is not None and not vq:
            checked.add((ann.key, reason))  # the data decides what the statistics suggested
        got = gone_data(tbl, col, lits, since, duck) if duck is not None else gone_meta(tbl, col, lits, since)
        gone = [got[v] for v in lits if v in got]
        if gone and not (tbl.name == t.name and ann.key in restated_keys(ctx, t, anns, duck)):
            return [_findings(t, ann, tbl, col, gone, duck, (tbl.name, col) in grouped)]
        part = partly_respelled(tbl, col, lits, since, duck) if duck is not None and not gone else None
        if part is not None:
            return [_partly_finding(t, ann, tbl, col, part, since, reason,
                                    f"the {'verified query' if vq else 'metric'} compares {col} with {part[0]!r}",
                                    "it no longer selects those rows")]
        repl = replaced_in_loads(tbl, col, lits, since, duck) if duck is not None and not gone else None
        if repl is not None:
            return [_replaced_finding(t, ann, tbl, col, repl, since, reason,
                                      f"the {'verified query' if vq else 'metric'} compares {col} with {repl[0]!r}",
                                      "it no longer selects the rows loaded since")]
        gain = merged_gain(tbl, col, lits, since, duck) if duck is not None and not gone else None
        if gain is not None:
            kept, merged, n = gain
            return [finding(ann, t.name, reason, "suspect",
                            f"the {'verified query' if vq else 'metric'} compares {col} with {kept!r}; the {n} rows of "
                            f"{tbl.name} that held {merged!r} when it was written now hold {kept!r} (by the grain's "
                            f"keys), and {merged!r} occurs no more: {kept!r} now selects them too",
                            [since, t.ctx.vid], values={"table": tbl.name, "column": col, "kept": kept,
                                                        "merged": merged, "rows_moved": n},
                            suggestion=f"check whether {kept!r} should count the rows that were {merged!r}",
                            fixes=[make_fix("investigate", columns=[col])],
                            cause=cause_of("merged", tbl.name, None, col))]
    return []


def _partly_finding(t: Table, ann: Annotation, tbl: Table, col: str, part: tuple[str, str, int], since: int,
                    reason: str, said: str, so: str) -> Finding:
    """The finding of a value partly respelled (`partly_respelled`: (old, new, rows moved)) on `ann`,
    which `said` something of the old value: suspect, `investigate` (whether the new value means the
    old one for the rows it took is for a person to say)."""
    old, new, n = part
    return finding(ann, t.name, reason, "suspect",
                   f"{said}; {n} rows of {tbl.name} that held {old!r} when it was written now hold {new!r}, a value "
                   f"new since (by the grain's keys), while {old!r} still occurs: {so}",
                   [since, t.ctx.vid], values={"table": tbl.name, "column": col, "old": old, "new": new,
                                               "rows_moved": n},
                   suggestion=f"check whether {new!r} means {old!r} for the rows it took",
                   fixes=[make_fix("investigate", columns=[col])], cause=cause_of("rewrite", tbl.name, None, col))


def enum_respelled(ctx: Context, t: Table, ann: Annotation, anns: list[Annotation], duck: Duck | None = None,
                   checked: set[tuple[str | None, str]] | None = None) -> list[Finding]:
    """An enum or sample values listing a value respelled in place, or labels explaining it (their
    codes; paired evidence only: a value that merely disappeared is the values checks'
    `enum_violated` / `sample_values_missing`): values_restated with `value_map` and the values to
    write (data depth: the column's values now; metadata: the enum with the map applied; labels:
    the map alone, the meaning moves with the code)."""
    cur = t.cols.get(ann.column_id or -1)
    vals = [str(v) for v in ann.value or [] if v is not None] if isinstance(ann.value, list) else \
        [str(v) for v in ann.value] if ann.field == "labels" and isinstance(ann.value, dict) else []
    if cur is None or not vals or type_family(cur.type) != "string":
        return []
    since = int(ann.provenance.basis.vid or 0)
    if duck is not None and ann.field == "enum":
        q, raw = quote_id(cur.name), [v for v in ann.value or [] if v is not None]
        if not duck.sql(f"SELECT DISTINCT {q} FROM {quote_table(t.name)} WHERE {q} IS NOT NULL "
                        f"AND {q} NOT IN ({literals(raw)}) LIMIT 20"):
            return []  # nothing outside the enum: no value took a listed one's place (values_data's statement)
    got = gone_data(t, cur.name, vals, since, duck) if duck is not None else gone_meta(t, cur.name, vals, since)
    gone = [got[v] for v in vals if v in got]
    if not gone or any(g.new is None for g in gone) or ann.key in restated_keys(ctx, t, anns, duck):
        return []
    if checked is not None:  # the respelling explains the values outside the enum: no add_enum_values
        checked.update({(ann.key, "values_restated"), (ann.key, "enum_violated"), (ann.key, "sample_values_missing")})
    mapped = None
    if duck is None and ann.field == "enum":
        m = {g.old: g.new for g in gone}
        mapped = sorted({m.get(v) or v for v in vals})
    return [_findings(t, ann, t, cur.name, gone, duck, values=mapped)]


def _respelling_hint(tbl: Table, col: str, since: int, duck: Duck) -> bool:
    """A cheap sign that values of `tbl.col` may have been respelled since `since`, before an old
    snapshot is read: the column's range in the table's statistics moved, or the column holds a
    value its enum annotation does not list (the statement the values check runs, shared by the Duck)."""
    then_s, now_s = stats_at(tbl, since).get(col) or {}, tbl.stat(col) or {}
    if (then_s.get("min"), then_s.get("max")) != (now_s.get("min"), now_s.get("max")):
        return True
    enum = next((a for a in tbl.ctx.annotations(tbl.name) if a.kind == "column" and a.field == "enum"
                 and (a.column or "").lower() == col.lower() and isinstance(a.value, list)), None)
    raw = [v for v in (enum.value if enum is not None else []) or [] if v is not None]
    if not raw:
        return False
    q = quote_id(col)
    try:
        return bool(duck.sql(f"SELECT DISTINCT {q} FROM {quote_table(tbl.name)} WHERE {q} IS NOT NULL "
                             f"AND {q} NOT IN ({literals(raw)}) LIMIT 20"))
    except CatalogError:
        return False


def grouped_meta(ctx: Context, t: Table, ann: Annotation, tables: dict[str, Table | None]) -> list[Finding]:
    """Metadata depth of `grouped_values`: a value the files' bounds recorded when the query was
    verified, by no file now, with a value spelled alike new in its place (`gone_meta`'s pairing),
    in a string column the query groups by -> verified_query_changed, re-verify. Read only when the
    column's range in the table's statistics moved since (a respelling the bounds can show moves it)."""
    since = _since(ann)
    for tbl, col in grouped_columns(ctx, t, ann, tables):
        then_s, now_s = stats_at(tbl, since).get(col) or {}, tbl.stat(col) or {}
        if not since or (then_s.get("min"), then_s.get("max")) == (now_s.get("min"), now_s.get("max")) \
                or not rewriting(tbl, since):
            continue
        now_b = _bounds(tbl, col, ctx.vid)
        cand = sorted(x for x in _bounds(tbl, col, since) - now_b if any(y != x and spelled_alike(x, y) for y in now_b))
        gone = [g for g in gone_meta(tbl, col, cand, since).values() if g.new is not None]
        if gone:
            return [_findings(t, ann, tbl, col, gone, None, grouped=True, literal=False)]
    return []


def grouped_values(ctx: Context, t: Table, ann: Annotation, tables: dict[str, Table | None], duck: Duck,
                   checked: set[tuple[str | None, str]], already: set[tuple[str | None, str]]) -> list[Finding]:
    """A verified query that groups by (or selects) a string column whose values were respelled after
    it was verified: values at the verified vid that occur no more, each paired with a new value the
    same rows hold (data depth) -> verified_query_changed, re-verify (the answer's labels moved).
    The old snapshot is read only on a hint (`_respelling_hint`). Values merely gone are left to the answer check; a query whose answer the data found unchanged
    (`checked`, by the answer check before) is not read again."""
    if {(ann.key, "verified_query_changed")} & (checked | already):
        return []
    since = _since(ann)
    lim = MAX_VALUES * 4
    for tbl, col in grouped_columns(ctx, t, ann, tables):
        if not since or not rewriting(tbl, since) or not _respelling_hint(tbl, col, since, duck):
            continue
        try:
            then, now = distinct_values(duck_at(ctx, since), tbl, col, lim), distinct_values(duck, tbl, col, lim)
        except CatalogError:
            continue
        if not then - now or not now - then or len(then) >= lim or len(now) >= lim:
            continue  # a respelling takes a value away and brings a new one
        gone = [g for g in gone_data(tbl, col, sorted(then - now), since, duck).values() if g.new is not None]
        if gone:
            return [_findings(t, ann, tbl, col, gone, duck, grouped=True, literal=False)]
    return []


_QUOTES = "'\"`‘’“”"


def prose_names(text: object, value: str, column: str | None) -> bool:
    """Does prose name `value`: quoted ('Y', "Y", `Y`) anywhere, or, for a text about the column
    (`column` None: the column's own description), as a whole word that is not a function word
    ("a", "or", "no": an enum value spelled like one counts only quoted); for another text,
    unquoted only right beside the column's name (`flag = Y`, `flag Y`, `Y flag`)."""
    s = str(text or "")
    v = re.escape(value)
    if re.search(rf"[{_QUOTES}]{v}[{_QUOTES}]", s):
        return True
    if not re.fullmatch(r"[\w-]+", value):
        return False
    if column is None:
        return value.lower() not in FUNCTION_WORDS and re.search(rf"(?<![\w-]){v}(?![\w-])", s) is not None
    c = re.escape(column)
    return re.search(rf"(?<![\w-]){c}\s*(?:=|==|is|:)?\s*{v}(?![\w-])|(?<![\w-]){v}\s+{c}(?![\w-])", s,
                     re.IGNORECASE) is not None


def prose_values(ctx: Context, t: Table, ann: Annotation, anns: list[Annotation], duck: Duck | None = None,
                 checked: set[tuple[str | None, str]] | None = None,
                 tables: dict[str, Table | None] | None = None) -> list[Finding]:
    """A description naming a value of a string column that was respelled since it was written (or,
    at data depth, removed): the column's own description naming one of the values its enum or
    sample values list (`prose_names`: quoted, or a whole word), the table's description naming
    one quoted or beside the column's name, or as a word in a text that names the column (or two of its
    values), and a table's description naming another table's column qualified (`fct_orders.status`)
    and one of its values as a word (`_table_prose_names`). values_restated with `value_map` on paired evidence (as
    `enum_respelled`), else `investigate`. At data depth, a named value that still occurs, part of whose
    rows a rewrite respelled to a new value (`partly_respelled`): suspect, `investigate`. At data depth too,
    columns no annotation lists values of, whose few values the text names in a listing
    (`_unlisted_values`: "(Y/N flags)"), with `investigate` (the text may speak of several columns: a
    person rewrites it). Annotations the restatements check names are left to it."""
    cands = _listed_cands(ctx, t, ann, anns, tables)
    since = int(ann.provenance.basis.vid or 0)
    unlisted = len(cands)
    if duck is not None and since:
        cands += _unlisted_values(t, ann, since, {c[1] for c in cands if c[0] is t}, anns)
    for i, (tbl, cid, col, values, tanns) in enumerate(cands):
        if ann.kind == "column" and cid == ann.column_id:
            named = [v for v in values if prose_names(ann.value, v, None)]
        else:  # a table's prose, or another column's description: by the clause rule
            named = [v for v in values if _table_prose_names(ann.value, v, values, tbl, col, tbl is t)]
        if not named or (i >= unlisted and len(named) < 2):
            continue  # a column no annotation lists values of: a text listing two of them at least
        if checked is not None:
            checked.add((ann.key, "values_restated"))  # the data decides what the statistics suggested
        got = gone_data(tbl, col, named, since, duck) if duck is not None else gone_meta(tbl, col, named, since)
        gone = [got[v] for v in named if v in got and (duck is not None or got[v].new is not None)]
        part = partly_respelled(tbl, col, named, since, duck) if duck is not None and not gone else None
        if part is not None and not (tbl is t and ann.key in restated_keys(ctx, t, anns, duck)):
            return [_partly_finding(t, ann, tbl, col, part, since, "values_restated",
                                    f"the text names {part[0]!r} of {tbl.name}.{col}",
                                    f"what it says of {part[0]!r} may now hold of {part[1]!r} too")]
        repl = replaced_in_loads(tbl, col, named, since, duck, set(values)) if duck is not None and not gone else None
        if repl is not None and not (tbl is t and ann.key in restated_keys(ctx, t, anns, duck)):
            return [_replaced_finding(t, ann, tbl, col, repl, since, "values_restated",
                                      f"the text names {repl[0]!r} of {tbl.name}.{col}",
                                      f"what it says of {repl[0]!r} may now hold of {repl[1]!r} too")]
        if not gone or (tbl is t and ann.key in restated_keys(ctx, t, anns, duck)):
            continue
        mapped = None  # metadata: the column's enum with the map applied, as `enum_respelled` writes it
        enum = next((a for a in tanns if a.kind == "column" and a.field == "enum" and a.column_id == cid), None)
        if duck is None and enum is not None and all(g.new for g in gone):
            m = {g.old: g.new for g in gone}
            mapped = sorted({m.get(str(v)) or str(v) for v in enum.value or [] if v is not None})
        f = _findings(t, ann, tbl, col, gone, duck, values=mapped)
        if i >= unlisted:  # values of columns no annotation lists, the text perhaps of several: a person rewrites it
            return [f.model_copy(update={"fixes": [make_fix("investigate", columns=[col])],
                                         "suggestion": f"check what the text says of {col}'s values and rewrite it"})]
        return [_pointing_elsewhere(ctx, t, ann, tbl, col, f, duck, tables)]
    return []


def _listed_cands(ctx: Context, t: Table, ann: Annotation, anns: list[Annotation],
                  tables: dict[str, Table | None] | None) -> list[tuple[Table, int, str, list[str], list[Annotation]]]:
    """`prose_values`' candidates: the string columns whose values an enum or sample values list, of the
    tables the prose may name (`_prose_tables`), each with those values."""
    cands: list[tuple[Table, int, str, list[str], list[Annotation]]] = []
    for tbl, tanns in _prose_tables(ctx, t, ann, anns, tables):
        listed: dict[int, list[str]] = {}
        for a in tanns:
            if a.kind == "column" and a.field in ("enum", "sample_values") and a.column_id is not None:
                listed.setdefault(a.column_id, []).extend(str(v) for v in a.value or [] if v is not None)
        for cid in list(listed):  # a column's description may name another coded column's values too
            cur = tbl.cols.get(cid)
            if cur is not None and type_family(cur.type) == "string":
                cands.append((tbl, cid, cur.name, list(dict.fromkeys(listed[cid])), tanns))
    return cands


UNLISTED_VALUES = 10  # a string column no enum or sample values list, with this many values at most at the claim


def _unlisted_values(t: Table, ann: Annotation, since: int, listed: set[int], anns: list[Annotation]
                     ) -> list[tuple[Table, int, str, list[str], list[Annotation]]]:
    """Data depth: the string columns of `t` that no annotation lists values of, whose rows at vid `since`
    (the claim's basis) held UNLISTED_VALUES values or fewer, each of them named by the text as a word in a
    clause that names two values of such columns at least ("Promotions and the channels they ran on (Y/N
    flags)": eight flag columns, each all 'Y' or all 'N'), when `t` was rewritten since (appends remove no
    value): as `prose_values`' candidates, each with the values of them all (the clause rule reads the
    listing). The round-24 TPC-DS tester's promotion flags restated '1'/'0' (missed: no enum). The files'
    minimum and maximum then sift the columns first (both must be named): a text naming no column's ends
    costs no statement."""
    if not rewriting(t, since):
        return []
    text = str(ann.value or "")
    then = stats_at(t, since)
    ends: dict[int, tuple[str, str]] = {}
    for cid, cur in t.cols.items():
        s = then.get(cur.name) or {}
        lo, hi = s.get("min"), s.get("max")
        if cid not in listed and type_family(cur.type) == "string" and isinstance(lo, str) and isinstance(hi, str) \
                and all(re.fullmatch(r"[\w-]+", v) and v.lower() not in FUNCTION_WORDS and word_in(text, v)
                        for v in (lo, hi)):
            ends[cid] = (lo, hi)
    if len({v for pair in ends.values() for v in pair}) < 2:
        return []  # one word that only looks like a value
    held: dict[int, list[str]] = {}
    for cid in ends:
        try:
            values = sorted(distinct_values(duck_at(t.ctx, since), t, t.cols[cid].name, UNLISTED_VALUES + 1))
        except CatalogError:
            continue
        if len(values) <= UNLISTED_VALUES:
            held[cid] = values
    every = sorted({v for vs in held.values() for v in vs})
    return [(t, cid, t.cols[cid].name, every, anns) for cid, vs in held.items()
            if all(clause_names(text, v, t.cols[cid].name, every) for v in vs)]


_NAMED_TABLE = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*){0,2})(?![\w])")


def _pointing_elsewhere(ctx: Context, t: Table, ann: Annotation, tbl: Table, col: str, f: Finding,
                        duck: Duck | None, tables: dict[str, Table | None] | None) -> Finding:
    """A description whose named values of `tbl.col` were respelled (`f`, a `value_map`) that also sends its
    reader to another table with a column of that name ("codes are reused, use core.map_store_code by date")
    which still holds an old spelling: mapping the values in the text would keep a lookup that now matches
    nothing (the respelled rows no longer meet that table's). The map is withheld (`investigate` the column;
    the message names that table: a person rewrites the text), and the message says so (round-10 Acme tester: store codes
    'S-001' reloaded as 'ST001', the map table kept 'S-001', accept-all wrote the example's new spelling
    beside the stale lookup). Data depth: a count of that table's rows holding an old value; metadata: an
    old value within that column's bounds."""
    olds = [str(v) for v in (f.evidence.values.get("map") or {})]
    if ann.field != "description" or tables is None or not olds or f.fixes[0].action != "value_map":
        return f
    seen = {t.name, tbl.name}
    for name in dict.fromkeys(m for m in _NAMED_TABLE.findall(str(ann.value or "")) if "_" in m or "." in m):
        other = resolve_table(ctx, t, name, tables)
        if other is None or other.name in seen:
            continue
        seen.add(other.name)
        oc = other.col(col)
        if oc is None:
            continue
        held = _holds_any(other, oc.name, olds, duck)
        if held is None:
            continue
        return f.model_copy(update={
            "message": f"{f.message}; the text also sends its reader to {other.name}.{oc.name}, which still holds "
                       f"{held!r}: the respelled rows no longer match it, so restating the values in the text would "
                       "keep a lookup that finds nothing",
            "suggestion": f"check {tbl.name}.{col} against {other.name}.{oc.name} and rewrite the text",
            "fixes": [make_fix("investigate", columns=[col])]})
    return f


def _holds_any(other: Table, col: str, olds: list[str], duck: Duck | None) -> str | None:
    """One of `olds` that `other.col` holds now (data depth: counted; metadata: within its bounds), else None."""
    if duck is None:
        st = other.col_stats.get(col) or {}
        lo, hi = st.get("min"), st.get("max")
        if not isinstance(lo, str) or not isinstance(hi, str):
            return None
        return next((v for v in olds if lo <= v <= hi), None)
    q = quote_id(col)
    lits = ", ".join("'" + v.replace("'", "''") + "'" for v in olds)
    try:
        rows = duck.sql(f"SELECT DISTINCT CAST({q} AS VARCHAR) FROM {quote_table(other.name)} "
                        f"WHERE CAST({q} AS VARCHAR) IN ({lits}) LIMIT 1")
    except CatalogError:
        return None
    return str(rows[0][0]) if rows else None


# ------------------------------------------------------------------ prose naming a code by its label

def _coded_columns(t: Table, anns: list[Annotation]) -> list[tuple[int, str, dict[str, str]]]:
    """(column id, its name now, labels {code: label}) of the string columns of `t` whose codes a
    `labels` annotation explains."""
    out = []
    for a in anns:
        cur = t.cols.get(a.column_id if a.column_id is not None else -1)
        if a.kind != "column" or a.field != "labels" or not isinstance(a.value, dict) or cur is None or \
                a.column_id is None or type_family(cur.type) != "string":
            continue
        out.append((a.column_id, cur.name, {str(k): str(v) for k, v in a.value.items() if v}))
    return out


def label_names(ann: Annotation, cid: int, col: str, labels: dict[str, str]) -> list[str]:
    """The codes of coded column `col` (id `cid`) whose label description `ann` names: the column's own
    description as a word (`prose_names`: not a function word), the table's or another column's quoted,
    beside the column's name, or in a clause about the column (`clause_names`: one naming it, or two of
    its labels)."""
    text, lbs = str(ann.value or ""), list(labels.values())
    if ann.kind == "column" and ann.column_id == cid:
        return [c for c, lb in labels.items() if prose_names(text, lb, None)]
    return [c for c, lb in labels.items() if prose_names(text, lb, col) or clause_names(text, lb, col, lbs)]


def _new_codes(tbl: Table, col: str, vid: int) -> set[str] | None:
    """The values of `tbl.col` after the change at `vid` that were not there before it (data depth; None:
    not readable, or more values than a statement reads)."""
    q, lim = quote_id(col), MAX_VALUES * 4
    text = f"SELECT DISTINCT CAST({q} AS VARCHAR) FROM {quote_table(tbl.name)} WHERE {q} IS NOT NULL LIMIT {lim}"
    try:
        before, after = [{str(r[0]) for r in duck_at(tbl.ctx, x).sql(text)} for x in (vid - 1, vid)]
    except CatalogError:
        return None
    return None if len(before) >= lim or len(after) >= lim else after - before


def _one_to_one(g: Gone, gone: list[Gone], fresh: set[str] | None) -> bool:
    """Was code `g` respelled one to one: the same rows hold one new code now (`g.new`, `gone_data`), no
    other vanished code went there, and it is the only new code of the change (`fresh`; another new code
    took rows from elsewhere: the codes were redrawn, a split of meaning)?"""
    if g.new is None or fresh is None:
        return False
    news = [h.new for h in gone if h.vid == g.vid and h.new is not None]
    return news.count(g.new) == 1 and fresh <= set(news)


def _fate(g: Gone, fresh: set[str] | None) -> str:
    """What the rows of vanished code `g` show (data depth), in words."""
    held = g.extra.get("now_held")
    if g.new is not None:
        others = sorted((fresh or set()) - {g.new})
        if fresh is None:
            return f"its rows hold {g.new!r} now; whether it is the change's only new code could not be read"
        return (f"its rows hold {g.new!r} now, but the same change brought {others} too: the codes were redrawn"
                if others else f"its rows hold {g.new!r} now, a code another vanished code went to too")
    if held:
        return f"most of its rows hold {held!r} now, not all of them one new code (merged into a code there before, or split)"
    return "its rows are found nowhere now (removed)"


def label_prose(ctx: Context, t: Table, ann: Annotation, anns: list[Annotation], duck: Duck | None = None,
                checked: set[tuple[str | None, str]] | None = None) -> list[Finding]:
    """values_restated: a description on `t` names a code of a coded column (one its `labels` explain) by
    its label (`label_names`), and the code no longer occurs since the text was written. The label is
    false when the code's rows went to a code that was there (merged), to several (split) or nowhere
    (removed); not when they went one to one to a new code (respelled: the label moves with the code).
    Metadata: the code lies outside the column's range now, inside it then (`gone_meta`, certain). The
    statistics cannot tell a merge from a respelling: a code's minimum and maximum record no code that
    sorts inside them (the code that took the rows, or a second new one, the sign of codes redrawn), and a
    code spelled alike in its place pairs short codes by chance ('M12', 'M2'). So: suspect, no fix,
    saying what to check. Data: the rows decide (`gone_data`, `_one_to_one`): stale, `investigate` (a
    code map is no rewrite of a label). Annotations the restatements check names are left to it."""
    since = int(ann.provenance.basis.vid or 0)
    for cid, col, labels in _coded_columns(t, anns):
        named = label_names(ann, cid, col, labels)
        if not named:
            continue
        if checked is not None:
            checked.add((ann.key, "values_restated"))  # the data decides what the statistics suggested
        if ann.key in restated_keys(ctx, t, anns, duck):
            return []
        if duck is None:
            got = {c: g for c, g in gone_meta(t, col, named, since).items() if g.certain}
            fresh: dict[int, set[str] | None] = {}
        else:
            got = gone_data(t, col, list(labels), since, duck)
            fresh = {v: _new_codes(t, col, v) for v in {g.vid for g in got.values()}}
        hit = [got[c] for c in named if c in got and
               (duck is None or not _one_to_one(got[c], list(got.values()), fresh[got[c].vid]))]
        if not hit:
            continue
        what = "table's description" if ann.kind == "table" else \
            f"description of {ann.column}" if ann.column_id != cid else f"description of {col}"
        first = hit[0]
        said = ", ".join(f"{labels[g.old]!r} (code {g.old!r})" for g in hit)
        values = {"table": t.name, "column": col, "values": [g.old for g in hit],
                  "labels": {g.old: labels[g.old] for g in hit}, "change_vid": first.vid}
        cause = cause_of("label_gone", t.name, first.vid, col)
        if duck is None:
            s = t.stat(col) or {}
            return [finding(ann, f"{t.name}.{ann.column}" if ann.kind == "column" else t.name, "values_restated",
                            "suspect",
                            f"the {what} names {said} of {col} by its label; since vid {first.vid} "
                            f"({day_of(first.time)}) the code lies outside {col}'s range ([{s.get('min')}, "
                            f"{s.get('max')}]; inside it when the text was written), so no row holds it. If its rows "
                            "went to a code that was there (merged), to several, or nowhere (removed), the text names "
                            "what is gone; if to one new code (respelled), the label moves with it: the statistics "
                            f"cannot tell. Check which codes of {col} hold its rows now (data depth)",
                            [first.vid], [first.time], values=values, cause=cause)]
        return [finding(ann, f"{t.name}.{ann.column}" if ann.kind == "column" else t.name, "values_restated", "stale",
                        f"the {what} names {said} of {col} by its label, and the code no longer occurs since vid "
                        f"{first.vid} ({day_of(first.time)}): " + "; ".join(f"{g.old!r}: {_fate(g, fresh[g.vid])}"
                                                                          for g in hit),
                        [first.vid], [first.time], values={**values, "rows": {g.old: g.extra for g in hit}},
                        suggestion=f"rewrite the text: {said} no longer occur in {col}",
                        fixes=[make_fix("investigate", columns=[col])], cause=cause)]
    return []


_QUALIFIED = re.compile(r"(?<![\w.])([A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*)\.([A-Za-z_]\w*)(?![\w])")


def _prose_tables(ctx: Context, t: Table, ann: Annotation, anns: list[Annotation],
                  tables: dict[str, Table | None] | None) -> list[tuple[Table, list[Annotation]]]:
    """The tables whose coded columns prose may name: its own; for a table's description, also the other
    tables whose column it names qualified (`fct_orders.status`)."""
    out: list[tuple[Table, list[Annotation]]] = [(t, anns)]
    if ann.kind != "table" or tables is None:
        return out
    seen = {t.name}
    for q, c in _QUALIFIED.findall(str(ann.value or "")):
        other = resolve_table(ctx, t, q, tables)
        if other is not None and other.name not in seen and other.col(c) is not None:
            seen.add(other.name)
            out.append((other, ctx.annotations(other.name)))
    return out


def _table_prose_names(text: object, value: str, values: list[str], tbl: Table, column: str, home: bool) -> bool:
    """Does a table's prose name `value` of `tbl.column`: as `prose_names` reads it (quoted, or beside the
    column's name), or as a whole word (not a function word) in a clause (text between sentence
    stops) that names the column too (on its own table: as a word, or by naming two of its values; on
    another: qualified by the table's name); on its own table that is `clause_names` (an empty value is no
    word). A word that only looks like a value, in a clause about something else ("a bronze standard of
    loyalty"), names none."""
    s = str(text or "")
    if prose_names(s, value, column):
        return True
    if home:
        return clause_names(s, value, column, values)
    if not re.fullmatch(r"[\w-]+", value) or value.lower() in FUNCTION_WORDS:
        return False
    short = tbl.name.rsplit(".", 1)[-1]
    qualified = rf"\b{re.escape(short)}\.{re.escape(column)}\b"
    return any(word_in(clause, value) and re.search(qualified, clause, re.IGNORECASE)
               for clause in clauses(s))


def _declared_codes(ctx: Context, tbl: Table, col: str) -> list[Any] | None:
    """The complete set of values an annotation of `tbl.col` declares: its enum, else its labels' codes."""
    cur = tbl.col(col)
    if cur is None:
        return None
    for what in ("enum", "labels"):
        for a in ctx.annotations(tbl.name):
            if a.kind == "column" and a.field == what and (a.column or "").lower() == cur.name.lower():
                v = a.value
                codes = list(v) if isinstance(v, (list, dict)) else None
                if codes:
                    return codes
    return None


def _past_range(then_s: dict[str, Any], now_s: dict[str, Any]) -> list[Any] | None:
    """The ends of a column's range now (statistics `now_s`) that lie outside its range then (`then_s`):
    a minimum below the old one, a maximum above the old one. None when either range is unknown or its
    ends do not compare."""
    lo, hi, tlo, thi = now_s.get("min"), now_s.get("max"), then_s.get("min"), then_s.get("max")
    if lo is None or hi is None or tlo is None or thi is None:
        return None
    try:
        return [v for v, out in ((lo, lo < tlo), (hi, hi > thi)) if out]
    except TypeError:
        return None


def grouped_codes(ctx: Context, t: Table, ann: Annotation, tables: dict[str, Table | None]) -> list[Finding]:
    """A verified query that groups by a coded column (one whose complete set of values an enum or its
    labels declare) whose set of codes moved since the query was verified, so the listing the query
    answers may hold a group no one verified, or lack one:
    - gained: the column now holds a value outside the range its statistics held then, and outside the
      declared set (spelled like none of it: a respelled code is `grouped_meta`'s and `grouped_values'`);
    - lost: a declared code inside the column's range then lies outside it now (`gone_meta`, certain),
      with no value spelled alike in its place (a respelling, again `grouped_meta`'s): its rows were
      merged into another code or removed.
    verified_query_changed, suspect, re-verify. A value inside the old range cannot be told from the
    statistics; a column the query compares with literals lists no set. The data depth runs the query
    (its answer check keeps the finding only when the answer moved)."""
    since = _since(ann)
    if not since:
        return []
    compared = {(tb.name, c.lower()) for tb, c, _v in compared_literals(ctx, t, ann, tables)}
    for tbl, col in grouped_columns(ctx, t, ann, tables, listing=True):
        if (tbl.name, col.lower()) in compared or not tbl.tl.data_after(since):
            continue
        codes = _declared_codes(ctx, tbl, col)
        then_s, now_s = stats_at(tbl, since).get(col) or {}, tbl.stat(col) or {}
        past = _past_range(then_s, now_s)
        if not codes or past is None:
            continue
        new = [v for v in past if v not in codes and not any(spelled_alike(str(c), str(v)) for c in codes)]
        if new:
            last = tbl.tl.data_after(since)[-1]
            return [finding(ann, t.name, "verified_query_changed", "suspect",
                            f"the verified query groups by {tbl.name}.{col}, which holds {new} since it was verified "
                            f"(outside its range then, [{then_s['min']}, {then_s['max']}], and outside the declared "
                            "values): its answer may list another set of groups; re-check the answer",
                            [since, last[0]], [last[1]], values={"table": tbl.name, "column": col, "new": new},
                            suggestion="re-check the answer and re-verify the query", fixes=[make_fix("reverify")])]
        if (then_s.get("min"), then_s.get("max")) == (now_s.get("min"), now_s.get("max")):
            continue  # the range did not move: no declared code left it
        gone = sorted((g for g in gone_meta(tbl, col, [str(c) for c in codes if isinstance(c, str)], since).values()
                       if g.certain and g.new is None), key=lambda g: g.vid)
        if gone:
            lost = [g.old for g in gone]
            return [finding(ann, t.name, "verified_query_changed", "suspect",
                            f"the verified query groups by {tbl.name}.{col}, whose declared value(s) {lost} lie inside "
                            f"its range when it was verified ([{then_s['min']}, {then_s['max']}]) and outside it "
                            f"since vid {gone[0].vid} ({day_of(gone[0].time)}), so no row holds them: its answer may "
                            "lack those groups (merged into another, or removed); re-check the answer",
                            [since, gone[0].vid], [gone[0].time],
                            values={"table": tbl.name, "column": col, "lost": lost},
                            suggestion="re-check the answer and re-verify the query", fixes=[make_fix("reverify")])]
    return []


def grouped_codes_data(ctx: Context, t: Table, ann: Annotation, tables: dict[str, Table | None], duck: Duck,
                       checked: set[tuple[str | None, str]], already: set[tuple[str | None, str]]) -> list[Finding]:
    """`grouped_codes` read from the data: a verified query that groups by (or lists) a coded column
    whose set of codes moved since the query was verified, so the listing the query answers holds a
    group no one verified, or lacks one it held: verified_query_changed, suspect, re-verify.
    - gained: the column now holds a value outside the declared set that it did not hold then. The data
      sees what the statistics cannot: a value inside the old range, and one spelled like a declared
      code that still occurs (the code split, not respelled: a respelling takes the old code away,
      `grouped_values`);
    - lost: a declared code that held rows then holds none now, after a commit that may remove rows
      (`rewriting`), with no new value spelled alike in its place (that is a respelling,
      `grouped_values`): its rows were merged into another code or removed.
    A query whose answer the data found unchanged (`checked`, by the answer check before), or that
    metadata already flagged, is not read again; the old snapshot is read only when the codes now hold
    a value outside the declared set, or lack a declared one."""
    if {(ann.key, "verified_query_changed")} & (checked | already):
        return []
    since = _since(ann)
    if not since:
        return []
    lim = MAX_VALUES * 4
    compared = {(tb.name, c.lower()) for tb, c, _v in compared_literals(ctx, t, ann, tables)}
    for tbl, col in grouped_columns(ctx, t, ann, tables, listing=True):
        if (tbl.name, col.lower()) in compared or not tbl.tl.data_after(since):
            continue
        codes = {str(c) for c in _declared_codes(ctx, tbl, col) or [] if c is not None}
        if not codes:
            continue
        try:
            now = distinct_values(duck, tbl, col, lim)
            outside, missing = now - codes, (codes - now if rewriting(tbl, since) else set())
            then = distinct_values(duck_at(ctx, since), tbl, col, lim) if (outside or missing) and len(now) < lim else set()
        except CatalogError:
            continue
        if not then:  # nothing read at the verified vid: no evidence of what is new or gone
            continue
        new = sorted(v for v in outside - then if not any(spelled_alike(c, v) and c not in now for c in codes))
        lost = sorted(c for c in missing & then if not any(spelled_alike(c, v) for v in now - then))
        if not new and not lost:
            continue
        last = tbl.tl.data_after(since)[-1]
        if new:
            said = f"holds {new[:MAX_VALUES]} since it was verified (outside the declared values; the rows show it): " \
                   "its answer lists a group no one verified"
        else:
            said = f"held the declared value(s) {lost[:MAX_VALUES]} when it was verified and holds them no more " \
                   "(merged into another, or removed; the rows show it): its answer lacks a group it listed"
        return [finding(ann, t.name, "verified_query_changed", "suspect",
                        f"the verified query groups by {tbl.name}.{col}, which {said}; re-check the answer",
                        [since, last[0]], [last[1]],
                        values={"table": tbl.name, "column": col, **({"new": new[:MAX_VALUES]} if new else {}),
                                **({"lost": lost[:MAX_VALUES]} if lost else {})},
                        suggestion="re-check the answer and re-verify the query", fixes=[make_fix("reverify")])]
    return []


def _coded_sets(ctx: Context, tbl: Table, tanns: list[Annotation]) -> list[tuple[int, str, list[str]]]:
    """(column id, its name now, its declared values: `_declared_codes`) of the string columns of `tbl`
    whose complete set of values an enum or labels declare (two values or more)."""
    out = []
    for cid in dict.fromkeys(a.column_id for a in tanns if a.kind == "column" and a.field in ("enum", "labels")
                             and a.column_id is not None):
        cur = tbl.cols.get(cid)
        if cur is None or type_family(cur.type) != "string":
            continue
        vals = [str(v) for v in _declared_codes(ctx, tbl, cur.name) or [] if v is not None and str(v)]
        if len(vals) >= 2:
            out.append((cid, cur.name, vals))
    return out


def prose_complete_set(ctx: Context, t: Table, ann: Annotation, anns: list[Annotation], duck: Duck | None = None,
                       already: set[tuple[str | None, str]] | None = None,
                       tables: dict[str, Table | None] | None = None) -> list[Finding]:
    """A description that names every value a coded column declares (its enum, else its labels' codes; two
    or more), or every code's label ("Loyalty points events: earn, redeem, expire, adjust" over codes B10,
    B9, B3, B2 labelled so), so it reads as the column's complete list ("status success, partial or failed"), while the
    column now holds a value outside that set that it did not hold when the text was written: the text no
    longer lists every value. `enum_violated`, stale, `investigate` (what to write is for a person; the
    enum gets its own finding, with `add_enum_values`). Values are named as `prose_values` reads them (the
    column's own description: as words; other prose: by the clause rule). Metadata: a value beyond the
    range the statistics held then, outside the set; data: the column's values now against those then (a
    text metadata already flagged is left to that finding)."""
    if already is not None and (ann.key, "enum_violated") in already:
        return []
    since = int(ann.provenance.basis.vid or 0)
    if not since:
        return []
    lim = MAX_VALUES * 4
    for tbl, tanns in _prose_tables(ctx, t, ann, anns, tables):
        for cid, col, vals in _coded_sets(ctx, tbl, tanns):
            own = ann.kind == "column" and tbl is t and cid == ann.column_id
            labels = next((a.value for a in tanns if a.kind == "column" and a.field == "labels"
                           and a.column_id == cid and isinstance(a.value, dict)), {})
            # by the labels: data depth only, and only while every code still occurs (a code respelled one to one
            # takes its label along, and the list still holds)
            by_label = duck is not None and len(vals) >= 2 and all(
                str(labels.get(v) or "") and prose_names(ann.value, str(labels[v]), None) for v in vals)
            if not by_label and not all(prose_names(ann.value, v, None) if own else
                                        _table_prose_names(ann.value, v, vals, tbl, col, tbl is t) for v in vals):
                continue
            after = tbl.tl.data_after(since)
            if not after:
                continue
            codes = set(vals)
            if duck is None:
                past = _past_range(stats_at(tbl, since).get(col) or {}, tbl.stat(col) or {})
                if past is None:
                    continue
                new = sorted({v for v in past if isinstance(v, str) and v not in codes
                              and not any(truncates(v, c) for c in codes)})
            else:
                try:
                    now = distinct_values(duck, tbl, col, lim)
                    outside = now - codes
                    then = distinct_values(duck_at(ctx, since), tbl, col, lim) if outside and len(now) < lim else set()
                except CatalogError:
                    continue
                if not then or (by_label and set(vals) - now):
                    continue
                new = sorted(outside - then)
            if new:
                return [finding(ann, f"{t.name}.{ann.column}" if ann.kind == "column" else t.name, "enum_violated",
                                "stale", f"the {ann.field} names every value of {tbl.name}.{col} ({', '.join(vals)}), "
                                f"and the column holds {new[:MAX_VALUES]} since it was written: the text no longer "
                                "lists every value", [since, after[-1][0]], [after[-1][1]],
                                values={"table": tbl.name, "column": col, "listed": vals, "outside": new[:MAX_VALUES]},
                                suggestion=f"rewrite the text: {col} holds {', '.join(new[:MAX_VALUES])} too",
                                fixes=[make_fix("investigate", columns=[col])])]
    return []
