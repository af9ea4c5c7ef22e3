"""`cc.open_catalog` opens an existing catalog and refuses a directory that is not one, naming the
catalogs below it; `cc.catalogs_below` finds them."""

from __future__ import annotations

import os

import pytest

import catalog_core as cc


def make(path) -> str:
    cc.Catalog.open(str(path)).close()
    return str(path)


def test_catalogs_below_finds_catalogs_to_a_depth_and_not_inside_them(tmp_path):
    a = make(tmp_path / "a")
    c = make(tmp_path / "b" / "c")
    deep = make(tmp_path / "d" / "e" / "f")
    make(tmp_path / ".hidden")  # hidden directories are not searched
    make(tmp_path / "a" / "nested")  # inside a catalog: not searched
    (tmp_path / "g").mkdir()
    (tmp_path / "file").write_text("x")
    assert cc.catalogs_below(str(tmp_path)) == [a, c]
    assert cc.catalogs_below(str(tmp_path), depth=1) == [a]
    assert cc.catalogs_below(str(tmp_path), depth=3) == [a, c, deep]
    assert cc.catalogs_below(str(tmp_path), depth=0) == []
    assert cc.catalogs_below(str(tmp_path / "missing")) == []
    assert cc.catalogs_below(str(tmp_path / "file")) == []


def test_catalogs_below_a_catalog_skips_its_own_store(tmp_path):
    root = make(tmp_path)
    other = make(tmp_path / "other")
    assert cc.catalogs_below(root) == [other]


def test_catalogs_below_names_them_as_the_path_was_given(tmp_path, monkeypatch):
    make(tmp_path / "lake" / "stale")
    monkeypatch.chdir(tmp_path)
    assert cc.catalogs_below("lake") == [os.path.join("lake", "stale")]


def test_open_catalog_refuses_a_directory_that_is_no_catalog(tmp_path):
    stale = make(tmp_path / "stale")
    with pytest.raises(cc.NotFoundError, match="catalogs below it: .*stale.*--create") as exc:
        cc.open_catalog(str(tmp_path))
    assert exc.value.details["catalogs"] == [stale]
    with pytest.raises(cc.NotFoundError, match="does not exist"):
        cc.open_catalog(str(tmp_path / "nope"))
    with pytest.raises(cc.NotFoundError) as exc:
        cc.open_catalog(str(tmp_path / "nope"), offer_create=False)
    assert "--create" not in exc.value.message
    (tmp_path / "empty").mkdir()
    with pytest.raises(cc.NotFoundError, match="no catalog in the directories below"):
        cc.open_catalog(str(tmp_path / "empty"))
    (tmp_path / "f").write_text("x")
    with pytest.raises(cc.InvalidValueError, match="is a file"):
        cc.open_catalog(str(tmp_path / "f"), create=True)
    assert sorted(os.listdir(tmp_path)) == ["empty", "f", "stale"]  # nothing was created


def test_open_catalog_opens_an_existing_one_and_creates_only_when_asked(tmp_path):
    path = str(tmp_path / "new")
    with cc.open_catalog(path, create=True, protocol="mgl") as cat:
        assert cat.protocol == "mgl"
        with cat.transaction() as txn:
            txn.add("/wh", {"obj_type": "catalog", "properties": {}})
    with cc.open_catalog(path) as cat:
        assert cat.get("/wh") is not None


def test_an_empty_catalog_over_catalogs_is_refused_unless_create(tmp_path):
    stale = tmp_path / "stale"
    with cc.Catalog.open(str(stale)) as cat, cat.transaction() as txn:
        txn.add("/wh", {"obj_type": "catalog", "properties": {}})
    make(tmp_path)  # an empty catalog at the root, e.g. from an earlier open of the wrong directory
    with pytest.raises(cc.NotFoundError, match="is empty .* catalogs below it: .*stale"):
        cc.open_catalog(str(tmp_path))
    cc.open_catalog(str(tmp_path), create=True).close()  # the lock was released by the refusal
    cc.open_catalog(str(stale)).close()


def test_open_takes_a_directory_or_a_url(tmp_path):
    """`cc.open` is the one entry point: a directory's catalog as open_catalog opens it, an http(s)
    URL as a client of that server (which sees the same commits), create only for a directory."""
    from mcp_server.http.server import serve_in_thread

    d = str(tmp_path / "c")
    with pytest.raises(cc.NotFoundError, match="--create"):
        cc.open(d)
    engine = cc.open(d, create=True)
    assert isinstance(engine, cc.Catalog)
    with engine.transaction(author="t") as txn:
        txn.add("/wh", {"obj_type": "catalog", "properties": {}})
    with serve_in_thread(engine) as server:
        remote = cc.open(server.url, token=None)
        try:
            assert not isinstance(remote, cc.Catalog)
            assert remote.get("/wh").value["obj_type"] == "catalog"
        finally:
            remote.close()
        with pytest.raises(cc.InvalidValueError, match="exists already"):
            cc.open(server.url, create=True)
    engine.close()


def test_opening_a_catalog_again_and_again_keeps_a_bounded_number_of_rocksdb_info_logs(tmp_path):
    """RocksDB rolls its info LOG to LOG.old.<time> at every open and keeps 1,000 by default: a catalog
    opened by every CLI command grew a file per command. KEEP_INFO_LOGS bounds them."""
    from catalog_core._engine.storage import KEEP_INFO_LOGS

    for _ in range(KEEP_INFO_LOGS + 4):
        cc.Catalog.open(str(tmp_path)).close()
    logs = [n for root, _, files in os.walk(tmp_path) for n in files if n.startswith("LOG")]
    assert len(logs) <= KEEP_INFO_LOGS + 1, sorted(logs)  # LOG itself and the kept LOG.old.* files
