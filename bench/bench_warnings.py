"""Warnings per answer: every warning of the tables read (as before issue 23) vs only those the
answer rests on, one per underlying change (`mcp_server.mcp.relevance`), in one run.

    .venv/bin/python -m bench.bench_warnings --lake DIR [--condition stale+detect]

DIR is a lake of `semcat eval build` (a copy of its catalog is used; the lake is not touched). The
calls are the public questions' gold SQL through `run_sql`, and `find_join_path` between the first
two tables of each gold statement, on a server at the condition's catalog with findings shown. For
each call: the number of warnings and the o200k tokens of the response (structured content plus
text, what a client receives), means, medians and totals. The filter changes what a response
carries, never what the detector finds: `semcat eval run` reports the detector's precision and
recall, unchanged by it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
from typing import Any

import anyio
from mcp import Client

import catalog_core as cc
from eval.harness.questions import load_questions
from eval.lake import D0
from mcp_server.mcp import context as tools_mod
from mcp_server.mcp import create_server
from mcp_server.mcp.bounds import count_tokens

CATALOG = {"stale+detect": "stale", "enriched": "enriched", "enriched+detect": "enriched"}


def _tokens(r: Any) -> int:
    text = json.dumps(r.structured_content, separators=(",", ":"), ensure_ascii=False)
    return count_tokens(text) + sum(count_tokens(c.text) for c in r.content)


async def _calls(server: Any, calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[int, int]]:
    out = []
    async with Client(server) as c:
        for name, args in calls:
            r = await c.call_tool(name, args)
            if r.is_error:
                continue
            out.append((len((r.structured_content or {}).get("warnings") or []), _tokens(r)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lake", required=True)
    ap.add_argument("--condition", default="stale+detect", choices=sorted(CATALOG))
    ap.add_argument("--questions", default=os.path.join("eval", "questions", "public.yaml"))
    a = ap.parse_args()
    qs = load_questions(a.questions)
    with tempfile.TemporaryDirectory() as d:
        shutil.copytree(os.path.join(a.lake, CATALOG[a.condition]), f"{d}/data")
        cat = cc.Catalog.open(f"{d}/data")
        calls: list[tuple[str, dict[str, Any]]] = []
        for q in qs:
            calls.append(("run_sql", {"sql": q.gold_sql, "limit": 5}))
            if len(q.tables) >= 2:
                calls.append(("find_join_path", {"from_table": q.tables[0], "to_table": q.tables[1]}))
        server = create_server(cat, now=D0.timestamp())
        after = anyio.run(_calls, server, calls)
        original = tools_mod.relevant
        tools_mod.relevant = lambda items, use: [w for _s, w in items]  # type: ignore[assignment]
        dedupe = tools_mod.dedupe
        tools_mod.dedupe = lambda items, merge: list(items)  # type: ignore[assignment]
        try:
            before = anyio.run(_calls, create_server(cat, now=D0.timestamp()), calls)
        finally:
            tools_mod.relevant, tools_mod.dedupe = original, dedupe
        cat.close()
    print(f"{len(calls)} calls ({len(qs)} gold statements through run_sql, join paths of their first two tables), "
          f"condition {a.condition}")
    print(f"{'':28} {'warnings/call':>14} {'median':>7} {'total':>7} {'tokens/call':>12} {'median':>7}")
    for label, rows in (("every warning (before)", before), ("what the answer rests on", after)):
        w = [x for x, _ in rows]
        t = [y for _, y in rows]
        print(f"{label:28} {sum(w) / len(w):14.2f} {statistics.median(w):7.1f} {sum(w):7d} "
              f"{sum(t) / len(t):12.1f} {statistics.median(t):7.1f}")
    bw, aw = sum(x for x, _ in before), sum(x for x, _ in after)
    print(f"warnings: {aw} of {bw} kept ({aw / bw:.0%}); tokens: "
          f"{sum(y for _, y in after) / sum(y for _, y in before):.0%} of before")


if __name__ == "__main__":
    main()
