"""The metrics of HARNESS.md on hand-made records (the shape of the runner's results.jsonl lines)."""

from __future__ import annotations

import math

import pytest

from eval.harness.metrics import (
    condition_metrics,
    group_metrics,
    mcnemar,
    mcnemar_p,
    percentile,
    recoveries,
    recovery,
    stale_split,
    summarize,
)


def rec(qid, cond, outcome="correct", *, tags=("control",), read=(), gold=(), sql="SELECT 1", dep=(), calls=2,
        tool_tokens=100, prompt=0, completion=0, stale=False):
    return {"id": qid, "condition": cond, "outcome": outcome, "correct": outcome == "correct", "reason": "",
            "sql": sql, "tables_read": list(read), "gold_tables": list(gold), "deprecated_used": list(dep),
            "tool_calls": calls, "tool_tokens": tool_tokens, "prompt_tokens": prompt, "completion_tokens": completion,
            "seconds": 0.1, "tags": list(tags), "touches_stale": stale, "touches_detectable_stale": stale}


def test_mcnemar_exact_on_known_tables():
    assert mcnemar_p(0, 0) == 1.0
    assert mcnemar_p(3, 3) == 1.0
    # b=0, c=5: 2 * (1/2)^5
    assert mcnemar_p(0, 5) == pytest.approx(2 / 32)
    # b=1, c=9: 2 * (1 + 10) / 1024 (the textbook example: p = 0.0215)
    assert mcnemar_p(1, 9) == pytest.approx(22 / 1024)
    assert round(mcnemar_p(1, 9), 4) == 0.0215
    # b=2, c=8: 2 * (1 + 10 + 45) / 1024 = 0.109375
    assert mcnemar_p(8, 2) == pytest.approx(0.109375)
    # symmetric, capped at 1
    assert mcnemar_p(4, 5) == mcnemar_p(5, 4) == 1.0
    with pytest.raises(ValueError):
        mcnemar_p(-1, 2)


def test_mcnemar_pairs_records_by_id():
    rs = []
    for i in range(10):
        rs.append(rec(f"q{i}", "bare", "correct" if i == 0 else "silent-wrong"))
        rs.append(rec(f"q{i}", "enriched", "correct" if i < 9 else "abstain"))
    [m] = mcnemar(rs)
    assert (m["a"], m["b"], m["n"], m["only_a"], m["only_b"]) == ("bare", "enriched", 10, 0, 8)
    assert m["p"] == pytest.approx(2 / 256)


def test_recovery():
    v, why = recovery({"enriched": 0.8, "stale": 0.5, "stale+detect": 0.74})
    assert v == pytest.approx(0.8) and "0.800" in why
    v, why = recovery({"enriched": 0.6, "stale": 0.6, "stale+detect": 0.7})
    assert v is None and "same accuracy" in why
    v, why = recovery({"enriched": 0.6, "stale": 0.5})
    assert v is None and "stale+detect" in why


def test_recoveries_on_records_touching_stale():
    rs = []
    # 4 stale-touching questions: enriched 4/4, stale 0/4, stale+detect 3/4; 2 others correct everywhere
    for i in range(4):
        rs.append(rec(f"s{i}", "enriched", stale=True))
        rs.append(rec(f"s{i}", "stale", "silent-wrong", stale=True))
        rs.append(rec(f"s{i}", "stale+detect", "correct" if i < 3 else "silent-wrong", stale=True))
    for i in range(2):
        for c in ("enriched", "stale", "stale+detect"):
            rs.append(rec(f"o{i}", c))
    r = recoveries(rs)
    assert r["touches_stale"]["recovery"] == pytest.approx(0.75)
    assert r["all"]["recovery"] == pytest.approx((5 / 6 - 2 / 6) / (1 - 2 / 6))
    split = stale_split(rs)
    assert split["stale"]["stale"] == {"n": 4, "accuracy": 0.0}
    assert split["stale"]["not_stale"] == {"n": 2, "accuracy": 1.0}


def test_rates_tokens_and_tool_calls():
    rs = [rec("a", "x", calls=1, tool_tokens=100, prompt=50, completion=10),
          rec("b", "x", "silent-wrong", calls=3, tool_tokens=200),
          rec("c", "x", "loud-error", calls=5, tool_tokens=300),
          rec("d", "x", "abstain", sql=None, calls=11, tool_tokens=400)]
    m = group_metrics(rs)
    assert m["accuracy"] == 0.25 and m["silent_wrong"] == 0.25 and m["loud_error"] == 0.25 and m["abstain"] == 0.25
    assert m["tool_calls_mean"] == 5.0
    assert m["tool_calls_p90"] == pytest.approx(percentile([1, 3, 5, 11], 90)) == pytest.approx(9.2)
    assert m["tokens_mean"] == pytest.approx((160 + 200 + 300 + 400) / 4)
    assert m["tokens_per_correct"] == pytest.approx(1060)
    assert group_metrics([rec("a", "x", "abstain")])["tokens_per_correct"] is None


def test_table_precision_recall_and_deprecated_use():
    g = ("acme.core.fct_orders", "acme.core.dim_store")
    rs = [rec("a", "x", read=g, gold=g),                                          # P 1, R 1
          rec("b", "x", read=("acme.core.fct_orders", "acme.legacy.sales_daily"), gold=g,
              dep=("acme.legacy.sales_daily",)),                                  # P 1/2, R 1/2
          rec("c", "x", read=(), gold=g),                                         # P 0, R 0
          rec("d", "x", "abstain", sql=None, gold=g),                             # no SQL: not counted
          rec("e", "x", read=("acme.core.fct_orders",), gold=())]                 # no gold tables: not counted
    m = group_metrics(rs)
    assert m["table_pr_n"] == 3
    assert m["table_precision"] == pytest.approx(0.5)
    assert m["table_recall"] == pytest.approx(0.5)
    assert m["deprecated_use"] == pytest.approx(1 / 5)


def test_per_tag_and_summary():
    rs = [rec("a", "bare", tags=("join", "metric")), rec("b", "bare", "silent-wrong", tags=("join",)),
          rec("a", "enriched", tags=("join", "metric")), rec("b", "enriched", tags=("join",))]
    cm = condition_metrics(rs)
    assert list(cm) == ["bare", "enriched"]
    assert cm["bare"]["tags"]["join"]["accuracy"] == 0.5 and cm["bare"]["tags"]["metric"]["accuracy"] == 1.0
    assert cm["enriched"]["tags"]["join"]["accuracy"] == 1.0
    s = summarize(rs)
    assert s["mcnemar"][0]["only_b"] == 1 and s["recovery"]["all"]["recovery"] is None
    assert math.isclose(s["conditions"]["bare"]["overall"]["accuracy"], 0.5)


def test_several_lakes_count_only_if_correct_at_all():
    from eval.harness.questions import Question
    from eval.harness.runner import _Lake, combine_records

    q = [Question(id=i, question="?", gold_sql="SELECT 1", tables=("acme.core.dim_store",)) for i in ("a", "b")]
    from eval.harness.touches import StaleTouch

    # a lake without catalogs reads no rules from its manifest: give L1 one undetectable table-wide rule
    rule = StaleTouch("acme.core.dim_store:table.grain", "acme.core.dim_store", detectable=False)
    lakes = [_Lake("L1", {}, False, {"stale": [{"table": "acme.core.dim_store", "key": "table.grain",
                                               "detectable": False}]}, {}, stale_rules=[rule]),
             _Lake("L2", {}, False, None, {})]

    def r(qid, lake, outcome):
        return {"id": qid, "condition": "enriched", "lake": lake, "vid": 1, "outcome": outcome,
                "correct": outcome == "correct", "reason": outcome, "sql": "SELECT 1"}

    per_lake = [{"enriched": [r("a", "L1", "correct"), r("b", "L1", "correct")]},
                {"enriched": [r("a", "L2", "correct"), r("b", "L2", "silent-wrong")]}]
    a, b = combine_records([q, q], ["enriched"], lakes, per_lake)
    assert a["correct"] and a["outcome"] == "correct" and len(a["lakes"]) == 2
    assert not b["correct"] and b["outcome"] == "silent-wrong" and "(at L2)" in b["reason"]
    assert a["touches_stale"] and not a["touches_detectable_stale"]
