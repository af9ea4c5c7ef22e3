"""OSI YAML: export then import is lossless (every annotation kind, the non-OSI parts through the
SEMCAT custom_extensions entry), re-import writes nothing, a hand-written OSI file in the spec's
shape imports, and bad files name the place and write nothing."""

from __future__ import annotations

import pytest
import yaml

import semantic as sm
from semantic.annotations import read_annotations
from semantic.interop import InterchangeError

ORD, CUST, OLD = "acme.core.orders", "acme.core.customers", "acme.legacy.orders_v1"


def lake(lk):
    lk.table(CUST, [("customer_id", "bigint"), ("tier", "string"), ("is_current", "boolean")],
             rows={"customer_id": [1, 2], "tier": ["gold", "none"], "is_current": [True, True]})
    lk.table(ORD, [("order_id", "bigint"), ("customer_id", "bigint"), ("status", "string"),
                   ("amount_cents", "bigint"), ("order_date", "date")],
             rows={"order_id": [1, 2], "customer_id": [1, 2], "status": ["placed", "shipped"],
                   "amount_cents": [100, 250], "order_date": ["2024-11-11", "2024-11-12"]})
    lk.table(OLD, [("order_id", "bigint"), ("total", "bigint")])


def annotate_everything(cat):
    a = {"author": "alice"}
    sm.annotate(cat, "acme", {"instructions": "money is cents"}, **a)
    sm.annotate(cat, "acme.core", {"instructions": "core facts"}, **a)
    sm.annotate(cat, ORD, {"description": "one row per order", "grain": {"text": "order", "keys": ["order_id"]},
                           "owner": "sales", "tags": ["core"], "synonyms": ["purchases"], "freshness_sla": "PT26H",
                           "certified": True, "instructions": "exclude cancelled"}, **a)
    sm.annotate(cat, ORD, {"description": "total", "unit": "cents", "role": "measure", "synonyms": ["amount"]},
                column="amount_cents", **a)
    sm.annotate(cat, ORD, {"enum": ["placed", "shipped"], "sample_values": ["placed"], "role": "dimension"},
                column="status", **a)
    sm.annotate(cat, ORD, {"role": "time"}, column="order_date", **a)
    sm.annotate(cat, OLD, {"deprecated": {"reason": "old", "replaced_by": ORD, "since": "2025-01-09"}}, **a)
    sm.relate(cat, ORD, CUST, on=[("customer_id", "customer_id")], condition="is_current", **a)
    sm.define_metric(cat, ORD, "revenue", expression="sum(amount_cents) / 100.0", filter="status <> 'cancelled'",
                     time_column="order_date", unit="USD", description="net", synonyms=["sales"], **a)
    sm.verify_query(cat, "how many orders", "SELECT count(*) FROM acme.core.orders", **a)


def values(cat):
    out = {}
    for t in ("acme", "acme.core", ORD, CUST, OLD):
        for a in read_annotations(cat, t):
            out[(t, a.key)] = a.value
    return out


def test_export_then_import_is_lossless_and_idempotent(cat, lk, tmp_path):
    lake(lk)
    annotate_everything(cat)
    before = values(cat)
    path = str(tmp_path / "acme.osi.yaml")
    doc = sm.export_osi(cat, path, catalog="acme")
    model = doc["semantic_model"][0]
    assert {d["name"] for d in model["datasets"]} == {"orders", "customers", "orders_v1"}
    orders = next(d for d in model["datasets"] if d["name"] == "orders")
    assert orders["source"] == ORD and orders["primary_key"] == ["order_id"]
    assert orders["ai_context"] == {"synonyms": ["purchases"], "instructions": "exclude cancelled"}
    assert model["relationships"][0]["from_columns"] == ["customer_id"]
    assert model["metrics"][0]["expression"] == {"dialects": [{"dialect": "ANSI_SQL",
                                                               "expression": "sum(amount_cents) / 100.0"}]}
    assert yaml.safe_load(open(path)) == doc
    # nothing to do when the catalog already holds it
    r = sm.import_osi(cat, path)
    assert r.vid is None and r.written == [] and r.unchanged == len(before)
    # drop every annotation, import, compare
    with cat.transaction(author="t") as txn:
        for t in ("acme", "acme.core", ORD, CUST, OLD):
            for a in read_annotations(cat, t):
                txn.remove(a.path)
    assert values(cat) == {}
    r = sm.import_osi(cat, path)
    assert r.unmapped == [] and r.vid is not None
    assert values(cat) == before
    a = read_annotations(cat, ORD)[0]
    assert a.provenance.source == "import" and r.sha256 in a.provenance.note


FOREIGN = """
version: 0.2.0.dev0
semantic_model:
  - name: shop
    ai_context: Prefer certified datasets.
    datasets:
      - name: orders
        source: warehouse.core.orders
        primary_key: [order_id]
        description: Orders.
        ai_context:
          synonyms: [bookings]
        fields:
          - name: order_status
            expression:
              dialects:
                - dialect: ANSI_SQL
                  expression: status
            dimension: {is_time: false}
            description: Status.
            ai_context:
              synonyms: [state]
              examples: [placed, shipped]
          - name: full_label
            expression:
              dialects:
                - dialect: ANSI_SQL
                  expression: "status || '-' || order_id"
      - name: customers
        source: warehouse.core.customers
      - name: clicks
        source: warehouse.web.clicks
    relationships:
      - name: orders_to_customers
        from: orders
        to: customers
        from_columns: [customer_id]
        to_columns: [customer_id]
    metrics:
      - name: total_amount
        expression:
          dialects:
            - dialect: ANSI_SQL
              expression: SUM(orders.amount_cents)
        description: Sum of amounts.
        ai_context:
          synonyms: [gross]
      - name: orders_per_customer
        expression:
          dialects:
            - dialect: ANSI_SQL
              expression: COUNT(orders.order_id) / COUNT(DISTINCT customers.customer_id)
"""


def test_a_foreign_osi_file_imports_and_lists_what_it_cannot_map(cat, lk, tmp_path):
    lake(lk)
    p = tmp_path / "shop.yaml"
    p.write_text(FOREIGN)
    r = sm.import_osi(cat, str(p), catalog="acme")
    v = values(cat)
    assert v[("acme", "instructions")] == "Prefer certified datasets."
    assert v[(ORD, "table.description")] == "Orders."
    assert v[(ORD, "table.grain")] == {"text": "one row per order_id", "keys": ["order_id"]}
    assert v[(ORD, "table.synonyms")] == ["bookings"]
    assert v[(ORD, "column.3.synonyms")] == ["state"] and v[(ORD, "column.3.sample_values")] == ["placed", "shipped"]
    assert v[(ORD, "column.3.role")] == "dimension"
    assert v[(ORD, "relationship.customers")]["on"] == [["customer_id", "customer_id"]]
    m = v[(ORD, "metric.total_amount")]
    assert (m["expression"], m["synonyms"]) == ("SUM(amount_cents)", ["gross"])
    assert sm.metric_sql(cat, "total_amount").startswith("SELECT SUM(")
    items = {u.item: u.reason for u in r.unmapped}
    assert "dataset clicks" in items and "field orders.full_label" in items
    assert "not tied to one dataset" in items["metric orders_per_customer"]


@pytest.mark.parametrize("edit, message", [
    (lambda s: s.replace("primary_key: [order_id]", "primary_key: [order_id"), r"shop.yaml, line \d+, column \d+: malformed YAML"),
    (lambda s: s.replace("to: customers", "to: clients"),
     r"relationships\[0\].to: 'clients' names no dataset of the model"),
    (lambda s: s.replace("SUM(orders.amount_cents)", "SUM(sales.amount_cents)"),
     r"metrics\[0\].expression: 'sales' names no dataset"),
    (lambda s: "just text", "an OSI file is a mapping"),
])
def test_bad_osi_files_name_the_place_and_write_nothing(cat, lk, tmp_path, edit, message):
    lake(lk)
    vid = cat.resolve(None)
    p = tmp_path / "shop.yaml"
    p.write_text(edit(FOREIGN))
    with pytest.raises(InterchangeError, match=message):
        sm.import_osi(cat, str(p), catalog="acme")
    assert cat.resolve(None) == vid


def test_cli_import_and_export(tmp_path):
    """`semcat export osi` then `semcat import osi` (twice: the second writes nothing), and a bad file's
    message on the command line."""
    import os
    import subprocess
    import sys

    import catalog_core as cc
    from eval.fixtures.lakes import LakeBuilder

    data = str(tmp_path / "data")
    cat = cc.Catalog.open(data)
    lake(LakeBuilder(cat, tmp_path / "files"))
    annotate_everything(cat)
    cat.close()
    env = {**os.environ, "PYTHONPATH": os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", "")}

    def semcat(*args):
        return subprocess.run([sys.executable, "-m", "mcp_server.cli", *args], capture_output=True, text=True,
                              env=env, timeout=300)

    out = str(tmp_path / "acme.yaml")
    r = semcat("export", "osi", out, "--catalog", "acme", "--data", data)
    assert r.returncode == 0, r.stderr
    assert "3 datasets, 1 relationships, 1 metrics" in r.stdout
    r = semcat("import", "osi", out, "--data", data)
    assert r.returncode == 0, r.stderr
    assert "wrote 0 annotations" in r.stdout and "unchanged" in r.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text(FOREIGN.replace("to: customers", "to: clients"))
    r = semcat("import", "osi", str(bad), "--data", data, "--catalog", "acme")
    assert r.returncode != 0 and "relationships[0].to: 'clients' names no dataset" in r.stderr
    # what could not be mapped names this command's flags, not the Python arguments
    foreign = tmp_path / "shop.yaml"
    foreign.write_text(FOREIGN)
    r = semcat("import", "osi", str(foreign), "--data", data, "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "pass --catalog CATALOG" in r.stdout and "catalog=" not in r.stdout and "mapping=" not in r.stdout, r.stdout
