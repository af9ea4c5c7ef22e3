"""Incremental checking (issue 45 item 6): a check after a change re-runs only the tables the change
reaches (semantic.staleness.incremental's dependency rule), and what it answers is what a full check
answers.

On a small catalog built here (orders relating to stores, items relating to orders, a mart built
from orders with lineage, an unrelated table), seeded loops of random changes (appends, restatements,
schema changes, annotations, rebuilds of the mart, new tables) compare after every change:

- `sm.staleness` at both depths with the process's cache warm (findings carried over from the
  previous vid where the rule allows) against the same call on an empty cache (every table computed);
- the records `sm.scan(changed_only=True)` leaves (re-checked tables rewritten, the others kept with
  their older `scan_vid`) against a full pass at the same vid (`scan_findings`, nothing written).

And it counts the tables a pass computes (not its time): a change to one table re-checks that table
and the tables that depend on it, no other.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator

import pytest

import catalog_core as cc
import semantic as sm
from catalog_core import lake
from eval.fixtures.lakes import LakeBuilder
from semantic import history
from semantic.annotations import read_catalog_annotations
from semantic.review import SCAN_KEY, scan_findings
from semantic.staleness import engine

ORDERS, STORES, ITEMS, MART, OTHER = ("acme.core.orders", "acme.core.stores", "acme.core.items", "acme.mart.daily",
                                      "acme.core.other")
STATUS = ["placed", "shipped", "returned", "processing", "void"]


def build(lk: LakeBuilder) -> None:
    cat = lk.cat
    lk.table(STORES, [("store_id", "bigint"), ("region", "string")], at=0,
             rows={"store_id": [1, 2, 3], "region": ["north", "south", "east"]})
    lk.table(ORDERS, [("order_id", "bigint"), ("status", "string"), ("store_id", "bigint"),
                      ("amount_cents", "bigint")], at=0.1,
             rows={"order_id": [1, 2, 3, 4], "status": ["placed", "shipped", "placed", "returned"],
                   "store_id": [1, 2, 1, 3], "amount_cents": [1000, 2500, 400, 1200]})
    lk.table(ITEMS, [("order_id", "bigint"), ("line_no", "bigint"), ("qty", "bigint")], at=0.2,
             rows={"order_id": [1, 1, 2, 3], "line_no": [1, 2, 1, 1], "qty": [1, 2, 1, 5]})
    lk.table(OTHER, [("k", "bigint"), ("kind", "string")], at=0.3, rows={"k": [1, 2], "kind": ["a", "c"]})
    lk.table(MART, [("store_id", "bigint"), ("revenue_cents", "bigint")], at=0.4)
    rebuild(lk, 0.5)
    sm.annotate(cat, ORDERS, {"enum": ["placed", "returned", "shipped"]}, column="status", author="ann",
                time=lk.at(0.6))
    sm.annotate(cat, ORDERS, {"unit": "cents", "description": "order total in cents"}, column="amount_cents",
                author="ann", time=lk.at(0.6))
    sm.annotate(cat, ORDERS, {"grain": {"text": "one row per order", "keys": ["order_id"]}}, author="ann",
                time=lk.at(0.6))
    sm.annotate(cat, STORES, {"grain": {"text": "one row per store", "keys": ["store_id"]}}, author="ann",
                time=lk.at(0.6))
    sm.annotate(cat, OTHER, {"enum": ["a", "c"]}, column="kind", author="ann", time=lk.at(0.6))
    sm.annotate(cat, MART, {"description": "revenue per store, from orders"}, author="ann", time=lk.at(0.6))
    sm.relate(cat, ORDERS, STORES, [("store_id", "store_id")], author="ann", time=lk.at(0.7))
    sm.relate(cat, ITEMS, ORDERS, [("order_id", "order_id")], author="ann", time=lk.at(0.7))


def rebuild(lk: LakeBuilder, at: float) -> None:
    """The mart rebuilt from orders (its rows from the orders table's data, its lineage recorded)."""
    read = lk.cat.resolve(None)
    rows = cc.run_sql(lk.cat, f"SELECT store_id, sum(amount_cents) FROM {ORDERS} GROUP BY 1 ORDER BY 1",
                      snapshot=read).rows
    lk.overwrite(MART, {"store_id": [r[0] for r in rows], "revenue_cents": [int(r[1]) for r in rows]}, at=at)
    with lk.cat.transaction(author="etl", message="lineage", time=lk.at(at + 0.01)) as txn:
        for d in lake.lineage_deltas({ORDERS: read}, job="daily", source="declared"):
            txn.merge(lake.table_path(MART), d)


def change(lk: LakeBuilder, rng: random.Random, at: float, made: list[str]) -> str:
    """One random change through the public write paths; what it was (for a failing assertion)."""
    cat = lk.cat
    kind = rng.choice(["append", "append", "restate", "evolve", "enum", "describe", "rebuild", "new_table",
                       "relate", "unit"])
    if kind == "append":
        t = rng.choice([ORDERS, STORES, ITEMS, OTHER])
        n = rng.randint(1, 3)
        base = 100 + int(at * 10)
        rows = {
            ORDERS: {"order_id": [base + i for i in range(n)], "status": [rng.choice(STATUS) for _ in range(n)],
                     "store_id": [rng.choice([1, 2, 3, 9]) for _ in range(n)],
                     "amount_cents": [rng.choice([500, 900, 120000]) for _ in range(n)]},
            STORES: {"store_id": [rng.choice([3, 4, 5]) for _ in range(n)], "region": ["west"] * n},
            ITEMS: {"order_id": [rng.choice([1, 2, 77]) for _ in range(n)], "line_no": [rng.randint(1, 3)] * n,
                    "qty": [rng.randint(1, 9)] * n},
            OTHER: {"k": [base + i for i in range(n)], "kind": [rng.choice(["a", "b", "c"]) for _ in range(n)]},
        }[t]
        present = {c["name"] for c in lk.schemas[t]["columns"]}
        rows = {c: v for c, v in rows.items() if c in present}
        for c in present - set(rows):
            rows[c] = [None] * n
        lk.append(t, rows, at=at)
        return f"append {t} {rows}"
    if kind == "restate":
        lk.overwrite(OTHER, {"k": [1, 2, 3], "kind": ["a", "b", rng.choice(["a", "z"])]}, at=at)
        return "restate other"
    if kind == "evolve":
        t = rng.choice([STORES, OTHER])
        col = f"extra_{int(at * 10)}"
        lk.evolve(t, add=[(col, "string")], at=at)
        return f"evolve {t} + {col}"
    if kind == "enum":
        vals = sorted(rng.sample(STATUS, 3))
        sm.annotate(cat, ORDERS, {"enum": vals}, column="status", author="ann", time=lk.at(at))
        return f"enum {vals}"
    if kind == "describe":
        t = rng.choice([STORES, ITEMS, OTHER, MART, *made])
        sm.annotate(cat, t, {"description": f"described at {at}"}, author="ann", time=lk.at(at))
        return f"describe {t}"
    if kind == "rebuild":
        rebuild(lk, at)
        return "rebuild mart"
    if kind == "unit":
        sm.annotate(cat, ORDERS, {"unit": rng.choice(["cents", "dollars"])}, column="amount_cents", author="ann",
                    time=lk.at(at))
        return "unit"
    if kind == "relate":
        sm.relate(cat, OTHER, STORES, [("k", "store_id")], author="ann", time=lk.at(at))
        return "relate other -> stores"
    name = f"acme.core.extra{len(made)}"
    lk.table(name, [("k", "bigint")], at=at, rows={"k": [1]})
    made.append(name)
    return f"new table {name}"


def shape(found: list) -> list[tuple]:
    """What a finding says (not the objects): target, annotation, reason, status, message, fixes."""
    return sorted((f.target, f.annotation or "", str(f.reason), f.status, f.message,
                   repr([(x.action, sorted(x.params.items())) for x in f.fixes])) for f in found)


@contextlib.contextmanager
def empty_cache(cat) -> Iterator[None]:
    """Run the block on an empty semantic cache (every table computed), then put the warm one back."""
    warm = history._CACHES.pop(cat, None)
    try:
        yield
    finally:
        history._CACHES.pop(cat, None)
        if warm is not None:
            history._CACHES[cat] = warm


def records(cat) -> dict[str, tuple]:
    """Each table's stored pass as what it holds (finding ids, statuses, messages; cleared ids)."""
    out = {}
    for t, anns in read_catalog_annotations(cat).items():
        rec = next((a.value for a in anns if a.key == SCAN_KEY), None)
        if rec is not None:
            out[t] = (sorted((f["target"], f.get("annotation") or "", f["reason"], f["status"], f["message"])
                             for f in rec["findings"]), sorted(rec["cleared"]))
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_incremental_equals_full_after_random_changes(ecat, elk, seed):
    rng = random.Random(seed)
    build(elk)
    made: list[str] = []
    now = elk.day(30)
    sm.scan(ecat, author="cron", now=now, time=elk.at(1))
    for d in ("metadata", "data"):
        sm.staleness(ecat, depth=d, now=now)  # the warm cache the next checks carry findings from
    carried = 0
    for step in range(8):
        at = 2 + step
        what = change(elk, rng, at, made)
        before = dict(engine.CARRIED)
        for d in ("metadata", "data"):
            warm = sm.staleness(ecat, depth=d, now=now)
            with empty_cache(ecat):
                full = sm.staleness(ecat, depth=d, now=now)
            assert shape(warm) == shape(full), (seed, step, what, d)
        carried += sum(engine.CARRIED.values()) - sum(before.values())
        res = sm.scan(ecat, author="cron", changed_only=True, now=now, time=elk.at(at + 0.5))
        with empty_cache(ecat):
            only, cleared = scan_findings(ecat, None, res.vid, now)
        want = {t: (sorted((f.target, f.annotation or "", str(f.reason), f.status, f.message) for f in only.get(t, [])),
                    sorted(set(cleared.get(t, [])))) for t in records(ecat)}
        assert records(ecat) == want, (seed, step, what)
        assert set(only) <= set(records(ecat))
    assert carried > 0  # the loop did exercise the carry-over, not only recomputation


def touched(monkeypatch) -> list[tuple[str, str]]:
    """(table, depth) of every table whose checks run from now on (the registry's table checks run
    once per table computation)."""
    seen: list[tuple[str, str]] = []
    real = engine.run_table_checks

    def spy(env, depth):
        seen.append((env.t.name, depth))
        return real(env, depth)

    monkeypatch.setattr(engine, "run_table_checks", spy)
    return seen


def test_a_changed_only_pass_reads_only_the_changed_tables_and_their_dependents(ecat, elk, monkeypatch):
    build(elk)
    now = elk.day(30)
    first = sm.scan(ecat, author="cron", now=now, time=elk.at(1))
    assert first.tables == 5
    seen = touched(monkeypatch)
    idle = sm.scan(ecat, author="cron", changed_only=True, now=now, time=elk.at(1.1))
    assert idle.tables == 0 and idle.written_vid is None and seen == []
    elk.append(OTHER, {"k": [9], "kind": ["b"]}, at=2)  # no other table names it
    res = sm.scan(ecat, author="cron", changed_only=True, now=now, time=elk.at(2.1))
    assert res.tables == 1 and {t for t, d in seen if d == "data"} == {OTHER}
    assert res.findings == 1  # its new kind, inside the old range: only the data shows it
    kept = {t: a.value["at_vid"] for t, anns in read_catalog_annotations(ecat).items()
            for a in anns if a.key == SCAN_KEY}
    assert kept[OTHER] == res.vid and {kept[t] for t in (ORDERS, STORES, ITEMS, MART)} == {first.vid}
    seen.clear()
    # orders relate to stores; the mart, built from orders, carries what orders' checks of stores find
    elk.append(STORES, {"store_id": [7], "region": ["west"]}, at=3)
    res = sm.scan(ecat, author="cron", changed_only=True, now=now, time=elk.at(3.1))
    assert {t for t, d in seen if d == "data"} == {STORES, ORDERS, MART} and res.tables == 3
    seen.clear()
    # orders: items relate to it, the mart was built from it (lineage), the rest does not read it
    elk.append(ORDERS, {"order_id": [50], "status": ["placed"], "store_id": [1], "amount_cents": [700]}, at=4)
    res = sm.scan(ecat, author="cron", changed_only=True, now=now, time=elk.at(4.1))
    assert {t for t, d in seen if d == "data"} == {ORDERS, ITEMS, MART} and res.tables == 3
    seen.clear()
    # a whole-catalog check at the new vid computes the tables changed since the last one it made
    sm.staleness(ecat, depth="data", now=now)
    seen.clear()
    elk.append(ITEMS, {"order_id": [1], "line_no": [3], "qty": [2]}, at=5)
    sm.staleness(ecat, depth="data", now=now)
    assert {t for t, d in seen} == {ITEMS}


def test_a_whole_catalog_pass_asks_each_question_once(ecat, elk, monkeypatch):
    """Checks that ask the same statement at the same vid (the distinct values of a column both an
    enum and sample values name) share its answer within a pass; the answer is the one of checking
    each table alone."""
    from semantic import _bounded

    build(elk)
    sm.annotate(ecat, OTHER, {"sample_values": ["a", "c"]}, column="kind", author="ann", time=elk.at(1))
    elk.append(ORDERS, {"order_id": [60], "status": ["void"], "store_id": [9], "amount_cents": [5]}, at=2)
    sent: list[tuple[int, str]] = []  # (vid, statement): the same text at two snapshots is two questions
    real = _bounded.query

    def query(cat, vid, text, **kw):
        sent.append((vid, text))
        return real(cat, vid, text, **kw)

    monkeypatch.setattr(_bounded, "query", query)
    shared = shape(sm.staleness(ecat, depth="data", now=elk.day(30)))
    assert sent and len(sent) == len(set(sent))
    with empty_cache(ecat):
        alone = [shape(sm.staleness(ecat, t, depth="data", now=elk.day(30))) for t in (ORDERS, STORES, ITEMS, OTHER, MART)]
    assert shared == sorted(x for one in alone for x in one)
