"""Driver-side file housekeeping: staging locations, listing Spark's output, Hive-style
partition directory names, and best-effort deletion (used to leave no orphan files)."""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timezone

from catalog_core.footers import FileSystems

__all__ = ["new_write_id", "join", "staging_dir", "list_parquet", "delete_files", "delete_dir",
           "unescape", "needs_escape", "parse_partition_dirs", "HIVE_NULL"]

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
# Characters Spark escapes in partition directory names (ExternalCatalogUtils.charToEscape).
_ESCAPED = set('"#%\'*/:=?\\\x7f{[]^') | {chr(c) for c in range(1, 32)}
_HEX = re.compile(r"%([0-9A-Fa-f]{2})")


def new_write_id() -> str:
    """Sortable and unique: UTC time of the write plus 48 random bits."""
    return f"{datetime.now(timezone.utc):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:12]}"


def join(base: str, *parts: str) -> str:
    return "/".join([base.rstrip("/"), *[p.strip("/") for p in parts if p]])


def staging_dir(location: str, write_id: str) -> str:
    # `_`-prefixed directories are hidden from Spark, Hive and DuckDB directory listings.
    return join(location, "_staging", write_id)


def _hidden(rel: str) -> bool:
    return any(seg.startswith(("_", ".")) for seg in rel.split("/"))


def list_parquet(uri: str) -> list[tuple[str, int]]:
    """(path relative to `uri`, size) of the visible .parquet files below `uri`, sorted."""
    import pyarrow.fs as pafs

    fs, root = FileSystems().resolve(uri)
    infos = fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True))
    out = []
    for info in infos:
        if info.type != pafs.FileType.File:
            continue
        rel = info.path[len(root.rstrip("/")) + 1:]
        if rel.endswith(".parquet") and not _hidden(rel):
            out.append((rel, info.size))
    return sorted(out)


def delete_files(uris: list[str]) -> int:
    """Delete files that exist; returns how many were deleted. Never raises for a missing file."""
    fss = FileSystems()
    n = 0
    for uri in uris:
        fs, path = fss.resolve(uri)
        try:
            fs.delete_file(path)
            n += 1
        except (FileNotFoundError, OSError):
            pass
    return n


def delete_dir(uri: str) -> None:
    fs, path = FileSystems().resolve(uri)
    try:
        fs.delete_dir(path)
    except (FileNotFoundError, OSError):
        pass


def unescape(text: str) -> str:
    return _HEX.sub(lambda m: chr(int(m.group(1), 16)), text)


def needs_escape(text: str) -> bool:
    return any(ch in _ESCAPED for ch in text)


def parse_partition_dirs(rel_dir: str, columns: list[str]) -> list[str | None]:
    """Raw partition values from Spark's `col=value/...` directories (None: Hive's null)."""
    segs = [s for s in rel_dir.split("/") if s]
    if len(segs) != len(columns):
        raise ValueError(f"expected {len(columns)} partition directories in {rel_dir!r}")
    out: list[str | None] = []
    for seg, col in zip(segs, columns):
        name, eq, raw = seg.partition("=")
        if not eq or unescape(name).lower() != col.lower():
            raise ValueError(f"directory {seg!r} is not the partition column {col!r}")
        out.append(None if raw == HIVE_NULL else unescape(raw))
    return out

