"""What the snapshot history says about a table, read once and cached.

A `Timeline` is built from `cat.history(table path)` up to one version of the table object: its
schema changes (vid, time, columns before and after) and its data commits (vid, time; from
`stats.last_data_commit`, or a change of row/file count). The versions of an object up to its
version `v` never change, so timelines are cached per (table path, vid of the table object), and
everything else per (name, snapshot vid) — a snapshot's state is immutable too.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Any

import cachetools

from catalog_core import lake
from catalog_core.api import CatalogAPI
from catalog_core.model import Obj
from semantic._tables import coarse_family as type_family
from semantic._tables import column_id, table_columns
from semantic.annotations import read_annotations, read_catalog_annotations
from semantic.models import Annotation

__all__ = ["SchemaChange", "Timeline", "Context", "context", "clear_cache", "type_family"]


@dataclass(frozen=True)
class SchemaChange:
    vid: int
    time: float
    before: dict[int, lake.Column]   # column id -> column, before the change
    after: dict[int, lake.Column]

    @property
    def added(self) -> list[lake.Column]:
        return [c for i, c in self.after.items() if i not in self.before]

    @property
    def dropped(self) -> list[lake.Column]:
        return [c for i, c in self.before.items() if i not in self.after]


@dataclass
class Timeline:
    name: str
    created_vid: int
    versions: list[int]                                   # vids of the table object's versions
    schema_changes: list[SchemaChange]
    data_commits: list[tuple[int, float]]                 # (vid, time), oldest first

    def changes_after(self, vid: int) -> list[SchemaChange]:
        return [c for c in self.schema_changes if c.vid > vid]

    def data_after(self, vid: int) -> list[tuple[int, float]]:
        return [d for d in self.data_commits if d[0] > vid]

    def versions_after(self, vid: int) -> int:
        return sum(1 for v in self.versions if v > vid)


class _LRU(cachetools.LRUCache[Any, Any]):
    """A bounded map of values computed from immutable keys (vids), least recently used out: a
    `take` that finds its key counts as a use, like a `put`. Safe to share between the server's
    threads (a read reorders, so reads lock too)."""

    def __init__(self, size: int) -> None:
        super().__init__(maxsize=size)
        self._lock = threading.Lock()

    def put(self, key: Any, value: Any) -> Any:
        with self._lock:
            self[key] = value
        return value

    def take(self, key: Any) -> Any:
        with self._lock:
            return self.get(key)


class Cache:
    """Per-catalog caches, all keyed by immutable states (vids)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.timelines = _LRU(4096)     # (path, table obj vid) -> Timeline
        self.tables = _LRU(8)            # vid -> {name: Obj}
        self.all_anns = _LRU(8)          # vid -> {name: [Annotation]}
        self.anns = _LRU(1024)           # (name, vid) -> [Annotation]
        self.partitions = _LRU(1024)     # (name, data vid, vid) -> [Obj]
        self.commits = _LRU(4096)        # vid -> Commit
        self.findings = _LRU(4096)       # (name, vid, depth) -> [Finding]
        self.cards = _LRU(1024)          # (name, vid) -> TableCard without time-dependent parts
        self.sql = _LRU(1024)            # (key, vid) -> (ok, fingerprint or error)
        self.models = _LRU(16)           # (catalog, vid) -> _model.CatalogModel
        self.completeness = _LRU(1024)   # partitions per (name, table obj vid), load logs per log obj vid
        self.router: Any = None          # the data checks' statement router (staleness.core.Router), on first use


_CACHES: weakref.WeakKeyDictionary[Any, Cache] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def cache_of(cat: CatalogAPI) -> Cache:
    with _CACHES_LOCK:
        c = _CACHES.get(cat)
        if c is None:
            c = _CACHES[cat] = Cache()
        return c


def clear_cache(cat: CatalogAPI | None = None) -> None:
    """Forget cached timelines, findings and cards (of one catalog, or all)."""
    with _CACHES_LOCK:
        if cat is None:
            _CACHES.clear()
        else:
            _CACHES.pop(cat, None)


def _cols(value: dict[str, Any] | None) -> dict[int, lake.Column]:
    return {column_id(c): c for c in table_columns(value)}


def _same_schema(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """Two table values have one schema: the same schema id and columns (ids, names, types). Only the
    schemas are parsed (a value's stats, with a entry per column, are most of its parse: issue 47, cold start),
    and equal raw schemas are one schema without a parse."""
    ra, rb = (a or {}).get("schema"), (b or {}).get("schema")
    if ra == rb:
        return True
    sa, sb = lake.Schema.from_raw(ra), lake.Schema.from_raw(rb)
    return sa.schema_id == sb.schema_id and sa.columns == sb.columns


class Context:
    """Reads of one catalog at one snapshot vid, through the per-catalog cache."""

    def __init__(self, cat: CatalogAPI, vid: int) -> None:
        self.cat, self.vid, self.cache = cat, vid, cache_of(cat)

    # ------------------------------------------------------------ commits
    def commit_time(self, vid: int) -> float:
        c = self.commit(vid)
        return c.time if c is not None else 0.0

    # ------------------------------------------------------------ tables
    def tables(self) -> dict[str, Obj]:
        got = self.cache.tables.take(self.vid)
        if got is None:
            got = {lake.name_of(o.path): o for o in self.cat.query(lake.tables_query(), vid=self.vid)}
            self.cache.tables.put(self.vid, got)
        return got

    def table(self, name: str) -> Obj | None:
        return self.tables().get(name)

    def annotations(self, name: str) -> list[Annotation]:
        every = self.cache.all_anns.take(self.vid)
        if every is not None:
            return every.get(name, [])
        got = self.cache.anns.take((name, self.vid))
        if got is None:
            got = self.cache.anns.put((name, self.vid), read_annotations(self.cat, name, vid=self.vid))
        return got

    def load_all_annotations(self) -> None:
        if self.cache.all_anns.take(self.vid) is None:
            self.cache.all_anns.put(self.vid, read_catalog_annotations(self.cat, vid=self.vid))

    def commit(self, vid: int) -> Any:
        got = self.cache.commits.take(vid)
        if got is None:
            found = self.cat.commits(since=vid, until=vid)
            got = self.cache.commits.put(vid, found[0] if found else None)
        return got

    def latest_partitions(self, name: str, since: int) -> list[Obj]:
        """The first-level partitions written by the table's latest data commit after `since`
        (point reads of the paths in that commit's log entry)."""
        tl = self.timeline(name)
        data = tl.data_after(since) if tl else []
        if not data:
            return []
        vid = data[-1][0]
        key = (name, vid, self.vid)
        got = self.cache.partitions.take(key)
        if got is None:
            c = self.commit(vid)
            base = lake.table_path(name) + "/"
            paths = sorted({base + p[len(base):].split("/", 1)[0] for p in (c.paths if c else ())
                            if p.startswith(base) and not lake.is_reserved(p[len(base):])})
            got = [o for o in (self.cat.get(p, vid=self.vid) for p in paths)
                   if o is not None and o.value.get("obj_type") == "partition"]
            self.cache.partitions.put(key, got)
        return got

    # ------------------------------------------------------------ history
    def timeline(self, name: str) -> Timeline | None:
        obj = self.table(name)
        if obj is None:
            return None
        key = (obj.path, obj.vid)
        tl = self.cache.timelines.take(key)
        if tl is None:
            tl = self.cache.timelines.put(key, self._build(name, obj))
        return tl

    def _build(self, name: str, obj: Obj) -> Timeline:
        versions = [v for v in self.cat.history(obj.path) if v.vid <= obj.vid]
        start = 0
        for i, v in enumerate(versions):
            if v.value is None:
                start = i + 1
        versions = versions[start:]
        changes: list[SchemaChange] = []
        data: dict[int, float | None] = {}
        prev: dict[str, Any] | None = None
        for v in versions:
            value = v.value or {}
            stats = value.get("stats") or {}
            ldc = stats.get("last_data_commit")
            if isinstance(ldc, dict) and isinstance(ldc.get("vid"), int):
                data[int(ldc["vid"])] = float(ldc.get("time") or 0.0)
            if prev is not None:
                pst = prev.get("stats") or {}
                moved = (stats.get("row_count"), stats.get("file_count")) != (pst.get("row_count"), pst.get("file_count"))
                if moved and not (isinstance(ldc, dict) and ldc.get("vid") == v.vid):
                    data.setdefault(v.vid, None)
                if not _same_schema(prev, value):
                    changes.append(SchemaChange(v.vid, 0.0, _cols(prev), _cols(value)))
            prev = value
        changes = [SchemaChange(c.vid, self.commit_time(c.vid), c.before, c.after) for c in changes]
        commits = sorted((vid, t if t is not None else self.commit_time(vid)) for vid, t in data.items())
        return Timeline(name, versions[0].vid if versions else obj.vid, [v.vid for v in versions], changes, commits)


def context(cat: CatalogAPI, vid: int) -> Context:
    return Context(cat, vid)
