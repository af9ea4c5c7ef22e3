"""The Acme lake's catalogs for tests/eval (the build, the questions' gold SQL, the runner). The lake
itself is the session fixture `lake_dir` of tests/conftest.py (shared with tests/test_demo.py):
built once per test session at --scale small, or SEMCAT_EVAL_LAKE=DIR to reuse a built one."""

from __future__ import annotations

import pytest

import catalog_core as cc


@pytest.fixture(scope="session")
def cats(lake_dir):
    from eval.lake import data_dir

    out = {h: cc.Catalog.open(data_dir(lake_dir, h)) for h in ("enriched", "stale")}
    yield out
    for c in out.values():
        c.close()


# ------------------------------------------------------------------ the TPC-DS world, both variants
def _tpcds_world(tmp_path_factory, env_var: str, variant: str) -> str:
    """A TPC-DS world (eval/tpcds/world.py) of `variant`: a copy of the one `env_var` names (CI builds both in
    .ci/run's background job), else built here (tpcgen-cli and Spark: about 4-8 minutes on 2 busy cores)."""
    import os
    import shutil
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    pre = os.environ.get(env_var)
    out = str(tmp_path_factory.mktemp(f"tpcds-{variant}") / "world")
    if pre:
        shutil.copytree(pre, out, symlinks=True)
        return out
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-m", "mcp_server.cli", "eval", "build", "--world", "tpcds", "--variant",
                           variant, "--data", out], env=env, capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.fixture(scope="session")
def tpcds_world(tmp_path_factory):
    """The plain TPC-DS world (SEMCAT_EVAL_TPCDS=DIR reuses one)."""
    return _tpcds_world(tmp_path_factory, "SEMCAT_EVAL_TPCDS", "plain")


@pytest.fixture(scope="session")
def tpcds_cryptic(tmp_path_factory):
    """The cryptic TPC-DS world (SEMCAT_EVAL_TPCDS_CRYPTIC=DIR reuses one)."""
    return _tpcds_world(tmp_path_factory, "SEMCAT_EVAL_TPCDS_CRYPTIC", "cryptic")


def _open_histories(world: str) -> dict:
    from eval.harness.conditions import history_dir

    return {h: cc.Catalog.open(history_dir(world, h)) for h in ("enriched", "stale", "reviewed")}


@pytest.fixture(scope="session")
def tpcds_cats(tpcds_world):
    out = _open_histories(tpcds_world)
    yield out
    for c in out.values():
        c.close()


@pytest.fixture(scope="session")
def tpcds_ccats(tpcds_cryptic):
    out = _open_histories(tpcds_cryptic)
    yield out
    for c in out.values():
        c.close()
