"""The bridge's pure parts, without Spark: schema evolution, value encoding, footers, stats deltas."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from catalog_core.footers import footer_stats, json_value
from catalog_core.merge import apply_delta
from spark_bridge import SchemaEvolutionError
from spark_bridge import stats as st
from spark_bridge.files import needs_escape, parse_partition_dirs
from spark_bridge.schema import can_widen, evolve, partition_value


def cols(*spec):
    return [{"name": n, "type": t, "nullable": True} for n, t in spec]


def test_evolve_assigns_ids_widens_casts_and_refuses():
    first = evolve(None, cols(("id", "bigint"), ("qty", "int")), "t")
    assert first.schema == {"schema_id": 0, "columns": [
        {"id": 1, "name": "id", "type": "bigint", "nullable": True},
        {"id": 2, "name": "qty", "type": "int", "nullable": True}]}
    same = evolve(first.schema, cols(("ID", "int"), ("qty", "int")), "t")
    assert not same.changed and same.casts == {"ID": "bigint"} and same.renames == {"ID": "id"}
    wider = evolve(first.schema, cols(("qty", "bigint"), ("note", "string")), "t")
    assert wider.changed and wider.schema["schema_id"] == 1 and wider.added == ["note"]
    assert [(c["id"], c["name"], c["type"]) for c in wider.schema["columns"]] == [
        (1, "id", "bigint"), (2, "qty", "bigint"), (3, "note", "string")]
    with pytest.raises(SchemaEvolutionError, match="only widening"):
        evolve(first.schema, cols(("qty", "string")), "t")
    with pytest.raises(SchemaEvolutionError, match="duplicate column names"):
        evolve(None, cols(("a", "int"), ("A", "int")), "t")
    required = {"schema_id": 4, "columns": [{"id": 9, "name": "k", "type": "int", "nullable": False}]}
    with pytest.raises(SchemaEvolutionError, match="'k' .* is required"):
        evolve(required, cols(("other", "int")), "t")


def test_type_promotion_rules():
    assert can_widen("int", "bigint") and can_widen("long", "bigint") and can_widen("float", "double")
    assert can_widen("decimal(10,2)", "decimal(12, 2)")
    assert not can_widen("bigint", "int") and not can_widen("decimal(10,2)", "decimal(12,3)")
    assert not can_widen("int", "string") and not can_widen("date", "timestamp")


def test_partition_values_are_encoded_like_statistics():
    assert partition_value("42", "int") == 42 and partition_value(None, "int") is None
    assert partition_value("true", "boolean") is True
    assert partition_value("2001-06-01", "date") == "2001-06-01"
    assert partition_value("2001-06-01 10:00:00", "timestamp", "UTC") == "2001-06-01T10:00:00.000000+00:00"
    assert partition_value("2001-06-01 12:00:00", "timestamp", "Europe/Paris") == "2001-06-01T10:00:00.000000+00:00"
    assert partition_value("2001-06-01 10:00:00", "timestamp_ntz") == "2001-06-01T10:00:00.000000"
    assert parse_partition_dirs("d=2001-06-01/r=a%2Fb", ["d", "r"]) == ["2001-06-01", "a/b"]
    assert parse_partition_dirs("d=__HIVE_DEFAULT_PARTITION__", ["d"]) == [None]
    assert needs_escape("a:b") and not needs_escape("2001-06-01")


def test_json_values_order_like_the_originals():
    assert json_value(decimal.Decimal("1.25")) == 1.25 and json_value(float("nan")) is None
    aware = dt.datetime(2001, 6, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert json_value(aware) == "2001-06-01T10:00:00.000000+00:00"
    assert json_value(dt.datetime(2001, 6, 1)) == "2001-06-01T00:00:00.000000"
    assert json_value(dt.date(2001, 6, 1)) == "2001-06-01" and json_value(b"\x00") is None


def test_footer_stats_across_row_groups(tmp_path):
    path = str(tmp_path / "f.parquet")
    table = pa.table({"a": [5, 1, None, None], "s": ["x", "b", None, None], "n": pa.array([None] * 4, pa.int64()),
                      "f": [1.0, float("nan"), 2.0, 3.0], "nested": [[1], [2], [3], [4]]})
    pq.write_table(table, path, row_group_size=2)
    got = footer_stats(pq.ParquetFile(path).metadata)
    assert got["row_count"] == 4 and "nested" not in got["columns"]
    assert got["columns"]["a"] == {"min": 1, "max": 5, "null_count": 2}
    assert got["columns"]["s"] == {"min": "b", "max": "x", "null_count": 2}
    assert got["columns"]["n"] == {"min": None, "max": None, "null_count": 4}
    assert got["columns"]["f"]["null_count"] == 0


def test_stats_deltas_through_the_engine_merge():
    f1 = st.of_file({"row_count": 3, "size_bytes": 10, "columns": {"x": {"min": 1, "max": 5, "null_count": 1}}},
                    {"d": "2001-06-01"})
    f2 = st.of_file({"row_count": 2, "size_bytes": 7, "columns": {"x": {"min": 0, "max": 2, "null_count": 0}}},
                    {"d": "2001-06-01"})
    hint = {"vid": 5, "time": 1.0}
    value = apply_delta(apply_delta({"stats": st.initial()}, st.append_delta(f1, hint)), st.append_delta(f2, hint))
    assert st.from_stats(value["stats"]) == st.combine([f1, f2])
    merged = st.of_file({"row_count": 5, "size_bytes": 12, "columns": {"x": {"min": 0, "max": 5, "null_count": 1}}},
                        {"d": "2001-06-01"})
    swapped = apply_delta(value, st.replace_delta(merged, st.combine([f1, f2]), None))
    assert st.from_stats(swapped["stats"]) == merged
    assert swapped["stats"]["last_data_commit"] == {"vid": 5, "time": 1.0}  # compaction is not new data
    reset = apply_delta(swapped, st.set_delta(f2, {"vid": 9, "time": 2.0}))
    assert st.from_stats(reset["stats"]) == f2 and reset["stats"]["last_data_commit"]["vid"] == 9
