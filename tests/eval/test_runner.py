"""The runner end to end on the small Acme lake (session fixtures `lake_dir`, `cats`): a handful of
questions written here, a small deterministic scripted agent defined here (it calls search_tables
then answers with a fixed SQL, abstains or raises, by a marker in the question text), the real MCP
client, the comparator, the JSON lines, the report and the chart; and `semcat eval run` as a
subprocess.

SEMCAT_EVAL_LAKE=DIR reuses a lake already built with `semcat eval build --data DIR --scale small`."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from eval.agents.loop import Abstain, FinalSQL, ToolCall, Transcript
from eval.harness.questions import Question, load_questions

pytestmark = pytest.mark.slow
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

STORES = "SELECT region, count(*) AS n FROM acme.core.dim_store GROUP BY region"
# (marker in the question) -> what the scripted agent does after one search_tables call
SCRIPT = {
    "[right]": FinalSQL("SELECT count(*) AS stores, region FROM acme.core.dim_store GROUP BY region ORDER BY 2"),
    "[wrong]": FinalSQL("SELECT region, count(*) + 1 FROM acme.core.dim_store GROUP BY region"),
    "[broken]": FinalSQL("SELECT no_such_column FROM acme.core.dim_store"),
    "[abstain]": Abstain("nothing in the catalog answers this"),
    "[deprecated]": FinalSQL("SELECT count(*) FROM acme.legacy.sales_daily"),
}


class Scripted:
    """Calls search_tables with the question, then does what its marker says (or raises on [raise])."""

    name = "scripted"

    def __init__(self) -> None:
        self.steps = 0

    async def next(self, tr: Transcript):
        self.steps += 1
        if not tr.turns:
            return ToolCall("search_tables", {"query": tr.question.split("[")[0]})
        if "[raise]" in tr.question:
            raise RuntimeError("scripted failure")
        for marker, step in SCRIPT.items():
            if marker in tr.question:
                return step
        return Abstain("no marker")

    def usage(self):
        return (0, 0)


def Q(qid, text, gold=STORES, tags=("control",), tables=("acme.core.dim_store",), **kw):
    return Question(id=qid, question=text, gold_sql=gold, tags=tags, tables=tables, **kw)


QUESTIONS = [
    Q("r1", "How many stores are there per region? [right]"),
    Q("r2", "How many stores per region? [wrong]", tags=("control", "enum")),
    Q("r3", "Stores per region? [broken]"),
    Q("r4", "Stores by region please [raise]"),
    Q("r5", "Stores per region, again [abstain]"),
    Q("u1", "What was the CEO's favourite colour? [abstain]", gold=None, tags=("unanswerable",), tables=()),
    Q("u2", "What is the weather on Mars? [right]", gold=None, tags=("unanswerable",), tables=()),
    Q("d1", "How many legacy daily rows? [deprecated]", gold="SELECT count(*) FROM acme.legacy.sales_daily",
      tags=("deprecated",), tables=("acme.legacy.sales_daily",)),
]


def test_run_eval_end_to_end(cats, lake_dir, tmp_path):
    from eval.harness import report
    from eval.harness.runner import run_eval

    out = str(tmp_path / "out")
    conds = ["bare", "enriched", "stale", "stale+detect"]
    summary = run_eval(lake_dir, QUESTIONS, conds, Scripted, out, progress=False,
                       catalogs=[cats], command="test_runner", detector_depths=("metadata",))
    assert summary.records == len(QUESTIONS) * len(conds)
    lines = [json.loads(x) for x in open(os.path.join(out, "results.jsonl"))]
    assert len(lines) == summary.records
    by = {(r["id"], r["condition"]): r for r in lines}
    for c in conds:
        assert by["r1", c]["outcome"] == "correct" and by["r1", c]["correct"] is True
        assert by["r2", c]["outcome"] == "silent-wrong"
        assert by["r3", c]["outcome"] == "loud-error" and "predicted SQL failed" in by["r3", c]["reason"]
        assert by["r4", c]["outcome"] == "loud-error" and "scripted failure" in by["r4", c]["reason"]
        assert by["r5", c]["outcome"] == "abstain" and by["r5", c]["abstain_reason"]
        assert by["u1", c]["outcome"] == "correct"
        assert by["u2", c]["outcome"] == "silent-wrong"
        assert by["d1", c]["outcome"] == "correct"
        assert by["d1", c]["deprecated_used"] == ["acme.legacy.sales_daily"]
        assert by["r1", c]["tables_read"] == ["acme.core.dim_store"] and by["r1", c]["deprecated_used"] == []
        assert by["r1", c]["tool_calls"] == 1 and by["r1", c]["tools"] == ["search_tables"]
        assert by["r1", c]["tool_tokens"] > 0
    # touches_stale: the rules of eval/harness/touches.py over the lake's manifest (tested in test_touches.py)
    from eval.harness.touches import stale_touches, touches

    rules = stale_touches(json.load(open(os.path.join(lake_dir, "stale_manifest.json"))), cats["stale"])
    for q in QUESTIONS:
        assert by[q.id, "stale"]["touches_stale"] == bool(touches(q, rules)), q.id
    assert by["d1", "stale"]["touches_stale"] == any(r.table == "acme.legacy.sales_daily" and r.columns is None
                                                     for r in rules)
    # bare hides annotations: the same pinned history as enriched
    assert summary.snapshots["bare"] == summary.snapshots["enriched"]
    assert summary.accuracy["enriched"] == 3 / len(QUESTIONS)
    run = json.load(open(os.path.join(out, "run.json")))
    assert run["agent"] == "scripted" and run["detector"][0]["metadata"]["detectable"] > 0

    paths = report.write_report(out)
    md = open(paths["report"]).read()
    for section in ("## Accuracy per condition", "## Accuracy per tag", "## Outcomes", "## Table selection",
                    "## Tokens and tool calls", "## Stale vs not", "## Recovery", "## McNemar",
                    "## Staleness detector", "## Misses"):
        assert section in md, section
    assert "test_runner" in md and "r2" in md
    assert open(paths["chart"], "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    summ = json.load(open(paths["summary"]))
    assert summ["conditions"]["enriched"]["overall"]["accuracy"] == pytest.approx(3 / len(QUESTIONS))


def test_run_eval_rejects_bad_input(cats, lake_dir, tmp_path):
    from eval.harness.runner import run_eval

    with pytest.raises(ValueError, match="unknown condition.*'stael'.*choose from"):
        run_eval(lake_dir, QUESTIONS, ["stael"], Scripted, str(tmp_path), catalogs=[cats])
    with pytest.raises(FileNotFoundError, match="semcat eval build"):
        run_eval(str(tmp_path / "nope"), QUESTIONS, ["bare"], Scripted, str(tmp_path))
    with pytest.raises(ValueError, match="stale-events:1 rule chose no question"):  # none reads a stale event
        run_eval(lake_dir, QUESTIONS, ["bare"], Scripted, str(tmp_path), catalogs=[cats], subset=1,
                 detector_depths=())


def test_run_eval_subset_runs_the_rules_questions_and_records_them(cats, lake_dir, tmp_path):
    from eval.harness.runner import run_eval
    from eval.harness.touches import stale_event_picks, stale_event_subset, stale_touches

    qs = load_questions(os.path.join(ROOT, "eval", "questions", "public.yaml"))
    man = json.load(open(os.path.join(lake_dir, "stale_manifest.json")))
    rules = stale_touches(man, cats["stale"])
    want = [q.id for q in stale_event_subset(qs, man, rules, 1)]
    run_eval(lake_dir, qs, ["bare"], Scripted, str(tmp_path), catalogs=[cats], subset=1, limit=len(want) - 1,
             detector_depths=(), progress=False)
    info = json.load(open(tmp_path / "run.json"))
    assert info["subset"]["rule"] == "stale-events" and info["subset"]["k"] == 1
    assert info["subset"]["questions"] == want[:-1]  # --limit takes the first N of the subset
    picks = stale_event_picks(qs, man, rules, 1)
    assert [(e["table"], e["kind"], e["change"]) for e in info["subset"]["events"]] == list(picks)
    assert [r["id"] for r in map(json.loads, open(tmp_path / "results.jsonl"))] == want[:-1]


def test_cli_eval_run(lake_dir, tmp_path):
    """`semcat eval run` in a subprocess, on a copy of the lake's catalogs (the session holds the lake
    open), two questions, the scripted agent of this file given as `--agent module:factory`."""
    import shutil

    lake = tmp_path / "lake"
    lake.mkdir()
    for sub in ("enriched", "stale"):
        shutil.copytree(os.path.join(lake_dir, sub), lake / sub)
    for f in ("stale_manifest.json", "lake.json"):
        shutil.copy(os.path.join(lake_dir, f), lake / f)
    # the data files, read only: a lake root's catalogs name them relative to the lake (../../warehouse/...)
    os.symlink(os.path.join(os.path.abspath(lake_dir), "warehouse"), lake / "warehouse")
    qfile = tmp_path / "q.yaml"
    qfile.write_text(
        "- id: c1\n  question: How many stores are there in each region? [right]\n"
        f"  gold_sql: \"{STORES}\"\n  tables: [acme.core.dim_store]\n  tags: [control]\n"
        "- id: c2\n  question: What is the weather on Mars?\n  tags: [unanswerable]\n")
    assert len(load_questions(qfile)) == 2
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    base = [sys.executable, "-m", "mcp_server.cli", "eval", "run", "--data", str(lake), "--questions", str(qfile),
            "--out", str(out)]
    agent = ["--agent", "tests.eval.test_runner:Scripted"]  # a module:factory agent (the offline one is tested apart)
    bad = subprocess.run(base + ["--conditions", "bare,stael", *agent], env=env,
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "unknown condition" in bad.stderr and "stael" in bad.stderr
    bad = subprocess.run(base + ["--subset", "first:12", *agent], env=env, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "--subset" in bad.stderr and "use stale-events or stale-events:K" in bad.stderr
    proc = subprocess.run(base + ["--conditions", "bare,stale+detect", *agent, "--no-detector"],
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [json.loads(x) for x in open(out / "results.jsonl")]
    assert {(r["id"], r["condition"]) for r in lines} == {(q, c) for q in ("c1", "c2") for c in ("bare", "stale+detect")}
    assert all(r["outcome"] == "correct" for r in lines), lines
    assert "| condition |" in proc.stdout and "bare" in proc.stdout
    md = (out / "report.md").read_text()
    assert "eval run" in md and (out / "chart.png").read_bytes()[:4] == b"\x89PNG"
