"""The file-list cache of plan_files: never serves a list that a commit has changed."""

import threading

import pytest

import catalog_core as cc
from catalog_core._engine.filecache import FileListCache, Floors, parent_prefix
from catalog_core._engine.keys import children_prefix, key_of
from tests.helpers import lake

P = children_prefix("/wh/sales/orders/d=2001-06-01")
ENTRIES = (("/wh/sales/orders/d=2001-06-01/f0", b'{"obj_type":"file"}', 3),)


def test_parent_prefix_matches_children_prefix():
    for parent in ("/", "/wh", "/wh/sales/orders/d=2001-06-01"):
        child = parent.rstrip("/") + "/f\u00e9 1"
        assert parent_prefix(key_of(child)) == children_prefix(parent)


def test_a_commit_between_the_floor_read_and_the_put_keeps_the_list_out():
    c = FileListCache(Floors(open_vid=10))
    floor = c.floor(P)
    c.floors.raise_to([parent_prefix(key_of("/wh/sales/orders/d=2001-06-01/f9"))], 11)
    c.put(P, floor, 10, ENTRIES, 1)
    assert c.get(P, 11) is None and c.get(P, 10) is None


def test_lists_hold_from_their_floor_until_the_next_write():
    c = FileListCache(Floors(open_vid=10))
    c.put(P, c.floor(P), 9, ENTRIES, 1)  # computed below the floor: not kept
    assert c.get(P, 12) is None
    c.put(P, c.floor(P), 12, ENTRIES, 1)
    assert c.get(P, 10) == (ENTRIES, 1) and c.get(P, 99) == (ENTRIES, 1)
    assert c.get(P, 9) is None  # older than the floor: the list may differ there
    c.floors.raise_to([parent_prefix(key_of("/wh/sales/orders/d=2001-06-01/f0"))], 13)
    assert c.get(P, 13) is None and c.get(P, 12) is None


def test_the_cache_stays_within_its_byte_budget():
    c = FileListCache(Floors(open_vid=0), max_bytes=40_000)
    big = tuple((f"/p/f{i}", b"x" * 900, 1) for i in range(10))  # ~10 kB each list
    for day in range(10):
        c.put(children_prefix(f"/t/d={day}"), 0, 0, big, 10)
    assert c.info()["bytes"] <= 40_000 and c.info()["lists"] == 4
    assert c.get(children_prefix("/t/d=9"), 0) is not None and c.get(children_prefix("/t/d=0"), 0) is None


def test_one_long_plan_does_not_flush_the_lists_others_use(data_dir):
    with cc.Catalog.open(data_dir, file_cache_mb=0.05) as cat:  # ~52 kB: a few partitions' lists
        with cat.transaction() as t:
            t.add("/wh", {"obj_type": "catalog"})
            t.add("/wh/s", {"obj_type": "namespace"})
            t.add("/wh/s/t", {"obj_type": "table", "partition_by": ["d"]})
            for d in range(40):
                t.add(f"/wh/s/t/d={d:02d}", {"obj_type": "partition", "d": f"{d:02d}"})
                for i in range(10):
                    t.add(f"/wh/s/t/d={d:02d}/f{i}", {"obj_type": "file", "path": "x" * 100}, leaf=True)
        hot = "/wh/s/t/d=00"  # the long plan reads it first, then 39 more lists
        cat.plan_files("wh.s.t", where='d = "00"')
        assert hot in files_cache(cat)["paths"]
        assert len(cat.plan_files("wh.s.t")) == 400  # every partition: more than the whole budget
        assert hot in files_cache(cat)["paths"]  # still there
        assert files_cache(cat)["bytes"] <= files_cache(cat)["max_bytes"]


def files_cache(cat):
    return cat.engine_info()["caches"]["files"]


def _names(files):
    return sorted(f.path for f in files)


def test_plans_follow_adds_removes_and_time_travel(cat):
    v1 = lake(cat)
    where = 'd = "2001-06-01"'
    first = cat.plan_files("wh.sales.orders", where=where)
    assert "/wh/sales/orders/d=2001-06-01" in files_cache(cat)["paths"]  # planned once, cached
    with cat.transaction() as t:
        t.add("/wh/sales/orders/d=2001-06-01/f7", {"obj_type": "file", "path": "f7"}, leaf=True)
    v2 = t.vid
    with cat.transaction() as t:
        t.remove("/wh/sales/orders/d=2001-06-01/f0")
    v3 = t.vid
    with cat.transaction() as t:
        t.remove("/wh/sales/orders/d=2001-06-01")
    for _ in range(2):  # the second round is served from the cache where it may be
        assert cat.plan_files("wh.sales.orders", where=where, vid=v1) == first
        assert _names(cat.plan_files("wh.sales.orders", where=where, vid=v2)) == \
            [f"/wh/sales/orders/d=2001-06-01/{f}" for f in ("f0", "f1", "f7")]
        assert _names(cat.plan_files("wh.sales.orders", where=where, vid=v3)) == \
            [f"/wh/sales/orders/d=2001-06-01/{f}" for f in ("f1", "f7")]
        assert cat.plan_files("wh.sales.orders", where=where) == []


def test_reopen_starts_from_a_floor_at_the_open_vid(data_dir):
    with cc.Catalog.open(data_dir) as cat:
        v1 = lake(cat)
        with cat.transaction() as t:
            t.remove("/wh/sales/orders/d=2001-06-01/f0")
    with cc.Catalog.open(data_dir) as cat:
        for _ in range(2):
            assert len(cat.plan_files("wh.sales.orders", vid=v1)) == 6
            assert len(cat.plan_files("wh.sales.orders")) == 5


def test_concurrent_plans_match_an_uncached_scan_at_the_same_vid(cat):
    lake(cat)
    part = "/wh/sales/orders/d=2001-06-02"
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer():
        try:
            for i in range(150):
                with cat.transaction() as t:
                    if i % 3 == 2:
                        t.remove(f"{part}/n{i - 1}")
                    else:
                        t.add(f"{part}/n{i}", {"obj_type": "file", "path": f"n{i}"}, leaf=True)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            stop.set()

    def reader():
        checked = after = 0
        try:
            # at least 50 checks, and 3 after the last commit: those read one vid, so the second
            # of them is a hit whatever the timing (under load every check during the writes can
            # read a vid a commit has already moved past, and the cache then serves none of them)
            while not stop.is_set() or checked < 50 or after < 3:
                after += stop.is_set()
                vid = cat.latest_vid
                planned = _names(cat.plan_files("wh.sales.orders", where='d = "2001-06-02"', vid=vid))
                queried = _names(cat.query('/[obj_id = "wh"]/[obj_id = "sales"]/[obj_id = "orders"]'
                                           '/[obj_id = "d=2001-06-02"]/[obj_type = "file"]', vid=vid))
                listed = _names(o for o in cat.children(part, vid=vid) if o.leaf)  # reads no cache
                assert planned == listed, f"at vid {vid}: planned {planned}, listed {listed}"
                assert queried == listed, f"at vid {vid}: queried {queried}, listed {listed}"
                checked += 1
        except BaseException as exc:
            errors.append(exc)
            stop.set()

    threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader) for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    assert not errors, errors[0]
    caches = cat.engine_info()["caches"]
    assert caches["files"]["hits"] > 0 and caches["leaf_lists"]["hits"] > 0  # the readers did use the caches


def test_a_zero_budget_disables_the_cache(data_dir):
    with cc.Catalog.open(data_dir, file_cache_mb=0) as cat:
        lake(cat)
        for _ in range(3):
            assert len(cat.plan_files("wh.sales.orders")) == 6
        assert files_cache(cat)["hits"] == 0 and files_cache(cat)["lists"] == 0


@pytest.mark.parametrize("size", [-1, "64", None, float("nan"), True])
def test_a_bad_budget_is_refused_before_anything_opens(data_dir, size):
    with pytest.raises(cc.errors.InvalidValueError, match="file_cache_mb"):
        cc.Catalog.open(data_dir, file_cache_mb=size)
    cc.Catalog.open(data_dir).close()  # nothing was left locked
