"""A real local SparkSession shared by the whole test session, a fresh Bridge per test, and
oracles that check the catalog against the Parquet files themselves."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import os

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import catalog_core as cc


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a long end-to-end test (still part of the default run)")


@pytest.fixture(scope="session")
def spark():
    from spark_bridge import local_session

    session = local_session(app_name="semcat-tests", cores=2)
    yield session
    session.stop()


@pytest.fixture
def bridge(spark, data_dir):
    from spark_bridge import Bridge

    b = Bridge(spark, data_dir)
    yield b
    b.close()


def _json(v):
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(dt.timezone.utc)
        return v.isoformat(timespec="microseconds")
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def data_truth(path: str) -> dict:
    """Row count, size and per-column min/max/null_count computed from the file's rows."""
    table = pq.read_table(path)
    cols = {}
    for name in table.column_names:
        col = table.column(name)
        mm = pc.min_max(col)
        cols[name] = {"min": _json(mm["min"].as_py()), "max": _json(mm["max"].as_py()),
                      "null_count": col.null_count}
    return {"row_count": table.num_rows, "size_bytes": os.path.getsize(path), "columns": cols}


def parquet_files(root: str) -> set[str]:
    return {os.path.join(r, f) for r, _d, fs in os.walk(root) for f in fs if f.endswith(".parquet")}


def expected_stats(files: list, partition_of) -> dict:
    """Sum over file leaves (partition columns as constants), computed independently of the bridge."""
    out = {"row_count": 0, "file_count": 0, "size_bytes": 0, "columns": {}}
    for f in files:
        v = f.value
        out["row_count"] += v["row_count"]
        out["file_count"] += 1
        out["size_bytes"] += v["size_bytes"]
        cols = dict(v["columns"])
        for col, val in partition_of(f).items():
            cols[col] = {"min": val, "max": val, "null_count": v["row_count"] if val is None else 0}
        for name, s in cols.items():
            cur = out["columns"].setdefault(name, {"min": None, "max": None, "null_count": 0})
            if s["min"] is not None and (cur["min"] is None or s["min"] < cur["min"]):
                cur["min"] = s["min"]
            if s["max"] is not None and (cur["max"] is None or s["max"] > cur["max"]):
                cur["max"] = s["max"]
            cur["null_count"] += s["null_count"]
    return out


def _stats_view(stats: dict) -> dict:
    return {"row_count": stats.get("row_count", 0), "file_count": stats.get("file_count", 0),
            "size_bytes": stats.get("size_bytes", 0),
            "columns": {c: {"min": s.get("min"), "max": s.get("max"), "null_count": s.get("null_count", 0)}
                        for c, s in (stats.get("columns") or {}).items()}}


def assert_stats_consistent(cat: cc.Catalog, name: str, vid=None) -> dict:
    """Table and every partition's stats equal the sum over the files below them."""
    tpath = "/" + name.replace(".", "/")
    table = cat.get(tpath, vid=vid).value
    files = cat.plan_files(name, vid=vid)
    pcols = table.get("partition_by") or []

    def partition_of(f):
        vals, path = {}, f.path.rsplit("/", 1)[0]
        while path != tpath:
            obj = cat.get(path, vid=vid).value
            col = pcols[path.count("/") - tpath.count("/") - 1]
            vals[col] = obj[col]
            path = path.rsplit("/", 1)[0]
        return vals

    assert _stats_view(table["stats"]) == expected_stats(files, partition_of)
    parts = set()
    for f in files:
        p = f.path.rsplit("/", 1)[0]
        while p != tpath:
            parts.add(p)
            p = p.rsplit("/", 1)[0]
    for p in parts:
        below = [f for f in files if f.path.startswith(p + "/")]
        assert _stats_view(cat.get(p, vid=vid).value["stats"]) == expected_stats(below, partition_of), p
    return table
