"""The report's caveat for a rule-based agent tuned on the public questions (eval/harness/report.py)."""

from __future__ import annotations

import json
import os

from eval.harness.metrics import summarize
from eval.harness.report import caveats, render, write_report
from eval.harness.runner import RESULTS, RUN_INFO


def test_an_offline_report_says_its_rules_were_written_against_the_public_set():
    md = render([], {"agent": "offline", "questions": 3}, summarize([]))
    assert "**Caveat:**" in md and "public set" in md and "rules were written against" in md
    assert md.index("**Caveat:**") < md.index("## Accuracy per condition")


def test_other_agents_get_no_such_caveat():
    assert caveats({"agent": "openai:gpt-4.1"}) == []
    assert "**Caveat:**" not in render([], {"agent": "openai:gpt-4.1", "questions": 3}, summarize([]))


def test_write_report_puts_the_caveat_in_summary_json(tmp_path):
    out = str(tmp_path)
    with open(os.path.join(out, RESULTS), "w", encoding="utf-8"):
        pass
    with open(os.path.join(out, RUN_INFO), "w", encoding="utf-8") as fh:
        json.dump({"agent": "offline", "questions": 0}, fh)
    paths = write_report(out)
    summary = json.load(open(paths["summary"], encoding="utf-8"))
    assert summary["caveats"] and "public set" in summary["caveats"][0]
    assert "**Caveat:**" in open(paths["report"], encoding="utf-8").read()


def _rec(cond: str, qid: str, repeat: int, correct: bool, tokens: int = 400) -> dict:
    return {"condition": cond, "id": qid, "repeat": repeat, "correct": correct,
            "outcome": "correct" if correct else "silent-wrong", "reason": "", "sql": "SELECT 1", "tags": [],
            "gold_tables": [], "tables_read": [], "tool_calls": 4, "tool_tokens": tokens, "seconds": 1.0}


def test_the_report_gives_intervals_and_says_no_difference_instead_of_a_ranking(tmp_path):
    """Two conditions over 6 questions x 3 repeats that differ on one answer: accuracies 100% and 94.4% are not
    ranked (the paired interval contains 0); a third, wrong on every question, is ranked below both."""
    out = str(tmp_path)
    recs = [_rec("enriched", f"q{i}", r, True) for r in range(3) for i in range(6)]
    recs += [_rec("stale", f"q{i}", r, not (i == 0 and r == 1), tokens=500) for r in range(3) for i in range(6)]
    recs += [_rec("bare", f"q{i}", r, False) for r in range(3) for i in range(6)]
    with open(os.path.join(out, RESULTS), "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in recs)
    paths = write_report(out)
    md = open(paths["report"], encoding="utf-8").read()
    summary = json.load(open(paths["summary"], encoding="utf-8"))
    by = {(c["a"], c["b"]): c for c in summary["comparisons"]}
    assert by[("enriched", "stale")]["accuracy_verdict"] == "no difference measurable"
    assert by[("enriched", "stale")]["p"] == 1.0
    assert by[("enriched", "bare")]["accuracy_verdict"] == "enriched better"
    assert by[("stale", "bare")]["accuracy_verdict"] == "stale better"
    assert "enriched vs stale: accuracy no difference measurable" in md
    assert summary["intervals"]["stale"]["repeats"] == 3 and summary["intervals"]["stale"]["n"] == 18
    assert "Fewer than 3 repeats" not in md
    assert "| enriched | 3 | 18 | 100.0% | [82.4%, 100.0%] |" in md  # Wilson 18/18


def test_fewer_than_three_repeats_are_flagged(tmp_path):
    out = str(tmp_path)
    with open(os.path.join(out, RESULTS), "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(_rec("stale", f"q{i}", 0, i % 2 == 0)) + "\n" for i in range(4))
    md = open(write_report(out)["report"], encoding="utf-8").read()
    assert "**Fewer than 3 repeats** for stale" in md
