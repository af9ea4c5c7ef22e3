"""Schema evolution through the bridge, and compaction."""

from __future__ import annotations

import os

import pytest

import catalog_core as cc
from spark_bridge import Bridge, SchemaEvolutionError
from tests.helpers import assert_stats_consistent, data_truth, parquet_files


def test_new_columns_get_new_ids_and_old_rows_read_null(bridge, spark):
    cat = bridge.catalog
    bridge.write(spark.sql("select id, cast(id as int) as qty from range(4)"), "wh.sales.items")
    v1 = cat.get("/wh/sales/items").value["schema"]
    bridge.write(spark.sql("select 'new' as note, id, cast(id as int) as qty from range(10, 12)"), "wh.sales.items")
    v2 = cat.get("/wh/sales/items").value["schema"]
    assert v1["schema_id"] == 0 and v2["schema_id"] == 1
    assert [(c["id"], c["name"]) for c in v2["columns"]] == [(1, "id"), (2, "qty"), (3, "note")]
    rows = {r.id: r.note for r in bridge.read("wh.sales.items").collect()}
    assert rows == {0: None, 1: None, 2: None, 3: None, 10: "new", 11: "new"}
    assert bridge.read("wh.sales.items").columns == ["id", "qty", "note"]
    assert_stats_consistent(cat, "wh.sales.items")


def test_widening_is_allowed_and_narrower_input_is_cast(bridge, spark):
    cat = bridge.catalog
    bridge.write(spark.sql("select cast(id as int) as n, cast(id as float) as x from range(3)"), "wh.ref.w")
    bridge.write(spark.sql("select id as n, cast(id as double) as x from range(5, 6)"), "wh.ref.w")
    schema = cat.get("/wh/ref/w").value["schema"]
    assert schema["schema_id"] == 1
    assert {c["name"]: c["type"] for c in schema["columns"]} == {"n": "bigint", "x": "double"}
    bridge.write(spark.sql("select cast(id as smallint) as n, cast(id as float) as x from range(7, 8)"), "wh.ref.w")
    assert cat.get("/wh/ref/w").value["schema"]["schema_id"] == 1  # cast up, no schema change
    df = bridge.read("wh.ref.w")
    assert dict(df.dtypes) == {"n": "bigint", "x": "double"}
    assert sorted(r.n for r in df.collect()) == [0, 1, 2, 5, 7]


def test_incompatible_change_is_refused_and_writes_nothing(bridge, spark):
    cat = bridge.catalog
    bridge.write(spark.sql("select id, cast(id as int) as qty from range(3)"), "wh.sales.items")
    files, vid = parquet_files(cat.warehouse), cat.latest_vid
    with pytest.raises(SchemaEvolutionError, match="'qty' of wh.sales.items is int, the DataFrame has string"):
        bridge.write(spark.sql("select id, 'many' as qty from range(3)"), "wh.sales.items")
    with pytest.raises(SchemaEvolutionError, match="partitioned by"):
        bridge.write(spark.sql("select id, cast(id as int) as qty from range(3)"), "wh.sales.items",
                     partition_by=["qty"])
    assert parquet_files(cat.warehouse) == files and cat.latest_vid == vid


def _small_loads(bridge, spark, loads=3):
    for i in range(loads):
        df = spark.sql(f"""select id, date_add(date'2001-06-01', cast(id % 2 as int)) as d,
                                  case when id % 4 = 0 then null else id * 2 end as v
                           from range({i * 100}, {i * 100 + 40})""").repartition(2)
        bridge.write(df, "wh.sales.orders", partition_by=["d"], message=f"load {i}")


def test_compaction_rewrites_small_files_and_keeps_stats(bridge, spark):
    cat = bridge.catalog
    _small_loads(bridge, spark)
    before_vid = cat.latest_vid
    before = cat.get("/wh/sales/orders").value["stats"]
    rows_before = sorted(tuple(r) for r in bridge.read("wh.sales.orders").collect())
    res = bridge.compact("wh.sales.orders", target_file_mb=1)
    assert res.vid == cat.latest_vid and res.tables[0].partitions == 2
    after = assert_stats_consistent(cat, "wh.sales.orders")["stats"]
    assert after["file_count"] == 2 < before["file_count"] == res.tables[0].files_removed
    assert after["row_count"] == before["row_count"] and after["columns"] == before["columns"]
    assert sorted(tuple(r) for r in bridge.read("wh.sales.orders").collect()) == rows_before
    for f in cat.plan_files("wh.sales.orders"):
        assert f.value["columns"] == data_truth(f.value["path"])["columns"]
    # the replaced files stay on disk for time travel
    assert sorted(tuple(r) for r in bridge.read("wh.sales.orders", snapshot=before_vid).collect()) == rows_before
    assert bridge.compact("wh.sales.orders", target_file_mb=1).vid is None  # nothing left to do


def test_compaction_after_a_rename_keeps_the_stats_under_the_current_names(bridge, spark):
    """Files written before a rename record their column statistics under the old name; compacting them
    takes their statistics out under the column's current name (failed before: the removed files' stats
    were subtracted under the old name, leaving `v` with a negative null count beside `v_new`'s doubled
    one: an independent tester's TPC-DS store_sales). The table's stats after equal those before, renamed."""
    cat = bridge.catalog
    _small_loads(bridge, spark)
    bridge.alter("wh.sales.orders", rename={"v": "v_new"})
    before = cat.get("/wh/sales/orders").value["stats"]
    assert "v" not in before["columns"] and "v_new" in before["columns"]
    res = bridge.compact("wh.sales.orders", target_file_mb=1)
    assert res.tables[0].partitions == 2
    after = assert_stats_consistent(cat, "wh.sales.orders")["stats"]
    assert after["columns"] == before["columns"] and after["row_count"] == before["row_count"]
    nulls = sum(1 for r in bridge.read("wh.sales.orders").collect() if r.v_new is None)
    assert after["columns"]["v_new"]["null_count"] == nulls


def test_compaction_takes_a_backdated_commit_time(bridge, spark):
    """`compact(..., time=)` backdates the commit as `write(..., time=)` does (failed before: no `time`, so two
    independent testers building a simulated history patched the bridge's commit); a time earlier than the
    latest commit's is refused with what to do, and nothing is compacted."""
    cat = bridge.catalog
    for i, t in enumerate(("2031-01-01T06:00:00Z", "2031-01-02T06:00:00Z")):
        bridge.write(spark.sql(f"select id from range({10 * i}, {10 * i + 5})").repartition(2), "wh.ref.small", time=t)
    vid = cat.latest_vid
    with pytest.raises(cc.InvalidValueError, match="earlier than the latest commit"):
        bridge.compact("wh.ref.small", target_file_mb=1, time="2031-01-01T07:00:00Z")
    assert cat.latest_vid == vid
    res = bridge.compact("wh.ref.small", target_file_mb=1, time="2031-01-03T07:00:00Z")
    assert res.vid == cat.latest_vid
    assert cat.commits(since=res.vid)[0].time == pytest.approx(cc.model.parse_time("2031-01-03T07:00:00Z"))


def test_compaction_racing_an_overwrite_drops_that_partition(spark, data_dir):
    cat = cc.Catalog.open(data_dir)
    compactor, writer = Bridge(spark, cat), Bridge(spark, cat)
    _small_loads(compactor, spark)

    def overwrite_day_one(attempt, _txn):
        if attempt == 1:
            writer.write(spark.sql("select 7 as id, date'2001-06-01' as d, 1 as v"), "wh.sales.orders",
                         mode="overwrite", message="restate day 1")
    compactor.before_commit = overwrite_day_one
    res = compactor.compact("wh.sales.orders", target_file_mb=1)
    summary = res.tables[0]
    assert res.attempts == 2 and summary.partitions == 1 and summary.dropped_files
    assert not any(os.path.exists(p) for p in summary.dropped_files)
    day1 = [r for r in compactor.read("wh.sales.orders").collect() if r.d.isoformat() == "2001-06-01"]
    assert [(r.id, r.v) for r in day1] == [(7, 1)]
    assert len(cat.plan_files("wh.sales.orders", where='d = "2001-06-02"')) == 1
    assert assert_stats_consistent(cat, "wh.sales.orders")["stats"]["row_count"] == 1 + 60
    cat.close()
