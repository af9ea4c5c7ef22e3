"""The current-object cache behind `Catalog.get`: never a stale version, never a current version
at an older vid, read-only shared values, bounded with least-recently-used eviction."""

import copy
import pickle
import threading

import orjson
import pytest

import catalog_core as cc
from tests.helpers import start_server, stop_process

T = "/c/n/t"


def objects(cat):
    return cat.engine_info()["caches"]["objects"]


@pytest.fixture
def tree(cat):
    with cat.transaction() as t:
        t.add("/c", {"obj_type": "catalog"})
        t.add("/c/n", {"obj_type": "namespace"})
        t.add(T, {"obj_type": "table", "properties": {"k": "0"}, "stats": {"row_count": 0}})
        t.add(T + "/f1", {"obj_type": "file", "path": "s3://b/f1", "row_count": 1}, leaf=True)
    return cat


def warm(cat, path=T):
    """Two gets: the second is served from the cache."""
    cat.get(path)
    hits = objects(cat)["hits"]
    got = cat.get(path)
    assert objects(cat)["hits"] == hits + 1
    return got


def test_the_second_get_is_a_hit_and_the_same_object(tree):
    a = tree.get(T)
    assert tree.get(T) is a
    assert objects(tree)["hits"] >= 1 and objects(tree)["entries"] >= 1


@pytest.mark.parametrize("write", ["update", "merge", "remove"])
def test_a_read_after_a_commit_sees_it(tree, write):
    before = warm(tree)
    with tree.transaction() as t:
        if write == "update":
            t.update(T, {"obj_type": "table", "properties": {"k": "1"}})
        elif write == "merge":
            t.merge(T, {"properties": {"k": {"op": "set", "val": "1"}}})
        else:
            t.remove(T)
    got = tree.get(T)
    if write == "remove":
        assert got is None and tree.get(T + "/f1") is None
    else:
        assert got.value["properties"]["k"] == "1" and got.vid == tree.latest_vid
    assert tree.get(T, vid=before.vid).value == before.value  # the old version at its vid


def test_a_removed_subtree_and_its_leaves_are_not_served(tree):
    warm(tree, T + "/f1")
    warm(tree, "/c/n")
    with tree.transaction() as t:
        t.remove("/c/n")
    assert tree.get("/c/n") is None and tree.get(T) is None and tree.get(T + "/f1") is None
    with tree.transaction() as t:  # the same path again, as another kind of object
        t.add("/c/n", {"obj_type": "namespace", "v": 2})
        t.add(T, {"obj_type": "table", "v": 2})
        t.add(T + "/f1", {"obj_type": "file", "path": "s3://b/f1-new"}, leaf=True)
    assert tree.get("/c/n").value["v"] == 2 and tree.get(T).value["v"] == 2
    assert tree.get(T + "/f1").value["path"] == "s3://b/f1-new"


def test_time_travel_is_never_served_the_current_version(tree):
    v1 = tree.latest_vid
    for i in range(1, 4):
        with tree.transaction() as t:
            t.merge(T, {"properties": {"k": {"op": "set", "val": str(i)}}})
    warm(tree)
    for back, k in ((v1, "0"), (v1 + 1, "1"), (v1 + 2, "2")):
        assert tree.get(T, vid=back).value["properties"]["k"] == k
    assert tree.get(T, vid=0) is None  # before the table existed
    tree.snapshot("before-last", v1 + 2)
    assert tree.get(T, vid="before-last").value["properties"]["k"] == "2"
    assert tree.get(T, vid=tree.latest_vid).value["properties"]["k"] == "3"


def test_an_old_read_does_not_fill_the_cache_with_its_version(tree):
    v1 = tree.latest_vid
    with tree.transaction() as t:
        t.merge(T, {"properties": {"k": {"op": "set", "val": "1"}}})
    tree.clear_caches()
    assert tree.get(T, vid=v1).value["properties"]["k"] == "0"
    assert tree.get(T).value["properties"]["k"] == "1"
    assert tree.get(T).value["properties"]["k"] == "1"


def test_clone_publish_and_drop_invalidate(tree):
    warm(tree)
    tree.clone("/c/n", "/c/dev")
    warm(tree, "/c/dev/t")
    warm(tree, "/c/dev/t/f1")
    with tree.transaction() as t:
        t.merge("/c/dev/t", {"properties": {"k": {"op": "set", "val": "dev"}}})
        t.add("/c/dev/t/f2", {"obj_type": "file", "path": "s3://b/f2", "row_count": 2}, leaf=True)
    assert tree.get("/c/dev/t").value["properties"]["k"] == "dev"
    warm(tree, T)
    tree.publish("/c/dev", "/c/n")
    assert tree.get(T).value["properties"]["k"] == "dev"
    assert tree.get(T + "/f2").value["path"] == "s3://b/f2"
    warm(tree, "/c/dev/t")
    tree.drop_branch("/c/dev")
    assert tree.get("/c/dev/t") is None and tree.get("/c/dev") is None


def test_group_commits_from_threads_are_each_seen(tree):
    n, threads = 20, 4
    with tree.transaction() as t:
        for w in range(threads):
            t.add(f"/c/n/w{w}", {"obj_type": "table", "i": -1})
    for w in range(threads):
        warm(tree, f"/c/n/w{w}")

    stale = []

    def writer(w):
        for i in range(n):
            with tree.transaction() as t:
                t.update(f"/c/n/w{w}", {"obj_type": "table", "i": i})
            got = tree.get(f"/c/n/w{w}").value["i"]  # read-after-ack, from this thread
            if got != i:
                stale.append((w, i, got))

    ts = [threading.Thread(target=writer, args=(w,)) for w in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert stale == []
    assert [tree.get(f"/c/n/w{w}").value["i"] for w in range(threads)] == [n - 1] * threads


def test_a_read_during_a_commit_does_not_cache_the_version_it_replaces(tree):
    """Deterministic interleaving: a commit has raised the path's floor and is writing its
    batch (not yet visible) when a reader, at the previous vid, reads and would cache the old
    version; once the commit is acknowledged, the old version must never be served."""
    store = tree._store
    real_write = store.write
    entered, gate = threading.Event(), threading.Event()

    def slow_write(wb, latest):
        entered.set()
        assert gate.wait(10)
        real_write(wb, latest)

    tree.clear_caches()
    store.write = slow_write
    try:
        def commit():
            with tree.transaction() as t:
                t.merge(T, {"properties": {"k": {"op": "set", "val": "new"}}})

        th = threading.Thread(target=commit)
        th.start()
        assert entered.wait(10)
        assert tree.get(T).value["properties"]["k"] == "0"  # the commit is not visible yet
        assert tree.get(T).value["properties"]["k"] == "0"
        gate.set()
        th.join(10)
    finally:
        store.write = real_write
    assert tree.get(T).value["properties"]["k"] == "new"


def test_readers_never_see_a_version_older_than_the_last_ack(tree):
    """A writer commits k = 1..N and then publishes `acked = k`; readers read `acked` before each
    get, and the value they get must be at least that. Without the invalidation (or with it
    after the write became visible) readers keep getting the cached older version."""
    n, stop, errors = 300, threading.Event(), []
    acked = [0]

    def reader():
        while not stop.is_set():
            floor = acked[0]
            got = int(tree.get(T).value["properties"]["k"])
            if got < floor:
                errors.append((floor, got))
                return

    rs = [threading.Thread(target=reader) for _ in range(3)]
    for r in rs:
        r.start()
    try:
        for k in range(1, n + 1):
            with tree.transaction() as t:
                t.merge(T, {"properties": {"k": {"op": "set", "val": str(k)}}})
            acked[0] = k
    finally:
        stop.set()
        for r in rs:
            r.join()
    assert errors == []
    assert tree.get(T).value["properties"]["k"] == str(n)
    assert objects(tree)["hits"] > 0  # the readers were served from the cache between commits


def test_values_are_read_only_and_copies_are_plain(tree):
    obj = tree.get(T)
    value = obj.value
    for change in (lambda: value.__setitem__("x", 1), lambda: value.pop("stats"), lambda: value.update(x=1),
                   lambda: value["properties"].setdefault("x", 1), lambda: value.clear()):
        with pytest.raises(TypeError, match="copy.deepcopy"):
            change()
    assert tree.get(T).value == {"obj_type": "table", "properties": {"k": "0"}, "stats": {"row_count": 0}}
    mine = copy.deepcopy(value)
    mine["properties"]["k"] = "mine"
    assert type(mine) is dict and type(mine["properties"]) is dict
    assert pickle.loads(pickle.dumps(value)) == value and type(pickle.loads(pickle.dumps(value))) is dict
    assert orjson.loads(orjson.dumps(obj.to_dict()))["value"] == value
    with tree.transaction() as t:  # a read-only value goes back in as a write
        t.update("/c/n/t2", value)
    assert tree.get("/c/n/t2").value == value


def test_lists_are_read_only(cat):
    with cat.transaction() as t:
        t.add("/x", {"obj_type": "catalog", "tags": ["a", "b"], "deep": [{"k": [1]}]})
    v = cat.get("/x").value
    for change in (lambda: v["tags"].append("c"), lambda: v["deep"][0]["k"].extend([2]),
                   lambda: v["tags"].__setitem__(0, "z"), lambda: v["tags"].sort()):
        with pytest.raises(TypeError, match="read-only"):
            change()
    assert cat.get("/x").value["tags"] == ["a", "b"] and list(v["tags"]) + ["c"] == ["a", "b", "c"]


def test_the_cache_holds_its_byte_bound_and_evicts_the_least_recently_used(data_dir):
    with cc.Catalog.open(data_dir, object_cache_mb=0.02) as cat:  # ~21 kB
        with cat.transaction() as t:
            for i in range(200):
                t.add(f"/o{i:03d}", {"obj_type": "catalog", "pad": "x" * 100})
        info = objects(cat)
        for i in range(200):
            cat.get(f"/o{i:03d}")
            cat.get("/o000")  # kept in use: never the least recently used
            info = objects(cat)
            assert info["bytes"] <= info["max_bytes"]
        assert 0 < info["entries"] < 200
        hits = info["hits"]
        cat.get("/o000")
        cat.get("/o001")  # long evicted
        assert objects(cat)["hits"] == hits + 1


def test_the_cache_holds_its_entry_bound(data_dir):
    with cc.Catalog.open(data_dir) as cat:
        cat._store.objects.max_entries = 10
        with cat.transaction() as t:
            for i in range(30):
                t.add(f"/o{i:03d}", {"obj_type": "catalog"})
        for i in range(30):
            cat.get(f"/o{i:03d}")
            assert objects(cat)["entries"] <= 10
        assert objects(cat)["entries"] == 10


def test_object_cache_off_and_bad_sizes(data_dir):
    with cc.Catalog.open(data_dir, object_cache_mb=0) as cat:
        cat.get("/")
        cat.get("/")
        assert objects(cat)["entries"] == 0 and cat.get("/").obj_type == "root"
    with pytest.raises(cc.errors.InvalidValueError, match="object_cache_mb"):
        cc.Catalog.open(data_dir, object_cache_mb=-1)


def test_bad_paths_still_say_what_is_wrong(tree):
    for bad in ("c/n", "/c//n", "/c/", None):
        with pytest.raises(cc.errors.InvalidPathError):
            tree.get(bad)


def test_the_server_serves_commits_made_through_it(tmp_path):
    """The HTTP path: a real `semcat serve`; the server's catalog caches what clients read."""
    proc, url = start_server(str(tmp_path / "data"), str(tmp_path / "serve.log"))
    try:
        with cc.connect(url) as remote:
            with remote.transaction() as t:
                t.add("/s", {"obj_type": "catalog", "k": 0})
            for k in range(1, 4):
                assert remote.get("/s").value["k"] == k - 1
                assert remote.get("/s").value["k"] == k - 1  # a hit in the server
                with remote.transaction() as t:
                    t.merge("/s", {"k": {"op": "set", "val": k}})
                assert remote.get("/s").value["k"] == k
            assert remote.get("/s", vid=1).value["k"] == 0
    finally:
        stop_process(proc)
