"""Search quality and speed on the 22 tables of LAKE.md (bench/search_lake.py), bare and enriched.

For each question of bench/search_questions.yaml (gold tables written from LAKE.md before the ranker
was tuned): recall@1, recall@5 and MRR of `sm.search` (a question is found at rank r when any of its
gold tables is the r-th hit), in the bare condition (no annotations) and the enriched one (LAKE.md's
annotations). Then latency: p50 / p90 of a warm search (index built, describe cached), the cold
first search (index built from scratch), and the incremental refresh after one annotation.

    PYTHONPATH=. .venv/bin/python -m bench.bench_search [--mode lexical|hybrid] [--show-misses]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import yaml

import semantic as sm
from bench.search_lake import build
from semantic.history import clear_cache
from semantic.search import clear_search_cache

HERE = os.path.dirname(os.path.abspath(__file__))


def questions() -> list[dict]:
    with open(os.path.join(HERE, "search_questions.yaml")) as f:
        return yaml.safe_load(f)["questions"]


def rank_of(hits: list, gold: list[str]) -> int | None:
    golds = {"acme." + g for g in gold}
    for i, h in enumerate(hits):
        if h.table in golds:
            return i + 1
    return None


def evaluate(cat, qs: list[dict], mode: str, show: bool, label: str) -> dict[str, float]:
    ranks = []
    for q in qs:
        hits = sm.search(cat, q["q"], limit=10, mode=mode)
        r = rank_of(hits, q["gold"])
        ranks.append(r)
        if show and (r is None or r > 1):
            print(f"  [{label}] rank {r}: {q['q']!r} gold {q['gold']} got {[h.table for h in hits[:3]]}")
    n = len(ranks)
    return {"recall@1": sum(1 for r in ranks if r == 1) / n,
            "recall@5": sum(1 for r in ranks if r is not None and r <= 5) / n,
            "mrr": sum(1.0 / r for r in ranks if r is not None) / n, "n": n}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="lexical", choices=["lexical", "hybrid"])
    ap.add_argument("--show-misses", action="store_true")
    args = ap.parse_args()
    qs = questions()
    with tempfile.TemporaryDirectory() as root:
        results = {}
        for cond in ("bare", "enriched"):
            os.makedirs(f"{root}/{cond}")
            cat = build(f"{root}/{cond}", enriched=cond == "enriched")
            t0 = time.perf_counter()
            sm.search(cat, "warm up", mode=args.mode)
            cold = time.perf_counter() - t0
            results[cond] = evaluate(cat, qs, args.mode, args.show_misses, cond)
            if cond == "enriched":
                lat = []
                for _ in range(3):
                    for q in qs:
                        t0 = time.perf_counter()
                        sm.search(cat, q["q"], mode=args.mode)
                        lat.append(time.perf_counter() - t0)
                clear_search_cache(cat)
                clear_cache(cat)
                t0 = time.perf_counter()
                sm.search(cat, qs[0]["q"], mode=args.mode)
                cold_first = time.perf_counter() - t0
                sm.annotate(cat, "acme.core.fct_orders", {"synonyms": ["purchases"]}, author="bench")
                t0 = time.perf_counter()
                sm.search(cat, "purchases", mode=args.mode)
                incr = time.perf_counter() - t0
                results["latency"] = {"p50_ms": statistics.median(lat) * 1000,
                                      "p90_ms": statistics.quantiles(lat, n=10)[8] * 1000,
                                      "cold_first_ms": cold_first * 1000, "cold_build_ms": cold * 1000,
                                      "after_annotate_ms": incr * 1000}
            cat.close()
    print(f"search on LAKE.md's 22 tables, {len(qs)} questions, mode {args.mode}")
    print(f"{'condition':<10} {'recall@1':>9} {'recall@5':>9} {'MRR':>6}")
    for cond in ("bare", "enriched"):
        r = results[cond]
        print(f"{cond:<10} {r['recall@1']:>9.3f} {r['recall@5']:>9.3f} {r['mrr']:>6.3f}")
    lat = results["latency"]
    print(f"latency (enriched, warm, {3 * len(qs)} searches): p50 {lat['p50_ms']:.2f} ms, p90 {lat['p90_ms']:.2f} ms")
    print(f"first search after clearing caches: {lat['cold_first_ms']:.1f} ms; first search after an annotation "
          f"(incremental refresh): {lat['after_annotate_ms']:.1f} ms")


if __name__ == "__main__":
    main()
