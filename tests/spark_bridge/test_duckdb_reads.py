"""DuckDB reading what the bridge wrote the same way Spark does; footers read in the driver."""

from __future__ import annotations

import json
import os

import pytest

import catalog_core as cc
from tests.helpers import assert_stats_consistent


def test_duckdb_reads_the_same_rows_as_spark(bridge, spark):
    df = spark.sql("""select id, date_add(date'2001-06-01', cast(id % 3 as int)) as d, cast(id % 4 as int) as k,
                             case when id % 5 = 0 then null else concat('v', id) end as s from range(30)""")
    bridge.write(df, "wh.sales.t", partition_by=["d", "k"])
    first = bridge.catalog.latest_vid
    bridge.write(df.where("id < 10"), "wh.sales.t", mode="overwrite")
    cat = bridge.catalog
    assert_stats_consistent(cat, "wh.sales.t")
    for snap in (first, None):
        rows = bridge.read("wh.sales.t", snapshot=snap).collect()
        spark_rows = sorted((r.id, r.d.isoformat(), r.k, r.s) for r in rows)
        duck = cc.run_sql(cat, "select id, cast(d as varchar), k, s from wh.sales.t order by id", snapshot=snap)
        assert sorted(tuple(r) for r in duck.rows) == spark_rows
    # dynamic overwrite: (d, k) partitions present in ids < 10 were replaced, the other two kept
    kept = [i for i in range(10, 30) if (i % 3, i % 4) not in {(j % 3, j % 4) for j in range(10)}]
    assert [r[0] for r in spark_rows] == list(range(10)) + kept and len(kept) == 4


def test_footers_read_in_the_driver_give_the_same_leaves(bridge, spark):
    from spark_bridge import Bridge

    df = spark.sql("""select id, date_add(date'2001-06-01', cast(id % 3 as int)) as d,
                             case when id % 4 = 0 then null else id * 1.5 end as x from range(40)""")
    local = Bridge(spark, bridge.catalog, footers_on="driver")
    bridge.write(df, "wh.sales.a", partition_by=["d"])
    local.write(df, "wh.sales.b", partition_by=["d"])
    cat = bridge.catalog

    def leaves(table):
        return sorted(json.dumps([f.value["row_count"], f.value["columns"]], sort_keys=True)
                      for f in cat.plan_files(table))

    assert leaves("wh.sales.a") == leaves("wh.sales.b") and len(leaves("wh.sales.b")) >= 3  # a file per task and day
    assert all(os.path.exists(f.value["path"].removeprefix("file:")) for f in cat.plan_files("wh.sales.b"))
    assert cat.get("/wh/sales/b").value["stats"]["row_count"] == 40
    with pytest.raises(cc.errors.InvalidValueError, match="footers_on"):
        Bridge(spark, cat, footers_on="nowhere")
