"""Fixtures for every layer's tests. `catalog` is the behaviour fixture: a test that takes it runs
twice, against the embedded `Catalog` and against `cc.connect(url)` talking to a real uvicorn
server on a loopback port (as pyiceberg runs one suite against every catalog backend); such a test
must pass unchanged on both. Shared helpers that test modules import are in tests/helpers.py."""

import fcntl
import gc
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


# ------------------------------------------------------------------ the garbage collector
# `Catalog.close()` runs a full `gc.collect()` (RocksDB keeps its LOCK until the last handle is freed). A full
# collection walks every tracked object of the process: in a pytest worker, every imported module and every
# collected test (over 300,000 objects after collection, about 1 s per collection at load 12), so closing
# catalogs was 40% of the default tier's summed time (1,750 of 4,390 s, in teardowns). At the first test of
# each module, after the previous module's fixtures are gone, one collection clears the garbage and
# `gc.freeze()` moves what is left (modules, collected items, session fixtures) to the permanent generation,
# which later collections skip. Objects a test creates stay collectable as before: what a test checks does not
# change, only how many objects each close walks.
_frozen_at: list[object] = [None]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    module = getattr(item, "module", None)
    if module is not _frozen_at[0]:
        _frozen_at[0] = module
        gc.collect()
        gc.freeze()


# ------------------------------------------------------------------ the two tiers (docs/testing.md)
# `make test` runs `-m "not slow"`: unit, contract and one end-to-end test per surface, with no Spark-built
# lake, so it runs on a fresh clone in minutes. `make test-all` (what CI runs) adds the `slow` tier. Besides
# the explicit `@pytest.mark.slow` marks, these rules put a test in the slow tier:
# - it reads the Acme lake (`lake_dir` below, or `cats` of tests/eval) or its cryptic variant (`cryptic_dir` of
#   tests/eval/test_cryptic.py), or a TPC-DS world (`tpcds_world`, `tpcds_cryptic` of tests/eval): a fresh clone
#   builds it with Spark;
# - it starts a SparkSession (the `spark` fixture of tests/spark_bridge);
# - it is the HTTP variant of the `catalog` behaviour fixture outside the contract suite
#   (tests/catalog_core/test_behaviour.py runs both backends in the default tier; elsewhere the variant
#   repeats an embedded test through the remote client, at about 3x its time).
# A test marked `e2e` (the one end-to-end test of its surface) stays in the default tier whatever the rules say.
CONTRACT_FILES = ("tests/catalog_core/test_behaviour.py",)


def _slow_by_rule(item: pytest.Item) -> str | None:
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs if info is not None else {}
    lake = defs.get("lake_dir")
    if lake and lake[-1].func.__module__ == __name__:  # tests/mcp_server overrides it with a small lake
        return "reads the Acme lake"
    if "cryptic_dir" in defs:  # tests/eval/test_cryptic.py: without SEMCAT_EVAL_LAKE_CRYPTIC it builds that lake
        return "reads the cryptic Acme lake"
    if "tpcds_world" in defs or "tpcds_cryptic" in defs:  # tests/eval/conftest.py: without SEMCAT_EVAL_TPCDS(_CRYPTIC)
        return "reads a TPC-DS world"                     # it builds the world (tpcgen-cli and Spark)
    if "spark" in defs:
        return "starts Spark"
    callspec = getattr(item, "callspec", None)
    if callspec is not None and callspec.params.get("catalog") == "http" \
            and not item.nodeid.startswith(CONTRACT_FILES):
        return "the HTTP variant outside the contract suite"
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("e2e") is None and item.get_closest_marker("slow") is None \
                and _slow_by_rule(item) is not None:
            item.add_marker(pytest.mark.slow)


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
