"""The tools' contract (names, descriptions, input and output schemas, annotations) is checked in
at tests/mcp_server/tool_contract.json, so any change to what agents see is deliberate.
Regenerate after an intended change: SEMCAT_UPDATE_CONTRACT=1 pytest tests/mcp_server/test_mcp_contract.py"""

from __future__ import annotations

import json
import os

import catalog_core as cc
from mcp_server.mcp import create_server
from tests.mcp_server.conftest import list_tools

PATH = os.path.join(os.path.dirname(__file__), "tool_contract.json")


def contract(server) -> list[dict]:
    return [{"name": t.name, "title": t.title, "description": t.description, "input_schema": t.input_schema,
             "output_schema": t.output_schema,
             "annotations": t.annotations.model_dump(exclude_none=True) if t.annotations else None}
            for t in sorted(list_tools(server), key=lambda t: t.name)]


def test_tool_contract_is_unchanged(tmp_path):
    cat = cc.Catalog.open(str(tmp_path / "data"))
    try:
        current = contract(create_server(cat))
    finally:
        cat.close()
    text = json.dumps(current, indent=1, sort_keys=True) + "\n"
    if os.environ.get("SEMCAT_UPDATE_CONTRACT"):
        with open(PATH, "w", encoding="utf-8") as f:
            f.write(text)
    with open(PATH, encoding="utf-8") as f:
        stored = json.load(f)
    changed = sorted({t["name"] for t in current} ^ {t["name"] for t in stored}
                     | {a["name"] for a, b in zip(current, stored, strict=False) if a != b})
    assert current == stored, (f"tool contract changed for {changed}; if intended, regenerate with "
                               "SEMCAT_UPDATE_CONTRACT=1 and commit tests/mcp_server/tool_contract.json")


def test_every_tool_has_a_title(tmp_path):
    """Clients show a tool's title (issue 23, item 5): every tool has one, in tools/list and in its
    annotations."""
    cat = cc.Catalog.open(str(tmp_path / "data"))
    try:
        tools = list_tools(create_server(cat))
    finally:
        cat.close()
    assert tools
    for t in tools:
        assert t.title and t.title[0].isupper() and "_" not in t.title, t.name
        assert t.annotations is not None and t.annotations.title == t.title, t.name
    assert {t.name: t.title for t in tools}["run_sql"] == "Run SQL"
