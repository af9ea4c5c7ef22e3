"""What the Acme annotations say at d-119, how the enriched history updates them after each change,
and the wrong-from-start variants of the stale history's honest control (LAKE.md, Business rules;
HARNESS.md, Stale history)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["INSTRUCTIONS", "TABLE_DOCS", "LOAD_LOG", "LOGGED", "COLUMN_DOCS", "RELATIONSHIPS", "METRICS", "VERIFIED", "Update", "UPDATES",
           "WRONG_FROM_START", "KINDS", "REMOVE"]

REMOVE = object()  # an update that deletes the annotation (its column is gone)

KINDS = ("renamed_or_dropped_column", "unit_change", "grain_drift", "deprecated_without_flag", "wrong_join_key",
         "outdated_enum_or_samples", "stale_freshness_sla", "verified_query_no_longer_runs", "wrong_from_start")

INSTRUCTIONS = """Acme Outfitters lake. Time zone: America/New_York. Columns ending _utc are UTC timestamps; columns
ending _local are the store's local date (the online store, store 0, uses New York). Money is integer cents in
columns ending _cents (divide by 100 for dollars) and dollars in columns ending _usd.
Fiscal calendar: NRF 4-5-4. A fiscal year starts on the Sunday nearest Feb 1 and is named by the calendar year it
starts in: FY2023 = 2023-01-29..2024-02-03 (53 weeks; week 53 belongs to period 12), FY2024 = 2024-02-04..2025-02-01,
FY2025 = 2025-02-02..2026-01-31. Quarters are periods 1-3, 4-6, 7-9, 10-12; periods are 4, 5, 4 weeks long. Use
acme.core.dim_date (fiscal_year, fiscal_quarter, fiscal_period, fiscal_week) rather than computing fiscal dates.
Revenue and sales mean net revenue: sum of fct_order_items.net_line_cents / 100 over orders whose status is not
cancelled, dated by order_date_local; it excludes tax and shipping and does not subtract refunds.
The latest complete day is the latest date for which every load of the tables used succeeded in
acme.ops.etl_load_log (status success)."""

# table -> table fields (annotate(...) at d-119)
TABLE_DOCS: dict[str, dict[str, Any]] = {
    "core.dim_date": {"description": "Calendar and NRF 4-5-4 fiscal calendar, one row per date from 2023-01-29 to 2026-01-31.",
                      "grain": {"text": "one row per date", "keys": ["date"]}, "synonyms": ["calendar", "fiscal calendar"],
                      "certified": True},
    "core.dim_store": {"description": "Stores: physical stores and the online store (store_id 0, region online).",
                       "grain": {"text": "one row per store", "keys": ["store_id"]}, "synonyms": ["shops", "locations"]},
    "core.map_store_code": {"description": "Store codes to store_id by validity range. Store codes are reused: S-014 "
                                           "meant store 14 until 2024-06-30 and store 23 from 2024-07-01. Join on "
                                           "store_code and the code being valid on the date.",
                            "grain": {"text": "one row per store code and validity range", "keys": ["store_code", "valid_from"]}},
    "core.dim_product": {"description": "Products (SKUs) with category, brand, status and prices in cents.",
                         "grain": {"text": "one row per product", "keys": ["product_id"]}, "synonyms": ["items", "skus", "catalog"]},
    "core.dim_customer": {"description": "Customers, one row per customer with their loyalty tier and home region.",
                          "grain": {"text": "one row per customer", "keys": ["customer_id"]},
                          "synonyms": ["members", "shoppers", "accounts"]},
    "core.fct_orders": {"description": "Orders from every channel (web, app, store, marketplace). Status is one of placed, "
                                       "shipped, delivered, cancelled, returned. Money in cents; gross excludes tax and shipping.",
                        "grain": {"text": "one row per order", "keys": ["order_id"]}, "synonyms": ["sales orders", "purchases"],
                        "freshness_sla": "PT26H", "certified": True},
    "core.fct_order_items": {"description": "Order lines. net_line_cents = quantity x unit_price_cents - discount_cents; "
                                            "the source of net revenue (exclude cancelled orders via fct_orders.status).",
                             "grain": {"text": "one row per order line", "keys": ["order_id", "line_no"]},
                             "synonyms": ["order lines", "line items", "sales"], "freshness_sla": "PT26H", "certified": True},
    "core.fct_payments": {"description": "Payment attempts, one to three per order; only status captured moved money.",
                          "grain": {"text": "one row per payment attempt", "keys": ["payment_id"]},
                          "synonyms": ["transactions", "charges"]},
    "core.fct_refunds": {"description": "Refunded order lines, dated by refund_date. Join to order items on (order_id, line_no).",
                         "grain": {"text": "one row per refunded order line", "keys": ["refund_id"]},
                         "synonyms": ["returns", "refunds"]},
    "core.fct_shipments": {"description": "Shipments of web, app and marketplace orders; an order may ship in two.",
                           "grain": {"text": "one row per shipment", "keys": ["shipment_id"]}, "synonyms": ["deliveries"]},
    "core.fct_inventory_daily": {"description": "Daily inventory snapshot per store and product for the last 90 days. "
                                                "Semi-additive: for a period take the last snapshot_date, never sum over dates.",
                                 "grain": {"text": "one row per snapshot date, store and product",
                                           "keys": ["snapshot_date", "store_id", "product_id"]},
                                 "synonyms": ["stock", "on hand"], "freshness_sla": "PT30H"},
    "core.fct_web_sessions": {"description": "Web and app sessions since 2024-02-04; converted_order_id links the order a "
                                             "session converted to. Identified customers carry customer_id.",
                              "grain": {"text": "one row per session", "keys": ["session_id"]},
                              "synonyms": ["visits", "traffic"]},
    "core.fct_loyalty_events": {"description": "Loyalty points events: earn, redeem, expire, adjust.",
                                "grain": {"text": "one row per loyalty event", "keys": ["event_id"]},
                                "synonyms": ["points"]},
    "core.fct_marketing_spend_daily": {"description": "Marketing spend in dollars per date, channel and campaign, with impressions and clicks.",
                                       "grain": {"text": "one row per date, channel and campaign",
                                                 "keys": ["spend_date", "channel", "campaign_id"]},
                                       "synonyms": ["ad spend", "advertising", "media spend"]},
    "raw.pos_transactions": {"description": "Point-of-sale lines as received from stores (store-local timestamps, amounts "
                                            "include tax). Not for reporting: use core.fct_orders and core.fct_order_items.",
                             "grain": {"text": "one row per POS line as received", "keys": []},
                             "not_for_reporting": {"reason": "raw input: store-local timestamps, amounts include tax",
                                                   "use_instead": ["acme.core.fct_orders", "acme.core.fct_order_items"]}},
    "raw.web_orders": {"description": "Web orders as received (placed_at is text, totals include tax and shipping). Not for "
                                      "reporting: use core.fct_orders.", "grain": {"text": "one row per web order as received", "keys": []},
                       "not_for_reporting": {"reason": "raw input: placed_at is text, totals include tax and shipping",
                                             "use_instead": ["acme.core.fct_orders"]}},
    "mart.agg_daily_store_revenue": {"description": "Daily revenue per store and local date, amounts in cents (divide by 100). "
                                                    "Net revenue excludes tax and shipping.",
                                     "grain": {"text": "one row per local date and store", "keys": ["date_local", "store_id"]},
                                     "synonyms": ["daily sales", "store revenue", "revenue by store"], "freshness_sla": "PT26H",
                                     "certified": True},
    "mart.agg_weekly_category_sales": {"description": "Units and net sales per fiscal week and product category, refreshed daily "
                                                      "(the current week is partial).",
                                       "grain": {"text": "one row per fiscal week and category",
                                                 "keys": ["fiscal_year", "fiscal_week", "category"]},
                                       "synonyms": ["category sales", "weekly sales"], "freshness_sla": "PT26H"},
    "mart.rpt_finance_monthly_revenue": {"description": "Finance's recognized revenue (recognized at delivery) per closed fiscal "
                                                        "period, in dollars.",
                                         "grain": {"text": "one row per fiscal period", "keys": ["fiscal_year", "fiscal_period"]},
                                         "synonyms": ["recognized revenue", "finance revenue", "monthly revenue"]},
    "mart.agg_customer_ltv": {"description": "Customer lifetime value as of the last full month (net cents, non-cancelled orders).",
                              "grain": {"text": "one row per customer", "keys": ["customer_id"]},
                              "synonyms": ["lifetime value", "ltv", "customer value"]},
    "legacy.sales_daily": {"description": "Daily gross sales per store code in dollars, including tax.",
                           "grain": {"text": "one row per date and store code", "keys": ["sale_date", "store_code"]},
                           "synonyms": ["daily sales", "sales by store"], "freshness_sla": "P1D"},
    "ops.etl_load_log": {"description": "One row per load attempt of a table partition: status success, partial or failed. "
                                        "A day is complete for a table when its partition's latest attempt succeeded.",
                         "grain": {"text": "one row per load attempt", "keys": ["table_name", "partition", "attempt"]},
                         "synonyms": ["load log", "etl log", "data freshness"]},
}


# the tables acme.ops.etl_load_log records (build.py, _log): each declares it as its load log, a
# structured table field semcat reads partial and failed loads from (semantic.completeness)
LOAD_LOG: dict[str, Any] = {"table": "acme.ops.etl_load_log", "table_column": "table_name", "partition_column": "partition",
                            "status_column": "status", "attempt_column": "attempt", "loaded_at_column": "loaded_at_utc",
                            "complete": ["success"], "partial": ["partial"], "failed": ["failed"],
                            "timezone": "America/New_York"}
LOGGED = ("core.fct_orders", "core.fct_order_items", "core.fct_payments", "core.fct_refunds", "core.fct_loyalty_events",
          "core.fct_marketing_spend_daily", "core.fct_shipments", "core.fct_web_sessions", "core.fct_inventory_daily",
          "mart.agg_daily_store_revenue", "raw.pos_transactions", "raw.web_orders", "legacy.sales_daily")
for _t in LOGGED:
    TABLE_DOCS.setdefault(_t, {})["load_log"] = LOAD_LOG

_ORDER_STATUS_OLD = ["placed", "shipped", "delivered", "cancelled", "returned"]
_ORDER_STATUS_NEW = ["placed", "shipped", "delivered", "cancelled", "refunded", "partially_refunded"]

# (table, column) -> column fields at d-119
COLUMN_DOCS: dict[tuple[str, str], dict[str, Any]] = {
    ("core.dim_date", "date"): {"description": "Calendar date", "role": "time"},
    ("core.dim_date", "fiscal_year"): {"description": "NRF fiscal year, named by the calendar year it starts in",
                                       "sample_values": [2023, 2024, 2025], "role": "dimension"},
    ("core.dim_date", "fiscal_period"): {"description": "Fiscal period 1-12 (4-5-4 weeks per quarter)", "role": "dimension"},
    ("core.dim_date", "fiscal_week"): {"description": "Fiscal week 1-52 (53 in FY2023)", "role": "dimension"},
    ("core.dim_store", "store_id"): {"description": "Store id; 0 is the online store", "role": "id"},
    ("core.dim_store", "store_code"): {"description": "Store code such as S-001; codes are reused after relocations, use "
                                                      "core.map_store_code by date", "sample_values": ["S-001", "S-014"]},
    ("core.dim_store", "region"): {"description": "Sales region of the store", "role": "dimension",
                                   "enum": ["northeast", "southeast", "midwest", "west", "online"]},
    ("core.dim_store", "format"): {"description": "Store format", "enum": ["mall", "street", "outlet", "online"]},
    ("core.dim_product", "category"): {"description": "Product category", "role": "dimension",
                                       "enum": ["apparel", "footwear", "outerwear", "accessories", "equipment", "camping"]},
    ("core.dim_product", "status"): {"description": "Catalog status", "enum": ["active", "discontinued", "preorder"]},
    ("core.dim_product", "list_price_cents"): {"description": "List price", "unit": "cents", "role": "measure"},
    ("core.dim_product", "unit_cost_cents"): {"description": "Unit cost", "unit": "cents", "role": "measure"},
    ("core.dim_customer", "customer_id"): {"description": "Customer id, unique per row", "role": "id"},
    ("core.dim_customer", "loyalty_tier"): {"description": "Current loyalty tier", "role": "dimension",
                                            "enum": ["none", "silver", "gold", "platinum"]},
    ("core.dim_customer", "home_region"): {"description": "Customer's home region",
                                           "enum": ["northeast", "southeast", "midwest", "west"]},
    ("core.fct_orders", "order_id"): {"description": "Order id", "role": "id"},
    ("core.fct_orders", "customer_id"): {"description": "Customer id; null for anonymous store sales", "role": "id",
                                         "null_when": {"state": "anonymous"}},
    ("core.fct_orders", "channel"): {"description": "Sales channel", "role": "dimension",
                                     "enum": ["web", "app", "store", "marketplace"]},
    ("core.fct_orders", "order_ts_utc"): {"description": "Order time in UTC (the local date is order_date_local)", "role": "time"},
    ("core.fct_orders", "order_date_local"): {"description": "The store's local date of the order; date revenue by this",
                                              "role": "time"},
    ("core.fct_orders", "status"): {"description": "Order status; returned means the whole order was returned",
                                    "enum": _ORDER_STATUS_OLD, "sample_values": ["delivered", "returned", "cancelled"]},
    ("core.fct_orders", "gross_cents"): {"description": "Sum of quantity x unit price over the lines", "unit": "cents"},
    ("core.fct_orders", "tax_cents"): {"description": "Sales tax", "unit": "cents"},
    ("core.fct_orders", "shipping_cents"): {"description": "Shipping charged", "unit": "cents"},
    ("core.fct_order_items", "net_line_cents"): {"description": "quantity x unit_price_cents - discount_cents; excludes tax",
                                                 "unit": "cents", "role": "measure", "synonyms": ["net sales", "revenue"]},
    ("core.fct_order_items", "unit_price_cents"): {"description": "Unit price charged", "unit": "cents"},
    ("core.fct_order_items", "discount_cents"): {"description": "Line discount", "unit": "cents"},
    ("core.fct_order_items", "quantity"): {"description": "Units on the line", "role": "measure", "synonyms": ["units"]},
    ("core.fct_payments", "status"): {"description": "Attempt status; only captured moved money",
                                      "enum": ["captured", "failed", "voided"]},
    ("core.fct_payments", "method"): {"description": "Payment method", "enum": ["card", "gift_card", "paypal", "store_credit"]},
    ("core.fct_payments", "amount_cents"): {"description": "Amount attempted (order total incl. tax and shipping)", "unit": "cents"},
    ("core.fct_refunds", "refund_cents"): {"description": "Amount refunded for the line", "unit": "cents", "role": "measure"},
    ("core.fct_refunds", "reason"): {"description": "Refund reason",
                                     "enum": ["damaged", "wrong_size", "not_as_described", "late_delivery", "other"]},
    ("core.fct_refunds", "refund_date"): {"description": "Date of the refund; date refunds by this", "role": "time"},
    ("core.fct_shipments", "carrier"): {"description": "Carrier", "enum": ["ups", "fedex", "usps"]},
    ("core.fct_shipments", "delivered_ts_utc"): {"description": "Delivery time in UTC; null while in transit", "role": "time",
                                                 "null_when": {"state": "in_transit"}},
    ("core.fct_shipments", "shipping_cost_cents"): {"description": "What the carrier charged Acme", "unit": "cents"},
    ("core.fct_inventory_daily", "on_hand_units"): {"description": "Units on hand at end of day (semi-additive)", "role": "measure",
                                                    "additivity": {"kind": "semi_additive",
                                                                   "non_additive_dimension": "snapshot_date", "window": "last"}},
    ("core.fct_web_sessions", "customer_id"): {"description": "Identified customer of the session, null if anonymous", "role": "id"},
    ("core.fct_web_sessions", "converted_order_id"): {"description": "Order the session converted to; null: no order",
                                                      "null_when": {"state": "not_converted"}},
    ("core.fct_web_sessions", "device"): {"description": "Device", "enum": ["desktop", "mobile", "tablet"]},
    ("core.fct_loyalty_events", "event_type"): {"description": "Event type", "enum": ["earn", "redeem", "expire", "adjust"]},
    ("core.fct_loyalty_events", "points"): {"description": "Points (negative for redeem, expire)", "unit": "points"},
    ("core.fct_marketing_spend_daily", "spend_usd"): {"description": "Spend in dollars", "unit": "USD", "role": "measure"},
    ("core.fct_marketing_spend_daily", "channel"): {"description": "Marketing channel",
                                                    "enum": ["search", "social", "email", "display", "affiliate"]},
    ("raw.pos_transactions", "amount_cents"): {"description": "Line amount including tax", "unit": "cents"},
    ("raw.web_orders", "total_cents"): {"description": "Order total including tax and shipping", "unit": "cents"},
    ("mart.agg_daily_store_revenue", "net_revenue_cents"): {"description": "Net revenue (items net of discounts, excl. tax and shipping)",
                                                            "unit": "cents", "role": "measure"},
    ("mart.agg_daily_store_revenue", "gross_revenue_cents"): {"description": "Gross revenue before discounts", "unit": "cents"},
    ("mart.agg_daily_store_revenue", "discount_cents"): {"description": "Discounts", "unit": "cents"},
    ("mart.agg_daily_store_revenue", "refunds_cents"): {"description": "Refunds dated that day", "unit": "cents"},
    ("mart.agg_weekly_category_sales", "net_sales_cents"): {"description": "Net sales", "unit": "cents", "role": "measure"},
    ("mart.rpt_finance_monthly_revenue", "recognized_revenue_usd"): {"description": "Revenue recognized at delivery in the period",
                                                                     "unit": "USD", "role": "measure"},
    ("mart.agg_customer_ltv", "lifetime_net_cents"): {"description": "Lifetime net revenue of the customer", "unit": "cents"},
    ("legacy.sales_daily", "gross_sales_usd"): {"description": "Gross sales including tax", "unit": "USD"},
    ("legacy.sales_daily", "store_code"): {"description": "Store code; map to store_id through core.map_store_code on sale_date"},
    ("ops.etl_load_log", "status"): {"description": "Load status", "enum": ["success", "partial", "failed"]},
    ("ops.etl_load_log", "partition"): {"description": "YYYY-MM-DD of the day loaded; store-level partial loads add /store_id=N"},
    ("ops.etl_load_log", "table_name"): {"description": "namespace.table loaded, e.g. core.fct_orders"},
}

# (from, to, on pairs, cardinality, name, condition)
RELATIONSHIPS: list[tuple[str, str, list[tuple[str, str]], str, str, str | None]] = [
    ("core.fct_order_items", "core.fct_orders", [("order_id", "order_id")], "many_to_one", "order", None),
    ("core.fct_order_items", "core.dim_product", [("product_id", "product_id")], "many_to_one", "product", None),
    ("core.fct_refunds", "core.fct_order_items", [("order_id", "order_id"), ("line_no", "line_no")], "many_to_one", "line", None),
    ("core.fct_orders", "core.dim_store", [("store_id", "store_id")], "many_to_one", "store", None),
    ("core.fct_orders", "core.dim_customer", [("customer_id", "customer_id")], "many_to_one", "customer", None),
    ("core.fct_orders", "core.dim_date", [("order_date_local", "date")], "many_to_one", "order_date", None),
    ("core.fct_payments", "core.fct_orders", [("order_id", "order_id")], "many_to_one", "order", None),
    ("core.fct_shipments", "core.fct_orders", [("order_id", "order_id")], "many_to_one", "order", None),
    ("core.fct_web_sessions", "core.fct_orders", [("converted_order_id", "order_id")], "many_to_one", "converted_order", None),
    ("core.fct_web_sessions", "core.dim_customer", [("customer_id", "customer_id")], "many_to_one", "customer", None),
    ("core.fct_loyalty_events", "core.dim_customer", [("customer_id", "customer_id")], "many_to_one", "customer", None),
    ("core.fct_inventory_daily", "core.dim_store", [("store_id", "store_id")], "many_to_one", "store", None),
    ("core.fct_inventory_daily", "core.dim_product", [("product_id", "product_id")], "many_to_one", "product", None),
    ("mart.agg_daily_store_revenue", "core.dim_store", [("store_id", "store_id")], "many_to_one", "store", None),
    ("mart.agg_daily_store_revenue", "core.dim_date", [("date_local", "date")], "many_to_one", "date", None),
    ("mart.agg_customer_ltv", "core.dim_customer", [("customer_id", "customer_id")], "many_to_one", "customer", None),
    ("core.fct_marketing_spend_daily", "core.dim_date", [("spend_date", "date")], "many_to_one", "date", None),
]

# (table, name, expression, filter, time_column, unit, description, synonyms)
METRICS: list[tuple[str, str, str, str | None, str | None, str, str, list[str]]] = [
    ("core.fct_order_items", "net_revenue", "sum(net_line_cents) / 100.0", "fct_orders.status <> 'cancelled'",
     "order_date_local", "USD", "Net revenue: items net of discounts, excl. tax and shipping, refunds not subtracted",
     ["revenue", "sales", "net sales"]),
    ("core.fct_order_items", "gross_sales", "sum(quantity * unit_price_cents) / 100.0", "fct_orders.status <> 'cancelled'",
     "order_date_local", "USD", "Gross sales before discounts", ["gross revenue"]),
    ("core.fct_order_items", "units_sold", "sum(quantity)", "fct_orders.status <> 'cancelled'", "order_date_local",
     "units", "Units sold", ["units", "quantity sold"]),
    ("core.fct_orders", "orders", "count(DISTINCT order_id)", "status <> 'cancelled'", "order_date_local", "orders",
     "Number of non-cancelled orders", ["order count", "number of orders"]),
    ("core.fct_orders", "returned_orders", "count(DISTINCT order_id)", "status = 'returned'", "order_date_local", "orders",
     "Orders returned in full", ["refunded orders", "returns"]),
    ("core.fct_refunds", "refunds", "sum(refund_cents) / 100.0", None, "refund_date", "USD", "Refunds by refund date",
     ["refund amount"]),
    ("core.fct_payments", "captured_payments", "sum(amount_cents) / 100.0", "status = 'captured'", None, "USD",
     "Money captured (failed and voided attempts excluded)", ["payments", "collected"]),
    ("core.fct_marketing_spend_daily", "marketing_spend", "sum(spend_usd)", None, "spend_date", "USD", "Marketing spend",
     ["ad spend", "spend"]),
    ("mart.agg_daily_store_revenue", "store_net_revenue", "sum(net_revenue_cents) / 100.0", None, "date_local", "USD",
     "Net revenue from the daily store mart", ["daily store revenue"]),
    ("mart.rpt_finance_monthly_revenue", "recognized_revenue", "sum(recognized_revenue_usd)", None, None, "USD",
     "Recognized revenue (finance)", ["finance revenue"]),
]

# name -> (question, sql)
VERIFIED: dict[str, tuple[str, str]] = {
    "net_revenue_fy2023": ("What was net revenue in FY2023?",
                           "SELECT sum(i.net_line_cents) / 100.0 AS net_revenue FROM acme.core.fct_order_items i "
                           "JOIN acme.core.fct_orders o ON o.order_id = i.order_id "
                           "JOIN acme.core.dim_date d ON d.date = o.order_date_local "
                           "WHERE o.status <> 'cancelled' AND d.fiscal_year = 2023"),
    "store_revenue_day": ("Net revenue by store on 2024-11-01",
                          "SELECT store_id, net_revenue_cents / 100.0 AS net_revenue FROM acme.mart.agg_daily_store_revenue "
                          "WHERE date_local = DATE '2024-11-01' ORDER BY store_id"),
    "returned_orders_fy2024_q2": ("How many orders were returned in FY2024 Q2?",
                                  "SELECT count(*) AS orders FROM acme.core.fct_orders o JOIN acme.core.dim_date d "
                                  "ON d.date = o.order_date_local WHERE o.status = 'returned' AND d.fiscal_year = 2024 "
                                  "AND d.fiscal_quarter = 2"),
    "customers_by_tier": ("How many customers are in each loyalty tier?",
                          "SELECT loyalty_tier, count(*) AS customers FROM acme.core.dim_customer GROUP BY loyalty_tier"),
    "recognized_fy2024_p6": ("Recognized revenue in FY2024 period 6",
                             "SELECT recognized_revenue_usd FROM acme.mart.rpt_finance_monthly_revenue "
                             "WHERE fiscal_year = 2024 AND fiscal_period = 6"),
    "sessions_by_tier": ("Sessions by loyalty tier in October 2024",
                         "SELECT c.loyalty_tier, count(*) AS sessions FROM acme.core.fct_web_sessions s "
                         "JOIN acme.core.dim_customer c ON c.customer_id = s.customer_id "
                         "WHERE s.session_date BETWEEN DATE '2024-10-01' AND DATE '2024-10-31' GROUP BY c.loyalty_tier"),
    "captured_oct_2024": ("Captured payments in October 2024",
                          "SELECT sum(p.amount_cents) / 100.0 AS captured FROM acme.core.fct_payments p "
                          "WHERE p.status = 'captured' AND p.attempted_at_utc >= TIMESTAMP '2024-10-01 04:00:00' "
                          "AND p.attempted_at_utc < TIMESTAMP '2024-11-01 04:00:00'"),
    "inventory_on_hand": ("Units on hand per store at the latest snapshot",
                          "SELECT store_id, sum(on_hand_units) AS on_hand FROM acme.core.fct_inventory_daily "
                          "WHERE snapshot_date = (SELECT max(snapshot_date) FROM acme.core.fct_inventory_daily) "
                          "GROUP BY store_id ORDER BY store_id"),
}


@dataclass(frozen=True)
class Update:
    """One annotation update of the enriched history, `days` after the change of day `change`.
    `what`: ("table", field) | ("column", column, field) | ("relationship", name) |
    ("metric", name) | ("verified", name). `value`: the new value (REMOVE deletes it)."""

    change: int            # d-N of the change
    table: str
    what: tuple
    value: Any
    kind: str


_SCD2_NOTE = " Join on is_current (or on the version valid at the order date)."
UPDATES: list[Update] = [
    # d-80: agg_daily_store_revenue rebuilt in dollars
    *[Update(80, "mart.agg_daily_store_revenue", ("column", c, f), REMOVE,
             "unit_change" if f == "unit" else "renamed_or_dropped_column")
      for c in ("net_revenue_cents", "gross_revenue_cents", "discount_cents", "refunds_cents") for f in ("description", "unit")],
    Update(80, "mart.agg_daily_store_revenue", ("table", "description"),
           "Daily revenue per store and local date, amounts in dollars (DECIMAL, *_usd). Net revenue excludes tax and "
           "shipping; refunds are reported separately.", "unit_change"),
    Update(80, "mart.agg_daily_store_revenue", ("metric", "store_net_revenue"),
           ("sum(net_revenue_usd)", None, "date_local"), "renamed_or_dropped_column"),
    Update(80, "mart.agg_daily_store_revenue", ("verified", "store_revenue_day"),
           "SELECT store_id, net_revenue_usd AS net_revenue FROM acme.mart.agg_daily_store_revenue "
           "WHERE date_local = DATE '2024-11-01' ORDER BY store_id", "verified_query_no_longer_runs"),
    # d-60: legacy.sales_daily deprecated
    Update(60, "legacy.sales_daily", ("table", "deprecated"),
           {"reason": "no longer loaded since 2025-01-09; gross includes tax", "replaced_by": "acme.mart.agg_daily_store_revenue",
            "since": "2025-01-09"}, "deprecated_without_flag"),
    Update(60, "legacy.sales_daily", ("table", "description"),
           "DEPRECATED since 2025-01-09 (last loaded then): use acme.mart.agg_daily_store_revenue. Daily gross sales per "
           "store code in dollars, including tax.", "deprecated_without_flag"),
    Update(60, "legacy.sales_daily", ("table", "freshness_sla"), "P3650D", "stale_freshness_sla"),
    # d-45: order status restated
    Update(45, "core.fct_orders", ("column", "status", "enum"), _ORDER_STATUS_NEW, "outdated_enum_or_samples"),
    Update(45, "core.fct_orders", ("column", "status", "sample_values"), ["delivered", "refunded", "partially_refunded",
                                                                          "cancelled"], "outdated_enum_or_samples"),
    Update(45, "core.fct_orders", ("column", "status", "description"),
           "Order status; refunded: every line refunded, partially_refunded: some lines refunded", "outdated_enum_or_samples"),
    Update(45, "core.fct_orders", ("table", "description"),
           "Orders from every channel (web, app, store, marketplace). Status is one of placed, shipped, delivered, "
           "cancelled, refunded, partially_refunded. Money in cents; gross excludes tax and shipping.", "outdated_enum_or_samples"),
    Update(45, "core.fct_orders", ("metric", "returned_orders"), ("count(DISTINCT order_id)", "status = 'refunded'", "order_date_local"),
           "outdated_enum_or_samples"),
    Update(45, "core.fct_orders", ("verified", "returned_orders_fy2024_q2"),
           "SELECT count(*) AS orders FROM acme.core.fct_orders o JOIN acme.core.dim_date d ON d.date = o.order_date_local "
           "WHERE o.status = 'refunded' AND d.fiscal_year = 2024 AND d.fiscal_quarter = 2", "verified_query_no_longer_runs"),
    # d-40: weekly category sales refreshed weekly
    Update(40, "mart.agg_weekly_category_sales", ("table", "freshness_sla"), "P8D", "stale_freshness_sla"),
    Update(40, "mart.agg_weekly_category_sales", ("table", "description"),
           "Units and net sales per fiscal week and product category, refreshed weekly on Mondays with complete weeks "
           "only (the current week is not in it).", "stale_freshness_sla"),
    # d-30: dim_customer becomes SCD2
    Update(30, "core.dim_customer", ("table", "grain"), {"text": "one row per customer version (SCD2)", "keys": ["customer_sk"]},
           "grain_drift"),
    Update(30, "core.dim_customer", ("table", "description"),
           "Customers, SCD2 since 2025-02-08: one row per customer version (valid_from..valid_to, is_current). For a "
           "customer's current tier or region use is_current; for the time of an order use the version valid at the "
           "order date." , "grain_drift"),
    Update(30, "core.dim_customer", ("column", "customer_id", "description"),
           "Customer id; not unique: one row per version, customer_sk is the key", "grain_drift"),
    Update(30, "core.dim_customer", ("column", "loyalty_tier", "description"), "Loyalty tier of this version", "grain_drift"),
    *[Update(30, t, ("relationship", "customer"), ("customer_id", "customer_id", "core.dim_customer.is_current"), "wrong_join_key")
      for t in ("core.fct_orders", "core.fct_loyalty_events", "mart.agg_customer_ltv")],
    Update(30, "core.fct_web_sessions", ("relationship", "customer"),
           ("customer_id", "customer_id", "core.dim_customer.is_current"), "wrong_join_key"),
    Update(30, "core.dim_customer", ("verified", "customers_by_tier"),
           "SELECT loyalty_tier, count(*) AS customers FROM acme.core.dim_customer WHERE is_current GROUP BY loyalty_tier",
           "verified_query_no_longer_runs"),
    # d-20: sessions restated with customer_uuid
    Update(20, "core.fct_web_sessions", ("column", "customer_id", "description"), REMOVE, "renamed_or_dropped_column"),
    Update(20, "core.fct_web_sessions", ("column", "customer_id", "role"), REMOVE, "renamed_or_dropped_column"),
    Update(20, "core.fct_web_sessions", ("relationship", "customer"),
           ("customer_uuid", "customer_uuid", "core.dim_customer.is_current"), "wrong_join_key"),
    Update(20, "core.fct_web_sessions", ("table", "description"),
           "Web and app sessions since 2024-02-04; converted_order_id links the order a session converted to. "
           "Identified customers carry customer_uuid (join core.dim_customer on customer_uuid and is_current).",
           "renamed_or_dropped_column"),
    Update(20, "core.fct_web_sessions", ("verified", "sessions_by_tier"),
           "SELECT c.loyalty_tier, count(*) AS sessions FROM acme.core.fct_web_sessions s "
           "JOIN acme.core.dim_customer c ON c.customer_uuid = s.customer_uuid AND c.is_current "
           "WHERE s.session_date BETWEEN DATE '2024-10-01' AND DATE '2024-10-31' GROUP BY c.loyalty_tier",
           "verified_query_no_longer_runs"),
    # d-10: finance report per region
    Update(10, "mart.rpt_finance_monthly_revenue", ("table", "grain"),
           {"text": "one row per fiscal period and region", "keys": ["fiscal_year", "fiscal_period", "region"]}, "grain_drift"),
    Update(10, "mart.rpt_finance_monthly_revenue", ("table", "description"),
           "Finance's recognized revenue (recognized at delivery) per closed fiscal period and region, in dollars; sum "
           "over regions for a company total.", "grain_drift"),
    Update(10, "mart.rpt_finance_monthly_revenue", ("column", "recognized_revenue_usd", "description"),
           "Revenue recognized at delivery in the period and region", "grain_drift"),
    Update(10, "mart.rpt_finance_monthly_revenue", ("verified", "recognized_fy2024_p6"),
           "SELECT sum(recognized_revenue_usd) AS recognized_revenue_usd FROM acme.mart.rpt_finance_monthly_revenue "
           "WHERE fiscal_year = 2024 AND fiscal_period = 6", "verified_query_no_longer_runs"),
]

# additions of the enriched history that are not updates of an existing annotation (both histories get them)
ADDITIONS: dict[int, list[tuple[str, str, dict[str, Any]]]] = {
    80: [("mart.agg_daily_store_revenue", c, {"description": d, "unit": "USD"}) for c, d in (
        ("net_revenue_usd", "Net revenue in dollars (items net of discounts, excl. tax and shipping)"),
        ("gross_revenue_usd", "Gross revenue before discounts, dollars"), ("discount_usd", "Discounts, dollars"),
        ("refunds_usd", "Refunds dated that day, dollars"))],
    30: [("core.dim_customer", "is_current", {"description": "True for the customer's current version"}),
         ("core.dim_customer", "customer_sk", {"description": "Surrogate key of the customer version", "role": "id"})],
    20: [("core.fct_web_sessions", "customer_uuid", {"description": "Identified customer (dim_customer.customer_uuid)",
                                                     "role": "id"})],
    10: [("mart.rpt_finance_monthly_revenue", "region", {"description": "Region of the store (online for web orders)",
                                                         "enum": ["northeast", "southeast", "midwest", "west", "online"]})],
}

# the honest control: plausible, wrong from the start, and no history can reveal it
# (table, ("table", field) | ("column", column, field), wrong value)
WRONG_FROM_START: list[tuple[str, tuple, Any]] = [
    ("core.fct_order_items", ("column", "net_line_cents", "description"), "Line amount net of refunds, including tax"),
    ("core.fct_payments", ("column", "status", "description"), "Payment status; every attempt is money received"),
    ("core.fct_inventory_daily", ("table", "description"),
     "Daily inventory per store and product; sum on_hand_units over the dates of a period for its stock."),
    ("legacy.sales_daily", ("column", "gross_sales_usd", "description"), "Gross sales excluding tax"),
    ("core.dim_store", ("column", "store_code", "description"), "Store code; its number is the store_id"),
    ("mart.rpt_finance_monthly_revenue", ("column", "recognized_revenue_usd", "unit"), "cents"),
    ("core.fct_orders", ("column", "order_ts_utc", "description"), "Order time in the store's local time"),
    ("core.fct_refunds", ("column", "refund_date", "description"), "Date of the original order"),
    ("mart.agg_customer_ltv", ("column", "lifetime_net_cents", "unit"), "USD"),
    ("core.fct_order_items", ("column", "quantity", "description"), "Units on the line, net of returned units"),
]
