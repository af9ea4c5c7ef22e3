"""The generator's routine controls stay routine (issue 45): a nullability-only change never makes a column
required while it holds nulls. On TPC-DS seed 3 the control made `store_returns_v2.sr_return_tax` (nulls in its
rows) required through Iceberg REST, and the next routine load died ("declared non-nullable but contains nulls");
through a catalog transaction the same flip would leave a "never null" schema over null rows, a false claim
counted as a control. A tiny lake of its own (no Spark)."""

from __future__ import annotations

import catalog_core as cc
from eval.fixtures.lakes import LakeBuilder
from eval.traps.generator import flippable
from eval.traps.lakeview import LakeView

T = "acme.core.returns"


def test_a_column_holding_nulls_is_never_offered_for_the_nullability_flip(tmp_path):
    cat = cc.Catalog.open(str(tmp_path / "data"))
    try:
        lk = LakeBuilder(cat, tmp_path / "files")
        lk.table(T, [("day", "date"), ("return_id", "bigint"), ("tax", "double"), ("amount", "double")],
                 partition_by=["day"], at=0,
                 rows={"day": ["2026-01-01"] * 3, "return_id": [1, 2, 3], "tax": [0.5, None, 1.5],
                       "amount": [10.0, 20.0, 30.0]})
        t = LakeView(cat).tables[T]
        assert t.cstat("tax") is not None and t.cstat("tax").null_count == 1   # what the rule reads
        cols = flippable(t)
        assert "tax" not in cols                                 # nulls: never made required
        assert "day" not in cols                                 # the partition column
        assert {"return_id", "amount"} <= set(cols)              # no null in their statistics
    finally:
        cat.close()
