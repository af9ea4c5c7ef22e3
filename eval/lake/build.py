"""`semcat eval build`: a PySpark ETL job that builds the Acme lake through the bridge, replays
LAKE.md's history with backdated commits in time order, and writes the annotations at d-119 and
their two histories (HARNESS.md): `enriched` (every annotation updated within two days of each
change) and `stale` (a seeded 20% never updated, plus wrong-from-the-start controls).

Layout of DIR:
    DIR/enriched/            catalog of the enriched history (conditions bare, enriched, enriched+detect)
    DIR/stale/               catalog of the stale history (conditions stale, stale+detect)
    DIR/warehouse/           the Parquet files, shared by both catalogs (written once by Spark)
    DIR/stale_manifest.json  the stale annotations: table, key, kind, detectable (never read by agents)
    DIR/lake.json            what was built: seed, scale, d0, row counts, vids, timings

Spark writes each load once (staged through the enriched catalog's bridge) and the same files are
committed to both catalogs with the same time, so the two lakes are physically identical.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import json
import os
import random
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from catalog_core.api import CatalogAPI
from catalog_core.lake import TableValue
from eval.lake import annotations as A
from eval.lake import marts as M
from eval.lake import tables as T
from eval.lake.calendar import D0, D0_DATE, FIRST_DATE, UTC, at, dates, day, fiscal
from eval.lake.enterprise_spec import LATE_DAYS as ENT_LATE_DAYS
from eval.lake.generate import SESSIONS_FROM, Lake, generate
from eval.lake.naming import NAMES_FILE, Naming

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from spark_bridge.plan import StagedWrite

__all__ = ["build", "HISTORIES", "CONDITIONS", "MANIFEST", "data_dir", "STALE_FRACTION", "CONTROL_FRACTION"]

HISTORIES = ("enriched", "stale")
CONDITIONS = {"bare": "enriched", "enriched": "enriched", "stale": "stale", "stale+detect": "stale",
              "enriched+detect": "enriched", "static": "stale"}
MANIFEST = "stale_manifest.json"
STALE_FRACTION = 0.20
CONTROL_FRACTION = 0.15
AUTHOR = "etl:acme"
STAGE_THREADS = 3  # writes of one load staged at once (each a Spark job of one task on local[2])
ANNOTATOR = "data-team"
UNCOUNTED = ("labels", "load_log")
# What each mart's job reads (LAKE.md). Three marts are built by Spark SQL jobs (eval.lake.marts) that
# read the core tables through the bridge in a commit of their own, after the load's core commit: the
# bridge records the tables and vids they actually read as the mart's lineage. The daily store mart
# stays a declared write in the load's core commit (`inputs` named here, read as that commit leaves
# them): its rows are the generator's, whose refunds_cents counts every refund dated in the loaded
# window, including those fct_refunds only receives at the next secondary load (10 of its 23 writes),
# so no job over the core tables reproduces them.
DECLARED_INPUTS = {
    "mart.agg_daily_store_revenue": ("core.fct_orders", "core.fct_order_items", "core.fct_refunds"),
}
MART_INPUTS = {**DECLARED_INPUTS, **M.READS}  # every mart's upstream (plain names)
BUILT = tuple(m for m in M.READS if m not in DECLARED_INPUTS)  # the marts built by jobs that read the core tables
MART_DELAY = 60.0  # seconds between a load's core commit and the commit of the marts built from it


def data_dir(root: str, condition_or_history: str) -> str:
    """The catalog directory a condition (or history) reads."""
    h = CONDITIONS.get(condition_or_history, condition_or_history)
    if h not in HISTORIES:
        raise ValueError(f"unknown condition {condition_or_history!r}; one of {', '.join(CONDITIONS)}")
    return os.path.join(root, h)


def per_history(fn: Callable[[str], Any]) -> dict[str, Any]:
    """fn(history) for both histories at once, one thread each (their catalogs are independent; the
    waits on Spark, RocksDB and DuckDB workers overlap). Returns {history: result}; re-raises."""
    with ThreadPoolExecutor(max_workers=len(HISTORIES)) as pool:
        futures = {h: pool.submit(fn, h) for h in HISTORIES}
        return {h: f.result() for h, f in futures.items()}


# ---------------------------------------------------------------------------------------------- writing
class Loader:
    """Stages each write once with Spark and commits it to both catalogs at the same time."""

    def __init__(self, spark: Any, cats: dict[str, Any], warehouse: str, tmp: str, log: Callable[[str], None],
                 naming: Naming | None = None):
        from spark_bridge import Bridge

        self.naming = naming or Naming.plain()

        self.spark, self.cats, self.tmp, self.log = spark, cats, tmp, log
        # footers are read in this process: local mode, and no Spark job per write
        self.bridges = {h: Bridge(spark, c, warehouse=warehouse, footers_on="driver") for h, c in cats.items()}
        self.n = 0
        self._lock = threading.Lock()
        self._schemas: dict[str, Any] = {}  # Spark's schema of each input Parquet layout, inferred once
        self._committer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="commit")
        self._pending: list[Future] = []
        self._barrier = False
        self.rows: dict[str, int] = {}
        self.commits = 0
        self.spark_writes = 0
        # seconds the committer thread spent building marts (Loader.build): reading the inputs through
        # the bridges, running and staging the jobs, committing (both catalogs); the staging of the next
        # load overlaps it
        self.mart_seconds = {"read": 0.0, "run": 0.0, "commit": 0.0}
        # each core table the marts read: (the enriched catalog's vid read, the rows then, cached in Spark's
        # memory); the next mart commit reads only the files added since (Bridge.read's since=) and keeps
        # the union, so a job scans the core tables' ~800 small files once per restatement, not per commit
        self._kept: dict[str, tuple[int, Any]] = {}
        self.mart_reads = {"whole": 0, "since": 0}

    def frame(self, cols: list[tuple[str, pa.DataType]], rows: list[dict]) -> DataFrame:
        with self._lock:  # frames are made by the staging threads
            self.n += 1
            n = self.n
        path = os.path.join(self.tmp, f"in-{n:05d}.parquet")
        schema = T.arrow_schema(cols)
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
        # inferring a Parquet schema runs a Spark job per read; the same layout always infers the
        # same schema, so it is inferred at its first read and given to the later ones
        key = schema.to_string(show_field_metadata=False, show_schema_metadata=False)
        known = self._schemas.get(key)
        if known is not None:
            return self.spark.read.schema(known).parquet(path)
        df = self.spark.read.parquet(path)
        self._schemas[key] = df.schema
        return df

    def _stage(self, w: tuple) -> tuple[StagedWrite, bool]:
        name, cols, rows, mode, schema = w
        nm = self.naming
        b = self.bridges["enriched"]
        if name in T.TABLES:  # a LAKE.md table: written under the variant's names (the identity for plain)
            t = T.TABLES[name]
            full, pby = nm.full_table(t.full), [nm.column(c) for c in t.partition_by]
            if isinstance(rows, list):
                if not nm.identity:
                    cols = [(nm.column(c), ty) for c, ty in cols]
                    rows = [nm.row(name, r) for r in rows]
            elif not nm.identity:
                rows = rows.toDF(*[nm.column(c) for c in rows.columns])
        else:  # a clutter table of the cryptic variant: already under its written names
            full, pby = f"{T.CATALOG}.{name}", []
        df = rows if not isinstance(rows, list) else self.frame(cols, rows)
        obj = b.catalog.get("/" + full.replace(".", "/"))
        table = obj.value if obj is not None else None
        from spark_bridge.schema import evolve
        from spark_bridge.schema import replace as replace_schema

        df, pcols, wcols, loc = b.prepare(df, full, pby or None, mode, table, schema)
        evo = (replace_schema if schema == "replace" else evolve)(TableValue.from_raw(table).schema, wcols, full)
        types = {c["name"]: c["type"] for c in evo.schema["columns"]}
        changes = table is None or evo.changed or schema == "replace"
        staged = b.stage(df, full, mode, pcols, wcols, loc, types, None, schema)
        if name in DECLARED_INPUTS:  # lineage declared: what the mart is made of (the same for both catalogs)
            staged.inputs = {nm.full_table(T.TABLES[i].full): None for i in DECLARED_INPUTS[name]}
        if name in MART_INPUTS:
            staged.job = f"build {nm.full_table(t.full)}"
        return staged, changes

    def load(self, when: float, message: str, writes: list[tuple]) -> None:
        """Stage `writes` ((table, columns, rows | DataFrame, mode, schema)) with Spark, then queue
        their commit to both catalogs. Commits run in order on one committer thread, so the next
        load is staged while this one commits; a load that creates tables or changes a schema is
        committed before anything else is staged (staging reads the tables' schemas)."""
        writes = [w for w in writes if not isinstance(w[2], list) or w[2]]
        if not writes:
            return
        message = self.naming.text(message)  # it names tables and columns: under the variant's names
        if self._barrier:
            self.wait()
        self._check()
        with ThreadPoolExecutor(max_workers=STAGE_THREADS) as pool:
            out = list(pool.map(self._stage, writes))
        staged = [w for w, _ in out]
        self._barrier = any(c for _, c in out)
        self.spark_writes += len(staged)
        self._pending.append(self._committer.submit(self._commit, staged, when, message))

    def _commit(self, staged: list[StagedWrite], when: float, message: str) -> None:
        # the same staged files, committed to each catalog at the same time (one thread per catalog)
        results = per_history(lambda h: self.bridges[h].commit(staged, AUTHOR, message, time=when))
        for tw in results["enriched"].tables:
            if tw.mode == "overwrite":
                self.rows[tw.table] = tw.rows_added
            else:
                self.rows[tw.table] = self.rows.get(tw.table, 0) + tw.rows_added
        self.commits += 1

    def build(self, when: float, message: str, jobs: list[tuple[str, dict[str, Any]]]) -> None:
        """Queue, after the commits queued so far, one commit of the marts `jobs` ((plain mart,
        eval.lake.marts parameters)) builds: Spark SQL over the core tables read through each
        catalog's bridge as the queued commits leave them, at `when`. Runs on the committer thread
        (the next load is staged meanwhile), so the bridge's per-thread read log holds what the jobs read:
        each mart's lineage is the part of it its own statement reads (eval.lake.marts.READS), at the
        vid read, in each catalog."""
        if jobs:
            self._pending.append(self._committer.submit(self._build, when, self.naming.text(message), jobs))

    def _read(self, h: str, table: str, vid: int, since: int | None) -> tuple[DataFrame, bool]:
        """Core table `table` (plain name) read through catalog h's bridge at `vid` (this thread's read log
        records it there), under its plain column names (values stay as written: codes on cryptic): only
        the files added after `since` (True), or whole (False) when `since` is None or a file it listed is
        gone (Bridge.read's since= refuses)."""
        from spark_bridge import BridgeError

        nm, b = self.naming, self.bridges[h]
        name = nm.full_table(T.TABLES[table].full)
        df, added = None, since is not None
        if added:
            try:
                df = b.read(name, snapshot=vid, since=since)
            except BridgeError:
                added = False
        if df is None:
            df = b.read(name, snapshot=vid)
        if not nm.identity:
            plain = {nm.column(c): c for c, _ in T.TABLES[table].columns}
            df = df.toDF(*[plain.get(c, c) for c in df.columns])
        return df, added

    def _read_again(self, h: str, tables: list[str]) -> dict[str, int]:
        """What catalog h's job reads of the core tables `tables` (plain names): each at h's latest vid
        (its dotted name -> that vid), the read log `Bridge.read` would leave there. Not read through the
        bridge: no rows would be scanned (the enriched catalog's frames, which list the same files, are
        what the jobs ran on, `_build` checks the files), and each read made a Spark DataFrame over the
        files added since h's previous mart commit for nothing but that log."""
        vid = self.cats[h].latest_vid
        return {self.naming.full_table(T.TABLES[t].full): vid for t in tables}

    def _files(self, h: str, table: str) -> list[str]:
        """The data files catalog h lists for core table `table` (plain name) at its latest vid."""
        return sorted(f.value["path"] for f in self.cats[h].plan_files(self.naming.full_table(T.TABLES[table].full)))

    def _kept_inputs(self, tables: list[str]) -> dict[str, DataFrame]:
        """The core tables `tables` (plain names) as the enriched catalog holds them now (`_read`), cached
        in memory: the rows kept from the previous mart commit plus the files added since, or the whole
        table after a restatement, a compaction or a schema change (Bridge.read's since= refuses, or the
        columns differ). The same rows as a whole read (bench.marts_equal, tests/eval)."""
        vid = self.cats["enriched"].latest_vid
        out = {}
        for t in tables:
            kept = self._kept.get(t)
            df, added = self._read("enriched", t, vid, None if kept is None else kept[0])
            if kept is not None and added and df.columns != kept[1].columns:  # the schema changed since
                df, added = self._read("enriched", t, vid, None)
            if kept is not None and added:
                df = kept[1].unionByName(df)
            self.mart_reads["since" if added else "whole"] += 1
            df = df.coalesce(2).cache()  # 2 partitions, however many reads it unites (local[2])
            df.count()  # in memory before the rows it was built from are let go
            if kept is not None:
                kept[1].unpersist()
            self._kept[t] = (vid, df)
            out[t] = df
        return out

    def _build(self, when: float, message: str, jobs: list[tuple[str, dict[str, Any]]]) -> None:
        nm, clock = self.naming, time.perf_counter()
        tables = sorted({t for mart, _ in jobs for t in M.READS[mart]})
        frames = self._kept_inputs(tables)
        for t, df in frames.items():
            df.createOrReplaceTempView(t.split(".", 1)[1])
        clock = self._tick("read", clock)
        out = [(mart, None, self.spark.sql(M.sql_for(mart, params, nm.code)).coalesce(1), "overwrite", "evolve")
               for mart, params in jobs]
        with ThreadPoolExecutor(max_workers=STAGE_THREADS) as pool:
            staged = [w for w, _ in pool.map(self._stage, out)]
        self.spark_writes += len(staged)
        clock = self._tick("run", clock)

        def own(h: str, read: dict[str, int]) -> list[StagedWrite]:
            # one commit holds the marts of several jobs: each records, of what the job read in catalog h
            # (table -> vid: the enriched bridge's read log on this thread), the tables its own statement reads
            return [dataclasses.replace(w, inputs={nm.full_table(T.TABLES[t].full): read[nm.full_table(T.TABLES[t].full)]
                                                   for t in M.READS[mart]})
                    for w, (mart, _) in zip(staged, jobs)]

        results = {"enriched": self.bridges["enriched"].commit(own("enriched", self.bridges["enriched"].reads()), AUTHOR,
                                                               message, time=when)}
        clock = self._tick("commit", clock)
        # the stale catalog lists the same files for each input (one warehouse): its job reads them there
        for h in HISTORIES:
            if h == "enriched":
                continue
            read = self._read_again(h, tables)
            for t in tables:
                if self._files(h, t) != self._files("enriched", t):
                    raise RuntimeError(f"{t} lists other files in the {h} catalog than in the enriched one; "
                                       "the two histories must hold the same data")
            clock = self._tick("read", clock)
            results[h] = self.bridges[h].commit(own(h, read), AUTHOR, message, time=when)
            clock = self._tick("commit", clock)
        for tw in results["enriched"].tables:
            self.rows[tw.table] = tw.rows_added
        self.commits += 1

    def _tick(self, part: str, since: float) -> float:
        now = time.perf_counter()
        self.mart_seconds[part] += now - since
        return now

    def then(self, fn: Callable[[], None]) -> None:
        """Run fn once every load queued so far is committed (on the committer thread)."""
        self._pending.append(self._committer.submit(fn))

    def _check(self) -> None:
        """Re-raise the failure of a queued commit that has finished."""
        for f in [f for f in self._pending if f.done()]:
            self._pending.remove(f)
            f.result()

    def wait(self) -> None:
        """Block until every queued commit is done (re-raising its failure)."""
        while self._pending:
            self._pending.pop(0).result()

    def close(self) -> None:
        self._committer.shutdown(wait=True, cancel_futures=True)
        for _vid, df in self._kept.values():
            df.unpersist()
        self._kept.clear()


# ---------------------------------------------------------------------------------------------- the ETL
class History:
    def __init__(self, lake: Lake, loader: Loader, spark: SparkSession, log: Callable[[str], None]):
        self.lake, self.ld, self.spark, self.log = lake, loader, spark, log
        self.loaded_to: dict[str, dt.date] = {}
        self.load_log: list[dict] = []
        self._items_by_order: dict[int, list[dict]] = {}
        self.restated = False
        self.sessions_uuid = False
        self.revenue_usd = False
        self.customer_scd2 = False
        self.finance_region = False

    # rows of a fact between two dates (inclusive), by its date column
    def _between(self, rows: list[dict], col: str, lo: dt.date, hi: dt.date) -> list[dict]:
        out = []
        for r in rows:
            v = r[col]
            d = v.date() if isinstance(v, dt.datetime) else v
            if lo <= d <= hi:
                out.append(r)
        return out

    def record_load(self, table: str, lo: dt.date, hi: dt.date, when: float, rows: int, status: str = "success",
             attempt: int = 1, note: str | None = None, suffix: str = "") -> None:
        days = dates(lo, hi)
        per = max(1, rows // max(1, len(days)))
        for d in days:
            self.load_log.append({"table_name": table, "partition": d.isoformat() + suffix, "attempt": attempt,
                                  "status": status, "loaded_at_utc": dt.datetime.fromtimestamp(when, UTC),
                                  "row_count": per if status != "failed" else 0, "note": note})

    def orders_rows(self, lo: dt.date, hi: dt.date) -> list[dict]:
        out = []
        for o in self._between(self.lake.orders, "order_date_local", lo, hi):
            out.append({**o, "status": self.lake.order_status(o, self.restated)})
        return out

    def sessions_rows(self, lo: dt.date, hi: dt.date) -> tuple[list, list[dict]]:
        cols = T.SESSIONS_UUID if self.sessions_uuid else T.TABLES["core.fct_web_sessions"].columns
        return cols, self._between(self.lake.sessions, "session_date", max(lo, SESSIONS_FROM), hi)

    def revenue(self, lo: dt.date, hi: dt.date, partial: tuple[int, dt.date] | None = None) -> tuple[list, list[dict]]:
        rows = self.lake.daily_store_revenue(lo, hi, partial)
        if not self.revenue_usd:
            return T.TABLES["mart.agg_daily_store_revenue"].columns, rows
        from eval.lake.generate import usd

        return T.DAILY_REVENUE_USD, [{"date_local": r["date_local"], "store_id": r["store_id"],
                                      "order_count": r["order_count"], "gross_revenue_usd": usd(r["gross_revenue_cents"]),
                                      "discount_usd": usd(r["discount_cents"]), "net_revenue_usd": usd(r["net_revenue_cents"]),
                                      "refunds_usd": usd(r["refunds_cents"])} for r in rows]

    def inventory_df(self, lo: dt.date, hi: dt.date) -> DataFrame:
        """Inventory snapshots generated in Spark SQL (seeded hashes), all stores x products x dates."""
        seed = self.lake.seed
        stores = ",".join(str(s["store_id"]) for s in self.lake.stores
                          if s["store_id"] != 0 or True)
        nprod = len(self.lake.products)
        return self.spark.sql(f"""
            SELECT d.snapshot_date, CAST(s.store_id AS INT) AS store_id, CAST(p.id + 1 AS INT) AS product_id,
                   CAST(pmod(xxhash64({seed}, p.id, s.store_id, d.k), 40)
                        + pmod(xxhash64({seed}, p.id, s.store_id), 25) AS INT) AS on_hand_units,
                   CAST(CASE WHEN pmod(xxhash64({seed} + 1, p.id, s.store_id, d.k), 7) = 0
                             THEN pmod(xxhash64({seed} + 2, p.id, d.k), 30) ELSE 0 END AS INT) AS on_order_units
            FROM (SELECT date_add(DATE '{lo.isoformat()}', CAST(id AS INT)) AS snapshot_date, id AS k
                  FROM range({(hi - lo).days + 1})) d
            CROSS JOIN (SELECT explode(array({stores})) AS store_id) s
            CROSS JOIN range({nprod}) p""").coalesce(1)

    def facts(self, lo: dt.date, hi: dt.date, when: float, core_only: bool, orders_hi: dt.date | None = None) -> list[tuple]:
        """The writes of one load: facts dated lo..hi (orders and items up to orders_hi)."""
        L = self.lake
        oh = orders_hi or hi
        W: list[tuple] = []
        orders = self.orders_rows(lo, oh)
        order_ids = {o["order_id"] for o in orders}
        items = self._between(L.items, "order_date_local", lo, oh)
        W.append(("core.fct_orders", T.TABLES["core.fct_orders"].columns, orders, "append", "evolve"))
        W.append(("core.fct_order_items", T.TABLES["core.fct_order_items"].columns, items, "append", "evolve"))
        pays = [p for p in L.payments if p["order_id"] in order_ids]
        W.append(("core.fct_payments", T.TABLES["core.fct_payments"].columns, pays, "append", "evolve"))
        rc, rrows = self.revenue(lo, hi)
        W.append(("mart.agg_daily_store_revenue", rc, rrows, "append", "evolve"))
        for t, n in (("core.fct_orders", len(orders)), ("core.fct_order_items", len(items)), ("core.fct_payments", len(pays)),
                     ("mart.agg_daily_store_revenue", len(rrows))):
            self.record_load(t, lo, hi, when, n)
        if oh > hi:
            self.record_load("core.fct_orders", oh, oh, when, 0, status="partial", note="intraday load")
            self.record_load("core.fct_order_items", oh, oh, when, 0, status="partial", note="intraday load")
        if core_only:
            return W
        since = self.loaded_to.get("secondary", lo - dt.timedelta(days=1)) + dt.timedelta(days=1)
        self.loaded_to["secondary"] = hi
        sec = [("core.fct_refunds", L.refunds, "refund_date"), ("core.fct_loyalty_events", L.loyalty, "event_date"),
               ("core.fct_marketing_spend_daily", L.marketing, "spend_date")]
        for name, rows, col in sec:
            part = self._between(rows, col, since, hi)
            W.append((name, T.TABLES[name].columns, part, "append", "evolve"))
            self.record_load(name, since, hi, when, len(part))
        ids = {o["order_id"] for o in self._between(L.orders, "order_date_local", since, hi)}
        ships = [s for s in L.shipments if s["order_id"] in ids]
        W.append(("core.fct_shipments", T.TABLES["core.fct_shipments"].columns, ships, "append", "evolve"))
        sc, srows = self.sessions_rows(since, hi)
        W.append(("core.fct_web_sessions", sc, srows, "append", "evolve"))
        W.append(("raw.pos_transactions", T.TABLES["raw.pos_transactions"].columns,
                  [p for p in L.pos if p["txn_id"] in ids], "append", "evolve"))
        W.append(("raw.web_orders", T.TABLES["raw.web_orders"].columns,
                  [w for w in L.web_orders if w["order_id"] in ids], "append", "evolve"))
        for t in ("core.fct_shipments", "core.fct_web_sessions", "raw.pos_transactions", "raw.web_orders"):
            self.record_load(t, since, hi, when, 0)
        return W

    def load_log_write(self) -> tuple:
        rows, self.load_log = self.load_log, []
        return ("ops.etl_load_log", T.TABLES["ops.etl_load_log"].columns, rows, "append", "evolve")

    # the marts built by Spark jobs over the core tables (Loader.build): (plain mart, job parameters)
    def weekly_sales(self, upto: dt.date) -> tuple[str, dict[str, Any]]:
        return ("mart.agg_weekly_category_sales", {"upto": upto})

    def finance(self, closed_before: dt.date) -> tuple[str, dict[str, Any]]:
        return ("mart.rpt_finance_monthly_revenue", {"closed_before": closed_before, "by_region": self.finance_region})

    def customers(self, as_of: dt.date) -> tuple:
        if self.customer_scd2:
            return ("core.dim_customer", T.CUSTOMER_SCD2, self.lake.customer_versions(as_of), "overwrite", "evolve")
        return ("core.dim_customer", T.TABLES["core.dim_customer"].columns, self.lake.customers_type1(as_of),
                "overwrite", "evolve")

    def ltv(self, as_of: dt.date) -> tuple[str, dict[str, Any]]:
        return ("mart.agg_customer_ltv", {"as_of_month": (as_of.replace(day=1) - dt.timedelta(days=1)).replace(day=1)})


def _closed_before(d: dt.date) -> dt.date:
    """The first day of the fiscal period containing d (periods before it are closed)."""
    f = fiscal(d)
    weeks = (4, 5, 4, 4, 5, 4, 4, 5, 4, 4, 5, 4)
    return f.fiscal_year_start + dt.timedelta(weeks=sum(weeks[: f.fiscal_period - 1]))


# ---------------------------------------------------------------------------------------------- annotations
class Annotator:
    """Writes annotations with backdated times, per history."""

    def __init__(self, cats: dict[str, Any], naming: Naming | None = None):
        self.cats = cats
        self.nm = naming or Naming.plain()
        self.clock: dict[str, float] = {h: 0.0 for h in cats}
        self.commits = {h: 0 for h in cats}

    def sql(self, sql: str) -> str:
        """SQL (a statement, an expression or a filter) written against LAKE.md, under the variant's names."""
        from eval.lake.translate import translate

        return translate(sql, self.nm, qualify=False)

    def tick(self, h: str, t: float) -> float:
        self.clock[h] = max(self.clock[h] + 1.0, t)
        self.commits[h] += 1
        return self.clock[h]

    def table_fields(self, h: str, table: str, fields: dict[str, Any], t: float, column: str | None = None) -> None:
        import semantic as sm

        nm = self.nm
        if not nm.identity:
            fields = nm.fields(fields, column, self.sql)
            column = nm.column(column) if column is not None else None
        sm.annotate(self.cats[h], nm.full_table(table), fields, column=column, author=ANNOTATOR, time=self.tick(h, t))

    def instructions(self, h: str, t: float) -> None:
        import semantic as sm

        text = A.INSTRUCTIONS if self.nm.identity else self.nm.instructions(A.INSTRUCTIONS)
        sm.annotate(self.cats[h], T.CATALOG, {"instructions": text}, author=ANNOTATOR, time=self.tick(h, t))

    def relationship(self, h: str, table: str, name: str, to: str, on: list[tuple[str, str]], card: str,
                     condition: str | None, t: float) -> None:
        # sm.relate has no time= (it commits at the wall clock), so the annotation is built with the
        # same value layout through new_annotation / write_annotations, which take a time
        from semantic.annotations import new_annotation, write_annotations

        cat, nm = self.cats[h], self.nm
        on = [(nm.column(a), nm.column(b)) for a, b in on]
        condition = nm.column(condition) if condition else condition
        value = {"to": nm.full_table(to), "on": [list(p) for p in on], "cardinality": card, "canonical": True,
                 "condition": condition}
        tt = self.tick(h, t)
        ann = new_annotation(cat, nm.full_table(table), "relationship", f"relationship.{name}", value,
                             columns=[a for a, _ in on], author=ANNOTATOR, time=tt)
        write_annotations(cat, [ann], time=tt, message=f"relate {nm.table(table)} -> {nm.table(to)} ({name})")

    def metric(self, h: str, table: str, name: str, expression: str, filt: str | None, time_column: str | None,
               unit: str, description: str, synonyms: list[str], t: float, columns: list[str]) -> None:
        from semantic.annotations import new_annotation, write_annotations

        cat, nm = self.cats[h], self.nm
        if not nm.identity:
            expression, filt = self.sql(expression), self.sql(filt) if filt else filt
            time_column = nm.column(time_column) if time_column else time_column
            description, columns = nm.text(description), [nm.column(c) for c in columns]
        value = {"expression": expression, "filter": filt, "time_column": time_column, "unit": unit,
                 "description": description, "synonyms": synonyms}
        tt = self.tick(h, t)
        ann = new_annotation(cat, nm.full_table(table), "metric", f"metric.{name}", value, columns=columns,
                             author=ANNOTATOR, time=tt)
        write_annotations(cat, [ann], time=tt, message=f"define metric {nm.table(table)}.{name}")

    def verified(self, h: str, question: str, sql: str, t: float) -> None:
        import semantic as sm

        sm.verify_query(self.cats[h], question, self.sql(sql), author=ANNOTATOR, time=self.tick(h, t))

    def remove(self, h: str, table: str, key: str, t: float) -> None:
        from catalog_core import lake

        with self.cats[h].transaction(author=ANNOTATOR, message=f"remove annotation {self.nm.table(table)}:{key}",
                                      meta={"semantic": True}, time=self.tick(h, t)) as txn:
            txn.remove(lake.semantic_path(self.nm.full_table(table), key))


def _metric_columns(table: str, expression: str, filt: str | None, time_column: str | None) -> list[str]:
    text = f"{expression} {filt or ''} {time_column or ''}"
    return [c for c, _ in T.TABLES[table].columns if c in text.replace("(", " ").replace(")", " ").split()
            or f" {c}" in f" {text}"]


def _column_id(cat: CatalogAPI, table: str, column: str, nm: Naming) -> int:
    obj = cat.get("/" + nm.full_table(table).replace(".", "/"))
    assert obj is not None, f"{table} was written before its annotations"
    for c in TableValue.from_raw(obj.value).columns:
        if c.name == nm.column(column) and c.id is not None:
            return c.id
    raise KeyError(f"{table}.{column}")


def _key(cat: CatalogAPI, u_table: str, what: tuple, verified_ids: dict[str, str], nm: Naming) -> str:
    if what[0] == "table":
        return f"table.{what[1]}"
    if what[0] == "column":
        return f"column.{_column_id(cat, u_table, what[1], nm)}.{what[2]}"
    if what[0] == "relationship":
        return f"relationship.{what[1]}"
    if what[0] == "metric":
        return f"metric.{what[1]}"
    return f"verified_query.{verified_ids[what[1]]}"


def _verified_id(question: str, sql: str) -> str:
    import hashlib

    return hashlib.sha1(f"{question.strip()}\n{sql.strip()}".encode()).hexdigest()[:12]


# ---------------------------------------------------------------------------------------------- build
def build(out: str, seed: int = 7, scale: str = "small", log: Callable[[str], None] = print,
          variant: str = "plain") -> dict[str, Any]:
    """Build the lake into `out` (replacing a previous build there); returns the build summary.
    `variant`: plain (LAKE.md's names) or cryptic (eval/lake/naming.py; LAKE-cryptic.md); DIR/names.json
    records the names either way."""
    import catalog_core as cc

    if scale == "enterprise" and variant != "plain":
        raise ValueError("the enterprise world's generated domains have plain names only: build it with variant='plain'")
    naming = Naming.for_variant(variant, seed)

    t_start = time.time()
    steps: list[tuple[str, float]] = []

    def step(msg: str) -> None:
        el = time.time() - t_start
        steps.append((msg, round(el, 1)))
        log(f"[{el:6.1f}s] {msg}")

    if os.path.exists(out):
        for sub in (*HISTORIES, "warehouse", MANIFEST, "lake.json", "_input", NAMES_FILE):
            p = os.path.join(out, sub)
            if os.path.isdir(p):
                shutil.rmtree(p)
            elif os.path.exists(p):
                os.remove(p)
    os.makedirs(out, exist_ok=True)
    warehouse = os.path.abspath(os.path.join(out, "warehouse"))
    tmp = tempfile.mkdtemp(prefix="_input-", dir=out)
    from spark_bridge import local_session

    # the JVM starts (~5 s) while the generator runs in this thread
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="spark-start") as starter:
        spark_started = starter.submit(local_session, app_name="semcat-eval-build", cores=2)
        step(f"generating the Acme lake (seed {seed}, scale {scale})")
        lake = generate(seed, "small" if scale == "enterprise" else scale)
        step(f"generated {len(lake.orders)} orders, {len(lake.items)} order lines, {len(lake.customers)} customers")
        spark = spark_started.result()
    spark.sparkContext.setJobDescription("semcat eval build")
    step("Spark session started")
    cc.mark_lake_root(out)  # the catalogs store paths inside DIR relative: a copy of DIR is an independent lake
    cats = {h: cc.Catalog.open(os.path.join(out, h)) for h in HISTORIES}
    try:
        summary = _run(lake, spark, cats, warehouse, tmp, step, seed, scale, naming)
    finally:
        for c in cats.values():
            c.close()
        shutil.rmtree(tmp, ignore_errors=True)
    if not naming.identity:
        summary["variant"] = naming.variant
        naming.write(os.path.join(out, NAMES_FILE), {"clutter": summary.get("clutter", {})})
    summary["build_seconds"] = round(time.time() - t_start, 1)
    summary["steps"] = steps
    with open(os.path.join(out, "lake.json"), "w") as fh:
        json.dump(summary, fh, indent=1, default=str)
    log(f"[{summary['build_seconds']:6.1f}s] done: {summary['total_rows']} rows in 22 tables, "
        f"{summary['commits']['enriched']} commits (enriched), {summary['commits']['stale']} (stale)")
    return summary


def _run(lake: Lake, spark: Any, cats: dict[str, Any], warehouse: str, tmp: str, step: Callable[[str], None],
         seed: int, scale: str, naming: Naming) -> dict[str, Any]:
    ld = Loader(spark, cats, warehouse, tmp, step, naming)
    try:
        return _history(ld, lake, spark, cats, warehouse, step, seed, scale, naming)
    finally:
        ld.close()  # no commit runs once the catalogs close


def _history(ld: Loader, lake: Lake, spark: Any, cats: dict[str, Any], warehouse: str, step: Callable[[str], None],  # noqa: C901 - the lake's scripted history, one step per day of it: a split would hide the order of events
             seed: int, scale: str, naming: Naming) -> dict[str, Any]:
    nm = naming
    H = History(lake, ld, spark, step)
    ann = Annotator(cats, nm)
    ent = None
    if scale == "enterprise":  # the generated domains' 18 months and the traps come first (eval.lake.enterprise)
        from eval.lake.enterprise import Enterprise

        ent = Enterprise(cats, spark, warehouse, seed, log=step)
        ent.prehistory()
        ent.traps()
    for c in cats.values():
        if c.get("/acme") is not None:  # created by the enterprise prehistory
            continue
        with c.transaction(author=AUTHOR, message="create catalog acme", time=at(119, 4.0)) as txn:
            txn.add("/acme", {"obj_type": "catalog", "properties": {"warehouse": warehouse}})

    # ---- initial load: everything up to d-120, at d-119 05:00 UTC
    t0, hi0 = at(119, 5.0), day(120)
    W: list[tuple] = [(n, T.TABLES[n].columns, rows, "overwrite", "evolve") for n, rows in (
        ("core.dim_date", lake.dim_date), ("core.dim_store", lake.stores), ("core.map_store_code", lake.map_store_code),
        ("core.dim_product", lake.products))]
    W.append(H.customers(hi0))
    W += H.facts(FIRST_DATE, hi0, t0, core_only=False)
    W.append(("core.fct_inventory_daily", None, H.inventory_df(hi0 - dt.timedelta(days=89), hi0), "append", "evolve"))
    H.record_load("core.fct_inventory_daily", hi0 - dt.timedelta(days=89), hi0, t0, 0)
    J = [H.weekly_sales(hi0), H.finance(_closed_before(hi0)), H.ltv(hi0)]
    W.append(("legacy.sales_daily", T.TABLES["legacy.sales_daily"].columns, lake.legacy_sales(FIRST_DATE, hi0),
              "append", "evolve"))
    H.record_load("legacy.sales_daily", FIRST_DATE, hi0, t0, 0)
    W.append(H.load_log_write())
    ld.load(t0, "initial load up to 2024-11-10", W)
    ld.build(t0 + MART_DELAY, "build marts from the initial load", J)
    H.loaded_to.update({"core": hi0, "legacy": hi0, "inventory": hi0})
    ld.wait()
    step(f"initial load committed ({ld.spark_writes} Spark writes)")

    # ---- annotations at d-119, both histories (the stale one with its wrong-from-start controls)
    rng = random.Random(seed * 1009 + 17)
    n_ann_guess = 0
    controls = _pick_controls(rng, len(A.WRONG_FROM_START))
    t_ann = at(119, 15.0)

    def author_d119(h: str) -> None:
        ann.instructions(h, t_ann)
        for table, fields in A.TABLE_DOCS.items():
            f = dict(fields)
            if h == "stale":
                for i in controls:
                    ct, what, val = A.WRONG_FROM_START[i]
                    if ct == table and what[0] == "table":
                        f[what[1]] = val
            ann.table_fields(h, table, f, t_ann)
        for (table, column), fields in A.COLUMN_DOCS.items():
            f = dict(fields)
            if h == "stale":
                for i in controls:
                    ct, what, val = A.WRONG_FROM_START[i]
                    if ct == table and what[0] == "column" and what[1] == column:
                        f[what[2]] = val
            ann.table_fields(h, table, f, t_ann, column=column)
        for frm, to, on, card, name, cond in A.RELATIONSHIPS:
            ann.relationship(h, frm, name, to, on, card, cond, t_ann)
        for table, name, expr, filt, tcol, unit, desc, syn in A.METRICS:
            ann.metric(h, table, name, expr, filt, tcol, unit, desc, syn, t_ann,
                       _metric_columns(table, expr, filt, tcol))
        for q, sql in A.VERIFIED.values():
            ann.verified(h, q, sql, t_ann)

    per_history(author_d119)
    verified_ids = {k: _verified_id(q, ann.sql(s)) for k, (q, s) in A.VERIFIED.items()}
    from semantic.annotations import read_catalog_annotations

    all_d119 = read_catalog_annotations(cats["enriched"], "acme")
    # (a coded column's `labels` travel with its enum, and `load_log` names where loads are recorded: not
    # counted, so the stale set is the one the lake had before either existed)
    acme_tables = {nm.full_table(t) for t in T.TABLES}  # (an enterprise build's generated domains are not counted)
    n_ann_guess = sum(len([a for a in v if a.field not in UNCOUNTED]) for k, v in all_d119.items()
                      if k in acme_tables) + 1
    step(f"annotations authored at d-119: {n_ann_guess} in each history")

    # ---- the stale set: stratified by kind, seeded; plus the controls
    pool: dict[str, list[tuple[str, str, str]]] = {}
    seen: set[tuple[str, str]] = set()
    keys = {i: _key(cats["enriched"], u.table, u.what, verified_ids, nm) for i, u in enumerate(A.UPDATES)}
    for i, u in enumerate(A.UPDATES):
        key = keys[i]
        if (u.table, key) in seen:
            continue
        seen.add((u.table, key))
        pool.setdefault(u.kind, []).append((u.table, key, f"d-{u.change}"))
    target = round(STALE_FRACTION * n_ann_guess)
    n_control = len(controls)
    stale_set = _stratified(rng, pool, max(0, target - n_control))
    manifest = [{"table": nm.full_table(t), "key": k, "annotation": f"{nm.full_table(t)}:{k}", "kind": kind,
                 "detectable": True, "change": ch} for kind, picks in sorted(stale_set.items()) for t, k, ch in picks]
    for i in controls:
        ct, what, _val = A.WRONG_FROM_START[i]
        k = _key(cats["stale"], ct, what, verified_ids, nm)
        manifest.append({"table": nm.full_table(ct), "key": k, "annotation": f"{nm.full_table(ct)}:{k}",
                         "kind": "wrong_from_start", "detectable": False, "change": None})
    skip = {(m["table"], m["key"]) for m in manifest}

    # ---- the cryptic variant's clutter tables (none for plain), committed on batch days
    from eval.lake import clutter as CL

    clutter = CL.plan(nm, lake, seed)
    clutter_on: dict[int, list[CL.Clutter]] = {}
    for c in clutter:
        clutter_on.setdefault(c.n, []).append(c)

    # ---- the history, in time order
    def annotate_updates(change: int, t: float) -> None:
        def one(h: str) -> None:
            for i, u in enumerate(A.UPDATES):
                if u.change != change:
                    continue
                key = keys[i]
                if h == "stale" and (nm.full_table(u.table), key) in skip:
                    continue
                _apply_update(ann, h, u, key, t, verified_ids)
            for table, column, fields in A.ADDITIONS.get(change, []):
                ann.table_fields(h, table, fields, t, column=column)

        per_history(one)

    batches = sorted({105, 91, 77, 63, 49, 35, 21, 80, 60, 45, 40, 30, 20, 10, 7, 6, 5, 4, 3, 2, 1, 0}, reverse=True)
    prev = 119
    for n in batches:
        # d0's load lands MART_DELAY before d0 (the eval's now), so the marts built from it commit at d0:
        # commit times strictly increase, and nothing is committed after now
        when = D0.timestamp() - MART_DELAY if n == 0 else at(n, 6.0)
        lo, hi = day(prev + 1) if prev == 119 else day(prev), day(n + 1)
        lo = H.loaded_to["core"] + dt.timedelta(days=1)
        secondary = n in (105, 91, 77, 63, 49, 35, 21, 7, 1, 0) or n in (20,)
        W = H.facts(lo, hi, when, core_only=not secondary, orders_hi=D0_DATE if n == 0 else None)
        H.loaded_to["core"] = hi
        extra_msg = []
        J = []  # the marts built from this load (a commit after its own)
        # marts and dimensions
        if n > 40:
            J.append(H.weekly_sales(hi))
        elif n <= 40 and dt.date.fromordinal(day(n).toordinal()).weekday() == 0 or n == 35 or n == 21 or n == 7:
            last_week_end = day(n) - dt.timedelta(days=(day(n).weekday() + 1) % 7 + 1)
            J.append(H.weekly_sales(last_week_end))
        if n > 60:
            W.append(("legacy.sales_daily", T.TABLES["legacy.sales_daily"].columns,
                      lake.legacy_sales(H.loaded_to["legacy"] + dt.timedelta(days=1), hi), "append", "evolve"))
            H.record_load("legacy.sales_daily", H.loaded_to["legacy"] + dt.timedelta(days=1), hi, when, 0)
            H.loaded_to["legacy"] = hi
        elif n == 60:
            W.append(("legacy.sales_daily", T.TABLES["legacy.sales_daily"].columns,
                      lake.legacy_sales(H.loaded_to["legacy"] + dt.timedelta(days=1), day(61)), "append", "evolve"))
            H.record_load("legacy.sales_daily", H.loaded_to["legacy"] + dt.timedelta(days=1), day(61), when, 0,
                   note="last load: table deprecated")
            H.loaded_to["legacy"] = day(61)
            extra_msg.append("last load of legacy.sales_daily")
        # inventory: daily in the last week (d-5 and d-4 fail, backfilled at d-3), else with each batch
        inv_lo, inv_hi = H.loaded_to["inventory"] + dt.timedelta(days=1), hi
        if n in (5, 4):
            H.record_load("core.fct_inventory_daily", hi, hi, when, 0, status="failed", note="upstream timeout")
        elif n == 0:  # the last load rebuilds the 90-day window (d-90..d-1)
            W.append(("core.fct_inventory_daily", None, H.inventory_df(day(90), hi), "overwrite", "evolve"))
            H.record_load("core.fct_inventory_daily", inv_lo, inv_hi, when, 0)
            H.loaded_to["inventory"] = hi
        else:
            W.append(("core.fct_inventory_daily", None, H.inventory_df(inv_lo, inv_hi), "append", "evolve"))
            if n == 3:  # the backfill of the two failed days (attempt 2), then the day itself
                H.record_load("core.fct_inventory_daily", inv_lo, inv_hi - dt.timedelta(days=1), when, 0, attempt=2,
                       note="backfill")
                H.record_load("core.fct_inventory_daily", inv_hi, inv_hi, when, 0)
            else:
                H.record_load("core.fct_inventory_daily", inv_lo, inv_hi, when, 0)
            H.loaded_to["inventory"] = hi
        cb = _closed_before(hi)
        if cb > _closed_before(day(prev + 1)) or n == 10:
            if n == 10:
                H.finance_region = True
            J.append(H.finance(cb))
        if day(n).month != day(prev).month:
            J.append(H.ltv(day(n)))
        if n in (30, 20, 10, 1):
            if n == 30:
                H.customer_scd2 = True
            W.append(H.customers(hi))
        # the change days
        if n == 80:
            H.revenue_usd = True
            rc, rrows = H.revenue(FIRST_DATE, hi)
            W = [w for w in W if w[0] != "mart.agg_daily_store_revenue"]
            W.append(("mart.agg_daily_store_revenue", rc, rrows, "overwrite", "replace"))
            extra_msg.append("agg_daily_store_revenue rebuilt in dollars")
        if n == 45:
            H.restated = True
            W = [w for w in W if w[0] != "core.fct_orders"]
            W.append(("core.fct_orders", T.TABLES["core.fct_orders"].columns, H.orders_rows(FIRST_DATE, hi),
                      "overwrite", "evolve"))
            st = functools.partial(nm.code, "status")  # the status values as written (codes on cryptic)
            extra_msg.append(f"order status restated ({st('returned')} -> {st('refunded')}, {st('partially_refunded')} "
                             "added)")
        if n == 20:
            H.sessions_uuid = True
            sc, srows = H.sessions_rows(SESSIONS_FROM, hi)
            W = [w for w in W if w[0] != "core.fct_web_sessions"]
            W.append(("core.fct_web_sessions", sc, srows, "overwrite", "replace"))
            extra_msg.append("web sessions restated with customer_uuid")
        if n == 0:  # store 17 is partial on d-1
            rc, rrows = H.revenue(day(1), day(1), partial=(17, day(1)))
            W = [w for w in W if w[0] != "mart.agg_daily_store_revenue"]
            W.append(("mart.agg_daily_store_revenue", rc, rrows, "append", "evolve"))
            H.load_log = [r for r in H.load_log if not (r["table_name"] == "mart.agg_daily_store_revenue")]
            H.record_load("mart.agg_daily_store_revenue", day(1), day(1), when, len(rrows))
            H.record_load("mart.agg_daily_store_revenue", day(1), day(1), when, 0, status="partial",
                   note="store 17 POS feed incomplete", suffix="/store_id=17")
        W.append(H.load_log_write())
        W += [CL.write(c, nm) for c in clutter_on.get(n, [])]
        ld.load(when, f"load {lo.isoformat()}..{hi.isoformat()}" + ("; " + "; ".join(extra_msg) if extra_msg else ""), W)
        ld.build(when + MART_DELAY, f"build {', '.join(m.split('.')[1] for m, _ in J)} from the load of "
                 f"{lo.isoformat()}..{hi.isoformat()}", J)
        if n == 3:  # d-4 and d-5 inventory backfilled: recorded by the load above (attempt 2)
            pass
        done = (f"d-{n} ({day(n)}): load committed ({ld.spark_writes} Spark writes so far)"
                + (f"; {'; '.join(extra_msg)}" if extra_msg else ""))
        ld.then(lambda msg=done: step(msg))  # type: ignore[misc]
        if ent is not None and n in ENT_LATE_DAYS:  # the generated domains' load, after this batch's commits
            ld.then(lambda n=n, when=when, e=ent: e.late_load(n, when + 2 * 3600))  # type: ignore[misc]
        # the enriched history catches up within two days of each change
        if n in (80, 60, 45, 40, 30, 20, 10):
            ld.wait()  # annotations read the new schemas, and commit after the load
            annotate_updates(n, when + (2 * 86400 - 3600 if n == 30 else 86400 - 3600))
            step(f"d-{n}: annotation updates (enriched: all; stale: all but the seeded stale set)")
        if clutter_on.get(n):
            ld.wait()

            def annotate_clutter(h: str, cs: list[CL.Clutter] = clutter_on[n], t: float = when + 3 * 3600) -> None:
                for c in cs:
                    ann.table_fields(h, c.name, c.fields, t)

            per_history(annotate_clutter)
            step(f"d-{n}: {len(clutter_on[n])} clutter tables written and annotated in both histories")
        prev = n

    ld.wait()
    ms = ld.mart_seconds
    step(f"marts built by Spark jobs (on the committer thread): {sum(ms.values()):.1f}s = read {ms['read']:.1f}s + "
         f"run and stage {ms['run']:.1f}s + commit {ms['commit']:.1f}s; core tables read whole "
         f"{ld.mart_reads['whole']}x, only their added files {ld.mart_reads['since']}x")
    total = sum(ld.rows.values())
    if ent is not None:
        manifest += ent.stale_entries()
    with open(os.path.join(os.path.dirname(warehouse), MANIFEST), "w") as fh:
        json.dump({"seed": seed, "stale_seed": seed * 1009 + 17, "fraction": STALE_FRACTION,
                   "control_fraction": CONTROL_FRACTION, "annotations_at_d119": n_ann_guess,
                   "stale": manifest, **({"annotation_traps": ent.annotation_traps()} if ent is not None else {})},
                  fh, indent=1)
    commits = {h: len(c.commits(since=None)) for h, c in cats.items()}
    in_window = {h: len([c for c in cat.commits() if c.time >= at(119, 0.0)]) for h, cat in cats.items()}
    for c in cats.values():
        c.snapshot("d0", c.latest_vid)
    step(f"manifest: {len(manifest)} stale annotations of {n_ann_guess} ({len(controls)} wrong from the start)")
    return {"seed": seed, "scale": scale, "d0": D0.isoformat(), "rows": dict(sorted(ld.rows.items())),
            "total_rows": total, "commits": commits, "commits_since_d119": in_window,
            "spark_writes": ld.spark_writes, "stale_annotations": len(manifest), "annotations_at_d119": n_ann_guess,
            "latest_vid": {h: c.latest_vid for h, c in cats.items()},
            **({"enterprise": ent.summary()} if ent is not None else {}),
            **({"clutter": {f"acme.{c.name}": {"family": c.family, "shadows": nm.full_table(c.source),
                                                "day": f"d-{c.n}"} for c in clutter}} if clutter else {})}


def _pick_controls(rng: random.Random, n_candidates: int) -> list[int]:
    return sorted(rng.sample(range(n_candidates), 8))


def _stratified(rng: random.Random, pool: dict[str, list[tuple[str, str, str]]], n: int) -> dict[str, list]:
    """Round-robin over kinds (sorted), a seeded pick from each kind's pool, until n are chosen."""
    left = {k: rng.sample(v, len(v)) for k, v in sorted(pool.items())}
    out: dict[str, list] = {}
    while n > 0 and any(left.values()):
        for k in sorted(left):
            if n > 0 and left[k]:
                out.setdefault(k, []).append(left[k].pop())
                n -= 1
    return out


def _apply_update(ann: Annotator, h: str, u: A.Update, key: str, t: float, verified_ids: dict[str, str]) -> None:
    kind = u.what[0]
    if u.value is A.REMOVE:
        ann.remove(h, u.table, key, t)
    elif kind == "table":
        ann.table_fields(h, u.table, {u.what[1]: u.value}, t)
    elif kind == "column":
        ann.table_fields(h, u.table, {u.what[2]: u.value}, t, column=u.what[1])
    elif kind == "relationship":
        frm_col, to_col, cond = u.value
        to = next(r[1] for r in A.RELATIONSHIPS if r[0] == u.table and r[4] == u.what[1])
        ann.relationship(h, u.table, u.what[1], to, [(frm_col, to_col)], "many_to_one",
                         cond.rsplit(".", 1)[-1] if cond else None, t)
    elif kind == "metric":
        expr, filt, tcol = u.value
        m = next(m for m in A.METRICS if m[0] == u.table and m[1] == u.what[1])
        ann.metric(h, u.table, u.what[1], expr, filt, tcol, m[5], m[6], m[7], t, _metric_columns(u.table, expr, filt, tcol))
    elif kind == "verified":
        q, old_sql = A.VERIFIED[u.what[1]]
        for tname in _vq_tables(ann.sql(old_sql)):  # the old version goes; the new one is stored on its tables
            try:
                ann.remove(h, tname, f"verified_query.{verified_ids[u.what[1]]}", t)
            except Exception:  # noqa: BLE001 - not on that table
                pass
        ann.verified(h, q, u.value, t)


def _vq_tables(sql: str) -> list[str]:
    import re

    return sorted({m.group(1) for m in re.finditer(r"acme\.([a-z0-9_]+\.[a-z0-9_]+)", sql)})
