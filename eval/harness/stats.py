"""Intervals and paired tests for reports over repeated runs (issue 49: fresh agents, repeats >= 3).

    wilson(8, 10)                        -> (0.490, 0.943): 95% Wilson score interval of a proportion
    binom_two_sided(1, 9)                -> exact two-sided binomial p at 1/2 (McNemar on 1 vs 8 discordant pairs)
    conditions(records)                  -> per condition: repeats, accuracy with its Wilson interval, tokens and
                                            tool calls per correct answer with bootstrap intervals
    comparisons(records)                 -> per pair of conditions: McNemar on pairs (question, repeat), the
                                            accuracy difference with a paired bootstrap interval, and a verdict

Records are the lines of results.jsonl (eval.harness.runner); `repeat` (default 0) numbers the runs of one
condition. Invariants:
- Accuracy pools every (question, repeat) of a condition; its Wilson interval treats them as independent
  trials (with repeats, the same question answered twice is not independent: the paired bootstrap below,
  which resamples whole questions, is the honest interval for a difference).
- Bootstrap intervals resample question ids with replacement (every repeat of a drawn question comes
  along), `BOOT` times from a fixed seed: the same records give the same intervals.
- A verdict is "no difference measurable" whenever the difference's 95% interval contains 0; otherwise it
  names the better condition. Cost verdicts likewise, on the ratio's interval.
- No scipy: the exact binomial is a sum of math.comb terms (fractions, no underflow). The bootstrap
  resamples per-question sums with numpy: 6 conditions x 120 questions x 3 repeats take about 3 s on the
  2-core machine under a load of 26 (a loop over records took 119 s).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = ["wilson", "binom_two_sided", "bootstrap", "conditions", "comparisons", "NO_DIFFERENCE", "BOOT", "Z95",
           "MIN_REPEATS"]

Z95 = 1.959963984540054  # the standard normal's 97.5th percentile
BOOT = 2000
SEED = 49
MIN_REPEATS = 3
NO_DIFFERENCE = "no difference measurable"

Record = dict[str, Any]


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of k successes in n trials ((0, 1) when n is 0)."""
    if k < 0 or n < 0 or k > n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return 0.0, 1.0
    p = k / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    # at k = 0 and k = n the bound is exactly 0 or 1 (the formula gives it up to rounding)
    return (0.0 if k == 0 else max(0.0, mid - half)), (1.0 if k == n else min(1.0, mid + half))


def binom_two_sided(k: int, n: int) -> float:
    """Exact two-sided binomial p-value of k successes in n trials at p = 1/2: 2 * P(X <= min(k, n - k)),
    capped at 1 (1.0 when n is 0). The exact McNemar test on b = k, c = n - k discordant pairs."""
    if k < 0 or n < 0 or k > n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return 1.0
    m = min(k, n - k)
    tail = Fraction(sum(math.comb(n, i) for i in range(m + 1)), 2 ** n)
    return float(min(Fraction(1), 2 * tail))


def _by_question(records: Sequence[Record]) -> dict[str, list[Record]]:
    out: dict[str, list[Record]] = {}
    for r in records:
        out.setdefault(str(r["id"]), []).append(r)
    return out


def bootstrap(sums: Sequence[Sequence[float]], stat: Callable[[Any], Any], *, reps: int = BOOT,
              seed: int = SEED, level: float = 0.95) -> tuple[float, float] | None:
    """Percentile bootstrap interval of a statistic of cluster sums: `sums` holds one row per cluster (a
    question: its sums over repeats, e.g. correct, tokens); each resample draws as many clusters with
    replacement and adds their rows; `stat` maps the resamples' totals (an array, one row per resample) to
    one value per resample (NaN where undefined). None when there is no cluster or the statistic is
    undefined on more than 5% of the resamples."""
    a = np.asarray(sums, dtype=float)
    if a.size == 0:
        return None
    k = a.shape[0]
    rng = np.random.default_rng(seed)
    vals = []
    for start in range(0, reps, 250):  # bounded memory: 250 x k x columns at a time
        idx = rng.integers(0, k, size=(min(250, reps - start), k))
        with np.errstate(divide="ignore", invalid="ignore"):
            vals.append(np.asarray(stat(a[idx].sum(axis=1)), dtype=float))
    v = np.concatenate(vals)
    v = np.sort(v[~np.isnan(v)])
    if len(v) < 0.95 * reps:
        return None
    lo = v[int(math.floor((1 - level) / 2 * (len(v) - 1)))]
    hi = v[int(math.ceil((1 + level) / 2 * (len(v) - 1)))]
    return float(lo), float(hi)


def _tokens(r: Record) -> int:
    return int(r.get("tool_tokens", 0)) + int(r.get("prompt_tokens", 0)) + int(r.get("completion_tokens", 0))


def _ratio(num: Any, den: Any) -> Any:
    """num / den, NaN where den is 0 (arrays) or None (numbers)."""
    if isinstance(den, np.ndarray):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)
    return num / den if den else None


_COST: dict[str, Callable[[Record], float]] = {
    "tokens_per_correct": lambda r: float(_tokens(r)),
    "calls_per_correct": lambda r: float(r.get("tool_calls", 0)),
}


def _split(records: Sequence[Record]) -> dict[str, list[Record]]:
    out: dict[str, list[Record]] = {}
    for r in records:
        out.setdefault(r["condition"], []).append(r)
    return out


def conditions(records: Sequence[Record]) -> dict[str, dict[str, Any]]:
    """Per condition (first-seen order): repeats, n (question x repeat), correct, accuracy [Wilson], the
    accuracy of each repeat, and each cost per correct answer [bootstrap over questions]."""
    out: dict[str, dict[str, Any]] = {}
    for cond, rs in _split(records).items():
        reps = sorted({int(r.get("repeat", 0)) for r in rs})
        k, n = sum(1 for r in rs if r["correct"]), len(rs)
        m: dict[str, Any] = {"repeats": len(reps), "n": n, "correct": k, "accuracy": k / n if n else None,
                             "accuracy_ci": list(wilson(k, n)),
                             "accuracy_by_repeat": [sum(1 for r in rs if int(r.get("repeat", 0)) == i and r["correct"])
                                                    / max(1, sum(1 for r in rs if int(r.get("repeat", 0)) == i))
                                                    for i in reps]}
        groups = list(_by_question(rs).values())
        for name, field in _COST.items():
            # per question: (correct answers, the cost summed over its repeats)
            sums = [[sum(1 for r in g if r["correct"]), sum(field(r) for r in g)] for g in groups]
            m[name] = _ratio(sum(x[1] for x in sums), sum(x[0] for x in sums))
            ci = bootstrap(sums, lambda t: _ratio(t[:, 1], t[:, 0]))
            m[name + "_ci"] = list(ci) if ci else None
        out[cond] = m
    return out


def _pairs(a: list[Record], b: list[Record]) -> list[tuple[str, bool, bool, Record, Record]]:
    """(question id, a correct, b correct, a's record, b's record) for every (question, repeat) both ran."""
    rb = {(str(r["id"]), int(r.get("repeat", 0))): r for r in b}
    out = []
    for r in a:
        key = (str(r["id"]), int(r.get("repeat", 0)))
        if key in rb:
            out.append((key[0], bool(r["correct"]), bool(rb[key]["correct"]), r, rb[key]))
    return out


def _verdict(a: str, b: str, ci: tuple[float, float] | None, higher_is_better: bool = True) -> str:
    if ci is None or ci[0] <= 0 <= ci[1]:
        return NO_DIFFERENCE
    a_higher = ci[0] > 0
    return f"{a} better" if a_higher == higher_is_better else f"{b} better"


def comparisons(records: Sequence[Record], pairs: Sequence[tuple[str, str]] | None = None) -> list[dict[str, Any]]:
    """For each pair of conditions (default: every pair, in first-seen order): paired (question, repeat)
    count, only-A / only-B correct, the exact McNemar p, the accuracy difference A - B with a paired bootstrap
    interval over questions and its verdict, and the same for tokens per correct answer (A - B; lower is
    better)."""
    by = _split(records)
    conds = list(by)
    todo = pairs if pairs is not None else [(conds[i], conds[j]) for i in range(len(conds))
                                            for j in range(i + 1, len(conds))]
    out = []
    for a, b in todo:
        if a not in by or b not in by:
            continue
        ps = _pairs(by[a], by[b])
        only_a = sum(1 for _, x, y, _, _ in ps if x and not y)
        only_b = sum(1 for _, x, y, _, _ in ps if y and not x)
        # per question: pairs, A correct, B correct, A tokens, B tokens (summed over its repeats)
        clusters: dict[str, list[float]] = {}
        for qid, x, y, ra, rb in ps:
            c = clusters.setdefault(qid, [0.0] * 5)
            c[0] += 1
            c[1] += x
            c[2] += y
            c[3] += _tokens(ra)
            c[4] += _tokens(rb)
        sums = list(clusters.values())
        tot = [sum(c[i] for c in sums) for i in range(5)]

        def diff(t: Any) -> Any:
            return _ratio(t[:, 1] - t[:, 2], t[:, 0])

        def cost(t: Any) -> Any:
            return _ratio(t[:, 3], t[:, 1]) - _ratio(t[:, 4], t[:, 2])

        acc = _ratio(tot[1] - tot[2], tot[0])
        ta, tb = _ratio(tot[3], tot[1]), _ratio(tot[4], tot[2])
        d_ci, c_ci = bootstrap(sums, diff), bootstrap(sums, cost)
        out.append({"a": a, "b": b, "pairs": len(ps), "only_a": only_a, "only_b": only_b,
                    "p": binom_two_sided(only_a, only_a + only_b),
                    "accuracy_diff": acc, "accuracy_diff_ci": list(d_ci) if d_ci else None,
                    "accuracy_verdict": _verdict(a, b, d_ci),
                    "tokens_per_correct_diff": None if ta is None or tb is None else ta - tb,
                    "tokens_per_correct_diff_ci": list(c_ci) if c_ci else None,
                    "cost_verdict": _verdict(a, b, c_ci, higher_is_better=False)})
    return out
