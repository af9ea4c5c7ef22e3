"""Clean exits (issue 47, item 6): a client that goes away never makes a traceback (`semcat mcp` and its SQL
worker when the client closes its end of the pipe), and every CLI error is one `Error: ...` line, a
CatalogError raised anywhere in a command included."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

import catalog_core as cc
from tests.helpers import build_lake
from tests.mcp_server.test_mcp_transports import env, semcat


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> str:
    d = str(tmp_path_factory.mktemp("clean-exits") / "data")
    cat = cc.Catalog.open(d)
    build_lake(cat)
    cat.close()
    return d


def _line(msg: dict) -> bytes:
    return (json.dumps(msg) + "\n").encode()


def test_mcp_client_that_goes_away_leaves_no_traceback(wh):
    p = subprocess.Popen(semcat("mcp", "--data", wh), env=env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    assert p.stdin is not None and p.stdout is not None and p.stderr is not None
    p.stdin.write(_line({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "gone", "version": "1"}}}))
    p.stdin.flush()
    assert b'"id":1' in p.stdout.readline()
    p.stdout.close()  # the client dies: its read end is gone
    p.stdin.write(_line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    for i in range(2, 6):
        p.stdin.write(_line({"jsonrpc": "2.0", "id": i, "method": "tools/list"}))
    p.stdin.write(_line({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                         "params": {"name": "run_sql", "arguments": {"sql": "SELECT 1"}}}))
    p.stdin.flush()
    time.sleep(3)  # the answers meet the broken pipe (and the SQL worker its gone parent)
    p.stdin.close()
    p.wait(60)
    err = p.stderr.read().decode()
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_a_locked_catalog_is_one_error_line_for_every_command(wh):
    """A CatalogError in any command is one line: here a write while another process holds the writer's turn
    and does not let go (its flock on semcat.lock, as a writer stuck in a long commit), with a short wait.
    Reads beside it work (many processes, one catalog)."""
    import fcntl
    import os

    fd = os.open(os.path.join(wh, "catalog", "semcat.lock"), os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        e = {**env(), "SEMCAT_WRITER_WAIT_S": "1"}
        for args, code in ((["review", "list"], 0), (["branch", "list"], 0),
                           (["branch", "create", "/wh/sales", "/wh/sales__x"], 1)):
            p = subprocess.run(semcat(*args, "--data", wh), env=e, capture_output=True, text=True, timeout=120,
                               stdin=subprocess.DEVNULL)
            assert p.returncode == code and "Traceback" not in p.stderr, (args, p.stderr)
            if code:
                lines = p.stderr.strip().splitlines()
                assert len(lines) == 1 and lines[0].startswith("Error: ") and "is being written by another " \
                    "process" in lines[0], (args, p.stderr)
    finally:
        os.close(fd)
