"""`semcat demo` (the agent tour) as a real subprocess, on the session's Acme lake (`--lake`): every
section, the MCP session's pinned vid echoed by run_sql, the look-alike's warnings and the staleness
report's reason codes (checked against semantic.staleness on the same catalog)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections import Counter

import pytest

import catalog_core as cc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def lake_copy(lake_dir, tmp_path_factory):
    """The session lake, copied whole: tests/eval may hold the originals open (RocksDB allows one process
    per catalog), and a lake root's catalogs name the Parquet files beside them relative to the lake
    (../../warehouse/...), so a copy of the catalogs alone reads no data."""
    out = tmp_path_factory.mktemp("tour") / "lake"
    shutil.copytree(lake_dir, out, symlinks=True)
    return str(out)


@pytest.fixture(scope="module")
def tour(lake_copy, tmp_path_factory):
    """The tour's standard output. SEMCAT_DEMO_TOUR=FILE reads it from FILE instead of running it again:
    what `make demo` printed on the lake that SEMCAT_EVAL_LAKE names (.ci/run does both), so the checks
    below are made on the README's own command."""
    saved = os.environ.get("SEMCAT_DEMO_TOUR")
    if saved:
        if not os.environ.get("SEMCAT_EVAL_LAKE"):
            pytest.fail("SEMCAT_DEMO_TOUR needs SEMCAT_EVAL_LAKE: the lake that tour ran on")
        with open(saved, encoding="utf-8") as fh:
            return fh.read()
    data = str(tmp_path_factory.mktemp("tour") / "demo-data")
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), "COLUMNS": "120"}
    proc = subprocess.run([sys.executable, "-m", "mcp_server.cli", "demo", "--data", data, "--lake", lake_copy],
                          env=env, capture_output=True, text=True, timeout=2400)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def _section(text: str, title: str) -> str:
    start = text.index(f"== {title}")
    nxt = text.find("\n== ", start + 1)
    return text[start: nxt if nxt >= 0 else len(text)]


def test_every_section_is_shown_in_order(tour):
    from eval.tour import SECTIONS

    at = [tour.index(f"== {s}") for s in SECTIONS]
    assert at == sorted(at)
    assert re.search(r"using the lake at|reusing the lake in|initial load committed", _section(tour, SECTIONS[0]))
    assert "semcat mcp --data" in _section(tour, SECTIONS[4]) and '"mcpServers"' in _section(tour, SECTIONS[4])


def test_the_mcp_session_pins_and_every_answer_echoes_the_pin(tour, lake_copy):
    from eval.tour import SECTIONS

    text = _section(tour, SECTIONS[1])
    for tool in ("pin_snapshot", "search_tables", "describe_table", "find_join_path", "run_sql"):
        assert f"> {tool}(" in text
    vid = int(re.search(r"pinned vid (\d+) .* as (pin:\d+)", text).group(1))
    with cc.Catalog.open(os.path.join(lake_copy, "stale")) as cat:
        assert vid == cat.latest_vid
    assert f'snapshot="pin:{vid}"' in text
    assert re.search(rf"read acme\.core\.fct_order_items.* at vid {vid} ", text)  # run_sql echoes the pin
    assert "acme.core.fct_order_items -> acme.core.fct_orders on order_id = order_id" in text
    assert "acme.core.fct_orders -> acme.core.dim_store on store_id = store_id" in text


def test_the_search_table_never_breaks_a_table_name(tour):
    from eval.tour import SECTIONS

    text = _section(tour, SECTIONS[1])
    rows = text[text.index("> search_tables("): text.index("> describe_table(")].splitlines()
    starts = [ln.split()[0] for ln in rows[3:] if ln and not ln.startswith(" ")]  # each row's first column
    assert starts and all(re.fullmatch(r"acme\.\w+\.\w+", s) for s in starts), starts


def test_the_lookalike_is_described_with_its_warnings(tour):
    from eval.tour import SECTIONS

    text = _section(tour, SECTIONS[1])
    described = text[text.index("> describe_table("): text.index("> find_join_path(")]
    assert 'table="acme.legacy.sales_daily"' in described  # the deprecated look-alike of the search
    assert "! [finding/not_loaded_since] not loaded since 2025-01-09" in described
    assert "successor" in described
    assert "! [freshness/freshness_sla_missed]" in described


def test_the_staleness_report_counts_every_reason(tour, lake_copy):
    import semantic as sm
    from eval.lake import D0
    from eval.tour import SECTIONS

    text = _section(tour, SECTIONS[2])
    with cc.Catalog.open(os.path.join(lake_copy, "stale")) as cat:
        want = Counter(f.reason for f in sm.staleness(cat, snapshot="d0", now=D0.timestamp()))
    # one finding per underlying change: the mart's renamed-and-rescaled columns are column_renamed (with
    # the scale in its fix), not a separate unit_drift
    assert {"not_loaded_since", "column_renamed", "schema_changed", "values_restated"} <= set(want)
    for reason, n in want.items():
        assert re.search(rf"^{reason}\s+{n}\s", text, re.M), (reason, n)
    flat = " ".join(text.split())  # rich wraps at 120 columns: where depends on the lake's path
    assert f": {sum(want.values())} findings (" in flat
    assert "suggestion: " in text


def test_the_eval_step_runs_the_rule_chosen_subset_and_prints_its_table(tour, lake_copy):
    """The subset is the stale-events rule's (computed here on the same catalog), printed in one copyable
    command; the runner's table covers exactly those questions; each question's row is shown."""
    import json

    from eval.harness.questions import load_questions
    from eval.harness.touches import stale_event_subset, stale_touches
    from eval.tour import SECTIONS, SUBSET_K

    text = _section(tour, SECTIONS[3])
    [cmd] = [ln for ln in text.splitlines() if ln.startswith("$ semcat eval run --data ")]
    assert f"--subset stale-events:{SUBSET_K}" in cmd and "--agent offline" in cmd and "--limit" not in cmd
    assert "failed (exit" not in text
    man = json.load(open(os.path.join(lake_copy, "stale_manifest.json")))
    qs = load_questions(os.path.join(ROOT, "eval", "questions", "public.yaml"))
    with cc.Catalog.open(os.path.join(lake_copy, "stale")) as cat:
        want = [q.id for q in stale_event_subset(qs, man, stale_touches(man, cat), SUBSET_K)]
    flat = " ".join(text.split())  # rich wraps long lines
    assert f"subset stale-events:{SUBSET_K}: {len(want)} questions ({', '.join(want)})" in flat
    for cond in ("bare", "enriched", "stale", "stale+detect"):
        assert re.search(rf"^\| {re.escape(cond)} \| {len(want)} \| \d+ \| [\d.]+% \|", text, re.M), cond
    assert re.search(r"^recovery: ", text, re.M) and "report.md" in text
    rows = {ln.split()[0]: ln.split()[1:5] for ln in text.splitlines() if re.match(r"^q\d{3} ", ln)}
    assert sorted(rows) == want  # one row per question: its outcome in each of the four conditions
    assert all(set(r) <= {"correct", "silent-wrong", "loud-error", "abstain", "gold-error"} for r in rows.values())


def test_the_review_step_accepts_a_suggestion_and_the_warning_is_gone(tour, lake_copy):
    from eval.tour import REVIEW_TABLE, SECTIONS

    text = _section(tour, SECTIONS[2])
    assert "cardinality_violated on relationship.customer" in text
    [cmd] = [ln for ln in text.splitlines() if ln.startswith("$ semcat review accept f-")]  # one copyable line
    assert " --data " in cmd and " --author data-steward" in cmd and " --now " in cmd
    after = " ".join(text[text.index("> describe_table("):].split())  # rich wraps long lines
    assert f'table="{REVIEW_TABLE}"' in after and "status fresh" in after and "warnings: 0" in after
    assert "condition acme.core.dim_customer.is_current (fresh)" in after
    with cc.Catalog.open(os.path.join(lake_copy, "stale")) as cat:  # the lake itself is left as built
        import semantic as sm

        assert [f.reason for f in sm.staleness(cat, REVIEW_TABLE, now="2025-03-10T13:00:00Z")] == ["cardinality_violated"]


def test_an_eval_step_past_its_time_is_reported_and_the_tour_goes_on(tmp_path, monkeypatch):
    """The quick subset's runner (a real `semcat eval run` subprocess) stopped at the tour's time limit:
    the tour says so and how to see the table, instead of ending in a TimeoutExpired traceback."""
    import io

    from rich.console import Console

    from eval import tour

    monkeypatch.setattr(tour, "EVAL_TIMEOUT_S", 0.05)
    buf = io.StringIO()
    out = tour._Out(Console(file=buf, width=120))
    assert tour._eval(out, str(tmp_path / "lake"), str(tmp_path)) == "failed"
    text = buf.getvalue()
    assert "did not finish within 0.05 s" in text and "run the command above yourself" in text


def test_a_stopped_eval_step_leaves_no_process_behind(tmp_path):
    """`run_group` (the eval step's runner) kills its whole process group on a timeout: a grandchild
    (as the runner's MCP servers are) does not outlive it holding the lake copy open. Before, only the
    direct child was killed."""
    import time

    from eval import tour

    marker = tmp_path / "grandchild.pid"
    cmd = ["bash", "-c", f"sleep 300 & echo $! > {marker}; wait"]
    with pytest.raises(subprocess.TimeoutExpired):
        tour.run_group(cmd, dict(os.environ), 1.0)
    pid = int(marker.read_text())
    for _ in range(50):  # the kill is delivered at once; reaping by init may take a moment
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        if open(f"/proc/{pid}/stat").read().split()[2] == "Z":
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"the grandchild {pid} is still running")


def test_semcat_demo_exits_non_zero_when_its_eval_step_did_not_finish(lake_copy, tmp_path, monkeypatch, capfd):
    """`make demo` fails when the tour could not show the eval's table, after showing every step (the
    CLI in this process, its MCP server and runner real subprocesses; capfd: they need real descriptors)."""
    import click

    from eval import tour
    from mcp_server.cli import main

    monkeypatch.setattr(tour, "EVAL_TIMEOUT_S", 0.05)
    with pytest.raises(click.ClickException, match="the tour's eval step did not finish"):
        main.main(["demo", "--data", str(tmp_path / "demo"), "--lake", lake_copy], standalone_mode=False)
    text = capfd.readouterr().out
    assert "did not finish within 0.05 s" in text and "== 5. Connect your own agent" in text
