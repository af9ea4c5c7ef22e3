"""Crash loop: a real `semcat serve` subprocess under concurrent commit load, SIGKILLed at random
moments and restarted on the same data directory, checked after every restart.

    .venv/bin/python -m bench.crash_loop --kills 100 [--writers 6] [--seed 1] [--replicas 2]

Each writer thread commits transactions that add a pair of objects (`/c/<name>` and its leaf
`/c/<name>/f`) and merge +1 into the shared counter `/c.stats.n`. A commit is *acknowledged*
when the server answered with its vid; a commit whose call failed (the server died under it) is
*in doubt*: it may or may not have landed. After each restart, at one pinned vid V:

- every commit acknowledged before V was read is present, at its acknowledged vid (no loss);
- every `/c/<name>` has its leaf and every leaf its parent (both or neither: nothing partial);
- the counter equals the number of pairs (acknowledged ones plus the in-doubt ones that
  landed), and every pair present was actually attempted (no phantom writes);
- the commit log is gapless up to V.

With `--replicas N`, N more `semcat serve` processes read the same directory (RocksDB secondaries, issue 47)
and are never killed: reader threads keep reading each of them while the writer dies and restarts (every
failed read is a violation: the replicas keep serving), and after each restart every replica, once it has
caught up to V, shows every commit acknowledged before V (checked at V through the replica).

Prints the counts; exits non-zero on the first violation. `tests/reliability/test_crash_loop.py`
runs 10 kills of it in CI.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

import httpx

import catalog_core as cc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

__all__ = ["CrashLoop", "Counts", "main"]

PAIRS = '/[obj_id = "c"]/*'  # every /c/<name>
LEAVES = '/[obj_id = "c"]/*/*'  # every /c/<name>/f


@dataclass
class Counts:
    kills: int = 0
    restarts: int = 0
    checks: int = 0
    acked: int = 0
    in_doubt: int = 0
    in_doubt_landed: int = 0
    refused: int = 0
    final_vid: int = 0
    final_pairs: int = 0
    seconds: float = 0.0
    violations: list[str] = field(default_factory=list)
    restart_s: list[float] = field(default_factory=list)
    replicas: int = 0
    replica_reads: int = 0  # reads answered by the replicas, writer up or down
    replica_reads_writer_down: int = 0  # of them, answered while the writer was dead or restarting
    replica_checks: int = 0
    catch_up_s: list[float] = field(default_factory=list)  # restart check: until a replica reached V

    def line(self) -> str:
        rep = (f" replicas={self.replicas} replica_reads={self.replica_reads} (writer down: "
               f"{self.replica_reads_writer_down}) replica_checks={self.replica_checks} median_catch_up_s="
               f"{statistics.median(self.catch_up_s) if self.catch_up_s else 0:.2f}") if self.replicas else ""
        return (f"kills={self.kills} restarts={self.restarts} checks={self.checks} acked={self.acked} "
                f"in_doubt={self.in_doubt} (landed {self.in_doubt_landed}) refused={self.refused} "
                f"final_vid={self.final_vid} "
                f"pairs={self.final_pairs} violations={len(self.violations)} seconds={self.seconds:.1f} "
                f"median_restart_s={statistics.median(self.restart_s) if self.restart_s else 0:.2f}" + rep)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class CrashLoop:
    """One data directory, one port, `writers` committing threads, a server killed `kills` times."""

    def __init__(self, data_dir: str, writers: int = 6, seed: int = 1, log_path: str | None = None,
                 replicas: int = 0) -> None:
        self.data_dir = data_dir
        self.writers = writers
        self.rng = random.Random(seed)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path or data_dir.rstrip("/") + "-server.log"
        os.makedirs(os.path.dirname(os.path.abspath(self.log_path)), exist_ok=True)
        self.proc: subprocess.Popen | None = None
        self.lock = threading.Lock()
        self.acked: dict[str, int] = {}  # name -> acknowledged vid
        self.attempted: set[str] = set()
        self.in_doubt: set[str] = set()
        self.stop = threading.Event()
        self.counts = Counts(replicas=replicas)
        self.replica_ports = [_free_port() for _ in range(replicas)]
        self.replica_procs: list[subprocess.Popen] = []
        self.writer_down = threading.Event()

    # ---------------------------------------------------------------- the server
    def start_server(self) -> None:
        self.proc = self._spawn(self.port, create=True)

    def _spawn(self, port: int, create: bool) -> subprocess.Popen:
        env = {k: v for k, v in os.environ.items() if k != "SEMCAT_TOKENS"}
        env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
        log = open(self.log_path, "ab")
        proc = subprocess.Popen([sys.executable, "-m", "mcp_server.cli", "serve", "--data", self.data_dir,
                                 *(["--create"] if create else []), "--port", str(port)], cwd=ROOT, env=env,
                                stdout=log, stderr=log)
        log.close()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError("the server exited at startup:\n" + self._log_tail())
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    return proc
            time.sleep(0.02)
        raise RuntimeError("the server did not start:\n" + self._log_tail())

    def start_replicas(self) -> None:
        """The reading replicas: more `semcat serve` processes on the directory the writer holds."""
        for port in self.replica_ports:
            self.replica_procs.append(self._spawn(port, create=False))

    def _replica_reader(self, port: int) -> None:
        """Reads one replica until the end; a failed read is a violation (the replicas are never killed)."""
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as c:
            while not self.stop.is_set():
                down = self.writer_down.is_set()
                try:
                    r = c.get("/v1/objects", params={"path": "/c"})
                    r.raise_for_status()
                except httpx.HTTPError as exc:
                    with self.lock:
                        self.counts.violations.append(f"replica on port {port} failed a read "
                                                      f"(writer {'down' if down else 'up'}): {exc!r}")
                    return
                with self.lock:
                    self.counts.replica_reads += 1
                    self.counts.replica_reads_writer_down += int(down and self.writer_down.is_set())
                time.sleep(0.01)

    def check_replicas(self, v: int, acked: dict[str, int]) -> None:
        """Each replica, once caught up to `v`, shows at `v` every commit acknowledged before it."""
        for port in self.replica_ports:
            t0 = time.monotonic()
            with cc.connect(f"http://127.0.0.1:{port}", timeout=60) as cat:
                while cat.latest_vid < v:
                    if time.monotonic() - t0 > 30:
                        self.counts.violations.append(f"replica on port {port} did not reach vid {v} in 30 s "
                                                      f"(at {cat.latest_vid})")
                        return
                    time.sleep(0.02)
                self.counts.catch_up_s.append(time.monotonic() - t0)
                names = {o.path.rsplit("/", 1)[1] for o in cat.query(PAIRS, v)}
            lost = [name for name in acked if name not in names]
            if lost:
                self.counts.violations.append(f"replica on port {port}: acknowledged commits missing at vid {v}: "
                                              f"{lost[:5]} ({len(lost)})")
            self.counts.replica_checks += 1

    def kill_server(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=60)
        self.counts.kills += 1

    def stop_server(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)

    def _log_tail(self) -> str:
        with open(self.log_path, "rb") as f:
            return f.read()[-3000:].decode("utf-8", "replace")

    # ---------------------------------------------------------------- the load
    def _writer(self, w: int) -> None:
        cat = cc.connect(self.url, timeout=10)
        i = 0
        while not self.stop.is_set():
            i += 1
            name = f"w{w}-{i}"
            with self.lock:
                self.attempted.add(name)
            try:
                with cat.transaction(author=f"w{w}") as t:
                    t.add(f"/c/{name}", {"obj_type": "namespace", "w": w, "i": i})
                    t.add(f"/c/{name}/f", {"obj_type": "file", "i": i}, leaf=True)
                    t.merge("/c", {"stats": {"n": {"op": "+", "val": 1}}})
            except cc.CatalogError as exc:  # not acknowledged
                with self.lock:
                    if "ConnectError" in str(exc):  # nothing was sent: the server is down
                        self.counts.refused += 1
                    else:  # the server died under the call: it may or may not have landed
                        self.in_doubt.add(name)
                time.sleep(0.1)  # leave the CPU to the restarting server
                continue
            with self.lock:
                self.acked[name] = t.vid  # type: ignore[assignment]
        cat.close()

    def acked_count(self) -> int:
        with self.lock:
            return len(self.acked)

    def wait_for_acks(self, n: int, timeout: float = 60) -> None:
        target = self.acked_count() + n
        deadline = time.monotonic() + timeout
        while self.acked_count() < target:
            if time.monotonic() > deadline:
                raise RuntimeError(f"no progress: {self.acked_count()} acks, wanted {target}\n" + self._log_tail())
            time.sleep(0.005)

    # ---------------------------------------------------------------- the check
    def check(self) -> None:
        """The invariants at one pinned vid, read through the restarted server while writers run."""
        with self.lock:
            acked = dict(self.acked)  # every ack so far: committed at or before the vid read next
        with cc.connect(self.url, timeout=60) as cat:
            v = cat.latest_vid
            parents = {o.path.rsplit("/", 1)[1]: o for o in cat.query(PAIRS, v)}
            leaves = {o.path.split("/")[2] for o in cat.query(LEAVES, v)}
            n = cat.get("/c", v).value["stats"]["n"]
            log_vids = [c.vid for c in cat.commits(until=v)]
        if self.replica_ports:
            self.check_replicas(v, acked)
        with self.lock:
            attempted = set(self.attempted)
        bad = self.counts.violations
        lost = [name for name in acked if name not in parents]
        if lost:
            bad.append(f"acknowledged commits lost at vid {v}: {lost[:5]} ({len(lost)})")
        moved = [name for name, vid in acked.items() if name in parents and parents[name].vid != vid]
        if moved:
            bad.append(f"acknowledged commits at the wrong vid: {moved[:5]}")
        if set(parents) != leaves:
            bad.append(f"partial commits at vid {v}: parents without leaf {sorted(set(parents) - leaves)[:5]}, "
                       f"leaves without parent {sorted(leaves - set(parents))[:5]}")
        if n != len(parents):
            bad.append(f"counter drift at vid {v}: /c.stats.n = {n} but {len(parents)} pairs exist")
        phantom = set(parents) - attempted
        if phantom:
            bad.append(f"writes nobody attempted: {sorted(phantom)[:5]}")
        if log_vids != list(range(v + 1)):
            bad.append(f"commit log has gaps up to vid {v}")
        self.counts.checks += 1
        self.counts.final_vid, self.counts.final_pairs = v, len(parents)

    # ---------------------------------------------------------------- the loop
    def run(self, kills: int, acks_between: int = 5, max_pause_s: float = 0.3, progress: bool = False) -> Counts:
        t0 = time.monotonic()
        self.start_server()
        with cc.connect(self.url) as cat, cat.transaction() as t:
            t.add("/c", {"obj_type": "catalog", "stats": {"n": 0}})
        threads = [threading.Thread(target=self._writer, args=(w,), daemon=True) for w in range(self.writers)]
        self.start_replicas()
        threads += [threading.Thread(target=self._replica_reader, args=(p,), daemon=True) for p in self.replica_ports]
        for th in threads:
            th.start()
        try:
            for k in range(kills):
                self.wait_for_acks(acks_between)
                time.sleep(self.rng.uniform(0, max_pause_s))  # a random moment under load
                self.writer_down.set()
                self.kill_server()
                t1 = time.monotonic()
                self.start_server()
                self.counts.restart_s.append(time.monotonic() - t1)
                self.writer_down.clear()
                self.counts.restarts += 1
                self.check()
                if self.counts.violations:
                    break
                if progress and (k + 1) % 10 == 0:
                    with self.lock:
                        self.counts.acked, self.counts.in_doubt = len(self.acked), len(self.in_doubt)
                    self.counts.seconds = time.monotonic() - t0
                    print(f"  {k + 1} kills: {self.counts.line()}", flush=True)
            self.wait_for_acks(acks_between)
        finally:
            self.stop.set()
            for th in threads:
                th.join(30)
        if not self.counts.violations:
            self.check()  # once more with the writers stopped
        self.stop_server()
        for proc in self.replica_procs:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
        present = self._present()
        with self.lock:
            self.counts.acked, self.counts.in_doubt = len(self.acked), len(self.in_doubt)
            self.counts.in_doubt_landed = len(self.in_doubt & present)
        self.counts.seconds = time.monotonic() - t0
        return self.counts

    def _present(self) -> set[str]:
        with cc.Catalog.open(self.data_dir) as cat:  # the server is stopped: open the directory itself
            return {o.path.rsplit("/", 1)[1] for o in cat.query(PAIRS)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kills", type=int, default=100)
    ap.add_argument("--writers", type=int, default=6)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--replicas", type=int, default=0, help="reading `semcat serve` replicas, never killed")
    ap.add_argument("--data", help="data directory (default: a new temporary one)")
    args = ap.parse_args(argv)
    data = args.data or os.path.join(tempfile.mkdtemp(prefix="semcat-crash-"), "data")
    loop = CrashLoop(data, writers=args.writers, seed=args.seed, replicas=args.replicas)
    print(f"crash loop: {args.kills} SIGKILLs of `semcat serve` under {args.writers} committing writers; "
          f"{f'and {args.replicas} reading replicas ' if args.replicas else ''}data {data}", flush=True)
    counts = loop.run(args.kills, progress=True)
    print(counts.line())
    for v in counts.violations:
        print("VIOLATION:", v)
    return 1 if counts.violations else 0


if __name__ == "__main__":
    sys.exit(main())
