"""Fixtures of the MCP tests: the MCP lake (eval/fixtures/mcplake.py) in an embedded catalog,
servers over it, and a synchronous way to call tools through the SDK's in-memory client."""

from __future__ import annotations

import json
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import Client

import catalog_core as cc
from eval.fixtures import mcplake
from mcp_server.mcp import create_server


@pytest.fixture(scope="module")
def lake_dir(tmp_path_factory):
    """A built lake, closed: tests open their own catalog on a copy or read it."""
    d = tmp_path_factory.mktemp("mcplake")
    cat = cc.Catalog.open(str(d / "data"))
    mcplake.build(cat, d / "files")
    cat.close()
    return d / "data"


@pytest.fixture(scope="module")
def lake_cat(lake_dir):
    cat = cc.Catalog.open(str(lake_dir))
    yield cat
    cat.close()


@pytest.fixture(scope="module")
def server(lake_cat):
    return create_server(lake_cat)


@pytest.fixture
def fresh_cat(tmp_path):
    """A lake of its own, for tests that commit."""
    cat = cc.Catalog.open(str(tmp_path / "data"))
    mcplake.build(cat, tmp_path / "files", extra_tables=2)
    yield cat
    cat.close()


async def _session(server: Any, fn: Any) -> Any:
    async with Client(server) as client:
        return await fn(client)


def with_client(server: Any, fn: Any) -> Any:
    """Run `await fn(client)` with an in-memory client of `server`."""
    return anyio.run(_session, server, fn)


def call(server: Any, name: str, args: dict[str, Any] | None = None) -> Any:
    return with_client(server, lambda c: c.call_tool(name, args or {}))


def list_tools(server: Any) -> list[Any]:
    async def go(c: Any) -> Any:
        return (await c.list_tools()).tools
    return with_client(server, go)


def ok(result: Any, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """The structured content of a successful call (validated against `schema` when given). Its
    text is the one-line summary then the compact JSON of that same structured content, so a
    client that forwards only the text shows the model everything (warnings, snapshot)."""
    assert not result.is_error, result.content[0].text
    assert len(result.content) == 1
    summary, newline, body = result.content[0].text.partition("\n")
    assert summary.strip() and newline and "\n" not in body, result.content[0].text[:300]
    assert body == json.dumps(result.structured_content, separators=(",", ":"), ensure_ascii=False)
    if schema is not None:
        jsonschema.validate(result.structured_content, schema)
    return result.structured_content


def err(result: Any) -> str:
    """The text of a failed call after its code: a failed call has no structured content, its text is
    "[<code>] Error executing tool NAME: <message>" and its `_meta["semcat/error"]` {"code"[, "rule"]}."""
    assert result.is_error and result.structured_content is None, result.structured_content
    full = result.content[0].text
    code, _, text = full.partition("] ")
    assert code.startswith("[") and code[1:] == error_meta(result)["code"], (full, result.meta)
    assert text.startswith("Error executing tool ") and "Traceback" not in text, full
    # a deliberate ToolError has its own text after the prefix; a crash has nothing more
    assert ": " in text, f"the tool crashed: {text}"
    assert code[1:] != "InternalError", full
    return text


def error_meta(result: Any) -> dict[str, Any]:
    """{"code"[, "rule"]} of a failed call (its `_meta["semcat/error"]`)."""
    meta = (result.meta or {}).get("semcat/error")
    assert isinstance(meta, dict) and meta.get("code"), result.meta
    return meta


def code(result: Any) -> str:
    """The machine-readable error code of a failed call."""
    err(result)
    return str(error_meta(result)["code"])
