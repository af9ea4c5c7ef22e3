"""The detector's entry points: `staleness` (one table or the whole catalog, merged by cause),
`table_findings` (the clock-independent findings of one table at a vid, cached: the registry's
metadata checks, then its data checks replacing what the data decides), `time_findings` (the clock
checks at `now`) and `propagated` (what flows downstream through lineage).

A table's clock-independent findings are carried over from the last vid this process computed them
at when nothing they depend on was written since (`semantic.staleness.incremental`, whose docstring
states the dependency rule), so a check after a change re-runs the checks of the tables the change
reaches, not of the catalog."""

from __future__ import annotations

import bisect
import re
from collections.abc import Collection

from catalog_core import lake
from catalog_core.api import CatalogAPI, SnapshotRef
from catalog_core.errors import InvalidValueError
from catalog_core.model import TimeArg
from semantic import progress
from semantic._tables import require_table
from semantic.completeness import upstream_periods
from semantic.history import Context
from semantic.models import Annotation, Evidence, Finding, Fix
from semantic.staleness import instructions
from semantic.staleness.core import (
    DEPTHS,
    RANK,
    Duck,
    Table,
    get_table,
    resolve_now,
    rewrote_rows_read,
    router_of,
)
from semantic.staleness.decisions import merge_by_cause, undismissed
from semantic.staleness.incremental import affected, changes_since
from semantic.staleness.keys_joins import is_join_prose, join_prose
from semantic.staleness.loads_freshness import Clock, due_index
from semantic.staleness.registry import (
    Env,
    catalog_wide_claims,
    catalog_wide_reasons,
    clock_checks,
    replaced_at_data,
    run_annotation_checks,
    run_catalog_wide,
    run_table_checks,
)
from semantic.staleness.values_units import is_unit_prose, unit_prose, unit_rewritten_prose

# what flows downstream: a change of an input's data or of what its columns hold (a rename is neither: the data
# a build read is what the input holds, under another name)
CHANGE_REASONS = ("values_restated", "column_dropped", "column_type_changed", "schema_changed",
                  "unit_drift", "grain_violated", "upstream_changed")


_CAUSE_VID = re.compile(r"@(\d+)")


_FLOWING = 5  # upstream_incomplete findings per table at most (newest periods)


def _change_vid(f: Finding) -> int:
    m = _CAUSE_VID.search(f.cause or "")
    if f.reason == "upstream_changed":
        return int(f.evidence.values.get("change_vid") or max(f.evidence.vids, default=0))
    return int(m.group(1)) if m else max(f.evidence.vids, default=0)


def _flowing(findings: list[Finding]) -> list[Finding]:
    """Of an input's findings, one per cause that changed its data or schema (`CHANGE_REASONS`):
    the worst of the cause's change findings, the first in `CHANGE_REASONS` of equals (then by target
    and annotation), so what reaches the readers does not hang on the order the checks ran in (a
    dropped column's `column_dropped` and a relationship's `join_key_missing` are one cause; the
    latter is no change of data). Findings without a cause each stand alone. Ordered by cause."""
    best: dict[str, Finding] = {}

    def rank(f: Finding) -> tuple[int, int, str, str]:
        return -RANK[f.status], CHANGE_REASONS.index(str(f.reason)), f.target, f.annotation or ""

    for f in findings:
        if f.reason not in CHANGE_REASONS or _renames_only(f) or instructions.is_hidden(f):
            continue
        key = f.cause or f"~{f.target}\x1f{f.annotation or ''}\x1f{f.reason}"
        if key not in best or rank(f) < rank(best[key]):
            best[key] = f
    return [best[k] for k in sorted(best)]


def _renames_only(f: Finding) -> bool:
    """A schema change that only renamed columns: the rows a build read are those the input holds, under
    other names (the round-7 cryptic tester's refunds date column renamed, read as a change of its mart)."""
    v = f.evidence.values
    return f.reason == "schema_changed" and bool(v.get("renamed")) and not v.get("added") and not v.get("dropped")


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
        for f in _flowing(table_findings(ctx, up, "metadata", _seen=seen)):
            change = _change_vid(f)
            # an input that is itself suspect (built before a change further up) passes that on
            # whenever this build read it; a change of the input's own is after the read or not at all
            if change <= read_vid and f.reason != "upstream_changed":
                continue
            # a change of the input's own reaches this build only when it altered rows the build read: new
            # rows appended after the read (a unit, a duplicate, a value in new loads) or a change of schema
            # alone (a column dropped) leave the data this table was built from as it was
            if f.reason != "upstream_changed" and not rewrote_rows_read(ctx, up, read_vid, change):
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


def time_findings(ctx: Context, name: str, anns: list[Annotation], now: float,
                  tables: dict[str, Table | None] | None = None) -> list[Finding]:
    """freshness_sla_missed and not_loaded_since at `now` (cheap: cached timelines). A table no
    longer loaded is one finding (not_loaded_since, its successor by statistics) about its freshness
    SLA and the deprecation it lacks (`loads_freshness._dead_findings`), never a suggestion of a new SLA; an SLA the usual interval between
    loads exceeds is missed between every two loads, whatever the time now (with a description that
    names the old cadence, one finding)."""
    tables = {} if tables is None else tables
    obj = ctx.table(name)
    tl = ctx.timeline(name) if obj is not None else None
    if obj is None or tl is None:
        return []
    if any(a.key == "table.deprecated" for a in anns):
        return []
    out: list[Finding] = []
    for check in clock_checks():
        if check.fallback and out:
            continue
        out += check.run(Clock(ctx, name, anns, now, tl, tables), None)
    return undismissed(out, anns)


def table_findings(ctx: Context, name: str, depth: str, tables: dict[str, Table | None] | None = None,
                   duck: Duck | None = None, _seen: frozenset[str] = frozenset()) -> list[Finding]:
    """The clock-independent findings of one table at `ctx.vid`, one per annotation (cached);
    `staleness` merges them by cause. They include what flows from upstream (`semantic.lineage`:
    `upstream_changed`, `upstream_incomplete`; `_seen` guards a lineage cycle)."""
    key = (name, ctx.vid, depth)
    got = ctx.cache.findings.take(key)
    if got is not None:
        return got
    got = _carried(ctx, name, depth)
    if got is not None:
        got = _with_catalog_wide(ctx, name, got, tables)
        ctx.cache.findings.put(key, got)
        return got
    tables = {} if tables is None else tables
    t = get_table(ctx, name, tables)
    if t is None:
        return []
    anns = ctx.annotations(name)
    if depth == "metadata":
        env = Env(ctx, t, anns, tables)
        raw = run_annotation_checks(env, "metadata") + run_table_checks(env, "metadata")
        raw += propagated(ctx, name, _seen=_seen)
        raw += unit_prose(t, anns, raw)
        raw += unit_rewritten_prose(t, anns, raw)
        raw += join_prose(t, anns, raw)
        raw += instructions.convention_findings(t, anns, "metadata")  # hidden: the instructions' evidence
        found = undismissed(raw, anns)
    else:
        redo = replaced_at_data()
        found = [f for f in table_findings(ctx, name, "metadata", tables) if f.reason not in redo]
        seen: set[tuple[str | None, str]] = {(f.annotation, str(f.reason)) for f in found}
        own = duck is None
        duck = duck or Duck(ctx.cat, ctx.vid, router_of(ctx))
        try:
            env = Env(ctx, t, anns, tables, duck, seen)
            extra = run_annotation_checks(env, "data")
            # the data decides what metadata could only suspect
            found = [f for f in found if (f.annotation, f.reason) not in env.checked] + extra
            found += run_table_checks(env, "data")
            found = [f for f in found if not is_unit_prose(f) and not is_join_prose(f)]  # judged again on what the data kept
            found += unit_prose(t, anns, found)
            found += join_prose(t, anns, found)
            found += instructions.convention_findings(t, anns, "data")  # hidden: the instructions' evidence
            found = undismissed(found, anns)
        finally:
            if own:
                duck.close()
    ctx.cache.findings.put(key, found)
    _remember(ctx, name, depth, found)
    return found


def annotation_findings(ctx: Context, name: str, keys: Collection[str]) -> list[Finding]:
    """The metadata findings of `name` at `ctx.vid` that concern the annotations `keys`: exactly those of
    `table_findings(ctx, name, "metadata")` (taken from it when it is cached), computed without the checks of
    the table's other annotations. `describe`'s `referenced_by` needs the status of the relationships other
    tables declare to a table; their verified queries' and metrics' checks are most of a card's CPU (issue 47,
    cold start: a first `describe_table` computed every referencing table's findings)."""
    got = ctx.cache.findings.take((name, ctx.vid, "metadata"))
    if got is None:
        tables: dict[str, Table | None] = {}
        t = get_table(ctx, name, tables)
        if t is None:
            return []
        anns = ctx.annotations(name)
        env = Env(ctx, t, anns, tables)
        raw = run_annotation_checks(env, "metadata", only=keys) + run_table_checks(env, "metadata")
        raw += propagated(ctx, name)
        got = undismissed(raw, anns)
    return [f for f in got if f.annotation in keys]


def _carried(ctx: Context, name: str, depth: str) -> list[Finding] | None:
    """The findings of `name` computed at an earlier vid, when the table is not `affected` by what
    was written since (the dependency rule: semantic.staleness.incremental); None: compute them."""
    last = ctx.cache.findings.take(("last", name, depth))
    if last is None or last[0] >= ctx.vid or ctx.table(name) is None:
        return None
    since, found = last
    if affected(ctx, [name], since, changes_since(ctx.cat, since, ctx.vid)):
        return None
    CARRIED[depth] = CARRIED.get(depth, 0) + 1
    ctx.cache.findings.put(("last", name, depth), (ctx.vid, found))  # the next diff starts here
    return found


def _with_catalog_wide(ctx: Context, name: str, carried: list[Finding],
                       tables: dict[str, Table | None] | None) -> list[Finding]:
    """Carried findings with those of the catalog-wide checks (registry `catalog_wide`: a replacement
    written beside the table reads every table's loads and the catalog's head) recomputed at ctx.vid:
    the dependency rule covers what one table's annotations name, not the whole catalog."""
    wide = catalog_wide_reasons()
    t = get_table(ctx, name, {} if tables is None else tables)
    if t is None:
        return carried
    anns = ctx.annotations(name)
    env = Env(ctx, t, anns, {} if tables is None else tables)
    claims = catalog_wide_claims(env)
    fresh = undismissed(run_catalog_wide(env), anns)
    return [f for f in carried if f.reason not in wide and (f.annotation, f.reason) not in claims] + fresh


def _remember(ctx: Context, name: str, depth: str, found: list[Finding]) -> None:
    """Keep the newest computed findings of (table, depth) for `_carried`; counts the computation."""
    COMPUTED[depth] = COMPUTED.get(depth, 0) + 1
    last = ctx.cache.findings.take(("last", name, depth))
    if last is None or last[0] <= ctx.vid:
        ctx.cache.findings.put(("last", name, depth), (ctx.vid, found))


# tables whose findings were computed / carried over, by depth, since the process started (for
# benches and tests that count the work a check did, not its time)
COMPUTED: dict[str, int] = {}
CARRIED: dict[str, int] = {}


def staleness(cat: CatalogAPI, table: str | None = None, snapshot: SnapshotRef = None, depth: str = "metadata",
              now: TimeArg = None, merge: bool = True, conventions: bool = False) -> list[Finding]:
    """Findings for one table (or every table) at `snapshot`: each annotation's basis compared with
    the snapshot history (`metadata`), plus DuckDB checks of the data (`data`). `now` (default: the
    clock) is the time freshness is judged at. One underlying change is one finding per table,
    listing every annotation it affects in `annotations` (`merge=False`: one finding per annotation,
    as review items are). For the whole catalog, the findings on catalogs' and namespaces'
    instructions follow the tables' (`semantic.staleness.instructions`). `conventions`: also the
    hidden findings those read (`instructions.is_hidden`: a column no claim of its own describes,
    checked for a catalog's convention), for the review's data-depth pass to store."""
    if depth not in DEPTHS:
        raise InvalidValueError(f"depth must be 'metadata' or 'data', got {depth!r}")
    t_now = resolve_now(now)
    vid = cat.resolve(snapshot)
    ctx = Context(cat, vid)
    tables: dict[str, Table | None] = {}
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
        times, by_due = due_index(ctx, names)
        due = by_due[:bisect.bisect_left(times, t_now)]
    out: list[Finding] = []
    every: list[Finding] = []
    for name in sorted(set(found) | set(due)):
        mine = found.get(name, []) + time_findings(ctx, name, ctx.annotations(name), t_now, tables)
        every += mine
        shown = [f for f in mine if not instructions.is_hidden(f)]
        out += (merge_by_cause(shown) if merge else shown) + \
            ([f for f in mine if instructions.is_hidden(f)] if conventions else [])
    if table is None:  # what the catalog's and namespaces' instructions say, against the tables' findings
        held = instructions.held_at(ctx)
        out += [f for f in instructions.instruction_findings(cat, vid, names, every, held)
                if undismissed([f], held[f.target])]
    return [f.model_copy() for f in out]  # shallow: evidence is shared with the cache, do not mutate it


def _catalog_findings(ctx: Context, names: list[str], depth: str,
                      tables: dict[str, Table | None]) -> dict[str, list[Finding]]:
    """table_findings of every table at ctx.vid that has any, by table (cached per vid and depth)."""
    key = ("*", ctx.vid, depth)
    got = ctx.cache.findings.take(key)
    if got is None:
        duck = Duck(ctx.cat, ctx.vid, router_of(ctx)) if depth == "data" else None
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
