"""`Bridge`: PySpark writes Parquet under a table's location, reads every file's footer on the
executors, and commits files + statistics to the catalog in one transaction.

    bridge = Bridge(spark, "data")                       # a Catalog, a data directory or a URL
    bridge.write(df, "wh.sales.orders", partition_by=["d"], author="etl", message="load 06-01")
    with bridge.transaction(author="etl", message="orders + items") as tx:
        tx.write(orders, "wh.sales.orders"); tx.write(items, "wh.sales.items")
    bridge.read("wh.sales.orders", snapshot=12)          # exactly the files of vid 12

Write-audit-publish: `branch=` (on the Bridge, or per write / transaction / read / compact) sends
a table's writes to the same table on a branch made by `cat.clone(source, branch)`:

    cat.clone("/wh/sales", "/wh/sales__wap")
    bridge.write(df, "wh.sales.orders", branch="/wh/sales__wap")   # lands in wh.sales__wap.orders
    ...checks on the branch...; cat.publish("/wh/sales__wap", onto="/wh/sales")

A commit that loses a race is re-planned against the new catalog state and retried (the data is
not rewritten); if it fails for good, every file the write produced is deleted before the error
is raised, so a failed write leaves neither files nor catalog changes behind.
"""

from __future__ import annotations

import dataclasses
import os
import random
import threading
import time as _time
from collections.abc import Callable, Iterable, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator, Union

import catalog_core as cc
from catalog_core import footers, lake
from catalog_core.api import CatalogAPI, SnapshotRef, TransactionAPI
from catalog_core.errors import (
    AlreadyExistsError,
    AuthError,
    ConflictError,
    InvalidPathError,
    InvalidValueError,
    NotFoundError,
    PermissionDeniedError,
    PreconditionError,
)
from catalog_core.lake import table_path
from catalog_core.model import TimeArg, parse_time
from catalog_core.writeset import CommitOnExit
from spark_bridge import files as fl
from spark_bridge.errors import BridgeError, CommitFailedError, CommitUnknownError, SchemaEvolutionError
from spark_bridge.plan import CommitResult, Planner, StagedWrite, TableWrite, parent_path
from spark_bridge.reader import read_table
from spark_bridge.schema import SCHEMA_MODES, df_columns, evolve
from spark_bridge.schema import alter as alter_schema
from spark_bridge.schema import replace as replace_schema
from spark_bridge.staging import apply_evolution, partition_columns, plan_moves, spark_write, staged_files

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["Bridge", "BridgeTransaction", "CommitResult", "Inputs"]

# A job's declared inputs: dotted table names (read "now": at the vid the commit is planned against,
# or as the commit leaves them when it writes them too), or {name: the vid it was read at}.
Inputs = Union[Iterable[str], Mapping[str, Union[int, None]]]


def _inputs(value: Inputs | None, catalog: CatalogAPI | None = None) -> dict[str, int | None]:
    """Declared inputs as {dotted table: vid or None}; names are checked (InvalidPathError)."""
    if value is None:
        return {}
    if isinstance(value, str):
        raise InvalidValueError(f"inputs must be a list of table names or a {{table: vid}} mapping, got the "
                                f"string {value!r}; pass [{value!r}]")
    items = value.items() if isinstance(value, Mapping) else ((n, None) for n in value)
    out: dict[str, int | None] = {}
    for name, vid in items:
        table_path(str(name))
        out[str(name)] = None if vid is None else (catalog.resolve(vid) if catalog is not None else int(vid))
    return out

MODES = ("append", "overwrite")
_RETRYABLE = (ConflictError, AlreadyExistsError, NotFoundError)
# Errors after which the engine guarantees nothing was written. Anything else from commit (a
# broken connection, an interrupt) leaves the outcome open: then the commit log decides.
_REJECTED = (ConflictError, PreconditionError, InvalidValueError, InvalidPathError, AuthError,
             PermissionDeniedError)


def _ship_footers_by_value() -> None:
    # Executors then need pyarrow but not semcat itself (spark-submit without --py-files).
    try:
        from pyspark import cloudpickle

        cloudpickle.register_pickle_by_value(footers)
    except Exception:  # noqa: BLE001 - older cloudpickle: executors import the module instead
        pass


_ship_footers_by_value()


def _check_time(value: object) -> float | None:
    """`time=` of a backdated commit as seconds since the epoch (None: now)."""
    if value is None:
        return None
    t = parse_time(value)
    if t is None:
        raise InvalidValueError(f"time must be seconds since the epoch, a datetime or an ISO-8601 time, got {value!r}")
    return t


@contextmanager
def _job_description(sc: SparkContext, text: str) -> Iterator[None]:
    prev = sc.getLocalProperty("spark.job.description")
    sc.setJobDescription(prev or text)
    try:
        yield
    finally:
        sc.setLocalProperty("spark.job.description", prev)  # type: ignore[arg-type]  # None unsets it (pyspark's stub says str)


class Bridge:
    """Spark <-> catalog bridge. `catalog`: a Catalog (or remote client), a data directory, or an
    http(s) URL (with `token`). `warehouse` overrides the root of default table locations."""

    def __init__(self, spark: SparkSession, catalog: CatalogAPI | str | os.PathLike[str], *, token: str | None = None,
                 warehouse: str | None = None, max_attempts: int = 8, branch: str | None = None,
                 footers_on: str = "executors") -> None:
        self.spark = spark
        if footers_on not in ("executors", "driver"):
            raise InvalidValueError(f"footers_on must be 'executors' or 'driver', got {footers_on!r}")
        # where written files are moved into place and their Parquet footers read: on the executors
        # (one small Spark job per write; right on a cluster), or in this process (no job; only
        # when the driver sees the table locations, e.g. local mode, as many small writes do)
        self.footers_on = footers_on
        self.branch = branch  # default branch of writes, reads and compactions (None: the tables themselves)
        self.catalog: CatalogAPI
        self._owns = isinstance(catalog, (str, os.PathLike))
        if isinstance(catalog, (str, os.PathLike)):  # a URL, or a directory (its catalog made if missing)
            url = isinstance(catalog, str) and catalog.startswith(("http://", "https://"))
            self.catalog = cc.open(catalog, token=token or os.environ.get("SEMCAT_TOKEN"), create=not url)
        elif isinstance(catalog, CatalogAPI):
            self.catalog = catalog
        else:
            raise InvalidValueError(f"catalog must be a Catalog, a data directory or an http(s) URL, "
                                    f"got {type(catalog).__name__}")
        self.warehouse = warehouse or getattr(self.catalog, "warehouse", None)
        if max_attempts < 1:
            raise InvalidValueError("max_attempts must be at least 1")
        self.max_attempts = max_attempts
        # Called as before_commit(attempt, txn) after planning and right before each commit try;
        # a hook for tests and operations (e.g. to inject a failure or a concurrent writer).
        self.before_commit: Callable[[int, TransactionAPI], None] | None = None
        # tables this thread read through `read` since its last commit: {name: vid} (lineage)
        self._reads = threading.local()

    def close(self) -> None:
        if self._owns:
            self.catalog.close()

    def __enter__(self) -> "Bridge":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- public API
    def write(self, df: DataFrame, name: str, partition_by: list[str] | str | None = None, mode: str = "append",
              author: str = "", message: str = "", options: dict[str, Any] | None = None,
              branch: str | None = None, schema: str = "evolve", time: TimeArg = None,
              inputs: Inputs | None = None) -> CommitResult:
        """Write `df` to table `name` (catalog.namespace.table) and commit files + stats atomically.
        mode="overwrite" replaces the whole table, or, when partitioned, only the partitions
        present in `df` (dynamic partition overwrite). schema="evolve" (default) adds new columns
        and widens types; schema="replace" (with mode="overwrite") replaces every file and
        partition and makes the DataFrame's columns the table's schema: columns it lacks are
        dropped, new ones get new ids, `schema_id` increments. `branch`: write the same table on
        that branch instead (default: the Bridge's branch). `time` backdates the commit (seconds
        or ISO-8601; not earlier than the latest commit), for simulated histories and imports.
        `inputs` declares what the job read besides the tables it read through `read` (lineage:
        see `transaction`)."""
        with self.transaction(author=author, message=message, branch=branch, time=time, inputs=inputs) as tx:
            tx.write(df, name, partition_by=partition_by, mode=mode, options=options, schema=schema)
        assert tx.result is not None  # committed on exit
        return tx.result

    def transaction(self, author: str = "", message: str = "", branch: str | None = None,
                    time: TimeArg = None, inputs: Inputs | None = None) -> "BridgeTransaction":
        """Several writes, one catalog commit: `with bridge.transaction() as tx: tx.write(...)`.

        Lineage: every table the commit writes records, in the same commit (its value's `lineage`,
        catalog_core.lake.Lineage), the tables and vids its job read: those this thread read
        through `read` since its last commit, plus `inputs` (names, or {name: vid}; a name without
        a vid counts as read at the vid the commit is planned against, or as this commit leaves it
        when the commit writes it too). A write with no known inputs leaves the table's lineage as
        it was; a table is never its own input; compaction keeps the lineage."""
        return BridgeTransaction(self, author, message, branch=branch, time=time, inputs=inputs)

    def reads(self) -> dict[str, int]:
        """The tables this thread read through `read` since its last commit: {name: vid}."""
        return dict(getattr(self._reads, "log", {}))

    def clear_reads(self) -> None:
        """Forget this thread's reads (a new job starts; they are forgotten after each commit too)."""
        self._reads.log = {}

    def alter(self, name: str, rename: dict[str, str] | None = None, drop: list[str] | None = None,
              author: str = "", message: str = "", time: TimeArg = None, branch: str | None = None) -> int:
        """Rename and drop columns of a table in one commit, without rewriting data; returns the
        vid. Columns keep their ids (a renamed column is the same column), `schema_id`
        increments, and readers at older snapshots keep the old schema. Files written before the
        change keep their column names: readers (DuckDB views, `read`) map them through the
        schema's `previous_names` / `dropped` by the schema id each file records."""
        name = self.on_branch(name, branch)
        tpath = table_path(name)
        t = _check_time(time)
        with self.catalog.transaction(author=author, message=message or f"alter {name}",
                                      meta={"alter": {"table": name, "rename": dict(rename or {}),
                                                      "drop": list(drop or [])}}, time=t) as txn:
            obj = txn.get(tpath)
            if obj is None or obj.value.get("obj_type") != "table":
                raise NotFoundError(f"table {name!r} does not exist; write it first", table=name)
            tv = lake.TableValue.from_raw(obj.value)
            schema = alter_schema(tv.schema, name, rename=rename, drop=drop, partition_by=tv.partition_columns)
            ren = {k.lower(): v for k, v in (rename or {}).items()}
            gone = {d.lower() for d in drop or []}

            def moved(value: Mapping[str, Any]) -> dict[str, Any]:
                cols: dict[str, Any] = dict(((value.get("stats") or {}).get("columns")) or {})
                return {str(ren.get(k.lower(), k)): v for k, v in cols.items() if k.lower() not in gone}

            txn.merge(tpath, {"schema": {"op": "set", "val": schema},
                              "stats": {"columns": {"op": "set", "val": moved(obj.value)}}})
            # every partition's stats too: the table's are their sum, and a later write that subtracts a
            # file's stats from a partition (a compaction) does so under the current names
            level = [tpath]
            for _ in tv.partition_columns:
                nxt = []
                for par in level:
                    for p in txn.query(lake.exact_query(par, '[obj_type = "partition"]')):
                        if (p.value.get("stats") or {}).get("columns") and (ren or gone):
                            txn.merge(p.path, {"stats": {"columns": {"op": "set", "val": moved(p.value)}}})
                        nxt.append(p.path)
                level = nxt
        assert txn.vid is not None
        return txn.vid

    def read(self, name: str, snapshot: SnapshotRef = None, where: str | None = None,
             branch: str | None = None, since: int | None = None) -> DataFrame:
        """A DataFrame over exactly the files of `name` at `snapshot` (vid, snapshot name, ISO
        time; default latest), optionally pruned by a catalog filter such as 'd >= "2001-06-01"'.
        `since` (an earlier vid): only the files added after it, for a job that keeps what it read
        at `since` (rows read then + this = the table at `snapshot`); a BridgeError when a file
        listed at `since` is gone (an overwrite or compaction in between: read it whole). Either
        way the read counts as reading `name` at `snapshot` in this thread's lineage (`reads`)."""
        name = self.on_branch(name, branch)
        vid = self.catalog.resolve(snapshot)
        df = read_table(self.spark, self.catalog, name, snapshot=vid, where=where, since=since)
        log = getattr(self._reads, "log", None)
        if log is None:
            log = self._reads.log = {}
        log[name] = max(vid, log.get(name, vid))  # the newest state of it the job saw
        return df

    def compact(self, name: str, target_file_mb: float = 128, author: str = "", message: str = "",
                where: str | None = None, branch: str | None = None, time: TimeArg = None) -> CommitResult:
        """Rewrite small files into files of about `target_file_mb` in one commit (`spark_bridge.compaction`);
        `time` backdates the commit, as `write`'s does (a simulated history)."""
        from spark_bridge.compaction import compact

        return compact(self, self.on_branch(name, branch), target_file_mb=target_file_mb, author=author,
                       message=message, where=where, time=_check_time(time))

    def on_branch(self, name: str, branch: str | None = None) -> str:
        """The dotted name of table `name` on `branch` (default: the Bridge's branch; None: `name`).
        A name already on the branch is kept."""
        branch = branch if branch is not None else self.branch
        if branch is None:
            return name
        if not isinstance(branch, str) or not branch:
            raise InvalidValueError(f"branch must be a branch path such as '/wh/sales__wap', got {branch!r}")
        if not branch.startswith("/"):
            branch = "/" + branch.replace(".", "/")
        tpath = table_path(name)
        info = next((b for b in self.catalog.branches() if b.path == branch), None)
        if info is None:
            raise NotFoundError(f"{branch!r} is not a branch; make one with cat.clone(source, {branch!r}) "
                                "(semcat branch create) first", branch=branch)
        if tpath == branch or tpath.startswith(branch + "/"):
            return name
        if not (tpath == info.source or tpath.startswith(info.source + "/")):
            raise InvalidValueError(f"table {name} is not under {info.source}, the source of branch {branch}; "
                                    "write it without branch= or use a branch of its namespace", table=name,
                                    branch=branch)
        mapped = branch + tpath[len(info.source):]
        parts = mapped.strip("/").split("/")
        if len(parts) != 3:
            raise InvalidValueError(f"on branch {branch}, table {name} would be {mapped}, which is not a "
                                    "catalog/namespace/table path; branch a namespace or a table", table=name,
                                    branch=branch)
        return ".".join(parts)

    # ---------------------------------------------------------------- staging
    def location_of(self, name: str, table: dict | None) -> str:
        if table and table.get("location"):
            return table["location"]
        tpath = table_path(name)
        cat_obj = self.catalog.get(parent_path(parent_path(tpath)))
        root = ((cat_obj.value.get("properties") or {}).get("warehouse") if cat_obj else None) or self.warehouse
        if not root:
            raise BridgeError(f"no location for {name}: set properties.warehouse on the catalog object "
                              f"{parent_path(parent_path(tpath))} or pass warehouse= to Bridge")
        return fl.join(root, *tpath.strip("/").split("/"))

    def prepare(self, df: DataFrame, name: str, partition_by: list[str] | str | None, mode: str,
                table: dict | None, schema: str = "evolve") -> tuple[DataFrame, list[str], list[dict], str]:
        """Validate a write against the table (as of now) and return (df cast to the table's
        types, partition columns, written columns, location). Raises before any data is written."""
        if mode not in MODES:
            raise InvalidValueError(f"mode {mode!r} is not one of {', '.join(MODES)}")
        if schema not in SCHEMA_MODES:
            raise InvalidValueError(f"schema {schema!r} is not one of {', '.join(SCHEMA_MODES)}")
        if schema == "replace" and mode != "overwrite":
            raise InvalidValueError("schema='replace' rewrites the whole table; use it with mode='overwrite'")
        table_path(name)  # validates the name
        wanted = [partition_by] if isinstance(partition_by, str) else partition_by
        tv = lake.TableValue.from_raw(table)
        have = tv.partition_columns
        if table is not None and wanted is not None and [c.lower() for c in wanted] != [c.lower() for c in have]:
            raise SchemaEvolutionError(f"{name} is partitioned by {have}; partition_by={list(wanted)} cannot "
                                       "change that; drop partition_by or use the table's columns")
        cols = df_columns(df.schema)
        evo = (replace_schema if schema == "replace" else evolve)(tv.schema, cols, name)
        pcols = partition_columns(list(wanted) if wanted is not None else have, cols, evo)
        df, cols = apply_evolution(df, cols, evo)
        return df, pcols, cols, self.location_of(name, table)

    def stage(self, df: DataFrame, name: str, mode: str, pcols: list[str], columns: list[dict], location: str,
              types: dict[str, str], options: dict[str, Any] | None = None, schema: str = "evolve") -> StagedWrite:
        """Write `df` as Parquet under `location`, move the files into place and read their
        footers on the executors. On failure, deletes whatever it wrote and re-raises."""
        write_id = fl.new_write_id()
        staging = fl.staging_dir(location, write_id)
        pairs: list[tuple[str, str]] = []
        try:
            with _job_description(self.spark.sparkContext, f"semcat: write {name} ({write_id})"):
                spark_write(df, staging, pcols, options)
            pairs, parts = plan_moves(staging, location, write_id, pcols)
            infos = self._read_footers(pairs, name) if pairs else []
            tz = self.spark.conf.get("spark.sql.session.timeZone", "UTC") or "UTC"
            files = staged_files(infos, parts, pcols, types, tz)
            return StagedWrite(name, mode, pcols, columns, location, write_id, staging, files, schema_mode=schema)
        except BaseException:
            fl.delete_files([dst for _src, dst in pairs])
            fl.delete_dir(staging)
            raise

    def _read_footers(self, pairs: list[tuple[str, str]], name: str) -> list[dict[str, Any]]:
        if self.footers_on == "driver":
            return list(footers.move_and_read(pairs))
        sc = self.spark.sparkContext
        slices = max(1, min(len(pairs), sc.defaultParallelism * 2))
        try:
            with _job_description(sc, f"semcat: read {len(pairs)} Parquet footers of {name}"):
                return sc.parallelize(pairs, slices).mapPartitions(footers.move_and_read).collect()
        except Exception as exc:
            raise BridgeError(f"moving files into place and reading their Parquet footers on the executors "
                              f"failed: {str(exc).strip().splitlines()[-1][:500]}. The executors need pyarrow "
                              "(set spark.pyspark.python to a Python that has it) and access to the table "
                              "location", table=name) from exc

    # ---------------------------------------------------------------- commit
    def _meta(self, writes: list[StagedWrite], message: str, job: str | None) -> dict[str, Any]:
        sc = self.spark.sparkContext
        return {"spark_app_id": sc.applicationId, "spark_job": job or message,
                "writes": [{"table": w.table, "mode": w.mode, "write_id": w.write_id, "files": len(w.files),
                            "rows": sum(f.value["row_count"] for f in w.files)} for w in writes]}

    def commit(self, writes: list[StagedWrite], author: str, message: str, job: str | None = None,
               time: TimeArg = None, inputs: Inputs | None = None) -> CommitResult:
        """Plan and commit `writes` in one transaction, re-planning on races; deletes their files
        if the commit fails for good. Never reruns Spark. `time` backdates the commit. Lineage: each
        write records its own `inputs` (StagedWrite.inputs), else this thread's reads through `read`
        plus `inputs` (see `transaction`); the writes themselves are not modified."""
        common = {**self.reads(), **_inputs(inputs, self.catalog)}
        meta = self._meta(writes, message, job)
        if common or any(w.inputs for w in writes):
            meta["inputs"] = sorted({n for w in writes for n in (w.inputs or common)})
        writes_in = writes
        writes = [w if w.inputs is not None or not common or w.mode == "compact"
                  else dataclasses.replace(w, inputs=dict(common), job=w.job or job or message or None)
                  for w in writes]
        t = _check_time(time)
        last: Exception | None = None
        attempt = 0
        try:
            for attempt in range(1, self.max_attempts + 1):
                result, last = self._attempt(writes, author, message, meta, attempt, t)
                if result is not None:
                    self._finish(writes_in, list(result.tables))
                    self.clear_reads()
                    return result
                if (isinstance(last, ConflictError) and not last.retryable) or attempt == self.max_attempts:
                    break
                _time.sleep(min(1.0, 0.01 * 2 ** attempt) * (0.5 + random.random()))
        except CommitUnknownError:
            raise
        except BaseException:
            self.discard(writes)
            raise
        self.discard(writes)
        why = getattr(last, "message", str(last)) if last is not None else "unknown"
        raise CommitFailedError(f"commit to {', '.join(sorted({w.table for w in writes}))} failed after {attempt} "
                                f"attempt(s): {why}. The {sum(len(w.files) for w in writes)} file(s) written were "
                                "deleted; rerun the job", attempts=attempt,
                                cause=type(last).__name__ if last else None) from last

    def _attempt(self, writes: list[StagedWrite], author: str, message: str, meta: dict,
                 attempt: int, at: float | None = None) -> tuple[CommitResult | None, Exception | None]:
        """One plan + commit. Returns (result, None), or (None, error) for a race worth retrying;
        raises for anything else."""
        txn = self.catalog.transaction(author=author, message=message, meta=meta, time=at)
        try:
            planner = Planner(self.catalog, txn, {"vid": txn.read_vid + 1, "time": _time.time() if at is None else at})
            planner.written = {w.table for w in writes}
            for w in writes:
                planner.apply(w)
            if self.before_commit is not None:
                self.before_commit(attempt, txn)
        except BaseException:
            txn.abort()
            raise
        try:
            vid = txn.commit()
        except _RETRYABLE as exc:
            return None, exc
        except _REJECTED:
            raise
        except BaseException as exc:
            landed = self._landed(writes, txn.read_vid)
            if landed is None:
                ids = [w.write_id for w in writes]
                raise CommitUnknownError(f"the commit's outcome is unknown ({type(exc).__name__}: {exc}); the "
                                         f"written files were kept (write ids {ids}); check the commit log "
                                         "before rerunning the job", write_ids=ids) from exc
            vid = landed
        return CommitResult(vid, attempt, tuple(planner.summaries)), None

    def _landed(self, writes: list[StagedWrite], read_vid: int) -> int | None:
        """The vid of the commit holding these writes, if the commit log has it."""
        ids = {w.write_id for w in writes}
        try:
            for c in self.catalog.commits(since=read_vid + 1):
                if ids & {w.get("write_id") for w in (c.meta or {}).get("writes", [])}:
                    return c.vid
        except Exception:  # noqa: BLE001 - cannot tell: the caller keeps the files
            return None
        return None

    def _finish(self, writes: list[StagedWrite], summaries: list[TableWrite]) -> None:
        for s in summaries:
            if s.dropped_files:
                fl.delete_files(s.dropped_files)
        for w in writes:
            fl.delete_dir(w.staging)

    def discard(self, writes: list[StagedWrite]) -> None:
        """Delete every file the writes produced (they were never committed)."""
        for w in writes:
            fl.delete_files(w.paths)
            fl.delete_dir(w.staging)


class BridgeTransaction(CommitOnExit):
    """Writes staged now, committed together on exit (one catalog commit); `result` afterwards."""

    def __init__(self, bridge: Bridge, author: str = "", message: str = "", branch: str | None = None,
                 time: TimeArg = None, inputs: Inputs | None = None) -> None:
        self.bridge, self.author, self.message = bridge, author, message
        self.inputs = _inputs(inputs, bridge.catalog)
        self.time = _check_time(time)
        self.branch = branch
        self.writes: list[StagedWrite] = []
        self.result: CommitResult | None = None
        self.state = "active"
        self._tables: dict[str, dict] = {}  # table -> its value as this transaction will leave it
        self._job: str | None = None

    def write(self, df: DataFrame, name: str, partition_by: list[str] | str | None = None, mode: str = "append",
              options: dict[str, Any] | None = None, branch: str | None = None, schema: str = "evolve",
              inputs: Inputs | None = None) -> StagedWrite:
        """Stage one write; `inputs`: what produced this table in particular (else the transaction's
        inputs and the thread's reads, see `Bridge.transaction`)."""
        if self.state != "active":
            raise BridgeError(f"this bridge transaction is {self.state}; start a new one")
        name = self.bridge.on_branch(name, branch if branch is not None else self.branch)
        earlier = [w for w in self.writes if w.table == name]
        if earlier and (mode != "append" or any(w.mode != "append" for w in earlier)):
            raise InvalidValueError(f"{name} is already written in this transaction; an overwrite must be the "
                                    "table's only write in a transaction (union the DataFrames instead)")
        self._job = self._job or self.bridge.spark.sparkContext.getLocalProperty("spark.job.description")
        table = self._tables.get(name)
        if table is None:
            obj = self.bridge.catalog.get(table_path(name))
            table = obj.value if obj is not None else None
        df, pcols, cols, location = self.bridge.prepare(df, name, partition_by, mode, table, schema)
        evo = (replace_schema if schema == "replace" else evolve)(lake.TableValue.from_raw(table).schema, cols, name)
        types = {c["name"]: c["type"] for c in evo.schema["columns"]}
        staged = self.bridge.stage(df, name, mode, pcols, cols, location, types, options, schema)
        if inputs is not None:
            staged.inputs = _inputs(inputs, self.bridge.catalog)
        self.writes.append(staged)
        self._tables[name] = {**(table or {}), "obj_type": "table", "schema": evo.schema, "partition_by": pcols,
                              "location": location}
        return staged

    def commit(self) -> CommitResult:
        if self.state != "active":
            raise BridgeError(f"this bridge transaction is {self.state}; start a new one")
        self.state = "committing"
        try:
            self.result = self.bridge.commit(self.writes, self.author, self.message, self._job, self.time,
                                             inputs=self.inputs)
            self.state = "committed"
        except BaseException:
            self.state = "aborted"
            raise
        return self.result

    def abort(self) -> None:
        if self.state == "active":
            self.bridge.discard(self.writes)
            self.state = "aborted"
