"""Iceberg REST details pyiceberg's own catalog tests check (tests/mcp_server/test_iceberg_pyiceberg_suite.py
runs them): metadata files named `NNNNN-<uuid>.metadata.json` with version 0 as created and one more
per change, and a rename that keeps the table's metadata location, snapshots and data."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyiceberg.catalog import MetastoreCatalog, load_catalog
from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

import catalog_core as cc
from mcp_server.http.server import serve_in_thread

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))


@pytest.fixture
def ice(tmp_path):
    engine = cc.Catalog.open(str(tmp_path / "data"))
    srv = serve_in_thread(engine)
    try:
        yield load_catalog("semcat-conf", type="rest", uri=srv.url + "/iceberg", warehouse="acme")
    finally:
        srv.stop()
        engine.close()


def test_metadata_file_names_carry_the_version(ice):
    ice.create_namespace("core")
    t = ice.create_table("core.t", SCHEMA)
    assert MetastoreCatalog._parse_metadata_version(t.metadata_location) == 0
    t.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    t = ice.load_table("core.t")
    assert MetastoreCatalog._parse_metadata_version(t.metadata_location) == 1
    with t.transaction() as tx:
        tx.set_properties(owner="x")
    assert MetastoreCatalog._parse_metadata_version(ice.load_table("core.t").metadata_location) == 2


def test_a_rename_keeps_the_metadata_location_and_history(ice):
    ice.create_namespace("core")
    ice.create_namespace("mart")
    t = ice.create_table("core.t", SCHEMA)
    for i in range(3):
        t.append(pa.table({"id": pa.array([i], pa.int64())}))
    t = ice.load_table("core.t")
    ice.rename_table("core.t", "mart.renamed")
    r = ice.load_table("mart.renamed")
    assert r.metadata_location == t.metadata_location
    assert [s.snapshot_id for s in r.snapshots()] == [s.snapshot_id for s in t.snapshots()]
    assert sorted(r.scan().to_arrow().column("id").to_pylist()) == [0, 1, 2]
    first = r.snapshots()[0].snapshot_id
    assert r.scan(snapshot_id=first).to_arrow().column("id").to_pylist() == [0]
    with pytest.raises(NoSuchTableError):
        ice.load_table("core.t")
    r.append(pa.table({"id": pa.array([9], pa.int64())}))       # and it goes on from there
    r = ice.load_table("mart.renamed")
    assert len(r.snapshots()) == 4 and sorted(r.scan().to_arrow().column("id").to_pylist()) == [0, 1, 2, 9]
    assert MetastoreCatalog._parse_metadata_version(r.metadata_location) == 4


def test_partition_spec_evolution_keeps_every_spec_and_never_reuses_a_field_id(ice):
    from pyiceberg.exceptions import CommitFailedException
    from pyiceberg.transforms import BucketTransform

    ice.create_namespace("core")
    t = ice.create_table("core.t", Schema(NestedField(1, "id", LongType(), required=False),
                                          NestedField(2, "k", LongType(), required=False)))
    with t.update_spec() as u:
        u.add_field("id", BucketTransform(16), "shard")
    t = ice.load_table("core.t")
    assert t.spec().spec_id == 1 and [(f.field_id, f.name) for f in t.spec().fields] == [(1000, "shard")]
    stale = ice.load_table("core.t").update_spec().add_identity("k")
    with t.update_spec() as u:
        u.remove_field("shard")
    t = ice.load_table("core.t")
    assert t.spec().fields == () and t.metadata.last_partition_id == 1000    # not lowered to 999
    assert [s.spec_id for s in t.metadata.partition_specs] == [0, 1] and t.spec().spec_id == 0   # back to spec 0
    with pytest.raises(CommitFailedException):                                 # its default spec changed
        stale.commit()
    with t.update_spec() as u:
        u.add_identity("k")
    t = ice.load_table("core.t")
    assert [(f.field_id, f.name) for f in t.spec().fields] == [(1001, "k")]   # 1000 is not reused
    t.append(pa.table({"id": pa.array([1, 2], pa.int64()), "k": pa.array([7, 8], pa.int64())}))
    t = ice.load_table("core.t")
    assert sorted(t.scan().to_arrow().column("k").to_pylist()) == [7, 8]
    assert {f.file.spec_id for f in t.scan().plan_files()} == {t.spec().spec_id}
