"""A metric computing with a column whose every row was restated in another unit (x100 in place): the
finding's fix is `update_unit {column, scale}`, which accept applies by rewriting the metric's expression
on the values as they were (`amount / 100.0`), so the metric keeps its unit; validated at commit by
running it. New loads in another unit beside older rows get no such fix: no one rewrite is right for both."""

from __future__ import annotations

import semantic as sm
from semantic.models import Fix
from tests.semantic.test_staleness import T

ROWS = {"d": ["2024-11-10"] * 4, "amount": [0, 230, 980, 610]}


def _spend(elk):
    cat = elk.cat
    elk.table(T, [("d", "date"), ("amount", "bigint")], partition_by=["d"], at=0, rows=dict(ROWS))
    sm.annotate(cat, T, {"unit": "dollars"}, column="amount", author="a", time=elk.day(0.5))
    sm.define_metric(cat, T, "spend", expression="sum(amount)", filter="amount > 100", unit="USD", author="a",
                     time=elk.day(0.6))
    old = {c: list(v) for c, v in ROWS.items()}
    for i in range(3):
        day = {"d": [f"2024-11-1{i + 1}"] * 4, "amount": [0, 410 + i, 870, 330]}
        elk.append(T, day, at=1 + i)
        for c in old:
            old[c] += day[c]
    return cat, old


def _metric_item(cat, now):
    return next(i for i in sm.review_items(cat, T, now=now).items if i.annotation == "metric.spend"
                and i.reason == "unit_drift")


def test_a_metric_on_a_column_restated_in_cents_is_rewritten_on_the_old_values(elk):
    """Failed before: `investigate`, "check the metric's expression ... rewrite it for the new scale" (the
    round-12 cryptic tester's marketing spend restated in cents: "SUM(mstae_s) / 100.0, still USD")."""
    cat, old = _spend(elk)
    elk.overwrite(T, {"d": old["d"], "amount": [a * 100 for a in old["amount"]]}, at=5)
    it = _metric_item(cat, elk.day(5))
    assert it.fixes == [Fix(action="update_unit", params={"column": "amount", "scale": 2})]
    assert it.acceptable, it.why_not
    assert it.proposed["expression"] == "SUM(amount / 100.0)" and it.proposed["filter"] == "(amount / 100.0) > 100"
    sm.accept(cat, it, author="ann", now=elk.day(5), time=elk.day(5.1))
    m = next(a for a in sm.read_annotations(cat, T) if a.key == "metric.spend")
    assert (m.value["expression"], m.value["unit"]) == ("SUM(amount / 100.0)", "USD")


def test_a_metric_after_new_loads_in_cents_beside_older_rows_gets_no_rewrite(elk):
    """Control: only a new load is in cents; the older rows kept dollars: what to look at, no rewrite."""
    cat, _old = _spend(elk)
    elk.append(T, {"d": ["2024-11-15"] * 4, "amount": [0, 23000, 98000, 61000]}, at=5)
    f = [x for x in sm.staleness(cat, T, now=elk.day(5), merge=False) if x.annotation == "metric.spend"]
    assert f and all(x.action != "update_unit" for g in f for x in g.fixes), f


def test_a_metric_on_a_column_restated_in_hundreds_in_place_gets_the_rewrite_too(elk):
    """Every row of the column restated x10^-2 in place (cents written as dollars), the same rows, a later
    load in the new unit widening the range past a clean scale of the whole table's: the rewrite check offered the metric `investigate` where the unit drift check offers `update_unit` (held-out
    cryptic 2702 of session 31, read after its scoring: kna1_h's recognized revenue; failed before)."""
    cat = elk.cat
    t = T + "_d"
    rows = {"d": [f"2024-11-1{i}" for i in range(4) for _ in range(3)],
            "amount": [1250.0, 98000.0, 43010.0, 1200.0, 87000.0, 45050.0, 3100.0, 99990.0, 41020.0, 1500.0, 88800.0,
                       40400.0]}
    elk.table(t, [("d", "date"), ("amount", "double")], partition_by=["d"], at=0, rows=dict(rows))
    sm.annotate(cat, t, {"unit": "cents"}, column="amount", author="a", time=elk.day(0.5))
    sm.define_metric(cat, t, "spend", expression="sum(amount)", unit="USD", author="a", time=elk.day(0.6))
    elk.overwrite(t, {"d": rows["d"], "amount": [a / 100 for a in rows["amount"]]}, at=2)
    elk.append(t, {"d": ["2024-11-14"] * 3, "amount": [3.5, 1210.0, 455.0]}, at=3)  # a later load widens the range
    got = {f.annotation: f.fixes for f in sm.staleness(cat, t, now=elk.day(3), merge=False) if f.reason == "unit_drift"}
    assert got["metric.spend"] == [Fix(action="update_unit", params={"column": "amount", "scale": -2})], got
