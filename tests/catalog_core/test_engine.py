"""Engine foundation: versioned store, write sets, preconditions, time travel, clone."""

import pytest

import catalog_core as cc
from catalog_core import errors
from tests.helpers import lake


def state(cat, vid=None):
    """Every object visible at vid, as {path: (value, leaf)}."""
    out = {}
    stack = ["/"]
    while stack:
        p = stack.pop()
        for o in cat.children(p, vid):
            out[o.path] = (o.value, o.leaf)
            if not o.leaf:
                stack.append(o.path)
    return out


def test_root_exists_and_layout(cat, data_dir):
    import os

    assert cat.get("/").obj_type == "root"
    assert cat.latest_vid == 0
    assert os.path.isdir(os.path.join(data_dir, "catalog")) and os.path.isdir(os.path.join(data_dir, "warehouse"))


def test_add_get_commit_returns_vid(cat):
    vid = lake(cat)
    assert vid == 1 == cat.latest_vid
    t = cat.get("/wh/sales/orders")
    assert (t.obj_id, t.obj_type, t.vid, t.leaf) == ("orders", "table", 1, False)
    f = cat.get("/wh/sales/orders/d=2001-06-01/f1")
    assert f.leaf and f.value["row_count"] == 20
    c = cat.commits()[-1]
    assert (c.vid, c.author, c.message) == (1, "test", "lake")
    assert "/wh/sales/orders/d=2001-06-01/f1" in c.paths


def test_transaction_without_with(cat):
    txn = cat.transaction(author="a")
    txn.add("/x", {"obj_type": "catalog"})
    assert cat.get("/x") is None  # not visible before commit
    assert txn.commit() == 1
    txn2 = cat.transaction()
    txn2.add("/y", {})
    txn2.abort()
    assert cat.get("/y") is None and cat.latest_vid == 1
    with pytest.raises(errors.TransactionClosedError):
        txn2.add("/z", {})


def test_exception_in_with_aborts(cat):
    with pytest.raises(RuntimeError):
        with cat.transaction() as t:
            t.add("/x", {})
            raise RuntimeError("boom")
    assert cat.get("/x") is None and cat.latest_vid == 0


def test_version_chain_of_1000_updates(cat):
    with cat.transaction() as t:
        t.add("/c", {"obj_type": "catalog", "n": -1})
    first = t.vid
    for i in range(1000):
        with cat.transaction() as t:
            t.update("/c", {"obj_type": "catalog", "n": i})
    assert cat.latest_vid == first + 1000
    for vid in range(first, cat.latest_vid + 1):
        obj = cat.get("/c", vid)
        assert obj.value["n"] == vid - first - 1 and obj.vid == vid
    assert cat.get("/c", first - 1) is None
    hist = cat.history("/c")
    assert [v.value["n"] for v in hist] == list(range(-1, 1000))
    assert all(h.end_vid == n.vid for h, n in zip(hist, hist[1:], strict=False))


def test_remove_then_readd_subtree_read_at_each_vid(cat):
    v1 = lake(cat)
    before = state(cat, v1)
    with cat.transaction() as t:
        t.remove("/wh/sales")
    v2 = t.vid
    with cat.transaction() as t:
        t.add("/wh/sales", {"obj_type": "namespace", "again": True})
        t.add("/wh/sales/orders", {"obj_type": "table", "partition_by": []})
        t.add("/wh/sales/orders/f9", {"obj_type": "file", "row_count": 1}, leaf=True)
        t.add("/wh/sales/orders/d=2001-06-01", {"obj_type": "partition"})
        t.add("/wh/sales/orders/d=2001-06-01/f0", {"obj_type": "file", "row_count": 99}, leaf=True)
    v3 = t.vid
    assert state(cat, v1) == before
    assert set(state(cat, v2)) == {"/wh"}
    s3 = state(cat, v3)
    assert s3["/wh/sales"][0]["again"] is True
    assert s3["/wh/sales/orders/d=2001-06-01/f0"][0]["row_count"] == 99
    assert "/wh/sales/orders/d=2001-06-02" not in s3
    assert cat.get("/wh/sales/orders/d=2001-06-01/f0", v1).value["row_count"] == 10
    assert cat.get("/wh/sales/orders/d=2001-06-01/f0", v2) is None
    hist = cat.history("/wh/sales/orders/d=2001-06-01/f0")
    assert [(h.vid, h.value and h.value["row_count"]) for h in hist] == [(v1, 10), (v2, None), (v3, 99)]


def test_clone_shares_leaves_and_diverges(cat):
    lake(cat)
    cv = cat.clone("/wh/sales", "/wh/branch")
    src, dst = state(cat, cv), None
    dst = {p.replace("/wh/branch", "/wh/sales"): v for p, v in state(cat, cv).items() if p.startswith("/wh/branch")}
    assert dst == {p: v for p, v in src.items() if p.startswith("/wh/sales")}
    # leaves are shared through the indirection, not copied
    assert cat.leaf_source("/wh/branch/orders/d=2001-06-01/f0") == ("/wh/sales/orders/d=2001-06-01/f0", 1)
    with cat.transaction() as t:
        t.remove("/wh/sales/orders/d=2001-06-01/f0")
        t.add("/wh/branch/orders/d=2001-06-01/f7", {"obj_type": "file", "row_count": 7}, leaf=True)
        t.update("/wh/branch/orders", {"obj_type": "table", "partition_by": ["d"], "branch": True})
    with cat.transaction() as t:
        t.remove("/wh/branch/orders/d=2001-06-02/f1")
    assert cat.get("/wh/sales/orders/d=2001-06-01/f0") is None
    assert cat.get("/wh/branch/orders/d=2001-06-01/f0").value["row_count"] == 10
    assert cat.get("/wh/sales/orders/d=2001-06-02/f1").value["row_count"] == 20
    assert cat.get("/wh/branch/orders/d=2001-06-02/f1") is None
    assert cat.get("/wh/sales/orders/d=2001-06-01/f7") is None
    assert "branch" not in cat.get("/wh/sales/orders").value
    # a clone of a clone points at the original primary
    cat.clone("/wh/branch", "/wh/b2")
    assert cat.get("/wh/b2/orders/d=2001-06-01/f0").value["row_count"] == 10
    assert cat.leaf_source("/wh/b2/orders/d=2001-06-01/f0") == ("/wh/sales/orders/d=2001-06-01/f0", 1)
    # old clone state still readable at the clone's vid
    assert cat.get("/wh/branch/orders/d=2001-06-01/f0", cv - 1) is None


def test_clone_at_older_vid(cat):
    v1 = lake(cat)
    with cat.transaction() as t:
        t.remove("/wh/sales/orders/d=2001-06-03")
    cat.clone("/wh/sales", "/wh/old", vid=v1)
    assert cat.get("/wh/old/orders/d=2001-06-03/f1") is not None
    with pytest.raises(errors.AlreadyExistsError):
        cat.clone("/wh/sales", "/wh/old")
    with pytest.raises(errors.NotFoundError):
        cat.clone("/wh/nope", "/wh/x")


def test_merge_ops_nested_and_identities(cat):
    with cat.transaction() as t:
        t.add("/t", {"obj_type": "table", "stats": {"size": 1487, "min": 3}})
    with cat.transaction() as t:
        t.merge("/t", {"stats": {"size": {"op": "+", "val": 124}, "min": {"op": "min", "val": 0},
                                 "max": {"op": "max", "val": 9}, "rows": {"op": "-", "val": 2},
                                 "cols": {"a": {"null_count": {"op": "+", "val": 1}}},
                                 "last": {"op": "set", "val": {"vid": 3}}}})
        t.merge("/t", {"stats": {"size": {"op": "+", "val": 1}}})
    st = cat.get("/t").value["stats"]
    assert st == {"size": 1612, "min": 0, "max": 9, "rows": -2, "cols": {"a": {"null_count": 1}},
                  "last": {"vid": 3}}
    assert cat.get("/t", t.vid - 1).value["stats"] == {"size": 1487, "min": 3}


@pytest.mark.parametrize("ids", [["héllo wörld", "日本語", "a b", "x=1", "we!rd:id,(v).$*", "emoji🙂", "_semantic"]])
def test_ids_with_unicode_spaces_punctuation(cat, ids):
    with cat.transaction() as t:
        t.add("/c", {"obj_type": "catalog"})
        for i in ids:
            t.add(f"/c/{i}", {"obj_type": "namespace", "id": i})
            t.add(f"/c/{i}/{i}", {"obj_type": "file", "id": i}, leaf=True)
    for i in ids:
        assert cat.get(f"/c/{i}").value["id"] == i
        assert cat.get(f"/c/{i}/{i}").obj_id == i
    assert [o.obj_id for o in cat.children("/c")] == sorted(ids, key=lambda s: s.encode())


@pytest.mark.parametrize("bad", ["", "x", "/a/", "/a//b", "/a/./b", "/a/\x00b", 5])
def test_bad_paths_are_refused_with_clear_errors(cat, bad):
    with pytest.raises(errors.InvalidPathError) as exc:
        cat.transaction().add(bad, {})
    assert "path" in str(exc.value)


PRECONDITION_CASES = [
    ("add to missing parent", lambda t: t.add("/wh/nope/x", {}), errors.NotFoundError),
    ("add existing", lambda t: t.add("/wh/sales", {}), errors.AlreadyExistsError),
    ("merge missing", lambda t: t.merge("/wh/zz", {"a": {"op": "+", "val": 1}}), errors.NotFoundError),
    ("remove missing", lambda t: t.remove("/wh/zz"), errors.NotFoundError),
    ("update a leaf", lambda t: t.update("/wh/sales/orders/d=2001-06-01/f0", {}), errors.LeafImmutableError),
    ("merge a leaf", lambda t: t.merge("/wh/sales/orders/d=2001-06-01/f0", {"a": {"op": "+", "val": 1}}),
     errors.LeafImmutableError),
    ("child of a leaf", lambda t: t.add("/wh/sales/orders/d=2001-06-01/f0/x", {}), errors.PreconditionError),
    ("update under missing parent", lambda t: t.update("/nope/x", {}), errors.NotFoundError),
    ("merge type clash", lambda t: t.merge("/wh/sales/orders", {"partition_by": {"op": "+", "val": 1}}),
     errors.InvalidValueError),
]


@pytest.mark.parametrize("name,write,exc", PRECONDITION_CASES, ids=[c[0] for c in PRECONDITION_CASES])
def test_precondition_failure_leaves_store_unchanged(cat, name, write, exc):
    lake(cat)
    before, vid, ncommits = state(cat), cat.latest_vid, len(cat.commits())
    txn = cat.transaction()
    txn.add("/wh/fine", {"obj_type": "namespace"})  # a valid write in the same write set
    txn.merge("/wh/sales/orders", {"stats": {"row_count": {"op": "+", "val": 5}}})
    write(txn)
    with pytest.raises(exc) as err:
        txn.commit()
    assert err.value.message and "'" in err.value.message
    assert state(cat) == before and cat.latest_vid == vid and len(cat.commits()) == ncommits
    assert txn.state == "aborted"


def test_bad_values_and_deltas_refused_at_record_time(cat):
    t = cat.transaction()
    with pytest.raises(errors.InvalidValueError):
        t.add("/a", ["not", "a", "dict"])
    with pytest.raises(errors.InvalidValueError):
        t.add("/a", {"x": object()})
    with pytest.raises(errors.InvalidValueError):
        t.merge("/a", {"x": {"op": "*", "val": 2}})
    with pytest.raises(errors.InvalidValueError):
        t.merge("/a", {"x": {"op": "+", "val": "s"}})
    with pytest.raises(errors.InvalidValueError):
        t.update("/", [])
    with pytest.raises(errors.InvalidValueError):
        t.update("/a", {}, ) or t.add("/a/b", {"obj_type": "x"}, leaf=False) or t.merge("/a", "not a dict")
    with pytest.raises(errors.InvalidPathError):
        t.remove("/")


def test_reopen_after_close(data_dir):
    cat = cc.Catalog.open(data_dir)
    lake(cat)
    cat.snapshot("s1")
    with cat.transaction() as t:
        t.update("/wh", {"obj_type": "catalog", "v": 2})
    want, latest, commits = state(cat), cat.latest_vid, cat.commits()
    cat.close()
    cat = cc.Catalog.open(data_dir)
    try:
        assert state(cat) == want and cat.latest_vid == latest and cat.commits() == commits
        assert cat.resolve("s1") == 1 and cat.get("/wh", "s1").value == {"obj_type": "catalog", "properties": {}}
        with cat.transaction() as t:
            t.add("/after", {})
        assert t.vid == latest + 1
    finally:
        cat.close()


def test_a_second_opener_reads_and_writes(cat, data_dir):
    """Many openers of one directory (issue 47; separate processes in tests/catalog_core/test_multiproc.py):
    the second reads through a secondary instance, writes by taking the writer's turn, and each sees
    the other's commits."""
    with cat.transaction() as t:
        t.add("/first", {})
    other = cc.Catalog.open(data_dir)
    try:
        assert not other._store.writer and other.get("/first") is not None
        with other.transaction() as t:
            t.add("/second", {})
        assert other._store.writer and not cat._store.writer  # the first let go when asked
        assert cat.refresh() == t.vid and cat.get("/second") is not None
        with cat.transaction() as t2:
            t2.add("/third", {})
        assert t2.vid == t.vid + 1
        assert other.refresh() == t2.vid and other.get("/third") is not None
    finally:
        other.close()


def test_snapshots_and_resolve(cat):
    import time
    from datetime import datetime, timezone

    lake(cat)
    t_between = datetime.now(timezone.utc)
    time.sleep(0.01)
    with cat.transaction() as t:
        t.update("/wh", {"obj_type": "catalog", "v": 2})
    s = cat.snapshot("eod", vid=1)
    assert (s.name, s.vid) == ("eod", 1)
    assert [x.name for x in cat.snapshots()] == ["eod"]
    assert cat.resolve("eod") == 1 and cat.resolve(2) == 2 and cat.resolve("2") == 2
    assert cat.resolve(t_between.isoformat()) == 1
    assert cat.resolve(t_between.isoformat().replace("+00:00", "Z")) == 1
    assert cat.resolve(datetime.now(timezone.utc).isoformat()) == 2
    assert cat.get("/wh", "eod").value.get("v") is None
    with pytest.raises(errors.AlreadyExistsError):
        cat.snapshot("eod")
    with pytest.raises(errors.InvalidValueError):
        cat.snapshot("123")
    with pytest.raises(errors.NotFoundError):
        cat.resolve(99)
    with pytest.raises(errors.NotFoundError, match="neither a snapshot"):
        cat.resolve("no-such-snapshot")


def test_commits_filters(cat):
    lake(cat)
    with cat.transaction(author="b", message="two") as t:
        t.add("/other", {})
    with cat.transaction(author="c", message="three") as t:
        t.update("/wh", {"obj_type": "catalog"})
    assert [c.vid for c in cat.commits(since=1)] == [1, 2, 3]
    assert [c.vid for c in cat.commits(since=1, until=2)] == [1, 2]
    assert [c.vid for c in cat.commits(prefix="/wh")] == [1, 3]
    assert [c.vid for c in cat.commits(limit=2)] == [3, 2]


def test_read_your_own_writes_in_get(cat):
    lake(cat)
    with cat.transaction() as t:
        t.merge("/wh/sales/orders", {"stats": {"row_count": {"op": "+", "val": 5}}})
        assert t.get("/wh/sales/orders").value["stats"]["row_count"] == 5
        t.remove("/wh/sales/orders")
        assert t.get("/wh/sales/orders/d=2001-06-01") is None
        t.add("/wh/sales/orders", {"obj_type": "table", "x": 1})
        assert t.get("/wh/sales/orders").value["x"] == 1
    assert cat.get("/wh/sales/orders").value == {"obj_type": "table", "x": 1}
    assert cat.get("/wh/sales/orders/d=2001-06-01/f0") is None


def test_leaf_values_round_trip_exactly(cat):
    """Leaf values take a faster JSON encoding only when it is lossless; NaN and ±Infinity, which
    JSON clients would read as null, are refused (tests/reliability/test_poison.py)."""
    odd = {
        "plain": {"obj_type": "file", "n": 1, "f": 1.5, "s": "é", "l": [1, None, True], "d": {"x": None}},
        "bytes": {"obj_type": "file", "b": b"\x00\xff"},
        "int_keys": {"obj_type": "file", "cols": {1: {"min": 0}}},
        "big": {"obj_type": "file", "n": 2**64 - 1, "neg": -(2**63)},
    }
    with cat.transaction() as t:
        t.add("/c", {})
        for name, value in odd.items():
            t.add(f"/c/{name}", value, leaf=True)
        with pytest.raises(errors.InvalidValueError, match="holds NaN at 'min'"):
            t.add("/c/nan", {"obj_type": "file", "min": float("nan"), "max": None}, leaf=True)
    for name, value in odd.items():
        got = cat.get(f"/c/{name}").value
        assert got == value and isinstance(got, dict), name  # read-only (a dict subclass): see catalog_core.frozen
    assert cat._store.leaf_lifetimes(b"\x00\x02c\x00plain")[0][2][:1] == b"{"


def test_merge_can_stamp_the_commits_own_vid_and_time(cat):
    with cat.transaction() as t:
        t.add("/t", {"obj_type": "table"})
    with cat.transaction() as t:
        t.merge("/t", {"stats": {"last_data_commit": {"vid": {"op": "commit_vid", "val": None},
                                                      "time": {"op": "commit_time", "val": None}}}})
    stamp = cat.get("/t").value["stats"]["last_data_commit"]
    assert stamp == {"vid": t.vid, "time": cat.commits(since=t.vid)[0].time}
