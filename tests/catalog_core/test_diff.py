"""`cat.diff(from, to, prefix)`: adds, updates, removes, clone, re-add, old snapshots, refs; run
against the embedded catalog and over HTTP (the behaviour suite's fixture)."""

from datetime import datetime, timezone

import pytest

import catalog_core as cc
from catalog_core import errors
from tests.helpers import lake


@pytest.fixture
def cat(catalog):
    """The behaviour fixture (tests/conftest.py): embedded and over HTTP."""
    return catalog


def kinds(changes):
    return [(c.kind, c.path) for c in changes]


def test_adds_updates_removes_with_values_and_vids(cat):
    v1 = lake(cat)
    with cat.transaction() as t:
        t.update("/wh/sales", {"obj_type": "namespace", "properties": {"v": 2}})
        t.add("/wh/sales/orders/d=2001-06-04", {"obj_type": "partition", "d": "2001-06-04"})
        t.add("/wh/sales/orders/d=2001-06-04/f9", {"obj_type": "file", "row_count": 9}, leaf=True)
    v2 = t.vid
    with cat.transaction() as t:
        t.merge("/wh/sales/orders", {"stats": {"row_count": {"op": "+", "val": 9}}})
        t.remove("/wh/sales/orders/d=2001-06-01/f1")
    v3 = t.vid
    got = list(cat.diff(v1, v3))
    assert kinds(got) == [
        ("updated", "/wh/sales"),
        ("updated", "/wh/sales/orders"),
        ("removed", "/wh/sales/orders/d=2001-06-01/f1"),
        ("added", "/wh/sales/orders/d=2001-06-04"),
        ("added", "/wh/sales/orders/d=2001-06-04/f9"),
    ]
    by = {c.path: c for c in got}
    assert by["/wh/sales"].before == {"obj_type": "namespace", "properties": {}}
    assert by["/wh/sales"].after == {"obj_type": "namespace", "properties": {"v": 2}} and by["/wh/sales"].vid == v2
    assert by["/wh/sales/orders"].before["stats"]["row_count"] == 0
    assert by["/wh/sales/orders"].after["stats"]["row_count"] == 9 and by["/wh/sales/orders"].vid == v3
    f1 = by["/wh/sales/orders/d=2001-06-01/f1"]
    assert f1.leaf and f1.after is None and f1.before["row_count"] == 20 and f1.vid == v3
    f9 = by["/wh/sales/orders/d=2001-06-04/f9"]
    assert f9.leaf and f9.before is None and f9.after == {"obj_type": "file", "row_count": 9} and f9.vid == v2
    # at old snapshots: only what the sub-range changed; an empty range is empty
    assert kinds(cat.diff(v2, v3)) == [("updated", "/wh/sales/orders"), ("removed", "/wh/sales/orders/d=2001-06-01/f1")]
    assert list(cat.diff(v3, v3)) == [] and list(cat.diff(v3)) == []
    # prefix keeps the subtree
    assert kinds(cat.diff(v1, v3, prefix="/wh/sales/orders/d=2001-06-04")) == [
        ("added", "/wh/sales/orders/d=2001-06-04"), ("added", "/wh/sales/orders/d=2001-06-04/f9")]
    assert list(cat.diff(v1, v3, prefix="/wh/sales/orders/d=2001-06-0")) == []
    # from the empty catalog: everything is added
    assert {c.kind for c in cat.diff(0, v1)} == {"added"} and len(list(cat.diff(0, v1))) == 3 + 3 + 6


def test_subtree_removal_and_re_add(cat):
    v1 = lake(cat)
    with cat.transaction() as t:
        t.remove("/wh/sales/orders/d=2001-06-02")
    v2 = t.vid
    assert kinds(cat.diff(v1, v2)) == [("removed", "/wh/sales/orders/d=2001-06-02"),
                                      ("removed", "/wh/sales/orders/d=2001-06-02/f0"),
                                      ("removed", "/wh/sales/orders/d=2001-06-02/f1")]
    # re-add: the same partition value and one file as it was, another file changed
    with cat.transaction() as t:
        t.add("/wh/sales/orders/d=2001-06-02", {"obj_type": "partition", "d": "2001-06-02", "stats": {"row_count": 0}})
        t.add("/wh/sales/orders/d=2001-06-02/f0", {"obj_type": "file", "path": "2001-06-02/f0.parquet",
                                                    "row_count": 10, "columns": {"price": {"min": 0, "max": 5}}},
              leaf=True)
        t.add("/wh/sales/orders/d=2001-06-02/f1", {"obj_type": "file", "row_count": 1}, leaf=True)
    v3 = t.vid
    got = list(cat.diff(v1, v3))
    assert kinds(got) == [("updated", "/wh/sales/orders/d=2001-06-02/f1")]
    assert got[0].before["row_count"] == 20 and got[0].after == {"obj_type": "file", "row_count": 1}
    assert got[0].vid == v3 and got[0].leaf
    # added and removed inside the range: nothing
    with cat.transaction() as t:
        t.add("/wh/tmp", {"obj_type": "namespace"})
    with cat.transaction() as t:
        t.remove("/wh/tmp")
    assert list(cat.diff(v3, cat.latest_vid)) == []


def test_clone_and_refs(cat):
    v1 = lake(cat)
    cat.snapshot("before-clone", v1)
    cv = cat.clone("/wh/sales", "/wh/copy")
    got = list(cat.diff("before-clone", cv, prefix="/wh/copy"))
    assert len(got) == 1 + 1 + 3 + 6 and {c.kind for c in got} == {"added"} and {c.vid for c in got} == {cv}
    leaves = [c for c in got if c.leaf]
    assert len(leaves) == 6
    assert leaves[0].after == cat.get(leaves[0].path.replace("/wh/copy", "/wh/sales")).value
    # the branch record is a change too, outside the prefix
    assert [c.path for c in cat.diff(v1, cv) if not c.path.startswith("/wh/copy")] == \
        ["/_branches", "/_branches/%2Fwh%2Fcopy"]
    # refs: ISO time, vid as text
    t_iso = datetime.fromtimestamp(cat.commits()[-1].time + 0.001, tz=timezone.utc).isoformat()
    assert len(list(cat.diff(str(v1), t_iso, prefix="/wh/copy"))) == len(got)


def test_bad_input_is_refused(cat):
    v1 = lake(cat)
    with pytest.raises(errors.InvalidValueError, match="swap them"):
        list(cat.diff(v1, 0))
    with pytest.raises(errors.NotFoundError):
        list(cat.diff("no-such-snapshot", v1))
    with pytest.raises(errors.NotFoundError):
        list(cat.diff(0, v1 + 100))
    with pytest.raises(errors.InvalidPathError):
        list(cat.diff(0, v1, prefix="wh/sales"))


def test_diff_streams_in_batches_over_http(data_dir):
    from mcp_server.http.server import serve_in_thread

    engine = cc.Catalog.open(data_dir)
    server = serve_in_thread(engine)
    client = cc.connect(server.url, batch_size=5)
    try:
        with engine.transaction() as t:
            t.add("/c", {"obj_type": "catalog"})
            for i in range(40):
                t.add(f"/c/o{i:02d}", {"obj_type": "x", "i": i})
        stream = client.diff(0, None)
        first = next(stream)
        assert first.path == "/c" and stream.bytes_received < 2000  # one batch read, not 41 changes
        rest = list(stream)
        assert [c.path for c in rest] == [f"/c/o{i:02d}" for i in range(40)]
        assert rest[-1].after == {"obj_type": "x", "i": 39} and rest[-1].vid == 1
    finally:
        client.close()
        server.stop()
        engine.close()
