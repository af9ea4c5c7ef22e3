"""run_sql latency and open_duckdb build time, this tree against a baseline tree.

    .venv/bin/python -m bench.bench_sql [--quick] [--baseline /work/main] [--only] [--lake DIR]

Each tree is measured in its own fresh process (with that tree first on sys.path):
a lake of 20 tables (5 Parquet files each, one per partition `d=...`) is built in a temporary
directory, then

- run_sql cold: the first `run_sql` of the process (`SELECT count(*) FROM ns.t0`), which
  starts a worker;
- run_sql warm: p50 / p99 of the next N calls of the same small query, and of a query over two
  tables (a join), one call at a time;
- open_duckdb: median time to build the views of all 20 tables (`cc.open_duckdb`), after one
  warm-up build; measured first, before any SQL worker exists; and again with the file schema
  cache (`catalog_core.sql.tables.file_columns`) emptied before each build.

With `--lake DIR` (an Acme lake of `semcat eval build --data DIR`) the lake is a copy of
DIR/enriched (the Parquet files stay in DIR/warehouse) instead, and the figures are `run_sql`
at its latest snapshot of a count over `acme.core.fct_orders` (772 daily partitions on the small
lake) and of a group-by join of order items, orders and stores: cold (the first call of each in
the process: the first also starts a worker) and warm (p50 / p99 of the next N), then
`open_duckdb` of the whole lake.

The figures are printed per tree, then as ratios baseline / this tree (above 1: this tree is
faster). `--only` skips the baseline."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLES = 20
FILES = 5


def build(cat) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    with cat.transaction(author="bench", message="tables") as t:
        t.add("/wh", {"obj_type": "catalog", "properties": {}})
        t.add("/wh/ns", {"obj_type": "namespace", "properties": {}})
        for i in range(TABLES):
            loc = os.path.join(cat.warehouse, "wh", "ns", f"t{i}")
            t.add(f"/wh/ns/t{i}", {
                "obj_type": "table", "location": loc, "format": "parquet", "partition_by": ["d"],
                "schema": {"schema_id": 0, "columns": [
                    {"id": 1, "name": "id", "type": "long", "required": False},
                    {"id": 2, "name": "price", "type": "double", "required": False},
                    {"id": 3, "name": "d", "type": "date", "required": False},
                    {"id": 4, "name": "note", "type": "string", "required": False}]},
                "stats": {"row_count": 0}, "properties": {}})
    for i in range(TABLES):
        loc = os.path.join(cat.warehouse, "wh", "ns", f"t{i}")
        with cat.transaction(author="bench", message=f"load t{i}") as t:
            for f in range(FILES):
                day = f"2025-06-0{f + 1}"
                path = os.path.join(loc, f"d={day}", f"part-{f}.parquet")
                os.makedirs(os.path.dirname(path), exist_ok=True)
                ids = list(range(f * 100, f * 100 + 100))
                pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "price": [x * 1.5 for x in ids],
                                         "note": [f"n{x}" for x in ids]}), path)
                part = f"/wh/ns/t{i}/d={day}"
                t.add(part, {"obj_type": "partition", "d": day, "stats": {"row_count": 100}})
                t.add(f"{part}/part-{f}", {"obj_type": "file", "path": path, "format": "parquet",
                                           "size_bytes": os.path.getsize(path), "row_count": 100,
                                           "columns": {"id": {"min": ids[0], "max": ids[-1], "null_count": 0}}},
                      leaf=True)


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def child(n: int) -> dict:
    import catalog_core as cc
    from catalog_core.sql.tables import clear_file_schemas

    out: dict = {}
    with tempfile.TemporaryDirectory() as d:
        cat = cc.Catalog.open(d)
        try:
            build(cat)
            cc.open_duckdb(cat).close()
            times = []
            for _ in range(max(5, n // 4)):
                t0 = time.perf_counter()
                con = cc.open_duckdb(cat)
                times.append(time.perf_counter() - t0)
                con.close()
            out[f"open_duckdb, {TABLES} tables x {FILES} files"] = statistics.median(times)
            times = []
            for _ in range(max(5, n // 4)):
                clear_file_schemas()
                t0 = time.perf_counter()
                con = cc.open_duckdb(cat)
                times.append(time.perf_counter() - t0)
                con.close()
            out["open_duckdb, file schema cache emptied"] = statistics.median(times)
            small = "SELECT count(*) FROM ns.t0"
            join = "SELECT count(*) FROM ns.t0 a JOIN ns.t1 b USING (id)"
            t0 = time.perf_counter()
            assert cc.run_sql(cat, small).rows == [[500]]
            out["run_sql cold (first call)"] = time.perf_counter() - t0
            for name, sql in (("run_sql warm, 1 table", small), ("run_sql warm, join of 2", join)):
                times = []
                for _ in range(n):
                    t0 = time.perf_counter()
                    cc.run_sql(cat, sql)
                    times.append(time.perf_counter() - t0)
                out[f"{name} p50"] = statistics.median(times)
                out[f"{name} p99"] = pct(times, 99)
        finally:
            cat.close()
    return out


LAKE_COUNT = "SELECT count(*) FROM acme.core.fct_orders"
LAKE_JOIN = ("SELECT s.region, count(DISTINCT o.order_id) AS orders, sum(i.net_line_cents) AS net "
             "FROM acme.core.fct_order_items i JOIN acme.core.fct_orders o ON o.order_id = i.order_id "
             "JOIN acme.core.dim_store s ON s.store_id = o.store_id GROUP BY s.region ORDER BY s.region")


def child_lake(n: int, lake: str) -> dict:
    import shutil

    import catalog_core as cc

    out: dict = {}
    with tempfile.TemporaryDirectory() as d:
        shutil.copytree(lake, os.path.join(d, "lake"), symlinks=True)  # whole: the catalogs name the files beside them
        cat = cc.Catalog.open(os.path.join(d, "lake", "enriched"))
        try:
            vid = cat.latest_vid
            for name, sql in (("count fct_orders", LAKE_COUNT), ("join items/orders/stores", LAKE_JOIN)):
                t0 = time.perf_counter()
                first = cc.run_sql(cat, sql, snapshot=vid).rows
                out[f"run_sql cold, {name}"] = time.perf_counter() - t0
            for name, sql in (("count fct_orders", LAKE_COUNT), ("join items/orders/stores", LAKE_JOIN)):
                times = []
                for _ in range(n):
                    t0 = time.perf_counter()
                    rows = cc.run_sql(cat, sql, snapshot=vid).rows
                    times.append(time.perf_counter() - t0)
                assert rows, name
                out[f"run_sql warm, {name} p50"] = statistics.median(times)
                out[f"run_sql warm, {name} p99"] = pct(times, 99)
            assert first
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                cc.open_duckdb(cat, snapshot=vid).close()
                times.append(time.perf_counter() - t0)
            out["open_duckdb, whole lake (median of 3)"] = statistics.median(times)
        finally:
            cat.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--baseline", default="/work/main", help="the tree to compare with (its bench/ is not used)")
    ap.add_argument("--only", action="store_true", help="measure this tree only")
    ap.add_argument("--lake", default=None, help="an Acme lake built by `semcat eval build --data DIR` (read only)")
    args = ap.parse_args()
    n = 20 if args.quick else 100
    if args.lake:
        n = 10 if args.quick else 20
        if not os.path.isdir(os.path.join(args.lake, "enriched")):
            raise SystemExit(f"--lake {args.lake}: no enriched/ catalog there; build one with `semcat eval build --data DIR`")
    trees = {"this tree": ROOT} if args.only else {"baseline": os.path.abspath(args.baseline), "this tree": ROOT}
    results = {}
    for label, tree in trees.items():
        results[label] = measure(tree, n, args.lake)
    keys = list(results["this tree"])
    print(f"run_sql / open_duckdb, {n} warm calls each, seconds (ms shown)")
    header = f"{'':42}" + "".join(f"{label:>14}" for label in results) + ("" if args.only else f"{'ratio':>10}")
    print(header)
    for k in keys:
        row = f"{k:42}" + "".join(f"{results[label][k] * 1000:12.1f}ms" for label in results)
        if not args.only:
            row += f"{results['baseline'][k] / results['this tree'][k]:9.1f}x"
        print(row)


def measure(tree: str, n: int, lake: str | None = None) -> dict:
    """Run this file (from ROOT) in a child whose catalog_core comes from `tree`."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (tree, ROOT, os.environ.get("PYTHONPATH")) if p))
    script = ("import sys, json; sys.path[:0] = [%r]; "
              "import importlib.util; spec = importlib.util.spec_from_file_location('bench_sql', %r); "
              "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); "
              "print(json.dumps(%s))") % (tree, os.path.abspath(__file__),
                                            f"m.child_lake({n}, {os.path.abspath(lake)!r})" if lake else f"m.child({n})")
    proc = subprocess.run([sys.executable, "-c", script], cwd=tree, env=env, capture_output=True, text=True,
                          timeout=1800)
    if proc.returncode != 0:
        raise SystemExit(f"the child for {tree} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
