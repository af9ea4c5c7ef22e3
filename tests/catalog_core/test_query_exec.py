"""Correlated-scan executor and file planning, checked against a reference evaluator."""

import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import catalog_core as cc
from catalog_core import errors
from catalog_core.model import QueryStats

# ---------------------------------------------------------------- reference model

IDS = ["a", "b", "ab", "b c", "é", "x=1", "x=2", "z"]
_MISSING = object()


def ref_field(field, obj_id, value):
    if field == "obj_id":
        return obj_id
    return value.get(field, _MISSING)


def ref_eval(expr, obj_id, value):
    """A deliberately naive evaluator over the tuple-encoded expressions generated below."""
    kind = expr[0]
    if kind == "true":
        return True
    if kind == "and":
        return ref_eval(expr[1], obj_id, value) and ref_eval(expr[2], obj_id, value)
    if kind == "or":
        return ref_eval(expr[1], obj_id, value) or ref_eval(expr[2], obj_id, value)
    if kind == "not":
        return not ref_eval(expr[1], obj_id, value)
    if kind == "startswith":
        v = ref_field(expr[1], obj_id, value)
        return isinstance(v, str) and v.startswith(expr[2])
    if kind == "in":
        v = ref_field(expr[1], obj_id, value)
        return any(type(v) is type(c) and v == c for c in expr[2])
    _, field, op, lit = expr
    v = ref_field(field, obj_id, value)
    if v is _MISSING:
        return False
    nums = (int, float)
    if not ((type(v) in nums and type(lit) in nums) or type(v) is type(lit)):
        return False
    return {"=": v == lit, "!=": v != lit, "<": v < lit, "<=": v <= lit, ">": v > lit, ">=": v >= lit}[op]


def to_query_text(expr):
    kind = expr[0]
    if kind == "true":
        return "*"
    if kind in ("and", "or"):
        return f"({to_query_text(expr[1])} {kind} {to_query_text(expr[2])})"
    if kind == "not":
        return f"not ({to_query_text(expr[1])})"
    if kind == "startswith":
        return f'startswith({expr[1]}, "{expr[2]}")'
    if kind == "in":
        return f"{expr[1]} in ({', '.join(_lit(c) for c in expr[2])})"
    return f"{expr[1]} {expr[2]} {_lit(expr[3])}"


def _lit(v):
    return f'"{v}"' if isinstance(v, str) else repr(v)


literal = st.one_of(st.sampled_from(IDS), st.integers(-2, 5), st.sampled_from([1.5, "1"]))
atom = st.one_of(
    st.tuples(st.just("cmp"), st.just("obj_id"), st.sampled_from(["=", "!=", "<", "<=", ">", ">="]),
              st.sampled_from(IDS + ["", "b"])),
    st.tuples(st.just("cmp"), st.just("x"), st.sampled_from(["=", "!=", "<", ">="]), literal),
    st.tuples(st.just("startswith"), st.sampled_from(["obj_id", "x"]), st.sampled_from(["a", "x=", "b ", ""])),
    st.tuples(st.just("in"), st.sampled_from(["obj_id", "x"]), st.lists(literal, min_size=1, max_size=3).map(tuple)),
    st.just(("true",)),
)
exprs = st.recursive(atom, lambda sub: st.one_of(
    st.tuples(st.sampled_from(["and", "or"]), sub, sub), st.tuples(st.just("not"), sub)), max_leaves=4)

# a history of write sets over a small tree of depth <= 3: (kind, path, x, leaf)
path_strategy = st.lists(st.sampled_from(IDS), min_size=1, max_size=3).map(lambda ps: "/" + "/".join(ps))
write = st.tuples(st.sampled_from(["put", "put", "put", "remove"]), path_strategy,
                  st.one_of(st.integers(-2, 5), st.sampled_from(["a", "x=1"]), st.none()), st.booleans())


def apply_model(model, kind, path, x, leaf):
    """Mirror of the engine semantics on a dict {path: (value, leaf)}; returns False if refused."""
    parent = path.rsplit("/", 1)[0] or "/"
    if kind == "remove":
        if path not in model:
            return False
        for p in [p for p in model if p == path or p.startswith(path + "/")]:
            del model[p]
        return True
    if parent != "/" and (parent not in model or model[parent][1]):
        return False
    if path in model and (model[path][1] or leaf):
        return False  # leaves are immutable; a path can't turn into a leaf by update
    value = {"obj_type": "leaf" if leaf else "node"}
    if x is not None:
        value["x"] = x
    model[path] = (value, leaf)
    return True


def ref_query(model, steps):
    contexts = ["/"]
    for step in steps:
        nxt = []
        for ctx in contexts:
            for p, (value, _leaf) in model.items():
                parent = p.rsplit("/", 1)[0] or "/"
                if parent == ctx and ref_eval(step, p.rsplit("/", 1)[1], value):
                    nxt.append(p)
        contexts = nxt
    return sorted(contexts)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=st.lists(st.lists(write, min_size=1, max_size=6), min_size=1, max_size=5),
       queries=st.lists(st.lists(exprs, min_size=1, max_size=3), min_size=1, max_size=4),
       data=st.data())
def test_executor_matches_reference(history, queries, data):
    tmp = tempfile.mkdtemp()
    cat = cc.Catalog.open(tmp)
    try:
        model, snapshots = {}, {0: {}}
        for batch in history:
            txn = cat.transaction()
            trial = dict(model)
            for kind, path, x, leaf in batch:
                if not apply_model(trial, kind, path, x, leaf):
                    continue
                if kind == "remove":
                    txn.remove(path)
                elif path in model or any(op.path == path for op in txn.ops if op.kind != "remove"):
                    txn.update(path, trial[path][0])
                else:
                    txn.add(path, trial[path][0], leaf=leaf)
            if not txn.ops:
                txn.abort()
                continue
            try:
                vid = txn.commit()
            except errors.PreconditionError:
                continue  # e.g. remove then re-add sequences the simple mirror orders differently
            model = trial
            snapshots[vid] = dict(model)
        for steps in queries:
            vid = data.draw(st.sampled_from(sorted(snapshots)))
            text = "/" + "/".join(s if s == "*" else f"[{s}]" for s in map(to_query_text, steps))
            got = sorted(o.path for o in cat.query(text, vid=vid))
            assert got == ref_query(snapshots[vid], steps), (text, vid)
    finally:
        cat.close()
        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------- focused cases

@pytest.fixture
def forest(cat):
    """50 tables x 40 partitions x 3 files."""
    with cat.transaction() as t:
        t.add("/wh", {"obj_type": "catalog"})
        t.add("/wh/ns", {"obj_type": "namespace"})
        for i in range(50):
            tp = f"/wh/ns/t{i:02d}"
            t.add(tp, {"obj_type": "table", "stats": {"row_count": i * 1000}})
            for d in range(40):
                pp = f"{tp}/d=2001-06-{d + 1:02d}"
                t.add(pp, {"obj_type": "partition", "d": f"2001-06-{d + 1:02d}"})
                for f in range(3):
                    t.add(f"{pp}/f{f}", {"obj_type": "file", "row_count": f}, leaf=True)
    return cat


def test_cost_follows_selectivity(forest):
    narrow = forest.explain('/[obj_id = "wh"]/[obj_id = "ns"]/[obj_id = "t07"]/[obj_id = "d=2001-06-03"]/*')
    wide = forest.explain('/[obj_id = "wh"]/[obj_id = "ns"]/*/*/*')
    ranged = forest.explain('/[obj_id = "wh"]/[obj_id = "ns"]/[obj_id = "t07"]'
                            '/[obj_id >= "d=2001-06-01" and obj_id < "d=2001-06-08"]/*')
    assert narrow.matched == 3 and wide.matched == 50 * 40 * 3 and ranged.matched == 7 * 3
    assert narrow.scanned <= 8  # wh, ns, t07, one partition, 3 files (+ nothing else)
    assert ranged.scanned <= 3 + 7 + 21
    assert wide.scanned >= 50 * 40 * 3
    big = forest.explain('/[obj_id = "wh"]/[obj_id = "ns"]/[stats.row_count >= 45000]/*/*')
    assert big.matched == 5 * 40 * 3 and big.scanned < wide.scanned / 5
    assert [s["matched"] for s in big.per_step] == [1, 1, 5, 200, 600]


def test_query_streams_and_stats(forest):
    it = forest.iter_query('/[obj_id = "wh"]/*/*/*/*')
    first = next(it)
    assert first.path == "/wh/ns/t00/d=2001-06-01/f0" and first.leaf and first.obj_type == "file"
    stats = QueryStats()
    n = sum(1 for _ in forest.iter_query('/[obj_id = "wh"]/*/*/*/*', stats=stats))
    assert n == stats.matched == 6000


def test_queries_at_older_vids(forest):
    v0 = forest.latest_vid
    with forest.transaction() as t:
        t.remove("/wh/ns/t03")
        t.update("/wh/ns/t04", {"obj_type": "table", "stats": {"row_count": 10**9}})
    q = '/[obj_id = "wh"]/[obj_id = "ns"]/[stats.row_count > 3500]'
    assert [o.obj_id for o in forest.query(q, vid=v0)][:2] == ["t04", "t05"]
    now = [o.obj_id for o in forest.query(q)]
    assert "t03" not in now and now[0] == "t04"
    assert forest.query('/[obj_id = "wh"]/[obj_id = "ns"]/[obj_id = "t03"]/*', vid=v0)[0].vid == 1
    assert forest.query('/[obj_id = "wh"]/[obj_id = "ns"]/[obj_id = "t03"]/*') == []


def test_shared_leaves_found_under_every_parent(forest):
    forest.clone("/wh/ns/t01", "/wh/ns/t01_branch")
    q = '/[obj_id = "wh"]/[obj_id = "ns"]/[startswith(obj_id, "t01")]/[obj_id = "d=2001-06-02"]/[row_count = 2]'
    got = forest.query(q)
    assert [o.path for o in got] == ["/wh/ns/t01/d=2001-06-02/f2", "/wh/ns/t01_branch/d=2001-06-02/f2"]
    assert got[0].value == got[1].value


def test_scans_are_recorded_in_transactions(forest):
    txn = forest.transaction()
    txn.query('/[obj_id = "wh"]/[obj_id = "ns"]/[obj_id in ("t01", "t02")]/[d >= "2001-06-39"]')
    parents = [s[0] for s in txn.scans]
    assert parents == ["/", "/wh", "/wh/ns", "/wh/ns/t01", "/wh/ns/t02"]
    assert txn.scans[2][2] == [(b"t01", b"t01\x00"), (b"t02", b"t02\x00")]
    txn.abort()


def test_syntax_error_from_catalog_query(cat):
    with pytest.raises(errors.QuerySyntaxError) as exc:
        cat.query('/[obj_id = "wh" and]')
    assert exc.value.position == 19 and "expected" in exc.value.message


# ---------------------------------------------------------------- plan_files

@pytest.fixture
def sales(cat):
    """Table partitioned by (d, region); files with price and qty min/max stats."""
    with cat.transaction() as t:
        t.add("/wh", {"obj_type": "catalog"})
        t.add("/wh/s", {"obj_type": "namespace"})
        t.add("/wh/s/orders", {"obj_type": "table", "partition_by": ["d", "region"]})
        for d in range(1, 11):
            day = f"2001-06-{d:02d}"
            t.add(f"/wh/s/orders/d={day}", {"obj_type": "partition", "d": day})
            for region in ("asia", "emea"):
                pp = f"/wh/s/orders/d={day}/region={region}"
                t.add(pp, {"obj_type": "partition", "region": region})
                for f in range(4):
                    t.add(f"{pp}/f{f}", {"obj_type": "file", "path": f"{day}/{region}/{f}.parquet",
                                         "columns": {"price": {"min": f * 10, "max": f * 10 + 9, "null_count": 0},
                                                     "qty": {"min": 1.0 * d, "max": 2.0 * d}}}, leaf=True)
    return cat


def _rel(path):
    """A file path as the test stored it: the engine stores paths relative to the data directory's
    warehouse and hands them out absolute against it (relocatable catalogs, docs/engine.md)."""
    return path.split("/warehouse/", 1)[-1]


def plan(cat, where, **kw):
    st_ = QueryStats()
    files = cat.plan_files("wh.s.orders", where=where, stats=st_, **kw)
    return sorted(_rel(f.value["path"]) for f in files), st_


def test_plan_files_partition_predicates(sales):
    files, st_ = plan(sales, 'd >= "2001-06-03" and d < "2001-06-05"')
    assert len(files) == 2 * 2 * 4 and all(p[:10] in ("2001-06-03", "2001-06-04") for p in files)
    assert st_.scanned < 80  # only the two days' subtrees are read, not all 10
    files, _ = plan(sales, 'd = "2001-06-07" and region = "emea"')
    assert files == [f"2001-06-07/emea/{f}.parquet" for f in range(4)]
    files, _ = plan(sales, 'region in ("asia") and (d = "2001-06-01" or d = "2001-06-10")')
    assert len(files) == 8 and all("/asia/" in p for p in files)
    all_files, full = plan(sales, None)
    assert len(all_files) == 80 and st_.scanned < full.scanned


def test_plan_files_stats_predicates(sales):
    files, _ = plan(sales, "price >= 25")
    assert {p.rsplit("/", 1)[1] for p in files} == {"2.parquet", "3.parquet"} and len(files) == 40
    files, _ = plan(sales, "price < 10 or qty > 19.5")
    assert len(files) == 20 + 2 * 3  # f0 everywhere, plus day 10's other files (qty up to 20)
    files, _ = plan(sales, "not price < 30")
    assert len(files) == 20
    files, _ = plan(sales, "unknown_col = 3")  # no stats: cannot prune
    assert len(files) == 80


def test_plan_files_mixed_and_at_older_vid(sales):
    v = sales.latest_vid
    with sales.transaction() as t:
        t.remove("/wh/s/orders/d=2001-06-02/region=asia/f3")
        t.add("/wh/s/orders/d=2001-06-02/region=asia/f9", {"obj_type": "file", "path": "new.parquet",
                                                          "columns": {"price": {"min": 100, "max": 200}}}, leaf=True)
    where = 'd = "2001-06-02" and region = "asia" and price >= 30'
    assert plan(sales, where, vid=v)[0] == ["2001-06-02/asia/3.parquet"]
    assert plan(sales, where)[0] == ["new.parquet"]


def test_plan_files_int_partitions_and_unpartitioned(cat):
    with cat.transaction() as t:
        t.add("/c", {"obj_type": "catalog"})
        t.add("/c/n", {"obj_type": "namespace"})
        t.add("/c/n/t", {"obj_type": "table", "partition_by": ["h"]})
        for h in (2, 10, 30):
            t.add(f"/c/n/t/h={h}", {"obj_type": "partition", "h": h})
            t.add(f"/c/n/t/h={h}/f", {"obj_type": "file", "path": f"{h}"}, leaf=True)
        t.add("/c/n/u", {"obj_type": "table", "partition_by": []})
        t.add("/c/n/u/f1", {"obj_type": "file", "path": "u1", "columns": {"a": {"min": 1, "max": 2}}}, leaf=True)
        t.add("/c/n/u/_semantic", {"obj_type": "semantic"})
    # lexicographic order of "h=10" < "h=2" must not fool the pruning of numeric partitions
    assert sorted(_rel(f.value["path"]) for f in cat.plan_files("c.n.t", where="h > 5")) == ["10", "30"]
    assert [_rel(f.value["path"]) for f in cat.plan_files("c.n.u")] == ["u1"]
    assert cat.plan_files("c.n.u", where="a > 2") == []


def test_plan_files_errors(sales):
    with pytest.raises(errors.InvalidValueError, match="catalog.namespace.table"):
        sales.plan_files("orders")
    with pytest.raises(errors.NotFoundError, match="does not exist"):
        sales.plan_files("wh.s.nope")
    with pytest.raises(errors.QuerySyntaxError):
        sales.plan_files("wh.s.orders", where="price >>> 3")


def test_plan_files_values_decode_lazily_and_privately(sales):
    where = 'd = "2001-06-03" and region = "asia"'
    files = sales.plan_files("wh.s.orders", where=where)
    first = files[0]
    assert first._value is None  # nothing decoded until asked
    got = sales.get(first.path)
    assert first == got and got == first and tuple(first) == tuple(got)
    path, value, vid, leaf = first
    assert (path, value, vid, leaf) == (got.path, got.value, got.vid, True)
    assert first.obj_id == "f0" and first.obj_type == "file" and first.to_dict() == got.to_dict()
    first.value["columns"]["price"]["min"] = -1  # a caller's edit stays in its own copy
    again = sales.plan_files("wh.s.orders", where=where)[0]
    assert again.value["columns"]["price"]["min"] == 0 and again != first
    assert sales.get(first.path).value["columns"]["price"]["min"] == 0


def test_plan_files_recognizes_files_in_any_encoding(cat):
    with cat.transaction() as t:
        t.add("/c", {"obj_type": "catalog"})
        t.add("/c/n", {"obj_type": "namespace"})
        t.add("/c/n/t", {"obj_type": "table", "partition_by": []})
        # obj_type last (pack_leaf moves it first), bytes (stored as msgpack), another leaf type
        t.add("/c/n/t/a", {"path": "a", "obj_type": "file", "columns": {"x": {"min": 1, "max": 2}}}, leaf=True)
        t.add("/c/n/t/b", {"obj_type": "file", "path": "b", "blob": b"\x00", "columns": {"x": {"min": 5, "max": 6}}},
              leaf=True)
        t.add("/c/n/t/c", {"obj_type": "note", "path": "c"}, leaf=True)
    assert [_rel(f.value["path"]) for f in cat.plan_files("c.n.t")] == ["a", "b"]
    assert [_rel(f.value["path"]) for f in cat.plan_files("c.n.t", where="x > 4")] == ["b"]
    assert cat.plan_files("c.n.t")[1].value["blob"] == b"\x00"
    got = dict(cat.get("/c/n/t/a").value)
    assert _rel(got.pop("path")) == "a" and got == {"obj_type": "file", "columns": {"x": {"min": 1, "max": 2}}}


def test_plan_files_of_a_clone_share_the_files(sales):
    sales.clone("/wh/s/orders", "/wh/s/orders_copy")
    with sales.transaction() as t:
        t.remove("/wh/s/orders/d=2001-06-01")
    where = 'd = "2001-06-01" and price < 10'
    copy = sales.plan_files("wh.s.orders_copy", where=where)
    assert sorted(_rel(f.value["path"]) for f in copy) == ["2001-06-01/asia/0.parquet", "2001-06-01/emea/0.parquet"]
    assert sales.plan_files("wh.s.orders", where=where) == []
    assert [f.value for f in sales.plan_files("wh.s.orders_copy", where='d = "2001-06-02"')] == \
        [sales.get(f"/wh/s/orders/d=2001-06-02/region={r}/f{i}").value for r in ("asia", "emea") for i in range(4)]


def test_query_results_do_not_share_the_decoded_leaf_cache(sales):
    q = '/[obj_id = "wh"]/*/*/[obj_id = "d=2001-06-01"]/[obj_id = "region=asia"]/[columns.price.min = 0]'
    first = sales.query(q)
    assert [o.obj_id for o in first] == ["f0"]
    first[0].value["columns"]["price"]["min"] = 99  # the caller's copy only
    again = sales.query(q)
    assert [o.obj_id for o in again] == ["f0"] and again[0].value["columns"]["price"]["min"] == 0
    assert again[0].value is not first[0].value
    assert sales.engine_info()["caches"]["leaf_lists"]["hits"] > 0  # the second query read the cached leaf list
    assert sales.query(q[: q.rindex("/")] + "/[columns.price.min = 99]") == []
