"""Correlated scans (paper §5.4): one node per step; each node range-scans the children of
every context object produced by the node before it, with obj_id seek bounds, and keeps the
children its predicate accepts. Irrelevant subtrees are never read."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from catalog_core._engine.storage import Store
from catalog_core.codec import unpack_leaf
from catalog_core.model import Obj, QueryStats
from catalog_core.query.ast import Query, Step
from catalog_core.query.bounds import id_ranges
from catalog_core.query.evaluate import compile_expr

__all__ = ["execute", "ScanHook"]

# Called before each level scan with (parent path, step expression, id ranges, whether the
# matched objects' values are returned, i.e. the last step). Transactions record the scan for
# validation (or lock it, under mgl); a returned int overrides the read vid.
ScanHook = Callable[[str, Any, list[Any], bool], "int | None"]


def _child_path(parent: str, obj_id: str) -> str:
    return "/" + obj_id if parent == "/" else parent + "/" + obj_id


def _node(store: Store, contexts: Iterator[str], step: Step, vid: int, last: bool,
          hook: ScanHook | None, counter: list[Any], tally: dict[str, Any]) -> Iterator[Any]:
    pred = compile_expr(step.expr)
    ranges = id_ranges(step.expr)
    for parent in contexts:
        read_vid = vid
        if hook is not None:
            override = hook(parent, step.expr, ranges, last)
            if override is not None:
                read_vid = override
        if not ranges:
            continue
        # Leaf values are shared with the decoded-leaf cache: what a caller gets is decoded anew.
        for obj_id, value, wvid, leaf, _key, packed in store.scan_children(parent, read_vid, ranges, counter,
                                                                           shared=True):
            if not pred(obj_id, value):
                continue
            tally["matched"] += 1
            if last:
                yield Obj(_child_path(parent, obj_id), unpack_leaf(packed) if leaf and packed else value, wvid, leaf)
            elif not leaf:  # leaves have no children: scanning under them is a wasted seek
                yield _child_path(parent, obj_id)


def execute(store: Store, query: Query, vid: int, hook: ScanHook | None = None,
            stats: QueryStats | None = None) -> Iterator[Obj]:
    """Stream the objects matched by the last step of `query`, read at `vid`."""
    stats = stats if stats is not None else QueryStats()
    counter = [0, 0]
    tallies = [{"matched": 0} for _ in query.steps]
    stream: Iterator[Any] = iter(("/",))
    for i, step in enumerate(query.steps):
        stream = _node(store, stream, step, vid, i == len(query.steps) - 1, hook, counter, tallies[i])
    try:
        for obj in stream:
            yield obj
    finally:
        stats.scanned, stats.seeks = counter
        stats.matched = tallies[-1]["matched"]
        stats.per_step = [{"step": i + 1, "matched": t["matched"]} for i, t in enumerate(tallies)]
