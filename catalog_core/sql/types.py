"""SQL text helpers for the DuckDB reader: identifier/literal quoting and the mapping from the
column types a table's schema may carry (Iceberg, Spark or DuckDB spellings) to DuckDB types."""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["quote_ident", "quote_str", "sql_literal", "duck_type"]

_SIMPLE = {
    "boolean": "BOOLEAN", "bool": "BOOLEAN",
    "byte": "TINYINT", "tinyint": "TINYINT",
    "short": "SMALLINT", "smallint": "SMALLINT",
    "int": "INTEGER", "integer": "INTEGER", "int32": "INTEGER",
    "long": "BIGINT", "bigint": "BIGINT", "int64": "BIGINT",
    "float": "FLOAT", "real": "FLOAT", "float32": "FLOAT",
    "double": "DOUBLE", "float64": "DOUBLE",
    "string": "VARCHAR", "varchar": "VARCHAR", "text": "VARCHAR", "char": "VARCHAR",
    "binary": "BLOB", "bytes": "BLOB", "blob": "BLOB", "fixed": "BLOB",
    "date": "DATE", "time": "TIME", "uuid": "UUID",
    # Spark's `timestamp` is an instant and its Parquet is UTC-adjusted; read as UTC wall time
    # (connections run with TimeZone=UTC) so results do not depend on the machine's zone.
    "timestamp": "TIMESTAMP", "timestamp_ntz": "TIMESTAMP",
    "timestamptz": "TIMESTAMPTZ", "timestamp_ltz": "TIMESTAMPTZ",
    "timestamp with time zone": "TIMESTAMPTZ",
}
_DECIMAL = re.compile(r"(?:decimal|numeric)\s*(?:\(\s*(\d+)\s*,\s*(\d+)\s*\))?\Z")
_SIZED_TEXT = re.compile(r"(?:var)?char\s*\(\s*\d+\s*\)\Z")
# A DuckDB type spelled directly (e.g. "INTEGER[]", "STRUCT(a INTEGER)"): passed through as is.
_DUCK_SPELLING = re.compile(r"[A-Za-z][A-Za-z0-9_ ,()\[\]\"]*\Z")


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def quote_str(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def sql_literal(value: Any) -> str:
    """A JSON-ish scalar as SQL text (what partition values and filter literals are)."""
    if value is None:
        return "NULL"
    if value is True:
        return "TRUE"
    if value is False:
        return "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else quote_str(repr(value)) + "::DOUBLE"
    return quote_str(str(value))


def _split_top(text: str, sep: str = ",") -> list[str]:
    """Split on `sep` outside <...> and (...)."""
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        if ch == sep and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [p.strip() for p in out]


def _generic(low: str, raw: str) -> str | None:
    """Spark/Iceberg nested types: array<T>, list<T>, map<K,V>, struct<a:T,...>."""
    m = re.fullmatch(r"(array|list|map|struct)\s*<(.*)>", low, re.S)
    if not m:
        return None
    kind = m.group(1)
    inner_raw = raw.strip()[raw.strip().index("<") + 1:-1]
    if kind in ("array", "list"):
        element = duck_type(inner_raw)
        return None if element is None else f"{element}[]"
    parts = _split_top(inner_raw)
    if kind == "map":
        if len(parts) != 2:
            return None
        key, val = duck_type(parts[0]), duck_type(parts[1])
        return None if key is None or val is None else f"MAP({key}, {val})"
    fields = []
    for part in parts:
        name, _, typ = part.partition(":")
        sub = duck_type(typ)
        if not name.strip() or sub is None:
            return None
        fields.append(f"{quote_ident(name.strip())} {sub}")
    return f"STRUCT({', '.join(fields)})"


def duck_type(spec: Any) -> str | None:
    """The DuckDB type for a schema column type, or None when it cannot be told (then the
    reader keeps the file's own type)."""
    if not isinstance(spec, str) or not spec.strip():
        return None
    raw = spec.strip()
    low = raw.lower()
    if low in _SIMPLE:
        return _SIMPLE[low]
    m = _DECIMAL.match(low)
    if m:
        return f"DECIMAL({m.group(1)}, {m.group(2)})" if m.group(1) else "DECIMAL"
    if _SIZED_TEXT.match(low):
        return "VARCHAR"
    generic = _generic(low, raw)
    if generic is not None:
        return generic
    return raw if _DUCK_SPELLING.match(raw) else None
