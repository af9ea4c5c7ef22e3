"""Path-query cost is linear in the query's size, with documented caps (issue 17).

Before: an `obj_id = … or obj_id = …` chain was quadratic in bounds (10k terms: 16 s embedded,
84 s over HTTP; the 20k terms here would take over a minute) and compiling an `n != 1 and …` chain took about 1,000x its size in memory;
a query of 1,000 steps ended in RecursionError. The sizes here take milliseconds to a second
when linear and minutes when quadratic; the timeout marker is the guard, the assertions are
about results (bench/bench_query_cost.py measures the scaling)."""

from __future__ import annotations

import tracemalloc

import pytest

import catalog_core as cc
from catalog_core.errors import QuerySyntaxError
from catalog_core.query import And, Compare, Field, Literal, Or, compile_expr, id_ranges, parse, parse_expr
from catalog_core.query.parser import MAX_NESTING, MAX_QUERY_CHARS, MAX_STEPS

N_CHILDREN = 2000
N_TERMS = 20_000


@pytest.fixture(scope="module", params=["embedded", "http"])
def cat(request, tmp_path_factory):
    engine = cc.Catalog.open(str(tmp_path_factory.mktemp("cost")))
    with engine.transaction(author="t", message="children") as t:
        t.add("/p", {"kind": "parent"})
        for i in range(N_CHILDREN):
            t.add(f"/p/c{i}", {"n": i})
    if request.param == "embedded":
        yield engine
    else:
        from mcp_server.http.server import serve_in_thread

        server = serve_in_thread(engine)
        client = cc.connect(server.url)
        yield client
        client.close()
        server.stop()
    engine.close()


def or_chain(ids):
    return " or ".join(f'obj_id = "{i}"' for i in ids)


@pytest.mark.timeout(30)
def test_twenty_thousand_term_or_chain_of_ids_returns_the_named_objects(cat):
    # every third child by name, among ids that mostly do not exist, in scrambled order
    ids = [f"c{(i * 7919) % N_TERMS}" for i in range(N_TERMS)]
    got = cat.query(f'/[obj_id = "p"]/[{or_chain(ids)}]')
    assert sorted(o.path for o in got) == sorted(f"/p/c{i}" for i in range(N_CHILDREN))
    few = [f"c{i}" for i in range(0, N_TERMS, 3)]
    assert sorted(o.value["n"] for o in cat.query(f'/[obj_id = "p"]/[{or_chain(few)}]')) == list(range(0, N_CHILDREN, 3))


@pytest.mark.timeout(30)
def test_twenty_thousand_term_and_chain_returns_the_right_objects(cat):
    chain = " and ".join(f"n != {2 * i}" for i in range(N_TERMS))  # excludes every even n
    got = cat.query(f'/[obj_id = "p"]/[{chain}]')
    assert sorted(o.value["n"] for o in got) == list(range(1, N_CHILDREN, 2))


@pytest.mark.timeout(30)
def test_bounds_of_a_big_or_are_the_sorted_merged_points():
    ids = [f"k{(i * 7919) % 20_000:05d}" for i in range(20_000)]
    ranges = id_ranges(parse_expr(or_chain(ids)))
    assert len(ranges) == 20_000
    assert ranges == sorted(ranges)
    assert ranges[0] == (b"k00000", b"k00000\x00")
    # an `and` of two big ors keeps only the common ids
    both = id_ranges(parse_expr(f"({or_chain(ids[:6_000])}) and ({or_chain(ids[4_000:10_000])})"))
    assert [lo for lo, _ in both] == sorted(i.encode() for i in ids[4_000:6_000])


@pytest.mark.timeout(30)
def test_compiling_a_long_and_chain_takes_memory_linear_in_its_size():
    text = " and ".join(f"n != {i}" for i in range(10_000))
    expr = parse_expr(text)
    tracemalloc.start()
    try:
        pred = compile_expr(expr)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100 * len(text)  # was ~1,000x
    assert pred("x", {"n": 10_000}) and not pred("x", {"n": 9_999}) and not pred("x", {"n": 0})
    assert not pred("x", None)


@pytest.mark.timeout(30)
def test_wide_chains_evaluate_like_their_small_equivalent():
    big_or = Or(tuple(Compare(Field(("n",)), "=", Literal(i)) for i in range(5000)))
    big_and = And(tuple(Compare(Field(("n",)), "!=", Literal(i)) for i in range(5000)))
    nested = And((big_or, Or((big_and, Compare(Field(("m",)), "=", Literal(1))))))
    p_or, p_and, p_nested = compile_expr(big_or), compile_expr(big_and), compile_expr(nested)
    for v in ({"n": 0}, {"n": 4999}, {"n": 5000}, {"n": -1}, {"n": "0"}, {}, {"n": 3, "m": 1}):
        n = v.get("n")
        in_range = type(n) is int and 0 <= n < 5000
        assert p_or("x", v) is in_range
        assert p_and("x", v) is (type(n) is int and not in_range)
        assert p_nested("x", v) is (in_range and v.get("m") == 1)
    assert p_or("x", None) is False and p_and("x", None) is False


def test_a_thousand_steps_is_a_syntax_error_with_a_position(cat):
    text = "/*" * 1000
    with pytest.raises(QuerySyntaxError) as err:
        cat.query(text)
    assert err.value.position == 2 * MAX_STEPS
    assert f"at most {MAX_STEPS} steps" in err.value.message
    assert len(cat.query("/*" * MAX_STEPS)) == 0  # the limit itself is allowed


@pytest.mark.parametrize("text, where", [
    ("/[" + "(" * 5000 + "a = 1" + ")" * 5000 + "]", 2 + MAX_NESTING),
    ("/[" + "not " * 5000 + "a = 1]", 2 + 4 * MAX_NESTING),
    ("/[" + "(not " * 3000 + "a = 1" + ")" * 3000 + "]", 2 + 5 * (MAX_NESTING // 2)),
])
def test_deep_nesting_is_a_syntax_error_with_a_position(cat, text, where):
    with pytest.raises(QuerySyntaxError) as err:
        cat.query(text)
    assert err.value.position == where
    assert "nested too deeply" in err.value.message
    assert len(err.value.message) < 1000  # a window of the text, not all of it


def test_a_query_longer_than_the_cap_is_a_syntax_error(cat):
    text = "/[" + or_chain(f"c{i}" for i in range(MAX_QUERY_CHARS // 10)) + "]"
    assert len(text) > MAX_QUERY_CHARS
    with pytest.raises(QuerySyntaxError) as err:
        parse(text)
    assert err.value.position == MAX_QUERY_CHARS and "too long" in err.value.message
