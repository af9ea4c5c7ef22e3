"""loads_freshness, metadata (issue 45): a table's prose saying how often it is loaded ("refreshed
weekly on Mondays with complete weeks only") while its latest loads come far more often (a weekly
mart rebuilt after every daily load, the partial week in it). Two round-6 independent testers
(Acme and cryptic) changed a weekly mart so and nothing was flagged. A small lake of its own."""

from __future__ import annotations

import pytest

import semantic as sm
from eval.fixtures.lakes import LakeBuilder
from semantic.staleness.loads_freshness import said_cadence

W = "acme.mart.weekly"


def _weekly(elk: LakeBuilder, description: str) -> None:
    cat = elk.cat
    elk.table(W, [("week", "bigint"), ("category", "string"), ("units", "bigint")], at=0)
    for week in range(1, 7):
        elk.overwrite(W, {"week": [w for w in range(1, week + 1) for _ in range(2)],
                          "category": ["a", "b"] * week, "units": [10 * w for w in range(1, 2 * week + 1)]},
                      at=7 * week)
    sm.annotate(cat, W, {"description": description}, author="a", time=elk.day(43))


def _cadence(cat, now):
    return {f.annotation: f for f in sm.staleness(cat, W, now=now, merge=False)
            if "usual_interval_hours_now" in f.evidence.values}


def _rebuild(elk: LakeBuilder, at: float) -> int:
    return elk.overwrite(W, {"week": [1, 1, 7, 7], "category": ["a", "b", "a", "b"], "units": [1, 2, 3, int(at)]},
                         at=at)


def test_a_weekly_mart_rebuilt_daily_makes_its_cadence_prose_stale(elk):
    cat = elk.cat
    _weekly(elk, "Units per fiscal week and category, refreshed weekly on Mondays with complete weeks only.")
    assert _cadence(cat, elk.day(49.5)) == {}
    weekly = _rebuild(elk, 49)       # the weekly load, then daily ones
    _rebuild(elk, 50)
    _rebuild(elk, 51)
    assert _cadence(cat, elk.day(51.5)) == {}  # two daily loads: no cadence yet
    last = _rebuild(elk, 52)
    got = _cadence(cat, elk.day(52.5))
    f = got["table.description"]
    assert f.status == "stale" and f.fixes == [] and f.evidence.values["says"] == "weekly"
    assert weekly not in f.evidence.vids and last in f.evidence.vids  # the daily run, not the weekly load
    assert f.evidence.values["usual_interval_hours_now"] == 24.0


@pytest.mark.parametrize("description", ["Weekly units per category (one row per fiscal week and category).",
                                         "Units per fiscal week and category, loaded weekly."])
def test_controls_grain_words_and_a_burst_of_commits_are_no_new_cadence(elk, description):
    """'Weekly units' is the grain, not a cadence: nothing, however often it loads. A weekly load
    followed by re-runs within the hour (three commits in one hour) is no daily cadence: nothing."""
    cat = elk.cat
    _weekly(elk, description)
    for at in (49, 49.01, 49.02, 49.03):
        _rebuild(elk, at)
    assert _cadence(cat, elk.day(49.5)) == {}
    if said_cadence(description) is None:
        for at in (50, 51, 52):
            _rebuild(elk, at)
        assert _cadence(cat, elk.day(52.5)) == {}


def test_the_cadence_prose_says():
    assert said_cadence("refreshed weekly on Mondays") == ("weekly", 7 * 86400.0)
    assert said_cadence("rebuilt every Monday") == ("every monday", 7 * 86400.0)
    assert said_cadence("a daily load of orders") == ("daily", 86400.0)
    assert said_cadence("Weekly sales per category") is None
    assert said_cadence("updated daily, refreshed weekly") is None  # two cadences: which one holds is unclear


INV = "acme.core.inventory"


def _snapshots(elk: LakeBuilder, description: str) -> None:
    """Six weekly snapshots of three items written in one bulk load (no load cadence to read), a seventh a
    week later, then the description."""
    elk.table(INV, [("snap_date", "date"), ("item", "bigint"), ("qty", "bigint")], at=0)
    days = [f"2024-10-{d:02d}" for d in (1, 8, 15, 22, 29)] + ["2024-11-05"]
    elk.append(INV, {"snap_date": [d for d in days for _ in range(3)], "item": [1, 2, 3] * 6,
                     "qty": list(range(18))}, at=1)
    elk.append(INV, {"snap_date": ["2024-11-12"] * 3, "item": [1, 2, 3], "qty": [5, 6, 7]}, at=8)
    sm.annotate(elk.cat, INV, {"description": description}, author="a", time=elk.day(8.5))


def _snap(elk: LakeBuilder, day: str, at: float) -> None:
    elk.append(INV, {"snap_date": [day] * 3, "item": [1, 2, 3], "qty": [1, 2, 3]}, at=at)


def _period(cat, now):
    return {f.annotation: f for f in sm.staleness(cat, INV, depth="data", now=now, merge=False)
            if "usual_step_days_now" in f.evidence.values}


def test_weekly_snapshots_written_daily_make_the_period_the_prose_states_stale(elk):
    """"Weekly inventory snapshots" over rows dated a week apart; the next snapshot comes on time, then two a
    day apart (one load each: the new dates step 7, 1, 1 days): the description is stale at data depth, the
    dates in the evidence (failed before: nothing, the load cadence having nothing to compare with: a round-10
    TPC-DS tester's inventory, whose daily snapshots started 8 days after the last weekly one). Controls: one
    and two new dates (too few to be a period); metadata depth (no date is read)."""
    cat = elk.cat
    _snapshots(elk, "Weekly inventory snapshots per item (semi-additive over dates).")
    _snap(elk, "2024-11-19", 15)
    assert _period(cat, elk.day(15.5)) == {}            # the next weekly snapshot
    _snap(elk, "2024-11-20", 16)
    assert _period(cat, elk.day(16.5)) == {}            # two new dates: not yet a period
    _snap(elk, "2024-11-21", 17)
    f = _period(cat, elk.day(17.5))["table.description"]
    assert f.status == "stale" and f.fixes == [] and f.reason == "cadence_changed"
    assert f.evidence.values["usual_step_days_before"] == 7 and f.evidence.values["usual_step_days_now"] == 1
    assert [f for f in sm.staleness(cat, INV, now=elk.day(17.5), merge=False)
            if "usual_step_days_now" in f.evidence.values] == []   # metadata: no date is read


def test_weekly_snapshots_that_stay_weekly_are_no_new_period(elk):
    cat = elk.cat
    _snapshots(elk, "Weekly inventory snapshots per item (semi-additive over dates).")
    for i, day in enumerate(("2024-11-19", "2024-11-26", "2024-12-03", "2024-12-10")):
        _snap(elk, day, 15 + 7 * i)
    assert _period(cat, elk.day(36.5)) == {}


def test_prose_stating_no_snapshot_period_is_not_read(elk):
    cat = elk.cat
    _snapshots(elk, "Inventory per item and week (one row per item and snapshot date).")
    for i, day in enumerate(("2024-11-13", "2024-11-14", "2024-11-15", "2024-11-16")):
        _snap(elk, day, 9 + i)
    assert _period(cat, elk.day(12.5)) == {}


def test_the_snapshot_period_prose_says():
    from semantic.staleness.loads_freshness import said_snapshots

    assert said_snapshots("Weekly inventory snapshots per item") == ("weekly", 7 * 86400.0)
    assert said_snapshots("stock levels, snapshotted every week") == ("every week", 7 * 86400.0)
    assert said_snapshots("a daily snapshot of balances") == ("daily", 86400.0)
    assert said_snapshots("Weekly sales per category") is None
