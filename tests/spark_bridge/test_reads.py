"""Reads over many files: lazy (no Spark job until an action, in local mode), exactly the snapshot's
files, renamed columns and partition values restored."""

from __future__ import annotations

import pytest

from spark_bridge.reader import LISTING_THRESHOLD


def _jobs(spark, group):
    return list(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


def test_a_read_of_more_files_than_the_listing_threshold_starts_no_spark_job(bridge, spark):
    # 2 tasks x 36 partitions: ~72 files before the rename, 36 after it; Spark's default threshold is 32
    rows = "select id, cast(id % 36 as int) as k, id * 2 as v from range({lo}, {hi})"
    first = bridge.write(spark.sql(rows.format(lo=0, hi=200)).repartition(2), "wh.core.many", partition_by=["k"])
    bridge.alter("wh.core.many", rename={"v": "w"})
    bridge.write(spark.sql(rows.format(lo=200, hi=280)).withColumnRenamed("v", "w").repartition(1),
                 "wh.core.many", partition_by=["k"])
    files = bridge.catalog.plan_files("wh.core.many")
    latest = max(files, key=lambda f: f.vid).value.get("schema_id")   # (plan order is by path: not by write)
    old = [f for f in files if f.value.get("schema_id") != latest]
    assert len(files) > 100 and 36 <= len(files) - len(old) and len(old) >= 60  # both read paths over 32 files
    threshold = spark.conf.get(LISTING_THRESHOLD)

    sc = spark.sparkContext
    sc.setJobGroup("semcat-test-read", "bridge reads")
    try:
        df = bridge.read("wh.core.many")
        at_first = bridge.read("wh.core.many", snapshot=first.vid)
        assert _jobs(spark, "semcat-test-read") == []  # before the fix: a listing job of one task per file
        assert spark.conf.get(LISTING_THRESHOLD) == threshold  # the session's setting is back
        got = sorted((r.id, r.k, r.w) for r in df.collect())
        assert _jobs(spark, "semcat-test-read")  # the action runs (the group does record jobs)
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    assert got == [(i, i % 36, i * 2) for i in range(280)]
    listed = sorted(p.removeprefix("file://") for p in df.inputFiles())
    assert listed == sorted(f.value["path"].removeprefix("file:") for f in files)  # exactly the snapshot's files
    assert sorted((r.id, r.k, r.v) for r in at_first.collect()) == [(i, i % 36, i * 2) for i in range(200)]


def test_since_reads_only_the_files_appended_after_a_vid_and_refuses_after_an_overwrite(bridge, spark):
    from spark_bridge import BridgeError

    rows = "select id, cast(id % 3 as int) as k from range({lo}, {hi})"
    first = bridge.write(spark.sql(rows.format(lo=0, hi=30)), "wh.core.inc", partition_by=["k"])
    bridge.write(spark.sql(rows.format(lo=30, hi=45)), "wh.core.inc", partition_by=["k"])
    third = bridge.write(spark.sql(rows.format(lo=45, hi=50)), "wh.core.inc", partition_by=["k"])
    bridge.clear_reads()
    added = bridge.read("wh.core.inc", since=first.vid)
    assert sorted((r.id, r.k) for r in added.collect()) == [(i, i % 3) for i in range(30, 50)]
    assert bridge.reads() == {"wh.core.inc": third.vid}  # lineage: the table as of the snapshot read
    kept = bridge.read("wh.core.inc", snapshot=first.vid)
    whole = bridge.read("wh.core.inc")
    assert sorted(kept.unionByName(added).collect()) == sorted(whole.collect())  # kept + added = the table
    listed = {p.removeprefix("file://") for p in added.inputFiles()}
    at_first = {f.value["path"].removeprefix("file:") for f in bridge.catalog.plan_files("wh.core.inc", vid=first.vid)}
    assert listed and not listed & at_first  # no file of `since` is read again
    assert bridge.read("wh.core.inc", since=third.vid).count() == 0  # nothing added since the latest
    assert bridge.read("wh.core.inc", snapshot=third.vid, since=0).count() == 50  # before the table: all of it

    with pytest.raises(BridgeError, match="after the snapshot read"):
        bridge.read("wh.core.inc", snapshot=first.vid, since=third.vid)
    bridge.write(spark.sql(rows.format(lo=100, hi=104)), "wh.core.inc", partition_by=["k"], mode="overwrite")
    with pytest.raises(BridgeError, match=r"gone at vid .*read the table whole"):
        bridge.read("wh.core.inc", since=third.vid)
    assert sorted(r.id for r in bridge.read("wh.core.inc").collect()) == [100, 101, 102, 103]


def test_the_quick_jvm_compiles_with_c1_into_a_code_cache_a_long_job_does_not_fill(spark):
    # C1 alone reserves 48 MB, which `semcat eval build` filled after 141 s ("CodeCache is full. Compiler
    # has been disabled"): the rest of the build's new code ran interpreted
    jvm = spark.sparkContext._jvm
    bean = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(
        jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean"))
    assert bean.getVMOption("TieredStopAtLevel").getValue() == "1"
    assert int(bean.getVMOption("ReservedCodeCacheSize").getValue()) >= 256 << 20
    assert bean.getVMOption("UseParallelGC").getValue() == "true"  # 10% less CPU than G1 in that build


def test_a_read_turns_into_pandas_with_the_spark_extra(bridge, spark):
    # the spark extra is pyspark[sql]: a job checking its load by `toPandas()` needs pandas (three testers
    # of session 32 found it missing)
    bridge.write(spark.sql("select id, cast(id * 2 as bigint) as v from range(0, 5)"), "wh.core.pd")
    frame = bridge.read("wh.core.pd").toPandas()
    assert sorted(zip(frame["id"], frame["v"])) == [(i, i * 2) for i in range(5)]
