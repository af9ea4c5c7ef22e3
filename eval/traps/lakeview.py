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

__all__ = ["TableInfo", "LakeView", "copy_lake", "is_copy", "lake_now", "words", "as_date"]

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

    def owns(self, a: Any, column: str) -> bool:
        """Whether `a` is one of `column`'s own annotations. They follow the column's field id (key
        `column.<id>.<field>`); the name they record (`a.column`) is the one it had when they were
        written, so a column renamed since is matched by its id, by name only when an id is unknown
        (and never an annotation whose id is another column's now)."""
        if a.kind != "column":
            return False
        c = self.col(column)
        aid = ann_column_id(a)
        if aid is not None and c is not None and c.id is not None:
            return aid == c.id
        if aid is not None and any(x.id == aid for x in self.columns if x is not c):
            return False
        return (a.column or "").lower() == column.lower()

    def column_of(self, a: Any) -> str | None:
        """The current name of the column a column annotation is on (None: no such column now)."""
        if a.kind != "column":
            return None
        return next((c.name for c in self.columns if self.owns(a, c.name)), None)

    def column_anns(self, column: str) -> list[Any]:
        return [a for a in self.anns if self.owns(a, column)]

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
                mx = as_date(s.max if s else None)
                if mx is not None and (now - mx).days <= within_days and mx <= now + dt.timedelta(days=3):
                    return n
        return None


def ann_column_id(a: Any) -> int | None:
    """The field id a column annotation is keyed by (`column.<id>.<field>`), None when unknown."""
    if a.column_id is not None:
        return int(a.column_id)
    m = re.fullmatch(r"column\.(\d+)\.[^.]+", a.key or "")
    return int(m.group(1)) if m else None


def as_date(v: object) -> dt.date | None:
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
        # the catalogs' and namespaces' instructions above the tables: {catalog or namespace: text}
        self.instructions: dict[str, str] = {}
        for holder in sorted({".".join(n.split(".")[:i]) for n in self.tables for i in (1, 2)}):
            for a in sm.read_annotations(cat, holder, vid):
                if a.kind == "instructions" and isinstance(a.value, str):
                    self.instructions[holder] = a.value

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
            if a.kind == "column" and a.field in ("null_when", "additivity") and not t.owns(a, column):
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


MARKER = ".traps-copy"


def copy_lake(src: str, dst: str) -> str:
    """Copy a built lake directory (every file: catalogs, warehouse, lake.json) to `dst` and mark it as
    a copy. The catalog names its files by absolute path under `src`, so the copy is only usable where
    `src` is seen to be the copy, or once re-pointed to `dst`: `eval.traps.run.run_seed` does one or the
    other (the lake at `src` is never opened or written)."""
    if os.path.exists(dst):
        shutil.rmtree(dst)
    shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns("semcat.lock", MARKER))
    with open(os.path.join(dst, MARKER), "w") as fh:
        fh.write(os.path.abspath(src) + "\n")
    return dst


def is_copy(path: str) -> bool:
    """Whether `path` shows a copy made by `copy_lake` (the mount took effect)."""
    return os.path.exists(os.path.join(path, MARKER))
