"""Iceberg REST over a long history: semcat's `/iceberg` beside pyiceberg's SqlCatalog, in one run.

    .venv/bin/python -m bench.bench_iceberg_history                      # 1,500 and 9,000 snapshots
    .venv/bin/python -m bench.bench_iceberg_history --snapshots 300      # a quick run
    .venv/bin/python -m bench.bench_iceberg_history --snapshots 1500,9000 --loads 20

For each history length H: one table (4 columns, unpartitioned) built through the engine by H
commits of one file each (the files are registered, not written: nothing here reads data), then,
on a real uvicorn server on loopback with auth on (in this process):

- first load: the first REST `loadTable` after the server starts, which materializes the Iceberg
  metadata of the whole history (H manifest lists; manifests shared across snapshots and merged
  by levels, DESIGN.md "Iceberg REST catalog"), as one HTTP GET (server time + transfer) and the
  bytes of Iceberg files (`*.avro`, `*.metadata.json`) it wrote, and the CPU seconds the process
  used meanwhile (server threads and client: on a shared machine, the figure the load changes least);
- warm load p50: the same GET again (the cached answer; `--loads` times), answered 304 to
  `If-None-Match` (the server's own time: everything but moving the body), with `snapshots=refs`, and pyiceberg's `load_table` (client parsing included); SqlCatalog's
  `load_table` of the same metadata (registered in a sqlite SqlCatalog: a sqlite read plus reading
  and parsing the metadata JSON);
- one append: `table.append(<one row>)` through each catalog (pyiceberg writes the Parquet file,
  a manifest and a manifest list; REST commits through the server, SqlCatalog writes a new
  metadata JSON), with the bytes of Iceberg files each wrote (REST: the client's files plus the
  server's materialized ones); also through REST with `snapshot-loading-mode=refs` (the client
  loads only the snapshots refs point at, and asks with `header.X-Semcat-Commit-Snapshots: refs`
  for a commit answer holding only those, so its own work does not grow with the history).

JSON: bench/out/iceberg_history.json. The machine's load changes these numbers: read them beside
`uptime` (printed, with the load average, at the end).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable

import pyarrow as pa
import requests
from pyiceberg.catalog import load_catalog
from pyiceberg.catalog.sql import SqlCatalog

import catalog_core as cc
from mcp_server.http.auth import Tokens
from mcp_server.http.server import serve_in_thread

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")
TOKEN = "bench-iceberg-history"
SCHEMA = {"columns": [{"name": "id", "type": "bigint", "id": 1}, {"name": "cat", "type": "string", "id": 2},
                      {"name": "d", "type": "date", "id": 3}, {"name": "amount", "type": "double", "id": 4}]}


def iceberg_bytes(root: str) -> int:
    total = 0
    for d, _dirs, files in os.walk(root):
        for f in files:
            if f.endswith((".avro", ".metadata.json", ".parquet")):
                total += os.path.getsize(os.path.join(d, f))
    return total


def build(data: str, location: str, n: int) -> float:
    cat = cc.Catalog.open(data)
    t0 = time.perf_counter()
    try:
        with cat.transaction(author="bench") as t:
            t.add("/acme", {"obj_type": "catalog", "properties": {}})
            t.add("/acme/core", {"obj_type": "namespace", "properties": {}})
            t.add("/acme/core/t", {"obj_type": "table", "format": "parquet", "schema": SCHEMA, "partition_by": [],
                                   "stats": {}, "properties": {}, "location": location})
        for i in range(n):
            with cat.transaction(author="bench") as t:
                t.add(f"/acme/core/t/f{i:06d}", {
                    "obj_type": "file", "path": f"{location}/data/f{i:06d}.parquet", "format": "parquet",
                    "row_count": 1, "size_bytes": 1200,
                    "columns": {"id": {"min": i, "max": i, "null_count": 0},
                                "cat": {"min": f"c{i % 7}", "max": f"c{i % 7}", "null_count": 0},
                                "d": {"min": "2024-01-01", "max": "2024-01-01", "null_count": 0},
                                "amount": {"min": i * 0.5, "max": i * 0.5, "null_count": 0}}}, leaf=True)
    finally:
        cat.close()
    return time.perf_counter() - t0


def row(i: int) -> pa.Table:
    import datetime as dt

    return pa.table({"id": pa.array([i], pa.int64()), "cat": pa.array([f"c{i % 7}"]),
                     "d": pa.array([dt.date(2024, 1, 1)], pa.date32()), "amount": pa.array([i * 0.5])})


def p50(xs: list[float]) -> float:
    return round(sorted(xs)[len(xs) // 2] * 1000, 1)


def one(work: str, n: int, loads: int) -> dict[str, object]:
    # the table's location inside the catalog's warehouse: a REST commit adding a data file outside
    # the storage roots is refused (docs/iceberg-rest.md "Locations")
    data = os.path.join(work, "semcat")
    location = os.path.join(data, "warehouse", "acme", "core", "t")
    os.makedirs(os.path.join(location, "data"))
    c0 = time.process_time()
    res: dict[str, object] = {"snapshots": n, "build_s": round(build(data, location, n), 1)}
    # the build's CPU and the Iceberg files its commits wrote (materialized at commit time: a
    # manifest and a manifest list per snapshot, docs/iceberg-rest.md "A long history")
    res["build_cpu_s"] = round(time.process_time() - c0, 2)
    res["build_written_mb"] = round(iceberg_bytes(work) / 1e6, 1)
    engine = cc.Catalog.open(data)
    srv = serve_in_thread(engine, tokens=Tokens({TOKEN: "write"}))
    sql_dir = os.path.join(work, "sql")
    os.makedirs(sql_dir)
    try:
        url = srv.url + "/iceberg/v1/acme/namespaces/core/tables/t"
        hdr = {"Authorization": f"Bearer {TOKEN}"}
        before = iceberg_bytes(work)
        res["load_avg_at_first_load"] = round(os.getloadavg()[0], 1)
        t0, c0 = time.perf_counter(), time.process_time()
        r = requests.get(url, headers=hdr, timeout=3600)
        res["first_load_s"] = round(time.perf_counter() - t0, 2)
        # CPU seconds of this process (the server's threads and the client) during the first load:
        # what a shared machine does not change much
        res["first_load_cpu_s"] = round(time.process_time() - c0, 2)
        r.raise_for_status()
        res["first_load_written_mb"] = round((iceberg_bytes(work) - before) / 1e6, 1)
        res["response_mb"] = round(len(r.content) / 1e6, 2)
        meta_loc = r.json()["metadata-location"]
        etag = r.headers.get("ETag", "")
        # the server's own time for a warm load: the same GET answered 304 (If-None-Match), i.e. all of
        # the server's work (auth, the cached view, its ETag) without moving the 5.7 MB body
        res["rest_warm_304_p50_ms"] = p50(_timed(lambda: requests.get(url, headers={**hdr, "If-None-Match": etag},
                                                                      timeout=60), loads))
        res["rest_warm_get_p50_ms"] = p50(_timed(lambda: requests.get(url, headers=hdr, timeout=60), loads))
        res["rest_warm_get_refs_p50_ms"] = p50(_timed(lambda: requests.get(url + "?snapshots=refs", headers=hdr,
                                                                          timeout=60), loads))
        rest = load_catalog("semcat", type="rest", uri=srv.url + "/iceberg", warehouse="acme", token=TOKEN)
        res["rest_pyiceberg_load_p50_ms"] = p50(_timed(lambda: rest.load_table("core.t"), max(3, loads // 4)))
        # refs mode, and commit answers with the refs' snapshots only (semcat's opt-in header; without
        # it pyiceberg parses every snapshot of the CommitTableResponse: 7.8 s of 10 s at 9,000)
        refs = load_catalog("semcat-refs", type="rest", uri=srv.url + "/iceberg", warehouse="acme", token=TOKEN,
                            **{"snapshot-loading-mode": "refs", "header.X-Semcat-Commit-Snapshots": "refs"})
        res["rest_pyiceberg_load_refs_p50_ms"] = p50(_timed(lambda: refs.load_table("core.t"), max(3, loads // 4)))
        # the same metadata in a SqlCatalog (its own copy of the metadata file: its commits write beside it)
        sql = SqlCatalog("sql", uri=f"sqlite:///{sql_dir}/sql.db", warehouse=f"file://{sql_dir}")
        sql.create_namespace("core")
        sql.register_table("core.t", meta_loc)
        res["sql_load_p50_ms"] = p50(_timed(lambda: sql.load_table("core.t"), max(3, loads // 4)))
        for label, catalog in (("rest_refs", refs), ("rest", rest), ("sql", sql)):
            table = catalog.load_table("core.t")
            before = iceberg_bytes(work)
            t0 = time.perf_counter()
            table.append(row(n + 1))
            res[f"{label}_append_ms"] = round((time.perf_counter() - t0) * 1000, 1)
            res[f"{label}_append_written_kb"] = round((iceberg_bytes(work) - before) / 1e3, 1)
        t = rest.load_table("core.t")
        assert len(t.snapshots()) >= n + 2, len(t.snapshots())
    finally:
        srv.stop()
        engine.close()
    return res


def _timed(fn: Callable[[], object], k: int) -> list[float]:
    fn()
    out = []
    for _ in range(k):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--snapshots", default="1500,9000", help="history lengths, comma-separated")
    ap.add_argument("--loads", type=int, default=20, help="timed warm loads")
    args = ap.parse_args()
    results = []
    for n in [int(x) for x in args.snapshots.split(",") if x.strip()]:
        work = tempfile.mkdtemp(prefix="bench-iceberg-history-")
        try:
            res = one(work, n, args.loads)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        res["load_avg"] = round(os.getloadavg()[0], 1)
        res["uptime"] = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
        results.append(res)
        print(json.dumps(res), flush=True)
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "iceberg_history.json"), "w") as f:
        json.dump({"results": results, "uptime": uptime}, f, indent=1)
    print("| snapshots | first load s (CPU s, MB written) | warm 304 p50 ms (server) | warm GET p50 ms (refs) | pyiceberg load p50 "
          "ms REST (refs) / SqlCatalog | append ms REST (refs) / SqlCatalog | kB written REST (refs) / SqlCatalog "
          "| load average |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['snapshots']:,} | {r['first_load_s']} ({r['first_load_cpu_s']}, {r['first_load_written_mb']}) | {r['rest_warm_304_p50_ms']} | "
              f"{r['rest_warm_get_p50_ms']} ({r['rest_warm_get_refs_p50_ms']}) | {r['rest_pyiceberg_load_p50_ms']} "
              f"({r['rest_pyiceberg_load_refs_p50_ms']}) / {r['sql_load_p50_ms']} | {r['rest_append_ms']} "
              f"({r['rest_refs_append_ms']}) / {r['sql_append_ms']} | {r['rest_append_written_kb']} "
              f"({r['rest_refs_append_written_kb']}) / {r['sql_append_written_kb']} | {r['load_avg']} |")
    print(uptime)


if __name__ == "__main__":
    main()
