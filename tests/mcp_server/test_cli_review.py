"""`semcat review list|show|accept|edit|dismiss` as real subprocesses (issue 27 item 2): on a catalog
directory, and on a running `semcat serve` with read and write tokens; bounded lists with a cursor,
clear errors without tracebacks."""

from __future__ import annotations

import json

import catalog_core as cc
import semantic as sm
from eval.fixtures.lakes import LakeBuilder
from semantic.annotations import read_annotations
from tests.helpers import start_server, stop_process
from tests.mcp_server.test_cli_data_dir import semcat

T = "acme.core.t"
NOW = "2024-11-20T00:00:00Z"


def build(data_dir, files) -> None:
    with cc.Catalog.open(data_dir) as cat:
        lk = LakeBuilder(cat, files)
        lk.table(T, [("id", "bigint"), ("kind", "string"), ("amount_cents", "bigint")], at=0,
                 rows={"id": [1, 2, 3], "kind": ["a", "b", "a"], "amount_cents": [1000, 25000, 4000]})
        sm.annotate(cat, T, {"description": "orders by `kind`"}, author="ann", time=lk.day(1))  # code-quoted: names the column
        # a renamed column's own annotations follow it (its field id); a metric naming it is false
        sm.define_metric(cat, T, "kinds", expression="count(DISTINCT kind)", author="ann", time=lk.day(1))
        lk.evolve(T, rename={"kind": "category"}, add=[("note", "string")], at=2)
        sm.annotate(cat, T, {"description": "a note"}, column="note", author="agent:x", source="agent",
                    time=lk.day(3))


def items(data_dir, *extra):
    r = semcat("review", "list", "--data", data_dir, "--now", NOW, "--json", *extra)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_review_on_a_data_dir(tmp_path):
    data = str(tmp_path / "data")
    build(data, tmp_path / "files")
    page = items(data)
    assert page["total"] == 3 and not page["truncated"]
    by = {(i["kind"], i["reason"]): i for i in page["items"]}
    renamed = by[("finding", "column_renamed")]
    changed = by[("finding", "schema_changed")]
    agent = by[("agent_annotation", None)]
    first = items(data, "--limit", "2")
    assert len(first["items"]) == 2 and first["truncated"] and first["next_cursor"]
    rest = items(data, "--limit", "2", "--cursor", first["next_cursor"])
    assert [i["id"] for i in first["items"] + rest["items"]] == [i["id"] for i in page["items"]]
    r = semcat("review", "list", "--data", data, "--now", NOW, "--limit", "2")
    assert r.returncode == 0 and "3 open review items" in r.stdout and renamed["id"] in r.stdout
    assert f"more with --cursor {first['next_cursor']}" in r.stdout
    r = semcat("review", "show", renamed["id"], "--data", data, "--now", NOW)
    assert r.returncode == 0 and "renamed to category" in r.stdout and "metric.kinds" in r.stdout
    r = semcat("review", "accept", renamed["id"], "--data", data, "--now", NOW, "--author", "alice", "--note", "ok")
    assert r.returncode == 0 and f"accepted {renamed['id']}" in r.stdout, r.stderr
    r = semcat("review", "edit", changed["id"], "orders, with notes", "--data", data, "--now", NOW, "--author", "bob")
    assert r.returncode == 0, r.stderr
    r = semcat("review", "dismiss", agent["id"], "--data", data, "--now", NOW, "--author", "bob", "--reason", "wrong")
    assert r.returncode == 0, r.stderr
    assert items(data)["total"] == 0
    with cc.Catalog.open(data) as cat:
        anns = {a.key: a for a in read_annotations(cat, T)}
    assert anns["table.description"].value == "orders, with notes" and anns["table.description"].provenance.author == "bob"
    assert anns["metric.kinds"].provenance.author == "alice" and "column.4.description" not in anns
    assert anns["metric.kinds"].value["expression"] == "count(DISTINCT category)"
    r = semcat("review", "accept", renamed["id"], "--data", data, "--now", NOW, "--author", "alice")
    assert r.returncode == 1 and "no open review item" in r.stderr and "semcat review list" in r.stderr
    assert "Traceback" not in r.stderr
    r = semcat("review", "show", "nonsense", "--data", data)
    assert r.returncode == 1 and "item id must look like" in r.stderr


def test_review_on_a_server_with_tokens(tmp_path):
    data = str(tmp_path / "data")
    build(data, tmp_path / "files")
    tokens = tmp_path / "tokens"
    tokens.write_text("rtok:read\natok:write\nwtok:write source=human name=steward\n")
    proc, url = start_server(data, str(tmp_path / "serve.log"), "--tokens", str(tokens))
    try:
        r = semcat("review", "list", "--url", url, "--token", "rtok", "--now", NOW, "--json")
        assert r.returncode == 0, r.stderr
        [it] = [i for i in json.loads(r.stdout)["items"] if i["reason"] == "column_renamed"]
        r = semcat("review", "accept", it["id"], "--url", url, "--token", "rtok", "--now", NOW, "--author", "a")
        assert r.returncode == 1 and "'read' token cannot" in r.stderr and "Traceback" not in r.stderr
        # a decision is a person's: a write token that is an agent's (the default) may not make it
        r = semcat("review", "accept", it["id"], "--url", url, "--token", "atok", "--now", NOW, "--author", "a")
        assert r.returncode == 1 and "use a person's token" in r.stderr and "Traceback" not in r.stderr
        r = semcat("review", "accept", it["id"], "--url", url, "--token", "wtok", "--now", NOW, "--author", "a")
        assert r.returncode == 0 and "accepted" in r.stdout, r.stderr
        r = semcat("review", "list", "--url", url, "--token", "rtok", "--now", NOW, "--json")
        assert it["id"] not in {i["id"] for i in json.loads(r.stdout)["items"]}
    finally:
        stop_process(proc)


def test_review_decides_a_group_at_once(tmp_path):
    """One rename affects two annotations (two metrics naming the column): two items of one group,
    dismissed with one command."""
    data = str(tmp_path / "data")
    with cc.Catalog.open(data) as cat:
        lk = LakeBuilder(cat, tmp_path / "files")
        lk.table(T, [("id", "bigint"), ("kind", "string")], at=0, rows={"id": [1, 2], "kind": ["a", "b"]})
        sm.define_metric(cat, T, "kinds", expression="count(DISTINCT kind)", author="ann", time=lk.day(1))
        sm.define_metric(cat, T, "as", expression="count(*)", filter="kind = 'a'", author="ann", time=lk.day(1.1))
        lk.evolve(T, rename={"kind": "category"}, at=2)
    page = items(data)
    groups = {i["group"] for i in page["items"] if i["kind"] == "finding"}
    assert len(groups) == 1 and None not in groups and page["total"] == 2
    group = groups.pop()
    r = semcat("review", "dismiss", "--data", data, "--now", NOW, "--author", "bob", "--reason", "fine")
    assert r.returncode != 0 and "ITEM_ID or --group" in r.stderr and "Traceback" not in r.stderr
    r = semcat("review", "dismiss", "--group", group, "--data", data, "--now", NOW, "--author", "bob", "--reason", "fine")
    assert r.returncode == 0 and "dismissed 2 item(s)" in r.stdout, r.stderr
    assert items(data)["total"] == 0
    r = semcat("review", "accept", "--group", "rename:nope@1", "--data", data, "--now", NOW, "--author", "bob")
    assert r.returncode != 0 and "no open review items in group" in r.stderr and "Traceback" not in r.stderr


def test_review_scan_puts_data_depth_findings_in_the_inbox_and_bulk_accept_skips_no_fix_items(tmp_path):
    """Issue 45: `semcat review scan --depth data` stores the data-depth pass; `review list` / `show`
    show its findings as of the vid it read; `review accept` of a finding without a fix is refused
    with what to do; `review accept --all` accepts only validated fixes and says what it skipped."""
    data = str(tmp_path / "data")
    with cc.Catalog.open(data) as cat:
        lk = LakeBuilder(cat, tmp_path / "files")
        lk.table(T, [("id", "bigint"), ("kind", "string"), ("x", "bigint")], at=0,
                 rows={"id": [1, 2, 3], "kind": ["a", "c", "a"], "x": [1, 1, 1]})
        sm.annotate(cat, T, {"description": "orders", "grain": {"text": "one row per id", "keys": ["id"]}},
                    author="ann", time=lk.day(1))
        sm.annotate(cat, T, {"enum": ["a", "c"]}, column="kind", author="ann", time=lk.day(1))
        lk.append(T, {"id": [4], "kind": ["b"], "x": [1]}, at=2)  # inside the old min/max: only the data shows it
        lk.evolve(T, drop=["x"], at=3)  # the description gets a finding without a fix (an added column is routine)
    r = semcat("review", "scan", "--depth", "data", "--data", data, "--now", NOW, "--author", "steward")
    assert r.returncode == 0 and "1 finding(s) only the data shows" in r.stdout, r.stderr
    page = items(data)
    [enum] = [i for i in page["items"] if i["reason"] == "enum_violated"]
    assert enum["depth"] == "data" and enum["scan_vid"] and enum["acceptable"]
    r = semcat("review", "list", "--data", data, "--now", NOW)
    assert r.returncode == 0 and "(data," in r.stdout and f"scan at vid {enum['scan_vid']})" in r.stdout, r.stdout
    r = semcat("review", "show", enum["id"], "--data", data, "--now", NOW)
    assert r.returncode == 0 and f"raised by the data-depth pass at vid {enum['scan_vid']}" in r.stdout, r.stdout
    [desc] = [i for i in page["items"] if i["annotation"] == "table.description"]
    assert desc["refused"] == "no_fix" and not desc["acceptable"]
    r = semcat("review", "accept", desc["id"], "--data", data, "--now", NOW, "--author", "alice")
    assert r.returncode == 1 and "no fix the evidence supports" in r.stderr and "dismiss" in r.stderr
    assert "Traceback" not in r.stderr
    r = semcat("review", "accept", "--all", "--data", data, "--now", NOW, "--author", "alice")
    assert r.returncode == 0 and "accepted 1 item(s)" in r.stdout, r.stderr
    assert "no fix the evidence supports (edit or dismiss them)" in r.stdout and f"left open {desc['id']}" in r.stdout
    with cc.Catalog.open(data) as cat:
        anns = {a.key: a for a in read_annotations(cat, T)}
        left = {i.id for i in sm.review_items(cat, now=NOW).items}
    assert sorted(anns["column.2.enum"].value) == ["a", "b", "c"] and anns["table.description"].value == "orders"
    assert desc["id"] in left and enum["id"] not in left  # the item without a fix stays open


def test_review_writes_at_now_on_a_backdated_lake(tmp_path):
    """Three testers (wave 5, session 31) scanned and accepted with `--now` on a lake whose history is
    backdated: the scan and the decisions were committed at the clock, years past the lake, so every later
    backdated load was refused ("earlier than the latest commit's time") and the accepted annotations
    were dated after the check time. With `--now` given, they are written at it (or just after the latest
    commit, when a decision at the same `--now` came first, or the lake's history is later)."""
    data = str(tmp_path / "data")
    build(data, tmp_path / "files")
    r = semcat("review", "scan", "--depth", "data", "--data", data, "--now", NOW, "--author", "steward")
    assert r.returncode == 0, r.stderr
    [renamed] = [i for i in items(data)["items"] if i["reason"] == "column_renamed"]
    r = semcat("review", "accept", renamed["id"], "--data", data, "--now", NOW, "--author", "alice")
    assert r.returncode == 0, r.stderr
    now_s = cc.model.parse_time(NOW)
    with cc.Catalog.open(data) as cat:
        accepted, scanned = cat.commits(limit=2)  # newest first
        assert now_s <= scanned.time < accepted.time < now_s + 1, (scanned, accepted)
        assert max(a.provenance.time for a in read_annotations(cat, T)) < now_s + 1
        # the next day's commit, backdated as the lake's are: refused before (the scan sat at the clock)
        sm.annotate(cat, T, {"description": "orders by category"}, author="ann", time=now_s + 43200)
        load = cat.commits(limit=1)[0].time
    # a --now before the latest commit: written just after it, never before the history it judged
    r = semcat("review", "scan", "--depth", "data", "--data", data, "--now", "2024-11-19T00:00:00Z")
    assert r.returncode == 0, r.stderr
    with cc.Catalog.open(data) as cat:
        assert load < cat.commits(limit=1)[0].time < load + 1
    r = semcat("review", "scan", "--depth", "data", "--data", data, "--now", "yesterday")
    assert r.returncode == 2 and "not an ISO-8601 time" in r.stderr and "Traceback" not in r.stderr
