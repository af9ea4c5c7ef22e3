"""The commit path's shortcuts keep every precondition: a parent checked once per write set is
checked again after the write set changes it, and the fast path check still refuses bad paths."""

import pytest

from catalog_core import errors


def test_a_parent_removed_earlier_in_the_same_write_set_is_missing(cat):
    with cat.transaction() as t:
        t.add("/p", {"obj_type": "catalog"})
    t = cat.transaction()
    t.add("/p/a", {"obj_type": "file"}, leaf=True)  # checks /p
    t.remove("/p")
    t.add("/p/b", {"obj_type": "file"}, leaf=True)  # /p is gone by now
    with pytest.raises(errors.MissingObjectError, match="parent '/p' does not exist"):
        t.commit()
    assert cat.get("/p/a") is None and cat.get("/p").obj_type == "catalog"


def test_a_parent_replaced_by_a_leaf_in_the_same_write_set_refuses_children(cat):
    with cat.transaction() as t:
        t.add("/p", {"obj_type": "catalog"})
    t = cat.transaction()
    t.add("/p/a", {"obj_type": "namespace"})
    t.add("/p/a/y", {"obj_type": "file"}, leaf=True)  # checks /p/a as a parent
    t.remove("/p/a")
    t.add("/p/a", {"obj_type": "file"}, leaf=True)
    t.add("/p/a/x", {"obj_type": "file"}, leaf=True)
    with pytest.raises(errors.PreconditionError, match="is a leaf"):
        t.commit()


@pytest.mark.parametrize("bad", ["", "a/b", "/a/", "/a//b", "/a/./b", "/a/..", "/a\x00b", "/\ud800",
                                 "/" + "x" * 4096, "/" + "é" * 2100])
def test_bad_paths_are_refused_when_recorded(cat, bad):
    with pytest.raises(errors.InvalidPathError):
        cat.transaction().add(bad, {"obj_type": "catalog"})


def test_unusual_but_valid_paths_round_trip(cat):
    paths = ["/.hidden", "/a.b", "/é", "/x y", "/" + "x" * 4095]
    with cat.transaction() as t:
        for p in paths:
            t.add(p, {"obj_type": "catalog", "p": p})
    assert [cat.get(p).value["p"] for p in paths] == paths
