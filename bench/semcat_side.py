"""semcat's side of the store_sales benchmarks: load the same file specs as bench.iceberg_side."""

from __future__ import annotations

import os
import shutil
import statistics
import time
from datetime import date, timedelta

import catalog_core as cc

from .iceberg_side import COLUMNS, iter_file_specs

TABLE = "bench.tpcds.store_sales"
TABLE_PATH = "/bench/tpcds/store_sales"


def _schema() -> dict:
    return {"schema_id": 0, "columns": [{"id": fid, "name": name, "type": kind, "nullable": True}
                                        for fid, name, _t, kind in COLUMNS]}


def load_store_sales(data_dir: str, n_files: int, batch: int = 50_000, progress: bool = True) -> tuple[cc.Catalog, float]:
    """(catalog, load seconds); reuses a complete earlier load in `data_dir` (load seconds = 0)."""
    marker = os.path.join(data_dir, f"loaded-{n_files}")
    if os.path.exists(marker):
        return cc.Catalog.open(data_dir), 0.0
    shutil.rmtree(data_dir, ignore_errors=True)
    cat = cc.Catalog.open(data_dir)
    t0 = time.perf_counter()
    with cat.transaction(author="bench", message="create") as t:
        t.add("/bench", {"obj_type": "catalog", "properties": {}})
        t.add("/bench/tpcds", {"obj_type": "namespace", "properties": {}})
        t.add(TABLE_PATH, {"obj_type": "table", "format": "parquet", "schema": _schema(),
                           "partition_by": ["ss_sold_date"], "stats": {}, "properties": {}})
    txn, seen, n = cat.transaction(author="bench", message="load"), set(), 0
    for spec in iter_file_specs(n_files):
        day = spec["day"]
        part = f"{TABLE_PATH}/ss_sold_date={day}"
        if day not in seen:
            seen.add(day)
            txn.add(part, {"obj_type": "partition", "ss_sold_date": day, "stats": {}})
        txn.add(f"{part}/{spec['file_id']}", {"obj_type": "file", "path": spec["path"], "format": "parquet",
                                              "row_count": spec["row_count"], "size_bytes": spec["size_bytes"],
                                              "columns": spec["columns"]}, leaf=True)
        n += 1
        if n % batch == 0:
            txn.commit()
            txn = cat.transaction(author="bench", message="load")
            if progress:
                print(f"  semcat: loaded {n:,}/{n_files:,} files ({n / (time.perf_counter() - t0):,.0f}/s)", flush=True)
    txn.commit()
    secs = time.perf_counter() - t0
    open(marker, "w").close()
    return cat, secs


def day_range(lo: str, days: int) -> tuple[str, str]:
    return lo, (date.fromisoformat(lo) + timedelta(days=days)).isoformat()


def plan_bench(cat: cc.Catalog, lo: str, days: int, repeat: int = 5) -> dict:
    lo, hi = day_range(lo, days)
    where = f'ss_sold_date >= "{lo}" and ss_sold_date < "{hi}"'
    times, stats = [], cc.QueryStats()
    for i in range(repeat + 1):  # the first run warms caches and is not timed, as on pyiceberg's side
        t0 = time.perf_counter()
        files = cat.plan_files(TABLE, where=where, stats=stats)
        if i:
            times.append(time.perf_counter() - t0)
    cold, full = [], []
    for _ in range(repeat):  # without the in-memory file lists: every file read from RocksDB
        cat.clear_caches()
        t0 = time.perf_counter()
        cat.plan_files(TABLE, where=where)
        cold.append(time.perf_counter() - t0)
    for _ in range(repeat):  # cold, and decoding every file's value: what pyiceberg's DataFiles hold
        cat.clear_caches()
        t0 = time.perf_counter()
        for f in cat.plan_files(TABLE, where=where):
            _ = f.value  # decode every file
        full.append(time.perf_counter() - t0)
    return {"times": times, "cold_times": cold, "full_times": full, "files": len(files),
            "scanned": stats.scanned, "seeks": stats.seeks}


def median_ms(xs: list[float]) -> float:
    return statistics.median(xs) * 1000
