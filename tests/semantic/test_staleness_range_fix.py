"""documented_ranges at data depth (issue 45): a description's one date range the data now exceeds gets
`update_range {column, start, end}` when the data supports the new range: the text's ends where the
data still lies within them, the data's where it reaches beyond; a range the column filled day by day
when the claim was written must be filled day by day again. Accept writes the text with the new range,
validated against the column's values at commit. Controls: a gap (a day appended weeks past the rest),
two ranges in one text, metadata depth (no fix)."""

from __future__ import annotations

import semantic as sm
from eval.fixtures.lakes import LakeBuilder
from semantic.annotations import read_annotations
from semantic.models import Fix

T = "acme.core.t"
DAYS = [f"2024-11-0{d}" for d in range(1, 6)]


def _filled(lk: LakeBuilder, text: str) -> None:
    lk.table(T, [("d", "date"), ("amount", "bigint")], partition_by=["d"], at=0,
             rows={"d": DAYS, "amount": [1, 2, 3, 4, 5]})
    sm.annotate(lk.cat, T, {"description": text}, author="a", time=lk.day(0.5))


def _range(cat, now, depth="data"):
    return [f for f in sm.staleness(cat, T, depth=depth, now=now, merge=False) if f.reason == "range_exceeded"]


def test_a_filled_range_extended_day_by_day_gets_the_new_range_and_accept_writes_it(elk):
    cat = elk.cat
    _filled(elk, "One row per day from 2024-11-01 to 2024-11-05, loaded nightly.")
    elk.append(T, {"d": ["2024-11-06", "2024-11-07"], "amount": [6, 7]}, at=1)
    [meta] = _range(cat, elk.day(1), "metadata")
    assert meta.fixes == []  # metadata depth: the statistics cannot tell a gap
    [f] = _range(cat, elk.day(1))  # failed before: no fix at data depth either
    assert f.fixes == [Fix(action="update_range", params={"column": "d", "start": "2024-11-01", "end": "2024-11-07"})]
    sm.scan(cat, author="steward", now=elk.day(1), time=elk.at(1.2))
    [it] = [i for i in sm.review_items(cat, T, now=elk.day(1)).items if i.reason == "range_exceeded"]
    assert it.acceptable and it.proposed == "One row per day from 2024-11-01 to 2024-11-07, loaded nightly."
    out = sm.accept_all(cat, author="steward", table=T, now=elk.day(1), time=elk.day(1.5))
    assert [d["item"] for d in out["decided"]] == [it.id], out
    desc = {a.key: a.value for a in read_annotations(cat, T)}["table.description"]
    assert desc == "One row per day from 2024-11-01 to 2024-11-07, loaded nightly."
    assert _range(cat, elk.day(1.5)) == [] and _range(cat, elk.day(1.5), "metadata") == []


def test_a_day_appended_weeks_past_a_filled_range_gets_no_new_range(elk):
    """Control: the column filled the range day by day; one day appended three weeks past it leaves a gap
    that "one row per day from 2024-11-01 to 2024-11-26" would deny: the finding stands, no fix."""
    cat = elk.cat
    _filled(elk, "One row per day from 2024-11-01 to 2024-11-05.")
    elk.append(T, {"d": ["2024-11-26"], "amount": [6]}, at=1)
    [f] = _range(cat, elk.day(1))
    assert f.fixes == [] and f.status == "stale"


def test_bounds_only_a_range_not_filled_when_written_takes_the_datas_ends(elk):
    """A range that only bounded the dates (rows on two days of ten) takes the data's new end, whatever the
    gap; a text stating two ranges gets no fix (which one moved is for a person to say)."""
    cat = elk.cat
    elk.table(T, [("d", "date"), ("amount", "bigint")], partition_by=["d"], at=0,
              rows={"d": ["2024-11-01", "2024-11-05"], "amount": [1, 2]})
    sm.annotate(cat, T, {"description": "orders dated between 2024-11-01 and 2024-11-10"}, author="a",
                time=elk.day(0.5))
    sm.annotate(cat, T, {"description": "from 2024-11-01 to 2024-11-10; refunds from 2024-11-02 to 2024-11-10"},
                column="d", author="a", time=elk.day(0.5))
    elk.append(T, {"d": ["2024-11-30"], "amount": [4]}, at=2)
    got = {f.annotation: f.fixes for f in _range(cat, elk.day(2))}
    assert got == {"table.description": [Fix(action="update_range", params={"column": "d", "start": "2024-11-01",
                                                                             "end": "2024-11-30"})],
                   "column.1.description": []}


def test_a_filled_range_the_data_no_longer_reaches_gets_the_new_range_and_controls(elk):
    """A calendar "one row per date from 2024-11-01 to 2024-11-14" rebuilt over fewer days (the round-20
    TPC-DS tester's date_dim, 1900-2100 rebuilt as 1990-2030): the text states the column's own ends when
    written and the data no longer reaches them (failed before: no finding at either depth). Metadata: stale,
    no fix; data: `update_range` to the data's ends, which accept writes. Controls: a text that only bounded
    the dates when written (its ends not the data's); the last day removed alone (within NARROWED)."""
    cat = elk.cat
    days = [f"2024-11-{d:02d}" for d in range(1, 15)]
    elk.table(T, [("d", "date"), ("n", "bigint")], at=0, rows={"d": days, "n": list(range(14))})
    sm.annotate(cat, T, {"description": "Calendar: one row per date from 2024-11-01 to 2024-11-14."}, author="a",
                time=elk.at(0.5))
    sm.annotate(cat, T, {"description": "day of the calendar, between 2024-10-01 and 2024-12-31"}, column="d",
                author="a", time=elk.at(0.6))
    elk.overwrite(T, {"d": days[:-1], "n": list(range(13))}, at=1)
    assert _range(cat, elk.day(1), "metadata") == [] and _range(cat, elk.day(1)) == []  # controls
    elk.overwrite(T, {"d": days[3:10], "n": list(range(7))}, at=2)
    [meta] = _range(cat, elk.day(2), "metadata")
    assert (meta.annotation, meta.status, meta.fixes, meta.evidence.values["narrowed"]) == \
        ("table.description", "stale", [], True)
    [f] = _range(cat, elk.day(2))
    assert f.fixes == [Fix(action="update_range", params={"column": "d", "start": "2024-11-04", "end": "2024-11-10"})]
    sm.scan(cat, author="steward", now=elk.day(2), time=elk.at(2.2))
    out = sm.accept_all(cat, author="steward", table=T, now=elk.day(2), time=elk.day(2.5))
    assert len(out["decided"]) == 1, out
    desc = {a.key: a.value for a in read_annotations(cat, T)}["table.description"]
    assert desc == "Calendar: one row per date from 2024-11-04 to 2024-11-10."
