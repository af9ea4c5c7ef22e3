"""The Iceberg REST catalog at /iceberg of `semcat serve`, driven by the real pyiceberg REST client
against a real uvicorn server on loopback: namespaces, tables, appends / overwrites / deletes read
back with pyiceberg scans and with semcat's own run_sql at the same vid, schema evolution, time
travel by snapshot id and by tag, commit requirements and errors in the spec's ErrorModel,
concurrent writers, multi-table transactions, tokens, and semcat's annotations as read-only
properties."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import threading

import pyarrow as pa
import pytest
import requests
from pyiceberg.catalog import load_catalog
from pyiceberg.exceptions import (
    BadRequestError,
    CommitFailedException,
    ForbiddenError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import DateType, DoubleType, LongType, NestedField, StringType

import catalog_core as cc
from mcp_server.http.auth import Tokens
from mcp_server.http.server import serve_in_thread

WRITE, READ = "w-token-iceberg", "r-token-iceberg"

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "cat", StringType(), required=False),
                NestedField(3, "d", DateType(), required=False), NestedField(4, "amount", DoubleType(), required=False))
SPEC = PartitionSpec(PartitionField(source_id=3, field_id=1000, transform=IdentityTransform(), name="d"))


def rows(ids, day=1, cat="a"):
    return pa.table({"id": pa.array(ids, pa.int64()), "cat": pa.array([cat] * len(ids), pa.string()),
                     "d": pa.array([dt.date(2024, 1, day)] * len(ids), pa.date32()),
                     "amount": pa.array([i * 1.5 for i in ids], pa.float64())})


@pytest.fixture
def server(tmp_path):
    engine = cc.Catalog.open(str(tmp_path / "data"))
    srv = serve_in_thread(engine, tokens=Tokens({WRITE: "write", READ: "read"}))
    srv.catalog = engine
    yield srv
    srv.stop()
    engine.close()


def client(srv, token=WRITE, warehouse="acme"):
    return load_catalog(f"semcat-{token}", type="rest", uri=srv.url + "/iceberg", warehouse=warehouse, token=token)


def scan_ids(table, snapshot_id=None):
    scan = table.scan(snapshot_id=snapshot_id) if snapshot_id is not None else table.scan()
    return sorted(scan.to_arrow().column("id").to_pylist())


def sql_ids(cat, name, vid):
    res = cc.run_sql(cat, f"select id from {name} order by id", snapshot=vid, limit=100000)
    return [r[0] for r in res.rows]


def raw(srv, method, path, body=None, token=WRITE):
    return requests.request(method, srv.url + "/iceberg" + path, json=body, timeout=30,
                            headers={"Authorization": f"Bearer {token}"})


# ---------------------------------------------------------------- namespaces

def test_config_and_namespaces(server):
    r = raw(server, "GET", "/v1/config?warehouse=acme")
    assert r.status_code == 200
    cfg = r.json()
    assert cfg["overrides"]["prefix"] == "acme"
    assert "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}" in cfg["endpoints"]

    ice = client(server)
    assert ice.list_namespaces() == []
    ice.create_namespace("core", {"owner": "data-eng"})
    ice.create_namespace("mart")
    with pytest.raises(NamespaceAlreadyExistsError):
        ice.create_namespace("core")
    assert ice.list_namespaces() == [("core",), ("mart",)]
    assert ice.list_namespaces("core") == []          # semcat namespaces have no children
    with pytest.raises(NoSuchNamespaceError):
        ice.list_namespaces("nope")
    assert ice.namespace_exists("core") and not ice.namespace_exists("nope")
    assert ice.load_namespace_properties("core") == {"owner": "data-eng"}
    summary = ice.update_namespace_properties("core", removals={"owner", "gone"}, updates={"tier": "gold"})
    assert summary.removed == ["owner"] and summary.missing == ["gone"] and summary.updated == ["tier"]
    assert ice.load_namespace_properties("core") == {"tier": "gold"}
    # the catalog tree holds them
    assert server.catalog.get("/acme/core").value["properties"] == {"tier": "gold"}

    with pytest.raises(BadRequestError, match="one level"):
        ice.create_namespace(("core", "deeper"))
    ice.create_table("core.t", SCHEMA)
    with pytest.raises(NamespaceNotEmptyError, match="not empty"):
        ice.drop_namespace("core")
    ice.drop_namespace("mart")
    assert ice.list_namespaces() == [("core",)]
    with pytest.raises(NoSuchNamespaceError):
        ice.drop_namespace("mart")


def test_error_model_and_paging(server):
    r = raw(server, "GET", "/v1/acme/namespaces/nope/tables/t")
    assert r.status_code == 404
    err = r.json()["error"]
    assert err["type"] == "NoSuchTableException" and err["code"] == 404 and "list tables" in err["message"]
    r = raw(server, "GET", "/v1/acme/namespaces/nope")
    assert r.status_code == 404 and r.json()["error"]["type"] == "NoSuchNamespaceException"
    ice = client(server)
    ice.create_namespace("core")
    for n in range(5):
        ice.create_table(f"core.t{n}", SCHEMA)
    first = raw(server, "GET", "/v1/acme/namespaces/core/tables?pageSize=2").json()
    assert [i["name"] for i in first["identifiers"]] == ["t0", "t1"] and first["next-page-token"]
    rest = raw(server, "GET", f"/v1/acme/namespaces/core/tables?pageSize=10&pageToken={first['next-page-token']}").json()
    assert [i["name"] for i in rest["identifiers"]] == ["t2", "t3", "t4"] and rest.get("next-page-token") is None
    assert sorted(ice.list_tables("core")) == [("core", f"t{n}") for n in range(5)]


# ---------------------------------------------------------------- tables and data

def test_append_overwrite_delete_read_back_and_sql_agree(server):
    cat = server.catalog
    ice = client(server)
    ice.create_namespace("core")
    t = ice.create_table("core.orders", SCHEMA, partition_spec=SPEC)
    with pytest.raises(TableAlreadyExistsError):
        ice.create_table("core.orders", SCHEMA)
    assert t.current_snapshot() is None and scan_ids(t) == []
    assert cat.get("/acme/core/orders").value["partition_by"][0]["name"] == "d"

    t.append(rows([1, 2, 3], day=1))
    t.append(rows([4, 5], day=2))
    t = ice.load_table("core.orders")
    s_two = t.current_snapshot().snapshot_id
    assert scan_ids(t) == [1, 2, 3, 4, 5]
    # the catalog holds the files, partitions and stats pyiceberg wrote
    assert cat.get("/acme/core/orders").value["stats"]["row_count"] == 5
    assert sorted(o.obj_id for o in cat.children("/acme/core/orders") if o.obj_type == "partition") == [
        "d=2024-01-01", "d=2024-01-02"]
    files = cat.plan_files("acme.core.orders")
    assert len(files) == 2 and sum(f.value["row_count"] for f in files) == 5
    assert {f.value["columns"]["id"]["min"] for f in files} == {1, 4}
    vid_two = int(t.properties["semcat.vid"])
    assert sql_ids(cat, "acme.core.orders", vid_two) == scan_ids(t)

    t.overwrite(rows([10, 11], day=3))
    t = ice.load_table("core.orders")
    assert scan_ids(t) == [10, 11]
    t.append(rows([12, 13, 14], day=3))
    t.delete("id = 13")
    t = ice.load_table("core.orders")
    assert scan_ids(t) == [10, 11, 12, 14]
    assert t.current_snapshot().summary.operation.value in ("delete", "overwrite")
    vid = int(t.properties["semcat.vid"])
    assert sql_ids(cat, "acme.core.orders", vid) == [10, 11, 12, 14]
    assert cat.get("/acme/core/orders").value["stats"]["row_count"] == 4
    # time travel by snapshot id; each snapshot's semcat vid reads the same rows through SQL
    assert scan_ids(t, snapshot_id=s_two) == [1, 2, 3, 4, 5]
    for snap in t.snapshots():
        v = int(snap.summary["semcat.vid"])
        assert scan_ids(t, snapshot_id=snap.snapshot_id) == sql_ids(cat, "acme.core.orders", v)
    # a filter prunes by the partition and stats the manifests carry
    from pyiceberg.expressions import EqualTo
    assert sorted(t.scan(row_filter=EqualTo("id", 12)).to_arrow().column("id").to_pylist()) == [12]
    plan = list(t.scan(row_filter=EqualTo("d", "2024-01-03")).plan_files())
    assert plan and all("d=2024-01-03" in task.file.file_path or task.file.partition[0] == 19725 for task in plan)


def test_loads_reuse_written_files_across_snapshots_and_restarts(server, tmp_path):
    ice = client(server)
    ice.create_namespace("core")
    t = ice.create_table("core.t", SCHEMA)
    for i in range(3):
        t.append(rows([i]))
    t = ice.load_table("core.t")
    lists = [s.manifest_list for s in t.snapshots()]
    first = [m.manifest_path for m in t.snapshots()[0].manifests(t.io)]
    last = [m.manifest_path for m in t.snapshots()[-1].manifests(t.io)]
    assert set(first) <= set(last) and len(last) == 3          # the older manifests are reused, not rewritten
    mtimes = {p: os.stat(p).st_mtime_ns for p in lists + last}
    # a new server over the same catalog materializes from what exists: nothing is rewritten
    data = server.catalog.data_dir
    server.stop()
    server.catalog.close()
    engine = cc.Catalog.open(data)
    srv = serve_in_thread(engine, tokens=Tokens({WRITE: "write"}))
    try:
        t2 = client(srv).load_table("core.t")
        assert [s.manifest_list for s in t2.snapshots()] == lists
        assert {p: os.stat(p).st_mtime_ns for p in mtimes} == mtimes
        assert scan_ids(t2) == [0, 1, 2]
        assert [s.snapshot_id for s in t2.snapshots()] == [s.snapshot_id for s in t.snapshots()]
    finally:
        srv.stop()
        server.catalog = engine  # the fixture closes this one
        server.stop = lambda: None


def test_schema_evolution(server):
    ice = client(server)
    ice.create_namespace("core")
    t = ice.create_table("core.t", SCHEMA)
    t.append(rows([1, 2]))
    with t.update_schema() as u:
        u.add_column("note", StringType())
    t = ice.load_table("core.t")
    assert [f.name for f in t.schema().fields] == ["id", "cat", "d", "amount", "note"]
    cols = server.catalog.get("/acme/core/t").value["schema"]["columns"]
    assert [c["name"] for c in cols][-1] == "note" and cols[-1]["id"] == 5
    new = rows([3]).append_column("note", pa.array(["hi"], pa.string()))
    t.append(new)
    t = ice.load_table("core.t")
    got = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert [(r["id"], r["note"]) for r in got] == [(1, None), (2, None), (3, "hi")]
    vid = int(t.properties["semcat.vid"])
    res = cc.run_sql(server.catalog, "select id, note from acme.core.t order by id", snapshot=vid)
    assert [tuple(r) for r in res.rows] == [(1, None), (2, None), (3, "hi")]
    with t.update_schema() as u:
        u.rename_column("note", "remark")
    t = ice.load_table("core.t")
    assert "remark" in [f.name for f in t.schema().fields]
    assert sorted(r["remark"] or "" for r in t.scan().to_arrow().to_pylist()) == ["", "", "hi"]
    # the older schemas stay in the metadata, so time travel reads with them
    assert len(t.schemas()) == 3


def test_time_travel_by_tag_and_named_snapshot(server):
    cat = server.catalog
    ice = client(server)
    ice.create_namespace("core")
    t = ice.create_table("core.t", SCHEMA)
    t.append(rows([1]))
    t = ice.load_table("core.t")
    first = t.current_snapshot().snapshot_id
    t.manage_snapshots().create_tag(first, "v1").commit()
    cat.snapshot("release-1")              # a semcat named snapshot is a tag of every table
    t.append(rows([2]))
    t = ice.load_table("core.t")
    assert t.snapshot_by_name("v1").snapshot_id == first
    assert t.snapshot_by_name("release-1").snapshot_id == first
    assert scan_ids(t, snapshot_id=t.snapshot_by_name("v1").snapshot_id) == [1]
    assert scan_ids(t) == [1, 2]
    t.manage_snapshots().remove_tag("v1").commit()
    assert ice.load_table("core.t").snapshot_by_name("v1") is None


def test_rename_drop_purge_and_register(server, tmp_path):
    ice = client(server)
    ice.create_namespace("core")
    ice.create_namespace("mart")
    t = ice.create_table("core.a", SCHEMA)
    t.append(rows([1, 2]))
    ice.rename_table("core.a", "mart.b")
    assert not ice.table_exists("core.a") and ice.table_exists("mart.b")
    assert scan_ids(ice.load_table("mart.b")) == [1, 2]
    with pytest.raises(NoSuchTableError):
        ice.load_table("core.a")
    loc = ice.load_table("mart.b").metadata.location
    ice.drop_table("mart.b")
    assert not ice.table_exists("mart.b") and os.path.isdir(loc)   # dropped, files kept
    c = ice.create_table("core.c", SCHEMA)
    c.append(rows([3]))
    cloc = c.metadata.location
    ice.purge_table("core.c")
    assert not ice.table_exists("core.c") and not os.path.exists(cloc)

    # register: an Iceberg table another catalog wrote becomes a semcat table with its history
    from pyiceberg.catalog.sql import SqlCatalog

    wh = tmp_path / "data" / "warehouse" / "other"   # inside the warehouse: a location semcat may hand engines
    wh.mkdir()
    other = SqlCatalog("other", uri=f"sqlite:///{tmp_path}/other.db", warehouse=f"file://{wh}")
    other.create_namespace("db")
    ot = other.create_table("db.src", SCHEMA)
    ot.append(rows([7, 8]))
    ot.append(rows([9]))
    ot = other.load_table("db.src")
    reg = ice.register_table("core.reg", ot.metadata_location)
    assert scan_ids(reg) == [7, 8, 9]
    assert [s.snapshot_id for s in reg.snapshots()] == [s.snapshot_id for s in ot.snapshots()]
    assert server.catalog.get("/acme/core/reg").value["stats"]["row_count"] == 3
    with pytest.raises(TableAlreadyExistsError):
        ice.register_table("core.reg", ot.metadata_location)


# ---------------------------------------------------------------- commits

def _commit(srv, table, requirements, updates, token=WRITE):
    return raw(srv, "POST", f"/v1/acme/namespaces/core/tables/{table}",
               {"identifier": {"namespace": ["core"], "name": table}, "requirements": requirements, "updates": updates},
               token=token)


def test_commit_requirements_and_bad_updates(server):
    ice = client(server)
    ice.create_namespace("core")
    t = ice.create_table("core.t", SCHEMA)
    t.append(rows([1]))
    t = ice.load_table("core.t")
    md = t.metadata
    ok = [{"type": "assert-table-uuid", "uuid": str(md.table_uuid)},
          {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": md.current_snapshot_id},
          {"type": "assert-current-schema-id", "current-schema-id": md.current_schema_id},
          {"type": "assert-last-assigned-field-id", "last-assigned-field-id": md.last_column_id},
          {"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": md.last_partition_id},
          {"type": "assert-default-spec-id", "default-spec-id": md.default_spec_id},
          {"type": "assert-default-sort-order-id", "default-sort-order-id": md.default_sort_order_id}]
    r = _commit(server, "t", ok, [{"action": "set-properties", "updates": {"k": "v"}}])
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["properties"]["k"] == "v"
    for bad in ({"type": "assert-table-uuid", "uuid": "00000000-0000-0000-0000-000000000000"},
                {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 12345},
                {"type": "assert-current-schema-id", "current-schema-id": 7},
                {"type": "assert-last-assigned-field-id", "last-assigned-field-id": 99},
                {"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": 5},
                {"type": "assert-default-spec-id", "default-spec-id": 3},
                {"type": "assert-default-sort-order-id", "default-sort-order-id": 3},
                {"type": "assert-create"}):
        r = _commit(server, "t", [bad], [{"action": "set-properties", "updates": {"k": "x"}}])
        assert r.status_code == 409, (bad, r.text)
        assert r.json()["error"]["type"] == "CommitFailedException"
    assert ice.load_table("core.t").properties["k"] == "v"      # nothing of the failed commits landed
    r = _commit(server, "t", [{"type": "assert-nothing"}], [])
    assert r.status_code == 400 and r.json()["error"]["type"] == "BadRequestException"
    assert "assert-nothing" in r.json()["error"]["message"] or "type" in r.json()["error"]["message"]
    r = _commit(server, "t", [], [{"action": "explode"}])
    assert r.status_code == 400 and r.json()["error"]["code"] == 400
    r = _commit(server, "t", [], [{"action": "set-snapshot-ref", "ref-name": "dev", "type": "branch",
                                   "snapshot-id": md.current_snapshot_id}])
    assert r.status_code == 400 and "branch" in r.json()["error"]["message"]
    r = _commit(server, "t", [], [{"action": "upgrade-format-version", "format-version": 3}])
    assert r.status_code == 400
    r = _commit(server, "nope", [], [])
    assert r.status_code == 404 and r.json()["error"]["type"] == "NoSuchTableException"


def test_create_table_transaction_with_data(server):
    ice = client(server)
    ice.create_namespace("core")
    tx = ice.create_table_transaction("core.staged", SCHEMA, partition_spec=SPEC)
    assert not ice.table_exists("core.staged")
    tx.append(rows([5, 6], day=4))
    tx.commit_transaction()
    t = ice.load_table("core.staged")
    assert scan_ids(t) == [5, 6]
    assert server.catalog.get("/acme/core/staged/d=2024-01-04") is not None


def _append_with_retry(ice, name, ids, rounds_log):
    """Append one row per id, retrying on CommitFailedException (nothing was written). A dropped
    connection (e.g. a keep-alive connection the server closed as the client reused it, seen at
    high machine load) leaves the outcome unknown: the writer reads the table before retrying."""
    for i in ids:
        for _attempt in range(200):
            try:
                t = ice.load_table(name)
                t.append(rows([i]))
                break
            except CommitFailedException:
                rounds_log.append(i)
            except requests.exceptions.ConnectionError:
                rounds_log.append(i)
                from pyiceberg.expressions import EqualTo

                if ice.load_table(name).scan(row_filter=EqualTo("id", i)).to_arrow().num_rows:
                    break     # it landed before the connection dropped
        else:
            raise AssertionError(f"append of {i} never committed")


def _concurrent(server, per_writer):
    ice = client(server)
    ice.create_namespace("core")
    ice.create_table("core.t", SCHEMA)
    retries: list[int] = []
    errors: list[BaseException] = []

    def writer(start):
        try:
            _append_with_retry(client(server), "core.t", range(start, start + per_writer), retries)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(s,)) for s in (0, 10_000)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(600)
    assert not errors, errors
    t = ice.load_table("core.t")
    want = sorted(list(range(per_writer)) + list(range(10_000, 10_000 + per_writer)))
    assert scan_ids(t) == want                                   # 0 rows lost, none doubled
    assert sql_ids(server.catalog, "acme.core.t", int(t.properties["semcat.vid"])) == want
    assert server.catalog.get("/acme/core/t").value["stats"]["row_count"] == len(want)
    return retries


def test_two_writers_append_concurrently_with_retry(server):
    _concurrent(server, 25)   # 50 rounds


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_two_writers_200_rounds(server):
    _concurrent(server, 100)


def test_multi_table_transaction_is_all_or_nothing(server):
    ice = client(server)
    ice.create_namespace("core")
    a = ice.create_table("core.a", SCHEMA)
    ice.create_table("core.b", SCHEMA)
    a.append(rows([1]))
    a = ice.load_table("core.a")
    vid = server.catalog.latest_vid

    def change(name, reqs, key):
        return {"identifier": {"namespace": ["core"], "name": name}, "requirements": reqs,
                "updates": [{"action": "set-properties", "updates": {key: "1"}}]}

    ok_a = [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": a.metadata.current_snapshot_id}]
    stale_b = [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 42}]
    r = raw(server, "POST", "/v1/acme/transactions/commit",
            {"table-changes": [change("a", ok_a, "x"), change("b", stale_b, "x")]})
    assert r.status_code == 409 and r.json()["error"]["type"] == "CommitFailedException"
    assert server.catalog.latest_vid == vid
    assert "x" not in ice.load_table("core.a").properties and "x" not in ice.load_table("core.b").properties
    r = raw(server, "POST", "/v1/acme/transactions/commit",
            {"table-changes": [change("a", ok_a, "y"), change("b", [], "y")]})
    assert r.status_code == 204, r.text
    la, lb = ice.load_table("core.a"), ice.load_table("core.b")
    assert la.properties["y"] == lb.properties["y"] == "1"
    assert la.properties["semcat.vid"] == lb.properties["semcat.vid"]      # one catalog commit


# ---------------------------------------------------------------- auth and the semantic layer

def test_read_token_reads_but_cannot_write(server):
    ice = client(server)
    ice.create_namespace("core")
    ice.create_table("core.t", SCHEMA).append(rows([1]))
    ro = client(server, token=READ)
    t = ro.load_table("core.t")
    assert scan_ids(t) == [1]
    with pytest.raises(ForbiddenError, match="read"):
        t.append(rows([2]))
    with pytest.raises(ForbiddenError):
        ro.create_namespace("x")
    with pytest.raises(ForbiddenError):
        ro.drop_table("core.t")
    assert scan_ids(ice.load_table("core.t")) == [1]
    r = requests.get(server.url + "/iceberg/v1/config?warehouse=acme", timeout=10)
    assert r.status_code == 401


def test_semantic_properties_present_and_read_only(server):
    import semantic as sm

    cat = server.catalog
    ice = client(server)
    ice.create_namespace("core")
    t = ice.create_table("core.orders", SCHEMA)
    t.append(rows([1, 2]))
    sm.annotate(cat, "acme.core.orders", {"description": "one row per order", "grain": {"text": "order", "keys": ["id"]}},
                author="alice", source="human")
    t = ice.load_table("core.orders")
    p = t.properties
    assert p["semcat.description"] == "one row per order" and p["comment"] == "one row per order"
    assert p["semcat.grain"] == "order" and p["semcat.grain.keys"] == "id"
    assert p["semcat.vid"] == str(cat.latest_vid)
    assert p["semcat.freshness"] in ("ok", "missed", "unknown") and "semcat.findings.count" in p
    with pytest.raises(ForbiddenError, match="semcat annotate"):
        t.transaction().set_properties({"semcat.description": "hacked"}).commit_transaction()
    with pytest.raises(ForbiddenError):
        t.transaction().remove_properties("semcat.grain").commit_transaction()
    t.transaction().set_properties({"owner": "me"}).commit_transaction()
    p = ice.load_table("core.orders").properties
    assert p["semcat.description"] == "one row per order" and p["owner"] == "me"
    ice.create_table("core.orders_v2", SCHEMA)
    sm.annotate(cat, "acme.core.orders", {"deprecated": {"reason": "use orders_v2", "replaced_by": "acme.core.orders_v2"}},
                author="alice", source="human")
    p = ice.load_table("core.orders").properties
    assert p["semcat.deprecated"] == "use orders_v2" and p["semcat.successor"] == "acme.core.orders_v2"


# ---------------------------------------------------------------- a table the Spark bridge wrote

@pytest.mark.slow
def test_spark_written_table_reads_through_rest(tmp_path):
    """Tables the Spark bridge wrote (Spark's plain Parquet, no field ids: read through the name
    mapping) scan through REST to the rows run_sql reads at the same vid, now and at their first
    snapshot."""
    src = os.environ.get("SEMCAT_EVAL_LAKE")
    if not src or not os.path.exists(os.path.join(src, "lake.json")):
        pytest.skip("SEMCAT_EVAL_LAKE (a built Acme lake) is not set")
    lake = tmp_path / "lake"
    shutil.copytree(src, lake, symlinks=True)   # never opened in place
    engine = cc.open_catalog(str(lake / "enriched"))
    srv = serve_in_thread(engine)
    try:
        ice = load_catalog("spark", type="rest", uri=srv.url + "/iceberg", warehouse="acme")
        assert ("core",) in ice.list_namespaces()
        for ident in (("core", "dim_customer"), ("core", "fct_payments"), ("legacy", "sales_daily"), ("ops", "etl_load_log")):
            t = ice.load_table(ident)
            name = ".".join(("acme", *ident))
            assert len(t.snapshots()) > 1, name
            for snap in (t.snapshots()[0], t.current_snapshot()):
                vid = int(snap.summary["semcat.vid"])
                arrow = t.scan(snapshot_id=snap.snapshot_id).to_arrow()
                cols = [f.name for f in t.schemas()[snap.schema_id].fields] if snap.schema_id in t.schemas() else arrow.column_names
                counts = ", ".join(f'count("{c}")' for c in cols)
                res = cc.run_sql(engine, f"select count(*), {counts} from {name}", snapshot=vid)
                want = [arrow.num_rows] + [arrow.num_rows - arrow.column(c).null_count for c in cols]
                assert res.rows[0] == want, (name, vid)
        # writes through REST to Spark-written tables: a copy-on-write delete of one day of a
        # partitioned table (pyiceberg removes Spark's files) and an append to another. The copied
        # catalog's locations still name the source lake: move them first (set-location), so the
        # files pyiceberg writes land in this test's directory, never in the shared lake
        from pyiceberg.expressions import EqualTo
        for ident in ("core.fct_orders", "core.fct_payments"):
            ns_, tname = ident.split(".")
            r = requests.post(f"{srv.url}/iceberg/v1/acme/namespaces/{ns_}/tables/{tname}", timeout=60, json={
                "identifier": {"namespace": [ns_], "name": tname}, "requirements": [],
                "updates": [{"action": "set-location", "location": os.path.join(engine.data_dir, "warehouse", "moved", ident)}]})
            assert r.status_code == 200, r.text
            assert engine.get("/acme/" + ident.replace(".", "/")).value["location"].startswith(str(tmp_path))
        t = ice.load_table("core.fct_orders")
        day = t.scan(limit=1).to_arrow().column("order_date_local")[0].as_py()
        before = cc.run_sql(engine, "select count(*) from acme.core.fct_orders").rows[0][0]
        gone = cc.run_sql(engine, f"select count(*) from acme.core.fct_orders where order_date_local = '{day}'").rows[0][0]
        assert gone > 0
        t.delete(EqualTo("order_date_local", day))
        t = ice.load_table("core.fct_orders")
        vid = int(t.properties["semcat.vid"])
        assert t.scan().to_arrow().num_rows == before - gone
        assert cc.run_sql(engine, "select count(*) from acme.core.fct_orders", snapshot=vid).rows[0][0] == before - gone
        assert engine.get("/acme/core/fct_orders").value["stats"]["row_count"] == before - gone
        p = ice.load_table("core.fct_payments")
        n = p.scan().to_arrow().num_rows
        p.append(p.scan(limit=5).to_arrow())
        p = ice.load_table("core.fct_payments")
        new_files = [f.value["path"] for f in engine.plan_files("acme.core.fct_payments") if "/moved/" in f.value["path"]]
        assert len(new_files) == 1 and new_files[0].removeprefix("file://").startswith(str(tmp_path))
        assert cc.run_sql(engine, "select count(*) from acme.core.fct_payments",
                          snapshot=int(p.properties["semcat.vid"])).rows[0][0] == n + 5 == p.scan().to_arrow().num_rows
    finally:
        srv.stop()
        engine.close()


def test_idempotency_key_makes_a_retried_commit_safe(server):
    ice = client(server)
    ice.create_namespace("core")
    ice.create_table("core.t", SCHEMA)
    ice.create_table("core.u", SCHEMA)
    wider = Schema(*SCHEMA.fields, NestedField(5, "extra", StringType(), required=False), schema_id=1)
    body = {"identifier": {"namespace": ["core"], "name": "t"},
            "requirements": [{"type": "assert-current-schema-id", "current-schema-id": 0}],
            "updates": [{"action": "add-schema", "schema": json.loads(wider.model_dump_json(by_alias=True))},
                        {"action": "set-current-schema", "schema-id": -1}]}

    def post(key, table="t"):
        headers = {"Authorization": f"Bearer {WRITE}", **({"Idempotency-Key": key} if key else {})}
        return requests.post(f"{server.url}/iceberg/v1/acme/namespaces/core/tables/{table}", json={
            **body, "identifier": {"namespace": ["core"], "name": table}}, headers=headers, timeout=30)

    key = "017f22e2-79b0-7cc3-98c4-dc0c0c07398f"    # the specification's keys are UUIDs
    first = post(key)
    assert first.status_code == 200, first.text
    vid = server.catalog.latest_vid
    again = post(key)          # the response was "lost": the retry gets the landed result, not a 409
    assert again.status_code == 200 and again.json()["metadata"] == first.json()["metadata"]
    assert server.catalog.latest_vid == vid
    assert post(None).status_code == 409            # without the key the stale requirement fails
    reused = post(key, table="u")
    assert reused.status_code == 422 and "already used" in reused.json()["error"]["message"]
    assert ice.load_table("core.u").schema().schema_id == 0
    bad = post("k-1")                                # not a UUID: refused before anything is read
    assert bad.status_code == 400 and "not a UUID" in bad.json()["error"]["message"]


def test_etag_304_and_refs_only_loading(server):
    ice = client(server)
    ice.create_namespace("core")
    t = ice.create_table("core.t", SCHEMA)
    for i in range(3):
        t.append(rows([i]))
    r = raw(server, "GET", "/v1/acme/namespaces/core/tables/t")
    etag = r.headers["ETag"]
    r2 = requests.get(server.url + "/iceberg/v1/acme/namespaces/core/tables/t", timeout=30,
                      headers={"Authorization": f"Bearer {WRITE}", "If-None-Match": etag})
    assert r2.status_code == 304 and not r2.content
    t.append(rows([9]))
    r3 = requests.get(server.url + "/iceberg/v1/acme/namespaces/core/tables/t", timeout=30,
                      headers={"Authorization": f"Bearer {WRITE}", "If-None-Match": etag})
    assert r3.status_code == 200 and r3.headers["ETag"] != etag
    assert len(r3.json()["metadata"]["snapshots"]) == 4
    refs = raw(server, "GET", "/v1/acme/namespaces/core/tables/t?snapshots=refs").json()["metadata"]
    assert [s["snapshot-id"] for s in refs["snapshots"]] == [refs["current-snapshot-id"]]
    lazy = load_catalog("lazy", type="rest", uri=server.url + "/iceberg", warehouse="acme", token=WRITE,
                        **{"snapshot-loading-mode": "refs"})
    assert scan_ids(lazy.load_table("core.t")) == [0, 1, 2, 9]


def test_client_credentials_grant(server):
    oauth = {"oauth2-server-uri": server.url + "/iceberg/v1/oauth/tokens"}
    ice = load_catalog("cc", type="rest", uri=server.url + "/iceberg", warehouse="acme", credential=f"me:{WRITE}", **oauth)
    ice.create_namespace("core")
    assert ice.list_namespaces() == [("core",)]
    r = requests.post(server.url + "/iceberg/v1/oauth/tokens", timeout=10,
                      data={"grant_type": "client_credentials", "client_id": "me", "client_secret": "wrong"})
    assert r.status_code == 401 and r.json()["error"] == "invalid_client"
    ro = load_catalog("cc-ro", type="rest", uri=server.url + "/iceberg", warehouse="acme", credential=f"me:{READ}", **oauth)
    with pytest.raises(ForbiddenError):
        ro.create_namespace("x")


def test_nested_columns_keep_the_writers_field_ids(server):
    from pyiceberg.types import ListType, StructType

    nested = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "addr", StructType(NestedField(3, "city", StringType(), required=False),
                                                      NestedField(4, "zip", StringType(), required=False)), required=False),
                    NestedField(5, "tags", ListType(6, StringType(), element_required=False), required=False))
    ice = client(server)
    ice.create_namespace("core")
    # a create-table transaction writes its files with the ids the client assigned, before the
    # server has seen the table: the loaded table must carry those ids (nested ones included)
    tx = ice.create_table_transaction("core.n", nested)
    addr = pa.struct([("city", pa.string()), ("zip", pa.string())])
    tx.append(pa.table({"id": pa.array([1, 2], pa.int64()),
                        "addr": pa.array([{"city": "Oslo", "zip": "0150"}, None], addr),
                        "tags": pa.array([["a", "b"], []], pa.list_(pa.string()))}))
    client_ids = {f.field_id for f in tx.table_metadata.schema()._lazy_id_to_field.values()}
    tx.commit_transaction()
    t = ice.load_table("core.n")
    assert {f.field_id for f in t.schema()._lazy_id_to_field.values()} == client_ids
    got = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert got[0]["addr"] == {"city": "Oslo", "zip": "0150"} and got[0]["tags"] == ["a", "b"]
    assert got[1]["addr"] is None


# ---------------------------------------------------------------- nested field ids

def _nested_schema():
    from pyiceberg.types import ListType, MapType, StructType

    return Schema(NestedField(1, "id", LongType(), required=False),
                  NestedField(2, "addr", StructType(NestedField(3, "city", StringType(), required=False),
                                                    NestedField(4, "zip", StringType(), required=False)), required=False),
                  NestedField(5, "tags", ListType(6, StringType(), element_required=False), required=False),
                  NestedField(7, "attrs", MapType(8, StringType(), 9, LongType(), value_required=False), required=False))


def _nested_rows(ids, country=False):
    fields = [("city", pa.string()), ("zip", pa.string())] + ([("country", pa.string())] if country else [])
    addr = [{"city": f"c{i}", "zip": str(i), **({"country": "NO"} if country else {})} for i in ids]
    return pa.table({"id": pa.array(ids, pa.int64()), "addr": pa.array(addr, pa.struct(fields)),
                     "tags": pa.array([[f"t{i}", "x"] for i in ids], pa.list_(pa.string())),
                     "attrs": pa.array([[("k", i)] for i in ids], pa.map_(pa.string(), pa.int64()))})


def _field_ids(schema):
    return sorted((f.field_id, f.name) for f in schema._lazy_id_to_field.values())


def test_nested_columns_created_appended_evolved_and_scanned(server):
    """A table with struct / list / map columns created through REST keeps the nested ids the
    catalog assigned (and last-column-id) across appends, loads and a nested schema change; its
    rows read back through pyiceberg and through run_sql at the same vid."""
    from pyiceberg.types import StringType as S

    ice = client(server)
    ice.create_namespace("core")
    t = ice.create_table("core.n", _nested_schema())
    created = _field_ids(t.schema())
    assert len(created) == 9 and t.metadata.last_column_id == 9
    t.append(_nested_rows([1, 2]))
    t = ice.load_table("core.n")
    assert _field_ids(t.schema()) == created and t.metadata.last_column_id == 9
    with t.update_schema() as u:
        u.add_column(("addr", "country"), S())
    t = ice.load_table("core.n")
    country = t.schema().find_field("addr.country").field_id
    assert country == 10 and t.metadata.last_column_id == 10
    assert _field_ids(t.schema()) == sorted([*created, (10, "country")])
    t.append(_nested_rows([3], country=True))
    again = ice.load_table("core.n")                    # a second load: the same ids
    assert _field_ids(again.schema()) == _field_ids(t.schema())
    got = sorted(again.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert [r["addr"] for r in got] == [{"city": "c1", "zip": "1", "country": None},
                                        {"city": "c2", "zip": "2", "country": None},
                                        {"city": "c3", "zip": "3", "country": "NO"}]
    assert [r["tags"] for r in got] == [["t1", "x"], ["t2", "x"], ["t3", "x"]]
    assert [dict(r["attrs"]) for r in got] == [{"k": 1}, {"k": 2}, {"k": 3}]
    vid = int(again.properties["semcat.vid"])
    res = cc.run_sql(server.catalog, "select id, addr.city, addr.country, tags[1], attrs['k'] from acme.core.n "
                     "order by id", snapshot=vid)
    assert [tuple(r) for r in res.rows] == [(1, "c1", None, "t1", 1), (2, "c2", None, "t2", 2), (3, "c3", "NO", "t3", 3)]


def test_imported_table_keeps_the_nested_field_ids_of_its_files(server, tmp_path):
    """A table imported from a pyiceberg SqlCatalog (nested columns, a nested field added later, so
    its ids are not the ones a fresh assignment would give) is served with the source's field ids
    and last-column-id: its own data files (which carry those ids) scan with every nested value."""
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.types import StringType as S

    src = SqlCatalog("src", uri=f"sqlite:///{tmp_path}/src.db", warehouse=f"file://{tmp_path}/wh")
    src.create_namespace("db")
    st = src.create_table("db.n", _nested_schema())
    st.append(_nested_rows([1, 2]))
    with st.update_schema() as u:
        u.add_column(("addr", "country"), S())
    st = src.load_table("db.n")
    st.append(_nested_rows([3], country=True))
    st = src.load_table("db.n")
    cc.iceberg.import_table(server.catalog, src, "db.n", into="acme.core.imp")
    t = client(server).load_table("core.imp")
    assert _field_ids(t.schema()) == _field_ids(st.schema())
    assert t.metadata.last_column_id == st.metadata.last_column_id == 10
    want = sorted(st.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    got = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert got == want and got[0]["addr"]["city"] == "c1" and got[2]["addr"]["country"] == "NO"


def _bridge_table(cat, tmp_path):
    """acme.core.b as the Spark bridge writes one: a schema (id 0) and one Parquet file by column name,
    no field ids, recording the schema it was written under (`schema_id`)."""
    import pyarrow.parquet as pq

    path = str(tmp_path / "b" / "part-0.parquet")
    os.makedirs(os.path.dirname(path))
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64()), "note": ["n1", "n2"], "price": [1.5, 3.0]}), path)
    cols = [{"id": 1, "name": "id", "type": "long", "nullable": True}, {"id": 2, "name": "note", "type": "string",
                                                                        "nullable": True},
            {"id": 3, "name": "price", "type": "double", "nullable": True}]
    with cat.transaction(author="bridge", message="b") as t:
        t.add("/acme/core/b", {"obj_type": "table", "location": os.path.dirname(path), "format": "parquet",
                               "schema": {"schema_id": 0, "columns": cols}, "partition_by": [],
                               "stats": {"row_count": 2}, "properties": {}})
        t.add("/acme/core/b/f0", {"obj_type": "file", "path": path, "format": "parquet", "row_count": 2,
                                  "size_bytes": os.path.getsize(path), "columns": {}, "schema_id": 0}, leaf=True)


def test_a_rename_over_rest_keeps_the_values_of_files_written_by_name(server, tmp_path):
    """A column of a table the Spark bridge wrote (files by name, each with the schema id it was written
    under) renamed through pyiceberg's update_schema keeps its values for semcat's SQL and for pyiceberg's
    scan; a column dropped and its name taken again reads NULL in the old files. Failed before: the
    commit stored the new schema without the old names, and the renamed column read NULL in every old
    file (the trap generator's held-out Acme seed 2503: a routine load after such a rename was refused,
    'store_id_key is declared non-nullable but contains nulls')."""
    cat = server.catalog
    ice = client(server)
    ice.create_namespace("core")
    _bridge_table(cat, tmp_path)
    t = ice.load_table("core.b")
    with t.update_schema() as u:
        u.rename_column("note", "remark")
    res = cc.run_sql(cat, "select id, remark from acme.core.b order by id", limit=10)
    assert [tuple(r) for r in res.rows] == [(1, "n1"), (2, "n2")]
    t = ice.load_table("core.b")
    assert sorted((r["id"], r["remark"]) for r in t.scan().to_arrow().to_pylist()) == [(1, "n1"), (2, "n2")]
    with t.update_schema() as u:
        u.delete_column("price")
    t = ice.load_table("core.b")
    with t.update_schema() as u:
        u.add_column("price", DoubleType())
    res = cc.run_sql(cat, "select id, remark, price from acme.core.b order by id", limit=10)
    assert [tuple(r) for r in res.rows] == [(1, "n1", None), (2, "n2", None)]
    schema = cat.get("/acme/core/b").value["schema"]
    assert [c.get("previous_names") for c in schema["columns"] if c["name"] == "remark"] == [[{"name": "note",
                                                                                               "until": 1}]]
    assert [d["name"] for d in schema["dropped"]] == ["price"]


def test_parquet_tree_with_nested_columns_reads_through_rest(server, tmp_path):
    """A Parquet tree (files without field ids) with nested and naive-timestamp columns: served
    with stable derived nested ids and a name mapping, so pyiceberg reads every value; the naive
    timestamp is an Iceberg `timestamp` (wall time), not an instant."""
    import pyarrow.parquet as pq
    from pyiceberg.types import TimestampType

    from catalog_core.parquet_import import import_parquet

    rows = _nested_rows([1, 2]).append_column("at", pa.array([dt.datetime(2025, 3, 1, 12), None], pa.timestamp("us")))
    (tmp_path / "tree" / "d=2025-03-01").mkdir(parents=True)
    pq.write_table(rows, tmp_path / "tree" / "d=2025-03-01" / "part-0.parquet")
    client(server).create_namespace("raw")
    import_parquet(server.catalog, str(tmp_path / "tree"), into="acme.raw.pq")
    ice = client(server)
    t = ice.load_table("raw.pq")
    ids = _field_ids(t.schema())
    assert len({i for i, _ in ids}) == len(ids) == 11          # 5 columns + d + 5 nested, all distinct
    assert t.metadata.last_column_id == max(i for i, _ in ids)
    assert isinstance(t.schema().find_field("at").field_type, TimestampType)
    got = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert got[0]["addr"] == {"city": "c1", "zip": "1"} and got[1]["tags"] == ["t2", "x"]
    assert dict(got[0]["attrs"]) == {"k": 1} and got[0]["at"] == dt.datetime(2025, 3, 1, 12) and got[1]["at"] is None
    assert _field_ids(ice.load_table("raw.pq").schema()) == ids


# ---------------------------------------------------------------- every error in the ErrorModel

def _error_model(r, status):
    """The specification's ErrorModel, checked as pyiceberg parses it."""
    from pyiceberg.catalog.rest.response import ErrorResponse

    assert r.status_code == status, (r.status_code, r.text)
    assert r.headers["content-type"].startswith("application/json")
    err = ErrorResponse.model_validate_json(r.text).error
    assert err.code == status and err.type and err.message
    return err


def test_the_servers_own_refusals_under_iceberg_are_the_error_model(server):
    """Refusals the Guard makes before any /iceberg route runs (401, 403 for a read token's write,
    415, 421), unknown routes (404, 405 with an exact Allow) and malformed requests all answer the
    ErrorModel with semcat's message; /v1 keeps semcat's own error body."""
    url = server.url + "/iceberg"
    auth = {"Authorization": f"Bearer {WRITE}"}
    err = _error_model(requests.get(url + "/v1/config?warehouse=acme", timeout=30), 401)
    assert err.type == "NotAuthorizedException" and "token=" in err.message
    err = _error_model(requests.get(url + "/v1/config", timeout=30, headers={"Authorization": "Bearer nope"}), 401)
    assert err.type == "NotAuthorizedException"
    err = _error_model(requests.post(url + "/v1/acme/namespaces", json={"namespace": ["x"]}, timeout=30,
                                     headers={"Authorization": f"Bearer {READ}"}), 403)
    assert err.type == "ForbiddenException" and "'read' token may only read" in err.message
    err = _error_model(requests.post(url + "/v1/acme/namespaces", data=b'{"namespace": ["x"]}', timeout=30,
                                     headers={**auth, "Content-Type": "text/plain"}), 415)
    assert "application/json" in err.message
    err = _error_model(requests.get(url + "/v1/config", timeout=30, headers={**auth, "Host": "evil.example"}), 421)
    assert "evil.example" in err.message
    err = _error_model(requests.get(url + "/v1/acme/namespaces/core/views", timeout=30, headers=auth), 404)
    assert "GET /iceberg/v1/config" in err.message
    r = requests.options(url + "/v1/acme/namespaces/core", timeout=30, headers=auth)
    _error_model(r, 405)
    assert r.headers["Allow"] == "DELETE, GET, HEAD"     # exactly the specification's methods of the path
    err = _error_model(requests.post(url + "/v1/acme/namespaces", data=b"{nope", timeout=30,
                                     headers={**auth, "Content-Type": "application/json"}), 400)
    assert "not valid JSON" in err.message
    # the rest of the server keeps semcat's body
    r = requests.get(server.url + "/v1/nope", timeout=30, headers=auth)
    assert r.status_code == 404 and r.json()["error"] == "NotFoundError"
    r = requests.post(server.url + "/v1/commit", data=b"{}", timeout=30, headers={"Authorization": f"Bearer {READ}",
                                                                               "Content-Type": "application/json"})
    assert r.status_code == 403 and isinstance(r.json()["error"], str)
    # the client-credentials endpoint answers OAuthError, also when the Guard refuses
    r = requests.post(url + "/v1/oauth/tokens", data=b"{}", timeout=30, headers={"Content-Type": "application/json"})
    assert r.status_code == 415 and r.json()["error"] == "invalid_request" and "form" in r.json()["error_description"]


def test_a_read_token_commit_surfaces_semcats_message_in_pyiceberg(server):
    ice = client(server)
    ice.create_namespace("core")
    ice.create_table("core.t", SCHEMA)
    t = client(server, token=READ).load_table("core.t")
    with pytest.raises(ForbiddenError) as exc:
        t.append(rows([1]))
    assert str(exc.value) == ("ForbiddenException: a 'read' token may only read over Iceberg REST: creating, committing, "
                              "renaming and dropping need a token with role 'write'")
    with pytest.raises(ForbiddenError, match="may only read"):
        client(server, token=READ).create_namespace("x")


def test_too_large_and_too_many_requests_are_the_error_model(tmp_path):
    """413 (a body over the server's limit, refused by its Content-Length before it is read) and
    429 (a token over its cap of open requests, with Retry-After) under /iceberg."""
    import socket
    import time

    engine = cc.Catalog.open(str(tmp_path / "data"))
    srv = serve_in_thread(engine, tokens=Tokens({WRITE: "write"}), max_request_bytes=4096,
                          limits={"requests": (1, 8)})
    try:
        url = srv.url + "/iceberg"
        auth = {"Authorization": f"Bearer {WRITE}"}
        err = _error_model(requests.post(url + "/v1/acme/namespaces", json={"namespace": ["x"], "properties": {
            "pad": "x" * 5000}}, timeout=30, headers=auth), 413)
        assert "at most 4096" in err.message
        host, port = srv.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=30) as held:   # an open request: body never sent
            held.sendall((f"POST /iceberg/v1/acme/namespaces HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer "
                          f"{WRITE}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n").encode())
            deadline = time.monotonic() + 30
            while True:   # until the server has taken the held request (bounded)
                r = requests.get(url + "/v1/config?warehouse=acme", timeout=30, headers=auth)
                if r.status_code == 429 or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            err = _error_model(r, 429)
            assert err.type == "TooManyRequestsException" and int(r.headers["Retry-After"]) >= 1
    finally:
        srv.stop()
        engine.close()


@pytest.mark.parametrize("method, path, body, headers", [
    ("POST", "/v1/acme/namespaces/core/register", "NIL", {}),                      # a JSON string, not an object
    ("POST", "/v1/acme/namespaces/core/properties", None, {}),                     # a required body missing
    ("POST", "/v1/acme/namespaces/core/properties", {"updates": None}, {}),
    ("POST", "/v1/acme/namespaces/core/properties", {"updates": {"a": 1}}, {}),
    ("POST", "/v1/acme/namespaces/core/properties", {"removals": ["a", "a"]}, {}),
    ("POST", "/v1/acme/namespaces", {"namespace": ["y"], "properties": {"a": None}}, {}),
    ("POST", "/v1/acme/namespaces/core/tables", {"name": "x", "schema": {"type": "struct", "fields": []},
                                                 "properties": [None, None]}, {}),
    ("POST", "/v1/acme/namespaces/core/tables", {"name": "x", "schema": {"type": "struct", "identifier-field-ids": [],
     "fields": [{"id": 1, "name": "m", "required": False, "initial-default": True,
                 "type": {"type": "map", "key-id": 2, "key": "string", "value-id": 3, "value": {"type": "struct", "fields": []},
                          "value-required": False}}]}}, {}),                        # a default of a nested type: pyiceberg's TypeError
    ("POST", "/v1/acme/namespaces/core/tables/t", {"requirements": [], "updates": [{"action": "set-statistics",
                                                                                  "snapshot-id": 0}]}, {}),
    ("POST", "/v1/acme/transactions/commit", {"table-changes": [{"identifier": {"namespace": ["core"], "name": "t"},
     "requirements": [], "updates": [{"action": "set-statistics", "snapshot-id": 0}]}]}, {}),
    ("GET", "/v1/acme/namespaces?pageSize=0", None, {}),
    ("GET", "/v1/acme/namespaces/core/tables?pageSize=x", None, {}),
    ("GET", "/v1/acme/namespaces/core/tables/t?snapshots=AAA", None, {}),
    ("DELETE", "/v1/acme/namespaces/core/tables/t?purgeRequested=maybe", None, {}),
    ("GET", "/v1/acme/namespaces/core/tables/t", None, {"X-Iceberg-Access-Delegation": "telepathy"}),
    ("POST", "/v1/acme/namespaces", {"namespace": ["z"]}, {"Idempotency-Key": "k-1"}),
])
def test_requests_outside_the_specification_are_400(server, method, path, body, headers):
    """What schemathesis found against the specification: each of these was a 500 or was accepted;
    each is a 400 BadRequestException naming the problem, and nothing was written."""
    ice = client(server)
    ice.create_namespace("core")
    ice.create_table("core.t", SCHEMA)
    vid = server.catalog.latest_vid
    kw = {"json": body} if body is not None else {}
    r = requests.request(method, server.url + "/iceberg" + path, timeout=30,
                         headers={"Authorization": f"Bearer {WRITE}", **headers}, **kw)
    err = _error_model(r, 400)
    assert err.type == "BadRequestException"
    assert server.catalog.latest_vid == vid


def test_specification_details_schemathesis_checks(server):
    """HEAD errors carry the JSON content type the specification documents (no body); an empty
    transaction commits nothing (204); a valid access-delegation header is accepted."""
    ice = client(server)
    ice.create_namespace("core")
    ice.create_table("core.t", SCHEMA)
    auth = {"Authorization": f"Bearer {WRITE}"}
    for path in ("/v1/acme/namespaces/nope", "/v1/acme/namespaces/core/tables/nope"):
        r = requests.head(server.url + "/iceberg" + path, timeout=30, headers=auth)
        assert r.status_code == 404 and r.headers["content-type"].startswith("application/json") and not r.content
    r = requests.head(server.url + "/iceberg/v1/acme/namespaces/core/tables/t", timeout=30, headers=auth)
    assert r.status_code == 204
    vid = server.catalog.latest_vid
    r = requests.post(server.url + "/iceberg/v1/acme/transactions/commit", json={"table-changes": []}, timeout=30,
                      headers=auth)
    assert r.status_code == 204 and server.catalog.latest_vid == vid
    r = requests.get(server.url + "/iceberg/v1/acme/namespaces/core/tables/t", timeout=30,
                     headers={**auth, "X-Iceberg-Access-Delegation": "vended-credentials,remote-signing"})
    assert r.status_code == 200 and r.json()["metadata"]["table-uuid"]


def test_a_commit_time_is_taken_only_on_a_server_whose_operator_allows_it(server, tmp_path, monkeypatch):
    """`X-Semcat-Commit-Time` backdates a commit only where the operator started the server with
    --iceberg-commit-time (SEMCAT_ICEBERG_COMMIT_TIME=1); elsewhere it is refused (400), never ignored,
    and nothing is written. A time before the latest commit's is refused too (commit times never go back)."""
    c = client(server)
    c.create_namespace("core")
    t = c.create_table("core.timed", SCHEMA, partition_spec=SPEC)
    before = server.catalog.latest_vid
    late = load_catalog("semcat-timed", type="rest", uri=server.url + "/iceberg", warehouse="acme", token=WRITE,
                        **{"header.X-Semcat-Commit-Time": "2030-01-01T00:00:00Z"})
    with pytest.raises(BadRequestError, match="does not take commit times"):
        late.load_table("core.timed").append(rows([1]))
    assert server.catalog.latest_vid == before
    t.append(rows([2]))                                     # without the header: the clock, as before

    monkeypatch.setenv("SEMCAT_ICEBERG_COMMIT_TIME", "1")
    engine = cc.Catalog.open(str(tmp_path / "data2"))
    srv = serve_in_thread(engine, tokens=Tokens({WRITE: "write"}))
    try:
        c2 = client(srv)
        c2.create_namespace("core")
        c2.create_table("core.timed", SCHEMA, partition_spec=SPEC)
        at = engine.commits(limit=1)[0].time + 3600
        timed = load_catalog("semcat-timed-2", type="rest", uri=srv.url + "/iceberg", warehouse="acme", token=WRITE,
                             **{"header.X-Semcat-Commit-Time": repr(at)})
        timed.load_table("core.timed").append(rows([3]))
        assert engine.commits(limit=1)[0].time == at
        with pytest.raises(BadRequestError, match="earlier than the latest commit"):
            load_catalog("semcat-timed-3", type="rest", uri=srv.url + "/iceberg", warehouse="acme", token=WRITE,
                         **{"header.X-Semcat-Commit-Time": repr(at - 60)}).load_table("core.timed").append(rows([4]))
        with pytest.raises(BadRequestError, match="not seconds since the epoch"):
            load_catalog("semcat-timed-4", type="rest", uri=srv.url + "/iceberg", warehouse="acme", token=WRITE,
                         **{"header.X-Semcat-Commit-Time": "yesterday"}).load_table("core.timed").append(rows([5]))
    finally:
        srv.stop()
        engine.close()
