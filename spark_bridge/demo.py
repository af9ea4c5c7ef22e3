"""`semcat demo`: a real PySpark ETL job loads a small retail lake through the bridge into an
embedded catalog, then shows path queries, time travel, the commit log, a zero-copy branch and
DuckDB SQL at a pinned snapshot."""

from __future__ import annotations

import os
import shutil
import time
from typing import Any

import catalog_core as cc

__all__ = ["run_demo", "DAYS"]

DAYS = [f"2025-06-{d:02d}" for d in range(1, 8)]
ORDERS = "demo.retail.orders"
ORDERS_PATH = "/demo/retail/orders"


def _orders_sql(day_index: int, day: str, rows: int, seed: int = 0) -> str:
    # Deterministic pseudo-random rows: the demo prints the same numbers on every run.
    return f"""
        select cast({day_index} * 1000000 + id as bigint) as order_id,
               date'{day}' as order_date,
               cast(pmod(hash(id, {seed} + 1), 8) + 1 as int) as store_id,
               cast(pmod(hash(id, {seed} + 2), 40) + 1 as int) as product_id,
               cast(pmod(hash(id, {seed} + 3), 5) + 1 as int) as quantity,
               cast(5 + pmod(hash(id, {seed} + 4), 9500) / 100.0 as decimal(10, 2)) as amount,
               timestamp'{day} 08:00:00' + make_interval(0, 0, 0, 0, 0, 0, pmod(hash(id, 5), 43200)) as ordered_at
        from range({rows})"""


def _stores_sql() -> str:
    return """select cast(id + 1 as int) as store_id, concat('Store ', cast(id + 1 as string)) as name,
                     element_at(array('north', 'south', 'east', 'west'), cast(id % 4 as int) + 1) as region
              from range(8)"""


def _products_sql() -> str:
    return """select cast(id + 1 as int) as product_id, concat('Product ', cast(id + 1 as string)) as name,
                     element_at(array('grocery', 'home', 'toys', 'garden', 'books'),
                                cast(id % 5 as int) + 1) as category
              from range(40)"""


def _prepare_dir(data_dir: str, fresh: bool) -> None:
    if fresh and os.path.exists(data_dir) and os.listdir(data_dir):
        if not os.path.isdir(os.path.join(data_dir, "catalog")):
            raise cc.errors.InvalidValueError(
                f"{data_dir!r} is not empty and is not a semcat data directory; refusing to delete it. "
                "Pick another --data directory")
        shutil.rmtree(data_dir)


class _Out:
    """Compact console output through rich."""

    def __init__(self, console: Any) -> None:
        from rich.console import Console

        self.c = console or Console(highlight=False)
        self.t0 = time.time()

    def step(self, title: str) -> None:
        self.c.print(f"\n[bold cyan]== {title}[/]  [dim]({time.time() - self.t0:.0f}s)[/]")

    def line(self, text: str) -> None:
        self.c.print(text, markup=False)

    def table(self, headers: list[str], rows: list[list[Any]]) -> None:
        from rich import box
        from rich.markup import escape
        from rich.table import Table

        t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
        for h in headers:
            t.add_column(h, overflow="fold")
        for r in rows:
            t.add_row(*[escape(str(v)) for v in r])
        self.c.print(t)


def _load(bridge: Any, spark: Any, out: _Out) -> dict[str, int]:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    marks: dict[str, int] = {}
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=out.c, transient=True) as progress:
        task = progress.add_task("daily loads", total=len(DAYS) + 2)
        sc = spark.sparkContext
        sc.setJobDescription("etl initial load")
        with bridge.transaction(author="etl:retail", message=f"initial load: dimensions + orders {DAYS[0]}") as tx:
            tx.write(spark.sql(_stores_sql()).coalesce(1), "demo.retail.stores")
            tx.write(spark.sql(_products_sql()).coalesce(1), "demo.retail.products")
            tx.write(spark.sql(_orders_sql(0, DAYS[0], 3000)).repartition(3), ORDERS, partition_by=["order_date"])
        out.line(f"  vid {tx.result.vid}: stores + products + orders {DAYS[0]} in one atomic commit "
                 f"({tx.result.files_added} files)")
        progress.advance(task)
        for i, day in enumerate(DAYS[1:], start=1):
            sc.setJobDescription(f"etl orders {day[5:]}")
            res = bridge.write(spark.sql(_orders_sql(i, day, 2500 + 400 * i)).repartition(3), ORDERS,
                               author="etl:retail", message=f"load {day}")
            note = ""
            if day == DAYS[2]:
                marks["after-day-3"] = res.vid
                bridge.catalog.snapshot("after-day-3", res.vid)
                note = "  (snapshot 'after-day-3')"
            out.line(f"  vid {res.vid}: orders {day}: {res.rows_added:,} rows in {res.files_added} files{note}")
            progress.advance(task)
        sc.setJobDescription(f"etl restate {DAYS[3][5:]}")
        res = bridge.write(spark.sql(_orders_sql(3, DAYS[3], 2000, seed=7)).repartition(2), ORDERS, mode="overwrite",
                           author="etl:retail", message=f"restate {DAYS[3]}")
        out.line(f"  vid {res.vid}: {DAYS[3]} restated by a dynamic partition overwrite "
                 f"(-{res.tables[0].files_removed} +{res.tables[0].files_added} files, same commit)")
        marks["restated"] = res.vid
        progress.advance(task)
        sc.setJobDescription("maintenance: compact")
        res = bridge.compact(ORDERS, target_file_mb=64, message="compact small files")
        out.line(f"  vid {res.vid}: compaction rewrote {res.tables[0].files_removed} small files into "
                 f"{res.tables[0].files_added} (row counts and min/max unchanged)")
        progress.advance(task)
        sc.setLocalProperty("spark.job.description", None)
    return marks


def _show_queries(cat: Any, out: _Out) -> None:
    out.step("Path queries")
    q = '/[obj_id = "demo"]/*/[obj_type = "table"]'
    out.line(f"  {q}")
    out.table(["table", "rows", "files", "bytes", "schema id"],
              [[o.path, o.value["stats"]["row_count"], o.value["stats"]["file_count"], o.value["stats"]["size_bytes"],
                o.value["schema"]["schema_id"]] for o in cat.query(q)])
    q = '/[obj_id = "demo"]/[obj_id = "retail"]/[obj_id = "orders"]/[obj_type = "partition" and stats.row_count > 4000]'
    out.line(f"  {q}")
    out.table(["partition", "rows", "amount min..max"],
              [[o.obj_id, o.value["stats"]["row_count"],
                f'{o.value["stats"]["columns"]["amount"]["min"]}..{o.value["stats"]["columns"]["amount"]["max"]}']
               for o in cat.query(q)])
    stats = cc.QueryStats()
    files = cat.plan_files(ORDERS, where=f'order_date >= "{DAYS[5]}" and amount > 90', stats=stats)
    out.line(f"  plan_files({ORDERS}, where='order_date >= \"{DAYS[5]}\" and amount > 90') -> {len(files)} file(s); "
             f"scanned {stats.scanned} catalog objects")


def _show_time_travel(bridge: Any, cat: Any, marks: dict[str, int], out: _Out) -> None:
    out.step("Time travel")
    then, now = bridge.read(ORDERS, snapshot="after-day-3").count(), bridge.read(ORDERS).count()
    out.line(f"  orders rows at snapshot 'after-day-3' (vid {marks['after-day-3']}): {then:,}   now (vid "
             f"{cat.latest_vid}): {now:,}")
    day = DAYS[3]
    before = cat.get(f"{ORDERS_PATH}/order_date={day}", vid=marks["restated"] - 1)
    after = cat.get(f"{ORDERS_PATH}/order_date={day}")
    out.line(f"  partition {day}: {before.value['stats']['row_count']:,} rows before the restatement, "
             f"{after.value['stats']['row_count']:,} after")


def _show_log(cat: Any, out: _Out) -> None:
    out.step("Commit log (newest 6; the Spark app id and job description are in each commit's meta)")
    rows = []
    for c in cat.commits(prefix="/demo", limit=6):
        files = sum(w.get("files", 0) for w in c.meta.get("writes", []))
        rows.append([c.vid, c.author, c.message, files, c.meta.get("spark_job", "")])
    out.table(["vid", "author", "message", "files", "spark job"], rows[::-1])


def _show_branch(bridge: Any, spark: Any, cat: Any, out: _Out) -> None:
    out.step("Branch (zero-copy clone), write to it, main untouched")
    vid = cat.clone("/demo/retail", "/demo/retail_dev", author="analyst", message="branch retail -> retail_dev")
    out.line(f"  vid {vid}: cloned /demo/retail -> /demo/retail_dev (file leaves shared, nothing copied)")
    bridge.write(spark.sql(_orders_sql(9, "2025-06-08", 500)), "demo.retail_dev.orders", author="analyst",
                 message="try a new day on the branch")
    main = cat.get(ORDERS_PATH).value["stats"]["row_count"]
    dev = cat.get("/demo/retail_dev/orders").value["stats"]["row_count"]
    out.line(f"  orders rows: main {main:,}   branch {dev:,}")


def _show_duckdb(cat: Any, out: _Out) -> None:
    out.step("DuckDB SQL at a pinned snapshot")
    sql = ("select s.region, count(*) as orders, round(sum(o.amount), 2) as revenue "
           "from demo.retail.orders o join demo.retail.stores s using (store_id) group by 1 order by 1")
    result = cc.run_sql(cat, sql, snapshot="after-day-3")
    out.line(f"  snapshot 'after-day-3': {sql}")
    out.table([c.name for c in result.columns], result.rows)
    latest = cc.run_sql(cat, "select count(*) from demo.retail.orders")
    out.line(f"  same table at the latest vid: {latest.rows[0][0]:,} orders")


def run_demo(data_dir: str, fresh: bool = True, console: Any = None, spark: Any = None) -> dict[str, Any]:
    """Run the demo into `data_dir`; returns a few numbers for tests. Uses `spark` if given,
    else starts (and at the end stops) a local session."""
    from spark_bridge.bridge import Bridge
    from spark_bridge.session import local_session

    out = _Out(console)
    _prepare_dir(data_dir, fresh)
    own_spark = spark is None
    out.step("Starting Spark (local)")
    if own_spark:
        with out.c.status("starting the JVM ..."):
            spark = local_session(app_name="semcat-demo")
    out.line(f"  Spark {spark.version}, application {spark.sparkContext.applicationId}")
    cat = cc.Catalog.open(data_dir)
    bridge = Bridge(spark, cat)
    try:
        out.step(f"ETL: PySpark job loads the retail lake into {os.path.abspath(data_dir)}")
        marks = _load(bridge, spark, out)
        _show_queries(cat, out)
        _show_time_travel(bridge, cat, marks, out)
        _show_log(cat, out)
        _show_branch(bridge, spark, cat, out)
        _show_duckdb(cat, out)
        out.step("Done")
        out.line(f"  catalog: {os.path.abspath(data_dir)}  (try: semcat serve --data {data_dir})")
        orders = cat.get(ORDERS_PATH)
        assert orders is not None, "the demo's ETL job wrote no orders table"
        return {"latest_vid": cat.latest_vid, "marks": marks, "orders_rows": orders.value["stats"]["row_count"]}
    finally:
        cat.close()
        if own_spark:
            spark.stop()
