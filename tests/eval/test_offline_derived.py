"""The offline agent's derived measures (eval/agents/offline/derived.py) on a bike-rental lake that is
not Acme (catalog `spoke`), through the real MCP client and the loop: rates, "X per Y", "average daily",
a ratio of two metrics, and counts of entities with more than one related row.

    spoke.rent.rentals      rental_id, rental_day, fee_cents, status, damaged
                            metrics rentals, rental_revenue, damage_rate (paid rentals only)
    spoke.rent.visits       visit_id, visit_day, device, booked_rental_id (null: no booking; -> rentals)
    spoke.rent.inspections  inspection_id, rental_id, inspected_day       (1-3 per rental)
    spoke.rent.ads_daily    ad_day, channel, spend_usd, taps
"""

from __future__ import annotations

from typing import Any

import pytest

import catalog_core as cc
import semantic as sm
from eval.fixtures.lakes import LakeBuilder
from tests.eval.test_offline_agent import ask, assert_same, names, rows

RENTALS, VISITS, INSP, ADS = "spoke.rent.rentals", "spoke.rent.visits", "spoke.rent.inspections", "spoke.rent.ads_daily"
NOV = "BETWEEN DATE '2024-11-01' AND DATE '2024-11-30'"


@pytest.fixture(scope="module")
def spoke(tmp_path_factory):
    root = tmp_path_factory.mktemp("spoke")
    cat = cc.Catalog.open(str(root / "cat"))
    lk = LakeBuilder(cat, root / "files", catalog="spoke")
    days = ["2024-10-30", "2024-11-02", "2024-11-02", "2024-11-05", "2024-11-06", "2024-11-06", "2024-11-09",
            "2024-11-12", "2024-12-01"]
    lk.table(RENTALS, [("rental_id", "bigint"), ("rental_day", "date"), ("fee_cents", "bigint"), ("status", "string"),
                       ("damaged", "boolean")],
             at=0, rows={"rental_id": list(range(1, 10)), "rental_day": days,
                         "fee_cents": [900, 1200, 800, 1500, 700, 2000, 1100, 600, 1300],
                         "status": ["paid", "paid", "void", "paid", "paid", "paid", "void", "paid", "paid"],
                         "damaged": [False, False, True, True, False, False, False, False, False]})
    lk.table(VISITS, [("visit_id", "string"), ("visit_day", "date"), ("device", "string"),
                      ("booked_rental_id", "bigint")], at=0,
             rows={"visit_id": [f"v{i}" for i in range(1, 11)],
                   "visit_day": ["2024-10-30", "2024-11-01", "2024-11-02", "2024-11-02", "2024-11-05", "2024-11-05",
                                 "2024-11-06", "2024-11-09", "2024-11-20", "2024-12-01"],
                   "device": ["phone", "phone", "desktop", "phone", "desktop", "phone", "phone", "desktop", "phone",
                              "desktop"],
                   "booked_rental_id": [1, None, 2, None, 4, None, 6, None, None, 9]})
    lk.table(INSP, [("inspection_id", "bigint"), ("rental_id", "bigint"), ("inspected_day", "date")], at=0,
             rows={"inspection_id": list(range(1, 12)), "rental_id": [1, 1, 2, 4, 4, 4, 5, 6, 8, 9, 9],
                   "inspected_day": ["2024-11-01"] * 11})
    lk.table(ADS, [("ad_day", "date"), ("channel", "string"), ("spend_usd", "double"), ("taps", "bigint")], at=0,
             rows={"ad_day": ["2024-10-31", "2024-11-01", "2024-11-01", "2024-11-02", "2024-11-02"],
                   "channel": ["radio", "radio", "social", "radio", "social"],
                   "spend_usd": [50.0, 30.0, 20.0, 10.0, 40.0], "taps": [10, 6, 5, 4, 20]})
    sm.annotate(cat, RENTALS, {"description": "Bike rentals, one row per rental; fees in cents.",
                               "grain": {"text": "one row per rental", "keys": ["rental_id"]}}, author="ops", time=lk.at(1))
    sm.annotate(cat, RENTALS, {"description": "Fee charged", "unit": "cents"}, column="fee_cents", author="ops", time=lk.at(1))
    sm.annotate(cat, RENTALS, {"description": "Rental status", "enum": ["paid", "void"]}, column="status",
                author="ops", time=lk.at(1))
    sm.annotate(cat, VISITS, {"description": "Website visits; booked_rental_id links the rental a visit booked.",
                              "grain": {"text": "one row per visit", "keys": ["visit_id"]}}, author="ops", time=lk.at(1))
    sm.annotate(cat, VISITS, {"description": "Rental the visit booked; null: no booking"}, column="booked_rental_id",
                author="ops", time=lk.at(1))
    sm.annotate(cat, VISITS, {"description": "Device", "enum": ["phone", "desktop"]}, column="device",
                author="ops", time=lk.at(1))
    sm.annotate(cat, INSP, {"description": "Bike inspections, one row per inspection of a rented bike.",
                            "grain": {"text": "one row per inspection", "keys": ["inspection_id"]}}, author="ops",
                time=lk.at(1))
    sm.annotate(cat, ADS, {"description": "Daily advertising spend and taps per channel.",
                           "grain": {"text": "one row per day and channel", "keys": ["ad_day", "channel"]}},
                author="ops", time=lk.at(1))
    sm.relate(cat, VISITS, RENTALS, on=[("booked_rental_id", "rental_id")], cardinality="many_to_one",
              canonical=True, author="ops", time=lk.at(1))
    sm.relate(cat, INSP, RENTALS, on=[("rental_id", "rental_id")], cardinality="many_to_one", canonical=True,
              author="ops", time=lk.at(1))
    sm.define_metric(cat, RENTALS, "rentals", expression="count(DISTINCT rental_id)", filter="status <> 'void'",
                     time_column="rental_day", description="Number of paid rentals",
                     synonyms=["number of rentals"], author="ops", time=lk.at(1))
    sm.define_metric(cat, RENTALS, "rental_revenue", expression="sum(fee_cents) / 100.0", filter="status <> 'void'",
                     time_column="rental_day", unit="USD", description="Fee revenue of paid rentals",
                     synonyms=["revenue", "sales"], author="ops", time=lk.at(1))
    sm.define_metric(cat, RENTALS, "damage_rate", expression="avg(CASE WHEN damaged THEN 1.0 ELSE 0.0 END)",
                     filter="status <> 'void'", time_column="rental_day", description="Share of paid rentals damaged",
                     author="ops", time=lk.at(1))
    lk.append(RENTALS, {"rental_id": [10], "rental_day": ["2024-12-02"], "fee_cents": [500], "status": ["paid"],
                        "damaged": [False]},
              at=10)
    yield cat
    cat.close()


def test_rate_of_an_event_is_its_link_column_over_all_rows(spoke: Any) -> None:
    ep, vid = ask(spoke, "What was the booking rate by device in November 2024?")
    gold = (f"SELECT device, count(booked_rental_id) * 1.0 / count(*) FROM {VISITS} WHERE visit_day {NOV} "
            "GROUP BY 1")
    assert_same(spoke, ep, vid, gold)


def test_share_of_rows_that_turned_into_an_event(spoke: Any) -> None:
    ep, vid = ask(spoke, "What share of November 2024 visits turned into a rental?")
    gold = f"SELECT count(booked_rental_id) * 1.0 / count(*) FROM {VISITS} WHERE visit_day {NOV}"
    assert_same(spoke, ep, vid, gold)


def test_x_per_y_divides_two_column_sums(spoke: Any) -> None:
    ep, vid = ask(spoke, "What was the cost per tap by channel in November 2024?")
    gold = f"SELECT channel, sum(spend_usd) / sum(taps) FROM {ADS} WHERE ad_day {NOV} GROUP BY 1"
    assert_same(spoke, ep, vid, gold)


def test_average_entity_value_is_a_ratio_of_two_metrics(spoke: Any) -> None:
    # the quantity is named by the metric's own words ("revenue"): no word is mapped to a metric by a rule
    ep, vid = ask(spoke, "What was the average rental revenue in November 2024?")
    gold = (f"SELECT sum(fee_cents) / 100.0 / count(DISTINCT rental_id) FROM {RENTALS} "
            f"WHERE status <> 'void' AND rental_day {NOV}")
    assert_same(spoke, ep, vid, gold)
    assert names(ep).count("query_metric") == 2


def test_average_daily_metric_averages_the_daily_totals(spoke: Any) -> None:
    ep, vid = ask(spoke, "What was the average daily rental revenue in November 2024?")
    gold = (f"SELECT avg(v) FROM (SELECT rental_day, sum(fee_cents) / 100.0 AS v FROM {RENTALS} "
            f"WHERE status <> 'void' AND rental_day {NOV} GROUP BY 1)")
    assert_same(spoke, ep, vid, gold)
    assert rows(spoke, gold, vid) != rows(spoke, f"SELECT avg(fee_cents) / 100.0 FROM {RENTALS} WHERE "
                                                  f"status <> 'void' AND rental_day {NOV}", vid)


def test_more_than_one_related_row_is_a_having_count(spoke: Any) -> None:
    ep, vid = ask(spoke, "How many rentals needed more than one inspection?")
    gold = f"SELECT count(*) FROM (SELECT rental_id FROM {INSP} GROUP BY 1 HAVING count(*) > 1)"
    assert_same(spoke, ep, vid, gold)


def test_more_than_one_related_row_within_the_entitys_window(spoke: Any) -> None:
    ep, vid = ask(spoke, "How many rentals in November 2024 needed more than one inspection?")
    gold = (f"SELECT count(*) FROM (SELECT i.rental_id FROM {INSP} i JOIN {RENTALS} r ON r.rental_id = i.rental_id "
            f"WHERE r.rental_day {NOV} GROUP BY 1 HAVING count(*) > 1)")
    assert_same(spoke, ep, vid, gold)
    assert rows(spoke, gold, vid) != rows(spoke, f"SELECT count(*) FROM (SELECT rental_id FROM {INSP} GROUP BY 1 "
                                                  "HAVING count(*) > 1)", vid)


def test_a_defined_rate_metric_comes_first(spoke: Any) -> None:
    ep, vid = ask(spoke, "What was the rental damage rate in November 2024?")
    gold = f"SELECT count_if(damaged) * 1.0 / count(*) FROM {RENTALS} WHERE status <> 'void' AND rental_day {NOV}"
    assert_same(spoke, ep, vid, gold)
    assert "query_metric" in names(ep)
    every = f"SELECT count_if(damaged) * 1.0 / count(*) FROM {RENTALS} WHERE rental_day {NOV}"
    assert rows(spoke, gold, vid) != rows(spoke, every, vid)  # the metric's filter changes the answer
