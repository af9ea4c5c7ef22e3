"""semcat's catalog engine: a versioned, hierarchical, transactional catalog after TreeCat.

    import catalog_core as cc
    cat = cc.Catalog.open("data")                 # embedded; or cc.connect(url, token=...) over HTTP
    cat = cc.open_catalog("data")                 # the same, but refuses a directory that holds no catalog
    cat = cc.open("data" or "http://host:8765")   # a directory as open_catalog does, an http(s) URL as connect
    with cat.transaction(author="etl", message="load") as txn:
        txn.add("/wh", {"obj_type": "catalog", "properties": {}})

Both catalogs satisfy `cc.CatalogAPI`; code above this package is typed against it. Errors are one
tree under `cc.CatalogError` (module `cc.errors`); the lake's naming conventions are `cc.lake`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from catalog_core import errors, lake
from catalog_core._engine.catalog import Catalog
from catalog_core._engine.relocate import lake_root, mark_lake_root
from catalog_core._engine.txn import Transaction
from catalog_core._open import catalogs_below, open_catalog
from catalog_core._open import open_path_or_url as open
from catalog_core.api import CatalogAPI, SnapshotRef, TransactionAPI
from catalog_core.errors import (
    AlreadyExistsError,
    CatalogError,
    ConflictError,
    InvalidPathError,
    InvalidValueError,
    NoSuchTableError,
    NotFoundError,
    PreconditionError,
    QuerySyntaxError,
    SnapshotNotFoundError,
    SqlError,
    SqlRefusedError,
    SqlTimeoutError,
)
from catalog_core.model import Branch, Change, Commit, FileObj, Obj, QueryStats, Snapshot, Version
from catalog_core.retry import retry_transaction

if TYPE_CHECKING:
    import duckdb

    from catalog_core.remote.client import RemoteCatalog
    from catalog_core.sql.reader import SqlResult

__all__ = [
    "Catalog",
    "open",
    "open_catalog",
    "catalogs_below",
    "mark_lake_root",  # relocatable lakes (docs/engine.md, Relocatable catalogs)
    "lake_root",
    "Transaction",
    "CatalogAPI",
    "TransactionAPI",
    "SnapshotRef",
    "Obj",
    "FileObj",
    "Version",
    "Commit",
    "Snapshot",
    "Change",
    "Branch",
    "QueryStats",
    "errors",
    "lake",
    "CatalogError",
    "ConflictError",
    "PreconditionError",
    "NotFoundError",
    "NoSuchTableError",
    "SnapshotNotFoundError",
    "AlreadyExistsError",
    "InvalidPathError",
    "InvalidValueError",
    "QuerySyntaxError",
    "SqlError",
    "SqlRefusedError",
    "SqlTimeoutError",
    "retry_transaction",
    "connect",
    "open_duckdb",
    "open_table",
    "run_sql",
    "warm_sql",
    "prepare_sql",
    "set_sql_cache_budget",
]


def connect(url: str, token: str | None = None, **kwargs: Any) -> RemoteCatalog:
    """A client for a `semcat serve` catalog, with the same interface as `Catalog` (`CatalogAPI`)."""
    from catalog_core.remote.client import RemoteCatalog

    return RemoteCatalog(url, token=token, **kwargs)


def open_duckdb(cat: CatalogAPI, snapshot: SnapshotRef = None, sandbox: bool = True) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with a view `catalog.namespace.table` over exactly the files of every
    table visible at `snapshot`."""
    from catalog_core.sql.reader import open_duckdb as _open

    return _open(cat, snapshot=snapshot, sandbox=sandbox)


def open_table(cat: CatalogAPI, name: str, where: str | None = None, snapshot: SnapshotRef = None,
               sandbox: bool = True) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with one table's view over the files `plan_files` keeps for `where`."""
    from catalog_core.sql.reader import open_table as _open

    return _open(cat, name, where=where, snapshot=snapshot, sandbox=sandbox)


def run_sql(cat: CatalogAPI, sql: str, snapshot: SnapshotRef = None, limit: int = 1000,
            timeout_s: float = 10, memory_limit: int = 1 << 30) -> SqlResult:
    """One read-only statement from an agent, sandboxed, held to `limit` rows, `timeout_s` seconds
    and `memory_limit` bytes (it runs in a worker process; see catalog_core.sql.worker)."""
    from catalog_core.sql.reader import run_sql as _run

    return _run(cat, sql, snapshot=snapshot, limit=limit, timeout_s=timeout_s, memory_limit=memory_limit)


def warm_sql(cat: CatalogAPI, tables: list[str], snapshot: SnapshotRef = None, timeout_s: float = 10) -> bool:
    """Start copying `tables` at `snapshot` into a SQL worker's snapshot cache in the background
    (never blocks, never raises), so later `run_sql` statements on them read memory; see
    catalog_core.sql.snapcache."""
    from catalog_core.sql.reader import warm

    return warm(cat, tables, snapshot=snapshot, timeout_s=timeout_s)


def prepare_sql(cat: CatalogAPI, snapshot: SnapshotRef = None, timeout_s: float = 10) -> bool:
    """Have an idle SQL worker build the sandboxed database of `snapshot` (latest when None) in the
    background (never blocks, never raises), and copy its tables into that worker's snapshot cache
    (up to `catalog_core.sql.snapcache.PRELOAD_MAX` bytes), so the first `run_sql` statement there
    with this `timeout_s` waits for neither; see catalog_core.sql.reader.prepare."""
    from catalog_core.sql.reader import prepare

    return prepare(cat, snapshot=snapshot, timeout_s=timeout_s)


def set_sql_cache_budget(n: int) -> None:
    """Bytes of decoded tables each SQL worker may hold for `run_sql` (0 turns the cache off);
    default `SEMCAT_SQL_CACHE_BYTES` or a fraction of RAM (catalog_core.sql.snapcache)."""
    from catalog_core.sql.snapcache import set_budget

    set_budget(n)


# the Iceberg commit hook (light: it imports pyiceberg only for a commit that changes a table's files)
from catalog_core.iceberg import oncommit as _iceberg_oncommit  # noqa: E402,F401


def __getattr__(name: str) -> Any:
    """`cc.iceberg` is imported on first use: it needs pyiceberg, which `import catalog_core` does not."""
    if name == "iceberg":
        import importlib

        return importlib.import_module("catalog_core.iceberg")
    raise AttributeError(f"module 'catalog_core' has no attribute {name!r}")
