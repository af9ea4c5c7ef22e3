"""The tree conventions of a lake (DESIGN.md, Data model), in one place.

    /<catalog>                                   obj_type catalog
    /<catalog>/<namespace>                       obj_type namespace
    /<catalog>/<namespace>/<table>               obj_type table: location, schema, partition_by, stats
    …/<table>/<col>=<value>                      obj_type partition (one level per partition column)
    …/<partition>/<file-id>                      obj_type file (leaf)
    …/_semantic                                  obj_type semantic, under a catalog, namespace or table
    …/_semantic/<annotation-key>                 obj_type annotation

A dotted name `catalog.namespace.table` maps to its path one-to-one, and so do the shorter names of
catalogs (`catalog`) and namespaces (`catalog.namespace`). Ids that start with `_` are reserved for
the catalog itself (`_semantic`, `_staging`), so no dotted name may contain one. A partition's obj_id
is `<column>=<value>`, with `__null__` standing for a null value.

Everything here is pure except `require_table`, which reads one object through any
`catalog_core.api.CatalogAPI`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from catalog_core.errors import InvalidPathError, InvalidValueError, NoSuchTableError
from catalog_core.paths import ROOT, split, validate
from catalog_core.query.ast import Literal, to_text

if TYPE_CHECKING:
    from catalog_core.api import CatalogAPI, SnapshotRef
    from catalog_core.model import Obj

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


def partition_id(column: str, value: Any) -> str:
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
    `{"name": ...}` dicts)."""
    out = []
    for col in table.get("partition_by") or []:
        out.append(col if isinstance(col, str) else str((col or {}).get("name", "")))
    return out


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
