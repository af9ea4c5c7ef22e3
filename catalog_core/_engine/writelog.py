"""The recent-write log of paper §6.2: before/after images indexed by (parent prefix, vid),
plus the last-modified vid of every parent prefix and of every written path."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sortedcontainers import SortedDict

from catalog_core.paths import obj_id_of, parent_of

__all__ = ["LogRecord", "WriteLog"]


@dataclass(frozen=True, slots=True)
class LogRecord:
    path: str
    obj_id: str
    vid: int
    before: dict[str, Any] | None
    after: dict[str, Any] | None


class WriteLog:
    def __init__(self) -> None:
        self._index: SortedDict = SortedDict()  # (parent, vid, seq) -> LogRecord
        self.last_modified: dict[str, int] = {}  # parent prefix -> newest vid of a child write
        self.last_write: dict[str, int] = {}  # path -> newest vid that wrote it
        self._by_vid: deque[tuple[int, list[Any]]] = deque()
        self._seq = 0

    def __len__(self) -> int:
        return len(self._index)

    def add(self, vid: int, effects: Iterable[Any]) -> list[Any]:
        keys = []
        for eff in effects:
            parent = parent_of(eff.path)
            self._seq += 1
            key = (parent, vid, self._seq)
            self._index[key] = LogRecord(eff.path, obj_id_of(eff.path), vid, eff.before, eff.after)
            self.last_modified[parent] = vid
            self.last_write[eff.path] = vid
            keys.append(key)
        self._by_vid.append((vid, keys))
        return keys

    def records_after(self, parent: str, vid: int) -> Iterable[LogRecord]:
        """Records under `parent` written after `vid`, oldest first."""
        if self.last_modified.get(parent, -1) <= vid:
            return ()
        return (self._index[k] for k in self._index.irange((parent, vid + 1, 0), (parent, float("inf"), 0)))

    def keys_of(self, vid: int) -> list[Any]:
        return next((keys for v, keys in self._by_vid if v == vid), [])

    def discard(self, keys: list[Any]) -> None:
        """Forget records of a group whose batch never became durable."""
        for key in keys:
            self._index.pop(key, None)
        self._rebuild_marks()

    def _rebuild_marks(self) -> None:
        self.last_modified.clear()
        self.last_write.clear()
        for (parent, vid, _s), rec in self._index.items():
            self.last_modified[parent] = max(vid, self.last_modified.get(parent, -1))
            self.last_write[rec.path] = max(vid, self.last_write.get(rec.path, -1))
        self._by_vid = deque((v, [k for k in ks if k in self._index]) for v, ks in self._by_vid)

    def gc(self, below: int) -> None:
        """Drop records with vid <= below: no active transaction read before them."""
        while self._by_vid and self._by_vid[0][0] <= below:
            vid, keys = self._by_vid.popleft()
            for key in keys:
                rec = self._index.pop(key, None)
                if rec is None:
                    continue
                if self.last_modified.get(key[0]) == vid:
                    del self.last_modified[key[0]]
                if self.last_write.get(rec.path) == vid:
                    del self.last_write[rec.path]
