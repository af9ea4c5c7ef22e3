"""Incremental checking: which tables' findings can differ between two vids, read from what was
written between them, so a check after a change costs the change and not the catalog.

    changes_since(cat, since, vid) -> Changes        what the commit log says was written in (since, vid]
    dependencies(ctx, name) -> frozenset[str]         the tables one table's findings read
    affected(ctx, names, since, changes) -> list[str] the tables to re-check

`engine.table_findings` carries a table's findings over from the last vid it computed them at (in
this process) when the table is not affected; `semantic.review.scan(changed_only=True)` re-checks
only the affected tables and keeps the others' stored records (with their `scan_vid`).

Invariant (the dependency rule). The clock-independent findings of table T at vid v depend only on

1. the objects under T's own path: its table object, partitions, files and the annotations and
   review decisions in its `_semantic` folder (the folder object itself and the stored `review.scan`
   record excepted: no check reads them);
2. the same objects of every table in `dependencies(T)`: T's lineage inputs, transitively (what
   flows downstream reads their findings), and every table an annotation of T or of one of those
   inputs names (a relationship's `to`, a verified query's tables or SQL text, `replaced_by`, a load
   log, a metric's tables: any `catalog.namespace.table` or `namespace.table` text in an annotation
   value, or a `table.column` whose table is one, or the table's own value's lineage, that is the
   name of a table);
3. the set of table names, for a T one of whose annotations names a table that does not exist
   (the checks then suggest a close name among every table);
4. the annotations above the tables (catalog and namespace `_semantic` folders);

and on the history before v of those objects, which no later commit rewrites. So when no commit in
(v0, v] wrote any of them, T's findings at v are its findings at v0; a finding of an unchanged table
whose evidence reads a changed neighbour is recomputed because the neighbour is in T's dependencies.
A check that reads anything else must add it here (to `dependencies` or `Changes`), or the
incremental result stops being the full one (tests/semantic/test_staleness_incremental.py checks
that equality after random sequences of changes).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from catalog_core import lake
from catalog_core.api import CatalogAPI
from semantic.history import Context, cache_of

__all__ = ["Changes", "changes_since", "dependencies", "references", "affected", "SCAN_RECORD"]

SCAN_RECORD = "review.scan"  # the stored data-depth pass (semantic.review.SCAN_KEY): read by no check

_NAME = re.compile(r"[A-Za-z_][\w$]*(?:\.[A-Za-z_][\w$]*){1,2}")


@dataclass(frozen=True)
class Changes:
    """What was written in (since, vid]: per table, the last vid that wrote an object under its path
    (`tables`); the last vid that created or dropped a table (`names`, 0: none); the last vid that
    wrote an annotation above the tables (`shared`, 0: none)."""

    since: int
    vid: int
    tables: dict[str, int] = field(default_factory=dict)
    names: int = 0
    shared: int = 0

    def after(self, name: str, since: int) -> bool:
        """Was anything under `name` written after `since` (and by `vid`)?"""
        return self.tables.get(name, 0) > since


def _table_of(parts: list[str]) -> tuple[str | None, bool]:
    """(the table a path lies under, whether it is a path above the tables' level in a `_semantic`
    folder). Paths of a lake are /catalog/namespace/table/...; ids starting with `_` are reserved."""
    if len(parts) >= 3 and not any(p.startswith("_") for p in parts[:3]):
        return ".".join(parts[:3]), False
    return None, any(p == lake.SEMANTIC for p in parts[:3])


def changes_since(cat: CatalogAPI, since: int, vid: int) -> Changes:
    """`Changes` in (since, vid], from `cat.diff` (the commit log: the cost follows the number of
    objects written, not the catalog); cached per (since, vid). `since` >= `vid`: nothing."""
    if since >= vid:
        return Changes(since, vid)
    cache = cache_of(cat).findings
    key = ("changes_since", since, vid)
    got = cache.take(key)
    if got is not None:
        return got[0]
    tables: dict[str, int] = {}
    names = shared = 0
    for c in cat.diff(since, vid):
        parts = [p for p in c.path.split("/") if p]
        if parts[-1:] == [lake.SEMANTIC] or (parts[-1:] == [SCAN_RECORD] and parts[-2:-1] == [lake.SEMANTIC]):
            continue  # a `_semantic` folder object holds no annotation; no check reads a stored pass
        name, above = _table_of(parts)
        if name is not None:
            tables[name] = max(tables.get(name, 0), c.vid)
            if len(parts) == 3 and c.kind in ("added", "removed"):
                names = max(names, c.vid)
        elif above:
            shared = max(shared, c.vid)
    out = Changes(since, vid, tables, names, shared)
    cache.put(key, (out,))
    return out


def references(ctx: Context, name: str) -> tuple[set[str], bool]:
    """(the tables the annotations of `name` name, whether one of them names a table that does not
    exist at ctx.vid). A name is any dotted `catalog.namespace.table` or `namespace.table` text in
    an annotation value (quotes removed); a two-part name stands for the tables it ends, or, when
    none does, for the tables its first part names (`fct_orders.status`: a column qualified by its
    table, as a metric's filter names another table's column)."""
    key = ("references", name, ctx.vid)
    got = ctx.cache.findings.take(key)
    if got is not None:
        return got[0]
    tables = ctx.tables()
    by_tail: dict[str, set[str]] = {}
    by_last: dict[str, set[str]] = {}
    for t in tables:
        by_tail.setdefault(t.split(".", 1)[1].lower(), set()).add(t)
        by_last.setdefault(t.rsplit(".", 1)[1].lower(), set()).add(t)
    lower = {t.lower(): t for t in tables}
    out: set[str] = set()
    missing = False
    for a in ctx.annotations(name):
        if a.kind == "review" or a.value is None:
            continue
        text = json.dumps(a.value, default=str).replace('\\"', "").replace("`", "")
        for m in _NAME.findall(text):
            low = m.lower()
            if low.count(".") == 2:
                if low in lower:
                    out.add(lower[low])
                elif not low.replace(".", "").isdigit():
                    missing = True
            else:  # `namespace.table`, else `table.column` (a metric filter's qualified column)
                out |= by_tail.get(low, set()) or by_last.get(low.split(".", 1)[0], set())
    got = ctx.cache.findings.put(key, ((out - {name}, missing),))
    return got[0]


def _inputs(ctx: Context, name: str) -> list[str]:
    obj = ctx.table(name)
    lin = None if obj is None else lake.Lineage.from_raw(obj.value)
    return [] if lin is None else sorted(lin.inputs)


def dependencies(ctx: Context, name: str) -> frozenset[str]:
    """The tables (besides `name`) whose objects the findings of `name` at ctx.vid read (the
    dependency rule of this module's docstring); cached per (name, vid)."""
    key = ("dependencies", name, ctx.vid)
    got = ctx.cache.findings.take(key)
    if got is not None:
        return got[0]
    seen = {name}
    todo = [name]
    while todo:  # lineage ancestors, transitively
        for up in _inputs(ctx, todo.pop()):
            if up not in seen:
                seen.add(up)
                todo.append(up)
    deps = set(seen)
    for t in seen:
        deps |= references(ctx, t)[0]
    out = frozenset(deps - {name})
    ctx.cache.findings.put(key, (out,))
    return out


def affected(ctx: Context, names: list[str], since: dict[str, int] | int, changes: Changes) -> list[str]:
    """The tables of `names` whose findings at ctx.vid may differ from those at their `since` vid
    (one vid for all, or per table; a table missing from a dict, or with since < 0, is always
    affected): something under the table or one of its `dependencies` was written after it, a table
    was created or dropped while it names one that does not exist, or an annotation above the tables
    changed. `changes` must start at or before every `since`."""
    out = []
    for n in names:
        s = since if isinstance(since, int) else since.get(n, -1)
        if s < 0 or changes.shared > s or changes.after(n, s) \
                or any(changes.after(d, s) for d in dependencies(ctx, n)) \
                or (changes.names > s and references(ctx, n)[1]):
            out.append(n)
    return out
