"""The Acme marts' Spark jobs (eval.lake.marts through eval.lake.build.Loader.build) on a small lake of
a few days: one commit after the core load, in both histories, each mart recording as its lineage the
tables its own statement read through the bridge at the vid read, and the rows the generator computes.
The whole lake's before/after equality is bench/marts_equal.py."""

from __future__ import annotations

import collections
import datetime as dt
import os

import pytest

import catalog_core as cc
from catalog_core import lake as L
from eval.lake import marts as M
from eval.lake import tables as T
from eval.lake.build import BUILT, HISTORIES, MART_DELAY, Loader
from eval.lake.generate import generate

pytestmark = pytest.mark.slow  # Spark

LO, HI = dt.date(2023, 1, 29), dt.date(2023, 2, 4)  # FY2023 week 1


def test_each_mart_records_what_its_own_job_read_and_holds_the_generators_rows(tmp_path):
    from spark_bridge import local_session

    lake = generate(7, "small")
    cats = {h: cc.Catalog.open(str(tmp_path / h)) for h in HISTORIES}
    wh = str(tmp_path / "warehouse")
    for c in cats.values():
        with c.transaction(author="t", message="create catalog acme", time=1_000_000.0) as txn:
            txn.add("/acme", {"obj_type": "catalog", "properties": {"warehouse": wh}})
    os.makedirs(tmp_path / "in")
    ld = Loader(local_session(app_name="semcat-test-marts", cores=2), cats, wh, str(tmp_path / "in"), print)
    try:
        orders = [o for o in lake.orders if LO <= o["order_date_local"] <= HI]
        ids = {o["order_id"] for o in orders}
        rows = {"core.fct_orders": orders, "core.fct_order_items": [i for i in lake.items if i["order_id"] in ids],
                "core.fct_shipments": [s for s in lake.shipments if s["order_id"] in ids],
                "core.dim_product": lake.products, "core.dim_store": lake.stores, "core.dim_date": lake.dim_date}
        t0 = 2_000_000.0
        ld.load(t0, "load", [(n, T.TABLES[n].columns, r, "append", "evolve") for n, r in rows.items()])
        jobs = [("mart.agg_weekly_category_sales", {"upto": HI}),
                ("mart.rpt_finance_monthly_revenue", {"closed_before": dt.date(2023, 12, 1), "by_region": True}),
                ("mart.agg_customer_ltv", {"as_of_month": dt.date(2023, 1, 1)})]
        ld.build(t0 + MART_DELAY, "build marts", jobs)
        ld.wait()
    finally:
        ld.close()
    try:
        for h, cat in cats.items():
            load, build = [c for c in cat.commits(limit=None) if (c.meta or {}).get("writes")]
            assert build.vid == load.vid + 1 and build.time == t0 + MART_DELAY
            assert {w["table"] for w in build.meta["writes"]} == {f"acme.{m}" for m, _ in jobs} <= {
                f"acme.{m}" for m in BUILT}
            for mart, _ in jobs:
                lin = L.Lineage.from_raw(cat.get(L.table_path(f"acme.{mart}")).value)
                assert lin is not None and lin.source == "spark" and lin.built_vid == build.vid, (h, mart, lin)
                assert lin.inputs == {f"acme.{t}": load.vid for t in M.READS[mart]}, (h, mart, lin.inputs)
        con = cc.open_duckdb(cats["enriched"], sandbox=False)

        def got(sql: str) -> collections.Counter:
            return collections.Counter(tuple(r.values()) for r in con.sql(sql).to_arrow_table().to_pylist())

        weekly = lake.weekly_category_sales(HI)
        assert got("SELECT * FROM acme.mart.agg_weekly_category_sales") == collections.Counter(
            tuple(r.values()) for r in weekly) and weekly
        ltv = lake.customer_ltv(dt.date(2023, 1, 1))  # the orders of Jan 29..31
        assert got("SELECT * FROM acme.mart.agg_customer_ltv") == collections.Counter(
            tuple(r.values()) for r in ltv) and ltv
    finally:
        for c in cats.values():
            c.close()
