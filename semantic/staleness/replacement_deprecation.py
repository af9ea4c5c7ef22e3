"""Class `replacement_deprecation`: deprecated tables still written, successors that do not exist,
and the successor of a table no longer loaded, named only on strong evidence (`successor_evidence`)."""

from __future__ import annotations

import math
from typing import Any

from catalog_core.model import parse_time
from semantic.errors import did_you_mean
from semantic.history import Context, type_family
from semantic.models import Annotation, Finding
from semantic.staleness.core import DAY, Table, assign, day_of, finding, get_table, make_fix, num


def deprecated_findings(t: Table, ann: Annotation) -> list[Finding]:
    out = []
    val = ann.value or {}
    since_t = parse_time(val.get("since")) if val.get("since") else None
    after = [(v, tt) for v, tt in t.tl.data_commits if (v > (ann.vid or 0)) or (since_t is not None and tt > since_t + DAY)]
    if after:
        out.append(finding(ann, t.name, "deprecated_but_written", "stale",
                            f"deprecated, but {len(after)} load(s) since (last {day_of(after[-1][1])})",
                            [v for v, _ in after[-3:]], [tt for _, tt in after[-3:]], {"loads": len(after)},
                            "someone still writes it: find the writer, or lift the deprecation",
                            [make_fix("investigate", columns=[])]))
    rb = val.get("replaced_by")
    if rb and rb not in t.ctx.tables():
        close = did_you_mean(rb, list(t.ctx.tables()))
        out.append(finding(ann, t.name, "replaced_by_missing", "stale",
                            f"the successor {rb!r} does not exist at vid {t.ctx.vid}", [t.ctx.vid],
                            values={"replaced_by": rb, "did_you_mean": close},
                            suggestion=f"successor {close[0]}" if close else None,
                            fixes=[make_fix("successor", table=close[0])] if close else []))
    return out


def _time_span(t: Table) -> tuple[float, float] | None:
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
        amax, bmax = num(a.get("max")), num(b.get("max"))
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


def _similar(a: Table, b: Table) -> float:
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


STRONG_COLUMN = 0.9     # a column "alike" for a successor: the same range (numbers within ~1.26x, same text range)
MOST_COLUMNS = 0.75     # share of the old table's columns a successor must hold alike, one to one
ALIKE_RATE = 0.5        # rows per day within ~3x


def successor_evidence(a: Table, b: Table, stop: float, every: float) -> dict[str, Any]:
    """Why `b` could replace `a`, which stopped loading at `stop`: the share of a's columns that b
    holds alike one to one (`columns_alike`), rows per day alike (`rate`), whether b started loading
    when a stopped (`started_at_stop`: its first load within three usual intervals of a's last) and
    the verdict `strong`: b's rows per day are alike and it holds most of a's columns alike, or it
    started when a stopped and holds at least half of them. Only a strong candidate is offered."""
    mine = list(a.cols.values())
    costs: dict[tuple[str, str], float] = {}
    for c in mine:
        f = type_family(c.type)
        for d in b.cols.values():
            if type_family(d.type) == f:
                sim = _col_similarity(a.stat(c.name), b.stat(d.name), f)
                if sim >= STRONG_COLUMN:
                    costs[(c.name, d.name)] = 1.0 - sim
    alike = len(assign(costs)) / len(mine) if mine else 0.0
    sa, sb = _time_span(a), _time_span(b)
    ra, rb = a.stats.get("row_count"), b.stats.get("row_count")
    rate = 0.0
    if sa and sb and isinstance(ra, int) and isinstance(rb, int) and ra > 0 and rb > 0:
        da, db = max(1.0, (sa[1] - sa[0]) / DAY + 1), max(1.0, (sb[1] - sb[0]) / DAY + 1)
        rate = max(0.0, 1.0 - abs(math.log10((ra / da) / (rb / db))))
    first = b.tl.data_commits[0][1] if b.tl.data_commits else None
    started = first is not None and abs(first - stop) <= 3 * every
    strong = rate >= ALIKE_RATE and (alike >= MOST_COLUMNS or (started and alike >= 0.5))
    return {"table": b.name, "columns_alike": round(alike, 2), "rows_per_day_alike": round(rate, 2),
            "started_at_stop": started, "strong": strong}


def successor(ctx: Context, t: Table, after: float, tables: dict[str, Table | None]) -> tuple[float, Table] | None:
    """The table most like `t` by statistics (`_similar`) that still loads after `after` and whose
    time range continues t's; cached per (table, snapshot vid). Whether its evidence is strong
    enough to name it a successor is `successor_evidence`'s verdict."""
    key = ("successor", t.name, ctx.vid)
    got = ctx.cache.findings.take(key)
    if got is not None:
        return got[0]
    best: tuple[float, Table] | None = None
    for other in ctx.tables():
        if other == t.name:
            continue
        o = get_table(ctx, other, tables)
        if o is None or not o.tl.data_commits or o.tl.data_commits[-1][1] <= after:
            continue
        sim = _similar(t, o)
        if sim >= 0.5 and (best is None or sim > best[0]):
            best = (sim, o)
    ctx.cache.findings.put(key, (best,))
    return best
