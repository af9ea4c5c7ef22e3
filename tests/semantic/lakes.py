"""A small-lake builder for semantic tests: tables of pyarrow-written Parquet files committed
through any catalog (embedded or `cc.connect`), with backdated commit times, schema changes
(add / drop / retype columns, each a new schema_id) and stats kept the way the Spark bridge keeps
them (merges with `+`/`min`/`max`, `set` on overwrite, `last_data_commit` stamped by the engine).

    lk = LakeBuilder(cat, tmp_path / "files", catalog="acme")
    lk.table("acme.core.orders", [("order_id", "bigint"), ("status", "string")], at=0)
    lk.append("acme.core.orders", {"order_id": [1, 2], "status": ["placed", "shipped"]}, at=1)
    lk.evolve("acme.core.orders", add=[("region", "string")], drop=["status"], at=2,
              rows={"order_id": [1, 2], "region": ["w", "e"]})       # a rebuild in the same commit
    lk.day(3)   # epoch seconds of day 3 after `start`

Days are offsets from `start` (default 2024-11-11T00:00Z, LAKE.md's d-119); every commit's time
must not go backwards, as the catalog requires.
"""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import math
import os
import re
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

START = dt.datetime(2024, 11, 11, tzinfo=dt.timezone.utc).timestamp()
DAY = 86400.0

_DEC = re.compile(r"decimal\((\d+),\s*(\d+)\)")


def arrow_type(t: str) -> pa.DataType:
    t = t.lower()
    m = _DEC.match(t)
    if m:
        return pa.decimal128(int(m.group(1)), int(m.group(2)))
    return {"bigint": pa.int64(), "int": pa.int32(), "string": pa.string(), "date": pa.date32(),
            "double": pa.float64(), "boolean": pa.bool_(), "timestamp": pa.timestamp("us", tz="UTC")}[t]


def _json(v: Any) -> Any:
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, dt.datetime):
        return v.isoformat()
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _op(op: str, val: Any) -> dict[str, Any]:
    return {"op": op, "val": val}


class LakeBuilder:
    def __init__(self, cat: Any, root: Any, catalog: str = "acme", start: float = START) -> None:
        self.cat, self.root, self.start = cat, str(root), start
        self.catalog = catalog
        self._ids = itertools.count()
        self._last = 0.0
        self.schemas: dict[str, dict[str, Any]] = {}
        self.partition_by: dict[str, list[str]] = {}

    def day(self, n: float) -> float:
        return self.start + n * DAY

    def at(self, at: float | None) -> float | None:
        """The commit time of day `at`; commit times strictly increase, so a second commit on the
        same instant moves a millisecond later."""
        if at is None:
            return None
        t = max(self.day(at), self._last + 0.001)
        self._last = t
        return t

    def path(self, name: str) -> str:
        return "/" + name.replace(".", "/")

    # ------------------------------------------------------------ tables
    def table(self, name: str, columns: list[tuple[str, str]], partition_by: list[str] | None = None,
              at: float | None = None, rows: dict[str, list] | None = None, author: str = "etl") -> int:
        """Create the table (and its catalog / namespace), optionally with a first load."""
        cat_, ns, _t = name.split(".")
        schema = {"schema_id": 0, "columns": [{"id": i + 1, "name": n, "type": t, "nullable": True}
                                              for i, (n, t) in enumerate(columns)]}
        self.schemas[name] = schema
        self.partition_by[name] = list(partition_by or [])
        loc = os.path.join(self.root, *name.split("."))
        with self.cat.transaction(author=author, message=f"create {name}", time=self.at(at)) as txn:
            if self.cat.get("/" + cat_) is None:
                txn.update("/" + cat_, {"obj_type": "catalog", "properties": {}})
            if self.cat.get(f"/{cat_}/{ns}") is None:
                txn.update(f"/{cat_}/{ns}", {"obj_type": "namespace", "properties": {}})
            txn.add(self.path(name), {"obj_type": "table", "location": loc, "format": "parquet", "schema": schema,
                                      "partition_by": list(partition_by or []),
                                      "stats": {"row_count": 0, "file_count": 0, "size_bytes": 0, "columns": {}},
                                      "properties": {}})
            if rows:
                self._add_rows(txn, name, rows)
        return txn.vid

    def _write(self, name: str, rows: dict[str, list], part: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        schema = self.schemas[name]
        cols = [c for c in schema["columns"] if c["name"] not in part]
        arrays, fields = [], []
        n = len(next(iter(rows.values()))) if rows else 0
        for c in cols:
            vals = rows.get(c["name"], [None] * n)
            if c["type"].startswith("decimal"):
                vals = [None if v is None else decimal.Decimal(str(v)) for v in vals]
            if c["type"] == "date":
                vals = [dt.date.fromisoformat(v) if isinstance(v, str) else v for v in vals]
            arrays.append(pa.array(vals, type=arrow_type(c["type"])))
            fields.append(c["name"])
        tbl = pa.table(arrays, names=fields)
        sub = "/".join(f"{k}={v}" for k, v in part.items())
        d = os.path.join(self.root, *name.split("."), sub) if sub else os.path.join(self.root, *name.split("."))
        os.makedirs(d, exist_ok=True)
        fid = f"f{next(self._ids):06d}"
        fpath = os.path.join(d, fid + ".parquet")
        pq.write_table(tbl, fpath)
        colstats = {}
        for fname in fields:
            col = tbl.column(fname)
            mm = pc.min_max(col) if len(col) else None
            colstats[fname] = {"min": _json(mm["min"].as_py()) if mm else None,
                               "max": _json(mm["max"].as_py()) if mm else None, "null_count": col.null_count}
        for k, v in part.items():
            colstats[k] = {"min": v, "max": v, "null_count": 0}
        return fid, {"obj_type": "file", "path": fpath, "format": "parquet", "row_count": tbl.num_rows,
                     "size_bytes": os.path.getsize(fpath), "columns": colstats}

    def _delta(self, f: dict[str, Any], set_: bool = False) -> dict[str, Any]:
        op = "set" if set_ else "+"
        cols = {}
        for c, s in f["columns"].items():
            d: dict[str, Any] = {"null_count": _op(op, s["null_count"])}
            if s["min"] is not None:
                d["min"] = _op("set" if set_ else "min", s["min"])
            if s["max"] is not None:
                d["max"] = _op("set" if set_ else "max", s["max"])
            cols[c] = d
        return {"stats": {"row_count": _op(op, f["row_count"]), "file_count": _op(op, 1),
                          "size_bytes": _op(op, f["size_bytes"]), "columns": cols,
                          "last_data_commit": {"vid": _op("commit_vid", 0), "time": _op("commit_time", 0.0)}}}

    def _add_rows(self, txn: Any, name: str, rows: dict[str, list], set_: bool = False) -> None:
        pcols = self.partition_by[name]
        groups: dict[tuple, dict[str, list]] = {}
        n = len(next(iter(rows.values())))
        for i in range(n):
            key = tuple(rows[c][i] for c in pcols)
            g = groups.setdefault(key, {k: [] for k in rows})
            for k in rows:
                g[k].append(rows[k][i])
        first = True
        made: set[str] = set()
        for key, g in groups.items():
            part = dict(zip(pcols, key, strict=True))
            fid, leaf = self._write(name, {k: v for k, v in g.items() if k not in part}, part)
            base = self.path(name)
            if part:
                ppath = base + "/" + "/".join(f"{k}={v}" for k, v in part.items())
                if ppath not in made and (set_ or self.cat.get(ppath) is None):
                    made.add(ppath)
                    txn.update(ppath, {"obj_type": "partition", **part,
                                       "stats": {"row_count": 0, "file_count": 0, "size_bytes": 0, "columns": {}}})
                txn.add(ppath + "/" + fid, leaf, leaf=True)
                txn.merge(ppath, self._delta(leaf))
            else:
                txn.add(base + "/" + fid, leaf, leaf=True)
            txn.merge(base, self._delta(leaf, set_=set_ and first))
            first = False

    def _meta(self, name: str, mode: str, rows: dict[str, list] | None) -> dict[str, Any]:
        """The write log the Spark bridge records with a commit: table, mode, files and rows written."""
        n = len(next(iter(rows.values()))) if rows else 0
        pcols = self.partition_by.get(name) or []
        files = len({tuple(rows[c][i] for c in pcols) for i in range(n)}) if rows else 0
        return {"writes": [{"table": name, "mode": mode, "files": files, "rows": n}]}

    def append(self, name: str, rows: dict[str, list], at: float | None = None, author: str = "etl",
               message: str = "") -> int:
        with self.cat.transaction(author=author, message=message or f"load {name}", time=self.at(at),
                                  meta=self._meta(name, "append", rows)) as txn:
            self._add_rows(txn, name, rows)
        return txn.vid

    def _clear(self, txn: Any, name: str) -> None:
        for child in self.cat.children(self.path(name)):
            if child.obj_id.startswith("_"):
                continue
            txn.remove(child.path)

    def overwrite(self, name: str, rows: dict[str, list], at: float | None = None, author: str = "etl") -> int:
        """Replace every file (a restatement); table stats are `set` from the new rows."""
        with self.cat.transaction(author=author, message=f"restate {name}", time=self.at(at),
                                  meta=self._meta(name, "overwrite", rows)) as txn:
            self._clear(txn, name)
            txn.merge(self.path(name), {"stats": {"columns": _op("set", {})}})
            self._add_rows(txn, name, rows, set_=True)
        return txn.vid

    def evolve(self, name: str, add: list[tuple[str, str]] = (), drop: list[str] = (),  # type: ignore[assignment]
               retype: dict[str, str] | None = None, rename: dict[str, str] | None = None, at: float | None = None,
               rows: dict[str, list] | None = None, author: str = "etl") -> int:
        """A schema change (new schema_id); with `rows`, the table is rebuilt from them in the
        same commit (files replaced, stats set)."""
        old = self.schemas[name]
        cols = [dict(c) for c in old["columns"] if c["name"] not in set(drop)]
        for c in cols:
            if retype and c["name"] in retype:
                c["type"] = retype[c["name"]]
            if rename and c["name"] in rename:
                c["name"] = rename[c["name"]]
        nxt = max([c["id"] for c in old["columns"]] + [0]) + 1
        for i, (n, t) in enumerate(add):
            cols.append({"id": nxt + i, "name": n, "type": t, "nullable": True})
        schema = {"schema_id": old["schema_id"] + 1, "columns": cols}
        self.schemas[name] = schema
        with self.cat.transaction(author=author, message=f"evolve {name}", time=self.at(at),
                                  meta=self._meta(name, "overwrite", rows) if rows is not None else None) as txn:
            txn.merge(self.path(name), {"schema": _op("set", schema)})
            if rows is not None:
                self._clear(txn, name)
                txn.merge(self.path(name), {"stats": {"columns": _op("set", {})}})
                self._add_rows(txn, name, rows, set_=True)
        return txn.vid
