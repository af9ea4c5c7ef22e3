"""profile: inferred roles, enums, candidate keys and relationships from the rows at a snapshot,
written as `inferred` annotations; precision and recall of keys and relationships on a lake whose
keys and inclusion dependencies are known by construction."""

from __future__ import annotations

import pytest

import semantic as sm
from catalog_core import lake
from catalog_core.errors import InvalidValueError, NoSuchTableError
from eval.fixtures.lake_joins import BACKENDS, INCLUSIONS, KEYS, SCHEMAS, T, shop


@pytest.fixture(scope="module", params=BACKENDS)
def sh(request, tmp_path_factory):
    with shop(request.param, str(tmp_path_factory.mktemp("profile")), related=False) as s:
        yield s


@pytest.fixture(scope="module")
def inferred(sh):
    """Every table profiled once (not written), by table."""
    return {name: sm.profile(sh.cat, T(name), write=False) for name in SCHEMAS}


def _keys(results):
    (grain,) = [r for r in results if r.key == "table.grain"]
    return grain


def test_candidate_keys_precision_and_recall(inferred, capsys):
    grain_hits = cand_tp = cand_fp = 0
    truth_total = sum(len(v) for v in KEYS.values())
    found_truth = 0
    for name, res in inferred.items():
        g = _keys(res)
        truth = {frozenset(k) for k in KEYS[name]}
        grain_hits += frozenset(g.value["keys"]) == frozenset(KEYS[name][0])
        cands = {frozenset(k) for k in g.evidence["candidate_keys"]}
        cand_tp += len(cands & truth)
        cand_fp += len(cands - truth)
        found_truth += len(cands & truth)
        assert 0 < g.confidence <= 1
    grain_precision = grain_hits / len(inferred)
    cand_precision = cand_tp / (cand_tp + cand_fp)
    recall = found_truth / truth_total
    with capsys.disabled():
        print(f"\n[profile] grain keys: {grain_hits}/{len(inferred)} right ({grain_precision:.2f}); candidate keys: "
              f"precision {cand_precision:.2f} ({cand_tp} of {cand_tp + cand_fp}), recall {recall:.2f}")
    assert grain_precision == 1.0
    assert cand_precision >= 0.85 and recall == 1.0  # dim_store.store_name is unique by accident


def test_candidate_relationships_precision_and_recall(inferred, capsys):
    found = set()
    for name, res in inferred.items():
        for r in res:
            if r.kind == "relationship":
                (a, b), = r.value["on"]
                found.add((name, a, r.value["to"].rsplit(".", 1)[1], b))
                assert r.value["canonical"] is False and r.value["cardinality"] in ("many_to_one", "one_to_one")
                assert r.evidence["overlap"] >= 0.95 and 0 < r.confidence <= 0.95
    tp = len(found & INCLUSIONS)
    precision, recall = tp / len(found), tp / len(INCLUSIONS)
    with capsys.disabled():
        print(f"\n[profile] relationships: precision {precision:.2f} ({tp} of {len(found)}), "
              f"recall {recall:.2f} ({tp} of {len(INCLUSIONS)}); false: {sorted(found - INCLUSIONS)}; "
              f"missed: {sorted(INCLUSIONS - found)}")
    assert precision >= 0.9 and recall >= 0.9


def test_roles_enums_and_samples(inferred):
    by = {(r.column, r.key.rsplit(".", 1)[1]): r for r in inferred["fct_orders"] if r.kind == "column"}
    assert by[("order_id", "role")].value == "id" and by[("order_date_local", "role")].value == "time"
    assert by[("gross_cents", "role")].value == "measure" and by[("channel", "role")].value == "dimension"
    assert by[("channel", "enum")].value == ["app", "marketplace", "store", "web"]
    assert by[("status", "enum")].value == ["cancelled", "delivered", "placed", "refunded", "shipped"]
    stores = {(r.column, r.key.rsplit(".", 1)[1]): r for r in inferred["dim_store"] if r.kind == "column"}
    assert stores[("store_code", "sample_values")].value == ["S-000", "S-001", "S-002", "S-003", "S-004"]
    assert ("store_code", "enum") not in stores  # ids get samples, not enums


def test_profile_writes_inferred_annotations_per_the_layout(sh):
    before = sh.cat.latest_vid
    res = sm.profile(sh.cat, T("fct_payments"))
    assert sh.cat.latest_vid == before + 1 and all(r.written for r in res)
    obj = sh.cat.get(lake.semantic_path(T("fct_payments"), "relationship.fct_orders"))
    v = obj.value
    assert v["value"]["to"] == T("fct_orders") and v["provenance"]["source"] == "inferred"
    assert v["provenance"]["author"] == "semcat.profile" and v["provenance"]["confidence"] == 0.95
    assert v["provenance"]["basis"]["columns"] == [{"id": 2, "name": "order_id", "type": "long"}]
    role = sh.cat.get(lake.semantic_path(T("fct_payments"), "column.4.role")).value
    assert (role["column"], role["column_id"], role["value"]) == ("status", 4, "dimension")
    assert role["provenance"]["basis"]["stats"]["status"]["null_count"] == 0
    grain = sh.cat.get(lake.semantic_path(T("fct_payments"), "table.grain")).value
    assert grain["value"]["keys"] == ["payment_id"] and len(grain["provenance"]["basis"]["columns"]) == 1
    # an inferred relationship is usable by join_path, with a non-canonical warning
    jp = sm.join_path(sh.cat, T("fct_payments"), T("fct_orders"))
    assert not jp.canonical and "non-canonical" in jp.warnings[0]


def test_profile_never_overwrites_other_sources(tmp_path):
    with shop("embedded", str(tmp_path), related=False) as s:
        cat = s.cat
        sm.relate(cat, T("fct_orders"), T("dim_store"), on=["store_id"], author="alice")
        sm.annotate(cat, T("fct_orders"), {"grain": {"text": "one row per order", "keys": ["order_id"]}}, author="alice")
        res = sm.profile(cat, T("fct_orders"))
        grain = _keys(res)
        assert not grain.written and grain.kept_back == "table.grain already has a human annotation"
        assert cat.get(lake.semantic_path(T("fct_orders"), "table.grain")).value["provenance"]["source"] == "human"
        rels = [r for r in res if r.kind == "relationship"]
        assert [r.value["to"] for r in rels] == [T("dim_date")]  # dim_store is already declared by a person
        sources = {r.name: r.source for r in sm.relationships(cat, T("fct_orders"))}
        assert sources == {"dim_store": "human", "dim_date": "inferred"}


def test_profile_reads_the_snapshot_and_write_false_writes_nothing(sh):
    v0 = sh.cat.latest_vid
    extra = [{"sale_date": None, "store_code": "S-001", "gross_sales_cents": 5, "txn_count": 1}]
    sh.writer.append("legacy_sales", extra, chunks=1)
    old = sm.profile(sh.cat, T("legacy_sales"), snapshot=v0, write=False)
    new = sm.profile(sh.cat, T("legacy_sales"), write=False)
    assert sh.cat.latest_vid == v0 + 1
    assert old[0].evidence["rows"] + 1 == new[0].evidence["rows"] and old[0].key == new[0].key == "column.1.role"
    assert _keys(old).value["keys"] == ["store_code", "sale_date"]
    assert not any(r.key == "table.grain" for r in new)  # a null sale_date: no key any more


def test_profile_rejects_bad_input(sh):
    with pytest.raises(NoSuchTableError, match="did you mean 'acme.core.dim_store'"):
        sm.profile(sh.cat, T("dim_stores"))
    with pytest.raises(InvalidValueError, match="min_overlap must be a fraction"):
        sm.profile(sh.cat, T("dim_store"), min_overlap=0)
