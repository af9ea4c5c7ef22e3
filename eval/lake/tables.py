"""The 22 tables of LAKE.md: names, column types (as written through Spark) and partitioning."""

from __future__ import annotations

import pyarrow as pa

__all__ = ["CATALOG", "TABLES", "Table", "arrow_schema", "full_name"]

CATALOG = "acme"

INT, BIG, STR, DATE, BOOL = pa.int32(), pa.int64(), pa.string(), pa.date32(), pa.bool_()
TS, TSN = pa.timestamp("us", tz="UTC"), pa.timestamp("us")
USD14, USD12 = pa.decimal128(14, 2), pa.decimal128(12, 2)


class Table:
    def __init__(self, name: str, columns: list[tuple[str, pa.DataType]], partition_by: list[str] | None = None):
        self.name, self.columns, self.partition_by = name, columns, partition_by or []

    @property
    def full(self) -> str:
        return f"{CATALOG}.{self.name}"

    def with_columns(self, columns: list[tuple[str, pa.DataType]]) -> "Table":
        return Table(self.name, columns, self.partition_by)


def full_name(name: str) -> str:
    return name if name.startswith(CATALOG + ".") else f"{CATALOG}.{name}"


_T = [
    Table("core.dim_date", [("date", DATE), ("day_of_week", STR), ("is_weekend", BOOL), ("calendar_year", INT),
                            ("calendar_quarter", INT), ("calendar_month", INT), ("fiscal_year", INT),
                            ("fiscal_quarter", INT), ("fiscal_period", INT), ("fiscal_week", INT),
                            ("fiscal_year_start", DATE), ("is_holiday", BOOL)]),
    Table("core.dim_store", [("store_id", INT), ("store_code", STR), ("store_name", STR), ("region", STR),
                             ("format", STR), ("timezone", STR), ("opened_date", DATE), ("closed_date", DATE)]),
    Table("core.map_store_code", [("store_code", STR), ("valid_from", DATE), ("valid_to", DATE), ("store_id", INT)]),
    Table("core.dim_product", [("product_id", INT), ("sku", STR), ("product_name", STR), ("category", STR),
                               ("subcategory", STR), ("brand", STR), ("status", STR), ("list_price_cents", BIG),
                               ("unit_cost_cents", BIG)]),
    Table("core.dim_customer", [("customer_id", BIG), ("customer_uuid", STR), ("signup_date", DATE),
                                ("loyalty_tier", STR), ("home_region", STR), ("email_domain", STR)]),
    Table("core.fct_orders", [("order_id", BIG), ("customer_id", BIG), ("store_id", INT), ("channel", STR),
                              ("order_ts_utc", TS), ("order_date_local", DATE), ("status", STR), ("gross_cents", BIG),
                              ("discount_cents", BIG), ("tax_cents", BIG), ("shipping_cents", BIG)],
          ["order_date_local"]),
    Table("core.fct_order_items", [("order_id", BIG), ("line_no", INT), ("product_id", INT), ("quantity", INT),
                                   ("unit_price_cents", BIG), ("discount_cents", BIG), ("net_line_cents", BIG),
                                   ("order_date_local", DATE)], ["order_date_local"]),
    Table("core.fct_payments", [("payment_id", BIG), ("order_id", BIG), ("attempt_no", INT), ("method", STR),
                                ("status", STR), ("amount_cents", BIG), ("attempted_at_utc", TS)]),
    Table("core.fct_refunds", [("refund_id", BIG), ("order_id", BIG), ("line_no", INT), ("refund_date", DATE),
                               ("refund_cents", BIG), ("reason", STR)]),
    Table("core.fct_shipments", [("shipment_id", BIG), ("order_id", BIG), ("carrier", STR), ("shipped_ts_utc", TS),
                                 ("delivered_ts_utc", TS), ("shipping_cost_cents", BIG)]),
    Table("core.fct_inventory_daily", [("snapshot_date", DATE), ("store_id", INT), ("product_id", INT),
                                       ("on_hand_units", INT), ("on_order_units", INT)]),
    Table("core.fct_web_sessions", [("session_id", STR), ("customer_id", BIG), ("started_at_utc", TS),
                                    ("session_date", DATE), ("device", STR), ("channel", STR), ("landing_page", STR),
                                    ("converted_order_id", BIG)], ["session_date"]),
    Table("core.fct_loyalty_events", [("event_id", BIG), ("customer_id", BIG), ("event_type", STR), ("points", INT),
                                      ("event_date", DATE)]),
    Table("core.fct_marketing_spend_daily", [("spend_date", DATE), ("channel", STR), ("campaign_id", STR),
                                             ("spend_usd", USD12), ("impressions", BIG), ("clicks", BIG)]),
    Table("raw.pos_transactions", [("txn_id", BIG), ("line_no", INT), ("store_code", STR), ("txn_ts_local", TSN),
                                   ("sku", STR), ("qty", INT), ("amount_cents", BIG), ("tender", STR)]),
    Table("raw.web_orders", [("order_id", BIG), ("customer_email_hash", STR), ("placed_at", STR),
                             ("total_cents", BIG), ("item_count", INT), ("payload", STR)]),
    Table("mart.agg_daily_store_revenue", [("date_local", DATE), ("store_id", INT), ("order_count", INT),
                                           ("gross_revenue_cents", BIG), ("discount_cents", BIG),
                                           ("net_revenue_cents", BIG), ("refunds_cents", BIG)], ["date_local"]),
    Table("mart.agg_weekly_category_sales", [("fiscal_year", INT), ("fiscal_week", INT), ("category", STR),
                                             ("units", BIG), ("net_sales_cents", BIG)]),
    Table("mart.rpt_finance_monthly_revenue", [("fiscal_year", INT), ("fiscal_period", INT),
                                               ("recognized_revenue_usd", USD14), ("order_count", INT)]),
    Table("mart.agg_customer_ltv", [("customer_id", BIG), ("first_order_date", DATE), ("last_order_date", DATE),
                                    ("order_count", INT), ("lifetime_net_cents", BIG), ("as_of_month", DATE)]),
    Table("legacy.sales_daily", [("sale_date", DATE), ("store_code", STR), ("gross_sales_usd", USD14),
                                 ("txn_count", INT)]),
    Table("ops.etl_load_log", [("table_name", STR), ("partition", STR), ("attempt", INT), ("status", STR),
                               ("loaded_at_utc", TS), ("row_count", BIG), ("note", STR)]),
]
TABLES: dict[str, Table] = {t.name: t for t in _T}

# the schemas the history moves to
DAILY_REVENUE_USD = [("date_local", DATE), ("store_id", INT), ("order_count", INT), ("gross_revenue_usd", USD14),
                     ("discount_usd", USD14), ("net_revenue_usd", USD14), ("refunds_usd", USD14)]
CUSTOMER_SCD2 = [("customer_sk", BIG), ("customer_id", BIG), ("customer_uuid", STR), ("signup_date", DATE),
                 ("loyalty_tier", STR), ("home_region", STR), ("email_domain", STR), ("valid_from", DATE),
                 ("valid_to", DATE), ("is_current", BOOL)]
SESSIONS_UUID = [("session_id", STR), ("customer_uuid", STR), ("started_at_utc", TS), ("session_date", DATE),
                 ("device", STR), ("channel", STR), ("landing_page", STR), ("converted_order_id", BIG)]
FINANCE_REGION = [("fiscal_year", INT), ("fiscal_period", INT), ("region", STR), ("recognized_revenue_usd", USD14),
                  ("order_count", INT)]


def arrow_schema(columns: list[tuple[str, pa.DataType]]) -> pa.Schema:
    return pa.schema([pa.field(n, t) for n, t in columns])
