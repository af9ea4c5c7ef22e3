"""The embedded catalog: `Catalog.open(dir)` — the engine API of DESIGN.md."""

from __future__ import annotations

import bisect
import os
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from catalog_core._engine import branches as _branches
from catalog_core._engine.diff import diff as _diff
from catalog_core._engine.executor import ScanHook, execute
from catalog_core._engine.keys import key_of, path_of_key
from catalog_core._engine.mvocc import TransactionManager
from catalog_core._engine.planning import plan_files as _plan_files
from catalog_core._engine.relocate import absolute, lake_root
from catalog_core._engine.storage import Store
from catalog_core._engine.txn import Transaction
from catalog_core._gcpause import gc_paused
from catalog_core.errors import (
    AlreadyExistsError,
    CatalogError,
    InvalidValueError,
    NotFoundError,
    SnapshotNotFoundError,
)
from catalog_core.model import Branch, Change, Commit, FileObj, Obj, QueryStats, Snapshot, Version, iso_time, parse_time
from catalog_core.paths import ROOT, split
from catalog_core.query import parse
from catalog_core.query.ast import Query
from catalog_core.writeset import WriteOp, make_op

__all__ = ["Catalog"]

_FULL = [(None, None)]


def _parse_time(text: str) -> float | None:
    return parse_time(text) if isinstance(text, str) else None


def _is_text(s: str) -> bool:
    """False for a str holding a lone surrogate (it cannot be stored as UTF-8)."""
    try:
        s.encode()
    except UnicodeEncodeError:
        return False
    return True


class Catalog:
    """A catalog stored in a local data directory (`catalog/` RocksDB + `warehouse/`)."""

    def __init__(self, data_dir: str, protocol: str = "ospl", file_cache_mb: float = 64,
                 object_cache_mb: float = 32) -> None:
        for name, mb in (("file_cache_mb", file_cache_mb), ("object_cache_mb", object_cache_mb)):
            if isinstance(mb, bool) or not isinstance(mb, (int, float)) or not mb >= 0:
                raise InvalidValueError(f"{name} must be a number of MiB >= 0 (0 turns the cache off), got {mb!r}")
        self.data_dir = os.path.abspath(data_dir)
        self.warehouse = os.path.join(self.data_dir, "warehouse")
        os.makedirs(self.warehouse, exist_ok=True)
        self._store = Store(os.path.join(self.data_dir, "catalog"))
        self._store.warehouse = self.warehouse  # stored-relative locations and paths resolve against it
        self.lake_root = lake_root(self.data_dir)  # paths inside a marked lake root are stored relative too
        self._store.files.max_bytes = int(file_cache_mb * (1 << 20))
        self._store.objects.max_bytes = int(object_cache_mb * (1 << 20))
        self._mgr = TransactionManager(self._store, protocol)
        self._times = [rec["time"] for _v, rec in self._store.commit_records(0, self._store.latest_vid)]
        self._mgr._last_time = self._times[-1] if self._times else 0.0
        self._mgr.attach_commit_times(self._times)
        self._store.on_foreign = self._foreign
        self._store.release_turn = self._release_turn
        self._snap_lock = threading.Lock()
        self._publishing = _branches.Publishing()

    def _foreign(self, lo: int, hi: int) -> None:
        """Commits lo..hi were made by another process on this directory (see Store): their times, and
        the write log's blind spot."""
        times = [rec["time"] for _v, rec in self._store.commit_records(lo, hi)]
        self._times.extend(times)
        if times:
            self._mgr._last_time = max(self._mgr._last_time, times[-1])
        self._mgr.foreign_vid = hi

    def _release_turn(self) -> None:
        """Another process asks to write: give the writer's turn between commit groups."""
        with self._mgr._leader:
            self._store.give_turn()

    def refresh(self) -> int:
        """See now what other processes committed (a reader catches up every quarter second anyway);
        returns the latest vid."""
        self._store.catch_up()
        return self._store.latest_vid

    @classmethod
    def open(cls, data_dir: str, protocol: str = "ospl", file_cache_mb: float = 64,
             object_cache_mb: float = 32) -> "Catalog":
        """Open (creating if missing) the catalog in `data_dir`. `protocol`: ospl | osl | mgl.
        `file_cache_mb` bounds the memory plan_files keeps for recently planned partitions,
        `object_cache_mb` the current versions `get` keeps (at most 50,000 objects); 0 turns
        either cache off."""
        return cls(data_dir, protocol, file_cache_mb, object_cache_mb)

    @property
    def protocol(self) -> str:
        return self._mgr.protocol

    @property
    def latest_vid(self) -> int:
        return self._store.latest_vid

    def close(self) -> None:
        self._mgr.closed = True
        self._store.close()

    def __enter__(self) -> "Catalog":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---------------------------------------------------------------- refs
    def resolve(self, ref: int | str | None) -> int:
        """A vid, a snapshot name, or an ISO-8601 time (the last commit at or before it)."""
        latest = self._store.latest_vid
        if ref is None:
            return latest
        if isinstance(ref, bool):
            raise InvalidValueError(f"snapshot ref {ref!r} is not a vid, snapshot name or ISO time")
        if isinstance(ref, str) and ref.isdigit() and not ref.isascii():
            raise InvalidValueError(f"snapshot ref {ref!r} is written with non-ASCII digits; write a vid with "
                                    "the digits 0-9, e.g. '42'", ref=ref)
        if isinstance(ref, int) or (isinstance(ref, str) and ref.isascii() and ref.isdigit()):
            vid = int(ref)
            if not 0 <= vid <= latest:
                raise SnapshotNotFoundError(f"vid {vid} does not exist; the latest vid is {latest}", vid=vid)
            return vid
        if not isinstance(ref, str) or not ref:
            raise InvalidValueError(f"snapshot ref {ref!r} must be a vid, a snapshot name or an ISO-8601 time")
        if not _is_text(ref):
            raise InvalidValueError(f"snapshot ref {ref!r} is not valid Unicode text (it holds a lone surrogate)",
                                    ref=ref.encode("utf-8", "backslashreplace").decode())
        snap = self._store.snapshot_get(ref)
        if snap is not None:
            named: int = snap[0]
            return named
        ts = _parse_time(ref)
        if ts is None:
            raise SnapshotNotFoundError(f"{ref!r} is neither a snapshot name nor an ISO-8601 time; "
                                "list snapshots with snapshots()", ref=ref)
        idx = bisect.bisect_right(self._times, ts) - 1
        if idx < 0:
            raise SnapshotNotFoundError(f"{ref!r} is before the catalog was created", ref=ref)
        return min(idx, latest)

    # ---------------------------------------------------------------- reads
    def _get_at(self, path: str, vid: int) -> Obj | None:
        hit = self._store.get(path, vid)
        return None if hit is None else Obj(path, hit[0], hit[1], hit[2])

    def get(self, path: str, vid: int | str | None = None) -> Obj | None:
        """The object at `path` at `vid` (default: latest), None if absent. Its value is
        read-only (`copy.deepcopy` it to change it): the current version of an object is
        served from the current-object cache (see `_engine.objcache`), shared by every reader."""
        objects = self._store.objects
        if vid is None:
            v = self._store.latest_vid
            try:
                hit = objects.get(path, v)
            except TypeError:  # unhashable: split says what is wrong with it
                hit = None
            if hit is not None:
                return hit
            split(path)
        else:
            split(path)
            v = self.resolve(vid)
            hit = objects.get(path, v)
            if hit is not None:
                return hit
        floor = objects.floor(path)  # read after `v` was taken, before the store is
        got = self._store.get_frozen(path, v)
        if got is None:
            return None
        obj = Obj(path, absolute(got[0], self.warehouse), got[1], got[2])
        if got[3] >= 0:
            objects.put(floor, v, obj, 3 * got[3])
        return obj

    def iter_query(self, expr: str | Query, vid: int | str | None = None,
                   stats: QueryStats | None = None) -> Iterator[Obj]:
        """Stream the objects a path query matches at `vid` (see `query`)."""
        query = parse(expr) if isinstance(expr, str) else expr
        return self._absolute(execute(self._store, query, self.resolve(vid), None, stats))

    def _absolute(self, objs: Iterator[Obj]) -> Iterator[Obj]:
        """Objects with their stored-relative location or path made absolute (see `relocate`)."""
        wh = self.warehouse
        for obj in objs:
            value = absolute(obj.value, wh)
            yield obj if value is obj.value else Obj(obj.path, value, obj.vid, obj.leaf)

    def query(self, expr: str | Query, vid: int | str | None = None,
              stats: QueryStats | None = None) -> list[Obj]:
        with gc_paused():
            return list(self.iter_query(expr, vid, stats))

    def explain(self, expr: str | Query, vid: int | str | None = None) -> QueryStats:
        """Run the query and return its work counters instead of its results."""
        stats = QueryStats()
        for _ in self.iter_query(expr, vid, stats):
            pass
        return stats

    def children(self, path: str, vid: int | str | None = None) -> list[Obj]:
        v = self.resolve(vid)
        wh = self.warehouse
        return [Obj(path.rstrip("/") + "/" + i if path != ROOT else "/" + i, absolute(val, wh), w, leaf)
                for i, val, w, leaf, _k, _p in self._store.scan_children(path, v, _FULL)]

    def history(self, path: str) -> list[Version]:
        """Every committed value of one object, oldest first (value None: removed)."""
        key = key_of(path)
        out = [Version(path, s, e, v) for s, e, v in self._store.inner_versions(key)]
        for lifetime in self._store.leaf_lifetimes(key) or ():
            create, tomb = lifetime[0], lifetime[1]
            val = self._store.leaf_value(lifetime)
            out.append(Version(path, create, tomb or None, val))
            if tomb:
                out.append(Version(path, tomb, None, None))
        out.sort(key=lambda v: v.vid)
        return [v if v.value is None else Version(v.path, v.vid, v.end_vid, absolute(v.value, self.warehouse))
                for v in out]

    def commits(self, since: int | str | None = None, until: int | str | None = None,
                prefix: str | None = None, limit: int | None = None) -> list[Commit]:
        """Commits with since <= vid <= until (refs as for resolve; a time `since` starts at the
        first commit at or after it), newest first when `limit` cuts the list; `prefix` keeps
        commits that touched a path under it."""
        lo = self._since_vid(since)
        hi = self.resolve(until) if until is not None else self._store.latest_vid
        out: list[Commit] = []
        pre = None if prefix in (None, ROOT) else prefix.rstrip("/")
        for vid, rec in self._store.commit_records(lo, hi, backwards=limit is not None):
            paths = rec.get("paths", [])
            if pre is not None and not any(p == pre or p.startswith(pre + "/") for p in paths):
                continue
            out.append(Commit(vid, rec["time"], rec.get("author", ""), rec.get("message", ""),
                              tuple(paths), rec.get("meta") or {}))
            if limit is not None and len(out) >= limit:
                break
        return out

    def _since_vid(self, since: int | str | None) -> int:
        """The first vid of `commits(since=...)`: a vid or snapshot as given; for a time, the first
        commit at or after it (resolve gives the last one at or before it)."""
        if since is None:
            return 0
        if isinstance(since, str) and not since.isdigit() and self._store.snapshot_get(since) is None:
            ts = _parse_time(since)
            if ts is not None:
                return bisect.bisect_left(self._times, ts)
        return self.resolve(since)

    def plan_files(self, table: str, where: str | None = None, vid: int | str | None = None,
                   stats: QueryStats | None = None) -> list[FileObj]:
        """See `CatalogAPI.plan_files`: the file leaves of a table that may hold rows matching
        `where`, decoded on first access."""
        with gc_paused():
            return _plan_files(self._store, table, where, self.resolve(vid), stats)

    def engine_info(self) -> dict[str, Any]:
        """What the embedded engine holds right now, for tests, benchmarks and operators: the
        protocol, commit groups written since open, write-log records kept for validation, open
        read vids (vid -> transactions reading it) and each cache's counters."""
        mgr, store = self._mgr, self._store
        with mgr._state:
            active = dict(mgr._active)
            log_records = len(mgr.log)
        return {"protocol": mgr.protocol, "latest_vid": store.latest_vid, "groups": mgr.groups,
                "write_log_records": log_records, "active_read_vids": active,
                "caches": {"files": store.files.info(), "leaf_lists": store.leaf_lists.info(),
                           "objects": store.objects.info(),
                           "leaf_values": {"entries": len(store.leaf_values)}}}

    def leaf_source(self, path: str, vid: int | str | None = None) -> tuple[str, int] | None:
        """The stored leaf that `path` shows at `vid`: (primary path, create vid). A clone's leaves
        name the original they share (paper §5.5: clone copies no leaf); None if no leaf is visible."""
        v = self.resolve(vid)
        split(path)
        try:
            return self._primary(path, v)
        except NotFoundError:
            return None

    def clear_caches(self) -> None:
        """Forget the leaf lists, objects and decoded values kept in memory (benchmarks measure
        cold reads)."""
        self._store.files.clear()
        self._store.objects.clear()
        self._store.leaf_lists.clear()
        self._store.leaf_values.clear()

    def relocate(self, old: str | None = None, new: str | None = None) -> int:
        """Re-point the catalog's files (the Hadoop-catalog way: no commit, every stored version): table
        locations and file paths under `old` move under `new` (both absolute directories, given together),
        and every location or path inside this directory's warehouse is stored relative to it (a catalog
        written before relative paths is migrated by a plain `relocate()`), and so is every one inside the
        lake root holding this directory, when it is marked (`relocate.MARKER`). Returns how many stored
        values changed."""
        from catalog_core._engine.relocate import relocate_store

        if (old is None) != (new is None):
            raise InvalidValueError("give both the old and the new location (or neither, to store the paths "
                                    "inside the warehouse relative to it)", old=old, new=new)
        if old is not None and new is not None:
            if not (os.path.isabs(old.removeprefix("file://")) and os.path.isabs(new.removeprefix("file://"))):
                raise InvalidValueError(f"re-point from and to absolute directories, got {old!r} -> {new!r}",
                                        old=old, new=new)
            old, new = os.path.normpath(old), os.path.normpath(new)
        with self._mgr._leader:  # no commit group writes meanwhile
            self._store.ensure_writer()
            n = relocate_store(self._store, self.warehouse, old, new, root=self.lake_root)
        self.clear_caches()
        if n:
            from catalog_core._engine import hooks

            hooks.after_relocate(self)   # e.g. Iceberg journals naming the old paths are dropped
        return n

    # ---------------------------------------------------------------- snapshots, clone
    def snapshot(self, name: str, vid: int | str | None = None) -> Snapshot:
        if not isinstance(name, str) or not name.strip() or name.isdigit() or _parse_time(name) is not None:
            raise InvalidValueError(f"snapshot name {name!r} must be non-empty text that is neither a vid nor "
                                    "an ISO time, e.g. 'eod-2025-06-01'")
        if not _is_text(name):
            raise InvalidValueError(f"snapshot name {name!r} is not valid Unicode text (it holds a lone surrogate); "
                                    "use a name such as 'eod-2025-06-01'")
        target = self.resolve(vid)
        with self._snap_lock, self._mgr._leader:
            self._store.ensure_writer()
            if self._store.snapshot_get(name) is not None:
                raise AlreadyExistsError(f"snapshot {name!r} already exists and snapshots are immutable; "
                                         "pick another name", name=name)
            snap = Snapshot(name, target, time.time())
            wb = self._store.new_batch()
            self._store.put(wb, "snapshots", name.encode(), [snap.vid, snap.time])
            self._store.db.write(wb, self._store._sync)
        return snap

    def snapshots(self) -> list[Snapshot]:
        return sorted((Snapshot(n, v[0], v[1]) for n, v in self._store.snapshot_items()), key=lambda s: s.vid)

    def _clone_ops(self, src: str, dst: str, vid: int, hook: ScanHook | None) -> list[WriteOp]:
        split(dst)
        if dst == src or dst.startswith(src.rstrip("/") + "/"):
            raise InvalidValueError(f"cannot clone {src!r} into its own subtree {dst!r}")
        root = self._get_at(src, vid)
        if root is None:
            raise NotFoundError(f"cannot clone {src!r}: it does not exist at vid {vid}", path=src)
        ops: list[WriteOp] = []
        # Depth-first, parents before children, children in key order; an explicit stack instead
        # of recursion, so a subtree as deep as paths allow never hits the recursion limit.
        stack: list[tuple[str, str, dict[str, Any], bool]] = [(src, dst, root.value, root.leaf)]
        while stack:
            s, d, obj_value, leaf = stack.pop()
            if leaf:
                ops.append(make_op("leafref", d, ref=self._primary(s, vid)))
                continue
            ops.append(make_op("add", d, obj_value))
            if hook is not None:
                hook(s, None, _FULL, True)  # a recorded scan whose objects are all read
            kids = [(f"{s}/{cid}" if s != ROOT else f"/{cid}", f"{d}/{cid}", val, cleaf)
                    for cid, val, _w, cleaf, _k, _p in self._store.scan_children(s, vid, _FULL)]
            stack.extend(reversed(kids))
        return ops

    def _primary(self, path: str, vid: int) -> tuple[str, int]:
        key = key_of(path)
        for create, tomb, _value, ref in reversed(self._store.leaf_lifetimes(key) or []):
            if create <= vid and (tomb == 0 or tomb > vid):
                return (path_of_key(ref[0]), ref[1]) if ref is not None else (path, create)
        raise NotFoundError(f"leaf {path!r} is not visible at vid {vid}", path=path)

    def clone(self, src: str, dst: str, vid: int | str | None = None, author: str = "",
              message: str = "") -> int:
        """Zero-copy clone (paper §5.5): copy the non-leaf subtree of `src` at `vid` to `dst`;
        leaves are shared through the primary-path indirection. Returns the commit vid."""
        split(src)
        split(dst)  # bad paths are path errors, before they reach the commit message
        v = self.resolve(vid)
        with self.transaction(author=author, message=message or f"clone {src} -> {dst} @ {v}") as txn:
            for op in self._clone_ops(src, dst, v, None):
                txn._record(op)
            for op in _branches.branch_ops(self, src, dst, v):  # the clone is a branch of src
                txn._record(op)
        cloned: int | None = txn.vid
        assert cloned is not None  # committed on exit
        return cloned

    # ---------------------------------------------------------------- diff, branches
    def diff(self, from_ref: int | str | None, to_ref: int | str | None = None,
             prefix: str | None = None) -> Iterator[Change]:
        """The objects added, removed and updated between two snapshots (refs as for resolve;
        `to_ref` None: latest) under `prefix`, parents first, streamed. Found through the
        commit log: the cost follows the number of changes, not the size of the tree."""
        lo, hi = self.resolve(from_ref), self.resolve(to_ref)
        if prefix is not None:
            split(prefix)
        if lo > hi:
            raise InvalidValueError(f"diff goes forward in time: from_ref {from_ref!r} (vid {lo}) is after "
                                    f"to_ref {to_ref!r} (vid {hi}); swap them", from_vid=lo, to_vid=hi)
        wh = self.warehouse
        return (Change(c.path, c.kind, absolute(c.before, wh), absolute(c.after, wh), c.vid, c.leaf)
                for c in _diff(self._store, lo, hi, prefix))

    def branches(self, prefix: str | None = None, vid: int | str | None = None) -> list[Branch]:
        """Branches (made by clone) whose root is under `prefix`, by path."""
        return _branches.list_branches(self, prefix, self.resolve(vid))

    def publish(self, branch: str, onto: str, author: str = "", message: str = "", keep: bool = True) -> int:
        """Write-audit-publish: apply every change made on `branch` since its base to `onto` (its
        source) in one commit, merged three-way; returns the commit vid. Raises ConflictError
        naming every conflicting path (nothing written). `keep`: the branch stays, its base
        moved to this publish; else it is dropped in the same commit."""
        return _branches.publish(self, branch, onto, author, message, keep)

    def drop_branch(self, branch: str, author: str = "", message: str = "") -> int:
        """Remove a branch (its subtree and its record) in one commit; returns the vid."""
        return _branches.drop(self, branch, author, message)

    # ---------------------------------------------------------------- writes
    def transaction(self, author: str = "", message: str = "", meta: dict[str, Any] | None = None,
                     time: float | str | datetime | None = None) -> Transaction:
        """A read-write transaction (see `catalog_core.api.TransactionAPI`). `time` backdates its
        commit, for imports and simulated histories: seconds since the epoch, a datetime or ISO-8601
        text, not earlier than the latest commit's time (checked now and again at commit)."""
        if self._mgr.closed:
            raise CatalogError("the catalog is closed; reopen it to start a transaction")
        return Transaction(self, author, message, meta, time=self.commit_time_of(time))

    def commit_time_of(self, time: float | str | datetime | None) -> float | None:
        """Check a backdated commit time; None stays None (the commit takes the clock's time)."""
        if time is None:
            return None
        ts = parse_time(time)
        if ts is None:
            raise InvalidValueError(f"time={time!r} is not a commit time; give seconds since the epoch, a "
                                    "datetime or ISO-8601 text such as '2025-03-01T02:00:00Z'")
        latest = self._mgr._last_time
        if ts < latest:
            raise InvalidValueError(f"time {iso_time(ts)} is earlier than the latest commit's time "
                                    f"{iso_time(latest)}; commit times never go backwards: backdate to that "
                                    "time or later", time=ts, latest_time=latest)
        return ts
