"""Read throughput of 1 vs 2 `semcat serve` processes on one data directory (issue 47, item 2: replicas for
load; docs/engine.md, "Replicas: the arithmetic").

    .venv/bin/python -m bench.bench_replicas [--seconds 10] [--clients 4] [--route objects|describe]

A lake (eval/fixtures/mcplake.py) is built in a temporary directory; then `--clients` client processes
(separate from the servers) call a read as fast as they can for `--seconds`, first against one server, then
spread round-robin over two servers on the same directory (the second reads through a RocksDB secondary
instance). `--route objects`: `GET /v1/objects` of the lake's tables (the engine's point read, plus HTTP);
`--route describe`: `GET /v1/semantic/describe/{table}` (a table card: more server work per request).

Printed for each: requests per second (wall), the CPU seconds the servers and the clients used (from
/proc/PID/stat and the clients' own process_time), the server CPU per request, requests per server-CPU-second,
and the load average. On a shared 2-core machine the wall ratio says little: the clients need CPU too, and
the ratio 2 servers / 1 server is at most 2 / (1 + c/s) when the clients spend c CPU seconds per request
and a server s (docs/engine.md does the arithmetic); the CPU figures are the honest ones.
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


def _client(urls: list[str], requests: list[tuple[str, dict[str, str]]], seconds: float, out: mp.Queue) -> None:
    import httpx

    clients = [httpx.Client(base_url=u, timeout=30) for u in urls]
    n, i = 0, 0
    cpu0 = time.process_time()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        c = clients[i % len(clients)]
        route, params = requests[i % len(requests)]
        r = c.get(route, params=params)
        r.raise_for_status()
        n += 1
        i += 1
    out.put((n, time.process_time() - cpu0))


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (Linux /proc/PID/stat), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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


def _run(urls: list[str], requests: list[tuple[str, dict[str, str]]], clients: int, seconds: float,
         servers: list[subprocess.Popen[bytes]]) -> dict[str, float]:
    q: mp.Queue = mp.Queue()
    procs = [mp.Process(target=_client, args=(urls[k % len(urls):] + urls[:k % len(urls)], requests, seconds, q))
             for k in range(clients)]
    load = os.getloadavg()[0]
    before = [cpu_seconds(s.pid) for s in servers]
    for p in procs:
        p.start()
    got = [q.get() for _ in procs]
    server_cpu = sum(cpu_seconds(s.pid) - b for s, b in zip(servers, before))
    for p in procs:
        p.join()
    n = sum(g[0] for g in got)
    return {"rps": n / seconds, "n": n, "server_cpu": server_cpu, "client_cpu": sum(g[1] for g in got),
            "load": load, "load_after": os.getloadavg()[0]}


def _line(name: str, r: dict[str, float], seconds: float) -> str:
    per = r["server_cpu"] / r["n"] * 1000 if r["n"] else float("nan")
    cper = r["client_cpu"] / r["n"] * 1000 if r["n"] else float("nan")
    return (f"{name}: {r['rps']:7.0f} req/s wall | servers {r['server_cpu']:5.1f} CPU s ({r['server_cpu'] / seconds:.2f} "
            f"cores), {per:.2f} ms CPU/req, {r['n'] / max(r['server_cpu'], 1e-9):6.0f} req per server-CPU-s | clients "
            f"{cper:.2f} ms CPU/req | load {r['load']:.1f} -> {r['load_after']:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--route", choices=["objects", "describe"], default="objects")
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
        if args.route == "objects":
            requests = [("/v1/objects", {"path": p}) for p in paths]
        else:
            requests = [("/v1/semantic/describe/" + ".".join(p.strip("/").split("/")), {}) for p in paths]
        ports = [free_port(), free_port()]
        urls = [f"http://127.0.0.1:{p}" for p in ports]
        servers.append(_serve(data, ports[0]))
        _healthy(urls[0])
        servers.append(_serve(data, ports[1]))  # started now, idle during the first run: the same machine
        _healthy(urls[1])
        _run(urls, requests, 1, 2, servers)  # warm both (memos, page cache)
        one = _run(urls[:1], requests, args.clients, args.seconds, servers[:1])
        two = _run(urls, requests, args.clients, args.seconds, servers)
        up = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
        print(f"cpus {os.cpu_count()}, {args.clients} client processes, {args.seconds:g} s each, route {args.route}")
        print(_line("1 server ", one, args.seconds))
        print(_line("2 servers", two, args.seconds))
        eff1 = one["n"] / max(one["server_cpu"], 1e-9)
        eff2 = two["n"] / max(two["server_cpu"], 1e-9)
        print(f"ratio 2/1: wall {two['rps'] / one['rps']:.2f}x; server CPU per request {eff1 / eff2:.2f}x of one "
              f"server's (1.00 = no cost to splitting); uptime {up}")
    finally:
        for s in servers:
            s.terminate()
            s.wait(60)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
