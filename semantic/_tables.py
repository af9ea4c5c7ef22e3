"""What relate / define_metric / join_path / metric_sql / profile need to know about the lake at one
vid: tables and their columns, column type families, annotations, and did-you-mean suggestions.

Everything goes through `catalog_core.api.CatalogAPI` (embedded or remote). The annotations and
table schemas of one vid never change, so `CatalogModel` caches them per (catalog object, vid)."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rapidfuzz import fuzz, process

from catalog_core import lake
from catalog_core.errors import InvalidValueError, NoSuchTableError
from catalog_core.sql.types import duck_type

if TYPE_CHECKING:
    from catalog_core.api import CatalogAPI, SnapshotRef
    from catalog_core.model import Obj

__all__ = ["Column", "TableInfo", "CatalogModel", "model", "did_you_mean", "type_family", "comparable",
           "table_info", "short"]


# ---------------------------------------------------------------- suggestions

def did_you_mean(word: str, choices: Iterable[str], limit: int = 3, cutoff: float = 60) -> str:
    """' Did you mean 'a' or 'b'?' (with a leading space) or '' when nothing is close."""
    pool = sorted(set(choices))
    if not pool or not isinstance(word, str):
        return ""
    hits = process.extract(word, pool, scorer=fuzz.WRatio, limit=limit, score_cutoff=cutoff)
    names = [repr(h[0]) for h in hits]
    if not names:
        return ""
    return " Did you mean " + (names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]) + "?"


def listing(names: Iterable[str], limit: int = 40) -> str:
    items = sorted(set(names))
    text = ", ".join(items[:limit])
    return text + (f", ... ({len(items) - limit} more)" if len(items) > limit else "")


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


def type_family(catalog_type: Any) -> str | None:
    """A coarse family of a schema type (number, float, text, date, timestamp, time, boolean, blob
    or the DuckDB spelling of anything else); None when the type is unknown. Integers and
    decimals share `number`: DuckDB compares them exactly."""
    duck = duck_type(catalog_type)
    if duck is None:
        return None
    if duck.startswith("DECIMAL"):
        return "number"
    return _FAMILIES.get(duck, duck)


def comparable(a: Any, b: Any) -> bool:
    fa, fb = type_family(a), type_family(b)
    return fa is None or fb is None or fa == fb


# ---------------------------------------------------------------- tables and columns

@dataclass(frozen=True)
class Column:
    id: int | None
    name: str
    type: str | None

    @property
    def family(self) -> str | None:
        return type_family(self.type)


@dataclass
class TableInfo:
    name: str
    path: str
    value: dict[str, Any]
    columns: list[Column]
    annotations: list[Obj] = field(default_factory=list)

    @property
    def short(self) -> str:
        return short(self.name)

    def find(self, name: str) -> Column | None:
        for c in self.columns:
            if c.name == name:
                return c
        low = name.lower()
        for c in self.columns:
            if c.name.lower() == low:
                return c
        return None

    def column(self, name: Any, what: str = "column") -> Column:
        """The column `name`, or an error with did-you-mean and the table's columns."""
        if not isinstance(name, str) or not name:
            raise InvalidValueError(f"{what} must be a column name (text), got {name!r}", table=self.name)
        col = self.find(name)
        if col is None:
            names = [c.name for c in self.columns]
            raise InvalidValueError(f"{what} {name!r} is not a column of {self.name}."
                                    f"{did_you_mean(name, names)} Its columns: {listing(names)}",
                                    table=self.name, column=name)
        return col

    def stats(self) -> dict[str, Any]:
        return dict(self.value.get("stats") or {})


def _columns(value: dict[str, Any]) -> list[Column]:
    out = []
    for c in (value.get("schema") or {}).get("columns") or []:
        if isinstance(c, dict) and isinstance(c.get("name"), str):
            cid = c.get("id")
            out.append(Column(cid if isinstance(cid, int) and not isinstance(cid, bool) else None,
                              c["name"], c.get("type") if isinstance(c.get("type"), str) else None))
    return out


class CatalogModel:
    """The tables and annotations of one catalog (top-level name) at one vid."""

    def __init__(self, cat: CatalogAPI, catalog: str, vid: int) -> None:
        self.cat, self.catalog, self.vid = cat, catalog, vid
        self.tables: dict[str, TableInfo] = {}
        self.memo: dict[Any, Any] = {}  # derived read models of this vid (join scopes, metric lists)
        for obj in cat.query(lake.tables_query(catalog), vid=vid):
            name = lake.name_of(obj.path)
            self.tables[name] = TableInfo(name, obj.path, obj.value, _columns(obj.value))
        query = (f"/[obj_id = {lake.quote(catalog)}]/*/*/[obj_id = {lake.quote(lake.SEMANTIC)}]"
                 '/[obj_type = "annotation"]')
        for obj in cat.query(query, vid=vid):
            owner = lake.name_of(obj.path.rsplit("/", 2)[0])
            if owner in self.tables:
                self.tables[owner].annotations.append(obj)

    def annotations(self, kind: str | None = None) -> list[tuple[TableInfo, Obj]]:
        return [(t, a) for t in self.tables.values() for a in t.annotations
                if kind is None or a.value.get("kind") == kind]


_CACHE: weakref.WeakKeyDictionary[Any, dict[tuple[str, int], CatalogModel]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()
_PER_CATALOG = 16


def model(cat: CatalogAPI, catalog: str, vid: int) -> CatalogModel:
    """The catalog's tables and annotations at `vid` (cached: a vid's state never changes)."""
    key = (catalog, vid)
    try:
        with _LOCK:
            per = _CACHE.setdefault(cat, {})
            hit = per.get(key)
    except TypeError:  # not weak-referenceable: no cache
        return CatalogModel(cat, catalog, vid)
    if hit is not None:
        return hit
    built = CatalogModel(cat, catalog, vid)
    with _LOCK:
        if len(per) >= _PER_CATALOG:
            per.pop(next(iter(per)))
        per[key] = built
    return built


def table_names(cat: CatalogAPI, vid: int, catalog: str | None = None) -> list[str]:
    return [lake.name_of(o.path) for o in cat.query(lake.tables_query(catalog), vid=vid)]


def table_info(cat: CatalogAPI, name: Any, vid: int, what: str = "table") -> TableInfo:
    """The table `name` (catalog.namespace.table) at `vid`, from the cached model; an unknown or
    malformed name raises with did-you-mean over the lake's tables."""
    if not isinstance(name, str):
        raise InvalidValueError(f"{what} must be a dotted name 'catalog.namespace.table', got {name!r}")
    parts = name.split(".")
    if len(parts) != 3 or not all(parts):
        names = table_names(cat, vid)
        bare = [n for n in names if short(n) == name]
        hint = (f" Did you mean {bare[0]!r}?" if len(bare) == 1 else did_you_mean(name, names))
        raise InvalidValueError(f"{what} {name!r} must be a dotted name 'catalog.namespace.table'.{hint}",
                                name=name)
    lake.table_path(name)  # the id rules (no reserved ids, no '/')
    found = model(cat, parts[0], vid).tables.get(name)
    if found is None:
        names = table_names(cat, vid)
        raise NoSuchTableError(f"{what} {name!r} does not exist at vid {vid}.{did_you_mean(name, names)} "
                               f"List tables with the path query {lake.tables_query(parts[0])}",
                               name=name, path=lake.table_path(name))
    return found


def resolve_vid(cat: CatalogAPI, snapshot: SnapshotRef) -> int:
    return cat.resolve(snapshot)
