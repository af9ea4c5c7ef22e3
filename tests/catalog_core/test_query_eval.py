"""Two-valued evaluation and obj_id seek bounds of the path query language."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from catalog_core.query import (
    OBJ_ID,
    And,
    Compare,
    EndsWith,
    Exists,
    Field,
    In,
    Literal,
    Not,
    Or,
    StartsWith,
    TrueExpr,
    compile_expr,
    evaluate,
    id_ranges,
    intersect,
    normalize,
    parse,
    parse_expr,
    ranges_contain,
    union,
)

VALUE: dict[str, Any] = {
    "obj_type": "partition",
    "name": "Sales",
    "n": 5,
    "f": 2.5,
    "b": True,
    "z": None,
    "s": "abc",
    "u": "\U0001F600",
    "lst": [1, 2],
    "d": {"k": 1},
    "stats": {"row_count": 1500, "columns": {"price": {"max": 9.5}, "unit price": {"max": 3}}},
}

CASES = [
    # numbers: int and float compare, bool is not a number
    ("n = 5", True), ("n = 5.0", True), ("f > 2", True), ("f < n", True), ("n < f", False),
    ("n != 5", False), ("n != 6", True), ("n >= 5", True), ("n > 5", False),
    ("n = true", False), ("b = 1", False), ("b != 1", False), ("b > 0", False), ("n in (true)", False),
    # missing fields: every comparison is false, `not` flips the whole result
    ("missing = 1", False), ("missing != 1", False), ("missing < 1", False), ("not missing = 1", True),
    ("not missing != 1", True), ("n = missing", False), ("missing = missing", False),
    # across types
    ('n = "5"', False), ('n != "5"', False), ('s < 5', False), ('s != 5', False), ("lst = 1", False),
    ("d = 1", False), ('s = null', False),
    # strings order by code point
    ('s < "abd"', True), ('s < "ABC"', False), ('s >= "abc"', True), ('s != "abd"', True),
    ('u > "\uffff"', True), ('"é" > "z"', True),
    # bool, null, lists and dicts: equality only
    ("b = true", True), ("b != false", True), ("b > false", False), ("b <= true", False),
    ("z = null", True), ("missing = null", False), ("n = null", False), ("z != null", False),
    ("n != null", False), ("z < 1", False), ("z <= null", False), ("not z = null", False),
    ("lst = lst", True), ("d = d", True), ("lst < lst", False), ("lst != d", False),
    # nested paths; a non-dict on the way is missing
    ("stats.row_count > 1000", True), ("stats.columns.price.max >= 9.5", True),
    ("stats.columns.`unit price`.max = 3", True), ("stats.columns.price.min = 1", False),
    ("s.x = 1", False), ("lst.x = 1", False), ("stats.row_count.x = 1", False),
    ("not stats.columns.nope.max > 1", True),
    # obj_id and obj_type
    ('obj_id = "p1"', True), ('obj_id != "p1"', False), ('obj_id < "p2"', True), ("obj_id = 1", False),
    ('obj_type = "partition"', True), ('obj_type in ("table", "partition")', True),
    ("obj_id.x = 1", False), ('"p" < obj_id', True), ('"p1" = obj_id', True),
    # literals on the left are mirrored; literal-only comparisons are constants
    ("5 = n", True), ("3 < n", True), ("6 <= n", False), ("1 = 1", True), ("1 = true", False),
    ('"a" < "b"', True), ("1 = 1.0", True),
    # in / not in
    ("n in (1, 5)", True), ("n in (5.0)", True), ('n in ("5")', False), ("b in (1)", False),
    ("b in (true)", True), ("z in (null)", True), ("missing in (null)", False), ("n in (null)", False),
    ("n not in (1, 2)", True), ("n not in (5)", False), ("missing not in (1)", True),
    ('lst in (1, "a")', False), ('d in ("a")', False), ('s in ("x", 1, "abc")', True),
    ("f in (2.5, false)", True),
    # exists
    ("exists(z)", True), ("exists(missing)", False), ("exists(stats.row_count)", True),
    ("exists(stats.row_count.x)", False), ("exists(obj_id)", True), ("exists(obj_type)", True),
    ("exists(lst)", True), ("not exists(missing)", True),
    # startswith / endswith: strings only
    ('startswith(s, "ab")', True), ('startswith(s, "")', True), ('startswith(s, "b")', False),
    ('startswith(n, "5")', False), ('startswith(missing, "")', False), ('endswith(s, "bc")', True),
    ('endswith(missing, "")', False), ('endswith(lst, "]")', False), ('startswith(obj_id, "p")', True),
    ('endswith(obj_id, "1")', True),
    # boolean structure, keywords in any case, fields case-sensitive
    ('not (n = 5 and s = "abc")', False), ('n = 1 or s = "abc"', True), ('n = 5 AND s = "abc"', True),
    ("N = 5", False), ('name = "Sales"', True), ("not not n = 5", True), ("*", True), ("not *", False),
    ('n = 1 or (b = true and not z != null)', True),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_two_valued_logic(text: str, expected: bool) -> None:
    expr = parse_expr(text)
    assert evaluate(expr, "p1", VALUE) is expected
    assert compile_expr(expr)("p1", VALUE) is expected


@pytest.mark.parametrize("text", ["n = 5", "missing = 1", "exists(n)", "*", 'startswith(obj_id, "")', "1 = 1"])
def test_absent_object(text: str) -> None:
    # value None: the object does not exist, so every atom is false and `not` flips it.
    expr = parse_expr(text)
    assert evaluate(expr, "p1", None) is False
    assert evaluate(Not(expr), "p1", None) is True
    assert evaluate(And((Not(expr), expr)), "p1", None) is False


def test_compiled_predicates_cached_by_typed_ast() -> None:
    v = {"x": True}
    assert evaluate(parse_expr("x = true"), "a", v) is True
    assert evaluate(parse_expr("x = 1"), "a", v) is False
    assert compile_expr(parse_expr("x = 1")) is compile_expr(parse_expr("x   =   1"))


def test_step_predicates() -> None:
    q = parse('/[obj_id = "wh"]/*/[obj_type = "table" and stats.row_count > 1000000]')
    pred = compile_expr(q.steps[2].expr)
    assert pred("orders", {"obj_type": "table", "stats": {"row_count": 2_000_000}})
    assert not pred("orders", {"obj_type": "table", "stats": {"row_count": 10}})
    assert not pred("orders", {"obj_type": "table"})
    assert not pred("orders", {"obj_type": "view", "stats": {"row_count": 2_000_000}})
    assert compile_expr(q.steps[1].expr)("anything", {})


def test_very_deep_expressions_compile() -> None:
    # Built programmatically (the parser caps nesting); must not hit CPython's source limits.
    expr: Any = Compare(Field(("n",)), "=", Literal(5))
    nots = 0
    for depth in range(302):
        if depth % 3:
            expr, nots = Not(expr), nots + 1
        else:
            expr = And((expr, Exists(Field(("s",)))))
    assert nots % 2 == 1  # with `s` present every And passes its item through: the base, negated
    assert evaluate(expr, "p1", VALUE) is False
    assert evaluate(expr, "p1", {"n": 4, "s": "x"}) is True
    wide = Or(tuple(Compare(Field(("n",)), "=", Literal(i)) for i in range(2000)))
    assert evaluate(wide, "p1", {"n": 1999}) is True
    assert evaluate(wide, "p1", {"n": 2000}) is False


# ---------------------------------------------------------------- compiled == reference semantics

def _ref_resolve(field: Field, obj_id: str, value: dict) -> tuple[bool, Any]:
    if field.path == ("obj_id",):
        return True, obj_id
    if field.path[0] == "obj_id":
        return False, None
    cur: Any = value
    for key in field.path:
        if not isinstance(cur, dict) or key not in cur:
            return False, None
        cur = cur[key]
    return True, cur


def _ref_kind(x: Any) -> str:
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, (int, float)):
        return "number"
    if x is None:
        return "null"
    return type(x).__name__


def _ref_compare(op: str, a: Any, b: Any) -> bool:
    if _ref_kind(a) != _ref_kind(b):
        return False
    if op in ("=", "!="):
        return (a == b) == (op == "=")
    if _ref_kind(a) not in ("number", "str"):
        return False
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def _ref_eval(expr: Any, obj_id: str, value: dict | None) -> bool:
    """The rules of DESIGN.md written the slow, obvious way."""
    if isinstance(expr, Not):
        return not _ref_eval(expr.item, obj_id, value)
    if isinstance(expr, And):
        return all(_ref_eval(i, obj_id, value) for i in expr.items)
    if isinstance(expr, Or):
        return any(_ref_eval(i, obj_id, value) for i in expr.items)
    if value is None:
        return False
    if isinstance(expr, TrueExpr):
        return True

    def operand(o: Any) -> tuple[bool, Any]:
        return (True, o.value) if isinstance(o, Literal) else _ref_resolve(o, obj_id, value)

    if isinstance(expr, Compare):
        (ok_a, a), (ok_b, b) = operand(expr.left), operand(expr.right)
        return ok_a and ok_b and _ref_compare(expr.op, a, b)
    ok, x = _ref_resolve(expr.field, obj_id, value)
    if not ok:
        return False
    if isinstance(expr, In):
        return any(_ref_compare("=", x, v) for v in expr.values)
    if isinstance(expr, Exists):
        return True
    if isinstance(expr, StartsWith):
        return isinstance(x, str) and x.startswith(expr.prefix)
    if isinstance(expr, EndsWith):
        return isinstance(x, str) and x.endswith(expr.suffix)
    raise AssertionError(expr)


_leaf_values = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([0.0, 1.0, 1.5, -2.5]),
    st.sampled_from(["", "a", "ab", "b", "B", "é"]),
)
_obj_values = st.recursive(
    _leaf_values,
    lambda kids: st.one_of(st.lists(kids, max_size=2), st.dictionaries(st.sampled_from(["x", "y"]), kids, max_size=2)),
    max_leaves=4,
)
_values = st.one_of(st.none(), st.fixed_dictionaries(
    {}, optional={"x": _obj_values, "y": _obj_values, "obj_type": _obj_values}))
_fields = st.sampled_from([("obj_id",), ("obj_type",), ("x",), ("y",), ("x", "x"), ("x", "y", "x"), ("obj_id", "x")]
                          ).map(Field)
_operands = st.one_of(_fields, _leaf_values.map(Literal))
_ops = st.sampled_from(["=", "!=", "<", "<=", ">", ">="])
_atoms = st.one_of(
    st.builds(Compare, _operands, _ops, _operands),
    st.builds(In, _fields, st.lists(_leaf_values, min_size=1, max_size=3).map(tuple)),
    st.builds(Exists, _fields),
    st.builds(StartsWith, _fields, st.sampled_from(["", "a", "b"])),
    st.builds(EndsWith, _fields, st.sampled_from(["", "a", "b"])),
    st.just(TrueExpr()),
)
_exprs = st.recursive(
    _atoms,
    lambda kids: st.one_of(st.lists(kids, min_size=2, max_size=3).map(lambda xs: And(tuple(xs))),
                           st.lists(kids, min_size=2, max_size=3).map(lambda xs: Or(tuple(xs))),
                           kids.map(Not)),
    max_leaves=8,
)


_SAMPLES = [None, True, False, 0, 1, -1, 1.0, 1.5, -2.5, "", "a", "ab", "B", "é", [1], [True], {"x": 1},
            {"x": True}, {"y": "a"}, {"x": {"x": 0}}]
# Each field of the atom strategy takes every kind of value, alone and next to another one.
_BATTERY = [None, {}] + [{"x": a, "y": b, "obj_type": a} for a in _SAMPLES for b in (a, "a", 1)]


@settings(max_examples=300, deadline=None)
@given(_atoms)
def test_compiled_atoms_match_reference(expr: Any) -> None:
    for value in _BATTERY:
        for obj_id in ("a", "b"):
            assert evaluate(expr, obj_id, value) is _ref_eval(expr, obj_id, value), (value, obj_id)


@settings(max_examples=1000, deadline=None)
@given(_exprs, st.sampled_from(["a", "ab", "b", "é"]), _values)
@pytest.mark.slow  # 36 s at load 10
def test_compiled_matches_reference(expr: Any, obj_id: str, value: Any) -> None:
    # Every sub-expression, so a wrong atom is not hidden by the and/or around it.
    stack = [expr]
    while stack:
        node = stack.pop()
        assert evaluate(node, obj_id, value) is _ref_eval(node, obj_id, value), node
        stack.extend(getattr(node, "items", ()))
        if isinstance(node, Not):
            stack.append(node.item)


# ---------------------------------------------------------------- seek bounds

def _ranges(text: str) -> list:
    return id_ranges(parse_expr(text))


@pytest.mark.parametrize(("text", "ranges"), [
    ('obj_id >= "d=2001-06-01" and obj_id < "d=2001-06-08"', [(b"d=2001-06-01", b"d=2001-06-08")]),
    ('obj_id = "x"', [(b"x", b"x\x00")]),
    ('obj_id > "x"', [(b"x\x00", None)]),
    ('obj_id >= "x"', [(b"x", None)]),
    ('obj_id < "x"', [(None, b"x")]),
    ('obj_id <= "x"', [(None, b"x\x00")]),
    ('"x" < obj_id', [(b"x\x00", None)]),
    ('"x" >= obj_id', [(None, b"x\x00")]),
    ('"x" = obj_id', [(b"x", b"x\x00")]),
    ('startswith(obj_id, "d=2001")', [(b"d=2001", b"d=2002")]),
    ('startswith(obj_id, "é")', [("é".encode(), b"\xc3\xaa")]),
    ('startswith(obj_id, "")', [(None, None)]),
    ('obj_id in ("b", "a", 3, "b")', [(b"a", b"a\x00"), (b"b", b"b\x00")]),
    ("obj_id in (1, null)", []),
    ("obj_id = 5", []),
    ("obj_id < true", []),
    ('obj_id = "a" and obj_id = "b"', []),
    ('obj_id = "a" or obj_id = "b"', [(b"a", b"a\x00"), (b"b", b"b\x00")]),
    ('obj_id >= "a" and obj_id < "m" or startswith(obj_id, "k")', [(b"a", b"m")]),
    ('obj_id < "b" or obj_id >= "b"', [(None, None)]),
    ('obj_id != "x"', [(None, b"x"), (b"x\x00", None)]),
    ('not obj_id = "x"', [(None, None)]),
    ('not not obj_id = "x"', [(b"x", b"x\x00")]),
    ('obj_type = "table"', [(None, None)]),
    ('obj_type = "table" and obj_id = "x"', [(b"x", b"x\x00")]),
    ('obj_type = "table" or obj_id = "x"', [(None, None)]),
    ('endswith(obj_id, "x")', [(None, None)]),
    ("obj_id = name", [(None, None)]),
    ("1 = 2", []),
    ("*", [(None, None)]),
])
def test_exact_ranges(text: str, ranges: list) -> None:
    assert _ranges(text) == ranges


def test_range_helpers() -> None:
    assert normalize([(b"c", b"d"), (b"a", b"b"), (b"b", b"c"), (b"x", b"x"), (b"", b"a")]) == [(None, b"d")]
    assert intersect([(None, b"m")], [(b"c", None)]) == [(b"c", b"m")]
    assert intersect([(b"a", b"b")], [(b"b", b"c")]) == []
    assert union([(b"a", b"b")], [(b"c", b"d")]) == [(b"a", b"b"), (b"c", b"d")]
    assert union([(b"a", b"c")], [(b"b", None)]) == [(b"a", None)]
    ranges = [(None, b"b"), (b"d", b"e"), (b"x", None)]
    assert [ranges_contain(ranges, k) for k in (b"", b"a", b"b", b"c", b"d", b"d\xff", b"e", b"x", b"\xff")] == [
        True, True, False, False, True, True, False, True, True]
    assert not ranges_contain([], b"a")


_key_bytes = st.binary(max_size=3).map(lambda b: bytes(x % 4 + 0x61 for x in b))  # over "abcd"
_bounds = st.one_of(st.none(), _key_bytes)
_range_lists = st.lists(st.tuples(_bounds, _bounds), max_size=4)


def _raw_contains(ranges: list, key: bytes) -> bool:
    return any((lo is None or lo <= key) and (hi is None or key < hi) for lo, hi in ranges)


@settings(max_examples=500, deadline=None)
@given(_range_lists, _range_lists, _key_bytes)
def test_range_algebra_is_exact(a: list, b: list, key: bytes) -> None:
    for out in (normalize(a), intersect(a, b), union(a, b)):
        # sorted, disjoint, non-touching, non-empty; lo b"" is written as None
        for (_lo1, hi1), (lo2, _hi2) in zip(out, out[1:]):
            assert hi1 is not None and lo2 is not None and hi1 < lo2
        assert all(lo != b"" and (hi is None or (lo or b"") < hi) for lo, hi in out)
    assert ranges_contain(normalize(a), key) == _raw_contains(a, key)
    assert ranges_contain(intersect(a, b), key) == (_raw_contains(a, key) and _raw_contains(b, key))
    assert ranges_contain(union(a, b), key) == (_raw_contains(a, key) or _raw_contains(b, key))


# Few characters, so ids and literals often equal or prefix each other; multi-byte and
# edge code points so byte order vs code point order is exercised.
_ALPHABET = ["a", "b", "z", "A", " ", "-", "=", "/", "\x01", "\x7f", "é", "ÿ", "日", "\uffff", "😀"]
_id_text = st.text(st.sampled_from(_ALPHABET), max_size=4)
_id_literals = st.one_of(_id_text, st.integers(-1, 1), st.none(), st.booleans())
_bound_fields = st.sampled_from([OBJ_ID, OBJ_ID, Field(("obj_type",)), Field(("n",))])
_bound_atoms = st.one_of(
    st.builds(Compare, st.just(OBJ_ID), _ops, _id_literals.map(Literal)),
    st.builds(Compare, _id_literals.map(Literal), _ops, st.just(OBJ_ID)),
    st.builds(Compare, _bound_fields, _ops, st.one_of(_bound_fields, _id_literals.map(Literal))),
    st.builds(In, _bound_fields, st.lists(_id_literals, min_size=1, max_size=3).map(tuple)),
    st.builds(StartsWith, _bound_fields, _id_text),
    st.builds(EndsWith, _bound_fields, _id_text),
    st.builds(Exists, _bound_fields),
    st.just(TrueExpr()),
)
_bound_exprs = st.recursive(
    _bound_atoms,
    lambda kids: st.one_of(st.lists(kids, min_size=2, max_size=3).map(lambda xs: And(tuple(xs))),
                           st.lists(kids, min_size=2, max_size=3).map(lambda xs: Or(tuple(xs))),
                           kids.map(Not)),
    max_leaves=8,
)


def _strings_in(expr: Any) -> list[str]:
    if isinstance(expr, (And, Or)):
        return [s for i in expr.items for s in _strings_in(i)]
    if isinstance(expr, Not):
        return _strings_in(expr.item)
    if isinstance(expr, Compare):
        return [o.value for o in (expr.left, expr.right) if isinstance(o, Literal) and isinstance(o.value, str)]
    if isinstance(expr, In):
        return [v for v in expr.values if isinstance(v, str)]
    if isinstance(expr, StartsWith):
        return [expr.prefix]
    return []


@settings(max_examples=1500, deadline=None)
@given(_bound_exprs, st.data())
@pytest.mark.slow  # 1,500 examples: 71 s at load 10
def test_id_ranges_are_sound(expr: Any, data: st.DataObject) -> None:
    ranges = id_ranges(expr)
    assert ranges == normalize(ranges)
    # Ids near the expression's own literals are where bounds go wrong.
    near = [s + suffix for s in _strings_in(expr) for suffix in ("", "a", "\x01", "😀")]
    ids = [i for i in near + data.draw(st.lists(_id_text, min_size=1, max_size=4)) if i]
    assume(ids)
    value = data.draw(st.one_of(
        st.none(),
        st.fixed_dictionaries({}, optional={"obj_type": st.one_of(_id_text, st.none()),
                                            "n": st.one_of(_id_text, st.integers(-1, 1))}),
    ))
    for obj_id in ids:
        if evaluate(expr, obj_id, value):
            assert ranges_contain(ranges, obj_id.encode()), (obj_id, ranges)
