"""Which warnings an answer rests on, and one warning per underlying change.

A tool that answers from some tables attaches warnings about them. Not every finding about a
table concerns a given answer: a `run_sql` over `fct_orders` and `dim_store` does not rest on the
`channel` column it never mentions, nor on `fct_orders`' relationship to `dim_customer`, nor on a
metric or verified query it did not use. Each warning has a *subject* (what the underlying
annotation is about) and each answer a *use* (what it read); a warning is kept when its subject is
within the use, by the rules of `RULES` (one entry per kind of subject). What is left out stays
reachable through `check_staleness` and `describe_table`.

Several findings often come from one change: a column renamed with its unit changed gives
`column_renamed` on its description and `unit_drift` on its unit; a table rewritten in full gives
`values_restated` on each annotation of a column. `dedupe` keeps one warning per (table, subject,
change): the first, with the other reasons folded into it.

Invariants: a table-level warning (deprecation, freshness, a table annotation) is always kept for
a table the answer read; `Use(columns=None)` (a `*` or an unparsed statement) keeps every column
warning; filtering never adds a warning.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TypeVar

__all__ = ["Subject", "Use", "RULES", "relevant", "dedupe"]

W = TypeVar("W")   # a warning, whatever its model


@dataclass(frozen=True)
class Subject:
    """What a warning's underlying annotation is about."""

    table: str
    kind: str = "table"            # table | column | relationship | metric | verified_query
    column: str | None = None      # kind column: the column's name
    related: str | None = None     # kind relationship: the other table
    name: str | None = None        # kind metric: the metric's name
    change: int | None = None      # the vid of the change the finding rests on (None: unknown)
    cause: str | None = None       # the finding's cause (semantic.staleness): one change, however many subjects
    also: tuple[Subject, ...] = ()  # the subjects of warnings folded into this one (dedupe)


@dataclass(frozen=True)
class Use:
    """What an answer read: tables, column names (lower case; None: every column), the metric it
    computed, and whether it followed relationships between its tables (a join path)."""

    tables: frozenset[str]
    columns: frozenset[str] | None = None
    metric: str | None = None
    uses_metrics: bool = False


RULES: dict[str, Callable[[Subject, Use], bool]] = {
    "table": lambda s, u: s.table in u.tables,
    "column": lambda s, u: s.table in u.tables and (u.columns is None or (s.column or "").lower() in u.columns),
    "relationship": lambda s, u: s.table in u.tables and s.related in u.tables,
    "metric": lambda s, u: u.uses_metrics and (u.metric is None or u.metric in (s.name, f"{s.table}.{s.name}")),
    "verified_query": lambda s, u: False,  # an answer never runs a stored query: describe_table shows them
}


def relevant(items: Iterable[tuple[Subject, W]], use: Use) -> list[W]:
    """The warnings (second of each pair) whose subject the answer `use` rests on, in order."""
    def rests(s: Subject) -> bool:
        return RULES.get(s.kind, RULES["table"])(s, use) or any(rests(x) for x in s.also)

    return [w for s, w in items if rests(s)]


def dedupe(items: Iterable[tuple[Subject, W]], merge: Callable[[W, W], W]) -> list[tuple[Subject, W]]:
    """One (subject, warning) per (table, column, change), and per (table, cause) for findings that
    name their cause (a column renamed is one warning, whether its description, unit or a metric on
    it was annotated); `merge(kept, other)` folds another warning of the same change into the kept
    one (e.g. names its reason), whose subject then rests on either's (`Subject.also`). Subjects
    without a known change or cause are never merged."""
    out: list[tuple[Subject, W]] = []
    at: dict[tuple[str, ...], int] = {}
    for s, w in items:
        key: tuple[str, ...] | None = ("cause", s.table, s.cause) if s.cause else None if s.change is None else \
            (s.table, s.kind, str(s.column or s.related or s.name), str(s.change))
        if key is not None and key in at:
            i = at[key]
            kept = out[i][0]
            out[i] = (replace(kept, also=(*kept.also, s)), merge(out[i][1], w))
            continue
        if key is not None:
            at[key] = len(out)
        out.append((s, w))
    return out
