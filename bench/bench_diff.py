"""cat.diff cost follows the number of changes, not the size of the tree.

    .venv/bin/python -m bench.bench_diff            # 500,000-object tree
    .venv/bin/python -m bench.bench_diff --quick    # 50,000-object tree

One commit of 10 / 100 / 1,000 changed objects on top of the loaded tree; the diff across it is
timed (every change read, before and after), median of 7. For scale, one full listing of the
tree's files at one vid (what a diff by two full scans would do twice) is timed once.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from .branch_tree import change, load_tree


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a 50,000-object tree")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    n_objects = 50_000 if args.quick else 500_000
    with tempfile.TemporaryDirectory(prefix="semcat-bench-diff-") as root:
        cat, secs = load_tree(root, n_objects)
        print(f"tree: {n_objects:,} objects loaded in {secs:.1f} s (latest vid {cat.latest_vid})")
        rows = []
        for n in (10, 100, 1000):
            before = cat.latest_vid
            after = change(cat, "/b/ns", n, f"d{n}")
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                got = list(cat.diff(before, after))
                times.append((time.perf_counter() - t0) * 1000)
            assert len(got) == n, (len(got), n)
            rows.append((n, statistics.median(times)))
        t0 = time.perf_counter()
        listed = cat.query('/[obj_id = "b"]/[obj_id = "ns"]/[obj_id = "t"]/*/*')
        scan_ms = (time.perf_counter() - t0) * 1000
        cat.close()
    print(f"\n{'changes':>8} {'diff median ms':>15} {'ms per change':>14}")
    for n, ms in rows:
        print(f"{n:>8} {ms:>15.2f} {ms / n:>14.3f}")
    print(f"\none full scan of the tree's {len(listed):,} files at one vid: {scan_ms:,.0f} ms "
          f"({scan_ms / rows[0][1]:,.0f}x the 10-change diff; a two-scan diff needs two)")
    print(f"1,000 changes / 10 changes: {rows[2][1] / rows[0][1]:.1f}x the time for 100x the changes")


if __name__ == "__main__":
    main()
