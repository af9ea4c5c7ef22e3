"""The provenance policy as agents meet it over MCP (issue 27 item 1): an agent's annotate over a
person's annotation is stored as a proposal (said in the result and its text), and describe_table
flags what agents wrote that no person has accepted yet, until a person accepts it."""

from __future__ import annotations

import catalog_core as cc
import semantic as sm
from eval.fixtures.lakes import LakeBuilder
from eval.fixtures.mcplake import DIM
from mcp_server.mcp import create_server
from tests.mcp_server.conftest import call, ok


def test_agent_over_human_is_proposed_and_unreviewed_is_flagged_until_accepted(fresh_cat):
    sm.annotate(fresh_cat, DIM, {"description": "stores, as finance counts them"}, author="ann")
    server = create_server(fresh_cat, author="agent:test")
    r = call(server, "annotate", {"table": DIM, "fields": {"description": "the stores"}})
    out = ok(r)
    assert out["proposed"] == ["table.description"] and "stored as a proposal" in r.content[0].text
    card = ok(call(server, "describe_table", {"table": DIM}))
    assert card["description"] == "stores, as finance counts them" and card["unreviewed"] == []
    ok(call(server, "annotate", {"table": DIM, "column": "region", "fields": {"description": "sales region"}}))
    card = ok(call(server, "describe_table", {"table": DIM, "detail": "full"}))
    assert card["unreviewed"] == ["column.2.description"]
    [item] = sm.review_items(fresh_cat, DIM, kind="agent_annotation").items
    sm.accept(fresh_cat, item, author="ann")
    assert ok(call(server, "describe_table", {"table": DIM}))["unreviewed"] == []
    [prop] = sm.review_items(fresh_cat, DIM, kind="proposal").items
    sm.accept(fresh_cat, prop, author="ann", note="better")
    card = ok(call(server, "describe_table", {"table": DIM, "detail": "full"}))
    assert card["description"] == "the stores"
    [d] = [a for a in card["annotations"] if a["key"] == "table.description"]
    assert d["source"] == "human" and d["author"] == "ann" and not d["unreviewed"]


def test_check_staleness_shows_the_stored_data_depth_findings(tmp_path):
    """Issue 45 item 3: after a data-depth pass (`sm.scan`), check_staleness at its default depth
    carries the findings only the data shows, marked with the vid the pass read, without reading
    the data again; once the table changes after the pass, they say so (`outdated_by`)."""
    from eval.fixtures.lakes import LakeBuilder

    t = "acme.core.orders"
    cat = cc.Catalog.open(str(tmp_path / "data"))
    try:
        lk = LakeBuilder(cat, tmp_path / "files")
        lk.table(t, [("id", "bigint"), ("status", "string")], at=0, rows={"id": [1, 2], "status": ["a", "c"]})
        sm.annotate(cat, t, {"enum": ["a", "c"]}, column="status", author="ann", time=lk.day(1))
        lk.append(t, {"id": [3], "status": ["b"]}, at=2)  # inside the old min/max: only the data shows it
        server = create_server(cat, author="agent:test", now=lk.day(3))
        out = ok(call(server, "check_staleness", {"table": t}))
        assert not [f for f in out["findings"] if f["reason"] == "enum_violated"]
        res = sm.scan(cat, author="steward", now=lk.day(2), time=lk.at(2.5))
        out = ok(call(server, "check_staleness", {"table": t}))
        [f] = [f for f in out["findings"] if f["reason"] == "enum_violated"]
        assert f["scan_vid"] == res.vid and "outdated_by" not in f and f["annotation"] == "column.2.enum"
        assert f["fixes"] == [{"action": "add_enum_values", "params": {"column": "status", "values": ["b"]}}]
        everything = ok(call(server, "check_staleness", {}))
        assert [g for g in everything["findings"] if g["reason"] == "enum_violated"] == [f]
        moved = lk.append(t, {"id": [4], "status": ["a"]}, at=3)
        out = ok(call(server, "check_staleness", {"table": t}))
        [f] = [f for f in out["findings"] if f["reason"] == "enum_violated"]
        assert f["outdated_by"] == moved
    finally:
        cat.close()


def test_check_staleness_shows_what_the_data_pass_settled_not_the_metadata_suspicion(tmp_path):
    """Issue 45 item 3: the statistics only suspect an enum (code 'c' left the column's range:
    enum_violated, suspect, no fix); the stored data-depth pass settled it (the rows show the merge:
    stale, value_map). check_staleness at metadata depth shows the settled finding, as the inbox offers
    it, while the table is unchanged since the pass, and the suspicion again once it changed (failed
    before: the computed suspicion hid the stored finding of the same claim and reason)."""
    from eval.fixtures.lakes import LakeBuilder

    t = "acme.core.orders"
    cat = cc.Catalog.open(str(tmp_path / "data"))
    try:
        lk = LakeBuilder(cat, tmp_path / "files")
        lk.table(t, [("id", "bigint"), ("kind", "string")], at=0)
        lk.overwrite(t, {"id": [1, 2, 3], "kind": ["a", "c", "b"]}, at=1)
        sm.annotate(cat, t, {"enum": ["a", "b", "c"]}, column="kind", author="ann", time=lk.day(1.5))
        lk.overwrite(t, {"id": [1, 2, 3], "kind": ["a", "b", "b"]}, at=3)
        server = create_server(cat, author="agent:test", now=lk.day(3))

        def enum_findings() -> list[dict]:
            out = ok(call(server, "check_staleness", {"table": t}))
            return [f for f in out["findings"] if f["annotation"] == "column.2.enum"]

        [f] = enum_findings()
        assert (f["reason"], f["status"], f["fixes"]) == ("enum_violated", "suspect", [])
        res = sm.scan(cat, author="steward", now=lk.day(3), time=lk.at(3.5))
        [f] = enum_findings()
        assert (f["reason"], f["status"], f["scan_vid"]) == ("enum_violated", "stale", res.vid)
        assert [x["action"] for x in f["fixes"]] == ["value_map"]
        lk.append(t, {"id": [4], "kind": ["a"]}, at=4)  # changed after the pass: the computed finding again
        [f] = enum_findings()
        assert (f["status"], f["fixes"], f.get("scan_vid")) == ("suspect", [], None)
    finally:
        cat.close()


def test_check_staleness_at_data_depth_rechecks_only_what_changed(tmp_path, monkeypatch):
    """Issue 45 item 6: a data-depth check_staleness after a change re-runs the checks of the
    changed table (and of those depending on it), carrying the other tables' findings over from
    the previous call; the answer is the one a check with nothing cached gives."""
    from eval.fixtures.lakes import LakeBuilder
    from semantic import history
    from semantic.staleness import engine

    a, b = "acme.core.orders", "acme.core.other"
    cat = cc.Catalog.open(str(tmp_path / "data"))
    try:
        lk = LakeBuilder(cat, tmp_path / "files")
        lk.table(a, [("id", "bigint"), ("status", "string")], at=0, rows={"id": [1, 2], "status": ["a", "c"]})
        lk.table(b, [("k", "bigint"), ("kind", "string")], at=0, rows={"k": [1, 2], "kind": ["x", "z"]})
        sm.annotate(cat, a, {"enum": ["a", "c"]}, column="status", author="ann", time=lk.day(1))
        sm.annotate(cat, b, {"enum": ["x", "z"]}, column="kind", author="ann", time=lk.day(1))
        server = create_server(cat, author="agent:test", now=lk.day(3))
        ok(call(server, "check_staleness", {"depth": "data"}))
        seen: list[str] = []
        real = engine.run_table_checks
        monkeypatch.setattr(engine, "run_table_checks", lambda env, depth: seen.append(env.t.name) or real(env, depth))
        lk.append(b, {"k": [3], "kind": ["y"]}, at=2)  # inside the old min/max: only the data shows it
        out = ok(call(server, "check_staleness", {"depth": "data"}))
        assert set(seen) == {b}  # orders' findings carried over
        assert [(f["target"], f["reason"]) for f in out["findings"]] == [(f"{b}.kind", "enum_violated")]
        history.clear_cache(cat)
        assert ok(call(server, "check_staleness", {"depth": "data"}))["findings"] == out["findings"]
        assert set(seen) == {a, b}
    finally:
        cat.close()


def test_check_staleness_leaves_out_what_the_data_pass_cleared(tmp_path):
    """Issue 45 item 3: a table that starts keeping versions makes every verified query reading it suspect
    at metadata depth (schema_changed); the data-depth pass runs them and clears the two whose answer did
    not move across the change. check_staleness at metadata depth leaves those suspicions out while what
    the pass read is unchanged, as the inbox does, and keeps the one the data confirmed; once the table
    changes after the pass, the computed suspicions come back (failed before: the cleared suspicions were
    shown beside the inbox that hid them)."""
    from tests.semantic.test_staleness_definitions import T, _versioned

    cat = cc.Catalog.open(str(tmp_path / "data"))
    try:
        lk = LakeBuilder(cat, tmp_path / "files")
        qs = _versioned(lk)
        server = create_server(cat, author="agent:test", now=lk.day(7))

        def flagged() -> set[str]:
            out = ok(call(server, "check_staleness", {"table": T, "limit": 50}))
            return {q for q, k in qs.items() for f in out["findings"]  # a merged finding lists the others
                    if k == f["annotation"] or k in f["message"]}

        assert flagged() == set(qs)  # metadata can only suspect them all
        sm.scan(cat, author="steward", now=lk.day(7), time=lk.at(7.5))
        assert {i.annotation for i in sm.review_items(cat, T, now=lk.day(7)).items} & set(qs.values()) == \
            {qs["sessions"]}
        assert flagged() == {"sessions"}
        lk.append(T, {"d": ["2024-11-18"], "sid": [99], "customer_id": ["c2"], "valid_from": ["2024-11-18"],
                      "valid_to": [None], "is_current": [True]}, at=8)
        assert flagged() == set(qs)
    finally:
        cat.close()
