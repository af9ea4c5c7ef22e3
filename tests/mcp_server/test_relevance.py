"""Warnings name only what an answer rests on, one per underlying change (mcp_server.mcp.relevance)."""

from mcp_server.mcp.relevance import Subject, Use, dedupe, relevant
from semantic.annotations import column_refs

ORD, S, C = "acme.core.fct_orders", "acme.core.dim_store", "acme.core.dim_customer"


def test_column_relationship_metric_and_table_subjects():
    items = [(Subject(ORD), "table-level"),
             (Subject(ORD, "column", column="status"), "status"),
             (Subject(ORD, "column", column="channel"), "channel"),
             (Subject(ORD, "relationship", related=C), "to customers"),
             (Subject(ORD, "relationship", related=S), "to stores"),
             (Subject(ORD, "metric", name="orders"), "metric orders"),
             (Subject(ORD, "verified_query"), "a stored query"),
             (Subject(C), "customers table-level")]
    use = Use(frozenset({ORD, S}), frozenset({"status", "store_id"}))
    assert relevant(items, use) == ["table-level", "status", "to stores"]
    star = Use(frozenset({ORD}), None)
    assert relevant(items, star) == ["table-level", "status", "channel"]
    metric = Use(frozenset({ORD}), frozenset({"status"}), metric="orders", uses_metrics=True)
    assert relevant(items, metric) == ["table-level", "status", "metric orders"]


def test_one_warning_per_underlying_change():
    items = [(Subject(ORD, "column", column="amt", change=122), "column_renamed"),
             (Subject(ORD, "column", column="amt", change=122), "unit_drift"),
             (Subject(ORD, "column", column="amt", change=130), "later change"),
             (Subject(ORD, "column", column="tax", change=122), "other column"),
             (Subject(ORD, change=None), "a"), (Subject(ORD, change=None), "b")]
    out = [w for _s, w in dedupe(items, lambda kept, other: f"{kept}+{other}")]
    assert out == ["column_renamed+unit_drift", "later change", "other column", "a", "b"]


def test_column_refs_sees_qualified_unqualified_using_and_star():
    assert column_refs("SELECT o.status, count(*) FROM t o JOIN s USING (store_id) WHERE amt > 0") == (
        {"status", "store_id", "amt"}, False)
    assert column_refs("SELECT * FROM t")[1] and column_refs("SELECT s.* FROM t s")[1]
    assert not column_refs("SELECT count(*) FROM t")[1]
