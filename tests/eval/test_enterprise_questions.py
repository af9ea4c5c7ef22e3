"""eval/questions/enterprise.yaml: the public questions of the enterprise world. The file's structure and
its tables against the seed-7 plan (fast); with SEMCAT_EVAL_LAKE_ENTERPRISE=DIR (a lake built with
`semcat eval build --scale enterprise --seed 7 --data DIR`), every gold runs in both catalogs of a copy and
returns the same non-empty, non-NULL answer, and a top-1 answer has no tie."""

from __future__ import annotations

import os
import re
import shutil

import pytest
import sqlglot
from sqlglot import exp

from eval.harness.questions import TRAP_TAGS, load_questions
from eval.lake.enterprise_spec import ANN_TRAPS, FULL, PRE_SLOTS, World

FILE = os.path.join(os.path.dirname(__file__), "..", "..", "eval", "questions", "enterprise.yaml")
QS = load_questions(FILE)
ANSWERABLE = [q for q in QS if not q.unanswerable]
WORLD = World(7, FULL)


def tables_read(sql: str) -> set[str]:
    tree = sqlglot.parse_one(sql, read="duckdb")
    ctes = {c.alias for c in tree.find_all(exp.CTE)}
    return {".".join(p for p in (t.catalog, t.db, t.name) if p) for t in tree.find_all(exp.Table) if t.name not in ctes}


def test_file_has_30_questions_on_lookalikes_and_replacements():
    assert len(ANSWERABLE) >= 30
    tags = [t for q in QS for t in q.tags]
    assert tags.count("lookalike") >= 20 and tags.count("deprecated") >= 12, tags
    assert {"join", "enum", "unit", "unanswerable"} <= set(tags)
    assert len({q.id for q in QS}) == len(QS)


# ---------------------------------------------------------------------------------------------- annotation-only traps
# The SQL an agent writes without the enriched annotation (no tax rate, no test-account list, the stored
# timestamp taken as UTC, `amount` taken as dollars, no meaning for the status code): each must give another
# answer than the gold, on the plan's rows (fast) and on the built world.
NAIVE = {
    "e041": "SELECT ROUND(SUM(sale_amount), 2) FROM acme.merch.pos_sales WHERE sale_date BETWEEN DATE '2025-01-01' "
            "AND DATE '2025-01-31'",
    "e042": "SELECT ROUND(AVG(sale_amount), 2) FROM acme.merch.pos_sales WHERE sale_date BETWEEN DATE '2025-02-01' "
            "AND DATE '2025-02-28'",
    "e043": "SELECT COUNT(*) FROM acme.merch.pos_sales WHERE sale_date BETWEEN DATE '2024-12-01' AND DATE '2024-12-31' "
            "AND sale_amount > 100",
    "e044": "SELECT COUNT(*) FROM acme.crm.web_orders WHERE order_date BETWEEN DATE '2025-01-01' AND DATE '2025-01-31'",
    "e045": "SELECT ROUND(SUM(amount_cents) / 100.0, 2) FROM acme.crm.web_orders WHERE order_date BETWEEN "
            "DATE '2025-02-01' AND DATE '2025-02-28'",
    "e046": "SELECT customer_id FROM acme.crm.web_orders WHERE order_date BETWEEN DATE '2024-12-01' AND DATE '2024-12-31' "
            "GROUP BY customer_id ORDER BY COUNT(*) DESC LIMIT 1",
    "e047": "SELECT COUNT(*) FROM acme.web_analytics.login_events WHERE CAST(login_time AS DATE) = DATE '2025-01-15'",
    "e048": "SELECT EXTRACT(hour FROM login_time) AS h FROM acme.web_analytics.login_events WHERE login_time >= "
            "TIMESTAMP '2025-01-01 00:00:00' AND login_time < TIMESTAMP '2025-02-01 00:00:00' GROUP BY h "
            "ORDER BY COUNT(*) DESC LIMIT 1",
    "e049": "SELECT COUNT(*) FROM acme.web_analytics.login_events WHERE login_time >= TIMESTAMP '2024-12-01 00:00:00' "
            "AND login_time < TIMESTAMP '2025-01-01 00:00:00' AND EXTRACT(hour FROM login_time) < 6",
    "e050": "SELECT ROUND(SUM(amount), 2) FROM acme.supply_chain.freight_invoices WHERE invoice_date BETWEEN "
            "DATE '2025-02-01' AND DATE '2025-02-28'",
    "e051": "SELECT ROUND(AVG(amount), 2) FROM acme.supply_chain.freight_invoices WHERE invoice_date BETWEEN "
            "DATE '2025-02-01' AND DATE '2025-02-28'",
    "e052": "SELECT COUNT(*) FROM acme.supply_chain.freight_invoices WHERE invoice_date BETWEEN DATE '2025-02-01' AND "
            "DATE '2025-02-28' AND amount > 1000",
    "e053": "SELECT ROUND(SUM(amount_usd), 2) FROM acme.support.service_orders WHERE order_date BETWEEN "
            "DATE '2025-02-01' AND DATE '2025-02-28'",
    "e054": "SELECT COUNT(*) FROM acme.support.service_orders WHERE order_date BETWEEN DATE '2025-02-01' AND "
            "DATE '2025-02-28' AND lower(status_code) IN ('cancelled', 'canceled', 'c', 'x')",
    "e055": "SELECT ROUND(AVG(amount_usd), 2) FROM acme.support.service_orders WHERE order_date BETWEEN "
            "DATE '2025-02-01' AND DATE '2025-02-28'",
}
TRAPPED = [q for q in QS if set(q.tags) & set(TRAP_TAGS)]


def test_annotation_traps_have_12_questions_one_kind_each_and_a_naive_reading():
    assert len(TRAPPED) >= 12
    assert {q.id for q in TRAPPED} == set(NAIVE)
    for q in TRAPPED:
        kinds = set(q.tags) & set(TRAP_TAGS)
        assert len(kinds) == 1, q.id
        (t,) = q.tables
        assert ANN_TRAPS[t.removeprefix("acme.")] == next(iter(kinds)), q.id
        assert tables_read(NAIVE[q.id]) == set(q.tables)
    assert {k for q in TRAPPED for k in q.tags} >= set(TRAP_TAGS)


@pytest.fixture(scope="module")
def plan_db():
    """The annotation-trap tables' rows as the seed-7 plan writes them, in an in-memory DuckDB under their
    catalog names (acme.<namespace>.<table>): the golds and naive readings without a build."""
    import datetime as dt

    import duckdb
    import pyarrow as pa

    w = World(7, FULL)
    data: dict[str, list] = {}
    lo = dt.date(2023, 8, 1)
    for i, s in enumerate(w.slots):
        hi = s - dt.timedelta(days=s.day) if i < len(PRE_SLOTS) else s - dt.timedelta(days=1)
        for n, _mode, rows in w.writes_at(i, lo, hi):
            if w.tables[n].kind.startswith("trap_"):
                data.setdefault(n, []).extend(rows)
        lo = hi + dt.timedelta(days=1)
    con = duckdb.connect()
    con.execute("ATTACH ':memory:' AS acme")
    for n, rows in data.items():
        ns, tb = n.split(".")
        con.execute(f"CREATE SCHEMA IF NOT EXISTS acme.{ns}")
        con.register("rows_" + tb, pa.Table.from_pylist(rows, schema=pa.schema(
            [pa.field(c, ty) for c, ty in w.tables[n].columns])))
        con.execute(f"CREATE TABLE acme.{ns}.{tb} AS SELECT * FROM rows_{tb}")
    yield con
    con.close()


def _no_tie(run, sql):
    """A top-1 gold (`... GROUP BY g ORDER BY COUNT(*) DESC LIMIT 1`): the first two counts differ."""
    if "ORDER BY COUNT(*) DESC LIMIT 1" in sql:
        tree = sqlglot.parse_one(sql, read="duckdb")
        assert isinstance(tree, exp.Select), sql
        top = run(tree.select("COUNT(*) AS n_top").limit(2).sql(dialect="duckdb"))
        assert len(top) < 2 or top[0][-1] != top[1][-1], top


@pytest.mark.parametrize("q", TRAPPED, ids=lambda q: q.id)
def test_naive_reading_gives_another_answer_on_the_plan(q, plan_db):
    def run(sql):
        return [list(r) for r in plan_db.execute(sql).fetchall()]

    gold, naive = run(q.gold_sql), run(NAIVE[q.id])
    assert gold and gold != [[0]] and all(v is not None for r in gold for v in r), gold
    assert gold != naive, (q.id, gold, naive)
    _no_tie(run, q.gold_sql)


@pytest.mark.parametrize("q", ANSWERABLE, ids=lambda q: q.id)
def test_tables_are_planned_and_what_the_gold_reads(q):
    assert tables_read(q.gold_sql) == set(q.tables)
    for t in q.tables:
        name = t.removeprefix("acme.")
        assert name in WORLD.tables, t
    if "lookalike" in q.tags:  # the right table has near-identical neighbours
        heads = {WORLD.tables[t.removeprefix("acme.")].base for t in q.tables}
        assert any(sum(1 for x in WORLD.tables.values() if x.base == h) >= 2 for h in heads), q.id


def test_replacement_questions_read_the_current_table():
    """A question on dates after a head stopped reads its v2 (the head has no rows then); one that spans the
    switch reads both."""
    for q in ANSWERABLE:
        for t in q.tables:
            et = WORLD.tables[t.removeprefix("acme.")]
            if et.kind == "base_fact" and et.replaced_by and f"acme.{et.replaced_by}" not in q.tables:
                dates = re.findall(r"DATE '(\d{4}-\d{2}-\d{2})'", q.gold_sql or "")
                stop = WORLD.slots[et.last_slot]
                assert all(d < stop.isoformat() for d in dates), (q.id, t, stop)


# ---------------------------------------------------------------------------------------------- the built world
LAKE = os.environ.get("SEMCAT_EVAL_LAKE_ENTERPRISE")


@pytest.fixture(scope="module")
def ent_cats(tmp_path_factory):
    if not LAKE:
        pytest.skip("set SEMCAT_EVAL_LAKE_ENTERPRISE=DIR to a lake built with --scale enterprise --seed 7")
    import catalog_core as cc

    # a copy of the whole lake: its catalogs name their files relative to it (docs/engine.md, Relocatable
    # catalogs), so a catalog copied alone reads no file
    dst = tmp_path_factory.mktemp("enterprise") / "lake"
    shutil.copytree(LAKE, dst, symlinks=True)
    out = {}
    for h in ("enriched", "stale"):
        out[h] = cc.Catalog.open(str(dst / h))
    yield out
    for c in out.values():
        c.close()


def _run(cat, sql):
    import catalog_core as cc

    return [list(r) for r in cc.run_sql(cat, sql, limit=1000, timeout_s=60).rows]


@pytest.mark.parametrize("q", ANSWERABLE, ids=lambda q: q.id)
def test_gold_answers_on_the_built_world(q, ent_cats):
    rows = {h: _run(c, q.gold_sql) for h, c in ent_cats.items()}
    assert rows["enriched"] and sorted(map(repr, rows["enriched"])) == sorted(map(repr, rows["stale"])), rows
    assert all(v is not None for r in rows["enriched"] for v in r)
    assert rows["enriched"] != [[0]], "a zero count says the question reads an empty range"
    m = re.search(r"SELECT ([\w.]+) FROM(.*)ORDER BY (.*) DESC LIMIT 1", q.gold_sql, re.S)
    if m:  # top-1: no tie with the second
        top = _run(ent_cats["enriched"], f"SELECT {m.group(1)}, {m.group(3)} AS v FROM{m.group(2)}ORDER BY v DESC LIMIT 2")
        assert len(top) < 2 or top[0][1] != top[1][1], top


@pytest.mark.parametrize("q", TRAPPED, ids=lambda q: q.id)
def test_naive_reading_gives_another_answer_on_the_built_world(q, ent_cats):
    """The same on the built world (both histories hold the same rows): the gold needs the enriched annotation."""
    for c in ent_cats.values():
        gold, naive = _run(c, q.gold_sql), _run(c, NAIVE[q.id])
        assert gold and gold != naive, (q.id, gold, naive)
        _no_tie(lambda sql, c=c: _run(c, sql), q.gold_sql)
