"""CPU per test file: a pytest plugin that charges each test (setup, call and teardown) the CPU of the
pytest process (RUSAGE_SELF) and of the child processes it waited for in that time (RUSAGE_CHILDREN:
the `semcat` servers and CLIs a test starts and stops, their own waited children included), and a
summary of those records by file.

    PYTEST_CPU_OUT=/tmp/cpu .venv/bin/python -m pytest -p bench.pytest_cpu -n 2 --dist loadfile -m "not slow"
    .venv/bin/python -m bench.pytest_cpu /tmp/cpu [--top 40]

Each pytest-xdist worker appends JSON lines to PYTEST_CPU_OUT.<pid>.jsonl (one per test: node id, self,
kids, wall seconds). What it does not see: processes nobody waited for (a JVM started by PySpark, SQL
workers of a server that was killed), which BSD process accounting does (docs/testing.md). A module's
fixtures are charged to its first test; the summary is per file, where that evens out."""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import resource
import time
from collections.abc import Iterator
from typing import Any

import pytest

__all__ = ["pytest_runtest_protocol", "summary"]


def _cpu() -> tuple[float, float]:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    out = os.environ.get("PYTEST_CPU_OUT")
    if not out:
        yield
        return
    s0, k0 = _cpu()
    w0 = time.time()
    yield
    s1, k1 = _cpu()
    with open(f"{out}.{os.getpid()}.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"id": item.nodeid, "self": round(s1 - s0, 3), "kids": round(k1 - k0, 3),
                             "wall": round(time.time() - w0, 3)}) + "\n")


def summary(out: str) -> list[dict[str, Any]]:
    """Per test file, most CPU first: {file, cpu, self, kids, wall, tests}."""
    files: dict[str, dict[str, Any]] = collections.defaultdict(
        lambda: {"cpu": 0.0, "self": 0.0, "kids": 0.0, "wall": 0.0, "tests": 0})
    paths = glob.glob(f"{out}.*.jsonl")
    if not paths:
        raise SystemExit(f"no records at {out}.*.jsonl: run `python -m pytest -p bench.pytest_cpu` (from the repository) with PYTEST_CPU_OUT={out}")
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                r = json.loads(line)
                f = files[r["id"].split("::")[0]]
                f["self"] += r["self"]
                f["kids"] += r["kids"]
                f["cpu"] += r["self"] + r["kids"]
                f["wall"] += r["wall"]
                f["tests"] += 1
    return sorted(({"file": k, **v} for k, v in files.items()), key=lambda r: -r["cpu"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="the PYTEST_CPU_OUT prefix of a run")
    ap.add_argument("--top", type=int, default=40, help="files to list (default 40)")
    args = ap.parse_args()
    rows = summary(args.out)
    total = {k: sum(r[k] for r in rows) for k in ("cpu", "self", "kids", "wall")}
    print(f"{len(rows)} files: CPU {total['cpu']:.0f} s (in pytest {total['self']:.0f}, waited children "
          f"{total['kids']:.0f}); the tests' wall times add up to {total['wall']:.0f} s")
    print(f"{'CPU s':>7} {'pytest':>7} {'kids':>7} {'wall':>7} {'tests':>5}  file")
    for r in rows[:args.top]:
        print(f"{r['cpu']:7.1f} {r['self']:7.1f} {r['kids']:7.1f} {r['wall']:7.1f} {r['tests']:5d}  {r['file']}")
    if len(rows) > args.top:
        print(f"... {len(rows) - args.top} more files (--top {len(rows)})")


if __name__ == "__main__":
    main()
