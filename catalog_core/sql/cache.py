"""What the reader computes per table at a vid, kept per catalog instance.

A vid is immutable: the tables, schemas and file leaves visible at it never change, so the
table list at a vid and each table's `TableSpec` and view body can be reused by later
`run_sql`/`open_duckdb` calls on the same catalog object (measured on the Acme lake: the
772-file `fct_orders` takes 0.8-1.7 s to plan, resolve and turn into SQL, a reuse ~5 ms).

What a vid does not pin is the files on disk: the view body depends on each file's footer
(its columns) and the sandbox on its real path. So an entry also records, per local file, its
`lstat` (device, inode, size, mtime, mode) when it was built, and is used only while every file
still has the same one: a file rewritten, removed, or replaced by a symlink (or reached through
a directory swapped for a symlink: another inode) makes the entry be built again from the
catalog. The check costs one `lstat` per file only where change notification cannot be trusted
(`watch`: inotify on the files and their directories, per process; `SEMCAT_SQL_WATCH=0` turns it
off): elsewhere a check whose files nothing touched drains the inotify queue and stats the
table's root directory, and only a change (or an overflow, a mount) brings the full comparison
back. The entry's `digest` covers the spec, the body and those stats, so a worker's cached
DuckDB database (`worker`) keyed by digests never serves other files than these.

The cache is per catalog object (a weak reference: a closed and dropped catalog drops its
entries) and bounded: at most `MAX_FILES` file specs per catalog, least recently used out."""

from __future__ import annotations

import hashlib
import operator
import os
import pickle
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from catalog_core.sql import watch
from catalog_core.sql.tables import TableSpec

__all__ = ["Entry", "catalog_cache", "clear", "MAX_FILES"]

MAX_FILES = 200_000   # file specs kept per catalog (a 772-file table's entry holds ~0.3 MB)

Sig = tuple[tuple[int, int, int, int, int] | None, ...]


_STAT = operator.attrgetter("st_dev", "st_ino", "st_size", "st_mtime_ns", "st_mode")


def file_sig(spec: TableSpec) -> Sig:
    """Each local file's lstat now (None: missing or unreadable). A warm `run_sql` checks every
    file of the tables it reads (~800 for a 772-file table) on each call, so the common case, every
    file there, loops in C (`map`); a missing or unreadable file takes the loop below."""
    paths = [f.path for f in spec.files if f.local]
    try:
        return tuple(map(_STAT, map(os.lstat, paths)))
    except OSError:
        pass
    out: list[tuple[int, int, int, int, int] | None] = []
    for path in paths:
        try:
            st = os.lstat(path)
        except OSError:
            out.append(None)
            continue
        out.append((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode))
    return tuple(out)


def data_digest(spec: TableSpec, body: str | None, sig: Sig) -> str:
    """The rows' identity for the snapshot cache (`Entry.data`): the view body, each file's path
    and how it is read, and each local file's lstat (`file_sig`), nothing of the vid. A worker
    recomputes it before it copies a table in unasked (`worker`'s preload), so the rows it holds
    under a digest are those of that digest's files."""
    return hashlib.sha256(repr((body, [(f.path, f.local, f.trusted) for f in spec.files], sig)).encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Entry:
    spec: TableSpec
    body: str | None
    sig: Sig
    digest: str
    # The rows' identity for the snapshot cache (`snapcache`): the view body (every file path,
    # column and type, how each file is read) and each local file's lstat, nothing of the vid,
    # so vids with the very same files share it and any other file set has another one.
    data: str = ""
    # The entry's inotify record (`watch.Armed`), once armed by a full check; [None]: the watcher
    # cannot be trusted for its files (remote file system, symlinks, no watches left), lstat only.
    armed: list[watch.Armed | None] = field(default_factory=list, compare=False, repr=False)

    @classmethod
    def make(cls, spec: TableSpec, body: str | None, sig: Sig) -> Entry:
        h = hashlib.sha256(pickle.dumps((spec, body), protocol=pickle.HIGHEST_PROTOCOL))
        h.update(repr(sig).encode())
        return cls(spec, body, sig, h.hexdigest(), data_digest(spec, body, sig))

    def valid(self) -> bool:
        """Do the entry's local files still have the stats recorded when it was built? With the
        process's watcher (`watch`): True without any lstat while nothing the entry's armed record
        depends on changed; else (and on the first check) the full `file_sig` comparison, after
        arming a new record (watches first, then the lstat, so a change after it is queued)."""
        w = watch.watcher()
        slot = self.armed
        rec = slot[0] if slot else None
        if w is None or (slot and rec is None):
            return file_sig(self.spec) == self.sig
        if rec is not None and w.unchanged(rec):
            return True
        paths = [f.path for f in self.spec.files if f.local]
        new = w.arm(paths) if paths else None
        ok = file_sig(self.spec) == self.sig
        if new is not None and ok:
            if not slot:
                watch.finalize(self, slot)
            old = slot[0] if slot else None
            slot[:] = [new]
            if old is not None and old is not rec:   # another thread's record, armed meanwhile
                old.owner.release(old)
        elif new is not None:
            w.release(new)
        elif ok and paths:
            slot[:] = [None]
        if rec is not None:   # changed since armed (or disarmed): the new record, if any, replaces it
            rec.owner.release(rec)
        return ok


class _CatalogCache:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tables: OrderedDict[int, tuple[list[Any], dict[str, dict[str, Any]]]] = OrderedDict()
        self.entries: OrderedDict[tuple[Any, ...], Entry] = OrderedDict()
        self.files = 0

    def get_tables(self, vid: int) -> tuple[list[Any], dict[str, dict[str, Any]]] | None:
        with self.lock:
            got = self.tables.get(vid)
            if got is not None:
                self.tables.move_to_end(vid)
            return got

    def put_tables(self, vid: int, value: tuple[list[Any], dict[str, dict[str, Any]]]) -> None:
        with self.lock:
            self.tables[vid] = value
            while len(self.tables) > 64:
                self.tables.popitem(last=False)

    def get(self, key: tuple[Any, ...]) -> Entry | None:
        with self.lock:
            e = self.entries.get(key)
            if e is not None:
                self.entries.move_to_end(key)
        if e is not None and not e.valid():
            with self.lock:
                if self.entries.get(key) is e:
                    del self.entries[key]
                    self.files -= len(e.spec.files) + 1
            return None
        return e

    def peek(self, key: tuple[Any, ...]) -> Entry | None:
        """The entry of `key` without checking its files (the caller checks them with `valid`
        before it uses what it read with the entry, and `drop`s it when they changed)."""
        with self.lock:
            e = self.entries.get(key)
            if e is not None:
                self.entries.move_to_end(key)
            return e

    def drop(self, key: tuple[Any, ...], e: Entry) -> None:
        """Forget `e` (a `peek`ed entry whose files changed), unless another replaced it meanwhile."""
        with self.lock:
            if self.entries.get(key) is e:
                del self.entries[key]
                self.files -= len(e.spec.files) + 1

    def put(self, key: tuple[Any, ...], e: Entry) -> None:
        with self.lock:
            old = self.entries.pop(key, None)
            if old is not None:
                self.files -= len(old.spec.files) + 1
            self.entries[key] = e
            self.files += len(e.spec.files) + 1
            while self.files > MAX_FILES and len(self.entries) > 1:
                _, out = self.entries.popitem(last=False)
                self.files -= len(out.spec.files) + 1


_caches: weakref.WeakKeyDictionary[Any, _CatalogCache] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def catalog_cache(cat: Any) -> _CatalogCache | None:
    """The cache of catalog object `cat` (None: it cannot be weakly referenced, so no cache)."""
    with _lock:
        try:
            got = _caches.get(cat)
            if got is None:
                got = _caches[cat] = _CatalogCache()
        except TypeError:
            return None
    return got


def clear() -> None:
    """Forget every catalog's entries (tests, benchmarks)."""
    with _lock:
        _caches.clear()
