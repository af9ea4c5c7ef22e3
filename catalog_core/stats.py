"""Table and partition statistics (DESIGN.md, Data model) and the merge deltas that keep them.

Stats have the shape `{row_count, file_count, size_bytes, columns: {name: {min, max, null_count}},
last_data_commit: {vid, time}}`. Per-file contributions roll up with `add` / `combine`; a commit
applies them as merge deltas: appends use commutative ops (+, min, max), so concurrent writers
never conflict (`append_delta`); a write that replaces files `set`s values it recomputed from a
validated read (`set_delta`). `last_data_commit` is stamped by the engine with the committing vid
and time (the `commit_vid` / `commit_time` merge ops). Writers of files (the Spark bridge, the
Iceberg importer) share this module so the catalog holds one kind of stats whoever wrote them.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["empty", "of_file", "add", "combine", "from_stats", "op", "append_delta", "set_delta"]

# what `last_data_commit` holds before the engine stamps it (pure merges in tests use a hint)
_NO_HINT = {"vid": 0, "time": 0.0}


def empty() -> dict[str, Any]:
    return {"row_count": 0, "file_count": 0, "size_bytes": 0, "columns": {}}


def of_file(file_value: dict[str, Any], partition: dict[str, Any] | None = None) -> dict[str, Any]:
    """One file's contribution; partition columns count as constant columns of the file."""
    rows = int(file_value.get("row_count") or 0)
    cols = {c: {"min": s.get("min"), "max": s.get("max"), "null_count": s.get("null_count")}
            for c, s in (file_value.get("columns") or {}).items()}
    for c, v in (partition or {}).items():
        cols[c] = {"min": v, "max": v, "null_count": rows if v is None else 0}
    return {"row_count": rows, "file_count": 1, "size_bytes": int(file_value.get("size_bytes") or 0),
            "columns": cols}


def _lt(a: Any, b: Any) -> bool:
    try:
        return bool(a < b)
    except TypeError:  # values of different types never order; keep the stored one
        return False


def add(acc: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """acc += other (in place); unknown (None) min/max/null_count are skipped."""
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
    """Stored stats (of a table or partition) in the aggregate form."""
    return add(empty(), stats or {})


def op(name: str, val: Any) -> dict[str, Any]:
    """One merge operation: `{"op": name, "val": val}` (+, -, min, max, set, commit_vid, commit_time)."""
    return {"op": name, "val": val}


def _stamp(hint: dict[str, Any] | None) -> dict[str, Any]:
    # The engine fills in the committing vid and time; the hint only serves pure (test) merges.
    h = hint or _NO_HINT
    return {"vid": op("commit_vid", h["vid"]), "time": op("commit_time", h["time"])}


def append_delta(agg: dict[str, Any], hint: dict[str, Any] | None = None) -> dict[str, Any]:
    """The merge delta that adds `agg` (appended files) to stored stats, commutatively."""
    cols = {}
    for c, s in agg["columns"].items():
        d: dict[str, Any] = {"null_count": op("+", int(s.get("null_count") or 0))}
        if s.get("min") is not None:
            d["min"] = op("min", s["min"])
        if s.get("max") is not None:
            d["max"] = op("max", s["max"])
        cols[c] = d
    return {"stats": {"row_count": op("+", agg["row_count"]), "file_count": op("+", agg["file_count"]),
                      "size_bytes": op("+", agg["size_bytes"]), "columns": cols,
                      "last_data_commit": _stamp(hint)}}


def set_delta(agg: dict[str, Any], hint: dict[str, Any] | None = None, data: bool = True) -> dict[str, Any]:
    """The merge delta that replaces stored stats with `agg` (recomputed after a validated read);
    `data=False` leaves `last_data_commit` alone (a change that moved no rows)."""
    out: dict[str, Any] = {"row_count": op("set", agg["row_count"]), "file_count": op("set", agg["file_count"]),
                           "size_bytes": op("set", agg["size_bytes"]),
                           "columns": op("set", copy.deepcopy(agg["columns"]))}
    if data:
        out["last_data_commit"] = _stamp(hint)
    return {"stats": out}
