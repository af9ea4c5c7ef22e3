"""The OpenAI-compatible agent against a real local HTTP server (FastAPI on uvicorn, 127.0.0.1, in a
thread) that replays scripted chat-completion responses and records every request, while the agent runs
in the harness loop against the real MCP server (create_server over eval/fixtures/mcplake.py) through
the in-memory MCP client."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import anyio
import pytest
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from mcp import Client

import catalog_core as cc
from eval.agents import KINDS, make_agent
from eval.agents.loop import HIDDEN_TOOLS, Episode, list_tool_specs, pin, run_episode
from eval.agents.openai import INVALID_PREFIX, OpenAIAgent, OpenAIEndpointError
from eval.fixtures import mcplake
from eval.fixtures.mcplake import FCT
from mcp_server.mcp import TOOL_NAMES, create_server
from tests.helpers import free_port

SQL = f"SELECT status, count(*) AS n FROM {FCT} GROUP BY status ORDER BY status"


# ------------------------------------------------------------------ the scripted endpoint
class Endpoint:
    """Answers POST /v1/chat/completions with the next scripted (status, body); records requests."""

    def __init__(self) -> None:
        self.script: list[tuple[int, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.url = ""

    def play(self, *responses: tuple[int, Any]) -> None:
        self.script = list(responses)
        self.requests.clear()
        self.headers.clear()


def app_for(ep: Endpoint) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def complete(request: Request) -> JSONResponse:
        ep.requests.append(await request.json())
        ep.headers.append(dict(request.headers))
        if not ep.script:
            return JSONResponse({"error": {"message": "the script is exhausted"}}, status_code=418)
        status, body = ep.script.pop(0)
        return JSONResponse(body, status_code=status)

    return app


@pytest.fixture(scope="module")
def endpoint():
    ep = Endpoint()
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app_for(ep), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the scripted endpoint did not start"
        time.sleep(0.02)
    ep.url = f"http://127.0.0.1:{port}/v1"
    yield ep
    server.should_exit = True
    thread.join(10)


def calls(*items: tuple[str, Any], usage: tuple[int, int] = (100, 10), content: str | None = None,
          first_id: int = 1) -> tuple[int, dict[str, Any]]:
    """A chat completion whose message calls tools; a dict argument is sent as JSON, a str as is."""
    tcs = [{"id": f"call_{first_id + i}", "type": "function",
            "function": {"name": n, "arguments": a if isinstance(a, str) else json.dumps(a)}}
           for i, (n, a) in enumerate(items)]
    return 200, {"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
                 "choices": [{"index": 0, "finish_reason": "tool_calls",
                              "message": {"role": "assistant", "content": content, "tool_calls": tcs}}],
                 "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                           "total_tokens": usage[0] + usage[1]}}


def text(content: str, usage: tuple[int, int] = (50, 5)) -> tuple[int, dict[str, Any]]:
    return 200, {"id": "chatcmpl-2", "object": "chat.completion", "model": "m",
                 "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
                 "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]}}


def error(status: int, message: str) -> tuple[int, dict[str, Any]]:
    return status, {"error": {"message": message, "type": "test"}}


# ------------------------------------------------------------------ the MCP side
@pytest.fixture(scope="module")
def server(tmp_path_factory):
    d = tmp_path_factory.mktemp("openai-lake")
    cat = cc.Catalog.open(str(d / "data"))
    mcplake.build(cat, d / "files", extra_tables=2)
    yield create_server(cat)
    cat.close()


def episode(server: Any, agent: Any, question: str = "How many orders are there per status?", **kw: Any) -> Episode:
    async def go() -> Episode:
        async with Client(server) as client:
            handle, _ = await pin(client)
            return await run_episode(client, agent, question, snapshot=handle, **kw)
    return anyio.run(go)


def agent_for(ep: Endpoint, **kw: Any) -> OpenAIAgent:
    kw.setdefault("api_key", "test-key")
    kw.setdefault("backoff", 0.0)
    return OpenAIAgent(ep.url, "scripted-model", **kw)


def tool_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] == "tool"]


# ------------------------------------------------------------------ tests
def test_a_scripted_session_ends_with_its_final_sql(endpoint, server):
    endpoint.play(calls(("search_tables", {"query": "orders"}), usage=(100, 10)),
                  calls(("describe_table", {"table": FCT}), usage=(200, 20), first_id=2),
                  calls(("run_sql", {"sql": SQL}), usage=(300, 30), first_id=3),
                  calls(("final_answer", {"sql": SQL}), usage=(400, 40), first_id=4))
    agent = agent_for(endpoint)
    ep = episode(server, agent)
    assert ep.agent_error is None and ep.abstain_reason is None
    assert ep.sql == SQL
    assert [t.call.name for t in ep.turns] == ["search_tables", "describe_table", "run_sql"]
    assert not any(t.is_error for t in ep.turns)
    assert all(t.call.arguments["snapshot"] == ep.snapshot for t in ep.turns)   # the loop's pin, not the model's
    assert ep.turns[2].result["rows"]   # the SQL ran at the pin

    # usage summed across the four requests, by the agent and in the episode
    assert agent.usage() == (1000, 100) and (ep.prompt_tokens, ep.completion_tokens) == (1000, 100)

    reqs = endpoint.requests
    assert len(reqs) == 4
    assert all(r["model"] == "scripted-model" and r["temperature"] == 0 for r in reqs)
    assert all(h["authorization"] == "Bearer test-key" for h in endpoint.headers)
    # the tools: every offered MCP tool as a function without `snapshot`, plus the two harness tools
    fns = {t["function"]["name"]: t["function"] for t in reqs[0]["tools"]}
    assert all(t["type"] == "function" for t in reqs[0]["tools"])
    assert set(fns) == (set(TOOL_NAMES) - HIDDEN_TOOLS) | {"final_answer", "abstain"}
    for name, fn in fns.items():
        assert "snapshot" not in fn["parameters"].get("properties", {}), name
        assert "snapshot" not in fn["parameters"].get("required", []), name
    assert fns["describe_table"]["parameters"]["required"] == ["table"]
    assert fns["final_answer"]["parameters"]["required"] == ["sql"]
    # the first request: system prompt and question only
    assert [m["role"] for m in reqs[0]["messages"]] == ["system", "user"]
    assert reqs[0]["messages"][1]["content"] == "How many orders are there per status?"
    # each later request carries every earlier call and its turn's result, ids consistent
    last = reqs[3]["messages"]
    assert [m["role"] for m in last] == ["system", "user"] + ["assistant", "tool"] * 3
    for i, turn in enumerate(ep.turns):
        asked, answered = last[2 + 2 * i], last[3 + 2 * i]
        assert asked["tool_calls"][0]["id"] == answered["tool_call_id"] == f"call_{i + 1}"
        assert asked["tool_calls"][0]["function"]["name"] == turn.call.name
        assert json.loads(answered["content"]) == json.loads(json.dumps(turn.result))
    assert "acme.core.old_orders" in tool_messages(reqs[1])[0]["content"]   # the search result reached the model
    # the pinned snapshot's time is stated once a result shows it
    time_of_pin = ep.turns[0].result["snapshot"]["time"]
    assert time_of_pin not in reqs[0]["messages"][0]["content"]
    assert time_of_pin in reqs[1]["messages"][0]["content"]


def test_bad_tool_calls_become_error_turns_and_the_model_corrects_itself(endpoint, server):
    endpoint.play(calls(("drop_everything", {"really": True})),
                  calls(("search_tables", '{"query": "orders"'), first_id=2),       # truncated JSON
                  calls(("pin_snapshot", {}), first_id=3),                         # hidden from agents
                  calls(("final_answer", {"sequel": SQL}), first_id=4),            # no sql
                  calls(("search_tables", {"query": "orders"}), first_id=5),
                  calls(("final_answer", {"sql": SQL}), first_id=6))
    ep = episode(server, agent_for(endpoint))
    assert ep.agent_error is None and ep.sql == SQL
    assert [t.is_error for t in ep.turns] == [True, True, True, True, False]
    assert ep.turns[1].call.name == INVALID_PREFIX + "search_tables"
    assert ep.turns[4].result["tables"][0]["name"] == FCT
    msgs = tool_messages(endpoint.requests[-1])
    assert [m["tool_call_id"] for m in msgs] == [f"call_{i}" for i in range(1, 6)]
    assert "unknown tool 'drop_everything'" in msgs[0]["content"] and "search_tables" in msgs[0]["content"]
    assert "not valid JSON" in msgs[1]["content"] and "Call search_tables again" in msgs[1]["content"]
    assert "unknown tool 'pin_snapshot'" in msgs[2]["content"]
    assert 'final_answer needs {"sql"' in msgs[3]["content"]
    assert msgs[4]["content"].startswith("{")


def test_several_tool_calls_in_one_response_are_taken_in_order(endpoint, server):
    endpoint.play(calls(("search_tables", {"query": "orders"}), ("describe_table", {"table": FCT}),
                        ("get_column_values", {"table": FCT, "column": "status"})),
                  calls(("final_answer", {"sql": SQL}), first_id=4))
    ep = episode(server, agent_for(endpoint, max_result_chars=300))
    assert ep.sql == SQL and len(endpoint.requests) == 2   # the queued calls did not ask the model
    assert [t.call.name for t in ep.turns] == ["search_tables", "describe_table", "get_column_values"]
    msgs = endpoint.requests[1]["messages"]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "tool", "tool", "tool"]
    assert [c["id"] for c in msgs[2]["tool_calls"]] == [m["tool_call_id"] for m in msgs[3:]] == \
        ["call_1", "call_2", "call_3"]
    # a result over the bound is cut with a marker
    assert all(len(m["content"]) < 500 for m in msgs[3:])
    assert "[truncated: " in msgs[4]["content"]


def test_queued_final_answer_ends_the_episode(endpoint, server):
    endpoint.play(calls(("search_tables", {"query": "orders"}), ("final_answer", {"sql": SQL}),
                        ("run_sql", {"sql": "SELECT 1"})))
    ep = episode(server, agent_for(endpoint))
    assert ep.sql == SQL and [t.call.name for t in ep.turns] == ["search_tables"] and len(endpoint.requests) == 1


def test_plain_text_with_a_sql_block_is_the_final_answer(endpoint, server):
    endpoint.play(text(f"The answer is:\n\n```sql\n{SQL}\n```\nThat counts orders per status."))
    ep = episode(server, agent_for(endpoint))
    assert ep.sql == SQL and ep.abstain_reason is None and ep.turns == []


def test_plain_text_without_sql_is_an_abstention_with_that_text(endpoint, server):
    endpoint.play(text("The catalog has no table about the weather."))
    ep = episode(server, agent_for(endpoint), question="What was the weather yesterday?")
    assert ep.sql is None and ep.agent_error is None
    assert ep.abstain_reason == "The catalog has no table about the weather."


def test_abstain_tool(endpoint, server):
    endpoint.play(calls(("abstain", {"reason": "no such data"})))
    ep = episode(server, agent_for(endpoint))
    assert ep.sql is None and ep.abstain_reason == "no such data"


def test_a_500_is_retried_then_the_session_goes_on(endpoint, server):
    endpoint.play(error(500, "overloaded"), error(503, "still overloaded"), calls(("final_answer", {"sql": SQL})))
    agent = agent_for(endpoint, max_retries=2)
    ep = episode(server, agent)
    assert ep.agent_error is None and ep.sql == SQL
    assert len(endpoint.requests) == 3 and endpoint.requests[0] == endpoint.requests[2]
    assert agent.usage() == (100, 10)


def test_a_429_is_retried(endpoint, server):
    endpoint.play(error(429, "rate limited"), calls(("final_answer", {"sql": SQL})))
    ep = episode(server, agent_for(endpoint, max_retries=1))
    assert ep.sql == SQL and len(endpoint.requests) == 2


def test_a_persistent_500_is_an_agent_error_in_the_episode(endpoint, server):
    endpoint.play(*[error(500, "the model crashed")] * 5)
    ep = episode(server, agent_for(endpoint, max_retries=2))
    assert len(endpoint.requests) == 3   # one try and two retries
    assert ep.sql is None and ep.agent_error is not None
    assert ep.agent_error.startswith("OpenAIEndpointError: ")
    for part in ("answered 500 after 3 attempts", "the model crashed", "base URL", "'scripted-model'",
                 "OPENAI_API_KEY"):
        assert part in ep.agent_error, part
    assert ep.abstain_reason == f"agent error: {ep.agent_error}"


def test_a_401_is_not_retried_and_says_to_set_the_key(endpoint, server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    endpoint.play(error(401, "Incorrect API key provided"), calls(("final_answer", {"sql": SQL})))
    agent = OpenAIAgent(endpoint.url, "scripted-model", backoff=0.0)
    ep = episode(server, agent)
    assert len(endpoint.requests) == 1 and "authorization" not in endpoint.headers[0]
    assert ep.sql is None
    assert "401" in ep.agent_error and "Incorrect API key provided" in ep.agent_error
    assert "Set OPENAI_API_KEY" in ep.agent_error and "no key was sent" in ep.agent_error


def test_the_key_comes_from_the_environment(endpoint, server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    endpoint.play(calls(("final_answer", {"sql": SQL})))
    episode(server, OpenAIAgent(endpoint.url, "scripted-model"))
    assert endpoint.headers[0]["authorization"] == "Bearer from-env"


def test_a_400_is_not_retried_and_names_what_to_check(endpoint, server):
    endpoint.play(error(404, "The model `nope` does not exist"))
    ep = episode(server, agent_for(endpoint))
    assert len(endpoint.requests) == 1
    assert "answered 404: The model `nope` does not exist; check the base URL" in ep.agent_error


def test_an_unreachable_endpoint_is_an_agent_error(server):
    agent = OpenAIAgent(f"http://127.0.0.1:{free_port()}/v1", "m", api_key="k", max_retries=1, backoff=0.0)
    ep = episode(server, agent)
    assert ep.sql is None and "could not reach" in ep.agent_error and "after 2 attempts" in ep.agent_error


def test_the_budget_reminder_and_a_new_episode_starts_afresh(endpoint, server):
    agent = agent_for(endpoint)
    endpoint.play(calls(("search_tables", {"query": "orders"})),
                  calls(("search_tables", {"query": "stores"}), first_id=2),
                  calls(("final_answer", {"sql": SQL}), first_id=3))
    ep = episode(server, agent, budget=2)
    assert ep.sql == SQL
    assert endpoint.requests[1]["messages"][-1] == {
        "role": "user", "content": "You have 1 tool call left. Answer now with final_answer, or abstain."}
    assert "no tool calls left" in endpoint.requests[2]["messages"][-1]["content"]
    # the same agent, a second episode: the conversation starts from the question again
    endpoint.play(calls(("final_answer", {"sql": "SELECT 1"})))
    ep2 = episode(server, agent, question="another question")
    assert ep2.sql == "SELECT 1"
    assert [m["role"] for m in endpoint.requests[0]["messages"]] == ["system", "user"]


def test_tool_list_matches_what_the_loop_offers(server):
    async def go() -> Any:
        async with Client(server) as client:
            return await list_tool_specs(client)
    from eval.agents.openai import function_tools
    specs = anyio.run(go)
    fns = function_tools(specs)
    assert [f["function"]["name"] for f in fns] == [s.name for s in specs] + ["final_answer", "abstain"]
    assert all(f["function"]["description"] for f in fns)


def test_make_agent():
    agent = make_agent("openai", base_url="http://127.0.0.1:9/v1", model="m")
    assert isinstance(agent, OpenAIAgent) and agent.url == "http://127.0.0.1:9/v1/chat/completions"
    with pytest.raises(ValueError, match="needs --model"):
        make_agent("openai", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ValueError, match=r"unknown agent kind 'gpt': choose one of offline, openai"):
        make_agent("gpt")
    assert KINDS == ("offline", "openai")
    with pytest.raises(ValueError, match="base_url must be an http"):
        OpenAIAgent("127.0.0.1:9", "m")


def test_endpoint_error_carries_the_status():
    e = OpenAIEndpointError("x", 503, "busy")
    assert (e.status_code, e.body_message, str(e)) == (503, "busy", "x")


def test_no_lake_name_in_the_agent_code():
    """HARNESS.md's rule for agent code, on this agent (tests/eval/test_agent_rules.py checks the package)."""
    import re

    import eval.agents.openai as mod
    src = open(mod.__file__).read()
    banned = r"fct_|dim_(date|store|product|customer)|agg_daily|agg_weekly|rpt_finance|sales_daily|etl_load_log|" \
             r"map_store_code|net_line_cents|loyalty_tier|acme"
    assert not re.search(banned, src, re.I)
