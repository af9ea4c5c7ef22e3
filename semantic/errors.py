"""Errors of the semantic layer. Each subclasses a `catalog_core.errors` class, so callers (and the
HTTP layer) that handle the engine's errors handle these too; `details` carries the did-you-mean
suggestions as data."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from catalog_core.errors import InvalidValueError, NoSuchTableError, NotFoundError, SqlError

__all__ = ["UnknownTableError", "UnknownObjectError", "UnknownColumnError", "InvalidAnnotationError",
           "VerifiedQueryError", "did_you_mean", "suggest"]


def did_you_mean(word: str, choices: Iterable[str], limit: int = 3, cutoff: float = 60.0) -> list[str]:
    """The closest `choices` to `word` (rapidfuzz WRatio, best first)."""
    from rapidfuzz import fuzz, process

    pool = list(dict.fromkeys(choices))
    if not pool or not isinstance(word, str):
        return []
    hits = process.extract(word, pool, scorer=fuzz.WRatio, limit=limit, score_cutoff=cutoff)
    return [h[0] for h in hits]


def suggest(options: list[str]) -> str:
    return f"; did you mean {' or '.join(repr(o) for o in options)}?" if options else ""


class UnknownTableError(NoSuchTableError):
    """A dotted table name names no table at the snapshot; `details["did_you_mean"]` lists close names."""

    def __init__(self, message: str, **details: Any) -> None:
        details.setdefault("did_you_mean", [])
        super().__init__(message, **details)


class UnknownObjectError(NotFoundError):
    """A catalog or namespace name names nothing at the snapshot."""

    def __init__(self, message: str, **details: Any) -> None:
        details.setdefault("did_you_mean", [])
        super().__init__(message, **details)


class UnknownColumnError(InvalidValueError):
    """A column name is not in the table's schema; `details["did_you_mean"]` lists close names."""

    def __init__(self, message: str, **details: Any) -> None:
        details.setdefault("did_you_mean", [])
        super().__init__(message, **details)


class InvalidAnnotationError(InvalidValueError):
    """An annotation field name or value is wrong; `details["field"]` names it."""


class VerifiedQueryError(SqlError):
    """A query offered for verification does not run at the current snapshot, or reads no table."""
