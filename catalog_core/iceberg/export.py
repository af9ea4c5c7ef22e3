"""Catalog values -> Iceberg: types, schemas, partition specs, partition values and file statistics.

The inverse of `convert` for what semcat stores: a table's `schema` becomes an Iceberg schema whose
field ids are the column ids, its `partition_by` a partition spec (bare names are identity fields
with ids 1000, 1001, ...), and a file leaf a `DataFile` whose bounds are serialized with Iceberg's
single-value binary encoding (`pyiceberg.conversions.to_bytes`). Invariants:

- a bound that cannot be represented exactly is left out, never approximated the wrong way:
  decimal lower bounds round down and upper bounds up; float (32-bit) bounds are left out; text
  that does not parse as the column's type is left out. A missing bound only costs pruning;
- a nested column keeps the field ids stored with it (`iceberg_type`: imports and REST writers,
  whose data files carry them); one without (the Spark bridge, `semcat import parquet`: files
  without field ids, read through the name mapping) gets `1_000_000 + 1000 * column id + k`,
  stable for a column;
- partition values come from the partition ids on the file's path (`col=value`), parsed by the
  partition field's result type (identity and truncate: the source column's; year / month / day /
  hour: Iceberg's human text, e.g. `2024-03`; bucket: an int).
"""

from __future__ import annotations

import datetime as _dt
import decimal
import re
import uuid
from typing import Any, NamedTuple

from pyiceberg import types as it
from pyiceberg.conversions import to_bytes
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema as IcebergSchema
from pyiceberg.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    YearTransform,
    parse_transform,
)
from pyiceberg.typedef import Record

from catalog_core import lake
from catalog_core.errors import InvalidValueError
from catalog_core.iceberg.convert import catalog_type

__all__ = ["iceberg_type", "iceberg_schema", "partition_spec", "data_file", "internal_value", "name_mapping",
           "PARTITION_FIELD_BASE", "file_stats", "field_types", "FileStats"]

PARTITION_FIELD_BASE = 1000
_NESTED_BASE = 1_000_000
_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_TZ = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_EPOCH_DATE = _dt.date(1970, 1, 1)

_PRIMITIVE: dict[str, it.PrimitiveType] = {
    "boolean": it.BooleanType(), "bool": it.BooleanType(),
    "int": it.IntegerType(), "integer": it.IntegerType(), "tinyint": it.IntegerType(), "byte": it.IntegerType(),
    "smallint": it.IntegerType(), "short": it.IntegerType(), "int32": it.IntegerType(),
    "bigint": it.LongType(), "long": it.LongType(), "int64": it.LongType(),
    "float": it.FloatType(), "real": it.FloatType(), "double": it.DoubleType(), "float64": it.DoubleType(),
    "date": it.DateType(), "time": it.TimeType(),
    "string": it.StringType(), "varchar": it.StringType(), "text": it.StringType(),
    "timestamp": it.TimestamptzType(), "timestamptz": it.TimestamptzType(), "timestamp_ltz": it.TimestamptzType(),
    "timestamp_ntz": it.TimestampType(),
    "binary": it.BinaryType(), "bytes": it.BinaryType(), "uuid": it.UUIDType(),
}
_DECIMAL = re.compile(r"(?:decimal|numeric)\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)\Z")


def _split_top(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


class _Ids:
    def __init__(self, base: int) -> None:
        self.next = base

    def __call__(self) -> int:
        self.next += 1
        return self.next


def iceberg_type(text: str, column: str = "?", ids: _Ids | None = None) -> it.IcebergType:
    """The Iceberg type of a catalog type name (`convert.catalog_type`'s spellings, Spark's and
    DuckDB's simple ones); InvalidValueError naming the column for one it cannot express."""
    t = str(text).strip()
    low = t.lower()
    if low in _PRIMITIVE:
        return _PRIMITIVE[low]
    m = _DECIMAL.match(low)
    if m:
        return it.DecimalType(int(m.group(1)), int(m.group(2)))
    if low.startswith("fixed[") and low.endswith("]"):
        return it.FixedType(int(low[6:-1]))
    ids = ids or _Ids(_NESTED_BASE)
    if low.startswith("array<") and low.endswith(">"):
        return it.ListType(ids(), iceberg_type(t[6:-1], column, ids), element_required=False)
    if low.startswith("map<") and low.endswith(">"):
        parts = _split_top(t[4:-1])
        if len(parts) == 2:
            kid, vid = ids(), ids()
            return it.MapType(kid, iceberg_type(parts[0], column, ids), vid, iceberg_type(parts[1], column, ids),
                              value_required=False)
    if low.startswith("struct<") and low.endswith(">"):
        fields = []
        for part in _split_top(t[7:-1]):
            name, sep, sub = part.partition(":")
            if not sep:
                break
            fields.append(it.NestedField(ids(), name.strip(), iceberg_type(sub, column, ids), required=False))
        else:
            return it.StructType(*fields)
    raise InvalidValueError(f"column {column!r} has type {text!r}, which semcat cannot express as an Iceberg type; "
                            "Iceberg clients cannot load this table until the column is retyped or dropped",
                            column=column, type=text)


def _same_type(a: str, b: str) -> bool:
    return a.replace(" ", "").lower() == b.replace(" ", "").lower()


def _stored_type(stored: Any, text: str | None, name: str) -> it.IcebergType | None:
    """A nested column's Iceberg type as an import or a REST commit stored it (`iceberg_type`, with
    the field ids its data files carry); None when there is none, or when the column's type has
    changed since (another writer retyped it: its ids are derived again)."""
    if not isinstance(stored, dict):
        return None
    try:
        t = it.NestedField.model_validate({"id": 0, "name": name, "type": stored, "required": False}).field_type
    except ValueError:
        return None
    try:
        same = text is None or _same_type(catalog_type(t, column=name), text)
    except InvalidValueError:
        return None
    return t if same else None


def iceberg_schema(schema: dict[str, Any] | None) -> IcebergSchema:
    """A table's `schema` value as an Iceberg schema (column ids are field ids; a column without
    an id gets the next id after the largest)."""
    parsed = lake.Schema.from_raw(schema or {})
    top = max([c.id for c in parsed.columns if c.id is not None] or [0])
    fields = []
    for c in parsed.columns:
        if c.id is None:
            top += 1
        cid = c.id if c.id is not None else top
        ftype = _stored_type(c.extra.get("iceberg_type"), c.type, c.name)
        if ftype is None:
            ftype = iceberg_type(c.type or "string", c.name, _Ids(_NESTED_BASE + 1000 * cid))
        raw_doc = c.extra.get("doc")
        doc = raw_doc if isinstance(raw_doc, str) else None
        fields.append(it.NestedField(cid, c.name, ftype, required=not c.is_nullable, doc=doc))
    sid = (schema or {}).get("schema_id") if isinstance(schema, dict) else None
    return IcebergSchema(*fields, schema_id=int(sid) if isinstance(sid, int) else 0)


def partition_spec(partition_by: list[Any] | None, schema: IcebergSchema, spec_id: int = 0) -> PartitionSpec:
    """A table's `partition_by` as an Iceberg spec: entries written by the Iceberg importer or the
    REST commits keep their transform and ids; bare names (the Spark bridge) are identity fields."""
    fields = []
    for i, raw in enumerate(partition_by or []):
        spec = raw if isinstance(raw, dict) else {"name": raw}
        name = str(spec.get("name"))
        source_id = spec.get("source_id")
        if not isinstance(source_id, int):
            try:
                source_id = schema.find_field(name).field_id
            except ValueError:
                raise InvalidValueError(f"partition column {name!r} is not a column of the table's schema; "
                                        "Iceberg clients cannot load the table", column=name) from None
        field_id = spec.get("field_id")
        transform: Transform[Any, Any] = parse_transform(str(spec.get("transform") or "identity"))
        fields.append(PartitionField(source_id=source_id,
                                     field_id=field_id if isinstance(field_id, int) else PARTITION_FIELD_BASE + i,
                                     transform=transform, name=name))
    return PartitionSpec(*fields, spec_id=spec_id)


def name_mapping(schema: IcebergSchema, previous: dict[int, list[str]] | None = None) -> list[dict[str, Any]]:
    """`schema.name-mapping.default`: files written without field ids (Spark's plain Parquet) are
    read by column name; a top-level column also by the names it had before (`previous`, by field id:
    a column renamed since its files were written), each unless another column holds that name now."""
    taken = {f.name for f in schema.fields}

    def fields(fs: tuple[it.NestedField, ...], top: bool = False) -> list[dict[str, Any]]:
        out = []
        for f in fs:
            olds = [n for n in (previous or {}).get(f.field_id, []) if top and n not in taken]
            entry: dict[str, Any] = {"field-id": f.field_id, "names": [f.name, *dict.fromkeys(olds)]}
            t = f.field_type
            if isinstance(t, it.StructType):
                entry["fields"] = fields(t.fields)
            elif isinstance(t, it.ListType):
                entry["fields"] = [{"field-id": t.element_id, "names": ["element"]}]
            elif isinstance(t, it.MapType):
                entry["fields"] = [{"field-id": t.key_id, "names": ["key"]}, {"field-id": t.value_id, "names": ["value"]}]
            out.append(entry)
        return out
    return fields(schema.fields, top=True)


# ---------------------------------------------------------------- values

def internal_value(t: it.IcebergType, v: Any, rounding: str | None = None) -> Any:  # noqa: C901 - one branch per Iceberg type
    """A catalog JSON value (stats, partition text) as Iceberg's internal value of type `t`
    (days, micros, Decimal, ...); None when it cannot be represented exactly (see the module)."""
    if v is None:
        return None
    try:
        if isinstance(t, it.BooleanType):
            if isinstance(v, str):
                return {"true": True, "false": False}.get(v.lower())
            return bool(v) if isinstance(v, bool) else None
        if isinstance(t, (it.IntegerType, it.LongType)):
            if isinstance(v, bool):
                return None
            if isinstance(v, float):
                return int(v) if v.is_integer() else None
            return int(v)
        if isinstance(t, it.DoubleType):
            return float(v) if not isinstance(v, bool) else None
        if isinstance(t, it.FloatType):
            return None if rounding else (float(v) if not isinstance(v, bool) else None)
        if isinstance(t, it.DecimalType):
            d = decimal.Decimal(str(v))
            mode = {"floor": decimal.ROUND_FLOOR, "ceiling": decimal.ROUND_CEILING}.get(rounding or "", decimal.ROUND_HALF_EVEN)
            q = d.quantize(decimal.Decimal(1).scaleb(-t.scale), rounding=mode)
            if rounding is None and q != d:
                return None
            return q
        if isinstance(t, it.StringType):
            return v if isinstance(v, str) else None
        if isinstance(t, it.DateType):
            return (_dt.date.fromisoformat(str(v)[:10]) - _EPOCH_DATE).days
        if isinstance(t, it.TimeType):
            tm = _dt.time.fromisoformat(str(v))
            return ((tm.hour * 60 + tm.minute) * 60 + tm.second) * 1_000_000 + tm.microsecond
        if isinstance(t, it.TimestampType):
            dt = _dt.datetime.fromisoformat(str(v).replace(" ", "T"))
            if dt.tzinfo is not None:
                dt = dt.astimezone(_dt.timezone.utc).replace(tzinfo=None)
            return (dt - _EPOCH) // _dt.timedelta(microseconds=1)
        if isinstance(t, it.TimestamptzType):
            dt = _dt.datetime.fromisoformat(str(v).replace(" ", "T"))
            if dt.tzinfo is None:
                dt = dt.replace(tzinfo=_dt.timezone.utc)
            return (dt - _EPOCH_TZ) // _dt.timedelta(microseconds=1)
        if isinstance(t, it.UUIDType):
            return uuid.UUID(str(v))
    except (ValueError, TypeError, ArithmeticError):
        return None
    return None


def _bound(t: it.IcebergType, v: Any, rounding: str) -> bytes | None:
    if not isinstance(t, it.PrimitiveType):
        return None
    iv = internal_value(t, v, rounding)
    if iv is None:
        return None
    try:
        return to_bytes(t, iv)
    except Exception:  # noqa: BLE001 - a value the encoder refuses is an unknown bound, never a wrong one
        return None


def _human(transform: Transform[Any, Any], text: str) -> int | None:
    """Iceberg's human text of a temporal partition value back to its ordinal."""
    try:
        if isinstance(transform, YearTransform):
            return int(text) - 1970
        if isinstance(transform, MonthTransform):
            y, m = text.split("-")[:2]
            return (int(y) - 1970) * 12 + int(m) - 1
        if isinstance(transform, DayTransform):
            return (_dt.date.fromisoformat(text) - _EPOCH_DATE).days
        if isinstance(transform, HourTransform):
            day, _, hour = text.rpartition("-")
            return (_dt.date.fromisoformat(day) - _EPOCH_DATE).days * 24 + int(hour)
    except ValueError:
        return None
    return None


def partition_record(spec: PartitionSpec, schema: IcebergSchema, chain: list[str | None]) -> Record:
    """The partition tuple of a file whose path holds the partition values `chain` (text, None
    for `__null__`), one per spec field."""
    values: list[Any] = []
    for pf, text in zip(spec.fields, chain, strict=False):
        if text is None:
            values.append(None)
            continue
        tr = pf.transform
        if isinstance(tr, (IdentityTransform, TruncateTransform)):
            src = schema.find_field(pf.source_id).field_type
            values.append(internal_value(src, text))
        elif isinstance(tr, BucketTransform):
            values.append(int(text))
        else:
            values.append(_human(tr, text))
    return Record(*values)


class FileStats(NamedTuple):
    """What a manifest entry says of a file leaf (`file_stats`)."""
    path: str
    fmt: str
    partition: tuple[Any, ...]
    rows: int
    size: int
    counts: dict[int, int]
    nulls: dict[int, int]
    lower: dict[int, bytes]
    upper: dict[int, bytes]


def file_stats(value: dict[str, Any], schema: IcebergSchema, spec: PartitionSpec, chain: list[str | None],
               names: dict[str, int], types: dict[int, it.IcebergType] | None = None) -> FileStats:
    """A file leaf's record count, size, partition tuple and per column (looked up by the name the
    file's stats use: `field_ids`, else `names`) value count, null count and bounds. `types`: the
    schema's field types by id (`field_types(schema)`), when the caller has them."""
    fids = value.get("field_ids")
    ids = {**names, **fids} if fids else names
    rows = int(value.get("row_count") or 0)
    lower: dict[int, bytes] = {}
    upper: dict[int, bytes] = {}
    nulls: dict[int, int] = {}
    counts: dict[int, int] = {}
    if types is None:
        types = field_types(schema)
    for col, s in (value.get("columns") or {}).items():
        fid = ids.get(col)
        if fid is None or not isinstance(s, dict):
            continue
        t = types.get(fid)
        if not isinstance(t, it.PrimitiveType):
            continue
        counts[fid] = rows
        nc = s.get("null_count")
        if isinstance(nc, int):
            nulls[fid] = int(nc)
        lo, hi = _bound(t, s.get("min"), "floor"), _bound(t, s.get("max"), "ceiling")
        if lo is not None and hi is not None:
            lower[fid], upper[fid] = lo, hi
    fmt = str(value.get("format") or "parquet").upper()
    return FileStats(str(value.get("path")), fmt if fmt in FileFormat.__members__ else "PARQUET",
                     _values(partition_record(spec, schema, chain)), rows, int(value.get("size_bytes") or 0),
                     counts, nulls, lower, upper)


def _values(rec: Record) -> tuple[Any, ...]:
    return tuple(rec[i] for i in range(len(rec)))


def field_types(schema: IcebergSchema) -> dict[int, it.IcebergType]:
    """Every field's type by id (nested fields included)."""
    return {fid: f.field_type for fid, f in schema._lazy_id_to_field.items()}


def data_file(value: dict[str, Any], schema: IcebergSchema, spec: PartitionSpec, chain: list[str | None],
              names: dict[str, int]) -> DataFile:
    """A file leaf as an Iceberg data file (`file_stats`)."""
    fs = file_stats(value, schema, spec, chain, names)
    return DataFile.from_args(
        content=DataFileContent.DATA, file_path=fs.path, file_format=FileFormat[fs.fmt],
        partition=Record(*fs.partition), record_count=fs.rows,
        file_size_in_bytes=fs.size, column_sizes={}, value_counts=fs.counts,
        null_value_counts=fs.nulls, nan_value_counts={}, lower_bounds=fs.lower, upper_bounds=fs.upper,
        key_metadata=None, split_offsets=None, equality_ids=None, sort_order_id=None)
