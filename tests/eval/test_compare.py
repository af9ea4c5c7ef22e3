"""The comparator of HARNESS.md (Scoring) on hand-made results (catalog_core's SqlResult)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from catalog_core.sql.reader import SqlColumn, SqlResult
from eval.harness.compare import MAX_EXTRA_COLUMNS, compare


def R(names, rows):
    cols = [SqlColumn(name=n, type="ANY") for n in names]
    return SqlResult(columns=cols, rows=[list(r) for r in rows], truncated=False, snapshot=1, row_count=len(rows))


def ok(gold, pred, **kw):
    c = compare(gold, pred, order_matters=kw.pop("order_matters", False), decimals=kw.pop("decimals", 2))
    return c


GOLD = R(["region", "net"], [("east", 10.5), ("west", 20.25), ("north", 3.0)])


def test_identical_and_bag_order_ignored():
    assert ok(GOLD, GOLD).correct
    shuffled = R(["r", "n"], [("north", 3.0), ("east", 10.5), ("west", 20.25)])
    assert ok(GOLD, shuffled).correct


def test_order_matters():
    shuffled = R(["r", "n"], [("north", 3.0), ("east", 10.5), ("west", 20.25)])
    c = ok(GOLD, shuffled, order_matters=True)
    assert not c.correct and "order" in c.reason
    assert ok(GOLD, GOLD, order_matters=True).correct


def test_row_count_reason():
    c = ok(GOLD, R(["r", "n"], [("east", 10.5)]))
    assert not c.correct and c.reason.startswith("row count 1 vs 3")


def test_duplicates_count():
    g = R(["x"], [(1,), (1,), (2,)])
    assert ok(g, R(["x"], [(1,), (2,), (1,)])).correct
    assert not ok(g, R(["x"], [(1,), (2,), (2,)])).correct


def test_extra_columns_at_most_two():
    two = R(["a", "region", "c", "net"], [(1, "east", 0, 10.5), (2, "west", 0, 20.25), (3, "north", 0, 3.0)])
    assert ok(GOLD, two).correct
    three = R(["a", "region", "c", "net", "d"], [(*r, 9) for r in two.rows])
    c = ok(GOLD, three)
    assert not c.correct and f"at most {MAX_EXTRA_COLUMNS} extra" in c.reason
    c = ok(GOLD, R(["net"], [(10.5,), (20.25,), (3.0,)]))
    assert not c.correct and "column" in c.reason


def test_column_permutation_and_names_ignored():
    swapped = R(["total", "where"], [(20.25, "west"), (3.0, "north"), (10.5, "east")])
    assert ok(GOLD, swapped).correct


def test_rows_must_align_across_columns():
    # each column matches as a bag, but the pairs are wrong
    crossed = R(["r", "n"], [("east", 20.25), ("west", 10.5), ("north", 3.0)])
    c = ok(GOLD, crossed)
    assert not c.correct and "aligns" in c.reason


def test_assignment_is_searched_not_greedy():
    # gold (a, b); predicted columns p0, p1, p2. A greedy left-to-right pick of the first candidate
    # column for gold a takes p0, which leaves no column for b; the right assignment is a->p1, b->p0.
    gold = R(["a", "b"], [(1, 1), (2, 1)])
    pred = R(["p0", "p1", "p2"], [(1, 1, 7), (1, 2, 7)])
    assert ok(gold, pred).correct
    # two identical gold columns need two distinct predicted columns
    gold2 = R(["a", "b"], [(1, 1), (2, 2)])
    assert not ok(gold2, R(["p"], [(1,), (2,)])).correct
    assert ok(gold2, R(["p", "q"], [(1, 1), (2, 2)])).correct


def test_no_column_matches_reason_names_the_gold_column():
    c = ok(GOLD, R(["r", "n"], [("east", 10.5), ("west", 20.25), ("north", 4.0)]))
    assert not c.correct and c.reason == "no predicted column matches gold column 2 (net)"


def test_rounding_to_decimals():
    assert ok(R(["x"], [(10.5,)]), R(["x"], [(10.504,)])).correct
    assert not ok(R(["x"], [(10.5,)]), R(["x"], [(10.51,)])).correct
    assert ok(R(["x"], [(10.5,)]), R(["x"], [(10.51,)]), decimals=1).correct
    assert ok(R(["x"], [(1 / 3,)]), R(["x"], [(0.333333333,)]), decimals=4).correct
    # float noise at a rounding boundary
    assert ok(R(["x"], [(2.675,)]), R(["x"], [(2.6749999999999,)])).correct


def test_scaled_answers_are_wrong():
    c = ok(R(["net"], [(1234.56,)]), R(["x", "n"], [("a", 123456.0)]))
    assert c.reason == "no predicted column matches gold column 1 (net): gold 1234.56, predicted 'a', 123456.0"
    assert not ok(R(["x"], [(1234.56,)]), R(["x"], [(123456.0,)])).correct   # cents for dollars
    assert not ok(R(["x"], [(0.25,)]), R(["x"], [(25.0,)])).correct          # percent for a fraction
    assert not ok(R(["x"], [(0.25,)]), R(["x"], [(0.0025,)])).correct


def test_nulls_equal_only_nulls():
    assert ok(R(["x"], [(None,), (1,)]), R(["x"], [(1,), (None,)])).correct
    assert not ok(R(["x"], [(None,)]), R(["x"], [(0,)])).correct
    assert not ok(R(["x"], [(None,)]), R(["x"], [("",)])).correct
    assert not ok(R(["x"], [(0,)]), R(["x"], [(None,)])).correct


def test_decimals_and_floats_and_ints():
    assert ok(R(["x"], [(Decimal("10.50"),)]), R(["x"], [(10.5,)])).correct
    assert ok(R(["x"], [(3,)]), R(["x"], [(3.0,)])).correct
    assert ok(R(["x"], [(Decimal("1e9"),)]), R(["x"], [(1e9 + 0.5,)])).correct  # relative 1e-6
    assert not ok(R(["x"], [(Decimal("1e3"),)]), R(["x"], [(1000.5,)])).correct
    assert not ok(R(["x"], [(1,)]), R(["x"], [(True,)])).correct
    assert not ok(R(["x"], [(10,)]), R(["x"], [("10",)])).correct


def test_strings_and_dates():
    assert not ok(R(["x"], [("East",)]), R(["x"], [("east",)])).correct
    assert ok(R(["d"], [("2025-03-09",)]), R(["d"], [(dt.date(2025, 3, 9),)])).correct
    assert ok(R(["d"], [("2025-03-09",)]), R(["d"], [("2025-03-09T00:00:00",)])).correct
    assert ok(R(["d"], [("2025-03-09",)]), R(["d"], [("2025-03-09 00:00:00+00",)])).correct
    assert not ok(R(["d"], [("2025-03-09",)]), R(["d"], [("2025-03-09T13:00:00",)])).correct
    assert not ok(R(["d"], [("2025-03-09",)]), R(["d"], [("2025-03-10",)])).correct


def test_empty_results():
    assert ok(R(["a"], []), R(["b", "c"], [])).correct
    c = ok(R(["a"], []), R(["b"], [(1,)]))
    assert not c.correct and "row count" in c.reason
    assert not ok(R(["a"], [(1,)]), R(["b"], [])).correct


@pytest.mark.parametrize("n", [500, 2000])
def test_large_bags_with_noise(n):
    gold = R(["k", "v"], [(i % 7, i * 1.1) for i in range(n)])
    pred = R(["v", "k"], [(i * 1.1 + 1e-12, i % 7) for i in reversed(range(n))])
    assert ok(gold, pred).correct
    bad = R(["v", "k"], [(i * 1.1 + (1 if i == 3 else 0), i % 7) for i in range(n)])
    assert not ok(gold, bad).correct
