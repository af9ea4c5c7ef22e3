"""Agents of the evaluation harness (HARNESS.md, Agents): one loop (`loop.py`), the offline catalog
reader (`offline/`) and the OpenAI-compatible agent (`openai.py`).

Agents learn every table, column and value name from the MCP tools: no name of the lake appears in
this package (tests/eval/test_agent_rules.py greps for them).
"""

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

__all__ = ["BUDGET", "Abstain", "Agent", "Episode", "FinalSQL", "Step", "ToolCall", "ToolSpec", "Transcript",
           "Turn", "count_tokens", "list_tool_specs", "pin", "run_episode"]
