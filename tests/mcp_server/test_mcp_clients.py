"""The clients people run, on semcat's error paths: the TypeScript SDK client (`@modelcontextprotocol/sdk`,
what Claude Desktop, Cursor and most IDE clients are built on) over stdio (`semcat mcp --data`) and
streamable HTTP (`semcat serve`, /mcp), and the MCP Inspector CLI (2.x, on the TypeScript SDK 2.x) on one
error per tool family. Both validate a result's structured content against the tool's output schema and
throw "Structured content does not match the tool's output schema" when it does not match: an error must
reach them as a result with isError and its message, never as a thrown validation error.

The npm packages (tests/mcp_server/node/package.json: pinned SDK, Inspector and node@22, which the
Inspector needs) are installed by the test into $SEMCAT_NPM_CACHE/mcpclient (default
~/.cache/semcat-npm/mcpclient)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from eval.fixtures.mcplake import DIM, FCT
from tests.helpers import inspector_command, pinned_node_packages
from tests.mcp_server.test_mcp_error_results import CODE_IN_TEXT
from tests.mcp_server.test_mcp_transports import data_copy, env, serve  # noqa: F401 (a fixture)

# the error paths of the issue (unknown table, a SQL typo, staleness of an unknown table, a misspelled
# argument, annotate with bad input), one success, and an error of every other kind of refusal
TS_CALLS: list[tuple[str, dict, str | None]] = [
    ("describe_table", {"table": "acme.core.fct_ordres"}, "NoSuchTableError"),
    ("run_sql", {"sql": "SELEC 1"}, "SqlError"),
    ("check_staleness", {"table": "acme.core.nope"}, "NoSuchTableError"),
    ("search_tables", {"qurey": "orders"}, "InvalidValueError"),
    ("annotate", {"table": DIM, "fields": {"no_such_key": 1}}, "InvalidAnnotationError"),
    ("list_snapshots", {"limit": 0}, "InvalidValueError"),
    ("no_such_tool", {}, "NotFoundError"),
    ("describe_table", {"table": FCT}, None),
]


@pytest.fixture(scope="module")
def node_env() -> dict[str, str]:
    """The pinned npm packages (tests.helpers.pinned_node_packages), and the paths of node 22, the
    TypeScript client script and the Inspector CLI there."""
    where = pinned_node_packages()
    node = os.path.join(where, "node_modules", "node", "bin", "node")
    assert os.path.exists(node), f"node@22 is missing from {where}"
    return {"where": where, "node": node, "client": os.path.join(where, "client.mjs"),
            "inspector": os.path.join(where, "node_modules", "@modelcontextprotocol", "inspector")}


def ts_client(node_env: dict[str, str], spec: dict) -> dict:
    spec = {**spec, "calls": [{"name": n, "arguments": a} for n, a, _ in TS_CALLS]}
    p = subprocess.run([node_env["node"], node_env["client"], json.dumps(spec)], capture_output=True, text=True,
                       timeout=300, env=env())
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout)


def check_ts_results(out: dict) -> None:
    assert "describe_table" in out["tools"] and "annotate" in out["tools"], out.get("tools")
    assert len(out["results"]) == len(TS_CALLS)
    for (name, _args, want), r in zip(TS_CALLS, out["results"], strict=True):
        assert "thrown" not in r, f"the TypeScript SDK threw on {name}: {r.get('thrown')}"
        text = r["content"][0]["text"]
        if want is None:
            assert not r["isError"] and r["structuredContent"]["table"] == FCT, text[:300]
            continue
        assert r["isError"] and r["structuredContent"] is None, r
        m = CODE_IN_TEXT.match(text)
        assert m and m.group(1) == want, text
        assert r["_meta"]["semcat/error"]["code"] == want, r["_meta"]


@pytest.mark.slow  # npm: the TypeScript SDK and node@22 (over HTTP stays in the default tier)
def test_typescript_sdk_client_over_stdio(node_env, data_copy):  # noqa: F811
    spec = {"transport": "stdio", "command": sys.executable,
            "args": ["-m", "mcp_server.cli", "mcp", "--data", data_copy("ts-stdio")], "env": env()}
    check_ts_results(ts_client(node_env, spec))


def test_typescript_sdk_client_over_http(node_env, data_copy):  # noqa: F811
    with serve(data_copy("ts-http"), "ts-w-token:write") as url:
        check_ts_results(ts_client(node_env, {"transport": "http", "url": url + "/mcp", "token": "ts-w-token"}))


# ------------------------------------------------------------------ MCP Inspector CLI (TypeScript SDK 2.x)
INSPECTOR_ERRORS = [  # one error per tool family (discovery, data, history, write) and a misspelled argument
    ("describe_table", ["table=acme.core.fct_ordres"], "NoSuchTableError"),
    ("run_sql", ["sql=SELEC 1"], "SqlError"),
    ("check_staleness", ["table=acme.core.nope"], "NoSuchTableError"),
    ("annotate", ["table=" + DIM, 'fields={"no_such_key": 1}'], "InvalidAnnotationError"),
    ("describe_table", ["tabel=" + FCT], "InvalidValueError"),
]


def inspector_call(node_env: dict[str, str], target: list[str], tool: str, args: list[str]) -> dict:
    cmd = inspector_command(node_env["where"])
    tool_args = [x for a in args for x in ("--tool-arg", a)]
    p = subprocess.run([*cmd, "--cli", *target, "--method", "tools/call", "--tool-name", tool, *tool_args],
                       capture_output=True, text=True, timeout=180, env=env())
    # it prints the result, and exits 5 saying "tool_is_error" when the result has isError (a schema
    # violation is exit 1 and no result)
    assert p.returncode == 0 or (p.returncode == 5 and "tool_is_error" in p.stderr), \
        f"the Inspector CLI failed on {tool}: {p.stderr[-3000:]}{p.stdout[-2000:]}"
    return json.loads(p.stdout)


@pytest.mark.slow
def test_inspector_cli_on_the_error_paths(node_env, data_copy):  # noqa: F811
    # the Inspector passes the server only the variables given with -e
    target = ["-e", f"PYTHONPATH={env()['PYTHONPATH']}", sys.executable, "-m", "mcp_server.cli", "mcp", "--data",
              data_copy("insp-errors")]
    for tool, args, want in INSPECTOR_ERRORS:
        r = inspector_call(node_env, target, tool, args)
        text = r["content"][0]["text"]
        assert r.get("isError") and "structuredContent" not in r, r
        m = CODE_IN_TEXT.match(text)
        assert m and m.group(1) == want and m.group(2) == tool, text


@pytest.mark.slow
def test_inspector_cli_on_an_error_over_http(node_env, data_copy):  # noqa: F811
    with serve(data_copy("insp-errors-http"), None) as url:
        r = inspector_call(node_env, [url + "/mcp", "--transport", "http"], "run_sql", ["sql=SELEC 1"])
        assert r.get("isError") and CODE_IN_TEXT.match(r["content"][0]["text"]), r
