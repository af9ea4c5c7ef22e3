"""The OpenAI-compatible agent (HARNESS.md, Agents): any chat-completions endpoint with tool calling.

    agent = OpenAIAgent("http://127.0.0.1:8000/v1", "some-model")     # key: api_key or OPENAI_API_KEY
    episode = await run_episode(client, agent, question, snapshot=handle)

Each step POSTs `{base_url}/chat/completions` with the whole conversation, rebuilt from the transcript
(the loop's record is the truth): a generic system prompt, the question, then for every model response
the assistant message with its tool calls and, for each call, a `tool` message holding that call's turn
(compact JSON of the structured result, or the error text; cut at `max_result_chars` with a marker).

Tools: every MCP tool the loop offers becomes a function tool with its input schema minus `snapshot`
(the loop forces the pinned handle on every call), plus two harness tools: `final_answer(sql)` ends the
episode with that SQL, `abstain(reason)` ends it without.

One tool call per step: when a response holds several tool calls, the first is returned and the rest
are queued and returned, in order, by the next steps without asking the model again; the model is asked
once every call of its last response has its turn. A queued `final_answer` or `abstain` ends the episode
when reached.

Bad model output never raises:
- an unknown tool name is passed to the loop, which records an error turn listing the tools;
- arguments that are not a JSON object (or a `final_answer` without `sql`) become a call of a tool that
  does not exist (`invalid_arguments:<name>`): the loop records an error turn (it counts against the
  budget like any call), and the model reads, in that call's tool message, what was wrong;
- a plain-text reply with SQL in a fenced ```sql block is the final answer (the last such block);
  plain text without SQL is an abstention with that text as the reason.

Endpoint errors: 429, 5xx and transport errors are retried `max_retries` times with a short exponential
backoff; then, as for any other non-200 answer, `OpenAIEndpointError` says the HTTP code, the endpoint's
message and what to check. 401/403 are not retried. The loop records the exception as an agent error.

The endpoint's `usage` (prompt_tokens, completion_tokens) is summed over every request: `usage()`.

One episode at a time per agent (the loop's usage deltas assume it too): the agent keeps the current
episode's model responses and starts afresh when it is handed a different transcript. Run concurrent
episodes with one agent each.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import httpx

from eval.agents.loop import Abstain, FinalSQL, Step, ToolCall, ToolSpec, Transcript, Turn

__all__ = ["OpenAIAgent", "OpenAIEndpointError", "SYSTEM_PROMPT", "FINAL_TOOL", "ABSTAIN_TOOL", "INVALID_PREFIX",
           "function_tools"]

FINAL_TOOL = "final_answer"
ABSTAIN_TOOL = "abstain"
INVALID_PREFIX = "invalid_arguments:"   # the name of a call whose arguments could not be used

SYSTEM_PROMPT = """\
You answer a question about an organisation's data with one DuckDB SQL statement over the tables of a \
data catalog. You see the catalog only through the tools.

Explore before you answer: search for candidate tables, describe the ones you may use (columns, grain, \
the unit of each measure, allowed values, relationships, metrics, verified queries), find join paths instead of guessing \
keys, look up exact filter values, and check your statement with run_sql.

Heed every warning the tools return. A deprecated table: use its successor. A stale or suspect \
annotation: trust the schema history and the data over the description. A missed freshness SLA or a \
partial latest period: the newest data is incomplete, do not present it as complete. Prefer a defined \
metric's definition over an aggregate of your own. Name tables fully (catalog.namespace.table).

When you are done, call final_answer with the SQL: one read-only SELECT statement whose result answers \
the question. When the catalog cannot answer the question (the data does not exist, or what exists \
cannot be trusted to answer it), call abstain with the reason instead.

Every tool reads the same pinned snapshot of the catalog; you never pass a snapshot. You have at most \
{budget} tool calls; final_answer and abstain do not count."""

_SQL_BLOCK = re.compile(r"```[ \t]*(sql|SQL|duckdb)?[ \t]*\n(.*?)```", re.S)
_SQL_START = re.compile(r"^\s*(select|with|from)\b", re.I)


class OpenAIEndpointError(RuntimeError):
    """The chat-completions endpoint failed: `status_code` (None for a transport error) and its message."""

    def __init__(self, message: str, status_code: int | None = None, body_message: str = "") -> None:
        super().__init__(message)
        self.status_code = status_code
        self.body_message = body_message


def function_tools(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    """The OpenAI `tools` list: each MCP tool as a function without the `snapshot` parameter, then the
    two harness tools."""
    out: list[dict[str, Any]] = []
    for t in tools:
        params = json.loads(json.dumps(t.input_schema or {"type": "object", "properties": {}}))
        params.setdefault("type", "object")
        props = params.get("properties")
        if isinstance(props, dict):
            props.pop("snapshot", None)
        else:
            params["properties"] = {}
        if isinstance(params.get("required"), list):
            params["required"] = [r for r in params["required"] if r != "snapshot"]
            if not params["required"]:
                del params["required"]
        out.append({"type": "function", "function": {"name": t.name, "description": t.description,
                                                     "parameters": params}})
    out.append({"type": "function", "function": {
        "name": FINAL_TOOL,
        "description": "Submit your answer: one read-only DuckDB SELECT statement over the catalog's tables "
                       "(names as catalog.namespace.table). Ends the session.",
        "parameters": {"type": "object", "properties": {"sql": {"type": "string", "description": "the SQL"}},
                       "required": ["sql"]}}})
    out.append({"type": "function", "function": {
        "name": ABSTAIN_TOOL,
        "description": "Give no SQL because the catalog cannot answer the question (the data does not exist "
                       "or cannot be trusted for it). Ends the session.",
        "parameters": {"type": "object", "properties": {"reason": {"type": "string",
                                                                   "description": "why it cannot be answered"}},
                       "required": ["reason"]}}})
    return out


@dataclass
class _Call:
    """One tool call of a model response: what the model sent, and what the agent made of it."""
    id: str
    name: str
    raw: str                       # the arguments exactly as sent (a JSON string)
    step: Step
    hint: str | None = None        # shown to the model instead of the loop's text (invalid arguments)
    turn: int | None = None        # index of its turn in the transcript, once returned as a ToolCall


@dataclass
class _Exchange:
    """One model response."""
    content: str | None
    calls: list[_Call] = field(default_factory=list)


class OpenAIAgent:
    """An agent backed by an OpenAI-compatible `/chat/completions` endpoint (see the module docstring)."""

    name = "openai"

    def __init__(self, base_url: str, model: str, api_key: str | None = None, temperature: float | None = 0.0,
                 max_retries: int = 3, timeout: float = 120.0, *, backoff: float = 0.5,
                 max_result_chars: int = 20_000, max_tokens: int | None = None) -> None:
        if not base_url or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be an http(s) URL such as http://127.0.0.1:8000/v1, not {base_url!r}")
        if not model:
            raise ValueError("model must name the endpoint's model (e.g. the id its /models lists)")
        if max_retries < 0 or timeout <= 0 or backoff < 0 or max_result_chars < 200:
            raise ValueError("max_retries >= 0, timeout > 0, backoff >= 0 and max_result_chars >= 200 are required")
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/chat/completions"
        self.model = model
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.temperature = temperature
        self.max_retries = max_retries
        self.timeout = timeout
        self.backoff = backoff
        self.max_result_chars = max_result_chars
        self.max_tokens = max_tokens
        self.requests = 0
        self._prompt = 0
        self._completion = 0
        self._tr: Transcript | None = None
        self._exchanges: list[_Exchange] = []
        self._issued: list[_Call] = []
        self._queue: deque[_Call] = deque()
        self._ids = 0

    # ------------------------------------------------------------------ the Agent protocol
    def usage(self) -> tuple[int, int]:
        return self._prompt, self._completion

    async def next(self, transcript: Transcript) -> Step:
        if transcript is not self._tr:
            self._reset(transcript)
        if len(transcript.turns) != len(self._issued):
            raise RuntimeError(f"the transcript has {len(transcript.turns)} turns but this agent made "
                               f"{len(self._issued)} calls: run one episode at a time per agent")
        if not self._queue:
            data = await self._complete(self.messages(transcript), function_tools(transcript.tools))
            self._queue.extend(self._parse(data))
        return self._take(transcript)

    # ------------------------------------------------------------------ conversation
    def messages(self, transcript: Transcript) -> list[dict[str, Any]]:
        """The chat messages for the next request, rebuilt from the transcript."""
        system = SYSTEM_PROMPT.replace("{budget}", str(transcript.budget))
        now = snapshot_time(transcript)
        if now:
            system += (f"\n\nThe snapshot you read ({transcript.snapshot}) was committed at {now}: take that as "
                       "the current time for relative dates (today, yesterday, last week, this quarter).")
        msgs: list[dict[str, Any]] = [{"role": "system", "content": system},
                                      {"role": "user", "content": transcript.question}]
        for ex in self._exchanges:
            msg: dict[str, Any] = {"role": "assistant", "content": ex.content}
            if ex.calls:
                msg["tool_calls"] = [{"id": c.id, "type": "function",
                                      "function": {"name": c.name, "arguments": c.raw}} for c in ex.calls]
            msgs.append(msg)
            for c in ex.calls:
                if c.turn is None or c.turn >= len(transcript.turns):
                    continue   # a terminal call (final_answer / abstain) ends the episode: never reached here
                msgs.append({"role": "tool", "tool_call_id": c.id,
                             "content": c.hint or self._result_text(transcript.turns[c.turn])})
        left = transcript.calls_left
        if self._exchanges and left <= 2:
            msgs.append({"role": "user", "content": (
                f"You have {left} tool call{'s' if left != 1 else ''} left. " if left > 0 else
                "You have no tool calls left. ") + "Answer now with final_answer, or abstain."})
        return msgs

    def _result_text(self, turn: Turn) -> str:
        if turn.is_error or turn.result is None:
            text = ("ERROR: " if turn.is_error else "") + turn.text
        else:
            text = json.dumps(turn.result, separators=(",", ":"), ensure_ascii=False, default=str)
        if len(text) > self.max_result_chars:
            cut = len(text) - self.max_result_chars
            text = (text[:self.max_result_chars] + f"…[truncated: {cut} more characters not shown; ask for less, "
                    "e.g. fewer columns, a narrower query or a smaller page]")
        return text

    def _reset(self, transcript: Transcript) -> None:
        self._tr = transcript
        self._exchanges = []
        self._issued = []
        self._queue = deque()
        self._ids = 0

    def _take(self, transcript: Transcript) -> Step:
        call = self._queue.popleft()
        if isinstance(call.step, ToolCall):
            call.turn = len(transcript.turns)
            self._issued.append(call)
        return call.step

    # ------------------------------------------------------------------ model output
    def _parse(self, data: dict[str, Any]) -> list[_Call]:
        try:
            msg = data["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            raise OpenAIEndpointError(f"{self.url} answered 200 without choices[0].message: "
                                      f"{json.dumps(data)[:300]}; check that it speaks chat completions") from None
        content = msg.get("content")
        if isinstance(content, list):   # content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        content = content if isinstance(content, str) else None
        raw_calls = msg.get("tool_calls") or []
        if not raw_calls and isinstance(msg.get("function_call"), dict):   # the legacy single-call shape
            raw_calls = [{"function": msg["function_call"]}]
        ex = _Exchange(content=content)
        for rc in raw_calls:
            fn = rc.get("function") or {}
            self._ids += 1
            call_id = str(rc.get("id") or f"call_{self._ids}")
            name = str(fn.get("name") or "")
            raw = fn.get("arguments")
            if isinstance(raw, dict):   # some servers send the object itself
                raw = json.dumps(raw, ensure_ascii=False)
            raw = "" if raw is None else str(raw)
            ex.calls.append(self._step_of(call_id, name, raw))
        if ex.calls:
            self._exchanges.append(ex)
            return ex.calls
        # plain text: SQL in a fenced block is the answer; anything else is an abstention
        text = (content or "").strip()
        sql = sql_in_text(text)
        self._exchanges.append(ex)
        step: Step = FinalSQL(sql) if sql else Abstain(text or "the model answered with an empty message")
        return [_Call(id="", name="", raw="", step=step)]

    def _step_of(self, call_id: str, name: str, raw: str) -> _Call:
        args: Any
        error = None
        try:
            args = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as e:
            args, error = None, f"the arguments are not valid JSON ({e.msg} at character {e.pos})"
        if error is None and not isinstance(args, dict):
            error = f"the arguments must be a JSON object, not {type(args).__name__}"
        if error is None and name == FINAL_TOOL:
            sql = args.get("sql")
            if isinstance(sql, str) and sql.strip():
                return _Call(call_id, name, raw, FinalSQL(sql.strip()))
            error = 'final_answer needs {"sql": "<one SELECT statement>"}'
        if error is None and name == ABSTAIN_TOOL:
            reason = args.get("reason")
            return _Call(call_id, name, raw, Abstain(str(reason).strip() if reason else "no reason given"))
        if error is None:
            return _Call(call_id, name, raw, ToolCall(name, args))
        hint = (f"ERROR: nothing was called: {error}. Received arguments: {raw[:500]!r}. Call {name} again with "
                "one JSON object matching its parameters.")
        return _Call(call_id, name, raw, ToolCall(INVALID_PREFIX + name, {}), hint=hint)

    # ------------------------------------------------------------------ HTTP
    async def _complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        body_json: dict[str, Any] = {"model": self.model, "messages": messages, "tools": tools, "tool_choice": "auto"}
        if self.temperature is not None:
            body_json["temperature"] = self.temperature
        if self.max_tokens is not None:
            body_json["max_tokens"] = self.max_tokens
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        check = (f"check the base URL ({self.base_url}; it is the part before /chat/completions, often ending in "
                 f"/v1), the model ({self.model!r}) and the key (OPENAI_API_KEY)")
        async with httpx.AsyncClient(timeout=self.timeout) as client:
            tries = 0
            while True:
                self.requests += 1
                try:
                    r = await client.post(self.url, json=body_json, headers=headers)
                except httpx.TransportError as e:
                    if tries < self.max_retries:
                        await self._sleep(tries, None)
                        tries += 1
                        continue
                    raise OpenAIEndpointError(f"could not reach {self.url} after {tries + 1} attempts "
                                              f"({type(e).__name__}: {e}); {check}") from None
                if r.status_code == 200:
                    try:
                        data = r.json()
                    except ValueError:
                        raise OpenAIEndpointError(f"{self.url} answered 200 with a body that is not JSON: "
                                                  f"{r.text[:300]!r}; {check}", 200) from None
                    if not isinstance(data, dict):
                        raise OpenAIEndpointError(f"{self.url} answered 200 with {type(data).__name__} JSON, not "
                                                  f"a chat completion; {check}", 200)
                    self._count(data.get("usage"))
                    return data
                body = _body_message(r)
                if r.status_code in (401, 403):
                    raise OpenAIEndpointError(
                        f"{self.url} answered {r.status_code} ({'unauthorized' if r.status_code == 401 else 'forbidden'}"
                        f"): {body}. Set OPENAI_API_KEY (or pass api_key) to a key this endpoint accepts"
                        + ("" if self.api_key else "; no key was sent"), r.status_code, body)
                if (r.status_code == 429 or r.status_code >= 500) and tries < self.max_retries:
                    await self._sleep(tries, r.headers.get("retry-after"))
                    tries += 1
                    continue
                after = f" after {tries + 1} attempts" if tries else ""
                raise OpenAIEndpointError(f"{self.url} answered {r.status_code}{after}: {body}; {check}",
                                          r.status_code, body)

    async def _sleep(self, tries: int, retry_after: str | None) -> None:
        delay = self.backoff * (2 ** tries)
        if retry_after:
            try:
                delay = max(delay, min(float(retry_after), 10.0))   # honoured, but bounded
            except ValueError:
                pass
        if delay > 0:
            await asyncio.sleep(delay)

    def _count(self, usage: Any) -> None:
        if isinstance(usage, dict):
            self._prompt += int(usage.get("prompt_tokens") or 0)
            self._completion += int(usage.get("completion_tokens") or 0)


def _body_message(r: httpx.Response) -> str:
    """The error message of an endpoint's answer: OpenAI's {"error": {"message"}}, or a common variant."""
    try:
        data = r.json()
    except ValueError:
        return r.text.strip()[:500] or "(empty body)"
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:500]
        for key in ("error", "message", "detail"):
            if data.get(key):
                return str(data[key])[:500]
    return json.dumps(data)[:500]


def sql_in_text(text: str) -> str | None:
    """The SQL of a plain-text answer: the last fenced ```sql block (or an unlabeled fence holding a
    SELECT / WITH statement); None when there is none."""
    found = None
    for m in _SQL_BLOCK.finditer(text):
        body = m.group(2).strip()
        if body and (m.group(1) or _SQL_START.match(body)):
            found = body
    return found


def snapshot_time(transcript: Transcript) -> str | None:
    """The pinned snapshot's commit time, from the first tool result that echoes the pinned handle."""
    for t in transcript.turns:
        snap = (t.result or {}).get("snapshot")
        if isinstance(snap, dict) and snap.get("time") and snap.get("handle") in (None, transcript.snapshot):
            return str(snap["time"])
    return None
