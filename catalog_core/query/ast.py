"""The path query AST and its rendering back to query text.

Nodes are frozen, slotted and hashable so compiled predicates can be cached by
expression and predicates can be shipped over HTTP / logged as text:
`parse(to_text(q)) == q` for every query the parser can produce.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Union

__all__ = [
    "Node",
    "Field",
    "Literal",
    "Compare",
    "In",
    "Exists",
    "StartsWith",
    "EndsWith",
    "And",
    "Or",
    "Not",
    "TrueExpr",
    "Step",
    "Query",
    "Expr",
    "Operand",
    "LiteralValue",
    "COMPARE_OPS",
    "RESERVED_WORDS",
    "to_text",
    "OBJ_ID",
    "OBJ_TYPE",
]

LiteralValue = Union[str, int, float, bool, None]
COMPARE_OPS = ("=", "!=", "<", "<=", ">", ">=")
# Words the parser treats as keywords when they open a field; such segments are backquoted.
RESERVED_WORDS = frozenset({"and", "or", "not", "in", "true", "false", "null", "exists", "startswith", "endswith"})
_LITERAL_TYPES = (str, int, float, bool, type(None))
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _check_literal(value: object) -> None:
    if not isinstance(value, _LITERAL_TYPES):
        raise TypeError(f"query literals are str, int, float, bool or None, not {type(value).__name__}")


class Node:
    """Base of every AST node; `str(node)` is parseable query text."""

    __slots__ = ()

    def __str__(self) -> str:
        return to_text(self)


@dataclass(frozen=True, slots=True)
class Field(Node):
    """`obj_id`, `obj_type`, or a dotted property path into the object's value."""

    path: tuple[str, ...]

    def __post_init__(self) -> None:
        path = tuple(self.path)
        if not path or not all(isinstance(p, str) and p for p in path):
            raise ValueError(f"a field path needs at least one non-empty segment, got {self.path!r}")
        object.__setattr__(self, "path", path)



@dataclass(frozen=True, slots=True, eq=False)
class Literal(Node):
    value: LiteralValue

    def __post_init__(self) -> None:
        _check_literal(self.value)

    # Python says 1 == 1.0 == True; the query language does not, and compiled
    # predicates are cached by expression, so equality must see the type.
    def __eq__(self, other: object) -> bool:
        if type(other) is not Literal:
            return NotImplemented
        return (type(self.value), self.value) == (type(other.value), other.value)

    def __hash__(self) -> int:
        return hash((Literal, type(self.value), self.value))



Operand = Union[Field, Literal]


@dataclass(frozen=True, slots=True)
class Compare(Node):
    left: Operand
    op: str
    right: Operand

    def __post_init__(self) -> None:
        if self.op not in COMPARE_OPS:
            raise ValueError(f"unknown comparison operator {self.op!r}; use one of {' '.join(COMPARE_OPS)}")



@dataclass(frozen=True, slots=True, eq=False)
class In(Node):
    field: Field
    values: tuple[LiteralValue, ...]

    def __post_init__(self) -> None:
        values = tuple(self.values)
        if not values:
            raise ValueError("`in` needs at least one value")
        for v in values:
            _check_literal(v)
        object.__setattr__(self, "values", values)

    def _key(self) -> tuple[Any, ...]:
        return (self.field, tuple((type(v), v) for v in self.values))

    def __eq__(self, other: object) -> bool:
        if type(other) is not In:
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash((In, self._key()))



@dataclass(frozen=True, slots=True)
class Exists(Node):
    field: Field


@dataclass(frozen=True, slots=True)
class StartsWith(Node):
    field: Field
    prefix: str


@dataclass(frozen=True, slots=True)
class EndsWith(Node):
    field: Field
    suffix: str


@dataclass(frozen=True, slots=True)
class And(Node):
    items: tuple["Expr", ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "items", tuple(self.items))
        if not self.items:
            raise ValueError("And needs at least one item")



@dataclass(frozen=True, slots=True)
class Or(Node):
    items: tuple["Expr", ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "items", tuple(self.items))
        if not self.items:
            raise ValueError("Or needs at least one item")



@dataclass(frozen=True, slots=True)
class Not(Node):
    item: "Expr"


@dataclass(frozen=True, slots=True)
class TrueExpr(Node):
    """Matches every existing object: what the `*` step means."""



Expr = Union[Compare, In, Exists, StartsWith, EndsWith, And, Or, Not, TrueExpr]


@dataclass(frozen=True, slots=True)
class Step(Node):
    expr: Expr


@dataclass(frozen=True, slots=True)
class Query(Node):
    steps: tuple[Step, ...]
    # The text it was parsed from, for error messages and logs; not part of its identity.
    text: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "steps", tuple(self.steps))
        if not self.steps:
            raise ValueError("a query needs at least one step")



OBJ_ID = Field(("obj_id",))
OBJ_TYPE = Field(("obj_type",))


# ---------------------------------------------------------------- rendering

_NAMED_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b", "\f": "\\f"}


def _escape(text: str, quote: str) -> str:
    out = []
    for ch in text:
        if ch == quote:
            out.append("\\" + quote)
        elif ch in _NAMED_ESCAPES:
            out.append(_NAMED_ESCAPES[ch])
        elif ch < " " or ch == "\x7f" or "\ud800" <= ch <= "\udfff":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return quote + "".join(out) + quote


def _segment_text(seg: str) -> str:
    if _IDENT.match(seg) and seg.lower() not in RESERVED_WORDS:
        return seg
    return _escape(seg, "`")


def _value_text(value: LiteralValue) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _escape(value, '"')
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} has no query-text form; only finite numbers can be written")
        return repr(value)
    return str(value)


def _bool_text(expr: Node, parent: type | None) -> str:
    """Render `expr` as an operand of `parent`, parenthesised where the parser would regroup it."""
    text = to_text(expr)
    if isinstance(expr, Or) and parent in (And, Or, Not) and len(expr.items) > 1:
        return f"({text})"
    if isinstance(expr, And) and parent in (And, Not) and len(expr.items) > 1:
        return f"({text})"
    return text


def to_text(node: Node) -> str:
    """Canonical query text for any node; `parse`/`parse_expr` read it back to an equal node."""
    if isinstance(node, Field):
        return ".".join(_segment_text(s) for s in node.path)
    if isinstance(node, Literal):
        return _value_text(node.value)
    if isinstance(node, Compare):
        return f"{to_text(node.left)} {node.op} {to_text(node.right)}"
    if isinstance(node, In):
        return f"{to_text(node.field)} in ({', '.join(_value_text(v) for v in node.values)})"
    if isinstance(node, Exists):
        return f"exists({to_text(node.field)})"
    if isinstance(node, StartsWith):
        return f"startswith({to_text(node.field)}, {_value_text(node.prefix)})"
    if isinstance(node, EndsWith):
        return f"endswith({to_text(node.field)}, {_value_text(node.suffix)})"
    if isinstance(node, And):
        return " and ".join(_bool_text(i, And) for i in node.items)
    if isinstance(node, Or):
        return " or ".join(_bool_text(i, Or) for i in node.items)
    if isinstance(node, Not):
        return f"not {_bool_text(node.item, Not)}"
    if isinstance(node, TrueExpr):
        return "*"
    if isinstance(node, Step):
        return "*" if isinstance(node.expr, TrueExpr) else f"[{to_text(node.expr)}]"
    if isinstance(node, Query):
        return "".join("/" + to_text(s) for s in node.steps)
    raise TypeError(f"not a query node: {node!r}")
