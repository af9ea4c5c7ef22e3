"""Concurrent writers, injected failures and retries: no lost files, no orphans, no partial commits."""

from __future__ import annotations

import threading

import pytest

import catalog_core as cc
from spark_bridge import Bridge, CommitFailedError
from tests.helpers import assert_stats_consistent, parquet_files


def day_rows(spark, day: str, n: int, start: int):
    return spark.sql(f"select id, date'{day}' as d, cast(id % 3 as int) as k from range({start}, {start + n})")


def _run_both(jobs):
    errors, results = [], {}

    def run(key, fn):
        try:
            results[key] = fn()
        except BaseException as exc:  # noqa: BLE001 - surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k, fn)) for k, fn in jobs.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    return results


def _meet_before_first_commit(bridges):
    barrier = threading.Barrier(len(bridges), timeout=60)

    def hook(attempt, _txn):
        if attempt == 1:
            barrier.wait()  # both writers have planned against the same state
    for b in bridges:
        b.before_commit = hook


def test_two_writers_creating_the_same_partition_both_land(spark, data_dir):
    cat = cc.Catalog.open(data_dir)
    a, b = Bridge(spark, cat), Bridge(spark, cat)
    first = a.write(day_rows(spark, "2001-06-01", 10, 0), "wh.sales.orders", partition_by=["d"])
    _meet_before_first_commit([a, b])
    res = _run_both({
        "a": lambda: a.write(day_rows(spark, "2001-06-02", 20, 100).union(day_rows(spark, "2001-06-03", 5, 200)),
                             "wh.sales.orders", message="writer a"),
        "b": lambda: b.write(day_rows(spark, "2001-06-02", 30, 300), "wh.sales.orders", message="writer b"),
    })
    # both planned "add d=2001-06-02"; the loser hit AlreadyExistsError and re-planned (no Spark rerun)
    assert sorted(r.attempts for r in res.values()) == [1, 2]
    files = cat.plan_files("wh.sales.orders")
    assert {f.value["path"] for f in files} == parquet_files(cat.warehouse)
    assert len(files) == first.files_added + res["a"].files_added + res["b"].files_added
    table = assert_stats_consistent(cat, "wh.sales.orders")
    assert table["stats"]["row_count"] == 10 + 25 + 30
    assert a.read("wh.sales.orders").count() == 65
    cat.close()


def test_concurrent_appends_to_existing_partitions_do_not_conflict(spark, data_dir):
    cat = cc.Catalog.open(data_dir)
    a, b = Bridge(spark, cat), Bridge(spark, cat)
    a.write(day_rows(spark, "2001-06-01", 10, 0), "wh.sales.orders", partition_by=["d"])
    _meet_before_first_commit([a, b])
    res = _run_both({k: (lambda s=s, bridge=bridge: bridge.write(day_rows(spark, "2001-06-01", 15, s), "wh.sales.orders"))
                     for k, bridge, s in (("a", a, 100), ("b", b, 200))})
    assert [r.attempts for r in res.values()] == [1, 1]  # blind adds + merges commute
    assert assert_stats_consistent(cat, "wh.sales.orders")["stats"]["row_count"] == 40
    cat.close()


def test_concurrent_schema_changes_are_serialized(spark, data_dir):
    cat = cc.Catalog.open(data_dir)
    a, b = Bridge(spark, cat), Bridge(spark, cat)
    a.write(spark.sql("select id from range(3)"), "wh.ref.t")
    _meet_before_first_commit([a, b])
    res = _run_both({
        "a": lambda: a.write(spark.sql("select id, 'x' as col_a from range(2)"), "wh.ref.t"),
        "b": lambda: b.write(spark.sql("select id, 1.5 as col_b from range(2)"), "wh.ref.t"),
    })
    assert sorted(r.attempts for r in res.values()) == [1, 2]  # the schema guard caught the race
    schema = cat.get("/wh/ref/t").value["schema"]
    assert schema["schema_id"] == 2
    assert {c["name"]: c["id"] for c in schema["columns"]}.keys() == {"id", "col_a", "col_b"}
    assert sorted(c["id"] for c in schema["columns"]) == [1, 2, 3]
    assert a.read("wh.ref.t").count() == 7
    cat.close()


def test_overwrite_retries_after_a_concurrent_append(spark, data_dir):
    cat = cc.Catalog.open(data_dir)
    main, other = Bridge(spark, cat), Bridge(spark, cat)
    main.write(day_rows(spark, "2001-06-01", 10, 0), "wh.sales.orders", partition_by=["d"])

    def hook(attempt, _txn):
        if attempt == 1:  # lands between the overwrite's read and its commit
            other.write(day_rows(spark, "2001-06-01", 7, 500), "wh.sales.orders", message="late append")
    main.before_commit = hook
    res = main.write(day_rows(spark, "2001-06-01", 4, 900), "wh.sales.orders", mode="overwrite")
    assert res.attempts == 2
    assert sorted(r.id for r in main.read("wh.sales.orders").collect()) == [900, 901, 902, 903]
    assert assert_stats_consistent(cat, "wh.sales.orders")["stats"]["row_count"] == 4
    cat.close()


def test_injected_failure_before_commit_leaves_no_orphans(bridge, spark):
    cat = bridge.catalog
    bridge.write(day_rows(spark, "2001-06-01", 10, 0), "wh.sales.orders", partition_by=["d"])
    files_before, vid_before = parquet_files(cat.warehouse), cat.latest_vid

    def crash(attempt, txn):
        assert txn.ops  # the commit was fully planned: leaves, partitions, merges
        raise RuntimeError("injected crash between writing files and committing")
    bridge.before_commit = crash
    with pytest.raises(RuntimeError, match="injected crash"):
        with bridge.transaction(message="doomed") as tx:
            tx.write(day_rows(spark, "2001-06-02", 20, 100), "wh.sales.orders")
            tx.write(spark.range(5), "wh.ref.nums")
    assert parquet_files(cat.warehouse) == files_before
    assert cat.latest_vid == vid_before and cat.get("/wh/sales/orders/d=2001-06-02") is None
    assert cat.get("/wh/ref") is None


def test_commit_that_keeps_losing_gives_up_and_cleans_up(bridge, spark):
    cat = bridge.catalog
    bridge.write(day_rows(spark, "2001-06-01", 10, 0), "wh.sales.orders", partition_by=["d"])
    files_before = parquet_files(cat.warehouse)
    bridge.max_attempts = 3

    def interfere(attempt, _txn):
        with cat.transaction(author="someone else") as t:
            t.merge("/wh/sales/orders/d=2001-06-01", {"touched": {"op": "+", "val": 1}})
    bridge.before_commit = interfere
    with pytest.raises(CommitFailedError, match="failed after 3 attempt") as err:
        bridge.write(day_rows(spark, "2001-06-01", 5, 100), "wh.sales.orders", mode="overwrite")
    assert "deleted" in err.value.message and err.value.details["cause"] == "ConflictError"
    assert parquet_files(cat.warehouse) == files_before
    assert cat.get("/wh/sales/orders/d=2001-06-01").value["touched"] == 3
    assert assert_stats_consistent(cat, "wh.sales.orders")["stats"]["row_count"] == 10


def test_broken_commit_call_is_resolved_from_the_commit_log(bridge, spark):
    cat = bridge.catalog

    def break_after_commit(attempt, txn):
        real = txn.commit

        def commit_then_lose_the_answer():
            real()
            raise ConnectionError("connection reset after the server committed")
        txn.commit = commit_then_lose_the_answer
    bridge.before_commit = break_after_commit
    res = bridge.write(day_rows(spark, "2001-06-01", 10, 0), "wh.sales.orders", partition_by=["d"])
    assert res.vid == cat.latest_vid and res.attempts == 1
    assert {f.value["path"] for f in cat.plan_files("wh.sales.orders")} == parquet_files(cat.warehouse)


def test_broken_commit_call_without_a_commit_keeps_the_files(bridge, spark):
    from spark_bridge import CommitUnknownError

    cat = bridge.catalog

    def break_before_commit(attempt, txn):
        def lose_the_connection():
            raise ConnectionError("connection reset before the server answered")
        txn.commit = lose_the_connection
    bridge.before_commit = break_before_commit
    with pytest.raises(CommitUnknownError, match="outcome is unknown") as err:
        bridge.write(day_rows(spark, "2001-06-01", 10, 0), "wh.sales.orders", partition_by=["d"])
    kept = parquet_files(cat.warehouse)
    assert kept and all(err.value.details["write_ids"][0] in p for p in kept)  # never delete what may be live
    assert cat.latest_vid == 0
