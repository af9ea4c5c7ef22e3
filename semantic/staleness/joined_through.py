"""Class `keys_joins`, what rests on a join: a metric that reads a column of a related table (through
the relationship that joins them) and a verified query whose SQL joins two tables on equal columns
answer over the rows that join matches. When the values of one side of such a join written since the
definition share no range with the other side's (the statistics of a key restated in a new format,
e.g. + 10^9), the join matches none of those rows and the definition's answer silently drops them,
whatever its own columns say: join_match_low, suspect. No fix for a metric (which column joins now
is for the data or a person to say); a verified query is re-verified by hand once the join is
corrected (`reverify`, which review never applies as is). At data depth the match rate of the
join is measured; a join that matches decides the suspicion does not hold. Rows removed from the
related table (a category dropped) leave the fact rows that joined them without a match: a metric
reading through that join is flagged at data depth when its match rate fell below MATCH_LOW since
the metric was defined (no fix)."""

from __future__ import annotations

from typing import Any

from catalog_core.errors import CatalogError
from semantic._bounded import LimitExceededError
from semantic.history import Context
from semantic.models import Annotation, Finding
from semantic.staleness.core import (
    MATCH_LOW,
    Duck,
    Table,
    duck_at,
    finding,
    get_table,
    make_fix,
    quote_id,
    quote_table,
    resolve_table,
    stats_at,
)
from semantic.staleness.definitions_values import sql_aliases
from semantic.staleness.keys_joins import added_unmatched
from semantic.staleness.values_units import parsed_sql

Pair = tuple[Table, str, Table, str]


def _metric_joins(ctx: Context, t: Table, ann: Annotation, anns: list[Annotation],
                  tables: dict[str, Table | None]) -> list[Pair]:
    """The joins a metric's expression and filter rest on: for each column they name of another table
    (qualified by its name, or bare and not a column of the metric's table), the relationships of the
    metric's table into that table, as (t, column, related table, column) pairs."""
    from sqlglot import exp

    val = ann.value or {}
    reads: set[str] = set()
    rels = [(str((a.value or {}).get("to") or ""), a.value or {}) for a in anns if a.kind == "relationship"]
    for text in (val.get("expression"), val.get("filter")):
        tree = parsed_sql(str(text)) if text else None
        if tree is None:
            continue
        for c in tree.find_all(exp.Column):
            if c.table:
                other = resolve_table(ctx, t, c.table, tables)
                if other is not None and other.name != t.name:
                    reads.add(other.name)
            elif t.col(c.name) is None:
                reads |= {to for to, _v in rels if (o := get_table(ctx, to, tables)) is not None and o.col(c.name)}
    out: list[Pair] = []
    for to, v in rels:
        other = get_table(ctx, to, tables) if to in reads else None
        if other is None:
            continue
        for p in v.get("on") or []:
            if isinstance(p, (list, tuple)) and len(p) == 2:
                out.append((t, str(p[0]), other, str(p[1])))
    return out


def _query_joins(ctx: Context, t: Table, ann: Annotation, tables: dict[str, Table | None]) -> list[Pair]:
    """The equalities between columns of two tables in a verified query's JOIN conditions."""
    from sqlglot import exp

    tree = parsed_sql(str((ann.value or {}).get("sql") or ""))
    if tree is None:
        return []
    scope = sql_aliases(ctx, t, tree, tables)

    def side(c: Any) -> Table | None:
        if not isinstance(c, exp.Column):
            return None
        if c.table:
            return scope.get(c.table.lower())
        has = list(dict.fromkeys(x for x in scope.values() if x.col(c.name) is not None))
        return has[0] if len(has) == 1 else None

    out: list[Pair] = []
    for j in tree.find_all(exp.Join):
        on = j.args.get("on")
        if on is None:
            continue
        for eq in on.find_all(exp.EQ):
            a, b = side(eq.this), side(eq.expression)
            if a is not None and b is not None and a.name != b.name and \
                    a.col(eq.this.name) is not None and b.col(eq.expression.name) is not None:
                out.append((a, eq.this.name, b, eq.expression.name))
    return out


def _declared(ctx: Context, x: Table, xc: str, y: Table, yc: str) -> bool:
    """Does a relationship of x into y join x.xc to y.yc (x is the referencing side)?"""
    for a in ctx.annotations(x.name):
        v = (a.value or {}) if a.kind == "relationship" else {}
        if str(v.get("to") or "") == y.name and any(
                isinstance(p, (list, tuple)) and len(p) == 2 and str(p[0]).lower() == xc.lower()
                and str(p[1]).lower() == yc.lower() for p in v.get("on") or []):
            return True
    return False


def _within(a: dict[str, Any], b: dict[str, Any]) -> bool | None:
    try:
        if None in (a.get("min"), a.get("max"), b.get("min"), b.get("max")):
            return None
        return bool(b["min"] <= a["min"] and a["max"] <= b["max"])
    except TypeError:
        return None


def _referencing(ctx: Context, pair: Pair, since: int) -> Pair | None:
    """The pair oriented from its referencing side (the rows that look up the other's key): as a
    relationship declares it, else the side whose values were inside the other's range when the
    definition was written (the join then matched); None when neither shows it."""
    x, xc, y, yc = pair
    if _declared(ctx, x, xc, y, yc):
        return pair
    if _declared(ctx, y, yc, x, xc):
        return y, yc, x, xc
    bx, by = stats_at(x, since).get(xc) or {}, stats_at(y, since).get(yc) or {}
    xin, yin = _within(bx, by), _within(by, bx)
    if xin and yin:  # the same range: the side whose declared grain is that one column is looked up
        xin, yin = _keyed(ctx, y, yc), _keyed(ctx, x, xc)
    if xin and not yin:
        return pair
    if yin and not xin:
        return y, yc, x, xc
    return None


def _keyed(ctx: Context, t: Table, col: str) -> bool:
    """Is `col` the one key of t's declared grain?"""
    return any([str(k).lower() for k in (a.value or {}).get("keys") or []] == [col.lower()]
               for a in ctx.annotations(t.name) if a.key == "table.grain" and isinstance(a.value, dict))


def _apart(x: Table, xc: str, y: Table, yc: str, since: int) -> tuple[Any, Any] | None:
    """([min, max] of the referencing x.xc's values written since vid `since` (all of them when x
    loaded nothing since), [min, max] of the referenced y.yc) when they share no range (and x.xc as
    a whole is not inside y.yc's range); None otherwise or when unknown. Values of different kinds
    are left alone here (a type change is the schema checks' evidence)."""
    mine, theirs = x.col(xc), y.col(yc)
    if mine is None or theirs is None:
        return None
    whole, o = x.stat(mine.name) or {}, y.stat(theirs.name) or {}
    if _within(whole, o) is not False:
        return None
    a = (x.written_since(since).get(mine.name) or {}) if x.tl.data_after(since) else whole
    try:
        if None in (a.get("min"), a.get("max"), o.get("min"), o.get("max")):
            return None
        if a["min"] > o["max"] or a["max"] < o["min"]:
            return [a["min"], a["max"]], [o["min"], o["max"]]
    except TypeError:
        return None
    return None


def joined_through(ctx: Context, t: Table, ann: Annotation, anns: list[Annotation],
                   tables: dict[str, Table | None]) -> list[Finding]:
    pairs = _metric_joins(ctx, t, ann, anns, tables) if ann.kind == "metric" else _query_joins(ctx, t, ann, tables)
    since = ann.provenance.basis.vid
    for x, xc, y, yc in dict.fromkeys(pairs):
        ref = _referencing(ctx, (x, xc, y, yc), since)
        if ref is None:
            continue
        p, pc, q, qc = ref
        got = _apart(p, pc, q, qc, since)
        if got is None:
            continue
        recent, other = got
        changed = sorted({v for tb in (p, q) for v, _ in tb.tl.data_after(since)})
        vq = ann.kind == "verified_query"
        return [finding(ann, t.name, "join_match_low", "suspect",
                        f"{ann.key} joins {x.name}.{xc} = {y.name}.{yc}; values of {p.name}.{pc} "
                        f"({recent}{', written since vid ' + str(since) if p.tl.data_after(since) else ''}) "
                        f"share no range with {q.name}.{qc} ({other}): a new key format? the join matches none of "
                        "those rows, so the answer leaves them out; check the join key (the data depth measures "
                        "its match rate)",
                        changed[:1] + changed[-1:],
                        values={"from": p.name, "column": pc, "to": q.name, "to_column": qc,
                                "recent": recent, "target": other},
                        suggestion="correct the join, then re-check the answer and re-verify the query"
                        if vq else None, fixes=[make_fix("reverify")] if vq else [])]
    return []


def _match(duck: Duck, frm: str, pairs: list[tuple[str, str]], to: str) -> tuple[int, int] | None:
    """(rows of `frm` with a key, those of them that find a match in `to` on `pairs`) at the Duck's vid;
    None when the join cannot run there (a column not yet or no longer there)."""
    fk = " AND ".join(f"f.{quote_id(x)} IS NOT NULL" for x, _ in pairs)
    on = " AND ".join(f"f.{quote_id(x)} = g.{quote_id(y)}" for x, y in pairs)
    keys = ", ".join(quote_id(y) for _, y in pairs)
    try:
        total, matched = duck.sql(f"SELECT count(*), count(g.__m) FROM {quote_table(frm)} f LEFT JOIN "
                                  f"(SELECT DISTINCT {keys}, 1 AS __m FROM {quote_table(to)}) g ON {on} WHERE {fk}")[0]
    except LimitExceededError:
        raise
    except CatalogError:
        return None
    return int(total or 0), int(matched or 0)


def _orphaned(ctx: Context, t: Table, ann: Annotation, anns: list[Annotation], tables: dict[str, Table | None],
              duck: Duck) -> list[Finding]:
    """A metric reading a related table through its table's relationship (`_metric_joins`) whose rows find
    a match less often than MATCH_LOW now, where they found one when the metric was defined (rows of the
    related table removed or rekeyed since): the metric's answer silently leaves those rows out."""
    by: dict[str, list[tuple[str, str]]] = {}
    for _x, xc, y, yc in dict.fromkeys(_metric_joins(ctx, t, ann, anns, tables)):
        by.setdefault(y.name, []).append((xc, yc))
    basis = ann.provenance.basis.vid
    for to, pairs in by.items():
        now = _match(duck, t.name, pairs, to)
        if basis is None or now is None or not now[0] or now[1] / now[0] >= MATCH_LOW:
            continue
        then = _match(duck_at(ctx, basis), t.name, pairs, to)
        if then is None or not then[0] or then[1] / then[0] < MATCH_LOW:
            continue  # the join matched as poorly when the metric was defined: nothing fell since
        rate, before = now[1] / now[0], then[1] / then[0]
        on = ", ".join(f"{x} = {y}" for x, y in pairs)
        return [finding(ann, t.name, "join_match_low", "suspect",
                        f"{ann.key} reads {to} through the join on {on}: only {rate:.1%} of {t.name} rows find a "
                        f"match there now, {before:.1%} when it was defined at vid {basis}: rows of {to} were removed "
                        "or rekeyed, and the metric leaves the rows that lost their match out; check the join and "
                        "the metric", [basis, ctx.vid],
                        values={"from": t.name, "to": to, "on": [list(p) for p in pairs], "rows": now[0],
                                "matched": now[1], "rate": round(rate, 4), "rate_then": round(before, 4)})]
    return []


def joined_through_data(ctx: Context, t: Table, ann: Annotation, anns: list[Annotation],
                        tables: dict[str, Table | None], duck: Duck, already: set[tuple[str | None, str]],
                        checked: set[tuple[str | None, str]]) -> list[Finding]:
    """At data depth, the join a metadata `joined_through` finding named is measured: when the rows of its
    side find a match (rate >= MATCH_LOW), and so do the rows its side loaded since the definition
    (`added_unmatched`: a few recent rows in a new key format do not move the table's rate), the
    suspicion does not hold (`checked` drops it). A metric no metadata finding suspected is flagged
    when the match rate of a join it reads through fell below MATCH_LOW since it was defined
    (`_orphaned`: rows of the related table removed)."""
    if (ann.key, "join_match_low") not in already:
        return _orphaned(ctx, t, ann, anns, tables, duck) if ann.kind == "metric" else []
    for f in joined_through(ctx, t, ann, anns, tables):
        v = f.evidence.values
        frm, col, to, tcol = (str(v.get(k) or "") for k in ("from", "column", "to", "to_column"))
        if not (frm and col and to and tcol):
            return []
        got = _match(duck, frm, [(col, tcol)], to)
        if got is None:
            return []
        total, matched = got
        if not total or matched / total < MATCH_LOW:
            return []
        x, y = get_table(ctx, frm, tables), get_table(ctx, to, tables)
        if matched < total and x is not None and y is not None and \
                added_unmatched(ctx, x, y, [(col, tcol)], f"SELECT * FROM {quote_table(to)}", got,
                                ann.provenance.basis.vid) is not None:
            return []  # the rows loaded since the definition match too rarely: the suspicion holds
    checked.add((ann.key, "join_match_low"))
    return []
