"""Table schemas in the catalog ({schema_id, columns: [{id, name, type, nullable}]}) and how a
DataFrame's schema evolves them: columns match by name (case-insensitively, as Spark does),
keep their ids, new columns get fresh ids, and only widening type changes are accepted."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from spark_bridge.errors import SchemaEvolutionError

__all__ = ["normalize_type", "df_columns", "can_widen", "Evolution", "evolve", "to_struct",
           "partition_value", "PARTITION_TYPES"]

# Other writers (e.g. an Iceberg import) may use these spellings for the same types.
_ALIASES = {"long": "bigint", "integer": "int", "short": "smallint", "byte": "tinyint", "real": "float",
            "bool": "boolean", "timestamptz": "timestamp", "text": "string", "varchar": "string"}
_INT_RANK = {"tinyint": 1, "smallint": 2, "int": 3, "bigint": 4}
_DECIMAL = re.compile(r"^decimal\((\d+),(\d+)\)$")
PARTITION_TYPES = ("string", "tinyint", "smallint", "int", "bigint", "date", "boolean", "timestamp",
                   "timestamp_ntz")


def normalize_type(text: str) -> str:
    t = re.sub(r"\s+", "", str(text).lower())
    if t.startswith(("varchar(", "char(")):
        return "string"
    return _ALIASES.get(t, t)


def df_columns(struct: Any) -> list[dict[str, Any]]:
    """[{name, type, nullable}] of a Spark StructType, types as Spark DDL strings."""
    return [{"name": f.name, "type": normalize_type(f.dataType.simpleString()), "nullable": bool(f.nullable)}
            for f in struct.fields]


def can_widen(src: str, dst: str) -> bool:
    """May a column of type `src` be read as `dst` without loss (Iceberg's promotion rules)?"""
    src, dst = normalize_type(src), normalize_type(dst)
    if src == dst:
        return True
    if src in _INT_RANK and dst in _INT_RANK:
        return _INT_RANK[src] <= _INT_RANK[dst]
    if (src, dst) == ("float", "double"):
        return True
    a, b = _DECIMAL.match(src), _DECIMAL.match(dst)
    return bool(a and b and a.group(2) == b.group(2) and int(a.group(1)) <= int(b.group(1)))


@dataclass
class Evolution:
    schema: dict[str, Any]
    changed: bool
    casts: dict[str, str] = field(default_factory=dict)    # DataFrame column -> table type to cast to
    renames: dict[str, str] = field(default_factory=dict)  # DataFrame column -> table column name
    added: list[str] = field(default_factory=list)
    widened: list[str] = field(default_factory=list)


def _fresh(cols: list[dict]) -> dict[str, Any]:
    return {"schema_id": 0, "columns": [{"id": i + 1, "name": c["name"], "type": c["type"],
                                         "nullable": c["nullable"]} for i, c in enumerate(cols)]}


def evolve(table_schema: dict[str, Any] | None, cols: list[dict[str, Any]], table: str) -> Evolution:
    """Reconcile DataFrame columns with the table schema; raise SchemaEvolutionError if they
    cannot be (an incompatible type change, or a required column the DataFrame lacks)."""
    lowered = [c["name"].lower() for c in cols]
    dupes = sorted({n for n in lowered if lowered.count(n) > 1})
    if dupes:
        raise SchemaEvolutionError(f"the DataFrame has duplicate column names {dupes} (Spark matches names "
                                   f"case-insensitively); rename them before writing {table}")
    if not table_schema or not table_schema.get("columns"):
        return Evolution(_fresh(cols), True)
    out = [dict(c) for c in table_schema["columns"]]
    by_name = {c["name"].lower(): c for c in out}
    evo = Evolution({}, False)
    next_id = max((int(c.get("id", 0)) for c in out), default=0) + 1
    for c in cols:
        cur = by_name.get(c["name"].lower())
        if cur is None:
            out.append({"id": next_id, "name": c["name"], "type": c["type"], "nullable": True})
            next_id += 1
            evo.added.append(c["name"])
            continue
        if cur["name"] != c["name"]:
            evo.renames[c["name"]] = cur["name"]
        have, got = normalize_type(cur["type"]), c["type"]
        if have != got:
            if can_widen(got, have):
                evo.casts[c["name"]] = have
            elif can_widen(have, got):
                cur["type"] = got
                evo.widened.append(cur["name"])
            else:
                raise SchemaEvolutionError(
                    f"column {cur['name']!r} of {table} is {have}, the DataFrame has {got}; only widening "
                    f"changes (int -> bigint, float -> double, decimal precision) are allowed. Cast the "
                    f"column to {have} or write to a new table", column=cur["name"], table_type=have,
                    df_type=got)
        if c["nullable"] and not cur.get("nullable", True):
            cur["nullable"] = True
            evo.widened.append(cur["name"])
    present = {n for n in lowered}
    for c in out:
        if not c.get("nullable", True) and c["name"].lower() not in present:
            raise SchemaEvolutionError(f"column {c['name']!r} of {table} is required (nullable=false) and the "
                                       "DataFrame lacks it; add the column", column=c["name"])
    evo.changed = bool(evo.added or evo.widened)
    evo.schema = {"schema_id": int(table_schema.get("schema_id", 0)) + (1 if evo.changed else 0), "columns": out}
    return evo


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def to_struct(schema: dict[str, Any], exclude: tuple[str, ...] = ()) -> Any:
    """The Spark StructType of a catalog schema (needs an active SparkContext for DDL parsing)."""
    from pyspark.sql.types import _parse_datatype_string

    cols = [c for c in schema.get("columns", []) if c["name"] not in exclude]
    if not cols:
        from pyspark.sql.types import StructType

        return StructType([])
    ddl = ", ".join(f"{_quote(c['name'])} {normalize_type(c['type'])}"
                    + ("" if c.get("nullable", True) else " NOT NULL") for c in cols)
    try:
        struct = _parse_datatype_string(ddl)
    except Exception as exc:  # e.g. a type another tool wrote that Spark has no name for
        from spark_bridge.errors import BridgeError

        raise BridgeError(f"the table schema has a type Spark cannot read ({ddl[:300]}): "
                          f"{str(exc).strip().splitlines()[0][:200]}") from exc
    for f in getattr(struct, "fields", ()):  # a StructType; readers fill absent columns with nulls, so declare everything nullable
        f.nullable = True
    return struct


def partition_value(raw: str | None, type_: str, session_tz: str = "UTC") -> Any:
    """The JSON value of a partition from Spark's directory text, encoded like the file
    statistics (ints as ints, dates and timestamps as ISO-8601 strings)."""
    if raw is None:
        return None
    t = normalize_type(type_)
    if t in _INT_RANK:
        return int(raw)
    if t == "boolean":
        return raw.lower() == "true"
    if t in ("timestamp", "timestamp_ntz"):
        dt = datetime.fromisoformat(raw.replace(" ", "T"))
        if t == "timestamp_ntz":
            return dt.isoformat(timespec="microseconds")
        from zoneinfo import ZoneInfo

        if dt.tzinfo is None:  # Spark writes these in the session time zone
            dt = dt.replace(tzinfo=ZoneInfo(session_tz) if session_tz.upper() != "UTC" else timezone.utc)
        return dt.astimezone(timezone.utc).isoformat(timespec="microseconds")
    return raw  # string, date (already ISO)
