"""Multiple-granularity locks for the `mgl` protocol (strict 2PL), with deadlock detection."""

from __future__ import annotations

import threading
import time
from collections import defaultdict

from .errors import ConflictError, DeadlockError
from .paths import split

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


class LockManager:
    def __init__(self, timeout_s: float = 30.0) -> None:
        self._cv = threading.Condition()
        self._granted: dict[str, dict[int, str]] = defaultdict(dict)
        self._waits_for: dict[int, set[int]] = {}
        self._held: dict[int, set[str]] = defaultdict(set)
        self.timeout_s = timeout_s

    def _blockers(self, owner: int, res: str, mode: str) -> set[int]:
        return {o for o, m in self._granted[res].items() if o != owner and mode not in _COMPAT[m]}

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
        deadline = time.monotonic() + self.timeout_s
        with self._cv:
            want = _sup(self._granted[res].get(owner), mode)
            while True:
                blockers = self._blockers(owner, res, want)
                if not blockers:
                    break
                self._waits_for[owner] = blockers
                if self._cycle_from(owner):
                    del self._waits_for[owner]
                    raise DeadlockError(f"deadlock on {res!r}: aborting this transaction; retry it",
                                        path=res, retryable=True)
                left = deadline - time.monotonic()
                if left <= 0:
                    del self._waits_for[owner]
                    raise ConflictError(f"timed out waiting {self.timeout_s}s for a {want} lock on {res!r}; retry",
                                        path=res, retryable=True)
                self._cv.wait(min(left, 0.05))
            self._waits_for.pop(owner, None)
            self._granted[res][owner] = want
            self._held[owner].add(res)

    def lock_path(self, owner: int, path: str, mode: str) -> None:
        """Intention locks on every ancestor, then `mode` on the path itself."""
        intent = "IS" if mode in ("IS", "S") else "IX"
        parts = split(path)
        self.acquire(owner, "/", intent if parts else mode)
        for i in range(1, len(parts) + 1):
            self.acquire(owner, "/" + "/".join(parts[:i]), mode if i == len(parts) else intent)

    def release_all(self, owner: int) -> None:
        with self._cv:
            for res in self._held.pop(owner, ()):
                self._granted[res].pop(owner, None)
                if not self._granted[res]:
                    del self._granted[res]
            self._waits_for.pop(owner, None)
            self._cv.notify_all()
