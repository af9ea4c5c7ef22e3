"""Real transports: `semcat mcp` over stdio (embedded, and fronting a remote catalog), streamable
HTTP at /mcp of a real `semcat serve` with tokens none / read / write, DNS-rebinding checks, and
the MCP Inspector CLI against both transports."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time

import anyio
import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

import semantic as sm
from eval.fixtures.mcplake import DIM, FCT
from mcp_server.mcp import READ_TOOLS, TOOL_NAMES
from tests.helpers import free_port, inspector_command, pinned_node_packages, stop_process, wait_healthy

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WRITE, READ = "w-secret-token", "r-secret-token"


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = ROOT + os.pathsep + e.get("PYTHONPATH", "")
    e.pop("SEMCAT_TOKENS", None)
    return e


def semcat(*args: str) -> list[str]:
    return [sys.executable, "-m", "mcp_server.cli", *args]


@pytest.fixture(scope="module")
def data_copy(lake_dir, tmp_path_factory):
    """A private copy of the built lake (one process owns a data directory)."""
    def make(name: str) -> str:
        dst = tmp_path_factory.mktemp(name) / "data"
        shutil.copytree(lake_dir, dst)
        return str(dst)
    return make


@contextlib.contextmanager
def serve(data: str, tokens: str | None):
    port = free_port()
    e = env()
    if tokens:
        e["SEMCAT_TOKENS"] = tokens
    proc = subprocess.Popen(semcat("serve", "--data", data, "--port", str(port)), env=e,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(proc, url)
        yield url
    finally:
        stop_process(proc)


@pytest.fixture(scope="module")
def secured(data_copy):
    with serve(data_copy("secured"), f"{WRITE}:write,{READ}:read") as url:
        yield url


def http_client(url: str, token: str | None) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return Client(streamable_http_client(url + "/mcp", http_client=httpx2.AsyncClient(headers=headers, timeout=60)))


def run(client: Client, fn):
    async def go():
        async with client as c:
            return await fn(c)
    return anyio.run(go)


async def typical(c) -> dict:
    names = [t.name for t in (await c.list_tools()).tools]
    pin = await c.call_tool("pin_snapshot", {})
    handle = pin.structured_content["snapshot"]["handle"]
    desc = await c.call_tool("describe_table", {"table": FCT, "snapshot": handle})
    hits = await c.call_tool("search_tables", {"query": "store regions", "snapshot": handle})
    sql = await c.call_tool("run_sql", {"sql": f"SELECT count(*) FROM {FCT}", "snapshot": handle})
    return {"names": names, "pin": pin, "desc": desc, "hits": hits, "sql": sql}


def check_typical(r: dict, names: tuple[str, ...] = TOOL_NAMES) -> None:
    assert sorted(r["names"]) == sorted(names)
    vid = r["pin"].structured_content["snapshot"]["vid"]
    for key in ("desc", "hits", "sql"):
        assert not r[key].is_error, r[key].content[0].text
        assert r[key].structured_content["snapshot"]["vid"] == vid
    assert r["desc"].structured_content["table"] == FCT
    assert r["hits"].structured_content["tables"][0]["name"] == DIM
    assert r["sql"].structured_content["rows"] == [[3]]


# ------------------------------------------------------------------ stdio
@pytest.mark.e2e  # the MCP stdio surface: a real `semcat mcp` subprocess and the Python SDK client
def test_semcat_mcp_over_stdio(data_copy):
    data = data_copy("stdio")
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_server.cli", "mcp", "--data", data,
                                                                 "--author", "agent:stdio-test"], env=env())

    async def go(c):
        r = await typical(c)
        r["annotate"] = await c.call_tool("annotate", {"table": DIM, "fields": {"owner": "stores-team"}})
        return r
    r = run(Client(params), go)
    check_typical(r)
    assert not r["annotate"].is_error and r["annotate"].structured_content["author"] == "agent:stdio-test"
    import catalog_core as cc

    cat = cc.Catalog.open(data)
    try:
        [ann] = [a for a in sm.read_annotations(cat, DIM) if a.key == "table.owner"]
        assert ann.provenance.author == "agent:stdio-test" and ann.provenance.source == "agent"
    finally:
        cat.close()


def test_semcat_mcp_needs_exactly_one_source():
    p = subprocess.run(semcat("mcp"), env=env(), capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and "exactly one of --data DIR or --url URL" in p.stderr
    p = subprocess.run(semcat("mcp", "--data", "/nonexistent/dir"), env=env(), capture_output=True, text=True,
                       timeout=60)
    assert p.returncode != 0 and "does not exist" in p.stderr and "--create" in p.stderr


def test_semcat_mcp_fronting_a_remote_catalog(secured):
    def params(token):
        return StdioServerParameters(command=sys.executable, args=["-m", "mcp_server.cli", "mcp", "--url", secured,
                                                                   "--token", token], env=env())

    async def go(c):
        r = await typical(c)
        r["annotate"] = await c.call_tool("annotate", {"table": DIM, "fields": {"tags": ["stores"]}})
        return r
    r = run(Client(params(READ)), go)
    check_typical(r)
    assert r["annotate"].is_error and "read" in r["annotate"].content[0].text  # the remote server said 403
    w = run(Client(params(WRITE)), lambda c: c.call_tool("annotate", {"table": DIM, "fields": {"tags": ["stores"]}}))
    assert not w.is_error and w.structured_content["source"] == "agent"


# ------------------------------------------------------------------ streamable HTTP
def test_http_without_a_token_gets_401(secured):
    for token in (None, "wrong"):
        h = {"Authorization": f"Bearer {token}"} if token else {}
        resp = httpx.post(secured + "/mcp", headers=h, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert resp.status_code == 401 and resp.json()["error"] == "AuthError"
    with pytest.raises(Exception):  # noqa: B017 - the SDK client surfaces the 401 as its own error type
        run(http_client(secured, None), lambda c: c.list_tools())


def test_http_read_token_reads_but_cannot_annotate(secured):
    """Issue 23: the refusal was an HTTP 403 that MCP clients show as "Server returned an error
    response" (-32603); it is a tool result the agent can read, and annotate is not offered."""
    check_typical(run(http_client(secured, READ), typical), READ_TOOLS)
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "annotate", "arguments": {"table": DIM, "fields": {"owner": "x"}}}}
    resp = httpx.post(secured + "/mcp", json=body, headers={"Authorization": f"Bearer {READ}",
                                                            "Accept": "application/json, text/event-stream"})
    assert resp.status_code == 200, resp.text
    result = resp.json()["result"]
    assert result["isError"] and result["_meta"]["semcat/error"]["code"] == "PermissionDeniedError"
    assert "structuredContent" not in result and result["content"][0]["text"].startswith("[PermissionDeniedError] ")
    assert "a token with role 'write'" in result["content"][0]["text"]
    r = run(http_client(secured, READ), lambda c: c.call_tool("annotate", {"table": DIM, "fields": {"owner": "x"}}))
    assert r.is_error and "'read' token cannot call annotate" in r.content[0].text
    assert r.meta["semcat/error"]["code"] == "PermissionDeniedError"
    # refused before its arguments are read: a wrong argument does not hide the missing right
    r = run(http_client(secured, READ), lambda c: c.call_tool("annotate", {"tabel": DIM}))
    assert r.is_error and r.meta["semcat/error"]["code"] == "PermissionDeniedError"


def test_http_tools_list_offers_each_token_what_it_may_call(secured):
    async def names(c):
        return sorted(t.name for t in (await c.list_tools()).tools)
    assert run(http_client(secured, READ), names) == sorted(READ_TOOLS)
    assert run(http_client(secured, WRITE), names) == sorted(TOOL_NAMES)
    r = run(http_client(secured, READ), lambda c: c.call_tool("drop_table", {}))
    assert r.meta["semcat/error"]["code"] == "NotFoundError" and "search_tables" in r.content[0].text
    assert "annotate" not in r.content[0].text  # the tools it names are those the token may call


def test_http_write_token_annotates_as_its_principal(secured):
    r = run(http_client(secured, WRITE), lambda c: c.call_tool("annotate", {
        "table": FCT, "column": "status", "fields": {"synonyms": ["order state"]}, "note": "seen in run_sql"}))
    assert not r.is_error, r.content[0].text
    author = r.structured_content["author"]
    assert author.startswith("token:") and WRITE not in author
    import catalog_core as cc

    cat = cc.connect(secured, token=READ)
    [ann] = [a for a in sm.read_annotations(cat, FCT) if a.key == "column.4.synonyms"]
    assert ann.provenance.author == author and ann.provenance.source == "agent" and ann.provenance.note == "seen in run_sql"


def test_http_without_tokens_on_loopback(data_copy):
    with serve(data_copy("open"), None) as url:
        check_typical(run(http_client(url, None), typical))


def test_dns_rebinding_protection_for_a_loopback_bind(secured):
    h = {"Authorization": f"Bearer {READ}", "Accept": "application/json, text/event-stream"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    evil_host = httpx.post(secured + "/mcp", json=body, headers=dict(h, Host="attacker.example"))
    evil_origin = httpx.post(secured + "/mcp", json=body, headers=dict(h, Origin="http://attacker.example"))
    fine = httpx.post(secured + "/mcp", json=body, headers=dict(h, Origin=secured))
    assert evil_host.status_code == 421 and evil_origin.status_code == 403
    assert fine.status_code == 200 and "describe_table" in fine.text


def test_security_settings_follow_the_bind_address():
    from mcp_server.mcp.http import security_for

    lo = security_for("127.0.0.1", extra="")
    assert lo.enable_dns_rebinding_protection and "localhost:*" in lo.allowed_hosts
    host = security_for("10.1.2.3", extra="catalog.internal")
    assert set(host.allowed_hosts) >= {"10.1.2.3:*", "catalog.internal", "catalog.internal:*"}
    assert "localhost:*" not in host.allowed_hosts
    assert not security_for("0.0.0.0", extra="").enable_dns_rebinding_protection
    assert security_for("0.0.0.0", extra="lake.example").allowed_hosts == ["lake.example", "lake.example:*"]


# ------------------------------------------------------------------ MCP Inspector CLI
@pytest.fixture(scope="module")
def inspector() -> list[str]:
    """The pinned MCP Inspector CLI (tests/mcp_server/node/package.json) under node@22, which it needs."""
    return inspector_command(pinned_node_packages())


def inspect(cmd: list[str], target: list[str], *method: str) -> dict:
    p = subprocess.run([*cmd, "--cli", *target, *method], capture_output=True, text=True, timeout=180, env=env())
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout)


def _inspector_session(exe: list[str], target: list[str]) -> None:
    tools = inspect(exe, target, "--method", "tools/list")
    assert sorted(t["name"] for t in tools["tools"]) == sorted(TOOL_NAMES)
    hits = inspect(exe, target, "--method", "tools/call", "--tool-name", "search_tables", "--tool-arg", "query=orders")
    assert hits["structuredContent"]["tables"][0]["name"] == FCT
    desc = inspect(exe, target, "--method", "tools/call", "--tool-name", "describe_table", "--tool-arg",
                   f"table={FCT}")
    assert desc["structuredContent"]["table"] == FCT and not desc.get("isError")
    assert any(w["kind"] == "freshness" for w in desc["structuredContent"]["warnings"])


@pytest.mark.slow  # npm: the MCP Inspector CLI (Node); test_semcat_mcp_over_stdio is the default tier's stdio end to end
def test_inspector_cli_over_stdio(inspector, data_copy):
    _inspector_session(inspector, [sys.executable, "-m", "mcp_server.cli", "mcp", "--data", data_copy("insp")])


@pytest.mark.slow  # npm: the MCP Inspector CLI (Node)
def test_inspector_cli_over_http(inspector, data_copy):
    # The Inspector CLI sends no Authorization header (it has no option for one), so it talks to a
    # loopback server without tokens; the token checks are the tests above.
    with serve(data_copy("insp-http"), None) as url:
        _inspector_session(inspector, [url + "/mcp", "--transport", "http"])


def test_the_token_budget_is_a_server_option_over_stdio_and_http(data_copy):
    """`semcat mcp --token-budget N` and `semcat serve --token-budget N`: responses stay within N tokens."""
    from mcp_server.mcp.bounds import count_tokens

    def size(r) -> int:
        return count_tokens(json.dumps(r.structured_content, separators=(",", ":"), ensure_ascii=False)) + sum(
            count_tokens(c.text) for c in r.content)

    async def go(c):
        return await c.call_tool("query_catalog", {"query": "/*/*/*", "limit": 200})

    data = data_copy("budget")
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_server.cli", "mcp", "--data", data,
                                                                 "--token-budget", "1500"], env=env())
    r = run(Client(params), go)
    assert not r.is_error and r.structured_content["truncated"] and size(r) <= 1500
    port = free_port()
    proc = subprocess.Popen(semcat("serve", "--data", data, "--port", str(port), "--token-budget", "1800"), env=env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(600):
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            time.sleep(0.1)
        r = run(http_client(url, None), go)
        assert not r.is_error and r.structured_content["truncated"] and size(r) <= 1800  # 8,000 would not cut it
    finally:
        stop_process(proc)
    bad = subprocess.run(semcat("mcp", "--data", data, "--token-budget", "10"), env=env(), capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode != 0 and "--token-budget" in bad.stderr


def test_semcat_mcp_read_only_lists_no_annotate(data_copy):
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_server.cli", "mcp", "--data",
                                                                 data_copy("readonly"), "--read-only"], env=env())

    async def go(c):
        return [t.name for t in (await c.list_tools()).tools], await c.call_tool("annotate", {
            "table": DIM, "fields": {"owner": "x"}})
    names, refused = run(Client(params), go)
    assert sorted(names) == sorted(READ_TOOLS) and refused.is_error
