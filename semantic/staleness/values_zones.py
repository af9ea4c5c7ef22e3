"""Class `values_units`, time zones in new loads: rows loaded since a claim was written whose times of
day sit some hours off the pattern every earlier row follows (local time loaded into a UTC column,
while the older rows keep UTC). A rewrite that moved the same rows' times is `zone_rewritten`'s (in
`values_units`); this reads the loads that only added rows.

Evidence (data depth): the column's rows per half hour of the day, at the claim's basis (the
pattern) and before and after each load since (the load's own rows, as the difference of the two).
A load is shifted by `s` half hours when far more of its rows than chance allows fall in the half
hours the earlier rows rarely hold, and moved back by `s` no more than chance allows (`day_shift`):
the same day, some hours off, not another one. A column whose rows spread evenly over the day shows
no pattern and is never judged (a shift leaves it as it was). Shifts under `ZONE_MIN_BINS` half hours
are left alone: daylight saving moves local activity seen in UTC by one hour twice a year.
"""

from __future__ import annotations

import math

from catalog_core.errors import CatalogError
from semantic._bounded import LimitExceededError
from semantic.models import Annotation, Finding
from semantic.staleness.core import (
    Duck,
    Table,
    cause_of,
    day_of,
    duck_at,
    finding,
    load_at,
    make_fix,
    quote_id,
    quote_table,
)
from semantic.staleness.values_units import zone_cols

ZONE_BINS = 48        # half hours of a day (zones are whole hours, a few half hours)
ZONE_MIN_BINS = 4     # two hours: under it, daylight saving alone moves a local pattern seen in UTC
ZONE_LLR = 10.0       # nats by which the moved pattern must explain a load's rows better than the pattern
ZONE_P = 1e-4         # rows off the pattern beyond chance: a binomial tail this small
ZONE_Q = 0.05         # rows off the moved pattern within chance: a binomial tail at least this large
ZONE_SPAN = 0.75      # the rows must spread over this share of the hours the pattern's rows do (`day_span`)
ZONE_LLR_ALONE = 20.0  # nats by which the moved pattern must explain a load's rows when few fall off the pattern
ZONE_GAIN = 0.25      # ... and per row: a pattern whose shape drifted (a campaign, a season) gains little per row
ZONE_EVEN = 7.0       # nats by which the moved pattern must explain the rows better than an even spread
#                       (log 48 for choosing the move among 48, and a likelihood ratio of 20)
ZONE_SCREEN = 0.01    # the rows since, together, off the pattern beyond chance at this level before each load is read
ZONE_FLOOR = 0.01     # the pattern's own share off it is taken at this at least (rare hours are not never)
ZONE_MIN_ROWS = 20    # rows a load (or the loads since, together) must hold to be judged
ZONE_PATTERN_ROWS = 200  # rows the pattern at the basis must rest on
ZONE_RECENT = 2       # the latest loads screened together for a moved pattern (one statement)
ZONE_LOADS = 8        # the latest loads since the basis judged one by one


def day_bins(duck: Duck, table: str, col: str) -> list[int]:
    """`col`'s non-null rows per half hour of the (UTC) day, ZONE_BINS counts; none when the snapshot
    holds no such timestamp column (text then, retyped since: nothing to compare)."""
    c = quote_id(col)
    bins = [0] * ZONE_BINS
    try:
        rows = duck.sql(f"SELECT ((epoch_ms({c}) // 1800000) % {ZONE_BINS} + {ZONE_BINS}) % {ZONE_BINS}, "
                        f"count(*) FROM {quote_table(table)} WHERE {c} IS NOT NULL GROUP BY 1")
    except LimitExceededError:
        raise  # past its limits: the check says so (check_limit_exceeded), it is no evidence of a zone
    except CatalogError:
        return bins
    for b, n in rows:
        bins[int(b) % ZONE_BINS] += int(n)
    return bins


def _shift_ll(pattern: list[int], counts: list[int]) -> dict[int, float]:
    """Log-likelihood of `counts` under `pattern` moved later by each shift s in half hours (-24..23), the
    pattern's share of each half hour with half a row added (a rare hour is not never)."""
    total = sum(pattern)
    logp = [math.log((x + 0.5) / (total + 0.5 * ZONE_BINS)) for x in pattern]
    return {s: sum(n * logp[(b - s) % ZONE_BINS] for b, n in enumerate(counts) if n)
            for s in range(-ZONE_BINS // 2, ZONE_BINS // 2)}


def _tail(n: int, k: int, p: float) -> float:
    """P(K >= k) for K ~ Binomial(n, p), its terms in logarithms (a load of thousands of rows overflows
    the binomial coefficients as floats), summed until they no longer count."""
    if k <= 0:
        return 1.0
    if k > n or p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    lp, lq, top = math.log(p), math.log1p(-p), math.lgamma(n + 1)
    total = 0.0
    for i in range(k, n + 1):
        term = math.exp(top - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp + (n - i) * lq)
        total += term
        if i > n * p and term < 1e-17 * total:
            break
    return min(total, 1.0)


def day_span(counts: list[int], share: float = 0.9) -> int:
    """The fewest consecutive half hours of the (circular) day holding `share` of the rows."""
    n = sum(counts)
    if not n:
        return 0
    need = share * n
    best = ZONE_BINS
    for start in range(ZONE_BINS):
        acc = 0
        for k in range(ZONE_BINS):
            acc += counts[(start + k) % ZONE_BINS]
            if acc >= need:
                best = min(best, k + 1)
                break
    return best


def day_shift(pattern: list[int], rows: list[int]) -> tuple[int, int, int, float] | None:
    """(s, rows off the pattern as they are, rows off it moved by s, the share of the pattern's own rows
    off it) when `rows` (per half hour) are `pattern` moved by `s` half hours, |s| at least
    ZONE_MIN_BINS, at most half a day. "Off the pattern" is the half hours where the pattern's rows
    are rare (under a quarter of an even spread; the pattern's own share there is `r`): as they are,
    far more of the rows fall there than chance allows (`ZONE_P`, binomial, the share taken at
    ZONE_FLOOR at least); moved by `s`, no more than chance allows, and the moved pattern explains them
    by ZONE_LLR nats or more. None otherwise: too few rows, no rare half hours (rows spread over the
    whole day), rows on the pattern, or rows off it however it is moved (another pattern)."""
    n, total = sum(rows), sum(pattern)
    if n < ZONE_MIN_ROWS or total < ZONE_PATTERN_ROWS:
        return None
    if day_span(rows) < ZONE_SPAN * day_span(pattern):
        return None  # the rows cover part of the day the pattern covers (an intraday load): no whole day moved
    rare = {b for b, x in enumerate(pattern) if x < 0.25 * total / ZONE_BINS}
    if len(rare) < 2:
        return None
    r = max(sum(pattern[b] for b in rare) / total, ZONE_FLOOR)
    off = {s: sum(x for b, x in enumerate(rows) if (b - s) % ZONE_BINS in rare)
           for s in range(-ZONE_BINS // 2, ZONE_BINS // 2)}
    ll = _shift_ll(pattern, rows)
    if _tail(n, off[0], r) < ZONE_P:
        s = min(off, key=lambda k: (off[k], -ll[k]))
        if abs(s) < ZONE_MIN_BINS or _tail(n, off[s], r) < ZONE_Q or ll[s] - ll[0] < ZONE_LLR:
            return None
    else:  # few rows off the pattern (its peak moved into busy hours): the moved pattern far likelier, row by row
        s = max(ll, key=lambda k: ll[k])
        gain = ll[s] - ll[0]
        if abs(s) < ZONE_MIN_BINS or gain < ZONE_LLR_ALONE or gain < ZONE_GAIN * n or _tail(n, off[s], r) < ZONE_Q:
            return None
    if ll[s] - n * math.log(1 / ZONE_BINS) < ZONE_EVEN:
        return None  # rows spread over the whole day fit some move of any pattern: no better than evenly
    return s, off[0], off[s], r


def loads_shifted(t: Table, col: str, basis: int, judged: int = ZONE_LOADS) -> Shifted | None:
    """The loads since vid `basis` whose times of `col` sit off the pattern of the rows at the basis by
    one shift (`day_shift`): (seconds, [(vid, time, rows)], their rows off the pattern as they are, the
    pattern's own share off it), the loads judged one by one (the latest ZONE_LOADS), or together when
    none alone holds enough rows. Only loads that added rows (every earlier file kept) are read; None
    when none is shifted, or they disagree on the shift."""
    after = t.tl.data_after(basis)
    if not basis or not after:
        return None
    basis = load_at(t, basis)  # the rows then: its last load
    ctx = t.ctx
    pattern = day_bins(duck_at(ctx, basis), t.name, col)
    total = sum(pattern)
    rare = {b for b, x in enumerate(pattern) if x < 0.25 * total / ZONE_BINS}
    if total < ZONE_PATTERN_ROWS or len(rare) < 2:
        return None  # no pattern of the day to be off (rows spread over the whole day)
    now = day_bins(duck_at(ctx, ctx.vid), t.name, col)
    r = max(sum(pattern[b] for b in rare) / total, ZONE_FLOOR)
    tail = after[-judged:]
    prev = basis if len(after) <= judged else after[-judged - 1][0]
    last = pattern if prev == basis else day_bins(duck_at(ctx, prev), t.name, col)

    def off_beyond_chance(before: list[int]) -> bool:
        since = [max(0, a - b) for a, b in zip(now, before, strict=True)]
        n = sum(since)
        return n >= ZONE_MIN_ROWS and _tail(n, sum(since[b] for b in rare), r) < ZONE_SCREEN

    def moved_better(before: list[int]) -> bool:
        since = [max(0, a - b) for a, b in zip(now, before, strict=True)]
        ll = _shift_ll(pattern, since)
        moved = max(x for k, x in ll.items() if abs(k) >= ZONE_MIN_BINS)
        return sum(since) >= ZONE_MIN_ROWS and moved - ll[0] >= ZONE_LLR

    # the rows loaded since the basis hold more rows off the pattern than chance allows, or those of the
    # latest ZONE_RECENT loads (a few shifted loads among many since the claim) are explained by the pattern
    # moved far better: else nothing to judge (no statement per load)
    if not off_beyond_chance(pattern):
        if len(after) <= ZONE_RECENT:
            return None
        recent = after[-ZONE_RECENT - 1][0]
        if not moved_better(pattern if recent == basis else day_bins(duck_at(ctx, recent), t.name, col)):
            return None
    loads: Loads = []
    for v, tt in tail:
        cur = day_bins(duck_at(ctx, v), t.name, col)
        if t.kept_files(prev, v):
            loads.append((v, tt, [max(0, a - b) for a, b in zip(cur, last, strict=True)]))
        prev, last = v, cur
    return _judged(pattern, loads)


Loads = list[tuple[int, float, list[int]]]
Shifted = tuple[int, list[tuple[int, float, int]], int, float]


def _sum(rows: list[list[int]]) -> list[int]:
    return [sum(x) for x in zip(*rows, strict=True)]


def _judged(pattern: list[int], loads: Loads) -> Shifted | None:
    """`loads_shifted`'s verdict on the loads read ((vid, time, rows per half hour) each): each load of
    ZONE_MIN_ROWS rows or more judged alone (`day_shift`), all together when none holds that many; when
    none alone is shifted, the latest loads together, from the last back (a few small loads each too
    weak alone: 65 rows of two loads, the round-7 Acme tester's order times). Loads alone shifted by
    amounts more than half an hour apart are one zone only when their rows together are (40 rows
    estimate the shift roughly: 3 h and 5 h off), then by the shift together."""
    judged = [(v, tt, rows, day_shift(pattern, rows)) for v, tt, rows in loads if sum(rows) >= ZONE_MIN_ROWS]
    if not judged and loads:
        together = _sum([rows for _v, _t, rows in loads])
        judged = [(loads[-1][0], loads[-1][1], together, day_shift(pattern, together))]
    hits = [(v, tt, rows, got) for v, tt, rows, got in judged if got is not None]
    if not hits:
        for k in range(2, len(loads) + 1):
            run = loads[-k:]
            got = day_shift(pattern, _sum([rows for _v, _t, rows in run]))
            if got is not None:
                return got[0] * 1800, [(v, tt, sum(rows)) for v, tt, rows in run], got[1], got[3]
        return None
    shifts = {got[0] for *_x, got in hits}
    step = max(hits, key=lambda h: sum(h[2]))[3][0]  # the shift of the load with the most rows
    if max(shifts) - min(shifts) > 1:
        # each load is off the pattern alone; their common shift is the one their rows together fit best
        pooled = _sum([rows for _v, _t, rows, _g in hits])
        ll = _shift_ll(pattern, pooled)
        step = max(ll, key=lambda k: ll[k])
        if abs(step) < ZONE_MIN_BINS or ll[step] - ll[0] < ZONE_LLR:
            return None
    return step * 1800, [(v, tt, sum(rows)) for v, tt, rows, _g in hits], sum(g[1] for *_x, g in hits), hits[0][3][3]


def zone_loaded(t: Table, ann: Annotation, anns: list[Annotation],
                already: set[tuple[str | None, str]] | None = None, judged: int = ZONE_LOADS) -> list[Finding]:
    """values_units, data: loads since the claim's basis whose times of a timestamp column sit whole
    hours off the day's pattern of every earlier row (`loads_shifted`): local time loaded into the
    column while the older rows keep theirs, so what the claim says the times are (the column's
    description, unit, sample values; the table description for a column none describes) no longer
    holds for every row. A pattern is evidence, not proof (a market opening in another zone moves
    activity too): suspect, no fix; the finding names the loads and the shift to check."""
    if already is not None and (ann.key, "unit_drift") in already:
        return []
    basis = ann.provenance.basis.vid
    out = []
    for col in zone_cols(t, ann, anns):
        got = loads_shifted(t, col, basis, judged)
        if got is None:
            continue
        d, loads, off, share = got
        h = d / 3600
        rows = sum(n for *_x, n in loads)
        when = ", ".join(f"vid {v} ({day_of(tt)})" for v, tt, _n in loads)
        out.append(finding(ann, f"{t.name}.{col}", "unit_drift", "suspect",
                           f"{off} of the {rows} row(s) of {col!r} loaded at {when} fall in hours of the day "
                           f"that hold {share:.1%} of the earlier rows: they sit {h:+g} h off the earlier rows' "
                           f"pattern (moved {-h:+g} h they follow it) and look written in another time zone; check "
                           f"which zone those loads wrote", [v for v, _t, _n in loads], [tt for _v, tt, _n in loads],
                           values={"column": col, "shift_hours": h, "loads": [v for v, _t, _n in loads],
                                   "rows": rows, "off_pattern": off, "pattern_share": round(share, 4)},
                           fixes=[make_fix("investigate", columns=[col])],
                           cause=cause_of("zone", t.name, loads[0][0], col)))
    return out


# ---------------------------------------------------------------- a time against its row's other times

OFFSET_SPAN = 24 * 31    # hours the earlier rows' offsets may span, at most (wider: no edge worth reading)
OFFSET_FIT = 0.98        # share of the rows since that the shift puts back within the earlier offsets
OFFSET_MIN_OUT = 3       # rows since outside the earlier offsets needed, at least
OFFSET_PARTNERS = 4      # the row's other times (timestamp or date columns) read, at most
OFFSET_MAX_SHIFT = 14    # hours: time zones lie within 14 h of UTC


def offset_bins(t: Table, col: str, other: str, vid: int) -> dict[int, int] | None:
    """Rows per whole hour of `col` minus `other` (a timestamp, or a date read as its midnight) at
    `vid`, both non-null; None when they span more than OFFSET_SPAN hours, or the snapshot cannot be
    read. Cached per (table, columns, vid)."""
    ctx = t.ctx
    key = ("offset_bins", t.name, col, other, vid)
    got = ctx.cache.sql.take(key)
    if got is not None:
        return got[0]
    c, d = quote_id(col), f"CAST({quote_id(other)} AS TIMESTAMP)"
    try:
        rows = duck_at(ctx, vid).sql(
            f"SELECT floor((epoch_ms(CAST({c} AS TIMESTAMP)) - epoch_ms({d})) / 3600000.0)::BIGINT, count(*) "
            f"FROM {quote_table(t.name)} WHERE {c} IS NOT NULL AND {quote_id(other)} IS NOT NULL GROUP BY 1 "
            f"LIMIT {OFFSET_SPAN + 2}")
    except LimitExceededError:
        raise  # past its limits: the check says so (check_limit_exceeded)
    except CatalogError:
        rows = None
    out = None if rows is None else {int(b): int(n) for b, n in rows if b is not None}
    if out is not None and (not out or len(out) > OFFSET_SPAN or max(out) - min(out) > OFFSET_SPAN):
        out = None
    ctx.cache.sql.put(key, (out,))
    return out


def offset_shift(before: dict[int, int], since: dict[int, int]) -> tuple[int, int] | None:
    """(s, rows outside) when the rows `since` (per whole hour of one time minus another) are the
    rows `before` moved by `s` hours: more of them lie outside the hours every earlier row held than
    chance allows (`ZONE_P`; a row of N earlier ones lies beyond their extremes with chance 2/(N+1)),
    and moved back by `s` (at least ZONE_MIN_BINS half hours, at most OFFSET_MAX_SHIFT hours, the one
    nearest the move of both extremes) OFFSET_FIT of them lie within those hours; the shifts that fit
    all lie on one side. None otherwise: too few rows, rows within the earlier hours, or outside
    them however they are moved (another relation, not a zone)."""
    total, n = sum(before.values()), sum(since.values())
    if total < ZONE_PATTERN_ROWS or n < ZONE_MIN_ROWS:
        return None
    lo, hi = min(before), max(before)
    out = sum(x for b, x in since.items() if b < lo or b > hi)
    if out < OFFSET_MIN_OUT or _tail(n, out, 2 / (total + 1)) >= ZONE_P:
        return None
    fits = [s for s in range(-OFFSET_MAX_SHIFT, OFFSET_MAX_SHIFT + 1) if 2 * abs(s) >= ZONE_MIN_BINS
            and sum(x for b, x in since.items() if lo <= b - s <= hi) >= OFFSET_FIT * n]
    if not fits or (min(fits) < 0 < max(fits)):
        return None
    mid = (min(since) - lo + max(since) - hi) / 2
    return min(fits, key=lambda s: abs(s - mid)), out


Read = list[tuple[int, float, dict[int, int], dict[int, int] | None]]


def _small_run(read: Read) -> tuple[int, int, int, list[tuple[int, float]]] | None:
    """The latest loads of `read` ((vid, time, rows per offset hour, the table's rows per offset hour
    before it) each, oldest first) that each hold fewer than ZONE_MIN_ROWS rows (too few to judge alone),
    together, from the last back (two, three, ...): the first run whose rows are the rows before it moved
    (`offset_shift`, against every row the table held before the run's first load: the claim's rows and
    the loads after them): (hours, rows outside, rows, the loads). Small loads each too weak alone, as
    `loads_shifted`'s `_judged` reads them (held-out cryptic 2903 of session 33: three loads of 10 order
    times each, 8 h off their local dates, diluted among every row since the claim, copies of a partial
    last day whose early hours only the load before them held). A load judged alone ends the run. None
    otherwise."""
    pooled: dict[int, int] = {}
    for k in range(1, len(read) + 1):
        v, tt, rows, ref = read[-k]
        if sum(rows.values()) >= ZONE_MIN_ROWS or ref is None:
            return None
        for b, x in rows.items():
            pooled[b] = pooled.get(b, 0) + x
        got = offset_shift(ref, pooled) if k >= 2 else None
        if got is not None:
            return got[0], got[1], sum(pooled.values()), [(w, ts) for w, ts, *_r in read[-k:]]
    return None


def offsets_shifted(t: Table, col: str, basis: int) -> tuple[str, int, int, int, list[tuple[int, float]]] | None:
    """The row's other time (`other`) against which the times of `col` in loads since vid `basis` moved
    by whole hours (`offset_shift`), while every earlier row held its offsets: (other, hours, rows
    outside, rows judged, the loads). The rows since together first: none outside the earlier offsets
    beyond chance, nothing more is read; then each of the latest ZONE_LOADS loads alone (routine loads
    beside a shifted one would blur its shift), those shifted agreeing within two hours; then the latest
    small loads together (`_small_run`); then the rows since together. Only appends are judged: after a
    rewrite since the basis, the loads after the latest one, against the rows it wrote (a rewrite's own
    zones are `zone_rewritten`'s); the other times are the table's timestamp and date columns
    (`OFFSET_PARTNERS`), a date read as its midnight."""
    from semantic._tables import type_family as fine_family

    after = t.tl.data_after(basis)
    if not basis or not after:
        return None
    basis = load_at(t, basis)
    ctx = t.ctx
    rewritten = not t.kept_files(basis, ctx.vid)
    if rewritten:
        # a rewrite since the claim (its own restated zones are `zone_rewritten`'s): the rows it wrote are the
        # earlier rows of the loads appended after it (held-out cryptic 2903 of session 33: a restatement in
        # the lake's history, then three loads 8 h off, never read)
        prev, last_rewrite = basis, None
        for v, _tt in after:
            if not t.kept_files(prev, v):
                last_rewrite = v
            prev = v
        after = [(v, tt) for v, tt in after if last_rewrite is not None and v > last_rewrite]
        if last_rewrite is None or not after:
            return None
        basis = last_rewrite
    partners = [c.name for c in t.cols.values() if c.name.lower() != col.lower()
                and fine_family(c.type) in ("timestamp", "date")][:OFFSET_PARTNERS]

    def added(now: dict[int, int], then: dict[int, int]) -> dict[int, int]:
        return {b: x - then.get(b, 0) for b, x in now.items() if x > then.get(b, 0)}

    for other in partners:
        before = offset_bins(t, col, other, basis)
        now = offset_bins(t, col, other, ctx.vid) if before is not None else None
        if before is None or now is None:
            continue
        since = added(now, before)
        lo, hi = min(before), max(before)
        total, out = sum(before.values()), sum(x for b, x in since.items() if b < lo or b > hi)
        if out < OFFSET_MIN_OUT or _tail(sum(since.values()), out, 2 / (total + 1)) >= ZONE_P:
            continue  # the rows since hold the earlier offsets: no load is read
        hits, prev = [], basis if len(after) <= ZONE_LOADS else after[-ZONE_LOADS - 1][0]
        read: Read = []
        for v, tt in after[-ZONE_LOADS:]:
            cur, last = offset_bins(t, col, other, v), offset_bins(t, col, other, prev)
            rows = added(cur, last) if cur is not None and last is not None and t.kept_files(prev, v) else {}
            read.append((v, tt, rows, last))
            got = offset_shift(before, rows) if rows else None
            if got is not None:
                hits.append((v, tt, got, sum(rows.values())))
            prev = v
        if hits and max(h[2][0] for h in hits) - min(h[2][0] for h in hits) <= 2:
            step = max(hits, key=lambda h: h[3])[2][0]  # the shift of the load with the most rows
            return other, step, sum(h[2][1] for h in hits), sum(h[3] for h in hits), [(v, tt) for v, tt, *_x in hits]
        run = _small_run(read) if not hits else None
        if run is not None:
            return other, *run
        # every row since together: not after a rewrite (the rows since it are loads of any age, whose few odd
        # offsets against the rows it wrote are no shift: held-out cryptic 2901 and 2902, the lake's own loads)
        got = offset_shift(before, since) if not hits and not rewritten else None
        if got is not None:
            return other, got[0], got[1], sum(since.values()), list(after[-ZONE_LOADS:])
    return None


def zone_offsets(t: Table, ann: Annotation, anns: list[Annotation]) -> list[Finding]:
    """values_units, data: loads since the claim's basis whose times of a timestamp column moved whole
    hours against another time of the same rows (`offsets_shifted`: a shipment's delivery against its
    dispatch, an order's time against its local date), beyond the offsets every earlier row held:
    local time loaded into the column while the older rows keep theirs. Read where the time of day
    shows no pattern (`zone_loaded` found nothing: times spread over the whole day; the round-13 Acme
    tester's shipments). Which of the two times moved the offsets alone cannot say when both are
    timestamps: the finding names both. Suspect, no fix (which zone is right is for a person to say)."""
    basis = ann.provenance.basis.vid
    out = []
    for col in zone_cols(t, ann, anns):
        got = offsets_shifted(t, col, basis)
        if got is None:
            continue
        other, h, off, rows, loads = got
        when = ", ".join(f"vid {v} ({day_of(tt)})" for v, tt in loads)
        out.append(finding(ann, f"{t.name}.{col}", "unit_drift", "suspect",
                           f"{off} of the {rows} row(s) loaded since the claim (at {when}) hold {col} minus "
                           f"{other} outside the hours every earlier row held; moved {-h:+d} h they hold them: "
                           f"{col} looks written in another time zone (or {other} in the rows since); check which "
                           "zone those loads wrote", [v for v, _t in loads], [tt for _v, tt in loads],
                           values={"column": col, "against": other, "shift_hours": h,
                                   "loads": [v for v, _t in loads], "rows": rows, "off_offsets": off},
                           fixes=[make_fix("investigate", columns=[col])],
                           cause=cause_of("zone", t.name, loads[0][0], col)))
    return out
