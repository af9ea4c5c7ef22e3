"""semcat over HTTP: durable commits/s with many client processes, and plan_files latency over
HTTP vs embedded (vs pyiceberg's SqlCatalog when bench.iceberg_side is available).

    .venv/bin/python -m bench.bench_http [--quick]

The server is a real `semcat serve` subprocess (one process owns the catalog); clients are
separate processes using `cc.connect(url)`. Each commit is a small transaction (add one object
+ merge a shared counter, distinct paths, so they never conflict) and is acknowledged only after
its WAL sync. The store_sales table (2,191 daily partitions, ~23 files each by default) is built
with one bulk transaction through the embedded API.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import date, timedelta
from typing import Any

import httpx

import catalog_core as cc
from bench.serving import free_port, wait_healthy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = "bench.tpcds.store_sales"
RANGES = (("2001-06-01", 1), ("2001-01-01", 365))


def log(msg: str) -> None:
    print(f"[bench_http {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def ms(x: float) -> str:
    return f"{x * 1e3:.2f}"


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(len(s) * p))]


# ------------------------------------------------------------------ the table
def file_specs(n_files: int) -> tuple[list[dict], bool]:
    """The same synthetic files pyiceberg's side loads, if that module is there."""
    try:
        from bench.iceberg_side import file_specs as shared

        return shared(n_files), True
    except ImportError:
        return _own_specs(n_files), False


def _own_specs(n_files: int) -> list[dict]:
    d0 = date(1998, 1, 1)
    days = [(d0 + timedelta(k)).isoformat() for k in range(2191)]
    out = []
    for i in range(n_files):
        day = days[i * len(days) // n_files]
        out.append({"day": day, "file_id": f"f{i:07d}", "path": f"s3://bench/store_sales/{day}/f{i:07d}.parquet",
                    "row_count": 100_000 + i % 900_000, "size_bytes": 3_000_000 + i,
                    "columns": {"ss_sold_date": {"min": day, "max": day, "null_count": 0},
                                "ss_item_sk": {"min": 1 + i % 40, "max": 204_000, "null_count": 0}}})
    return out


def build_table(cat: cc.Catalog, specs: list[dict]) -> float:
    """One bulk transaction: catalog, namespace, table, 2,191 partitions and every file leaf."""
    t0 = time.perf_counter()
    base = "/" + TABLE.replace(".", "/")
    with cat.transaction(author="bench", message="load store_sales") as t:
        t.add("/bench", {"obj_type": "catalog", "properties": {}})
        t.add("/bench/tpcds", {"obj_type": "namespace", "properties": {}})
        t.add(base, {"obj_type": "table", "format": "parquet", "partition_by": ["ss_sold_date"],
                     "schema": {"schema_id": 0, "columns": []}, "stats": {}, "properties": {}})
        seen: set[str] = set()
        for s in specs:
            part = f"{base}/ss_sold_date={s['day']}"
            if s["day"] not in seen:
                seen.add(s["day"])
                t.add(part, {"obj_type": "partition", "ss_sold_date": s["day"], "stats": {}})
            t.add(f"{part}/{s['file_id']}", {"obj_type": "file", "path": s["path"], "format": "parquet",
                                             "row_count": s["row_count"], "size_bytes": s["size_bytes"],
                                             "columns": s["columns"]}, leaf=True)
    return time.perf_counter() - t0


def where(day_lo: str, days: int) -> str:
    hi = (date.fromisoformat(day_lo) + timedelta(days)).isoformat()
    return f'ss_sold_date >= "{day_lo}" and ss_sold_date < "{hi}"'


def time_plan(cat: Any, repeat: int) -> dict[int, tuple[list[float], int]]:
    out = {}
    for day_lo, days in RANGES:
        cat.plan_files(TABLE, where(day_lo, days))  # warm-up
        times, n = [], 0
        for _ in range(repeat):
            t0 = time.perf_counter()
            n = len(cat.plan_files(TABLE, where(day_lo, days)))
            times.append(time.perf_counter() - t0)
        out[days] = (times, n)
    return out


def iceberg_plan(root: str, n_files: int, repeat: int) -> dict[int, tuple[list[float], int]] | str:
    try:
        from bench.iceberg_side import build_store_sales, plan_files_bench
    except ImportError as exc:
        return f"bench.iceberg_side not importable ({exc})"
    try:
        table = build_store_sales(os.path.join(root, f"n{n_files}"), n_files)
        out = {}
        for day_lo, days in RANGES:
            r = plan_files_bench(table, day_lo, days, repeat=repeat + 1)
            out[days] = (r["times"][1:], r["files"])  # first run warms caches, as on semcat's side
        return out
    except Exception as exc:  # a helper module still in progress must not sink this benchmark
        return f"pyiceberg side failed: {type(exc).__name__}: {exc}"


# ------------------------------------------------------------------ the server
WHAT_IF = "--serve-with-wal-sync-outside-gil"


def _serve_what_if(argv: list[str]) -> None:
    """`semcat serve` with one engine change: the batch is written without sync and the WAL is
    then synced with `flush_wal(True)`, which (unlike a synced `write` in rocksdict 0.3.29)
    releases the GIL, so other requests keep flowing and can join the next commit group."""
    from rocksdict import WriteOptions

    from catalog_core import storage
    from catalog_core.codec import vid_bytes
    from mcp_server.cli import main as cli

    nosync = WriteOptions()

    def write(self: Any, wb: Any, latest_vid: int) -> None:
        wb.put(storage.LATEST, vid_bytes(latest_vid))
        self.db.write(wb, nosync)
        self.db.flush_wal(True)
        self.latest_vid = latest_vid

    storage.Store.write = write
    cli(argv, prog_name="semcat")


def start_server(data_dir: str, log_path: str, what_if: bool = False,
                 protocol: str = "ospl") -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "SEMCAT_TOKENS"}
    env["PYTHONPATH"] = ROOT
    out = open(log_path, "ab")
    entry = ["-m", "bench.bench_http", WHAT_IF] if what_if else ["-m", "mcp_server.cli"]
    proc = subprocess.Popen([sys.executable, *entry, "serve", "--data", data_dir, "--create",
                             "--port", str(port), "--protocol", protocol],
                            cwd=ROOT, env=env, stdout=out, stderr=out)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(proc, url, 60, 0.05, lambda: f"server exited: see {log_path}", f"server did not start: see {log_path}")
    return proc, url


# ------------------------------------------------------------------ commits
def _one_commit(cat: Any, name: str) -> float:
    t0 = time.perf_counter()
    with cat.transaction(author="bench") as t:
        t.add(f"/counter/{name}", {"obj_type": "namespace"})
        t.merge("/counter", {"stats": {"n": {"op": "+", "val": 1}}})
    return time.perf_counter() - t0


def _client(url: str, tag: str, n: int, ready: Any, go: Any, out: Any) -> None:
    cat = cc.connect(url)
    for i in range(5):  # warm the connection
        _one_commit(cat, f"{tag}-warm{i}")
    ready.put(1)
    go.wait()
    start = time.perf_counter()
    lats = [_one_commit(cat, f"{tag}-{i}") for i in range(n)]
    out.put((start, time.perf_counter(), lats))
    cat.close()


def _groups(url: str) -> int:
    return httpx.get(url + "/v1/catalog").json()["commit_groups"]


def http_commits(url: str, procs: int, total: int) -> dict:
    ctx = mp.get_context("spawn")
    ready, out, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    per = max(1, total // procs)
    tag = f"p{procs}-{time.time_ns()}"
    workers = [ctx.Process(target=_client, args=(url, f"{tag}-{k}", per, ready, go, out)) for k in range(procs)]
    for w in workers:
        w.start()
    for _ in workers:
        ready.get(timeout=120)
    g0 = _groups(url)
    t0 = time.perf_counter()
    go.set()
    results = [out.get(timeout=600) for _ in workers]
    for w in workers:
        w.join()
    wall = max(end for _s, end, _l in results) - t0
    lats = [x for _s, _e, ls in results for x in ls]
    return {"procs": procs, "commits": len(lats), "per_s": len(lats) / wall, "p50": statistics.median(lats),
            "p99": pct(lats, 0.99), "per_group": len(lats) / max(1, _groups(url) - g0)}


def embedded_commits(cat: cc.Catalog, threads: int, total: int) -> dict:
    per = max(1, total // threads)
    lats: list[float] = []
    lock = threading.Lock()
    tag = f"e{threads}-{time.time_ns()}"

    def work(k: int) -> None:
        mine = [_one_commit(cat, f"{tag}-{k}-{i}") for i in range(per)]
        with lock:
            lats.extend(mine)

    ths = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    g0, t0 = cat.engine_info()["groups"], time.perf_counter()
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    wall = time.perf_counter() - t0
    return {"procs": threads, "commits": len(lats), "per_s": len(lats) / wall, "p50": statistics.median(lats),
            "p99": pct(lats, 0.99), "per_group": len(lats) / max(1, cat.engine_info()["groups"] - g0)}


# ------------------------------------------------------------------ report
def median_run(runs: list[dict]) -> dict:
    """The run with the median commits/s (its latencies too), plus the spread of all runs."""
    ordered = sorted(runs, key=lambda r: r["per_s"])
    mid = dict(ordered[len(ordered) // 2])
    mid["runs_per_s"] = [round(r["per_s"]) for r in runs]
    return mid


def report_commits(http: list[dict], emb: list[dict], what_if: list[dict] | None) -> None:
    print("\nDurable commits (add one object + merge a counter; acknowledged after the WAL sync)")
    print(f"{'clients':>7} | {'HTTP/s':>7} {'p50 ms':>7} {'p99 ms':>7} {'grp':>4} | {'embedded/s':>10} {'p99 ms':>7} "
          f"{'grp':>4} | {'HTTP/emb':>8}" + (f" | {'what-if/s':>9} {'p99 ms':>7} {'grp':>4}" if what_if else ""))
    for i, (h, e) in enumerate(zip(http, emb)):
        line = (f"{h['procs']:>7} | {h['per_s']:>7.0f} {ms(h['p50']):>7} {ms(h['p99']):>7} {h['per_group']:>4.1f} | "
                f"{e['per_s']:>10.0f} {ms(e['p99']):>7} {e['per_group']:>4.1f} | {h['per_s'] / e['per_s']:>8.2f}")
        if what_if:
            w = what_if[i]
            line += f" | {w['per_s']:>9.0f} {ms(w['p99']):>7} {w['per_group']:>4.1f}"
        print(line)
    print("HTTP: client processes against a `semcat serve` subprocess; embedded: threads in one process;\n"
          "grp: commits per group commit (one WAL sync each). Median run shown; all runs (commits/s):")
    for name, rows in (("HTTP", http), ("embedded", emb), ("what-if", what_if or [])):
        if rows:
            print(f"  {name:9}" + "  ".join(f"{r['procs']}: {r['runs_per_s']}" for r in rows))
    if what_if:
        print("what-if: an engine variant to evaluate - the WAL synced by flush_wal(True), which releases the GIL\n"
              "(rocksdict's synced write holds it, freezing the whole server during every fsync). It lets groups\n"
              "form; it pays a GIL hand-back after each sync, so it helps when fsyncs are slow.")


def report_plan(n_files: int, emb: dict, http: dict, ice: dict | str) -> None:
    print(f"\nplan_files on {TABLE}: {n_files} files in 2,191 daily partitions (median of runs, ms)")
    head = f"{'range':>9} {'files':>6} {'embedded':>9} {'HTTP':>8} {'HTTP/emb':>9}"
    print(head + (f" {'pyiceberg':>10} {'ice/emb':>8} {'ice/HTTP':>9}" if isinstance(ice, dict) else ""))
    for _lo, days in RANGES:
        (et, en), (ht, hn) = emb[days], http[days]
        assert en == hn, f"embedded planned {en} files, HTTP {hn}"
        e, h = statistics.median(et), statistics.median(ht)
        line = f"{days:>6}-day {en:>6} {ms(e):>9} {ms(h):>8} {h / e:>9.2f}"
        if isinstance(ice, dict):
            it, inn = ice[days]
            i = statistics.median(it)
            line += f" {ms(i):>10} {i / e:>8.2f} {i / h:>9.2f}" + ("" if inn == en else f"  (iceberg: {inn} files!)")
        print(line)
    if not isinstance(ice, dict):
        print(f"pyiceberg column skipped: {ice}")


def stop_server(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == [WHAT_IF]:
        return _serve_what_if(argv[1:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small run: 5,000 files, fewer commits")
    ap.add_argument("--files", type=int, default=None, help="store_sales files (default 50,000; quick 5,000)")
    ap.add_argument("--commits", type=int, default=None, help="commits per client count (default 2,000; quick 400)")
    ap.add_argument("--repeat", type=int, default=None, help="plan_files runs per range (default 7; quick 3)")
    ap.add_argument("--clients", default="1,4,16")
    ap.add_argument("--runs", type=int, default=None, help="commit runs per setting, median reported (default 3; quick 1)")
    ap.add_argument("--iceberg-root", default="/tmp/semcat-bench-iceberg", help="pyiceberg side cache")
    ap.add_argument("--no-iceberg", action="store_true")
    ap.add_argument("--no-what-if", action="store_true", help="skip the WAL-sync-outside-the-GIL what-if run")
    ap.add_argument("--out", default=None, help="also write the figures as JSON here")
    args = ap.parse_args(argv)
    n_files = args.files or (5_000 if args.quick else 50_000)
    n_commits = args.commits or (400 if args.quick else 2_000)
    repeat = args.repeat or (3 if args.quick else 7)
    clients = [int(c) for c in args.clients.split(",")]
    runs = args.runs or (1 if args.quick else 3)

    tmp = tempfile.mkdtemp(prefix="semcat-bench-http-")
    data = os.path.join(tmp, "data")
    try:
        log(f"generating {n_files} file specs")
        specs, shared = file_specs(n_files)
        cat = cc.Catalog.open(data)
        log(f"building {TABLE} in one transaction ({n_files} files{'' if shared else ', own specs'})")
        log(f"built in {build_table(cat, specs):.1f} s")
        del specs
        with cat.transaction() as t:
            t.add("/counter", {"obj_type": "catalog", "stats": {"n": 0}})
        log("plan_files, embedded")
        plan_emb = time_plan(cat, repeat)
        log("commits, embedded threads")
        emb = [median_run([embedded_commits(cat, k, n_commits) for _ in range(runs)]) for k in clients]
        cat.close()

        proc, url = start_server(data, os.path.join(tmp, "server.log"))
        try:
            remote = cc.connect(url)
            log("plan_files over HTTP")
            plan_http = time_plan(remote, repeat)
            remote.close()
            http = []
            for k in clients:
                log(f"commits over HTTP, {k} client process(es), {runs} run(s)")
                http.append(median_run([http_commits(url, k, n_commits) for _ in range(runs)]))
        finally:
            stop_server(proc)
        what_if = None
        if not args.no_what_if:
            proc, url = start_server(data, os.path.join(tmp, "server.log"), what_if=True)
            try:
                what_if = []
                for k in clients:
                    log(f"what-if (WAL sync outside the GIL): commits over HTTP, {k} client process(es)")
                    what_if.append(median_run([http_commits(url, k, n_commits) for _ in range(runs)]))
            finally:
                stop_server(proc)
        ice: dict | str = "--no-iceberg" if args.no_iceberg else "not run"
        if not args.no_iceberg:
            log("plan_files, pyiceberg SqlCatalog (cached build under --iceberg-root)")
            ice = iceberg_plan(args.iceberg_root, n_files, repeat)
        report_commits(http, emb, what_if)
        report_plan(n_files, plan_emb, plan_http, ice)
        if args.out:
            with open(args.out, "w") as f:
                json.dump({"commits_http": http, "commits_embedded": emb, "commits_http_what_if": what_if,
                           "plan_embedded": plan_emb, "plan_http": plan_http,
                           "plan_iceberg": ice, "files": n_files}, f, indent=2)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
