"""Every error the engine raises; one flat module, as in pyiceberg.

Each message says what was wrong and what to do about it. `to_dict`/`from_dict`
let the HTTP layer carry an error across the wire and re-raise the same class.
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


class NotFoundError(PreconditionError):
    http_status = 404


class AlreadyExistsError(PreconditionError):
    http_status = 409


class NoSuchTableError(NotFoundError):
    """A dotted table name names no table at the snapshot read."""


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


_BY_NAME = {name: globals()[name] for name in __all__ if name != "error_from_dict"}


def error_from_dict(body: dict[str, Any]) -> CatalogError:
    """Rebuild the exception a server reported, so remote clients raise the same classes."""
    cls = _BY_NAME.get(body.get("error", ""), CatalogError)
    err = CatalogError.__new__(cls)
    Exception.__init__(err, body.get("message", ""))
    err.message = body.get("message", "")
    err.details = dict(body.get("details") or {})
    for key, val in err.details.items():
        setattr(err, key, val)
    return err
