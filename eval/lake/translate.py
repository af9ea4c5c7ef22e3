"""SQL written against LAKE.md, rewritten for a lake variant through its names.json (sqlglot). The
lake's build uses it for the SQL it writes into a variant's annotations (verified queries); the
harness (eval.harness.translate) for the questions' gold SQL.

`translate(sql, naming)` rewrites table references (`acme.ns.table`, `ns.table`, a bare table name
used as a qualifier), column references (qualified or not) and string literals compared with a coded
column (`=`, `<>`, `IN`, `CASE col WHEN`, `CASE WHEN col = ...`, `LIKE`/`ILIKE`, which become an `IN`
over the matching labels' codes) to the variant's names and codes. Output aliases are kept.

String literals compared (the same ways) with a column whose values name lake objects also follow the
names: the annotations declare such columns (eval.lake.naming.name_columns: a `load_log` table field's
`table_column` holds `ns.table` names, its `partition_column` partitions such as `2025-03-09/store_id=17`).
A table-name literal becomes the table's written name (a `LIKE` over table names becomes an `IN` over the
written names of the plain tables it matches); a partition literal or pattern gets its `/column=` renamed.

Invariants:
- the identity Naming (plain variant) returns the statement unchanged, byte for byte;
- a table that is neither a LAKE.md table nor a CTE of the statement raises `TranslateError` naming it;
  so does a column that is neither a LAKE.md column nor a name the statement defines (an alias, a CTE or
  derived-table column);
- a literal compared with a coded column that is not one of the domain's labels is left as written
  (it then matches nothing, as it did on the plain lake).
"""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING, Any

import sqlglot
from sqlglot import exp

if TYPE_CHECKING:
    from eval.lake.naming import Naming

__all__ = ["translate", "TranslateError", "naming_for_lake"]

DIALECT = "duckdb"


class TranslateError(ValueError):
    """The statement names something the variant's names.json does not know."""


def naming_for_lake(root: str) -> "Naming":
    from eval.lake.naming import load_names

    return load_names(root)


def _plain_col(naming: "Naming", e: exp.Expression) -> str | None:
    """The plain coded column, or column naming lake objects (naming.name_columns), an expression reads
    directly (a column, possibly under lower/upper/trim)."""
    while isinstance(e, (exp.Lower, exp.Upper, exp.Trim, exp.Paren, exp.Cast)):
        e = e.this
    if isinstance(e, exp.Column) and (e.name in naming.coded_columns() or e.name in naming.name_cols()):
        return e.name
    return None


def _code_literal(naming: "Naming", col: str, lit: exp.Expression) -> exp.Expression:
    if isinstance(lit, exp.Literal) and lit.is_string:
        role = naming.name_cols().get(col)
        if role is not None:
            return exp.Literal.string(naming.name_value(role[0], lit.this))
        dom = naming.values.get(_domain(naming, col), {})
        if lit.this in dom:
            return exp.Literal.string(dom[lit.this])
    return lit


def _domain(naming: "Naming", col: str) -> str:
    return naming.coded_columns()[col]


def _like_codes(naming: "Naming", col: str, pattern: str, ci: bool) -> list[str]:
    """The written values a LIKE pattern over plain values matches: a coded column's codes, or a table-name
    column's written table names."""
    glob = pattern.replace("*", "[*]").replace("?", "[?]").replace("%", "*").replace("_", "?")
    if col in naming.name_cols():  # role "table" (partition patterns are rewritten in place)
        dom = {p: w for p, w in naming.tables.items()}
    else:
        dom = naming.values.get(_domain(naming, col), {})
    if ci:
        return [c for lab, c in dom.items() if fnmatch.fnmatchcase(lab.lower(), glob.lower())]
    return [c for lab, c in dom.items() if fnmatch.fnmatchcase(lab, glob)]


def _codes(naming: "Naming", tree: exp.Expression) -> exp.Expression:
    def fix(node: exp.Expression) -> exp.Expression:
        if isinstance(node, (exp.EQ, exp.NEQ)):
            for a, b in (("this", "expression"), ("expression", "this")):
                col = _plain_col(naming, node.args[a])
                if col is not None:
                    node.set(b, _code_literal(naming, col, node.args[b]))
        elif isinstance(node, exp.In):
            col = _plain_col(naming, node.this)
            if col is not None:
                node.set("expressions", [_code_literal(naming, col, x) for x in node.expressions])
        elif isinstance(node, (exp.Like, exp.ILike)):
            col = _plain_col(naming, node.this)
            pat = node.expression
            role = naming.name_cols().get(col) if col is not None else None
            if role is not None and role[0] == "partition" and isinstance(pat, exp.Literal) and pat.is_string:
                node.set("expression", exp.Literal.string(naming.name_value("partition", pat.this)))
            elif col is not None and isinstance(pat, exp.Literal) and pat.is_string:
                codes = _like_codes(naming, col, pat.this, isinstance(node, exp.ILike))
                target = node.this
                while isinstance(target, (exp.Lower, exp.Upper, exp.Trim, exp.Paren)):
                    target = target.this
                new = exp.In(this=target.copy(), expressions=[exp.Literal.string(c) for c in codes]) if codes \
                    else exp.false()
                return new
        elif isinstance(node, exp.Case) and node.this is not None:
            col = _plain_col(naming, node.this)
            if col is not None:
                for w in node.args.get("ifs") or []:
                    w.set("this", _code_literal(naming, col, w.this))
        return node

    return tree.transform(fix)


def _schema(naming: "Naming") -> dict[str, Any]:
    """sqlglot schema of every LAKE.md table with every column it ever has in the history (of the naming's
    world: its `schema` when it has one)."""
    from eval.lake import tables as T

    if naming.schema:
        mine: dict[str, Any] = {}
        for name, cols in naming.schema.items():
            ns, tn = name.split(".")
            mine.setdefault(ns, {})[tn] = {c: "VARCHAR" for c in cols}
        return {naming.catalog: mine}

    later = {"core.dim_customer": T.CUSTOMER_SCD2, "core.fct_web_sessions": T.SESSIONS_UUID,
             "mart.agg_daily_store_revenue": T.DAILY_REVENUE_USD, "mart.rpt_finance_monthly_revenue": T.FINANCE_REGION}
    out: dict[str, Any] = {}
    for name, t in T.TABLES.items():
        ns, tn = name.split(".")
        cols = [c for c, _ in t.columns] + [c for c, _ in later.get(name, []) if c not in dict(t.columns)]
        out.setdefault(ns, {})[tn] = {c: "VARCHAR" for c in cols}
    return {T.CATALOG: out}


def translate(sql: str, naming: "Naming", *, qualify: bool = True) -> str:
    """`sql` (DuckDB dialect, LAKE.md names) rewritten for `naming`'s variant; see the module docstring.
    A statement is qualified first (sqlglot's optimizer, against every LAKE.md column), so a column is
    renamed only where it reads a lake table, never where it names an alias or a CTE's output; an
    expression (a metric's expression or filter) is translated name by name, and so is a statement with
    `qualify=False` (SQL an agent reads, e.g. a verified query: qualifying would add the plain table and
    column names as aliases; such SQL must not give a lake column's name to an alias)."""
    if naming.identity:
        return sql
    try:
        tree = sqlglot.parse_one(sql, read=DIALECT)
    except sqlglot.errors.ParseError as e:
        raise TranslateError(f"cannot parse the SQL to translate it: {e}") from None
    ctes = {c.alias_or_name for c in tree.find_all(exp.CTE)}
    bare = {t.split(".")[1]: t for t in naming.tables}
    tree = _codes(naming, tree)  # type: ignore[arg-type]
    _check_tables(tree, naming, ctes, bare)
    if isinstance(tree, exp.Query) and qualify:
        tree = _rename_qualified(tree, naming)
    else:
        _rename_by_name(tree, naming, bare)
    _rename_tables(tree, naming, ctes, bare)
    return tree.sql(dialect=DIALECT)


def _check_tables(tree: exp.Expr, naming: "Naming", ctes: set[str], bare: dict[str, str]) -> None:
    """Every table the SQL reads (not a CTE) is a LAKE.md table."""
    for t in list(tree.find_all(exp.Table)):
        name, db = t.name, t.args.get("db")
        if not db and name in ctes:
            continue
        plain = f"{db.name}.{name}" if db is not None else bare.get(name, name)
        if plain not in naming.tables:
            raise TranslateError(f"table {t.sql(dialect=DIALECT)!r} is not a LAKE.md table (names.json knows "
                                 f"{', '.join(sorted(naming.tables)[:4])}, ...); fix the SQL")


def _rename_qualified(tree: exp.Query, naming: "Naming") -> exp.Query:
    """The statement qualified, with each column that reads a lake table renamed."""
    from sqlglot.optimizer.qualify import qualify as _qualify
    from sqlglot.optimizer.scope import traverse_scope

    try:
        out = _qualify(tree, schema=_schema(naming), dialect=DIALECT, catalog=naming.catalog, quote_identifiers=False,
                       identify=False, validate_qualify_columns=True)
    except sqlglot.errors.OptimizeError as e:
        raise TranslateError(f"cannot resolve the SQL's columns against LAKE.md: {e}; fix the SQL") from None
    for scope in traverse_scope(out):
        for c in scope.columns:
            if isinstance(scope.sources.get(c.table), exp.Table) and not isinstance(c.this, exp.Star):
                if c.name not in naming.columns:
                    raise TranslateError(f"column {c.sql(dialect=DIALECT)!r} is not a LAKE.md column; fix "
                                         "the SQL")
                c.set("this", exp.to_identifier(naming.columns[c.name]))
    return out


def _rename_by_name(tree: exp.Expr, naming: "Naming", bare: dict[str, str]) -> None:
    """Every column (and an alias named like a lake column) renamed name by name; a column
    qualified by a bare table name (not an alias) gets the table's written name."""
    aliases = {t.alias for t in tree.find_all(exp.Table) if t.alias}
    for a in tree.find_all(exp.Alias):  # an alias named like a lake column takes its written name too
        if a.alias in naming.columns:
            a.set("alias", exp.to_identifier(naming.columns[a.alias]))
    for c in list(tree.find_all(exp.Column)):
        q = c.args.get("table")
        if q is not None and q.name in bare and q.name not in aliases:
            c.set("table", exp.to_identifier(naming.tables[bare[q.name]].split(".")[1]))
        if isinstance(c.this, exp.Star):
            continue
        if c.name not in naming.columns:
            raise TranslateError(f"column {c.sql(dialect=DIALECT)!r} is not a LAKE.md column; fix the SQL")
        c.set("this", exp.to_identifier(naming.columns[c.name]))


def _rename_tables(tree: exp.Expr, naming: "Naming", ctes: set[str], bare: dict[str, str]) -> None:
    """Every lake table renamed to its written namespace and name (a qualified one keeps a catalog)."""
    for t in tree.find_all(exp.Table):
        name, db, cat = t.name, t.args.get("db"), t.args.get("catalog")
        if not db and name in ctes:
            continue
        plain = f"{db.name}.{name}" if db is not None else bare[name]
        ns, tn = naming.tables[plain].split(".")
        t.set("this", exp.to_identifier(tn))
        t.set("db", exp.to_identifier(ns))
        if cat is not None or db is not None:
            t.set("catalog", exp.to_identifier(cat.name if cat is not None else naming.catalog))
