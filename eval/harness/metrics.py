"""Metrics of HARNESS.md (Scoring) over the runner's records (the lines of results.jsonl).

Per condition, overall and per tag (`group_metrics`):
- accuracy: correct / questions; rates of silent-wrong, loud-error, abstain (and gold-error);
- table selection: per record with predicted SQL and gold `tables`, precision = |read ∩ gold| / |read|
  (0 when the SQL reads no table) and recall = |read ∩ gold| / |gold|, averaged over those records;
- deprecated-table use: share of questions whose predicted SQL read a deprecated table;
- tool calls per question (mean, p90 with linear interpolation);
- tokens per question (tool results + prompt + completion, mean) and per correct answer (total / correct,
  None when nothing is correct).
Across conditions: accuracy on questions that touch a stale annotation vs not (`stale_split`),
`recovery` = (stale+detect - stale) / (enriched - stale) (None, with the reason, when a condition is
missing or the denominator is 0), and exact McNemar p-values on paired questions (`mcnemar`; two-sided
exact binomial on the discordant pairs, no scipy).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["group_metrics", "condition_metrics", "stale_split", "recovery", "recoveries", "mcnemar_p", "mcnemar",
           "PAIRS", "percentile", "summarize"]

PAIRS = (("bare", "enriched"), ("enriched", "stale"), ("stale", "stale+detect"), ("enriched", "enriched+detect"))
OUTCOME_KEYS = {"silent-wrong": "silent_wrong", "loud-error": "loud_error", "abstain": "abstain",
                "gold-error": "gold_error"}

Record = dict[str, Any]


def percentile(xs: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0..100), linear interpolation between closest ranks; None when empty."""
    if not xs:
        return None
    s = sorted(xs)
    pos = (len(s) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return float(s[lo] + (s[hi] - s[lo]) * (pos - lo))


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _tokens(r: Record) -> int:
    return int(r.get("tool_tokens", 0)) + int(r.get("prompt_tokens", 0)) + int(r.get("completion_tokens", 0))


def group_metrics(records: Sequence[Record]) -> dict[str, Any]:
    """The metrics of one group of records (one condition, optionally one tag)."""
    n = len(records)
    out: dict[str, Any] = {"n": n}
    if n == 0:
        return out
    correct = sum(1 for r in records if r["correct"])
    out["correct"] = correct
    out["accuracy"] = correct / n
    for outcome, key in OUTCOME_KEYS.items():
        out[key] = sum(1 for r in records if r["outcome"] == outcome) / n
    precisions, recalls = [], []
    for r in records:
        gold = set(r.get("gold_tables") or ())
        if r.get("sql") and gold:
            read = set(r.get("tables_read") or ())
            precisions.append(len(read & gold) / len(read) if read else 0.0)
            recalls.append(len(read & gold) / len(gold))
    out["table_precision"] = _mean(precisions)
    out["table_recall"] = _mean(recalls)
    out["table_pr_n"] = len(precisions)
    out["deprecated_use"] = sum(1 for r in records if r.get("deprecated_used")) / n
    calls = [float(r.get("tool_calls", 0)) for r in records]
    out["tool_calls_mean"] = _mean(calls)
    out["tool_calls_p90"] = percentile(calls, 90)
    toks = [_tokens(r) for r in records]
    out["tokens_mean"] = _mean([float(t) for t in toks])
    out["tool_tokens_mean"] = _mean([float(r.get("tool_tokens", 0)) for r in records])
    out["tokens_per_correct"] = sum(toks) / correct if correct else None
    out["seconds_mean"] = _mean([float(r.get("seconds", 0.0)) for r in records])
    return out


def _by_condition(records: Iterable[Record]) -> dict[str, list[Record]]:
    out: dict[str, list[Record]] = {}
    for r in records:
        out.setdefault(r["condition"], []).append(r)
    return out


def condition_metrics(records: Sequence[Record]) -> dict[str, dict[str, Any]]:
    """{condition: {"overall": metrics, "tags": {tag: metrics}}}, conditions in first-seen order."""
    out: dict[str, dict[str, Any]] = {}
    for cond, rs in _by_condition(records).items():
        tags = sorted({t for r in rs for t in r.get("tags", ())})
        out[cond] = {"overall": group_metrics(rs),
                     "tags": {t: group_metrics([r for r in rs if t in r.get("tags", ())]) for t in tags}}
    return out


def stale_split(records: Sequence[Record], key: str = "touches_stale") -> dict[str, dict[str, Any]]:
    """{condition: {"stale": {n, accuracy}, "not_stale": {n, accuracy}}} on questions that touch a stale
    annotation (`key`) vs those that do not."""
    out: dict[str, dict[str, Any]] = {}
    for cond, rs in _by_condition(records).items():
        parts: dict[str, Any] = {}
        for name, sel in (("stale", True), ("not_stale", False)):
            g = [r for r in rs if bool(r.get(key)) is sel]
            parts[name] = {"n": len(g), "accuracy": (sum(r["correct"] for r in g) / len(g)) if g else None}
        out[cond] = parts
    return out


def recovery(acc: dict[str, float | None]) -> tuple[float | None, str]:
    """(stale+detect - stale) / (enriched - stale) on accuracies by condition; (None, why) when undefined."""
    need = ("enriched", "stale", "stale+detect")
    missing = [c for c in need if acc.get(c) is None]
    if missing:
        return None, f"undefined: no accuracy for {', '.join(missing)}"
    e, s, sd = (float(acc[c] or 0.0) for c in need)
    den = e - s
    if abs(den) < 1e-12:
        return None, f"undefined: enriched and stale have the same accuracy ({e:.3f}), nothing to recover"
    val = (sd - s) / den
    note = "" if den > 0 else " (stale is above enriched: the ratio has no recovery meaning)"
    return val, f"({sd:.3f} - {s:.3f}) / ({e:.3f} - {s:.3f}) = {val:.3f}{note}"


def recoveries(records: Sequence[Record]) -> dict[str, dict[str, Any]]:
    """Recovery on all questions, on those touching a stale annotation, and on those touching a
    detectable one."""
    out: dict[str, dict[str, Any]] = {}
    for name, pred in (("all", lambda r: True), ("touches_stale", lambda r: bool(r.get("touches_stale"))),
                       ("touches_detectable_stale", lambda r: bool(r.get("touches_detectable_stale")))):
        acc: dict[str, float | None] = {}
        for cond, rs in _by_condition(records).items():
            g = [r for r in rs if pred(r)]
            acc[cond] = sum(r["correct"] for r in g) / len(g) if g else None
        val, why = recovery(acc)
        out[name] = {"recovery": val, "explain": why}
    return out


def mcnemar_p(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for b and c discordant pairs: 2 * P(X <= min(b, c)) with
    X ~ Binomial(b + c, 1/2), capped at 1; 1.0 when there is no discordant pair."""
    if b < 0 or c < 0:
        raise ValueError("discordant counts must be >= 0")
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def mcnemar(records: Sequence[Record], pairs: Sequence[tuple[str, str]] = PAIRS) -> list[dict[str, Any]]:
    """For each pair of conditions present: questions paired by (id, repeat); b = only the first correct,
    c = only the second correct; the exact p-value."""
    by = _by_condition(records)
    out = []
    for a, b in pairs:
        if a not in by or b not in by:
            continue
        ca = {(r["id"], int(r.get("repeat", 0))): bool(r["correct"]) for r in by[a]}
        cb = {(r["id"], int(r.get("repeat", 0))): bool(r["correct"]) for r in by[b]}
        ids = sorted(set(ca) & set(cb))
        only_a = sum(1 for i in ids if ca[i] and not cb[i])
        only_b = sum(1 for i in ids if cb[i] and not ca[i])
        out.append({"a": a, "b": b, "n": len(ids), "only_a": only_a, "only_b": only_b,
                    "p": mcnemar_p(only_a, only_b)})
    return out


def summarize(records: Sequence[Record]) -> dict[str, Any]:
    """Every metric, JSON-ready (summary.json)."""
    from eval.harness import stats

    cm = condition_metrics(records)
    return {"conditions": cm, "stale_split": stale_split(records),
            "detectable_split": stale_split(records, "touches_detectable_stale"),
            "recovery": recoveries(records), "mcnemar": mcnemar(records),
            "intervals": stats.conditions(records), "comparisons": stats.comparisons(records)}
