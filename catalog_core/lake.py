"""The tree conventions of a lake (DESIGN.md, Data model), in one place.

    /<catalog>                                   obj_type catalog
    /<catalog>/<namespace>                       obj_type namespace
    /<catalog>/<namespace>/<table>               obj_type table: location, schema, partition_by, stats
    …/<table>/<col>=<value>                      obj_type partition (one level per partition column)
    …/<partition>/<file-id>                      obj_type file (leaf)
    …/_semantic                                  obj_type semantic, under a catalog, namespace or table
    …/_semantic/<annotation-key>                 obj_type annotation

A table's lineage (what its last build read) is the table value's `lineage` key, written by
`lineage_deltas` in the build's own commit and read back with `Lineage.from_raw`: versioned with the
table, so every snapshot knows the inputs of the build it holds.

A dotted name `catalog.namespace.table` maps to its path one-to-one, and so do the shorter names of
catalogs (`catalog`) and namespaces (`catalog.namespace`). Ids that start with `_` are reserved for
the catalog itself (`_semantic`, `_staging`), so no dotted name may contain one. A partition's obj_id
is `<column>=<value>`, with `__null__` standing for a null value.

Everything here is pure except `require_table`, which reads one object through any
`catalog_core.api.CatalogAPI`.

A table's value is parsed once into the typed model `TableValue` (`Schema` of `Column`s,
`Partition`s, `Stats` of `ColumnStats`): `TableValue.from_raw(obj.value)` and back with `to_raw()`.
The model is what readers use instead of `value.get("schema")`; writers still build the raw dict.
Invariant: `from_raw(v.to_raw()) == v`, and `from_raw(raw).to_raw() == raw` for a well-formed raw
value (keys the model does not name ride along in `extra`; absent keys stay absent, and a named key
holding None counts as absent). Readers were
lenient before the model and stay so: a missing or non-dict schema or stats reads as empty, and
column entries that are not dicts are left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from catalog_core.errors import InvalidPathError, InvalidValueError, NoSuchTableError
from catalog_core.paths import ROOT, split, validate
from catalog_core.query.ast import Literal, to_text

if TYPE_CHECKING:
    from catalog_core.api import CatalogAPI, SnapshotRef
    from catalog_core.model import JSONScalar, JSONValue, Obj

__all__ = [
    "SEMANTIC",
    "NULL_PARTITION",
    "is_reserved",
    "table_path",
    "object_path",
    "name_of",
    "partition_id",
    "parse_partition_id",
    "partition_columns",
    "is_table",
    "require_table",
    "exact_query",
    "quote",
    "tables_query",
    "semantic_path",
    "TableValue",
    "Schema",
    "Column",
    "Partition",
    "Stats",
    "ColumnStats",
    "LINEAGE",
    "Lineage",
    "lineage_deltas",
]

SEMANTIC = "_semantic"
NULL_PARTITION = "__null__"
_KINDS = {1: "catalog", 2: "namespace", 3: "table"}


def is_reserved(obj_id: str) -> bool:
    """Ids starting with `_` belong to the catalog (`_semantic`, staging areas), not to the lake."""
    return obj_id.startswith("_")


def object_path(name: str, *, levels: tuple[int, ...] = (1, 2, 3)) -> str:
    """The path of a catalog (`acme`), namespace (`acme.core`) or table (`acme.core.orders`).

    `levels` restricts which of the three a caller accepts."""
    if not isinstance(name, str):
        raise InvalidValueError(f"a catalog, namespace or table name must be text, got {type(name).__name__}")
    parts = name.split(".")
    if len(parts) not in levels or not all(parts):
        want = " or ".join(("catalog", "catalog.namespace", "catalog.namespace.table")[n - 1] for n in levels)
        raise InvalidValueError(f"name {name!r} must be {want}, e.g. 'acme.core.fct_orders'", name=name)
    for part in parts:
        if is_reserved(part):
            raise InvalidValueError(f"name {name!r}: {part!r} starts with '_', which is reserved for the catalog "
                                    "itself (e.g. _semantic); name lake objects without it", name=name)
        if "/" in part or "\x00" in part:
            raise InvalidPathError(f"name {name!r}: {part!r} is not a valid id (no '/' or NUL)", name=name)
    path = "/" + "/".join(parts)
    try:
        path.encode()
    except UnicodeEncodeError:
        raise InvalidPathError(f"name {name!r} holds a lone surrogate, which is not a character; names must be "
                               "valid Unicode text", name=name) from None
    validate(path)  # the path rules too (length, '.' and '..')
    return path


def table_path(name: str) -> str:
    """`acme.core.orders` -> `/acme/core/orders`."""
    return object_path(name, levels=(3,))


def name_of(path: str) -> str:
    """`/acme/core/orders` -> `acme.core.orders` (any depth: the ids joined by dots)."""
    return ".".join(split(path))


def partition_id(column: str, value: object) -> str:
    """The obj_id of a partition level: `col=value` (None -> `col=__null__`)."""
    return f"{column}={NULL_PARTITION if value is None else value}"


def parse_partition_id(obj_id: str) -> tuple[str, str | None]:
    """`d=2025-03-01` -> ("d", "2025-03-01"); `d=__null__` -> ("d", None). The value is the text
    of the id; the typed value is the partition object's own field."""
    col, sep, raw = obj_id.partition("=")
    if not sep or not col:
        raise InvalidValueError(f"{obj_id!r} is not a partition id; partition ids look like 'column=value'")
    return col, None if raw == NULL_PARTITION else raw


def partition_columns(table: dict[str, Any]) -> list[str]:
    """A table value's partition columns, in order (`partition_by` entries are names or
    `{"name": ...}` dicts); `TableValue.partition_columns` of the parsed value."""
    return [Partition.from_raw(col).name for col in table.get("partition_by") or []]


def is_table(value: dict[str, Any] | None) -> bool:
    return isinstance(value, dict) and value.get("obj_type") == "table"


def require_table(cat: CatalogAPI, name: str, vid: SnapshotRef = None) -> Obj:
    """The table object `name` at `vid`, or `NoSuchTableError` saying how to list tables."""
    path = table_path(name)
    obj = cat.get(path, vid=vid)
    if obj is None or not is_table(obj.value):
        at = "" if vid is None else f" at {vid!r}"
        raise NoSuchTableError(f"table {name!r} does not exist{at}; list tables with the path query "
                               f"{tables_query(split(path)[0])}", name=name, path=path)
    return obj


def quote(text: str) -> str:
    """A string literal of the query language (escaped as the parser reads it back)."""
    return to_text(Literal(text))


def exact_query(path: str, *steps: str) -> str:
    """A path query that matches exactly `path` (an `obj_id =` seek at every level), followed by
    `steps` (each a step text such as `[obj_type = "partition"]` or `*`)."""
    ids: Iterable[str] = () if path == ROOT else split(path)
    text = "".join(f"/[obj_id = {quote(i)}]" for i in ids)
    return text + "".join("/" + s for s in steps)


def tables_query(catalog: str | None = None) -> str:
    """The path query listing every table (of one catalog)."""
    head = "/*" if catalog is None else f"/[obj_id = {quote(catalog)}]"
    return head + '/*/[obj_type = "table"]'


def semantic_path(name: str, key: str | None = None) -> str:
    """The `_semantic` folder of a catalog, namespace or table, or one annotation under it."""
    base = object_path(name) + "/" + SEMANTIC
    return base if key is None else f"{base}/{key}"


# ------------------------------------------------------------------------------ the typed table model
def _extra(raw: Mapping[str, Any], known: tuple[str, ...]) -> dict[str, JSONValue]:
    return {k: v for k, v in raw.items() if k not in known}


def _put(out: dict[str, Any], key: str, value: object) -> None:
    if value is not None:
        out[key] = value


@dataclass(frozen=True)
class Column:
    """One column of a table's schema: `{"id", "name", "type", "nullable", ...}`. `id` is the
    column's stable field id (None: absent); `nullable` None means absent (read as True)."""

    name: str
    type: str | None = None
    id: int | None = None
    nullable: bool | None = None
    extra: dict[str, JSONValue] = field(default_factory=dict, compare=True)

    KEYS = ("id", "name", "type", "nullable")

    @property
    def is_nullable(self) -> bool:
        return self.nullable is not False

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> Column:
        return cls(name=str(raw.get("name", "")), type=raw.get("type"), id=raw.get("id"),
                   nullable=raw.get("nullable"), extra=_extra(raw, cls.KEYS))

    def to_raw(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        _put(out, "id", self.id)
        out["name"] = self.name
        _put(out, "type", self.type)
        _put(out, "nullable", self.nullable)
        return {**out, **self.extra}


@dataclass(frozen=True)
class Schema:
    """A table's schema: `schema_id` (None: absent, read as 0), its `columns` in order, and
    `dropped` (columns removed, with the schema id they were dropped at; None: absent)."""

    columns: tuple[Column, ...] = ()
    schema_id: int | None = None
    dropped: tuple[dict[str, Any], ...] | None = None
    extra: dict[str, JSONValue] = field(default_factory=dict)

    KEYS = ("schema_id", "columns", "dropped")

    @property
    def id(self) -> int:
        return int(self.schema_id or 0)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def column(self, name: str) -> Column | None:
        return next((c for c in self.columns if c.name == name), None)

    @classmethod
    def from_raw(cls, raw: object) -> Schema:
        if not isinstance(raw, Mapping):
            return cls()
        cols = tuple(Column.from_raw(c) for c in raw.get("columns") or [] if isinstance(c, Mapping))
        dropped = raw.get("dropped")
        return cls(columns=cols, schema_id=raw.get("schema_id"),
                   dropped=None if dropped is None else tuple(dropped), extra=_extra(raw, cls.KEYS))

    def to_raw(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        _put(out, "schema_id", self.schema_id)
        out["columns"] = [c.to_raw() for c in self.columns]
        if self.dropped is not None:
            out["dropped"] = list(self.dropped)
        return {**out, **self.extra}


@dataclass(frozen=True)
class Partition:
    """One partition level of `partition_by`: a column name, stored as the bare name or as
    `{"name": ..., ...}` (`spelled_as_dict` keeps which, so the value writes back unchanged)."""

    name: str
    spelled_as_dict: bool = False
    extra: dict[str, JSONValue] = field(default_factory=dict)

    @classmethod
    def from_raw(cls, raw: object) -> Partition:
        if isinstance(raw, str):
            return cls(raw)
        spec: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        return cls(str(spec.get("name", "")), True, _extra(spec, ("name",)))

    def to_raw(self) -> JSONValue:
        return {"name": self.name, **self.extra} if self.spelled_as_dict else self.name


@dataclass(frozen=True)
class ColumnStats:
    """A column's `{min, max, null_count}` (None: unknown or absent)."""

    min: JSONScalar = None
    max: JSONScalar = None
    null_count: int | None = None
    extra: dict[str, JSONValue] = field(default_factory=dict)

    KEYS = ("min", "max", "null_count")

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any]) -> ColumnStats:
        return cls(raw.get("min"), raw.get("max"), raw.get("null_count"), _extra(raw, cls.KEYS))

    def to_raw(self, present: tuple[str, ...] = KEYS) -> dict[str, Any]:
        return {**{k: getattr(self, k) for k in present}, **self.extra}


@dataclass(frozen=True)
class Stats:
    """A table's (or partition's) statistics (catalog_core.stats): counts, per-column stats and
    `last_data_commit` `{vid, time}`. A count None was absent."""

    row_count: int | None = None
    file_count: int | None = None
    size_bytes: int | None = None
    columns: dict[str, ColumnStats] = field(default_factory=dict)
    last_data_commit: dict[str, Any] | None = None
    extra: dict[str, JSONValue] = field(default_factory=dict)
    present: dict[str, tuple[str, ...]] = field(default_factory=dict)  # which keys each column's stats had

    KEYS = ("row_count", "file_count", "size_bytes", "columns", "last_data_commit")

    @classmethod
    def from_raw(cls, raw: object) -> Stats | None:
        if not isinstance(raw, Mapping):
            return None
        cols = {str(k): ColumnStats.from_raw(v) for k, v in (raw.get("columns") or {}).items() if isinstance(v, Mapping)}
        present = {str(k): tuple(x for x in ColumnStats.KEYS if x in v)
                   for k, v in (raw.get("columns") or {}).items() if isinstance(v, Mapping)}
        return cls(raw.get("row_count"), raw.get("file_count"), raw.get("size_bytes"), cols,
                   raw.get("last_data_commit"), _extra(raw, cls.KEYS), present)

    def to_raw(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k in ("row_count", "file_count", "size_bytes"):
            _put(out, k, getattr(self, k))
        out["columns"] = {k: v.to_raw(self.present.get(k, ColumnStats.KEYS)) for k, v in self.columns.items()}
        _put(out, "last_data_commit", self.last_data_commit)
        return {**out, **self.extra}


@dataclass(frozen=True)
class TableValue:
    """The value of a table object, parsed once: `location`, `format`, `schema`, `partition_by`,
    `stats`, `properties`; other keys in `extra`. `schema` is empty when the raw value had none
    (`has_schema` tells), `stats` None when it had none."""

    schema: Schema = field(default_factory=Schema)
    partition_by: tuple[Partition, ...] = ()
    stats: Stats | None = None
    location: str | None = None
    format: str | None = None
    properties: dict[str, Any] | None = None
    obj_type: str | None = "table"
    has_schema: bool = True
    has_partition_by: bool = True
    extra: dict[str, JSONValue] = field(default_factory=dict)

    KEYS = ("obj_type", "location", "format", "schema", "partition_by", "stats", "properties")

    @property
    def columns(self) -> tuple[Column, ...]:
        return self.schema.columns

    @property
    def partition_columns(self) -> list[str]:
        return [p.name for p in self.partition_by]

    @classmethod
    def from_raw(cls, raw: Mapping[str, Any] | None) -> TableValue:
        raw = raw or {}
        parts = raw.get("partition_by")
        return cls(schema=Schema.from_raw(raw.get("schema")),
                   partition_by=tuple(Partition.from_raw(p) for p in parts or []),
                   stats=Stats.from_raw(raw.get("stats")), location=raw.get("location"), format=raw.get("format"),
                   properties=raw.get("properties"), obj_type=raw.get("obj_type"),
                   has_schema="schema" in raw, has_partition_by="partition_by" in raw, extra=_extra(raw, cls.KEYS))

    def to_raw(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        _put(out, "obj_type", self.obj_type)
        _put(out, "location", self.location)
        _put(out, "format", self.format)
        if self.has_schema:
            out["schema"] = self.schema.to_raw()
        if self.has_partition_by:
            out["partition_by"] = [p.to_raw() for p in self.partition_by]
        if self.stats is not None:
            out["stats"] = self.stats.to_raw()
        _put(out, "properties", self.properties)
        return {**out, **self.extra}


# ------------------------------------------------------------------------------------------- lineage
LINEAGE = "lineage"  # the table value's key holding its last build's inputs


@dataclass(frozen=True)
class Lineage:
    """What the build that last wrote a table read: `inputs` {dotted table: the vid it was read at},
    `job` (a name for people), `source` (who recorded it: `spark`, `dbt`, `iceberg`, `declared`),
    and the build's own commit (`built_vid`, `built_time`; None when the record was imported rather
    than stamped by a build commit). Invariant: an input's vid is never after `built_vid`."""

    inputs: dict[str, int]
    job: str | None = None
    source: str | None = None
    built_vid: int | None = None
    built_time: float | None = None

    @classmethod
    def from_raw(cls, value: Mapping[str, Any] | None) -> Lineage | None:
        """The lineage of a table value (the whole value or its `lineage` entry); None if it has none."""
        if not isinstance(value, Mapping):
            return None
        raw = value.get(LINEAGE) if LINEAGE in value else value
        if not isinstance(raw, Mapping) or not isinstance(raw.get("inputs"), Mapping):
            return None
        inputs: dict[str, int] = {}
        for name, rec in raw["inputs"].items():
            v = rec.get("vid") if isinstance(rec, Mapping) else rec
            if isinstance(v, int) and not isinstance(v, bool):
                inputs[str(name)] = v
        got = raw.get("built")
        built: Mapping[str, Any] = got if isinstance(got, Mapping) else {}
        bv, bt = built.get("vid"), built.get("time")
        return cls(inputs, raw.get("job") if isinstance(raw.get("job"), str) else None,
                   raw.get("source") if isinstance(raw.get("source"), str) else None,
                   bv if isinstance(bv, int) and not isinstance(bv, bool) else None,
                   float(bt) if isinstance(bt, (int, float)) and not isinstance(bt, bool) else None)


def lineage_deltas(inputs: Mapping[str, int | None], job: str | None = None, source: str = "spark",
                   stamp: bool = True) -> list[dict[str, Any]]:
    """The merge deltas (apply in order, to the table's path, in the build's commit) that record a
    build's inputs on the table it wrote: {dotted table: vid read}, where None means "read in this
    same commit" (the input was written by it) and is stamped with the commit's vid, as `built` is
    when `stamp` (an import of lineage declared elsewhere passes stamp=False). The previous record is
    replaced, never merged with."""
    fixed: dict[str, Any] = {}
    same: dict[str, Any] = {}
    for name, vid in sorted(inputs.items()):
        table_path(name)  # a dotted table name, or InvalidPathError
        if vid is None:
            same[name] = {"vid": {"op": "commit_vid", "val": 0}}
        elif isinstance(vid, int) and not isinstance(vid, bool) and vid >= 0:
            fixed[name] = {"vid": vid}
        else:
            raise InvalidValueError(f"the vid an input was read at must be a vid (int >= 0) or None, got {vid!r} "
                                    f"for {name}")
    record: dict[str, Any] = {"inputs": fixed, "source": source}
    if job:
        record["job"] = str(job)[:200]
    out: list[dict[str, Any]] = [{LINEAGE: {"op": "set", "val": record}}]
    late: dict[str, Any] = {}
    if same:
        late["inputs"] = same
    if stamp:
        late["built"] = {"vid": {"op": "commit_vid", "val": 0}, "time": {"op": "commit_time", "val": 0}}
    if late:
        out.append({LINEAGE: late})
    return out
