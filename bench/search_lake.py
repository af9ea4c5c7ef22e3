"""The search benchmark's lake: the 22 tables of ../shared/eval/LAKE.md (names, columns, types), empty,
in catalog `acme`, with two conditions:

- bare: names, types and partitions only;
- enriched: what LAKE.md says, written as annotations mechanically from the table below: the grain
  text as description and its bold keys as grain keys, every "enum" list as the column's enum, every
  parenthetical column note as the column's description, `*_cents` / `*_usd` units (LAKE.md's money
  convention), the business-rule terms as metrics (with the synonyms LAKE.md gives: revenue, sales,
  AOV), the deprecation of legacy.sales_daily, and the catalog's conventions as instructions.

Nothing here was written with the search questions in view; the text is LAKE.md's.

    from bench.search_lake import build
    cat = build(root, enriched=True)
"""

from __future__ import annotations

import re
from typing import Any

import catalog_core as cc
import semantic as sm

# (table, grain text, partition_by, [(column, type, note)]); bold keys of LAKE.md are marked "*" in the name.
TABLES: list[tuple[str, str, list[str], list[tuple[str, str, str]]]] = [
    ("core.dim_date", "one row per date, 2023-01-29..2026-01-31", [], [
        ("*date", "date", ""), ("day_of_week", "string", "Mon..Sun"), ("is_weekend", "boolean", ""),
        ("calendar_year", "int", ""), ("calendar_quarter", "int", ""), ("calendar_month", "int", ""),
        ("fiscal_year", "int", ""), ("fiscal_quarter", "int", ""), ("fiscal_period", "int", ""),
        ("fiscal_week", "int", ""), ("fiscal_year_start", "date", ""), ("is_holiday", "boolean", "")]),
    ("core.dim_store", "one row per store (~24; store 0 is the online store)", [], [
        ("*store_id", "int", ""), ("store_code", "string", "S-001.."), ("store_name", "string", ""),
        ("region", "string", "enum: northeast, southeast, midwest, west, online"),
        ("format", "string", "enum: mall, street, outlet, online"), ("timezone", "string", ""),
        ("opened_date", "date", ""), ("closed_date", "date", "null: open")]),
    ("core.map_store_code", "one row per store code and validity range", [], [
        ("*store_code", "string", ""), ("*valid_from", "date", ""), ("valid_to", "date", "null: current"),
        ("store_id", "int", "")]),
    ("core.dim_product", "one row per product (~600)", [], [
        ("*product_id", "int", ""), ("sku", "string", ""), ("product_name", "string", ""),
        ("category", "string", "enum: apparel, footwear, outerwear, accessories, equipment, camping"),
        ("subcategory", "string", ""), ("brand", "string", ""),
        ("status", "string", "enum: active, discontinued, preorder"), ("list_price_cents", "bigint", ""),
        ("unit_cost_cents", "bigint", "")]),
    ("core.dim_customer", "until d-30: one row per customer; from d-30: SCD2, one row per customer version", [], [
        ("*customer_sk", "bigint", "from d-30"), ("customer_id", "bigint", "unique until d-30"),
        ("customer_uuid", "string", ""), ("signup_date", "date", ""),
        ("loyalty_tier", "string", "enum: none, silver, gold, platinum"),
        ("home_region", "string", "enum: northeast, southeast, midwest, west"), ("email_domain", "string", ""),
        ("valid_from", "date", ""), ("valid_to", "date", "null: current"), ("is_current", "boolean", "")]),
    ("core.fct_orders", "one row per order; partitioned by order_date_local", ["order_date_local"], [
        ("*order_id", "bigint", ""), ("customer_id", "bigint", "null: anonymous store sale"), ("store_id", "int", ""),
        ("channel", "string", "enum: web, app, store, marketplace"), ("order_ts_utc", "timestamp", ""),
        ("order_date_local", "date", ""),
        ("status", "string", "enum: placed, shipped, delivered, cancelled, refunded, partially_refunded"),
        ("gross_cents", "bigint", ""), ("discount_cents", "bigint", ""), ("tax_cents", "bigint", ""),
        ("shipping_cents", "bigint", "")]),
    ("core.fct_order_items", "one row per order line; partitioned by order_date_local", ["order_date_local"], [
        ("*order_id", "bigint", ""), ("*line_no", "int", ""), ("product_id", "int", ""), ("quantity", "int", ""),
        ("unit_price_cents", "bigint", ""), ("discount_cents", "bigint", ""),
        ("net_line_cents", "bigint", "= quantity × unit_price_cents − discount_cents"),
        ("order_date_local", "date", "")]),
    ("core.fct_payments", "one row per payment attempt (1-3 per order)", [], [
        ("*payment_id", "bigint", ""), ("order_id", "bigint", ""), ("attempt_no", "int", ""),
        ("method", "string", "enum: card, gift_card, paypal, store_credit"),
        ("status", "string", "enum: captured, failed, voided"), ("amount_cents", "bigint", ""),
        ("attempted_at_utc", "timestamp", "")]),
    ("core.fct_refunds", "one row per refunded order line", [], [
        ("*refund_id", "bigint", ""), ("order_id", "bigint", ""), ("line_no", "int", ""), ("refund_date", "date", ""),
        ("refund_cents", "bigint", ""),
        ("reason", "string", "enum: damaged, wrong_size, not_as_described, late_delivery, other")]),
    ("core.fct_shipments", "one row per shipment (an order may ship in 2)", [], [
        ("*shipment_id", "bigint", ""), ("order_id", "bigint", ""), ("carrier", "string", "enum: ups, fedex, usps"),
        ("shipped_ts_utc", "timestamp", ""), ("delivered_ts_utc", "timestamp", "null: in transit"),
        ("shipping_cost_cents", "bigint", "")]),
    ("core.fct_inventory_daily", "one row per snapshot date, store and product; last 90 days; semi-additive", [], [
        ("*snapshot_date", "date", ""), ("*store_id", "int", ""), ("*product_id", "int", ""),
        ("on_hand_units", "int", ""), ("on_order_units", "int", "")]),
    ("core.fct_web_sessions", "one row per web/app session; partitioned by session_date", ["session_date"], [
        ("*session_id", "string", ""), ("customer_id", "bigint", "until d-20"),
        ("customer_uuid", "string", "from d-20"), ("started_at_utc", "timestamp", ""), ("session_date", "date", ""),
        ("device", "string", "enum: desktop, mobile, tablet"), ("channel", "string", "enum: web, app"),
        ("landing_page", "string", ""), ("converted_order_id", "bigint", "null: no order")]),
    ("core.fct_loyalty_events", "one row per loyalty event", [], [
        ("*event_id", "bigint", ""), ("customer_id", "bigint", ""),
        ("event_type", "string", "enum: earn, redeem, expire, adjust"), ("points", "int", ""),
        ("event_date", "date", "")]),
    ("core.fct_marketing_spend_daily", "one row per date, channel and campaign", [], [
        ("*spend_date", "date", ""), ("*channel", "string", "enum: search, social, email, display, affiliate"),
        ("*campaign_id", "string", ""), ("spend_usd", "decimal(12,2)", ""), ("impressions", "bigint", ""),
        ("clicks", "bigint", "")]),
    ("raw.pos_transactions", "one row per POS line, as received", [], [
        ("txn_id", "bigint", ""), ("line_no", "int", ""), ("store_code", "string", ""),
        ("txn_ts_local", "timestamp", "store-local, no zone"), ("sku", "string", ""), ("qty", "int", ""),
        ("amount_cents", "bigint", "includes tax"), ("tender", "string", "")]),
    ("raw.web_orders", "one row per web order, as received", [], [
        ("order_id", "bigint", ""), ("customer_email_hash", "string", ""), ("placed_at", "string", "ISO-8601 text"),
        ("total_cents", "bigint", "includes tax and shipping"), ("item_count", "int", ""),
        ("payload", "string", "JSON")]),
    ("mart.agg_daily_store_revenue", "one row per local date and store; partitioned by date_local", ["date_local"], [
        ("*date_local", "date", ""), ("*store_id", "int", ""), ("order_count", "int", ""),
        ("gross_revenue_usd", "decimal(14,2)", ""), ("discount_usd", "decimal(14,2)", ""),
        ("net_revenue_usd", "decimal(14,2)", ""), ("refunds_usd", "decimal(14,2)", "")]),
    ("mart.agg_weekly_category_sales", "one row per fiscal week and category", [], [
        ("*fiscal_year", "int", ""), ("*fiscal_week", "int", ""), ("*category", "string", ""), ("units", "bigint", ""),
        ("net_sales_cents", "bigint", "")]),
    ("mart.rpt_finance_monthly_revenue",
     "until d-10: one row per fiscal period; from d-10: per fiscal period and region", [], [
        ("*fiscal_year", "int", ""), ("*fiscal_period", "int", ""), ("region", "string", "from d-10"),
        ("recognized_revenue_usd", "decimal(14,2)", ""), ("order_count", "int", "")]),
    ("mart.agg_customer_ltv", "one row per customer, as of the last full month", [], [
        ("*customer_id", "bigint", ""), ("first_order_date", "date", ""), ("last_order_date", "date", ""),
        ("order_count", "int", ""), ("lifetime_net_cents", "bigint", ""), ("as_of_month", "date", "")]),
    ("legacy.sales_daily", "one row per date and store code; deprecated at d-60, replaced by "
                           "mart.agg_daily_store_revenue; last loaded d-60", [], [
        ("sale_date", "date", ""), ("store_code", "string", ""), ("gross_sales_usd", "decimal(14,2)", "includes tax"),
        ("txn_count", "int", "")]),
    ("ops.etl_load_log", "one row per load attempt", [], [
        ("table_name", "string", "dotted without the catalog, e.g. core.fct_orders"),
        ("partition", "string", "YYYY-MM-DD of the day loaded; for a store-level partial load also store_id=17"),
        ("attempt", "int", ""), ("status", "string", "enum: success, partial, failed"),
        ("loaded_at_utc", "timestamp", ""), ("row_count", "bigint", ""), ("note", "string", "")]),
]

# LAKE.md "Business rules": (table, metric, expression, filter, time column, description, synonyms)
METRICS: list[tuple[str, str, str, str | None, str | None, str, list[str]]] = [
    ("core.fct_order_items", "net_revenue", "sum(net_line_cents) / 100.0", None, "order_date_local",
     "net revenue (the default meaning of revenue and sales): sum of net_line_cents / 100 over orders whose "
     "status is not cancelled; excludes tax and shipping; refunds are not subtracted", ["revenue", "sales"]),
    ("core.fct_order_items", "gross_sales", "sum(quantity * unit_price_cents) / 100.0", None, "order_date_local",
     "gross sales: sum of quantity x unit_price_cents / 100, same orders", []),
    ("core.fct_order_items", "units_sold", "sum(quantity)", None, "order_date_local", "units sold: sum of quantity",
     []),
    ("core.fct_orders", "orders", "count(DISTINCT order_id)", "status <> 'cancelled'", "order_date_local",
     "orders: count of distinct non-cancelled order_id; AOV = net revenue / orders", ["AOV"]),
    ("core.fct_refunds", "refunds", "sum(refund_cents) / 100.0", None, "refund_date",
     "refunds: sum of refund_cents / 100, dated by refund_date; joined to items on (order_id, line_no)", []),
    ("core.fct_payments", "captured_payments", "sum(amount_cents) / 100.0", "status = 'captured'", None,
     "captured payments: sum of amount_cents / 100 where payment status = captured (never count failed or "
     "voided attempts)", []),
    ("core.fct_web_sessions", "conversion_rate", "count(converted_order_id) * 1.0 / count(*)", None, "session_date",
     "conversion rate: sessions with a converted_order_id / all sessions", []),
    ("core.fct_marketing_spend_daily", "marketing_spend", "sum(spend_usd)", None, "spend_date",
     "marketing spend: sum of spend_usd", []),
    ("core.fct_marketing_spend_daily", "cost_per_click", "sum(spend_usd) / sum(clicks)", None, "spend_date",
     "cost per click = spend / clicks", []),
    ("mart.rpt_finance_monthly_revenue", "recognized_revenue", "sum(recognized_revenue_usd)", None, None,
     "recognized revenue: the finance report's recognized_revenue_usd (revenue recognized at delivery)", []),
]

INSTRUCTIONS = ("Company time zone America/New_York. *_utc columns are UTC timestamps; *_local dates are the store's "
                "local date. Money is integer cents (*_cents) in core facts and most marts; USD (*_usd) where the name "
                "says so. Fiscal calendar: NRF 4-5-4.")


def names() -> list[str]:
    return ["acme." + t[0] for t in TABLES]


def build(root: str, enriched: bool) -> cc.Catalog:
    """The lake at `root` (a new directory); with `enriched`, LAKE.md's annotations."""
    cat = cc.Catalog.open(root + "/data")
    with cat.transaction(author="etl", message="create the acme lake") as txn:
        txn.add("/acme", {"obj_type": "catalog", "properties": {}})
        for ns in sorted({t[0].split(".")[0] for t in TABLES}):
            txn.add(f"/acme/{ns}", {"obj_type": "namespace", "properties": {}})
        for name, _grain, part, cols in TABLES:
            schema = {"schema_id": 0, "columns": [{"id": i + 1, "name": c.lstrip("*"), "type": ty, "nullable": True}
                                                  for i, (c, ty, _n) in enumerate(cols)]}
            txn.add("/acme/" + name.replace(".", "/"), {
                "obj_type": "table", "location": f"{root}/files/{name}", "format": "parquet", "schema": schema,
                "partition_by": part, "properties": {},
                "stats": {"row_count": 0, "file_count": 0, "size_bytes": 0, "columns": {}}})
    if enriched:
        enrich(cat)
    return cat


def enrich(cat: Any) -> None:
    who = {"author": "data-team", "source": "human"}
    sm.annotate(cat, "acme", {"instructions": INSTRUCTIONS}, **who)
    for name, grain, _part, cols in TABLES:
        full = "acme." + name
        keys = [c.lstrip("*") for c, _t, _n in cols if c.startswith("*")]
        fields: dict[str, Any] = {"description": grain, "grain": {"text": grain, "keys": keys}}
        if name.startswith("legacy."):
            fields["deprecated"] = {"reason": "deprecated at d-60; last loaded d-60",
                                    "replaced_by": "acme.mart.agg_daily_store_revenue", "since": "2025-01-09"}
        sm.annotate(cat, full, fields, **who)
        for c, _t, note in cols:
            col = c.lstrip("*")
            cf: dict[str, Any] = {}
            m = re.match(r"enum: (.*)", note)
            if m:
                cf["enum"] = [v.strip() for v in m.group(1).split(",")]
            elif note:
                cf["description"] = note
            if col.endswith("_cents"):
                cf["unit"] = "cents"
            elif col.endswith("_usd"):
                cf["unit"] = "USD"
            if cf:
                sm.annotate(cat, full, cf, column=col, **who)
    for table, metric, expr, filt, tcol, desc, syn in METRICS:
        sm.define_metric(cat, "acme." + table, metric, expression=expr, filter=filt, time_column=tcol,
                         description=desc, synonyms=syn, **who)
