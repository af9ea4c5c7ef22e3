"""Bounded hostile load against a real `semcat serve` (issue 35): floods of transaction sessions,
clones and held GET /mcp streams from a read token, and large bodies without a token, each bounded
in count and time. For each flood: how many requests went out, what they got, the server's peak
RSS (sampled from /proc every 20 ms) and open file descriptors, and whether the write token was
still served during the flood (a transaction session with a read, a write and a commit, every 0.25 s).

    python -m bench.bench_hostile                       # this checkout's server code
    python -m bench.bench_hostile --code /work/main     # another checkout's (before/after)

`--code DIR` runs the server with DIR first on PYTHONPATH (the bench itself and the client always
run from this checkout), so the same floods measure two versions of the server. Linux only (/proc).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator

import httpx

from bench.serving import free_port, rss_mb, wait_healthy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
READ, WRITE = "hostile-read", "hostile-write"


# ------------------------------------------------------------------ the server
def build_catalog(data: str, objects: int) -> None:
    """A catalog with `objects` objects under /bench (what the clone flood copies)."""
    import catalog_core as cc

    cat = cc.Catalog.open(data)
    try:
        with cat.transaction(author="bench") as t:
            t.add("/bench", {"obj_type": "catalog"})
            t.add("/bench/ns", {"obj_type": "namespace"})
        per = 500
        for start in range(0, objects, per):
            with cat.transaction(author="bench") as t:
                for i in range(start, min(objects, start + per)):
                    t.add(f"/bench/ns/t{i:06d}", {"obj_type": "table", "pad": "x" * 200, "n": i})
        with cat.transaction(author="bench") as t:
            t.add("/w", {"obj_type": "catalog", "n": 0})
    finally:
        cat.close()


class Server:
    def __init__(self, code: str, data: str, log: str, txn_timeout_s: float) -> None:
        tokens = os.path.join(os.path.dirname(data), "tokens")
        with open(tokens, "w") as f:
            f.write(f"{READ}:read\n{WRITE}:write\n")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if k != "SEMCAT_TOKENS"}
        env["PYTHONPATH"] = code
        self.log = open(log, "ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "mcp_server.cli", "serve", "--data", data, "--port",
                                      str(self.port), "--tokens", tokens, "--txn-timeout", str(txn_timeout_s)], cwd=code, env=env, stdout=self.log,
                                     stderr=self.log)
        wait_healthy(self.proc, self.url, 120, 0.1, lambda: open(log).read()[-3000:], "server did not start")

    def rss_mb(self) -> float:
        return rss_mb(self.proc.pid)

    def fds(self) -> int:
        try:
            return len(os.listdir(f"/proc/{self.proc.pid}/fd"))
        except OSError:
            return 0

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@contextlib.contextmanager
def sampling(server: Server) -> Iterator[dict[str, float]]:
    """Peak RSS (MB) and open fds of the server while the block runs."""
    peak = {"rss": server.rss_mb(), "fds": float(server.fds())}
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.02):
            peak["rss"] = max(peak["rss"], server.rss_mb())
            peak["fds"] = max(peak["fds"], float(server.fds()))

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    try:
        yield peak
    finally:
        stop.set()
        t.join()


@contextlib.contextmanager
def writer(server: Server) -> Iterator[Counter[str]]:
    """The write token's own work during a flood: begin, write, commit every 0.25 s."""
    import catalog_core as cc

    got: Counter[str] = Counter()
    stop = threading.Event()

    def work() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            try:
                with cc.connect(server.url, token=WRITE, timeout=15) as cat, cat.transaction(author="w") as t:
                    t.get("/w")  # a read: the transaction is a server session (POST /v1/transactions)
                    t.update("/w", {"obj_type": "catalog", "n": n})
                got["ok"] += 1
            except Exception as exc:  # noqa: BLE001 - any failure is what this counts
                got[type(exc).__name__] += 1
            stop.wait(0.25)

    t = threading.Thread(target=work, daemon=True)
    t.start()
    try:
        yield got
    finally:
        stop.set()
        t.join(60)


def in_threads(n: int, fn: Callable[[int], None], within_s: float) -> None:
    threads = [threading.Thread(target=fn, args=(i,), daemon=True) for i in range(n)]
    deadline = time.monotonic() + within_s
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.1, deadline - time.monotonic()))


# ------------------------------------------------------------------ floods
def flood_sessions(server: Server, count: int, within_s: float) -> Counter[str]:
    got: Counter[str] = Counter()
    deadline = time.monotonic() + within_s

    def one(k: int) -> None:
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {READ}"}, timeout=30) as c:
            for _ in range(count // 8):
                if time.monotonic() > deadline:
                    return
                try:
                    got[str(c.post("/v1/transactions", json={"author": "flood"}).status_code)] += 1
                except httpx.HTTPError as exc:
                    got[type(exc).__name__] += 1

    in_threads(8, one, within_s + 5)
    return got


def flood_clones(server: Server, count: int, within_s: float) -> Counter[str]:
    got: Counter[str] = Counter()
    deadline = time.monotonic() + within_s

    def one(k: int) -> None:
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {READ}"}, timeout=120) as c:
            for i in range(count // 4):
                if time.monotonic() > deadline:
                    return
                try:
                    r = c.post("/v1/transactions", json={"author": "flood"})
                    if r.status_code != 201:
                        got[f"begin {r.status_code}"] += 1
                        continue
                    txn = r.json()["txn_id"]
                    r = c.post(f"/v1/transactions/{txn}/clone", json={"src": "/bench", "dst": f"/c{k}_{i}"})
                    got[str(r.status_code)] += 1
                except httpx.HTTPError as exc:
                    got[type(exc).__name__] += 1

    in_threads(4, one, within_s + 5)
    return got


def flood_streams(server: Server, count: int, hold_s: float) -> Counter[str]:
    """Open `count` GET /mcp streams with the read token and hold them for `hold_s`."""
    got: Counter[str] = Counter()
    socks: list[socket.socket] = []
    head = (f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nAccept: text/event-stream\r\n"
            f"Authorization: Bearer {READ}\r\n\r\n").encode()
    try:
        for _ in range(count):
            try:
                s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
                s.sendall(head)
                first = s.recv(64)
                got[first.split(b" ", 2)[1].decode() if first.count(b" ") >= 2 else "no answer"] += 1
                socks.append(s)
            except OSError as exc:
                got[type(exc).__name__] += 1
        time.sleep(hold_s)
    finally:
        for s in socks:
            s.close()
    return got


def flood_bodies(server: Server, count: int, mb: int, path: str, within_s: float) -> Counter[str]:
    """`count` concurrent POSTs of `mb` MB without a token, each sent as fast as the server reads."""
    got: Counter[str] = Counter()
    chunk = b"a=" + b"x" * (1024 * 1024 - 2)
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nContent-Type: "
            f"application/x-www-form-urlencoded\r\nContent-Length: {mb * 1024 * 1024}\r\n\r\n").encode()
    deadline = time.monotonic() + within_s

    def one(_k: int) -> None:
        try:
            with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
                s.sendall(head)
                select.select([s], [], [], 1.0)  # a server that answers before the body does so now
                s.setblocking(False)
                answer = b""
                for _ in range(mb):
                    if time.monotonic() > deadline:
                        break
                    try:
                        answer += s.recv(4096)
                    except BlockingIOError:
                        pass
                    if answer:
                        break  # answered before the body: nothing more to send
                    s.setblocking(True)
                    s.sendall(chunk)
                    s.setblocking(False)
                s.settimeout(30)
                while b"\r\n" not in answer:
                    more = s.recv(4096)
                    if not more:
                        break
                    answer += more
                got[answer.split(b" ", 2)[1].decode() if answer.count(b" ") >= 2 else "no answer"] += 1
        except (ConnectionResetError, BrokenPipeError):
            got["closed while sending"] += 1
        except OSError as exc:
            got[type(exc).__name__] += 1

    in_threads(count, one, within_s + 30)
    return got


# ------------------------------------------------------------------ main
def fmt(c: Counter[str]) -> str:
    return " ".join(f"{k}x{v}" for k, v in sorted(c.items(), key=lambda kv: -kv[1])) or "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--code", default=ROOT, help="checkout whose server code runs (default: this one)")
    ap.add_argument("--objects", type=int, default=2000, help="objects under /bench (what a clone copies)")
    ap.add_argument("--sessions", type=int, default=3000)
    ap.add_argument("--clones", type=int, default=40)
    ap.add_argument("--streams", type=int, default=500)
    ap.add_argument("--bodies", type=int, default=8, help="concurrent large bodies without a token")
    ap.add_argument("--body-mb", type=int, default=48)
    ap.add_argument("--within", type=float, default=60.0, help="time bound of each flood, s")
    ap.add_argument("--txn-timeout", type=float, default=600.0,
                    help="the server's idle transaction timeout: long, so a flood slowed by a loaded machine "
                         "holds its sessions as a fast one (or one that keeps them alive) does")
    ap.add_argument("--floods", default="sessions,clones,streams,review,login",
                    help="which floods to run, comma-separated")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="semcat-hostile-")
    pristine, data = os.path.join(tmp, "pristine"), os.path.join(tmp, "data")
    build_catalog(pristine, args.objects)
    rows: list[tuple[str, str, str, float, float, str]] = []
    try:
        floods: list[tuple[str, str, Callable[[Server], Counter[str]]]] = [
            ("sessions", f"{args.sessions} sessions (read token)",
             lambda s: flood_sessions(s, args.sessions, args.within)),
            ("clones", f"{args.clones} txn clones of /bench (read token)",
             lambda s: flood_clones(s, args.clones, args.within)),
            ("streams", f"{args.streams} held GET /mcp streams (read)", lambda s: flood_streams(s, args.streams, 5.0)),
            ("review", f"{args.bodies} x {args.body_mb} MB to /ui/review, no token",
             lambda s: flood_bodies(s, args.bodies, args.body_mb, "/ui/review/x/accept", args.within)),
            ("login", f"{args.bodies} x {args.body_mb} MB to /ui/login, no token",
             lambda s: flood_bodies(s, args.bodies, args.body_mb, "/ui/login", args.within)),
        ]
        chosen = {x.strip() for x in args.floods.split(",") if x.strip()}
        for key, name, flood in floods:
            if key not in chosen:
                continue  # a fresh server per flood: each starts from the same state
            shutil.rmtree(data, ignore_errors=True)
            shutil.copytree(pristine, data)
            server = Server(args.code, data, os.path.join(tmp, "serve.log"), args.txn_timeout)
            try:
                base = server.rss_mb()
                with sampling(server) as peak, writer(server) as served:
                    t0 = time.monotonic()
                    got = flood(server)
                    wall = time.monotonic() - t0
                    time.sleep(1.0)  # the writer's turn once the flood's last requests are in
                rows.append((name, fmt(got), f"{fmt(served)}", base, peak["rss"], f"{peak['fds']:.0f}"))
                print(f"{name}: {wall:.1f} s; {fmt(got)}; writer {fmt(served)}; RSS {base:.0f} -> "
                      f"{peak['rss']:.0f} MB; fds {peak['fds']:.0f}", flush=True)
            finally:
                server.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\nserver code: {args.code}")
    print("| flood | answers | write token during it | RSS before MB | peak RSS MB | peak fds |")
    print("|---|---|---|---|---|---|")
    for name, got, served, base, peak, fds in rows:
        print(f"| {name} | {got} | {served} | {base:.0f} | {peak:.0f} | {fds} |")


if __name__ == "__main__":
    main()
