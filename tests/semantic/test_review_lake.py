"""The review loop on the stale Acme lake (issue 38, item 3): accept is offered only for a fix
validated against the snapshot, accept and edit are validated again when they commit, one cause is
decided at once (bulk by group), and two reviewers of one item get one winner and one conflict.

The lake is the session fixture `lake_dir` (SEMCAT_EVAL_LAKE=DIR reuses a built one); each test
works on its own copy, never on the shared directory."""

from __future__ import annotations

import threading

import pytest

import catalog_core as cc
import semantic as sm
from catalog_core import lake as L
from eval.lake import D0

WEB = "acme.core.fct_web_sessions"
ORDERS = "acme.core.fct_orders"
DAILY = "acme.mart.agg_daily_store_revenue"

pytestmark = pytest.mark.slow  # the Acme lake (a Spark build unless SEMCAT_EVAL_LAKE names one); 15-40 s each


def _items(cat, table):
    return sm.review_items(cat, table, now=D0, limit=500, kind="finding").items


def test_accepting_a_relationship_on_a_dropped_column_is_refused(stale):
    """(a) fct_web_sessions.customer_id was dropped at d-20: no relationship.customer item may certify
    a join on it; forcing accept is refused with the reason and the join_key_missing finding stays."""
    rel = [i for i in _items(stale, WEB) if i.annotation == "relationship.customer"]
    assert rel, "the stale relationship raises review items"
    before = stale.latest_vid
    for it in rel:
        if it.acceptable:  # offered only when the written relationship holds of the data
            assert "customer_id" not in str(it.proposed["on"]), it
        else:
            assert it.why_not, it
            with pytest.raises(cc.errors.InvalidValueError) as e:
                sm.accept(stale, it, author="alice", now=D0)
            assert "accept is not offered" in e.value.message or "edit" in e.value.message
    assert stale.latest_vid == before or all(i.acceptable for i in rel)
    reasons = {f.reason for f in sm.staleness(stale, WEB, now=D0, merge=False) if f.annotation == "relationship.customer"}
    assert "join_key_missing" in reasons


def test_editing_a_relationship_back_onto_the_dropped_column_is_refused_at_commit(stale):
    it = next(i for i in _items(stale, WEB) if i.annotation == "relationship.customer")
    bad = {"to": "acme.core.dim_customer", "on": [["customer_id", "customer_id"]], "cardinality": "many_to_one"}
    with pytest.raises(sm.ReviewRefusedError) as e:
        sm.edit_and_accept(stale, it, author="alice", value=bad, now=D0)
    assert "customer_id" in e.value.message and e.value.details["why"] == "column_missing"
    good = {"to": "acme.core.dim_customer", "on": [["customer_uuid", "customer_uuid"]], "cardinality": "many_to_one",
            "condition": "acme.core.dim_customer.is_current"}
    vid = sm.edit_and_accept(stale, it, author="alice", value=good, now=D0)
    got = stale.get(L.semantic_path(WEB, "relationship.customer"))
    assert got.vid == vid and got.value["value"]["on"] == [["customer_uuid", "customer_uuid"]]


def test_the_restated_status_enum_is_never_recertified(stale):
    """(b) after returned -> refunded, no accept writes an enum with "returned"; an edit that does is refused."""
    enum = [i for i in _items(stale, ORDERS) if i.annotation == "column.7.enum"]
    assert enum
    for it in enum:
        assert not (it.acceptable and "returned" in (it.proposed or [])), it
        if not it.acceptable:
            with pytest.raises(cc.errors.InvalidValueError):
                sm.accept(stale, it, author="alice", now=D0)
    it = enum[0]
    with pytest.raises(sm.ReviewRefusedError) as e:
        sm.edit_and_accept(stale, it, author="alice", now=D0,
                           value=["placed", "shipped", "delivered", "cancelled", "returned"])
    assert "returned" in e.value.message and e.value.details["why"] == "enum_mismatch"
    now = ["cancelled", "delivered", "partially_refunded", "placed", "refunded", "shipped"]
    sm.edit_and_accept(stale, it, author="alice", value=now, now=D0)
    assert sorted(stale.get(L.semantic_path(ORDERS, "column.7.enum")).value["value"]) == now


def test_a_restatement_is_one_finding_and_one_group(stale):
    merged = [f for f in sm.staleness(stale, ORDERS, now=D0) if f.reason == "values_restated"]
    assert len(merged) == 1
    f = merged[0]
    assert {"column.7.enum", "column.7.sample_values", "column.7.description", "metric.returned_orders"} <= \
        set(f.annotations)
    assert "returned" in f.evidence.values["before_only"] and f.evidence.values["map"].get("returned") == "refunded"
    # the group: the table's items and the copies on other tables of a verified query naming the old value
    every = sm.review_items(stale, now=D0, limit=500, kind="finding").items
    items = [i for i in every if i.group == f.cause]
    assert len([i for i in items if i.table == ORDERS]) >= 4
    res = sm.decide_group(stale, f.cause, "dismiss", "alice", reason="restated on purpose", now=D0)
    assert {d["item"] for d in res["decided"]} == {i.id for i in items} and not res["skipped"]
    assert not [i for i in _items(stale, ORDERS) if i.group == f.cause]


def test_bulk_accept_writes_only_validated_fixes_and_revalidates_at_commit(stale):
    """The three relationships to dim_customer broken by its SCD2 rebuild are one group; accepting it
    writes the is_current filter where the join then keeps many_to_one."""
    every = sm.review_items(stale, now=D0, limit=500, kind="finding").items
    rel = [i for i in every if i.annotation == "relationship.customer" and i.reason == "cardinality_violated"]
    groups = {i.group for i in rel}
    assert len(groups) == 1 and None not in groups
    group = groups.pop()
    members = {i.id: i for i in every if i.group == group}
    assert {i.table for i in members.values()} >= {"acme.core.dim_customer", ORDERS, WEB}  # one cause, many tables
    res = sm.decide_group(stale, group, "accept", "alice", now=D0)
    assert res["decided"] and {d["item"] for d in res["decided"]} | {s["item"] for s in res["skipped"]} == set(members)
    for d in res["decided"]:
        it = members[d["item"]]
        if it.annotation == "relationship.customer":
            got = stale.get(L.semantic_path(it.table, "relationship.customer"))
            assert "is_current" in got.value["value"]["condition"] and got.vid == d["vid"]
    for s in res["skipped"]:  # never written: its fix does not hold of the data (e.g. a join column gone)
        assert not members[s["item"]].acceptable and s["why"]
    assert any(members[s["item"]].table == WEB for s in res["skipped"])


def test_accept_is_validated_again_inside_the_commit(stale):
    # a move that writes onto the new column (net_revenue_usd has no role: the cents column's fills it;
    # the dollars columns' own descriptions are never overwritten, issue 45)
    it = next(i for i in _items(stale, DAILY) if i.acceptable and i.reason == "column_renamed"
              and i.proposed_key and i.proposed_key.startswith("column."))
    new_col = it.fixes[0].params["new"]
    path = L.table_path(DAILY)
    with stale.transaction(author="etl", message="drop a column") as txn:  # the schema moves after the listing
        v = dict(txn.get(path).value)
        v["schema"] = {**v["schema"], "columns": [c for c in v["schema"]["columns"] if c["name"] != new_col]}
        txn.update(path, v)
    with pytest.raises(cc.errors.InvalidValueError) as e:
        sm.accept(stale, it, author="alice", now=D0)
    assert new_col in e.value.message


def test_two_reviewers_accepting_one_item_one_wins(stale):
    it = next(i for i in _items(stale, DAILY) if i.acceptable and i.reason == "column_renamed")
    barrier = threading.Barrier(2)
    results: list[object] = []

    def go(who: str) -> None:
        barrier.wait()
        try:
            results.append(sm.accept(stale, it, author=who, now=D0))
        except cc.ConflictError as e:
            results.append(e)

    ts = [threading.Thread(target=go, args=(w,)) for w in ("alice", "bob")]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    wins = [r for r in results if isinstance(r, int)]
    lost = [r for r in results if isinstance(r, cc.ConflictError)]
    assert len(wins) == 1 and len(lost) == 1, results
    assert isinstance(lost[0], sm.ReviewConflictError) and "list the items again" in lost[0].message


def test_one_item_shown_is_the_item_listed(stale):
    """`review_item` previews the write of the item asked for only (the others' writes, verified queries
    re-run among them, are not needed to find it): what it shows is what the listing shows, for every
    item of the stale lake (acceptable, refused, no-fix, verified queries re-run)."""
    listed = sm.review_items(stale, now=D0, limit=500).items
    assert len(listed) >= 10 and any(i.acceptable for i in listed) and any(i.why_not for i in listed)
    assert any(i.proposed is not None and i.annotation and i.annotation.startswith("verified_query.") for i in listed)
    for it in listed:
        assert sm.review_item(stale, it.id, now=D0).model_dump() == it.model_dump(), it.id
