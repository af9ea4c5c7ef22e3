"""The Acme lake, built once per test session at --scale small through the real Spark bridge and
shared by every test of tests/eval (the build, the questions' gold SQL, the runner).

SEMCAT_EVAL_LAKE=DIR reuses a lake already built with `semcat eval build --data DIR --scale small`."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import catalog_core as cc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="session")
def lake_dir(tmp_path_factory):
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


@pytest.fixture(scope="session")
def cats(lake_dir):
    from eval.lake import data_dir

    out = {h: cc.Catalog.open(data_dir(lake_dir, h)) for h in ("enriched", "stale")}
    yield out
    for c in out.values():
        c.close()
