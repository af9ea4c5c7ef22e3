"""What a data team would write about the TPC-DS lake (the second lake of issue 45, designed by no one
here): descriptions, grains, relationships, units, freshness SLAs, metrics and verified queries, from
the TPC-DS specification's meaning of each table. Enumerations and documented ranges are read off the
data when the annotations are written (`build.py`), as a steward profiling the tables would."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eval.lake.naming import Naming

CATALOG = "tpcds"

# dotted name (without the catalog) -> (the generator's table, the date column added for facts: (name, from sk column))
TABLES: dict[str, tuple[str, tuple[str, str] | None]] = {
    "dim.date_dim": ("date_dim", None),
    "dim.item": ("item", None),
    "dim.customer": ("customer", None),
    "dim.customer_address": ("customer_address", None),
    "dim.household_demographics": ("household_demographics", None),
    "dim.income_band": ("income_band", None),
    "dim.store": ("store", None),
    "dim.warehouse": ("warehouse", None),
    "dim.promotion": ("promotion", None),
    "dim.reason": ("reason", None),
    "dim.ship_mode": ("ship_mode", None),
    "dim.web_site": ("web_site", None),
    "dim.web_page": ("web_page", None),
    "dim.call_center": ("call_center", None),
    "sales.store_sales": ("store_sales", ("ss_sold_date", "ss_sold_date_sk")),
    "sales.store_returns": ("store_returns", ("sr_returned_date", "sr_returned_date_sk")),
    "sales.catalog_sales": ("catalog_sales", ("cs_sold_date", "cs_sold_date_sk")),
    "sales.catalog_returns": ("catalog_returns", ("cr_returned_date", "cr_returned_date_sk")),
    "sales.web_sales": ("web_sales", ("ws_sold_date", "ws_sold_date_sk")),
    "sales.web_returns": ("web_returns", ("wr_returned_date", "wr_returned_date_sk")),
    "sales.inventory": ("inventory", ("inv_date", "inv_date_sk")),
}

SLA = {"sales.store_sales": "PT26H", "sales.store_returns": "PT26H", "sales.catalog_sales": "PT26H",
       "sales.catalog_returns": "PT26H", "sales.web_sales": "PT26H", "sales.web_returns": "PT26H",
       "sales.inventory": "P8D"}

TABLE_DOCS: dict[str, dict[str, Any]] = {
    "dim.date_dim": {"description": "Calendar: one row per date from {d_date_min} to {d_date_max}, with year, month, "
                                   "quarter, week sequence numbers and holiday / weekend flags.",
                     "grain": {"text": "one row per calendar date", "keys": ["d_date_sk"]}, "synonyms": ["calendar"]},
    "dim.item": {"description": "Items sold in every channel; an item may have several versions (i_rec_start_date, "
                              "i_rec_end_date), versions starting from {i_rec_start_date_min} to {i_rec_start_date_max}. "
                              "Prices in dollars.",
                 "grain": {"text": "one row per item version", "keys": ["i_item_sk"]}, "synonyms": ["products"]},
    "dim.customer": {"description": "Customers with their current address and demographics.",
                     "grain": {"text": "one row per customer", "keys": ["c_customer_sk"]}},
    "dim.customer_address": {"description": "Customer addresses (US), with the GMT offset of their time zone.",
                             "grain": {"text": "one row per address", "keys": ["ca_address_sk"]}},
    "dim.household_demographics": {"description": "Household demographic profiles: buy potential, dependents, vehicles.",
                                   "grain": {"text": "one row per profile", "keys": ["hd_demo_sk"]}},
    "dim.income_band": {"description": "Yearly income bands in dollars (lower and upper bound).",
                        "grain": {"text": "one row per band", "keys": ["ib_income_band_sk"]}},
    "dim.store": {"description": "Physical stores.", "grain": {"text": "one row per store version", "keys": ["s_store_sk"]}},
    "dim.warehouse": {"description": "Warehouses that ship catalog and web orders.",
                      "grain": {"text": "one row per warehouse", "keys": ["w_warehouse_sk"]}},
    "dim.promotion": {"description": "Promotions and the channels they ran on (Y/N flags).",
                      "grain": {"text": "one row per promotion", "keys": ["p_promo_sk"]}},
    "dim.reason": {"description": "Return reasons.", "grain": {"text": "one row per reason", "keys": ["r_reason_sk"]}},
    "dim.ship_mode": {"description": "Shipping modes: type, carrier and contract.",
                      "grain": {"text": "one row per ship mode", "keys": ["sm_ship_mode_sk"]}},
    "dim.web_site": {"description": "Web sites selling the catalog online.",
                     "grain": {"text": "one row per site version", "keys": ["web_site_sk"]}},
    "dim.web_page": {"description": "Web pages of the sites.", "grain": {"text": "one row per page version", "keys": ["wp_web_page_sk"]}},
    "dim.call_center": {"description": "Call centers taking catalog orders.",
                        "grain": {"text": "one row per call center version", "keys": ["cc_call_center_sk"]}},
    "sales.store_sales": {"description": "Store sales line items, dated by ss_sold_date; money columns in dollars. "
                                         "Net paid excludes tax; net profit is net paid minus wholesale cost.",
                          "grain": {"text": "one row per ticket line", "keys": ["ss_ticket_number", "ss_item_sk"]},
                          "synonyms": ["store sales", "pos sales"]},
    "sales.store_returns": {"description": "Store returns of ticket lines, dated by sr_returned_date; money in dollars.",
                            "grain": {"text": "one row per returned ticket line", "keys": ["sr_ticket_number", "sr_item_sk"]}},
    "sales.catalog_sales": {"description": "Catalog order lines, dated by cs_sold_date; money in dollars.",
                            "grain": {"text": "one row per order line", "keys": ["cs_order_number", "cs_item_sk"]}},
    "sales.catalog_returns": {"description": "Catalog returns, dated by cr_returned_date; money in dollars.",
                              "grain": {"text": "one row per returned order line", "keys": ["cr_order_number", "cr_item_sk"]}},
    "sales.web_sales": {"description": "Web order lines, dated by ws_sold_date; money in dollars.",
                        "grain": {"text": "one row per order line", "keys": ["ws_order_number", "ws_item_sk"]},
                        "synonyms": ["online sales"]},
    "sales.web_returns": {"description": "Web returns, dated by wr_returned_date; money in dollars.",
                          "grain": {"text": "one row per returned order line", "keys": ["wr_order_number", "wr_item_sk"]}},
    "sales.inventory": {"description": "Weekly inventory snapshots per item and warehouse (semi-additive over dates).",
                        "grain": {"text": "one row per snapshot date, item and warehouse",
                                  "keys": ["inv_date_sk", "inv_item_sk", "inv_warehouse_sk"]}},
}

# (table, column) -> column fields; "{enum}" is filled from the data
COLUMN_DOCS: dict[tuple[str, str], dict[str, Any]] = {
    ("dim.item", "i_category"): {"description": "Item category", "enum": "{enum}"},
    ("dim.item", "i_current_price"): {"unit": "USD", "role": "measure"},
    ("dim.item", "i_wholesale_cost"): {"unit": "USD", "role": "measure"},
    ("dim.customer", "c_preferred_cust_flag"): {"description": "Y for preferred customers", "enum": "{enum}"},
    ("dim.customer_address", "ca_location_type"): {"enum": "{enum}"},
    ("dim.customer_address", "ca_gmt_offset"): {"unit": "hours", "description": "offset of local time from GMT, in hours"},
    ("dim.household_demographics", "hd_buy_potential"): {"enum": "{enum}"},
    ("dim.ship_mode", "sm_type"): {"enum": "{enum}"},
    ("dim.ship_mode", "sm_carrier"): {"enum": "{enum}"},
    ("dim.date_dim", "d_day_name"): {"enum": "{enum}"},
    ("dim.income_band", "ib_lower_bound"): {"unit": "USD"},
    ("dim.income_band", "ib_upper_bound"): {"unit": "USD"},
    ("sales.store_sales", "ss_net_paid"): {"unit": "USD", "role": "measure", "description": "amount paid, excluding tax"},
    ("sales.store_sales", "ss_sales_price"): {"unit": "USD", "role": "measure"},
    ("sales.store_sales", "ss_quantity"): {"unit": "units", "role": "measure"},
    ("sales.store_returns", "sr_return_amt"): {"unit": "USD", "role": "measure"},
    ("sales.catalog_sales", "cs_net_paid"): {"unit": "USD", "role": "measure"},
    ("sales.catalog_sales", "cs_ext_ship_cost"): {"unit": "USD", "role": "measure"},
    ("sales.catalog_returns", "cr_return_amount"): {"unit": "USD", "role": "measure"},
    ("sales.web_sales", "ws_net_paid"): {"unit": "USD", "role": "measure"},
    ("sales.web_sales", "ws_net_profit"): {"unit": "USD", "role": "measure"},
    ("sales.web_returns", "wr_return_amt"): {"unit": "USD", "role": "measure"},
    ("sales.inventory", "inv_quantity_on_hand"): {"unit": "units", "role": "measure",
                                                  "additivity": {"kind": "semi_additive", "non_additive_dimension": "inv_date"}},
}

# (from table, name, to table, [(from col, to col)])
RELATIONSHIPS: list[tuple[str, str, str, list[tuple[str, str]]]] = [
    ("sales.store_sales", "item", "dim.item", [("ss_item_sk", "i_item_sk")]),
    ("sales.store_sales", "customer", "dim.customer", [("ss_customer_sk", "c_customer_sk")]),
    ("sales.store_sales", "store", "dim.store", [("ss_store_sk", "s_store_sk")]),
    ("sales.store_sales", "promotion", "dim.promotion", [("ss_promo_sk", "p_promo_sk")]),
    ("sales.store_sales", "date", "dim.date_dim", [("ss_sold_date_sk", "d_date_sk")]),
    ("sales.store_returns", "item", "dim.item", [("sr_item_sk", "i_item_sk")]),
    ("sales.store_returns", "reason", "dim.reason", [("sr_reason_sk", "r_reason_sk")]),
    ("sales.store_returns", "sale", "sales.store_sales", [("sr_ticket_number", "ss_ticket_number"), ("sr_item_sk", "ss_item_sk")]),
    ("sales.catalog_sales", "item", "dim.item", [("cs_item_sk", "i_item_sk")]),
    ("sales.catalog_sales", "customer", "dim.customer", [("cs_bill_customer_sk", "c_customer_sk")]),
    ("sales.catalog_sales", "ship_mode", "dim.ship_mode", [("cs_ship_mode_sk", "sm_ship_mode_sk")]),
    ("sales.catalog_sales", "warehouse", "dim.warehouse", [("cs_warehouse_sk", "w_warehouse_sk")]),
    ("sales.catalog_sales", "call_center", "dim.call_center", [("cs_call_center_sk", "cc_call_center_sk")]),
    ("sales.catalog_returns", "item", "dim.item", [("cr_item_sk", "i_item_sk")]),
    ("sales.catalog_returns", "reason", "dim.reason", [("cr_reason_sk", "r_reason_sk")]),
    ("sales.web_sales", "item", "dim.item", [("ws_item_sk", "i_item_sk")]),
    ("sales.web_sales", "web_site", "dim.web_site", [("ws_web_site_sk", "web_site_sk")]),
    ("sales.web_sales", "web_page", "dim.web_page", [("ws_web_page_sk", "wp_web_page_sk")]),
    ("sales.web_sales", "ship_mode", "dim.ship_mode", [("ws_ship_mode_sk", "sm_ship_mode_sk")]),
    ("sales.web_returns", "item", "dim.item", [("wr_item_sk", "i_item_sk")]),
    ("sales.web_returns", "reason", "dim.reason", [("wr_reason_sk", "r_reason_sk")]),
    ("sales.inventory", "item", "dim.item", [("inv_item_sk", "i_item_sk")]),
    ("sales.inventory", "warehouse", "dim.warehouse", [("inv_warehouse_sk", "w_warehouse_sk")]),
    ("dim.customer", "address", "dim.customer_address", [("c_current_addr_sk", "ca_address_sk")]),
    ("dim.customer", "household", "dim.household_demographics", [("c_current_hdemo_sk", "hd_demo_sk")]),
    ("dim.household_demographics", "income_band", "dim.income_band", [("hd_income_band_sk", "ib_income_band_sk")]),
]

# (table, name, expression, filter, time column, unit, description)
METRICS: list[tuple[str, str, str, str | None, str | None, str, str]] = [
    ("sales.store_sales", "store_net_paid", "SUM(ss_net_paid)", None, "ss_sold_date", "USD",
     "store sales net of discounts, excluding tax"),
    ("sales.web_sales", "web_net_profit", "SUM(ws_net_profit)", None, "ws_sold_date", "USD", "web sales net profit"),
    ("sales.catalog_sales", "catalog_net_paid", "SUM(cs_net_paid)", None, "cs_sold_date", "USD", "catalog sales net paid"),
    ("dim.customer", "preferred_customers", "COUNT(*)", "c_preferred_cust_flag = 'Y'", None, "customers",
     "number of preferred customers"),
    ("dim.ship_mode", "express_modes", "COUNT(*)", "sm_type = 'EXPRESS'", None, "ship modes", "express ship modes"),
]

# (question, sql with {c} for the catalog and {last} for the last loaded date)
VERIFIED: list[tuple[str, str]] = [
    ("store net paid on the last loaded day",
     "SELECT SUM(ss_net_paid) FROM {c}.sales.store_sales WHERE ss_sold_date = DATE '{last}'"),
    ("items per category", "SELECT i_category, COUNT(*) AS n FROM {c}.dim.item GROUP BY i_category ORDER BY i_category"),
    ("web returns amount", "SELECT SUM(wr_return_amt) FROM {c}.sales.web_returns"),
    ("catalog net paid by ship mode type",
     "SELECT sm.sm_type, SUM(cs.cs_net_paid) FROM {c}.sales.catalog_sales cs JOIN {c}.dim.ship_mode sm "
     "ON cs.cs_ship_mode_sk = sm.sm_ship_mode_sk GROUP BY sm.sm_type ORDER BY sm.sm_type"),
]


def plain_columns(written: list[str], nm: Naming) -> list[str]:
    """The plain names of a frame's `written` columns under `nm`."""
    back = {w: p for p, w in nm.columns.items()}
    return [back.get(c, c) for c in written]
