"""What tools/list costs (docs/mcp.md, "What tools/list costs"): descriptions are one line (no docstring
indentation), schemas carry no derived `title` annotations, and the whole list (as sent: camelCase keys,
compact JSON, o200k tokens) stays under a ceiling: 14,702 tokens before issue 34, 12,523 after."""

from __future__ import annotations

import json

import anyio
from mcp import Client

from mcp_server.mcp import create_server
from mcp_server.mcp.bounds import count_tokens

CEILING = 13_600  # o200k tokens of the whole tools/list result (12,800 before get_lineage, issue 38: +734; the
# stored data-depth findings, issue 45: +128 for FindingOut.scan_vid and outdated_by in two output schemas; four
# fix actions, issue 45: +64 for remove, reword_unit, update_range and repoint in the FixOut enum of eight schemas)


def tools_list(server) -> dict:
    async def go():
        async with Client(server) as c:
            return await c.list_tools()
    return anyio.run(go).model_dump(mode="json", by_alias=True, exclude_none=True)


def _titles(schema, path="") -> list[str]:
    if isinstance(schema, dict):
        return [path + "/title" for k, v in schema.items() if k == "title" and isinstance(v, str)] + [
            t for k, v in schema.items() for t in _titles(v, f"{path}/{k}")]
    if isinstance(schema, list):
        return [t for i, v in enumerate(schema) for t in _titles(v, f"{path}/{i}")]
    return []


def test_tools_list_is_compact(lake_cat):
    wire = tools_list(create_server(lake_cat))
    for tool in wire["tools"]:
        assert "\n" not in tool["description"] and "  " not in tool["description"], tool["description"]
        assert _titles(tool["inputSchema"]) == [] and _titles(tool["outputSchema"]) == [], tool["name"]
        assert tool["title"]  # the tool's own title (what clients show) stays
    tokens = count_tokens(json.dumps(wire, separators=(",", ":"), ensure_ascii=False))
    assert tokens <= CEILING, tokens


def test_a_property_named_title_keeps_its_schema():
    from mcp_server.mcp.server import _untitled

    schema = {"title": "Out", "type": "object", "properties": {"title": {"title": "Title", "type": "string"}},
              "required": ["title"]}
    assert _untitled(schema) == {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
