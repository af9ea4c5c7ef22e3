"""`txn.add_many(parent, children, leaf=True)`, the bulk-load call: its write set is the one of one
`add` per child, so the loaded tree, its versions, vids, history and plan_files equal those of the
same objects added one by one; it is one commit (one vid, one synced RocksDB batch), validated like
any other, all or nothing. Real RocksDB, a real subprocess for the SIGKILL, the real HTTP server for
the remote transaction (which records the same ops through `WriteMethods.add_many`)."""

import os
import textwrap

import pytest

import catalog_core as cc
from catalog_core.errors import (
    AlreadyExistsError,
    ConflictError,
    InvalidPathError,
    InvalidValueError,
    MissingObjectError,
    PreconditionError,
)
from catalog_core.writeset import child_ops, make_op
from tests.helpers import kill_in_commit

DAYS = [f"d=2001-06-{d:02d}" for d in range(1, 6)]
PER_DAY = 40  # 200 leaves in one write set: the bulk materialization path (>= 64 ops)


def _file(day: int, i: int) -> dict:
    return {"obj_type": "file", "path": f"s3://b/{day}/f{i}.parquet", "row_count": 10 * i, "size_bytes": 100 + i,
            "columns": {"price": {"min": i, "max": i + 3, "null_count": 0}, "d": {"min": day, "max": day}}}


def _base(cat) -> int:
    with cat.transaction(author="t", message="base") as t:
        t.add("/wh", {"obj_type": "catalog"})
        t.add("/wh/sales", {"obj_type": "namespace"})
        t.add("/wh/sales/orders", {"obj_type": "table", "partition_by": ["d"]})
        for d in DAYS:
            t.add(f"/wh/sales/orders/{d}", {"obj_type": "partition", "values": {"d": d[2:]}})
    assert t.vid is not None
    return t.vid


def _children(day: int, start: int = 0, n: int = PER_DAY) -> list[tuple[str, dict]]:
    return [(f"f{i:04d}", _file(day, i)) for i in range(start, start + n)]


def _load_many(cat, start: int = 0) -> int:
    with cat.transaction(author="t", message="load") as t:
        for day, d in enumerate(DAYS):
            t.add_many(f"/wh/sales/orders/{d}", _children(day, start), leaf=True)
    assert t.vid is not None
    return t.vid


def _load_one_by_one(cat, start: int = 0) -> int:
    with cat.transaction(author="t", message="load") as t:
        for day, d in enumerate(DAYS):
            for cid, value in _children(day, start):
                t.add(f"/wh/sales/orders/{d}/{cid}", value, leaf=True)
    assert t.vid is not None
    return t.vid


def _state(cat) -> dict:
    """Everything a reader can see of the loaded tree, at every vid."""
    out: dict = {"latest": cat.latest_vid, "commits": [(c.vid, c.author, c.message, sorted(c.paths))
                                                        for c in cat.commits()]}
    for vid in range(1, cat.latest_vid + 1):
        objs = [o for d in DAYS for o in cat.children(f"/wh/sales/orders/{d}", vid=vid)]
        out[vid] = [(o.path, o.value, o.vid, o.leaf) for o in objs]
        out[("plan", vid)] = sorted((f.path, f.vid) for f in cat.plan_files("wh.sales.orders", vid=vid))
        out[("pruned", vid)] = sorted(f.path for f in cat.plan_files("wh.sales.orders", where="price > 30", vid=vid))
    for d in DAYS:
        for i in (0, 7, PER_DAY - 1, PER_DAY + 3):
            path = f"/wh/sales/orders/{d}/f{i:04d}"
            out[("history", path)] = [(v.vid, v.end_vid, v.value) for v in cat.history(path)]
    return out


def test_the_bulk_loaded_tree_equals_the_same_objects_added_one_by_one(tmp_path):
    """Two catalogs, the same history: a base, a load, a removal, a second load that re-adds the
    removed leaf (its past lifetime kept) beside new ones. Every object, version, vid, commit,
    history and plan_files answer is the same at every vid."""
    states = []
    for name, load in (("many", _load_many), ("one", _load_one_by_one)):
        cat = cc.Catalog.open(str(tmp_path / name))
        try:
            _base(cat)
            load(cat)
            with cat.transaction(author="t", message="rm") as t:
                t.remove(f"/wh/sales/orders/{DAYS[0]}/f0007")
            if name == "many":
                with cat.transaction(author="t", message="load 2") as t:
                    t.add_many(f"/wh/sales/orders/{DAYS[0]}", [("f0007", {**_file(0, 7), "row_count": -7})], leaf=True)
                    for day, d in enumerate(DAYS):
                        t.add_many(f"/wh/sales/orders/{d}", _children(day, PER_DAY, 20), leaf=True)
            else:
                with cat.transaction(author="t", message="load 2") as t:
                    t.add(f"/wh/sales/orders/{DAYS[0]}/f0007", {**_file(0, 7), "row_count": -7}, leaf=True)
                    for day, d in enumerate(DAYS):
                        for cid, value in _children(day, PER_DAY, 20):
                            t.add(f"/wh/sales/orders/{d}/{cid}", value, leaf=True)
            states.append(_state(cat))
        finally:
            cat.close()
    many, one = states
    assert many == one
    assert many["latest"] == 4 and len(many[2]) == len(DAYS) * PER_DAY and len(many[4]) == len(DAYS) * (PER_DAY + 20)
    history = many[("history", f"/wh/sales/orders/{DAYS[0]}/f0007")]
    assert [(v[0], v[2] and v[2]["row_count"]) for v in history] == [(2, 70), (3, None), (4, -7)]


@pytest.mark.parametrize("value", [
    {"obj_type": "file", "row_count": 1},
    {"row_count": 1, "obj_type": "file"},  # obj_type moved first, as pack_leaf does
    {"obj_type": "file", "n": None, "note": "null}"},  # a null token: the closer look
    {"obj_type": "file", "x": {"obj_type": "nested"}},
    {"obj_type": "file", "raw": b"\x00\x01"},  # not JSON: msgpack
    {},
    {"obj_type": "file", "cols": [{"a": 1}, {"b": {}}]},  # '},{' inside a value: not cut there
    {"obj_type": "file", "s": "},{", "t": "}\x00{"},  # ... nor inside a string; NUL is escaped
])
def test_add_many_records_exactly_the_ops_of_add(value):
    ops = child_ops("/t/p", [("a", value), ("b.parquet", dict(value))], leaf=True)
    assert ops == [make_op("add", "/t/p/a", value, True), make_op("add", "/t/p/b.parquet", dict(value), True)]
    assert child_ops("/", [("x", value)], leaf=True) == [make_op("add", "/x", value, True)]
    assert child_ops("/t", iter([("x", value)])) == [make_op("add", "/t/x", value)]


def test_add_many_encodes_a_list_of_mixed_values_as_add_does():
    """One list of values of every shape (the whole list encoded at once, then cut per value)."""
    values = [{}, {"obj_type": "file", "a": [{"x": 1}]}, {"obj_type": "file", "n": 1}, {"k": {"obj_type": "x"}}, {"n": 1, "obj_type": "file"},
              {"obj_type": "file", "s": "é\u2028\U0001F600"}, {"a": {}, "b": [{}, {}]}, {}, {"x": "}"}]
    for k in range(1, len(values) + 1):
        some = values[:k] + values[k:][::-1]
        ops = child_ops("/t", [(f"c{i}", v) for i, v in enumerate(some)], leaf=True)
        assert ops == [make_op("add", f"/t/c{i}", v, True) for i, v in enumerate(some)]


@pytest.mark.parametrize("cid, error, match", [
    ("a/b", InvalidPathError, "contains '/'"),
    ("", InvalidPathError, "is empty"),
    ("..", InvalidPathError, "relative segments"),
    (".", InvalidPathError, "relative segments"),
    ("a\x00b", InvalidPathError, "NUL"),
    (7, InvalidPathError, "must be a string"),
])
def test_a_bad_child_id_is_refused_and_records_nothing(catalog, cid, error, match):
    _base(catalog)
    with catalog.transaction() as t:
        t.add("/wh/x", {"obj_type": "namespace"})
        with pytest.raises(error, match=match):
            t.add_many("/wh/sales/orders/" + DAYS[0], [("ok", _file(0, 0)), (cid, _file(0, 1))], leaf=True)
        assert [op.path for op in t.ops] == ["/wh/x"]
    assert catalog.get(f"/wh/sales/orders/{DAYS[0]}/ok") is None


@pytest.mark.parametrize("child, error, match", [
    (("x", [1]), InvalidValueError, "must be a dict"),
    (("x", {"v": float("nan")}), InvalidValueError, "NaN"),
    (("x", {"big": 2 ** 70}), InvalidValueError, "does not fit in 64 bits"),
    (("x",), InvalidValueError, "an \\(id, value\\) pair"),
    ("xy", InvalidValueError, "an \\(id, value\\) pair"),
])
def test_a_bad_value_is_refused_and_records_nothing(catalog, child, error, match):
    _base(catalog)
    with catalog.transaction() as t:
        with pytest.raises(error, match=match):
            t.add_many("/wh/sales/orders/" + DAYS[0], [("ok", _file(0, 0)), child], leaf=True)
        assert t.ops == []
    with catalog.transaction() as t:
        with pytest.raises(InvalidPathError, match="ends with"):
            t.add_many("/wh/", [("a", {})], leaf=True)


def _big(n: int = 100) -> list[tuple[str, dict]]:
    return _children(0, 0, n)


def test_a_duplicate_path_fails_the_commit_and_writes_nothing(catalog):
    vid = _base(catalog)
    part = f"/wh/sales/orders/{DAYS[0]}"
    with pytest.raises(AlreadyExistsError, match=f"cannot add '{part}/f0005': it already exists"):
        with catalog.transaction() as t:
            t.add_many(part, _big() + [("f0005", _file(0, 5))], leaf=True)
    with pytest.raises(AlreadyExistsError, match="already exists"):
        with catalog.transaction() as t:
            t.add_many(part, _big(), leaf=True)
            t.add_many(part, [("f0099", _file(0, 99))], leaf=True)
    assert catalog.latest_vid == vid and catalog.children(part) == []
    v2 = _load_many(catalog)
    with pytest.raises(AlreadyExistsError, match=f"cannot add '{part}/f0003'"):  # exists in the store
        with catalog.transaction() as t:
            t.add_many(part, _children(0, PER_DAY, 100) + [("f0003", _file(0, 3))], leaf=True)
    assert catalog.latest_vid == v2 and len(catalog.children(part)) == PER_DAY


def test_a_missing_or_leaf_parent_fails_the_commit_and_writes_nothing(catalog):
    vid = _base(catalog)
    with pytest.raises(MissingObjectError, match="its parent '/wh/sales/orders/nope' does not exist"):
        with catalog.transaction() as t:
            t.add_many(f"/wh/sales/orders/{DAYS[0]}", _big(), leaf=True)
            t.add_many("/wh/sales/orders/nope", _big(), leaf=True)
    assert catalog.latest_vid == vid
    v2 = _load_many(catalog)
    leaf = f"/wh/sales/orders/{DAYS[0]}/f0001"
    with pytest.raises(PreconditionError, match=f"its parent '{leaf}' is a leaf"):
        with catalog.transaction() as t:
            t.add_many(leaf, _big(), leaf=True)
    assert catalog.latest_vid == v2
    assert catalog.get(f"{leaf}/f0000") is None and catalog.get(f"/wh/sales/orders/{DAYS[1]}/f0099") is None


def test_a_parent_added_in_the_same_write_set(catalog):
    _base(catalog)
    with catalog.transaction() as t:
        t.add("/wh/sales/orders/d=new", {"obj_type": "partition", "values": {"d": "new"}})
        t.add_many("/wh/sales/orders/d=new", _big(), leaf=True)
    assert len(catalog.children("/wh/sales/orders/d=new")) == 100


def test_a_bulk_load_conflicting_with_a_concurrent_commit_fails_cleanly_and_loses_nothing(cat):
    """A bulk load that read what a concurrent commit then wrote gets the ConflictError every
    transaction gets; one whose path a concurrent commit added gets AlreadyExistsError. Either way
    nothing of it is written, the concurrent commit stays whole, and a retry loads every object."""
    vid = _base(cat)
    part = f"/wh/sales/orders/{DAYS[0]}"
    load = cat.transaction(author="bulk")
    assert load.get(part) is not None  # recorded for validation
    load.add_many(part, _big(), leaf=True)
    with cat.transaction(author="other") as other:
        other.merge(part, {"properties": {"k": {"op": "set", "val": "v"}}})
    with pytest.raises(ConflictError, match=f"'{part}' was changed by commit {vid + 1}"):
        load.commit()
    assert cat.latest_vid == vid + 1 and cat.children(part) == []
    assert cat.get(part).value["properties"] == {"k": "v"}

    load = cat.transaction(author="bulk")
    load.add_many(part, _big(), leaf=True)
    with cat.transaction(author="other") as other:
        other.add(f"{part}/f0042", {"obj_type": "file", "row_count": -1}, leaf=True)
    with pytest.raises(AlreadyExistsError, match=f"'{part}/f0042'"):
        load.commit()
    assert [o.path for o in cat.children(part)] == [f"{part}/f0042"] and cat.latest_vid == vid + 2

    with cat.transaction(author="bulk") as retry:
        retry.add_many(part, [c for c in _big() if c[0] != "f0042"], leaf=True)
    assert len(cat.children(part)) == 100 and cat.get(f"{part}/f0042").value["row_count"] == -1
    assert cat.get(f"{part}/f0043").value == _file(0, 43) and cat.latest_vid == vid + 3


def test_a_returned_bulk_load_survives_a_reopen(data_dir):
    cat = cc.Catalog.open(data_dir)
    try:
        _base(cat)
        vid = _load_many(cat)
        before = _state(cat)
    finally:
        cat.close()
    cat = cc.Catalog.open(data_dir)
    try:
        assert cat.latest_vid == vid and _state(cat) == before
    finally:
        cat.close()


LOADER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {root!r})
    import catalog_core as cc
    cat = cc.Catalog.open({data!r})
    with cat.transaction() as t:
        t.add("/b", {{"obj_type": "namespace"}})
        for p in range(10):
            t.add(f"/b/p{{p}}", {{"obj_type": "partition"}})
    def children(p, lo, hi):
        return [(f"f{{i:07d}}", {{"obj_type": "file", "row_count": i}}) for i in range(lo + p, hi, 10)]
    for batch in range(3):
        with cat.transaction() as t:
            for p in range(10):
                t.add_many(f"/b/p{{p}}", children(p, batch * 1000, (batch + 1) * 1000), leaf=True)
        print("ack", t.vid, flush=True)
    t = cat.transaction()
    for p in range(10):
        t.add_many(f"/b/p{{p}}", children(p, 3000, 3000 + {big}), leaf=True)
    print("committing", flush=True)
    t.commit()
    print("done", t.vid, flush=True)
""")


def test_a_bulk_load_killed_midway_leaves_the_previous_version(data_dir, tmp_path):
    """The loader acknowledges three add_many commits, then is SIGKILLed while it commits a fourth
    of 300,000 leaves (recorded before "committing", so the kill lands in the commit:
    materializing, encoding or writing the batch). Reopened: every acknowledged batch is whole,
    nothing of the killed one is visible, the catalog at the last acknowledged vid."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    text, acks = kill_in_commit(tmp_path, LOADER.format(root=root, data=data_dir, big=300_000))
    assert len(acks) == 3 and "done" not in text, text[-2000:]
    cat = cc.Catalog.open(data_dir)
    try:
        assert cat.latest_vid == acks[-1]
        files = [f for p in range(10) for f in cat.children(f"/b/p{p}")]
        assert len(files) == 3000
        assert len(cat.query('/[obj_id = "b"]/*/*')) == 3000
        assert cat.get("/b/p0/f0003000") is None
        assert cat.get("/b/p9/f0002999").value["row_count"] == 2999
        assert max(c.vid for c in cat.commits()) == acks[-1]
    finally:
        cat.close()


def test_a_big_parent_is_checked_by_point_reads(cat):
    """A parent holding more children than the load adds (+16) is not scanned: its keys are read
    with multi-gets. An existing path is refused, a removed one re-added, the rest added."""
    _base(cat)
    part = f"/wh/sales/orders/{DAYS[0]}"
    with cat.transaction() as t:
        t.add_many(part, _children(0, 0, 300), leaf=True)
    with cat.transaction() as t:
        t.remove(f"{part}/f0010")
    vid = cat.latest_vid
    with pytest.raises(AlreadyExistsError, match=f"'{part}/f0299'"):
        with cat.transaction() as t:
            t.add_many(part, _children(0, 300, 80) + [("f0299", _file(0, 299))], leaf=True)
    assert cat.latest_vid == vid and cat.get(f"{part}/f0300") is None
    with cat.transaction() as t:
        t.add_many(part, _children(0, 300, 80) + [("f0010", {"obj_type": "file", "row_count": -10})], leaf=True)
    assert len(cat.children(part)) == 380
    assert [v.value and v.value["row_count"] for v in cat.history(f"{part}/f0010")] == [100, None, -10]


def test_leaves_of_the_root_and_a_mixed_write_set(cat):
    """add_many under '/' (the root's children: keys of depth 1, read by multi-gets), and a
    write set mixing add_many with single adds and a remove, whose keys the commit builds."""
    with cat.transaction() as t:
        t.add_many("/", [(f"r{i:03d}", {"obj_type": "file", "row_count": i}) for i in range(70)], leaf=True)
    assert len(cat.children("/")) == 70 and cat.get("/r069").value == {"obj_type": "file", "row_count": 69}
    with cat.transaction() as t:
        t.add("/ns", {"obj_type": "namespace"})
        t.add_many("/ns", [(f"a{i}", {"obj_type": "file"}) for i in range(40)], leaf=True)
        t.remove("/r000")
        t.add_many("/", [(f"s{i}", {"obj_type": "file"}) for i in range(40)], leaf=True)
        t.add("/ns/z", {"obj_type": "file"}, leaf=True)
    assert len(cat.children("/ns")) == 41 and cat.get("/r000") is None and cat.get("/s39") is not None
    assert len(cat.children("/")) == 70 - 1 + 40 + 1


@pytest.mark.parametrize("vid", [1, 200, 70_000, 2**33])
def test_a_fresh_runs_records_are_msgpacks_bytes(vid):
    """A run of new leaves is stored as msgpack would write its lifetimes, [[vid, 0, bytes, None]],
    for every header width of the vid and of the bytes (bin 8, 16, 32)."""
    from msgpack import packb

    from catalog_core._engine.apply import fresh_records

    packed = [b"", b"{}", b"x" * 255, b"y" * 256, b"z" * 65535, b"w" * 65536]
    assert fresh_records(vid, packed) == [packb([[vid, 0, p, None]], use_bin_type=True) for p in packed]


def _leaf_records(cat) -> dict[bytes, bytes]:
    return dict(cat._store.cf["leaf"].items())


def test_a_bulk_commit_stores_the_bytes_of_single_adds(tmp_path):
    """The leaf records of a bulk commit (add_many: a fresh run) equal byte for byte those of a
    small write set (one lifetimes list packed per leaf), for values of every size and a value
    JSON cannot hold (kept as msgpack)."""
    special = [("s-small", {"obj_type": "file", "n": 1}), ("s-300", {"obj_type": "file", "b": "x" * 300}),
               ("s-70k", {"obj_type": "file", "b": "é" * 35_000}), ("s-raw", {"obj_type": "file", "raw": b"\x00\x01"})]
    records = []
    for name, bulk in (("bulk", True), ("small", False)):
        cat = cc.Catalog.open(str(tmp_path / name))
        try:
            with cat.transaction() as t:
                t.add("/p", {"obj_type": "partition"})
            with cat.transaction() as t:
                t.add_many("/p", special + ([(f"f{i:03d}", _file(0, i)) for i in range(70)] if bulk else []), leaf=True)
            got = _leaf_records(cat)
            records.append({k: v for k, v in got.items() if b"s-" in k})
            assert cat.get("/p/s-70k").value["b"] == "é" * 35_000 and cat.get("/p/s-raw").value["raw"] == b"\x00\x01"
        finally:
            cat.close()
    assert len(records[0]) == 4 and records[0] == records[1]


def _group_history(cat, grouped: bool) -> list:
    """A base, then three commits: A loads two partitions (a fresh run), B removes one of A's
    leaves and adds it back, removes A's other partition whole and adds more leaves, C adds one
    of A's leaves again (AlreadyExistsError, alone). `grouped`: A, B and C queue behind a commit
    whose write is held, so they share one group (one batch); else each commits alone."""
    import threading
    import time

    with cat.transaction() as t:
        t.add("/wh", {"obj_type": "namespace"})
        t.add("/wh/p1", {"obj_type": "partition"})
        t.add("/wh/p2", {"obj_type": "partition"})
    outcome: dict[str, object] = {}

    def a():
        with cat.transaction(author="A") as t:
            t.add_many("/wh/p1", [(f"f{i:04d}", _file(1, i)) for i in range(70)], leaf=True)
            t.add_many("/wh/p2", [(f"f{i:04d}", _file(2, i)) for i in range(70)], leaf=True)
        outcome["A"] = t.vid

    def b():
        with cat.transaction(author="B") as t:
            t.remove("/wh/p1/f0005")
            t.add("/wh/p1/f0005", {"obj_type": "file", "row_count": -5}, leaf=True)
            t.remove("/wh/p2")
            t.add_many("/wh/p1", [(f"f{i:04d}", _file(1, i)) for i in range(70, 140)], leaf=True)
        outcome["B"] = t.vid

    def c():
        try:
            with cat.transaction(author="C") as t:
                t.add_many("/wh/p1", [(f"g{i:04d}", _file(1, i)) for i in range(70)] + [("f0001", _file(1, 1))], leaf=True)
        except AlreadyExistsError as exc:
            outcome["C"] = str(exc)

    if not grouped:
        with cat.transaction() as t:
            t.add("/gate", {"obj_type": "namespace"})
        for step in (a, b, c):
            step()
    else:
        store, mgr = cat._store, cat._mgr
        real_write, gate, entered = store.write, threading.Event(), threading.Event()

        def held_write(wb, latest):
            if not entered.is_set():
                entered.set()
                assert gate.wait(30)
            real_write(wb, latest)

        store.write = held_write
        groups = cat.engine_info()["groups"]
        holder = cat.transaction()
        holder.add("/gate", {"obj_type": "namespace"})
        first = threading.Thread(target=holder.commit)
        first.start()
        assert entered.wait(30)
        threads = []
        for step in (a, b, c):
            th = threading.Thread(target=step)
            th.start()
            threads.append(th)
            deadline = time.monotonic() + 30
            while len(mgr._queue) < len(threads):  # queued in this order behind the held write
                assert time.monotonic() < deadline
                time.sleep(0.005)
        gate.set()
        for th in [first, *threads]:
            th.join(30)
        store.write = real_write
        assert cat.engine_info()["groups"] == groups + 2  # the held one, then A, B and C's
    state = [outcome]
    for vid in range(1, cat.latest_vid + 1):
        for parent in ("/wh/p1", "/wh/p2"):
            state.append([(o.path, o.value, o.vid) for o in cat.children(parent, vid=vid)] if cat.get(parent, vid=vid) else None)
    state.append([(v.vid, v.end_vid, v.value) for v in cat.history("/wh/p1/f0005")])
    state.append([(v.vid, v.end_vid) for v in cat.history("/wh/p2/f0003")])
    state.append(sorted(_leaf_records(cat).items()))
    return state


def test_a_fresh_run_read_by_later_commits_of_its_group(tmp_path):
    """Commits of one group see an earlier commit's run of new leaves as the store would: a
    later commit removes and re-adds one (its lifetimes close and reopen), removes their parent
    whole (each leaf listed and tombstoned), and a commit adding one again fails alone. The
    tree, every version and the stored records equal those of the same commits made one by one."""
    grouped = cc.Catalog.open(str(tmp_path / "grouped"))
    alone = cc.Catalog.open(str(tmp_path / "alone"))
    try:
        got, want = _group_history(grouped, True), _group_history(alone, False)
    finally:
        grouped.close()
        alone.close()
    assert "'/wh/p1/f0001': it already exists" in str(got[0]["C"])
    assert got[0]["A"] == 3 and got[0]["B"] == 4  # after the base and the held commit
    assert got[-3] == [(3, 4, _file(1, 5)), (4, None, None), (4, None, {"obj_type": "file", "row_count": -5})]
    assert got[-2] == [(3, 4), (4, None)]  # removed with its partition
    assert got == want


def test_a_bulk_load_removed_in_the_same_write_set_changes_nothing(cat):
    """A run of new leaves then the removal of each, in one write set: no vid (as for one add and
    remove); one removal fewer commits the one leaf left."""
    _base(cat)
    part = f"/wh/sales/orders/{DAYS[0]}"
    vid = cat.latest_vid
    with cat.transaction() as t:
        t.add_many(part, _children(0, 0, 70), leaf=True)
        for i in range(70):
            t.remove(f"{part}/f{i:04d}")
    assert t.vid == vid and cat.latest_vid == vid and cat.children(part) == []
    with cat.transaction() as t:
        t.add_many(part, _children(0, 0, 70), leaf=True)
        for i in range(1, 70):
            t.remove(f"{part}/f{i:04d}")
    assert t.vid == vid + 1 and [o.path for o in cat.children(part)] == [f"{part}/f0000"]
