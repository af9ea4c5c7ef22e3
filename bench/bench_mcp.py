"""MCP tools: latency per tool in memory and over streamable HTTP, and tokens per response.

    .venv/bin/python -m bench.bench_mcp [--quick] [--calls N] [--lake DIR]

The lake is eval/fixtures/mcplake.py (5 core tables, a 300-column table, 24 small tables, a
semantic layer with findings), or with `--lake DIR` the Acme demo lake of `semcat eval build --data DIR`
(a copy of its stale-history catalog, so findings show; the original is not touched). Each tool gets one typical call with its default limits, at a
pinned snapshot, repeated N times after one warm-up; p50 and p99 are printed per tool. Over HTTP
the server runs in this process (a uvicorn thread), so client and server share one GIL.

Tokens: the structured content (compact JSON) plus the text content (the summary line followed by
the same compact JSON, `bounds.render`) of each typical call, i.e. everything a client receives
(`tokens`), and the payload alone (`payload`: the structured content's compact JSON, the one copy a
model reads whichever of the two its client forwards), counted with the o200k_base vocabulary of
`bpe-openai` (bundled, no download). The largest response is named; the run fails if any default
response's payload exceeds 4,000 tokens.

At maximum limits: every paged tool called once with its largest allowed `limit`, side by side on
a server without a size bound (`token_budget` 10^9, what the tools answered before the budget) and
on the default server (8,000 tokens): characters and tokens of each response, and how many items
the budget kept of those the count limit allowed. The run fails if a bounded response exceeds the
budget.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any

import anyio
from mcp import Client

import catalog_core as cc
from eval.fixtures import mcplake
from eval.fixtures.mcplake import DIM, FCT
from eval.lake import D0
from mcp_server.http.server import default_plugins, serve_in_thread
from mcp_server.mcp import create_server
from mcp_server.mcp.bounds import TOKEN_BUDGET
from mcp_server.mcp.context import LIMITS

BUDGET = 4000  # payload tokens of a default response (sent twice: structured content and text)


# the tables and metric of a typical call on each lake: (fact, dimension, widest table, metric, dimension column)
FIXTURE = (FCT, DIM, mcplake.WIDE, "revenue", "dim_store.region")
ACME = ("acme.core.fct_orders", "acme.core.dim_store", "acme.core.dim_date", "net_revenue", "dim_store.region")
TARGETS = FIXTURE


def calls(handle: str) -> list[tuple[str, dict[str, Any]]]:
    s = {"snapshot": handle}
    FCT, DIM, WIDE, METRIC, GROUP = TARGETS
    return [
        ("pin_snapshot", {}),
        ("search_tables", {"query": "orders", **s}),
        ("describe_table", {"table": FCT, **s}),
        ("describe_table", {"table": WIDE, **s}),
        ("describe_table", {"table": FCT, "detail": "full", **s}),
        ("get_column_values", {"table": FCT, "column": "status", **s}),
        ("find_join_path", {"from_table": FCT, "to_table": DIM, **s}),
        ("list_metrics", s),
        ("query_metric", {"metric": METRIC, "group_by": [GROUP], **s}),
        ("query_catalog", {"query": '/[obj_id = "acme"]/*/[obj_type = "table"]', **s}),
        ("list_snapshots", s),
        ("diff_snapshots", {"from_snapshot": 3, "to_snapshot": handle}),  # no `snapshot` argument
        ("check_staleness", s),
        ("run_sql", {"sql": f"SELECT * FROM {FCT}", **s}),
        ("annotate", {"table": DIM, "fields": {"owner": "stores-team"}}),
    ]


def max_calls(handle: str) -> list[tuple[str, dict[str, Any], str]]:
    """(tool, arguments at its largest limit, the paged list) for every tool with a list."""
    s = {"snapshot": handle}
    FCT, DIM, WIDE, METRIC, GROUP = TARGETS
    L = {k: v[1] for k, v in LIMITS.items()}
    return [
        ("search_tables", {"query": "", "limit": L["search_tables"], **s}, "tables"),
        ("describe_table", {"table": WIDE, "detail": "full", "limit": L["describe_table"], **s}, "columns"),
        ("get_column_values", {"table": FCT, "column": "order_id", "limit": L["get_column_values"], **s}, "values"),
        ("list_metrics", {"limit": L["list_metrics"], **s}, "metrics"),
        ("query_metric", {"metric": METRIC, "group_by": [GROUP], "grain": "day", "limit": L["query_metric"], **s},
         "rows"),
        ("query_catalog", {"query": "/*/*/*/*", "limit": L["query_catalog"], **s}, "objects"),
        ("list_snapshots", {"limit": L["list_snapshots"], **s}, "commits"),
        ("diff_snapshots", {"from_snapshot": 0, "to_snapshot": handle, "limit": L["diff_snapshots"]}, "changes"),
        ("check_staleness", {"limit": L["check_staleness"], **s}, "findings"),
        ("run_sql", {"sql": f"SELECT * FROM {FCT}", "limit": L["run_sql"], **s}, "rows"),
    ]


def at_max_limits(cat: Any, enc: Any, now: float | None) -> list[str]:
    """Print the side-by-side table; returns the tools whose bounded response is over the budget."""
    servers = {"unbounded": create_server(cat, now=now, token_budget=10**9), "budget": create_server(cat, now=now)}

    async def go(server: Any) -> dict[str, Any]:
        async with Client(server) as c:
            pin = await c.call_tool("pin_snapshot", {})
            handle = pin.structured_content["snapshot"]["handle"]
            out = {}
            for name, args, field in max_calls(handle):
                r = await c.call_tool(name, args)
                if r.is_error:
                    raise SystemExit(f"{name} at its maximum limit failed: {r.content[0].text}")
                out[name] = (r, len((r.structured_content or {}).get(field) or []))
            return out

    got = {k: anyio.run(go, srv) for k, srv in servers.items()}
    print(f"\nat maximum limits: {'tool':18} {'limit':>5} {'chars':>9} {'tokens':>7} {'items':>5}   "
          f"{'chars':>7} {'tokens':>7} {'items':>5}  (unbounded | budget {TOKEN_BUDGET})")
    over = []
    for name, args, _field in max_calls("-"):
        (ru, nu), (rb, nb) = got["unbounded"][name], got["budget"][name]
        cu, cb = chars_of(ru), chars_of(rb)
        tu, tb = tokens_of(ru, enc), tokens_of(rb, enc)
        print(f"{'':19}{name:18} {args['limit']:5d} {cu:9,d} {tu:7,d} {nu:5d}   {cb:7,d} {tb:7,d} {nb:5d}")
        if tb > TOKEN_BUDGET:
            over.append(name)
    return over


def label(name: str, args: dict[str, Any]) -> str:
    if name == "describe_table":
        kind = "wide" if args["table"] == TARGETS[2] else args["table"].rsplit(".", 1)[-1]
        return f"describe_table({kind}{', full' if args.get('detail') == 'full' else ''})"
    return name


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


async def measure(client: Client, n: int) -> tuple[dict[str, list[float]], dict[str, Any]]:
    pin = await client.call_tool("pin_snapshot", {})
    handle = pin.structured_content["snapshot"]["handle"]
    times: dict[str, list[float]] = {}
    results: dict[str, Any] = {}
    for name, args in calls(handle):
        key = label(name, args)
        r = await client.call_tool(name, args)  # warm-up
        if r.is_error:
            raise SystemExit(f"{key} failed: {r.content[0].text}")
        results[key] = r
        for _ in range(n):
            t0 = time.perf_counter()
            await client.call_tool(name, args)
            times.setdefault(key, []).append((time.perf_counter() - t0) * 1000)
    return times, results


def chars_of(result: Any) -> int:
    text = json.dumps(result.structured_content, separators=(",", ":"), ensure_ascii=False)
    return len(text) + sum(len(c.text) for c in result.content)


def payload_of(result: Any, enc: Any) -> int:
    return len(enc.encode(json.dumps(result.structured_content, separators=(",", ":"), ensure_ascii=False)))


def tokens_of(result: Any, enc: Any) -> int:
    text = json.dumps(result.structured_content, separators=(",", ":"), ensure_ascii=False)
    return len(enc.encode(text)) + sum(len(enc.encode(c.text)) for c in result.content)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="20 calls per tool instead of 200")
    ap.add_argument("--calls", type=int, default=None)
    ap.add_argument("--lake", default=None, help="an Acme lake built by `semcat eval build --data DIR`")
    a = ap.parse_args()
    global TARGETS
    n = a.calls or (20 if a.quick else 200)
    from bpe_openai import get_encoding

    enc = get_encoding("o200k_base")
    with tempfile.TemporaryDirectory() as d:
        if a.lake:
            TARGETS = ACME
            shutil.copytree(a.lake, f"{d}/lake", symlinks=True)  # whole: the catalogs name the files beside them
            cat = cc.Catalog.open(f"{d}/lake/stale")
        else:
            cat = cc.Catalog.open(f"{d}/data")
            mcplake.build(cat, f"{d}/files")
        print(f"lake: {len(cat.query(cc.lake.tables_query()))} tables, vid {cat.latest_vid}; {n} calls per tool")
        server = create_server(cat, now=D0.timestamp() if a.lake else None)

        async def in_memory() -> Any:
            async with Client(server) as c:
                tools = (await c.list_tools()).tools
                return (*await measure(c, n), tools)
        mem, results, tools = anyio.run(in_memory)
        over_budget = at_max_limits(cat, enc, D0.timestamp() if a.lake else None)
        with serve_in_thread(cat, plugins=default_plugins()) as h:
            async def over_http() -> Any:
                async with Client(h.url + "/mcp") as c:
                    return await measure(c, n)
            http, _ = anyio.run(over_http)
        cat.close()
    print(f"\n{'tool call':34} {'mem p50':>8} {'mem p99':>8} {'http p50':>9} {'http p99':>9} {'tokens':>7} "
          f"{'payload':>7}  (ms)")
    toks, loads = {}, {}
    for key in mem:
        toks[key], loads[key] = tokens_of(results[key], enc), payload_of(results[key], enc)
        print(f"{key:34} {statistics.median(mem[key]):8.2f} {pct(mem[key], 99):8.2f} "
              f"{statistics.median(http[key]):9.2f} {pct(http[key], 99):9.2f} {toks[key]:7d} {loads[key]:7d}")
    tool_defs = json.dumps([t.model_dump(mode="json", exclude_none=True) for t in tools], separators=(",", ":"))
    print(f"\ntools/list: {len(tools)} tools, {len(enc.encode(tool_defs))} tokens")
    big = max(toks, key=lambda k: toks[k])
    print(f"largest default response: {big}, {toks[big]} tokens sent, payload {loads[big]} (budget {BUDGET})")
    over = [k for k, v in loads.items() if v > BUDGET]
    if over:
        print(f"OVER BUDGET: {', '.join(over)}")
    if over_budget:
        print(f"OVER THE RESPONSE TOKEN BUDGET AT MAXIMUM LIMITS: {', '.join(over_budget)}")
    if over or over_budget:
        sys.exit(1)


if __name__ == "__main__":
    main()
