"""Read a table as a DataFrame over exactly the files a snapshot lists.

Files the bridge wrote sit in Hive-style directories under the table location and do not hold the
partition columns; Spark restores those from the directory names (basePath), typed by the table
schema, in one scan. Any other file (elsewhere, or with a value Spark would escape in a directory
name) gets its partition columns as literals from the catalog's partition objects.

Listing: Spark lists every path it is given when the DataFrame is created (before any action). More
paths than `spark.sql.sources.parallelPartitionDiscovery.threshold` (default 32) start a distributed
listing job of one task per path (up to `...parallelism`, default 10000). The paths here are the
snapshot's files (the catalog lists them; there is no directory to walk), and in local mode that job's
tasks run in this JVM on the same cores: their scheduling was nearly all of a read, 8-15 s for the 772
files of the Acme lake's `core.fct_orders` on 2 busy cores against under 1 s listed in the driver. So
in a local-mode session a read lists in the driver and starts no Spark job (`_driver_listing`); on a
cluster Spark's default stands (its job spreads the status calls of many files over the executors)."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import reduce
from typing import TYPE_CHECKING, Any

from catalog_core.api import CatalogAPI, SnapshotRef
from catalog_core.lake import TableValue, table_path
from catalog_core.model import FileObj, Obj
from catalog_core.sql.tables import names_at
from spark_bridge.errors import BridgeError
from spark_bridge.files import needs_escape
from spark_bridge.plan import parent_path, query_of
from spark_bridge.schema import to_struct

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["read_table", "read_files", "partition_values"]

LISTING_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"
# Held while a local-mode read raises the session's listing threshold: reads (of any session) wait for
# each other, their listing in the driver taking well under a second, so each restores the value it
# found and no two interleave their set and restore.
_LISTING = threading.Lock()


@contextmanager
def _driver_listing(spark: SparkSession, paths: int) -> Iterator[None]:
    """Within the block, Spark lists up to `paths` paths in the driver, in a local-mode session (a
    no-op on a cluster, or when the threshold already allows it). The session setting is raised for
    the block and restored after it: another thread's DataFrame created meanwhile in that session
    also lists in the driver, which changes its speed, not its rows."""
    if not (spark.sparkContext.master or "").startswith("local"):
        yield
        return
    with _LISTING:
        before = spark.conf.get(LISTING_THRESHOLD)
        if before is not None and before.isdigit() and int(before) >= paths:
            yield
            return
        spark.conf.set(LISTING_THRESHOLD, str(paths))
        try:
            yield
        finally:
            if before is None:
                spark.conf.unset(LISTING_THRESHOLD)
            else:
                spark.conf.set(LISTING_THRESHOLD, before)


def partition_values(cat: CatalogAPI, tpath: str, columns: list[str], vid: int) -> dict[str, dict[str, Any]]:
    """Deepest partition path -> {column: value}, one query per partition level."""
    values: dict[str, dict[str, Any]] = {tpath: {}}
    for level, col in enumerate(columns, start=1):
        expr = query_of(tpath) + '/[obj_type = "partition"]' * level
        nxt = {}
        for obj in cat.query(expr, vid=vid):
            parent = values.get(parent_path(obj.path))
            if parent is not None:
                nxt[obj.path] = {**parent, col: obj.value.get(col)}
        values = nxt
    return values


def _hive_ready(file_path: str, location: str, ppath: str, tpath: str, vals: dict[str, Any]) -> bool:
    """Is the file at <location>/<col=value>/.../<name>, with directory names Spark parses back
    to exactly the catalog's partition values?"""
    rel_dir = ppath[len(tpath) + 1:]
    if any(v is None or isinstance(v, bool) or needs_escape(str(v)) for v in vals.values()):
        return False
    head = location.rstrip("/") + "/" + rel_dir + "/"
    return file_path.startswith(head) and "/" not in file_path[len(head):]


def read_files(spark: SparkSession, table: dict[str, Any] | TableValue, tpath: str, files: Sequence[Obj | FileObj],
               values: dict[str, dict[str, Any]]) -> DataFrame:
    """A DataFrame over `files` (file leaves of the table at `tpath`), columns in schema order.
    `table` is the table object's value, raw or parsed. Lazy: in a local-mode session it starts
    no Spark job, however many files (see the module's docstring)."""
    if not isinstance(table, TableValue):
        table = TableValue.from_raw(table)
    with _driver_listing(spark, len(files)):
        return _read_files(spark, table, tpath, files, values)


def _read_files(spark: SparkSession, table: TableValue, tpath: str, files: Sequence[Obj | FileObj],
                values: dict[str, dict[str, Any]]) -> DataFrame:
    schema = to_struct(table.schema)
    names = [f.name for f in schema.fields]
    if not files:
        return spark.createDataFrame([], schema)
    pcols = table.partition_columns
    renamed, files = _renamed(table, files)
    if renamed:  # files written before a rename or drop: read each under its own names
        frames = [_read_renamed(spark, table, tpath, group, values, names) for names, group in renamed]
        if files:
            frames.insert(0, _read_files(spark, table, tpath, files, values))
        return reduce(lambda a, b: a.unionByName(b), frames)
    paths = [f.value["path"] for f in files]
    if not pcols:
        return spark.read.schema(schema).parquet(*paths)
    from pyspark.sql import functions as F

    location = table.location or ""
    hive, other = [], defaultdict(list)
    for f in files:
        ppath = parent_path(f.path)
        vals = values.get(ppath)
        if vals is None:
            raise BridgeError(f"file {f.path} has no partition object above it; the table is inconsistent")
        if location and _hive_ready(f.value["path"], location, ppath, tpath, vals):
            hive.append(f.value["path"])
        else:
            other[ppath].append(f.value["path"])
    frames = []
    if hive:
        frames.append(spark.read.schema(schema).option("basePath", location).parquet(*hive).select(*names))
    data_schema = to_struct(table.schema, exclude=tuple(pcols))
    types = {f.name: f.dataType for f in schema.fields}
    for ppath, group in sorted(other.items()):
        df = spark.read.schema(data_schema).parquet(*group)
        for col in pcols:
            df = df.withColumn(col, F.lit(values[ppath].get(col)).cast(types[col]))
        frames.append(df.select(*names))
    return reduce(lambda a, b: a.unionByName(b), frames)


def read_table(spark: SparkSession, cat: CatalogAPI, name: str, snapshot: SnapshotRef = None,
               where: str | None = None, since: int | None = None) -> DataFrame:
    """`name`'s rows at `snapshot` (files pruned by `where`). `since` (a vid before `snapshot`): only
    the rows of the files added after it (an incremental read of appends, as Iceberg's
    incremental append scan); raises BridgeError when a file of `since` is gone at `snapshot` (an
    overwrite, a delete or a compaction in between: the rows read before are no longer the table's)."""
    tpath = table_path(name)
    vid = cat.resolve(snapshot)
    obj = cat.get(tpath, vid=vid)
    if obj is None or obj.value.get("obj_type") != "table":
        raise BridgeError(f"table {name!r} does not exist at vid {vid}; write it first or pick another "
                          "snapshot", table=name, vid=vid)
    files: Sequence[Obj | FileObj] = cat.plan_files(name, where=where, vid=vid)
    if since is not None:
        files = _added(cat, name, tpath, files, since, vid, where)
    table = TableValue.from_raw(obj.value)
    values = partition_values(cat, tpath, table.partition_columns, vid) if table.partition_by else {}
    return read_files(spark, table, tpath, files, values)


def _added(cat: CatalogAPI, name: str, tpath: str, files: Sequence[Obj | FileObj], since: int, vid: int,
           where: str | None) -> list[Obj | FileObj]:
    """The files of `files` (the table's at `vid`) that `since` did not list; raises unless every file
    `since` listed is still listed."""
    if since > vid:
        raise BridgeError(f"since={since} is after the snapshot read (vid {vid}); pass an earlier vid",
                          table=name, vid=vid)
    before = cat.get(tpath, vid=since)
    old = ({f.path for f in cat.plan_files(name, where=where, vid=since)}
           if before is not None and before.value.get("obj_type") == "table" else set())
    now = {f.path for f in files}
    gone = old - now
    if gone:
        raise BridgeError(f"{len(gone)} file(s) of {name!r} at vid {since} are gone at vid {vid} (an overwrite, "
                          f"delete or compaction in between, e.g. {min(gone)}): an incremental read holds only "
                          "appends; read the table whole (no since=)", table=name, vid=vid)
    return [f for f in files if f.path not in old]


def _renamed(table: TableValue, files: Sequence[Obj | FileObj]) -> tuple[list[tuple[dict[str, str | None], list[Obj | FileObj]]], list[Obj | FileObj]]:
    """Files whose column names differ from the table's (written before a rename or a drop),
    grouped by their names, and the other files."""
    schema = table.schema
    groups: dict[tuple[tuple[str, str | None], ...], tuple[dict[str, str | None], list[Obj | FileObj]]] = {}
    rest = []
    for f in files:
        sid = f.value.get("schema_id")
        names = names_at(schema, sid) if isinstance(sid, int) and not isinstance(sid, bool) else None
        if names is None or all(k == v for k, v in names.items()):
            rest.append(f)
            continue
        groups.setdefault(tuple(sorted(names.items(), key=lambda kv: kv[0])), (names, []))[1].append(f)
    return list(groups.values()), rest


def _read_renamed(spark: SparkSession, table: TableValue, tpath: str, files: list[Obj | FileObj],
                  values: dict[str, dict[str, Any]], names: dict[str, str | None]) -> DataFrame:
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    pcols = table.partition_columns
    schema = to_struct(table.schema)
    fields = [f for f in schema.fields if f.name not in pcols and names.get(f.name) is not None]
    file_schema = StructType([f.__class__(names[f.name], f.dataType, True) for f in fields])
    by_part: dict[str, list[str]] = defaultdict(list)
    for f in files:
        by_part[parent_path(f.path) if pcols else tpath].append(f.value["path"])
    frames = []
    for ppath, paths in sorted(by_part.items()):
        df = spark.read.schema(file_schema).parquet(*paths)
        cols = []
        for fld in schema.fields:
            if fld.name in pcols:
                cols.append(F.lit(values[ppath].get(fld.name)).cast(fld.dataType).alias(fld.name))
            elif names.get(fld.name) is None:
                cols.append(F.lit(None).cast(fld.dataType).alias(fld.name))
            else:
                cols.append(F.col("`" + str(names[fld.name]).replace("`", "``") + "`").alias(fld.name))
        frames.append(df.select(*cols))
    return reduce(lambda a, b: a.unionByName(b), frames)
