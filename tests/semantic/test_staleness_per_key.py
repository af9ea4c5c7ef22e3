"""documented_ranges at data depth (issue 45): a description documenting how many rows a key has
("payment attempts, one to three per order") while new loads give some key more (a retry policy of
five attempts). A round-6 independent tester's miss on the Acme lake (fct_payments). A small lake of
its own, with controls."""

from __future__ import annotations

import semantic as sm
from semantic.staleness.documented_ranges import per_key_bounds

P = "acme.core.payments"


def _flagged(cat, now):
    return {f.annotation: f for f in sm.staleness(cat, P, depth="data", now=now, merge=False)
            if (f.cause or "").startswith("per_key:")}


def test_more_attempts_per_order_than_the_description_documents_and_controls(elk):
    cat = elk.cat
    elk.table(P, [("payment_id", "bigint"), ("order_id", "bigint"), ("attempt_no", "int")], at=0)
    rows = [(o, a) for o in range(1, 31) for a in range(1, 1 + (1 + o % 3))]
    elk.append(P, {"payment_id": list(range(len(rows))), "order_id": [o for o, _ in rows],
                   "attempt_no": [a for _, a in rows]}, at=1)
    sm.annotate(cat, P, {"description": "Payment attempts, one to three per order."}, author="a", time=elk.day(1.5))
    elk.append(P, {"payment_id": [900, 901, 902], "order_id": [31, 31, 32], "attempt_no": [1, 2, 1]}, at=2)
    assert _flagged(cat, elk.day(2.5)) == {}  # a routine load within the documented count
    elk.append(P, {"payment_id": [910 + i for i in range(5)], "order_id": [40] * 5, "attempt_no": [1, 2, 3, 4, 5]},
               at=3)
    f = _flagged(cat, elk.day(3.5))["table.description"]
    assert f.reason == "range_exceeded" and f.status == "stale" and f.fixes == []
    assert f.evidence.values == {"column": "order_id", "documented_max": 3, "max_now": 5, "keys_over": 1}


def test_the_counts_a_description_documents_per_key():
    assert per_key_bounds("one to three per order") == [(3, "order")]
    assert per_key_bounds("1-3 attempts per order; up to two shipments per order") == [(3, "order"), (2, "order")]
    assert per_key_bounds("one row per order") == []  # the grain's words: the grain checks read them


def test_the_most_rows_a_key_may_have_said_as_what_it_may_do():
    """"An order may ship in two" documents at most two shipments per order (failed before: read as no
    count; the round-9 Acme tester's fct_shipments, six orders shipped in three). A duration is no count
    of rows: "may ship in two days"."""
    assert per_key_bounds("Shipments of web orders; an order may ship in two.") == [(2, "order")]
    assert per_key_bounds("a customer can hold up to three cards") == [(3, "customer")]
    assert per_key_bounds("an order may ship in two days; an order may ship in 2 business days") == []
    assert per_key_bounds("an order may ship in time") == []


def test_shipments_beyond_what_an_order_may_ship_in(elk):
    """The shipments table's description says an order may ship in two; a load ships one order in three:
    range_exceeded on the description (stale, no fix). Controls: a load within it; an order's two
    shipments each re-sent as a new row (the grain's keys repeat: four rows, two shipments; the grain's
    own finding says so, the text counts shipments; failed before: flagged, the round-9 cryptic tester's
    carrier feed re-sending delivered shipments)."""
    cat = elk.cat
    s = "acme.core.shipments"
    elk.table(s, [("shipment_id", "bigint"), ("order_id", "bigint")], at=0)
    elk.append(s, {"shipment_id": list(range(40)), "order_id": [o // 2 if o % 4 == 0 else o for o in range(40)]}, at=1)
    sm.annotate(cat, s, {"description": "Shipments of web orders; an order may ship in two.",
                         "grain": {"text": "one row per shipment", "keys": ["shipment_id"]}}, author="a",
                time=elk.day(1.5))
    elk.append(s, {"shipment_id": [100, 101, 100, 101], "order_id": [200, 200, 200, 200]}, at=2)
    got = [f for f in sm.staleness(cat, s, depth="data", now=elk.day(2.5), merge=False)
           if f.reason in ("range_exceeded", "grain_violated")]
    assert [(f.annotation, f.reason) for f in got] == [("table.grain", "grain_violated")], got
    elk.append(s, {"shipment_id": [110, 111, 112], "order_id": [300, 300, 300]}, at=3)
    f = [f for f in sm.staleness(cat, s, depth="data", now=elk.day(3.5), merge=False) if f.reason == "range_exceeded"]
    assert [(x.annotation, x.status, x.fixes, x.evidence.values["max_now"]) for x in f] == [
        ("table.description", "stale", [], 3)]
