"""The semantic layer's read model as the MCP tools see it: one object, `Reads`, whose methods are
the only place the tool families call `semantic` (cards, search, metrics, joins, staleness,
annotate).

Invariant: the production server reads everything the semantic layer computes (`Reads()`); a caller
that wants to show an agent less (the eval's conditions in `eval.harness.conditions`) passes a
subclass to `create_server(reads=...)` and the tools shape their outputs from what it returns: no
tool has a switch of its own. A subclass may return no card (`None`: the table has no semantic
layer), cards without findings or statuses (statuses `None`), and may hide catalog objects by path
(`shows`); it keeps every tool's output schema.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import semantic as sm
from catalog_core.api import CatalogAPI
from catalog_core.model import Obj
from semantic.guard import marked
from semantic.models import Finding, MetricView, TableCard
from semantic.staleness import merge_by_cause

__all__ = ["Reads"]


class Reads:
    """Reads of the semantic layer at a vid, one method per read the tools make."""

    def card(self, cat: CatalogAPI, name: str, vid: int, now: float) -> TableCard | None:
        """The table card of `name` at `vid` with freshness judged at `now` (`sm.describe`)."""
        return sm.describe(cat, name, snapshot=vid, now=now)

    def rank(self, cat: CatalogAPI, query: str, vid: int, tables: Mapping[str, Obj]) -> list[tuple[str, float]]:
        """(table, score) for a non-empty `query`, best first, only tables among `tables` (`sm.search`)."""
        return [(name, round(score, 3)) for name, score in sm.rank(cat, query, snapshot=vid) if name in tables]

    def metrics(self, cat: CatalogAPI, table: str | None, vid: int) -> list[MetricView]:
        """The metrics of `table` (every table when None) at `vid`."""
        return list(sm.metrics(cat, table, snapshot=vid))

    def metric_sql(self, cat: CatalogAPI, metric: str, *, group_by: Sequence[str], where: str | None,
                   time_range: tuple[str | None, ...] | None, grain: str | None, vid: int) -> str:
        """The SELECT computing `metric` (`sm.metric_sql`); raises a CatalogError for an unknown metric."""
        return sm.metric_sql(cat, metric, group_by=list(group_by), where=where, time_range=time_range, grain=grain,
                             snapshot=vid)

    def join_path(self, cat: CatalogAPI, a: str, b: str, vid: int, usable: Any = None) -> sm.JoinPath:
        """How table `a` joins table `b` at `vid` (`sm.join_path`), through `usable` tables only (grants)."""
        return sm.join_path(cat, a, b, snapshot=vid, usable=usable)

    def staleness(self, cat: CatalogAPI, table: str | None, vid: int, depth: str, now: float) -> list[Finding]:
        """Findings of `table` (every table when None) at `vid` (`sm.staleness`); at metadata depth
        also those of the stored data-depth pass (`sm.scanned_findings`: read back, not re-run, each
        with the vid it read in `evidence.values["scan_vid"]`) that the computed ones do not hold.
        A stored finding of the same claim and reason as a computed one settled it (another status,
        its fix: what the inbox offers) and replaces it while the table is unchanged since the pass
        (no `outdated_by`); an outdated one gives way to the computed finding. A computed suspicion the
        pass checked and found untrue (`sm.scan_cleared`) is left out while what it read is unchanged,
        as the inbox leaves it out."""
        meta = depth == "metadata"
        found = list(sm.staleness(cat, table, snapshot=vid, depth=depth, now=now, merge=not meta))
        if meta:  # per annotation (as the pass stored them) until the pass is applied, then one per cause
            stored = sm.scanned_findings(cat, table, snapshot=vid)
            cleared = {id(f) for f in sm.scan_cleared(cat, found, snapshot=vid)}

            def claim(f: Finding) -> tuple[str, str, frozenset[str | None]]:
                return f.target, f.reason, frozenset([f.annotation, *f.annotations])

            settled = {claim(f): f for f in stored if "outdated_by" not in f.evidence.values}
            found = merge_by_cause([settled.get(claim(f), f) for f in found if id(f) not in cleared])
            have = {(f.target, a, f.reason) for f in found for a in [f.annotation, *f.annotations]}
            found += [f for f in stored if (f.target, f.annotation, f.reason) not in have]
        return found

    def lineage(self, cat: CatalogAPI, table: str, vid: int, direction: str, depth: int, limit: int,
                offset: int) -> dict[str, Any]:
        """The lineage graph of `table` at `vid`, nodes from `offset` (`semantic.lineage.lineage`),
        with the findings that flow downstream, unless a subclass hides findings (overrides
        `staleness`): then the graph comes without them."""
        from semantic.lineage import lineage

        shows = type(self).staleness is Reads.staleness
        return lineage(cat, table, direction=direction, depth=depth, limit=limit, cursor=f"l{offset}" if offset else None,
                       snapshot=vid, findings=shows)

    def annotate(self, cat: CatalogAPI, table: str, fields: dict[str, Any], *, column: str | None, author: str,
                 confidence: float, note: str | None) -> int:
        """Write an agent's annotation (source "agent"); the new vid."""
        return sm.annotate(cat, table, fields, column=column, author=author, source="agent", confidence=confidence,
                           note=note)

    def proposed(self, cat: CatalogAPI, table: str, vid: int) -> list[str]:
        """The annotation keys the commit `vid` stored as proposals on `table` (an agent's write over a
        person's annotation, kept aside for review: semantic.annotations.as_proposals)."""
        return [str(a.value.get("key")) for a in sm.read_annotations(cat, table, vid)
                if a.kind == "review" and a.key.startswith("proposal.") and a.vid == vid and isinstance(a.value, dict)]

    def instructions(self, cat: CatalogAPI, targets: Sequence[str], vid: int) -> dict[str, str]:
        """The `instructions` annotation of each catalog / namespace among `targets` that has one (an
        agent's marked as agent-written: `semantic.guard.marked`)."""
        out: dict[str, str] = {}
        for target in targets:
            for a in sm.read_annotations(cat, target, vid):
                if a.kind == "instructions" and isinstance(a.value, str):
                    out[target] = marked(a.value, a.provenance.source)  # an agent's reads as a claim
        return out

    def shows(self, path: str) -> bool:
        """Whether query_catalog and diff_snapshots show the catalog object at `path` (all of them here)."""
        return True
