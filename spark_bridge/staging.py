"""The steps of staging a write, before anything reaches the catalog: resolve partition
columns, cast the DataFrame to the table's types, write it to a private directory, plan where
each file moves, and turn footer statistics into file leaves."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from spark_bridge import files as fl
from spark_bridge.errors import SchemaEvolutionError
from spark_bridge.plan import StagedFile
from spark_bridge.schema import PARTITION_TYPES, Evolution, df_columns, normalize_type, partition_value

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["partition_columns", "apply_evolution", "spark_write", "plan_moves", "staged_files"]


def partition_columns(wanted: list[str], cols: list[dict[str, Any]], evo: Evolution) -> list[str]:
    """The table's names of the partition columns, checked against the DataFrame."""
    by_lower = {c["name"].lower(): c for c in cols}
    out = []
    for p in wanted:
        c = by_lower.get(str(p).lower())
        if c is None:
            raise SchemaEvolutionError(f"partition column {p!r} is not a column of the DataFrame "
                                       f"({', '.join(by_lower) or 'no columns'})")
        if str(p).startswith("_"):
            raise SchemaEvolutionError(f"partition column {p!r} starts with '_', which catalog ids reserve")
        target = evo.casts.get(c["name"], c["type"])
        if normalize_type(target) not in PARTITION_TYPES:
            raise SchemaEvolutionError(f"cannot partition by {p!r} of type {target}; use one of "
                                       f"{', '.join(PARTITION_TYPES)}")
        out.append(evo.renames.get(c["name"], c["name"]))
    if out and len(out) == len(cols):
        raise SchemaEvolutionError("every column is a partition column; the files would have no data columns")
    return out


def apply_evolution(df: DataFrame, cols: list[dict[str, Any]], evo: Evolution) -> tuple[DataFrame, list[dict[str, Any]]]:
    """Cast narrower columns up to the table's types and use the table's spelling of names."""
    if not (evo.casts or evo.renames):
        return df, cols
    from pyspark.sql import functions as F

    exprs = []
    for c in cols:
        col = F.col("`" + c["name"].replace("`", "``") + "`")
        if c["name"] in evo.casts:
            col = col.cast(evo.casts[c["name"]])
        exprs.append(col.alias(evo.renames.get(c["name"], c["name"])))
    df = df.select(*exprs)
    return df, df_columns(df.schema)


def spark_write(df: DataFrame, path: str, pcols: list[str], options: dict[str, Any] | None) -> None:
    writer = df.write.mode("errorifexists")
    if pcols:
        writer = writer.partitionBy(*pcols)
    writer.options(**(options or {})).parquet(path)


def plan_moves(staging: str, location: str, write_id: str,
               pcols: list[str]) -> tuple[list[tuple[str, str]], list[list[str | None]]]:
    """(staged, final) location of every file Spark wrote, and its raw partition values.
    Final names carry the write id, so concurrent writers never collide."""
    pairs, parts = [], []
    for i, (rel, _size) in enumerate(fl.list_parquet(staging)):
        rel_dir = rel.rsplit("/", 1)[0] if "/" in rel else ""
        pairs.append((fl.join(staging, rel), fl.join(location, rel_dir, f"{write_id}-{i:05d}.parquet")))
        parts.append(fl.parse_partition_dirs(rel_dir, pcols) if pcols else [])
    return pairs, parts


def staged_files(infos: list[dict[str, Any]], parts: list[list[str | None]], pcols: list[str],
                 types: dict[str, str], tz: str) -> list[StagedFile]:
    """File leaves from footer statistics; drops (and deletes) files without rows."""
    out = []
    for info, raw in zip(infos, parts):
        if info["row_count"] == 0:  # Spark writes one empty file for an empty DataFrame
            fl.delete_files([info["path"]])
            continue
        part = tuple((c, partition_value(v, types[c], tz)) for c, v in zip(pcols, raw))
        value = {"obj_type": "file", "path": info["path"], "format": "parquet", "row_count": info["row_count"],
                 "size_bytes": info["size_bytes"], "columns": info["columns"]}
        out.append(StagedFile(info["path"], info["path"].rsplit("/", 1)[1], part, value))
    return out
