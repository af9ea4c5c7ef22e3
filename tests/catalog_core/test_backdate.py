"""Backdated commits (`cat.transaction(time=...)`): accepted, refused, resolved by time, listed
by time range; embedded and over HTTP."""

from datetime import datetime, timezone

import pytest

from catalog_core import errors


def ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_backdated_history_is_resolved_and_listed_by_its_times(catalog):
    days = ["2025-03-01", "2025-03-02", "2025-03-03"]
    with catalog.transaction(author="import", time="2025-02-28T23:00:00Z") as t:
        t.add("/acme", {"obj_type": "catalog", "n": 0})
    vids = []
    for i, day in enumerate(days, start=1):
        with catalog.transaction(author="import", message=day, time=f"{day}T02:00:00Z") as t:
            t.update("/acme", {"obj_type": "catalog", "n": i})
        vids.append(t.vid)
    times = [c.time for c in catalog.commits(since=1)]  # vid 0 is the catalog's creation
    assert times == [ts("2025-02-28T23:00:00Z")] + [ts(f"{d}T02:00:00Z") for d in days]
    # the last commit at or before a time
    assert catalog.resolve("2025-03-02T12:00:00Z") == vids[1]
    assert catalog.resolve("2025-03-02T02:00:00Z") == vids[1]
    assert catalog.resolve("2025-03-02T01:59:59Z") == vids[0]
    assert catalog.get("/acme", vid="2025-03-02T12:00:00Z").value["n"] == 2
    assert [c.vid for c in catalog.commits(since="2025-03-01T12:00:00Z", until="2025-03-03T00:00:00Z")] == [vids[1]]
    assert catalog.resolve("2025-02-01T00:00:00Z") == 0  # before the history: the empty catalog


@pytest.mark.parametrize("when", [1_700_000_000.0, datetime(2023, 11, 14, 22, 13, 20, tzinfo=timezone.utc),
                                  "2023-11-14T22:13:20+00:00"])
def test_a_time_may_be_a_number_a_datetime_or_iso_text(catalog, when):
    with catalog.transaction(time=when) as t:
        t.add("/a", {"obj_type": "catalog"})
    assert catalog.commits()[-1].time == 1_700_000_000.0


def test_a_time_before_the_latest_commit_is_refused_and_writes_nothing(catalog):
    with catalog.transaction(time="2025-03-02T00:00:00Z") as t:
        t.add("/a", {"obj_type": "catalog"})
    latest = catalog.latest_vid
    with pytest.raises(errors.InvalidValueError, match="earlier than the latest commit"):
        with catalog.transaction(time="2025-03-01T00:00:00Z") as t:
            t.add("/b", {"obj_type": "catalog"})
    assert catalog.latest_vid == latest and catalog.get("/b") is None


def test_an_unbackdated_commit_after_a_backdated_one_keeps_times_increasing(catalog):
    with catalog.transaction(time="2020-01-01T00:00:00Z") as t:
        t.add("/a", {"obj_type": "catalog"})
    with catalog.transaction() as t:
        t.add("/b", {"obj_type": "catalog"})
    first, second = catalog.commits(since=1)
    assert first.time == ts("2020-01-01T00:00:00Z") < second.time
    # the same time twice: accepted, 1 µs apart, so every time still resolves to one vid
    with catalog.transaction(time=second.time + 10) as t:
        t.add("/c", {"obj_type": "catalog"})
    with catalog.transaction(time=second.time + 10) as t:
        t.add("/d", {"obj_type": "catalog"})
    c, d = catalog.commits()[-2:]
    assert d.time > c.time == second.time + 10


def test_backdating_races_are_checked_at_commit(data_dir):
    # The time is checked when the transaction starts and again at commit: a commit that lands
    # in between with a later time makes the backdated one fail, and it writes nothing.
    import catalog_core as cc

    with cc.Catalog.open(data_dir) as cat:
        slow = cat.transaction(time="2025-03-01T00:00:00Z")
        slow.add("/a", {"obj_type": "catalog"})
        with cat.transaction(time="2025-03-05T00:00:00Z") as t:
            t.add("/b", {"obj_type": "catalog"})
        with pytest.raises(errors.InvalidValueError, match="earlier than the latest commit"):
            slow.commit()
        assert cat.get("/a") is None and cat.latest_vid == 1


@pytest.mark.parametrize("bad", ["yesterday", True, float("nan"), [1]])
def test_a_time_that_is_not_a_time_is_refused(catalog, bad):
    with pytest.raises(errors.InvalidValueError, match="not a commit time"):
        catalog.transaction(time=bad)
