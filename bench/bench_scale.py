"""Scale: a tree of T tables x F files, served by a real `semcat serve`, at two tree sizes in one run.

    .venv/bin/python -m bench.bench_scale                                  # 100 tables x 1,000 files (~0.1M objects)
    .venv/bin/python -m bench.bench_scale --tables 1000 --files 10000     # issue 26's 10M-object target

The 10M-object run takes ~17 minutes on the 2 shared cores (build ~14) and 0.6 GB of disk after
close (`--root` on a disk with a few GB free: it held ~4 GB while building before the WAL cap of
`_engine/storage.py`); its table is in the README.

The tree is built through the public catalog API (`Catalog.transaction`, batches of leaf adds: the
bulk path) in a temporary directory: tables `scale.ns<k>.t<i>_<subject>` (100 per namespace), each
partitioned by day with F files spread over F/10 partitions, every file with row count, size and
min/max/null statistics, the table with its schema and stats, and an annotation on every table
(`table.description`, through `semantic.annotations`). It is built first with T/10 tables (the
small tree), measured, then grown to T tables (the large tree) and measured again, so the two rows
differ only by the number of tables around the ones measured: a latency that grows between them
grows with the tree, where it should grow with the answer (the measured tables, the search
results, the diffs are the same size in both).

At each size: build seconds (and objects/s), disk size of the data directory, then a `semcat serve`
subprocess (uvicorn on loopback) on the catalog, whose resident memory (VmRSS from /proc) is read
once it answers /healthz (catalog open) and again after one warm-up call of every measured
operation, and the p50 / p95 latency over `--calls` calls (after that warm-up; the calls of one
operation back to back) with the server's CPU time per call (/proc/<pid>/stat over those calls: less
sensitive than wall time to other processes on a shared machine) of:

- `plan_files` of a table, all F files and one partition's (POST /v1/plan_files);
- `describe_table`, `search_tables` (limit 10), `check_staleness` (limit 20) over MCP (streamable
  HTTP at /mcp, the real MCP client);
- `diff_snapshots` over MCP and POST /v1/diff (every change streamed) across one commit of 10 and one
  of 1,000 changed objects made on top of the tree just before the server starts.

The last column of the table is large / small (the tree grew T/(T/10) = 10x): ~1x is the goal for
everything except what is documented to scan the catalog. The machine is shared: read medians.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import anyio
import httpx
from mcp import Client

import catalog_core as cc
from bench.serving import free_port, wait_healthy
from semantic.annotations import new_annotation, write_annotations

BATCH = 50_000
PER_NS = 100
FILES_PER_PART = 10
SUBJECTS = ("orders", "customers", "payments", "shipments", "sessions", "inventory", "returns", "campaigns",
            "invoices", "refunds")
COLUMNS = [("order_id", "long"), ("customer_id", "long"), ("day", "date"), ("amount_cents", "long"),
           ("status", "string")]


def table_name(i: int) -> str:
    return f"scale.ns{i // PER_NS:03d}.t{i:05d}_{SUBJECTS[i % len(SUBJECTS)]}"


def _day(p: int) -> str:
    return f"{2020 + p // 336:04d}-{1 + (p // 28) % 12:02d}-{1 + p % 28:02d}"


def _table_value(n_files: int) -> dict[str, Any]:
    return {"obj_type": "table", "format": "parquet", "partition_by": ["day"],
            "schema": {"schema_id": 0, "columns": [{"id": k + 1, "name": n, "type": t, "nullable": True}
                                                   for k, (n, t) in enumerate(COLUMNS)]},
            "stats": {"row_count": n_files * 1000, "file_count": n_files,
                      "columns": {"order_id": {"min": 0, "max": n_files * 1000, "null_count": 0},
                                  "amount_cents": {"min": 0, "max": 99_999, "null_count": 0}}},
            "properties": {}}


def build(cat: cc.Catalog, first: int, last: int, n_files: int) -> int:
    """Tables first..last-1 with their partitions and files, then their annotations; objects written."""
    n = 0
    txn = cat.transaction(author="bench", message="load")
    have = {o.obj_id for o in cat.children("/scale")} if cat.get("/scale") is not None else set()
    if not have:
        txn.add("/scale", {"obj_type": "catalog", "properties": {}})
    parts = max(1, n_files // FILES_PER_PART)
    next_commit = BATCH
    for i in range(first, last):
        ns = f"ns{i // PER_NS:03d}"
        if ns not in have:
            have.add(ns)
            txn.add(f"/scale/{ns}", {"obj_type": "namespace", "properties": {}})
            n += 1
        tpath = cc.lake.table_path(table_name(i))
        txn.add(tpath, _table_value(n_files))
        n += 1
        for p in range(parts):
            day = _day(p)
            ppath = f"{tpath}/day={day}"
            txn.add(ppath, {"obj_type": "partition", "day": day, "stats": {"row_count": 1000 * FILES_PER_PART}})
            n += 1
            files = [(f"f{f:03d}", {
                "obj_type": "file", "path": f"/lake/scale/t{i}/day={day}/f{f:03d}.parquet", "format": "parquet",
                "row_count": 1000, "size_bytes": 65_536,
                "columns": {"order_id": {"min": (p * FILES_PER_PART + f) * 1000,
                                         "max": (p * FILES_PER_PART + f) * 1000 + 999, "null_count": 0},
                            "day": {"min": day, "max": day, "null_count": 0}}})
                for f in range(FILES_PER_PART if p < parts - 1 else n_files - FILES_PER_PART * (parts - 1))]
            txn.add_many(ppath, files, leaf=True)  # the bulk-load call: a partition's files at once
            n += len(files)
            if n >= next_commit:  # a commit every BATCH objects or so, at a partition's end
                txn.commit()
                txn = cat.transaction(author="bench", message="load")
                next_commit = n + BATCH
    txn.commit()
    vid = cat.latest_vid
    for lo in range(first, last, 100):
        anns = [new_annotation(cat, table_name(i), "table", "table.description",
                               f"{SUBJECTS[i % len(SUBJECTS)].capitalize()} of shard {i}: one row per event, "
                               f"amounts in cents, loaded daily.", author="bench", vid=vid)
                for i in range(lo, min(last, lo + 100))]
        write_annotations(cat, anns)
        n += 2 * len(anns)  # the _semantic folder and the annotation
    return n


def change(cat: cc.Catalog, table: str, n: int, tag: str) -> tuple[int, int]:
    """One commit of `n` changed objects in `table` (new files over its partitions, and the table's
    stats); (vid before, vid after)."""
    before = cat.latest_vid
    tpath = cc.lake.table_path(table)
    parts = [o.path for o in cat.children(tpath) if o.value.get("obj_type") == "partition"]
    with cat.transaction(author="bench", message=f"{n} changes") as t:
        for i in range(n - 1):
            t.add(f"{parts[i % len(parts)]}/{tag}-{i:05d}",
                  {"obj_type": "file", "path": f"/lake/{tag}-{i}.parquet", "format": "parquet", "row_count": 1,
                   "size_bytes": 10}, leaf=True)
        t.merge(tpath, {"stats": {"file_count": {"op": "+", "val": n - 1}}})
    assert t.vid is not None
    return before, t.vid


def du(path: str) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return total


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def start_server(data: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "mcp_server.cli", "serve", "--data", data, "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(proc, url, 120, 0.1,
                 lambda: f"semcat serve exited: {proc.stderr.read().decode()[-2000:] if proc.stderr else ''}",
                 "semcat serve did not answer /healthz within 120 s")
    return proc, url


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


Op = tuple[str, Any]


def cpu_ms(pid: int) -> float:
    """CPU time (user + system) of process `pid` so far, ms."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


async def measure(url: str, ops: list[Op], calls: int, on_warm: Any,
                  pid: int) -> tuple[dict[str, list[float]], dict[str, float]]:
    """Each op once (warm-up), `on_warm()`, then `calls` calls of each op in turn: ms per call,
    and the server's CPU ms per call of each op (its CPU time over the op's calls / calls)."""
    times: dict[str, list[float]] = {}
    cpu: dict[str, float] = {}
    async with httpx.AsyncClient(base_url=url, timeout=120) as h, Client(url + "/mcp") as c:
        async def one(op: Any) -> None:
            kind, arg = op
            if kind == "mcp":
                r = await c.call_tool(*arg)
                if r.is_error:
                    raise SystemExit(f"{arg[0]} failed: {getattr(r.content[0], 'text', r.content)}")
            else:
                r2 = await h.post(arg[0], **arg[1])
                if r2.status_code != 200:
                    raise SystemExit(f"POST {arg[0]}: {r2.status_code} {r2.text[:500]}")
                _ = r2.content

        for _label, op in ops:
            await one(op)
        on_warm()
        for label, op in ops:
            c0 = cpu_ms(pid)
            for _ in range(calls):
                t0 = time.perf_counter()
                await one(op)
                times.setdefault(label, []).append((time.perf_counter() - t0) * 1000)
            cpu[label] = (cpu_ms(pid) - c0) / calls
    return times, cpu


def run_size(root: str, cat: cc.Catalog, tables: int, n_files: int, calls: int) -> dict[str, Any]:
    """Measure the tree as it is now (`tables` tables), after two change commits."""
    t = table_name(0)
    d10 = change(cat, table_name(1), 10, f"c10-{tables}")
    d1000 = change(cat, table_name(2), 1000, f"c1000-{tables}")
    data = cat.data_dir
    cat.close()
    row: dict[str, Any] = {"tables": tables, "disk_mb": du(data) / 2**20}
    proc, url = start_server(data)
    try:
        time.sleep(0.5)
        row["rss_open_mb"] = rss_mb(proc.pid)
        day = _day(0)
        ops: list[tuple[str, Op]] = [
            (f"plan_files ({n_files:,} files)", ("http", ("/v1/plan_files", {"json": {"table": t}}))),
            (f"plan_files (1 partition, {min(n_files, FILES_PER_PART)} files)",
             ("http", ("/v1/plan_files", {"json": {"table": t, "where": f'day = "{day}"'}}))),
            ("describe_table", ("mcp", ("describe_table", {"table": t}))),
            ("search_tables", ("mcp", ("search_tables", {"query": "orders shard 42", "limit": 10}))),
            ("check_staleness", ("mcp", ("check_staleness", {"limit": 20}))),
            ("diff_snapshots (10 changes)", ("mcp", ("diff_snapshots", {"from_snapshot": d10[0],
                                                                        "to_snapshot": d10[1]}))),
            ("diff_snapshots (1,000 changes)", ("mcp", ("diff_snapshots", {"from_snapshot": d1000[0],
                                                                           "to_snapshot": d1000[1]}))),
            ("/v1/diff (10 changes)", ("http", ("/v1/diff", {"json": {"from_ref": d10[0], "to_ref": d10[1]}}))),
            ("/v1/diff (1,000 changes)", ("http", ("/v1/diff", {"json": {"from_ref": d1000[0],
                                                                          "to_ref": d1000[1]}}))),
        ]
        warm: dict[str, float] = {}
        times, cpu = anyio.run(measure, url, ops, calls, lambda: warm.update(rss=rss_mb(proc.pid)), proc.pid)
        row["rss_warm_mb"] = warm["rss"]
        row["rss_end_mb"] = rss_mb(proc.pid)
        row["ops"] = {k: (statistics.median(v), pct(v, 95), cpu[k]) for k, v in times.items()}
    finally:
        stop_server(proc)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", type=int, default=100, help="tables in the large tree (the small one has 1/10)")
    ap.add_argument("--files", type=int, default=1000, help="files per table")
    ap.add_argument("--calls", type=int, default=20, help="timed calls per operation (after one warm-up)")
    ap.add_argument("--root", default=None, help="where the tree is built (default: a temporary directory)")
    ap.add_argument("--json", default=None, help="also write the figures to this file")
    a = ap.parse_args()
    if a.tables < 30 or a.files < 1:
        raise SystemExit("--tables must be at least 30 (the small tree has a tenth of them, and three are measured) and --files at least 1")
    small = a.tables // 10
    if a.root is not None:
        os.makedirs(a.root, exist_ok=True)  # --root names where to build: made when missing
    tmp = tempfile.mkdtemp(prefix="semcat-bench-scale-", dir=a.root)
    rows = []
    try:
        data = os.path.join(tmp, "data")
        built = 0
        for lo, hi in ((0, small), (small, a.tables)):
            cat = cc.Catalog.open(data)
            t0 = time.perf_counter()
            n = build(cat, lo, hi, a.files)
            secs = time.perf_counter() - t0
            built += n
            print(f"built tables {lo}..{hi - 1}: {n:,} objects in {secs:.1f} s ({n / secs:,.0f}/s); tree "
                  f"{built:,} objects", flush=True)
            row = run_size(tmp, cat, hi, a.files, a.calls)
            row.update(objects=built, build_s=secs, build_rate=n / secs)
            rows.append(row)
            cat = cc.Catalog.open(data)
            cat.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    s, b = rows
    print(f"\ntree: {a.files:,} files per table, {FILES_PER_PART} per partition; {a.calls} calls per operation; "
          f"ms p50 / p95 (the server's CPU ms per call)")
    print(f"| {'':38} | {s['tables']:,} tables | {b['tables']:,} tables | large / small |")
    print("|---|---|---|---|")
    print(f"| {'objects':38} | {s['objects']:,} | {b['objects']:,} | {b['objects'] / s['objects']:.1f}x |")
    print(f"| {'build s, this step (objects/s)':38} | {s['build_s']:.1f} ({s['build_rate']:,.0f}/s) | "
          f"{b['build_s']:.1f} ({b['build_rate']:,.0f}/s) | |")
    for key, label in (("disk_mb", "disk MB"), ("rss_open_mb", "server RSS MB, catalog open"),
                       ("rss_warm_mb", "server RSS MB, after warm-up"), ("rss_end_mb", "server RSS MB, after run")):
        print(f"| {label:38} | {s[key]:,.0f} | {b[key]:,.0f} | {b[key] / s[key]:.1f}x |")
    for op, (p50, p95, cpu) in s["ops"].items():
        bp50, bp95, bcpu = b["ops"][op]
        print(f"| {op:38} | {p50:.1f} / {p95:.1f} ({cpu:.1f}) | {bp50:.1f} / {bp95:.1f} ({bcpu:.1f}) | "
              f"{bp50 / p50:.1f}x ({bcpu / max(cpu, 0.01):.1f}x) |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
