"""Write-audit-publish with Spark: write to a branch, audit it (row counts, DuckDB), compact it,
publish while main took appends; embedded and over HTTP."""

from __future__ import annotations

import pytest

import catalog_core as cc
from spark_bridge import Bridge
from tests.helpers import assert_stats_consistent

T, NAME = "/wh/sales/orders", "wh.sales.orders"
B = "/wh/sales__wap"


def orders(spark, day: str, n: int, start: int = 0):
    return spark.sql(f"""select id, date'{day}' as d, case when id % 4 = 0 then null else id * 2 end as amount
                         from range({start}, {start + n})""")


@pytest.fixture(params=["embedded", "http"])
def wap(request, spark, data_dir):
    engine = cc.Catalog.open(data_dir)
    if request.param == "embedded":
        bridge = Bridge(spark, engine)
        yield engine, bridge
    else:
        from mcp_server.http.server import serve_in_thread

        with serve_in_thread(engine) as handle:
            bridge = Bridge(spark, handle.url, warehouse=engine.warehouse)
            yield bridge.catalog, bridge
            bridge.catalog.close()
    engine.close()


def _files(cat, vid=None):
    return {f.value["path"] for f in cat.plan_files(NAME, vid=vid)}


@pytest.mark.slow
def test_spark_write_audit_publish(wap, spark):
    cat, bridge = wap
    bridge.write(orders(spark, "2001-06-01", 40).repartition(2), NAME, partition_by=["d"], message="day 1")
    cat.clone("/wh/sales", B, author="wap", message="branch for the restatement")
    fork = cat.latest_vid
    main_files = _files(cat)

    # write on the branch: a new day, and more rows for day 1
    bridge.write(orders(spark, "2001-06-02", 30), NAME, branch=B, message="day 2 on the branch")
    bridge.write(orders(spark, "2001-06-01", 10, start=100), NAME, branch=B, message="day 1 late rows")
    # main keeps taking appends meanwhile, into the same partition
    bridge.write(orders(spark, "2001-06-01", 5, start=500), NAME, message="main append")
    # the branch compacts day 1: two of main's files leave the branch
    res = bridge.compact(NAME, target_file_mb=1, branch=B, where='d = "2001-06-01"')
    assert res.tables[0].files_removed >= 2

    # audit on the branch: row counts, stats, DuckDB; main saw none of it
    assert bridge.read(NAME, branch=B).count() == 40 + 30 + 10
    assert_stats_consistent(cat, "wh.sales__wap.orders")
    sql = cc.run_sql(cat, "select d::varchar, count(*) from wh.sales__wap.orders group by 1 order by 1")
    assert [tuple(r) for r in sql.rows] == [("2001-06-01", 50), ("2001-06-02", 30)]
    assert bridge.read(NAME).count() == 45 and not cat.get(f"{T}/d=2001-06-02")
    # main's original files that the branch's compaction replaced (still on main)
    removed_on_branch = _files(cat) & (main_files - {f.value["path"] for f in cat.plan_files("wh.sales__wap.orders")})
    assert len(removed_on_branch) >= 2

    vid = cat.publish(B, onto="/wh/sales", author="wap", message="publish restatement")
    # main now has everything: both sides' appends, the compaction, stats equal the file sums
    assert bridge.read(NAME).count() == 40 + 30 + 10 + 5
    table = assert_stats_consistent(cat, NAME)
    assert table["stats"]["row_count"] == 85 and table["stats"]["last_data_commit"]["vid"] == vid
    assert [tuple(r) for r in cc.run_sql(cat, "select count(*) from wh.sales.orders").rows] == [(85,)]
    # the compacted files disappear from main at the publish vid and stay readable before it
    assert not removed_on_branch & _files(cat, vid) and removed_on_branch <= _files(cat, vid - 1)
    assert bridge.read(NAME, snapshot=vid - 1).count() == 45
    # a reader of main sees all or nothing at every vid: consistent stats, no branch file before publish
    branch_only = _files(cat, vid) - _files(cat, vid - 1)
    assert branch_only
    for v in range(fork, vid + 1):
        assert_stats_consistent(cat, NAME, vid=v)
        have = _files(cat, v)
        assert not branch_only & have if v < vid else branch_only <= have


@pytest.mark.slow
def test_equal_appends_on_the_branch_and_on_main_both_count(wap, spark):
    """Issue 22: the same append on both sides (same rows, so the same row count, file count and size)
    counted once after publish; stats must equal the sums over the files, both appends included."""
    cat, bridge = wap
    bridge.write(orders(spark, "2001-06-01", 20).coalesce(1), NAME, partition_by=["d"], message="day 1")
    cat.clone("/wh/sales", B, author="wap", message="branch")
    bridge.write(orders(spark, "2001-06-01", 7, start=100).coalesce(1), NAME, branch=B, message="on the branch")
    bridge.write(orders(spark, "2001-06-01", 7, start=100).coalesce(1), NAME, message="on main")
    cat.publish(B, onto="/wh/sales", author="wap", message="publish")
    table = assert_stats_consistent(cat, NAME)
    assert (table["stats"]["row_count"], table["stats"]["file_count"]) == (34, 3)
    assert bridge.read(NAME).count() == 34
