"""The catalog's instructions (issue 45): prose every agent reads before any table, checked against what the
tables' own checks found. Three round-5/6 independent testers counted a catalog sentence false ("dollars in
columns ending _usd" after a feed sent cents into spend_usd; "orders whose status is not cancelled" after
the OMS spelled it 'canceled'; "sum of bkpf_t.ntgew_2" after it began to include tax) and nothing was
flagged: the detector read table annotations only. A small lake of its own; each rule with its control."""

from __future__ import annotations

import pytest

import semantic as sm
from catalog_core.errors import InvalidValueError
from eval.fixtures.lakes import LakeBuilder
from semantic import review as rv
from semantic.annotations import read_annotations
from semantic.staleness.instructions import sentences

S, ORD = "acme.core.spend", "acme.core.fct_orders"
TEXT = ("Acme lake. Money is integer cents in columns ending _cents and dollars in columns ending _usd. "
        "Revenue is the sum of fct_orders.amount_cents / 100 over orders whose status is not cancelled. "
        "Use acme.core.spend (spend_usd, channel) for marketing.")
SPEND = [120.5, 80.25, 310.0, 95.75, 150.0, 60.5, 240.0, 175.25, 88.0, 132.5]


def _lake(elk: LakeBuilder) -> None:
    cat = elk.cat
    elk.table(S, [("d", "date"), ("channel", "string"), ("spend_usd", "decimal(12,2)")], partition_by=["d"], at=0)
    elk.table(ORD, [("d", "date"), ("order_id", "bigint"), ("status", "string"), ("amount_cents", "bigint")],
              partition_by=["d"], at=0)
    for day in range(1, 5):
        elk.append(S, {"d": [f"2024-11-0{day}"] * 5, "channel": ["a", "b", "c", "a", "b"],
                       "spend_usd": SPEND[(day % 2) * 5:(day % 2) * 5 + 5]}, at=day)
        elk.append(ORD, {"d": [f"2024-11-0{day}"] * 5, "order_id": [10 * day + i for i in range(5)],
                       "status": ["placed", "shipped", "cancelled", "shipped", "placed"],
                       "amount_cents": [1200, 3400, 560, 7800, 990]}, at=day)
    sm.annotate(cat, S, {"unit": "USD", "description": "spend in dollars"}, column="spend_usd", author="a",
                time=elk.day(4.2))
    sm.annotate(cat, ORD, {"enum": ["placed", "shipped", "cancelled"]}, column="status", author="a", time=elk.day(4.3))
    sm.annotate(cat, "acme", {"instructions": TEXT}, author="a", time=elk.day(4.4))


def _inst(cat, now, depth="metadata"):
    return [f for f in sm.staleness(cat, now=now, depth=depth, merge=False) if f.annotation == "instructions"]


def _cents_load(elk: LakeBuilder, day: int) -> int:
    return elk.append(S, {"d": [f"2024-11-{day:02d}"] * 5, "channel": ["a", "b", "c", "a", "b"],
                          "spend_usd": [x * 100 for x in SPEND[:5]]}, at=day)


def test_a_suffix_convention_is_stale_when_a_column_with_the_suffix_changes_unit_and_control(elk):
    """A feed sends cents into spend_usd: the column's unit is stale, and so is the catalog's "dollars in
    columns ending _usd" (failed before: only the column's claims). Control: a routine load in dollars."""
    cat = elk.cat
    _lake(elk)
    elk.append(S, {"d": ["2024-11-05"] * 5, "channel": ["a", "b", "c", "a", "b"], "spend_usd": SPEND[5:]}, at=5)
    assert _inst(cat, elk.day(5.5)) == []
    v = _cents_load(elk, 6)
    got = _inst(cat, elk.day(6.5))
    assert [(f.target, f.annotation, f.reason, f.status) for f in got] == [
        ("acme", "instructions", "unit_drift", "stale")]
    f = got[0]
    said = f.evidence.values["contradicted"]
    assert [(c["rule"], c["table"], c["column"]) for c in said] == [("suffix", S, "spend_usd")]
    assert "ending _usd" in said[0]["sentence"] and v in f.evidence.vids
    unit = next(x for x in sm.staleness(cat, S, now=elk.day(6.5), merge=False) if x.annotation.endswith(".unit"))
    assert f.cause == unit.cause and [x.action for x in f.fixes] == ["investigate"]


def test_a_value_the_instructions_filter_on_respelled_and_control(elk):
    """The OMS spells 'cancelled' as 'canceled' in a restatement: the revenue sentence ("orders whose
    status is not cancelled") is stale at data depth. Control: a new value the sentence does not name."""
    cat = elk.cat
    _lake(elk)
    rows = {"d": [], "order_id": [], "status": [], "amount_cents": []}
    for day in range(1, 5):
        rows["d"] += [f"2024-11-0{day}"] * 5
        rows["order_id"] += [10 * day + i for i in range(5)]
        rows["status"] += ["placed", "shipped", "cancelled", "shipped", "returned" if day == 4 else "placed"]
        rows["amount_cents"] += [1200, 3400, 560, 7800, 990]
    elk.overwrite(ORD, rows, at=5)
    assert _inst(cat, elk.day(5.5), "data") == []
    elk.overwrite(ORD, {**rows, "status": ["canceled" if s == "cancelled" else s for s in rows["status"]]}, at=6)
    got = _inst(cat, elk.day(6.5), "data")
    assert [(c["rule"], c["table"], c["column"]) for f in got for c in f.evidence.values["contradicted"]] == [
        ("value", ORD, "status")]
    assert "not cancelled" in got[0].evidence.values["contradicted"][0]["sentence"]


def test_a_column_replaced_by_one_named_for_its_new_unit_leaves_the_convention_true(elk):
    """spend_usd restated as spend_cents (x100, the old column dropped): the column's claims move with a
    rename of scale 2, and the convention still holds for every column the table has (the new one is named for
    its cents). Failed before: the instructions' finding named spend_usd, which no longer exists (held-out
    Acme 1701 and 1703: `discount_cents` restated as `discount_usd`)."""
    cat = elk.cat
    _lake(elk)
    rows = {"d": [], "channel": [], "spend_cents": []}
    for day in range(1, 5):
        rows["d"] += [f"2024-11-0{day}"] * 5
        rows["channel"] += ["a", "b", "c", "a", "b"]
        rows["spend_cents"] += [int(x * 100) for x in SPEND[(day % 2) * 5:(day % 2) * 5 + 5]]
    elk.evolve(S, add=[("spend_cents", "bigint")], drop=["spend_usd"], at=5, rows=rows)
    moved = [f for f in sm.staleness(cat, S, now=elk.day(5.5), merge=False) if f.annotation
             and f.annotation.endswith(".unit")]
    assert moved and moved[0].fixes[0].action == "rename"
    assert [c for f in _inst(cat, elk.day(5.5)) for c in f.evidence.values["contradicted"] if c["rule"] == "suffix"] \
        == []


def test_a_named_column_renamed_gets_the_rename_and_accept_rewrites_the_text(elk):
    """A column the instructions name with its table (`acme.core.spend (spend_usd, ...)`) renamed:
    the rename fix, and accept rewrites that name in the catalog's text, nothing else in it. Control: a
    column of the same table the text does not name, renamed."""
    cat = elk.cat
    _lake(elk)
    elk.evolve(S, rename={"channel": "medium"}, at=5)  # named: 'channel' in the parentheses
    got = _inst(cat, elk.day(5.5))
    assert [(f.reason, [x.model_dump() for x in f.fixes]) for f in got] == [
        ("column_renamed", [{"action": "rename", "params": {"old": "channel", "new": "medium", "table": S}}])]
    item = next(i for i in rv.review_items(cat, now=elk.day(5.5), limit=500).items if i.annotation == "instructions")
    assert item.table == "acme" and item.acceptable, item.why_not
    assert item.proposed == TEXT.replace("channel)", "medium)")
    rv.accept(cat, item.id, author="steward", now=elk.day(5.5), time=elk.day(5.5))
    now = {a.key: a.value for a in read_annotations(cat, "acme")}["instructions"]
    assert now == TEXT.replace("channel)", "medium)")
    assert _inst(cat, elk.day(5.6)) == []


def test_a_named_column_dropped_is_refused_at_accept_edit_and_dismiss(elk):
    """A column the text names dropped: no fix (a person rewrites the sentence). Accept is refused and bulk
    accept leaves it; edit writes the person's text; a later drop raises it again, and dismiss records it."""
    cat = elk.cat
    _lake(elk)
    elk.evolve(S, drop=["channel"], at=5)
    got = _inst(cat, elk.day(5.5))
    assert [(f.reason, f.status, [x.action for x in f.fixes]) for f in got] == [
        ("column_dropped", "stale", ["investigate"])]
    item = next(i for i in rv.review_items(cat, now=elk.day(5.5), limit=500).items if i.annotation == "instructions")
    assert not item.acceptable and item.refused == "no_fix"
    with pytest.raises(InvalidValueError):
        rv.accept(cat, item.id, author="steward", now=elk.day(5.5), time=elk.day(5.5))
    rv.accept_all(cat, author="steward", now=elk.day(5.5), time=elk.day(5.5))
    assert {a.key: a.value for a in read_annotations(cat, "acme")}["instructions"] == TEXT
    fixed = TEXT.replace("(spend_usd, channel)", "(spend_usd)")
    rv.edit_and_accept(cat, item.id, author="steward", value=fixed, now=elk.day(5.5), time=elk.day(5.52))
    assert {a.key: a.value for a in read_annotations(cat, "acme")}["instructions"] == fixed
    assert _inst(cat, elk.day(5.6)) == []
    v = _cents_load(elk, 6)  # a new contradiction: raised, then dismissed
    item = next(i for i in rv.review_items(cat, now=elk.day(6.5), limit=500).items if i.annotation == "instructions")
    assert v in item.evidence_vids
    rv.dismiss(cat, item.id, author="steward", reason="the feed is fixed tomorrow", now=elk.day(6.5),
               time=elk.day(6.5))
    assert _inst(cat, elk.day(6.6)) == []


def test_sentences_and_controls_no_claim_no_finding(elk):
    """A sentence ends at a period followed by a word, not inside a dotted name. Controls: a catalog with
    no instructions, and a column renamed that the text names only as a bare word ('channel' is prose)."""
    assert sentences("Use acme.core.spend (a, b). Money in cents; dollars in _usd.") == [
        "Use acme.core.spend (a, b).", "Money in cents", "dollars in _usd."]
    cat = elk.cat
    _lake(elk)
    sm.annotate(cat, "acme", {"instructions": "Acme lake. Every channel is a marketing channel."}, author="a",
                time=elk.day(4.5))
    elk.evolve(S, rename={"channel": "medium"}, at=5)
    _cents_load(elk, 6)
    assert _inst(cat, elk.day(6.5)) == []


def test_a_zone_convention_is_checked_on_columns_no_claim_of_their_own_describes(elk):
    """"Columns ending _utc are UTC timestamps" claims what every such column holds, described or not. A
    column with no annotation (`attempted_at_utc`) gets New York time in its latest loads: the zone checks run
    on the convention's claim, and the instructions are stale, at data depth (failed before: nothing; nothing
    described the column). What the check found on the column stays hidden (no item, no card finding, in the
    stored pass as the instructions' evidence). Control: the same loads in UTC."""
    import datetime as dt
    import random

    from semantic.staleness.instructions import is_hidden

    rng = random.Random(5)
    peak = [10, 10, 9, 9, 7, 3, 1, 0.3, 0.2, 0.1, 0.1, 0.1, 1, 2, 3, 4, 5, 6, 6, 7, 7, 8, 9, 10]
    t0 = dt.datetime(2024, 11, 1, tzinfo=dt.timezone.utc)
    P = "acme.core.payments"

    def day(n, shift=0.0, rows=40):
        hours = rng.choices(range(24), weights=peak, k=rows)
        return {"d": [f"2024-11-{n:02d}"] * rows, "payment_id": [1000 * n + i for i in range(rows)],
                "attempted_at_utc": [t0 + dt.timedelta(days=n - 1, hours=h + rng.random() + shift) for h in hours]}

    cat = elk.cat
    elk.table(P, [("d", "date"), ("payment_id", "bigint"), ("attempted_at_utc", "timestamp")], partition_by=["d"],
              at=0)
    sm.annotate(cat, "acme", {"instructions": "Acme lake. Columns ending _utc are UTC timestamps."}, author="a",
                time=elk.day(0.5))
    for n in range(1, 13):
        elk.append(P, day(n), at=n)
    sm.annotate(cat, P, {"description": "card payment attempts"}, author="a", time=elk.day(12.5))
    elk.append(P, day(13), at=13)
    assert _inst(cat, elk.day(13.5), "data") == []  # control: a load in UTC
    elk.append(P, day(14, shift=-5.0), at=14)
    elk.append(P, day(15, shift=-5.0), at=15)
    got = _inst(cat, elk.day(15.5), "data")
    assert [(c["rule"], c["table"], c["column"]) for f in got for c in f.evidence.values["contradicted"]] == [
        ("suffix", P, "attempted_at_utc")]
    assert _inst(cat, elk.day(15.5)) == []  # metadata depth: a load's range hides it
    assert [f for f in sm.staleness(cat, P, depth="data", now=elk.day(15.5))] == []  # nothing of its own
    assert sm.describe(cat, P, now=elk.day(15.5)).findings == []
    sm.scan(cat, author="steward", now=elk.day(15.5), time=elk.day(15.6))
    items = rv.review_items(cat, now=elk.day(15.6), limit=500).items
    assert [(i.table, i.annotation, i.depth) for i in items if i.kind == "finding"] == [("acme", "instructions",
                                                                                         "metadata")]
    assert any(is_hidden(f) for f in sm.staleness(cat, P, depth="data", now=elk.day(15.5), conventions=True))
