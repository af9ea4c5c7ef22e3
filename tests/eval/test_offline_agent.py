"""The offline agent on a small lake that is not Acme (a bike-rental shop, catalog `velo`), through
the real MCP client and the loop: every test compares the result of the agent's final SQL with the
result of hand-written SQL at the same pinned snapshot.

    velo.shop.rides       ride_id, station_id, bike_kind, ride_day, fare_cents, deposit_cents, state,
                          bonus_amt (was tip_cents until day 6: the rename)
    velo.shop.stations    station_id, town, label               (rides -> stations, many_to_one, canonical)
    velo.shop.rides_old   deprecated, replaced by rides; fares in dollars, doubled (wrong on purpose)
    metrics: ride_revenue = sum(fare_cents) / 100.0 where state <> 'void' (synonyms revenue, sales, fares);
             tips = sum(tip_cents) / 100.0 (stale after the rename: the findings say so)
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from mcp import Client

import catalog_core as cc
import semantic as sm
from eval.agents.loop import Episode, pin, run_episode
from eval.agents.offline import OfflineAgent
from eval.fixtures.lakes import LakeBuilder
from eval.harness.conditions import condition_server

RIDES, STATIONS, OLD = "velo.shop.rides", "velo.shop.stations", "velo.shop.rides_old"
NOW_DAY = 10  # the last commit: day 10 of the builder (2024-11-21), the pinned snapshot's time

RIDE_ROWS: dict[str, list[Any]] = {
    "ride_id": list(range(1, 13)),
    "station_id": [1, 1, 2, 2, 3, 3, 1, 2, 3, 1, 2, 3],
    "bike_kind": ["Cargo", "City", "City", "E-Bike", "City", "Cargo", "E-Bike", "City", "City", "Cargo", "City", "E-Bike"],
    "ride_day": ["2024-10-02", "2024-10-03", "2024-10-03", "2024-10-15", "2024-10-20", "2024-10-28", "2024-11-02",
                 "2024-11-05", "2024-11-19", "2024-11-19", "2024-11-20", "2024-11-20"],
    "fare_cents": [1250, 800, 950, 2100, 700, 1800, 2500, 650, 900, 1500, 1100, 2300],
    "deposit_cents": [5000, 2000, 2000, 8000, 2000, 5000, 8000, 2000, 2000, 5000, 2000, 8000],
    "state": ["done", "done", "void", "done", "done", "done", "void", "done", "done", "done", "done", "done"],
    "tip_cents": [100, 0, 0, 300, 50, 0, 200, 0, 100, 150, 0, 250],
}


def build(cat: Any, root: Any) -> None:
    lk = LakeBuilder(cat, root, catalog="velo")
    lk.table(STATIONS, [("station_id", "bigint"), ("town", "string"), ("label", "string")], at=0,
             rows={"station_id": [1, 2, 3], "town": ["Porto", "Lisboa", "Faro"],
                   "label": ["Ribeira dock", "Baixa hub", "Marina"]})
    cols = [("ride_id", "bigint"), ("station_id", "bigint"), ("bike_kind", "string"), ("ride_day", "date"),
            ("fare_cents", "bigint"), ("deposit_cents", "bigint"), ("state", "string"), ("tip_cents", "bigint")]
    lk.table(RIDES, cols, at=0, rows=RIDE_ROWS)
    lk.table(OLD, [("ride_id", "bigint"), ("ride_day", "date"), ("fare_usd", "double")], at=0,
             rows={"ride_id": RIDE_ROWS["ride_id"], "ride_day": RIDE_ROWS["ride_day"],
                   "fare_usd": [2 * c / 100 for c in RIDE_ROWS["fare_cents"]]})
    t = lk.at(1)
    sm.annotate(cat, RIDES, {"description": "Bike rides, one row per ride; money in cents.",
                             "grain": {"text": "one row per ride", "keys": ["ride_id"]},
                             "synonyms": ["rentals", "trips"]}, author="ops", time=t)
    sm.annotate(cat, RIDES, {"description": "Fare charged for the ride", "unit": "cents"}, column="fare_cents",
                author="ops", time=lk.at(1))
    sm.annotate(cat, RIDES, {"description": "Security deposit held during the ride", "unit": "cents",
                             "role": "measure"}, column="deposit_cents", author="ops", time=lk.at(1))
    sm.annotate(cat, RIDES, {"description": "Ride state", "enum": ["done", "void"]}, column="state",
                author="ops", time=lk.at(1))
    sm.annotate(cat, STATIONS, {"description": "Rental stations with their town.",
                                "grain": {"text": "one row per station", "keys": ["station_id"]}},
                author="ops", time=lk.at(1))
    sm.annotate(cat, OLD, {"description": "Old daily fare feed in dollars.", "synonyms": ["fares", "revenue"],
                           "deprecated": {"reason": "old pipeline, wrong amounts", "replaced_by": RIDES}},
                author="ops", time=lk.at(1))
    sm.relate(cat, RIDES, STATIONS, on=[("station_id", "station_id")], cardinality="many_to_one", canonical=True,
              author="ops", time=lk.at(1))
    sm.define_metric(cat, RIDES, "ride_revenue", expression="sum(fare_cents) / 100.0", filter="state <> 'void'",
                     time_column="ride_day", unit="USD", description="Fare revenue of completed rides",
                     synonyms=["revenue", "sales", "fares"], author="ops", time=lk.at(1))
    sm.define_metric(cat, RIDES, "tips", expression="sum(tip_cents) / 100.0", time_column="ride_day", unit="USD",
                     description="Tips left by riders", synonyms=["gratuities"], author="ops", time=lk.at(1))
    # the last commit (the pinned snapshot, 2024-11-21): the tips column is renamed (same column id); the
    # metric is not updated
    rows = {("bonus_amt" if k == "tip_cents" else k): v for k, v in RIDE_ROWS.items()}
    lk.evolve(RIDES, rename={"tip_cents": "bonus_amt"}, at=NOW_DAY, rows=rows)


@pytest.fixture(scope="module")
def velo(tmp_path_factory):
    root = tmp_path_factory.mktemp("velo")
    cat = cc.Catalog.open(str(root / "cat"))
    build(cat, root / "files")
    yield cat
    cat.close()


def ask(cat: Any, question: str, *, findings: bool = False) -> tuple[Episode, int]:
    async def go() -> tuple[Episode, int]:
        server = condition_server(cat, (False, not findings), now=LakeBuilder(cat, "").day(NOW_DAY + 0.5))
        async with Client(server) as client:
            handle, vid = await pin(client)
            return await run_episode(client, OfflineAgent(), question, snapshot=handle), vid
    return asyncio.run(go())


def rows(cat: Any, sql: str, vid: int) -> list[tuple]:
    out = []
    for r in cc.run_sql(cat, sql, snapshot=vid, limit=1000).rows:
        out.append(tuple(round(float(v), 2) if isinstance(v, (int, float)) and not isinstance(v, bool) else v
                         for v in r))
    return sorted(out, key=repr)


def assert_same(cat: Any, ep: Episode, vid: int, gold: str, keep: list[int] | None = None) -> None:
    assert ep.sql is not None, f"abstained: {ep.abstain_reason}; calls {[t.call.name for t in ep.turns]}"
    assert ep.tool_calls <= 12
    got = rows(cat, ep.sql, vid)
    if keep is not None:  # the agent may add a descriptive column (e.g. a name next to a key)
        got = sorted((tuple(r[i] for i in keep) for r in got), key=repr)
    assert got == rows(cat, gold, vid), ep.sql


def names(ep: Episode) -> list[str]:
    return [t.call.name for t in ep.turns]


def test_metric_with_group_by_over_the_canonical_join(velo):
    ep, vid = ask(velo, "What was ride revenue by town in October 2024?")
    gold = (f"SELECT s.town, sum(r.fare_cents) / 100.0 FROM {RIDES} r JOIN {STATIONS} s ON s.station_id = r.station_id "
            "WHERE r.state <> 'void' AND r.ride_day >= DATE '2024-10-01' AND r.ride_day < DATE '2024-11-01' GROUP BY 1")
    assert_same(velo, ep, vid, gold)
    assert "query_metric" in names(ep)  # the defined metric (its filter excludes void rides), not a guess


def test_avoids_a_deprecated_table_and_follows_its_successor(velo):
    ep, vid = ask(velo, "Total fares in dollars on 2024-11-19")
    gold = f"SELECT sum(fare_cents) / 100.0 FROM {RIDES} WHERE state <> 'void' AND ride_day = DATE '2024-11-19'"
    assert_same(velo, ep, vid, gold)
    assert ep.sql is not None and OLD not in ep.sql


def test_divides_a_cents_column_when_asked_for_money(velo):
    ep, vid = ask(velo, "What were total security deposits held for rides in the last 2 days?")
    # the snapshot is of 2024-11-21: the last 2 days are 2024-11-19 and 2024-11-20
    gold = (f"SELECT sum(deposit_cents) / 100.0 FROM {RIDES} "
            "WHERE ride_day >= DATE '2024-11-19' AND ride_day < DATE '2024-11-21'")
    assert_same(velo, ep, vid, gold)


def test_grounds_a_literal_with_get_column_values(velo):
    ep, vid = ask(velo, "How many rides started at stations in porto?")
    gold = f"SELECT count(DISTINCT r.ride_id) FROM {RIDES} r JOIN {STATIONS} s USING (station_id) WHERE s.town = 'Porto'"
    assert_same(velo, ep, vid, gold)
    assert "get_column_values" in names(ep)
    assert ep.sql is not None and "'Porto'" in ep.sql  # the value as stored, not as asked


def test_abstains_when_the_lake_cannot_answer(velo):
    ep, _ = ask(velo, "What is the average age of our mechanics?")
    assert ep.sql is None and ep.abstain_reason
    assert ep.agent_error is None


def test_follows_a_rename_suggestion_when_findings_are_shown(velo):
    q = "What were total gratuities in November 2024?"
    gold = (f"SELECT sum(bonus_amt) / 100.0 FROM {RIDES} "
            "WHERE ride_day >= DATE '2024-11-01' AND ride_day < DATE '2024-12-01'")
    ep, vid = ask(velo, q, findings=True)
    assert_same(velo, ep, vid, gold)
    assert ep.sql is not None and "bonus_amt" in ep.sql
    blind, _ = ask(velo, q, findings=False)  # without findings the stale metric leads nowhere
    assert blind.sql is None or rows(velo, blind.sql, vid) != rows(velo, gold, vid)


def test_deterministic(velo):
    q = "What was ride revenue by town in October 2024?"
    a, _ = ask(velo, q)
    b, _ = ask(velo, q)
    assert a.sql == b.sql and a.sql is not None
    assert [(t.call.name, t.call.arguments) for t in a.turns] == [(t.call.name, t.call.arguments) for t in b.turns]


# ---------------------------------------------------------------- a join key that vanished
TRIPS, MEMBERS = "pedal.club.trips", "pedal.club.members"
CALENDAR, FORECAST = "pedal.club.calendar", "pedal.club.trip_forecast"


@pytest.fixture(scope="module")
def pedal(tmp_path_factory):
    """trips -> members declared on member_id at day 1; at day 6 trips drop member_id for member_uuid (the
    relationship is never updated: a finding says its key is gone and suggests member_uuid).
    Also a fiscal calendar that covers November 2024 only and a demand forecast table."""
    root = tmp_path_factory.mktemp("pedal")
    cat = cc.Catalog.open(str(root / "cat"))
    lk = LakeBuilder(cat, root / "files", catalog="pedal")
    uuids = ["m-a1", "m-b2", "m-c3", "m-d4"]
    lk.table(MEMBERS, [("member_id", "bigint"), ("member_uuid", "string"), ("plan", "string")], at=0,
             rows={"member_id": [1, 2, 3, 4], "member_uuid": uuids, "plan": ["annual", "monthly", "annual", "day"]})
    trips = {"trip_id": list(range(1, 9)), "member_id": [1, 2, 3, 4, 1, 2, 3, 1],
             "trip_day": ["2024-11-02", "2024-11-03", "2024-11-05", "2024-11-07", "2024-11-08", "2024-11-09",
                          "2024-11-10", "2024-11-10"],
             "fare_cents": [300, 450, 500, 250, 300, 600, 350, 400]}
    lk.table(TRIPS, [("trip_id", "bigint"), ("member_id", "bigint"), ("trip_day", "date"), ("fare_cents", "bigint")],
             at=0, rows=trips)
    sm.annotate(cat, TRIPS, {"description": "Bike trips, one row per trip; fares in cents.",
                             "grain": {"text": "one row per trip", "keys": ["trip_id"]}}, author="ops", time=lk.at(1))
    sm.annotate(cat, TRIPS, {"description": "Fare of the trip", "unit": "cents"}, column="fare_cents",
                author="ops", time=lk.at(1))
    sm.annotate(cat, MEMBERS, {"description": "Club members and their plan.",
                               "grain": {"text": "one row per member", "keys": ["member_id"]}}, author="ops",
                time=lk.at(1))
    sm.annotate(cat, MEMBERS, {"description": "Membership plan", "enum": ["annual", "monthly", "day"]},
                column="plan", author="ops", time=lk.at(1))
    sm.relate(cat, TRIPS, MEMBERS, on=[("member_id", "member_id")], cardinality="many_to_one", canonical=True,
              author="ops", time=lk.at(1))
    # a fiscal calendar covering November 2024 only (FY2025 period 4), and a demand forecast table
    days = [f"2024-11-{d:02d}" for d in range(1, 31)]
    lk.table(CALENDAR, [("cal_day", "date"), ("fiscal_year", "bigint"), ("fiscal_period", "bigint")], at=0,
             rows={"cal_day": days, "fiscal_year": [2025] * 30, "fiscal_period": [4] * 30})
    sm.annotate(cat, CALENDAR, {"description": "Fiscal calendar, one row per date.",
                                "grain": {"text": "one row per date", "keys": ["cal_day"]}}, author="ops", time=lk.at(1))
    lk.table(FORECAST, [("forecast_day", "date"), ("expected_trips", "bigint")], at=0,
             rows={"forecast_day": ["2024-11-11", "2024-11-12"], "expected_trips": [3, 4]})
    sm.annotate(cat, FORECAST, {"description": "Forecast of daily trip demand for the coming days."},
                author="ops", time=lk.at(1))
    rows = {k: v for k, v in trips.items() if k != "member_id"}
    rows["member_uuid"] = [uuids[m - 1] for m in trips["member_id"]]
    lk.evolve(TRIPS, drop=["member_id"], add=[("member_uuid", "string")], at=6, rows=rows)
    yield cat
    cat.close()


def test_follows_a_join_key_suggestion_when_findings_are_shown(pedal):
    q = "What was fare revenue by plan in November 2024?"
    gold = (f"SELECT m.plan, sum(t.fare_cents) / 100.0 FROM {TRIPS} t JOIN {MEMBERS} m ON t.member_uuid = "
            "m.member_uuid WHERE t.trip_day >= DATE '2024-11-01' AND t.trip_day < DATE '2024-12-01' GROUP BY 1")
    ep, vid = ask(pedal, q, findings=True)
    assert_same(pedal, ep, vid, gold)
    assert ep.sql is not None and "member_uuid" in ep.sql
    blind, _ = ask(pedal, q, findings=False)  # without findings the declared key leads to a failing join
    assert blind.sql is None or rows(pedal, blind.sql, vid) != rows(pedal, gold, vid)


# ---------------------------------------------------------------- what the catalog cannot answer (scope.py)
def test_abstains_on_a_window_after_the_snapshot(velo):
    ep, _ = ask(velo, "What was ride revenue on 2024-11-25?")  # the snapshot is of 2024-11-21
    assert ep.sql is None and "after the pinned snapshot" in (ep.abstain_reason or "")
    ep, vid = ask(velo, "What was ride revenue on 2024-11-20?")  # the day before: answered
    assert_same(velo, ep, vid, f"SELECT sum(fare_cents) / 100.0 FROM {RIDES} WHERE state <> 'void' "
                               "AND ride_day = DATE '2024-11-20'")


def test_abstains_on_the_future_tense(velo):
    ep, _ = ask(velo, "What will ride revenue be next month?")
    assert ep.sql is None and "future" in (ep.abstain_reason or "")


def test_abstains_on_a_window_before_the_earliest_data(velo):
    ep, _ = ask(velo, "What was ride revenue in 2022?")  # rides start on 2024-10-02 (the column's stats)
    assert ep.sql is None and "2024-10-02" in (ep.abstain_reason or "")
    assert any(t.call.arguments.get("detail") == "full" for t in ep.turns if t.call.name == "describe_table")


def test_abstains_on_a_measure_nothing_in_the_catalog_names(velo):
    # 'fare' leads to the rides table, but nothing the catalog shows records a dispute score
    ep, _ = ask(velo, "What was the fare dispute score in October 2024?")
    assert ep.sql is None and "'dispute', 'score'" in (ep.abstain_reason or "")


def test_one_unknown_word_in_the_measure_is_not_enough_to_abstain(velo):
    ep, vid = ask(velo, "What was the ride revenue haul by town in October 2024?")
    gold = (f"SELECT s.town, sum(r.fare_cents) / 100.0 FROM {RIDES} r JOIN {STATIONS} s ON s.station_id = r.station_id "
            "WHERE r.state <> 'void' AND r.ride_day >= DATE '2024-10-01' AND r.ride_day < DATE '2024-11-01' GROUP BY 1")
    assert_same(velo, ep, vid, gold)


def test_abstains_on_a_fiscal_window_the_calendar_lacks(pedal):
    ep, _ = ask(pedal, "What was fare revenue in fiscal period 1 of FY2021?")
    assert ep.sql is None and "fiscal calendar" in (ep.abstain_reason or "")
    ep, vid = ask(pedal, "What was fare revenue in fiscal period 4 of FY2025?")  # the calendar has it: answered
    assert_same(pedal, ep, vid, f"SELECT sum(fare_cents) / 100.0 FROM {TRIPS} "
                                "WHERE trip_day >= DATE '2024-11-01' AND trip_day < DATE '2024-12-01'")


def test_the_future_is_answerable_when_the_catalog_describes_forecasts(pedal):
    ep, _ = ask(pedal, "How many trips will there be next week?")
    assert "future" not in (ep.abstain_reason or "")


# ---------------------------------------------------------------- subsets named by a value (subset.py)
def test_an_inflected_value_replaces_the_metric_filter_on_its_column(velo):
    # ride_revenue filters state <> 'void'; "voided rides" asks for the rows that filter leaves out
    ep, vid = ask(velo, "What was ride revenue from voided rides in November 2024?")
    gold = (f"SELECT sum(fare_cents) / 100.0 FROM {RIDES} WHERE state = 'void' "
            "AND ride_day >= DATE '2024-11-01' AND ride_day < DATE '2024-12-01'")
    assert_same(velo, ep, vid, gold)


def test_counts_the_rows_of_an_inflected_value(velo):
    ep, vid = ask(velo, "How many rides were voided in October 2024?")
    gold = (f"SELECT count(*) FROM {RIDES} WHERE state = 'void' "
            "AND ride_day >= DATE '2024-10-01' AND ride_day < DATE '2024-11-01'")
    assert_same(velo, ep, vid, gold)
    assert ep.sql is not None and "'void'" in ep.sql


DOCKS = "velo.ops.dock_events"


@pytest.fixture(scope="module")
def docks(tmp_path_factory):
    """Dock events: an action enum (dock, undock, reserve), a numeric dock_slots column the word "dock" names,
    a source column without annotated values that the description mentions (kiosks, app), and a cleared day
    annotated null_when {state: pending}."""
    root = tmp_path_factory.mktemp("docks")
    cat = cc.Catalog.open(str(root / "cat"))
    lk = LakeBuilder(cat, root / "files", catalog="velo")
    lk.table(DOCKS, [("event_id", "bigint"), ("action", "string"), ("source", "string"), ("dock_slots", "int"),
                     ("event_day", "date"), ("cleared_day", "date"), ("outcome", "string")], at=0,
             rows={"event_id": list(range(1, 11)),
                   "action": ["dock", "reserve", "undock", "reserve", "dock", "reserve", "undock", "reserve", "dock",
                              "reserve"],
                   "source": ["kiosk", "app", "kiosk", "app", "app", "kiosk", "kiosk", "app", "kiosk", "app"],
                   "dock_slots": [1, 2, 1, 3, 1, 2, 1, 4, 1, 2],
                   "event_day": ["2024-10-05", "2024-10-20", "2024-10-28", "2024-11-03", "2024-11-04", "2024-11-10",
                                 "2024-11-12", "2024-11-15", "2024-11-18", "2024-11-20"],
                   "cleared_day": ["2024-10-05", "2024-10-21", "2024-10-28", None, "2024-11-04", "2024-11-11",
                                   "2024-11-12", None, "2024-11-18", None],
                   "outcome": ["ok", "ok", "ok", "rejected", "ok", "ok", "rejected", "ok", "rejected", "ok"]})
    sm.annotate(cat, DOCKS, {"description": "Dock events at stations, from kiosks and the app.",
                             "grain": {"text": "one row per dock event", "keys": ["event_id"]}},
                author="ops", time=lk.at(1))
    sm.annotate(cat, DOCKS, {"description": "What happened", "enum": ["dock", "undock", "reserve"]}, column="action",
                author="ops", time=lk.at(1))
    sm.annotate(cat, DOCKS, {"description": "Dock slots the event took", "role": "measure"}, column="dock_slots",
                author="ops", time=lk.at(1))
    sm.annotate(cat, DOCKS, {"description": "Day the event was cleared", "null_when": {"state": "pending"}},
                column="cleared_day", author="ops", time=lk.at(1))
    lk.append(DOCKS, {"event_id": [], "action": [], "source": [], "dock_slots": [], "event_day": [],
                      "cleared_day": [], "outcome": []}, at=NOW_DAY)
    yield cat
    cat.close()


def test_counts_events_of_a_type_rather_than_summing_a_column(docks):
    # "reservations" names the value 'reserve'; the count is of those events, not a sum of dock_slots
    ep, vid = ask(docks, "How many dock reservations were there in November 2024?")
    gold = (f"SELECT count(*) FROM {DOCKS} WHERE action = 'reserve' "
            "AND event_day >= DATE '2024-11-01' AND event_day < DATE '2024-12-01'")
    assert_same(docks, ep, vid, gold)


def test_asks_the_data_for_a_word_the_description_mentions(docks):
    # source has no annotated values: "kiosk" is grounded with get_column_values
    ep, vid = ask(docks, "How many kiosk dock events were there in November 2024?")
    gold = (f"SELECT count(*) FROM {DOCKS} WHERE source = 'kiosk' "
            "AND event_day >= DATE '2024-11-01' AND event_day < DATE '2024-12-01'")
    assert_same(docks, ep, vid, gold)
    assert "get_column_values" in names(ep)


def test_a_null_when_state_names_the_subset(docks):
    ep, vid = ask(docks, "How many dock events are still pending?")
    assert_same(docks, ep, vid, f"SELECT count(*) FROM {DOCKS} WHERE cleared_day IS NULL")


def test_word_match_and_the_table_a_count_names_by_its_grain():
    from eval.agents.offline.know import Knowledge
    from eval.agents.offline.slots import parse
    from eval.agents.offline.subset import counted_table, word_match
    assert word_match("cancelled", "cancel") and word_match("redemptions", "redeem")
    assert word_match("partly", "partially") and word_match("shipped", "ship")
    assert not word_match("card", "cart") and not word_match("web", "website")
    k = Knowledge()
    k.absorb("search_tables", {"tables": [
        {"name": "velo.shop.rides", "grain": "one row per ride (unique: ride_id)"},
        {"name": "velo.shop.ride_stops", "grain": "one row per ride stop (unique: stop_id)"},
        {"name": "velo.shop.rides_old", "grain": "one row per ride stop", "deprecated": {"successor": None}}]})
    import datetime as dt
    s = parse("How many ride stops were made in November 2024?", dt.date(2024, 11, 21))
    assert counted_table(s, k, "velo.shop.rides") == "velo.shop.ride_stops"
    s = parse("How many rides stopped at Porto in November 2024?", dt.date(2024, 11, 21))
    assert counted_table(s, k, "velo.shop.rides") is None


def test_coordinated_values_are_not_one_subset(docks):
    # "kiosk and app" names every source: no filter on source (the words are not grounded one by one)
    ep, vid = ask(docks, "How many kiosk and app dock events were there in November 2024?")
    gold = f"SELECT count(*) FROM {DOCKS} WHERE event_day >= DATE '2024-11-01' AND event_day < DATE '2024-12-01'"
    assert_same(docks, ep, vid, gold)


def test_a_null_state_needs_all_its_words_and_a_grain_needs_the_counted_noun():
    import datetime as dt

    from eval.agents.offline.know import Knowledge
    from eval.agents.offline.slots import parse
    from eval.agents.offline.subset import NULL, counted_table, null_hits
    k = Knowledge()
    k.absorb("describe_table", {"table": "velo.shop.rides", "grain": "one row per ride", "columns": [
        {"name": "member_id", "type": "bigint", "description": "Member; null for anonymous kiosk rides",
         "null_when": {"state": "anonymous_kiosk"}},
        {"name": "paid_day", "type": "date", "null_when": {"state": "not_paid"}},
        {"name": "coach_id", "type": "bigint", "description": "Coach; null while riding solo"}]})
    day = dt.date(2024, 11, 21)
    assert null_hits(parse("How many kiosk rides were there?", day), k, ["velo.shop.rides"]) == []
    hits = null_hits(parse("How many anonymous kiosk rides were there?", day), k, ["velo.shop.rides"])
    assert [(h[1], h[2]) for h in hits] == [("member_id", NULL)]
    # the prose of a description is never read: only the structured field
    assert null_hits(parse("How many rides were solo?", day), k, ["velo.shop.rides"]) == []
    # a negated state needs the question's negation: "paid rides" are not the unpaid ones
    assert null_hits(parse("How many rides were paid?", day), k, ["velo.shop.rides"]) == []
    hits = null_hits(parse("How many rides were not paid?", day), k, ["velo.shop.rides"])
    assert [(h[1], h[2]) for h in hits] == [("paid_day", NULL)]
    k.absorb("search_tables", {"tables": [{"name": "velo.shop.members", "grain": "one row per member"},
                                          {"name": "velo.shop.member_stations", "grain": "one row per member station"}]})
    # a one-word grain never overrides the chosen table; a compound one must name the counted noun
    assert counted_table(parse("How many members rode in November 2024?", day), k, "velo.shop.rides") is None
    assert counted_table(parse("How many rides by member station?", day), k, "velo.shop.rides") is None
    assert counted_table(parse("How many member stations are there?", day), k, "velo.shop.rides") == \
        "velo.shop.member_stations"


def test_asks_the_data_for_a_participle_used_as_an_adjective(docks):
    # outcome has no annotation at all: "were rejected" is grounded in its stored values
    ep, vid = ask(docks, "How many dock events were rejected in November 2024?")
    gold = (f"SELECT count(*) FROM {DOCKS} WHERE outcome = 'rejected' "
            "AND event_day >= DATE '2024-11-01' AND event_day < DATE '2024-12-01'")
    assert_same(docks, ep, vid, gold)


# ---------------------------------------------------------------- restated values (restate.py)
LOANS = "velo.hire.loans"


@pytest.fixture(scope="module")
def loans(tmp_path_factory):
    """Bike loans, loaded by appends; status annotated (enum open, closed, lost) with metrics lost_loans
    (status = 'lost') and closed_loans (status = 'closed'). At day 8 the table is rewritten in full and
    'lost' is restated as 'stolen'; nothing annotated is updated."""
    root = tmp_path_factory.mktemp("loans")
    cat = cc.Catalog.open(str(root / "cat"))
    lk = LakeBuilder(cat, root / "files", catalog="velo")
    days = ["2024-10-05", "2024-10-20", "2024-11-02", "2024-11-03", "2024-11-10", "2024-11-12", "2024-11-15",
            "2024-11-18"]
    status = ["closed", "lost", "closed", "lost", "open", "lost", "closed", "open"]
    lk.table(LOANS, [("loan_id", "bigint"), ("loan_day", "date"), ("status", "string")], at=0,
             rows={"loan_id": [1, 2], "loan_day": days[:2], "status": status[:2]})
    for i in range(2, 8, 2):
        lk.append(LOANS, {"loan_id": [i + 1, i + 2], "loan_day": days[i:i + 2], "status": status[i:i + 2]},
                  at=i // 2 + 1)
    sm.annotate(cat, LOANS, {"description": "Bike loans, one row per loan.",
                             "grain": {"text": "one row per loan", "keys": ["loan_id"]}}, author="ops", time=lk.at(5))
    sm.annotate(cat, LOANS, {"description": "Loan status", "enum": ["open", "closed", "lost"]}, column="status",
                author="ops", time=lk.at(5.1))
    sm.define_metric(cat, LOANS, "lost_loans", expression="count(*)", filter="status = 'lost'", time_column="loan_day",
                     description="Loans whose bike was never brought back", synonyms=["stolen loans"],
                     author="ops", time=lk.at(5.2))
    sm.define_metric(cat, LOANS, "closed_loans", expression="count(*)", filter="status = 'closed'",
                     time_column="loan_day", description="Loans closed normally", synonyms=["completed loans"],
                     author="ops", time=lk.at(5.3))
    lk.overwrite(LOANS, {"loan_id": list(range(1, 9)), "loan_day": days,
                         "status": ["stolen" if s == "lost" else s for s in status]}, at=8)
    yield cat
    cat.close()


def test_a_flagged_metric_whose_value_is_gone_is_answered_from_the_data(loans):
    q = "How many stolen loans were there in November 2024?"
    gold = (f"SELECT count(*) FROM {LOANS} WHERE status = 'stolen' "
            "AND loan_day >= DATE '2024-11-01' AND loan_day < DATE '2024-12-01'")
    ep, vid = ask(loans, q, findings=True)
    assert_same(loans, ep, vid, gold)
    assert "get_column_values" in names(ep) and "'lost'" not in (ep.sql or "")
    blind, _ = ask(loans, q, findings=False)  # without findings the metric's old value counts nothing
    assert blind.sql is None or rows(loans, blind.sql, vid) != rows(loans, gold, vid)


def test_a_flagged_metric_whose_value_is_still_there_is_used(loans):
    q = "How many completed loans were there in November 2024?"
    gold = (f"SELECT count(*) FROM {LOANS} WHERE status = 'closed' "
            "AND loan_day >= DATE '2024-11-01' AND loan_day < DATE '2024-12-01'")
    ep, vid = ask(loans, q, findings=True)
    assert_same(loans, ep, vid, gold)


# ---------------------------------------------------------------- structured fields: additivity, not_for_reporting
STOCK, STOCK_RAW = "velo.ops.parked_daily", "velo.ops.parked_bikes_feed"


@pytest.fixture(scope="module")
def parked(tmp_path_factory):
    """Bikes parked per station and day (a snapshot: `parked` is annotated semi-additive over snap_day, and
    no description says so), and a raw sensor feed with the same words in its name, annotated
    not_for_reporting (use the daily table instead); its counts are doubled (wrong on purpose)."""
    root = tmp_path_factory.mktemp("parked")
    cat = cc.Catalog.open(str(root / "cat"))
    lk = LakeBuilder(cat, root / "files", catalog="velo")
    days = ["2024-11-18"] * 3 + ["2024-11-19"] * 3 + ["2024-11-20"] * 3
    rows = {"snap_day": days, "station_id": [1, 2, 3] * 3, "parked": [4, 6, 2, 5, 7, 1, 3, 8, 2]}
    lk.table(STOCK, [("snap_day", "date"), ("station_id", "bigint"), ("parked", "int")], at=0, rows=rows)
    lk.table(STOCK_RAW, [("snap_day", "date"), ("station_id", "bigint"), ("parked", "int")], at=0,
             rows={**rows, "parked": [2 * x for x in rows["parked"]]})
    sm.annotate(cat, STOCK, {"description": "Bikes parked at each station at the end of each day.",
                             "grain": {"text": "one row per day and station", "keys": ["snap_day", "station_id"]}},
                author="ops", time=lk.at(1))
    sm.annotate(cat, STOCK, {"description": "Bikes parked at the station", "role": "measure",
                             "additivity": {"kind": "semi_additive", "non_additive_dimension": "snap_day"}},
                column="parked", author="ops", time=lk.at(1))
    sm.annotate(cat, STOCK_RAW, {"description": "Parked bikes feed from the dock sensors.",
                                 "not_for_reporting": {"reason": "sensor feed, double counts",
                                                       "use_instead": [STOCK]}},
                author="ops", time=lk.at(1))
    lk.append(STOCK, {"snap_day": [], "station_id": [], "parked": []}, at=NOW_DAY)
    yield cat
    cat.close()


def test_a_semi_additive_measure_is_read_at_the_last_day_of_the_window(parked):
    ep, vid = ask(parked, "What was the total of bikes parked in November 2024?")
    gold = (f"SELECT sum(parked) FROM {STOCK} WHERE snap_day = (SELECT max(snap_day) FROM {STOCK} "
            "WHERE snap_day >= DATE '2024-11-01' AND snap_day < DATE '2024-12-01')")
    assert_same(parked, ep, vid, gold)


def test_a_table_not_for_reporting_is_not_read(parked):
    ep, _ = ask(parked, "What was the total of bikes parked in November 2024?")
    assert ep.sql is not None and STOCK_RAW not in ep.sql
    from eval.agents.offline.know import Knowledge
    k = Knowledge()
    k.absorb("search_tables", {"tables": [{"name": STOCK_RAW, "not_for_reporting": {"reason": "x", "use_instead": [STOCK]}},
                                          {"name": STOCK}]})
    assert k.table(STOCK_RAW).not_for_reporting and k.table(STOCK_RAW).use_instead == [STOCK]
    assert not k.table(STOCK).not_for_reporting
