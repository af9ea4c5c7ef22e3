"""Writes that log nothing (issue 45): an Iceberg REST client or an engine transaction commits files
with no write log (the Spark bridge's `meta.writes`), so what the commit did is read from the files
the table holds (`values_units._derived_write`): every file written by the commit is a rewrite in
full, every earlier file kept is an append. Every miss of held-out seeds 1801-1803 at data depth but
one was a trap written through Iceberg REST. Small lakes of their own, never a trap seed; each with its
control."""

from __future__ import annotations

import semantic as sm
from eval.fixtures.lakes import LakeBuilder
from semantic.models import Fix
from semantic.staleness.core import get_table
from semantic.staleness.values_units import full_overwrites, rewrites

S, LOG = "acme.core.fct_sales", "acme.ops.load_log"


def _sales(elk: LakeBuilder) -> dict[str, list]:
    """A fact appended daily through the bridge (logged), and a verified query summing its measure."""
    cat = elk.cat
    elk.table(S, [("d", "date"), ("id", "bigint"), ("net_paid", "double")], partition_by=["d"], at=0)
    rows: dict[str, list] = {"d": [], "id": [], "net_paid": []}
    for day in range(1, 4):
        part = {"d": [f"2024-11-1{day}"] * 4, "id": [10 * day + i for i in range(4)],
                "net_paid": [12.5 * (i + day) for i in range(4)]}
        elk.append(S, part, at=day)
        for k in rows:
            rows[k] += part[k]
    sm.annotate(cat, S, {"grain": {"text": "one row per sale", "keys": ["id"]}}, author="a", time=elk.day(3.2))
    sm.verify_query(cat, "net paid", f"SELECT sum(net_paid) FROM {S}", author="a", time=elk.day(3.5))
    return rows


def _changed(cat, now):
    return [f for f in sm.staleness(cat, S, depth="data", now=now, merge=False) if f.reason == "verified_query_changed"]


def test_a_fact_restated_whole_by_a_writer_that_logs_nothing_changes_the_verified_answer(elk):
    """The fact rewritten in full with the same rows and keys, its measure x 1.03-1.10 per row (a new
    definition), in a commit with no write log (failed before: only the bridge's log said "overwrite",
    so the rewrite was never read as one; held-out seeds 1801 and 1803, TPC-DS catalog_sales and
    store_sales rewritten through Iceberg REST). The commit is a rewrite in full by its files, the
    table's appends before it by theirs."""
    cat = elk.cat
    rows = _sales(elk)
    v = elk.overwrite(S, {**rows, "net_paid": [round(x * (1.03 + 0.01 * (i % 7)), 2)
                                               for i, x in enumerate(rows["net_paid"])]}, at=4, log=False)
    t = get_table(_ctx(cat), S, {})
    assert [x for x, _ in full_overwrites(t)] == [v] and [x for x, _ in rewrites(t)] == [v]
    got = _changed(cat, elk.day(5))
    assert len(got) == 1 and got[0].status == "suspect" and [x.action for x in got[0].fixes] == ["reverify"], got


def test_unlogged_appends_and_an_unchanged_rewrite_are_no_restatement(elk):
    """Controls: a day appended with no write log (every earlier file kept: an append, not a rewrite),
    then the same rows rewritten unchanged with no log (a compaction by another writer): the answer
    moved only with the rows added, nothing is flagged."""
    cat = elk.cat
    rows = _sales(elk)
    part = {"d": ["2024-11-14"] * 2, "id": [40, 41], "net_paid": [20.0, 30.0]}
    elk.append(S, part, at=4, log=False)
    t = get_table(_ctx(cat), S, {})
    assert full_overwrites(t) == []
    elk.overwrite(S, {k: rows[k] + part[k] for k in rows}, at=5, log=False)
    assert _changed(cat, elk.day(6)) == []


def _ctx(cat):
    from semantic.history import Context

    return Context(cat, cat.resolve(None))


def _load_log(elk: LakeBuilder) -> None:
    """A load log appended through the bridge, an enum of its status and a description listing them,
    written while only 'success' had occurred; 'failed' and 'partial' come later."""
    cat = elk.cat
    elk.table(LOG, [("id", "bigint"), ("status", "string")], at=0)
    elk.append(LOG, {"id": [1, 2, 3], "status": ["success"] * 3}, at=1)
    sm.annotate(cat, LOG, {"grain": {"text": "one row per load attempt", "keys": ["id"]},
                           "description": "One row per load attempt: status success, partial or failed."},
                author="a", time=elk.day(1.2))
    sm.annotate(cat, LOG, {"enum": ["success", "partial", "failed"]}, column="status", author="a",
                time=elk.day(1.3))
    elk.append(LOG, {"id": [4, 5, 6], "status": ["failed", "partial", "success"]}, at=2)
    elk.append(LOG, {"id": [7, 8], "status": ["failed", "success"]}, at=3)


def test_a_status_that_came_after_the_enum_merged_into_another_by_an_unlogged_rewrite(elk):
    """'failed' first occurred after the enum was written, then the log was rewritten with no write log,
    'failed' merged into 'partial' (failed before, at data depth: the values gone were read against the
    enum's basis only, where 'failed' never occurred, and the rewrite was no rewrite without a log;
    held-out seed 1801, Acme etl_load_log through Iceberg REST). The enum gets the merge's map read
    from the snapshot before the rewrite, and the description naming 'failed' is restated."""
    cat = elk.cat
    _load_log(elk)
    elk.overwrite(LOG, {"id": list(range(1, 9)), "status": ["success"] * 3 + ["partial", "partial", "success",
                                                                              "partial", "success"]},
                  at=4, log=False)
    got = {(f.annotation, f.reason): f for f in sm.staleness(cat, LOG, depth="data", now=elk.day(5), merge=False)}
    f = got[("column.2.enum", "enum_violated")]
    assert f.status == "stale" and f.evidence.values["gone"] == ["failed"], f
    assert f.fixes == [Fix(action="value_map", params={"column": "status", "map": {"failed": "partial"},
                                                        "values": ["partial", "success"]})]
    d = got[("table.description", "values_restated")]
    assert d.status == "stale" and [(x.action, x.params["map"]) for x in d.fixes] == [
        ("value_map", {"failed": "partial"})], d


def test_listed_values_that_never_occurred_or_still_occur_are_not_gone(elk):
    """Controls: the same log rewritten unchanged with no write log (every status still there), and an
    enum value that never occurred at all ('skipped'): nothing is gone, nothing is flagged."""
    cat = elk.cat
    _load_log(elk)
    sm.annotate(cat, LOG, {"enum": ["success", "partial", "failed", "skipped"]}, column="status", author="a",
                time=elk.day(3.5))
    elk.overwrite(LOG, {"id": list(range(1, 9)), "status": ["success"] * 3 + ["failed", "partial", "success",
                                                                              "failed", "success"]},
                  at=4, log=False)
    assert sm.staleness(cat, LOG, depth="data", now=elk.day(5), merge=False) == []

