"""The Acme clock and calendars (LAKE.md, Conventions): d0, d-N, the NRF 4-5-4 fiscal calendar."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from functools import cache
from zoneinfo import ZoneInfo

__all__ = ["D0", "D0_DATE", "ET", "UTC", "day", "at", "FiscalDay", "fiscal", "fiscal_years", "FIRST_DATE",
           "LAST_CAL_DATE", "holidays", "dates"]

UTC = dt.timezone.utc
ET = ZoneInfo("America/New_York")
D0 = dt.datetime(2025, 3, 10, 13, 0, tzinfo=UTC)          # evaluation "now": 09:00 ET
D0_DATE = dt.date(2025, 3, 10)
FIRST_DATE = dt.date(2023, 1, 29)                           # FY2023 start: the first order date
LAST_CAL_DATE = dt.date(2026, 1, 31)                        # FY2025 end: the last dim_date row
_PERIOD_WEEKS = (4, 5, 4, 4, 5, 4, 4, 5, 4, 4, 5, 4)


def day(n: int) -> dt.date:
    """d-n as a date."""
    return D0_DATE - dt.timedelta(days=n)


def at(n: int, hour: float = 6.0) -> float:
    """Seconds since the epoch of d-n at `hour` UTC (fractions are minutes)."""
    d = day(n)
    return dt.datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp() + hour * 3600


def dates(lo: dt.date, hi: dt.date) -> list[dt.date]:
    return [lo + dt.timedelta(days=i) for i in range((hi - lo).days + 1)]


@cache  # a pure function of a few hundred dates, called per row by the generator
def _fy_start(year: int) -> dt.date:
    """The Sunday nearest Feb 1 of `year`."""
    feb1 = dt.date(year, 2, 1)
    back = (feb1.weekday() + 1) % 7          # days since the last Sunday (Mon=0 .. Sun=6)
    return feb1 - dt.timedelta(days=back) if back <= 3 else feb1 + dt.timedelta(days=7 - back)


@dataclass(frozen=True)
class FiscalDay:
    fiscal_year: int
    fiscal_quarter: int
    fiscal_period: int
    fiscal_week: int
    fiscal_year_start: dt.date


def fiscal_years() -> dict[int, tuple[dt.date, dt.date]]:
    return {y: (_fy_start(y), _fy_start(y + 1) - dt.timedelta(days=1)) for y in range(2022, 2027)}


@cache  # FiscalDay is frozen, so one instance per date is shared
def fiscal(d: dt.date) -> FiscalDay:
    year = d.year if d >= _fy_start(d.year) else d.year - 1
    start = _fy_start(year)
    week = (d - start).days // 7 + 1
    acc, period = 0, 12
    for i, w in enumerate(_PERIOD_WEEKS):
        acc += w
        if week <= acc:
            period = i + 1
            break
    return FiscalDay(year, (period - 1) // 3 + 1, period, week, start)


def _nth(year: int, month: int, weekday: int, n: int) -> dt.date:
    d = dt.date(year, month, 1)
    d += dt.timedelta(days=(weekday - d.weekday()) % 7)
    if n > 0:
        return d + dt.timedelta(weeks=n - 1)
    last = dt.date(year + month // 12, month % 12 + 1, 1) - dt.timedelta(days=1)
    return last - dt.timedelta(days=(last.weekday() - weekday) % 7)


def holidays(year: int) -> set[dt.date]:
    return {dt.date(year, 1, 1), _nth(year, 1, 0, 3), _nth(year, 5, 0, -1), dt.date(year, 7, 4),
            _nth(year, 9, 0, 1), _nth(year, 11, 3, 4), dt.date(year, 12, 25)}
