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
    assert body == {"id": "t1", "recorded": "sql", "calls_used": 1, "remaining": 1, "session": 1,
                    "next": "call next_question"}
    assert "t1" in summary and "1 question(s) left" in summary

    summary, body = _text(second)
    assert body["id"] == "t2" and body["calls_left"] == 5 and QS[1].question in summary

    summary, body = _text(abstained)
    assert body["recorded"] == "abstain" and body["remaining"] == 0 and "0 question(s) left" in summary
    summary, body = _text(done)
    assert body["done"] is True and "complete" in summary


def test_fresh_agents_each_conversation_answers_at_most_per_agent_questions(tmp_path):
    """per_agent=2 over 3 questions: the first conversation answers two and is told to stop; a second
    conversation (a fresh agent) answers the third in session 2. The instructions say the limit;
    answers.jsonl and sessions.jsonl record which session answered what."""
    qs = [Question(id=f"q{i}", question=f"Question {i}?") for i in (1, 2, 3)]
    cat = cc.Catalog.open(str(tmp_path / "data"))
    mcplake.build(cat, tmp_path / "files", extra_tables=0)
    run = str(tmp_path / "run")
    try:
        server = build_server(cat, "stale", qs, run, budget=5, per_agent=2)
        assert "at most 2 question(s) in this conversation" in server.instructions
        first = _calls(server, [("next_question", {}), ("submit_answer", {"id": "q1", "sql": "SELECT 1"}),
                                ("next_question", {}), ("abstain", {"id": "q2", "reason": "no data"})])
        summary, body = _text(first[0])
        assert body["session"] == 1 and body["session_left"] == 2
        assert _text(first[2])[1]["session_left"] == 1
        assert _text(first[1])[1]["next"] == "call next_question"
        summary, body = _text(first[3])
        assert body["session"] == 1 and body["next"].startswith("stop: this conversation has answered its 2")
        assert "stop" in summary
        second = _calls(server, [("next_question", {}), ("submit_answer", {"id": "q3", "sql": "SELECT 3"}),
                                 ("next_question", {})])
        body = _text(second[0])[1]
        assert body["id"] == "q3" and body["session"] == 2 and body["session_left"] == 2
        assert _text(second[1])[1]["next"] == "done: the run is complete"
        assert _text(second[2])[1]["done"] is True
    finally:
        cat.close()
    with open(tmp_path / "run" / "answers.jsonl") as fh:
        assert [(a["id"], a["session"]) for a in map(json.loads, fh)] == [("q1", 1), ("q2", 1), ("q3", 2)]
    with open(tmp_path / "run" / "sessions.jsonl") as fh:
        assert [(s["session"], s["questions"]) for s in map(json.loads, fh)] == [(1, ["q1", "q2"]), (2, ["q3"])]
    with open(tmp_path / "run" / "run.json") as fh:
        assert json.load(fh)["per_agent"] == 2


def test_per_agent_zero_is_one_conversation_for_the_whole_run(tmp_path):
    qs = [Question(id=f"q{i}", question=f"Question {i}?") for i in range(1, 8)]
    cat = cc.Catalog.open(str(tmp_path / "data"))
    mcplake.build(cat, tmp_path / "files", extra_tables=0)
    try:
        server = build_server(cat, "bare", qs, str(tmp_path / "run"), budget=5, per_agent=0)
        assert "in this conversation" not in server.instructions
        calls: list[tuple[str, dict[str, Any]]] = []
        for q in qs:
            calls += [("next_question", {}), ("submit_answer", {"id": q.id, "sql": "SELECT 1"})]
        out = _calls(server, calls + [("next_question", {})])
        assert all(not r.is_error for r in out) and _text(out[-1])[1]["done"] is True
        assert "session_left" not in _text(out[0])[1]
    finally:
        cat.close()
    with open(tmp_path / "run" / "sessions.jsonl") as fh:
        assert [s["questions"] for s in map(json.loads, fh)] == [[q.id for q in qs]]


def test_the_instructions_say_the_default_of_five_and_are_the_same_in_every_condition(tmp_path):
    from eval.harness.serve import PER_AGENT, instructions

    assert PER_AGENT == 5 and "at most 5 question(s) in this conversation" in instructions()
    cat = cc.Catalog.open(str(tmp_path / "data"))
    mcplake.build(cat, tmp_path / "files", extra_tables=0)
    try:
        texts = {build_server(cat, c, QS, str(tmp_path / c.replace("+", "_"))).instructions
                 for c in ("bare", "stale", "stale+detect")}
    finally:
        cat.close()
    assert texts == {instructions()}
