"""Errors of the semantic layer. Each subclasses a `catalog_core.errors` class, so callers (and the
HTTP layer) that handle the engine's errors handle these too; `details` carries the did-you-mean
suggestions as data."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from catalog_core.errors import InvalidValueError, NoSuchTableError, NotFoundError, SqlError

__all__ = ["UnknownTableError", "UnknownObjectError", "UnknownColumnError", "UnknownMetricError",
           "NoJoinPathError", "InvalidAnnotationError", "InvalidExpressionError", "VerifiedQueryError",
           "ReviewRefusedError",
           "did_you_mean", "suggest", "listing"]


def did_you_mean(word: str, choices: Iterable[str], limit: int = 3, cutoff: float = 60.0) -> list[str]:
    """The closest `choices` to `word` (rapidfuzz WRatio, best first)."""
    from rapidfuzz import fuzz, process

    pool = list(dict.fromkeys(choices))
    if not pool or not isinstance(word, str):
        return []
    hits = process.extract(word, pool, scorer=fuzz.WRatio, limit=limit, score_cutoff=cutoff)
    return [h[0] for h in hits]


def suggest(options: list[str]) -> str:
    """'; did you mean 'a' or 'b'?' for the options, '' for none (appended to an error message)."""
    return f"; did you mean {' or '.join(repr(o) for o in options)}?" if options else ""


def listing(names: Iterable[str], limit: int = 40) -> str:
    """The sorted names, comma-separated, cut after `limit` with the count of the rest."""
    items = sorted(set(names))
    text = ", ".join(items[:limit])
    return text + (f", ... ({len(items) - limit} more)" if len(items) > limit else "")


class _Listing:
    """Errors whose `details` always carry `_lists` (did-you-mean names, reachable tables), [] by default."""

    _lists: tuple[str, ...] = ("did_you_mean",)

    def __init__(self, message: str, **details: Any) -> None:
        for key in self._lists:
            details.setdefault(key, [])
        super().__init__(message, **details)  # type: ignore[call-arg]


class UnknownTableError(_Listing, NoSuchTableError):
    """A dotted table name names no table at the snapshot; `details["did_you_mean"]` lists close names."""


class UnknownObjectError(_Listing, NotFoundError):
    """A catalog or namespace name names nothing at the snapshot."""


class UnknownColumnError(_Listing, InvalidValueError):
    """A column name is not in the table's schema (or not in reach of a metric);
    `details["did_you_mean"]` lists close names."""


class UnknownMetricError(_Listing, NotFoundError):
    """No metric has that name at the snapshot; `details["did_you_mean"]` lists close names."""


class NoJoinPathError(_Listing, NotFoundError):
    """No chain of declared relationships joins the two tables; `details["reachable"]` lists the
    tables the first one does reach."""

    _lists = ("reachable",)


class InvalidAnnotationError(InvalidValueError):
    """An annotation field name or value is wrong; `details["field"]` names it."""


class InvalidExpressionError(SqlError):
    """A metric expression, a filter, a relationship condition or a `where` does not parse, is not
    one expression, or is the wrong kind (an aggregate where a row condition belongs, ...);
    `details` has `text` and, where known, `line` and `column`."""


class VerifiedQueryError(SqlError):
    """A query offered for verification does not run at the current snapshot, or reads no table."""


class ReviewRefusedError(InvalidValueError):
    """The value accept or edit would write is contradicted by the snapshot (a column it names is
    not in the table, the join fails or breaks its cardinality, the enum is not the data's values,
    the grain's keys repeat, a rewritten verified query answers otherwise); nothing was written.
    `details["why"]` says what failed."""
