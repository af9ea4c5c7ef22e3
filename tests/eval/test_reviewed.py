"""The `stale+reviewed` condition (issue 49, Deliver 4) on a small lake built in the test: LAKE/enriched and
LAKE/stale (the same data, the stale history missing the annotation updates its manifest lists), then
`build_reviewed`, the scripted steward (scan, accept every validated fix, dismiss the rest): LAKE/reviewed
differs from LAKE/stale exactly by what the accepted decisions wrote, no accepted fix writes a false fact
per the manifest, and the condition serves LAKE/reviewed like stale+detect."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os

import pytest

import catalog_core as cc
import semantic as sm
from eval.fixtures.lakes import LakeBuilder
from eval.harness.conditions import HISTORY_OF, condition_server, history_dir, lake_now
from eval.harness.reviewed import REPORT, annotation_values, build_reviewed, compare
from eval.harness.runner import HIDE_FLAGS, validate_conditions
from semantic.annotations import read_annotations, read_catalog_annotations

T = "acme.core.orders"
D = "acme.core.stores"
L = "acme.legacy.orders_feed"
P = "acme.core.payments"


def _build(cat, files: str, history: str) -> LakeBuilder:
    """The same data in both histories; the enriched one records the new status, the stale one not."""
    lk = LakeBuilder(cat, files)
    lk.table(T, [("order_id", "bigint"), ("status", "string"), ("store_id", "bigint"), ("amount_cents", "bigint")],
             at=0, rows={"order_id": [1, 2, 3, 4], "status": ["placed", "shipped", "placed", "returned"],
                         "store_id": [1, 2, 1, 2], "amount_cents": [1000, 2500, 400, 1200]})
    lk.table(D, [("store_id", "bigint"), ("region", "string")], at=0.1,
             rows={"store_id": [1, 2], "region": ["north", "south"]})
    lk.table(L, [("order_id", "bigint"), ("amount", "double")], at=0.2, rows={"order_id": [1, 2], "amount": [1.0, 2.5]})
    lk.table(P, [("payment_id", "bigint"), ("method", "string")], at=0.3,
             rows={"payment_id": [1, 2, 3], "method": ["card", "cash", "card"]})
    sm.annotate(cat, D, {"enum": ["north", "south"]}, column="region", author="ann", time=lk.at(0.5))
    sm.annotate(cat, P, {"enum": ["card", "cash"]}, column="method", author="ann", time=lk.at(0.5))
    sm.annotate(cat, T, {"description": "Orders, one row per order.",
                         "grain": {"text": "one row per order", "keys": ["order_id"]}}, author="ann", time=lk.at(0.5))
    sm.annotate(cat, T, {"enum": ["placed", "returned", "shipped"]}, column="status", author="ann", time=lk.at(0.5))
    sm.annotate(cat, T, {"unit": "cents"}, column="amount_cents", author="ann", time=lk.at(0.5))
    sm.relate(cat, T, D, on=[("store_id", "store_id")], cardinality="many_to_one", author="ann", time=lk.at(0.5))
    sm.annotate(cat, L, {"description": "the order feed, loaded daily", "freshness_sla": "P1D"}, author="ann",
                time=lk.at(0.5))
    for day in range(1, 5):
        lk.append(T, {"order_id": [10 + day], "status": ["placed"], "store_id": [1], "amount_cents": [700 + day]},
                  at=day)
        lk.append(D, {"store_id": [10 + day], "region": ["east"]}, at=day + 0.1)
    # a status no annotation names, sorting inside the old min/max (only the data shows it); a payment method
    # after the old ones; the stores' new region (east, appended above)
    lk.append(T, {"order_id": [30], "status": ["processing"], "store_id": [2], "amount_cents": [900]}, at=5)
    lk.append(P, {"payment_id": [4], "method": ["voucher"]}, at=5.1)
    if history == "enriched":  # the team that kept up: the enum within a day, the stopped feed deprecated
        sm.annotate(cat, T, {"enum": ["placed", "processing", "returned", "shipped"]}, column="status", author="ann",
                    time=lk.at(5.5))
        sm.annotate(cat, L, {"deprecated": {"since": "2024-11-12", "replaced_by": T}},
                    author="ann", time=lk.at(5.6))
        sm.annotate(cat, D, {"enum": ["east", "north", "south"]}, column="region", author="ann", time=lk.at(5.7))
        sm.annotate(cat, P, {"enum": ["card", "cash", "voucher"]}, column="method", author="ann", time=lk.at(5.8))
    return lk


def _key(cat, table, field, column=None):
    for a in read_annotations(cat, table):
        if a.field == field and (column is None or a.column == column):
            return a.key
    raise AssertionError((table, field, column))


@pytest.fixture(scope="module")
def small_lake(tmp_path_factory):
    """The small lake, reviewed once for the module: (root, stale keys, now, build_reviewed's report)."""
    tmp_path = tmp_path_factory.mktemp("reviewed")
    root = str(tmp_path / "lake")
    os.makedirs(root)
    keys = {}
    for h in ("enriched", "stale"):
        cat = cc.Catalog.open(os.path.join(root, h))
        try:
            lk = _build(cat, str(tmp_path / f"files-{h}"), h)
            if h == "stale":
                keys = {"enum": _key(cat, T, "enum", "status"), "sla": _key(cat, L, "freshness_sla"),
                        "region": _key(cat, D, "enum", "region"), "method": _key(cat, P, "enum", "method")}
        finally:
            cat.close()
    now = lk.day(6)
    manifest = {"stale": [{"table": T, "key": keys["enum"], "kind": "outdated_enum", "detectable": True},
                          {"table": D, "key": keys["region"], "kind": "outdated_enum", "detectable": True},
                          {"table": P, "key": keys["method"], "kind": "outdated_enum", "detectable": True},
                          {"table": L, "key": keys["sla"], "kind": "deprecated_without_flag", "detectable": True}]}
    with open(os.path.join(root, "stale_manifest.json"), "w") as fh:
        json.dump(manifest, fh)
    with open(os.path.join(root, "lake.json"), "w") as fh:
        json.dump({"d0": dt.datetime.fromtimestamp(now, dt.timezone.utc).isoformat()}, fh)
    assert lake_now(root).timestamp() == now
    return root, keys, now, build_reviewed(root, log=lambda m: None)


def test_reviewed_differs_from_stale_exactly_by_the_accepted_fixes(small_lake):
    root, keys, now, report = small_lake
    assert os.path.isdir(history_dir(root, "stale+reviewed")) and HISTORY_OF["stale+reviewed"] == "reviewed"
    accepted_vids = {int(a["vid"]) for a in report["accepted"]}
    dismissed_vids = {int(d["vid"]) for d in report["dismissed"]}
    assert accepted_vids, report["rounds"]          # the new status: a validated fix, accepted
    assert report["dismissed"], report              # the stopped feed's SLA: no fix the evidence supports
    st, rv = cc.Catalog.open(history_dir(root, "stale")), cc.Catalog.open(history_dir(root, "reviewed"))
    try:
        before, after = annotation_values(st), annotation_values(rv)
        changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
        written = {(t, a.key) for t, anns in read_catalog_annotations(rv).items() for a in anns
                   if a.kind != "review" and a.vid in accepted_vids}
        # exactly what the accepted decisions wrote: nothing else moved, dismissals wrote only their records
        assert changed == written and changed
        assert not {(t, a.key) for t, anns in read_catalog_annotations(rv).items() for a in anns
                    if a.kind != "review" and a.vid in dismissed_vids}
        assert (T, keys["enum"]) in changed and set(after[(T, keys["enum"])]) == {"placed", "processing", "returned",
                                                                                  "shipped"}
        assert after[(L, keys["sla"])] == before[(L, keys["sla"])] == "P1D"   # dismissed, not rewritten
        # the stale catalog itself is untouched
        assert st.latest_vid < rv.latest_vid
    finally:
        st.close()
        rv.close()
    judged = report["judged"]
    # no accepted fix writes a false fact per the manifest (counted in the report)
    assert report["summary"]["false_fact"] == 0 and judged["false_fact"] == []
    assert sorted((r["table"], r["key"]) for r in judged["fixed"]) == sorted(
        [(T, keys["enum"]), (D, keys["region"]), (P, keys["method"])])
    # all three in the first round: sm.accept_all gives every decision one backdated time, and the catalog
    # refuses a third commit at one instant, so it decided two of them and refused the third
    assert report["rounds"][0]["accepted"] >= 3, report["rounds"]
    with open(os.path.join(root, REPORT)) as fh:
        assert json.load(fh)["summary"] == report["summary"]
    with pytest.raises(FileExistsError, match="force"):
        build_reviewed(root, log=lambda m: None)


def test_compare_counts_a_false_fact():
    """A write to an annotation the manifest says is true, away from the enriched value, is a false fact;
    the same write to a stale one is partial; a write equal to the enriched value is fixed / reaffirmed."""
    stale = {("t", "a"): "x", ("t", "b"): ["p", "q"], ("t", "c"): "u"}
    enriched = {("t", "a"): "x", ("t", "b"): ["q", "p", "r"], ("t", "c"): "v"}
    manifest = {"stale": [{"table": "t", "key": "b"}, {"table": "t", "key": "c"}]}
    got = compare(stale, {("t", "a"): "y", ("t", "b"): ["r", "q", "p"], ("t", "c"): "w"}, enriched, manifest)
    assert got["counts"] == {"fixed": 1, "partial": 1, "reaffirmed": 0, "false_fact": 1, "unjudged": 0}
    assert got["false_fact"][0]["key"] == "a" and got["fixed"][0]["key"] == "b"


def test_the_condition_serves_the_reviewed_history_like_stale_detect(small_lake):
    root, keys, now, _report = small_lake
    assert validate_conditions(["stale+reviewed"]) == ["stale+reviewed"]
    assert HIDE_FLAGS["stale+reviewed"] == HIDE_FLAGS["stale+detect"]
    cat = cc.Catalog.open(history_dir(root, "stale+reviewed"))
    try:
        server = condition_server(cat, HIDE_FLAGS["stale+reviewed"], now=now)

        async def describe():
            from mcp import Client

            async with Client(server) as client:
                res = await client.call_tool("describe_table", {"table": T})
                return json.dumps(res.structured_content or {}, default=str)

        text = asyncio.run(describe())
        assert "processing" in text   # the accepted enum is what the agent reads
    finally:
        cat.close()
