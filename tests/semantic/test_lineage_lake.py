"""Lineage on the Acme lake (issue 38, item 4): the marts' builds recorded what they read (through
the Spark bridge, eval/lake/build.py MART_INPUTS), a restatement upstream after a mart's build makes
the mart suspect (at the snapshot where that was so), and a mart built from a partial day is partial.

The lake is the session fixture `lake_dir` (SEMCAT_EVAL_LAKE=DIR reuses one built with this build
code); each test works on its own copy."""

from __future__ import annotations

import datetime as dt

import pytest

import semantic as sm
from catalog_core import lake as L
from eval.lake import D0
from eval.lake import marts as M
from eval.lake.build import BUILT, DECLARED_INPUTS, MART_DELAY
from eval.lake.naming import load_names
from semantic.history import Context
from semantic.lineage import inputs_of, lineage

ORDERS, ITEMS, REFUNDS = "acme.core.fct_orders", "acme.core.fct_order_items", "acme.core.fct_refunds"
DAILY = "acme.mart.agg_daily_store_revenue"
FINANCE = "acme.mart.rpt_finance_monthly_revenue"
MARTS = {DAILY, FINANCE, "acme.mart.agg_weekly_category_sales", "acme.mart.agg_customer_ltv"}

pytestmark = pytest.mark.slow  # the Acme lake (a Spark build unless SEMCAT_EVAL_LAKE names one)


def test_the_built_marts_record_the_core_tables_and_vids_their_jobs_read(stale, lake_dir):
    """Every commit that builds a mart from core tables (eval.lake.marts, a Spark SQL job) comes right after
    a load's commit, writes only built marts, and records as each mart's lineage exactly the tables its job
    read through the bridge, each at the vid of that load commit; no load commit writes a built mart, and
    only the daily store mart keeps a declared `inputs` (read as its own load commit leaves them)."""
    nm = load_names(lake_dir)
    built = {nm.full_table(m): m for m in BUILT}
    assert not set(DECLARED_INPUTS) & set(BUILT)
    commits = [c for c in stale.commits(limit=None) if (c.meta or {}).get("writes")]
    seen: dict[str, int] = {}
    load = None
    for c in commits:
        wrote = {w["table"] for w in c.meta["writes"]}
        if not c.message.startswith("build "):
            assert not wrote & set(built), (c.vid, c.message)
            load = c
            continue
        assert load is not None and load.vid == c.vid - 1 and wrote <= set(built), (c.vid, c.message)
        assert c.time == load.time + MART_DELAY
        ctx = Context(stale, c.vid)
        for t in wrote:
            lin = inputs_of(ctx, t)
            assert lin is not None and lin.built_vid == c.vid and lin.source == "spark", (t, lin)
            assert lin.inputs == {nm.full_table(r): load.vid for r in M.READS[built[t]]}, (c.vid, t, lin.inputs)
            assert sorted(c.meta["inputs"]) == sorted({nm.full_table(r) for m in wrote for r in M.READS[built[m]]})
            seen[t] = seen.get(t, 0) + 1
    # small scale, seed 7: weekly 13, finance 6, LTV 5 builds, the writes of these marts in a lake built
    # with the generator's marts (the same schedule)
    assert set(seen) == set(built) and sum(seen.values()) >= 20, seen
    # the daily store mart: declared, in its load's own commit
    daily = inputs_of(Context(stale, stale.latest_vid), nm.full_table(DAILY[5:]))
    assert daily is not None and set(daily.inputs) == {nm.full_table(r) for r in DECLARED_INPUTS[DAILY[5:]]}
    assert daily.inputs[nm.full_table(ORDERS[5:])] == daily.built_vid


def test_the_marts_upstream_and_downstream_are_the_tables_their_jobs_read(stale):
    up = lineage(stale, DAILY, depth=3)
    assert [n["table"] for n in up["nodes"]] == [DAILY, ITEMS, ORDERS, REFUNDS]
    mart = up["nodes"][0]
    built = mart["built"]["vid"]
    assert built == stale.get(L.table_path(DAILY)).vid  # the last write of the mart recorded it
    # the core tables were written in the same load commit: read as that commit left them
    assert {i["table"]: i["vid"] for i in mart["inputs"]}[ORDERS] == built
    assert {(e["from"], e["to"]) for e in up["edges"]} == {(ITEMS, DAILY), (ORDERS, DAILY), (REFUNDS, DAILY)}
    assert all(n["inputs"] == [] for n in up["nodes"][1:])  # loaded, not built from other tables
    down = lineage(stale, ORDERS, direction="downstream", depth=2)
    assert {n["table"] for n in down["nodes"][1:]} == MARTS
    # time travel: at d-119 the mart was built by the initial load, with its own vids
    first = lineage(stale, DAILY, snapshot=stale.commits(limit=None)[1].vid + 1)
    assert first["nodes"][0]["built"]["vid"] < built


def test_a_restatement_upstream_after_a_build_makes_the_mart_suspect(stale):
    """At d-45 fct_orders' status values were restated. The finance mart had last been built at an
    earlier period close, from fct_orders as it was then: at that snapshot it is suspect, naming the
    restatement (the same cause); the daily mart was built in the same commit (control); by the latest
    snapshot the finance mart was rebuilt and is not."""
    v45 = next(c.vid for c in stale.commits() if "order status restated" in c.message)
    up = [f for f in sm.staleness(stale, ORDERS, snapshot=v45, now=D0) if f.reason == "values_restated"]
    assert up, "the stale history keeps fct_orders' restated status annotations"
    fin = [f for f in sm.staleness(stale, FINANCE, snapshot=v45, now=D0) if f.reason == "upstream_changed"]
    assert len(fin) == 1, [f.message for f in fin]
    ev = fin[0].evidence.values
    assert ev["upstream"] == ORDERS and ev["change_vid"] == v45 and ev["read_vid"] < v45
    assert fin[0].cause == up[0].cause and fin[0].status == "suspect"
    card = sm.describe(stale, FINANCE, snapshot=v45, now=D0)
    assert "upstream_changed" in {f.reason for f in card.findings}
    items = sm.review_items(stale, FINANCE, snapshot=v45, now=D0, limit=200, kind="finding").items
    assert [i.group for i in items if i.reason == "upstream_changed"] == [up[0].cause]
    assert "upstream_changed" not in {f.reason for f in sm.staleness(stale, DAILY, snapshot=v45, now=D0)}
    assert "upstream_changed" not in {f.reason for f in sm.staleness(stale, FINANCE, now=D0)}
    g = lineage(stale, ORDERS, direction="downstream", depth=1, snapshot=v45)
    flows = {n["table"]: [f["reason"] for f in n["findings"]] for n in g["nodes"]}
    assert flows[FINANCE] == ["upstream_changed"] and flows[DAILY] == []


def test_a_mart_built_from_a_partial_day_is_partial_for_that_day(stale):
    """fct_orders holds an intraday (partial) load of d0. A build of the daily mart that read it and
    wrote a d0 partition after midnight (so its own partition looks complete) is partial for d0."""
    read = stale.latest_vid
    comp = sm.describe(stale, ORDERS, now=D0).freshness.completeness
    assert D0.date().isoformat() in {p.period for p in comp.incomplete}
    mart = L.table_path(DAILY)
    src = next(p for p in stale.query(L.exact_query(mart, '[obj_type = "partition"]')) if p.path.endswith("2025-03-09"))
    leaf = next(iter(stale.query(L.exact_query(src.path, '[obj_type = "file"]'))))
    d0 = D0.date().isoformat()
    part = f"{mart}/{L.partition_id('date_local', d0)}"
    with stale.transaction(author="etl:acme", message="build agg_daily_store_revenue for d0",
                           time=(D0 + dt.timedelta(hours=18)).timestamp()) as txn:  # after midnight ET
        txn.add(part, {**src.value, "date_local": d0})
        txn.add(f"{part}/{leaf.obj_id}-d0", dict(leaf.value), leaf=True)
        txn.merge(part, {"stats": {"last_data_commit": {"vid": {"op": "commit_vid", "val": 0},
                                                        "time": {"op": "commit_time", "val": 0}}}})
        for delta in L.lineage_deltas({ORDERS: read, ITEMS: read, REFUNDS: read}, job="build d0"):
            txn.merge(mart, delta)
    later = (D0 + dt.timedelta(hours=19)).timestamp()
    comp = sm.describe(stale, DAILY, now=later).freshness.completeness
    got = {p.period: p for p in comp.incomplete}
    assert got[d0].source == "lineage" and ("fct_order" in (got[d0].note or ""))  # orders and items: intraday
    found = [f for f in sm.staleness(stale, DAILY, now=later) if f.reason == "upstream_incomplete"]
    assert [f.evidence.values["period"] for f in found] == [d0]
    assert found[0].evidence.values["upstream"] in (ORDERS, ITEMS)
