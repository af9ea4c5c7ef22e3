"""definitions, data: a verified query asking for the latest rows (`= (SELECT max(d) FROM t)`) of a
table loaded daily is asked, across a rewrite of the whole table, of the rows that were latest just
before it (`definitions.pin_latest`): a rewrite that keeps the past snapshots as they were and adds a
new one (a daily load become a full rewrite) moves what the question is for, not the answer verified (failed before: verified_query_changed
on every such rewrite; the round-7 Acme and round-8 cryptic testers' "units on hand at the latest
snapshot"). Control: a rewrite that restates the snapshot the answer was read from."""

from __future__ import annotations

import semantic as sm

T = "acme.core.inventory"
Q = f"SELECT store_id, sum(units) AS units FROM {T} WHERE snap_date = (SELECT max(snap_date) FROM {T}) " \
    "GROUP BY store_id ORDER BY store_id"


def _snap(day: int, bump: int = 0) -> dict[str, list]:
    return {"snap_date": [f"2024-11-{10 + day:02d}"] * 3, "store_id": [1, 2, 3],
            "units": [100 + day + bump, 200 + 2 * day + bump, 300 + 3 * day + bump]}


def _rewrite(elk, days: range, at: float, restate_last: bool = False) -> None:
    rows: dict[str, list] = {"snap_date": [], "store_id": [], "units": []}
    for d in days:
        snap = _snap(d, bump=7 if restate_last and d == days[-2] else 0)
        for k, v in snap.items():
            rows[k] += v
    elk.overwrite(T, rows, at=at)


def _flags(cat, elk, at):
    return [f for f in sm.staleness(cat, T, depth="data", now=elk.day(at), merge=False)
            if f.annotation and f.annotation.startswith("verified_query.")]


def _setup(elk):
    cat = elk.cat
    elk.table(T, [("snap_date", "date"), ("store_id", "bigint"), ("units", "bigint")], at=0)
    for day in range(1, 4):
        elk.append(T, _snap(day), at=day)
    sm.verify_query(cat, "Units on hand at the latest snapshot", Q, author="a", time=elk.day(3.5))
    return cat


def test_a_latest_snapshot_query_over_daily_full_rewrites_stays_verified(elk):
    cat = _setup(elk)
    _rewrite(elk, range(1, 5), at=4)  # the daily load become a full rewrite: days 1-3 as they were, day 4 added
    for day in range(5, 7):
        elk.append(T, _snap(day), at=day)
    assert _flags(cat, elk, 6.5) == []


def test_latest_snapshot_control_a_rewrite_restating_the_snapshot_read(elk):
    cat = _setup(elk)
    _rewrite(elk, range(1, 5), at=4, restate_last=True)  # day 3's snapshot restated, day 4's added
    got = _flags(cat, elk, 4.5)
    assert [(f.reason, f.fixes[0].action) for f in got] == [("verified_query_changed", "reverify")], got
