"""Read Parquet footers with pyarrow: per-file row count and per-column min, max and null count (the
Spark bridge's executors and `semcat import parquet` both use it). Also moves staged files into place.

This module runs inside Spark's Python workers, so it imports only pyarrow and the standard
library; the bridge ships it to executors by value (cloudpickle), so a cluster needs pyarrow
but not semcat installed. Statistics come out JSON-friendly: dates and timestamps as ISO-8601
strings, decimals as floats, binary and non-finite floats as unknown (None).
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
from collections.abc import Iterable, Iterator
from typing import Any

__all__ = ["json_value", "footer_stats", "split_uri", "FileSystems", "move_and_read"]


def json_value(v: Any) -> Any:
    """A Parquet statistic as a JSON-friendly value that orders like the original (None: unknown)."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, decimal.Decimal):
        return float(v) if v.is_finite() else None
    if isinstance(v, _dt.datetime):
        if v.tzinfo is not None:
            return v.astimezone(_dt.timezone.utc).isoformat(timespec="microseconds")
        return v.isoformat(timespec="microseconds")
    if isinstance(v, (_dt.date, _dt.time)):
        return v.isoformat()
    return None  # bytes and anything exotic: no order worth keeping


def _top_level_columns(md: Any) -> dict[int, str]:
    """Column-chunk index -> name, for top-level primitive columns only (nested ones are skipped)."""
    arrow = md.schema.to_arrow_schema()
    flat = {f.name for f in arrow if not (hasattr(f.type, "num_fields") and f.type.num_fields)}
    out = {}
    for i in range(md.num_columns):
        path = md.schema.column(i).path
        if path in flat:
            out[i] = path
    return out


def _merge(acc: dict[str, dict[str, Any]], name: str, lo: Any, hi: Any, known: bool, nulls: int | None) -> None:
    cur = acc.setdefault(name, {"min": None, "max": None, "null_count": 0, "_known": True})
    if nulls is None or cur["null_count"] is None:
        cur["null_count"] = None
    else:
        cur["null_count"] += nulls
    if not known:
        cur["_known"] = False
        return
    if lo is not None:
        cur["min"] = lo if cur["min"] is None or lo < cur["min"] else cur["min"]
    if hi is not None:
        cur["max"] = hi if cur["max"] is None or hi > cur["max"] else cur["max"]


def footer_stats(md: Any) -> dict[str, Any]:
    """row_count and per-column {min, max, null_count} of one file's FileMetaData; min/max are
    None when any row group holding non-null values has no usable statistics."""
    cols = _top_level_columns(md)
    acc: dict[str, dict[str, Any]] = {}
    for r in range(md.num_row_groups):
        rg = md.row_group(r)
        for i, name in cols.items():
            st = rg.column(i).statistics
            if st is None:
                _merge(acc, name, None, None, rg.num_rows == 0, None)
                continue
            nulls = st.null_count if st.has_null_count else None
            if st.has_min_max:
                lo, hi = json_value(st.min), json_value(st.max)
                _merge(acc, name, lo, hi, lo is not None and hi is not None, nulls)
            else:  # no min/max is fine only when the row group holds nulls alone
                _merge(acc, name, None, None, nulls is not None and nulls >= rg.num_rows, nulls)
    for name in cols.values():
        acc.setdefault(name, {"min": None, "max": None, "null_count": 0, "_known": True})
    columns = {}
    for name, c in acc.items():
        known = c.pop("_known")
        columns[name] = {"min": c["min"] if known else None, "max": c["max"] if known else None,
                         "null_count": c["null_count"]}
    return {"row_count": md.num_rows, "columns": columns}


def split_uri(uri: str) -> tuple[str, str]:
    """(filesystem key, path for that pyarrow filesystem): "" for local paths and file: URIs,
    "hdfs://namenode:8020" style keys for HDFS, the scheme for object stores (path: bucket/key)."""
    if "://" not in uri:
        return "", uri
    scheme, rest = uri.split("://", 1)
    if scheme == "file":
        return "", rest if rest.startswith("/") else "/" + rest.partition("/")[2]
    if scheme in ("hdfs", "viewfs"):
        authority, _, path = rest.partition("/")
        return f"{scheme}://{authority}", "/" + path
    return scheme, rest


class FileSystems:
    """pyarrow filesystems by key, created on first use."""

    def __init__(self) -> None:
        self._fs: dict[str, Any] = {}

    def resolve(self, uri: str) -> tuple[Any, str]:
        import pyarrow.fs as pafs

        key, path = split_uri(uri)
        if key not in self._fs:
            self._fs[key] = pafs.LocalFileSystem() if key == "" else pafs.FileSystem.from_uri(
                key + "/" if "://" in key else uri)[0]
        return self._fs[key], path


def move_and_read(pairs: Iterable[tuple[str, str]]) -> Iterator[dict[str, Any]]:
    """For each (staged, final) location: move the file into place, then read its footer.
    Yields {"path": final, "size_bytes", "row_count", "columns"}."""
    import pyarrow.parquet as pq

    filesystems = FileSystems()
    made: set[str] = set()
    for src, dst in pairs:
        fs, dst_p = filesystems.resolve(dst)
        if src != dst:
            parent = dst_p.rsplit("/", 1)[0]
            if parent not in made:
                fs.create_dir(parent, recursive=True)
                made.add(parent)
            fs.move(filesystems.resolve(src)[1], dst_p)
        with fs.open_input_file(dst_p) as fh:
            size = fh.size()
            stats = footer_stats(pq.ParquetFile(fh).metadata)
        yield {"path": dst, "size_bytes": size, **stats}
