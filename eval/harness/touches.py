"""Which questions touch a stale annotation (HARNESS.md, Scoring: "accuracy on questions that touch a
stale annotation vs those that do not").

A question touches a stale annotation of the manifest when its gold SQL reads what the annotation
describes, per the annotation's key:

    column.<id>.*        the gold reads that column of the table (its name from the annotation's
                         basis); a column that no longer exists under that name (dropped, renamed,
                         replaced) touches every question that reads the table
    relationship.<name>  the gold reads both the table and the relationship's target table
    metric.<name>        the gold reads the table and the question is tagged `metric`
    table.description    only through the other keys of the same drift event (same table, kind and
                         change day): a description that goes stale with a column describes that column;
                         an event of descriptions only touches every question that reads the table
    anything else        (grain, deprecation, freshness SLA, verified queries, ...) every question that
                         reads the table

Only the scorer uses this (it reads the manifest and the gold SQL); agents never do.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp

import semantic as sm
from catalog_core import lake
from catalog_core.api import CatalogAPI
from eval.harness.questions import Question

__all__ = ["StaleTouch", "stale_touches", "touches", "gold_columns"]


@dataclass(frozen=True)
class StaleTouch:
    """One stale annotation's reach: questions reading `table` (and, when set, one of `columns`, or
    also `with_table`, or tagged `tag`) touch it."""

    annotation: str
    table: str
    detectable: bool
    columns: frozenset[str] | None = None
    with_table: str | None = None
    tag: str | None = None


def _columns_now(cat: CatalogAPI, table: str) -> set[str]:
    obj = cat.get(lake.object_path(table))
    cols = lake.TableValue.from_raw(obj.value).columns if obj is not None else ()
    return {c.name.lower() for c in cols}


def stale_touches(manifest: dict[str, Any], cat: CatalogAPI) -> list[StaleTouch]:
    """The manifest's stale annotations as StaleTouch rules, resolved against the stale catalog `cat`
    (annotation bases and current schemas at its latest snapshot)."""
    entries = manifest.get("stale", [])
    events: dict[tuple[str, str, Any], list[dict[str, Any]]] = defaultdict(list)
    for m in entries:
        events[(m["table"], m["kind"], m.get("change"))].append(m)
    anns: dict[str, dict[str, Any]] = {}
    now: dict[str, set[str]] = {}
    out: list[StaleTouch] = []
    for (table, _kind, _change), group in events.items():
        if table not in anns:
            anns[table] = {a.key: a for a in sm.read_annotations(cat, table)}
            now[table] = _columns_now(cat, table)
        event_cols: set[str] = set()
        whole = False
        for m in group:
            key, a = m["key"], anns[table].get(m["key"])
            kind = key.split(".", 1)[0]
            if kind == "column":
                cid = int(key.split(".")[1])
                name = next((c.name.lower() for c in (a.provenance.basis.columns if a and a.provenance.basis else [])
                             if c.id == cid), None)
                if name is None or name not in now[table]:
                    whole = True
                    out.append(StaleTouch(m["annotation"], table, m["detectable"]))
                else:
                    event_cols.add(name)
                    out.append(StaleTouch(m["annotation"], table, m["detectable"], columns=frozenset({name})))
            elif kind == "relationship":
                target = (a.value or {}).get("to") if a is not None and isinstance(a.value, dict) else None
                out.append(StaleTouch(m["annotation"], table, m["detectable"], with_table=target))
            elif kind == "metric":
                out.append(StaleTouch(m["annotation"], table, m["detectable"], tag="metric"))
            elif key != "table.description":
                out.append(StaleTouch(m["annotation"], table, m["detectable"]))
        for m in group:
            if m["key"] == "table.description":
                cols = None if whole or not event_cols else frozenset(event_cols)
                out.append(StaleTouch(m["annotation"], table, m["detectable"], columns=cols))
    return out


def gold_columns(sql: str) -> set[str]:
    """Every column name the SQL mentions (lower case; qualification ignored)."""
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except sqlglot.errors.ParseError:
        return set()
    return {c.name.lower() for c in tree.find_all(exp.Column) if c.name}


def touches(q: Question, rules: Iterable[StaleTouch], *, detectable_only: bool = False) -> list[str]:
    """The stale annotations question `q` touches (empty for unanswerable questions: no gold SQL)."""
    if not q.gold_sql:
        return []
    tables = set(q.tables)
    cols = gold_columns(q.gold_sql)
    hit: list[str] = []
    for r in rules:
        if detectable_only and not r.detectable:
            continue
        if r.table not in tables:
            continue
        if r.columns is not None and not (r.columns & cols):
            continue
        if r.with_table is not None and r.with_table not in tables:
            continue
        if r.tag is not None and r.tag not in q.tags:
            continue
        hit.append(r.annotation)
    return hit

