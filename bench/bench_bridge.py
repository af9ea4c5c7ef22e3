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


def _timing_bridge(base):
    """The Bridge with its two bridge-only phases timed: footers (move + read on executors)
    and commit (plan against the catalog + one transaction)."""

    class TimedBridge(base):
        phases: dict[str, float] = {}

        def _read_footers(self, pairs, name):
            t0 = time.perf_counter()
            try:
                return super()._read_footers(pairs, name)
            finally:
                self.phases["footers"] = time.perf_counter() - t0

        def commit(self, *a, **kw):
            t0 = time.perf_counter()
            try:
                return super().commit(*a, **kw)
            finally:
                self.phases["commit"] = time.perf_counter() - t0

    return TimedBridge


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="200 files, 2 runs")
    ap.add_argument("--files", type=int, default=None, help="files per write (default 1000)")
    ap.add_argument("--runs", type=int, default=None, help="measured runs (default 3)")
    ap.add_argument("--rows-per-file", type=int, default=200)
    args = ap.parse_args(argv)
    files = args.files or (200 if args.quick else 1000)
    runs = args.runs or (2 if args.quick else 3)

    import catalog_core as cc
    from spark_bridge import Bridge, local_session

    print(f"bench_bridge: {files} files x {args.rows_per_file} rows per write, {runs} runs (+1 warm-up)")
    t0 = time.perf_counter()
    spark = local_session(app_name="semcat-bench")
    print(f"  spark started in {time.perf_counter() - t0:.1f}s (local[{spark.sparkContext.defaultParallelism}])")
    root = tempfile.mkdtemp(prefix="semcat-bench-bridge-")
    cat = cc.Catalog.open(os.path.join(root, "data"))
    bridge = _timing_bridge(Bridge)(spark, cat)
    df = _frame(spark, files, args.rows_per_file)
    plain, total, footers, commit = [], [], [], []
    try:
        results: list = []
        for run in range(runs + 1):
            out = os.path.join(root, f"plain-{run}")
            p = _timed(lambda out=out: df.write.parquet(out))
            t = _timed(lambda run=run: results.append(bridge.write(df, "bench.data.events", author="bench",
                                                           message=f"run {run}")))
            assert results[-1].files_added == files, results[-1]
            shutil.rmtree(out, ignore_errors=True)
            ph = bridge.phases
            label = "warm-up" if run == 0 else f"run {run}/{runs}"
            print(f"  {label}: plain write {p:.2f}s  bridge write {t:.2f}s (footers {ph['footers']:.2f}s, "
                  f"catalog commit {ph['commit']:.2f}s)", flush=True)
            if run:
                plain.append(p)
                total.append(t)
                footers.append(ph["footers"])
                commit.append(ph["commit"])
        stats = cat.get("/bench/data/events").value["stats"]
        assert stats["file_count"] == files * (runs + 1), stats["file_count"]
    finally:
        cat.close()
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)
    mp, mt = statistics.median(plain), statistics.median(total)
    mf, mc = statistics.median(footers), statistics.median(commit)
    print(f"\nmedians over {runs} runs, {files} files per write:")
    print(f"  plain df.write.parquet     {mp:7.2f}s")
    print(f"  bridge.write (total)       {mt:7.2f}s")
    print(f"    move + read footers      {mf:7.2f}s   (one Spark job on the executors)")
    print(f"    catalog commit           {mc:7.2f}s   (plan + one transaction: {files} leaves + stats merges)")
    print(f"  ratio bridge / plain       {mt / mp:7.2f}x   overhead {mt - mp:+.2f}s "
          f"({(mt - mp) / files * 1000:+.2f} ms per file)")
    # The two plain-write-sized parts of the bridge vary by more than its own work on a noisy
    # machine; the bridge-only phases are the stable measure of its cost.
    print(f"  bridge-only work           {(mf + mc) / mp:7.1%}   of the plain write "
          f"({(mf + mc) / files * 1000:.2f} ms per file)")


if __name__ == "__main__":
    main()
