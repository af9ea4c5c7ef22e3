"""One behaviour suite for every way to reach a catalog: the embedded `Catalog` and the HTTP
client `cc.connect(url)` against a real uvicorn server on a loopback port (the `catalog` fixture
of tests/conftest.py). A test here must pass unchanged on both."""

import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import datetime, timezone

import pytest

import catalog_core as cc
from catalog_core import errors
from tests.helpers import lake


@pytest.fixture
def cat(catalog):
    return catalog


def paths(objs):
    return [o.path for o in objs]


# ------------------------------------------------------------------ CRUD
def test_root_and_first_commit(cat):
    assert cat.latest_vid == 0
    assert cat.get("/").obj_type == "root"
    with cat.transaction(author="alice", message="first") as t:
        t.add("/wh", {"obj_type": "catalog", "properties": {"owner": "x"}})
    assert t.vid == 1 == cat.latest_vid
    obj = cat.get("/wh")
    assert (obj.path, obj.obj_id, obj.obj_type, obj.vid, obj.leaf) == ("/wh", "wh", "catalog", 1, False)
    assert obj.value == {"obj_type": "catalog", "properties": {"owner": "x"}}


def test_add_update_merge_remove_and_leaves(cat):
    lake(cat)
    with cat.transaction() as t:
        t.update("/wh/sales", {"obj_type": "namespace", "properties": {"v": 2}})
        t.merge("/wh/sales/orders", {"stats": {"row_count": {"op": "+", "val": 30}, "hi": {"op": "max", "val": 7}}})
    assert cat.get("/wh/sales").value["properties"] == {"v": 2}
    assert cat.get("/wh/sales/orders").value["stats"] == {"row_count": 30, "hi": 7}
    leaf = cat.get("/wh/sales/orders/d=2001-06-01/f0")
    assert leaf.leaf and leaf.obj_type == "file" and leaf.value["row_count"] == 10
    with cat.transaction() as t:
        t.remove("/wh/sales/orders/d=2001-06-01")
    assert cat.get("/wh/sales/orders/d=2001-06-01") is None
    assert cat.get("/wh/sales/orders/d=2001-06-01/f0") is None
    assert cat.get("/nope") is None
    assert paths(cat.children("/wh/sales/orders")) == ["/wh/sales/orders/d=2001-06-02",
                                                       "/wh/sales/orders/d=2001-06-03"]


def test_get_values_are_read_only_on_every_backend(cat):
    """`get`'s value refuses changes the same way embedded (a shared cached value) and remote, so code
    that mutates one fails on both; a deep copy is private and mutable, and goes back in as a write."""
    import copy

    lake(cat)
    old = cat.latest_vid
    with cat.transaction() as t:
        t.update("/wh/sales", {"obj_type": "namespace", "properties": {"v": 2}, "tags": ["a"]})
    for obj in (cat.get("/wh/sales"), cat.get("/wh/sales", vid=old), cat.get("/wh/sales/orders/d=2001-06-01/f0")):
        for change in (lambda v: v.__setitem__("x", 1), lambda v: v.update(x=3), lambda v: v.pop("obj_type")):
            with pytest.raises(TypeError, match="copy.deepcopy"):
                change(obj.value)
    value = cat.get("/wh/sales").value
    with pytest.raises(TypeError, match="read-only"):
        value["tags"].append("b")
    mine = copy.deepcopy(value)
    mine["properties"]["v"] = 4
    with cat.transaction() as t:
        t.update("/wh/sales", mine)
    assert cat.get("/wh/sales").value["properties"] == {"v": 4} and value["properties"] == {"v": 2}


@pytest.mark.parametrize("write, exc", [
    (lambda t: t.add("/wh", {"obj_type": "catalog"}), errors.AlreadyExistsError),
    (lambda t: t.add("/missing/child", {}), errors.NotFoundError),
    (lambda t: t.merge("/missing", {"n": {"op": "+", "val": 1}}), errors.NotFoundError),
    (lambda t: t.remove("/missing"), errors.NotFoundError),
    (lambda t: t.update("/wh/sales/orders/d=2001-06-01/f0", {}), errors.LeafImmutableError),
    (lambda t: t.add("/wh/sales/orders/d=2001-06-01/f0/x", {}), errors.PreconditionError),
])
def test_preconditions_fail_at_commit_and_write_nothing(cat, write, exc):
    lake(cat)
    before = cat.latest_vid
    txn = cat.transaction()
    txn.add("/first", {"obj_type": "catalog"})  # valid, and must not land either
    write(txn)
    with pytest.raises(exc):
        txn.commit()
    assert cat.latest_vid == before and cat.get("/first") is None
    assert txn.state == "aborted"


@pytest.mark.parametrize("write, exc", [
    (lambda t: t.add("no-slash", {}), errors.InvalidPathError),
    (lambda t: t.add("/a//b", {}), errors.InvalidPathError),
    (lambda t: t.add("/a", ["not", "a", "dict"]), errors.InvalidValueError),
    (lambda t: t.merge("/a", {"n": {"op": "*", "val": 2}}), errors.InvalidValueError),
    (lambda t: t.remove("/"), errors.InvalidPathError),
])
def test_malformed_writes_fail_when_recorded(cat, write, exc):
    txn = cat.transaction()
    with pytest.raises(exc):
        write(txn)
    txn.abort()
    assert cat.latest_vid == 0


# ------------------------------------------------------------------ time travel, history, commits
def test_time_travel_by_vid_snapshot_and_time(cat):
    with cat.transaction() as t:
        t.add("/c", {"obj_type": "catalog", "n": 0})
    for i in range(1, 4):
        with cat.transaction() as t:
            t.update("/c", {"obj_type": "catalog", "n": i})
    assert [cat.get("/c", v).value["n"] for v in (1, 2, 3, 4)] == [0, 1, 2, 3]
    assert cat.get("/c", 0) is None
    assert cat.get("/c", "2").value["n"] == 1  # digits are a vid
    cat.snapshot("before-last", 3)
    assert cat.get("/c", "before-last").value["n"] == 2
    log = cat.commits()
    between = (log[2].time + log[3].time) / 2  # a time after commit 2 and before commit 3
    when = datetime.fromtimestamp(between, tz=timezone.utc).isoformat()
    assert cat.get("/c", when).value["n"] == 1
    assert [o.value["n"] for o in cat.query("/[obj_id = \"c\"]", vid=2)] == [1]
    with pytest.raises(errors.NotFoundError):
        cat.get("/c", 99)
    with pytest.raises(errors.NotFoundError):
        cat.get("/c", -1)
    with pytest.raises(errors.NotFoundError):
        cat.get("/c", "no-such-snapshot")
    with pytest.raises(errors.InvalidValueError):
        cat.get("/c", True)


def test_history_lists_every_version_and_removal(cat):
    with cat.transaction() as t:
        t.add("/c", {"n": 0})
    with cat.transaction() as t:
        t.update("/c", {"n": 1})
    with cat.transaction() as t:
        t.remove("/c")
    hist = cat.history("/c")
    assert [(v.vid, v.end_vid, v.value) for v in hist][:2] == [(1, 2, {"n": 0}), (2, 3, {"n": 1})]
    assert hist[-1].removed and hist[-1].vid == 3
    assert cat.history("/never") == []


def test_commits_filter_by_range_prefix_and_limit(cat):
    with cat.transaction(author="a", message="m1", meta={"job": 1}) as t:
        t.add("/x", {})
    with cat.transaction(author="b", message="m2") as t:
        t.add("/y", {})
    with cat.transaction(author="c", message="m3") as t:
        t.add("/x/z", {})
    all_ = cat.commits()
    assert [c.vid for c in all_] == [0, 1, 2, 3]
    assert (all_[1].author, all_[1].message, all_[1].meta, all_[1].paths) == ("a", "m1", {"job": 1}, ("/x",))
    assert [c.vid for c in cat.commits(since=2)] == [2, 3]
    assert [c.vid for c in cat.commits(until=1)] == [0, 1]
    assert [c.vid for c in cat.commits(prefix="/x")] == [1, 3]
    assert [c.vid for c in cat.commits(limit=2)] == [3, 2]
    assert all_[1].time < all_[2].time < all_[3].time


def test_snapshots_and_resolve(cat):
    with cat.transaction() as t:
        t.add("/x", {})
    snap = cat.snapshot("eod-1")
    assert (snap.name, snap.vid) == ("eod-1", 1)
    with cat.transaction() as t:
        t.add("/y", {})
    cat.snapshot("genesis", 0)
    assert [(s.name, s.vid) for s in cat.snapshots()] == [("genesis", 0), ("eod-1", 1)]
    assert cat.resolve("eod-1") == 1 and cat.resolve(2) == 2 and cat.resolve(None) == 2
    with pytest.raises(errors.AlreadyExistsError):
        cat.snapshot("eod-1")
    with pytest.raises(errors.InvalidValueError):
        cat.snapshot("123")
    with pytest.raises(errors.NotFoundError):
        cat.resolve("unknown-name")


# ------------------------------------------------------------------ clone, queries, plan_files
def test_clone_shares_leaves_and_is_independent(cat):
    lake(cat)
    vid = cat.clone("/wh/sales", "/wh/branch", author="etl", message="branch")
    assert vid == cat.latest_vid and cat.commits()[-1].author == "etl"
    f = cat.get("/wh/branch/orders/d=2001-06-02/f1")
    assert f.leaf and f.value == cat.get("/wh/sales/orders/d=2001-06-02/f1").value
    with cat.transaction() as t:
        t.remove("/wh/branch/orders/d=2001-06-02")
    assert cat.get("/wh/sales/orders/d=2001-06-02/f1") is not None
    with pytest.raises(errors.InvalidValueError):
        cat.clone("/wh", "/wh/inside")
    with pytest.raises(errors.NotFoundError):
        cat.clone("/nope", "/dst")


def test_flush_hands_writes_over_and_commit_keeps_them(cat):
    lake(cat)
    with cat.transaction() as t:
        t.update("/wh/sales", {"obj_type": "namespace", "n": 1})
        t.flush()
        assert t.get("/wh/sales").value["n"] == 1
        t.merge("/wh/sales/orders", {"stats": {"row_count": {"op": "+", "val": 5}}})
        t.flush()
        t.flush()  # nothing left to send
        t.add("/wh/sales/notes", {"obj_type": "note"})
    assert cat.get("/wh/sales").value["n"] == 1 and cat.get("/wh/sales/orders").value["stats"]["row_count"] == 5
    assert cat.get("/wh/sales/notes") is not None
    t = cat.transaction()
    t.update("/wh/sales", {"obj_type": "namespace", "n": 2})
    t.flush()
    t.abort()
    assert cat.get("/wh/sales").value["n"] == 1
    with pytest.raises(errors.TransactionClosedError):
        t.flush()


def test_clone_inside_a_transaction_keeps_write_order(cat):
    lake(cat)
    with cat.transaction() as t:
        t.add("/wh/sales/orders/d=2001-06-04", {"obj_type": "partition", "d": "2001-06-04"})
        t.clone("/wh/sales", "/wh/copy")
        t.update("/wh/copy", {"obj_type": "namespace", "copy": True})
    assert cat.get("/wh/copy").value["copy"] is True
    assert cat.get("/wh/copy/orders/d=2001-06-01/f0").leaf
    # the clone read at read_vid, before this transaction's own add
    assert cat.get("/wh/copy/orders/d=2001-06-04") is None
    assert cat.get("/wh/sales/orders/d=2001-06-04") is not None


def test_query_explain_and_syntax_errors(cat):
    lake(cat)
    q = '/[obj_id = "wh"]/*/*/[obj_id >= "d=2001-06-02"]/*'
    found = cat.query(q)
    assert paths(found) == [f"/wh/sales/orders/d={d}/f{i}" for d in ("2001-06-02", "2001-06-03") for i in (0, 1)]
    assert all(o.leaf and o.vid == 1 for o in found)
    stats = cc.QueryStats()
    assert len(cat.query(q, stats=stats)) == 4 and stats.matched == 4
    ex = cat.explain(q)
    assert ex.matched == 4 and ex.scanned >= 4 and len(ex.per_step) == 5
    with pytest.raises(errors.QuerySyntaxError) as info:
        cat.query('/[obj_id = ]')
    assert info.value.position == 11 and "expected" in info.value.message


def test_plan_files_prunes_and_time_travels(cat):
    v1 = lake(cat)
    files = cat.plan_files("wh.sales.orders", where='d >= "2001-06-02" and d < "2001-06-03"')
    assert paths(files) == ["/wh/sales/orders/d=2001-06-02/f0", "/wh/sales/orders/d=2001-06-02/f1"]
    assert all(f.leaf and f.obj_type == "file" for f in files)
    assert len(cat.plan_files("wh.sales.orders", where="price > 5")) == 3  # min/max pruning keeps f1s
    stats = cc.QueryStats()
    assert len(cat.plan_files("wh.sales.orders", stats=stats)) == 6 and stats.matched == 6
    with cat.transaction() as t:
        t.remove("/wh/sales/orders/d=2001-06-01")
    assert len(cat.plan_files("wh.sales.orders")) == 4
    assert len(cat.plan_files("wh.sales.orders", vid=v1)) == 6
    for f in cat.plan_files("wh.sales.orders", vid=v1) + cat.plan_files("wh.sales.orders", where="price > 5"):
        got = cat.get(f.path, vid=v1)
        assert (f.path, f.value, f.vid, f.leaf) == (got.path, got.value, got.vid, True)
    with pytest.raises(errors.NotFoundError):
        cat.plan_files("wh.sales.nope")
    with pytest.raises(errors.InvalidValueError):
        cat.plan_files("wh.sales")
    with pytest.raises(errors.QuerySyntaxError):
        cat.plan_files("wh.sales.orders", where="d >=")


def test_iter_query_streams_a_large_result(cat):
    n = 20_000
    with cat.transaction() as t:
        t.add("/big", {"obj_type": "catalog"})
        for i in range(n):
            t.add(f"/big/o{i:05d}", {"obj_type": "namespace", "i": i}, leaf=True)
    it = cat.iter_query('/[obj_id = "big"]/*')
    assert isinstance(it, Iterator) and not isinstance(it, list)
    first = next(it)
    assert first.path == "/big/o00000"
    if hasattr(it, "bytes_received"):  # over HTTP: only the first batches crossed the wire
        received = it.bytes_received
    count, last = 1, first
    for obj in it:
        count, last = count + 1, obj
    assert count == n and last.value["i"] == n - 1
    if hasattr(it, "bytes_received"):
        assert received < it.bytes_received / 4, (received, it.bytes_received)
    # abandoning a stream half-way leaves the catalog usable
    it2 = cat.iter_query('/[obj_id = "big"]/*')
    assert next(it2).path == "/big/o00000"
    del it2
    assert cat.get("/big/o19999").value["i"] == 19999


# ------------------------------------------------------------------ transactions
def test_transaction_with_and_without_with(cat):
    with cat.transaction(author="a", message="with") as t:
        t.add("/x", {"n": 1})
        assert cat.get("/x") is None  # not visible before commit
    assert t.vid == 1 and t.state == "committed"
    txn = cat.transaction()
    txn.add("/y", {})
    assert len(txn.ops) == 1 and txn.ops[0].kind == "add"
    assert txn.commit() == 2
    with pytest.raises(errors.TransactionClosedError):
        txn.add("/z", {})
    with pytest.raises(errors.TransactionClosedError):
        txn.commit()
    txn = cat.transaction()
    txn.add("/w", {})
    txn.abort()
    assert cat.get("/w") is None and cat.latest_vid == 2
    with pytest.raises(RuntimeError):
        with cat.transaction() as t:
            t.add("/v", {})
            raise RuntimeError("boom")
    assert cat.get("/v") is None and t.state == "aborted"
    empty = cat.transaction()
    assert empty.commit() == 2  # nothing written: the read vid


def test_transaction_reads_see_snapshot_plus_own_writes(cat):
    with cat.transaction() as t:
        t.add("/c", {"n": 1, "stats": {"rows": 5}})
    txn = cat.transaction()
    assert txn.get("/c").value["n"] == 1 and txn.read_vid == 1
    with cat.transaction() as other:
        other.add("/d", {})
    assert txn.get("/d") is None  # reads stay at read_vid
    txn.merge("/c", {"stats": {"rows": {"op": "+", "val": 2}}})
    txn.add("/c/k", {"obj_type": "x"})
    assert txn.get("/c").value["stats"]["rows"] == 7
    assert txn.get("/c/k").value == {"obj_type": "x"}
    txn.remove("/c")
    assert txn.get("/c/k") is None
    assert paths(txn.query("/*")) == ["/c"]  # queries read the snapshot
    txn.abort()


def test_conflict_is_raised_with_path_and_vid(cat):
    with cat.transaction() as t:
        t.add("/c", {"n": 0})
    t1 = cat.transaction()
    seen = t1.get("/c").value["n"]
    with cat.transaction() as t2:
        t2.update("/c", {"n": 10})
    t1.update("/c", {"n": seen + 1})
    t1.add("/side", {})
    with pytest.raises(errors.ConflictError) as info:
        t1.commit()
    err = info.value
    assert err.path == "/c" and err.vid == t2.vid and err.retryable is True
    assert isinstance(err, cc.CatalogError) and "retry" in err.message
    assert cat.get("/c").value["n"] == 10 and cat.get("/side") is None
    assert t1.state == "aborted"


def test_scan_conflicts_are_precise(cat):
    with cat.transaction() as t:
        t.add("/t", {})
        t.add("/t/a", {"kind": "red"})
    t1 = cat.transaction()
    assert paths(t1.query('/[obj_id = "t"]/[kind = "red"]')) == ["/t/a"]
    with cat.transaction() as t2:
        t2.add("/t/b", {"kind": "blue"})  # does not match t1's predicate
    t1.add("/out1", {})
    assert t1.commit() == t2.vid + 1
    t3 = cat.transaction()
    t3.query('/[obj_id = "t"]/[kind = "red"]')
    with cat.transaction() as t4:
        t4.add("/t/c", {"kind": "red"})  # a phantom for t3
    t3.add("/out2", {})
    with pytest.raises(errors.ConflictError) as info:
        t3.commit()
    assert info.value.path == "/t/c" and info.value.vid == t4.vid


def test_concurrent_merges_do_not_conflict(cat):
    with cat.transaction() as t:
        t.add("/c", {"n": 0})
    t1, t2 = cat.transaction(), cat.transaction()
    for txn in (t1, t2):
        txn.merge("/c", {"n": {"op": "+", "val": 5}})
    t1.commit()
    t2.commit()
    assert cat.get("/c").value["n"] == 10


def test_retry_transaction_reruns_on_conflict(cat):
    with cat.transaction() as t:
        t.add("/c", {"n": 0})
    calls = []

    def bump(txn):
        n = txn.get("/c").value["n"]
        if not calls:  # a concurrent writer sneaks in during the first attempt
            with cat.transaction() as other:
                other.update("/c", {"n": 100})
        calls.append(n)
        txn.update("/c", {"n": n + 1})

    cc.retry_transaction(cat, bump, base_delay=0)
    assert calls == [0, 100] and cat.get("/c").value["n"] == 101


def test_concurrent_committers_from_threads(cat):
    with cat.transaction() as t:
        t.add("/c", {"obj_type": "catalog", "n": 0})
    errors_seen = []

    def worker(w):
        try:
            for i in range(15):
                with cat.transaction(author=f"w{w}") as t:
                    t.add(f"/c/w{w}-{i}", {"i": i})
                    t.merge("/c", {"n": {"op": "+", "val": 1}})
        except Exception as exc:  # pragma: no cover - reported below
            errors_seen.append(exc)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors_seen == []
    assert cat.get("/c").value["n"] == 120 and len(cat.children("/c")) == 120
    assert cat.latest_vid == 121


def test_errors_are_the_same_classes(cat):
    with pytest.raises(errors.InvalidPathError):
        cat.get("relative/path")
    with pytest.raises(errors.InvalidPathError):
        cat.history("bad")
    with pytest.raises(errors.NotFoundError):
        cat.resolve(5)
    with pytest.raises(errors.QuerySyntaxError):
        cat.explain("/[")
    with pytest.raises(errors.InvalidValueError):
        cat.snapshot("")


@pytest.mark.parametrize("backend", ["embedded", "http"])
def test_transaction_after_close_is_an_error(backend, tmp_path):
    engine = cc.Catalog.open(str(tmp_path / "d"))
    if backend == "embedded":
        cat = engine
        cat.close()
    else:
        from mcp_server.http.server import serve_in_thread

        server = serve_in_thread(engine)
        cat = cc.connect(server.url)
        cat.close()
        server.stop()
        engine.close()
    with pytest.raises(cc.CatalogError):
        cat.transaction()


def test_the_remote_client_does_not_import_the_server_stack():
    # Layering: catalog_core is the bottom layer; the server lives in mcp_server.
    code = ("import sys, catalog_core as cc, catalog_core.remote.client; cc.connect('http://127.0.0.1:1'); "
            "bad = [m for m in ('fastapi', 'uvicorn', 'starlette', 'mcp_server') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
