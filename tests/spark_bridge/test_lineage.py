"""Lineage recorded by the bridge: a job's reads through `read` (their table and pinned vid) and its
declared inputs land on the written table's value in the same commit, time-travellable."""

from __future__ import annotations

import pytest

from catalog_core.lake import Lineage, table_path


def _lineage(cat, name, vid=None):
    obj = cat.get(table_path(name), vid=vid)
    return Lineage.from_raw(obj.value)


def orders(spark, n=20, start=0):
    return spark.sql(f"select id, cast(id % 3 as int) as store, cast(id * 10 as bigint) as cents "
                     f"from range({start}, {start + n})")


@pytest.mark.slow
def test_reads_and_declared_inputs_are_recorded_with_the_commit(bridge, spark):
    cat = bridge.catalog
    v1 = bridge.write(orders(spark), "wh.core.orders", message="load 1").vid
    bridge.write(spark.sql("select 1 as store, 'north' as region"), "wh.core.stores", message="stores")
    assert _lineage(cat, "wh.core.orders") is None  # an ingest read nothing through the bridge

    # the job reads orders pinned at v1 and stores at the latest, and declares one more input
    src = bridge.read("wh.core.orders", snapshot=v1)
    stores = bridge.read("wh.core.stores")
    v_stores = cat.latest_vid
    assert bridge.reads() == {"wh.core.orders": v1, "wh.core.stores": v_stores}
    mart = src.groupBy("store").sum("cents").withColumnRenamed("sum(cents)", "cents").join(stores, "store", "left")
    res = bridge.write(mart, "wh.mart.by_store", mode="overwrite", message="build mart",
                       inputs={"wh.raw.feed": 1})
    lin = _lineage(cat, "wh.mart.by_store")
    assert lin is not None and lin.source == "spark"
    assert lin.inputs == {"wh.core.orders": v1, "wh.core.stores": v_stores, "wh.raw.feed": 1}
    assert lin.built_vid == res.vid and lin.built_time == cat.commits(since=res.vid)[0].time
    assert bridge.reads() == {}  # forgotten after the commit
    assert cat.commits(since=res.vid)[0].meta["inputs"] == ["wh.core.orders", "wh.core.stores", "wh.raw.feed"]

    # a rebuild after another load records the new vid; the old snapshot keeps the old lineage
    v3 = bridge.write(orders(spark, start=20), "wh.core.orders", message="load 2").vid
    bridge.read("wh.core.orders")
    res2 = bridge.write(orders(spark, 5), "wh.mart.by_store", mode="overwrite", schema="replace",
                        message="rebuild")
    assert _lineage(cat, "wh.mart.by_store").inputs == {"wh.core.orders": v3}
    assert _lineage(cat, "wh.mart.by_store", vid=res.vid).inputs["wh.core.orders"] == v1
    assert _lineage(cat, "wh.mart.by_store").built_vid == res2.vid

    # inputs written in the same commit are recorded at that commit's vid; a table is not its own input
    with bridge.transaction(message="core + mart together", inputs=["wh.core.orders"]) as tx:
        tx.write(orders(spark, 5, start=40), "wh.core.orders")
        tx.write(orders(spark, 5), "wh.mart.by_store", mode="overwrite", schema="replace")
    vid = tx.result.vid
    assert _lineage(cat, "wh.mart.by_store").inputs == {"wh.core.orders": vid}
    assert _lineage(cat, "wh.core.orders").inputs == {}  # written by the job, not read by it

    with pytest.raises(Exception, match="table names"):
        bridge.write(orders(spark, 1), "wh.mart.by_store", inputs="wh.core.orders")
