"""sm.search on both backends: look-alikes decided by annotations, why each hit matched, deprecated
tables ranked down with their successor surfaced, fuzzy names, verified questions and sample values,
grain / freshness / warnings on hits, and an index that follows the catalog (annotations, schema
changes, snapshots) while data loads rebuild nothing."""

from __future__ import annotations

import importlib

import pytest

import semantic as sm
from catalog_core.errors import InvalidValueError

search_mod = importlib.import_module("semantic.search")  # the module (sm.search is the function)

ORDERS, WEB, ITEMS, LEGACY, DAILY, STORE = ("acme.core.fct_orders", "acme.raw.web_orders", "acme.core.fct_order_items",
                                            "acme.legacy.sales_daily", "acme.mart.agg_daily_store_revenue",
                                            "acme.core.dim_store")


def lake(lk):
    lk.table(ORDERS, [("order_id", "bigint"), ("status", "string"), ("gross_cents", "bigint"), ("d", "date")], at=0,
             rows={"order_id": [1, 2], "status": ["placed", "shipped"], "gross_cents": [5, 7], "d": ["2024-11-11"] * 2})
    lk.table(WEB, [("order_id", "bigint"), ("payload", "string"), ("total_cents", "bigint")], at=0)
    lk.table(ITEMS, [("order_id", "bigint"), ("line_no", "int"), ("net_line_cents", "bigint")], at=0)
    lk.table(LEGACY, [("sale_date", "date"), ("store_code", "string"), ("gross_sales_usd", "double")], at=0)
    lk.table(DAILY, [("date_local", "date"), ("store_id", "int"), ("net_revenue_usd", "double")], at=0)
    lk.table(STORE, [("store_id", "int"), ("region", "string"), ("format", "string")], at=0)


def names(hits):
    return [h.table for h in hits]


def test_annotations_decide_between_look_alikes_and_hits_say_why(cat, lk):
    lake(lk)
    bare = sm.search(cat, "purchases customers made")
    assert ORDERS not in names(bare)  # nothing in names or columns says "purchase"
    sm.annotate(cat, ORDERS, {"description": "one row per purchase, cleaned and deduplicated",
                              "synonyms": ["purchases"], "grain": {"text": "one row per order", "keys": ["order_id"]}},
                author="alice")
    hits = sm.search(cat, "purchases customers made")
    assert names(hits)[0] == ORDERS
    top = hits[0]
    assert set(top.matched) >= {"synonyms", "description"}
    assert "purchases" in top.matched["synonyms"]
    assert (top.grain, top.grain_keys) == ("one row per order", ["order_id"])
    assert top.description.startswith("one row per purchase")
    # a column description and a metric's synonyms are searched
    sm.annotate(cat, ITEMS, {"description": "quantity x unit price minus discount"}, column="net_line_cents",
                author="alice")
    sm.define_metric(cat, ITEMS, "net_revenue", expression="sum(net_line_cents) / 100.0", synonyms=["turnover"],
                     author="alice")
    hits = sm.search(cat, "turnover")
    assert names(hits) == [ITEMS] and hits[0].matched == {"metrics": ["turnover"]}
    assert "discount" in sm.search(cat, "discount")[0].matched.get("columns", [])


def test_deprecated_tables_rank_down_and_surface_their_successor(cat, lk):
    lake(lk)
    first = sm.search(cat, "sales by store code")[0]
    assert first.table == LEGACY and not first.deprecated
    sm.annotate(cat, LEGACY, {"deprecated": {"reason": "replaced", "replaced_by": DAILY}}, author="alice")
    hits = sm.search(cat, "sales by store code", limit=10)
    i = names(hits).index(LEGACY)
    assert hits[i].deprecated and hits[i].successor == DAILY
    assert any("deprecated; use " + DAILY in w for w in hits[i].warnings)
    j = names(hits).index(DAILY)
    assert j == i + 1 and hits[j].successor_of == LEGACY
    assert hits[i].score == pytest.approx(first.score * search_mod.DEPRECATED_FACTOR, rel=1e-3)


def test_fuzzy_names_typos_and_table_names(cat, lk):
    lake(lk)
    assert names(sm.search(cat, "fct_order_items"))[0] == ITEMS
    assert names(sm.search(cat, "order items"))[0] == ITEMS
    hits = sm.search(cat, "paylod")   # typo of a column name
    assert names(hits)[0] == WEB
    assert sm.search(cat, "zzzz qqqq") == []


def test_verified_questions_and_sample_values_are_searched(cat, lk):
    lake(lk)
    sm.verify_query(cat, "how many parcels went out", "SELECT count(*) FROM acme.core.fct_orders", author="alice")
    sm.annotate(cat, STORE, {"sample_values": ["northeast", "midwest"]}, column="region", author="alice")
    hits = sm.search(cat, "parcels went out")
    assert names(hits)[0] == ORDERS and "parcels" in hits[0].matched["questions"]
    hits = sm.search(cat, "midwest")
    assert names(hits) == [STORE] and hits[0].matched == {"values": ["midwest"]}


def test_hits_carry_freshness_status_and_warnings(cat, lk):
    lake(lk)
    sm.annotate(cat, ORDERS, {"freshness_sla": "PT26H", "description": "orders"}, author="alice")
    late = lk.day(5)
    hit = next(h for h in sm.search(cat, "orders", now=late) if h.table == ORDERS)
    assert hit.freshness == "missed"
    assert hit.status == "stale" and any("freshness_sla_missed" in w for w in hit.warnings)
    ok = next(h for h in sm.search(cat, "orders", now=lk.day(0.5)) if h.table == ORDERS)
    assert ok.freshness == "ok" and not any("freshness" in w for w in ok.warnings)


def test_index_follows_the_catalog_and_snapshots(cat, lk):
    lake(lk)
    v0 = cat.resolve(None)
    assert ORDERS not in names(sm.search(cat, "purchases"))
    sm.annotate(cat, ORDERS, {"synonyms": ["purchases"]}, author="alice")
    assert names(sm.search(cat, "purchases")) == [ORDERS]
    assert sm.search(cat, "purchases", snapshot=v0) == []          # consistent with the snapshot asked
    lk.evolve(WEB, add=[("coupon_code", "string")])
    assert names(sm.search(cat, "coupon")) == [WEB]
    assert sm.search(cat, "coupon", snapshot=v0) == []
    # a data load changes no document: the index at the new vid reuses every one
    st = search_mod._state(cat)
    before = search_mod.index_at(cat, cat.resolve(None))
    lk.append(ORDERS, {"order_id": [3], "status": ["placed"], "gross_cents": [1], "d": ["2024-11-13"]})
    after = search_mod.index_at(cat, cat.resolve(None))
    assert after is not before and all(after.docs[n] is before.docs[n] for n in before.docs)
    assert search_mod._changed_tables(cat, before.vid, after.vid) == set()
    # an annotation re-reads exactly its table
    sm.annotate(cat, STORE, {"description": "stores"}, author="alice")
    again = search_mod.index_at(cat, cat.resolve(None))
    assert [n for n in again.docs if again.docs[n] is not after.docs[n]] == [STORE]
    assert len(st.indexes) >= 3
    # a dropped table leaves the index
    with cat.transaction(author="t") as txn:
        txn.remove("/acme/raw/web_orders")
    assert WEB not in names(sm.search(cat, "coupon payload"))


def test_catalog_and_namespace_instructions_never_break_search(cat, lk):
    """Issue 22: after a catalog-level `instructions` annotation every later search failed ("name
    'acme._semantic.instructions': '_semantic' starts with '_', which is reserved")."""
    lake(lk)
    assert names(sm.search(cat, "orders"))  # an index exists: the next search updates it
    sm.annotate(cat, "acme", {"instructions": "amounts are in cents"}, author="alice")
    sm.annotate(cat, "acme.core", {"instructions": "core tables are cleaned"}, author="alice")
    assert ORDERS in names(sm.search(cat, "orders"))
    cat.clone("/acme/core", "/acme/core_wap")  # a branch record (/_branches/...) in the diff
    assert ORDERS in names(sm.search(cat, "orders"))


def test_searching_an_old_snapshot_then_the_latest(cat, lk):
    """Issue 22: `search(snapshot=0)` then `search()`: the update from the older index failed."""
    lake(lk)
    sm.annotate(cat, "acme", {"instructions": "amounts are in cents"}, author="alice")
    sm.annotate(cat, ORDERS, {"synonyms": ["purchases"]}, author="alice")
    assert sm.search(cat, "orders", snapshot=0) == []
    assert names(sm.search(cat, "purchases")) == [ORDERS]
    assert sm.search(cat, "purchases", snapshot=1) == []
    assert names(sm.search(cat, "purchases")) == [ORDERS]


def test_a_failed_update_rebuilds_the_index(cat, lk, monkeypatch, caplog):
    lake(lk)
    assert names(sm.search(cat, "coupon")) == []

    def broken(*_a, **_k):
        raise RuntimeError("diff failed")

    monkeypatch.setattr(search_mod, "_changed_tables", broken)
    lk.evolve(WEB, add=[("coupon_code", "string")])
    with caplog.at_level("WARNING", logger="semantic.search"):
        assert names(sm.search(cat, "coupon")) == [WEB]  # rebuilt, not broken
    assert "rebuilding" in caplog.text and "diff failed" in caplog.text


@pytest.mark.parametrize("kwargs, message", [
    ({"text": ""}, "text must be"), ({"text": "x", "limit": 0}, "limit must be"),
    ({"text": "x", "limit": True}, "limit must be"), ({"text": "x", "mode": "vector"}, "mode must be"),
])
def test_bad_arguments(cat, lk, kwargs, message):
    lake(lk)
    with pytest.raises(InvalidValueError, match=message):
        sm.search(cat, **kwargs)
