"""Random arguments to every tool: each call ends in a valid result or a deliberate ToolError,
never a crash (the SDK's bare "Error executing tool X") and never a broken server."""

from __future__ import annotations

import re

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eval.fixtures.mcplake import DIM, FCT, WIDE
from mcp_server.mcp import TOOL_NAMES, create_server
from tests.mcp_server.conftest import call, list_tools

NAMES = [FCT, DIM, WIDE, "acme.core", "acme", "acme.core.nope", "", "a.b.c.d", "acme._semantic.x", "pin:3"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 10**6), st.floats(allow_nan=True),
                    st.text(max_size=40), st.sampled_from(NAMES),
                    st.sampled_from(["pin:1", "pin:-1", "pin:", "1", "latest", "2024-11-12T00:00:00Z", "status",
                                     "amount", "region", "revenue", "SELECT 1", f"SELECT * FROM {FCT}",
                                     '/[obj_id = "acme"]/*', "summary", "full", "data", "metadata", "month"]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=12), inner, max_size=4)),
                      max_leaves=8)


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory):
    import catalog_core as cc
    from eval.fixtures import mcplake

    d = tmp_path_factory.mktemp("fuzz")
    cat = cc.Catalog.open(str(d / "data"))
    mcplake.build(cat, d / "files", extra_tables=3)
    server = create_server(cat)
    tools = {t.name: t for t in list_tools(server)}
    yield server, tools
    cat.close()


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_random_arguments_give_results_or_tool_errors(fuzz_server, name):
    server, tools = fuzz_server
    tool = tools[name]
    props = list(tool.input_schema.get("properties", {}))

    @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.dictionaries(st.sampled_from(props + ["unknown_arg"]), values, max_size=len(props) + 1))
    def check(args):
        r = call(server, name, args)
        if r.is_error:
            text = r.content[0].text
            assert r.structured_content is None, r.structured_content  # nothing an output schema could reject
            # "[<code>] Error executing tool NAME: ...": a crash has no text after the name
            assert re.match(rf"\[\w+\] Error executing tool {name}: \S", text), text
            assert "Traceback" not in text
        else:
            jsonschema.validate(r.structured_content, tool.output_schema)
    check()
    ok = call(server, "describe_table", {"table": FCT})  # the server still answers
    assert not ok.is_error


@pytest.mark.parametrize("snapshot", ["pin:" + "9" * 5000, "pin:" + "9" * 25, 10**30, "9" * 5000])
def test_an_oversized_vid_is_a_missing_snapshot_not_a_crash(fuzz_server, snapshot):
    """A vid is a 64-bit integer: a longer number (`int()` of 4,300+ digits raises ValueError, a
    20-digit one overflows the engine's key) is answered as a snapshot that does not exist."""
    server, _ = fuzz_server
    r = call(server, "describe_table", {"table": FCT, "snapshot": snapshot})
    assert r.is_error
    assert r.content[0].text.startswith("[SnapshotNotFoundError]"), r.content[0].text[:300]
    assert "list_snapshots" in r.content[0].text
