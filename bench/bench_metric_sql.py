"""metric_sql compile time: median µs to compile a metric into one DuckDB statement, on the small
retail lake of eval/fixtures/lake_joins.py (10 tables, 9 relationships, 2 metrics).

    .venv/bin/python -m bench.bench_metric_sql [--quick] [--http]

warm: the catalog's tables and annotations at the vid are cached (every call after the first at a
vid); cold: that cache is emptied before each compile, so each one reads the catalog
(one path query for the annotations, one for the tables, one per catalog listing)."""

from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
import time

import semantic as sm
from eval.fixtures.lake_joins import T, shop
from semantic.history import clear_cache

CASES = {
    "bare metric": dict(metric="orders"),
    "2 dims + where + range + month": dict(metric="net_revenue", group_by=["region", "channel"],
                                           where="format <> 'outlet'", time_range=("2024-02-04", "2025-02-02"),
                                           grain="month"),
    "3 dims + fiscal_period (date dim)": dict(metric="fct_order_items.net_revenue",
                                              group_by=["region", "loyalty_tier", "category"],
                                              time_range=("2024-02-04", "2025-02-02"), grain="fiscal_period"),
}


def median_us(fn, n: int, cold: bool) -> float:
    times = []
    for _ in range(n):
        if cold:
            clear_cache()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--http", action="store_true", help="compile through cc.connect against semcat's server")
    args = ap.parse_args()
    n = 50 if args.quick else 300
    with tempfile.TemporaryDirectory() as d, contextlib.ExitStack() as stack:
        s = stack.enter_context(shop("http" if args.http else "embedded", d))
        sm.define_metric(s.cat, T("fct_order_items"), "net_revenue", expression="sum(net_line_cents) / 100.0",
                         filter="status <> 'cancelled'", time_column="order_date_local", author="bench")
        sm.define_metric(s.cat, T("fct_orders"), "orders", expression="count(DISTINCT order_id)",
                         filter="status <> 'cancelled'", time_column="order_date_local", author="bench")
        print(f"metric_sql compile time, {'HTTP' if args.http else 'embedded'} catalog, {n} runs each, median µs")
        print(f"{'case':38} {'warm':>10} {'cold':>10}")
        for name, kw in CASES.items():
            def run(kw=kw):
                return sm.metric_sql(s.cat, **kw)
            run()
            warm = median_us(run, n, cold=False)
            cold = median_us(run, max(n // 5, 10), cold=True)
            print(f"{name:38} {warm:10.0f} {cold:10.0f}")


if __name__ == "__main__":
    main()
