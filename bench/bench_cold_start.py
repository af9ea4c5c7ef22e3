"""Cold start of a stdio MCP session (issue 47, item 3): `semcat mcp --data DIR` spawned as an IDE does, timed
from the spawn to the `initialize` answer, then from that answer to the first `tools/call` answer
(`describe_table`), and a restart after `kill -9` of a running session (spawn to first answer).

    .venv/bin/python -m bench.bench_cold_start [--lake LAKE] [--runs 5] [--no-list] \\
        [--baseline OLD_TREE]   # e.g. OLD_TREE from `git archive f17d94e | tar -x -C OLD_TREE`

The lake is a copy (`cp -a`) of an eval lake directory (`semcat eval build`; its `enriched` catalog is
served), never the original. With --baseline, the same sessions also run the code of another source tree
(PYTHONPATH), alternating with this one so both see the same machine. Medians over --runs sessions of
wall time and of the session process's CPU time (user+sys, `os.wait4` after the kill: its CPU up to the
first answer), with the 1-minute load average (`os.getloadavg`) beside each: on a loaded machine the CPU
time is the honest figure. Targets: initialize <= 0.8 s, first answer <= 1 s after it, restart <= 2 s,
on a quiet machine. The first session of a run starts without the catalog's stored cards (DATA/cache/cards
removed: the first session ever on that catalog); the restarted one finds the card the killed one stored
(semantic/card_store.py), as a restart after `kill -9` does. Each session sends `tools/list` before its
first call, as clients do; the stored `tools/list` (DATA/cache/mcp, mcp_server/mcp/list_store.py), which
the warm-up session writes, is kept unless --no-list (then each first session is the first one after a
code change: its tools/list, and the call behind it, wait for the MCP SDK).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _send(p: subprocess.Popen[bytes], msg: dict[str, Any]) -> None:
    assert p.stdin is not None
    p.stdin.write((json.dumps(msg) + "\n").encode())
    p.stdin.flush()


def _answer(p: subprocess.Popen[bytes], want_id: int) -> dict[str, Any]:
    assert p.stdout is not None
    while True:
        line = p.stdout.readline()
        if not line:
            raise RuntimeError("semcat mcp closed its stdout")
        msg = json.loads(line)
        if msg.get("id") == want_id:
            return msg


def session(tree: str, data: str, table: str) -> tuple[subprocess.Popen[bytes], float, float]:
    """Spawn a session of `tree`'s code; (process, seconds to the initialize answer, seconds from it to the
    first answer)."""
    env = {**os.environ, "PYTHONPATH": tree}
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "mcp_server.cli", "mcp", "--data", data], env=env, cwd=tree,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    _send(p, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "bench", "version": "1"}}})
    _answer(p, 1)
    t1 = time.perf_counter()
    _send(p, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    _send(p, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})  # as clients do, before their first call
    _send(p, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
              "params": {"name": "describe_table", "arguments": {"table": table}}})
    got = _answer(p, 3)
    t2 = time.perf_counter()
    if "error" in got or got.get("result", {}).get("isError"):
        raise RuntimeError(f"describe_table failed: {str(got)[:300]}")
    return p, t1 - t0, t2 - t1


def kill(p: subprocess.Popen[bytes]) -> float:
    """kill -9 `p` (an IDE killed); the CPU seconds (user+sys) it used."""
    p.send_signal(signal.SIGKILL)
    _pid, _status, usage = os.wait4(p.pid, 0)
    p.returncode = -9
    return usage.ru_utime + usage.ru_stime


def one_run(tree: str, data: str, table: str, no_list: bool = False) -> dict[str, float]:
    load = os.getloadavg()[0]
    cache = os.path.join(data, "cache")
    # the first session on this catalog: no stored card; its tools/list is kept (DATA/cache/mcp, written by the
    # warm-up session: what every session after the first of this code and configuration finds) unless --no-list
    shutil.rmtree(cache if no_list else os.path.join(cache, "cards"), ignore_errors=True)
    p, t_init, t_first = session(tree, data, table)
    cpu = kill(p)
    t0 = time.perf_counter()
    q, _a, _b = session(tree, data, table)
    t_restart = time.perf_counter() - t0
    cpu_restart = kill(q)
    return {"init": t_init, "first": t_first, "session cpu": cpu, "restart": t_restart,
            "restart cpu": cpu_restart, "load": load}


def report(name: str, runs: list[dict[str, float]]) -> None:
    med = statistics.median
    loads = [r["load"] for r in runs]
    print(f"{name}: {len(runs)} runs, load average (1 min) {min(loads):.1f}-{max(loads):.1f}, cpus {os.cpu_count()}")
    for key, what in (("init", "initialize (spawn to answer), wall"),
                      ("first", "first answer after initialize (no stored card), wall"),
                      ("session cpu", "CPU of that session up to its first answer"),
                      ("restart", "restart after kill -9 (spawn to first answer), wall"),
                      ("restart cpu", "CPU of the restarted session up to its first answer")):
        xs = [r[key] for r in runs]
        print(f"  {what:55s} median {med(xs):6.2f} s  (min {min(xs):.2f}, max {max(xs):.2f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lake", default=os.environ.get("SEMCAT_EVAL_LAKE", "/work/lakes/acme"))
    ap.add_argument("--catalog", default="enriched")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--table", default="acme.core.fct_orders")
    ap.add_argument("--baseline", default=None, help="another source tree to time the same way (before)")
    ap.add_argument("--no-list", action="store_true",
                    help="remove all of DATA/cache before each first session, the stored tools/list included "
                         "(the first session after a code or configuration change)")
    args = ap.parse_args()
    trees = {"after (this tree)": ROOT}
    if args.baseline:
        trees = {f"before ({args.baseline})": os.path.abspath(args.baseline), **trees}
    tmp = tempfile.mkdtemp(prefix="semcat-cold-")
    try:
        lake = os.path.join(tmp, "lake")
        subprocess.run(["cp", "-a", args.lake, lake], check=True)
        data = os.path.join(lake, args.catalog)
        for tree in trees.values():  # a warm-up session each: .pyc files written, the page cache filled
            kill(session(tree, data, args.table)[0])
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
        for _ in range(args.runs):
            for name, tree in trees.items():  # alternating, so both see the same machine
                runs[name].append(one_run(tree, data, args.table, args.no_list))
        up = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
        for name, rs in runs.items():
            report(name, rs)
        print(f"uptime at the end: {up}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
