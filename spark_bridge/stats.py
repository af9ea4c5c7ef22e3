"""Statistics of Spark writes: per-file stats (partition columns count as constant columns of the
file) roll up into partition and table stats through `catalog_core.stats`, whose merge deltas a
commit applies; compaction swaps files with `replace_delta`."""

from __future__ import annotations

from typing import Any

from catalog_core.stats import add, append_delta, combine, empty, from_stats, of_file, op, set_delta

__all__ = ["empty", "of_file", "add", "combine", "from_stats", "append_delta", "replace_delta",
           "set_delta", "initial"]


def initial() -> dict[str, Any]:
    """The stats a new table or partition starts with, before its first merge."""
    return empty()


def replace_delta(added: dict[str, Any], removed: dict[str, Any], hint: dict[str, Any] | None) -> dict[str, Any]:
    """Swap files with the same rows (compaction): additive stats move by added - removed, and
    min/max merge the new files' values (no-ops when the rows are the same)."""
    delta = append_delta(added, hint)
    st = delta["stats"]
    for k in ("row_count", "file_count", "size_bytes"):
        st[k] = op("+", added[k] - removed[k])
    names = set(added["columns"]) | set(removed["columns"])
    for c in names:
        a = added["columns"].get(c, {}).get("null_count") or 0
        r = removed["columns"].get(c, {}).get("null_count") or 0
        st["columns"].setdefault(c, {})["null_count"] = op("+", int(a) - int(r))
    if hint is None:
        del st["last_data_commit"]
    return delta
