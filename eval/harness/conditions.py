"""The eval's conditions as read models: what an agent is shown in each condition is decided here,
on the eval's side, by the `Reads` it passes to `create_server` (the production server has no
switch of its own).

    bare            `Bare`: no semantic layer at all: no cards, no metrics, joins or findings,
                    annotation objects hidden from query_catalog and diff_snapshots, search by
                    table and column names only
    enriched, stale `NoFindings`: annotations, but nothing staleness detection says about them
                    (cards without findings and statuses, check_staleness empty)
    *+detect        `Reads`: everything
    static          `Static` over `Conventional(cat)`: the stale annotations served the way a conventional
                    catalog serves them: the current state only (no commit log beyond the latest commit,
                    no named snapshots, no diff, no object history), no load-log completeness and no
                    findings (issue 49: what semcat's history buys over a conventional catalog)
    stale+reviewed  `Reads` over LAKE/reviewed: the stale history after a scripted steward ran the
                    data-depth scan, accepted every fix the review loop validates and dismissed the rest
                    (eval.harness.reviewed; issue 49: the end-to-end value of detection plus review)

Which history (catalog directory of the lake) each condition reads is `HISTORY_OF`; the lake's now
(lake.json `d0`, the Acme D0 when absent) is `lake_now`.

Invariant: every condition keeps each tool's output schema (only values are left out).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from catalog_core import lake
from catalog_core.api import CatalogAPI
from catalog_core.model import Branch, Change, Commit, Obj, Snapshot, Version
from mcp_server.mcp import create_server
from mcp_server.mcp.errors import CodedToolError
from mcp_server.mcp.reads import Reads
from semantic.models import Completeness, Finding, MetricView, TableCard

__all__ = ["Bare", "NoFindings", "Static", "Conventional", "reads_for", "condition_server", "STATIC", "REVIEWED",
           "HISTORY_OF", "ALL_HISTORIES", "history_dir", "lake_now"]

STATIC = "static"   # the hide flags' third value: runner.HIDE_FLAGS["static"] = (False, STATIC)
REVIEWED = "stale+reviewed"


def _histories() -> tuple[dict[str, str], tuple[str, ...]]:
    from eval.lake import CONDITIONS, HISTORIES

    return {**CONDITIONS, REVIEWED: "reviewed"}, (*HISTORIES, *(h for h in ("reviewed",) if h not in HISTORIES))


# condition -> the history it reads; every history a lake may hold (LAKE/<history>)
HISTORY_OF, ALL_HISTORIES = _histories()


def history_dir(root: str, condition_or_history: str) -> str:
    """The catalog directory of the lake at `root` a condition (or history) reads."""
    h = HISTORY_OF.get(condition_or_history, condition_or_history)
    if h not in ALL_HISTORIES:
        raise ValueError(f"unknown condition {condition_or_history!r}; one of {', '.join(HISTORY_OF)}")
    return os.path.join(root, h)


def lake_now(root: str) -> dt.datetime:
    """The lake's now: lake.json's `d0` (every eval world writes it), else the Acme lake's D0."""
    from eval.lake import D0

    if not root:
        return D0
    try:
        with open(os.path.join(root, "lake.json"), encoding="utf-8") as fh:
            d0 = json.load(fh).get("d0")
    except (OSError, ValueError):
        return D0
    if not d0:
        return D0
    t = dt.datetime.fromisoformat(str(d0))
    return t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)


class Bare(Reads):
    """The catalog without its semantic layer (the eval's `bare` condition)."""

    def card(self, cat: CatalogAPI, name: str, vid: int, now: float) -> TableCard | None:
        return None

    def rank(self, cat: CatalogAPI, query: str, vid: int, tables: Mapping[str, Obj]) -> list[tuple[str, float]]:
        """Tables whose names or column names match `query` (rapidfuzz), best first."""
        from rapidfuzz import fuzz

        q = query.lower()
        words = [w for w in re.split(r"[^a-z0-9]+", q) if w]
        scored = []
        for name, obj in tables.items():
            short = name.rsplit(".", 1)[-1].lower()
            text = name.lower().replace("_", " ")
            cols = " ".join(n.lower() for n in lake.TableValue.from_raw(obj.value).schema.names)
            score = max(fuzz.WRatio(q, short), fuzz.WRatio(q, name.lower()) * 0.95,
                        fuzz.token_set_ratio(q, text) * 0.9, fuzz.partial_ratio(q, text) * 0.8 if len(q) > 3 else 0,
                        fuzz.token_set_ratio(q, cols.replace("_", " ")) * 0.7)
            score += 5 * sum(1 for w in words if w in text or w in short)
            if score >= 50:
                scored.append((name, round(min(score, 100.0) / 100, 3)))
        return sorted(scored, key=lambda x: (-x[1], x[0]))

    def metrics(self, cat: CatalogAPI, table: str | None, vid: int) -> list[MetricView]:
        return []

    def metric_sql(self, cat: CatalogAPI, metric: str, *, group_by: Sequence[str], where: str | None,
                   time_range: tuple[str | None, ...] | None, grain: str | None, vid: int) -> str:
        raise CodedToolError(f"no metric {metric!r} is defined; write the SQL with run_sql", "NotFoundError")

    def join_path(self, cat: CatalogAPI, a: str, b: str, vid: int, usable: Any = None) -> Any:
        raise CodedToolError(f"no declared relationship joins {a} to {b}; look at both tables' columns "
                             "(describe_table) to find join keys", "NotFoundError")

    def staleness(self, cat: CatalogAPI, table: str | None, vid: int, depth: str, now: float) -> list[Finding]:
        return []

    def annotate(self, cat: CatalogAPI, table: str, fields: dict[str, Any], *, column: str | None, author: str,
                 confidence: float, note: str | None) -> int:
        raise ToolError("this server runs without the semantic layer; annotations are off")

    def instructions(self, cat: CatalogAPI, targets: Sequence[str], vid: int) -> dict[str, str]:
        return {}

    def shows(self, path: str) -> bool:
        return "/_semantic" not in path


class NoFindings(Reads):
    """Annotations without what staleness detection says about them (the eval's `enriched` and `stale`)."""

    def card(self, cat: CatalogAPI, name: str, vid: int, now: float) -> TableCard | None:
        card = super().card(cat, name, vid, now)
        return None if card is None else _without_findings(card)

    def staleness(self, cat: CatalogAPI, table: str | None, vid: int, depth: str, now: float) -> list[Finding]:
        return []


def _without_findings(card: TableCard) -> TableCard:
    """`card` with no findings and every status None (the tools then show none)."""
    def unstated(items: Any) -> Any:
        return [x.model_copy(update={"status": None}) for x in items]
    columns = [c.model_copy(update={"annotations": {k: a.model_copy(update={"status": None})
                                                    for k, a in c.annotations.items()}}) for c in card.columns]
    return card.model_copy(update={
        "findings": [], "status": None, "freshness": card.freshness.model_copy(update={
            "status": None,  # completeness is judged like freshness: only its load log (an annotation) stays
            "completeness": Completeness(load_log=card.freshness.completeness.load_log)}),
        "annotations": {k: a.model_copy(update={"status": None}) for k, a in card.annotations.items()},
        "columns": columns, "relationships": unstated(card.relationships), "metrics": unstated(card.metrics)})


class Static(NoFindings):
    """NoFindings without the load log's judgement: no completeness (partial or failed loads, complete
    through) on cards, the way a conventional catalog shows a table (its last update only)."""

    def card(self, cat: CatalogAPI, name: str, vid: int, now: float) -> TableCard | None:
        card = super().card(cat, name, vid, now)
        if card is None:
            return None
        return card.model_copy(update={"freshness": card.freshness.model_copy(update={"completeness": Completeness()})})


class Conventional:
    """A catalog as a conventional catalog serves it: the current state only. Reads of objects, files and
    SQL go to `cat` unchanged; the history is gone: `commits` gives at most the newest matching commit,
    without its message (a "last modified" time), `snapshots` and `branches` none, `diff` nothing, and
    `history` an object's current version only."""

    def __init__(self, cat: CatalogAPI) -> None:
        self._cat = cat

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cat, name)

    def commits(self, since: Any = None, until: Any = None, prefix: str | None = None,
                limit: int | None = None) -> list[Commit]:
        got = self._cat.commits(since=since, until=until, prefix=prefix, limit=1)
        return [dataclasses.replace(c, message="", author="", paths=()) for c in got[-1:]] if limit != 0 else []

    def snapshots(self) -> list[Snapshot]:
        return []

    def branches(self, prefix: str | None = None, vid: Any = None) -> list[Branch]:
        return []

    def diff(self, from_ref: Any, to_ref: Any = None, prefix: str | None = None) -> Iterator[Change]:
        return iter(())

    def history(self, path: str) -> list[Version]:
        return [v for v in self._cat.history(path) if v.end_vid is None][-1:]


def reads_for(hide_annotations: bool, hide_findings: bool | str) -> Reads:
    """The read model of a condition given as (hide_annotations, hide_findings) (`runner.HIDE_FLAGS`;
    hide_findings STATIC: the `static` condition)."""
    if hide_annotations:
        return Bare()
    if hide_findings == STATIC:
        return Static()
    return NoFindings() if hide_findings else Reads()


def condition_server(cat: CatalogAPI, hide: tuple[bool, bool | str], now: float | None = None,
                     **kw: Any) -> MCPServer:
    """`create_server(cat)` showing what the condition with these HIDE_FLAGS shows (the `static` one over
    `Conventional(cat)`)."""
    served: Any = Conventional(cat) if hide[1] == STATIC else cat
    return create_server(served, reads=reads_for(*hide), now=now, **kw)
