"""Relocatable catalogs (DESIGN.md, Storage): a table's `location` and a file's `path` inside the data
directory's warehouse are stored relative to it, so a copied or moved data directory is a working,
independent catalog.

The engine is the one boundary: a transaction stores such a path relative (`relative_op`, on every
recorded write, whatever its source: the Python API, HTTP, Iceberg REST, Spark), and every read of the
embedded catalog (`get`, `query`, `children`, `history`, `diff`, `plan_files`, a transaction's reads)
hands it out absolute again (`absolute`), against the warehouse of the directory it was opened from.
So the DuckDB reader, plan_files' callers, the Spark bridge, Iceberg materialization and the REST
catalog see absolute paths as before, and a copy never reads or writes the original's files.

A stored path is relative when it is neither absolute (`/...`) nor a URI (`scheme://...`). Catalogs
written before this stored absolute paths; those are read as they are, and `relocate` rewrites them
(and re-points locations outside the warehouse, the Hadoop-catalog way) in every stored version.

Lake roots. A directory holding several data directories that share files beside them (an eval lake:
`LAKE/enriched`, `LAKE/stale` and their files in `LAKE/warehouse`) is marked by a file named `MARKER` in
it. A data directory directly inside a marked lake root also stores the paths inside that root relative,
as `../../warehouse/...` (relative to its own warehouse), so `cp -a LAKE COPY` or `mv` gives a working,
independent lake. Reading never depends on the marker (a stored `../` path is joined and normalized);
only storing does, so a plain data directory's parent is never taken for a lake by accident."""

from __future__ import annotations

import os
import re
from typing import Any

from catalog_core.frozen import FrozenDict

__all__ = ["KEYS", "MARKER", "absolute", "relative_value", "relative_delta", "is_relative", "repoint", "lake_root",
           "mark_lake_root"]

# obj_type -> the key holding a filesystem location
KEYS = {"table": "location", "file": "path"}

# the file that marks a lake root (see the module's docstring)
MARKER = "semcat-lake-root"


def lake_root(data_dir: str) -> str | None:
    """The lake root holding the data directory `data_dir` (its parent, when marked), else None."""
    parent = os.path.dirname(os.path.abspath(data_dir))
    return parent if os.path.isfile(os.path.join(parent, MARKER)) else None


def mark_lake_root(root: str) -> str:
    """Mark `root` as a lake root (made when missing; idempotent); returns the marker's path."""
    path = os.path.join(root, MARKER)
    if not os.path.isfile(path):
        os.makedirs(root, exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("This directory is a semcat lake root: the catalog data directories directly inside it store\n"
                     "table locations and file paths inside it relative, so a copy or a move of the whole\n"
                     "directory is a working, independent lake (docs/engine.md, Relocatable catalogs).\n")
    return path


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def is_relative(p: str) -> bool:
    """A stored path relative to the warehouse: neither absolute nor a URI (`s3://...`, Hadoop's `file:/x`)."""
    return bool(p) and not p.startswith("/") and _SCHEME.match(p) is None


def absolute(value: Any, warehouse: str) -> Any:
    """`value` with its stored-relative location or path made absolute against `warehouse` (the same
    object when there is nothing to change; a FrozenDict stays frozen)."""
    if not isinstance(value, dict):
        return value
    key = KEYS.get(value.get("obj_type"))  # type: ignore[arg-type]
    if key is None:
        if value.get("obj_type") == "catalog":
            return _catalog(value, lambda p: join(warehouse, p) if is_relative(p) else p)
        return value
    p = value.get(key)
    if not isinstance(p, str) or not is_relative(p):
        return value
    out = dict(value)
    out[key] = join(warehouse, p)
    return FrozenDict(out) if isinstance(value, FrozenDict) else out


def _catalog(value: Any, fn: Any) -> Any:
    """A catalog object with `fn` applied to its `properties.warehouse` (the root of new tables'
    locations: stored like a location); the same object when nothing changes."""
    props = value.get("properties")
    p = props.get("warehouse") if isinstance(props, dict) else None
    if not isinstance(p, str) or not p:
        return value
    q = fn(p)
    if q == p:
        return value
    out, inner = dict(value), dict(props)
    inner["warehouse"] = q
    frozen = isinstance(value, FrozenDict)
    out["properties"] = FrozenDict(inner) if frozen else inner
    return FrozenDict(out) if frozen else out


def join(warehouse: str, p: str) -> str:
    """A stored-relative path made absolute: `../` (a path elsewhere in the lake root) is normalized."""
    return os.path.normpath(os.path.join(warehouse, p)) if p[0] == "." else os.path.join(warehouse, p)


def _rel(p: Any, warehouse: str, root: str | None = None) -> Any:
    if isinstance(p, str):
        bare = p.removeprefix("file://") if p.startswith("file:///") else p
        if bare.startswith(warehouse + "/"):
            return os.path.normpath(bare[len(warehouse) + 1:])
        if bare == warehouse or bare == warehouse + "/":
            return "."
        if root is not None and bare.startswith(root + "/") and not _escapes(bare, root):
            return os.path.relpath(os.path.normpath(bare), warehouse)  # `../../warehouse/...`
    return p


def _escapes(p: str, root: str) -> bool:
    """`p` (under `root` by its spelling) leaves it through `..`."""
    return not os.path.normpath(p).startswith(root + "/")


def relative_value(value: Any, warehouse: str, root: str | None = None) -> Any:
    """`value` with an absolute location or path inside `warehouse` (or inside the lake `root`, when
    given) made relative (the same object when there is nothing to change)."""
    if not isinstance(value, dict):
        return value
    key = KEYS.get(value.get("obj_type"))  # type: ignore[arg-type]
    if key is None and value.get("obj_type") == "catalog":
        return _catalog(value, lambda p: _rel(p, warehouse, root))
    if key is None or key not in value:
        return value
    rel = _rel(value[key], warehouse, root)
    if rel is value[key]:
        return value
    out = dict(value)
    out[key] = rel
    return out


def relative_delta(delta: Any, warehouse: str, root: str | None = None) -> Any:
    """A merge delta setting `location` (plain or {"op": "set", "val": ...}) with it made relative."""
    if not isinstance(delta, dict) or "location" not in delta:
        return delta
    loc = delta["location"]
    if isinstance(loc, dict) and set(loc) == {"op", "val"} and loc.get("op") == "set":
        rel = _rel(loc["val"], warehouse, root)
        return delta if rel is loc["val"] else {**delta, "location": {"op": "set", "val": rel}}
    rel = _rel(loc, warehouse, root)
    return delta if rel is loc else {**delta, "location": rel}


def repoint(value: Any, warehouse: str, old: str | None, new: str | None, root: str | None = None) -> Any:
    """For `relocate`: a stored value with its location or path under `old` moved under `new` (when
    given), then made relative when inside `warehouse`; the same object when nothing changes."""
    if not isinstance(value, dict):
        return value
    key = KEYS.get(value.get("obj_type"))  # type: ignore[arg-type]
    if key is None and value.get("obj_type") == "catalog":
        return _catalog(value, lambda p: _repoint_path(p, warehouse, old, new, root))
    p = value.get(key) if key is not None else None
    if key is None or not isinstance(p, str):
        return value
    q = _repoint_path(p, warehouse, old, new, root)
    if q == p:
        return value
    out = dict(value)
    out[key] = q
    return out


def _repoint_path(p: str, warehouse: str, old: str | None, new: str | None, root: str | None) -> str:
    q = p
    if old is not None and new is not None:
        bare = q.removeprefix("file://") if q.startswith("file:///") and not old.startswith("file:") else q
        if bare == old or bare.startswith(old.rstrip("/") + "/"):
            q = new.rstrip("/") + bare[len(old.rstrip("/")):]
    out: str = _rel(q, warehouse, root)
    return out


def relocate_store(store: Any, warehouse: str, old: str | None = None, new: str | None = None,
                   batch: int = 10_000, root: str | None = None) -> int:
    """Rewrite, in every stored version (current, past, every leaf lifetime), the locations and file paths
    under `old` to lie under `new`, and those inside `warehouse` relative to it; returns how many stored
    values changed. Not a commit: the catalog's history is the same, only where its files are changed.
    The caller holds the catalog open for writing (the embedded catalog's exclusive open)."""
    from catalog_core.codec import pack, pack_leaf, unpack, unpack_leaf

    changed = 0
    wb = store.new_batch()
    pending = 0

    def flush() -> None:
        nonlocal wb, pending
        if pending:
            store.db.write(wb, store._sync)
            wb, pending = store.new_batch(), 0

    for cf in ("inner", "delta"):
        handle = store.handle[cf]
        for key, raw in list(store.cf[cf].items()):
            rec = unpack(raw)
            i = 1 if cf == "inner" else 2
            value = repoint(rec[i], warehouse, old, new, root)
            if value is not rec[i]:
                rec[i] = value
                wb.put(key, pack(rec), handle)
                changed, pending = changed + 1, pending + 1
                if pending >= batch:
                    flush()
    handle = store.handle["leaf"]
    for key, raw in list(store.cf["leaf"].items()):
        lts = unpack(raw)
        touched = False
        for lt in lts:
            if lt[2] is None:
                continue
            v = unpack_leaf(lt[2])
            value = repoint(v, warehouse, old, new, root)
            if value is not v:
                lt[2] = pack_leaf(value)
                touched = True
                changed += 1
        if touched:
            wb.put(key, pack(lts), handle)
            pending += 1
            if pending >= batch:
                flush()
    flush()
    return changed
