"""The review repairs a verified query (issue 45; testers on all three lakes in rounds 12 and 13 asked
for it): its SQL rewritten for a renamed column (`rename`) or respelled values (`value_map`), written
only when, across the change, the rewritten query answers what the verified one answered just before
it, on every table the query reads. Before: accept refused both ("cannot be renamed automatically",
"names restated values")."""

from __future__ import annotations

import pytest

import semantic as sm
from catalog_core.errors import InvalidValueError
from semantic._requery import mapped_sql, renamed_sql
from semantic.errors import InvalidAnnotationError
from tests.semantic.test_staleness import DIM, T


def _lake(elk) -> None:
    elk.table(DIM, [("customer_id", "bigint"), ("tier", "string")], at=0,
              rows={"customer_id": [1, 2, 3], "tier": ["a", "b", "a"]})
    elk.table(T, [("order_id", "bigint"), ("customer_id", "bigint"), ("amount", "bigint"), ("status", "string")],
              at=0, rows={"order_id": [1, 2, 3, 4], "customer_id": [1, 2, 3, 1], "amount": [10, 20, 30, 40],
                          "status": ["open", "open", "done", "done"]})


SQL = ("SELECT d.tier, sum(o.amount) AS total FROM acme.core.t o JOIN acme.core.dim d "
       "ON o.customer_id = d.customer_id WHERE o.status = 'done' GROUP BY d.tier")


def _vq(cat, table):
    return next(a for a in sm.read_annotations(cat, table) if a.kind == "verified_query")


def test_a_renamed_column_is_rewritten_in_the_query_and_verified_again_on_every_table(elk):
    cat = elk.cat
    _lake(elk)
    sm.verify_query(cat, "amount of done orders per tier", SQL, author="ann", time=elk.day(0.5))
    before = _vq(cat, T)
    elk.evolve(T, rename={"amount": "amount_usd"}, at=1)
    [it] = [i for i in sm.review_items(cat, T, now=elk.day(1)).items if i.annotation == before.key]
    assert it.acceptable, it.why_not
    assert "on acme.core.dim too" in (it.suggestion or "")
    sm.accept(cat, it, author="bob", now=elk.day(1), time=elk.day(1.1))
    for table in (T, DIM):
        q = _vq(cat, table)
        assert q.key == before.key and "sum(o.amount_usd)" in q.value["sql"].lower(), q.value["sql"]
        assert q.value["verified_by"] == "bob" and q.value["verified_at_vid"] > before.value["verified_at_vid"]
        assert q.value["result_fingerprint"] == before.value["result_fingerprint"]  # the same rows: renamed only
    assert not [f for f in sm.staleness(cat, T, now=elk.day(1)) if f.annotation == before.key]


def test_a_rename_that_came_with_other_values_is_refused(elk):
    """The same rename, but the commit also rewrote the values: the rewritten query answers otherwise
    across it, so nothing is written and the reason says so."""
    cat = elk.cat
    _lake(elk)
    sm.verify_query(cat, "amount of done orders per tier", SQL, author="ann", time=elk.day(0.5))
    elk.evolve(T, rename={"amount": "amount_usd"}, at=1,
               rows={"order_id": [1, 2, 3, 4], "customer_id": [1, 2, 3, 1], "amount_usd": [1, 2, 3, 4],
                     "status": ["open", "open", "done", "done"]})
    items = [i for i in sm.review_items(cat, T, now=elk.day(1)).items if i.annotation == _vq(cat, T).key]
    assert items and not any(i.acceptable for i in items)
    assert any(i.refused == "answer_moved" for i in items), [(i.reason, i.why_not) for i in items]
    assert "amount)" in _vq(cat, T).value["sql"]  # untouched


def test_a_respelled_value_is_restated_in_the_query(elk):
    cat = elk.cat
    _lake(elk)
    sm.verify_query(cat, "amount of done orders per tier", SQL, author="ann", time=elk.day(0.5))
    before = _vq(cat, T)
    elk.overwrite(T, {"order_id": [1, 2, 3, 4], "customer_id": [1, 2, 3, 1], "amount": [10, 20, 30, 40],
                      "status": ["OPEN", "OPEN", "DONE", "DONE"]}, at=1)
    items = [i for i in sm.review_items(cat, T, now=elk.day(1)).items
             if i.annotation == before.key and any(x.action == "value_map" for x in i.fixes)]
    assert items, [(i.reason, i.fixes, i.why_not) for i in sm.review_items(cat, T, now=elk.day(1)).items]
    assert items[0].acceptable, items[0].why_not
    sm.accept(cat, items[0], author="bob", now=elk.day(1), time=elk.day(1.1))
    q = _vq(cat, T)
    assert "'DONE'" in q.value["sql"] and "'done'" not in q.value["sql"], q.value["sql"]
    assert q.value["result_fingerprint"] == before.value["result_fingerprint"]


def test_renamed_sql_resolves_each_column_to_its_table():
    cols = {"acme.core.t": {"order_id", "amount", "customer_id"}, "acme.core.dim": {"customer_id", "tier"}}
    # a bare selected column keeps its output name; a qualified one of another table is left alone
    got = renamed_sql("SELECT amount, c.customer_id FROM acme.core.t o JOIN acme.core.dim c "
                      "ON o.customer_id = c.customer_id", "acme.core.dim", "customer_id", "cust_id", cols)
    assert got == ("SELECT amount, c.cust_id AS customer_id FROM acme.core.t AS o JOIN acme.core.dim AS c "
                   "ON o.customer_id = c.cust_id"), got
    got = renamed_sql("WITH x AS (SELECT amount FROM acme.core.t) SELECT sum(amount) FROM x",
                      "acme.core.t", "amount", "amount_usd", cols)
    assert got == "WITH x AS (SELECT amount_usd AS amount FROM acme.core.t) SELECT SUM(amount) FROM x", got
    # unqualified, and both tables have it: no rule says which
    with pytest.raises(InvalidValueError, match="more than one table"):
        renamed_sql("SELECT customer_id FROM acme.core.t, acme.core.dim", "acme.core.t",
                    "customer_id", "cid", cols)


def test_mapped_sql_respells_only_what_is_compared_with_the_column():
    got = mapped_sql("SELECT count(*) FROM t WHERE status IN ('done', 'x') AND note = 'done'", "status",
                     {"done": "DONE"})
    assert got == "SELECT COUNT(*) FROM t WHERE status IN ('DONE', 'x') AND note = 'done'", got
    with pytest.raises(InvalidValueError, match="compares status with none"):
        mapped_sql("SELECT count(*) FROM t WHERE note = 'done'", "status", {"done": "DONE"})


def test_a_query_asked_of_a_table_replaced_by_its_copy_is_asked_of_the_copy(elk):
    """The payments table stops; a new table begins as a copy of its rows and takes its loads: the
    verified query asked of the old table alone gets `repoint`, and accept writes it reading the new
    table (the same answer at the copy's first load), stored there, its copy on the old table gone.
    The control, a successor holding none of the old days, is in test_staleness_replacement_loads."""
    from tests.semantic.test_staleness_replacement_loads import PAY, PAY_V2, PCOLS, _payments

    cat = elk.cat
    elk.table(PAY, PCOLS, at=0)
    sm.annotate(cat, PAY, {"description": "card payments, one row per attempt"}, author="a", time=elk.day(0.5))
    sm.verify_query(cat, "How much was paid?", f"SELECT sum(amount) AS paid FROM {PAY}", author="a",
                    time=elk.day(0.7))
    for d in range(1, 34):
        if d < 30:
            elk.append(PAY, _payments(d), at=d + 0.3)
        elif d == 30:  # the copy, then its own first day
            days = [_payments(x) for x in range(1, 30)]
            elk.table(PAY_V2, PCOLS, at=d + 0.2, rows={c: [v for p in days for v in p[c]] for c in days[0]})
            elk.append(PAY_V2, _payments(d), at=d + 0.3)
        else:
            elk.append(PAY_V2, _payments(d), at=d + 0.3)
    key = _vq(cat, PAY).key
    [it] = [i for i in sm.review_items(cat, PAY, now=elk.day(33.5)).items if i.annotation == key]
    assert [x.action for x in it.fixes] == ["repoint"] and it.acceptable, (it.fixes, it.why_not)
    sm.accept(cat, it, author="bob", now=elk.day(33.5), time=elk.day(33.6))
    assert key not in {a.key for a in sm.read_annotations(cat, PAY)}
    q = _vq(cat, PAY_V2)
    assert q.key == key and q.value["tables"] == [PAY_V2], q.value
    assert q.value["sql"] == f"SELECT SUM(amount) AS paid FROM {PAY_V2} AS payments", q.value["sql"]
    import catalog_core as cc
    [[paid]] = cc.run_sql(cat, f"SELECT sum(amount) FROM {PAY_V2}").rows
    assert float(paid) == float(sum(sum(_payments(d)["amount"]) for d in range(1, 34)))


def test_a_verified_querys_item_outlives_the_accept_of_the_enum_it_was_read_against(elk):
    """'EXPRESS' merged into 'NEXT DAY': the enum gets its value_map and the query grouping by the type
    `reverify` (its answer has no EXPRESS group now). Accepting the enum's map rewrote what metadata read
    the query's groups against, and the query's item vanished, its answer still not the one verified
    (the round-15 TPC-DS tester's ship modes). The data-depth pass stores the query's finding its answer
    confirms, so the item stays until the query is verified again or dismissed."""
    cat = elk.cat
    S, F = "acme.core.ship", "acme.core.sales"
    elk.table(S, [("sm_sk", "bigint"), ("sm_type", "string")], at=0)
    elk.overwrite(S, {"sm_sk": [1, 2, 3], "sm_type": ["EXPRESS", "REGULAR", "NEXT DAY"]}, at=0.2)
    elk.table(F, [("sale_id", "bigint"), ("sm_sk", "bigint"), ("amount", "bigint")], at=0.3)
    elk.append(F, {"sale_id": list(range(30)), "sm_sk": [1 + i % 3 for i in range(30)], "amount": list(range(30))},
               at=0.4)
    sm.annotate(cat, S, {"grain": {"text": "one row per ship mode", "keys": ["sm_sk"]}}, author="a", time=elk.day(0.5))
    sm.annotate(cat, S, {"enum": ["EXPRESS", "REGULAR", "NEXT DAY"]}, column="sm_type", author="a", time=elk.day(0.55))
    sm.verify_query(cat, "sales by ship mode type", f"SELECT s.sm_type, sum(f.amount) FROM {F} f JOIN {S} s "
                    "ON f.sm_sk = s.sm_sk GROUP BY s.sm_type", author="a", time=elk.day(0.6))
    elk.overwrite(S, {"sm_sk": [1, 2, 3], "sm_type": ["NEXT DAY", "REGULAR", "NEXT DAY"]}, at=1)
    sm.scan(cat, author="steward", now=elk.day(1.1), time=elk.day(1.2))
    items = sm.review_items(cat, S, now=elk.day(1.2)).items
    key = _vq(cat, S).key
    assert {i.annotation for i in items} == {"column.2.enum", key}
    [it] = [i for i in items if i.annotation == "column.2.enum"]
    sm.accept(cat, it, author="bob", now=elk.day(1.2), time=elk.day(1.3))
    after = sm.review_items(cat, S, now=elk.day(1.3)).items
    assert [(i.annotation, i.reason) for i in after] == [(key, "verified_query_changed")], after


def test_a_person_repairs_a_broken_query_by_editing_its_sql_which_is_run_and_verified(elk):
    """A verified query whose column was dropped offers `reverify`, and accept is refused; the refusal said
    "run verify_query", a Python name, and `review edit` with the corrected SQL was refused because the
    value lacked the fingerprint only a run gives (wave 5, session 31): a person could not repair it. The
    edit is the SQL (or {"sql", "question"}), run and verified at the current snapshot, written on every
    table it reads; a corrected query that fails is refused and nothing is written."""
    cat = elk.cat
    _lake(elk)
    sm.verify_query(cat, "amount of done orders per tier", SQL, author="ann", time=elk.day(0.5))
    before = _vq(cat, T)
    elk.evolve(T, drop=["amount"], add=[("amount_usd", "double")], at=1)
    [it] = [i for i in sm.review_items(cat, T, now=elk.day(1)).items if i.annotation == before.key]
    assert not it.acceptable and "semcat review edit ITEM" in (it.why_not or "") and "verify_query" not in it.why_not
    vid = cat.resolve(None)
    with pytest.raises(InvalidAnnotationError, match="does not run(.|\n)*nothing was written"):
        sm.edit_and_accept(cat, it.id, author="bob", value=SQL, now=elk.day(1), time=elk.day(1.1))
    with pytest.raises(InvalidAnnotationError, match="give its corrected SQL"):
        sm.edit_and_accept(cat, it.id, author="bob", value={"question": "q"}, now=elk.day(1), time=elk.day(1.1))
    assert cat.resolve(None) == vid
    fixed = SQL.replace("o.amount", "o.amount_usd")
    sm.edit_and_accept(cat, it.id, author="bob", value=fixed, now=elk.day(1), time=elk.day(1.1))
    for table in (T, DIM):  # stored once per table it reads, as verify_query stores it
        v = _vq(cat, table).value
        assert v["sql"] == fixed and v["question"] == before.value["question"] and v["verified_by"] == "bob"
        assert v["verified_at_vid"] == vid and v["result_fingerprint"] != before.value["result_fingerprint"]
    assert not [i for i in sm.review_items(cat, T, now=elk.day(1.2)).items if i.annotation == before.key]
