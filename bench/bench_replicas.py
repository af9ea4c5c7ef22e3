"""Read throughput of 1 vs 2 `semcat serve` processes on one data directory (issue 47, item 2: replicas for
load; docs/engine.md, Many processes).

    .venv/bin/python -m bench.bench_replicas [--seconds 10] [--clients 4]

A lake (eval/fixtures/mcplake.py) is built in a temporary directory; then `--clients` client processes call
`GET /v1/objects` of the lake's tables (the engine's point read, plus HTTP) as fast as they can for
`--seconds`, first against one server, then spread round-robin over two servers on the same directory (the
second reads through a RocksDB secondary instance). Prints requests per second of each, the ratio, and the
load average beside them. On a machine with C cores, N servers can use up to min(N, C) cores for reads; the
clients share the same cores, so the ratio measured here is a lower bound of what separate client machines see.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _client(urls: list[str], paths: list[str], seconds: float, out: mp.Queue) -> None:
    import httpx

    clients = [httpx.Client(base_url=u, timeout=30) for u in urls]
    n, i = 0, 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        c = clients[i % len(clients)]
        r = c.get("/v1/objects", params={"path": paths[i % len(paths)]})
        r.raise_for_status()
        n += 1
        i += 1
    out.put(n)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _serve(data: str, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen([sys.executable, "-m", "mcp_server.cli", "serve", "--data", data, "--port", str(port)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _healthy(url: str) -> None:
    import httpx

    for _ in range(1200):
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not start")


def _run(urls: list[str], paths: list[str], clients: int, seconds: float) -> float:
    q: mp.Queue = mp.Queue()
    procs = [mp.Process(target=_client, args=(urls[k % len(urls):] + urls[:k % len(urls)], paths, seconds, q))
             for k in range(clients)]
    for p in procs:
        p.start()
    total = sum(q.get() for _ in procs)
    for p in procs:
        p.join()
    return total / seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--clients", type=int, default=4)
    args = ap.parse_args()
    sys.path.insert(0, ROOT)
    import catalog_core as cc
    from eval.fixtures import mcplake

    tmp = tempfile.mkdtemp(prefix="semcat-replicas-")
    servers: list[subprocess.Popen[bytes]] = []
    try:
        data = os.path.join(tmp, "data")
        cat = cc.Catalog.open(data)
        mcplake.build(cat, os.path.join(tmp, "files"))
        paths = [o.path for o in cat.query('/[obj_id = "acme"]/*/[obj_type = "table"]')]
        cat.close()
        ports = [free_port(), free_port()]
        urls = [f"http://127.0.0.1:{p}" for p in ports]
        servers.append(_serve(data, ports[0]))
        _healthy(urls[0])
        load1 = os.getloadavg()[0]
        one = _run(urls[:1], paths, args.clients, args.seconds)
        servers.append(_serve(data, ports[1]))
        _healthy(urls[1])
        load2 = os.getloadavg()[0]
        two = _run(urls, paths, args.clients, args.seconds)
        print(f"cpus {os.cpu_count()}, {args.clients} client processes, {args.seconds:g} s each")
        print(f"1 server : {one:8.0f} reads/s  (load {load1:.1f})")
        print(f"2 servers: {two:8.0f} reads/s  (load {load2:.1f})  ratio {two / one:.2f}x")
    finally:
        for s in servers:
            s.terminate()
            s.wait(60)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
