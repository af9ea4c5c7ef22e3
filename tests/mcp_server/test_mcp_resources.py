"""MCP resources (the instructions, a table card per table at a snapshot) and prompts (answer a
question at a pinned snapshot, review stale annotations), through the real MCP client in memory,
over stdio with a real `semcat mcp` subprocess, over streamable HTTP at /mcp of a real `semcat
serve`, and through the MCP Inspector CLI."""

from __future__ import annotations

import json
import sys

import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

import semantic as sm
from catalog_core import lake
from eval.fixtures.mcplake import DIM, FCT, WIDE
from mcp_server.mcp import create_server, resources
from mcp_server.mcp.bounds import count_tokens
from tests.mcp_server.conftest import with_client
from tests.mcp_server.test_mcp_transports import data_copy, env, http_client, inspect, inspector, run, serve  # noqa: F401 - fixtures


def card(text: str) -> dict:
    return json.loads(text)


# ------------------------------------------------------------------ in memory
def test_resources_list_every_table_card_and_the_instructions(server, lake_cat):
    async def go(c):
        listed, templates = await c.list_resources(), await c.list_resource_templates()
        return listed, templates, await c.read_resource(resources.INSTRUCTIONS_URI)
    listed, templates, instructions = with_client(server, go)
    uris = [r.uri for r in listed.resources]
    names = sorted(lake.name_of(o.path) for o in lake_cat.query(lake.tables_query()) if lake.is_table(o.value))
    assert uris == [resources.INSTRUCTIONS_URI] + [f"semcat://table/{n}" for n in names]
    assert listed.next_cursor is None
    assert [t.uri_template for t in templates.resource_templates] == [resources.TABLE_TEMPLATE]
    text = instructions.contents[0].text
    assert text.startswith("semcat: a versioned catalog") and "pin_snapshot" in text


def test_resources_list_is_paged_with_a_cursor(server, monkeypatch):
    monkeypatch.setattr(resources, "RESOURCE_PAGE", 10)

    async def go(c):
        pages = [await c.list_resources()]
        while pages[-1].next_cursor:
            pages.append(await c.list_resources(cursor=pages[-1].next_cursor))
        try:
            await c.list_resources(cursor="not-a-cursor")
        except MCPError as exc:
            return pages, str(exc)
        return pages, None
    pages, bad = with_client(server, go)
    assert len(pages) >= 3 and all(len(p.resources) == 10 for p in pages[:-1])
    uris = [r.uri for p in pages for r in p.resources]
    assert len(uris) == len(set(uris)) and f"semcat://table/{FCT}" in uris
    assert bad is not None and "not-a-cursor" in bad and "omit it" in bad


def test_a_card_is_describe_table_at_the_pinned_snapshot(server, fresh_cat):
    server = create_server(fresh_cat)
    before = fresh_cat.resolve(None)
    sm.annotate(fresh_cat, DIM, {"description": "Shops, one row per shop."}, author="bob")

    async def go(c):
        old = await c.read_resource(f"semcat://table/{DIM}?snapshot={before}")
        pinned = await c.read_resource(f"semcat://table/{DIM}?snapshot=pin:{before}")
        latest = await c.read_resource(f"semcat://table/{DIM}")
        described = await c.call_tool("describe_table", {"table": DIM, "snapshot": before})
        return old, pinned, latest, described
    old, pinned, latest, described = with_client(server, go)
    assert old.contents[0].mime_type == "application/json"
    o, p, n = card(old.contents[0].text), card(pinned.contents[0].text), card(latest.contents[0].text)
    assert o["snapshot"]["vid"] == before and o == p == described.structured_content
    assert o["description"] == "Stores and their sales regions."
    assert n["snapshot"]["vid"] == before + 1 and n["description"] == "Shops, one row per shop."


def test_a_card_respects_the_token_budget_and_pages_its_columns(lake_cat):
    server = create_server(lake_cat, token_budget=1500)

    async def go(c):
        first = card((await c.read_resource(f"semcat://table/{WIDE}")).contents[0].text)
        nxt = await c.read_resource(f"semcat://table/{WIDE}?cursor={first['next_cursor']}")
        return first, card(nxt.contents[0].text)
    first, second = with_client(server, go)
    assert first["truncated"] and first["next_cursor"]
    assert count_tokens(json.dumps(first, separators=(",", ":"), ensure_ascii=False)) <= 1500
    shown = [c["name"] for c in first["columns"]]
    assert second["columns"][0]["name"] not in shown and second["columns"][0]["name"] == f"c{len(shown):03d}"


def test_a_bad_card_read_says_what_to_do(server):
    async def go(c):
        out = []
        for uri in (f"semcat://table/{FCT[:-1]}", f"semcat://table/{FCT}?snapshot=no-such-snapshot",
                    f"semcat://table/{FCT}?snapshot=99999"):
            try:
                await c.read_resource(uri)
                out.append(None)
            except MCPError as exc:
                out.append(str(exc))
        return out
    unknown, bad_name, too_new = with_client(server, go)
    assert unknown is not None and f"did you mean '{FCT}'" in unknown
    assert bad_name is not None and "list_snapshots" in bad_name
    assert too_new is not None and "99999" in too_new


def test_prompts_pin_a_snapshot_and_carry_the_findings(server, lake_cat):
    vid = lake_cat.resolve(None)

    async def go(c):
        listed = await c.list_prompts()
        answer = await c.get_prompt("answer_question", {"question": "revenue by region", "snapshot": str(vid - 1)})
        review = await c.get_prompt("review_stale_annotations", {"table": FCT})
        try:
            await c.get_prompt("review_stale_annotations", {"table": "acme.core.fct_order"})
        except MCPError as exc:
            return listed, answer, review, str(exc)
        return listed, answer, review, None
    listed, answer, review, bad = with_client(server, go)
    assert {p.name: [a.name for a in p.arguments or []] for p in listed.prompts} == {
        "answer_question": ["question", "snapshot"], "review_stale_annotations": ["table", "snapshot"]}
    text = answer.messages[0].content.text
    assert "revenue by region" in text and f'snapshot="pin:{vid - 1}"' in text and "run_sql" in text
    text = review.messages[0].content.text
    assert f'snapshot="pin:{vid}"' in text and "stale" in text and "amount" in text and "annotate" in text
    assert bad is not None and f"did you mean '{FCT}'" in bad


# ------------------------------------------------------------------ real transports
async def _session(c) -> dict:
    listed = await c.list_resources()
    fct = await c.read_resource(f"semcat://table/{FCT}?snapshot=pin:3")
    review = await c.get_prompt("review_stale_annotations", {"table": FCT})
    return {"uris": [r.uri for r in listed.resources], "card": card(fct.contents[0].text),
            "prompts": sorted(p.name for p in (await c.list_prompts()).prompts),
            "review": review.messages[0].content.text}


def _check(r: dict) -> None:
    assert resources.INSTRUCTIONS_URI in r["uris"] and f"semcat://table/{FCT}" in r["uris"]
    assert r["card"]["table"] == FCT and r["card"]["snapshot"]["vid"] == 3
    assert r["prompts"] == ["answer_question", "review_stale_annotations"]
    assert "check_staleness says" in r["review"]


def test_resources_and_prompts_over_stdio(data_copy):  # noqa: F811 - the fixtures imported above
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_server.cli", "mcp", "--data",
                                                                 data_copy("res-stdio")], env=env())
    _check(run(Client(params), _session))


@pytest.mark.slow  # npm: the pinned Inspector on node@22 (24 s); resources over HTTP stay in the default tier
def test_inspector_cli_lists_and_reads_resources_and_prompts(inspector, data_copy):  # noqa: F811 - the fixtures imported above
    target = [sys.executable, "-m", "mcp_server.cli", "mcp", "--data", data_copy("res-insp")]
    listed = inspect(inspector, target, "--method", "resources/list")
    assert f"semcat://table/{FCT}" in [r["uri"] for r in listed["resources"]]
    templates = inspect(inspector, target, "--method", "resources/templates/list")
    assert [t["uriTemplate"] for t in templates["resourceTemplates"]] == [resources.TABLE_TEMPLATE]
    read = inspect(inspector, target, "--method", "resources/read", "--uri", f"semcat://table/{FCT}?snapshot=3")
    assert card(read["contents"][0]["text"])["snapshot"]["vid"] == 3
    prompts = inspect(inspector, target, "--method", "prompts/list")
    assert sorted(p["name"] for p in prompts["prompts"]) == ["answer_question", "review_stale_annotations"]
    got = inspect(inspector, target, "--method", "prompts/get", "--prompt-name", "answer_question",
                  "--prompt-args", "question=orders per store", "snapshot=3")
    assert 'snapshot="pin:3"' in got["messages"][0]["content"]["text"]


def test_resources_and_prompts_over_http_with_a_read_token(data_copy):  # noqa: F811 - the fixtures imported above
    """Over streamable HTTP a read token reads every resource and gets every prompt; its writes are refused."""
    async def go(c):
        return (await c.read_resource(resources.INSTRUCTIONS_URI), await c.read_resource(f"semcat://table/{FCT}"),
                await c.call_tool("annotate", {"table": FCT, "fields": {"owner": "x"}}))
    with serve(data_copy("res-read"), "r-token:read") as url:
        _check(run(http_client(url, "r-token"), _session))
        instructions, fct, write = run(http_client(url, "r-token"), go)
    assert "pin_snapshot" in instructions.contents[0].text and card(fct.contents[0].text)["table"] == FCT
    assert write.is_error
