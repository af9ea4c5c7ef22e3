"""DuckDB over exactly the Parquet files of a pinned snapshot.

    con = cc.open_duckdb(cat, snapshot="eod-2025-06-01")
    con.sql("SELECT count(*) FROM wh.sales.orders")
    cc.run_sql(cat, "SELECT d, sum(price) FROM wh.sales.orders GROUP BY d", limit=100)

`run_sql` is for SQL from agents: the statement is checked (`sandbox`), then runs in a worker
process held to `timeout_s` (plus `worker.GRACE_S`) and `memory_limit` bytes whatever functions it
calls (`worker` says why DuckDB's own limits are not enough).

What the views need from the catalog at a vid (each table's files and view SQL) is kept per
catalog object and reused while the files on disk are unchanged (`cache`), and a worker keeps the
database it built for its last statement for the next one with the same views (`worker`).

Each catalog becomes an attached in-memory database, each namespace a schema, each table a view,
so DuckDB's three-part names are the catalog's dotted names. `cat` is an embedded `Catalog` or a
remote client (`catalog_core.api.CatalogAPI`): only `resolve`, `get`, `query` and `plan_files`
are used."""

from __future__ import annotations

import hashlib
import pickle
import threading
from collections.abc import Callable
from typing import Any

import cachetools
import duckdb

from catalog_core import errors
from catalog_core.api import CatalogAPI, SnapshotRef
from catalog_core.errors import CatalogError, InvalidValueError, SqlTimeoutError
from catalog_core.lake import require_table, table_path
from catalog_core.sql import snapcache, worker
from catalog_core.sql.cache import Entry, catalog_cache, file_sig
from catalog_core.sql.duck import (
    SqlColumn,
    SqlResult,
    Views,
    connect,
    install_views,
)
from catalog_core.sql.sandbox import MEMORY_LIMIT, Checked, check_statement, lock_down, map_error, refuse
from catalog_core.sql.tables import TableSpec, catalog_dir, list_tables, load_table
from catalog_core.sql.views import table_sql

__all__ = ["open_duckdb", "open_table", "run_sql", "check_sql", "warm", "prepare", "SqlResult", "SqlColumn"]

MAX_LIMIT = 100_000
MIN_MEMORY_LIMIT = 64 << 20
MAX_MEMORY_LIMIT = 1 << 40


# ---------------------------------------------------------------- building a connection

_parser: duckdb.DuckDBPyConnection | None = None
_parser_lock = threading.Lock()


def _parser_cursor() -> duckdb.DuckDBPyConnection:
    """A new connection to the one locked-down database that statements are checked on (only
    parsed there: `json_serialize_sql` of the text, never run). A database costs ~50 ms to start,
    a cursor on it well under 1 ms."""
    global _parser
    with _parser_lock:
        if _parser is None:
            con = connect(True)
            lock_down(con, [])
            _parser = con
        return _parser.cursor()


def _views(cat: CatalogAPI, vid: int, sandbox: bool, names: set[str] | None = None, only: str | None = None,
           where: str | None = None) -> Views:
    """What the views need from the catalog (all tables, those whose table name is in `names`,
    or just `only`): the home catalog (`USE`d when the lake has one) and each table's spec and
    view body. Only catalog reads; no DuckDB."""
    return _keyed_views(cat, vid, sandbox, names, only, where)[0]


def _tables_at(cat: CatalogAPI, vid: int) -> tuple[list[Any], dict[str, dict[str, Any]]]:
    """`list_tables` at `vid`, through the catalog's cache."""
    cache = catalog_cache(cat)
    listed = cache.get_tables(vid) if cache is not None else None
    if listed is None:
        listed = list_tables(cat, vid)
        if cache is not None:
            cache.put_tables(vid, listed)
    return listed


def _keyed_views(cat: CatalogAPI, vid: int, sandbox: bool, names: set[str] | None = None, only: str | None = None,
                 where: str | None = None, data: dict[tuple[str, str, str], str] | None = None,
                 unchecked: list[tuple[tuple[Any, ...], Entry]] | None = None) -> tuple[Views, list[str] | None]:
    """`_views`, and the digests of its tables' cache entries (`cache.Entry.digest`; None when
    the catalog object cannot be cached): what identifies the view set for the worker's cache.
    Each table's spec and body come from the catalog's cache when its files are unchanged; `data`,
    when given, gets each table's rows digest (`cache.Entry.data`, for `snapcache`). With
    `unchecked` (a list), cached entries are taken without checking their files and listed there
    (key, entry): the caller must check them (`Entry.valid`) before it uses any answer built on
    them, and forget the stale ones (`drop`)."""
    cache = catalog_cache(cat)
    all_tables, catalogs = _tables_at(cat, vid)
    tables = all_tables
    if only is not None:
        tables = [t for t in tables if t.path == table_path(only)]
    elif names is not None:
        tables = [t for t in tables if t.path.rsplit("/", 1)[1].lower() in names]
    lake_catalogs = {t.path.split("/")[1] for t in all_tables}
    # One catalog: let `sales.orders` work as well as `wh.sales.orders`.
    home = next(iter(lake_catalogs)) if len(lake_catalogs) == 1 and only is None else None
    where = where if only is not None else None
    items: list[tuple[TableSpec, str]] = []
    digests: list[str] | None = [] if cache is not None else None
    for obj in tables:
        key = (vid, sandbox, obj.path, where)
        if cache is None:
            entry = None
        elif unchecked is not None:
            entry = cache.peek(key)
            if entry is not None:
                unchecked.append((key, entry))
        else:
            entry = cache.get(key)
        if entry is None:
            spec = load_table(cat, obj, vid, catalogs, where=where)
            sig = file_sig(spec)  # before the footers are read: a file changing meanwhile misses next time
            body = table_sql(spec, trust_all=not sandbox, where=where)
            entry = Entry.make(spec, body, sig)
            if cache is not None:
                cache.put(key, entry)
        if entry.body is not None:
            items.append((entry.spec, entry.body))
            if digests is not None:
                digests.append(entry.digest)
            if data is not None:
                data[entry.spec.parts] = entry.data
    return (home, items), digests


def _build(cat: CatalogAPI, vid: int, sandbox: bool, con: duckdb.DuckDBPyConnection, names: set[str] | None = None,
           only: str | None = None, where: str | None = None) -> None:
    install_views(con, _views(cat, vid, sandbox, names=names, only=only, where=where), sandbox)


def open_duckdb(cat: CatalogAPI, snapshot: SnapshotRef = None, sandbox: bool = True) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection where every table visible at `snapshot` is the view
    `catalog.namespace.table` over exactly its files then. `sandbox=True` confines the
    connection to those files (no other files, network, extensions or setting changes)."""
    vid = cat.resolve(snapshot)
    con = connect(sandbox)
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
    con = connect(sandbox)
    try:
        _build(cat, vid, sandbox, con, only=name, where=where)
    except BaseException:
        con.close()
        raise
    return con


# ---------------------------------------------------------------- guarded SQL

def _check_args(sql: Any, limit: Any, timeout_s: Any, memory_limit: Any) -> None:
    if not isinstance(sql, str):
        raise InvalidValueError(f"sql must be a string, got {type(sql).__name__}")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidValueError(f"limit must be an integer from 1 to {MAX_LIMIT}, got {limit!r}; "
                                "aggregate in SQL rather than fetching more rows")
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not 0 < timeout_s < 86400:
        raise InvalidValueError(f"timeout_s must be a positive number of seconds, got {timeout_s!r}")
    if (isinstance(memory_limit, bool) or not isinstance(memory_limit, int)
            or not MIN_MEMORY_LIMIT <= memory_limit <= MAX_MEMORY_LIMIT):
        raise InvalidValueError(f"memory_limit must be a number of bytes from {MIN_MEMORY_LIMIT} (64 MiB) to "
                                f"{MAX_MEMORY_LIMIT} (1 TiB), got {memory_limit!r}")


def _worker_error(err: dict[str, Any], timeout_s: float) -> CatalogError:
    """The catalog error for what the worker reported."""
    kind, name, msg = err.get("kind"), str(err.get("type", "")), str(err.get("message", ""))
    if kind == "duckdb":
        cls = getattr(duckdb, name, None)
        exc = cls(msg) if isinstance(cls, type) and issubclass(cls, duckdb.Error) else duckdb.Error(msg)
        return map_error(exc, timeout_s)
    if kind == "catalog":
        ecls = getattr(errors, name, None)
        if isinstance(ecls, type) and issubclass(ecls, CatalogError) and ecls not in (
                errors.SqlRefusedError, errors.QuerySyntaxError):
            return ecls(msg)
        return CatalogError(msg)
    if kind == "memory":
        return refuse("memory_limit", msg)
    return CatalogError(f"SQL failed: {name}: {msg}")


# A lake of at most this many tables gets every table's view in each statement's database (its
# allowed files are then the whole snapshot's, as for a statement that lists tables), so the
# worker's database of one vid serves every statement at it: on the Acme lake (22 tables, 2,848
# files) installing them all takes ~0.6 s once, against ~0.5 s per statement for the views of
# the tables it names whenever the set changes. Larger lakes get the named tables' views only.
ALL_VIEWS_MAX_TABLES = 64

_blobs: cachetools.LRUCache[str, bytes] = cachetools.LRUCache(maxsize=8)
_blobs_lock = threading.Lock()


def _pickled(key: str, views: Views) -> bytes:
    """`views` pickled, kept for the last few keys (the Acme lake's: 0.9 MB, 40 ms to pickle);
    the worker unpickles it only when it has no database for the key."""
    with _blobs_lock:
        got = _blobs.get(key)  # a hit counts as a use
        if got is not None:
            return got
    blob = pickle.dumps(views, protocol=pickle.HIGHEST_PROTOCOL)
    with _blobs_lock:
        _blobs[key] = blob  # the least recently used makes way
    return blob


_CHECKED_MAX = 512  # statements whose sandbox check is kept
_checks: cachetools.LRUCache[tuple[str, tuple[str, ...], int], Checked] = cachetools.LRUCache(maxsize=_CHECKED_MAX)
_checks_lock = threading.Lock()


def _checked(sql: str, forbidden: list[str], memory_limit: int, timeout_s: float) -> Checked:
    """`check_statement` of `sql`, memoized: the check is a function of the text, the forbidden
    directories and the memory limit alone (DuckDB's parser on the locked-down parsing database;
    no catalog, no vid), so a statement that passed once passes the same way again. Kept: the
    last `_CHECKED_MAX` statements that passed, by exactly those three; each caller gets its own
    copy. A refused statement is checked again each time (its error is raised afresh)."""
    key = (sql, tuple(forbidden), memory_limit)
    with _checks_lock:
        got = _checks.get(key)  # a hit counts as a use
    if got is None:
        con = _parser_cursor()
        try:
            # Parsing only: DuckDB's parser runs here, nothing of the statement executes in this process.
            got = check_statement(sql, con, forbidden, memory_limit)
        except CatalogError:
            raise
        except duckdb.Error as e:
            raise map_error(e, timeout_s) from None
        finally:
            con.close()
        with _checks_lock:
            _checks[key] = got  # the least recently used statement makes way
    return Checked(got.text, set(got.tables), got.introspect, got.memory_limit)


def check_sql(sql: str, memory_limit: int = MEMORY_LIMIT) -> None:
    """Check `sql` as `run_sql` would before running it (the sandbox's rules, DuckDB's parser;
    nothing runs, no catalog is read): raises `SqlRefusedError` naming the rule it breaks, or
    `SqlError` when it does not parse. For text stored to be run later (an annotation's
    condition, expression or query), so that what a write path accepts, the sandbox accepts."""
    if not isinstance(sql, str):
        raise InvalidValueError(f"sql must be a string, got {type(sql).__name__}")
    _checked(sql, [], memory_limit, 10.0)


def run_sql(cat: CatalogAPI, sql: str, snapshot: SnapshotRef = None, limit: int = 1000, timeout_s: float = 10,
            memory_limit: int = MEMORY_LIMIT) -> SqlResult:
    """Run one read-only statement from an agent on a sandboxed connection at `snapshot`, with
    at most `limit` rows (`truncated` says there were more).

    The statement ends within `timeout_s` seconds (plus a grace of `worker.GRACE_S`; past it:
    `SqlTimeoutError`) and within `memory_limit` bytes (default 1 GiB; past it: `SqlRefusedError`
    with rule `memory_limit`), whatever functions it calls: it runs in a worker process that
    is interrupted, then killed, at the time limit and whose address space is capped at
    `memory_limit` plus `worker.HEADROOM` for the interpreter and DuckDB itself."""
    _check_args(sql, limit, timeout_s, memory_limit)
    vid = cat.resolve(snapshot)
    forbidden = catalog_dir(cat)
    raw_dir = f"{getattr(cat, 'data_dir', '')}/catalog" if forbidden else ""
    checked = _checked(sql, [d for d in (forbidden, raw_dir) if d], memory_limit, timeout_s)
    names = None if checked.introspect else checked.tables
    if catalog_cache(cat) is not None and len(_tables_at(cat, vid)[0]) <= ALL_VIEWS_MAX_TABLES:
        names = None  # every table's view: one worker database serves every statement at this vid
    # The snapshot cache (`snapcache`) serves statements that name their tables and do not look
    # at DuckDB's catalog (which then shows the file views exactly as without it).
    budget = snapcache.budget()
    use_cache = budget > 0 and not checked.introspect and not snapcache.names_cache(sql) and bool(checked.tables)
    data: dict[tuple[str, str, str], str] | None = {} if use_cache else None
    if use_cache:
        answer = _from_cache(cat, vid, checked.text, limit, timeout_s, memory_limit, checked.tables, budget)
        if answer is not None:
            ok = answer["ok"]
            return SqlResult(columns=[SqlColumn(name=n, type=t) for n, t in ok["columns"]], rows=ok["rows"][:limit],
                             truncated=len(ok["rows"]) > limit, snapshot=vid, row_count=len(ok["rows"][:limit]))
    job = _job(cat, vid, checked.text, limit, timeout_s, memory_limit, names, data,
               frozenset(checked.tables) if use_cache else None, budget,
               tables=None if checked.introspect else frozenset(checked.tables))
    answer = _run_job(job, timeout_s, memory_limit)
    ok = answer["ok"]
    columns = [SqlColumn(name=n, type=t) for n, t in ok["columns"]]
    rows = ok["rows"]
    out = rows[:limit]
    return SqlResult(columns=columns, rows=out, truncated=len(rows) > limit, snapshot=vid, row_count=len(out))


def _from_cache(cat: CatalogAPI, vid: int, text: str, limit: int, timeout_s: float, memory_limit: int,
                names: set[str], budget: int) -> dict[str, Any] | None:
    """The statement answered from a worker's snapshot cache when it holds every table the
    statement names, checking only those tables' files (None: a miss; nothing ran)."""
    data: dict[tuple[str, str, str], str] = {}
    unchecked: list[tuple[tuple[Any, ...], Entry]] = []
    views, digests = _keyed_views(cat, vid, True, names=names, data=data, unchecked=unchecked)
    if digests is None or not data or not worker.may_serve(set(data.values()), (float(timeout_s), memory_limit, budget)):
        return None  # the statement's own path checks the files (`cache.get`)
    key = hashlib.sha256(repr(("snap", views[0], sorted(data.items()), float(timeout_s), memory_limit)).encode())
    job = worker.Job(text=text, views=None, limit=limit, timeout_s=timeout_s, memory_limit=memory_limit,
                     key=key.hexdigest(), cache=data, names=frozenset(names), home=views[0], budget=budget)
    # The files of the cached entries are checked (`Entry.valid`: with the inotify watcher, a drain
    # of its queue and one stat per table while nothing changed, else one lstat per file) while the
    # worker runs the statement, not before it;
    # an answer is used only when every file still had its entry's stat after the job was sent,
    # so it rests on exactly the statement's file set, as when they are checked first.
    fresh: list[bool] = []
    try:
        answer = _run_job(job, timeout_s, memory_limit, meanwhile=lambda: fresh.append(
            _files_unchanged(cat, unchecked)))
    except CatalogError:
        if (fresh[-1] if fresh else _files_unchanged(cat, unchecked)):
            raise
        return None  # rows of other files: run it again on its snapshot's files
    if not (fresh[-1] if fresh else _files_unchanged(cat, unchecked)):
        return None
    return None if answer.get("miss") is True else answer


def _files_unchanged(cat: CatalogAPI, unchecked: list[tuple[tuple[Any, ...], Entry]]) -> bool:
    """Do the files of each `unchecked` entry still have its stats? The stale ones are dropped
    from the catalog's cache (the next lookup builds them again from the catalog)."""
    cache = catalog_cache(cat)
    ok = True
    for key, entry in unchecked:
        if not entry.valid():
            ok = False
            if cache is not None:
                cache.drop(key, entry)
    return ok


def _job(cat: CatalogAPI, vid: int, text: str, limit: int, timeout_s: float, memory_limit: int,
         names: set[str] | None, data: dict[tuple[str, str, str], str] | None, read: frozenset[str] | None,
         budget: int, tables: frozenset[str] | None = None) -> worker.Job:
    """The worker job of a checked statement (`text`; empty: a `warm` or `prepare` job) at `vid`;
    `tables`: the lower-case names of the tables whose views it needs (`worker.Job.tables`; None:
    every view)."""
    views, digests = _keyed_views(cat, vid, True, names=names, data=data)
    key = None
    payload: Any = views
    if digests is not None:  # the view set and the limits fixed when its database was locked
        key = hashlib.sha256(repr((views[0], digests, float(timeout_s), memory_limit)).encode()).hexdigest()
        payload = _pickled(key, views)
    if key is None:
        data = None
    return worker.Job(text=text, views=payload, limit=limit, timeout_s=timeout_s, memory_limit=memory_limit,
                      key=key, cache=data, names=read if data is not None else None, home=views[0],
                      budget=budget, tables=tables)


def _run_job(job: worker.Job, timeout_s: float, memory_limit: int,
             meanwhile: Callable[[], object] | None = None) -> dict[str, Any]:
    """The worker's answer to `job` (`{"ok": ...}`); its failures as catalog errors. `meanwhile`:
    called once the job is sent, while the worker runs it (`worker.run`)."""
    try:
        answer = worker.run(job, meanwhile)
    except worker.WorkerDied as e:
        if e.busy:
            raise SqlTimeoutError(f"{e}, so the statement did not run; try again shortly",
                                  timeout_s=timeout_s) from None
        if e.timed_out:
            raise SqlTimeoutError(f"the query ran past the {timeout_s:g} s time limit and was stopped; "
                                  "filter or aggregate more, or raise timeout_s", timeout_s=timeout_s) from None
        raise refuse("memory_limit", f"{e} (most likely it went past the {memory_limit:,} byte memory limit)") from None
    if "ok" not in answer and answer.get("miss") is not True:
        raise _worker_error(answer.get("error") or {}, timeout_s)
    return answer


_warming = threading.Lock()


def warm(cat: CatalogAPI, tables: list[str], snapshot: SnapshotRef = None, timeout_s: float = 10,
         wait: bool = False) -> bool:
    """Copy `tables` (dotted names) at `snapshot` into a SQL worker's snapshot cache
    (`snapcache`) in a background thread, so the agent's next statements on them read memory;
    never blocks the caller (unless `wait`, for tests and benchmarks) and never raises. False
    when nothing was started: the cache is off, or a warm-up is already running. `timeout_s`: that
    of the statements to come (a worker's cache serves statements of one time limit)."""
    budget = snapcache.budget()
    if budget <= 0 or not tables or catalog_cache(cat) is None:
        return False
    if not _warming.acquire(blocking=False):
        return False

    def go() -> None:
        try:
            vid = cat.resolve(snapshot)
            names = {t.rsplit(".", 1)[-1].lower() for t in tables}
            listed = _tables_at(cat, vid)[0]
            view_names = None if len(listed) <= ALL_VIEWS_MAX_TABLES else names
            data: dict[tuple[str, str, str], str] = {}
            job = _job(cat, vid, "", 1, timeout_s, MEMORY_LIMIT, view_names, data, frozenset(names), budget,
                       tables=frozenset(names))
            _run_job(job, timeout_s, MEMORY_LIMIT)
        except Exception:  # noqa: S110  (a warm-up is only a hint; the statement itself reports problems)
            pass
        finally:
            _warming.release()

    if wait:
        go()
    else:
        threading.Thread(target=go, name="semcat-sql-warm", daemon=True).start()
    return True


_preparing = threading.Lock()


def prepare(cat: CatalogAPI, snapshot: SnapshotRef = None, timeout_s: float = 10, memory_limit: int = MEMORY_LIMIT,
            wait: bool = False) -> bool:
    """Have an idle SQL worker build the database of `snapshot`'s views (latest when None) in the
    background, so that the first statement there does not wait for it: its settings, every
    view (creating one binds it: its file list parsed, its first footer read; ~0.1-0.2 s for a
    table of 772 files on a quiet machine) and the lock-down to exactly the snapshot's files
    (DuckDB resolves each allowed path, some syscalls per path: 2,848 files on the Acme lake).
    The database is the one `run_sql` builds for its statements at that snapshot with these
    limits (the same job key), so a statement is sent to the worker holding it. With the snapshot
    cache on, the worker also copies the snapshot's tables into its cache before it answers
    (`worker._preload`: the costliest to read from their files first, up to
    `snapcache.PRELOAD_MAX` bytes and `worker.PRELOAD_S` seconds, each under the digest of its
    files' lstat then), so a first statement on them reads memory, as a warm one does; what it
    copied is what the caller then routes cache statements to it for. Never blocks the
    caller (unless `wait`, for tests and benchmarks) and never raises; False when nothing was
    started (a catalog whose view specs are not cached, or a preparation already running). A
    lake of more than `ALL_VIEWS_MAX_TABLES` tables, whose statements get databases of their own
    tables, is not prepared."""
    if catalog_cache(cat) is None or not _preparing.acquire(blocking=False):
        return False

    def go() -> None:
        try:
            vid = cat.resolve(snapshot)
            if len(_tables_at(cat, vid)[0]) > ALL_VIEWS_MAX_TABLES:
                return
            budget = snapcache.budget()
            data: dict[tuple[str, str, str], str] | None = {} if budget > 0 else None
            job = _job(cat, vid, "", 1, timeout_s, memory_limit, None, data, None, budget)
            job.preload = min(budget, snapcache.PRELOAD_MAX) if job.cache else 0
            if job.key is not None and not worker.holds(job.key):
                _run_job(job, timeout_s, memory_limit)
        except Exception:  # noqa: S110  (a preparation is only a head start; statements report problems)
            pass
        finally:
            _preparing.release()

    if wait:
        go()
    else:
        threading.Thread(target=go, name="semcat-sql-prepare", daemon=True).start()
    return True
