"""Profiling: annotations inferred from the rows of a table at a snapshot (DuckDB, each statement
run like `run_sql`: sandboxed, in a SQL worker, within its time and memory limits), written with
source `inferred` and a confidence.

- `column.<id>.role`: time (DATE / TIMESTAMP), id (id-like names, unique text), measure (numeric
  with a measure-like name, or many distinct values), dimension (text, boolean, small integers).
- `column.<id>.enum`: the distinct values of a low-cardinality text column whose values repeat;
  `column.<id>.sample_values`: the most frequent values of other text columns.
- `table.grain`: the best candidate key (a unique, null-free column, else the smallest unique
  combination of two or three key-like columns); every unique single column is also reported as a
  candidate key in the result's evidence.
- `relationship.<name>`: for columns no declared relationship of the table uses yet, inclusion dependencies, many_to_one (one_to_one when both ends are unique),
  from a column of this table to a unique column of the same type family in another table of the
  catalog, when the names are similar (rapidfuzz token-set ratio) and at least `min_overlap` of
  the distinct values are found there. Never canonical: a person decides that.

Existing annotations from any other source (human, agent, import) are never overwritten; the
result says which inferences were written (`written`) and which were kept back."""

from __future__ import annotations

import datetime as _dt
import decimal
import itertools
import math
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field
from sqlglot import exp

from catalog_core.errors import InvalidValueError
from semantic import _sql
from semantic._bounded import Connection
from semantic._model import model, table_info
from semantic._tables import Column, TableInfo
from semantic.annotations import new_annotation, write_annotations
from semantic.joins import default_name
from semantic.models import Annotation, RelationshipView

if TYPE_CHECKING:
    from catalog_core.api import CatalogAPI, SnapshotRef

__all__ = ["profile", "Inferred", "name_similarity"]

_PROFILED = ("number", "float", "text", "date", "timestamp", "time", "boolean")
_ID_SUFFIXES = ("_id", "_sk", "_key", "_uuid", "_code", "_no", "_number")
_MEASURE_TOKENS = {"cents", "usd", "amount", "qty", "quantity", "units", "count", "points", "price", "cost",
                   "revenue", "spend", "impressions", "clicks", "total", "sales", "discount", "tax", "shipping",
                   "balance", "value", "weight", "duration", "size", "bytes"}


class Inferred(BaseModel):
    """One inferred annotation (what profile writes, or would write)."""

    target: str
    key: str
    kind: str
    column: str | None = None
    value: Any
    confidence: float
    evidence: dict[str, Any] = Field(default_factory=dict)
    written: bool = False
    kept_back: str | None = Field(default=None, description="why it was not written")


def _json(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else str(v)
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, (_dt.date, _dt.datetime, _dt.time)):
        return v.isoformat()
    return str(v)


def _tokens(name: str) -> list[str]:
    return [t for t in name.lower().split("_") if t]


def _id_like(name: str) -> bool:
    low = name.lower()
    return low in ("id", "sku", "uuid", "key") or low.endswith(_ID_SUFFIXES)


def name_similarity(a: str, b: str) -> float:
    """0..100: 100 for equal names or when one name's words contain the other's
    (`order_date_local` / `date`, `converted_order_id` / `order_id`)."""
    if a.lower() == b.lower():
        return 100.0
    from rapidfuzz import fuzz  # here: importing semantic needs none (issue 47, cold start)

    return float(fuzz.token_set_ratio(" ".join(_tokens(a)), " ".join(_tokens(b))))


class _Prof:
    def __init__(self, con: Connection, t: TableInfo) -> None:
        self.con, self.t = con, t
        self.ref = _sql.table_expr(t.name, "t")

    def one(self, select: exp.Expression) -> tuple:
        row = self.con.execute(_sql.gen(select)).fetchone()
        return tuple(row) if row else ()

    def all(self, select: exp.Expression) -> list[tuple]:
        return [tuple(r) for r in self.con.execute(_sql.gen(select)).fetchall()]


def _column_stats(p: _Prof, cols: list[Column]) -> tuple[int, dict[str, tuple[int, int]]]:
    """Row count and, per column, (non-null values, distinct values)."""
    parts: list[exp.Expression] = [exp.Count(this=exp.Star())]
    for c in cols:
        ref = _sql.col(c.name, "t")
        parts += [exp.Count(this=ref), exp.Count(this=exp.Distinct(expressions=[ref.copy()]))]
    row = p.one(exp.select(*parts).from_(p.ref.copy()))
    rows = int(row[0] or 0)
    return rows, {c.name: (int(row[1 + 2 * i] or 0), int(row[2 + 2 * i] or 0)) for i, c in enumerate(cols)}


def _role(c: Column, rows: int, nonnull: int, distinct: int) -> tuple[str, float]:
    fam = c.family
    unique = rows >= 2 and nonnull == rows and distinct == rows
    if fam in ("date", "timestamp", "time"):
        return "time", 0.9
    if _id_like(c.name) and fam in ("number", "text"):
        return "id", 0.95 if unique else 0.85
    if fam == "boolean":
        return "dimension", 0.9
    if fam == "text":
        return ("id", 0.6) if unique and rows >= 10 else ("dimension", 0.8)
    if set(_tokens(c.name)) & _MEASURE_TOKENS:
        return "measure", 0.85
    if fam == "number" and distinct <= 60 and not (c.type or "").lower().startswith("decimal"):
        return "dimension", 0.55
    return "measure", 0.6


def _unique_sets(p: _Prof, candidates: list[Column], size: int) -> list[tuple[str, ...]]:
    combos = list(itertools.combinations(candidates, size))
    if not combos:
        return []
    parts: list[exp.Expression] = [exp.Count(this=exp.Star())]
    for combo in combos:
        row = exp.Anonymous(this="row", expressions=[_sql.col(c.name, "t") for c in combo])
        parts.append(exp.Count(this=exp.Distinct(expressions=[row])))
    got = p.one(exp.select(*parts).from_(p.ref.copy()))
    rows = int(got[0] or 0)
    return [tuple(c.name for c in combo) for combo, n in zip(combos, got[1:], strict=True) if rows >= 2 and int(n or 0) == rows]


class _Targets:
    """Uniqueness and distinct values of columns of other tables, computed once each."""

    def __init__(self, con: Connection) -> None:
        self.con = con
        self.unique: dict[tuple[str, str], bool] = {}

    def is_key(self, table: TableInfo, col: str) -> bool:
        """Is `col` the table's key: its declared single-column grain, else its first unique
        id-like (or date) column in schema order."""
        grain = table.annotation("table.grain")
        v = grain.value if grain is not None else None
        if isinstance(v, dict) and isinstance(v.get("keys"), list):
            return [str(k).lower() for k in v["keys"]] == [col.lower()]
        for c in table.columns:
            if (_id_like(c.name) or c.family == "date") and self.is_unique(table.name, c.name):
                return c.name == col
        return False

    def is_unique(self, table: str, col: str) -> bool:
        key = (table, col)
        if key not in self.unique:
            ref = _sql.col(col, "u")
            q = exp.select(exp.Count(this=exp.Star()), exp.Count(this=ref),
                           exp.Count(this=exp.Distinct(expressions=[ref.copy()]))).from_(_sql.table_expr(table, "u"))
            row = self.con.execute(_sql.gen(q)).fetchone() or (0, 0, 0)
            self.unique[key] = int(row[0] or 0) >= 1 and row[0] == row[1] == row[2]
        return self.unique[key]

    def overlap(self, src: str, scol: str, dst: str, dcol: str) -> tuple[int, int]:
        """(distinct non-null values of src.scol, how many of them occur in dst.dcol)."""
        a = (exp.select(_sql.col(scol, "s").as_("v", quoted=True)).distinct().from_(_sql.table_expr(src, "s"))
             .where(exp.Not(this=exp.Is(this=_sql.col(scol, "s"), expression=exp.Null()))))
        b = exp.select(_sql.col(dcol, "d").as_("k", quoted=True)).distinct().from_(_sql.table_expr(dst, "d"))
        q = (exp.select(exp.Count(this=exp.Star()), exp.Count(this=exp.column("k", "b", quoted=True)))
             .from_(a.subquery("a")).join(b.subquery("b"),
                                         on=exp.EQ(this=exp.column("v", "a", quoted=True),
                                                   expression=exp.column("k", "b", quoted=True)),
                                         join_type="left"))
        row = self.con.execute(_sql.gen(q)).fetchone() or (0, 0)
        return int(row[0] or 0), int(row[1] or 0)


def profile(cat: CatalogAPI, table: str, snapshot: SnapshotRef = None, write: bool = True, *,
            author: str = "semcat.profile", enum_max: int = 20, samples: int = 5, min_overlap: float = 0.95,
            min_name_similarity: float = 70.0) -> list[Inferred]:
    """Infer roles, enums / sample values, candidate keys and candidate relationships of `table`
    from its rows at `snapshot`, and (with `write=True`) store them in one commit as `inferred`
    annotations with their confidence. Returns every inference, written or not."""
    if not isinstance(enum_max, int) or enum_max < 1 or not isinstance(samples, int) or samples < 1:
        raise InvalidValueError("enum_max and samples must be positive integers")
    if not isinstance(min_overlap, (int, float)) or not 0 < min_overlap <= 1:
        raise InvalidValueError(f"min_overlap must be a fraction in (0, 1], got {min_overlap!r}")
    vid = cat.resolve(snapshot)
    t = table_info(cat, table, vid)
    cols = [c for c in t.columns if c.family in _PROFILED]
    con = Connection(cat, vid)  # every statement sandboxed and bounded like run_sql (semantic._bounded)
    try:
        out = _infer(cat, con, t, cols, vid, enum_max, samples, float(min_overlap), min_name_similarity)
    finally:
        con.close()
    if write:
        _write(cat, t, out, vid, author)
    return out


def _infer(cat: CatalogAPI, con: Connection, t: TableInfo, cols: list[Column], vid: int,
           enum_max: int, samples: int, min_overlap: float, min_sim: float) -> list[Inferred]:
    p = _Prof(con, t)
    out: list[Inferred] = []
    rows, stats = _column_stats(p, cols)
    roles: dict[str, str] = {}
    for c in cols:
        nonnull, distinct = stats[c.name]
        role, conf = _role(c, rows, nonnull, distinct)
        roles[c.name] = role
        out.append(Inferred(target=t.name, key=f"column.{c.id}.role", kind="column", column=c.name, value=role,
                            confidence=conf, evidence={"rows": rows, "non_null": nonnull, "distinct": distinct}))
        if c.family != "text" or nonnull == 0:
            continue
        ref = _sql.col(c.name, "t")
        notnull = exp.Not(this=exp.Is(this=ref.copy(), expression=exp.Null()))
        if distinct <= enum_max and nonnull >= 2 * distinct and role != "id":
            values = [_json(r[0]) for r in p.all(exp.select(ref.copy()).distinct().from_(p.ref.copy())
                                                 .where(notnull).order_by(exp.Literal.number(1)))]
            out.append(Inferred(target=t.name, key=f"column.{c.id}.enum", kind="column", column=c.name,
                                value=values, confidence=0.7 if nonnull >= 10 * distinct else 0.5,
                                evidence={"distinct": distinct, "non_null": nonnull}))
        else:
            q = (exp.select(ref.copy(), exp.Count(this=exp.Star())).from_(p.ref.copy()).where(notnull)
                 .group_by(exp.Literal.number(1))
                 .order_by(exp.Ordered(this=exp.Literal.number(2), desc=True), exp.Literal.number(1)).limit(samples))
            values = [_json(r[0]) for r in p.all(q)]
            out.append(Inferred(target=t.name, key=f"column.{c.id}.sample_values", kind="column", column=c.name,
                                value=values, confidence=0.9, evidence={"distinct": distinct}))
    out += _keys(p, t, cols, rows, stats, roles, vid)
    out += _relationships(cat, con, t, cols, stats, rows, roles, vid, min_overlap, min_sim)
    return out


def _keys(p: _Prof, t: TableInfo, cols: list[Column], rows: int, stats: dict[str, tuple[int, int]],
          roles: dict[str, str], vid: int) -> list[Inferred]:
    keyable = [c for c in cols if c.family in ("number", "text", "date") and stats[c.name][0] == rows]
    singles: list[tuple[str, ...]] = [(c.name,) for c in keyable if rows >= 2 and stats[c.name][1] == rows
                                      and roles[c.name] != "measure"]
    keys: list[tuple[str, ...]] = singles
    if not singles:
        cand = sorted((c for c in keyable if roles[c.name] in ("id", "time", "dimension")),
                      key=lambda c: (not _id_like(c.name), roles[c.name] != "time", cols.index(c)))[:8]
        keys = _unique_sets(p, cand, 2) or _unique_sets(p, cand[:6], 3)
    if not keys:
        return []

    def score(k: tuple[str, ...]) -> tuple:
        return (len(k), -sum(roles[n] == "id" for n in k), -sum(_id_like(n) for n in k), [t.find(n).id or 0 for n in k])  # type: ignore[union-attr]
    best = min(keys, key=score)
    if len(best) == 1:
        conf = 0.9 if roles[best[0]] == "id" else 0.8 if roles[best[0]] == "time" else 0.5
    else:
        conf = 0.75 if any(_id_like(n) for n in best) else 0.5
    text = f"one row per {', '.join(best)} (inferred: unique over {rows} rows at vid {vid})"
    return [Inferred(target=t.name, key="table.grain", kind="table", value={"text": text, "keys": list(best)},
                     confidence=conf, evidence={"candidate_keys": [list(k) for k in sorted(keys, key=score)],
                                                "rows": rows})]


def _relationships(cat: CatalogAPI, con: Connection, t: TableInfo, cols: list[Column],
                   stats: dict[str, tuple[int, int]], rows: int, roles: dict[str, str], vid: int,
                   min_overlap: float, min_sim: float) -> list[Inferred]:
    m = model(cat, t.name.split(".")[0], vid)
    targets = _Targets(con)
    existing = [r for r in map(RelationshipView.of, t.annotations) if r is not None]
    covered = {a.lower() for r in existing for a, _ in r.on}  # a declared join already says how
    out: list[Inferred] = []
    for c in cols:
        nonnull, distinct = stats[c.name]
        if (roles[c.name] == "measure" or c.family in ("boolean", "float") or distinct < 2
                or c.name.lower() in covered):
            continue
        found: list[tuple[float, Inferred]] = []
        for u in sorted(m.tables.values(), key=lambda x: x.name):
            if u.name == t.name:
                continue
            for uc in u.columns:
                if uc.family != c.family:
                    continue
                sim = name_similarity(c.name, uc.name)
                if sim < min_sim or not targets.is_unique(u.name, uc.name):
                    continue
                n, hit = targets.overlap(t.name, c.name, u.name, uc.name)
                if not n or hit / n < min_overlap:
                    continue
                overlap = hit / n
                target_key = targets.is_key(u, uc.name)
                conf = round(min(0.95, 0.5 * overlap + 0.45 * sim / 100) * (1 if target_key else 0.85), 3)
                card = "one_to_one" if distinct == rows == nonnull else "many_to_one"
                value = {"to": u.name, "on": [[c.name, uc.name]], "cardinality": card, "canonical": False,
                         "condition": None}
                name = default_name(t, u.name, [(c.name, uc.name)])
                found.append((conf, Inferred(target=t.name, key=f"relationship.{name}", kind="relationship",
                                             value=value, confidence=conf,
                                             evidence={"name_similarity": sim, "distinct_values": n,
                                                       "target_is_key": target_key,
                                                       "found_in_target": hit, "overlap": round(overlap, 4)})))
        if found:
            top = max(f[0] for f in found)
            out += [inf for conf, inf in found if conf >= top - 0.05]
    # two inferences may want the same default name: make later ones unique
    names: set[str] = set()
    for inf in out:
        key = inf.key
        while key in names:
            key = f"{inf.key}__{inf.value['on'][0][0]}" if key == inf.key else key + "_2"
        names.add(key)
        inf.key = key
    return out


def _write(cat: CatalogAPI, t: TableInfo, out: list[Inferred], vid: int, author: str) -> None:
    owned = {a.key: a.provenance.source for a in t.annotations}
    pending: list[Annotation] = []
    for inf in out:
        source = owned.get(inf.key)
        if source is not None and source != "inferred":
            inf.kept_back = f"{inf.key} already has a {source} annotation"
            continue
        if inf.kind == "column" and (t.find(inf.column or "") is None or t.find(inf.column or "").id is None):  # type: ignore[union-attr]
            inf.kept_back = "the column has no id in the schema"
            continue
        cols = [inf.column] if inf.column else (list(inf.value["keys"]) if inf.key == "table.grain" else
                                                [p[0] for p in inf.value["on"]] if inf.kind == "relationship" else None)
        note = ", ".join(f"{k}={v}" for k, v in inf.evidence.items() if not isinstance(v, (list, dict)))
        pending.append(new_annotation(cat, t.name, inf.kind, inf.key, inf.value, columns=None if inf.column else cols,
                                      column=inf.column, author=author, source="inferred", confidence=inf.confidence,
                                      note=f"profiled: {note}" if note else "profiled", vid=vid, table=t.obj))
        inf.written = True
    if pending:
        write_annotations(cat, pending, message=f"profile {t.name}")

