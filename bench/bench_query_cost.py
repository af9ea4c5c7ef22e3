"""Path-query cost against query size: or-chains of obj_id and and-chains of `n != k`.

    .venv/bin/python -m bench.bench_query_cost            # 1k, 2k, 4k, 8k, 16k terms
    .venv/bin/python -m bench.bench_query_cost --quick    # 1k, 2k, 4k terms

For each size: parse + seek bounds + compile (medians of --repeat runs, compile cache cleared),
the end-to-end query on an embedded catalog whose parent has 2,000 children, the ratio to the
previous size (sizes double, so ~2 means linear and ~4 quadratic), and the peak memory of
parse + bounds + compile under tracemalloc (one extra run) per byte of query text.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import tracemalloc

import catalog_core as cc
from catalog_core.query import compile_expr, id_ranges, parse

CHILDREN = 2000


def or_query(n: int) -> str:
    return '/[obj_id = "p"]/[' + " or ".join(f'obj_id = "c{(i * 7919) % n}"' for i in range(n)) + "]"


def and_query(n: int) -> str:
    return '/[obj_id = "p"]/[' + " and ".join(f"n != {2 * i}" for i in range(n)) + "]"


def front(text: str) -> None:
    q = parse(text)
    for step in q.steps:
        id_ranges(step.expr)
        compile_expr(step.expr)


def median_s(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        compile_expr.cache_clear()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    sizes = (1000, 2000, 4000) if args.quick else (1000, 2000, 4000, 8000, 16000)
    with tempfile.TemporaryDirectory() as root:
        cat = cc.Catalog.open(root)
        with cat.transaction(author="bench", message="children") as t:
            t.add("/p", {"kind": "parent"})
            for i in range(CHILDREN):
                t.add(f"/p/c{i}", {"n": i})
        for name, make in (("or obj_id", or_query), ("and n !=", and_query)):
            print(f"\n== {name} chain ==")
            print(f"{'terms':>7} {'chars':>9} {'front ms':>9} {'x':>5} {'query ms':>9} {'x':>5} "
                  f"{'peak MB':>8} {'peak/char':>9} {'rows':>6}")
            prev: tuple[float, float] | None = None
            for n in sizes:
                text = make(n)
                f = median_s(lambda text=text: front(text), args.repeat)
                rows: list = []
                e = median_s(lambda text=text, rows=rows: rows.append(len(cat.query(text))), args.repeat)
                compile_expr.cache_clear()
                tracemalloc.start()
                front(text)
                peak = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
                rf = f"{f / prev[0]:.2f}" if prev else "-"
                re_ = f"{e / prev[1]:.2f}" if prev else "-"
                print(f"{n:>7,} {len(text):>9,} {f * 1e3:>9.1f} {rf:>5} {e * 1e3:>9.1f} {re_:>5} "
                      f"{peak / 1e6:>8.1f} {peak / len(text):>9.0f} {rows[-1]:>6}", flush=True)
                prev = (f, e)
        cat.close()


if __name__ == "__main__":
    main()
