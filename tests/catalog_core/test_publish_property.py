"""Property: whatever the interleaving of appends and removals on a branch and on main, every
publish leaves the target's table and partition stats equal to the sums over its file leaves
(issue 22: equal changes on both sides counted once). Embedded; 500 histories (a namespace each,
in one catalog, so a history costs its commits and not a RocksDB open)."""

import itertools

import pytest
from hypothesis import HealthCheck, example, given, note, settings
from hypothesis import strategies as st

import catalog_core as cc

PARTS = ("p0", "p1", "p2")
_ids = itertools.count()

# one step: (kind, side, partition, rows, pick)
step = st.tuples(st.sampled_from(["append", "append", "remove", "publish"]), st.sampled_from(["branch", "main"]),
                 st.sampled_from(PARTS), st.integers(1, 4), st.integers(0, 50))


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    c = cc.Catalog.open(str(tmp_path_factory.mktemp("publish-property")))
    with c.transaction() as t:
        t.add("/wh", {"obj_type": "catalog", "properties": {}})
    yield c
    c.close()


def _delta(sign: int, rows: int) -> dict:
    return {"stats": {"row_count": {"op": "+", "val": sign * rows}, "file_count": {"op": "+", "val": sign}}}


def _append(cat, root: str, part: str, rows: int, fid: str) -> None:
    with cat.transaction() as t:
        if t.get(f"{root}/t/{part}") is None:
            t.add(f"{root}/t/{part}", {"obj_type": "partition", "stats": {"row_count": 0, "file_count": 0}})
        t.add(f"{root}/t/{part}/{fid}", {"obj_type": "file", "row_count": rows}, leaf=True)
        t.merge(f"{root}/t/{part}", _delta(+1, rows))
        t.merge(f"{root}/t", _delta(+1, rows))


def _files(cat, root: str) -> list:
    return [f for p in cat.children(f"{root}/t") for f in cat.children(p.path)]


def _remove(cat, root: str, pick: int) -> None:
    files = sorted(_files(cat, root), key=lambda o: o.path)
    if not files:
        return
    f = files[pick % len(files)]
    part = f.path.rsplit("/", 1)[0]
    with cat.transaction() as t:
        t.remove(f.path)
        t.merge(part, _delta(-1, f.value["row_count"]))
        t.merge(f"{root}/t", _delta(-1, f.value["row_count"]))


def _check(cat, root: str) -> None:
    total = {"row_count": 0, "file_count": 0}
    for p in cat.children(f"{root}/t"):
        files = cat.children(p.path)
        want = {"row_count": sum(f.value["row_count"] for f in files), "file_count": len(files)}
        assert p.value["stats"] == want, f"partition {p.path}"
        total = {k: total[k] + want[k] for k in total}
    assert cat.get(f"{root}/t").value["stats"] == total, "table"


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(step, min_size=1, max_size=14))
@example([("append", "branch", "p0", 1, 0), ("append", "main", "p0", 1, 0), ("publish", "main", "p0", 1, 0)])
@example([("append", "main", "p1", 2, 0), ("append", "branch", "p1", 3, 0), ("publish", "main", "p0", 1, 0)])
@example([("append", "branch", "p0", 1, 0), ("publish", "main", "p0", 1, 0), ("remove", "branch", "p0", 1, 0),
          ("remove", "main", "p0", 1, 0), ("publish", "main", "p0", 1, 0)])
@pytest.mark.slow  # 500 histories: 100 s at load 16 (22 s quiet)
def test_stats_equal_the_sums_over_the_leaves_after_every_publish(engine, steps):
    note(f"steps: {steps!r}")
    n = next(_ids)
    main, branch = f"/wh/s{n}", f"/wh/b{n}"
    with engine.transaction() as t:
        t.add(main, {"obj_type": "namespace", "properties": {}})
        t.add(f"{main}/t", {"obj_type": "table", "stats": {"row_count": 0, "file_count": 0}})
    engine.clone(main, branch)
    fids = itertools.count()
    for kind, side, part, rows, pick in steps + [("publish", "main", "p0", 1, 0)]:
        root = branch if side == "branch" else main
        if kind == "append":
            _append(engine, root, part, rows, f"f{next(fids)}")
        elif kind == "remove":
            _remove(engine, root, pick)
        else:
            before = {f.path[len(main):] for f in _files(engine, main)}
            mine = {f.path[len(branch):] for f in _files(engine, branch)}
            since = engine.branches(prefix=branch)[0].since_vid
            then = {f.path[len(branch):] for f in _files_at(engine, branch, since)}
            engine.publish(branch, onto=main, keep=True)
            _check(engine, main)
            after = {f.path[len(main):] for f in _files(engine, main)}
            assert after == (before - (then - mine)) | (mine - then)
        _check(engine, branch)


def _files_at(cat, root: str, vid: int) -> list:
    return [f for p in cat.children(f"{root}/t", vid) for f in cat.children(p.path, vid)]
