"""A small catalog with findings for the /ui tests (tests/mcp_server/test_ui_page.py and the e2e
test of tests/test_ui_browser.py), built in a second with LakeBuilder (real Parquet files):

- acme.core.orders: `amount_cents` renamed to `amount` at day 3 (same values): one cause, a group
  of four review items, accept offered for each: three metrics (a `rename` each) and a verified query
  on the old name (its SQL rewritten, the same answer across the rename);
  `status` has an enum;
- acme.core.customers, related from orders; its `region` column dropped at day 3: a group of two
  items, the column's description (accept removes it) and a metric counting regions (no column
  continues it: accept not offered, edit or dismiss); the table's description is a group of its own
  with no fix;
- acme.legacy.sales, searchable ('legacy daily sales'), deprecated.
`NOW` is the clock the server judges freshness at."""

from __future__ import annotations

from typing import Any

import semantic as sm
from eval.fixtures.lakes import LakeBuilder

ORDERS, CUSTOMERS, LEGACY = "acme.core.orders", "acme.core.customers", "acme.legacy.sales"
RENAME_GROUP = "rename:acme.core.orders@{vid}:amount_cents"
DROP_GROUP = "drop:acme.core.customers@{vid}:region"


def build(cat: Any, files: str) -> dict[str, Any]:
    """Write the catalog into `cat` (an open catalog_core.Catalog); returns {"rename_vid", "drop_vid", "now"}."""
    lk = LakeBuilder(cat, files)
    lk.table(CUSTOMERS, [("customer_id", "bigint"), ("name", "string"), ("region", "string")], at=0,
             rows={"customer_id": [1, 2, 3], "name": ["Ann", "Bo", "Cy"], "region": ["north", "south", "north"]})
    lk.table(ORDERS, [("order_id", "bigint"), ("customer_id", "bigint"), ("status", "string"),
                      ("amount_cents", "bigint")], at=0,
             rows={"order_id": list(range(1, 2001)), "customer_id": [1 + i % 3 for i in range(2000)],
                   "status": [("placed", "shipped", "delivered")[i % 3] for i in range(2000)],
                   "amount_cents": [1000 + 37 * i for i in range(2000)]})
    lk.table(LEGACY, [("day", "date"), ("revenue_cents", "bigint")], at=0,
             rows={"day": ["2025-01-01", "2025-01-02"], "revenue_cents": [100, 200]})
    sm.annotate(cat, ORDERS, {"description": "Orders, one row per order", "grain": {"text": "one row per order",
                "keys": ["order_id"]}, "freshness_sla": "PT185H"}, author="ann", time=lk.day(1 + 1 / 100))
    sm.annotate(cat, ORDERS, {"description": "Order amount, in cents", "unit": "cents"}, column="amount_cents",
                author="ann", time=lk.day(1 + 2 / 100))
    sm.annotate(cat, ORDERS, {"enum": ["placed", "shipped", "delivered"], "sample_values": ["placed", "shipped"]},
                column="status", author="ann", time=lk.day(1 + 3 / 100))
    sm.annotate(cat, CUSTOMERS, {"description": "Customers, by sales region"}, author="ann", time=lk.day(1 + 4 / 100))
    sm.annotate(cat, CUSTOMERS, {"description": "Sales region of the customer"}, column="region", author="ann",
                time=lk.day(1 + 5 / 100))
    sm.annotate(cat, LEGACY, {"description": "Legacy daily sales, kept for old reports",
                              "deprecated": {"reason": "replaced", "replaced_by": ORDERS}}, author="ann",
                time=lk.day(1 + 6 / 100))
    sm.relate(cat, ORDERS, CUSTOMERS, "customer_id", author="ann", time=lk.day(1 + 7 / 100))
    sm.define_metric(cat, ORDERS, "revenue", expression="sum(amount_cents)", unit="cents",
                     description="Revenue of all orders", author="ann", time=lk.day(1 + 8 / 100))
    sm.define_metric(cat, CUSTOMERS, "regions", expression="count(DISTINCT region)",
                     description="Sales regions with customers", author="ann", time=lk.day(1 + 8.5 / 100))
    sm.verify_query(cat, "total order amount", "SELECT sum(amount_cents) FROM acme.core.orders", author="ann",
                    time=lk.day(1 + 9 / 100))
    # the rename's group: three metrics (a `rename` each) and the verified query (its SQL rewritten);
    # the column's own description and unit follow its field id and stay true
    sm.define_metric(cat, ORDERS, "average_order", expression="avg(amount_cents)", unit="cents",
                     description="Average order amount", author="ann", time=lk.day(1 + 10 / 100))
    sm.define_metric(cat, ORDERS, "largest_order", expression="max(amount_cents)", unit="cents",
                     description="Largest order amount", author="ann", time=lk.day(1 + 11 / 100))
    vid = lk.evolve(ORDERS, rename={"amount_cents": "amount"}, at=3)
    dvid = lk.evolve(CUSTOMERS, drop=["region"], at=3)
    return {"rename_vid": vid, "drop_vid": dvid, "now": lk.day(4)}
