"""Class `loads_freshness`: the clock checks (a table no longer loaded, a freshness SLA missed or
slower loads than it), `time_due` (the time before which they find nothing) and late data."""

from __future__ import annotations

import datetime as dt
import math
import re
import statistics
from collections.abc import Iterable
from typing import Any

from catalog_core.errors import CatalogError, InvalidValueError
from semantic._bounded import LimitExceededError, literals
from semantic._tables import type_family
from semantic.annotations import parse_duration
from semantic.completeness import logged_names
from semantic.history import Context, Timeline
from semantic.models import Annotation, Finding, Fix, LoadLog
from semantic.staleness.core import (
    DAY,
    Duck,
    Table,
    cause_of,
    day_of,
    declared_keys,
    duck_at,
    files_at,
    finding,
    get_table,
    load_at,
    make_fix,
    quote_id,
    quote_table,
    word_set,
)
from semantic.staleness.replacement_deprecation import successor, successor_evidence


def _data_since(ctx: Context, names: Iterable[str], vid: int) -> list[tuple[int, float]]:
    out = []
    for n in names:
        tl = ctx.timeline(n)
        if tl is not None:
            out.extend(tl.data_after(vid))
    return sorted(set(out))


def _loads_every(tl: Timeline, last: int = 10) -> float | None:
    times = [tt for _, tt in tl.data_commits[-(last + 1):]]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False) if b > a]
    return statistics.median(gaps) if gaps else None


_CADENCE_WORDS = {"hourly": 3600.0, "daily": DAY, "nightly": DAY, "weekly": 7 * DAY, "monthly": 30 * DAY}


def _cadence_words(text: object) -> list[tuple[str, float]]:
    w = word_set(text)
    return [(k, v) for k, v in _CADENCE_WORDS.items() if k in w]


# Prose that says how often a table is loaded: a load verb near a cadence ("refreshed weekly on
# Mondays", "rebuilt every night", "a daily load"), never a cadence word alone ("weekly sales" is the
# grain). Table entries: a cadence not listed is not read.
_DAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_EVERY: dict[str, float] = {**_CADENCE_WORDS, "every hour": 3600.0, "every day": DAY, "every night": DAY,
                            "every week": 7 * DAY, "every month": 30 * DAY}
_CADENCE = rf"(hourly|daily|nightly|weekly|monthly|every (?:hour|day|night|week|month|{_DAYS})|on (?:{_DAYS})s)"
_VERB = r"(?:refresh(?:ed|es)?|re-?built|rebuilds?|re-?loaded|loaded|loads?|updated|updates?|published|runs?|written)"
_SAYS_CADENCE = (re.compile(rf"\b{_VERB}\b(?:\s+\w+){{0,2}}?\s+{_CADENCE}\b", re.IGNORECASE),
                 re.compile(rf"\b{_CADENCE}\s+(?:refresh|load|rebuild|update|run|batch)", re.IGNORECASE))


def said_cadence(text: object) -> tuple[str, float] | None:
    """The one load cadence `text` states (its words, seconds), None when it states none or several."""
    found = {m.group(1).lower() for rx in _SAYS_CADENCE for m in rx.finditer(str(text or ""))}
    every = {_EVERY.get(w, 7 * DAY) for w in found}  # "every monday", "on mondays": weekly
    return (sorted(found)[0], every.pop()) if len(every) == 1 else None


FASTER = 3.0  # loads this many times as often as the prose says, or more, make it false


def cadence_prose(t: Table, ann: Annotation) -> list[Finding]:
    """loads_freshness, metadata: a table's description (or instructions) saying how often it is
    loaded ("refreshed weekly on Mondays") while its latest loads, all after the claim, come FASTER
    times as often or more (a weekly mart rebuilt after every daily load). The prose held at its
    basis (the loads before it came at about its cadence, within a factor of two), and the new
    cadence is seen on the trailing run of three or more loads, each within a FASTER-th of the stated
    period of the one before, on distinct periods of a seventh of it (a burst of commits in one hour,
    a re-run, is not a cadence). Evidence: the load log. `cadence_changed`, stale, no
    fix (prose for a person to rewrite; what it says about the rows, e.g. "complete weeks only",
    may have changed with it). Slower loads are the freshness SLA's and `not_loaded_since`'s."""
    said = said_cadence(ann.value)
    if said is None:
        return []
    words, every = said
    basis = ann.provenance.basis.vid or 0
    allc = t.tl.data_commits
    before = [tt for v, tt in allc if v <= basis][-6:]
    gaps0 = [b - a for a, b in zip(before, before[1:], strict=False)]
    then_every = statistics.median(gaps0) if len(gaps0) >= 2 else 0.0
    if not every / 2 <= then_every <= every * 2:
        return []
    run: list[tuple[int, float]] = []  # the latest loads, each within every/FASTER of the load before it
    for i in range(len(allc) - 1, 0, -1):
        if allc[i][0] <= basis or (allc[i][1] - allc[i - 1][1]) * FASTER > every:
            break
        run.insert(0, allc[i])
    slots = {int(tt // (every / 7)) for _v, tt in run}
    if len(run) < 3 or len(slots) < 3:
        return []
    now_every = statistics.median(b[1] - a[1] for a, b in zip([allc[len(allc) - len(run) - 1], *run], run, strict=False))
    first = run[0]
    return [finding(ann, t.name, "cadence_changed", "stale",
                    f"the {ann.field} says it is loaded {words}; since {day_of(first[1])} (vid {first[0]}) loads come "
                    f"every ~{now_every / 3600:.0f} h ({len(run)} load(s)), against every ~{then_every / 3600:.0f} h "
                    "before: the cadence it states, and what it says of the "
                    "rows with it, may no longer hold", [first[0], run[-1][0]], [first[1], run[-1][1]],
                    {"says": words, "usual_interval_hours_before": round(then_every / 3600, 1),
                     "usual_interval_hours_now": round(now_every / 3600, 1)},
                    cause=cause_of("cadence_more", t.name, first[0]))]


# Prose that says how often the rows are taken (a snapshot's period): "weekly inventory snapshots",
# "snapshotted every week". A table entry of `_CADENCE`'s words; a cadence word alone is not read.
_SAYS_SNAPSHOTS = (re.compile(rf"\b{_CADENCE}\s+(?:[a-z]+\s+){{0,2}}?snapshots?\b", re.IGNORECASE),
                   re.compile(rf"\bsnapshot(?:s|ted)?\s+(?:[a-z]+\s+){{0,2}}?{_CADENCE}\b", re.IGNORECASE))
SNAPSHOT_DATES = 400   # the latest distinct dates read of a snapshot table, at the basis and now


def said_snapshots(text: object) -> tuple[str, float] | None:
    """The one period of snapshots `text` states (its words, seconds), None when it states none or several."""
    found = {m.group(1).lower() for rx in _SAYS_SNAPSHOTS for m in rx.finditer(str(text or ""))}
    every = {_EVERY.get(w, 7 * DAY) for w in found}
    return (sorted(found)[0], every.pop()) if len(every) == 1 else None


def _snapshot_date(t: Table, anns: list[Annotation]) -> str | None:
    """The column a snapshot table dates its rows by: its one date column, else the one date column the grain,
    the partitioning or an additivity names."""
    dates = [c.name for c in t.cols.values() if type_family(c.type) == "date"]
    if len(dates) == 1:
        return dates[0]
    named = set(declared_keys(anns)) | set(t.value.get("partition_by") or []) | {
        str((a.value or {}).get("non_additive_dimension")) for a in anns
        if a.kind == "column" and a.field == "additivity" and isinstance(a.value, dict)}
    picked = [d for d in dates if d in named]
    return picked[0] if len(picked) == 1 else None


def _day(v: object) -> dt.date:
    return v if isinstance(v, dt.date) else dt.date.fromisoformat(str(v)[:10])


def snapshot_cadence(t: Table, ann: Annotation, anns: list[Annotation], duck: Duck) -> list[Finding]:
    """loads_freshness, data: a description saying how often the rows are taken ("weekly inventory snapshots")
    over a table whose dates (`_snapshot_date`) came about that far apart before the claim (the latest
    dates then, their median step within a factor of two of the stated period), while the dates written since
    come FASTER times closer or more (three new dates at least: daily snapshots under a weekly text; a
    round-10 TPC-DS tester's inventory, missed by `cadence_prose`, which reads when commits come). A date
    tells days, so a period under two days is not read. `cadence_changed`, stale, no fix (prose for a
    person to rewrite: what it says of the rows, e.g. a semi-additive sum over weeks, changed with it)."""
    said = said_snapshots(ann.value)
    basis = ann.provenance.basis.vid or 0
    if said is None or said[1] < 2 * DAY or not t.tl.data_after(basis):
        return []
    col = _snapshot_date(t, anns)
    if col is None:
        return []
    words, every = said
    q = (f"SELECT DISTINCT CAST({quote_id(col)} AS DATE) AS d FROM {quote_table(t.name)} WHERE {quote_id(col)} "
         f"IS NOT NULL ORDER BY d DESC LIMIT {SNAPSHOT_DATES}")
    try:
        then = sorted(_day(r[0]) for r in duck_at(t.ctx, load_at(t, basis)).sql(q))[-6:]
    except LimitExceededError:
        raise  # past its limits: the check says so (check_limit_exceeded), it is no evidence
    except CatalogError:
        return []  # no such date column at the basis (added since): no period then to compare with
    new = sorted(d for r in duck.sql(q) if then and (d := _day(r[0])) > then[-1])
    steps0 = [(b - a).days * DAY for a, b in zip(then, then[1:], strict=False)]
    if len(steps0) < 2 or not every / 2 <= statistics.median(steps0) <= every * 2 or len(new) < 3:
        return []
    run = [then[-1], *new]
    step = statistics.median((b - a).days * DAY for a, b in zip(run, run[1:], strict=False))
    if step * FASTER > every:
        return []
    first = next((v for v, _tt in t.tl.data_after(basis)), t.ctx.vid)
    return [finding(ann, t.name, "cadence_changed", "stale",
                    f"the {ann.field} says {words} snapshots; the {len(new)} {col} date(s) written since "
                    f"{new[0].isoformat()} come every ~{step / DAY:g} day(s), against every ~"
                    f"{statistics.median(steps0) / DAY:g} before: the period it states, and what it says of the rows "
                    "with it, may no longer hold", [first, t.ctx.vid], [],
                    {"says": words, "column": col, "usual_step_days_before": statistics.median(steps0) / DAY,
                     "usual_step_days_now": step / DAY, "new_dates": [d.isoformat() for d in new[:5]]},
                    cause=cause_of("cadence_more", t.name, first))]


def _slow_cadence(tl: Timeline, sla: float) -> float | None:
    """The usual interval of the last loads when it is longer than `sla` (the SLA is missed between
    every two loads, whatever the clock says now); else None."""
    if len(tl.data_commits) < 4:
        return None
    every = _loads_every(tl, 4)
    return every if every is not None and every > 1.5 * sla else None


RERUN_LOOKBACK = 10   # trailing re-runs looked at
CHANGING = 0.75       # share of earlier loads that must have changed the table for a re-run to be news


def new_data(ctx: Context, name: str, tl: Timeline) -> list[tuple[int, float]]:
    """The table's data commits without a trailing run of re-runs: commits after which the table's
    row count and every column's statistics are what they were before (the same rows written
    again). Only for a table whose earlier loads changed it (3/4 of the 8 before the run): a
    dimension rebuilt as it was at every load is loaded, not stuck; with under four commits, only a
    trailing run that wrote no file at all (loads of no rows). Evidence: the table's statistics (and
    files) either side of each commit. Cached per (table, last commit)."""
    dc = tl.data_commits
    obj = ctx.table(name)
    if len(dc) < 2 or obj is None:
        return dc
    key = ("new_data", obj.path, dc[-1][0])
    got = ctx.cache.findings.take(key)
    if got is not None:
        return got[0]

    def same(v: int) -> bool:
        a, b = ctx.cat.get(obj.path, vid=v), ctx.cat.get(obj.path, vid=v - 1)
        if a is None or b is None:
            return False
        sa, sb = a.value.get("stats") or {}, b.value.get("stats") or {}
        return isinstance(sa.get("row_count"), int) and sa.get("row_count") == sb.get("row_count") and \
            bool(sa.get("columns")) and sa.get("columns") == sb.get("columns")

    cut = len(dc)
    while cut > 1 and len(dc) - cut < RERUN_LOOKBACK and same(dc[cut - 1][0]):
        cut -= 1
    out = dc
    if cut < len(dc):
        prior = dc[max(1, cut - 8):cut]
        if len(dc) >= 4 and prior and sum(1 for v, _ in prior if not same(v)) >= CHANGING * len(prior):
            out = dc[:cut]
        elif len(dc) < 4 and all(_wrote_nothing(ctx, name, v) for v, _ in dc[cut:]):
            # too short a history to know its loads: only commits that wrote no file at all (a load of no
            # rows) are no new data (a held-out TPC-DS inventory, loaded once, then re-run with no new rows:
            # its SLA was left unflagged); a table rebuilt as it was is loaded (a dimension that did not change)
            out = dc[:cut]
    ctx.cache.findings.put(key, (out,))
    return out


def _wrote_nothing(ctx: Context, name: str, vid: int) -> bool:
    """Did the commit at `vid` leave the table's files as they were (`files_at`, before and after it)?"""
    return {f.path for f in files_at(ctx, name, vid)} == {f.path for f in files_at(ctx, name, vid - 1)}


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
        fresh = new_data(ctx, name, tl)
        due.append(-math.inf if not fresh or _slow_cadence(tl, sla) is not None else fresh[-1][1] + sla)
    if last is not None and len(dc) >= 3:
        due.append(last[1] + max(3 * (_loads_every(tl) or DAY), 7 * DAY))
    return min(due, default=None)


def due_index(ctx: Context, names: list[str]) -> tuple[list[float], list[str]]:
    """Every table's `time_due` at ctx.vid, ascending (cached per vid: it does not depend on the clock)."""
    key = ("due", ctx.vid)
    got = ctx.cache.findings.take(key)
    if got is None:
        pairs = sorted((d, n) for n in names if (d := time_due(ctx, n, ctx.annotations(n))) is not None)
        got = ctx.cache.findings.put(key, ([d for d, _ in pairs], [n for _, n in pairs]))
    return got


def _dead_findings(ctx: Context, name: str, anns: list[Annotation], now: float, tl: Timeline,
                   tables: dict[str, Table | None]) -> list[Finding]:
    """not_loaded_since: a table that used to load and has not for three usual intervals (and a
    week), one finding per claim it makes wrong, one cause; its successor by statistics, never a new
    SLA. The claims: its freshness SLA, and, with a successor on strong evidence, the deprecation it
    lacks (`table.deprecated`, absent: accepting writes it); with neither, the table itself. Its
    description still says what its rows are (rounds 10-12 testers judged it true)."""
    out: list[Finding] = []
    dc = tl.data_commits
    last = dc[-1] if dc else None
    if last is not None and len(dc) >= 3:
        every = _loads_every(tl) or DAY
        gap = now - last[1]
        if gap > max(3 * every, 7 * DAY):
            t = get_table(ctx, name, tables)
            best = successor(ctx, t, last[1] + every, tables) if t is not None else None
            vids, times = [last[0]], [last[1]]
            sugg = None
            nfix: list[Fix] = []
            values: dict[str, Any] = {"last_load": day_of(last[1]), "days": round(gap / DAY, 1),
                                      "usual_interval_hours": round(every / 3600, 1)}
            ev = successor_evidence(t, best[1], last[1], every) if t is not None and best is not None else None
            if best is not None and ev is not None and ev["strong"]:
                o = best[1]
                vids.append(o.tl.data_commits[-1][0])
                times.append(o.tl.data_commits[-1][1])
                values.update(successor=o.name, similarity=round(best[0], 2), evidence=ev)
                sugg = f"successor {o.name} (alike columns and rows per day, still loading): deprecate {name}"
                nfix = [make_fix("successor", table=o.name)]
            else:
                # no table continues it on strong evidence: say what to look at, offer no successor
                values.update(candidate=ev)
                best = None
            msg = (f"not loaded since {day_of(last[1])} ({gap / DAY:.0f} days; it used to load every "
                   f"{every / 3600:.0f} h)")
            if best is None:
                msg += (f"; no table continues it on strong evidence: check who loads it (its last load, vid "
                        f"{last[0]})" + (f", and whether {ev['table']} (columns alike {ev['columns_alike']:.0%}) "
                                         "replaces it" if ev else ""))
            cause = cause_of("dead", name, last[0])
            about: list[Annotation | None] = [a for a in anns if a.key == "table.freshness_sla" and
                                              (a.provenance.basis.vid or 0) <= last[0]]
            if best is not None and not any((a.provenance.basis.vid or 0) > last[0] for a in anns
                                            if a.kind == "table"):
                about.insert(0, None)  # the deprecation it lacks
            elif not about:
                about = [None]  # the table itself: no claim of it says it loads, and nothing continues it
            for a in about:
                out.append(finding(a, name, "not_loaded_since", "stale" if best else "suspect", msg, vids, times,
                                   values, sugg, nfix, cause=cause,
                                   missing="table.deprecated" if a is None and best is not None else None))
    return out


class Clock:
    """What a clock check reads: the table's cached timeline and annotations, and the time `now`."""

    def __init__(self, ctx: Context, name: str, anns: list[Annotation], now: float, tl: Timeline,
                 tables: dict[str, Table | None]) -> None:
        self.ctx, self.name, self.anns, self.now, self.tl, self.tables = ctx, name, anns, now, tl, tables


def dead_check(c: Clock, _a: object) -> list[Finding]:
    return _dead_findings(c.ctx, c.name, c.anns, c.now, c.tl, c.tables)


def sla_check(c: Clock, _a: object) -> list[Finding]:
    """freshness_sla_missed: the last load older than the SLA at `now`, or loads that arrive slower
    than the SLA (with a description naming the old cadence, one cause: `cadence_changed` on it, since
    what is false there is the cadence the prose states, not an SLA)."""
    ctx, name, anns, now, tl = c.ctx, c.name, c.anns, c.now, c.tl
    obj = ctx.table(name)
    assert obj is not None
    out: list[Finding] = []
    dc = new_data(ctx, name, tl)
    reruns = len(tl.data_commits) - len(dc)
    last = dc[-1] if dc else None
    for a in anns:
        if a.key != "table.freshness_sla":
            continue
        try:
            sla = parse_duration(a.value)
        except InvalidValueError:
            continue
        if last is None:
            out.append(finding(a, name, "freshness_sla_missed", "stale", "never loaded", [obj.vid],
                                values={"sla": a.value}))
            continue
        age = now - last[1]
        slow = _slow_cadence(tl, sla)
        if age > sla or slow is not None:
            sugg = None
            sfix: list[Fix] = []
            # a new SLA only on the cadence's evidence: the loads keep arriving, each interval past the SLA
            # (`slow`). A table overdue after loads within it, or whose job re-ran without new data, has
            # stopped or broken: a looser SLA would hide that, so the finding says what to check
            if slow is not None and not reruns:
                new_sla = f"PT{math.ceil(slow * 1.1 / 3600)}H"
                sugg = f"loads now arrive every ~{slow / 3600:.0f} h; update freshness_sla (e.g. {new_sla})"
                sfix = [make_fix("update_freshness_sla", sla=new_sla)]
            first_slow = last[0]  # the first load of the trailing run of slow intervals
            for (_v0, t0), (v1, t1) in reversed(list(zip(dc[:-1], dc[1:], strict=False))):
                if t1 - t0 <= sla:
                    break
                first_slow = v1
            cause = cause_of("cadence", name, first_slow) if slow is not None else None
            msg = (f"loads arrive every ~{slow / 3600:.0f} h, longer than the SLA {a.value}: it is missed between "
                   f"loads (last loaded {day_of(last[1])})" if slow is not None else
                   f"last loaded {day_of(last[1])} ({age / 3600:.1f} h ago); the SLA is {a.value}")
            if reruns:
                msg += (f"; the {reruns} commit(s) since wrote the same rows again (re-runs, no new data): check the "
                        "job that loads it")
            out.append(finding(a, name, "freshness_sla_missed", "stale", msg,
                                [last[0]], [last[1]], {"sla": a.value, "age_hours": round(age / 3600, 2), "now": now,
                                                       **({"usual_interval_hours": round(slow / 3600, 1)} if slow else {})},
                                sugg, sfix, cause=cause))
            if slow is not None:
                for d in anns:
                    words = _cadence_words(d.value) if d.key == "table.description" else []
                    if words and all(abs(math.log10(slow / sec)) > 0.5 for _w, sec in words) and \
                            (d.provenance.basis.vid or 0) < last[0]:
                        out.append(finding(d, name, "cadence_changed", "suspect",
                                            f"the description says {', '.join(w for w, _ in words)}; loads arrive every "
                                            f"~{slow / 3600:.0f} h", [last[0]], [last[1]],
                                            {"says": [w for w, _ in words]}, cause=cause))
    return out


LOG_GONE = 3e-4  # chance at most that a status held its share of the log's rows before and none of them since by
#                  chance (binomial): below it, a new status that took its place is its new spelling


def log_statuses(ctx: Context, t: Table, ann: Annotation, duck: Duck) -> list[Finding]:
    """A load log whose rows for this table now carry a status none of the lists the `load_log`
    annotation declares (complete, partial, failed) names, and that none carried when it was written:
    those loads count as failed (the contract of `load_log`), so the claim no longer says how to read
    the log (a job that writes 'succeeded' where it wrote 'success'). enum_violated, stale. When a
    declared status held rows before the new one first appeared (by the log's partition: an ISO
    period) and none since, with a chance under `LOG_GONE` that its share left it out by
    chance, the new status is its new spelling: `value_map {column, map, keep}` adds it beside the old
    one in the same list (the older rows keep the old); otherwise `investigate` on the status column."""
    try:
        spec = LoadLog.model_validate(ann.value)
    except ValueError:
        return []
    names = logged_names(t.name, spec)
    log, st = spec.table, spec.status_column
    cond = f"CAST({quote_id(spec.table_column)} AS VARCHAR) IN ({literals(names)})"
    q = (f"SELECT CAST({quote_id(st)} AS VARCHAR), count(*) FROM {quote_table(log)} WHERE {cond} "
         f"GROUP BY 1 ORDER BY 2 DESC LIMIT 50")
    basis = ann.provenance.basis.vid
    try:
        now = {str(s): int(n) for s, n in duck.sql(q) if s is not None}
        then = {str(s): int(n) for s, n in duck_at(ctx, basis).sql(q) if s is not None} if basis else {}
    except CatalogError:
        return []
    lists = {"complete": spec.complete, "partial": spec.partial, "failed": spec.failed}
    declared = {v for vs in lists.values() for v in vs}
    new = sorted(s for s in now if s not in declared and s not in then)
    if not new or not then:
        return []
    s0 = new[0]
    total = sum(then.values())
    fix, since = make_fix("investigate", columns=[st], table=log), ""
    per = quote_id(spec.partition_column)
    try:
        (first,), = duck.sql(f"SELECT min(CAST({per} AS VARCHAR)) FROM {quote_table(log)} WHERE {cond} AND "
                             f"CAST({quote_id(st)} AS VARCHAR) = {literals([s0])}")
        after = {str(s): int(n) for s, n in duck.sql(
            f"SELECT CAST({quote_id(st)} AS VARCHAR), count(*) FROM {quote_table(log)} WHERE {cond} AND "
            f"CAST({per} AS VARCHAR) >= {literals([str(first)])} GROUP BY 1") if s is not None} if first else {}
    except CatalogError:
        first, after = None, {}
    n_after = sum(after.values())
    gone = [v for vs in lists.values() for v in vs if then.get(v) and not after.get(v)
            and (1 - then[v] / total) ** n_after < LOG_GONE]
    if len(gone) == 1 and after.get(s0, 0) * 2 >= n_after:
        fix = make_fix("value_map", column=st, map={gone[0]: s0}, keep=True, table=log)
        since = f"; {gone[0]!r}, {then[gone[0]] / total:.0%} of its rows before, holds none of the {n_after} since " \
                f"{s0!r} first appeared: the log writes it anew"
    which = "; ".join(f"{k}: {', '.join(vs) or '-'}" for k, vs in lists.items())
    return [finding(ann, t.name, "enum_violated", "stale",
                    f"{log} logs {now[s0]} load(s) of {t.name} with status {s0!r}, in none of the lists this declares "
                    f"({which}), so they count as failed{since}",
                    [basis, ctx.vid], values={"log": log, "status_column": st, "new": new, "statuses": now,
                                              **({"first": str(first)} if first is not None else {})},
                    suggestion=f"add {s0!r} to the list {gone[0]!r} is in" if fix.action == "value_map" else
                    f"say which list {s0!r} belongs to",
                    fixes=[fix], cause=cause_of("log_status", log, None, st))]
