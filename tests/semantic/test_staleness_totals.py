"""grain, data depth (issue 45): a build that starts writing total rows beside a dimension's members
(a company total per fiscal period beside the regions: an independent tester's cryptic finance mart).
The grain's keys stay unique, so before this check only the new code was seen; the metric summing
every row, the verified answer and the description that says "per region" are now flagged, with
no fix to accept. A small lake of its own."""

from __future__ import annotations

import semantic as sm
from eval.fixtures.lakes import LakeBuilder
from semantic.models import Fix

F = "acme.mart.fin"
REGIONS = ["east", "north", "west"]


def _rows(periods: list[int], regions: list[str], total: str | None = None) -> dict[str, list]:
    rows: dict[str, list] = {"fy": [], "period": [], "region": [], "revenue": [], "orders": []}
    for p in periods:
        vals = {r: (100.0 * (i + 1) + p, 10 * (i + 1) + p) for i, r in enumerate(regions)}
        if total is not None:
            vals[total] = (sum(v[0] for v in vals.values()), sum(v[1] for v in vals.values()))
        for r, (rev, n) in vals.items():
            rows["fy"].append(2024)
            rows["period"].append(p)
            rows["region"].append(r)
            rows["revenue"].append(rev)
            rows["orders"].append(n)
    return rows


def _lake(elk: LakeBuilder) -> None:
    cat = elk.cat
    elk.table(F, [("fy", "bigint"), ("period", "bigint"), ("region", "string"), ("revenue", "double"),
                  ("orders", "bigint")], at=0)
    elk.overwrite(F, _rows([1, 2, 3], REGIONS), at=1)
    sm.annotate(cat, F, {"grain": {"text": "one row per fiscal period and region", "keys": ["fy", "period", "region"]},
                         "description": "Revenue per closed fiscal period and region; sum over regions for a company "
                                        "total."}, author="a", time=elk.day(1.5))
    sm.annotate(cat, F, {"role": "measure", "unit": "USD"}, column="revenue", author="a", time=elk.day(1.55))
    sm.define_metric(cat, F, "revenue", expression="sum(revenue)", author="a", time=elk.day(1.6))
    sm.define_metric(cat, F, "west_revenue", expression="sum(revenue)", filter="region = 'west'", author="a",
                     time=elk.day(1.62))
    sm.define_metric(cat, F, "top_period", expression="max(period)", author="a", time=elk.day(1.64))
    sm.verify_query(cat, "revenue in period 2", f"SELECT sum(revenue) FROM {F} WHERE period = 2", author="a",
                    time=elk.day(1.7))
    sm.verify_query(cat, "periods", f"SELECT count(DISTINCT period) FROM {F}", author="a", time=elk.day(1.72))


def _totals(cat, now):
    return {f.annotation: f for f in sm.staleness(cat, F, depth="data", now=now, merge=False)
            if (f.evidence.values or {}).get("totals")}


def test_total_rows_beside_the_regions_make_the_sums_false_and_no_fix_is_offered(elk):
    cat = elk.cat
    _lake(elk)
    # control: a new region with its own figures (no total): no claim is made false by totals
    elk.overwrite(F, _rows([1, 2, 3, 4], [*REGIONS, "south"]), at=2)
    assert _totals(cat, elk.day(2.1)) == {}
    # the rebuild adds a company-total row per period (region 'ALL', every measure summed)
    elk.overwrite(F, _rows([1, 2, 3, 4], [*REGIONS, "south"], total="ALL"), at=3)
    got = _totals(cat, elk.day(3.1))
    vq = next(a.key for a in sm.read_annotations(cat, F) if a.kind == "verified_query"
              and a.value["question"] == "revenue in period 2")
    # failed before: none of these (the grain's keys are still unique)
    assert set(got) == {"metric.revenue", vq, "table.description"}
    m = got["metric.revenue"]
    assert (m.reason, m.status) == ("grain_violated", "stale")
    assert m.evidence.values["totals"] == ["ALL"] and m.evidence.values["column"] == "region"
    assert m.fixes == [Fix(action="investigate", params={"columns": ["region"]})]
    assert got[vq].reason == "verified_query_changed" and got[vq].fixes[0].action == "reverify"  # a person re-runs it
    # accept-all writes none of them (no fix to accept), so the doubled answer is never re-verified
    sm.scan(cat, author="steward", now=elk.day(3.1), time=elk.day(3.15))
    before = {a.key: a.value for a in sm.read_annotations(cat, F)}
    sm.accept_all(cat, author="ann", now=elk.day(3.15), time=elk.day(3.2))
    after = {a.key: a.value for a in sm.read_annotations(cat, F)}
    for k in ("metric.revenue", vq, "table.description"):
        assert after[k] == before[k]


def test_total_rows_a_claim_already_leaving_out_is_not_flagged(elk):
    """Controls on the same change: a metric written after the totals came (its basis holds them), a
    query naming the region column, a metric filtering one region, a count of distinct periods."""
    cat = elk.cat
    _lake(elk)
    elk.overwrite(F, _rows([1, 2, 3], REGIONS, total="ALL"), at=2)
    sm.define_metric(cat, F, "revenue_since", expression="sum(revenue)", author="a", time=elk.day(2.5))
    sm.verify_query(cat, "regions' revenue", f"SELECT sum(revenue) FROM {F} WHERE region <> 'ALL'", author="a",
                    time=elk.day(2.52))
    got = _totals(cat, elk.day(2.6))
    assert "metric.revenue" in got  # the change itself is seen
    flagged = {k for k in got if k.startswith("metric.")}
    assert flagged == {"metric.revenue"}
    qs = {a.value["question"]: a.key for a in sm.read_annotations(cat, F) if a.kind == "verified_query"}
    assert qs["regions' revenue"] not in got and qs["periods"] not in got


def test_total_rows_beside_a_key_added_after_the_metric_and_the_date_they_came(elk):
    """The metric summing every row predates the region key (the table was one row per period; region
    joined the grain later, so the sum over regions stayed the company's figure), then total rows came:
    the key's values are read at the first load that held the column (failed before: the column was not
    there at the metric's basis, so the metric was never flagged: the round-22 Acme tester's finance
    report, wave 5, session 32), and the key column's description with it. The finding dates the totals at the load that first wrote them, not the
    first load after the claim (the tester read "since 2025-03-03" for rows written on 2025-03-13)."""
    cat = elk.cat
    elk.table(F, [("fy", "bigint"), ("period", "bigint"), ("revenue", "double"), ("orders", "bigint")], at=0)
    elk.overwrite(F, {"fy": [2024] * 3, "period": [1, 2, 3], "revenue": [600.0, 603.0, 606.0], "orders": [60, 63, 66]},
                  at=1)
    sm.define_metric(cat, F, "revenue", expression="sum(revenue)", author="a", time=elk.day(1.5))
    elk.evolve(F, add=[("region", "string")], at=2, rows=_rows([1, 2, 3], REGIONS))
    sm.annotate(cat, F, {"grain": {"text": "one row per fiscal period and region", "keys": ["fy", "period", "region"]}},
                author="a", time=elk.day(2.5))
    sm.annotate(cat, F, {"description": "Region of the store"}, column="region", author="a", time=elk.day(2.6))
    sm.annotate(cat, F, {"description": "Revenue, dollars"}, column="revenue", author="a", time=elk.day(2.7))
    elk.overwrite(F, _rows([1, 2, 3, 4], REGIONS), at=3)
    assert _totals(cat, elk.day(3.1)) == {}
    elk.overwrite(F, _rows([1, 2, 3, 4, 5], REGIONS, total="ALL"), at=4)
    got = _totals(cat, elk.day(4.1))
    # and the key column's own description: 'ALL' is no region of a store (the tester's column.5); the
    # revenue column's says nothing of members
    assert set(got) == {"metric.revenue", "column.5.description"}, set(got)
    m = got["metric.revenue"]
    assert m.reason == "grain_violated" and m.evidence.values["totals"] == ["ALL"]
    assert m.message.startswith(f"since {elk_day(elk, 4)} rows of region 'ALL'"), m.message


def elk_day(elk, n):
    import datetime as dt

    return dt.datetime.fromtimestamp(elk.day(n), dt.timezone.utc).strftime("%Y-%m-%d")
