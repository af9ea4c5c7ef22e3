"""Post-commit hooks: work that follows a durable commit in the committing process (the server, a
Spark bridge driver, the CLI), e.g. `catalog_core.iceberg.oncommit` writing the Iceberg manifest
and manifest list of the snapshot a commit made (docs/iceberg-rest.md, "A long history").

A hook is `fn(catalog, vid, ops, meta)`: the embedded `Catalog`, the committed vid, the commit's
write ops (`catalog_core.writeset.WriteOp`) and meta. It runs in the committing thread after the
commit is durable and before `commit()` returns, outside every engine lock; it must be cheap for a
commit it has nothing to do for. Its failure never fails the commit: it is caught and logged once
per hook and error type. Hooks register themselves (`register`), so the engine imports none of them.

Relocation hooks (`register_relocate`): `fn(catalog)` after `Catalog.relocate` re-pointed stored paths
(e.g. `catalog_core.iceberg.oncommit` dropping the Iceberg journals, whose manifests name the old paths).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

__all__ = ["register", "unregister", "after_commit", "PostCommitHook", "register_relocate", "after_relocate"]

PostCommitHook = Callable[[Any, int, list[Any], dict[str, Any]], None]

_HOOKS: list[PostCommitHook] = []
_RELOCATE_HOOKS: list[Callable[[Any], None]] = []
_LOGGED: set[tuple[int, str]] = set()
_log = logging.getLogger("semcat.engine")


def register(fn: PostCommitHook) -> None:
    """Call `fn` after every commit of every embedded catalog of this process (once per function)."""
    if fn not in _HOOKS:
        _HOOKS.append(fn)


def unregister(fn: PostCommitHook) -> None:
    if fn in _HOOKS:
        _HOOKS.remove(fn)


def after_commit(catalog: Any, vid: int, ops: list[Any], meta: dict[str, Any]) -> None:
    """Run the hooks for one commit; an error is logged (once per hook and error type), never raised."""
    for fn in tuple(_HOOKS):
        try:
            fn(catalog, vid, ops, meta)
        except Exception as exc:  # noqa: BLE001 - a hook never fails a durable commit
            key = (id(fn), type(exc).__name__)
            if key not in _LOGGED:
                _LOGGED.add(key)
                _log.warning("post-commit hook %s failed at vid %d (logged once): %s: %s; the commit stands",
                             getattr(fn, "__qualname__", fn), vid, type(exc).__name__, exc)


def register_relocate(fn: Callable[[Any], None]) -> None:
    """Call `fn(catalog)` after every `relocate` that changed stored paths (once per function)."""
    if fn not in _RELOCATE_HOOKS:
        _RELOCATE_HOOKS.append(fn)


def after_relocate(catalog: Any) -> None:
    """Run the relocation hooks; an error is logged, never raised (the relocation stands)."""
    for fn in tuple(_RELOCATE_HOOKS):
        try:
            fn(catalog)
        except Exception as exc:  # noqa: BLE001 - the stored paths are re-pointed either way
            _log.warning("relocation hook %s failed: %s: %s", getattr(fn, "__qualname__", fn), type(exc).__name__, exc)
