"""Retry a transaction function on retryable conflicts, with jittered exponential backoff."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from catalog_core.errors import ConflictError

if TYPE_CHECKING:
    from catalog_core.api import CatalogAPI, TransactionAPI

__all__ = ["retry_transaction"]

T = TypeVar("T")


def retry_transaction(cat: CatalogAPI, fn: Callable[[TransactionAPI], T], *, attempts: int = 10, base_delay: float = 0.002,
                      max_delay: float = 0.5, author: str = "", message: str = "",
                      meta: dict[str, Any] | None = None) -> T:
    """Run `fn(txn)` in a fresh transaction and commit; on a retryable ConflictError start over
    (fn must be safe to re-run). Returns fn's result; re-raises after `attempts` tries."""
    for attempt in range(attempts):
        txn = cat.transaction(author=author, message=message, meta=meta)
        try:
            result = fn(txn)
            txn.commit()
            return result
        except ConflictError as exc:
            txn.abort()
            if not getattr(exc, "retryable", True) or attempt == attempts - 1:
                raise
            delay = min(max_delay, base_delay * (2 ** attempt))
            time.sleep(delay * (0.5 + random.random()))
        except BaseException:
            txn.abort()
            raise
    raise AssertionError("unreachable")
