"""TPC-DS-like catalog metadata for the concurrency-control benchmark (paper §7.1).

Layout under `/wh/tpcds`:
- fact tables (store_sales, catalog_sales, web_sales) partitioned by `d` (one partition per
  day, `d=YYYY-MM-DD`), each partition holding a few file leaves with column min/max stats;
- dimension tables (customer, item, store, date_dim), unpartitioned, whose file leaves carry
  the min/max of the table's business id (e.g. `columns.c_customer_id`), so a fact insert can
  predicate-read the dimension files that cover a business-id range.

`build(dir)` writes the catalog and a `bench_meta.json` next to it; `ensure_base(dir)` builds
once and reuses it (the meta records a layout version).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import time
from datetime import date, timedelta
from typing import Any

import catalog_core as cc

__all__ = ["FACTS", "DIMS", "SMALL_FILE", "build", "ensure_base", "fresh_copy", "bid", "table_path",
           "partition_path", "dim_file", "fact_file"]

LAYOUT_VERSION = 4
CATALOG, NAMESPACE = "wh", "tpcds"
FACTS = ("store_sales", "catalog_sales", "web_sales")
# dimension -> (business id column, id prefix, initial files, ids per file)
DIMS: dict[str, tuple[str, str, int, int]] = {
    "customer": ("c_customer_id", "C", 2000, 1000),
    "item": ("i_item_id", "I", 1000, 200),
    "store": ("s_store_id", "S", 50, 20),
    "date_dim": ("d_date_id", "D", 100, 750),
}
SMALL_FILE = 64 << 20  # optimize merges files below this size
START = date(1998, 1, 1)


def bid(prefix: str, n: int) -> str:
    """Business ids are fixed-width strings, so string order is numeric order."""
    return f"{prefix}{n:010d}"


def table_path(table: str) -> str:
    return f"/{CATALOG}/{NAMESPACE}/{table}"


def partition_path(table: str, day: str) -> str:
    return f"{table_path(table)}/d={day}"


def fact_file(rng: random.Random, day: str, size: int, rows: int) -> dict[str, Any]:
    cust = rng.randrange(0, 2_000_000)
    item = rng.randrange(0, 200_000)
    return {"obj_type": "file", "path": f"s3://bench/{day}/{rng.getrandbits(48):012x}.parquet",
            "format": "parquet", "row_count": rows, "size_bytes": size,
            "columns": {"d": {"min": day, "max": day, "null_count": 0},
                        "customer_sk": {"min": cust, "max": cust + rng.randrange(1, 50_000), "null_count": 0},
                        "item_sk": {"min": item, "max": item + rng.randrange(1, 5_000), "null_count": 0},
                        "net_paid": {"min": 0.0, "max": round(rng.uniform(10, 5000), 2), "null_count": 0}}}


def dim_file(dim: str, lo: int, hi: int, name: str) -> dict[str, Any]:
    col, prefix, _n, _per = DIMS[dim]
    rows = hi - lo + 1
    return {"obj_type": "file", "path": f"s3://bench/{dim}/{name}.parquet", "format": "parquet",
            "row_count": rows, "size_bytes": rows * 120,
            "columns": {col: {"min": bid(prefix, lo), "max": bid(prefix, hi), "null_count": 0},
                        "sk": {"min": lo, "max": hi, "null_count": 0}}}


def _table(name: str, partition_by: list[str], cols: list[tuple[str, str]]) -> dict[str, Any]:
    return {"obj_type": "table", "location": f"s3://bench/{name}", "format": "parquet",
            "schema": {"schema_id": 0, "columns": [{"id": i + 1, "name": n, "type": t, "nullable": True}
                                                   for i, (n, t) in enumerate(cols)]},
            "partition_by": partition_by, "stats": {"row_count": 0, "file_count": 0, "size_bytes": 0,
                                                    "columns": {}},
            "properties": {}}


def _stats_delta(rows: int, files: int, size: int, cols: dict[str, Any]) -> dict[str, Any]:
    return {"stats": {"row_count": {"op": "+", "val": rows}, "file_count": {"op": "+", "val": files},
                      "size_bytes": {"op": "+", "val": size},
                      "columns": {c: {"min": {"op": "min", "val": v["min"]}, "max": {"op": "max", "val": v["max"]}}
                                  for c, v in cols.items()}}}


def _load_fact_month(cat: cc.Catalog, rng: random.Random, table: str, days: list[str], files_per_day: int) -> None:
    with cat.transaction(author="bench:setup", message=f"load {table} {days[0][:7]}") as txn:
        t_rows = t_size = t_files = 0
        for day in days:
            txn.add(partition_path(table, day), {"obj_type": "partition", "d": day,
                                                 "stats": {"row_count": 0, "file_count": 0, "size_bytes": 0}})
            p_rows = p_size = 0
            for k in range(files_per_day):
                size = rng.randrange(8 << 20, 48 << 20) if k else rng.randrange(128 << 20, 256 << 20)
                rows = size // 100
                txn.add(f"{partition_path(table, day)}/f-{k:04d}", fact_file(rng, day, size, rows), leaf=True)
                p_rows, p_size = p_rows + rows, p_size + size
            txn.merge(partition_path(table, day), _stats_delta(p_rows, files_per_day, p_size, {}))
            t_rows, t_size, t_files = t_rows + p_rows, t_size + p_size, t_files + files_per_day
        txn.merge(table_path(table), _stats_delta(t_rows, t_files, t_size,
                                                  {"d": {"min": days[0], "max": days[-1]}}))


def _load_dim(cat: cc.Catalog, dim: str) -> int:
    col, _prefix, n_files, per = DIMS[dim]
    with cat.transaction(author="bench:setup", message=f"load {dim}") as txn:
        for k in range(n_files):
            txn.add(f"{table_path(dim)}/f-{k:05d}", dim_file(dim, k * per, (k + 1) * per - 1, f"f-{k:05d}"),
                    leaf=True)
        last = n_files * per - 1
        txn.merge(table_path(dim), _stats_delta(n_files * per, n_files, n_files * per * 120,
                                                {col: dim_file(dim, 0, last, "x")["columns"][col]}))
    return n_files * per


def build(data_dir: str, days: int = 2191, files_per_day: int = 4, progress: bool = True) -> dict[str, Any]:
    """Create the dataset in an empty `data_dir`; returns (and stores) its meta."""
    t0 = time.perf_counter()
    rng = random.Random(42)
    all_days = [(START + timedelta(days=i)).isoformat() for i in range(days)]
    cat = cc.Catalog.open(data_dir)
    try:
        with cat.transaction(author="bench:setup") as txn:
            txn.add(f"/{CATALOG}", {"obj_type": "catalog", "properties": {}})
            txn.add(f"/{CATALOG}/{NAMESPACE}", {"obj_type": "namespace", "properties": {}})
            for t in FACTS:
                txn.add(table_path(t), _table(t, ["d"], [("d", "date"), ("customer_sk", "long"),
                                                         ("item_sk", "long"), ("net_paid", "double")]))
            for dname, (col, *_r) in DIMS.items():
                txn.add(table_path(dname), _table(dname, [], [(col, "string"), ("sk", "long")]))
        id_max = {d: _load_dim(cat, d) - 1 for d in DIMS}
        for t in FACTS:
            for m in range(0, days, 31):
                _load_fact_month(cat, rng, t, all_days[m:m + 31], files_per_day)
            if progress:
                print(f"  setup: {t} loaded ({time.perf_counter() - t0:.1f}s)", flush=True)
        meta = {"layout": LAYOUT_VERSION, "days": all_days, "files_per_day": files_per_day, "id_max": id_max,
                "vid": cat.latest_vid, "build_s": round(time.perf_counter() - t0, 2)}
    finally:
        cat.close()
    with open(os.path.join(data_dir, "bench_meta.json"), "w") as fh:
        json.dump(meta, fh)
    return meta


def ensure_base(base_dir: str, progress: bool = True) -> dict[str, Any]:
    """The pre-built dataset at `base_dir`, built on first use (or when the layout changed)."""
    meta_path = os.path.join(base_dir, "bench_meta.json")
    if os.path.exists(meta_path):
        with open(meta_path) as fh:
            meta = json.load(fh)
        if meta.get("layout") == LAYOUT_VERSION:
            return meta
    shutil.rmtree(base_dir, ignore_errors=True)
    os.makedirs(base_dir)
    if progress:
        print(f"building the TPC-DS-like dataset in {base_dir} ...", flush=True)
    meta = build(base_dir, progress=progress)
    if progress:
        print(f"  setup done: vid {meta['vid']} in {meta['build_s']}s", flush=True)
    return meta


def fresh_copy(base_dir: str, dst: str) -> None:
    """A private copy of the pre-built catalog, so every run starts from the same state."""
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(base_dir, dst, ignore=shutil.ignore_patterns("semcat.lock", "LOCK"))
