"""Grants on the HTTP surfaces (/v1, /ui, /iceberg): what a request's principal may see and change
(issue 48; the rules are semantic.grants, the MCP tools' check point is ToolContext).

    limit = Access.of(cat, scope_state)      # None: not limited (admin, auth off, no grant in the catalog)
    limit.may("select", "/acme/hr/salaries")
    check_write_paths(cat, state, paths)     # before a write set is recorded

Who is not limited: an in-process call (no state), the operator when auth is off (principal
"local"/None) and an admin token (`state["admin"]`). The latest grants decide at every vid.
Refusals of reads are the same as for a missing object (callers answer 404 / null / nothing).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from catalog_core import lake
from catalog_core.api import CatalogAPI, SnapshotRef
from catalog_core.errors import NoSuchTableError, NotFoundError, PermissionDeniedError
from catalog_core.model import Obj
from semantic.grants import GRANTS, GrantSet, changed, latest, principal_ids

__all__ = ["Access", "is_admin", "check_write_paths", "check_select", "visible", "visible_iter", "table_paths",
           "audit", "tables_of", "committed"]

_SEMANTIC = "/_semantic"


def is_admin(state: Mapping[str, Any] | None) -> bool:
    """Whether the request's principal is not limited by grants."""
    if state is None:
        return True
    name = state.get("principal")
    return name in (None, "", "local") or state.get("admin") is True


@dataclass(frozen=True)
class Access:
    """The grants that limit one principal."""

    grants: GrantSet
    ids: tuple[str, ...]
    name: str

    @classmethod
    def of(cls, cat: CatalogAPI, state: Mapping[str, Any] | None) -> Access | None:
        if is_admin(state):
            return None
        assert state is not None
        grants = latest(cat)
        if not grants.active:
            return None
        groups = state.get("groups") or ()
        name = str(state.get("principal"))
        return cls(grants, principal_ids(name, [g for g in groups if isinstance(g, str)]), name)

    def may(self, priv: str, path: str) -> bool:
        return self.grants.allows(self.ids, priv, path)

    def shows(self, path: str, tables: Iterable[str] = ()) -> bool:
        """Whether an object at `path` is visible: objects of tables it may describe; a catalog or
        namespace when it may describe it or one of `tables` (paths) below it; never a grant."""
        parts = path.strip("/").split("/")
        if GRANTS in parts:
            return False
        if self.may("describe", path):
            return True
        if len(parts) >= 3:
            return False
        prefix = "/" + "/".join(parts) + "/"
        return any(t.startswith(prefix) and self.may("describe", t) for t in tables)


def check_write_paths(cat: CatalogAPI, state: Mapping[str, Any] | None, paths: Iterable[str]) -> None:
    """Refuse a write set the principal may not write: grant objects are an admin's alone; under
    grants every other path needs `commit` (`annotate` for annotations) on it or above. A path the
    principal may not even describe is refused as a missing object."""
    paths = list(paths)
    if any(f"/{GRANTS}" in p for p in paths):
        changed(cat)  # the grants read for enforcement are read again after this write
    if is_admin(state):
        return
    for path in paths:
        if f"/{GRANTS}" in path:
            raise PermissionDeniedError(f"only an admin token changes grants ({path}); ask an admin to run "
                                        "`semcat grant ...` (docs/grants.md)", path=path)
    access = Access.of(cat, state)
    if access is None:
        return
    for path in paths:
        priv = "annotate" if _SEMANTIC in path else "commit"
        if access.may(priv, path):
            continue
        if not access.may("describe", path):
            raise NotFoundError(f"no object {path!r} to write: it does not exist, or no grant shows it to "
                                f"{access.name}", path=path)
        raise PermissionDeniedError(f"{access.name} holds no {priv} grant on {path}; an admin can grant it: "
                                    f"`semcat grant {priv} on NAME to user:NAME`", path=path, needed=priv)


def table_paths(cat: CatalogAPI) -> list[str]:
    """The paths of the tables at the latest vid (which catalogs and namespaces a limited caller sees)."""
    return [o.path for o in cat.query(lake.tables_query()) if lake.is_table(o.value)]


def visible(cat: CatalogAPI, state: Mapping[str, Any] | None, objs: list[Obj]) -> list[Obj]:
    """`objs` without those the principal may not see (all of them when not limited)."""
    limit = Access.of(cat, state)
    if limit is None or not objs:
        return objs
    tables = table_paths(cat)
    return [o for o in objs if limit.shows(o.path, tables)]


def visible_iter(cat: CatalogAPI, state: Mapping[str, Any] | None, objs: Iterator[Obj]) -> Iterator[Obj]:
    """`visible` for a stream of objects (a path query's)."""
    limit = Access.of(cat, state)
    if limit is None:
        return objs
    tables = table_paths(cat)
    return (o for o in objs if limit.shows(o.path, tables))


def check_select(cat: CatalogAPI, state: Mapping[str, Any] | None, table: str, vid: SnapshotRef) -> None:
    """Refuse a file plan of a table the principal may not select, in the engine's words for a table
    that does not exist (`lake.require_table`)."""
    limit = Access.of(cat, state)
    if limit is None or not isinstance(table, str) or table.count(".") != 2 or table.startswith("/"):
        return
    path = "/" + table.replace(".", "/")
    if not limit.may("select", path):
        raise NoSuchTableError(f"table {table!r} does not exist at vid {cat.resolve(vid)}; list tables with the path "
                               f"query {lake.tables_query(table.split('.')[0])}", name=table, path=path)


def audit(cat: CatalogAPI, state: Mapping[str, Any] | None, surface: str, action: str, *, tables: Iterable[str] = (),
          vid: int | None = None, rows: int | None = None, statement: str | None = None, ok: bool = True,
          error: str | None = None) -> None:
    """One audit entry (mcp_server.audit) for a request by its principal ("local" when auth is off)."""
    from mcp_server.audit import audit_log

    log = audit_log(cat)
    if log is None:
        return
    name = (state or {}).get("principal") or "local"
    try:
        log.record(principal=str(name), surface=surface, action=action, statement=statement, tables=tables, vid=vid,
                   rows=rows, ok=ok, error=error)
    except OSError as exc:
        logging.getLogger("uvicorn.error").error("semcat: cannot write the audit log %s: %s", log.path, exc)


def tables_of(paths: Iterable[str]) -> list[str]:
    """The dotted tables (or catalogs / namespaces) a write set's paths fall in, in order."""
    return list(dict.fromkeys(".".join(p.strip("/").split("/")[:3]) for p in paths if p.strip("/")))


def committed(cat: CatalogAPI, state: Mapping[str, Any] | None, paths: list[str], vid: int) -> None:
    """After a write set committed at `vid`: grants read again if it changed any, and its audit entry."""
    if any(f"/{GRANTS}" in p for p in paths):
        changed(cat)
    audit(cat, state, "v1", "commit", tables=tables_of(paths), vid=vid, rows=len(paths))


# ------------------------------------------------------------------ Iceberg REST hooks
def iceberg_refusal(cat: CatalogAPI, state: Mapping[str, Any] | None, prefix: str, namespace: list[str], table: str,
                    priv: str = "select") -> NotFoundError | None:
    """The Iceberg catalog's own refusal of a missing table (catalog_core.iceberg.rest._no_table, the
    same bytes) for a table the principal may not `priv`; None when it may (or is not limited)."""
    limit = Access.of(cat, state)
    if limit is None or len(namespace) != 1:
        return None
    name = f"{prefix}.{namespace[0]}.{table}"
    if limit.may(priv, f"/{prefix}/{namespace[0]}/{table}"):
        return None
    return NotFoundError(f"table {name!r} does not exist; list tables with GET /v1/{prefix}/namespaces/"
                         f"{namespace[0]}/tables", iceberg_type="NoSuchTableException", table=name)


def iceberg_tables(cat: CatalogAPI, state: Mapping[str, Any] | None, prefix: str, out: Any) -> Any:
    """A ListTablesResponse without the tables the principal may not describe."""
    limit = Access.of(cat, state)
    if limit is None or not isinstance(out, dict):
        return out
    ids = out.get("identifiers") or []
    return {**out, "identifiers": [i for i in ids if limit.may(
        "describe", "/" + "/".join([prefix, *i.get("namespace", []), i.get("name", "")]))]}
