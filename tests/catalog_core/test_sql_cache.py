"""The SQL path's caches: table specs and view bodies per (catalog object, vid, table)
(`catalog_core.sql.cache`), the worker's database with its views kept for the next job with the
same key, the directory memo of `tables._local`, and view bodies without union_by_name for
files of one schema. What they must not change: each snapshot reads exactly its files, a file
changed on disk is seen, the sandbox refuses files outside the snapshot after a cache hit, and a
statement leaves nothing behind for the next one. Real worker processes and DuckDB throughout."""

from __future__ import annotations

import os

import cachetools
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import catalog_core as cc
from catalog_core.errors import SqlRefusedError
from catalog_core.sql import cache, reader, snapcache, tables, views, worker
from tests.helpers import build_lake

COUNT = "SELECT count(*) FROM wh.sales.orders"


@pytest.fixture(autouse=True)
def _no_snapshot_cache():
    """These tests pin the file-view path and its worker database (test_sql_snapcache.py covers
    the snapshot cache on top of it)."""
    before = snapcache.budget()
    cc.set_sql_cache_budget(0)
    yield
    cc.set_sql_cache_budget(before)




def run(cat, sql=COUNT, **kw):
    return cc.run_sql(cat, sql, **kw).rows


def test_a_new_commit_is_seen_and_old_snapshots_keep_their_files(wh, pool1):
    assert run(wh.cat, snapshot=wh.v3) == [[9]]
    assert run(wh.cat, snapshot=wh.v3) == [[9]] and worker.last_cached()
    v5 = wh.write("2001-06-04", "d", [10, 11])
    assert run(wh.cat) == [[11]]              # the new vid: the new file
    assert not worker.last_cached()           # another view set, never the cached database
    assert run(wh.cat, snapshot=wh.v1) == [[3]]
    assert run(wh.cat, snapshot=wh.v3) == [[9]]
    v6 = wh.remove("2001-06-01", "a")
    assert run(wh.cat, snapshot=v6) == [[8]]
    assert run(wh.cat, snapshot=v5) == [[11]]
    ids = run(wh.cat, "SELECT list(id ORDER BY id) FROM wh.sales.orders", snapshot=v6)
    assert ids == [[[4, 5, 6, 7, 8, 9, 10, 11]]]


def test_a_cached_database_never_serves_another_snapshot(wh, pool1):
    seen = []
    for vid, want in [(wh.v1, 3), (wh.v1, 3), (wh.v2, 5), (wh.v2, 5), (wh.v1, 3), (wh.v3, 9), (wh.v1, 3)]:
        assert run(wh.cat, snapshot=vid) == [[want]]
        seen.append(worker.last_cached())
    # the repeats hit the worker's database; a snapshot change always builds a new one
    assert seen == [False, True, False, True, False, False, False]


def test_the_cache_is_per_catalog_object(tmp_path, pool1):
    """Two catalogs whose vids coincide never share entries: each sees its own files."""
    cats = [cc.Catalog.open(str(tmp_path / n)) for n in ("one", "two")]
    try:
        one, two = build_lake(cats[0]), build_lake(cats[1])
        two.write("2001-06-05", "e", [20, 21, 22])
        one.write("2001-06-05", "e", [20])
        assert cats[0].latest_vid == cats[1].latest_vid
        assert run(cats[0]) == [[10]] and run(cats[1]) == [[12]] and run(cats[0]) == [[10]]
    finally:
        for c in cats:
            c.close()


def test_a_file_changed_on_disk_is_seen_at_the_same_vid(wh, pool1):
    """A vid pins the file leaves, not the bytes: a rewritten file (here with one more column)
    or a removed one is noticed (lstat), and the entry and the worker's database are rebuilt."""
    assert run(wh.cat, "SELECT sum(id) FROM wh.sales.orders") == [[45]]
    assert run(wh.cat, "SELECT sum(id) FROM wh.sales.orders") == [[45]] and worker.last_cached()
    path = wh.paths["a"]
    pq.write_table(pa.table({"id": pa.array([100, 200, 300], pa.int64()), "price": [1.0, 2.0, 3.0],
                             "note": ["x", "y", "z"], "extra": [1, 2, 3]}), path)
    assert run(wh.cat, "SELECT sum(id) FROM wh.sales.orders") == [[600 + 39]]
    assert not worker.last_cached()
    os.remove(wh.paths["b"])
    with pytest.raises(cc.CatalogError) as err:
        run(wh.cat)
    assert "wh.sales.orders" in err.value.message


def test_a_file_replaced_by_a_symlink_is_refused_after_a_cache_hit(wh, tmp_path, pool1):
    outside = tmp_path / "outside.parquet"
    pq.write_table(pa.table({"id": pa.array([666], pa.int64()), "price": [1.0], "note": ["secret"]}), str(outside))
    assert run(wh.cat) == [[9]]
    assert run(wh.cat) == [[9]] and worker.last_cached()
    os.remove(wh.paths["c"])
    os.symlink(outside, wh.paths["c"])
    with pytest.raises(SqlRefusedError) as err:
        run(wh.cat, "SELECT * FROM wh.sales.orders")
    assert err.value.rule == "file_access"


def test_the_sandbox_refuses_files_outside_the_snapshot_on_a_cached_database(wh, pool1):
    """The wall itself (DuckDB's allowed_paths), below the statement check: jobs sent straight to
    the worker with the key of a cached database still cannot read the files of a later
    snapshot, an uncommitted file or any other file."""
    hidden = os.path.join(wh.loc, "d=2001-06-09", "uncommitted.parquet")
    os.makedirs(os.path.dirname(hidden))
    pq.write_table(pa.table({"id": [999]}), hidden)
    v, digests = reader._keyed_views(wh.cat, wh.v1, True, names={"orders"})
    assert digests is not None

    def job(text):
        return worker.Job(text=text, views=v, limit=10, timeout_s=10, memory_limit=1 << 30, key="k-" + digests[0])

    assert worker.run(job(COUNT))["ok"]["rows"] == [[3]]
    assert worker.run(job(COUNT))["ok"]["rows"] == [[3]] and worker.last_cached()
    for path in (wh.paths["b"], hidden, os.path.join(wh.cat.data_dir, "catalog", "CURRENT")):
        for text in (f"SELECT * FROM read_parquet('{path}')", f"SELECT * FROM '{path}'",
                     f"SELECT * FROM read_text('{path}')"):
            answer = worker.run(job(text))
            assert "ok" not in answer, text
            # `FROM 'CURRENT'` (no extension) is not a file scan at all: no such table
            want = "CatalogException" if "FROM '" in text and not path.endswith(".parquet") else "PermissionException"
            assert answer["error"]["type"] == want, (text, answer)
            assert worker.last_cached()
    assert worker.run(job(COUNT))["ok"]["rows"] == [[3]] and worker.last_cached()


@pytest.mark.parametrize("setup, probe, want", [
    ("CREATE TEMP TABLE leftover AS SELECT 42 AS x", "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'leftover'",
     [[0]]),
    ("CREATE TEMP VIEW leftover AS SELECT 42 AS x", "SELECT count(*) FROM duckdb_views() WHERE view_name = 'leftover'",
     [[0]]),
    ("CREATE OR REPLACE VIEW wh.sales.orders AS SELECT 42 AS n", "SELECT count(*) FROM wh.sales.orders", [[3]]),
    ("CREATE TABLE wh.sales.leftover AS SELECT 42 AS x",
     "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'leftover'", [[0]]),
    ("CREATE MACRO wh.sales.leftover() AS 42",
     "SELECT count(*) FROM duckdb_functions() WHERE function_name = 'leftover'", [[0]]),
    ("DROP VIEW wh.sales.orders", "SELECT count(*) FROM wh.sales.orders", [[3]]),
    ("SET VARIABLE leftover = 42", "SELECT getvariable('leftover')", [[None]]),
    ("PREPARE leftover AS SELECT 42", "SELECT count(*) FROM duckdb_prepared_statements()", [[0]]),
    # after setseed(0.5) a connection's first random() is 0.8511131886287325
    ("SELECT setseed(0.5)", "SELECT random() = 0.8511131886287325", [[False]]),
    ("SET TimeZone = 'America/New_York'", "SELECT current_setting('TimeZone')", [["UTC"]]),
    ("ATTACH ':memory:' AS leftover", "SELECT count(*) FROM duckdb_databases() WHERE database_name = 'leftover'",
     [[0]]),
])
def test_a_statement_leaves_nothing_for_the_next_job(wh, pool1, setup, probe, want):
    """run_sql refuses each of these statements; sent straight to the worker (as if the check
    were bypassed) they either fail there or their effect ends with the job: the next job with
    the same key, on the same cached database, does not see it."""
    if "setseed" not in setup:  # a SELECT: allowed, its seed is its connection's
        with pytest.raises(cc.CatalogError):
            cc.run_sql(wh.cat, setup)
    v, digests = reader._keyed_views(wh.cat, wh.v1, True, names={"orders"})
    assert digests is not None

    def job(text):
        return worker.Job(text=text, views=v, limit=10, timeout_s=10, memory_limit=1 << 30, key="s-" + digests[0])

    assert worker.run(job(COUNT))["ok"]["rows"] == [[3]]
    worker.run(job(setup))
    got = worker.run(job(probe))
    assert got.get("ok", {}).get("rows") == want, got
    assert worker.run(job(COUNT))["ok"]["rows"] == [[3]]


def test_spec_cache_entries_and_bounds(wh):
    c = cache.catalog_cache(wh.cat)
    assert c is not None
    reader._views(wh.cat, wh.v3, True)
    keys = set(c.entries)
    first = {k: c.entries[k] for k in keys}
    reader._views(wh.cat, wh.v3, True)
    assert all(c.entries[k] is first[k] for k in keys)  # reused, not rebuilt
    # sandboxed and unsandboxed bodies are separate entries
    reader._views(wh.cat, wh.v3, False)
    assert len(c.entries) == 2 * len(keys)
    old = cache.MAX_FILES
    try:
        cache.MAX_FILES = 3
        reader._views(wh.cat, wh.v1, True)
        assert c.files <= 3 or len(c.entries) == 1
    finally:
        cache.MAX_FILES = old


def test_realpath_memo_matches_realpath(tmp_path):
    d = str(tmp_path)
    os.makedirs(f"{d}/a/b/c")
    os.makedirs(f"{d}/x/y")
    open(f"{d}/a/b/c/f.parquet", "w").close()
    open(f"{d}/x/y/g", "w").close()
    os.symlink(f"{d}/x", f"{d}/a/lnk")
    os.symlink(f"{d}/x/y/g", f"{d}/a/b/c/s.parquet")
    os.symlink("../../x", f"{d}/a/b/rel")
    paths = [f"{d}/a/b/c/f.parquet", f"{d}/a/lnk/y/g", f"{d}/a/b/c/s.parquet", f"{d}/a/b/rel/y/g",
             f"{d}/a/missing/z/q", f"{d}/a/b/c/../c/f.parquet", f"{d}//a/b/c/f.parquet", f"{d}/a/lnk/../a"]
    memo: dict[str, str] = {}
    for p in paths * 2:
        assert tables._real(p, memo) == os.path.realpath(p), p


def test_one_schema_groups_read_without_union_by_name(wh):
    """Files with the same footer schema share a read_parquet without union_by_name; a file with
    another schema gets its own branch, matched by name, and the rows are the same as before."""
    wh.write("2001-06-04", "d", [10], notes=[None])  # `note` all null: another Arrow type
    spec_obj = [t for t in tables.list_tables(wh.cat, wh.cat.latest_vid)[0] if t.path.endswith("/orders")][0]
    spec = tables.load_table(wh.cat, spec_obj, wh.cat.latest_vid, {})
    body = views.table_sql(spec, trust_all=False)
    assert body is not None and body.count("read_parquet(") == 2
    assert body.count("union_by_name") == 0
    assert run(wh.cat, "SELECT count(*), count(note), sum(id) FROM wh.sales.orders") == [[10, 9, 55]]


def test_the_sandbox_check_memo_is_keyed_by_text_directories_and_memory_limit():
    """`reader._checked` keeps a statement's check, but a check depends on the forbidden
    directories and the memory limit as well as the text: each must still refuse what it refuses
    without the memo, and a caller's copy is its own."""
    big = "SELECT length(repeat('a', 100000000))"  # ~100 MB in one value
    assert reader._checked(big, [], 1 << 30, 10).tables == set()            # passes under 1 GiB
    with pytest.raises(SqlRefusedError, match="memory_limit"):
        reader._checked(big, [], 64 << 20, 10)                              # refused under 64 MiB
    names = "SELECT * FROM '/srv/secret/catalog/x'"
    with pytest.raises(SqlRefusedError):
        reader._checked(names, [], 1 << 30, 10)                             # a file path: refused
    ok = "SELECT 1 FROM wh.sales.orders WHERE note = '/srv/secret/catalog'"
    assert reader._checked(ok, [], 1 << 30, 10).tables == {"orders"}
    with pytest.raises(SqlRefusedError, match="catalog_dir"):
        reader._checked(ok, ["/srv/secret/catalog"], 1 << 30, 10)          # the same text, a forbidden dir
    first = reader._checked(ok, [], 1 << 30, 10)
    first.tables.add("mutated")
    assert reader._checked(ok, [], 1 << 30, 10).tables == {"orders"}
    other = reader._checked("SELECT 1 FROM wh.sales.customers", [], 1 << 30, 10)
    assert other.tables == {"customers"} and other.text == "SELECT 1 FROM wh.sales.customers"


def test_the_sandbox_check_memo_is_bounded(monkeypatch):
    monkeypatch.setattr(reader, "_checks", cachetools.LRUCache(maxsize=3))
    for i in range(6):
        reader._checked(f"SELECT {i}", [], 1 << 30, 10)
    assert len(reader._checks) == 3 and sorted(k[0] for k in reader._checks) == ["SELECT 3", "SELECT 4", "SELECT 5"]
    reader._checked("SELECT 3", [], 1 << 30, 10)  # a hit is a use: SELECT 4 is now the least recent
    reader._checked("SELECT 6", [], 1 << 30, 10)
    assert sorted(k[0] for k in reader._checks) == ["SELECT 3", "SELECT 5", "SELECT 6"]


def test_file_sig_is_each_local_files_lstat_with_none_for_a_missing_one(tmp_path):
    """The signature an entry is checked against on every warm call: (dev, inode, size, mtime,
    mode) of each local file in order, None where a file is missing, remote files skipped; the
    same whether or not a file is missing (the fast path, all present, and the per-file loop)."""
    paths = [str(tmp_path / f"f{i}.parquet") for i in range(3)]
    for i, p in enumerate(paths):
        with open(p, "wb") as f:
            f.write(b"x" * (i + 1))

    def spec(ps):
        return tables.TableSpec("c.n.t", ("c", "n", "t"), None, [],
                                [tables.FileSpec(p, {}, True, True) for p in ps]
                                + [tables.FileSpec("s3://b/remote.parquet", {}, False, False)])

    def want(p):
        st = os.lstat(p)
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode)

    sig = cache.file_sig(spec(paths))
    assert sig == tuple(want(p) for p in paths)
    os.remove(paths[1])
    assert cache.file_sig(spec(paths)) == (sig[0], None, sig[2])
    with open(paths[0], "ab") as f:
        f.write(b"more")
    assert cache.file_sig(spec([paths[0], paths[2]])) == (want(paths[0]), sig[2]) and want(paths[0]) != sig[0]


def test_files_that_hold_their_partition_column_share_one_read_across_partitions(tmp_path, pool1):
    """Files that hold their partition column themselves (as an Iceberg writer writes them) need no
    partition value from the catalog, so the files of every partition share one read_parquet (failed
    before: one UNION ALL branch per partition value; over the 772 daily partitions of a table rewritten
    through Iceberg REST, a three-table join went past run_sql's 1 GiB memory limit, 1 branch before the
    rewrite). The rows and partition values read are the same; a file without the column (Hive style)
    still takes its value from the catalog."""
    from tests.helpers import Lake

    cat = cc.Catalog.open(str(tmp_path / "cat"))
    try:
        lk = Lake(cat)
        for i, day in enumerate(("2001-06-01", "2001-06-02", "2001-06-03", "2001-06-04")):
            lk.write(day, f"f{i}", [10 * i + 1, 10 * i + 2], keep_d=True, rel=f"data/d={day}/f{i}.parquet")
        obj = [t for t in tables.list_tables(cat, cat.latest_vid)[0] if t.path.endswith("/orders")][0]
        body = views.table_sql(tables.load_table(cat, obj, cat.latest_vid, {}), trust_all=False)
        assert body is not None and body.count("read_parquet(") == 1, body
        q = "SELECT strftime(d, '%Y-%m-%d'), list(id ORDER BY id) FROM wh.sales.orders GROUP BY 1 ORDER BY 1"
        want = [["2001-06-01", [1, 2]], ["2001-06-02", [11, 12]], ["2001-06-03", [21, 22]], ["2001-06-04", [31, 32]]]
        assert run(cat, q) == want
        lk.write("2001-06-05", "hive", [41])  # Hive style: d from the catalog, a branch of its own
        assert run(cat, q) == [*want, ["2001-06-05", [41]]]
    finally:
        cat.close()
