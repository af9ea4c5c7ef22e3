"""Cold start of `semcat mcp` (issue 47, item 3): the stdio front answers `initialize` before the MCP SDK,
pydantic's models or the engine are imported (mcp_server/mcp/stdio.py), and its answer is the SDK's, byte
for byte; the SDK then takes the session over without a second answer to that `initialize`. The timings
live in bench/bench_cold_start.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

import catalog_core as cc
from tests.helpers import build_lake
from tests.mcp_server.test_mcp_transports import env, semcat

HEAVY = ("mcp", "mcp_types", "pydantic", "catalog_core", "semantic", "duckdb", "pyarrow", "numpy", "sqlglot",
         "pyspark", "anyio")


def test_the_stdio_start_path_imports_nothing_heavy():
    """What `semcat mcp` imports before it reads the client's first line: the CLI and the stdio module only."""
    code = ("import sys\nimport mcp_server.cli, mcp_server.mcp.stdio\n"
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], env=env(), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> str:
    d = str(tmp_path_factory.mktemp("cold-start") / "data")
    cat = cc.Catalog.open(d)
    build_lake(cat)
    cat.close()
    return d


def _init(version: str, i: int | str = 1) -> bytes:
    return (json.dumps({"jsonrpc": "2.0", "id": i, "method": "initialize",
                        "params": {"protocolVersion": version, "capabilities": {},
                                   "clientInfo": {"name": "cold", "version": "1"}}}) + "\n").encode()


def _session(wh: str, first: bytes, fast: bool) -> list[bytes]:
    """Lines answered to `first`, notifications/initialized, then ping (id 2) and tools/list (id 3); stdin
    stays open until the last answer (at its end the SDK drops what is still in flight)."""
    e = env()
    if not fast:
        e["SEMCAT_MCP_FAST_INIT"] = "0"
    rest = (b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n{"jsonrpc":"2.0","id":2,"method":"ping"}\n'
            b'{"jsonrpc":"2.0","id":3,"method":"tools/list"}\n')
    p = subprocess.Popen(semcat("mcp", "--data", wh), env=e, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    assert p.stdin is not None and p.stdout is not None and p.stderr is not None
    p.stdin.write(first + rest)
    p.stdin.flush()
    lines = []
    while (line := p.stdout.readline()):
        lines.append(line.rstrip(b"\n"))
        if json.loads(line).get("id") == 3:
            break
    p.stdin.close()
    lines += p.stdout.read().splitlines()
    assert p.wait(60) == 0, p.stderr.read().decode()[-2000:]
    assert b"Traceback" not in p.stderr.read()
    return lines


@pytest.mark.slow  # five `semcat mcp` sessions, each building the whole server: 56 s at load 20, ~15 s quiet
def test_the_fronts_initialize_answer_is_the_sdks_and_the_sdk_takes_over(wh):
    """The same answers with the front (default) as with the SDK answering (SEMCAT_MCP_FAST_INIT=0), for a
    version the SDK knows and one it does not; after it, exactly one answer per request: the SDK's answer to
    the replayed `initialize` never reaches the client. A malformed `initialize` is left to the SDK."""
    for version in ("2025-06-18", "1999-01-01"):
        fast = _session(wh, _init(version, "a"), fast=True)
        assert [json.loads(x)["id"] for x in fast] == ["a", 2, 3]
        sdk = _session(wh, _init(version, "a"), fast=False) if version == "2025-06-18" else None
        if sdk is not None:
            assert fast == sdk
        else:
            assert json.loads(fast[0])["result"]["protocolVersion"] == "2025-11-25"
    bad = _session(wh, b'{"jsonrpc":"2.0","id":"a","method":"initialize","params":{}}\n', fast=True)
    assert "error" in json.loads(bad[0]) and [json.loads(x)["id"] for x in bad] == ["a", 2, 3]


def test_handshake_versions_are_the_sdks():
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    from mcp_server.mcp.handshake import HANDSHAKE_VERSIONS

    assert HANDSHAKE_VERSIONS == tuple(HANDSHAKE_PROTOCOL_VERSIONS)


def test_a_catalog_that_cannot_open_is_still_one_error_line(tmp_path):
    """The catalog opens beside the front: a directory without one still ends in one `Error:` line, exit 1,
    whether the client spoke first or not."""
    for stdin in (b"", _init("2025-06-18")):
        out = subprocess.run(semcat("mcp", "--data", str(tmp_path / "none")), env=env(), input=stdin,
                             capture_output=True, timeout=120)
        err = out.stderr.decode()
        assert out.returncode == 1 and err.startswith("Error: ") and "Traceback" not in err, err
        assert os.listdir(tmp_path) == []


def test_the_wire_drops_the_replayed_initialize_answer_and_notes_the_first_call_answer():
    """The SDK's answer to the `initialize` the front answered never reaches the client; the first answer to a
    call is what lets the SQL preload start (never beside the first describe_table)."""
    from mcp_server.mcp.stdio import _Wire

    r, w = os.pipe()
    out_r, out_w = os.pipe()
    wire = _Wire(r, out_w)
    wire.answered = "a"
    wire.write('{"jsonrpc":"2.0","id":"a","result":{"serverInfo":{"name":"semcat"}}}\n')
    wire.write('{"jsonrpc":"2.0","method":"notifications/message","params":{}}\n')
    assert not wire.answered_a_call.is_set()
    wire.write('{"jsonrpc":"2.0","id":2,"result":{"content":[]}}\n')
    assert wire.answered_a_call.is_set()
    wire.flush()
    os.close(out_w)
    got = os.read(out_r, 100_000).splitlines()
    assert [json.loads(x).get("id") for x in got] == [None, 2]
    for fd in (r, w, out_r):
        os.close(fd)


def test_background_work_of_a_call_waits_for_the_sessions_first_answer(wh):
    """`describe_table`'s SQL warm-up (a worker process) must not compete with a stdio session's first answer:
    `ToolContext.after_answer` holds it until the transport says the first answer is written; without a gate
    (HTTP) or after it, it runs at once."""
    import threading

    from mcp_server.mcp.context import ToolContext

    cat = cc.Catalog.open(wh)
    try:
        s = ToolContext(cat)
        ran: list[str] = []
        s.after_answer(lambda: ran.append("no gate"))
        assert ran == ["no gate"]
        s.answered = threading.Event()
        done = threading.Event()
        s.after_answer(lambda: (ran.append("after"), done.set()))
        assert not done.wait(0.3) and ran == ["no gate"]
        s.answered.set()
        assert done.wait(10) and ran == ["no gate", "after"]
        s.after_answer(lambda: ran.append("at once"))
        assert ran[-1] == "at once"
    finally:
        cat.close()


# imported where first used, never on the way to a stdio session's first answer (issue 47, cold start)
NOT_BEFORE_THE_FIRST_CALL = ("semantic.review", "semantic.interop", "yaml", "rapidfuzz")


def test_the_loading_thread_and_the_first_describe_table_import_nothing_they_do_not_need(wh):
    """What `semcat mcp`'s loading thread imports (open the catalog, build the server) and what its first
    `describe_table` needs leave out the review queue, the importers (yaml) and rapidfuzz."""
    code = f"""
import sys
import anyio
from mcp_server.mcp.stdio import open_catalog
from mcp_server.mcp.server import create_server

cat = open_catalog({wh!r}, None, None)
server = create_server(cat)
name = sorted(server.tool_context.tables(cat.latest_vid))[0]
got = anyio.run(server.call_tool, "describe_table", {{"table": name}})
assert not getattr(got, "is_error", False) and name in str(got), str(got)[:2000]
print(sorted(m for m in {NOT_BEFORE_THE_FIRST_CALL!r} if m in sys.modules))
cat.close()
"""
    out = subprocess.run([sys.executable, "-c", code], env=env(), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout


def test_the_collector_is_off_until_the_first_answer_and_on_after_it(wh):
    """No cyclic garbage collection while the session loads and answers its first call (its passes over the
    imports' objects cost ~20% of that CPU); on again after it, with the imports frozen out of its walks."""
    watcher = f"""
import gc, sys, threading, time
seen = []
def watch():
    while True:
        state = (gc.isenabled(), gc.get_freeze_count() > 0)
        if not seen or seen[-1] != state:
            seen.append(state)
            print("gc", *state, file=sys.stderr, flush=True)
        time.sleep(0.005)
threading.Thread(target=watch, daemon=True).start()
while not seen:
    time.sleep(0.001)
from mcp_server.mcp.stdio import run_stdio
run_stdio({wh!r})
"""
    p = subprocess.Popen([sys.executable, "-c", watcher], env=env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    assert p.stdin is not None and p.stdout is not None and p.stderr is not None
    p.stdin.write(_init("2025-06-18") + b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
                  b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"pin_snapshot","arguments":{}}}\n')
    p.stdin.flush()
    while (line := p.stdout.readline()):
        if json.loads(line).get("id") == 2:
            break
    assert b'"isError":true' not in line
    # the watcher polls every 5 ms: on a loaded machine it may not have seen the state after the answer yet, so
    # read its lines until it has (or 60 s pass), and only then end the session
    import selectors

    states: list[tuple[str, ...]] = []
    sel = selectors.DefaultSelector()
    sel.register(p.stderr, selectors.EVENT_READ)
    deadline = time.monotonic() + 60
    while ("True", "True") not in states and time.monotonic() < deadline:
        if sel.select(timeout=1) and (err := p.stderr.readline()):
            if err.startswith(b"gc "):
                states.append(tuple(err.decode().split()[1:]))
    p.stdin.close()
    assert p.wait(60) == 0
    states += [tuple(x.split()[1:]) for x in p.stderr.read().decode().splitlines() if x.startswith("gc ")]
    # on before run_stdio, off while loading (then frozen), on again after the first answer, still frozen
    assert states[0] == ("True", "False") and ("False", "False") in states, states
    assert states[-1] == ("True", "True"), states
