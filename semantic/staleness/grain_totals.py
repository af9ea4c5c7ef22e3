"""Class `grain`, data depth: total rows. A build that starts writing, beside the rows of a dimension,
a row holding their sum (a company total beside the regions, an 'ALL' channel per day) keeps the
grain's keys unique, so no uniqueness check sees it; but every claim that aggregates the table's rows
across that dimension now counts each figure twice.

Evidence (`total_rows`, cached per table, claim basis and vid): a value of a grain key column of text
that occurs now and did not at the claim's basis (the table's last load before it), whose rows hold, in a measure, the sum of the other
values' rows for the same other keys, in nearly every group (`TOTAL_SHARE`, two groups or more, each
total over two rows or more, not all zero). What it makes false:

- a metric aggregating every row (count, sum, avg) whose filter does not name the key column;
- a verified query reading the table whose answer moves when the total rows are left out (the query
  run twice: as written, and with the table read through `WHERE key NOT IN (the totals)`), unless its
  text names the key column;
- the table's description naming the key column (its name, or its words) or stating the grain;
- the key column's own description (what a member is: "Region of the store"; a total is none).

Each is stale with no fix to accept: whether a claim should leave the totals out (a filter) or use
them alone is for a person to say, and re-verifying the moved answer would certify a doubled figure;
the finding names the column and its total value(s), `investigate` on the column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from catalog_core.errors import CatalogError
from semantic import _bounded
from semantic._bounded import LimitExceededError, literals
from semantic.annotations import fingerprint
from semantic.history import Context, type_family
from semantic.models import Annotation, Finding
from semantic.staleness.claim_rules import phrase_names
from semantic.staleness.core import (
    Duck,
    Table,
    cause_of,
    day_of,
    declared_keys,
    duck_at,
    finding,
    load_at,
    make_fix,
    quote_id,
    quote_table,
)
from semantic.staleness.definitions import answer_of
from semantic.staleness.definitions_values import distinct_values
from semantic.staleness.grain import aggregates_every_row
from semantic.staleness.schema import ROWS_PER, names
from semantic.staleness.values_units import MAX_VALUES, parsed_sql

TOTAL_SHARE = 0.9   # of a new value's groups whose measure is the sum of the other values' rows
MAX_NEW = 3         # new values of one key column looked at (more is a new dimension member set, not totals)
MAX_MEASURES = 6    # measures compared per key column


@dataclass(frozen=True)
class Totals:
    """Rows of `values` in key column `column` hold the sum of the other rows per `by`, in `measures`."""

    column: str
    values: tuple[str, ...]
    measures: tuple[str, ...]
    by: tuple[str, ...]
    groups: int
    vid: int            # the first data commit after the basis that holds them
    time: float


def _measures(t: Table, anns: list[Annotation], keys: set[str]) -> list[str]:
    """Numeric columns outside the keys, those annotated with a unit or as a measure first."""
    marked = {a.column_id for a in anns if a.kind == "column" and
              (a.field == "unit" or (a.field == "role" and a.value == "measure"))}
    nums = [(i not in marked, c.name) for i, c in t.cols.items()
            if c.name.lower() not in keys and type_family(c.type) == "number"]
    return [n for _, n in sorted(nums, key=lambda x: x[0])][:MAX_MEASURES]


def _distinct(duck: Duck, t: Table, col: str) -> set[str] | None:
    """The column's distinct values (None: `MAX_VALUES` x 4 or more), read as the value checks read them
    (`definitions_values.distinct_values`: one statement per column and vid through the shared runners)."""
    lim = MAX_VALUES * 4
    got = distinct_values(duck, t, col, lim)
    return None if len(got) >= lim else got


def total_rows(ctx: Context, t: Table, anns: list[Annotation], duck: Duck, basis: int | None) -> list[Totals]:
    """The key columns of `t` whose values new since `basis` are totals of the other values' rows (see
    the module); [] when the table declares fewer than two grain keys, did not load after `basis`, or a
    statement cannot run. Cached per (table, basis, vid)."""
    if not basis or basis >= ctx.vid:
        return []
    basis = load_at(t, basis)  # the rows then: claims written between the same two loads share them
    after = [(v, tt) for v, tt in t.tl.data_commits if v > basis]
    keys = [k for k in declared_keys(anns) if t.col(k) is not None]
    if not after or len(keys) < 2 or not any(type_family(c.type) == "string" for k in keys if (c := t.col(k))):
        return []
    ck = ("totals", t.name, basis, ctx.vid)
    got = ctx.cache.sql.take(ck)
    if got is not None:
        cached: list[Totals] = got[0]
        return cached
    out: list[Totals] = []
    try:
        out = _find(ctx, t, anns, duck, basis, keys, after)
    except (CatalogError, LimitExceededError):
        out = []  # no evidence either side
    ctx.cache.sql.put(ck, (out,))
    return out


def _first(ctx: Context, t: Table, after: list[tuple[int, float]], holds: Any) -> int | None:
    """The index of the first data commit of `after` at whose snapshot `holds(duck)` is true (binary
    search: once true, it stays), None when it is true at none; a statement that cannot run there
    (the column not yet added) is false."""
    def ok(i: int) -> bool:
        try:
            return bool(holds(duck_at(ctx, after[i][0])))
        except CatalogError:
            return False

    lo, hi = 0, len(after) - 1
    if not ok(hi):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid + 1, hi)
    return lo


def _find(ctx: Context, t: Table, anns: list[Annotation], duck: Duck, basis: int, keys: list[str],
          after: list[tuple[int, float]]) -> list[Totals]:
    tq = quote_table(t.name)
    low = {k.lower() for k in keys}
    measures = _measures(t, anns, low)
    out: list[Totals] = []
    if not measures:
        return out
    then = duck_at(ctx, basis)
    for k in keys:
        col = t.col(k)
        assert col is not None
        if type_family(col.type) != "string":
            continue  # a member code ('ALL', 'TOTAL', 'R0'); a numeric key's new value is a new member
        now_vals = _distinct(duck, t, col.name)
        try:
            was = _distinct(then, t, col.name)
        except CatalogError:  # the column was added since the basis (a region key joined the grain): its
            # values at the first load that held it, by the schema history (the round-22 Acme tester's finance
            # report, whose metric predates its region key, summing a 'total' row beside the regions: missed before)
            since = next((ch.vid for ch in t.tl.changes_after(basis) if any(c.name == col.name for c in ch.added)), None)
            first = next((v for v, _tt in after if since is not None and v >= since), None)
            was = None if first is None else _distinct(duck_at(ctx, first), t, col.name)
        if now_vals is None or was is None or len(was) < 2:
            continue
        new = sorted(now_vals - was)
        if not new or len(new) > MAX_NEW:
            continue
        by = [x for x in keys if x != k]
        found = [(v, got) for v in new if (got := _summing(duck, tq, col.name, v, by, measures))]
        if found:
            held = sorted({m for _, g in found for m in g[0]})
            totals = [v for v, _ in found]
            # the load that first wrote them (said as their date, and one cause for every claim they falsify)
            i = _first(ctx, t, after, lambda d, c=col.name, tv=set(totals): tv & (_distinct(d, t, c) or tv))
            vid, tt = after[i or 0]
            out.append(Totals(col.name, tuple(totals), tuple(held), tuple(by), max(g[1] for _, g in found), vid, tt))
    return out


def _summing(duck: Duck, tq: str, col: str, new: str, by: list[str],
             measures: list[str]) -> tuple[list[str], int] | None:
    """The measures whose rows of the value `new` hold the other rows' sum per `by` in `TOTAL_SHARE` of the
    groups (two or more, each over two rows or more, not all zero), and the number of groups."""
    q = quote_id(col)
    byq = ", ".join(quote_id(b) for b in by)
    on = " AND ".join(f"r.{quote_id(b)} IS NOT DISTINCT FROM o.{quote_id(b)}" for b in by)
    isnew = f"CAST({q} AS VARCHAR) = {literals([new])}"
    sums = ", ".join(f"sum({quote_id(m)}) AS m{i}" for i, m in enumerate(measures))
    checks = ", ".join(f"count(*) FILTER (WHERE o.n >= 2 AND o.m{i} <> 0 AND "
                       f"abs(r.m{i} - o.m{i}) <= 0.001 * abs(o.m{i}) + 0.01)" for i in range(len(measures)))
    rows = duck.sql(f"SELECT count(*), {checks} FROM "
                    f"(SELECT {byq}, {sums} FROM {tq} WHERE {isnew} GROUP BY ALL) r JOIN "
                    f"(SELECT {byq}, {sums}, count(*) AS n FROM {tq} WHERE {q} IS NULL OR NOT {isnew} GROUP BY ALL) o "
                    f"ON {on}")
    if not rows or not rows[0][0] or int(rows[0][0]) < 2:
        return None
    groups = int(rows[0][0])
    held = [m for i, m in enumerate(measures) if int(rows[0][i + 1] or 0) >= TOTAL_SHARE * groups]
    return (held, groups) if held else None


def _says(t: Table, text: str, col: str) -> bool:
    """Does the text name the column: as an identifier, in its words (`phrase_names`), or by the last
    word of its name (four letters or more, a plural allowed: "per region" for `region`)?"""
    if names(text, col) or phrase_names(text, col, [c.name for c in t.cols.values()]):
        return True
    word = col.lower().split("_")[-1]
    return len(word) >= 4 and re.search(rf"(?<![a-z]){re.escape(word)}s?(?![a-z])", text, re.IGNORECASE) is not None


def _without(sql: str, t: Table, col: str, values: tuple[str, ...]) -> str | None:
    """`sql` with every read of `t` through `(SELECT * FROM t WHERE col NOT IN values)` under the same
    alias; None when the statement does not parse or does not read `t`."""
    from sqlglot import exp

    parsed = parsed_sql(sql)
    if parsed is None:
        return None
    tree = parsed.copy()  # the parse is shared (cached per process): never changed in place
    full = t.name.lower()
    hit = False
    for node in list(tree.find_all(exp.Table)):
        name = ".".join(p for p in (node.catalog, node.db, node.name) if p).lower()
        if not name or not (full == name or full.endswith("." + name)):
            continue
        alias = node.alias or node.name
        q = quote_id(col)
        sub = parsed_sql(f"SELECT * FROM {quote_table(t.name)} WHERE {q} IS NULL OR CAST({q} AS VARCHAR) "
                         f"NOT IN ({literals(list(values))})")
        if sub is None:
            return None
        node.replace(exp.Subquery(this=sub.copy(), alias=exp.TableAlias(this=exp.to_identifier(alias))))
        hit = True
    return tree.sql(dialect="duckdb") if hit else None


def totals_check(ctx: Context, t: Table, a: Annotation, anns: list[Annotation], duck: Duck, last: int) -> list[Finding]:
    """grain, data: the claims total rows make false (see the module)."""
    val: Any = a.value
    if a.kind == "metric":
        if not aggregates_every_row(str((val or {}).get("expression") or "")):
            return []
    elif a.kind == "verified_query":
        if not str((val or {}).get("sql") or ""):
            return []
    elif not (a.field == "description" and a.kind in ("table", "column")):
        return []
    out: list[Finding] = []
    for tot in total_rows(ctx, t, anns, duck, a.provenance.basis.vid):
        shown = ", ".join(repr(x) for x in tot.values)
        what = (f"since {day_of(tot.time)} rows of {tot.column} {shown} hold the sum of the other {tot.column} "
                f"rows per ({', '.join(tot.by)}) in {', '.join(tot.measures)} ({tot.groups} groups): total rows")
        said = _falsified(ctx, t, a, tot)
        if said is None:
            continue
        reason, why = said
        out.append(finding(a, t.name, reason, "stale", f"{what}; {why}", [tot.vid, last], [tot.time],
                           values={"column": tot.column, "totals": list(tot.values), "measures": list(tot.measures),
                                   "by": list(tot.by), "groups": tot.groups},
                           fixes=[make_fix("investigate", columns=[tot.column])],
                           cause=cause_of("grain", t.name, tot.vid, f"totals:{tot.column}")))
    return out


def _falsified(ctx: Context, t: Table, a: Annotation, tot: Totals) -> tuple[str, str] | None:
    """(reason, why) when the total rows `tot` make claim `a` false (see the module), else None."""
    val: Any = a.value
    if a.kind == "metric":
        if names(str(val.get("filter") or ""), tot.column):
            return None
        return "grain_violated", "this metric aggregates every row, so it counts each figure twice"
    if a.kind == "verified_query":
        sql = str(val.get("sql") or "")
        alt = None if names(sql, tot.column) else _without(sql, t, tot.column, tot.values)
        if alt is None:
            return None
        ok, now = answer_of(ctx, sql, ctx.vid)
        try:
            rows = _bounded.query(ctx.cat, ctx.vid, alt)
        except (CatalogError, LimitExceededError):
            return None
        if not ok or fingerprint(rows) == now:
            return None
        return "verified_query_changed", "the verified answer includes them (it moves when they are left out): check it"
    if a.kind == "column":  # the key column's own description says what a member is: a total is none
        if (a.column or "").lower() != tot.column.lower():
            return None
        shown = ", ".join(repr(x) for x in tot.values)
        return "grain_violated", f"{tot.column} now also holds {shown}, which is no member of what this describes"
    text = str(val or "")
    if not (_says(t, text, tot.column) or any(p in text.lower() for p in ROWS_PER)):
        return None
    return "grain_violated", f"the description's rows are no longer all {tot.column} members: check what it says"
