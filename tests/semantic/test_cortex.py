"""Cortex Analyst semantic model YAML import: tables, dimensions, time dimensions, facts, metrics,
filters, relationships, verified queries (logical names rewritten, run and fingerprinted), custom
instructions; idempotence; unmapped items listed; bad files name the place and write nothing."""

from __future__ import annotations

import pytest

import semantic as sm
from semantic.annotations import read_annotations
from semantic.interop import InterchangeError

ORD, CUST = "acme.core.orders", "acme.core.customers"

MODEL = """
name: shop
description: The shop's orders.
tables:
  - name: orders
    description: One row per order.
    base_table: {database: ACME, schema: CORE, table: ORDERS}
    synonyms: [purchases]
    primary_key: {columns: [order_id]}
    dimensions:
      - name: status
        expr: status
        data_type: VARCHAR
        description: Order status.
        synonyms: [state]
        sample_values: [placed, shipped]
        is_enum: true
      - name: status_label
        expr: UPPER(status)
        data_type: VARCHAR
    time_dimensions:
      - name: order_date
        expr: order_date
        data_type: DATE
        description: Day of the order.
    facts:
      - name: amount
        expr: amount_cents
        data_type: NUMBER
        description: Amount in cents.
    metrics:
      - name: total_amount
        expr: SUM(orders.amount_cents)
        description: Sum of amounts.
        synonyms: [gross]
      - name: amount_per_customer
        expr: SUM(amount_cents) / COUNT(DISTINCT customers.customer_id)
    filters:
      - name: not_cancelled
        expr: status <> 'cancelled'
        description: Live orders only.
  - name: customers
    base_table: {database: ACME, schema: CORE, table: CUSTOMERS}
    primary_key: {columns: [customer_id]}
    dimensions:
      - name: tier
        expr: tier
        description: Loyalty tier.
  - name: returns
    base_table: {database: ACME, schema: CORE, table: RETURNS}
relationships:
  - name: orders_to_customers
    left_table: orders
    right_table: customers
    relationship_columns:
      - {left_column: customer_id, right_column: customer_id}
    join_type: left_outer
    relationship_type: many_to_one
verified_queries:
  - name: orders by status
    question: How many orders per status?
    sql: SELECT status, COUNT(*) AS n FROM __orders GROUP BY status
    verified_at: 1714497970
    verified_by: jane
  - name: returns
    question: How many returns?
    sql: SELECT COUNT(*) FROM __returns
custom_instructions: Amounts are in cents.
"""


def lake(lk):
    lk.table(CUST, [("customer_id", "bigint"), ("tier", "string")], rows={"customer_id": [1, 2], "tier": ["gold", "none"]})
    lk.table(ORD, [("order_id", "bigint"), ("customer_id", "bigint"), ("status", "string"), ("amount_cents", "bigint"),
                   ("order_date", "date")],
             rows={"order_id": [1, 2, 3], "customer_id": [1, 2, 2], "status": ["placed", "shipped", "placed"],
                   "amount_cents": [100, 250, 50], "order_date": ["2024-11-11"] * 3})


def values(cat, t):
    return {a.key: a.value for a in read_annotations(cat, t)}


def test_cortex_import_maps_every_section(cat, lk, tmp_path):
    lake(lk)
    p = tmp_path / "shop.yaml"
    p.write_text(MODEL)
    r = sm.import_cortex(cat, str(p), catalog="acme")
    o, c = values(cat, ORD), values(cat, CUST)
    assert o["table.description"] == "One row per order." and o["table.synonyms"] == ["purchases"]
    assert o["table.grain"] == {"text": "one row per order_id", "keys": ["order_id"]}
    assert (o["column.3.description"], o["column.3.synonyms"], o["column.3.enum"], o["column.3.role"]) == \
        ("Order status.", ["state"], ["placed", "shipped"], "dimension")
    assert o["column.5.role"] == "time" and o["column.4.role"] == "measure"
    assert o["column.4.description"] == "Amount in cents."
    assert o["metric.total_amount"]["expression"] == "SUM(amount_cents)"
    assert o["metric.total_amount"]["synonyms"] == ["gross"]
    assert o["table.instructions"] == "named filter not_cancelled: status <> 'cancelled' -- Live orders only."
    assert o["relationship.orders_to_customers"] == {"to": CUST, "on": [["customer_id", "customer_id"]],
                                                     "cardinality": "many_to_one", "canonical": True, "condition": None}
    assert c["column.2.description"] == "Loyalty tier."
    vq = next(v for k, v in o.items() if k.startswith("verified_query."))
    assert vq["sql"] == 'SELECT status, COUNT(*) AS n FROM acme.core.orders GROUP BY status'
    assert vq["verified_by"] == "jane" and vq["tables"] == [ORD]
    assert values(cat, "acme")["instructions"] == "Amounts are in cents."
    items = {u.item: u.reason for u in r.unmapped}
    assert "table returns" in items and "dimension orders.status_label" in items
    assert "another logical table" in items["metric amount_per_customer"]
    assert "maps to no catalog table" in items["verified query returns"]
    assert sm.metric_sql(cat, "total_amount").startswith("SELECT SUM(")
    # idempotent, provenance
    again = sm.import_cortex(cat, str(p), catalog="acme")
    assert again.vid is None and again.unchanged == len(r.written)
    prov = read_annotations(cat, ORD)[0].provenance
    assert prov.source == "import" and prov.note.endswith("sha256:" + r.sha256)


@pytest.mark.parametrize("edit, message", [
    (lambda s: s.replace("tables:\n", "tables: [\n", 1), r"shop.yaml, line \d+, column \d+: malformed YAML"),
    (lambda s: s.replace("right_table: customers", "right_table: clients"),
     r"relationships\[0\].right_table: 'clients' names no logical table"),
    (lambda s: s.replace("FROM __orders", "FROM __sales"), r"verified_queries\[0\].sql: __sales names no logical table"),
    (lambda s: "tables: 3", "a mapping with a tables list"),
])
def test_bad_cortex_files_name_the_place_and_write_nothing(cat, lk, tmp_path, edit, message):
    lake(lk)
    vid = cat.resolve(None)
    p = tmp_path / "shop.yaml"
    p.write_text(edit(MODEL))
    with pytest.raises(InterchangeError, match=message):
        sm.import_cortex(cat, str(p), catalog="acme")
    assert cat.resolve(None) == vid
