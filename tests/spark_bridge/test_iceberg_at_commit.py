"""Iceberg metadata a Spark bridge driver materializes at commit time (catalog_core.iceberg.oncommit)
is what a walk of the history materializes, in the lake where it was written and in a copy of it
(a relocatable lake: its catalogs store the paths inside it relative)."""

from __future__ import annotations

import os
import shutil

from pyiceberg.table import StaticTable

import catalog_core as cc
from catalog_core.iceberg import materialize as mat
from catalog_core.iceberg import oncommit

NAME = "acme.core.orders"


def _orders(spark, day: str, n: int, start: int = 0):
    return spark.sql(f"select id, date'{day}' as d, cast(id * 1.5 as double) as amount from range({start}, {start + n})")


def _forget_process_states():
    mat._COMMIT_MATERIALIZERS.clear()
    mat._SHARED.clear()


def _load(cat, walk: bool, monkeypatch) -> tuple[str, set[str], int]:
    """The metadata text a load serves, the data files its current snapshot plans and the commits it
    processed: from what commit time left (`walk` False), or walked from nothing (the hook off, the
    root emptied), as the lazy materializer always did."""
    root = os.path.join(cat.warehouse, "_iceberg")
    _forget_process_states()
    if walk:
        shutil.rmtree(root)
        monkeypatch.setattr(oncommit, "ENABLED", False)
    seen: list[int] = []
    real = mat.Materializer._commit
    monkeypatch.setattr(mat.Materializer, "_commit", lambda self, st, *a: (seen.append(1), real(self, st, *a))[1])
    try:
        view = mat.Materializer(cat, root).load(NAME)
    finally:
        monkeypatch.undo()
    planned = {t.file.file_path for t in StaticTable.from_metadata(view.metadata_location).scan().plan_files()}
    return open(view.metadata_location).read(), planned, len(seen)


def test_bridge_writes_materialized_at_commit_time_are_the_walks_here_and_in_a_copy(spark, tmp_path, monkeypatch):
    """A Spark bridge driver (embedded catalog in an Acme-style lake root, files in the lake's
    warehouse) appends two days and overwrites one (its files removed). Where it was written and in
    a copy of the lake, a load serves the metadata text a walk of the history there serves, and the
    current snapshot plans the files the catalog holds there. On the old code the copy's load
    replayed the driver's journal: its manifests named the original lake's files, and pyiceberg's
    copy-on-write delete was refused ("removes <file>, which the catalog does not hold")."""
    from spark_bridge import Bridge

    lake_dir = tmp_path / "lake"
    cc.mark_lake_root(str(lake_dir))
    bridge = Bridge(spark, str(lake_dir / "enriched"), warehouse=str(lake_dir / "warehouse"), footers_on="driver")
    try:
        for day, n in (("2001-06-01", 40), ("2001-06-02", 30)):
            bridge.write(_orders(spark, day, n).repartition(2), NAME, partition_by=["d"], message=day)
        bridge.write(_orders(spark, "2001-06-02", 5, start=500), NAME, mode="overwrite", message="restate day 2")
    finally:
        bridge.close()
    assert os.listdir(lake_dir / "enriched" / "warehouse" / "_iceberg" / "_journal")   # the driver's hook wrote
    copy = tmp_path / "copy"
    shutil.copytree(lake_dir, copy, symlinks=True)
    for where in (lake_dir, copy):
        cat = cc.Catalog.open(str(where / "enriched"))
        try:
            held = {f.value["path"] for f in cat.plan_files(NAME)}
            assert held and all(p.startswith(str(where) + "/") for p in held), where
            text, planned, processed = _load(cat, False, monkeypatch)
            assert planned == held, where
            if where == lake_dir:
                assert processed == 0   # everything was materialized by the driver
            walked_text, walked_planned, walked = _load(cat, True, monkeypatch)
            assert walked > 0 and walked_planned == held
            assert text == walked_text, where
        finally:
            cat.close()
