"""Parsing user SQL fragments (metric expressions, filters, relationship conditions, `where`) with
sqlglot in the DuckDB dialect, with errors that point at the offending line and column, and the
few builders the compilers share. User text is only ever parsed into an AST and re-generated; it is
never pasted into SQL."""

from __future__ import annotations

import functools
import threading
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from semantic.errors import InvalidExpressionError

__all__ = ["parse_fragment", "sandboxed", "caret", "position", "table_expr", "ident", "col", "gen", "conjuncts", "dtype",
           "quote", "DIALECT"]

DIALECT = "duckdb"
# Anything that is a statement or reads other relations has no place in an expression.
_FORBIDDEN = (exp.Query, exp.Subquery, exp.DDL, exp.DML, exp.Command, exp.Block, exp.Set, exp.Use,
              exp.Pragma, exp.Transaction, exp.Commit, exp.Rollback, exp.Describe, exp.Show)


def caret(text: str, line: int, col: int) -> str:
    """The offending line of `text` with a caret under column `col` (1-based)."""
    lines = text.splitlines() or [""]
    row = lines[min(max(line, 1), len(lines)) - 1]
    return f"\n    {row}\n    {' ' * max(col - 1, 0)}^"


def position(node: exp.Expression) -> tuple[int, int] | None:
    """(line, column) of a parsed node, when sqlglot recorded it (identifiers do)."""
    for n in (node, node.this if isinstance(node.this, exp.Expression) else None):
        meta = getattr(n, "meta", None) if n is not None else None
        if meta and "line" in meta and "col" in meta:
            start = meta.get("start")
            end = meta.get("end")
            width = (end - start + 1) if isinstance(start, int) and isinstance(end, int) else 1
            return int(meta["line"]), int(meta["col"]) - width + 1
    return None


def at(text: str, node: exp.Expression) -> str:
    """' at line L, column C:' + caret, or '' when the position is unknown."""
    pos = position(node)
    if pos is None:
        return ""
    return f" (line {pos[0]}, column {pos[1]}){caret(text, *pos)}"


def parse_fragment(text: Any, what: str) -> exp.Expression:
    """One SQL expression (not a statement). `what` names it in errors ("metric expression").
    Returns a private tree the caller may change (parses are cached, callers get copies)."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidExpressionError(f"{what} must be non-empty SQL text, got {text!r}")
    return _parse(text, what).copy()


@functools.lru_cache(maxsize=512)
def _parse(text: str, what: str) -> exp.Expression:
    if not text.strip():
        raise InvalidExpressionError(f"{what} must be non-empty SQL text, got {text!r}")
    try:
        trees = [t for t in sqlglot.parse(text, read=DIALECT) if t is not None]
    except ParseError as e:
        err = e.errors[0] if e.errors else {}
        line, column = int(err.get("line") or 1), int(err.get("col") or 1)
        desc = str(err.get("description") or e).split("\n")[0]
        raise InvalidExpressionError(f"{what} does not parse at line {line}, column {column}: {desc}{caret(text, line, column)}",
                       text=text, line=line, column=column) from None
    except TokenError as e:
        raise InvalidExpressionError(f"{what} does not parse: {e}", text=text) from None
    if len(trees) != 1:
        raise InvalidExpressionError(f"{what} must be one SQL expression, got {len(trees)} statements separated by ';'",
                       text=text)
    tree = trees[0]
    assert isinstance(tree, exp.Expression)
    for node in tree.walk():
        if isinstance(node, _FORBIDDEN):
            kind = "SUBQUERY" if isinstance(node, exp.Query) and node.parent is not None else type(node).__name__.upper()
            raise InvalidExpressionError(f"{what} must be an expression over columns, not a statement or subquery "
                           f"({kind}){at(text, node)}", text=text)  # type: ignore[arg-type]
    sandboxed(text, what)
    return tree


def sandboxed(text: str, what: str) -> None:
    """Refuse an expression that the SQL sandbox would refuse in a statement (`run_sql`'s rules:
    no functions that read settings, files or the environment, no list or string builders whose
    constant arguments ask for more than the memory limit, ...), so that what an annotation
    stores is what its checks can run. The error names the sandbox's rule."""
    from catalog_core.errors import SqlError, SqlRefusedError
    from catalog_core.sql import check_sql

    try:
        check_sql(f"SELECT {text}\n")  # (after a newline: a trailing `--` comment cannot swallow anything)
    except SqlRefusedError as e:
        raise InvalidExpressionError(f"{what} is refused by the SQL sandbox (rule {e.details.get('rule')!r}): "
                                     f"{e.message}", text=text, rule=e.details.get("rule")) from None
    except SqlError as e:
        raise InvalidExpressionError(f"{what} does not parse as DuckDB SQL: {e.message}", text=text) from None


def ident(name: str) -> exp.Identifier:
    return exp.Identifier(this=name, quoted=True)


def col(name: str, alias: str) -> exp.Column:
    return exp.Column(this=ident(name), table=ident(alias))


def table_expr(name: str, alias: str) -> exp.Table:
    """`"acme"."core"."t" AS "alias"` for the dotted table name."""
    catalog, db, table = name.split(".")
    return exp.Table(this=ident(table), db=ident(db), catalog=ident(catalog),
                     alias=exp.TableAlias(this=ident(alias)))


def conjuncts(tree: exp.Expression | None) -> list[exp.Expression]:
    if tree is None:
        return []
    if isinstance(tree, exp.And):
        return conjuncts(tree.this) + conjuncts(tree.expression)
    if isinstance(tree, exp.Paren):
        return conjuncts(tree.this) if isinstance(tree.this, exp.And) else [tree]
    return [tree]


def dtype(name: str) -> exp.DataType:
    """A fresh DATE / TIMESTAMP / ... type node (`DataType.build` parses its argument: slow)."""
    return exp.DataType(this=exp.DataType.Type[name])


def quote(name: str) -> str:
    """A DuckDB quoted identifier."""
    return '"' + name.replace('"', '""') + '"'


_GENERATORS = threading.local()


def gen(tree: exp.Expression) -> str:
    """DuckDB SQL of `tree` (identifiers quoted), without copying it; one generator per thread."""
    g = getattr(_GENERATORS, "g", None)
    if g is None:
        from sqlglot.dialects.dialect import Dialect

        g = _GENERATORS.g = Dialect.get_or_raise(DIALECT).generator(identify=True)
    return g.generate(tree, copy=False)
