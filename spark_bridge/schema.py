"""Table schemas in the catalog ({schema_id, columns: [{id, name, type, nullable}]}) and how a
DataFrame's schema evolves them: columns match by name (case-insensitively, as Spark does),
keep their ids, new columns get fresh ids, and only widening type changes are accepted."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from catalog_core.lake import Column, Schema
from spark_bridge.errors import SchemaEvolutionError

__all__ = ["normalize_type", "df_columns", "can_widen", "Evolution", "evolve", "replace", "alter", "to_struct",
           "partition_value", "PARTITION_TYPES", "SCHEMA_MODES"]

SCHEMA_MODES = ("evolve", "replace")

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


def _parsed(schema: Schema | Mapping[str, Any] | None) -> Schema | None:
    """A table schema as the writers take it: parsed, raw (parsed here) or None."""
    return schema if schema is None or isinstance(schema, Schema) else Schema.from_raw(schema)


def evolve(current: Schema | Mapping[str, Any] | None, cols: list[dict[str, Any]], table: str) -> Evolution:
    """Reconcile DataFrame columns with the table schema `current` (None or no columns: a new
    table); raise SchemaEvolutionError if they cannot be (an incompatible type change, or a
    required column the DataFrame lacks). The evolved schema is the raw value to write."""
    lowered = [c["name"].lower() for c in cols]
    dupes = sorted({n for n in lowered if lowered.count(n) > 1})
    if dupes:
        raise SchemaEvolutionError(f"the DataFrame has duplicate column names {dupes} (Spark matches names "
                                   f"case-insensitively); rename them before writing {table}")
    current = _parsed(current)
    if current is None or not current.columns:
        return Evolution(_fresh(cols), True)
    out = [c.to_raw() for c in current.columns]  # the evolved columns, changed in place below
    by_name = {c["name"].lower(): c for c in out}
    evo = Evolution({}, False)
    next_id = _next_id(current)  # ids of dropped columns are never reused
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
    evo.schema = {**current.to_raw(), "schema_id": current.id + (1 if evo.changed else 0), "columns": out}
    return evo


def _next_id(schema: Schema) -> int:
    ids = [int(c.id or 0) for c in schema.columns]
    ids += [int(d.get("id", 0)) for d in schema.dropped or ()]
    return max(ids, default=0) + 1


def _dropped(col: dict[str, Any], until: int) -> dict[str, Any]:
    out = {"id": col.get("id"), "name": col.get("name"), "type": col.get("type"), "until": until}
    if col.get("previous_names"):
        out["previous_names"] = list(col["previous_names"])
    return out


def replace(current: Schema | Mapping[str, Any] | None, cols: list[dict[str, Any]], table: str) -> Evolution:
    """The schema of a full overwrite that replaces the table's schema: the DataFrame's columns,
    in its order and with its types. A column whose name (case-insensitively) and type family
    (the same type, or one widens to the other) carry over keeps its id; every other column is
    new and gets a fresh id. Columns the DataFrame lacks are dropped (recorded under `dropped`
    with the schema id that dropped them, so readers of older files never mistake them for a
    new column of the same name). `schema_id` increments when anything changed."""
    evolve(None, cols, table)  # duplicate names
    current = _parsed(current)
    if current is None or not current.columns:
        return Evolution(_fresh(cols), True)
    old = [c.to_raw() for c in current.columns]
    by_name = {str(c["name"]).lower(): c for c in old}
    sid = current.id + 1
    next_id = _next_id(current)
    out, kept = [], set()
    evo = Evolution({}, False)
    for c in cols:
        cur = by_name.get(c["name"].lower())
        if cur is not None and (can_widen(c["type"], cur["type"]) or can_widen(cur["type"], c["type"])):
            kept.add(int(cur["id"]))
            new = {**cur, "type": c["type"], "nullable": bool(c["nullable"])}
            if cur["name"] != c["name"]:
                evo.renames[c["name"]] = cur["name"]
            if normalize_type(cur["type"]) != c["type"] or bool(cur.get("nullable", True)) != bool(c["nullable"]):
                evo.widened.append(cur["name"])
            out.append(new)
            continue
        out.append({"id": next_id, "name": c["name"], "type": c["type"], "nullable": bool(c["nullable"])})
        next_id += 1
        evo.added.append(c["name"])
    dropped = [_dropped(c, sid) for c in old if int(c["id"]) not in kept]
    changed = bool(dropped or evo.added or evo.widened) or [int(c["id"]) for c in out] != [int(c["id"]) for c in old]
    evo.changed = changed
    schema: dict[str, Any] = {"schema_id": sid if changed else current.id, "columns": out}
    history = list(current.dropped or []) + dropped
    if history:
        schema["dropped"] = history
    evo.schema = schema
    return evo


def _alter_args(rename: dict[str, str] | None, drop: list[str] | None) -> tuple[dict[str, str], list[str]]:
    """`rename` {old: new} and `drop` [names] as alter takes them, or InvalidValueError."""
    from catalog_core.errors import InvalidValueError

    rename = dict(rename or {})
    drop = list(drop or [])
    if not isinstance(rename, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in rename.items()):
        raise InvalidValueError("rename must be a dict {old name: new name} of column names")
    if isinstance(drop, str) or not all(isinstance(d, str) for d in drop):
        raise InvalidValueError("drop must be a list of column names")
    if not rename and not drop:
        raise InvalidValueError("nothing to alter: give rename={old: new} and/or drop=[columns]")
    return rename, drop


def _check_targets(table: str, cols: tuple[Column, ...], rename: dict[str, str], drop: list[str],
                   pcols: set[str]) -> None:
    """Every column renamed or dropped exists, is not a partition column, and is not both."""
    by_name = {c.name.lower() for c in cols}
    names = ", ".join(c.name for c in cols)
    for what, items in (("rename", list(rename)), ("drop", drop)):
        for n in items:
            if n.lower() not in by_name:
                raise SchemaEvolutionError(f"cannot {what} {n!r}: {table} has no such column (its columns: {names})",
                                           column=n)
            if n.lower() in pcols:
                raise SchemaEvolutionError(f"cannot {what} {n!r}: it is a partition column of {table}, and "
                                           "partition directories and objects are named by it; rewrite the table "
                                           "with mode='overwrite', schema='replace' into a new table instead",
                                           column=n)
    both = sorted({n.lower() for n in rename} & {d.lower() for d in drop})
    if both:
        raise SchemaEvolutionError(f"cannot both rename and drop {both} in one alter")


def _check_final(table: str, final: list[str], rename: dict[str, str], pcols: set[str]) -> None:
    """The column names after the alter (`final`) are valid, distinct and not only partition columns."""
    for new in rename.values():
        if not new or not new.strip() or new.startswith("_") or "/" in new or "\x00" in new:
            raise SchemaEvolutionError(f"cannot rename to {new!r}: a column name must be non-empty, without '/' "
                                       "or NUL, and not start with '_'", column=new)
    lowered = [n.lower() for n in final]
    clash = sorted({n for n in lowered if lowered.count(n) > 1})
    if clash:
        raise SchemaEvolutionError(f"after the rename {table} would have duplicate columns {clash}; pick other "
                                   "names (or drop the old column in the same alter)", columns=clash)
    if len(final) <= len(pcols):
        raise SchemaEvolutionError(f"cannot drop every data column of {table}")


def alter(current: Schema | Mapping[str, Any] | None, table: str, rename: dict[str, str] | None = None,
          drop: list[str] | None = None, partition_by: list[str] | None = None) -> dict[str, Any]:
    """The schema (the raw value to write) after renaming and dropping columns of `current`; ids
    stay with their columns. A renamed column records its old name (`previous_names`: [{name,
    until}]: the name it had in schemas before `until`), a dropped one goes to `dropped`, so files
    written before the change are still read right. Raises SchemaEvolutionError for anything that
    cannot be done (InvalidValueError for malformed arguments), before anything is built."""
    rename, drop = _alter_args(rename, drop)
    current = _parsed(current)
    cols = current.columns if current is not None else ()
    if not cols:
        raise SchemaEvolutionError(f"{table} has no schema to alter; write it first")
    pcols = {p.lower() for p in partition_by or []}
    _check_targets(table, cols, rename, drop, pcols)
    gone = {d.lower() for d in drop}
    renames = {k.lower(): v for k, v in rename.items()}
    _check_final(table, [renames.get(c.name.lower(), c.name) for c in cols if c.name.lower() not in gone], rename, pcols)
    sid = (current.id if current is not None else 0) + 1
    out, dropped = [], list((current.dropped if current is not None else None) or [])
    for col in cols:
        c = col.to_raw()
        low = col.name.lower()
        if low in gone:
            dropped.append(_dropped(c, sid))
            continue
        if low in renames and renames[low] != col.name:
            prev = list(c.get("previous_names") or []) + [{"name": col.name, "until": sid}]
            c = {**c, "name": renames[low], "previous_names": prev}
        out.append(c)
    schema: dict[str, Any] = {"schema_id": sid, "columns": out}
    if dropped:
        schema["dropped"] = dropped
    return schema


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def to_struct(schema: Schema | Mapping[str, Any], exclude: tuple[str, ...] = ()) -> Any:
    """The Spark StructType of a catalog schema, parsed or raw (needs an active SparkContext for
    DDL parsing)."""
    from pyspark.sql.types import _parse_datatype_string

    if not isinstance(schema, Schema):
        schema = Schema.from_raw(schema)
    cols = [c for c in schema.columns if c.name not in exclude]
    if not cols:
        from pyspark.sql.types import StructType

        return StructType([])
    ddl = ", ".join(f"{_quote(c.name)} {normalize_type(str(c.type))}"
                    + ("" if c.is_nullable else " NOT NULL") for c in cols)
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
