"""The TPC-DS world's public questions (eval/questions/tpcds.yaml; issue 49, Deliver 3 and 6).

Default tier (no lake): the file loads in the harness's format, holds at least 30 questions with ids of
their own and every tag the world's changes are about, and `tables:` is exactly what each gold SQL reads.

Slow tier (the built world: SEMCAT_EVAL_TPCDS=DIR, a world built by `semcat eval build --world tpcds`, copied
first; else built here, about 8 minutes on 2 busy cores): every gold SQL runs at the latest vid of the
enriched, stale and reviewed catalogs (the same data, only annotations differ) with the same non-empty
answer, no NULL measure (group keys may be NULL: such a group is part of the answer), distinct group keys
(an unambiguous answer), and the questions about each
change have golds the pre-change reading would answer otherwise (the world's changes matter)."""

from __future__ import annotations

import os

import pytest

from eval.harness.questions import load_questions
from eval.harness.runner import tables_read

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILE = os.path.join(ROOT, "eval", "questions", "tpcds.yaml")
QS = load_questions(FILE)
ANSWERABLE = [q for q in QS if not q.unanswerable]

# (question id, what the stale annotations suggest: SQL that gives another answer on the world)
STALE_READINGS: list[tuple[str, str]] = [
    ("t001", "SELECT SUM(wr_return_amt) FROM tpcds.sales.web_returns WHERE wr_returned_date BETWEEN DATE '2002-12-01' "
             "AND DATE '2002-12-31'"),
    ("t013", "SELECT SUM(cs_net_paid) FROM tpcds.sales.catalog_sales WHERE cs_sold_date BETWEEN DATE '2002-12-01' "
             "AND DATE '2002-12-31'"),
    ("t018", "SELECT SUM(sr_return_amt) FROM tpcds.sales.store_returns WHERE sr_returned_date = DATE '2003-01-04'"),
    ("t023", "SELECT COUNT(*) FROM tpcds.dim.ship_mode WHERE sm_type = 'EXPRESS'"),
    ("t028", "SELECT COUNT(*) FROM tpcds.dim.customer_address WHERE ca_gmt_offset = -300"),
]


def test_the_file_is_in_the_harness_format_with_enough_questions():
    assert len(QS) >= 30 and len(ANSWERABLE) >= 30
    assert len({q.id for q in QS}) == len(QS)
    tags = {t for q in QS for t in q.tags}
    assert {"unit", "deprecated", "enum", "metric", "join", "freshness", "control", "unanswerable"} <= tags


@pytest.mark.parametrize("q", ANSWERABLE, ids=lambda q: q.id)
def test_tables_are_what_the_gold_reads(q):
    assert sorted(tables_read(q.gold_sql)) == sorted(q.tables)
    assert all(t.startswith("tpcds.") for t in q.tables)


# ------------------------------------------------------------------ on the built world (slow)
@pytest.fixture(scope="module")
def world(tpcds_world):
    """The plain world: tests/eval/conftest.py's session fixture (SEMCAT_EVAL_TPCDS=DIR, copied; else built)."""
    return tpcds_world


@pytest.fixture(scope="module")
def cats(tpcds_cats):
    """The enriched, stale and reviewed catalogs of the world (conftest's session fixture: one opening each)."""
    return tpcds_cats


def _rows(cat, sql):
    import catalog_core as cc

    return cc.run_sql(cat, sql, limit=10_000).rows


@pytest.mark.slow  # the TPC-DS world: tpcgen-cli and Spark (about 8 minutes to build on 2 busy cores)
def test_every_gold_runs_with_one_non_empty_unambiguous_answer(cats):
    for q in ANSWERABLE:
        got = {h: _rows(c, q.gold_sql) for h, c in cats.items()}
        rows = got["enriched"]
        assert rows, f"{q.id}: empty answer"
        bags = {h: sorted(map(repr, r)) for h, r in got.items()}  # a bag of rows: no ORDER BY, no order
        assert bags["stale"] == bags["enriched"] == bags["reviewed"], f"{q.id}: the histories hold other data"
        assert all(r[-1] is not None for r in rows), f"{q.id}: a NULL answer {rows[:3]}"
        if len(rows) > 1:
            keys = [tuple(r[:-1]) if len(r) > 1 else tuple(r) for r in rows]
            assert len(set(keys)) == len(keys), f"{q.id}: repeated group keys"
        if len(rows[0]) == 1 and isinstance(rows[0][0], (int, float)) and "COUNT" not in q.gold_sql.upper():
            assert rows[0][0] != 0, f"{q.id}: a zero answer"


@pytest.mark.slow  # the TPC-DS world (see above)
def test_the_changes_move_the_answers(cats):
    by_id = {q.id: q for q in QS}
    for qid, stale_sql in STALE_READINGS:
        gold = _rows(cats["enriched"], by_id[qid].gold_sql)
        try:
            other = _rows(cats["enriched"], stale_sql)
        except Exception:  # noqa: BLE001 - a reading that no longer runs is another answer too
            continue
        assert other != gold, f"{qid}: the stale reading gives the gold answer {gold}"
