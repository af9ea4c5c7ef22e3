"""Statistics of imported Iceberg files, in the catalog's one stats shape (`catalog_core.stats`):
a file's columns are renamed through its `field_ids`; stored stats re-keyed across a rename."""

from __future__ import annotations

from typing import Any

from catalog_core.stats import add, append_delta, combine, empty, from_stats, set_delta

__all__ = ["empty", "of_file", "add", "combine", "from_stats", "append_delta", "set_delta", "rekey"]


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
