"""The lake as the semantic layer reads it at one vid: tables, their columns and column type
families, their annotations, and the errors (with did-you-mean) for names that do not resolve.

Everything goes through `catalog_core.api.CatalogAPI` (embedded or remote). `require_table` is one
point read (annotate, describe, staleness); `table_info` / `model` give the whole catalog's tables
with their parsed annotations (relate, join_path, metrics, profile), built from the per-catalog,
per-vid cache of `semantic.history` (a vid's state never changes)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from catalog_core import lake
from catalog_core.errors import InvalidValueError, NoSuchTableError
from catalog_core.sql.types import duck_type
from semantic.errors import UnknownColumnError, UnknownTableError, did_you_mean, listing, suggest
from semantic.models import Annotation

if TYPE_CHECKING:
    from catalog_core.api import CatalogAPI
    from catalog_core.model import Obj

__all__ = ["Column", "TableInfo", "type_family", "coarse_family", "comparable", "check_name", "unknown_table",
           "require_table", "table_names", "catalog_names", "table_columns", "column_id", "columns_of", "unknown_column", "short"]


def short(name: str) -> str:
    """`acme.core.fct_orders` -> `fct_orders`."""
    return name.rsplit(".", 1)[-1]


# ---------------------------------------------------------------- types

_FAMILIES = {
    "TINYINT": "number", "SMALLINT": "number", "INTEGER": "number", "BIGINT": "number", "HUGEINT": "number",
    "UTINYINT": "number", "USMALLINT": "number", "UINTEGER": "number", "UBIGINT": "number",
    "UHUGEINT": "number", "FLOAT": "float", "DOUBLE": "float", "VARCHAR": "text", "UUID": "text",
    "DATE": "date", "TIMESTAMP": "timestamp", "TIMESTAMPTZ": "timestamp", "TIME": "time",
    "BOOLEAN": "boolean", "BLOB": "blob",
}
_COARSE = {"number": "number", "float": "number", "text": "string", "date": "time", "timestamp": "time",
           "time": "time", "boolean": "bool"}


def type_family(catalog_type: object) -> str | None:
    """A family of a schema type (number, float, text, date, timestamp, time, boolean, blob or the
    DuckDB spelling of anything else); None when the type is unknown. Integers and decimals share
    `number`: DuckDB compares them exactly. Joins need this fine a split."""
    duck = duck_type(catalog_type)
    if duck is None:
        return None
    if duck.startswith("DECIMAL"):
        return "number"
    return _FAMILIES.get(duck, duck)


def coarse_family(catalog_type: object) -> str:
    """number (any numeric), time (dates, timestamps, times), bool, string, or the type itself:
    what a column may drift within without its meaning changing (staleness)."""
    fam = type_family(catalog_type)
    if fam is None:
        return str(catalog_type or "").lower()
    return _COARSE.get(fam, fam.lower())


def comparable(a: object, b: object) -> bool:
    fa, fb = type_family(a), type_family(b)
    return fa is None or fb is None or fa == fb


# ---------------------------------------------------------------- columns

@dataclass(frozen=True)
class Column:
    id: int | None
    name: str
    type: str | None

    @property
    def family(self) -> str | None:
        return type_family(self.type)


def table_columns(table: dict[str, Any] | None) -> tuple[lake.Column, ...]:
    """The schema columns of a table value, parsed by `catalog_core.lake.TableValue` (entries that
    are not dicts are left out)."""
    return lake.TableValue.from_raw(table).columns


def column_id(c: lake.Column) -> int:
    """A schema column's field id, -1 when it has none (the key of the by-id maps)."""
    return -1 if c.id is None else int(c.id)


def columns_of(value: dict[str, Any] | None) -> list[Column]:
    """The named columns of a table value; an id that is not an int, or a type that is not text,
    reads as None."""
    out = []
    for c in table_columns(value):
        if c.name:
            cid = c.id
            out.append(Column(cid if isinstance(cid, int) and not isinstance(cid, bool) else None,
                              c.name, c.type if isinstance(c.type, str) else None))
    return out


def find(columns: Sequence[Column], name: object) -> Column | None:
    """The column named `name`: exactly, else the one column equal to it ignoring case."""
    if not isinstance(name, str):
        return None
    for c in columns:
        if c.name == name:
            return c
    low = name.lower()
    folded = [c for c in columns if c.name.lower() == low]
    return folded[0] if len(folded) == 1 else None


def unknown_column(table: str, name: object, names: Sequence[str], what: str = "column") -> UnknownColumnError:
    close = did_you_mean(name, names) if isinstance(name, str) else []
    return UnknownColumnError(f"{what} {name!r} is not a column of {table}{suggest(close)} "
                              f"(its columns: {listing(names)})", table=table, column=name, did_you_mean=close)


# ---------------------------------------------------------------- tables

@dataclass
class TableInfo:
    name: str
    obj: Obj
    columns: list[Column]
    annotations: list[Annotation] = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.obj.path

    @property
    def value(self) -> dict[str, Any]:
        return self.obj.value

    @property
    def short(self) -> str:
        return short(self.name)

    def find(self, name: str) -> Column | None:
        return find(self.columns, name)

    def column(self, name: object, what: str = "column") -> Column:
        """The column `name`, or `UnknownColumnError` with did-you-mean and the table's columns."""
        if not isinstance(name, str) or not name:
            raise InvalidValueError(f"{what} must be a column name (text), got {name!r}", table=self.name)
        col = self.find(name)
        if col is None:
            raise unknown_column(self.name, name, [c.name for c in self.columns], what)
        return col

    def annotation(self, key: str) -> Annotation | None:
        return next((a for a in self.annotations if a.key == key), None)

    def stats(self) -> dict[str, Any]:
        return dict(self.value.get("stats") or {})


def catalog_names(cat: CatalogAPI, vid: int) -> list[str]:
    return sorted(o.path.strip("/") for o in cat.query('/[obj_type = "catalog"]', vid=vid))


def table_names(cat: CatalogAPI, vid: int, catalog: str | None = None) -> list[str]:
    return [lake.name_of(o.path) for o in cat.query(lake.tables_query(catalog), vid=vid)]


def check_name(cat: CatalogAPI, name: object, vid: int, what: str) -> None:
    if not isinstance(name, str):
        raise InvalidValueError(f"{what} must be a dotted name 'catalog.namespace.table', got {name!r}")
    parts = name.split(".")
    if len(parts) != 3 or not all(parts):
        names = table_names(cat, vid)
        bare = [n for n in names if short(n) == name]
        close = bare[:1] if len(bare) == 1 else did_you_mean(name, names)
        raise InvalidValueError(f"{what} {name!r} must be a dotted name 'catalog.namespace.table'{suggest(close)}",
                                name=name, did_you_mean=close)
    lake.table_path(name)  # the id rules (no reserved ids, no '/')


def unknown_table(cat: CatalogAPI, name: str, vid: int, what: str) -> UnknownTableError:
    close = did_you_mean(name, table_names(cat, vid))
    return UnknownTableError(f"{what} {name!r} does not exist at vid {vid}{suggest(close)} (list tables with the "
                             f"path query {lake.tables_query(name.split('.')[0])})",
                             name=name, path=lake.table_path(name), did_you_mean=close, vid=vid)


def require_table(cat: CatalogAPI, name: object, vid: int, what: str = "table") -> Obj:
    """The table object (one point read), or `UnknownTableError` with did-you-mean names."""
    check_name(cat, name, vid, what)
    assert isinstance(name, str)  # check_name refused anything else
    try:
        return lake.require_table(cat, name, vid=vid)
    except NoSuchTableError:
        raise unknown_table(cat, name, vid, what) from None
