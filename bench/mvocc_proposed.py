"""Prototype of the proposed catalog_core/txn.py change, for `bench_mvocc --proposed-txn-fix` only.

The engine's Transaction records every level scan of a path query alike. The proposal:
`Transaction.iter_query` tells `_on_scan` whether a scan's matched objects are returned as
values (the query's last step) or only select context paths for the next step, and
`_on_scan` records `(parent, expr, ranges, values)` (ospl: mvocc._changes_result then
aborts a context-only scan only when a write changes membership) or, under mgl, calls
`LockManager.lock_scan(owner, parent, ranges, values)` instead of S-locking the parent.
mvocc.py and locks.py already accept this; only txn.py has to pass it. `apply()` is a no-op
once txn.py does.
"""

from __future__ import annotations

import inspect
from typing import Any

from catalog_core.query import parse
from catalog_core.query.executor import execute
from catalog_core.txn import Transaction

__all__ = ["apply", "engine_has_fix"]


def engine_has_fix() -> bool:
    return "values" in inspect.signature(Transaction._on_scan).parameters


def _on_scan(self: Transaction, parent: str, expr: Any, ranges: list, values: bool = True) -> int | None:
    if self._mgl:
        self._mgr.locks.lock_scan(self.id, parent, ranges, values)
        return self._cat._store.latest_vid
    self.scans.append((parent, expr, ranges, values))
    return None


def _iter_query(self: Transaction, expr: Any, stats: Any = None):
    self._check_active()
    query = parse(expr) if isinstance(expr, str) else expr
    last = query.steps[-1].expr

    # Identity, not equality: a middle step that shares the last step's node is treated as
    # returning values, which is only more conservative.
    def hook(parent: str, step_expr: Any, ranges: list) -> int | None:
        return self._on_scan(parent, step_expr, ranges, step_expr is last)

    return execute(self._cat._store, query, self._read_vid(), hook, stats)


def apply() -> bool:
    """Patch Transaction in this process; returns False when the engine already has the fix."""
    if engine_has_fix():
        return False
    Transaction._on_scan = _on_scan  # type: ignore[method-assign]
    Transaction.iter_query = _iter_query  # type: ignore[method-assign]
    return True
