"""The sandbox for SQL from agents.

Two layers. The wall is DuckDB's own security settings: external access off with an exact list
of readable files (the snapshot's data files), extension install/load off, configuration
locked. On top, a statement check with DuckDB's parser names the rule a statement breaks
before anything runs: exactly one statement, read-only, no ATTACH/LOAD/SET, table functions from
an allow-list, no file paths or URLs as tables. DuckDB's errors at run time are mapped back to
the same rules, so every refusal says which rule it hit."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import duckdb

from catalog_core.sql.types import quote_str
from catalog_core.errors import CatalogError, NotFoundError, SqlError, SqlRefusedError, SqlTimeoutError

__all__ = ["Checked", "check_statement", "startup_config", "lock_down", "map_error", "RULES", "MEMORY_LIMIT"]

MEMORY_LIMIT = "2GB"

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
    "memory_limit": f"the query needs more than the sandbox's {MEMORY_LIMIT} of memory",
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
    "duckdb_keywords", "duckdb_schemas", "duckdb_tables", "duckdb_types", "duckdb_views", "duckdb_settings",
    "duckdb_indexes", "duckdb_sequences", "duckdb_optimizers",
    "pragma_table_info", "pragma_show", "pragma_version", "pragma_platform", "pragma_collations",
    "pg_timezone_names", "icu_calendar_names", "summary", "test_all_types",
})
_FILE_FUNCTION = re.compile(r"(read_|parquet_|sniff_|glob$|.*_scan$|iceberg_|delta_)")
DENIED_SCALAR_FUNCTIONS = frozenset({"getenv"})
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


def check_statement(sql: str, con: duckdb.DuckDBPyConnection, forbidden_dirs: list[str]) -> Checked:
    if not isinstance(sql, str) or not sql.strip():
        raise refuse("one_statement", "the SQL text is empty")
    for d in forbidden_dirs:
        if d and d in sql:
            raise refuse("catalog_dir", f"the statement names {d}")
    return _check(_one(sql), con, nested=False)


def _check(stmt: Any, con: duckdb.DuckDBPyConnection, nested: bool) -> Checked:
    try:
        kind = stmt.type.name
    except ValueError:  # a statement type this duckdb build's Python enum does not know
        raise refuse("statement_type", "this kind of statement") from None
    text = stmt.query
    if kind == "SELECT":
        return _check_select(text, con)
    if kind == "EXPLAIN" and not nested:
        toks = _tokens(text)
        skip = 2 if len(toks) > 1 and toks[1].lower() == "analyze" else 1
        inner_at = [p for p, _ in duckdb.tokenize(text)][skip] if len(toks) > skip else len(text)
        inner = _check(_one(text[inner_at:]), con, nested=True)
        return Checked(text, inner.tables, inner.introspect)
    if kind == "PRAGMA":
        toks = _tokens(text)
        name = toks[1].lower() if len(toks) > 1 else ""
        if name not in ALLOWED_PRAGMAS:
            raise refuse("pragma", f"PRAGMA {name or '?'}")
        return Checked(text, set(), True)
    if kind == "MULTI":  # what DuckDB makes of PIVOT without IN: it would create types first
        raise refuse("statement_type", "PIVOT without an IN list; name the values: PIVOT t ON col IN ('a', 'b')")
    raise refuse(_TYPE_RULES.get(kind, "statement_type"), f"{kind} statement")


def _check_select(text: str, con: duckdb.DuckDBPyConnection) -> Checked:
    raw = con.execute("SELECT json_serialize_sql(?)", [text]).fetchone()[0]
    tree = json.loads(raw)
    if tree.get("error"):
        raise refuse("statement_type", f"a SELECT the sandbox cannot inspect ({tree.get('error_message', '')})")
    out = Checked(text)
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


def _table_function(node: dict, out: Checked) -> None:
    fn = node.get("function") or {}
    name = str(fn.get("function_name", "")).lower()
    if name in ALLOWED_TABLE_FUNCTIONS:
        out.introspect |= name.startswith(("duckdb_", "pragma_"))
        return
    if any(_URL.match(s) for s in _strings(fn)):
        raise refuse("network", f"{name}() with a URL")
    if _FILE_FUNCTION.match(name):
        raise refuse("file_access", f"{name}() reads files")
    raise refuse("table_function", f"{name}()")


def _base_table(node: dict, out: Checked) -> None:
    name = str(node.get("table_name", ""))
    if _PATHLIKE.search(name):
        if _URL.match(name):
            raise refuse("network", f"FROM {name!r}")
        raise refuse("file_access", f"FROM {name!r} reads a file")
    if str(node.get("schema_name", "")).lower() in _INTROSPECTION_SCHEMAS:
        out.introspect = True
    out.tables.add(name.lower())


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
    elif kind == "BASE_TABLE":
        _base_table(node, out)
    elif kind == "SHOW_REF":
        name = str(node.get("table_name", ""))
        if node.get("show_type") == "SHOW_SPECIAL" or name.startswith("__") or not name:
            out.introspect = True
        else:
            out.tables.add(name.strip('"').lower())
    elif node.get("class") == "FUNCTION" and str(node.get("function_name", "")).lower() in DENIED_SCALAR_FUNCTIONS:
        raise refuse("scalar_function", f"{node['function_name']}()")
    for v in node.values():
        _walk(v, out)


# ---------------------------------------------------------------- DuckDB's own settings

def startup_config(timeout_s: float | None) -> dict[str, Any]:
    """Settings fixed when the database starts (some can only be set then)."""
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
        "memory_limit": MEMORY_LIMIT,
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
