"""Commit-time updates: a delta mirrors the value's nesting; `{"op": .., "val": ..}` is an op.

Ops: `+`, `-`, `min`, `max`, `set`, and `commit_vid` / `commit_time`, which store the vid / time
of the commit that applies them (known only then; `val` is used when applied outside a commit)."""

from __future__ import annotations

import copy
from typing import Any

from catalog_core.errors import InvalidValueError

__all__ = ["apply_delta", "validate_delta", "OPS"]

OPS = ("+", "-", "min", "max", "set", "commit_vid", "commit_time")


def _is_op(node: Any) -> bool:
    return isinstance(node, dict) and len(node) == 2 and "op" in node and "val" in node


def validate_delta(delta: Any, where: str = "") -> None:
    if not isinstance(delta, dict):
        raise InvalidValueError(f"merge delta{where or ''} must be a dict, got {type(delta).__name__}")
    for key, node in delta.items():
        here = f"{where}.{key}" if where else str(key)
        if _is_op(node):
            op, val = node["op"], node["val"]
            if op not in OPS:
                raise InvalidValueError(f"merge op {op!r} at {here!r} is unknown; use one of {', '.join(OPS)}")
            if op in ("+", "-") and (isinstance(val, bool) or not isinstance(val, (int, float))):
                raise InvalidValueError(f"merge op {op!r} at {here!r} needs a number, got {val!r}")
        elif isinstance(node, dict):
            validate_delta(node, here)


def _apply_op(op: str, cur: Any, val: Any, here: str, commit: tuple[int, float] | None) -> Any:
    if op in ("commit_vid", "commit_time"):
        return val if commit is None else commit[0 if op == "commit_vid" else 1]
    if op == "set":
        return copy.deepcopy(val)
    if cur is None:
        cur = 0 if op in ("+", "-") else val
    try:
        if op == "+":
            return cur + val
        if op == "-":
            return cur - val
        if op == "min":
            return val if val < cur else cur
        return val if val > cur else cur
    except TypeError:
        raise InvalidValueError(
            f"merge op {op!r} at {here!r} cannot combine stored {cur!r} with {val!r}; the types differ"
        ) from None


def apply_delta(value: dict[str, Any], delta: dict[str, Any], where: str = "",
                commit: tuple[int, float] | None = None) -> dict[str, Any]:
    """Return a new value with `delta` applied; `value` is left untouched. `commit` is the
    (vid, time) of the commit applying it."""
    out = dict(value)
    for key, node in delta.items():
        here = f"{where}.{key}" if where else str(key)
        if _is_op(node):
            out[key] = _apply_op(node["op"], out.get(key), node["val"], here, commit)
        elif isinstance(node, dict):
            cur = out.get(key)
            out[key] = apply_delta(cur if isinstance(cur, dict) else {}, node, here, commit)
        else:
            out[key] = copy.deepcopy(node)
    return out
