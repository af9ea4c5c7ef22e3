"""Fixtures of the semantic tests: `cat` runs a test against the embedded catalog and against
`cc.connect(url)` to a real uvicorn server (the `catalog` fixture of tests/conftest.py);
`ecat` is embedded only; `lk` is a LakeBuilder on `cat`; `stale` the Acme lake's stale catalog (a copy)."""

from __future__ import annotations

import shutil

import pytest

import catalog_core as cc
from eval.fixtures.lakes import LakeBuilder
from eval.lake import data_dir
from semantic.history import clear_cache


@pytest.fixture
def cat(catalog):
    """The behaviour fixture of tests/conftest.py (embedded and HTTP), with the semantic caches
    cleared after each test."""
    yield catalog
    clear_cache()


@pytest.fixture
def ecat(data_dir):
    engine = cc.Catalog.open(data_dir)
    yield engine
    clear_cache()
    engine.close()


@pytest.fixture
def lk(cat, tmp_path):
    return LakeBuilder(cat, tmp_path / "files")


@pytest.fixture
def elk(ecat, tmp_path):
    return LakeBuilder(ecat, tmp_path / "files")


@pytest.fixture
def stale(lake_dir, tmp_path):
    """A copy of the Acme lake's stale catalog (without its enriched one), open; for the lake tests."""
    copy = str(tmp_path / "lake")
    shutil.copytree(lake_dir, copy, symlinks=True, ignore=shutil.ignore_patterns("enriched"))
    cat = cc.Catalog.open(data_dir(copy, "stale"))
    yield cat
    cat.close()
