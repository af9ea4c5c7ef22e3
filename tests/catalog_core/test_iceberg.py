"""Iceberg import and sync against a real pyiceberg SqlCatalog (sqlite) whose tables pyiceberg
wrote itself: at every imported snapshot DuckDB through semcat returns the rows pyiceberg's own
scan returns; histories are backdated commits; re-imports write nothing; bad input writes nothing."""

import datetime as dt
import os
import subprocess
import sys

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import EqualTo, In
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import DayTransform, IdentityTransform
from pyiceberg.types import DateType, DecimalType, DoubleType, LongType, NestedField, StringType, TimestampType

import catalog_core as cc
from catalog_core.iceberg import AUTHOR, import_table, sync_table

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# ---------------------------------------------------------------- the Iceberg side

@pytest.fixture
def ice(tmp_path):
    wh = tmp_path / "iceberg-wh"
    wh.mkdir()
    c = SqlCatalog("src", uri=f"sqlite:///{tmp_path}/iceberg.db", warehouse=f"file://{wh}")
    c.create_namespace("db")
    return c


SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "cat", StringType(), required=False),
    NestedField(3, "ts", TimestampType(), required=False),
    NestedField(4, "amount", DoubleType(), required=False),
    NestedField(5, "d", DateType(), required=False),
    NestedField(6, "price", DecimalType(10, 2), required=False),
)


def rows(ids, cat, day=1, names=("id", "cat", "ts", "amount", "d", "price")):
    import decimal

    return pa.table({
        names[0]: pa.array(ids, pa.int64()),
        names[1]: pa.array([cat] * len(ids), pa.string()),
        names[2]: pa.array([dt.datetime(2024, 1, day + i % 2, 5, i % 60) for i in range(len(ids))], pa.timestamp("us")),
        names[3]: pa.array([None if i % 3 == 0 else i * 1.5 for i in ids], pa.float64()),
        names[4]: pa.array([dt.date(2024, 1, day)] * len(ids), pa.date32()),
        names[5]: pa.array([decimal.Decimal(i) / 4 for i in ids], pa.decimal128(10, 2)),
    })


def _norm(v):
    if isinstance(v, dt.datetime) and v.tzinfo is not None:
        return v.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return v


def ice_rows(table, snapshot_id=None):
    scan = table.scan(snapshot_id=snapshot_id) if snapshot_id is not None else table.scan()
    arrow = scan.to_arrow()
    return arrow.column_names, sorted(tuple(_norm(v) for v in r.values()) for r in arrow.to_pylist())


def semcat_rows(cat, name, snapshot):
    con = cc.open_duckdb(cat, snapshot=snapshot)
    try:
        rel = con.sql(f"select * from {name}")
        return rel.columns, sorted(tuple(_norm(v) for v in r) for r in rel.fetchall())
    finally:
        con.close()


def imported(cat, name):
    """(iceberg snapshot id, vid) of every import commit of table `name`, oldest first."""
    path = cc.lake.table_path(name)
    return [(c.meta.get("iceberg_snapshot_id"), c.vid) for c in cat.commits(prefix=path)
            if c.author == AUTHOR]


def assert_same_everywhere(cat, table, name):
    """At every imported snapshot: the same rows and column names as pyiceberg's scan."""
    checked = 0
    for sid, vid in imported(cat, name):
        if sid is None:
            continue
        assert semcat_rows(cat, name, vid) == ice_rows(table, sid), f"snapshot {sid} (vid {vid})"
        checked += 1
    return checked


def synced_to(cat, name):
    return cat.get(cc.lake.table_path(name)).value["properties"]["iceberg"]["snapshot_id"]


# ---------------------------------------------------------------- history, sync, renames

def test_import_then_sync_appends_overwrite_delete_and_rename(catalog, ice):
    t = ice.create_table("db.t", schema=SCHEMA)
    t.append(rows([1, 2, 3], "a"))
    t.append(rows([4, 5], "b", day=3))
    res = import_table(catalog, ice, "db.t", into="lake.core.t")
    t = ice.load_table("db.t")
    assert [sid for sid, _ in res.commits] == [s.snapshot_id for s in t.metadata.snapshots]
    assert res.files_added == 2 and res.snapshot_id == t.current_snapshot().snapshot_id
    assert assert_same_everywhere(catalog, t, "lake.core.t") == 2
    assert synced_to(catalog, "lake.core.t") == t.current_snapshot().snapshot_id

    table = catalog.get("/lake/core/t").value
    assert [(c["id"], c["name"], c["type"]) for c in table["schema"]["columns"]] == [
        (1, "id", "bigint"), (2, "cat", "string"), (3, "ts", "timestamp_ntz"), (4, "amount", "double"),
        (5, "d", "date"), (6, "price", "decimal(10,2)")]
    assert table["stats"]["row_count"] == 5 and table["stats"]["file_count"] == 2
    assert table["stats"]["columns"]["id"] == {"min": 1, "max": 5, "null_count": 0}
    assert table["stats"]["columns"]["amount"]["null_count"] == 1          # id 3
    assert table["stats"]["columns"]["d"] == {"min": "2024-01-01", "max": "2024-01-03", "null_count": 0}
    leaf = next(o for o in catalog.plan_files("lake.core.t") if o.value["row_count"] == 2).value
    assert leaf["columns"]["ts"]["min"] == "2024-01-03T05:00:00.000000"
    assert leaf["columns"]["price"] == {"min": 1.0, "max": 1.25, "null_count": 0}
    assert leaf["field_ids"] == {"id": 1, "cat": 2, "ts": 3, "amount": 4, "d": 5, "price": 6}

    # an overwrite (pyiceberg: a delete snapshot, then an append snapshot)
    t.overwrite(rows([10, 11, 12, 13], "c", day=5))
    res = sync_table(catalog, ice, "db.t", into="lake.core.t")
    t = ice.load_table("db.t")
    assert len(res.commits) == 2 and res.files_removed == 2 and res.files_added == 1
    # a delete of whole files, then an append
    t.append(rows([20], "d", day=7))
    t.delete(EqualTo("cat", "c"))
    # a column rename (keeps the field id), then more data under the new name
    with t.update_schema() as u:
        u.rename_column("amount", "qty")
    t.append(rows([30, 31], "e", day=9, names=("id", "cat", "ts", "qty", "d", "price")))
    res = sync_table(catalog, ice, "db.t", into="lake.core.t")
    t = ice.load_table("db.t")
    assert len(res.commits) == 3
    assert assert_same_everywhere(catalog, t, "lake.core.t") == len(t.metadata.snapshots) == 7
    assert synced_to(catalog, "lake.core.t") == t.current_snapshot().snapshot_id

    table = catalog.get("/lake/core/t").value
    assert [c["name"] for c in table["schema"]["columns"]][3] == "qty" and table["schema"]["columns"][3]["id"] == 4
    assert table["stats"]["row_count"] == 3 and table["stats"]["file_count"] == 2
    assert "amount" not in table["stats"]["columns"] and table["stats"]["columns"]["qty"]["max"] == 46.5
    assert table["stats"]["columns"]["id"] == {"min": 20, "max": 31, "null_count": 0}
    # a file written before the rename is read through its field ids
    assert cc.run_sql(catalog, "select qty from lake.core.t where id = 20").rows == [[30.0]]

    for c in catalog.commits(prefix="/lake/core/t"):
        if c.author == AUTHOR:
            assert c.meta["iceberg_table"] == "db.t" and c.meta["provenance"] == "import"
            assert str(c.meta["iceberg_snapshot_id"]) in c.message
            assert c.meta["source_file"].endswith(".metadata.json") and len(c.meta["source_sha256"]) == 64


def test_commits_are_backdated_and_time_travel_by_iso_time_lands_on_the_snapshot(cat, ice):
    t = ice.create_table("db.t", schema=SCHEMA)
    for i in range(4):
        t.append(rows([i * 10 + 1, i * 10 + 2], "x", day=1 + i))
    t = ice.load_table("db.t")
    res = import_table(cat, ice, "db.t", into="lake.core.t")
    assert res.clamped == 0
    by_sid = dict(res.commits)
    for snap in t.metadata.snapshots:
        vid = by_sid[snap.snapshot_id]
        commit = cat.commits(since=vid, until=vid)[0]
        assert commit.time == pytest.approx(snap.timestamp_ms / 1000)
        # half a millisecond after the snapshot: exact in ISO text, and before the next snapshot
        iso = (EPOCH + dt.timedelta(microseconds=snap.timestamp_ms * 1000 + 500)).isoformat()
        assert cat.resolve(iso) == vid
        assert semcat_rows(cat, "lake.core.t", iso) == ice_rows(t, snap.snapshot_id)
    # a moment before the first snapshot: the table did not exist yet
    first = t.metadata.snapshots[0].timestamp_ms
    before = (EPOCH + dt.timedelta(microseconds=first * 1000 - 500)).isoformat()
    assert cat.get("/lake/core/t", vid=before) is None


def test_partitioned_identity_and_day(catalog, ice):
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat"),
                         PartitionField(3, 1001, DayTransform(), "ts_day"))
    t = ice.create_table("db.p", schema=SCHEMA, partition_spec=spec)
    t.append(rows([1, 2, 3, 4], "a", day=1))
    t.append(rows([5, 6], "b", day=2))
    res = import_table(catalog, ice, "db.p", into="lake.core.p")
    assert len(res.commits) == 2
    table = catalog.get("/lake/core/p").value
    assert cc.lake.partition_columns(table) == ["cat", "ts_day"]
    assert table["partition_by"][1] == {"name": "ts_day", "transform": "day", "source_id": 3, "field_id": 1001}
    parts = {o.path: o.value for o in catalog.query(cc.lake.exact_query("/lake/core/p", "*", "*"))}
    assert set(parts) == {"/lake/core/p/cat=a/ts_day=2024-01-01", "/lake/core/p/cat=a/ts_day=2024-01-02",
                          "/lake/core/p/cat=b/ts_day=2024-01-02", "/lake/core/p/cat=b/ts_day=2024-01-03"}
    p = parts["/lake/core/p/cat=a/ts_day=2024-01-02"]
    assert p["cat"] == "a" and p["ts_day"] == "2024-01-02" and p["stats"]["row_count"] == 2
    assert catalog.get("/lake/core/p/cat=a").value["stats"]["row_count"] == 4
    # partition pruning on the transform's value
    planned = catalog.plan_files("lake.core.p", where='ts_day = "2024-01-02"')
    assert sorted(f.path.rsplit("/", 1)[0] for f in planned) == [
        "/lake/core/p/cat=a/ts_day=2024-01-02", "/lake/core/p/cat=b/ts_day=2024-01-02"]
    con = cc.open_table(catalog, "lake.core.p", where='cat = "a"')
    assert sorted(r[0] for r in con.sql("select id from lake.core.p").fetchall()) == [1, 2, 3, 4]
    con.close()

    t = ice.load_table("db.p")
    t.delete(EqualTo("cat", "a"))                    # whole files of partition cat=a
    t.append(rows([7, 8], "b", day=2))
    with t.update_schema() as u:
        u.rename_column("cat", "category")             # the identity partition's source column
        u.rename_column("amount", "qty")
    t.append(rows([9], "c", day=4, names=("id", "category", "ts", "qty", "d", "price")))
    res = sync_table(catalog, ice, "db.p", into="lake.core.p")
    t = ice.load_table("db.p")
    assert len(res.commits) == 3 and res.files_removed == 2
    assert assert_same_everywhere(catalog, t, "lake.core.p") == 5
    assert catalog.get("/lake/core/p/cat=a").value["stats"]["row_count"] == 0
    b = catalog.get("/lake/core/p/cat=b").value["stats"]
    assert b["row_count"] == 4 and b["file_count"] == 4 and "qty" in b["columns"] and "amount" not in b["columns"]
    assert catalog.get("/lake/core/p").value["stats"]["row_count"] == 5
    assert cc.run_sql(catalog, "select count(*) from lake.core.p where category = 'b'").rows == [[4]]


def test_a_rename_after_the_last_snapshot_is_one_schema_commit(cat, ice):
    t = ice.create_table("db.t", schema=SCHEMA)
    t.append(rows([1, 2], "a"))
    import_table(cat, ice, "db.t", into="lake.core.t")
    with t.update_schema() as u:
        u.rename_column("amount", "qty")
    res = sync_table(cat, ice, "db.t", into="lake.core.t")
    assert [sid for sid, _ in res.commits] == [None] and res.files_added == 0
    t = ice.load_table("db.t")
    assert semcat_rows(cat, "lake.core.t", None) == ice_rows(t)   # the current schema's names
    assert "qty" in cat.get("/lake/core/t").value["stats"]["columns"]
    assert sync_table(cat, ice, "db.t", into="lake.core.t").up_to_date


def test_reimport_and_resync_of_unchanged_input_write_nothing(cat, ice):
    t = ice.create_table("db.t", schema=SCHEMA)
    t.append(rows([1], "a"))
    t.append(rows([2], "b"))
    import_table(cat, ice, "db.t", into="lake.core.t")
    vid = cat.latest_vid
    for fn in (import_table, sync_table, import_table):
        res = fn(cat, ice, "db.t", into="lake.core.t")
        assert res.up_to_date and res.commits == [] and res.snapshot_id == t.current_snapshot().snapshot_id
    assert cat.latest_vid == vid


def test_an_empty_table_and_progress(cat, ice):
    ice.create_table("db.e", schema=SCHEMA)
    res = import_table(cat, ice, "db.e", into="lake.core.e")
    assert [sid for sid, _ in res.commits] == [None] and res.snapshot_id is None
    assert semcat_rows(cat, "lake.core.e", None) == (["id", "cat", "ts", "amount", "d", "price"], [])
    assert import_table(cat, ice, "db.e", into="lake.core.e").up_to_date
    t = ice.load_table("db.e")
    for i in range(3):
        t.append(rows([i], "a"))
    seen = []
    res = sync_table(cat, ice, "db.e", into="lake.core.e", progress=lambda *a: seen.append(a))
    assert len(res.commits) == 3
    commits = [a for a in seen if a[0] == "commit"]
    assert commits[0] == ("commit", 0, 3) and commits[-1] == ("commit", 3, 3)
    assert [a[1] for a in commits] == sorted(a[1] for a in commits)
    assert any(a[0] == "read" for a in seen)


def test_into_a_catalog_with_later_commits_keeps_times_monotonic(cat, ice):
    t = ice.create_table("db.t", schema=SCHEMA)
    t.append(rows([1], "a"))
    with cat.transaction(author="someone", time=dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1)) as txn:
        txn.add("/other", {"obj_type": "catalog", "properties": {}})
    res = import_table(cat, ice, "db.t", into="lake.core.t")
    assert res.clamped == 1
    commit = cat.commits(since=res.commits[0][1])[0]
    assert commit.meta["iceberg_timestamp_ms"] == t.current_snapshot().timestamp_ms
    assert semcat_rows(cat, "lake.core.t", None) == ice_rows(ice.load_table("db.t"))


def test_a_rolled_back_history_syncs_as_one_reset_commit(cat, ice):
    t = ice.create_table("db.t", schema=SCHEMA)
    for i in range(3):
        t.append(rows([i * 10 + 1, i * 10 + 2], "a", day=1 + i))
    t = ice.load_table("db.t")
    first = t.metadata.snapshots[0].snapshot_id
    import_table(cat, ice, "db.t", into="lake.core.t")
    with t.manage_snapshots() as ms:
        ms.rollback_to_snapshot(first)
    res = sync_table(cat, ice, "db.t", into="lake.core.t")
    t = ice.load_table("db.t")
    assert [sid for sid, _ in res.commits] == [first] and res.files_removed == 2 and res.files_added == 0
    commit = cat.commits(since=res.commits[0][1])[0]
    assert commit.meta["iceberg_operation"].startswith("reset to")
    assert semcat_rows(cat, "lake.core.t", None) == ice_rows(t) and synced_to(cat, "lake.core.t") == first
    assert cat.get("/lake/core/t").value["stats"]["row_count"] == 2
    t.append(rows([99], "b", day=9))             # a new snapshot on top of the rolled-back one
    res = sync_table(cat, ice, "db.t", into="lake.core.t")
    t = ice.load_table("db.t")
    assert len(res.commits) == 1 and res.files_added == 1
    assert semcat_rows(cat, "lake.core.t", None) == ice_rows(t)


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("into", ["lake.t", "a.b.c.d", "lake._x.t", "", 5, "lake..t"])
def test_into_must_be_a_table_name(cat, ice, into):
    ice.create_table("db.t", schema=SCHEMA).append(rows([1], "a"))
    vid = cat.latest_vid
    with pytest.raises(cc.InvalidValueError, match="into"):
        import_table(cat, ice, "db.t", into=into)
    assert cat.latest_vid == vid


def test_unknown_tables_and_foreign_targets(cat, ice):
    t = ice.create_table("db.t", schema=SCHEMA)
    t.append(rows([1], "a"))
    ice.create_table("db.u", schema=SCHEMA).append(rows([2], "b"))
    vid = cat.latest_vid
    with pytest.raises(cc.NoSuchTableError, match="'db.nope' was not found.*list_tables"):
        import_table(cat, ice, "db.nope", into="lake.core.t")
    with pytest.raises(cc.NoSuchTableError, match="'nons.t' was not found"):
        import_table(cat, ice, "nons.t", into="lake.core.t")
    with pytest.raises(cc.NoSuchTableError, match="import it first"):
        sync_table(cat, ice, "db.t", into="lake.core.t")
    assert cat.latest_vid == vid
    import_table(cat, ice, "db.t", into="lake.core.t")
    vid = cat.latest_vid
    with pytest.raises(cc.AlreadyExistsError, match="imported from Iceberg table 'db.t'.*new table name"):
        import_table(cat, ice, "db.u", into="lake.core.t")
    with cat.transaction() as txn:
        txn.add("/lake/core/spark", {"obj_type": "table", "schema": {"columns": []}, "stats": {}})
        txn.add("/lake/core/v", {"obj_type": "view"})
    vid = cat.latest_vid
    with pytest.raises(cc.AlreadyExistsError, match="was not imported from Iceberg"):
        import_table(cat, ice, "db.t", into="lake.core.spark")
    with pytest.raises(cc.AlreadyExistsError, match="is a 'view', not a table"):
        import_table(cat, ice, "db.t", into="lake.core.v")
    assert cat.latest_vid == vid


def test_unsupported_features_are_refused_before_writing(cat, ice):
    mor = ice.create_table("db.mor", schema=SCHEMA, properties={"write.delete.mode": "merge-on-read"})
    mor.append(rows([1], "a"))
    evolved = ice.create_table("db.evolved", schema=SCHEMA)
    evolved.append(rows([1], "a"))
    with evolved.update_spec() as u:
        u.add_field("cat", IdentityTransform(), "cat")
    evolved.append(rows([2], "b"))
    vid = cat.latest_vid
    with pytest.raises(cc.InvalidValueError, match="merge-on-read.*nothing was imported"):
        import_table(cat, ice, "db.mor", into="lake.core.mor")
    with pytest.raises(cc.InvalidValueError, match="2 partition specs.*nothing was imported"):
        import_table(cat, ice, "db.evolved", into="lake.core.evolved")
    with pytest.raises(cc.InvalidValueError, match="pyiceberg catalog"):
        import_table(cat, "not a catalog", "db.t", into="lake.core.t")
    assert cat.latest_vid == vid and cat.get("/lake") is None


def test_a_later_unsupported_snapshot_writes_nothing_on_sync(cat, ice):
    t = ice.create_table("db.t", schema=SCHEMA)
    t.append(rows([1], "a"))
    import_table(cat, ice, "db.t", into="lake.core.t")
    t.append(rows([2], "a"))
    with t.update_spec() as u:
        u.add_field("cat", IdentityTransform(), "cat")
    t.append(rows([3], "b"))
    vid = cat.latest_vid
    with pytest.raises(cc.InvalidValueError, match="partition specs"):
        sync_table(cat, ice, "db.t", into="lake.core.t")
    assert cat.latest_vid == vid


# ---------------------------------------------------------------- CLI

@pytest.mark.slow  # 135 s at load 11: `semcat import-iceberg` in subprocesses; the import itself runs in process above
def test_cli_import_iceberg(tmp_path, ice):
    t = ice.create_table("db.t", schema=SCHEMA)
    t.append(rows([1, 2], "a"))
    t.append(rows([3], "b"))
    t.delete(In("cat", ["a"]))
    data = tmp_path / "data"
    cmd = [sys.executable, "-m", "mcp_server.cli", "import", "iceberg", "--data", str(data), "--create",
           "--catalog-uri", f"sqlite:///{tmp_path}/iceberg.db", "--warehouse", f"file://{tmp_path}/iceberg-wh", "--catalog-name", "src",
           "--table", "db.t", "--into", "lake.core.t"]
    env = {**os.environ, "PYTHONPATH": ROOT}
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "3 commits" in out.stdout and "lake.core.t" in out.stdout
    again = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert again.returncode == 0 and "up to date" in again.stdout
    bad = subprocess.run(cmd[:-4] + ["--table", "db.nope", "--into", "lake.core.t"], capture_output=True,
                         text=True, env=env, timeout=120)
    assert bad.returncode != 0 and "db.nope" in bad.stderr and "Traceback" not in bad.stderr
    cat = cc.Catalog.open(str(data))
    try:
        assert semcat_rows(cat, "lake.core.t", None) == ice_rows(ice.load_table("db.t"))
        assert len(imported(cat, "lake.core.t")) == 3
    finally:
        cat.close()


@pytest.mark.slow  # 120 s at load 11 (subprocesses)
def test_cli_import_iceberg_creates_neither_a_missing_sqlite_catalog_nor_its_target(tmp_path, ice):
    t = ice.create_table("db.t", schema=SCHEMA)
    t.append(rows([1], "a"))
    env = {**os.environ, "PYTHONPATH": ROOT}

    def run(data, uri, *extra):
        cmd = [sys.executable, "-m", "mcp_server.cli", "import", "iceberg", "--data", str(data), "--catalog-uri", uri,
               "--warehouse", f"file://{tmp_path}/iceberg-wh", "--catalog-name", "src", "--table", "db.t",
               "--into", "lake.core.t", *extra]
        return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)

    nope, data = tmp_path / "nope.db", tmp_path / "data"
    bad = run(data, f"sqlite:///{nope}", "--create")
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert "does not exist" in bad.stderr and str(nope) in bad.stderr, bad.stderr
    assert not nope.exists() and not data.exists()  # refused before --create made the target
    uri = f"sqlite:///{tmp_path}/iceberg.db"
    refused = run(data, uri)  # the target holds no catalog, and no --create
    assert refused.returncode != 0 and "no catalog in" in refused.stderr and "--create" in refused.stderr
    assert "Traceback" not in refused.stderr and not data.exists()
    ok = run(data, uri, "--create")
    assert ok.returncode == 0 and "1 commits" in ok.stdout, ok.stderr
