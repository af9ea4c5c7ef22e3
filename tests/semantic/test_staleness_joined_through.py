"""keys_joins: what rests on a join whose key moved to a new format. A metric that reads a column of a
related table (through the relationship's join) and a verified query whose SQL joins on the key are
flagged with the relationship: their answers drop the rows the join no longer matches."""

from __future__ import annotations

import semantic as sm
from semantic.models import Fix
from tests.semantic.test_staleness import DIM, T, _orders_and_dim, relate


def _setup(elk):
    cat = elk.cat
    _orders_and_dim(elk)
    relate(cat, T, DIM, [("customer_id", "customer_id")], at=elk.day(1))
    sm.define_metric(cat, T, "tier_a_orders", expression="count(*)", filter="dim.tier = 'a'", author="a",
                     time=elk.day(1.1))
    sm.define_metric(cat, T, "orders", expression="count(*)", author="a", time=elk.day(1.2))  # joins nothing
    sm.verify_query(cat, "orders per tier", "SELECT d.tier, count(*) FROM acme.core.t o JOIN acme.core.dim d "
                    "ON d.customer_id = o.customer_id GROUP BY d.tier ORDER BY d.tier", author="a", time=elk.day(1.3))
    return cat


def _joined(findings):
    return sorted((f.annotation, f.reason, f.status, tuple(f.fixes)) for f in findings
                  if f.annotation and not f.annotation.startswith("relationship"))


def test_metric_and_verified_query_on_a_key_restated_in_a_new_format(elk):
    cat = _setup(elk)
    vq = next(a.key for a in sm.read_annotations(cat, T) if a.kind == "verified_query")
    # control: the related table restated with its keys as they were, the fact table loaded as usual
    elk.overwrite(DIM, {"customer_id": [1, 2, 3, 4], "customer_uuid": ["u1", "u2", "u3", "u4"],
                        "tier": ["a", "b", "a", "b"]}, at=2)
    elk.append(T, {"order_id": [14], "customer_id": [4]}, at=2.5)
    assert _joined(sm.staleness(cat, T, now=elk.day(2.5), merge=False)) == []
    # the related table's key restated + 10^9: the join matches none of the fact's rows
    elk.overwrite(DIM, {"customer_id": [1000000001, 1000000002, 1000000003, 1000000004],
                        "customer_uuid": ["u1", "u2", "u3", "u4"], "tier": ["a", "b", "a", "b"]}, at=3)
    f = sm.staleness(cat, T, now=elk.day(3), merge=False)
    assert _joined(f) == [("metric.tier_a_orders", "join_match_low", "suspect", ()),
                          (vq, "join_match_low", "suspect", (Fix(action="reverify", params={}),))]
    msg = next(x.message for x in f if x.annotation == "metric.tier_a_orders")
    assert "customer_id" in msg and DIM in msg and "share no range" in msg
    on_dim = sm.staleness(cat, DIM, now=elk.day(3), merge=False)
    assert (vq, "join_match_low") in {(x.annotation, x.reason) for x in on_dim}  # the query is stored on both


def test_metric_on_fact_keys_loaded_in_a_new_format_and_data_depth(elk):
    cat = _setup(elk)
    elk.append(T, {"order_id": [15, 16], "customer_id": [9000001, 9000002]}, at=3)
    for depth in ("metadata", "data"):
        got = {(x.annotation, x.reason) for x in sm.staleness(cat, T, depth=depth, now=elk.day(3), merge=False)}
        assert ("metric.tier_a_orders", "join_match_low") in got, depth
        assert ("metric.orders", "join_match_low") not in got, depth


def test_a_referenced_table_extended_beyond_the_fact_is_no_broken_join(elk):
    """Control (no relationship declared): the side whose values were inside the other's when the query
    was verified is the one that looks up keys (on the same range, the side whose grain is the other's
    key); the other side gaining keys beyond it (a date dimension filled ahead, new customers with no
    orders yet) leaves the join matching every row."""
    cat = elk.cat
    _orders_and_dim(elk)
    sm.annotate(cat, DIM, {"grain": {"text": "one row per customer", "keys": ["customer_id"]}}, author="a",
                time=elk.day(0.5))
    vq = sm.verify_query(cat, "orders per tier", "SELECT d.tier, count(*) FROM acme.core.t o JOIN acme.core.dim d "
                         "ON d.customer_id = o.customer_id GROUP BY d.tier ORDER BY d.tier", author="a", time=elk.day(1))
    assert vq
    elk.append(DIM, {"customer_id": [70, 80], "customer_uuid": ["u7", "u8"], "tier": ["a", "b"]}, at=2)
    assert [x for x in sm.staleness(cat, T, now=elk.day(2), merge=False) if x.reason == "join_match_low"] == []
    assert [x for x in sm.staleness(cat, DIM, now=elk.day(2), merge=False) if x.reason == "join_match_low"] == []
    elk.append(T, {"order_id": [20], "customer_id": [5000]}, at=3)  # the fact now looks up keys the dimension lacks
    got = [x for x in sm.staleness(cat, DIM, now=elk.day(3), merge=False) if x.reason == "join_match_low"]
    assert [(x.evidence.values["from"], x.fixes[0].action) for x in got] == [(T, "reverify")]


def test_rows_removed_from_the_related_table_flag_the_metrics_reading_through_the_join_at_data_depth(elk):
    """The related table rewritten without some of its rows (a category removed): the fact rows that joined
    them find no match now, and a metric reading the related table through the join silently leaves them
    out: join_match_low, suspect, no fix, at data depth where the match rate fell below MATCH_LOW since the
    metric was defined (failed before: only the relationship was flagged). Controls: a metric joining
    nothing; the rewrite that keeps every key; a join that matched as poorly when the metric was defined."""
    cat = _setup(elk)
    elk.overwrite(DIM, {"customer_id": [1, 2, 3], "customer_uuid": ["u1", "u2", "u3"], "tier": ["a", "b", "a"]}, at=2)
    assert _joined(sm.staleness(cat, T, depth="data", now=elk.day(2), merge=False)) == []
    elk.overwrite(DIM, {"customer_id": [2, 3], "customer_uuid": ["u2", "u3"], "tier": ["b", "a"]}, at=3)  # 1 gone
    f = sm.staleness(cat, T, depth="data", now=elk.day(3), merge=False)
    assert ("relationship.dim", "join_match_low") in {(x.annotation, x.reason) for x in f}
    assert [x for x in _joined(f) if x[0].startswith("metric.")] == [("metric.tier_a_orders", "join_match_low",
                                                                      "suspect", ())]
    msg = next(x.message for x in f if x.annotation == "metric.tier_a_orders")
    assert "50.0%" in msg and DIM in msg
    assert not [x for x in sm.staleness(cat, T, now=elk.day(3), merge=False) if x.annotation == "metric.tier_a_orders"]
    # a metric defined after the rows were gone rests on the join as it was then: nothing fell since
    sm.define_metric(cat, T, "tier_b_orders", expression="count(*)", filter="dim.tier = 'b'", author="a",
                     time=elk.day(3.5))
    assert not [x for x in sm.staleness(cat, T, depth="data", now=elk.day(4), merge=False)
                if x.annotation == "metric.tier_b_orders"]
