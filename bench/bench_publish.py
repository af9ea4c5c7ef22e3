"""publish cost follows the number of changes on the branch, not the size of the tree.

    .venv/bin/python -m bench.bench_publish            # 500,000-object tree
    .venv/bin/python -m bench.bench_publish --quick    # 50,000-object tree

The table's namespace is branched once (a zero-copy clone of the whole tree); then, per round,
one commit changes 10 / 100 / 1,000 objects on the branch (new file leaves and the table's
stats), main takes one append of its own, and publish (keep) merges the branch back: the
publish is timed, median of 5 rounds per size.
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
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    n_objects = 50_000 if args.quick else 500_000
    with tempfile.TemporaryDirectory(prefix="semcat-bench-publish-") as root:
        cat, secs = load_tree(root, n_objects)
        t0 = time.perf_counter()
        cat.clone("/b/ns", "/b/wap")
        clone_s = time.perf_counter() - t0
        print(f"tree: {n_objects:,} objects loaded in {secs:.1f} s; branch /b/wap cloned in {clone_s:.1f} s")
        rows = []
        for n in (10, 100, 1000):
            times = []
            for r in range(args.repeat):
                change(cat, "/b/wap", n, f"b{n}-{r}")
                change(cat, "/b/ns", 2, f"m{n}-{r}")
                t0 = time.perf_counter()
                cat.publish("/b/wap", onto="/b/ns")
                times.append((time.perf_counter() - t0) * 1000)
            rows.append((n, statistics.median(times)))
        stats = cat.get("/b/ns/t").value["stats"]
        want = sum((n - 1) * args.repeat for n in (10, 100, 1000)) + args.repeat * 3  # branch files + main files
        assert stats["file_count"] == want, (stats, want)
        cat.close()
    print(f"\n{'changes':>8} {'publish median ms':>18} {'ms per change':>14}")
    for n, ms in rows:
        print(f"{n:>8} {ms:>18.2f} {ms / n:>14.3f}")
    print(f"1,000 changes / 10 changes: {rows[2][1] / rows[0][1]:.1f}x the time for 100x the changes "
          f"(tree: {n_objects:,} objects)")


if __name__ == "__main__":
    main()
