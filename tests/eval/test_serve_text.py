"""`eval serve`'s episode tools through the real MCP client (in memory) on the small MCP lake: the TEXT
content of next_question / submit_answer / abstain carries everything an agent needs (the question, "now",
the calls left, what is recorded, what is next), because most MCP clients show the model only the text.
The Acme-lake end to end (a real `semcat eval serve` subprocess) is tests/eval/test_eval_serve.py (slow)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcp import Client

import catalog_core as cc
from eval.fixtures import mcplake
from eval.harness.questions import Question
from eval.harness.serve import build_server

QS = [Question(id="t1", question="How many orders\nwere shipped last week?", tables=("core.fct_orders",)),
      Question(id="t2", question="What did the supplier charge?", tags=("unanswerable",))]


@pytest.fixture
def server(tmp_path):
    cat = cc.Catalog.open(str(tmp_path / "data"))
    mcplake.build(cat, tmp_path / "files", extra_tables=0)
    yield build_server(cat, "stale", QS, str(tmp_path / "run"), budget=5)
    cat.close()


def _calls(server: Any, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async def go() -> list[Any]:
        async with Client(server) as client:
            return [await client.call_tool(name, args) for name, args in calls]
    return anyio.run(go)


def _text(result: Any) -> tuple[str, dict[str, Any]]:
    """The summary line and the JSON body of a result's single text content (which must equal the
    structured content)."""
    assert not result.is_error, result.content[0].text
    assert len(result.content) == 1
    summary, newline, body = result.content[0].text.partition("\n")
    assert newline and "\n" not in body, result.content[0].text
    assert json.loads(body) == result.structured_content
    return summary, json.loads(body)


def test_the_text_content_carries_the_question_now_and_calls_left(server):
    first, again, run_sql, answer, second, abstained, done = _calls(server, [
        ("next_question", {}), ("next_question", {}), ("run_sql", {"sql": "SELECT 1 AS x"}),
        ("submit_answer", {"id": "t1", "sql": "SELECT 1"}), ("next_question", {}),
        ("abstain", {"id": "t2", "reason": "no supplier data"}), ("next_question", {})])
    summary, body = _text(first)
    now = server.episodes.now
    assert body["question"] == QS[0].question and body["now"] == now and body["calls_left"] == 5
    # the summary line alone names them too (the question on one line)
    assert "How many orders were shipped last week?" in summary and now in summary and "5 tool calls left" in summary
    assert "submit_answer(id='t1'" in summary and "abstain(id='t1'" in summary
    assert _text(again)[1] == body  # the open question again, nothing counted
    assert not run_sql.is_error, run_sql.content[0].text

    summary, body = _text(answer)
    assert body == {"id": "t1", "recorded": "sql", "calls_used": 1, "remaining": 1, "next": "call next_question"}
    assert "t1" in summary and "1 question(s) left" in summary

    summary, body = _text(second)
    assert body["id"] == "t2" and body["calls_left"] == 5 and QS[1].question in summary

    summary, body = _text(abstained)
    assert body["recorded"] == "abstain" and body["remaining"] == 0 and "0 question(s) left" in summary
    summary, body = _text(done)
    assert body["done"] is True and "complete" in summary
