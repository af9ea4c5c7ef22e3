"""The Parquet footer reader in plain Python (catalog_core/sql/footer.py, issue 47: no pyarrow on the way to a
stdio session's first answer): the same column names as pyarrow, equal types exactly when the Parquet schemas
are equal, and None from `file_schema` for what is not a Parquet file."""

from __future__ import annotations

import datetime as dt
import decimal
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from catalog_core.sql.footer import FooterError, read_schema
from catalog_core.sql.tables import clear_file_schemas, file_columns, file_schema

# one column each; pairs of these that pyarrow reads as different types must differ here too
COLUMNS = {
    "i32": pa.array([1, None], pa.int32()),
    "i64": pa.array([1, None], pa.int64()),
    "i64_required": pa.array([1, 2], pa.int64()),
    "f64": pa.array([1.5, None], pa.float64()),
    "s": pa.array(["a", None], pa.string()),
    "b": pa.array([b"a", None], pa.binary()),
    "d": pa.array([dt.date(2025, 1, 1), None], pa.date32()),
    "ts_ms": pa.array([dt.datetime(2025, 1, 1), None], pa.timestamp("ms")),
    "ts_us": pa.array([dt.datetime(2025, 1, 1), None], pa.timestamp("us")),
    "ts_us_utc": pa.array([dt.datetime(2025, 1, 1), None], pa.timestamp("us", tz="UTC")),
    "dec_10_2": pa.array([decimal.Decimal("1.25"), None], pa.decimal128(10, 2)),
    "dec_12_2": pa.array([decimal.Decimal("1.25"), None], pa.decimal128(12, 2)),
    "dec_12_3": pa.array([decimal.Decimal("1.250"), None], pa.decimal128(12, 3)),
    "bool": pa.array([True, None], pa.bool_()),
    "list_i64": pa.array([[1, 2], None], pa.list_(pa.int64())),
    "list_s": pa.array([["a"], None], pa.list_(pa.string())),
    "struct": pa.array([{"x": 1, "y": "a"}, None], pa.struct([("x", pa.int64()), ("y", pa.string())])),
    "struct_other": pa.array([{"x": 1, "z": "a"}, None], pa.struct([("x", pa.int64()), ("z", pa.string())])),
    "map": pa.array([[("k", 1)], None], pa.map_(pa.string(), pa.int64())),
}


def _write(path: str, cols: dict[str, pa.Array], **kw: object) -> str:
    fields = [pa.field(n, a.type, nullable=not n.endswith("_required")) for n, a in cols.items()]
    pq.write_table(pa.Table.from_arrays(list(cols.values()), schema=pa.schema(fields)), path, **kw)
    return path


def _arrow(path: str) -> tuple[tuple[str, str], ...]:
    return tuple((f.name, str(f.type)) for f in pq.read_schema(path))


def test_names_as_pyarrow_reads_them_and_types_as_fine_as_arrow_types(tmp_path):
    paths = {n: _write(str(tmp_path / f"{n}.parquet"), {"c": a}) for n, a in COLUMNS.items()}
    whole = _write(str(tmp_path / "all.parquet"), COLUMNS)
    assert [n for n, _ in read_schema(whole)] == [n for n, _ in _arrow(whole)] == list(COLUMNS)
    mine = {n: read_schema(p) for n, p in paths.items()}
    theirs = {n: _arrow(p) for n, p in paths.items()}
    for a in COLUMNS:
        for b in COLUMNS:
            if theirs[a] != theirs[b]:
                assert mine[a] != mine[b], (a, b, mine[a])
    # the same schema written twice, with other values, row groups and compression: the same tuple
    again = _write(str(tmp_path / "again.parquet"), {n: a.take([1, 0]) for n, a in COLUMNS.items()},
                   compression="zstd", row_group_size=1)
    assert read_schema(again) == read_schema(whole)


def test_a_wide_file_and_many_row_groups(tmp_path):
    """More than 14 columns (a long list header) and a footer after many row groups, which are not read."""
    cols = {f"c{i}": pa.array(list(range(50)), pa.int64()) for i in range(40)}
    p = _write(str(tmp_path / "wide.parquet"), cols, row_group_size=2)
    assert pq.ParquetFile(p).metadata.num_row_groups == 25
    got = read_schema(p)
    assert [n for n, _ in got] == list(cols) and len({t for _, t in got}) == 1


@pytest.mark.parametrize("content", [b"", b"PAR1", b"not parquet at all, just text", b"PAR1" + b"\x00" * 20 + b"PAR1",
                                     b"PAR1" + b"\xff" * 20 + b"\x10\x00\x00\x00PAR1"])
def test_what_is_not_a_parquet_footer(tmp_path, content):
    p = str(tmp_path / "bad.parquet")
    with open(p, "wb") as f:
        f.write(content)
    with pytest.raises(FooterError):
        read_schema(p)
    clear_file_schemas()
    assert file_schema(p) is None and file_columns(p) is None


def test_a_truncated_file_and_a_missing_one(tmp_path):
    p = _write(str(tmp_path / "t.parquet"), {"a": COLUMNS["i64"], "s": COLUMNS["s"]})
    with open(p, "rb") as f:
        data = f.read()
    cut = str(tmp_path / "cut.parquet")
    with open(cut, "wb") as f:
        f.write(data[:-30] + data[-8:])  # the footer's last bytes gone, its length and magic kept
    clear_file_schemas()
    assert file_schema(cut) is None
    assert file_columns(p) == ("a", "s")
    assert file_schema(os.path.join(str(tmp_path), "missing.parquet")) is None
