"""Compaction: rewrite each partition's small files into files of about `target_file_mb` and
swap them in one commit (old leaves removed, new ones added; row counts and min/max unchanged).

The swap only merges stats deltas, so a concurrent append to the same partition does not
conflict. If a concurrent commit removed some of the files being compacted (an overwrite or
another compaction), that partition is dropped from the commit and its new files are deleted;
the other partitions still go in."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from catalog_core.lake import TableValue, partition_columns, table_path
from catalog_core.model import FileObj, Obj
from spark_bridge.errors import BridgeError
from spark_bridge.plan import CommitResult, TableWrite, parent_path
from spark_bridge.reader import partition_values, read_files

if TYPE_CHECKING:
    from spark_bridge.bridge import Bridge

__all__ = ["compact", "pick_groups"]


def pick_groups(files: Sequence[Obj | FileObj], target_bytes: int) -> dict[str, list[Obj | FileObj]]:
    """Partition path -> its files smaller than the target, where there are at least two."""
    groups: dict[str, list[Obj | FileObj]] = defaultdict(list)
    for f in files:
        if int(f.value.get("size_bytes") or 0) < target_bytes:
            groups[parent_path(f.path)].append(f)
    return {p: fs for p, fs in sorted(groups.items()) if len(fs) >= 2}


def compact(bridge: "Bridge", name: str, target_file_mb: float = 128, author: str = "", message: str = "",
            where: str | None = None, time: float | None = None) -> "CommitResult":
    if not target_file_mb or target_file_mb <= 0:
        raise BridgeError(f"target_file_mb must be positive, got {target_file_mb!r}")
    cat, spark = bridge.catalog, bridge.spark
    tpath = table_path(name)
    vid = cat.latest_vid
    obj = cat.get(tpath, vid=vid)
    if obj is None or obj.value.get("obj_type") != "table":
        raise BridgeError(f"cannot compact {name}: no such table", table=name)
    table = obj.value
    target = int(target_file_mb * 1024 * 1024)
    groups = pick_groups(cat.plan_files(name, where=where, vid=vid), target)
    if not groups:
        return CommitResult(None, 0, (TableWrite(name, "compact", ""),))
    pcols = partition_columns(table)
    chosen = [f for fs in groups.values() for f in fs]
    values = partition_values(cat, tpath, pcols, vid) if pcols else {}
    df = read_files(spark, table, tpath, chosen, values)
    total_bytes = sum(int(f.value.get("size_bytes") or 0) for f in chosen)
    total_rows = sum(int(f.value.get("row_count") or 0) for f in chosen)
    rows_per_file = max(1, math.ceil(target * total_rows / max(1, total_bytes)))
    if pcols:  # each partition's rows land in one task: one file per partition (split by row cap)
        df = df.repartition(min(len(groups), 64), *pcols)
    else:
        df = df.repartition(max(1, math.ceil(total_bytes / target)))
    columns: list[dict[str, Any]] = [{"name": c.name, "type": c.type, "nullable": c.is_nullable} for c in TableValue.from_raw(table).columns]
    types = {c["name"]: c["type"] for c in columns}
    staged = bridge.stage(df, name, "compact", pcols, columns, table.get("location") or bridge.location_of(name, table),
                          types, {"maxRecordsPerFile": rows_per_file})
    staged.replaces = {p: [f.path for f in fs] for p, fs in groups.items()}
    job = spark.sparkContext.getLocalProperty("spark.job.description")
    return bridge.commit([staged], author or "semcat:compact",
                         message or f"compact {name}: {len(chosen)} small files in {len(groups)} partition(s)", job,
                         time=time)
