"""Staleness, computed never stored: each annotation's basis against the snapshot history.

    sm.staleness(cat, table=None, snapshot=None, depth="metadata", now=None) -> list[Finding]

`metadata` reads only the catalog: schema history (`cat.history`), the commit log, table and
partition statistics. `data` adds DuckDB checks at the snapshot: grain keys unique, relationship
match rate and cardinality, enums and sample values present, verified queries still run with the
same result. Findings that do not depend on the clock are cached per (table, snapshot vid, depth)
and, for the whole catalog, per (snapshot vid, depth); the clock-dependent ones (freshness SLA, not
loaded since) are recomputed from cached timelines, for the whole catalog only for the tables whose
`time_due` (cached per vid) is before `now`: a warm call grows with its answer, not with the tree.

The package (docs/findings.md, "The checks"): one module per class of change in `CLASSES`
(schema, values_units, keys_joins, grain, loads_freshness, replacement_deprecation, definitions,
documented_ranges) holds that class's checks; `registry.CHECKS` is the table of every check (its
reason codes, depth, class, the evidence it reads and the fixes it may offer) that `engine` runs;
`core` holds what they share (the table model, findings, statistics helpers); `decisions` the
review marks and the merge by cause.
"""

from __future__ import annotations

from semantic.staleness.core import (
    DAY,
    DEPTHS,
    MATCH_LOW,
    SCD2,
    Duck,
    Table,
    assign,
    cause_of,
    day_of,
    finding,
    get_table,
    make_fix,
    num,
    pair_cost,
    quote_id,
    quote_table,
    resolve_now,
    scale_of,
    worst,
)
from semantic.staleness.decisions import finding_id, merge_by_cause, undismissed
from semantic.staleness.engine import (
    CHANGE_REASONS,
    annotation_findings,
    propagated,
    staleness,
    table_findings,
    time_findings,
)
from semantic.staleness.grain import current_flag
from semantic.staleness.loads_freshness import time_due
from semantic.staleness.registry import CHECKS, CLASSES, REASON_CLASS, Check

__all__ = ["staleness", "time_findings", "time_due", "table_findings", "annotation_findings", "resolve_now", "worst", "DEPTHS", "finding_id",
           "undismissed", "propagated", "CHANGE_REASONS", "CHECKS", "CLASSES", "REASON_CLASS", "Check",
           "merge_by_cause", "current_flag", "scale_of", "pair_cost", "assign"]

# names callers imported from the single module it was (kept importable)
_finding = finding
_COMPAT = (DAY, MATCH_LOW, SCD2, cause_of, day_of, Duck, make_fix, get_table, num, quote_id, Table, quote_table)
