"""`import_parquet` and `semcat import parquet` on real Parquet trees written with pyarrow, read back
through DuckDB (`cc.run_sql`) at the vid each import committed."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import catalog_core as cc
from catalog_core.errors import InvalidValueError, PreconditionError
from catalog_core.parquet_import import import_parquet

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _orders(n: int, start: int, amount: float = 1.5) -> pa.Table:
    return pa.table({"order_id": pa.array(range(start, start + n), pa.int64()),
                     "amount": pa.array([amount * i for i in range(n)], pa.float64()),
                     "note": pa.array([None if i % 3 == 0 else f"n{i}" for i in range(n)], pa.string())})


def _write(path: str, table: pa.Table) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(table, path)
    return path


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "raw"
    _write(str(root / "orders" / "d=2025-03-01" / "region=north" / "part-0.parquet"), _orders(10, 0))
    _write(str(root / "orders" / "d=2025-03-01" / "region=south%20east" / "part-0.parquet"), _orders(5, 100))
    _write(str(root / "orders" / "d=2025-03-02" / "region=north" / "part-0.parquet"), _orders(7, 200))
    (root / "orders" / "_SUCCESS").write_text("")
    (root / "orders" / "d=2025-03-01" / ".part-0.parquet.crc").write_text("x")
    _write(str(root / "customers" / "c.parquet"),
           pa.table({"customer_id": pa.array([1, 2, 3], pa.int32()), "since": pa.array(
               [dt.date(2024, 1, 1), dt.date(2024, 5, 1), None], pa.date32())}))
    return root


def _count(cat, sql: str) -> list[tuple]:
    return [tuple(r) for r in cc.run_sql(cat, sql).rows]


def test_a_tree_becomes_tables_with_partitions_files_and_footer_stats(tmp_path, tree):
    cat = cc.Catalog.open(str(tmp_path / "data"))
    res = import_parquet(cat, str(tree), into="lake.raw")
    assert [(r.table, r.files_added, r.files_removed) for r in res] == [
        ("lake.raw.customers", 1, 0), ("lake.raw.orders", 3, 0)]
    orders = cat.get("/lake/raw/orders").value
    assert orders["partition_by"] == ["d", "region"]
    assert [(c["name"], c["type"]) for c in orders["schema"]["columns"]] == [
        ("order_id", "bigint"), ("amount", "double"), ("note", "string"), ("d", "date"), ("region", "string")]
    assert orders["stats"]["row_count"] == 22 and orders["stats"]["file_count"] == 3
    assert orders["stats"]["columns"]["order_id"]["min"] == 0 and orders["stats"]["columns"]["order_id"]["max"] == 206
    assert orders["stats"]["columns"]["note"]["null_count"] == 4 + 2 + 3
    part = cat.get("/lake/raw/orders/d=2025-03-01/region=south east")
    assert part is not None and part.value["stats"]["row_count"] == 5  # URL-unescaped as Hive writes it
    assert _count(cat, "SELECT count(*), sum(order_id) FROM lake.raw.orders") == [(22, sum(range(10)) + sum(
        range(100, 105)) + sum(range(200, 207)))]
    assert _count(cat, "SELECT region, count(*) FROM lake.raw.orders WHERE d = DATE '2025-03-01' GROUP BY 1 "
                       "ORDER BY 1") == [("north", 10), ("south east", 5)]
    cust = cat.get("/lake/raw/customers").value
    assert [(c["name"], c["type"]) for c in cust["schema"]["columns"]] == [("customer_id", "int"), ("since", "date")]
    assert cust["stats"]["columns"]["since"] == {"min": "2024-01-01", "max": "2024-05-01", "null_count": 1}
    assert len(cat.plan_files("lake.raw.orders", where='region = "north"')) == 2
    cat.close()


def test_a_rerun_writes_nothing_and_a_changed_tree_is_one_commit_per_table(tmp_path, tree):
    cat = cc.Catalog.open(str(tmp_path / "data"))
    import_parquet(cat, str(tree), into="lake.raw")
    vid = cat.latest_vid
    assert all(r.up_to_date for r in import_parquet(cat, str(tree), into="lake.raw"))
    assert cat.latest_vid == vid
    orders = tree / "orders"
    os.remove(orders / "d=2025-03-02" / "region=north" / "part-0.parquet")            # removed
    _write(str(orders / "d=2025-03-03" / "region=north" / "part-0.parquet"), _orders(4, 300))   # added
    _write(str(orders / "d=2025-03-01" / "region=north" / "part-0.parquet"), _orders(3, 400))   # rewritten in place
    [cust, res] = import_parquet(cat, str(tree), into="lake.raw")
    assert cust.up_to_date and (res.files_added, res.files_removed) == (2, 2)
    assert cat.latest_vid == vid + 1
    st = cat.get("/lake/raw/orders").value["stats"]
    assert (st["row_count"], st["file_count"], st["columns"]["order_id"]["min"]) == (3 + 5 + 4, 3, 100)
    assert cat.get("/lake/raw/orders/d=2025-03-02/region=north").value["stats"]["row_count"] == 0
    assert _count(cat, "SELECT count(*), min(order_id) FROM lake.raw.orders") == [(12, 100)]
    assert len(cat.plan_files("lake.raw.orders", vid=vid)) == 3  # the earlier snapshot keeps its file list
    cat.close()


def test_a_new_column_is_added_and_old_files_read_it_as_null(tmp_path, tree):
    cat = cc.Catalog.open(str(tmp_path / "data"))
    import_parquet(cat, str(tree / "customers"), into="lake.raw.customers")
    _write(str(tree / "customers" / "d.parquet"), pa.table({"customer_id": pa.array([4], pa.int32()),
                                                            "since": pa.array([None], pa.date32()),
                                                            "tier": pa.array(["gold"], pa.string())}))
    [res] = import_parquet(cat, str(tree / "customers"), into="lake.raw.customers")
    assert res.columns_added == ["tier"]
    schema = cat.get("/lake/raw/customers").value["schema"]
    assert [(c["id"], c["name"]) for c in schema["columns"]] == [(1, "customer_id"), (2, "since"), (3, "tier")]
    assert _count(cat, "SELECT customer_id, tier FROM lake.raw.customers ORDER BY 1") == [
        (1, None), (2, None), (3, None), (4, "gold")]
    cat.close()


def test_bad_trees_are_refused_with_the_path_and_nothing_is_written(tmp_path, tree):
    cat = cc.Catalog.open(str(tmp_path / "data"))
    import_parquet(cat, str(tree), into="lake.raw")
    vid = cat.latest_vid
    bad = _write(str(tree / "orders" / "d=2025-03-09" / "region=x" / "p.parquet"),
                 pa.table({"order_id": pa.array(["not a number"], pa.string())}))
    with pytest.raises(InvalidValueError, match=r"p\.parquet: column 'order_id' is string here but bigint"):
        import_parquet(cat, str(tree / "orders"), into="lake.raw.orders")
    os.remove(bad)
    (tree / "orders" / "README.txt").write_text("hello")
    with pytest.raises(InvalidValueError, match=r"README\.txt: not a \.parquet file"):
        import_parquet(cat, str(tree / "orders"), into="lake.raw.orders")
    os.remove(tree / "orders" / "README.txt")
    os.makedirs(tree / "orders" / "misc")
    _write(str(tree / "orders" / "misc" / "x.parquet"), _orders(1, 0))
    with pytest.raises(InvalidValueError, match="directory 'misc' is not a partition 'column=value'"):
        import_parquet(cat, str(tree / "orders"), into="lake.raw.orders")
    assert cat.latest_vid == vid
    with pytest.raises(PreconditionError, match="was not imported from"):  # another root owns the table
        import_parquet(cat, str(tree / "customers"), into="lake.raw.orders")
    with pytest.raises(InvalidValueError, match="into must be 'catalog.namespace'"):
        import_parquet(cat, str(tree), into="lake")
    cat.close()


def test_the_command_imports_then_reports_up_to_date(tmp_path, tree):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "mcp_server.cli", "import", "parquet", str(tree), "--data", str(tmp_path / "d"),
           "--into", "lake.raw", "--create"]
    first = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    assert "lake.raw.orders: +3 -0 files" in first.stdout and "lake.raw.customers: +1 -0 files" in first.stdout
    again = subprocess.run(cmd[:-1], env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert "lake.raw.orders is up to date" in again.stdout
    missing = subprocess.run(cmd[:5] + [str(tmp_path / "nope")] + cmd[6:], env=env, capture_output=True, text=True,
                             timeout=120)
    assert missing.returncode != 0 and "is not a directory" in missing.stderr


def _nested(ids: list[int]) -> pa.Table:
    addr = pa.struct([("city", pa.string()), ("zip", pa.string())])
    return pa.table({"id": pa.array(ids, pa.int64()),
                     "addr": pa.array([{"city": f"c{i}", "zip": str(i)} for i in ids], addr),
                     "tags": pa.array([[f"t{i}"] for i in ids], pa.list_(pa.string())),
                     "attrs": pa.array([[("k", i)] for i in ids], pa.map_(pa.string(), pa.int64())),
                     "at": pa.array([dt.datetime(2025, 3, 1, 12, i) for i in ids], pa.timestamp("us")),
                     "at_utc": pa.array([dt.datetime(2025, 3, 1, 12, i) for i in ids], pa.timestamp("us", tz="UTC"))})


def test_nested_and_timestamp_columns_get_the_catalogs_type_spellings(tmp_path):
    """struct / list / map columns are typed as struct<a:T,..>, array<T>, map<K,V> (what the SQL
    layer and the Iceberg export parse), a naive timestamp is wall time (timestamp_ntz) and a
    zoned one an instant (timestamptz); the rows read back through DuckDB."""
    root = tmp_path / "raw"
    _write(str(root / "part-0.parquet"), _nested([1, 2]))
    cat = cc.Catalog.open(str(tmp_path / "data"))
    import_parquet(cat, str(root), into="lake.raw.n")
    cols = {c["name"]: c["type"] for c in cat.get("/lake/raw/n").value["schema"]["columns"]}
    assert cols == {"id": "bigint", "addr": "struct<city:string,zip:string>", "tags": "array<string>",
                    "attrs": "map<string,bigint>", "at": "timestamp_ntz", "at_utc": "timestamptz"}
    assert _count(cat, "select id, addr.city, tags[1], attrs['k'] from lake.raw.n order by id") == [
        (1, "c1", "t1", 1), (2, "c2", "t2", 2)]


def test_a_table_imported_with_the_old_spellings_is_upgraded_not_refused(tmp_path):
    """Imports before nested types were spelled took pyarrow's text (`list<element: string>`, `map<string, int64 ('attrs')>`) and
    `timestamp` for a naive timestamp; a re-run that finds new files upgrades those columns to the
    current spelling (same data) instead of refusing the files as another type."""
    root = tmp_path / "raw"
    _write(str(root / "part-0.parquet"), _nested([1]))
    cat = cc.Catalog.open(str(tmp_path / "data"))
    import_parquet(cat, str(root), into="lake.raw.n")
    schema = cat.get("/lake/raw/n").value["schema"]
    legacy = {"addr": "struct<city: string, zip: string>", "tags": "list<element: string>",
              "attrs": "map<string, int64 ('attrs')>", "at": "timestamp"}
    old = {**schema, "columns": [{**c, "type": legacy.get(c["name"], c["type"])} for c in schema["columns"]]}
    with cat.transaction() as t:
        t.merge("/lake/raw/n", {"schema": {"op": "set", "val": old}})
    _write(str(root / "part-1.parquet"), _nested([2]))
    res = import_parquet(cat, str(root), into="lake.raw.n")
    assert res[0].files_added == 1
    cols = {c["name"]: c["type"] for c in cat.get("/lake/raw/n").value["schema"]["columns"]}
    assert cols["tags"] == "array<string>" and cols["at"] == "timestamp_ntz" and cols["attrs"] == "map<string,bigint>"
    assert _count(cat, "select count(*), max(tags[1]) from lake.raw.n") == [(2, "t2")]
