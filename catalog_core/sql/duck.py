"""The DuckDB side of SQL over a snapshot: connections with the sandbox's settings, the views
installed on them, and rows fetched as JSON-friendly values. No catalog reads: `reader` gathers
what the views need from the catalog, and both `reader` (in the caller's process) and `worker` (in
the statement's process) build on this module, which imports neither."""

from __future__ import annotations

import datetime as _dt
import decimal
import math
import os
import re
import uuid
import warnings
from collections.abc import Callable
from typing import Any

import duckdb
from pydantic import BaseModel

from catalog_core.errors import InvalidValueError
from catalog_core.sql.sandbox import MEMORY_LIMIT, lock_down, startup_config
from catalog_core.sql.tables import TableSpec
from catalog_core.sql.types import quote_ident, quote_str
from catalog_core.sql.views import error_sql

__all__ = ["SqlColumn", "SqlResult", "Views", "connect", "job_settings", "install_views", "add_views", "fetch", "fetch_rel", "jsonable",
           "interrupter"]

_RESERVED_DBS = frozenset({"system", "temp", "main"})

# the home catalog (USEd when the lake has one) and each table's spec and view body
Views = tuple[str | None, list[tuple[TableSpec, str]]]


class SqlColumn(BaseModel):
    name: str
    type: str


class SqlResult(BaseModel):
    """What `run_sql` returns: JSON-friendly rows, at most `limit` of them."""

    columns: list[SqlColumn]
    rows: list[list[Any]]
    truncated: bool
    snapshot: int
    row_count: int


def connect(sandbox: bool, timeout_s: float | None = None, memory_limit: int = MEMORY_LIMIT) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:", config=startup_config(timeout_s, memory_limit) if sandbox else {})
    con.execute("SET enable_progress_bar = false")
    # GLOBAL: every connection to this database (`cursor()`, as the SQL worker's jobs use) has them.
    con.execute("SET GLOBAL TimeZone = 'UTC'")  # timestamps read the same on every machine
    con.execute("SET GLOBAL parquet_metadata_cache = true")  # footers read once per database, not per scan
    return con


def job_settings(con: duckdb.DuckDBPyConnection, timeout_s: float, memory_limit: int) -> None:
    """The limits of `startup_config(timeout_s, memory_limit)` on a connection opened with
    `connect(True)` (before `lock_down`): the worker opens its database before the statement
    and its limits are known."""
    cfg = startup_config(timeout_s, memory_limit)
    con.execute(f"SET memory_limit = {quote_str(cfg['memory_limit'])}")
    con.execute(f"SET GLOBAL max_execution_time = {int(cfg['max_execution_time'])}")


def attach(con: duckdb.DuckDBPyConnection, name: str, attached: dict[str, bool]) -> bool:
    """The in-memory database for catalog `name` (the default database when it is `memory`)."""
    key = name.lower()
    if key not in attached:
        problem = "is a reserved DuckDB database name" if key in _RESERVED_DBS else None
        if problem is None and key != "memory":
            try:
                con.execute(f"ATTACH ':memory:' AS {quote_ident(name)}")
            except duckdb.Error as e:
                problem = f"cannot be a DuckDB database ({e})"
        if problem:
            warnings.warn(f"catalog {name!r} {problem}; its tables are not in SQL", stacklevel=3)
        attached[key] = problem is None
    return attached[key]


def _create_view(con: duckdb.DuckDBPyConnection, spec: TableSpec, body: str) -> None:
    cat_, ns, tbl = (quote_ident(p) for p in spec.parts)
    con.execute(f"CREATE SCHEMA IF NOT EXISTS {cat_}.{ns}")
    target = f"{cat_}.{ns}.{tbl}"
    try:
        con.execute(f"CREATE VIEW {target} AS {body}")
        return
    except duckdb.Error as e:
        # A missing or unreadable file, or a type DuckDB cannot cast to: the view still exists
        # with the table's columns and reports the problem when read.
        msg = f"table {spec.name} cannot be read at this snapshot: {str(e).splitlines()[0]}" + _moved_hint(spec)
    try:
        con.execute(f"CREATE OR REPLACE VIEW {target} AS {error_sql(spec, msg)}")
    except duckdb.Error:  # the schema's own types are the problem
        con.execute(f"CREATE OR REPLACE VIEW {target} AS {error_sql(spec, msg, typed=False)}")


def _moved_hint(spec: TableSpec) -> str:
    """What to do when the table's files are missing: a moved lake is re-pointed (docs/engine.md,
    Relocatable catalogs); '' when every local file exists."""
    missing = [f.path for f in spec.files if f.local and not os.path.exists(f.path)]
    if not missing:
        return ""
    return (f" ({len(missing)} of its {len(spec.files)} files are missing, e.g. {missing[0]}: if they moved, "
            "re-point the catalog with `semcat relocate --data DIR --from OLD_DIR --to NEW_DIR`; a copied lake "
            "built before lake roots: `semcat relocate --lake LAKE`)")


def _allowed(spec: TableSpec, sandbox: bool) -> list[str]:
    return [f.path for f in spec.files if f.local and (f.trusted or not sandbox)]


def _deferrable(spec: TableSpec, sandbox: bool) -> bool:
    """May the view of `spec` be created after the lock-down with the same outcome as before it?
    Yes when every file is local and allowed (`_allowed`); a view over a file the lock-down
    refuses is created before it, as always (it reports the refusal when read)."""
    return all(f.local and (f.trusted or not sandbox) for f in spec.files)


def install_views(con: duckdb.DuckDBPyConnection, views: Views, sandbox: bool,
                  only: frozenset[str] | None = None) -> dict[str, list[tuple[TableSpec, str]]]:
    """Create the views on `con`, then lock it down when sandboxed; what was not created.

    `only` (lower-case table names; None: every view): create just the views of those tables
    and return the others by lower-case table name, for `add_views` to create when a later
    statement names them. Every catalog is attached and every schema created either way, and the
    lock-down allows every view's files, so a deferred view binds after it exactly as it would
    have before (the same body, the same allowed files): creating a view binds it (its first
    file's footer is read, its file list parsed), ~5-200 ms each on the Acme lake, which a
    statement that reads one table need not pay for the other twenty-one. A view with a file the
    lock-down refuses (not local, or outside its table's trusted places) is never deferred: it is
    created before the lock-down, as without `only`, and refuses when read."""
    home, items = views
    attached: dict[str, bool] = {}
    allowed: list[str] = []
    deferred: dict[str, list[tuple[TableSpec, str]]] = {}
    if home is not None and attach(con, home, attached):
        con.execute(f"USE {quote_ident(home)}")
    for spec, body in items:
        if not attach(con, spec.parts[0], attached):
            continue
        name = spec.parts[2].lower()
        if only is not None and name not in only and _deferrable(spec, sandbox):
            cat_, ns = (quote_ident(p) for p in spec.parts[:2])
            con.execute(f"CREATE SCHEMA IF NOT EXISTS {cat_}.{ns}")
            deferred.setdefault(name, []).append((spec, body))
        else:
            _create_view(con, spec, body)
        allowed.extend(_allowed(spec, sandbox))
    if sandbox:
        lock_down(con, allowed)
    return deferred


def add_views(con: duckdb.DuckDBPyConnection, deferred: dict[str, list[tuple[TableSpec, str]]],
              names: frozenset[str] | None) -> bool:
    """Create the deferred views (`install_views` with `only`) of the tables `names` (None: all
    of them) on `con`, removing them from `deferred`; whether any was created. The connection
    may be locked down: its allowed files are already every view's."""
    todo = list(deferred) if names is None else [n for n in names if n in deferred]
    for name in todo:
        for spec, body in deferred.pop(name):
            _create_view(con, spec, body)
    return bool(todo)


def jsonable(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else str(v)
    if isinstance(v, decimal.Decimal):
        return float(v) if v.is_finite() else str(v)
    if isinstance(v, (_dt.datetime, _dt.date, _dt.time)):
        return v.isoformat()
    if isinstance(v, _dt.timedelta):
        return str(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    return str(v)


def _as_text(duck_type: str) -> bool:
    # Zone-aware values need pytz in Python, and DuckDB's own text for them and for intervals
    # is the JSON-friendly form anyway ("2025-06-01 10:00:00+00", "1 day 02:00:00").
    return "TIME ZONE" in duck_type or "INTERVAL" in duck_type


# errors after which a statement is not run again by another path: it hit a limit, or DuckDB is unsure
_FINAL = (duckdb.InterruptException, duckdb.OutOfMemoryException, duckdb.FatalException, duckdb.InternalException)
_RENAMED = re.compile(r"(.+)_\d+")


def _limited(text: str, limit: int) -> str:
    """`text` under a LIMIT, laid out as `fetch_rel` sends a relation's query."""
    return (f'WITH "__semcat_s" AS NOT MATERIALIZED (\nSELECT * FROM (\n{text}\n) AS "__semcat_rows"\n)\n'
            f'SELECT * FROM "__semcat_s" AS "__semcat_rows" LIMIT {int(limit) + 1}')


def _fetch_once(con: duckdb.DuckDBPyConnection, text: str, limit: int
                ) -> tuple[list[SqlColumn], list[tuple[Any, ...]]] | None:
    """`fetch` with the statement bound once: `text` sent under the LIMIT as it is, its columns
    read from the result. None when that is not sure to answer what `fetch_rel` answers: the
    wrapped text does not bind or run (a PRAGMA, SHOW, EXPLAIN or DESCRIBE cannot be a subquery,
    and an error must read as it does for the bare statement), a column needs DuckDB's text
    (`_as_text`), or a name may have been renamed in the subquery (`a`, `a` come out `a`, `a_1`);
    then nothing was kept of the attempt, and the statement's transaction, if one was open, is
    open again (rolled back: the statement is read-only, and an error aborts a transaction)."""
    try:
        con.execute(_limited(text, limit))
        desc = con.description
        if desc is None:
            return None
        names = [str(d[0]) for d in desc]
        types = [str(d[1]) for d in desc]
        lower = {n.lower() for n in names}
        if not any(_as_text(t) for t in types) and not any(
                (m := _RENAMED.fullmatch(n)) is not None and m.group(1).lower() in lower for n in names):
            return [SqlColumn(name=n, type=t) for n, t in zip(names, types, strict=True)], con.fetchall()
    except _FINAL:
        raise
    except duckdb.Error:
        pass
    try:
        con.execute("ROLLBACK")
    except duckdb.Error:  # no transaction was open: nothing to reopen
        return None
    con.execute("BEGIN TRANSACTION")
    return None


def fetch(con: duckdb.DuckDBPyConnection, text: str, limit: int) -> tuple[list[SqlColumn], list[tuple[Any, ...]]]:
    """The columns and at most `limit` + 1 rows of the statement `text` on `con`.

    A statement is bound once where that gives the same answer (`_fetch_once`: binding a view of
    a table of 772 files, its list of paths and each path's check against the sandbox's allowed
    files, is most of a `SELECT * ... LIMIT 51` on the Acme lake); otherwise, and for its error,
    as `fetch_rel` does: bound by `con.sql`, then run under the LIMIT."""
    got = _fetch_once(con, text, limit)
    if got is not None:
        return got
    rel = con.sql(text)
    if rel is None:
        raise InvalidValueError("the statement returned no result set; send a SELECT")
    return fetch_rel(con, rel, limit)


def fetch_rel(con: duckdb.DuckDBPyConnection, rel: duckdb.DuckDBPyRelation, limit: int
              ) -> tuple[list[SqlColumn], list[tuple[Any, ...]]]:
    """The columns and at most `limit` + 1 rows of a statement bound on `con` (`con.sql`).

    The rows come from the statement `rel.limit(limit + 1).fetchall()` runs (DuckDB 2.0's relations
    are SQL text: the relation's own query under a LIMIT, in a common table expression, the text
    on the same line 3 so that errors cite the same line), sent on `con` directly: `limit()` would
    first bind that whole statement once more to describe the limited relation (measured on the
    snapshot cache: ~half of a warm statement's execute-and-fetch time), and the rows are the same."""
    types = [str(t) for t in rel.types]
    columns = [SqlColumn(name=n, type=t) for n, t in zip(rel.columns, types, strict=True)]
    if any(_as_text(t) for t in types):
        proj = ", ".join(f"CAST(#{i + 1} AS VARCHAR)" if _as_text(t) else f"#{i + 1}" for i, t in enumerate(types))
        rel = rel.project(proj)
    text = (f'WITH "__semcat_s" AS NOT MATERIALIZED (\nSELECT * FROM (\n{rel.sql_query()}\n) AS "__semcat_rows"\n)\n'
            f'SELECT * FROM "__semcat_s" AS "__semcat_rows" LIMIT {int(limit) + 1}')
    return columns, con.execute(text).fetchall()


def interrupter(con: duckdb.DuckDBPyConnection) -> Callable[[], None]:
    def interrupt() -> None:
        try:
            con.interrupt()
        except duckdb.Error:  # the query finished and the connection closed in the meantime
            pass
    return interrupt
