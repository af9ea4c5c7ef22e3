"""Transaction manager (paper §6.2): MVOCC validation with scan-range + precision locking,
commit-time merges, and group commit (one RocksDB batch and one WAL sync per group)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from catalog_core._engine.apply import View, materialize
from catalog_core.errors import CatalogError, ConflictError, InvalidValueError
from catalog_core.model import iso_time as _iso
from catalog_core._engine.locks import LockManager
from catalog_core.query.bounds import ranges_contain
from catalog_core.query.ast import TrueExpr
from catalog_core.query.evaluate import compile_expr
from catalog_core._engine.storage import Store
from catalog_core._engine.writelog import WriteLog

__all__ = ["TransactionManager", "PROTOCOLS", "CommitRequest"]

PROTOCOLS = ("ospl", "osl", "mgl")


@dataclass
class CommitRequest:
    read_vid: int
    ops: list
    scans: list  # (parent, expr, ranges, values): see Transaction._on_scan
    point_reads: set
    author: str
    message: str
    meta: dict
    time: float | None = None  # a backdated commit time (seconds since the epoch); None: now
    done: threading.Event = field(default_factory=threading.Event)
    vid: int | None = None
    error: BaseException | None = None


def _predicate(expr: Any):
    # A scan recorded without a predicate (clone copies every child) matches every object.
    return compile_expr(TrueExpr() if expr is None else expr)


def _changes_result(pred, rec, values: bool) -> bool:
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
        # A commit that nobody else can validate against skips the write log (bulk loads would
        # index every record for nothing); if a transaction begins before it is published,
        # its records are indexed then, so that transaction's validation still sees them.
        self._unlogged: tuple[int, list] | None = None
        self._active: Counter[int] = Counter()
        self._queue: list[CommitRequest] = []
        self._queue_lock = threading.Lock()
        self._leader = threading.Lock()
        self._last_time = 0.0
        self._commit_times: list[float] | None = None
        self.groups = 0  # batches written, for tests and benchmarks
        self.closed = False

    # ---------------------------------------------------------------- lifecycle
    def begin(self) -> int:
        with self._state:
            if self._unlogged is not None:
                self.log.add(*self._unlogged)
                self._unlogged = None
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
    def _validate(self, req: CommitRequest) -> None:
        if not self.validation_enabled or self.protocol == "mgl":
            return  # mgl's locks already serialize conflicting transactions
        r = req.read_vid
        for path in req.point_reads:
            wvid = self.log.last_write.get(path, -1)
            if wvid > r:
                raise ConflictError(f"{path!r} was changed by commit {wvid} after this transaction read it "
                                    f"at vid {r}; retry the transaction", path=path, vid=wvid, retryable=True)
        precise = self.protocol == "ospl"
        for parent, expr, ranges, values in req.scans:
            pred = None
            for rec in self.log.records_after(parent, r):
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
        while not req.done.is_set():
            with self._leader:
                if req.done.is_set():
                    break
                with self._queue_lock:
                    group, self._queue = self._queue, []
                if group:
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

    def _run_group(self, group: list[CommitRequest]) -> None:
        store = self.store
        overlay = View(store)
        accepted: list[tuple[CommitRequest, list]] = []
        log_keys: list = []
        next_vid = store.latest_vid + 1
        wb = store.new_batch()
        for req in group:
            try:
                with self._state:
                    self._validate(req)
                commit_time = self._next_time(req.time)
                view, effects = materialize(overlay, req.ops, next_vid, commit_time)
            except BaseException as exc:  # a rejected write set changes nothing
                req.error = exc
                continue
            overlay.absorb(view)
            with self._state:
                if len(group) == 1 and sum(self._active.values()) <= 1:
                    self._unlogged = (next_vid, effects)  # only this committer is active
                else:
                    log_keys += self.log.add(next_vid, effects)
            rec = {"time": commit_time, "author": req.author, "message": req.message,
                   "paths": [e.path for e in effects], "meta": req.meta}
            store.put(wb, "commits", next_vid.to_bytes(8, "big"), rec)
            req.vid = next_vid
            accepted.append((req, rec))
            next_vid += 1
        try:
            if accepted:
                for key, value in overlay.inner.items():
                    store.put(wb, "inner", key, value)
                store.written_leaves(overlay.leaf.keys(), next_vid - 1)
                for key, value in overlay.leaf.items():
                    store.put(wb, "leaf", key, value)
                for key, start, end, value in overlay.deltas:
                    store.put_delta(wb, key, start, end, value)
                store.write(wb, next_vid - 1)
                self.groups += 1
                if self._commit_times is not None:
                    self._commit_times.extend(rec["time"] for _r, rec in accepted)
        except BaseException as exc:
            with self._state:
                if self._unlogged is None and len(group) == 1 and accepted:
                    log_keys = list(self.log.keys_of(accepted[0][0].vid))
                self.log.discard(log_keys)
            for req, _rec in accepted:
                req.vid, req.error = None, CatalogError(f"commit was not made durable: {exc}; nothing was written")
        finally:
            with self._state:
                self._unlogged = None
                self._gc()
            for req in group:
                req.done.set()

    def attach_commit_times(self, times: list[float]) -> None:
        self._commit_times = times
