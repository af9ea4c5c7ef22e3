"""The public question set (eval/questions/public.yaml; HARNESS.md, Questions) against the built lake.

- the file loads, covers every tag of HARNESS.md, has enough questions and paraphrases;
- every gold SQL runs with `catalog_core.run_sql` at the latest vid of both catalogs (enriched and stale:
  the lakes are physically identical, only the annotations differ) and returns the same non-empty rows;
- `tables:` is exactly what the gold SQL reads (sqlglot, CTE names excluded);
- every trap of LAKE.md demonstrably changes an answer: the tempting wrong SQL gives another result;
- paraphrases have the same gold result as their original.

SEMCAT_EVAL_LAKE=DIR reuses a lake already built with `semcat eval build --data DIR --scale small`."""

from __future__ import annotations

import collections
import datetime as dt
import decimal
import os
from typing import Any

import pytest
import sqlglot
from sqlglot import exp

import catalog_core as cc
from eval.harness.questions import TAGS, TRAP_TAGS, Question, load_questions

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PUBLIC = os.path.join(ROOT, "eval", "questions", "public.yaml")
QS = load_questions(PUBLIC)
BY_ID = {q.id: q for q in QS}
ANSWERABLE = [q for q in QS if not q.unanswerable]

# Every trap of LAKE.md ("Tempting and wrong" and the History table): (trap, question id, the tempting
# wrong SQL). The wrong SQL must run and give a different result from the question's gold.
TRAPS: list[tuple[str, str, str]] = [
    ("daily store mart in dollars since d-80, read as cents", "q071", """
        SELECT SUM(m.net_revenue_usd) / 100 FROM acme.mart.agg_daily_store_revenue m
        JOIN acme.core.dim_store s ON s.store_id = m.store_id
        WHERE s.store_code = 'S-005' AND m.date_local BETWEEN DATE '2025-02-01' AND DATE '2025-02-28'"""),
    ("legacy.sales_daily used after its last load (d-60)", "q081", """
        SELECT SUM(gross_sales_usd) FROM acme.legacy.sales_daily WHERE sale_date = DATE '2025-01-20'"""),
    ("legacy.sales_daily used after d-60 for a per-store week", "q079", """
        SELECT SUM(gross_sales_usd) FROM acme.legacy.sales_daily
        WHERE store_code = 'S-009' AND sale_date BETWEEN DATE '2025-03-02' AND DATE '2025-03-08'"""),
    ("legacy.sales_daily gross includes tax", "q078", """
        SELECT s.region, SUM(l.gross_sales_usd) FROM acme.legacy.sales_daily l
        JOIN acme.core.map_store_code m ON m.store_code = l.store_code
          AND l.sale_date >= m.valid_from AND (m.valid_to IS NULL OR l.sale_date <= m.valid_to)
        JOIN acme.core.dim_store s ON s.store_id = m.store_id
        WHERE l.sale_date BETWEEN DATE '2024-12-01' AND DATE '2024-12-31' GROUP BY s.region"""),
    ("order status restated at d-45: 'returned' became 'refunded'", "q022", """
        SELECT COUNT(*) FROM acme.core.fct_orders o JOIN acme.core.dim_date d ON d.date = o.order_date_local
        WHERE o.status = 'returned' AND d.fiscal_year = 2024"""),
    ("cancelled orders counted as revenue", "q020", """
        SELECT SUM(i.net_line_cents) / 100.0 FROM acme.core.fct_order_items i
        JOIN acme.core.fct_orders o ON o.order_id = i.order_id
        WHERE o.order_date_local BETWEEN DATE '2025-02-01' AND DATE '2025-02-28'"""),
    ("revenue taken from payments", "q020", """
        SELECT SUM(p.amount_cents) / 100.0 FROM acme.core.fct_payments p
        JOIN acme.core.fct_orders o ON o.order_id = p.order_id
        WHERE o.order_date_local BETWEEN DATE '2025-02-01' AND DATE '2025-02-28'"""),
    ("failed and voided payment attempts counted", "q031", """
        SELECT SUM(p.amount_cents) / 100.0 FROM acme.core.fct_payments p
        JOIN acme.core.fct_orders o ON o.order_id = p.order_id
        WHERE o.order_date_local BETWEEN DATE '2025-02-01' AND DATE '2025-02-28'"""),
    ("SCD2 dim_customer (d-30) joined on customer_id alone", "q037", """
        SELECT SUM(i.net_line_cents) / 100.0 FROM acme.core.fct_order_items i
        JOIN acme.core.fct_orders o ON o.order_id = i.order_id
        JOIN acme.core.dim_customer c ON c.customer_id = o.customer_id
        WHERE o.status <> 'cancelled' AND c.loyalty_tier = 'gold'
          AND o.order_date_local BETWEEN DATE '2025-02-01' AND DATE '2025-02-28'"""),
    ("SCD2 dim_customer (d-30) counted without is_current", "q036", """
        SELECT COUNT(*) FROM acme.core.dim_customer WHERE loyalty_tier = 'platinum'"""),
    ("tier at order time taken from the current version", "q038", """
        SELECT c.loyalty_tier, SUM(i.net_line_cents) / 100.0 FROM acme.core.fct_order_items i
        JOIN acme.core.fct_orders o ON o.order_id = i.order_id
        JOIN acme.core.dim_customer c ON c.customer_id = o.customer_id AND c.is_current
        JOIN acme.core.dim_date d ON d.date = o.order_date_local
        WHERE o.status <> 'cancelled' AND d.fiscal_year = 2024 AND d.fiscal_quarter = 4
        GROUP BY c.loyalty_tier"""),
    ("web sessions carry customer_uuid since d-20 (customer reached through the converted order)", "q046", """
        SELECT COUNT(*) FROM acme.core.fct_web_sessions s
        JOIN acme.core.fct_orders o ON o.order_id = s.converted_order_id
        JOIN acme.core.dim_customer c ON c.customer_id = o.customer_id AND c.is_current
        WHERE c.loyalty_tier = 'platinum' AND s.session_date BETWEEN DATE '2025-02-01' AND DATE '2025-02-28'"""),
    ("finance report per region since d-10, read as one row per period", "q066", """
        SELECT recognized_revenue_usd FROM acme.mart.rpt_finance_monthly_revenue
        WHERE fiscal_year = 2024 AND fiscal_period = 12"""),
    ("inventory summed over snapshot dates", "q056", """
        SELECT SUM(inv.on_hand_units) FROM acme.core.fct_inventory_daily inv
        JOIN acme.core.dim_product p ON p.product_id = inv.product_id
        WHERE p.category = 'camping' AND inv.snapshot_date BETWEEN DATE '2025-02-01' AND DATE '2025-02-28'"""),
    ("refunds joined to items on order_id alone", "q027", """
        SELECT SUM(r.refund_cents) / 100.0 FROM acme.core.fct_refunds r
        JOIN acme.core.fct_order_items i ON i.order_id = r.order_id
        JOIN acme.core.dim_product p ON p.product_id = i.product_id
        JOIN acme.core.dim_date d ON d.date = r.refund_date
        WHERE p.category = 'footwear' AND d.fiscal_year = 2024 AND d.fiscal_quarter = 4"""),
    ("store code S-014 cast to store id 14 (it means store 23 from 2024-07-01)", "q083", """
        SELECT SUM(i.net_line_cents) / 100.0 FROM acme.core.fct_order_items i
        JOIN acme.core.fct_orders o ON o.order_id = i.order_id
        WHERE o.status <> 'cancelled' AND o.store_id = CAST(SUBSTR('S-014', 3) AS INTEGER)
          AND o.order_date_local BETWEEN DATE '2024-01-01' AND DATE '2024-12-31'"""),
    ("store code S-014 counted in legacy.sales_daily", "q080", """
        SELECT SUM(l.txn_count) FROM acme.legacy.sales_daily l JOIN acme.core.dim_date d ON d.date = l.sale_date
        WHERE l.store_code = 'S-014' AND d.fiscal_year = 2024"""),
    ("UTC date instead of the local order date", "q016", """
        SELECT SUM(i.net_line_cents) / 100.0 FROM acme.core.fct_order_items i
        JOIN acme.core.fct_orders o ON o.order_id = i.order_id
        WHERE o.status <> 'cancelled' AND CAST(o.order_ts_utc AS DATE) = DATE '2025-03-01'"""),
    ("the partial day d0 taken as the latest day", "q018", """
        SELECT SUM(i.net_line_cents) / 100.0 FROM acme.core.fct_order_items i
        JOIN acme.core.fct_orders o ON o.order_id = i.order_id
        WHERE o.status <> 'cancelled'
          AND o.order_date_local = (SELECT MAX(order_date_local) FROM acme.core.fct_orders)"""),
    ("the partial day d0 inside 'the last 7 days'", "q017", """
        SELECT SUM(i.net_line_cents) / 100.0 FROM acme.core.fct_order_items i
        JOIN acme.core.fct_orders o ON o.order_id = i.order_id
        WHERE o.status <> 'cancelled' AND o.order_date_local BETWEEN DATE '2025-03-04' AND DATE '2025-03-10'"""),
    ("store 17 partial on d-1 in the daily store mart", "q074", """
        SELECT SUM(m.net_revenue_usd) FROM acme.mart.agg_daily_store_revenue m
        JOIN acme.core.dim_store s ON s.store_id = m.store_id
        WHERE s.store_code = 'S-017' AND m.date_local = DATE '2025-03-09'"""),
    ("store-level latest complete day taken as d-1", "q075", """
        SELECT s.region, SUM(m.net_revenue_usd) FROM acme.mart.agg_daily_store_revenue m
        JOIN acme.core.dim_store s ON s.store_id = m.store_id
        WHERE m.date_local = (SELECT MAX(date_local) FROM acme.mart.agg_daily_store_revenue)
        GROUP BY s.region"""),
    ("weekly category mart refreshed Mondays (d-40): the current week is not in it", "q087", """
        SELECT category, net_sales_cents / 100.0 FROM acme.mart.agg_weekly_category_sales
        WHERE (fiscal_year, fiscal_week) = (SELECT (fiscal_year, fiscal_week) FROM acme.mart.agg_weekly_category_sales
                                            ORDER BY fiscal_year DESC, fiscal_week DESC LIMIT 1)"""),
    ("raw POS feed used for reporting (amounts include tax)", "q086", """
        SELECT SUM(amount_cents) / 100.0 FROM acme.raw.pos_transactions
        WHERE txn_ts_local >= TIMESTAMP '2025-01-01' AND txn_ts_local < TIMESTAMP '2025-02-01'"""),
    ("raw web orders feed used for reporting", "q085", """
        SELECT COUNT(*) FROM acme.raw.web_orders WHERE placed_at >= '2025-02-01' AND placed_at < '2025-03-01'"""),
]


# ---------------------------------------------------------------------------------------------- helpers
def tables_read(sql: str) -> set[str]:
    """Fully qualified tables a statement reads (CTE names excluded)."""
    tree = sqlglot.parse_one(sql, read="duckdb")
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    out = set()
    for t in tree.find_all(exp.Table):
        if not t.catalog and t.name.lower() in ctes:
            continue
        out.add(".".join(p for p in (t.catalog, t.db, t.name) if p))
    return out


def _norm_value(v: Any, decimals: int) -> Any:
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, float, decimal.Decimal)):
        return round(float(v), decimals) + 0.0  # + 0.0: -0.0 == 0.0, one spelling
    if isinstance(v, (dt.date, dt.datetime)):
        return v.isoformat()
    return v


def normalized(rows: list[list[Any]], q: Question) -> list[tuple[Any, ...]]:
    """Rows rounded to the question's decimals; sorted unless the question asks for an order."""
    out = [tuple(_norm_value(v, q.decimals) for v in r) for r in rows]
    return out if q.order_matters else sorted(out, key=repr)


def run(cat: cc.Catalog, sql: str) -> list[list[Any]]:
    res = cc.run_sql(cat, sql, snapshot=cat.resolve(None), limit=10_000, timeout_s=60)
    assert not res.truncated
    return res.rows


@pytest.fixture(scope="module")
def gold(cats):
    """Every gold result in both catalogs: {(history, question id): rows}."""
    return {(h, q.id): run(cat, q.gold_sql) for h, cat in cats.items() for q in ANSWERABLE if q.gold_sql}


# ---------------------------------------------------------------------------------------------- file
def test_file_loads_with_coverage():
    assert len(QS) >= 80
    tags = collections.Counter(t for q in QS for t in q.tags)
    assert set(tags) == set(TAGS) - set(TRAP_TAGS), set(TAGS) - set(TRAP_TAGS) - set(tags)
    thin = {t: n for t, n in tags.items() if n < 5}
    assert not thin, f"tags on fewer than 5 questions: {thin}"
    paraphrases = [q for q in QS if q.paraphrase_of]
    assert len(paraphrases) >= 10
    for p in paraphrases:
        assert p.paraphrase_of
        orig = BY_ID[p.paraphrase_of]
        assert p.question != orig.question and not orig.paraphrase_of
        assert (p.gold_sql, p.tables, set(p.tags), p.decimals, p.order_matters) == \
               (orig.gold_sql, orig.tables, set(orig.tags), orig.decimals, orig.order_matters), p.id


def test_unanswerable_questions_have_no_gold():
    unanswerable = [q for q in QS if q.unanswerable]
    assert len(unanswerable) >= 5
    for q in unanswerable:
        assert q.gold_sql is None and q.tables == (), q.id
    for q in ANSWERABLE:
        assert q.gold_sql and q.tables, q.id


@pytest.mark.parametrize("q", ANSWERABLE, ids=lambda q: q.id)
def test_tables_are_what_the_gold_reads(q):
    assert all(t.startswith("acme.") and t.count(".") == 2 for t in q.tables), q.tables
    assert len(set(q.tables)) == len(q.tables)
    assert tables_read(q.gold_sql) == set(q.tables)


def test_tables_read_excludes_ctes():
    sql = ("WITH t AS (SELECT * FROM acme.core.fct_orders) "
           "SELECT * FROM t JOIN acme.core.dim_store s ON s.store_id = t.store_id")
    assert tables_read(sql) == {"acme.core.fct_orders", "acme.core.dim_store"}


def test_order_matters_only_when_ordered():
    for q in ANSWERABLE:
        if q.order_matters:
            assert "ORDER BY" in (q.gold_sql or "").upper(), q.id


def test_every_trap_has_a_question():
    assert len(TRAPS) >= 20
    for name, qid, wrong in TRAPS:
        assert qid in BY_ID and not BY_ID[qid].unanswerable, name
        assert tables_read(wrong), name


# ---------------------------------------------------------------------------------------------- lake
def test_gold_runs_in_both_catalogs(gold, cats):
    for q in ANSWERABLE:
        rows = gold[("enriched", q.id)]
        assert rows, f"{q.id}: the gold returns no rows"
        for r in rows:
            assert any(v is not None for v in r), f"{q.id}: an all-NULL row {r}"
        assert normalized(rows, q) == normalized(gold[("stale", q.id)], q), \
            f"{q.id}: the enriched and stale lakes disagree"


def test_gold_results_are_small(gold):
    big = {q.id: len(gold[("enriched", q.id)]) for q in ANSWERABLE if len(gold[("enriched", q.id)]) > 10}
    assert not big, f"gold results of more than 10 rows: {big}"


def test_paraphrases_have_the_original_result(gold):
    paraphrases = [q for q in QS if q.paraphrase_of]
    for p in paraphrases:
        assert p.paraphrase_of
        orig = BY_ID[p.paraphrase_of]
        assert normalized(gold[("enriched", p.id)], p) == normalized(gold[("enriched", orig.id)], orig), p.id


@pytest.mark.parametrize("trap,qid,wrong", TRAPS, ids=[t[0] for t in TRAPS])
def test_trap_changes_the_answer(trap, qid, wrong, gold, cats):
    q = BY_ID[qid]
    got = run(cats["enriched"], wrong)
    assert normalized(got, q) != normalized(gold[("enriched", qid)], q), \
        f"{trap}: the tempting SQL gives the gold answer of {qid}"
