"""The protocol versions semcat claims are those it negotiates (docs/mcp.md, "Protocol versions"), over
streamable HTTP of a real `semcat serve` and over stdio of a real `semcat mcp`:

- `initialize` (the handshake of 2024-11-05 .. 2025-11-25) answers each of those versions with itself,
  and any other (an unknown future one, or 2026-07-28, which has no handshake) with the newest of them;
- 2026-07-28 is served without a handshake: `server/discover` names it, and a client that sends it on
  every request (the official Python SDK client in mode "2026-07-28") lists and calls the tools."""

from __future__ import annotations

import sys

import anyio
import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from eval.fixtures.mcplake import FCT
from mcp_server.mcp import TOOL_NAMES
from mcp_server.mcp.server import HANDSHAKE_VERSIONS, MODERN_VERSIONS, PROTOCOL_VERSIONS
from tests.mcp_server.test_mcp_transports import data_copy, env, serve  # noqa: F401 (a fixture)

ACCEPT = {"Accept": "application/json, text/event-stream"}
INIT = {"capabilities": {}, "clientInfo": {"name": "version-test", "version": "1"}}


@pytest.fixture(scope="module")
def url(data_copy):  # noqa: F811
    with serve(data_copy("protocol"), None) as u:
        yield u + "/mcp"


def test_the_claimed_versions_are_the_sdk_s():
    """What docs/mcp.md claims is what the installed SDK serves (a new SDK that adds one fails here)."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

    assert HANDSHAKE_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS == ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
    assert MODERN_VERSIONS == MODERN_PROTOCOL_VERSIONS == ("2026-07-28",)
    assert PROTOCOL_VERSIONS == HANDSHAKE_VERSIONS + MODERN_VERSIONS
    with open("docs/mcp.md") as f:
        doc = f.read()
    for v in PROTOCOL_VERSIONS:
        assert v in doc, v


def initialize(url: str, version: str) -> str:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": version, **INIT}}
    resp = httpx.post(url, json=body, headers=ACCEPT, timeout=60)
    assert resp.status_code == 200, resp.text
    return str(resp.json()["result"]["protocolVersion"])


@pytest.mark.parametrize("version", HANDSHAKE_VERSIONS)
def test_initialize_answers_each_handshake_version_with_itself(url, version):
    assert initialize(url, version) == version


@pytest.mark.parametrize("version", ["2099-01-01", "2026-07-28", "1.0"])
def test_initialize_with_another_version_gets_the_latest_handshake_version(url, version):
    assert initialize(url, version) == HANDSHAKE_VERSIONS[-1]


def test_server_discover_names_every_served_version(url):
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": INIT["clientInfo"],
            "io.modelcontextprotocol/clientCapabilities": {}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}
    resp = httpx.post(url, json=body, headers={**ACCEPT, "MCP-Protocol-Version": "2026-07-28",
                                                     "Mcp-Method": "server/discover"}, timeout=60)
    assert resp.status_code == 200, resp.text
    assert "2026-07-28" in resp.json()["result"]["supportedVersions"], resp.text


async def _modern_session(client: Client) -> tuple[list[str], object, object, str | None]:
    async with client as c:
        tools = [t.name for t in (await c.list_tools()).tools]
        good = await c.call_tool("describe_table", {"table": FCT})
        bad = await c.call_tool("describe_table", {"table": "acme.core.fct_ordres"})
        return tools, good, bad, getattr(c, "protocol_version", None)


def _check_modern(out: tuple) -> None:
    tools, good, bad, version = out
    assert sorted(tools) == sorted(TOOL_NAMES) and version == "2026-07-28"
    assert not good.is_error and good.structured_content["table"] == FCT
    assert bad.is_error and bad.structured_content is None and bad.meta["semcat/error"]["code"] == "NoSuchTableError"


def test_2026_07_28_over_http(url):
    client = Client(streamable_http_client(url, http_client=httpx2.AsyncClient(timeout=60)), mode="2026-07-28")
    _check_modern(anyio.run(_modern_session, client))


def test_2026_07_28_over_stdio(data_copy):  # noqa: F811
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_server.cli", "mcp", "--data",
                                                                 data_copy("protocol-stdio")], env=env())
    _check_modern(anyio.run(_modern_session, Client(params, mode="2026-07-28")))


def test_2025_11_25_over_stdio_negotiates_it(data_copy):  # noqa: F811
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_server.cli", "mcp", "--data",
                                                                 data_copy("protocol-legacy")], env=env())

    async def go() -> str:
        async with Client(params, mode="legacy") as c:
            return str(c.protocol_version)
    assert anyio.run(go) == "2025-11-25"
