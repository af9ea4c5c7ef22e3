"""What the generator knows of a lake: its tables (columns, types, statistics, last load) and the
annotations on them, read through the public APIs (`catalog_core.lake`, `semantic.read_annotations`).
Also: copying a built lake to a scratch directory (the copy's tables relocated to its own warehouse)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import re
import shutil
from typing import Any

from catalog_core import lake
from catalog_core.api import CatalogAPI

__all__ = ["TableInfo", "LakeView", "copy_lake", "lake_now", "words"]

NUMERIC = ("tinyint", "smallint", "int", "integer", "bigint", "long", "short", "byte")


def is_int(t: str | None) -> bool:
    return (t or "").lower() in NUMERIC


def is_num(t: str | None) -> bool:
    t = (t or "").lower()
    return is_int(t) or t.startswith(("decimal", "double", "float"))


def is_date(t: str | None) -> bool:
    return (t or "").lower() == "date"


def is_ts(t: str | None) -> bool:
    return (t or "").lower().startswith("timestamp")


def words(text: str, name: str) -> bool:
    """Whether `name` occurs in `text` as an identifier (not inside a longer one)."""
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", text, re.IGNORECASE) is not None


@dataclasses.dataclass
class TableInfo:
    name: str
    columns: list[lake.Column]
    partition: list[str]
    stats: lake.Stats | None
    anns: list[Any]                     # semantic.models.Annotation
    last_load: float | None

    def col(self, name: str) -> lake.Column | None:
        return next((c for c in self.columns if c.name.lower() == name.lower()), None)

    def type_of(self, name: str) -> str:
        c = self.col(name)
        return (c.type or "") if c else ""

    def ann(self, key: str) -> Any | None:
        return next((a for a in self.anns if a.key == key), None)

    def column_anns(self, column: str) -> list[Any]:
        return [a for a in self.anns if a.kind == "column" and (a.column or "").lower() == column.lower()]

    def column_field(self, column: str, field: str) -> Any | None:
        return next((a for a in self.column_anns(column) if a.field == field), None)

    def cstat(self, column: str) -> lake.ColumnStats | None:
        return (self.stats.columns.get(column) if self.stats else None) or None

    @property
    def rows(self) -> int:
        return int(self.stats.row_count or 0) if self.stats else 0

    def grain_keys(self) -> list[str]:
        g = self.ann("table.grain")
        keys = (g.value or {}).get("keys") if g and isinstance(g.value, dict) else None
        return [str(k) for k in keys or [] if self.col(str(k))]

    def sla(self) -> Any | None:
        return self.ann("table.freshness_sla")

    def deprecated(self) -> Any | None:
        return self.ann("table.deprecated")

    def date_column(self, now: dt.date, within_days: int = 10) -> str | None:
        """The column a routine load advances: a DATE (or else TIMESTAMP) column whose max is recent."""
        for pick in (is_date, is_ts):
            cands = [c.name for c in self.columns if pick(c.type)]
            cands.sort(key=lambda n: n not in self.partition)
            for n in cands:
                s = self.cstat(n)
                mx = _as_date(s.max if s else None)
                if mx is not None and (now - mx).days <= within_days and mx <= now + dt.timedelta(days=1):
                    return n
        return None


def _as_date(v: object) -> dt.date | None:
    if v is None:
        return None
    if isinstance(v, dt.datetime):
        return v.date()
    if isinstance(v, dt.date):
        return v
    if isinstance(v, (int, float)):  # epoch seconds / micros
        x = float(v)
        while x > 1e11:
            x /= 1000.0
        return dt.datetime.fromtimestamp(x, dt.timezone.utc).date()
    try:
        return dt.date.fromisoformat(str(v)[:10])
    except ValueError:
        return None


class LakeView:
    """The tables of `catalog` at the latest vid, with their annotations."""

    def __init__(self, cat: CatalogAPI, catalog: str | None = None):
        import semantic as sm

        self.cat = cat
        vid = cat.resolve(None)
        self.vid = vid
        self.tables: dict[str, TableInfo] = {}
        for obj in cat.query(lake.tables_query(catalog), vid=vid):
            name = lake.name_of(obj.path)
            tv = lake.TableValue.from_raw(obj.value)
            ldc = tv.stats.last_data_commit if tv.stats else None
            last = float(ldc["time"]) if isinstance(ldc, dict) and isinstance(ldc.get("time"), (int, float)) else None
            anns = [a for a in sm.read_annotations(cat, name, vid) if not a.key.startswith("proposal.")]
            self.tables[name] = TableInfo(name, list(tv.schema.columns), list(tv.partition_columns), tv.stats,
                                          anns, last)

    def relationships(self) -> list[tuple[str, Any]]:
        """(the annotated table, annotation) of every relationship."""
        return [(t.name, a) for t in self.tables.values() for a in t.anns if a.kind == "relationship"]

    def refs(self, table: str, column: str, own: bool = False) -> list[tuple[str, str]]:
        """Annotation keys that refer to `table`.`column` by name (`own`: also the column's own
        annotations): grain keys, relationships (either side), metrics, verified queries, other
        columns' null_when / additivity."""
        t = self.tables[table]
        out: list[tuple[str, str]] = []
        if own:
            out += [(table, a.key) for a in t.column_anns(column)]
        if column.lower() in (k.lower() for k in t.grain_keys()):
            out.append((table, "table.grain"))
        for src, a in self.relationships():
            v = a.value or {}
            on = v.get("on") or []
            if src == table and any(str(p[0]).lower() == column.lower() for p in on):
                out.append((src, a.key))
            elif v.get("to") == table and any(str(p[1]).lower() == column.lower() for p in on):
                out.append((src, a.key))
            elif src == table and v.get("condition") and words(str(v.get("condition")), column):
                out.append((src, a.key))
        for a in t.anns:
            if a.kind == "metric" and words(json.dumps(a.value), column):
                out.append((table, a.key))
            if a.kind == "column" and a.field in ("null_when", "additivity") and (a.column or "").lower() != column.lower():
                if words(json.dumps(a.value), column):
                    out.append((table, a.key))
        for u in self.tables.values():
            for a in u.anns:
                if a.kind == "verified_query" and table in (a.value or {}).get("tables", []) \
                        and words(str((a.value or {}).get("sql", "")), column):
                    out.append((u.name, a.key))
        return sorted(set(out))

    def verified_on(self, table: str) -> list[tuple[str, Any]]:
        """Every copy (table, annotation) of the verified queries that read `table`."""
        ids = {a.key for a in self.tables[table].anns if a.kind == "verified_query"}
        return [(u.name, a) for u in self.tables.values() for a in u.anns if a.key in ids]


def lake_now(root: str, cat: CatalogAPI) -> float:
    """The lake's "now": lake.json's d0 when the build recorded one, else its latest commit's time."""
    p = os.path.join(root, "lake.json")
    if os.path.exists(p):
        with open(p) as fh:
            info = json.load(fh)
        d0 = info.get("d0") or info.get("now")
        if isinstance(d0, (int, float)):
            return float(d0)
        if isinstance(d0, str):
            t = dt.datetime.fromisoformat(d0.replace("Z", "+00:00"))
            if t.tzinfo is None:
                t = t.replace(tzinfo=dt.timezone.utc)
            return t.timestamp()
    return latest_time(cat)


def latest_time(cat: CatalogAPI) -> float:
    vid = cat.resolve(None)
    cs = list(cat.commits(since=max(0, vid - 1)))
    return max(float(c.time) for c in cs) if cs else 0.0


def copy_lake(src: str, dst: str, history: str) -> str:
    """Copy a built lake (`src`/`history`, `src`/warehouse, lake.json) to `dst` and point every
    table's location at the copy's warehouse, so writes land in the copy (files the copy inherited
    keep their paths: they are read, never written). Returns the copy's catalog directory."""

    if os.path.exists(dst):
        shutil.rmtree(dst)
    os.makedirs(dst)
    for sub in (history, "warehouse"):
        if os.path.isdir(os.path.join(src, sub)):
            shutil.copytree(os.path.join(src, sub), os.path.join(dst, sub), symlinks=True)
    for f in ("lake.json", "names.json"):
        if os.path.exists(os.path.join(src, f)):
            shutil.copy2(os.path.join(src, f), os.path.join(dst, f))
    cdir = os.path.join(dst, history)
    _relocate(cdir, src, os.path.abspath(os.path.join(dst, "warehouse")))
    return cdir


def _relocate(cdir: str, src: str, new_wh: str) -> None:
    """Point the tables and catalogs of the catalog at `cdir` from the source's warehouse to `new_wh`
    (one commit, a second after the latest); refuse a table that lives anywhere else."""
    import catalog_core as cc

    cat = cc.Catalog.open(cdir)
    try:
        # the warehouse the catalog names (the lake may itself be a copy of one built elsewhere)
        olds = {os.path.abspath(os.path.join(src, "warehouse"))}
        for obj in cat.children("/"):
            props = obj.value.get("properties") or {}
            if isinstance(props, dict) and isinstance(props.get("warehouse"), str):
                olds.add(props["warehouse"].rstrip("/"))

        def moved(p: str) -> str | None:
            for o in olds:
                if p == o or p.startswith(o + "/"):
                    return new_wh + p[len(o):]
            return None

        moves: list[tuple[str, str, str]] = []
        for obj in cat.query(lake.tables_query(None)):
            loc = obj.value.get("location")
            if isinstance(loc, str) and moved(loc):
                moves.append((obj.path, moved(loc) or loc, "location"))
            elif isinstance(loc, str) and not loc.startswith(new_wh):
                raise RuntimeError(f"table {lake.name_of(obj.path)} lives at {loc}, outside the lake's warehouse; "
                                   "refusing to write to it from a copy")
        for obj in cat.children("/"):
            props = obj.value.get("properties") or {}
            wh = props.get("warehouse") if isinstance(props, dict) else None
            if isinstance(wh, str) and moved(wh):
                moves.append((obj.path, moved(wh) or wh, "warehouse"))
        if moves:
            with cat.transaction(author="traps", message="relocate the copy's tables to its own warehouse",
                                 time=latest_time(cat) + 1.0) as txn:
                for path, loc, what in moves:
                    if what == "location":
                        txn.merge(path, {"location": {"op": "set", "val": loc}})
                    else:
                        props = dict((txn.get(path).value.get("properties") or {}), warehouse=loc)  # type: ignore[union-attr]
                        txn.merge(path, {"properties": {"op": "set", "val": props}})
    finally:
        cat.close()
