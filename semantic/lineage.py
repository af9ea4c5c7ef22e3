"""Lineage: which tables each table's last build read, and the findings that flow downstream.

    lin = sm.lineage(cat, "acme.mart.agg_daily_store_revenue", direction="upstream", depth=3, limit=50)
    lin["nodes"]   # [{table, depth, built: {vid, time}, job, source, inputs: [{table, vid}], findings}]
    lin["edges"]   # [{from, to, vid}]: `to`'s build read `from` at `vid`

Where it comes from: a table's value holds its last build's inputs (`catalog_core.lake.Lineage`:
{table: the vid it was read at}, the job, the build's commit), written in the build's own commit by
the Spark bridge (its reads through `Bridge.read` and declared inputs), by the dbt import (a model's
`depends_on`) or by `record_lineage` here. It is versioned with the table, so lineage at a snapshot
is the lineage of the builds that snapshot holds.

What flows downstream (`propagated`, called by `semantic.staleness` for each table with lineage):

- `upstream_changed`: an input has a finding about a change of its data or schema (restatement,
  rename, drop, type change, unit drift) at a vid after the vid this table's build read it, or is
  itself `upstream_changed` (it was built before a change further up, and this build read it): the table was built from data that has since changed, so its annotations
  (and its data) are suspect. One finding per upstream cause, with the same `cause` id as the
  upstream finding, so a review decides the cause once everywhere.
- `upstream_incomplete`: a period (a day or a month) this table holds was partial or failed in an
  input at the vid the build read it: this table is partial for that period too
  (`semantic.completeness` lists it with source `lineage`).

Invariants: bounded (`limit`, `cursor`, `truncated`, and `depth` <= MAX_DEPTH); an input that does not
exist at the snapshot is a node with `exists: false`, never an error; a cycle is visited once.
"""

from __future__ import annotations

import re
from typing import Any

from catalog_core import lake
from catalog_core.api import CatalogAPI, SnapshotRef
from catalog_core.errors import InvalidValueError
from catalog_core.model import TimeArg
from semantic._tables import require_table
from semantic.history import Context
from semantic.models import Evidence, Finding, Fix, PeriodLoad

__all__ = ["lineage", "propagated", "upstream_periods", "record_lineage", "inputs_of", "downstream_of",
           "DIRECTIONS", "MAX_DEPTH", "MAX_LIMIT", "CHANGE_REASONS"]

DIRECTIONS = ("upstream", "downstream")
MAX_DEPTH = 10
MAX_LIMIT = 200
# upstream findings that mean the data a downstream build read has changed since
CHANGE_REASONS = ("values_restated", "column_renamed", "column_dropped", "column_type_changed", "schema_changed",
                  "unit_drift", "grain_violated", "upstream_changed")
_CAUSE_VID = re.compile(r"@(\d+)")
_FINDINGS_PER_NODE = 5


def inputs_of(ctx: Context, name: str) -> lake.Lineage | None:
    """The lineage of `name`'s last build at the context's snapshot (None: none recorded)."""
    obj = ctx.table(name)
    return None if obj is None else lake.Lineage.from_raw(obj.value)


def downstream_of(ctx: Context, name: str) -> dict[str, int]:
    """{table: the vid its last build read `name` at} for every table whose lineage names `name`."""
    key = ("downstream", ctx.vid)
    index = ctx.cache.completeness.take(key)
    if index is None:
        index = {}
        for t, obj in ctx.tables().items():
            lin = lake.Lineage.from_raw(obj.value)
            for i, v in (lin.inputs if lin else {}).items():
                index.setdefault(i, {})[t] = v
        ctx.cache.completeness.put(key, index)
    return dict(index.get(name, {}))


def record_lineage(cat: CatalogAPI, table: str, inputs: dict[str, int | None], *, job: str | None = None,
                   source: str = "declared", author: str = "", message: str = "", time: TimeArg = None) -> int:
    """Record (in one commit, replacing the previous record) that `table`'s current build read
    `inputs` ({table: vid, None = the latest}); for builds made outside the Spark bridge. Returns the vid."""
    with cat.transaction(author=author, message=message or f"lineage of {table}", time=time) as txn:
        tpath = lake.table_path(table)
        if txn.get(tpath) is None:
            raise InvalidValueError(f"table {table!r} does not exist; record lineage on a table that was built",
                                    table=table)
        now = txn.read_vid
        for delta in lake.lineage_deltas({n: now if v is None else v for n, v in inputs.items()}, job=job,
                                         source=source):
            txn.merge(tpath, delta)
    assert txn.vid is not None
    return txn.vid


# ------------------------------------------------------------------ what flows downstream
def _change_vid(f: Finding) -> int:
    m = _CAUSE_VID.search(f.cause or "")
    if f.reason == "upstream_changed":
        return int(f.evidence.values.get("change_vid") or max(f.evidence.vids, default=0))
    return int(m.group(1)) if m else max(f.evidence.vids, default=0)


def propagated(ctx: Context, name: str, depth: str = "metadata", _seen: frozenset[str] = frozenset()) -> list[Finding]:
    """The `upstream_changed` and `upstream_incomplete` findings of `name` at the context's snapshot
    (see the module docstring). Upstream findings are read at the metadata depth (clock-independent),
    so the answer is the same at both depths and cached with the table's findings."""
    from semantic.staleness import merge_by_cause, table_findings

    lin = inputs_of(ctx, name)
    if lin is None or not lin.inputs or name in _seen:
        return []
    seen = _seen | {name}
    out: list[Finding] = []
    for up, read_vid in sorted(lin.inputs.items()):
        if ctx.table(up) is None or up in seen:
            continue
        ups = merge_by_cause(table_findings(ctx, up, "metadata", _seen=seen))
        for f in ups:
            if f.reason not in CHANGE_REASONS:
                continue
            change = _change_vid(f)
            # an input that is itself suspect (built before a change further up) passes that on
            # whenever this build read it; a change of the input's own is after the read or not at all
            if change <= read_vid and f.reason != "upstream_changed":
                continue
            root = f.evidence.values.get("upstream") if f.reason == "upstream_changed" else up
            what = f.message.split(";")[0][:160]
            if f.reason == "upstream_changed":
                msg = (f"built from {up} as of vid {read_vid}, which was itself built before a change in {root} at "
                       f"vid {change}: this table's data and its annotations may not reflect it")
            else:
                msg = (f"built from {up} as of vid {read_vid}; {up} changed after, at vid {change} "
                       f"({f.reason}: {what}): this table's data and its annotations may not reflect it")
            out.append(Finding(
                target=name, annotation=None, status="suspect", reason="upstream_changed",
                message=msg,
                evidence=Evidence(vids=[read_vid, change], times=[ctx.commit_time(change)],
                                  values={"upstream": up, "upstream_reason": str(f.reason), "upstream_finding": what,
                                          "read_vid": read_vid, "change_vid": change, "origin": root}),
                suggestion=f"rebuild {name} from {up} (vid {change} or later), then review its annotations",
                fixes=[Fix(action="investigate", params={"table": up, "vid": change})],
                cause=f.cause or f"upstream:{up}@{change}"))
    for period, (up, read_vid, pl) in sorted(upstream_periods(ctx, name).items(), reverse=True)[:_FINDINGS_PER_NODE]:
        out.append(Finding(
            target=name, annotation=None, status="suspect", reason="upstream_incomplete",
            message=(f"period {period} is {pl.status} in {up} as of vid {read_vid}, which this table's build read: "
                     f"this table is {pl.status} for {period} too"),
            evidence=Evidence(vids=[read_vid], values={"upstream": up, "period": period, "read_vid": read_vid,
                                                       "upstream_status": pl.status, "note": pl.note}),
            suggestion=f"rebuild {name} for {period} once {up} is complete for it",
            fixes=[Fix(action="investigate", params={"table": up, "period": period})],
            cause=f"incomplete:{up}@{read_vid}:{period}"))
    return out


def _own_periods(ctx: Context, name: str) -> set[str]:
    """The day / month periods `name` holds: its first-level date partitions."""
    obj = ctx.table(name)
    if obj is None or not lake.partition_columns(obj.value):
        return set()
    key = ("own_periods", name, obj.vid)
    got = ctx.cache.completeness.take(key)
    if got is None:
        from semantic.completeness import period_end

        got = set()
        for p in ctx.cat.query(lake.exact_query(obj.path, '[obj_type = "partition"]'), vid=ctx.vid):
            _col, raw = lake.parse_partition_id(p.path.rsplit("/", 1)[-1])
            if raw is not None and period_end(raw) is not None:
                got.add(raw)
        ctx.cache.completeness.put(key, got)
    return set(got)


def upstream_periods(ctx: Context, name: str) -> dict[str, tuple[str, int, PeriodLoad]]:
    """{period: (input, the vid the build read it at, that input's incomplete period)} for every
    period `name` holds that an input had partial or failed at the vid the build read it."""
    from semantic.completeness import completeness

    lin = inputs_of(ctx, name)
    if lin is None or not lin.inputs:
        return {}
    mine = _own_periods(ctx, name)
    if not mine:
        return {}
    out: dict[str, tuple[str, int, PeriodLoad]] = {}
    for up, read_vid in sorted(lin.inputs.items()):
        if read_vid > ctx.vid:
            continue
        at = Context(ctx.cat, read_vid)
        if at.table(up) is None:
            continue
        c = completeness(at, up, at.annotations(up), lineage=False)
        for pl in c.incomplete:
            if pl.period in mine and pl.period not in out:
                out[pl.period] = (up, read_vid, pl)
    return out


# ------------------------------------------------------------------ the graph
def _cursor(cursor: str | None) -> int:
    if cursor is None or cursor == "":
        return 0
    if not isinstance(cursor, str) or not cursor.startswith("l") or not cursor[1:].isdigit():
        raise InvalidValueError(f"cursor {cursor!r} is not a lineage cursor; pass the next_cursor of the previous "
                                "answer, or none for the first page")
    return int(cursor[1:])


def lineage(reader: CatalogAPI, table: str, direction: str = "upstream", depth: int = 3, limit: int = 50,
            cursor: str | None = None, *, snapshot: SnapshotRef = None, findings: bool = True) -> dict[str, Any]:
    """The lineage graph of `table` at `snapshot`, breadth first to `depth` hops `direction`
    (`upstream`: what its build read, and what those read; `downstream`: what was built from it).

    Returns {table, direction, depth, snapshot: {vid, time}, nodes, edges, total, truncated,
    next_cursor}. Each node: `table`, `depth` (hops from `table`), `exists`, `built` ({vid, time}
    of the build that recorded its lineage, or None), `job`, `source`, `inputs` ([{table, vid}]: the
    vids its build read) and, with `findings`, the findings that flow into it (`upstream_changed`,
    `upstream_incomplete`: reason, message, upstream, vids; at most 5). Edges: {from, to, vid}: `to`'s
    build read `from` at `vid`. Nodes are paged (`limit` <= 200, `cursor`); the edges listed are
    those whose both ends are on the page or before it."""
    if direction not in DIRECTIONS:
        raise InvalidValueError(f"direction must be 'upstream' or 'downstream', got {direction!r}")
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_DEPTH:
        raise InvalidValueError(f"depth must be an integer from 1 to {MAX_DEPTH}, got {depth!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidValueError(f"limit must be an integer from 1 to {MAX_LIMIT}, got {limit!r}")
    start = _cursor(cursor)
    vid = reader.resolve(snapshot)
    ctx = Context(reader, vid)
    require_table(reader, table, vid)
    order: list[tuple[str, int]] = [(table, 0)]
    seen = {table}
    edges: list[dict[str, Any]] = []
    frontier = [table]
    for d in range(1, depth + 1):
        nxt: list[str] = []
        for n in frontier:
            if direction == "upstream":
                lin = inputs_of(ctx, n)
                pairs = sorted((lin.inputs if lin else {}).items())
                edges += [{"from": u, "to": n, "vid": v} for u, v in pairs]
            else:
                pairs = sorted(downstream_of(ctx, n).items())
                edges += [{"from": n, "to": t, "vid": v} for t, v in pairs]
            for other, _v in pairs:
                if other not in seen:
                    seen.add(other)
                    order.append((other, d))
                    nxt.append(other)
        frontier = nxt
        if not frontier:
            break
    page = order[start:start + limit]
    shown = {n for n, _ in order[:start + limit]}
    nodes = [_node(ctx, n, d, findings) for n, d in page]
    more = start + limit < len(order)
    c = ctx.commit(vid)
    return {"table": table, "direction": direction, "depth": depth,
            "snapshot": {"vid": vid, "time": c.time if c is not None else None},
            "nodes": nodes, "edges": [e for e in edges if e["from"] in shown and e["to"] in shown],
            "total": len(order), "truncated": more, "next_cursor": f"l{start + limit}" if more else None}


def _node(ctx: Context, name: str, depth: int, findings: bool) -> dict[str, Any]:
    obj = ctx.table(name)
    lin = None if obj is None else lake.Lineage.from_raw(obj.value)
    node: dict[str, Any] = {"table": name, "depth": depth, "exists": obj is not None,
                            "built": None if lin is None or lin.built_vid is None
                            else {"vid": lin.built_vid, "time": lin.built_time},
                            "job": None if lin is None else lin.job, "source": None if lin is None else lin.source,
                            "inputs": [] if lin is None else [{"table": t, "vid": v} for t, v in sorted(lin.inputs.items())]}
    if findings:
        fs = propagated(ctx, name) if obj is not None else []
        node["findings"] = [{"reason": str(f.reason), "message": f.message, "upstream": f.evidence.values.get("upstream"),
                             "vids": list(f.evidence.vids), "cause": f.cause} for f in fs[:_FINDINGS_PER_NODE]]
        node["findings_truncated"] = len(fs) > _FINDINGS_PER_NODE
    return node
