"""Writes: file stats equal the data, table/partition stats equal the sum over files after
appends and overwrites, commit metadata, time travel reads, and the Parquet layout."""

from __future__ import annotations

import os

import pytest

from tests.helpers import assert_stats_consistent, data_truth, parquet_files


def orders(spark, day: str, n: int = 60, start: int = 0):
    return spark.sql(f"""
        select id, cast(id % 7 as int) as store, date'{day}' as d,
               case when id % 5 = 0 then null else cast(id * 1.5 as double) end as amount,
               concat('c', cast(id % 11 as string)) as customer,
               cast(id as decimal(10, 2)) as price,
               timestamp'{day} 08:00:00' + make_interval(0, 0, 0, 0, 0, 0, id) as ts
        from range({start}, {start + n})""")


@pytest.mark.e2e  # the Spark bridge surface (one JVM start, ~20-40 s); the other Spark tests are slow
def test_file_stats_equal_parquet_data(bridge, spark):
    res = bridge.write(orders(spark, "2001-06-01").repartition(3), "wh.sales.orders", partition_by=["d"],
                       author="etl", message="day 1")
    files = bridge.catalog.plan_files("wh.sales.orders")
    assert res.vid == bridge.catalog.latest_vid and res.files_added == len(files) == 3
    for f in files:
        truth = data_truth(f.value["path"])
        assert f.value["row_count"] == truth["row_count"]
        assert f.value["size_bytes"] == truth["size_bytes"]
        assert "d" not in truth["columns"]  # the partition column lives in the directory name
        assert f.value["columns"] == truth["columns"]
        assert f.value["columns"]["ts"]["min"].endswith("+00:00")
        assert f.path.startswith("/wh/sales/orders/d=2001-06-01/")
        assert f.value["path"].startswith(os.path.join(bridge.catalog.warehouse, "wh/sales/orders/d=2001-06-01/"))


def test_append_then_dynamic_overwrite_keeps_stats_exact(bridge, spark):
    cat = bridge.catalog
    for i, day in enumerate(["2001-06-01", "2001-06-02", "2001-06-03"]):
        bridge.write(orders(spark, day, n=40 + 10 * i), "wh.sales.orders", partition_by=["d"], message=day)
    bridge.write(orders(spark, "2001-06-02", n=5, start=1000), "wh.sales.orders", message="more day 2")
    table = assert_stats_consistent(cat, "wh.sales.orders")
    assert table["stats"]["row_count"] == 40 + 50 + 60 + 5
    before = cat.latest_vid

    res = bridge.write(orders(spark, "2001-06-02", n=3, start=5000).union(orders(spark, "2001-06-04", n=4)),
                       "wh.sales.orders", mode="overwrite", message="restate day 2, add day 4")
    table = assert_stats_consistent(cat, "wh.sales.orders")
    assert res.tables[0].files_removed >= 2
    rows = {r["d"].isoformat(): r["n"] for r in bridge.read("wh.sales.orders").groupBy("d").count()
            .withColumnRenamed("count", "n").collect()}
    assert rows == {"2001-06-01": 40, "2001-06-02": 3, "2001-06-03": 60, "2001-06-04": 4}
    assert table["stats"]["row_count"] == 107
    assert table["stats"]["columns"]["id"]["max"] == 5002  # the overwritten max (1004) is gone
    # time travel: the old snapshot still reads the old rows, from files still on disk
    assert bridge.read("wh.sales.orders", snapshot=before).count() == 155
    assert bridge.read("wh.sales.orders", snapshot=before, where='d = "2001-06-02"').count() == 55


def test_unpartitioned_overwrite(bridge, spark):
    cat = bridge.catalog
    bridge.write(spark.range(10), "wh.ref.nums")
    bridge.write(spark.range(10, 15), "wh.ref.nums")
    bridge.write(spark.range(100, 103), "wh.ref.nums", mode="overwrite")
    table = assert_stats_consistent(cat, "wh.ref.nums")
    assert table["stats"]["row_count"] == 3 and table["stats"]["columns"]["id"] == {
        "min": 100, "max": 102, "null_count": 0}
    assert sorted(r.id for r in bridge.read("wh.ref.nums").collect()) == [100, 101, 102]


def test_commit_meta_records_spark_app_and_job(bridge, spark):
    sc = spark.sparkContext
    sc.setJobDescription("nightly orders load")
    try:
        bridge.write(orders(spark, "2001-06-01", n=5), "wh.sales.orders", partition_by="d", author="etl:orders",
                     message="load 06-01")
    finally:
        sc.setLocalProperty("spark.job.description", None)
    commit = bridge.catalog.commits()[-1]
    assert commit.author == "etl:orders" and commit.message == "load 06-01"
    assert commit.meta["spark_app_id"] == sc.applicationId
    assert commit.meta["spark_job"] == "nightly orders load"
    assert commit.meta["writes"][0]["table"] == "wh.sales.orders" and commit.meta["writes"][0]["rows"] == 5


def test_multi_table_transaction_is_one_commit(bridge, spark):
    cat = bridge.catalog
    before = cat.latest_vid
    with bridge.transaction(author="etl", message="orders + stores") as tx:
        tx.write(orders(spark, "2001-06-01", n=8), "wh.sales.orders", partition_by=["d"])
        tx.write(spark.sql("select cast(id as int) as store, concat('s', id) as name from range(7)"),
                 "wh.ref.stores")
        tx.write(orders(spark, "2001-06-02", n=2), "wh.sales.orders")
    assert tx.result.vid == before + 1 == cat.latest_vid
    assert len(cat.commits(since=before + 1)) == 1
    assert {t.table for t in tx.result.tables} == {"wh.sales.orders", "wh.ref.stores"}
    assert cat.get("/wh/sales/orders").value["stats"]["row_count"] == 10
    assert cat.get("/wh/ref/stores").value["stats"]["row_count"] == 7
    assert_stats_consistent(cat, "wh.sales.orders")


def test_failed_transaction_block_leaves_nothing(bridge, spark):
    cat = bridge.catalog
    bridge.write(orders(spark, "2001-06-01", n=5), "wh.sales.orders", partition_by=["d"])
    before_files, before_vid = parquet_files(cat.warehouse), cat.latest_vid
    with pytest.raises(RuntimeError, match="boom"):
        with bridge.transaction(message="doomed") as tx:
            tx.write(orders(spark, "2001-06-02", n=5), "wh.sales.orders")
            tx.write(spark.range(3), "wh.ref.other")
            raise RuntimeError("boom")
    assert parquet_files(cat.warehouse) == before_files
    assert cat.latest_vid == before_vid and cat.get("/wh/ref") is None


def test_overwrite_must_be_the_only_write_of_its_table(bridge, spark):
    with pytest.raises(Exception, match="only write in a transaction"):
        with bridge.transaction() as tx:
            tx.write(spark.range(3), "wh.ref.nums")
            tx.write(spark.range(3), "wh.ref.nums", mode="overwrite")
    assert parquet_files(bridge.catalog.warehouse) == set()


def test_bad_input_is_refused_before_writing(bridge, spark):
    with pytest.raises(Exception, match="mode 'upsert'"):
        bridge.write(spark.range(3), "wh.ref.nums", mode="upsert")
    with pytest.raises(Exception, match="catalog.namespace.table"):
        bridge.write(spark.range(3), "nums")
    with pytest.raises(Exception, match="partition column 'nope'"):
        bridge.write(spark.range(3), "wh.ref.nums", partition_by=["nope"])
    assert parquet_files(bridge.catalog.warehouse) == set() and bridge.catalog.latest_vid == 0


def test_empty_dataframe_creates_table_without_files(bridge, spark):
    res = bridge.write(spark.range(0), "wh.ref.empty")
    assert res.files_added == 0
    table = bridge.catalog.get("/wh/ref/empty").value
    assert table["stats"]["row_count"] == 0 and table["schema"]["columns"][0]["name"] == "id"
    assert bridge.read("wh.ref.empty").count() == 0
    assert parquet_files(bridge.catalog.warehouse) == set()
