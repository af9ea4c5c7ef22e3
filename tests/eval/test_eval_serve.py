"""`semcat eval serve` and `semcat eval score` end to end on the small Acme lake: a real `semcat` subprocess
driven by the real MCP client over stdio (one session) and over streamable HTTP (a new session for every
call: the episode state is the server's), a scripted client (next_question, a few tools, a refused call
before any question, a forced snapshot, a malformed call, a hidden tool, a wrong id, the budget, an
abstention), the JSON lines it records, then `semcat eval score` on both runs compared with `run_eval` given
the same answers. Also: nothing an agent can read differs between conditions.

The lake is a private copy of `lake_dir` (one process owns a catalog directory); SEMCAT_EVAL_LAKE=DIR reuses a
built one."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import Any

import anyio
import httpx2
import pytest
import yaml
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from eval.agents.loop import BUDGET, Abstain, FinalSQL, ToolCall, Transcript
from eval.harness.questions import load_questions
from tests.helpers import free_port, stop_process, wait_listening

pytestmark = pytest.mark.slow
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IDS = ("q024", "q047", "q050", "q097")        # three answerable public questions and an unanswerable one
WRONG_Q050 = ("SELECT COUNT(*) + 1 AS sessions FROM acme.core.fct_web_sessions WHERE device = 'tablet' "
              "AND session_date BETWEEN DATE '2025-01-01' AND DATE '2025-01-31'")
ABSTAIN = "no supplier or cost data in the catalog"


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = ROOT + os.pathsep + e.get("PYTHONPATH", "")
    return e


def semcat(*args: str) -> list[str]:
    return [sys.executable, "-m", "mcp_server.cli", *args]


@pytest.fixture(scope="module")
def lake(lake_dir, tmp_path_factory) -> str:
    dst = tmp_path_factory.mktemp("serve") / "lake"
    shutil.copytree(lake_dir, dst)
    return str(dst)


@pytest.fixture(scope="module")
def qfile(tmp_path_factory) -> str:
    with open(os.path.join(ROOT, "eval", "questions", "public.yaml"), encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    data = data["questions"] if isinstance(data, dict) else data
    picked = [q for q in data if q["id"] in IDS]
    assert [q["id"] for q in picked] == list(IDS)
    path = str(tmp_path_factory.mktemp("q") / "questions.yaml")
    with open(path, "w", encoding="utf-8") as fh:
        yaml.safe_dump(picked, fh, sort_keys=False)
    return path


def answers_for(qfile: str) -> dict[str, Any]:
    """What the scripted client answers: gold SQL for q024 and q047, a wrong count for q050, abstain on q097."""
    gold = {q.id: q.gold_sql for q in load_questions(qfile)}
    return {"q024": FinalSQL(gold["q024"]), "q047": FinalSQL(gold["q047"]), "q050": FinalSQL(WRONG_Q050),
            "q097": Abstain(ABSTAIN)}


def text(r) -> str:
    return "\n".join(getattr(c, "text", "") for c in r.content)


async def scripted(call, qfile: str) -> dict[str, Any]:
    """The scripted client. `call(name, args)` makes one tool call (and `call(None, None)` lists the tools)."""
    seen: dict[str, Any] = {"tools": await call(None, None)}
    ans = answers_for(qfile)
    r = await call("search_tables", {"query": "orders"})
    seen["before"] = r
    q = await call("next_question", {})
    seen["first"] = q.structured_content
    seen["again"] = (await call("next_question", {})).structured_content
    # a snapshot the client passes is replaced by the pin
    seen["forced"] = await call("run_sql", {"sql": "SELECT count(*) AS n FROM acme.core.dim_store", "snapshot": 1})
    seen["malformed"] = await call("run_sql", {"sqll": "SELECT 1"})
    seen["hidden"] = await call("pin_snapshot", {})
    seen["annotate"] = await call("annotate", {"table": "acme.core.dim_store", "fields": {"owner": "x"}})
    seen["wrong_id"] = await call("submit_answer", {"id": "q047", "sql": "SELECT 1"})
    seen["empty_sql"] = await call("submit_answer", {"id": "q024", "sql": "  "})
    seen["submit1"] = await call("submit_answer", {"id": "q024", "sql": ans["q024"].sql})
    seen["between"] = await call("list_snapshots", {"limit": 1})
    q2 = await call("next_question", {})
    seen["second"] = q2.structured_content
    seen["budget"] = [await call("list_snapshots", {"limit": 1}) for _ in range(BUDGET + 1)]
    seen["left_after"] = (await call("next_question", {})).structured_content
    await call("submit_answer", {"id": "q047", "sql": ans["q047"].sql})
    await call("next_question", {})
    await call("search_tables", {"query": "web sessions by device"})
    await call("submit_answer", {"id": "q050", "sql": ans["q050"].sql})
    q4 = await call("next_question", {})
    seen["fourth"] = q4.structured_content
    seen["abstain"] = await call("abstain", {"id": "q097", "reason": ABSTAIN})
    seen["done"] = (await call("next_question", {})).structured_content
    seen["after_done"] = await call("search_tables", {"query": "orders"})
    return seen


def check(seen: dict[str, Any], out: str, condition: str) -> None:
    names = seen["tools"]
    assert "annotate" not in names and "pin_snapshot" not in names
    assert {"next_question", "submit_answer", "abstain", "search_tables", "run_sql"} <= set(names)
    assert seen["before"].is_error and "no question is open; call next_question first" in text(seen["before"])
    first = seen["first"]
    assert first["id"] == "q024" and first["calls_left"] == BUDGET and first["remaining"] == 4 and not first["done"]
    assert first["question"].startswith("How many orders are placed") and first["now"].startswith("2025-03-10")
    assert seen["again"]["id"] == "q024"
    info = json.load(open(os.path.join(out, "run.json")))
    assert info["condition"] == condition and info["kind"] == "semcat-eval-serve"
    forced = seen["forced"]
    assert not forced.is_error, text(forced)
    assert forced.structured_content["snapshot"]["vid"] == info["vid"] != 1
    assert seen["malformed"].is_error and "unknown argument 'sqll'; did you mean 'sql'" in text(seen["malformed"])
    assert seen["hidden"].is_error and "not available in this evaluation" in text(seen["hidden"])
    assert seen["annotate"].is_error and "not available" in text(seen["annotate"])
    assert seen["wrong_id"].is_error and "'q047' is not the open question; the open question is 'q024'" in \
        text(seen["wrong_id"])
    assert seen["empty_sql"].is_error and "sql is empty" in text(seen["empty_sql"])
    assert seen["submit1"].structured_content["calls_used"] == 4   # run_sql x2, pin_snapshot, annotate
    assert seen["between"].is_error and "no question is open" in text(seen["between"])
    assert seen["second"]["id"] == "q047" and seen["second"]["remaining"] == 3
    budget = seen["budget"]
    assert not any(r.is_error for r in budget[:BUDGET]), [text(r) for r in budget if r.is_error]
    last = budget[BUDGET]
    assert last.is_error and "budget exhausted" in text(last) and "submit_answer(id='q047'" in text(last)
    assert seen["left_after"]["calls_left"] == 0
    assert seen["fourth"]["id"] == "q097"
    assert not seen["abstain"].is_error and seen["abstain"].structured_content["recorded"] == "abstain"
    assert seen["done"]["done"] is True and seen["done"]["remaining"] == 0
    assert seen["after_done"].is_error and "the run is complete" in text(seen["after_done"])

    answers = [json.loads(x) for x in open(os.path.join(out, "answers.jsonl"))]
    assert [a["id"] for a in answers] == list(IDS)
    assert [a["calls"] for a in answers] == [4, BUDGET, 1, 0]
    assert answers[3]["sql"] is None and answers[3]["abstain_reason"] == ABSTAIN
    assert answers[0]["tools"] == ["run_sql", "run_sql", "pin_snapshot", "annotate"]
    calls = [json.loads(x) for x in open(os.path.join(out, "calls.jsonl"))]
    assert len(calls) == 22 + BUDGET   # every call the script made is recorded, refusals included
    assert calls[0]["question"] is None and calls[0]["error"] and not calls[0]["counted"]
    sql_call = [c for c in calls if c["tool"] == "run_sql" and c["error"] is None][0]
    assert sql_call["arguments"]["snapshot"] == info["handle"] and sql_call["question"] == "q024"
    assert sql_call["tokens"] > 10 and sql_call["ms"] > 0 and sql_call["call"] == 1
    refused = [c for c in calls if c["question"] == "q047" and c["error"] and "budget" in c["error"]]
    assert len(refused) == 1 and not refused[0]["counted"]
    assert sum(c["tokens"] for c in calls if c["question"] == "q047" and c["counted"]) == answers[1]["tool_tokens"]


def test_eval_serve_stdio_and_http_then_score(lake, qfile, tmp_path):
    # ---------------------------------------------------------------- stdio: one session
    out1 = str(tmp_path / "run-enriched")
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_server.cli", "eval", "serve", "--data",
                                                                 lake, "--condition", "enriched", "--questions",
                                                                 qfile, "--out", out1], env=env())

    async def over_stdio() -> tuple[dict[str, Any], str | None]:
        async with Client(params) as c:
            async def call(name, args):
                if name is None:
                    return [t.name for t in (await c.list_tools()).tools]
                return await c.call_tool(name, args)
            return await scripted(call, qfile), c.instructions
    seen1, instructions1 = anyio.run(over_stdio)
    check(seen1, out1, "enriched")

    # ---------------------------------------------------------------- HTTP: a new session per call
    out2 = str(tmp_path / "run-stale")
    port = free_port()
    proc = subprocess.Popen(semcat("eval", "serve", "--data", lake, "--condition", "stale", "--questions", qfile,
                                   "--out", out2, "--port", str(port)), env=env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_listening(proc, port, "eval serve --port")

        instructions2: list[str | None] = []

        async def over_http() -> dict[str, Any]:
            async def call(name, args):
                async with Client(streamable_http_client(url, http_client=httpx2.AsyncClient(timeout=60))) as c:
                    instructions2.append(c.instructions)
                    if name is None:
                        return [t.name for t in (await c.list_tools()).tools]
                    return await c.call_tool(name, args)
            return await scripted(call, qfile)
        seen2 = anyio.run(over_http)
    finally:
        stop_process(proc)
    check(seen2, out2, "stale")
    assert seen1["tools"] == seen2["tools"]
    assert instructions1 and set(instructions2) == {instructions1}
    assert "submit_answer" in instructions1 and "at most 12 tool calls" in instructions1

    # ---------------------------------------------------------------- eval score
    scored = str(tmp_path / "scored")
    p = subprocess.run(semcat("eval", "score", "--data", lake, "--runs", out1, "--runs", out2, "--out", scored,
                              "--no-detector"), env=env(), capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "| enriched | 4 | 3 | 75.0% |" in p.stdout and "| stale | 4 | 3 | 75.0% |" in p.stdout, p.stdout
    for f in ("report.md", "chart.png", "summary.json", "results.jsonl"):
        assert os.path.exists(os.path.join(scored, f)), f
    served = {(r["id"], r["condition"]): r for r in map(json.loads, open(os.path.join(scored, "results.jsonl")))}
    assert served[("q050", "stale")]["outcome"] == "silent-wrong" and served[("q097", "enriched")]["correct"]
    assert served[("q047", "enriched")]["tool_calls"] == BUDGET
    assert served[("q024", "enriched")]["tools"] == ["run_sql", "run_sql", "pin_snapshot", "annotate"]

    # ---------------------------------------------------------------- the same answers through eval run
    from eval.harness.report import write_report
    from eval.harness.runner import run_eval

    ans = answers_for(qfile)

    class Replay:
        name = "replay"

        async def next(self, tr: Transcript):
            if not tr.turns:
                return ToolCall("search_tables", {"query": "orders"})
            qid = next(q.id for q in qs if q.question == tr.question)
            return ans[qid]

        def usage(self):
            return (0, 0)

    qs = load_questions(qfile)
    ran = str(tmp_path / "ran")
    run_eval(lake, qs, ["enriched", "stale"], Replay, ran, progress=False, detector_depths=())
    write_report(ran)
    direct = {(r["id"], r["condition"]): r for r in map(json.loads, open(os.path.join(ran, "results.jsonl")))}
    assert set(direct) == set(served)
    keys = ("outcome", "correct", "reason", "sql", "abstain_reason", "vid", "tables_read", "deprecated_used",
            "touches_stale", "touches_detectable_stale", "stale_annotations", "tags", "gold_tables")
    for k, r in direct.items():
        assert {f: r[f] for f in keys} == {f: served[k][f] for f in keys}, k
    s1 = json.load(open(os.path.join(scored, "summary.json")))
    s2 = json.load(open(os.path.join(ran, "summary.json")))
    for c in ("enriched", "stale"):
        assert s1["conditions"][c]["overall"]["accuracy"] == s2["conditions"][c]["overall"]["accuracy"] == 0.75
    assert s1["mcnemar"] == s2["mcnemar"] and s1["stale_split"] == s2["stale_split"]


def test_nothing_an_agent_reads_names_the_condition(lake, qfile, tmp_path):
    """The tool list and the instructions are byte-identical in every condition (in-memory MCP client)."""
    import catalog_core as cc
    from eval.harness.conditions import HISTORY_OF
    from eval.harness.runner import HIDE_FLAGS
    from eval.harness.serve import build_server
    from eval.lake import data_dir

    qs = load_questions(qfile)
    cats = {h: cc.Catalog.open(data_dir(lake, h)) for h in ("enriched", "stale")}
    seen: dict[str, tuple[str, str | None]] = {}
    try:
        for cond in HIDE_FLAGS:
            # stale+reviewed reads LAKE/reviewed, which this lake has not built: the stale catalog stands in
            # (the tools and instructions depend on the condition's read model, not on the annotations)
            server = build_server(cats.get(HISTORY_OF[cond], cats["stale"]), cond, qs, str(tmp_path / cond))

            async def go(server=server):
                async with Client(server) as c:
                    listed = await c.list_tools()
                    return json.dumps([t.model_dump(mode="json") for t in listed.tools], sort_keys=True), \
                        c.instructions
            seen[cond] = anyio.run(go)
    finally:
        for c in cats.values():
            c.close()
    assert len(set(seen.values())) == 1, {k: hash(v) for k, v in seen.items()}
    tools, instructions = seen["bare"]
    for word in ("bare", "stale+detect", "enriched"):
        assert word not in (instructions or "").lower() and word not in tools.lower()
    assert "condition" not in (instructions or "").lower()


def test_eval_serve_and_score_refuse_bad_input(lake, qfile, tmp_path):
    p = subprocess.run(semcat("eval", "serve", "--data", lake, "--condition", "stael", "--questions", qfile, "--out",
                              str(tmp_path / "x")), env=env(), capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and "unknown condition(s) 'stael'" in p.stderr and "stale+detect" in p.stderr
    p = subprocess.run(semcat("eval", "score", "--data", lake, "--runs", str(tmp_path), "--out", str(tmp_path / "s")),
                       env=env(), capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and "no run.json" in p.stderr and "semcat eval serve --out" in p.stderr


def test_serve_refuses_a_used_out_dir_and_score_handles_a_partial_run(lake, qfile, tmp_path):
    used = tmp_path / "used"
    used.mkdir()
    (used / "answers.jsonl").write_text('{"id": "q024", "sql": "SELECT 1"}\n')
    p = subprocess.run(semcat("eval", "serve", "--data", lake, "--condition", "bare", "--questions", qfile, "--out",
                              str(used)), env=env(), capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and "already holds a run" in p.stderr and "new --out directory" in p.stderr

    # a run that stopped after one answer (written as eval serve writes it)
    from eval.harness.score import NO_ANSWER, score_runs

    run = tmp_path / "partial"
    run.mkdir()
    vid = json.load(open(os.path.join(lake, "lake.json")))["latest_vid"]["enriched"]
    gold = {q.id: q.gold_sql for q in load_questions(qfile)}
    (run / "run.json").write_text(json.dumps({
        "kind": "semcat-eval-serve", "condition": "bare", "history": "enriched", "vid": vid, "handle": f"pin:{vid}",
        "questions_file": qfile, "question_ids": list(IDS), "seed": 7, "scale": "small"}))
    (run / "answers.jsonl").write_text(json.dumps({"id": "q024", "sql": gold["q024"], "abstain_reason": None,
                                                   "calls": 1, "seconds": 2.5}) + "\n")
    (run / "calls.jsonl").write_text(json.dumps({"question": "q024", "tool": "search_tables", "arguments": {},
                                                 "counted": True, "tokens": 100, "ms": 5.0, "error": None,
                                                 "deprecated": []}) + "\n")
    with pytest.raises(ValueError, match="is a run directory"):
        score_runs(lake, [str(run)], str(run), detector_depths=())
    summary = score_runs(lake, [str(run)], str(tmp_path / "scored"), detector_depths=())
    recs = {r["id"]: r for r in map(json.loads, open(summary.results_path))}
    assert recs["q024"]["correct"] and recs["q024"]["tool_calls"] == 1 and recs["q024"]["tool_tokens"] == 100
    for qid in ("q047", "q050", "q097"):   # not answered: loud errors, even the unanswerable one
        assert recs[qid]["outcome"] == "loud-error" and NO_ANSWER in recs[qid]["reason"]
    assert summary.accuracy == {"bare": 0.25}


def test_score_groups_repeats_and_records_sessions(lake, qfile, tmp_path):
    """Three runs of one condition are its repeats (0, 1, 2 in the order given), each record keeps the agent
    session that answered it, and the report gives the pooled accuracy with its Wilson interval and the
    per-repeat accuracies (issue 49: fresh agents, repeats)."""
    from eval.harness.report import write_report
    from eval.harness.score import score_runs
    from eval.harness.stats import wilson

    vid = json.load(open(os.path.join(lake, "lake.json")))["latest_vid"]["enriched"]
    gold = {q.id: q.gold_sql for q in load_questions(qfile)}
    runs = []
    for i, right in enumerate((("q024",), ("q024", "q047"), ())):
        run = tmp_path / f"bare{i}"
        run.mkdir()
        (run / "run.json").write_text(json.dumps({
            "kind": "semcat-eval-serve", "condition": "bare", "history": "enriched", "vid": vid, "handle": f"pin:{vid}",
            "questions_file": qfile, "question_ids": list(IDS), "seed": 7, "scale": "small", "per_agent": 2}))
        (run / "answers.jsonl").write_text("".join(json.dumps({
            "id": q, "sql": gold[q] if q in right else "SELECT 1", "abstain_reason": None, "calls": 0, "seconds": 1.0,
            "session": 1 + n // 2}) + "\n" for n, q in enumerate(IDS)))
        (run / "calls.jsonl").write_text("")
        runs.append(str(run))
    out = str(tmp_path / "scored")
    summary = score_runs(lake, runs, out, detector_depths=())
    recs = [json.loads(line) for line in open(summary.results_path)]
    assert sorted({r["repeat"] for r in recs}) == [0, 1, 2] and len(recs) == 3 * len(IDS)
    assert {(r["id"], r["session"]) for r in recs} == {(q, 1 + n // 2) for n, q in enumerate(IDS)}
    assert summary.accuracy == {"bare": pytest.approx(3 / (3 * len(IDS)))}
    info = json.load(open(os.path.join(out, "run.json")))
    assert info["repeats"] == {"bare": 3} and [r["sessions"] for r in info["runs"]] == [2, 2, 2]
    paths = write_report(out)
    iv = json.load(open(paths["summary"]))["intervals"]["bare"]
    assert iv["repeats"] == 3 and iv["accuracy_ci"] == pytest.approx(list(wilson(3, 3 * len(IDS))))
    assert iv["accuracy_by_repeat"] == pytest.approx([1 / len(IDS), 2 / len(IDS), 0.0])
    assert "## Repeats, intervals and paired comparisons" in open(paths["report"]).read()
