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

import functools
import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from catalog_core import lake
from catalog_core.api import CatalogAPI, SnapshotRef
from catalog_core.errors import CatalogError, NoSuchTableError, NotFoundError, PermissionDeniedError
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

    def require(self, priv: str, path: str) -> None:
        """Refuse `priv` on `path`: a missing object when the principal may not even describe it,
        else PermissionDeniedError naming the grant to ask for."""
        if self.may(priv, path):
            return
        if not self.may("describe", path):
            raise NotFoundError(f"no object {path!r} to write: it does not exist, or no grant shows it to "
                                f"{self.name}", path=path)
        name = ".".join(path.strip("/").split("/")[:3])
        raise PermissionDeniedError(f"{self.name} holds no {priv} grant on {path}; an admin can grant it: "
                                    f"`semcat grant {priv} on {name} to {self.ids[0]}`", path=path, needed=priv)

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


_REVIEW = f"{_SEMANTIC}/review."  # a review decision record or a stored scan (semantic.review)


def needed(paths: Iterable[str]) -> dict[str, str]:
    """The privilege each path of a write set needs: `review` for a review record (a decision or a
    scan, `_semantic/review.*`) and for the annotations written beside one in the same write set (an
    accept writes the annotation it accepts); `annotate` for other annotations; `commit` for the rest.
    Grant objects need an admin (`check_write_paths`)."""
    paths = list(paths)
    reviewed = {p.split(_REVIEW, 1)[0] for p in paths if _REVIEW in p}
    out: dict[str, str] = {}
    for p in paths:
        if _SEMANTIC + "/" in p or p.endswith(_SEMANTIC):
            out[p] = "review" if p.split(_SEMANTIC, 1)[0] in reviewed else "annotate"
        else:
            out[p] = "commit"
    return out


def check_write_paths(cat: CatalogAPI, state: Mapping[str, Any] | None, paths: Iterable[str]) -> None:
    """Refuse a write set the principal may not write: grant objects are an admin's alone; under
    grants every other path needs what `needed` says on it or above. A path the principal may not
    even describe is refused as a missing object."""
    paths = list(paths)
    if any(f"/{GRANTS}" in p for p in paths):
        changed(cat)  # the grants read for enforcement are read again after this write
    if is_admin(state):
        return
    for path in paths:
        if f"/{GRANTS}" in path:
            raise PermissionDeniedError(f"only an admin token changes grants ({path}); ask an admin to run "
                                        "`semcat grant ...` (docs/grants.md)", path=path, needed="admin")
    access = Access.of(cat, state)
    if access is None:
        return
    for path, priv in needed(paths).items():
        access.require(priv, path)


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


# ------------------------------------------------------------------ reads by table name (/v1/semantic, /ui)
def visible_tables(cat: CatalogAPI, limit: Access, vid: SnapshotRef) -> list[str]:
    """The dotted names of the tables at `vid` the principal may describe."""
    return [lake.name_of(o.path) for o in cat.query(lake.tables_query(), vid=vid)
            if lake.is_table(o.value) and limit.may("describe", o.path)]


def missing_table(name: str, vid: int, visible: Iterable[str]) -> CatalogError:
    """The refusal of a table that does not exist, suggesting only tables the principal may see (the
    one refusal for a missing and an ungranted table on /v1/semantic and /ui)."""
    from semantic.errors import UnknownTableError, did_you_mean, suggest

    close = did_you_mean(name, list(visible))
    return UnknownTableError(f"table {name!r} does not exist at vid {vid}" + suggest(close), did_you_mean=close)


def require_table(cat: CatalogAPI, state: Mapping[str, Any] | None, name: str | None, vid: SnapshotRef = None,
                  priv: str = "describe") -> Access | None:
    """Under grants: refuse a table the principal may not `priv` (or that does not exist) as a
    missing one; the principal's limits (None: not limited)."""
    limit = Access.of(cat, state)
    if limit is None or name is None:
        return limit
    at = cat.resolve(vid)
    seen = visible_tables(cat, limit, at)
    if name not in seen or not limit.may(priv, lake.object_path(name)):
        raise missing_table(name, at, seen)
    return limit


def table_of_path(path: str) -> str:
    """The catalog, namespace or table path a path falls in (its first three levels)."""
    return "/" + "/".join(path.strip("/").split("/")[:3])


# ------------------------------------------------------------------ the commit log and history
HIDDEN_MESSAGE = "(message hidden: this commit also wrote objects you may not see)"


def _hidden_names(limit: Access, cat: CatalogAPI) -> tuple[list[str], list[str]]:
    """(dotted names, short names) of the tables at the latest vid the principal may not see."""
    hidden = [p for p in table_paths(cat) if not limit.may("describe", p)]
    return [lake.name_of(p) for p in hidden], [p.rsplit("/", 1)[-1] for p in hidden]


def commits_view(cat: CatalogAPI, state: Mapping[str, Any] | None, commits: list[Any]) -> list[dict[str, Any]]:
    """The commit log as the principal may see it. A commit that wrote an object it may not see, or
    whose message names a table it may not see (a relationship to it, say), is redacted: its message
    is replaced by HIDDEN_MESSAGE, its meta dropped, and it lists only the paths it may see that name
    no such table (`relationship.salaries`); a commit left with no path is left out."""
    limit = Access.of(cat, state)
    if limit is None:
        return [c.to_dict() for c in commits]
    tables = table_paths(cat)
    dotted, short = _hidden_names(limit, cat)
    out = []
    for c in commits:
        shown = [p for p in c.paths if limit.shows(p, tables)]
        named = any(n in c.message for n in dotted)
        if named or len(shown) < len(c.paths):
            shown = [p for p in shown if not any(s in p.rsplit("/", 1)[-1] for s in short if f"{_SEMANTIC}/" in p)]
        if not shown:
            continue
        d = c.to_dict()
        if named or len(shown) < len(c.paths):
            d.update(paths=shown, message=HIDDEN_MESSAGE, meta={})
        out.append(d)
    return out


def shows_path(cat: CatalogAPI, state: Mapping[str, Any] | None, path: str) -> bool:
    """Whether the principal may see the object at `path` (always when not limited)."""
    limit = Access.of(cat, state)
    return limit is None or limit.shows(path, table_paths(cat))


def changes_view(cat: CatalogAPI, state: Mapping[str, Any] | None, changes: Iterator[Any]) -> Iterator[Any]:
    """A diff's changes without those of objects the principal may not see."""
    import json

    limit = Access.of(cat, state)
    if limit is None:
        return changes
    tables = table_paths(cat)
    dotted, _short = _hidden_names(limit, cat)

    def names_hidden(ch: Any) -> bool:  # an annotation of a visible table about a hidden one (a relationship)
        if f"{_SEMANTIC}/" not in ch.path or not dotted:
            return False
        text = json.dumps([ch.before, ch.after], default=str)
        return any(n in text for n in dotted)

    return (ch for ch in changes if limit.shows(ch.path, tables) and not names_hidden(ch))


def check_clone(cat: CatalogAPI, state: Mapping[str, Any] | None, src: str, dst: str) -> None:
    """A clone reads everything under `src` (it needs `select` there: it copies the file lists) and
    writes `dst` (`commit`); a `src` the principal may not describe is refused as a missing one."""
    limit = Access.of(cat, state)
    if limit is None:
        return
    if not isinstance(src, str) or not limit.shows(src, table_paths(cat)):
        raise NotFoundError(f"no object {src!r} to clone: it does not exist, or no grant shows it to {limit.name}",
                            path=src)
    limit.require("select", src)
    check_write_paths(cat, state, [dst])


def check_explain(cat: CatalogAPI, state: Mapping[str, Any] | None) -> None:
    """Under grants a query's work counters are an admin's: they count objects the principal may not
    see (a `matched` of 1 would say that a table exists)."""
    if Access.of(cat, state) is not None:
        raise PermissionDeniedError("under grants, explain is for admin tokens: its counters count objects you "
                                    "may not see; run the query itself (POST /v1/query)", needed="admin")


# ------------------------------------------------------------------ SQL, metrics and findings by table
# What reads DuckDB's own catalog, where every table of the snapshot is a view (granted or not):
# under grants such a statement is refused (search_tables and describe_table say what exists).
# Judged on the parsed statement (sqlglot, DuckDB dialect), never on its words: a string literal, an
# alias or a column that merely contains one of these names reads nothing.
_CATALOG_SCHEMAS = frozenset({"information_schema", "pg_catalog"})
_CATALOG_DATABASES = frozenset({"system", "temp"})
_CATALOG_PREFIXES = ("duckdb_", "pg_", "sqlite_")  # DuckDB's catalog views: duckdb_tables, pg_class, ...
# table functions that read DuckDB's catalog, or any table by a name in a string
_CATALOG_TABLE_FUNCTIONS = frozenset({"summary", "query", "query_table", "sql_auto_complete", "which_secret"})
_CATALOG_TABLE_PREFIXES = ("duckdb_", "pragma_")
# scalar functions that answer about DuckDB's catalog (pg_get_viewdef, has_table_privilege,
# pg_table_is_visible, current_schemas, ...; not pg_typeof or pg_size_pretty)
_CATALOG_SCALARS = frozenset({"col_description", "obj_description", "shobj_description", "current_schemas"})
_CATALOG_COMMANDS = frozenset({"SHOW", "DESCRIBE", "DESC", "SUMMARIZE", "PRAGMA", "CALL"})


INTROSPECTION_REFUSED = ("under grants, a statement that reads DuckDB's catalog (information_schema, duckdb_*(), "
                         "pg_catalog, SHOW, DESCRIBE, PRAGMA) is refused: it would list every table; "
                         "search_tables and describe_table show the tables you may read and their columns")
UNREADABLE_REFUSED = ("under grants, a statement the grant check cannot parse is refused: which tables it reads "
                      "cannot be told; write it as one plain SELECT (WITH, joins and subqueries are fine)")


@dataclass(frozen=True)
class Reads:
    """What a statement reads, from its parse: the table names as written (`t`, `ns.t`, `cat.ns.t`;
    CTE names excluded) and whether it reads DuckDB's catalog."""

    tables: tuple[tuple[str, ...], ...]
    catalog: bool


def _func_name(f: Any) -> str:
    from sqlglot import exp

    return str(f.name if isinstance(f, exp.Anonymous) else f.sql_name()).lower()


def _reads_of(tree: Any, out: dict[tuple[str, ...], None]) -> bool:
    """Add the tables `tree` reads to `out`; whether it reads DuckDB's catalog (raises ValueError
    for a statement whose reads cannot be told)."""
    import sqlglot
    from sqlglot import exp

    if isinstance(tree, (exp.Show, exp.Pragma, exp.Describe)):
        return True
    if isinstance(tree, exp.Command):  # what sqlglot does not parse: EXPLAIN's statement is parsed on its own
        word = str(tree.this).upper()
        if word == "EXPLAIN":
            inner = tree.expression.name if isinstance(tree.expression, exp.Expression) else str(tree.expression)
            inner = inner.strip()
            if inner[:7].upper() == "ANALYZE":
                inner = inner[7:]
            return any([_reads_of(t, out) for t in sqlglot.parse(inner, read="duckdb") if t is not None])
        if word in _CATALOG_COMMANDS:
            return True
        raise ValueError(f"{word} statement")
    catalog = False
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    made = tree.this if isinstance(tree, exp.Create) else None  # what a CREATE makes is not read
    for t in tree.find_all(exp.Table):
        if made is not None and (t is made or t.parent is made):
            continue
        if isinstance(t.this, exp.Func):  # a table function
            name = _func_name(t.this)
            catalog |= name in _CATALOG_TABLE_FUNCTIONS or name.startswith(_CATALOG_TABLE_PREFIXES)
            continue
        parts = tuple(p for p in (t.catalog, t.db, t.name) if p)
        if parts and not (len(parts) == 1 and parts[0].lower() in ctes):
            out[parts] = None
    for f in tree.find_all(exp.Func):
        if isinstance(f.parent, exp.Table):
            continue
        name = _func_name(f)
        catalog |= name in _CATALOG_SCALARS or name.startswith("pg_get_") or name.endswith("_is_visible") or (
            name.startswith("has_") and name.endswith("_privilege"))
    return catalog


@functools.lru_cache(maxsize=1024)
def statement_reads(sql: str) -> Reads:
    """What `sql` reads (every statement of it), parsed once per text; ValueError when it does not
    parse (or is a statement whose reads cannot be told)."""
    import sqlglot

    out: dict[tuple[str, ...], None] = {}
    try:
        trees = sqlglot.parse(sql, read="duckdb")
    except sqlglot.errors.SqlglotError as exc:
        raise ValueError(str(exc).splitlines()[0] if str(exc) else "does not parse") from None
    catalog = any([_reads_of(t, out) for t in trees if t is not None])
    return Reads(tuple(out), catalog)


def _is_catalog_name(parts: tuple[str, ...]) -> bool:
    """Whether a table name that is no catalog table names one of DuckDB's catalog views."""
    low = [p.lower() for p in parts]
    return (len(low) >= 2 and low[-2] in _CATALOG_SCHEMAS) or (len(low) == 3 and low[0] in _CATALOG_DATABASES) \
        or low[-1].startswith(_CATALOG_PREFIXES) or low[-1] in _CATALOG_SCHEMAS


def resolve(parts: tuple[str, ...], lower: Mapping[str, str], home: str | None) -> list[str]:
    """The catalog tables (dotted names) a table name may read, as DuckDB resolves it: `c.n.t` is
    itself; `n.t` is schema `n` of the home catalog (the lake's only catalog, which the SQL layer
    USEs) or table `t` of catalog `n`'s schema `main`; `t` is the home catalog's `main.t`. Case
    does not matter (DuckDB's identifiers are case-insensitive, quoted or not). `lower`: every
    table's dotted name in lower case -> the name."""
    low = tuple(p.lower() for p in parts)
    if len(low) >= 3:
        cands = [".".join(low[-3:])] if len(low) == 3 else []
    elif len(low) == 2:
        cands = ([f"{home}.{low[0]}.{low[1]}"] if home else []) + [f"{low[0]}.main.{low[1]}"]
    else:
        cands = [f"{home}.main.{low[0]}"] if home else []
    return [lower[c] for c in cands if c in lower]


def sql_refusal(sql: str, every: Mapping[str, Any], allowed: Any) -> str | None:
    """The name to refuse as a missing table (or INTROSPECTION_REFUSED / UNREADABLE_REFUSED) when
    `sql` reads a table `allowed(path)` refuses, reads DuckDB's catalog, or names a table that does
    not exist (the engine would refuse it, and its own error could suggest a hidden table's name);
    None when every table it reads is allowed. `every`: every table at the vid by dotted name
    (objects with `.path`). From the parsed statement (`statement_reads`), names resolved as DuckDB
    resolves them (`resolve`); every catalog table is a DuckDB view of its own files, so a
    statement reads no table it does not name."""
    try:
        reads = statement_reads(sql)
    except ValueError:
        return UNREADABLE_REFUSED
    if reads.catalog:
        return INTROSPECTION_REFUSED
    lower = {n.lower(): n for n in every}
    homes = {n.split(".", 1)[0] for n in lower}
    home = next(iter(homes)) if len(homes) == 1 else None
    for parts in reads.tables:
        hits = resolve(parts, lower, home)
        if not hits:
            if _is_catalog_name(parts):
                return INTROSPECTION_REFUSED
            return ".".join(parts)
        if not all(allowed(every[h].path) for h in hits):
            return ".".join(parts)
    return None


def require_sql(cat: CatalogAPI, state: Mapping[str, Any] | None, sql: str, vid: SnapshotRef = None,
                priv: str = "select") -> None:
    """Under grants: refuse a statement that reads a table the principal may not `priv`, as a missing
    table (`require_table`'s refusal)."""
    limit = Access.of(cat, state)
    if limit is None or not isinstance(sql, str):
        return
    at = cat.resolve(vid)
    every = {lake.name_of(o.path): o for o in cat.query(lake.tables_query(), vid=at) if lake.is_table(o.value)}
    bad = sql_refusal(sql, every, lambda p: limit.may(priv, p))
    if bad == INTROSPECTION_REFUSED:
        raise PermissionDeniedError(INTROSPECTION_REFUSED, rule="introspection_under_grants")
    if bad == UNREADABLE_REFUSED:
        raise PermissionDeniedError(UNREADABLE_REFUSED, rule="unparsed_under_grants")
    if bad is not None:
        raise missing_table(bad, at, [n for n, o in every.items() if limit.may("describe", o.path)])


def table_of_name(target: str) -> str:
    """`acme.core.orders.amount` -> `acme.core.orders` (a finding's or annotation's target)."""
    return ".".join(target.split(".")[:3])


def join_path(cat: CatalogAPI, state: Mapping[str, Any] | None, a: str, b: str, vid: SnapshotRef,
              depth: str) -> Any:
    """`sm.join_path` through the tables the principal may see only (an ungranted table on the way is
    as if it did not exist: the path goes around it, or there is none)."""
    import semantic as sm

    limit = Access.of(cat, state)
    if limit is None:
        return sm.join_path(cat, a, b, snapshot=vid, depth=depth)
    seen = set(visible_tables(cat, limit, vid))
    return sm.join_path(cat, a, b, snapshot=vid, depth=depth, usable=seen.__contains__)


def require_metric(cat: CatalogAPI, state: Mapping[str, Any] | None, metric: str, vid: int) -> None:
    """Under grants: a metric of a table the principal may not select is refused as an unknown one,
    naming only metrics it may use (one message for both)."""
    import semantic as sm
    from semantic.errors import did_you_mean, suggest

    limit = Access.of(cat, state)
    if limit is None or not isinstance(metric, str):
        return
    mine = [m.qualified for m in sm.metrics(cat, None, snapshot=vid) if limit.may("select", lake.object_path(m.table))]
    if metric in mine or any(q.rsplit(".", 1)[-1] == metric for q in mine):
        return
    close = did_you_mean(metric, mine + [q.rsplit(".", 1)[-1] for q in mine])
    raise NotFoundError(f"unknown metric {metric!r}" + (suggest(close) if close else
                        "; GET /v1/semantic/metrics lists the metrics"), metric=metric)


# ------------------------------------------------------------------ review decisions (/ui; /v1 by `needed`)
def no_item(item_id: str, vid: int) -> NotFoundError:
    """Under grants, the one refusal of a review item that is not open or is on a table the
    principal may not see (no close ids: they could be another table's)."""
    return NotFoundError(f"no open review item {item_id} at vid {vid} (decided already, or never raised); list the "
                         "open ones with `semcat review list`", item=item_id)


def check_review(cat: CatalogAPI, state: Mapping[str, Any] | None, tables: Iterable[str],
                 hidden: CatalogError) -> None:
    """Under grants: deciding (or scanning) items of `tables` needs `review` on each; `hidden` is
    raised when the principal may not even describe one of them (as for an item that is not there)."""
    limit = Access.of(cat, state)
    if limit is None:
        return
    paths = [lake.object_path(t) for t in dict.fromkeys(tables)]
    if any(not limit.may("describe", p) for p in paths):
        raise hidden
    for p in paths:
        limit.require("review", p)


def review_items_view(cat: CatalogAPI, state: Mapping[str, Any] | None, items: list[Any]) -> list[Any]:
    """Review items (or findings: `.target`) without those of tables the principal may not see."""
    limit = Access.of(cat, state)
    if limit is None:
        return items
    return [i for i in items if limit.may("describe", lake.object_path(table_of_name(
        getattr(i, "table", None) or i.target)))]


# ------------------------------------------------------------------ Iceberg REST: writes and namespaces
def _iceberg_no_namespace(prefix: str, ns: str) -> NotFoundError:
    """catalog_core.iceberg.rest._no_namespace, the same bytes."""
    return NotFoundError(f"namespace {ns!r} does not exist in warehouse {prefix!r}; list namespaces with "
                         f"GET /v1/{prefix}/namespaces or create it with POST /v1/{prefix}/namespaces",
                         iceberg_type="NoSuchNamespaceException", namespace=ns)


def _iceberg_no_table(name: str) -> NotFoundError:
    prefix, ns, _t = name.split(".")
    return NotFoundError(f"table {name!r} does not exist; list tables with GET /v1/{prefix}/namespaces/{ns}/tables",
                         iceberg_type="NoSuchTableException", table=name)


def _forbidden(limit: Access, priv: str, what: str) -> PermissionDeniedError:
    return PermissionDeniedError(f"{limit.name} holds no {priv} grant on {what}; an admin can grant it: "
                                 f"`semcat grant {priv} on {what} to {limit.ids[0]}`",
                                 iceberg_type="ForbiddenException", needed=priv)


def _ident(v: Any) -> tuple[list[str], str] | None:
    if isinstance(v, dict) and isinstance(v.get("namespace"), list) and isinstance(v.get("name"), str):
        return [str(p) for p in v["namespace"]], v["name"]
    return None


def iceberg_write_refusal(cat: CatalogAPI, state: Mapping[str, Any] | None, params: Mapping[str, Any],
                          args: tuple[Any, ...]) -> CatalogError | None:
    """Under grants, the refusal of an Iceberg REST write (None: allowed). Creating, committing,
    dropping, renaming and registering tables need `commit` on the table (its namespace for a new
    one); creating, dropping and changing namespaces need `admin` on the namespace (the catalog for
    a new one). A table or namespace the principal may not see is refused as a missing one."""
    limit = Access.of(cat, state)
    if limit is None:
        return None
    prefix = str(params.get("prefix") or "")
    tables = table_paths(cat)

    def table(nsp: list[str], name: str, priv: str = "commit") -> CatalogError | None:
        dotted = ".".join([prefix, *nsp, name])
        path = "/" + "/".join([prefix, *nsp, name])
        if len(nsp) != 1 or limit.may(priv, path):
            return None
        return _forbidden(limit, priv, dotted) if limit.may("describe", path) else _iceberg_no_table(dotted)

    def namespace(nsp: list[str], priv: str) -> CatalogError | None:
        path = "/" + "/".join([prefix, *nsp])
        if limit.may(priv, path):
            return None
        if limit.shows(path, tables):
            return _forbidden(limit, priv, ".".join([prefix, *nsp]))
        return _iceberg_no_namespace(prefix, ".".join(nsp))

    ns_text = params.get("namespace")
    nsp = str(ns_text).split("\x1f") if ns_text is not None else None
    if "table" in params and nsp is not None:  # commit_table, drop_table
        return table(nsp, str(params["table"]))
    if nsp is not None:
        body = args[-1] if args and isinstance(args[-1], dict) else None
        if body is not None and ("name" in body or "metadata-location" in body):  # create_table, register_table
            return namespace(nsp, "commit")
        return namespace(nsp, "admin")  # drop_namespace, update_namespace_properties
    body = next((a for a in args if isinstance(a, dict)), None)
    if body is not None and ({"source", "destination", "table-changes"} & body.keys()):
        return _iceberg_body_refusal(body, table, namespace)  # rename_table, commit_transaction
    return None if limit.may("admin", f"/{prefix}") else _forbidden(limit, "admin", prefix)  # create_namespace


def _iceberg_body_refusal(body: dict[str, Any], table: Any, namespace: Any) -> CatalogError | None:
    """rename_table: commit on the source table and the destination namespace; commit_transaction:
    commit on every table it changes."""
    idents = [(_ident(body.get("source")), False), (_ident(body.get("destination")), True)]
    idents += [(_ident(c.get("identifier")) if isinstance(c, dict) else None, False)
               for c in body.get("table-changes") or ()]
    for ident, is_new in idents:
        if ident is None:
            continue
        bad = namespace(ident[0], "commit") if is_new else table(*ident)
        if bad is not None:
            return bad  # type: ignore[no-any-return]
    return None


def iceberg_namespaces(cat: CatalogAPI, state: Mapping[str, Any] | None, prefix: str, out: Any) -> Any:
    """A ListNamespacesResponse with only the namespaces holding something the principal may see."""
    limit = Access.of(cat, state)
    if limit is None or not isinstance(out, dict):
        return out
    tables = table_paths(cat)
    return {**out, "namespaces": [n for n in out.get("namespaces") or []
                                  if limit.shows("/" + "/".join([prefix, *n]), tables)]}


def iceberg_namespace_refusal(cat: CatalogAPI, state: Mapping[str, Any] | None, prefix: str,
                              namespace: list[str]) -> NotFoundError | None:
    """The missing namespace's refusal for a namespace the principal may see nothing of."""
    limit = Access.of(cat, state)
    if limit is None or limit.shows("/" + "/".join([prefix, *namespace]), table_paths(cat)):
        return None
    return _iceberg_no_namespace(prefix, ".".join(namespace))
