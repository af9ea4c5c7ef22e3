"""Cold start of a stdio MCP session (issue 47, item 3): `semcat mcp --data DIR` spawned as an IDE does, timed
from the spawn to the `initialize` answer, then from that answer to the first `tools/call` answer
(`describe_table`), and a restart after `kill -9` of a running session (spawn to first answer).

    .venv/bin/python -m bench.bench_cold_start [--lake /work/lakes/acme] [--runs 5] [--table acme.core.fct_orders]

The lake is a copy (`cp -a`) of an eval lake directory (`semcat eval build`; its `enriched` catalog is
served), never the original. Medians over --runs sessions, with the machine's load average beside
them (`os.getloadavg`). Targets: initialize <= 0.8 s, first answer <= 1 s after it, restart <= 2 s, on a
quiet machine.
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


def session(data: str, table: str) -> tuple[subprocess.Popen[bytes], float, float]:
    """Spawn a session; (process, seconds to the initialize answer, seconds from it to the first answer)."""
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "mcp_server.cli", "mcp", "--data", data], env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    _send(p, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "bench", "version": "1"}}})
    _answer(p, 1)
    t1 = time.perf_counter()
    _send(p, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    _send(p, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "describe_table", "arguments": {"table": table}}})
    got = _answer(p, 2)
    t2 = time.perf_counter()
    if "error" in got or got.get("result", {}).get("isError"):
        raise RuntimeError(f"describe_table failed: {str(got)[:300]}")
    return p, t1 - t0, t2 - t1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lake", default=os.environ.get("SEMCAT_EVAL_LAKE", "/work/lakes/acme"))
    ap.add_argument("--catalog", default="enriched")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--table", default="acme.core.fct_orders")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="semcat-cold-")
    try:
        lake = os.path.join(tmp, "lake")
        subprocess.run(["cp", "-a", args.lake, lake], check=True)
        data = os.path.join(lake, args.catalog)
        inits, firsts, restarts = [], [], []
        load = []
        for _ in range(args.runs):
            load.append(os.getloadavg()[0])
            p, t_init, t_first = session(data, args.table)
            inits.append(t_init)
            firsts.append(t_first)
            p.send_signal(signal.SIGKILL)  # an IDE killed, then started again
            p.wait()
            t0 = time.perf_counter()
            q, _a, _b = session(data, args.table)
            restarts.append(time.perf_counter() - t0)
            q.send_signal(signal.SIGKILL)
            q.wait()
        med = statistics.median
        print(f"runs {args.runs}, load average (1 min) {min(load):.1f}-{max(load):.1f}, cpus {os.cpu_count()}")
        print(f"initialize          median {med(inits):.2f} s  (min {min(inits):.2f}, max {max(inits):.2f})")
        print(f"first answer after  median {med(firsts):.2f} s  (min {min(firsts):.2f}, max {max(firsts):.2f})")
        print(f"restart after -9    median {med(restarts):.2f} s  (spawn to first answer; min {min(restarts):.2f})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
