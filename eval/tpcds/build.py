"""`python -m eval.tpcds build --data DIR`: the TPC-DS lake (issue 45's second lake, designed by no
one here). `tpcgen-cli` (PyPI) generates TPC-DS at a tiny scale; a PySpark job loads it through the
Spark bridge with a history (an initial load, then one load a day of the last days of sales), and a
data team's annotations are written after the initial load (descriptions, grains, relationships,
enumerations and documented ranges read off the data, units, freshness SLAs, metrics, verified
queries) with `semantic`'s public functions, as the Acme build does.

Layout of DIR (the Acme lake's, so `python -m eval.traps` reads both):
    DIR/enriched/     the catalog (`tpcds`)
    DIR/warehouse/    the Parquet files
    DIR/lake.json     scale, the lake's now (`d0`), row counts, the vids of the loads
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from eval.tpcds import docs as D

if TYPE_CHECKING:
    from eval.lake.naming import Naming

__all__ = ["build", "HISTORY", "tpcgen"]

HISTORY = "enriched"
AUTHOR = "etl:tpcds"
ANNOTATOR = "data-team"
UTC = dt.timezone.utc
EXCLUDED = ("customer_demographics", "time_dim", "catalog_page", "dbgen_version")  # large or unused


def tpcgen() -> str:
    """The tpcgen-cli executable (beside this interpreter, else on PATH)."""
    here = os.path.join(os.path.dirname(sys.executable), "tpcgen-cli")
    if os.path.exists(here):
        return here
    found = shutil.which("tpcgen-cli")
    if not found:
        raise SystemExit("tpcgen-cli is not installed: pip install tpcgen-cli (the project's `eval` extra)")
    return found


def _at(d: dt.date, hour: float) -> float:
    return dt.datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp() + hour * 3600.0


def _normalize(path: str, date_col: tuple[str, str] | None, out: str, nm: Naming | None = None) -> tuple[str, int]:
    """The generator's file with string views as strings and, for a fact, its date column (from the
    date surrogate key: d_date_sk 2415022 is 1900-01-02); under `nm`'s names (columns renamed, coded
    columns' values as codes); written to `out`."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    t = pq.read_table(path)
    fields = []
    for f in t.schema:
        typ = f.type
        if pa.types.is_string_view(typ) or pa.types.is_large_string(typ):
            typ = pa.string()
        fields.append(pa.field(f.name, typ))
    t = t.cast(pa.schema(fields))
    if date_col:
        name, sk = date_col
        epoch = (dt.date(1900, 1, 2) - dt.date(1970, 1, 1)).days
        days = pc.add(pc.subtract(t[sk].cast(pa.int64()), 2415022), epoch).cast(pa.int32())
        t = t.append_column(name, days.cast(pa.date32()))
    if nm is not None and not nm.identity:
        coded = nm.coded_columns()
        for i, c in enumerate(t.column_names):
            if c in coded:
                t = t.set_column(i, c, pa.array([nm.code(c, v) for v in t[c].to_pylist()], pa.string()))
        t = t.rename_columns([nm.column(c) for c in t.column_names])
    pq.write_table(t, out)
    return out, t.num_rows


def build(out: str, scale: float = 0.01, days: int = 7, log: Callable[[str], None] = print,
          naming: Naming | None = None) -> dict[str, Any]:
    """The lake under `naming`'s names (default plain; eval/tpcds/naming.py): the cryptic variant also
    gets its clutter tables (eval/tpcds/clutter.py) after the annotations."""
    from pyspark.sql import functions as F

    import catalog_core as cc
    import semantic as sm
    from eval.tpcds.naming import naming as tpcds_naming
    from semantic.annotations import new_annotation, write_annotations
    from spark_bridge import Bridge, local_session

    nm = naming or tpcds_naming("plain")
    t_start = time.time()

    def step(msg: str) -> None:
        log(f"[{time.time() - t_start:6.1f}s] {msg}")

    for sub in (HISTORY, "warehouse", "_input", "lake.json"):
        p = os.path.join(out, sub)
        if os.path.isdir(p):
            shutil.rmtree(p)
        elif os.path.exists(p):
            os.remove(p)
    os.makedirs(out, exist_ok=True)
    raw, norm = os.path.join(out, "_input", "raw"), os.path.join(out, "_input", "norm")
    os.makedirs(norm, exist_ok=True)
    step(f"tpcgen-cli tpcds parquet -s {scale}")
    subprocess.run([tpcgen(), "tpcds", "parquet", "-s", str(scale), "-o", raw, "--quiet", "--no-progress", "-n", "2"],
                   check=True)
    files: dict[str, str] = {}
    rows: dict[str, int] = {}
    for name, (src, dcol) in D.TABLES.items():
        files[name], rows[name] = _normalize(os.path.join(raw, f"{src}.parquet"), dcol, os.path.join(norm, f"{src}.parquet"),
                                             nm)
    step(f"generated {sum(rows.values())} rows in {len(files)} tables")

    spark = local_session(app_name="semcat-tpcds-build", cores=2)
    warehouse = os.path.abspath(os.path.join(out, "warehouse"))
    cc.mark_lake_root(out)  # the catalog stores paths inside DIR relative: a copy of DIR is an independent lake
    cat = cc.Catalog.open(os.path.join(out, HISTORY))
    summary: dict[str, Any] = {"scale": scale, "days": days, "variant": nm.variant, "loads": []}
    try:
        bridge = Bridge(spark, cat, warehouse=warehouse, footers_on="driver")
        frames = {n: spark.read.parquet(f) for n, f in files.items()}
        ss_date = nm.column(D.TABLES["sales.store_sales"][1][0])  # type: ignore[index]
        last = frames["sales.store_sales"].agg(F.max(ss_date).alias("m")).collect()[0]["m"]
        first_daily = last - dt.timedelta(days=days - 1)
        t_init = _at(first_daily, 5.0)
        with cat.transaction(author=AUTHOR, message="create catalog tpcds", time=t_init - 600) as txn:
            txn.add(f"/{D.CATALOG}", {"obj_type": "catalog", "properties": {"warehouse": warehouse}})

        def fact_rows(name: str, lo: dt.date | None, hi: dt.date) -> Any:
            dcol = D.TABLES[name][1]
            df = frames[name]
            if dcol is None:
                return df
            c = F.col(nm.column(dcol[0]))
            cond = c <= F.lit(hi)
            if lo is not None:
                cond = cond & (c >= F.lit(lo))
            else:
                cond = cond | c.isNull()
            return df.where(cond)

        with bridge.transaction(author=AUTHOR, message=f"initial load (sales up to {first_daily - dt.timedelta(days=1)})",
                                time=t_init) as tx:
            for name in D.TABLES:
                tx.write(fact_rows(name, None, first_daily - dt.timedelta(days=1)), nm.full_table(name), mode="overwrite")
        summary["loads"].append({"day": str(first_daily - dt.timedelta(days=1)), "vid": tx.result.vid if tx.result else None})
        step("initial load committed")

        t_ann = t_init + 3600.0
        _annotate(cat, spark, frames, t_ann, first_daily - dt.timedelta(days=1), sm, new_annotation, write_annotations,
                  nm)
        step("annotations written")
        if not nm.identity:
            from eval.tpcds.clutter import write_clutter

            summary["clutter"] = write_clutter(cat, bridge, frames, nm, t_ann + 1800.0, first_daily)
            step(f"{len(summary['clutter'])} clutter tables written")

        for i in range(days):
            d = first_daily + dt.timedelta(days=i)
            with bridge.transaction(author=AUTHOR, message=f"daily load {d}", time=_at(d + dt.timedelta(days=1), 5.0)) as tx:
                for name, (_, dcol) in D.TABLES.items():
                    if dcol is None:
                        continue
                    df = fact_rows(name, d, d)
                    if df.limit(1).count():
                        tx.write(df, nm.full_table(name), mode="append")
            summary["loads"].append({"day": str(d), "vid": tx.result.vid if tx.result else None})
            step(f"daily load {d} committed")
        now = _at(last + dt.timedelta(days=1), 9.0)
        summary["d0"] = dt.datetime.fromtimestamp(now, UTC).isoformat()
        summary["rows"] = rows
        summary["commits"] = cat.resolve(None)
    finally:
        cat.close()
        shutil.rmtree(os.path.join(out, "_input"), ignore_errors=True)
    summary["build_seconds"] = round(time.time() - t_start, 1)
    with open(os.path.join(out, "lake.json"), "w") as fh:
        json.dump(summary, fh, indent=1, default=str)
    step(f"done: lake now {summary['d0']}, {summary['commits']} commits")
    return summary


def _annotate(cat: Any, spark: Any, frames: dict[str, Any], t: float, last_loaded: dt.date, sm: Any,
              new_annotation: Any, write_annotations: Any, nm: Naming) -> None:
    """docs.py's annotations, under `nm`'s names (`frames` hold the written names and codes): prose, keys,
    columns and SQL translated, a coded column's enum as its codes with their labels."""
    from pyspark.sql import functions as F

    from eval.lake.translate import translate

    clock = [t]

    def tick() -> float:
        clock[0] += 1.0
        return clock[0]

    def full(n: str) -> str:
        return nm.full_table(f"{D.CATALOG}.{n}")

    ranges: dict[str, str] = {}
    for n, col in (("dim.date_dim", "d_date"), ("dim.item", "i_rec_start_date")):
        r = frames[n].agg(F.min(nm.column(col)).alias("lo"), F.max(nm.column(col)).alias("hi")).collect()[0]
        ranges[f"{col}_min"], ranges[f"{col}_max"] = str(r["lo"]), str(r["hi"])
    for name, fields in D.TABLE_DOCS.items():
        f = dict(fields)
        f["description"] = f["description"].format(**ranges)
        if name in D.SLA:
            f["freshness_sla"] = D.SLA[name]
        sm.annotate(cat, full(name), nm.fields(f, None), author=ANNOTATOR, time=tick())
    for (name, col), fields in D.COLUMN_DOCS.items():
        f = dict(fields)
        wcol = nm.column(col)
        if f.get("enum") == "{enum}":
            vals = sorted(str(nm.decode(r[0])) for r in frames[name].select(wcol).distinct().collect() if r[0] is not None)
            f["enum"] = vals
        sm.annotate(cat, full(name), nm.fields(f, col), column=wcol, author=ANNOTATOR, time=tick())
    for src, rname, to, on in D.RELATIONSHIPS:
        value = {"to": full(to), "on": [[nm.column(a), nm.column(b)] for a, b in on], "cardinality": "many_to_one",
                 "canonical": True, "condition": None}
        tt = tick()
        rn = nm.text(rname)
        ann = new_annotation(cat, full(src), "relationship", f"relationship.{rn}", value,
                             columns=[nm.column(a) for a, _ in on], author=ANNOTATOR, time=tt)
        write_annotations(cat, [ann], time=tt, message=nm.text(f"relate {src} -> {to}"))
    for table, mname, expr, filt, tcol, unit, desc in D.METRICS:
        value = {"expression": translate(expr, nm), "filter": translate(filt, nm) if filt else filt,
                 "time_column": nm.column(tcol) if tcol else tcol, "unit": unit, "description": nm.text(desc),
                 "synonyms": []}
        plain_cols = D.plain_columns(frames[table].columns, nm)
        cols = [nm.column(c) for c in plain_cols if c in f"{expr} {filt or ''} {tcol or ''}"]
        tt = tick()
        ann = new_annotation(cat, full(table), "metric", f"metric.{mname}", value, columns=cols or None,
                             author=ANNOTATOR, time=tt)
        write_annotations(cat, [ann], time=tt, message=nm.text(f"define metric {table}.{mname}"))
    for q, sql in D.VERIFIED:
        sm.verify_query(cat, q, translate(sql.format(c=D.CATALOG, last=last_loaded), nm, qualify=False),
                        author=ANNOTATOR, time=tick())
