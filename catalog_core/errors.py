"""Every error semcat raises: one tree under `CatalogError`, as in httpx and pyiceberg.

    CatalogError (400)                     base: message, details, http_status; to_dict / error_from_dict
    ├── QuerySyntaxError                   a path query or filter does not parse (text, position, expected)
    ├── InvalidPathError                   a path is malformed
    ├── InvalidValueError                  a value, argument or merge delta has the wrong shape
    │   ├── SqlError                       SQL does not parse or failed in DuckDB
    │   └── SchemaEvolutionError           a Spark write's schema cannot be reconciled with the table's
    ├── NotFoundError (404)                a path, table, snapshot or transaction does not exist
    │   ├── NoSuchTableError               a dotted table name names no table
    │   ├── SnapshotNotFoundError          a vid, snapshot name or time names no state of the catalog
    │   └── MissingObjectError (404)       a write needs an object that is not there (also a PreconditionError)
    ├── PreconditionError (412)            a write's precondition failed at commit; nothing was written
    │   ├── MissingObjectError
    │   ├── AlreadyExistsError (409)       an add found the path taken
    │   └── LeafImmutableError             leaves are added or removed, never updated or merged
    ├── ConflictError (409)                concurrency control aborted the transaction; retry it
    │   └── DeadlockError                  mgl chose this transaction as a deadlock victim
    ├── TransactionClosedError (410)       the transaction already ended
    ├── AuthError (401) / PermissionDeniedError (403)
    ├── SqlRefusedError                    a statement broke a sandbox rule (`rule` names it)
    ├── SqlTimeoutError (408)              a statement ran past its time limit
    ├── TooManyTransactionsError (429)     the server holds too many open transaction sessions
    ├── ShuttingDownError (503)            the server is stopping; nothing was done
    └── BridgeError                        a Spark bridge operation failed
        ├── CommitFailedError (409)        the commit failed for good; the written files were deleted
        └── CommitUnknownError (503)       the commit's outcome is unknown; the files were kept

Each message says what was wrong and what to do about it. `details` carries the structured facts
(path, vid, position, rule, ...); a detail never replaces a class attribute such as `http_status`.
`to_dict` / `error_from_dict` carry an error across HTTP so that a remote client raises the same
class as the embedded catalog (subclasses defined in other packages, e.g. `semantic`, included
once their module is imported).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "CatalogError",
    "QuerySyntaxError",
    "ConflictError",
    "PreconditionError",
    "NotFoundError",
    "AlreadyExistsError",
    "NoSuchTableError",
    "SnapshotNotFoundError",
    "MissingObjectError",
    "InvalidPathError",
    "InvalidValueError",
    "LeafImmutableError",
    "TransactionClosedError",
    "DeadlockError",
    "AuthError",
    "PermissionDeniedError",
    "SqlError",
    "SqlRefusedError",
    "SqlTimeoutError",
    "TooManyTransactionsError",
    "ShuttingDownError",
    "BridgeError",
    "SchemaEvolutionError",
    "CommitFailedError",
    "CommitUnknownError",
    "error_from_dict",
]


class CatalogError(Exception):
    """Base class of every semcat error."""

    http_status = 400

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        return {"error": type(self).__name__, "message": self.message, "details": self.details}


class QuerySyntaxError(CatalogError):
    """A path query or filter expression does not parse."""

    def __init__(self, message: str, *, text: str = "", position: int = 0, expected: str = "") -> None:
        super().__init__(message, text=text, position=position, expected=expected)
        self.text, self.position, self.expected = text, position, expected


class ConflictError(CatalogError):
    """The transaction was aborted by concurrency control; nothing was written."""

    http_status = 409

    def __init__(self, message: str, *, path: str | None = None, vid: int | None = None,
                 retryable: bool = True, **details: Any) -> None:
        super().__init__(message, path=path, vid=vid, retryable=retryable, **details)
        self.path, self.vid, self.retryable = path, vid, retryable


class PreconditionError(CatalogError):
    """A write's precondition failed at commit time; nothing was written."""

    http_status = 412


class NotFoundError(CatalogError):
    """Something named does not exist (at the snapshot read)."""

    http_status = 404


class AlreadyExistsError(PreconditionError):
    http_status = 409


class NoSuchTableError(NotFoundError):
    """A dotted table name names no table at the snapshot read."""


class SnapshotNotFoundError(NotFoundError):
    """A vid, snapshot name or ISO time names no state of the catalog."""


class MissingObjectError(NotFoundError, PreconditionError):
    """A write needs an object that does not exist at commit (a parent to add under, an object
    to merge into or remove); nothing was written."""

    http_status = 404


class InvalidPathError(CatalogError):
    """A path is malformed (not absolute, empty segment, forbidden character)."""


class InvalidValueError(CatalogError):
    """An object value or merge delta has the wrong shape."""


class LeafImmutableError(PreconditionError):
    """Leaf objects are added or removed, never updated or merged."""


class TransactionClosedError(CatalogError):
    """The transaction was already committed, aborted or expired."""

    http_status = 410


class DeadlockError(ConflictError):
    """`mgl` only: waiting for a lock would close a cycle; this transaction was chosen as victim."""


class AuthError(CatalogError):
    http_status = 401


class PermissionDeniedError(CatalogError):
    http_status = 403


class SqlError(InvalidValueError):
    """A SQL statement does not parse or failed in DuckDB (bad column, type error, ...)."""


class SqlRefusedError(CatalogError):
    """A SQL statement broke a sandbox rule; `rule` names it."""

    def __init__(self, message: str, *, rule: str = "", **details: Any) -> None:
        super().__init__(message, rule=rule, **details)
        self.rule = rule


class SqlTimeoutError(CatalogError):
    http_status = 408


class TooManyTransactionsError(CatalogError):
    """The server holds its maximum of open transaction sessions; commit or abort some, or retry."""

    http_status = 429


class ShuttingDownError(CatalogError):
    """The server is shutting down; nothing was done. Retry after it restarts."""

    http_status = 503


class BridgeError(CatalogError):
    """A Spark bridge operation failed; the message says why and what to do."""


class SchemaEvolutionError(InvalidValueError):
    """The DataFrame's schema cannot be reconciled with the table's (an incompatible type change,
    a missing required column, a different partitioning)."""


class CommitFailedError(BridgeError):
    """The catalog commit failed for good (after retries); the files the write produced were deleted."""

    http_status = 409


class CommitUnknownError(BridgeError):
    """The commit call broke (e.g. the connection to the server) and the commit log does not show
    it; it may still land, so the written files were kept. `details["write_ids"]` names them."""

    http_status = 503


def _classes() -> dict[str, type[CatalogError]]:
    out: dict[str, type[CatalogError]] = {}
    todo: list[type[CatalogError]] = [CatalogError]
    while todo:
        cls = todo.pop()
        out.setdefault(cls.__name__, cls)
        todo.extend(cls.__subclasses__())
    return out


def error_from_dict(body: dict[str, Any]) -> CatalogError:
    """Rebuild the exception a server reported, so remote clients raise the same classes.

    An unknown class name (a subclass whose module this process has not imported) becomes a
    `CatalogError` with the same message and details. Details become attributes only where the
    class has no attribute of that name, so a detail never replaces `http_status` or a method."""
    cls = _classes().get(str(body.get("error", "")), CatalogError)
    message = str(body.get("message", ""))
    err = cls.__new__(cls)
    Exception.__init__(err, message)
    err.message = message
    details = body.get("details")
    err.details = dict(details) if isinstance(details, dict) else {}
    for key, val in err.details.items():
        if isinstance(key, str) and key.isidentifier() and not hasattr(cls, key) \
                and key not in ("message", "details", "args"):
            setattr(err, key, val)
    return err
