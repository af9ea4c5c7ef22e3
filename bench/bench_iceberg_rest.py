"""Iceberg REST catalog of `semcat serve` vs pyiceberg's SqlCatalog, side by side in one run.

    .venv/bin/python -m bench.bench_iceberg_rest            # 40 snapshots, 200 timed loads / 40 commits
    .venv/bin/python -m bench.bench_iceberg_rest --quick    # 10 snapshots, 50 loads / 10 commits
    .venv/bin/python -m bench.bench_iceberg_rest --plan-files 10000 --plan-repeat 20   # (the defaults)

Both sides hold the same table (4 columns, identity-partitioned by day) built by the same pyiceberg
appends of one small file each: semcat through its REST routes (pyiceberg's RestCatalog against a
uvicorn server on loopback, auth on), the baseline in a pyiceberg SqlCatalog (sqlite, local files).
Reported, p50 and p90 in ms:

- loadTable: `catalog.load_table(...)` (REST: one HTTP GET of metadata materialized from the
  catalog's snapshots and served from its cache; SqlCatalog: a sqlite read of the metadata
  location plus reading and parsing that metadata JSON);
- the first (cold) REST load of the table after a server restart: materialized from the commit
  history, manifests and lists found on disk, not rewritten;
- commit: a `table.append(...)` of a one-row file (pyiceberg writes the Parquet file, manifest and
  manifest list on both sides; REST then commits through the server: requirements checked, the
  new snapshot's manifests read back and recorded as catalog files with stats, in one MVOCC
  transaction; SqlCatalog writes a new metadata JSON and swaps its pointer in sqlite).

- scan planning of a 10,000-file table (store_sales-like, 12 columns with statistics, identity-
  partitioned by day over 2,191 days; built through the catalog API: one transaction registering
  the files with their stats, no data written): pyiceberg's `table.scan(...).plan_files()` through
  the REST catalog vs semcat's own `plan_files`, for the whole table and for one day. Cold: REST's
  first `load_table` (materializes the manifests: 10,000 entries with their bounds, the manifest
  list, the metadata) then the first plan; semcat's plan after clearing its caches (and with every
  file's value decoded, what pyiceberg's DataFile objects hold). Warm: p50 of repeated runs, REST
  as a client sees it (load_table + plan_files; pyiceberg caches manifests by path) and plan alone.

JSON: bench/out/iceberg_rest.json. The machine's load changes these numbers: read them beside `uptime`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import tempfile
import time

import pyarrow as pa
from pyiceberg.catalog import load_catalog
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import DateType, DoubleType, LongType, NestedField, StringType

import catalog_core as cc
from mcp_server.http.auth import Tokens
from mcp_server.http.server import serve_in_thread

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")
TOKEN = "bench-iceberg-token"
SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "cat", StringType(), required=False),
                NestedField(3, "d", DateType(), required=False), NestedField(4, "amount", DoubleType(), required=False))
SPEC = PartitionSpec(PartitionField(source_id=3, field_id=1000, transform=IdentityTransform(), name="d"))


def batch(i: int) -> pa.Table:
    return pa.table({"id": pa.array([i], pa.int64()), "cat": pa.array([f"c{i % 7}"]),
                     "d": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i % 30)], pa.date32()),
                     "amount": pa.array([i * 0.5])})


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(q * len(xs)))] * 1000, 2)


def timed(fn, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def plan_bench(work: str, n_files: int, repeat: int) -> dict[str, object]:
    """Scan planning of an `n_files` table: pyiceberg through REST vs semcat's plan_files (see the module)."""
    from pyiceberg.expressions import EqualTo

    from .semcat_side import TABLE, load_store_sales

    engine, build_s = load_store_sales(os.path.join(work, "plan"), n_files, progress=False)
    out: dict[str, object] = {"plan_files_total": n_files, "plan_build_s": round(build_s, 2)}
    day = "2001-06-01"
    srv = serve_in_thread(engine, tokens=Tokens({TOKEN: "write"}))
    try:
        rest = load_catalog("semcat-plan", type="rest", uri=srv.url + "/iceberg", warehouse="bench", token=TOKEN)
        ident = "tpcds.store_sales"
        t0 = time.perf_counter()
        table = rest.load_table(ident)                 # materializes the manifests
        t1 = time.perf_counter()
        files = list(table.scan().plan_files())
        t2 = time.perf_counter()
        assert len(files) == n_files, len(files)
        out["plan_rest_cold_load_ms"] = round((t1 - t0) * 1000, 1)
        out["rest_cold_plan_all_ms"] = round((t2 - t1) * 1000, 1)
        day_files = len(list(table.scan(row_filter=EqualTo("ss_sold_date", day)).plan_files()))
        for label, scan in (("all", lambda t: t.scan()), ("day", lambda t: t.scan(row_filter=EqualTo("ss_sold_date", day)))):
            both = timed(lambda scan=scan: list(scan(rest.load_table(ident)).plan_files()), repeat)
            alone = timed(lambda scan=scan: list(scan(table).plan_files()), repeat)
            out[f"rest_warm_load_plan_{label}_p50_ms"] = pct(both, 0.5)
            out[f"rest_warm_plan_{label}_p50_ms"] = pct(alone, 0.5)
        lt = timed(lambda: rest.load_table(ident), repeat)
        out["rest_warm_load_p50_ms"] = pct(lt, 0.5)
    finally:
        srv.stop()
    try:
        where = {"all": None, "day": f'ss_sold_date = "{day}"'}
        for label, w in where.items():
            engine.clear_caches()
            t0 = time.perf_counter()
            got = engine.plan_files(TABLE, where=w)
            out[f"semcat_cold_plan_{label}_ms"] = round((time.perf_counter() - t0) * 1000, 1)
            assert len(got) == (n_files if w is None else day_files), (label, len(got), day_files)

            def decoded(w: str | None = w) -> None:
                engine.clear_caches()
                for f in engine.plan_files(TABLE, where=w):
                    _ = f.value
            out[f"semcat_cold_plan_values_{label}_p50_ms"] = pct(timed(decoded, max(3, repeat // 4)), 0.5)
            out[f"semcat_warm_plan_{label}_p50_ms"] = pct(timed(lambda w=w: engine.plan_files(TABLE, where=w), repeat), 0.5)
        out["plan_day_files"] = day_files
    finally:
        engine.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--plan-files", type=int, default=10_000, help="files of the scan-planning table (0: skip)")
    ap.add_argument("--plan-repeat", type=int, default=20, help="timed runs of each warm scan plan")
    args = ap.parse_args()
    snaps, loads, commits = (10, 50, 10) if args.quick else (40, 200, 40)
    work = tempfile.mkdtemp(prefix="bench-iceberg-rest-")
    try:
        data = os.path.join(work, "semcat")
        engine = cc.Catalog.open(data)
        srv = serve_in_thread(engine, tokens=Tokens({TOKEN: "write"}))
        rest = load_catalog("semcat", type="rest", uri=srv.url + "/iceberg", warehouse="acme", token=TOKEN)
        wh = os.path.join(work, "sql-wh")
        os.makedirs(wh)
        sql = SqlCatalog("sql", uri=f"sqlite:///{work}/sql.db", warehouse=f"file://{wh}")
        for c in (rest, sql):
            c.create_namespace("core")
            t = c.create_table("core.t", SCHEMA, partition_spec=SPEC)
            for i in range(snaps):
                t.append(batch(i))
        res: dict[str, object] = {"snapshots": snaps, "loads": loads, "commits": commits}
        for label, c in (("rest", rest), ("sql", sql)):
            c.load_table("core.t")   # warm
            lt = timed(lambda c=c: c.load_table("core.t"), loads)
            res[f"{label}_load_p50_ms"], res[f"{label}_load_p90_ms"] = pct(lt, 0.5), pct(lt, 0.9)
        for label, c in (("rest", rest), ("sql", sql)):
            t = c.load_table("core.t")
            ct = []
            for i in range(commits):
                t0 = time.perf_counter()
                t.append(batch(snaps + i))
                ct.append(time.perf_counter() - t0)
            res[f"{label}_commit_p50_ms"], res[f"{label}_commit_p90_ms"] = pct(ct, 0.5), pct(ct, 0.9)
        # a restarted server: the first load materializes from history, reusing the files on disk
        srv.stop()
        engine.close()
        engine = cc.Catalog.open(data)
        srv = serve_in_thread(engine, tokens=Tokens({TOKEN: "write"}))
        rest = load_catalog("semcat", type="rest", uri=srv.url + "/iceberg", warehouse="acme", token=TOKEN)
        t0 = time.perf_counter()
        t = rest.load_table("core.t")
        res["rest_cold_load_ms"] = round((time.perf_counter() - t0) * 1000, 2)
        assert len(t.snapshots()) == snaps + commits
        assert t.scan().to_arrow().num_rows == snaps + commits
        srv.stop()
        engine.close()
        if args.plan_files:
            res.update(plan_bench(work, args.plan_files, args.plan_repeat))
        res["load"] = os.getloadavg()[0]
        os.makedirs(OUT, exist_ok=True)
        with open(os.path.join(OUT, "iceberg_rest.json"), "w") as f:
            json.dump(res, f, indent=1)
        print(json.dumps(res, indent=1))
        print(f"loadTable p50: REST {res['rest_load_p50_ms']} ms vs SqlCatalog {res['sql_load_p50_ms']} ms; "
              f"commit p50: REST {res['rest_commit_p50_ms']} ms vs SqlCatalog {res['sql_commit_p50_ms']} ms "
              f"(load average {res['load']:.1f})")
        if args.plan_files:
            print(f"scan plan of {res['plan_files_total']:,} files, all / one day ({res['plan_day_files']} files), p50 ms: "
                  f"REST cold load {res['plan_rest_cold_load_ms']} + plan {res['rest_cold_plan_all_ms']}; REST warm load+plan "
                  f"{res['rest_warm_load_plan_all_p50_ms']} / {res['rest_warm_load_plan_day_p50_ms']}, plan alone "
                  f"{res['rest_warm_plan_all_p50_ms']} / {res['rest_warm_plan_day_p50_ms']}; semcat plan_files cold "
                  f"{res['semcat_cold_plan_all_ms']} / {res['semcat_cold_plan_day_ms']}, cold+values "
                  f"{res['semcat_cold_plan_values_all_p50_ms']} / {res['semcat_cold_plan_values_day_p50_ms']}, warm "
                  f"{res['semcat_warm_plan_all_p50_ms']} / {res['semcat_warm_plan_day_p50_ms']}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
