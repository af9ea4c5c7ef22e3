"""Class `values_units`: values and units. Unit drift (a column's values scaled by a power of ten,
with or without a unit annotation), enums and sample values against the statistics and the data
(values outside, values gone), and restatements (a full rewrite of an appended table that moved a
string column's values). Evidence: column, partition and file statistics, the load log, the data."""

from __future__ import annotations

import math
import re
from typing import Any

from catalog_core.errors import CatalogError
from semantic._bounded import literals
from semantic.history import Context, type_family
from semantic.models import Annotation, ColumnRef, Evidence, Finding
from semantic.staleness.core import (
    Duck,
    Table,
    cause_of,
    day_of,
    finding,
    make_fix,
    num,
    pair_cost,
    quote_id,
    quote_table,
    rows_at,
    scale_of,
    stats_at,
    unit_word,
    word_set,
)


def unit_drift(t: Table, ann: Annotation, refs: list[ColumnRef]) -> list[Finding]:
    out = []
    b = ann.provenance.basis
    recent = None
    for ref in refs:
        cur = t.cols.get(ref.id)
        if cur is None or type_family(cur.type) != "number" or ref.name not in b.stats:
            continue
        if recent is None:
            recent = t.recent_stats(b.vid)
        now_s = recent.get(cur.name)
        k = scale_of(b.stats[ref.name], now_s)
        if k:
            changed = [v for v, _ in t.tl.data_after(b.vid)] or [t.obj.vid]
            out.append(finding(ann, f"{t.name}.{cur.name}", "unit_drift", "stale",
                                f"values of {cur.name!r} written since vid {b.vid} are the annotated ones "
                                f"scaled by 10^{k}", changed[:1] + changed[-1:],
                                values={"basis_stats": b.stats[ref.name].model_dump(), "recent_stats": now_s,
                                        "scale_exp": k},
                                suggestion=f"unit changed ({unit_word(k)}); update the unit and description",
                                fixes=[make_fix("update_unit", column=cur.name, scale=k)],
                                cause=cause_of("unit", t.name, changed[0], cur.name)))
    return out


def _range_moved(old: dict[str, Any], whole: dict[str, Any]) -> bool:
    """Could a load lie wholly beyond `old` by a power of ten, given the whole table's range now?
    (Its maximum grew, or its minimum shrank, by more than half a power of ten: a cheap necessary
    condition that spares reading the files' statistics.)"""
    ohi, olo, hi, lo = num(old.get("max")), num(old.get("min")), num(whole.get("max")), num(whole.get("min"))
    grew = bool(ohi and hi and ohi > 0 and hi / ohi > 10 ** 0.5)
    shrank = bool(olo and lo and olo > 0 and lo > 0 and olo / lo > 10 ** 0.5)
    return grew or shrank


def scale_shift(t: Table, ann: Annotation, keys: set[str]) -> list[Finding]:
    """A numeric column's meaning changed in place, with no schema change: the values written since
    the annotation's basis all lie beyond every value then (their minimum above the old maximum, or
    their maximum below the old minimum) and the two ranges differ by a clean power of ten (a unit
    or scale shift: cents written as dollars, grams as kilograms). For columns with no unit
    annotation (`unit_drift` judges those); identifiers and grain keys grow by nature and are left out."""
    b = ann.provenance.basis
    refs = [r for r in b.columns if r.id == ann.column_id][:1]
    out = []
    for ref in refs:
        cur = t.cols.get(ref.id)
        if cur is None or type_family(cur.type) != "number" or ref.name not in b.stats or \
                cur.name.lower() in keys or cur.name.lower().endswith(("_id", "_uuid", "_key", "_sk")):
            continue
        old = b.stats[ref.name].model_dump()
        whole = t.stat(cur.name) or {}
        if not _range_moved(old, whole):
            continue  # the table's range still holds the basis range at both ends: no load lies wholly beyond it
        now_s = t.written_since(b.vid).get(cur.name)
        lo, hi = num((now_s or {}).get("min")), num((now_s or {}).get("max"))
        olo, ohi = num(old.get("min")), num(old.get("max"))
        if None in (lo, hi, olo, ohi):
            continue
        assert lo is not None and hi is not None and olo is not None and ohi is not None
        beyond = lo > ohi if lo > 0 else hi < olo
        k = scale_of(old, now_s)
        if not beyond or not k:
            continue
        changed = [v for v, _ in t.tl.data_after(b.vid)] or [t.obj.vid]
        out.append(finding(ann, f"{t.name}.{cur.name}", "unit_drift", "stale",
                           f"values of {cur.name!r} written since vid {b.vid} all lie beyond its values then "
                           f"([{lo}, {hi}] against [{olo}, {ohi}]), scaled by 10^{k}: its unit or scale changed in place",
                           changed[:1] + changed[-1:], values={"basis_stats": old, "recent_stats": now_s, "scale_exp": k},
                           suggestion=f"unit changed ({unit_word(k)}); update the unit and description",
                           fixes=[make_fix("update_unit", column=cur.name, scale=k)],
                           cause=cause_of("unit", t.name, changed[0], cur.name)))
    return out


def enum_meta(t: Table, ann: Annotation) -> list[Finding]:
    allowed = [v for v in (ann.value or []) if v is not None]
    cur = t.cols.get(ann.column_id or -1)
    s = t.stat(cur.name) if cur else None
    if not allowed or not s:
        return []
    lo, hi = s.get("min"), s.get("max")
    try:
        out_lo = lo is not None and lo < min(allowed)
        out_hi = hi is not None and hi > max(allowed)
    except TypeError:
        return []
    field = ann.field
    if field == "enum" and (out_lo or out_hi):
        bad = [x for x, o in ((lo, out_lo), (hi, out_hi)) if o]
        last = t.tl.data_commits[-1][0] if t.tl.data_commits else t.obj.vid
        return [finding(ann, f"{t.name}.{ann.column}", "enum_violated", "stale",
                         f"{ann.column} holds values outside the declared enum: {bad}", [last],
                         values={"outside": bad, "enum": allowed},
                         suggestion=f"add {', '.join(map(str, bad))} to the enum",
                         fixes=[make_fix("add_enum_values", column=str(ann.column), values=bad)])]
    if field == "sample_values":
        try:
            gone = [v for v in allowed if (lo is not None and v < lo) or (hi is not None and v > hi)]
        except TypeError:
            return []
        if gone:
            return [finding(ann, f"{t.name}.{ann.column}", "sample_values_missing", "suspect",
                             f"sample values no longer in {ann.column}'s range [{lo}, {hi}]: {gone}", [t.obj.vid],
                             values={"missing": gone, "min": lo, "max": hi})]
    return []


def rewrites(t: Table) -> list[tuple[int, float]]:
    """The data commits that rewrote `t` in full — the commit's write log (`meta.writes`, as the
    Spark bridge records it) says `overwrite` for the table and every file the table holds after
    the commit was written by it — when the table is normally loaded by appends (most of its
    logged writes are appends). Rewrites of tables that are always overwritten (dimensions and
    marts rebuilt every load) are routine and return []."""
    key = ("rewrites", t.name, t.obj.vid)
    got = t.ctx.cache.findings.take(key)
    if got is not None:
        return got[0]
    short = {t.name, t.name.split(".", 1)[-1]}
    modes: list[tuple[int, float, dict[str, Any]]] = []
    for v, tt in t.tl.data_commits:
        c = t.ctx.commit(v)
        for w in ((c.meta or {}).get("writes") or []) if c is not None else []:
            if isinstance(w, dict) and str(w.get("table")) in short:
                modes.append((v, tt, w))
    appends = sum(1 for _, _, w in modes if w.get("mode") == "append")
    over = [(v, tt, w) for v, tt, w in modes if w.get("mode") == "overwrite"]
    out: list[tuple[int, float]] = []
    if over and appends > len(over):
        after = {h.vid: h.value or {} for h in t.ctx.cat.history(t.obj.path) if h.vid in {v for v, _, _ in over}}
        for v, tt, w in over:
            st = after.get(v, {}).get("stats") or {}
            if st.get("file_count") == w.get("files") or st.get("row_count") == w.get("rows"):
                out.append((v, tt))
    t.ctx.cache.findings.put(key, (out,))
    return out


def sql_literals(text: str, t: Table) -> dict[str, list[str]]:
    """String literals an SQL condition compares a string column of `t` with (=, <>, IN):
    column name -> values. Literals inside casts (dates, timestamps) are not values of a column."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(text, read="duckdb")
    except Exception:  # noqa: BLE001 - an unparsable text names no values
        return {}
    out: dict[str, list[str]] = {}

    def add(c: exp.Expression, lits: list[exp.Expression]) -> None:
        if not isinstance(c, exp.Column):
            return
        cur = t.col(c.name)
        if cur is None or type_family(cur.type) != "string":
            return
        for lit in lits:
            if isinstance(lit, exp.Literal) and lit.is_string:
                out.setdefault(cur.name, []).append(lit.this)

    for node in tree.find_all(exp.EQ, exp.NEQ, exp.In):
        if isinstance(node, exp.In):
            add(node.this, list(node.expressions))
        else:
            left, right = node.this, node.expression
            add(left, [right])
            add(right, [left])
    return out


MAX_VALUES = 50   # distinct values a restatement's evidence and fix list, per column


def _file_values(t: Table, vid: int) -> dict[str, set[str]]:
    """Per string column, the values the table's files at `vid` record as a min or a max (cached)."""
    key = ("file_values", t.obj.path, vid)
    got = t.ctx.cache.findings.take(key)
    if got is not None:
        return got[0]
    strings = {c.name for c in t.cols.values() if type_family(c.type) == "string"}
    out: dict[str, set[str]] = {c: set() for c in strings}
    files = t.files(vid)
    for f in files:
        for c, st in ((f.value.get("columns") or {}).items()):
            if c in out and isinstance(st, dict):
                out[c].update(str(v) for v in (st.get("min"), st.get("max")) if isinstance(v, str))
    t.ctx.cache.findings.put(key, (out,))
    return out


def stats_shift(t: Table, v: int) -> dict[str, tuple[list[str], list[str], dict[str, str]]]:
    """The string columns whose file statistics moved across the rewrite at `v`: column ->
    (values recorded before and never after, values recorded after and never before, old -> new:
    the appeared value the files of one partition record most often in the place of a vanished one).
    A column whose bounds per directory (partition) are the same either side, in a rewrite that kept
    the row count, moved nothing: a compaction merges files, so values that were only some file's bound
    stop being recorded."""
    before, after = _file_values(t, v - 1), _file_values(t, v)
    pb, pa = _partition_bounds(t, v - 1), _partition_bounds(t, v)
    # a compaction rewrites the same rows: with another row count the rewrite restated them
    rows_kept = rows_at(t, v - 1) is not None and rows_at(t, v - 1) == rows_at(t, v)
    out = {}
    for c in sorted(after):
        b, a = before.get(c, set()), after[c]
        if rows_kept and pb and \
                {p: cols.get(c) for p, cols in pb.items()} == {p: cols.get(c) for p, cols in pa.items()}:
            continue  # every directory's bounds kept: files merged or split (a compaction), no value moved
        if b and (b - a or a - b):
            gone, fresh = b - a, a - b
            votes: dict[tuple[str, str], int] = {}
            for part, cols in pb.items():
                old, new = cols.get(c), pa.get(part, {}).get(c)
                if old is None or new is None:
                    continue
                for i in (0, 1):
                    if old[i] in gone and new[i] in fresh:  # a vanished value became one that appeared
                        votes[(old[i], new[i])] = votes.get((old[i], new[i]), 0) + 1
            vm: dict[str, str] = {}
            for (g, n), _cnt in sorted(votes.items(), key=lambda kv: -kv[1]):
                vm.setdefault(g, n)
            out[c] = (sorted(gone)[:MAX_VALUES], sorted(a - b)[:MAX_VALUES], vm)
    return out


def _partition_bounds(t: Table, vid: int) -> dict[str, dict[str, tuple[str, str]]]:
    """Per partition (directory of the files) and string column, the (min, max) its files record at `vid`."""
    key = ("part_bounds", t.obj.path, vid)
    got = t.ctx.cache.findings.take(key)
    if got is not None:
        return got[0]
    out: dict[str, dict[str, tuple[str, str]]] = {}
    files = t.files(vid)
    for f in files:
        part = f.path.rsplit("/", 1)[0]
        cur = out.setdefault(part, {})
        for c, st in ((f.value.get("columns") or {}).items()):
            if isinstance(st, dict) and isinstance(st.get("min"), str) and isinstance(st.get("max"), str):
                lo, hi = cur.get(c, (st["min"], st["max"]))
                cur[c] = (min(lo, st["min"]), max(hi, st["max"]))
    t.ctx.cache.findings.put(key, (out,))
    return out


def _value_refs(t: Table, a: Annotation, column: str, values_of: dict[str, list[str]],
                labels_of: dict[str, dict[str, str]]) -> list[str] | None:
    """The values of `column` annotation `a` names (None: it is not about the column's values):
    an enum / sample_values lists them, a description names some of the column's annotated values
    (or their `labels`, for a coded column),
    a metric filter or verified query compares the column with literals."""
    def named(text: object) -> list[str]:
        w, low = word_set(text), str(text or "").lower()
        labels = labels_of.get(column.lower(), {})
        return [v for v in values_of.get(column, []) if v.lower() in w or
                (str(labels.get(v) or "").lower() and re.search(rf"\b{re.escape(str(labels[v]).lower())}\b", low))]

    if a.kind == "column" and a.column is not None and a.column.lower() == column.lower():
        if a.field in ("enum", "sample_values"):
            return [str(v) for v in a.value or [] if v is not None]
        if a.field == "description":
            return named(a.value)
        return None
    if a.kind == "table" and a.field == "description":
        return named(a.value) or None
    if a.kind == "metric":
        return sql_literals(str((a.value or {}).get("filter") or ""), t).get(column)
    if a.kind == "verified_query":
        return sql_literals(str((a.value or {}).get("sql") or ""), t).get(column)
    return None


def _mapped_enum(early: list[Annotation], c: str, gone: list[str], named: list[str],
                 vm: dict[str, str]) -> list[str] | None:
    """At metadata depth, the values of `c` now: its enum as written with each vanished value
    replaced by what the files' statistics show it became, when every vanished value the
    annotations name is mapped and the enum names no vanished value left unmapped; else None."""
    if not (vm and named and all(g in vm for g in named)):
        return None
    enum = next((x for x in early if x.kind == "column" and x.field == "enum"
                 and (x.column or "").lower() == c.lower()), None)
    if enum is None or [x for x in gone if x in (enum.value or []) and x not in vm]:
        return None
    return sorted({vm.get(str(x), str(x)) for x in enum.value or [] if x is not None})


def restatements(t: Table, anns: list[Annotation], duck: Duck | None) -> list[Finding]:
    """values_restated, one finding per (rewrite, column): a full rewrite of a normally appended
    table changed the values of a string column, and these annotations, written before it, name
    values the column no longer holds (or list its values while new ones appeared). Metadata
    (`duck` None): the values the files' statistics record as min / max before and after the
    rewrite. Data: the column's distinct values at the two snapshots, and, where the grain's keys
    identify rows, which new value each old one became (row-level agreement). The finding lists
    every annotation it affects, the values before and after, and a `value_map` fix with the map
    and the column's values now (the enum to write)."""
    rw = rewrites(t)
    if not rw:
        return []
    values_of: dict[str, list[str]] = {}
    for a in anns:
        if a.kind == "column" and a.field in ("enum", "sample_values") and a.column:
            values_of.setdefault(a.column, []).extend(str(v) for v in a.value or [] if v is not None)
    labels_of = {str(a.column).lower(): {str(k): str(v) for k, v in a.value.items()} for a in anns
                 if a.kind == "column" and a.field == "labels" and isinstance(a.value, dict)}
    keys = next(([str(k) for k in (a.value or {}).get("keys") or []] for a in anns if a.key == "table.grain"), [])
    out: list[Finding] = []
    for v, tt in rw:
        early = [a for a in anns if a.provenance.basis.vid < v and a.kind != "review"]
        shift = stats_shift(t, v)
        cols = sorted({c for c in shift} | ({c for c in values_of if t.col(c) is not None} if duck is not None else set()))
        for c in cols:
            refs = {a.key: r for a in early if (r := _value_refs(t, a, c, values_of, labels_of))}
            if not refs:
                continue
            mapping: dict[str, str] = {}
            counts: dict[str, int] = {}
            if duck is None:
                gone, new, mapping = shift[c]
                now_values = None
            else:
                got = _values_across(t, c, v, keys, duck)
                if got is None:
                    continue
                gone, new, now_values, mapping, counts = got
                if not mapping and c in shift:  # no keys to match rows on: what the files' statistics say
                    mapping = {g: n for g, n in shift[c][2].items() if g in gone and n in now_values}
            if not gone and not new:
                continue
            hit = {}
            for k, vals in refs.items():
                a = next(x for x in early if x.key == k)
                named_gone = [x for x in vals if x in gone]
                lists_all = a.kind == "column" and a.field == "enum"
                if named_gone or (lists_all and new and any(x not in vals for x in new)):
                    hit[k] = named_gone
            if not hit:
                continue
            order = {"enum": 0, "sample_values": 1, "description": 2}
            affected = sorted(hit, key=lambda k: (0 if k.startswith("column.") else 1,
                                                  order.get(k.rsplit(".", 1)[-1], 3), k))
            first = next(x for x in early if x.key == affected[0])
            named = sorted({x for vs in hit.values() for x in vs})
            vm = {g: mapping[g] for g in named if g in mapping}
            status = "stale" if named else "suspect"
            what = (f"{', '.join(map(repr, named))} no longer occur" if named else "new values occur") + \
                (f" ({', '.join(f'{g!r} became {n!r}' for g, n in vm.items())})" if vm else "")
            if now_values is None:
                now_values = _mapped_enum(early, c, gone, named, vm)
            fixes = [make_fix("value_map", column=c, map=vm, values=now_values)] if now_values is not None or vm else \
                [make_fix("investigate", columns=[c])]
            sugg = (f"restate {', '.join(f'{g} -> {n}' for g, n in vm.items())}; " if vm else "") + \
                (f"values of {c} now: {', '.join(map(str, now_values[:12]))}" if now_values is not None
                 else f"compare the values of {c} before and after vid {v}")
            out.append(Finding(
                target=f"{t.name}.{c}" if first.kind == "column" else t.name, annotation=first.key,
                annotations=affected, status=status, reason="values_restated",  # type: ignore[arg-type]
                message=f"{t.name} was rewritten in full at vid {v} ({day_of(tt)}): in {c}, {what}; "
                        f"{len(affected)} annotation(s) name the old values",
                evidence=Evidence(vids=list(dict.fromkeys([*(x.vid for x in early if x.key in hit and x.vid), v])),
                                  times=[tt], values={"column": c, "rewrite_vid": v, "before_only": gone[:20],
                                                      "after_only": new[:20], "map": vm, "map_rows": counts,
                                                      "values_now": now_values, "by_annotation": hit,
                                                      "columns": [c], "values": named}),
                suggestion=sugg, fixes=fixes, cause=cause_of("rewrite", t.name, v, c)))
    return out


MAP_ROWS = 2000  # rows of vanished values carried to the new snapshot to map old values to new ones


def _values_across(t: Table, c: str, v: int, keys: list[str], duck: Duck
                   ) -> tuple[list[str], list[str], list[str], dict[str, str], dict[str, int]] | None:
    """The distinct values of column `c` just before the rewrite at `v` and at the snapshot:
    (before only, now only, all now, old -> new value by the rows the grain keys identify, rows per
    old value mapped). None when a snapshot cannot be read. Every statement is bounded like
    `run_sql` (`Duck`): the rows of the vanished values (at most MAP_ROWS) travel to the new
    snapshot's statement as an inline VALUES list."""
    q, tq = quote_id(c), quote_table(t.name)
    old = Duck(t.ctx.cat, v - 1)
    try:
        before = [r[0] for r in old.sql(f"SELECT DISTINCT {q} FROM {tq} WHERE {q} IS NOT NULL ORDER BY 1 "
                                        f"LIMIT {MAX_VALUES * 4}")]
        now = [r[0] for r in duck.sql(f"SELECT DISTINCT {q} FROM {tq} WHERE {q} IS NOT NULL ORDER BY 1 "
                                      f"LIMIT {MAX_VALUES * 4}")]
    except CatalogError:  # a snapshot that cannot be read, or a check past its limit
        return None
    gone = [x for x in before if x not in set(now)]
    new = [x for x in now if x not in set(before)]
    mapping: dict[str, str] = {}
    counts: dict[str, int] = {}
    kcols = [k for k in keys if t.col(k) is not None and k.lower() != c.lower()]
    if gone and kcols:
        kq = ", ".join(quote_id(k) for k in kcols)
        try:
            rows = old.sql(f"SELECT {kq}, {q} FROM {tq} WHERE {q} IN ({literals(list(gone))}) LIMIT {MAP_ROWS}")
            if rows:
                names = ", ".join([f"k{i}" for i in range(len(kcols))] + ["v"])
                values = ", ".join(f"({literals(list(r))})" for r in rows)
                on = " AND ".join(f"o.k{i} = n.{quote_id(k)}" for i, k in enumerate(kcols))
                pairs = duck.sql(f"SELECT o.v, n.{q}, count(*) FROM (VALUES {values}) AS o({names}) JOIN {tq} n "
                                 f"ON {on} GROUP BY ALL ORDER BY 3 DESC")
                for g, n_, cnt in pairs:
                    if str(g) not in mapping and n_ is not None:
                        mapping[str(g)], counts[str(g)] = str(n_), int(cnt)
        except CatalogError:  # the map is evidence, not the finding: go on without it
            pass
    return [str(x) for x in gone[:MAX_VALUES]], [str(x) for x in new[:MAX_VALUES]], \
        [str(x) for x in now[:MAX_VALUES]], mapping, counts


def values_data(ctx: Context, t: Table, a: Annotation, duck: Duck, last: int,
                 checked: set[tuple[str | None, str]]) -> list[Finding]:
    """An enum's values outside it, or sample values no longer present, read from the data."""
    cur = t.cols.get(a.column_id or -1)
    vals = [v for v in (a.value or []) if v is not None]
    if cur is None or not vals:
        return []
    checked.add((a.key, "enum_violated" if a.field == "enum" else "sample_values_missing"))
    checked.add((a.key, "values_restated"))  # the data says whether the values changed
    c = quote_id(cur.name)
    marks = literals(vals)
    if a.field == "enum":
        bad = [r[0] for r in duck.sql(f"SELECT DISTINCT {c} FROM {quote_table(t.name)} WHERE {c} IS NOT NULL "
                                      f"AND {c} NOT IN ({marks}) LIMIT 20")]
        if not bad:
            return _enum_gone(ctx, t, a, cur.name, vals, duck, last)
        return [finding(a, f"{t.name}.{cur.name}", "enum_violated", "stale",
                         f"{cur.name} holds values outside the declared enum: {bad}",
                         [ctx.vid, last], values={"outside": bad, "enum": vals},
                         suggestion=f"add {', '.join(map(str, bad))} to the enum",
                         fixes=[make_fix("add_enum_values", column=cur.name, values=bad)])]
    there = {r[0] for r in duck.sql(f"SELECT DISTINCT {c} FROM {quote_table(t.name)} WHERE {c} IN ({marks})")}
    gone = [v for v in vals if v not in there]
    if not gone:
        return []
    return [finding(a, f"{t.name}.{cur.name}", "sample_values_missing", "suspect",
                     f"sample values no longer present in {cur.name}: {gone}", [ctx.vid, last], values={"missing": gone})]


def _enum_gone(ctx: Context, t: Table, a: Annotation, col: str, vals: list[Any], duck: Duck, last: int) -> list[Finding]:
    """Enum values that occurred when the enum was written (the data at its basis vid) and occur no
    more (a value retired, or merged into another): suspect, no fix (which value took their rows,
    if any, is for a person to say); the values still there are in the evidence."""
    basis = a.provenance.basis.vid
    if not basis or basis >= ctx.vid:
        return []
    c, marks = quote_id(col), literals(vals)
    now = {r[0] for r in duck.sql(f"SELECT DISTINCT {c} FROM {quote_table(t.name)} WHERE {c} IN ({marks})")}
    if len(now) == len(set(vals)):
        return []
    try:
        then = {r[0] for r in Duck(ctx.cat, basis).sql(f"SELECT DISTINCT {c} FROM {quote_table(t.name)} "
                                                        f"WHERE {c} IN ({marks})")}
    except CatalogError:  # the basis snapshot cannot be read: no evidence of what was there
        return []
    gone = [v for v in vals if v in then and v not in now]
    if not gone:
        return []
    return [finding(a, f"{t.name}.{col}", "enum_violated", "suspect",
                    f"enum values of {col} that occurred at vid {basis} occur no more: {gone} (retired, or merged "
                    f"into another value); check which values took their rows", [ctx.vid, last],
                    values={"gone": gone, "enum": vals, "still": sorted(map(str, now))})]


# ------------------------------------------------------------------ scale changes the whole-table ranges hide
SHIFT_MIN_K = 2        # a unit or scale change moves values by at least 10^2 (cents/dollars, g/kg, thousands)
LOAD_WINDOW = 14       # earlier loads a load is compared with
SAME_ROWS = 0.05       # a rewrite that keeps the rows within 5% restates them (not a rebuild at another grain)


def load_stats(t: Table) -> list[tuple[int, dict[str, dict[str, Any]], int]]:
    """Per load (the vid that wrote the files the snapshot holds), the merged column statistics of
    its files and its rows, oldest first. A compaction leaves one load. Cached per (table, snapshot)."""
    key = ("load_stats", t.obj.path, t.ctx.vid)
    got = t.ctx.cache.findings.take(key)
    if got is not None:
        return got[0]
    acc: dict[int, dict[str, dict[str, Any]]] = {}
    rows: dict[int, int] = {}
    try:
        files = t.ctx.cat.plan_files(t.name, vid=t.ctx.vid)
    except CatalogError:
        files = []
    for f in files:
        fv = int(f.vid or 0)
        n = f.value.get("row_count")
        rows[fv] = rows.get(fv, 0) + (n if isinstance(n, int) else 0)
        cols = acc.setdefault(fv, {})
        for c, st in (f.value.get("columns") or {}).items():
            if not isinstance(st, dict):
                continue
            cur = cols.setdefault(c, {"min": None, "max": None})
            for k, better in (("min", lambda a, b: a < b), ("max", lambda a, b: a > b)):
                v = num(st.get(k))
                if v is not None and (cur[k] is None or better(v, cur[k])):
                    cur[k] = v
    out = [(v, cols, rows.get(v, 0)) for v, cols in sorted(acc.items())]
    t.ctx.cache.findings.put(key, (out,))
    return out


def _magnitude(s: dict[str, Any] | None) -> float | None:
    lo, hi = num((s or {}).get("min")), num((s or {}).get("max"))
    m = max(abs(lo or 0.0), abs(hi or 0.0))
    return m if m > 0 else None


def _median(xs: list[float]) -> float:
    ys = sorted(xs)
    n = len(ys)
    return ys[n // 2] if n % 2 else (ys[n // 2 - 1] + ys[n // 2]) / 2


def load_shift(t: Table, col: str, since: int) -> tuple[int, list[int], float, float] | None:
    """The latest loads of `col` (all written after vid `since`) lie at 10^k times the loads before
    them, beside those older rows: (k, their vids, the earlier loads' median magnitude, theirs).
    Evidence: per-load file statistics. The earlier loads must agree among themselves (within a
    power of ten), the latest ones with each other, and every latest one must lie beyond every
    earlier one, by 10^2 or more, and hold a third of the earlier loads' usual rows or more (the
    extreme of a few rows is no measure of the values' scale); the longest such run of latest
    loads. None otherwise."""
    loads = [(v, m, n) for v, cols, n in load_stats(t) if (m := _magnitude(cols.get(col))) is not None]
    if not loads:
        return None
    usual = _median([float(r) for _v, _m, r in loads[-3 * LOAD_WINDOW:]])
    mags = [(v, m) for v, m, r in loads if r >= usual / 3]
    best = None
    for n in range(1, min(7, len(mags) - 3) + 1):
        prev, tail = mags[-n - LOAD_WINDOW:-n], mags[-n:]
        if len(prev) < 3 or min(v for v, _ in tail) <= since:
            break
        lp = [math.log10(m) for _, m in prev]
        lt = [math.log10(m) for _, m in tail]
        med = _median(lp)
        if max(abs(x - med) for x in lp) > 1.0:
            continue
        k = round(_median(lt) - med)
        if abs(k) < SHIFT_MIN_K or any(abs(x - med - k) > 0.6 for x in lt):
            continue
        if (k > 0 and min(lt) <= max(lp) + 0.5) or (k < 0 and max(lt) >= min(lp) - 0.5):
            continue
        best = (k, [v for v, _ in tail], 10 ** med, 10 ** _median(lt))
    return best


def restated_scale(t: Table, col: str, since: int) -> tuple[int, int, float] | None:
    """A rewrite after vid `since` that kept the rows (within 5%) and moved `col`'s whole range by
    10^k, |k| >= 2, both ends alike: the column restated in another unit in place. Evidence: the
    table's statistics just before and at the commit (the same rows). (k, vid, time) or None."""
    for v, tt in t.tl.data_after(since)[-60:]:
        rb, ra = rows_at(t, v - 1), rows_at(t, v)
        if not rb or not ra or abs(ra - rb) > SAME_ROWS * rb:
            continue
        before, after = stats_at(t, v - 1).get(col), stats_at(t, v).get(col)
        pc = pair_cost(before, after)
        if pc is None or abs(pc[1]) < SHIFT_MIN_K or pc[0] > 0.05:
            continue
        if num((before or {}).get("min")) in (None, 0.0) and num((before or {}).get("max")) in (None, 0.0):
            continue
        return pc[1], v, tt
    return None


def _scale_cols(t: Table, ann: Annotation, keys: set[str]) -> list[str]:
    """The numeric columns an annotation's claim rests on whose scale matters: its own column, or
    the columns a metric uses; never identifiers or grain keys (they grow by nature)."""
    refs = ann.provenance.basis.columns if ann.kind == "metric" else \
        [r for r in ann.provenance.basis.columns if r.id == ann.column_id][:1]
    out = []
    for r in refs:
        cur = t.cols.get(r.id)
        if cur is None or type_family(cur.type) != "number" or cur.name.lower() in keys or \
                cur.name.lower().endswith(("_id", "_uuid", "_key", "_sk", "_count")):
            continue
        out.append(cur.name)
    return out


def scale_restated(t: Table, ann: Annotation, keys: set[str]) -> list[Finding]:
    """values_units / definitions: a column restated in another unit in place (`restated_scale`),
    which the whole table's range before against today's hides once later loads widen it. The
    unit annotation gets `update_unit` (every row moved alike); other claims say what moved."""
    out = []
    for col in _scale_cols(t, ann, keys):
        got = restated_scale(t, col, ann.provenance.basis.vid)
        if got is None:
            continue
        k, v, tt = got
        fixes = [make_fix("update_unit", column=col, scale=k)] if ann.kind == "column" and ann.field == "unit" else []
        out.append(finding(ann, f"{t.name}.{col}", "unit_drift", "stale",
                           f"{col!r} was rewritten at vid {v} ({day_of(tt)}) with the same rows and its whole range "
                           f"scaled by 10^{k}: its values are in another unit or scale now",
                           [v], [tt], values={"column": col, "scale_exp": k, "restated_vid": v,
                                              "before": stats_at(t, v - 1).get(col), "after": stats_at(t, v).get(col)},
                           suggestion=f"unit changed ({unit_word(k)}); update the unit" if fixes else None, fixes=fixes,
                           cause=cause_of("unit", t.name, v, col)))
    return out


def scale_new_loads(t: Table, ann: Annotation, keys: set[str]) -> list[Finding]:
    """values_units: the latest loads of a column arrive in another unit beside the older rows
    (`load_shift`). No single unit is right for the column now, so no fix: the finding names the
    loads to check (restate them, or the older rows)."""
    out = []
    for col in _scale_cols(t, ann, keys):
        got = load_shift(t, col, ann.provenance.basis.vid)
        if got is None:
            continue
        k, vids, then, now_m = got
        out.append(finding(ann, f"{t.name}.{col}", "unit_drift", "stale",
                           f"the last {len(vids)} load(s) of {col!r} (from vid {vids[0]}) lie at about 10^{k} times the "
                           f"loads before them (magnitude ~{now_m:.4g} against ~{then:.4g}) while the older rows keep "
                           "their values: the column now mixes two units; check those loads and restate one side",
                           [vids[0], vids[-1]], values={"column": col, "scale_exp": k, "loads": vids,
                                                        "earlier_magnitude": then, "latest_magnitude": now_m},
                           cause=cause_of("unit", t.name, vids[0], col)))
    return out
