"""The rows of run_sql and query_metric as the MCP client checks them (issue 26, item 2): the
published output schema says each row is an array and says nothing of its cells (any JSON value),
so the client's check of an answer (`ClientSession.validate_tool_result`, in every `call_tool`)
does not descend into every cell; the answers themselves are unchanged."""

from __future__ import annotations

import jsonschema
import pytest

from tests.mcp_server.conftest import call, list_tools, ok, with_client

ROW_TOOLS = ("run_sql", "query_metric")


@pytest.mark.parametrize("tool", ROW_TOOLS)
def test_rows_are_arrays_without_a_per_cell_schema(server, tool):
    schema = {t.name: t.output_schema for t in list_tools(server)}[tool]
    # list[list[Any]] publishes {"items": {"items": {}, "type": "array"}, ...}: a validator then
    # descends into `{}` once per cell
    assert schema["properties"]["rows"]["items"] == {"type": "array"}, schema["properties"]["rows"]


@pytest.mark.parametrize("tool", ROW_TOOLS)
def test_the_row_schema_still_refuses_what_is_not_a_row(server, tool):
    schema = {t.name: t.output_schema for t in list_tools(server)}[tool]
    rows = schema["properties"]["rows"]
    jsonschema.validate([[None, True, 1, 1.5, "x", [1, [2]], {"a": {"b": None}}], []], rows)
    for bad in ([5], [None], ["a,b"], [{"a": 1}], "rows"):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, rows)


def test_cells_of_every_json_kind_pass_the_clients_check(server):
    """Through the real client, which checks each answer against the published schema: cells that
    are null, booleans, numbers, text, lists and structs come back as they were computed."""
    sql = ("SELECT NULL AS n, true AS b, 42 AS i, 1.5 AS f, 'text' AS s, [1, 2, NULL] AS l, "
           "{'k': 'v', 'm': [3]} AS st, DATE '2025-01-02' AS d")
    out = ok(call(server, "run_sql", {"sql": sql}))
    assert out["rows"] == [[None, True, 42, 1.5, "text", [1, 2, None], {"k": "v", "m": [3]}, "2025-01-02"]]

    async def checked(c):
        r = await c.call_tool("run_sql", {"sql": sql})
        await c.session.validate_tool_result("run_sql", r)  # what call_tool ran, again: no error
        return r.structured_content
    assert with_client(server, checked)["rows"] == out["rows"]
