import pytest

import catalog_core as cc
from catalog_core.sql import worker
from tests.helpers import build_lake


@pytest.fixture
def cat(data_dir):
    c = cc.Catalog.open(data_dir)
    yield c
    c.close()


@pytest.fixture
def wh(cat):
    """The small `wh` lake of tests/helpers.py in `cat`."""
    return build_lake(cat)


@pytest.fixture
def pool1():
    """One idle SQL worker, so consecutive statements of one thread go to the same worker when it is reused."""
    before = worker.pool_size()
    worker.set_pool_size(1)
    yield
    worker.set_pool_size(before)
