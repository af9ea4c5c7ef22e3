"""The current-object cache: point gets of an object's current version without touching
RocksDB or decoding.

An entry holds the current version of one path: the Obj (value frozen, see `frozen`), the vid
that wrote it (`start`) and the path's *floor* when it was read. A path's floor is the vid of
the last commit that changed or removed it since the catalog was opened (the vid at open for
paths no commit did). Every commit raises the floors of the existing objects it changes or
removes (its effects: removed subtrees, publish, clone, branch records and group commits
included) *before* it becomes visible (before `Store.write` advances latest_vid), and drops
their entries.

Invariants:
- An entry is served only while its floor equals the path's floor now: no commit wrote the path
  since the entry was read, so its version is current and holds for every vid >= start. A read
  at a vid < start (time travel) is never served from here.
- An entry is kept only if it was read at a vid >= the floor read before the read: a reader
  that took its vid before a commit of the path was visible never caches the older version.
- So a reader that took its vid after a commit was acknowledged never gets an older version
  than that commit's, whatever the interleaving (a stale entry put back by a race is refused
  by the floor check on every hit).
- Absent objects are never cached, so a commit that only creates an object (its before-image
  is None: an add, a re-add after a removal, a clone's leaf reference) need not raise its floor:
  no entry of the path can exist under the path's current floor, nor be put while it is absent.
  A bulk load of new leaves thus grows no floors.
- Bounded by entries and bytes (an estimate: 3x the encoded size plus 200 bytes); least
  recently used entries go first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from catalog_core.model import Obj

__all__ = ["ObjectCache"]

_MAX_FLOORS = 1_000_000  # past this many written paths, reset: raise every floor at once


class ObjectCache:
    def __init__(self, open_vid: int, max_entries: int = 50_000, max_bytes: int = 32 << 20) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        # (base floor, path -> floor): swapped as a whole on reset, so a reader sees one or the other
        self._floors: tuple[int, dict[str, int]] = (open_vid, {})
        # path -> (floor, start vid, Obj, size)
        self._map: OrderedDict[str, tuple[int, int, Obj, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def floor(self, path: str) -> int:
        base, vids = self._floors
        return vids.get(path, base)

    def get(self, path: str, vid: int) -> Obj | None:
        """The current version of `path` if it is cached and visible at `vid`, else None (then
        read the store). `path` must be hashable (a str)."""
        e = self._map.get(path)
        if e is not None:
            base, vids = self._floors
            if e[0] == vids.get(path, base) and vid >= e[1]:
                try:
                    self._map.move_to_end(path)
                except KeyError:  # evicted or dropped meanwhile: the entry read above is still valid
                    pass
                self.hits += 1
                return e[2]
        self.misses += 1
        return None

    def put(self, floor: int, vid: int, obj: Obj, size: int) -> None:
        """Keep `obj`, the version of its path read at `vid` (its current one), when `floor` was
        read before that read and `vid` is at or after it."""
        if vid < floor or size > self.max_bytes // 8 or self.max_entries <= 0:
            return
        path = obj.path
        size += 200
        with self._lock:
            if self.floor(path) != floor:
                return  # a commit wrote the path meanwhile
            old = self._map.pop(path, None)
            if old is not None:
                self._bytes -= old[3]
            self._map[path] = (floor, obj.vid, obj, size)
            self._bytes += size
            while self._bytes > self.max_bytes or len(self._map) > self.max_entries:
                _p, gone = self._map.popitem(last=False)
                self._bytes -= gone[3]

    def written(self, paths: Iterable[str], vid: int) -> None:
        """Commits up to `vid` write these paths: call before they become visible."""
        with self._lock:
            base, vids = self._floors
            for path in paths:
                vids[path] = vid
                old = self._map.pop(path, None)
                if old is not None:
                    self._bytes -= old[3]
            if len(vids) > _MAX_FLOORS:
                self._floors = (vid, {})
                self._map.clear()
                self._bytes = 0

    def clear(self) -> None:
        with self._lock:
            self._map.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._map)

    def info(self) -> dict[str, Any]:
        with self._lock:
            return {"hits": self.hits, "misses": self.misses, "entries": len(self._map), "bytes": self._bytes,
                    "max_entries": self.max_entries, "max_bytes": self.max_bytes}
