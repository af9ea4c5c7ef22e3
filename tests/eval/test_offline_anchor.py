"""The offline agent anchors literals in dimension columns (eval/agents/offline/anchor.py), on a bike-hire lake
that is not Acme (catalog `spoke`), through the real MCP client and the loop; each test compares the result of
the agent's final SQL with hand-written SQL at the same pinned snapshot.

    spoke.fleet.hires          hire_id, dock_id, rider_id, hire_day, fare_cents, channel (app | dock),
                               status (reserved | returned | void)
    spoke.fleet.docks          dock_id, dock_code (D-01 ...), dock_name, zone      (hires -> docks, canonical)
    spoke.fleet.riders         rider_id, plan (basic | gold)                         (hires -> riders, canonical)
    spoke.fleet.credit_events  event_id, rider_id, kind (earn | spend), credits, event_day  (-> riders, canonical)
    metric: hire_revenue = sum(fare_cents) / 100.0 where status <> 'void' (synonyms revenue, fares)
"""

from __future__ import annotations

from typing import Any

import pytest

import catalog_core as cc
import semantic as sm
from eval.fixtures.lakes import LakeBuilder
from tests.eval.test_offline_agent import ask, assert_same, names

HIRES, DOCKS, RIDERS, CREDITS = "spoke.fleet.hires", "spoke.fleet.docks", "spoke.fleet.riders", "spoke.fleet.credit_events"


def build(cat: Any, root: Any) -> None:
    lk = LakeBuilder(cat, root, catalog="spoke")
    lk.table(DOCKS, [("dock_id", "bigint"), ("dock_code", "string"), ("dock_name", "string"), ("zone", "string")],
             at=0, rows={"dock_id": [1, 2, 3, 4], "dock_code": ["D-01", "D-02", "D-12", "D-21"],
                         "dock_name": ["River Quay", "Old Mill", "Hill Top", "Harbour"],
                         "zone": ["north", "north", "south", "south"]})
    lk.table(RIDERS, [("rider_id", "bigint"), ("plan", "string")], at=0,
             rows={"rider_id": [1, 2, 3, 4], "plan": ["basic", "gold", "gold", "basic"]})
    n = 12
    lk.table(HIRES, [("hire_id", "bigint"), ("dock_id", "bigint"), ("rider_id", "bigint"), ("hire_day", "date"),
                     ("fare_cents", "bigint"), ("channel", "string"), ("status", "string")], at=0,
             rows={"hire_id": list(range(1, n + 1)),
                   "dock_id": [3, 3, 2, 1, 3, 4, 2, 3, 1, 4, 3, 2],
                   "rider_id": [2, 1, 3, 2, 3, 4, 1, 2, 3, 2, 4, 3],
                   "hire_day": ["2024-10-30", "2024-11-02", "2024-11-03", "2024-11-04", "2024-11-05", "2024-11-05",
                                "2024-11-06", "2024-11-07", "2024-11-08", "2024-11-09", "2024-11-09", "2024-11-10"],
                   "fare_cents": [500, 700, 300, 450, 900, 650, 400, 1200, 350, 800, 600, 550],
                   "channel": ["app", "dock", "app", "dock", "dock", "app", "app", "app", "dock", "app", "dock",
                               "app"],
                   "status": ["returned", "returned", "void", "returned", "reserved", "returned", "returned",
                              "reserved", "returned", "void", "returned", "reserved"]})
    lk.table(CREDITS, [("event_id", "bigint"), ("rider_id", "bigint"), ("kind", "string"), ("credits", "bigint"),
                       ("event_day", "date")], at=0,
             rows={"event_id": [1, 2, 3, 4, 5, 6, 7], "rider_id": [2, 2, 3, 1, 3, 4, 2],
                   "kind": ["earn", "spend", "earn", "earn", "spend", "earn", "earn"],
                   "credits": [50, -30, 40, 20, -10, 25, 15],
                   "event_day": ["2024-11-02", "2024-11-03", "2024-11-04", "2024-11-05", "2024-11-06", "2024-11-07",
                                 "2024-10-20"]})
    sm.annotate(cat, HIRES, {"description": "Bike hires, booked in the app or at a dock, one row per hire; status "
                                            "is reserved, returned or void; money in cents.",
                             "grain": {"text": "one row per hire", "keys": ["hire_id"]}}, author="ops", time=lk.at(1))
    sm.annotate(cat, HIRES, {"description": "Fare of the hire", "unit": "cents"}, column="fare_cents", author="ops",
                time=lk.at(1))
    sm.annotate(cat, HIRES, {"description": "Where the hire was booked", "enum": ["app", "dock"]}, column="channel",
                author="ops", time=lk.at(1))
    sm.annotate(cat, HIRES, {"description": "Hire status now", "enum": ["reserved", "returned", "void"]},
                column="status", author="ops", time=lk.at(1))
    sm.annotate(cat, DOCKS, {"description": "Docking stations.", "grain": {"text": "one row per dock",
                                                                          "keys": ["dock_id"]}}, author="ops", time=lk.at(1))
    sm.annotate(cat, DOCKS, {"description": "Dock code such as D-07"}, column="dock_code", author="ops", time=lk.at(1))
    sm.annotate(cat, DOCKS, {"description": "Zone", "enum": ["north", "south"]}, column="zone", author="ops", time=lk.at(1))
    sm.annotate(cat, RIDERS, {"description": "Riders and their plan.", "grain": {"text": "one row per rider",
                                                                                "keys": ["rider_id"]}},
                author="ops", time=lk.at(1))
    sm.annotate(cat, RIDERS, {"description": "Membership plan", "enum": ["basic", "gold"]}, column="plan",
                author="ops", time=lk.at(1))
    sm.annotate(cat, CREDITS, {"description": "Ride credit events: earn, spend.",
                               "grain": {"text": "one row per event", "keys": ["event_id"]}}, author="ops", time=lk.at(1))
    sm.annotate(cat, CREDITS, {"description": "Event kind", "enum": ["earn", "spend"]}, column="kind", author="ops",
                time=lk.at(1))
    sm.annotate(cat, CREDITS, {"description": "Credits (negative for spend)", "role": "measure"}, column="credits",
                author="ops", time=lk.at(1))
    for src, dst, key in ((HIRES, DOCKS, "dock_id"), (HIRES, RIDERS, "rider_id"), (CREDITS, RIDERS, "rider_id")):
        sm.relate(cat, src, dst, on=[(key, key)], cardinality="many_to_one", canonical=True, author="ops", time=lk.at(1))
    sm.define_metric(cat, HIRES, "hire_revenue", expression="sum(fare_cents) / 100.0", filter="status <> 'void'",
                     time_column="hire_day", unit="USD", description="Fare revenue of hires that were not voided",
                     synonyms=["revenue", "fares"], author="ops", time=lk.at(1))


@pytest.fixture(scope="module")
def spoke(tmp_path_factory):
    root = tmp_path_factory.mktemp("spoke")
    cat = cc.Catalog.open(str(root / "cat"))
    build(cat, root / "files")
    yield cat
    cat.close()


def test_a_code_literal_is_grounded_in_a_related_dimension_by_an_exact_value(spoke):
    # no word of the question names the docks table: the code alone sends the agent there; D-12 must not
    # become D-02 or D-21 (near codes), and the fact's own columns cannot hold it
    ep, vid = ask(spoke, "What was hire revenue at D-12 in November 2024?")
    gold = (f"SELECT SUM(h.fare_cents) / 100.0 FROM {HIRES} h JOIN {DOCKS} d ON d.dock_id = h.dock_id "
            "WHERE h.status <> 'void' AND d.dock_code = 'D-12' AND h.hire_day BETWEEN '2024-11-01' AND '2024-11-30'")
    assert_same(spoke, ep, vid, gold)
    assert "get_column_values" in names(ep)


def test_an_entity_word_equal_to_a_value_is_not_a_filter(spoke):
    # "dock" is a value of hires.channel, but here it names the docks the fact relates to
    ep, vid = ask(spoke, "What was hire revenue at dock D-12 in November 2024?")
    gold = (f"SELECT SUM(h.fare_cents) / 100.0 FROM {HIRES} h JOIN {DOCKS} d ON d.dock_id = h.dock_id "
            "WHERE h.status <> 'void' AND d.dock_code = 'D-12' AND h.hire_day BETWEEN '2024-11-01' AND '2024-11-30'")
    assert_same(spoke, ep, vid, gold)


def test_the_verb_of_the_question_is_not_a_state_filter(spoke):
    # "did riders ... reserve": every hire was reserved; 'reserved' is a status a hire is in now
    ep, vid = ask(spoke, "How many hires did riders on the gold plan reserve in November 2024?")
    gold = (f"SELECT COUNT(*) FROM {HIRES} h JOIN {RIDERS} r ON r.rider_id = h.rider_id "
            "WHERE r.plan = 'gold' AND h.hire_day BETWEEN '2024-11-01' AND '2024-11-30'")
    assert_same(spoke, ep, vid, gold)


def test_a_verb_equal_to_an_event_value_is_a_filter(spoke):
    # "earn" is itself a kind of event (the description lists it too): the credits earned, not spent
    ep, vid = ask(spoke, "How many credits did riders on the gold plan earn in November 2024?")
    gold = (f"SELECT SUM(e.credits) FROM {CREDITS} e JOIN {RIDERS} r ON r.rider_id = e.rider_id "
            "WHERE r.plan = 'gold' AND e.kind = 'earn' AND e.event_day BETWEEN '2024-11-01' AND '2024-11-30'")
    assert_same(spoke, ep, vid, gold)


def test_an_exact_value_is_a_filter_even_when_the_description_lists_it(spoke):
    ep, vid = ask(spoke, "What was hire revenue from app hires in November 2024?")
    gold = (f"SELECT SUM(fare_cents) / 100.0 FROM {HIRES} WHERE status <> 'void' AND channel = 'app' "
            "AND hire_day BETWEEN '2024-11-01' AND '2024-11-30'")
    assert_same(spoke, ep, vid, gold)


def test_not_yet_negates_the_word_after_it(spoke):
    ep, vid = ask(spoke, "How many hires are reserved but not yet returned?")
    gold = f"SELECT COUNT(*) FROM {HIRES} WHERE status = 'reserved'"
    assert_same(spoke, ep, vid, gold)


@pytest.mark.parametrize("question", ["What was hire revenue from gold plan riders in November 2024?",
                                      "How much hire revenue did riders on the gold plan bring in November 2024?"])
def test_a_phrase_restricting_an_entity_does_not_hide_the_metric(spoke, question):
    # the measure is "hire revenue"; "gold plan riders" restricts the riders the hires join to
    ep, vid = ask(spoke, question)
    gold = (f"SELECT SUM(h.fare_cents) / 100.0 FROM {HIRES} h JOIN {RIDERS} r ON r.rider_id = h.rider_id "
            "WHERE h.status <> 'void' AND r.plan = 'gold' AND h.hire_day BETWEEN '2024-11-01' AND '2024-11-30'")
    assert_same(spoke, ep, vid, gold)
    assert "query_metric" in names(ep)
