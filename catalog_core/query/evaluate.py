"""Two-valued evaluation of query expressions against (obj_id, value).

Scans evaluate one predicate on hundreds of thousands of objects, so an expression is
compiled once into a single generated Python function: field lookups, type guards
and comparisons are inlined, with no per-node call. Constants are embedded with
`repr` only for str/int/bool/None/finite float (whose repr is an exact literal);
anything else is passed through the function's globals, so no query text ever
reaches the generated source.

Semantics (DESIGN.md, "Path query language"):
- a missing field, at any level of a dotted path, makes every comparison false;
- values compare only within a kind: numbers (int and float, not bool), strings
  (ordered by code point), and equality-only kinds (bool, null, lists, dicts);
- `a != b` holds only when both are present, comparable and unequal;
- `not` negates the whole result; `value is None` (no such object) makes every atom false.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Callable

from catalog_core.query.ast import (
    And,
    Compare,
    EndsWith,
    Exists,
    Expr,
    Field,
    In,
    Literal,
    Not,
    Or,
    StartsWith,
    TrueExpr,
)

__all__ = ["MISSING", "Predicate", "compile_expr", "evaluate", "resolve", "compare_values", "WIDTH"]

Predicate = Callable[[str, "dict[str, Any] | None"], bool]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
_NUM = (int, float)
_PY_OP = {"=": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_MIRROR = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
# Past this many boolean levels a subtree gets its own function, keeping generated
# source under CPython's limit on nested parentheses.
_SPLIT_DEPTH = 24
# An `and`/`or` with more items is compiled in groups of WIDTH, each its own small function, and
# the groups' calls again in groups of WIDTH: every compile() sees at most WIDTH terms, so time and
# memory stay linear in the query (one compile() of a 10,000-term chain took ~1,000x its size).
WIDTH = 64


def resolve(field: Field, obj_id: str, value: dict[str, Any] | None) -> Any:
    """The field's value on one object, or MISSING."""
    path = field.path
    if value is None:
        return MISSING
    if path[0] == "obj_id":
        return obj_id if len(path) == 1 else MISSING
    cur: Any = value
    for key in path:
        if not isinstance(cur, dict):
            return MISSING
        cur = cur.get(key, MISSING)
        if cur is MISSING:
            return MISSING
    return cur


def _kind(x: Any) -> object:
    t = type(x)
    if t is int or t is float:
        return int
    if isinstance(x, str):
        return str
    return t  # bool, NoneType, dict, list: equality only, within the same type


def compare_values(op: str, a: Any, b: Any) -> bool:
    """Two-valued comparison of two resolved values (either may be MISSING)."""
    if a is MISSING or b is MISSING:
        return False
    kind = _kind(a)
    if kind is not _kind(b):
        return False
    if op == "=":
        return bool(a == b)
    if op == "!=":
        return bool(a != b)
    if kind is not int and kind is not str:
        return False
    if op == "<":
        return bool(a < b)
    if op == "<=":
        return bool(a <= b)
    if op == ">":
        return bool(a > b)
    if op == ">=":
        return bool(a >= b)
    raise ValueError(f"unknown comparison operator {op!r}")


def _absent_result(expr: Expr) -> bool:
    """What `expr` says about an object that does not exist: atoms false, `not` flips."""
    if isinstance(expr, Not):
        return not _absent_result(expr.item)
    if isinstance(expr, And):
        return all(_absent_result(i) for i in expr.items)
    if isinstance(expr, Or):
        return any(_absent_result(i) for i in expr.items)
    return False


class _Codegen:
    def __init__(self) -> None:
        self.ns: dict[str, Any] = {"_M": MISSING, "_NUM": _NUM, "_cmp": compare_values,
                                   "_resolve": resolve, "isinstance": isinstance, "type": type,
                                   "dict": dict, "str": str, "__builtins__": {}}
        self.counter = 0

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def const(self, value: Any) -> str:
        if value is None or isinstance(value, (str, int)) or (isinstance(value, float) and math.isfinite(value)):
            return repr(value)
        name = self.fresh("_c")
        self.ns[name] = value
        return name

    def with_field(self, field: Field, test: Callable[[str, str], str]) -> str:
        """Source that looks `field` up and applies `test(first, name)`.

        `first` is the expression for the value's first use (it binds `name`); every
        test below is false on MISSING, so missing leaves need no separate check,
        while missing intermediates short-circuit to False.
        """
        path = field.path
        if path[0] == "obj_id":
            return test("i", "i") if len(path) == 1 else "False"
        guards, cur = [], "v"
        for key in path[:-1]:
            tmp = self.fresh("_d")
            guards.append(f"isinstance(({tmp} := {cur}.get({key!r})), dict)")
            cur = tmp
        name = self.fresh("_x")
        guards.append(test(f"({name} := {cur}.get({path[-1]!r}, _M))", name))
        return "(" + " and ".join(guards) + ")"

    def literal_test(self, op: str, lit: Any) -> Callable[[str, str], str] | None:
        """`x <op> lit` as a source template, or None when it can never hold."""
        c = self.const(lit)
        py = _PY_OP[op]
        if isinstance(lit, bool):
            if op == "=":
                return lambda first, x: f"{first} is {c}"
            if op == "!=":
                return lambda first, x: f"{first} is {not lit!r}"
            return None
        if lit is None:
            return (lambda first, x: f"{first} is None") if op == "=" else None
        if isinstance(lit, str):
            if op == "=":
                return lambda first, x: f"{first} == {c}"
            return lambda first, x: f"(isinstance({first}, str) and {x} {py} {c})"
        return lambda first, x: f"(type({first}) in _NUM and {x} {py} {c})"

    def compare(self, node: Compare) -> str:
        left, op, right = node.left, node.op, node.right
        if isinstance(left, Literal) and isinstance(right, Literal):
            return repr(compare_values(op, left.value, right.value))
        if isinstance(left, Literal):
            left, op, right = right, _MIRROR[op], left
        if isinstance(right, Literal):
            test = self.literal_test(op, right.value)
            assert isinstance(left, Field)  # two literals were handled above
            return "False" if test is None else self.with_field(left, test)
        a, b = self.const(left), self.const(right)
        return f"_cmp({op!r}, _resolve({a}, i, v), _resolve({b}, i, v))"

    def in_(self, node: In) -> str:
        strs = frozenset(v for v in node.values if isinstance(v, str))
        nums = frozenset(v for v in node.values if type(v) in _NUM)
        singles = [v for v in (True, False, None) if any(w is v for w in node.values)]

        def test(first: str, x: str) -> str:
            parts = []
            if strs:
                parts.append(f"(isinstance({{f}}, str) and {x} in {self.const(strs)})")
            if nums:
                parts.append(f"(type({{f}}) in _NUM and {x} in {self.const(nums)})")
            parts += [f"{{f}} is {v!r}" for v in singles]
            # Only the first operand of an `or` is sure to run, so only it binds the value.
            return "(" + " or ".join([parts[0].format(f=first)] + [p.format(f=x) for p in parts[1:]]) + ")"

        return self.with_field(node.field, test)

    def exists(self, node: Exists) -> str:
        path = node.field.path
        if path[0] == "obj_id":
            return "True" if len(path) == 1 else "False"
        guards, cur = [], "v"
        for key in path[:-1]:
            tmp = self.fresh("_d")
            guards.append(f"isinstance(({tmp} := {cur}.get({key!r})), dict)")
            cur = tmp
        guards.append(f"{path[-1]!r} in {cur}")
        return "(" + " and ".join(guards) + ")"

    def wide(self, node: And | Or) -> str:
        """A chain of more than WIDTH items: a tree of small functions, WIDTH calls each."""
        joiner = " and " if isinstance(node, And) else " or "
        cls = type(node)
        calls: list[tuple[str, Predicate]] = []
        for k in range(0, len(node.items), WIDTH):
            calls.append((self.fresh("_f"), _compile_present(cls(node.items[k:k + WIDTH]))))
        while len(calls) > WIDTH:
            grouped: list[tuple[str, Predicate]] = []
            for k in range(0, len(calls), WIDTH):
                chunk = calls[k:k + WIDTH]
                ns: dict[str, Any] = {"__builtins__": {}, **dict(chunk)}
                src = "def _g(i, v):\n    return " + joiner.join(f"{n}(i, v)" for n, _ in chunk) + "\n"
                exec(compile(src, "<semcat query predicate>", "exec"), ns)
                grouped.append((self.fresh("_g"), ns["_g"]))
            calls = grouped
        self.ns.update(calls)
        return "(" + joiner.join(f"{n}(i, v)" for n, _ in calls) + ")"

    def expr(self, node: Expr, depth: int = 0) -> str:
        if isinstance(node, (And, Or)) and len(node.items) > WIDTH:
            return self.wide(node)
        if isinstance(node, (And, Or, Not)) and depth > _SPLIT_DEPTH:
            name = self.fresh("_f")
            self.ns[name] = _compile_present(node)
            return f"{name}(i, v)"
        if isinstance(node, Compare):
            return self.compare(node)
        if isinstance(node, And):
            return "(" + " and ".join(self.expr(i, depth + 1) for i in node.items) + ")"
        if isinstance(node, Or):
            return "(" + " or ".join(self.expr(i, depth + 1) for i in node.items) + ")"
        if isinstance(node, Not):
            return f"(not {self.expr(node.item, depth + 1)})"
        if isinstance(node, In):
            return self.in_(node)
        if isinstance(node, Exists):
            return self.exists(node)
        if isinstance(node, StartsWith):
            c = self.const(node.prefix)
            return self.with_field(node.field, lambda f, x: f"(isinstance({f}, str) and {x}.startswith({c}))")
        if isinstance(node, EndsWith):
            c = self.const(node.suffix)
            return self.with_field(node.field, lambda f, x: f"(isinstance({f}, str) and {x}.endswith({c}))")
        if isinstance(node, TrueExpr):
            return "True"
        raise TypeError(f"not a query expression: {node!r}")

    def build(self, body: str, absent: str) -> Predicate:
        src = f"def _pred(i, v):\n    if v is None:\n        return {absent}\n    return {body}\n"
        exec(compile(src, "<semcat query predicate>", "exec"), self.ns)
        fn: Predicate = self.ns["_pred"]
        fn.__source__ = src  # type: ignore[attr-defined]  # for debugging a surprising result
        return fn


def _compile_present(expr: Expr) -> Predicate:
    gen = _Codegen()
    return gen.build(gen.expr(expr), "False")


@lru_cache(maxsize=4096)
def compile_expr(expr: Expr) -> Predicate:
    """Compile once, call per object: `pred(obj_id, value) -> bool` (value None: no such object)."""
    gen = _Codegen()
    return gen.build(gen.expr(expr), repr(_absent_result(expr)))


def evaluate(expr: Expr, obj_id: str, value: dict[str, Any] | None) -> bool:
    """Convenience form; hot loops should hold on to `compile_expr(expr)` instead."""
    return compile_expr(expr)(obj_id, value)
