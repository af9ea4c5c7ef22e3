"""A developer's check of the offline agent on the Acme lake: not the harness (`semcat eval run` is the
runner and has the real comparator); this one matches results as bags of rows, rounded, any column order.

    cp -r /work/lakes/small/enriched /work/lakes/small/stale /tmp/me-lake/     # RocksDB: one process per dir
    PYTHONPATH=. python -m bench.offline_agent_check eval/questions/public.yaml --cond enriched --lake /tmp/me-lake

Prints OK/BAD per question (gold and predicted rows when wrong) and the accuracy."""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import time
from typing import Any

import yaml
from mcp import Client

import catalog_core as cc
from eval.agents.loop import pin, run_episode
from eval.agents.offline import OfflineAgent
from eval.lake import D0
from mcp_server.mcp import create_server

COND: dict[str, tuple[str, dict[str, bool]]] = {
    "bare": ("enriched", {"hide_annotations": True, "hide_findings": True}),
    "enriched": ("enriched", {"hide_findings": True}),
    "stale": ("stale", {"hide_findings": True}),
    "stale+detect": ("stale", {}),
    "enriched+detect": ("enriched", {}),
}


def _norm(rows: list[Any], dec: int) -> list[tuple]:
    return [tuple(round(float(v), dec) if isinstance(v, (int, float)) and not isinstance(v, bool)
                  else (None if v is None else str(v)) for v in r) for r in rows]


def match(gold: list[Any], pred: list[Any], dec: int, ordered: bool) -> bool:
    """Each gold column matches a distinct predicted column, rows aligned (as a bag unless ordered)."""
    if len(gold) != len(pred):
        return False
    g, p = _norm(gold, dec), _norm(pred, dec)
    if not g:
        return True
    for perm in itertools.permutations(range(len(p[0])), len(g[0])):
        rows = [tuple(r[i] for i in perm) for r in p]
        if (g == rows) if ordered else (sorted(g, key=repr) == sorted(rows, key=repr)):
            return True
    return False


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("questions")
    ap.add_argument("--cond", default="enriched", choices=sorted(COND))
    ap.add_argument("--lake", required=True, help="a copy of a built lake (DIR/enriched, DIR/stale)")
    ap.add_argument("--only", default=None, help="comma-separated question ids")
    ap.add_argument("-v", action="store_true", help="print the SQL of correct answers too")
    a = ap.parse_args()
    qs = yaml.safe_load(open(a.questions))
    qs = qs["questions"] if isinstance(qs, dict) else qs
    history, opts = COND[a.cond]
    cat = cc.Catalog.open(os.path.join(a.lake, history))
    ok = n = 0
    t0 = time.time()
    server = create_server(cat, now=D0.timestamp(), hide_annotations=opts.get("hide_annotations", False),
                           hide_findings=opts.get("hide_findings", False))
    async with Client(server) as client:
        handle, vid = await pin(client)
        for q in qs:
            if a.only and q["id"] not in a.only.split(","):
                continue
            n += 1
            ep = await run_episode(client, OfflineAgent(), q["question"], snapshot=handle)
            if "unanswerable" in q.get("tags", []):
                good, why = ep.sql is None, f"answered: {ep.sql}"
            elif ep.sql is None:
                good, why = False, f"ABSTAIN {ep.abstain_reason}"
            else:
                try:
                    g = cc.run_sql(cat, q["gold_sql"], snapshot=vid, limit=10000).rows
                    p = cc.run_sql(cat, ep.sql, snapshot=vid, limit=10000).rows
                    good = match(g, p, q.get("decimals", 2), q.get("order_matters", False))
                    why = f"gold {g[:3]} pred {p[:3]}"
                except Exception as e:  # noqa: BLE001 - a failing SQL is a wrong answer
                    good, why = False, f"ERR {e}"[:300]
            ok += good
            print(f"{'OK ' if good else 'BAD'} {q['id']} [{','.join(q.get('tags', []))}] calls={ep.tool_calls} "
                  f"{q['question']}", flush=True)
            if not good or a.v:
                print("     ", why[:400], "\n      SQL:", (ep.sql or "")[:600], flush=True)
    print(f"{a.cond}: {ok}/{n} = {100 * ok / max(n, 1):.1f}% in {time.time() - t0:.0f}s")
    cat.close()


if __name__ == "__main__":
    asyncio.run(main())
