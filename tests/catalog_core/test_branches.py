"""Branches: clone records them, publish merges them back three-way in one MVOCC-validated
commit, conflicts name their paths, bad input changes nothing. Embedded and over HTTP (the
behaviour suite's fixture); the publish race runs embedded, with threads, 200 times."""

import threading

import pytest

import catalog_core as cc
from catalog_core import errors
from tests.helpers import lake


@pytest.fixture
def cat(catalog):
    """The behaviour fixture (tests/conftest.py): embedded and over HTTP."""
    return catalog

T = "/wh/sales/orders"
B = "/wh/wap"


def rows(cat, path=T, vid=None):
    return cat.get(path, vid).value["stats"]["row_count"]


def append(cat, root, part, fid, n, author="etl"):
    """A blind append like the Spark bridge's: a file leaf plus stats merges."""
    with cat.transaction(author=author) as t:
        t.add(f"{root}/orders/{part}/{fid}", {"obj_type": "file", "path": f"{fid}.parquet", "row_count": n,
                                              "columns": {"price": {"min": n, "max": 100 + n, "null_count": 0}}},
              leaf=True)
        delta = {"stats": {"row_count": {"op": "+", "val": n},
                           "columns": {"price": {"min": {"op": "min", "val": n}, "max": {"op": "max", "val": 100 + n},
                                                 "null_count": {"op": "+", "val": 0}}}}}
        t.merge(f"{root}/orders/{part}", delta)
        t.merge(f"{root}/orders", delta)
    return t.vid


def state(cat, prefix, vid=None):
    """Every object under `prefix` at `vid`, by path relative to it."""
    out = {}
    stack = [prefix]
    while stack:
        p = stack.pop()
        for o in cat.children(p, vid):
            out[o.path[len(prefix):]] = o.value
            if not o.leaf:
                stack.append(o.path)
    return out


def test_clone_records_a_branch(cat):
    v1 = lake(cat)
    cv = cat.clone("/wh/sales", B, vid=v1)
    [b] = cat.branches()
    assert (b.path, b.source, b.fork_vid, b.since_vid, b.created_vid) == (B, "/wh/sales", v1, cv, cv)
    # the branch root's value is the source's, untouched
    assert cat.get(B).value == cat.get("/wh/sales").value
    cat.clone("/wh/sales/orders", "/wh/sales/orders_fix")
    assert [x.path for x in cat.branches()] == ["/wh/sales/orders_fix", B]
    assert [x.path for x in cat.branches(prefix="/wh/sales")] == ["/wh/sales/orders_fix"]
    assert cat.branches(vid=v1) == []


def test_publish_applies_adds_updates_removes_and_merges_stats(cat):
    lake(cat)
    cat.clone("/wh/sales", B)
    append(cat, B, "d=2001-06-01", "fb", 5)                       # on the branch
    with cat.transaction() as t:
        t.remove(f"{B}/orders/d=2001-06-02/f0")                   # a file removed on the branch
        t.add(f"{B}/orders/d=2001-06-09", {"obj_type": "partition", "d": "2001-06-09", "stats": {"row_count": 0}})
        t.update(f"{B}/notes", {"obj_type": "note", "text": "added on the branch"})
        t.update("/wh/sales", {"obj_type": "namespace", "properties": {"owner": "ann"}})  # main: other object
    append(cat, "/wh/sales", "d=2001-06-01", "fm", 7)             # main, meanwhile
    before = cat.latest_vid
    main_before = state(cat, "/wh/sales")
    vid = cat.publish(B, onto="/wh/sales", author="wap", message="publish the fix")
    assert vid == cat.latest_vid == before + 1
    c = cat.commits()[-1]
    assert (c.author, c.message) == ("wap", "publish the fix")
    # additive stats: target + (branch - base); min/max combine
    assert rows(cat) == 7 + 5
    assert cat.get(T).value["stats"]["columns"]["price"] == {"min": 5, "max": 107, "null_count": 0}
    assert rows(cat, f"{T}/d=2001-06-01") == 12
    assert cat.get(f"{T}/d=2001-06-01/fb").value["row_count"] == 5        # branch's leaf, shared
    assert cat.get(f"{T}/d=2001-06-01/fm").value["row_count"] == 7        # main's append kept
    assert cat.get(f"{T}/d=2001-06-09") is not None and cat.get("/wh/sales/notes").value["text"].endswith("branch")
    assert cat.get("/wh/sales").value["properties"] == {"owner": "ann"}   # main's own change kept
    # the removed file: gone at the publish vid, readable before it
    assert cat.get(f"{T}/d=2001-06-02/f0") is None
    assert cat.get(f"{T}/d=2001-06-02/f0", before).value["row_count"] == 10
    # readers of main see all or nothing: the vid before publish is exactly main as it was
    assert state(cat, "/wh/sales", before) == main_before
    # what the publish changed, as a diff
    assert sorted(ch.path for ch in cat.diff(before, vid, prefix="/wh/sales")) == sorted(
        [T, f"{T}/d=2001-06-01", f"{T}/d=2001-06-01/fb", f"{T}/d=2001-06-02/f0", f"{T}/d=2001-06-09",
         "/wh/sales/notes"])


def test_keep_moves_the_base_and_drop_removes(cat):
    lake(cat)
    cat.clone("/wh/sales", B)
    append(cat, B, "d=2001-06-01", "b1", 5)
    append(cat, "/wh/sales", "d=2001-06-01", "m1", 7)
    p1 = cat.publish(B, onto="/wh/sales")
    [b] = cat.branches()
    assert b.fork_vid == p1 and b.since_vid == p1 - 1
    assert cat.get(B) is not None and rows(cat) == 12
    # a second round only carries what changed on the branch since the first publish
    append(cat, B, "d=2001-06-03", "b2", 1)
    append(cat, "/wh/sales", "d=2001-06-03", "m2", 2)
    cat.publish(B, onto="/wh/sales", keep=False)
    assert rows(cat) == 12 + 1 + 2 and rows(cat, f"{T}/d=2001-06-01") == 12
    assert cat.branches() == [] and cat.get(B) is None
    # the published leaves outlive the dropped branch they were written on
    assert cat.get(f"{T}/d=2001-06-03/b2").value["row_count"] == 1
    # drop_branch on its own
    cat.clone("/wh/sales", "/wh/tmp")
    cat.drop_branch("/wh/tmp")
    assert cat.branches() == [] and cat.get("/wh/tmp") is None


def test_conflicts_name_every_path_and_write_nothing(cat):
    lake(cat)
    cat.clone("/wh/sales", B)
    tbl = cat.get(T).value
    with cat.transaction() as t:
        t.update(f"{B}/orders", {**tbl, "properties": {"owner": "branch"}})
        t.update(f"{B}/orders/d=2001-06-01", {"obj_type": "partition", "d": "2001-06-01", "stats": {"row_count": 0},
                                              "note": "b"})
        t.remove(f"{B}/orders/d=2001-06-03")
    append(cat, B, "d=2001-06-02", "ok", 3)  # not a conflict
    with cat.transaction() as t:
        t.update(T, {**tbl, "properties": {"owner": "main"}})
        t.update(f"{T}/d=2001-06-01", {"obj_type": "partition", "d": "2001-06-01", "stats": {"row_count": 0},
                                       "note": "m"})
        t.merge(f"{T}/d=2001-06-03", {"stats": {"row_count": {"op": "+", "val": 1}}})  # removed on the branch
    latest, branches = cat.latest_vid, cat.branches()
    with pytest.raises(errors.ConflictError) as info:
        cat.publish(B, onto="/wh/sales")
    err = info.value
    assert err.details["paths"] == [T, f"{T}/d=2001-06-01", f"{T}/d=2001-06-03"]
    assert err.retryable is False and "properties" in err.message and "note" in err.message
    assert cat.latest_vid == latest and cat.branches() == branches
    assert cat.get(f"{T}/d=2001-06-02/ok") is None
    # the same change on both sides is no conflict
    with cat.transaction() as t:
        t.update(T, {**tbl, "properties": {"owner": "branch"}})
        t.update(f"{T}/d=2001-06-01", {"obj_type": "partition", "d": "2001-06-01", "stats": {"row_count": 0},
                                       "note": "b"})
        t.merge(f"{T}/d=2001-06-03", {"stats": {"row_count": {"op": "-", "val": 1}}})
    cat.publish(B, onto="/wh/sales")
    assert cat.get(f"{T}/d=2001-06-02/ok") is not None and cat.get(f"{T}/d=2001-06-03") is None


def test_target_adds_under_a_partition_the_branch_removed(cat):
    lake(cat)
    cat.clone("/wh/sales", B)
    with cat.transaction() as t:
        t.remove(f"{B}/orders/d=2001-06-03")
    with cat.transaction() as t:  # a raw add that leaves the partition's value alone
        t.add(f"{T}/d=2001-06-03/late", {"obj_type": "file", "row_count": 1}, leaf=True)
    with pytest.raises(errors.ConflictError) as info:
        cat.publish(B, onto="/wh/sales")
    assert info.value.details["paths"] == [f"{T}/d=2001-06-03/late"]


def test_bad_input_is_refused_and_changes_nothing(cat):
    lake(cat)
    with cat.transaction() as t:
        t.add("/wh/other", {"obj_type": "namespace", "properties": {}})
    cat.clone("/wh/sales", B)
    append(cat, B, "d=2001-06-01", "fb", 5)
    latest = cat.latest_vid
    with pytest.raises(errors.NotFoundError, match="not a branch"):
        cat.publish("/wh/sales", onto="/wh/other")           # not a branch
    with pytest.raises(errors.InvalidValueError, match="cloned from '/wh/sales'"):
        cat.publish(B, onto="/wh/other")                      # not its source
    with pytest.raises(errors.InvalidPathError):
        cat.publish("wh/wap", onto="/wh/sales")
    with pytest.raises(errors.NotFoundError):
        cat.drop_branch("/wh/other")
    assert cat.latest_vid == latest
    with cat.transaction() as t:
        t.remove("/wh/sales")                                 # the source goes away
    latest = cat.latest_vid
    with pytest.raises(errors.PreconditionError, match="no longer exists"):
        cat.publish(B, onto="/wh/sales")
    assert cat.latest_vid == latest and cat.get("/wh/sales") is None


def test_publishing_twice_concurrently_applies_once(cat):
    lake(cat)
    for i in range(8):
        branch = f"/wh/b{i}"
        cat.clone("/wh/sales", branch)
        append(cat, branch, "d=2001-06-01", f"x{i}", 10)
        before = rows(cat)
        outcomes: list = []
        gate = threading.Barrier(2)

        def go(gate=gate, outcomes=outcomes, branch=branch):
            gate.wait()
            try:
                outcomes.append(cat.publish(branch, onto="/wh/sales", keep=False))
            except errors.CatalogError as exc:
                outcomes.append(exc)

        threads = [threading.Thread(target=go) for _ in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        ok = [o for o in outcomes if isinstance(o, int)]
        failed = [o for o in outcomes if not isinstance(o, int)]
        assert len(ok) == 1 and len(failed) == 1, outcomes
        # refused while the first runs, or found the branch already published and dropped
        assert isinstance(failed[0], (errors.ConflictError, errors.NotFoundError)), failed[0]
        assert "being published" in failed[0].message or "not a branch" in failed[0].message
        assert rows(cat) == before + 10


def test_publish_racing_commits_to_main_never_loses_an_update(data_dir):
    """200 runs: a publish races a commit to the same table on main, alternately a blind stats
    merge and a read-modify-write; every update of both survives."""
    engine = cc.Catalog.open(data_dir)
    try:
        lake(engine, files_per_part=1)
        expect = 0
        for i in range(200):
            branch = f"/wh/r{i}"
            engine.clone("/wh/sales", branch)
            with engine.transaction() as t:
                t.merge(f"{branch}/orders", {"stats": {"row_count": {"op": "+", "val": 10}}})
                t.add(f"{branch}/orders/d=2001-06-01/r{i}", {"obj_type": "file", "row_count": 10}, leaf=True)
            gate = threading.Barrier(2)
            errs: list = []

            def main_commit(gate=gate, errs=errs, i=i):
                gate.wait()
                try:
                    if i % 2:
                        with engine.transaction() as t:
                            t.merge(T, {"stats": {"row_count": {"op": "+", "val": 1}}})
                    else:
                        def rmw(t):
                            v = t.get(T).value
                            t.update(T, {**v, "stats": {**v["stats"], "row_count": v["stats"]["row_count"] + 1}})
                        cc.retry_transaction(engine, rmw, attempts=50)
                except BaseException as exc:  # noqa: BLE001
                    errs.append(exc)

            def publish(gate=gate, errs=errs, branch=branch):
                gate.wait()
                try:
                    engine.publish(branch, onto="/wh/sales", keep=False)
                except BaseException as exc:  # noqa: BLE001
                    errs.append(exc)

            threads = [threading.Thread(target=main_commit), threading.Thread(target=publish)]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            assert errs == []
            expect += 11
            assert rows(engine) == expect, f"run {i}: an update was lost"
            assert engine.get(f"{T}/d=2001-06-01/r{i}") is not None
        assert engine.branches() == []
    finally:
        engine.close()


def test_equal_increments_on_both_sides_both_count(cat):
    """Issue 22: the same additive change on the branch and on main counted once (`file_count` 2, not 3)."""
    with cat.transaction() as t:
        t.add("/wh", {"obj_type": "catalog", "properties": {}})
        t.add("/wh/sales", {"obj_type": "namespace", "properties": {}})
        t.add(T, {"obj_type": "table", "stats": {"row_count": 10, "file_count": 1}})
        t.add(f"{T}/f0", {"obj_type": "file", "row_count": 10}, leaf=True)
    cat.clone("/wh/sales", B)
    for root, fid, n in ((B, "fb", 5), ("/wh/sales", "fm", 7)):
        with cat.transaction() as t:
            t.add(f"{root}/orders/{fid}", {"obj_type": "file", "row_count": n}, leaf=True)
            t.merge(f"{root}/orders", {"stats": {"row_count": {"op": "+", "val": n}, "file_count": {"op": "+", "val": 1}}})
    cat.publish(B, onto="/wh/sales", keep=True)
    assert cat.get(T).value["stats"] == {"row_count": 22, "file_count": 3}
    # the same size on both sides: the whole table value ends equal on both, and still both count
    for root, fid in ((B, "gb"), ("/wh/sales", "gm")):
        with cat.transaction() as t:
            t.add(f"{root}/orders/{fid}", {"obj_type": "file", "row_count": 1}, leaf=True)
            t.merge(f"{root}/orders", {"stats": {"row_count": {"op": "+", "val": 1}, "file_count": {"op": "+", "val": 1}}})
    cat.publish(B, onto="/wh/sales", keep=True)
    assert cat.get(T).value["stats"] == {"row_count": 24, "file_count": 5}


def test_whole_stats_objects_set_on_both_sides_add_up(cat):
    """A table with no stats at the fork: both sides give it the same `stats` object; both count."""
    with cat.transaction() as t:
        t.add("/wh", {"obj_type": "catalog", "properties": {}})
        t.add("/wh/sales", {"obj_type": "namespace", "properties": {}})
        t.add(T, {"obj_type": "table"})
    cat.clone("/wh/sales", B)
    for root, fid in ((B, "fb"), ("/wh/sales", "fm")):
        with cat.transaction() as t:
            t.add(f"{root}/orders/{fid}", {"obj_type": "file", "row_count": 4}, leaf=True)
            t.merge(f"{root}/orders", {"stats": {"row_count": {"op": "+", "val": 4}}})
    assert cat.get(T).value == cat.get(f"{B}/orders").value
    cat.publish(B, onto="/wh/sales")
    assert cat.get(T).value["stats"] == {"row_count": 8}


def test_a_partition_added_on_both_sides_merges_its_stats(cat):
    lake(cat)
    cat.clone("/wh/sales", B)
    append(cat, B, "d=2001-06-01", "fb", 1)
    for root, fid, n in ((B, "nb", 5), ("/wh/sales", "nm", 7)):
        with cat.transaction() as t:
            t.add(f"{root}/orders/d=2001-07-01", {"obj_type": "partition", "d": "2001-07-01", "stats": {"row_count": 0}})
        append(cat, root, "d=2001-07-01", fid, n)
    cat.publish(B, onto="/wh/sales", keep=False)
    part = cat.get(f"{T}/d=2001-07-01").value
    assert part["stats"]["row_count"] == 12
    assert part["stats"]["columns"]["price"] == {"min": 5, "max": 107, "null_count": 0}
    assert {o.path.rsplit("/", 1)[1] for o in cat.children(f"{T}/d=2001-07-01")} == {"nb", "nm"}
    assert rows(cat) == 1 + 5 + 7
    # other objects added on both sides with different values still conflict
    cat.clone("/wh/sales", B)
    for root, text in ((B, "b"), ("/wh/sales", "m")):
        with cat.transaction() as t:
            t.add(f"{root}/notes", {"obj_type": "note", "text": text})
    with pytest.raises(errors.ConflictError, match="notes"):
        cat.publish(B, onto="/wh/sales")


def _remove_file(cat, root, part, fid, n):
    with cat.transaction() as t:
        t.remove(f"{root}/orders/{part}/{fid}")
        delta = {"stats": {"row_count": {"op": "-", "val": n}, "file_count": {"op": "-", "val": 1}}}
        t.merge(f"{root}/orders/{part}", delta)
        t.merge(f"{root}/orders", delta)


def test_a_file_removed_or_added_on_both_sides_counts_once(cat):
    with cat.transaction() as t:
        t.add("/wh", {"obj_type": "catalog", "properties": {}})
        t.add("/wh/sales", {"obj_type": "namespace", "properties": {}})
        t.add(T, {"obj_type": "table", "stats": {"row_count": 30, "file_count": 2}})
        t.add(f"{T}/p", {"obj_type": "partition", "stats": {"row_count": 30, "file_count": 2}})
        t.add(f"{T}/p/f0", {"obj_type": "file", "row_count": 10}, leaf=True)
        t.add(f"{T}/p/f1", {"obj_type": "file", "row_count": 20}, leaf=True)
    cat.clone("/wh/sales", B)
    _remove_file(cat, B, "p", "f1", 20)
    _remove_file(cat, "/wh/sales", "p", "f1", 20)
    for root in (B, "/wh/sales"):  # the same file (same leaf value) added on both sides
        with cat.transaction() as t:
            t.add(f"{root}/orders/p/f2", {"obj_type": "file", "row_count": 3}, leaf=True)
            delta = {"stats": {"row_count": {"op": "+", "val": 3}, "file_count": {"op": "+", "val": 1}}}
            t.merge(f"{root}/orders/p", delta)
            t.merge(f"{root}/orders", delta)
    with cat.transaction() as t:  # and one only on the branch
        t.add(f"{B}/orders/p/f3", {"obj_type": "file", "row_count": 1}, leaf=True)
        delta = {"stats": {"row_count": {"op": "+", "val": 1}, "file_count": {"op": "+", "val": 1}}}
        t.merge(f"{B}/orders/p", delta)
        t.merge(f"{B}/orders", delta)
    cat.publish(B, onto="/wh/sales")
    want = {"row_count": 14, "file_count": 3}
    assert cat.get(T).value["stats"] == want and cat.get(f"{T}/p").value["stats"] == want
    assert sorted(o.path.rsplit("/", 1)[1] for o in cat.children(f"{T}/p")) == ["f0", "f2", "f3"]
