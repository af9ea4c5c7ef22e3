"""The CLI's one error style (docs/cli.md): `Error: ...` on stderr, exit 2 for a wrong command line, exit 1
for a command that ran and failed, never a traceback; hints name a CLI flag or command, never a Python call;
an unknown table answers with the lake's closest table names; `semcat --version`."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import version

import pytest
from click.testing import CliRunner

import catalog_core as cc
from mcp_server.cli import main
from tests.helpers import build_lake

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> str:
    d = str(tmp_path_factory.mktemp("cli-errors") / "data")
    cat = cc.Catalog.open(d)
    build_lake(cat)
    cat.close()
    return d


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def test_version_is_the_installed_distributions():
    out = subprocess.run([sys.executable, "-m", "mcp_server.cli", "--version"], capture_output=True, text=True,
                         timeout=120, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT})
    assert out.returncode == 0 and out.stdout.strip() == f"semcat {version('semcat')}", out


def test_a_snapshot_that_names_nothing_is_a_usage_error_naming_the_flag(wh):
    out = run("sql", "SELECT 1", "--data", wh, "--snapshot", "nope")
    assert out.exit_code == 2, out.output
    assert "Error: Invalid value for '--snapshot': 'nope' is neither a snapshot name nor an ISO-8601 time" in out.output
    assert "give --snapshot a vid (0 to " in out.output and "snapshots()" not in out.output


def test_an_unknown_table_gets_a_did_you_mean_of_table_names(wh):
    out = run("sql", "SELECT * FROM wh.sales.ordrs", "--data", wh)
    assert out.exit_code == 1, out.output
    assert out.output.startswith("Error: no table 'wh.sales.ordrs'; did you mean 'wh.sales.orders'? (list them "
                                 'with: semcat sql "SHOW ALL TABLES" --data DIR)'), out.output
    assert "Catalog Error" not in out.output and "Traceback" not in out.output
    far = run("sql", "SELECT * FROM wh.sales.orders o JOIN wh.zz.qqqq q ON true", "--data", wh)
    assert far.exit_code == 1 and "no table 'wh.zz.qqqq'; the table names are wh.crm.customers, " in far.output


def test_failures_exit_1_and_usage_errors_exit_2_with_one_prefix(wh):
    failed = run("sql", "SELEC 1", "--data", wh)
    assert failed.exit_code == 1 and failed.output.startswith("Error: SQL does not parse"), failed.output
    nodata = run("sql", "SELECT 1", "--data", wh + "-nope")
    assert nodata.exit_code == 2 and "Error: Invalid value for '--data': no catalog" in nodata.output, nodata.output
    usage = run("sql", "SELECT 1", "--data", wh, "--format", "xml")
    assert usage.exit_code == 2 and "Error: Invalid value for '--format'" in usage.output, usage.output
    # a real process: the message is on stderr, nothing on stdout, no traceback
    proc = subprocess.run([sys.executable, "-m", "mcp_server.cli", "sql", "SELECT * FROM wh.sales.ordrs", "--data", wh],
                          capture_output=True, text=True, timeout=120, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT})
    assert proc.returncode == 1 and proc.stdout == "" and proc.stderr.startswith("Error: no table"), proc


def test_the_cli_starts_without_reading_package_metadata():
    """`semcat CMD` does not import importlib.metadata (and the email package it pulls in) to start: the version
    is looked up only for `--version` (issue 47, cold start: ~30 ms of every command and every stdio session)."""
    code = "import sys, mcp_server.cli; print(sorted(m for m in ('importlib.metadata', 'email') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": ROOT})
    assert out.returncode == 0 and out.stdout.strip() == "[]", out
