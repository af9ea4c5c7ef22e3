"""The lake the MCP tests and bench/bench_mcp.py use: real Parquet files, backdated history, and a
semantic layer with a deprecated table, a missed freshness SLA and a stale column annotation.

    acme.core.fct_orders   order_id, store_id, amount, status, order_date; grain order_id; SLA PT26H
    acme.core.dim_store    store_id, region                      (fct_orders -> dim_store, many_to_one)
    acme.core.old_orders   deprecated, replaced by fct_orders
    acme.core.wide         300 columns, no files                 (column paging)
    acme.misc.t00..t(N-1)  small tables                          (search paging)

`fct_orders.amount` was described as "cents" and then retyped to double: a stale annotation.
"""

from __future__ import annotations

import time
from typing import Any

import semantic as sm
from tests.semantic.lakes import DAY, LakeBuilder

__all__ = ["build", "FCT", "DIM", "OLD", "WIDE"]

FCT, DIM, OLD, WIDE = "acme.core.fct_orders", "acme.core.dim_store", "acme.core.old_orders", "acme.core.wide"


def build(cat: Any, root: Any, extra_tables: int = 24) -> LakeBuilder:
    # History starts 20 days ago, so the last load (day 4) is 16 days old: its 26 h SLA is missed.
    # The relationship and the metric are written now (their writers take no time).
    lk = LakeBuilder(cat, root, catalog="acme", start=time.time() - 20 * DAY)
    lk.table(DIM, [("store_id", "bigint"), ("region", "string")], at=0,
             rows={"store_id": [1, 2, 3], "region": ["Northeast", "West", "South"]})
    lk.table(FCT, [("order_id", "bigint"), ("store_id", "bigint"), ("amount", "bigint"), ("status", "string"),
                   ("order_date", "date")], at=0)
    for day in range(1, 4):
        ids = list(range(day * 10, day * 10 + 5))
        lk.append(FCT, {"order_id": ids, "store_id": [1, 2, 3, 1, 2], "amount": [100, 250, 75, 310, 20],
                        "status": ["placed", "shipped", "shipped", "returned", "placed"],
                        "order_date": [f"2024-11-{11 + day:02d}"] * 5}, at=day)
    lk.table(OLD, [("order_id", "bigint"), ("amt", "bigint")], at=1, rows={"order_id": [1], "amt": [5]})
    lk.table(WIDE, [(f"c{i:03d}", "string") for i in range(300)], at=1)
    for i in range(extra_tables):
        lk.table(f"acme.misc.t{i:02d}", [("k", "bigint"), (f"metric_{i}", "double")], at=1)
    sm.annotate(cat, FCT, {"description": "One row per customer order, loaded daily from the shop.",
                           "grain": {"text": "one row per order", "keys": ["order_id"]},
                           "freshness_sla": "PT26H", "owner": "sales-data"},
                author="alice", time=lk.at(1.5))
    sm.annotate(cat, FCT, {"description": "order amount in cents", "unit": "cents"}, column="amount",
                author="alice", time=lk.at(1.5))
    sm.annotate(cat, FCT, {"description": "order status", "enum": ["placed", "shipped", "returned"]},
                column="status", author="alice", time=lk.at(1.5))
    sm.annotate(cat, DIM, {"description": "Stores and their sales regions."}, author="alice", time=lk.at(1.5))
    sm.annotate(cat, OLD, {"deprecated": {"reason": "replaced by the new order pipeline", "replaced_by": FCT}},
                author="alice", time=lk.at(1.5))
    lk.evolve(FCT, retype={"amount": "double"}, at=4,
              rows={"order_id": [1, 2, 3], "store_id": [1, 2, 3], "amount": [1.0, 2.5, 0.75],
                    "status": ["placed", "shipped", "placed"], "order_date": ["2024-11-15"] * 3})
    sm.relate(cat, FCT, DIM, on=[("store_id", "store_id")], cardinality="many_to_one", canonical=True,
              author="alice")
    sm.define_metric(cat, FCT, "revenue", expression="sum(amount)", time_column="order_date",
                     description="gross order revenue", synonyms=["sales"], author="alice")
    return lk
