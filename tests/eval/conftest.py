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
