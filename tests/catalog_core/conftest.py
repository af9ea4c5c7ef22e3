import pytest

import catalog_core as cc


@pytest.fixture
def cat(data_dir):
    c = cc.Catalog.open(data_dir)
    yield c
    c.close()
