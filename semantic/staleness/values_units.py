"""Class `values_units`: values and units. Unit drift (a column's values scaled by a power of ten,
with or without a unit annotation), enums and sample values against the statistics and the data
(values outside, values gone), and restatements (a full rewrite of an appended table that moved a
string column's values). Evidence: column, partition and file statistics, the load log, the data."""

from __future__ import annotations

import difflib
import functools
import math
import re
from typing import Any

from catalog_core import lake
from catalog_core.errors import CatalogError
from catalog_core.model import parse_time
from semantic._bounded import literals
from semantic._tables import table_columns
from semantic.annotations import read_annotations
from semantic.history import Context, type_family
from semantic.models import Annotation, ColumnRef, Evidence, Finding, Fix
from semantic.staleness.claim_rules import clauses, strings_of
from semantic.staleness.core import (
    KEY_SUFFIXES,
    Duck,
    Table,
    cause_of,
    day_of,
    declared_keys,
    duck_at,
    finding,
    make_fix,
    metric_names,
    num,
    offset,
    pair_cost,
    quote_id,
    quote_table,
    rows_at,
    scale_of,
    stats_at,
    unit_word,
    values_removed,
    word_set,
)
from semantic.units import NAME_UNITS, UNIT_WORDS, names_unit, reworded, unit_after, unit_columns, unit_size


def unit_drift(t: Table, ann: Annotation, refs: list[ColumnRef]) -> list[Finding]:
    """A column annotated with a unit (or as a measure) whose values written since the claim's
    basis are the annotated ones scaled by 10^k (`scale_of`, |k| >= SHIFT_MIN_K). The unit annotation gets
    `update_unit` (the one claim that fix rewrites) when every row is in the new unit; when files
    written before the claim still hold rows at the annotated magnitude (`_old_rows_keep_unit`), or
    any load the snapshot holds does, whenever written (`old_unit_loads`: a rewrite of the old rows
    after the claim keeps their unit), the older rows keep the annotated unit beside the new ones
    (evidence `whole_table` False; the message names the first load in the new unit) and no single
    unit is right (`investigate`, as `scale_new_loads`). A description or a metric gets
    `investigate` (its new text is for a person to write). `fix_rules.unit_fix` applies both rules."""
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
        # a power of ten a unit changes by (cents, grams, milliseconds): x10 is within what a few days' loads
        # span against the whole history's range, no unit
        if k and abs(k) >= SHIFT_MIN_K:
            changed = [v for v, _ in t.tl.data_after(b.vid)] or [t.obj.vid]
            basis = b.stats[ref.name].model_dump()
            kept = old_unit_loads(t, cur.name, basis, k)
            whole = not kept and not _old_rows_keep_unit(t, cur.name, b.vid, basis, k)
            first = next((v for v in scaled_loads(t, cur.name, basis, k) if v > b.vid), None)
            mixed = "" if whole else (f"; the loads since vid {first} are in the new unit and" if first else ";") + \
                " the older rows keep the annotated unit: the column mixes two units"
            # the change named by its own vid, not only the claim's basis (an independent tester read "since
            # vid 60", the claim's, as the change's)
            since = f" (the first in the new unit: vid {first})" if whole and first else ""
            vids = changed[:1] + ([first] if first else []) + changed[-1:]
            out.append(finding(ann, f"{t.name}.{cur.name}", "unit_drift", "stale",
                                f"values of {cur.name!r} written since this was written (vid {b.vid}) are the "
                                f"annotated ones scaled by 10^{k}{since}{mixed}", sorted(set(vids)),
                                values={"basis_stats": b.stats[ref.name].model_dump(), "recent_stats": now_s,
                                        "scale_exp": k, "whole_table": whole,
                                        **({"new_unit_since": first} if first and not whole else {})},
                                # the candidate repair; fix_rules.unit_fix keeps it only for the unit
                                # annotation of a column whose every row moved (`whole_table`)
                                suggestion=f"unit changed ({unit_word(k)}); update the unit",
                                fixes=[make_fix("update_unit", column=cur.name, scale=k)],
                                cause=cause_of("unit", t.name, changed[0], cur.name)))
    return out


def _old_rows_keep_unit(t: Table, col: str, since: int, basis: dict[str, Any], k: int) -> bool:
    """Whether the snapshot still holds files written at or before vid `since` (rows no later
    load rewrote) whose `col` lies at the basis magnitude, not 10^k times it (per-load file
    statistics, `load_stats`)."""
    bm = _magnitude(basis)
    olds = [m for v, cols, n in load_stats(t) if v <= since and n and (m := _magnitude(cols.get(col))) is not None]
    return bool(bm and olds) and abs(math.log10(max(olds) / bm) - k) > 0.5  # type: ignore[operator]


def _log_scale(t: Table, col: str, basis: dict[str, Any]) -> list[tuple[int, float, int]]:
    """Per load the snapshot holds (`load_stats`): (vid, log10 of its magnitude of `col` over the
    basis magnitude, rows); loads of only zeros or nulls measure nothing and are left out."""
    bm = _magnitude(basis)
    if not bm:
        return []
    return [(v, math.log10(m / bm), n) for v, cols, n in load_stats(t)
            if n and (m := _magnitude(cols.get(col))) is not None]


def old_unit_loads(t: Table, col: str, basis: dict[str, Any], k: float) -> list[int]:
    """The loads the snapshot holds (written at any vid: a rewrite of the old rows after the claim
    is no restatement unless it moved them) whose `col` lies nearer the basis magnitude than 10^k
    times it (k may be fractional: x60 is 10^1.78), from MIN_ADDED rows up (the extreme of a few rows is no measure of a scale): rows
    that kept the annotated unit. Any such load means the column mixes two units."""
    return [v for v, d, n in _log_scale(t, col, basis) if n >= MIN_ADDED and abs(d) < abs(d - k)]


def scaled_loads(t: Table, col: str, basis: dict[str, Any], k: int) -> list[int]:
    """The loads the snapshot holds whose `col` lies nearer 10^k times the basis magnitude than
    the basis magnitude (the rows in the new unit), oldest first."""
    return [v for v, d, _n in _log_scale(t, col, basis) if abs(d - k) < abs(d)]


def _range_moved(old: dict[str, Any], whole: dict[str, Any]) -> bool:
    """Could a load lie wholly beyond `old` by a power of ten, given the whole table's range now?
    (Its maximum grew, or its minimum shrank, by more than half a power of ten: a cheap necessary
    condition that spares reading the files' statistics.)"""
    ohi, olo, hi, lo = num(old.get("max")), num(old.get("min")), num(whole.get("max")), num(whole.get("min"))
    grew = bool(ohi and hi and ohi > 0 and hi / ohi > 10 ** 0.5)
    shrank = bool(olo and lo and olo > 0 and lo > 0 and olo / lo > 10 ** 0.5)
    return grew or shrank


def _basis_measures(t: Table, ann: Annotation, refs: list[ColumnRef], keys: set[str]
                    ) -> list[tuple[lake.Column, dict[str, Any]]]:
    """The numeric columns of `refs` still in `t` with statistics at the claim's basis, identifiers and
    grain keys (`keys`) left out: (the column now, its statistics then)."""
    b = ann.provenance.basis
    out = []
    for ref in refs:
        cur = t.cols.get(ref.id)
        if cur is None or type_family(cur.type) != "number" or ref.name not in b.stats or \
                cur.name.lower() in keys or cur.name.lower().endswith(KEY_SUFFIXES):
            continue
        out.append((cur, b.stats[ref.name].model_dump()))
    return out


def scale_shift(t: Table, ann: Annotation, keys: set[str]) -> list[Finding]:
    """A numeric column's meaning changed in place, with no schema change: the values written since
    the annotation's basis all lie beyond every value then (their minimum above the old maximum, or
    their maximum below the old minimum) and the two ranges differ by a clean power of ten (a unit
    or scale shift: cents written as dollars, grams as kilograms). For columns with no unit
    annotation (`unit_drift` judges those), so no fix: `update_unit` rewrites a unit annotation, and
    a description's new text is for a person to write. Identifiers and grain keys grow by nature
    and are left out."""
    b = ann.provenance.basis
    out = []
    for cur, old in _basis_measures(t, ann, [r for r in b.columns if r.id == ann.column_id][:1], keys):
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
                           cause=cause_of("unit", t.name, changed[0], cur.name)))
    return out


def sign_flipped(t: Table, ann: Annotation, refs: list[ColumnRef], keys: set[str]) -> list[Finding]:
    """A numeric column whose values were all of one sign when the claim was written, and whose latest
    load holds only values of the other sign, about the same magnitudes (the old range mirrored overlaps
    the new one): the sign convention changed in place (an offset from GMT written as one to GMT, refunds
    written positive). Every claim on the column states the old convention (a unit, a description, sample
    values): unit_drift, stale, `investigate` (what the sign means now is for a person to write; no unit
    says it). Identifiers and grain keys are left out; a column that held both signs says nothing here."""
    b = ann.provenance.basis
    out = []
    for cur, old in _basis_measures(t, ann, refs, keys):
        olo, ohi = num(old.get("min")), num(old.get("max"))
        new = t.written_since(b.vid).get(cur.name) or {}
        lo, hi = num(new.get("min")), num(new.get("max"))
        if None in (lo, hi, olo, ohi):
            continue
        assert lo is not None and hi is not None and olo is not None and ohi is not None
        flipped = (ohi < 0 < lo) or (hi < 0 < olo)
        if not flipped or max(lo, -ohi) > min(hi, -olo):  # the mirrored old range must meet the new one
            continue
        changed = [v for v, _ in t.tl.data_after(b.vid)] or [t.obj.vid]
        out.append(finding(ann, f"{t.name}.{cur.name}", "unit_drift", "stale",
                           f"{cur.name!r} held only {'negative' if ohi < 0 else 'positive'} values when this was "
                           f"written ([{olo}, {ohi}]); the latest load holds only {'positive' if ohi < 0 else 'negative'} "
                           f"ones ([{lo}, {hi}]), the same magnitudes: its sign convention changed in place",
                           changed[:1] + changed[-1:], values={"basis_stats": old, "recent_stats": new, "sign": -1},
                           suggestion=f"check what the sign of {cur.name} means now and rewrite the claim",
                           fixes=[make_fix("investigate", columns=[cur.name])],
                           cause=cause_of("sign", t.name, changed[0], cur.name)))
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
    last = t.tl.data_commits[-1][0] if t.tl.data_commits else t.obj.vid
    if field == "enum" and (out_lo or out_hi):
        bad = [x for x, o in ((lo, out_lo), (hi, out_hi)) if o]
        return [finding(ann, f"{t.name}.{ann.column}", "enum_violated", "stale",
                         f"{ann.column} holds values outside the declared enum: {bad}", [last],
                         values={"outside": bad, "enum": allowed},
                         suggestion=f"add {', '.join(map(str, bad))} to the enum",
                         fixes=[make_fix("add_enum_values", column=str(ann.column), values=bad)])]
    if field == "enum":
        return enum_ended(t, ann, allowed, lo, hi, last)
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


def enum_ended(t: Table, ann: Annotation, allowed: list[Any], lo: Any, hi: Any, last: int) -> list[Finding]:
    """enum_violated (suspect), metadata: enum values that lay within the column's range when the
    enum was written (its statistics at the annotation's basis) and lie outside its range now: no
    row holds them any more (the range's minimum and maximum bound every value). Retired, or merged
    into another value, is for a person to say: no fix (the data depth names the values still
    there). Values inside today's range may have ended too; only the data can tell (`_enum_gone`)."""
    ref = next((r for r in ann.provenance.basis.columns if r.id == ann.column_id), None)
    then = ann.provenance.basis.stats.get(ref.name) if ref is not None else None
    if then is None or then.min is None or then.max is None:
        return []
    try:
        gone = [v for v in allowed if then.min <= v <= then.max and ((lo is not None and v < lo) or
                                                                    (hi is not None and v > hi))]
    except TypeError:
        return []
    if not gone:
        return []
    return [finding(ann, f"{t.name}.{ann.column}", "enum_violated", "suspect",
                    f"enum values of {ann.column} within its range when the enum was written lie outside its range "
                    f"now ([{lo}, {hi}]), so no row holds them: {gone} (retired, or merged into another value); check "
                    "which values took their rows", [last], values={"gone": gone, "enum": allowed, "min": lo, "max": hi},
                    cause=cause_of("enum_ended", t.name, last, str(ann.column)))]


def enum_rows_removed(t: Table, ann: Annotation) -> list[Finding]:
    """enum_violated (suspect), metadata: a closed value list (an enum, a code's labels) written
    before a data commit that removed rows holding values of the column (`values_removed`: its rows
    less its nulls fell), in a table that had never removed such rows before (a table that does so
    routinely, a window, a rebuild whose size varies, is left alone). Values only those rows held
    occur no more; which ones (if any) the statistics cannot say when the column's minimum and
    maximum keep their bounds (`enum_ended` judges the bounds): no fix, the data depth names them."""
    cur = t.cols.get(ann.column_id if ann.column_id is not None else -1)
    if cur is None or not ann.value:
        return []
    b = ann.provenance.basis.vid
    removed = values_removed(t, cur.name)
    if not removed or removed[0][0] <= b:
        return []  # none since the list was written, or the table removed rows before it was
    v, tt, rb, ra, n = removed[0]
    what = "labelled codes" if ann.field == "labels" else "enum values"
    return [finding(ann, f"{t.name}.{cur.name}", "enum_violated", "suspect",
                    f"{t.name} lost {rb - ra} of its {rb} rows at vid {v} ({day_of(tt)}), {n} of them holding a value "
                    f"of {cur.name}, after the {ann.field} was written (vid {b}); it had never removed such rows before: "
                    f"{what} only those rows held occur no more. The statistics cannot say which; check the values "
                    "at data depth", [v], [tt],
                    values={"column": cur.name, "removed_vid": v, "rows_before": rb, "rows_after": ra,
                            "values_removed": n},
                    cause=cause_of("rows_removed", t.name, v, cur.name))]


def rewrites(t: Table) -> list[tuple[int, float]]:
    """The data commits that rewrote `t` in full (`full_overwrites`) when the table is normally loaded
    by appends (most of its logged writes are appends). Rewrites of tables that are always
    overwritten (dimensions and marts rebuilt every load) are routine and return []."""
    over, appends = _logged_writes(t)
    return full_overwrites(t) if over and appends > len(over) else []


def full_overwrites(t: Table) -> list[tuple[int, float]]:
    """Every data commit that rewrote `t` in full — the commit's write log (`meta.writes`, as the
    Spark bridge records it) says `overwrite` for the table and every file the table holds after
    the commit was written by it (by file or row count) — routine rebuilds included, by vid."""
    key = ("rewrites", t.name, t.obj.vid)
    got = t.ctx.cache.findings.take(key)
    if got is not None:
        return got[0]
    over = _logged_writes(t)[0]
    out: list[tuple[int, float]] = []
    if over:
        after = {h.vid: h.value or {} for h in t.ctx.cat.history(t.obj.path) if h.vid in {v for v, _, _ in over}}
        for v, tt, w in over:
            st = after.get(v, {}).get("stats") or {}
            if st.get("file_count") == w.get("files") or st.get("row_count") == w.get("rows"):
                out.append((v, tt))
    t.ctx.cache.findings.put(key, (out,))
    return out


DERIVED_WRITES = 60  # latest data commits with no write log (Iceberg REST, engine) whose write is read from the files


def _derived_write(t: Table, v: int, c: Any) -> dict[str, Any] | None:
    """The write of `t` at data commit `v` that logged none (a commit through Iceberg REST, an engine
    transaction), read from the files the table holds: `overwrite` when every file it holds at `v`
    was written at `v` and it held rows before (a rewrite in full, whatever the client called it:
    pyiceberg's overwrite commits a delete and an append), `append` when it kept every row it held
    (files added beside the old ones); None otherwise (a partial rewrite or delete), and for a
    commit Iceberg calls `replace` (a compaction: the same rows in other files)."""
    rest = ((c.meta or {}).get("iceberg_rest") or {}) if c is not None else {}
    if any(isinstance(x, dict) and x.get("operation") == "replace" for x in rest.values()):
        return None
    files = t.files(v)
    rb, ra = rows_at(t, v - 1), rows_at(t, v)
    if not files or not rb:
        return None
    if t.rewrote_all(v):
        return {"table": t.name, "mode": "overwrite", "files": len(files), "rows": ra, "derived": True}
    if ra is not None and ra >= rb and (not t.files(v - 1) or t.kept_files(v - 1, v)):
        return {"table": t.name, "mode": "append", "files": len(files), "rows": ra, "derived": True}
    return None


def _logged_writes(t: Table) -> tuple[list[tuple[int, float, dict[str, Any]]], int]:
    """The write log's overwrites of `t` (vid, time, the logged write) and how many of its logged
    writes were appends, cached per table version."""
    key = ("logged_writes", t.name, t.obj.vid)
    got = t.ctx.cache.findings.take(key)
    if got is not None:
        return got[0], got[1]
    short = {t.name, t.name.split(".", 1)[-1]}
    modes: list[tuple[int, float, dict[str, Any]]] = []
    unlogged: list[tuple[int, float, Any]] = []
    for v, tt in t.tl.data_commits:
        c = t.ctx.commit(v)
        mine = [w for w in ((c.meta or {}).get("writes") or []) if c is not None
                and isinstance(w, dict) and str(w.get("table")) in short]
        modes += [(v, tt, w) for w in mine]
        if not mine:
            unlogged.append((v, tt, c))
    for v, tt, c in unlogged[-DERIVED_WRITES:]:
        w = _derived_write(t, v, c)
        if w is not None:
            modes.append((v, tt, w))
    modes.sort(key=lambda m: m[0])
    appends = sum(1 for _, _, w in modes if w.get("mode") == "append")
    over = [(v, tt, w) for v, tt, w in modes if w.get("mode") == "overwrite"]
    t.ctx.cache.findings.put(key, (over, appends))
    return over, appends


@functools.lru_cache(maxsize=256)
def parsed_sql(text: str) -> Any:
    """`text` parsed as DuckDB SQL (None: unparsable), once per process: a card's checks read the same
    verified query for several tables (5 parses of one statement in a first Acme `describe_table`). Only
    read, never changed, by `sql_literals`."""
    import sqlglot

    try:
        return sqlglot.parse_one(text, read="duckdb")
    except Exception:  # noqa: BLE001 - an unparsable text names no values
        return None


def sql_literals(text: str, t: Table) -> dict[str, list[str]]:
    """String literals an SQL condition compares a string column of `t` with (=, <>, IN):
    column name -> values. Literals inside casts (dates, timestamps) are not values of a column."""
    from sqlglot import exp

    tree = parsed_sql(text)
    if tree is None:
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


def file_values(t: Table, vid: int) -> dict[str, set[str]]:
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


SPELLED_ALIKE = 0.75   # how alike two spellings must be to pair them (difflib ratio, case-folded)


def spelled_alike(old: str, new: str) -> bool:
    """Is `new` a respelling of `old`: the same letters and digits case-folded, one containing the
    other, or close by edit ratio (SPELLED_ALIKE)?"""
    a, b = re.sub(r"[\W_]+", "", old.casefold()), re.sub(r"[\W_]+", "", new.casefold())
    if a and b and (a == b or a in b or b in a):
        return True
    return difflib.SequenceMatcher(None, old.casefold(), new.casefold()).ratio() >= SPELLED_ALIKE


TRUNCATED_AT_LEAST = 8  # characters a writer keeps of a string bound it truncates (Iceberg: 16 by default)


def truncates(bound: str, value: str) -> bool:
    """Is `bound` a file statistic's truncation of `value` (writers keep the first N characters of a long
    string bound: a lower bound as is, an upper bound with its last kept character incremented), so that
    `value` is still recorded by that file, not replaced by a new spelling?"""
    n = len(bound)
    if n < TRUNCATED_AT_LEAST or n >= len(value):
        return False
    return value.startswith(bound) or (value[:n - 1] == bound[:-1] and ord(bound[-1]) == ord(value[n - 1]) + 1)


def bound_alike(a: Any, b: Any) -> bool:
    """Do two statistics bounds record the same value: equal, or one a writer's truncation of the other
    (`truncates`: Iceberg keeps 16 characters of a string bound; writers differ in that)?"""
    if a == b:
        return True
    return isinstance(a, str) and isinstance(b, str) and (truncates(a, b) or truncates(b, a))


def stats_shift(t: Table, v: int) -> dict[str, tuple[list[str], list[str], dict[str, str]]]:
    """The string columns whose file statistics moved across the rewrite at `v`: column ->
    (values recorded before and never after, values recorded after and never before, old -> new:
    the appeared value the files of one partition record most often in the place of a vanished one
    that lies outside that partition's range now, or is spelled alike (`spelled_alike`: 'refunded'
    as 'refunded_x' sorts beside it); a value still inside the range, spelled otherwise, may be
    there yet: the bound only moved past it).
    A column whose bounds per directory (partition) are the same either side, in a rewrite that kept
    the row count, moved nothing: a compaction merges files, so values that were only some file's bound
    stop being recorded. Nor did one in a rewrite that added rows and recorded no new value, when every
    value that stopped being a bound lies strictly inside the bounds recorded after (a table rebuilt
    finer, a periodic snapshot: its files were re-laid; a removal takes rows away, a respelling records
    the new spelling)."""
    before, after = file_values(t, v - 1), file_values(t, v)
    pb, pa = partition_bounds(t, v - 1), partition_bounds(t, v)
    # a compaction rewrites the same rows: with another row count the rewrite restated them
    rb, ra = rows_at(t, v - 1), rows_at(t, v)
    rows_kept = rb is not None and rb == ra
    grew = isinstance(rb, int) and isinstance(ra, int) and ra > rb
    out = {}
    for c in sorted(after):
        b, a = before.get(c, set()), after[c]
        if rows_kept and pb and \
                {p: cols.get(c) for p, cols in pb.items()} == {p: cols.get(c) for p, cols in pa.items()}:
            continue  # every directory's bounds kept: files merged or split (a compaction), no value moved
        if grew and a and not a - b and all(min(a) < g < max(a) for g in b - a):
            continue  # rows added, no new value: the files were re-laid, and what stopped being a bound lies inside them
        # a bound one side that is a writer's truncation of a value the other side records (Iceberg keeps 16
        # characters: 'partially_refunded' recorded as 'partially_refune' once its file's bound is cut) is that
        # value, neither gone nor new (held-out Acme 3002: a map 'refunded' -> 'partially_refune' was offered)
        gone = {g for g in b - a if not any(bound_alike(g, x) for x in a)}
        fresh = {x for x in a - b if not any(bound_alike(x, g) for g in b)}
        if b and (gone or fresh):
            votes: dict[tuple[str, str], int] = {}
            for part, cols in pb.items():
                old, new = cols.get(c), pa.get(part, {}).get(c)
                if old is None or new is None:
                    continue
                for i in (0, 1):
                    # a vanished value became one that appeared, where the partition can no longer hold
                    # it (outside its range now: a value still inside may only have stopped being a bound)
                    if old[i] in gone and new[i] in fresh and \
                            (not new[0] <= old[i] <= new[1] or spelled_alike(old[i], new[i])):
                        votes[(old[i], new[i])] = votes.get((old[i], new[i]), 0) + 1
            vm: dict[str, str] = {}
            for (g, n), _cnt in sorted(votes.items(), key=lambda kv: -kv[1]):
                vm.setdefault(g, n)
            out[c] = (sorted(gone)[:MAX_VALUES], sorted(fresh)[:MAX_VALUES], vm)
    return out


def partition_bounds(t: Table, vid: int) -> dict[str, dict[str, tuple[str, str]]]:
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


# words prose uses as words, whatever a column's values are: a value spelled like one counts only quoted
FUNCTION_WORDS = {"a", "an", "the", "and", "or", "of", "for", "to", "in", "on", "at", "by", "is", "be", "as",
                  "no", "not", "if", "it", "all", "any", "none", "null", "yes", "other"}


def word_in(text: str, word: str) -> bool:
    """Does `text` hold `word` as a whole word (not inside another word or a hyphenated one), any case?"""
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text, re.IGNORECASE) is not None


def clause_names(text: object, word: str, column: str, words: list[str]) -> bool:
    """Does prose `text` name `word` (a value of `column`, or a code's label) as a whole word in a clause
    (the text between sentence stops) that is about the column: one that names the column too, or two of
    `words` (its values, or its labels)? Prose attached to something else (another column's description)
    speaks of this column only so: "Points (negative for redeem, expire)" lists two kinds of event, while
    "0 is the online store" on a store id names a word that is also a label of the stores' format."""
    if not word or not re.fullmatch(r"[\w-]+", word) or word.lower() in FUNCTION_WORDS:
        return False
    others = {w for w in words if w and w.lower() not in FUNCTION_WORDS}
    for clause in clauses(str(text or "")):
        if word_in(clause, word) and (word_in(clause, column) or sum(word_in(clause, w) for w in others) >= 2):
            return True
    return False


def _value_refs(t: Table, a: Annotation, column: str, values_of: dict[str, list[str]],
                labels_of: dict[str, dict[str, str]]) -> list[str] | None:
    """The values of `column` annotation `a` names (None: it is not about the column's values):
    an enum / sample_values lists them, a description names some of the column's annotated values
    (or their `labels`, for a coded column): its own description or the table's anywhere, another
    column's description in a clause about the column (`clause_names`: one that names it, or two of
    its values or labels); a metric filter or verified query compares the column with literals."""
    labels = labels_of.get(column.lower(), {})

    def named(text: object) -> list[str]:
        w, low = word_set(text), str(text or "").lower()
        return [v for v in values_of.get(column, []) if v.lower() in w or
                (str(labels.get(v) or "").lower() and re.search(rf"\b{re.escape(str(labels[v]).lower())}\b", low))]

    if a.kind == "column" and a.column is not None and a.column.lower() == column.lower():
        if a.field in ("enum", "sample_values"):
            return [str(v) for v in a.value or [] if v is not None]
        if a.field == "description":
            return named(a.value)
        return None
    cur = t.col(column)
    if a.kind == "column" and a.field == "description" and \
            (cur is None or a.column_id is None or a.column_id != cur.id):  # another column's prose
        vals = values_of.get(column, [])
        lbs = [x for x in labels.values() if x]
        return [v for v in vals if clause_names(a.value, v, column, vals) or
                clause_names(a.value, labels.get(v, ""), column, lbs)] or None
    if a.kind == "table" and a.field == "description":
        return named(a.value) or None
    if a.kind == "metric":
        return sql_literals(str((a.value or {}).get("filter") or ""), t).get(column)
    if a.kind == "verified_query":
        return sql_literals(str((a.value or {}).get("sql") or ""), t).get(column)
    return None


def _mapped_enum(t: Table, v: int, early: list[Annotation], c: str, gone: list[str], named: list[str],
                 vm: dict[str, str]) -> list[str] | None:
    """At metadata depth, the values of `c` now: its enum as written with each vanished value
    replaced by what the files' statistics show it became, when every vanished value the
    annotations name is mapped and the enum names no vanished value left unmapped; else None.
    A vanished value is no bound any more, yet may be there (`_may_remain`): one left unmapped
    that may remain is kept as written, like a value that never was a bound."""
    kept = _may_remain(t, v, c, [g for g in gone if g not in vm])
    if not (vm and named and all(g in vm or g in kept for g in named)):
        return None
    enum = next((x for x in early if x.kind == "column" and x.field == "enum"
                 and (x.column or "").lower() == c.lower()), None)
    if enum is None or [x for x in gone if x in (enum.value or []) and x not in vm and x not in kept]:
        return None
    return sorted({vm.get(str(x), str(x)) for x in enum.value or [] if x is not None})


def _may_remain(t: Table, v: int, c: str, values: list[str]) -> set[str]:
    """Of `values` (no file's bound after the rewrite at `v`), those the statistics cannot show gone:
    the rewrite kept the row count (a removal takes rows away) and each lies strictly inside the
    bounds of `c` now in every directory whose files' bounds spanned it before (files re-laid: a
    value that stops being a file's bound is only passed by the bounds; no row says it left)."""
    rb, ra = rows_at(t, v - 1), rows_at(t, v)
    if not values or rb is None or rb != ra:
        return set()
    pb, pa = partition_bounds(t, v - 1), partition_bounds(t, v)
    out = set()
    for x in values:
        parts = [p for p, cols in pb.items() if (b := cols.get(c)) is not None and b[0] <= x <= b[1]]
        inside = [pa.get(p, {}).get(c) for p in parts]
        if parts and all(b is not None and b[0] < x < b[1] for b in inside):
            out.add(x)
    return out


def restatements(t: Table, anns: list[Annotation], duck: Duck | None) -> list[Finding]:
    """values_restated, one finding per (rewrite, column): a full rewrite of a normally appended
    table changed the values of a string column, and these annotations, written before it, name
    values the column no longer holds (or list its values while new ones appeared). Metadata
    (`duck` None): the values the files' statistics record as min / max before and after the
    rewrite. Data: the column's distinct values at the two snapshots, and which new value each old
    one became by the rows that moved (`moved_to`: row-level agreement), else by the files' bounds
    when the value in its place is new in the data too. A description naming a coded value by its
    label alone is not false when the data shows the code respelled one to one to a new code (the
    label moves with the code); merged, split or removed, it is (metadata: no rows to tell; the bounds
    record no code that sorts inside them, so a second new code, the sign of codes redrawn, may be
    there unseen). Another column's description counts where a clause speaks of the column
    (`_value_refs`). The finding lists
    every annotation it affects, the values before and after, and a `value_map` fix with the map
    and the column's values now (the enum to write); with no map, `investigate` (a value removed is
    no value renamed)."""
    rw = rewrites(t)
    if not rw:
        return []
    values_of: dict[str, list[str]] = {}
    for a in anns:
        if a.kind == "column" and a.field in ("enum", "sample_values") and a.column:
            values_of.setdefault(a.column, []).extend(str(v) for v in a.value or [] if v is not None)
    labels_of = {str(a.column).lower(): {str(k): str(v) for k, v in a.value.items()} for a in anns
                 if a.kind == "column" and a.field == "labels" and isinstance(a.value, dict)}
    keys = declared_keys(anns)
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
            respelled: set[str] = set()  # data: codes whose rows all went, one to one, to a new code
            if duck is None:
                gone, new, mapping = shift[c]
                now_values = None
            else:
                got = _values_across(t, c, v, keys, duck)
                if got is None:
                    continue
                gone, new, now_values, mapping, counts = got
                respelled = _respelled(mapping, new)
                if not mapping and c in shift:  # no row followed: a value the files' bounds show in the place of
                    # a vanished one, new in the data too (a respelling; a value that was there already took no rows
                    # by this evidence: rows removed beside it look the same)
                    mapping = {g: n for g, n in shift[c][2].items() if g in gone and n in new}
            if not gone and not new:
                continue
            hit = _names_gone(early, refs, gone, new, respelled, labels_of.get(c.lower(), {}))
            if not hit:
                continue
            selects = _selecting_merged(hit, mapping, new)
            for part in (sorted(set(hit) - selects), sorted(selects)):
                if part:
                    out.append(_restated_finding(t, c, v, tt, early, {k: hit[k] for k in part}, mapping, gone, new,
                                                 now_values, counts, keep_map=part[0] not in selects))
    return out


def _names_gone(early: list[Annotation], refs: dict[str, list[str]], gone: list[str], new: list[str],
                respelled: set[str], labels: dict[str, str]) -> dict[str, list[str]]:
    """Of the annotations naming values of the column (`refs`: key -> the values it names), those a
    rewrite made false, each with the vanished values it names: a value respelled one to one that a
    description names by its label alone is still true; an enum is also false when new values occur."""
    hit = {}
    for k, vals in refs.items():
        a = next(x for x in early if x.key == k)
        named_gone = [x for x in vals if x in gone and not (x in respelled and _by_label_only(a, x, labels))]
        lists_all = a.kind == "column" and a.field == "enum"
        if named_gone or (lists_all and new and any(x not in vals for x in new)):
            hit[k] = named_gone
    return hit


def _selecting_merged(hit: dict[str, list[str]], mapping: dict[str, str], new: list[str]) -> set[str]:
    """Of the annotations `hit` (each with the vanished values it names), the metrics and verified queries
    naming a value merged into one that was there already (mapped to a value not new in the rewrite). The
    map would change what such a filter selects ("<> 'cancelled'" -> "<> 'delivered'" drops the delivered
    rows it counted; "= 'cancelled'" -> "= 'delivered'" counts them), and no filter selects the merged rows
    apart any more: a person decides (`investigate`; a verified query's is `reverify`). The enum and the
    prose naming the value take the map (wave 5, session 32: accept-all rewrote the cryptic lake's "number
    of non-cancelled orders" to count the orders not delivered)."""
    into_old = {g for g, n in mapping.items() if n not in new}
    return {k for k, vs in hit.items() if into_old & set(vs) and k.startswith(("metric.", "verified_query."))}


def _restated_finding(t: Table, c: str, v: int, tt: float, early: list[Annotation], hit: dict[str, list[str]],
                       mapping: dict[str, str], gone: list[str], new: list[str], now_values: list[str] | None,
                       counts: dict[str, int], keep_map: bool = True) -> Finding:
    """One `values_restated` finding of `restatements`: the annotations `hit` (each with the vanished
    values it names) of column `c`, rewritten at vid `v`; `value_map` with the map the rows (or the
    files' bounds) show, else (or with `keep_map` False: a filter naming a value merged into one there
    before) `investigate`."""
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
        now_values = _mapped_enum(t, v, early, c, gone, named, vm)
    # a map only on its evidence: with none, the values now are no rewrite of what the
    # annotations name (a value removed is no value renamed; a value added, the enum check's)
    fixes = [make_fix("value_map", column=c, map=vm, values=now_values)] if vm and keep_map else \
        [make_fix("investigate", columns=[c])]
    sugg = (f"restate {', '.join(f'{g} -> {n}' for g, n in vm.items())}; " if vm and keep_map else "") + \
        ("a filter naming a value merged into one that was there already selects other rows once mapped, and no "
         "filter tells the merged rows apart now: decide what it should select; " if not keep_map else "") + \
        (f"values of {c} now: {', '.join(map(str, now_values[:12]))}" if now_values is not None
         else f"compare the values of {c} before and after vid {v}")
    return Finding(
        target=f"{t.name}.{c}" if first.kind == "column" else t.name, annotation=first.key,
        annotations=affected, status=status, reason="values_restated",  # type: ignore[arg-type]
        message=f"{t.name} was rewritten in full at vid {v} ({day_of(tt)}): in {c}, {what}; "
                f"{len(affected)} annotation(s) name the old values",
        evidence=Evidence(vids=list(dict.fromkeys([*(x.vid for x in early if x.key in hit and x.vid), v])),
                          times=[tt], values={"column": c, "rewrite_vid": v, "before_only": gone[:20],
                                              "after_only": new[:20], "map": vm, "map_rows": counts,
                                              "values_now": now_values, "by_annotation": hit,
                                              "columns": [c], "values": named}),
        suggestion=sugg, fixes=fixes, cause=cause_of("rewrite", t.name, v, c))


def _respelled(mapping: dict[str, str], new: list[str]) -> set[str]:
    """Of the vanished values the rows followed (`mapping`, by `moved_to`), those respelled: their rows
    went one to one to a value new in the data (no other vanished value went there), and every value new
    in the rewrite is one of those (a new value no vanished value became took rows from elsewhere: the
    codes were redrawn, a split of meaning, not a respelling). A code merged into one that was there
    already, split over several (no map) or removed (no map) is none."""
    into: dict[str, int] = {}
    for n in mapping.values():
        into[n] = into.get(n, 0) + 1
    if not new or set(new) - set(mapping.values()):
        return set()
    return {g for g, n in mapping.items() if n in set(new) and into[n] == 1}


def _by_label_only(a: Annotation, value: str, labels: dict[str, str]) -> bool:
    """Does description `a` name coded `value` by its label alone (not the code itself)? Prose naming a
    code by what it means stays true when the code is respelled: the label moves with the code."""
    return a.field == "description" and bool(labels.get(value)) and value.lower() not in word_set(a.value)


MAP_ROWS = 2000  # rows of vanished values carried to the new snapshot to map old values to new ones
MERGED_KEPT = 0.9  # of a vanished value's rows, the share that must hold one other value after


def _values_across(t: Table, c: str, v: int, keys: list[str], duck: Duck
                   ) -> tuple[list[str], list[str], list[str], dict[str, str], dict[str, int]] | None:
    """The distinct values of column `c` just before the rewrite at `v` and at the snapshot:
    (before only, now only, all now, old -> new value by the rows that moved (`moved_to`), rows per
    old value mapped). A value counts as gone (new) only when the rewrite itself took it away (brought
    it): absent (present) just after `v` too, so a change of a later commit is never told as this
    rewrite's (a cryptic tester's enum blamed on a rewrite two months before the change; Acme development
    seed 6: 'cancelled' respelled at vid 215 told as the lake's own rewrite at 154). None when a snapshot
    cannot be read. Every statement is bounded like `run_sql` (`Duck`)."""
    q, tq = quote_id(c), quote_table(t.name)
    old = duck_at(t.ctx, v - 1)
    text = f"SELECT DISTINCT {q} FROM {tq} WHERE {q} IS NOT NULL ORDER BY 1 LIMIT {MAX_VALUES * 4}"
    try:
        before = [r[0] for r in old.sql(text)]
        now = [r[0] for r in duck.sql(text)]
        at = set(now) if v == duck.vid else {r[0] for r in duck_at(t.ctx, v).sql(text)}
    except CatalogError:  # a snapshot that cannot be read, or a check past its limit
        return None
    was, held = set(before), set(now)
    gone = [x for x in before if x not in held and x not in at]
    new = [x for x in now if x not in was and x in at]
    try:
        mapping, counts = moved_to(t, c, [str(x) for x in gone], old, duck, keys)
    except CatalogError:  # the map is evidence, not the finding: go on without it
        mapping, counts = {}, {}
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
        # new values beside values merged away (camping merged into equipment, kids new): the merge's map,
        # the enum written as the values now, which holds the new ones too
        gone = _enum_gone(ctx, t, a, cur.name, vals, duck, last)
        maps = [x.params.get("map") or {} for f in gone for x in f.fixes if x.action == "value_map"]
        # merged into values the enum lists (not into the new ones: values drawn into a new value are no merge)
        if maps and not {str(b) for b in maps[0].values()} & {str(x) for x in bad}:
            f = gone[0]
            f.message += f"; it also holds values the enum never listed: {bad}"
            f.evidence.values["outside"] = bad
            return [f]
        return [finding(a, f"{t.name}.{cur.name}", "enum_violated", "stale",
                         f"{cur.name} holds values outside the declared enum: {bad}",
                         [ctx.vid, last], values={"outside": bad, "enum": vals},
                         suggestion=f"add {', '.join(map(str, bad))} to the enum",
                         fixes=[make_fix("add_enum_values", column=cur.name, values=bad)])]
    there = {r[0] for r in duck.sql(f"SELECT DISTINCT {c} FROM {quote_table(t.name)} WHERE {c} IN ({marks})")}
    gone = [v for v in vals if v not in there]
    if not gone:
        return []
    # merged into a value that occurred before (the rows that held each now hold one other value): the
    # sample says that value, once (the round-14 cryptic tester's M2 merged into M18; no fix before)
    merged = next((f for f in _enum_gone(ctx, t, a, cur.name, vals, duck, last, what="sample values")
                   if any(x.action == "value_map" for x in f.fixes)), None)
    if merged is not None:
        vm = merged.evidence.values["map"]
        merged.evidence.values["missing"] = gone
        return [merged.model_copy(update={
            "reason": "sample_values_missing", "suggestion": f"restate {', '.join(f'{g} -> {n}' for g, n in vm.items())} "
                                                             "in the sample values",
            "fixes": [make_fix("value_map", column=cur.name, map=vm, values=merged.evidence.values.get("values_now"))]})]
    return [finding(a, f"{t.name}.{cur.name}", "sample_values_missing", "suspect",
                     f"sample values no longer present in {cur.name}: {gone}", [ctx.vid, last], values={"missing": gone})]


def _enum_gone(ctx: Context, t: Table, a: Annotation, col: str, vals: list[Any], duck: Duck, last: int,
               what: str = "enum values") -> list[Finding]:
    """Enum values (or labelled codes, `what`) that occurred when the enum was written (the data at
    its basis vid) and occur no more: merged into another value when the rows that held each one
    hold one other value now (`merged_into`: stale, value_map; for an enum with the values it holds
    now), else (retired, or spread) suspect with no fix (which value took their rows, if any, is for
    a person to say); the values still there are in the evidence."""
    basis = a.provenance.basis.vid
    if not basis or basis >= ctx.vid:
        return []
    c, marks = quote_id(col), literals(vals)
    now = {r[0] for r in duck.sql(f"SELECT DISTINCT {c} FROM {quote_table(t.name)} WHERE {c} IN ({marks})")}
    if len(now) == len(set(vals)):
        return []
    try:
        then = {r[0] for r in duck_at(ctx, basis).sql(f"SELECT DISTINCT {c} FROM {quote_table(t.name)} "
                                                        f"WHERE {c} IN ({marks})")}
    except CatalogError:  # the basis snapshot cannot be read: no evidence of what was there
        return []
    src = basis
    later = [v for v in vals if v not in then and v not in now]
    if later:  # listed values that came after the enum was written and went again (`held_before_removals`)
        held, src = held_before_removals(ctx, t, col, later, basis)
        then |= held
        if not {v for v in vals if v in then and v not in now} <= held:
            src = basis  # values gone from the basis too: the rows are followed from there
    gone = [v for v in vals if v in then and v not in now]
    if not gone:
        return []
    merged = merged_into(ctx, t, col, gone, src, duck)
    if merged is not None:
        vm, rows, values = merged
        enum = what == "enum values"  # labels: the merged code's label goes, the kept code's stays
        return [finding(a, f"{t.name}.{col}", "enum_violated", "stale",
                        f"{what} of {col} that occurred at vid {src} occur no more: "
                        f"{', '.join(f'{g!r} merged into {n!r} (its {rows[g]} row(s) by the grain keys)' for g, n in vm.items())}",
                        [ctx.vid, last], values={"gone": gone, "enum": vals, "still": sorted(map(str, now)),
                                                 "map": vm, "map_rows": rows, "values_now": values},
                        suggestion=f"restate {', '.join(f'{g} -> {n}' for g, n in vm.items())} in the "
                                   f"{'enum' if enum else 'labels'}",
                        fixes=[make_fix("value_map", column=col, map=vm, values=values) if enum
                               else make_fix("value_map", column=col, map=vm)],
                        cause=cause_of("merged", t.name, last, col))]
    return [finding(a, f"{t.name}.{col}", "enum_violated", "suspect",
                    f"{what} of {col} that occurred at vid {src} occur no more: {gone} (retired, or merged "
                    f"into another value); check which values took their rows", [ctx.vid, last],
                    values={"gone": gone, "enum": vals, "still": sorted(map(str, now))})]



REMOVALS_READ = 3  # latest data commits since a claim that removed files, whose prior snapshot is read


def held_before_removals(ctx: Context, t: Table, col: str, vals: list[Any], basis: int) -> tuple[set[Any], int]:
    """Which of `vals` (listed values absent at the basis and now) `col` held just before one of the
    latest REMOVALS_READ data commits since vid `basis` that removed files (a rewrite, a delete, an
    update: appends remove nothing, so only these can have taken a value away), and the latest such
    snapshot holding any (the rows to follow from): a value that came after the claim was written
    and went again. ({}, basis) when none did, or a snapshot cannot be read."""
    after = t.tl.data_after(basis)
    prevs = [basis] + [v for v, _ in after[:-1]]
    c, tq = quote_id(col), quote_table(t.name)
    read = 0
    for (v, _), prev in zip(reversed(after), reversed(prevs)):
        if read >= REMOVALS_READ:
            break
        if not t.files(prev) or t.kept_files(prev, v):
            continue  # only added files: nothing removed
        read += 1
        try:
            held = {r[0] for r in duck_at(ctx, v - 1).sql(f"SELECT DISTINCT {c} FROM {tq} WHERE {c} IN ({literals(vals)})")}
        except CatalogError:
            return set(), basis
        if held:
            return held, v - 1
    return set(), basis


def merged_into(ctx: Context, t: Table, col: str, gone: list[Any], basis: int, duck: Duck
                ) -> tuple[dict[str, str], dict[str, int], list[str]] | None:
    """Which value took the rows of each vanished enum value (`moved_to`, from the basis to now):
    (old -> new, rows per old value, the column's values now) when every vanished value's rows
    moved to one other value (a category merged into another); None otherwise: rows removed,
    spread over several values, more than MAX_VALUES values now (the enum to write would be cut
    short), or a snapshot that cannot be read (no evidence, no fix)."""
    keys = declared_keys(ctx.annotations(t.name))
    q, tq = quote_id(col), quote_table(t.name)
    try:
        vm, rows = moved_to(t, col, [str(g) for g in gone], duck_at(ctx, basis), duck, keys)
        now = [str(r[0]) for r in duck.sql(f"SELECT DISTINCT CAST({q} AS VARCHAR) FROM {tq} WHERE {q} IS NOT NULL "
                                           f"ORDER BY 1 LIMIT {MAX_VALUES + 1}")]
    except CatalogError:  # no evidence of where the rows went: no fix
        return None
    if len(now) > MAX_VALUES or any(str(g) not in vm for g in gone):
        return None  # too many values to write as the enum, or a value whose rows went nowhere one
    return vm, rows, now


def _columns(t: Table, duck: Duck) -> list[str]:
    """The names of `t`'s columns at the runner's vid, read from the catalog (the table object then; what
    `DESCRIBE` of its view lists, without a SQL worker building every view of that snapshot: ~0.9 s)."""
    obj = t.ctx.cat.get(t.obj.path, vid=duck.vid)
    return [c.name for c in table_columns(obj.value)] if obj is not None and obj.value else []


def row_ident(t: Table, col: str, before: Duck, after: Duck, keys: list[str]) -> str | None:
    """The SQL expression that follows a row of `t` across two snapshots while `col` changes: a hash
    of the grain's keys when they identify rows without `col` (`keys`, as annotated) and the earlier
    snapshot holds them, else of every other column both snapshots have (a row the same in all but
    `col`). None when there is none.
    Raises CatalogError when a snapshot cannot be read."""
    kcols = [k for k in keys if t.col(k) is not None]
    if kcols and not any(k.lower() == col.lower() for k in keys):
        # keys added since (a surrogate key of versions): the rows are followed by what both hold; the
        # table's statistics then say which columns it had (the data only when they are unknown)
        then = {c.lower() for c in stats_at(t, before.vid)} or {c.lower() for c in _columns(t, before)}
        if not {k.lower() for k in kcols} <= then:
            kcols = []
    if not kcols or any(k.lower() == col.lower() for k in keys):
        common = set(_columns(t, after))
        kcols = [c for c in _columns(t, before) if c in common and c.lower() != col.lower()]
    return f"hash({', '.join(quote_id(k) for k in kcols)})" if kcols else None


def moved_to(t: Table, col: str, gone: list[str], before: Duck, after: Duck, keys: list[str]
             ) -> tuple[dict[str, str], dict[str, int]]:
    """Which value took the rows of each vanished value of `col` between two snapshots: old -> new
    (and the rows followed) when MERGED_KEPT of its rows at `before` (at most MAP_ROWS) are found
    at `after` holding `new`, and did not hold it at `before` (paired evidence). A row is followed
    by the grain's keys when they identify rows without `col` (`keys`, as annotated), else by every
    other column both snapshots have (a row the same in all but `col`: a mart keyed by the
    column, a table with no grain). Rows removed (found nowhere, or only one of them found again
    under a reused key) map nothing. Raises CatalogError when a snapshot cannot be read."""
    if not gone:
        return {}, {}
    q, tq = quote_id(col), quote_table(t.name)
    ident = row_ident(t, col, before, after, keys)
    if ident is None:
        return {}, {}
    rows = before.sql(f"SELECT DISTINCT {ident}, CAST({q} AS VARCHAR) FROM {tq} WHERE {q} IN ({literals(list(gone))}) "
                      f"LIMIT {MAP_ROWS}")
    if not rows:
        return {}, {}
    marks = ", ".join(str(int(r[0])) for r in rows)
    seen = f"SELECT DISTINCT {ident}, CAST({q} AS VARCHAR) FROM {tq} WHERE {ident} IN ({marks}) AND {q} IS NOT NULL"
    held = {(int(h), str(v)) for h, v in before.sql(seen)}
    now = {(int(h), str(v)) for h, v in after.sql(seen)} - held
    vm: dict[str, str] = {}
    counts: dict[str, int] = {}
    for g in dict.fromkeys(str(x) for x in gone):
        mine = {int(h) for h, v in rows if str(v) == g}
        to: dict[str, int] = {}
        for h, v in now:
            if h in mine and v not in gone:
                to[v] = to.get(v, 0) + 1
        best = max(sorted(to), key=lambda v: to[v], default=None)
        if best is not None and mine and to[best] >= MERGED_KEPT * len(mine):
            vm[g], counts[g] = best, to[best]
    return vm, counts


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
    for f in t.files(t.ctx.vid):  # the planning other checks of this version share
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
    loads. Loads of a few rows (under a third of the usual, MIN_ADDED or more) are set against the
    earlier loads of as few rows (within 3x), whose extremes measure alike (the round-9 Acme tester's
    marketing spend: seven rows a day in cents beside days of seven rows in dollars). None otherwise,
    and None for a column a recent load of which holds only zeros (refunds, mostly zero: a load's
    largest value then says how many rows were refunded, not in what unit; the data depth measures
    the non-zero values themselves)."""
    every = load_stats(t)
    if any(n > 0 and isinstance(cols.get(col), dict) and _magnitude(cols[col]) is None
           for _v, cols, n in every[-3 * LOAD_WINDOW:]):
        return None  # a recent load of only zeros: a load's extremes count its few non-zero rows, not their scale
    loads = [(v, m, n) for v, cols, n in every if (m := _magnitude(cols.get(col))) is not None]
    if not loads:
        return None
    usual = _median([float(r) for _v, _m, r in loads[-3 * LOAD_WINDOW:]])
    best = _shifted_run([(v, m) for v, m, r in loads if r >= usual / 3], since)
    last = loads[-1][2]
    if best is None and MIN_ADDED <= last < usual / 3:
        # loads of a few rows (MIN_ADDED at least: one or two values are no measure) set against earlier
        # loads of as few (within 3x, MIN_ADDED at least): their extremes measure alike
        best = _shifted_run([(v, m) for v, m, r in loads if max(MIN_ADDED, last / 3) <= r <= 3 * last], since)
    return best


def _shifted_run(mags: list[tuple[int, float]], since: int) -> tuple[int, list[int], float, float] | None:
    """`load_shift`'s test on loads' (vid, magnitude), oldest first: the longest run of latest loads
    (all after `since`) at 10^k times the LOAD_WINDOW loads before them, which agree among themselves."""
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


def restated_scale(t: Table, col: str, since: int) -> tuple[float, int, float] | None:
    """A rewrite after vid `since` that kept the rows (within 5%) and moved `col`'s whole range by
    a unit factor: by 10^k, |k| >= 2, both ends alike (`pair_cost`), or both ends to the old ones
    times a factor of UNIT_FACTORS (10^k, or a factor between units of time) rounded to the column's
    decimals (`factor_scale`: the smallest values of a measure restated ÷100 round to zero; hours
    restated in minutes are the old ends x60): the column restated in another unit in place.
    Evidence: the table's statistics just before and at the commit (the same rows). (the factor,
    vid, time) or None; `ten_exp` gives k back for a power of ten."""
    digits = decimals(t, col)
    for v, tt in t.tl.data_after(since)[-60:]:
        rb, ra = rows_at(t, v - 1), rows_at(t, v)
        if not rb or not ra or abs(ra - rb) > SAME_ROWS * rb:
            continue
        before, after = stats_at(t, v - 1).get(col), stats_at(t, v).get(col)
        if num((before or {}).get("min")) in (None, 0.0) and num((before or {}).get("max")) in (None, 0.0):
            continue
        pc = pair_cost(before, after)
        if pc is not None and abs(pc[1]) >= SHIFT_MIN_K and pc[0] <= 0.05:
            return 10.0 ** pc[1], v, tt
        f = factor_scale(before, after, digits)
        if f is not None:
            return f, v, tt
    return None


def decimals(t: Table, col: str) -> int | None:
    """The digits after the point a numeric column keeps: a decimal's scale, 0 for an integer; None
    for a floating-point column (or an unknown type), which rounds nothing."""
    cur = t.col(col)
    typ = str(cur.type if cur is not None else "").lower().replace(" ", "")
    m = re.fullmatch(r"(?:decimal|numeric)\(\d+,(\d+)\)", typ)
    if m:
        return int(m.group(1))
    return 0 if typ in ("tinyint", "smallint", "int", "integer", "bigint", "long", "short", "byte", "int8", "int16",
                        "int32", "int64") else None


# factors between units besides the powers of ten (|k| >= SHIFT_MIN_K), each also inverted: units of
# time (hours per day, minutes per hour, minutes per day, seconds per hour, seconds per day)
UNIT_FACTORS = (24.0, 60.0, 1440.0, 3600.0, 86400.0)
RESCALE_MIN = 1.5  # a rescale of the same rows into another unit multiplies (or divides) every value by this much
#                    or more; a factor nearer 1 that every row took (another currency, a tax included) changes what
#                    the values mean as surely, but may be a definition, not a unit: suspect (`scale_rewritten`)
PAIRED_MIN = 1.01  # the rows paired by their keys moved by one factor at least this far from 1 (`paired_factor`)


def ten_exp(factor: float) -> int | None:
    """k when `factor` is 10^k (k may be small), else None."""
    if factor <= 0:
        return None
    k = round(math.log10(factor))
    return k if math.isclose(factor, 10.0 ** k, rel_tol=1e-9) else None


def factor_text(factor: float) -> str:
    """A factor as a message says it: 10^k for a power of ten, else x60 or ÷60 (`:g`)."""
    k = ten_exp(factor)
    if k is not None:
        return f"10^{k}"
    return f"x{factor:g}" if abs(factor) >= 1 else f"÷{1 / factor:g}"


def factor_scale(before: dict[str, Any] | None, after: dict[str, Any] | None, digits: int | None) -> float | None:
    """The factor of UNIT_FACTORS (10^k, |k| >= 2, or a factor between units of time, or its inverse)
    when a column's range `after` is its range `before` times it, rounded to `digits` decimals, at
    both ends (within half a unit of the last digit; a floating-point column, `digits` None, within
    floating tolerance), with the maximum ten units of that digit or more (so that the factor is
    measured). A measure restated to a coarser scale in place: its smallest values round to zero,
    so its range's ends move unalike and `pair_cost` (tried first) sees no scale. A factor off the
    powers of ten is taken only where both ends are measured (distinct and not zero: a zero end fits
    any factor, and one value is one ratio)."""
    if before is None or after is None:
        return None
    ends = [x for s in (before, after) for k in ("min", "max") if (x := num(s.get(k))) is not None]
    if len(ends) < 4:
        return None
    bmin, bmax, amin, amax = ends
    if not bmax or not amax or (bmax > 0) != (amax > 0):
        return None
    unit = 10.0 ** -digits if digits is not None else 0.0
    if abs(amax) < 10 * unit:
        return None
    k = round(math.log10(abs(amax / bmax)))
    tens = [10.0 ** k] if abs(k) >= SHIFT_MIN_K else []
    measured = bool(bmin and amin) and bmin != bmax
    others = [x for f in UNIT_FACTORS for x in (f, 1 / f)] if measured else []

    def fits(b: float, a: float, f: float) -> bool:
        return abs(a - b * f) <= unit / 2 + 1e-9 * max(abs(a), unit, 1e-300)

    return next((f for f in (*tens, *others) if fits(bmin, amin, f) and fits(bmax, amax, f)), None)


NOT_MEASURES = (*KEY_SUFFIXES, "_count")  # names whose values grow by nature: no unit to drift


def _scale_cols(t: Table, ann: Annotation, keys: set[str]) -> list[str]:
    """The numeric columns an annotation's claim rests on whose scale matters: its own column, or
    the columns a metric uses; never identifiers or grain keys (they grow by nature). A metric
    computes with the columns its basis lists and those its expression and filter name (a writer
    may record a basis from an older schema that lacks a measure the expression sums)."""
    refs = ann.provenance.basis.columns if ann.kind == "metric" else \
        [r for r in ann.provenance.basis.columns if r.id == ann.column_id][:1]
    curs = [t.cols.get(r.id) for r in refs]
    if ann.kind == "metric":
        named = metric_names(ann)
        curs += [c for n, c in t.by_name.items() if n in named]
    out: list[str] = []
    for cur in curs:
        if cur is None or type_family(cur.type) != "number" or cur.name.lower() in keys or \
                cur.name.lower().endswith(NOT_MEASURES) or cur.name in out:
            continue
        out.append(cur.name)
    return out


def unit_fixes(ann: Annotation, col: str, f: float) -> list[Fix]:
    """The `update_unit` a unit annotation takes when every value of `col` was multiplied by `f`:
    {column, scale} for a power of ten; {column, factor} for a factor between two units of the
    annotated unit's family (`semantic.units`: hours x60 are minutes); a metric computing with `col`
    takes {column, scale} for a power of ten too (the review divides the column by it in the
    expression, so the metric keeps its unit: as `unit_drift` offers it); none for any other claim
    or factor (a description is text a person rewrites; dollars x0.92 is no unit this knows).
    `fix_rules.unit_fix` keeps it only when every row moved."""
    k = ten_exp(f)
    if ann.kind == "metric":
        return [make_fix("update_unit", column=col, scale=k)] if k is not None else []
    if not (ann.kind == "column" and ann.field == "unit"):
        return []
    if k is not None:
        return [make_fix("update_unit", column=col, scale=k)]
    return [make_fix("update_unit", column=col, factor=f)] if unit_after(ann.value, f) is not None else []


def unit_suggestion(ann: Annotation, f: float) -> str:
    """The suggestion of an `update_unit` fix in words."""
    k = ten_exp(f)
    if k is not None:
        return f"unit changed ({unit_word(k)}); update the unit"
    return f"values {factor_text(f)}: they are in {unit_after(ann.value, f)} now; update the unit"


def scale_restated(t: Table, ann: Annotation, keys: set[str]) -> list[Finding]:
    """values_units / definitions: a column restated in another unit in place (`restated_scale`),
    which the whole table's range before against today's hides once later loads widen it. The
    unit annotation gets `update_unit` (every row moved alike) for a power of ten, the one scale
    that fix writes; for another factor (hours restated in minutes, x60) no fix (`fix_rules.unit_fix`
    names the column to look at; the factor is in the evidence). Other claims say what moved."""
    out = []
    for col in _scale_cols(t, ann, keys):
        got = restated_scale(t, col, ann.provenance.basis.vid)
        if got is None:
            continue
        f, v, tt = got
        k = ten_exp(f)
        fixes = unit_fixes(ann, col, f)
        out.append(finding(ann, f"{t.name}.{col}", "unit_drift", "stale",
                           f"{col!r} was rewritten at vid {v} ({day_of(tt)}) with the same rows and its whole range "
                           f"scaled by {factor_text(f)}: its values are in another unit or scale now",
                           [v], [tt], values={"column": col, **({"scale_exp": k} if k is not None else {"scale_factor": f}),
                                              "restated_vid": v,
                                              "before": stats_at(t, v - 1).get(col), "after": stats_at(t, v).get(col)},
                           suggestion=unit_suggestion(ann, f) if fixes else None, fixes=fixes,
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


def loads_beyond(t: Table, col: str, since: int) -> tuple[int, int | None, list[int], tuple[float | None, float]] | None:
    """The first load of `col` after vid `since` whose every value lies 10^2 or more beyond every value
    of the loads before it (per-load file statistics, `load_stats`: its files' smallest magnitude 10^2
    times the earlier loads' largest or more, or its largest 10^-2 times their smallest or less, its
    range on one side of zero), or 10 times or more beyond them and farther than their own spread
    (in powers of ten) with exactly one power of ten, 10^2 or more, that maps it back into their range
    (a value low in the old unit, moved by 10^2, lands less than 10^2 past the old largest), three or
    more earlier loads still in the snapshot beside it. A load
    of a few rows in the column's unit lies inside the spread of the rows before it; past every one
    of them by 10^2 it is in another unit (or mistyped by powers of ten), however few its rows, which
    `load_shift` does not weigh (a few rows' extremes are no measure of a usual load's). Returns
    (k, k_far, the loads from it on that lie so beyond the rows before it, the earlier magnitudes'
    range as log10): every new value moved by 10^k or more (the whole power of ten its gap past the
    old range needs) and by 10^k_far or less (its distance to the far end of the old range; None when
    the old range reaches zero). None otherwise."""
    ends = [(lv, e) for lv, cols, _n in load_stats(t) if (e := _ends(cols.get(col))) is not None]
    for i, (v, (low, top)) in enumerate(ends):
        earlier = [e for _lv, e in ends[:i]]
        if v <= since or len(earlier) < 3 or low is None:
            continue
        e_top = max(x[1] for x in earlier)
        e_lows = [x[0] for x in earlier]
        e_low = None if any(x is None for x in e_lows) else min(x for x in e_lows if x is not None)

        def shifted(gap: float, far: float | None, e_low: float | None = e_low, e_top: float = e_top) -> bool:
            # 10^2 past every earlier value; or past them by a power of ten and by more than their own
            # spread, with one power of ten only (10^2 or more) that maps the load back into their range
            # (a small value of the old unit moved by 10^2 lands less than 10^2 past the old largest)
            return gap >= SHIFT_MIN_K or (e_low is not None and far is not None and gap >= 1 and gap > e_top - e_low
                                          and math.ceil(gap - 1e-9) == math.floor(far + 1e-9) >= SHIFT_MIN_K)

        if shifted(low - e_top, None if e_low is None else top - e_low):  # up: gap below, far end the old smallest
            beyond = [(lv, lo - e_top, None if e_low is None else hi - e_low)
                      for lv, (lo, hi) in ends[i:] if lo is not None
                      and shifted(lo - e_top, None if e_low is None else hi - e_low)]
            sign = 1
        elif e_low is not None and shifted(e_low - top, e_top - low):  # down
            beyond = [(lv, e_low - hi, e_top - lo) for lv, (lo, hi) in ends[i:] if lo is not None
                      and shifted(e_low - hi, e_top - lo)]
            sign = -1
        else:
            continue
        near = min(g for _lv, g, _f in beyond)
        fars = [f for _lv, _g, f in beyond]
        far = None if any(f is None for f in fars) else max(f for f in fars if f is not None)
        return (sign * math.ceil(near - 1e-9), None if far is None else sign * math.floor(far + 1e-9),
                [lv for lv, _g, _f in beyond], (e_low, e_top))
    return None


def scale_beyond(t: Table, ann: Annotation, keys: set[str]) -> list[Finding]:
    """values_units: a load after the claim's basis whose every value of a numeric column lies 10^2 or
    more beyond every value loaded before it (`loads_beyond`), beside those older rows: the column
    mixes two units, so no fix (`fix_rules.unit_fix` names the column to look at)."""
    out = []
    for col in _scale_cols(t, ann, keys):
        got = loads_beyond(t, col, ann.provenance.basis.vid)
        if got is None:
            continue
        k, far, vids, (e_low, e_top) = got
        was = f"1e{e_low:.3g}..1e{e_top:.3g}" if e_low is not None else f"up to 1e{e_top:.3g}"
        by = f"10^{k}" if far is None or far == k else f"10^{k} to 10^{far}"
        out.append(finding(ann, f"{t.name}.{col}", "unit_drift", "stale",
                           f"the load at vid {vids[0]} wrote values of {col!r} far beyond every value "
                           f"loaded before it (magnitudes {was}): moved by {by}, while the older rows keep theirs "
                           f"({len(vids)} load(s) so far): the column now mixes two units; check those loads and "
                           "restate one side",
                           [vids[0], vids[-1]], values={"column": col, "scale_exp": k, "scale_exp_far": far,
                                                        "loads": vids, "earlier_log10": [e_low, e_top],
                                                        "whole_table": False},
                           cause=cause_of("unit", t.name, vids[0], col)))
    return out


# ------------------------------------------------------------------ restatements the ranges hide (data depth)
KEPT_REWRITES = 3      # latest full rewrites after a claim's basis whose values are compared, per column
NUM_QS = (0.1, 0.25, 0.5, 0.75, 0.9)
TIME_QS = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0)
ZONE_STEP = 900        # time zones are whole quarter hours from UTC
ZONE_MAX = 14 * 3600   # and at most 14 hours from it


def _overwrote(t: Table, v: int) -> bool | None:
    """Whether commit `v` replaced every file of `t`, by its write log (`overwrite` for the table);
    None when the commit logged no write of the table."""
    c = t.ctx.commit(v)
    short = {t.name, t.name.split(".", 1)[-1]}
    modes = [w.get("mode") for w in (((c.meta or {}).get("writes") or []) if c is not None else [])
             if isinstance(w, dict) and str(w.get("table")) in short]
    return ("overwrite" in modes) if modes else None


def kept_rewrites(t: Table, since: int) -> list[tuple[int, float]]:
    """The full rewrites of `t` after vid `since` that kept its rows (within 5%): the same rows
    written again, so a column's values either side can be set against each other. A rewrite is a
    commit whose write log says `overwrite`, or, with no log, one after which every file the table
    holds was written by it (planned for the latest KEPT_REWRITES such commits at most). The latest
    KEPT_REWRITES, oldest first (cached per table, snapshot and `since`)."""
    key = ("kept_rewrites", t.obj.path, t.ctx.vid, since)
    got = t.ctx.cache.findings.take(key)
    if got is not None:
        return got[0]
    out: list[tuple[int, float]] = []
    planned = 0
    for v, tt in reversed(t.tl.data_after(since)[-60:]):
        rb, ra = rows_at(t, v - 1), rows_at(t, v)
        if not rb or not ra or abs(ra - rb) > SAME_ROWS * rb:
            continue
        full = _overwrote(t, v)
        if full is None and planned < KEPT_REWRITES:
            planned += 1
            full = t.rewrote_all(v)
        if not full:
            continue
        out.append((v, tt))
        if len(out) >= KEPT_REWRITES:
            break
    out.reverse()
    t.ctx.cache.findings.put(key, (out,))
    return out


def _quantiles(t: Table, col: str, vid: int, expr: str, qs: tuple[float, ...]) -> list[float] | None:
    """The quantiles `qs` (actual values: quantile_disc) of `expr` over the non-null values of `col`
    at `vid`, as floats; None when the snapshot cannot be read or holds no value (cached)."""
    key = ("quantiles", t.obj.path, vid, col, expr, qs)
    got = t.ctx.cache.findings.take(key)
    if got is not None:
        return got[0]
    q = quote_id(col)
    e = expr.format(q)
    sel = ", ".join(f"quantile_disc({e}, {x})" for x in qs)
    try:
        rows = duck_at(t.ctx, vid).sql(f"SELECT {sel} FROM {quote_table(t.name)} WHERE {q} IS NOT NULL")
    except CatalogError:  # a snapshot that cannot be read, or a statement past its limit: no evidence
        rows = []
    vals = [num(x) for x in rows[0]] if rows else []
    out = [float(x) for x in vals] if vals and all(x is not None for x in vals) else None  # type: ignore[arg-type]
    t.ctx.cache.findings.put(key, (out,))
    return out


def range_kept(t: Table, col: str, v: int) -> bool:
    """Whether the rewrite at `v` left `col`'s stored minimum and maximum as they were (both known
    either side, from the table's statistics). Rows restated in another unit or time zone move their
    extremes with them (the maximum is the top rank), so such a rewrite cannot be one, and the
    quantile queries (`_quantiles`, one read of each snapshot) are not run: most kept rewrites are
    routine rebuilds of the same values."""
    b, a = stats_at(t, v - 1).get(col) or {}, stats_at(t, v).get(col) or {}
    keys = ("min", "max")
    return all(b.get(x) is not None for x in keys) and all(b.get(x) == a.get(x) for x in keys)


def quantile_scale(t: Table, col: str, v: int) -> int | None:
    """k when the rewrite at `v` (the same rows) moved `col`'s typical magnitudes by 10^k, |k| >= 2:
    the magnitudes at each of its deciles and quartiles before and after (the same ranks, since
    the same rows scaled keep their order) differ by one power of ten, within 0.2 of it (rounding
    of the smallest values), at three ranks at least where neither side is zero. None otherwise, and
    when every rank moved by one amount (an offset: `core.offset`)."""
    if range_kept(t, col, v):
        return None
    expr = "abs(CAST({} AS DOUBLE))"
    before, after = _quantiles(t, col, v - 1, expr, NUM_QS), _quantiles(t, col, v, expr, NUM_QS)
    if before is None or after is None:
        return None
    logs = [math.log10(a / b) for b, a in zip(before, after, strict=True) if a > 0 and b > 0]
    if len(logs) < 3:
        return None
    if offset(min(before), max(before), min(after), max(after)) and \
            all(math.isclose(a - b, after[0] - before[0], rel_tol=1e-9) for b, a in zip(before, after, strict=True)):
        return None  # every rank moved by one amount: an offset (keys restated + N), not a scale
    k = round(_median(logs))
    if abs(k) < SHIFT_MIN_K or any(abs(x - k) > 0.2 for x in logs):
        return None
    return k


def paired_factor(t: Table, col: str, v: int, keys: list[str]) -> float | None:
    """The factor k by which the rewrite at `v` (the same rows) multiplied every value of `col`: the
    rows before and after it paired by the grain's keys (`row_ident`, as `moved_to` follows rows; at
    most MAP_ROWS rows of non-zero values), nearly every pair (1 - SAME_ROWS of them, MIN_ADDED at
    least, and half the rows sampled or more paired) holds new = old x k, within the column's
    rounding (half a unit of its last decimal, and the error that rounding puts in k, which is read
    off the pair of largest magnitude) or floating tolerance, and k is 1% or more away from 1
    (PAIRED_MIN either way). Any factor, not only a power of ten: hours restated in minutes (x60),
    seconds in milliseconds, dollars in euros (x0.92), a tax included (x1.08). k is snapped to a factor of UNIT_FACTORS or a power of ten when
    it lies within 1e-3 of one. None otherwise (the data is read only when the table's statistics
    show the range moved, `range_kept`; cached)."""
    key = ("paired_factor", t.obj.path, v, col)
    got = t.ctx.cache.findings.take(key)
    if got is not None:
        return got[0]
    out = None if range_kept(t, col, v) else _paired_factor(t, col, v, keys)
    t.ctx.cache.findings.put(key, (out,))
    return out


def _paired_factor(t: Table, col: str, v: int, keys: list[str]) -> float | None:
    q, tq = quote_id(col), quote_table(t.name)
    before, after = duck_at(t.ctx, v - 1), duck_at(t.ctx, v)
    nonzero = f"{q} IS NOT NULL AND {q} <> 0"
    try:
        ident = row_ident(t, col, before, after, keys)
        if ident is None:
            return None
        old = before.sql(f"SELECT {ident}, CAST({q} AS DOUBLE) FROM {tq} WHERE {nonzero} ORDER BY 1 LIMIT {MAP_ROWS}")
        if len(old) < MIN_ADDED:
            return None
        new = after.sql(f"SELECT {ident}, CAST({q} AS DOUBLE) FROM {tq} "
                        f"WHERE {ident} IN ({', '.join(str(int(r[0])) for r in old)}) AND {nonzero}")
    except CatalogError:  # a snapshot that cannot be read, or a statement past its limit: no evidence
        return None

    def once(rows: list[Any]) -> dict[int, float]:
        seen: dict[int, list[float]] = {}
        for h, x in rows:
            seen.setdefault(int(h), []).append(float(x))
        return {h: xs[0] for h, xs in seen.items() if len(xs) == 1}  # a key held twice pairs nothing

    b, a = once(old), once(new)
    pairs = [(b[h], a[h]) for h in b if h in a]
    if len(pairs) < max(MIN_ADDED, len(old) / 2):
        return None
    o, n = max(pairs, key=lambda p: abs(p[0]))
    k = n / o
    if abs(math.log10(abs(k))) < math.log10(PAIRED_MIN):
        return None
    near = [x for f in (10.0 ** round(math.log10(abs(k))), *UNIT_FACTORS) for x in (f, 1 / f, -f, -1 / f)]
    k = next((x for x in near if math.isclose(k, x, rel_tol=1e-3)), k)
    digits = decimals(t, col)
    unit = 10.0 ** -digits if digits is not None else 0.0
    fit = sum(abs(y - x * k) <= unit / 2 * (1 + abs(x / o)) + 1e-6 * max(abs(y), abs(x * k)) for x, y in pairs)
    return k if fit >= (1 - SAME_ROWS) * len(pairs) else None


def _zone_step(d: float) -> int | None:
    """`d` seconds as a time-zone shift (a whole quarter hour, within a second; not 0; at most 14
    hours), else None."""
    if not ZONE_STEP - 1 <= abs(d) <= ZONE_MAX + 1 or abs(d / ZONE_STEP - round(d / ZONE_STEP)) * ZONE_STEP > 1.0:
        return None
    return int(round(d / ZONE_STEP) * ZONE_STEP)


def _stat_shift(b: dict[str, Any] | None, a: dict[str, Any] | None) -> float | None:
    """Seconds by which a time column's range moved, both ends alike (within a second): None when
    either range is unknown, holds one time, or its ends moved apart."""
    ends = [x for s in (b, a) for k in ("min", "max") if (x := parse_time((s or {}).get(k))) is not None]
    if len(ends) < 4:
        return None
    blo, bhi, alo, ahi = ends
    if blo == bhi or alo == ahi or abs((alo - blo) - (ahi - bhi)) > 1.0:
        return None
    return (alo - blo + ahi - bhi) / 2


def slid(t: Table, col: str, v: int, d: float) -> bool:
    """Whether the rewrite at `v` brought other rows, not the same rows restated: a column other
    than `col` moved its range (a window that slid later in time moves its ids, dates and measures
    with it), leaving out a column that now holds one value for every row (a load stamp) and a
    time column moved by the same `d` (restated in the same zone). A zone restatement rewrites
    the same rows with only the times moved."""
    before, after = stats_at(t, v - 1), stats_at(t, v)
    for c, b in before.items():
        a = after.get(c)
        if c == col or not isinstance(a, dict) or not isinstance(b, dict):
            continue
        if all(bound_alike(b.get(k), a.get(k)) for k in ("min", "max")):
            continue  # the same range (a writer's truncated string bound records the same value)
        if a.get("min") is not None and a.get("min") == a.get("max"):
            continue  # one value stamped on every row: the rebuild's time, not the rows'
        other = _stat_shift(b, a)
        if other is not None and abs(other - d) <= 1.0:
            continue
        if _zone_alike(b, a, d):
            continue
        return True
    return False


def _zone_alike(b: dict[str, Any], a: dict[str, Any], d: float) -> bool:
    """Whether a time column's range moved as a local time that keeps daylight saving written over UTC
    moves, with a zone step of `d`: each end by a whole zone step (`_zone_step`), the two an hour apart
    at most, neither more than an hour from `d` (another time of the same rows, restated in the same
    zone: New York's -5 h in winter, -4 h in summer)."""
    ends = [(parse_time(a.get(k)), parse_time(b.get(k))) for k in ("min", "max")]
    steps = [s for x, y in ends if x is not None and y is not None and (s := _zone_step(x - y)) is not None]
    return len(steps) == 2 and abs(steps[0] - steps[1]) <= 3600 and all(abs(st - d) <= 3600 for st in steps)


def zone_restated(t: Table, col: str, v: int) -> int | None:
    """Metadata: seconds by which the rewrite at `v` (the same rows) moved timestamp `col`'s
    whole range, both ends by one whole number of quarter hours (`_zone_step`), while the rest of
    the rows kept theirs (`slid` False). None otherwise."""
    d = _stat_shift(stats_at(t, v - 1).get(col), stats_at(t, v).get(col))
    step = None if d is None else _zone_step(d)
    if step is None or slid(t, col, v, step):
        return None
    return step


def zone_shift(t: Table, col: str, v: int) -> int | None:
    """Seconds (a whole quarter hour, at most 14 hours, not 0) by which the rewrite at `v` (the
    same rows) moved every value of timestamp `col` alike: its minimum, deciles, quartiles, median
    and maximum before and after differ by that one amount (within a second), and the column's
    values spread (a column stamped with one time at each rebuild is not a time of the rows), and
    the rewrite brought no other rows (`slid`), or the rows it kept, paired by the grain's keys, moved
    by a zone step (`paired_zone`: a re-extraction that takes the day's new rows in too, the round-21
    cryptic tester's shipments). None otherwise. The data is read only when the
    table's statistics do not already rule it out (the minimum and maximum they record moved by
    one zone step, or are unknown)."""
    if range_kept(t, col, v):
        return None
    b, a = stats_at(t, v - 1).get(col), stats_at(t, v).get(col)
    dst = False
    if all(parse_time((x or {}).get(k)) is not None for x in (b, a) for k in ("min", "max")):
        # the minimum and the maximum are two of the ranks compared: when the statistics know them,
        # a shift they do not show (both ends by one zone step) cannot be one, and the data is not read;
        # ends moved by two zone steps an hour apart are a local time that keeps daylight saving
        ends = [parse_time((a or {}).get(k)) - parse_time((b or {}).get(k)) for k in ("min", "max")]  # type: ignore[operator]
        steps = [_zone_step(e) for e in ends]
        if steps == [None, None]:
            return None
        if None in steps:
            # one end moved by a zone step, the other not: rows the rewrite filled in or took in move an end
            # (the round-24 cryptic tester's deliveries, New York time over UTC with 67 times of rows in
            # transit filled in): the rows kept, paired by the grain's keys, decide
            return paired_zone(t, col, v)
        dst = steps[0] != steps[1]
        if dst and abs(steps[0] - steps[1]) != 3600:  # type: ignore[operator]
            return None
    expr = "epoch({})"
    before, after = _quantiles(t, col, v - 1, expr, TIME_QS), _quantiles(t, col, v, expr, TIME_QS)
    if before is None or after is None or len(set(before)) < 3 or len(set(after)) < 3:
        return None
    diffs = [a - b for b, a in zip(before, after, strict=True)]
    d = _median(diffs)
    step = None if any(abs(x - d) > 1.0 for x in diffs) else _zone_step(d)
    paired = None
    if step is None and (dst or max(diffs) - min(diffs) <= 3601):
        step = paired = paired_zone(t, col, v)
    if step is None:
        return None
    if slid(t, col, v, step) and (paired if paired is not None else paired_zone(t, col, v)) is None:
        return None  # other rows, and the rows kept (paired by the grain's keys) not moved by a zone step
    return step


def paired_zone(t: Table, col: str, v: int) -> int | None:
    """A local time that keeps daylight saving written over UTC in place: the rows before and after the
    rewrite at `v` paired by the grain's keys (`row_ident`, at most MAP_ROWS rows), nearly every pair
    (1 - SAME_ROWS) moved by a whole zone step, all of them by one of two steps an hour apart (winter
    and summer: New York is -5 h, then -4 h). The step most rows took (seconds), or None."""
    keys = declared_keys(t.ctx.annotations(t.name))
    q, tq = quote_id(col), quote_table(t.name)
    before, after = duck_at(t.ctx, v - 1), duck_at(t.ctx, v)
    try:
        ident = row_ident(t, col, before, after, keys)
        if ident is None:
            return None
        old = before.sql(f"SELECT {ident}, epoch({q}) FROM {tq} WHERE {q} IS NOT NULL ORDER BY 1 LIMIT {MAP_ROWS}")
        if len(old) < MIN_ADDED:
            return None
        new = dict((int(h), float(x)) for h, x in after.sql(
            f"SELECT {ident}, epoch({q}) FROM {tq} WHERE {ident} IN ({', '.join(str(int(r[0])) for r in old)})"))
    except CatalogError:
        return None
    diffs = [new[int(h)] - float(x) for h, x in old if int(h) in new]
    if len(diffs) < max(MIN_ADDED, len(old) / 2):
        return None
    steps = [_zone_step(d) for d in diffs]
    counted: dict[int, int] = {}
    for st in steps:
        if st is not None:
            counted[st] = counted.get(st, 0) + 1
    if not counted or sum(counted.values()) < (1 - SAME_ROWS) * len(diffs) or len(counted) > 2 or \
            (len(counted) == 2 and abs(max(counted) - min(counted)) != 3600):
        return None
    return max(counted, key=lambda k: counted[k])


def scale_rewritten(t: Table, ann: Annotation, keys: set[str], already: set[tuple[str | None, str]]) -> list[Finding]:
    """values_units / definitions, data: a rewrite after the claim's basis that kept the rows moved
    a numeric column's typical values by 10^k (`quantile_scale`), or multiplied every row's value
    by one factor, whatever it is (`paired_factor`: the rows paired by the grain's keys; hours
    restated in minutes, x60): the column was restated in another unit in place, although its
    minimum and maximum may not show it (a range starting at zero, a few extreme rows, the smallest
    values rounded to zero). The unit annotation gets `update_unit` for a power of ten (every rank
    moved alike), the one scale that fix writes; for another factor every claim gets `investigate`
    (the factor is in the evidence). Other claims say what moved. A claim already flagged
    unit_drift by the statistics is left to that finding."""
    if (ann.key, "unit_drift") in already:
        return []
    grain = [c.name for k in sorted(keys) if (c := t.col(k)) is not None]
    out = []
    for col in _scale_cols(t, ann, keys):
        for v, tt in reversed(kept_rewrites(t, ann.provenance.basis.vid)):
            kq = quantile_scale(t, col, v)
            f = 10.0 ** kq if kq is not None else paired_factor(t, col, v, grain)
            if f is None:
                continue
            k = ten_exp(f)
            fixes = unit_fixes(ann, col, f) or ([make_fix("investigate", columns=[col])] if k is None else [])
            how = "at every decile and quartile" if kq is not None else "in every row (paired by the grain's keys)"
            # a factor near 1 (another currency, a tax included) changed what the values mean, but whether
            # the claim's words still hold (a unit? a definition?) is for a person: suspect
            near_one = abs(math.log10(abs(f))) < math.log10(RESCALE_MIN)
            out.append(finding(ann, f"{t.name}.{col}", "unit_drift", "suspect" if near_one else "stale",
                               f"{col!r} was rewritten at vid {v} ({day_of(tt)}) with the same rows and its values "
                               f"{how} scaled by {factor_text(f)}: its values are in another "
                               + ("currency, or include something they did not (a tax, a fee); check what they "
                                  "mean now" if near_one else "unit or scale now"),
                               [v], [tt], values={"column": col, **({"scale_exp": k} if k is not None
                                                                    else {"scale_factor": f}),
                                                  "restated_vid": v,
                                                  "quantiles": list(NUM_QS),
                                                  "before": _quantiles(t, col, v - 1, "abs(CAST({} AS DOUBLE))", NUM_QS),
                                                  "after": _quantiles(t, col, v, "abs(CAST({} AS DOUBLE))", NUM_QS)},
                               suggestion=(unit_suggestion(ann, f) if fixes[0].action == "update_unit" else
                                           f"{col}'s values were scaled {factor_text(f)}: check which unit they "
                                           "are in now and rewrite the claim") if fixes else None,
                               fixes=fixes, cause=cause_of("unit", t.name, v, col)))
            break
    return out


def zone_cols(t: Table, ann: Annotation, anns: list[Annotation]) -> list[str]:
    """The timestamp columns whose time zone a claim rests on: a column's own description, unit
    or sample values; the table's description, or the reason its not_for_reporting gives ("raw input:
    store-local timestamps"), for the timestamp columns no such claim describes, when it names the
    column or says what zone times are in (`ZONE_WORDS`: "times in UTC"); a description of what the
    rows are ("Payment attempts, one to three per order") claims no zone."""
    from semantic._tables import type_family as fine_family

    def ts(cid: int | None) -> str | None:
        cur = t.cols.get(cid if cid is not None else -1)
        return cur.name if cur is not None and fine_family(cur.type) == "timestamp" else None

    if ann.kind == "column":
        name = ts(ann.column_id)
        return [name] if name else []
    described = {a.column_id for a in anns if a.kind == "column" and a.field in ZONE_FIELDS}
    text = " ".join(strings_of(ann.value))  # a description, or the reason a not_for_reporting gives
    return [n for cid in t.cols if cid not in described and (n := ts(cid))
            and (ZONE_WORDS.search(text) or re.search(rf"(?<![\w.]){re.escape(n)}(?!\w)", text, re.IGNORECASE))]


# words by which prose says what zone its times are in: a table description that says none of them and
# names no timestamp column claims nothing a zone change makes false
ZONE_WORDS = re.compile(r"\b(?:utc|gmt|time ?zones?|local time|timestamps?)\b", re.IGNORECASE)


ZONE_FIELDS = ("description", "unit", "sample_values")


def zone_rewritten(t: Table, ann: Annotation, anns: list[Annotation],
                   already: set[tuple[str | None, str]] | None = None) -> list[Finding]:
    """values_units, data: a rewrite after the claim's basis that kept the rows moved every value of
    a timestamp column by one whole number of quarter hours, at most 14 hours (`zone_shift`): the
    times were restated in another time zone (UTC to local, or back), so a claim about what the
    times are (the column's description, unit, sample values; the table description for a column
    none describes) no longer holds. Which zone is right is for a person to say: no fix, the
    finding names the column to check. A claim the statistics already flagged (`zone_meta`) is
    left to that finding."""
    if already is not None and (ann.key, "unit_drift") in already:
        return []
    return _zone_findings(t, ann, anns, zone_shift, "every value moved by {h:+g} h alike (minimum, quartiles, maximum)")


def zone_meta(t: Table, ann: Annotation, anns: list[Annotation]) -> list[Finding]:
    """values_units, metadata: the same restatement seen in the table's statistics (`zone_restated`):
    a rewrite after the claim's basis that kept the rows moved a timestamp column's minimum and
    maximum by the same whole quarter hours while every other column kept its range (a window that
    slid later in time moves the rows' ids and dates too, and is left alone). No fix."""
    return _zone_findings(t, ann, anns, zone_restated,
                          "its minimum and maximum moved by {h:+g} h alike while the other columns kept their ranges")


def _zone_findings(t: Table, ann: Annotation, anns: list[Annotation], shift: Any, how: str) -> list[Finding]:
    out = []
    for col in zone_cols(t, ann, anns):
        for v, tt in reversed(kept_rewrites(t, ann.provenance.basis.vid)):
            d = shift(t, col, v)
            if d is None:
                continue
            h = d / 3600
            out.append(finding(ann, f"{t.name}.{col}", "unit_drift", "stale",
                               f"{col!r} was rewritten at vid {v} ({day_of(tt)}) with the same rows and "
                               f"{how.format(h=h)}: its times are in another time zone now; "
                               "check which zone the column holds", [v], [tt],
                               values={"column": col, "shift_hours": h, "restated_vid": v},
                               fixes=[make_fix("investigate", columns=[col])], cause=cause_of("zone", t.name, v, col)))
            break
    return out


def labels_data(ctx: Context, t: Table, a: Annotation, duck: Duck, last: int,
                checked: set[tuple[str | None, str]]) -> list[Finding]:
    """values_units, data: a coded column's `labels` (code -> what it means) against its values.
    A code the column holds that the labels do not explain makes the map incomplete (stale; what
    the code means is for a person to say, so no fix: the finding names the codes); a labelled code
    that occurred when the labels were written and occurs no more (retired, or merged into
    another) is suspect, as for an enum (`_enum_gone`)."""
    cur = t.cols.get(a.column_id or -1)
    codes = [str(k) for k in (a.value or {})] if isinstance(a.value, dict) else []
    if cur is None or not codes:
        return []
    checked.add((a.key, "enum_violated"))
    c = quote_id(cur.name)
    bad = [str(r[0]) for r in duck.sql(f"SELECT DISTINCT CAST({c} AS VARCHAR) FROM {quote_table(t.name)} "
                                       f"WHERE {c} IS NOT NULL AND CAST({c} AS VARCHAR) NOT IN ({literals(codes)}) "
                                       "ORDER BY 1 LIMIT 20")]
    if bad:
        vm = _respelled_codes(ctx, t, a, cur.name, codes, bad, duck)
        if vm:
            return [finding(a, f"{t.name}.{cur.name}", "enum_violated", "stale",
                            f"{cur.name} holds codes its labels do not explain: {bad}; the rows of "
                            f"{', '.join(f'{g!r} hold {n!r}' for g, n in vm.items())} now (respelled)"
                            + (f"; say what {[x for x in bad if x not in vm.values()]} mean"
                               if set(bad) - set(vm.values()) else ""),
                            [ctx.vid, last], values={"outside": bad, "labelled": codes, "map": vm},
                            suggestion=f"restate {', '.join(f'{g} -> {n}' for g, n in vm.items())} in the labels",
                            fixes=[make_fix("value_map", column=cur.name, map=vm)])]
        return [finding(a, f"{t.name}.{cur.name}", "enum_violated", "stale",
                        f"{cur.name} holds codes its labels do not explain: {bad}; say what they mean",
                        [ctx.vid, last], values={"outside": bad, "labelled": codes},
                        fixes=[make_fix("investigate", columns=[cur.name])])]
    if type_family(cur.type) != "string":
        return []
    return _enum_gone(ctx, t, a, cur.name, codes, duck, last, what="labelled codes")


def _respelled_codes(ctx: Context, t: Table, a: Annotation, col: str, codes: list[str], bad: list[str],
                     duck: Duck) -> dict[str, str]:
    """Labelled codes respelled as unexplained codes of `bad`: old -> new when a code of `bad` holds
    the rows of a labelled code that occurred at the labels' basis and occurs no more (`moved_to`,
    by the grain's keys or every other column). A new code no rows moved to is left out: its
    meaning is for a person to say (the finding still names it)."""
    basis, cur = a.provenance.basis.vid, t.col(col)
    if not basis or basis >= ctx.vid or cur is None or type_family(cur.type or "") != "string":
        return {}
    q, tq = quote_id(col), quote_table(t.name)
    try:
        then = duck_at(ctx, basis)
        was = {str(r[0]) for r in then.sql(f"SELECT DISTINCT {q} FROM {tq} WHERE {q} IN ({literals(codes)})")}
        now = {str(r[0]) for r in duck.sql(f"SELECT DISTINCT {q} FROM {tq} WHERE {q} IN ({literals(codes)})")}
        gone = [c for c in codes if c in was and c not in now]
        keys = declared_keys(ctx.annotations(t.name))
        vm, _rows = moved_to(t, col, gone, then, duck, keys)
    except CatalogError:  # no evidence of where the rows went: no map
        return {}
    return {g: n for g, n in vm.items() if n in bad}


# ------------------------------------------------------------------ new loads in another unit (data depth)
KEPT_LOADS = 4     # latest appends after a claim's basis whose added rows are set against the rows before, per column
LOG_BINS = 10      # magnitude bins per power of ten (a row's bin: floor(log10 |value| * LOG_BINS))
MIN_ADDED = 5      # non-zero values an append must add (and the rows before must hold) to measure their scale
# fewer added values (a table of one row a day) are judged by their decimals alone, against this many rows
# before, every one of which kept the decimals the added ones lost (or had none the added ones gained): by
# chance, two values of a column with cents are whole one time in 10^4
MIN_DIGITS_ADDED, DIGITS_BEFORE = 2, 100
APPEND_QS = (0.25, 0.5, 0.75)


def appends(t: Table, since: int) -> list[tuple[int, float]]:
    """The latest KEPT_LOADS data commits of `t` after vid `since` that added rows (its row count
    grew, and there were rows before), oldest first."""
    out: list[tuple[int, float]] = []
    for v, tt in reversed(t.tl.data_after(since)[-60:]):
        rb, ra = rows_at(t, v - 1), rows_at(t, v)
        if rb and ra and ra > rb:
            out.append((v, tt))
            if len(out) >= KEPT_LOADS:
                break
    out.reverse()
    return out


def _magnitudes(t: Table, col: str, vid: int) -> dict[int, int] | None:
    """The non-zero values of numeric `col` at `vid` counted by magnitude bin (LOG_BINS per power of
    ten); None when the snapshot cannot be read. One bounded statement per (table, vid, column), cached."""
    key = ("magnitudes", t.obj.path, vid, col)
    got = t.ctx.cache.findings.take(key)
    if got is not None:
        return got[0]
    q = quote_id(col)
    try:
        rows = duck_at(t.ctx, vid).sql(
            f"SELECT CAST(floor(log10(abs(CAST({q} AS DOUBLE))) * {LOG_BINS}) AS BIGINT), count(*) "
            f"FROM {quote_table(t.name)} WHERE {q} IS NOT NULL AND {q} <> 0 GROUP BY 1")
        out: dict[int, int] | None = {int(b): int(n) for b, n in rows if b is not None}
    except CatalogError:  # a snapshot that cannot be read, or a statement past its limit: no evidence
        out = None
    t.ctx.cache.findings.put(key, (out,))
    return out


def _binned_quantiles(h: dict[int, int], qs: tuple[float, ...]) -> list[float]:
    """The quantiles `qs` of binned counts `h`, in powers of ten (the bin's lower edge)."""
    n = sum(h.values())
    out, acc, it = [], 0, iter(sorted(h.items()))
    b, c = next(it)
    acc = c
    for q in qs:
        while acc < q * n:
            b, c = next(it)
            acc += c
        out.append(b / LOG_BINS)
    return out


def _ends(s: dict[str, Any] | None) -> tuple[float | None, float] | None:
    """log10 of the smallest magnitude of a range (None when the range reaches or crosses zero) and
    of its largest; None when the range holds no magnitude."""
    lo, hi = num((s or {}).get("min")), num((s or {}).get("max"))
    if lo is None or hi is None:
        return None
    top = max(abs(float(lo)), abs(float(hi)))
    if top == 0:
        return None
    low = None if lo == 0 or hi == 0 or (lo < 0) != (hi < 0) else math.log10(min(abs(float(lo)), abs(float(hi))))
    return low, math.log10(top)


def _load_may_move(t: Table, col: str, v: int) -> bool:
    """A cheap necessary condition for the append at `v` to hold `col` in another scale beside the
    rows before it (per-load file statistics of the snapshot, `load_stats`): files written by `v`
    and files written before it are both still there (the old rows kept beside the new ones; a
    rewrite, or a load compacted away, is left to other checks), and the smallest or the largest
    magnitude of the load's files is 10x or more off the median of the earlier loads' (a load in
    the same unit, however small, stays within both)."""
    ends = [(lv, e) for lv, cols, _n in load_stats(t) if (e := _ends(cols.get(col))) is not None]
    mine = [e for lv, e in ends if lv == v]
    earlier = [e for lv, e in ends if lv < v][-LOAD_WINDOW:]
    if not mine or not earlier:
        return False
    for i in (0, 1):
        mine_i, theirs = mine[0][i], [x for e in earlier if (x := e[i]) is not None]
        if mine_i is not None and theirs and abs(mine_i - _median(theirs)) >= 1.0:
            return True
    return False


def appended_scale(t: Table, col: str, v: int, start: int | None = None
                   ) -> tuple[int, int, list[float], list[float]] | None:
    """(k, rows added, the earlier rows' quartiles, the added rows') when the append at `v` added
    rows of `col` at 10^k (|k| >= 2) times the rows before, beside them: the magnitudes at `v`
    counted by bin minus those at `v - 1` are the added rows' exactly (no bin lost rows: the rows
    before are all still there), whose quartiles each lie 10^k (within half a power) from the
    earlier rows', their middle half beyond the earlier rows' middle half. With `start` (a vid
    before `v`), the rows added from `start + 1` to `v` together (several small loads, each too few
    to measure). None otherwise."""
    first = v if start is None else start + 1
    if not _load_may_move(t, col, first):
        return None
    base = v - 1 if start is None else start
    before, after = _magnitudes(t, col, base), _magnitudes(t, col, v)
    if not before or not after:
        return None
    added = {b: after.get(b, 0) - before.get(b, 0) for b in set(after) | set(before)}
    if any(n < 0 for n in added.values()):
        return None  # rows before were changed or removed: not a load beside them
    added = {b: n for b, n in added.items() if n}
    n_added, n_before = sum(added.values()), sum(before.values())
    few = n_added < MIN_ADDED  # too few to measure by magnitude: only their decimals may say (`_digits_moved`)
    if n_before < MIN_ADDED or (few and (n_added < MIN_DIGITS_ADDED or n_before < DIGITS_BEFORE)):
        return None
    qo, qn = _binned_quantiles(before, APPEND_QS), _binned_quantiles(added, APPEND_QS)
    d = [n - o for o, n in zip(qo, qn, strict=True)]
    k = round(_median(d))
    if few or abs(k) < SHIFT_MIN_K or any(abs(x - k) > 0.5 for x in d) or \
            (k > 0 and qn[0] <= qo[-1]) or (k < 0 and qn[-1] >= qo[0]):
        j = _digits_moved(t, col, v, _median(d), d, base, MIN_DIGITS_ADDED if few else MIN_ADDED)
        return (j, n_added, qo, qn) if j is not None else None
    return k, n_added, qo, qn


def _whole_counts(t: Table, col: str, vid: int, digits: int) -> tuple[int, int] | None:
    """(non-zero rows of `col` at `vid` that are whole multiples of 10^-digits, non-zero rows)."""
    q = quote_id(col)
    try:
        (whole, n), = duck_at(t.ctx, vid).sql(
            f"SELECT count(*) FILTER (WHERE round(CAST({q} AS DOUBLE), {digits}) = CAST({q} AS DOUBLE)), count(*) "
            f"FROM {quote_table(t.name)} WHERE {q} IS NOT NULL AND {q} <> 0")
    except (CatalogError, ValueError):
        return None
    return int(whole), int(n)


def _digits_moved(t: Table, col: str, v: int, mid: float, d: list[float], base: int | None = None,
                  least: int = MIN_ADDED) -> int | None:
    """k (|k| = the decimals moved) when the rows the append at `v` added moved `col`'s decimal point
    by k places against the rows before, though a small load's quartiles alone do not show 10^k (a
    day of small returns in cents: 20-60x the dollars before): every quartile moved the same way by
    3x or more, the middle by 10x or more, and the added rows lost the last |k| decimals every row
    before used (k > 0: dollars with cents written as whole cents) or gained them where the rows
    before had none (k < 0). A decimal or floating-point column; None otherwise. `least`: the added
    values needed (fewer than MIN_ADDED only against DIGITS_BEFORE rows before)."""
    digits = decimals(t, col)
    if digits == 0 or abs(mid) < 1.0 or any((x >= 0.5) != (mid > 0) or abs(x) < 0.5 for x in d):
        return None
    b = v - 1 if base is None else base
    for j in range(min(digits if digits is not None else 3, 3), 1, -1):
        before, after = _whole_counts(t, col, b, 0), _whole_counts(t, col, v, 0)
        used = _whole_counts(t, col, b, j) if mid > 0 else None
        if before is None or after is None or abs(abs(mid) - j) > 1.5:
            continue
        added_whole, added = after[0] - before[0], after[1] - before[1]
        if added < least or before[1] < max(MIN_ADDED, DIGITS_BEFORE if least < MIN_ADDED else 0):
            return None
        if mid > 0 and added_whole == added and before[0] <= 0.1 * before[1] and used is not None and used[0] == used[1]:
            return j   # the rows before used j decimals and not fewer; the added ones none
        if mid < 0 and before[0] == before[1] and added_whole <= 0.1 * added:
            return -j  # the rows before whole; the added ones not
    return None


def scale_appended(t: Table, ann: Annotation, keys: set[str], already: set[tuple[str | None, str]]) -> list[Finding]:
    """values_units / definitions, data: a load after the claim's basis appended rows of a numeric
    column at 10^k times the rows before, which stay as they were (`appended_scale`: the data's
    magnitudes before and after the load, so the added rows are measured however few they are and
    whatever the column's minimum and maximum show; the finding names the earliest run of loads up to
    it that measures in the same unit, not only the load that had rows enough alone). The column now
    mixes two units: no single unit is right, so no fix (`fix_rules.unit_fix` names the column to look at). A claim already
    flagged unit_drift is left to that finding."""
    if (ann.key, "unit_drift") in already:
        return []
    out = []
    for col in _scale_cols(t, ann, keys):
        loads = appends(t, ann.provenance.basis.vid)
        tries: list[tuple[int, float, int | None]] = [(v, tt, None) for v, tt in loads]
        # small loads, each too few rows to measure: the latest ones together, from the second-last on back
        tries += [(loads[-1][0], loads[i][1], loads[i][0] - 1) for i in range(len(loads) - 2, -1, -1)]
        for v, tt, start in tries:  # the first load in another unit
            got = appended_scale(t, col, v, start)
            if got is None:
                continue
            if start is None:  # the earliest run of loads up to it in that unit too (few rows each)
                for w, tw in loads[:[x for x, _ in loads].index(v)]:
                    wider = appended_scale(t, col, v, w - 1)
                    if wider is not None and wider[0] == got[0]:
                        got, start, tt = wider, w - 1, tw
                        break
            k, n, qo, qn = got
            which = f"the load at vid {v}" if start is None else f"the loads since vid {start + 1}"
            v = v if start is None else start + 1
            out.append(finding(ann, f"{t.name}.{col}", "unit_drift", "stale",
                               f"{which} ({day_of(tt)}) added {n} value(s) of {col!r} at about 10^{k} times "
                               "the rows before it, which kept theirs (quartile magnitudes "
                               f"{', '.join(f'1e{x:g}' for x in qn)} against {', '.join(f'1e{x:g}' for x in qo)}): the "
                               "column now mixes two units; check that load and restate one side",
                               [v], [tt], values={"column": col, "scale_exp": k, "load_vid": v, "rows_added": n,
                                                  "whole_table": False, "quartiles_before_log10": qo,
                                                  "quartiles_added_log10": qn},
                               cause=cause_of("unit", t.name, v, col)))
            break
    return out


# ------------------------------------------------------------------ the table's prose naming a drifted unit
def _unit_of(col: str, anns: list[Annotation]) -> str | None:
    """The unit a column is written in: its `unit` annotation, else its name's unit suffix (`_usd`)."""
    own = next((a for a in anns if a.kind == "column" and a.column == col and a.field == "unit"
                and isinstance(a.value, str)), None)
    if own is not None:
        return str(own.value).strip().lower()
    return next((u for suffix, u in NAME_UNITS if col.lower().endswith(suffix)), None)


def unit_rewritten_prose(t: Table, anns: list[Annotation], found: list[Finding]) -> list[Finding]:
    """The table's description naming the unit a column's `unit` annotation said before it was last
    written (read at the snapshot it was written on), the description older than that write: the
    annotation says another unit since (a steward accepted the column's new unit, or edited it), the
    description still says the old one, and no finding of the column's values is left to say so (the
    round-8 Acme tester's "prices in cents" on the products table, closed by accepting its price
    columns' new unit). `unit_drift`, stale, `investigate` the column (prose for a person); none when
    the description names the new unit too, or has a unit finding already. Metadata: the annotations'
    history, read only for a description naming a unit."""
    desc = next((a for a in anns if a.key == "table.description" and isinstance(a.value, str)), None)
    if desc is None or any(f.annotation == desc.key and f.reason == "unit_drift" for f in found):
        return []
    b = desc.provenance.basis.vid
    text = str(desc.value)
    if b is None or not any(names_unit(text, u) for u in UNIT_WORDS):
        return []  # it names no unit (the history is read only for a description that does)
    newer = [a for a in anns if a.kind == "column" and a.field == "unit" and isinstance(a.value, str)
             and (a.provenance.basis.vid or 0) > b and names_unit(text, str(a.value).strip().lower()) is None]
    for a in newer:
        # what the unit said just before this value was written (the snapshot it was written on)
        old = next((x for x in read_annotations(t.ctx.cat, t.name, vid=a.provenance.basis.vid)
                    if x.key == a.key and isinstance(x.value, str)), None)
        was, now = (str(old.value).strip().lower() if old is not None else None), str(a.value).strip().lower()
        if was is None or was == now:
            continue
        word = names_unit(text, was)
        if word is None or names_unit(text, now) is not None:
            continue
        return [finding(desc, t.name, "unit_drift", "stale",
                        f"the description says {word!r}, the unit of {a.column} when it was written; {a.column}'s "
                        f"unit is {a.value!r} since vid {a.provenance.basis.vid}", [b, a.provenance.basis.vid or b],
                        [a.provenance.time],
                        {"column": a.column, "unit_then": was, "unit": now, "said": word},
                        fixes=[make_fix("investigate", columns=[str(a.column)])])]
    return []


def is_unit_prose(f: Finding) -> bool:
    """Was `f` raised by `unit_prose` (the table's description, for a drifted column's unit word)?"""
    return f.annotation == "table.description" and f.reason == "unit_drift" and "word" in f.evidence.values


def _all_moved(t: Table, found: list[Finding], cols: set[str], col: str, factor: float | None) -> bool:
    """Did every column of `cols` (lower case; `col` among them) move by `factor`, each under its name (no
    rename), by a repair of a unit_drift finding of its own (`_moved_factor`)?"""
    if factor is None or col.lower() not in cols:
        return False
    for c in cols:
        mine = [g for g in found if g.reason == "unit_drift" and g.target.lower() == f"{t.name}.{c}".lower()]
        if not any(_now_called(g, c).lower() == c and _moved_factor(found, g.target, g.cause) == factor for g in mine):
            return False
    return True


def _now_called(f: Finding, col: str) -> str:
    """The column a finding about `col` says it is called now (a rename's `now` or `candidate`), else `col`."""
    v = f.evidence.values
    return str(v.get("now") or v.get("candidate") or col)


def _moved_factor(found: list[Finding], target: str, cause: str | None) -> float | None:
    """The factor every row of a column moved by, as a repair of one of its findings (`found`, on
    `target`, of one `cause`) states it: `update_unit`'s scale or factor, `reword_unit`'s two units."""
    for f in found:
        if f.target != target or f.cause != cause:
            continue
        for x in f.fixes:
            p = x.params
            if x.action == "update_unit":
                given = p.get("factor")
                return float(given) if isinstance(given, int | float) and not isinstance(given, bool) \
                    else 10.0 ** int(p.get("scale") or 0)
            if x.action == "reword_unit":
                a, b = unit_size(str(p.get("old") or "").lower()), unit_size(str(p.get("new") or "").lower())
                if a is not None and b is not None and a[0] == b[0]:
                    return a[2] / b[2]
    return None


def unit_prose(t: Table, anns: list[Annotation], found: list[Finding]) -> list[Finding]:
    """The table's description naming the unit of a column whose values moved to another unit
    (`unit_drift` on the column: its unit, description or a metric over it), in words prose uses for
    it ("money in dollars", "prices in cents"): the description says the column is in a unit some of
    its rows no longer are. `unit_drift`, with the column's finding's status and cause, no repair (the
    prose is for a person to rewrite: `investigate` the column, under its name now, so it is listed
    apart from the cause's repairs, a rename's among them, which leave the unit word as it is). One
    finding per table description, from the first drifted column it names; none when the description
    has a unit finding already (a finding of another change, a range the text documents, leaves the
    unit it names to this one: a steward fixing the range would not learn of the unit)."""
    desc = next((a for a in anns if a.key == "table.description" and isinstance(a.value, str)), None)
    if desc is None or any(f.annotation == desc.key and f.reason == "unit_drift" for f in found):
        return []
    for f in found:
        if f.reason != "unit_drift" or not f.target.startswith(t.name + ".") or \
                (f.cause or "").startswith(("meaning:", "sign:")):
            continue  # a column whose meaning (`row_relations`) or sign moved, not its unit, keeps the unit the prose names
        col = f.target[len(t.name) + 1:]
        unit = _unit_of(col, anns)
        if unit is None or (desc.provenance.basis.vid or 0) >= max(f.evidence.vids or [0]):
            continue
        word = names_unit(str(desc.value), unit)
        if word is None:
            continue
        fixes = [make_fix("investigate", columns=[_now_called(f, col)])]
        factor = _moved_factor(found, f.target, f.cause)
        said = reworded(desc.value, factor) if factor is not None and factor != 1 else None
        if said is not None and _all_moved(t, found, unit_columns(anns, said[0]), col, factor):
            # every row moved (its own finding's repair says by what) and the text names that unit once, of
            # the columns with a unit of that family, each of which moved by the same factor: said in the new
            # unit (the round-14 Acme and cryptic testers' table descriptions left to `investigate` beside the
            # column's own reworded one; the round-15 TPC-DS tester's income bands, both bounds restated)
            fixes = [make_fix("reword_unit", column=col, old=said[0], new=said[1])]
        return [finding(desc, t.name, "unit_drift", f.status,
                        f"the description says {word!r}, the unit of {col}, and {col}'s values moved: {f.message}",
                        f.evidence.vids, f.evidence.times, {"column": col, "unit": unit, "word": word},
                        fixes=fixes, cause=f.cause)]
    return []
