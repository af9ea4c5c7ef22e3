"""Open Semantic Interchange (OSI, core spec 0.2.0.dev0) YAML: `sm.export_osi(cat, path, catalog=...)`
and `sm.import_osi(cat, path, catalog=None, mapping=None)`.

One semantic model per catalog. What maps where:

| OSI | semcat |
|---|---|
| model `description` / `ai_context` | catalog `instructions` (ai_context `instructions`, or the text) |
| dataset `source` | the table (`catalog.namespace.table`) |
| dataset `description`, `primary_key` | `table.description`, `table.grain` keys |
| dataset `ai_context` `synonyms` / `instructions` (a plain string: instructions) | `table.synonyms` / `table.instructions` |
| field (expression = a column) `description`, `ai_context.synonyms`, `ai_context.examples` | `column.<id>.description` / `synonyms` / `sample_values` |
| field `dimension` (`is_time`) | `column.<id>.role` dimension (time) |
| relationship `from`, `to`, `from_columns`, `to_columns` | `relationship.<name>` on the from table (many_to_one, canonical) |
| metric `expression` (ANSI_SQL), `description`, `ai_context.synonyms` | `metric.<name>` on the dataset its columns belong to |

What OSI cannot hold goes into `custom_extensions` entries with `vendor_name: SEMCAT` whose `data` is
a JSON object (documented here, the contract of the round trip):

- dataset: `{"grain_text", "owner", "tags", "deprecated", "freshness_sla", "certified",
  "verified_queries": [verified_query values with "key"]}` (the keys present only when set);
- field: `{"unit", "enum", "sample_values", "role"}`;
- relationship: `{"name", "cardinality", "canonical", "condition"}`;
- metric: `{"name", "dataset", "filter", "time_column", "unit"}`;
- model: `{"namespaces": {namespace: instructions}}`.

Export then import is lossless for all of these (annotation values compare equal). Fields or metrics
whose expression is not a plain column or not tied to one dataset, and sources that map to no table,
are listed in `ImportResult.unmapped`.
"""

from __future__ import annotations

import json
import os
from typing import Any

import yaml

from catalog_core import lake
from catalog_core.api import CatalogAPI, SnapshotRef
from catalog_core.errors import InvalidValueError
from semantic._tables import column_id, table_columns
from semantic.annotations import read_annotations
from semantic.interop._common import (
    ImportResult,
    InterchangeError,
    Plan,
    Progress,
    apply,
    file_digest,
    load_yaml,
    map_table,
)
from semantic.models import Annotation

__all__ = ["export_osi", "import_osi", "VENDOR", "OSI_VERSION"]

VENDOR = "SEMCAT"
OSI_VERSION = "0.2.0.dev0"
_TYPES = {"bigint": "Integer", "long": "Integer", "int": "Integer", "integer": "Integer", "smallint": "Integer",
          "tinyint": "Integer", "string": "String", "varchar": "String", "boolean": "Boolean", "date": "Date",
          "timestamp": "DateTimeTz", "timestamp_ntz": "DateTime", "double": "Float", "float": "Float"}


def _datatype(t: str) -> str:
    t = str(t).lower()
    return "Decimal" if t.startswith("decimal") else _TYPES.get(t, "Opaque")


def _ext(data: dict[str, Any]) -> list[dict[str, Any]]:
    data = {k: v for k, v in data.items() if v is not None and v != [] and v != {}}
    return [{"vendor_name": VENDOR, "data": json.dumps(data, sort_keys=True)}] if data else []


def _expr(e: str) -> dict[str, Any]:
    return {"dialects": [{"dialect": "ANSI_SQL", "expression": e}]}


# ------------------------------------------------------------------ export
def _field_out(c: lake.Column, cf: dict[str, Any]) -> dict[str, Any]:
    """The OSI field of column `c` with its annotations `cf` (field -> value)."""
    f: dict[str, Any] = {"name": c.name, "expression": _expr(c.name), "datatype": _datatype(str(c.type))}
    if cf.get("role") in ("dimension", "time"):
        f["dimension"] = {"is_time": cf["role"] == "time"}
    if cf.get("description"):
        f["description"] = cf["description"]
    ai = {k: v for k, v in (("synonyms", cf.get("synonyms")), ("examples", cf.get("sample_values"))) if v}
    if ai:
        f["ai_context"] = ai
    ext = _ext({"unit": cf.get("unit"), "enum": cf.get("enum"), "sample_values": cf.get("sample_values"),
                "role": cf.get("role")})
    if ext:
        f["custom_extensions"] = ext
    return f


def _dataset_out(t: str, name: str, value: dict[str, Any], anns: list[Annotation]) -> dict[str, Any]:
    """The OSI dataset `name` of table `t` (its value and annotations)."""
    tf = {a.field: a.value for a in anns if a.kind == "table"}
    cols: dict[int, dict[str, Any]] = {}
    for a in anns:
        if a.kind == "column" and a.column_id is not None:
            cols.setdefault(a.column_id, {})[a.field] = a.value
    fields = [_field_out(c, cols.get(column_id(c), {})) for c in table_columns(value)]
    ds: dict[str, Any] = {"name": name, "source": t}
    grain = tf.get("grain") or {}
    if grain.get("keys"):
        ds["primary_key"] = list(grain["keys"])
    if tf.get("description"):
        ds["description"] = tf["description"]
    ai = {k: tf[k] for k in ("synonyms", "instructions") if tf.get(k)}
    if ai:
        ds["ai_context"] = ai
    ds["fields"] = fields
    vqs = [{"key": a.key, **a.value} for a in anns if a.kind == "verified_query"]
    ext = _ext({"grain_text": grain.get("text") if grain else None, "owner": tf.get("owner"),
                "tags": tf.get("tags"), "deprecated": tf.get("deprecated"),
                "freshness_sla": tf.get("freshness_sla"), "certified": tf.get("certified"),
                "verified_queries": vqs})
    if ext:
        ds["custom_extensions"] = ext
    return ds


def _metric_out(mname: str, ds: str, v: dict[str, Any], metric_names: list[str]) -> dict[str, Any]:
    """The OSI metric of metric `mname` of dataset `ds` (named `<ds>__<name>` when the name is not unique)."""
    m: dict[str, Any] = {"name": mname if metric_names.count(mname) == 1 else f"{ds}__{mname}",
                         "expression": _expr(v["expression"])}
    if v.get("description"):
        m["description"] = v["description"]
    if v.get("synonyms"):
        m["ai_context"] = {"synonyms": list(v["synonyms"])}
    m["custom_extensions"] = _ext({"name": mname, "dataset": ds, "filter": v.get("filter"),
                                   "time_column": v.get("time_column"), "unit": v.get("unit")})
    return m


def export_osi(cat: CatalogAPI, path: str, catalog: str, snapshot: SnapshotRef = None) -> dict[str, Any]:
    """Write the annotations of `catalog`'s tables at `snapshot` as one OSI semantic model to `path`
    (YAML); returns the document."""
    vid = cat.resolve(snapshot)
    if not isinstance(catalog, str) or cat.get(lake.object_path(catalog), vid=vid) is None:
        raise InvalidValueError(f"catalog {catalog!r} does not exist at vid {vid}")
    tables = sorted(lake.name_of(o.path) for o in cat.query(lake.tables_query(), vid=vid)
                    if lake.name_of(o.path).split(".")[0] == catalog)
    shorts = [t.split(".")[2] for t in tables]
    ds_name = {t: (t.split(".")[2] if shorts.count(t.split(".")[2]) == 1 else "__".join(t.split(".")[1:]))
               for t in tables}
    datasets, relationships, metrics = [], [], []
    metric_names = [a.key.split(".", 1)[1] for t in tables for a in read_annotations(cat, t, vid) if a.kind == "metric"]
    for t in tables:
        obj = cat.get(lake.table_path(t), vid=vid)
        assert obj is not None
        anns = read_annotations(cat, t, vid)
        datasets.append(_dataset_out(t, ds_name[t], obj.value, anns))
        for a in anns:
            v = a.value
            if a.kind == "relationship" and isinstance(v, dict) and v.get("to") in ds_name:
                rname = a.key.split(".", 1)[1]
                relationships.append({
                    "name": f"{ds_name[t]}__{rname}", "from": ds_name[t], "to": ds_name[v["to"]],
                    "from_columns": [p[0] for p in v["on"]], "to_columns": [p[1] for p in v["on"]],
                    "custom_extensions": _ext({"name": rname, "cardinality": v.get("cardinality"),
                                               "canonical": v.get("canonical"), "condition": v.get("condition")})})
            elif a.kind == "metric" and isinstance(v, dict):
                metrics.append(_metric_out(a.key.split(".", 1)[1], ds_name[t], v, metric_names))
    model: dict[str, Any] = {"name": catalog}
    cat_ins = [a.value for a in read_annotations(cat, catalog, vid) if a.kind == "instructions"]
    if cat_ins:
        model["ai_context"] = {"instructions": cat_ins[0]}
    model["datasets"] = datasets
    if relationships:
        model["relationships"] = relationships
    if metrics:
        model["metrics"] = metrics
    ns_ins = {}
    for o in cat.children(lake.object_path(catalog), vid=vid):
        if o.value.get("obj_type") == "namespace":
            ns = lake.name_of(o.path)
            got = [a.value for a in read_annotations(cat, ns, vid) if a.kind == "instructions"]
            if got:
                ns_ins[ns.split(".")[1]] = got[0]
    ext = _ext({"namespaces": ns_ins})
    if ext:
        model["custom_extensions"] = ext
    doc = {"version": OSI_VERSION, "semantic_model": [model]}
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        yaml.safe_dump(doc, out, sort_keys=False, allow_unicode=True, width=120)
    return doc


# ------------------------------------------------------------------ import
def _semcat_ext(item: dict[str, Any], file: str, place: str) -> dict[str, Any]:
    for e in item.get("custom_extensions") or []:
        if isinstance(e, dict) and str(e.get("vendor_name", "")).upper() == VENDOR:
            data = e.get("data")
            try:
                out = json.loads(data) if isinstance(data, str) else data
            except json.JSONDecodeError as err:
                raise InterchangeError(file, place + ".custom_extensions", f"SEMCAT data is not JSON: {err.msg}") from None
            if not isinstance(out, dict):
                raise InterchangeError(file, place + ".custom_extensions", "SEMCAT data must be a JSON object")
            return out
    return {}


def _expression(e: object, file: str, place: str) -> str:
    if isinstance(e, str):
        return e
    dialects = e.get("dialects") if isinstance(e, dict) else e if isinstance(e, list) else None
    if not isinstance(dialects, list) or not dialects:
        raise InterchangeError(file, place, "expression must hold dialects: [{dialect, expression}]")
    pick = next((d for d in dialects if isinstance(d, dict) and d.get("dialect", "ANSI_SQL") == "ANSI_SQL"), dialects[0])
    if not isinstance(pick, dict) or not isinstance(pick.get("expression"), str):
        raise InterchangeError(file, place, "each dialect needs an expression string")
    return pick["expression"]


def _ai(v: Any) -> dict[str, Any]:
    if isinstance(v, str):
        return {"instructions": v} if v.strip() else {}
    return v if isinstance(v, dict) else {}


def _models(doc: Any, file: str) -> list[dict[str, Any]]:
    if not isinstance(doc, dict):
        raise InterchangeError(file, "top level", "an OSI file is a mapping with semantic_model")
    sm_ = doc.get("semantic_model", doc if "datasets" in doc else None)
    if sm_ is None:
        raise InterchangeError(file, "top level", "no semantic_model (nor datasets) found")
    models = sm_ if isinstance(sm_, list) else [sm_]
    for i, m in enumerate(models):
        if not isinstance(m, dict) or not isinstance(m.get("datasets"), list):
            raise InterchangeError(file, f"semantic_model[{i}]", "a semantic model needs a datasets list")
    return models


def import_osi(cat: CatalogAPI, path: str, catalog: str | None = None, mapping: dict[str, str] | None = None, *,
               author: str = "import:osi", progress: Progress | None = None, dry_run: bool = False,
               overwrite: bool = False) -> ImportResult:
    """Import an OSI YAML file (see the module docstring); idempotent, one commit."""
    doc = load_yaml(path)
    models = _models(doc, path)
    plan = Plan("osi", path, file_digest([path]), author)
    vid = cat.resolve(None)
    for mi, model in enumerate(models):
        mplace = f"semantic_model[{mi}] ({model.get('name')})"
        ds_table: dict[str, str | None] = {}
        for di, ds in enumerate(model["datasets"]):
            place = f"{mplace}.datasets[{di}]"
            if not isinstance(ds, dict) or not isinstance(ds.get("name"), str) or not isinstance(ds.get("source"), str):
                raise InterchangeError(path, place, "a dataset needs a name and a source")
            src = ds["source"]
            parts = src.split(".")
            cands = [src] + ([f"{catalog}.{'.'.join(parts[-2:])}"] if catalog and len(parts) >= 2 else [])
            t, why = map_table(cat, vid, [ds["name"], src], mapping, cands, catalog)
            ds_table[ds["name"]] = t
            if t is None:
                plan.skip(f"dataset {ds['name']}", place, why)
                continue
            plan.tables[ds["name"]] = t
            _dataset(cat, plan, vid, t, ds, path, place)
        for ri, rel in enumerate(model.get("relationships") or []):
            _relationship(cat, plan, vid, rel, ds_table, path, f"{mplace}.relationships[{ri}]")
        for xi, met in enumerate(model.get("metrics") or []):
            _metric(cat, plan, vid, met, ds_table, path, f"{mplace}.metrics[{xi}]")
        mapped = sorted({t.split(".")[0] for t in ds_table.values() if t})
        target = catalog or (mapped[0] if len(mapped) == 1 else None)
        ins = _ai(model.get("ai_context")).get("instructions")
        if ins and target:
            plan.add(target, "instructions", "instructions", str(ins), place=f"{mplace}.ai_context")
        for ns, text in (_semcat_ext(model, path, mplace).get("namespaces") or {}).items():
            if target and cat.get(lake.object_path(f"{target}.{ns}"), vid=vid) is not None:
                plan.add(f"{target}.{ns}", "instructions", "instructions", str(text), place=f"{mplace}.custom_extensions")
            else:
                plan.skip(f"namespace {ns} instructions", mplace, f"no namespace {target}.{ns}")
    return apply(cat, plan, progress=progress, dry_run=dry_run, overwrite=overwrite)


def _dataset(cat: CatalogAPI, plan: Plan, vid: int, t: str, ds: dict[str, Any], file: str, place: str) -> None:
    """An OSI dataset into `plan`: its table fields (description, primary key as the grain,
    ai_context, semcat's extensions, verified queries), then each of its fields."""
    ext = _semcat_ext(ds, file, place)
    if ds.get("description"):
        plan.add_table_field(t, "description", str(ds["description"]), place)
    _primary_key(cat, plan, vid, t, ds, ext, place)
    ai = _ai(ds.get("ai_context"))
    if ai.get("synonyms"):
        plan.add_table_field(t, "synonyms", [str(s) for s in ai["synonyms"]], place + ".ai_context")
    if ai.get("instructions"):
        plan.add_table_field(t, "instructions", str(ai["instructions"]), place + ".ai_context")
    for k in ("owner", "tags", "deprecated", "freshness_sla", "certified"):
        if ext.get(k) is not None:
            plan.add_table_field(t, k, ext[k], place + ".custom_extensions")
    for q in ext.get("verified_queries") or []:
        q = dict(q)
        key = q.pop("key", None)
        if not isinstance(key, str) or not key.startswith("verified_query."):
            raise InterchangeError(file, place + ".custom_extensions", "a verified query needs its key")
        plan.add(t, "verified_query", key, q, place=place + ".custom_extensions")
    for fi, f in enumerate(ds.get("fields") or []):
        _field(cat, plan, vid, t, ds, f, file, f"{place}.fields[{fi}]")


def _primary_key(cat: CatalogAPI, plan: Plan, vid: int, t: str, ds: dict[str, Any], ext: dict[str, Any],
                 place: str) -> None:
    keys = ds.get("primary_key") or next(iter(ds.get("unique_keys") or []), None)
    if not keys:
        return
    text = ext.get("grain_text")
    plan.add_grain(cat, t, list(keys), vid, str(ds["name"]), place + ".primary_key",
                   text=text if isinstance(text, str) else None)


def _field(cat: CatalogAPI, plan: Plan, vid: int, t: str, ds: dict[str, Any], f: Any, file: str, fplace: str) -> None:
    """One OSI field: its column's fields (skipped when its expression is not a column)."""
    if not isinstance(f, dict) or not isinstance(f.get("name"), str):
        raise InterchangeError(file, fplace, "a field needs a name")
    e = _expression(f.get("expression", f["name"]), file, fplace + ".expression").strip().strip('"')
    col = plan.column(cat, t, e, vid)
    if col is None:
        plan.skip(f"field {ds['name']}.{f['name']}", fplace, f"its expression {e!r} is not a column of {t}")
        return
    fx = _semcat_ext(f, file, fplace)
    if f.get("description"):
        plan.add_column_field(t, col, "description", str(f["description"]), fplace)
    fai = _ai(f.get("ai_context"))
    if fai.get("synonyms"):
        plan.add_column_field(t, col, "synonyms", [str(s) for s in fai["synonyms"]], fplace + ".ai_context")
    if fai.get("instructions") and not f.get("description"):
        plan.add_column_field(t, col, "description", str(fai["instructions"]), fplace + ".ai_context")
    samples = fx.get("sample_values") or fai.get("examples")
    if samples:
        plan.add_column_field(t, col, "sample_values", list(samples), fplace)
    role = fx.get("role") or (("time" if (f["dimension"] or {}).get("is_time") else "dimension")
                              if isinstance(f.get("dimension"), dict) else None)
    if role:
        plan.add_column_field(t, col, "role", role, fplace)
    for k in ("unit", "enum"):
        if fx.get(k) is not None:
            plan.add_column_field(t, col, k, fx[k], fplace + ".custom_extensions")


def _relationship(cat: CatalogAPI, plan: Plan, vid: int, rel: object, ds_table: dict[str, str | None], file: str,
                  place: str) -> None:
    if not isinstance(rel, dict):
        raise InterchangeError(file, place, "a relationship must be a mapping")
    for side in ("from", "to"):
        if rel.get(side) not in ds_table:
            raise InterchangeError(file, f"{place}.{side}", f"{rel.get(side)!r} names no dataset of the model "
                                                            f"(datasets: {', '.join(ds_table)})")
    fc, tc = rel.get("from_columns") or [], rel.get("to_columns") or []
    if not fc or len(fc) != len(tc):
        raise InterchangeError(file, place, "from_columns and to_columns must be non-empty and of the same length")
    ft, tt = ds_table[rel["from"]], ds_table[rel["to"]]
    label = f"relationship {rel.get('name')}"
    if ft is None or tt is None:
        plan.skip(label, place, "one of its datasets maps to no table")
        return
    pairs = [(plan.column(cat, ft, str(a), vid), plan.column(cat, tt, str(b), vid)) for a, b in zip(fc, tc, strict=True)]
    if any(a is None or b is None for a, b in pairs):
        plan.skip(label, place, f"its columns are not all in {ft} / {tt}")
        return
    x = _semcat_ext(rel, file, place)
    name = x.get("name") or tt.split(".")[-1]
    plan.add(ft, "relationship", f"relationship.{name}",
             {"to": tt, "on": [[a, b] for a, b in pairs], "cardinality": x.get("cardinality", "many_to_one"),
              "canonical": x.get("canonical", True), "condition": x.get("condition")},
             columns=[a for a, _ in pairs if a], place=place)


def _metric(cat: CatalogAPI, plan: Plan, vid: int, met: object, ds_table: dict[str, str | None], file: str,
            place: str) -> None:
    import sqlglot
    from sqlglot import exp

    if not isinstance(met, dict) or not isinstance(met.get("name"), str):
        raise InterchangeError(file, place, "a metric needs a name")
    x = _semcat_ext(met, file, place)
    text = _expression(met.get("expression"), file, place + ".expression")
    try:
        tree = sqlglot.parse_one(f"SELECT {text}", read="duckdb")
    except sqlglot.errors.ParseError as e:
        raise InterchangeError(file, place + ".expression", f"does not parse: {str(e).splitlines()[0]}") from None
    quals = {c.table for c in tree.find_all(exp.Column) if c.table}
    for q in quals:
        if q not in ds_table:
            raise InterchangeError(file, place + ".expression", f"{q!r} names no dataset of the model")
    ds = x.get("dataset") or (next(iter(quals)) if len(quals) == 1 else None)
    if ds is not None and ds not in ds_table:
        raise InterchangeError(file, place + ".custom_extensions", f"dataset {ds!r} is not in the model")
    label = f"metric {met['name']}"
    if ds is None or len(quals - {ds}) > 0:
        plan.skip(label, place, "its expression is not tied to one dataset")
        return
    t = ds_table[ds]
    if t is None:
        plan.skip(label, place, f"dataset {ds} maps to no table")
        return
    for c in tree.find_all(exp.Column):
        if c.table:
            c.set("table", None)
        if plan.column(cat, t, c.name, vid) is None:
            plan.skip(label, place, f"{c.name!r} is not a column of {t}")
            return
    expression = text if not quals else tree.expressions[0].sql(dialect="duckdb")
    plan.add(t, "metric", f"metric.{x.get('name') or met['name']}",
             {"expression": expression, "filter": x.get("filter"), "time_column": x.get("time_column"),
              "unit": x.get("unit"), "description": met.get("description"),
              "synonyms": list(_ai(met.get("ai_context")).get("synonyms") or [])}, place=place)
