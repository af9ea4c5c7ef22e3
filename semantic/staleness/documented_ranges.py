"""Class `documented_ranges`: a date range a description documents ("one row per date from
2023-01-29 to 2026-01-31", "between 2024-01-01 and 2024-12-31") that the data now exceeds, or, where
it stated the data's own first and last day, no longer fills.

Evidence: the annotation's text, its basis statistics (which date column the range described: one
whose values then lay within it) and the column's statistics now. Only full ranges (a start and an
end) are read; a single bound ("until", "since") often speaks of something else (a code's validity,
a deprecation). At metadata depth no fix (the finding gives the data's range); at data depth
`update_range` when the data supports the new range (`range_now`)."""

from __future__ import annotations

import math
import re
from typing import Any

from catalog_core.errors import CatalogError
from catalog_core.model import parse_time
from semantic.history import Context, type_family
from semantic.models import Annotation, Finding
from semantic.staleness.core import (
    DAY,
    Table,
    cause_of,
    day_of,
    declared_keys,
    duck_at,
    finding,
    get_table,
    make_fix,
    quote_id,
    quote_table,
    stats_at,
)
from semantic.staleness.definitions import answer_moved

_DATE = r"(\d{4}-\d{2}-\d{2})"
_RANGE = re.compile(rf"(?:from|between)\s+{_DATE}\s+(?:to|through|until|and)\s+{_DATE}|{_DATE}\s*(?:–|—|\.\.)\s*{_DATE}",
                    re.IGNORECASE)


# a text saying the range is filled day by day
_DAILY = re.compile(r"\b(?:per|each|every)\s+(?:calendar\s+)?(?:day|date)\b|\bdaily\b", re.IGNORECASE)


def documented_ranges(text: object) -> list[tuple[float, float]]:
    """The full date ranges (start, end of the end day) a text states, as epoch seconds."""
    out = []
    for m in _RANGE.finditer(str(text or "")):
        a, b = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        lo, hi = parse_time(a), parse_time(b)
        if lo is not None and hi is not None and lo <= hi:
            out.append((lo, hi + DAY))
    return out


def with_range(text: object, start: str, end: str) -> str | None:
    """`text` with its one full date range stating `start` to `end` (ISO dates), the rest as written; None
    when it states no range or several."""
    got = list(_RANGE.finditer(text)) if isinstance(text, str) else []
    if len(got) != 1 or not all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", x) for x in (start, end)):
        return None
    assert isinstance(text, str)
    m = got[0]
    ga, gb = (1, 2) if m.group(1) else (3, 4)
    return text[:m.start(ga)] + start + text[m.end(ga):m.start(gb)] + end + text[m.end(gb):]


NARROWED = 2 * DAY  # a range the data stopped filling: an end moved inward by more than this (rows of a day or two
#                    late or removed at the edge are no new range)


def range_exceeded(t: Table, ann: Annotation) -> list[Finding]:
    """range_exceeded: a date column whose values at the annotation's basis lay within a range the
    text documents now reaches beyond it (its minimum before the start, or its maximum past the end),
    or, when they spanned it exactly then (the text stated the column's own first and last day), no
    longer reaches it (an end moved inward by more than `NARROWED`: a calendar rebuilt over fewer
    years, old rows purged); evidence `narrowed` True."""
    ranges = documented_ranges(ann.value)
    if not ranges:
        return []
    b = ann.provenance.basis
    cols = [c for c in t.cols.values() if type_family(c.type) == "time" and
            (ann.column is None or c.name.lower() == str(ann.column).lower())]
    out: list[Finding] = []
    for lo, hi in ranges:
        for c in cols:
            then, now = b.stats.get(c.name), t.stat(c.name) or {}
            if then is None:
                continue
            tlo, thi = parse_time(then.min), parse_time(then.max)
            nlo, nhi = parse_time(now.get("min")), parse_time(now.get("max"))
            if None in (tlo, thi, nlo, nhi) or not (lo <= tlo and thi < hi):  # type: ignore[operator]
                continue  # the range did not describe this column when it was written
            assert nlo is not None and nhi is not None and tlo is not None and thi is not None
            narrowed = False
            if nlo >= lo and nhi < hi:
                exact = tlo < lo + DAY and thi >= hi - DAY  # the text stated the column's own ends
                narrowed = exact and (nlo >= lo + NARROWED or nhi < hi - DAY - NARROWED)
                if not narrowed:
                    continue
            last = t.tl.data_commits[-1] if t.tl.data_commits else (t.obj.vid, 0.0)
            inside = ", inside it: the rows no longer reach the range it states" if narrowed else ""
            out.append(finding(ann, f"{t.name}.{c.name}" if ann.column else t.name, "range_exceeded", "stale",
                               f"the text documents {day_of(lo)} to {day_of(hi - DAY)}; {c.name} now spans "
                               f"{now.get('min')} to {now.get('max')}{inside}: check the range the text states",
                               [last[0]], values={"column": c.name, "documented": [day_of(lo), day_of(hi - DAY)],
                                                  "now": [now.get("min"), now.get("max")], "narrowed": narrowed},
                               cause=cause_of("range", t.name, last[0], c.name)))
            return out
    return out


def range_now(ctx: Context, t: Table, ann: Annotation, duck: Any, checked: set[tuple[str | None, str]]
              ) -> list[Finding]:
    """documented_ranges, data: `range_exceeded` as at metadata depth, with the range the text should state
    (`update_range {column, start, end}`: each end the text's where the data still lies within it, the data's
    where it reaches beyond) when the data supports it: the text states one range, and a range the column
    filled day by day at the claim's basis (every day of it held a row), or one the text says is filled
    ("one row per date from ... to ...", "daily"), is filled day by day in the new range. Otherwise nothing
    here (the metadata finding, no fix, stands: a person writes the range, e.g. after one day appended a
    year past the rest)."""
    found = range_exceeded(t, ann)
    if len(found) != 1 or len(documented_ranges(ann.value)) != 1:
        return []
    f = found[0]
    v = f.evidence.values
    col, (a, b), (nlo, nhi) = str(v["column"]), v["documented"], v["now"]
    lo_now, hi_now = parse_time(nlo), parse_time(nhi)
    if lo_now is None or hi_now is None:
        return []
    pa, pb = parse_time(a) or 0, parse_time(b) or 0
    if v.get("narrowed"):  # each end the data moved inward past NARROWED is the data's, the other the text's
        start = day_of(lo_now) if lo_now >= pa + NARROWED else a
        end = day_of(hi_now) if hi_now < pb - NARROWED else b
    else:
        start = a if lo_now >= pa else day_of(lo_now)
        end = b if hi_now < pb + DAY else day_of(hi_now)

    def days(d: Any, lo: str, hi: str) -> int | None:
        q = (f"SELECT count(DISTINCT CAST({quote_id(col)} AS DATE)) FROM {quote_table(t.name)} "
             f"WHERE CAST({quote_id(col)} AS DATE) BETWEEN DATE '{lo}' AND DATE '{hi}'")
        try:
            (n,), = d.sql(q)
        except CatalogError:  # a column renamed since, a failed read: nothing to say
            return None
        return None if n is None else int(n)

    def length(lo: str, hi: str) -> int:  # days from lo to hi, both counted
        return round((parse_time(hi) - parse_time(lo)) / DAY) + 1  # type: ignore[operator]

    basis = ann.provenance.basis.vid
    then = days(duck_at(ctx, basis), a, b) if basis else None
    if then is None:
        return []
    if then == length(a, b) or _DAILY.search(str(ann.value)):  # filled day by day when written, or the text
        # says it is ("one row per day"): the new range must be (a text that was already wrong is not re-certified)
        if days(duck, start, end) != length(start, end):
            return []
    checked.add((ann.key, "range_exceeded"))
    return [f.model_copy(update={"fixes": [make_fix("update_range", column=col, start=start, end=end)],
                                 "suggestion": f"state the range {start} to {end}"})]


def _described(t: Table, ann: Annotation) -> list[tuple[float, float, str]]:
    """(start, end, date column) of each range `ann`'s text documents that described a date column
    of `t` when it was written (the column's values at its basis lay within it)."""
    out = []
    b = ann.provenance.basis
    for lo, hi in documented_ranges(ann.value):
        for c in t.cols.values():
            if type_family(c.type) != "time" or (ann.column is not None and c.name.lower() != str(ann.column).lower()):
                continue
            then = b.stats.get(c.name)
            tlo, thi = (parse_time(then.min), parse_time(then.max)) if then is not None else (None, None)
            if tlo is not None and thi is not None and lo <= tlo and thi < hi:
                out.append((lo, hi, c.name))
    return out


def within(st: dict[str, Any] | None, lo: float, hi: float) -> bool | None:
    """Whether a column's statistics {min, max} lie within [lo, hi) (epoch seconds); None when unknown."""
    a, b = parse_time((st or {}).get("min")), parse_time((st or {}).get("max"))
    return None if a is None or b is None else lo <= a and b < hi


def query_period(sql: str, column: str) -> tuple[float, float] | None:
    """The period a query's conditions restrict `column` to (its BETWEEN bounds and its comparisons
    with date literals), as (start, end of the end day); None when it sets none. Unparsable SQL sets none."""
    from sqlglot import exp

    from semantic.staleness.values_units import parsed_sql

    tree = parsed_sql(sql)
    if tree is None:
        return None
    lo, hi = -math.inf, math.inf

    def day(e: exp.Expression | None) -> float | None:
        m = re.fullmatch(rf"\s*{_DATE}(?:[ T][\d:.]*)?\s*", e.sql(dialect="duckdb").split("'")[1]) \
            if e is not None and "'" in e.sql(dialect="duckdb") else None
        return parse_time(m.group(1)) if m else None

    def col(e: exp.Expression | None) -> bool:
        return isinstance(e, exp.Column) and e.name.lower() == column.lower()

    for node in tree.find_all(exp.Between, exp.GTE, exp.GT, exp.LTE, exp.LT, exp.EQ):
        if isinstance(node, exp.Between):
            a, b = day(node.args.get("low")), day(node.args.get("high"))
            if col(node.this) and a is not None and b is not None:
                lo, hi = max(lo, a), min(hi, b + DAY)
            continue
        left, right = node.this, node.expression
        flip = col(right)
        c, v = (right, left) if flip else (left, right)
        d = day(v)
        if not col(c) or d is None:
            continue
        op = type(node).__name__
        if flip:
            op = {"GTE": "LTE", "GT": "LT", "LTE": "GTE", "LT": "GT"}.get(op, op)
        if op in ("GTE", "GT", "EQ"):
            lo = max(lo, d)
        if op in ("LTE", "EQ"):
            hi = min(hi, d + DAY)
        if op == "LT":
            hi = min(hi, d)
    return None if lo == -math.inf and hi == math.inf else (lo, hi)


def query_range(ctx: Context, t: Table, a: Annotation, tables: dict[str, Table | None], duck: object = None,
                checked: set[tuple[str | None, str]] | None = None) -> list[Finding]:
    """range_exceeded on a verified query: a table it reads took, after the query was verified, rows
    dated beyond the range that table's description documents (its column's statistics within the
    range before that load and beyond it after), and the query's own period on that column (its
    BETWEEN bounds, its comparisons with date literals) does not exclude them. At metadata depth
    (statistics only) only a query that reads that table alone is flagged (`suspect`: its rows reach
    the answer unless the period excludes them; a join may drop them); at data depth the query is run
    just before and just after that load and flagged only when its answer moved (else the metadata
    finding is dropped). Fix `reverify`: the answer counted rows the documented range did not have."""
    val = a.value or {}
    sql, at = str(val.get("sql") or ""), int(val.get("verified_at_vid") or 0)
    names = [str(x) for x in val.get("tables") or [t.name]]
    for name in names:
        tb = t if name == t.name else get_table(ctx, name, tables)
        if tb is None:
            continue
        for d in ctx.annotations(name):
            if d.field != "description" or d.kind not in ("table", "column"):
                continue
            for lo, hi, cname in _described(tb, d):
                v = next((v for v, _ in tb.tl.data_commits if v > at and within(stats_at(tb, v).get(cname), lo, hi) is False
                          and within(stats_at(tb, v - 1).get(cname), lo, hi)), None)
                if v is None:
                    continue
                now = stats_at(tb, v).get(cname) or {}
                nlo, nhi = parse_time(now.get("min")), parse_time(now.get("max"))
                period = query_period(sql, cname)
                beyond = [(x, y) for x, y in ((nlo, lo), (hi, nhi)) if x is not None and y is not None and x < y]
                if period is not None and not any(x < period[1] and period[0] < y for x, y in beyond):
                    continue  # the query's period excludes the rows beyond the range
                if duck is None and len(names) > 1:
                    continue
                if duck is not None:
                    if checked is not None:
                        checked.add((a.key, "range_exceeded"))
                    if not answer_moved(ctx, sql, v):
                        continue
                return [finding(a, t.name, "range_exceeded", "suspect",
                                f"{name} took rows at vid {v} ({day_of(ctx.commit_time(v))}) with {cname} from "
                                f"{now.get('min')} to {now.get('max')}, beyond the {day_of(lo)} to {day_of(hi - DAY)} "
                                f"its {d.key} documents, after the query was verified at vid {at}"
                                + (", and its answer moved across that load" if duck is not None else
                                   ", and the query reads it with no period that excludes them"),
                                [at, v], [ctx.commit_time(v)],
                                values={"table": name, "column": cname, "documented": [day_of(lo), day_of(hi - DAY)],
                                        "now": [now.get("min"), now.get("max")], "load_vid": v},
                                suggestion="re-check the answer and re-verify the query", fixes=[make_fix("reverify")],
                                cause=cause_of("answer", name, v, cname))]  # not merged with the text's (no fix)
    return []


# ------------------------------------------------------------------ rows per key a description documents
# "one to three per order", "1-3 attempts per order", "at most 5 rows per customer", "up to two per day".
_N = r"(\d+|one|two|three|four|five|six|seven|eight|nine|ten|twelve)"
_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
          "ten": 10, "twelve": 12}
_PER = re.compile(rf"(?:\b{_N}\s*(?:to|-|–|or)\s*{_N}|\b(?:at most|up to|no more than)\s+{_N})\s+(?:[a-z_]+\s+){{0,2}}?"
                  r"per\s+([a-z_]+)", re.IGNORECASE)
# "an order may ship in two", "a customer can hold up to three cards": the key first, then the most (not a
# duration: "may ship in two days")
_MAY = re.compile(rf"\b(?:an?|each)\s+([a-z_]+)\s+(?:may|can)\s+(?:[a-z_]+\s+){{0,2}}?(?:in|up to|at most)\s+{_N}\b"
                  r"(?!\s+(?:business\s+)?(?:seconds?|minutes?|hours?|days?|weeks?|months?|years?|%|percent)\b)",
                  re.IGNORECASE)


def _count(w: str) -> int:
    return int(w) if w.isdigit() else _WORDS[w.lower()]


def per_key_bounds(text: object) -> list[tuple[int, str]]:
    """(the most rows, the word after 'per') of each count range a text documents per a key."""
    out = []
    for m in _PER.finditer(str(text or "")):
        hi = m.group(2) or m.group(3)
        out.append((_count(hi), m.group(4).lower()))
    out += [(_count(m.group(2)), m.group(1).lower()) for m in _MAY.finditer(str(text or ""))]
    return out


def _key_of(t: Table, anns: list[Annotation], word: str) -> str | None:
    """The column a word after 'per' names: `order` -> order_id (a name with an identifier suffix, or
    the word itself), or the column of a relationship named so (cryptic names: relationship.order)."""
    stem = word[:-1] if word.endswith("s") and t.col(word) is None else word
    for cand in (stem, *(stem + s for s in ("_id", "_sk", "_key", "_no", "_uuid"))):
        if t.col(cand) is not None:
            return cand
    for a in anns:
        on = (a.value or {}).get("on") if a.kind == "relationship" and isinstance(a.value, dict) else None
        if a.key == f"relationship.{stem}" and isinstance(on, list) and len(on) == 1 and t.col(str(on[0][0])):
            return str(on[0][0])
    return None


def per_key_exceeded(ctx: Context, t: Table, ann: Annotation, anns: list[Annotation], duck: Any) -> list[Finding]:
    """documented_ranges, data: a description documenting how many rows a key has ("payment attempts,
    one to three per order") while some key now has more, and none had at the claim's basis (the text
    held then). The key is the column the word after 'per' names (`_key_of`). Rows are counted as the
    grain names them (its declared keys, distinct): a row repeating the grain's keys is the grain's
    finding, not one more thing per key (the round-9 cryptic tester's shipments re-sent when delivered,
    "an order may ship in two"). range_exceeded, stale, no fix (the new count is for a person to write;
    the finding gives the largest now)."""
    out: list[Finding] = []
    basis = ann.provenance.basis.vid
    since = t.tl.data_after(basis) if basis else []
    grain = [k for k in declared_keys(anns) if t.col(k) is not None]
    for hi, word in per_key_bounds(ann.value):
        key = _key_of(t, anns, word)
        if key is None or not since:
            continue
        # what the text counts is the table's rows as its grain names them: rows that repeat the grain's
        # keys (a shipment re-sent as a new row) are one of them, the grain's own finding says the rest
        own = [k for k in grain if k.lower() != key.lower()]
        n = f"count(DISTINCT ({', '.join(quote_id(k) for k in own)}))" if own else "count(*)"
        q = f"SELECT max(n), count(*) FILTER (WHERE n > {hi}) FROM (SELECT {n} AS n FROM {quote_table(t.name)} " \
            f"WHERE {quote_id(key)} IS NOT NULL GROUP BY {quote_id(key)})"
        try:
            (then_max, _), = duck_at(ctx, basis).sql(q)
            (now_max, over), = duck.sql(q)
        except CatalogError:  # a column renamed since, a failed read: nothing to say
            continue
        if then_max is None or now_max is None or int(then_max) > hi or int(now_max) <= hi:
            continue
        out.append(finding(ann, t.name, "range_exceeded", "stale",
                           f"the text documents at most {hi} row(s) per {word}; {over} {key} value(s) now have more (up "
                           f"to {now_max}), none had at the claim (vid {basis})", [since[0][0], since[-1][0]],
                           [since[0][1], since[-1][1]],
                           {"column": key, "documented_max": hi, "max_now": int(now_max), "keys_over": int(over)},
                           cause=cause_of("per_key", t.name, since[0][0], key)))
    return out
