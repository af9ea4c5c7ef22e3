"""Many processes on one catalog directory (issue 47, item 1), with real subprocesses: two `semcat mcp --data
DIR` stdio servers both serve and see each other's writes within a second; CLI commands (reads and a write)
work beside a running `semcat serve`; a second `semcat serve` on the same DIR serves reads and writes. The
engine side (RocksDB secondary instances, the writer's turn) is docs/engine.md, Many processes."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

import catalog_core as cc
from eval.fixtures.mcplake import DIM, FCT
from tests.mcp_server.test_mcp_transports import data_copy, env, semcat, serve  # noqa: F401 (a fixture)


def _params(data: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "mcp_server.cli", "mcp", "--data", data],
                                 env=env())


async def _seen(c: Any, tag: str, deadline_s: float) -> float:
    """Seconds until `describe_table DIM` on client `c` shows `tag` (fails after `deadline_s`)."""
    t0 = time.monotonic()
    while True:
        out = await c.call_tool("describe_table", {"table": DIM})
        assert not out.is_error, out.content[0].text
        if tag in out.content[0].text:
            return time.monotonic() - t0
        if time.monotonic() - t0 > deadline_s:
            raise AssertionError(f"{tag!r} not seen within {deadline_s} s: {out.content[0].text[:500]}")
        await anyio.sleep(0.05)


def test_two_stdio_servers_serve_and_see_each_others_writes(data_copy):  # noqa: F811
    data = data_copy("two-stdio")

    async def go() -> list[float]:
        waits = []
        async with Client(stdio_client(_params(data))) as a, Client(stdio_client(_params(data))) as b:
            for writer, reader, tag in ((a, b, "tag-from-a"), (b, a, "tag-from-b"), (a, b, "tag-again-a")):
                got = await writer.call_tool("annotate", {"table": DIM, "fields": {"tags": [tag]}})
                assert not got.is_error, got.content[0].text
                waits.append(await _seen(reader, tag, 10))
            d = await b.call_tool("describe_table", {"table": FCT})
            assert not d.is_error
        return waits

    anyio.run(go)  # each write seen by the other server (it catches up every 0.25 s; timings: bench/bench_multiproc.py)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(semcat(*args), env=env(), capture_output=True, text=True, timeout=180,
                          stdin=subprocess.DEVNULL)


def test_cli_commands_work_beside_a_server(data_copy):  # noqa: F811
    data = data_copy("cli-beside")
    with serve(data, None) as url:
        for args in (["review", "list"], ["lineage", FCT], ["branch", "list"],
                     ["sql", f"SELECT count(*) FROM {FCT}"]):
            p = _cli(*args, "--data", data)
            assert p.returncode == 0 and "Traceback" not in p.stderr, (args, p.stderr)
        # a write through the directory while the server holds the writer's turn: the server lets go
        p = _cli("branch", "create", "/acme/core", "/acme/core__mp", "--data", data)
        assert p.returncode == 0, p.stderr
        remote = cc.connect(url)
        deadline = time.monotonic() + 10
        while remote.get("/acme/core__mp") is None:
            assert time.monotonic() < deadline, "the server never saw the CLI's branch"
            time.sleep(0.05)
        # and the server writes again after it (it takes the turn back)
        with remote.transaction(author="t") as txn:
            txn.add("/after_cli", {"obj_type": "catalog"})
        p = _cli("branch", "list", "--data", data)
        assert p.returncode == 0 and "core__mp" in p.stdout, p.stdout


def test_a_second_server_on_the_same_directory_serves_reads_and_writes(data_copy):  # noqa: F811
    data = data_copy("two-serves")
    with serve(data, None) as url1, serve(data, None) as url2:
        servers = [cc.connect(url1), cc.connect(url2)]
        w, r = servers[1], servers[0]  # the second server writes first, then they take turns
        for i in range(3):
            with w.transaction(author="t") as txn:
                txn.add(f"/mp{i}", {"obj_type": "catalog"})
            t0 = time.monotonic()
            while r.get(f"/mp{i}") is None:
                assert time.monotonic() - t0 < 10, f"/mp{i} never seen by the other server"
                time.sleep(0.02)
            w, r = r, w  # and the other way round
        assert servers[0].latest_vid == servers[1].latest_vid
        assert servers[0].get("/" + FCT.replace(".", "/")) is not None


def test_kill_9_of_the_writer_leaves_the_other_server_serving_and_writing(data_copy):  # noqa: F811
    """Replicas for failures (issue 47, item 2): two `semcat serve` on one DIR; the writer is killed with
    SIGKILL mid-service; the other keeps answering reads, then writes (its turn opens the primary, whose WAL
    replay keeps every acknowledged commit), and a restarted server sees everything."""
    import os
    import signal

    from tests.helpers import free_port, stop_process, wait_healthy

    data = data_copy("kill-writer")
    port = free_port()
    writer = subprocess.Popen(semcat("serve", "--data", data, "--port", str(port)), env=env(),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url1 = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(writer, url1)
        with serve(data, None) as url2:
            first, second = cc.connect(url1), cc.connect(url2)
            acked = []
            for i in range(5):  # acknowledged by the first server, the writer
                with first.transaction(author="t") as txn:
                    txn.add(f"/k{i}", {"obj_type": "catalog"})
                acked.append(txn.vid)
            os.kill(writer.pid, signal.SIGKILL)
            writer.wait(30)
            deadline = time.monotonic() + 10
            while second.get("/k4") is None:  # its reads go on (caught up from the dead writer's WAL)
                assert time.monotonic() < deadline, "the replica never saw the writer's acknowledged commits"
                time.sleep(0.05)
            assert second.get("/" + FCT.replace(".", "/")) is not None
            with second.transaction(author="t") as txn:  # and it writes
                txn.add("/after_kill", {"obj_type": "catalog"})
            assert txn.vid == acked[-1] + 1
        with serve(data, None) as url3:  # a restarted server has every acknowledged commit
            third = cc.connect(url3)
            assert all(third.get(f"/k{i}") is not None for i in range(5)) and third.get("/after_kill") is not None
    finally:
        if writer.poll() is None:
            stop_process(writer)
