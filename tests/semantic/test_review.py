"""The review loop (semantic.review, issue 27 item 1): accept / dismiss / edit of findings and agent
annotations, a dismissed finding returning when the history moves again, two reviewers racing, the
provenance policy (an agent over a human annotation is a proposal) and dbt imports leaving certified
human annotations alone. Runs on the embedded catalog and over HTTP (the `cat` fixture)."""

from __future__ import annotations

import threading

import pytest

import catalog_core as cc
import semantic as sm
from eval.fixtures.lakes import LakeBuilder
from semantic.annotations import read_annotations

from .test_import_dbt import CUST, ORD, lake, manifest  # noqa: F401  (the module-scoped real-dbt fixture)

T = "acme.core.t"


def base(lk: LakeBuilder) -> None:
    lk.table(T, [("id", "bigint"), ("kind", "string"), ("amount_cents", "bigint")], at=0,
             rows={"id": [1, 2, 3], "kind": ["a", "b", "a"], "amount_cents": [1000, 25000, 4000]})


def by_key(cat, table=T):
    return {a.key: a for a in read_annotations(cat, table)}


def item_of(cat, reason, table=T, now=None):
    items = [i for i in sm.review_items(cat, table, now=now).items if i.reason == reason]
    assert len(items) == 1, items
    return items[0]


def test_accept_a_rename_writes_the_suggested_annotation_as_human(cat, lk):
    base(lk)
    sm.annotate(cat, T, {"description": "money, in cents"}, column="amount_cents", author="ann", time=lk.day(1))
    lk.evolve(T, add=[("amount", "bigint")], drop=["amount_cents"], at=2,
              rows={"id": [1, 2, 3], "kind": ["a", "b", "a"], "amount": [1000, 25000, 4000]})
    it = item_of(cat, "column_renamed", now=lk.day(2))
    assert it.kind == "finding" and it.acceptable and it.id.startswith("f-")
    assert it.proposed == "money, in cents" and it.proposed_key == "column.4.description"
    assert sm.review_item(cat, it.id, now=lk.day(2)).id == it.id  # stable at the same vid
    vid = sm.accept(cat, it, author="alice", note="checked", now=lk.day(2), time=lk.day(3))
    anns = by_key(cat)
    new = anns["column.4.description"]
    assert "column.3.description" not in anns  # the orphan is replaced, not left behind
    assert new.vid == vid and new.column == "amount" and new.provenance.source == "human"
    assert new.provenance.author == "alice" and new.provenance.note == "checked"
    assert new.provenance.basis.vid == vid - 1  # basis: the state the reviewer accepted on
    assert not [f for f in sm.staleness(cat, T, now=lk.day(3)) if f.reason == "column_renamed"]
    assert by_key(cat)["review." + it.id].value["decision"] == "accepted"
    with pytest.raises(cc.errors.NotFoundError, match="no open review item"):
        sm.review_item(cat, it.id, now=lk.day(3))


def test_dismissed_finding_returns_when_the_history_changes_again(cat, lk):
    base(lk)
    sm.annotate(cat, T, {"description": "orders"}, author="ann", time=lk.day(1))
    lk.evolve(T, add=[("note", "string")], drop=["kind"], at=2)  # a drop: an added nullable column alone is routine
    it = item_of(cat, "schema_changed", now=lk.day(2))
    with pytest.raises(cc.errors.InvalidValueError, match="reason must say why"):
        sm.dismiss(cat, it, author="alice", reason=" ")
    sm.dismiss(cat, it, author="alice", reason="a new optional column, the description holds", time=lk.day(3))
    assert not [f for f in sm.staleness(cat, T, now=lk.day(3)) if f.reason == "schema_changed"]
    assert not [i for i in sm.review_items(cat, T, now=lk.day(3)).items if i.reason == "schema_changed"]
    lk.append(T, {"id": [4], "amount_cents": [5], "note": ["x"]}, at=4)  # a load: not a schema change
    assert not [f for f in sm.staleness(cat, T, now=lk.day(4)) if f.reason == "schema_changed"]
    v = lk.evolve(T, add=[("channel", "string")], drop=["note"], at=5)  # the history changes again
    again = [f for f in sm.staleness(cat, T, now=lk.day(5)) if f.reason == "schema_changed"]
    assert len(again) == 1 and v in again[0].evidence.vids
    assert item_of(cat, "schema_changed", now=lk.day(5)).id == it.id  # the same finding, raised again


def test_edit_and_accept_writes_the_corrected_value(cat, lk):
    base(lk)
    sm.annotate(cat, T, {"description": "orders"}, author="ann", time=lk.day(1))
    lk.evolve(T, add=[("note", "string")], drop=["kind"], at=2)  # a drop: an added nullable column alone is routine
    it = item_of(cat, "schema_changed", now=lk.day(2))
    # no fix: accept is not offered (it would re-certify what the finding says may be false)
    assert it.proposed is None and not it.acceptable and it.refused == "no_fix"
    sm.edit_and_accept(cat, it, author="bob", value="orders, with a free-text note", time=lk.day(3))
    a = by_key(cat)["table.description"]
    assert a.value == "orders, with a free-text note" and a.provenance.author == "bob"
    assert not [f for f in sm.staleness(cat, T, now=lk.day(3)) if f.reason == "schema_changed"]


def test_two_reviewers_racing_one_wins_the_other_gets_a_conflict(cat, lk):
    base(lk)
    sm.annotate(cat, T, {"description": "orders"}, author="ann", time=lk.day(1))
    lk.evolve(T, add=[("note", "string")], drop=["kind"], at=2)  # a drop: an added nullable column alone is routine
    it = item_of(cat, "schema_changed", now=lk.day(2))
    results: dict[str, object] = {}
    go = threading.Barrier(2)

    def review(who: str, act) -> None:
        go.wait()
        try:
            results[who] = act()
        except cc.errors.ConflictError as e:
            results[who] = e

    threads = [threading.Thread(target=review, args=("alice", lambda: sm.edit_and_accept(cat, it, author="alice",
                                                                                         value="orders, noted"))),
               threading.Thread(target=review, args=("bob", lambda: sm.dismiss(cat, it, author="bob", reason="fine")))]
    [t.start() for t in threads]
    [t.join() for t in threads]
    lost = [r for r in results.values() if isinstance(r, cc.errors.ConflictError)]
    won = [r for r in results.values() if isinstance(r, int)]
    assert len(lost) == 1 and len(won) == 1, results
    assert isinstance(lost[0], sm.ReviewConflictError) and "list the items again" in str(lost[0]), lost[0]
    decision = by_key(cat)["review." + it.id]
    assert decision.vid == won[0]
    # the loser acting again on what it read gets the same clear error, nothing written
    latest = cat.resolve(None)
    with pytest.raises(cc.errors.ConflictError, match="list the items again"):
        sm.edit_and_accept(cat, it, author="alice", value="orders, noted")
    assert cat.resolve(None) == latest


def test_agent_over_human_is_a_proposal_not_a_replacement(cat, lk):
    base(lk)
    sm.annotate(cat, T, {"grain": {"text": "one row per order", "keys": ["id"]}, "certified": True}, author="ann",
                time=lk.day(1))
    sm.annotate(cat, T, {"grain": "order"}, author="agent:claude", source="agent", confidence=0.7, time=lk.day(2))
    grain = by_key(cat)["table.grain"]
    assert grain.value == {"text": "one row per order", "keys": ["id"]} and grain.provenance.author == "ann"
    card = sm.describe(cat, T, now=lk.day(2))
    assert card.annotations["grain"].value["keys"] == ["id"] and not card.annotations["grain"].unreviewed
    props = sm.review_items(cat, T, kind="proposal", now=lk.day(2)).items
    assert len(props) == 1 and props[0].annotation == "table.grain"
    assert props[0].current["keys"] == ["id"] and props[0].proposed == {"text": "order", "keys": []}
    sm.dismiss(cat, props[0], author="ann", reason="the keys matter", time=lk.day(3))
    assert not sm.review_items(cat, T, kind="proposal", now=lk.day(3)).items
    assert "proposal.table.grain" not in by_key(cat)
    # an agent annotation where there was none is written, shown unreviewed until accepted
    sm.annotate(cat, T, {"description": "the kind of order"}, column="kind", author="agent:claude", source="agent",
                confidence=0.6, time=lk.day(4))
    card = sm.describe(cat, T, now=lk.day(4))
    kind = next(c for c in card.columns if c.name == "kind")
    assert kind.annotations["description"].unreviewed
    it = sm.review_items(cat, T, kind="agent_annotation", now=lk.day(4)).items[0]
    sm.accept(cat, it.id, author="ann", now=lk.day(4), time=lk.day(5))
    kind = next(c for c in sm.describe(cat, T, now=lk.day(5)).columns if c.name == "kind")
    assert not kind.annotations["description"].unreviewed
    assert kind.annotations["description"].author == "ann"
    # a rejected agent annotation disappears from the agents' view
    sm.annotate(cat, T, {"unit": "cents"}, column="amount_cents", author="agent:claude", source="agent",
                time=lk.day(6))
    it = sm.review_items(cat, T, kind="agent_annotation", now=lk.day(6)).items[0]
    sm.dismiss(cat, it, author="ann", reason="wrong", time=lk.day(7))
    amt = next(c for c in sm.describe(cat, T, now=lk.day(7)).columns if c.name == "amount_cents")
    assert "unit" not in amt.annotations


def test_review_list_is_bounded_with_a_cursor(cat, lk):
    base(lk)
    for i, col in enumerate(("id", "kind", "amount_cents")):
        sm.annotate(cat, T, {"description": f"c{i}"}, column=col, author="agent:x", source="agent", time=lk.day(1 + i))
    first = sm.review_items(cat, T, limit=2)
    assert len(first.items) == 2 and first.truncated and first.total == 3
    rest = sm.review_items(cat, T, limit=2, cursor=first.next_cursor)
    assert len(rest.items) == 1 and not rest.truncated and rest.next_cursor is None
    assert {i.id for i in first.items + rest.items} == {i.id for i in sm.review_items(cat, T).items}
    with pytest.raises(cc.errors.InvalidValueError, match="limit must be"):
        sm.review_items(cat, T, limit=0)
    with pytest.raises(cc.errors.InvalidValueError, match="next_cursor"):
        sm.review_items(cat, T, cursor="bogus")


def test_dbt_import_leaves_certified_human_annotations_alone(ecat, elk, manifest):  # noqa: F811
    lake(elk)
    sm.annotate(ecat, CUST, {"description": "Customers as finance counts them.", "certified": True}, author="ann")
    sm.annotate(ecat, ORD, {"description": "Orders, by hand."}, author="ann")
    dry = sm.import_dbt(ecat, manifest, catalog="acme", dry_run=True)
    assert any(k.startswith(f"{CUST}:table.description (human by ann)") for k in dry.kept), dry.kept
    assert any(r.startswith(f"{ORD}:table.description (human by ann)") for r in dry.replaced), dry.replaced
    assert f"{CUST}:table.description" not in dry.written and dry.vid is None
    res = sm.import_dbt(ecat, manifest, catalog="acme")
    assert by_key(ecat, CUST)["table.description"].value == "Customers as finance counts them."
    assert by_key(ecat, ORD)["table.description"].provenance.source == "import"
    assert res.kept == dry.kept
    forced = sm.import_dbt(ecat, manifest, catalog="acme", overwrite=True)
    assert f"{CUST}:table.description" in forced.written
    assert by_key(ecat, CUST)["table.description"].value == "One row per customer."


def test_an_edited_value_is_checked_like_annotate(cat, lk):
    base(lk)
    sm.annotate(cat, T, {"grain": {"text": "one row per id", "keys": ["id"]}}, author="ann", time=lk.day(1))
    lk.evolve(T, add=[("note", "string")], retype={"id": "string"}, at=2)  # the key retyped: the grain may change
    it = item_of(cat, "column_type_changed", now=lk.day(2))
    before = cat.resolve(None)
    with pytest.raises(cc.errors.InvalidValueError, match="not a column|nope"):
        sm.edit_and_accept(cat, it, author="bob", value={"text": "x", "keys": ["nope"]})
    assert cat.resolve(None) == before
    # a new nullable column added to the keys is not a grain (issue 45): refused, nothing written
    with pytest.raises(sm.ReviewRefusedError, match="never null"):
        sm.edit_and_accept(cat, it, author="bob", value=["id", "note"], time=lk.day(3))
    assert cat.resolve(None) == before
    sm.edit_and_accept(cat, it, author="bob", value=["id"], time=lk.day(3))
    assert by_key(cat)["table.grain"].value == {"text": "", "keys": ["id"]}
