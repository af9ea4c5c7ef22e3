"""The cost of grant checks (issue 48 item 4): warm p50 of run_sql and describe_table with and without
grants, side by side, target <= 5% added.

    .venv/bin/python -m bench.bench_grants [--calls N] [--rounds R]
    .venv/bin/python -m bench.bench_grants --calls 100 --rounds 5 --baseline ../main-checkout

With `--baseline DIR` this tree and DIR's (e.g. `git worktree add ../main-checkout main`) are measured
in the same run, one worker process each, rounds alternating, and each condition's p50 is printed for
both with the delta.

The lake is eval/fixtures/mcplake.py (5 core tables, a 300-column table, 24 small tables). The tools'
own functions (`data.sql_rows`, `discovery.describe`) run on one ToolContext, as a tool call runs them,
under four callers:

- `today`: no caller bound (the in-process API, stdio's user): the path every call took before grants,
  plus one ContextVar read;
- `token`: a token's principal on a catalog that holds no grant (the check finds none);
- `granted`: that principal under grants (select on the catalog to its group, and 60 other grants on
  other tables to other principals), so every table is checked;
- `admin`: an admin token under the same grants (not limited).

Two catalogs (the same lake, one with grants) are measured one after the other, each condition
against `today` on the same catalog (switching catalogs between calls costs the SQL worker more than
anything measured here).

Each round calls every condition N times (after one warm-up call) in turns, call by call, so machine
load falls on all of them alike; the p50 of each is the median over rounds of the rounds' p50s. Printed:
p50 per tool and condition, and the overhead of each against `today`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import catalog_core as cc
from eval.fixtures import mcplake
from eval.fixtures.mcplake import FCT
from mcp_server.http.auth import Principal
from mcp_server.mcp import create_server
from mcp_server.mcp.auth import CALLER
from mcp_server.mcp.data import sql_rows
from mcp_server.mcp.discovery import describe
from semantic import grants as G

TARGET = 0.05
SQL = f"SELECT * FROM {FCT} LIMIT 20"
BOB = Principal("bob", "read", "agent", ("analysts",))
ADMIN = Principal("ops", "write", "human", admin=True)


def interleaved(fns: dict[str, Callable[[], Any]], n: int) -> dict[str, float]:
    """The p50 of each of `fns` over `n` calls, called in turns (the first of each turn rotating), so
    load and caches fall on all alike."""
    names = list(fns)
    for fn in fns.values():
        fn()  # warm
    times: dict[str, list[float]] = {k: [] for k in names}
    for i in range(n):
        for k in names[i % len(names):] + names[:i % len(names)]:
            t0 = time.perf_counter()
            fns[k]()
            times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def as_caller(who: Principal | None, fn: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        bound = CALLER.set(who)
        try:
            return fn()
        finally:
            CALLER.reset(bound)
    return run


def setup(d: str) -> tuple[list[Any], dict[tuple[str, str], tuple[Any, Principal | None, int]],
                            dict[str, Callable[[Any, int], Callable[[], Any]]], str]:
    """The two catalogs (in `d`), the conditions, the tools, and a line describing them."""
    plain = cc.Catalog.open(f"{d}/plain")
    mcplake.build(plain, f"{d}/files")
    granted = cc.Catalog.open(f"{d}/granted")
    mcplake.build(granted, f"{d}/files2")
    tables = sorted(o.path for o in granted.query(cc.lake.tables_query()))
    catalog = tables[0].strip("/").split("/")[0]
    G.grant(granted, "select", catalog, "group:analysts", author="bench")
    for i, path in enumerate(tables * 3):
        if i >= 60:
            break
        G.grant(granted, ("describe", "select")[i % 2], ".".join(path.strip("/").split("/")),
                f"user:other{i}", author="bench")
    s_plain = create_server(plain).tool_context  # type: ignore[attr-defined]
    s_granted = create_server(granted).tool_context  # type: ignore[attr-defined]
    vid_p, vid_g = plain.latest_vid, granted.latest_vid
    what = f"lake: {len(tables)} tables; {len(G.list_grants(granted))} grant objects"
    # (catalog group, condition) -> (tool context, caller, vid); conditions compared within a group
    conditions: dict[tuple[str, str], tuple[Any, Principal | None, int]] = {
        ("no grant in the catalog", "today"): (s_plain, None, vid_p),
        ("no grant in the catalog", "token"): (s_plain, BOB, vid_p),
        ("61 grants", "today"): (s_granted, None, vid_g),
        ("61 grants", "granted"): (s_granted, BOB, vid_g),
        ("61 grants", "admin"): (s_granted, ADMIN, vid_g)}
    tools: dict[str, Callable[[Any, int], Callable[[], Any]]] = {
        "run_sql": lambda s, v: lambda: sql_rows(s, SQL, v, 20),
        "describe_table": lambda s, v: lambda: describe(s, FCT, "summary", None, v, None, None),
    }
    return [plain, granted], conditions, tools, what


def one_round(conditions: dict[tuple[str, str], tuple[Any, Principal | None, int]],
              tools: dict[str, Callable[[Any, int], Callable[[], Any]]], calls: int) -> dict[tuple[str, str, str], float]:
    """One round: the p50 of every (tool, catalog group, condition)."""
    groups = list(dict.fromkeys(g for g, _c in conditions))
    out: dict[tuple[str, str, str], float] = {}
    for tool, make in tools.items():
        for group in groups:  # one catalog at a time: its SQL worker and caches stay warm
            fns = {c: as_caller(who, make(s, vid)) for (g, c), (s, who, vid) in conditions.items() if g == group}
            for cond, t in interleaved(fns, calls).items():
                out[(tool, group, cond)] = t
    return out


def worker(calls: int) -> None:
    """`--worker`: build the catalogs, say `ready`, then answer each `round` line on stdin with one
    round's p50s as a JSON line (the parent, `--baseline`, alternates rounds between two trees)."""
    import json

    with tempfile.TemporaryDirectory() as d:
        cats, conditions, tools, what = setup(d)
        print(json.dumps({"ready": what}), flush=True)
        for line in sys.stdin:
            if line.strip() != "round":
                break
            got = one_round(conditions, tools, calls)
            print(json.dumps([[*k, v] for k, v in got.items()]), flush=True)
        for c in cats:
            c.close()


def against(baseline: str, calls: int, rounds: int) -> None:
    """`--baseline DIR`: this tree and the tree in DIR (e.g. a checkout of main) measured in the same
    run, one worker process each, rounds alternating between them (the first rotating), so machine
    load falls on both alike; printed: each tree's p50 and the delta of this tree against DIR's."""
    import json
    import os
    import subprocess

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = {"branch": here, "baseline": os.path.abspath(baseline)}
    procs = {}
    for name, tree in trees.items():
        env = {**os.environ, "PYTHONPATH": tree}
        # this file by path: its code measures, the tree's packages (catalog_core, mcp_server, ...) are measured
        procs[name] = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", "--calls", str(calls)],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=tree)
    for name, p in procs.items():
        assert p.stdout is not None
        print(f"{name} ({trees[name]}): {json.loads(p.stdout.readline())['ready']}")
    runs: dict[tuple[str, str, str, str], list[float]] = {}
    order = list(procs)
    for r in range(rounds):
        for name in order[r % 2:] + order[:r % 2]:
            p = procs[name]
            assert p.stdin is not None and p.stdout is not None
            p.stdin.write("round\n")
            p.stdin.flush()
            for tool, group, cond, v in json.loads(p.stdout.readline()):
                runs.setdefault((name, tool, group, cond), []).append(v)
    for p in procs.values():
        assert p.stdin is not None
        p.stdin.close()
        p.wait(timeout=120)
    print(f"{calls} calls x {rounds} rounds per condition; p50 (median of the rounds' p50s), branch vs baseline")
    for (name, tool, group, cond) in sorted(runs):
        if name != "branch":
            continue
        b = statistics.median(runs[("branch", tool, group, cond)])
        m = statistics.median(runs[("baseline", tool, group, cond)])
        print(f"{tool:<15} {group:<24} {cond:<8} branch {b * 1e3:7.3f} ms  baseline {m * 1e3:7.3f} ms  "
              f"({b / m - 1:+.1%})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=200, help="calls per condition and round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--baseline", default=None, help="a checkout of another tree (e.g. main) to measure in the same "
                    "run, rounds alternating")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        return worker(a.calls)
    if a.baseline:
        return against(a.baseline, a.calls, a.rounds)
    with tempfile.TemporaryDirectory() as d:
        cats, conditions, tools, what = setup(d)
        print(f"{what}; {a.calls} calls x {a.rounds} rounds per condition")
        groups = list(dict.fromkeys(g for g, _c in conditions))
        runs: dict[tuple[str, str, str], list[float]] = {}
        for _ in range(a.rounds):
            for k, t in one_round(conditions, tools, a.calls).items():
                runs.setdefault(k, []).append(t)
        failed = False
        for tool in tools:
            for group in groups:
                base = statistics.median(runs[(tool, group, "today")])
                line = [f"{tool:<15} {group:<24}"]
                for (g, cond) in conditions:
                    if g != group:
                        continue
                    v = statistics.median(runs[(tool, group, cond)])
                    over = v / base - 1
                    line.append(f"{cond}: {v * 1e3:7.3f} ms" + ("" if cond == "today" else f" ({over:+.1%})"))
                    failed |= cond in ("granted", "token") and over > TARGET
                print("  ".join(line))
        for c in cats:
            c.close()
    print(f"target: token and granted <= today + {TARGET:.0%}: {'FAILED' if failed else 'met'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
