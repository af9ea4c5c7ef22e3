"""Fixtures for every layer's tests. `catalog` is the behaviour fixture: a test that takes it runs
twice, against the embedded `Catalog` and against `cc.connect(url)` talking to a real uvicorn
server on a loopback port (as pyiceberg runs one suite against every catalog backend); such a test
must pass unchanged on both. Shared helpers that test modules import are in tests/helpers.py."""

import json
import os
import subprocess
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


@pytest.fixture(scope="session")
def lake_dir(tmp_path_factory):
    """The Acme lake (LAKE.md) at --scale small, seed 7, built once per session through the real Spark
    bridge; SEMCAT_EVAL_LAKE=DIR reuses one built by `semcat eval build --data DIR --scale small`."""
    pre = os.environ.get("SEMCAT_EVAL_LAKE")
    if pre:
        return pre
    out = str(tmp_path_factory.mktemp("acme") / "lake")
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-m", "mcp_server.cli", "eval", "build", "--data", out, "--scale", "small",
                           "--seed", "7"], env=env, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "initial load committed" in proc.stderr and "done:" in proc.stderr  # progress lines
    summary = json.load(open(os.path.join(out, "lake.json")))
    print(f"\nlake built in {summary['build_seconds']} s: {summary['total_rows']} rows, {summary['spark_writes']} Spark "
          f"writes, commits {summary['commits']}; rows {summary['rows']}")
    return out
