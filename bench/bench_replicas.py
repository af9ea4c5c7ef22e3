"""Read throughput of 1 vs 2 `semcat serve` processes on one data directory (issue 47, item 2: replicas for
load; docs/engine.md, "Replicas: the arithmetic").

    .venv/bin/python -m bench.bench_replicas [--seconds 10] [--rounds 3] [--clients 4]
                                             [--route objects|describe] [--generator wrk|python] [--control]

A lake (eval/fixtures/mcplake.py) is built in a temporary directory and two `semcat serve` processes are
started on it (the second reads through a RocksDB secondary instance). Each round loads one server, then
both, for `--seconds`; the medians over `--rounds` are printed. `--route objects`: `GET /v1/objects` of
the lake's tables (the engine's point read, plus HTTP); `--route describe`: `GET
/v1/semantic/describe/{table}` (a table card).

The load generator is `wrk` (a C program: about 0.02 ms of CPU per request, so the servers get the cores),
one `wrk` process per server with `--clients` connections in all. Install it with the OS package manager
(Debian/Ubuntu: `apt-get install wrk`; macOS: `brew install wrk`); without it the bench stops with that
advice. `--generator python` uses `--clients` Python processes with httpx instead (they cost the
machine about as much CPU per request as the server: on one 2-core machine they bound the ratio near
1.0x, see below). Not run in CI.

Printed for each run: requests per second (wall), the CPU seconds the servers and the clients used (from
/proc/PID/stat, the generator's rusage), the server CPU per request, and the load average before and
after. The ratio 2 servers / 1 server is at most `min(2/s, C/(s + c)) / min(1/s, C/(s + c))` when a
server spends `s` CPU seconds per request, the clients `c`, on `C` cores (docs/engine.md, "Replicas: the
arithmetic"); the bench prints that bound from the measured `s` and `c` beside the wall ratio, because
on a shared machine the wall ratio also measures the other processes.

`--control` adds, in each round, the same 1 -> 2 comparison for a CPU-bound pure-Python loop with no semcat in it
(`machine_control`): what two single-threaded processes reach on this machine at all. When two such loops do
less than twice the work of one (vCPUs sharing a physical core, a clock that drops when both run), no pair of
servers can do better, whatever the catalog does.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from urllib.parse import urlencode

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


WRK_HELP = ("bench_replicas needs `wrk`, a load generator written in C (it costs the servers' cores almost "
            "nothing): install it with `apt-get install wrk` (Debian/Ubuntu) or `brew install wrk` (macOS), "
            "or run with --generator python (Python clients on the same cores: the ratio is then bounded "
            "near 1.0x)")

_LUA = """local paths = {%s}
local i = %d
request = function()
  i = i + 1
  return wrk.format("GET", paths[(i %% #paths) + 1])
end
"""


def _wrk(urls: list[str], targets: list[str], clients: int, seconds: float, servers: list[subprocess.Popen[bytes]],
         tmp: str) -> dict[str, float]:
    """One `wrk` per server (one thread each; `clients` connections in all), for `seconds`."""
    import resource

    wrk = shutil.which("wrk")
    if wrk is None:
        raise SystemExit(WRK_HELP)
    procs = []
    load = os.getloadavg()[0]
    before = [cpu_seconds(s.pid) for s in servers]
    for k, url in enumerate(urls):
        script = os.path.join(tmp, f"paths{k}.lua")
        with open(script, "w") as fh:
            fh.write(_LUA % (", ".join('"' + t + '"' for t in targets), k))
        conns = max(1, clients // len(urls) + (1 if k < clients % len(urls) else 0))
        procs.append(subprocess.Popen([wrk, "-t1", f"-c{conns}", f"-d{max(1, round(seconds))}s", "--timeout", "30s",
                                       "-s", script, url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    n, client_cpu, errors = 0, 0.0, 0
    for p in procs:
        out, err = p.communicate()
        if p.returncode != 0:
            raise SystemExit(f"wrk failed (exit {p.returncode}): {err.strip() or out.strip()}")
        m = re.search(r"(\d+) requests in", out)
        if m is None:
            raise SystemExit(f"wrk printed no request count:\n{out}")
        n += int(m.group(1))
        bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
        sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
        errors += int(bad.group(1)) if bad else 0
        errors += sum(int(g) for g in sock.groups()) if sock else 0
    server_cpu = sum(cpu_seconds(s.pid) - b for s, b in zip(servers, before))
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)  # wrk processes are the only children reaped here
    client_cpu = ru.ru_utime + ru.ru_stime - _wrk.reaped  # type: ignore[attr-defined]
    _wrk.reaped = ru.ru_utime + ru.ru_stime  # type: ignore[attr-defined]
    if errors:
        raise SystemExit(f"wrk saw {errors} failed requests (non-2xx or socket errors): the figures would be wrong")
    return {"rps": n / seconds, "n": n, "server_cpu": server_cpu, "client_cpu": client_cpu,
            "load": load, "load_after": os.getloadavg()[0]}


_wrk.reaped = 0.0  # type: ignore[attr-defined]


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


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def _per_request(r: dict[str, float]) -> dict[str, float]:
    """`r` with the server's and the clients' CPU seconds per request (`s`, `c`), so that medians over
    rounds take each round's ratio rather than a ratio of medians from different rounds."""
    n = r["n"]
    return {**r, "s": r["server_cpu"] / n if n else float("nan"), "c": r["client_cpu"] / n if n else float("nan")}


def _line(name: str, r: dict[str, float], seconds: float) -> str:
    r = _per_request(r) if "s" not in r else r
    per, cper = r["s"] * 1000, r["c"] * 1000
    return (f"{name}: {r['rps']:7.0f} req/s wall | servers {r['server_cpu']:5.1f} CPU s ({r['server_cpu'] / seconds:.2f} "
            f"cores), {per:.2f} ms CPU/req, {1 / max(r['s'], 1e-9):6.0f} req per server-CPU-s | clients "
            f"{cper:.2f} ms CPU/req | load {r['load']:.1f} -> {r['load_after']:.1f}")


def bound(s: float, c: float, servers: int, cores: int) -> float:
    """Requests per second that `servers` single-core servers at `s` CPU s/request and clients at `c`
    can reach on `cores` cores (docs/engine.md, "Replicas: the arithmetic")."""
    return min(servers / s, cores / (s + c))


def _spin(seconds: float, out: "mp.Queue[tuple[int, float]]") -> None:
    """A CPU-bound pure-Python loop for `seconds` of wall time: (units of work done, CPU seconds used)."""
    end = time.perf_counter() + seconds
    c0 = time.process_time()
    units = 0
    while time.perf_counter() < end:
        x = 0
        for i in range(20_000):  # one unit: about a millisecond of interpreter work, like one request
            x += i * i
        units += 1
    out.put((units, time.process_time() - c0))


def machine_control(k: int, seconds: float) -> dict[str, float]:
    """The machine's own scaling, no semcat in it: `k` processes each spinning `_spin` at once. Returns the
    units of work per second of all of them and the CPU seconds per unit. Two such processes doing less
    than twice the work of one, or spending more CPU per unit, bound what two servers can reach here."""
    q: mp.Queue[tuple[int, float]] = mp.Queue()
    procs = [mp.Process(target=_spin, args=(seconds, q)) for _ in range(k)]
    for p in procs:
        p.start()
    got = [q.get() for _ in procs]
    for p in procs:
        p.join()
    units = sum(u for u, _ in got)
    return {"rate": units / seconds, "cpu_per_unit": sum(c for _, c in got) / max(units, 1)}


def _median(runs: list[dict[str, float]]) -> dict[str, float]:
    import statistics

    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--route", choices=["objects", "describe"], default="objects")
    ap.add_argument("--generator", choices=["wrk", "python"], default="wrk")
    ap.add_argument("--control", action="store_true",
                    help="also measure, in each round, the machine's own 1 -> 2 process scaling on a CPU-bound "
                         "pure-Python loop (no semcat): the ceiling of the servers' ratio on this machine")
    args = ap.parse_args()
    if args.generator == "wrk" and shutil.which("wrk") is None:
        raise SystemExit(WRK_HELP)
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
        targets = [r + ("?" + urlencode(q) if q else "") for r, q in requests]
        ports = [free_port(), free_port()]
        urls = [f"http://127.0.0.1:{p}" for p in ports]
        servers.append(_serve(data, ports[0]))
        _healthy(urls[0])
        servers.append(_serve(data, ports[1]))  # started now, idle during the first run: the same machine
        _healthy(urls[1])
        _run(urls, requests, 1, 2, servers)  # warm both (memos, page cache)

        def run(k: int) -> dict[str, float]:
            if args.generator == "wrk":
                return _wrk(urls[:k], targets, args.clients, args.seconds, servers[:k], tmp)
            return _run(urls[:k], requests, args.clients, args.seconds, servers[:k])

        print(f"cpus {os.cpu_count()}, generator {args.generator}, {args.clients} connections, {args.seconds:g} s "
              f"per run, route {args.route}")
        ones, twos = [], []
        controls: list[tuple[dict[str, float], dict[str, float]]] = []
        for r in range(args.rounds):
            if args.control:
                c_one, c_two = machine_control(1, args.seconds), machine_control(2, args.seconds)
                controls.append((c_one, c_two))
                print(f"round {r + 1}, control (CPU-bound loop, no semcat): 2 processes {c_two['rate'] / c_one['rate']:.2f}x "
                      f"the work of 1; CPU per unit {c_one['cpu_per_unit'] * 1e3:.3f} -> {c_two['cpu_per_unit'] * 1e3:.3f} ms"
                      f" | " + _uptime())
            ones.append(_per_request(run(1)))
            print(_line(f"round {r + 1}, 1 server ", ones[-1], args.seconds) + " | " + _uptime())
            twos.append(_per_request(run(2)))
            print(_line(f"round {r + 1}, 2 servers", twos[-1], args.seconds) + " | " + _uptime())
        one, two = _median(ones), _median(twos)
        print(_line("median, 1 server ", one, args.seconds))
        print(_line("median, 2 servers", two, args.seconds))
        ratios = sorted(t["rps"] / o["rps"] for o, t in zip(ones, twos))
        s1, c1, s2, c2 = one["s"], one["c"], two["s"], two["c"]
        cores = os.cpu_count() or 1
        print(f"ratio 2/1 (wall): median {two['rps'] / one['rps']:.2f}x, per round "
              + ", ".join(f"{x:.2f}x" for x in ratios))
        print(f"bound from the measured CPU per request on {cores} otherwise idle cores: 1 server "
              f"{bound(s1, c1, 1, cores):.0f} req/s, 2 servers {bound(s2, c2, 2, cores):.0f} req/s, "
              f"ratio {bound(s2, c2, 2, cores) / bound(s1, c1, 1, cores):.2f}x")
        if controls:
            import statistics

            cr = sorted(t["rate"] / o["rate"] for o, t in controls)
            infl = statistics.median(t["cpu_per_unit"] / o["cpu_per_unit"] for o, t in controls)
            print(f"control (the machine alone): 2 CPU-bound processes do {statistics.median(cr):.2f}x the work of 1 "
                  f"(per round {', '.join(f'{x:.2f}x' for x in cr)}); CPU per unit of work x{infl:.2f} when both run")
    finally:
        for s in servers:
            s.terminate()
            s.wait(60)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
