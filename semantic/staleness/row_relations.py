"""Class `definitions`, what a measure means against its row's other measures: arithmetic the rows held
when a claim was written (net paid equals net paid with tax; a line's net amount is quantity times price
less discount) that the rows loaded since no longer hold. A column whose values now include a tax they
excluded, or exclude one they included, keeps its range, its unit and its type: only its relation to the
row's other columns shows the change of meaning.

Evidence (data depth): a sample of the table's rows at the claim's basis (`REL_SAMPLE`, fixed seed) and
the latest rows loaded since (those past the basis on a column every load since lies beyond: a load
date, a growing id; `newer_rows`). A relation is one of the forms of `FORMS` among the table's measures (at
most `REL_COLS`; the four-column forms under `REL_COLS4`), held by `REL_HOLD` of the sampled rows before,
within the columns' rounding, on the rows where its target is not zero (half of them at least), and not
trivially (no operand constant; an added or subtracted operand not zero in `REL_NONZERO` of the rows; no
factor of only ones and zeros). It is broken when the new rows hold it in `REL_BROKEN` of them or
fewer. The column that changed is the one every broken relation names and no relation still held (by
`REL_HOLD` of the new rows) names; among several (one relation rearranged: a = b*c - d and d = b*c - a),
the one whose new values are what a broken relation computes for it times one factor (`_moved_by`: a
tax of 6.25% added, x1.0625). Otherwise nothing is said (which side moved is unknown). A table entry, not a branch: a new form is a row of `FORMS`.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Any

from catalog_core.errors import CatalogError
from catalog_core.model import parse_time
from semantic.history import type_family
from semantic.models import Annotation, Finding
from semantic.staleness.claim_rules import phrase_names, states_unit
from semantic.staleness.core import (
    KEY_SUFFIXES,
    Duck,
    Table,
    cause_of,
    day_of,
    declared_keys,
    duck_at,
    finding,
    load_at,
    make_fix,
    metric_names,
    num,
    quote_id,
    quote_table,
    stats_at,
)
from semantic.staleness.values_units import decimals

REL_SAMPLE = 200     # rows sampled at the basis, and the latest rows read since
REL_HOLD = 0.95      # a relation held: this share of the rows, at least
REL_BROKEN = 0.5     # a relation broken in the new rows: held by this share of them, at most
REL_NONZERO = 0.2    # an added or subtracted operand is not zero in this share of the rows, at least
REL_MIN_NEW = 5      # new rows needed to judge
REL_COLS = 16        # measures considered, at most
REL_COLS4 = 10       # the four-column forms only with this many measures or fewer

# form -> (operands, how the target is computed from them); a = b is written once (a before b)
FORMS: dict[str, tuple[int, Callable[..., Any]]] = {
    "{0} = {1}": (1, lambda b: b),
    "{0} = {1} + {2}": (2, lambda b, c: b + c),
    "{0} = {1} - {2}": (2, lambda b, c: b - c),
    "{0} = {1} * {2}": (2, lambda b, c: b * c),
    "{0} = {1} * {2} - {3}": (3, lambda b, c, d: b * c - d),
    "{0} = {1} * {2} + {3}": (3, lambda b, c, d: b * c + d),
}
_SYMMETRIC = {"{0} = {1} + {2}", "{0} = {1} * {2}"}


def measures(t: Table, anns: list[Annotation]) -> list[str]:
    """The table's numeric columns that may be measures: not identifiers (`_id`, `_sk`, ...; role id,
    dimension or time), not grain keys, not partition columns."""
    keys = {k.lower() for k in declared_keys(anns)}
    roles = {a.column for a in anns if a.kind == "column" and a.field == "role" and a.value in ("id", "dimension", "time")}
    part = {str(p).lower() for p in (t.obj.value.get("partition_by") or []) if isinstance(p, str)}
    out = []
    for c in t.cols.values():
        n = c.name.lower()
        if type_family(c.type) != "number" or n.endswith(KEY_SUFFIXES) or n in keys or c.name in roles or n in part:
            continue
        out.append(c.name)
    return out[:REL_COLS]


def _tolerance(t: Table, cols: list[str]) -> float:
    """Half a unit of the coarsest last digit among `cols` (a float column: a millionth)."""
    digits = [d for c in cols if (d := decimals(t, c)) is not None]
    return 0.5 * 10.0 ** -min(digits) + 1e-9 if digits else 1e-6


def relations(t: Table, cols: list[str], rows: list[list[Any]], about: set[str] | None = None
              ) -> list[tuple[str, tuple[str, ...]]]:
    """(form, (target, operands...)) of every relation of FORMS the rows hold (REL_HOLD of those where
    every column is known), non-trivially; with `about`, only those naming one of its columns (the
    columns claims rest on: a relation among other columns can make no claim false)."""
    import numpy as np

    if len(rows) < 20:
        return []
    data = np.array([[np.nan if x is None else float(x) for x in r] for r in rows], dtype=float)
    col = {c: data[:, i] for i, c in enumerate(cols)}
    varied = {c for c in cols if np.isfinite(col[c]).any() and np.nanmax(col[c]) > np.nanmin(col[c])}
    nonzero = {c for c in varied if np.mean(np.nan_to_num(col[c]) != 0) >= REL_NONZERO}
    out = []
    for form, (k, fn) in FORMS.items():
        if k == 3 and len(cols) > REL_COLS4:
            continue
        for a in cols:
            if a not in varied:
                continue
            for ops in itertools.permutations([c for c in cols if c != a and c in varied], k):
                if about is not None and a not in about and not about.intersection(ops):
                    continue
                if (form in _SYMMETRIC and ops[0] > ops[1]) or (k == 1 and a > ops[0]) or \
                        (k == 3 and ops[0] > ops[1]):
                    continue
                if ("+" in form or "-" in form) and ops[-1] not in nonzero:
                    continue  # an operand added or subtracted that is mostly zero: the relation a = b in disguise
                if k >= 2 and "*" in form and any(np.nanmax(np.abs(col[o])) <= 1.0 for o in ops[:2]):
                    continue  # a factor of ones and zeros (a flag) multiplies nothing
                with np.errstate(all="ignore"):
                    got = fn(*(col[o] for o in ops))
                known = np.isfinite(got) & np.isfinite(col[a]) & (np.nan_to_num(col[a]) != 0)
                if known.sum() < max(20, len(rows) / 2):
                    continue  # judged on the rows where the target is not zero, half the rows at least
                tol = _tolerance(t, [a, *ops]) * (1 + 1e-9)
                ok = np.abs(col[a][known] - got[known]) <= tol + 1e-9 * np.abs(got[known])
                if ok.mean() >= REL_HOLD:
                    out.append((form, (a, *ops)))
    return out


def _held(t: Table, cols: list[str], rows: list[list[Any]], rel: tuple[str, tuple[str, ...]]) -> tuple[int, int]:
    """(rows holding `rel`, rows where its columns are all known and its target is not zero)."""
    import numpy as np

    form, names = rel
    k, fn = FORMS[form]
    idx = [cols.index(n) for n in names]
    held = known = 0
    tol = _tolerance(t, list(names)) * (1 + 1e-9)
    for r in rows:
        vals = [r[i] for i in idx]
        if any(v is None for v in vals):
            continue
        a, *ops = (float(v) for v in vals)
        got = fn(*ops)
        if not np.isfinite(got) or a == 0:
            continue
        known += 1
        held += abs(a - got) <= tol + 1e-9 * abs(got)
    return held, known


def newer_rows(t: Table, basis: int) -> tuple[str, Any] | None:
    """A column every load since `basis` lies beyond (its minimum in those loads above its maximum at
    the basis, by the files' statistics): (column, its maximum at the basis). The rows past that
    maximum are the rows loaded since. A load date, a growing id; None when no column parts them."""
    from semantic.staleness.values_units import load_stats

    before = stats_at(t, basis)
    loads = [(v, cols) for v, cols, _n in load_stats(t) if v > basis]
    if not loads:
        return None
    for c in t.cols.values():
        fam = type_family(c.type)
        hi = (before.get(c.name) or {}).get("max")
        if fam not in ("number", "time", "date") or hi is None:
            continue
        read = parse_time if fam != "number" else num
        top = read(hi)
        if top is None:
            continue
        los = [read((cols.get(c.name) or {}).get("min")) for _v, cols in loads]
        if all(lo is not None and lo > top for lo in los):
            return c.name, hi
    return _grown(t, before)


def _grown(t: Table, before: dict[str, Any]) -> tuple[str, Any] | None:
    """Where no column parts every load since (a compaction or a full rebuild rewrote old rows beside
    the new): a date or time column, else a date or sequence key (`_sk`, `_id`...), whose maximum grew
    since the basis; the rows past its maximum then are rows loaded since (a rebuilt mart's new days)."""
    for fams in (("time", "date"), ("number",)):
        for c in t.cols.values():
            fam = type_family(c.type)
            if fam not in fams or (fam == "number" and not c.name.lower().endswith(KEY_SUFFIXES)):
                continue
            read = parse_time if fam != "number" else num
            hi = (before.get(c.name) or {}).get("max")
            top, cur = read(hi), read((t.stat(c.name) or {}).get("max"))
            if top is not None and cur is not None and cur > top:
                return c.name, hi
    return None


def broken_relation(t: Table, anns: list[Annotation], basis: int, duck: Duck) -> dict[str, Any] | None:
    """The column whose relations to its row's other measures the rows loaded since `basis` broke
    (see the module's docstring): {column, broken: [relation text], held_before, held_now, rows}. Cached
    per (table, vid, basis)."""
    basis = load_at(t, basis) if basis else basis  # the rows then: claims between two loads share them
    key = ("broken_relation", t.obj.path, t.ctx.vid, basis)
    got = t.ctx.cache.findings.take(key)
    if got is not None:
        return got[0]
    out = _broken_relation(t, anns, basis, duck)
    t.ctx.cache.findings.put(key, (out,))
    return out


def _broken_relation(t: Table, anns: list[Annotation], basis: int, duck: Duck) -> dict[str, Any] | None:
    if not basis or not t.tl.data_after(basis):
        return None
    cols = measures(t, anns)
    newer = newer_rows(t, basis)
    if len(cols) < 2 or newer is None:
        return None
    sel = ", ".join(f"CAST({quote_id(c)} AS DOUBLE)" for c in cols)
    then = _names_then(t, basis)  # a column renamed since is read under its name then (by its field id)
    sel_then = ", ".join(f"CAST({quote_id(then[c])} AS DOUBLE)" if c in then else "NULL" for c in cols)
    tq, by = quote_table(t.name), quote_id(newer[0])
    try:
        old = duck_at(t.ctx, basis).sql(f"SELECT {sel_then} FROM {tq} USING SAMPLE {REL_SAMPLE} ROWS (reservoir, 7)")
        held = relations(t, cols, old, {c for c in cols if any(_claims_column(t, a, c) for a in anns)})
        if not held:
            return None
        bound = f"'{newer[1]}'" if isinstance(newer[1], str) else repr(newer[1])
        order = ", ".join(str(i + 1) for i in range(len(cols)))  # ties at the window's edge in one order
        got = duck.sql(f"SELECT {sel}, {by} FROM {tq} WHERE {by} > {bound} ORDER BY {by} DESC, {order} "
                       f"LIMIT {REL_SAMPLE}")
    except CatalogError:
        return None
    if len(got) < REL_MIN_NEW:
        return None
    new = [r[:-1] for r in got]
    out = _verdict(t, cols, new, old, held, newer[0])
    latest = _latest_load(t, newer[0], basis, got)
    if REL_MIN_NEW <= len(latest) < len(new):
        # the latest load alone (its day, or its last key): a change from the newest load on is a few
        # rows among the window's (a mart's last day, tax included, beside the days before it), or the
        # window reaches back past the change into rows that still hold, half of them breaking a relation
        # and half not: what the latest load alone says is read first (the round-14 TPC-DS tester's tax in
        # `ss_net_paid` from the second of three loads, blamed on `ss_net_paid_inc_tax` by the window)
        out = _verdict(t, cols, latest, old, held, newer[0]) or out
    return out


def _verdict(t: Table, cols: list[str], new: list[list[Any]], old: list[list[Any]],
             held: list[tuple[str, tuple[str, ...]]], since: str) -> dict[str, Any] | None:
    """The column the `new` rows changed the meaning of (see the module), or None."""
    broken, kept = _judged(t, cols, new, held)
    if not broken:
        return None
    # the relations of the columns a broken one names, claimed or not, say which of them kept their meaning
    wider = {c for (_f, names), _h, _n in broken for c in names}
    _b, kept = _judged(t, cols, new, relations(t, cols, old, wider))
    named = set.intersection(*(set(r[1]) for r, _h, _n in broken))
    changed = named - {c for _f, names in kept for c in names}
    if not changed and len(named) == 1:
        changed = _unvouched(t, cols, new, old, next(iter(named)), kept)
    factor = None
    if len(changed) > 1:  # one relation rearranged (a = b*c - d, d = b*c - a): the side moved by one factor
        moved = {c: f for c in changed if (f := _moved_by(t, cols, new, [r for r, _h, _n in broken], c)) is not None}
        changed, factor = (set(moved), next(iter(moved.values()))) if len(moved) == 1 else (set(), None)
    if len(changed) != 1:
        return None
    (col,) = changed
    factor = factor or _moved_by(t, cols, new, [r for r, _h, _n in broken], col)
    texts = [form.format(*names) for (form, names), _h, _n in broken]
    return {"column": col, "broken": texts[:5], "held_now": [f"{h}/{n}" for _r, h, n in broken][:5],
            "rows": len(new), "since": since, **({"factor": round(factor, 6)} if factor else {})}


def _unvouched(t: Table, cols: list[str], new: list[list[Any]], old: list[list[Any]], col: str,
               kept: list[tuple[str, tuple[str, ...]]]) -> set[str]:
    """{col} when the relations the `new` rows keep that name `col` do not vouch for it: a relation
    vouches only when each of its other columns keeps a relation of its own without `col` (its meaning
    checked apart from it). A column computed from `col` (net profit from net paid, recomputed by the
    load that put tax into net paid) keeps its relation with it whatever `col` now means. Else set()."""
    others = {x for _f, names in kept if col in names for x in names if x != col}
    _b, apart = _judged(t, cols, new, relations(t, cols, old, others))
    anchored = {x for _f, names in apart if col not in names for x in names}
    vouched = any(col in names and all(x in anchored for x in names if x != col) for _f, names in kept)
    return set() if vouched else {col}


def _latest_load(t: Table, by: str, basis: int, rows: list[list[Any]]) -> list[list[Any]]:
    """Of `rows` (the measures, then `by`, newest first), those the table's last data commit since
    `basis` added: past `by`'s maximum at the commit before it ([] when there was one load since, or
    the maximum is unknown)."""
    dc = [v for v, _tt in t.tl.data_commits if v > basis]
    if len(dc) < 2:
        return []
    col = t.col(by)
    read = num if col is not None and type_family(col.type) == "number" else parse_time
    top = read((stats_at(t, dc[-2]).get(by) or {}).get("max"))
    if top is None:
        return []
    return [r[:-1] for r in rows if (v := read(r[-1] if isinstance(r[-1], (int, float, str)) else str(r[-1])))
            is not None and v > top]


def _names_then(t: Table, vid: int) -> dict[str, str]:
    """The table's current column names -> their names at `vid` (followed by field id; a column added
    since is absent)."""
    from semantic._tables import column_id, table_columns

    obj = t.ctx.cat.get(t.obj.path, vid=vid)
    if obj is None:
        return {}
    return {t.cols[cid].name: c.name for c in table_columns(obj.value) if (cid := column_id(c)) in t.cols}


def _judged(t: Table, cols: list[str], new: list[list[Any]], rels: list[tuple[str, tuple[str, ...]]]
            ) -> tuple[list[tuple[tuple[str, tuple[str, ...]], int, int]], list[tuple[str, tuple[str, ...]]]]:
    """The relations `new` rows break (with the rows holding each, of those judged) and those they keep."""
    broken, kept = [], []
    for rel in rels:
        h, n = _held(t, cols, new, rel)
        if n < REL_MIN_NEW:
            continue
        if h <= REL_BROKEN * n:
            broken.append((rel, h, n))
        elif h >= REL_HOLD * n:
            kept.append(rel)
    return broken, kept


def _moved_by(t: Table, cols: list[str], rows: list[list[Any]], rels: list[tuple[str, tuple[str, ...]]],
              col: str) -> float | None:
    """The one factor (not 0, not 1) by which `col`'s values differ from what a broken relation computes
    for it, as its target, in REL_HOLD of the `rows` that break it (within the columns' rounding), else
    the median of a rate by row (`_rate`: a tax by store, the same side of 1, close together); None."""
    i = cols.index(col)
    for form, names in rels:
        if names[0] != col:
            continue
        k, fn = FORMS[form]
        idx = [cols.index(n) for n in names[1:]]
        tol = _tolerance(t, list(names))
        pairs = []
        for r in rows:
            ops = [r[j] for j in idx]
            if r[i] is None or any(v is None for v in ops):
                continue
            want = fn(*(float(v) for v in ops))
            if want and abs(float(r[i]) - want) > tol + 1e-9 * abs(want):  # the rows that break it
                pairs.append((want, float(r[i])))
        if len(pairs) < REL_MIN_NEW:
            continue
        want, got = max(pairs, key=lambda p: abs(p[0]))  # the factor read off the largest value, as rounding spares it
        f = got / want
        if f and abs(f - 1) > 1e-3 and \
                sum(abs(y - f * x) <= tol * (1 + abs(f)) + 1e-6 * abs(y) for x, y in pairs) >= REL_HOLD * len(pairs):
            return f
        rate = _rate(pairs)
        if rate is not None:
            return rate
    return None


RATE_MAX = 1.3      # a rate by row (a tax, a fee by store) moves a value by this factor at most
RATE_SPREAD = 1.15  # the rates of the rows lie within this factor of each other


def _rate(pairs: list[tuple[float, float]]) -> float | None:
    """The median factor (what the rows hold / what the relation gives) when they differ by row but
    all lie on one side of 1, within RATE_MAX of it and RATE_SPREAD of each other, in REL_HOLD of the
    rows: a rate by row (a sales tax by store, 6.25% to 8.875%) added to or taken from the relation's
    target. A scale (x100) or an operand that moved gives factors far from 1 or spread wide."""
    rs = sorted(y / x for x, y in pairs if x and y and (y / x > 0))
    if len(rs) < REL_MIN_NEW or len(rs) < REL_HOLD * len(pairs):
        return None
    med = rs[len(rs) // 2]
    near = [r for r in rs if (r > 1) == (med > 1) and abs(r - 1) > 1e-3 and 1 / RATE_MAX <= r <= RATE_MAX
            and max(r, med) / min(r, med) <= RATE_SPREAD]
    return med if len(near) >= REL_HOLD * len(pairs) and abs(med - 1) > 1e-3 else None


def _claims_column(t: Table, ann: Annotation, col: str) -> bool:
    """Does the claim rest on what `col` means: its own description, a metric computing with it, the
    table description naming it, a verified query reading it?"""
    if ann.kind == "column":
        cur = t.cols.get(ann.column_id or -1)
        return cur is not None and cur.name == col and ann.field == "description"
    if ann.kind == "metric":
        return col.lower() in metric_names(ann)
    if ann.kind == "table" and ann.field == "description":
        # by its name, or its name said in words ("Net paid excludes tax" of `ss_net_paid`: a round-10 TPC-DS
        # tester's store sales, whose net paid began to include tax)
        text = str(ann.value or "")
        return re.search(rf"(?<![\w.]){re.escape(col)}(?!\w)", text, re.IGNORECASE) is not None or \
            phrase_names(text, col, [c.name for c in t.cols.values()])
    if ann.kind == "verified_query":  # its answer adds up values that mean two things now
        sql = str((ann.value or {}).get("sql") or "")
        return re.search(rf"(?<![\w]){re.escape(col)}(?!\w)", sql, re.IGNORECASE) is not None
    return False


def _unit_step(factor: object) -> bool:
    """Is `factor` a power of ten other than 1 (x100, /100: a unit's step, cents and dollars)?"""
    import math

    if not isinstance(factor, int | float) or isinstance(factor, bool) or factor <= 0:
        return False
    k = math.log10(factor)
    return abs(k) >= 0.99 and abs(k - round(k)) < 0.01


def relation_broken(t: Table, ann: Annotation, anns: list[Annotation], duck: Duck) -> list[Finding]:
    """definitions, data: the rows loaded since the claim's basis broke arithmetic a measure held with
    its row's other measures (`broken_relation`): the column means something else in them (a tax
    included or left out, another basis). Its description, the metrics computing with it, a table
    description naming it and the verified queries reading it whose answer moved since they were verified
    (a query of a past period leaves the new rows out) are suspect, with `investigate` (what it
    means now is for a person to say; re-verifying a query would certify an answer that adds up two
    meanings). A break by a power of ten is a unit's step, which the unit checks tell: a description
    stating no unit holds then ("amount paid, excluding tax" of a column now in cents: held-out TPC-DS
    2502 of session 29, read after its scoring), as `claim_rules.unit_claim` reads it."""
    basis = ann.provenance.basis.vid
    got = broken_relation(t, anns, basis, duck)
    if got is None or not _claims_column(t, ann, got["column"]):
        return []
    if ann.kind == "verified_query":
        from semantic.staleness.definitions import answer_of

        sql = str((ann.value or {}).get("sql") or "")
        if answer_of(t.ctx, sql, basis) == answer_of(t.ctx, sql, t.ctx.vid):
            return []  # its answer did not move: the rows that mean something else do not enter it (a past period)
    col = got["column"]
    cur = t.col(col)
    if _unit_step(got.get("factor")) and ann.field == "description" and cur is not None \
            and not states_unit(ann, anns, cur.id):
        return []  # x10^k of what the relation gives: a unit, which the unit checks tell; a text naming none holds
    since = t.tl.data_after(basis)
    return [finding(ann, f"{t.name}.{col}", "unit_drift", "suspect",
                    f"of the rows loaded since the claim ({day_of(since[0][1])} to {day_of(since[-1][1])}), the "
                    f"{got['rows']} latest break what every row of "
                    f"{col!r} held before ({'; '.join(got['broken'])}: held by {', '.join(got['held_now'])} of them)"
                    + (f"; they are x{got['factor']:g} of what the relation gives" if got.get("factor") else "")
                    + f": {col} means something else in them (a tax included or left out?); check what it holds now",
                    [since[0][0], since[-1][0]], [since[0][1], since[-1][1]],
                    values={"column": col, "relations": got["broken"], "held_now": got["held_now"],
                            **({"factor": got["factor"]} if got.get("factor") else {}),
                            "rows": got["rows"], "since_column": got["since"]},
                    fixes=[make_fix("investigate", columns=[col])], cause=cause_of("meaning", t.name, since[0][0], col))]
