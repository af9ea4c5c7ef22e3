"""The operations of the concurrency-control microbenchmark (paper §7.1), one transaction each.

Every operation either commits or raises (ConflictError, DeadlockError, ...) after aborting its
transaction; the client does not retry, it counts the abort and moves on.

- fact insert: predicate-reads the customer and item files overlapping a random business-id range
  (the join of the input with the dimensions), reads the day's partition, adds one file leaf and
  merges partition and table statistics. The table merge is recorded first: the data files are
  written before the catalog commit, so the stats delta is known up front (under mgl this takes
  the table's X lock before its S locks, avoiding S->X upgrade deadlocks between fact inserts).
- dimension insert: adds a file covering a NEW business-id range past the current maximum and
  merges the table stats. It never matches a fact insert's predicate, but it is in its scan range.
- optimize: reads one partition's files, replaces its small files by one merged file.
- read: read-only snapshot reads (plan_files or a path query over a date range).
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from datetime import date, timedelta
from typing import Any

import catalog_core as cc

from .mvocc_data import DIMS, FACTS, SMALL_FILE, bid, dim_file, fact_file, partition_path, table_path

__all__ = ["Workload", "OPS", "WRITE_WEIGHTS", "pick_op", "client_loop", "summarize"]

OPS = ("fact_insert", "dim_insert", "optimize", "read")
# Paper §7.1: fact inserts 12x as frequent as dimension inserts and 144x as frequent as optimize.
WRITE_WEIGHTS = {"fact_insert": 144, "dim_insert": 12, "optimize": 1}
CUSTOMER_RANGE = 20_000  # ids a fact insert joins with: ~20 customer files
ITEM_RANGE = 2_000  # ~10 item files
NEW_DAY_FRACTION = 0.02  # fact inserts that open a partition past the loaded range


def _q(*steps: str) -> str:
    return "/" + "/".join(f"[{s}]" for s in steps)


def _ids(*parts: str) -> list[str]:
    return [f'obj_id = "{p}"' for p in parts]


def _day_after(day: str, n: int) -> str:
    return (date.fromisoformat(day) + timedelta(days=n)).isoformat()


class Workload:
    """Shared state of one run: the catalog, the dataset meta, id and file-name allocators."""

    def __init__(self, cat: Any, meta: dict[str, Any], client_s: float = 0.0, tag: str = "",
                 id_offset: int = 0) -> None:
        self.cat = cat  # an embedded Catalog or a remote client (cc.connect)
        self.client_s = client_s  # client-side time between the catalog reads and the commit
        self.days: list[str] = meta["days"]
        self.base_max: dict[str, int] = dict(meta["id_max"])
        # client processes allocate names and new dimension ids from disjoint ranges
        self.tag = tag
        self._next_id = {d: m + 1 + id_offset for d, m in self.base_max.items()}
        self._lock = threading.Lock()
        self._names = itertools.count()

    def name(self) -> str:
        return f"n-{self.tag}{next(self._names):08d}"

    def new_range(self, dim: str) -> tuple[int, int]:
        per = DIMS[dim][3]
        with self._lock:
            lo = self._next_id[dim]
            self._next_id[dim] = lo + per
        return lo, lo + per - 1

    def _client_work(self) -> None:
        # The writer's own work between reading the catalog and committing (the join with the
        # dimension files, RPC round trips); it holds mgl locks but uses no catalog CPU.
        if self.client_s > 0:
            time.sleep(self.client_s)

    # ---------------------------------------------------------------- operations
    def run(self, op: str, rng: random.Random) -> None:
        getattr(self, op)(rng)

    def _dim_query(self, dim: str, lo: int, hi: int) -> str:
        col, prefix, *_ = DIMS[dim]
        pred = f'columns.{col}.max >= "{bid(prefix, lo)}" and columns.{col}.min <= "{bid(prefix, hi)}"'
        return _q(*_ids("wh", "tpcds", dim), pred)

    def fact_insert(self, rng: random.Random) -> None:
        table = rng.choice(FACTS)
        day = (_day_after(self.days[-1], rng.randrange(1, 31)) if rng.random() < NEW_DAY_FRACTION
               else rng.choice(self.days))
        c_lo = rng.randrange(0, self.base_max["customer"] - CUSTOMER_RANGE)
        i_lo = rng.randrange(0, self.base_max["item"] - ITEM_RANGE)
        size = rng.randrange(1 << 20, 16 << 20)
        f = fact_file(rng, day, size, size // 100)
        part = partition_path(table, day)
        delta = {"stats": {"row_count": {"op": "+", "val": f["row_count"]}, "file_count": {"op": "+", "val": 1},
                           "size_bytes": {"op": "+", "val": size}}}
        table_delta = {"stats": {**delta["stats"], "columns": {"d": {"min": {"op": "min", "val": day},
                                                                     "max": {"op": "max", "val": day}}}}}
        txn = self.cat.transaction(author="bench:fact", message=f"insert {table} {day}")
        try:
            txn.merge(table_path(table), table_delta)
            txn.flush()  # a remote client sends it now, so mgl's X lock also comes first over HTTP
            customers = txn.query(self._dim_query("customer", c_lo, c_lo + CUSTOMER_RANGE))
            items = txn.query(self._dim_query("item", i_lo, i_lo + ITEM_RANGE))
            if not customers or not items:
                raise AssertionError(f"the join found no dimension files ({len(customers)}, {len(items)})")
            existing = txn.query(_q(*_ids("wh", "tpcds", table, f"d={day}")))
            self._client_work()
            if existing:
                txn.merge(part, delta)
            else:
                txn.add(part, {"obj_type": "partition", "d": day, "stats": {k: v["val"] for k, v in
                                                                             delta["stats"].items()}})
            txn.add(f"{part}/{self.name()}", f, leaf=True)
            txn.commit()
        except BaseException:
            txn.abort()
            raise

    def dim_insert(self, rng: random.Random) -> None:
        dim = "customer" if rng.random() < 0.6 else "item"
        lo, hi = self.new_range(dim)
        name = self.name()
        f = dim_file(dim, lo, hi, name)
        col = DIMS[dim][0]
        delta = {"stats": {"row_count": {"op": "+", "val": f["row_count"]}, "file_count": {"op": "+", "val": 1},
                           "size_bytes": {"op": "+", "val": f["size_bytes"]},
                           "columns": {col: {"max": {"op": "max", "val": f["columns"][col]["max"]}}}}}
        txn = self.cat.transaction(author="bench:dim", message=f"insert {dim} {lo}-{hi}")
        try:
            txn.merge(table_path(dim), delta)
            txn.add(f"{table_path(dim)}/{name}", f, leaf=True)
            txn.commit()
        except BaseException:
            txn.abort()
            raise

    def optimize(self, rng: random.Random) -> None:
        table, day = rng.choice(FACTS), rng.choice(self.days)
        part = partition_path(table, day)
        txn = self.cat.transaction(author="bench:optimize", message=f"optimize {table} {day}")
        try:
            files = txn.query(_q(*_ids("wh", "tpcds", table, f"d={day}"), "obj_type = \"file\""))
            small = [o for o in files if o.value["size_bytes"] < SMALL_FILE]
            if len(small) < 2:
                txn.commit()  # nothing to compact: a read-only transaction
                return
            self._client_work()
            rows = sum(o.value["row_count"] for o in small)
            size = sum(o.value["size_bytes"] for o in small)
            merged = fact_file(rng, day, size, rows)
            for o in small:
                txn.remove(o.path)
            txn.add(f"{part}/{self.name()}", merged, leaf=True)
            shrink = {"stats": {"file_count": {"op": "-", "val": len(small) - 1}}}
            txn.merge(part, shrink)
            txn.merge(table_path(table), shrink)
            txn.commit()
        except BaseException:
            txn.abort()
            raise

    def read(self, rng: random.Random) -> None:
        table = rng.choice(FACTS)
        r = rng.random()
        start = rng.randrange(0, len(self.days) - 400)
        vid = self.cat.latest_vid  # the snapshot of this read-only transaction
        if r < 0.45:
            lo, hi = self.days[start], self.days[start + 30]
            files = self.cat.plan_files(f"wh.tpcds.{table}", where=f'd >= "{lo}" and d < "{hi}"', vid=vid)
        elif r < 0.9:
            lo, hi = self.days[start], self.days[start + 7]
            files = self.cat.query(_q(*_ids("wh", "tpcds", table), f'obj_id >= "d={lo}" and obj_id < "d={hi}"',
                                      "obj_type = \"file\""), vid=vid)
        else:
            lo, hi = self.days[start], self.days[start + 365]
            files = self.cat.plan_files(f"wh.tpcds.{table}", where=f'd >= "{lo}" and d < "{hi}"', vid=vid)
        if not files:
            raise AssertionError(f"read of {table} {lo}..{hi} found no files")


# ------------------------------------------------------------------ the client loop and its summary
# (here, not in bench_mvocc: the in-process and the HTTP runs share them)
def pick_op(rng: random.Random, read_share: float) -> str:
    if rng.random() < read_share:
        return "read"
    r = rng.random() * sum(WRITE_WEIGHTS.values())
    for op, w in WRITE_WEIGHTS.items():
        r -= w
        if r < 0:
            return op
    return "fact_insert"


def client_loop(wl: Workload, rng: random.Random, read_share: float, end: float, log: list,
                clock: Any = time.perf_counter) -> None:
    """Run random operations until `clock()` reaches `end`, logging (op, committed, seconds, why)."""
    while clock() < end:
        op = pick_op(rng, read_share)
        t0 = time.perf_counter()
        try:
            wl.run(op, rng)
            log.append((op, True, time.perf_counter() - t0, None))
        except cc.errors.DeadlockError:
            log.append((op, False, time.perf_counter() - t0, "deadlock"))
        except cc.ConflictError:
            log.append((op, False, time.perf_counter() - t0, "conflict"))
        except cc.PreconditionError:
            log.append((op, False, time.perf_counter() - t0, "precondition"))


def _pct(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def summarize(logs: list[list], elapsed: float) -> dict[str, Any]:
    rows = [r for log in logs for r in log]
    per_op: dict[str, Any] = {}
    for op in OPS:
        mine = [r for r in rows if r[0] == op]
        ok = [r[2] for r in mine if r[1]]
        reasons: dict[str, int] = {}
        for r in mine:
            if not r[1]:
                reasons[r[3]] = reasons.get(r[3], 0) + 1
        per_op[op] = {"committed": len(ok), "aborted": len(mine) - len(ok), "abort_reasons": reasons,
                      "p50_ms": _ms(_pct(ok, 0.5)), "p99_ms": _ms(_pct(ok, 0.99))}
    committed = sum(1 for r in rows if r[1])
    rw = [r for r in rows if r[0] != "read"]
    rw_aborts = sum(1 for r in rw if not r[1])
    return {"elapsed_s": round(elapsed, 3), "committed": committed, "attempted": len(rows),
            "throughput": round(committed / elapsed, 1) if elapsed else 0.0,
            "abort_rate": round(rw_aborts / len(rw), 4) if rw else 0.0, "ops": per_op}


def _ms(x: float | None) -> float | None:
    return None if x is None else round(x * 1000, 2)
