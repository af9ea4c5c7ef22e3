"""keys_joins at data depth: a related table rebuilt with its keys drawn again (the same rows, every
other column kept, another surrogate key each) leaves the rows written before it holding the old keys:
they still join, to other rows. The match rate and the key ranges hold, so nothing else says so (the
round-22 TPC-DS tester's income_band re-keyed from 0, wave 5, session 32: missed at both depths)."""

from __future__ import annotations

import pytest

from semantic import staleness
from tests.semantic.test_staleness import relate

BANDS = "acme.core.income_band"
PROFILES = "acme.core.profiles"
LOWER = [0, 10001, 20001, 30001, 40001, 50001, 60001, 70001]


def _lake(elk) -> None:
    elk.table(BANDS, [("band_sk", "bigint"), ("lower_bound", "bigint"), ("upper_bound", "bigint")], at=0,
              rows={"band_sk": list(range(1, 9)), "lower_bound": LOWER, "upper_bound": [x + 10000 for x in LOWER]})
    elk.table(PROFILES, [("profile_sk", "bigint"), ("band_sk", "bigint")], at=0,
              rows={"profile_sk": list(range(40)), "band_sk": [i % 8 + 1 for i in range(40)]})
    relate(elk.cat, PROFILES, BANDS, [("band_sk", "band_sk")], at=elk.day(1))
    elk.append(PROFILES, {"profile_sk": [40, 41], "band_sk": [1, 2]}, at=2)  # a routine load


def _found(elk, at=5):
    """The relationship's values_restated findings (a key no longer held also leaves join_match_low)."""
    return [f for f in staleness(elk.cat, PROFILES, depth="data", now=elk.day(at), merge=False)
            if f.annotation == "relationship.income_band" and f.reason == "values_restated"]


def _rebuild_bands(elk, keys, at=3):
    elk.overwrite(BANDS, {"band_sk": keys, "lower_bound": LOWER, "upper_bound": [x + 10000 for x in LOWER]}, at=at)


def test_a_related_table_rebuilt_with_its_keys_drawn_again_is_flagged(elk):
    _lake(elk)
    _rebuild_bands(elk, list(range(0, 8)))  # re-keyed from 0: every band's key one lower
    [f] = _found(elk)
    assert f.reason == "values_restated" and f.status == "stale" and f.fixes == []
    assert f.evidence.values["rows_paired"] == 8 and f.evidence.values["keys_moved"] == 8
    assert "join, but to other rows" in f.message and f.cause and f.cause.startswith("renumbered:")
    assert not [f for f in staleness(elk.cat, PROFILES, depth="metadata", now=elk.day(5), merge=False)
                if f.reason == "values_restated"]  # only the rows tell


@pytest.mark.parametrize("case", ["same_keys", "profiles_rekeyed", "other_columns_changed", "before_relationship"])
def test_controls_a_rebuild_that_keeps_or_follows_its_keys(elk, case):
    """Controls: the bands rebuilt with the same keys; the profiles rebuilt after, re-keyed to the new
    keys; a rebuild whose rows changed otherwise (no row pairs); a re-keying before the relationship."""
    _lake(elk)
    if case == "same_keys":
        _rebuild_bands(elk, list(range(1, 9)))
    elif case == "profiles_rekeyed":
        _rebuild_bands(elk, list(range(0, 8)))
        elk.overwrite(PROFILES, {"profile_sk": list(range(42)), "band_sk": [i % 8 for i in range(40)] + [0, 1]}, at=4)
    elif case == "other_columns_changed":
        elk.overwrite(BANDS, {"band_sk": list(range(0, 8)), "lower_bound": [x + 5 for x in LOWER],
                              "upper_bound": [x + 9000 for x in LOWER]}, at=3)
    else:
        elk.overwrite(BANDS, {"band_sk": list(range(0, 8)), "lower_bound": LOWER,
                              "upper_bound": [x + 10000 for x in LOWER]}, at=0.5)
        elk.overwrite(PROFILES, {"profile_sk": list(range(42)), "band_sk": [i % 8 for i in range(42)]}, at=0.6)
    assert _found(elk) == []


def test_profiles_rebuilt_for_another_reason_that_kept_the_old_keys_are_flagged(elk):
    """The referencing table rewritten after the re-keying, carrying its old keys over (the tester's
    household profiles, rebuilt to merge two bands): still joined to the wrong rows."""
    _lake(elk)
    _rebuild_bands(elk, list(range(0, 8)))
    elk.overwrite(PROFILES, {"profile_sk": list(range(42)), "band_sk": [i % 8 + 1 for i in range(40)] + [1, 2]}, at=4)
    assert [f.reason for f in _found(elk)] == ["values_restated"]


def test_keys_drawn_from_a_new_range_are_the_match_rate_s_finding_not_a_re_keying(elk):
    """The bands re-keyed from 101 (the round-24 TPC-DS tester's customers re-keyed from 100001): the
    profiles' old keys join nothing now, which join_match_low says. The re-keying finding said "they join,
    but to other rows" beside it (failed before: a values_restated finding with that message)."""
    _lake(elk)
    _rebuild_bands(elk, list(range(101, 109)))
    assert _found(elk) == []
    low = [f for f in staleness(elk.cat, PROFILES, depth="data", now=elk.day(5), merge=False)
           if f.annotation == "relationship.income_band" and f.reason == "join_match_low"]
    assert len(low) == 1
