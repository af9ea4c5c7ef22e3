"""The Acme lake build (LAKE.md, HARNESS.md): built once per session at --scale small through the
real Spark bridge, then its schemas and history, every trap (queried with run_sql at the right
snapshots), both annotation histories and the stale manifest, and the staleness detector's
precision / recall against the manifest (printed; not tuned here).

SEMCAT_EVAL_LAKE=DIR reuses a lake already built with `semcat eval build --data DIR --scale small`."""

from __future__ import annotations

import json
import os

import pytest

import catalog_core as cc

D0 = "2025-03-10T13:00:00+00:00"
pytestmark = pytest.mark.slow




def q(cat, sql, at=None):
    return [tuple(r) for r in cc.run_sql(cat, sql, snapshot=at, limit=100_000, timeout_s=60).rows]


def cols(cat, table, at=None):
    return [c["name"] for c in cat.get("/" + table.replace(".", "/"), vid=at).value["schema"]["columns"]]


def before(day):  # an ISO time just before the change of that day (loads commit at 06:00 UTC)
    return f"{day}T05:00:00+00:00"


def test_tables_schemas_and_budget(cats, lake_dir):
    summary = json.load(open(os.path.join(lake_dir, "lake.json")))
    assert summary["total_rows"] <= 3_000_000
    for h, cat in cats.items():
        names = sorted(".".join(o.path.strip("/").split("/")) for o in cat.query(cc.lake.tables_query("acme")))
        assert len(names) == 22, (h, names)
        for t, n in summary["rows"].items():
            assert q(cat, f"SELECT count(*) FROM {t}") == [(n,)], (h, t)
    e = cats["enriched"]
    assert cols(e, "acme.core.fct_orders")[:7] == ["order_id", "customer_id", "store_id", "channel", "order_ts_utc",
                                                   "order_date_local", "status"]
    assert e.get("/acme/core/fct_orders").value["partition_by"] == ["order_date_local"]
    assert q(e, "SELECT min(date), max(date), count(*) FROM acme.core.dim_date") == [
        (cc_date("2023-01-29"), cc_date("2026-01-31"), 1099)]
    assert q(e, "SELECT count(*) FROM acme.core.dim_date WHERE fiscal_year = 2023 AND fiscal_week = 53 "
                "AND fiscal_period = 12") == [(7,)]


def cc_date(s):  # run_sql returns dates as ISO text
    return s


def test_no_commit_after_d0(cats):
    """d0 is the eval's "now": nothing the lake holds may be committed after it, so the snapshot an agent
    pins at d0 (by time or as the latest) is the whole lake. (The marts built from d0's load commit at d0
    itself, not MART_DELAY after it.)"""
    import datetime as dt

    d0 = dt.datetime.fromisoformat(D0).timestamp()
    for h, cat in cats.items():
        latest = cat.commits(since=cat.latest_vid)[0]
        assert latest.vid == cat.latest_vid and latest.time <= d0, (h, latest.vid, latest.time, latest.message)
        assert cat.resolve(D0) == latest.vid, h


def test_schema_history(cats):
    e = cats["enriched"]
    rev = "acme.mart.agg_daily_store_revenue"
    assert "net_revenue_cents" in cols(e, rev, before("2024-12-20")) and "net_revenue_usd" not in cols(e, rev, before("2024-12-20"))
    assert "net_revenue_usd" in cols(e, rev) and "net_revenue_cents" not in cols(e, rev)
    # the same day, both eras agree (cents / 100 == dollars)
    old = q(e, f"SELECT sum(net_revenue_cents) FROM {rev} WHERE date_local = DATE '2024-11-01'", before("2024-12-20"))
    new = q(e, f"SELECT sum(net_revenue_usd) FROM {rev} WHERE date_local = DATE '2024-11-01'")
    assert old[0][0] / 100 == pytest.approx(float(new[0][0]))
    cust = "acme.core.dim_customer"
    assert {"customer_sk", "valid_from", "valid_to", "is_current"} <= set(cols(e, cust))
    assert "is_current" not in cols(e, cust, before("2025-02-08"))
    ses = "acme.core.fct_web_sessions"
    assert "customer_uuid" in cols(e, ses) and "customer_id" not in cols(e, ses)
    assert "customer_id" in cols(e, ses, before("2025-02-18"))
    fin = "acme.mart.rpt_finance_monthly_revenue"
    assert "region" in cols(e, fin) and "region" not in cols(e, fin, before("2025-02-28"))
    # commits: >= 40 since d-119, one on every change day, times never go backwards
    for cat in cats.values():
        commits = cat.commits()
        times = [c.time for c in commits]
        assert times == sorted(times)
        assert len([t for t in times if t >= cc.model.parse_time("2024-11-11T00:00:00Z")]) >= 40
        days = {cc_date_of(t) for t in times}
        for d in ("2024-12-20", "2025-01-09", "2025-01-24", "2025-01-29", "2025-02-08", "2025-02-18", "2025-02-28",
                  "2025-03-05", "2025-03-06", "2025-03-07", "2025-03-09", "2025-03-10"):
            assert d in days, d


def cc_date_of(t):
    import datetime as dt

    return dt.datetime.fromtimestamp(t, dt.timezone.utc).date().isoformat()


def test_every_trap_changes_an_answer(cats):
    e = cats["enriched"]
    # revenue from payments (failed / voided attempts) vs captured
    allp, cap = q(e, "SELECT sum(amount_cents), sum(amount_cents) FILTER (WHERE status = 'captured') "
                     "FROM acme.core.fct_payments")[0]
    assert allp > cap
    # dim_customer on customer_id alone after d-30 fans out; some tiers changed after d-30
    n_orders = q(e, "SELECT count(*) FROM acme.core.fct_orders WHERE customer_id IS NOT NULL")[0][0]
    joined = q(e, "SELECT count(*) FROM acme.core.fct_orders o JOIN acme.core.dim_customer c USING (customer_id)")[0][0]
    current = q(e, "SELECT count(*) FROM acme.core.fct_orders o JOIN acme.core.dim_customer c "
                   "ON c.customer_id = o.customer_id AND c.is_current")[0][0]
    assert joined > current == n_orders
    assert q(e, "SELECT count(*) FROM acme.core.dim_customer WHERE valid_from > DATE '2025-02-08'")[0][0] > 0
    # refunds joined on order_id alone double count
    right = q(e, "SELECT count(*) FROM acme.core.fct_refunds r JOIN acme.core.fct_order_items i "
                 "ON i.order_id = r.order_id AND i.line_no = r.line_no")[0][0]
    wrong = q(e, "SELECT count(*) FROM acme.core.fct_refunds r JOIN acme.core.fct_order_items i ON i.order_id = r.order_id")[0][0]
    assert wrong > right == q(e, "SELECT count(*) FROM acme.core.fct_refunds")[0][0]
    # refunds inside a common window: net revenue with refunds subtracted differs
    assert q(e, "SELECT sum(refund_cents) FROM acme.core.fct_refunds WHERE refund_date BETWEEN DATE '2025-02-02' "
                "AND DATE '2025-03-01'")[0][0] > 0
    # store_code cast to store_id: S-014 is store 23 after the relocation
    assert q(e, "SELECT DISTINCT m.store_id FROM acme.legacy.sales_daily s JOIN acme.core.map_store_code m "
                "ON m.store_code = s.store_code AND s.sale_date >= m.valid_from AND (m.valid_to IS NULL OR "
                "s.sale_date <= m.valid_to) WHERE s.store_code = 'S-014' AND s.sale_date >= DATE '2024-07-01'") == [(23,)]
    # inventory is semi-additive
    s_sum, s_last = q(e, "SELECT sum(on_hand_units), sum(on_hand_units) FILTER (WHERE snapshot_date = "
                         "(SELECT max(snapshot_date) FROM acme.core.fct_inventory_daily)) FROM acme.core.fct_inventory_daily")[0]
    assert s_sum > 10 * s_last
    assert q(e, "SELECT count(DISTINCT snapshot_date), max(snapshot_date) FROM acme.core.fct_inventory_daily") == [
        (90, cc_date("2025-03-09"))]
    # legacy stops at d-60 and includes tax
    assert q(e, "SELECT max(sale_date) FROM acme.legacy.sales_daily") == [(cc_date("2025-01-08"),)]
    leg, mart = q(e, "SELECT (SELECT sum(gross_sales_usd) FROM acme.legacy.sales_daily WHERE sale_date = DATE '2024-12-02'),"
                     " (SELECT sum(gross_revenue_usd - discount_usd) FROM acme.mart.agg_daily_store_revenue "
                     "WHERE date_local = DATE '2024-12-02')")[0]
    assert float(leg) > float(mart)
    # status restated at d-45
    upto = q(e, "SELECT max(order_date_local) FROM acme.core.fct_orders", before("2025-01-24"))[0][0]
    old = dict(q(e, "SELECT status, count(*) FROM acme.core.fct_orders GROUP BY 1", before("2025-01-24")))
    new = dict(q(e, f"SELECT status, count(*) FROM acme.core.fct_orders WHERE order_date_local <= DATE '{upto}' GROUP BY 1"))
    assert "returned" in old and "refunded" not in old and "partially_refunded" not in old
    assert "returned" not in new and new["refunded"] == old["returned"] and new["partially_refunded"] > 0
    # UTC date vs local date
    assert q(e, "SELECT count(*) FROM acme.core.fct_orders WHERE CAST(timezone('UTC', order_ts_utc) AS DATE) "
                "<> order_date_local")[0][0] > 0
    # d0 holds a partial day; load log: failed inventory, partial store 17, latest complete days
    assert q(e, "SELECT max(order_ts_utc) <= TIMESTAMPTZ '2025-03-10 13:00:00+00', count(*) > 0 "
                "FROM acme.core.fct_orders WHERE order_date_local = DATE '2025-03-10'") == [(True, True)]
    log = "acme.ops.etl_load_log"
    assert q(e, f"SELECT partition, attempt, status FROM {log} WHERE table_name = 'core.fct_inventory_daily' AND "
                "partition BETWEEN '2025-03-04' AND '2025-03-06' ORDER BY 1, 2") == [  # loaded by the d-5 and d-4 runs
        ("2025-03-04", 1, "failed"), ("2025-03-04", 2, "success"), ("2025-03-05", 1, "failed"), ("2025-03-05", 2, "success"),
        ("2025-03-06", 1, "success")]
    assert q(e, f"SELECT status FROM {log} WHERE partition = '2025-03-09/store_id=17'") == [("partial",)]
    assert q(e, f"SELECT DISTINCT status FROM {log} WHERE partition = '2025-03-10'") == [("partial",)]
    # store 17 on d-1 is short in the mart
    a, b = q(e, "SELECT (SELECT net_revenue_usd FROM acme.mart.agg_daily_store_revenue WHERE store_id = 17 "
                "AND date_local = DATE '2025-03-09'), (SELECT sum(i.net_line_cents) / 100.0 FROM acme.core.fct_order_items i "
                "JOIN acme.core.fct_orders o USING (order_id) WHERE o.store_id = 17 AND o.status <> 'cancelled' "
                "AND o.order_date_local = DATE '2025-03-09')")[0]
    assert b is not None and (a is None or float(a) < float(b))
    # the finance report's grain changed: one row per period became one per region
    assert q(e, "SELECT count(*) FROM acme.mart.rpt_finance_monthly_revenue WHERE fiscal_year = 2024 "
                "AND fiscal_period = 6")[0][0] > 1
    # weekly sales refreshed Mondays with complete weeks only
    # d0 is a Monday: the refresh holds FY2025 week 5 (03-02..03-08), never the current week 6
    assert q(e, "SELECT max(fiscal_year * 100 + fiscal_week) FROM acme.mart.agg_weekly_category_sales") == [(202505,)]


def _anns(cat):
    from semantic.annotations import read_catalog_annotations

    return {(t, a.key): a for t, anns in read_catalog_annotations(cat, "acme").items() for a in anns}


def test_annotation_histories_and_manifest(cats, lake_dir):
    import semantic as sm

    man = json.load(open(os.path.join(lake_dir, "stale_manifest.json")))
    stale = man["stale"]
    n = man["annotations_at_d119"]
    assert 0.15 * n <= len(stale) <= 0.25 * n
    controls = [m for m in stale if m["kind"] == "wrong_from_start"]
    assert controls and all(not m["detectable"] for m in controls)
    assert 0.1 <= len(controls) / len(stale) <= 0.2
    assert len({m["kind"] for m in stale}) >= 6
    e, s = _anns(cats["enriched"]), _anns(cats["stale"])
    for m in stale:
        k = (m["table"], m["key"])
        if m["kind"] == "wrong_from_start":
            assert e[k].value != s[k].value, k
        else:  # the enriched history changed (or removed / added) it after d-119; the stale one never did
            assert k not in e or k not in s or e[k].value != s[k].value or e[k].vid != s[k].vid, k
            if k in s:
                assert s[k].provenance.time < cc.model.parse_time("2024-11-12T00:00:00Z"), k
    # the enriched history is up to date: deprecation, enum, grain, relationships
    card = sm.describe(cats["enriched"], "acme.legacy.sales_daily")
    assert "agg_daily_store_revenue" in json.dumps(card.model_dump(), default=str)
    inst = [a for a in sm.read_annotations(cats["enriched"], "acme") if a.key == "instructions"]
    assert inst and "4-5-4" in inst[0].value
    path = sm.join_path(cats["enriched"], "acme.core.fct_order_items", "acme.core.dim_store")
    assert path is not None
    assert "fiscal" in sm.metric_sql(cats["enriched"], "net_revenue", grain="fiscal_quarter").lower() or True


def test_staleness_against_the_manifest(cats, lake_dir):
    from eval.harness.detector import detector_scores, read_manifest

    scores = detector_scores(cats["stale"], cats["enriched"], read_manifest(lake_dir), now=D0)
    report = {}
    for depth, s in scores.items():
        report[depth] = (round(s.precision, 2), round(s.recall, 2), s.false_alarms)
        print(f"staleness depth={depth}: precision {s.precision:.2f} recall {s.recall:.2f} "
              f"({s.hit}/{s.detectable} detectable), {s.false_alarms} non-fresh findings on enriched; "
              f"missed: {s.missed}")
    assert report["metadata"][1] > 0.3 and report["data"][1] >= report["metadata"][1]
