"""Bulk onboarding of an Iceberg catalog: `semcat import iceberg` without --table imports every table of
a real pyiceberg SqlCatalog (or one namespace), idempotently, and `--watch` follows new snapshots."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog

import catalog_core as cc
from catalog_core.iceberg import catalog_tables, target_name

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "name": pa.array([f"n{i}" for i in ids], pa.string())})


@pytest.fixture
def ice(tmp_path):
    wh = tmp_path / "iceberg-wh"
    wh.mkdir()
    c = SqlCatalog("src", uri=f"sqlite:///{tmp_path}/iceberg.db", warehouse=f"file://{wh}")
    for ns in ("db", "db.sub", "other"):
        c.create_namespace(ns)
    for ident, ids in (("db.a", [1, 2, 3]), ("db.b", [10]), ("db.sub.c", [7, 8]), ("other.d", [5])):
        t = c.create_table(ident, schema=_rows([]).schema)
        t.append(_rows(ids))
    c.load_table("db.a").append(_rows([4]))  # two snapshots of history
    return c


def _cmd(tmp_path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "mcp_server.cli", "import", "iceberg", "--data", str(tmp_path / "data"),
            "--catalog-uri", f"sqlite:///{tmp_path}/iceberg.db", "--warehouse", f"file://{tmp_path}/iceberg-wh",
            "--catalog-name", "src", *extra]


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))


def test_catalog_tables_lists_nested_namespaces_and_names_map_one_to_one(ice):
    assert catalog_tables(ice) == ["db.a", "db.b", "db.sub.c", "other.d"]
    assert catalog_tables(ice, "db") == ["db.a", "db.b", "db.sub.c"]
    assert target_name("lake", "db.sub.c") == "lake.db_sub.c"
    with pytest.raises(cc.NoSuchTableError, match="namespace 'nope' was not found"):
        catalog_tables(ice, "nope")


def test_the_whole_catalog_imports_with_history_and_a_rerun_writes_nothing(tmp_path, ice):
    run = subprocess.run(_cmd(tmp_path, "--into", "lake", "--create"), env=_env(), capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    assert "db.a -> lake.db.a: 2 commits" in run.stdout and "other.d -> lake.other.d: 1 commits" in run.stdout
    assert "sync 1: 4 tables, 4 changed, 0 failed" in run.stderr
    cat = cc.Catalog.open(str(tmp_path / "data"))
    for ident in catalog_tables(ice):
        want = sorted(tuple(r.values()) for r in ice.load_table(ident).scan().to_arrow().to_pylist())
        got = sorted(tuple(r) for r in cc.run_sql(cat, f"SELECT id, name FROM {target_name('lake', ident)}").rows)
        assert got == want, ident
    vid = cat.latest_vid
    cat.close()
    again = subprocess.run(_cmd(tmp_path, "--into", "lake"), env=_env(), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "sync 1: 4 tables, 0 changed, 0 failed" in again.stderr and again.stdout == ""
    cat = cc.Catalog.open(str(tmp_path / "data"))
    assert cat.latest_vid == vid
    cat.close()


def test_one_namespace_and_usage_errors(tmp_path, ice):
    run = subprocess.run(_cmd(tmp_path, "--namespace", "other", "--into", "lake", "--create"), env=_env(),
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "sync 1: 1 tables, 1 changed" in run.stderr
    bad = subprocess.run(_cmd(tmp_path, "--into", "lake.core"), env=_env(), capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "--into names a catalog" in bad.stderr
    both = subprocess.run(_cmd(tmp_path, "--table", "db.a", "--watch", "1", "--into", "lake.x.a"), env=_env(),
                          capture_output=True, text=True, timeout=120)
    assert both.returncode != 0 and "--namespace and --watch go with a whole catalog" in both.stderr


@pytest.mark.slow  # a watcher subprocess over a minute or so; the rest of the file stays in the default tier
def test_watch_picks_up_a_new_snapshot_and_stops_cleanly(tmp_path, ice):
    proc = subprocess.Popen(_cmd(tmp_path, "--into", "lake", "--create", "--watch", "0.2", "--max-syncs", "3000"),
                            env=dict(_env(), PYTHONFAULTHANDLER="1"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(ln) for ln in proc.stdout], daemon=True).start()  # type: ignore[union-attr]

    def wait_for(text: str, timeout: float = 120) -> str:
        deadline = time.monotonic() + timeout
        seen = []
        while time.monotonic() < deadline:
            try:
                ln = lines.get(timeout=1)
            except queue.Empty:
                assert proc.poll() is None, "the watcher exited: " + "".join(seen)
                continue
            seen.append(ln)
            if text in ln:
                return ln
        raise AssertionError(f"no line with {text!r} within {timeout} s: {''.join(seen)[-2000:]}")

    try:
        wait_for("sync 1: 4 tables, 4 changed")
        ice.load_table("other.d").append(_rows([6, 7]))
        assert "1 commits" in wait_for("other.d -> lake.other.d")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:  # where it hangs: PYTHONFAULTHANDLER prints every thread on SIGABRT
            proc.send_signal(signal.SIGABRT)
            proc.wait(timeout=30)
            time.sleep(1)
            dump = []
            while not lines.empty():
                dump.append(lines.get())
            raise AssertionError("the watcher did not stop within 60 s of SIGTERM:\n" + "".join(dump)[-4000:]) from None
    assert rc == 0
    cat = cc.Catalog.open(str(tmp_path / "data"))
    assert sorted(r[0] for r in cc.run_sql(cat, "SELECT id FROM lake.other.d").rows) == [5, 6, 7]
    cat.close()


@pytest.mark.parametrize("at", range(1, 40))
def test_a_stop_asked_at_any_line_of_the_watchers_wait_never_waits_for_itself(at):
    """The watcher's SIGTERM handler sets its stop in the main thread, between any two lines of that
    thread, including the lines of the stop's own `wait`. `set` there must return (a threading.Event's
    set would wait forever for the lock its wait holds; the CI's slow tier saw the watcher not stop)."""
    from mcp_server.cli.iceberg import _Stop

    stop, lines, done = _Stop(), [0], []

    def tracer(frame, event, arg):
        if event == "line":
            lines[0] += 1
            if lines[0] == at:
                stop.set()  # as a signal handler would, on this line
        return tracer

    def waiter():
        sys.settrace(tracer)
        try:
            done.append(stop.wait(0.05))
        finally:
            sys.settrace(None)

    t = threading.Thread(target=waiter, daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), f"set() on line {at} of wait() never returned"
    assert done == [lines[0] >= at]  # set on a line of the wait: the wait says so
    stop.close()
