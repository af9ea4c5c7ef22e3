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
  drop, type change, unit drift; not a rename, which changes no data) at a vid after the vid this
  table's build read it, whose commit removed or rewrote rows the build read (new rows appended, or a
  change of schema alone, leave the data it was built from as it was), or is itself `upstream_changed`
  (it was built before a change further up, and this build read it): the table was built from data
  that has since changed, so its annotations (and its data) are suspect. One finding per upstream
  cause, with the same `cause` id as the upstream finding, so a review decides the cause once everywhere.
- `upstream_incomplete`: a period (a day or a month) this table holds was partial or failed in an
  input at the vid the build that wrote that period read it: this table is partial for that period
  too (`semantic.completeness` lists it with source `lineage`).

Invariants: bounded (`limit`, `cursor`, `truncated`, and `depth` <= MAX_DEPTH); an input that does not
exist at the snapshot is a node with `exists: false`, never an error; a cycle is visited once.
"""

from __future__ import annotations

from typing import Any

from catalog_core import lake
from catalog_core.api import CatalogAPI, SnapshotRef
from catalog_core.errors import InvalidValueError
from catalog_core.model import TimeArg
from semantic._tables import require_table
from semantic.completeness import upstream_periods
from semantic.history import Context
from semantic.staleness import CHANGE_REASONS, propagated

__all__ = ["lineage", "propagated", "WORDING", "upstream_periods", "record_lineage", "inputs_of", "downstream_of",
           "DIRECTIONS", "MAX_DEPTH", "MAX_LIMIT", "CHANGE_REASONS"]

DIRECTIONS = ("upstream", "downstream")
MAX_DEPTH = 10
MAX_LIMIT = 200
# the two reasons in words for people (the review inbox, the page)
WORDING = {"upstream_changed": "built from a table that changed after the build read it",
           "upstream_incomplete": "built from a day that was not fully loaded"}
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
