"""`open_catalog(dir)`: open an existing catalog directory, refusing a directory that is not one
(a lake root holding catalogs, a typo) instead of creating an empty catalog there; `create=True`
makes a new one. `catalogs_below(dir)` names the catalogs under a directory, for that refusal.
`open_path_or_url` (exported as `catalog_core.open`) is the one entry point of every command: an
http(s) URL gives a client of that `semcat serve`, anything else a directory's embedded catalog.

A catalog directory is what `Catalog.open` lays out: `catalog/` (the Store: `rocksdb/` with its
`CURRENT` file, `semcat.lock`) and `warehouse/`."""

from __future__ import annotations

import os
from typing import Any

from catalog_core._engine.catalog import Catalog
from catalog_core.api import CatalogAPI
from catalog_core.errors import InvalidValueError, NotFoundError

__all__ = ["open_catalog", "open_path_or_url", "catalogs_below", "is_catalog_dir", "is_url"]


def is_url(path_or_url: str) -> bool:
    """`path_or_url` names a `semcat serve` (http:// or https://), not a directory."""
    return path_or_url.startswith(("http://", "https://"))


def open_path_or_url(path_or_url: str | os.PathLike[str], *, token: str | None = None, create: bool = False,
                     offer_create: bool = True, **kwargs: Any) -> CatalogAPI:
    """`catalog_core.open`: a client (`catalog_core.connect`) for an http(s) URL, with `token`;
    otherwise the catalog in that directory (`open_catalog`: an existing one, a new empty one with
    `create`; `offer_create` and `kwargs` go to it). `create` with a URL raises InvalidValueError: a
    server's catalog already exists."""
    if isinstance(path_or_url, str) and is_url(path_or_url):
        if create:
            raise InvalidValueError(f"{path_or_url!r} is a server's catalog, which exists already: drop create "
                                    "(--create makes a new catalog in a directory)", url=path_or_url)
        from catalog_core.remote.client import RemoteCatalog

        return RemoteCatalog(path_or_url, token=token, **kwargs)
    return open_catalog(os.fspath(path_or_url), create=create, offer_create=offer_create, **kwargs)


def is_catalog_dir(path: str) -> bool:
    """`path` holds a catalog made by `Catalog.open` (its RocksDB store has a CURRENT file)."""
    return os.path.isfile(os.path.join(path, "catalog", "rocksdb", "CURRENT"))


def catalogs_below(path: str, depth: int = 2) -> list[str]:
    """The catalog directories up to `depth` levels below `path` (not `path` itself), sorted, each
    spelled as `path` joined with its relative name (e.g. 'demo-data/stale'). A catalog's own
    subdirectories and hidden directories are not searched."""
    found: list[str] = []

    def walk(d: str, left: int) -> None:
        own = ("catalog", "warehouse") if is_catalog_dir(d) else ()  # a catalog's own store and files
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError:  # not a directory, no permission, gone
            return
        for e in entries:
            if e.name.startswith(".") or e.name in own or not e.is_dir():
                continue
            sub = os.path.join(d, e.name)
            if is_catalog_dir(sub):
                found.append(sub)
            elif left > 1:
                walk(sub, left - 1)

    if depth > 0:
        walk(path, depth)
    return sorted(found)


def _listing(found: list[str], limit: int = 8) -> str:
    more = f" and {len(found) - limit} more" if len(found) > limit else ""
    return ", ".join(found[:limit]) + more


def open_catalog(data_dir: str, *, create: bool = False, offer_create: bool = True, **kwargs: Any) -> Catalog:
    """The catalog in `data_dir` (`kwargs` go to `Catalog.open`: protocol, file_cache_mb).

    Without `create`, `data_dir` must already hold a catalog: a missing directory, or one that is
    not a catalog, raises NotFoundError naming the catalogs found below it (so a lake root such as
    'demo-data' points at 'demo-data/stale'), and so does an empty catalog (nothing ever
    committed) with catalogs below it, the trace of an earlier open of the wrong directory.
    With `create`, a new empty catalog is made if there is none. `offer_create=False` leaves the
    advice to pass --create out of those messages (for a command that has no such flag)."""
    if os.path.exists(data_dir) and not os.path.isdir(data_dir):
        raise InvalidValueError(f"{data_dir!r} is a file, not a catalog directory; pass --data with a catalog "
                                "directory", data_dir=data_dir)
    if create or is_catalog_dir(data_dir):
        cat = Catalog.open(data_dir, **kwargs)
        if create or cat.latest_vid > 0:
            return cat
        found = catalogs_below(data_dir)
        if not found:
            return cat
        cat.close()
        raise NotFoundError(
            f"the catalog in {data_dir!r} is empty (nothing was ever committed to it) and there are catalogs "
            f"below it: {_listing(found)}; pass one of them as --data (if the empty one was made by mistake, "
            f"remove {os.path.join(data_dir, 'catalog')} and {os.path.join(data_dir, 'warehouse')})"
            + (", or --create to use the empty one anyway" if offer_create else ""),
            data_dir=data_dir, catalogs=found)
    if not os.path.exists(data_dir):
        what, found = "the directory does not exist", []
    else:
        found = catalogs_below(data_dir)
        what = (f"catalogs below it: {_listing(found)}" if found else
                f"no {os.path.join(data_dir, 'catalog')} store, and no catalog in the directories below it")
    todo = "pass one of them as --data" if found else "pass --data with an existing catalog directory"
    if offer_create:
        todo += ", or --create to make a new empty catalog " + ("here" if os.path.exists(data_dir) else "there")
    raise NotFoundError(f"no catalog in {data_dir!r}: {what}; {todo}", data_dir=data_dir, catalogs=found)
