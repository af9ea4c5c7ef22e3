"""The runner (HARNESS.md, Scoring): every question x condition at one pinned snapshot per condition.

    summary = run_eval("LAKES/small", load_questions("eval/questions/public.yaml"),
                       ["bare", "enriched", "stale", "stale+detect"], lambda: make_agent("offline"), "out/")

For each lake (one directory per seed) the runner opens each history's catalog once (or uses the open
catalogs it is given: RocksDB allows one opener per process). For each condition it builds the MCP
server (`create_server` with the condition's hide flags and now = D0), one in-memory `mcp.Client`, pins
the latest snapshot once, and runs every question with a fresh agent through `run_episode` at that
handle. Gold and predicted SQL run with `catalog_core.run_sql` at the same vid and are compared by
`eval.harness.compare`.

Outcomes: `correct`; `silent-wrong` (the SQL ran and its result is wrong; for an `unanswerable`
question: any SQL, whether it runs or not); `loud-error` (the SQL failed, or the agent raised); `abstain` (correct for an
`unanswerable` question); `gold-error` (the gold SQL itself failed: a question-file bug, counted wrong).
With several lakes, a prediction is correct only if it is correct at every lake; the other fields of the
line are those of the first lake, and `lakes` lists each lake's outcome.

`touches_stale` (and `touches_detectable_stale`): the question reads what a stale annotation of the
manifest describes (eval/harness/touches.py); `stale_annotations` names them.

Output: OUT/episodes.jsonl (written as the run goes: one line per question x condition x lake),
OUT/results.jsonl (one line per question x condition, at the end) and OUT/run.json (lakes, seeds, pinned
vids per condition, agent, detector scores, timings); `eval.harness.report` turns them into report.md,
chart.png and summary.json.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import sqlglot

import catalog_core as cc
from catalog_core.api import CatalogAPI
from eval.agents.loop import Agent, Episode, list_tool_specs, pin, run_episode
from eval.harness.compare import compare
from eval.harness.questions import Question
from eval.harness.touches import SUBSET_RULE, StaleTouch, stale_event_picks, stale_touches, touches
from eval.harness.translate import translate_questions
from eval.lake.naming import Naming, load_names
from semantic.annotations import table_refs

__all__ = ["run_eval", "RunSummary", "OUTCOMES", "HIDE_FLAGS", "tables_read", "validate_conditions",
           "RESULTS", "RUN_INFO", "subset_questions"]

OUTCOMES = ("correct", "silent-wrong", "loud-error", "abstain", "gold-error")
# condition -> (hide_annotations, hide_findings); the history each reads is eval.lake.CONDITIONS
# ("static" as hide_findings: the stale annotations as a conventional catalog serves them, eval.harness.conditions)
HIDE_FLAGS: dict[str, tuple[bool, bool | str]] = {
    "bare": (True, True), "enriched": (False, True), "stale": (False, True), "stale+detect": (False, False),
    "enriched+detect": (False, False), "static": (False, "static"),
    "stale+reviewed": (False, False),  # LAKE/reviewed served like stale+detect (eval.harness.reviewed)
}
RESULTS = "results.jsonl"
RUN_INFO = "run.json"
EPISODES = "episodes.jsonl"   # written as the run goes: one line per question x condition x lake
ROW_LIMIT = 100_000
SQL_TIMEOUT_S = 30.0


@dataclass
class RunSummary:
    out_dir: str
    results_path: str
    records: int
    seconds: float
    accuracy: dict[str, float] = field(default_factory=dict)     # per condition
    snapshots: dict[str, list[int]] = field(default_factory=dict)  # condition -> pinned vid per lake


def validate_conditions(conditions: Iterable[str]) -> list[str]:
    """The conditions in order, checked; a ValueError names the unknown ones and the valid ones."""
    out = [c.strip() for c in conditions if c and c.strip()]
    bad = [c for c in out if c not in HIDE_FLAGS]
    if bad:
        raise ValueError(f"unknown condition(s) {', '.join(repr(b) for b in bad)}; choose from "
                         f"{', '.join(HIDE_FLAGS)} (comma-separated)")
    if not out:
        raise ValueError(f"no condition given; choose from {', '.join(HIDE_FLAGS)}")
    if len(set(out)) != len(out):
        raise ValueError(f"a condition is repeated in {','.join(out)}")
    return out


# ------------------------------------------------------------------ SQL analysis
def tables_read(sql: str | None, known: Iterable[str] = ()) -> list[str]:
    """Tables a statement reads (sqlglot, DuckDB dialect), CTE names excluded, as dotted names. A name
    with fewer than three parts is completed when exactly one known table ends with it."""
    if not sql:
        return []
    try:
        refs = table_refs(sql)
    except sqlglot.errors.SqlglotError:
        return []
    known = list(known)
    out: list[str] = []
    for parts in refs:
        name = ".".join(parts).lower()
        if len(parts) < 3:
            ends = [k for k in known if k.lower().endswith("." + name)]
            if len(ends) == 1:
                name = ends[0]
        if name not in out:
            out.append(name)
    return out


def _walk(v: Any) -> Iterable[dict[str, Any]]:
    if isinstance(v, dict):
        yield v
        for x in v.values():
            yield from _walk(x)
    elif isinstance(v, list):
        for x in v:
            yield from _walk(x)


def deprecated_shown(result: Any) -> set[str]:
    """Tables one tool result showed as deprecated (warnings of kind `deprecated`, or a hit/card with a
    `deprecated` / `deprecation` field)."""
    out: set[str] = set()
    for d in _walk(result):
        if d.get("kind") == "deprecated" and isinstance(d.get("table"), str):
            out.add(d["table"])
        if d.get("deprecated") and isinstance(d.get("name"), str):
            out.add(d["name"])
        if d.get("deprecation") and isinstance(d.get("table"), str):
            out.add(d["table"])
    return out


def warned_deprecated(ep: Episode) -> set[str]:
    """Tables the transcript showed as deprecated (`deprecated_shown` over every turn's result)."""
    out: set[str] = set()
    for t in ep.turns:
        out |= deprecated_shown(t.result)
    return out


def deprecated_tables(cat: CatalogAPI, vid: int) -> set[str]:
    """Tables with a `table.deprecated` annotation at `vid` (read through the semantic layer)."""
    from semantic.annotations import read_catalog_annotations

    return {name for name, anns in read_catalog_annotations(cat, vid=vid).items()
            if any(a.key == "table.deprecated" and a.value for a in anns)}


# ------------------------------------------------------------------ lakes
@dataclass
class _Lake:
    root: str
    catalogs: dict[str, CatalogAPI]
    owned: bool
    manifest: dict[str, Any] | None
    info: dict[str, Any]
    # the manifest's stale annotations as rules saying which questions touch them (touches.py); read
    # from the stale catalog when the lake opens
    stale_rules: list[StaleTouch] = field(default_factory=list)
    # the lake's names (DIR/names.json; the identity for a plain lake): gold SQL is translated through it
    naming: Naming = field(default_factory=Naming.plain)

    def __post_init__(self) -> None:
        if self.manifest is not None and "stale" in self.catalogs:
            self.stale_rules = stale_touches(self.manifest, self.catalogs["stale"])

    @property
    def stale_tables(self) -> set[str]:
        return {m["table"] for m in (self.manifest or {}).get("stale", [])}


def open_lake(root: str, catalogs: dict[str, CatalogAPI] | None, histories: set[str]) -> _Lake:
    from eval.harness.conditions import ALL_HISTORIES as HISTORIES
    from eval.harness.conditions import history_dir as data_dir
    from eval.lake import MANIFEST

    if not os.path.isdir(root):
        raise FileNotFoundError(f"{root}: no such lake directory; build one with `semcat eval build --data {root}`")
    manifest = None
    if os.path.exists(os.path.join(root, MANIFEST)):
        with open(os.path.join(root, MANIFEST), encoding="utf-8") as fh:
            manifest = json.load(fh)
    info: dict[str, Any] = {}
    if os.path.exists(os.path.join(root, "lake.json")):
        with open(os.path.join(root, "lake.json"), encoding="utf-8") as fh:
            info = json.load(fh)
    if catalogs is not None:
        missing = histories - set(catalogs)
        if missing:
            raise ValueError(f"catalogs given for {root} lack the histories {sorted(missing)}")
        return _Lake(root, dict(catalogs), False, manifest, info, naming=load_names(root))
    opened: dict[str, CatalogAPI] = {}
    try:
        for h in HISTORIES:
            d = data_dir(root, h)
            if h in histories or os.path.isdir(d):
                if not os.path.isdir(d):
                    raise FileNotFoundError(f"{d}: the {h} history is missing; " + (
                        f"review the stale one with `semcat eval review --data {root}`" if h == "reviewed" else
                        f"rebuild the lake with `semcat eval build --data {root}`"))
                opened[h] = cc.Catalog.open(d)
    except BaseException:
        for c in opened.values():
            c.close()
        raise
    return _Lake(root, opened, True, manifest, info, naming=load_names(root))


# ------------------------------------------------------------------ scoring one episode
def _sql(cat: CatalogAPI, sql: str, vid: int) -> tuple[Any, str | None]:
    try:
        return cc.run_sql(cat, sql, snapshot=vid, limit=ROW_LIMIT, timeout_s=SQL_TIMEOUT_S), None
    except Exception as e:  # noqa: BLE001 - every failure of the SQL is an outcome
        return None, f"{type(e).__name__}: {e}"


def _score(q: Question, ep: Episode, gold: tuple[Any, str | None] | None, cat: CatalogAPI,
           vid: int, decode: Callable[[object], object] | None = None) -> tuple[str, str]:
    """(outcome, reason)."""
    if ep.sql is None:
        if ep.agent_error:
            return "loud-error", f"agent error: {ep.agent_error}"
        if q.unanswerable:
            return "correct", f"abstained on an unanswerable question: {ep.abstain_reason}"
        return "abstain", f"abstained: {ep.abstain_reason}"
    if q.unanswerable:
        return "silent-wrong", "answered an unanswerable question (the gold is an abstention)"
    assert gold is not None
    g, gerr = gold
    if gerr is not None:
        return "gold-error", f"the gold SQL failed: {gerr}"
    res, err = _sql(cat, ep.sql, vid)
    if err is not None:
        return "loud-error", f"predicted SQL failed: {err}"
    c = compare(g, res, order_matters=q.order_matters, decimals=q.decimals, decode=decode)
    if c.correct:
        return "correct", c.reason
    extra = " (the predicted result was truncated)" if res.truncated else ""
    return "silent-wrong", c.reason + extra


def episode_record(q: Question, ep: Episode, *, cond: str, lake_root: str, cat: CatalogAPI, history: str, vid: int,
                   gold_cache: dict[tuple[str, int, str], tuple[Any, str | None]], deprecated: set[str],
                   known: list[str], warned: set[str] | None = None,
                   decode: Callable[[object], object] | None = None) -> dict[str, Any]:
    """The scored line of one episode (one question x condition x lake), as episodes.jsonl holds it.

    Shared by the runner and `semcat eval score` (eval.harness.score), so both score alike: the gold SQL
    runs once per (history, vid, question) through `gold_cache`, both statements at `vid`. `warned`: the
    tables the agent was shown as deprecated (default: read from the episode's turns). `q` is the question as
    translated for the lake's variant (translate_questions); `decode` maps a coded variant's codes back to
    labels on both sides before comparing."""
    gold = None
    if not q.unanswerable and q.gold_sql:
        key = (history, vid, q.id)
        if key not in gold_cache:
            gold_cache[key] = _sql(cat, q.gold_sql, vid)
        gold = gold_cache[key]
    outcome, reason = _score(q, ep, gold, cat, vid, decode)
    read = tables_read(ep.sql, known)
    shown = warned_deprecated(ep) if warned is None else warned
    used_dep = sorted(t for t in read if t in (deprecated | shown))
    return {
        "id": q.id, "condition": cond, "lake": lake_root, "vid": vid, "outcome": outcome,
        "correct": outcome == "correct", "reason": reason, "sql": ep.sql,
        "abstain_reason": ep.abstain_reason if ep.sql is None else None, "agent_error": ep.agent_error,
        "tables_read": read, "deprecated_used": used_dep, "tool_calls": ep.tool_calls,
        "tools": [t.call.name for t in ep.turns], "tool_tokens": ep.tool_tokens,
        "prompt_tokens": ep.prompt_tokens, "completion_tokens": ep.completion_tokens,
        "seconds": round(ep.seconds, 3),
    }


# ------------------------------------------------------------------ the run
async def _run_condition(lake: _Lake, cond: str, qs: Sequence[Question], agent_factory: Callable[[], Agent],
                         gold_cache: dict[tuple[str, int, str], tuple[Any, str | None]], deprecated: set[str],
                         known: list[str], tick: Callable[[], None],
                         names: set[str], log: IO[str] | None = None) -> tuple[int, list[dict[str, Any]]]:
    from mcp import Client

    from eval.harness.conditions import HISTORY_OF, condition_server, lake_now

    history = HISTORY_OF[cond]
    cat = lake.catalogs[history]
    server = condition_server(cat, HIDE_FLAGS[cond], now=lake_now(lake.root).timestamp())
    out: list[dict[str, Any]] = []
    async with Client(server) as client:
        handle, vid = await pin(client)
        specs = await list_tool_specs(client)
        dep = deprecated | deprecated_tables(cat, vid)
        for q in qs:
            agent = agent_factory()
            names.add(str(getattr(agent, "name", type(agent).__name__)))
            ep = await run_episode(client, agent, q.question, snapshot=handle, tools=specs)
            out.append(episode_record(q, ep, cond=cond, lake_root=lake.root, cat=cat, history=history, vid=vid,
                                      gold_cache=gold_cache, deprecated=dep, known=known,
                                      decode=None if lake.naming.identity else lake.naming.decode))
            if log is not None:
                log.write(json.dumps(out[-1], ensure_ascii=False, default=str) + "\n")
                log.flush()
            tick()
    return vid, out


def _progress(total: int, enabled: bool) -> Any:
    from mcp_server.cli.progress import progress_bar

    return progress_bar(enabled=enabled)  # a bar on a terminal, one line per step otherwise


def run_eval(data: str | Sequence[str], questions: Sequence[Question], conditions: Sequence[str],
             agent_factory: Callable[[], Agent], out_dir: str, *, limit: int | None = None, progress: bool = True,
             catalogs: Sequence[dict[str, CatalogAPI]] | None = None, command: str | None = None,
             detector_depths: tuple[str, ...] = ("metadata", "data"), subset: int | None = None) -> RunSummary:
    """Run every question x condition (x lake); write OUT/results.jsonl and OUT/run.json.

    `catalogs`, when given, holds one dict per lake of already-open catalogs by history ("enriched",
    "stale"); the runner then does not open (nor close) them. `detector_depths=()` skips the detector.
    `subset=K` runs only the questions of the stale-events rule with K per event
    (eval.harness.touches.stale_event_subset, resolved on the first lake's manifest and stale catalog),
    then `limit` takes the first N of them; run.json records the rule and the questions it chose."""
    from eval.harness.conditions import HISTORY_OF as CONDITIONS
    from eval.harness.conditions import lake_now

    roots = [data] if isinstance(data, str) else list(data)
    if not roots:
        raise ValueError("no lake directory given (--data DIR)")
    conds = validate_conditions(conditions)
    qs = list(questions)
    if subset is None:
        qs = qs[: limit if limit is not None else None]
    if not qs:
        raise ValueError("no questions to run")
    if catalogs is not None and len(catalogs) != len(roots):
        raise ValueError(f"{len(catalogs)} catalog sets for {len(roots)} lake directories")
    os.makedirs(out_dir, exist_ok=True)
    histories = {CONDITIONS[c] for c in conds}
    if subset is not None:
        histories.add("stale")  # the rule reads the stale annotations the manifest names
    t0 = time.perf_counter()
    lakes: list[_Lake] = []
    detector_s = 0.0
    chosen: dict[str, Any] | None = None
    try:
        for i, root in enumerate(roots):
            lakes.append(open_lake(root, None if catalogs is None else catalogs[i], histories))
        if subset is not None:
            qs, picks = subset_questions(lakes[0], qs, subset)
            qs = qs[: limit if limit is not None else None]
            chosen = {"rule": SUBSET_RULE, "k": subset, "questions": [q.id for q in qs],
                      "events": [{"table": t, "kind": kd, "change": ch, "questions": ids}
                                 for (t, kd, ch), ids in picks.items()]}
            if not qs:
                raise ValueError(f"the {SUBSET_RULE}:{subset} rule chose no question of this file on "
                                 f"{lakes[0].root}: none of its gold SQL reads a detectable stale annotation")
        per_lake: list[dict[str, list[dict[str, Any]]]] = []
        vids: dict[str, list[int]] = {c: [] for c in conds}
        detectors: list[dict[str, Any]] = []
        names: set[str] = set()
        lake_qs: list[list[Question]] = []
        total = len(qs) * len(conds) * len(lakes)
        with _progress(total, progress) as bar, open(os.path.join(out_dir, EPISODES), "w", encoding="utf-8") as log:
            task = bar.add_task("eval", total=total)
            for lake in lakes:
                lqs = translate_questions(qs, lake.naming)  # gold SQL under the lake's names (plain: as is)
                lake_qs.append(lqs)
                known, deprecated = lake_tables(lake, lqs)
                gold_cache: dict[tuple[str, int, str], tuple[Any, str | None]] = {}
                recs: dict[str, list[dict[str, Any]]] = {}
                for cond in conds:
                    bar.update(task, description=f"{cond} @ {os.path.basename(os.path.normpath(lake.root))}")
                    vid, out = asyncio.run(_run_condition(lake, cond, lqs, agent_factory, gold_cache, deprecated,
                                                          known, lambda: bar.advance(task), names, log))
                    vids[cond].append(vid)
                    recs[cond] = out
                per_lake.append(recs)
                t1 = time.perf_counter()
                detectors.append(detector_report(lake, detector_depths, lake_now(lake.root)))
                detector_s += time.perf_counter() - t1
    finally:
        for lake in lakes:
            if lake.owned:
                for c in lake.catalogs.values():
                    c.close()
    seconds = time.perf_counter() - t0
    records = combine_records(lake_qs, conds, lakes, per_lake)
    path = os.path.join(out_dir, RESULTS)
    with open(path, "w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False, default=str) + "\n")
    agent_name = ",".join(sorted(names))
    run_info = {
        "command": command, "agent": agent_name, "conditions": conds, "questions": len(qs),
        "lakes": [{"dir": os.path.abspath(lk.root), "seed": lk.info.get("seed"), "scale": lk.info.get("scale"),
                   "stale_tables": sorted(lk.stale_tables)} for lk in lakes],
        "subset": chosen, "snapshots": vids, "detector": detectors, "seconds": round(seconds, 1),
        "eval_seconds": round(seconds - detector_s, 1), "detector_seconds": round(detector_s, 1),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - seconds)),
    }
    with open(os.path.join(out_dir, RUN_INFO), "w", encoding="utf-8") as fh:
        json.dump(run_info, fh, indent=1, default=str)
    acc = {c: sum(r["correct"] for r in records if r["condition"] == c) / len(qs) for c in conds}
    return RunSummary(out_dir=out_dir, results_path=path, records=len(records), seconds=seconds, accuracy=acc,
                      snapshots=vids)


def subset_questions(lake: _Lake, qs: Sequence[Question], k: int
                     ) -> tuple[list[Question], dict[tuple[str, str, str], list[str]]]:
    """The questions (as given: LAKE.md names, in id order) the stale-events rule with K per event picks on
    `lake`, matched under the lake's names against its manifest and stale catalog; and the rule's trace
    (event -> the ids it picked)."""
    if lake.manifest is None or "stale" not in lake.catalogs:
        raise ValueError(f"{lake.root}: the {SUBSET_RULE} subset needs the lake's stale history and "
                         "stale_manifest.json; rebuild it with `semcat eval build`, or drop --subset")
    picks = stale_event_picks(translate_questions(qs, lake.naming), lake.manifest, lake.stale_rules, k)
    picked = {i for ids in picks.values() for i in ids}
    return sorted((q for q in qs if q.id in picked), key=lambda q: q.id), picks


def lake_tables(lake: _Lake, qs: Sequence[Question]) -> tuple[list[str], set[str]]:
    """(the lake's table names and the questions' gold tables, the tables deprecated at the latest vid of
    any of its histories)."""
    known = sorted(set(lake.info.get("rows", {})) | {t for q in qs for t in q.tables})
    deprecated: set[str] = set()
    for c in lake.catalogs.values():
        deprecated |= deprecated_tables(c, c.resolve(None))
    return known, deprecated


def detector_report(lake: _Lake, depths: tuple[str, ...], now: dt.datetime) -> dict[str, Any]:
    from eval.harness.detector import detector_scores

    if not depths or lake.manifest is None or "stale" not in lake.catalogs:
        return {}
    scores = detector_scores(lake.catalogs["stale"], lake.catalogs.get("enriched"), lake.manifest, now=now,
                             depths=depths, naming=lake.naming)
    return {d: s.as_dict() for d, s in scores.items()}


def combine_records(lake_qs: Sequence[Sequence[Question]], conds: Sequence[str], lakes: Sequence[_Lake],
             per_lake: Sequence[dict[str, list[dict[str, Any]]]]) -> list[dict[str, Any]]:
    """One record per question x condition: the first lake's fields, correct only if correct at every lake.
    `lake_qs[k]` are the questions under lake k's names (translate_questions), so a coded variant's stale
    annotations are matched against the tables and columns its gold SQL reads there."""
    out: list[dict[str, Any]] = []
    for cond in conds:
        for i, q in enumerate(lake_qs[0]):
            rs = [recs[cond][i] for recs in per_lake]
            first = dict(rs[0])
            wrong = [r for r in rs if not r["correct"]]
            if wrong:
                first["outcome"], first["reason"] = wrong[0]["outcome"], wrong[0]["reason"]
                if len(rs) > 1:
                    first["reason"] += f" (at {wrong[0]['lake']})"
            first["correct"] = not wrong
            hit = [t for lk, lq in zip(lakes, lake_qs, strict=True) for t in touches(lq[i], lk.stale_rules)]
            first["touches_stale"] = bool(hit)
            first["touches_detectable_stale"] = any(touches(lq[i], lk.stale_rules, detectable_only=True)
                                                    for lk, lq in zip(lakes, lake_qs, strict=True))
            first["stale_annotations"] = sorted(set(hit))[:8]
            first["tags"] = list(q.tags)
            first["gold_tables"] = list(q.tables)
            if len(rs) > 1:
                first["lakes"] = [{"lake": r["lake"], "vid": r["vid"], "outcome": r["outcome"], "reason": r["reason"],
                                   "sql": r["sql"]} for r in rs]
            out.append(first)
    return out
