"""Class `schema`: columns dropped, renamed (same id, or paired one to one by statistics across the
commit that dropped them, or written beside the old column and dropped later) or retyped, and
table annotations older than a schema change. Evidence: schema history, column statistics either
side of the change. Fix: `rename {old, new, scale}` when a column continues the old one."""

from __future__ import annotations

import json
import re

from catalog_core import lake
from catalog_core.sql.types import duck_type
from semantic._tables import column_id
from semantic.history import Context, SchemaChange, type_family
from semantic.models import Annotation, ColumnRef, ColumnStats, Finding
from semantic.staleness.claim_rules import clauses, phrase_names, prose_names, strings_of
from semantic.staleness.core import (
    Table,
    assign,
    cause_of,
    day_of,
    finding,
    get_table,
    make_fix,
    name_of,
    pair_cost,
    rows_at,
    stats_at,
    type_of,
    unit_word,
    versioning,
)


def _fate(t: Table, ref: ColumnRef, since: int) -> tuple[str, lake.Column | None, SchemaChange | None]:
    """What became of a column the annotation referred to: ok, renamed, type, or dropped (with
    the schema change that did it)."""
    cur = t.cols.get(ref.id)
    if cur is None:
        same = t.col(ref.name)
        if same is not None:  # dropped and re-added under the same name: the same column to a reader
            cur = same
    changes = t.tl.changes_after(since)
    if cur is None:
        for ch in changes:
            if ref.id in ch.before and ref.id not in ch.after:
                return "dropped", None, ch
        return "dropped", None, changes[-1] if changes else None
    by = next((ch for ch in changes if name_of(ch.after.get(ref.id)) != name_of(ch.before.get(ref.id))
               and ref.id in ch.before), None)
    if cur.name != ref.name and cur.id == ref.id:
        return "renamed", cur, by
    if str(cur.type) != ref.type:
        retyped = next((c for c in changes if type_of(c.after.get(column_id(cur))) != ref.type), None)
        return "type", cur, retyped
    return "ok", cur, None


def rename_map(t: Table, ch: SchemaChange) -> dict[str, tuple[str, int, float]]:
    """The columns `ch` dropped that reappear among the columns it added, one to one, from the
    statistics of the rows either side of the change (the table's stats at ch.vid - 1 against those
    at ch.vid; the same rows when a table is rebuilt): old name -> (new name, k, cost). A pair needs
    the same type family and statistics equal up to a power of ten; names are not compared."""
    key = ("renames", t.obj.path, ch.vid)
    got = t.ctx.cache.findings.take(key)
    if got is not None:
        return got[0]
    before, after = stats_at(t, ch.vid - 1), stats_at(t, ch.vid)
    costs: dict[tuple[str, str], float] = {}
    scale: dict[tuple[str, str], int] = {}
    for d in ch.dropped:
        for a in ch.added:
            if type_family(a.type) != type_family(d.type) or column_id(a) not in t.cols:
                continue
            pc = pair_cost(before.get(d.name), after.get(a.name))
            if pc is not None:
                costs[(d.name, a.name)], scale[(d.name, a.name)] = pc
    out = {old: (new, scale[(old, new)], costs[(old, new)]) for old, new in assign(costs).items()}
    t.ctx.cache.findings.put(key, (out,))
    return out


TWO_STEP_COST = 0.05  # a column written beside the old one must match it closely (no shared commit)


def _added_before(t: Table, ref: ColumnRef, since: int, ch: SchemaChange) -> tuple[str, int] | None:
    """A column added by an earlier change (after vid `since`, before `ch` dropped `ref`) that took
    over `ref`'s values (a restatement in two steps: the new column written beside the old one,
    the old one dropped later): `ref`'s statistics just before the new column appeared against the
    new column's just before `ref` was dropped, equal up to a power of ten. A column that continues
    a column its own change dropped is not a candidate. (name, k) of the cheapest, or None."""
    costs: dict[tuple[str, str], float] = {}
    scale: dict[tuple[str, str], int] = {}
    then = stats_at(t, ch.vid - 1)
    for add in t.tl.changes_after(since):
        if add.vid >= ch.vid or not add.added:
            continue
        taken = {new for new, _k, _c in rename_map(t, add).values()}
        before = stats_at(t, add.vid - 1).get(ref.name)
        for a in add.added:
            if a.name in taken or column_id(a) not in t.cols or type_family(a.type) != type_family(ref.type):
                continue
            pc = pair_cost(before, then.get(a.name) or stats_at(t, add.vid).get(a.name))
            if pc is not None and pc[0] <= TWO_STEP_COST:
                costs[(ref.name, a.name)], scale[(ref.name, a.name)] = pc
    got = assign(costs).get(ref.name)
    return None if got is None else (got, scale[(ref.name, got)])


def _rename_candidate(t: Table, ref: ColumnRef, basis_stats: ColumnStats | None,
                      ch: SchemaChange | None, since: int = 0) -> tuple[str, int | None] | None:
    """The column that continues `ref`, dropped by `ch`: one `ch` added (see `rename_map`), or one
    an earlier change after vid `since` added beside it (`_added_before`): (its name, k). Without
    statistics of `ref` before the change, the basis statistics against today's decide (one to one
    over the change's columns as well)."""
    if ch is None:
        return None
    m = rename_map(t, ch)
    if ref.name in m:
        new, k, _c = m[ref.name]
        return _named_now(t, ch, new), k
    earlier = _added_before(t, ref, since, ch)
    if earlier is not None:
        return earlier
    if (stats_at(t, ch.vid - 1).get(ref.name) or {}).get("max") is not None:
        return None  # the rows before the change were seen: no added column continues this one
    costs: dict[tuple[str, str], float] = {}
    scale: dict[tuple[str, str], int] = {}
    bs = None if basis_stats is None else basis_stats.model_dump()
    for a in ch.added:
        if type_family(a.type) == type_family(ref.type) and column_id(a) in t.cols:
            pc = pair_cost(bs, t.stat(a.name))
            if pc is not None:
                costs[(ref.name, a.name)], scale[(ref.name, a.name)] = pc
    got = assign(costs).get(ref.name)
    return None if got is None else (_named_now(t, ch, got), scale[(ref.name, got)])


def _named_now(t: Table, ch: SchemaChange, name: str) -> str:
    """The current name of the column `ch` added as `name` (followed by field id: renamed since, the
    fix names the column there is now)."""
    cid = next((i for i, c in ch.after.items() if c.name == name), None)
    cur = t.cols.get(cid) if cid is not None else None
    return cur.name if cur is not None else name


_INT_RANK = {"TINYINT": 1, "SMALLINT": 2, "INTEGER": 3, "BIGINT": 4, "HUGEINT": 5}
_DECIMAL = re.compile(r"DECIMAL\((\d+),\s*(\d+)\)")


def widens(before: object, after: object) -> bool:
    """Is `before` -> `after` a widening every value survives unchanged (a wider integer, FLOAT to
    DOUBLE, a decimal with more digits at the same scale)? Such a change, which loads make when a
    value needs more room, makes no claim about the column false."""
    b, a = duck_type(before), duck_type(after)
    if b is None or a is None:
        return False
    if b in _INT_RANK and a in _INT_RANK:
        return _INT_RANK[a] >= _INT_RANK[b]
    if (b, a) == ("FLOAT", "DOUBLE"):
        return True
    mb, ma = _DECIMAL.fullmatch(b.replace(" ", "")), _DECIMAL.fullmatch(a.replace(" ", ""))
    return mb is not None and ma is not None and mb[2] == ma[2] and int(ma[1]) >= int(mb[1])


def column_findings(t: Table, ann: Annotation, refs: list[ColumnRef], missing_reason: str | None = None,
                     missing_status: str = "stale") -> list[Finding]:
    """Dropped / renamed / retyped columns among `refs`. `missing_reason` replaces column_dropped
    (join_key_missing for relationships, verified_query_fails for verified queries)."""
    out = []
    b = ann.provenance.basis
    label = f"{t.name}.{ann.column}" if ann.column else t.name
    for ref in refs:
        fate, cur, ch = _fate(t, ref, b.vid)
        ev = [ch.vid] if ch else []
        times = [ch.time] if ch else []
        if fate == "renamed" and cur is not None:
            out.append(finding(ann, label, missing_reason or "column_renamed", "stale",
                                f"column {ref.name!r} (id {ref.id}) is now called {cur.name!r}",
                                ev or [t.obj.vid], times, {"column": ref.name, "now": cur.name},
                                f"renamed to {cur.name}",
                                [make_fix("rename", old=ref.name, new=cur.name, scale=0)],
                                cause=cause_of("rename", t.name, ch.vid if ch else None, ref.name)))
        elif fate == "type" and cur is not None and not widens(ref.type, str(cur.type)):
            from_t, to_t = ref.type, str(cur.type)
            status = "suspect" if type_family(from_t) == type_family(to_t) else "stale"
            out.append(finding(ann, label, "column_type_changed", status,
                                f"column {ref.name!r} changed type from {from_t} to {to_t}",
                                ev or [t.obj.vid], times, {"column": ref.name, "before": from_t, "after": to_t},
                                cause=cause_of("retype", t.name, ch.vid if ch else None, ref.name)))
        elif fate == "dropped":
            cand = _rename_candidate(t, ref, b.stats.get(ref.name), ch, b.vid)
            when = f" at vid {ch.vid} ({day_of(ch.time)})" if ch else ""
            if missing_reason is not None:
                sugg = None
                fixes = []
                if cand:
                    sugg = f"likely renamed to {cand[0]}" + (f", unit changed ({unit_word(cand[1])})" if cand[1] else "")
                    fixes = [make_fix("rename", old=ref.name, new=cand[0], scale=cand[1] or 0)]
                out.append(finding(ann, label, missing_reason, missing_status,
                                    f"column {ref.name!r} it uses was dropped{when}", ev or [t.obj.vid], times,
                                    {"column": ref.name, **({"candidate": cand[0], "scale_exp": cand[1]} if cand else {})},
                                    sugg, fixes, cause=cause_of("rename" if cand else "drop", t.name,
                                                              ch.vid if ch else None, ref.name)))
            elif cand is not None:
                name, k = cand
                unit_changed = k not in (None, 0)
                reason = "unit_drift" if unit_changed and ann.field == "unit" else "column_renamed"
                sugg = f"likely renamed to {name}" + (f", unit changed ({unit_word(k)})" if unit_changed and k else "")
                out.append(finding(ann, label, reason, "stale",
                                    f"column {ref.name!r} was dropped{when} and "
                                    + (f"{name!r}" if ch is None or any(c.name == name for c in ch.added)
                                       else f"the column now called {name!r}")
                                    + " added in the same commit with matching statistics", ev or [t.obj.vid], times,
                                    {"column": ref.name, "candidate": name, "scale_exp": k,
                                     "basis_stats": b.stats[ref.name].model_dump() if ref.name in b.stats else None,
                                     "candidate_stats": t.stat(name)}, sugg,
                                    [make_fix("rename", old=ref.name, new=name, scale=k if unit_changed and k else 0)],
                                    cause=cause_of("rename", t.name, ch.vid if ch else None, ref.name)))
            else:
                out.append(finding(ann, label, "column_dropped", "stale",
                                    f"column {ref.name!r} was dropped{when}", ev or [t.obj.vid], times,
                                    {"column": ref.name}, cause=cause_of("drop", t.name, ch.vid if ch else None, ref.name)))
    return out


MULTIPLIED = 1.5  # a commit that leaves more rows than this times those before it rebuilt the table finer


def additive(t: Table, ch: SchemaChange) -> bool:
    """A schema change that cannot make a claim about the table as a whole false: it dropped and
    renamed nothing and changed no column's type family (a nullability flag or a widening only),
    and the columns it added are not a versioning shape (a flag and a validity date) and cannot
    have split the rows: they hold no values yet (a schema-only change), or came with no rebuild
    that multiplied the rows (an append that carries a new column beside the old rows). Evidence:
    the schema history and the table's row counts and statistics either side of the change."""
    if ch.dropped or versioning(ch.added):
        return False
    for i, c in ch.after.items():
        b = ch.before.get(i)
        if b is not None and (b.name.lower() != c.name.lower() or type_family(b.type) != type_family(c.type)):
            return False
    if not ch.added:
        return True
    after = stats_at(t, ch.vid)
    rb, ra = rows_at(t, ch.vid - 1), rows_at(t, ch.vid)
    grew = isinstance(rb, int) and isinstance(ra, int) and rb > 0 and ra > MULTIPLIED * rb
    # a column that holds values and came with a rebuild that multiplied the rows may split them
    return not (grew and any((after.get(c.name) or {}).get("max") is not None for c in ch.added))


def touched(ch: SchemaChange) -> set[str]:
    """Names (before and after, lower case) of the columns `ch` renamed or gave another type family."""
    out: set[str] = set()
    for i, c in ch.after.items():
        b = ch.before.get(i)
        if b is not None and (b.name.lower() != c.name.lower() or type_family(b.type) != type_family(c.type)):
            out |= {b.name.lower(), c.name.lower()}
    return out


def renames(ch: SchemaChange, t: Table | None = None) -> dict[str, str]:
    """The columns `ch` renamed, lower case old -> new name: in place (the same field id, the same type
    family) or, with `t`, dropped and added in the same commit with matching statistics (`rename_map`)."""
    out = {b.name.lower(): c.name.lower() for i, c in ch.after.items() if (b := ch.before.get(i)) is not None
           and b.name.lower() != c.name.lower() and type_family(b.type) == type_family(c.type)}
    if t is not None and ch.dropped and ch.added:
        out.update({old.lower(): new.lower() for old, (new, _k, _c) in rename_map(t, ch).items()})
    return out


ROWS_PER = ("row per", "rows per", "row for each", "one row each")  # prose that states a table's grain
# prose saying to add the rows up across a key for a total ("sum over regions for a company total"): true only
# while each key has one row, as a grain statement is; not a text saying never to ("never sum over dates")
ROWS_SUMMED = re.compile(r"(?<!never )(?<!not )\b(?:sum(?:med)?|add(?:ed)?\s+up)\s+(?:over|across)\b[^.;]*\btotal\b",
                         re.IGNORECASE)
# prose saying the table holds one snapshot, the latest ("lifetime value as of the last full month"): true only
# while a single as-of date is there; a table that starts keeping several snapshots beside it no longer is
AS_OF_LATEST = re.compile(r"\bas of (?:the )?(?:last|latest|most recent|current|previous|prior|this)\b", re.IGNORECASE)
# prose saying the rows hold each thing's present state ("customers with their current address"): one row
# per thing as it is now, which a table keeping past versions beside it no longer is; unless the text speaks of
# versions, history or snapshots already (it was written knowing)
CURRENT_STATE = re.compile(r"\b(?:current|currently|latest|most recent|up[- ]to[- ]date)\b", re.IGNORECASE)
KNOWS_VERSIONS = re.compile(r"\bversion|\bhistor|\bscd\b|\bvalid_(?:from|to)\b|\bis_current\b|\bsnapshot",
                            re.IGNORECASE)
_SELECT_STAR = re.compile(r"\bselect\s+(?:distinct\s+)?(?:[\w\"]+\.)?\*", re.IGNORECASE)


def names(text: str, name: str) -> bool:
    """Whether `text` names the column `name` as an identifier (not inside a longer one)."""
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", text, re.IGNORECASE) is not None


def splits_rows(t: Table, ch: SchemaChange) -> bool:
    """Did `ch` change what a row is? It added a versioning shape (a flag and a validity date), or
    added columns that hold values in a rebuild that multiplied the rows (see `additive`)."""
    if versioning(ch.added):
        return True
    if not ch.added:
        return False
    after = stats_at(t, ch.vid)
    rb, ra = rows_at(t, ch.vid - 1), rows_at(t, ch.vid)
    grew = isinstance(rb, int) and isinstance(ra, int) and rb > 0 and ra > MULTIPLIED * rb
    return grew and any((after.get(c.name) or {}).get("max") is not None for c in ch.added)


def _referred(col: lake.Column, anns: list[Annotation], own: Annotation | None) -> bool:
    """Does another claim of the table refer to `col`: one of its own annotations (by id or name),
    or a grain, relationship, metric, verified query or other column's claim that names it?"""
    cid, low = column_id(col), col.name.lower()
    for a in anns:
        if own is not None and a.key == own.key:
            continue
        if a.kind == "column" and (a.column_id == cid or (a.column or "").lower() == low):
            return True
        if a.kind != "table" or a.field == "grain":
            if names(json.dumps(a.value, default=str), col.name):
                return True
    return False


def reads_changed(ch: SchemaChange, sql: str) -> bool:
    """Does the SQL text read what the schema change `ch` changed as a column: it names a column
    `ch` dropped, renamed or gave another type family, or selects every column (`SELECT *`) and
    `ch` added or dropped one? What the SQL means then changed, whatever one answer shows. A change
    that only added columns the SQL does not name concerns it through its rows alone (`splits_rows`),
    which its answer shows."""
    gone = touched(ch) | {c.name.lower() for c in ch.dropped}
    return any(names(sql, n) for n in gone) or bool((ch.added or ch.dropped) and _SELECT_STAR.search(sql))


def retypes_read(ch: SchemaChange, sql: str) -> bool:
    """Does the schema change `ch` reach the query `sql` only through the type of columns it reads:
    every column the SQL names that `ch` touched keeps its name and changed its type family (in place,
    or dropped and re-added under its name in one rebuild), none was renamed or dropped for good, and
    the SQL does not select every column? The engine may cast the new type back where the SQL compares
    or joins the column (a key sent as zero-padded text still equals the number), so whether what the
    SQL answers changed shows in its answer across the change, as for a split of its rows."""
    if _SELECT_STAR.search(sql):
        return False
    read = [n for n in touched(ch) | {c.name.lower() for c in ch.dropped} if names(sql, n)]
    return bool(read) and set(read) <= retyped(ch)


def retyped(ch: SchemaChange) -> set[str]:
    """Names (lower case) of the columns `ch` gave another type family and nothing else: the same name
    before and after (in place, or dropped and re-added under its name in one rebuild). What prose
    says a column is survives that (an id stored as text is still an id), as a column's own
    description does (`claim_rules.own_column_claim`); the claims bound to the type (unit, enum,
    sample values, metrics, queries, joins) are judged on their own."""
    before = {c.name.lower(): c for c in ch.before.values()}
    after = {c.name.lower(): c for c in ch.after.values()}
    return {n for n, c in after.items() if n in before and type_family(before[n].type) != type_family(c.type)}


def names_columns(ch: SchemaChange, text: object, t: Table | None = None, anns: list[Annotation] | None = None,
                  sql: bool = False, own: Annotation | None = None) -> bool:
    """Does the (non-additive) schema change `ch` touch what a table-level claim `text` says? A
    claim depends on a column only when it names it, so a change makes the claim false when:
    - the text names a column `ch` dropped, renamed or gave another type (a column dropped and
      re-added under its name in one rebuild is retyped). A rename (`renames`: in place, or dropped
      and added with matching statistics) changes a name, not what the column holds, so prose is
      made false by it only when it uses the old name as a name, by the rule the rename of a
      column's own annotations reads (`claim_rules.prose_names`: a plain-word name such as
      `partition` only code-quoted or qualified); a drop changes what the column holds, so any
      mention of it as an identifier counts (SQL names a column as an identifier, always); a change
      of type alone (`retyped`) counts for SQL, not for prose (what the column is survives it);
    - `ch` changed what a row is (`splits_rows`, with `t`): a query's answer (`sql`) always
      depends on the rows; prose only when it states the grain ("one row per ...", or "sum over
      regions": `ROWS_SUMMED`) or names an added column, or, `ch` adding versions, says the rows
      hold the present state (`CURRENT_STATE`: "customers with their current address") and
      nothing of versions or history;
    - a query selects every column (`SELECT *`) and `ch` added or dropped one;
    - prose (not `sql`), with the table's annotations `anns`: `ch` dropped a column that no other
      claim of the table refers to (no annotation of its own, no grain, relationship, metric or
      verified query names it): the table's own text is then the only claim that may have
      covered it, and the drop is not left silent.
    A drop or retype of a column other claims refer to is reported on those claims (column_dropped,
    join_key_missing, verified_query_fails...), not on every table-level text. Without `t` and
    `anns` (older callers) a change that added or dropped columns always may."""
    low = str(text or "")

    def said(name: str) -> bool:  # SQL names a column as an identifier; prose by `prose_names`
        return names(low, name) if sql or t is None else prose_names(low, name, t.name)

    readded = {c.name.lower() for c in ch.added} & {c.name.lower() for c in ch.dropped}
    moved = renames(ch, t)
    gone = touched(ch) | {c.name.lower() for c in ch.dropped}
    if not sql and t is not None:  # prose: a column that only changed type is what it was (`retyped`)
        gone -= retyped(ch)
    if any(said(n) if n in moved or n in moved.values() else names(low, n) for n in gone):
        return True
    if not sql and t is not None:  # prose saying a dropped column's name in words ("the GMT offset")
        cols = [c.name for c in ch.before.values()]
        if any(phrase_names(low, c.name, cols) for c in ch.dropped if c.name.lower() not in readded | set(moved)):
            return True
    if sql and (ch.added or ch.dropped) and _SELECT_STAR.search(low):
        return True
    if t is None:
        return bool(ch.added or ch.dropped)
    if splits_rows(t, ch):
        if sql:
            return True
        if any(p in low.lower() for p in ROWS_PER) or ROWS_SUMMED.search(low) or \
                any(names(low, c.name) and not of_another_table(t, low, c.name) for c in ch.added):
            return True
        if versioning(ch.added) and CURRENT_STATE.search(low) and not KNOWS_VERSIONS.search(low):
            return True  # "with their current address": past versions now sit beside the current rows
    if sql or anns is None:
        return False
    return any(not _referred(c, anns, own) for c in ch.dropped if c.name.lower() not in readded | set(moved))


def material_changes(t: Table, since: int, text: object = None, anns: list[Annotation] | None = None,
                     own: Annotation | None = None) -> list[SchemaChange]:
    """The schema changes after vid `since` that may make a table-level claim false (`additive`
    ones left out; with the claim's `text`, those that do not touch it too: `names_columns`)."""
    return [ch for ch in t.tl.changes_after(since) if not additive(t, ch)
            and (text is None or names_columns(ch, text, t, anns, own=own))]


def table_level(t: Table, ann: Annotation, anns: list[Annotation] | None = None) -> list[Finding]:
    """A table description or instructions older than a schema change that touches what it says
    (`names_columns`: the text names a changed column, states a grain the change split, or stands
    alone for a dropped column nothing else describes). A table's `not_for_reporting` reason is read
    for the columns it names only (it describes why not to report from the table, not the table's
    columns: the round-20 cryptic tester's "raw input: budat_h is text" after budat_h was renamed)."""
    b = ann.provenance.basis
    out: list[Finding] = []
    nfr = ann.field == "not_for_reporting"
    if nfr and not (isinstance(ann.value, dict) and isinstance(ann.value.get("reason"), str)):
        return []
    text = ann.value["reason"] if nfr else ann.value
    chs = material_changes(t, b.vid, text, None if nfr else anns if anns is not None else [ann], own=ann)
    if chs:
        added = [c.name for ch in chs for c in ch.added]
        dropped = [c.name for ch in chs for c in ch.dropped]
        renamed = [(was.name, c.name) for ch in chs for i, c in ch.after.items()
                   if (was := ch.before.get(i)) is not None and was.name.lower() != c.name.lower()]
        what = "; ".join(x for x in (f"added {', '.join(added)}" if added else "",
                                     f"dropped {', '.join(dropped)}" if dropped else "",
                                     f"renamed {', '.join(f'{o} to {n}' for o, n in renamed)}" if renamed else "")
                         if x) or "types changed"
        c0 = chs[0]
        kind = "versions" if versioning(c0.added) else "grain" if len(c0.added) > len(c0.dropped) else "schema"
        # one column the text names renamed, and nothing added or dropped: in place (the review rewrites
        # the name; other columns renamed beside it that the text does not name leave it as it is: a
        # rename changes a name, not what a column holds), or dropped and added in one commit with
        # matching statistics (`rename_map`), with the scale its values moved by (the review rewrites no
        # prose across a scale: a person does, told the new name and the scale)
        moved: list[tuple[str, str, int]] = []
        if renamed and not added and not dropped:
            # each name it says followed through every rename since (a later one the text does not touch
            # is not among `chs`: a -> b, then b -> c, is a -> c)
            later = [(was.name, c.name) for ch in t.tl.changes_after(b.vid) for i, c in ch.after.items()
                     if (was := ch.before.get(i)) is not None and was.name.lower() != c.name.lower()]
            now = _chained(later)
            moved = [(o, now.get(o, n), 0) for o, n in _chained(renamed).items()]
        elif not renamed and len(chs) == 1 and len(added) == 1 and len(dropped) == 1:
            moved = [(o, n, k or 0) for o, (n, k, _c) in rename_map(t, c0).items()]
        said = [(o, n, k) for o, n, k in moved if prose_names(str(text or ""), o, t.name)]
        fixes = [make_fix("rename", old=said[0][0], new=said[0][1], scale=said[0][2])] \
            if len(said) == 1 and isinstance(text, str) else []
        out.append(finding(ann, t.name, "schema_changed", "suspect",
                            f"the schema changed {len(chs)} time(s) since this was written: {what}",
                            [c.vid for c in chs], [c.time for c in chs],
                            {"added": added, "dropped": dropped, "renamed": [list(r) for r in renamed]},
                            suggestion=(f"its text names {said[0][0]}, now {said[0][1]}: rewrite the name"
                                        + (f" and what it says of the values ({unit_word(said[0][2])})"
                                           if said[0][2] else "")) if fixes else None,
                            fixes=fixes, cause=cause_of(kind, t.name, c0.vid)))
    rows = t.stats.get("row_count")
    if ann.field == "description" and isinstance(rows, int) and b.row_count and rows > 0:
        ratio = rows / b.row_count
        if ratio >= 10 or ratio <= 0.1 or len(chs) >= 3:
            data = t.tl.data_after(b.vid)
            out.append(finding(ann, t.name, "unreviewed_while_changing", "suspect",
                                f"not reviewed while the table changed: rows {b.row_count} -> {rows}, "
                                f"{len(chs)} schema change(s), {len(data)} load(s)",
                                [v for v, _ in data[-1:]] or [t.obj.vid], [tt for _, tt in data[-1:]],
                                {"basis_rows": b.row_count, "rows": rows, "schema_changes": len(chs)}))
    return out


def _chained(renamed: list[tuple[str, str]]) -> dict[str, str]:
    """Renames in commit order, each column's first name -> its name now (a -> b, then b -> c: a -> c)."""
    out: dict[str, str] = {}
    for o, n in renamed:
        first = next((k for k, v in out.items() if v.lower() == o.lower()), None)
        out[first if first is not None else o] = n
    return out


def column_prose(t: Table, ann: Annotation) -> list[Finding]:
    """A column's prose (its description...) that names another column of its table by a name a
    schema change after it renamed or dropped (the rules table prose is read by, `names_columns`: a
    renamed one by `prose_names`, a plain-word name only code-quoted or qualified; a dropped one as
    any identifier, or its name said in words). The column's own name is `column_fate`'s (its
    annotations follow its field id). A rename: `column_renamed`, the text to rewrite with the new
    name (`investigate`: the review cannot rewrite prose); a drop: `column_dropped`, no fix. A column
    dropped and re-added under its name with another type (`retyped`) is no drop: prose says what the
    column is, which survives its type, as table prose reads it."""
    b = ann.provenance.basis
    text = " ".join(strings_of(ann.value))
    if not text or ann.column_id is None:
        return []
    out: list[Finding] = []
    seen: set[str] = set()
    for ch in t.tl.changes_after(b.vid):
        own = {c.name.lower() for c in (ch.before.get(ann.column_id), ch.after.get(ann.column_id)) if c is not None}
        moved = renames(ch, t)
        kept = retyped(ch)  # dropped and re-added under its name with another type: what it is survives
        gone = [c.name for c in ch.dropped if c.name.lower() not in moved and c.name.lower() not in kept]
        for old, new in list(moved.items()) + [(g, None) for g in gone]:
            if old.lower() in own or old.lower() in seen:
                continue
            name = next((c.name for c in list(ch.before.values()) + list(ch.dropped) if c.name.lower() == old), old)
            # a drop takes away what the column held, so any mention of it as an identifier counts (a plain
            # word too: "in the period and region" once `region` is dropped), as table prose reads it
            # (`names_columns`); a rename keeps it, so only its old name used as a name (`prose_names`)
            hit = prose_names(text, name, t.name) if new is not None else \
                names(text, name) or phrase_names(text, name, [c.name for c in ch.before.values()])
            if not hit:
                continue
            seen.add(old.lower())
            when = f"at vid {ch.vid} ({day_of(ch.time)})"
            if new is not None:
                cur = next((c.name for c in ch.after.values() if c.name.lower() == new.lower()), new)
                k = rename_map(t, ch).get(name, (cur, 0, 0.0))[1] if ch.dropped and ch.added else 0
                # prose renamed by name (the review rewrites the old name in the text); across a scale
                # change, which may make what the text says of the values false, the rename with its scale
                # (the review rewrites no such text: a person does, told the new name and the scale)
                fix = make_fix("rename", old=name, new=cur, scale=k or 0) if isinstance(ann.value, str) \
                    else make_fix("investigate", columns=[cur])
                out.append(finding(ann, f"{t.name}.{ann.column}", "column_renamed", "stale",
                                   f"its text names column {name!r}, renamed {cur!r} {when}", [ch.vid], [ch.time],
                                   {"column": name, "now": cur, "named_in_text": True},
                                   f"its text names the old name {name}: rewrite it to say {cur}", [fix],
                                   cause=cause_of("rename", t.name, ch.vid, name)))
            else:
                out.append(finding(ann, f"{t.name}.{ann.column}", "column_dropped", "stale",
                                   f"its text names column {name!r}, dropped {when}", [ch.vid], [ch.time],
                                   {"column": name, "named_in_text": True},
                                   cause=cause_of("drop", t.name, ch.vid, name)))
    return out


_QUALIFIED = re.compile(r"(?<![A-Za-z0-9_.])((?:[A-Za-z0-9_]+\.)+)([A-Za-z0-9_]+)(?![A-Za-z0-9_])(?!\.[A-Za-z_])")


def table_forms(ctx: Context) -> dict[str, set[str]]:
    """How prose may name each table of the snapshot: its full name and its trailing parts
    (`acme.ps.likp_d`, `ps.likp_d`, `likp_d`), lower case -> the tables that form names (cached per vid)."""
    key = ("table_forms", ctx.vid)
    got = ctx.cache.findings.take(key)
    if got is not None:
        return got[0]
    out: dict[str, set[str]] = {}
    for name in ctx.tables():
        parts = name.lower().split(".")
        for i in range(len(parts)):
            out.setdefault(".".join(parts[i:]), set()).add(name)
    ctx.cache.findings.put(key, (out,))
    return out


_DOTTED = re.compile(r"(?<![A-Za-z0-9_.])[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*")


def of_another_table(t: Table, text: str, name: str) -> bool:
    """Does prose `text` name the column `name` only where it speaks of another table's column: every
    clause (text between sentence stops) naming it also names another table of the snapshot
    (`table_forms`: its full name, or a trailing part naming that table alone) that has a column of that
    name, or qualifies it by that table ("join acme.ps.deliveries on doc_ref and is_current",
    "deliveries.is_current": the deliveries' is_current, not `t`'s)?"""
    said = [c for c in clauses(text) if names(c, name)]
    if not said:
        return False
    low = name.lower()

    def elsewhere(clause: str) -> bool:
        for u in _other_tables(t.ctx, t, clause):
            obj = t.ctx.table(u)
            if obj is not None and any(c.name.lower() == low for c in lake.TableValue.from_raw(obj.value).columns):
                return True
        return False

    return all(elsewhere(c) for c in said)


def qualified_elsewhere(ctx: Context, t: Table, text: str) -> list[tuple[str, str]]:
    """(table, column) of each identifier in `text` qualified by the name of another table of the
    snapshot (its full name or a trailing part naming that table alone: `likp_d.blart_x`,
    `acme.ps.likp_d.blart_x`). An unqualified word, or a qualifier that names no table or several
    (`e.g.`, `v1.status`), is not a claim about another table's column."""
    forms = table_forms(ctx)
    out: list[tuple[str, str]] = []
    for m in _QUALIFIED.finditer(text):
        owners = forms.get(m.group(1)[:-1].lower(), set())
        if len(owners) == 1 and (u := next(iter(owners))) != t.name and (u, m.group(2).lower()) not in out:
            out.append((u, m.group(2).lower()))
    return out


_IDENT = re.compile(r"(?<![A-Za-z0-9_.])[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]*[A-Za-z0-9](?![A-Za-z0-9_.])")


def _other_tables(ctx: Context, t: Table, clause: str) -> list[str]:
    """The tables of the snapshot other than `t` that `clause` names (`table_forms`: a full name or a
    trailing part naming one table alone; a column qualified by one names it too), in order."""
    forms = table_forms(ctx)
    out: list[str] = []
    for m in _DOTTED.finditer(clause):
        parts = m.group(0).lower().split(".")
        for i in range(len(parts), 0, -1):
            owners = forms.get(".".join(parts[:i]), set())
            if len(owners) == 1:
                u = next(iter(owners))
                if u != t.name and u not in out:
                    out.append(u)
                break
    return out


def clause_elsewhere(ctx: Context, t: Table, text: str) -> list[tuple[str, str]]:
    """(table, column) of each identifier-shaped word (one with an underscore: `is_current`, not
    `status`, which may mean anything) of a clause that names exactly one other table of the snapshot
    (`_other_tables`), unless `t` has a column of that name (then the word is its own): "join
    acme.ps.deliveries on doc_ref and is_current" speaks of the deliveries' is_current. Qualified names
    are `qualified_elsewhere`'s."""
    out: list[tuple[str, str]] = []
    for clause in clauses(text):
        others = _other_tables(ctx, t, clause)
        if len(others) != 1:
            continue
        for w in _IDENT.findall(clause):
            if t.col(w) is None and (others[0], w.lower()) not in out:  # a column of its own table is its own
                out.append((others[0], w.lower()))
    return out


def prose_elsewhere(ctx: Context, t: Table, ann: Annotation, tables: dict[str, Table | None]) -> list[Finding]:
    """Prose (a description, grain text...) naming a column of another table qualified by that table's
    name (`qualified_elsewhere`) that a schema change of that table after the annotation renamed or
    dropped (`renames`: in place, or paired by statistics in the commit that dropped it). A rename:
    `column_renamed`, the text to rewrite with the new name (`investigate {table, columns}`: the review
    cannot rewrite prose, as `column_prose`); a drop: `column_dropped`, no fix."""
    text = " ".join(strings_of(ann.value))
    if not text:
        return []
    b = ann.provenance.basis
    target = f"{t.name}.{ann.column}" if ann.kind == "column" and ann.column else t.name
    out: list[Finding] = []
    for other, col in qualified_elsewhere(ctx, t, text) + clause_elsewhere(ctx, t, text):
        u = get_table(ctx, other, tables)
        if u is None or u.col(col) is not None:
            continue  # the table is gone (its own checks say so), or the name is still a column of it
        for ch in u.tl.changes_after(b.vid):
            moved = renames(ch, u)
            old = next((c.name for c in list(ch.before.values()) + list(ch.dropped) if c.name.lower() == col), None)
            if old is None or (col not in moved and all(c.name.lower() != col for c in ch.dropped)):
                continue
            when = f"at vid {ch.vid} ({day_of(ch.time)})"
            if col in moved:
                new = next((c.name for c in u.cols.values() if c.name.lower() == moved[col]), moved[col])
                out.append(finding(ann, target, "column_renamed", "stale",
                                   f"its text names {other}.{old}, renamed {new!r} {when}", [ch.vid], [ch.time],
                                   {"table": other, "column": old, "now": new, "named_in_text": True},
                                   f"its text names the old name {other}.{old}: rewrite it to say {new}",
                                   [make_fix("investigate", table=other, columns=[new])],
                                   cause=cause_of("rename", other, ch.vid, old)))
            else:
                out.append(finding(ann, target, "column_dropped", "stale",
                                   f"its text names {other}.{old}, dropped {when}", [ch.vid], [ch.time],
                                   {"table": other, "column": old, "named_in_text": True},
                                   cause=cause_of("drop", other, ch.vid, old)))
            break
    return out
