import pytest

import catalog_core as cc


@pytest.fixture
def cat(data_dir):
    c = cc.Catalog.open(data_dir)
    yield c
    c.close()


def lake(cat, files_per_part=2):
    """A small lake: /wh/sales/orders partitioned by d, with file leaves."""
    with cat.transaction(author="test", message="lake") as t:
        t.add("/wh", {"obj_type": "catalog", "properties": {}})
        t.add("/wh/sales", {"obj_type": "namespace", "properties": {}})
        t.add("/wh/sales/orders", {"obj_type": "table", "partition_by": ["d"], "stats": {"row_count": 0}})
        for day in ("2001-06-01", "2001-06-02", "2001-06-03"):
            t.add(f"/wh/sales/orders/d={day}", {"obj_type": "partition", "d": day, "stats": {"row_count": 0}})
            for i in range(files_per_part):
                t.add(f"/wh/sales/orders/d={day}/f{i}", {"obj_type": "file", "path": f"{day}/f{i}.parquet",
                                                          "row_count": 10 * (i + 1),
                                                          "columns": {"price": {"min": i, "max": i + 5}}},
                      leaf=True)
    return t.vid
