"""Schema changes a lake's history needs: a full overwrite that replaces the schema
(`schema="replace"`), renames and drops that keep column ids (`bridge.alter`), and backdated
commits (`time=`). Readers at every snapshot (DuckDB views, `bridge.read`) see the schema of
that snapshot, and files written before a rename are read under the new name."""

from __future__ import annotations

import pytest

import catalog_core as cc
from catalog_core.errors import InvalidValueError
from spark_bridge import SchemaEvolutionError
from tests.helpers import assert_stats_consistent, parquet_files


def _sql(cat, sql, vid):
    return [tuple(r) for r in cc.run_sql(cat, sql, snapshot=vid).rows]


def _ids(cat, path, vid=None):
    return [(c["id"], c["name"]) for c in cat.get(path, vid=vid).value["schema"]["columns"]]


def test_replace_drops_and_adds_columns_and_old_snapshots_keep_theirs(bridge, spark):
    cat = bridge.catalog
    bridge.write(spark.sql("""select id, date_add(date'2024-12-01', cast(id % 3 as int)) as d,
                                     id * 100 as amount_cents, 'x' as note from range(6)"""),
                 "acme.mart.rev", partition_by=["d"], time="2024-12-02T00:00:00Z")
    v1 = cat.latest_vid
    assert cat.commits()[-1].time == pytest.approx(cc.model.parse_time("2024-12-02T00:00:00Z"))
    res = bridge.write(spark.sql("""select id, date_add(date'2024-12-01', cast(id % 2 as int)) as d,
                                           cast(id as decimal(14,2)) as amount_usd from range(4)"""),
                       "acme.mart.rev", mode="overwrite", schema="replace", time="2024-12-20T00:00:00Z")
    v2 = res.vid
    t = cat.get("/acme/mart/rev", vid=v2).value
    assert t["schema"]["schema_id"] == 1
    assert [(c["id"], c["name"]) for c in t["schema"]["columns"]] == [(1, "id"), (2, "d"), (5, "amount_usd")]
    assert {(d["id"], d["name"]) for d in t["schema"]["dropped"]} == {(3, "amount_cents"), (4, "note")}
    # every old file left, and the partition the new data does not fill is gone
    assert sorted(o.obj_id for o in cat.children("/acme/mart/rev", vid=v2)) == ["d=2024-12-01", "d=2024-12-02"]
    assert _sql(cat, "select count(*), sum(amount_usd) from acme.mart.rev", v2) == [(4, 6)]
    assert _sql(cat, "select count(*), sum(amount_cents) from acme.mart.rev", v1) == [(6, 1500)]
    with pytest.raises(cc.errors.CatalogError, match="amount_cents"):
        _sql(cat, "select sum(amount_cents) from acme.mart.rev", v2)
    assert sorted(r.amount_usd for r in bridge.read("acme.mart.rev").collect()) == [0, 1, 2, 3]
    assert bridge.read("acme.mart.rev", snapshot=v1).columns == ["id", "d", "amount_cents", "note"]
    assert_stats_consistent(cat, "acme.mart.rev")
    assert cat.get("/acme/mart/rev").value["stats"]["row_count"] == 4


def test_alter_renames_and_drops_keep_ids_and_old_files_read_under_new_names(bridge, spark):
    cat = bridge.catalog
    bridge.write(spark.sql("select id, id * 10 as cust_id, 'a' as junk from range(3)"), "acme.core.s")
    v1 = cat.latest_vid
    v2 = bridge.alter("acme.core.s", rename={"cust_id": "customer_id"}, drop=["junk"], author="etl")
    assert _ids(cat, "/acme/core/s", v2) == [(1, "id"), (2, "customer_id")]
    assert cat.get("/acme/core/s", vid=v2).value["schema"]["schema_id"] == 1
    assert _ids(cat, "/acme/core/s", v1) == [(1, "id"), (2, "cust_id"), (3, "junk")]
    # old files read by their old names at the new snapshot, by the old schema at the old one
    assert _sql(cat, "select sum(customer_id) from acme.core.s", v2) == [(30,)]
    assert _sql(cat, "select sum(cust_id), min(junk) from acme.core.s", v1) == [(30, "a")]
    # a new column that reuses a dropped name is not the old column: old files hold no value for it
    bridge.write(spark.sql("select id, id * 10 as customer_id, 'b' as junk from range(10, 12)"), "acme.core.s")
    assert _ids(cat, "/acme/core/s") == [(1, "id"), (2, "customer_id"), (4, "junk")]
    rows = _sql(cat, "select id, customer_id, junk from acme.core.s order by id", None)
    assert rows == [(0, 0, None), (1, 10, None), (2, 20, None), (10, 100, "b"), (11, 110, "b")]
    assert sorted(tuple(r) for r in bridge.read("acme.core.s").collect()) == rows
    assert cat.get("/acme/core/s").value["stats"]["columns"]["customer_id"]["max"] == 110


def test_bad_schema_changes_are_refused_and_change_nothing(bridge, spark):
    cat = bridge.catalog
    bridge.write(spark.sql("select id, cast(id % 2 as int) as p, id as v from range(4)"), "acme.core.t",
                 partition_by=["p"])
    vid, files = cat.latest_vid, parquet_files(cat.warehouse)
    with pytest.raises(InvalidValueError, match="mode='overwrite'"):
        bridge.write(spark.sql("select id, cast(1 as int) as p from range(2)"), "acme.core.t", schema="replace")
    with pytest.raises(InvalidValueError, match="schema 'swap'"):
        bridge.write(spark.sql("select id, cast(1 as int) as p from range(2)"), "acme.core.t", mode="overwrite",
                     schema="swap")
    with pytest.raises(SchemaEvolutionError, match="partition column"):
        bridge.alter("acme.core.t", rename={"p": "q"})
    with pytest.raises(SchemaEvolutionError, match="no such column"):
        bridge.alter("acme.core.t", drop=["nope"])
    with pytest.raises(SchemaEvolutionError, match="duplicate columns"):
        bridge.alter("acme.core.t", rename={"v": "id"})
    with pytest.raises(InvalidValueError, match="nothing to alter"):
        bridge.alter("acme.core.t")
    with pytest.raises(InvalidValueError, match="time must be"):
        bridge.write(spark.sql("select id, cast(1 as int) as p, id as v from range(2)"), "acme.core.t", time="soon")
    assert cat.latest_vid == vid and parquet_files(cat.warehouse) == files
