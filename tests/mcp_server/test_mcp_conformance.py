"""The official MCP conformance suite (`@modelcontextprotocol/conformance`, every server scenario)
against `semcat serve`'s /mcp, a real subprocess on a loopback port over a copy of the MCP lake.

Every scenario passes except those in conformance_na.yaml, which need the suite's own test tools,
prompts and resources (or server-to-client requests semcat never makes); each of those must fail,
and only for the reason listed. Node 22 runs the suite: the system's when it is 22 or newer, else
the npm package `node@22`, installed with the suite into $SEMCAT_NPM_CACHE/conformance."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import conformance_suite
from tests.mcp_server.test_mcp_transports import serve

NA_FILE = Path(__file__).with_name("conformance_na.yaml")
_RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")


@pytest.fixture(scope="module")
def suite() -> list[str]:
    """The command that runs the suite: [node 22+, the suite's CLI script] (tests.helpers)."""
    return conformance_suite()


def not_applicable() -> dict[str, dict[str, str]]:
    na = yaml.safe_load(NA_FILE.read_text())
    assert isinstance(na, dict) and all(set(v) == {"reason", "fails_with"} for v in na.values()), NA_FILE
    return na


def run_suite(cmd: list[str], url: str, out: Path) -> dict[str, list[dict[str, Any]]]:
    """{scenario: its checks} of one run of every server scenario (`--suite all`) against `url`."""
    # the exit code says whether any scenario failed; which ones may is this test's business
    p = subprocess.run([*cmd, "server", "--url", url, "--suite", "all", "-o", str(out)], capture_output=True,
                       text=True, timeout=900, cwd=out.parent)
    results: dict[str, list[dict[str, Any]]] = {}
    for d in out.iterdir():
        m = _RESULT_DIR.match(d.name)
        if m and (d / "checks.json").exists():
            results[m.group("scenario")] = json.loads((d / "checks.json").read_text())
    assert results, f"the suite wrote no results: {p.stdout[-2000:]} {p.stderr[-2000:]}"
    return results


def scenarios(cmd: list[str]) -> list[str]:
    p = subprocess.run([*cmd, "list", "--server"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    return re.findall(r"^\s+- (\S+)", p.stdout, flags=re.M)


def judge(results: dict[str, list[dict[str, Any]]], known: list[str],
          na: dict[str, dict[str, str]]) -> list[str]:
    """What is wrong: a scenario that did not run, an applicable one that failed, an N/A one that
    passed, failed for another reason, or no longer exists."""
    wrong = [f"{s}: listed in {NA_FILE.name} but the suite has no such scenario" for s in na if s not in known]
    for s in known:
        if s not in results:
            wrong.append(f"{s}: did not run (no results)")
            continue
        failed = [c for c in results[s] if c.get("status") == "FAILURE"]
        said = "; ".join(f"{c.get('id')}: {c.get('errorMessage') or c.get('description')}" for c in failed)
        if s not in na:
            if failed:
                wrong.append(f"{s}: FAILED: {said}")
        elif not failed:
            wrong.append(f"{s}: passes now; remove it from {NA_FILE.name}")
        elif not all(na[s]["fails_with"] in (c.get("errorMessage") or "") for c in failed):
            wrong.append(f"{s}: fails for another reason than {na[s]['fails_with']!r}: {said}")
    return wrong


@pytest.mark.slow
def test_the_conformance_suite_passes_every_scenario_that_applies(suite, lake_dir, tmp_path):
    na = not_applicable()
    data = tmp_path / "data"
    shutil.copytree(lake_dir, data)
    out = tmp_path / "results"
    out.mkdir()
    with serve(str(data), None) as url:
        results = run_suite(suite, url + "/mcp", out)
    known = scenarios(suite)
    assert len(known) >= 30 and "server-initialize" in known and "tools-list" in known, known
    wrong = judge(results, known, na)
    assert not wrong, "\n".join(wrong)
    passed = [s for s in known if s not in na]
    assert {"server-initialize", "ping", "tools-list", "logging-set-level", "prompts-list", "resources-list",
            "dns-rebinding-protection"} <= set(passed)


def test_judge_flags_every_kind_of_drift():
    """The rules of the N/A list, on made-up results (the real run is the slow test above)."""
    ok = [{"id": "a", "status": "SUCCESS"}, {"id": "b", "status": "WARNING"}]
    bad = [{"id": "c", "status": "FAILURE", "errorMessage": "Unknown resource: test://x"}]
    na = {"na-fails": {"reason": "r", "fails_with": "test://x"}, "na-passes": {"reason": "r", "fails_with": "x"},
          "na-other": {"reason": "r", "fails_with": "Method not found"}, "na-gone": {"reason": "r", "fails_with": "x"}}
    results = {"good": ok, "broken": bad, "na-fails": bad, "na-passes": ok, "na-other": bad}
    wrong = judge(results, ["good", "broken", "na-fails", "na-passes", "na-other", "missing"], na)
    assert [w.split(":")[0] for w in wrong] == ["na-gone", "broken", "na-passes", "na-other", "missing"]
    assert judge({"good": ok, "na-fails": bad}, ["good", "na-fails"], {"na-fails": na["na-fails"]}) == []
    assert set(not_applicable()) and all(v["reason"] for v in not_applicable().values())
