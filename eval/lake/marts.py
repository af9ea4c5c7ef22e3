"""The Acme marts as SQL jobs over the core tables (LAKE.md, issue 38 item 4).

`eval.lake.build` runs each mart's job in Spark over DataFrames it read through the bridge
(`Bridge.read`, so the commit records the tables and vids the job read as the mart's lineage);
`bench/marts_equal.py` and the tests run the same statements in DuckDB. Every statement reads views
named by the plain table name (`fct_orders`, `fct_order_items`, ...) with LAKE.md's plain column
names, and returns the mart's plain columns cast to their LAKE.md types (eval.lake.tables).

Invariants (checked against the generator, `eval.lake.generate.Lake`, by bench/marts_equal.py):
- Over the core tables as a load leaves them, each statement returns exactly the rows the generator
  computes for that load (the same multiset, types and values; integer sums and exact decimals only,
  so no result depends on an aggregation order).
- The SQL is the common subset of Spark SQL and DuckDB: CAST, COALESCE, SUM / COUNT / MIN / MAX,
  joins, DATE literals. Timestamps are turned into dates in UTC (Spark's session time zone in the
  build; DuckDB's TimeZone must be UTC).
- Values are not decoded: on the cryptic variant a coded column (status, category, region) is read
  and written as its code, so a filter on a label takes the label's code (`code=`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

__all__ = ["READS", "daily_store_revenue", "weekly_category_sales", "finance_monthly", "customer_ltv", "sql_for"]

# what each mart's job reads (plain names)
READS: dict[str, tuple[str, ...]] = {
    "mart.agg_daily_store_revenue": ("core.fct_orders", "core.fct_order_items", "core.fct_refunds"),
    "mart.agg_weekly_category_sales": ("core.fct_orders", "core.fct_order_items", "core.dim_product",
                                       "core.dim_date"),
    "mart.rpt_finance_monthly_revenue": ("core.fct_orders", "core.fct_order_items", "core.fct_shipments",
                                         "core.dim_store", "core.dim_date"),
    "mart.agg_customer_ltv": ("core.fct_orders", "core.fct_order_items"),
}

Code = Callable[[str, Any], Any]


def _plain(_column: str, value: Any) -> Any:
    return value


def _lit(d: dt.date) -> str:
    return f"DATE '{d.isoformat()}'"


def _str(s: str) -> str:
    return "'" + str(s).replace("'", "''") + "'"


def daily_store_revenue(lo: dt.date, hi: dt.date, partial: tuple[int, dt.date] | None = None, usd: bool = False,
                        code: Code = _plain) -> str:
    """Per local date and store over non-cancelled orders dated lo..hi: order count, gross, discount and
    net from their lines, refunds dated that day of that store's orders (cents; dollars when `usd`).
    `partial` (store, date): that store's even order ids of that date are missing (a partial POS feed).
    Not run by the build (eval.lake.build.DECLARED_INPUTS says why): the generator's refunds_cents counts
    refunds fct_refunds only receives at the next secondary load, so this equals the built mart only on
    the loads that bring fct_refunds up to date."""
    miss = (f" AND NOT (o.store_id = {int(partial[0])} AND o.order_date_local = {_lit(partial[1])}"
            " AND o.order_id % 2 = 0)") if partial else ""
    names = {"gross": "gross_revenue", "discount": "discount", "net": "net_revenue", "refunds": "refunds"}
    src = {"gross": "a.gross", "discount": "a.discount", "net": "a.net", "refunds": "COALESCE(rf.refunds, 0)"}
    cols = ", ".join(f"CAST(CAST({src[c]} AS DECIMAL(20,0)) / 100 AS DECIMAL(14,2)) AS {n}_usd" if usd
                     else f"CAST({src[c]} AS BIGINT) AS {n}_cents" for c, n in names.items())
    return f"""
WITH li AS (
  SELECT order_id, SUM(quantity * unit_price_cents) AS gross, SUM(discount_cents) AS discount,
         SUM(net_line_cents) AS net
  FROM fct_order_items WHERE order_date_local BETWEEN {_lit(lo)} AND {_lit(hi)} GROUP BY order_id),
a AS (
  SELECT o.order_date_local AS date_local, o.store_id, COUNT(*) AS order_count,
         COALESCE(SUM(li.gross), 0) AS gross, COALESCE(SUM(li.discount), 0) AS discount,
         COALESCE(SUM(li.net), 0) AS net
  FROM fct_orders o LEFT JOIN li ON li.order_id = o.order_id
  WHERE o.order_date_local BETWEEN {_lit(lo)} AND {_lit(hi)} AND o.status <> {_str(code("status", "cancelled"))}{miss}
  GROUP BY o.order_date_local, o.store_id),
rf AS (
  SELECT r.refund_date AS date_local, o.store_id, SUM(r.refund_cents) AS refunds
  FROM fct_refunds r JOIN fct_orders o ON o.order_id = r.order_id
  WHERE r.refund_date BETWEEN {_lit(lo)} AND {_lit(hi)}
  GROUP BY r.refund_date, o.store_id)
SELECT a.date_local, CAST(a.store_id AS INT) AS store_id, CAST(a.order_count AS INT) AS order_count,
       {cols}
FROM a LEFT JOIN rf ON rf.date_local = a.date_local AND rf.store_id = a.store_id
ORDER BY 1, 2"""


def weekly_category_sales(upto: dt.date, code: Code = _plain) -> str:
    """Units and net sales per fiscal year, fiscal week and category of the non-cancelled orders' lines
    dated up to `upto`."""
    return f"""
SELECT CAST(d.fiscal_year AS INT) AS fiscal_year, CAST(d.fiscal_week AS INT) AS fiscal_week, p.category,
       CAST(SUM(i.quantity) AS BIGINT) AS units, CAST(SUM(i.net_line_cents) AS BIGINT) AS net_sales_cents
FROM fct_order_items i
JOIN fct_orders o ON o.order_id = i.order_id
JOIN dim_product p ON p.product_id = i.product_id
JOIN dim_date d ON d.date = i.order_date_local
WHERE i.order_date_local <= {_lit(upto)} AND o.status <> {_str(code("status", "cancelled"))}
GROUP BY d.fiscal_year, d.fiscal_week, p.category
ORDER BY 1, 2, 3"""


def finance_monthly(closed_before: dt.date, by_region: bool, code: Code = _plain) -> str:
    """Recognized revenue (net of the order's lines) and order count per closed fiscal period (and the
    store's region when `by_region`): a store order at its order date, any other at its last delivery
    (UTC date; undelivered orders are not recognized); periods ending before `closed_before`."""
    region = "s.region" if by_region else "CAST(NULL AS STRING)"  # one group per period without regions
    region_out = "r.region, " if by_region else ""
    return f"""
WITH net AS (SELECT order_id, SUM(net_line_cents) AS net FROM fct_order_items GROUP BY order_id),
dl AS (SELECT order_id, MAX(CAST(delivered_ts_utc AS DATE)) AS d FROM fct_shipments
       WHERE delivered_ts_utc IS NOT NULL GROUP BY order_id),
per AS (SELECT x.fiscal_year, x.fiscal_period, MAX(x.date) AS period_end FROM dim_date x
        GROUP BY x.fiscal_year, x.fiscal_period),
rec AS (
  SELECT o.order_id, o.store_id,
         CASE WHEN o.channel = {_str(code("channel", "store"))} THEN o.order_date_local ELSE dl.d END AS d
  FROM fct_orders o LEFT JOIN dl ON dl.order_id = o.order_id
  WHERE o.status <> {_str(code("status", "cancelled"))}),
r AS (
  SELECT dd.fiscal_year, dd.fiscal_period, {region} AS region, COALESCE(SUM(net.net), 0) AS cents,
         COUNT(*) AS order_count
  FROM rec JOIN dim_date dd ON dd.date = rec.d
  JOIN per ON per.fiscal_year = dd.fiscal_year AND per.fiscal_period = dd.fiscal_period
  JOIN dim_store s ON s.store_id = rec.store_id
  LEFT JOIN net ON net.order_id = rec.order_id
  WHERE per.period_end < {_lit(closed_before)}
  GROUP BY dd.fiscal_year, dd.fiscal_period, {region})
SELECT CAST(r.fiscal_year AS INT) AS fiscal_year, CAST(r.fiscal_period AS INT) AS fiscal_period, {region_out}
       CAST(CAST(r.cents AS DECIMAL(20,0)) / 100 AS DECIMAL(14,2)) AS recognized_revenue_usd,
       CAST(r.order_count AS INT) AS order_count
FROM r ORDER BY 1, 2{', 3' if by_region else ''}"""


def customer_ltv(as_of_month: dt.date, code: Code = _plain) -> str:
    """Per customer with non-cancelled orders before the month after `as_of_month`: first and last order
    date, order count, lifetime net (cents)."""
    nxt = (as_of_month.replace(day=28) + dt.timedelta(days=4)).replace(day=1)
    return f"""
WITH net AS (SELECT order_id, SUM(net_line_cents) AS net FROM fct_order_items GROUP BY order_id)
SELECT CAST(o.customer_id AS BIGINT) AS customer_id, MIN(o.order_date_local) AS first_order_date,
       MAX(o.order_date_local) AS last_order_date, CAST(COUNT(*) AS INT) AS order_count,
       CAST(COALESCE(SUM(net.net), 0) AS BIGINT) AS lifetime_net_cents, {_lit(as_of_month)} AS as_of_month
FROM fct_orders o LEFT JOIN net ON net.order_id = o.order_id
WHERE o.customer_id IS NOT NULL AND o.status <> {_str(code("status", "cancelled"))}
  AND o.order_date_local < {_lit(nxt)}
GROUP BY o.customer_id ORDER BY 1"""


def sql_for(mart: str, params: dict[str, Any], code: Code = _plain) -> str:
    """The statement of `mart` (plain name) for one build step's parameters (see build.History)."""
    if mart == "mart.agg_daily_store_revenue":
        return daily_store_revenue(params["lo"], params["hi"], params.get("partial"), params.get("usd", False), code)
    if mart == "mart.agg_weekly_category_sales":
        return weekly_category_sales(params["upto"], code)
    if mart == "mart.rpt_finance_monthly_revenue":
        return finance_monthly(params["closed_before"], params["by_region"], code)
    if mart == "mart.agg_customer_ltv":
        return customer_ltv(params["as_of_month"], code)
    raise ValueError(f"{mart!r} is not a mart; one of {', '.join(READS)}")
