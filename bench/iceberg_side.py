"""pyiceberg comparison side of semcat's benchmarks.

Baseline: pyiceberg ``SqlCatalog`` (sqlite) with a local-disk ``file://`` warehouse.

Public API
----------
- ``make_catalog(root)``                      -> SqlCatalog "bench" (sqlite:///{root}/iceberg.db, file://{root}/warehouse)
- ``file_specs(n_files, start, end, seed=0)`` -> list[dict], the deterministic synthetic data-file descriptions
  (``iter_file_specs`` is the streaming version). Both semcat's side and this side load these exact files.
- ``expected_file_count(n_files, start, end, lo, hi)`` -> number of specs with ``lo <= day < hi``
- ``build_store_sales(root, n_files, start, end, progress=True)`` -> Table ``bench.store_sales`` (cached)
- ``plan_files_bench(table, day_lo, days, repeat=5)`` -> {"times": [...], "files": int}
- ``light_commit_bench(root, n=200)`` -> {"load_table": [...], "set_property": [...]}

Data files are *not* written: only their metadata (DataFile entries with partition value, counts,
sizes and Iceberg-spec-serialized lower/upper bounds) is committed with pyiceberg's fast append.

Smoke run:  ``.venv/bin/python -m bench.iceberg_side --files 5000``
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import shutil
import statistics
import struct
import sys
import time
from datetime import date, timedelta
from typing import Any, Iterator

from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.conversions import to_bytes
from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.transforms import IdentityTransform
from pyiceberg.typedef import Record
from pyiceberg.types import DateType, DoubleType, IntegerType, LongType, NestedField

NAMESPACE = "bench"
STORE_SALES = f"{NAMESPACE}.store_sales"
LIGHT_TABLE = f"{NAMESPACE}.light_store_sales"
DEFAULT_START = "1998-01-01"
DEFAULT_END = "2003-12-31"  # inclusive -> 2,191 daily partitions
EPOCH = date(1970, 1, 1)

# (field_id, name, iceberg type, spec kind). kind: "date" -> ISO string, "long"/"int" -> int, "double" -> float
COLUMNS: list[tuple[int, str, Any, str]] = [
    (1, "ss_sold_date", DateType(), "date"),
    (2, "ss_item_sk", LongType(), "long"),
    (3, "ss_customer_sk", LongType(), "long"),
    (4, "ss_store_sk", LongType(), "long"),
    (5, "ss_promo_sk", LongType(), "long"),
    (6, "ss_ticket_number", LongType(), "long"),
    (7, "ss_quantity", IntegerType(), "int"),
    (8, "ss_wholesale_cost", DoubleType(), "double"),
    (9, "ss_list_price", DoubleType(), "double"),
    (10, "ss_sales_price", DoubleType(), "double"),
    (11, "ss_net_paid", DoubleType(), "double"),
    (12, "ss_net_profit", DoubleType(), "double"),
]
COLUMN_NAMES = [c[1] for c in COLUMNS]

# Iceberg single-value binary serialization (spec Appendix D), identical to pyiceberg.conversions.to_bytes
# for these types; checked against to_bytes in _check_serialization().
_PACK = {"date": struct.Struct("<i").pack, "int": struct.Struct("<i").pack,
         "long": struct.Struct("<q").pack, "double": struct.Struct("<d").pack}


def store_sales_schema() -> Schema:
    return Schema(*[NestedField(fid, name, typ, required=False) for fid, name, typ, _ in COLUMNS])


def store_sales_spec() -> PartitionSpec:
    return PartitionSpec(PartitionField(source_id=1, field_id=1000, transform=IdentityTransform(), name="ss_sold_date"))


def make_catalog(root: str) -> SqlCatalog:
    os.makedirs(os.path.join(root, "warehouse"), exist_ok=True)
    return SqlCatalog("bench", uri=f"sqlite:///{root}/iceberg.db", warehouse=f"file://{root}/warehouse")


# ----------------------------------------------------------------------------------------------
# Deterministic file specs
# ----------------------------------------------------------------------------------------------

def _days(start: str, end: str) -> list[date]:
    d0, d1 = date.fromisoformat(start), date.fromisoformat(end)
    return [d0 + timedelta(days=k) for k in range((d1 - d0).days + 1)]


def iter_file_specs(n_files: int, start: str = DEFAULT_START, end: str = DEFAULT_END, seed: int = 0) -> Iterator[dict]:
    """Yield ``n_files`` file descriptions in day order. File i lives on day index ``i * n_days // n_files``.

    Dict format::

        {"day": "2001-06-01", "file_id": "f0001234-<8 hex>", "path": "s3://semcat-bench/store_sales/data/"
         "ss_sold_date=2001-06-01/f0001234-<8 hex>.parquet", "row_count": int, "size_bytes": int,
         "columns": {col: {"min": v, "max": v, "null_count": int}}}   # all 12 COLUMNS, v: str(date)/int/float
    """
    days = [d.isoformat() for d in _days(start, end)]
    n_days = len(days)
    rng = random.Random(seed)
    rnd = rng.random
    getbits = rng.getrandbits
    ticket = 1
    for i in range(n_files):
        day = days[i * n_days // n_files]
        fid = f"f{i:07d}-{getbits(32):08x}"
        rows = 100_000 + int(rnd() * 900_000)
        nulls = int(rows * (0.03 + 0.03 * rnd()))  # TPC-DS-ish ~4.5% nulls in nullable FK/measure columns
        tickets = rows // 10
        wc_min = (100 + int(rnd() * 50)) / 100  # prices in cents -> 2-decimal floats
        lp_min = (100 + int(rnd() * 50)) / 100
        yield {
            "day": day,
            "file_id": fid,
            "path": f"s3://semcat-bench/store_sales/data/ss_sold_date={day}/{fid}.parquet",
            "row_count": rows,
            "size_bytes": rows * 30 + int(rnd() * rows * 8),
            "columns": {
                "ss_sold_date": {"min": day, "max": day, "null_count": 0},
                "ss_item_sk": {"min": 1 + int(rnd() * 40), "max": 204_000 - int(rnd() * 40), "null_count": 0},
                "ss_customer_sk": {"min": 1 + int(rnd() * 200), "max": 2_000_000 - int(rnd() * 200), "null_count": nulls},
                "ss_store_sk": {"min": 1 + int(rnd() * 3), "max": 400 - int(rnd() * 3), "null_count": nulls + 17},
                "ss_promo_sk": {"min": 1 + int(rnd() * 3), "max": 1000 - int(rnd() * 3), "null_count": nulls + 31},
                "ss_ticket_number": {"min": ticket, "max": ticket + tickets - 1, "null_count": 0},
                "ss_quantity": {"min": 1, "max": 100, "null_count": nulls + 5},
                "ss_wholesale_cost": {"min": wc_min, "max": (10_000 - int(rnd() * 5)) / 100, "null_count": nulls + 11},
                "ss_list_price": {"min": lp_min, "max": (20_000 - int(rnd() * 50)) / 100, "null_count": nulls + 3},
                "ss_sales_price": {"min": 0.0, "max": (20_000 - int(rnd() * 200)) / 100, "null_count": nulls + 7},
                "ss_net_paid": {"min": 0.0, "max": (1_990_000 - int(rnd() * 30_000)) / 100, "null_count": nulls + 13},
                "ss_net_profit": {"min": (-1_000_000 + int(rnd() * 10_000)) / 100, "max": (990_000 - int(rnd() * 30_000)) / 100,
                                  "null_count": nulls + 2},
            },
        }
        ticket += tickets


def file_specs(n_files: int, start: str = DEFAULT_START, end: str = DEFAULT_END, seed: int = 0) -> list[dict]:
    """Deterministic list of synthetic store_sales data files (see ``iter_file_specs`` for the format)."""
    was_enabled = gc.isenabled()
    gc.disable()  # millions of small dicts: cyclic GC passes would double the generation time
    try:
        return list(iter_file_specs(n_files, start, end, seed))
    finally:
        if was_enabled:
            gc.enable()


def expected_file_count(n_files: int, start: str, end: str, lo: str, hi: str) -> int:
    """Number of specs with ``lo <= day < hi`` (computed from the day assignment, no spec generation)."""
    d0 = date.fromisoformat(start)
    n_days = (date.fromisoformat(end) - d0).days + 1
    a = min(max((date.fromisoformat(lo) - d0).days, 0), n_days)
    b = min(max((date.fromisoformat(hi) - d0).days, 0), n_days)
    if b <= a:
        return 0
    # file i is on day idx i*n_days//n_files; first file on day >= k is ceil(k*n_files/n_days)
    first = lambda k: -((-k * n_files) // n_days)  # noqa: E731
    return first(b) - first(a)


# ----------------------------------------------------------------------------------------------
# DataFile construction
# ----------------------------------------------------------------------------------------------

def _bound_value(kind: str, v: Any) -> Any:
    return (date.fromisoformat(v) - EPOCH).days if kind == "date" else v


def _check_serialization(spec: dict) -> None:
    for _fid, name, typ, kind in COLUMNS:
        for k in ("min", "max"):
            v = _bound_value(kind, spec["columns"][name][k])
            assert _PACK[kind](v) == to_bytes(typ, v), (name, k)


def spec_to_data_file(spec: dict) -> DataFile:
    """Build a pyiceberg DataFile (format v2 layout) from one file spec."""
    rows = spec["row_count"]
    cols = spec["columns"]
    lower, upper, nulls, values = {}, {}, {}, {}
    for fid, name, _typ, kind in COLUMNS:
        c = cols[name]
        pack = _PACK[kind]
        lower[fid] = pack(_bound_value(kind, c["min"]))
        upper[fid] = pack(_bound_value(kind, c["max"]))
        nulls[fid] = c["null_count"]
        values[fid] = rows
    df = DataFile.from_args(
        content=DataFileContent.DATA,
        file_path=spec["path"],
        file_format=FileFormat.PARQUET,
        partition=Record((date.fromisoformat(spec["day"]) - EPOCH).days),
        record_count=rows,
        file_size_in_bytes=spec["size_bytes"],
        value_counts=values,
        null_value_counts=nulls,
        nan_value_counts={},
        lower_bounds=lower,
        upper_bounds=upper,
        sort_order_id=None,
        equality_ids=None,
        key_metadata=None,
    )
    df.spec_id = 0
    return df


def _fast_append(table: Table, data_files: list[DataFile]) -> None:
    with table.transaction() as tx:
        with tx.update_snapshot().fast_append() as fa:
            for df in data_files:
                fa.append_data_file(df)


# ----------------------------------------------------------------------------------------------
# Table builders
# ----------------------------------------------------------------------------------------------

def _drop_table_and_files(catalog: SqlCatalog, identifier: str) -> None:
    try:
        tbl = catalog.load_table(identifier)
    except NoSuchTableError:
        return
    location = tbl.location()
    catalog.drop_table(identifier)
    if location.startswith("file://"):
        shutil.rmtree(location[len("file://"):], ignore_errors=True)


def _log(msg: str) -> None:
    print(f"[iceberg_side {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def build_store_sales(root: str, n_files: int, start: str = DEFAULT_START, end: str = DEFAULT_END,
                      progress: bool = True, seed: int = 0, days_per_commit: int = 30) -> Table:
    """Create (or reuse) ``bench.store_sales`` holding exactly ``file_specs(n_files, start, end, seed)``.

    One fast append per ``days_per_commit`` days of data (a monthly-loader pattern): ~73 snapshots/manifests
    for 1998..2003. Reuse condition: table exists with matching bench.* properties and total-data-files.
    Only one store_sales per root: use a separate root per n_files to keep several sizes cached.
    """
    catalog = make_catalog(root)
    catalog.create_namespace_if_not_exists(NAMESPACE)
    want = {"bench.n_files": str(n_files), "bench.start": start, "bench.end": end, "bench.seed": str(seed),
            "bench.days_per_commit": str(days_per_commit)}
    try:
        table = catalog.load_table(STORE_SALES)
        snap = table.current_snapshot()
        props = table.properties
        if (all(props.get(k) == v for k, v in want.items()) and props.get("bench.complete") == "true"
                and snap is not None and int(snap.summary["total-data-files"]) == n_files):
            if progress:
                _log(f"reusing cached {STORE_SALES} with {n_files} files in {root}")
            return table
        if progress:
            _log(f"existing {STORE_SALES} does not match ({n_files} files wanted); rebuilding")
        _drop_table_and_files(catalog, STORE_SALES)
    except NoSuchTableError:
        pass

    t0 = time.perf_counter()
    table = catalog.create_table(STORE_SALES, schema=store_sales_schema(), partition_spec=store_sales_spec(),
                                 properties=want)
    n_days = (date.fromisoformat(end) - date.fromisoformat(start)).days + 1
    done = commits = 0
    batch: list[DataFile] = []
    batch_end_day = None
    d0 = date.fromisoformat(start)
    for spec in iter_file_specs(n_files, start, end, seed):
        if done == 0:
            _check_serialization(spec)
        day_idx = (date.fromisoformat(spec["day"]) - d0).days if batch_end_day is not None else 0
        if batch_end_day is None:
            batch_end_day = ((date.fromisoformat(spec["day"]) - d0).days // days_per_commit + 1) * days_per_commit
        elif day_idx >= batch_end_day:
            _fast_append(table, batch)
            commits += 1
            batch = []
            batch_end_day = (day_idx // days_per_commit + 1) * days_per_commit
            if progress and (commits % 10 == 0):
                el = time.perf_counter() - t0
                _log(f"build {n_files}: {done}/{n_files} files, {commits} commits, {el:.1f}s "
                     f"(~{el / done * (n_files - done):.0f}s left)")
        batch.append(spec_to_data_file(spec))
        done += 1
    if batch:
        _fast_append(table, batch)
        commits += 1
    table = table.transaction().set_properties({"bench.complete": "true"}).commit_transaction()
    if progress:
        _log(f"built {STORE_SALES}: {n_files} files over {n_days} days, {commits} commits, "
             f"{time.perf_counter() - t0:.1f}s")
    return table


def plan_files_bench(table: Table, day_lo: str, days: int, repeat: int = 5) -> dict:
    """Time ``scan(row_filter=lo <= ss_sold_date < lo+days).plan_files()`` (materialized); sanity-check count."""
    lo = date.fromisoformat(day_lo)
    hi = lo + timedelta(days=days)
    row_filter = And(GreaterThanOrEqual("ss_sold_date", lo.isoformat()), LessThan("ss_sold_date", hi.isoformat()))
    props = table.properties
    expected = expected_file_count(int(props["bench.n_files"]), props["bench.start"], props["bench.end"],
                                   lo.isoformat(), hi.isoformat())
    times: list[float] = []
    count = -1
    for i in range(repeat + 1):  # the first run warms caches and is not timed, as on semcat's side
        t = time.perf_counter()
        tasks = list(table.scan(row_filter=row_filter).plan_files())
        if i:
            times.append(time.perf_counter() - t)
        count = len(tasks)
        assert count == expected, f"plan_files returned {count} files, expected {expected} for [{lo}, {hi})"
    return {"times": times, "files": count}


def light_commit_bench(root: str, n: int = 200) -> dict:
    """Latencies (s) of ``catalog.load_table`` and of a one-property commit, each n times, on a small table."""
    catalog = make_catalog(root)
    catalog.create_namespace_if_not_exists(NAMESPACE)
    _drop_table_and_files(catalog, LIGHT_TABLE)
    table = catalog.create_table(LIGHT_TABLE, schema=store_sales_schema(), partition_spec=store_sales_spec())
    _fast_append(table, [spec_to_data_file(s) for s in iter_file_specs(100, "2003-12-01", DEFAULT_END)])

    load: list[float] = []
    for _ in range(n):
        t = time.perf_counter()
        table = catalog.load_table(LIGHT_TABLE)
        load.append(time.perf_counter() - t)

    setp: list[float] = []
    for i in range(n):
        t = time.perf_counter()
        with table.transaction() as tx:
            tx.set_properties(k=str(i))
        setp.append(time.perf_counter() - t)
    assert catalog.load_table(LIGHT_TABLE).properties["k"] == str(n - 1)
    return {"load_table": load, "set_property": setp}


# ----------------------------------------------------------------------------------------------

def _ms(xs: list[float]) -> str:
    return f"median {statistics.median(xs) * 1e3:.2f} ms (min {min(xs) * 1e3:.2f}, n={len(xs)})"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--root", default="/tmp/semcat-bench-iceberg")
    ap.add_argument("--n", type=int, default=200, help="iterations for light commit bench (0 = skip)")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)

    t = time.perf_counter()
    specs = file_specs(args.files)
    print(f"file_specs({args.files}): {time.perf_counter() - t:.2f}s")

    root = os.path.join(args.root, f"n{args.files}")
    t = time.perf_counter()
    table = build_store_sales(root, args.files)
    print(f"build_store_sales({args.files}) [incl. cache check]: {time.perf_counter() - t:.1f}s")
    for day_lo, days in (("2001-06-01", 1), ("2001-01-01", 365)):
        r = plan_files_bench(table, day_lo, days, repeat=args.repeat)
        exp = sum(1 for s in specs if day_lo <= s["day"] < (date.fromisoformat(day_lo) + timedelta(days)).isoformat())
        assert r["files"] == exp
        print(f"plan_files {days:>3}-day from {day_lo}: {r['files']} files, {_ms(r['times'])}, first {r['times'][0] * 1e3:.1f} ms")

    if args.n:
        r = light_commit_bench(os.path.join(args.root, "light"), n=args.n)
        print(f"load_table:   {_ms(r['load_table'])}")
        print(f"set_property: {_ms(r['set_property'])}")


if __name__ == "__main__":
    main()
