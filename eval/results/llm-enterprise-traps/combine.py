"""Pool the three repeats of the enterprise-traps run: repeat 1 (scored-{A,B,C}, scored at its own lake copy)
and repeats 2-3 (scored-r23-{A,B,C}), into one table with eval.harness.stats (Wilson intervals, exact McNemar
on (question, repeat) pairs, paired bootstrap over questions).

    python eval/results/llm-enterprise-traps/combine.py        # from the repository root; prints markdown
"""
import json
import os
import sys

sys.path.insert(0, os.getcwd())
from eval.harness import stats  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ORDER = ["bare", "enriched", "stale", "stale+detect", "static", "stale+reviewed"]


def load() -> list[dict]:
    recs = []
    for s in "ABC":
        for name, shift in ((f"scored-{s}", 0), (f"scored-r23-{s}", 1)):
            with open(os.path.join(HERE, name, "results.jsonl")) as fh:
                for line in fh:
                    r = json.loads(line)
                    r["repeat"] = int(r.get("repeat", 0)) + shift
                    recs.append(r)
    return sorted(recs, key=lambda r: ORDER.index(r["condition"]))


def main() -> None:
    recs = load()
    cs = stats.conditions(recs)
    print("| condition | correct | accuracy | Wilson 95% | per repeat | silent-wrong | abstained | tool calls / question |")
    print("|---|---|---|---|---|---|---|---|")
    for c in ORDER:
        m = cs[c]
        rs = [r for r in recs if r["condition"] == c]
        sw = sum(1 for r in rs if r["outcome"] == "silent-wrong")
        ab = sum(1 for r in rs if r["outcome"] == "abstain")
        calls = sum(r.get("tool_calls") or 0 for r in rs) / len(rs)
        per = ", ".join(f"{round(a * 15)}/15" for a in m["accuracy_by_repeat"])
        lo, hi = m["accuracy_ci"]
        print(f"| {c} | {m['correct']}/{m['n']} | {m['accuracy']:.0%} | {lo:.2f}-{hi:.2f} | {per} | {sw} | {ab} | {calls:.1f} |")
    tags = sorted({t for r in recs for t in r.get("tags") or ()})
    print()
    print("| condition | " + " | ".join(tags) + " |")
    print("|---|" + "---|" * len(tags))
    for c in ORDER:
        row = []
        for t in tags:
            rs = [r for r in recs if r["condition"] == c and t in (r.get("tags") or ())]
            row.append(f"{sum(r['correct'] for r in rs)}/{len(rs)}")
        print(f"| {c} | " + " | ".join(row) + " |")
    pairs = [("enriched", "stale"), ("enriched", "bare"), ("stale+detect", "stale"), ("stale+reviewed", "stale"),
             ("static", "stale"), ("stale+reviewed", "static"), ("stale+detect", "static"), ("stale", "bare")]
    print()
    print("| A | B | pairs | only A | only B | McNemar p | accuracy A - B | 95% interval | verdict |")
    print("|---|---|---|---|---|---|---|---|---|")
    for x in stats.comparisons(recs, pairs):
        lo, hi = x["accuracy_diff_ci"] or (float("nan"), float("nan"))
        print(f"| {x['a']} | {x['b']} | {x['pairs']} | {x['only_a']} | {x['only_b']} | {x['p']:.3g} | "
              f"{x['accuracy_diff']:+.0%} | [{lo:+.0%}, {hi:+.0%}] | {x['accuracy_verdict']} |")


if __name__ == "__main__":
    main()
