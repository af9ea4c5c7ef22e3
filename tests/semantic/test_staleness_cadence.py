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
