"""Every MCP tool through the SDK's in-memory client: results match the published output schemas,
pinning, paging to the end, truncation, error paths, inline warnings, and the bare / no-findings
modes with identical schemas."""

from __future__ import annotations

import json

import pytest

import semantic as sm
from eval.fixtures.mcplake import DIM, FCT, OLD, WIDE
from mcp_server.mcp import TOOL_NAMES, create_server
from tests.mcp_server.conftest import call, code, err, error_meta, list_tools, ok, with_client

# one typical call of every tool (the annotate call writes: used on fresh catalogs only)
CALLS: dict[str, dict] = {
    "pin_snapshot": {},
    "search_tables": {"query": "orders"},
    "describe_table": {"table": FCT},
    "get_column_values": {"table": FCT, "column": "status"},
    "find_join_path": {"from_table": FCT, "to_table": DIM},
    "list_metrics": {},
    "query_metric": {"metric": "revenue", "group_by": ["dim_store.region"]},
    "query_catalog": {"query": '/[obj_id = "acme"]/*/[obj_type = "table"]'},
    "list_snapshots": {},
    "diff_snapshots": {"from_snapshot": 1},
    "check_staleness": {"table": FCT},
    "get_lineage": {"table": FCT, "direction": "downstream"},
    "run_sql": {"sql": f"SELECT status, count(*) AS n FROM {FCT} GROUP BY status ORDER BY status"},
    "annotate": {"table": DIM, "column": "region", "fields": {"description": "the store's sales region"}},
}


def schemas(server):
    return {t.name: t for t in list_tools(server)}


def test_tool_list_matches_the_design_and_read_tools_are_read_only(server):
    tools = schemas(server)
    assert sorted(tools) == sorted(TOOL_NAMES) == sorted(CALLS)
    for name, t in tools.items():
        assert t.output_schema and t.output_schema.get("type") == "object", name
        assert t.annotations.read_only_hint is (name != "annotate"), name
        assert len(t.description) < 400, name


def test_every_read_tool_answers_with_its_schema_and_echoes_the_snapshot(server, lake_cat):
    tools = schemas(server)
    latest = lake_cat.latest_vid
    for name, args in CALLS.items():
        if name == "annotate":
            continue
        out = ok(call(server, name, args), tools[name].output_schema)
        assert out["snapshot"]["vid"] == latest and out["snapshot"]["handle"] == f"pin:{latest}", name


def test_annotate_writes_with_agent_provenance(fresh_cat):
    server = create_server(fresh_cat, author="agent:test")
    out = ok(call(server, "annotate", CALLS["annotate"]), schemas(server)["annotate"].output_schema)
    assert out["vid"] == fresh_cat.latest_vid and out["keys"] == ["column.2.description"]
    [ann] = [a for a in sm.read_annotations(fresh_cat, DIM) if a.key == "column.2.description"]
    assert ann.provenance.source == "agent" and ann.provenance.author == "agent:test"
    assert ann.value == "the store's sales region" and ann.provenance.confidence == 0.7


def test_the_text_carries_the_whole_result_and_every_warning(server):
    """Issue 23: many clients forward only the text content to the model; it carried a one-line
    summary, so the model never saw a deprecation or a missed SLA."""
    r = call(server, "run_sql", {"sql": f"SELECT count(*) FROM {OLD}"})
    out = ok(r)
    text = r.content[0].text
    summary, body = text.split("\n")
    assert summary.startswith("1 rows") and json.loads(body) == out
    [dep] = [w for w in out["warnings"] if w["kind"] == "deprecated"]
    assert dep["message"] in text and f"use {FCT} instead" in text and out["snapshot"]["handle"] in text
    card = call(server, "describe_table", {"table": FCT, "detail": "full"})
    for w in ok(card)["warnings"]:
        assert w["message"] in card.content[0].text


# ------------------------------------------------------------------ pinning
def test_a_commit_between_two_calls_does_not_change_a_pinned_answer(fresh_cat):
    server = create_server(fresh_cat)
    pin = ok(call(server, "pin_snapshot"))
    handle, vid = pin["snapshot"]["handle"], pin["snapshot"]["vid"]
    before = ok(call(server, "describe_table", {"table": FCT, "snapshot": handle}))
    rows_before = ok(call(server, "run_sql", {"sql": f"SELECT count(*) FROM {FCT}", "snapshot": handle}))
    sm.annotate(fresh_cat, FCT, {"description": "changed meanwhile"}, author="bob")
    with fresh_cat.transaction(author="etl", message="drop a file") as txn:
        [f] = fresh_cat.plan_files(FCT)
        txn.remove(f.path)
    after = ok(call(server, "describe_table", {"table": FCT, "snapshot": handle}))
    rows_after = ok(call(server, "run_sql", {"sql": f"SELECT count(*) FROM {FCT}", "snapshot": handle}))
    assert after == before and rows_after["rows"] == rows_before["rows"] == [[3]]
    assert after["snapshot"]["vid"] == vid == rows_after["snapshot"]["vid"]
    latest = ok(call(server, "describe_table", {"table": FCT}))
    assert latest["snapshot"]["vid"] == fresh_cat.latest_vid > vid
    assert latest["description"] == "changed meanwhile" != before["description"]
    assert ok(call(server, "run_sql", {"sql": f"SELECT count(*) FROM {FCT}"}))["rows"] == [[0]]
    # the same state by vid, by snapshot name and by ISO time
    fresh_cat.snapshot("audit", vid=vid)
    for ref in (vid, str(vid), "audit", pin["snapshot"]["time"]):
        assert ok(call(server, "describe_table", {"table": FCT, "snapshot": ref}))["snapshot"]["vid"] == vid, ref
    again = ok(call(server, "pin_snapshot", {"name": "audit"}))
    assert again["snapshot"]["vid"] == vid and again["behind"] == fresh_cat.latest_vid - vid


def test_a_cursor_keeps_reading_its_first_pages_snapshot(fresh_cat):
    server = create_server(fresh_cat)
    first = ok(call(server, "describe_table", {"table": WIDE, "limit": 100}))
    with fresh_cat.transaction(author="etl", message="new table") as txn:
        txn.add("/acme/core/zzz", {"obj_type": "table", "schema": {"schema_id": 0, "columns": []}, "stats": {}})
    nxt = ok(call(server, "describe_table", {"table": WIDE, "limit": 100, "cursor": first["next_cursor"]}))
    assert nxt["snapshot"] == first["snapshot"]
    assert [c["name"] for c in nxt["columns"]][:1] == ["c100"]


# ------------------------------------------------------------------ paging and truncation
def _all_pages(server, name, args, key):
    pages, cursor = [], None
    while True:
        out = ok(call(server, name, dict(args, cursor=cursor) if cursor else args))
        pages.append(out)
        assert out["truncated"] == ("next_cursor" in out)
        cursor = out.get("next_cursor")
        if cursor is None:
            return [x for p in pages for x in p[key]], pages


def test_paging_search_tables_to_the_end(server, lake_cat):
    items, pages = _all_pages(server, "search_tables", {"query": "", "limit": 7}, "tables")
    names = [h["name"] for h in items]
    assert names == sorted(n for n in _table_names(lake_cat))
    assert len(pages) == -(-len(names) // 7) and all(p["total"] == len(names) for p in pages)
    assert all(len(p["tables"]) == 7 for p in pages[:-1])


def _table_names(cat):
    return [o.path[1:].replace("/", ".") for o in cat.query('/*/*/[obj_type = "table"]')]


def test_paging_wide_table_columns_and_snapshots_to_the_end(server, lake_cat):
    cols, pages = _all_pages(server, "describe_table", {"table": WIDE}, "columns")
    assert [c["name"] for c in cols] == [f"c{i:03d}" for i in range(300)]
    assert len(pages) == 8 and pages[0]["total"] == 300  # default 40 columns a page
    commits, _ = _all_pages(server, "list_snapshots", {"limit": 9}, "commits")
    assert [c["vid"] for c in commits] == list(range(lake_cat.latest_vid, -1, -1))
    objs, _ = _all_pages(server, "query_catalog", {"query": '/acme/*/*'.replace("/acme", '/[obj_id = "acme"]'),
                                                   "limit": 5}, "objects")
    assert len(objs) == len(lake_cat.query('/[obj_id = "acme"]/*/*'))


def test_truncation_flags_and_cut_text(server):
    sql = ok(call(server, "run_sql", {"sql": f"SELECT * FROM {FCT}", "limit": 2}))
    assert sql["truncated"] and sql["row_count"] == 2 and len(sql["rows"]) == 2
    full = ok(call(server, "run_sql", {"sql": f"SELECT * FROM {FCT}", "limit": 3}))
    assert not full["truncated"] and full["row_count"] == 3
    vals = ok(call(server, "get_column_values", {"table": FCT, "column": "status", "limit": 1}))
    assert vals["truncated"] and vals["total"] == 2 and vals["values"] == [{"value": "placed", "count": 2}]
    wide = ok(call(server, "query_catalog", {"query": '/[obj_id = "acme"]/[obj_id = "core"]/[obj_id = "wide"]'}))
    [obj] = wide["objects"]
    text = json.dumps(obj["value"], ensure_ascii=False)
    assert obj["cut"] and "…[cut" in text and len(text) < 3000
    long = ok(call(server, "run_sql", {"sql": "SELECT repeat('x', 5000) AS s"}))
    assert long["rows"][0][0].startswith("x" * 300 + "…[cut 4700 more chars")


def test_get_column_values_filters_and_counts(server):
    out = ok(call(server, "get_column_values", {"table": DIM, "column": "region", "query": "north"}))
    assert out["values"] == [{"value": "Northeast", "count": 1}] and out["total"] == 1
    quoted = ok(call(server, "get_column_values", {"table": DIM, "column": "region", "query": "o'_%"}))
    assert quoted["values"] == []


def test_diff_snapshots_groups_schema_files_and_annotations(server, lake_cat):
    out = ok(call(server, "diff_snapshots", {"from_snapshot": 3, "prefix": FCT, "limit": 500}))  # 2 created FCT
    cats = {(c["target"], c["category"]) for c in out["changes"]}
    assert (FCT, "schema") in cats and (FCT, "files") in cats and (FCT, "annotation") in cats
    schema = [c for c in out["changes"] if c["category"] == "schema"][0]
    assert "amount bigint->double" in schema["detail"]
    assert out["from_snapshot"]["vid"] == 3 and out["snapshot"]["vid"] == lake_cat.latest_vid


def test_diff_snapshots_reuses_a_diff_and_sees_a_new_commit(fresh_cat):
    """Diffs are kept per (from, to, prefix) vid pair: a repeat and the next page answer alike,
    and a commit after them is in a diff to the new vid, not in one to the old."""
    server = create_server(fresh_cat, author="agent:test")
    old = fresh_cat.latest_vid
    first = ok(call(server, "diff_snapshots", {"from_snapshot": 3, "to_snapshot": old, "limit": 2}))
    again = ok(call(server, "diff_snapshots", {"from_snapshot": 3, "to_snapshot": old, "limit": 2}))
    assert first == again and first["truncated"]
    page2 = ok(call(server, "diff_snapshots", {"from_snapshot": 3, "cursor": first["next_cursor"], "limit": 2}))
    assert page2["changes"] and page2["changes"] != first["changes"] and page2["total"] == first["total"]
    ok(call(server, "annotate", CALLS["annotate"]))
    new = ok(call(server, "diff_snapshots", {"from_snapshot": 3, "limit": 500}))
    assert new["snapshot"]["vid"] == fresh_cat.latest_vid > old and new["total"] == first["total"] + 1
    assert any(c["target"] == DIM and c["category"] == "annotation" for c in new["changes"])
    assert ok(call(server, "diff_snapshots", {"from_snapshot": 3, "to_snapshot": old, "limit": 2})) == first


# ------------------------------------------------------------------ warnings
def test_inline_warnings_for_deprecated_late_and_stale(server):
    sql = ok(call(server, "run_sql", {"sql": f"SELECT * FROM {OLD} o JOIN {FCT} f USING (order_id)"}))
    assert set(sql["tables"]) == {OLD, FCT}
    dep = [w for w in sql["warnings"] if w["kind"] == "deprecated"]
    assert dep and dep[0]["table"] == OLD and dep[0]["suggestion"] == f"use {FCT} instead"
    assert dep[0]["fixes"] == [{"action": "successor", "params": {"table": FCT}}]   # the suggestion, typed
    reasons = {w["reason"] for w in sql["warnings"] if w["table"] == FCT}
    assert {"freshness_sla_missed", "column_type_changed"} <= reasons
    hit = [h for h in ok(call(server, "search_tables", {"query": "old orders"}))["tables"] if h["name"] == OLD][0]
    assert hit["deprecated"]["successor"] == FCT and hit["warnings"][0]["kind"] == "deprecated"
    card = ok(call(server, "describe_table", {"table": FCT, "detail": "full"}))
    assert card["freshness"]["status"] == "missed" and card["status"] in ("stale", "suspect")
    amount = [c for c in card["columns"] if c["name"] == "amount"][0]
    assert amount["status"] in ("stale", "suspect") and amount["unit"] == "cents"
    assert any(f["reason"] == "column_type_changed" for f in card["findings"])
    assert all(a["author"] == "alice" and a["source"] == "human" for a in card["annotations"])
    assert {a["key"] for a in card["annotations"]} >= {"table.description", "table.grain", "table.freshness_sla"}


def test_structured_fields_are_in_describe_and_search(fresh_cat):
    """not_for_reporting on a table hit and its description; additivity and null_when on a column."""
    sm.annotate(fresh_cat, OLD, {"not_for_reporting": {"reason": "old pipeline", "use_instead": [FCT]}}, author="a")
    sm.annotate(fresh_cat, FCT, {"additivity": {"kind": "semi_additive", "non_additive_dimension": "order_date"},
                                 "null_when": {"state": "pending", "column": "status", "values": ["placed"]}},
                column="amount", author="a")
    server = create_server(fresh_cat)
    hit = [h for h in ok(call(server, "search_tables", {"query": "old orders"}))["tables"] if h["name"] == OLD][0]
    assert hit["not_for_reporting"] == {"reason": "old pipeline", "use_instead": [FCT]}
    assert ok(call(server, "describe_table", {"table": OLD}))["not_for_reporting"]["use_instead"] == [FCT]
    for detail in ("summary", "full"):
        card = ok(call(server, "describe_table", {"table": FCT, "detail": detail}))
        amount = [c for c in card["columns"] if c["name"] == "amount"][0]
        assert amount["additivity"] == {"kind": "semi_additive", "non_additive_dimension": "order_date",
                                        "window": "last"}
        assert amount["null_when"] == {"state": "pending", "column": "status", "values": ["placed"]}
        assert "not_for_reporting" not in card and "additivity" not in card["columns"][0]


def test_staleness_findings_page_and_carry_reasons(server):
    out = ok(call(server, "check_staleness", {"limit": 2}))
    assert out["total"] >= 3 and len(out["findings"]) == 2 and out["truncated"]
    assert all(f["status"] in ("stale", "suspect") and f["reason"] for f in out["findings"])


# ------------------------------------------------------------------ bare and no-findings modes
@pytest.fixture(scope="module")
def modes(lake_cat):
    from eval.harness.conditions import condition_server

    return {"normal": create_server(lake_cat), "bare": condition_server(lake_cat, (True, True)),
            "no_findings": condition_server(lake_cat, (False, True)),
            "static": condition_server(lake_cat, (False, "static"))}


def test_modes_publish_identical_schemas_and_answer_within_them(modes):
    lists = {m: {t.name: (t.description, t.input_schema, t.output_schema) for t in list_tools(s)}
             for m, s in modes.items()}
    assert lists["normal"] == lists["bare"] == lists["no_findings"] == lists["static"]
    tools = schemas(modes["normal"])
    for m, s in modes.items():
        for name, args in CALLS.items():
            if name == "annotate":
                continue
            r = call(s, name, args)
            if r.is_error:  # bare: no relationships or metrics to use
                assert m == "bare" and name in ("find_join_path", "query_metric"), (m, name, r.content[0].text)
                err(r)
            else:
                ok(r, tools[name].output_schema)


def test_bare_hides_the_semantic_layer_and_no_findings_hides_detection(modes):
    bare = ok(call(modes["bare"], "describe_table", {"table": FCT, "detail": "full"}))
    assert "description" not in bare and not bare["warnings"] and not bare["relationships"]
    assert all("description" not in c for c in bare["columns"])
    assert not ok(call(modes["bare"], "list_metrics"))["metrics"]
    assert not any("/_semantic" in o["path"] for o in ok(call(modes["bare"], "query_catalog", {
        "query": '/[obj_id = "acme"]/[obj_id = "core"]/[obj_id = "fct_orders"]/*', "limit": 200}))["objects"])
    nf = ok(call(modes["no_findings"], "describe_table", {"table": FCT, "detail": "full"}))
    assert nf["description"] and not nf["findings"] and "status" not in nf
    assert all(w["kind"] == "deprecated" for w in nf["warnings"])
    assert ok(call(modes["no_findings"], "check_staleness"))["findings"] == []
    sql = ok(call(modes["no_findings"], "run_sql", {"sql": f"SELECT count(*) FROM {OLD}"}))
    assert [w["kind"] for w in sql["warnings"]] == ["deprecated"]


def test_static_serves_the_annotations_without_history_completeness_or_findings(modes):
    """The eval's `static` condition (issue 49): annotations as a conventional catalog serves them: the
    newest commit only, as a last-modified time (no message, author or paths), no named snapshot, no diff,
    no load log on cards, no findings; while the normal server shows all of them on the same catalog."""
    normal, static = modes["normal"], modes["static"]
    full = ok(call(normal, "list_snapshots", {"limit": 50}))
    assert len(full["commits"]) > 3 and any(c["message"] for c in full["commits"])
    snaps = ok(call(static, "list_snapshots", {"limit": 50}))
    assert len(snaps["commits"]) <= 1 and snaps["named"] == []
    assert all(c["message"] == "" and c["author"] == "" and c["paths"] == [] for c in snaps["commits"])
    assert ok(call(normal, "diff_snapshots", {"from_snapshot": 1}))["changes"]
    assert ok(call(static, "diff_snapshots", {"from_snapshot": 1}))["changes"] == []
    card = ok(call(static, "describe_table", {"table": FCT, "detail": "full"}))
    assert card["description"] and not card["findings"] and "status" not in card
    assert not {"completeness", "complete_through", "load_log", "incomplete"} & {
        k for k, v in card["freshness"].items() if v}
    assert card["freshness"].get("last_data_commit_time")  # a conventional catalog's "last modified"
    assert ok(call(static, "check_staleness"))["findings"] == []
    assert ok(call(normal, "check_staleness"))["findings"]
    assert all(w["kind"] != "finding" for w in card["warnings"])


# ------------------------------------------------------------------ errors
ERRORS = [
    ("describe_table", {"table": "acme.core.fct_order"}, "did you mean 'acme.core.fct_orders'"),
    ("describe_table", {"table": "fct_orders"}, "did you mean 'acme.core.fct_orders'"),
    ("describe_table", {"table": FCT, "columns": ["amont"]}, "did you mean 'amount'"),
    ("describe_table", {"table": FCT, "limit": 10_000}, "less than or equal to 200"),
    ("describe_table", {"table": FCT, "detail": "everything"}, "'summary' or 'full'"),
    ("get_column_values", {"table": FCT, "column": "stauts"}, "did you mean 'status'"),
    ("search_tables", {"snapshot": "no-such-snapshot"}, "list_snapshots"),
    ("search_tables", {"snapshot": "pin:x"}, "not a snapshot handle"),
    ("search_tables", {"snapshot": "pin:999999"}, "999999"),
    ("search_tables", {"snapshot": -3}, "vids start at 0"),
    ("search_tables", {"cursor": "garbage"}, "not a cursor of this search_tables call"),
    ("query_catalog", {"query": "/[obj_id = "}, "path queries look like"),
    ("query_catalog", {"query": ""}, "path query"),
    ("run_sql", {"sql": f"DELETE FROM {FCT}"}, "only SELECT"),
    ("run_sql", {"sql": "SELECT * FROM acme.core.fct_ordrs"}, "did you mean 'acme.core.fct_orders'"),
    ("run_sql", {"sql": f"SELECT amont FROM {FCT}"}, "did you mean 'amount'"),
    ("run_sql", {"sql": "SELECT * FROM read_csv('/etc/passwd')"}, ""),
    ("run_sql", {"sql": "  "}, "one read-only SELECT"),
    ("find_join_path", {"from_table": FCT, "to_table": FCT}, "same table"),
    ("find_join_path", {"from_table": FCT, "to_table": "acme.core.dim_stor"}, "did you mean 'acme.core.dim_store'"),
    ("query_metric", {"metric": "revenu"}, "did you mean"),
    ("query_metric", {"metric": "revenue", "grain": "decade"}, "fiscal_year"),
    ("list_metrics", {"table": "acme.nope.t"}, "does not exist"),
    ("check_staleness", {"depth": "deep"}, "'metadata' or 'data'"),
    ("diff_snapshots", {"from_snapshot": "nope"}, "list_snapshots"),
    ("diff_snapshots", {"from_snapshot": 1, "prefix": "acme._x"}, "prefix"),
    ("pin_snapshot", {"as_of": 1, "name": "x"}, "not both"),
    ("annotate", {"table": FCT, "fields": {"colour": "red"}}, "colour"),
    ("annotate", {"table": FCT, "column": "amont", "fields": {"description": "x"}}, "amount"),
    ("annotate", {"table": FCT, "fields": {}}, "fields"),
    ("annotate", {"table": "acme.core.nope", "fields": {"description": "x"}}, "does not exist"),
]


@pytest.mark.parametrize("name,args,expect", ERRORS, ids=[f"{n}-{i}" for i, (n, _a, _e) in enumerate(ERRORS)])
def test_error_paths_are_tool_errors_that_say_what_to_do(server, name, args, expect):
    text = err(call(server, name, args))
    assert expect.lower() in text.lower()


def test_cursor_errors(server, lake_cat):
    first = ok(call(server, "search_tables", {"query": "", "limit": 2}))
    text = err(call(server, "search_tables", {"query": "orders", "limit": 2, "cursor": first["next_cursor"]}))
    assert "same other arguments" in text
    text = err(call(server, "list_metrics", {"cursor": first["next_cursor"]}))
    assert "not a cursor of this list_metrics call" in text
    text = err(call(server, "search_tables", {"query": "", "limit": 2, "cursor": first["next_cursor"], "snapshot": 1}))
    assert "another snapshot" in text


ERROR_CODES = [
    ("describe_table", {"table": "acme.core.fct_order"}, "NoSuchTableError", None),
    ("describe_table", {"table": FCT, "detail": "everything"}, "InvalidValueError", None),
    ("search_tables", {"snapshot": "no-such-snapshot"}, "SnapshotNotFoundError", None),
    ("search_tables", {"bogus": 1}, "InvalidValueError", None),
    ("run_sql", {"sql": "SELECT * FROM read_csv('/etc/passwd')"}, "SqlRefusedError", "file_access"),
    ("run_sql", {"sql": f"DELETE FROM {FCT}"}, "SqlRefusedError", "read_only"),
    ("run_sql", {"sql": "SELECT * FROM acme.core.fct_ordrs"}, "NotFoundError", None),
    ("run_sql", {"sql": f"SELECT amont FROM {FCT}"}, "SqlError", None),
    ("query_catalog", {"query": "/[obj_id = "}, "QuerySyntaxError", None),
    ("drop_table", {}, "NotFoundError", None),
]


@pytest.mark.parametrize("name,args,want,rule", ERROR_CODES, ids=[f"{c[0]}-{c[2]}" for c in ERROR_CODES])
def test_error_results_carry_a_machine_readable_code(server, name, args, want, rule):
    r = call(server, name, args)
    assert code(r) == want, r.content[0].text
    assert error_meta(r).get("rule") == rule


def test_hints_name_tools_not_python_calls(server):
    text = err(call(server, "search_tables", {"snapshot": "no-such-snapshot"}))
    assert "list_snapshots" in text and "snapshots()" not in text
    assert text.count("list_snapshots") == 1


def test_a_timeout_does_not_advise_an_argument_the_tool_lacks(server, monkeypatch):
    from mcp_server.mcp import data

    monkeypatch.setattr(data, "SQL_TIMEOUT_S", 0.05)  # the server's fixed limit, lowered so a real query passes it
    r = call(server, "run_sql", {"sql": "SELECT count(*) FROM range(100000000000) a"})
    assert code(r) == "SqlTimeoutError", r.content[0].text
    text = r.content[0].text
    assert "timeout_s" not in text and "time limit" in text and "fixed" in text


def test_unknown_tool_and_bad_argument_types(server):
    async def go(c):
        return [await c.call_tool("drop_table", {}), await c.call_tool("run_sql", {"sql": 5}),
                await c.call_tool("describe_table", {})]
    unknown, wrong, missing = with_client(server, go)
    assert unknown.is_error and "drop_table" in unknown.content[0].text
    assert "sql" in err(wrong) and "table" in err(missing)


def test_an_unknown_argument_is_refused_by_name_never_dropped(fresh_cat):
    """Issue 22: `search_tables({"limt": 2, "snapshott": "pin:3"})` answered 10 rows at the latest vid."""
    server = create_server(fresh_cat)
    pin = ok(call(server, "pin_snapshot", {"as_of": 3}))["snapshot"]["handle"]
    text = err(call(server, "search_tables", {"query": "orders", "snapshott": pin}))
    assert "unknown argument 'snapshott'; did you mean 'snapshot'?" in text and "its arguments: query" in text
    text = err(call(server, "search_tables", {"limt": 2, "snapshott": pin}))
    assert "'limt' (did you mean 'limit'?)" in text and "'snapshott' (did you mean 'snapshot'?)" in text
    assert "did you mean" not in err(call(server, "run_sql", {"sql": "SELECT 1", "zzzzzzzz": 1}))
    # every tool publishes the rule it enforces
    for tool in list_tools(server):
        assert tool.input_schema.get("additionalProperties") is False, tool.name
        assert "unknown argument 'bogus'" in err(call(server, tool.name, {**CALLS[tool.name], "bogus": 1}))


def test_the_echoed_snapshot_object_is_accepted_as_its_handle(fresh_cat):
    server = create_server(fresh_cat)
    first = ok(call(server, "search_tables", {"query": "orders", "snapshot": 3}))
    echoed = first["snapshot"]
    assert echoed["vid"] == 3 and set(echoed) >= {"vid", "time", "handle"}
    again = ok(call(server, "search_tables", {"query": "orders", "snapshot": echoed}))
    assert again["snapshot"]["vid"] == 3 and again["tables"] == first["tables"]
    assert ok(call(server, "diff_snapshots", {"from_snapshot": echoed}))["snapshot"]["vid"] >= 3
    text = err(call(server, "search_tables", {"query": "orders", "snapshot": {"when": "now"}}))
    assert "snapshot" in text and "\n" not in text


# every tool at its largest allowed limit (issue 22: query_catalog at 200 answered 58 K tokens, run_sql 33 K)
MAX_CALLS: list[tuple[str, dict, str]] = [
    ("search_tables", {"query": "", "limit": 50}, "tables"),
    ("describe_table", {"table": WIDE, "detail": "full", "limit": 200}, "columns"),
    ("get_column_values", {"table": FCT, "column": "order_id", "limit": 200}, "values"),
    ("list_metrics", {"limit": 100}, "metrics"),
    ("query_metric", {"metric": "revenue", "group_by": ["dim_store.region"], "limit": 1000}, "rows"),
    ("query_catalog", {"query": "/*/*/*", "limit": 200}, "objects"),
    ("list_snapshots", {"limit": 200}, "commits"),
    ("diff_snapshots", {"from_snapshot": 0, "limit": 500}, "changes"),
    ("check_staleness", {"depth": "data", "limit": 200}, "findings"),
    ("run_sql", {"sql": f"SELECT * FROM {WIDE} ORDER BY 1", "limit": 1000}, "rows"),
]


def response_tokens(result) -> int:
    from mcp_server.mcp.bounds import count_tokens

    text = json.dumps(result.structured_content, separators=(",", ":"), ensure_ascii=False)
    return count_tokens(text) + sum(count_tokens(c.text) for c in result.content)


def _pages(server, name, args, field):
    items, sizes, cursor = [], [], None
    for _ in range(200):
        r = call(server, name, {**args, **({"cursor": cursor} if cursor else {})})
        out = ok(r)
        items += out[field]
        sizes.append(response_tokens(r))
        cursor = out.get("next_cursor")
        assert bool(cursor) == out["truncated"]
        if not cursor:
            return items, sizes
    raise AssertionError("paging did not end")


@pytest.mark.parametrize("name,args,field", MAX_CALLS, ids=[c[0] for c in MAX_CALLS])
def test_every_response_stays_within_the_token_budget_and_pages_resume_exactly(lake_cat, name, args, field):
    budget = 6000  # one row of the 300-column table with its column list is 2.8 K tokens, sent twice (JSON + text)
    small = create_server(lake_cat, token_budget=budget)
    unbounded = create_server(lake_cat, token_budget=10**9)
    pin = ok(call(unbounded, "pin_snapshot", {}))["snapshot"]["handle"]
    args = {**args, ("to_snapshot" if name == "diff_snapshots" else "snapshot"): pin}
    got, sizes = _pages(small, name, args, field)
    want, _ = _pages(unbounded, name, args, field)
    assert max(sizes) <= budget, sizes
    assert got == want  # the pages of the budget resume exactly where the previous one stopped


def test_the_default_budget_cuts_query_catalog_at_its_largest_limit(tmp_path):
    import catalog_core as cc

    cat = cc.Catalog.open(str(tmp_path / "data"))
    try:
        with cat.transaction() as t:
            t.add("/acme", {"obj_type": "catalog", "properties": {}})
            t.add("/acme/core", {"obj_type": "namespace", "properties": {}})
            for i in range(200):
                t.add(f"/acme/core/t{i:03d}", {"obj_type": "table", "properties": {"note": f"table {i} " + "x y " * 200}})
        server = create_server(cat)
        r = call(server, "query_catalog", {"query": "/*/*/*", "limit": 200})
        out = ok(r)
        assert response_tokens(r) <= 8000 and out["truncated"] and 0 < len(out["objects"]) < 200
        assert "token budget" in r.content[0].text
        rest = ok(call(server, "query_catalog", {"query": "/*/*/*", "limit": 200, "cursor": out["next_cursor"]}))
        assert rest["objects"][0]["path"] == f"/acme/core/t{len(out['objects']):03d}"
        with pytest.raises(ValueError, match="token_budget"):
            create_server(cat, token_budget=10)
    finally:
        cat.close()


def test_warnings_name_only_what_the_answer_rests_on(server):
    """Issue 23: a run_sql carried findings about columns and relationships it never touched."""
    def reasons(name, args):
        return {w["reason"] for w in ok(call(server, name, args))["warnings"]}

    everything = reasons("describe_table", {"table": FCT})
    # the table's last load is 16 days old against daily loads: not_loaded_since (the freshness SLA's
    # finding folds into it: one cause), table-level
    fresh = {"freshness_sla_missed", "not_loaded_since"}
    assert {"column_type_changed", "values_restated"} <= everything and everything & fresh
    counted = reasons("run_sql", {"sql": f"SELECT count(*) FROM {FCT}"})
    assert counted & fresh  # table-level: every answer from the table rests on it
    assert not counted & {"column_type_changed", "values_restated"}  # amount and status are not read
    assert "column_type_changed" in reasons("run_sql", {"sql": f"SELECT sum(amount) FROM {FCT}"})
    assert "values_restated" in reasons("run_sql", {"sql": f"SELECT status, count(*) FROM {FCT} GROUP BY 1"})
    assert reasons("run_sql", {"sql": f"SELECT * FROM {FCT} LIMIT 1"}) >= everything - {"fan_out"}
    assert not reasons("find_join_path", {"from_table": FCT, "to_table": DIM}) & {"column_type_changed",
                                                                                   "values_restated"}


def test_read_only_has_no_annotate_and_the_version_is_the_package_s(lake_cat):
    from importlib.metadata import version

    server = create_server(lake_cat, read_only=True)
    assert "annotate" not in {t.name for t in list_tools(server)}
    text = err(call(server, "annotate", {"table": DIM, "fields": {"owner": "x"}}))
    assert "annotate" in text and "pin_snapshot" in text  # an unknown tool, naming the ones there are

    async def info(c):
        return c.server_info if hasattr(c, "server_info") else c.initialize_result.server_info

    assert with_client(create_server(lake_cat), info).version == version("semcat")
