"""sm.import_dbt from a manifest made by real dbt (`dbt parse`, dbt-core + dbt-duckdb) of the project
in fixtures/dbt_project, and from the same project's schema.yml files: every mapping, unmapped items
listed, idempotence, provenance, bad inputs that name the file and place and write nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

import semantic as sm
from semantic.annotations import read_annotations
from semantic.interop import InterchangeError

PROJECT = os.path.join(os.path.dirname(__file__), "fixtures", "dbt_project")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DBT = os.environ.get("SEMCAT_DBT") or os.path.join(ROOT, ".venv-dbt", "bin", "dbt")
CUST, ORD, ITEMS, LEG, EV = ("acme.core.customers", "acme.core.orders", "acme.core.order_items",
                             "acme.core.legacy_orders", "acme.raw.web_events")


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    out = tmp_path_factory.mktemp("dbt")
    proj = out / "project"
    shutil.copytree(PROJECT, proj)
    env = {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DO_NOT_TRACK": "1"}
    assert os.path.exists(DBT), (f"no dbt at {DBT}: `make test` installs dbt-core and dbt-duckdb into .venv-dbt "
                                 "(its own environment: dbt pins versions the project does not), or set SEMCAT_DBT")
    r = subprocess.run([DBT, "parse", "--project-dir", str(proj), "--profiles-dir",
                        str(proj), "--target-path", str(out / "target"), "--log-path", str(out / "logs")],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return str(out / "target" / "manifest.json")


def lake(lk):
    lk.table(CUST, [("customer_id", "bigint"), ("tier", "string"), ("region", "string")])
    lk.table(ORD, [("order_id", "bigint"), ("customer_id", "bigint"), ("status", "string"), ("amount_cents", "bigint"),
                   ("order_date", "date")])
    lk.table(ITEMS, [("order_id", "bigint"), ("line_no", "int"), ("quantity", "int"), ("price_cents", "bigint"),
                     ("order_date", "date")])
    lk.table(LEG, [("order_id", "bigint"), ("total", "bigint")])
    lk.table(EV, [("event_id", "bigint"), ("page", "string")])


def anns(cat, table):
    return {a.key if a.column is None else f"{a.column}.{a.field}": a for a in read_annotations(cat, table)}


def test_manifest_import_maps_docs_tests_and_metrics(cat, lk, manifest):
    lake(lk)
    r = sm.import_dbt(cat, manifest, catalog="acme")
    assert r.vid is not None and r.unchanged == 0
    c, o, i, leg, ev = (anns(cat, t) for t in (CUST, ORD, ITEMS, LEG, EV))
    assert c["table.description"].value == "One row per customer."
    assert c["table.owner"].value == "crm-team" and c["table.tags"].value == ["core", "pii"]
    assert c["customer_id.description"].value == "The customer's id."
    assert c["table.grain"].value == {"text": "one row per customer_id", "keys": ["customer_id"]}   # unique + not_null
    assert c["tier.enum"].value == ["none", "silver", "gold"]                                        # accepted_values
    assert o["relationship.customers"].value == {"to": CUST, "on": [["customer_id", "customer_id"]],
                                                 "cardinality": "many_to_one", "canonical": True, "condition": None}
    assert i["relationship.orders"].value["to"] == ORD
    assert o["table.owner"].value == "sales-analytics"
    assert leg["table.deprecated"].value == {"reason": "dbt deprecation_date 2025-01-09", "replaced_by": None,
                                             "since": "2025-01-09"}
    assert ev["table.freshness_sla"].value == "P1D"                         # error_after wins over warn_after
    assert ev["table.description"].value.startswith("One row per click event")
    # MetricFlow: simple metrics, a ratio, time dimension, roles
    assert o["metric.revenue"].value == {"expression": "sum(amount_cents)", "filter": None, "time_column": "order_date",
                                         "unit": None, "description": "Sum of order totals in cents.",
                                         "synonyms": []}
    assert o["metric.orders_placed"].value["expression"] == "count(DISTINCT order_id)"
    assert o["metric.orders_placed"].value["synonyms"] == ["Orders"]
    assert o["metric.revenue_per_order"].value["expression"] == \
        "sum(amount_cents) * 1.0 / NULLIF(count(DISTINCT order_id), 0)"
    assert i["metric.units_sold"].value["expression"] == "sum(quantity)"
    assert (o["order_date.role"].value, o["status.role"].value, o["amount_cents.role"].value) == \
        ("time", "dimension", "measure")
    # the stored metric works with the metric layer
    assert sm.metric_sql(cat, "revenue") == 'SELECT SUM("orders"."amount_cents") AS "revenue" FROM "acme"."core"."orders" AS "orders"'
    # provenance
    p = o["table.description"].provenance
    assert p.source == "import" and r.sha256 in p.note and manifest in p.note
    # listed, not dropped
    unmapped = {u.item: u for u in r.unmapped}
    assert {"model model.shop.stg_events", "model model.shop.metricflow_time_spine", "source source.shop.raw.pos_lines",
            "metric revenue_growth", "entity items_sm.item"} <= set(unmapped)
    assert "derived" in unmapped["metric revenue_growth"].reason
    assert r.tables["model.shop.orders"] == ORD
    # lineage: a model's depends_on becomes its table's inputs (source dbt), once
    from catalog_core.lake import Lineage

    assert r.lineage == {LEG: [ORD]}
    lin = Lineage.from_raw(cat.get("/acme/core/legacy_orders").value)
    assert lin is not None and lin.source == "dbt" and list(lin.inputs) == [ORD] and lin.inputs[ORD] <= r.vid
    assert sm.import_dbt(cat, manifest, catalog="acme").lineage == {}


def test_reimport_writes_nothing_and_schema_yml_gives_the_same(cat, lk, manifest):
    lake(lk)
    first = sm.import_dbt(cat, manifest, catalog="acme")
    vid = cat.resolve(None)
    again = sm.import_dbt(cat, manifest, catalog="acme")
    assert again.vid is None and again.written == [] and again.unchanged == len(first.written)
    yml = sm.import_dbt(cat, PROJECT, catalog="acme")          # no manifest: models/**/*.yml
    assert yml.vid is None and yml.written == [] and yml.unchanged == len(first.written)
    assert cat.resolve(None) == vid
    # a changed input writes only what changed
    m = json.loads(open(manifest).read())
    m["nodes"]["model.shop.orders"]["description"] = "One row per order, deduplicated."
    changed = os.path.join(os.path.dirname(manifest), "changed.json")
    with open(changed, "w") as f:
        json.dump(m, f)
    r = sm.import_dbt(cat, changed, catalog="acme")
    assert r.written == [f"{ORD}:table.description"]
    assert anns(cat, ORD)["table.description"].provenance.note.endswith(r.sha256)


def test_mapping_option_and_progress(cat, lk, manifest):
    lake(lk)
    lk.table("acme.stage.events_clean", [("event_id", "bigint"), ("page", "string")])
    seen = []
    r = sm.import_dbt(cat, manifest, catalog="acme", mapping={"stg_events": "acme.stage.events_clean"},
                      progress=lambda what, done, total: seen.append((what, done, total)))
    assert r.tables["model.shop.stg_events"] == "acme.stage.events_clean"
    assert anns(cat, "acme.stage.events_clean")["table.description"].value == "Staged web events (no lake table)."
    assert seen and seen[-1][0] == "write"
    with pytest.raises(InterchangeError, match="mapping, 'stg_events': 'acme.stage.nope' is no table"):
        sm.import_dbt(cat, manifest, catalog="acme", mapping={"stg_events": "acme.stage.nope"})


def test_bad_inputs_name_the_file_and_place_and_write_nothing(cat, lk, tmp_path, manifest):
    lake(lk)
    vid = cat.resolve(None)
    bad = tmp_path / "manifest.json"
    bad.write_text('{"nodes": {"a": 1,}}')
    with pytest.raises(InterchangeError, match=r"manifest.json, line 1, column 19: malformed JSON"):
        sm.import_dbt(cat, str(bad), catalog="acme")
    bad.write_text('{"metadata": {}}')
    with pytest.raises(InterchangeError, match="not a dbt manifest"):
        sm.import_dbt(cat, str(bad), catalog="acme")
    # a schema.yml test referring to a model the project does not define
    proj = tmp_path / "proj"
    shutil.copytree(PROJECT, proj)
    yml = proj / "models" / "marts" / "schema.yml"
    yml.write_text(yml.read_text().replace("to: ref('customers')", "to: ref('clients')"))
    with pytest.raises(InterchangeError, match=r"schema.yml, models\[1\] \(orders\).columns\[1\].to: "
                                               r"ref\('clients'\) names no model"):
        sm.import_dbt(cat, str(proj), catalog="acme")
    yml.write_text("models:\n  - name: orders\n    columns: [\n")
    with pytest.raises(InterchangeError, match=r"schema.yml, line \d+, column \d+: malformed YAML"):
        sm.import_dbt(cat, str(proj), catalog="acme")
    m = json.loads(open(manifest).read())
    m["metrics"]["metric.shop.revenue"]["type_params"]["measure"]["name"] = "no_such_measure"
    bad.write_text(json.dumps(m))
    with pytest.raises(InterchangeError, match=r'metrics\["metric.shop.revenue"\].type_params.measure: .*no_such_measure'):
        sm.import_dbt(cat, str(bad), catalog="acme")
    assert cat.resolve(None) == vid
    assert all(read_annotations(cat, t) == [] for t in (CUST, ORD, ITEMS, LEG, EV))
