"""`semcat eval score`: score runs recorded by `semcat eval serve` like `semcat eval run` scores its own.

    summary = score_runs("LAKES/small", ["runs/bare", "runs/stale"], "report/")
    write_report("report/")

Each run directory holds run.json (kind semcat-eval-serve: condition, pinned vid, question file),
answers.jsonl and calls.jsonl (eval.harness.serve). Scoring builds, for every question of the run, the
`Episode` the agent loop would have built (the SQL or abstention, one turn per counted tool call with its
tokens and milliseconds) and scores it with `runner.episode_record` at the run's pinned vid: the same
comparator, outcomes and fields; then `runner` combines them (stale touches, tags) and writes
OUT/results.jsonl and OUT/run.json, which `eval.harness.report` turns into the same report and chart.

Repeats: several runs of one condition (fresh agents run again) are its repeats, numbered in the order
given (`repeat` 0, 1, ... in each record); records also carry the agent `session` that answered (serve's
sessions). The report pools repeats and gives intervals and paired tests (eval.harness.stats).

Invariants: every run names the same question ids (the question file is read from
the first run's run.json unless `questions` is given); a question the run has no answer for scores as a
`loud-error` ("no answer was recorded"); the vid a run pinned must exist in the lake's history (the lake
given must be the one served: its seed and scale are checked against the run's). Model tokens are not
visible to the server: prompt and completion tokens are 0, tool tokens are the server's count.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from eval.agents.loop import Episode, ToolCall, Turn
from eval.harness.questions import Question, load_questions
from eval.harness.runner import (
    EPISODES,
    RESULTS,
    RUN_INFO,
    RunSummary,
    combine_records,
    deprecated_tables,
    detector_report,
    episode_record,
    lake_tables,
    open_lake,
    validate_conditions,
)
from eval.harness.serve import ANSWERS, CALLS, SERVE_KIND
from eval.harness.translate import translate_questions

__all__ = ["score_runs", "read_run", "NO_ANSWER"]

NO_ANSWER = "no answer was recorded for this question"


def _lines(path: str) -> list[dict[str, Any]]:
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: missing; is this a directory `semcat eval serve --out` wrote?")
    out = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise ValueError(f"{path}, line {n}: not JSON ({e.msg}); the file is damaged") from None
    return out


def read_run(run_dir: str) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """(run.json, answers, calls) of a served run; a ValueError says what is missing or wrong."""
    info_path = os.path.join(run_dir, RUN_INFO)
    if not os.path.exists(info_path):
        raise ValueError(f"{run_dir}: no {RUN_INFO}; pass directories written by `semcat eval serve --out DIR`")
    with open(info_path, encoding="utf-8") as fh:
        info = json.load(fh)
    if info.get("kind") != SERVE_KIND:
        raise ValueError(f"{info_path} is not a served run (kind {info.get('kind')!r}); `semcat eval run` output "
                         "is already scored: use `semcat eval run --out` directly")
    return info, _lines(os.path.join(run_dir, ANSWERS)), _lines(os.path.join(run_dir, CALLS))


def _episode(q: Question, info: dict[str, Any], answer: dict[str, Any] | None,
             calls: list[dict[str, Any]]) -> tuple[Episode, set[str]]:
    """The Episode the loop would have built, and the tables the agent was shown as deprecated."""
    mine = [c for c in calls if c.get("question") == q.id and c.get("counted")]
    turns = [Turn(ToolCall(str(c["tool"]), dict(c["arguments"]) if isinstance(c.get("arguments"), dict) else {}),
                  None, c.get("error") or "", c.get("error") is not None, int(c.get("tokens") or 0),
                  float(c.get("ms") or 0.0)) for c in mine]
    warned = {t for c in mine for t in c.get("deprecated") or ()}
    handle = str(info.get("handle"))
    if answer is None:
        ep = Episode(question=q.question, snapshot=handle, sql=None, abstain_reason=f"agent error: {NO_ANSWER}",
                     turns=turns, agent_error=NO_ANSWER, tool_tokens=sum(t.tokens for t in turns))
        return ep, warned
    ep = Episode(question=q.question, snapshot=handle, sql=answer.get("sql"),
                 abstain_reason=answer.get("abstain_reason"), turns=turns, tool_tokens=sum(t.tokens for t in turns),
                 seconds=float(answer.get("seconds") or 0.0))
    return ep, warned


_Run = tuple[str, dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]   # (run dir, run.json, answers, tool calls)


def _served_questions(runs: Sequence[str], loaded: list[_Run], questions: Sequence[Question] | None) -> list[Question]:
    """The questions the runs served (`questions`, else the file the first run names), checked
    against every run's question ids and answers."""
    if questions is None:
        qfile = loaded[0][1].get("questions_file")
        if not qfile or not os.path.exists(qfile):
            raise ValueError(f"{runs[0]}/{RUN_INFO} names the question file {qfile!r}, which is not there; pass "
                             "--questions FILE")
        questions = load_questions(qfile)
    qs = list(questions)
    by_id = {q.id: q for q in qs}
    for r, info, answers, _ in loaded:
        ids = info.get("question_ids") or []
        if ids != [q.id for q in qs]:
            raise ValueError(f"{r} served the questions {ids[:5]}... but the question file has "
                             f"{[q.id for q in qs][:5]}... ({len(qs)}); score runs of the same question file")
        stray = [a.get("id") for a in answers if a.get("id") not in by_id]
        if stray:
            raise ValueError(f"{r}/{ANSWERS} answers questions not in the question file: {stray[:5]}")
    return qs


def _check_lake(data: str, li: dict[str, Any], loaded: list[_Run]) -> None:
    """Every run was served from a lake of this seed and scale (when both say)."""
    for r, info, _, _ in loaded:
        for key in ("seed", "scale"):
            if info.get(key) is not None and li.get(key) is not None and info[key] != li[key]:
                raise ValueError(f"{r} was served from a lake with {key} {info[key]!r}, but {data} has "
                                 f"{key} {li[key]!r}; pass the lake the run was served from")


def score_runs(data: str, runs: Sequence[str], out_dir: str, *, questions: Sequence[Question] | None = None,
               command: str | None = None, detector_depths: tuple[str, ...] = ("metadata", "data"),
               log: Callable[[str], None] | None = None) -> RunSummary:
    """Score the served runs `runs` against the lake `data`; write OUT/episodes.jsonl, OUT/results.jsonl and
    OUT/run.json (the runner's formats)."""
    from eval.harness.conditions import HISTORY_OF as CONDITIONS

    if not runs:
        raise ValueError("no run directory given (--runs DIR, repeated for each condition)")
    same = [r for r in runs if os.path.abspath(r) == os.path.abspath(out_dir)]
    if same:
        raise ValueError(f"--out {out_dir} is a run directory; write the scores to another directory")
    t0 = time.perf_counter()
    loaded = [(r, *read_run(r)) for r in runs]
    order = [info.get("condition", "") for _, info, _, _ in loaded]
    conds = validate_conditions(list(dict.fromkeys(order)))
    repeat_of = [order[:i].count(c) for i, c in enumerate(order)]  # the run's repeat within its condition
    qs = _served_questions(runs, loaded, questions)
    lake = open_lake(data, None, {CONDITIONS[c] for c in conds})
    try:
        li = lake.info
        _check_lake(data, li, loaded)
        qs = translate_questions(qs, lake.naming)  # gold SQL under the lake's names (plain: as is)
        known, deprecated = lake_tables(lake, qs)
        gold_cache: dict[tuple[str, int, str], tuple[Any, str | None]] = {}
        recs: list[dict[str, list[dict[str, Any]]]] = [{} for _ in range(max(repeat_of) + 1)]
        vids: dict[str, list[int]] = {}
        with open(os.path.join(_mkdir(out_dir), EPISODES), "w", encoding="utf-8") as logf:
            for (r, info, answers, calls), rep in zip(loaded, repeat_of, strict=True):
                cond = info["condition"]
                history = CONDITIONS[cond]
                cat = lake.catalogs[history]
                vid = int(info["vid"])
                if vid > cat.latest_vid:
                    raise ValueError(f"{r} pinned vid {vid}, but the {history} history of {data} ends at vid "
                                     f"{cat.latest_vid}; pass the lake the run was served from")
                dep = deprecated | deprecated_tables(cat, vid)
                got = {a["id"]: a for a in answers}
                missing = [q.id for q in qs if q.id not in got]
                if missing and log is not None:
                    log(f"{r}: no answer for {len(missing)} question(s) ({', '.join(missing[:5])}"
                        f"{'…' if len(missing) > 5 else ''}): scored as loud-error")
                out = []
                for q in qs:
                    ep, warned = _episode(q, info, got.get(q.id), calls)
                    rec = episode_record(q, ep, cond=cond, lake_root=lake.root, cat=cat, history=history, vid=vid,
                                         gold_cache=gold_cache, deprecated=dep, known=known, warned=warned,
                                         decode=None if lake.naming.identity else lake.naming.decode)
                    rec["repeat"] = rep
                    rec["session"] = (got.get(q.id) or {}).get("session")
                    out.append(rec)
                    logf.write(json.dumps(rec, ensure_ascii=False, default=str) + "\n")
                recs[rep][cond] = out
                vids.setdefault(cond, []).append(vid)
        t1 = time.perf_counter()
        detector = detector_report(lake, detector_depths, _d0(lake.root))
        detector_s = time.perf_counter() - t1
    finally:
        if lake.owned:
            for c in lake.catalogs.values():
                c.close()
    records = [rec for by_cond in recs  # qs: already under the lake's names
               for rec in combine_records([qs], [c for c in conds if c in by_cond], [lake], [by_cond])]
    path = os.path.join(out_dir, RESULTS)
    with open(path, "w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False, default=str) + "\n")
    seconds = time.perf_counter() - t0
    eval_s = sum(float(a.get("seconds") or 0.0) for _, _, answers, _ in loaded for a in answers)
    run_info = {
        "command": command, "agent": "external (semcat eval serve)", "conditions": conds, "questions": len(qs),
        "lakes": [{"dir": os.path.abspath(lake.root), "seed": li.get("seed"), "scale": li.get("scale"),
                   "stale_tables": sorted(lake.stale_tables)}],
        "snapshots": vids, "detector": [detector], "seconds": round(seconds + eval_s, 1),
        "eval_seconds": round(eval_s, 1), "detector_seconds": round(detector_s, 1),
        "started": min((str(info.get("started")) for _, info, _, _ in loaded), default=None),
        "repeats": {c: order.count(c) for c in conds},
        "runs": [{"dir": os.path.abspath(r), "condition": info["condition"], "repeat": rep,
                  "transport": info.get("transport"), "per_agent": info.get("per_agent"),
                  "sessions": len({a.get("session") for a in answers if a.get("session") is not None}),
                  "answers": len(answers), "calls": len(calls)}
                 for (r, info, answers, calls), rep in zip(loaded, repeat_of, strict=True)],
    }
    with open(os.path.join(out_dir, RUN_INFO), "w", encoding="utf-8") as fh:
        json.dump(run_info, fh, indent=1, default=str)
    acc = {c: sum(rec["correct"] for rec in records if rec["condition"] == c) / (len(qs) * order.count(c))
           for c in conds}
    return RunSummary(out_dir=out_dir, results_path=path, records=len(records), seconds=seconds, accuracy=acc,
                      snapshots=vids)


def _mkdir(path: str) -> str:
    os.makedirs(path, exist_ok=True)
    return path


def _d0(root: str = "") -> dt.datetime:
    from eval.harness.conditions import lake_now

    return lake_now(root)
