"""The path query language: AST, parser, two-valued evaluation and obj_id seek bounds.

Pure: nothing here touches storage; the executor builds on these pieces.
"""

from __future__ import annotations

from catalog_core.query.ast import (
    OBJ_ID,
    OBJ_TYPE,
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
    Query,
    StartsWith,
    Step,
    TrueExpr,
    to_text,
)
from catalog_core.query.bounds import Range, id_ranges, intersect, normalize, ranges_contain, union
from catalog_core.query.evaluate import MISSING, Predicate, compare_values, compile_expr, evaluate, resolve
from catalog_core.query.parser import parse, parse_expr

__all__ = [
    "parse",
    "parse_expr",
    "to_text",
    "compile_expr",
    "evaluate",
    "resolve",
    "compare_values",
    "MISSING",
    "Predicate",
    "id_ranges",
    "ranges_contain",
    "intersect",
    "union",
    "normalize",
    "Range",
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
    "OBJ_ID",
    "OBJ_TYPE",
]
