"""run_sql's worker pool: a worker serves many statements, but only after clean ones; every
statement gets a connection of its own (nothing of one statement is visible to the next); its
soft address-space limit is set per statement under a hard limit the statement cannot raise;
concurrent statements get workers of their own, up to a bound. Real worker processes throughout
(their pids, /proc/<pid>/limits)."""

from __future__ import annotations

import os
import threading

import pytest

import catalog_core as cc
from catalog_core.errors import InvalidValueError, SqlRefusedError, SqlTimeoutError
from catalog_core.sql import snapcache, worker
from catalog_core.sql.sandbox import MEMORY_LIMIT


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def address_space_limits(pid: int) -> tuple[int, int]:
    with open(f"/proc/{pid}/limits") as f:
        for line in f:
            if line.startswith("Max address space"):
                soft, hard = line.split()[3:5]
                return int(soft), int(hard)
    raise AssertionError("no address space line")


def test_a_worker_serves_consecutive_clean_statements(wh, pool1):
    assert cc.run_sql(wh.cat, "SELECT count(*) FROM wh.sales.orders").rows == [[9]]
    first = worker.last_worker()
    assert first is not None and alive(first)
    assert cc.run_sql(wh.cat, "SELECT count(*) FROM wh.crm.customers").rows == [[2]]
    # an ordinary SQL error is a clean end too
    with pytest.raises(cc.CatalogError):
        cc.run_sql(wh.cat, "SELECT no_such_column FROM wh.sales.orders")
    assert cc.run_sql(wh.cat, "SELECT 1").rows == [[1]]
    assert worker.last_worker() == first
    assert first in worker.workers()["idle"]


@pytest.mark.parametrize("sql, kwargs, error", [
    # killed: one scalar call never reaches an interrupt check
    ("SELECT md5(repeat('a', x)) FROM (VALUES (900000000)) t(x)", dict(timeout_s=0.2), SqlTimeoutError),
    # interrupted in time by the worker's own timer (DuckDB answered InterruptException)
    ("SELECT count(*) FROM range(100000000000)", dict(timeout_s=0.5), SqlTimeoutError),
    # DuckDB out of memory, answered cleanly by the worker
    ("SELECT length(repeat('a', x)) FROM (VALUES (700000000)) t(x)", dict(memory_limit=64 << 20, timeout_s=30),
     SqlRefusedError),
])
def test_a_worker_that_hit_a_limit_is_never_reused(wh, pool1, sql, kwargs, error):
    cc.run_sql(wh.cat, "SELECT 1")
    with pytest.raises(error):
        cc.run_sql(wh.cat, sql, **kwargs)
    bad = worker.last_worker()
    assert bad is not None
    assert not alive(bad)
    assert bad not in worker.workers()["idle"] + worker.workers()["busy"]
    for _ in range(3):
        assert cc.run_sql(wh.cat, "SELECT 41 + 1").rows == [[42]]
        assert worker.last_worker() != bad


def _job(text: str, views=(None, []), memory_limit: int = MEMORY_LIMIT) -> worker.Job:
    return worker.Job(text=text, views=views, limit=100, timeout_s=10, memory_limit=memory_limit)


def test_nothing_a_statement_creates_or_sets_reaches_the_next(wh, pool1):
    """Straight to the worker, past the sandbox's statement check (which refuses all of these):
    the next statement runs on a brand-new database whatever the last one did."""
    leaks = ["CREATE TEMP TABLE leak_t AS SELECT 42 AS x", "CREATE VIEW leak_v AS SELECT 42 AS x",
             "CREATE MACRO leak_m(a) AS a + 1", "CREATE TABLE leak_p AS SELECT 42 AS x",
             "CREATE SEQUENCE leak_s", "CREATE TYPE leak_e AS ENUM ('a')"]
    # The pool's worker started by a run_sql statement, as in a server: a worker's address-space cap
    # is fixed by its first job, and one started by these jobs (no snapshot-cache budget) would be
    # too small for run_sql's below, which would then get a new worker (this test alone failed so).
    cc.run_sql(wh.cat, "SELECT 1")
    pid = worker.last_worker()
    for sql in leaks:
        answer = worker.run(_job(sql))
        assert "ok" in answer, answer  # it ran, and ended cleanly
        assert worker.last_worker() == pid
    # and the views of one snapshot's statement are gone at the next, even under the same name
    orders = cc.run_sql(wh.cat, "SELECT count(*) FROM wh.sales.orders").rows
    earlier = cc.run_sql(wh.cat, "SELECT count(*) FROM wh.sales.orders", snapshot=wh.v1).rows
    assert (orders, earlier) == ([[9]], [[3]])
    assert worker.last_worker() == pid
    answer = worker.run(_job(
        "SELECT (SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE 'leak%'), "
        "(SELECT count(*) FROM duckdb_views() WHERE NOT internal), "
        "(SELECT count(*) FROM duckdb_functions() WHERE function_name = 'leak_m'), "
        "(SELECT count(*) FROM duckdb_sequences()), "
        "(SELECT count(*) FROM duckdb_types() WHERE type_name = 'leak_e'), "
        "(SELECT count(*) FROM duckdb_databases() WHERE NOT internal)"))
    assert worker.last_worker() == pid
    assert answer["ok"]["rows"] == [[0, 0, 0, 0, 0, 1]], answer
    answer = worker.run(_job("SELECT * FROM leak_t"))
    assert "leak_t does not exist" in answer["error"]["message"]
    assert worker.last_worker() == pid


def test_settings_are_per_statement(wh, pool1):
    sql = "SELECT current_setting('memory_limit'), current_setting('max_execution_time')"
    assert cc.run_sql(wh.cat, sql, memory_limit=256 << 20, timeout_s=3).rows == [["256.0 MiB", 3000]]
    pid = worker.last_worker()
    assert cc.run_sql(wh.cat, sql).rows == [["1.0 GiB", 10000]]
    assert worker.last_worker() == pid
    # the sandbox's wall is up again on the new database
    answer = worker.run(_job("SET memory_limit = '8GB'"))
    assert "configuration has been locked" in answer["error"]["message"]


def test_soft_address_space_limit_per_statement_under_a_fixed_hard_limit(wh, pool1):
    cc.run_sql(wh.cat, "SELECT 1", memory_limit=256 << 20)
    pid = worker.last_worker()
    assert pid is not None
    # the snapshot cache's budget (and its database and pyarrow) sit on top of both limits
    budget = snapcache.budget()
    store = budget + worker.STORE_HEADROOM if budget else 0
    cap = MEMORY_LIMIT + worker.HEADROOM + store
    assert address_space_limits(pid) == ((256 << 20) + worker.HEADROOM + (worker.STORE_HEADROOM if budget else 0), cap)
    cc.run_sql(wh.cat, "SELECT 1")
    assert worker.last_worker() == pid
    assert address_space_limits(pid) == (cap - budget, cap)  # nothing cached yet
    # a limit above the worker's hard limit needs another worker: the hard limit is never raised
    cc.run_sql(wh.cat, "SELECT 1", memory_limit=2 << 30)
    big = worker.last_worker()
    assert big != pid and big is not None
    assert address_space_limits(big) == ((2 << 30) + worker.HEADROOM + store - budget, (2 << 30) + worker.HEADROOM + store)


def test_concurrent_statements_each_get_a_worker_up_to_the_bound(wh):
    size, most = worker.pool_size(), worker.max_concurrent()
    worker.set_pool_size(1)
    worker.set_max_concurrent(2)
    try:
        busiest = [0]
        done = threading.Event()

        def watch():
            while not done.is_set():
                busiest[0] = max(busiest[0], len(worker.workers()["busy"]))
                done.wait(0.005)

        results: dict[int, list] = {}
        pids: set[int] = set()
        errors: list[BaseException] = []

        def client(i: int) -> None:
            try:
                out = []
                for _ in range(2):
                    out.append(cc.run_sql(wh.cat, f"SELECT count(*) + {i} FROM range(20000000), wh.crm.customers").rows)
                    pids.add(worker.last_worker())  # type: ignore[arg-type]
                results[i] = out
            except BaseException as e:  # noqa: BLE001  (reported below)
                errors.append(e)

        watcher = threading.Thread(target=watch)
        watcher.start()
        threads = [threading.Thread(target=client, args=(i,)) for i in range(5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        done.set()
        watcher.join()
        assert not errors, errors
        assert results == {i: [[[40000000 + i]]] * 2 for i in range(5)}
        assert 2 <= len(pids)            # the pool ran dry and another worker was started
        assert busiest[0] <= 2           # but never more than the bound at once
        assert len(worker.workers()["idle"]) <= 1
        for pid in set(pids) - set(worker.workers()["idle"]):
            assert not alive(pid)        # the extra workers were stopped, not leaked
    finally:
        worker.set_max_concurrent(most)
        worker.set_pool_size(size)


def test_a_busy_worker_coming_back_does_not_push_out_the_one_holding_a_database(wh):
    """Pool 2, one worker kept busy (as by a background warm-up): the other serves a statement and
    keeps its database. No spare is started for the busy one, and when it comes back the worker
    holding the database stays (it used to be the oldest idle one, stopped to make room)."""
    size = worker.pool_size()
    worker.stop_all()
    worker.set_pool_size(2)
    try:
        q = "SELECT count(*) FROM wh.crm.customers"
        want = cc.run_sql(wh.cat, q).rows
        holder = worker.last_worker()
        assert worker.prestart()  # the pool's second worker ready, so the long statement goes to it
        slow = threading.Thread(target=cc.run_sql, args=(wh.cat, "SELECT sum(i) FROM range(4000000000) t(i)"),
                                kwargs={"timeout_s": 60})
        slow.start()
        while not worker.workers()["busy"]:
            slow.join(0.01)
        assert cc.run_sql(wh.cat, q).rows == want
        assert worker.last_worker() == holder and worker.last_cached()
        assert slow.is_alive()    # the other worker was busy all along
        assert len(worker.workers()["idle"]) == 1 and len(worker.workers()["busy"]) == 1  # no spare for it
        slow.join(120)
        assert holder in worker.workers()["idle"]
        assert cc.run_sql(wh.cat, q).rows == want and worker.last_worker() == holder and worker.last_cached()
    finally:
        worker.set_pool_size(size)


@pytest.mark.parametrize("bad", [0, 5, -1, True, 1.5, "2", None])
def test_bad_pool_size_is_refused_and_changes_nothing(bad):
    before = worker.pool_size()
    with pytest.raises(InvalidValueError, match="pool size"):
        worker.set_pool_size(bad)
    with pytest.raises(InvalidValueError, match="concurrent"):
        worker.set_max_concurrent(bad if bad != 5 else 65)
    assert worker.pool_size() == before


def test_pool_size_comes_from_the_environment(tmp_path):
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=root, SEMCAT_SQL_POOL="1")
    code = "from catalog_core.sql import worker; print(worker.pool_size())"
    assert subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True).stdout.strip() == "1"
    env["SEMCAT_SQL_POOL"] = "lots"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert proc.returncode != 0 and "SEMCAT_SQL_POOL must be a whole number from 1 to 4, got 'lots'" in proc.stderr
