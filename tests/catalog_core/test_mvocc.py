"""Concurrency control: the anomalies MVOCC must prevent, and a serializability checker."""

import random
import threading
import time

import pytest

import catalog_core as cc
from catalog_core import errors
from catalog_core.paths import obj_id_of, parent_of
from catalog_core.query import compile_expr

PROTOCOLS = ["ospl", "osl", "mgl"]


def open_cat(data_dir, protocol):
    return cc.Catalog.open(data_dir, protocol=protocol)


def table_with_partitions(cat, xs):
    with cat.transaction() as t:
        t.add("/wh", {"obj_type": "catalog"})
        t.add("/wh/t", {"obj_type": "table"})
        for i, x in enumerate(xs):
            t.add(f"/wh/t/p{i}", {"obj_type": "partition", "stats": {"x": x}})


def run_race(cat, t2_x):
    """T1 predicate-reads partitions with x > 5 and writes a summary; T2 adds a partition
    with x = t2_x and commits first. Returns T1's outcome."""
    t1 = cat.transaction(author="t1")
    hot = t1.query('/[obj_id = "wh"]/[obj_id = "t"]/[stats.x > 5]')
    t1.update("/wh/summary", {"obj_type": "summary", "hot": len(hot)})
    with cat.transaction(author="t2") as t2:
        t2.add("/wh/t/p9", {"obj_type": "partition", "stats": {"x": t2_x}})
    try:
        t1.commit()
        return "committed"
    except errors.ConflictError as exc:
        assert exc.path == "/wh/t/p9" and exc.vid == t2.vid and exc.retryable
        assert "retry" in exc.message
        return "aborted"


@pytest.mark.parametrize("protocol", ["ospl", "osl"])
def test_phantom_is_prevented(data_dir, protocol):
    cat = open_cat(data_dir, protocol)
    table_with_partitions(cat, [1, 7, 3])
    assert run_race(cat, 10) == "aborted"
    assert cat.get("/wh/summary") is None
    cat.close()


@pytest.mark.parametrize("protocol,outcome", [("ospl", "committed"), ("osl", "aborted")])
def test_precision_locking_avoids_false_conflict(data_dir, protocol, outcome):
    cat = open_cat(data_dir, protocol)
    table_with_partitions(cat, [1, 7, 3])
    assert run_race(cat, 1) == outcome
    cat.close()


def test_precision_catches_write_whose_before_image_matched(data_dir):
    cat = open_cat(data_dir, "ospl")
    table_with_partitions(cat, [1, 7, 3])
    t1 = cat.transaction()
    t1.query('/[obj_id = "wh"]/[obj_id = "t"]/[stats.x > 5]')
    t1.update("/wh/summary", {"hot": 1})
    with cat.transaction() as t2:  # p1 leaves the predicate: only its before-image matches
        t2.update("/wh/t/p1", {"obj_type": "partition", "stats": {"x": 0}})
    with pytest.raises(errors.ConflictError):
        t1.commit()
    cat.close()


def test_osl_bounded_id_range_narrows_the_lock(data_dir):
    cat = open_cat(data_dir, "osl")
    table_with_partitions(cat, [1, 7, 3])
    t1 = cat.transaction()
    t1.query('/[obj_id = "wh"]/[obj_id = "t"]/[obj_id >= "p0" and obj_id < "p3"]')
    t1.update("/wh/summary", {"n": 3})
    with cat.transaction() as t2:
        t2.add("/wh/t/p9", {"obj_type": "partition", "stats": {"x": 10}})
    assert t1.commit() > t2.vid  # p9 is outside the scanned id range
    t3 = cat.transaction()
    t3.query('/[obj_id = "wh"]/[obj_id = "t"]/[obj_id >= "p0" and obj_id < "p3"]')
    t3.update("/wh/summary", {"n": 4})
    with cat.transaction() as t4:
        t4.add("/wh/t/p2x", {"obj_type": "partition", "stats": {"x": 0}})
    with pytest.raises(errors.ConflictError):
        t3.commit()
    cat.close()


def test_mgl_phantom_blocks_instead(data_dir):
    cat = open_cat(data_dir, "mgl")
    table_with_partitions(cat, [1, 7, 3])
    t1 = cat.transaction()
    hot = t1.query('/[obj_id = "wh"]/[obj_id = "t"]/[stats.x > 5]')
    done = threading.Event()

    def t2_body():
        with cat.transaction() as t2:
            t2.add("/wh/t/p9", {"obj_type": "partition", "stats": {"x": 10}})
        done.set()

    th = threading.Thread(target=t2_body)
    th.start()
    assert not done.wait(0.3), "T2 wrote into a range T1 holds an S lock on"
    t1.update("/wh/summary", {"hot": len(hot)})
    t1.commit()
    th.join(5)
    assert done.is_set()
    assert cat.get("/wh/summary").value["hot"] == 1 and cat.get("/wh/t/p9") is not None
    cat.close()


def test_mgl_deadlock_is_detected(data_dir):
    cat = open_cat(data_dir, "mgl")
    with cat.transaction() as t:
        t.add("/a", {})
        t.add("/b", {})
    t1, t2 = cat.transaction(), cat.transaction()
    t1.update("/a", {"by": 1})
    t2.update("/b", {"by": 2})
    outcome = {}

    def t1_wants_b():
        try:
            t1.update("/b", {"by": 1})
            outcome["t1"] = "ok"
        except errors.DeadlockError:
            outcome["t1"] = "deadlock"
            t1.abort()

    th = threading.Thread(target=t1_wants_b)
    th.start()
    time.sleep(0.1)
    try:
        t2.update("/a", {"by": 2})
        outcome["t2"] = "ok"
    except errors.DeadlockError:
        outcome["t2"] = "deadlock"
        t2.abort()
    th.join(5)
    assert sorted(outcome.values()) == ["deadlock", "ok"]
    for t in (t1, t2):
        if t.state == "active":
            t.commit()
    cat.close()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_write_skew_doctors_on_call(data_dir, protocol):
    """Two doctors on call; each transaction lets one go off call if another is still on call.
    Run concurrently, at most one may succeed, so someone stays on call."""
    cat = open_cat(data_dir, protocol)
    with cat.transaction() as t:
        t.add("/h", {})
        t.add("/h/alice", {"on_call": True})
        t.add("/h/bob", {"on_call": True})
    barrier = threading.Barrier(2, timeout=5)
    results = {}

    def go_off(me):
        try:
            txn = cat.transaction(author=me)
            on = txn.query('/[obj_id = "h"]/[on_call = true]')
            barrier.wait()
            if len(on) >= 2:
                txn.update(f"/h/{me}", {"on_call": False})
            txn.commit()
            results[me] = "committed"
        except (errors.ConflictError, threading.BrokenBarrierError) as exc:
            results[me] = type(exc).__name__
            txn.abort()

    if protocol == "mgl":
        # Under strict 2PL both hold S on /h and both want X: one must be the deadlock victim.
        barrier = threading.Barrier(2, timeout=1)
    threads = [threading.Thread(target=go_off, args=(m,)) for m in ("alice", "bob")]
    [th.start() for th in threads]
    [th.join(30) for th in threads]
    on_call = cat.query('/[obj_id = "h"]/[on_call = true]')
    assert len(on_call) >= 1, results
    assert list(results.values()).count("committed") <= 1, results
    cat.close()


@pytest.mark.parametrize("protocol", ["ospl", "osl"])
def test_concurrent_merges_never_conflict(data_dir, protocol):
    cat = open_cat(data_dir, protocol)
    with cat.transaction() as t:
        t.add("/c", {"stats": {"n": 0, "hi": 0}})
    n_threads, per = 8, 50
    failures = []

    def worker(w):
        for i in range(per):
            try:
                with cat.transaction() as t:
                    t.merge("/c", {"stats": {"n": {"op": "+", "val": 1}, "hi": {"op": "max", "val": w * 1000 + i}}})
            except Exception as exc:  # every single commit must succeed
                failures.append(exc)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(n_threads)]
    [th.start() for th in threads]
    [th.join() for th in threads]
    assert failures == []
    assert cat.get("/c").value["stats"] == {"n": n_threads * per, "hi": (n_threads - 1) * 1000 + per - 1}
    assert len(cat.history("/c")) == n_threads * per + 1
    cat.close()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_no_lost_updates_with_read_modify_write(data_dir, protocol):
    cat = open_cat(data_dir, protocol)
    with cat.transaction() as t:
        t.add("/c", {"n": 0})
    n_threads, per = 8, 25

    def incr(txn):
        cur = txn.get("/c").value["n"]
        txn.update("/c", {"n": cur + 1})

    def worker():
        for _ in range(per):
            cc.retry_transaction(cat, incr, attempts=200, base_delay=0.0005, max_delay=0.02)

    threads = [threading.Thread(target=worker) for _ in range(n_threads)]
    [th.start() for th in threads]
    [th.join() for th in threads]
    assert cat.get("/c").value["n"] == n_threads * per
    cat.close()


def test_lost_update_detected_without_retry(data_dir):
    cat = open_cat(data_dir, "ospl")
    with cat.transaction() as t:
        t.add("/c", {"n": 0})
    a, b = cat.transaction(), cat.transaction()
    a.update("/c", {"n": a.get("/c").value["n"] + 1})
    b.update("/c", {"n": b.get("/c").value["n"] + 1})
    a.commit()
    with pytest.raises(errors.ConflictError) as exc:
        b.commit()
    assert exc.value.path == "/c" and exc.value.vid == a.vid
    assert cat.get("/c").value["n"] == 1


def test_group_commit_batches_and_acknowledges_after_durable(data_dir):
    cat = open_cat(data_dir, "ospl")
    store = cat._store
    real_write = store.write
    gate, entered = threading.Event(), threading.Event()

    def slow_write(wb, latest):
        entered.set()
        gate.wait(5)
        real_write(wb, latest)

    store.write = slow_write
    acked = []

    def commit(i):
        with cat.transaction() as t:
            t.add(f"/o{i}", {"i": i})
        acked.append(t.vid)

    first = threading.Thread(target=commit, args=(0,))
    first.start()
    assert entered.wait(5)
    others = [threading.Thread(target=commit, args=(i,)) for i in range(1, 9)]
    [th.start() for th in others]
    time.sleep(0.2)
    # the first batch is not yet durable: nobody is acknowledged and readers don't see it
    assert acked == [] and cat.latest_vid == 0 and cat.get("/o0") is None
    gate.set()
    first.join(5)
    [th.join(5) for th in others]
    assert sorted(acked) == list(range(1, 10))
    assert cat.engine_info()["groups"] == 2  # the 8 that queued behind the first share one batch
    store.write = real_write
    cat.close()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_read_only_reads_never_block(data_dir, protocol):
    cat = open_cat(data_dir, protocol)
    table_with_partitions(cat, [1, 2, 3])
    writer = cat.transaction()
    writer.update("/wh/t/p0", {"stats": {"x": 100}})  # under mgl: holds X on p0
    writer.remove("/wh/t")
    got = []
    reader = threading.Thread(target=lambda: got.extend(cat.query('/[obj_id = "wh"]/[obj_id = "t"]/*')))
    reader.start()
    reader.join(10)
    # the read finished while the writer still holds its locks (under mgl) and has not committed
    assert not reader.is_alive() and len(got) == 3 and writer.state == "active"
    writer.commit()
    assert cat.query('/[obj_id = "wh"]/*') == []
    assert len(cat.query('/[obj_id = "wh"]/[obj_id = "t"]/*', vid=writer.vid - 1)) == 3
    cat.close()


def test_write_log_is_garbage_collected(data_dir):
    cat = open_cat(data_dir, "ospl")
    old = cat.transaction()
    for i in range(20):
        with cat.transaction() as t:
            t.add(f"/o{i}", {})
    assert cat.engine_info()["write_log_records"] == 20  # kept: `old` may still validate against them
    old.abort()
    with cat.transaction() as t:
        t.add("/last", {})
    assert cat.engine_info()["write_log_records"] == 0
    cat.close()


# ---------------------------------------------------------------- serializability checker

def _history(cat, committed):
    """Dependency graph (Adya: ww, wr, rw incl. predicate rw) over committed transactions."""
    by_vid = {t["vid"]: t for t in committed}
    writes = {}  # vid -> list[(path, before, after)]
    for c in cat.commits(since=1):
        if c.vid in by_vid:
            writes[c.vid] = [(p, (cat.get(p, c.vid - 1) or _Nil).value, (cat.get(p, c.vid) or _Nil).value)
                             for p in c.paths]
    edges = {v: set() for v in by_vid}
    last_writer = {}
    for vid in sorted(writes):
        for path, _b, _a in writes[vid]:
            if path in last_writer and last_writer[path] != vid:
                edges[last_writer[path]].add(vid)  # ww
            last_writer[path] = vid
    for t in committed:
        r, j = t["read_vid"], t["vid"]
        for _path, wvid in t["item_reads"]:
            if wvid in edges and wvid != j:
                edges[wvid].add(j)  # wr
        for k, ws in writes.items():
            if k == j or k <= r:
                continue
            for path, before, after in ws:
                hit = path in t["points"]
                for parent, pred in t["scans"]:
                    if parent_of(path) == parent and (pred(obj_id_of(path), before) or pred(obj_id_of(path), after)):
                        hit = True
                if hit:
                    edges[j].add(k)  # rw: k overwrote what j read
    return edges


class _Nil:
    value = None


def _has_cycle(edges):
    color = {}
    for start in edges:
        if start in color:
            continue
        stack = [(start, iter(edges[start]))]
        color[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                color[node] = 2
                stack.pop()
            elif color.get(nxt) == 1:
                return True
            elif nxt not in color:
                color[nxt] = 1
                stack.append((nxt, iter(edges.get(nxt, ()))))
    return False


def _random_workload(cat, threads=6, per=40, seed=7):
    with cat.transaction() as t:
        t.add("/h", {})
        for i in range(5):
            t.add(f"/h/i{i}", {"v": i, "on": True})
    preds = ["on = true", "v > 2", "v <= 1 or on = false", "*"]
    committed, lock = [], threading.Lock()

    def worker(w):
        rng = random.Random(seed * 100 + w)
        for _ in range(per):
            txn = cat.transaction()
            pred_text = rng.choice(preds)
            seen = txn.query(f'/[obj_id = "h"]/[{pred_text}]')
            target = f"/h/i{rng.randrange(5)}"
            point = txn.get(target)
            # write skew bait: decide from what the predicate read saw
            if len(seen) >= 2:
                victim = rng.choice(seen).path
                txn.update(victim, {"v": rng.randrange(6), "on": False})
            else:
                txn.update(target, {"v": (point.value["v"] + 1) % 6, "on": True})
            time.sleep(rng.random() * 0.002)
            try:
                txn.commit()
            except errors.ConflictError:
                continue
            item_reads = [(o.path, o.vid) for o in seen] + [(target, point.vid)]
            with lock:
                committed.append({"vid": txn.vid, "read_vid": txn.read_vid, "item_reads": item_reads,
                                  "points": {target}, "scans": [("/h", compile_expr(s[1])) for s in txn.scans
                                                                 if s[0] == "/h"]})

    ths = [threading.Thread(target=worker, args=(w,)) for w in range(threads)]
    [th.start() for th in ths]
    [th.join() for th in ths]
    return committed


def test_history_is_serializable_under_ospl(data_dir):
    cat = open_cat(data_dir, "ospl")
    committed = _random_workload(cat)
    assert len(committed) > 30
    assert not _has_cycle(_history(cat, committed))
    cat.close()


def test_history_checker_fails_without_validation(data_dir):
    cat = open_cat(data_dir, "ospl")
    cat._mgr.validation_enabled = False  # test-only switch: proves the checker can fail
    committed = _random_workload(cat)
    assert _has_cycle(_history(cat, committed))
    cat.close()


# ---------------------------------------------------------------- middle steps vs last steps

def _table_and_reader(cat):
    with cat.transaction() as t:
        t.add("/wh", {"obj_type": "catalog"})
        t.add("/wh/t", {"obj_type": "table", "stats": {"rows": 0}})
        t.add("/wh/t/p1", {"obj_type": "partition", "stats": {"x": 1}})
        t.add("/wh/u", {"obj_type": "table"})


@pytest.mark.parametrize("protocol,outcome", [("ospl", "committed"), ("osl", "aborted")])
def test_stats_merge_does_not_abort_a_reader_passing_through(data_dir, protocol, outcome):
    """A middle step only selects the table; a merge into its stats changes no membership."""
    cat = open_cat(data_dir, protocol)
    _table_and_reader(cat)
    t1 = cat.transaction()
    t1.query('/[obj_id = "wh"]/[obj_id = "t"]/*')
    t1.update("/wh/summary", {"n": 1})
    with cat.transaction() as t2:
        t2.merge("/wh/t", {"stats": {"rows": {"op": "+", "val": 5}}})
    try:
        t1.commit()
        got = "committed"
    except errors.ConflictError:
        got = "aborted"
    assert got == outcome
    cat.close()


def test_last_step_value_read_conflicts_with_merge(data_dir):
    cat = open_cat(data_dir, "ospl")
    _table_and_reader(cat)
    t1 = cat.transaction()
    t1.query('/[obj_id = "wh"]/[obj_id = "t"]')  # the table's value is returned
    t1.update("/wh/summary", {"n": 1})
    with cat.transaction() as t2:
        t2.merge("/wh/t", {"stats": {"rows": {"op": "+", "val": 5}}})
    with pytest.raises(errors.ConflictError):
        t1.commit()
    cat.close()


def test_middle_step_membership_change_conflicts(data_dir):
    cat = open_cat(data_dir, "ospl")
    _table_and_reader(cat)
    t1 = cat.transaction()
    t1.query('/[obj_id = "wh"]/[obj_type = "table"]/*')
    t1.update("/wh/summary", {"n": 1})
    with cat.transaction() as t2:  # /wh/u stops being a table: the middle step's selection changes
        t2.update("/wh/u", {"obj_type": "view"})
    with pytest.raises(errors.ConflictError):
        t1.commit()
    cat.close()


def test_txn_clone_conflicts_with_concurrent_write(data_dir):
    cat = open_cat(data_dir, "ospl")
    _table_and_reader(cat)
    t1 = cat.transaction()
    t1.clone("/wh/t", "/wh/t_branch")
    with cat.transaction() as t2:
        t2.add("/wh/t/p2", {"obj_type": "partition"})
    with pytest.raises(errors.ConflictError):
        t1.commit()
    cat.close()


def test_mgl_point_query_does_not_block_other_subtree(data_dir):
    cat = open_cat(data_dir, "mgl")
    _table_and_reader(cat)
    reader = cat.transaction()
    reader.query('/[obj_id = "wh"]/[obj_id = "t"]/*')
    done = threading.Event()

    def write_u():
        with cat.transaction() as t:
            t.update("/wh/u", {"obj_type": "table", "touched": True})
        done.set()

    th = threading.Thread(target=write_u)
    th.start()
    assert done.wait(5), "a write under /wh/u waited on a query that only read /wh/t"
    th.join()
    reader.abort()
    cat.close()
