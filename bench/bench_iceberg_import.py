"""Iceberg import rate: `catalog_core.iceberg.import_table` of a 50,000-file Iceberg table.

    .venv/bin/python -m bench.bench_iceberg_import            # 50,000 files, one run
    .venv/bin/python -m bench.bench_iceberg_import --quick    # 5,000 files, median of 3 runs

The source is bench.iceberg_side's store_sales: a pyiceberg SqlCatalog (sqlite) table partitioned
by day (identity, 2,191 days), 12 columns with lower/upper bounds and null counts on every file,
loaded by pyiceberg fast appends of one month each (73 snapshots). Only the metadata is written
(the import reads manifests, never data files). It is built once and cached under
bench/out/iceberg_import/. Each run imports the whole history into a fresh semcat catalog
(73 backdated commits, 2,191 partitions, one leaf per file with decoded bounds). Reported:
files/s end to end, the split between reading Iceberg metadata and committing, and for scale
pyiceberg's own `scan().plan_files()` of the current snapshot (the same manifests, read once).
A re-import of the unchanged table (a no-op) is timed too. JSON: bench/out/iceberg_import.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import time

import catalog_core as cc
from catalog_core.iceberg import import_table

from . import iceberg_side

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")


def one_import(table_root: str, source, run_dir: str) -> dict:
    shutil.rmtree(run_dir, ignore_errors=True)
    cat = cc.Catalog.open(run_dir)
    marks: dict[str, float] = {}

    def progress(stage: str, done: int, total: int) -> None:
        marks.setdefault(f"{stage}_start", time.perf_counter())
        marks[f"{stage}_end"] = time.perf_counter()

    try:
        t0 = time.perf_counter()
        res = import_table(cat, source, iceberg_side.STORE_SALES, into="bench.tpcds.store_sales", progress=progress)
        total = time.perf_counter() - t0
        t1 = time.perf_counter()
        again = import_table(cat, source, iceberg_side.STORE_SALES, into="bench.tpcds.store_sales")
        noop = time.perf_counter() - t1
        assert again.up_to_date
        stats = cat.get("/bench/tpcds/store_sales").value["stats"]
        assert stats["file_count"] == res.files_added, (stats["file_count"], res.files_added)
    finally:
        cat.close()
    read = marks.get("commit_start", t0) - t0
    return {"seconds": total, "read_s": read, "commit_s": total - read, "files": res.files_added,
            "commits": len(res.commits), "noop_s": noop}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="5,000 files, 3 runs")
    ap.add_argument("--files", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=None)
    args = ap.parse_args()
    n = args.files or (5_000 if args.quick else 50_000)
    repeat = args.repeat or (3 if args.quick else 1)
    root = os.path.join(OUT, "iceberg_import")
    t0 = time.perf_counter()
    table = iceberg_side.build_store_sales(os.path.join(root, f"n{n}"), n)
    print(f"source: {n:,} files, {len(table.metadata.snapshots)} snapshots (ready in {time.perf_counter() - t0:.1f}s)",
          flush=True)
    source = iceberg_side.make_catalog(os.path.join(root, f"n{n}"))

    ice_times = []
    for _ in range(repeat):
        fresh = source.load_table(iceberg_side.STORE_SALES)
        t1 = time.perf_counter()
        planned = sum(1 for _ in fresh.scan().plan_files())
        ice_times.append(time.perf_counter() - t1)
        assert planned == n, planned

    runs = [one_import(root, source, os.path.join(root, "semcat-run")) for _ in range(repeat)]
    shutil.rmtree(os.path.join(root, "semcat-run"), ignore_errors=True)
    med = {k: statistics.median(r[k] for r in runs) for k in ("seconds", "read_s", "commit_s", "noop_s")}
    ice = statistics.median(ice_times)
    rate = n / med["seconds"]
    print(f"import {n:,} files / {runs[0]['commits']} snapshots: {med['seconds']:.2f}s -> {rate:,.0f} files/s "
          f"(read Iceberg metadata {med['read_s']:.2f}s, commit {med['commit_s']:.2f}s = "
          f"{n / med['commit_s']:,.0f} files/s); median of {repeat}")
    print(f"pyiceberg scan().plan_files() of the same table: {ice:.2f}s ({n / ice:,.0f} files/s); "
          f"import / plan_files = {med['seconds'] / ice:.2f}x")
    print(f"re-import of the unchanged table (writes nothing): {med['noop_s'] * 1000:.0f} ms")
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "iceberg_import.json"), "w") as f:
        json.dump({"files": n, "repeat": repeat, "runs": runs, "median": med, "files_per_s": rate,
                   "pyiceberg_plan_files_s": ice}, f, indent=2)


if __name__ == "__main__":
    main()
