"""The report of a run: OUT/results.jsonl + OUT/run.json -> OUT/report.md, OUT/chart.png, OUT/summary.json.

    paths = write_report("out/")        # {"report": ..., "chart": ..., "summary": ...}
    print(headline(json.load(open(paths["summary"]))))

report.md: the command that made it, lakes (seed, scale), pinned vids, agent, accuracy per condition and
per tag, outcome rates, table selection precision / recall, deprecated-table use, tokens and tool
calls, stale vs not, recovery, McNemar, the detector's precision / recall, run time, and the misses
of each condition (bounded). chart.png (matplotlib, Agg): accuracy per condition, and per tag grouped.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from eval.harness.metrics import summarize
from eval.harness.runner import RESULTS, RUN_INFO

__all__ = ["write_report", "headline", "read_results", "caveats", "MAX_MISSES", "TUNED_AGENTS", "write_variants_report",
           "variants_headline"]

MAX_MISSES = 40        # per condition
# rule-based agents whose rules were written while reading the public question set's failures: their figures
# on it are not a held-out measure (README, Evaluation)
TUNED_AGENTS = frozenset({"offline"})
SQL_CHARS = 400
REASON_CHARS = 220


def read_results(out_dir: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    path = os.path.join(out_dir, RESULTS)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no results; run `semcat eval run ... --out {out_dir}` first")
    with open(path, encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh if line.strip()]
    info: dict[str, Any] = {}
    if os.path.exists(os.path.join(out_dir, RUN_INFO)):
        with open(os.path.join(out_dir, RUN_INFO), encoding="utf-8") as fh:
            info = json.load(fh)
    return records, info


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _num(x: float | None, nd: int = 1) -> str:
    return "–" if x is None else f"{x:,.{nd}f}"


def _cut(s: str | None, n: int) -> str:
    s = (s or "").replace("\n", " ").replace("|", "\\|").strip()
    return s if len(s) <= n else s[: n - 1] + "…"


def _table(head: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def headline(summary: dict[str, Any]) -> str:
    """The accuracy-per-condition table (Markdown) and the recovery line: what the CLI prints."""
    rows = []
    for cond, m in summary["conditions"].items():
        o = m["overall"]
        rows.append([cond, o["n"], o.get("correct", 0), _pct(o.get("accuracy")), _pct(o.get("silent_wrong")),
                     _pct(o.get("loud_error")), _pct(o.get("abstain")), _num(o.get("tokens_per_correct"), 0)])
    t = _table(["condition", "questions", "correct", "accuracy", "silent-wrong", "loud-error", "abstain",
                "tokens/correct"], rows)
    rec = summary["recovery"]["all"]
    out = t + f"\n\nrecovery: {rec['explain']}"
    cmp = summary.get("comparisons") or []
    if cmp:
        out += "\n\n" + "\n".join(f"{c['a']} vs {c['b']}: accuracy {c['accuracy_verdict']}, tokens per correct "
                                   f"answer {c['cost_verdict']}" for c in cmp)
    return out


def _ci(ci: Sequence[float] | None, fmt: Any) -> str:
    return "–" if not ci else f"[{fmt(ci[0])}, {fmt(ci[1])}]"


def intervals_md(summary: dict[str, Any]) -> str:
    """The section on repeats, intervals and paired comparisons (eval.harness.stats)."""
    iv, cmp = summary.get("intervals") or {}, summary.get("comparisons") or []
    if not iv:
        return ""
    from eval.harness.stats import MIN_REPEATS, NO_DIFFERENCE

    L = ["## Repeats, intervals and paired comparisons", "",
         "Accuracy pools every question of every repeat, with its 95% Wilson interval. Costs per correct answer "
         "(tokens: tool results plus prompt and completion; tool calls) with 95% bootstrap intervals over "
         "questions. Comparisons pair each question and repeat: the exact McNemar test on the discordant pairs, "
         f"and the accuracy difference with a paired bootstrap interval; where it contains 0 the report says "
         f"\"{NO_DIFFERENCE}\" instead of ranking.", ""]
    few = [c for c, m in iv.items() if m["repeats"] < MIN_REPEATS]
    if few:
        L += [f"**Fewer than {MIN_REPEATS} repeats** for {', '.join(few)}: the intervals cover the sampling of "
              "questions only, not the agent's run-to-run variation.", ""]
    pct = lambda x: f"{100 * x:.1f}%"  # noqa: E731
    L.append(_table(["condition", "repeats", "answers", "accuracy", "95% interval", "per repeat", "tokens / correct",
                     "95% interval", "tool calls / correct", "95% interval"],
                    [[c, m["repeats"], m["n"], _pct(m["accuracy"]), _ci(m["accuracy_ci"], pct),
                      ", ".join(pct(a) for a in m["accuracy_by_repeat"]), _num(m["tokens_per_correct"], 0),
                      _ci(m["tokens_per_correct_ci"], lambda x: f"{x:,.0f}"), _num(m["calls_per_correct"], 2),
                      _ci(m["calls_per_correct_ci"], lambda x: f"{x:.2f}")] for c, m in iv.items()]))
    if cmp:
        L += ["", _table(["A", "B", "pairs", "only A", "only B", "McNemar p", "accuracy A − B", "95% interval",
                          "accuracy", "tokens / correct A − B", "95% interval", "cost"],
                         [[c["a"], c["b"], c["pairs"], c["only_a"], c["only_b"], f"{c['p']:.4g}",
                           _pct(c["accuracy_diff"]), _ci(c["accuracy_diff_ci"], pct), c["accuracy_verdict"],
                           _num(c["tokens_per_correct_diff"], 0),
                           _ci(c["tokens_per_correct_diff_ci"], lambda x: f"{x:,.0f}"), c["cost_verdict"]]
                          for c in cmp])]
    return "\n".join(L) + "\n"


def _detector_md(info: dict[str, Any]) -> str:
    parts = []
    for i, det in enumerate(info.get("detector") or []):
        if not det:
            continue
        lake = (info.get("lakes") or [{}])[i] if i < len(info.get("lakes") or []) else {}
        parts.append(f"Lake {lake.get('dir', i)} (seed {lake.get('seed')}):\n")
        parts.append(_table(["depth", "precision", "recall", "hit / detectable", "flagged (in manifest)",
                             "non-fresh findings on enriched"],
                            [[d, f"{s['precision']:.2f}", f"{s['recall']:.2f}", f"{s['hit']} / {s['detectable']}",
                              f"{s['flagged']} ({s['flagged_in_manifest']})",
                              "–" if s.get("false_alarms") is None else s["false_alarms"]] for d, s in det.items()]))
        for d, s in det.items():
            if s.get("missed"):
                more = f" … (+{len(s['missed']) - 12})" if len(s["missed"]) > 12 else ""
                parts.append(f"\nmissed at depth {d}: " + ", ".join(f"`{m}`" for m in s["missed"][:12]) + more)
        parts.append("")
    return "\n".join(parts) if parts else "Not computed for this run (no stale history, or `--no-detector`)."


def caveats(info: dict[str, Any]) -> list[str]:
    """What a reader must know before comparing this run's figures: for an agent in TUNED_AGENTS, that
    its rules were written against the questions it is scored on (the public set)."""
    if info.get("agent") not in TUNED_AGENTS:
        return []
    return [f"**Caveat:** the `{info.get('agent')}` agent is rule-based, and its rules were written against the "
            "questions of the public set (reading its failures on them). Its figures on the public set are on the "
            "questions its rules were written for: a frozen baseline, not a held-out measure of what the catalog's "
            "annotations are worth. Only a held-out question set measures that."]


def render(records: list[dict[str, Any]], info: dict[str, Any], summary: dict[str, Any]) -> str:
    conds = list(summary["conditions"])
    L: list[str] = ["# semcat evaluation report", ""]
    L.append(f"Command: `{info.get('command') or '(not recorded)'}`  ")
    L.append(f"Agent: `{info.get('agent', '?')}`; questions: {info.get('questions', '?')}; conditions: "
             f"{', '.join(conds)}  ")
    for lk in info.get("lakes", []):
        L.append(f"Lake: `{lk.get('dir')}` (seed {lk.get('seed')}, scale {lk.get('scale')})  ")
    snaps = info.get("snapshots") or {}
    if snaps:
        L.append("Pinned snapshots (vid per lake): " + "; ".join(f"{c} {v}" for c, v in snaps.items()) + "  ")
    L.append(f"Run time: {info.get('seconds', '?')} s: questions {info.get('eval_seconds', '?')} s, detector "
             f"{info.get('detector_seconds', '?')} s (started {info.get('started', '?')})")
    for c in caveats(info):
        L += ["", c]
    L += ["", "## Accuracy per condition", "", headline(summary), ""]
    iv = intervals_md(summary)
    if iv:
        L += [iv]

    tags = sorted({t for c in conds for t in summary["conditions"][c]["tags"]})
    rows = []
    for t in tags:
        ns = [summary["conditions"][c]["tags"].get(t, {}) for c in conds]
        rows.append([t, max((m.get("n", 0) for m in ns), default=0), *(_pct(m.get("accuracy")) for m in ns)])
    L += ["## Accuracy per tag", "", _table(["tag", "n", *conds], rows), ""]

    L += ["## Outcomes", "", _table(["condition", "correct", "silent-wrong", "loud-error", "abstain", "gold-error"],
                                    [[c, _pct(o["accuracy"]), _pct(o["silent_wrong"]), _pct(o["loud_error"]),
                                      _pct(o["abstain"]), _pct(o["gold_error"])]
                                     for c in conds if (o := summary["conditions"][c]["overall"]).get("n")]), ""]
    L += ["## Table selection", "",
          "Tables read by the predicted SQL (sqlglot) against the question's `tables:`, averaged over questions "
          "with predicted SQL; deprecated-table use is the share of questions whose SQL read a deprecated table.", "",
          _table(["condition", "precision", "recall", "questions with SQL", "deprecated-table use"],
                 [[c, _pct(o.get("table_precision")), _pct(o.get("table_recall")), o.get("table_pr_n", 0),
                   _pct(o.get("deprecated_use"))] for c in conds if (o := summary["conditions"][c]["overall"]).get("n")]),
          ""]
    L += ["## Tokens and tool calls", "",
          "Tokens: o200k_base tokens of tool results plus the model's prompt and completion tokens.", "",
          _table(["condition", "tool calls (mean)", "tool calls (p90)", "tokens / question", "tool tokens / question",
                  "tokens / correct", "seconds / question"],
                 [[c, _num(o.get("tool_calls_mean")), _num(o.get("tool_calls_p90")), _num(o.get("tokens_mean"), 0),
                   _num(o.get("tool_tokens_mean"), 0), _num(o.get("tokens_per_correct"), 0),
                   _num(o.get("seconds_mean"), 2)]
                  for c in conds if (o := summary["conditions"][c]["overall"]).get("n")]), ""]
    ss, ds = summary["stale_split"], summary["detectable_split"]
    L += ["## Stale vs not", "",
          "A question touches a stale annotation of the lake's manifest when its gold SQL reads what the annotation "
          "describes: the annotated column, both ends of a relationship, the table for table-wide keys and for "
          "columns that no longer exist (eval/harness/touches.py).", "",
          _table(["condition", "touching stale: n", "accuracy", "not touching: n", "accuracy",
                  "touching detectable stale: n", "accuracy"],
                 [[c, ss[c]["stale"]["n"], _pct(ss[c]["stale"]["accuracy"]), ss[c]["not_stale"]["n"],
                   _pct(ss[c]["not_stale"]["accuracy"]), ds[c]["stale"]["n"], _pct(ds[c]["stale"]["accuracy"])]
                  for c in conds]), ""]
    L += ["## Recovery", "", "recovery = (stale+detect − stale) / (enriched − stale), on accuracy.", ""]
    for name, r in summary["recovery"].items():
        L.append(f"- {name.replace('_', ' ')}: {r['explain']}")
    L += ["", "## McNemar", "",
          "Exact two-sided McNemar test on paired questions (only A = correct in A only).", ""]
    mc = summary["mcnemar"]
    L.append(_table(["A", "B", "paired", "only A", "only B", "p"],
                    [[m["a"], m["b"], m["n"], m["only_a"], m["only_b"], f"{m['p']:.4g}"] for m in mc])
             if mc else "No pair of the compared conditions was run.")
    L += ["", "## Staleness detector", "",
          "`semantic.staleness` on the stale history against the stale manifest (precision over flagged "
          "(table, annotation) pairs; recall over detectable manifest entries).", "", _detector_md(info), ""]
    L += ["## Misses", ""]
    for c in conds:
        miss = [r for r in records if r["condition"] == c and not r["correct"]]
        L.append(f"### {c}: {len(miss)} missed")
        L.append("")
        for r in miss[:MAX_MISSES]:
            sql = f" — `{_cut(r['sql'], SQL_CHARS)}`" if r.get("sql") else ""
            L.append(f"- **{r['id']}** ({r['outcome']}): {_cut(r['reason'], REASON_CHARS)}{sql}")
        if len(miss) > MAX_MISSES:
            L.append(f"- … {len(miss) - MAX_MISSES} more in results.jsonl")
        L.append("")
    return "\n".join(L)


def chart(summary: dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    conds = list(summary["conditions"])
    acc = [100 * (summary["conditions"][c]["overall"].get("accuracy") or 0) for c in conds]
    tags = sorted({t for c in conds for t in summary["conditions"][c]["tags"]})
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(14, 5), gridspec_kw={"width_ratios": [1, 3]})
    bars = a1.bar(conds, acc, color=[f"C{i}" for i in range(len(conds))])
    a1.bar_label(bars, fmt="%.0f%%")
    a1.set_ylim(0, 105)
    a1.set_ylabel("execution accuracy (%)")
    a1.set_title("accuracy per condition")
    a1.tick_params(axis="x", rotation=30)
    width = 0.8 / max(1, len(conds))
    for i, c in enumerate(conds):
        ys = [100 * (summary["conditions"][c]["tags"].get(t, {}).get("accuracy") or 0) for t in tags]
        a2.bar([k + i * width for k in range(len(tags))], ys, width, label=c, color=f"C{i}")
    a2.set_xticks([k + width * (len(conds) - 1) / 2 for k in range(len(tags))], tags, rotation=30)
    a2.set_ylim(0, 105)
    a2.set_title("accuracy per tag")
    a2.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(out_dir: str) -> dict[str, str]:
    """Write report.md, chart.png and summary.json from OUT/results.jsonl (and OUT/run.json)."""
    records, info = read_results(out_dir)
    summary = summarize(records)
    summary["run"] = {k: info.get(k) for k in ("command", "agent", "lakes", "snapshots", "seconds", "eval_seconds",
                                               "detector_seconds", "questions", "detector")}
    summary["caveats"] = caveats(info)
    paths = {"report": os.path.join(out_dir, "report.md"), "chart": os.path.join(out_dir, "chart.png"),
             "summary": os.path.join(out_dir, "summary.json")}
    with open(paths["summary"], "w", encoding="utf-8") as fh:
        json.dump(summary, fh, indent=1, default=str)
    with open(paths["report"], "w", encoding="utf-8") as fh:
        fh.write(render(records, info, summary))
    chart(summary, paths["chart"])
    return paths


def write_variants_report(out_dir: str, variants: Sequence[str]) -> dict[str, str]:
    """OUT/report.md and OUT/summary.json of a run over several lake variants, each already reported in
    OUT/<variant>/ (write_report): a side-by-side table (accuracy, silent-wrong and tokens per correct
    answer of each condition on each variant), then each variant's accuracy table and a link to its full
    report. Returns {"report": ..., "summary": ...}."""
    summaries: dict[str, dict[str, Any]] = {}
    for v in variants:
        with open(os.path.join(out_dir, v, "summary.json"), encoding="utf-8") as fh:
            summaries[v] = json.load(fh)
    conds: list[str] = []
    for s in summaries.values():
        conds += [c for c in s["conditions"] if c not in conds]
    head = ["condition"] + [f"{v} {k}" for v in variants for k in ("accuracy", "silent-wrong", "tokens/correct")]
    rows = []
    for c in conds:
        row: list[object] = [c]
        for v in variants:
            o = summaries[v]["conditions"].get(c, {}).get("overall", {})
            row += [_pct(o.get("accuracy")), _pct(o.get("silent_wrong")), _num(o.get("tokens_per_correct"), 0)]
        rows.append(row)
    lines = ["# Evaluation report: lake variants side by side", "",
             "Each variant was run (or scored) separately on the same questions; its full report is in its "
             "directory.", "", _table(head, rows), ""]
    for v in variants:
        s = summaries[v]
        lakes = ", ".join(str(lk.get("dir")) for lk in (s.get("run", {}).get("lakes") or []))
        lines += [f"## {v}", "", f"lakes: {lakes or 'n/a'}; full report: [{v}/report.md]({v}/report.md)", "",
                  headline(s), ""]
    paths = {"report": os.path.join(out_dir, "report.md"), "summary": os.path.join(out_dir, "summary.json")}
    with open(paths["report"], "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines))
    with open(paths["summary"], "w", encoding="utf-8") as fh:
        json.dump({"variants": {v: summaries[v] for v in variants}}, fh, indent=1, default=str)
    return paths


def variants_headline(out_dir: str) -> str:
    """The side-by-side table of OUT/report.md (what the CLI prints after a several-variant run)."""
    with open(os.path.join(out_dir, "report.md"), encoding="utf-8") as fh:
        text = fh.read()
    return text.split("\n\n")[2] if text.count("\n\n") >= 2 else text
