"""`semcat demo` (`make demo`): the agent tour. Five short sections, printed with rich:

1. the Acme lake built at --scale small into DIR (reused when DIR/lake.json matches, unless --fresh;
   `--lake` points at a lake built elsewhere);
2. a real MCP client session over stdio against `semcat mcp --data DIR/stale`: pin a snapshot,
   search, describe a look-alike table with its warnings, a join path, SQL at the pinned snapshot;
3. the staleness report of the stale catalog at d0, by reason, then a data steward accepting one
   suggestion (semantic.review, in a copy of the catalog: the lake stays as built) and the agent's next
   describe_table over MCP, without the warning;
4. the eval on a quick subset chosen by a rule (`semcat eval run --subset stale-events:K`: questions whose
   answer reads an annotation the stale history left stale), its headline table and each question's
   outcome per condition;
5. how to connect your own MCP client.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

from eval.lake import MANIFEST, build, data_dir
from eval.lake.calendar import D0, day

if TYPE_CHECKING:
    from mcp import StdioServerParameters
    from rich.console import Console

    from semantic.models import Finding

__all__ = ["run_tour", "SECTIONS", "SEARCH", "lake_matches"]

SEED, SCALE = 7, "small"
SEARCH = "net revenue by store yesterday"
ITEMS, STORES, ORDERS = "acme.core.fct_order_items", "acme.core.dim_store", "acme.core.fct_orders"
NOW_ISO = D0.strftime("%Y-%m-%dT%H:%M:%SZ")
SECTIONS = ("1. Build the Acme lake", "2. An agent's MCP session over stdio", "3. Staleness report of the catalog",
            "4. The eval on a quick subset", "5. Connect your own agent")
# a table whose warnings say it stopped loading or was replaced: the look-alike an agent should avoid
_LOOKALIKE_REASONS = {"not_loaded_since": 3, "freshness_sla_missed": 2, "deprecated_without_flag": 3}


class _Out:
    def __init__(self, console: Console | None = None) -> None:
        from rich.console import Console

        if console is None:
            console = Console(highlight=False)
            if not console.is_terminal:  # piped or in CI: wide enough for the tables
                console = Console(highlight=False, width=120)
        self.c = console
        self.t0 = time.time()

    def section(self, title: str, what: str) -> None:
        self.c.print(f"\n[bold cyan]== {title}[/]  [dim]({time.time() - self.t0:.0f}s)[/]")
        self.c.print(f"[dim]{what}[/]")

    def line(self, text: str, style: str | None = None) -> None:
        self.c.print(text, markup=False, style=style)

    def command(self, cmd: str) -> None:
        """A shell command a user can copy: one line, never wrapped."""
        self.c.print("$ " + cmd, markup=False, style="bold", soft_wrap=True)

    def call(self, tool: str, args: dict[str, Any]) -> None:
        shown = ", ".join(f"{k}={_trim(json.dumps(v), 60)}" for k, v in args.items())
        self.c.print(f"[bold]> {tool}[/]({shown})", highlight=False)

    def warn(self, w: dict[str, Any], indent: str = "    ") -> None:
        text = f"! [{w.get('kind')}{'/' + w['reason'] if w.get('reason') else ''}] {w.get('message', '')}"
        if w.get("suggestion"):
            text += f"  -> {w['suggestion']}"
        self.c.print(indent + _trim(text, 220), markup=False, style="yellow")

    def table(self, headers: list[str], rows: list[list[object]], first_whole: bool = True) -> None:
        from rich import box
        from rich.markup import escape
        from rich.table import Table

        t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
        for i, h in enumerate(headers):  # the first column names things (tables): never broken mid-name
            t.add_column(h, overflow="fold", no_wrap=i == 0 and first_whole)
        for r in rows:
            t.add_row(*[escape(str(v)) for v in r])
        self.c.print(t)


def _trim(text: str, n: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 3] + "..."


# ---------------------------------------------------------------------------------------------- 1. build
def lake_matches(root: str) -> bool:
    """DIR holds a finished build of this tour's lake (seed, scale and d0 as here)."""
    try:
        with open(os.path.join(root, "lake.json")) as fh:
            info = json.load(fh)
    except (OSError, ValueError):
        return False
    return (info.get("seed") == SEED and info.get("scale") == SCALE and info.get("d0") == D0.isoformat()
            and all(os.path.isdir(data_dir(root, h)) for h in ("enriched", "stale"))
            and os.path.exists(os.path.join(root, MANIFEST)))


def _lake(out: _Out, data: str, fresh: bool, lake: str | None) -> str:
    out.section(SECTIONS[0], "A PySpark ETL job writes 22 tables through the bridge, replays 4 months of history with "
                             "backdated commits and writes two annotation histories: enriched (kept up to date) "
                             "and stale (20% never updated).")
    if lake is not None:
        if not lake_matches(lake):
            raise ValueError(f"--lake {lake!r} is not a lake built by 'semcat eval build --scale small --seed 7' "
                             "(no matching lake.json, enriched/, stale/); build one or drop --lake")
        root = lake
        out.line(f"  using the lake at {os.path.abspath(lake)} (--lake)")
    elif lake_matches(data) and not fresh:
        root = data
        out.line(f"  reusing the lake in {os.path.abspath(data)} (lake.json matches; --fresh rebuilds it)")
    else:
        if os.path.exists(data) and not os.path.isdir(data):
            raise ValueError(f"--data {data!r} is a file; give a directory for the demo lake")
        root = data
        build(data, seed=SEED, scale=SCALE, log=lambda m: out.line("  " + m, style="dim"))
    with open(os.path.join(root, "lake.json")) as fh:
        info = json.load(fh)
    out.line(f"  {info['total_rows']:,} rows in {len(info['rows'])} tables; commits: enriched "
             f"{info['commits']['enriched']}, stale {info['commits']['stale']}; {info['stale_annotations']} of "
             f"{info['annotations_at_d119']} annotations left stale; built in {info['build_seconds']} s")
    return root


# ---------------------------------------------------------------------------------------------- 2. MCP
def _server_params(catalog_dir: str) -> StdioServerParameters:
    from mcp import StdioServerParameters

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    return StdioServerParameters(command=sys.executable,
                                 args=["-m", "mcp_server.cli", "mcp", "--data", catalog_dir, "--now", NOW_ISO],
                                 env={"PYTHONPATH": path})


def _pick_lookalike(hits: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The search hit an agent must not use as is: deprecated, or flagged as no longer loading."""
    best, best_score = None, 0
    for h in hits[1:]:
        score = 4 if h.get("deprecated") else 0
        score += sum(_LOOKALIKE_REASONS.get(w.get("reason") or "", 0) + (3 if w.get("kind") == "deprecated" else 0)
                     for w in h.get("warnings", []))
        if score > best_score:
            best, best_score = h, score
    return best


async def _session(out: _Out, catalog_dir: str) -> dict[str, Any]:
    from mcp import Client

    seen: dict[str, Any] = {}

    async def call(tool: str, args: dict[str, Any]) -> dict[str, Any]:
        out.call(tool, args)
        res = await client.call_tool(tool, args)
        if res.is_error:
            text = " ".join(getattr(c, "text", "") for c in res.content)
            raise RuntimeError(f"{tool} failed: {text}")
        return dict(res.structured_content or {})

    async with Client(_server_params(catalog_dir), read_timeout_seconds=120) as client:
        tools = await client.list_tools()
        out.line(f"  spawned: semcat mcp --data {catalog_dir} --now {NOW_ISO}  ({len(tools.tools)} tools)", "dim")

        pin = await call("pin_snapshot", {})
        snap = pin["snapshot"]
        handle = snap["handle"]
        seen["vid"] = snap["vid"]
        out.line(f"    pinned vid {snap['vid']} ({snap['time']}) as {handle}: every call below passes it back")

        found = await call("search_tables", {"query": SEARCH, "snapshot": handle, "limit": 6})
        hits = found["tables"]
        out.table(["table", "freshness", "description", "warnings"],
                  [[h["name"], h.get("freshness") or "", _trim(h.get("description") or "", 60),
                    ", ".join(sorted({w.get("reason") or w["kind"] for w in h.get("warnings", [])}))]
                   for h in hits])
        seen["search"] = [h["name"] for h in hits]

        look = _pick_lookalike(hits)
        if look is not None:
            desc = await call("describe_table", {"table": look["name"], "snapshot": handle})
            out.line(f"    {desc['table']}: {_trim(desc.get('description') or '', 100)}")
            fr = desc.get("freshness") or {}
            out.line(f"    status {desc.get('status')}; last data load {fr.get('last_data_commit_time')} "
                     f"(SLA {fr.get('sla')}, {fr.get('status')}); {desc['stats']['row_count']:,} rows")
            for w in desc.get("warnings", []):
                out.warn(w)
            seen["lookalike"] = desc["table"]
            seen["lookalike_warnings"] = [w.get("reason") or w["kind"] for w in desc.get("warnings", [])]

        join = await call("find_join_path", {"from_table": ITEMS, "to_table": STORES, "snapshot": handle})
        for hop in join["hops"]:
            on = " and ".join(f"{a} = {b}" for a, b in hop["on"])
            out.line(f"    {hop['from_table']} -> {hop['to_table']} on {on} ({hop['cardinality']}"
                     f"{', canonical' if hop.get('canonical') else ''})")
        for w in join.get("warnings", []):
            out.warn(w)

        yesterday = day(1).isoformat()
        sql = (f"SELECT dim_store.store_name, ROUND(SUM(fct_order_items.net_line_cents) / 100.0, 2) AS net_revenue_usd "
               f"{join['sql']} WHERE fct_orders.order_date_local = DATE '{yesterday}' "
               f"AND fct_orders.status <> 'cancelled' GROUP BY 1 ORDER BY 2 DESC LIMIT 5")
        res = await call("run_sql", {"sql": sql, "snapshot": handle, "limit": 5})
        out.line(f"    read {', '.join(res['tables'])} at vid {res['snapshot']['vid']} ({res['snapshot']['time']})")
        out.table([c["name"] for c in res["columns"]], res["rows"])
        for w in res.get("warnings", []):
            out.warn(w)
        seen["sql_vid"] = res["snapshot"]["vid"]
    return seen


# ---------------------------------------------------------------------------------------------- 3. staleness
def _staleness(out: _Out, catalog_dir: str) -> dict[str, int]:
    import catalog_core as cc
    import semantic as sm

    cat = cc.Catalog.open(catalog_dir)
    try:
        found = sm.staleness(cat, snapshot="d0", now=D0.timestamp())
    finally:
        cat.close()
    by_reason: dict[str, list[Finding]] = {}
    for f in found:
        by_reason.setdefault(f.reason, []).append(f)
    status = Counter(f.status for f in found)
    out.line(f"  semantic.staleness at d0 ({NOW_ISO}) over {catalog_dir}: {len(found)} findings "
             f"({status.get('stale', 0)} stale, {status.get('suspect', 0)} suspect) in {len(by_reason)} reasons")
    rows: list[list[object]] = []
    examples: list[Finding] = []
    for reason, fs in sorted(by_reason.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        targets = sorted({".".join(f.target.split(".")[:3]) for f in fs})
        rows.append([reason, len(fs), "/".join(sorted({f.status for f in fs})),
                     _trim(", ".join(targets[:2]) + (f" (+{len(targets) - 2})" if len(targets) > 2 else ""), 70)])
        ex = next((f for f in fs if f.suggestion), None)
        if ex is not None and len(examples) < 4:
            examples.append(ex)
    out.table(["reason", "findings", "status", "where"], rows)
    for f in examples:
        out.line("  " + _trim(f"{f.reason} on {f.target}: {f.message}", 200))
        out.line("      " + _trim(f"suggestion: {f.suggestion}", 200), "green")
    return {r: len(fs) for r, fs in by_reason.items()}


REVIEW_TABLE = "acme.core.fct_loyalty_events"


def _review(out: _Out, catalog_dir: str, data: str) -> dict[str, Any]:
    """Accept the suggestion of the one finding of REVIEW_TABLE in a copy of the stale catalog (the
    lake is left as built: the eval and the tests read it), then the agent's describe_table."""
    import catalog_core as cc
    import semantic as sm

    copy = os.path.join(data, "review-stale")
    lake = cc.lake_root(catalog_dir)
    if lake is not None and os.path.abspath(data) != lake:
        # the catalog names the lake's files relative to the lake (../../warehouse/...): a copy outside the
        # lake reads them through DATA/review/warehouse, a link to the lake's (accept writes no data file)
        copy = os.path.join(data, "review", "stale")
        link = os.path.join(data, "review", "warehouse")
        os.makedirs(os.path.dirname(copy), exist_ok=True)
        if not os.path.islink(link):
            os.symlink(os.path.join(lake, "warehouse"), link)
    if os.path.exists(copy):
        shutil.rmtree(copy)
    shutil.copytree(catalog_dir, copy)
    cat = cc.Catalog.open(copy)
    try:
        [item] = [i for i in sm.review_items(cat, REVIEW_TABLE, now=D0.timestamp()).items if i.acceptable][:1]
        out.line(f"  a data steward reviews the inbox (semcat review list --data {copy} --now {NOW_ISO}) and accepts "
                 f"one suggestion:")
        note = "dim_customer keeps versions since February"
        out.command(f"semcat review accept {item.id} --data {copy} --now {NOW_ISO} --author data-steward "
                    f"--note {shlex.quote(note)}")
        out.line("    " + _trim(f"{item.reason} on {item.annotation}: {item.message}", 200), "yellow")
        vid = sm.accept(cat, item, author="data-steward", note=note, now=D0.timestamp())
        out.line(f"    wrote {item.table}:{item.proposed_key} = {_trim(json.dumps(item.proposed), 140)} at vid {vid} "
                 "(source human, basis the current state)", "green")
    finally:
        cat.close()

    async def agent() -> dict[str, Any]:
        from mcp import Client

        async with Client(_server_params(copy), read_timeout_seconds=120) as client:
            out.call("describe_table", {"table": REVIEW_TABLE})
            res = await client.call_tool("describe_table", {"table": REVIEW_TABLE})
            return dict(res.structured_content or {})
    desc = asyncio.run(agent())
    rel: dict[str, Any] = next((r for r in desc.get("relationships", []) if r.get("name") == "customer"), {})
    out.line(f"    status {desc.get('status')}; relationship customer -> {rel.get('to')} on customer_id, condition "
             f"{rel.get('condition')} ({rel.get('status')}); warnings: {len(desc.get('warnings', []))}")
    for w in desc.get("warnings", []):
        out.warn(w)
    return {"item": item.id, "reason": item.reason, "vid": vid, "status": desc.get("status"),
            "warnings": [w.get("reason") or w.get("kind") for w in desc.get("warnings", [])]}


# ---------------------------------------------------------------------------------------------- 4. eval
EVAL_TIMEOUT_S = 1800.0  # the quick subset's runner (a few minutes idle; CI runs it beside the default tier); past it the tour says so
# the quick subset: `--subset stale-events:K` (eval.harness.touches.stale_event_subset), the first K public
# questions reading each detectable stale event's column, metric or relationship annotations: chosen by a
# rule over the manifest, never by outcome. K=2 picks 15 questions on the seed-7 small lake, whose 60 episodes
# take about the CPU time of the 48 of the 12 first questions the tour ran before (K=1: 9 questions, about half).
SUBSET_K = 2
CONDITIONS = ("bare", "enriched", "stale", "stale+detect")


def run_group(cmd: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    """Run `cmd` in its own process group, its output captured. On a timeout (TimeoutExpired) or any
    interruption the whole group is killed first: the runner and the MCP servers it started all stop,
    and none keeps the lake copy open for the next command."""
    child = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        stdout, stderr = child.communicate(timeout=timeout)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        raise
    return subprocess.CompletedProcess(cmd, child.returncode, stdout, stderr)


def _eval(out: _Out, lake: str, data: str) -> str:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    questions = os.path.join(root, "eval", "questions", "public.yaml")
    res_dir = os.path.join(data, "eval")
    args = ["eval", "run", "--data", lake, "--questions", questions, "--conditions", ",".join(CONDITIONS),
            "--agent", "offline", "--out", res_dir, "--subset", f"stale-events:{SUBSET_K}", "--no-detector"]
    cmd = [sys.executable, "-m", "mcp_server.cli", *args, "--no-progress"]
    shown = [a if a != questions else "eval/questions/public.yaml" for a in args]
    out.command("semcat " + " ".join(shlex.quote(a) for a in shown))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    try:
        proc = run_group(cmd, env, EVAL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        out.line(f"  semcat eval run did not finish within {EVAL_TIMEOUT_S:g} s (a few minutes on an idle 2-core "
                 "machine; this one is busy) and was stopped; run the command above yourself to see its table",
                 "red")
        return "failed"
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-8:])
        out.line(f"  semcat eval run failed (exit {proc.returncode}):\n{tail}", "red")
        return "failed"
    out.line(proc.stdout.rstrip() or "  (the runner printed no table)")
    _per_question(out, res_dir)
    return "ok"


def _per_question(out: _Out, res_dir: str) -> None:
    """Each subset question's outcome per condition (results.jsonl) and the drift events that picked it
    (run.json's subset trace): where stale annotations cost an answer and whether detection gave it back."""
    try:
        with open(os.path.join(res_dir, "results.jsonl"), encoding="utf-8") as fh:
            recs = [json.loads(line) for line in fh if line.strip()]
        with open(os.path.join(res_dir, "run.json"), encoding="utf-8") as fh:
            subset = json.load(fh).get("subset") or {}
    except (OSError, ValueError):
        return
    picked_by: dict[str, list[str]] = {}
    for ev in subset.get("events", []):
        for qid in ev["questions"]:
            picked_by.setdefault(qid, []).append(f"{ev['table'].rsplit('.', 1)[-1]} {ev['kind']} ({ev['change']})")
    by_q: dict[str, dict[str, str]] = {}
    for r in recs:
        by_q.setdefault(r["id"], {})[r["condition"]] = r["outcome"]
    rows: list[list[object]] = [[qid, *[q.get(c, "") for c in CONDITIONS], ", ".join(picked_by.get(qid, []))]
                                for qid, q in by_q.items()]
    out.line("  per question: its outcome by condition, and the drift events that picked it")
    out.table(["question", *CONDITIONS, "picked for (stale event)"], rows)


# ---------------------------------------------------------------------------------------------- 5. connect
def _connect(out: _Out, lake: str) -> None:
    stale = data_dir(lake, "stale")
    out.line(f"  semcat mcp --data {stale} --now {NOW_ISO}")
    out.line("  (--now: the lake is frozen at its evaluation time d0; drop it for a live catalog.) An MCP client "
             "config (stdio):")
    exe = os.path.join(os.path.dirname(sys.executable), "semcat")
    cfg = {"mcpServers": {"semcat": {"command": exe if os.path.exists(exe) else "semcat",
                                     "args": ["mcp", "--data", os.path.abspath(stale), "--now", NOW_ISO]}}}
    out.line(json.dumps(cfg, indent=2))


def run_tour(data: str = "demo-data", fresh: bool = False, lake: str | None = None, console: Console | None = None,
             run_eval: bool = True) -> dict[str, Any]:
    """Run the tour; returns what it showed (for tests)."""
    out = _Out(console)
    root = _lake(out, data, fresh, lake)
    stale = data_dir(root, "stale")
    out.section(SECTIONS[1], "An agent's view: the stale catalog served by `semcat mcp` in a child process, "
                             "spoken to by the official MCP client over stdin/stdout.")
    seen = asyncio.run(_session(out, stale))
    out.section(SECTIONS[2], "Findings computed from the snapshot history: which annotations stopped being true, "
                             "why, and what to do.")
    seen["staleness"] = _staleness(out, stale)
    seen["review"] = _review(out, stale, data)
    out.section(SECTIONS[3], "Public questions chosen by a rule (for each drift event of the stale manifest, the first "
                             f"{SUBSET_K} whose answer reads an annotation it made stale) x 4 conditions, with the "
                             "offline agent over the real MCP client.")
    seen["eval"] = _eval(out, root, data) if run_eval else "skipped"
    out.section(SECTIONS[4], "Serve the same catalog to Claude Desktop, an IDE or your own agent:")
    _connect(out, root)
    out.line(f"\n  tour done in {time.time() - out.t0:.0f} s", "dim")
    return seen
