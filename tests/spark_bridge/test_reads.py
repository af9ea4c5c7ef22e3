"""Reads over many files: lazy (no Spark job until an action, in local mode), exactly the snapshot's
files, renamed columns and partition values restored."""

from __future__ import annotations

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
    old = [f for f in files if f.value.get("schema_id") != files[-1].value.get("schema_id")]
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
