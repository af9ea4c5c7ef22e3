"""Iceberg REST catalog of `semcat serve` vs pyiceberg's SqlCatalog, side by side in one run.

    .venv/bin/python -m bench.bench_iceberg_rest            # 40 snapshots, 200 timed loads / 40 commits
    .venv/bin/python -m bench.bench_iceberg_rest --quick    # 10 snapshots, 50 loads / 10 commits

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
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
        res["load"] = os.getloadavg()[0]
        os.makedirs(OUT, exist_ok=True)
        with open(os.path.join(OUT, "iceberg_rest.json"), "w") as f:
            json.dump(res, f, indent=1)
        print(json.dumps(res, indent=1))
        print(f"loadTable p50: REST {res['rest_load_p50_ms']} ms vs SqlCatalog {res['sql_load_p50_ms']} ms; "
              f"commit p50: REST {res['rest_commit_p50_ms']} ms vs SqlCatalog {res['sql_commit_p50_ms']} ms "
              f"(load average {res['load']:.1f})")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
