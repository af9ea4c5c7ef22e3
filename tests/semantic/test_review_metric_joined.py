"""Accepting a fix on a metric whose filter names a column of a joined table: the review validates the
new value by running it as `metric_sql` joins it (failed before: refused, "Referenced table ... not found",
the validation ran the expression on the metric's table alone; the round-13 cryptic tester's rename of a
metric filtering the orders table)."""

from __future__ import annotations

import semantic as sm
from tests.semantic.test_staleness import DIM, T


def _tier_metric(elk) -> None:
    """Orders related to customers, a metric summing the orders of the customers of tier 'a' (`dim.tier`)."""
    elk.table(DIM, [("customer_id", "bigint"), ("tier", "string"), ("region", "string")], at=0,
              rows={"customer_id": [1, 2, 3], "tier": ["a", "b", "a"], "region": ["n", "s", "n"]})
    elk.table(T, [("order_id", "bigint"), ("customer_id", "bigint"), ("amount", "bigint")], at=0,
              rows={"order_id": [1, 2, 3], "customer_id": [1, 2, 3], "amount": [10, 20, 30]})
    sm.relate(elk.cat, T, DIM, on=[("customer_id", "customer_id")], cardinality="many_to_one", author="a",
              time=elk.day(0.5))
    sm.define_metric(elk.cat, T, "tier_a_amount", expression="sum(amount)", filter="dim.tier = 'a'", author="a",
                     time=elk.day(0.6))


def test_a_rename_on_a_metric_filtering_a_joined_table_is_accepted(elk):
    cat = elk.cat
    _tier_metric(elk)
    elk.evolve(T, rename={"amount": "amount_usd"}, at=1)
    [it] = [i for i in sm.review_items(cat, T, now=elk.day(1)).items if i.annotation == "metric.tier_a_amount"]
    assert it.acceptable, it.why_not
    sm.accept(cat, it, author="ann", now=elk.day(1), time=elk.day(1.1))
    m = next(a for a in sm.read_annotations(cat, T) if a.key == "metric.tier_a_amount")
    assert m.value["expression"] == "sum(amount_usd)" and m.value["filter"] == "dim.tier = 'a'"
    # control: a value that does not run on the joined tables either is still refused
    from semantic.review import _joined_metric_sql
    assert _joined_metric_sql(cat, T, "metric.x", {"expression": "sum(nope)", "filter": None}, cat.resolve(None)) \
        is None


def test_a_metric_filtering_a_joined_tables_column_renamed_since_is_flagged_and_renamed(elk):
    """The joined table renames the column the metric's filter names (`dim.tier` -> `tier_code`): the
    metric no longer compiles. It is flagged `column_renamed` with `rename`, one cause with the rename,
    and accept writes the filter with the new name (failed before: nothing flagged, and the metric still
    failed after accept-all; the round-15 cryptic tester's three `bkpf_t` metrics filtering
    `zsd01.blart`). Control: a column of the joined table the metric does not name, renamed."""
    cat = elk.cat
    _tier_metric(elk)
    elk.evolve(DIM, rename={"region": "region_code"}, at=0.8)
    assert [f for f in sm.staleness(cat, T, now=elk.day(0.9), merge=False) if f.annotation == "metric.tier_a_amount"] \
        == []  # the control
    v = elk.evolve(DIM, rename={"tier": "tier_code"}, at=1)
    [f] = [f for f in sm.staleness(cat, T, now=elk.day(1), merge=False) if f.annotation == "metric.tier_a_amount"]
    assert (f.reason, f.status, f.cause) == ("column_renamed", "stale", f"rename:{DIM}@{v}:tier")
    assert [(x.action, x.params) for x in f.fixes] == [("rename", {"old": "tier", "new": "tier_code", "scale": 0})]
    [it] = [i for i in sm.review_items(cat, T, now=elk.day(1)).items if i.annotation == "metric.tier_a_amount"]
    assert it.acceptable, it.why_not
    sm.accept(cat, it, author="ann", now=elk.day(1), time=elk.day(1.1))
    m = next(a for a in sm.read_annotations(cat, T) if a.key == "metric.tier_a_amount")
    assert m.value["filter"] == "dim.tier_code = 'a'", m.value
