"""RocksDB layout (paper §5.3) and versioned reads.

Column families:
  inner      key(path) -> [cur_vid, value|None]        current value of a non-leaf object
                                                       (None: removed at cur_vid)
  delta      key(path) NUL inv(start_vid) -> [start_vid, end_vid, value|None]
                                                       past versions, newest first
  leaf       key(path) -> [[create_vid, tomb_vid|0, packed value|None, ref|None], ...]
                                                       every lifetime of a leaf path; a clone's
                                                       lifetime holds ref = [primary key, create_vid].
                                                       The value stays packed so that visibility
                                                       checks during scans decode only the header.
  commits    vid(8 bytes) -> {time, author, message, paths, meta}
  snapshots  name -> [vid, time]
  default    b"latest_vid" -> vid
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, cast

from msgpack import unpackb as _unpackb
from rocksdict import AccessType, BlockBasedOptions, Options, Rdict, ReadOptions, WriteBatch, WriteOptions

from catalog_core._engine.filecache import FileListCache, Floors
from catalog_core._engine.keys import SEP, children_prefix, key_of, path_of_key
from catalog_core._engine.leafcache import LeafValueCache
from catalog_core._engine.objcache import ObjectCache
from catalog_core.codec import FILE_JSON, inv_vid_bytes, pack, unpack, unpack_leaf, vid_bytes
from catalog_core.errors import CatalogError
from catalog_core.frozen import freeze, freeze_leaf, freeze_packed
from catalog_core.model import FileObj
from catalog_core.paths import successor

_Pairs = Iterator[tuple[bytes, bytes]]  # what rocksdict's items() yield for our byte keys and values

__all__ = ["Store", "Entry"]

CFS = ("inner", "delta", "leaf", "commits", "snapshots")
LATEST = b"latest_vid"

# (obj_id, value, vid that wrote it, is_leaf, key, packed leaf value | None for inner objects)
Entry = tuple[str, dict[str, Any], int, bool, bytes, "bytes | None"]


# The WAL kept on disk, at most (about: RocksDB checks it when it switches WAL files). The small
# column families (commits, snapshots, default) take a few bytes a commit and rarely fill their
# memtable, so a WAL file is kept until they are flushed: with RocksDB's default cap (4x all the
# memtables: 2.5 GB here) the 10M-object build of bench_scale held 3.4 GB of WAL beside 0.57 GB of
# SST files. Past this cap RocksDB flushes the column families that keep the oldest WAL file.
MAX_TOTAL_WAL = 256 << 20

# RocksDB's info logs kept beside the current LOG. Every open rolls LOG to LOG.old.<time>, and RocksDB
# keeps 1,000 of them by default: a catalog that every CLI command opens grew a file per command.
KEEP_INFO_LOGS = 3


def _options() -> Options:
    opt = Options(raw_mode=True)
    opt.create_if_missing(True)
    opt.create_missing_column_families(True)
    opt.set_max_background_jobs(2)
    opt.increase_parallelism(2)
    opt.set_max_total_wal_size(MAX_TOTAL_WAL)
    opt.set_keep_log_file_num(KEEP_INFO_LOGS)
    return opt


def _cf_options(name: str) -> Options:
    """Bloom filters on the point-read column families: a leaf add checks that its path is absent
    (inner and leaf), and an absent key otherwise costs a lookup in every L0 file and level, so a
    bulk load's checks grew with the tree (16.4K objects/s building the first 1.1M objects of
    bench_scale's 10M tree, 12.7K/s for the next 9.9M). 10 bits a key, ~1% false positives."""
    opt = Options(raw_mode=True)
    if name in ("inner", "leaf"):
        table = BlockBasedOptions()
        table.set_bloom_filter(10, False)
        opt.set_block_based_table_factory(table)
    return opt


# How long a process waits for the writer's turn (the current writer finishes its commit group and lets
# go: see Store.ensure_writer) before its write fails with a clear error; how often a reader catches up.
WRITER_WAIT_S = float(os.environ.get("SEMCAT_WRITER_WAIT_S", "30"))
SYNC_S = 0.25
RETIRE_S = 60.0  # a secondary replaced on a new MANIFEST is closed this long after (reads may still use it)


def _flock(fd: int, how: int) -> bool:
    import fcntl

    try:
        fcntl.flock(fd, how)
    except BlockingIOError:
        return False
    return True


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Store:
    """One process's view of a catalog directory (docs/engine.md, Many processes): the writer holds
    RocksDB's primary instance (and `semcat.lock`), every other process reads through a secondary
    instance that catches up with the primary every SYNC_S seconds. Any process may write: it asks for
    the writer's turn (a shared lock on `semcat.want`, which the writer polls), the writer finishes its
    commit group and lets go, and the asker opens the primary, takes in the commits it has not seen
    (`on_foreign`), and writes; it keeps the turn until someone else asks. One process alone on a
    directory is the writer from open to close, as before."""

    def __init__(self, path: str) -> None:
        import fcntl

        os.makedirs(path, exist_ok=True)
        self.path = path
        self._db_path = os.path.join(path, "rocksdb")
        self._lock_fd = os.open(os.path.join(path, "semcat.lock"), os.O_CREAT | os.O_RDWR, 0o644)
        self._want_fd = os.open(os.path.join(path, "semcat.want"), os.O_CREAT | os.O_RDWR, 0o644)
        self._sync = WriteOptions()
        self._sync.sync = True
        self._closed = False
        self._close_lock = threading.Lock()
        self._switch = threading.RLock()  # ingesting commits, taking and giving the writer's turn
        self.warehouse: str | None = None  # set by Catalog: what stored-relative file paths resolve against
        # (lo, hi): commits lo..hi were written by another process; called before latest_vid moves to hi
        self.on_foreign: Callable[[int, int], None] | None = None
        self.release_turn: Callable[[], None] | None = None  # set by Catalog: give the turn (under its commit lock)
        self._primary: Rdict | None = None
        self._secondary: Rdict | None = None
        self._secondary_dir: str | None = None
        self._manifest = b""
        self._retired: list[tuple[float, Rdict]] = []  # (when, secondary) replaced on a new MANIFEST
        self.writer = False
        try:
            if _flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB):
                self._become_writer_now()
            elif os.path.isfile(os.path.join(self._db_path, "CURRENT")):
                self._open_secondary()
            else:  # another process is creating this catalog: wait for it to be there
                self.ensure_writer()
        except BaseException:
            self._close_fds()
            raise
        raw = self.db.get(LATEST)
        if raw is None:
            self.ensure_writer()
            self._bootstrap()
            raw = self.db.get(LATEST)
        self.latest_vid: int = int.from_bytes(cast(bytes, raw), "big")
        floors = Floors(self.latest_vid)
        self.files = FileListCache(floors)
        self.leaf_lists = FileListCache(floors, max_bytes=32 << 20)
        self.leaf_values = LeafValueCache()
        self.objects = ObjectCache(self.latest_vid)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sync_loop, name="semcat-store-sync", daemon=True)
        self._thread.start()

    # ---------------------------------------------------------------- instances
    def _use(self, db: Rdict) -> None:
        """Read (and, on the primary, write) through `db` from now on."""
        self.db = db
        self.cf = {name: db.get_column_family(name) for name in CFS}
        self.handle = {name: db.get_column_family_handle(name) for name in CFS}

    def _open_primary(self) -> Rdict:
        cfs = {name: _cf_options(name) for name in CFS}
        deadline = time.monotonic() + WRITER_WAIT_S
        while True:
            try:
                return Rdict(self._db_path, _options(), column_families=cfs)
            except Exception as exc:  # RocksDB's LOCK: the last writer's reads are still finishing
                if "lock" not in str(exc).lower() or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def _become_writer_now(self) -> None:
        self._primary = self._open_primary()
        os.ftruncate(self._lock_fd, 0)
        os.pwrite(self._lock_fd, str(os.getpid()).encode(), 0)
        self._use(self._primary)
        self.writer = True

    def _open_secondary(self) -> None:
        import shutil
        import uuid

        base = os.path.join(self.path, "secondary")
        os.makedirs(base, exist_ok=True)
        for name in os.listdir(base):  # the secondaries of processes that are gone (kill -9)
            pid = name.partition("-")[0]
            if pid.isdigit() and not _pid_alive(int(pid)):
                shutil.rmtree(os.path.join(base, name), ignore_errors=True)
        self._secondary_dir = os.path.join(base, f"{os.getpid()}-{uuid.uuid4().hex[:8]}")
        opt = Options(raw_mode=True)
        opt.set_max_open_files(-1)  # a secondary keeps its files open: the writer may delete them
        cfs = {name: _cf_options(name) for name in CFS}
        self._manifest = self._current_manifest()
        self._secondary = Rdict(self._db_path, opt, column_families=cfs,
                                access_type=AccessType.secondary(self._secondary_dir))
        self._use(self._secondary)

    def _current_manifest(self) -> bytes:
        """The primary's MANIFEST as CURRENT names it: a new primary (another process took the turn and
        opened the directory afresh) starts a new one."""
        try:
            with open(os.path.join(self._db_path, "CURRENT"), "rb") as fh:
                return fh.read()
        except OSError:
            return b""

    def _reopen_secondary(self) -> None:
        """A secondary does not follow its primary into a new MANIFEST: catching up then stops at the
        commits the old one recorded (a second process that took the turn, committed and closed, then a
        third that did the same: the reader saw the first's commits only). Open a fresh secondary on the
        new MANIFEST; the old instance is retired, not closed, as reads may still run on it: it is closed
        RETIRE_S seconds later (or with the store)."""
        import shutil

        old, old_dir = self._secondary, self._secondary_dir
        self._open_secondary()
        now = time.monotonic()
        keep = []
        for when, db in self._retired:
            if now - when > RETIRE_S:
                db.close()
            else:
                keep.append((when, db))
        self._retired = keep
        if old is not None:
            self._retired.append((now, old))
        if old_dir is not None:
            shutil.rmtree(old_dir, ignore_errors=True)

    def writer_pid(self) -> str:
        try:
            return os.pread(self._lock_fd, 32, 0).decode(errors="replace").strip() or "?"
        except OSError:
            return "?"

    # ---------------------------------------------------------------- the writer's turn
    def ensure_writer(self) -> None:
        """Take the writer's turn if this process does not hold it (the caller holds the commit lock):
        ask (semcat.want), wait for the writer to let go (at most WRITER_WAIT_S), open the primary and
        take in the commits other processes made meanwhile."""
        import fcntl

        if self.writer:
            return
        with self._switch:
            if self.writer:
                return
            fcntl.flock(self._want_fd, fcntl.LOCK_SH)
            try:
                deadline = time.monotonic() + WRITER_WAIT_S
                while not _flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB):
                    if time.monotonic() > deadline:
                        raise CatalogError(
                            f"catalog directory {self.path!r} is being written by another process (pid "
                            f"{self.writer_pid()}), which did not let go within {WRITER_WAIT_S:g} s; try again "
                            "(SEMCAT_WRITER_WAIT_S sets the wait)", retryable=True)
                    time.sleep(0.01)
            finally:
                fcntl.flock(self._want_fd, fcntl.LOCK_UN)
            try:
                self._become_writer_now()
            except BaseException:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
                raise
            if hasattr(self, "latest_vid"):
                self._take_in()

    def give_turn(self) -> None:
        """Let another process write: read through a caught-up secondary, close the primary (the caller
        holds the commit lock, so no group is writing)."""
        import fcntl
        import gc

        with self._switch:
            if not self.writer or self._closed:
                return
            primary = self._primary
            assert primary is not None
            primary.flush_wal(True)
            if self._secondary is None:
                self._open_secondary()
            else:
                self._secondary.try_catch_up_with_primary()
                self._use(self._secondary)
            self.writer = False
            self._primary = None
            primary.close()
            del primary
            gc.collect()
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def someone_waits(self) -> bool:
        import fcntl

        if not _flock(self._want_fd, fcntl.LOCK_EX | fcntl.LOCK_NB):
            return True
        fcntl.flock(self._want_fd, fcntl.LOCK_UN)
        return False

    def catch_up(self) -> None:
        """A reader: take in the commits the writer made since the last catch-up."""
        with self._switch:
            if self.writer or self._closed or self._secondary is None:
                return
            self._secondary.try_catch_up_with_primary()
            if self._current_manifest() not in (self._manifest, b""):
                self._reopen_secondary()
            self._take_in()

    def _take_in(self) -> None:
        """Commits written by other processes (up to LATEST as this instance reads it) become visible here:
        the caches forget what they wrote (as a local commit does), then latest_vid moves."""
        raw = self.db.get(LATEST)
        hi = int.from_bytes(cast(bytes, raw), "big") if raw is not None else 0
        lo = self.latest_vid + 1
        if hi < lo:
            return
        paths: list[str] = []
        for _vid, rec in self.commit_records(lo, hi):
            paths.extend(rec.get("paths") or ())
        keys = [key_of(p) for p in paths]
        self.written_leaves(keys, hi)
        self.objects.written(paths, hi)
        self.leaf_values.clear()
        if self.on_foreign is not None:
            self.on_foreign(lo, hi)
        self.latest_vid = hi

    def _sync_loop(self) -> None:
        while not self._stop.wait(SYNC_S):
            try:
                if self.writer:
                    if self.release_turn is not None and self.someone_waits():
                        self.release_turn()
                else:
                    self.catch_up()
            except Exception:  # a reader keeps serving what it has; the next round tries again
                if self._closed:
                    return

    def _bootstrap(self) -> None:
        wb = WriteBatch(raw_mode=True)
        wb.put(key_of("/"), pack([0, {"obj_type": "root"}]), self.handle["inner"])
        wb.put(vid_bytes(0), pack({"time": 0.0, "author": "semcat", "message": "create catalog",
                                   "paths": ["/"], "meta": {}}), self.handle["commits"])
        wb.put(LATEST, vid_bytes(0))
        self.db.write(wb, self._sync)

    def _close_fds(self) -> None:
        for fd in (self._lock_fd, self._want_fd):
            try:
                os.close(fd)
            except OSError:
                pass

    def close(self) -> None:
        import gc
        import shutil

        if hasattr(self, "_stop"):
            self._stop.set()
            if self._thread is not threading.current_thread():
                self._thread.join(5)
        with self._close_lock, self._switch:
            if self._closed:
                return
            self._closed = True
            if self._primary is not None:
                self._primary.flush_wal(True)
            # Column-family handles keep the DB alive; drop them so close() releases RocksDB's LOCK.
            self.cf.clear()
            self.handle.clear()
            for db in (self._primary, self._secondary, *(r for _, r in self._retired)):
                if db is not None:
                    db.close()
            self._retired.clear()
            self._primary = self._secondary = None
            del self.db
            gc.collect()
            if self._secondary_dir is not None:
                shutil.rmtree(self._secondary_dir, ignore_errors=True)
            self._close_fds()

    # ---------------------------------------------------------------- point reads
    def inner_current(self, key: bytes) -> list[Any] | None:
        raw = self.cf["inner"].get(key)
        return None if raw is None else unpack(raw)

    def leaf_lifetimes(self, key: bytes) -> list[Any] | None:
        raw = self.cf["leaf"].get(key)
        return None if raw is None else unpack(raw)

    def inner_at(self, key: bytes, cur: list[Any], vid: int) -> tuple[Any, int] | None:
        """(value, start_vid) of an inner object at `vid`, given its current record."""
        if cur[0] <= vid:
            return None if cur[1] is None else (cur[1], cur[0])
        it = self.cf["delta"].iter(ReadOptions())
        it.seek(key + SEP + inv_vid_bytes(vid))
        if it.valid() and it.key().startswith(key + SEP) and len(it.key()) == len(key) + 9:
            start, end, value = unpack(it.value())
            if start <= vid < end and value is not None:
                return value, start
        return None

    def leaf_at(self, lifetimes: list[Any], vid: int) -> tuple[Any, int] | None:
        hit = self.leaf_raw_at(lifetimes, vid)
        return None if hit is None else (unpack_leaf(hit[0]), hit[1])

    def leaf_raw_at(self, lifetimes: list[Any], vid: int) -> tuple[bytes, int] | None:
        """(packed value, create vid) of the lifetime visible at `vid`, clone references followed."""
        for create, tomb, value, ref in reversed(lifetimes):
            if create <= vid and (tomb == 0 or tomb > vid):
                return (self.resolve_ref_raw(ref) if ref is not None else value), create
        return None

    def leaf_value(self, lifetime: list[Any]) -> dict[str, Any]:
        return self.resolve_ref(lifetime[3]) if lifetime[3] is not None else unpack_leaf(lifetime[2])

    def resolve_ref(self, ref: list[Any]) -> dict[str, Any]:
        value: dict[str, Any] = unpack_leaf(self.resolve_ref_raw(ref))
        return value

    def resolve_ref_raw(self, ref: list[Any]) -> bytes:
        pkey, pcreate = ref
        for create, _tomb, value, _ref in self.leaf_lifetimes(pkey) or ():
            if create == pcreate:
                raw: bytes = value
                return raw
        raise CatalogError(f"leaf indirection to {path_of_key(pkey)}@{pcreate} is dangling; the store is damaged")

    def get(self, path: str, vid: int) -> tuple[dict[str, Any], int, bool] | None:
        key = key_of(path)
        cur = self.inner_current(key)
        if cur is not None:
            hit = self.inner_at(key, cur, vid)
            if hit is not None:
                return hit[0], hit[1], False
        lts = self.leaf_lifetimes(key)
        if lts is not None:
            hit = self.leaf_at(lts, vid)
            if hit is not None:
                return hit[0], hit[1], True
        return None

    def get_frozen(self, path: str, vid: int) -> tuple[Any, int, bool, int] | None:
        """As `get`, with the value decoded read-only (`frozen`), plus the encoded size of the
        version when it is the path's current one (else -1): (value, start vid, is_leaf, size)."""
        key = key_of(path)
        raw = self.cf["inner"].get(key)
        if raw is not None:
            cur = freeze_packed(raw)
            if cur[0] <= vid:
                if cur[1] is not None:
                    return cur[1], cur[0], False, len(raw)
            else:
                hit = self.inner_at(key, cur, vid)
                if hit is not None:
                    return freeze(hit[0]), hit[1], False, -1
        raw = self.cf["leaf"].get(key)
        if raw is not None:
            for create, tomb, value, ref in reversed(unpack(raw)):
                if create <= vid and (tomb == 0 or tomb > vid):
                    packed = self.resolve_ref_raw(ref) if ref is not None else value
                    return freeze_leaf(packed), create, True, len(packed) if tomb == 0 else -1
        return None

    # ---------------------------------------------------------------- range scans
    def _range(self, cf: str, lo: bytes, hi: bytes) -> Iterator[tuple[bytes, bytes]]:
        ro = ReadOptions()
        ro.set_iterate_upper_bound(hi)
        it = self.cf[cf].iter(ro)
        it.seek(lo)
        while it.valid():
            yield it.key(), it.value()
            it.next()

    def written_leaves(self, keys: Iterable[bytes], vid: int) -> None:
        """Commits up to `vid` write these leaf keys: called before they become visible, so the
        in-memory leaf lists of their parents are never served past them."""
        self.written_prefixes({key[:key.rfind(SEP, 2) + 1] or key[:2] for key in keys}, vid)  # parent_prefix, inlined

    def written_prefixes(self, prefixes: set[bytes], vid: int) -> None:
        """`written_leaves` given the children prefixes of the written leaf keys."""
        self.files.floors.raise_to(prefixes, vid)
        self.files.drop(prefixes)
        self.leaf_lists.drop(prefixes)

    def scan_children(self, parent: str, vid: int, ranges: list[Any], counter: list[int] | None = None,
                      shared: bool = False) -> Iterator[Entry]:
        """Children of `parent` visible at `vid`, in id order, restricted to the id byte `ranges`
        (half-open, None = unbounded). `counter` ([scanned, seeks]) is bumped as we go.
        With `shared`, leaf values come from the in-memory caches (a full-range scan reads a
        cached leaf list) and must not be changed or handed out: decode the entry's packed value
        for a caller."""
        prefix = children_prefix(parent)
        plen = len(prefix)
        end = successor(prefix)
        for lo, hi in ranges:
            klo = prefix + lo if lo is not None else prefix
            khi = prefix + hi if hi is not None else end
            if counter is not None:
                counter[1] += 2
            inner = self._visible_inner(klo, khi, vid, plen, counter)
            if shared and lo is None and hi is None:
                leaf = iter(self._leaf_list(prefix, vid, counter))
            else:
                leaf = self._visible_leaf(klo, khi, vid, plen, counter, shared)
            yield from _merge_by_key(inner, leaf)

    def _leaf_list(self, prefix: bytes, vid: int, counter: list[Any] | None) -> tuple[Any, ...]:
        """Every visible leaf under `prefix` as shared entries, from the leaf-list cache."""
        hit = self.leaf_lists.get(prefix, vid)
        if hit is not None:
            entries, n = hit
        else:
            floor = self.leaf_lists.floor(prefix)  # read after the caller took `vid`
            scanned = [0, 0]
            entries = tuple(self._visible_leaf(prefix, successor(prefix), vid, len(prefix), scanned, True))
            n = scanned[0]
            # decoded values take about twice their packed bytes
            self.leaf_lists.put(prefix, floor, vid, entries, n, size=sum(3 * len(e[5]) + 200 for e in entries))
        if counter is not None:
            counter[0] += n
        return entries

    def _visible_inner(self, lo: bytes, hi: bytes, vid: int, plen: int, counter: list[int] | None) -> Iterator[Entry]:
        for key, raw in self._range("inner", lo, hi):
            if counter is not None:
                counter[0] += 1
            cur = unpack(raw)
            hit = (None if cur[1] is None else (cur[1], cur[0])) if cur[0] <= vid else self.inner_at(key, cur, vid)
            if hit is not None:
                yield key[plen:].decode(), hit[0], hit[1], False, key, None

    def _visible_leaf(self, lo: bytes, hi: bytes, vid: int, plen: int, counter: list[int] | None,
                      shared: bool) -> Iterator[Entry]:
        ro = ReadOptions()
        ro.set_iterate_upper_bound(hi)
        cached = self.leaf_values.value
        n = 0
        try:
            for key, raw in cast(_Pairs, self.cf["leaf"].items(from_key=lo, read_opt=ro)):
                n += 1
                hit = self.leaf_raw_at(_unpackb(raw), vid)
                if hit is not None:
                    packed, create = hit
                    value = cached(key, create, packed) if shared else unpack_leaf(packed)
                    yield key[plen:].decode(), value, create, True, key, packed
        finally:
            if counter is not None:
                counter[0] += n

    def scan_files(self, parent: str, vid: int, counter: list[Any] | None = None,
                   room: list[int] | None = None) -> list[FileObj]:
        """The file leaves of `parent` visible at `vid`, left packed (FileObj decodes on access):
        plan_files' file level, which decodes only the files whose statistics it checks.
        Recently planned lists come from the file-list cache (a list read here is kept if it fits
        `room`, the plan's allowance); `counter` counts their objects as scanned all the same."""
        prefix = children_prefix(parent)
        hit = self.files.get(prefix, vid)
        if hit is not None:
            entries, n = hit
        else:
            floor = self.files.floor(prefix)  # read after the caller took `vid`
            entries, n = self._read_files(prefix, parent + "/", vid)
            self.files.put(prefix, floor, vid, entries, n, room)
        if counter is not None:
            counter[0] += n
            counter[1] += 1
        base = self.warehouse
        return [FileObj(path, raw, create, None, base) for path, raw, create in entries]

    def _read_files(self, prefix: bytes, base: str, vid: int) -> tuple[tuple[Any, ...], int]:
        # One flat loop with no per-file generator step: at 500k files it runs 100k times a plan.
        plen = len(prefix)
        ro = ReadOptions()
        ro.set_iterate_upper_bound(successor(prefix))
        out: list[tuple[str, bytes, int]] = []
        append = out.append
        n = 0
        for key, raw in cast(_Pairs, self.cf["leaf"].items(from_key=prefix, read_opt=ro)):
            n += 1
            lts = _unpackb(raw)  # lifetimes hold no maps: msgpack's defaults decode them exactly
            if len(lts) == 1:
                create, tomb, value, ref = lts[0]
                if create > vid or (tomb and tomb <= vid):
                    continue
                if ref is not None:
                    value = self.resolve_ref_raw(ref)
            else:
                hit = self.leaf_raw_at(lts, vid)
                if hit is None:
                    continue
                value, create = hit
            if value.startswith(FILE_JSON) or unpack_leaf(value).get("obj_type") == "file":
                append((base + key[plen:].decode(), value, create))
        return tuple(out), n

    def inner_versions(self, key: bytes) -> list[tuple[int, int | None, Any]]:
        """Every (start, end, value) of an inner object, oldest first."""
        cur = self.inner_current(key)
        if cur is None:
            return []
        past = [unpack(raw) for _k, raw in self._range("delta", key + SEP, key + b"\x01")]
        return [tuple(p) for p in reversed(past)] + [(cur[0], None, cur[1])]

    # ---------------------------------------------------------------- commits, snapshots
    def commit_record(self, vid: int) -> dict[str, Any] | None:
        raw = self.cf["commits"].get(vid_bytes(vid))
        return None if raw is None else unpack(raw)

    def commit_records(self, lo: int, hi: int, backwards: bool = False) -> Iterator[tuple[int, dict[str, Any]]]:
        """Commits with lo <= vid <= hi."""
        if not backwards:
            for k, raw in self._range("commits", vid_bytes(lo), vid_bytes(hi + 1)):
                yield int.from_bytes(k, "big"), unpack(raw)
            return
        it = self.cf["commits"].iter(ReadOptions())
        it.seek_for_prev(vid_bytes(hi))
        while it.valid():
            vid = int.from_bytes(it.key(), "big")
            if vid < lo:
                break
            yield vid, unpack(it.value())
            it.prev()

    def snapshot_get(self, name: str) -> list[Any] | None:
        raw = self.cf["snapshots"].get(name.encode())
        return None if raw is None else unpack(raw)

    def snapshot_items(self) -> Iterator[tuple[str, list[Any]]]:
        for k, raw in cast(_Pairs, self.cf["snapshots"].items()):
            yield k.decode(), unpack(raw)

    # ---------------------------------------------------------------- writes
    def new_batch(self) -> WriteBatch:
        return WriteBatch(raw_mode=True)

    def put(self, wb: WriteBatch, cf: str, key: bytes, value: Any) -> None:
        wb.put(key, pack(value), self.handle[cf])

    def put_delta(self, wb: WriteBatch, key: bytes, start: int, end: int, value: Any) -> None:
        wb.put(key + SEP + inv_vid_bytes(start), pack([start, end, value]), self.handle["delta"])

    def write(self, wb: WriteBatch, latest_vid: int) -> None:
        """Apply one batch atomically and durably (synced WAL); then advance latest_vid. The caller
        took the writer's turn (`ensure_writer`) before it read what the batch builds on."""
        if not self.writer:
            raise CatalogError("this process does not hold the catalog's writer turn; nothing was written")
        wb.put(LATEST, vid_bytes(latest_vid))
        self.db.write(wb, self._sync)
        self.latest_vid = latest_vid


def _merge_by_key(a: Iterator[Entry], b: Iterator[Entry]) -> Iterator[Entry]:
    """Merge two key-ordered entry streams (inner and leaf stores) into one."""
    x = next(a, None)
    y = next(b, None)
    while x is not None and y is not None:
        if x[4] <= y[4]:
            yield x
            x = next(a, None)
        else:
            yield y
            y = next(b, None)
    if x is not None:
        yield x
        yield from a
    if y is not None:
        yield y
        yield from b
