"""Fixtures for every layer's tests. `catalog` is the behaviour fixture: a test that takes it runs
twice, against the embedded `Catalog` and against `cc.connect(url)` talking to a real uvicorn
server on a loopback port (as pyiceberg runs one suite against every catalog backend); such a test
must pass unchanged on both. Shared helpers that test modules import are in tests/helpers.py."""

import fcntl
import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import catalog_core as cc  # noqa: E402  (after the path set-up above)

BACKENDS = ["embedded", "http"]


# Test files that start a SparkSession in the test process. Under `--dist loadfile` (`make test`) they
# form one work unit, so one pytest-xdist worker runs them all on one JVM instead of each worker
# starting its own (two JVMs of `local[2]` on CI's 2 cores ran the Spark files slower than one).
SPARK_FILES = ("tests/spark_bridge/", "tests/semantic/test_spark_concurrency.py")


@pytest.hookimpl(optionalhook=True)  # pytest-xdist defines it; without xdist it is never called
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile` with SPARK_FILES as one unit; other modes are pytest-xdist's own."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SparkAsOneFile(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "spark" if path.startswith(SPARK_FILES) else path

    return SparkAsOneFile(config, log)


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
    bridge; SEMCAT_EVAL_LAKE=DIR reuses one built by `semcat eval build --data DIR --scale small`.
    Under pytest-xdist (`make test` runs `-n 2`) each worker gets its own copy, because RocksDB locks a
    catalog to one process: the lake is built once (the first worker builds it under a file lock, the
    others wait) or taken from SEMCAT_EVAL_LAKE, which is never opened in place then."""
    pre = os.environ.get("SEMCAT_EVAL_LAKE")
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return pre or _build_lake(str(tmp_path_factory.mktemp("acme") / "lake"))
    src = pre
    if not src:
        shared = tmp_path_factory.getbasetemp().parent  # the directory every worker's basetemp is in
        src = str(shared / "acme-lake")
        with open(shared / "acme-lake.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            if not os.path.exists(os.path.join(src, "lake.json")):
                shutil.rmtree(src, ignore_errors=True)  # a build a failed worker left half done
                _build_lake(src)
    out = str(tmp_path_factory.mktemp("acme") / "lake")
    shutil.copytree(src, out, symlinks=True)
    return out


def _build_lake(out: str) -> str:
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-m", "mcp_server.cli", "eval", "build", "--data", out, "--scale", "small",
                           "--seed", "7"], env=env, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "initial load committed" in proc.stderr and "done:" in proc.stderr  # progress lines
    summary = json.load(open(os.path.join(out, "lake.json")))
    print(f"\nlake built in {summary['build_seconds']} s: {summary['total_rows']} rows, {summary['spark_writes']} Spark "
          f"writes, commits {summary['commits']}; rows {summary['rows']}")
    return out
