"""Engine basics, semcat vs pyiceberg's SqlCatalog, in one run on one machine.

    .venv/bin/python -m bench.bench_engine [--quick]

- point get of a table object (ops/s, one thread) vs pyiceberg load_table
- durable single commits (p50/p99) vs a pyiceberg light commit (set one table property)
- bulk load of 500,000 leaf objects (objects/s)
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import time

import catalog_core as cc

from . import iceberg_side


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def point_gets(cat: cc.Catalog, path: str, n: int) -> float:
    rounds = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            cat.get(path)
        rounds.append(n / (time.perf_counter() - t0))
    return statistics.median(rounds)


def single_commits(cat: cc.Catalog, n: int) -> list[float]:
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        with cat.transaction(author="bench") as t:
            t.merge("/bench/tpcds/store_sales", {"properties": {"k": {"op": "set", "val": str(i)}}})
        out.append(time.perf_counter() - t0)
    return out


def bulk_load(cat: cc.Catalog, n: int, batch: int = 50_000) -> float:
    with cat.transaction() as t:
        t.add("/bulk", {"obj_type": "namespace"})
        for p in range(500):
            t.add(f"/bulk/p{p:03d}", {"obj_type": "partition"})
    t0 = time.perf_counter()
    txn = cat.transaction()
    for i in range(n):
        txn.add(f"/bulk/p{i % 500:03d}/f{i:07d}", {"obj_type": "file", "path": f"s3://b/f{i}.parquet",
                                                   "row_count": i, "size_bytes": 1000 + i,
                                                   "columns": {"a": {"min": i, "max": i + 9, "null_count": 0}}},
                leaf=True)
        if (i + 1) % batch == 0:
            txn.commit()
            txn = cat.transaction()
            print(f"  bulk: {i + 1:,}/{n:,}", flush=True)
    txn.commit()
    return n / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--root", default="/tmp/semcat-bench-engine")
    args = ap.parse_args()
    n_get, n_commit, n_bulk = (20_000, 100, 50_000) if args.quick else (200_000, 1_000, 500_000)
    shutil.rmtree(args.root, ignore_errors=True)
    cat = cc.Catalog.open(os.path.join(args.root, "semcat"))
    with cat.transaction() as t:
        t.add("/bench", {"obj_type": "catalog"})
        t.add("/bench/tpcds", {"obj_type": "namespace"})
        t.add("/bench/tpcds/store_sales", {"obj_type": "table", "schema": {"schema_id": 0, "columns": [
            {"id": i, "name": f"c{i}", "type": "long", "nullable": True} for i in range(12)]},
            "partition_by": ["ss_sold_date"], "properties": {}, "stats": {"row_count": 0}})
    gets = point_gets(cat, "/bench/tpcds/store_sales", n_get)
    commits = single_commits(cat, n_commit)
    bulk = bulk_load(cat, n_bulk)
    cat.close()
    ice = iceberg_side.light_commit_bench(os.path.join(args.root, "iceberg"), n=200 if not args.quick else 50)
    ice_load = statistics.median(ice["load_table"])
    ice_commit = statistics.median(ice["set_property"])
    c50, c99 = pct(commits, 0.5), pct(commits, 0.99)
    print(f"\npoint get (table object):   semcat {gets:,.0f} ops/s  | pyiceberg load_table "
          f"{1 / ice_load:,.0f} ops/s  -> {gets * ice_load:,.0f}x")
    print(f"durable single commit:      semcat p50 {c50 * 1e3:.2f} ms p99 {c99 * 1e3:.2f} ms | pyiceberg "
          f"set-property p50 {ice_commit * 1e3:.2f} ms p99 {pct(ice['set_property'], 0.99) * 1e3:.2f} ms "
          f"-> {ice_commit / c50:,.0f}x")
    print(f"bulk load of {n_bulk:,} leaves: semcat {bulk:,.0f} objects/s")


if __name__ == "__main__":
    main()
