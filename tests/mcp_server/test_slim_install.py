"""A slim install (issue 34, item 6): `pip install .` (with its dependencies, from the configured indexes and
the pip cache) into a fresh venv has no PySpark and no matplotlib, and `semcat --help`, `semcat --version`,
`semcat mcp --help`, `semcat serve` with an MCP session over HTTP, and `semcat mcp --data` over stdio work
there; a command that needs an extra says which in one line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from eval.fixtures.mcplake import FCT
from tests.helpers import free_port, stop_process, wait_healthy

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGES = ("catalog_core", "semantic", "mcp_server", "spark_bridge", "eval")


def _clean_env() -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "SEMCAT_TOKENS")}
    return e


@pytest.fixture(scope="module")
def slim(tmp_path_factory) -> str:
    """The bin directory of a fresh venv where this tree is `pip install`ed (not editable, with dependencies)."""
    tmp = tmp_path_factory.mktemp("slim")
    src = tmp / "src"   # a copy: pip builds in the source tree (build/, *.egg-info) and must not touch the repo
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(os.path.join(ROOT, name), src / name)
    for pkg in PACKAGES:
        shutil.copytree(os.path.join(ROOT, pkg), src / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(tmp / "venv")], check=True, timeout=600, env=_clean_env())
    # --no-compile: pip byte-compiles every file of every dependency otherwise (69 s of CPU for this install against
    # 48 s without, warm pip cache, load 4-5); the modules the commands below import are compiled at first import
    p = subprocess.run([str(tmp / "venv" / "bin" / "pip"), "install", "-q", "--no-compile", str(src)],
                       capture_output=True, text=True,
                       timeout=1800, env=_clean_env())
    assert p.returncode == 0, f"pip install . failed: {p.stderr[-3000:]}"
    return str(tmp / "venv" / "bin")


def run(slim: str, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([os.path.join(slim, args[0]), *args[1:]], capture_output=True, text=True, timeout=timeout,
                          env=_clean_env(), cwd="/")


@pytest.mark.slow
def test_no_spark_no_matplotlib_and_the_cli_works(slim):
    for module in ("pyspark", "matplotlib"):
        p = run(slim, "python", "-c", f"import {module}")
        assert p.returncode != 0 and "ModuleNotFoundError" in p.stderr, (module, p.stdout, p.stderr)
    p = run(slim, "semcat", "--help")
    assert p.returncode == 0 and "mcp" in p.stdout and "serve" in p.stdout, p.stderr
    p = run(slim, "semcat", "--version")
    assert p.returncode == 0 and p.stdout.strip() == "semcat 0.1.0", (p.stdout, p.stderr)
    p = run(slim, "semcat", "mcp", "--help")
    assert p.returncode == 0 and "--data" in p.stdout, p.stderr
    p = run(slim, "semcat", "eval", "build", "--data", "/tmp/nowhere-slim-lake")
    assert p.returncode != 0 and "pip install 'semcat[spark]'" in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    p = run(slim, "semcat", "eval", "score", "--data", "x", "--runs", "y", "--out", "/tmp/nowhere-slim-out")
    assert p.returncode != 0 and "pip install 'semcat[eval]'" in p.stderr, p.stderr


@pytest.mark.slow
def test_serve_and_mcp_sessions_without_spark(slim, lake_dir, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(lake_dir, data)
    port = free_port()
    proc = subprocess.Popen([os.path.join(slim, "semcat"), "serve", "--data", str(data), "--port", str(port)],
                            env=_clean_env(), cwd="/", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(proc, url, "the slim install's semcat serve")

        async def session(client: Client) -> tuple[list[str], object, object]:
            async with client as c:
                names = [t.name for t in (await c.list_tools()).tools]
                return (names, await c.call_tool("describe_table", {"table": FCT}),
                        await c.call_tool("run_sql", {"sql": f"SELECT count(*) FROM {FCT}"}))

        http = Client(streamable_http_client(url + "/mcp", http_client=httpx2.AsyncClient(timeout=120)))
        names, desc, sql = anyio.run(session, http)
        assert "run_sql" in names and not desc.is_error and desc.structured_content["table"] == FCT
        assert not sql.is_error and sql.structured_content["rows"][0][0] > 0, sql.content[0].text
    finally:
        stop_process(proc)
    stdio = Client(StdioServerParameters(command=os.path.join(slim, "semcat"), args=["mcp", "--data", str(data)],
                                         env=_clean_env(), cwd="/"))
    names, desc, sql = anyio.run(session, stdio)
    assert "annotate" in names and not desc.is_error and not sql.is_error
