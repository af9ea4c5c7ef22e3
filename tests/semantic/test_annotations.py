"""annotate / verify_query / describe on both backends (embedded and cc.connect over HTTP):
stored layout, provenance basis, validation errors that write nothing, concurrency with data commits."""

from __future__ import annotations

import pytest

import catalog_core as cc
import semantic as sm
from semantic import errors as se
from semantic.annotations import fingerprint, read_annotations

T = "acme.core.orders"


def orders(lk):
    lk.table(T, [("order_id", "bigint"), ("status", "string"), ("gross_cents", "bigint")], at=0,
             rows={"order_id": [1, 2, 3], "status": ["placed", "shipped", "placed"], "gross_cents": [500, 1200, 300]})


def test_annotate_writes_one_object_per_field_with_provenance(cat, lk):
    orders(lk)
    v = sm.annotate(cat, T, {"description": "one row per order", "grain": {"text": "order", "keys": ["order_id"]},
                             "freshness_sla": "PT26H"}, author="alice", source="agent", confidence=0.8, note="n")
    assert cat.get("/acme/core/orders/_semantic").value == {"obj_type": "semantic"}
    obj = cat.get("/acme/core/orders/_semantic/table.grain")
    assert obj.vid == v
    val = obj.value
    assert (val["obj_type"], val["kind"], val["key"], val["target"]) == ("annotation", "table", "table.grain", T)
    assert val["value"] == {"text": "order", "keys": ["order_id"]}
    p = val["provenance"]
    assert (p["author"], p["source"], p["confidence"], p["note"]) == ("alice", "agent", 0.8, "n")
    b = p["basis"]
    assert b["vid"] == v - 1 and b["schema_id"] == 0 and b["row_count"] == 3
    assert b["columns"] == [{"id": 1, "name": "order_id", "type": "bigint"}]
    assert b["stats"] == {"order_id": {"min": 1, "max": 3, "null_count": 0}}
    assert b["last_data_commit"]["vid"] == 1
    desc = cat.get("/acme/core/orders/_semantic/table.description").value["provenance"]["basis"]
    assert [c["name"] for c in desc["columns"]] == ["order_id", "status", "gross_cents"]  # table-level: all columns


def test_column_namespace_and_catalog_annotations(cat, lk):
    orders(lk)
    sm.annotate(cat, T, {"unit": "cents", "role": "measure", "description": "gross"}, column="gross_cents", author="a")
    sm.annotate(cat, "acme.core", {"instructions": "money is cents"}, author="a")
    sm.annotate(cat, "acme", {"instructions": "fiscal calendar NRF 4-5-4"}, author="a")
    col = cat.get("/acme/core/orders/_semantic/column.3.unit").value
    assert (col["kind"], col["column"], col["column_id"], col["value"]) == ("column", "gross_cents", 3, "cents")
    assert col["provenance"]["basis"]["stats"] == {"gross_cents": {"min": 300, "max": 1200, "null_count": 0}}
    assert cat.get("/acme/core/_semantic/instructions").value["value"] == "money is cents"
    assert [a.key for a in read_annotations(cat, "acme")] == ["instructions"]
    card = sm.describe(cat, T, now=lk.day(0.5))
    gross = next(c for c in card.columns if c.name == "gross_cents")
    assert set(gross.annotations) == {"unit", "role", "description"} and gross.annotations["unit"].value == "cents"


BAD = [
    (lambda c: sm.annotate(c, "acme.core.order", {"description": "x"}, author="a"), se.UnknownTableError,
     "table 'acme.core.order' does not exist at vid 1; did you mean 'acme.core.orders'?"),
    (lambda c: sm.annotate(c, T, {"unit": "x"}, column="gros_cents", author="a"), se.UnknownColumnError,
     "column 'gros_cents' is not a column of acme.core.orders; did you mean 'gross_cents'?"),
    (lambda c: sm.annotate(c, T, {"descripton": "x"}, author="a"), se.InvalidAnnotationError,
     "'descripton' is not a table annotation field; did you mean 'description'?"),
    (lambda c: sm.annotate(c, T, {"role": "metric"}, column="gross_cents", author="a"), se.InvalidAnnotationError,
     "column field 'role' is invalid: role: Input should be 'id', 'dimension', 'measure' or 'time'"),
    (lambda c: sm.annotate(c, T, {"freshness_sla": "26 hours"}, author="a"), se.InvalidAnnotationError,
     "freshness_sla must be an ISO-8601 duration such as 'PT26H'"),
    (lambda c: sm.annotate(c, T, {"grain": {"text": "x", "keys": ["order"]}}, author="a"), se.UnknownColumnError,
     "column 'order' is not a column of acme.core.orders; did you mean 'order_id'?"),
    (lambda c: sm.annotate(c, T, {"deprecated": {"replaced_by": "acme.core.ordrs"}}, author="a"),
     se.UnknownTableError, "did you mean 'acme.core.orders'?"),
    (lambda c: sm.annotate(c, T, {"certified": "yes"}, author="a"), se.InvalidAnnotationError,
     "table field 'certified' is invalid: certified: Input should be a valid boolean"),
    (lambda c: sm.annotate(c, T, {"description": "x"}, author=""), se.InvalidAnnotationError,
     "author must name who wrote the annotation"),
    (lambda c: sm.annotate(c, T, {"description": "x"}, author="a", source="guess"), se.InvalidAnnotationError,
     "source must be one of human, agent, inferred, import, got 'guess'"),
    (lambda c: sm.annotate(c, T, {"description": "x"}, author="a", confidence=1.5), se.InvalidAnnotationError,
     "confidence must be a number from 0 to 1, got 1.5"),
    (lambda c: sm.annotate(c, "acme.core", {"description": "x"}, author="a"), se.InvalidAnnotationError,
     "'description' is not a catalog/namespace annotation field"),
    (lambda c: sm.annotate(c, "acme.nope", {"instructions": "x"}, author="a"), se.UnknownObjectError,
     "'acme.nope' does not exist at vid 1"),
    (lambda c: sm.annotate(c, "acme.core", {"instructions": "x"}, column="a", author="a"), se.InvalidAnnotationError,
     "'acme.core' is a namespace, not a table; only tables have columns"),
    (lambda c: sm.annotate(c, T, {}, author="a"), se.InvalidAnnotationError, "fields must be a non-empty dict"),
    (lambda c: sm.annotate(c, T, {"description": None}, author="a"), se.InvalidAnnotationError,
     "field 'description' is None"),
    (lambda c: sm.annotate(c, T, {"not_for_reporting": {"use_instead": ["acme.core.ordrs"]}}, author="a"),
     se.UnknownTableError, "did you mean 'acme.core.orders'?"),
    (lambda c: sm.annotate(c, T, {"not_for_reporting": {"use_instead": [T]}}, author="a"), se.InvalidAnnotationError,
     "not_for_reporting.use_instead names acme.core.orders itself"),
    (lambda c: sm.annotate(c, T, {"not_for_reporting": "raw"}, author="a"), se.InvalidAnnotationError,
     "table field 'not_for_reporting' is invalid"),
    (lambda c: sm.annotate(c, T, {"additivity": {"kind": "semi"}}, column="gross_cents", author="a"),
     se.InvalidAnnotationError, "additivity.kind: Input should be 'additive', 'semi_additive' or 'non_additive'"),
    (lambda c: sm.annotate(c, T, {"additivity": {"kind": "semi_additive"}}, column="gross_cents", author="a"),
     se.InvalidAnnotationError, "a semi_additive measure names its non_additive_dimension"),
    (lambda c: sm.annotate(c, T, {"additivity": {"kind": "additive", "window": "last"}}, column="gross_cents",
                           author="a"), se.InvalidAnnotationError, "apply only to kind semi_additive"),
    (lambda c: sm.annotate(c, T, {"additivity": {"kind": "semi_additive", "non_additive_dimension": "stat"}},
                           column="gross_cents", author="a"), se.UnknownColumnError, "did you mean 'status'?"),
    (lambda c: sm.annotate(c, T, {"additivity": {"kind": "semi_additive", "non_additive_dimension": "gross_cents"}},
                           column="gross_cents", author="a"), se.InvalidAnnotationError, "names 'gross_cents' itself"),
    (lambda c: sm.annotate(c, T, {"null_when": {"state": "open", "column": "status"}}, column="gross_cents",
                           author="a"), se.InvalidAnnotationError, "give column and values together"),
    (lambda c: sm.annotate(c, T, {"null_when": {"state": "", "column": "status", "values": ["placed"]}},
                           column="gross_cents", author="a"), se.InvalidAnnotationError, "null_when.state"),
    (lambda c: sm.annotate(c, T, {"null_when": {"state": "open", "column": "stauts", "values": ["placed"]}},
                           column="gross_cents", author="a"), se.UnknownColumnError, "did you mean 'status'?"),
    (lambda c: sm.annotate(c, T, {"labels": ["X4", "refunded"]}, column="status", author="a"),
     se.InvalidAnnotationError, "labels"),
    (lambda c: sm.verify_query(c, "q", "SELECT count(*) FROM acme.core.ordrs", author="a"), se.UnknownTableError,
     "the SQL reads 'acme.core.ordrs', which is no table at vid 1; did you mean 'acme.core.orders'?"),
    (lambda c: sm.verify_query(c, "q", "SELECT nope FROM acme.core.orders", author="a"), se.VerifiedQueryError,
     "the query does not run at vid 1"),
    (lambda c: sm.verify_query(c, "q", "SELEC 1", author="a"), se.VerifiedQueryError, "the SQL does not parse"),
]


@pytest.mark.parametrize("call, exc, message", BAD)
def test_validation_errors_name_the_problem_and_write_nothing(cat, lk, call, exc, message):
    orders(lk)
    before = cat.latest_vid
    with pytest.raises(exc) as info:
        call(cat)
    assert message in info.value.message
    assert isinstance(info.value, cc.CatalogError)
    assert cat.latest_vid == before


def test_structured_fields_are_stored_validated(cat, lk):
    """not_for_reporting (table), additivity and null_when (column): stored as validated values, the
    columns they name by their schema names; describe shows them among the column's annotations."""
    orders(lk)
    lk.table("acme.core.orders_raw", [("order_id", "bigint")], at=0, rows={"order_id": [1]})
    sm.annotate(cat, "acme.core.orders_raw", {"not_for_reporting": {"reason": "raw feed", "use_instead": [T]}},
                author="a")
    sm.annotate(cat, T, {"additivity": {"kind": "semi_additive", "non_additive_dimension": "order_id"},
                         "null_when": {"state": "unpaid", "column": "status", "values": ["placed"]}},
                column="gross_cents", author="a")
    nfr = cat.get("/acme/core/orders_raw/_semantic/table.not_for_reporting").value["value"]
    assert nfr == {"reason": "raw feed", "use_instead": [T]}
    add = cat.get("/acme/core/orders/_semantic/column.3.additivity").value["value"]
    assert add == {"kind": "semi_additive", "non_additive_dimension": "order_id", "window": "last"}
    nw = cat.get("/acme/core/orders/_semantic/column.3.null_when").value["value"]
    assert nw == {"state": "unpaid", "column": "status", "values": ["placed"]}
    card = sm.describe(cat, T, now=lk.day(0.5))
    gross = next(c for c in card.columns if c.name == "gross_cents")
    assert {"additivity", "null_when"} <= set(gross.annotations)


def test_did_you_mean_is_in_details(cat, lk):
    orders(lk)
    with pytest.raises(se.UnknownColumnError) as info:
        sm.annotate(cat, T, {"unit": "x"}, column="stauts", author="a")
    assert info.value.details["did_you_mean"] == ["status"]
    assert isinstance(info.value, cc.errors.InvalidValueError)


def test_verify_query_stores_the_fingerprint_on_every_table_it_reads(cat, lk):
    orders(lk)
    lk.table("acme.core.items", [("order_id", "bigint"), ("qty", "int")], at=0,
             rows={"order_id": [1, 1, 2], "qty": [1, 2, 5]})
    sql = ("SELECT o.status, sum(i.qty) AS units FROM acme.core.orders o JOIN acme.core.items i "
           "ON o.order_id = i.order_id GROUP BY o.status")
    v = sm.verify_query(cat, "units by status", sql, author="alice")
    res = cc.run_sql(cat, sql)
    for t in (T, "acme.core.items"):
        (a,) = [x for x in read_annotations(cat, t) if x.kind == "verified_query"]
        assert a.vid == v and a.value["result_fingerprint"] == fingerprint(res.rows)
        assert a.value["tables"] == [T, "acme.core.items"] and a.value["verified_at_vid"] == v - 1
    (a,) = [x for x in read_annotations(cat, T) if x.kind == "verified_query"]
    assert [c.name for c in a.provenance.basis.columns] == ["order_id", "status"]
    assert sm.describe(cat, "acme.core.items").verified_questions[0].question == "units by status"


def test_fingerprint_ignores_row_order_but_not_values():
    assert fingerprint([[1, "a"], [2, "b"]]) == fingerprint([[2, "b"], [1, "a"]])
    assert fingerprint([[1, "a"], [2, "b"]]) != fingerprint([[1, "a"], [3, "b"]])
    assert fingerprint([[0.1 + 0.2]]) == fingerprint([[0.3]])


def test_annotation_commit_never_conflicts_with_a_concurrent_data_commit(cat, lk):
    """A data commit that read the table the way the Spark bridge does (its files, a schema-id
    guard) and annotation commits in between: both land, and the stats hold the data commit's merge."""
    orders(lk)
    txn = cat.transaction(author="etl", message="load")
    txn.query('/[obj_id = "acme"]/[obj_id = "core"]/[obj_id = "orders"]/[obj_type = "file"]')
    txn.query('/[obj_id = "acme"]/[obj_id = "core"]/[obj_id = "orders" and schema.schema_id != 0]')
    txn.add("/acme/core/orders/f-extra", {"obj_type": "file", "path": "/nowhere.parquet", "row_count": 10,
                                          "columns": {}}, leaf=True)
    txn.merge("/acme/core/orders", {"stats": {"row_count": {"op": "+", "val": 10}}})
    va = sm.annotate(cat, T, {"description": "orders"}, author="alice")
    sm.annotate(cat, T, {"unit": "cents"}, column="gross_cents", author="bob")
    vd = txn.commit()
    assert vd > va
    assert cat.get("/acme/core/orders").value["stats"]["row_count"] == 13
    assert {a.key for a in read_annotations(cat, T)} == {"table.description", "column.3.unit"}


def test_describe_card(cat, lk):
    orders(lk)
    sm.annotate(cat, T, {"description": "orders", "deprecated": {"reason": "old", "replaced_by": T}},
                author="alice", time=lk.day(1))
    lk.append(T, {"order_id": [4], "status": ["placed"], "gross_cents": [10]}, at=2)
    lk.append(T, {"order_id": [5], "status": ["placed"], "gross_cents": [10]}, at=3)
    card = sm.describe(cat, T, now=lk.day(3))
    assert card.name == T and [c.name for c in card.columns] == ["order_id", "status", "gross_cents"]
    d = card.annotations["description"]
    assert (d.author, d.age_commits, d.age_seconds) == ("alice", 2, 2 * 86400)
    assert card.stats.row_count == 5 and card.freshness.last_data_commit.vid == cat.latest_vid
    assert card.deprecation.successor == T
    assert [f.reason for f in card.findings] == ["deprecated_but_written"] and card.status == "stale"
    with pytest.raises(se.UnknownTableError, match="did you mean"):
        sm.describe(cat, "acme.core.ordrs")
