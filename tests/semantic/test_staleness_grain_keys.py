"""grain at data depth (issue 45): the keys a table's rows are unique on after a grain change that added
no column: a snapshot column that held one value when the grain was written (an independent tester's
cryptic LTV table, wave 5 session 17). Small lakes of their own, never a trap seed."""

from __future__ import annotations

import datetime as dt
from typing import Any

import semantic as sm
from semantic.models import Fix

T = "acme.core.ltv"
COLS = [("customer_id", "bigint"), ("as_of_month", "date"), ("ltv_cents", "bigint"), ("loaded_at", "timestamp")]


def _month(month: str, stamp: str, bump: int = 0) -> dict[str, list]:
    at = dt.datetime.fromisoformat(stamp)
    return {"customer_id": [1, 2, 3, 4], "as_of_month": [month] * 4,
            "ltv_cents": [1000 + bump, 2500 + bump, 40 + bump, 990 + bump], "loaded_at": [at] * 4}


def _grain(cat, now):
    return [(f.status, f.fixes) for f in sm.staleness(cat, T, depth="data", now=now, merge=False)
            if f.annotation == "table.grain"]


def test_a_snapshot_appended_beside_the_current_one_gets_the_keys_with_its_month(elk):
    """An LTV table holding one month's snapshot (as_of_month one value) gets last month's appended
    beside it: the grain (one row per customer) is stale, and the rows are unique on customer and
    month: set_keys (failed before: no fix, no column was added)."""
    cat = elk.cat
    elk.table(T, COLS, at=0, rows=_month("2025-02-01", "2025-03-01T02:00:00+00:00"))
    sm.annotate(cat, T, {"grain": {"text": "one row per customer", "keys": ["customer_id"]}}, author="a",
                time=elk.day(0.5))
    elk.append(T, _month("2025-01-01", "2025-03-02T02:00:00+00:00", bump=-30), at=1)
    assert _grain(cat, elk.day(1)) == [("stale", [Fix(action="set_keys", params={"keys": ["customer_id", "as_of_month"]})])]


def test_the_same_snapshot_loaded_twice_is_no_new_grain(elk):
    """Control: the same month's rows loaded again, only the load stamp apart: a duplicate load, the
    grain is stale with no keys offered (the stamp is no dimension of the rows)."""
    cat = elk.cat
    elk.table(T, COLS, at=0, rows=_month("2025-02-01", "2025-03-01T02:00:00+00:00"))
    sm.annotate(cat, T, {"grain": {"text": "one row per customer", "keys": ["customer_id"]}}, author="a",
                time=elk.day(0.5))
    elk.append(T, _month("2025-02-01", "2025-03-02T02:00:00+00:00"), at=1)
    assert _grain(cat, elk.day(1)) == [("stale", [])]


def test_a_grain_key_retyped_that_still_identifies_the_rows_is_cleared_by_the_data(elk):
    """A grain key restated from int to text (an item key sent as 'I-000123'): the metadata depth
    suspects the grain (column_type_changed); the data finds the keys still unique and clears it
    (failed before: stale at both depths; an independent tester's TPC-DS catalog_returns). Control:
    keys that repeat after the retype stay flagged (grain_violated)."""
    cat = elk.cat
    r = "acme.core.returns"
    elk.table(r, [("order_no", "bigint"), ("item", "bigint"), ("qty", "int")], at=0,
              rows={"order_no": [1, 1, 2], "item": [10, 11, 10], "qty": [1, 2, 1]})
    sm.annotate(cat, r, {"grain": {"text": "one row per returned line", "keys": ["order_no", "item"]}}, author="a",
                time=elk.day(0.5))
    elk.evolve(r, add=[("item", "string")], drop=["item"], at=1,
               rows={"order_no": [1, 1, 2], "item": ["I-10", "I-11", "I-10"], "qty": [1, 2, 1]})
    assert [f.reason for f in sm.staleness(cat, r, now=elk.day(1), merge=False) if f.annotation == "table.grain"] \
        == ["column_type_changed"]
    assert [f for f in sm.staleness(cat, r, depth="data", now=elk.day(1), merge=False)
            if f.annotation == "table.grain"] == []
    elk.overwrite(r, {"order_no": [1, 1, 2], "item": ["I-10", "I-10", "I-10"], "qty": [1, 2, 1]}, at=2)
    assert [f.reason for f in sm.staleness(cat, r, depth="data", now=elk.day(2), merge=False)
            if f.annotation == "table.grain"] == ["grain_violated"]


def test_a_status_that_gained_values_is_no_snapshot_key(elk):
    """Control: a load log whose status held one value when its grain was written ('complete') gets a
    retried attempt logged again with another status: its keys repeat, and (keys + status) would be
    unique, but a status is no date a snapshot is as of: no keys offered (failed before, this session:
    set_keys [table_name, partition, attempt, status], which accept-all wrote: an independent tester's
    Acme load log)."""
    cat = elk.cat
    log = "acme.ops.load_log"
    at = dt.datetime(2025, 3, 10, 6, tzinfo=dt.timezone.utc)
    elk.table(log, [("table_name", "string"), ("partition", "string"), ("attempt", "int"), ("status", "string"),
                    ("loaded_at", "timestamp")], at=0,
              rows={"table_name": ["a", "b"], "partition": ["2025-03-09"] * 2, "attempt": [1, 1],
                    "status": ["complete"] * 2, "loaded_at": [at, at + dt.timedelta(minutes=3)]})
    sm.annotate(cat, log, {"grain": {"text": "one row per load attempt", "keys": ["table_name", "partition", "attempt"]}},
                author="a", time=elk.day(0.5))
    elk.append(log, {"table_name": ["a", "a"], "partition": ["2025-03-10", "2025-03-10"], "attempt": [1, 1],
                     "status": ["partial", "complete"], "loaded_at": [at + dt.timedelta(days=1),
                                                                    at + dt.timedelta(days=1, hours=2)]}, at=1)
    got = [f for f in sm.staleness(cat, log, depth="data", now=elk.day(1), merge=False) if f.annotation == "table.grain"]
    assert [(f.reason, f.fixes) for f in got] == [("grain_violated", [])]


def test_a_value_merged_into_another_is_followed_when_the_grain_key_came_after_the_enum(elk):
    """An enum written before the table got its surrogate key (SCD2 since: customer_sk, the grain's key
    now); 'platinum' restated 'gold' in place: the rows are followed by the columns both snapshots hold,
    the enum gets value_map {platinum: gold} (failed before: the key did not exist at the enum's basis,
    the read failed and the finding was suspect with no fix: an independent tester's Acme dim_customer)."""
    cat = elk.cat
    d = "acme.core.customers"
    ids = list(range(1, 13))
    tiers = ["none", "silver", "gold", "platinum"] * 3
    elk.table(d, [("customer_id", "bigint"), ("tier", "string"), ("region", "string")], at=0,
              rows={"customer_id": ids, "tier": tiers, "region": ["west", "east"] * 6})
    sm.annotate(cat, d, {"enum": ["none", "silver", "gold", "platinum"]}, column="tier", author="a", time=elk.day(0.5))
    elk.evolve(d, add=[("customer_sk", "bigint")], at=1,
               rows={"customer_id": ids, "tier": tiers, "region": ["west", "east"] * 6, "customer_sk": [100 + i for i in ids]})
    sm.annotate(cat, d, {"grain": {"text": "one row per customer version", "keys": ["customer_sk"]}}, author="a",
                time=elk.day(1.5))
    elk.overwrite(d, {"customer_id": ids, "tier": ["gold" if x == "platinum" else x for x in tiers],
                      "region": ["west", "east"] * 6, "customer_sk": [100 + i for i in ids]}, at=2)
    [f] = [f for f in sm.staleness(cat, d, depth="data", now=elk.day(2), merge=False) if f.reason == "enum_violated"]
    assert f.status == "stale" and f.fixes[0].action == "value_map" and f.fixes[0].params["map"] == {"platinum": "gold"}


def test_a_flag_unique_over_a_handful_of_rows_is_no_surrogate_key(elk):
    """A small dimension (two warehouses) made to keep versions with prefixed text columns
    (w_rec_start_date, w_is_current 'Y'/'N'): its keys repeat; the flag is unique over the two rows
    but no key, nor is the start date alone: the keys are the warehouse and when its version starts
    (failed before: set_keys on one added column unique over two rows; the tester's accept-all wrote
    ["w_is_current"]: an independent tester's TPC-DS warehouse)."""
    cat = elk.cat
    w = "acme.core.warehouse"
    elk.table(w, [("w_warehouse_sk", "bigint"), ("w_name", "string")], at=0,
              rows={"w_warehouse_sk": [1], "w_name": ["north"]})
    sm.annotate(cat, w, {"grain": {"text": "one row per warehouse", "keys": ["w_warehouse_sk"]}}, author="a",
                time=elk.day(0.5))
    elk.evolve(w, add=[("w_rec_start_date", "string"), ("w_is_current", "string")], at=1,
               rows={"w_warehouse_sk": [1, 1], "w_name": ["north", "north-2"],
                     "w_rec_start_date": ["1998-01-01", "2003-01-07"], "w_is_current": ["N", "Y"]})
    got = [f for f in sm.staleness(cat, w, depth="data", now=elk.day(1), merge=False) if f.annotation == "table.grain"]
    assert [x for f in got for x in f.fixes if x.action == "set_keys"] == [
        Fix(action="set_keys", params={"keys": ["w_warehouse_sk", "w_rec_start_date"]})]


def test_a_value_merged_away_beside_a_new_value_gets_the_map_and_the_values_now(elk):
    """camping merged into equipment while kids is new: the enum gets value_map {camping: equipment}
    with the values now, kids among them (failed before: add_enum_values [kids], which kept camping and
    which accept refused: an independent tester's Acme dim_product)."""
    cat = elk.cat
    p = "acme.core.products"
    ids = list(range(1, 13))
    cats = ["apparel", "camping", "equipment"] * 4
    elk.table(p, [("product_id", "bigint"), ("category", "string")], at=0, rows={"product_id": ids, "category": cats})
    sm.annotate(cat, p, {"grain": {"text": "one row per product", "keys": ["product_id"]}}, author="a",
                time=elk.day(0.2))
    sm.annotate(cat, p, {"enum": ["apparel", "camping", "equipment"]}, column="category", author="a", time=elk.day(0.3))
    elk.overwrite(p, {"product_id": [*ids, 13], "category": [*("equipment" if x == "camping" else x for x in cats), "kids"]},
                  at=1)
    [f] = [f for f in sm.staleness(cat, p, depth="data", now=elk.day(1), merge=False) if f.annotation == "column.2.enum"]
    assert f.fixes == [Fix(action="value_map", params={"column": "category", "map": {"camping": "equipment"},
                                                       "values": ["apparel", "equipment", "kids"]})]


def _months(month: str, stamp: str, moved: int) -> dict[str, list]:
    """Ten customers' lifetime value as of `month`; the first `moved` of them bought since the last one."""
    at = dt.datetime.fromisoformat(stamp)
    return {"customer_id": list(range(1, 11)), "as_of_month": [month] * 10,
            "ltv_cents": [1000 * i + (50 if i <= moved else 0) for i in range(1, 11)], "loaded_at": [at] * 10}


def _ltv_months(elk, second_month: str, moved: int) -> dict[str | None, Any]:
    """The LTV table of one month's snapshot, its grain and "as of the last full month" written, then a
    second load (`second_month`, `moved` customers' values moved): the data-depth findings by annotation."""
    cat = elk.cat
    elk.table(T, COLS, at=0, rows=_months("2025-02-01", "2025-03-01T02:00:00+00:00", 0))
    sm.annotate(cat, T, {"grain": {"text": "one row per customer", "keys": ["customer_id"]},
                         "description": "Customer lifetime value as of the last full month."}, author="a",
                time=elk.day(0.5))
    elk.append(T, _months(second_month, "2025-03-02T02:00:00+00:00", moved), at=1)
    return {f.annotation: f for f in sm.staleness(cat, T, depth="data", now=elk.day(1), merge=False)}


def test_month_end_snapshots_of_a_slow_measure_get_the_keys_and_the_as_of_prose_is_flagged(elk):
    """Month-end snapshots where only a minority of customers moved (3 of 10 bought in between: the
    round-22 Acme tester's agg_customer_ltv, 948 of 2,307): set_keys with the month (failed before: no
    fix below half), and the description "as of the last full month" (one snapshot, the latest) is
    flagged now that the month holds several dates (missed before)."""
    found = _ltv_months(elk, "2025-01-01", 3)
    assert found["table.grain"].fixes == [Fix(action="set_keys", params={"keys": ["customer_id", "as_of_month"]})]
    d = found["table.description"]
    assert d.reason == "grain_violated" and "holds one snapshot, the latest, but as_of_month now holds" in d.message


def test_the_same_month_loaded_twice_leaves_the_as_of_prose(elk):
    """Control: the same month loaded twice keeps the description quiet (still one snapshot) and offers
    no keys."""
    found = _ltv_months(elk, "2025-02-01", 0)
    assert found["table.grain"].fixes == [] and "table.description" not in found


def test_a_measure_added_since_the_grain_is_never_offered_as_a_key(elk):
    """A daily mart per store whose money went from cents to dollars (a decimal column added, unique over
    the rows by chance) and which was then rebuilt per channel: the keys offered are the grain's with the
    channel, never with the dollar amount (failed before: set_keys [d, store_id, gross_usd], which
    accept-all wrote: the round-23 Acme tester's agg_daily_store_revenue, wave 5, session 32)."""
    cat = elk.cat
    m = "acme.mart.daily"
    elk.table(m, [("d", "date"), ("store_id", "bigint"), ("gross_cents", "bigint")], at=0,
              rows={"d": ["2025-03-01", "2025-03-01", "2025-03-02"], "store_id": [1, 2, 1], "gross_cents": [100, 250, 175]})
    sm.annotate(cat, m, {"grain": {"text": "one row per date and store", "keys": ["d", "store_id"]}}, author="a",
                time=elk.day(0.5))
    elk.evolve(m, add=[("gross_usd", "decimal(12,2)")], drop=["gross_cents"], at=1,
               rows={"d": ["2025-03-01", "2025-03-01", "2025-03-02"], "store_id": [1, 2, 1], "gross_usd": [1.0, 2.5, 1.75]})
    elk.evolve(m, add=[("channel", "string")], at=2,
               rows={"d": ["2025-03-01"] * 4 + ["2025-03-02"] * 2, "store_id": [1, 1, 2, 2, 1, 1],
                     "gross_usd": [0.4, 0.6, 2.0, 0.5, 1.0, 0.75], "channel": ["web", "store"] * 3})
    got = [(f.status, f.fixes) for f in sm.staleness(cat, m, depth="data", now=elk.day(3), merge=False)
           if f.annotation == "table.grain"]
    assert got == [("stale", [Fix(action="set_keys", params={"keys": ["d", "store_id", "channel"]})])]


SNAP = "acme.core.inventory_daily"


def test_prose_saying_what_a_row_is_per_by_the_grains_keys_states_the_grain(elk):
    """"Daily inventory snapshot per store and product" over (snapshot_date, store_id, product_id): the
    words after "per" name every key but the date, so the text states the grain, and a day loaded twice
    makes it false with the grain, at both depths (round-25 Acme tester: only the grain was flagged; only
    "one row per" prose was read as stating it). Control: "Inventory of the stores, per the ERP feed"
    names no key after "per"."""
    cat = elk.cat
    elk.table(SNAP, [("snapshot_date", "date"), ("store_id", "bigint"), ("product_id", "bigint"),
                     ("on_hand", "bigint")], at=0)
    day = {"store_id": [1, 1, 2, 2], "product_id": [10, 11, 10, 11], "on_hand": [5, 6, 7, 8]}
    for d in (1, 2, 3):
        elk.append(SNAP, {"snapshot_date": [f"2024-11-1{d}"] * 4, **day}, at=d)
    sm.annotate(cat, SNAP, {"grain": {"text": "a store's stock of a product on a day",
                                      "keys": ["snapshot_date", "store_id", "product_id"]},
                            "description": "Daily inventory snapshot per store and product"}, author="a",
                time=elk.day(3.5))
    sm.annotate(cat, SNAP, {"description": "Units on hand (inventory of the stores, per the ERP feed)"},
                column="on_hand", author="a", time=elk.day(3.5))
    elk.append(SNAP, {"snapshot_date": ["2024-11-14"] * 4, **day}, at=4)
    elk.append(SNAP, {"snapshot_date": ["2024-11-14"] * 4, **day}, at=4.5)  # the day loaded twice
    for depth in ("metadata", "data"):
        got = {(f.annotation, f.reason) for f in sm.staleness(cat, SNAP, depth=depth, now=elk.day(5), merge=False)}
        assert ("table.description", "grain_violated") in got, (depth, got)
        assert not any(k == "column.4.description" for k, _r in got), (depth, got)


def test_per_keys_reads_the_words_after_per():
    import importlib

    grain = importlib.import_module("semantic.staleness.grain")

    class _T:
        def __init__(self, types):
            self.types = types

        def col(self, name):
            from catalog_core.lake import Column

            return Column(id=1, name=name, type=self.types[name]) if name in self.types else None

    t = _T({"snapshot_date": "date", "store_id": "bigint", "product_id": "bigint", "store_code": "string"})
    keys = ["snapshot_date", "store_id", "product_id"]
    assert grain.per_keys("daily inventory snapshot per store and product", t, keys)
    assert grain.per_keys("stock per stores, products", t, keys)
    assert not grain.per_keys("stock per store", t, keys)                  # product left unsaid
    assert not grain.per_keys("stock per store and region", t, keys)       # a word naming no key
    assert grain.per_keys("gross sales per store code", t, ["snapshot_date", "store_code"])  # a key's own name
