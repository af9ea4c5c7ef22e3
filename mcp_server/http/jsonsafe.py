"""JSON from clients with a bound on nesting (issue 48): a document nested deeper than
`MAX_DEPTH` is refused as a 400 before any code walks it (the parsers and the code after them
recurse, and about 980 levels ran Python out of stack: a 500 RecursionError).

    check_depth(orjson.loads(body))        # raises InvalidValueError past MAX_DEPTH
    value = loads_bounded(text)            # json.loads, refusing deep nesting
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import orjson

from catalog_core.errors import InvalidValueError

__all__ = ["MAX_DEPTH", "check_depth", "loads_bounded", "too_deep", "might_be_deep", "depth_error"]

# Iceberg schemas nest a struct in a list in a map in ~3 levels each; catalog objects rarely pass 10.
MAX_DEPTH = 128


def depth_error(limit: int = MAX_DEPTH) -> InvalidValueError:
    return InvalidValueError(f"JSON nested more than {limit} levels deep; send a flatter document (at most {limit} "
                             "nested objects or arrays)", limit=limit,
                             errors=[{"loc": ["body"], "msg": f"nesting deeper than {limit}", "type": "json_invalid"}])


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether `value` (parsed JSON) nests objects/arrays more than `limit` deep; iterative (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False


def might_be_deep(raw: bytes | str, limit: int = MAX_DEPTH) -> bool:
    """A cheap test before `too_deep`: fewer opening brackets than `limit` cannot nest deeper."""
    if isinstance(raw, str):
        return raw.count("[") + raw.count("{") > limit
    return raw.count(b"[") + raw.count(b"{") > limit


def check_depth(value: Any, raw: bytes | str | None = None, limit: int = MAX_DEPTH) -> Any:
    """`value`, or InvalidValueError (400) when it nests deeper than `limit`; `raw` (its text) skips the walk
    when it has too few brackets to be that deep."""
    if (raw is None or might_be_deep(raw, limit)) and too_deep(value, limit):
        raise depth_error(limit)
    return value


def loads_bounded(raw: bytes | str, limit: int = MAX_DEPTH) -> Any:
    """`json.loads(raw)` (same values, NaN included; ValueError for text that is not JSON), refusing
    nesting deeper than `limit` (InvalidValueError) before the stdlib parser recurses through it."""
    if might_be_deep(raw, limit):
        try:
            check_depth(orjson.loads(raw), None, limit)  # orjson does not recurse in Python
        except orjson.JSONDecodeError as exc:
            if "depth" in str(exc).lower() or "recursion" in str(exc).lower():
                raise depth_error(limit) from None
    try:
        return json.loads(raw)
    except RecursionError:
        raise depth_error(limit) from None
