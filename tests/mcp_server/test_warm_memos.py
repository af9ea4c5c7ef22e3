"""The warm path's memos in the MCP layer: sqlglot table and column references per SQL text
(`context.sql_table_refs`, `context.sql_column_refs`) and o200k token counts per text
(`bounds.count_tokens`). Each is a function of its text alone; what they must not do is answer
one text with another's result, hand out a value a caller can change for the next caller, or
grow without bound. No timings."""

from __future__ import annotations

import cachetools
import pytest

from mcp_server.mcp import bounds, context
from semantic.annotations import column_refs, table_refs

SQLS = [
    "SELECT a, b FROM acme.core.fct_orders",
    "SELECT * FROM acme.core.dim_store",
    "WITH t AS (SELECT x FROM ns.orders) SELECT x FROM t JOIN c.ns.items USING (k)",
    "SELECT o.status FROM acme.core.fct_orders o JOIN acme.core.dim_store s ON o.store_id = s.store_id",
]


def test_refs_match_sqlglot_for_each_text_twice():
    for _ in range(2):
        for sql in SQLS:
            assert context.sql_table_refs(sql) == table_refs(sql)
            assert context.sql_column_refs(sql) == column_refs(sql)


def test_refs_are_the_callers_own():
    got = context.sql_column_refs(SQLS[0])
    got[0].add("mutated")
    context.sql_table_refs(SQLS[0]).append(("x",))
    assert context.sql_column_refs(SQLS[0]) == column_refs(SQLS[0])
    assert context.sql_table_refs(SQLS[0]) == table_refs(SQLS[0])


def test_a_text_that_does_not_parse_raises_every_time():
    for _ in range(2):
        with pytest.raises(ValueError):
            context.sql_table_refs("SELECT FROM WHERE (((")


def test_refs_memo_is_bounded(monkeypatch):
    monkeypatch.setattr(context, "_refs", context._LRU(4))
    for i in range(10):
        context.sql_table_refs(f"SELECT 1 FROM t{i}")
    assert len(context._refs.data) == 4 and {k[1] for k in context._refs.data} == {f"SELECT 1 FROM t{i}" for i in range(6, 10)}
    context.sql_table_refs("SELECT 1 FROM t6")  # a hit is a use: t7 is now the least recent
    context.sql_table_refs("SELECT 1 FROM t10")
    assert {k[1] for k in context._refs.data} == {f"SELECT 1 FROM t{i}" for i in (6, 8, 9, 10)}
    assert context.sql_table_refs("SELECT 1 FROM t3") == [("t3",)]


def test_token_counts_are_each_texts_own(monkeypatch):
    texts = ["hello world", "hello world!", '{"rows":[[1,2],[3,4]]}', "x" * 5000, "héllo wörld " * 50]
    enc = bounds._encoding()
    for _ in range(2):
        for t in texts:
            assert bounds.count_tokens(t) == len(enc.encode(t))
    monkeypatch.setattr(bounds, "_counts", cachetools.LRUCache(maxsize=2))
    for i in range(5):
        bounds.count_tokens(f"another text {i}")
    assert len(bounds._counts) == 2 and sorted(bounds._counts) == ["another text 3", "another text 4"]
    bounds.count_tokens("another text 3")  # a hit is a use: text 4 is now the least recent
    bounds.count_tokens("another text 5")
    assert sorted(bounds._counts) == ["another text 3", "another text 5"]
