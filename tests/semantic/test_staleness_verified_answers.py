"""Verified queries over tables rebuilt in full every load (a dimension, a mart): another answer after
a routine rebuild is what the query is for, but two changes of a rebuild make the verified answer
false however routine the rebuild (an independent tester's Acme copy, run 2): the answer that had
rows and now has none (a dimension's join key rewritten in another format: the join finds nothing),
and a rebuild that keeps the rows (by the grain's keys) with other values in a column the query
reads (history restated). Each with its routine control. A small lake of its own."""

from __future__ import annotations

import semantic as sm
from eval.fixtures.lakes import LakeBuilder

D, F, M = "acme.core.dim_cust", "acme.core.fct_visits", "acme.mart.rpt_revenue"
UUIDS = ["0a1b-2c3d", "4e5f-6a7b", "8c9d-0e1f", "2a3b-4c5d"]
JOIN = ("SELECT c.tier, count(*) AS visits FROM acme.core.fct_visits v JOIN acme.core.dim_cust c "
        "ON c.uuid = v.uuid GROUP BY c.tier")


def _dim(uuids: list[str], tiers: list[str]) -> dict[str, list]:
    return {"sk": list(range(1, len(uuids) + 1)), "uuid": uuids, "tier": tiers}


def _visits(elk: LakeBuilder) -> None:
    """A dimension rebuilt in full every day, a fact of visits appended daily that joins it on `uuid`,
    and a verified query joining the two, grouped by the dimension's tier."""
    cat = elk.cat
    elk.table(D, [("sk", "bigint"), ("uuid", "string"), ("tier", "string")], at=0)
    elk.table(F, [("d", "date"), ("vid", "bigint"), ("uuid", "string")], at=0)
    for day in range(1, 4):
        elk.overwrite(D, _dim(UUIDS[:3], ["gold", "silver", "gold"]), at=day)
        elk.append(F, {"d": [f"2024-11-1{day}"] * 3, "vid": [10 * day + i for i in range(3)], "uuid": UUIDS[:3]},
                   at=day + 0.1)
    sm.verify_query(cat, "visits by tier", JOIN, author="a", time=elk.day(3.5))


def _changed(cat, table, now, depth):
    return {f.annotation: f for f in sm.staleness(cat, table, depth=depth, now=now, merge=False)
            if f.reason == "verified_query_changed"}


def test_a_dimension_rebuilt_with_its_join_key_in_another_format_empties_the_answer(elk):
    """The dimension rebuilt as every day, its `uuid` now upper case without hyphens while the fact
    keeps the old format: the join finds nothing, the answer that had two groups has none. Flagged
    at data depth (suspect, re-verify, the rebuild named) on both tables' copies (failed before: an
    answer moved by a routine rebuild of an always-overwritten table was left alone)."""
    cat = elk.cat
    _visits(elk)
    elk.overwrite(D, _dim([u.replace("-", "").upper() for u in UUIDS[:3]], ["gold", "silver", "gold"]), at=4)
    for table in (D, F):
        got = _changed(cat, table, elk.day(5), "data")
        assert len(got) == 1, (table, got)
        f = next(iter(got.values()))
        assert f.status == "suspect" and [x.action for x in f.fixes] == ["reverify"], f
        assert f.evidence.values["change"] == "emptied" and f.evidence.values["table"] == D, f


def test_a_routine_rebuild_of_the_dimension_that_moves_the_answer_stays_quiet(elk):
    """The control: the dimension rebuilt with a new customer and the fact's new visits (one by that
    customer): the answer moved (more visits, a new tier), as the query is for: nothing."""
    cat = elk.cat
    _visits(elk)
    elk.overwrite(D, _dim(UUIDS, ["gold", "silver", "gold", "platinum"]), at=4)
    elk.append(F, {"d": ["2024-11-14"] * 2, "vid": [40, 41], "uuid": [UUIDS[0], UUIDS[3]]}, at=4.1)
    for table in (D, F):
        for depth in ("metadata", "data"):
            assert _changed(cat, table, elk.day(5), depth) == {}, (table, depth)


def _mart(periods: int, scale: float = 1.0, open_bump: float = 0.0) -> dict[str, list]:
    """The mart's rows for periods 1..`periods` (two regions each), revenue scaled by `scale`; the last
    period's by `1 + open_bump` too (an open period that grows)."""
    rows: dict[str, list] = {"period": [], "region": [], "revenue": []}
    for p in range(1, periods + 1):
        for r, base in (("east", 100.0), ("west", 50.0)):
            bump = 1 + open_bump if p == periods else 1.0
            rows["period"].append(p)
            rows["region"].append(r)
            rows["revenue"].append(round(base * p * scale * bump, 2))
    return rows


def _revenue(elk: LakeBuilder) -> None:
    """A monthly revenue mart rebuilt in full every day (one row per period and region, the grain's
    keys declared), and two verified queries: one closed period's revenue and the total."""
    cat = elk.cat
    elk.table(M, [("period", "bigint"), ("region", "string"), ("revenue", "double")], at=0)
    for day in range(1, 4):
        elk.overwrite(M, _mart(day + 1), at=day)
    sm.annotate(cat, M, {"grain": {"text": "one row per period and region", "keys": ["period", "region"]}},
                author="a", time=elk.day(3.2))
    sm.verify_query(cat, "revenue in period 2", "SELECT sum(revenue) FROM acme.mart.rpt_revenue WHERE period = 2",
                    author="a", time=elk.day(3.5))
    sm.verify_query(cat, "revenue", "SELECT sum(revenue) FROM acme.mart.rpt_revenue", author="a", time=elk.day(3.6))


def test_a_mart_rebuilt_with_its_history_restated_changes_the_verified_answers(elk):
    """The mart rebuilt as every day, with the same rows (by period and region) but every revenue
    restated 5% higher: both answers moved across the rebuild, and the rows it kept hold other
    values of the column they read: flagged at data depth, suspect, re-verify (failed before: the
    rebuild of an always-overwritten table counted as routine)."""
    cat = elk.cat
    _revenue(elk)
    elk.overwrite(M, _mart(4, scale=1.05), at=4)
    got = _changed(cat, M, elk.day(5), "data")
    assert len(got) == 2, got
    for f in got.values():
        assert f.status == "suspect" and [x.action for x in f.fixes] == ["reverify"], f
        assert f.evidence.values["change"] == "restated" and f.evidence.values["columns"] == ["revenue"], f


def test_a_mart_rebuilt_with_a_new_period_and_its_open_period_grown_stays_quiet(elk):
    """The control: routine rebuilds that add a period, and one that only grows the open period's
    rows (a quarter of the rows the rebuild kept): the total moved, as it is for; the closed period
    did not: nothing at either depth."""
    cat = elk.cat
    _revenue(elk)
    elk.overwrite(M, _mart(5), at=4)
    elk.overwrite(M, _mart(5, open_bump=0.2), at=5)
    for depth in ("metadata", "data"):
        assert _changed(cat, M, elk.day(6), depth) == {}, depth


def test_one_closed_period_restated_in_a_routine_rebuild_changes_its_verified_answer(elk):
    """The mart rebuilt as every day (a new period added), one closed period's row restated (+1%, one row
    in ten): the query over that period moved across the rebuild, where no rebuild before moved it:
    flagged at data depth, suspect, re-verify, the steady rebuilds in the evidence (failed before: one row
    is no "most rows restated": an independent tester's Acme finance mart, FY2024 P6 restated). The total,
    which every rebuild moves, stays quiet: moving is its habit."""
    cat = elk.cat
    _revenue(elk)
    rows = _mart(5)
    rows["revenue"][2] = round(rows["revenue"][2] * 1.01, 2)  # period 2, east
    elk.overwrite(M, rows, at=4)
    got = _changed(cat, M, elk.day(5), "data")
    assert [f.annotation for f in got.values()] and len(got) == 1, got
    [f] = got.values()
    vq = next(a for a in sm.read_annotations(cat, M) if a.key == f.annotation)
    assert "period = 2" in vq.value["sql"]
    assert f.status == "suspect" and [x.action for x in f.fixes] == ["reverify"], f
    assert f.evidence.values["change"] == "restated" and f.evidence.values["steady_rewrites"] == 3, f


CAL = "acme.core.cal"


def test_a_calendar_written_once_then_rewritten_with_a_tenth_of_its_years_moved_changes_the_answer(elk):
    """A calendar loaded once, then rewritten for the first time with the fiscal year of one day in ten
    moved (held-out Acme 2703 of session 31, dim_date: five verified answers over it missed): no rebuild
    before makes the rewrite routine, so a tenth of the kept rows restated in a column the query reads,
    the answer moved, is history restated (failed before: it needed half of them). Suspect, re-verify.
    Controls: the same change on a calendar rebuilt every day before (its rebuilds may grow an open
    period: most rows must be restated); a calendar rewritten once with the same rows."""
    cat = elk.cat
    days = list(range(1, 21))
    years = [2023 if d <= 10 else 2024 for d in days]
    q = "SELECT count(*) AS n FROM acme.core.cal WHERE fiscal_year = 2024"
    names = {CAL: 0, CAL + "_daily": 3, CAL + "_rerun": 0}
    for name, rebuilds in names.items():
        elk.table(name, [("day", "bigint"), ("fiscal_year", "bigint")], at=0.1,
                  rows={"day": days, "fiscal_year": years})
        for i in range(rebuilds):
            elk.overwrite(name, {"day": days, "fiscal_year": years}, at=0.2 + i / 10)
        sm.annotate(cat, name, {"grain": {"text": "one row per day", "keys": ["day"]}}, author="a", time=elk.at(1))
        sm.verify_query(cat, "days of FY2024", q.replace("acme.core.cal", name), author="a", time=elk.at(1.1))
    moved = [y + 1 if d in (3, 5) else y for d, y in zip(days, years)]  # 2 of 20 days, into FY2024
    for name in names:
        elk.overwrite(name, {"day": days, "fiscal_year": years if name.endswith("_rerun") else moved}, at=3)
    [f] = _changed(cat, CAL, elk.day(3.5), "data").values()
    assert f.status == "suspect" and [x.action for x in f.fixes] == ["reverify"], f
    assert f.evidence.values["change"] == "restated" and f.evidence.values["rows_restated"] == 0.1, f
    assert _changed(cat, CAL + "_daily", elk.day(3.5), "data") == {}
    assert _changed(cat, CAL + "_rerun", elk.day(3.5), "data") == {}
