"""Cost of a staleness check that follows the change (issue 45, item 6): full checks of the small Acme
lake at both depths, and checks after 1 and after 5 changed tables, side by side; optionally the same
measurements run on another tree (main's detector) in one go.

    .venv/bin/python -m bench.bench_staleness --lake LAKE [--runs 3] [--baseline TREE] [--json OUT]

LAKE is an eval lake directory (`semcat eval build`); its `enriched` catalog directory is copied
(`cp -a`) to a temporary directory, and every write goes to the copy's catalog: the changes are
commits through the engine's transactions that touch a table's object (a property written on it: to
the detector the table changed), never data files, so the original lake is only read. TREE is a
checkout of another revision (e.g. `git archive main | tar -x -C /tmp/main`): the same measurements
run in a subprocess with that tree first on PYTHONPATH, the figures printed beside this tree's.

Each run is a subprocess per tree, the trees in turn (so both see the same stretch of load); medians
of --runs, the range of the 1-minute load average (`os.getloadavg()`) printed beside each figure:

- `full metadata`, `full data`: `sm.staleness(cat, depth=...)` of the whole catalog on a catalog
  opened afresh (no semantic or SQL view cache; SQL workers and the OS file cache warm from a first
  check), the "full data-depth check, warm" of the issue (target <= 5 s);
- `check after k changed`: k tables (k = 1, 5; chosen by a fixed seed among the annotated tables)
  changed after a whole-catalog data-depth check in the same process, then the same call at the new
  vid: the findings of the tables the change does not reach are carried over
  (`semantic.staleness.incremental`); `tables` is how many tables' checks ran (counted, not timed);
- `scan --changed-only after k`: `sm.scan(changed_only=True)` on a catalog opened afresh (what cron
  running `semcat review scan --changed-only` costs) after k tables changed since the last pass.

The machine is shared: compare figures of one run, read the load beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROWS = ("full metadata", "full data", "check after 1 changed", "check after 5 changed",
        "scan --changed-only after 1", "scan --changed-only after 5")


def _inner(lake_dir: str, runs: int) -> dict[str, list[dict[str, float]]]:
    """The measurements on the tree first on sys.path; {row: [{"s", "load", "tables"}, ...]}."""
    import catalog_core as cc
    import semantic as sm
    from catalog_core import lake
    from semantic.annotations import read_catalog_annotations
    from semantic.history import clear_cache

    engine = sys.modules.get("semantic.staleness.engine")
    computed = getattr(engine, "COMPUTED", None)  # absent on a tree without incremental checks

    def count() -> int:
        return -1 if computed is None else int(computed.get("data", 0))

    tmp = tempfile.mkdtemp(prefix="bench-staleness-")
    # the whole lake but its stale catalog: a lake's catalogs name their files relative to the lake
    # (docs/engine.md, Relocatable catalogs), so a catalog copied alone reads no file, and every
    # data-depth check then measures failed reads (19 s of "full data" on the small lake)
    shutil.copytree(lake_dir, os.path.join(tmp, "lake"), symlinks=True, ignore=shutil.ignore_patterns("stale"))
    data = os.path.join(tmp, "lake", "enriched")
    out: dict[str, list[dict[str, float]]] = {r: [] for r in ROWS}
    cat = cc.Catalog.open(data)
    touch = [0]

    def reopen() -> Any:
        nonlocal cat
        clear_cache()
        cat.close()
        cat = cc.Catalog.open(data)
        return cat

    def change(names: list[str]) -> None:
        touch[0] += 1
        with cat.transaction(author="bench", message=f"bench change {touch[0]}") as txn:
            for n in names:
                txn.merge(lake.table_path(n), {"properties": {"bench_touch": str(touch[0])}})

    def timed(row: str, fn: Any) -> None:
        c0, t0 = count(), time.perf_counter()
        fn()
        s = time.perf_counter() - t0
        out[row].append({"s": s, "load": os.getloadavg()[0], "tables": count() - c0 if c0 >= 0 else -1})

    try:
        sm.staleness(cat, depth="data")  # warm: SQL workers started, files in the OS cache
        annotated = sorted(n for n, anns in read_catalog_annotations(cat).items()
                           if any(a.kind != "review" for a in anns))
        rng = random.Random(7)
        sm.scan(cat, author="bench")  # the pass the changed-only scans start from
        for _ in range(runs):
            reopen()
            timed("full metadata", lambda: sm.staleness(cat, depth="metadata"))
            reopen()
            timed("full data", lambda: sm.staleness(cat, depth="data"))
            for k in (1, 5):
                change(rng.sample(annotated, k))
                timed(f"check after {k} changed", lambda: sm.staleness(cat, depth="data"))
            for k in (1, 5):
                sm.scan(cat, author="bench", changed_only=True)
                change(rng.sample(annotated, k))
                reopen()
                timed(f"scan --changed-only after {k}", lambda: sm.scan(cat, author="bench", changed_only=True))
    finally:
        cat.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def _run_tree(tree: str, lake_dir: str, runs: int) -> dict[str, list[dict[str, float]]]:
    """`_inner` in a subprocess with `tree` first on PYTHONPATH (no bytecode written into it)."""
    env = {**os.environ, "PYTHONPATH": tree, "PYTHONDONTWRITEBYTECODE": "1"}
    res = subprocess.run([sys.executable, os.path.abspath(__file__), "--inner", "--lake", lake_dir,
                          "--runs", str(runs)], env=env, cwd=tree, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise SystemExit(f"the run on {tree} failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def _cell(xs: list[dict[str, float]]) -> str:
    if not xs:
        return "-"
    s = statistics.median(x["s"] for x in xs)
    lo, hi = min(x["load"] for x in xs), max(x["load"] for x in xs)
    tables = sorted({int(x["tables"]) for x in xs if x["tables"] >= 0})
    t = f", {'/'.join(map(str, tables))} tables" if tables else ""
    return f"{s:6.2f} s (load {lo:.1f}-{hi:.1f}{t})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lake", required=True, help="an eval lake directory (its `enriched` catalog is copied)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline", help="another tree (e.g. main, from git archive) measured in the same run")
    ap.add_argument("--json", help="write the raw figures here")
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.inner:
        print(json.dumps(_inner(a.lake, a.runs)))
        return
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip())
    trees = {"this tree": ROOT, **({"baseline": os.path.abspath(a.baseline)} if a.baseline else {})}
    got: dict[str, dict[str, list[dict[str, float]]]] = {h: {r: [] for r in ROWS} for h in trees}
    for _ in range(a.runs):  # one run of each tree in turn, so both see the same stretch of load
        for h, tree in trees.items():
            for row, xs in _run_tree(tree, a.lake, 1).items():
                got[h][row] += xs
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip())
    heads = list(got)
    print(f"{'median of ' + str(a.runs) + ' runs':32}" + "".join(f"{h:44}" for h in heads))
    for row in ROWS:
        print(f"{row:32}" + "".join(f"{_cell(got[h][row]):44}" for h in heads))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(got, fh, indent=1)


if __name__ == "__main__":
    main()
