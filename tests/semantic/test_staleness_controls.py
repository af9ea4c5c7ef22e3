"""Routine controls (issue 45): a change that moves no annotation's truth raises no finding. A
compaction or an identical re-run rewrites a table's files without changing its rows: a verified
query that reads it keeps its answer across the rewrite, so the new rows of a later routine load
(the answer a growing table's query is for) never make it `verified_query_changed`. A small lake of
its own."""

from __future__ import annotations

import semantic as sm
from eval.fixtures.lakes import LakeBuilder

T = "acme.core.t"


def _daily(elk: LakeBuilder) -> None:
    """An unpartitioned table appended daily (a file per load) and two verified queries over it."""
    cat = elk.cat
    elk.table(T, [("d", "date"), ("id", "bigint"), ("kind", "string")], at=0)
    for day in range(1, 5):
        elk.append(T, {"d": [f"2024-11-1{day}"] * 2, "id": [2 * day, 2 * day + 1], "kind": ["a", "b"]}, at=day)
    sm.verify_query(cat, "rows per kind", "SELECT kind, count(*) FROM acme.core.t GROUP BY kind ORDER BY kind",
                    author="a", time=elk.day(4.5))
    sm.verify_query(cat, "ids", "SELECT count(id) FROM acme.core.t", author="a", time=elk.day(4.6))


def _all_rows(elk: LakeBuilder, days: range) -> dict[str, list]:
    return {"d": [f"2024-11-1{day}" for day in days for _ in range(2)],
            "id": [i for day in days for i in (2 * day, 2 * day + 1)], "kind": ["a", "b"] * len(days)}


def _changed(cat, now, depth):
    return {f.annotation: f for f in sm.staleness(cat, T, depth=depth, now=now, merge=False)
            if f.reason == "verified_query_changed"}


def test_a_compaction_then_a_routine_load_does_not_change_a_verified_answer(elk):
    """The four files compacted into one (the same rows, an overwrite in the write log), then a
    routine append: the answer differs from the verified one only by the new rows, and running the
    query either side of the compaction gives the same answer: no `verified_query_changed` at
    either depth (failed before: flagged at data depth, "since acme.core.t was rewritten")."""
    cat = elk.cat
    _daily(elk)
    elk.overwrite(T, _all_rows(elk, range(1, 5)), at=5)           # the compaction
    elk.append(T, {"d": ["2024-11-15"] * 2, "id": [10, 11], "kind": ["a", "b"]}, at=6)
    for depth in ("metadata", "data"):
        assert _changed(cat, elk.day(6), depth) == {}, depth


def test_an_identical_rerun_between_loads_does_not_change_a_verified_answer(elk):
    """A load re-run with identical rows (the table reloaded whole), loads before and after it:
    the same answer across the re-run, so nothing (failed before: flagged at data depth)."""
    cat = elk.cat
    _daily(elk)
    elk.append(T, {"d": ["2024-11-15"] * 2, "id": [10, 11], "kind": ["a", "b"]}, at=5)
    elk.overwrite(T, _all_rows(elk, range(1, 6)), at=5.5)         # the re-run
    elk.append(T, {"d": ["2024-11-16"] * 2, "id": [12, 13], "kind": ["a", "b"]}, at=6)
    assert _changed(cat, elk.day(6), "data") == {}


def test_a_rewrite_that_moves_the_answer_is_still_flagged(elk):
    """The counterpart: a rewrite that drops rows (a restatement) moves the answer across it, and the
    routine load after it does not hide that: flagged at data depth, re-verify."""
    cat = elk.cat
    _daily(elk)
    rows = _all_rows(elk, range(1, 5))
    elk.overwrite(T, {k: v[4:] for k, v in rows.items()}, at=5)   # days 1 and 2 restated away
    elk.append(T, {"d": ["2024-11-15"] * 2, "id": [10, 11], "kind": ["a", "b"]}, at=6)
    got = _changed(cat, elk.day(6), "data")
    assert len(got) == 2, got
    assert all([x.action for x in f.fixes] == ["reverify"] for f in got.values())
