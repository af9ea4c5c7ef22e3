"""Restated values: what the catalog flags about values is checked against the data.

A table's values can be restated (a category renamed or split) while the annotations that name them
(an enum, sample values, a metric's filter) keep the old words. When staleness detection flags such
an annotation (suspect or stale), a careful literal reader, for ANY lake:

- before using a flagged metric whose filter keeps rows equal to string literals (=, IN), asks the
  data whether each literal still occurs in its column; when one no longer does, the metric's filter
  selects nothing it means to, so the metric is not used and the question is answered from columns;
- then no longer trusts that column's annotated enum and sample values (they name the gone value):
  the values it listed stand in for them (a column with many values is grounded in its data, as an
  unannotated column is). Columns merely flagged keep their annotations (asking the data about
  every flagged column would spend the tool budget).

Exclusions (<>, NOT IN) are not checked: a literal that no longer occurs excludes nothing, which is
what it meant. Nothing here knows a lake: only what the tools returned.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from sqlglot import exp, parse_one

from eval.agents.loop import Step, Turn

if TYPE_CHECKING:
    from eval.agents.offline.know import Knowledge

__all__ = ["distrust", "kept_literals", "trusted"]

FLAGGED = ("suspect", "stale")


def distrust(k: Knowledge, result: dict[str, Any] | None = None) -> None:
    """Replace the enum / sample values of columns whose annotated values the data contradicted by
    the values stored now (or forget them, so the column is grounded in its data). Called after
    each describe_table."""
    for (table, column), stored in k.restated.items():
        c = k.table(table).columns.get(column)
        if c is not None:
            c.enum, c.samples = list(stored), []


def kept_literals(text: str) -> list[tuple[str, str]]:
    """(column, value) pairs a filter keeps rows by: column = 'value' or column IN ('value', ...)."""
    try:
        tree = parse_one(text, read="duckdb")
    except Exception:  # noqa: BLE001 - an unparsable filter names nothing
        return []
    out: list[tuple[str, str]] = []
    for node in tree.find_all(exp.EQ, exp.In):
        if isinstance(node.parent, exp.Not):
            continue
        if isinstance(node, exp.In):
            pairs = [(node.this, v) for v in node.expressions]
        else:
            pairs = [(node.this, node.expression), (node.expression, node.this)]
        for c, v in pairs:
            if isinstance(c, exp.Column) and isinstance(v, exp.Literal) and v.is_string:
                out.append((c.name, str(v.this)))
    return list(dict.fromkeys(out))


LIST = 50   # a column with at most this many distinct values is listed in full


def trusted(planner: Any, metric: dict[str, Any] | None) -> Generator[Step, Turn, dict[str, Any] | None]:
    """`metric`, or None when it is flagged and a value its filter keeps no longer occurs. One
    call per column: its values listed in full (they then stand in for its annotated values), or,
    for a column with many values, the literal looked up."""
    if metric is None or metric.get("status") not in FLAGGED or not metric.get("filter"):
        return metric
    table = str(metric["table"])
    for column, value in kept_literals(str(metric["filter"]))[:2]:
        t = yield from planner.call("get_column_values", {"table": table, "column": column, "limit": LIST})
        if t is None or t.is_error or not t.result:
            continue
        stored = [x.get("value") for x in t.result.get("values") or []]
        if t.result.get("truncated"):
            t = yield from planner.call("get_column_values", {"table": table, "column": column, "query": value,
                                                              "limit": 20})
            if t is None or t.is_error or not t.result:
                continue
            stored = [x.get("value") for x in t.result.get("values") or []]
            if value not in stored:
                planner.k.restated[(table, column)] = []
                distrust(planner.k)
                return None
        elif value not in stored:
            planner.k.restated[(table, column)] = [v for v in stored if v is not None]
            distrust(planner.k)
            return None
    return metric
