"""A dropped column's own annotations (issue 45): the column is gone and no column took its place, so
the finding's fix is `remove {column}`; accept removes the annotation and writes nothing, bulk accept
includes it, and accept is refused when the table holds a column of that name again (the claim may
describe it). Runs on the embedded catalog and over HTTP (the `cat` fixture)."""

from __future__ import annotations

import pytest

import catalog_core as cc
import semantic as sm
from eval.fixtures.lakes import LakeBuilder
from semantic.annotations import read_annotations
from semantic.models import Fix

T = "acme.core.t"


def base(lk: LakeBuilder) -> None:
    lk.table(T, [("id", "bigint"), ("kind", "string"), ("amount_cents", "bigint")], at=0,
             rows={"id": [1, 2, 3], "kind": ["a", "b", "a"], "amount_cents": [1000, 25000, 4000]})


def keys(cat) -> set[str]:
    return {a.key for a in read_annotations(cat, T)}


def dropped_items(cat, now):
    return {i.annotation: i for i in sm.review_items(cat, T, now=now).items if i.reason == "column_dropped"}


def test_a_dropped_columns_annotations_are_removed_by_accept_and_by_accept_all(cat, lk):
    base(lk)
    sm.annotate(cat, T, {"description": "the kind of order", "enum": ["a", "b"]}, column="kind", author="ann",
                time=lk.day(1))
    sm.annotate(cat, T, {"description": "money, in cents"}, column="amount_cents", author="ann", time=lk.day(1))
    lk.evolve(T, drop=["kind"], at=2)
    items = dropped_items(cat, lk.day(2))
    assert set(items) == {"column.2.description", "column.2.enum"}
    for it in items.values():  # failed before: no fix, accept refused (no_fix)
        assert it.fixes == [Fix(action="remove", params={"column": "kind"})]
        assert it.acceptable and it.proposed is None and "its column is gone" in (it.suggestion or "")
    vid = sm.accept(cat, items["column.2.description"], author="alice", now=lk.day(2), time=lk.day(3))
    now = keys(cat)
    assert "column.2.description" not in now and "column.2.enum" in now
    assert "column.3.description" in now  # the other column's claim is left alone
    rec = {a.key: a for a in read_annotations(cat, T)}["review." + items["column.2.description"].id]
    assert rec.value["decision"] == "accepted" and rec.value["written_key"] is None and rec.vid == vid
    # history keeps what was removed
    assert "column.2.description" in {a.key for a in read_annotations(cat, T, vid=vid - 1)}
    out = sm.accept_all(cat, author="alice", table=T, now=lk.day(3), time=lk.day(4))
    assert [d["item"] for d in out["decided"]] == [items["column.2.enum"].id], out
    assert not {"column.2.description", "column.2.enum"} & keys(cat)
    assert not [f for f in sm.staleness(cat, T, now=lk.day(4)) if f.reason == "column_dropped"]


def test_removal_is_refused_when_a_column_of_that_name_is_back_and_an_edit_writes_nothing(cat, lk):
    base(lk)
    sm.annotate(cat, T, {"description": "the kind of order"}, column="kind", author="ann", time=lk.day(1))
    lk.evolve(T, drop=["kind"], at=2)
    it = dropped_items(cat, lk.day(2))["column.2.description"]
    assert it.acceptable
    with pytest.raises(cc.errors.InvalidValueError):  # no column to write a person's value onto
        sm.edit_and_accept(cat, it, author="alice", value="the kind", now=lk.day(2), time=lk.day(3))
    lk.evolve(T, add=[("kind", "string")], at=3)  # added again: the claim may describe the new column
    with pytest.raises(cc.errors.InvalidValueError, match="holds a column 'kind' again"):
        sm.accept(cat, it, author="alice", now=lk.day(2), time=lk.day(4))
    assert "column.2.description" in keys(cat)  # nothing was removed


def test_no_removal_when_the_commit_that_dropped_it_added_a_column_of_its_kind(cat, lk):
    """Control: amount_cents dropped in a rebuild that added fee_cents (an integer too, values that do not
    continue it: no rename). Whether the claim moves to the new column is a person's call: no fix, accept
    refused (no_fix)."""
    base(lk)
    sm.annotate(cat, T, {"description": "money, in cents"}, column="amount_cents", author="ann", time=lk.day(1))
    lk.evolve(T, add=[("fee_cents", "bigint")], drop=["amount_cents"], at=2,
              rows={"id": [1, 2, 3], "kind": ["a", "b", "a"], "fee_cents": [7, 3, 9]})
    it = dropped_items(cat, lk.day(2))["column.3.description"]
    assert it.fixes == [] and not it.acceptable and it.refused == "no_fix"


LTV = "acme.mart.ltv"


def test_accepting_new_grain_keys_says_them_in_the_grains_text(cat, lk):
    """A monthly snapshot appended beside the last one: the grain's keys take the snapshot's month
    (`set_keys`), and accept writes the text with it said beside what it said ("one row per customer, per
    as_of_month"), never the new keys under "one row per customer" (failed before: two round-11 testers'
    accept-all wrote the keys and kept the text, which the data contradicts)."""
    ids = [1, 2, 3, 4, 5, 6]
    lk.table(LTV, [("customer_id", "bigint"), ("as_of_month", "date"), ("ltv_cents", "bigint")], at=0,
             rows={"customer_id": ids, "as_of_month": ["2025-02-28"] * 6, "ltv_cents": [100, 250, 40, 990, 75, 310]})
    sm.annotate(cat, LTV, {"grain": {"text": "One row per customer.", "keys": ["customer_id"]}}, author="ann",
                time=lk.day(0.5))
    lk.append(LTV, {"customer_id": ids, "as_of_month": ["2025-03-31"] * 6, "ltv_cents": [130, 260, 55, 1200, 75, 400]},
              at=1)
    sm.scan(cat, author="steward", now=lk.day(1), time=lk.at(1.2))
    [it] = [i for i in sm.review_items(cat, LTV, now=lk.day(1)).items if i.annotation == "table.grain"]
    assert it.fixes[0].action == "set_keys" and it.fixes[0].params["keys"] == ["customer_id", "as_of_month"]
    assert it.proposed == {"text": "One row per customer, per as_of_month.", "keys": ["customer_id", "as_of_month"]}
    sm.accept(cat, it, author="steward", now=lk.day(1), time=lk.day(1.5))
    grain = {a.key: a.value for a in read_annotations(cat, LTV)}["table.grain"]
    assert grain == {"text": "One row per customer, per as_of_month.", "keys": ["customer_id", "as_of_month"]}


D = "acme.core.d"


def _related(cat, lk: LakeBuilder) -> None:
    """T joins D on kind = code; D's code is unique."""
    base(lk)
    lk.table(D, [("code", "string"), ("label", "string")], at=0, rows={"code": ["a", "b"], "label": ["A", "B"]})
    sm.relate(cat, T, D, on=[("kind", "code")], cardinality="many_to_one", author="ann", time=lk.day(1))


def rel_items(cat, now):
    return {i.annotation: i for i in sm.review_items(cat, T, now=now).items
            if (i.annotation or "").startswith("relationship.")}


def test_a_relationship_from_a_dropped_column_is_removed_by_accept(cat, lk):
    """A relationship joining from a column that was dropped, with no column taking its place, relates
    nothing the table holds: `remove {column}`, accept removes it (failed before: no fix, accept refused;
    the round-12 Acme tester's fct_web_sessions.converted_order_id, "remove: no column to join on")."""
    _related(cat, lk)
    lk.evolve(T, drop=["kind"], at=2)
    [it] = rel_items(cat, lk.day(2)).values()
    assert it.reason == "join_key_missing" and it.fixes == [Fix(action="remove", params={"column": "kind"})]
    assert it.acceptable and it.proposed is None
    sm.accept(cat, it, author="alice", now=lk.day(2), time=lk.day(3))
    assert not {k for k in keys(cat) if k.startswith("relationship.")}
    assert not [f for f in sm.staleness(cat, T, now=lk.day(3)) if f.reason == "join_key_missing"]


def test_no_removal_of_a_relationship_when_a_column_of_its_kind_was_added_or_its_target_key_dropped(cat, lk):
    """Controls: the key dropped in a rebuild that added another text column (whether it holds the keys now is a
    person's call): no remove; the related table's key dropped (the join may move to its new key): no remove."""
    _related(cat, lk)
    lk.evolve(T, add=[("kind_code", "string")], drop=["kind"], at=2,
              rows={"id": [1, 2, 3], "amount_cents": [1000, 25000, 4000], "kind_code": ["x", "y", "x"]})
    assert all(x.action != "remove" for it in rel_items(cat, lk.day(2)).values() for x in it.fixes)
    lk2 = "acme.core.t2"
    lk.table(lk2, [("id", "bigint"), ("code", "string")], at=3, rows={"id": [1], "code": ["a"]})
    sm.relate(cat, lk2, D, on=[("code", "code")], cardinality="many_to_one", author="ann", time=lk.day(3.1))
    lk.evolve(D, drop=["code"], at=4)
    got = [f for f in sm.staleness(cat, lk2, now=lk.day(4), merge=False) if f.annotation and
           f.annotation.startswith("relationship.")]
    assert got and all(x.action != "remove" for f in got for x in f.fixes), got
