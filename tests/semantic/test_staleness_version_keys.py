"""grain and keys_joins at data depth on a dimension that began keeping versions (SCD2) with a key
given to each version (a surrogate key, unique over every row): a relationship joining that key still
matches each row once (no finding, and accept never adds the current flag to it, which would drop the
rows joined to past versions); the grain's keys hold, its text may not (suspect, no fix); a metric
aggregating every row now counts the past versions. An independent tester's TPC-DS copy (wave 5,
session 22): the customer dimension made type-2 with a new c_customer_sk per version; the store sales'
join got the current flag from accept-all and dropped 7,426 rows."""

from __future__ import annotations

import semantic as sm
from semantic.models import Fix
from tests.semantic.test_staleness import DIM, T, relate

N = 40


def _setup(elk, past: bool = True):
    """DIM keyed by customer_sk (grain) with the natural customer_id; T's rows join customer_sk; then DIM
    made SCD2: with `past`, 5 customers get a second version under a new customer_sk (the old row
    closed), else every row is the current and only version."""
    cat = elk.cat
    elk.table(DIM, [("customer_sk", "bigint"), ("customer_id", "bigint"), ("preferred", "string")], at=0,
              rows={"customer_sk": list(range(1, N + 1)), "customer_id": list(range(101, 101 + N)),
                    "preferred": ["Y", "N"] * (N // 2)})
    elk.table(T, [("order_id", "bigint"), ("customer_sk", "bigint")], at=0,
              rows={"order_id": list(range(200)), "customer_sk": [i % N + 1 for i in range(200)]})
    sm.annotate(cat, DIM, {"grain": {"text": "one row per customer", "keys": ["customer_sk"]}}, author="a",
                time=elk.day(1))
    sm.define_metric(cat, DIM, "preferred_customers", expression="count(*)", filter="preferred = 'Y'", author="a",
                     time=elk.day(1.1))
    relate(cat, T, DIM, [("customer_sk", "customer_sk")], at=elk.day(1.2))
    k = 5 if past else 0
    rows = {"customer_sk": list(range(1, N + 1)) + list(range(N + 1, N + 1 + k)),
            "customer_id": list(range(101, 101 + N)) + list(range(101, 101 + 2 * k, 2)),
            "preferred": ["Y", "N"] * (N // 2) + ["Y"] * k,
            "valid_from": ["2024-01-01"] * N + ["2024-11-14"] * k,
            "valid_to": [("2024-11-14" if i < 2 * k and i % 2 == 0 else None) for i in range(N)] + [None] * k,
            "is_current": [not (i < 2 * k and i % 2 == 0) for i in range(N)] + [True] * k}
    elk.evolve(DIM, add=[("valid_from", "date"), ("valid_to", "date"), ("is_current", "boolean")], at=3, rows=rows)
    return cat


def _data(cat, elk, table):
    return {(f.annotation, f.reason): f for f in sm.staleness(cat, table, depth="data", now=elk.day(4), merge=False)}


def test_a_join_on_a_key_each_version_has_stays_true_and_the_grain_text_is_suspect(elk):
    cat = _setup(elk)
    assert ("relationship.dim", "cardinality_violated") not in _data(cat, elk, T)
    got = _data(cat, elk, DIM)
    g = got[("table.grain", "grain_violated")]
    assert g.status == "suspect" and g.fixes == [] and g.evidence.values["past_versions"] == 5
    assert "identifies a version" in g.message
    m = got[("metric.preferred_customers", "grain_violated")]
    # the current rows keep the one row per customer it was written over (51da5b6: investigate before)
    assert m.evidence.values["past_versions"] == 5 and m.fixes == [Fix(action="filter",
                                                                       params={"table": DIM, "column": "is_current"})]


def test_version_keys_control_no_past_version_yet_keeps_the_suspicion(elk):
    """Control: the dimension keeps versions but none is past yet: the relationship and the grain keep
    the SCD2 suspicion with its filter (the next change of a row adds a version); the metric is quiet."""
    cat = _setup(elk, past=False)
    flt = [Fix(action="filter", params={"table": DIM, "column": "is_current"})]
    assert _data(cat, elk, T)[("relationship.dim", "cardinality_violated")].fixes == flt
    got = _data(cat, elk, DIM)
    assert got[("table.grain", "grain_violated")].fixes == flt
    assert ("metric.preferred_customers", "grain_violated") not in got


def test_accept_never_adds_the_current_flag_to_a_join_on_a_version_key(elk):
    """At metadata depth the relationship is suspect with the filter (the statistics cannot say whether
    the key identifies versions); accepting it is refused at commit: the condition would drop the rows
    joined to past versions (failed before: written)."""
    cat = _setup(elk)
    items = [i for i in sm.review_items(cat, T, now=elk.day(4), kind="finding").items
             if i.annotation == "relationship.dim"]
    assert items and items[0].fixes[0].action == "filter"
    assert not items[0].acceptable and items[0].refused == "condition_drops", items[0]
    assert "drop" in (items[0].why_not or "")
    rel = next(a for a in sm.read_annotations(cat, T) if a.key == "relationship.dim")
    assert not rel.value.get("condition")
