"""What every importer shares: a plan of annotations checked before anything is written, written
idempotently (an annotation whose value is already stored is skipped; an unchanged input writes
nothing), in one commit, with provenance source `import` and the source file and its sha256 in the
provenance note; `Unmapped` entries for what the input holds but the catalog cannot take; and
`InterchangeError` for input that is wrong (malformed, or naming things it does not define),
raised before anything is written, naming the file and the place in it."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from catalog_core import lake
from catalog_core.api import CatalogAPI
from catalog_core.errors import InvalidValueError, NoSuchTableError
from catalog_core.model import Obj
from semantic._tables import columns_of, find, unknown_column
from semantic.annotations import new_annotation, read_annotations, write_annotations
from semantic.errors import did_you_mean, suggest

__all__ = ["InterchangeError", "Unmapped", "ImportResult", "Planned", "Plan", "Progress", "file_digest",
           "load_yaml", "load_json"]

Progress = Callable[[str, int, int], None]   # (what, done, total)


class InterchangeError(InvalidValueError):
    """An import input is malformed or refers to something it does not define. `details["file"]`
    and `details["place"]` say where; nothing was written."""

    def __init__(self, file: str, place: str, message: str, **details: object) -> None:
        where = f"{file}" + (f", {place}" if place else "")
        super().__init__(f"{where}: {message}", file=file, place=place, **details)


class Unmapped(BaseModel):
    """Something the input holds that the import could not put into the catalog, and why."""

    item: str                  # e.g. "model model.shop.stg_events", "dimension orders.full_name"
    place: str                 # where in the input
    reason: str


class ImportResult(BaseModel):
    source: str                # dbt | osi | cortex
    file: str
    sha256: str
    vid: int | None = None     # the commit that wrote, None when nothing changed
    written: list[str] = Field(default_factory=list)     # "<table>:<key>" written by this import
    unchanged: int = 0                                   # annotations already stored with the same value
    tables: dict[str, str] = Field(default_factory=dict)  # input name -> catalog table
    unmapped: list[Unmapped] = Field(default_factory=list)
    replaced: list[str] = Field(default_factory=list)    # "<table>:<key> (<source> by <author>)" overwritten
    kept: list[str] = Field(default_factory=list)        # certified human annotations left alone (no overwrite)
    lineage: dict[str, list[str]] = Field(default_factory=dict)  # table -> its inputs, recorded by this import (dbt)


def file_digest(paths: list[str]) -> str:
    """sha256 of the files' contents (in the order given, each with its relative name)."""
    h = hashlib.sha256()
    for p in paths:
        h.update(os.path.basename(p).encode() + b"\0")
        with open(p, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def _line_of(err: object) -> str:
    mark = getattr(err, "problem_mark", None)
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""


def load_yaml(path: str) -> Any:
    import yaml

    try:
        with open(path, encoding="utf-8") as f:
            return yaml.safe_load(f)
    except FileNotFoundError:
        raise InterchangeError(path, "", "no such file") from None
    except yaml.YAMLError as e:
        raise InterchangeError(path, _line_of(e), f"malformed YAML: {getattr(e, 'problem', None) or e}") from None
    except UnicodeDecodeError as e:
        raise InterchangeError(path, f"byte {e.start}", "not UTF-8 text") from None


def load_json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise InterchangeError(path, "", "no such file") from None
    except json.JSONDecodeError as e:
        raise InterchangeError(path, f"line {e.lineno}, column {e.colno}", f"malformed JSON: {e.msg}") from None
    except UnicodeDecodeError as e:
        raise InterchangeError(path, f"byte {e.start}", "not UTF-8 text") from None


@dataclass
class Planned:
    target: str                       # dotted table (or catalog / namespace for instructions)
    kind: str
    key: str                          # for column annotations: "column.<name>.<field>" until resolved
    value: object
    column: str | None = None
    columns: list[str] | None = None
    place: str = ""


@dataclass
class Plan:
    """Annotations to write, gathered per input item, then checked and written by `apply`."""

    source: str
    file: str
    sha256: str
    author: str
    items: list[Planned] = field(default_factory=list)
    unmapped: list[Unmapped] = field(default_factory=list)
    tables: dict[str, str] = field(default_factory=dict)
    _objs: dict[str, Obj | None] = field(default_factory=dict)

    def skip(self, item: str, place: str, reason: str) -> None:
        self.unmapped.append(Unmapped(item=item, place=place, reason=reason))

    def table(self, cat: CatalogAPI, name: str, vid: int) -> Obj | None:
        if name not in self._objs:
            obj = cat.get(lake.table_path(name), vid=vid) if _valid(name) else None
            self._objs[name] = obj if obj is not None and isinstance(obj.value, dict) and \
                obj.value.get("obj_type") == "table" else None
        return self._objs[name]

    def column(self, cat: CatalogAPI, table: str, column: str, vid: int) -> str | None:
        """The schema name of `column` in `table` (exact or case-insensitive), else None."""
        obj = self.table(cat, table, vid)
        if obj is None:
            return None
        col = find(columns_of(obj.value), column)
        return col.name if col is not None else None

    def add(self, target: str, kind: str, key: str, value: object, *, column: str | None = None,
            columns: list[str] | None = None, place: str = "") -> None:
        self.items.append(Planned(target, kind, key, value, column, columns, place))

    def add_table_field(self, table: str, fld: str, value: object, place: str = "", columns: list[str] | None = None) -> None:
        self.add(table, "table", f"table.{fld}", value, columns=columns, place=place)

    def add_grain(self, cat: CatalogAPI, table: str, keys: list[Any], vid: int, item: str, place: str,
                  text: str | None = None) -> None:
        """`table.grain` from a primary key (`keys`, as the source file names them), its columns under the
        schema's names; skipped, naming the missing keys, unless every key is a column of `table`."""
        cols = [self.column(cat, table, str(k), vid) for k in keys]
        found = [c for c in cols if c]
        if len(found) < len(cols):
            self.skip(f"primary key of {item}", place, f"{keys} are not all columns of {table}")
            return
        self.add_table_field(table, "grain", {"text": text or f"one row per {', '.join(found)}", "keys": found},
                             place, columns=found)

    def add_column_field(self, table: str, column: str, fld: str, value: object, place: str = "") -> None:
        self.add(table, "column", fld, value, column=column, place=place)


def _valid(name: str) -> bool:
    try:
        lake.object_path(name)
    except InvalidValueError:
        return False
    return name.count(".") == 2


def _col(table: str, value: dict[str, Any], name: str) -> Any:
    cols = columns_of(value)
    col = find(cols, name)
    if col is None:
        raise unknown_column(table, name, [c.name for c in cols])
    return col


def _same(a: object, b: object) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def _normalize(p: Planned, tvalue: dict[str, Any]) -> Any:
    """Validate a planned value with the models of semantic.models (the same rules as annotate)."""
    from semantic import models as m

    try:
        if p.kind == "table":
            fld = p.key.split(".", 1)[1]
            v = getattr(m.TableFields.model_validate({fld: p.value}), fld)
            return v.model_dump() if hasattr(v, "model_dump") else v
        if p.kind == "column":
            return getattr(m.ColumnFields.model_validate({p.key: p.value}), p.key)
        if p.kind == "relationship":
            return m.Relationship.model_validate(p.value).model_dump(mode="json")
        if p.kind == "metric":
            return m.Metric.model_validate(p.value).model_dump()
        if p.kind == "verified_query":
            return m.VerifiedQuery.model_validate(p.value).model_dump()
        return p.value
    except Exception as e:  # pydantic ValidationError: say which value
        raise InvalidValueError(f"{p.place or p.target}: {p.key} value {p.value!r} is invalid: "
                                f"{str(e).splitlines()[0]}") from None


def apply(cat: CatalogAPI, plan: Plan, *, progress: Progress | None = None, dry_run: bool = False,
          overwrite: bool = False) -> ImportResult:
    """Check every planned annotation against the catalog, then write those whose value differs
    from what is stored, in one commit (none when nothing differs). Invariant: a human annotation of
    a table a person certified (`table.certified` true, source human) is never replaced unless
    `overwrite`; it is listed in `kept`. Every stored annotation replaced is listed in `replaced`
    (also in a dry run)."""
    vid = cat.resolve(None)
    note = f"import {plan.source} {os.path.abspath(plan.file)} sha256:{plan.sha256}"
    existing: dict[str, dict[str, Any]] = {}
    stored: dict[str, dict[str, Any]] = {}
    anns = []
    replaced: list[str] = []
    kept: list[str] = []
    unchanged = 0
    total = len(plan.items)
    for i, p in enumerate(plan.items):
        if progress is not None and (i % 200 == 0 or i == total - 1):
            progress("check", i + 1, total)
        level = p.target.count(".") + 1
        tobj = plan.table(cat, p.target, vid) if level == 3 else None
        if level == 3 and tobj is None:
            raise NoSuchTableError(f"{p.place}: table {p.target} does not exist at vid {vid}", name=p.target)
        key = p.key
        if p.kind == "column":
            assert tobj is not None and p.column is not None
            key = f"column.{_col(p.target, tobj.value, p.column).id}.{p.key}"
        value = _normalize(p, tobj.value if tobj is not None else {})
        if p.kind == "table" and key == "table.grain" and tobj is not None:
            value["keys"] = [_col(p.target, tobj.value, k).name for k in value["keys"]]
        if p.target not in existing:
            have = read_annotations(cat, p.target, vid)
            existing[p.target] = {a.key: a.value for a in have}
            stored[p.target] = {a.key: a for a in have}
        if key in existing[p.target] and _same(existing[p.target][key], value):
            unchanged += 1
            continue
        old = stored[p.target].get(key)
        if old is not None:
            cert = stored[p.target].get("table.certified")
            certified = cert is not None and cert.value is True and cert.provenance.source == "human"
            what = f"{p.target}:{key} ({old.provenance.source} by {old.provenance.author})"
            if certified and old.provenance.source == "human" and not overwrite:
                kept.append(what)
                continue
            replaced.append(what)
        existing[p.target][key] = value
        anns.append(new_annotation(cat, p.target, p.kind, key, value, columns=p.columns, column=p.column,
                                   author=plan.author, source="import", note=note, vid=vid, table=tobj))
    result = ImportResult(source=plan.source, file=os.path.abspath(plan.file), sha256=plan.sha256,
                          unchanged=unchanged, tables=dict(plan.tables), unmapped=list(plan.unmapped),
                          written=[f"{a.target}:{a.key}" for a in anns], replaced=replaced, kept=kept)
    if anns and not dry_run:
        if progress is not None:
            progress("write", len(anns), len(anns))
        result.vid = write_annotations(cat, anns, author=plan.author,
                                       message=f"import {plan.source} {os.path.basename(plan.file)} "
                                               f"({len(anns)} annotations)")
    return result


def map_table(cat: CatalogAPI, vid: int, names: list[str], mapping: dict[str, str] | None, candidates: list[str],
              catalog: str | None) -> tuple[str | None, str]:
    """The catalog table for an input item known by `names` (first: the preferred one):
    `mapping` by any name, else the first of `candidates` (dotted guesses) that exists. Returns
    (table or None, why not)."""
    if mapping:
        for n in names:
            if n in mapping:
                t = mapping[n]
                if not _valid(t) or cat.get(lake.table_path(t), vid=vid) is None:
                    raise InterchangeError("mapping", repr(n), f"{t!r} is no table at vid {vid}; map it to an "
                                                               "existing 'catalog.namespace.table'")
                return t, ""
    tried = []
    for c in candidates:
        if _valid(c):
            tried.append(c)
            obj = cat.get(lake.table_path(c), vid=vid)
            if obj is not None and isinstance(obj.value, dict) and obj.value.get("obj_type") == "table":
                return c, ""
    # case-insensitive match of the last two parts within the catalog
    if catalog is not None:
        want = {".".join(c.lower().split(".")[-2:]) for c in candidates}
        pool = [lake.name_of(o.path) for o in cat.query(lake.tables_query(), vid=vid)
                if lake.name_of(o.path).split(".")[0] == catalog]
        hits = [t for t in pool if ".".join(t.lower().split(".")[-2:]) in want]
        if len(hits) == 1:
            return hits[0], ""
        close = did_you_mean(candidates[0].split(".")[-1] if candidates else names[0],
                             [t.split(".")[-1] for t in pool])
        return None, (f"no table {' or '.join(tried) or names[0]} in the catalog{suggest(close)}; "
                      "pass mapping={name: 'catalog.namespace.table'}")
    return None, f"no table {' or '.join(tried) or names[0]}; pass catalog= or mapping="
