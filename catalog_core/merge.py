"""Commit-time updates: a delta mirrors the value's nesting; `{"op": .., "val": ..}` is an op.

Ops: `+`, `-`, `min`, `max`, `set`, and `commit_vid` / `commit_time`, which store the vid / time
of the commit that applies them (known only then; `val` is used when applied outside a commit).
A dict holding an "op" key is an op, and must be exactly `{"op", "val"}` with a known op (to set
a field named "op", merge `{"op": {"op": "set", "val": ...}}`). A `+` / `-` whose result does not
fit in 64 bits, or is not finite, is refused: the commit applying it fails, alone."""

from __future__ import annotations

import copy
import math
from typing import Any

from catalog_core.errors import InvalidValueError

__all__ = ["apply_delta", "validate_delta", "OPS"]

OPS = ("+", "-", "min", "max", "set", "commit_vid", "commit_time")


_INT_MIN, _INT_MAX = -(1 << 63), (1 << 64) - 1  # what values may hold (see _engine.codec)


def _is_op(node: object) -> bool:
    return isinstance(node, dict) and "op" in node


def _short(node: object) -> str:
    text = repr(node)
    return text if len(text) <= 200 else text[:200] + "..."


def _safe(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode()  # error details travel as JSON


def validate_delta(delta: object, where: str = "") -> None:
    if not isinstance(delta, dict):
        raise InvalidValueError(f"merge delta{where or ''} must be a dict, got {type(delta).__name__}")
    for key, node in delta.items():
        here = f"{where}.{key}" if where else str(key)
        if _is_op(node):
            if len(node) != 2 or "val" not in node:
                raise InvalidValueError(
                    f"merge op at {here!r} is malformed: {_short(node)}; an op is exactly {{'op': ..., 'val': ...}} "
                    f"with op one of {', '.join(OPS)} (to set a field named 'op', merge "
                    "{'op': {'op': 'set', 'val': ...}})", where=_safe(here))
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
            return _checked(op, cur, val, cur + val, here)
        if op == "-":
            return _checked(op, cur, val, cur - val, here)
        if op == "min":
            return val if val < cur else cur
        return val if val > cur else cur
    except TypeError:
        raise InvalidValueError(
            f"merge op {op!r} at {here!r} cannot combine stored {cur!r} with {val!r}; the types differ"
        ) from None


def _checked(op: str, cur: Any, val: Any, out: Any, here: str) -> Any:
    if isinstance(out, float) and not math.isfinite(out):
        raise InvalidValueError(f"merge op {op!r} at {here!r} gives {out!r} ({cur!r} {op} {val!r}), which cannot be "
                                "stored (NaN and ±Infinity have no JSON form); nothing was written", where=_safe(here))
    if isinstance(out, int) and not _INT_MIN <= out <= _INT_MAX:
        raise InvalidValueError(f"merge op {op!r} at {here!r} gives {out} ({cur!r} {op} {val!r}), which does not fit "
                                "in 64 bits (integers run from -2**63 to 2**64-1); nothing was written", where=_safe(here))
    return out


def apply_delta(value: dict[str, Any], delta: dict[str, Any], where: str = "",
                commit: tuple[int, float] | None = None) -> dict[str, Any]:
    """Return a new value with `delta` applied; `value` is left untouched. `commit` is the
    (vid, time) of the commit applying it."""
    out = dict(value)
    for key, node in delta.items():
        here = f"{where}.{key}" if where else str(key)
        if _is_op(node):
            out[key] = _apply_op(node["op"], out.get(key), node.get("val"), here, commit)
        elif isinstance(node, dict):
            cur = out.get(key)
            out[key] = apply_delta(cur if isinstance(cur, dict) else {}, node, here, commit)
        else:
            out[key] = copy.deepcopy(node)
    return out
