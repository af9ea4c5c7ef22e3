"""Group commit: durable commits per second at 1, 4 and 16 committing threads.

    .venv/bin/python -m bench.bench_group_commit [--quick] [--duration S] [--threads 1,4,16]

Every thread commits small transactions that never conflict: add one object under its own
namespace and merge (+1) into one shared counter. Each commit is acknowledged only after its
group's RocksDB batch is written with a synced WAL; `groups` counts those batches, so the
average group size is commits / groups. Reports commits/s, p50/p99 commit latency and the
average group size, then checks the counter equals the number of commits.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import threading
import time
from typing import Any

import catalog_core as cc

__all__ = ["run_one", "main"]

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")


def _worker(cat: cc.Catalog, me: int, barrier: threading.Barrier, deadline: list[float], lat: list[float]) -> None:
    barrier.wait()
    k = 0
    while time.perf_counter() < deadline[0]:
        t0 = time.perf_counter()
        with cat.transaction(author=f"bench:gc{me}") as txn:
            txn.add(f"/g/t{me:02d}/o{k:07d}", {"k": k}, leaf=True)
            txn.merge("/g", {"n": {"op": "+", "val": 1}})
        lat.append(time.perf_counter() - t0)
        k += 1


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return round(1000 * xs[min(len(xs) - 1, int(q * len(xs)))], 3) if xs else 0.0


def run_one(threads: int, duration: float) -> dict[str, Any]:
    data = os.path.join(OUT, "group_commit_run")
    shutil.rmtree(data, ignore_errors=True)
    cat = cc.Catalog.open(data)
    try:
        with cat.transaction() as txn:
            txn.add("/g", {"obj_type": "catalog", "n": 0})
            for i in range(threads):
                txn.add(f"/g/t{i:02d}", {"obj_type": "namespace"})
        lats: list[list[float]] = [[] for _ in range(threads)]
        barrier, deadline = threading.Barrier(threads + 1), [0.0]
        ws = [threading.Thread(target=_worker, args=(cat, i, barrier, deadline, lats[i]), daemon=True)
              for i in range(threads)]
        for w in ws:
            w.start()
        deadline[0] = time.perf_counter() + duration
        g0, t0 = cat.engine_info()["groups"], time.perf_counter()
        barrier.wait()
        for w in ws:
            w.join()
        elapsed = time.perf_counter() - t0
        groups = cat.engine_info()["groups"] - g0
        all_lat = [x for xs in lats for x in xs]
        n = len(all_lat)
        counter = cat.get("/g").value["n"]
        if counter != n:
            raise AssertionError(f"shared counter is {counter} after {n} acknowledged commits: a commit was lost")
        return {"threads": threads, "commits": n, "elapsed_s": round(elapsed, 3),
                "commits_per_s": round(n / elapsed, 1), "p50_ms": _pct(all_lat, 0.5), "p99_ms": _pct(all_lat, 0.99),
                "groups": groups, "avg_group": round(n / groups, 2) if groups else 0.0}
    finally:
        cat.close()
        shutil.rmtree(data, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1 s runs")
    ap.add_argument("--duration", type=float, help="seconds per run (default 5, quick 1)")
    ap.add_argument("--threads", default="1,4,16", help="comma-separated thread counts")
    ap.add_argument("--repeat", type=int, help="runs per thread count, median reported (default 3, quick 1)")
    ap.add_argument("--out", default=os.path.join(OUT, "group_commit.json"))
    args = ap.parse_args(argv)
    duration = args.duration or (1.0 if args.quick else 5.0)
    repeat = args.repeat or (1 if args.quick else 3)
    os.makedirs(OUT, exist_ok=True)
    rows = []
    for thr in (int(t) for t in args.threads.split(",")):
        runs = sorted((run_one(thr, duration) for _ in range(repeat)), key=lambda r: r["commits_per_s"])
        med = runs[len(runs) // 2]
        med["runs_commits_per_s"] = [r["commits_per_s"] for r in runs]
        rows.append(med)
        print(f"  {thr:2} threads: {med['commits_per_s']:8.1f} commits/s (runs {med['runs_commits_per_s']})",
              flush=True)
    print(f"\n{'threads':>8} {'commits/s':>10} {'p50 ms':>8} {'p99 ms':>8} {'avg group':>10}")
    for r in rows:
        print(f"{r['threads']:>8} {r['commits_per_s']:>10} {r['p50_ms']:>8} {r['p99_ms']:>8} {r['avg_group']:>10}")
    base = rows[0]["commits_per_s"]
    for r in rows[1:]:
        print(f"commits/s at {r['threads']} threads vs {rows[0]['threads']}: {r['commits_per_s'] / base:.2f}x")
    with open(args.out, "w") as fh:
        json.dump({"duration_s": duration, "repeat": repeat, "results": rows}, fh, indent=1)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
