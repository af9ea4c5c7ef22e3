"""semcat's catalog engine: a versioned, hierarchical, transactional catalog after TreeCat.

    import catalog_core as cc
    cat = cc.Catalog.open("data")
    with cat.transaction(author="etl", message="load") as txn:
        txn.add("/wh", {"obj_type": "catalog", "properties": {}})
"""

from __future__ import annotations

from typing import Any

from catalog_core import errors
from catalog_core._engine.catalog import Catalog
from catalog_core.errors import (
    AlreadyExistsError,
    CatalogError,
    ConflictError,
    NotFoundError,
    PreconditionError,
    QuerySyntaxError,
)
from catalog_core.model import Commit, Obj, QueryStats, Snapshot, Version
from catalog_core.retry import retry_transaction
from catalog_core._engine.txn import Transaction

__all__ = [
    "Catalog",
    "Transaction",
    "Obj",
    "Version",
    "Commit",
    "Snapshot",
    "QueryStats",
    "errors",
    "CatalogError",
    "ConflictError",
    "PreconditionError",
    "NotFoundError",
    "AlreadyExistsError",
    "QuerySyntaxError",
    "retry_transaction",
    "connect",
    "open_duckdb",
    "open_table",
    "run_sql",
]


def connect(url: str, token: str | None = None, **kwargs: Any):
    """A client for a `semcat serve` catalog, with the same interface as `Catalog`."""
    from catalog_core.remote.client import RemoteCatalog

    return RemoteCatalog(url, token=token, **kwargs)


def open_duckdb(cat: Any, snapshot: Any = None, sandbox: bool = True):
    from catalog_core.sql.reader import open_duckdb as _open

    return _open(cat, snapshot=snapshot, sandbox=sandbox)


def open_table(cat: Any, name: str, where: str | None = None, snapshot: Any = None, sandbox: bool = True):
    """A DuckDB connection with one table's view over the files `plan_files` keeps for `where`."""
    from catalog_core.sql.reader import open_table as _open

    return _open(cat, name, where=where, snapshot=snapshot, sandbox=sandbox)


def run_sql(cat: Any, sql: str, snapshot: Any = None, limit: int = 1000, timeout_s: float = 10,
            memory_limit: int = 1 << 30):
    """Agent SQL at a snapshot, held to `limit` rows, `timeout_s` seconds and `memory_limit` bytes."""
    from catalog_core.sql.reader import run_sql as _run

    return _run(cat, sql, snapshot=snapshot, limit=limit, timeout_s=timeout_s, memory_limit=memory_limit)
