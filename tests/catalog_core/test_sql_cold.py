"""The cold SQL path: a worker's database creates only the views a statement names (the others
when a later statement names them), and `prepare` builds a snapshot's database in an idle worker
before the first statement. What they must not change: the answers (rows and errors, a typo's
did-you-mean included), what `information_schema` lists, exactly the snapshot's files readable,
the time and memory limits, and a prepared database never serving another snapshot. Real worker
processes and DuckDB throughout."""

from __future__ import annotations

import os

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import catalog_core as cc
from catalog_core.errors import NotFoundError, SqlRefusedError, SqlTimeoutError
from catalog_core.sql import duck, reader, snapcache, worker


@pytest.fixture(autouse=True)
def _no_snapshot_cache():
    """The file-view path and its worker database (test_sql_snapcache.py covers the cache)."""
    before = snapcache.budget()
    cc.set_sql_cache_budget(0)
    worker.stop_all()  # no database of an earlier test
    yield
    cc.set_sql_cache_budget(before)


def rows(cat, sql, **kw):
    return cc.run_sql(cat, sql, **kw).rows


def plain(cat, sql, vid=None):
    """The same statement on a database with every view (`open_duckdb`, sandboxed)."""
    con = cc.open_duckdb(cat, snapshot=vid)
    try:
        return [list(r) for r in con.execute(sql).fetchall()]
    finally:
        con.close()


def test_install_views_with_only_defers_the_others_and_they_read_the_same_after_lock_down(wh):
    views = reader._views(wh.cat, wh.cat.latest_vid, True)
    con = duck.connect(True)
    try:
        deferred = duck.install_views(con, views, True, only=frozenset({"orders"}))
        assert "customers" in deferred and "orders" not in deferred
        con.execute("USE wh")
        assert con.execute("SELECT count(*) FROM wh.sales.orders").fetchall() == [(9,)]
        with pytest.raises(duckdb.CatalogException):   # its schema exists, its view not yet
            con.execute("SELECT count(*) FROM wh.crm.customers")
        assert duck.add_views(con, deferred, frozenset({"customers", "nope"})) is True
        assert "customers" not in deferred and deferred   # the others stay deferred
        assert duck.add_views(con, deferred, None) is True and deferred == {}
        assert duck.add_views(con, deferred, None) is False
        # created after the lock-down: the same rows as on a database with every view from the start
        got = [list(r) for r in con.execute("SELECT * FROM wh.crm.customers ORDER BY 1").fetchall()]
        assert got == plain(wh.cat, "SELECT * FROM wh.crm.customers ORDER BY 1")
        # and the lock-down still holds for everything else
        with pytest.raises(duckdb.Error):
            con.execute("SET lock_configuration = false")
        with pytest.raises(duckdb.PermissionException):
            con.execute(f"SELECT * FROM read_parquet('{wh.paths['a']}.nope')").fetchall()
    finally:
        con.close()


def test_views_a_statement_does_not_name_are_created_when_a_later_one_does(wh, pool1):
    """One worker database per snapshot: the second table's view is added to it (the database
    is reused: `last_cached`) and reads what a database with every view reads."""
    assert rows(wh.cat, "SELECT count(*) FROM wh.sales.orders") == [[9]]
    first = worker.last_worker()
    sql = "SELECT * FROM wh.crm.customers ORDER BY 1"
    assert rows(wh.cat, sql) == plain(wh.cat, sql)
    assert worker.last_worker() == first and worker.last_cached() is True
    # both views there now, the database still reused
    both = "SELECT (SELECT count(*) FROM wh.sales.orders), (SELECT count(*) FROM wh.crm.customers)"
    assert rows(wh.cat, both) == [[9, 2]] and worker.last_cached() is True


def test_a_misspelt_table_gets_the_same_hint_as_with_every_view(wh, pool1):
    """The name lookup fails on a database holding only one view: every view is created and the
    statement runs again, so DuckDB's did-you-mean names the table it would name otherwise."""
    assert rows(wh.cat, "SELECT count(*) FROM wh.sales.orders") == [[9]]
    with pytest.raises(NotFoundError) as err:
        cc.run_sql(wh.cat, "SELECT * FROM wh.crm.customer")
    assert "customers" in err.value.message
    with pytest.raises(duckdb.CatalogException) as want:
        plain(wh.cat, "SELECT * FROM wh.crm.customer")
    assert str(want.value).splitlines()[0] in err.value.message
    # and the database serves on, with every view
    assert rows(wh.cat, "SELECT count(*) FROM wh.crm.customers") == [[2]] and worker.last_cached() is True


def test_information_schema_lists_every_table_after_a_statement_on_one(wh, pool1):
    assert rows(wh.cat, "SELECT count(*) FROM wh.sales.orders") == [[9]]
    sql = "SELECT table_catalog, table_schema, table_name FROM information_schema.tables ORDER BY ALL"
    got = rows(wh.cat, sql)
    assert got == plain(wh.cat, sql)
    assert ["wh", "crm", "customers"] in got and ["wh", "sales", "orders"] in got


def test_prepare_builds_the_database_the_first_statement_uses(wh, pool1):
    assert reader.prepare(wh.cat, wait=True) is True
    job = reader._job(wh.cat, wh.cat.latest_vid, "", 1, 10, 1 << 30, None, None, None, 0)
    assert job.key is not None and worker.holds(job.key)
    assert rows(wh.cat, "SELECT sum(id) FROM wh.sales.orders") == [[45]]
    assert worker.last_cached() is True            # the prepared database, not a new one
    assert rows(wh.cat, "SELECT count(*) FROM wh.crm.customers") == [[2]] and worker.last_cached() is True


def test_a_prepared_database_never_serves_another_snapshot(wh, pool1):
    assert reader.prepare(wh.cat, snapshot=wh.v1, wait=True) is True
    v5 = wh.write("2001-06-04", "d", [10, 11])   # a new snapshot after the preparation
    assert rows(wh.cat, "SELECT count(*) FROM wh.sales.orders") == [[11]]
    assert worker.last_cached() is False           # the new vid: a new database
    assert rows(wh.cat, "SELECT count(*) FROM wh.sales.orders", snapshot=wh.v1) == [[3]]
    assert rows(wh.cat, "SELECT count(*) FROM wh.sales.orders", snapshot=v5) == [[11]]
    # prepared for the other limits than the statement's: not its database either
    worker.stop_all()
    assert reader.prepare(wh.cat, timeout_s=3, wait=True) is True
    assert rows(wh.cat, "SELECT count(*) FROM wh.sales.orders") == [[11]]
    assert worker.last_cached() is False


def test_limits_and_the_file_wall_hold_on_a_prepared_database(wh, pool1, tmp_path):
    assert reader.prepare(wh.cat, wait=True) is True
    with pytest.raises(SqlTimeoutError):
        cc.run_sql(wh.cat, "SELECT count(*) FROM range(10000000000000)", timeout_s=10)  # ~9 s per 10^11 rows here
    assert reader.prepare(wh.cat, wait=True) is True
    with pytest.raises(SqlRefusedError) as err:
        cc.run_sql(wh.cat, "SELECT length(repeat('a', x)) FROM (VALUES (700000000)) t(x)",
                   memory_limit=64 << 20, timeout_s=10)
    assert err.value.rule == "memory_limit"
    # past the statement check, straight to the prepared worker with its key: the views' files
    # only (DuckDB's allowed_paths), none of a later snapshot or outside it
    outside = tmp_path / "outside.parquet"
    pq.write_table(pa.table({"id": pa.array([666], pa.int64())}), str(outside))
    assert reader.prepare(wh.cat, wait=True) is True
    job = reader._job(wh.cat, wh.cat.latest_vid, "", 1, 10, 1 << 30, None, None, None, 0)
    for path in (str(outside), os.path.join(wh.cat.data_dir, "catalog", "CURRENT")):
        job.text = f"SELECT * FROM read_parquet('{path}')"
        answer = worker.run(job)
        assert answer["error"]["type"] == "PermissionException", answer
    job.text = "SELECT count(*) FROM wh.sales.orders"
    assert worker.run(job)["ok"]["rows"] == [[9]]


def test_prepare_does_nothing_for_a_catalog_without_spec_cache(monkeypatch, wh):
    monkeypatch.setattr(reader, "catalog_cache", lambda cat: None)
    assert reader.prepare(wh.cat, wait=True) is False


@pytest.mark.parametrize("sql", [
    "SELECT * FROM wh.sales.orders ORDER BY id",
    "SELECT 1 AS a, 2 AS a",                       # a subquery would rename the second `a`
    "SELECT 1 AS a_1, 2 AS a, 3 AS a",
    "SELECT TIMESTAMPTZ '2025-06-01 10:00:00+00' AS t, INTERVAL 26 HOUR AS i",  # DuckDB's text for these
    "SELECT [1, 2] AS l, {'x': 1} AS s, 1::DECIMAL(12, 2) AS d",
    "PRAGMA show_tables",                          # cannot be a subquery
    "DESCRIBE wh.sales.orders",
    "SHOW ALL TABLES",
    "FROM wh.sales.orders SELECT count(*)",
    "SELECT id FROM wh.sales.orders ORDER BY id DESC LIMIT 3",
])
def test_fetch_bound_once_answers_what_the_two_bind_path_answers(wh, sql):
    con = cc.open_duckdb(wh.cat)
    try:
        con.execute("BEGIN TRANSACTION")
        got = duck.fetch(con, sql, 4)
        con.execute("ROLLBACK")          # the transaction is still the caller's to end
        rel = con.sql(sql)
        want = duck.fetch_rel(con, rel, 4)
        assert got == want
    finally:
        con.close()


@pytest.mark.parametrize("sql", ["SELECT nope FROM wh.sales.orders", "SELECT * FROM wh.sales.nope",
                                 "SELECT CAST('x' AS INTEGER)"])
def test_fetch_bound_once_raises_the_bare_statements_error(wh, sql):
    con = cc.open_duckdb(wh.cat)
    try:
        with pytest.raises(duckdb.Error) as want:  # the two-bind path, as before
            duck.fetch_rel(con, con.sql(sql), 10)
        con.execute("BEGIN TRANSACTION")
        with pytest.raises(duckdb.Error) as got:
            duck.fetch(con, sql, 10)
        assert type(got.value) is type(want.value) and str(got.value) == str(want.value)
    finally:
        con.close()
