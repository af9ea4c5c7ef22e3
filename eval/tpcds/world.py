"""The TPC-DS lake as an eval world (issue 49, Deliver 3): `semcat eval build --world tpcds --data DIR`.

On the lake `eval.tpcds.build` makes (tpcgen-cli data loaded through the Spark bridge with a history, a
data team's annotations), the world adds what the eval needs, the way the Acme build does:

  1. Changes after the annotations, applied through the Spark bridge with the trap generator's write
     paths (`eval.traps.generator.Generator`: read, restate, alter, write, and its routine loads that
     replay the latest day as a new one), scripted so that the public questions' right answers depend
     on them (CHANGES):
       unit        web_returns.wr_return_amt restated in cents (x100, same name and type family)
       rename      store_sales.ss_net_paid renamed ss_net_paid_excl_tax (ALTER, the same column id)
       restated    catalog_sales.cs_net_paid restated to include tax (values only: no history shows what)
       replacement store_returns_v2 written beside store_returns, which stops loading
       enum        ship_mode.sm_type value EXPRESS renamed EXPEDITED
     then two routine loads (days 1 and 2 after the lake's old now).
  2. Two histories of the same data (LAKE/enriched, LAKE/stale: the catalog is copied once the data is
     written): the enriched team updates every annotation a change made false within two days
     (UPDATES); the stale one never does, and holds a few annotations wrong from the start that no
     history reveals (WRONG_FROM_START).
  3. LAKE/stale_manifest.json: every annotation whose value differs between the two histories, with
     the change (kind) that made it stale and whether the history reveals it; LAKE/lake.json's `d0`
     moves to the world's now. LAKE/reviewed (`eval.harness.reviewed`) is then built from LAKE/stale.

Gold SQL of eval/questions/tpcds.yaml is written against the world's current state.

`variant="cryptic"` builds the same world under the names of eval/tpcds/naming.py (eval/LAKE-cryptic.md):
the lake's data renamed and coded before they are loaded, its clutter tables (eval/tpcds/clutter.py), every
change, annotation, SQL text and commit message here under the written names, and LAKE/names.json, through
which the harness translates the questions' gold SQL.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import time
from collections.abc import Callable
from typing import Any

from eval.lake.naming import NAMES_FILE, Naming
from eval.tpcds import docs as D

__all__ = ["build_world", "CHANGES", "WRONG_FROM_START", "HOUR", "DAY"]

HOUR = 3600.0
DAY = 86400.0
ANNOTATOR = "data-team"
SEED = 49
AFTER_CHANGES = "_after_changes"
C = D.CATALOG


def T(name: str, nm: Naming | None = None) -> str:
    """`tpcds.<name>` under `nm`'s names (plain when None)."""
    return nm.full_table(f"{C}.{name}") if nm is not None else f"{C}.{name}"


# (change id, kind of drift, what happens, detectable from the history)
CHANGES: list[tuple[str, str, str, bool]] = [
    ("unit", "unit_change", "web_returns.wr_return_amt restated in cents", True),
    ("rename", "renamed_column", "store_sales.ss_net_paid renamed ss_net_paid_excl_tax", True),
    ("restated", "restated_meaning", "catalog_sales.cs_net_paid restated to include tax", False),
    ("replacement", "deprecated_without_flag", "store_returns replaced by store_returns_v2", True),
    ("enum", "outdated_enum", "ship_mode.sm_type EXPRESS renamed EXPEDITED", True),
]

# annotations of the stale history that were wrong from the start: (table, fields, column or None)
WRONG_FROM_START: list[tuple[str, dict[str, Any], str | None]] = [
    ("sales.web_sales", {"description": "Web order lines, dated by ws_sold_date; money in dollars, net of returns "
                                        "(returned lines are removed from this table)."}, None),
    ("dim.customer_address", {"unit": "minutes", "description": "offset of local time from GMT, in minutes"},
     "ca_gmt_offset"),
]


def _drift(cat: Any, spark: Any, warehouse: str, now: float, log: Callable[[str], None], nm: Naming) -> float:
    """The data changes and the routine loads (one catalog), under `nm`'s names; returns the world's now."""
    from pyspark.sql import functions as F

    from eval.traps.generator import Generator
    from spark_bridge import Bridge

    bridge = Bridge(spark, cat, warehouse=warehouse, footers_on="driver")
    g = Generator(cat, bridge, now, SEED, C, log)
    try:
        # unit: the web returns' amount restated in cents
        t = T("sales.web_returns", nm)
        df = g.read(t)
        amt = nm.column("wr_return_amt")
        df = df.withColumn(amt, (F.col(amt) * F.lit(100)).cast("decimal(11,2)"))
        g.restate(t, df, nm.text("restate web_returns from the returns service (amounts from the source system)"))
        log("  unit: wr_return_amt x100")
        # rename: the store net paid column says what it holds
        bridge.alter(T("sales.store_sales", nm), rename={nm.column("ss_net_paid"): nm.column("ss_net_paid_excl_tax")},
                     author="etl:tpcds", message=nm.text("rename ss_net_paid to ss_net_paid_excl_tax"), time=g.tick())
        log("  rename: ss_net_paid -> ss_net_paid_excl_tax")
        # restated: catalog net paid now includes tax (a source fix; the message does not say what)
        t = T("sales.catalog_sales", nm)
        df = g.read(t).withColumn(nm.column("cs_net_paid"), F.col(nm.column("cs_net_paid_inc_tax")))
        g.restate(t, df, nm.text("catalog_sales reloaded from the order system"))
        log("  restated: cs_net_paid := cs_net_paid_inc_tax")
        # replacement: store returns v2 beside the old table, which stops loading
        old, new = T("sales.store_returns", nm), T("sales.store_returns_v2", nm)
        df = g.read(old).localCheckpoint()
        bridge.write(df, new, mode="overwrite", author="etl:tpcds", message=f"new table {new}", time=g.tick(),
                     inputs=[old])
        g.stopped.add(old)
        g.active = [a for a in g.active if a != old] + [new]
        log("  replacement: store_returns_v2")
        # enum: EXPRESS renamed EXPEDITED
        t = T("dim.ship_mode", nm)
        smt = nm.column("sm_type")
        df = g.read(t).withColumn(smt, F.when(F.col(smt) == nm.code("sm_type", "EXPRESS"),
                                              F.lit(nm.code("sm_type", "EXPEDITED"))).otherwise(F.col(smt)))
        g.restate(t, df, nm.text("ship_mode reloaded from the carrier table"))
        log("  enum: sm_type EXPRESS -> EXPEDITED")
        for n in (1, 2):
            g.clock = max(g.clock, now + n * DAY - HOUR)
            g.routine(n, False)
            _replay(g, T("sales.store_sales", nm), n)
    finally:
        if g.scratch:
            shutil.rmtree(g.scratch, ignore_errors=True)
    return max(now + 2 * DAY + 4 * HOUR, g.clock + 4 * HOUR)


def _replay(g: Any, table: str, n: int) -> None:
    """The routine load of `table`, which the generator's routine keeps out (other tables join to its
    keys): its latest day replayed as a new one, the grain's ticket numbers moved past the table's."""
    from eval.traps.lakeview import LakeView

    g.view = LakeView(g.cat, C)
    t = g.view.tables[table]
    day = g.replay(t, 1, {}, g.today + dt.timedelta(days=n))
    g.bridge.write(day.localCheckpoint(), table, mode="append", author="etl:tpcds",
                   message=f"routine load day {n} ({table.rsplit('.', 1)[1]})", time=g.tick())


def _remove(cat: Any, table: str, key: str, t: float) -> None:
    from catalog_core import lake

    with cat.transaction(author=ANNOTATOR, message=f"remove annotation {table}:{key}", meta={"semantic": True},
                         time=t) as txn:
        txn.remove(lake.semantic_path(table, key))


def _verified_on(cat: Any, table: str, question: str) -> list[str]:
    from semantic.annotations import read_annotations

    return [a.key for a in read_annotations(cat, table) if a.kind == "verified_query"
            and isinstance(a.value, dict) and a.value.get("question") == question]


def _updates(cat: Any, t0: float, nm: Naming) -> dict[str, float]:
    """The enriched team's updates for every change (UPDATES), from t0 on, under `nm`'s names (fields, prose,
    columns and SQL translated); returns change id -> its first time."""
    import semantic as sm
    from eval.lake.translate import translate

    clock = [t0]

    def tick() -> float:
        clock[0] += 60.0
        return clock[0]

    def ann(table: str, fields: dict[str, Any], column: str | None = None, t: float | None = None) -> None:
        sm.annotate(cat, T(table, nm), nm.fields(fields, column), column=nm.column(column) if column else None,
                    author=ANNOTATOR, time=t if t is not None else tick())

    def metric(table: str, name: str, expression: str, *, time_column: str | None = None,
               filter: str | None = None, unit: str, description: str, t: float | None = None) -> None:
        sm.define_metric(cat, T(table, nm), name, expression=translate(expression, nm),
                         filter=translate(filter, nm) if filter else None,
                         time_column=nm.column(time_column) if time_column else None, unit=unit,
                         description=nm.text(description), author=ANNOTATOR, time=t if t is not None else tick())

    def verify(q: str, sql: str) -> None:
        sm.verify_query(cat, q, translate(sql, nm, qualify=False), author=ANNOTATOR, time=tick())

    last = dt.datetime.fromtimestamp(t0, dt.timezone.utc).date()
    at: dict[str, float] = {}
    # unit
    at["unit"] = tick()
    ann("sales.web_returns", {"unit": "USD cents", "description": "return amount in cents (restated from the returns "
        "service): divide by 100 for dollars"}, "wr_return_amt", at["unit"])
    ann("sales.web_returns", {"description": "Web returns, dated by wr_returned_date; money in dollars except "
        "wr_return_amt, in cents since the returns-service restatement."})
    for key in _verified_on(cat, T("sales.web_returns", nm), "web returns amount"):
        _remove(cat, T("sales.web_returns", nm), key, tick())
    verify("web returns amount", f"SELECT SUM(wr_return_amt) / 100 FROM {T('sales.web_returns')}")
    # rename
    at["rename"] = tick()
    metric("sales.store_sales", "store_net_paid", "SUM(ss_net_paid_excl_tax)", time_column="ss_sold_date", unit="USD",
           description="store sales net of discounts, excluding tax", t=at["rename"])
    q = "store net paid on the last loaded day"
    for key in _verified_on(cat, T("sales.store_sales", nm), q):
        _remove(cat, T("sales.store_sales", nm), key, tick())
    verify(q, f"SELECT SUM(ss_net_paid_excl_tax) FROM {T('sales.store_sales')} WHERE ss_sold_date = "
              f"(SELECT MAX(ss_sold_date) FROM {T('sales.store_sales')})")
    ann("sales.store_sales", {"description": "Store sales line items, dated by ss_sold_date; money columns in dollars. "
        "Net paid (ss_net_paid_excl_tax) excludes tax; net profit is net paid minus wholesale cost."})
    # restated
    at["restated"] = tick()
    ann("sales.catalog_sales", {"description": "amount paid including tax since the order-system reload (equal to "
        "cs_net_paid_inc_tax); net paid excluding tax is cs_net_paid - cs_ext_tax"}, "cs_net_paid", at["restated"])
    metric("sales.catalog_sales", "catalog_net_paid", "SUM(cs_net_paid - cs_ext_tax)", time_column="cs_sold_date",
           unit="USD", description="catalog sales net paid, excluding tax")
    # replacement
    at["replacement"] = tick()
    old, new = T("sales.store_returns", nm), T("sales.store_returns_v2", nm)
    sm.annotate(cat, old, {"deprecated": {"since": str(last), "replaced_by": new}}, author=ANNOTATOR,
                time=at["replacement"])
    f = dict(D.TABLE_DOCS["sales.store_returns"])
    f["description"] = "Store returns of ticket lines (replaces store_returns), dated by sr_returned_date; money in dollars."
    f["freshness_sla"] = D.SLA["sales.store_returns"]
    ann("sales.store_returns_v2", f)
    ann("sales.store_returns_v2", {"unit": "USD", "role": "measure"}, "sr_return_amt")
    for src, rname, to, on in D.RELATIONSHIPS:
        if src == "sales.store_returns":
            sm.relate(cat, new, T(to, nm), on=[(nm.column(a), nm.column(b)) for a, b in on], cardinality="many_to_one",
                      name=nm.text(rname), author=ANNOTATOR, time=tick())
    # enum
    at["enum"] = tick()
    ann("dim.ship_mode", {"enum": ["EXPEDITED", "LIBRARY", "NEXT DAY", "OVERNIGHT", "REGULAR", "TWO DAY"]}, "sm_type",
        at["enum"])
    metric("dim.ship_mode", "express_modes", "COUNT(*)", filter="sm_type = 'EXPEDITED'", unit="ship modes",
           description="express (expedited) ship modes")
    # the verified query over both restated tables: checked again (its answer moved)
    q, sql = D.VERIFIED[3]
    verify(q, sql.format(c=C, last=last))
    return at


def _wrong_from_start(cat: Any, t0: float, nm: Naming) -> None:
    import semantic as sm

    t = t0
    for table, fields, column in WRONG_FROM_START:
        t += 60.0
        sm.annotate(cat, T(table, nm), nm.fields(fields, column), column=nm.column(column) if column else None,
                    author=ANNOTATOR, time=t)


# the table a change is about (its annotations the enriched team updated): change id
CHANGED_TABLES = {"sales.web_returns": "unit", "sales.store_sales": "rename", "sales.catalog_sales": "restated",
                  "sales.store_returns": "replacement", "dim.ship_mode": "enum"}


def _manifest(enriched: Any, stale: Any, nm: Naming) -> list[dict[str, Any]]:
    """Every annotation of the stale history whose value the enriched one does not hold (changed or removed
    there), plus the deprecation flags only the enriched one has: the change of its table (CHANGED_TABLES),
    or wrong from the start (WRONG_FROM_START). Annotations of a table only the enriched team annotated
    (store_returns_v2) are not stale annotations: the stale history has none there. Under `nm`'s names; a
    coded column's `labels` (the cryptic variant's addition) is not counted, so the stale set is the plain one's."""
    from eval.harness.reviewed import same_value
    from semantic.annotations import read_catalog_annotations

    def by_key(cat: Any) -> dict[tuple[str, str], Any]:
        return {(t, a.key): a for t, anns in read_catalog_annotations(cat).items() for a in anns
                if a.kind != "review" and a.field != "labels"}

    en, st = by_key(enriched), by_key(stale)
    wrong = {(T(t, nm), nm.column(c) if c else c) for t, _, c in WRONG_FROM_START}
    changed = {T(t, nm): cid for t, cid in CHANGED_TABLES.items()}
    kinds = {cid: (kind, det) for cid, kind, _, det in CHANGES}
    out = []
    for k in sorted(set(en) | set(st)):
        a, b = en.get(k), st.get(k)
        table, key = k
        if (a is not None and b is not None and same_value(a.value, b.value)) or (b is None and key != "table.deprecated"):
            continue
        col = b.column if b is not None and b.kind == "column" else None
        if b is not None and ((table, col) in wrong and col is not None
                              or (table, None) in wrong and key == "table.description"):
            out.append({"table": table, "key": key, "annotation": f"{table}:{key}", "kind": "wrong_from_start",
                        "detectable": False, "change": None})
            continue
        cid = changed.get(table)
        kind, det = kinds[cid] if cid else ("unknown", True)
        out.append({"table": table, "key": key, "annotation": f"{table}:{key}", "kind": kind, "detectable": det,
                    "change": cid})
    return out


def build_world(out: str, *, variant: str = "plain", scale: float = 0.01, days: int = 7, base: str | None = None,
                reviewed: bool = True, resume: bool = False, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Build the TPC-DS world into `out` (replaced): the lake (`eval.tpcds.build`, or a copy of `base`,
    a lake it built, whose warehouse is copied too), the changes, both histories, the manifest and
    (`reviewed`) the stale+reviewed history. `resume`: when a build stopped after the changes were written
    (LAKE/_after_changes holds the catalog then), write the histories again from there."""
    import catalog_core as cc
    from eval.tpcds.naming import naming
    from spark_bridge import local_session

    nm = naming(variant)
    t_start = time.time()

    def step(msg: str) -> None:
        log(f"[{time.time() - t_start:6.1f}s] {msg}")

    kept = os.path.join(out, AFTER_CHANGES)
    if resume and os.path.isdir(kept):  # the changes are written: the histories again, from the kept catalog
        with open(os.path.join(kept, "lake.json"), encoding="utf-8") as fh:
            info = json.load(fh)
        now = float(info.pop("_world_now"))
        step(f"resuming from {kept}")
        return _histories(out, info, now, reviewed, step, naming(str(info.get("variant", "plain"))))
    shutil.rmtree(kept, ignore_errors=True)
    if base is not None:
        for sub in ("enriched", "stale", "reviewed", "warehouse", "lake.json", "stale_manifest.json", NAMES_FILE):
            p = os.path.join(out, sub)
            if os.path.isdir(p):
                shutil.rmtree(p)
            elif os.path.exists(p):
                os.remove(p)
        os.makedirs(out, exist_ok=True)
        _copy_lake(base, out)
        with open(os.path.join(out, "lake.json"), encoding="utf-8") as fh:
            info = json.load(fh)
        if info.get("variant", "plain") != variant:
            raise ValueError(f"the lake {base} is the {info.get('variant', 'plain')} variant, not {variant!r}")
        step(f"copied the TPC-DS lake {base}")
    else:
        from eval.tpcds.build import build

        for sub in ("stale", "reviewed", "stale_manifest.json", "reviewed_report.json", NAMES_FILE):
            p = os.path.join(out, sub)
            if os.path.isdir(p):
                shutil.rmtree(p)
            elif os.path.exists(p):
                os.remove(p)
        info = build(out, scale=scale, days=days, log=log, naming=nm)
        step("TPC-DS lake built")
    now0 = dt.datetime.fromisoformat(str(info["d0"])).timestamp()
    warehouse = os.path.abspath(os.path.join(out, "warehouse"))
    spark = local_session(app_name="semcat-tpcds-world", cores=2)
    cc.mark_lake_root(out)  # the catalogs store paths inside DIR relative: a copy of DIR is an independent lake
    cat = cc.Catalog.open(os.path.join(out, "enriched"))
    try:
        now = _drift(cat, spark, warehouse, now0, lambda m: step(m.strip()), nm)
    finally:
        cat.close()
    # kept, so the histories can be written again without the changes (`resume`): removed once they are
    shutil.copytree(os.path.join(out, "enriched"), os.path.join(kept, "enriched"))
    with open(os.path.join(kept, "lake.json"), "w", encoding="utf-8") as fh:
        json.dump({**info, "_world_now": now}, fh, default=str)
    step("changes and routine loads committed")
    return _histories(out, info, now, reviewed, step, nm)


def _histories(out: str, info: dict[str, Any], now: float, reviewed: bool, step: Callable[[str], None],
               nm: Naming) -> dict[str, Any]:
    """After the changes: LAKE/stale copied from LAKE/enriched, the updates, the manifest, lake.json, names.json
    (the cryptic variant's), LAKE/reviewed."""
    import catalog_core as cc
    from eval.harness.conditions import history_dir
    from eval.harness.reviewed import build_reviewed

    t_start = time.time()
    variant = nm.variant
    en_dir, st_dir = os.path.join(out, "enriched"), os.path.join(out, "stale")
    for d in (en_dir, st_dir, history_dir(out, "reviewed")):
        shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(os.path.join(out, AFTER_CHANGES, "enriched"), en_dir)
    shutil.copytree(en_dir, st_dir)
    en, st = cc.Catalog.open(en_dir), cc.Catalog.open(st_dir)
    try:
        t_upd = max(now - 3 * HOUR, en.commits(limit=1)[0].time + 60.0)
        _updates(en, t_upd, nm)
        _wrong_from_start(st, t_upd, nm)
        manifest = _manifest(en, st, nm)
        for c in (en, st):
            c.snapshot("world-now", c.latest_vid)
        commits = {"enriched": len(en.commits()), "stale": len(st.commits())}
        rows = {}
        for obj in en.query(f"/[obj_id = {cc.lake.quote(C)}]/*/*", vid=None):
            if obj.value.get("obj_type") == "table":
                rows[cc.lake.name_of(obj.path)] = int((obj.value.get("stats") or {}).get("row_count") or 0)
    finally:
        en.close()
        st.close()
    if not nm.identity:  # the harness's map of the names (agents never see it)
        nm.write(os.path.join(out, NAMES_FILE), {"clutter": info.get("clutter", {})})
    with open(os.path.join(out, "stale_manifest.json"), "w", encoding="utf-8") as fh:
        json.dump({"world": "tpcds", "seed": SEED, "changes": [{"id": c, "kind": k, "what": w, "detectable": d}
                                                               for c, k, w, d in CHANGES],
                   "stale": manifest}, fh, indent=1)
    info.update({"world": "tpcds", "variant": variant, "d0_base": info["d0"],
                 "d0": dt.datetime.fromtimestamp(now, dt.timezone.utc).isoformat(), "rows": rows,
                 "commits": commits, "stale_annotations": len(manifest)})
    with open(os.path.join(out, "lake.json"), "w", encoding="utf-8") as fh:
        json.dump(info, fh, indent=1, default=str)
    step(f"histories written: {len(manifest)} stale annotations; now {info['d0']}")
    if reviewed:
        build_reviewed(out, force=True, log=lambda m: step(m))
    info["histories_seconds"] = round(time.time() - t_start, 1)
    shutil.rmtree(os.path.join(out, AFTER_CHANGES), ignore_errors=True)
    with open(os.path.join(out, "lake.json"), "w", encoding="utf-8") as fh:
        json.dump(info, fh, indent=1, default=str)
    step("TPC-DS world done")
    return info


def _copy_lake(base: str, out: str) -> None:
    """Copy the built lake `base` into `out`, its catalog's paths into base/warehouse moved to out/warehouse
    (catalog_core's relocation when it has one; else the copy keeps reading base's files)."""
    shutil.copytree(os.path.join(base, "warehouse"), os.path.join(out, "warehouse"))
    shutil.copytree(os.path.join(base, "enriched"), os.path.join(out, "enriched"))
    shutil.copy2(os.path.join(base, "lake.json"), os.path.join(out, "lake.json"))
