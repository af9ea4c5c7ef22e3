"""Relocatable catalogs (issue 47, item 4): a table's location and its files' paths inside the data
directory's warehouse are stored relative to it, so `cp -a` (or `mv`) of a data directory gives a working,
independent catalog: the copy queries its own files (the original removed), and its writes go into its own
warehouse. Catalogs written before (absolute paths) are read as they are and migrated by `semcat relocate`,
which also re-points locations outside the warehouse."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import msgpack
import orjson

import catalog_core as cc
from catalog_core.codec import unpack_leaf
from eval.fixtures import mcplake
from eval.fixtures.lakes import LakeBuilder
from eval.fixtures.mcplake import FCT

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _build(data: str) -> None:
    cat = cc.Catalog.open(data)
    mcplake.build(cat, os.path.join(data, "warehouse", "files"), extra_tables=0)
    cat.close()


def _stored_paths(data: str) -> list[str]:
    """Every location and file path as stored in RocksDB (read with a plain Rdict on a closed catalog)."""
    from rocksdict import AccessType, Options, Rdict

    db = Rdict(os.path.join(data, "catalog", "rocksdb"), Options(raw_mode=True), access_type=AccessType.read_only(),
               column_families={n: Options(raw_mode=True) for n in ("inner", "delta", "leaf", "commits", "snapshots")})
    out = []
    try:
        for _k, raw in db.get_column_family("inner").items():
            v = msgpack.unpackb(raw, strict_map_key=False)[1]
            if isinstance(v, dict) and v.get("obj_type") == "table":
                out.append(v["location"])
        for _k, raw in db.get_column_family("leaf").items():
            for _c, _t, packed, _ref in msgpack.unpackb(raw):
                if packed is not None:
                    v = unpack_leaf(packed)
                    if v.get("obj_type") == "file":
                        out.append(v["path"])
    finally:
        db.close()
    return out


def test_a_copied_catalog_reads_and_writes_only_its_own_files(tmp_path):
    orig, copy = str(tmp_path / "orig"), str(tmp_path / "copy")
    _build(orig)
    stored = _stored_paths(orig)
    assert stored and not any(p.startswith("/") for p in stored), stored[:5]
    subprocess.run(["cp", "-a", orig, copy], check=True)
    shutil.rmtree(orig)
    cat = cc.Catalog.open(copy)
    try:
        table = cat.get("/" + FCT.replace(".", "/"))
        assert table is not None and table.value["location"].startswith(os.path.join(copy, "warehouse") + "/")
        files = cat.plan_files(FCT)
        assert files and all(f.value["path"].startswith(copy + "/") and os.path.exists(f.value["path"])
                             for f in files)
        n = cc.run_sql(cat, f"SELECT count(*) AS n FROM {FCT}").rows[0][0]
        assert n > 0
        # a write: one more file in the copy's own warehouse, read back through SQL
        src = files[0].value["path"]
        new = os.path.join(os.path.dirname(src), "extra.parquet")
        shutil.copy(src, new)
        part = files[0].path.rsplit("/", 1)[0]
        with cat.transaction(author="test", message="one more file") as txn:
            txn.add(part + "/extra", {**dict(files[0].value), "path": new}, leaf=True)
        assert cat.get(part + "/extra").value["path"] == new
        n2 = cc.run_sql(cat, f"SELECT count(*) AS n FROM {FCT}").rows[0][0]
        assert n2 > n
    finally:
        cat.close()
    assert not os.path.exists(orig)  # nothing wrote into the original's place
    assert "extra.parquet" in os.listdir(os.path.dirname(new))


def test_absolute_paths_of_an_old_catalog_are_read_and_migrated(tmp_path):
    """An old catalog (absolute paths inside its own warehouse) keeps working; after a move,
    `semcat relocate --from OLD --to NEW` re-points them, stored relative from then on."""
    old, moved = str(tmp_path / "old"), str(tmp_path / "moved")
    cat = cc.Catalog.open(old)
    cat.warehouse = "/nowhere"  # write as the engine did before: absolute paths, nothing made relative
    mcplake.build(cat, os.path.join(old, "warehouse", "files"), extra_tables=0)
    cat.close()
    assert all(p.startswith(old + "/") for p in _stored_paths(old))
    with cc.Catalog.open(old) as cat:  # read both forms
        assert all(os.path.exists(f.value["path"]) for f in cat.plan_files(FCT))
    os.rename(old, moved)
    env = {**os.environ, "PYTHONPATH": ROOT}
    p = subprocess.run([sys.executable, "-m", "mcp_server.cli", "relocate", "--data", moved, "--from", old,
                        "--to", moved], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "re-pointed" in p.stdout, p.stdout
    assert not any(s.startswith("/") for s in _stored_paths(moved))
    with cc.Catalog.open(moved) as cat:
        files = cat.plan_files(FCT)
        assert files and all(f.value["path"].startswith(moved + "/") and os.path.exists(f.value["path"])
                             for f in files)
        assert cc.run_sql(cat, f"SELECT count(*) FROM {FCT}").rows[0][0] > 0


def _lake(lake: str, mark: bool = True) -> None:
    """An eval lake's layout (`semcat eval build`): LAKE/enriched, a catalog whose files and catalog
    `properties.warehouse` are in LAKE/warehouse, shared with its sibling catalogs."""
    if mark:
        cc.mark_lake_root(lake)
    cat = cc.Catalog.open(os.path.join(lake, "enriched"))
    with cat.transaction(author="etl", message="the catalog", time=time.time() - 30 * 86400) as txn:
        txn.add("/acme", {"obj_type": "catalog", "properties": {"warehouse": os.path.join(lake, "warehouse")}})
    mcplake.build(cat, os.path.join(lake, "warehouse"), extra_tables=0)
    cat.close()


def _copy_query_write(lake: str, copy: str) -> None:
    """cp -a the lake, remove the original, query and write through the copy: every path it hands out, and
    the new file, are inside the copy."""
    subprocess.run(["cp", "-a", lake, copy], check=True)
    shutil.rmtree(lake)
    with cc.Catalog.open(os.path.join(copy, "enriched")) as cat:
        files = cat.plan_files(FCT)
        assert files and all(f.value["path"].startswith(copy + "/warehouse/") and os.path.exists(f.value["path"])
                             for f in files), [f.value["path"] for f in files][:3]
        assert all(orjson.loads(f.raw)["path"] == f.value["path"] for f in files)  # the HTTP fast path too
        n = cc.run_sql(cat, f"SELECT count(*) FROM {FCT}").rows[0][0]
        assert n > 0
        # a writer puts new files where the catalog says: its warehouse (new tables) and table location
        root = cat.get("/acme").value["properties"]["warehouse"]
        assert root == os.path.join(copy, "warehouse")
        assert cat.get("/" + FCT.replace(".", "/")).value["location"].startswith(root + "/")
        lk = LakeBuilder(cat, root, catalog="acme", start=time.time() - 86400)
        lk.schemas[FCT] = dict(cat.get("/" + FCT.replace(".", "/")).value["schema"])
        lk.partition_by[FCT] = []
        lk.append(FCT, {"order_id": [900], "store_id": [1], "amount": [1.5], "status": ["placed"],
                        "order_date": ["2024-11-20"]})
        assert cc.run_sql(cat, f"SELECT count(*) FROM {FCT}").rows[0][0] == n + 1
        new = [f.value["path"] for f in cat.plan_files(FCT)]
        assert len(new) == len(files) + 1 and all(p.startswith(copy + "/warehouse/") and os.path.exists(p) for p in new)
    assert not os.path.exists(lake)  # nothing wrote into the original's place


def test_a_copied_eval_lake_reads_and_writes_only_its_own_files(tmp_path):
    """A lake root (marked: `cc.mark_lake_root`, as `semcat eval build` does) whose catalog keeps its files
    beside it in LAKE/warehouse stores them as ../../warehouse/..., so `cp -a LAKE COPY` is an independent
    lake. Failed before lake roots: the copy's paths named the removed original."""
    lake = str(tmp_path / "lake")
    _lake(lake)
    stored = _stored_paths(os.path.join(lake, "enriched"))
    assert stored and all(p.startswith("../../warehouse/") for p in stored), stored[:3]
    _copy_query_write(lake, str(tmp_path / "copy"))


def test_an_old_eval_lake_is_migrated_by_relocate_lake(tmp_path):
    """A lake built before lake roots (absolute paths, no marker) opens as it is; `semcat relocate --lake LAKE`
    marks it and stores every catalog's paths inside it relative; then a copy is independent."""
    lake = str(tmp_path / "lake")
    os.makedirs(lake)
    cat = cc.Catalog.open(os.path.join(lake, "enriched"))
    cat.warehouse, cat.lake_root = "/nowhere", None  # write as the engine did before: absolute paths
    with cat.transaction(author="etl", message="the catalog", time=time.time() - 30 * 86400) as txn:
        txn.add("/acme", {"obj_type": "catalog", "properties": {"warehouse": os.path.join(lake, "warehouse")}})
    mcplake.build(cat, os.path.join(lake, "warehouse"), extra_tables=0)
    cat.close()
    assert all(p.startswith(lake + "/") for p in _stored_paths(os.path.join(lake, "enriched")))
    with cc.Catalog.open(os.path.join(lake, "enriched")) as cat:
        assert cc.run_sql(cat, f"SELECT count(*) FROM {FCT}").rows[0][0] > 0
    env = {**os.environ, "PYTHONPATH": ROOT}
    p = subprocess.run([sys.executable, "-m", "mcp_server.cli", "relocate", "--lake", lake], capture_output=True,
                       text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "enriched" in p.stdout, p.stdout
    assert all(s.startswith("../../warehouse/") for s in _stored_paths(os.path.join(lake, "enriched")))
    _copy_query_write(lake, str(tmp_path / "copy"))


def test_a_lake_root_never_takes_paths_that_leave_it(tmp_path):
    """Only paths inside the marked root are stored relative; a sibling directory whose name starts like
    the root's, or a path escaping through `..`, stays absolute."""
    from catalog_core._engine.relocate import relative_value

    wh, root = str(tmp_path / "lake" / "enriched" / "warehouse"), str(tmp_path / "lake")
    for outside in (str(tmp_path / "lake2" / "x.parquet"), str(tmp_path / "lake" / ".." / "y" / "x.parquet")):
        assert relative_value({"obj_type": "file", "path": outside}, wh, root)["path"] == outside
    assert relative_value({"obj_type": "file", "path": root + "/warehouse/a/b.parquet"}, wh, root)["path"] == \
        "../../warehouse/a/b.parquet"


def test_a_moved_outside_lake_gets_an_error_naming_relocate_then_relocate_fixes_it(tmp_path):
    """Files outside the data directory (an imported lake) that moved: SQL says which file is missing and
    the command that re-points them (failed before: DuckDB's bare 'No files found'); the command works."""
    import pytest

    data, outside, moved = str(tmp_path / "data"), str(tmp_path / "lake"), str(tmp_path / "lake-moved")
    with cc.Catalog.open(data) as cat:
        mcplake.build(cat, outside, extra_tables=0)
    os.rename(outside, moved)
    with cc.Catalog.open(data) as cat:
        with pytest.raises(cc.SqlError) as e:
            cc.run_sql(cat, f"SELECT count(*) FROM {FCT}")
    assert "missing" in str(e.value) and outside + "/" in str(e.value), str(e.value)
    assert "semcat relocate --data DIR --from OLD_DIR --to NEW_DIR" in str(e.value), str(e.value)
    with cc.Catalog.open(data) as cat:
        cat.relocate(outside, moved)
        assert cc.run_sql(cat, f"SELECT count(*) FROM {FCT}").rows[0][0] > 0


def test_a_table_whose_files_are_missing_never_reads_as_empty_whatever_the_filter(tmp_path):
    """The view of an unreadable table raises when read, also under a filter on its columns or a window: before,
    DuckDB folded `col IS NOT NULL` over the view's constant NULL columns and answered 0 rows without reading
    the guard (the load log of a lake copied without its files read as empty, and its partial days vanished)."""
    import pytest

    data, outside, moved = str(tmp_path / "data"), str(tmp_path / "lake"), str(tmp_path / "lake-moved")
    with cc.Catalog.open(data) as cat:
        mcplake.build(cat, outside, extra_tables=0)
    col = "status"  # a column of FCT (eval.fixtures.mcplake)
    os.rename(outside, moved)
    queries = [f"SELECT count(*) FROM {FCT}", f"SELECT count(*) FROM {FCT} WHERE {col} IS NOT NULL",
               f"WITH l AS (SELECT {col} AS k, row_number() OVER (PARTITION BY {col}) AS rn FROM {FCT}) "
               "SELECT count(*) FROM l WHERE k IS NOT NULL AND rn = 1",
               f"SELECT max({col}) FROM {FCT} WHERE {col} IS NULL"]
    with cc.Catalog.open(data) as cat:
        for q in queries:
            with pytest.raises(cc.SqlError, match="missing"):
                cc.run_sql(cat, q)
        con = cc.open_table(cat, FCT, snapshot=cat.latest_vid)  # the in-process reader (completeness' load log)
        try:
            for q in queries:
                with pytest.raises(Exception, match="cannot be read at this snapshot"):
                    con.execute(q).fetchall()
        finally:
            con.close()
