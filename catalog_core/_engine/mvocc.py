"""Transaction manager (paper §6.2): MVOCC validation with scan-range + precision locking,
commit-time merges, and group commit (one RocksDB batch and one WAL sync per group).

A commit's failure is its own: each commit of a group is validated, materialized and encoded
(values, merge results, its commit record) on its own, and one that fails is left out of the
batch while the others commit. The write log only ever holds durable writes: a group's
commits are validated against each other through a group-local log, and reach the shared log
once their batch is durable. A write set that changes nothing creates no vid."""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from dataclasses import dataclass
from itertools import compress, repeat
from operator import is_not, itemgetter
from typing import Any

from catalog_core._engine.apply import View, changes, materialize
from catalog_core._engine.locks import LockManager
from catalog_core._engine.storage import Store
from catalog_core._engine.writelog import WriteLog
from catalog_core._gcpause import gc_paused
from catalog_core.codec import pack_commit_fields, pack_commit_record, vid_bytes
from catalog_core.errors import CatalogError, ConflictError, InvalidValueError
from catalog_core.model import iso_time as _iso
from catalog_core.query.ast import TrueExpr
from catalog_core.query.bounds import ranges_contain
from catalog_core.query.evaluate import compile_expr

__all__ = ["TransactionManager", "PROTOCOLS", "CommitRequest"]

PROTOCOLS = ("ospl", "osl", "mgl")

_PATH, _BEFORE = itemgetter(0), itemgetter(1)  # Effect.path, .before


@dataclass
class CommitRequest:
    read_vid: int
    ops: list[Any]
    scans: list[Any]  # (parent, expr, ranges, values): see Transaction._on_scan
    point_reads: set[Any]
    author: str
    message: str
    meta: dict[str, Any]
    time: float | None = None  # a backdated commit time (seconds since the epoch); None: now
    fields: bytes | None = None  # author, message, meta encoded (codec.pack_commit_fields)
    done: bool = False  # set by the group's leader; a waiting committer blocks on the leader lock
    vid: int | None = None
    error: BaseException | None = None
    spans: list[Any] | None = None  # add_many's leaf keys: see Transaction.add_many, apply.materialize


def _predicate(expr: Any) -> Any:
    # A scan recorded without a predicate (clone copies every child) matches every object.
    return compile_expr(TrueExpr() if expr is None else expr)


def _changes_result(pred: Any, rec: Any, values: bool) -> bool:
    """Precision lock: does this write change what the scan saw? An absent object matches no
    predicate. A scan whose matched objects' values were returned (the last step of a query,
    `values`) conflicts when the before- or after-image matches. A scan that only selected
    context paths for the next step conflicts only when the write changes membership
    (before matches xor after matches): e.g. a stats merge into a table does not change
    which tables a /[obj_id = "t"] step selects."""
    before = rec.before is not None and pred(rec.obj_id, rec.before)
    after = rec.after is not None and pred(rec.obj_id, rec.after)
    return (before or after) if values else before != after


class TransactionManager:
    def __init__(self, store: Store, protocol: str = "ospl") -> None:
        if protocol not in PROTOCOLS:
            raise CatalogError(f"unknown protocol {protocol!r}; use one of {', '.join(PROTOCOLS)}")
        self.store = store
        self.protocol = protocol
        self.log = WriteLog()
        self.locks = LockManager() if protocol == "mgl" else None
        self.validation_enabled = True  # tests switch this off to prove the history checker can fail
        self._state = threading.Lock()  # active read vids and the write log
        self._active: Counter[int] = Counter()
        self._queue: list[CommitRequest] = []
        self._queue_lock = threading.Lock()
        self._leader = threading.Lock()
        self._last_time = 0.0
        self._commit_times: list[float] | None = None
        self.groups = 0  # batches written, for tests and benchmarks
        # the last commit another process made (Store.on_foreign): this log never saw its writes, so a
        # transaction that read before it and read anything conflicts (retryable), conservatively
        self.foreign_vid = 0
        self.closed = False

    # ---------------------------------------------------------------- lifecycle
    def begin(self) -> int:
        with self._state:
            vid = self.store.latest_vid
            self._active[vid] += 1
            return vid

    def end(self, read_vid: int) -> None:
        with self._state:
            self._active[read_vid] -= 1
            if self._active[read_vid] <= 0:
                del self._active[read_vid]
            self._gc()

    def _gc(self) -> None:
        self.log.gc(min(self._active) if self._active else self.store.latest_vid)

    # ---------------------------------------------------------------- validation
    def _validate(self, req: CommitRequest, log: WriteLog) -> None:
        if req.read_vid < self.foreign_vid and (req.point_reads or req.scans) and self.validation_enabled:
            raise ConflictError(f"another process committed vid {self.foreign_vid} after this transaction read at "
                                f"vid {req.read_vid}; retry the transaction", vid=self.foreign_vid, retryable=True)
        if not self.validation_enabled or self.protocol == "mgl":
            return  # mgl's locks already serialize conflicting transactions
        if not len(log):
            return
        r = req.read_vid
        for path in req.point_reads:
            wvid = log.last_write.get(path, -1)
            if wvid > r:
                raise ConflictError(f"{path!r} was changed by commit {wvid} after this transaction read it "
                                    f"at vid {r}; retry the transaction", path=path, vid=wvid, retryable=True)
        precise = self.protocol == "ospl"
        for parent, expr, ranges, values in req.scans:
            pred = None
            for rec in log.records_after(parent, r):
                if not ranges_contain(ranges, rec.obj_id.encode()):
                    continue
                if precise:
                    pred = pred or _predicate(expr)
                    if not _changes_result(pred, rec, values):
                        continue
                raise ConflictError(
                    f"commit {rec.vid} wrote {rec.path!r}, which {'matches' if precise else 'falls in'} "
                    f"a scan of {parent!r} this transaction did at vid {r}; retry the transaction",
                    path=rec.path, vid=rec.vid, retryable=True, scan=parent)

    # ---------------------------------------------------------------- group commit
    def commit(self, req: CommitRequest) -> int:
        if self.closed:
            raise CatalogError("the catalog is closed; reopen it to commit")
        with self._queue_lock:
            self._queue.append(req)
        while not req.done:
            with self._leader:
                if req.done:
                    break
                with self._queue_lock:
                    group, self._queue = self._queue, []
                if group:
                    with gc_paused():  # a bulk load's group builds ~10 objects per leaf, none cyclic
                        self._run_group(group)
        if req.error is not None:
            raise req.error
        return req.vid  # type: ignore[return-value]

    def _next_time(self, at: float | None = None) -> float:
        # Commit times strictly increase with vid, so a time resolves to one vid. A backdated
        # commit (`at`) may not go before the latest commit; at equal times it is 1 µs later.
        if at is not None and at < self._last_time:
            raise InvalidValueError(
                f"commit time {_iso(at)} is earlier than the latest commit's time {_iso(self._last_time)}; "
                "commit times never go backwards: backdate to that time or later, or replay older history "
                "into a new catalog", time=at, latest_time=self._last_time)
        self._last_time = max(time.time() if at is None else at, self._last_time + 1e-6)
        return self._last_time

    def _run_group(self, group: list[CommitRequest]) -> None:  # noqa: C901 - the group commit's validate/write/publish under one lock: a split would spread the locking invariant
        """Commit `group` in one batch. Every request ends with a vid or an error, and done set,
        whatever happens: a request that fails changes nothing and fails alone."""
        store = self.store
        try:
            store.ensure_writer()  # another process may hold the turn: wait for it, take in its commits
        except BaseException as exc:
            for req in group:
                req.error = exc if isinstance(exc, CatalogError) else CatalogError(
                    f"commit failed: {type(exc).__name__}: {exc}; nothing was written")
                req.done = True
            return
        overlay = View(store)
        # this group's accepted writes: its later commits validate against them
        pending = WriteLog() if len(group) > 1 else None
        accepted: list[tuple[CommitRequest, int, list[Any], float]] = []
        inner: dict[bytes, bytes] = {}
        leaf: dict[bytes, bytes] = {}
        deltas: list[tuple[bytes, bytes]] = []
        fresh: list[tuple[list[bytes], list[bytes]]] = []  # runs of new leaves: before `leaf` in the batch
        prefixes: set[bytes] = set()  # the children prefixes of every leaf key written
        records: list[tuple[bytes, bytes]] = []
        next_vid = store.latest_vid + 1
        durable = False
        try:
            for n, req in enumerate(group):
                last_time = self._last_time
                try:
                    with self._state:
                        self._validate(req, self.log)
                    if pending is not None:
                        self._validate(req, pending)
                    fields = req.fields or pack_commit_fields(req.author, req.message, req.meta)
                    commit_time = self._next_time(req.time)
                    view, effects = materialize(overlay, req.ops, next_vid, commit_time, req.spans)
                    if not changes(effects, view):  # nothing to commit: no vid, the read vid
                        self._last_time = last_time
                        req.vid = req.read_vid
                        continue
                    encoded = view.encode()
                    record = pack_commit_record(commit_time, list(map(_PATH, effects)), fields)
                except BaseException as exc:  # a rejected write set changes nothing
                    self._last_time = last_time
                    req.error = exc
                    continue
                overlay.absorb(view)
                inner.update(encoded[0])
                leaf.update(encoded[1])
                deltas.extend(encoded[2])
                fresh.extend(encoded[3])
                prefixes |= encoded[4]
                records.append((vid_bytes(next_vid), record))
                if pending is not None and n < len(group) - 1:
                    pending.add(next_vid, effects)
                req.vid = next_vid
                accepted.append((req, next_vid, effects, commit_time))
                next_vid += 1
            if accepted:
                self._write(inner, leaf, deltas, records, next_vid - 1,
                            [path for _r, _v, effects, _t in accepted
                             for path in compress(map(_PATH, effects), map(is_not, map(_BEFORE, effects), repeat(None)))],
                            fresh, prefixes)
                durable = True
                self.groups += 1
                if self._commit_times is not None:
                    self._commit_times.extend(t for _r, _v, _e, t in accepted)
                with self._state:
                    # Records matter only to transactions that read before them. When no transaction
                    # but this group's committers (each begun, so each counted) is active, e.g. in a
                    # bulk load, nobody ever will: skip indexing them.
                    if sum(self._active.values()) > len(group):
                        for _r, vid, effects, _t in accepted:
                            self.log.add(vid, effects)
        except BaseException as exc:
            if not durable:
                why = f"commit was not made durable: {exc}; nothing was written"
                for req, _v, _e, _t in accepted:
                    req.vid, req.error = None, CatalogError(why)
            for req in group:  # never leave a committer without an answer
                if req.vid is None and req.error is None:
                    req.error = CatalogError(f"commit failed: {type(exc).__name__}: {exc}; nothing was written")
        finally:
            with self._state:
                self._gc()
            for req in group:
                req.done = True

    def _write(self, inner: dict[bytes, Any], leaf: dict[bytes, Any], deltas: list[Any], records: list[Any],
               latest_vid: int, paths: list[str], fresh: list[tuple[list[bytes], list[bytes]]],
               prefixes: set[bytes]) -> None:
        """Write the group's batch durably; before it becomes visible, invalidate what the caches
        hold of the written leaf lists and of the written objects (`paths`: every effect on an
        object that existed before it; an absent object is never cached, see objcache). `fresh`:
        runs of new leaves (keys, records), put before `leaf`, whose records of the same keys are
        newer; `prefixes`: the children prefixes of every leaf key written."""
        store = self.store
        wb = store.new_batch()
        put = wb.put
        handle = store.handle["leaf"]
        for keys, data in fresh:  # a C loop per run: one put per leaf
            deque(map(put, keys, data, repeat(handle)), maxlen=0)
        for cf, items in (("inner", inner.items()), ("leaf", leaf.items()), ("delta", deltas), ("commits", records)):
            handle = store.handle[cf]
            for key, data in items:
                put(key, data, handle)
        store.written_prefixes(prefixes, latest_vid)
        store.objects.written(paths, latest_vid)
        store.write(wb, latest_vid)

    def attach_commit_times(self, times: list[float]) -> None:
        self._commit_times = times
