"""Decoded leaf values, shared by scans that only evaluate predicates on them.

A leaf lifetime (its key and create vid) never changes value, so a decoded value never goes
stale: the cache is bounded, not invalidated. Agents' and writers' predicate reads scan many
file leaves and return few (a fact insert's join reads ~3,000 dimension files' statistics to
keep ~30), and decoding each one was most of their cost. Values from here are shared: scans
evaluate predicates on them and must hand callers a private decode of what they return.
"""

from __future__ import annotations

import threading
from itertools import islice
from typing import Any

from catalog_core.codec import unpack_leaf

__all__ = ["LeafValueCache"]


class LeafValueCache:
    def __init__(self, max_entries: int = 50_000) -> None:
        self.max_entries = max_entries
        self._values: dict[tuple[bytes, int], Any] = {}
        self._lock = threading.Lock()

    def value(self, key: bytes, create: int, packed: bytes) -> Any:
        """The decoded value of the lifetime of `key` created at `create` (stored as `packed`)."""
        hit = self._values.get((key, create))
        if hit is not None:
            return hit
        value = unpack_leaf(packed)
        if self.max_entries > 0:
            with self._lock:
                if len(self._values) >= self.max_entries:
                    # Dicts keep insertion order: dropping the oldest quarter is a cheap FIFO.
                    for old in list(islice(self._values, max(1, self.max_entries // 4))):
                        del self._values[old]
                self._values[(key, create)] = value
        return value

    def __len__(self) -> int:
        return len(self._values)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
