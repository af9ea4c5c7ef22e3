"""definitions (issue 45): a verified query asking for "the latest" rows by the greatest date of a table
(`(SELECT max(d) FROM t)`) after a load wrote rows dated well after the load itself (`latest_dated_ahead`).
A small lake of its own, never a trap seed; with its controls."""

from __future__ import annotations

import datetime as dt

import pytest

import semantic as sm
from eval.fixtures.lakes import LakeBuilder

S = "acme.core.fct_sales"
LATEST = f"SELECT sum(net_paid) FROM {S} WHERE sale_date = (SELECT max(sale_date) FROM {S})"
START = dt.date(2024, 11, 11)  # the lake builder's day 0


def _day(n: int) -> str:
    return (START + dt.timedelta(days=n)).isoformat()


def _sales(elk: LakeBuilder, ahead_before: bool = False) -> None:
    """Daily loads, each of its own day's sales (loaded that evening); with `ahead_before`, one early load
    already held a sale dated two months on (a table that dates some rows ahead by habit)."""
    cat = elk.cat
    elk.table(S, [("sale_date", "date"), ("id", "bigint"), ("net_paid", "double")], at=0)
    for day in range(1, 6):
        rows = {"sale_date": [_day(day)] * 3, "id": [10 * day + i for i in range(3)], "net_paid": [5.0, 7.5, 9.0]}
        if ahead_before and day == 2:
            rows = {k: v + [{"sale_date": _day(62), "id": 99, "net_paid": 1.0}[k]] for k, v in rows.items()}
        elk.append(S, rows, at=day + 0.8)
    sm.verify_query(cat, "net paid on the latest day", LATEST, author="a", time=elk.day(5.9))


def _flagged(cat, now):
    return [f for f in sm.staleness(cat, S, now=now, merge=False) if f.reason == "verified_query_changed"]


@pytest.mark.parametrize("ahead", [True, False])
def test_a_load_with_rows_dated_weeks_ahead_changes_what_the_latest_day_query_answers(elk, ahead):
    """A daily load that also carries a layaway ticket dated at its pickup day, 40 days on: the query's
    latest `sale_date` is that day now, so it answers for the ticket, not for the day loaded (suspect, no
    fix: which rows it should ask for is a person's call; failed before: nothing at either depth, the
    answer pinned to the latest day before each load did not move; the round-9 TPC-DS tester's
    store_sales). Control: the next day's load dated that day."""
    cat = elk.cat
    _sales(elk)
    rows = {"sale_date": [_day(6)] * 3, "id": [60, 61, 62], "net_paid": [5.0, 7.5, 9.0]}
    if ahead:
        rows = {k: v + [{"sale_date": _day(46), "id": 63, "net_paid": 120.0}[k]] for k, v in rows.items()}
    v = elk.append(S, rows, at=6.8)
    for depth in ("metadata", "data"):
        got = [f for f in sm.staleness(cat, S, depth=depth, now=elk.day(7), merge=False)
               if f.reason == "verified_query_changed"]
        if not ahead:
            assert got == [], depth
            continue
        assert len(got) == 1 and got[0].status == "suspect" and got[0].fixes == [], (depth, got)
        assert got[0].evidence.values["dated_up_to"] == _day(46) and v in got[0].evidence.vids


def test_a_table_that_dated_rows_ahead_before_the_query_was_verified_is_left_alone(elk):
    """Control: one load before the query was verified already held a row dated two months on: what the
    query means by the latest day was that when it was verified; a later such load changes nothing."""
    cat = elk.cat
    _sales(elk, ahead_before=True)
    elk.append(S, {"sale_date": [_day(6), _day(50)], "id": [60, 61], "net_paid": [5.0, 1.0]}, at=6.8)
    assert _flagged(cat, elk.day(7)) == []
