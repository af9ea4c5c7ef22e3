"""What the Iceberg REST catalog lets a write token do to storage (issue 46; docs/iceberg-rest.md,
Safety and bounds): where table locations may go, what a purge may delete, how large properties and
table metadata may grow.

    places = Places(roots=[warehouse, *declared], reserved=[metadata_root, data_dir], allowed=[warehouse])
    places.check(location, tables, name)       # InvalidValueError (400) naming the rule, else None
    places.make(location)                      # the location and its data/, metadata/ exist
    purge(cat, tpath, drop_vid, places)        # deletes what only this table's history references

Locations: a local path or file:// URI, absolute, without `.` or `..` segments, strictly inside a
storage root (the catalog's warehouse or a directory the operator declared), never equal to, inside
or around another table's location, never inside or around semcat's own directories (its metadata
root `_iceberg`, the data directory outside the warehouse). Compared as real paths (symlinks resolved).

A purge deletes the files the dropped table's last lifetime references (its data file leaves, and
the manifest lists and manifests its REST commits added inside its location), minus every file any
other table references at any point of the catalog's history, and only inside the storage roots; then
the directories left empty under its location.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from typing import Any

from catalog_core.api import CatalogAPI
from catalog_core.errors import InvalidValueError

__all__ = ["Places", "local_path", "purge", "check_properties", "check_table_size", "MAX_KEY_BYTES",
           "MAX_VALUE_BYTES", "MAX_TABLE_BYTES", "MAX_NAMESPACE_BYTES", "request_digest", "check_namespace_size"]

MAX_KEY_BYTES = 1024                 # a property name
MAX_VALUE_BYTES = 64 * 1024          # a property value
MAX_TABLE_BYTES = 1024 * 1024        # a table's properties, schema, partition spec, sort orders and refs (JSON)
MAX_NAMESPACE_BYTES = 1024 * 1024    # a namespace's properties (JSON)


def _bad(msg: str, **details: Any) -> InvalidValueError:
    return InvalidValueError(msg, iceberg_type="BadRequestException", **details)


def local_path(location: str, base: str | None = None) -> str | None:
    """The local absolute path of a path or file:// URI (relative: against `base`), normalized
    (not resolved); None for another scheme or a relative path without `base`."""
    path = location
    if path.startswith("file:"):   # file:///x, file://host/x and Hadoop's file:/x
        path = path[len("file:"):]
        if path.startswith("//"):
            path = path[2:] if path.startswith("///") else "/" + path[2:].partition("/")[2]
    elif "://" in path:
        return None
    if not os.path.isabs(path):
        if base is None:
            return None
        path = os.path.join(base, path)
    return os.path.normpath(path)


def _under(path: str, root: str) -> bool:
    """`path` is `root` or below it."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class Places:
    """Where table locations may go (module docstring). `roots`: the storage roots (the first is the
    warehouse, where default locations go); `reserved`: semcat's own directories; `allowed`:
    directories inside a reserved one that are not reserved (the warehouse inside the data dir)."""

    def __init__(self, roots: Iterable[str], reserved: Iterable[str] = (), allowed: Iterable[str] = ()) -> None:
        self.roots = [os.path.realpath(r) for r in roots if r]
        self.reserved = [os.path.realpath(r) for r in reserved if r]
        self.allowed = [os.path.realpath(r) for r in allowed if r]

    def describe(self) -> str:
        return ", ".join(self.roots)

    def _real(self, location: str) -> str | None:
        path = local_path(location)
        return os.path.realpath(path) if path is not None else None

    def _own_dir(self, real: str) -> str | None:
        """The reserved directory `real` lies in or contains, if any."""
        for r in self.reserved:
            if _under(r, real):
                return r
            if _under(real, r) and not any(_under(real, a) and _under(a, r) and a != r for a in self.allowed):
                return r
        return None

    def inside(self, path: str) -> bool:
        """A real path semcat may delete files at: inside a root and in none of semcat's own directories."""
        return any(_under(path, r) and path != r for r in self.roots) and self._own_dir(path) is None

    def check(self, location: str, tables: Iterable[tuple[str, str]], name: str) -> None:
        """Refuse `location` for table `name` unless it obeys every rule; `tables`: (name, location)
        of the catalog's tables (`name`'s own is skipped)."""
        where = f"choose a directory strictly inside a storage root ({self.describe()}) that no other table uses, " \
                "or omit 'location' for the default"
        if not isinstance(location, str) or not location.strip() or "\x00" in location:
            raise _bad(f"table location {location!r} is empty; {where}")
        if "://" in location and not location.startswith("file:"):
            raise _bad(f"table location {location[:200]!r}: semcat hands engines local directories (a path or "
                       f"file:// URI); {where}", location=location)
        raw = local_path(location)
        if raw is None:
            raise _bad(f"table location {location[:200]!r} is relative; {where}", location=location)
        segments = location.removeprefix("file:").split("/")
        if any(s in (".", "..") for s in segments):
            raise _bad(f"table location {location[:200]!r} has a '.' or '..' segment; write the directory out "
                       f"without them ({where})", location=location)
        real = os.path.realpath(raw)
        if not any(_under(real, r) and real != r for r in self.roots):
            what = "is a storage root itself" if real in self.roots else "is outside the storage roots"
            raise _bad(f"table location {location[:200]!r} {what}: {where}. An operator adds storage roots with "
                       "`semcat serve --iceberg-root DIR` (or SEMCAT_ICEBERG_ROOTS)", location=location,
                       roots=self.roots)
        probe = real
        while not os.path.exists(probe) and os.path.dirname(probe) != probe:
            probe = os.path.dirname(probe)
        if not os.path.isdir(probe):
            raise _bad(f"table location {location[:200]!r}: {probe} is a file, not a directory; {where}",
                       location=location)
        own = self._own_dir(real)
        if own is not None:
            raise _bad(f"table location {location[:200]!r} overlaps semcat's own directory {own} (its catalog and "
                       f"Iceberg metadata files); {where}", location=location)
        for other, loc in tables:
            if other == name or not isinstance(loc, str) or not loc:
                continue
            oreal = self._real(loc)
            if oreal is None:
                continue
            if _under(real, oreal) or _under(oreal, real):
                how = "is" if real == oreal else "is inside" if _under(real, oreal) else "contains"
                raise _bad(f"table location {location[:200]!r} {how} the location of table {other} ({loc}): each "
                           f"table has a directory of its own, so that a purge never touches another table's files; "
                           f"{where}", location=location, table=other)

    @staticmethod
    def make(location: str) -> None:
        """Create the location with `data/` and `metadata/` (engines such as DuckDB do not create
        directories); a location that is not a local path is left alone."""
        path = local_path(location)
        if path is None:
            return
        try:
            for sub in ("data", "metadata"):
                os.makedirs(os.path.join(path, sub), exist_ok=True)
        except OSError as exc:
            raise _bad(f"cannot create the table location {location[:200]!r} ({exc.strerror or exc}); choose a "
                       "directory semcat can create", location=location) from None


# ---------------------------------------------------------------- purge

def _lifetime_start(cat: CatalogAPI, tpath: str, before: int) -> int:
    """The vid at which the table at `tpath` was last created before vid `before`."""
    born = 0
    prev_removed = True
    for v in cat.history(tpath):
        if v.vid >= before:
            break
        if v.value is None:
            prev_removed = True
        elif prev_removed:
            born, prev_removed = v.vid, False
    return born


def _table_of(path: str) -> str | None:
    parts = path.strip("/").split("/")
    if len(parts) < 4 or "_semantic" in parts:
        return None
    return "/" + "/".join(parts[:3])


def purge(cat: CatalogAPI, tpath: str, location: str | None, drop_vid: int, places: Places,
          read_list: Any = None) -> list[str]:
    """Delete the files only the table dropped at `drop_vid` references (module docstring); returns
    the deleted paths. `read_list(path)`: the manifest paths of a manifest list (pyiceberg's reader)."""
    born = _lifetime_start(cat, tpath, drop_vid)
    base = local_path(location) if location else None
    mine, others, lists = _references(cat, tpath, base, born, drop_vid)
    if base is not None:
        mine |= _metadata_files(lists, base, read_list)
    deleted: list[str] = []
    others_real = {os.path.realpath(p) for p in others}
    for p in sorted(mine - others):
        real = os.path.realpath(p)
        if real in others_real or not places.inside(real) or not os.path.isfile(real):
            continue
        try:
            os.remove(real)
            deleted.append(p)
        except OSError:
            continue
    if base is not None and places.inside(os.path.realpath(base)):
        _remove_empty_dirs(os.path.realpath(base))
    return deleted


def _references(cat: CatalogAPI, tpath: str, base: str | None, born: int,
                drop_vid: int) -> tuple[set[str], set[str], list[str]]:
    """(files the table's lifetime [born, drop_vid) references, files any other table or lifetime
    references, the manifest lists its REST commits added), read from the whole commit log."""
    mine: set[str] = set()
    others: set[str] = set()
    lists: list[str] = []
    leaves: set[str] = set()
    for c in cat.commits():
        rest = c.meta.get("iceberg_rest") if isinstance(c.meta, dict) else None
        for t, entry in (rest.items() if isinstance(rest, dict) else ()):
            named = [x for x in (entry.get("manifest_lists") or ()) if isinstance(x, str)] if isinstance(entry, dict) else []
            if t == tpath and born <= c.vid < drop_vid:
                lists.extend(named)
            else:
                others.update(p for p in map(local_path, named) if p)
        leaves.update(p for p in c.paths if _table_of(p) is not None)
    for leaf in leaves:
        owner = _table_of(leaf)
        for v in cat.history(leaf):
            value = v.value
            if not isinstance(value, dict) or value.get("obj_type") != "file" or not isinstance(value.get("path"), str):
                continue
            p = local_path(value["path"], base if owner == tpath else None)
            if p is not None:
                (mine if owner == tpath and born <= v.vid < drop_vid else others).add(p)
    return mine, others, lists


def _metadata_files(lists: list[str], base: str, read_list: Any) -> set[str]:
    """The manifest lists inside `base` and the manifests inside `base` they name."""
    out: set[str] = set()
    for lst in lists:
        p = local_path(lst)
        if p is None or not _under(p, base):
            continue
        out.add(p)
        if read_list is not None and os.path.isfile(p):
            try:
                out.update(m for m in (local_path(x) for x in read_list(p)) if m and _under(m, base))
            except Exception:  # noqa: BLE001 - an unreadable manifest list: its manifests stay
                pass
    return out


def _remove_empty_dirs(top: str) -> None:
    for d, _subs, _files in os.walk(top, topdown=False):
        try:
            os.rmdir(d)        # only succeeds when empty
        except OSError:
            pass


# ---------------------------------------------------------------- bounds

def check_properties(props: Mapping[str, Any], what: str) -> None:
    """Property names at most MAX_KEY_BYTES and values at most MAX_VALUE_BYTES (UTF-8)."""
    for k, v in props.items():
        kb = len(str(k).encode("utf-8", "surrogatepass"))
        if kb > MAX_KEY_BYTES:
            raise _bad(f"{what} name {str(k)[:60]!r}... is {kb} bytes; names are at most {MAX_KEY_BYTES} bytes",
                       limit=MAX_KEY_BYTES)
        vb = len(str(v).encode("utf-8", "surrogatepass"))
        if vb > MAX_VALUE_BYTES:
            raise _bad(f"{what} {str(k)[:60]!r} is {vb} bytes; a value is at most {MAX_VALUE_BYTES} bytes (64 KiB): "
                       "keep large documents in files and put their path in the property", limit=MAX_VALUE_BYTES)


def check_namespace_size(props: Mapping[str, Any]) -> None:
    size = len(json.dumps(props, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    if size > MAX_NAMESPACE_BYTES:
        raise _bad(f"the namespace's properties would be {size} bytes; a namespace holds at most "
                   f"{MAX_NAMESPACE_BYTES} bytes (1 MiB) of properties: remove some", limit=MAX_NAMESPACE_BYTES)


def check_table_size(md: Any, name: str) -> None:
    """A table's stored metadata (properties, current schema, partition specs, sort orders, refs;
    not its snapshots) at most MAX_TABLE_BYTES as JSON."""
    parts = [json.dumps(dict(md.properties), ensure_ascii=False), md.schema().model_dump_json(),
             *(s.model_dump_json() for s in md.partition_specs), *(o.model_dump_json() for o in md.sort_orders),
             json.dumps({k: r.model_dump_json() for k, r in md.refs.items()})]
    size = sum(len(p.encode("utf-8", "surrogatepass")) for p in parts)
    if size > MAX_TABLE_BYTES:
        raise _bad(f"table {name}'s metadata would be {size} bytes (properties, schema, partition specs, sort orders "
                   f"and refs); a table holds at most {MAX_TABLE_BYTES} bytes (1 MiB): remove properties or tags",
                   limit=MAX_TABLE_BYTES)


def request_digest(body: Any) -> str:
    """A digest of a request body as JSON (key order ignored): what an Idempotency-Key is bound to."""
    import hashlib

    text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]
