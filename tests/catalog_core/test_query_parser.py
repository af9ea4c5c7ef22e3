"""Parser, AST and rendering of the path query language (DESIGN.md, "Path query language")."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from catalog_core.errors import QuerySyntaxError
from catalog_core.query import (
    OBJ_ID,
    OBJ_TYPE,
    And,
    Compare,
    EndsWith,
    Exists,
    Field,
    In,
    Literal,
    Not,
    Or,
    Query,
    StartsWith,
    Step,
    TrueExpr,
    parse,
    parse_expr,
    to_text,
)


def F(dotted: str) -> Field:
    return Field(tuple(dotted.split(".")))


def eq(field: str, value: object) -> Compare:
    return Compare(F(field), "=", Literal(value))


# ---------------------------------------------------------------- DESIGN.md examples

DESIGN_EXAMPLES = {
    '/[obj_id = "retail"]/[name = "Sales"]/[region = "Asia" and category = "clothes"]/*': Query((
        Step(eq("obj_id", "retail")),
        Step(eq("name", "Sales")),
        Step(And((eq("region", "Asia"), eq("category", "clothes")))),
        Step(TrueExpr()),
    )),
    '/[obj_id = "wh"]/[obj_id = "sales"]/[obj_id = "orders"]'
    '/[obj_id >= "d=2001-06-01" and obj_id < "d=2001-06-08"]/*': Query((
        Step(eq("obj_id", "wh")),
        Step(eq("obj_id", "sales")),
        Step(eq("obj_id", "orders")),
        Step(And((Compare(OBJ_ID, ">=", Literal("d=2001-06-01")), Compare(OBJ_ID, "<", Literal("d=2001-06-08"))))),
        Step(TrueExpr()),
    )),
    '/[obj_id = "wh"]/*/[obj_type = "table" and stats.row_count > 1000000]': Query((
        Step(eq("obj_id", "wh")),
        Step(TrueExpr()),
        Step(And((eq("obj_type", "table"), Compare(F("stats.row_count"), ">", Literal(1000000))))),
    )),
}


@pytest.mark.parametrize("text", list(DESIGN_EXAMPLES))
def test_design_examples_parse(text: str) -> None:
    q = parse(text)
    assert q == DESIGN_EXAMPLES[text]
    assert q.text == text
    assert parse(to_text(q)) == q
    assert parse(str(q)) == q


def test_plan_files_where_clause() -> None:
    expr = parse_expr('sold_date >= "2001-06-01" and sold_date < "2001-06-02"')
    assert expr == And((Compare(F("sold_date"), ">=", Literal("2001-06-01")),
                        Compare(F("sold_date"), "<", Literal("2001-06-02"))))


# ---------------------------------------------------------------- accepted syntax

EXPRS = {
    # precedence: not > and > or
    "a = 1 or b = 2 and c = 3": Or((eq("a", 1), And((eq("b", 2), eq("c", 3))))),
    "(a = 1 or b = 2) and c = 3": And((Or((eq("a", 1), eq("b", 2))), eq("c", 3))),
    "not a = 1 and b = 2": And((Not(eq("a", 1)), eq("b", 2))),
    "not (a = 1 and b = 2)": Not(And((eq("a", 1), eq("b", 2)))),
    "not not a = 1": Not(Not(eq("a", 1))),
    "a = 1 or b = 2 or c = 3": Or((eq("a", 1), eq("b", 2), eq("c", 3))),
    # keywords are case-insensitive, field names are not
    "A = 1 AND b = TRUE Or NOT c = Null": Or((And((eq("A", 1), eq("b", True))), Not(eq("c", None)))),
    # literals
    "x = -5": eq("x", -5),
    "x = 1000000": eq("x", 1000000),
    "x = 1.5": eq("x", 1.5),
    "x = -0.25": eq("x", -0.25),
    "x = 1e6": eq("x", 1e6),
    "x = 2.5E-3": eq("x", 2.5e-3),
    "x = 1e+16": eq("x", 1e16),
    "x = false": eq("x", False),
    "x = 'single \"quoted\"'": eq("x", 'single "quoted"'),
    r'x = "a\"b\\c\nd\te\u00e9\/"': eq("x", 'a"b\\c\nd\te\u00e9/'),
    r'x = "\ud83d\ude00"': eq("x", "\U0001F600"),
    r"x = 'it\'s'": eq("x", "it's"),
    'x = "日本"': eq("x", "日本"),
    # operators, operands on either side
    "a != 1": Compare(F("a"), "!=", Literal(1)),
    "a<=1": Compare(F("a"), "<=", Literal(1)),
    "a>=1": Compare(F("a"), ">=", Literal(1)),
    "a == 1": eq("a", 1),
    '"x" < obj_id': Compare(Literal("x"), "<", OBJ_ID),
    "a = b.c": Compare(F("a"), "=", F("b.c")),
    "1 = 1": Compare(Literal(1), "=", Literal(1)),
    # fields
    "stats.columns.price.max > 3": Compare(F("stats.columns.price.max"), ">", Literal(3)),
    "columns.`unit price`.max > 3": Compare(Field(("columns", "unit price", "max")), ">", Literal(3)),
    r"`a\`b` = 1": Compare(Field(("a`b",)), "=", Literal(1)),
    "`and` = 1": eq("and", 1),
    "stats.in = 1": Compare(Field(("stats", "in")), "=", Literal(1)),
    "stats . row_count = 1": eq("stats.row_count", 1),
    "exists = 1": eq("exists", 1),
    # in / not in / functions
    'obj_id in ("a", "b")': In(OBJ_ID, ("a", "b")),
    "x IN (1, 2.5, true, null, 'z')": In(F("x"), (1, 2.5, True, None, "z")),
    'obj_type not in ("file")': Not(In(OBJ_TYPE, ("file",))),
    "not x in (1)": Not(In(F("x"), (1,))),
    "exists(stats.row_count)": Exists(F("stats.row_count")),
    'startswith(obj_id, "d=2001")': StartsWith(OBJ_ID, "d=2001"),
    "ENDSWITH(path, '.parquet')": EndsWith(F("path"), ".parquet"),
    "*": TrueExpr(),
}


@pytest.mark.parametrize("text", list(EXPRS))
def test_expressions(text: str) -> None:
    expr = parse_expr(text)
    assert expr == EXPRS[text]
    assert parse_expr(to_text(expr)) == expr
    assert parse(f"/[{text}]").steps[0].expr == expr


def test_whitespace_between_tokens() -> None:
    q = parse(' / [ category = "clothes" ]/ * ')
    assert q == Query((Step(eq("category", "clothes")), Step(TrueExpr())))
    assert parse('/[category="clothes"]/*') == q
    assert parse('/\n[category\t=\n"clothes"]\n/*') == q


def test_literal_equality_sees_types() -> None:
    # 1 == 1.0 == True in Python; not in the query language (and compiled predicates are cached by AST).
    assert parse_expr("x = 1") != parse_expr("x = true")
    assert parse_expr("x = 1") != parse_expr("x = 1.0")
    assert parse_expr("x in (1)") != parse_expr("x in (true)")
    assert len({Literal(1), Literal(1.0), Literal(True)}) == 3
    assert parse_expr("x = 1.0") == Compare(F("x"), "=", Literal(1.0))


def test_query_text_is_not_identity() -> None:
    assert parse("/*") == parse(" /  * ")
    assert hash(parse("/*")) == hash(parse(" /  * "))


def test_ast_validation() -> None:
    with pytest.raises(ValueError):
        Field(())
    with pytest.raises(ValueError):
        Field(("a", ""))
    with pytest.raises(TypeError):
        Literal([1])
    with pytest.raises(ValueError):
        Compare(F("a"), "<>", Literal(1))
    with pytest.raises(ValueError):
        In(F("a"), ())
    with pytest.raises(ValueError):
        Query(())
    with pytest.raises(ValueError):
        to_text(Literal(math.nan))


def test_rendering_quotes_what_needs_quoting() -> None:
    assert to_text(Field(("stats", "unit price", "and"))) == "stats.`unit price`.`and`"
    assert to_text(Literal('a"b\n')) == r'"a\"b\n"'
    assert to_text(Not(Or((eq("a", 1), eq("b", 2))))) == "not (a = 1 or b = 2)"
    assert to_text(And((Or((eq("a", 1), eq("b", 2))), eq("c", 3)))) == "(a = 1 or b = 2) and c = 3"
    assert str(parse('/[obj_id="x"]/*')) == '/[obj_id = "x"]/*'


# ---------------------------------------------------------------- round trip over random ASTs

_segments = st.one_of(
    st.sampled_from(["a", "b", "stats", "row_count", "obj_id", "obj_type", "and", "OR", "in", "null", "True",
                     "exists", "x_1", "_y"]),
    st.text(min_size=1, max_size=5),
)
_fields = st.lists(_segments, min_size=1, max_size=3).map(lambda p: Field(tuple(p)))
_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
)
_operands = st.one_of(_fields, _values.map(Literal))
_atoms = st.one_of(
    st.builds(Compare, _operands, st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), _operands),
    st.builds(In, _fields, st.lists(_values, min_size=1, max_size=4).map(tuple)),
    st.builds(Exists, _fields),
    st.builds(StartsWith, _fields, st.text(max_size=5)),
    st.builds(EndsWith, _fields, st.text(max_size=5)),
    st.just(TrueExpr()),
)
exprs = st.recursive(
    _atoms,
    lambda children: st.one_of(
        st.lists(children, min_size=2, max_size=3).map(lambda xs: And(tuple(xs))),
        st.lists(children, min_size=2, max_size=3).map(lambda xs: Or(tuple(xs))),
        children.map(Not),
    ),
    max_leaves=10,
)
queries = st.lists(exprs.map(Step), min_size=1, max_size=4).map(lambda s: Query(tuple(s)))


@settings(max_examples=400, deadline=None)
@given(queries)
def test_round_trip_random_queries(q: Query) -> None:
    text = to_text(q)
    assert parse(text) == q
    assert to_text(parse(text)) == text


@settings(max_examples=400, deadline=None)
@given(exprs)
def test_round_trip_random_exprs(expr) -> None:
    assert parse_expr(to_text(expr)) == expr


# ---------------------------------------------------------------- syntax errors

ERRORS = [
    # (query, position, words the `expected` description must contain)
    ("", 0, "'/'"),
    ("   ", 3, "'/'"),
    ('[obj_id = "a"]', 0, "'/'"),
    ("/", 1, "step"),
    ("/*/", 3, "step"),
    ('/[obj_id = "a"]/', 16, "step"),
    ('/[obj_id = "a]', 11, 'closing "'),
    ("/[obj_id = 'a]", 11, "closing '"),
    ("/[`unit price = 1]", 2, "closing `"),
    ('/[obj_id # "a"]', 9, "comparison operator"),
    ('/[obj_id ! "a"]', 9, "comparison operator"),
    ('/[obj_id = "a" & b = 1]', 15, "']'"),
    ("/[obj_id = ]", 11, "field or a literal"),
    ('/[= "a"]', 2, "expression"),
    ('/[obj_id "a"]', 9, "comparison operator"),
    ('/[obj_id = "a" and]', 18, "expression"),
    ("/[]", 2, "expression"),
    ('/[(obj_id = "a"]', 15, "')'"),
    ('/[obj_id = "a"))]', 14, "']'"),
    ('/[obj_id = "a"', 14, "']'"),
    ('/[obj_id = "a"]]', 15, "end of query"),
    ("/* foo", 3, "end of query"),
    ("/**", 2, "end of query"),
    (r'/[x = "a\q"]', 8, "escape"),
    (r'/[x = "a\u12"]', 8, "hex"),
    (r'/[x = "\ud800"]', 7, "surrogate"),
    ("/[x in ()]", 8, "literal"),
    ("/[x in (1,)]", 10, "literal"),
    ("/[x in 1]", 7, "'('"),
    ("/[x in (1 2)]", 10, "')'"),
    ("/[startswith(x, 5)]", 16, "string"),
    ("/[endswith(x, y)]", 14, "string"),
    ('/[startswith("x", "y")]', 13, "field"),
    ("/[exists(x]", 10, "')'"),
    ("/[a. = 1]", 5, "field name"),
    ("/[`` = 1]", 2, "field name"),
    ("/[x = 1e999]", 6, "finite"),
    ("/[x = 1 5]", 8, "']'"),
    ("/[5]", 3, "comparison operator"),
    ("/[x < and]", 6, "field or a literal"),
    ("/[" + "(" * 70 + "x = 1" + ")" * 70 + "]", 66, "nesting"),
    ("/[" + "not " * 70 + "x = 1]", 258, "nesting"),
]


@pytest.mark.parametrize(("text", "position", "expected"), ERRORS)
def test_syntax_errors(text: str, position: int, expected: str) -> None:
    with pytest.raises(QuerySyntaxError) as info:
        parse(text)
    err = info.value
    assert err.position == position
    assert expected in err.expected
    assert f"position {position}" in err.message
    assert err.text == text
    assert err.details["position"] == position
    # The caret line points at the offending character.
    assert err.message.splitlines()[-1] == "  " + " " * position + "^"


EXPR_ERRORS = [
    ("", 0, "expression"),
    ("a = 1 ]", 6, "end of expression"),
    ("a = 1 b = 2", 6, "end of expression"),
    ("x = ", 4, "field or a literal"),
    ("/[a = 1]", 0, "expression"),
]


@pytest.mark.parametrize(("text", "position", "expected"), EXPR_ERRORS)
def test_expression_syntax_errors(text: str, position: int, expected: str) -> None:
    with pytest.raises(QuerySyntaxError) as info:
        parse_expr(text)
    assert info.value.position == position
    assert expected in info.value.expected
