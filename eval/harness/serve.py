"""`semcat eval serve`: one evaluation condition as an MCP server, for agents the harness does not drive.

    semcat eval serve --data LAKE --condition stale --questions q.yaml --out runs/stale          # stdio
    semcat eval serve --data LAKE --condition stale --questions q.yaml --out runs/stale --port 8808  # HTTP /mcp

The agent (any MCP client) reads the condition's catalog through the same tools, with the same hide flags
and the same `now` (d0) as `semcat eval run` (`runner.HIDE_FLAGS`, `create_server`), and plays the
question file through three episode tools:

    next_question()            -> {id, question, now, calls_left, remaining, done}
    submit_answer(id, sql)     -> the answer is recorded; the question is over
    abstain(id, reason)        -> likewise, without SQL

Invariants (the same rules as the harness's agent loop, eval/agents/loop.py, enforced by the server):
- Questions are served in file order, one at a time. `next_question` while a question is open returns
  that question again (a client that lost its state can recover it); after the last answer it returns
  `done: true`.
- Every read tool reads the condition's snapshot, pinned once when the server starts: `snapshot` is set
  to the pin's handle on every call of a tool that takes one, whatever the client passed.
- `annotate` and `pin_snapshot` are not listed, and a call of them is refused (the lake under evaluation
  never changes; the pin is the server's).
- Budget: every call of a tool other than the three episode tools, made while a question is open, counts
  (errors, unknown and refused tools included, as in the loop); the call after the BUDGET-th is refused
  with a tool error saying to submit or abstain, and is not counted. A tool call while no question is
  open is refused and not counted. `submit_answer` / `abstain` for an id other than the open question's
  are refused.
- Episode state lives in the server process, not in an MCP session: a client that opens a new session per
  call (a shell script, the MCP Inspector CLI, stateless HTTP) drives the same run.
- Nothing an agent can read names the condition: the tool list and the `instructions` (the OpenAI agent's
  system prompt, eval/agents/openai.py, with the episode tools in place of final_answer) are byte-identical
  in every condition.
- Fresh agents: a conversation answers at most `per_agent` questions (default PER_AGENT = 5; 0 = no limit),
  and the instructions say so. An agent session is the run of consecutive questions one conversation
  answers: it starts at the next_question after the previous session ended and ends at its `per_agent`-th
  answer (or the run's last). The answer that ends a session tells the agent to stop; the next
  next_question starts the next session. The server cannot tell conversations apart (stateless HTTP and the
  2026-07-28 protocol give every request a connection of its own; an IDE runs all its conversations over
  one stdio connection), so starting a fresh agent is the driver's part, as the answer says.
- Recording, server-side, in OUT: sessions.jsonl (one line per agent session: its number, the question
  ids it answered, start and end times), calls.jsonl (every call: question id, tool, arguments as run, whether it
  counted, result size in o200k tokens, milliseconds, error, tables shown as deprecated), answers.jsonl
  (one line per question answered: id, sql or abstain reason, calls used, tool tokens, seconds, agent
  session) and
  run.json (condition, lake, pinned vid, question file): what `semcat eval score` (eval.harness.score)
  turns into the same report as `semcat eval run`. An OUT that already holds answers is refused.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from catalog_core.api import CatalogAPI
from eval.agents.loop import BUDGET, HIDDEN_TOOLS
from eval.agents.openai import SYSTEM_PROMPT
from eval.harness.conditions import condition_server
from eval.harness.questions import Question
from eval.harness.runner import HIDE_FLAGS, RUN_INFO, deprecated_shown
from mcp_server.mcp import history
from mcp_server.mcp.bounds import count_tokens
from mcp_server.mcp.server import SemcatServer

__all__ = ["EvalServer", "Episodes", "build_server", "serve", "instructions", "EPISODE_TOOLS", "CALLS", "ANSWERS",
           "SERVE_KIND", "SESSIONS", "PER_AGENT"]

EPISODE_TOOLS = ("next_question", "submit_answer", "abstain")
CALLS = "calls.jsonl"
ANSWERS = "answers.jsonl"
SESSIONS = "sessions.jsonl"
PER_AGENT = 5   # questions per conversation (issue 49: agents start each conversation fresh)
SERVE_KIND = "semcat-eval-serve"   # run.json `kind` of a served run

_EPISODE = """\
This server runs an evaluation. Call next_question to get a question (its id, the text, the time to take \
as "now", your calls left); explore with the catalog tools; then call submit_answer with the question's id \
and your SQL, or abstain with the id and the reason. Then call next_question again, until it says done. \
You answer one question at a time; next_question, submit_answer and abstain do not count as tool calls."""


def instructions(budget: int = BUDGET, per_agent: int = PER_AGENT) -> str:
    """The server's instructions: the OpenAI agent's system prompt (final_answer -> submit_answer), the
    episode protocol and how many questions one conversation answers. Independent of the condition."""
    prompt = SYSTEM_PROMPT.replace("{budget}", str(budget))
    prompt = prompt.replace("call final_answer with the SQL", "call submit_answer with the question's id and the SQL")
    prompt = prompt.replace("call abstain with the reason", "call abstain with the question's id and the reason")
    prompt = prompt.replace("final_answer and abstain do not count", "next_question, submit_answer and abstain do "
                                                                     "not count")
    share = (f" You answer at most {per_agent} question(s) in this conversation: when submit_answer or abstain says "
             "this conversation is done, stop (a fresh agent answers the next questions)." if per_agent else "")
    return prompt + "\n\n" + _EPISODE + share


# ------------------------------------------------------------------ the episode tools' outputs
class NextQuestionOut(BaseModel):
    done: bool = Field(description="true when every question has been answered: the run is complete")
    id: str | None = Field(default=None, description="the question's id: pass it to submit_answer or abstain")
    question: str | None = None
    now: str = Field(description="the pinned snapshot's commit time: take it as the current time for relative "
                                 "dates (today, yesterday, last week, this quarter)")
    calls_left: int = Field(description="catalog tool calls left for this question")
    remaining: int = Field(description="questions not yet answered, this one included")
    total: int = Field(description="questions in the run")
    session: int | None = Field(default=None, description="this conversation's agent session (1, 2, ...)")
    session_left: int | None = Field(default=None, description="questions this conversation may still answer, this "
                                                               "one included (no limit when absent)")


class AnswerOut(BaseModel):
    id: str
    recorded: str = Field(description="'sql' or 'abstain'")
    calls_used: int
    remaining: int = Field(description="questions not yet answered")
    session: int = Field(description="this conversation's agent session")
    next: str


@dataclass
class _Open:
    """The open question's counters."""
    index: int
    t0: float
    calls: int = 0
    tokens: int = 0
    tools: list[str] = field(default_factory=list)


@dataclass
class _Session:
    """One agent session: a conversation's consecutive questions."""
    number: int
    started: float
    ids: list[str] = field(default_factory=list)


class Episodes:
    """The run's state and its recording: questions in order, the open one, the JSON lines in `out_dir`.
    Not thread-safe by itself: EvalServer serialises every call."""

    def __init__(self, questions: Sequence[Question], out_dir: str, *, handle: str, now: str,
                 budget: int = BUDGET, per_agent: int = PER_AGENT) -> None:
        if not questions:
            raise ValueError("the question file holds no question")
        if per_agent < 0:
            raise ValueError(f"per_agent must be >= 0 (0: no limit), got {per_agent}")
        self.questions = list(questions)
        self.out_dir = out_dir
        self.handle = handle
        self.now = now
        self.budget = budget
        self.answered = 0            # questions [0, answered) are done
        self.open: _Open | None = None
        self.per_agent = per_agent
        self.sessions = 0            # agent sessions started
        self.session: _Session | None = None     # the current one (None between sessions)

    @property
    def current_id(self) -> str | None:
        return None if self.open is None else self.questions[self.open.index].id

    def _append(self, name: str, line: dict[str, Any]) -> None:
        with open(os.path.join(self.out_dir, name), "a", encoding="utf-8") as fh:
            fh.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")

    def record_call(self, line: dict[str, Any]) -> None:
        self._append(CALLS, line)

    # -------------------------------------------------------------- the three tools
    def next_question(self) -> tuple[NextQuestionOut, str]:
        total = len(self.questions)
        if self.open is None and self.answered >= total:
            out = NextQuestionOut(done=True, now=self.now, calls_left=0, remaining=0, total=total)
            return out, f"done: all {total} questions are answered; the run is complete"
        if self.session is None:
            self.sessions += 1
            self.session = _Session(self.sessions, time.time())
        if self.open is None:
            self.open = _Open(index=self.answered, t0=time.perf_counter())
        q = self.questions[self.open.index]
        sess = self.session
        left = self.per_agent - len(sess.ids) if self.per_agent else None
        out = NextQuestionOut(done=False, id=q.id, question=q.question, now=self.now,
                              calls_left=self.budget - self.open.calls, remaining=total - self.answered, total=total,
                              session=sess.number, session_left=left)
        text = " ".join(q.question.split())  # the summary stays one line
        return out, (f"question {q.id} ({self.answered + 1} of {total}), now {self.now}, {out.calls_left} tool calls "
                     f"left: {text} (answer with submit_answer(id={q.id!r}, sql) or abstain(id={q.id!r}, reason))")

    def _check_id(self, qid: str, tool: str) -> _Open:
        if self.open is None:
            nxt = "call next_question first" if self.answered < len(self.questions) else \
                "every question is answered: the run is complete"
            raise ToolError(f"no question is open; {nxt}")
        cur = self.questions[self.open.index].id
        if qid != cur:
            raise ToolError(f"id {qid!r} is not the open question; the open question is {cur!r} (call "
                            f"{tool} with id={cur!r})")
        return self.open

    def answer(self, qid: str, sql: str | None, reason: str | None) -> tuple[AnswerOut, str]:
        tool = "submit_answer" if reason is None else "abstain"
        if reason is None and not (sql or "").strip():
            raise ToolError("sql is empty; pass one read-only SELECT statement, or call abstain(id, "
                            "reason) when the catalog cannot answer the question")
        op = self._check_id(qid, tool)
        sess = self.session
        assert sess is not None  # a question is open only within a session
        line: dict[str, Any] = {"id": qid, "sql": sql if reason is None else None,
                "abstain_reason": (reason if reason.strip() else "no reason given") if reason is not None else None,
                "calls": op.calls, "tool_tokens": op.tokens, "tools": op.tools,
                "seconds": round(time.perf_counter() - op.t0, 3), "session": sess.number}
        self._append(ANSWERS, line)
        self.answered += 1
        self.open = None
        sess.ids.append(qid)
        left = len(self.questions) - self.answered
        ended = not left or (self.per_agent and len(sess.ids) >= self.per_agent)
        if ended:
            self._end_session()
        if not left:
            nxt = "done: the run is complete"
        elif ended:
            nxt = (f"stop: this conversation has answered its {self.per_agent} question(s) and is done; a fresh agent "
                   "answers the next ones")
        else:
            nxt = "call next_question"
        out = AnswerOut(id=qid, recorded="sql" if reason is None else "abstain", calls_used=op.calls,
                        remaining=left, session=sess.number, next=nxt)
        tail = f"; {nxt}" if ended and left else ""
        return out, f"recorded the {out.recorded} for {qid}; {left} question(s) left{tail}"

    def _end_session(self) -> None:
        sess = self.session
        assert sess is not None
        self._append(SESSIONS, {"session": sess.number, "questions": sess.ids,
                                "started": _iso(sess.started), "ended": _iso(time.time())})
        self.session = None


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _result(out: tuple[BaseModel, str]) -> CallToolResult:
    """The episode tool's result as the catalog tools give theirs: the text is the one-line summary, then
    the compact JSON of the structured content, so a client that shows the model only the text content
    (most do) still gives it the question, "now" and the calls left."""
    model, summary = out
    data = model.model_dump(mode="json", exclude_none=True)
    body = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=f"{summary}\n{body}")], structured_content=data)


def _tokens(result: object) -> int:
    """o200k tokens of what the client receives, counted as the agent loop counts a turn."""
    if not isinstance(result, CallToolResult):
        return count_tokens(str(result))
    text = "\n".join(getattr(c, "text", "") for c in result.content)
    if result.is_error or result.structured_content is None:
        return count_tokens(text)
    return count_tokens(json.dumps(result.structured_content, separators=(",", ":"), ensure_ascii=False) + text)


_EPISODE_ANN = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                               open_world_hint=False)
QuestionId = Annotated[str, Field(description="the id next_question returned")]


class EvalServer(SemcatServer):
    """The condition's catalog tools (those of `inner`, a `create_server` server, minus HIDDEN_TOOLS) and the
    episode tools, with the budget, the pinned snapshot and the recording of the module docstring.
    `inner` itself is not changed."""

    def __init__(self, inner: Any, episodes: Episodes) -> None:
        shared = [t for t in inner._tool_manager.list_tools() if t.name not in HIDDEN_TOOLS]
        super().__init__(inner.name, instructions=instructions(episodes.budget, episodes.per_agent),
                         version=inner.version,
                         log_level="WARNING", warn_on_duplicate_tools=True, tools=shared)
        self.episodes = episodes
        self.tool_context = inner.tool_context  # the caller's grants and the audit read the inner server's reads
        self._lock = anyio.Lock()
        self._snapshot_tools = {t.name for t in shared if "snapshot" in (t.parameters or {}).get("properties", {})}
        ep = episodes

        def next_question() -> Annotated[CallToolResult, NextQuestionOut]:
            """Get the question to answer now (or the open one again): its id, its text, the time to take as
            "now", the tool calls left. Says done when every question is answered."""
            return _result(ep.next_question())

        def submit_answer(
            id: QuestionId,
            sql: Annotated[str, Field(description="one read-only DuckDB SELECT whose result answers the question; "
                                                  "tables as catalog.namespace.table")],
        ) -> Annotated[CallToolResult, AnswerOut]:
            """Submit your answer to the open question: one SQL statement. Ends the question."""
            return _result(ep.answer(id, sql, None))

        def abstain(
            id: QuestionId,
            reason: Annotated[str, Field(description="why the catalog cannot answer the question")],
        ) -> Annotated[CallToolResult, AnswerOut]:
            """Give no SQL for the open question because the catalog cannot answer it (the data does not
            exist, or cannot be trusted for it). Ends the question."""
            return _result(ep.answer(id, None, reason))

        for fn in (next_question, submit_answer, abstain):
            self.add_tool(fn, annotations=_EPISODE_ANN)
            tool = self._tool_manager.get_tool(fn.__name__)
            assert tool is not None
            tool.parameters["additionalProperties"] = False

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        async with self._lock:
            return await self._call(name, arguments, context)

    async def _call(self, name: str, arguments: dict[str, Any], context: Any) -> Any:
        ep = self.episodes
        t0 = time.perf_counter()
        qid = ep.current_id
        counted = False
        args: Any = dict(arguments) if isinstance(arguments, dict) else arguments
        result: Any = None
        error: str | None = None
        try:
            if name in EPISODE_TOOLS:
                result = await super().call_tool(name, args, context)
            else:
                if ep.open is None:
                    nxt = ("call next_question first" if ep.answered < len(ep.questions) else
                           "every question is answered: the run is complete")
                    raise ToolError(f"{name}: no question is open; {nxt}")
                if ep.open.calls >= ep.budget:
                    raise ToolError(f"tool-call budget exhausted: {ep.budget} of {ep.budget} calls used for question "
                                    f"{qid!r}; call submit_answer(id={qid!r}, sql) or abstain(id={qid!r}, reason) "
                                    "now")
                counted = True
                ep.open.calls += 1
                ep.open.tools.append(name)
                if name in HIDDEN_TOOLS:
                    raise ToolError(f"{name} is not available in this evaluation: the lake does not change and the "
                                    "server pins the snapshot; use the other tools")
                if name in self._snapshot_tools and isinstance(args, dict):
                    args["snapshot"] = ep.handle
                result = await super().call_tool(name, args, context)
            return result
        except Exception as exc:
            error = str(exc) or type(exc).__name__
            raise
        finally:
            ms = round((time.perf_counter() - t0) * 1000, 2)
            tokens = count_tokens(error) if error is not None else _tokens(result)
            if counted and ep.open is not None:
                ep.open.tokens += tokens
            shown = (sorted(deprecated_shown(result.structured_content))
                     if isinstance(result, CallToolResult) and result.structured_content else [])
            if name == "next_question" and error is None:
                qid = ep.current_id
            ep.record_call({"question": qid, "tool": name, "arguments": args, "counted": counted,
                            "call": ep.open.calls if counted and ep.open is not None else None,
                            "tokens": tokens, "ms": ms, "error": error,
                            "deprecated": shown, "t": round(time.time(), 3)})


def build_server(cat: CatalogAPI, condition: str, questions: Sequence[Question], out_dir: str, *,
                 budget: int = BUDGET, per_agent: int = PER_AGENT, run_info: dict[str, Any] | None = None,
                 now: float | None = None) -> EvalServer:
    """The EvalServer of `condition` over `cat` (that condition's history), pinned at its latest vid, recording
    into `out_dir` (created; refused when it already holds answers). Writes OUT/run.json. `now`: the lake's now
    (`conditions.lake_now`; default the Acme lake's D0)."""
    from eval.harness.conditions import HISTORY_OF as CONDITIONS
    from eval.harness.conditions import lake_now

    if condition not in HIDE_FLAGS:
        raise ValueError(f"unknown condition {condition!r}; choose one of {', '.join(HIDE_FLAGS)}")
    if os.path.exists(os.path.join(out_dir, ANSWERS)) and os.path.getsize(os.path.join(out_dir, ANSWERS)):
        raise ValueError(f"{out_dir} already holds a run ({ANSWERS}); give a new --out directory (or remove it)")
    os.makedirs(out_dir, exist_ok=True)
    for name in (CALLS, ANSWERS, SESSIONS):
        open(os.path.join(out_dir, name), "w").close()
    inner = condition_server(cat, HIDE_FLAGS[condition], now=now if now is not None else lake_now("").timestamp())
    pin, _ = history.pin(inner.tool_context, None, None)  # type: ignore[attr-defined]  # what pin_snapshot() returns
    snap = pin.snapshot
    episodes = Episodes(questions, out_dir, handle=str(snap.handle), now=str(snap.time), budget=budget,
                        per_agent=per_agent)
    info = {"kind": SERVE_KIND, "condition": condition, "history": CONDITIONS[condition], "vid": int(snap.vid),
            "handle": snap.handle, "now": snap.time, "budget": budget, "per_agent": per_agent,
            "questions": len(episodes.questions),
            "question_ids": [q.id for q in episodes.questions],
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **(run_info or {})}
    with open(os.path.join(out_dir, RUN_INFO), "w", encoding="utf-8") as fh:
        json.dump(info, fh, indent=1, default=str)
    return EvalServer(inner, episodes)


def serve(data: str, condition: str, questions_file: str, out_dir: str, *, port: int | None = None,
          command: str | None = None, log: Callable[[str], None] | None = None, per_agent: int = PER_AGENT) -> None:
    """Open the lake's history of `condition`, serve it over stdio (no `port`) or streamable HTTP at
    http://127.0.0.1:PORT/mcp until interrupted; close the catalog."""
    import catalog_core as cc
    from eval.harness.conditions import HISTORY_OF as CONDITIONS
    from eval.harness.conditions import history_dir as data_dir
    from eval.harness.conditions import lake_now
    from eval.harness.questions import load_questions

    if condition not in HIDE_FLAGS:
        raise ValueError(f"unknown condition {condition!r}; choose one of {', '.join(HIDE_FLAGS)}")
    if not os.path.isdir(data):
        raise ValueError(f"{data}: no such lake directory; build one with `semcat eval build --data {data}`")
    questions = load_questions(questions_file)
    lake_info: dict[str, Any] = {}
    if os.path.exists(os.path.join(data, "lake.json")):
        with open(os.path.join(data, "lake.json"), encoding="utf-8") as fh:
            lake_info = json.load(fh)
    history_dir = data_dir(data, condition)
    if not os.path.isdir(history_dir):
        raise ValueError(f"{history_dir}: the {CONDITIONS[condition]} history is missing; " + (
            f"review the stale one with `semcat eval review --data {data}`" if CONDITIONS[condition] == "reviewed"
            else f"rebuild the lake with `semcat eval build --data {data}`"))
    cat = cc.open_catalog(history_dir, offer_create=False)
    try:
        server = build_server(cat, condition, questions, out_dir, per_agent=per_agent, now=lake_now(data).timestamp(),
                              run_info={
            "lake": os.path.abspath(data), "seed": lake_info.get("seed"), "scale": lake_info.get("scale"),
            "questions_file": os.path.abspath(questions_file), "command": command,
            "transport": "stdio" if port is None else f"http://127.0.0.1:{port}/mcp"})
        if port is None:
            server.run("stdio")
        else:
            from mcp_server.mcp.http import MCP_PATH, security_for

            if log is not None:
                log(f"semcat eval serve: condition {condition}, {len(questions)} questions "
                    f"({f'at most {per_agent} per conversation' if per_agent else 'no limit per conversation'}), MCP at "
                    f"http://127.0.0.1:{port}{MCP_PATH}; recording into {out_dir}")
            anyio.run(lambda: server.run_streamable_http_async(
                host="127.0.0.1", port=port, streamable_http_path=MCP_PATH, stateless_http=True, json_response=True,
                transport_security=security_for("127.0.0.1")))
    finally:
        cat.close()
