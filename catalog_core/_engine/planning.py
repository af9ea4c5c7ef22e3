"""File planning: the files of a table visible at a vid, pruned first by partition values
(partition obj_id seek bounds + a three-valued check of each partition) and then by each
file's min/max statistics. Pruning is conservative: a file is dropped only when the filter
is certainly false for every row it holds."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from catalog_core._engine.storage import Store
from catalog_core.errors import NoSuchTableError
from catalog_core.lake import is_table, partition_columns, partition_id, table_path, tables_query
from catalog_core.model import FileObj, QueryStats
from catalog_core.paths import split
from catalog_core.query import parse_expr
from catalog_core.query.ast import And, Compare, EndsWith, Exists, Field, In, Literal, Not, Or, StartsWith, TrueExpr
from catalog_core.query.bounds import id_ranges

__all__ = ["plan_files"]

MAYBE = None  # Kleene logic: True, False, None


def _num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _comparable(a: Any, b: Any) -> bool:
    return (_num(a) and _num(b)) or (type(a) is type(b) and isinstance(a, str))


_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _cmp_range(op: str, lo: Any, hi: Any, v: Any) -> bool | None:
    """Is `x op v` true for all / no x in [lo, hi]?"""
    if not (_comparable(lo, v) and _comparable(hi, v)):
        return MAYBE
    if op == "=":
        return False if (v < lo or v > hi) else (True if lo == hi == v else MAYBE)
    if op == "!=":
        return True if (v < lo or v > hi) else (False if lo == hi == v else MAYBE)
    if op == "<":
        return True if hi < v else (False if lo >= v else MAYBE)
    if op == "<=":
        return True if hi <= v else (False if lo > v else MAYBE)
    if op == ">":
        return True if lo > v else (False if hi <= v else MAYBE)
    return True if lo >= v else (False if hi < v else MAYBE)  # >=


class _Pruner:
    """Three-valued evaluation of a filter over column ranges: known columns have exact values
    (partitions: lo == hi) or min/max (files); unknown columns make a comparison MAYBE."""

    def __init__(self, ranges: dict[str, tuple[Any, Any]]) -> None:
        self.ranges = ranges

    def eval(self, e: Any) -> bool | None:
        if isinstance(e, TrueExpr):
            return True
        if isinstance(e, And):
            vals = [self.eval(i) for i in e.items]
            return False if False in vals else (MAYBE if MAYBE in vals else True)
        if isinstance(e, Or):
            vals = [self.eval(i) for i in e.items]
            return True if True in vals else (MAYBE if MAYBE in vals else False)
        if isinstance(e, Not):
            v = self.eval(e.item)
            return MAYBE if v is MAYBE else not v
        if isinstance(e, Compare):
            left, op, right = e.left, e.op, e.right
            if isinstance(left, Literal) and isinstance(right, Field):
                left, right, op = right, left, _FLIP[op]
            if isinstance(left, Field) and isinstance(right, Literal):
                rng = self.ranges.get(".".join(left.path))
                if rng is None or right.value is None:
                    return MAYBE
                return _cmp_range(op, rng[0], rng[1], right.value)
            return MAYBE
        if isinstance(e, In):
            rng = self.ranges.get(".".join(e.field.path))
            if rng is None:
                return MAYBE
            vals = [_cmp_range("=", rng[0], rng[1], v) for v in e.values]
            return True if True in vals else (MAYBE if MAYBE in vals else False)
        return MAYBE  # exists/startswith/endswith: not worth pruning on


def _level_bounds(expr: Any, column: str) -> Any:
    """Rewrite the filter into an obj_id filter for one partition level (sound over-approximation:
    anything not a string comparison on `column` becomes true)."""
    def rw(e: Any) -> Any:
        if isinstance(e, (And, Or)):
            return type(e)(tuple(rw(i) for i in e.items))
        if isinstance(e, Compare):
            left, op, right = e.left, e.op, e.right
            if isinstance(left, Literal) and isinstance(right, Field):
                left, right, op = right, left, _FLIP[op]
            if (isinstance(left, Field) and left.path == (column,) and isinstance(right, Literal)
                    and isinstance(right.value, str) and op != "!="):
                return Compare(Field(("obj_id",)), op, Literal(partition_id(column, right.value)))
            return TrueExpr()
        if isinstance(e, In) and e.field.path == (column,) and all(isinstance(v, str) for v in e.values):
            return In(Field(("obj_id",)), tuple(partition_id(column, v) for v in e.values))
        if isinstance(e, StartsWith) and e.field.path == (column,):
            return StartsWith(Field(("obj_id",)), partition_id(column, e.prefix))
        return TrueExpr()
    return id_ranges(rw(expr))


def _fields(e: Any) -> set[str]:
    if isinstance(e, (And, Or)):
        return set().union(*(_fields(i) for i in e.items))
    if isinstance(e, Not):
        return _fields(e.item)
    if isinstance(e, Compare):
        return {".".join(x.path) for x in (e.left, e.right) if isinstance(x, Field)}
    if isinstance(e, (In, Exists, StartsWith, EndsWith)):
        return {".".join(e.field.path)}
    return set()


@lru_cache(maxsize=256)
def _plan(where: str | None, part_cols: tuple[str, ...]) -> tuple[Any, list[Any], bool]:
    """(filter, per-level id ranges, whether file stats can prune anything) for a filter."""
    expr = parse_expr(where) if where else TrueExpr()
    levels = [_level_bounds(expr, col) for col in part_cols]
    return expr, levels, bool(_fields(expr) - set(part_cols))


def _file_ranges(value: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    out = {}
    for col, st in (value.get("columns") or {}).items():
        if isinstance(st, dict) and "min" in st and "max" in st and st["min"] is not None:
            out[col] = (st["min"], st["max"])
    return out


def plan_files(store: Store, name: str, where: str | None, vid: int,
               stats: QueryStats | None = None) -> list[FileObj]:
    path = table_path(name)
    found = store.get(path, vid)
    if found is None or not is_table(found[0]):
        raise NoSuchTableError(f"table {name!r} does not exist at vid {vid}; list tables with the path query "
                               f"{tables_query(split(path)[0])}", name=name, path=path)
    table = found[0]
    part_cols = tuple(partition_columns(table))
    expr, levels, by_stats = _plan(where, part_cols)
    counter = [0, 0]
    # (partition path, known partition values, whether the filter is already decided true)
    contexts: list[tuple[str, dict[str, Any], bool]] = [(path, {}, isinstance(expr, TrueExpr))]
    for col, ranges in zip(part_cols, levels, strict=False):
        nxt = []
        for ctx, known, _sure in contexts:
            for obj_id, value, _v, leaf, _k, _p in store.scan_children(ctx, vid, ranges, counter):
                if leaf or value.get("obj_type") != "partition":
                    continue
                vals = dict(known)
                vals[col] = (value.get(col), value.get(col))
                verdict = _Pruner(vals).eval(expr)
                if verdict is not False:
                    nxt.append((ctx + "/" + obj_id, vals, verdict is True))
        contexts = nxt
    files: list[FileObj] = []
    room = store.files.allowance()
    for ctx, known, sure in contexts:
        listed = store.scan_files(ctx, vid, counter, room)
        if sure or not by_stats:
            files += listed
            continue
        for f in listed:
            ranges = _file_ranges(f.value)
            ranges.update(known)
            if _Pruner(ranges).eval(expr) is not False:
                files.append(f)
    if stats is not None:
        stats.scanned, stats.seeks, stats.matched = counter[0], counter[1], len(files)
    return files
