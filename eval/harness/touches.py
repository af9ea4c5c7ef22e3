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

`stale_event_subset` is a question subset chosen by a rule over the manifest, never by outcome (the demo's
quick eval, `semcat eval run --subset stale-events[:K]`): the manifest's detectable entries grouped into
drift events (table, kind, change day); for each event in sorted order, the first K questions in id order
(originals only: a paraphrase repeats its original) whose gold reads one of the event's `column.*`,
`metric.*` or `relationship.*` annotations. An event picks its K questions whether or not an earlier event
picked them too; the subset is their union in id order. Events of table-level keys only (deprecation,
freshness SLA, verified queries) pick nothing: whether a question reads them does not depend on what it reads
of the table.
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

__all__ = ["StaleTouch", "stale_touches", "touches", "gold_columns", "SUBSET_RULE", "EVENT_KEYS", "stale_events",
           "stale_event_picks", "stale_event_subset", "parse_subset"]

SUBSET_RULE = "stale-events"
# the annotation kinds (first part of the key) through which a question reads an event (module docstring)
EVENT_KEYS = ("column", "metric", "relationship")


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



def stale_events(manifest: dict[str, Any]) -> dict[tuple[str, str, str], frozenset[str]]:
    """The manifest's detectable drift events, (table, kind, change day) -> the annotations of the event
    whose key is one of EVENT_KEYS (events without such an annotation are left out), in sorted order."""
    events: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for m in manifest.get("stale", []):
        if m.get("detectable") and m["key"].split(".", 1)[0] in EVENT_KEYS:
            events[(m["table"], m["kind"], str(m.get("change")))].add(m["annotation"])
    return {k: frozenset(events[k]) for k in sorted(events)}


def stale_event_picks(questions: Iterable[Question], manifest: dict[str, Any], rules: Iterable[StaleTouch],
                      k: int = 1) -> dict[tuple[str, str, str], list[str]]:
    """Each detectable event (stale_events, sorted) -> the ids of the first K questions (id order, originals
    only) whose gold reads one of its annotations; an event no question reads maps to []. `rules` are
    `stale_touches(manifest, stale_catalog)`; `questions` are under the lake's names (translate_questions),
    as the rules are. Deterministic: a function of the manifest, the stale catalog and the question file,
    never of any agent's answers."""
    if k < 1:
        raise ValueError(f"stale-events subset: K must be at least 1, got {k}")
    rules = list(rules)
    originals = sorted((q for q in questions if q.paraphrase_of is None), key=lambda q: q.id)
    read = {q.id: set(touches(q, rules, detectable_only=True)) for q in originals}
    return {ev: [q.id for q in originals if read[q.id] & anns][:k] for ev, anns in stale_events(manifest).items()}


def stale_event_subset(questions: Iterable[Question], manifest: dict[str, Any], rules: Iterable[StaleTouch],
                       k: int = 1) -> list[Question]:
    """The questions the stale-events rule picks (module docstring; stale_event_picks), in id order."""
    qs = list(questions)
    picked = {i for ids in stale_event_picks(qs, manifest, rules, k).values() for i in ids}
    return sorted((q for q in qs if q.id in picked), key=lambda q: q.id)


def parse_subset(spec: str) -> int:
    """`stale-events` or `stale-events:K` -> K (1 when omitted); anything else is a ValueError saying
    what is accepted."""
    name, sep, k = spec.strip().partition(":")
    if name != SUBSET_RULE or (sep and not k.strip().isdigit()) or (sep and int(k) < 1):
        raise ValueError(f"unknown subset {spec!r}: use {SUBSET_RULE} or {SUBSET_RULE}:K with K >= 1 (the first K "
                         "questions reading each detectable stale event's column, metric or relationship "
                         "annotations)")
    return int(k) if sep else 1
