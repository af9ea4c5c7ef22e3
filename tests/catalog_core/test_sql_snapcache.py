"""The snapshot cache of agent SQL (`catalog_core.sql.snapcache`): decoded tables held by a SQL
worker by their exact file set. What it must never do: serve another file set than the
statement's snapshot's (a later vid with one more file, a removed file, a file rewritten in
place, two snapshots interleaved), hold more than its budget, evict other than least recently
used first, or change what the agent sees of DuckDB's catalog. Real worker processes, DuckDB and
Parquet files throughout; no timings."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import catalog_core as cc
from catalog_core.sql import reader, snapcache, worker

COUNT = "SELECT count(*) FROM wh.sales.orders"
SUM = "SELECT sum(id) FROM wh.sales.orders"


@pytest.fixture(autouse=True)
def budget():
    before = snapcache.budget()
    cc.set_sql_cache_budget(64 << 20)
    yield
    cc.set_sql_cache_budget(before)


def run(cat, sql=COUNT, **kw):
    rows = cc.run_sql(cat, sql, **kw).rows
    snap = worker.last_snapshot()
    if snap is not None:
        assert snap["held"] <= snap["limit"]  # the budget holds after every statement
    return rows


def hit() -> bool:
    snap = worker.last_snapshot()
    return bool(snap and snap["hit"])


def digest(cat, vid) -> str:
    data: dict = {}
    reader._keyed_views(cat, vid, True, data=data)
    return next(d for parts, d in data.items() if parts[2] == "orders")


def test_a_later_vid_with_one_more_file_and_a_removed_file(wh, pool1):
    assert run(wh.cat, snapshot=wh.v3) == [[9]] and not hit()   # read from the files, then cached
    assert run(wh.cat, snapshot=wh.v3) == [[9]] and hit()
    assert run(wh.cat, snapshot=wh.v4) == [[9]] and hit()       # another vid, the same files: shared
    v5 = wh.write("2001-06-04", "d", [10, 11])
    assert run(wh.cat, snapshot=v5) == [[11]] and not hit()      # one more file: never the cached rows
    assert run(wh.cat, snapshot=v5) == [[11]] and hit()
    v6 = wh.remove("2001-06-01", "a")
    assert run(wh.cat, snapshot=v6) == [[8]] and not hit()       # one file less
    assert run(wh.cat, SUM, snapshot=v6) == [[4 + 5 + 6 + 7 + 8 + 9 + 10 + 11]] and hit()
    assert run(wh.cat, snapshot=wh.v3) == [[9]] and hit()
    assert run(wh.cat, snapshot=v5) == [[11]] and hit()
    held = worker.last_snapshot()["tables"]
    assert {digest(wh.cat, v) for v in (wh.v3, v5, v6)} <= set(held) and len(held) >= 3


def test_a_file_rewritten_in_place_is_read_again(wh, pool1):
    assert run(wh.cat, SUM, snapshot=wh.v3) == [[45]]
    assert run(wh.cat, SUM, snapshot=wh.v3) == [[45]] and hit()
    before = digest(wh.cat, wh.v3)
    pq.write_table(pa.table({"id": pa.array([100, 200, 300], pa.int64()), "price": [1.0, 2.0, 3.0],
                             "note": ["x", "y", "z"]}), wh.paths["a"])
    assert digest(wh.cat, wh.v3) != before                       # same path, same vid: other rows
    assert run(wh.cat, SUM, snapshot=wh.v3) == [[600 + 39]] and not hit()
    assert run(wh.cat, SUM, snapshot=wh.v3) == [[600 + 39]] and hit()


def test_two_snapshots_interleaved(wh, pool1):
    want = {wh.v1: [[6]], wh.v2: [[15]], wh.v3: [[45]]}
    seen = []
    for vid in [wh.v1, wh.v2, wh.v1, wh.v2, wh.v3, wh.v1, wh.v3, wh.v2]:
        assert run(wh.cat, SUM, snapshot=vid) == want[vid]
        seen.append(hit())
    assert seen == [False, False, True, True, False, True, True, True]


def test_budget_held_and_least_recently_used_out_first(wh, pool1):
    sizes = {}
    for i, vid in enumerate((wh.v1, wh.v2, wh.v3)):
        cc.set_sql_cache_budget((64 << 20) + 1 + i)   # another budget: a new store, holding this table alone
        run(wh.cat, snapshot=vid)
        run(wh.cat, snapshot=vid)
        assert hit()
        sizes[vid] = worker.last_snapshot()["held"]
    assert 0 < sizes[wh.v1] < sizes[wh.v2] < sizes[wh.v3]
    d1, d2, d3 = (digest(wh.cat, v) for v in (wh.v1, wh.v2, wh.v3))
    cc.set_sql_cache_budget(sizes[wh.v1] + sizes[wh.v3])   # room for v1 and v2, or v1 and v3, never all three
    for vid in (wh.v1, wh.v1, wh.v2, wh.v2):
        run(wh.cat, snapshot=vid)
    assert hit() and worker.last_snapshot()["tables"] == [d1, d2]
    assert run(wh.cat, snapshot=wh.v1) == [[3]] and hit()         # v1 used last: v2 is the oldest now
    assert worker.last_snapshot()["tables"] == [d2, d1]
    assert run(wh.cat, snapshot=wh.v3) == [[9]] and not hit()     # caching v3 evicts v2, not v1
    assert run(wh.cat, snapshot=wh.v3) == [[9]] and hit()
    assert worker.last_snapshot()["tables"] == [d1, d3]
    assert worker.last_snapshot()["held"] == sizes[wh.v1] + sizes[wh.v3]
    assert run(wh.cat, snapshot=wh.v2) == [[5]] and not hit()     # evicted: read from its files again ...
    assert run(wh.cat, snapshot=wh.v2) == [[5]] and hit()
    # ... and cached again: v2 and v3 together are over the budget, so v1 (oldest), then v3 went
    assert worker.last_snapshot()["tables"] == [d2] and worker.last_snapshot()["held"] == sizes[wh.v2]
    assert run(wh.cat, snapshot=wh.v1) == [[3]] and not hit()


def test_a_table_larger_than_the_budget_is_never_cached(wh, pool1):
    cc.set_sql_cache_budget(16)
    for _ in range(3):
        assert run(wh.cat, snapshot=wh.v3) == [[9]] and not hit()
    assert worker.last_snapshot()["held"] == 0


def test_introspection_is_unchanged_and_cached_tables_are_not_readable(wh, pool1):
    probes = ["SELECT table_catalog, table_schema, table_name, table_type FROM information_schema.tables "
              "ORDER BY ALL",
              "SELECT database_name FROM duckdb_databases() WHERE NOT internal ORDER BY 1",
              "SELECT database_name, schema_name, table_name FROM duckdb_tables() ORDER BY ALL",
              # (the views' SQL itself is refused: it names the files, tests/security/test_views.py)
              "SELECT table_name, column_name, data_type FROM information_schema.columns "
              "WHERE table_catalog = 'wh' ORDER BY ALL"]
    cc.set_sql_cache_budget(0)
    plain = [run(wh.cat, p, snapshot=wh.v3) for p in probes]
    cc.set_sql_cache_budget(64 << 20)
    for vid in (wh.v1, wh.v1, wh.v3, wh.v3):
        run(wh.cat, snapshot=vid)
    assert hit()
    assert [run(wh.cat, p, snapshot=wh.v3) for p in probes] == plain
    assert not any("semcat" in repr(rows) for rows in plain)
    other = digest(wh.cat, wh.v1)   # held by the worker, but another snapshot's rows
    for sql in (f'SELECT count(*) FROM {snapcache.PREFIX}.main."t_{other}"',
                f'SELECT count(*) FROM "t_{other}"', f'SELECT count(*) FROM main."t_{other}"'):
        with pytest.raises(cc.CatalogError) as err:
            run(wh.cat, sql, snapshot=wh.v3)
        assert "does not exist" in err.value.message
    with pytest.raises(cc.CatalogError) as err:    # a misspelt name: the hints name no cached table
        run(wh.cat, "SELECT count(*) FROM wh.sales.ordrs", snapshot=wh.v3)
    assert "t_" + other not in err.value.message and snapcache.PREFIX not in err.value.message
    assert run(wh.cat, snapshot=wh.v3) == [[9]] and hit()


def test_warm_caches_a_table_before_its_first_statement(wh, pool1):
    assert reader.warm(wh.cat, ["wh.sales.orders"], snapshot=wh.v3, wait=True)
    assert run(wh.cat, SUM, snapshot=wh.v3) == [[45]] and hit()
    cc.set_sql_cache_budget(0)
    assert not reader.warm(wh.cat, ["wh.sales.orders"], snapshot=wh.v3, wait=True)   # off: nothing to do


def test_budget_is_validated():
    with pytest.raises(cc.InvalidValueError):
        cc.set_sql_cache_budget(-1)
    assert snapcache.parse_bytes("512MiB") == 512 << 20 and snapcache.parse_bytes("2G") == 2 << 30
    with pytest.raises(ValueError, match="SEMCAT_SQL_CACHE_BYTES must be a number of bytes"):
        snapcache.parse_bytes("lots")


def test_materialized_on_second_use_never_in_the_way_of_the_first(wh, pool1):
    """The first statement on a table runs on its files and nothing is copied after it, so the
    next statement (here on another table, as a tool's warnings read the load log) does not wait
    for a copy; the second statement on the table copies it in and reads memory."""
    d_orders = digest(wh.cat, wh.v4)
    assert run(wh.cat, SUM, snapshot=wh.v4) == [[45]] and not hit()
    assert run(wh.cat, "SELECT count(*) FROM wh.crm.customers", snapshot=wh.v4) == [[2]] and not hit()
    assert d_orders not in worker.last_snapshot()["tables"]
    assert run(wh.cat, SUM, snapshot=wh.v4) == [[45]] and hit()
    assert d_orders in worker.last_snapshot()["tables"]


def test_a_file_rewritten_before_the_second_use_is_not_copied_as_the_old_rows(wh, pool1):
    old = digest(wh.cat, wh.v3)
    assert run(wh.cat, SUM, snapshot=wh.v3) == [[45]] and not hit()
    pq.write_table(pa.table({"id": pa.array([100, 200, 300], pa.int64()), "price": [1.0, 2.0, 3.0],
                             "note": ["x", "y", "z"]}), wh.paths["a"])
    assert run(wh.cat, SUM, snapshot=wh.v3) == [[600 + 39]] and not hit()
    assert run(wh.cat, SUM, snapshot=wh.v3) == [[600 + 39]] and hit()
    held = worker.last_snapshot()["tables"]
    assert digest(wh.cat, wh.v3) in held and old not in held


def test_no_cache_round_trip_before_any_worker_read_the_tables(wh, pool1):
    """A statement on tables no live worker has read goes straight to the files (no probe of a
    worker's cache first); once a worker read them, it may serve them."""
    worker.stop_all()
    d = digest(wh.cat, wh.v3)
    assert not worker.may_serve({d})
    assert run(wh.cat, SUM, snapshot=wh.v3) == [[45]] and not hit()
    assert worker.may_serve({d}) and not worker.may_serve({d, digest(wh.cat, wh.v1)})
    assert run(wh.cat, SUM, snapshot=wh.v3) == [[45]] and hit()
    worker.stop_all()
    assert not worker.may_serve({d})   # its workers are gone


def test_a_statement_of_other_limits_leaves_the_cache_to_those_of_its_own(wh, pool1):
    """A worker's cache serves the limits it was created with. A statement of other limits (the
    eval's scorer runs at 30 s beside the MCP tools' 10 s) runs on its files and leaves the cache
    as it is: it used to close it, and the worker, its memory still mapped, then retired."""
    assert run(wh.cat, SUM, snapshot=wh.v3) == [[45]] and not hit()
    assert run(wh.cat, SUM, snapshot=wh.v3) == [[45]] and hit()
    pid = worker.last_worker()
    assert run(wh.cat, SUM, snapshot=wh.v3, timeout_s=30) == [[45]]
    assert worker.last_snapshot() is None and worker.last_worker() == pid   # on the files, no cache
    assert run(wh.cat, SUM, snapshot=wh.v3) == [[45]] and hit() and worker.last_worker() == pid
    # what the caller knows: this worker's cache may serve 10 s statements, and no round trip to it
    # for 30 s ones (`reader._from_cache` asks `may_serve` first)
    d = digest(wh.cat, wh.v3)
    ten, thirty = (10.0, 1 << 30, snapcache.budget()), (30.0, 1 << 30, snapcache.budget())
    assert worker.may_serve({d}, ten) and not worker.may_serve({d}, thirty)


def test_the_rollback_undoes_what_the_shortened_check_after_a_cached_statement_skips():
    """After a statement on the snapshot database whose transaction was rolled back, the worker
    compares only the attached databases (`worker._databases`), not the whole fingerprint: what
    that rests on is that the rollback undoes schemas, views, tables and sequences, and that a
    change of the databases is still seen."""
    store = snapcache.Store(10.0, 256 << 20, 64 << 20)
    try:
        full, dbs = worker._fingerprint(store.db), worker._databases(store.db)
        cur = store.db.cursor()
        cur.execute("BEGIN TRANSACTION")
        for ddl in ("CREATE SCHEMA s2", "CREATE TABLE t1 (x INTEGER)", "CREATE VIEW v1 AS SELECT 1 AS x",
                    "CREATE SEQUENCE q1", f'DROP TABLE IF EXISTS {snapcache.PREFIX}.main."t_nothing"'):
            cur.execute(ddl)
        seen = cur.execute("SELECT (SELECT count(*) FROM duckdb_views() WHERE NOT internal), "
                           "(SELECT count(*) FROM duckdb_tables()), (SELECT count(*) FROM duckdb_sequences())").fetchone()
        assert seen == (1, 1, 1)  # inside the transaction, the statement's objects exist
        cur.execute("ROLLBACK")
        cur.close()
        assert worker._fingerprint(store.db) == full and worker._databases(store.db) == dbs
    finally:
        store.close()
    import duckdb

    db = duckdb.connect()
    before = worker._databases(db)
    db.execute("ATTACH ':memory:' AS other")
    assert worker._databases(db) != before
    db.close()


def test_prepare_copies_the_snapshot_in_so_a_first_statement_reads_memory(wh):
    """`reader.prepare` (what a server starts with) copies the snapshot's tables into the
    preparing worker's cache before it answers, and the first statement on any of them is sent
    to that worker (not to the pool's other one) and reads memory, the same rows as the files."""
    worker.stop_all()
    assert worker.pool_size() == 2
    assert reader.prepare(wh.cat, snapshot=wh.v4, wait=True) is True
    worker.prestart()                                    # the pool refilled: another worker is idle too
    assert worker.may_serve({digest(wh.cat, wh.v4)})
    assert run(wh.cat, SUM, snapshot=wh.v4) == [[45]] and hit()
    assert run(wh.cat, "SELECT count(*) FROM wh.crm.customers", snapshot=wh.v4) == [[2]] and hit()
    assert digest(wh.cat, wh.v4) in worker.last_snapshot()["tables"]


def test_a_file_rewritten_after_prepare_is_read_from_the_files(wh, pool1):
    worker.stop_all()
    assert reader.prepare(wh.cat, snapshot=wh.v3, wait=True) is True
    pq.write_table(pa.table({"id": pa.array([100, 200, 300], pa.int64()), "price": [1.0, 2.0, 3.0],
                             "note": ["x", "y", "z"]}), wh.paths["a"])
    assert run(wh.cat, SUM, snapshot=wh.v3) == [[600 + 39]] and not hit()


def test_prepare_copies_nothing_past_its_cap(wh, pool1, monkeypatch):
    """Past `PRELOAD_MAX` nothing is copied, and the caller then knows the worker holds none of
    the tables (the answer lists what it holds): the first statement goes straight to the files."""
    monkeypatch.setattr(snapcache, "PRELOAD_MAX", 1)
    worker.stop_all()
    assert reader.prepare(wh.cat, snapshot=wh.v3, wait=True) is True
    assert not worker.may_serve({digest(wh.cat, wh.v3)})
    assert run(wh.cat, SUM, snapshot=wh.v3) == [[45]] and not hit()


def test_preload_copies_a_table_only_under_the_digest_of_its_files_now(wh, monkeypatch):
    """The worker recomputes each table's digest from its files' lstat before it copies the table
    in unasked: rows are never held under a digest of other files (here: a digest that is not the
    files' now, as when a file was rewritten after the caller read the catalog)."""
    from catalog_core.sql import duck

    monkeypatch.setattr(worker, "_limit_memory", lambda *a, **k: None)  # (this process's own RLIMIT_AS)
    data: dict = {}
    views, _ = reader._keyed_views(wh.cat, wh.v3, True, data=data)
    for cache, want in (({p: "0" * 32 for p in data}, set()), (data, set(data.values()))):
        db = duck.connect(True)
        store = snapcache.Store(10.0, 256 << 20, 64 << 20)
        try:
            duck.install_views(db, views, True)
            job = worker.Job(text="", views=views, limit=1, timeout_s=10.0, memory_limit=256 << 20, key="k",
                             cache=cache, budget=64 << 20, preload=64 << 20)
            got = worker._preload(db, job, store)
            assert set(got["tables"]) == set(store.tables) == want
        finally:
            store.close()
            db.close()
