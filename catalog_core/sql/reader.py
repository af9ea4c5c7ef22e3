"""DuckDB over exactly the Parquet files of a pinned snapshot.

    con = cc.open_duckdb(cat, snapshot="eod-2025-06-01")
    con.sql("SELECT count(*) FROM wh.sales.orders")
    cc.run_sql(cat, "SELECT d, sum(price) FROM wh.sales.orders GROUP BY d", limit=100)

Each catalog becomes an attached in-memory database, each namespace a schema, each table a view,
so DuckDB's three-part names are the catalog's dotted names. `cat` is an embedded `Catalog` or a
remote client (`catalog_core.api.CatalogAPI`): only `resolve`, `get`, `query` and `plan_files`
are used."""

from __future__ import annotations

import datetime as _dt
import decimal
import math
import threading
import uuid
import warnings
from typing import Any

import duckdb
from pydantic import BaseModel

from catalog_core.sql.tables import TableSpec, catalog_dir, list_tables, load_table
from catalog_core.sql.types import quote_ident
from catalog_core.sql.views import error_sql, table_sql
from catalog_core.api import CatalogAPI, SnapshotRef
from catalog_core.errors import CatalogError, InvalidValueError
from catalog_core.lake import require_table, table_path
from catalog_core.sql.sandbox import check_statement, lock_down, map_error, startup_config

__all__ = ["open_duckdb", "open_table", "run_sql", "SqlResult", "SqlColumn"]

_RESERVED_DBS = frozenset({"system", "temp", "main"})
MAX_LIMIT = 100_000


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


# ---------------------------------------------------------------- building a connection

def _connect(sandbox: bool, timeout_s: float | None = None) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:", config=startup_config(timeout_s) if sandbox else {})
    con.execute("SET enable_progress_bar = false")
    con.execute("SET TimeZone = 'UTC'")  # timestamps read the same on every machine
    return con


def _attach(con: duckdb.DuckDBPyConnection, name: str, attached: dict[str, bool]) -> bool:
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
        msg = f"table {spec.name} cannot be read at this snapshot: {str(e).splitlines()[0]}"
    try:
        con.execute(f"CREATE OR REPLACE VIEW {target} AS {error_sql(spec, msg)}")
    except duckdb.Error:  # the schema's own types are the problem
        con.execute(f"CREATE OR REPLACE VIEW {target} AS {error_sql(spec, msg, typed=False)}")


def _allowed(spec: TableSpec, sandbox: bool) -> list[str]:
    return [f.path for f in spec.files if f.local and (f.trusted or not sandbox)]


def _build(cat: CatalogAPI, vid: int, sandbox: bool, con: duckdb.DuckDBPyConnection, names: set[str] | None = None,
           only: str | None = None, where: str | None = None) -> None:
    """Create the views (all tables, those whose table name is in `names`, or just `only`),
    then lock the connection down when sandboxed."""
    all_tables, catalogs = list_tables(cat, vid)
    tables = all_tables
    if only is not None:
        tables = [t for t in tables if t.path == table_path(only)]
    elif names is not None:
        tables = [t for t in tables if t.path.rsplit("/", 1)[1].lower() in names]
    attached: dict[str, bool] = {}
    allowed: list[str] = []
    lake_catalogs = {t.path.split("/")[1] for t in all_tables}
    if len(lake_catalogs) == 1 and only is None:
        # One catalog: let `sales.orders` work as well as `wh.sales.orders`.
        home = next(iter(lake_catalogs))
        if _attach(con, home, attached):
            con.execute(f"USE {quote_ident(home)}")
    where = where if only is not None else None
    for obj in tables:
        spec = load_table(cat, obj, vid, catalogs, where=where)
        body = table_sql(spec, trust_all=not sandbox, where=where)
        if body is None or not _attach(con, spec.parts[0], attached):
            continue
        _create_view(con, spec, body)
        allowed.extend(_allowed(spec, sandbox))
    if sandbox:
        lock_down(con, allowed)


def open_duckdb(cat: CatalogAPI, snapshot: SnapshotRef = None, sandbox: bool = True) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection where every table visible at `snapshot` is the view
    `catalog.namespace.table` over exactly its files then. `sandbox=True` confines the
    connection to those files (no other files, network, extensions or setting changes)."""
    vid = cat.resolve(snapshot)
    con = _connect(sandbox)
    try:
        _build(cat, vid, sandbox, con)
    except BaseException:
        con.close()
        raise
    return con


def open_table(cat: CatalogAPI, name: str, where: str | None = None, snapshot: SnapshotRef = None,
               sandbox: bool = True) -> duckdb.DuckDBPyConnection:
    """A connection with the single view `name`, holding the rows that match `where` (catalog
    filter syntax, e.g. 'd >= "2001-06-01" and price > 3'); only the files `plan_files` keeps
    for that filter are read."""
    vid = cat.resolve(snapshot)
    require_table(cat, name, vid)
    con = _connect(sandbox)
    try:
        _build(cat, vid, sandbox, con, only=name, where=where)
    except BaseException:
        con.close()
        raise
    return con


# ---------------------------------------------------------------- guarded SQL

def _jsonable(v: Any) -> Any:
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
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return str(v)


def _as_text(duck_type: str) -> bool:
    # Zone-aware values need pytz in Python, and DuckDB's own text for them and for intervals
    # is the JSON-friendly form anyway ("2025-06-01 10:00:00+00", "1 day 02:00:00").
    return "TIME ZONE" in duck_type or "INTERVAL" in duck_type


def _fetch(con: duckdb.DuckDBPyConnection, text: str, limit: int) -> tuple[list[SqlColumn], list[tuple]]:
    rel = con.sql(text)
    if rel is None:
        raise InvalidValueError("the statement returned no result set; send a SELECT")
    types = [str(t) for t in rel.types]
    columns = [SqlColumn(name=n, type=t) for n, t in zip(rel.columns, types)]
    if any(_as_text(t) for t in types):
        proj = ", ".join(f"CAST(#{i + 1} AS VARCHAR)" if _as_text(t) else f"#{i + 1}" for i, t in enumerate(types))
        rel = rel.project(proj)
    return columns, rel.limit(limit + 1).fetchall()


def _interrupter(con: duckdb.DuckDBPyConnection):
    def interrupt() -> None:
        try:
            con.interrupt()
        except duckdb.Error:  # the query finished and the connection closed in the meantime
            pass
    return interrupt


def _check_args(sql: Any, limit: Any, timeout_s: Any) -> None:
    if not isinstance(sql, str):
        raise InvalidValueError(f"sql must be a string, got {type(sql).__name__}")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidValueError(f"limit must be an integer from 1 to {MAX_LIMIT}, got {limit!r}; "
                                "aggregate in SQL rather than fetching more rows")
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not 0 < timeout_s < 86400:
        raise InvalidValueError(f"timeout_s must be a positive number of seconds, got {timeout_s!r}")


def run_sql(cat: CatalogAPI, sql: str, snapshot: SnapshotRef = None, limit: int = 1000, timeout_s: float = 10) -> SqlResult:
    """Run one read-only statement from an agent on a sandboxed connection at `snapshot`, with
    at most `limit` rows (`truncated` says there were more) and `timeout_s` seconds."""
    _check_args(sql, limit, timeout_s)
    vid = cat.resolve(snapshot)
    con = _connect(True, timeout_s)
    try:
        forbidden = catalog_dir(cat)
        raw_dir = f"{getattr(cat, 'data_dir', '')}/catalog" if forbidden else ""
        checked = check_statement(sql, con, [d for d in (forbidden, raw_dir) if d])
        _build(cat, vid, True, con, names=None if checked.introspect else checked.tables)
        timer = threading.Timer(timeout_s, _interrupter(con))
        timer.daemon = True
        timer.start()
        try:
            columns, rows = _fetch(con, checked.text, limit)
        finally:
            timer.cancel()
    except CatalogError:
        raise
    except duckdb.Error as e:
        raise map_error(e, timeout_s) from None
    except Exception as e:  # never let an agent's SQL crash the caller
        raise CatalogError(f"SQL failed: {type(e).__name__}: {e}") from None
    finally:
        con.close()
    out = [[_jsonable(v) for v in row] for row in rows[:limit]]
    return SqlResult(columns=columns, rows=out, truncated=len(rows) > limit, snapshot=vid, row_count=len(out))
