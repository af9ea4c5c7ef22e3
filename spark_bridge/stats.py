"""Statistics arithmetic: per-file stats roll up into partition and table stats
({row_count, file_count, size_bytes, columns: {col: {min, max, null_count}}}), and become the
merge deltas a commit applies. Appends use commutative ops (+, min, max) so concurrent writers
never conflict; overwrites `set` values recomputed from a validated read."""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["empty", "of_file", "add", "combine", "from_stats", "append_delta", "replace_delta",
           "set_delta", "initial"]


def empty() -> dict[str, Any]:
    return {"row_count": 0, "file_count": 0, "size_bytes": 0, "columns": {}}


def initial() -> dict[str, Any]:
    """The stats a new table or partition starts with, before its first merge."""
    return empty()


def of_file(file_value: dict[str, Any], partition: dict[str, Any]) -> dict[str, Any]:
    """One file's contribution; partition columns count as constant columns of the file."""
    rows = int(file_value.get("row_count") or 0)
    cols = {c: {"min": s.get("min"), "max": s.get("max"), "null_count": s.get("null_count")}
            for c, s in (file_value.get("columns") or {}).items()}
    for c, v in partition.items():
        cols[c] = {"min": v, "max": v, "null_count": rows if v is None else 0}
    return {"row_count": rows, "file_count": 1, "size_bytes": int(file_value.get("size_bytes") or 0),
            "columns": cols}


def _lt(a: Any, b: Any) -> bool:
    try:
        return a < b
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


def _op(op: str, val: Any) -> dict[str, Any]:
    return {"op": op, "val": val}


def _stamp(hint: dict[str, Any]) -> dict[str, Any]:
    # The engine fills in the committing vid and time; the hint only serves pure (test) merges.
    return {"vid": _op("commit_vid", hint["vid"]), "time": _op("commit_time", hint["time"])}


def append_delta(agg: dict[str, Any], hint: dict[str, Any]) -> dict[str, Any]:
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
                      "last_data_commit": _stamp(hint)}}


def replace_delta(added: dict[str, Any], removed: dict[str, Any], hint: dict[str, Any] | None) -> dict[str, Any]:
    """Swap files with the same rows (compaction): additive stats move by added - removed, and
    min/max merge the new files' values (no-ops when the rows are the same)."""
    delta = append_delta(added, hint or {"vid": 0, "time": 0.0})
    st = delta["stats"]
    for k in ("row_count", "file_count", "size_bytes"):
        st[k] = _op("+", added[k] - removed[k])
    names = set(added["columns"]) | set(removed["columns"])
    for c in names:
        a = added["columns"].get(c, {}).get("null_count") or 0
        r = removed["columns"].get(c, {}).get("null_count") or 0
        st["columns"].setdefault(c, {})["null_count"] = _op("+", int(a) - int(r))
    if hint is None:
        del st["last_data_commit"]
    return delta


def set_delta(agg: dict[str, Any], hint: dict[str, Any]) -> dict[str, Any]:
    return {"stats": {"row_count": _op("set", agg["row_count"]), "file_count": _op("set", agg["file_count"]),
                      "size_bytes": _op("set", agg["size_bytes"]),
                      "columns": _op("set", copy.deepcopy(agg["columns"])),
                      "last_data_commit": _stamp(hint)}}
