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
