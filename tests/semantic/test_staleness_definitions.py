"""definitions (issue 45): a verified query stored on another table than the one a full rewrite
restated still reads the restated column: its copy there is flagged, with the value map when it
compares the column with a value that vanished, else re-verify. A small lake of its own."""

from __future__ import annotations

import semantic as sm
from eval.fixtures.lakes import LakeBuilder
from semantic.models import Fix

T, DIM = "acme.core.t", "acme.core.dim"


def _lake(elk: LakeBuilder) -> None:
    cat = elk.cat
    elk.table(DIM, [("d", "date"), ("year", "bigint")], at=0)
    elk.overwrite(DIM, {"d": [f"2024-11-1{day}" for day in range(1, 7)], "year": [2024] * 6}, at=0.5)
    elk.table(T, [("d", "date"), ("id", "bigint"), ("kind", "string")], partition_by=["d"], at=0.6)
    for day in range(1, 5):
        elk.append(T, {"d": [f"2024-11-1{day}"] * 2, "id": [2 * day, 2 * day + 1], "kind": ["a", "b"]}, at=day)
    sm.verify_query(cat, "bounced in 2024", "SELECT count(*) FROM acme.core.t o JOIN acme.core.dim x ON x.d = o.d "
                    "WHERE o.kind = 'b' AND x.year = 2024", author="a", time=elk.day(5))
    sm.verify_query(cat, "rows per kind", "SELECT o.kind, count(*) FROM acme.core.t o JOIN acme.core.dim x ON x.d = o.d "
                    "GROUP BY o.kind ORDER BY o.kind", author="a", time=elk.day(5.1))
    sm.verify_query(cat, "rows not a", "SELECT count(*) FROM acme.core.t o JOIN acme.core.dim x ON x.d = o.d "
                    "WHERE o.kind <> 'a'", author="a", time=elk.day(5.15))
    sm.verify_query(cat, "ids in 2024", "SELECT count(o.id) FROM acme.core.t o JOIN acme.core.dim x ON x.d = o.d "
                    "WHERE x.year = 2024", author="a", time=elk.day(5.2))


def _restated(cat, table, now, depth="metadata"):
    return {f.annotation: f for f in sm.staleness(cat, table, depth=depth, now=now, merge=False)
            if f.reason == "verified_query_changed"}


def test_a_verified_query_on_another_table_that_reads_a_restated_column(elk):
    cat = elk.cat
    _lake(elk)
    elk.append(T, {"d": ["2024-11-16"], "id": [20], "kind": ["a"]}, at=6)
    assert _restated(cat, DIM, elk.day(6)) == {}  # control: an append restates nothing
    elk.overwrite(T, {"d": [f"2024-11-1{day}" for day in range(1, 7)], "id": list(range(6)),
                      "kind": ["a", "ab", "a", "ab", "a", "a"]}, at=7)
    qs = {a.value["question"]: a.key for a in sm.read_annotations(cat, DIM) if a.kind == "verified_query"}
    for depth in ("metadata", "data"):
        f = _restated(cat, DIM, elk.day(7), depth)
        # failed before: nothing on the copies stored on DIM at metadata depth (reverify at data depth)
        assert f[qs["bounced in 2024"]].fixes == [Fix(action="value_map", params={"column": "kind", "map": {"b": "ab"}})]
        assert f[qs["rows per kind"]].fixes == [Fix(action="reverify", params={})]
    # controls: a query that does not read the restated column, and one that only tests it against
    # a value the rewrite kept (a respelling of `b` does not move `kind <> 'a'`), are not flagged
    meta = _restated(cat, DIM, elk.day(7))
    assert qs["ids in 2024"] not in meta and qs["rows not a"] not in meta


def test_a_verified_query_that_reads_a_measure_restated_in_another_scale(elk):
    """A measure rewritten in place x10^2 (the same rows): every copy of a verified query that
    reads it is flagged at metadata depth, re-verify (failed before: missed); a query that does not
    read it stays fresh (control)."""
    cat = elk.cat
    elk.table(DIM, [("d", "date"), ("year", "bigint")], at=0)
    elk.overwrite(DIM, {"d": [f"2024-11-0{day}" for day in range(1, 5)], "year": [2024] * 4}, at=0.5)
    elk.table(T, [("d", "date"), ("id", "bigint"), ("amount_cents", "bigint")], partition_by=["d"], at=0.6)
    for day in range(1, 4):
        elk.append(T, {"d": [f"2024-11-0{day}"] * 2, "id": [2 * day, 2 * day + 1], "amount_cents": [150, 2300 * day]},
                   at=day)
    sm.verify_query(cat, "amount in 2024", "SELECT sum(o.amount_cents) FROM acme.core.t o JOIN acme.core.dim x "
                    "ON x.d = o.d WHERE x.year = 2024", author="a", time=elk.day(3.5))
    sm.verify_query(cat, "ids in 2024", "SELECT count(o.id) FROM acme.core.t o JOIN acme.core.dim x ON x.d = o.d "
                    "WHERE x.year = 2024", author="a", time=elk.day(3.6))
    rows = {"d": [f"2024-11-0{day}" for day in range(1, 4) for _ in range(2)], "id": list(range(2, 8)),
            "amount_cents": [x * 100 for day in range(1, 4) for x in (150, 2300 * day)]}
    elk.overwrite(T, rows, at=4)
    qs = {a.value["question"]: a.key for a in sm.read_annotations(cat, DIM) if a.kind == "verified_query"}
    f = _restated(cat, DIM, elk.day(4))
    assert f[qs["amount in 2024"]].fixes == [Fix(action="reverify", params={})]
    assert f[qs["amount in 2024"]].evidence.values["scale_exp"] == 2
    assert qs["ids in 2024"] not in f
