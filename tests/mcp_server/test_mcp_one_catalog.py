"""One catalog, both transports (issue 34, item 5; issue 47): `semcat mcp --data DIR` while a real `semcat serve
--data DIR` runs opens DIR itself (many processes share a directory: docs/engine.md); serve.json
(mcp_server.mcp.served) is there while the server runs and gone after it stops."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

import catalog_core as cc
from eval.fixtures.mcplake import DIM, FCT
from mcp_server.mcp.served import SERVE_FILE, find_server
from tests.mcp_server.test_mcp_transports import data_copy, env, semcat, serve  # noqa: F401 (a fixture)

WRITE = "one-catalog-write-token"


def mcp_session(data: str, *extra: str) -> tuple[dict, str]:
    """A session of `semcat mcp --data DATA EXTRA...` through the Python SDK client: its tools, a describe
    and an annotate; and what the process wrote on stderr."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_server.cli", "mcp", "--data", data,
                                                                 *extra], env=env())
    with tempfile.TemporaryFile("w+") as errlog:
        async def go() -> dict:
            async with Client(stdio_client(params, errlog=errlog)) as c:
                return {"tools": [t.name for t in (await c.list_tools()).tools],
                        "desc": await c.call_tool("describe_table", {"table": FCT}),
                        "annotate": await c.call_tool("annotate", {"table": DIM, "fields": {"tags": ["one"]}})}
        out = anyio.run(go)
        errlog.seek(0)
        return out, errlog.read()


def refused(data: str, *extra: str) -> str:
    p = subprocess.run(semcat("mcp", "--data", data, *extra), env=env(), capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    assert p.returncode != 0, p.stderr
    return p.stderr


def test_beside_a_server_with_tokens(data_copy):  # noqa: F811
    """Many processes on one directory (issue 47): `semcat mcp --data DIR` beside a server opens DIR itself
    (a secondary reader, the writer's turn for its writes), whether or not the server takes tokens."""
    data = data_copy("one-tokens")
    with serve(data, f"{WRITE}:write") as url:
        with open(os.path.join(data, SERVE_FILE)) as f:
            info = json.load(f)
        assert info["url"] == url and info["tokens"] is True and WRITE not in json.dumps(info)
        out, said = mcp_session(data)
        assert "connecting" not in said and "already open" not in said, said
        assert "annotate" in out["tools"] and not out["desc"].is_error, out["desc"].content[0].text
        assert not out["annotate"].is_error, out["annotate"].content[0].text
    assert not os.path.exists(os.path.join(data, SERVE_FILE))  # removed at stop
    out, said = mcp_session(data)  # and DIR opens directly again
    assert not out["desc"].is_error and "connecting" not in said


def test_beside_a_server_without_tokens(data_copy):  # noqa: F811
    data = data_copy("one-open")
    with serve(data, None):
        out, said = mcp_session(data)
        assert "connecting" not in said, said
        assert not out["desc"].is_error and out["desc"].structured_content["table"] == FCT
        assert not out["annotate"].is_error


def test_a_stale_file_is_ignored(data_copy):  # noqa: F811
    """A serve.json left by a killed server (its pid not running) names nothing; DIR held by this process
    opens all the same (many processes, one catalog)."""
    data = data_copy("one-stale")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with open(os.path.join(data, SERVE_FILE), "w") as f:
        json.dump({"url": "http://127.0.0.1:9", "pid": dead.pid, "tokens": False}, f)
    assert find_server(data) is None
    cat = cc.Catalog.open(data)  # this process holds DIR
    try:
        out, said = mcp_session(data)
        assert not out["desc"].is_error and not out["annotate"].is_error and "semcat mcp --url" not in said, said
    finally:
        cat.close()


@pytest.mark.parametrize("host,want", [("0.0.0.0", "http://127.0.0.1:5"), ("::", "http://[::1]:5"),
                                       ("10.1.2.3", "http://10.1.2.3:5"), ("::1", "http://[::1]:5")])
def test_local_url(host, want):
    from mcp_server.mcp.served import local_url

    assert local_url(host, 5) == want
