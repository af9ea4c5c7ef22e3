"""Multiple-granularity locks for the `mgl` protocol (strict 2PL), with deadlock detection."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Any

from catalog_core.errors import ConflictError, DeadlockError
from catalog_core.paths import split

__all__ = ["LockManager", "MODES"]

MODES = ("IS", "IX", "S", "SIX", "X")
_COMPAT = {
    "IS": {"IS", "IX", "S", "SIX"},
    "IX": {"IS", "IX"},
    "S": {"IS", "S"},
    "SIX": {"IS"},
    "X": set(),
}
_SUP = {
    frozenset({"IS", "IX"}): "IX", frozenset({"IS", "S"}): "S", frozenset({"IS", "SIX"}): "SIX",
    frozenset({"IX", "S"}): "SIX", frozenset({"IX", "SIX"}): "SIX", frozenset({"S", "SIX"}): "SIX",
}


def _sup(a: str | None, b: str) -> str:
    if a is None or a == b:
        return b
    if "X" in (a, b):
        return "X"
    return _SUP[frozenset({a, b})]


_MAX_POINTS = 64


def _point_ids(ranges: list[Any]) -> list[str] | None:
    """The ids of a range list made only of single-id ranges [x, x NUL), else None."""
    if len(ranges) > _MAX_POINTS:
        return None
    ids = []
    for lo, hi in ranges:
        if lo is None or hi != lo + b"\x00":
            return None
        ids.append(lo.decode("utf-8", "surrogatepass"))
    return ids


class LockManager:
    def __init__(self, timeout_s: float = 30.0) -> None:
        self._cv = threading.Condition()
        self._granted: dict[str, dict[int, str]] = defaultdict(dict)
        self._queue: dict[str, list[tuple[int, str]]] = {}  # waiting requests per resource, oldest first
        self._waits_for: dict[int, set[int]] = {}
        self._held: dict[int, set[str]] = defaultdict(set)
        self.timeout_s = timeout_s

    def _blockers(self, owner: int, res: str, mode: str, upgrade: bool) -> set[int]:
        out = {o for o, m in self._granted.get(res, {}).items() if o != owner and mode not in _COMPAT[m]}
        if not upgrade:
            # FIFO: a new request also queues behind earlier incompatible waiters, so a stream of
            # S requests cannot starve an X waiter. Upgrades skip the queue: the waiters ahead
            # may be waiting for the upgrader itself.
            for o, m in self._queue.get(res, ()):
                if o == owner:
                    break
                if mode not in _COMPAT[m]:
                    out.add(o)
        return out

    def _cycle_from(self, start: int) -> bool:
        seen, stack = set(), list(self._waits_for.get(start, ()))
        while stack:
            node = stack.pop()
            if node == start:
                return True
            if node not in seen:
                seen.add(node)
                stack.extend(self._waits_for.get(node, ()))
        return False

    def acquire(self, owner: int, res: str, mode: str) -> None:
        with self._cv:
            held = self._granted.get(res, {}).get(owner)
            want = _sup(held, mode)
            if want == held:
                return
            blockers = self._blockers(owner, res, want, held is not None)
            if blockers:
                self._wait(owner, res, want, held is not None, blockers)
            self._granted[res][owner] = want
            self._held[owner].add(res)

    def _wait(self, owner: int, res: str, want: str, upgrade: bool, blockers: set[int]) -> None:
        deadline = time.monotonic() + self.timeout_s
        ticket = (owner, want)
        queue = self._queue.setdefault(res, [])
        queue.append(ticket)
        try:
            while blockers:
                self._waits_for[owner] = blockers
                if self._cycle_from(owner):
                    raise DeadlockError(f"deadlock on {res!r}: aborting this transaction; retry it",
                                        path=res, retryable=True)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ConflictError(f"timed out waiting {self.timeout_s}s for a {want} lock on {res!r}; retry",
                                        path=res, retryable=True)
                self._cv.wait(min(left, 0.05))
                blockers = self._blockers(owner, res, want, upgrade)
        finally:
            self._waits_for.pop(owner, None)
            queue.remove(ticket)
            if not queue:
                del self._queue[res]
            self._cv.notify_all()  # requests queued behind this one may go now

    def lock_path(self, owner: int, path: str, mode: str) -> None:
        """Intention locks on every ancestor, then `mode` on the path itself."""
        intent = "IS" if mode in ("IS", "S") else "IX"
        parts = split(path)
        self.acquire(owner, "/", intent if parts else mode)
        for i in range(1, len(parts) + 1):
            self.acquire(owner, "/" + "/".join(parts[:i]), mode if i == len(parts) else intent)

    def lock_scan(self, owner: int, parent: str, ranges: list[Any], values: bool = True) -> None:
        """Lock what one level scan reads. When the scan's obj_id ranges are a few single ids
        (`/[obj_id = "t"]`), lock just those children: S if their values are returned (the
        last step), IS if they only select context paths for the next step (creating,
        removing or changing such a child needs X on it, which IS blocks; writes deeper
        down do not change the selection). Any other range: S on the parent, i.e. all of
        its children (strict 2PL has no finer phantom protection here)."""
        ids = _point_ids(ranges)
        if ids is None:
            self.lock_path(owner, parent, "S")
            return
        self.lock_path(owner, parent, "IS")
        base = "" if parent == "/" else parent
        for obj_id in ids:
            self.lock_path(owner, f"{base}/{obj_id}", "S" if values else "IS")

    def release_all(self, owner: int) -> None:
        with self._cv:
            for res in self._held.pop(owner, ()):
                granted = self._granted.get(res)
                if granted is not None:
                    granted.pop(owner, None)
                    if not granted:
                        del self._granted[res]
            self._waits_for.pop(owner, None)
            self._cv.notify_all()
