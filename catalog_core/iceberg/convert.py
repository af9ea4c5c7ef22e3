"""Iceberg -> catalog values: types, schemas, partition specs, data files and their bounds.

Types take the names the rest of the catalog uses (the Spark bridge's spellings, which
`catalog_core.sql.types` maps to DuckDB):

    boolean int long->bigint float double decimal(p,s) date time string
    timestamp->timestamp_ntz (wall time)   timestamptz->timestamp (an instant, Spark's `timestamp`)
    binary, fixed[n]->binary   uuid   list<T>->array<T>   map<K,V>   struct<a:T,...>

Statistics come out JSON-friendly and ordered like the originals, as the Spark bridge writes them:
dates, times and timestamps as ISO-8601 text (timestamptz in UTC with `+00:00`), decimals as
floats, binary, fixed and non-finite floats as unknown (None). Iceberg truncates long string
bounds (16 characters by default) so that they stay valid bounds: a string `min` / `max` is a
bound, not necessarily a value present in the file.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import functools
import hashlib
import json
import math
import re
import struct
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pyiceberg import types as it
from pyiceberg.conversions import from_bytes
from pyiceberg.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    TruncateTransform,
    YearTransform,
)

from catalog_core.errors import InvalidValueError
from catalog_core.model import JSONScalar, JSONValue

if TYPE_CHECKING:
    from pyiceberg.manifest import DataFile
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema as IcebergSchema

__all__ = ["catalog_type", "catalog_schema", "partition_by", "PartitionLevel",
           "json_value", "file_value", "FileDecoder", "leaf_id"]

_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_DATE = _dt.date(1970, 1, 1)
_TEMPORAL = (YearTransform, MonthTransform, DayTransform, HourTransform)


def unsupported(what: str, table: str, **details: object) -> InvalidValueError:
    return InvalidValueError(f"Iceberg table {table!r}: {what}; nothing was imported. semcat imports "
                             "copy-on-write tables with primitive, list, map and struct columns, one "
                             "partition spec with identity, year, month, day, hour, bucket or truncate "
                             "transforms. Rewrite the table (e.g. compact away delete files) or import "
                             "another table", table=table, **details)


_PRIMITIVE: dict[type, str] = {
    it.BooleanType: "boolean", it.IntegerType: "int", it.LongType: "bigint", it.FloatType: "float",
    it.DoubleType: "double", it.DateType: "date", it.TimeType: "time", it.TimestampType: "timestamp_ntz",
    it.TimestamptzType: "timestamp", it.StringType: "string", it.UUIDType: "uuid", it.BinaryType: "binary",
    it.FixedType: "binary",
}


def catalog_type(t: it.IcebergType, table: str = "?", column: str = "?") -> str:
    """The catalog's type name for an Iceberg type (InvalidValueError for types semcat does not read)."""
    if isinstance(t, it.DecimalType):
        return f"decimal({t.precision},{t.scale})"
    for cls, name in _PRIMITIVE.items():
        if type(t) is cls:
            return name
    if isinstance(t, it.ListType):
        return f"array<{catalog_type(t.element_type, table, column)}>"
    if isinstance(t, it.MapType):
        return f"map<{catalog_type(t.key_type, table, column)},{catalog_type(t.value_type, table, column)}>"
    if isinstance(t, it.StructType):
        return "struct<" + ",".join(f"{f.name}:{catalog_type(f.field_type, table, column)}" for f in t.fields) + ">"
    raise unsupported(f"column {column!r} has type {t}, which semcat cannot read", table, column=column,
                       iceberg_type=str(t))


def catalog_schema(schema: IcebergSchema, table: str) -> dict[str, Any]:
    """{schema_id, columns: [{id, name, type, nullable}]}: Iceberg field ids are the column ids. A
    nested column (struct, list, map) also keeps its Iceberg type as JSON (`iceberg_type`, the
    specification's type object with every nested field id), so the table served back over Iceberg
    REST (`export.iceberg_schema`) carries the ids its data files were written with."""
    cols = []
    for f in schema.fields:
        col: dict[str, JSONValue] = {"id": int(f.field_id), "name": f.name, "type": catalog_type(f.field_type, table, f.name),
                               "nullable": not f.required}
        if f.doc:
            col["doc"] = f.doc
        if not f.field_type.is_primitive:
            col["iceberg_type"] = json.loads(f.model_dump_json(by_alias=True, exclude_none=True))["type"]
        cols.append(col)
    return {"schema_id": int(schema.schema_id), "columns": cols}


# ---------------------------------------------------------------- values

def json_value(t: it.IcebergType, v: Any) -> JSONScalar:
    """An Iceberg internal value (days, micros, Decimal, ...) of primitive type `t` as the catalog's
    JSON value (None: unknown)."""
    if v is None:
        return None
    if isinstance(t, (it.BinaryType, it.FixedType)):
        return None
    if isinstance(t, it.UUIDType):
        return str(uuid.UUID(bytes=bytes(v))) if isinstance(v, (bytes, bytearray)) else str(v)
    if isinstance(t, it.DateType):
        return (_EPOCH_DATE + _dt.timedelta(days=int(v))).isoformat() if isinstance(v, int) else v.isoformat()
    if isinstance(t, it.TimeType):
        if isinstance(v, int):
            return (_EPOCH + _dt.timedelta(microseconds=v)).time().isoformat()
        return str(v.isoformat())
    if isinstance(t, (it.TimestampType, it.TimestamptzType)):
        dt = _EPOCH + _dt.timedelta(microseconds=int(v)) if isinstance(v, int) else v.replace(tzinfo=None)
        if isinstance(t, it.TimestamptzType):
            return dt.replace(tzinfo=_dt.timezone.utc).isoformat(timespec="microseconds")
        return dt.isoformat(timespec="microseconds")
    if isinstance(v, decimal.Decimal):
        return float(v) if v.is_finite() else None
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, (bool, int, str)):
        return v
    return None


def _bound(t: it.IcebergType, raw: bytes | None) -> JSONScalar:
    if raw is None or not isinstance(t, it.PrimitiveType) or isinstance(t, (it.BinaryType, it.FixedType)):
        return None
    try:
        return json_value(t, from_bytes(t, raw))
    except Exception:  # a bound another writer encoded oddly: unknown, never wrong
        return None


# ---------------------------------------------------------------- partitioning

class PartitionLevel:
    """One partition field: a level `<name>=<value>` of the catalog tree."""

    def __init__(self, field: PartitionField, source: it.NestedField | None, table: str) -> None:
        tr = field.transform
        if not isinstance(tr, (IdentityTransform, BucketTransform, TruncateTransform, *_TEMPORAL)):
            raise unsupported(f"partition field {field.name!r} uses transform {tr}, which semcat does not "
                               "import", table, partition_field=field.name)
        if source is None:
            raise unsupported(f"partition field {field.name!r} has no source column in the schema", table,
                               partition_field=field.name)
        if field.name.startswith("_") or "/" in field.name or "=" in field.name:
            raise unsupported(f"partition field name {field.name!r} cannot name a catalog partition level "
                               "(a leading '_', '/' or '=')", table, partition_field=field.name)
        self.name, self.transform, self.source_type = field.name, tr, source.field_type
        self.spec = {"name": field.name, "transform": str(tr), "source_id": int(field.source_id), "field_id": int(field.field_id)}

    def value(self, raw: Any) -> JSONScalar:
        """The partition value: identity and truncate keep the source column's value (as in file
        statistics), bucket its number, and year / month / day / hour Iceberg's human text
        (`2024`, `2024-03`, `2024-03-01`, `2024-03-01-13`), which sorts like time."""
        if raw is None:
            return None
        if isinstance(self.transform, (IdentityTransform, TruncateTransform)):
            out = json_value(self.source_type, raw)
            if out is None:
                out = str(raw)
            return out
        if isinstance(self.transform, BucketTransform):
            return int(raw)
        return self.transform.to_human_string(self.source_type, raw)


def partition_by(spec: PartitionSpec, schema: IcebergSchema, table: str) -> list[PartitionLevel]:
    by_id = {f.field_id: f for f in schema.fields}
    return [PartitionLevel(f, by_id.get(f.source_id), table) for f in spec.fields]


# ---------------------------------------------------------------- data files

_UNPACK = {it.IntegerType: struct.Struct("<i").unpack, it.LongType: struct.Struct("<q").unpack,
           it.FloatType: struct.Struct("<f").unpack, it.DoubleType: struct.Struct("<d").unpack}


def _decoder(t: it.IcebergType) -> Callable[[bytes | None], JSONScalar] | None:
    """A bound decoder for one column type (None: no bounds kept), chosen once per schema."""
    if not isinstance(t, it.PrimitiveType) or isinstance(t, (it.BinaryType, it.FixedType)):
        return None
    unpack = _UNPACK.get(type(t))
    if unpack is not None and isinstance(t, (it.IntegerType, it.LongType)):
        def whole(raw: bytes | None) -> JSONScalar:
            if raw is None:
                return None
            if len(raw) == 4 and unpack is _UNPACK[it.LongType]:  # an int bound promoted to long
                return int(struct.unpack("<i", raw)[0])
            return int(unpack(raw)[0]) if len(raw) in (4, 8) else _bound(t, raw)
        return whole
    if unpack is not None:
        def real(raw: bytes | None) -> JSONScalar:
            if raw is None:
                return None
            try:
                v = unpack(raw)[0]
            except struct.error:  # a float bound promoted to double
                return _bound(t, raw)
            return v if math.isfinite(v) else None
        return real
    if isinstance(t, it.StringType):
        return lambda raw: None if raw is None else raw.decode("utf-8", "replace")
    if isinstance(t, it.DateType):
        return lambda raw: None if raw is None else (_day(struct.unpack("<i", raw)[0]) if len(raw) == 4 else None)
    if isinstance(t, (it.TimestampType, it.TimestamptzType)):
        def instant(raw: bytes | None) -> JSONScalar:
            if raw is None or len(raw) != 8:
                return None
            return json_value(t, struct.unpack("<q", raw)[0])
        return instant
    return lambda raw: _bound(t, raw)


@functools.lru_cache(maxsize=65536)
def _day(days: int) -> str:
    return (_EPOCH_DATE + _dt.timedelta(days=days)).isoformat()


class FileDecoder:
    """Turns Iceberg data files of one schema into file leaves."""

    def __init__(self, schema: IcebergSchema) -> None:
        self.fields = [(f.field_id, f.name, _decoder(f.field_type)) for f in schema.fields]
        self.field_ids = {f.name: int(f.field_id) for f in schema.fields}

    def value(self, df: DataFile) -> dict[str, Any]:
        """The leaf of an Iceberg data file: path, size, row count, per-column bounds and null
        counts keyed by the column's name in the schema (of the snapshot that added the file), and
        `field_ids` (name in the file -> column id) so readers follow renames."""
        lower, upper = df.lower_bounds or {}, df.upper_bounds or {}
        nulls = df.null_value_counts or {}
        columns: dict[str, dict[str, JSONScalar]] = {}
        for fid, name, decode in self.fields:
            if decode is None:
                continue
            n = nulls.get(fid)
            columns[name] = {"min": decode(lower.get(fid)), "max": decode(upper.get(fid)),
                             "null_count": None if n is None else int(n)}
        fmt = df.file_format
        return {"obj_type": "file", "path": df.file_path, "format": str(getattr(fmt, "value", fmt)).lower(),
                "row_count": int(df.record_count), "size_bytes": int(df.file_size_in_bytes), "columns": columns,
                "field_ids": dict(self.field_ids)}


def file_value(df: DataFile, schema: IcebergSchema) -> dict[str, Any]:
    """`FileDecoder(schema).value(df)` for one file."""
    return FileDecoder(schema).value(df)


_UUIDISH = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def leaf_id(path: str) -> str:
    """The obj_id of a file's leaf: its file name when that carries a UUID (as Iceberg writers'
    names do), else the name behind a hash of the whole path, so two files of one partition never
    share an id."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    if _UUIDISH.search(name) and not name.startswith("_") and "\x00" not in name and len(name) < 200:
        return name
    return hashlib.sha1(path.encode()).hexdigest()[:12] + "-" + name.replace("\x00", "")[-100:].lstrip("_")
