"""The one interface of every catalog: `CatalogAPI` and `TransactionAPI`.

`catalog_core.Catalog` (embedded, RocksDB) and the client returned by `catalog_core.connect(url)`
(HTTP) both satisfy these protocols; mypy checks both (`catalog_core/_conformance.py`) and a test
compares their signatures. Code above catalog_core (semantic, MCP tools, the eval, the Spark bridge,
DuckDB readers) is typed against these protocols and never asks which implementation it holds.

A `SnapshotRef` names a state of the catalog: a vid (int, or ASCII digits), a snapshot name, an ISO-8601
time (the last commit at or before it), or None for the latest commit. Every read takes one and
`resolve` turns it into a vid.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from catalog_core.model import Branch, Change, Commit, FileObj, Obj, QueryStats, Snapshot, Version
from catalog_core.writeset import WriteOp

if TYPE_CHECKING:
    from catalog_core.query.ast import Query

__all__ = ["SnapshotRef", "CatalogAPI", "TransactionAPI"]

SnapshotRef = int | str | None


@runtime_checkable
class TransactionAPI(Protocol):
    """A read-write transaction. Reads see `read_vid` plus the transaction's own writes and are
    recorded for validation; writes are buffered and applied atomically at commit.

    `with cat.transaction(...) as txn:` commits on a clean exit (then `txn.vid` is the commit's vid)
    and aborts on an exception. `commit()` raises `ConflictError` when concurrency control aborts
    the transaction, or a `PreconditionError` when a write's precondition fails; either way nothing
    was written."""

    @property
    def read_vid(self) -> int: ...
    @property
    def vid(self) -> int | None:
        """The commit's vid once committed."""
        ...
    @property
    def state(self) -> str:
        """active, committed or aborted."""
        ...
    @property
    def ops(self) -> list[WriteOp]:
        """The buffered write set, in write order."""
        ...


    def get(self, path: str) -> Obj | None: ...
    def query(self, expr: str | Query, stats: QueryStats | None = None) -> list[Obj]: ...
    def iter_query(self, expr: str | Query, stats: QueryStats | None = None) -> Iterator[Obj]: ...

    def add(self, path: str, value: dict[str, Any], leaf: bool = False) -> None: ...
    def add_many(self, parent: str, children: Iterable[tuple[str, dict[str, Any]]], leaf: bool = False) -> None:
        """One add of `parent/<id>` per (id, value), in order, recorded all or nothing (a bulk load)."""
        ...
    def update(self, path: str, value: dict[str, Any]) -> None: ...
    def remove(self, path: str) -> None: ...
    def merge(self, path: str, delta: dict[str, Any]) -> None: ...
    def clone(self, src: str, dst: str, vid: int | None = None) -> None: ...
    def flush(self) -> None: ...

    def commit(self) -> int: ...
    def abort(self) -> None: ...
    def __enter__(self) -> Any: ...
    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None: ...


@runtime_checkable
class CatalogAPI(Protocol):
    """A catalog, embedded or remote. Reads outside a transaction are snapshot reads at a
    `SnapshotRef` (default: the latest commit): they never block and never abort."""

    @property
    def latest_vid(self) -> int: ...
    @property
    def protocol(self) -> str: ...

    def resolve(self, ref: SnapshotRef) -> int:
        """A vid for a vid, snapshot name or ISO time; `NotFoundError` if there is none."""
        ...

    def get(self, path: str, vid: SnapshotRef = None) -> Obj | None: ...
    def children(self, path: str, vid: SnapshotRef = None) -> list[Obj]: ...
    def query(self, expr: str | Query, vid: SnapshotRef = None, stats: QueryStats | None = None) -> list[Obj]: ...
    def iter_query(self, expr: str | Query, vid: SnapshotRef = None,
                   stats: QueryStats | None = None) -> Iterator[Obj]: ...
    def explain(self, expr: str | Query, vid: SnapshotRef = None) -> QueryStats: ...
    def history(self, path: str) -> list[Version]: ...
    def commits(self, since: SnapshotRef = None, until: SnapshotRef = None, prefix: str | None = None,
                limit: int | None = None) -> list[Commit]: ...
    def plan_files(self, table: str, where: str | None = None, vid: SnapshotRef = None,
                   stats: QueryStats | None = None) -> list[FileObj] | list[Obj]:
        """The file leaves of table `catalog.namespace.table` visible at `vid` that may hold rows
        matching `where` (pruned by partition values, then by file min/max statistics). The
        embedded catalog returns lazily decoded `FileObj`s, the remote one `Obj`s; both read alike."""
        ...

    def snapshot(self, name: str, vid: SnapshotRef = None) -> Snapshot: ...
    def snapshots(self) -> list[Snapshot]: ...
    def clone(self, src: str, dst: str, vid: SnapshotRef = None, author: str = "", message: str = "") -> int: ...

    def diff(self, from_ref: SnapshotRef, to_ref: SnapshotRef = None, prefix: str | None = None) -> Iterator[Change]:
        """Objects added, removed and updated between two snapshots under `prefix`, streamed;
        the cost follows the number of changes."""
        ...

    def branches(self, prefix: str | None = None, vid: SnapshotRef = None) -> list[Branch]: ...
    def publish(self, branch: str, onto: str, author: str = "", message: str = "", keep: bool = True) -> int:
        """Write-audit-publish: the branch's changes since its base onto its source, one commit."""
        ...

    def drop_branch(self, branch: str, author: str = "", message: str = "") -> int: ...

    def transaction(self, author: str = "", message: str = "", meta: dict[str, Any] | None = None,
                    time: float | str | datetime | None = None) -> TransactionAPI:
        """A read-write transaction; `time` backdates its commit (seconds since the epoch or an
        ISO-8601 time, not earlier than the latest commit's time) for imports and simulated
        histories."""
        ...

    def close(self) -> None: ...
