"""Fixtures of the semantic tests: `cat` runs a test against the embedded catalog and against
`cc.connect(url)` to a real uvicorn server (the pattern of tests/catalog_core/test_behaviour.py);
`ecat` is embedded only; `lk` is a LakeBuilder on `cat`."""

from __future__ import annotations

import pytest

import catalog_core as cc
from semantic.history import clear_cache

from .lakes import LakeBuilder

BACKENDS = ["embedded", "http"]


@pytest.fixture(params=BACKENDS)
def cat(request, data_dir):
    engine = cc.Catalog.open(data_dir)
    if request.param == "embedded":
        yield engine
    else:
        from mcp_server.http.server import serve_in_thread

        server = serve_in_thread(engine)
        client = cc.connect(server.url)
        yield client
        client.close()
        server.stop()
    clear_cache()
    engine.close()


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


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a long end-to-end test (still part of the default run)")
