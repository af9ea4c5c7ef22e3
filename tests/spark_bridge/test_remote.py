"""The bridge over HTTP: `Bridge(spark, url, token=...)` against a real uvicorn server."""

from __future__ import annotations

import pytest

import catalog_core as cc
from spark_bridge import Bridge, BridgeError
from tests.helpers import assert_stats_consistent, parquet_files

TOKEN = "spark-writer-token"


@pytest.fixture
def served(data_dir):
    from mcp_server.http.auth import Tokens
    from mcp_server.http.server import serve_in_thread

    engine = cc.Catalog.open(data_dir)
    with serve_in_thread(engine, tokens=Tokens({TOKEN: "write"})) as handle:
        yield engine, handle.url
    engine.close()


def test_write_overwrite_read_and_compact_over_http(spark, served):
    engine, url = served
    with pytest.raises(BridgeError, match="properties.warehouse"):
        Bridge(spark, url, token=TOKEN).write(spark.range(3), "wh.ref.nums")
    bridge = Bridge(spark, url, token=TOKEN, warehouse=engine.warehouse)
    df = spark.sql("select id, date_add(date'2001-06-01', cast(id % 2 as int)) as d from range(40)").repartition(2)
    bridge.write(df, "wh.sales.orders", partition_by=["d"], author="remote-etl", message="load")
    bridge.write(df, "wh.sales.orders", message="load again")
    res = bridge.write(df.where("id < 4"), "wh.sales.orders", mode="overwrite", message="restate")
    assert res.vid == engine.latest_vid
    assert engine.commits()[-1].meta["spark_app_id"] == spark.sparkContext.applicationId
    assert bridge.read("wh.sales.orders").count() == 4
    assert bridge.read("wh.sales.orders", snapshot=res.vid - 1).count() == 80
    bridge.write(df.where("id >= 4"), "wh.sales.orders")
    compacted = bridge.compact("wh.sales.orders", target_file_mb=1)
    assert compacted.vid == engine.latest_vid and compacted.tables[0].partitions == 2
    assert assert_stats_consistent(engine, "wh.sales.orders")["stats"]["row_count"] == 40
    assert {f.value["path"] for f in engine.plan_files("wh.sales.orders")} <= parquet_files(engine.warehouse)
