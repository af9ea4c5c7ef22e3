"""Derived measures: ratios and averages the catalog has no single column or metric for, composed from
two measures, and counts of entities that have more than N related rows.

Generic English only (HARNESS.md, offline agent): nothing here knows any lake.

  "<event> rate", "share of <rows> ... <event>"  COUNT(<flag or link column>) / COUNT(*) on the rows' table
  "<X> per <Y>" (Y a numeric column)             SUM(X) / NULLIF(SUM(Y), 0) on one table
  "average daily <X>" (X a metric)               the metric per day, then AVG over the days
  "average <E> <X>" (E a count metric)           metric X / NULLIF(metric E, 0), each queried on its own
  "<E>s ... more than <n> <child>"               entities whose key appears more than n times in the
                                                 child table: GROUP BY key HAVING COUNT(*) > n

Each entry point is a generator the planner drives with `yield from`; it returns SQL, or None to let
the ordinary plan go on.
"""

from __future__ import annotations

import re
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from sqlglot import exp, parse_one

from eval.agents.loop import Step, Turn
from eval.agents.offline.know import Col, tokens
from eval.agents.offline.slots import NUMBERS, expand, stem, words_of

if TYPE_CHECKING:
    from eval.agents.offline.agent import Planner

__all__ = ["early", "late", "via_metrics", "combine", "daily", "rate_event", "per_pair", "more_than", "prefix_match"]

Node = Any
NUM = r"(\d+|" + "|".join(NUMBERS) + r")"


def prefix_match(a: str, b: str, n: int = 5) -> bool:
    """Two words of one family: conversion / converted, shipment / shipments."""
    a, b = a.lower(), b.lower()
    if stem(a) == stem(b):
        return True
    k = 0
    while k < min(len(a), len(b)) and a[k] == b[k]:
        k += 1
    return min(len(a), len(b)) >= n and k >= max(4, min(len(a), len(b)) - 4)


# ------------------------------------------------------------------ parsing
def rate_event(text: str) -> tuple[str, list[str]] | None:
    """("repair", words to drop) for "repair rate"; ("ride", ...) for "share of app unlocks that
    ended in a ride"."""
    t = text.lower()
    m = re.search(r"\b([a-z]+)\s+rate\b", t)
    if m and m.group(1) not in ("the", "a", "an", "our", "what", "which", "exchange", "interest", "tax"):
        return m.group(1), [m.group(1), "rate"]
    m = re.search(r"\b(?:share|fraction|proportion|percentage|percent)\s+of\s+.*?\b([a-z]+ed)\s+"
                  r"(?:into|in|to)?\s*(?:an?|the)?\s*([a-z]+)\b", t)
    if m:
        return m.group(2), ["share", "fraction", "proportion", "percentage", "percent", m.group(1), m.group(2)]
    return None


def per_pair(text: str) -> tuple[str, str] | None:
    """("fare", "kilometre") for "fare per kilometre"; never "per day" or "per store" (those are grains or
    dimensions; the caller checks Y is a numeric column)."""
    m = re.search(r"\b([a-z]+)\s+per\s+([a-z]+)\b", text.lower())
    if not m or m.group(2) in ("day", "week", "month", "year", "quarter", "period", "each", "every"):
        return None
    return m.group(1), m.group(2)


def more_than(text: str) -> tuple[int, list[str]] | None:
    """(n, child words) for "more than one repair" / "at least two flat tyres"."""
    t = text.lower()
    m = re.search(r"\b(more than|at least)\s+" + NUM + r"\s+([a-z]+)(?:\s+([a-z]+))?", t)
    if not m:
        return None
    k = int(m.group(2)) if m.group(2).isdigit() else NUMBERS[m.group(2)]
    n = k if m.group(1) != "at least" else k - 1
    words = [w for w in (m.group(3), m.group(4)) if w]
    return n, words


# ------------------------------------------------------------------ helpers
def _drop_words(p: Planner, words: list[str]) -> None:
    s = p.s
    assert s is not None
    gone = set(words) | {stem(w) for w in words}
    s.content = [w for w in s.content if w not in gone]
    s.measure = [w for w in s.measure if w not in gone]
    s.dims = [d for d in ([w for w in d if w not in gone] for d in s.dims) if d]


def _event_column(p: Planner, table: str, event: str) -> Col | None:
    """A boolean flag, or a nullable link column, whose name carries the event word."""
    best = None
    for c in p.k.table(table).columns.values():
        if c.family not in ("bool", "num", "text"):
            continue
        if c.family != "bool" and not (c.idlike and c.name not in p.k.table(table).grain_keys[:1]):
            continue
        if c.family != "bool" and set(words_of(c.name)[:-1]) <= tokens(table):
            continue    # the table's own key (rentals.rental_id) links to no event
        if not any(prefix_match(event, w) for w in words_of(c.name)):
            continue
        key = (int(c.family == "bool"), -len(words_of(c.name)), c.name)
        if best is None or key > best[0]:
            best = (key, c)
    return best[1] if best else None


def _text_hits(p: Planner, event: str) -> list[str]:
    out = []
    for h in p.k.hits:
        name = h["name"]
        t = p.k.table(name)
        if t.deprecated:
            continue
        ws = tokens(name) | set(words_of(t.description))
        if any(prefix_match(event, w) for w in ws):
            out.append(name)
    return list(dict.fromkeys(out))


def _ratio(num: Node, den: Node) -> Node:
    return exp.Div(this=exp.Mul(this=num, expression=exp.Literal.number("1.0")),
                   expression=exp.func("nullif", den, exp.Literal.number(0)))


# ------------------------------------------------------------------ before any metric is chosen
def early(p: Planner, metric: dict[str, Any] | None) -> Generator[Step, Turn, str | None]:
    """Before the measure's table is chosen: counts of entities with more than n related rows, and
    rates, unless a defined metric already names the rate (metric first)."""
    s = p.s
    assert s is not None
    mt = more_than(s.text)
    if mt is not None and s.agg in ("count", "count_distinct"):
        sql = yield from _more_than(p, *mt)
        if sql:
            return sql
    ev = rate_event(s.text)
    if ev is not None and metric is not None and any(prefix_match(ev[0], w) for w in words_of(metric["name"])):
        return None
    if ev is not None:
        sql = yield from _rate(p, *ev)
        if sql:
            return sql
    return None


def _rate(p: Planner, event: str, drop: list[str]) -> Generator[Step, Turn, str | None]:
    s = p.s
    assert s is not None
    rest = set(s.measure) - set(drop)
    cands = _text_hits(p, event)
    first = p.pick_table(rest) if rest else None
    order = ([first] if first else []) + [c for c in cands if c != first]
    for name in order[:3]:
        if not (yield from p.described(name)):
            continue
        c = _event_column(p, name, event)
        if c is None:
            continue
        e: Node = exp.column(c.name, table="t0", quoted=True)
        num = exp.func("count_if", e) if c.family == "bool" else exp.Count(this=e)
        p.rewritten = (_ratio(num, exp.Count(this=exp.Star())), None)
        # a filter reached through the event's own link would keep only the rows that had the event
        # (every rate 100%): the rate's rows are never filtered through that link
        t = p.k.table(name)
        t.relationships = [r for r in t.relationships if c.name not in {a for a, *_ in r.get("on") or []}]
        _drop_words(p, drop + words_of(c.name))
        sql = yield from p.compose(name, None)
        return sql
    return None


def _more_than(p: Planner, n: int, child_words: list[str]) -> Generator[Step, Turn, str | None]:  # noqa: C901 - one generator of the agent's scripted tool calls: the steps, and the eval's call counts, stay in order
    s = p.s
    assert s is not None
    entity = next((w for w in s.measure if w not in child_words), None)
    if entity is None:
        return None
    ent = stem(entity)
    child = parent = None
    for h in p.k.hits:
        name = h["name"]
        tk = tokens(name)
        if p.k.table(name).deprecated:
            continue
        if child is None and any(stem(w) in tk for w in child_words[:1]):
            child = name
        if parent is None and ent in tk:
            parent = name
    if child is None:
        return None
    if not (yield from p.described(child)):
        return None
    ct = p.k.table(child)
    key = next((c for c in ct.columns.values() if c.idlike and ent in tokens(c.name)
                and c.name not in ct.grain_keys[:1]), None)
    if key is None:
        return None
    inner = exp.select(exp.column(key.name, table="c", quoted=True)).from_(
        exp.alias_(_q(child), "c", table=True))
    w = s.window
    if not w.empty:
        if parent is None:
            return None
        if not (yield from p.described(parent)):
            return None
        if key.name not in p.k.table(parent).columns:
            return None
        start, end = w.start, w.end
        if w.fiscal or w.fiscal_rel:
            fis = yield from p.resolve_fiscal()
            if not fis:
                return None
            start, end = fis["start"], fis["end"]
        tcol = p.time_column(parent, None)
        if tcol is None:
            return None
        inner = inner.join(exp.alias_(_q(parent), "p", table=True),
                           on=exp.EQ(this=exp.column(key.name, table="p", quoted=True),
                                     expression=exp.column(key.name, table="c", quoted=True)))
        tc: Node = exp.column(tcol.name, table="p", quoted=True)
        if tcol.family == "ts":
            tc = exp.Cast(this=tc, to=exp.DataType.build("DATE"))
        if start:
            inner = inner.where(exp.GTE(this=tc.copy(), expression=_day(start)))
        if end:
            inner = inner.where(exp.LT(this=tc.copy(), expression=_day(end)))
    inner = inner.group_by(exp.column(key.name, table="c", quoted=True)).having(
        exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(n)))
    sql = exp.select(exp.Count(this=exp.Star()).as_("value")).from_(inner.subquery("t")).sql("duckdb")
    r = yield from p.call("run_sql", {"sql": sql, "limit": 5}, essential=True)
    if r is None or r.is_error:
        return None
    return sql


# ------------------------------------------------------------------ once the measure's table is known
def late(p: Planner, main: str, metric: dict[str, Any] | None) -> Generator[Step, Turn, str | None]:
    s = p.s
    assert s is not None
    pp = per_pair(s.text)
    if pp is not None:
        sql = yield from _per(p, main, *pp)
        if sql:
            return sql
    if s.agg == "avg" and metric is not None:
        if re.search(r"\baverage\s+daily\b|\bdaily\s+average\b|\bper day\b|\ba day\b", s.text.lower()) \
                and metric.get("time_column"):
            p.daily_avg = True
            return None
        sql = yield from _metric_ratio(p, metric)
        if sql:
            return sql
    return None


def _per(p: Planner, main: str, x: str, y: str) -> Generator[Step, Turn, str | None]:
    t = p.k.table(main)
    den = None
    for c in t.columns.values():
        if c.family == "num" and not c.idlike and (y in tokens(c.name) or stem(y) in tokens(c.name)):
            den = c
            break
    if den is None:
        return None
    num = p.measure_column(main, {x})
    if num is None or num.name == den.name:
        return None
    e_num: Node = exp.func("sum", exp.column(num.name, table="t0", quoted=True))
    unit = (num.unit or "").lower()
    if "cent" in unit or (not unit and "cents" in tokens(num.name)):
        e_num = exp.Div(this=e_num, expression=exp.Literal.number("100.0"))
    p.rewritten = (_ratio(e_num, exp.func("sum", exp.column(den.name, table="t0", quoted=True))), None)
    _drop_words(p, [x, y])
    sql = yield from p.compose(main, None)
    return sql


def _metric_ratio(p: Planner, metric: dict[str, Any]) -> Generator[Step, Turn, str | None]:
    """"average rental fare": the measure words hold an entity counted by a count metric (rentals) and
    a quantity the other words name (a fare metric); their ratio."""
    s = p.s
    assert s is not None
    counts = [m for m in p.k.metrics if re.match(r"\s*count\s*\(", str(m.get("expression") or ""), re.I)]
    ent = None
    for w in s.measure:
        for m in counts:
            short = m["name"].rsplit(".", 1)[-1]
            if words_of(short) and all(stem(x) == stem(w) for x in words_of(short)):
                ent = (w, m)
                break
        if ent:
            break
    if ent is None:
        return None
    rest = {w for w in s.measure if w != ent[0]}
    if not rest:
        return None
    want = expand(rest) & rest
    numm = p.pick_metric(want)
    if numm is None or numm["name"] == ent[1]["name"]:
        yield from p.call("list_metrics", {"query": " ".join(sorted(want)), "limit": 10})
        numm = p.pick_metric(want)
    if numm is None or numm["name"] == ent[1]["name"]:
        return None
    if not (yield from p.described(numm["table"])):
        return None
    p.ratio_metrics = (numm, ent[1])
    _drop_words(p, sorted(rest | {ent[0]}))
    sql = yield from p.compose(numm["table"], numm)
    return sql


def combine(num_sql: str, den_sql: str, ndims: int) -> str:
    """Two metric queries with the same group-by: their values' ratio, joined on the group-by."""
    a: Node = parse_one(num_sql, read="duckdb")
    b: Node = parse_one(den_sql, read="duckdb")
    a_cols = [e.alias_or_name for e in a.expressions]
    b_cols = [e.alias_or_name for e in b.expressions]
    sel: list[Node] = [exp.column(c, table="n", quoted=True).as_(c) for c in a_cols[:ndims]]
    sel.append(_ratio(exp.column(a_cols[-1], table="n", quoted=True),
                      exp.column(b_cols[-1], table="d", quoted=True)).as_("value"))
    tree = exp.select(*sel).from_(a.subquery("n"))
    if ndims:
        on = exp.and_(*[exp.EQ(this=exp.column(x, table="n", quoted=True), expression=exp.column(y, table="d", quoted=True))
                        for x, y in zip(a_cols[:ndims], b_cols[:ndims], strict=False)])
        tree = tree.join(b.subquery("d"), on=on)
    else:
        tree = tree.join(b.subquery("d"), join_type="cross")
    return str(tree.sql("duckdb"))


def daily(sql: str, ndims: int) -> str:
    """A metric grouped by its dims and then its time column: the average over the days, per dims."""
    a: Node = parse_one(sql, read="duckdb")
    cols = [e.alias_or_name for e in a.expressions]
    sel: list[Node] = [exp.column(c, table="x", quoted=True).as_(c) for c in cols[:ndims]]
    sel.append(exp.func("avg", exp.column(cols[-1], table="x", quoted=True)).as_("value"))
    tree = exp.select(*sel).from_(a.subquery("x"))
    if ndims:
        tree = tree.group_by(*[exp.Literal.number(i + 1) for i in range(ndims)])
    return str(tree.sql("duckdb"))


def _q(name: str) -> exp.Table:
    parts = name.split(".")
    return exp.table_(parts[-1], db=parts[-2] if len(parts) > 1 else None,
                      catalog=parts[-3] if len(parts) > 2 else None, quoted=True)


def _day(d: Any) -> Node:
    return exp.Cast(this=exp.Literal.string(d.isoformat()), to=exp.DataType.build("DATE"))


def via_metrics(p: Planner, args: dict[str, Any], ndims: int,
                metric: dict[str, Any]) -> Generator[Step, Turn, str | None]:
    """query_metric for a derived measure: per day then averaged, or two metrics and their ratio."""
    s = p.s
    assert s is not None
    if not s.window.empty and not args.get("time_range") and not p.metric_where:
        return None     # the window could not be resolved: never answer over all time
    if p.daily_avg and metric.get("time_column"):
        a = dict(args, group_by=list(args["group_by"]) + [metric["time_column"]])
        r = yield from p.call("query_metric", a, essential=True)
        if r is None or r.is_error or not r.result:
            return None
        return daily(str(r.result["sql"]), ndims)
    if p.ratio_metrics is None:
        return None
    num, den = p.ratio_metrics
    r = yield from p.call("query_metric", dict(args, metric=num["name"]), essential=True)
    if r is None or r.is_error or not r.result:
        return None
    b = {k: v for k, v in args.items() if k != "where"}
    if b.get("time_range") and not den.get("time_column"):
        return None
    r2 = yield from p.call("query_metric", dict(b, metric=den["name"]), essential=True)
    if r2 is None or r2.is_error or not r2.result:
        return None
    return combine(str(r.result["sql"]), str(r2.result["sql"]), ndims)
