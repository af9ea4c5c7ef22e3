"""Annotations written while a Spark job appends to the same table: both land (annotation commits
are blind writes, the bridge's commit records no read they touch). One real local SparkSession."""

from __future__ import annotations

import threading

import pytest

import catalog_core as cc
import semantic as sm
from semantic.annotations import read_annotations
from semantic.history import clear_cache

T = "acme.core.orders"


@pytest.fixture(scope="module")
def spark():
    from spark_bridge import local_session

    session = local_session(app_name="semcat-semantic-tests", cores=2)
    yield session
    session.stop()


@pytest.mark.slow
def test_concurrent_annotate_and_spark_append_both_land(spark, data_dir):
    from spark_bridge import Bridge

    cat = cc.Catalog.open(data_dir)
    bridge = Bridge(spark, cat)
    try:
        df = spark.createDataFrame([(i, "placed", i * 100) for i in range(50)], "order_id bigint, status string, gross_cents bigint")
        bridge.write(df, T, author="etl", message="first load")
        errors: list[BaseException] = []
        vids: list[int] = []

        def annotate_loop():
            try:
                for i in range(15):
                    vids.append(sm.annotate(cat, T, {"description": f"orders v{i}"}, author="alice"))
                    vids.append(sm.annotate(cat, T, {"unit": "cents"}, column="gross_cents", author="bob"))
            except BaseException as e:  # pragma: no cover - reported below
                errors.append(e)

        th = threading.Thread(target=annotate_loop)
        th.start()
        for k in range(3):
            more = spark.createDataFrame([(1000 * (k + 1) + i, "shipped", 7) for i in range(20)],
                                         "order_id bigint, status string, gross_cents bigint")
            bridge.write(more, T, author="etl", message=f"append {k}")
        th.join()
        assert errors == []
        assert len(vids) == 30
        assert cat.get("/acme/core/orders").value["stats"]["row_count"] == 110
        anns = {a.key: a for a in read_annotations(cat, T)}
        assert anns["table.description"].value == "orders v14"
        assert set(anns) == {"table.description", "column.3.unit"}
        assert cc.run_sql(cat, "SELECT count(*) FROM acme.core.orders").rows == [[110]]
        card = sm.describe(cat, T)
        assert card.stats.row_count == 110 and card.columns[2].annotations["unit"].value == "cents"
    finally:
        bridge.close()
        clear_cache()
        cat.close()
