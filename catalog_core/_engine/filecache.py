"""Visible leaf lists of recently read parents, kept in memory: the file lists of planned
partitions, and the decoded leaves of full-range predicate scans.

A parent's list of leaves changes only when a commit writes a leaf under it, so one list
serves every read vid from that commit on. Each children prefix has a *floor*: the vid of
the last commit that wrote a leaf under it since the catalog was opened (or the vid at open).
A list computed at a read vid >= floor holds for every read vid >= floor while the floor
stays put. Commits raise the floor before they are published, so a reader that took its vid
after a commit always sees that commit's floor.

Bounded by the bytes of the values it holds (least recently used lists go first). Entries
are immutable tuples; each plan builds fresh FileObj around them, and scans hand callers a
fresh decode, so a caller never shares a value with another.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from catalog_core._engine.keys import SEP, parent_of_prefix

__all__ = ["Floors", "FileListCache", "Entries", "files_size", "parent_prefix"]

# One tuple per visible leaf, in id order; the file lists hold (path, packed value, create vid).
Entries = tuple[tuple[Any, ...], ...]


def files_size(entries: Entries) -> int:
    """Approximate bytes held by a file list: the packed values plus the tuples around them."""
    return sum(len(raw) for _p, raw, _v in entries) + 100 * len(entries)


_MAX_FLOORS = 1_000_000  # past this many written prefixes, reset: raise every floor at once


def parent_prefix(leaf_key: bytes) -> bytes:
    """The children prefix a leaf key belongs to (the 2 depth bytes may themselves hold NUL)."""
    i = leaf_key.rfind(SEP, 2)
    return leaf_key[: i + 1] if i >= 0 else leaf_key[:2]


class Floors:
    """The floor of every children prefix, shared by all the lists kept of the same store."""

    def __init__(self, open_vid: int) -> None:
        self._base = open_vid  # every leaf written before the catalog was opened is older
        self._vids: dict[bytes, int] = {}
        self._lock = threading.Lock()

    def get(self, prefix: bytes) -> int:
        return self._vids.get(prefix, self._base)

    def raise_to(self, prefixes: Iterable[bytes], vid: int) -> None:
        """Commits up to `vid` write leaves under these prefixes: call before they become visible.
        A list kept under an older floor no longer matches, and is never served again."""
        with self._lock:
            for prefix in prefixes:
                self._vids[prefix] = vid
            if len(self._vids) > _MAX_FLOORS:
                self._base = vid
                self._vids.clear()


class FileListCache:
    def __init__(self, floors: Floors, max_bytes: int = 64 << 20) -> None:
        self.max_bytes = max_bytes
        self.floors = floors
        self._lists: OrderedDict[bytes, tuple[int, Entries, int, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def floor(self, prefix: bytes) -> int:
        return self.floors.get(prefix)

    def drop(self, prefixes: Iterable[bytes]) -> None:
        """Free the lists of prefixes whose floor was just raised (they can no longer be served)."""
        with self._lock:
            for prefix in prefixes:
                self._drop(prefix)

    def get(self, prefix: bytes, vid: int) -> tuple[Entries, int] | None:
        """(entries, objects scanned to build them) valid at `vid`, or None."""
        with self._lock:
            hit = self._lists.get(prefix)
            if hit is None or hit[0] != self.floor(prefix) or vid < hit[0]:
                self.misses += 1
                return None
            self._lists.move_to_end(prefix)
            self.hits += 1
            return hit[1], hit[2]

    def allowance(self) -> list[int]:
        """What one plan may add: half the budget, so a plan over a long range keeps its first
        lists and leaves the rest of the cache (other callers' hot partitions) in place."""
        return [self.max_bytes // 2]

    def put(self, prefix: bytes, floor: int, vid: int, entries: Entries, scanned: int,
            room: list[int] | None = None, size: int | None = None) -> None:
        """Keep a list computed at `vid`, when `floor` was read after `vid` was taken. `room`
        (an allowance) is charged for the list; a list that does not fit is not kept. `size`
        defaults to that of a file list."""
        size = files_size(entries) if size is None else size
        if self.max_bytes <= 0 or vid < floor or size > self.max_bytes // 4:
            return
        if room is not None:
            if size > room[0]:
                return
            room[0] -= size
        with self._lock:
            if self.floor(prefix) != floor:
                return  # a commit wrote under the prefix meanwhile
            self._drop(prefix)
            self._lists[prefix] = (floor, entries, scanned, size)
            self._bytes += size
            while self._bytes > self.max_bytes:
                _k, old = self._lists.popitem(last=False)
                self._bytes -= old[3]

    def clear(self) -> None:
        with self._lock:
            self._lists.clear()
            self._bytes = 0

    def info(self) -> dict[str, Any]:
        """Counters and contents for `Catalog.engine_info` (paths of the cached parents)."""
        with self._lock:
            return {"hits": self.hits, "misses": self.misses, "bytes": self._bytes,
                    "max_bytes": self.max_bytes, "lists": len(self._lists),
                    "paths": [parent_of_prefix(p) for p in self._lists]}

    def _drop(self, prefix: bytes) -> None:
        old = self._lists.pop(prefix, None)
        if old is not None:
            self._bytes -= old[3]
