"""Errors the bridge raises; all are `catalog_core` CatalogErrors, so callers catch one family."""

from __future__ import annotations

from catalog_core.errors import CatalogError, InvalidValueError

__all__ = ["BridgeError", "SchemaEvolutionError", "CommitFailedError", "CommitUnknownError"]


class BridgeError(CatalogError):
    """A bridge operation failed; the message says why and what to do."""


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
