"""The cached read model of one catalog at one vid: its tables (`TableInfo`) with their
annotations, and a memo of what is derived from them (join scopes, metric lists). Built on
`_tables` (what a table is) and `history` (the per-catalog cache and snapshot reads); `joins`,
`metrics` and `profile` read tables through it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from catalog_core.api import CatalogAPI
from semantic._tables import TableInfo, check_name, columns_of, unknown_table
from semantic.history import Context, cache_of
from semantic.models import Annotation

__all__ = ["CatalogModel", "model", "table_info", "tables_of"]


class CatalogModel:
    """The tables of one catalog (top-level name) at one vid, each with its annotations, plus a
    memo of read models derived from them (join scopes, metric lists)."""

    def __init__(self, cat: CatalogAPI, catalog: str, vid: int) -> None:
        self.cat, self.catalog, self.vid = cat, catalog, vid
        self.memo: dict[Any, Any] = {}
        ctx = Context(cat, vid)
        ctx.load_all_annotations()
        prefix = catalog + "."
        self.tables: dict[str, TableInfo] = {
            name: TableInfo(name, obj, columns_of(obj.value), list(ctx.annotations(name)))
            for name, obj in ctx.tables().items() if name.startswith(prefix)}

    def annotations(self, kind: str | None = None) -> list[Annotation]:
        return [a for t in self.tables.values() for a in t.annotations if kind is None or a.kind == kind]


def model(cat: CatalogAPI, catalog: str, vid: int) -> CatalogModel:
    """The catalog's tables and annotations at `vid` (cached per catalog object and vid)."""
    cache = cache_of(cat)
    key = (catalog, vid)
    hit = cache.models.take(key)
    if hit is None:
        hit = cache.models.put(key, CatalogModel(cat, catalog, vid))
    return hit


def table_info(cat: CatalogAPI, name: Any, vid: int, what: str = "table") -> TableInfo:
    """The table `name` (catalog.namespace.table) at `vid`, from the cached model; an unknown or
    malformed name raises with did-you-mean over the lake's tables."""
    check_name(cat, name, vid, what)
    found = model(cat, name.split(".")[0], vid).tables.get(name)
    if found is None:
        raise unknown_table(cat, name, vid, what)
    return found


def tables_of(cat: CatalogAPI, vid: int, names: Iterable[str]) -> dict[str, TableInfo]:
    """The TableInfo of each existing table among `names` (others are left out)."""
    out = {}
    for n in set(names):
        parts = n.split(".")
        if len(parts) == 3:
            found = model(cat, parts[0], vid).tables.get(n)
            if found is not None:
                out[n] = found
    return out
