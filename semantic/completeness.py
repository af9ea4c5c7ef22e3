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

__all__ = ["completeness", "describe_text", "MAX_INCOMPLETE", "period_end"]

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


def _names(name: str, spec: LoadLog) -> list[str]:
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
    res = cc.run_sql(ctx.cat, sql, snapshot=ctx.vid, limit=_LOG_ROWS)
    names = ("complete", "partial", "failed")
    out: dict[str, dict[str, tuple[str, float | None, str | None]]] = {}
    for t, period, r, ld, part in res.rows:
        out.setdefault(str(t), {})[str(period)] = (names[int(r)], None if ld is None else float(ld),
                                                   None if int(r) == 0 else str(part))
    ctx.cache.completeness.put(key, out)
    return out


def _log_periods(ctx: Context, name: str, spec: LoadLog) -> dict[str, tuple[str, float | None, str | None]]:
    """period -> (complete | partial | failed, latest load time, the part that was not complete):
    the incomplete periods and the latest complete one the log records for `name`."""
    log = _read_log(ctx, spec)
    for n in _names(name, spec):
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
        from semantic.lineage import upstream_periods

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

