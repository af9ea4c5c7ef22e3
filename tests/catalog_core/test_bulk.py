"""The bulk load path: a write set of many leaf adds (>= apply._PREFETCH_MIN ops) reads its paths'
store records in one multi-get and takes the inlined leaf-add path; it must check exactly what the
one-op path checks. Durability: a bulk load's batch is one RocksDB write with a synced WAL, so a
commit that returned survives a reopen and one killed midway leaves the catalog at its previous
version (a real subprocess, SIGKILL)."""

import os
import textwrap

import pytest

import catalog_core as cc
from catalog_core._engine.apply import _PREFETCH_MIN
from catalog_core.errors import AlreadyExistsError, InvalidValueError, MissingObjectError, PreconditionError
from tests.helpers import kill_in_commit

N = 2 * _PREFETCH_MIN  # a write set large enough for the bulk path


def _file(i: int) -> dict:
    return {"obj_type": "file", "path": f"s3://b/f{i}.parquet", "row_count": i,
            "columns": {"a": {"min": i, "max": i + 9, "null_count": 0}}}


def _base(cat: cc.Catalog) -> None:
    with cat.transaction() as t:
        t.add("/b", {"obj_type": "namespace"})
        t.add("/b/p", {"obj_type": "partition"})


def _bulk(cat: cc.Catalog, extra: list[tuple[str, dict]] | None = None, start: int = 0) -> int:
    with cat.transaction() as t:
        for i in range(start, start + N):
            t.add(f"/b/p/f{i:05d}", _file(i), leaf=True)
        for path, value in extra or []:
            t.add(path, value, leaf=True)
    assert t.vid is not None
    return t.vid


def test_bulk_add_of_an_existing_leaf_is_refused_and_writes_nothing(cat):
    _base(cat)
    vid = _bulk(cat)
    with pytest.raises(AlreadyExistsError, match="already exists"):
        _bulk(cat, start=N, extra=[("/b/p/f00003", _file(3))])
    assert cat.latest_vid == vid
    assert cat.get(f"/b/p/f{N:05d}") is None


def test_bulk_add_over_an_inner_object_is_refused(cat):
    _base(cat)
    with cat.transaction() as t:
        t.add("/b/p/sub", {"obj_type": "namespace"})
    with pytest.raises(AlreadyExistsError, match="already exists"):
        _bulk(cat, extra=[("/b/p/sub", _file(0))])


def test_bulk_add_twice_in_one_write_set_is_refused(cat):
    _base(cat)
    with pytest.raises(AlreadyExistsError):
        _bulk(cat, extra=[("/b/p/f00001", _file(1))])
    assert cat.get("/b/p/f00001") is None


def test_bulk_add_checks_the_parent(cat):
    _base(cat)
    with pytest.raises(MissingObjectError, match="does not exist"):
        _bulk(cat, extra=[("/b/nope/f", _file(0))])
    vid = _bulk(cat)
    with pytest.raises(PreconditionError, match="is a leaf"):
        _bulk(cat, start=N, extra=[("/b/p/f00000/x", _file(0))])
    assert cat.latest_vid == vid


def test_bulk_re_add_after_remove_keeps_the_past_lifetime(cat):
    _base(cat)
    v1 = _bulk(cat)
    with cat.transaction() as t:
        t.remove("/b/p/f00007")
    v2 = cat.latest_vid
    v3 = _bulk(cat, start=N, extra=[("/b/p/f00007", {**_file(7), "row_count": -7})])
    assert cat.get("/b/p/f00007", vid=v1).value["row_count"] == 7
    assert cat.get("/b/p/f00007", vid=v2) is None
    assert cat.get("/b/p/f00007", vid=v3).value["row_count"] == -7
    assert len(cat.children("/b/p")) == 2 * N


def test_bulk_remove_then_add_in_one_write_set(cat):
    _base(cat)
    v1 = _bulk(cat)
    with cat.transaction() as t:
        t.remove("/b/p/f00002")
        for i in range(N, 2 * N):
            t.add(f"/b/p/f{i:05d}", _file(i), leaf=True)
        t.add("/b/p/f00002", {**_file(2), "row_count": 99}, leaf=True)
    assert cat.get("/b/p/f00002", vid=v1).value["row_count"] == 2
    assert cat.get("/b/p/f00002").value["row_count"] == 99


def test_non_finite_values_are_refused_next_to_null_count_keys(cat):
    """pack_leaf looks closer only at values whose JSON holds a null token: a NaN beside keys that
    merely contain 'null' must still be refused, and a string holding 'null}' stored as it is."""
    _base(cat)
    with cat.transaction() as t:
        with pytest.raises(InvalidValueError, match="NaN"):
            t.add("/b/p/x", {"obj_type": "file", "columns": {"a": {"null_count": 0, "min": float("nan")}}}, leaf=True)
        with pytest.raises(InvalidValueError, match="Infinity"):
            t.add("/b/p/y", {"obj_type": "file", "v": [1.0, float("inf")]}, leaf=True)
        t.add("/b/p/z", {"obj_type": "file", "note": "null}", "n": None}, leaf=True)
    assert cat.get("/b/p/z").value == {"obj_type": "file", "note": "null}", "n": None}


LOADER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {root!r})
    import catalog_core as cc
    cat = cc.Catalog.open({data!r})
    with cat.transaction() as t:
        t.add("/b", {{"obj_type": "namespace"}})
        for p in range(10):
            t.add(f"/b/p{{p}}", {{"obj_type": "partition"}})
    for batch in range(3):
        with cat.transaction() as t:
            for i in range(batch * 1000, (batch + 1) * 1000):
                t.add(f"/b/p{{i % 10}}/f{{i:07d}}", {{"obj_type": "file", "row_count": i}}, leaf=True)
        print("ack", t.vid, flush=True)
    t = cat.transaction()
    for i in range(3000, 3000 + {big}):
        t.add(f"/b/p{{i % 10}}/f{{i:07d}}", {{"obj_type": "file", "row_count": i}}, leaf=True)
    print("committing", flush=True)
    t.commit()
    print("done", t.vid, flush=True)
""")


def test_a_returned_bulk_load_survives_and_a_killed_one_leaves_the_previous_version(data_dir, tmp_path):
    """The loader acknowledges three bulk commits, then is killed while it commits a fourth of
    400,000 leaves (seconds of work, killed right after it starts: with 100,000 a CI run once saw
    the commit finish within the 0.2 s before the kill). Reopened: every acknowledged
    batch is whole and the killed one left nothing, the catalog at the last acknowledged vid."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    text, acks = kill_in_commit(tmp_path, LOADER.format(root=root, data=data_dir, big=400_000))
    assert len(acks) == 3 and "done" not in text, text[-2000:]
    cat = cc.Catalog.open(data_dir)
    try:
        assert cat.latest_vid == acks[-1]
        files = [f for p in range(10) for f in cat.children(f"/b/p{p}")]
        assert len(files) == 3000
        assert cat.get("/b/p0/f0003000") is None
        assert cat.get("/b/p9/f0002999").value["row_count"] == 2999
    finally:
        cat.close()


def _wal_bytes(data_dir: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _dirs, files in os.walk(data_dir)
               if os.path.basename(d) == "rocksdb" for f in files if f.endswith(".log"))


def test_a_bulk_load_keeps_the_wal_near_its_cap(data_dir, monkeypatch):
    """The small column families (commits, default) would keep every WAL file of a bulk load alive
    until RocksDB's default cap (GBs); storage.MAX_TOTAL_WAL makes it flush them. Here the cap is
    4 MB and the load writes ~19 MB of WAL in 10 batches (7.5 MB kept with the cap, all without)."""
    from catalog_core._engine import storage

    monkeypatch.setattr(storage, "MAX_TOTAL_WAL", 4 << 20)
    cat = cc.Catalog.open(data_dir)
    try:
        with cat.transaction() as t:
            t.add("/b", {"obj_type": "namespace"})
        written = 0
        for batch in range(10):
            with cat.transaction() as t:
                for i in range(batch * 10_000, (batch + 1) * 10_000):
                    value = {"obj_type": "file", "path": f"s3://bucket/some/longer/prefix/f{i:07d}.parquet",
                             "row_count": i, "columns": {"a": {"min": i, "max": i + 9, "null_count": 0}}}
                    t.add(f"/b/f{i:07d}", value, leaf=True)
                    written += len(str(value))
        assert written > 12 << 20
        assert _wal_bytes(data_dir) < 12 << 20, _wal_bytes(data_dir)
    finally:
        cat.close()
