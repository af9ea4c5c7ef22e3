"""Issue 35, item 6 (view definitions): no statement `run_sql` accepts reveals the server's absolute
file paths through DuckDB's catalog. The views are `read_parquet` of the snapshot's files by their
absolute paths, so everything that shows a view's SQL is refused (rule `view_sql`), and a sweep
over every relation and every argument-less table function the sandbox lets an agent name finds
no path in any answer."""

from __future__ import annotations

import pytest

import catalog_core as cc
from catalog_core.errors import SqlRefusedError
from tests.helpers import build_lake


@pytest.fixture
def lake(data_dir):
    cat = cc.Catalog.open(data_dir)
    build_lake(cat)
    yield cat
    cat.close()


REPRODUCTIONS = [
    "SELECT sql FROM duckdb_views()",
    "SELECT sql FROM duckdb_views() WHERE NOT internal",
    "SELECT view_definition FROM information_schema.views",
    "SELECT * FROM information_schema.views",
    "SELECT definition FROM pg_catalog.pg_views",
    "SELECT definition FROM pg_views",
    "SELECT sql FROM sqlite_master",
    "SELECT sql FROM sqlite_schema",
    "SELECT sql FROM sqlite_temp_master",
    "SELECT * FROM duckdb_views",
    "SELECT v FROM duckdb_views() AS v",
    "SELECT * FROM (SELECT * FROM duckdb_indexes())",
    'SELECT * FROM "system"."information_schema"."views"',
    "WITH x AS (SELECT * FROM duckdb_views()) SELECT sql FROM x",
]


@pytest.mark.parametrize("sql", REPRODUCTIONS)
def test_view_sql_is_refused(lake, sql):
    with pytest.raises(SqlRefusedError) as e:
        cc.run_sql(lake, sql)
    assert e.value.details.get("rule") == "view_sql", e.value.message
    assert "information_schema.tables" in e.value.message  # says what to use instead
    assert lake.data_dir not in e.value.message


def _answers(cat, sql: str) -> str | None:
    try:
        return repr(cc.run_sql(cat, sql, limit=10_000).rows)
    except cc.CatalogError as e:
        return e.message


def test_no_relation_or_table_function_shows_a_path(lake):
    root = lake.data_dir
    # what an agent can list, through run_sql itself
    rels = cc.run_sql(lake, "SELECT DISTINCT table_catalog, table_schema, table_name FROM information_schema.tables",
                      limit=10_000).rows
    fns = cc.run_sql(lake, "SELECT DISTINCT function_name FROM duckdb_functions() "
                           "WHERE function_type = 'table' AND len(parameters) = 0", limit=10_000).rows
    assert any(r[2] == "orders" for r in rels) and len(fns) > 10
    probes = [f'SELECT * FROM "{c}"."{s}"."{t}"' for c, s, t in rels]
    probes += [f'SELECT * FROM "{s}"."{t}"' for s, t in {(r[1], r[2]) for r in rels}]
    probes += [f"SELECT * FROM {f}()" for (f,) in fns]
    probes += ["EXPLAIN SELECT * FROM wh.sales.orders", "EXPLAIN ANALYZE SELECT * FROM wh.sales.orders",
               "SELECT * FROM pg_catalog.pg_class", "SELECT * FROM pg_catalog.pg_proc", "SHOW ALL TABLES",
               "DESCRIBE wh.sales.orders", "SUMMARIZE wh.sales.orders", "PRAGMA show_tables_expanded"]
    leaks = [p for p in probes if root in (_answers(lake, p) or "")]
    assert leaks == [], leaks
    # and the tables are still there to be listed and read
    assert cc.run_sql(lake, "SELECT count(*) FROM wh.sales.orders").rows == [[9]]
    assert cc.run_sql(lake, "SELECT count(*) FROM information_schema.columns WHERE table_name = 'orders'").rows == [[4]]
