"""eval.harness.stats on known numbers: Wilson intervals, the exact binomial (McNemar), bootstrap intervals
and the verdicts of comparisons between conditions over repeated runs."""

from __future__ import annotations

import pytest

from eval.harness.metrics import mcnemar_p
from eval.harness.stats import NO_DIFFERENCE, binom_two_sided, bootstrap, comparisons, conditions, wilson


def test_wilson_on_known_values():
    lo, hi = wilson(8, 10)
    assert (round(lo, 4), round(hi, 4)) == (0.4902, 0.9433)
    assert wilson(0, 10)[0] == 0.0 and round(wilson(0, 10)[1], 4) == 0.2775
    assert round(wilson(10, 10)[0], 4) == 0.7225 and wilson(10, 10)[1] == 1.0
    lo, hi = wilson(50, 100)
    assert (round(lo, 4), round(hi, 4)) == (0.4038, 0.5962)
    assert wilson(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError, match="0 <= k <= n"):
        wilson(11, 10)


def test_exact_binomial_is_mcnemar_on_fixed_tables():
    assert binom_two_sided(1, 9) == pytest.approx(20 / 512)         # b=1, c=8
    assert binom_two_sided(2, 10) == pytest.approx(112 / 1024)      # b=2, c=8
    assert binom_two_sided(0, 5) == pytest.approx(0.0625)           # b=0, c=5: the smallest table below 0.1
    assert binom_two_sided(0, 6) == pytest.approx(0.03125)
    assert binom_two_sided(5, 10) == 1.0 and binom_two_sided(0, 0) == 1.0
    for b, c in ((0, 0), (3, 7), (12, 30), (100, 140)):
        assert binom_two_sided(b, b + c) == pytest.approx(mcnemar_p(b, c))
    assert 0 < binom_two_sided(600, 1500) < 1e-14  # no underflow to a wrong 0 or overflow


def test_bootstrap_is_seeded_and_covers_the_mean():
    xs = [[float(i), 1.0] for i in range(20)]
    mean = lambda t: t[:, 0] / t[:, 1]  # noqa: E731
    a, b = bootstrap(xs, mean), bootstrap(xs, mean)
    assert a == b and a[0] < 9.5 < a[1] and a[1] - a[0] < 8
    # the mean of 0..19 has standard error 5.77 / sqrt(20) = 1.29: a 95% interval about 2 x 1.96 x 1.29 wide
    assert 4.0 < a[1] - a[0] < 6.5
    assert bootstrap([], mean) is None
    # undefined on most resamples (one nonzero denominator in 20): no interval
    assert bootstrap([[1.0, 1.0]] + [[0.0, 0.0]] * 19, mean) is None


def _recs(cond: str, correct: list[list[bool]], tokens: int = 100, calls: int = 3) -> list[dict]:
    """One record per question x repeat: correct[repeat][question]."""
    return [{"condition": cond, "id": f"q{i}", "repeat": r, "correct": c, "tool_tokens": tokens, "tool_calls": calls}
            for r, row in enumerate(correct) for i, c in enumerate(row)]


def test_a_clear_difference_is_named_and_a_small_one_is_not_ranked():
    n = 30
    recs = (_recs("enriched", [[True] * n] * 3, tokens=100) + _recs("bare", [[i % 2 == 0 for i in range(n)]] * 3,
                                                                   tokens=300))
    (cmp,) = comparisons(recs)
    assert (cmp["a"], cmp["b"], cmp["pairs"], cmp["only_a"], cmp["only_b"]) == ("enriched", "bare", 90, 45, 0)
    assert cmp["p"] == pytest.approx(binom_two_sided(45, 45)) and cmp["p"] < 1e-10
    assert cmp["accuracy_diff"] == pytest.approx(0.5) and cmp["accuracy_diff_ci"][0] > 0
    assert cmp["accuracy_verdict"] == "enriched better"
    # tokens per correct: 100 vs 300 * 90 / 45 = 600: enriched is cheaper
    assert cmp["tokens_per_correct_diff"] == pytest.approx(-500) and cmp["cost_verdict"] == "enriched better"
    # one question of five differs once in three repeats: the interval contains 0, no ranking
    small = _recs("stale", [[True] * 5] * 3) + _recs("stale+detect", [[True] * 5, [True] * 5, [False] + [True] * 4])
    (cmp,) = comparisons(small)
    assert cmp["accuracy_verdict"] == NO_DIFFERENCE and cmp["cost_verdict"] == NO_DIFFERENCE
    assert cmp["p"] == 1.0


def test_conditions_pool_repeats_with_wilson_and_bootstrap_cost():
    recs = _recs("stale", [[True] * 8 + [False] * 2, [True] * 7 + [False] * 3, [True] * 9 + [False]], tokens=50,
                 calls=2)
    m = conditions(recs)["stale"]
    assert (m["repeats"], m["n"], m["correct"]) == (3, 30, 24)
    assert m["accuracy_ci"] == pytest.approx(list(wilson(24, 30)))
    assert m["accuracy_by_repeat"] == pytest.approx([0.8, 0.7, 0.9])
    assert m["tokens_per_correct"] == pytest.approx(50 * 30 / 24) and m["calls_per_correct"] == pytest.approx(2.5)
    lo, hi = m["tokens_per_correct_ci"]
    assert lo <= 50 * 30 / 24 <= hi
