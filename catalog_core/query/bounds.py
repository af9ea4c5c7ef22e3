"""Seek bounds: which obj_id byte ranges can hold a match, so a level scan skips the rest.

A range is `(lo, hi)`, half-open `[lo, hi)` over the UTF-8 bytes of obj_id, with None
for unbounded. A range list is sorted, disjoint and non-adjacent. Soundness is the
contract: every object for which the expression is true has its id inside the
ranges; the scan still evaluates the full predicate on every object it reads.

UTF-8 byte order equals code-point order, and ids never contain NUL, so `x + b"\\0"`
is the successor of `x` among ids.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any, Iterable

from catalog_core.paths import successor
from catalog_core.query.ast import And, Compare, Expr, Field, In, Literal, Node, Not, Or, StartsWith
from catalog_core.query.evaluate import compare_values

__all__ = ["Range", "id_ranges", "ranges_contain", "intersect", "union", "normalize"]

Range = tuple["bytes | None", "bytes | None"]


def _lo(r: Range) -> bytes:
    # b"" is the smallest byte string, so an unbounded lo behaves exactly like it.
    return r[0] or b""


def _hi_le(a: bytes | None, b: bytes | None) -> bool:
    """a <= b where None is +infinity."""
    return b is None or (a is not None and a <= b)


def normalize(ranges: Iterable[Range]) -> list[Range]:
    """Sort, drop empty ranges, merge overlapping or touching ones; lo b"" becomes None."""
    live = sorted((r for r in ranges if r[1] is None or _lo(r) < r[1]), key=_lo)
    out: list[list[Any]] = []
    for lo, hi in live:
        lo_b = lo or b""
        if out and (out[-1][1] is None or lo_b <= out[-1][1]):
            if not _hi_le(hi, out[-1][1]):
                out[-1][1] = hi
        else:
            out.append([lo_b, hi])
    return [(lo or None, hi) for lo, hi in out]


def union(a: Iterable[Range], b: Iterable[Range]) -> list[Range]:
    return normalize([*a, *b])


def intersect(a: Iterable[Range], b: Iterable[Range]) -> list[Range]:
    a, b = normalize(a), normalize(b)
    out: list[Range] = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo = max(_lo(a[i]), _lo(b[j]))
        hi = a[i][1] if _hi_le(a[i][1], b[j][1]) else b[j][1]
        if hi is None or lo < hi:
            out.append((lo or None, hi))
        # The range that ends first cannot meet anything further in the other list.
        if _hi_le(a[i][1], b[j][1]):
            i += 1
        else:
            j += 1
    return out


def ranges_contain(ranges: list[Range], key: bytes) -> bool:
    """Whether `key` (obj_id bytes) lies in one of the normalized `ranges`."""
    idx = bisect_right(ranges, key, key=_lo) - 1
    if idx < 0:
        return False
    hi = ranges[idx][1]
    return hi is None or key < hi


def _point(value: str) -> Range:
    raw = value.encode("utf-8", "surrogatepass")
    return (raw, raw + b"\x00")


def _is_obj_id(operand: Node) -> bool:
    return isinstance(operand, Field) and operand.path == ("obj_id",)


def _compare_ranges(node: Compare) -> list[Range]:
    left, op, right = node.left, node.op, node.right
    if isinstance(left, Literal) and isinstance(right, Literal):
        return [(None, None)] if compare_values(op, left.value, right.value) else []
    if _is_obj_id(right) and isinstance(left, Literal):
        left, right = right, left
        op = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)
    if not (_is_obj_id(left) and isinstance(right, Literal)):
        return [(None, None)]
    if not isinstance(right.value, str):
        return []  # obj_id is always a string, and strings never compare with other kinds
    x = right.value.encode("utf-8", "surrogatepass")
    succ = x + b"\x00"
    if op == "=":
        return normalize([(x, succ)])
    if op == "!=":
        return normalize([(None, x), (succ, None)])
    if op == "<":
        return normalize([(None, x)])
    if op == "<=":
        return [(None, succ)]
    if op == ">":
        return [(succ, None)]
    return normalize([(x, None)])  # ">="


def id_ranges(expr: Expr) -> list[Range]:  # noqa: C901 - one case per expression node kind (a visitor)
    """Sorted disjoint `[lo, hi)` obj_id byte ranges outside which `expr` is never true."""
    if isinstance(expr, Compare):
        return _compare_ranges(expr)
    if isinstance(expr, In) and expr.field.path == ("obj_id",):
        return normalize(_point(v) for v in expr.values if isinstance(v, str))
    if isinstance(expr, StartsWith) and expr.field.path == ("obj_id",):
        if not expr.prefix:
            return [(None, None)]
        p = expr.prefix.encode("utf-8", "surrogatepass")
        return [(p, successor(p))]
    if isinstance(expr, And):
        # Pairwise in a balanced tree: O(N log n) for n items holding N ranges in all, where
        # folding one item at a time into a growing list was quadratic.
        lists: list[list[Range]] = []
        for item in expr.items:
            got = id_ranges(item)
            if not got:
                return []
            if got != [(None, None)]:
                lists.append(got)
        if not lists:
            return [(None, None)]
        while len(lists) > 1:
            lists = [intersect(lists[k], lists[k + 1]) if k + 1 < len(lists) else lists[k]
                     for k in range(0, len(lists), 2)]
            if any(not x for x in lists):
                return []
        return lists[0]
    if isinstance(expr, Or):
        # One merge of everything (O(N log N)), not a growing union per item.
        every: list[Range] = []
        for item in expr.items:
            got = id_ranges(item)
            if got == [(None, None)]:
                return got
            every.extend(got)
        return normalize(every)
    if isinstance(expr, Not) and isinstance(expr.item, Not):
        return id_ranges(expr.item.item)  # not not e == e, also on missing objects
    # `not` in general, exists, endswith, other fields: no bound. `not` stays conservative
    # because a missing object (value None) satisfies `not <atom>` at any id.
    return [(None, None)]
