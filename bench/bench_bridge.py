"""The Spark bridge's overhead over a plain `df.write.parquet` of the same data.

    .venv/bin/python -m bench.bench_bridge [--quick] [--files N] [--runs R]

Each run writes the same DataFrame (N partitions -> N Parquet files) twice: once with a plain
`df.write.parquet` to a fresh directory, once with `Bridge.write` (staged write + moving files
into place and reading every footer on the executors + one catalog commit of N file leaves and
stats merges) appending to a table. Prints medians and the ratio bridge / plain.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time

__all__ = ["main"]


def _frame(spark, files: int, rows_per_file: int):
    # range(..., numPartitions) gives exactly `files` partitions without a shuffle.
    return spark.range(0, files * rows_per_file, 1, files).selectExpr(
        "id", "cast(id % 97 as int) as store", "cast(id * 0.01 as double) as amount",
        "concat('c', cast(id % 1000 as string)) as customer", "date_add(date'2025-06-01', cast(id % 7 as int)) as d")


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="200 files, 2 runs")
    ap.add_argument("--files", type=int, default=None, help="files per write (default 1000)")
    ap.add_argument("--runs", type=int, default=None, help="measured runs (default 5)")
    ap.add_argument("--rows-per-file", type=int, default=200)
    args = ap.parse_args(argv)
    files = args.files or (200 if args.quick else 1000)
    runs = args.runs or (2 if args.quick else 5)

    import catalog_core as cc
    from spark_bridge import Bridge, local_session

    print(f"bench_bridge: {files} files x {args.rows_per_file} rows per write, {runs} runs (+1 warm-up)")
    t0 = time.perf_counter()
    spark = local_session(app_name="semcat-bench")
    print(f"  spark started in {time.perf_counter() - t0:.1f}s (local[{spark.sparkContext.defaultParallelism}])")
    root = tempfile.mkdtemp(prefix="semcat-bench-bridge-")
    cat = cc.Catalog.open(os.path.join(root, "data"))
    bridge = Bridge(spark, cat)
    commit_start: list[float] = []
    bridge.before_commit = lambda attempt, txn: commit_start.append(time.perf_counter())
    df = _frame(spark, files, args.rows_per_file)
    plain, total, commit = [], [], []
    try:
        for run in range(runs + 1):
            out = os.path.join(root, f"plain-{run}")
            p = _timed(lambda: df.write.parquet(out))
            commit_start.clear()
            t_start = time.perf_counter()
            res = bridge.write(df, "bench.data.events", author="bench", message=f"run {run}")
            t_end = time.perf_counter()
            assert res.files_added == files, res
            shutil.rmtree(out, ignore_errors=True)
            label = "warm-up" if run == 0 else f"run {run}/{runs}"
            print(f"  {label}: plain write {p:.2f}s  bridge write {t_end - t_start:.2f}s "
                  f"(catalog commit {t_end - commit_start[-1]:.2f}s, attempts {res.attempts})", flush=True)
            if run:
                plain.append(p)
                total.append(t_end - t_start)
                commit.append(t_end - commit_start[-1])
        stats = cat.get("/bench/data/events").value["stats"]
        assert stats["file_count"] == files * (runs + 1), stats["file_count"]
    finally:
        cat.close()
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)
    mp, mt, mc = statistics.median(plain), statistics.median(total), statistics.median(commit)
    print(f"\nmedians over {runs} runs, {files} files per write:")
    print(f"  plain df.write.parquet     {mp:7.2f}s")
    print(f"  bridge.write (total)       {mt:7.2f}s")
    print(f"    of which catalog commit  {mc:7.2f}s   (planning + {files} leaves + stats merges)")
    print(f"    staging, move + footers  {mt - mc - mp:7.2f}s   (beyond the plain write)")
    print(f"  ratio bridge / plain       {mt / mp:7.2f}x   overhead {mt - mp:.2f}s "
          f"({(mt - mp) / files * 1000:.2f} ms per file)")


if __name__ == "__main__":
    main()
