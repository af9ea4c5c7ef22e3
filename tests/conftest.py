"""Fixtures for every layer's tests. `catalog` is the behaviour fixture: a test that takes it runs
twice, against the embedded `Catalog` and against `cc.connect(url)` talking to a real uvicorn
server on a loopback port (as pyiceberg runs one suite against every catalog backend); such a test
must pass unchanged on both. Shared helpers that test modules import are in tests/helpers.py."""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import catalog_core as cc  # noqa: E402  (after the path set-up above)

BACKENDS = ["embedded", "http"]


@pytest.fixture
def data_dir(tmp_path):
    return str(tmp_path / "data")


@pytest.fixture(params=BACKENDS)
def catalog(request, data_dir):
    """An empty catalog, embedded or remote (the test id says which)."""
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
    engine.close()
