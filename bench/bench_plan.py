"""File planning: semcat's plan_files vs pyiceberg's scan().plan_files() on the same files.

    .venv/bin/python -m bench.bench_plan            # 50,000 and 500,000 files
    .venv/bin/python -m bench.bench_plan --quick    # 50,000 files only

store_sales-like table, identity-partitioned by day over 1998-01-01..2003-12-31 (2,191 partitions),
every file with min/max statistics; 1-day and 365-day date ranges; medians of --repeat runs after
one untimed warm-up run on each side (pyiceberg keeps its manifest lists cached, semcat its recently
planned partitions' file lists). `cold` clears semcat's file-list cache before every plan; semcat's
files decode their values on first access (FileObj), and `cold+values` also decodes every returned
file's value, for a like-for-like view of what pyiceberg's DataFile objects hold. JSON: bench/out/plan.json.
"""

from __future__ import annotations

import argparse
import json
import os

from . import iceberg_side, semcat_side

RANGES = (("2001-06-01", 1), ("2001-01-01", 365))
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")


def run(n_files: int, root: str, iceberg_root: str, repeat: int) -> list[dict]:
    print(f"\n== {n_files:,} files ==", flush=True)
    cat, load_s = semcat_side.load_store_sales(os.path.join(root, f"semcat-{n_files}"), n_files)
    if load_s:
        print(f"  semcat bulk load: {load_s:.1f}s ({n_files / load_s:,.0f} files/s)")
    table = iceberg_side.build_store_sales(os.path.join(iceberg_root, f"n{n_files}"), n_files)
    rows = []
    try:
        for lo, days in RANGES:
            ours = semcat_side.plan_bench(cat, lo, days, repeat)
            theirs = iceberg_side.plan_files_bench(table, lo, days, repeat)
            assert ours["files"] == theirs["files"], (ours["files"], theirs["files"])
            a, b = semcat_side.median_ms(ours["times"]), semcat_side.median_ms(theirs["times"])
            cold, full = semcat_side.median_ms(ours["cold_times"]), semcat_side.median_ms(ours["full_times"])
            rows.append({"files_total": n_files, "days": days, "files": ours["files"], "semcat_ms": a,
                         "semcat_cold_ms": cold, "semcat_values_ms": full, "pyiceberg_ms": b,
                         "ratio": b / a, "ratio_cold": b / cold, "ratio_values": b / full,
                         "scanned": ours["scanned"], "seeks": ours["seeks"]})
            print(f"  {days:>3}-day: {ours['files']:>6,} files | semcat {a:8.2f} ms, cold {cold:8.2f}, "
                  f"cold+values {full:8.2f} | pyiceberg {b:9.1f} ms | {b / a:6.0f}x ({b / cold:.0f}x cold, "
                  f"{b / full:.0f}x cold+values) | objects scanned {ours['scanned']:,} ({ours['seeks']} seeks)",
                  flush=True)
    finally:
        cat.close()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="50,000 files only")
    ap.add_argument("--root", default="/tmp/semcat-bench-plan", help="where both catalogs are built (cached)")
    ap.add_argument("--iceberg-root", default="/tmp/semcat-bench-iceberg", help="pyiceberg side (cached)")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    sizes = (50_000,) if args.quick else (50_000, 500_000)
    rows = [r for n in sizes for r in run(n, args.root, args.iceberg_root, args.repeat)]
    print("\nsummary (median ms; ratio = pyiceberg / semcat; cold = semcat's file-list cache cleared before "
          "each plan; +values = cold, and every returned file's value decoded):")
    for r in rows:
        print(f"  {r['files_total']:>7,} files {r['days']:>3}-day  semcat {r['semcat_ms']:8.2f}  "
              f"cold {r['semcat_cold_ms']:8.2f}  cold+values {r['semcat_values_ms']:8.2f}  "
              f"pyiceberg {r['pyiceberg_ms']:9.1f}  ratio {r['ratio']:6.0f}x  cold {r['ratio_cold']:5.0f}x  "
              f"cold+values {r['ratio_values']:5.0f}x  scanned/returned {r['scanned']:,}/{r['files']:,}")
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "plan.json"), "w") as fh:
        json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
