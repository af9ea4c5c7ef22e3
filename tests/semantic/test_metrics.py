"""define_metric (validation, storage), metrics, and metric_sql: compiled SQL run at a snapshot
gives the same rows as hand-written SQL and as a Python aggregation of the generated data,
for every calendar and NRF 4-5-4 fiscal grain; against the embedded and the HTTP catalog."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict

import pytest

import catalog_core as cc
import semantic as sm
from catalog_core import lake
from catalog_core.errors import InvalidValueError
from eval.fixtures.lake_joins import BACKENDS, SCHEMAS, T, fiscal, rows, shop
from semantic import errors as se


@pytest.fixture(scope="module", params=BACKENDS)
def sh(request, tmp_path_factory):
    with shop(request.param, str(tmp_path_factory.mktemp("metrics"))) as s:
        cat = s.cat
        sm.define_metric(cat, T("fct_order_items"), "net_revenue", expression="sum(net_line_cents) / 100.0",
                         filter="status <> 'cancelled'", time_column="order_date_local", unit="USD",
                         description="net revenue, excluding cancelled orders", synonyms=["revenue", "sales"],
                         author="alice")
        sm.define_metric(cat, T("fct_order_items"), "units", expression="sum(quantity)",
                         filter="fct_orders.status <> 'cancelled'", time_column="order_date_local", author="alice")
        sm.define_metric(cat, T("fct_orders"), "orders", expression="count(DISTINCT order_id)",
                         filter="status <> 'cancelled'", time_column="order_ts_utc", author="alice")
        sm.define_metric(cat, T("fct_payments"), "captured_payments", expression="sum(amount_cents) / 100.0",
                         filter="status = 'captured'", author="alice")
        sm.define_metric(cat, T("legacy_sales"), "units", expression="sum(txn_count)", author="alice")
        yield s


def run(cat, sql):
    return cc.run_sql(cat, sql, limit=10_000).rows


DATA = rows()
ORDERS = {o["order_id"]: o for o in DATA["fct_orders"]}
STORES = {s["store_id"]: s for s in DATA["dim_store"]}


# ---------------------------------------------------------------- results against Python and hand SQL

def _grain_key(day: dt.date, grain: str) -> tuple:
    if grain == "day":
        return (day.isoformat(),)
    if grain == "week":
        return ((day - dt.timedelta(days=day.weekday())).isoformat(),)
    if grain == "month":
        return (day.replace(day=1).isoformat(),)
    if grain == "quarter":
        return (dt.date(day.year, 3 * ((day.month - 1) // 3) + 1, 1).isoformat(),)
    if grain == "year":
        return (dt.date(day.year, 1, 1).isoformat(),)
    fy, fq, fp, fw = fiscal(day)
    return {"fiscal_year": (fy,), "fiscal_quarter": (fy, fq), "fiscal_period": (fy, fp), "fiscal_week": (fy, fw)}[grain]


@pytest.mark.parametrize("grain", ["day", "week", "month", "quarter", "year",
                                   "fiscal_week", "fiscal_period", "fiscal_quarter", "fiscal_year"])
def test_every_grain_matches_a_python_aggregation_of_the_data(sh, grain):
    start, end = dt.date(2024, 2, 4), dt.date(2025, 2, 2)  # FY2024
    sql = sm.metric_sql(sh.cat, "net_revenue", group_by=["region"], time_range=(start.isoformat(), end), grain=grain)
    want: dict[tuple, int] = defaultdict(int)
    for it in DATA["fct_order_items"]:
        o = ORDERS[it["order_id"]]
        if o["status"] != "cancelled" and start <= it["order_date_local"] < end:
            want[_grain_key(it["order_date_local"], grain) + (STORES[o["store_id"]]["region"],)] += it["net_line_cents"]
    got = {tuple(r[:-1]): r[-1] for r in run(sh.cat, sql)}
    assert got.keys() == want.keys()
    assert all(round(got[k], 2) == round(want[k] / 100, 2) for k in want)
    assert list(got) == sorted(got)  # ordered by the grain, then the dimension


def test_dimensions_filter_and_fiscal_range_equal_hand_written_sql(sh):
    sql = sm.metric_sql(sh.cat, "net_revenue", group_by=["region", "loyalty_tier"], where="channel = 'store'",
                        time_range=("2024-02-04", "2025-02-02"), grain="fiscal_period")
    hand = """
        SELECT d.fiscal_year, d.fiscal_period, s.region, c.loyalty_tier, sum(i.net_line_cents) / 100.0
        FROM acme.core.fct_order_items i
        JOIN acme.core.fct_orders o ON o.order_id = i.order_id
        JOIN acme.core.dim_store s ON s.store_id = o.store_id
        LEFT JOIN acme.core.dim_customer c ON c.customer_id = o.customer_id AND c.is_current
        JOIN acme.core.dim_date d ON d.date = i.order_date_local
        WHERE o.status <> 'cancelled' AND o.channel = 'store'
          AND i.order_date_local >= DATE '2024-02-04' AND i.order_date_local < DATE '2025-02-02'
        GROUP BY ALL ORDER BY ALL NULLS LAST"""
    got = run(sh.cat, sql)
    assert len(got) > 20 and got == run(sh.cat, hand)
    assert {r[3] for r in got} >= {None, "gold", "silver"}  # anonymous orders keep their rows (LEFT JOIN)


def test_metric_filter_resolves_to_its_own_table_first(sh):
    sql = sm.metric_sql(sh.cat, "captured_payments", group_by=["channel"])
    hand = """SELECT o.channel, sum(p.amount_cents) / 100.0 FROM acme.core.fct_payments p
              JOIN acme.core.fct_orders o ON o.order_id = p.order_id
              WHERE p.status = 'captured' GROUP BY ALL ORDER BY ALL"""
    assert run(sh.cat, sql) == run(sh.cat, hand)
    assert '"fct_payments"."status" = \'captured\'' in sql


def test_timestamp_time_column_and_count_distinct(sh):
    sql = sm.metric_sql(sh.cat, "orders", group_by=["fct_orders.channel", "dim_store.format"],
                        time_range=("2024-06-01", "2024-07-01T00:00:00"), grain="week")
    hand = """SELECT CAST(date_trunc('week', o.order_ts_utc) AS DATE), o.channel, s.format, count(DISTINCT o.order_id)
              FROM acme.core.fct_orders o JOIN acme.core.dim_store s ON s.store_id = o.store_id
              WHERE o.status <> 'cancelled' AND o.order_ts_utc >= TIMESTAMP '2024-06-01'
                AND o.order_ts_utc < TIMESTAMP '2024-07-01' GROUP BY ALL ORDER BY ALL"""
    assert run(sh.cat, sql) == run(sh.cat, hand)
    total = sm.metric_sql(sh.cat, "orders")
    assert run(sh.cat, total) == [[sum(o["status"] != "cancelled" for o in DATA["fct_orders"])]]


def test_bare_dimension_resolves_to_the_nearest_table_and_qualified_names_work(sh):
    sql = sm.metric_sql(sh.cat, "fct_order_items.net_revenue", group_by=["store_id"])
    assert '"fct_orders"."store_id" AS "store_id"' in sql
    sql2 = sm.metric_sql(sh.cat, "acme.core.fct_order_items.net_revenue", group_by=["dim_store.store_id"])
    assert '"dim_store"."store_id" AS "store_id"' in sql2
    assert run(sh.cat, sql) == run(sh.cat, sql2)
    # only the tables a statement needs are joined
    assert "dim_customer" not in sm.metric_sql(sh.cat, "orders", group_by=["region"])


def test_metrics_lists_them_with_provenance(sh):
    every = sm.metrics(sh.cat)
    assert [m.qualified for m in every] == [T("fct_order_items") + ".net_revenue", T("fct_order_items") + ".units",
                                            T("fct_orders") + ".orders", T("fct_payments") + ".captured_payments",
                                            T("legacy_sales") + ".units"]
    (rev, _) = sm.metrics(sh.cat, T("fct_order_items"))
    assert (rev.unit, rev.synonyms, rev.source, rev.author, rev.time_column) == (
        "USD", ["revenue", "sales"], "human", "alice", "order_date_local")
    assert sm.metrics(sh.cat, snapshot=sh.vid_related) == []


def test_define_metric_stores_the_layout_with_a_basis_of_its_own_columns(sh):
    obj = sh.cat.get(lake.semantic_path(T("fct_order_items"), "metric.net_revenue"))
    v = obj.value
    assert (v["kind"], v["key"], v["target"]) == ("metric", "metric.net_revenue", T("fct_order_items"))
    assert v["value"] == {"expression": "sum(net_line_cents) / 100.0", "filter": "status <> 'cancelled'",
                          "time_column": "order_date_local", "unit": "USD",
                          "description": "net revenue, excluding cancelled orders", "synonyms": ["revenue", "sales"]}
    basis = v["provenance"]["basis"]
    assert [c["name"] for c in basis["columns"]] == ["net_line_cents", "order_date_local"]
    assert set(basis["stats"]) == {"net_line_cents", "order_date_local"}
    assert basis["row_count"] == len(DATA["fct_order_items"])


# ---------------------------------------------------------------- errors

@pytest.mark.parametrize("kwargs, exc, words", [
    (dict(expression="sum(net_line_cents +"), se.InvalidExpressionError,
     ["metric expression does not parse at line 1, column", "sum(net_line_cents +"]),
    (dict(expression="net_line_cents / 100"), se.InvalidExpressionError, ["must be an aggregate such as sum(x)"]),
    (dict(expression="net_line_cents + sum(quantity)"), se.InvalidExpressionError,
     ["column 'net_line_cents' is outside an aggregate", "(line 1, column 1)"]),
    (dict(expression="sum(net_line_cent)"), se.UnknownColumnError,
     ["unknown column 'net_line_cent'", "did you mean 'net_line_cents'", "(line 1, column 5)", "    ^"]),
    (dict(expression="sum(fct_payments.amount_cents)"), se.UnknownColumnError,
     ["table 'fct_payments' is not acme.core.fct_order_items or reachable from it by canonical many-to-one joins"]),
    (dict(expression="sum(quantity) over ()"), se.InvalidExpressionError, ["window functions"]),
    (dict(expression="sum(quantity); DROP TABLE x"), se.InvalidExpressionError, ["must be one SQL expression, got 2 statements"]),
    (dict(expression="sum((SELECT 1))"), se.InvalidExpressionError, ["not a statement or subquery"]),
    (dict(expression="sum(quantity)", filter="sum(quantity) > 2"), se.InvalidExpressionError, ["must be a row condition"]),
    (dict(expression="sum(quantity)", filter="stauts = 'x'"), se.UnknownColumnError,
     ["metric filter: unknown column 'stauts'", "fct_orders.status"]),
    (dict(expression="sum(quantity)", time_column="quantity"), se.InvalidAnnotationError,
     ["time_column 'quantity' of acme.core.fct_order_items is int; it must be a DATE or TIMESTAMP column"]),
    (dict(expression="sum(quantity)", time_column="order_date"), se.UnknownColumnError,
     ["time_column 'order_date' is not a column", "did you mean 'order_date_local'"]),
    (dict(expression="sum(quantity)", name="net revenue"), se.InvalidAnnotationError, ["metric name must start with a letter"]),
    (dict(expression="sum(quantity)", table=T("fct_items")), se.UnknownTableError, ["did you mean 'acme.core.fct_order_items'"]),
    (dict(expression="sum(quantity)", synonyms=[""]), se.InvalidAnnotationError, ["synonyms must be a list"]),
    (dict(expression="sum(quantity)", author=" "), se.InvalidAnnotationError, ["author must name who wrote the annotation"]),
])
def test_define_metric_rejects_bad_input_with_a_message_and_writes_nothing(sh, kwargs, exc, words):
    before = sh.cat.latest_vid
    args = {"table": T("fct_order_items"), "name": "m", "author": "alice", **kwargs}
    with pytest.raises(exc) as info:
        sm.define_metric(sh.cat, **args)
    for w in words:
        assert w in str(info.value), (w, str(info.value))
    assert sh.cat.latest_vid == before


@pytest.mark.parametrize("kwargs, exc, words", [
    (dict(metric="net_revenu"), se.UnknownMetricError, ["no metric 'net_revenu'", "did you mean", "net_revenue"]),
    (dict(metric="units"), InvalidValueError,
     ["metric 'units' is ambiguous: acme.core.fct_order_items.units, acme.core.legacy_sales.units"]),
    (dict(group_by=["regin"]), se.UnknownColumnError,
     ["dimension 'regin': unknown column 'regin'", "did you mean", "dim_store.region",
      "columns reachable from acme.core.fct_order_items by canonical many-to-one joins", "dim_customer.loyalty_tier"]),
    (dict(group_by=["fct_payments.method"]), se.UnknownColumnError, ["table 'fct_payments' is not", "reachable tables"]),
    (dict(group_by=["sum(quantity)"]), InvalidValueError, ["must be a column"]),
    (dict(grain="fiscal_month"), InvalidValueError, ["grain must be one of day, week", "did you mean"]),
    (dict(metric="captured_payments", grain="month"), InvalidValueError,
     ["metric acme.core.fct_payments.captured_payments has no time_column"]),
    (dict(time_range=("2024-13-01", None)), InvalidValueError, ["time_range start must be an ISO date"]),
    (dict(time_range=(None, None)), InvalidValueError, ["time_range must be (start, end)"]),
    (dict(where="sum(quantity) > 1"), se.InvalidExpressionError, ["where must be a row condition"]),
    (dict(where="1 = 1; DROP TABLE acme.core.fct_orders"), se.InvalidExpressionError, ["must be one SQL expression"]),
    (dict(where="order_id IN (SELECT order_id FROM acme.core.fct_payments)"), se.InvalidExpressionError, ["subquery"]),
    (dict(where="chanel = 'web'"), se.UnknownColumnError, ["where: unknown column 'chanel'", "fct_orders.channel",
                                                       "(line 1, column 1)"]),
])
def test_metric_sql_rejects_bad_input_with_a_message(sh, kwargs, exc, words):
    args = {"metric": "net_revenue", **kwargs}
    with pytest.raises(exc) as info:
        sm.metric_sql(sh.cat, **args)
    for w in words:
        assert w in str(info.value), (w, str(info.value))


# ---------------------------------------------------------------- the date dimension

def test_dim_date_is_a_real_nrf_454_calendar(sh):
    def span(fy, col, val):
        return run(sh.cat, f"SELECT min(date), max(date), count(*) FROM acme.core.dim_date "
                           f"WHERE fiscal_year = {fy} AND {col} = {val}")[0]
    assert span(2025, "fiscal_period", 1) == ["2025-02-02", "2025-03-01", 28]
    assert span(2025, "fiscal_period", 2) == ["2025-03-02", "2025-04-05", 35]
    assert span(2023, "fiscal_week", 53) == ["2024-01-28", "2024-02-03", 7]
    assert span(2023, "fiscal_period", 12)[2] == 4 * 7 + 7  # a 4-week period plus week 53
    assert span(2024, "fiscal_quarter", 4)[:2] == ["2024-11-03", "2025-02-01"]
    assert run(sh.cat, "SELECT count(DISTINCT fiscal_week) FROM acme.core.dim_date WHERE fiscal_year = 2024") == [[52]]


def test_the_date_dimension_is_found_by_its_columns_and_a_relationship_not_its_name(tmp_path):
    with shop("embedded", str(tmp_path), related=False) as s:
        cat = s.cat
        s.writer.create({"calendar": SCHEMAS["dim_date"]})
        s.writer.append("calendar", DATA["dim_date"])
        sm.define_metric(cat, T("fct_orders"), "orders", expression="count(*)", time_column="order_date_local",
                         author="a")
        with pytest.raises(InvalidValueError, match="grain 'fiscal_year' needs a date dimension"):
            sm.metric_sql(cat, "orders", grain="fiscal_year")
        assert sm.metric_sql(cat, "orders", grain="month")  # calendar grains need no dimension
        sm.relate(cat, T("fct_orders"), T("calendar"), on=[("order_date_local", "date")], author="a")
        sql = sm.metric_sql(cat, "orders", grain="fiscal_year")
        assert '"acme"."core"."calendar"' in sql and "dim_date" not in sql
        want: dict[int, int] = defaultdict(int)
        for o in DATA["fct_orders"]:
            want[fiscal(o["order_date_local"])[0]] += 1
        assert run(cat, sql) == [[fy, n] for fy, n in sorted(want.items())]
