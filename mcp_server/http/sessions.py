"""Server-side transaction sessions: an engine Transaction per remote client transaction,
found by an unguessable id, aborted (its read vid and locks released) once idle too long.
A session belongs to the principal (bearer token) that began it: to any other it does not exist.
Open sessions, and sessions holding a clone, are capped per principal and in total (`Limits`), so
one token cannot starve another: the refusal is a 429 with Retry-After. Invariant: a live session
holds one `sessions` slot of its owner, and one `clones` slot once it cloned, released when it ends
(commit, abort, idle timeout or shutdown), whichever way it ends."""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from catalog_core.api import CatalogAPI, TransactionAPI
from catalog_core.errors import CatalogError, NotFoundError, TooManyTransactionsError, TransactionClosedError
from mcp_server.http.policy import ANONYMOUS, Cap, Limits

__all__ = ["Session", "SessionManager"]

_ENDED_KEPT = 100_000  # remember why recent sessions ended, to say "expired" rather than "unknown"


class Session:
    __slots__ = ("id", "txn", "last_used", "busy", "owner", "cloned")

    def __init__(self, sid: str, txn: TransactionAPI, owner: str | None = None) -> None:
        self.id, self.txn, self.owner = sid, txn, owner
        self.last_used = time.monotonic()
        self.busy = 0  # requests using it now; a busy session is never reaped
        self.cloned = False  # holds a `clones` slot of its owner

    @property
    def key(self) -> str:
        return self.owner or ANONYMOUS


class SessionManager:
    def __init__(self, catalog: CatalogAPI, timeout_s: float, max_sessions: int | None = None,
                 limits: Limits | None = None) -> None:
        if timeout_s <= 0:
            raise ValueError(f"txn timeout must be > 0 seconds, got {timeout_s}")
        limits = limits or Limits()
        per, total = limits.sessions
        if max_sessions is not None:
            per, total = min(per, max_sessions), max_sessions
        self.catalog, self.timeout_s, self.max_sessions = catalog, timeout_s, total
        wait = f"commit or abort some, or wait {timeout_s:g} s for idle ones to expire"
        self.open = Cap("open transactions", per, total, timeout_s, wait, TooManyTransactionsError)
        self.clones = Cap("transactions holding a clone", *limits.clones, timeout_s,
                          "commit or abort the transactions that cloned, or clone outside a transaction "
                          "(POST /v1/clone)")
        self._lock = threading.Lock()
        self._live: dict[str, Session] = {}
        self._ended: OrderedDict[str, tuple[str, str | None]] = OrderedDict()  # id -> (why, owner)
        self._stop = threading.Event()
        self._reaper: threading.Thread | None = None

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> None:
        self._reaper = threading.Thread(target=self._reap_loop, name="semcat-txn-reaper", daemon=True)
        self._reaper.start()

    def close(self) -> None:
        """Stop reaping and abort every open session (server shutdown)."""
        self._stop.set()
        if self._reaper is not None:
            self._reaper.join(timeout=5)
        with self._lock:
            live, self._live = list(self._live.values()), {}
            for s in live:
                self._mark(s.id, "aborted because the server shut down", s.owner)
                self._free(s)
        for s in live:
            s.txn.abort()

    def __len__(self) -> int:
        return len(self._live)

    # ---------------------------------------------------------------- sessions
    def begin(self, author: str, message: str, meta: dict[str, Any] | None, time: float | str | None = None, *,
              owner: str | None = None) -> Session:
        key = owner or ANONYMOUS
        self.open.acquire(key)
        try:
            txn = self.catalog.transaction(author=author, message=message, meta=meta, time=time)
        except BaseException:
            self.open.release(key)
            raise
        session = Session(secrets.token_urlsafe(12), txn, owner)
        with self._lock:
            self._live[session.id] = session
        return session

    def note_clone(self, session: Session) -> None:
        """Before `session` clones: take a `clones` slot of its owner (once per session; 429 when
        the owner or the server holds its cap). The slot is freed when the session ends."""
        with self._lock:
            if session.cloned:
                return
            self.clones.acquire(session.key)
            session.cloned = True

    def _free(self, session: Session) -> None:
        """Release what a session that just left `_live` held (call under the lock)."""
        self.open.release(session.key)
        if session.cloned:
            session.cloned = False
            self.clones.release(session.key)

    @contextmanager
    def use(self, sid: str, owner: str | None = None) -> Iterator[Session]:
        session = self.acquire(sid, owner)
        try:
            yield session
        finally:
            self.release(session)

    def acquire(self, sid: str, owner: str | None = None) -> Session:
        with self._lock:
            session = self._live.get(sid)
            if session is None or session.owner != owner:
                raise self._gone(sid, owner)
            session.busy += 1
            return session

    def release(self, session: Session) -> None:
        with self._lock:
            session.busy -= 1
            session.last_used = time.monotonic()

    def take(self, sid: str, why: str, owner: str | None = None) -> Session:
        """Remove a session to commit or abort it; a second commit of the same id gets 410."""
        with self._lock:
            session = self._live.get(sid)
            if session is None or session.owner != owner:
                raise self._gone(sid, owner)
            del self._live[sid]
            self._mark(sid, why, owner)
            self._free(session)
            return session

    def _gone(self, sid: str, owner: str | None = None) -> CatalogError:
        why, ended_owner = self._ended.get(sid, (None, None))
        if why is not None and ended_owner == owner:
            return TransactionClosedError(f"transaction {sid} was {why}; start a new transaction", txn_id=sid)
        return NotFoundError(f"no transaction {sid!r} on this server (it may predate a restart); "
                             "start a new transaction", txn_id=sid)

    def mark(self, sid: str, why: str, owner: str | None = None) -> None:
        """Record how an ended session ended (shown to its owner if it still uses the id)."""
        with self._lock:
            self._mark(sid, why, owner)

    def _mark(self, sid: str, why: str, owner: str | None = None) -> None:
        self._ended[sid] = (why, owner)
        while len(self._ended) > _ENDED_KEPT:
            self._ended.popitem(last=False)

    # ---------------------------------------------------------------- idle timeout
    def reap(self) -> int:
        """Abort sessions idle longer than the timeout; returns how many."""
        cutoff = time.monotonic() - self.timeout_s
        with self._lock:
            idle = [s for s in self._live.values() if s.busy == 0 and s.last_used < cutoff]
            for s in idle:
                del self._live[s.id]
                self._mark(s.id, f"aborted after {self.timeout_s:g} s idle", s.owner)
                self._free(s)
        for s in idle:
            s.txn.abort()
        return len(idle)

    def _reap_loop(self) -> None:
        interval = min(max(self.timeout_s / 4, 0.02), 1.0)
        while not self._stop.wait(interval):
            self.reap()
