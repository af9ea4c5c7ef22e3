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

from rapidfuzz import fuzz

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
from semantic.errors import did_you_mean
from semantic.history import Context, SchemaChange, Timeline, type_family
from semantic.models import Annotation, ColumnRef, ColumnStats, Evidence, Finding, Fix

__all__ = ["staleness", "time_findings", "time_due", "table_findings", "resolve_now", "worst", "DEPTHS", "finding_id",
           "undismissed"]

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
             suggestion: str | None = None, fixes: Iterable[Fix] = ()) -> Finding:
    """A finding. Invariant: a suggestion (prose for people) comes with at least one `Fix` (the same
    repair, typed, for programs); a program never needs to parse the suggestion."""
    fx = list(fixes)
    if suggestion is not None and not fx:
        raise ValueError(f"a {reason} finding with a suggestion needs its fixes")
    vs = list(dict.fromkeys([*([ann.vid] if ann is not None and ann.vid is not None else []), *vids]))
    return Finding(target=target, annotation=None if ann is None else ann.key, status=status,  # type: ignore[arg-type]
                   reason=reason, message=message,  # type: ignore[arg-type]
                   evidence=Evidence(vids=vs, times=list(times), values=values or {}), suggestion=suggestion,
                   fixes=fx)


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


def _rename_candidate(t: _Table, ref: ColumnRef, basis_stats: ColumnStats | None,
                      ch: SchemaChange | None) -> tuple[str, int | None] | None:
    """A column added in the same commit that dropped `ref`, with the same type family and matching
    statistics (or statistics scaled by 10^k): (its name, k or None when only the name matched)."""
    if ch is None:
        return None
    best: tuple[float, str, int | None] | None = None
    for c in ch.added:
        if type_family(c.type) != type_family(ref.type) or column_id(c) not in t.cols:
            continue
        name = c.name
        k = scale_of(basis_stats, t.stat(name))
        sim = fuzz.ratio(ref.name.lower(), name.lower())
        if k is None and sim < 60:
            continue
        score = (100 if k is not None else 0) + sim
        if best is None or score > best[0]:
            best = (score, name, k)
    return None if best is None else (best[1], best[2])


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
                                [_fix("rename", old=ref.name, new=cur.name, scale=0)]))
        elif fate == "type" and cur is not None:
            from_t, to_t = ref.type, str(cur.type)
            status = "suspect" if type_family(from_t) == type_family(to_t) else "stale"
            out.append(_finding(ann, label, "column_type_changed", status,
                                f"column {ref.name!r} changed type from {from_t} to {to_t}",
                                ev or [t.obj.vid], times, {"column": ref.name, "before": from_t, "after": to_t}))
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
                                    sugg, fixes))
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
                                    [_fix("rename", old=ref.name, new=name, scale=k if unit_changed and k else 0)]))
            else:
                out.append(_finding(ann, label, "column_dropped", "stale",
                                    f"column {ref.name!r} was dropped{when}", ev or [t.obj.vid], times,
                                    {"column": ref.name}))
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
                                fixes=[_fix("update_unit", column=cur.name, scale=k)]))
    return out


def _scd2_change(t: _Table, since: int) -> SchemaChange | None:
    for ch in t.tl.changes_after(since):
        if any(c.name.lower() in SCD2 for c in ch.added):
            return ch
    return None


def _grain_findings(t: _Table, ann: Annotation) -> list[Finding]:
    out = _column_findings(t, ann, ann.provenance.basis.columns)
    if out:
        return out
    keys = [str(k) for k in (ann.value or {}).get("keys") or []]
    b = ann.provenance.basis
    ch = _scd2_change(t, b.vid)
    if ch is not None and not any(k.lower() in SCD2 for k in keys):
        out.append(_finding(ann, t.name, "grain_violated", "suspect",
                            f"{', '.join(c.name for c in ch.added)} appeared at vid {ch.vid} ({_day(ch.time)}): "
                            f"the table keeps versions, so {', '.join(keys) or 'the declared keys'} may repeat",
                            [ch.vid], [ch.time], {"keys": keys, "added": [c.name for c in ch.added]},
                            f"SCD2 since {_day(ch.time)}: filter is_current",
                            [_fix("filter", table=t.name, column="is_current")]))
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
    added = [c for ch in t.tl.changes_after(b.vid) for c in ch.added]
    if added:
        chs = t.tl.changes_after(b.vid)
        out.append(_finding(ann, t.name, "schema_changed", "suspect",
                            f"columns added since the grain was written: {', '.join(c.name for c in added)}",
                            [c.vid for c in chs], [c.time for c in chs], {"added": [c.name for c in added]}))
    return out


def _table_level(t: _Table, ann: Annotation) -> list[Finding]:
    b = ann.provenance.basis
    out: list[Finding] = []
    chs = t.tl.changes_after(b.vid)
    if chs:
        added = [c.name for ch in chs for c in ch.added]
        dropped = [c.name for ch in chs for c in ch.dropped]
        what = "; ".join(x for x in (f"added {', '.join(added)}" if added else "",
                                     f"dropped {', '.join(dropped)}" if dropped else "") if x) or "types changed"
        out.append(_finding(ann, t.name, "schema_changed", "suspect",
                            f"the schema changed {len(chs)} time(s) since this was written: {what}",
                            [c.vid for c in chs], [c.time for c in chs], {"added": added, "dropped": dropped}))
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
        if ch is not None and not any(w in cond for w in SCD2):
            out.append(_finding(ann, t.name, "cardinality_violated", "suspect",
                                f"{to} keeps versions since vid {ch.vid} ({_day(ch.time)}): one {t.name} row may match "
                                "several", [ch.vid], [ch.time], {"to": to, "added": [c.name for c in ch.added]},
                                f"SCD2 since {_day(ch.time)}: filter is_current (condition '{to}.is_current')",
                                [_fix("filter", table=to, column="is_current")]))
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
    return _column_findings(t, ann, ann.provenance.basis.columns, missing_reason="verified_query_fails",
                            missing_status="suspect")


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
            out += found
        elif a.kind == "relationship":
            out += _relationship(ctx, t, a, tables)
        elif a.kind == "metric":
            out += _metric(t, a)
        elif a.kind == "verified_query":
            out += _verified_meta(ctx, t, a)
    flagged = {f.annotation for f in out}
    out += [f for f in _restated(t, anns) if f.annotation not in flagged]
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


def _restated(t: _Table, anns: list[Annotation]) -> list[Finding]:
    """values_restated: a value-level annotation (enum, sample_values, a column description naming
    one of the column's annotated values, a metric or verified query filtering a string column on
    literals) whose basis predates a full rewrite of a normally appended table. A literal listed by
    a value annotation of the same column re-authored after the rewrite counts as re-checked."""
    rw = _rewrites(t)
    if not rw:
        return []
    out: list[Finding] = []
    values_of: dict[int, list[tuple[int, list[Any]]]] = {}
    for a in anns:
        if a.kind == "column" and a.field in ("enum", "sample_values") and a.column_id is not None:
            values_of.setdefault(a.column_id, []).append((a.provenance.basis.vid, list(a.value or [])))

    def since(basis: int) -> tuple[int, float] | None:
        later = [r for r in rw if r[0] > basis]
        return later[-1] if later else None

    def rechecked(name: str, vals: list[str], after: int) -> bool:
        cur = t.col(name)
        cid = column_id(cur) if cur else -1
        ok = {str(v) for b, vs in values_of.get(cid, []) if b >= after for v in vs}
        return bool(vals) and all(v in ok for v in vals)

    for a in anns:
        b = a.provenance.basis.vid
        hit = since(b)
        if hit is None:
            continue
        cols: dict[str, list[str]] = {}
        if a.kind == "column" and a.field in ("enum", "sample_values") and a.value:
            cols = {str(a.column): []}
        elif a.kind == "column" and a.field == "description" and a.column_id is not None:
            words = set(re.findall(r"\w+", str(a.value or "").lower()))
            named = [str(v) for _, vs in values_of.get(a.column_id, []) for v in vs
                     if isinstance(v, str) and v.lower() in words]
            if named:
                cols = {str(a.column): sorted(set(named))}
        elif a.kind == "metric":
            cols = _literals(str((a.value or {}).get("filter") or ""), t)
        elif a.kind == "verified_query":
            cols = _literals(str((a.value or {}).get("sql") or ""), t)
        cols = {c: vs for c, vs in cols.items() if not (a.kind in ("metric", "verified_query") and rechecked(c, vs, hit[0]))}
        if not cols:
            continue
        v, tt = hit
        names = ", ".join(sorted(cols))
        vals = sorted({x for vs in cols.values() for x in vs})
        target = f"{t.name}.{a.column}" if a.kind == "column" else t.name
        out.append(_finding(a, target, "values_restated", "suspect",
                            f"{t.name} was rewritten in full at vid {v} ({_day(tt)}) after this was written: "
                            f"values of {names} may have been restated; check with get_column_values",
                            [v], [tt], {"columns": sorted(cols), "values": vals, "rewrite_vid": v,
                                        "by_column": {c: sorted(set(vs)) for c, vs in cols.items()}},
                            f"check the values of {names} with get_column_values",
                            [_fix("investigate", columns=sorted(cols))]))
    return out


def _restated_data(t: _Table, found: list[Finding], duck: _Duck) -> list[Finding]:
    """At data depth, a values_restated finding that names literal values is decided by the data:
    dropped when every value still occurs in its column, stale when some no longer do."""
    out = []
    for f in found:
        by_col = f.evidence.values.get("by_column") or {} if f.reason == "values_restated" else {}
        if not by_col or not all(by_col.values()):
            out.append(f)
            continue
        gone: list[str] = []
        try:
            for c, vals in by_col.items():
                q = _q(c)
                there = {r[0] for r in duck.sql(f"SELECT DISTINCT {q} FROM {_tq(t.name)} WHERE {q} IN "
                                                 f"({literals(list(vals))})")}
                gone += [v for v in vals if v not in there]
        except CatalogError:  # (a limit too): the metadata finding stays
            out.append(f)
            continue
        if gone:
            out.append(f.model_copy(update={
                "status": "stale", "message": f"{f.message.split(':')[0]}: {gone} no longer occur in the data",
                "evidence": f.evidence.model_copy(update={"values": {**f.evidence.values, "missing": gone}}),
                "suggestion": "check the current values with get_column_values",
                "fixes": [_fix("investigate", columns=sorted(by_col))]}))
    return out


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
    if t.col("is_current") is not None:
        cur_dup = duck.sql(f"SELECT count(*) FROM (SELECT {kq} FROM {_tq(t.name)} WHERE is_current "
                           f"GROUP BY ALL HAVING count(*) > 1)")[0][0]
        ch = _scd2_change(t, a.provenance.basis.vid)
        since = f" since {_day(ch.time)}" if ch else ""
        if not cur_dup:
            sugg = f"SCD2{since}: filter is_current"
            gfix = [_fix("filter", table=t.name, column="is_current")]
    return [_finding(a, t.name, "grain_violated", "stale",
                     f"{dup[0]} key value(s) of ({', '.join(keys)}) repeat, e.g. {dup[1]}", [ctx.vid, last],
                     values={"duplicate_keys": dup[0], "example": str(dup[1])}, suggestion=sugg, fixes=gfix)]


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
            st = _get_table(ctx, side, tables)
            if st is not None and st.col("is_current") is not None and "is_current" not in str(cond or "").lower():
                cur = duck.sql(f"SELECT count(*) FROM (SELECT {kq} FROM {_tq(side)} WHERE is_current GROUP BY ALL "
                               "HAVING count(*) > 1)")[0][0]
                if not cur:
                    ch = _scd2_change(st, a.provenance.basis.vid)
                    sugg = f"SCD2{' since ' + _day(ch.time) if ch else ''}: filter is_current (condition '{side}.is_current')"
                    cfix = [_fix("filter", table=side, column="is_current")]
            out.append(_finding(a, t.name, "cardinality_violated", "stale",
                                f"declared {card}, but {dup} key value(s) repeat in {side}", [ctx.vid, last],
                                values={"side": side, "duplicate_keys": dup}, suggestion=sugg, fixes=cfix))
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
        changed = [v for v, _ in _data_since(ctx, val.get("tables") or [t.name], at)]
        return [_finding(a, t.name, "verified_query_changed", "suspect",
                         f"the verified query returns a different result than at vid {at}",
                         [at, *changed[-3:]] or [ctx.vid],
                         values={"fingerprint_then": val.get("result_fingerprint"), "fingerprint_now": detail},
                         suggestion="re-check the answer and re-verify the query", fixes=[_fix("reverify")])]
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


def _similar(a: _Table, b: _Table) -> float:
    mine = list(a.cols.values())
    if not mine:
        return 0.0
    hits = 0
    for c in mine:
        n = c.name.replace("_", " ").lower()
        f = type_family(c.type)
        if any(type_family(d.type) == f and fuzz.token_set_ratio(n, d.name.replace("_", " ").lower()) >= 60
               for d in b.cols.values()):
            hits += 1
    return hits / len(mine)


def _successor(ctx: Context, t: _Table, after: float, tables: dict[str, _Table | None]) -> tuple[float, _Table] | None:
    """The most similar other table (same-type columns with similar names) still loading after
    `after`; cached per (table, snapshot vid)."""
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
        due.append(-math.inf if last is None else last[1] + sla)
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


def time_findings(ctx: Context, name: str, anns: list[Annotation], now: float,
                  tables: dict[str, _Table | None] | None = None) -> list[Finding]:
    """freshness_sla_missed and not_loaded_since at `now` (cheap: cached timelines)."""
    tables = {} if tables is None else tables
    obj = ctx.table(name)
    tl = ctx.timeline(name) if obj is not None else None
    if obj is None or tl is None:
        return []
    out: list[Finding] = []
    dc = tl.data_commits
    last = dc[-1] if dc else None
    deprecated = any(a.key == "table.deprecated" for a in anns)
    for a in anns:
        if a.key != "table.freshness_sla" or deprecated:
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
        if age > sla:
            every = _loads_every(tl, 4)
            sugg = None
            sfix: list[Fix] = []
            if every and every > sla:
                new_sla = f"PT{math.ceil(every * 1.1 / 3600)}H"
                sugg = f"loads now arrive every ~{every / 3600:.0f} h; update freshness_sla (e.g. {new_sla})"
                sfix = [_fix("update_freshness_sla", sla=new_sla)]
            out.append(_finding(a, name, "freshness_sla_missed", "stale",
                                f"last loaded {_day(last[1])} ({age / 3600:.1f} h ago); the SLA is {a.value}",
                                [last[0]], [last[1]], {"sla": a.value, "age_hours": round(age / 3600, 2), "now": now},
                                sugg, sfix))
    if last is not None and len(dc) >= 3 and not deprecated:
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
                sugg = f"successor {o.name} (similar columns, still loading)"
                nfix = [_fix("successor", table=o.name)]
            out.append(_finding(None, name, "not_loaded_since", "stale" if best else "suspect",
                                f"not loaded since {_day(last[1])} ({gap / DAY:.0f} days; it used to load every "
                                f"{every / 3600:.0f} h)", vids, times, values, sugg, nfix))
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


# ------------------------------------------------------------------ entry points
def table_findings(ctx: Context, name: str, depth: str, tables: dict[str, _Table | None] | None = None,
                   duck: _Duck | None = None) -> list[Finding]:
    """The clock-independent findings of one table at `ctx.vid` (cached)."""
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
        found = undismissed(_metadata(ctx, t, anns, tables), anns)
    else:
        found = list(table_findings(ctx, name, "metadata", tables))
        seen: set[tuple[str | None, str]] = {(f.annotation, str(f.reason)) for f in found}
        own = duck is None
        duck = duck or _Duck(ctx.cat, ctx.vid)
        try:
            extra, checked = _data(ctx, t, anns, tables, duck, seen)
            # the data decides what metadata could only suspect
            found = [f for f in found if (f.annotation, f.reason) not in checked] + extra
            found = undismissed(_restated_data(t, found, duck), anns)
        finally:
            if own:
                duck.close()
    ctx.cache.findings.put(key, found)
    return found


def staleness(cat: CatalogAPI, table: str | None = None, snapshot: SnapshotRef = None, depth: str = "metadata",
              now: TimeArg = None) -> list[Finding]:
    """Findings for one table (or every table) at `snapshot`: each annotation's basis compared with
    the snapshot history (`metadata`), plus DuckDB checks of the data (`data`). `now` (default: the
    clock) is the time freshness is judged at."""
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
        out += found.get(name, [])
        out += time_findings(ctx, name, ctx.annotations(name), t_now, tables)
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
