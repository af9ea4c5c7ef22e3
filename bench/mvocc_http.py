"""The concurrency-control microbenchmark with remote clients, as in paper §7.1 (TreeCat on one
machine, client threads on three others, every call an RPC).

The engine runs in a real `semcat serve` subprocess started with the protocol under test; the
client threads are spread over `procs` client processes, each talking HTTP through
`cc.connect(url)`. A read-write transaction is then a server session: its reads are requests,
its write set travels with the commit, and under mgl its locks are held across the round trips,
which is where lock waits cost throughput rather than only latency.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import random
import threading
import time
from typing import Any

import catalog_core as cc

from .bench_http import start_server, stop_server
from .mvocc_data import fresh_copy
from .mvocc_ops import Workload, client_loop, summarize

__all__ = ["run_one_http"]

ID_STRIDE = 100_000_000  # new dimension ids per client process: disjoint ranges


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _client_proc(url: str, meta: dict, read_share: float, threads: int, seed: str, idx: int,
                 client_s: float, ready: Any, start: Any, duration: float, out: Any) -> None:

    cat = cc.connect(url, timeout=300)
    wl = Workload(cat, meta, client_s, tag=f"p{idx}-", id_offset=(idx + 1) * ID_STRIDE)
    logs: list[list] = [[] for _ in range(threads)]
    failures: list[str] = []

    def worker(i: int) -> None:
        rng = random.Random(f"{seed}-{idx}-{i}")
        try:
            client_loop(wl, rng, read_share, start.value + duration, logs[i], clock=time.time)
        except BaseException as exc:  # reported to the parent, which fails the run
            failures.append(f"{type(exc).__name__}: {exc}")

    ready.release()
    while start.value == 0.0:
        time.sleep(0.001)
    while time.time() < start.value:
        time.sleep(0.0005)
    workers = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    cat.close()
    out.put((idx, logs, failures))


def _collect(out: Any, children: list, deadline: float) -> list:
    """Every client process's (index, logs, failures); a client that died says so at once."""
    results: list = []
    while len(results) < len(children):
        try:
            results.append(out.get(timeout=1))
        except queue.Empty:
            dead = [c.exitcode for c in children if c.exitcode not in (None, 0)]
            if dead:
                raise RuntimeError(f"a client process exited with code {dead[0]}; see its output above") from None
            if time.time() > deadline:
                raise RuntimeError("client processes did not report in time") from None
    return results


def run_one_http(base: str, meta: dict, read_share: float, protocol: str, threads: int, duration: float,
                 data: str, seed: int = 0, client_s: float = 0.0, procs: int = 3) -> dict[str, Any]:
    """One timed run against a fresh copy of the pre-built catalog served over HTTP."""
    fresh_copy(base, data)
    proc, url = start_server(data, os.path.join(os.path.dirname(data), "mvocc_server.log"), protocol=protocol)
    ctx = mp.get_context("spawn")
    procs = max(1, min(procs, threads))
    ready, start, out = ctx.Semaphore(0), ctx.Value("d", 0.0), ctx.Queue()
    shares = [threads // procs + (1 if i < threads % procs else 0) for i in range(procs)]
    children = [ctx.Process(target=_client_proc, daemon=True,
                            args=(url, meta, read_share, n, f"{seed}-{read_share}-{threads}", i, client_s,
                                  ready, start, duration, out)) for i, n in enumerate(shares)]
    try:
        for c in children:
            c.start()
        for _ in children:
            if not ready.acquire(timeout=120):
                raise RuntimeError("a client process did not start")
        cpu0 = _cpu_seconds(proc.pid)
        start.value = time.time() + 0.2
        results = _collect(out, children, time.time() + duration + 600)
        elapsed = time.time() - start.value
        cpu = _cpu_seconds(proc.pid) - cpu0
        for c in children:
            c.join(30)
    finally:
        for c in children:
            if c.is_alive():
                c.kill()
        stop_server(proc)
    failures = [f for _i, _logs, fs in results for f in fs]
    if failures:
        raise RuntimeError(f"{len(failures)} client thread(s) failed; first: {failures[0]}")
    summary = summarize([log for _i, logs, _f in sorted(results) for log in logs], elapsed)
    summary["cpu_util"] = round(cpu / elapsed, 2)  # the server process's CPU seconds per wall second
    return summary
