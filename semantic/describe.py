"""`sm.describe(cat, table, snapshot=None, now=None) -> TableCard`: the one read model of a table
for agents, MCP tools and the HTTP API. The clock-independent part is cached per (table, vid), in memory
and on disk beside an embedded catalog (`card_store`: a new process reads it instead of recomputing);
freshness and the clock-dependent findings are added per call."""

from __future__ import annotations

from typing import Any

from catalog_core import lake
from catalog_core.api import CatalogAPI, SnapshotRef
from catalog_core.model import TimeArg
from semantic import card_store
from semantic._tables import column_id, require_table, table_columns
from semantic.annotations import parse_duration
from semantic.completeness import completeness
from semantic.history import Context
from semantic.models import (
    Annotation,
    AnnotationView,
    ColumnCard,
    ColumnStats,
    DataCommit,
    Deprecation,
    Finding,
    Freshness,
    MetricView,
    RelationshipView,
    TableCard,
    TableStats,
    VerifiedQuestion,
)
from semantic.staleness import annotation_findings, resolve_now, table_findings, time_findings, worst
from semantic.staleness.instructions import is_hidden

__all__ = ["describe"]


def _view(a: Annotation, versions: list[int], snap_time: float, status: str) -> AnnotationView:
    p = a.provenance
    return AnnotationView(key=a.key, kind=a.kind, value=a.value, author=p.author, source=p.source,
                          confidence=p.confidence, note=p.note, vid=a.vid, written_at=p.time,
                          age_commits=sum(1 for v in versions if v > (a.vid or 0)),
                          age_seconds=max(0.0, snap_time - p.time), status=status,  # type: ignore[arg-type]
                          unreviewed=p.source == "agent")


def _status_by_key(findings: list[Finding]) -> dict[str | None, str]:
    out: dict[str | None, str] = {}
    for f in findings:
        out[f.annotation] = worst([out.get(f.annotation, "fresh"), f.status])
    return out


def _incoming(ctx: Context, name: str) -> list[RelationshipView]:
    """Relationships other tables declare to `name` (stored on their FROM table), with the status
    the FROM table's findings give them."""
    ctx.load_all_annotations()
    out = []
    for other in ctx.tables():
        if other == name:
            continue
        mine = [(a, rel) for a in ctx.annotations(other)
                if a.kind == "relationship" and (rel := RelationshipView.of(a)) is not None and rel.to == name]
        if not mine:
            continue
        # the findings of these relationships only, not of all of `other`'s annotations (issue 47, cold start)
        status = _status_by_key(annotation_findings(ctx, other, {a.key for a, _ in mine}))
        out += [rel.model_copy(update={"status": status.get(a.key, "fresh")}) for a, rel in mine]
    return out


def _base(ctx: Context, name: str) -> TableCard:
    key = (name, ctx.vid)
    got = ctx.cache.cards.take(key)
    if got is not None:
        return got
    stored = card_store.load(ctx.cat, ctx.vid, ctx.commit_time(ctx.vid), name)
    if stored is not None:  # computed by an earlier process at this vid (issue 47, cold start)
        ctx.cache.cards.put(key, stored)
        return stored
    obj = ctx.table(name)
    if obj is None:
        obj = require_table(ctx.cat, name, ctx.vid)  # raises with did-you-mean
    tl = ctx.timeline(name)
    versions = tl.versions if tl else []
    anns = ctx.annotations(name)
    findings = [f for f in table_findings(ctx, name, "metadata") if not is_hidden(f)]
    status = _status_by_key(findings)
    snap_time = ctx.commit_time(ctx.vid)
    value = obj.value
    stats = value.get("stats") or {}
    col_stats = stats.get("columns") or {}
    columns = [ColumnCard(id=column_id(c), name=c.name, type=str(c.type), nullable=c.is_nullable,
                          stats=ColumnStats(**{k: (col_stats.get(c.name) or {}).get(k)
                                               for k in ("min", "max", "null_count")})
                          if c.name in col_stats else None)
               for c in table_columns(value)]
    by_id = {c.id: c for c in columns}
    table_anns: dict[str, AnnotationView] = {}
    orphaned: list[AnnotationView] = []
    rels: list[RelationshipView] = []
    mets: list[MetricView] = []
    vqs: list[VerifiedQuestion] = []
    deprecation = None
    for a in anns:
        st = status.get(a.key, "fresh")
        v = _view(a, versions, snap_time, st)
        if a.kind == "table":
            table_anns[a.field] = v
            if a.field == "deprecated" and isinstance(a.value, dict):
                deprecation = Deprecation(reason=str(a.value.get("reason") or ""), since=a.value.get("since"),
                                          successor=a.value.get("replaced_by"))
        elif a.kind == "column":
            ccard = by_id.get(a.column_id if a.column_id is not None else -1)
            if ccard is None:
                orphaned.append(v)
            else:
                ccard.annotations[a.field] = v
        elif a.kind == "relationship":
            rel = RelationshipView.of(a)
            if rel is not None:
                rels.append(rel.model_copy(update={"status": st}))
        elif a.kind == "metric":
            met = MetricView.of(a)
            if met is not None:
                mets.append(met.model_copy(update={"status": st}))
        elif a.kind == "verified_query" and isinstance(a.value, dict):
            val = a.value
            vqs.append(VerifiedQuestion(key=a.key, question=str(val.get("question")), sql=str(val.get("sql")),
                                        verified_by=str(val.get("verified_by")),
                                        verified_at_vid=int(val.get("verified_at_vid") or 0), status=st))  # type: ignore[arg-type]
    ldc = stats.get("last_data_commit")
    if not (isinstance(ldc, dict) and "vid" in ldc) and tl and tl.data_commits:
        ldc = {"vid": tl.data_commits[-1][0], "time": tl.data_commits[-1][1]}
    parsed = lake.TableValue.from_raw(value)
    card = TableCard(
        name=name, snapshot=ctx.vid, snapshot_time=snap_time,
        schema_id=parsed.schema.schema_id, partition_by=parsed.partition_columns,
        columns=columns, annotations=table_anns, orphaned=orphaned,
        stats=TableStats(row_count=stats.get("row_count"), file_count=stats.get("file_count"),
                         size_bytes=stats.get("size_bytes")),
        freshness=Freshness(last_data_commit=DataCommit(vid=int(ldc["vid"]), time=float(ldc["time"]))
                            if isinstance(ldc, dict) and "vid" in ldc else None,
                            sla=table_anns["freshness_sla"].value if "freshness_sla" in table_anns else None, now=0.0,
                            completeness=completeness(ctx, name, anns)),
        deprecation=deprecation, relationships=rels, referenced_by=_incoming(ctx, name), metrics=mets,
        verified_questions=vqs, findings=findings,
        status=worst(f.status for f in findings),  # type: ignore[arg-type]
    )
    ctx.cache.cards.put(key, card)
    card_store.store(ctx.cat, ctx.vid, snap_time, name, card)
    return card


def describe(cat: CatalogAPI, table: str, snapshot: SnapshotRef = None, now: TimeArg = None) -> TableCard:
    """The table card of `table` at `snapshot`: schema, annotations with provenance and age, stats,
    freshness at `now` (default: the clock) with the completeness of its periods (partial and failed
    loads, from its date partitions and its declared load log; semantic.completeness), deprecation, relationships (declared on it, and in
    `referenced_by` those other tables declare to it), metrics, verified questions and the
    metadata-depth staleness findings."""
    t_now = resolve_now(now)
    ctx = Context(cat, cat.resolve(snapshot))
    base = _base(ctx, table)
    anns = ctx.annotations(table)
    extra = time_findings(ctx, table, anns, t_now)
    fr = base.freshness
    age = None if fr.last_data_commit is None else t_now - fr.last_data_commit.time
    fstatus = "unknown"
    if fr.sla is not None and age is not None:
        try:
            fstatus = "missed" if age > parse_duration(fr.sla) else "ok"
        except Exception:
            fstatus = "unknown"
    update: dict[str, Any] = {"freshness": fr.model_copy(update={"age_seconds": age, "now": t_now, "status": fstatus})}
    if extra:
        findings = base.findings + extra
        update["findings"] = findings
        update["status"] = worst(f.status for f in findings)
        status = _status_by_key(extra)
        views = dict(base.annotations)
        for field, v in views.items():
            if v.key in status:
                views[field] = v.model_copy(update={"status": worst([v.status, status[v.key]])})
        update["annotations"] = views
    if now is not None:  # one clock (issue 47): annotation ages judged at `now` too, as freshness is
        def aged(v: AnnotationView) -> AnnotationView:
            return v.model_copy(update={"age_seconds": max(0.0, t_now - v.written_at)})

        update["annotations"] = {f: aged(v) for f, v in update.get("annotations", base.annotations).items()}
        update["columns"] = [c.model_copy(update={"annotations": {f: aged(v) for f, v in c.annotations.items()}})
                             for c in base.columns]
        update["orphaned"] = [aged(v) for v in base.orphaned]
    # shallow: the card shares its parts with the cache (treat it as read-only; model_copy(deep=True) to edit)
    return base.model_copy(update=update)
