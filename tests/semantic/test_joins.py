"""relate (validation, storage layout) and join_path (canonical first, conditions, fan-out,
depth="data" checks) on a small Parquet lake, against the embedded and the HTTP catalog."""

from __future__ import annotations

import pytest

import catalog_core as cc
import semantic as sm
from catalog_core import lake
from catalog_core.errors import InvalidValueError
from eval.fixtures.lake_joins import BACKENDS, T, shop
from semantic import errors as se


@pytest.fixture(scope="module", params=BACKENDS)
def sh(request, tmp_path_factory):
    with shop(request.param, str(tmp_path_factory.mktemp("joins"))) as s:
        yield s


@pytest.fixture
def fresh(tmp_path):
    """An embedded lake without relationships (for tests that change them)."""
    with shop("embedded", str(tmp_path), related=False) as s:
        yield s


# ---------------------------------------------------------------- relate: validation

@pytest.mark.parametrize("kwargs, exc, words", [
    (dict(from_table=T("fct_order"), to_table=T("fct_orders"), on=[("order_id", "order_id")]),
     se.UnknownTableError, ["'acme.core.fct_order' does not exist", "did you mean 'acme.core.fct_orders'"]),
    (dict(from_table="fct_order_items", to_table=T("fct_orders"), on=[("order_id", "order_id")]),
     InvalidValueError, ["must be a dotted name", "did you mean 'acme.core.fct_order_items'"]),
    (dict(from_table=T("fct_order_items"), to_table=T("dim_prodcut"), on=["product_id"]),
     se.UnknownTableError, ["to_table 'acme.core.dim_prodcut' does not exist", "'acme.core.dim_product'"]),
    (dict(from_table=T("fct_order_items"), to_table=T("fct_orders"), on=[("orderid", "order_id")]),
     se.UnknownColumnError, ["from column 'orderid' is not a column of acme.core.fct_order_items",
                         "did you mean 'order_id'"]),
    (dict(from_table=T("fct_order_items"), to_table=T("fct_orders"), on=[("order_id", "order_no")]),
     se.UnknownColumnError, ["to column 'order_no' is not a column of acme.core.fct_orders", "(its columns: "]),
    (dict(from_table=T("legacy_sales"), to_table=T("dim_store"), on=[("store_code", "store_id")]),
     se.InvalidAnnotationError, ["cannot join acme.core.legacy_sales.store_code (string) to acme.core.dim_store.store_id (int)",
                         "text and number values never compare equal"]),
    (dict(from_table=T("fct_orders"), to_table=T("dim_date"), on=[("order_ts_utc", "date")]),
     se.InvalidAnnotationError, ["timestamp and date values never compare equal"]),
    (dict(from_table=T("fct_orders"), to_table=T("dim_store"), on=["store_id"], cardinality="many-to-one"),
     se.InvalidAnnotationError, ["cardinality must be one of many_to_one, one_to_one, one_to_many",
                         "did you mean 'many_to_one'"]),
    (dict(from_table=T("fct_orders"), to_table=T("dim_customer"), on=["customer_id"], condition="is_curent"),
     se.UnknownColumnError, ["'is_curent' is not a column of acme.core.dim_customer or acme.core.fct_orders",
                         "did you mean 'is_current'", "(line 1, column 1)"]),
    (dict(from_table=T("fct_orders"), to_table=T("dim_customer"), on=["customer_id"], condition="is_current AND"),
     se.InvalidExpressionError, ["condition does not parse at line 1, column"]),
    (dict(from_table=T("fct_orders"), to_table=T("dim_customer"), on=["customer_id"],
          condition="customer_id IN (SELECT 1)"),
     se.InvalidExpressionError, ["not a statement or subquery"]),
    (dict(from_table=T("fct_orders"), to_table=T("dim_customer"), on=["customer_id"], condition="dim_store.region"),
     se.InvalidExpressionError, ["'dim_store' is neither acme.core.fct_orders nor acme.core.dim_customer"]),
    (dict(from_table=T("fct_orders"), to_table=T("dim_store"), on=[]),
     se.InvalidAnnotationError, ["on must be a list of (from_column, to_column) pairs"]),
    (dict(from_table=T("fct_orders"), to_table=T("dim_store"), on=[("store_id",)]),
     se.InvalidAnnotationError, ["is not one"]),
    (dict(from_table=T("fct_orders"), to_table=T("dim_store"), on=["store_id"], name="_hidden"),
     se.InvalidAnnotationError, ["relationship name must be"]),
    (dict(from_table=T("fct_orders"), to_table=T("dim_store"), on=["store_id"], canonical="yes"),
     se.InvalidAnnotationError, ["canonical must be true or false"]),
    (dict(from_table=T("fct_orders"), to_table=T("dim_store"), on=["store_id"], author=""),
     se.InvalidAnnotationError, ["author must name who wrote the annotation"]),
    (dict(from_table=T("fct_orders"), to_table=T("dim_store"), on=["store_id"], confidence=1.5),
     se.InvalidAnnotationError, ["confidence must be a number from 0 to 1"]),
    (dict(from_table=T("fct_orders"), to_table=T("dim_store"), on=["store_id"], source="robot"),
     se.InvalidAnnotationError, ["source must be one of human, agent, inferred, import"]),
])
def test_relate_rejects_bad_input_with_a_message_and_writes_nothing(sh, kwargs, exc, words):
    before = sh.cat.latest_vid
    args = {"author": "alice", **kwargs}
    with pytest.raises(exc) as info:
        sm.relate(sh.cat, **args)
    for w in words:
        assert w in str(info.value), (w, str(info.value))
    assert sh.cat.latest_vid == before


# ---------------------------------------------------------------- relate: what is stored

def test_relate_stores_one_annotation_object_per_the_layout(sh):
    path = lake.semantic_path(T("fct_orders"), "relationship.dim_customer")
    obj = sh.cat.get(path)
    assert sh.cat.get(lake.semantic_path(T("fct_orders"))).value == {"obj_type": "semantic"}
    v = obj.value
    assert (v["obj_type"], v["kind"], v["key"], v["target"]) == ("annotation", "relationship",
                                                                  "relationship.dim_customer", T("fct_orders"))
    assert v["value"] == {"to": T("dim_customer"), "on": [["customer_id", "customer_id"]],
                          "cardinality": "many_to_one", "canonical": True, "condition": "is_current"}
    p = v["provenance"]
    assert (p["author"], p["source"], p["confidence"]) == ("alice", "human", 1.0)
    b = p["basis"]
    assert b["vid"] < obj.vid and b["schema_id"] == 0 and b["row_count"] == 400
    assert b["columns"] == [{"id": 2, "name": "customer_id", "type": "long"}]
    assert b["stats"]["customer_id"]["min"] == 1 and b["stats"]["customer_id"]["null_count"] > 0
    assert b["last_data_commit"]["vid"] <= sh.vid_built
    # the whole catalog's annotations in one path query, as DESIGN says
    q = '/[obj_id = "acme"]/*/*/[obj_id = "_semantic"]/[obj_type = "annotation"]'
    assert len([o for o in sh.cat.query(q) if o.value["kind"] == "relationship"]) == 9


def test_default_names_replace_the_same_relationship_and_separate_others(fresh):
    cat = fresh.cat
    v1 = sm.relate(cat, T("map_store_code"), T("dim_store"), on=["store_id"], author="a")
    v2 = sm.relate(cat, T("map_store_code"), T("dim_store"), on=["store_code"], author="a")
    v3 = sm.relate(cat, T("map_store_code"), T("dim_store"), on=["store_id"], cardinality="one_to_one", author="a")
    rels = {r.name: r for r in sm.relationships(cat, T("map_store_code"))}
    assert set(rels) == {"dim_store", "dim_store__store_code"}
    assert rels["dim_store"].cardinality == "one_to_one" and rels["dim_store"].vid == v3
    assert rels["dim_store__store_code"].vid == v2
    assert sm.relationships(cat, T("map_store_code"), snapshot=v1)[0].cardinality == "many_to_one"


# ---------------------------------------------------------------- join_path

def test_canonical_path_beats_a_shorter_non_canonical_one(sh):
    jp = sm.join_path(sh.cat, T("legacy_sales"), T("dim_store"))
    assert [(h.from_table, h.to_table) for h in jp.hops] == [(T("legacy_sales"), T("map_store_code")),
                                                             (T("map_store_code"), T("dim_store"))]
    assert jp.canonical and jp.cardinality == "many_to_one" and jp.warnings == []
    assert '"legacy_sales"."store_code" = "map_store_code"."store_code"' in jp.hops[0].sql


def test_without_a_canonical_path_the_non_canonical_one_is_used_with_a_warning(fresh):
    cat = fresh.cat
    sm.relate(cat, T("legacy_sales"), T("map_store_code"), on=["store_code"], author="a")
    sm.relate(cat, T("legacy_sales"), T("dim_store"), on=["store_code"], canonical=False, author="bot",
              source="agent", confidence=0.6)
    jp = sm.join_path(cat, T("legacy_sales"), T("dim_store"))
    assert len(jp.hops) == 1 and not jp.canonical
    assert any("non-canonical relationship 'dim_store'" in w and "confidence 0.6" in w for w in jp.warnings)


def test_declared_condition_is_part_of_the_join_in_both_directions(sh):
    jp = sm.join_path(sh.cat, T("fct_orders"), T("dim_customer"))
    (hop,) = jp.hops
    assert hop.condition == "is_current" and not hop.reversed
    assert hop.sql == ('JOIN "acme"."core"."dim_customer" AS "dim_customer" ON "fct_orders"."customer_id" = '
                       '"dim_customer"."customer_id" AND ("dim_customer"."is_current")')
    back = sm.join_path(sh.cat, T("dim_customer"), T("fct_orders"))
    assert back.hops[0].reversed and back.hops[0].cardinality == "one_to_many"
    assert '("dim_customer"."is_current")' in back.hops[0].sql
    # the path's SQL runs and joins each order to at most one current customer version
    n = cc.run_sql(sh.cat, f"SELECT count(*) {jp.sql}").rows[0][0]
    hand = cc.run_sql(sh.cat, "SELECT count(*) FROM acme.core.fct_orders o JOIN acme.core.dim_customer c "
                              "ON o.customer_id = c.customer_id AND c.is_current").rows[0][0]
    assert n == hand == cc.run_sql(sh.cat, "SELECT count(customer_id) FROM acme.core.fct_orders").rows[0][0]


def test_fan_out_is_warned_per_hop_and_composed(sh):
    jp = sm.join_path(sh.cat, T("dim_store"), T("fct_order_items"))
    assert [h.cardinality for h in jp.hops] == ["one_to_many", "one_to_many"]
    assert [h.fan_out for h in jp.hops] == [True, True] and jp.cardinality == "one_to_many"
    assert len(jp.warnings) == 2 and "hop 1 (acme.core.dim_store -> acme.core.fct_orders) is one_to_many" in jp.warnings[0]
    mixed = sm.join_path(sh.cat, T("fct_payments"), T("fct_order_items"))
    assert mixed.cardinality == "many_to_many" and len(mixed.warnings) == 1
    down = sm.join_path(sh.cat, T("fct_order_items"), T("dim_store"))
    assert down.cardinality == "many_to_one" and down.warnings == []
    rows = cc.run_sql(sh.cat, f"SELECT count(*) {down.sql}").rows[0][0]
    assert rows == cc.run_sql(sh.cat, "SELECT count(*) FROM acme.core.fct_order_items").rows[0][0]


def test_no_path_says_what_is_reachable(sh):
    with pytest.raises(se.NoJoinPathError) as info:
        sm.join_path(sh.cat, T("dim_store"), T("etl_load_log"))
    msg = str(info.value)
    assert "no join path from acme.core.dim_store to acme.core.etl_load_log" in msg
    assert "tables reachable from acme.core.dim_store: acme.core.dim_customer" in msg and "relate(cat" in msg
    with pytest.raises(se.NoJoinPathError, match="acme.core.etl_load_log has no relationships"):
        sm.join_path(sh.cat, T("etl_load_log"), T("dim_store"))
    with pytest.raises(se.UnknownTableError, match="did you mean 'acme.core.dim_store'"):
        sm.join_path(sh.cat, T("dim_stor"), T("dim_store"))
    with pytest.raises(InvalidValueError, match="depth must be"):
        sm.join_path(sh.cat, T("dim_store"), T("fct_orders"), depth="deep")


def test_same_table_is_an_empty_path(sh):
    jp = sm.join_path(sh.cat, T("fct_orders"), T("fct_orders"))
    assert jp.hops == [] and jp.cardinality == "one_to_one" and jp.sql.startswith('FROM "acme"."core"."fct_orders"')


def test_data_depth_confirms_declared_cardinality(sh):
    jp = sm.join_path(sh.cat, T("fct_order_items"), T("dim_customer"), depth="data")
    assert [c.ok for c in jp.checks] == [True, True]
    items_orders, orders_customer = jp.checks
    assert items_orders.match_rate == 1.0 and items_orders.duplicate_keys_to == 0
    assert orders_customer.duplicate_keys_to == 0  # is_current applies to the dimension's side
    anonymous = cc.run_sql(sh.cat, "SELECT count(*) FROM acme.core.fct_orders WHERE customer_id IS NULL").rows[0][0]
    assert orders_customer.rows_from == 400 - anonymous == orders_customer.matched_from


def test_data_depth_catches_a_cardinality_the_rows_break(fresh):
    cat = fresh.cat
    v_bad = sm.relate(cat, T("fct_orders"), T("dim_customer"), on=["customer_id"], author="a")
    v_good = sm.relate(cat, T("fct_orders"), T("dim_customer"), on=["customer_id"], condition="is_current",
                       author="a")
    bad = sm.join_path(cat, T("fct_orders"), T("dim_customer"), snapshot=v_bad, depth="data")
    (check,) = bad.checks
    versions = cc.run_sql(cat, "SELECT count(*) FROM (SELECT customer_id FROM acme.core.dim_customer "
                               "GROUP BY 1 HAVING count(*) > 1)").rows[0][0]
    assert versions == 7
    assert not check.ok and check.found == "many_to_many" and check.duplicate_keys_to == versions
    assert ("declared many_to_one but the data at vid" in check.message
            and "7 key values of acme.core.dim_customer (customer_id) occur more than once" in check.message)
    assert check.message in bad.warnings
    good = sm.join_path(cat, T("fct_orders"), T("dim_customer"), snapshot=v_good, depth="data")
    assert good.checks[0].ok and good.warnings == []
    # metadata depth trusts the declaration
    assert sm.join_path(cat, T("fct_orders"), T("dim_customer"), snapshot=v_bad).checks == []
