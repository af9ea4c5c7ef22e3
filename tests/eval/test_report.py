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
