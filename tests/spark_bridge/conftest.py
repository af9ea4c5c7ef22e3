"""A real local SparkSession shared by the whole test session and a fresh Bridge per test (the
oracles that check the catalog against the Parquet files are in tests/helpers.py)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    from spark_bridge import local_session

    session = local_session(app_name="semcat-tests", cores=2)
    yield session
    session.stop()


@pytest.fixture
def bridge(spark, data_dir):
    from spark_bridge import Bridge

    b = Bridge(spark, data_dir)
    yield b
    b.close()
