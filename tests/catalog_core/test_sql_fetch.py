"""`duck.fetch_rel` runs a bound statement's rows as one statement on its connection (issue 26,
item 2: without `rel.limit(n)`, which binds the limited statement once more): the columns, rows and
errors are those of `rel.limit(limit + 1).fetchall()`, the path it replaces."""

from __future__ import annotations

import duckdb
import pytest

from catalog_core.sql import duck

STATEMENTS = [
    "SELECT * FROM t",
    "FROM t",
    "SELECT * FROM t ORDER BY i DESC",
    "SELECT i FROM t UNION ALL SELECT i FROM t ORDER BY i DESC",
    "WITH a AS (SELECT * FROM t) SELECT g, count(*) AS n FROM a GROUP BY g ORDER BY g DESC",
    "SELECT * FROM t ORDER BY i LIMIT 3",
    "SELECT * FROM t WHERE i > 100",
    "SELECT * FROM t LIMIT 0",
    "SELECT 1 AS a, 2 AS a",
    "SELECT [1, 2] AS l, {'a': 1} AS st, NULL AS n",
    "SELECT 1 -- a trailing comment",
    "SELECT 1 /* c */ ;",
    "SELECT 1; -- c",
    "SELECT 'a;b' AS x, 'two\nlines' AS y",
    "VALUES (1, 'a'), (2, 'b')",
    "EXPLAIN SELECT * FROM t",
    "SUMMARIZE t",
    "DESCRIBE t",
    "PRAGMA table_info('t')",
    # rows of text: zone-aware timestamps and intervals are cast to VARCHAR first
    "SELECT ts, iv, s FROM t ORDER BY i",
    # errors: parse (its line), bind, conversion at run time
    "SELECT 1; SELEC 2",
    "SELECT nope FROM t",
    "SELECT CAST(s AS INTEGER) FROM t",
]


@pytest.fixture(scope="module")
def con():
    c = duckdb.connect()
    c.execute("SET TimeZone = 'UTC'")
    c.execute("CREATE TABLE t AS SELECT i, i % 3 AS g, TIMESTAMPTZ '2025-01-01 00:00:00+00' + i * INTERVAL 1 hour AS ts, "
              "INTERVAL 1 day * i AS iv, 'x' || i AS s FROM range(10) r(i)")
    yield c
    c.close()


def _outcome(con, sql, fetch):
    cur = con.cursor()
    try:
        rel = cur.sql(sql)
        return fetch(cur, rel)
    except duckdb.Error as e:
        return f"{type(e).__name__}: {e}"
    finally:
        cur.close()


def _by_limit(cur, rel, limit=4):
    """What fetch_rel did before: the relation API's own LIMIT."""
    types = [str(t) for t in rel.types]
    columns = [duck.SqlColumn(name=n, type=t) for n, t in zip(rel.columns, types, strict=True)]
    if any(duck._as_text(t) for t in types):
        rel = rel.project(", ".join(f"CAST(#{i + 1} AS VARCHAR)" if duck._as_text(t) else f"#{i + 1}"
                                    for i, t in enumerate(types)))
    return columns, rel.limit(limit + 1).fetchall()


@pytest.mark.parametrize("sql", STATEMENTS)
def test_fetch_rel_is_the_relations_own_limit(con, sql):
    want = _outcome(con, sql, _by_limit)
    got = _outcome(con, sql, lambda cur, rel: duck.fetch_rel(cur, rel, 4))
    assert got == want
    if isinstance(want, tuple) and sql.startswith("SELECT * FROM t") and "WHERE" not in sql and "LIMIT" not in sql:
        assert len(want[1]) == 5  # limit + 1: the caller's `truncated`
