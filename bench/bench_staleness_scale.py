"""Whole-catalog staleness at growing catalog sizes: does a warm call cost its answer or the tree?

    .venv/bin/python -m bench.bench_staleness_scale [--tables 100,1000,3000] [--files 20] [--calls 15]

For each size N, in process on an embedded catalog: N tables of F files (bench_scale's tree), three
loads a day apart (the last one a day before `now`), then on every table a `table.freshness_sla` of
P30D and a fresh description, so at `now` no table is due and the answer is empty. It times, warm
(after one call), p50 of:

- `sm.staleness(cat, now=now)`: the whole catalog (findings cached per vid; the clock judged only for
  the tables whose `time_due` is before `now`);
- the same answer table by table (`sm.staleness(cat, name, now=now)` for each table): what every
  whole-catalog call cost before (it judged the clock on every table);

and a third size with a due table per 100 shows the cost following the answer. The
`time_findings` calls of one whole-catalog call are counted by wrapping it for that call. The
machine is shared: read ratios."""

from __future__ import annotations

import argparse
import importlib
import shutil
import statistics
import tempfile
import time

import catalog_core as cc
import semantic as sm
from bench.bench_scale import build, table_name
from semantic.annotations import new_annotation, write_annotations

DAY = 86400.0
staleness = importlib.import_module("semantic.staleness.engine")  # where staleness() finds time_findings


def make(root: str, n: int, n_files: int, now: float, overdue_every: int) -> cc.Catalog:
    """The tree; every `overdue_every`-th table (0: none) has an SLA already missed at `now`."""
    cat = cc.Catalog(root)
    build(cat, 0, n, n_files)
    for k in range(3):
        v0 = cat.latest_vid
        with cat.transaction(author="bench", message="load") as txn:
            for i in range(n):
                txn.merge(cc.lake.table_path(table_name(i)), {"stats": {
                    "row_count": n_files * 1000 + k, "last_data_commit": {"vid": v0 + 1, "time": now - (3 - k) * DAY}}})
    vid = cat.latest_vid
    for lo in range(0, n, 100):
        ids = range(lo, min(n, lo + 100))
        sla = ["PT12H" if overdue_every and i % overdue_every == 0 else "P30D" for i in ids]
        write_annotations(cat, [new_annotation(cat, table_name(i), "table", "table.freshness_sla", s, author="bench",
                                               vid=vid) for i, s in zip(ids, sla, strict=True)]
                          + [new_annotation(cat, table_name(i), "table", "table.description", "reviewed after the loads",
                                            author="bench", vid=vid) for i in ids])
    return cat


def p50(fn, calls: int) -> float:
    fn()
    ts = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def counted(fn) -> tuple[int, int]:
    """(findings, time_findings calls) of one call of `fn`: the module's global wrapped for the call."""
    n = [0]
    real = staleness.time_findings

    def counting(*a, **k):
        n[0] += 1
        return real(*a, **k)

    staleness.time_findings = counting
    try:
        out = fn()
    finally:
        staleness.time_findings = real
    return len(out), n[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tables", default="100,1000,3000", help="comma-separated catalog sizes")
    ap.add_argument("--files", type=int, default=20, help="files per table")
    ap.add_argument("--calls", type=int, default=15, help="timed calls after one warm-up")
    a = ap.parse_args()
    now = time.time()
    sizes = [int(x) for x in a.tables.split(",")]
    rows = []
    for n, every in [(n, 0) for n in sizes] + [(sizes[-1], 100)]:
        root = tempfile.mkdtemp(prefix="semcat-stale-")
        try:
            t0 = time.perf_counter()
            cat = make(root, n, a.files, now, every)
            built = time.perf_counter() - t0
            names = sorted(table_name(i) for i in range(n))
            whole = p50(lambda: sm.staleness(cat, now=now), a.calls)  # noqa: B023
            each = p50(lambda: [f for nm in names for f in sm.staleness(cat, nm, now=now)], max(3, a.calls // 5))  # noqa: B023
            found, judged = counted(lambda: sm.staleness(cat, now=now))  # noqa: B023
            rows.append((n, every, found, judged, whole, each, built))
            print(f"  {n} tables{' (1 in ' + str(every) + ' overdue)' if every else ''}: built in {built:.0f} s",
                  flush=True)
            cat.close()
        finally:
            shutil.rmtree(root, ignore_errors=True)
    print(f"\nwarm p50 ms, {a.files} files a table, {a.calls} calls")
    print(f"{'tables':>8} {'overdue':>8} {'findings':>9} {'judged':>7} {'whole catalog':>14} {'table by table':>15} {'ratio':>7}")
    for n, every, found, judged, whole, each, _ in rows:
        print(f"{n:>8} {('1/' + str(every)) if every else '-':>8} {found:>9} {judged:>7} {whole:>14.2f} {each:>15.2f}"
              f" {each / whole if whole else float('nan'):>6.0f}x")


if __name__ == "__main__":
    main()
