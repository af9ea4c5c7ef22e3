"""Error results conform to the MCP specification (docs/mcp.md, "Error results"): every tool's success
AND error results validate against the tool's own published `outputSchema` (jsonschema, as the
TypeScript SDK's client does with ajv), an error result carries no `structuredContent`, and its
machine-readable code is in the text (`[Code] Error executing tool NAME: ...`) and in
`_meta["semcat/error"]`."""

from __future__ import annotations

import re

import jsonschema
import pytest

from eval.fixtures.mcplake import DIM, FCT
from mcp_server.mcp import TOOL_NAMES, create_server
from tests.mcp_server.conftest import call, list_tools
from tests.mcp_server.test_mcp_tools import CALLS

# at least one error of every tool, with the code it must carry
ERROR_CALLS: list[tuple[str, dict, str]] = [
    ("pin_snapshot", {"as_of": "no-such-snapshot"}, "SnapshotNotFoundError"),
    ("search_tables", {"snapshot": "no-such-snapshot"}, "SnapshotNotFoundError"),
    ("describe_table", {"table": "acme.core.fct_ordres"}, "NoSuchTableError"),
    ("describe_table", {"tabel": FCT}, "InvalidValueError"),   # a misspelled argument
    ("get_column_values", {"table": FCT, "column": "statuss"}, "NotFoundError"),
    ("find_join_path", {"from_table": FCT, "to_table": "acme.core.nope"}, "NoSuchTableError"),
    ("list_metrics", {"cursor": "garbage"}, "ToolError"),
    ("query_metric", {"metric": "revenu"}, "UnknownMetricError"),
    ("query_catalog", {"query": "/[obj_id = "}, "QuerySyntaxError"),
    ("list_snapshots", {"limit": 0}, "InvalidValueError"),
    ("diff_snapshots", {"from_snapshot": "no-such"}, "SnapshotNotFoundError"),
    ("check_staleness", {"table": "acme.core.nope"}, "NoSuchTableError"),
    ("get_lineage", {"table": "acme.core.nope"}, "NoSuchTableError"),
    ("run_sql", {"sql": "SELEC 1"}, "SqlError"),
    ("run_sql", {"sql": f"DELETE FROM {FCT}"}, "SqlRefusedError"),
    ("annotate", {"table": DIM, "fields": {"no_such_key": 1}}, "InvalidAnnotationError"),
    ("annotate", {"table": DIM, "fields": "x"}, "InvalidValueError"),
]
ERROR_META = "semcat/error"  # the _meta key of an error result's code (docs/mcp.md)
CODE_IN_TEXT = re.compile(r"^\[(\w+)\] Error executing tool (\w+): \S")


def check_error(result, name: str, want: str, schema: dict | None) -> None:
    """An error result as the specification and docs/mcp.md say: isError, no structured content (so nothing
    an output schema could reject), the code first in the text and in _meta."""
    assert result.is_error, result
    assert result.structured_content is None, result.structured_content
    if schema is not None and result.structured_content is not None:  # pragma: no cover - guarded above
        jsonschema.validate(result.structured_content, schema)
    text = result.content[0].text
    m = CODE_IN_TEXT.match(text)
    assert m and m.group(1) == want and m.group(2) == name, text
    meta = (result.meta or {}).get(ERROR_META)
    assert isinstance(meta, dict) and meta["code"] == want, result.meta
    assert "Traceback" not in text


@pytest.fixture(scope="module")
def tools(server):
    return {t.name: t for t in list_tools(server)}


def test_every_tool_has_an_error_case_and_an_output_schema(tools):
    assert {c[0] for c in ERROR_CALLS} == set(TOOL_NAMES) == set(tools)
    assert all(t.output_schema for t in tools.values())


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_success_validates_against_the_output_schema(server, fresh_cat, tools, name):
    srv = create_server(fresh_cat) if name == "annotate" else server  # annotate writes
    r = call(srv, name, CALLS[name])
    assert not r.is_error, r.content[0].text
    jsonschema.validate(r.structured_content, tools[name].output_schema)


@pytest.mark.parametrize("name,args,want", ERROR_CALLS, ids=[f"{c[0]}-{c[2]}" for c in ERROR_CALLS])
def test_error_results_conform(server, tools, name, args, want):
    check_error(call(server, name, args), name, want, tools[name].output_schema)


def test_the_sandbox_rule_is_in_meta(server):
    r = call(server, "run_sql", {"sql": "SELECT * FROM read_csv('/etc/passwd')"})
    assert r.meta[ERROR_META] == {"code": "SqlRefusedError", "rule": "file_access"}, r.meta


def test_unknown_tool_and_read_only_refusal(lake_cat):
    server = create_server(lake_cat, read_only=True)
    r = call(server, "annotate", {"table": DIM, "fields": {"owner": "x"}})
    check_error(r, "annotate", "NotFoundError", None)
    assert "pin_snapshot" in r.content[0].text
