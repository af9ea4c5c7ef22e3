"""Completeness, not only freshness: which periods of a table hold all their data (issue 23, item 6).

Two sources, both read at the card's snapshot and cached by immutable versions:

- the table's date partitions: the first partition column's values that are ISO dates (`2025-03-09`,
  a day) or months (`2025-03`). A partition whose period had not ended at its last load (the time
  of its `last_data_commit`, else of the commit that last wrote it) is `partial`; the period ends at
  midnight in the load log's `timezone` when the table declares one, else in UTC.
- the table's declared load log (table field `load_log`, `semantic.models.LoadLog`): the latest
  attempt of each logged partition (by attempt, then load time) per period; a period is complete
  only when every one of its partitions (`2025-03-09` and parts such as `2025-03-09/store_id=17`)
  last loaded with a complete status. A log that cannot be read (columns renamed, no data files)
  leaves the partition rule in force and says why in `Completeness.note`.

Invariants: `latest_complete` is complete by every source that knows the period; `incomplete` lists
at most MAX_INCOMPLETE periods, newest first, with `truncated` set when more exist; nothing here
depends on the clock, so the result is cached with the clock-independent card.
"""

from __future__ import annotations

import datetime as dt
import re

from catalog_core import lake
from catalog_core.errors import CatalogError
from semantic import _sql
from semantic.history import Context
from semantic.models import Annotation, Completeness, LoadLog, PeriodLoad

__all__ = ["completeness", "describe_text", "MAX_INCOMPLETE", "period_end", "upstream_periods", "periods_reached", "logged_names"]

MAX_INCOMPLETE = 5
_DAY = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_MONTH = re.compile(r"^(\d{4})-(\d{2})$")
_LOG_ROWS = 100_000  # (table, period) rows read from a load log at most (run_sql's maximum)


def period_end(period: str, tz: str | None = None) -> float | None:
    """The end of an ISO day or month period as epoch seconds (midnight after it, in `tz`, default
    UTC); None for text that is neither."""
    zone: dt.tzinfo = dt.timezone.utc
    if tz:
        from zoneinfo import ZoneInfo

        try:
            zone = ZoneInfo(tz)
        except (KeyError, ValueError):
            zone = dt.timezone.utc
    try:
        m = _DAY.match(period)
        if m:
            start = dt.datetime(int(m[1]), int(m[2]), int(m[3]), tzinfo=zone)
            return (start + dt.timedelta(days=1)).timestamp()
        m = _MONTH.match(period)
        if m:
            y, mo = int(m[1]), int(m[2])
            return dt.datetime(y + (mo == 12), mo % 12 + 1, 1, tzinfo=zone).timestamp()
    except ValueError:
        return None
    return None


def _load_log(anns: list[Annotation]) -> LoadLog | None:
    for a in anns:
        if a.kind == "table" and a.field == "load_log" and isinstance(a.value, dict):
            try:
                return LoadLog.model_validate(a.value)
            except ValueError:
                return None
    return None


def _partition_periods(ctx: Context, name: str, tz: str | None) -> dict[str, tuple[str, float | None]]:
    """period -> ("complete" | "partial", load time) from the table's first-level date partitions."""
    obj = ctx.table(name)
    if obj is None or not lake.partition_columns(obj.value):
        return {}
    key = ("partitions", name, obj.vid, tz)
    got = ctx.cache.completeness.take(key)
    if got is not None:
        return dict(got)
    out: dict[str, tuple[str, float | None]] = {}
    for p in ctx.cat.query(lake.exact_query(obj.path, '[obj_type = "partition"]'), vid=ctx.vid):
        _col, raw = lake.parse_partition_id(p.path.rsplit("/", 1)[-1])
        end = None if raw is None else period_end(raw, tz)
        if end is None or raw is None:
            continue
        ldc = (p.value.get("stats") or {}).get("last_data_commit")
        loaded = float(ldc["time"]) if isinstance(ldc, dict) and isinstance(ldc.get("time"), (int, float)) \
            else ctx.commit_time(p.vid)
        out[raw] = ("partial" if loaded < end else "complete", loaded)
    ctx.cache.completeness.put(key, out)
    return dict(out)


def logged_names(name: str, spec: LoadLog) -> list[str]:
    """The values the load log's table column may hold for table `name`: the declared `name`, else its dotted
    name, it without the catalog, or the bare table name."""
    if spec.name:
        return [spec.name]
    parts = name.split(".")
    return [name, ".".join(parts[1:]), parts[-1]]


def _read_log(ctx: Context, spec: LoadLog) -> dict[str, dict[str, tuple[str, float | None, str | None]]]:
    """table value -> {period: (complete | partial | failed, latest load time, the part not complete)},
    aggregated in SQL (the latest attempt of each partition, the worst of a period's partitions; only
    the incomplete periods and the latest complete one per table), read once per version of the log
    table."""
    obj = ctx.table(spec.table)
    if obj is None:
        raise LookupError(f"load log table {spec.table} does not exist at vid {ctx.vid}")
    key = ("log", spec.table, obj.vid, spec.model_dump_json())
    got = ctx.cache.completeness.take(key)
    if got is not None:
        return got
    from sqlglot import exp

    import catalog_core as cc

    q = _sql.quote

    def lits(values: list[str]) -> str:
        return ", ".join(_sql.gen(exp.Literal.string(v)) for v in values) or "NULL"
    order = ", ".join(f"{q(c)} DESC NULLS LAST" for c in (spec.attempt_column, spec.loaded_at_column) if c) or "1"
    loaded = "NULL" if spec.loaded_at_column is None else f"epoch({q(spec.loaded_at_column)})"
    catalog, ns, table = spec.table.split(".")
    sql = f"""
        WITH latest AS (
            SELECT CAST({q(spec.table_column)} AS VARCHAR) AS t, CAST({q(spec.partition_column)} AS VARCHAR) AS p,
                   CAST({q(spec.status_column)} AS VARCHAR) AS s, {loaded} AS l,
                   row_number() OVER (PARTITION BY {q(spec.table_column)}, {q(spec.partition_column)}
                                      ORDER BY {order}) AS rn
            FROM {q(catalog)}.{q(ns)}.{q(table)}),
        ranked AS (
            SELECT t, split_part(p, '/', 1) AS period, p, s, l,
                   CASE WHEN s IN ({lits(spec.complete)}) THEN 0 WHEN s IN ({lits(spec.partial)}) THEN 1 ELSE 2 END AS r
            FROM latest WHERE rn = 1 AND t IS NOT NULL AND p IS NOT NULL),
        periods AS (
            SELECT t, period, max(r) AS r, max(l) AS l, arg_max(p || ': ' || coalesce(s, 'null'), r) AS part
            FROM ranked GROUP BY t, period)
        SELECT t, period, r, l, part FROM periods
        WHERE r > 0 OR period = (SELECT max(x.period) FROM periods x WHERE x.t = periods.t AND x.r = 0)
        ORDER BY t, period DESC"""
    # In this process (DuckDB is loaded already), not through a SQL worker: a first describe_table of a
    # new session would wait for a worker process to start (issue 47, cold start). The log is the
    # catalog's own table, read with the same sandboxed connection as open_table.
    con = cc.open_table(ctx.cat, spec.table, snapshot=ctx.vid)
    try:
        rows = con.execute(sql).fetchmany(_LOG_ROWS)
    finally:
        con.close()
    names = ("complete", "partial", "failed")
    out: dict[str, dict[str, tuple[str, float | None, str | None]]] = {}
    for t, period, r, ld, part in rows:
        out.setdefault(str(t), {})[str(period)] = (names[int(r)], None if ld is None else float(ld),
                                                   None if int(r) == 0 else str(part))
    ctx.cache.completeness.put(key, out)
    return out


def _log_periods(ctx: Context, name: str, spec: LoadLog) -> dict[str, tuple[str, float | None, str | None]]:
    """period -> (complete | partial | failed, latest load time, the part that was not complete):
    the incomplete periods and the latest complete one the log records for `name`."""
    log = _read_log(ctx, spec)
    for n in logged_names(name, spec):
        if n in log:
            return log[n]
    return {}


def completeness(ctx: Context, name: str, anns: list[Annotation], lineage: bool = True) -> Completeness:
    """The `Completeness` of table `name` at the context's snapshot (see the module docstring).
    With `lineage`, a period the table holds that an input was partial or failed for at the vid
    its build read it is partial here too (source `lineage`, semantic.lineage.upstream_periods)."""
    spec = _load_log(anns)
    tz = spec.timezone if spec is not None else None
    parts = _partition_periods(ctx, name, tz)
    logged: dict[str, tuple[str, float | None, str | None]] = {}
    note = None
    if spec is not None:
        try:
            logged = _log_periods(ctx, name, spec)
        except (CatalogError, LookupError, ValueError, RuntimeError) as e:
            note = f"load log {spec.table} could not be read: {str(e).splitlines()[0][:200]}"
        except Exception as e:  # noqa: BLE001 - a DuckDB error of a renamed column: say so, keep the partition rule
            note = f"load log {spec.table} could not be read: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
    inherited: dict[str, PeriodLoad] = {}
    if lineage:
        for period, (up, read_vid, pl) in upstream_periods(ctx, name).items():
            inherited[period] = PeriodLoad(period=period, status="partial", source="lineage", loaded_at=pl.loaded_at,
                                           note=f"{pl.status} in {up} as of vid {read_vid}, which this table was "
                                                "built from")
    periods = sorted(set(parts) | set(logged) | set(inherited), reverse=True)
    if not periods:
        return Completeness(load_log=None if spec is None else spec.table, note=note)
    incomplete: list[PeriodLoad] = []
    latest_complete = None
    more = False
    for period in periods:
        pst, ploaded = parts.get(period, ("complete", None))
        lst, lloaded, lnote = logged.get(period, ("complete", None, None))
        if lst != "complete":
            item = PeriodLoad(period=period, status=lst, source="load_log", loaded_at=lloaded, note=lnote)  # type: ignore[arg-type]
        elif pst != "complete":
            item = PeriodLoad(period=period, status="partial", source="partition", loaded_at=ploaded,
                              note="loaded before the period ended")
        elif period in inherited:
            item = inherited[period]
        else:
            latest_complete = latest_complete or period
            continue
        if len(incomplete) < MAX_INCOMPLETE:
            incomplete.append(item)
        else:
            more = True
    latest = periods[0]
    status = "complete" if latest == latest_complete else incomplete[0].status if incomplete else "unknown"
    return Completeness(status=status, latest_period=latest, latest_complete=latest_complete,
                        incomplete=incomplete, truncated=more, load_log=None if spec is None else spec.table,
                        note=note)


def describe_text(c: Completeness) -> str | None:
    """One line for people and agents: "partial: latest 2025-03-10, latest complete 2025-03-09"."""
    if c.status == "unknown" and c.latest_period is None:
        return None
    head = f"{c.status}: latest period {c.latest_period}, latest complete {c.latest_complete or 'none'}"
    if c.load_log:
        head += f" (load log {c.load_log})"
    return head



# ------------------------------------------------------------------ completeness through lineage
def _own_periods(ctx: Context, name: str) -> dict[str, int]:
    """{period: the vid that last wrote its data} for the day / month periods `name` holds: its first-level
    date partitions (the partition's `last_data_commit`, else the version that wrote it)."""
    obj = ctx.table(name)
    if obj is None or not lake.partition_columns(obj.value):
        return {}
    key = ("own_periods", name, obj.vid)
    got = ctx.cache.completeness.take(key)
    if got is None:
        got = {}
        for p in ctx.cat.query(lake.exact_query(obj.path, '[obj_type = "partition"]'), vid=ctx.vid):
            _col, raw = lake.parse_partition_id(p.path.rsplit("/", 1)[-1])
            if raw is not None and period_end(raw) is not None:
                ldc = (p.value.get("stats") or {}).get("last_data_commit")
                got[raw] = int(ldc["vid"]) if isinstance(ldc, dict) and isinstance(ldc.get("vid"), int) \
                    else int(p.vid or 0)
        ctx.cache.completeness.put(key, got)
    return dict(got)


def _incomplete_at(ctx: Context, up: str, read_vid: int) -> dict[str, PeriodLoad]:
    """{period: its load} for the periods input `up` had partial or failed at `read_vid` (no lineage of its own)."""
    at = Context(ctx.cat, read_vid)
    if at.table(up) is None:
        return {}
    return {pl.period: pl for pl in completeness(at, up, at.annotations(up), lineage=False).incomplete}


def upstream_periods(ctx: Context, name: str) -> dict[str, tuple[str, int, PeriodLoad]]:
    """{period: (input, the vid the build read it at, that input's incomplete period)} for every
    period `name` holds that an input had partial or failed at the vid the build that wrote the period
    read it (`_builder_of`: the record the table held before its next data commit after the one
    that last wrote the period); a later build that appended other periods, reading an input then
    partial for this one, did not build it (a loader that read a partial day to write the next)."""
    obj = ctx.table(name)
    lin = None if obj is None else lake.Lineage.from_raw(obj.value)
    if lin is None or not lin.inputs:
        return {}
    mine = _own_periods(ctx, name)
    if not mine:
        return {}
    out: dict[str, tuple[str, int, PeriodLoad]] = {}
    for up, read_vid in sorted(lin.inputs.items()):
        if read_vid > ctx.vid:
            continue
        for period, pl in _incomplete_at(ctx, up, read_vid).items():
            if period not in mine or period in out:
                continue
            then = _builder_of(ctx, name, mine[period], lin)
            read = None if then is None else then.inputs.get(up)
            if read is None:
                continue  # the build that wrote this period did not read `up`
            then_pl = pl if read == read_vid else _incomplete_at(ctx, up, read).get(period)
            if then_pl is not None:  # None: complete in `up` when that build read it
                out[period] = (up, read, then_pl)
    return out


def _builder_of(ctx: Context, name: str, wrote: int, lin: lake.Lineage) -> lake.Lineage | None:
    """The lineage of the build that wrote table `name`'s data at vid `wrote` (None: unknown). The record
    that applies is the one the table held just before its next data commit (a build records its inputs
    in its own commit, or they are declared after it, before the next load), else the current one, `lin`.
    A record stamped by another data commit of the table (the Spark bridge's, of a later or an earlier
    build: `wrote` recorded none) says nothing of `wrote`'s inputs; nor does a table without a record
    then, when `lin` was stamped by a build's data commit. A record declared apart from the data
    (`record_lineage`, an import) stands for all of it."""
    tl = ctx.timeline(name)
    loads = {v for v, _t in tl.data_commits} if tl is not None else set()
    nxt = min((v for v in loads if v > wrote), default=None)
    if nxt is None:
        rec: lake.Lineage | None = lin
    else:
        obj = Context(ctx.cat, nxt - 1).table(name)
        rec = None if obj is None else lake.Lineage.from_raw(obj.value)
    if rec is None:
        return None if lin.built_vid in loads else lin
    return None if rec.built_vid in loads and rec.built_vid != wrote else rec


# ------------------------------------------------------------------ which periods a statement reads
_DATE_PREFIX = re.compile(r"^(\d{4}-\d{2}-\d{2})")


def _date_of(node: object) -> str | None:
    """The ISO date of a literal (`'2025-03-09'`, `DATE '2025-03-09'`, a timestamp literal), else None."""
    from sqlglot import exp

    while isinstance(node, (exp.Cast, exp.TryCast, exp.Paren)):
        node = node.this
    if isinstance(node, exp.Literal) and node.is_string:
        m = _DATE_PREFIX.match(node.this.strip())
        return m.group(1) if m else None
    if isinstance(node, (exp.Date, exp.DateStrToDate, exp.TsOrDsToDate, exp.StrToDate)):
        return _date_of(node.this)
    return None


def _is_col(node: object, column: str, names: set[str]) -> bool:
    """Is `node` the column (optionally cast / truncated to a date), unqualified or qualified by one of
    `names` (the table's name or alias in that SELECT)?"""
    from sqlglot import exp

    while isinstance(node, (exp.Cast, exp.TryCast, exp.Paren, exp.Date, exp.TsOrDsToDate)):
        node = node.this
    if not isinstance(node, exp.Column) or node.name.lower() != column.lower():
        return False
    return not node.table or node.table.lower() in names


def _bounds(where: object, column: str, names: set[str]) -> tuple[str | None, str | None] | None:  # noqa: C901 - one branch per predicate form, in one place
    """[lo, hi] (ISO dates, inclusive, None = open) that the conjuncts of `where` allow `column`;
    None when no conjunct bounds it or the filter cannot be read (an OR over it, a non-literal)."""
    from sqlglot import exp

    from semantic._sql import conjuncts

    lo: str | None = None
    hi: str | None = None
    found = False
    day = dt.timedelta(days=1)

    def shift(d: str, k: int) -> str:
        return (dt.date.fromisoformat(d) + k * day).isoformat()

    for c in conjuncts(where):  # type: ignore[arg-type]
        if isinstance(c, exp.Paren):
            c = c.this
        mentions = any(_is_col(x, column, names) for x in c.find_all(exp.Column))
        if not mentions:
            continue
        pairs: list[tuple[str | None, str | None]] = []
        if isinstance(c, exp.Between) and _is_col(c.this, column, names):
            a, b = _date_of(c.args.get("low")), _date_of(c.args.get("high"))
            if a is None or b is None:
                return None
            pairs.append((a, b))
        elif isinstance(c, exp.In) and _is_col(c.this, column, names) and c.expressions:
            ds = [_date_of(e) for e in c.expressions]
            if any(d is None for d in ds):
                return None
            pairs.append((min(ds), max(ds)))  # type: ignore[type-var]
        elif isinstance(c, (exp.EQ, exp.GT, exp.GTE, exp.LT, exp.LTE)):
            left, right = c.this, c.expression
            flip = False
            if not _is_col(left, column, names):
                left, right, flip = right, left, True
            if not _is_col(left, column, names):
                return None
            d = _date_of(right)
            if d is None:
                return None
            op = type(c)
            if flip:
                op = {exp.GT: exp.LT, exp.GTE: exp.LTE, exp.LT: exp.GT, exp.LTE: exp.GTE}.get(op, op)  # type: ignore[assignment]
            # a timestamp bound like `< '2025-03-09 00:00'` excludes that day; `> '2025-03-08 12:00'` includes it
            if op is exp.EQ:
                pairs.append((d, d))
            elif op is exp.GTE:
                pairs.append((d, None))
            elif op is exp.GT:
                lit = _date_of(right) or ""
                is_day = isinstance(right, exp.Literal) and len(right.this.strip()) == 10 or not isinstance(right, exp.Literal)
                pairs.append((shift(lit, 1) if is_day else lit, None))
            elif op is exp.LTE:
                pairs.append((None, d))
            else:  # LT
                raw = right.this.strip() if isinstance(right, exp.Literal) else ""
                midday = len(raw) > 10 and raw[10:].strip(" T").strip("0:.") != ""
                pairs.append((None, d if midday else shift(d, -1)))
        else:
            return None  # an OR, a function of the column, a subquery: cannot tell
        for a, b in pairs:
            found = True
            lo = a if lo is None or (a is not None and a > lo) else lo
            hi = b if hi is None or (b is not None and b < hi) else hi
    return (lo, hi) if found else None


def periods_reached(sql: str, table: str, column: str, periods: list[str]) -> list[str] | None:
    """Which of `periods` (ISO days `2025-03-09` or months `2025-03`) of `table` the statement `sql`
    reads, judged from its filters on `column` (the table's date partition column): every SELECT that
    reads `table` must bound `column` by ANDed comparisons with date literals (`=`, `<`, `<=`, `>`,
    `>=`, BETWEEN, IN). None when it cannot tell: the statement does not parse, a SELECT reads the
    table without a filter on the column (it reads every period; no warning is made of that), or the
    filter is an OR, a function of the column, or compares it with something other than a date."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except Exception:  # noqa: BLE001 - sqlglot's errors: cannot tell
        return None
    short = table.split(".")
    hit: set[str] = set()
    seen = False
    for sel in tree.find_all(exp.Select):
        names: set[str] = set()
        for t in sel.find_all(exp.Table):
            if t.find_ancestor(exp.Select) is not sel:
                continue
            parts = [p.name for p in t.parts]
            if parts and parts == short[-len(parts):]:
                names |= {t.name.lower(), (t.alias_or_name or "").lower()}
        if not names:
            continue
        seen = True
        where = sel.args.get("where")
        b = _bounds(where.this if where is not None else None, column, names) if where is not None else None
        if b is None:
            return None
        lo, hi = b
        for p in periods:
            first, last = (p, p) if len(p) == 10 else (f"{p}-01", f"{p}-31")
            if (lo is None or last >= lo) and (hi is None or first <= hi):
                hit.add(p)
    if not seen:
        return None
    return sorted(hit)
