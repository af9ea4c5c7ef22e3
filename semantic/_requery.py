"""A verified query's repair, written by the review (issue 45): its SQL rewritten for a column it
reads that was renamed (`rename {old, new}`), for values it compares with that were respelled
(`value_map {column, map}`), or for a table it reads that was replaced beside
(`repoint {table, replaced}`), and verified again.

Invariant: a rewrite is certified by the data alone. Run at the snapshot of the change the finding
names, the rewritten SQL returns exactly the rows the verified SQL returned just before that change
(the change moved names, not values: a column renamed, a value respelled in the same rows); a
repoint's, run at the successor's first load, returns what the verified SQL returned of the replaced
table at that snapshot (the new table holds the rows the question asks about); else
nothing is written and the review says to rewrite the query by hand (`ReviewRefusedError`,
`answer_moved`). The rewritten SQL then runs at the snapshot the review reads, and the fingerprint of
its rows is the one stored, as `verify_query` stores it; the commit runs it once more
(`check_requeried`) and refuses an answer that moved in between.

The rewrite is sqlglot's: a column is renamed only where it resolves to the renamed table's column
(qualified by that table's name or alias, or unqualified where no other source of its scope has a
column of that name); a column selected bare keeps its output name (`new AS old`), so what reads
the query's rows (an outer query, the answer's header) is unchanged. A literal is respelled only
where it is compared with the column (`=`, `<>`, `IN`).
"""

from __future__ import annotations

from typing import Any

from catalog_core.api import CatalogAPI
from catalog_core.errors import CatalogError, InvalidValueError
from semantic import _sql
from semantic._tables import columns_of, require_table
from semantic.annotations import VERIFY_ROW_LIMIT, sql_tables, verified_answer
from semantic.errors import ReviewRefusedError
from semantic.models import Annotation, Finding
from semantic.staleness.definitions import change_vid

__all__ = ["check_requeried", "mapped_sql", "renamed_sql", "repointed_sql", "requeried"]


def _statement(sql: str) -> Any:
    """The verified query's one statement, parsed (DuckDB dialect)."""
    import sqlglot
    from sqlglot.errors import ParseError, TokenError

    try:
        trees = [t for t in sqlglot.parse(sql, read=_sql.DIALECT) if t is not None]
    except (ParseError, TokenError) as e:
        raise InvalidValueError(f"the verified query does not parse ({str(e).splitlines()[0][:200]}); rewrite it "
                                "by hand") from None
    if len(trees) != 1:
        raise InvalidValueError("the verified query is not one statement; rewrite it by hand")
    return trees[0]


def _names(node: Any) -> str:
    """The table name a sqlglot Table node writes (`t`, `ns.t`, `cat.ns.t`), lower case."""
    return ".".join(p.name for p in node.parts).lower()


def _is(node: Any, table: str) -> bool:
    """Does the Table node `node` name the catalog table `table` (its full name, or a suffix of it)?"""
    written, full = _names(node), table.lower()
    return written == full or full.endswith("." + written)


def renamed_sql(sql: str, table: str, old: str, new: str, columns: dict[str, set[str]]) -> str:
    """`sql` with each reference to column `old` of `table` called `new`. `columns`: each table the
    query reads (full name) -> the lower-case names of its columns before the rename, which decide
    the table of an unqualified column. Raises InvalidValueError when a reference to `old` could be
    another source's column too (the query needs a person)."""
    from sqlglot import exp
    from sqlglot.optimizer.scope import Scope, traverse_scope

    tree = _statement(sql)
    low = old.lower()

    def owner(node: Any) -> str | None:
        hits = [t for t in columns if _is(node, t)]
        return hits[0] if len(hits) == 1 else None

    hit = False
    for scope in traverse_scope(tree):
        for c in list(scope.columns):
            if c.name.lower() != low:
                continue
            if c.table:
                src = scope.sources.get(c.table)
                mine = isinstance(src, exp.Table) and _is(src, table)
            else:
                having = [s for s in scope.sources.values() if isinstance(s, exp.Table)
                          and low in columns.get(owner(s) or "", set())]
                derived = [s for s in scope.sources.values() if isinstance(s, Scope)
                           and low in {n.lower() for n in getattr(s.expression, "named_selects", [])}]
                if len(having) + len(derived) > 1:
                    raise InvalidValueError(f"{old} in the verified query could be the column of more than one table it "
                                      "reads; rewrite the query by hand")
                mine = len(having) == 1 and _is(having[0], table)
            if not mine:
                continue
            hit = True
            ident = exp.to_identifier(new, quoted=c.this.args.get("quoted") or None)
            renamed = exp.Column(this=ident, table=c.args.get("table"), db=c.args.get("db"),
                                 catalog=c.args.get("catalog"))
            bare = isinstance(c.parent, exp.Select) and c in c.parent.expressions
            c.replace(exp.alias_(renamed, c.name) if bare else renamed)
    if not hit:
        raise InvalidValueError(f"the verified query names no column {old} of {table}; rewrite it by hand")
    return tree.sql(dialect=_sql.DIALECT)


def mapped_sql(sql: str, column: str, vmap: dict[str, str]) -> str:
    """`sql` with each string literal of `vmap` that it compares with `column` (`=`, `<>`, `IN`)
    respelled as `vmap` says. Raises InvalidValueError when it compares the column with none."""
    from sqlglot import exp

    tree = _statement(sql)
    low = column.lower()

    def names_column(node: Any) -> bool:
        return isinstance(node, exp.Column) and node.name.lower() == low

    hit = False
    for lit in list(tree.find_all(exp.Literal)):
        if not lit.is_string or lit.this not in vmap:
            continue
        par = lit.parent
        if isinstance(par, exp.EQ | exp.NEQ):
            ok = names_column(par.left if par.right is lit else par.right)
        else:
            ok = isinstance(par, exp.In) and names_column(par.this) and lit in par.expressions
        if ok:
            hit = True
            lit.replace(exp.Literal.string(vmap[lit.this]))
    if not hit:
        raise InvalidValueError(f"the verified query compares {column} with none of {', '.join(map(repr, vmap))}; "
                                "rewrite it by hand")
    return tree.sql(dialect=_sql.DIALECT)


def repointed_sql(sql: str, replaced: str, table: str) -> str:
    """`sql` reading `table` (a full name) wherever it read `replaced`; a reference without an alias
    keeps the name it was written with as its alias, so columns qualified by it still resolve. Raises
    InvalidValueError when it does not read `replaced`."""
    from sqlglot import exp

    tree = _statement(sql)
    cte = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    parts = table.split(".")
    hit = False
    for node in list(tree.find_all(exp.Table)):
        if not _is(node, replaced) or (len(node.parts) == 1 and node.name.lower() in cte):
            continue
        hit = True
        alias = node.alias or node.name
        node.replace(exp.table_(parts[-1], db=parts[-2] if len(parts) > 1 else None,
                                catalog=parts[-3] if len(parts) > 2 else None, alias=alias))
    if not hit:
        raise InvalidValueError(f"the verified query does not read {replaced}; rewrite it by hand")
    return tree.sql(dialect=_sql.DIALECT)


def _answer(cat: CatalogAPI, sql: str, vid: int, key: str) -> str:
    """The fingerprint of `sql`'s rows at `vid` (`verified_answer`: bounded as `verify_query` runs it)."""
    try:
        fp = verified_answer(cat, sql, vid)
    except CatalogError as e:
        raise ReviewRefusedError(f"{key}: the rewritten query does not run at vid {vid} "
                                 f"({e.message.splitlines()[0][:200]}); rewrite it by hand and verify it",
                                 why="sql_error", annotation=key) from None
    if fp is None:
        raise ReviewRefusedError(f"{key}: the query returns more than {VERIFY_ROW_LIMIT} rows at vid {vid}; verify "
                                 "an aggregate", why="limit", annotation=key)
    return fp


def requeried(cat: CatalogAPI, f: Finding, ann: Annotation, action: str, params: dict[str, Any],
              vid: int) -> tuple[dict[str, Any], set[str]]:
    """The verified query `ann` repaired by the fix `action` (`rename`, `value_map`, `repoint`) of
    finding `f`, verified again at `vid`: its value with the rewritten SQL, the tables it reads,
    `verified_at_vid` and the fingerprint; and the lower-case names of the columns the rewritten SQL
    names. Raises ReviewRefusedError when the rewritten query, across the change `f` names, does not
    answer what the verified one answered (`answer_moved`), and InvalidValueError when the SQL cannot
    be rewritten by rule."""
    val = dict(ann.value or {})
    sql = str(val.get("sql") or "")
    # a repoint is checked at the successor's first load; the others across the change they name
    at = int(f.evidence.values.get("successor_vid") or 0) if action == "repoint" else change_vid(f)
    if not at or at <= 0:
        raise InvalidValueError(f"the finding on {ann.key} names no change to check a rewrite across; rewrite the "
                                "query by hand and verify it")
    if action == "rename":
        if int(params.get("scale") or 0):
            raise InvalidValueError(f"{params.get('old')} became {params.get('new')} with values "
                                    f"x10^{params.get('scale')}: the query's answer changes with them; rewrite it by "
                                    "hand and verify it")
        table = str(f.evidence.values.get("table") or ann.target)
        cols: dict[str, set[str]] = {}
        for t in [str(x) for x in val.get("tables") or [table]]:
            try:
                cols[t] = {c.name.lower() for c in columns_of(require_table(cat, t, at - 1).value)}
            except CatalogError:
                cols[t] = set()
        new_sql = renamed_sql(sql, table, str(params["old"]), str(params["new"]), cols)
    elif action == "value_map":
        vmap = {str(a): str(b) for a, b in (params.get("map") or {}).items()}
        new_sql = mapped_sql(sql, str(params.get("column") or ""), vmap)
    elif action == "repoint":
        new_sql = repointed_sql(sql, str(params.get("replaced") or ""), str(params.get("table") or ""))
    else:
        raise InvalidValueError(f"a verified query is not repaired by {action}; rewrite it by hand")
    if action == "repoint":
        # the successor's first load (`at`): the old table and the new one side by side, answering alike
        then = _answer(cat, sql, at, ann.key)
        if _answer(cat, new_sql, at, ann.key) != then:
            raise ReviewRefusedError(f"{ann.key}: asked of {params.get('table')} when it first loaded (vid {at}), the "
                                     f"query does not answer what it answered of {params.get('replaced')} then: the "
                                     "new table holds other rows for what it asks (fewer, the old table's days it "
                                     "lacks; or more, the rows loaded since, which a question over every day counts). "
                                     "Rewrite it by hand and verify it (verify_query), or dismiss the finding",
                                     why="answer_moved",
                                     annotation=ann.key, sql=new_sql)
    elif _answer(cat, new_sql, at, ann.key) != _answer(cat, sql, at - 1, ann.key):
        raise ReviewRefusedError(f"{ann.key}: rewritten for the change at vid {at}, the query does not answer what "
                                 f"it answered just before it (vid {at - 1}): the change moved values, not only "
                                 "names. Rewrite it by hand and verify it (verify_query), or dismiss the finding",
                                 why="answer_moved", annotation=ann.key, sql=new_sql)
    tables, names = sql_tables(cat, new_sql, vid)
    return {**val, "sql": new_sql, "tables": tables, "verified_at_vid": vid,
            "result_fingerprint": _answer(cat, new_sql, vid, ann.key)}, names


def check_requeried(cat: CatalogAPI, key: str, value: dict[str, Any], vid: int) -> None:
    """At commit: the repaired query still answers, at the snapshot the transaction reads (`vid`),
    what it answered when the review verified it; else nothing is written."""
    if _answer(cat, str(value.get("sql") or ""), vid, key) != value.get("result_fingerprint"):
        raise ReviewRefusedError(f"{key}: the repaired query's answer changed after it was verified at vid "
                                 f"{value.get('verified_at_vid')}; list the items again and decide on what is there "
                                 "now", why="answer_moved", annotation=key)
