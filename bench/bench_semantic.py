"""Semantic layer speed on a lake of 22 tables with 120 days of history (daily loads, annotations
at day 1, a few schema changes on the way): `describe` p50/p99 warm and cold, whole-catalog
staleness at metadata depth (cold: caches cleared; warm) and at data depth (cold).

    PYTHONPATH=. .venv/bin/python -m bench.bench_semantic [--quick]     # --quick: 30 days
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import catalog_core as cc
import semantic as sm
from semantic.annotations import new_annotation, write_annotations
from semantic.history import clear_cache
from tests.semantic.lakes import LakeBuilder

FACTS = 12
DIMS = 10


def build(days: int, root: str) -> tuple[cc.Catalog, LakeBuilder]:
    cat = cc.Catalog.open(root + "/data")
    lk = LakeBuilder(cat, root + "/files")
    dims = [f"acme.core.dim_{i}" for i in range(DIMS)]
    facts = [f"acme.core.fct_{i}" for i in range(FACTS)]
    for d in dims:
        lk.table(d, [("key_id", "bigint"), ("name", "string"), ("region", "string")], at=0,
                 rows={"key_id": list(range(50)), "name": [f"n{i}" for i in range(50)],
                       "region": ["east", "west"] * 25})
    for f in facts:
        lk.table(f, [("d", "date"), ("row_id", "bigint"), ("key_id", "bigint"), ("status", "string"),
                     ("amount_cents", "bigint")], partition_by=["d"], at=0,
                 rows={"d": ["2024-11-10"] * 4, "row_id": [-1, -2, -3, -4], "key_id": [1, 2, 3, 4],
                       "status": ["placed"] * 4, "amount_cents": [10000, 10100, 10200, 10300]})
    for i, d in enumerate(dims):
        sm.annotate(cat, d, {"description": f"dimension {i}", "grain": {"text": "one per key", "keys": ["key_id"]},
                             "owner": "data", "freshness_sla": "P2D"}, author="alice", time=lk.at(0.5))
        sm.annotate(cat, d, {"enum": ["east", "west"], "description": "region"}, column="region", author="alice",
                    time=lk.at(0.5))
    for i, f in enumerate(facts):
        sm.annotate(cat, f, {"description": f"fact {i}", "grain": {"text": "one per row", "keys": ["row_id"]},
                             "freshness_sla": "PT26H"}, author="alice", time=lk.at(0.5))
        sm.annotate(cat, f, {"unit": "cents", "role": "measure"}, column="amount_cents", author="alice",
                    time=lk.at(0.5))
        sm.annotate(cat, f, {"enum": ["placed", "shipped"], "sample_values": ["placed"]}, column="status",
                    author="alice", time=lk.at(0.5))
        to = dims[i % DIMS]
        ann = new_annotation(cat, f, "relationship", f"relationship.{to.rsplit('.', 1)[1]}",
                             {"to": to, "on": [["key_id", "key_id"]], "cardinality": "many_to_one",
                              "canonical": True, "condition": None}, columns=["key_id"], author="bob",
                             time=lk.at(0.5))
        write_annotations(cat, [ann], time=ann.provenance.time)
    row = 0
    for day in range(1, days + 1):
        date = time.strftime("%Y-%m-%d", time.gmtime(lk.day(day)))
        for j, f in enumerate(facts):
            if j == 0 and day > days // 2:
                continue  # a table that stops loading half way
            n = 20
            cents = 1 if not (j == 1 and day > days - 10) else 100  # a unit change late on
            lk.append(f, {"d": [date] * n, "row_id": list(range(row, row + n)), "key_id": [k % 50 for k in range(n)],
                          "status": ["placed", "shipped"] * (n // 2),
                          "amount_cents": [(100 + k) * 100 // cents for k in range(n)]}, at=day + j / 100)
            row += n
        if day == days // 3:
            lk.evolve(dims[2], add=[("valid_from", "date"), ("is_current", "boolean")], at=day + 0.5)
        if day == days // 2:
            lk.evolve(facts[3], add=[("channel", "string")], at=day + 0.5)
    return cat, lk


def timed(fn, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    days = 30 if args.quick else 120
    root = tempfile.mkdtemp(prefix="bench-semantic-")
    t0 = time.perf_counter()
    cat, lk = build(days, root)
    print(f"built 22 tables x {days} days: {cat.latest_vid} commits in {time.perf_counter() - t0:.1f} s")
    now = lk.day(days + 0.5)
    tables = sorted(o.path.strip("/").replace("/", ".") for o in cat.query('/*/*/[obj_type = "table"]'))

    cold = []
    for _ in range(3):
        clear_cache()
        cold += timed(lambda: sm.staleness(cat, now=now), 1)
    warm = timed(lambda: sm.staleness(cat, now=now), 20)
    found = sm.staleness(cat, now=now)
    print(f"staleness, metadata, whole catalog: cold median {statistics.median(cold):.1f} ms, "
          f"warm median {statistics.median(warm):.1f} ms; {len(found)} findings: "
          f"{sorted({f.reason for f in found})}")

    clear_cache()
    dcold = timed(lambda: sm.staleness(cat, depth="data", now=now), 1)
    found = sm.staleness(cat, depth="data", now=now)
    print(f"staleness, data, whole catalog: cold {dcold[0]:.0f} ms; {len(found)} findings: "
          f"{sorted({f.reason for f in found})}")

    clear_cache()
    dcold_desc = []
    for t in tables:
        dcold_desc += timed(lambda t=t: sm.describe(cat, t, now=now), 1)
    dwarm = []
    for _ in range(20):
        for t in tables:
            dwarm += timed(lambda t=t: sm.describe(cat, t, now=now), 1)
    print(f"describe: cold p50 {pct(dcold_desc, 0.5):.2f} ms p99 {pct(dcold_desc, 0.99):.2f} ms; "
          f"warm p50 {pct(dwarm, 0.5):.3f} ms p99 {pct(dwarm, 0.99):.3f} ms ({len(dwarm)} calls)")
    cat.close()


if __name__ == "__main__":
    main()
