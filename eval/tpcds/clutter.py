"""Clutter tables of the TPC-DS world's cryptic variant: the look-alikes a decade of warehouse work leaves
(dated backups, staging copies with a reload's duplicates, per-category extracts, developers' test and tmp
tables, an abandoned v2 of the sales tables), the way eval/lake/clutter.py clutters the Acme lake
(eval/LAKE-cryptic.md). Each is derived from the generated rows (already under the variant's names), written
through the Spark bridge after the data team's annotations (one commit per family, long before the world's
changes: no routine load writes them), and annotated `deprecated` (with its successor) or
`not_for_reporting` (use the live table), so both histories hold them.

Invariants: names are written names only (no plain table name inside one); every clutter table has exactly
one `deprecated` or `not_for_reporting` annotation naming the real table it shadows; the plan is a pure
function of the Naming.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from eval.lake.naming import Naming
from eval.tpcds import docs as D

__all__ = ["write_clutter", "MAX_ROWS", "plan"]

MAX_ROWS = 3000
AUTHOR = "etl:tpcds"
ANNOTATOR = "data-team"

_BACKUP = ["sales.store_sales", "sales.store_returns", "sales.catalog_sales", "sales.web_sales", "sales.web_returns",
           "dim.item", "dim.customer", "dim.ship_mode"]
_STAGING = ["sales.store_sales", "sales.catalog_sales", "sales.web_sales", "sales.web_returns", "dim.item",
            "dim.customer", "dim.customer_address", "dim.store"]
_TMP = ["sales.store_sales", "sales.web_returns", "sales.catalog_sales", "dim.item", "dim.customer", "dim.ship_mode",
        "sales.store_returns", "dim.date_dim"]
_V2 = ["sales.store_sales", "sales.catalog_sales", "sales.web_sales", "sales.web_returns"]
_BACKUP_DAYS = (40, 12)  # days before the first daily load


def plan(nm: Naming, first_daily: dt.date) -> list[dict[str, Any]]:
    """Every clutter table: written `ns.table`, the plain table it copies, its family, how its rows are
    taken ("upto": a fact's rows up to a day; "dups": with ~4% duplicated; "sample": 200 rows; "category":
    an item category's rows) and its annotation fields (written names)."""
    if nm.identity:
        return []
    tn = {p: nm.tables[p] for p in D.TABLES}

    def short(p: str) -> str:
        return tn[p].split(".")[1]

    def ns(p: str) -> str:
        return tn[p].split(".")[0]

    def full(p: str) -> str:
        return nm.full_table(p)

    out: list[dict[str, Any]] = []
    for n in _BACKUP_DAYS:
        d = first_daily - dt.timedelta(days=n)
        for p in _BACKUP:
            out.append({"name": f"{ns(p)}.{short(p)}_bkp_{d:%Y%m%d}", "source": p, "family": "backup", "upto": d,
                        "fields": {"description": f"Backup of {full(p)} taken {d} before a reload; not refreshed since.",
                                   "deprecated": {"reason": f"point-in-time backup of {d}, missing everything after it",
                                                  "replaced_by": full(p), "since": d.isoformat()}}})
    for p in _STAGING:
        out.append({"name": f"zstg.stg_{short(p)}", "source": p, "family": "staging", "dups": True,
                    "fields": {"description": f"ETL staging copy of {full(p)}.",
                               "not_for_reporting": {"reason": "staging copy of a load in progress: holds duplicate rows",
                                                     "use_instead": [full(p)]}}})
    item = "dim.item"
    for code in sorted(nm.values.get("i_category", {}).values())[:5]:
        out.append({"name": f"{ns(item)}.{short(item)}_x{code.lower()}", "source": item, "family": "extract",
                    "category": code,
                    "fields": {"description": f"Extract of {full(item)} for one category team ({code}).",
                               "not_for_reporting": {"reason": "category extract for a spreadsheet",
                                                     "use_instead": [full(item)]}}})
    for i, p in enumerate(_TMP):
        for name in (f"zz.tmp_{short(p)}_{i + 1}", f"zz.test_{short(p)}"):
            out.append({"name": name, "source": p, "family": "test", "sample": 200,
                        "fields": {"description": f"Scratch sample of {full(p)} for a test.",
                                   "not_for_reporting": {"reason": "developer scratch table", "use_instead": [full(p)]}}})
    v2_ns = ns("sales.store_sales") + "2"
    d = first_daily - dt.timedelta(days=_BACKUP_DAYS[0])
    for p in _V2:
        out.append({"name": f"{v2_ns}.{short(p)}_v2", "source": p, "family": "v2_mart", "upto": d,
                    "fields": {"description": f"v2 rebuild of {full(p)}, abandoned before go-live.",
                               "deprecated": {"reason": "abandoned v2 rebuild: never validated, not loaded since",
                                              "replaced_by": full(p), "since": d.isoformat()}}})
    return out


def write_clutter(cat: Any, bridge: Any, frames: dict[str, Any], nm: Naming, t: float,
                  first_daily: dt.date) -> dict[str, dict[str, str]]:
    """Write and annotate every clutter table (one commit per family from time `t` on); returns
    `tpcds.<written>` -> {"family", "shadows"} for names.json."""
    from pyspark.sql import functions as F

    import semantic as sm

    clock = [t]

    def tick() -> float:
        clock[0] += 60.0
        return clock[0]

    items = plan(nm, first_daily)
    out: dict[str, dict[str, str]] = {}
    for family in dict.fromkeys(c["family"] for c in items):
        group = [c for c in items if c["family"] == family]
        with bridge.transaction(author=AUTHOR, message=f"housekeeping: {family} tables ({len(group)})",
                                time=tick()) as tx:
            for c in group:
                df = frames[c["source"]]
                dcol = D.TABLES[c["source"]][1]
                if c.get("upto") is not None and dcol is not None:
                    df = df.where(F.col(nm.column(dcol[0])) <= F.lit(c["upto"]))
                if c.get("category"):
                    df = df.where(F.col(nm.column("i_category")) == F.lit(c["category"]))
                if c.get("sample"):
                    df = df.sample(fraction=0.5, seed=49).limit(int(c["sample"]))
                else:
                    df = df.limit(MAX_ROWS)
                if c.get("dups"):
                    df = df.unionAll(df.sample(fraction=0.04, seed=49))
                tx.write(df.coalesce(1), f"{D.CATALOG}.{c['name']}", mode="overwrite")
        for c in group:
            full = f"{D.CATALOG}.{c['name']}"
            sm.annotate(cat, full, c["fields"], author=ANNOTATOR, time=tick())
            out[full] = {"family": family, "shadows": nm.full_table(c["source"])}
    return out
