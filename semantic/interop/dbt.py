"""`sm.import_dbt(cat, path, catalog=..., mapping=None)`: a dbt project's documentation and tests as
annotations (issue 14, item 2).

`path` is a `manifest.json` (what `dbt parse` / `dbt compile` write to `target/`), a directory holding
one (itself or its `target/`), or a project directory without a manifest, whose `models/**/*.yml`
files are read instead. What maps where:

| dbt | semcat annotation |
|---|---|
| model / source `description` | `table.description` |
| column `description` | `column.<id>.description` |
| `meta.owner` (or `config.meta.owner`) | `table.owner` |
| `tags` | `table.tags` |
| `deprecation_date` | `table.deprecated` (`since` = the date) |
| source `freshness` (`error_after`, else `warn_after`) | `table.freshness_sla` (ISO-8601 duration) |
| `unique` (with `not_null`) tests; else a semantic model's primary entity | `table.grain` keys |
| `accepted_values` test | `column.<id>.enum` |
| `relationships` test | `relationship.<to table>` (many_to_one, canonical) |
| MetricFlow simple metrics (sum, count, count_distinct, average, min, max, median, sum_boolean), ratio metrics of two simple metrics on one table | `metric.<name>` (expression, filter, time column, description, label as synonym) |
| semantic model time / categorical dimensions, measures over a column | `column.<id>.role` time / dimension / measure |

Models and sources map to tables by relation name: `mapping` (by unique id, name or alias) first,
then `<catalog>.<schema>.<alias>`, then the one table of the catalog with that name. Everything that
does not map (models without a table, columns the table lacks, derived and cumulative metrics,
expressions that are not a column, ...) is listed in `ImportResult.unmapped` with the reason.
"""

from __future__ import annotations

import glob
import os
import re
from typing import Any

from catalog_core.api import CatalogAPI
from semantic.interop._common import (
    ImportResult,
    InterchangeError,
    Plan,
    Progress,
    apply,
    file_digest,
    load_json,
    load_yaml,
    map_table,
)

__all__ = ["import_dbt"]

_REF = re.compile(r"""ref\(\s*['"]([^'"]+)['"](?:\s*,\s*['"]([^'"]+)['"])?\s*\)""")
_SOURCE = re.compile(r"""source\(\s*['"]([^'"]+)['"]\s*,\s*['"]([^'"]+)['"]\s*\)""")
_DIM = re.compile(r"""\{\{\s*(?:Dimension|TimeDimension|Entity)\(\s*['"]([^'"]+)['"][^)]*\)\s*\}\}""")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_AGG = {"sum": "sum({})", "count": "count({})", "count_distinct": "count(DISTINCT {})", "average": "avg({})",
        "avg": "avg({})", "min": "min({})", "max": "max({})", "median": "median({})",
        "sum_boolean": "sum(CAST({} AS INTEGER))"}
_PERIOD = {"minute": "PT{}M", "hour": "PT{}H", "day": "P{}D"}


# ------------------------------------------------------------------ reading the project
class _Project:
    """dbt resources in one shape, from a manifest or from schema.yml files."""

    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}       # uid -> {name, alias, schema, kind, description, ...}
        self.tests: list[dict[str, Any]] = []
        self.semantic_models: list[dict[str, Any]] = []
        self.metrics: list[dict[str, Any]] = []
        self.files: list[str] = []

    def by_ref(self, text: str, file: str, place: str) -> str:
        """The uid a `ref('x')` / `source('a', 'b')` names, or InterchangeError."""
        m = _REF.search(text or "")
        if m:
            name = m.group(2) or m.group(1)
            for uid, n in self.nodes.items():
                if n["kind"] == "model" and n["name"] == name:
                    return uid
            raise InterchangeError(file, place, f"{text} names no model of the project")
        m = _SOURCE.search(text or "")
        if m:
            for uid, n in self.nodes.items():
                if n["kind"] == "source" and (n["source"], n["name"]) == (m.group(1), m.group(2)):
                    return uid
            raise InterchangeError(file, place, f"{text} names no source table of the project")
        raise InterchangeError(file, place, f"expected ref('model') or source('name', 'table'), got {text!r}")


def _dict(v: Any, file: str, place: str, what: str) -> dict[str, Any]:
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise InterchangeError(file, place, f"{what} must be a mapping, got {type(v).__name__}")
    return v


def _list(v: object, file: str, place: str, what: str) -> list[Any]:
    if v is None:
        return []
    if not isinstance(v, list):
        raise InterchangeError(file, place, f"{what} must be a list, got {type(v).__name__}")
    return v


def _from_manifest(path: str) -> _Project:
    m = load_json(path)
    if not isinstance(m, dict) or "nodes" not in m or not isinstance(m["nodes"], dict):
        raise InterchangeError(path, "top level", "not a dbt manifest (no 'nodes' mapping); run `dbt parse` "
                                                  "and pass target/manifest.json")
    p = _Project()
    p.files = [path]
    for uid, n in m["nodes"].items():
        place = f'nodes["{uid}"]'
        n = _dict(n, path, place, "a node")
        rt = n.get("resource_type")
        if rt in ("model", "seed", "snapshot"):
            cfg = n.get("config") or {}
            meta = {**(cfg.get("meta") or {}), **(n.get("meta") or {})}
            p.nodes[uid] = {"kind": "model", "name": n.get("name"), "alias": n.get("alias") or n.get("name"),
                            "schema": n.get("schema"), "description": n.get("description") or "",
                            "columns": {c: (v or {}) for c, v in _dict(n.get("columns"), path, place, "columns").items()},
                            "meta": meta, "tags": list(n.get("tags") or []),
                            "deprecation_date": n.get("deprecation_date"), "freshness": None, "place": place,
                            "depends_on": [str(d) for d in (n.get("depends_on") or {}).get("nodes") or []]}
        elif rt == "test":
            tm = n.get("test_metadata") or {}
            kw = tm.get("kwargs") or {}
            attached = n.get("attached_node") or next(iter((n.get("depends_on") or {}).get("nodes") or []), None)
            p.tests.append({"name": tm.get("name"), "model": attached, "column": kw.get("column_name")
                            or n.get("column_name"), "kwargs": kw, "place": place, "file": path})
    for uid, s in (m.get("sources") or {}).items():
        place = f'sources["{uid}"]'
        s = _dict(s, path, place, "a source")
        meta = {**((s.get("config") or {}).get("meta") or {}), **(s.get("source_meta") or {}), **(s.get("meta") or {})}
        p.nodes[uid] = {"kind": "source", "source": s.get("source_name"), "name": s.get("name"),
                        "alias": s.get("identifier") or s.get("name"), "schema": s.get("schema"),
                        "description": s.get("description") or "",
                        "columns": {c: (v or {}) for c, v in _dict(s.get("columns"), path, place, "columns").items()},
                        "meta": meta, "tags": list(s.get("tags") or []), "deprecation_date": None,
                        "freshness": s.get("freshness"), "place": place}
    for uid, sm_ in (m.get("semantic_models") or {}).items():
        sm_ = _dict(sm_, path, f'semantic_models["{uid}"]', "a semantic model")
        deps = (sm_.get("depends_on") or {}).get("nodes") or []
        p.semantic_models.append({**sm_, "model_uid": deps[0] if deps else None,
                                  "place": f'semantic_models["{uid}"]', "file": path})
    for uid, mt in (m.get("metrics") or {}).items():
        mt = _dict(mt, path, f'metrics["{uid}"]', "a metric")
        p.metrics.append({**mt, "place": f'metrics["{uid}"]', "file": path})
    return p


def _yml_tests(col: dict[str, Any]) -> list[Any]:
    return list(col.get("data_tests") or []) + list(col.get("tests") or [])


_Pending = list[tuple[str, str, str, Any, str]]   # column tests to read once every node is known: (file, place, node uid, test, column)


def _yml_files(root: str) -> list[str]:
    """The schema .yml files of a dbt project: under models/, else anywhere but the project's own files."""
    files = sorted(glob.glob(os.path.join(root, "models", "**", "*.yml"), recursive=True) +
                   glob.glob(os.path.join(root, "models", "**", "*.yaml"), recursive=True))
    if not files:
        files = sorted(glob.glob(os.path.join(root, "**", "*.yml"), recursive=True))
        files = [f for f in files if os.path.basename(f) not in ("dbt_project.yml", "profiles.yml", "packages.yml")]
    if not files:
        raise InterchangeError(root, "", "no manifest.json and no schema .yml files under models/")
    return files


def _yml_models(p: _Project, doc: dict[str, Any], f: str, pending: _Pending) -> None:
    for i, mdl in enumerate(_list(doc.get("models"), f, "models", "models")):
        place = f"models[{i}]"
        mdl = _dict(mdl, f, place, "a model")
        name = mdl.get("name")
        if not isinstance(name, str):
            raise InterchangeError(f, place, "a model needs a name")
        cfg = mdl.get("config") or {}
        cols: dict[str, Any] = {}
        for j, c in enumerate(_list(mdl.get("columns"), f, f"{place}.columns", "columns")):
            c = _dict(c, f, f"{place}.columns[{j}]", "a column")
            if not isinstance(c.get("name"), str):
                raise InterchangeError(f, f"{place}.columns[{j}]", "a column needs a name")
            cols[c["name"]] = c
            for t in _yml_tests(c):
                pending.append((f, f"{place} ({name}).columns[{j}]", f"model.{name}", t, c["name"]))
        p.nodes[f"model.{name}"] = {
            "kind": "model", "name": name, "alias": cfg.get("alias") or name, "schema": cfg.get("schema"),
            "description": mdl.get("description") or "", "columns": cols,
            "meta": {**(cfg.get("meta") or {}), **(mdl.get("meta") or {})},
            "tags": list(cfg.get("tags") or []) + list(mdl.get("tags") or []),
            "deprecation_date": mdl.get("deprecation_date"), "freshness": None, "place": f"{f}: {place} ({name})"}


def _yml_sources(p: _Project, doc: dict[str, Any], f: str, pending: _Pending) -> None:
    for i, src in enumerate(_list(doc.get("sources"), f, "sources", "sources")):
        place = f"sources[{i}]"
        src = _dict(src, f, place, "a source")
        for j, t in enumerate(_list(src.get("tables"), f, f"{place}.tables", "tables")):
            t = _dict(t, f, f"{place}.tables[{j}]", "a source table")
            cols = {}
            for k, c in enumerate(_list(t.get("columns"), f, f"{place}.tables[{j}].columns", "columns")):
                c = _dict(c, f, f"{place}.tables[{j}].columns[{k}]", "a column")
                cols[str(c.get("name"))] = c
                for test in _yml_tests(c):
                    pending.append((f, f"{place}.tables[{j}].columns[{k}]",
                                    f"source.{src.get('name')}.{t.get('name')}", test, str(c.get("name"))))
            p.nodes[f"source.{src.get('name')}.{t.get('name')}"] = {
                "kind": "source", "source": src.get("name"), "name": t.get("name"),
                "alias": t.get("identifier") or t.get("name"), "schema": src.get("schema") or src.get("name"),
                "description": t.get("description") or "", "columns": cols,
                "meta": {**(src.get("meta") or {}), **(t.get("meta") or {})},
                "tags": list(t.get("tags") or []), "deprecation_date": None,
                "freshness": t.get("freshness", src.get("freshness")),
                "place": f"{f}: {place}.tables[{j}] ({t.get('name')})"}


def _yml_semantic(p: _Project, doc: dict[str, Any], f: str) -> None:
    """Semantic models and metrics (a metric's measure spelled as a name becomes {name})."""
    for i, sm_ in enumerate(_list(doc.get("semantic_models"), f, "semantic_models", "semantic_models")):
        sm_ = _dict(sm_, f, f"semantic_models[{i}]", "a semantic model")
        p.semantic_models.append({**sm_, "model_ref": sm_.get("model"), "place": f"semantic_models[{i}]", "file": f})
    for i, mt in enumerate(_list(doc.get("metrics"), f, "metrics", "metrics")):
        mt = _dict(mt, f, f"metrics[{i}]", "a metric")
        tp = dict(mt.get("type_params") or {})
        for part in ("measure", "numerator", "denominator"):
            if isinstance(tp.get(part), str):
                tp[part] = {"name": tp[part]}
        p.metrics.append({**mt, "type_params": tp, "place": f"metrics[{i}] ({mt.get('name')})", "file": f})


def _yml_test(p: _Project, f: str, place: str, model_uid: str, t: object, col: str) -> None:
    """A column test, spelled as a name or as a one-key mapping {name: kwargs}."""
    if isinstance(t, str):
        p.tests.append({"name": t, "model": model_uid, "column": col, "kwargs": {}, "place": place, "file": f})
    elif isinstance(t, dict) and len(t) == 1:
        name, kw = next(iter(t.items()))
        kw = dict(kw or {})
        kw.update(kw.pop("arguments", None) or {})
        p.tests.append({"name": name, "model": model_uid, "column": col, "kwargs": kw, "place": place, "file": f})
    else:
        raise InterchangeError(f, place, f"a column test must be a name or a one-key mapping, got {t!r}")


def _from_yml(root: str) -> _Project:
    """A dbt project read from its schema .yml files (no manifest): models, sources, semantic
    models, metrics, then the column tests (which name the nodes) and each semantic model's node."""
    p = _Project()
    p.files = _yml_files(root)
    pending: _Pending = []
    for f in p.files:
        doc = load_yaml(f) or {}
        if not isinstance(doc, dict):
            raise InterchangeError(f, "top level", "a dbt properties file must be a mapping")
        _yml_models(p, doc, f, pending)
        _yml_sources(p, doc, f, pending)
        _yml_semantic(p, doc, f)
    for f, place, model_uid, t, col in pending:
        _yml_test(p, f, place, model_uid, t, col)
    for s in p.semantic_models:
        s["model_uid"] = p.by_ref(str(s.get("model_ref")), s["file"], s["place"] + ".model")
    return p


def _locate(path: str) -> tuple[str, bool]:
    if os.path.isfile(path):
        return path, path.endswith(".json")
    if os.path.isdir(path):
        for cand in (os.path.join(path, "manifest.json"), os.path.join(path, "target", "manifest.json")):
            if os.path.isfile(cand):
                return cand, True
        return path, False
    raise InterchangeError(path, "", "no such file or directory; pass a manifest.json or a dbt project directory")


# ------------------------------------------------------------------ mapping to annotations
def _duration(fresh: object) -> str | None:
    if not isinstance(fresh, dict):
        return None
    for k in ("error_after", "warn_after"):
        v = fresh.get(k) or {}
        if isinstance(v, dict) and v.get("count") and v.get("period") in _PERIOD:
            return _PERIOD[v["period"]].format(int(v["count"]))
    return None


def import_dbt(cat: CatalogAPI, path: str, catalog: str | None = None, mapping: dict[str, str] | None = None, *,
               author: str = "import:dbt", progress: Progress | None = None, dry_run: bool = False,
               overwrite: bool = False) -> ImportResult:
    """Import a dbt project's docs and tests (see the module docstring); idempotent, one commit."""
    where, is_manifest = _locate(path)
    proj = _from_manifest(where) if is_manifest else _from_yml(where)
    label = where if is_manifest else os.path.join(where, "models")
    plan = Plan("dbt", label, file_digest(proj.files), author)
    vid = cat.resolve(None)
    table_of: dict[str, str] = {}
    for uid, n in proj.nodes.items():
        names = [uid, str(n["name"]), str(n["alias"])]
        cands = [f"{catalog}.{n['schema']}.{n['alias']}"] if catalog and n.get("schema") else []
        t, why = map_table(cat, vid, names, mapping, cands, catalog)
        if t is None and catalog is not None:
            t = _unique_by_name(cat, vid, catalog, str(n["alias"]))
        if t is None:
            plan.skip(f"{n['kind']} {uid}", n["place"], why)
            continue
        table_of[uid] = t
        plan.tables[uid] = t
        _node(cat, plan, vid, uid, n, t)
    _tests(cat, plan, vid, proj, table_of)
    _semantic(cat, plan, vid, proj, table_of)
    result = apply(cat, plan, progress=progress, dry_run=dry_run, overwrite=overwrite)
    result.lineage = _lineage(cat, proj, table_of, vid, author, os.path.basename(where), dry_run)
    return result


def _lineage(cat: CatalogAPI, proj: _Project, table_of: dict[str, str], vid: int, author: str, label: str,
             dry_run: bool) -> dict[str, list[str]]:
    """A model's `depends_on` (manifest only) as the lineage of its table (catalog_core.lake.Lineage,
    source `dbt`), in one commit; a table whose recorded lineage already names the same inputs is left
    alone. dbt does not say which state of an input a build read: the vid recorded is the one of the
    table's last data commit (the build that wrote it), else the import's. Returns {table: inputs}."""
    from catalog_core import lake

    want: dict[str, dict[str, int]] = {}
    for uid, n in proj.nodes.items():
        t = table_of.get(uid)
        deps = [table_of[d] for d in n.get("depends_on") or [] if d in table_of and table_of[d] != t]
        if t is None or not deps:
            continue
        obj = cat.get(lake.table_path(t), vid=vid)
        ldc = ((obj.value.get("stats") or {}).get("last_data_commit") or {}) if obj is not None else {}
        lv = ldc.get("vid")
        read: int = lv if isinstance(lv, int) and 0 < lv <= vid else vid
        have = lake.Lineage.from_raw(obj.value if obj is not None else None)
        if have is not None and sorted(have.inputs) == sorted(deps):
            continue
        want[t] = {d: read for d in deps}
    if want and not dry_run:
        with cat.transaction(author=author, message=f"import dbt lineage {label} ({len(want)} tables)") as txn:
            for t, inputs in sorted(want.items()):
                for delta in lake.lineage_deltas(inputs, job=f"dbt model {t.rsplit('.', 1)[-1]}", source="dbt",
                                                 stamp=False):
                    txn.merge(lake.table_path(t), delta)
    return {t: sorted(i) for t, i in want.items()}


def _unique_by_name(cat: CatalogAPI, vid: int, catalog: str, name: str) -> str | None:
    from catalog_core import lake

    hits = [lake.name_of(o.path) for o in cat.query(lake.tables_query(), vid=vid)]
    hits = [h for h in hits if h.split(".")[0] == catalog and h.split(".")[2].lower() == name.lower()]
    return hits[0] if len(hits) == 1 else None


def _node(cat: CatalogAPI, plan: Plan, vid: int, uid: str, n: dict[str, Any], t: str) -> None:
    place = n["place"]
    if n["description"]:
        plan.add_table_field(t, "description", n["description"], place)
    owner = (n.get("meta") or {}).get("owner")
    if isinstance(owner, str) and owner:
        plan.add_table_field(t, "owner", owner, place + ".meta.owner")
    if n.get("tags"):
        plan.add_table_field(t, "tags", sorted({str(x) for x in n["tags"]}), place + ".tags")
    if n.get("deprecation_date"):
        since = str(n["deprecation_date"])[:10]
        plan.add_table_field(t, "deprecated", {"reason": f"dbt deprecation_date {since}", "replaced_by": None,
                                               "since": since}, place + ".deprecation_date")
    sla = _duration(n.get("freshness"))
    if sla:
        plan.add_table_field(t, "freshness_sla", sla, place + ".freshness")
    for cname, c in (n.get("columns") or {}).items():
        desc = c.get("description") if isinstance(c, dict) else None
        if not desc:
            continue
        col = plan.column(cat, t, cname, vid)
        if col is None:
            plan.skip(f"column {n['name']}.{cname}", f"{place}.columns.{cname}", f"table {t} has no column {cname!r}")
            continue
        plan.add_column_field(t, col, "description", desc, f"{place}.columns.{cname}")


def _tests(cat: CatalogAPI, plan: Plan, vid: int, proj: _Project, table_of: dict[str, str]) -> None:
    unique: dict[str, list[str]] = {}
    not_null: dict[str, set[str]] = {}
    rel_names: dict[str, set[str]] = {}
    for tst in proj.tests:
        name, uid, colname, kw, place = tst["name"], tst["model"], tst["column"], tst["kwargs"], tst["place"]
        if name not in ("unique", "not_null", "accepted_values", "relationships"):
            if name is not None:
                plan.skip(f"test {name}", place, "semcat has no annotation for this test")
            continue
        if uid not in proj.nodes:
            raise InterchangeError(tst["file"], place, f"the test is attached to {uid!r}, which the project does not define")
        t = table_of.get(uid)
        if t is None:
            continue  # its model is already listed as unmapped
        col = plan.column(cat, t, str(colname), vid) if colname else None
        if col is None:
            plan.skip(f"test {name} on {proj.nodes[uid]['name']}.{colname}", place, f"table {t} has no column {colname!r}")
            continue
        if name == "unique":
            unique.setdefault(t, []).append(col)
        elif name == "not_null":
            not_null.setdefault(t, set()).add(col)
        elif name == "accepted_values":
            vals = kw.get("values")
            if not isinstance(vals, list):
                raise InterchangeError(tst["file"], place, "accepted_values needs a list of values")
            plan.add_column_field(t, col, "enum", vals, place)
        else:
            to_uid = proj.by_ref(str(kw.get("to")), tst["file"], place + ".to")
            to_t = table_of.get(to_uid)
            field = kw.get("field")
            if to_t is None:
                plan.skip(f"relationship {proj.nodes[uid]['name']}.{col} -> {kw.get('to')}", place,
                          f"{to_uid} maps to no table")
                continue
            to_col = plan.column(cat, to_t, str(field), vid)
            if to_col is None:
                plan.skip(f"relationship {proj.nodes[uid]['name']}.{col} -> {kw.get('to')}.{field}", place,
                          f"table {to_t} has no column {field!r}")
                continue
            short = to_t.split(".")[-1]
            taken = rel_names.setdefault(t, set())
            rname = short if short not in taken else f"{short}__{col}"
            taken.add(rname)
            plan.add(t, "relationship", f"relationship.{rname}",
                     {"to": to_t, "on": [[col, to_col]], "cardinality": "many_to_one", "canonical": True,
                      "condition": None}, columns=[col], place=place)
    for t, cols in unique.items():
        keys = [c for c in cols if c in not_null.get(t, set())] or cols
        plan.add_table_field(t, "grain", {"text": f"one row per {keys[0]}", "keys": [keys[0]]},
                             f"unique tests of {t}", columns=[keys[0]])
        for extra in keys[1:]:
            plan.skip(f"unique column {t}.{extra}", f"unique tests of {t}",
                      f"the grain holds one key; {keys[0]} was taken")
    plan._grain_tables = set(unique)  # type: ignore[attr-defined]


def _col_expr(expr: object, name: str) -> str | None:
    e = (expr if isinstance(expr, str) and expr.strip() else name).strip()
    return e if _IDENT.match(e) else None


_Simple = tuple[str, str, str | None, str | None]   # a simple metric: (table, expression, filter, time column)


def _semantic(cat: CatalogAPI, plan: Plan, vid: int, proj: _Project, table_of: dict[str, str]) -> None:
    """The semantic models' entities, dimensions and measures into `plan` as table and column
    fields, then the metrics: simple ones (one measure's aggregate) and ratios of two simple
    metrics on one table with one filter; every other metric is skipped with the reason."""
    measures: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}   # measure name -> (measure, semantic model)
    for s in proj.semantic_models:
        _semantic_model(cat, plan, vid, proj, s, table_of, measures)
    simple: dict[str, _Simple] = {}
    for mt in proj.metrics:
        name, place = str(mt.get("name")), mt["place"]
        typ = mt.get("type")
        if typ == "simple":
            got = _simple_metric(cat, plan, vid, mt, measures)
            if got is not None:
                simple[name] = got
                _metric(plan, got[0], name, got[1], got[2], got[3], mt, place)
        elif typ == "ratio":
            _ratio_metric(plan, proj, mt, simple)
        else:
            plan.skip(f"metric {name}", place, f"{typ} metrics have no single-aggregate SQL form")


def _semantic_model(cat: CatalogAPI, plan: Plan, vid: int, proj: _Project, s: dict[str, Any], table_of: dict[str, str],
                    measures: dict[str, tuple[dict[str, Any], dict[str, Any]]]) -> None:
    """One semantic model: its measures into `measures`, its entities, dimensions and measures into `plan`."""
    place, file = s["place"], s["file"]
    if s.get("model_uid") not in proj.nodes:
        raise InterchangeError(file, place, f"semantic model {s.get('name')!r} is on {s.get('model')!r}, "
                                            "which the project does not define")
    t = table_of.get(s["model_uid"])
    s["table"] = t
    for ms in s.get("measures") or []:
        measures[str(ms.get("name"))] = (ms, s)
    if t is None:
        plan.skip(f"semantic model {s.get('name')}", place, f"{s['model_uid']} maps to no table")
        return
    for kind, items in (("entity", s.get("entities") or []), ("dimension", s.get("dimensions") or []),
                        ("measure", s.get("measures") or [])):
        for item in items:
            _semantic_item(cat, plan, vid, t, s, kind, item)


def _semantic_item(cat: CatalogAPI, plan: Plan, vid: int, t: str, s: dict[str, Any], kind: str, item: Any) -> None:
    """An entity (a primary one is the grain), dimension (role, description) or measure (role) on its column."""
    iname = str(item.get("name"))
    ipl = f"{s['place']}.{kind}.{iname}"
    e = _col_expr(item.get("expr"), iname)
    col = plan.column(cat, t, e, vid) if e else None
    if col is None:
        if kind != "measure" or e is not None:
            plan.skip(f"{kind} {s.get('name')}.{iname}", ipl,
                      f"its expression {item.get('expr') or iname!r} is not a column of {t}")
        return
    if kind == "entity":
        if item.get("type") == "primary" and t not in getattr(plan, "_grain_tables", set()):
            plan.add_table_field(t, "grain", {"text": f"one row per {iname}", "keys": [col]}, ipl, columns=[col])
    elif kind == "dimension":
        plan.add_column_field(t, col, "role", "time" if item.get("type") == "time" else "dimension", ipl)
        if item.get("description"):
            plan.add_column_field(t, col, "description", item["description"], ipl)
    else:
        plan.add_column_field(t, col, "role", "measure", ipl)


def _simple_metric(cat: CatalogAPI, plan: Plan, vid: int, mt: dict[str, Any],
                   measures: dict[str, tuple[dict[str, Any], dict[str, Any]]]) -> _Simple | None:
    """A simple metric as (table, expression, filter, time column), or None when skipped (with the reason)."""
    name, place, file = str(mt.get("name")), mt["place"], mt["file"]
    tp = mt.get("type_params") or {}
    ms_ref = tp.get("measure") or {}
    mname = ms_ref.get("name") if isinstance(ms_ref, dict) else ms_ref
    if mname not in measures:
        raise InterchangeError(file, place + ".type_params.measure",
                               f"metric {name!r} uses measure {mname!r}, which no semantic model defines")
    ms, s = measures[mname]
    t = s.get("table")
    if t is None:
        plan.skip(f"metric {name}", place, f"its semantic model {s.get('name')} maps to no table")
        return None
    agg = str(ms.get("agg"))
    e = (ms.get("expr") or ms.get("name") or "").strip()
    if agg not in _AGG:
        plan.skip(f"metric {name}", place, f"aggregation {agg!r} has no SQL equivalent here")
        return None
    expression = _AGG[agg].format(e if agg != "count" or e != "1" else "*")
    filt = _filter(mt.get("filter"), ms_ref.get("filter") if isinstance(ms_ref, dict) else None, s)
    if filt is False or filt is True:
        plan.skip(f"metric {name}", place, "its filter uses Jinja semcat cannot translate")
        return None
    tdim = ms.get("agg_time_dimension") or (s.get("defaults") or {}).get("agg_time_dimension")
    tcol = None
    if tdim:
        d = next((d for d in s.get("dimensions") or [] if d.get("name") == tdim), None)
        te = _col_expr(d.get("expr") if d else None, str(tdim))
        tcol = plan.column(cat, t, te, vid) if te else None
    bad = _unknown_columns(cat, plan, vid, t, expression, filt)
    if bad:
        plan.skip(f"metric {name}", place, f"{', '.join(bad)} not columns of {t}")
        return None
    return (t, expression, filt or None, tcol)


def _ratio_metric(plan: Plan, proj: _Project, mt: dict[str, Any], simple: dict[str, _Simple]) -> None:
    """A ratio of two simple metrics read before it, on one table with the same filter."""
    name, place, file = str(mt.get("name")), mt["place"], mt["file"]
    tp = mt.get("type_params") or {}
    num, den = (tp.get("numerator") or {}), (tp.get("denominator") or {})
    nn, dn = (num.get("name") if isinstance(num, dict) else num), (den.get("name") if isinstance(den, dict) else den)
    known = {str(m.get("name")) for m in proj.metrics}
    for part, nm in (("numerator", nn), ("denominator", dn)):
        if nm not in known:
            raise InterchangeError(file, f"{place}.type_params.{part}",
                                   f"ratio metric {name!r} uses metric {nm!r}, which the project does not define")
    a, b = simple.get(str(nn)), simple.get(str(dn))
    if a is None or b is None or a[0] != b[0] or a[2] != b[2] or \
            (isinstance(num, dict) and num.get("filter")) or (isinstance(den, dict) and den.get("filter")):
        plan.skip(f"metric {name}", place, "a ratio maps only when both sides are simple metrics of one "
                                           "table with the same filter")
        return
    _metric(plan, a[0], name, f"{a[1]} * 1.0 / NULLIF({b[1]}, 0)", a[2], a[3], mt, place)


def _filter(metric_filter: Any, measure_filter: Any, s: dict[str, Any]) -> str | None | bool:
    texts: list[str] = []
    for f in (metric_filter, measure_filter):
        if isinstance(f, dict):
            texts += [w.get("where_sql_template", "") for w in f.get("where_filters") or [] if isinstance(w, dict)]
        elif isinstance(f, str) and f.strip():
            texts.append(f)
        elif isinstance(f, list):
            texts += [str(x) for x in f]
    if not texts:
        return None
    dims = {str(d.get("name")): (d.get("expr") or d.get("name")) for d in s.get("dimensions") or []}
    out = []
    for text in texts:
        def sub(m: re.Match[str]) -> str:
            ref = m.group(1).split("__")[-1]
            return str(dims.get(ref, ref))
        t = _DIM.sub(sub, text)
        if "{{" in t or "{%" in t:
            return False
        out.append(f"({t.strip()})" if len(texts) > 1 else t.strip())
    return " AND ".join(out)


def _unknown_columns(cat: CatalogAPI, plan: Plan, vid: int, t: str, *sqls: object) -> list[str]:
    import sqlglot
    from sqlglot import exp

    bad = []
    for s in sqls:
        if not s:
            continue
        try:
            tree = sqlglot.parse_one(f"SELECT {s}", read="duckdb")
        except sqlglot.errors.ParseError:
            return [f"{s!r} (does not parse)"]
        for c in tree.find_all(exp.Column):
            if plan.column(cat, t, c.name, vid) is None:
                bad.append(c.name)
    return bad


def _metric(plan: Plan, t: str, name: str, expression: str, filt: str | None, tcol: str | None,
            mt: dict[str, Any], place: str) -> None:
    label = mt.get("label")
    syn = [label] if isinstance(label, str) and label.strip() and label.strip().lower() != name.lower() else []
    plan.add(t, "metric", f"metric.{name}", {"expression": expression, "filter": filt, "time_column": tcol,
                                             "unit": None, "description": mt.get("description") or None,
                                             "synonyms": syn}, columns=None, place=place)
