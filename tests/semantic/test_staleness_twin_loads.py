"""grain (issue 45): a load appended twice (the same rows again) leaves two live files whose statistics
are the same in every column: by the metadata alone the grain's keys repeat. grain_violated, suspect, no
fix (which copy to remove is for a person); the data depth counts the repeated keys."""

from __future__ import annotations

import semantic as sm

T = "acme.core.fct_events"


def _rows(day, ids):  # sparse keys: the key's range alone never shows them repeat
    return {"d": [f"2024-11-0{day}"] * len(ids), "event_id": [i * 1000 + i for i in ids], "amount": [i * 7 for i in ids]}


def _grain_flags(cat, depth, now):
    return sorted((f.annotation, f.reason, f.status, tuple(f.fixes)) for f in
                  sm.staleness(cat, T, depth=depth, now=now, merge=False) if f.reason == "grain_violated")


def test_a_day_appended_twice_is_seen_in_the_files_statistics_and_controls(elk):
    cat = elk.cat
    elk.table(T, [("d", "date"), ("event_id", "bigint"), ("amount", "bigint")], partition_by=["d"], at=0)
    elk.append(T, _rows(1, [1, 2, 3]), at=1)
    sm.annotate(cat, T, {"description": "Events, one row per event.",
                         "grain": {"text": "one row per event", "keys": ["event_id"]}}, author="a", time=elk.day(1.5))
    elk.append(T, _rows(2, [4, 5, 6]), at=2)
    elk.append(T, _rows(3, [7, 8, 9]), at=3)
    elk.overwrite(T, {k: _rows(1, [1, 2, 3])[k] + _rows(2, [4, 5, 6])[k] + _rows(3, [7, 8, 9])[k]
                      for k in ("d", "event_id", "amount")}, at=3.5)  # control: the same rows written again whole
    elk.append(T, _rows(4, [10, 11, 12]), at=4)
    assert _grain_flags(cat, "metadata", elk.day(4)) == []  # controls: new days, a rebuild
    elk.append(T, _rows(4, [10, 11, 12]), at=5)  # the latest day loaded again
    assert _grain_flags(cat, "metadata", elk.day(5)) == [("table.description", "grain_violated", "suspect", ()),
                                                         ("table.grain", "grain_violated", "suspect", ())]
    assert ("table.grain", "grain_violated", "stale") in {x[:3] for x in _grain_flags(cat, "data", elk.day(5))}


def test_twin_files_compare_string_bounds_up_to_a_writers_truncation():
    """Two writers of one table record its string bounds differently (one keeps 16 characters): the
    same rows still compare the same; other rows (another bound, another null count) do not."""
    from semantic.staleness.grain import _same_stats

    full = (15, {"t": {"min": "core.fct_inventory_daily", "max": "raw.web_orders", "null_count": 0},
                 "n": {"min": 1, "max": 463, "null_count": 0}})
    cut = (15, {"t": {"min": "core.fct_invento", "max": "raw.web_orders", "null_count": 0},
                "n": {"min": 1, "max": 463, "null_count": 0}})
    assert _same_stats(full, cut) and _same_stats(cut, full)
    assert not _same_stats(full, (15, {**cut[1], "n": {"min": 1, "max": 464, "null_count": 0}}))
    assert not _same_stats(full, (15, {**cut[1], "t": {"min": "core.fct_orders", "max": "raw.web_orders",
                                                       "null_count": 0}}))
    assert not _same_stats(full, (16, cut[1]))


def test_two_partitions_with_alike_statistics_are_no_twin_load(elk):
    """Control: a day whose rows look like another day's in every column the files' statistics record (a
    small aggregate with the same figures on two days; a writer may record no statistics for the
    partition's own column, only its directory) is no load appended twice: files of two partitions hold
    different rows."""
    from semantic.staleness.grain import _partition_of

    assert _partition_of("LAKE/acme/mart/agg/date_local=2025-03-09/f1.parquet") == "date_local=2025-03-09"
    assert _partition_of("LAKE/acme/mart/agg/date_local=2025-03-10/f2.parquet") == "date_local=2025-03-10"
    assert _partition_of("LAKE/acme/ops/log/data/00000-0-1.parquet") == ""
    cat = elk.cat
    elk.table(T, [("d", "date"), ("event_id", "bigint"), ("amount", "bigint")], partition_by=["d"], at=0)
    elk.append(T, _rows(1, [1, 2, 3]), at=1)
    sm.annotate(cat, T, {"grain": {"text": "one row per event and day", "keys": ["event_id", "d"]}}, author="a",
                time=elk.day(1.5))
    elk.append(T, _rows(2, [1, 2, 3]), at=2)
    assert _grain_flags(cat, "metadata", elk.day(2)) == []


def test_a_day_loaded_again_under_a_later_date_is_seen_in_the_files_statistics_and_controls(elk):
    """grain (issue 45): a day's rows appended again with only their dates moved (a re-run that re-dated
    the last day: every other column's min, max and null count, and the row count, those of a live file
    an earlier load wrote; each date / time column's bounds moved by one interval). Keys that name no
    moved column repeat: grain_violated, suspect, no fix, at metadata depth (failed before: nothing, the
    date's bounds differ so the files were no twins); the data depth counts the repeated keys. Controls:
    a routine load of new keys, and a grain whose keys include the moved date (the copy holds new keys)."""
    cat = elk.cat
    elk.table(T, [("d", "date"), ("event_id", "bigint"), ("amount", "bigint")], at=0)
    elk.append(T, _rows(1, [1, 2, 3]), at=1)
    sm.annotate(cat, T, {"grain": {"text": "one row per event", "keys": ["event_id"]}}, author="a",
                time=elk.day(1.5))
    elk.append(T, _rows(2, [4, 5, 6]), at=2)
    assert _grain_flags(cat, "metadata", elk.day(2)) == []  # control: a new day of new keys
    elk.append(T, {**_rows(2, [4, 5, 6]), "d": ["2024-11-05"] * 3}, at=5)  # the last day again, re-dated
    assert _grain_flags(cat, "metadata", elk.day(5)) == [("table.grain", "grain_violated", "suspect", ())]
    f = next(x for x in sm.staleness(cat, T, now=elk.day(5), merge=False) if x.annotation == "table.grain")
    assert "d" in f.evidence.values["moved"] and "re-dated" in f.message
    assert ("table.grain", "grain_violated", "stale") in {x[:3] for x in _grain_flags(cat, "data", elk.day(5))}


def test_a_re_dated_copy_under_a_grain_keyed_by_the_date_is_no_repeat(elk):
    """Control: the grain's keys include the date the copy moved, so the copy's keys are new."""
    cat = elk.cat
    elk.table(T, [("d", "date"), ("event_id", "bigint"), ("amount", "bigint")], at=0)
    elk.append(T, _rows(1, [1, 2, 3]), at=1)
    sm.annotate(cat, T, {"grain": {"text": "one row per event and day", "keys": ["event_id", "d"]}}, author="a",
                time=elk.day(1.5))
    elk.append(T, _rows(2, [4, 5, 6]), at=2)
    elk.append(T, {**_rows(2, [4, 5, 6]), "d": ["2024-11-05"] * 3}, at=5)
    assert _grain_flags(cat, "metadata", elk.day(5)) == []


def test_a_partitioned_day_loaded_again_under_a_later_date_partition(elk):
    """The same, partitioned by the date: the writer records no statistics for the partition's column,
    only its directory; two partitions whose values are both times differ by that time alone (a moved
    date), so the copy is seen too. Control: from partitions by a value that is no time (a region) the
    statistics claim nothing (the files hold other rows; whether their keys meet is for the data depth)."""
    cat = elk.cat
    elk.table(T, [("d", "date"), ("event_id", "bigint"), ("amount", "bigint")], partition_by=["d"], at=0)
    elk.append(T, _rows(1, [1, 2, 3]), at=1)
    sm.annotate(cat, T, {"grain": {"text": "one row per event", "keys": ["event_id"]}}, author="a",
                time=elk.day(1.5))
    elk.append(T, _rows(2, [4, 5, 6]), at=2)
    assert _grain_flags(cat, "metadata", elk.day(2)) == []
    elk.append(T, {**_rows(2, [4, 5, 6]), "d": ["2024-11-05"] * 3}, at=5)
    assert _grain_flags(cat, "metadata", elk.day(5)) == [("table.grain", "grain_violated", "suspect", ())]
    R = "acme.core.fct_regions"
    elk.table(R, [("region", "string"), ("event_id", "bigint"), ("amount", "bigint")], partition_by=["region"], at=6)
    elk.append(R, {"region": ["e"] * 3, "event_id": [1001, 2002, 3003], "amount": [7, 14, 21]}, at=6.2)
    sm.annotate(cat, R, {"grain": {"text": "one row per event", "keys": ["event_id"]}}, author="a",
                time=elk.day(6.5))
    elk.append(R, {"region": ["w"] * 3, "event_id": [1001, 2002, 3003], "amount": [7, 14, 21]}, at=7)
    assert [f for f in sm.staleness(cat, R, now=elk.day(7), merge=False) if f.reason == "grain_violated"] == []


def test_a_re_dated_copy_proves_nothing_for_keys_its_statistics_cannot_show(elk):
    """Controls: string keys whose bounds may be a writer's truncation (a next day's keys suffixed, cut
    to the same prefix, record the same bounds), and a grain with no key (rows as received): a load
    whose statistics match an earlier one's but for its dates is then no evidence the keys repeat."""
    cat = elk.cat
    long = ["a0b1c2d3e4f5a6b7", "b0b1c2d3e4f5a6b7", "f0b1c2d3e4f5a6b7"]
    elk.table(T, [("d", "date"), ("sid", "string"), ("amount", "bigint")], at=0)
    elk.append(T, {"d": ["2024-11-01"] * 3, "sid": long, "amount": [1, 2, 3]}, at=1)
    sm.annotate(cat, T, {"grain": {"text": "one row per session", "keys": ["sid"]}}, author="a", time=elk.day(1.5))
    elk.append(T, {"d": ["2024-11-02"] * 3, "sid": long, "amount": [1, 2, 3]}, at=2)
    assert _grain_flags(cat, "metadata", elk.day(2)) == []
    R = "acme.raw.pos_lines"
    elk.table(R, [("d", "date"), ("txn", "bigint"), ("amount", "bigint")], at=3)
    elk.append(R, {"d": ["2024-11-03"], "txn": [5], "amount": [9]}, at=3.2)
    sm.annotate(cat, R, {"grain": {"text": "one row per POS line as received", "keys": []}}, author="a",
                time=elk.day(3.5))
    elk.append(R, {"d": ["2024-11-04"], "txn": [5], "amount": [9]}, at=4)
    assert [f for f in sm.staleness(cat, R, now=elk.day(4), merge=False) if f.reason == "grain_violated"] == []
