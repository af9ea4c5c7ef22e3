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
    """One idle SQL worker, so consecutive statements of one thread go to the same worker when it is reused.
    The pool starts empty: a worker left by an earlier test (other limits, a snapshot cache since
    closed) may retire after this test's first statement (`worker.RETIRE_GROWTH`), and the next
    one would then find no cached database (CI, stop 41)."""
    before = worker.pool_size()
    worker.stop_all()
    worker.set_pool_size(1)
    yield
    worker.set_pool_size(before)
