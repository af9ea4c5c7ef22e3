"""Clutter tables of the cryptic variant: the look-alikes a decade of warehouse work leaves (dated
backups, staging copies, per-region extracts, test and tmp tables, an abandoned v2 mart, fiscal-year
archives), each derived from rows the generator already made and each annotated in both histories as
deprecated (with its successor) or not for reporting (LAKE-cryptic.md).

Invariants: every clutter table is written under cryptic names only (its columns are the real table's
cryptic columns), is unpartitioned, and has exactly one `deprecated` or `not_for_reporting` annotation
naming the real table it shadows; the plan is a pure function of the Naming and the generated lake; its
tables are committed on batch days of the history (`DAYS`), never on a change day's annotation.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from eval.lake import tables as T
from eval.lake.calendar import FIRST_DATE, day
from eval.lake.naming import Naming

if TYPE_CHECKING:
    from eval.lake.generate import Lake

__all__ = ["Clutter", "plan", "DAYS", "MAX_ROWS"]

MAX_ROWS = 3000
DAYS = (105, 77, 63, 49, 35, 21)

_BACKUP = ["core.fct_orders", "core.fct_order_items", "core.fct_payments", "core.dim_customer", "core.dim_product",
           "mart.agg_daily_store_revenue", "mart.agg_weekly_category_sales", "mart.rpt_finance_monthly_revenue",
           "mart.agg_customer_ltv"]
_STAGING = ["core.dim_store", "core.dim_product", "core.dim_customer", "core.fct_orders", "core.fct_order_items",
            "core.fct_payments", "core.fct_refunds", "core.fct_shipments", "core.fct_loyalty_events",
            "core.fct_marketing_spend_daily", "core.fct_web_sessions", "mart.agg_daily_store_revenue",
            "mart.agg_weekly_category_sales", "mart.rpt_finance_monthly_revenue", "mart.agg_customer_ltv",
            "legacy.sales_daily"]
_TMP = ["core.fct_orders", "core.fct_order_items", "core.dim_customer", "core.fct_payments", "core.fct_refunds",
        "mart.agg_daily_store_revenue", "core.dim_store", "core.fct_web_sessions", "core.dim_product",
        "mart.agg_customer_ltv", "core.fct_shipments", "core.fct_marketing_spend_daily"]
_V2 = ["mart.agg_daily_store_revenue", "mart.agg_weekly_category_sales", "mart.rpt_finance_monthly_revenue",
       "mart.agg_customer_ltv", "core.fct_orders", "core.fct_order_items"]
_ARCHIVE = ["core.fct_orders", "core.fct_order_items", "core.fct_payments", "core.fct_refunds"]
_EXTRACT = ["mart.agg_daily_store_revenue", "core.fct_orders", "core.dim_store"]
_DATE_COL = {"core.fct_orders": "order_date_local", "core.fct_order_items": "order_date_local",
             "core.fct_refunds": "refund_date", "core.fct_loyalty_events": "event_date",
             "core.fct_marketing_spend_daily": "spend_date", "core.fct_web_sessions": "session_date",
             "mart.agg_daily_store_revenue": "date_local", "legacy.sales_daily": "sale_date",
             "core.fct_payments": "attempted_at_utc", "core.fct_shipments": "shipped_ts_utc"}


@dataclass
class Clutter:
    """One clutter table: its written `ns.table`, the day it is committed (d-N), the plain table it
    copies, its family, its annotation fields (plain-named, translated when written) and its rows."""

    name: str
    n: int
    source: str
    family: str
    fields: dict[str, Any]
    rows: list[dict[str, Any]]


# where each source table's plain rows live in the generated lake, as they stood at `upto`
_SOURCES: dict[str, Callable[[Lake, dt.date], list[dict[str, Any]]]] = {
    "core.dim_store": lambda L, upto: L.stores,
    "core.dim_product": lambda L, upto: L.products,
    "core.dim_customer": lambda L, upto: L.customers_type1(upto),
    "core.fct_orders": lambda L, upto: [{**o, "status": L.order_status(o, False)} for o in L.orders],
    "core.fct_order_items": lambda L, upto: L.items,
    "core.fct_payments": lambda L, upto: L.payments,
    "core.fct_refunds": lambda L, upto: L.refunds,
    "core.fct_shipments": lambda L, upto: L.shipments,
    "core.fct_loyalty_events": lambda L, upto: L.loyalty,
    "core.fct_marketing_spend_daily": lambda L, upto: L.marketing,
    "core.fct_web_sessions": lambda L, upto: L.sessions,
    "mart.agg_daily_store_revenue": lambda L, upto: L.daily_store_revenue(FIRST_DATE, upto, None),
    "mart.agg_weekly_category_sales": lambda L, upto: L.weekly_category_sales(upto),
    "mart.rpt_finance_monthly_revenue": lambda L, upto: L.finance_monthly(upto.replace(day=1), False),
    "mart.agg_customer_ltv": lambda L, upto: L.customer_ltv((upto.replace(day=1) - dt.timedelta(days=1)).replace(day=1)),
    "legacy.sales_daily": lambda L, upto: L.legacy_sales(FIRST_DATE, min(upto, day(61))),
}


def _rows(lake: Lake, src: str, upto: dt.date) -> list[dict[str, Any]]:
    """Plain rows of `src` as they stood at `upto` (the table's d-119 layout); KeyError for a table
    the lake does not generate."""
    rows = _SOURCES[src](lake, upto)
    col = _DATE_COL.get(src)
    cols = [c for c, _ in T.TABLES[src].columns]
    out = []
    for r in rows:
        if col is not None:
            v = r[col]
            d = v.date() if isinstance(v, dt.datetime) else v
            if d is None or d > upto:
                continue
        out.append({c: r.get(c) for c in cols})
    return out


def plan(nm: Naming, lake: Lake, seed: int) -> list[Clutter]:  # noqa: C901 - one block per clutter family, in the order LAKE-cryptic.md lists them
    """Every clutter table of the variant (none for the plain one)."""
    if nm.identity:
        return []
    rng = random.Random(f"semcat-clutter-{seed}")
    out: list[Clutter] = []
    memo: dict[tuple[str, dt.date], list[dict[str, Any]]] = {}

    def _rows_at(src: str, upto: dt.date) -> list[dict[str, Any]]:
        """`_rows`, computed once per (table, day): several families read the same state (never mutated)."""
        if (src, upto) not in memo:
            memo[src, upto] = _rows(lake, src, upto)
        return memo[src, upto]

    tn = {p: nm.tables[p] for p in T.TABLES}

    def short(p: str) -> str:
        return tn[p].split(".")[1]

    def ns(p: str) -> str:
        return tn[p].split(".")[0]

    stg_ns, tmp_ns = "zstg", "zz"
    v2_ns = ns("mart.agg_daily_store_revenue") + "2"

    def cap(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return rows[-MAX_ROWS:]

    # dated backups: a full copy (up to MAX_ROWS of the latest rows) as it stood that day, never refreshed
    for n in (105, 77, 49, 21):
        d = day(n)
        for p in _BACKUP:
            rows = cap(_rows_at(p, d))
            out.append(Clutter(f"{ns(p)}.{short(p)}_bkp_{d:%Y%m%d}", n, p, "backup",
                               {"description": f"Backup of acme.{p} taken {d} before a reload; not refreshed since.",
                                "deprecated": {"reason": f"point-in-time backup of {d}, missing everything after it",
                                               "replaced_by": f"acme.{p}", "since": d.isoformat()}}, rows))
    # staging copies with a reload's duplicates
    for p in _STAGING:
        rows = cap(_rows_at(p, day(105)))
        dup = [r for r in rows if rng.random() < 0.04]
        out.append(Clutter(f"{stg_ns}.stg_{short(p)}", 105, p, "staging",
                           {"description": f"ETL staging copy of acme.{p}.",
                            "not_for_reporting": {"reason": "staging copy of a load in progress: holds duplicate rows",
                                                  "use_instead": [f"acme.{p}"]}}, rows + dup))
    # per-region extracts: the revenue extract in whole dollars under the cents columns
    region_of = {s["store_id"]: s["region"] for s in lake.stores}
    for p in _EXTRACT:
        for region in ("northeast", "southeast", "midwest", "west", "online"):
            rows = [r for r in _rows_at(p, day(49)) if region_of.get(r.get("store_id")) == region
                    or r.get("region") == region]
            fields: dict[str, Any] = {"description": f"Extract of acme.{p} for the {region} regional team.",
                                      "not_for_reporting": {"reason": "regional extract for a spreadsheet",
                                                            "use_instead": [f"acme.{p}"]}}
            if p == "mart.agg_daily_store_revenue":
                rows = [{k: (v // 100 if k.endswith("_cents") and isinstance(v, int) else v) for k, v in r.items()}
                        for r in rows]
                fields["description"] += " Amounts in whole dollars (cents dropped), not cents."
            out.append(Clutter(f"{ns(p)}.{short(p)}_x{nm.code('region', region).lower()}", 49, p, "extract",
                               fields, cap(rows)))
    # developers' test and tmp tables: a sample of 200 rows
    for i, p in enumerate(_TMP):
        n = 77 if i % 2 else 21
        rows = _rows_at(p, day(n))
        rows = rng.sample(rows, min(200, len(rows)))
        for name in (f"{tmp_ns}.tmp_{short(p)}_{i + 1}", f"{tmp_ns}.test_{short(p)}"):
            out.append(Clutter(name, n, p, "test", {"description": f"Scratch sample of acme.{p} for a test.",
                                                     "not_for_reporting": {"reason": "developer scratch table",
                                                                           "use_instead": [f"acme.{p}"]}}, rows))
    # the abandoned v2 mart: an earlier rule (tax in net, cancelled orders kept), never went live
    for p in _V2:
        rows = cap(_rows_at(p, day(63)))
        if p == "mart.agg_daily_store_revenue":
            rows = [{**r, "net_revenue_cents": r["gross_revenue_cents"]} for r in rows]
        out.append(Clutter(f"{v2_ns}.{short(p)}_v2", 63, p, "v2_mart",
                           {"description": f"v2 rebuild of acme.{p}, abandoned before go-live.",
                            "deprecated": {"reason": "abandoned v2 mart: never validated, not loaded since",
                                           "replaced_by": f"acme.{p}", "since": day(63).isoformat()}}, rows))
    # fiscal-year archives
    for p in _ARCHIVE:
        for fy, lo, hi in ((2023, dt.date(2023, 1, 29), dt.date(2024, 2, 3)),
                           (2024, dt.date(2024, 2, 4), dt.date(2025, 2, 1))):
            col = _DATE_COL[p]
            rows = [r for r in _rows_at(p, day(35))
                    if lo <= (r[col].date() if isinstance(r[col], dt.datetime) else r[col]) <= hi]
            out.append(Clutter(f"{ns(p)}.{short(p)}_fy{fy}", 35, p, "archive",
                               {"description": f"Archive of acme.{p} for FY{fy}.",
                                "deprecated": {"reason": f"FY{fy} archive copy; the live table holds every year",
                                               "replaced_by": f"acme.{p}", "since": day(35).isoformat()}},
                               cap(rows)))
    return [c for c in out if c.rows]


def write(c: Clutter, nm: Naming) -> tuple:
    """The Loader write of a clutter table (written names, coded values)."""
    cols = [(nm.column(k), ty) for k, ty in T.TABLES[c.source].columns]
    return (c.name, cols, [nm.row(c.source, r) for r in c.rows], "overwrite", "evolve")
