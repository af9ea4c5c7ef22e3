"""A small private writer of annotation objects, exactly as the storage layout fixes them
(`<table>/_semantic/<key>`: obj_type, kind, key, target, value, provenance with basis). It will be
replaced by `semantic.annotations` once that is merged; only relate, define_metric and profile use it.

The basis is computed from a snapshot read at `read_vid`; the transaction only writes (`update` of
`_semantic` and of each annotation), so it never conflicts with concurrent data commits."""

from __future__ import annotations

import time as _time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from catalog_core import lake
from catalog_core.errors import InvalidValueError

if TYPE_CHECKING:
    from catalog_core.api import CatalogAPI
    from semantic._tables import TableInfo

__all__ = ["Pending", "write_annotations", "check_provenance", "SOURCES"]

SOURCES = ("human", "agent", "inferred", "import")


@dataclass
class Pending:
    """One annotation to write on table `table`: `columns` are the names it refers to (None: all)."""

    table: TableInfo
    key: str
    kind: str
    value: Any
    confidence: float = 1.0
    columns: list[str] | None = None
    column: str | None = None  # for column annotations
    note: str | None = None


def check_provenance(author: Any, source: Any, confidence: Any) -> None:
    if not isinstance(author, str) or not author.strip():
        raise InvalidValueError(f"author must be a non-empty name (who is writing this), got {author!r}")
    if source not in SOURCES:
        raise InvalidValueError(f"source must be one of {', '.join(SOURCES)}, got {source!r}")
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 <= confidence <= 1:
        raise InvalidValueError(f"confidence must be a number from 0 to 1, got {confidence!r}")


def _basis(cat: CatalogAPI, p: Pending, read_vid: int) -> dict[str, Any]:
    t = p.table
    wanted = None if p.columns is None else {n.lower() for n in p.columns}
    cols = [c for c in t.columns if wanted is None or c.name.lower() in wanted]
    stats = t.stats()
    col_stats = stats.get("columns") or {}
    if not col_stats and stats.get("file_count", 1):
        col_stats = _file_stats(cat, t.name, read_vid)
    picked = {}
    for c in cols:
        s = col_stats.get(c.name)
        if isinstance(s, dict):
            picked[c.name] = {k: s.get(k) for k in ("min", "max", "null_count")}
    last = stats.get("last_data_commit")
    return {"vid": read_vid, "schema_id": (t.value.get("schema") or {}).get("schema_id"),
            "columns": [{"id": c.id, "name": c.name, "type": c.type} for c in cols],
            "row_count": stats.get("row_count"), "stats": picked,
            "last_data_commit": ({"vid": last.get("vid"), "time": last.get("time")}
                                 if isinstance(last, dict) else None)}


def _file_stats(cat: CatalogAPI, table: str, vid: int) -> dict[str, dict[str, Any]]:
    """Column min / max / null_count merged over the table's files (tables without stats)."""
    out: dict[str, dict[str, Any]] = {}
    for f in cat.plan_files(table, vid=vid):
        for name, s in ((f.value or {}).get("columns") or {}).items():
            cur = out.setdefault(name, {"min": None, "max": None, "null_count": 0})
            try:
                if s.get("min") is not None and (cur["min"] is None or s["min"] < cur["min"]):
                    cur["min"] = s["min"]
                if s.get("max") is not None and (cur["max"] is None or s["max"] > cur["max"]):
                    cur["max"] = s["max"]
            except TypeError:
                pass
            if cur["null_count"] is not None and s.get("null_count") is not None:
                cur["null_count"] += int(s["null_count"])
            else:
                cur["null_count"] = None
    return out


def write_annotations(cat: CatalogAPI, items: list[Pending], read_vid: int, *, author: str, source: str,
                      message: str = "") -> int:
    """Write every pending annotation (with provenance and basis as of `read_vid`) in one
    write-only transaction; returns its vid."""
    now = _time.time()
    writes: list[tuple[str, dict[str, Any]]] = []
    for p in items:  # everything is read (at read_vid) before the transaction opens
        obj: dict[str, Any] = {"obj_type": "annotation", "kind": p.kind, "key": p.key,
                               "target": p.table.name, "value": p.value}
        if p.column is not None:
            col = p.table.column(p.column)
            obj["column"], obj["column_id"] = col.name, col.id
        obj["provenance"] = {"author": author, "source": source, "confidence": float(p.confidence),
                             "time": now, "note": p.note, "basis": _basis(cat, p, read_vid)}
        writes.append((p.table.name, obj))
    with cat.transaction(author=author, message=message or f"annotate {len(items)}") as txn:
        for folder in dict.fromkeys(lake.semantic_path(name) for name, _ in writes):
            txn.update(folder, {"obj_type": "semantic"})
        for name, obj in writes:
            txn.update(lake.semantic_path(name, obj["key"]), obj)
    assert txn.vid is not None
    return txn.vid
