"""Snowflake Cortex Analyst semantic model YAML: `sm.import_cortex(cat, path, catalog=..., mapping=None)`.

| Cortex | semcat |
|---|---|
| table `base_table` {database, schema, table} | the table: `mapping` (by logical name or dotted base table), else the base table's dotted name, else `<catalog>.<schema>.<table>`, else the catalog's one table of that name |
| table `description`, `synonyms`, `primary_key.columns` | `table.description`, `table.synonyms`, `table.grain` keys |
| `dimensions` / `time_dimensions` / `facts` (or `measures`) whose `expr` is a column | `column.<id>.description`, `synonyms`, `sample_values` (`enum` too when `is_enum`), `role` dimension / time / measure |
| `metrics` (expr over the table's columns) | `metric.<name>` (description, synonyms) |
| `filters` | appended to the table's `instructions` ("named filter NAME: EXPR -- description") |
| `relationships` | `relationship.<name>` on `left_table` (`relationship_type`; canonical) |
| `verified_queries` | `verified_query.<id>` on every table the SQL reads: logical names (`__orders`) become catalog names, the SQL is run at the current snapshot and its result fingerprint stored; a query that does not run is listed as unmapped |
| `custom_instructions`, `module_custom_instructions` | the catalog's `instructions` |

Expressions that are not a plain column, metrics over other tables' columns and tables that map to no
catalog table are listed in `ImportResult.unmapped`; unknown logical table names in relationships
are an `InterchangeError` naming the place.
"""

from __future__ import annotations

import hashlib
from typing import Any

from catalog_core.api import CatalogAPI
from catalog_core.errors import CatalogError
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

__all__ = ["import_cortex"]


def _ident(e: Any) -> str | None:
    import re

    e = str(e or "").strip().strip('"')
    return e if re.match(r"^[A-Za-z_][A-Za-z0-9_$]*$", e) else None


def import_cortex(cat: CatalogAPI, path: str, catalog: str | None = None, mapping: dict[str, str] | None = None, *,
                  author: str = "import:cortex", progress: Progress | None = None,
                  dry_run: bool = False, overwrite: bool = False) -> ImportResult:
    """Import a Cortex Analyst semantic model YAML (see the module docstring); idempotent, one commit."""
    doc = load_yaml(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("tables"), list):
        raise InterchangeError(path, "top level", "a Cortex Analyst semantic model is a mapping with a tables list")
    plan = Plan("cortex", path, file_digest([path]), author)
    vid = cat.resolve(None)
    logical: dict[str, str | None] = {}
    for i, t in enumerate(doc["tables"]):
        place = f"tables[{i}]"
        if not isinstance(t, dict) or not isinstance(t.get("name"), str):
            raise InterchangeError(path, place, "a logical table needs a name")
        place = f"tables[{i}] ({t['name']})"
        bt = t.get("base_table") or {}
        if not isinstance(bt, dict) or not bt.get("table"):
            raise InterchangeError(path, place + ".base_table", "base_table needs database, schema and table")
        dotted = ".".join(str(bt.get(k, "")).lower() for k in ("database", "schema", "table"))
        cands = [dotted] + ([f"{catalog}.{str(bt.get('schema', '')).lower()}.{str(bt['table']).lower()}"]
                            if catalog else [])
        table, why = map_table(cat, vid, [t["name"], dotted], mapping, cands, catalog)
        logical[t["name"].lower()] = table
        if table is None:
            plan.skip(f"table {t['name']}", place, why)
            continue
        plan.tables[t["name"]] = table
        _table(cat, plan, vid, table, t, path, place)
    for i, r in enumerate(doc.get("relationships") or []):
        _relationship(cat, plan, vid, r, logical, path, f"relationships[{i}]")
    _verified(cat, plan, vid, doc.get("verified_queries") or [], logical, path)
    texts = []
    if isinstance(doc.get("custom_instructions"), str) and doc["custom_instructions"].strip():
        texts.append(doc["custom_instructions"].strip())
    for k, v in (doc.get("module_custom_instructions") or {}).items():
        if isinstance(v, str) and v.strip():
            texts.append(f"{k}: {v.strip()}")
    mapped = sorted({t.split(".")[0] for t in logical.values() if t})
    target = catalog or (mapped[0] if len(mapped) == 1 else None)
    if texts and target:
        plan.add(target, "instructions", "instructions", "\n".join(texts), place="custom_instructions")
    elif texts:
        plan.skip("custom_instructions", "custom_instructions", "no single catalog to hold them; pass catalog=")
    return apply(cat, plan, progress=progress, dry_run=dry_run, overwrite=overwrite)


def _table(cat: CatalogAPI, plan: Plan, vid: int, table: str, t: dict[str, Any], file: str, place: str) -> None:
    """A Cortex table entry into `plan`: its description and synonyms, primary key (as the grain),
    dimensions/facts/measures (as column fields), metrics and named filters (as instructions)."""
    if t.get("description"):
        plan.add_table_field(table, "description", str(t["description"]).strip(), place)
    if t.get("synonyms"):
        plan.add_table_field(table, "synonyms", [str(s) for s in t["synonyms"]], place + ".synonyms")
    _primary_key(cat, plan, vid, table, t, place)
    for section, role in (("dimensions", "dimension"), ("time_dimensions", "time"), ("facts", "measure"),
                          ("measures", "measure")):
        for j, d in enumerate(t.get(section) or []):
            _column_entry(cat, plan, vid, table, t, section, role, d, file, f"{place}.{section}[{j}]")
    for j, m in enumerate(t.get("metrics") or []):
        _metric(cat, plan, vid, table, t, m, file, f"{place}.metrics[{j}]")
    _filters(plan, table, t, file, place)


def _primary_key(cat: CatalogAPI, plan: Plan, vid: int, table: str, t: dict[str, Any], place: str) -> None:
    pk = (t.get("primary_key") or {}).get("columns") if isinstance(t.get("primary_key"), dict) else None
    if not pk:
        return
    plan.add_grain(cat, table, list(pk), vid, str(t["name"]), place + ".primary_key")


def _column_entry(cat: CatalogAPI, plan: Plan, vid: int, table: str, t: dict[str, Any], section: str, role: str,
                  d: Any, file: str, dplace: str) -> None:
    """One dimension, time dimension, fact or measure: its column's fields (skipped when its expr
    is not a column)."""
    if not isinstance(d, dict) or not isinstance(d.get("name"), str):
        raise InterchangeError(file, dplace, "needs a name")
    e = _ident(d.get("expr", d["name"]))
    col = plan.column(cat, table, e, vid) if e else None
    if col is None:
        plan.skip(f"{section[:-1]} {t['name']}.{d['name']}", dplace,
                  f"its expr {d.get('expr')!r} is not a column of {table} (semcat has no derived columns)")
        return
    if d.get("description"):
        plan.add_column_field(table, col, "description", str(d["description"]).strip(), dplace)
    if d.get("synonyms"):
        plan.add_column_field(table, col, "synonyms", [str(s) for s in d["synonyms"]], dplace)
    if d.get("sample_values"):
        plan.add_column_field(table, col, "sample_values", list(d["sample_values"]), dplace)
        if d.get("is_enum"):
            plan.add_column_field(table, col, "enum", list(d["sample_values"]), dplace)
    plan.add_column_field(table, col, "role", role, dplace)


def _filters(plan: Plan, table: str, t: dict[str, Any], file: str, place: str) -> None:
    """Named filters have no field of their own: they become the table's instructions."""
    notes = []
    for j, f in enumerate(t.get("filters") or []):
        if not isinstance(f, dict) or not f.get("name") or not f.get("expr"):
            raise InterchangeError(file, f"{place}.filters[{j}]", "a filter needs a name and an expr")
        notes.append(f"named filter {f['name']}: {str(f['expr']).strip()}" +
                     (f" -- {str(f['description']).strip()}" if f.get("description") else ""))
    if notes:
        plan.add_table_field(table, "instructions", "\n".join(notes), place + ".filters")


def _metric(cat: CatalogAPI, plan: Plan, vid: int, table: str, t: dict[str, Any], m: Any, file: str, place: str) -> None:
    import sqlglot
    from sqlglot import exp

    if not isinstance(m, dict) or not m.get("name") or not m.get("expr"):
        raise InterchangeError(file, place, "a metric needs a name and an expr")
    try:
        tree = sqlglot.parse_one(f"SELECT {m['expr']}", read="snowflake")
    except sqlglot.errors.ParseError as e:
        raise InterchangeError(file, place + ".expr", f"does not parse: {str(e).splitlines()[0]}") from None
    for c in tree.find_all(exp.Column):
        if c.table and c.table.lower() != t["name"].lower():
            plan.skip(f"metric {m['name']}", place, f"it uses {c.table}.{c.name}, another logical table")
            return
        c.set("table", None)
        col = plan.column(cat, table, c.name, vid)
        if col is None:
            plan.skip(f"metric {m['name']}", place, f"{c.name!r} is not a column of {table}")
            return
        c.set("this", exp.to_identifier(col))
    expression = tree.expressions[0].sql(dialect="duckdb")
    plan.add(table, "metric", f"metric.{str(m['name']).lower()}",
             {"expression": expression, "filter": None, "time_column": None, "unit": None,
              "description": str(m["description"]).strip() if m.get("description") else None,
              "synonyms": [str(s) for s in m.get("synonyms") or []]}, place=place)


def _relationship(cat: CatalogAPI, plan: Plan, vid: int, r: Any, logical: dict[str, str | None], file: str,
                  place: str) -> None:
    if not isinstance(r, dict):
        raise InterchangeError(file, place, "a relationship must be a mapping")
    for side in ("left_table", "right_table"):
        if str(r.get(side, "")).lower() not in logical:
            raise InterchangeError(file, f"{place}.{side}", f"{r.get(side)!r} names no logical table of the model")
    lt, rt = logical[str(r["left_table"]).lower()], logical[str(r["right_table"]).lower()]
    cols = r.get("relationship_columns") or []
    if not cols:
        raise InterchangeError(file, place, "relationship_columns must list left_column / right_column pairs")
    name = str(r.get("name") or r["right_table"])
    if lt is None or rt is None:
        plan.skip(f"relationship {name}", place, "one of its tables maps to no catalog table")
        return
    pairs = [(plan.column(cat, lt, str(c.get("left_column")), vid), plan.column(cat, rt, str(c.get("right_column")), vid))
             for c in cols if isinstance(c, dict)]
    if len(pairs) != len(cols) or any(a is None or b is None for a, b in pairs):
        plan.skip(f"relationship {name}", place, f"its columns are not all in {lt} / {rt}")
        return
    card = r.get("relationship_type", "many_to_one")
    plan.add(lt, "relationship", f"relationship.{name}",
             {"to": rt, "on": [[a, b] for a, b in pairs], "cardinality": card, "canonical": True, "condition": None},
             columns=[a for a, _ in pairs if a], place=place)


def _verified(cat: CatalogAPI, plan: Plan, vid: int, queries: Any, logical: dict[str, str | None], file: str) -> None:
    import sqlglot
    from sqlglot import exp

    from semantic.annotations import VERIFY_ROW_LIMIT, sql_tables, verified_answer

    if not isinstance(queries, list):
        raise InterchangeError(file, "verified_queries", "must be a list")
    for i, q in enumerate(queries):
        place = f"verified_queries[{i}]"
        if not isinstance(q, dict) or not q.get("question") or not q.get("sql"):
            raise InterchangeError(file, place, "a verified query needs a question and sql")
        label = f"verified query {q.get('name') or q['question']}"
        try:
            tree = sqlglot.parse_one(str(q["sql"]), read="snowflake")
        except sqlglot.errors.ParseError as e:
            raise InterchangeError(file, place + ".sql", f"does not parse: {str(e).splitlines()[0]}") from None
        missing = None
        for tb in tree.find_all(exp.Table):
            name = tb.name.lower()
            if name.startswith("__"):
                if name[2:] not in logical:
                    raise InterchangeError(file, place + ".sql", f"{tb.name} names no logical table of the model")
                target = logical[name[2:]]
                if target is None:
                    missing = name[2:]
                    break
                c_, ns, t_ = target.split(".")
                tb.set("catalog", exp.to_identifier(c_))
                tb.set("db", exp.to_identifier(ns))
                tb.set("this", exp.to_identifier(t_))
        if missing:
            plan.skip(label, place, f"logical table {missing} maps to no catalog table")
            continue
        sql = tree.sql(dialect="duckdb")
        try:
            tables, _cols = sql_tables(cat, sql, vid)
            fp = verified_answer(cat, sql, vid)
        except CatalogError as e:
            plan.skip(label, place, f"it does not run here: {e.message}")
            continue
        if fp is None:
            plan.skip(label, place, f"it returns more than {VERIFY_ROW_LIMIT} rows")
            continue
        question = str(q["question"]).strip()
        qid = hashlib.sha1(f"{question}\n{sql.strip()}".encode()).hexdigest()[:12]
        value = {"question": question, "sql": sql.strip(), "verified_by": str(q.get("verified_by") or plan.author),
                 "verified_at_vid": vid, "result_fingerprint": fp, "tables": tables}
        from semantic.annotations import read_annotations

        prior = next((a.value for a in read_annotations(cat, tables[0], vid) if a.key == f"verified_query.{qid}"), None)
        if isinstance(prior, dict) and prior.get("result_fingerprint") == value["result_fingerprint"]:
            value["verified_at_vid"] = prior.get("verified_at_vid", vid)   # unchanged: keep when it was verified
        for t in tables:
            plan.add(t, "verified_query", f"verified_query.{qid}", value, place=place)
