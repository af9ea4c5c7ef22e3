"""`--data` must name a catalog: `semcat mcp`, `semcat serve` and `semcat sql` on a lake root (a
directory holding catalogs such as root/stale) or a missing directory exit at once with an error
naming the catalogs below it, and create nothing; `--create` makes a new empty catalog."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx
import pytest

import catalog_core as cc
from tests.helpers import ROOT, free_port


def semcat(*args: str, timeout: float = 60, **kwargs) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "SEMCAT_TOKENS"}
    env["PYTHONPATH"] = ROOT
    return subprocess.run([sys.executable, "-m", "mcp_server.cli", *args], cwd=ROOT, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout, **kwargs)


def tree(root) -> set[str]:
    return {os.path.relpath(os.path.join(d, n), root) for d, dirs, files in os.walk(root) for n in dirs + files}


@pytest.fixture
def lake_root(tmp_path):
    """root/stale and root/enriched are catalogs (as `semcat eval build` lays them out); root is not."""
    root = tmp_path / "root"
    for name in ("stale", "enriched"):
        with cc.Catalog.open(str(root / name)) as cat, cat.transaction() as txn:
            txn.add("/wh", {"obj_type": "catalog", "properties": {}})
    return root


def commands(data: str) -> list[list[str]]:
    return [["mcp", "--data", data], ["serve", "--data", data, "--port", str(free_port())],
            ["sql", "SELECT 1", "--data", data]]


@pytest.mark.parametrize("which", ["mcp", "serve", "sql"])
def test_a_lake_root_is_refused_naming_the_catalogs_below_it(lake_root, which):
    before = tree(lake_root)
    [args] = [c for c in commands(str(lake_root)) if c[0] == which]
    t0 = time.monotonic()
    p = semcat(*args, timeout=30)
    assert p.returncode != 0, p.stdout + p.stderr
    assert time.monotonic() - t0 < 30
    err = p.stderr
    assert f"no catalog in {str(lake_root)!r}" in err, err
    assert os.path.join(str(lake_root), "stale") in err and os.path.join(str(lake_root), "enriched") in err
    assert ("--create" in err) == (which != "sql")  # only serve and mcp can create one
    assert "Traceback" not in err
    assert tree(lake_root) == before and not (lake_root / "catalog").exists() and not (lake_root / "warehouse").exists()


@pytest.mark.parametrize("which", ["mcp", "serve"])
def test_a_missing_directory_is_refused_and_not_created(tmp_path, which):
    missing = tmp_path / "nope"
    [args] = [c for c in commands(str(missing)) if c[0] == which]
    p = semcat(*args, timeout=30)
    assert p.returncode != 0 and "does not exist" in p.stderr and "--create" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and not missing.exists()


def test_an_empty_catalog_left_in_a_lake_root_is_refused(lake_root):
    """What an earlier `semcat mcp --data root` left behind: an empty catalog over the real ones."""
    cc.Catalog.open(str(lake_root)).close()
    p = semcat("mcp", "--data", str(lake_root), timeout=30)
    assert p.returncode != 0 and "is empty" in p.stderr and os.path.join(str(lake_root), "stale") in p.stderr
    assert "Traceback" not in p.stderr
    ok = semcat("mcp", "--data", str(lake_root), "--create", timeout=60)  # asked for: served (stdin is closed)
    assert ok.returncode == 0, ok.stderr


def test_mcp_create_makes_a_new_catalog(tmp_path):
    new = tmp_path / "new"
    p = semcat("mcp", "--data", str(new), "--create", timeout=60)  # stdin closed: serves, then exits
    assert p.returncode == 0, p.stderr
    with cc.open_catalog(str(new)) as cat:  # an existing catalog now: no --create needed
        assert cat.latest_vid == 0
    again = semcat("mcp", "--data", str(new), timeout=60)
    assert again.returncode == 0, again.stderr


def test_mcp_create_does_not_go_with_url(tmp_path):
    p = semcat("mcp", "--url", "http://127.0.0.1:1", "--create", timeout=30)
    assert p.returncode != 0 and "--create" in p.stderr


def test_serve_create_makes_a_new_catalog_and_serves_it(tmp_path):
    new, port = tmp_path / "new", free_port()
    env = {k: v for k, v in os.environ.items() if k != "SEMCAT_TOKENS"}
    env["PYTHONPATH"] = ROOT
    proc = subprocess.Popen([sys.executable, "-m", "mcp_server.cli", "serve", "--data", str(new), "--create",
                             "--port", str(port)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        with cc.connect(url) as cat:
            assert cat.latest_vid == 0
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    assert cc.catalogs_below(str(tmp_path)) == [str(new)]
