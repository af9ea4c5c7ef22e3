"""Table and partition statistics, in the shape the Spark bridge keeps them (DESIGN.md, Data
model): {row_count, file_count, size_bytes, columns: {name: {min, max, null_count}},
last_data_commit: {vid, time}}. Appends merge commutative ops (+, min, max); a snapshot that
removes files `set`s the stats it recomputed for what it touched."""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["empty", "of_file", "add", "combine", "from_stats", "append_delta", "set_delta", "rekey"]


def empty() -> dict[str, Any]:
    return {"row_count": 0, "file_count": 0, "size_bytes": 0, "columns": {}}


def of_file(value: dict[str, Any], names: dict[int, str] | None = None) -> dict[str, Any]:
    """One file leaf's contribution. With `names` (column id -> current name), the file's columns
    are renamed through its `field_ids`, and columns no longer in the schema are left out."""
    ids = value.get("field_ids") or {}
    cols = {}
    for c, s in (value.get("columns") or {}).items():
        name = c
        if names is not None and c in ids:
            name = names.get(ids[c])
            if name is None:
                continue
        cols[name] = {"min": s.get("min"), "max": s.get("max"), "null_count": s.get("null_count")}
    return {"row_count": int(value.get("row_count") or 0), "file_count": 1,
            "size_bytes": int(value.get("size_bytes") or 0), "columns": cols}


def _lt(a: Any, b: Any) -> bool:
    try:
        return bool(a < b)
    except TypeError:
        return False


def add(acc: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """acc += other, in place; unknown (None) min / max / null_count are skipped."""
    for k in ("row_count", "file_count", "size_bytes"):
        acc[k] = acc.get(k, 0) + int(other.get(k) or 0)
    cols = acc.setdefault("columns", {})
    for c, s in (other.get("columns") or {}).items():
        cur = cols.setdefault(c, {"min": None, "max": None, "null_count": 0})
        lo, hi, nulls = s.get("min"), s.get("max"), s.get("null_count")
        if lo is not None and (cur["min"] is None or _lt(lo, cur["min"])):
            cur["min"] = lo
        if hi is not None and (cur["max"] is None or _lt(cur["max"], hi)):
            cur["max"] = hi
        if nulls is not None:
            cur["null_count"] = (cur["null_count"] or 0) + int(nulls)
    return acc


def combine(parts: list[dict[str, Any]]) -> dict[str, Any]:
    acc = empty()
    for p in parts:
        add(acc, p)
    return acc


def from_stats(stats: dict[str, Any] | None) -> dict[str, Any]:
    return add(empty(), stats or {})


def _op(op: str, val: Any) -> dict[str, Any]:
    return {"op": op, "val": val}


def _stamp() -> dict[str, Any]:
    return {"vid": _op("commit_vid", 0), "time": _op("commit_time", 0.0)}


def append_delta(agg: dict[str, Any]) -> dict[str, Any]:
    cols = {}
    for c, s in agg["columns"].items():
        d: dict[str, Any] = {"null_count": _op("+", int(s.get("null_count") or 0))}
        if s.get("min") is not None:
            d["min"] = _op("min", s["min"])
        if s.get("max") is not None:
            d["max"] = _op("max", s["max"])
        cols[c] = d
    return {"stats": {"row_count": _op("+", agg["row_count"]), "file_count": _op("+", agg["file_count"]),
                      "size_bytes": _op("+", agg["size_bytes"]), "columns": cols,
                      "last_data_commit": _stamp()}}


def set_delta(agg: dict[str, Any], data: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"row_count": _op("set", agg["row_count"]), "file_count": _op("set", agg["file_count"]),
                           "size_bytes": _op("set", agg["size_bytes"]),
                           "columns": _op("set", copy.deepcopy(agg["columns"]))}
    if data:
        out["last_data_commit"] = _stamp()
    return {"stats": out}


def rekey(columns: dict[str, Any], old: dict[str, int], new: dict[int, str]) -> dict[str, Any]:
    """Stats columns keyed by the names of `old` (name -> id) re-keyed to `new` (id -> name);
    columns that left the schema are dropped, unknown names kept."""
    out = {}
    for name, s in columns.items():
        fid = old.get(name)
        if fid is None:
            if name not in new.values():
                out[name] = s
            continue
        if fid in new:
            out[new[fid]] = s
    return out
