"""The SQL of one table's view: a UNION ALL of `read_parquet` branches, one per group of files
that share partition values and a column set, each projected onto the table's schema.

Partition columns come from the partition objects, never from directory names, so a file
anywhere (Hive-style paths or not) gets the right values; a column a file lacks (a Hive write
dropped it, or the schema grew after the file was written) is a constant or NULL."""

from __future__ import annotations

from typing import Any

from .duck_lake import FileSpec, TableSpec, file_columns
from .duck_types import quote_ident, quote_str, sql_literal
from .query import And, Compare, EndsWith, Exists, Field, In, Literal, Not, Or, StartsWith, TrueExpr, parse_expr

__all__ = ["table_sql", "error_sql", "where_sql"]


def _cast(expr: str, typ: str | None) -> str:
    return f"CAST({expr} AS {typ})" if typ else expr


def _present(spec: TableSpec, f: FileSpec, trust_all: bool) -> frozenset[str] | None:
    """Lower-cased column names the file holds; None when unknown (not local, not readable,
    or a file the sandbox will refuse anyway, whose footer we do not open)."""
    if not f.local or not (f.trusted or trust_all):
        return None
    names = file_columns(f.path)
    return None if names is None else frozenset(n.lower() for n in names)


def _assumed(spec: TableSpec) -> frozenset[str] | None:
    if spec.columns is None:
        return None
    parts = {p.lower() for p in spec.partition_cols}
    return frozenset(c.name.lower() for c in spec.columns if c.name.lower() not in parts)


def _groups(spec: TableSpec, trust_all: bool) -> list[tuple[dict[str, Any], frozenset[str] | None, list[str]]]:
    groups: dict[tuple, tuple[dict[str, Any], frozenset[str] | None, list[str]]] = {}
    for f in spec.files:
        present = _present(spec, f, trust_all)
        if present is None:
            present = _assumed(spec)
        key = (repr(sorted(f.values.items(), key=lambda kv: kv[0])), present)
        groups.setdefault(key, (f.values, present, []))[2].append(f.path)
    return list(groups.values())


def _read(paths: list[str]) -> str:
    files = ", ".join(quote_str(p) for p in paths)
    # hive_partitioning off: partition values come from the catalog, not from directory names.
    return f"read_parquet([{files}], union_by_name = true, hive_partitioning = false)"


def _branch(spec: TableSpec, values: dict[str, Any], present: frozenset[str] | None, paths: list[str]) -> str:
    lower_values = {k.lower(): v for k, v in values.items()}
    if spec.columns is None:
        extra = [f"{sql_literal(v)} AS {quote_ident(k)}" for k, v in values.items()
                 if present is None or k.lower() not in present]
        return f"SELECT *{''.join(', ' + e for e in extra)} FROM {_read(paths)}"
    exprs = []
    for col in spec.columns:
        low = col.name.lower()
        if present is not None and low in present:
            src = quote_ident(col.name)
        elif low in lower_values:
            src = sql_literal(lower_values[low])
        else:
            src = "NULL"
        exprs.append(f"{_cast(src, col.type)} AS {quote_ident(col.name)}")
    return f"SELECT {', '.join(exprs)} FROM {_read(paths)}"


def _empty(spec: TableSpec) -> str | None:
    if spec.columns is not None:
        cols = [(c.name, c.type or "VARCHAR") for c in spec.columns]
    else:
        cols = [(p, "VARCHAR") for p in spec.partition_cols]
    if not cols:
        return None
    return "SELECT " + ", ".join(f"CAST(NULL AS {t}) AS {quote_ident(n)}" for n, t in cols) + " WHERE false"


def table_sql(spec: TableSpec, trust_all: bool, where: str | None = None) -> str | None:
    """The view body for `spec` (None: no schema and no files, nothing to show)."""
    if not spec.files:
        body = _empty(spec)
    else:
        joiner = " UNION ALL " if spec.columns is not None else " UNION ALL BY NAME "
        body = joiner.join(_branch(spec, v, p, paths) for v, p, paths in _groups(spec, trust_all))
    if body is None or not where:
        return body
    return f"SELECT * FROM ({body}) AS _t WHERE {where_sql(where)}"


def error_sql(spec: TableSpec, message: str) -> str:
    """A view with the table's columns that raises `message` when read: one broken table must
    not stop SQL over the others, and must not look empty either."""
    cols = [(c.name, c.type or "VARCHAR") for c in spec.columns or []] or [("error", "VARCHAR")]
    exprs = [f"CAST({'error(' + quote_str(message) + ')' if i == 0 else 'NULL'} AS {t}) AS {quote_ident(n)}"
             for i, (n, t) in enumerate(cols)]
    return f"SELECT {', '.join(exprs)} FROM range(1)"


# ---------------------------------------------------------------- catalog filter -> SQL

_OPS = {"=": "=", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def _operand(node: Any) -> str:
    if isinstance(node, Field):
        return ".".join(quote_ident(p) for p in node.path)
    return sql_literal(node.value)


def _compare(e: Compare) -> str:
    left, right = e.left, e.right
    for a, b in ((left, right), (right, left)):
        if isinstance(b, Literal) and b.value is None:
            # The catalog's two-valued logic: `= null` tests for a missing value, nothing else holds.
            return f"({_operand(a)} IS NULL)" if e.op == "=" else "FALSE"
    return f"COALESCE(({_operand(left)} {_OPS[e.op]} {_operand(right)}), FALSE)"


def _sql(e: Any) -> str:
    if isinstance(e, TrueExpr):
        return "TRUE"
    if isinstance(e, And):
        return "(" + " AND ".join(_sql(i) for i in e.items) + ")"
    if isinstance(e, Or):
        return "(" + " OR ".join(_sql(i) for i in e.items) + ")"
    if isinstance(e, Not):
        return f"(NOT {_sql(e.item)})"
    if isinstance(e, Compare):
        return _compare(e)
    if isinstance(e, In):
        field = _operand(e.field)
        vals = [v for v in e.values if v is not None]
        parts = [f"COALESCE({field} IN ({', '.join(sql_literal(v) for v in vals)}), FALSE)"] if vals else []
        if len(vals) < len(e.values):
            parts.append(f"({field} IS NULL)")
        return "(" + " OR ".join(parts) + ")"
    if isinstance(e, Exists):
        return f"({_operand(e.field)} IS NOT NULL)"
    if isinstance(e, StartsWith):
        return f"COALESCE(starts_with(CAST({_operand(e.field)} AS VARCHAR), {sql_literal(e.prefix)}), FALSE)"
    if isinstance(e, EndsWith):
        return f"COALESCE(suffix(CAST({_operand(e.field)} AS VARCHAR), {sql_literal(e.suffix)}), FALSE)"
    raise TypeError(f"not a filter expression: {e!r}")


def where_sql(where: str) -> str:
    """A catalog filter (`d >= "2001-06-01" and price > 3`) as a SQL condition on the rows,
    keeping the catalog's two-valued logic (a comparison with NULL is false, `not` flips it)."""
    return _sql(parse_expr(where))
