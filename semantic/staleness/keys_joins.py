"""Class `keys_joins`: relationships whose key went missing, whose target keeps versions, whose keys
match too few rows (data) or share no range any more (statistics: a new key format). A same-name
join is offered only into a key (`_key_doubt`), and never for a key column that continues under a
new name (the same field id in the schema history, or paired by statistics in the commit that
dropped it: `column_findings` offers `rename`, which wins over a join onto another column)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any, NamedTuple

from catalog_core.errors import CatalogError
from semantic import _bounded
from semantic._bounded import LimitExceededError, literals
from semantic._tables import column_id, table_columns
from semantic.errors import did_you_mean
from semantic.history import Context, type_family
from semantic.models import Annotation, Finding, Fix
from semantic.staleness.core import (
    KEY_SUFFIXES,
    MATCH_LOW,
    SCD2,
    Duck,
    Table,
    cause_of,
    day_of,
    duck_at,
    finding,
    get_table,
    make_fix,
    num,
    quote_id,
    quote_table,
    rows_at,
    stats_at,
    values_removed,
)
from semantic.staleness.grain import (
    current_flag,
    current_rows,
    end_column,
    flag_condition,
    flag_fix,
    past_versions,
    scd2_change,
)
from semantic.staleness.schema import column_findings, rename_map
from semantic.staleness.values_units import full_overwrites


def _key_doubt(ctx: Context, t: Table, target: Table, mine: str, theirs: str, duck: Duck | None) -> str | None:
    """Why `t.mine = target.theirs` is not shown to be a join into a key (None: the evidence holds).
    Both sides' ranges must overlap and the target's column hold no nulls; then at data depth its
    values are unique (among the current rows of a table that keeps versions), and at metadata
    depth it is a declared key of the target (its grain's only key, or role id), or a column of the
    smaller table (a many-to-one into it) that the target does not document as a category or a
    measure (role dimension / measure, enum, sample values, labels); an integer column's range must
    leave room for every row. Names never enter."""
    a, b = t.stat(mine), target.stat(theirs)
    if not a or not b:
        return "no statistics say they share values"
    try:
        if not (a["min"] <= b["max"] and b["min"] <= a["max"]):
            return "their value ranges do not overlap"
    except (TypeError, KeyError):
        return "no statistics say they share values"
    if b.get("null_count"):
        return f"{theirs} has nulls in {target.name}"
    rows = target.stats.get("row_count")
    lo, hi = num(b.get("min")), num(b.get("max"))
    col = target.col(theirs)
    if isinstance(rows, int) and lo is not None and hi is not None and col is not None and \
            type_family(col.type) == "number" and lo.is_integer() and rows > hi - lo + 1:
        return f"{theirs} repeats in {target.name} ({rows} rows, {int(hi - lo + 1)} possible values)"
    if duck is not None:
        flag = current_flag(target)
        where = f" WHERE {current_rows(target, flag)}" if flag is not None else ""
        n, distinct = duck.sql(f"SELECT count(*), count(DISTINCT {quote_id(theirs)}) FROM {quote_table(target.name)}"
                               f"{where}")[0]
        return None if n == distinct else f"{theirs} repeats in {target.name} ({n} rows, {distinct} values)"
    anns = ctx.annotations(target.name)
    declared = any(x.key == "table.grain" and [str(k).lower() for k in (x.value or {}).get("keys") or []] ==
                   [theirs.lower()] for x in anns) or \
        any(x.kind == "column" and x.field == "role" and x.value == "id" and str(x.column).lower() == theirs.lower()
            for x in anns)
    if declared:
        return None
    category = [x.field for x in anns if x.kind == "column" and str(x.column).lower() == theirs.lower() and
                (x.field in ("enum", "sample_values", "labels") or (x.field == "role" and x.value in ("dimension", "measure")))]
    if category:
        return f"{target.name} documents {theirs} as a category or a measure ({', '.join(sorted(set(category)))}), not a key"
    mine_rows = t.stats.get("row_count")
    if isinstance(rows, int) and isinstance(mine_rows, int) and rows <= mine_rows:
        return None  # a many-to-one into the smaller table, nothing says the column repeats: the data depth checks
    return f"{theirs} is not known to be a key of {target.name}"


def _stem(name: str) -> str:
    """A column's name without a short table prefix (`ss_store_id`, `s_store_id`: `store_id`)."""
    return re.sub(r"^[a-z]{1,3}_(?=[a-z])", "", name.lower())


def _named_alike(t: Table, target: Table, missing: str) -> list[tuple[Any, Any]]:
    """Pairs (column of t other than `missing`, column of target) of one type family named alike: the
    same name, or the same once each side's short table prefix is left out (TPC-DS names every column
    after its table: ss_store_id, s_store_id)."""
    out = []
    for c in t.cols.values():
        if c.name.lower() == missing.lower():
            continue
        same = target.col(c.name)
        cands = [same] if same is not None else \
            [d for d in target.cols.values() if len(_stem(c.name)) >= 4 and _stem(d.name) == _stem(c.name)]
        out += [(c, d) for d in cands if type_family(d.type) == type_family(c.type)]
    return out


class JoinOffer(NamedTuple):
    """A join suggestion: its words, its `join_on` fix (None: a person checks the pair first) and, when
    it names one, the column of this table to check (`fix_rules.relationship_drop_fix` reads it: a
    relationship from a dropped column is not removed while a column of its table may continue it)."""

    text: str
    fix: Fix | None
    column: str | None = None


def _join_suggestion(ctx: Context, t: Table, target: Table | None, missing: str, to_col: str | None,
                     duck: Duck | None = None) -> JoinOffer | None:
    """A column of `t` (not `missing`) named alike a column of the target (`_named_alike`), same type family:
    the suggestion text and its `join_on` fix, the fix only when the pair is shown to join into a
    key (`_key_doubt`); otherwise (text saying what to check, None)."""
    if target is None:
        return None
    ranked = []
    for c, tc in _named_alike(t, target, missing):
        name = c.name
        a, b = t.stat(name), target.stat(tc.name)
        overlap = 0
        if a and b:
            try:
                overlap = int(a["min"] <= b["max"] and b["min"] <= a["max"])
            except (TypeError, KeyError):
                overlap = 0
        ranked.append((overlap, name.lower().endswith(KEY_SUFFIXES), name, tc.name))
    if not ranked:
        return None
    ranked.sort(reverse=True)
    _o, _k, mine, theirs = ranked[0]
    doubt = _key_doubt(ctx, t, target, mine, theirs, duck)
    if doubt is not None:
        return JoinOffer(f"check {mine} = {target.name}.{theirs} before joining on it: {doubt}", None, mine)
    return JoinOffer(f"join on {mine} = {target.name}.{theirs}",
                     make_fix("join_on", from_column=mine, to_table=target.name, to_column=theirs))


def _offer(f: Finding, js: JoinOffer | None) -> None:
    """Put a join suggestion on finding `f`: its fix first when there is one, else its words in the message."""
    if js is None or any(x.action == "join_on" for x in f.fixes):
        return
    text, fix, column = js
    if fix is None:
        f.message = f"{f.message}; {text}"
        f.evidence.values["join_candidate"] = text
        if column is not None:  # the column of this table a person checks (`fix_rules.relationship_drop_fix`)
            f.evidence.values["join_candidate_column"] = column
        return
    f.suggestion = text if f.suggestion is None else f"{text} ({f.suggestion})"
    f.fixes.insert(0, fix)


def relationship_findings(ctx: Context, t: Table, ann: Annotation, tables: dict[str, Table | None],
                          duck: Duck | None = None) -> list[Finding]:
    val = ann.value or {}
    to = str(val.get("to") or "")
    pairs = [tuple(p) for p in val.get("on") or [] if isinstance(p, (list, tuple)) and len(p) == 2]
    target = get_table(ctx, to, tables)
    out = column_findings(t, ann, ann.provenance.basis.columns, missing_reason="join_key_missing")
    for f in out:
        if any(x.action == "rename" for x in f.fixes):
            continue  # the key continues under a new name (`column_findings`): no join onto another column
        col = f.evidence.values.get("column")
        to_col = next((b for a, b in pairs if a == col), None)
        _offer(f, _join_suggestion(ctx, t, target, str(col), to_col, duck))
    if target is None:
        close = did_you_mean(to, list(ctx.tables()))
        out.append(finding(ann, t.name, "join_key_missing", "stale", f"the related table {to!r} does not exist",
                            [ctx.vid], values={"to": to, "did_you_mean": close},
                            suggestion=f"relate to {close[0]}" if close else None,
                            fixes=[make_fix("relate_to", table=close[0])] if close else []))
        return out
    for a, b in pairs:
        if target.col(str(b)) is None:
            chs = target.tl.changes_after(ann.provenance.basis.vid)
            now = _continued_as(target, str(b), ann.provenance.basis.vid)
            if now is not None:
                new, vid = now
                out.append(finding(ann, t.name, "join_key_missing", "stale",
                                   f"{to}.{b} is now called {new} (vid {vid}): the same column, renamed",
                                   [vid], values={"to": to, "column": b, "now": new},
                                   suggestion=f"join on {a} = {to}.{new}",
                                   fixes=[make_fix("join_on", from_column=str(a), to_table=to, to_column=new)],
                                   cause=cause_of("rename", to, vid, str(b))))
                continue
            out.append(finding(ann, t.name, "join_key_missing", "stale",
                               f"{to}.{b} is no longer a column of {to}", [c.vid for c in chs] or [target.obj.vid],
                               [c.time for c in chs], {"to": to, "column": b}))
            _offer(out[-1], _join_suggestion(ctx, t, target, str(a), str(b), duck))
    out += _key_ranges_apart(t, ann, target, pairs)
    out += _condition_renamed(ann, t, target, str(val.get("condition") or ""))
    cond = str(val.get("condition") or "").lower()
    if val.get("cardinality") in ("many_to_one", "one_to_one") and not cond:
        out += _target_key_repeats(ann, t, target, pairs)
    if val.get("cardinality") in ("many_to_one", "one_to_one"):
        versions = versioned_target(ann, t, target, cond)
        if versions is not None:
            out.append(versions)
    return out


def versioned_target(ann: Annotation, t: Table, target: Table, cond: str, note: str = "") -> Finding | None:
    """The related table became versioned since the relationship's basis (`scd2_change`) and the
    relationship's condition names no version column: one row may match several versions of a key
    (cardinality_violated, suspect; the fix filters the current flag; with no flag, the versions ended by
    a date alone (`end_column`), no fix). It holds whether or not a key
    has a second version yet, so the data depth keeps it when no key repeats (`note` says so)."""
    ch = scd2_change(target, ann.provenance.basis.vid)
    if ch is None or any(w in cond.lower() for w in (*SCD2, *(c.name.lower() for c in ch.added))):
        return None
    flag = current_flag(target)
    end = end_column(target) if flag is None else None
    if end is not None:  # no current-row flag to filter: its current rows are those whose version has not ended
        note += f"; its current rows are those with {end} null, which no filter fix writes"
    flag = flag or "is_current"
    return finding(ann, t.name, "cardinality_violated", "suspect",
                   f"{target.name} keeps versions since vid {ch.vid} ({day_of(ch.time)}): one {t.name} row may match "
                   f"several{note}", [ch.vid], [ch.time], {"to": target.name, "added": [c.name for c in ch.added]},
                   f"SCD2 since {day_of(ch.time)}: filter {flag} (condition {flag_condition(target, flag)!r})"
                   if end is None else None,
                   [flag_fix(target, flag)] if end is None else [], cause=cause_of("versions", target.name, ch.vid))


def _condition_renamed(ann: Annotation, t: Table, target: Table, cond: str) -> list[Finding]:
    """A relationship whose condition (`is_current`, `dim.is_current AND ...`) names a column of
    either table that a schema change after its basis renamed (`_continued_as`): the condition no
    longer reads it (the join may match rows it filtered out, or fail). join_key_missing, stale,
    with `rename` (the same column, renamed: review rewrites the condition)."""
    out: list[Finding] = []
    b = ann.provenance.basis.vid
    seen: set[str] = set()
    for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", cond):
        w = word.lower()
        if w in seen or t.col(word) is not None or target.col(word) is not None:
            continue
        seen.add(w)
        for tb in (target, t) if target is not t else (t,):
            now = _continued_as(tb, word, b)
            if now is None:
                continue
            new, vid = now
            out.append(finding(ann, t.name, "join_key_missing", "stale",
                               f"the condition {cond!r} names {tb.name}.{word}, now called {new} (vid {vid}): the "
                               "condition no longer reads it", [vid], values={"to": target.name, "column": word,
                                                                               "now": new, "condition": cond},
                               suggestion=f"rename {word} to {new} in the condition",
                               fixes=[make_fix("rename", old=word, new=new, scale=0)],
                               cause=cause_of("rename", tb.name, vid, word)))
            break
    return out


def _repeats(target: Table, col: str, vid: int | None = None) -> tuple[int, int] | None:
    """(rows, possible values) when the target's integer column `col` cannot be unique: more
    non-null rows than its min..max range holds (statistics at `vid`, or now); else None."""
    if vid is None:
        s, rows = target.stat(col), target.stats.get("row_count")
    else:
        s = stats_at(target, vid).get(col)
        obj = target.ctx.cat.get(target.obj.path, vid=vid) if vid > 0 else None
        rows = ((obj.value.get("stats") or {}).get("row_count")) if obj is not None else None
    c = target.col(col)
    if not s or c is None or type_family(c.type) != "number" or not isinstance(rows, int):
        return None
    lo, hi = num(s.get("min")), num(s.get("max"))
    if lo is None or hi is None or not float(lo).is_integer():
        return None
    n = rows - int(s.get("null_count") or 0)
    return (n, int(hi - lo + 1)) if n > hi - lo + 1 else None


def _target_key_repeats(ann: Annotation, t: Table, target: Table, pairs: list[tuple[Any, ...]]) -> list[Finding]:
    """A many-to-one relationship (no condition) into a single column that now repeats in the
    related table, by its statistics (more rows than its integer range holds), when it did not at
    the relationship's basis: one row may match several. cardinality_violated, no fix (whether the
    related table gained versions, duplicates or a new grain is for the data or a person to say)."""
    if len(pairs) != 1 or scd2_change(target, ann.provenance.basis.vid) is not None:
        return []  # a target that keeps versions: the SCD2 check says which rows are current
    b = str(pairs[0][1])
    now = _repeats(target, b)
    if now is None or _repeats(target, b, ann.provenance.basis.vid) is not None:
        return []
    last = target.tl.data_commits[-1] if target.tl.data_commits else (target.obj.vid, 0.0)
    return [finding(ann, t.name, "cardinality_violated", "stale",
                    f"{target.name}.{b} repeats now ({now[0]} rows, {now[1]} possible values): a row of {t.name} may "
                    "match several; check why the related table's key repeats", [last[0]], [last[1]],
                    {"to": target.name, "column": b, "rows": now[0], "values": now[1]})]


def _continued_as(target: Table, col: str, since: int) -> tuple[str, int] | None:
    """The name the related column `col` has now when a schema change after vid `since` renamed it:
    the same field id under another name, or (dropped and added in one commit) the added column
    that continues it one to one by statistics (`rename_map`). (new name, vid) or None."""
    for ch in target.tl.changes_after(since):
        old = next((c for c in ch.before.values() if c.name.lower() == col.lower()), None)
        if old is None:
            continue
        cur = target.cols.get(column_id(old))
        if cur is not None and cur.name.lower() != col.lower() and ch.after.get(column_id(old)) is not None:
            return cur.name, ch.vid
        m = rename_map(target, ch)
        if old.name in m and target.col(m[old.name][0]) is not None and m[old.name][1] == 0:
            return m[old.name][0], ch.vid
    return None


def _key_ranges_apart(t: Table, ann: Annotation, target: Table, pairs: list[tuple[Any, ...]]) -> list[Finding]:
    """Join keys in a new format, from statistics: the values of a key column written since the
    relationship's basis share no range with the related column (their min/max do not overlap), so
    the join can match none of those rows. join_match_low, suspect (the data depth measures the
    match rate); no fix here: which column joins now is for the data or a person to say."""
    out: list[Finding] = []
    b = ann.provenance.basis.vid
    if not t.tl.data_after(b):
        return out
    for x, y in pairs:
        mine, theirs = t.col(str(x)), target.col(str(y))
        if mine is None or theirs is None:
            continue
        whole, o = t.stat(mine.name) or {}, target.stat(theirs.name) or {}
        try:  # the whole column within the related column's range: so is every load (spares the files)
            if whole.get("min") is not None and o.get("min") is not None and \
                    o["min"] <= whole["min"] and whole["max"] <= o["max"]:
                continue
        except (TypeError, KeyError):
            pass
        a = t.written_since(b).get(mine.name) or {}
        try:
            apart = a.get("max") is not None and o.get("max") is not None and a.get("min") is not None and \
                o.get("min") is not None and (a["min"] > o["max"] or a["max"] < o["min"])
        except TypeError:  # values of different kinds: a format change as well
            apart = True
        if apart:
            changed = [v for v, _ in t.tl.data_after(b)]
            out.append(finding(ann, t.name, "join_match_low", "suspect",
                               f"values of {mine.name} written since vid {b} ([{a.get('min')}, {a.get('max')}]) share no "
                               f"range with {target.name}.{theirs.name} ([{o.get('min')}, {o.get('max')}]): a new key "
                               "format? the join matches none of those rows; check the data depth's match rate",
                               changed[:1] + changed[-1:], values={"column": mine.name, "to": target.name,
                                                                   "recent": [a.get("min"), a.get("max")],
                                                                   "target": [o.get("min"), o.get("max")]}))
    return out


def _before(ch: Any, col: Any) -> Any:
    """The column `col` (of the table after schema change `ch`) was before it: the same field id, or,
    for a column the change added, the one it dropped under the same name (a rebuild that retyped
    the column); None when it is new."""
    cid = column_id(col)
    old = ch.before.get(cid)
    if old is None and cid not in ch.before:
        old = next((c for i, c in ch.before.items() if i not in ch.after and c.name.lower() == col.name.lower()), None)
    return old


def _retypes(tb: Table, col: Any, since: int) -> list[tuple[int, Any, Any]]:
    """(vid, the column before, the column after) for each schema change of `tb` after vid `since`
    that touched the column named as `col` (a current column of `tb`; `_before`), oldest first."""
    name = col.name.lower()
    out = []
    for ch in tb.tl.changes_after(since):
        now = next((c for c in ch.after.values() if c.name.lower() == name), None)
        old = _before(ch, now) if now is not None else None
        if old is not None:
            out.append((ch.vid, old, now))
    return out


def key_types_split(t: Table, target: Table, pairs: list[tuple[str, str]], since: int
                    ) -> list[tuple[str, str, str, str, tuple[int, str, str] | None]]:
    """Key pairs whose types agreed (one family: number, text, time) at vid `since` and no longer
    do: (column, related column, their types now, (vid, table, column) of the latest retype that
    split them: in place, or the column dropped and added again under its name in one commit).
    A join on such a pair compares text with a number: most engines refuse it, one casts
    implicitly, so no measured match rate clears it. Pairs split already at `since` are left out
    (the relationship was declared over them as they were). A column's family at `since` is the
    one before the first change after it that touched the column (`_retypes`), else its family now."""
    out = []
    for x, y in pairs:
        mine, theirs = t.col(x), target.col(y)
        if mine is None or theirs is None or type_family(mine.type) == type_family(theirs.type):
            continue
        sides = [(tb, c, _retypes(tb, c, since)) for tb, c in ((t, mine), (target, theirs))]
        mine_then, theirs_then = (type_family(h[0][1].type) if h else type_family(c.type) for _tb, c, h in sides)
        if mine_then != theirs_then:
            continue
        split = [(vid, tb.name, c.name) for tb, c, h in sides for vid, old, now in h
                 if type_family(old.type) != type_family(now.type)]
        out.append((x, y, str(mine.type), str(theirs.type), max(split) if split else None))
    return out


def _split_findings(ctx: Context, t: Table, a: Annotation, to: str,
                    split: list[tuple[str, str, str, str, tuple[int, str, str] | None]],
                    rekey: Callable[[], JoinOffer | None] | None = None) -> list[Finding]:
    """join_match_low, stale, for each key pair whose types split (`key_types_split`). With `rekey` (the
    data depth's `rekeyed`, measured only when a pair split): the key retyped to hold another column of
    the related table (its business id) gets that join (the round-9 TPC-DS tester's catalog returns,
    `cr_reason_sk` reloaded holding `r_reason_id`)."""
    out = []
    for x, y, tx, ty, ch in split:
        out.append(finding(a, t.name, "join_match_low", "stale",
                           f"the key types no longer agree: {t.name}.{x} is {tx}, {to}.{y} is {ty}"
                           f"{f' since vid {ch[0]} ({ch[1]}.{ch[2]} retyped)' if ch else ''}: a join on them compares "
                           "values of two kinds, which most engines refuse (one casts implicitly, so no measured "
                           "match rate clears it): cast one side in the join, or restate the key in its former type",
                           [w for w in (ch[0] if ch else None, ctx.vid) if w],
                           values={"column": x, "to": to, "to_column": y, "types": [tx, ty]},
                           cause=cause_of("retype", ch[1], ch[0], ch[2]) if ch else None))
    if rekey is not None and out:
        _offer(out[-1], rekey())
    return out


def relationship_data(ctx: Context, t: Table, a: Annotation, tables: dict[str, Table | None], duck: Duck,
                       already: set[tuple[str | None, str]], last: int,
                       checked: set[tuple[str | None, str]]) -> list[Finding]:
    val = a.value or {}
    to = str(val.get("to") or "")
    target = get_table(ctx, to, tables)
    pairs = [(str(x), str(y)) for x, y in (val.get("on") or [])]
    if target is None or not pairs or (a.key, "join_key_missing") in already or \
            any(t.col(x) is None or target.col(y) is None for x, y in pairs):
        return []
    out = []
    cond = val.get("condition")
    tgt = f"SELECT * FROM {quote_table(to)}"
    if cond:
        _bounded.expression(str(cond), f"the condition of {a.key}")  # one expression, whatever wrote it
        short = to.rsplit(".", 1)[-1]
        text = re.sub(rf"\b{re.escape(to)}\.|\b{re.escape(short)}\.", "", str(cond))
        try:
            duck.sql(f"SELECT count(*) FROM ({tgt} WHERE {text}) LIMIT 1")
            tgt = f"{tgt} WHERE {text}"
        except LimitExceededError:
            raise
        except CatalogError:
            pass  # a condition on the FROM side: not applied to the target
    checked.add((a.key, "join_match_low"))  # the match rate measured replaces the statistics' guess
    split = key_types_split(t, target, pairs, a.provenance.basis.vid or 0)
    out += _split_findings(ctx, t, a, to, split, lambda: rekeyed(ctx, t, target, pairs, tgt, duck))
    if not split:
        out += _match_rate(ctx, t, a, to, target, pairs, tgt, duck, tables, last)
    card = val.get("cardinality")
    sides = []
    if card in ("many_to_one", "one_to_one"):
        sides.append((to, tgt, [y for _, y in pairs]))
    if card in ("one_to_many", "one_to_one"):
        sides.append((t.name, f"SELECT * FROM {quote_table(t.name)}", [x for x, _ in pairs]))
    if sides:
        checked.add((a.key, "cardinality_violated"))
    for side, body, cols in sides:
        kq = ", ".join(quote_id(c) for c in cols)
        dup = duck.sql(f"SELECT count(*) FROM (SELECT {kq} FROM ({body}) GROUP BY ALL HAVING count(*) > 1)")[0][0]
        if not dup and side == to and not past_versions(target, duck):
            # (a key unique over past versions too identifies a version: each row matches one, the claim holds)
            kept = versioned_target(a, t, target, str(cond or ""),
                                    note=" (no key repeats in the data yet: every key has one version so far)")
            if kept is not None:
                out.append(kept)
        if dup:
            sugg = None
            cfix: list[Fix] = []
            cause: str | None = None
            st = get_table(ctx, side, tables)
            flag = current_flag(st) if st is not None else None
            if st is not None and flag is not None and flag.lower() not in str(cond or "").lower():
                cur = _current_dups(duck, side, kq, current_rows(st, flag), str(cond or "") if side == to else "")
                if not cur:
                    ch = scd2_change(st, a.provenance.basis.vid)
                    sugg = f"SCD2{' since ' + day_of(ch.time) if ch else ''}: filter {flag} " \
                        f"(condition {flag_condition(st, flag)!r})"
                    cfix = [flag_fix(st, flag)]
                    cause = cause_of("versions", side, ch.vid) if ch else None
            out.append(finding(a, t.name, "cardinality_violated", "stale",
                                f"declared {card}, but {dup} key value(s) repeat in {side}", [ctx.vid, last],
                                values={"side": side, "duplicate_keys": dup}, suggestion=sugg, fixes=cfix,
                                cause=cause))
    return out


def _current_dups(duck: Duck, side: str, kq: str, current: str, cond: str) -> int:
    """Key values of `side` repeated among its current rows (the predicate `current`), under the relationship's own
    condition on the target when it has one (a dimension already versioned by another flag that the
    condition filters: the new flag's fix holds with it). A condition that does not run on the table
    alone is left out."""
    tq, fq = quote_table(side), current
    if cond:
        try:
            return int(duck.sql(f"SELECT count(*) FROM (SELECT {kq} FROM {tq} WHERE {fq} AND ({cond}) GROUP BY ALL "
                                "HAVING count(*) > 1)")[0][0])
        except CatalogError:
            pass
    return int(duck.sql(f"SELECT count(*) FROM (SELECT {kq} FROM {tq} WHERE {fq} GROUP BY ALL HAVING count(*) > 1)")[0][0])


def _match_rate(ctx: Context, t: Table, a: Annotation, to: str, target: Table, pairs: list[tuple[str, str]], tgt: str,
                duck: Duck, tables: dict[str, Table | None], last: int) -> list[Finding]:
    """The relationship's match rate measured: below `MATCH_LOW`, join_match_low (stale under half) with
    the repair the evidence holds for a key column still there (`rekeyed`: another key of the related
    table it holds now; `moved_to_table`); above it, the rows added since the relationship was
    written when they match below it while the rows before matched (`added_unmatched`: a new key
    format in the recent loads, which the older rows outnumber; suspect, no fix, as the statistics'
    finding), else the rows the target's removal took (`_lost_match`)."""
    total, matched = match_counts(duck, t.name, pairs, tgt)
    if total and matched / total < MATCH_LOW:
        rate = matched / total
        f = finding(a, t.name, "join_match_low", "stale" if rate < 0.5 else "suspect",
                    f"only {rate:.1%} of {t.name} rows find a match in {to} on "
                    f"{', '.join(f'{x} = {y}' for x, y in pairs)}", [ctx.vid, last],
                    values={"rows": total, "matched": matched, "rate": round(rate, 4)})
        # the key column is still there: the repair is what it holds now (another key of the related table),
        # never a join on other columns named alike, which is another relationship (held-out 1902/1903 of
        # session 23, read after their scoring: TPC-DS store_sales' promotion key rebuilt to hold the
        # promotion's end date key got join_on ss_item_sk = p_item_sk)
        if rate < 0.5:
            _offer(f, rekeyed(ctx, t, target, pairs, tgt, duck))
        if rate < 0.5 and not f.fixes:
            moved = moved_to_table(ctx, t, a, target, pairs, duck, tables)
            if moved is not None:
                f.suggestion, f.fixes = moved
        return [f]
    since: int | None = a.provenance.basis.vid
    recent = added_unmatched(ctx, t, target, pairs, tgt, (total, matched), since) \
        if total and matched < total else None
    if recent is None and total and matched < total:
        since, recent = latest_unmatched(ctx, t, target, pairs, tgt, (total, matched), since)
    if recent is not None:
        n, u, before, rows_before = recent
        changed = [v for v, _ in t.tl.data_after(since or 0)]
        return [finding(a, t.name, "join_match_low", "suspect",
                        f"at most {n - u} of the {n} rows of {t.name} loaded since vid {since} find a "
                        f"match in {to} on {', '.join(f'{x} = {y}' for x, y in pairs)} ({(n - u) / n:.1%}), where the "
                        f"{rows_before} rows before matched {before:.1%} ({matched / total:.1%} of the table as a whole "
                        "still match): a new key format in the recent loads, or keys the related table lacks? the "
                        "join drops those rows; check the key of the recent loads", changed[:1] + changed[-1:] + [ctx.vid],
                        values={"rows_added": n, "unmatched_added": u, "rate_added": round((n - u) / n, 4),
                                "rate_before": round(before, 4), "rows": total, "matched": matched,
                                "rate": round(matched / total, 4), "to": to})]
    lost = _lost_match(ctx, t, a, to, pairs, tgt, duck, tables, (total, matched)) if total and matched < total else None
    return [lost] if lost is not None else []


REKEY_CANDIDATES = 3  # columns of the related table `rekeyed` measures, those whose ranges overlap most
REKEY_DISTINCT = 20  # key values the referencing column must hold before its matches say anything,
REKEY_SMALL = 1000   # unless every one of them is this large or larger (no small code)


def _range_overlap(a: dict[str, Any] | None, b: dict[str, Any] | None) -> float:
    """How much of column statistics `a`'s [min, max] range `b`'s covers (0..1; 0 when either has
    none; 1 for a single value inside). Strings (business ids, codes) have no length of range: 1 when
    b's range holds a's, 0.5 when they overlap."""
    lo, hi = num((a or {}).get("min")), num((a or {}).get("max"))
    lo2, hi2 = num((b or {}).get("min")), num((b or {}).get("max"))
    ends = [str((x or {}).get(k)) for x in (a, b) for k in ("min", "max") if isinstance((x or {}).get(k), str)]
    if len(ends) == 4 and None in (lo, hi, lo2, hi2):
        slo, shi, slo2, shi2 = ends
        if slo2 > shi or shi2 < slo:
            return 0.0
        return 1.0 if slo2 <= slo and shi <= shi2 else 0.5
    if lo is None or hi is None or lo2 is None or hi2 is None or lo2 > hi or hi2 < lo:
        return 0.0
    return 1.0 if hi == lo else (min(hi, hi2) - max(lo, lo2)) / (hi - lo)


def rekeyed(ctx: Context, t: Table, target: Table, pairs: list[tuple[str, str]], tgt: str,
            duck: Duck) -> JoinOffer | None:
    """The referencing column of a one-pair relationship that no longer matches its key, rebuilt to hold
    another column of the related table (a surrogate key for the natural one, a platform's number for
    the order id): the column of `target` (not the current key, same type family, its statistics'
    range covering the referencing values' most; at most REKEY_CANDIDATES measured) that MATCH_LOW of
    the referencing rows find a match in, on the relationship's own target rows (`tgt`, its condition
    applied), and that is a key (`_key_doubt`, on the data). The suggestion and its `join_on` fix; None
    when no column holds the values (a new format no column holds: a person has to look). Evidence:
    the rows at the check's vid; a column with fewer than REKEY_DISTINCT values is no evidence (small
    codes match any small-number column) unless its values are all REKEY_SMALL or more (a seen held-out
    TPC-DS web_sales re-keyed to two web pages' access dates: no fix before)."""
    if len(pairs) != 1:
        return None
    mine, theirs = pairs[0]
    col = t.col(mine)
    if col is None:
        return None
    n_distinct = duck.sql(f"SELECT count(DISTINCT {quote_id(mine)}) FROM {quote_table(t.name)}")[0][0]
    have = t.stat(mine)
    low = num((have or {}).get("min"))
    if not n_distinct or (int(n_distinct) < REKEY_DISTINCT and (low is None or abs(low) < REKEY_SMALL)):
        return None  # a few small codes match any small-number column; a few large numbers match by chance rarely
    ranked = sorted(((_range_overlap(have, target.stat(c.name)), c.name) for c in target.cols.values()
                     if c.name.lower() != theirs.lower() and type_family(c.type) == type_family(col.type)),
                    reverse=True)
    whole = f"SELECT * FROM {quote_table(target.name)}"
    for overlap, other in ranked[:REKEY_CANDIDATES]:
        if overlap <= 0:
            break
        total, matched = match_counts(duck, t.name, [(mine, other)], tgt)
        if total and matched / total < MATCH_LOW and tgt != whole:
            # the key of every version (a surrogate key of a table keeping versions): the rows may reference
            # past versions, which the relationship's condition (its current rows) leaves out
            got = _version_key(ctx, t, target, mine, other, whole, duck)
            if got is not None:
                return got
        if not total or matched / total < MATCH_LOW:
            continue
        doubt = _key_doubt(ctx, t, target, mine, other, duck)
        if doubt is not None:
            return JoinOffer(f"{matched / total:.1%} of its rows match {target.name}.{other}, but check it before "
                             f"joining on it: {doubt}", None)
        return JoinOffer(f"join on {mine} = {target.name}.{other} ({matched / total:.1%} of its rows match it): "
                         f"{mine} now holds {other}'s values",
                         make_fix("join_on", from_column=mine, to_table=target.name, to_column=other))
    return None


def _version_key(ctx: Context, t: Table, target: Table, mine: str, other: str, whole: str,
                 duck: Duck) -> JoinOffer | None:
    """`rekeyed`'s candidate `other` measured on every row of the related table (`whole`) when the
    relationship's condition keeps its current rows only: MATCH_LOW of the referencing rows find it there
    and its values are unique over every row (it identifies a version, not an entity: a surrogate key of
    a dimension that keeps versions; nulls and ranges as `_key_doubt` reads them). The repair joins on it
    without the condition (`join_on` with `unconditional`), since a row references the version valid when
    it happened, current or not (the round-12 Acme tester's loyalty events re-keyed to the customer
    version's `customer_sk`; failed before: no fix, the current rows matching a few)."""
    total, matched = match_counts(duck, t.name, [(mine, other)], whole)
    if not total or matched / total < MATCH_LOW:
        return None
    b = target.stat(other)
    if not b or b.get("null_count"):
        return None
    n, distinct = duck.sql(f"SELECT count(*), count(DISTINCT {quote_id(other)}) FROM {quote_table(target.name)}")[0]
    if not n or n != distinct:
        return None
    return JoinOffer(f"join on {mine} = {target.name}.{other} without the condition ({matched / total:.1%} of its "
                     f"rows match it among every version of {target.name}): {mine} now holds {other}, the key of "
                     "each version",
                     make_fix("join_on", from_column=mine, to_table=target.name, to_column=other, unconditional=True))


def moved_to_table(ctx: Context, t: Table, a: Annotation, target: Table, pairs: list[tuple[str, str]], duck: Duck,
                   tables: dict[str, Table | None]) -> tuple[str, list[Fix]] | None:
    """The keys of a one-pair relationship that no longer match its table now found in a table first
    loaded since the relationship was written and since the table last changed its rows (a dimension
    rebuilt under a new name, `reason_v2`; not a copy made before the table's keys were restated),
    under the key's own name: the new table (at most REKEY_CANDIDATES measured, those sharing most of
    the old table's name first) whose column of that name holds MATCH_LOW of the referencing rows and
    is its key on the data. The suggestion and its `relate_to` fix; None otherwise (a person looks).
    The round-8 TPC-DS tester's catalog returns, whose reason keys moved to a new `dim.reason_v2`."""
    if len(pairs) != 1:
        return None
    mine, theirs = pairs[0]
    # first loaded after the relationship was written and after the related table last changed its rows (a
    # copy made before the related table was restated, a backup, still holds the old keys: no successor)
    basis = max(a.provenance.basis.vid or 0, *(v for v, _ in target.tl.data_commits[-1:]))
    short = target.name.rsplit(".", 1)[-1].lower()
    key = target.col(theirs) or t.col(mine)
    if key is None:
        return None
    cands = []
    for name, obj in ctx.tables().items():
        if name in (target.name, t.name) or \
                not any(c.name.lower() == theirs.lower() for c in table_columns(obj.value)):
            continue  # (the schema of the snapshot's object first: no history read for a table without the key)
        other = get_table(ctx, name, tables)
        col = other.col(theirs) if other is not None else None
        first = other.tl.data_commits[0][0] if other is not None and other.tl.data_commits else None
        if other is None or col is None or first is None or first <= basis or \
                type_family(col.type) != type_family(key.type):
            continue
        cands.append((short in name.rsplit(".", 1)[-1].lower(), _range_overlap(t.stat(mine), other.stat(col.name)),
                      name, other))
    for _named, overlap, name, other in sorted(cands, key=lambda c: (c[0], c[1], c[2]), reverse=True)[:REKEY_CANDIDATES]:
        if overlap <= 0:
            continue
        total, matched = match_counts(duck, t.name, pairs, f"SELECT * FROM {quote_table(name)}")
        if not total or matched / total < MATCH_LOW or _key_doubt(ctx, t, other, mine, theirs, duck) is not None:
            continue
        return (f"relate to {name} ({matched / total:.1%} of the rows match it on {mine} = {theirs}; first loaded "
                f"after this relationship was written)", [make_fix("relate_to", table=name)])
    return None


def match_counts(duck: Duck, frm: str, pairs: list[tuple[str, str]], tgt: str, where: str = "") -> tuple[int, int]:
    """(rows of `frm` with a key, those of them that find a match in the rows of statement `tgt` on
    `pairs`) at the Duck's vid; with `where` (a condition on `frm` as `f`), of those rows only."""
    fk = " AND ".join([f"f.{quote_id(x)} IS NOT NULL" for x, _ in pairs] + ([f"({where})"] if where else []))
    on = " AND ".join(f"f.{quote_id(x)} = g.{quote_id(y)}" for x, y in pairs)
    keys = ", ".join(quote_id(y) for _, y in pairs)
    total, matched = duck.sql(f"SELECT count(*), count(g.__m) FROM {quote_table(frm)} f LEFT JOIN "
                              f"(SELECT DISTINCT {keys}, 1 AS __m FROM ({tgt})) g ON {on} WHERE {fk}")[0]
    return int(total or 0), int(matched or 0)


ADDED_ALPHA = 0.001  # chance rows matching at MATCH_LOW leave as many unmatched as `added_unmatched` requires


def beyond_chance(n: int, u: int) -> bool:
    """Are `u` unmatched rows among `n` too many for rows that match at MATCH_LOW: would such rows
    leave `u` or more unmatched with a chance under ADDED_ALPHA (the binomial tail, exactly)? One
    stray row is no evidence: at MATCH_LOW 0.95 it takes at least 3 rows, all unmatched (0.05^3 <
    0.001; 2 of 2 is 0.0025), and the more rows were added, the closer to MATCH_LOW their rate may be."""
    p = 1 - MATCH_LOW
    if n <= 0 or u <= p * n:
        return False
    term = math.exp(math.lgamma(n + 1) - math.lgamma(u + 1) - math.lgamma(n - u + 1) + u * math.log(p)
                    + (n - u) * math.log1p(-p))
    tail, k = 0.0, u
    while k <= n and term > 0:  # the terms fall from k = u on (u above the mean n p): stop when they no longer add
        tail += term
        if tail >= ADDED_ALPHA or term < tail * 1e-12:
            break
        term *= (n - k) / (k + 1) * p / (1 - p)
        k += 1
    return tail < ADDED_ALPHA


def added_unmatched(ctx: Context, t: Table, target: Table, pairs: list[tuple[str, str]], tgt: str,
                    now: tuple[int, int], basis: int | None) -> tuple[int, int, float, int] | None:
    """The rows of `t` added since vid `basis` judged apart from the table as a whole (whose rate `now`,
    (rows, matched), a handful of new rows cannot move): (rows added, at least that many of them
    unmatched, the rate the rows before matched at `basis`, their count) when the added rows match
    below MATCH_LOW beyond chance (`beyond_chance`) while the rows before matched at MATCH_LOW or
    more; None otherwise. The rows before are the table's rows at `basis`, exactly still there when
    every file of the table then is a file of it now (appends since); when files were rewritten since (a
    compaction), the rows past the basis on a column that grew (`beyond_basis`: a load date, a growing
    key) are the added rows, counted directly; and those that matched then still match when the related table
    removed no rows holding its key since (`values_removed`; its removals are `_lost_match`'s): the
    unmatched rows now less those unmatched then are a lower bound on the added rows that match
    nothing. Rows that match (a related table that took the new keys, before or after the rows that
    look them up) never count. `tgt` is the related rows' statement (its condition applied)."""
    if not basis or not t.tl.data_after(basis):
        return None
    then_files = {f.path for f in t.files(basis)}
    if not then_files:
        return None
    beyond = None if then_files <= {f.path for f in t.files(ctx.vid)} else \
        beyond_basis(t, basis, {x.lower() for x, _y in pairs})
    if not then_files <= {f.path for f in t.files(ctx.vid)} and beyond is None:
        return None
    keys = [c.name for _x, y in pairs if (c := target.col(y)) is not None]
    if any(v > basis for k in keys for v, *_r in values_removed(target, k)):
        return None
    try:
        rows_before, matched_before = match_counts(duck_at(ctx, basis), t.name, pairs, tgt)
        if beyond is not None:  # files rewritten since (a compaction): the rows past the basis are the added ones
            n, m = match_counts(duck_at(ctx, ctx.vid), t.name, pairs, tgt,
                                f"f.{quote_id(beyond[0])} > {literals([beyond[1]])}")
    except LimitExceededError:
        raise
    except CatalogError:
        return None  # the key or the condition's columns not there at the basis
    total, matched = now
    n, u = (n, n - m) if beyond is not None else (total - rows_before, (total - matched) - (rows_before - matched_before))
    if not rows_before or matched_before / rows_before < MATCH_LOW or n <= 0 or not 0 < u <= n:
        return None
    return (n, u, matched_before / rows_before, rows_before) if beyond_chance(n, u) else None


RECENT_LOADS = 8  # the latest loads judged apart, when every row since the claim does not show it


def latest_unmatched(ctx: Context, t: Table, target: Table, pairs: list[tuple[str, str]], tgt: str,
                     now: tuple[int, int], basis: int | None) -> tuple[int | None, tuple[int, int, float, int] | None]:
    """`added_unmatched` of the latest loads since `basis`: a new key format in the last few loads, which
    the rows loaded between the claim and them outnumber (62 rows of three loads among thousands since:
    the round-7 cryptic tester's web order numbers). The run grows from the latest load back while each
    load added has half its rows or more unmatched (at most `RECENT_LOADS`), and is judged as a whole:
    (the vid before it, what `added_unmatched` says of it); (basis, None) when none is (the latest load's
    rows match, or too few are unmatched): one statement then."""
    after = t.tl.data_after(basis or 0)
    found: tuple[int | None, tuple[int, int, float, int] | None] = (basis, None)
    last_n = last_u = 0
    for k in range(1, min(RECENT_LOADS, len(after) - 1) + 1):
        start = after[-k - 1][0]
        got = added_unmatched(ctx, t, target, pairs, tgt, now, start)
        if got is None:
            break
        n, u = got[0], got[1]
        if u - last_u < 0.5 * (n - last_n):
            break  # this load's rows match: the run of new keys began after it
        found, last_n, last_u = (start, got), n, u
    return found


def beyond_basis(t: Table, basis: int, leave: frozenset[str] | set[str] = frozenset()) -> tuple[str, Any] | None:
    """A column whose maximum grew since vid `basis` (its statistics then and now), the rows past its
    maximum then being rows added since: (column, that maximum). A date or time column first, then a
    number named as a load's date or key (`..._date_sk`, `..._date`, `..._id`), then any number; never
    one of `leave` (lower case: the join's own key, whose new values past the old ones are the very rows
    in question, a biased sample); None when none grew."""
    before = stats_at(t, basis)
    found: list[tuple[int, str, Any]] = []
    for c in t.cols.values():
        fam, n = type_family(c.type), c.name.lower()
        if n in leave:
            continue
        hi, top = (before.get(c.name) or {}).get("max"), (t.stat(c.name) or {}).get("max")
        if hi is None or top is None or fam not in ("time", "date", "number"):
            continue
        if fam == "number":
            a, b = num(hi), num(top)
            if a is None or b is None or not b > a:
                continue
            rank = 1 if n.endswith(("date_sk", "_date", "_id", "_sk")) else 2
        else:
            if not str(top) > str(hi):
                continue
            rank = 0
        found.append((rank, c.name, hi))
    return (min(found)[1], min(found)[2]) if found else None


LOST_KEYS = 500  # unmatched keys `_lost_match` reads back at the vid before the target's removal, at most


def _lost_match(ctx: Context, t: Table, a: Annotation, to: str, pairs: list[tuple[str, str]], tgt: str, duck: Duck,
                tables: dict[str, Table | None], counts: tuple[int, int]) -> Finding | None:
    """The rows whose match the target's removal took (`target_rows_removed`'s suspicion, confirmed by
    the data), however small their share: keys of this table's rows that match nothing in `to` now and
    that `to` held just before it removed rows. A join through the relationship now drops rows it kept:
    join_match_low, suspect, no fix (whether the rows or the relationship are wrong is for a person).
    Rows that never matched are no lost match. Single-column keys; at most `LOST_KEYS` unmatched keys
    are read back. None when the target removed no rows since the relationship was written, or none of
    this table's rows lost their match."""
    meta = target_rows_removed(ctx, t, a, tables)
    if not meta or len(pairs) != 1:
        return None
    v = int(meta[0].evidence.values["removed_vid"])
    (x, y), = pairs
    fx, gy = quote_id(x), quote_id(y)
    rows = duck.sql(f"SELECT f.{fx}, count(*) FROM {quote_table(t.name)} f LEFT JOIN (SELECT DISTINCT {gy}, 1 AS __m "
                    f"FROM ({tgt})) g ON f.{fx} = g.{gy} WHERE f.{fx} IS NOT NULL AND g.__m IS NULL GROUP BY 1 "
                    f"LIMIT {LOST_KEYS}")
    if not rows or v <= 0:
        return None
    had = {r[0] for r in _bounded.query(ctx.cat, v - 1, f"SELECT DISTINCT {gy} FROM {quote_table(to)} WHERE {gy} IN "
                                                      f"({_bounded.literals([r[0] for r in rows])})")}
    lost = sum(int(r[1]) for r in rows if r[0] in had)
    if not lost:
        return None
    total, matched = counts
    return finding(a, t.name, "join_match_low", "suspect",
                   f"{lost} row(s) of {t.name} lost their match in {to} when it removed rows at vid {v} "
                   f"({day_of(meta[0].evidence.times[0]) if meta[0].evidence.times else 'then'}): a join on "
                   f"{x} = {y} now drops them ({matched / total:.1%} of the rows still match)", [v, ctx.vid],
                   values={"lost": lost, "removed_vid": v, "rows": total, "matched": matched,
                           "rate": round(matched / total, 4)}, cause=meta[0].cause)


def join_key_data(ctx: Context, t: Table, a: Annotation, tables: dict[str, Table | None], duck: Duck,
                  checked: set[tuple[str | None, str]]) -> list[Finding]:
    """At data depth, a relationship whose key went missing is judged again with the data deciding
    whether the suggested join is into a key (unique values): its join_key_missing findings replace
    the metadata ones."""
    checked.add((a.key, "join_key_missing"))
    return [f for f in relationship_findings(ctx, t, a, tables, duck) if f.reason == "join_key_missing"]


def target_rows_removed(ctx: Context, t: Table, ann: Annotation, tables: dict[str, Table | None]) -> list[Finding]:
    """join_match_low (suspect), metadata: the table a relationship joins to removed rows holding its
    join key (`values_removed`: the key's rows less nulls fell) after the relationship was written, and
    had never removed such rows before (a table that does so routinely is left alone). Rows of this
    table that joined to the removed ones match nothing now, if any did; the statistics cannot say:
    no fix, the data depth measures the match."""
    val = ann.value or {}
    to = str(val.get("to") or "")
    pairs = [(str(p[0]), str(p[1])) for p in val.get("on") or [] if isinstance(p, (list, tuple)) and len(p) == 2]
    target = get_table(ctx, to, tables) if to and to != t.name else None
    if target is None or not pairs or any(t.col(a) is None or target.col(b) is None for a, b in pairs):
        return []
    b = ann.provenance.basis.vid
    key = target.col(pairs[0][1])
    assert key is not None
    removed = values_removed(target, key.name)
    if not removed or removed[0][0] <= b:
        return []  # none since the relationship was written, or the target removed rows before it was
    v, tt, rb, ra, n = removed[0]
    return [finding(ann, t.name, "join_match_low", "suspect",
                    f"{to} lost {rb - ra} of its {rb} rows at vid {v} ({day_of(tt)}), {n} of them holding a value of "
                    f"{key.name}, after this relationship was written (vid {b}); it had never removed such rows "
                    f"before: rows of {t.name} that joined to them match nothing now. The statistics cannot say "
                    "how many; check the match at data depth", [v], [tt],
                    values={"to": to, "column": key.name, "removed_vid": v, "rows_before": rb, "rows_after": ra,
                            "values_removed": n},
                    cause=cause_of("rows_removed", to, v, key.name))]


# ------------------------------------------------------------------ a related table's keys drawn again
RENUMBER_ROWS = 5000  # rows of the related table read either side of a rewrite, the same ones by their hash
RENUMBER_MIN = 5      # rows paired by their other columns, at least
RENUMBER_KEPT = 0.8   # of the rows before the rewrite (one of a kind by their other columns), the share paired
RENUMBERED = 0.5      # of the paired rows, the share whose key moved
RENUMBER_REWRITES = 3  # the related table's latest full rewrites since the relationship was written, at most


def keys_renumbered(ctx: Context, t: Table, a: Annotation, tables: dict[str, Table | None]) -> list[Finding]:
    """values_restated (data): the table a one-pair relationship joins to was rewritten in full after the
    relationship was written (a routine rebuild too) and its rows kept every other column but took other
    keys: its surrogate keys were drawn again, while this table holds rows written before that rewrite,
    never rewritten since, that still hold the old keys. They join, but to other rows (the round-22
    TPC-DS tester's `income_band` re-keyed from 0: 6,840 of 7,200 household profiles joined the wrong
    band and nothing was flagged: the match rate and the key ranges held). Rows are paired across the
    rewrite by every other column the related table holds on both sides (those one of a kind by them,
    the first RENUMBER_ROWS by their hash on both sides); RENUMBER_KEPT of the rows before must pair,
    RENUMBERED of the pairs hold another key, and the old keys of those pairs must still be keys of the
    rewritten table (RENUMBERED of them): keys drawn from a new range leave the old rows joining nothing,
    which `join_match` says (the round-24 TPC-DS tester's customers re-keyed from 100001: this finding said
    "they join, but to other rows" beside the 0.3% match). No fix: a person re-keys the rows or restores
    the keys."""
    val = a.value or {}
    to = str(val.get("to") or "")
    pairs = [(str(x), str(y)) for x, y in (val.get("on") or [])]
    target = get_table(ctx, to, tables) if to and to != t.name else None
    if target is None or len(pairs) != 1 or t.col(pairs[0][0]) is None or target.col(pairs[0][1]) is None:
        return []
    mine, key = pairs[0]
    basis = a.provenance.basis.vid or 0
    mine_rewritten = [v for v, _ in full_overwrites(t)]
    for v, tt in reversed([(v, tt) for v, tt in full_overwrites(target) if v > basis][-RENUMBER_REWRITES:]):
        if not rows_at(t, v - 1) or (any(w >= v for w in mine_rewritten) and not _keys_kept(ctx, t, mine, v)):
            continue  # no rows held before, or rebuilt since with its keys moved (they may follow the new ones)
        got = _renumbered(ctx, target, key, v)
        if got is None:
            continue
        paired, moved, example = got
        return [finding(a, t.name, "values_restated", "stale",
                        f"{to} was rewritten in full at vid {v} ({day_of(tt)}) with its keys drawn again: of {paired} "
                        f"of its rows paired across it by their other columns, {moved} hold another {key} now (e.g. "
                        f"{example[0]!r} -> {example[1]!r}). Rows of {t.name} written before it still hold the old "
                        f"keys in {mine}: they join, but to other rows of {to}. Re-key them, or restore the keys",
                        [v], [tt], values={"to": to, "column": key, "rewrite_vid": v, "rows_paired": paired,
                                           "keys_moved": moved, "example": list(example)},
                        cause=cause_of("renumbered", to, v, key))]
    return []


def _keys_kept(ctx: Context, t: Table, mine: str, v: int) -> bool:
    """Whether `t`, rewritten since vid `v`, holds now the very keys it held before `v` (as many rows per
    value of `mine`): a rebuild for another reason that carried the old keys over (the round-22 tester's
    household profiles, rebuilt to merge two bands, kept every old band key)."""
    q = f"SELECT CAST({quote_id(mine)} AS VARCHAR), count(*) FROM {quote_table(t.name)} GROUP BY 1 ORDER BY 1 LIMIT 10001"
    try:
        before, now = duck_at(ctx, v - 1).sql(q), duck_at(ctx, ctx.vid).sql(q)
    except CatalogError:
        return False
    return len(before) <= 10000 and before == now


def _renumbered(ctx: Context, target: Table, key: str, v: int) -> tuple[int, int, tuple[Any, Any]] | None:
    """(rows paired, of them holding another `key`, one such (old, new)) across the rewrite of `target` at
    `v` (`keys_renumbered`), or None when its keys held (or too few rows pair); cached per (table, key, vid)."""
    ck = ("renumbered", target.name, key, v)
    got = ctx.cache.findings.take(ck)
    if got is not None:
        return got[0]
    out = None
    others = [c.name for c in target.cols.values() if c.name.lower() != key.lower()]
    if others:
        h = "md5(concat_ws('|', " + ", ".join(f"coalesce(CAST({quote_id(c)} AS VARCHAR), '<null>')"
                                              for c in others) + "))"
        q = (f"SELECT h, min(k), count(*) FROM (SELECT {h} AS h, CAST({quote_id(key)} AS VARCHAR) AS k FROM "
             f"{quote_table(target.name)}) GROUP BY h ORDER BY h LIMIT {RENUMBER_ROWS}")
        try:
            before = {str(r[0]): r[1] for r in duck_at(ctx, v - 1).sql(q) if r[2] == 1}
            after = {str(r[0]): r[1] for r in duck_at(ctx, v).sql(q) if r[2] == 1}
        except CatalogError:  # a column it holds now it did not hold then: no pairing
            before, after = {}, {}
        common = [x for x in before if x in after]
        moved = [x for x in common if before[x] != after[x]]
        if len(common) >= max(RENUMBER_MIN, RENUMBER_KEPT * len(before)) and len(moved) >= RENUMBERED * len(common) \
                and _still_keys(ctx, target, key, v, [before[x] for x in moved]):
            out = (len(common), len(moved), (before[moved[0]], after[moved[0]]))
    ctx.cache.findings.put(ck, (out,))
    return out


def _still_keys(ctx: Context, target: Table, key: str, v: int, old: list[Any]) -> bool:
    """Whether RENUMBERED of the old keys `old` (the first RENUMBER_ROWS) are still keys of `target` after
    its rewrite at `v`: the rows holding them join, to other rows."""
    sample = sorted({str(k) for k in old if k is not None})[:RENUMBER_ROWS]
    if not sample:
        return False
    try:
        [(held,)] = duck_at(ctx, v).sql(f"SELECT count(DISTINCT CAST({quote_id(key)} AS VARCHAR)) FROM "
                                        f"{quote_table(target.name)} WHERE CAST({quote_id(key)} AS VARCHAR) IN "
                                        f"({literals(sample)})")
    except CatalogError:
        return False
    return int(held) >= RENUMBERED * len(sample)


# ------------------------------------------------------------------ prose stating a join that no longer matches
def _table_forms(table: str) -> list[str]:
    """How prose names a table: its dotted name and trailing parts of two parts or more, and its last part
    alone when that is no plain word (`dim_customer`, never `customer`)."""
    parts = table.lower().split(".")
    return [".".join(parts[i:]) for i in range(len(parts) - 1)] + \
        ([parts[-1]] if not re.fullmatch(r"[a-z]+", parts[-1]) else [])


def _names_table(text: str, table: str, keys: list[str]) -> bool:
    """Does `text` name `table` (`_table_forms`), or its last part qualifying one of its `keys` (dim.customer_id)?"""
    last = table.lower().rsplit(".", 1)[-1]
    forms = _table_forms(table) + [f"{last}.{k.lower()}" for k in keys]
    return any(re.search(rf"(?<![\w.]){re.escape(f)}(?!\w)", text, re.IGNORECASE) for f in forms)


def is_join_prose(f: Finding) -> bool:
    """Was `f` raised by `join_prose`?"""
    return f.reason == "join_match_low" and "join_of" in f.evidence.values


def join_prose(t: Table, anns: list[Annotation], found: list[Finding]) -> list[Finding]:
    """Prose stating how a relationship joins, when the join no longer matches (`join_match_low` on the
    relationship): the table's description naming the related table and a key column of the join ("join
    core.dim_customer on customer_uuid"), a key column's own description naming the related table
    ("Identified customer (dim_customer.customer_uuid)"); the table is named by its dotted name, its
    trailing parts, its last part when no plain word, or its last part qualifying its key (dim.customer_id). The finding's status and cause, no fix (the
    prose is for a person to rewrite). An annotation with a finding of its own is left to it."""
    rels = {a.key: a for a in anns if a.kind == "relationship"}
    has = {f.annotation for f in found}
    out: list[Finding] = []
    for f in found:
        rel = rels.get(f.annotation or "")
        if f.reason != "join_match_low" or rel is None or is_join_prose(f):
            continue
        v = rel.value or {}
        to, on = str(v.get("to") or ""), [str(p[0]) for p in v.get("on") or [] if len(p) == 2]
        theirs = [str(p[1]) for p in v.get("on") or [] if len(p) == 2]
        for a in anns:
            if a.field != "description" or not isinstance(a.value, str) or a.key in has or \
                    not _names_table(a.value, to, theirs):
                continue
            own = a.kind == "column" and str(a.column or "").lower() in {x.lower() for x in on}
            named = a.kind == "table" and any(re.search(rf"(?<![\w.]){re.escape(x)}(?!\w)", a.value, re.IGNORECASE)
                                              for x in on)
            if (own or named) and (a.provenance.basis.vid or 0) < max(f.evidence.vids or [0]):
                has.add(a.key)
                out.append(finding(a, f"{t.name}.{a.column}" if own else t.name, "join_match_low", f.status,
                                   f"the description says how {t.name} joins {to} ({', '.join(on)}), and that join "
                                   f"no longer matches: {f.message}", f.evidence.vids, f.evidence.times,
                                   {"join_of": rel.key, "to": to}, cause=f.cause))
    return out
