"""The sandbox for SQL from agents.

Two layers. The wall is DuckDB's own security settings: external access off with an exact list
of readable files (the snapshot's data files), extension install/load off, configuration
locked. On top, a statement check with DuckDB's parser names the rule a statement breaks
before anything runs: exactly one statement, read-only, no ATTACH/LOAD/SET, no reading of the
settings, secrets or variables (`allowed_paths` lists the snapshot's files), no view definitions
(they name the same files), table functions from
an allow-list, no file paths or URLs as tables. DuckDB's errors at run time are mapped back to
the same rules, so every refusal says which rule it hit.

Limits (time and memory) are not this module's alone: `reader.run_sql` runs every statement in a
worker process (see `catalog_core.sql.worker`), because DuckDB cannot stop everything from
inside. Measured on DuckDB 2.0: `con.interrupt()` (and `max_execution_time`) are only checked
between vectors, never inside one scalar function call, and list and string builders allocate
outside the buffer manager, so `memory_limit` does not see them: `SELECT len(range(200000000))`
ran 21 s past a 1 s interrupt and grew to 3+ GB under a 1 GB `memory_limit`. What this module adds
is the configuration DuckDB does enforce (`startup_config`: `memory_limit`, `threads`, no temp
directory, `max_execution_time`) and, as a second layer that only makes the error clearer and
earlier, a refusal of list and string builders (`repeat`, `range`, `lpad`, ...) whose constant
arguments alone ask for more than the memory limit (rule `memory_limit`)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import duckdb

from catalog_core.errors import CatalogError, NotFoundError, SqlError, SqlRefusedError, SqlTimeoutError
from catalog_core.sql.types import quote_str

__all__ = ["Checked", "check_statement", "startup_config", "lock_down", "map_error", "RULES", "MEMORY_LIMIT",
           "THREADS", "MAX_SQL_CHARS"]

MEMORY_LIMIT = 1 << 30     # bytes: run_sql's default memory limit for one statement (1 GiB)
THREADS = 2                # DuckDB threads per sandboxed connection
MAX_SQL_CHARS = 1_000_000  # the longest statement the sandbox parses

RULES = {
    "one_statement": "send exactly one SQL statement",
    "read_only": "only SELECT (with WITH/VALUES/DESCRIBE/SHOW/SUMMARIZE/EXPLAIN) is allowed; nothing may be written",
    "attach": "ATTACH/DETACH are not allowed; every table is already a view named catalog.namespace.table",
    "extension": "INSTALL/LOAD are not allowed",
    "settings": "SET/RESET are not allowed; the configuration is locked",
    "pragma": "only read-only PRAGMAs are allowed",
    "statement_type": "only SELECT statements are allowed",
    "table_function": "this table function is not allowed; query the table views instead",
    "file_access": "SQL can read the snapshot's table views only, no other files",
    "network": "SQL cannot reach the network",
    "catalog_dir": "the catalog's own directory is never readable from SQL",
    "scalar_function": "this function is not allowed",
    "view_sql": "the views' SQL names the server's files, so it is not readable; list the tables with "
                "information_schema.tables or SHOW ALL TABLES, their columns with information_schema.columns",
    "introspection": "DuckDB's settings, secrets, variables and environment are not readable (they hold the "
                     "server's file paths); query the table views and information_schema instead",
    "memory_limit": "the query needs more than its memory limit (run_sql's memory_limit, 1 GiB unless raised); "
                    "filter or aggregate earlier, build smaller lists and strings, or raise memory_limit",
}

_TYPE_RULES = {
    "CREATE": "read_only", "DROP": "read_only", "ALTER": "read_only", "INSERT": "read_only",
    "UPDATE": "read_only", "DELETE": "read_only", "MERGE_INTO": "read_only", "COPY": "read_only",
    "COPY_DATABASE": "read_only", "EXPORT": "read_only", "CREATE_FUNC": "read_only",
    "VACUUM": "read_only", "ANALYZE": "read_only",
    "ATTACH": "attach", "DETACH": "attach",
    "LOAD": "extension", "EXTENSION": "extension",
    "SET": "settings", "VARIABLE_SET": "settings",
}

# Table functions that read nothing but memory and DuckDB's own catalog.
ALLOWED_TABLE_FUNCTIONS = frozenset({
    "range", "generate_series", "unnest", "repeat", "repeat_row", "json_each", "json_tree",
    "duckdb_columns", "duckdb_constraints", "duckdb_databases", "duckdb_dependencies", "duckdb_functions",
    "duckdb_keywords", "duckdb_schemas", "duckdb_tables", "duckdb_types",
    "duckdb_sequences", "duckdb_optimizers",
    "pragma_table_info", "pragma_show", "pragma_version", "pragma_collations",
    "pg_timezone_names", "icu_calendar_names", "summary", "test_all_types",
})
_FILE_FUNCTION = re.compile(r"(read_|parquet_|sniff_|glob$|.*_scan$|iceberg_|delta_)")
DENIED_SCALAR_FUNCTIONS = frozenset({"getenv"})
# What reads the server's configuration or environment (rule `introspection`): `allowed_paths`
# alone lists every data file of the snapshot with its absolute path.
INTROSPECTION_TABLE_FUNCTIONS = frozenset({
    "duckdb_settings", "duckdb_secrets", "duckdb_secret_types", "which_secret", "duckdb_extensions",
    "duckdb_variables", "duckdb_memory", "duckdb_temporary_files", "duckdb_external_file_cache",
    "duckdb_log", "duckdb_logs", "duckdb_log_contexts", "duckdb_prepared_statements", "pragma_database_size",
    "pragma_metadata_info", "pragma_storage_info", "pragma_user_agent", "pragma_platform",
})
INTROSPECTION_SCALAR_FUNCTIONS = frozenset({"current_setting", "getvariable", "which_secret", "user_agent"})
INTROSPECTION_VIEWS = frozenset({"pg_settings", "duckdb_settings"})
# DuckDB's catalog objects that show a view's SQL (its `read_parquet` of the absolute paths of the
# snapshot's files): refused with rule `view_sql` by name, in any schema; information_schema's
# `views` (and `pg_catalog.pg_views`) by schema and name. The view names stay listable in
# information_schema.tables and SHOW ALL TABLES, their columns in information_schema.columns.
VIEW_SQL_TABLE_FUNCTIONS = frozenset({"duckdb_views", "duckdb_indexes"})
VIEW_SQL_VIEWS = frozenset({"duckdb_views", "duckdb_indexes", "sqlite_master", "sqlite_schema", "sqlite_temp_master",
                            "sqlite_temp_schema", "pg_views", "pg_indexes"})
VIEW_SQL_SCHEMA_VIEWS = frozenset({("information_schema", "views"), ("pg_catalog", "pg_views"),
                                   ("pg_catalog", "pg_indexes")})
# current_setting('<one of these>') answers nothing about the server's files
SAFE_SETTINGS = frozenset({"timezone", "calendar", "threads", "memory_limit", "max_execution_time",
                           "default_collation", "default_order", "default_null_order"})
ALLOWED_PRAGMAS = frozenset({"table_info", "show", "show_tables", "show_tables_expanded", "show_databases",
                             "database_list", "version", "platform", "functions", "collations"})
_URL = re.compile(r"^(?!file://)[a-z][a-z0-9+.-]*://", re.I)
# A replacement scan: `FROM '/etc/passwd'`, `FROM 'x.csv'`, `FROM 'https://…'`.
_PATHLIKE = re.compile(r"[/\\:*.~]")
_INTROSPECTION_SCHEMAS = frozenset({"information_schema", "pg_catalog"})


def refuse(rule: str, what: str) -> SqlRefusedError:
    return SqlRefusedError(f"SQL refused by the sandbox (rule {rule!r}): {what}; {RULES[rule]}.", rule=rule)


@dataclass
class Checked:
    """A statement that passed the checks: the text to run, the table names it mentions, and
    whether it looks at DuckDB's catalog (then every table needs its view)."""

    text: str
    tables: set[str] = field(default_factory=set)
    introspect: bool = False
    memory_limit: int = MEMORY_LIMIT


# ---------------------------------------------------------------- statement checks

def _tokens(text: str) -> list[str]:
    toks = duckdb.tokenize(text)
    bounds = [p for p, _ in toks] + [len(text)]
    return [text[bounds[i]:bounds[i + 1]].strip() for i in range(len(toks))]


def _one(sql: str) -> Any:
    try:
        stmts = duckdb.extract_statements(sql)
    except duckdb.ParserException as e:
        raise SqlError(f"SQL does not parse: {_first_lines(e)}", sql=sql) from None
    except ValueError:  # a statement type this duckdb build's Python enum does not know
        raise refuse("statement_type", "this kind of statement") from None
    if len(stmts) != 1:
        raise refuse("one_statement", f"got {len(stmts)} statements")
    return stmts[0]


def check_statement(sql: str, con: duckdb.DuckDBPyConnection, forbidden_dirs: list[str],
                    memory_limit: int = MEMORY_LIMIT) -> Checked:
    if not isinstance(sql, str) or not sql.strip():
        raise refuse("one_statement", "the SQL text is empty")
    if len(sql) > MAX_SQL_CHARS:
        raise SqlError(f"the SQL text has {len(sql):,} characters, more than the {MAX_SQL_CHARS:,} allowed; "
                       "send a shorter statement (filter with joins or IN lists over tables, not literals)")
    for d in forbidden_dirs:
        if d and d in sql:
            raise refuse("catalog_dir", f"the statement names {d}")
    return _check(_one(sql), con, nested=False, memory_limit=memory_limit)


def _check(stmt: Any, con: duckdb.DuckDBPyConnection, nested: bool, memory_limit: int = MEMORY_LIMIT) -> Checked:
    try:
        kind = stmt.type.name
    except ValueError:  # a statement type this duckdb build's Python enum does not know
        raise refuse("statement_type", "this kind of statement") from None
    text = stmt.query
    if kind == "SELECT":
        return _check_select(text, con, memory_limit)
    if kind == "EXPLAIN" and not nested:
        toks = _tokens(text)
        skip = 2 if len(toks) > 1 and toks[1].lower() == "analyze" else 1
        inner_at = [p for p, _ in duckdb.tokenize(text)][skip] if len(toks) > skip else len(text)
        inner = _check(_one(text[inner_at:]), con, nested=True, memory_limit=memory_limit)
        if skip == 2:  # (after the statement's own rules)
            raise refuse("view_sql", "EXPLAIN ANALYZE prints the views' SQL with the files' paths; use EXPLAIN")
        return Checked(text, inner.tables, inner.introspect)
    if kind == "PRAGMA":
        toks = _tokens(text)
        if toks and toks[0].lower() != "pragma":  # DuckDB parses `COPY FROM DATABASE a TO b` as a PRAGMA
            words = " ".join(toks[:3]).upper()
            raise refuse("read_only" if toks[0].lower() == "copy" else "statement_type", f"{words} statement")
        name = toks[1].lower() if len(toks) > 1 else ""
        if name not in ALLOWED_PRAGMAS:
            raise refuse("pragma", f"PRAGMA {name or '?'}")
        return Checked(text, set(), True)
    if kind == "MULTI":  # what DuckDB makes of PIVOT without IN: it would create types first
        raise refuse("statement_type", "PIVOT without an IN list; name the values: PIVOT t ON col IN ('a', 'b')")
    raise refuse(_TYPE_RULES.get(kind, "statement_type"), f"{kind} statement")


def _check_select(text: str, con: duckdb.DuckDBPyConnection, memory_limit: int = MEMORY_LIMIT) -> Checked:
    row = con.execute("SELECT json_serialize_sql(?)", [text]).fetchone()
    tree = json.loads(row[0]) if row else {"error": True}
    if tree.get("error"):
        raise refuse("statement_type", f"a SELECT the sandbox cannot inspect ({tree.get('error_message', '')})")
    out = Checked(text, memory_limit=memory_limit)
    _walk(tree, out)
    return out


def _strings(node: Any) -> list[str]:
    """String constants anywhere under `node` (table function arguments)."""
    found: list[str] = []
    if isinstance(node, dict):
        lit = node.get("literal") if node.get("class") == "CONSTANT" else None
        if isinstance(lit, dict) and isinstance(lit.get("text"), str):
            found.append(lit["text"])
        for v in node.values():
            found.extend(_strings(v))
    elif isinstance(node, list):
        for v in node:
            found.extend(_strings(v))
    return found


def _table_function(node: dict[str, Any], out: Checked) -> None:
    fn = node.get("function") or {}
    name = str(fn.get("function_name", "")).lower()
    if name in VIEW_SQL_TABLE_FUNCTIONS:
        raise refuse("view_sql", f"{name}()")
    if name in INTROSPECTION_TABLE_FUNCTIONS:
        raise refuse("introspection", f"{name}()")
    if name in ALLOWED_TABLE_FUNCTIONS:
        out.introspect |= name.startswith(("duckdb_", "pragma_"))
        return
    if any(_URL.match(s) for s in _strings(fn)):
        raise refuse("network", f"{name}() with a URL")
    if _FILE_FUNCTION.match(name):
        raise refuse("file_access", f"{name}() reads files")
    raise refuse("table_function", f"{name}()")


def _base_table(node: dict[str, Any], out: Checked) -> None:
    name = str(node.get("table_name", ""))
    if _PATHLIKE.search(name):
        if _URL.match(name):
            raise refuse("network", f"FROM {name!r}")
        raise refuse("file_access", f"FROM {name!r} reads a file")
    if name.lower() in INTROSPECTION_VIEWS:
        raise refuse("introspection", f"FROM {name}")
    schema = str(node.get("schema_name", "")).lower()
    if name.lower() in VIEW_SQL_VIEWS or (schema, name.lower()) in VIEW_SQL_SCHEMA_VIEWS:
        raise refuse("view_sql", f"FROM {schema + '.' if schema else ''}{name}")
    if schema in _INTROSPECTION_SCHEMAS:
        out.introspect = True
    out.tables.add(name.lower())


# Scalar list and string builders and the bytes their constant arguments ask for (a second layer:
# the worker process's address-space limit stops them whatever their arguments are).
_BUILDERS = frozenset({"repeat", "range", "generate_series", "lpad", "rpad", "list_resize", "array_resize"})


def _int_arg(arg: Any) -> int | None:
    expr = arg.get("expression") if isinstance(arg, dict) else None
    lit = expr.get("literal") if isinstance(expr, dict) and expr.get("class") == "CONSTANT" else None
    if isinstance(lit, dict) and lit.get("kind") in ("INTEGER", "BIGINT", "HUGEINT", "DECIMAL"):
        try:
            return int(float(lit.get("text", "")))
        except (TypeError, ValueError, OverflowError):
            return None
    return None


def _str_arg(arg: Any) -> str | None:
    expr = arg.get("expression") if isinstance(arg, dict) else None
    lit = expr.get("literal") if isinstance(expr, dict) and expr.get("class") == "CONSTANT" else None
    return lit.get("text") if isinstance(lit, dict) and isinstance(lit.get("text"), str) else None


def builder_bytes(name: str, args: list[Any]) -> int | None:
    """A lower bound on what a list or string builder call allocates, from its constant arguments
    (None: unknown)."""
    ints = [_int_arg(a) for a in args]
    if name == "repeat" and len(args) == 2 and ints[1] is not None:
        text = _str_arg(args[0])
        return max(1, len(text.encode()) if text is not None else 8) * ints[1]
    if name in ("range", "generate_series") and args and all(i is not None for i in ints) and len(ints) <= 3:
        start, stop, step = (0, ints[0], 1) if len(ints) == 1 else (ints[0], ints[1], ints[2] if len(ints) == 3 else 1)
        assert start is not None and stop is not None and step is not None
        return 8 * abs((stop - start) // step) if step else None
    if name in ("lpad", "rpad") and len(args) >= 2 and ints[1] is not None:
        return ints[1]
    if name in ("list_resize", "array_resize") and len(args) >= 2 and ints[1] is not None:
        return 8 * ints[1]
    return None


def _builder(node: dict[str, Any], out: Checked) -> None:
    name = str(node.get("function_name", "")).lower()
    args = node.get("arguments")
    if name not in _BUILDERS or not isinstance(args, list):
        return
    size = builder_bytes(name, args)
    if size is not None and size > out.memory_limit:
        raise refuse("memory_limit", f"{name}() with these arguments builds about {size:,} bytes in one value, "
                                     f"more than the {out.memory_limit:,} bytes allowed")


def _walk(node: Any, out: Checked) -> None:
    if isinstance(node, list):
        for v in node:
            _walk(v, out)
        return
    if not isinstance(node, dict):
        return
    kind = node.get("type")
    if kind == "TABLE_FUNCTION":
        _table_function(node, out)
        fn = node.get("function")
        for k, v in node.items():  # a table function streams its rows: only its arguments are checked
            _walk(v.get("arguments") if k == "function" and isinstance(fn, dict) else v, out)
        return
    elif kind == "BASE_TABLE":
        _base_table(node, out)
    elif kind == "SHOW_REF":
        name = str(node.get("table_name", ""))
        if node.get("show_type") == "SHOW_SPECIAL" or name.startswith("__") or not name:
            out.introspect = True
        else:
            out.tables.add(name.strip('"').lower())
    elif node.get("class") == "FUNCTION":
        fname = str(node.get("function_name", "")).lower()
        if fname in DENIED_SCALAR_FUNCTIONS:
            raise refuse("scalar_function", f"{node['function_name']}()")
        if fname in INTROSPECTION_SCALAR_FUNCTIONS:
            args = node.get("arguments") or []
            setting = _str_arg(args[0]) if fname == "current_setting" and len(args) == 1 else None
            if setting is None or setting.lower() not in SAFE_SETTINGS:
                raise refuse("introspection", f"{node['function_name']}()")
        _builder(node, out)
    for v in node.values():
        _walk(v, out)


# ---------------------------------------------------------------- DuckDB's own settings

def startup_config(timeout_s: float | None, memory_limit: int = MEMORY_LIMIT) -> dict[str, Any]:
    """Settings fixed when the database starts (some can only be set then): DuckDB's own limits
    (buffer memory, threads, no spilling, execution time); `run_sql`'s worker adds the hard ones."""
    cfg: dict[str, Any] = {
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "allow_community_extensions": False,
        "allow_unsigned_extensions": False,
        "allow_extension_repositories": "forbidden",
        "allow_persistent_secrets": False,
        "python_enable_replacements": False,   # no Python variables as tables
        "python_scan_all_frames": False,
        "temp_directory": "",                  # nothing spills to disk
        "max_temp_directory_size": "0B",
        "memory_limit": f"{max(1, memory_limit >> 20)}MiB",
        "threads": THREADS,
    }
    if timeout_s is not None:
        cfg["max_execution_time"] = max(1, int(timeout_s * 1000))
    return cfg


_DISABLED_FILESYSTEMS = "HTTPFileSystem,S3FileSystem,HuggingFaceFileSystem,PipeFileSystem"


def lock_down(con: duckdb.DuckDBPyConnection, allowed_paths: list[str]) -> None:
    """After the views exist: only `allowed_paths` stay readable, then freeze the settings."""
    paths = ", ".join(quote_str(p) for p in sorted(set(allowed_paths)))
    con.execute(f"SET disabled_filesystems = {quote_str(_DISABLED_FILESYSTEMS)}")
    con.execute(f"SET allowed_paths = [{paths}]::VARCHAR[]")
    con.execute("SET allowed_directories = []::VARCHAR[]")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


# ---------------------------------------------------------------- errors

def _first_lines(exc: BaseException, limit: int = 1200) -> str:
    text = str(exc).strip()
    return text if len(text) <= limit else text[:limit] + " …"


def map_error(exc: Exception, timeout_s: float | None = None) -> CatalogError:
    """A DuckDB error as the catalog error an agent can act on."""
    msg = _first_lines(exc)
    if isinstance(exc, duckdb.InterruptException):
        return SqlTimeoutError(f"the query ran past the {timeout_s:g} s time limit and was stopped; "
                               "filter or aggregate more, or raise timeout_s", timeout_s=timeout_s)
    if isinstance(exc, duckdb.PermissionException):
        if re.search(r'"(?!file://)[a-z][a-z0-9+.-]*://', msg, re.I):
            return refuse("network", msg)
        return refuse("file_access", f"{msg} (a table file outside its table location and the warehouse, "
                                     "or inside the catalog directory, is not readable either)")
    if isinstance(exc, duckdb.OutOfMemoryException):
        return refuse("memory_limit", msg.splitlines()[0])
    if isinstance(exc, duckdb.InvalidInputException) and "configuration has been locked" in msg:
        return refuse("settings", msg.splitlines()[0])
    if isinstance(exc, duckdb.ParserException):
        return SqlError(f"SQL does not parse: {msg}")
    if isinstance(exc, duckdb.CatalogException) and "does not exist" in msg:
        return NotFoundError(f"{msg}\nTables are views named catalog.namespace.table at the pinned snapshot; "
                             "list them with SHOW ALL TABLES.")
    return SqlError(f"SQL failed: {msg}")
