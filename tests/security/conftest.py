"""Fixtures of the security tests (issue 35): a real uvicorn server on a loopback port serving a
small catalog, with the MCP plugin mounted, in both modes: tokens on (a read and a write token)
and tokens off (the loopback default)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import catalog_core as cc
from mcp_server.http.auth import Principal, Tokens
from mcp_server.http.server import default_plugins, serve_in_thread

READ, WRITE, WRITE2 = "sec-read-token", "sec-write-token", "sec-write2-token"  # WRITE, WRITE2: agents' tokens
STEWARD = "sec-steward-token"  # a person's write token: the only kind that decides review items on /ui
TABLE = "/acme/core/dim_store"


def make_engine(data_dir: str) -> cc.Catalog:
    cat = cc.Catalog.open(data_dir)
    with cat.transaction(author="setup") as t:
        t.add("/acme", {"obj_type": "catalog"})
        t.add("/acme/core", {"obj_type": "namespace"})
        t.add(TABLE, {"obj_type": "table", "schema": {"schema_id": 0, "columns": [
            {"id": 1, "name": "store_id", "type": "int", "nullable": False}]}, "partition_by": []})
    return cat


@pytest.fixture
def engine(data_dir) -> Iterator[cc.Catalog]:
    cat = make_engine(data_dir)
    yield cat
    cat.close()


def start(engine: cc.Catalog, tokens: bool, **kw: Any):
    """A server for `engine` with the MCP tools at /mcp; tokens READ/WRITE/WRITE2/STEWARD when `tokens`."""
    toks = Tokens({READ: "read", WRITE: "write", WRITE2: "write",
                   STEWARD: Principal("steward", "write", "human")}) if tokens else Tokens()
    return serve_in_thread(engine, tokens=toks, plugins=default_plugins(), **kw)


@pytest.fixture(params=["tokens", "open"])
def mode(request) -> str:
    return str(request.param)


@pytest.fixture(scope="module", params=["tokens", "open"])
def shared(request, tmp_path_factory):
    """(mode, engine, server) shared by a module's tests (a server takes seconds to start on a
    loaded machine); tests that change the catalog compare against what they saw first."""
    cat = make_engine(str(tmp_path_factory.mktemp("shared") / "data"))
    with start(cat, request.param == "tokens") as handle:
        yield str(request.param), cat, handle
    cat.close()


def auth(mode: str, token: str = WRITE) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if mode == "tokens" else {}
