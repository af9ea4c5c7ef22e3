"""Agents of the evaluation harness (HARNESS.md, Agents): one loop (`loop.py`), the offline catalog
reader (`offline/`) and the OpenAI-compatible agent (`openai.py`).

Agents learn every table, column and value name from the MCP tools: no name of the lake appears in
this package (tests/eval/test_agent_rules.py greps for them).
"""

import os

from eval.agents.loop import (
    BUDGET,
    Abstain,
    Agent,
    Episode,
    FinalSQL,
    Step,
    ToolCall,
    ToolSpec,
    Transcript,
    Turn,
    count_tokens,
    list_tool_specs,
    pin,
    run_episode,
)

__all__ = ["KINDS", "make_agent", "BUDGET", "Abstain", "Agent", "Episode", "FinalSQL", "Step", "ToolCall", "ToolSpec", "Transcript",
           "Turn", "count_tokens", "list_tool_specs", "pin", "run_episode"]

KINDS = ("offline", "openai")


def make_agent(kind: str, *, base_url: str | None = None, model: str | None = None) -> Agent:
    """The agent `semcat eval run --agent KIND [--base-url U --model M]` runs.

    offline: the deterministic catalog reader (no model). openai: an OpenAI-compatible chat-completions
    endpoint; `base_url` (default: $OPENAI_BASE_URL) and `model` are required, the key is $OPENAI_API_KEY."""
    if kind == "offline":
        from eval.agents.offline import OfflineAgent  # imported only when asked for
        return OfflineAgent()
    if kind == "openai":
        from eval.agents.openai import OpenAIAgent
        url = base_url or os.environ.get("OPENAI_BASE_URL")
        if not url or not model:
            missing = " and ".join(x for x, v in (("--base-url", url), ("--model", model)) if not v)
            raise ValueError(f"--agent openai needs {missing}: the endpoint's base URL (the part before "
                             "/chat/completions, e.g. http://127.0.0.1:8000/v1; or set OPENAI_BASE_URL) and a model "
                             "it serves; the key comes from OPENAI_API_KEY")
        return OpenAIAgent(url, model)
    raise ValueError(f"unknown agent kind {kind!r}: choose one of {', '.join(KINDS)}")
