"""`--sql-cache BYTES` on the commands that serve SQL (`semcat serve`, `semcat mcp`, `semcat eval
serve`): real `semcat` subprocesses. What it sets is seen where it acts: the hard address-space
limit (/proc/<pid>/limits) of the SQL worker that ran a `run_sql`, which grows by the cache's
budget plus its headroom when the cache is on (catalog_core.sql.worker)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters

from catalog_core.sql.sandbox import MEMORY_LIMIT
from catalog_core.sql.worker import HEADROOM, STORE_HEADROOM
from eval.fixtures.mcplake import FCT
from tests.helpers import free_port, stop_process

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = ROOT + os.pathsep + e.get("PYTHONPATH", "")
    e.pop("SEMCAT_TOKENS", None)
    e.pop("SEMCAT_SQL_CACHE_BYTES", None)
    return e


def semcat(*args: str) -> list[str]:
    return [sys.executable, "-m", "mcp_server.cli", *args]


def children(pid: int) -> list[int]:
    out: list[int] = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return out


def worker_caps(pid: int) -> set[int]:
    """The hard RLIMIT_AS of `pid`'s SQL workers that have run a statement (the others have none yet)."""
    caps = set()
    for child in children(pid):
        try:
            with open(f"/proc/{child}/limits") as f:
                line = next(ln for ln in f if ln.startswith("Max address space"))
        except (OSError, StopIteration):
            continue
        hard = line.split()[4]
        if hard != "unlimited":
            caps.add(int(hard))
    return caps


def cap(budget: int) -> int:
    return MEMORY_LIMIT + HEADROOM + (budget + STORE_HEADROOM if budget else 0)


SQL = {"sql": f"SELECT count(*) FROM {FCT}"}


@pytest.mark.parametrize(("flag", "budget"), [("0", 0), ("64M", 64 << 20)])
def test_semcat_serve_sql_cache_sets_the_workers_budget(lake_dir, tmp_path, flag, budget):
    data = str(tmp_path / "data")
    shutil.copytree(lake_dir, data)
    port = free_port()
    proc = subprocess.Popen(semcat("serve", "--data", data, "--port", str(port), "--sql-cache", flag), env=env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)

        async def go():
            async with Client(url + "/mcp") as c:
                return await c.call_tool("run_sql", SQL)
        r = anyio.run(go)
        assert not r.is_error and r.structured_content["rows"] == [[3]]
        assert worker_caps(proc.pid) == {cap(budget)}
    finally:
        stop_process(proc)


def test_semcat_mcp_sql_cache_over_stdio(lake_dir, tmp_path):
    data = str(tmp_path / "data")
    shutil.copytree(lake_dir, data)
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_server.cli", "mcp", "--data", data,
                                                                 "--sql-cache", "96MiB"], env=env())

    def server_pid() -> int:
        [pid] = [int(p) for p in os.listdir("/proc") if p.isdigit() and _cmdline(int(p)).endswith(
            f"mcp_server.cli mcp --data {data} --sql-cache 96MiB")]
        return pid

    async def go():
        async with Client(params) as c:
            r = await c.call_tool("run_sql", SQL)
            return r, worker_caps(server_pid())
    r, caps = anyio.run(go)
    assert not r.is_error and r.structured_content["rows"] == [[3]]
    assert caps == {cap(96 << 20)}


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


@pytest.mark.parametrize("command", [["serve"], ["mcp", "--data", "x"], ["eval", "serve", "--data", "x",
                                                                          "--condition", "bare", "--out", "y"]])
@pytest.mark.parametrize("bad", ["12Q", "-1", "1.5G", "", "2TB0"])
def test_bad_sql_cache_sizes_are_refused_with_what_to_give(command, bad, tmp_path):
    r = subprocess.run(semcat(*command, "--sql-cache", bad), env=env(), capture_output=True, text=True,
                       cwd=tmp_path, timeout=120)
    assert r.returncode == 2, r.stderr
    assert "Invalid value for '--sql-cache'" in r.stderr
    assert f"got {bad!r}" in r.stderr and "512M" in r.stderr and "0 turns the snapshot cache off" in r.stderr


def test_sql_cache_beyond_a_tebibyte_is_refused(tmp_path):
    r = subprocess.run(semcat("serve", "--sql-cache", "2048G"), env=env(), capture_output=True, text=True,
                       cwd=tmp_path, timeout=120)
    assert r.returncode == 2 and "0 to 1 TiB" in r.stderr, r.stderr
