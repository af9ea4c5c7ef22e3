"""Staleness, computed never stored: each annotation's basis against the snapshot history.

    sm.staleness(cat, table=None, snapshot=None, depth="metadata", now=None) -> list[Finding]

`metadata` reads only the catalog: schema history (`cat.history`), the commit log, table and
partition statistics. `data` adds DuckDB checks at the snapshot: grain keys unique, relationship
match rate and cardinality, enums and sample values present, verified queries still run with the
same result. Findings that do not depend on the clock are cached per (table, snapshot vid, depth)
and, for the whole catalog, per (snapshot vid, depth); the clock-dependent ones (freshness SLA, not
loaded since) are recomputed from cached timelines, for the whole catalog only for the tables whose
`time_due` (cached per vid) is before `now`: a warm call grows with its answer, not with the tree.
"""

from __future__ import annotations

import bisect
import hashlib
import math
import re
import statistics
import time as _time
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any

import catalog_core as cc
from catalog_core import lake
from catalog_core.api import CatalogAPI, SnapshotRef
from catalog_core.errors import CatalogError, InvalidValueError
from catalog_core.model import Obj, TimeArg, parse_time
from semantic import _bounded, progress
from semantic._bounded import LimitExceededError, literals
from semantic._sql import quote
from semantic._tables import column_id, require_table, table_columns
from semantic.annotations import fingerprint, parse_duration
from semantic.completeness import upstream_periods
from semantic.errors import did_you_mean
from semantic.history import Context, SchemaChange, Timeline, type_family
from semantic.models import Annotation, ColumnRef, ColumnStats, Evidence, Finding, Fix

__all__ = ["staleness", "time_findings", "time_due", "table_findings", "resolve_now", "worst", "DEPTHS", "finding_id",
           "undismissed", "propagated", "CHANGE_REASONS"]

DEPTHS = ("metadata", "data")
SCD2 = ("valid_from", "valid_to", "is_current")
_RANK = {"fresh": 0, "suspect": 1, "stale": 2}
MATCH_LOW = 0.95          # relationship match rate below this is join_match_low
DAY = 86400.0


def worst(statuses: Iterable[str]) -> str:
    out = "fresh"
    for s in statuses:
        if _RANK[s] > _RANK[out]:
            out = s
    return out


def resolve_now(now: object) -> float:
    if now is None:
        return _time.time()
    t = parse_time(now)
    if t is None:
        raise InvalidValueError(f"now must be seconds since the epoch or an ISO-8601 time, got {now!r}")
    return t


def _day(t: float) -> str:
    return datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%d")


def _num(v: object) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def scale_of(before: ColumnStats | dict[str, Any] | None, after: dict[str, Any] | None) -> int | None:
    """k when `after`'s numeric range is `before`'s scaled by 10^k (k may be 0), else None."""
    if before is None or after is None:
        return None
    b = before if isinstance(before, dict) else before.model_dump()
    bmax, amax, bmin, amin = _num(b.get("max")), _num(after.get("max")), _num(b.get("min")), _num(after.get("min"))
    if not bmax or not amax or (bmax > 0) != (amax > 0):
        return None
    lr = math.log10(abs(amax / bmax))
    k = round(lr)
    if abs(lr - k) > 0.15:
        return None
    if bmin and amin:
        if (bmin > 0) != (amin > 0) or abs(math.log10(abs(amin / bmin)) - k) > 0.5:
            return None
    elif (bmin or amin) and k != 0:  # one range starts at zero, the other does not
        return None
    return k


def _finding(ann: Annotation | None, target: str, reason: str, status: str, message: str, vids: Iterable[int],
             times: Iterable[float] = (), values: dict[str, Any] | None = None,
             suggestion: str | None = None, fixes: Iterable[Fix] = (), cause: str | None = None) -> Finding:
    """A finding. Invariant: a suggestion (prose for people) comes with at least one `Fix` (the same
    repair, typed, for programs); a program never needs to parse the suggestion. `cause` names the
    underlying change (see `_cause`); findings of one cause are merged into one by `merge_by_cause`."""
    fx = list(fixes)
    if suggestion is not None and not fx:
        raise ValueError(f"a {reason} finding with a suggestion needs its fixes")
    vs = list(dict.fromkeys([*([ann.vid] if ann is not None and ann.vid is not None else []), *vids]))
    key = None if ann is None else ann.key
    return Finding(target=target, annotation=key, status=status,  # type: ignore[arg-type]
                   reason=reason, message=message,  # type: ignore[arg-type]
                   evidence=Evidence(vids=vs, times=list(times), values=values or {}), suggestion=suggestion,
                   fixes=fx, annotations=[key] if key else [], cause=cause)


def _cause(kind: str, table: str, vid: int | None, detail: str | None = None) -> str:
    """The id of one underlying change: `kind:table@vid[:detail]` (e.g. `rename:acme.mart.x@122:net_cents`)."""
    return f"{kind}:{table}@{vid}" + (f":{detail}" if detail else "")


def _fix(action: str, **params: object) -> Fix:
    return Fix(action=action, params=params)  # type: ignore[arg-type]


def _unit_word(k: int) -> str:
    return f"values ×10^{k}" if k > 0 else f"values ÷10^{-k}"


# ------------------------------------------------------------------ per-table checks
class _Table:
    """One table at the snapshot: its object, timeline and current columns."""

    def __init__(self, ctx: Context, name: str, obj: Obj, tl: Timeline) -> None:
        self.ctx, self.name, self.obj, self.tl = ctx, name, obj, tl
        self.value = obj.value
        self.cols = {column_id(c): c for c in table_columns(self.value)}
        self.by_name = {c.name.lower(): c for c in self.cols.values()}
        self.stats = (self.value.get("stats") or {})
        self.col_stats: dict[str, Any] = self.stats.get("columns") or {}

    def col(self, name: str) -> lake.Column | None:
        return self.by_name.get(name.lower())

    def stat(self, name: str) -> dict[str, Any] | None:
        s = self.col_stats.get(name)
        return s if isinstance(s, dict) else None

    def recent_stats(self, since: int) -> dict[str, dict[str, Any]]:
        """Column stats of the latest data written after vid `since`: the partitions the latest
        load wrote (from the commit log), or the table's stats when it is not partitioned."""
        if not self.value.get("partition_by"):
            return self.col_stats
        acc: dict[str, dict[str, Any]] = {}
        for p in self.ctx.latest_partitions(self.name, since):
            for c, s in ((p.value.get("stats") or {}).get("columns") or {}).items():
                cur = acc.setdefault(c, {"min": None, "max": None})
                for k, better in (("min", lambda a, b: a < b), ("max", lambda a, b: a > b)):
                    v = s.get(k) if isinstance(s, dict) else None
                    try:
                        if v is not None and (cur[k] is None or better(v, cur[k])):
                            cur[k] = v
                    except TypeError:
                        pass
        return acc


def _name(c: lake.Column | None) -> str | None:
    return None if c is None else c.name


def _type(c: lake.Column | None) -> str | None:
    return None if c is None else c.type


def _fate(t: _Table, ref: ColumnRef, since: int) -> tuple[str, lake.Column | None, SchemaChange | None]:
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
    by = next((ch for ch in changes if _name(ch.after.get(ref.id)) != _name(ch.before.get(ref.id))
               and ref.id in ch.before), None)
    if cur.name != ref.name and cur.id == ref.id:
        return "renamed", cur, by
    if str(cur.type) != ref.type:
        retyped = next((c for c in changes if _type(c.after.get(column_id(cur))) != ref.type), None)
        return "type", cur, retyped
    return "ok", cur, None


def _stats_at(t: _Table, vid: int) -> dict[str, Any]:
    """The table's per-column statistics as of `vid` (its object's version then; {} when absent)."""
    key = ("stats_at", t.obj.path, vid)
    got = t.ctx.cache.findings.take(key)
    if got is None:
        obj = t.ctx.cat.get(t.obj.path, vid=vid) if vid > 0 else None
        cols = ((obj.value.get("stats") or {}).get("columns") or {}) if obj is not None else {}
        got = t.ctx.cache.findings.put(key, (cols,))
    return got[0]


def pair_cost(before: dict[str, Any] | None, after: dict[str, Any] | None) -> tuple[float, int] | None:
    """How well column statistics `after` continue `before` (the same values, perhaps scaled by
    10^k): (cost, k), lower is better, or None when they cannot be the same column. Numbers compare
    min and max on a log scale around the best power of ten; other values must keep their range.
    Null counts that differ add to the cost. Names never enter."""
    if not before or not after:
        return None
    nb, na = before.get("null_count"), after.get("null_count")
    null_cost = 0.0
    if isinstance(nb, int) and isinstance(na, int) and nb != na:
        null_cost = 0.5 * abs(nb - na) / max(nb, na, 1)
    pairs = [(before.get(k), after.get(k)) for k in ("min", "max")]
    nums = [(_num(b), _num(a)) for b, a in pairs]
    if all(b is not None and a is not None for b, a in nums):
        ratios: list[float] = []
        for b, a in nums:
            assert b is not None and a is not None
            if (b == 0) != (a == 0) or (b != 0 and (b > 0) != (a > 0)):
                return None
            if b:
                ratios.append(math.log10(abs(a / b)))
        if not ratios:
            return null_cost, 0
        k = round(sum(ratios) / len(ratios))
        cost = sum(abs(r - k) for r in ratios) / len(ratios)
        return (None if cost > 0.15 else (cost + null_cost, k))
    if any(b is None or a is None for b, a in pairs):
        return None
    try:
        same = all(str(b) == str(a) for b, a in pairs)
    except TypeError:
        return None
    return (null_cost, 0) if same else None


def assign(costs: dict[tuple[str, str], float]) -> dict[str, str]:
    """A one-to-one assignment of left to right names minimising the summed cost (greedy over the
    cost matrix, cheapest pair first; exact for the small, well-separated matrices of renames)."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for (a, b), _c in sorted(costs.items(), key=lambda kv: (kv[1], kv[0])):
        if a not in out and b not in used:
            out[a] = b
            used.add(b)
    return out


def _rename_map(t: _Table, ch: SchemaChange) -> dict[str, tuple[str, int, float]]:
    """The columns `ch` dropped that reappear among the columns it added, one to one, from the
    statistics of the rows either side of the change (the table's stats at ch.vid - 1 against those
    at ch.vid; the same rows when a table is rebuilt): old name -> (new name, k, cost). A pair needs
    the same type family and statistics equal up to a power of ten; names are not compared."""
    key = ("renames", t.obj.path, ch.vid)
    got = t.ctx.cache.findings.take(key)
    if got is not None:
        return got[0]
    before, after = _stats_at(t, ch.vid - 1), _stats_at(t, ch.vid)
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


def _rename_candidate(t: _Table, ref: ColumnRef, basis_stats: ColumnStats | None,
                      ch: SchemaChange | None) -> tuple[str, int | None] | None:
    """The column `ch` added that continues `ref` (see `_rename_map`): (its name, k). Without
    statistics either side of the change, the basis statistics against today's decide (one to one
    over the change's columns as well)."""
    if ch is None:
        return None
    m = _rename_map(t, ch)
    if ref.name in m:
        new, k, _c = m[ref.name]
        return new, k
    if _stats_at(t, ch.vid - 1):
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
    return None if got is None else (got, scale[(ref.name, got)])


def _column_findings(t: _Table, ann: Annotation, refs: list[ColumnRef], missing_reason: str | None = None,
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
            out.append(_finding(ann, label, missing_reason or "column_renamed", "stale",
                                f"column {ref.name!r} (id {ref.id}) is now called {cur.name!r}",
                                ev or [t.obj.vid], times, {"column": ref.name, "now": cur.name},
                                f"renamed to {cur.name}",
                                [_fix("rename", old=ref.name, new=cur.name, scale=0)],
                                cause=_cause("rename", t.name, ch.vid if ch else None, ref.name)))
        elif fate == "type" and cur is not None:
            from_t, to_t = ref.type, str(cur.type)
            status = "suspect" if type_family(from_t) == type_family(to_t) else "stale"
            out.append(_finding(ann, label, "column_type_changed", status,
                                f"column {ref.name!r} changed type from {from_t} to {to_t}",
                                ev or [t.obj.vid], times, {"column": ref.name, "before": from_t, "after": to_t},
                                cause=_cause("retype", t.name, ch.vid if ch else None, ref.name)))
        elif fate == "dropped":
            cand = _rename_candidate(t, ref, b.stats.get(ref.name), ch)
            when = f" at vid {ch.vid} ({_day(ch.time)})" if ch else ""
            if missing_reason is not None:
                sugg = None
                fixes = []
                if cand:
                    sugg = f"likely renamed to {cand[0]}" + (f", unit changed ({_unit_word(cand[1])})" if cand[1] else "")
                    fixes = [_fix("rename", old=ref.name, new=cand[0], scale=cand[1] or 0)]
                out.append(_finding(ann, label, missing_reason, missing_status,
                                    f"column {ref.name!r} it uses was dropped{when}", ev or [t.obj.vid], times,
                                    {"column": ref.name, **({"candidate": cand[0], "scale_exp": cand[1]} if cand else {})},
                                    sugg, fixes, cause=_cause("rename" if cand else "drop", t.name,
                                                              ch.vid if ch else None, ref.name)))
            elif cand is not None:
                name, k = cand
                unit_changed = k not in (None, 0)
                reason = "unit_drift" if unit_changed and ann.field == "unit" else "column_renamed"
                sugg = f"likely renamed to {name}" + (f", unit changed ({_unit_word(k)})" if unit_changed and k else "")
                out.append(_finding(ann, label, reason, "stale",
                                    f"column {ref.name!r} was dropped{when} and {name!r} added in the same commit "
                                    "with matching statistics", ev or [t.obj.vid], times,
                                    {"column": ref.name, "candidate": name, "scale_exp": k,
                                     "basis_stats": b.stats[ref.name].model_dump() if ref.name in b.stats else None,
                                     "candidate_stats": t.stat(name)}, sugg,
                                    [_fix("rename", old=ref.name, new=name, scale=k if unit_changed and k else 0)],
                                    cause=_cause("rename", t.name, ch.vid if ch else None, ref.name)))
            else:
                out.append(_finding(ann, label, "column_dropped", "stale",
                                    f"column {ref.name!r} was dropped{when}", ev or [t.obj.vid], times,
                                    {"column": ref.name}, cause=_cause("drop", t.name, ch.vid if ch else None, ref.name)))
    return out


def _unit_drift(t: _Table, ann: Annotation, refs: list[ColumnRef]) -> list[Finding]:
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
            out.append(_finding(ann, f"{t.name}.{cur.name}", "unit_drift", "stale",
                                f"values of {cur.name!r} written since vid {b.vid} are the annotated ones "
                                f"scaled by 10^{k}", changed[:1] + changed[-1:],
                                values={"basis_stats": b.stats[ref.name].model_dump(), "recent_stats": now_s,
                                        "scale_exp": k},
                                suggestion=f"unit changed ({_unit_word(k)}); update the unit and description",
                                fixes=[_fix("update_unit", column=cur.name, scale=k)],
                                cause=_cause("unit", t.name, changed[0], cur.name)))
    return out


def _versioning(cols: list[lake.Column]) -> bool:
    """Do these added columns make a table keep versions (SCD2)? By shape: a boolean flag with at
    least one date or timestamp (a validity range), or the conventional names."""
    fams = [type_family(c.type) for c in cols]
    return any(c.name.lower() in SCD2 for c in cols) or ("bool" in fams and "time" in fams)


def _scd2_change(t: _Table, since: int) -> SchemaChange | None:
    for ch in t.tl.changes_after(since):
        if _versioning(ch.added):
            return ch
    return None


def current_flag(t: _Table) -> str | None:
    """The boolean column that marks a versioned table's current rows: the one a versioning change
    added (or one named is_current); None when the table keeps no versions."""
    named = t.col("is_current")
    if named is not None:
        return named.name
    for ch in t.tl.schema_changes:
        if _versioning(ch.added):
            for c in ch.added:
                if type_family(c.type) == "bool" and column_id(c) in t.cols:
                    return c.name
    return None


def _grain_findings(t: _Table, ann: Annotation) -> list[Finding]:
    out = _column_findings(t, ann, ann.provenance.basis.columns)
    if out:
        return out
    keys = [str(k) for k in (ann.value or {}).get("keys") or []]
    b = ann.provenance.basis
    ch = _scd2_change(t, b.vid)
    added_names = {c.name.lower() for c in ch.added} if ch is not None else set()
    if ch is not None and not any(k.lower() in SCD2 or k.lower() in added_names for k in keys):
        flag = current_flag(t) or "is_current"
        out.append(_finding(ann, t.name, "grain_violated", "suspect",
                            f"{', '.join(c.name for c in ch.added)} appeared at vid {ch.vid} ({_day(ch.time)}): "
                            f"the table keeps versions, so {', '.join(keys) or 'the declared keys'} may repeat",
                            [ch.vid], [ch.time], {"keys": keys, "added": [c.name for c in ch.added]},
                            f"SCD2 since {_day(ch.time)}: filter {flag}",
                            [_fix("filter", table=t.name, column=flag)], cause=_cause("versions", t.name, ch.vid)))
        return out
    if len(keys) == 1:
        col, s = t.col(keys[0]), t.stat(keys[0])
        rows = t.stats.get("row_count")
        if col is not None and s and type_family(col.type) == "number" and isinstance(rows, int):
            lo, hi = _num(s.get("min")), _num(s.get("max"))
            if lo is not None and hi is not None and float(lo).is_integer() and rows - int(s.get("null_count") or 0) > hi - lo + 1:
                last = t.tl.data_commits[-1][0] if t.tl.data_commits else t.obj.vid
                out.append(_finding(ann, t.name, "grain_violated", "stale",
                                    f"{rows} rows but {keys[0]} spans only {int(hi - lo + 1)} values: it is not unique",
                                    [last], values={"row_count": rows, "min": lo, "max": hi}))
                return out
    for ch, added in _grain_changes(t, b.vid):
        new_keys = [*keys, *(c for c in added if c not in keys)]
        out.append(_finding(ann, t.name, "schema_changed", "suspect",
                            f"{', '.join(added)} added at vid {ch.vid} ({_day(ch.time)}) besides the columns it "
                            f"replaced: rows may now be split by {', '.join(added)}", [ch.vid], [ch.time],
                            {"added": added}, f"the grain may now be ({', '.join(new_keys)})",
                            [_fix("set_keys", keys=new_keys)], cause=_cause("grain", t.name, ch.vid)))
    return out


def _grain_changes(t: _Table, since: int) -> list[tuple[SchemaChange, list[str]]]:
    """Schema changes after `since` that added more columns than they dropped (a new dimension may
    split the rows; a column swapped for another, or renamed, does not), with the added columns that
    continue no dropped one. Versioning changes are left to the SCD2 checks."""
    out = []
    for ch in t.tl.changes_after(since):
        if len(ch.added) <= len(ch.dropped) or _versioning(ch.added):
            continue
        renamed = {new for new, _k, _c in _rename_map(t, ch).values()}
        added = [c.name for c in ch.added if c.name not in renamed and column_id(c) in t.cols]
        if added:
            out.append((ch, added))
    return out


def _description_grain(t: _Table, ann: Annotation, anns: list[Annotation]) -> list[Finding]:
    """A column description written before the table's grain changed: the old grain's key column
    once the table keeps versions (its values now repeat), a measure's description once a new
    dimension splits the rows (it describes a value at the old grain)."""
    b = ann.provenance.basis.vid
    role = next((a.value for a in anns if a.kind == "column" and a.column_id == ann.column_id and a.field == "role"),
                None)
    grain = next((a for a in anns if a.key == "table.grain"), None)
    keys = {str(k).lower() for k in ((grain.value or {}).get("keys") or [])} if grain is not None else set()
    ch = _scd2_change(t, b)
    col = str(ann.column or "")
    if ch is not None and col.lower() in keys:
        return [_finding(ann, f"{t.name}.{col}", "grain_violated", "suspect",
                         f"{t.name} keeps versions since vid {ch.vid} ({_day(ch.time)}): {col} repeats once per "
                         "version, which this description predates", [ch.vid], [ch.time],
                         {"added": [c.name for c in ch.added]}, cause=_cause("versions", t.name, ch.vid))]
    if role == "measure":
        for gch, added in _grain_changes(t, b):
            return [_finding(ann, f"{t.name}.{col}", "schema_changed", "suspect",
                             f"{', '.join(added)} added at vid {gch.vid} ({_day(gch.time)}) splits the rows: {col} is "
                             "now a value per " + ", ".join(added) + ", which this description predates",
                             [gch.vid], [gch.time], {"added": added}, cause=_cause("grain", t.name, gch.vid))]
    return []


def _table_level(t: _Table, ann: Annotation) -> list[Finding]:
    b = ann.provenance.basis
    out: list[Finding] = []
    chs = t.tl.changes_after(b.vid)
    if chs:
        added = [c.name for ch in chs for c in ch.added]
        dropped = [c.name for ch in chs for c in ch.dropped]
        what = "; ".join(x for x in (f"added {', '.join(added)}" if added else "",
                                     f"dropped {', '.join(dropped)}" if dropped else "") if x) or "types changed"
        c0 = chs[0]
        kind = "versions" if _versioning(c0.added) else "grain" if len(c0.added) > len(c0.dropped) else "schema"
        out.append(_finding(ann, t.name, "schema_changed", "suspect",
                            f"the schema changed {len(chs)} time(s) since this was written: {what}",
                            [c.vid for c in chs], [c.time for c in chs], {"added": added, "dropped": dropped},
                            cause=_cause(kind, t.name, c0.vid)))
    rows = t.stats.get("row_count")
    if ann.field == "description" and isinstance(rows, int) and b.row_count and rows > 0:
        ratio = rows / b.row_count
        if ratio >= 10 or ratio <= 0.1 or len(chs) >= 3:
            data = t.tl.data_after(b.vid)
            out.append(_finding(ann, t.name, "unreviewed_while_changing", "suspect",
                                f"not reviewed while the table changed: rows {b.row_count} -> {rows}, "
                                f"{len(chs)} schema change(s), {len(data)} load(s)",
                                [v for v, _ in data[-1:]] or [t.obj.vid], [tt for _, tt in data[-1:]],
                                {"basis_rows": b.row_count, "rows": rows, "schema_changes": len(chs)}))
    return out


def _deprecated(t: _Table, ann: Annotation) -> list[Finding]:
    out = []
    val = ann.value or {}
    since_t = parse_time(val.get("since")) if val.get("since") else None
    after = [(v, tt) for v, tt in t.tl.data_commits if (v > (ann.vid or 0)) or (since_t is not None and tt > since_t + DAY)]
    if after:
        out.append(_finding(ann, t.name, "deprecated_but_written", "stale",
                            f"deprecated, but {len(after)} load(s) since (last {_day(after[-1][1])})",
                            [v for v, _ in after[-3:]], [tt for _, tt in after[-3:]], {"loads": len(after)},
                            "someone still writes it: find the writer, or lift the deprecation",
                            [_fix("investigate", columns=[])]))
    rb = val.get("replaced_by")
    if rb and rb not in t.ctx.tables():
        close = did_you_mean(rb, list(t.ctx.tables()))
        out.append(_finding(ann, t.name, "replaced_by_missing", "stale",
                            f"the successor {rb!r} does not exist at vid {t.ctx.vid}", [t.ctx.vid],
                            values={"replaced_by": rb, "did_you_mean": close},
                            suggestion=f"successor {close[0]}" if close else None,
                            fixes=[_fix("successor", table=close[0])] if close else []))
    return out


def _enum_meta(t: _Table, ann: Annotation) -> list[Finding]:
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
        return [_finding(ann, f"{t.name}.{ann.column}", "enum_violated", "stale",
                         f"{ann.column} holds values outside the declared enum: {bad}", [last],
                         values={"outside": bad, "enum": allowed},
                         suggestion=f"add {', '.join(map(str, bad))} to the enum",
                         fixes=[_fix("add_enum_values", column=str(ann.column), values=bad)])]
    if field == "sample_values":
        try:
            gone = [v for v in allowed if (lo is not None and v < lo) or (hi is not None and v > hi)]
        except TypeError:
            return []
        if gone:
            return [_finding(ann, f"{t.name}.{ann.column}", "sample_values_missing", "suspect",
                             f"sample values no longer in {ann.column}'s range [{lo}, {hi}]: {gone}", [t.obj.vid],
                             values={"missing": gone, "min": lo, "max": hi})]
    return []


def _join_suggestion(t: _Table, target: _Table | None, missing: str, to_col: str | None) -> tuple[str, Fix] | None:
    """A column of `t` (not `missing`) whose name matches a column of the target, same type family:
    the suggestion text and its `join_on` fix."""
    if target is None:
        return None
    ranked = []
    for c in t.cols.values():
        name = c.name
        if name.lower() == missing.lower():
            continue
        tc = target.col(name)
        if tc is None or type_family(tc.type) != type_family(c.type):
            continue
        a, b = t.stat(name), target.stat(tc.name)
        overlap = 0
        if a and b:
            try:
                overlap = int(a["min"] <= b["max"] and b["min"] <= a["max"])
            except (TypeError, KeyError):
                overlap = 0
        ranked.append((overlap, name.lower().endswith(("_id", "_uuid", "_key", "_sk")), name, tc.name))
    if not ranked:
        return None
    ranked.sort(reverse=True)
    _o, _k, mine, theirs = ranked[0]
    return (f"join on {mine} = {target.name}.{theirs}",
            _fix("join_on", from_column=mine, to_table=target.name, to_column=theirs))


def _relationship(ctx: Context, t: _Table, ann: Annotation, tables: dict[str, _Table | None]) -> list[Finding]:
    val = ann.value or {}
    to = str(val.get("to") or "")
    pairs = [tuple(p) for p in val.get("on") or [] if isinstance(p, (list, tuple)) and len(p) == 2]
    target = _get_table(ctx, to, tables)
    out = _column_findings(t, ann, ann.provenance.basis.columns, missing_reason="join_key_missing")
    for f in out:
        col = f.evidence.values.get("column")
        to_col = next((b for a, b in pairs if a == col), None)
        js = _join_suggestion(t, target, str(col), to_col)
        if js and not any(x.action == "join_on" for x in f.fixes):
            f.suggestion = js[0] if f.suggestion is None else f"{js[0]} ({f.suggestion})"
            f.fixes.insert(0, js[1])
    if target is None:
        close = did_you_mean(to, list(ctx.tables()))
        out.append(_finding(ann, t.name, "join_key_missing", "stale", f"the related table {to!r} does not exist",
                            [ctx.vid], values={"to": to, "did_you_mean": close},
                            suggestion=f"relate to {close[0]}" if close else None,
                            fixes=[_fix("relate_to", table=close[0])] if close else []))
        return out
    for a, b in pairs:
        if target.col(str(b)) is None:
            js = _join_suggestion(t, target, str(a), str(b))
            chs = target.tl.changes_after(ann.provenance.basis.vid)
            out.append(_finding(ann, t.name, "join_key_missing", "stale",
                                f"{to}.{b} is no longer a column of {to}", [c.vid for c in chs] or [target.obj.vid],
                                [c.time for c in chs], {"to": to, "column": b}, js[0] if js else None,
                                [js[1]] if js else []))
    cond = str(val.get("condition") or "").lower()
    if val.get("cardinality") in ("many_to_one", "one_to_one"):
        ch = _scd2_change(target, ann.provenance.basis.vid)
        if ch is not None and not any(w in cond for w in (*SCD2, *(c.name.lower() for c in ch.added))):
            flag = current_flag(target) or "is_current"
            out.append(_finding(ann, t.name, "cardinality_violated", "suspect",
                                f"{to} keeps versions since vid {ch.vid} ({_day(ch.time)}): one {t.name} row may match "
                                "several", [ch.vid], [ch.time], {"to": to, "added": [c.name for c in ch.added]},
                                f"SCD2 since {_day(ch.time)}: filter {flag} (condition '{to}.{flag}')",
                                [_fix("filter", table=to, column=flag)], cause=_cause("versions", to, ch.vid)))
    return out


def _metric(t: _Table, ann: Annotation) -> list[Finding]:
    refs = ann.provenance.basis.columns
    return _column_findings(t, ann, refs) + _unit_drift(t, ann, refs)


def _verified_meta(ctx: Context, t: _Table, ann: Annotation) -> list[Finding]:
    val = ann.value or {}
    gone = [x for x in val.get("tables") or [] if x not in ctx.tables()]
    if gone:
        return [_finding(ann, t.name, "verified_query_fails", "stale",
                         f"it reads {', '.join(gone)}, which no longer exist", [ctx.vid], values={"missing": gone})]
    out = _column_findings(t, ann, ann.provenance.basis.columns, missing_reason="verified_query_fails",
                           missing_status="suspect")
    if out:
        return out
    at = int(val.get("verified_at_vid") or ann.provenance.basis.vid or 0)
    ev = _structural(ctx, [str(x) for x in val.get("tables") or [t.name]], at, schema_only=True)
    if ev is not None:
        kind, name, vid, tt = ev
        return [_finding(ann, t.name, "schema_changed", "suspect",
                         f"{name} changed its schema at vid {vid} ({_day(tt)}), after the query was verified at vid "
                         f"{at}: its answer may have changed", [at, vid], [tt], {"table": name, "change": kind},
                         "re-run the query and re-verify it", [_fix("reverify")], cause=_cause(kind, name, vid))]
    return []


def _structural(ctx: Context, names: list[str], after: int, schema_only: bool = False
                ) -> tuple[str, str, int, float] | None:
    """The first schema change (or full rewrite of a normally appended table, unless `schema_only`)
    of one of `names` after vid `after`: (kind, table, vid, time); None when they only took routine
    loads since. A cause of the kind `_cause` names."""
    best: tuple[str, str, int, float] | None = None
    for n in names:
        tl = ctx.timeline(n)
        obj = ctx.table(n)
        if tl is None or obj is None:
            continue
        for ch in tl.changes_after(after)[:1]:
            if best is None or ch.vid < best[2]:
                best = ("versions" if _versioning(ch.added) else "schema", n, ch.vid, ch.time)
        if not schema_only:
            tbl = _Table(ctx, n, obj, tl)
            for v, tt in _rewrites(tbl):
                if v > after and (best is None or v < best[2]):
                    best = ("rewrite", n, v, tt)
                    break
    return best


def _late_data(ctx: Context, names: list[str], after: int) -> tuple[str, str, int, float] | None:
    """The first load after vid `after` that appended to a date partition (of one of `names`) that
    already existed then and is more than two days older than the load: late data for a closed
    period. (kind "late", table, vid, time), or None."""
    for n in names:
        tl, obj = ctx.timeline(n), ctx.table(n)
        if tl is None or obj is None or not obj.value.get("partition_by"):
            continue
        base = obj.path + "/"
        for v, tt in tl.data_after(after)[:200]:
            c = ctx.commit(v)
            parts = sorted({base + p[len(base):].split("/", 1)[0] for p in (c.paths if c else ())
                            if p.startswith(base) and "=" in p[len(base):].split("/", 1)[0]})
            for p in parts:
                when = parse_time(p.rsplit("=", 1)[-1])
                if when is not None and tt - when > 2 * DAY and ctx.cat.get(p, vid=after) is not None:
                    return "late", n, v, tt
    return None


def _get_table(ctx: Context, name: str, tables: dict[str, _Table | None]) -> _Table | None:
    if name not in tables:
        obj = ctx.table(name)
        tl = ctx.timeline(name) if obj is not None else None
        tables[name] = _Table(ctx, name, obj, tl) if obj is not None and tl is not None else None
    return tables[name]


def _metadata(ctx: Context, t: _Table, anns: list[Annotation], tables: dict[str, _Table | None]) -> list[Finding]:
    out: list[Finding] = []
    units = {a.column_id for a in anns if a.kind == "column" and (a.field == "unit" or
                                                                 (a.field == "role" and a.value == "measure"))}
    for a in anns:
        if a.kind == "table":
            if a.field == "grain":
                out += _grain_findings(t, a)
            elif a.field in ("description", "instructions"):
                out += _table_level(t, a)
            elif a.field == "deprecated":
                out += _deprecated(t, a)
        elif a.kind == "column":
            refs = [r for r in a.provenance.basis.columns if r.id == a.column_id][:1]
            found = _column_findings(t, a, refs)
            if not found and a.column_id in units and a.field in ("unit", "description"):
                found = _unit_drift(t, a, refs)
            if not found and a.field in ("enum", "sample_values"):
                found = _enum_meta(t, a)
            if not found and a.field == "description":
                found = _description_grain(t, a, anns)
            out += found
        elif a.kind == "relationship":
            out += _relationship(ctx, t, a, tables)
        elif a.kind == "metric":
            out += _metric(t, a)
        elif a.kind == "verified_query":
            out += _verified_meta(ctx, t, a)
    return out


# ------------------------------------------------------------------ restatements
def _rewrites(t: _Table) -> list[tuple[int, float]]:
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


def _literals(text: str, t: _Table) -> dict[str, list[str]]:
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


def _file_values(t: _Table, vid: int) -> dict[str, set[str]]:
    """Per string column, the values the table's files at `vid` record as a min or a max (cached)."""
    key = ("file_values", t.obj.path, vid)
    got = t.ctx.cache.findings.take(key)
    if got is not None:
        return got[0]
    strings = {c.name for c in t.cols.values() if type_family(c.type) == "string"}
    out: dict[str, set[str]] = {c: set() for c in strings}
    try:
        files = t.ctx.cat.plan_files(t.name, vid=vid)
    except CatalogError:
        files = []
    for f in files:
        for c, st in ((f.value.get("columns") or {}).items()):
            if c in out and isinstance(st, dict):
                out[c].update(str(v) for v in (st.get("min"), st.get("max")) if isinstance(v, str))
    t.ctx.cache.findings.put(key, (out,))
    return out


def _stats_shift(t: _Table, v: int) -> dict[str, tuple[list[str], list[str], dict[str, str]]]:
    """The string columns whose file statistics moved across the rewrite at `v`: column ->
    (values recorded before and never after, values recorded after and never before, old -> new:
    the appeared value the files of one partition record most often in the place of a vanished one)."""
    before, after = _file_values(t, v - 1), _file_values(t, v)
    pb, pa = _partition_bounds(t, v - 1), _partition_bounds(t, v)
    out = {}
    for c in sorted(after):
        b, a = before.get(c, set()), after[c]
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


def _partition_bounds(t: _Table, vid: int) -> dict[str, dict[str, tuple[str, str]]]:
    """Per partition (directory of the files) and string column, the (min, max) its files record at `vid`."""
    key = ("part_bounds", t.obj.path, vid)
    got = t.ctx.cache.findings.take(key)
    if got is not None:
        return got[0]
    out: dict[str, dict[str, tuple[str, str]]] = {}
    try:
        files = t.ctx.cat.plan_files(t.name, vid=vid)
    except CatalogError:
        files = []
    for f in files:
        part = f.path.rsplit("/", 1)[0]
        cur = out.setdefault(part, {})
        for c, st in ((f.value.get("columns") or {}).items()):
            if isinstance(st, dict) and isinstance(st.get("min"), str) and isinstance(st.get("max"), str):
                lo, hi = cur.get(c, (st["min"], st["max"]))
                cur[c] = (min(lo, st["min"]), max(hi, st["max"]))
    t.ctx.cache.findings.put(key, (out,))
    return out


def _words(text: object) -> set[str]:
    return set(re.findall(r"[\w-]+", str(text or "").lower()))


def _value_refs(t: _Table, a: Annotation, column: str, values_of: dict[str, list[str]],
                labels_of: dict[str, dict[str, str]]) -> list[str] | None:
    """The values of `column` annotation `a` names (None: it is not about the column's values):
    an enum / sample_values lists them, a description names some of the column's annotated values
    (or their `labels`, for a coded column),
    a metric filter or verified query compares the column with literals."""
    def named(text: object) -> list[str]:
        w, low = _words(text), str(text or "").lower()
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
        return _literals(str((a.value or {}).get("filter") or ""), t).get(column)
    if a.kind == "verified_query":
        return _literals(str((a.value or {}).get("sql") or ""), t).get(column)
    return None


def _restatements(t: _Table, anns: list[Annotation], duck: _Duck | None) -> list[Finding]:
    """values_restated, one finding per (rewrite, column): a full rewrite of a normally appended
    table changed the values of a string column, and these annotations, written before it, name
    values the column no longer holds (or list its values while new ones appeared). Metadata
    (`duck` None): the values the files' statistics record as min / max before and after the
    rewrite. Data: the column's distinct values at the two snapshots, and, where the grain's keys
    identify rows, which new value each old one became (row-level agreement). The finding lists
    every annotation it affects, the values before and after, and a `value_map` fix with the map
    and the column's values now (the enum to write)."""
    rw = _rewrites(t)
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
        shift = _stats_shift(t, v)
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
            fixes = [_fix("value_map", column=c, map=vm, values=now_values)] if now_values is not None or vm else \
                [_fix("investigate", columns=[c])]
            sugg = (f"restate {', '.join(f'{g} -> {n}' for g, n in vm.items())}; " if vm else "") + \
                (f"values of {c} now: {', '.join(map(str, now_values[:12]))}" if now_values is not None
                 else f"compare the values of {c} before and after vid {v}")
            out.append(Finding(
                target=f"{t.name}.{c}" if first.kind == "column" else t.name, annotation=first.key,
                annotations=affected, status=status, reason="values_restated",  # type: ignore[arg-type]
                message=f"{t.name} was rewritten in full at vid {v} ({_day(tt)}): in {c}, {what}; "
                        f"{len(affected)} annotation(s) name the old values",
                evidence=Evidence(vids=list(dict.fromkeys([*(x.vid for x in early if x.key in hit and x.vid), v])),
                                  times=[tt], values={"column": c, "rewrite_vid": v, "before_only": gone[:20],
                                                      "after_only": new[:20], "map": vm, "map_rows": counts,
                                                      "values_now": now_values, "by_annotation": hit,
                                                      "columns": [c], "values": named}),
                suggestion=sugg, fixes=fixes, cause=_cause("rewrite", t.name, v, c)))
    return out


MAP_ROWS = 2000  # rows of vanished values carried to the new snapshot to map old values to new ones


def _values_across(t: _Table, c: str, v: int, keys: list[str], duck: _Duck
                   ) -> tuple[list[str], list[str], list[str], dict[str, str], dict[str, int]] | None:
    """The distinct values of column `c` just before the rewrite at `v` and at the snapshot:
    (before only, now only, all now, old -> new value by the rows the grain keys identify, rows per
    old value mapped). None when a snapshot cannot be read. Every statement is bounded like
    `run_sql` (`_Duck`): the rows of the vanished values (at most MAP_ROWS) travel to the new
    snapshot's statement as an inline VALUES list."""
    q, tq = _q(c), _tq(t.name)
    old = _Duck(t.ctx.cat, v - 1)
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
        kq = ", ".join(_q(k) for k in kcols)
        try:
            rows = old.sql(f"SELECT {kq}, {q} FROM {tq} WHERE {q} IN ({literals(list(gone))}) LIMIT {MAP_ROWS}")
            if rows:
                names = ", ".join([f"k{i}" for i in range(len(kcols))] + ["v"])
                values = ", ".join(f"({literals(list(r))})" for r in rows)
                on = " AND ".join(f"o.k{i} = n.{_q(k)}" for i, k in enumerate(kcols))
                pairs = duck.sql(f"SELECT o.v, n.{q}, count(*) FROM (VALUES {values}) AS o({names}) JOIN {tq} n "
                                 f"ON {on} GROUP BY ALL ORDER BY 3 DESC")
                for g, n_, cnt in pairs:
                    if str(g) not in mapping and n_ is not None:
                        mapping[str(g)], counts[str(g)] = str(n_), int(cnt)
        except CatalogError:  # the map is evidence, not the finding: go on without it
            pass
    return [str(x) for x in gone[:MAX_VALUES]], [str(x) for x in new[:MAX_VALUES]], \
        [str(x) for x in now[:MAX_VALUES]], mapping, counts


# ------------------------------------------------------------------ data depth
def _q(*parts: str) -> str:
    return ".".join(map(quote, parts))


def _tq(name: str) -> str:
    return _q(*name.split("."))


class _Duck:
    """The data checks' statements at one vid, each bounded like `run_sql` (`semantic._bounded`):
    sandboxed, in a SQL worker, within a time and a memory limit, whatever the annotation says."""

    def __init__(self, cat: CatalogAPI, vid: int) -> None:
        self.cat, self.vid = cat, vid

    def sql(self, text: str) -> list[list[Any]]:
        return _bounded.query(self.cat, self.vid, text)

    def close(self) -> None:
        pass


def _data(ctx: Context, t: _Table, anns: list[Annotation], tables: dict[str, _Table | None], duck: _Duck,
          already: set[tuple[str | None, str]]) -> tuple[list[Finding], set[tuple[str | None, str]]]:
    """Data findings, and the (annotation, reason) pairs the data checked (their metadata
    findings are replaced by what the data says). A check stopped at its time or memory limit is
    a `check_limit_exceeded` finding (the annotation's data could not be checked)."""
    out: list[Finding] = []
    checked: set[tuple[str | None, str]] = set()
    last = t.tl.data_commits[-1][0] if t.tl.data_commits else t.obj.vid
    for a in anns:
        try:
            if a.kind == "table" and a.field == "grain":
                out += _grain_data(ctx, t, a, duck, last, checked)
            elif a.kind == "column" and a.field in ("enum", "sample_values"):
                out += _values_data(ctx, t, a, duck, last, checked)
            elif a.kind == "relationship":
                out += _relationship_data(ctx, t, a, tables, duck, already, last, checked)
            elif a.kind == "verified_query":
                out += _verified_data(ctx, t, a)
        except LimitExceededError as e:
            out.append(_finding(a, t.name, "check_limit_exceeded", "suspect",
                                f"the data check of {a.key} could not finish: {e.message[:300]}; the annotation "
                                "was not checked against the data (simplify it, e.g. its condition)", [ctx.vid], values={"limit": e.details.get("limit"),
                                                                 "timeout_s": e.details.get("timeout_s"),
                                                                 "memory_limit": e.details.get("memory_limit")}))
        except CatalogError as e:
            if a.kind == "verified_query":
                raise
            # a check that cannot run (e.g. a view that fails to read) is itself evidence
            out.append(_finding(a, t.name, "schema_changed", "suspect",
                                f"the data check of {a.key} could not run: {str(e).splitlines()[0][:200]}", [ctx.vid]))
    return out, checked


def _new_key(t: _Table, a: Annotation, keys: list[str], duck: _Duck) -> list[str] | None:
    """Columns the rows are unique on now, when the grain's keys no longer are: a column added
    since the grain was written that is unique by itself (a surrogate key), else the keys plus the
    columns added since (a new dimension). Checked on the data; None when neither holds."""
    added = [c.name for ch in t.tl.changes_after(a.provenance.basis.vid) for c in ch.added if column_id(c) in t.cols]
    if not added:
        return None
    rows = duck.sql(f"SELECT count(*) FROM {_tq(t.name)}")[0][0]
    if not rows:
        return None
    cols = [col for c in added if (col := t.col(c)) is not None]
    for col in cols:
        if type_family(col.type) in ("number", "string"):
            n = duck.sql(f"SELECT count(DISTINCT {_q(col.name)}), count({_q(col.name)}) FROM {_tq(t.name)}")[0]
            if n[0] == rows and n[1] == rows:
                return [col.name]
    if _versioning(cols):
        return None  # a versioned table: its current rows keep the grain (the filter fix), no new dimension
    extra = [col.name for col in cols if type_family(col.type) in ("number", "string")]
    cand = [*keys, *extra]
    if extra and len(cand) <= 6:
        kq = ", ".join(_q(c) for c in cand)
        dup = duck.sql(f"SELECT count(*) FROM (SELECT {kq} FROM {_tq(t.name)} GROUP BY ALL HAVING count(*) > 1)")[0][0]
        if not dup:
            return cand
    return None


def _grain_data(ctx: Context, t: _Table, a: Annotation, duck: _Duck, last: int,
                checked: set[tuple[str | None, str]]) -> list[Finding]:
    """Do the grain's keys repeat? (On an SCD2 table whose current rows keep the grain, the fix filters is_current.)"""
    keys = [str(k) for k in (a.value or {}).get("keys") or []]
    if not keys or any(t.col(k) is None for k in keys):
        return []
    checked.add((a.key, "grain_violated"))
    kq = ", ".join(_q(k) for k in keys)
    dup = duck.sql(f"SELECT count(*), any_value(k) FROM (SELECT ({kq}) AS k FROM {_tq(t.name)} "
                   f"GROUP BY ALL HAVING count(*) > 1)")[0]
    if not dup[0]:
        return []
    sugg = None
    gfix: list[Fix] = []
    flag = current_flag(t)
    ch = _scd2_change(t, a.provenance.basis.vid)
    if flag is not None:
        cur_dup = duck.sql(f"SELECT count(*) FROM (SELECT {kq} FROM {_tq(t.name)} WHERE {_q(flag)} "
                           f"GROUP BY ALL HAVING count(*) > 1)")[0][0]
        since = f" since {_day(ch.time)}" if ch else ""
        if not cur_dup:
            sugg = f"SCD2{since}: filter {flag}"
            gfix = [_fix("filter", table=t.name, column=flag)]
    new_keys = _new_key(t, a, keys, duck)
    if new_keys:
        sugg = (f"{sugg}; " if sugg else "") + f"the rows are unique on ({', '.join(new_keys)})"
        gfix = [_fix("set_keys", keys=new_keys), *gfix]
    chs = t.tl.changes_after(a.provenance.basis.vid)
    cause = _cause("versions", t.name, ch.vid) if ch else _cause("grain", t.name, chs[0].vid) if chs else None
    return [_finding(a, t.name, "grain_violated", "stale",
                     f"{dup[0]} key value(s) of ({', '.join(keys)}) repeat, e.g. {dup[1]}", [ctx.vid, last],
                     values={"duplicate_keys": dup[0], "example": str(dup[1])}, suggestion=sugg, fixes=gfix,
                     cause=cause)]


def _values_data(ctx: Context, t: _Table, a: Annotation, duck: _Duck, last: int,
                 checked: set[tuple[str | None, str]]) -> list[Finding]:
    """An enum's values outside it, or sample values no longer present, read from the data."""
    cur = t.cols.get(a.column_id or -1)
    vals = [v for v in (a.value or []) if v is not None]
    if cur is None or not vals:
        return []
    checked.add((a.key, "enum_violated" if a.field == "enum" else "sample_values_missing"))
    checked.add((a.key, "values_restated"))  # the data says whether the values changed
    c = _q(cur.name)
    marks = literals(vals)
    if a.field == "enum":
        bad = [r[0] for r in duck.sql(f"SELECT DISTINCT {c} FROM {_tq(t.name)} WHERE {c} IS NOT NULL "
                                      f"AND {c} NOT IN ({marks}) LIMIT 20")]
        if not bad:
            return []
        return [_finding(a, f"{t.name}.{cur.name}", "enum_violated", "stale",
                         f"{cur.name} holds values outside the declared enum: {bad}",
                         [ctx.vid, last], values={"outside": bad, "enum": vals},
                         suggestion=f"add {', '.join(map(str, bad))} to the enum",
                         fixes=[_fix("add_enum_values", column=cur.name, values=bad)])]
    there = {r[0] for r in duck.sql(f"SELECT DISTINCT {c} FROM {_tq(t.name)} WHERE {c} IN ({marks})")}
    gone = [v for v in vals if v not in there]
    if not gone:
        return []
    return [_finding(a, f"{t.name}.{cur.name}", "sample_values_missing", "suspect",
                     f"sample values no longer present in {cur.name}: {gone}", [ctx.vid, last], values={"missing": gone})]


def _relationship_data(ctx: Context, t: _Table, a: Annotation, tables: dict[str, _Table | None], duck: _Duck,
                       already: set[tuple[str | None, str]], last: int,
                       checked: set[tuple[str | None, str]]) -> list[Finding]:
    val = a.value or {}
    to = str(val.get("to") or "")
    target = _get_table(ctx, to, tables)
    pairs = [(str(x), str(y)) for x, y in (val.get("on") or [])]
    if target is None or not pairs or (a.key, "join_key_missing") in already or \
            any(t.col(x) is None or target.col(y) is None for x, y in pairs):
        return []
    out = []
    cond = val.get("condition")
    tgt = f"SELECT * FROM {_tq(to)}"
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
    fk = " AND ".join(f"f.{_q(x)} IS NOT NULL" for x, _ in pairs)
    on = " AND ".join(f"f.{_q(x)} = g.{_q(y)}" for x, y in pairs)
    keys = ", ".join(_q(y) for _, y in pairs)
    total, matched = duck.sql(f"SELECT count(*), count(g.__m) FROM {_tq(t.name)} f LEFT JOIN "
                              f"(SELECT DISTINCT {keys}, 1 AS __m FROM ({tgt})) g ON {on} WHERE {fk}")[0]
    if total and matched / total < MATCH_LOW:
        rate = matched / total
        js = _join_suggestion(t, target, pairs[0][0], pairs[0][1])
        out.append(_finding(a, t.name, "join_match_low", "stale" if rate < 0.5 else "suspect",
                            f"only {rate:.1%} of {t.name} rows find a match in {to} on "
                            f"{', '.join(f'{x} = {y}' for x, y in pairs)}", [ctx.vid, last],
                            values={"rows": total, "matched": matched, "rate": round(rate, 4)},
                            suggestion=js[0] if js else None, fixes=[js[1]] if js else []))
    card = val.get("cardinality")
    sides = []
    if card in ("many_to_one", "one_to_one"):
        sides.append((to, tgt, [y for _, y in pairs]))
    if card in ("one_to_many", "one_to_one"):
        sides.append((t.name, f"SELECT * FROM {_tq(t.name)}", [x for x, _ in pairs]))
    if sides:
        checked.add((a.key, "cardinality_violated"))
    for side, body, cols in sides:
        kq = ", ".join(_q(c) for c in cols)
        dup = duck.sql(f"SELECT count(*) FROM (SELECT {kq} FROM ({body}) GROUP BY ALL HAVING count(*) > 1)")[0][0]
        if dup:
            sugg = None
            cfix: list[Fix] = []
            cause: str | None = None
            st = _get_table(ctx, side, tables)
            flag = current_flag(st) if st is not None else None
            if flag is not None and flag.lower() not in str(cond or "").lower():
                cur = duck.sql(f"SELECT count(*) FROM (SELECT {kq} FROM {_tq(side)} WHERE {_q(flag)} GROUP BY ALL "
                               "HAVING count(*) > 1)")[0][0]
                if not cur:
                    ch = _scd2_change(st, a.provenance.basis.vid) if st is not None else None
                    sugg = f"SCD2{' since ' + _day(ch.time) if ch else ''}: filter {flag} (condition '{side}.{flag}')"
                    cfix = [_fix("filter", table=side, column=flag)]
                    cause = _cause("versions", side, ch.vid) if ch else None
            out.append(_finding(a, t.name, "cardinality_violated", "stale",
                                f"declared {card}, but {dup} key value(s) repeat in {side}", [ctx.vid, last],
                                values={"side": side, "duplicate_keys": dup}, suggestion=sugg, fixes=cfix,
                                cause=cause))
    return out


def _verified_data(ctx: Context, t: _Table, a: Annotation) -> list[Finding]:
    val = a.value or {}
    key = (str(val.get("sql")), ctx.vid)
    got = ctx.cache.sql.take(key)
    if got is None:
        try:
            res = cc.run_sql(ctx.cat, str(val.get("sql")), snapshot=ctx.vid, limit=100_000)
            got = (True, fingerprint(res.rows))
        except CatalogError as e:
            got = (False, e.message)
        ctx.cache.sql.put(key, got)
    ok, detail = got
    at = int(val.get("verified_at_vid") or 0)
    if not ok:
        return [_finding(a, t.name, "verified_query_fails", "stale", f"the verified query no longer runs: {detail[:200]}",
                         [at, ctx.vid], values={"error": detail[:500]})]
    if detail != val.get("result_fingerprint"):
        # a different answer after routine loads only (new rows of a growing table, a dimension
        # rebuilt as usual) is what the query is for; after a schema change or a full rewrite of a
        # table it reads, the verified answer no longer holds
        names = [str(x) for x in val.get("tables") or [t.name]]
        ev = _structural(ctx, names, at) or _late_data(ctx, names, at)
        if ev is None:
            return []
        kind, name, vid, tt = ev
        how = {"rewrite": "was rewritten", "late": "took late data for an old partition"}.get(kind, "changed its schema")
        return [_finding(a, t.name, "verified_query_changed", "suspect",
                         f"the verified query returns a different result than at vid {at}, since {name} "
                         f"{how} at vid {vid} ({_day(tt)})",
                         [at, vid], [tt],
                         values={"fingerprint_then": val.get("result_fingerprint"), "fingerprint_now": detail,
                                 "table": name, "change": kind},
                         suggestion="re-check the answer and re-verify the query", fixes=[_fix("reverify")],
                         cause=None)]
    return []


def _data_since(ctx: Context, names: Iterable[str], vid: int) -> list[tuple[int, float]]:
    out = []
    for n in names:
        tl = ctx.timeline(n)
        if tl is not None:
            out.extend(tl.data_after(vid))
    return sorted(set(out))


# ------------------------------------------------------------------ clock-dependent findings
def _loads_every(tl: Timeline, last: int = 10) -> float | None:
    times = [tt for _, tt in tl.data_commits[-(last + 1):]]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False) if b > a]
    return statistics.median(gaps) if gaps else None


def _time_span(t: _Table) -> tuple[float, float] | None:
    """The days the table's first date / timestamp column spans (from its statistics)."""
    for c in t.cols.values():
        if type_family(c.type) != "time":
            continue
        st = t.stat(c.name) or {}
        lo, hi = parse_time(st.get("min")), parse_time(st.get("max"))
        if lo is not None and hi is not None and hi >= lo:
            return lo, hi
    return None


def _col_similarity(a: dict[str, Any] | None, b: dict[str, Any] | None, fam: str | None) -> float:
    """0..1: how alike two columns' statistics are (the same order of magnitude for numbers, the
    same range for text, overlapping ranges for times). Names never enter."""
    if not a or not b:
        return 0.0
    if fam == "number":
        amax, bmax = _num(a.get("max")), _num(b.get("max"))
        if not amax or not bmax or (amax > 0) != (bmax > 0):
            return 0.0
        return max(0.0, 1.0 - abs(math.log10(abs(amax / bmax))))
    if fam == "time":
        alo, ahi, blo, bhi = (parse_time(a.get("min")), parse_time(a.get("max")), parse_time(b.get("min")),
                              parse_time(b.get("max")))
        if None in (alo, ahi, blo, bhi):
            return 0.0
        return 1.0 if blo <= ahi and bhi >= ahi else 0.0  # type: ignore[operator]
    return 1.0 if str(a.get("min")) == str(b.get("min")) and str(a.get("max")) == str(b.get("max")) else 0.0


def _similar(a: _Table, b: _Table) -> float:
    """0..1: how well `b` could replace `a`, from statistics: each of a's columns matched one to one
    with b's (same type family, alike statistics), and rows per day alike (the same grain)."""
    mine = list(a.cols.values())
    if not mine:
        return 0.0
    costs: dict[tuple[str, str], float] = {}
    for c in mine:
        f = type_family(c.type)
        for d in b.cols.values():
            if type_family(d.type) == f:
                sim = _col_similarity(a.stat(c.name), b.stat(d.name), f)
                if sim > 0:
                    costs[(c.name, d.name)] = 1.0 - sim
    matched = assign(costs)
    cols = sum(1.0 - costs[(x, y)] for x, y in matched.items()) / len(mine)
    sa, sb = _time_span(a), _time_span(b)
    ra, rb = a.stats.get("row_count"), b.stats.get("row_count")
    rate = 0.0
    if sa and sb and isinstance(ra, int) and isinstance(rb, int) and ra > 0 and rb > 0:
        da, db = max(1.0, (sa[1] - sa[0]) / DAY + 1), max(1.0, (sb[1] - sb[0]) / DAY + 1)
        rate = max(0.0, 1.0 - abs(math.log10((ra / da) / (rb / db))))
    return 0.6 * cols + 0.4 * rate


def _successor(ctx: Context, t: _Table, after: float, tables: dict[str, _Table | None]) -> tuple[float, _Table] | None:
    """The table most like `t` by statistics (`_similar`) that still loads after `after` and whose
    time range continues t's; cached per (table, snapshot vid)."""
    key = ("successor", t.name, ctx.vid)
    got = ctx.cache.findings.take(key)
    if got is not None:
        return got[0]
    best: tuple[float, _Table] | None = None
    for other in ctx.tables():
        if other == t.name:
            continue
        o = _get_table(ctx, other, tables)
        if o is None or not o.tl.data_commits or o.tl.data_commits[-1][1] <= after:
            continue
        sim = _similar(t, o)
        if sim >= 0.5 and (best is None or sim > best[0]):
            best = (sim, o)
    ctx.cache.findings.put(key, (best,))
    return best


_CADENCE_WORDS = {"hourly": 3600.0, "daily": DAY, "nightly": DAY, "weekly": 7 * DAY, "monthly": 30 * DAY}


def _cadence_words(text: object) -> list[tuple[str, float]]:
    w = _words(text)
    return [(k, v) for k, v in _CADENCE_WORDS.items() if k in w]


def _slow_cadence(tl: Timeline, sla: float) -> float | None:
    """The usual interval of the last loads when it is longer than `sla` (the SLA is missed between
    every two loads, whatever the clock says now); else None."""
    if len(tl.data_commits) < 4:
        return None
    every = _loads_every(tl, 4)
    return every if every is not None and every > 1.5 * sla else None


def time_due(ctx: Context, name: str, anns: list[Annotation]) -> float | None:
    """The time after which `time_findings(ctx, name, anns, now)` can find anything: it returns no
    finding for any `now` <= this (None: for no `now`; -inf: for every `now`). Invariant, kept by
    mirroring time_findings' conditions: a finding at `now` implies `now > time_due(...)`."""
    obj = ctx.table(name)
    tl = ctx.timeline(name) if obj is not None else None
    if obj is None or tl is None or any(a.key == "table.deprecated" for a in anns):
        return None
    dc = tl.data_commits
    last = dc[-1] if dc else None
    due: list[float] = []
    for a in anns:
        if a.key != "table.freshness_sla":
            continue
        try:
            sla = parse_duration(a.value)
        except InvalidValueError:
            continue
        due.append(-math.inf if last is None or _slow_cadence(tl, sla) is not None else last[1] + sla)
    if last is not None and len(dc) >= 3:
        due.append(last[1] + max(3 * (_loads_every(tl) or DAY), 7 * DAY))
    return min(due, default=None)


def _due_index(ctx: Context, names: list[str]) -> tuple[list[float], list[str]]:
    """Every table's `time_due` at ctx.vid, ascending (cached per vid: it does not depend on the clock)."""
    key = ("due", ctx.vid)
    got = ctx.cache.findings.take(key)
    if got is None:
        pairs = sorted((d, n) for n in names if (d := time_due(ctx, n, ctx.annotations(n))) is not None)
        got = ctx.cache.findings.put(key, ([d for d, _ in pairs], [n for _, n in pairs]))
    return got


def _dead_findings(ctx: Context, name: str, anns: list[Annotation], now: float, tl: Timeline,
                   tables: dict[str, _Table | None]) -> list[Finding]:
    """not_loaded_since: a table that used to load and has not for three usual intervals (and a
    week), one finding per annotation it makes wrong (the freshness SLA, the description), one
    cause; its successor by statistics, never a new SLA."""
    out: list[Finding] = []
    dc = tl.data_commits
    last = dc[-1] if dc else None
    if last is not None and len(dc) >= 3:
        every = _loads_every(tl) or DAY
        gap = now - last[1]
        if gap > max(3 * every, 7 * DAY):
            t = _get_table(ctx, name, tables)
            best = _successor(ctx, t, last[1] + every, tables) if t is not None else None
            vids, times = [last[0]], [last[1]]
            sugg = None
            nfix: list[Fix] = []
            values: dict[str, Any] = {"last_load": _day(last[1]), "days": round(gap / DAY, 1),
                                      "usual_interval_hours": round(every / 3600, 1)}
            if best is not None:
                o = best[1]
                vids.append(o.tl.data_commits[-1][0])
                times.append(o.tl.data_commits[-1][1])
                values.update(successor=o.name, similarity=round(best[0], 2))
                sugg = f"successor {o.name} (alike columns and rows per day, still loading): deprecate {name}"
                nfix = [_fix("successor", table=o.name)]
            msg = (f"not loaded since {_day(last[1])} ({gap / DAY:.0f} days; it used to load every "
                   f"{every / 3600:.0f} h)")
            cause = _cause("dead", name, last[0])
            about = [a for a in anns if a.key in ("table.freshness_sla", "table.description") and
                     (a.provenance.basis.vid or 0) <= last[0]]
            for a in [*about] or [None]:  # type: ignore[list-item]
                out.append(_finding(a, name, "not_loaded_since", "stale" if best else "suspect", msg, vids, times,
                                    values, sugg, nfix, cause=cause))
    return out


def time_findings(ctx: Context, name: str, anns: list[Annotation], now: float,
                  tables: dict[str, _Table | None] | None = None) -> list[Finding]:
    """freshness_sla_missed and not_loaded_since at `now` (cheap: cached timelines). A table no
    longer loaded is one finding (not_loaded_since, its successor by statistics) about its freshness
    SLA and its description, never a suggestion of a new SLA; an SLA the usual interval between
    loads exceeds is missed between every two loads, whatever the time now (with a description that
    names the old cadence, one finding)."""
    tables = {} if tables is None else tables
    obj = ctx.table(name)
    tl = ctx.timeline(name) if obj is not None else None
    if obj is None or tl is None:
        return []
    out: list[Finding] = []
    dc = tl.data_commits
    last = dc[-1] if dc else None
    deprecated = any(a.key == "table.deprecated" for a in anns)
    if deprecated:
        return []
    dead = _dead_findings(ctx, name, anns, now, tl, tables)
    out += dead
    for a in anns:
        if a.key != "table.freshness_sla" or dead:
            continue
        try:
            sla = parse_duration(a.value)
        except InvalidValueError:
            continue
        if last is None:
            out.append(_finding(a, name, "freshness_sla_missed", "stale", "never loaded", [obj.vid],
                                values={"sla": a.value}))
            continue
        age = now - last[1]
        slow = _slow_cadence(tl, sla)
        if age > sla or slow is not None:
            every = _loads_every(tl, 4)
            sugg = None
            sfix: list[Fix] = []
            if every and every > sla:
                new_sla = f"PT{math.ceil(every * 1.1 / 3600)}H"
                sugg = f"loads now arrive every ~{every / 3600:.0f} h; update freshness_sla (e.g. {new_sla})"
                sfix = [_fix("update_freshness_sla", sla=new_sla)]
            first_slow = last[0]  # the first load of the trailing run of slow intervals
            for (_v0, t0), (v1, t1) in reversed(list(zip(dc[:-1], dc[1:], strict=False))):
                if t1 - t0 <= sla:
                    break
                first_slow = v1
            cause = _cause("cadence", name, first_slow) if slow is not None else None
            msg = (f"loads arrive every ~{slow / 3600:.0f} h, longer than the SLA {a.value}: it is missed between "
                   f"loads (last loaded {_day(last[1])})" if slow is not None else
                   f"last loaded {_day(last[1])} ({age / 3600:.1f} h ago); the SLA is {a.value}")
            out.append(_finding(a, name, "freshness_sla_missed", "stale", msg,
                                [last[0]], [last[1]], {"sla": a.value, "age_hours": round(age / 3600, 2), "now": now,
                                                       **({"usual_interval_hours": round(slow / 3600, 1)} if slow else {})},
                                sugg, sfix, cause=cause))
            if slow is not None:
                for d in anns:
                    words = _cadence_words(d.value) if d.key == "table.description" else []
                    if words and all(abs(math.log10(slow / sec)) > 0.5 for _w, sec in words) and \
                            (d.provenance.basis.vid or 0) < last[0]:
                        out.append(_finding(d, name, "freshness_sla_missed", "suspect",
                                            f"the description says {', '.join(w for w, _ in words)}; loads arrive every "
                                            f"~{slow / 3600:.0f} h", [last[0]], [last[1]],
                                            {"says": [w for w, _ in words]}, cause=cause))
    return undismissed(out, anns)


# ------------------------------------------------------------------ review decisions
def finding_id(f: Finding) -> str:
    """The review item id of a finding: the same at every vid it is raised at (semantic.review)."""
    key = "\x1f".join((f.target, f.annotation or "", str(f.reason)))
    return "f-" + hashlib.sha1(key.encode()).hexdigest()[:10]


def undismissed(findings: list[Finding], anns: list[Annotation]) -> list[Finding]:
    """`findings` without those a person dismissed (a `review.<id>` decision record among `anns`
    with decision `dismissed`) while nothing new happened to them: a finding whose evidence names a
    vid after the dismissal's `at_vid` is raised again."""
    dismissed: dict[str, int] = {}
    for a in anns:
        v = a.value
        if a.kind == "review" and isinstance(v, dict) and v.get("decision") == "dismissed":
            dismissed[str(v.get("item"))] = int(v.get("at_vid") or 0)
    if not dismissed:
        return findings
    return [f for f in findings
            if (at := dismissed.get(finding_id(f))) is None or max(f.evidence.vids, default=0) > at]


# ------------------------------------------------------------------ what flows downstream (lineage)
# upstream findings that mean the data a downstream build read has changed since
CHANGE_REASONS = ("values_restated", "column_renamed", "column_dropped", "column_type_changed", "schema_changed",
                  "unit_drift", "grain_violated", "upstream_changed")
_CAUSE_VID = re.compile(r"@(\d+)")
_FLOWING = 5  # upstream_incomplete findings per table at most (newest periods)


def _change_vid(f: Finding) -> int:
    m = _CAUSE_VID.search(f.cause or "")
    if f.reason == "upstream_changed":
        return int(f.evidence.values.get("change_vid") or max(f.evidence.vids, default=0))
    return int(m.group(1)) if m else max(f.evidence.vids, default=0)


def propagated(ctx: Context, name: str, depth: str = "metadata", _seen: frozenset[str] = frozenset()) -> list[Finding]:
    """The `upstream_changed` and `upstream_incomplete` findings of `name` at the context's snapshot
    (see semantic.lineage's docstring): what flows from the inputs of its last build (its lineage). Upstream findings are read at the metadata depth (clock-independent),
    so the answer is the same at both depths and cached with the table's findings."""
    obj = ctx.table(name)
    lin = None if obj is None else lake.Lineage.from_raw(obj.value)
    if lin is None or not lin.inputs or name in _seen:
        return []
    seen = _seen | {name}
    out: list[Finding] = []
    for up, read_vid in sorted(lin.inputs.items()):
        if ctx.table(up) is None or up in seen:
            continue
        ups = merge_by_cause(table_findings(ctx, up, "metadata", _seen=seen))
        for f in ups:
            if f.reason not in CHANGE_REASONS:
                continue
            change = _change_vid(f)
            # an input that is itself suspect (built before a change further up) passes that on
            # whenever this build read it; a change of the input's own is after the read or not at all
            if change <= read_vid and f.reason != "upstream_changed":
                continue
            root = f.evidence.values.get("upstream") if f.reason == "upstream_changed" else up
            what = f.message.split(";")[0][:160]
            if f.reason == "upstream_changed":
                msg = (f"built from {up} as of vid {read_vid}, which was itself built before a change in {root} at "
                       f"vid {change}: this table's data and its annotations may not reflect it")
            else:
                msg = (f"built from {up} as of vid {read_vid}; {up} changed after, at vid {change} "
                       f"({f.reason}: {what}): this table's data and its annotations may not reflect it")
            out.append(Finding(
                target=name, annotation=None, status="suspect", reason="upstream_changed",
                message=msg,
                evidence=Evidence(vids=[read_vid, change], times=[ctx.commit_time(change)],
                                  values={"upstream": up, "upstream_reason": str(f.reason), "upstream_finding": what,
                                          "read_vid": read_vid, "change_vid": change, "origin": root}),
                suggestion=f"rebuild {name} from {up} (vid {change} or later), then review its annotations",
                fixes=[Fix(action="investigate", params={"table": up, "vid": change})],
                cause=f.cause or f"upstream:{up}@{change}"))
    for period, (up, read_vid, pl) in sorted(upstream_periods(ctx, name).items(), reverse=True)[:_FLOWING]:
        out.append(Finding(
            target=name, annotation=None, status="suspect", reason="upstream_incomplete",
            message=(f"period {period} is {pl.status} in {up} as of vid {read_vid}, which this table's build read: "
                     f"this table is {pl.status} for {period} too"),
            evidence=Evidence(vids=[read_vid], values={"upstream": up, "period": period, "read_vid": read_vid,
                                                       "upstream_status": pl.status, "note": pl.note}),
            suggestion=f"rebuild {name} for {period} once {up} is complete for it",
            fixes=[Fix(action="investigate", params={"table": up, "period": period})],
            cause=f"incomplete:{up}@{read_vid}:{period}"))
    return out


# ------------------------------------------------------------------ entry points
def _split(f: Finding) -> list[Finding]:
    """A finding about several annotations as one finding per annotation (review items are per
    annotation; they share the cause, so a review decides the group at once)."""
    if len(f.annotations) <= 1:
        return [f]
    table = ".".join(f.target.split(".")[:3])
    col = f.evidence.values.get("column")
    return [f.model_copy(update={"annotation": k, "annotations": [k],
                                 "target": f"{table}.{col}" if k.startswith("column.") and col else table})
            for k in f.annotations]


def merge_by_cause(findings: list[Finding]) -> list[Finding]:
    """One finding per underlying change and table: findings with the same `cause` on one table
    become one (the worst status, the first's message and reason, every annotation in
    `annotations`, the fixes and evidence vids of all); a finding without a cause about an
    annotation that a caused finding of the table lists joins that finding; exact repeats of (annotation,
    reason) keep the worst. Order: first appearance."""
    groups: dict[tuple[str, str], list[Finding]] = {}
    order: list[tuple[str, str]] = []
    for f in findings:
        table = ".".join(f.target.split(".")[:3])
        key = (table, f.cause or f"~{f.annotation or ''}\x1f{f.reason}\x1f{f.target}")
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(f)
    by_ann: dict[tuple[str, str], tuple[str, str]] = {}
    for key in order:
        if not key[1].startswith("~"):
            for f in groups[key]:
                for a in f.annotations or ([f.annotation] if f.annotation else []):
                    by_ann.setdefault((key[0], a), key)
    for key in list(order):
        if key[1].startswith("~"):
            f0 = groups[key][0]
            home = by_ann.get((key[0], f0.annotation or ""))
            if home is not None:
                groups[home].extend(groups.pop(key))
                order.remove(key)
    out = []
    for key in order:
        fs = groups[key]
        if len(fs) == 1:
            out.append(fs[0])
            continue
        first = max(fs, key=lambda f: _RANK[f.status])  # the worst, the first of equals
        anns = list(dict.fromkeys(a for f in [first, *fs] for a in (f.annotations or ([f.annotation] if f.annotation else []))))
        fixes: list[Fix] = []
        for f in [first, *fs]:
            for x in f.fixes:
                if x not in fixes:
                    fixes.append(x)
        targets = {f.target for f in fs}
        also = sorted({str(f.reason) for f in fs} - {str(first.reason)})
        msg = first.message + (f" (also {', '.join(also)})" if also else "") + \
            (f"; affects {len(anns)} annotations: {', '.join(anns[:8])}{'…' if len(anns) > 8 else ''}" if len(anns) > 1 else "")
        ev = first.evidence.model_copy(update={
            "vids": list(dict.fromkeys(v for f in [first, *fs] for v in f.evidence.vids)),
            "values": {**first.evidence.values, "reasons": {a: str(f.reason) for f in fs
                                                             for a in (f.annotations or [f.annotation or ""])}}})
        out.append(first.model_copy(update={
            "annotations": anns, "annotation": anns[0] if anns else first.annotation, "fixes": fixes[:10],
            "message": msg, "evidence": ev, "target": first.target if len(targets) == 1 else key[0],
            "suggestion": first.suggestion or next((f.suggestion for f in fs if f.suggestion), None)}))
    return out


def table_findings(ctx: Context, name: str, depth: str, tables: dict[str, _Table | None] | None = None,
                   duck: _Duck | None = None, _seen: frozenset[str] = frozenset()) -> list[Finding]:
    """The clock-independent findings of one table at `ctx.vid`, one per annotation (cached);
    `staleness` merges them by cause. They include what flows from upstream (`semantic.lineage`:
    `upstream_changed`, `upstream_incomplete`; `_seen` guards a lineage cycle)."""
    key = (name, ctx.vid, depth)
    got = ctx.cache.findings.take(key)
    if got is not None:
        return got
    tables = {} if tables is None else tables
    t = _get_table(ctx, name, tables)
    if t is None:
        return []
    anns = ctx.annotations(name)
    if depth == "metadata":
        raw = _metadata(ctx, t, anns, tables)
        raw += [f for r in _restatements(t, anns, None) for f in _split(r)]
        raw += propagated(ctx, name, _seen=_seen)
        found = undismissed(raw, anns)
    else:
        found = [f for f in table_findings(ctx, name, "metadata", tables) if f.reason != "values_restated"]
        seen: set[tuple[str | None, str]] = {(f.annotation, str(f.reason)) for f in found}
        own = duck is None
        duck = duck or _Duck(ctx.cat, ctx.vid)
        try:
            extra, checked = _data(ctx, t, anns, tables, duck, seen)
            # the data decides what metadata could only suspect
            found = [f for f in found if (f.annotation, f.reason) not in checked] + extra
            found += [f for r in _restatements(t, anns, duck) for f in _split(r)]
            found = undismissed(found, anns)
        finally:
            if own:
                duck.close()
    ctx.cache.findings.put(key, found)
    return found


def staleness(cat: CatalogAPI, table: str | None = None, snapshot: SnapshotRef = None, depth: str = "metadata",
              now: TimeArg = None, merge: bool = True) -> list[Finding]:
    """Findings for one table (or every table) at `snapshot`: each annotation's basis compared with
    the snapshot history (`metadata`), plus DuckDB checks of the data (`data`). `now` (default: the
    clock) is the time freshness is judged at. One underlying change is one finding per table,
    listing every annotation it affects in `annotations` (`merge=False`: one finding per annotation,
    as review items are)."""
    if depth not in DEPTHS:
        raise InvalidValueError(f"depth must be 'metadata' or 'data', got {depth!r}")
    t_now = resolve_now(now)
    vid = cat.resolve(snapshot)
    ctx = Context(cat, vid)
    tables: dict[str, _Table | None] = {}
    if table is not None:
        require_table(cat, table, vid)
        found = {table: table_findings(ctx, table, depth, tables)}
        due = [table]
    else:
        # the whole catalog: its clock-independent findings once per (vid, depth), and the clock-dependent
        # ones only for the tables due at `now`, so a warm call costs what its answer holds, not the tree
        names = sorted(ctx.tables())
        ctx.load_all_annotations()
        found = _catalog_findings(ctx, names, depth, tables)
        times, by_due = _due_index(ctx, names)
        due = by_due[:bisect.bisect_left(times, t_now)]
    out: list[Finding] = []
    for name in sorted(set(found) | set(due)):
        mine = found.get(name, []) + time_findings(ctx, name, ctx.annotations(name), t_now, tables)
        out += merge_by_cause(mine) if merge else mine
    return [f.model_copy() for f in out]  # shallow: evidence is shared with the cache, do not mutate it


def _catalog_findings(ctx: Context, names: list[str], depth: str,
                      tables: dict[str, _Table | None]) -> dict[str, list[Finding]]:
    """table_findings of every table at ctx.vid that has any, by table (cached per vid and depth)."""
    key = ("*", ctx.vid, depth)
    got = ctx.cache.findings.take(key)
    if got is None:
        duck = _Duck(ctx.cat, ctx.vid) if depth == "data" else None
        try:
            got = {}
            for i, n in enumerate(names, 1):
                if f := table_findings(ctx, n, depth, tables, duck):
                    got[n] = f
                progress.step(i, len(names), n)
        finally:
            if duck is not None:
                duck.close()
        ctx.cache.findings.put(key, got)
    return got
