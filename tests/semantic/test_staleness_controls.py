"""Routine controls (issue 45): a change that moves no annotation's truth raises no finding. A
compaction or an identical re-run rewrites a table's files without changing its rows: a verified
query that reads it keeps its answer across the rewrite, so the new rows of a later routine load
(the answer a growing table's query is for) never make it `verified_query_changed`. A small lake of
its own."""

from __future__ import annotations

import semantic as sm
from eval.fixtures.lakes import LakeBuilder

T = "acme.core.t"


def _daily(elk: LakeBuilder) -> None:
    """An unpartitioned table appended daily (a file per load) and two verified queries over it."""
    cat = elk.cat
    elk.table(T, [("d", "date"), ("id", "bigint"), ("kind", "string")], at=0)
    for day in range(1, 5):
        elk.append(T, {"d": [f"2024-11-1{day}"] * 2, "id": [2 * day, 2 * day + 1], "kind": ["a", "b"]}, at=day)
    sm.verify_query(cat, "rows per kind", "SELECT kind, count(*) FROM acme.core.t GROUP BY kind ORDER BY kind",
                    author="a", time=elk.day(4.5))
    sm.verify_query(cat, "ids", "SELECT count(id) FROM acme.core.t", author="a", time=elk.day(4.6))


def _all_rows(elk: LakeBuilder, days: range) -> dict[str, list]:
    return {"d": [f"2024-11-1{day}" for day in days for _ in range(2)],
            "id": [i for day in days for i in (2 * day, 2 * day + 1)], "kind": ["a", "b"] * len(days)}


def _changed(cat, now, depth):
    return {f.annotation: f for f in sm.staleness(cat, T, depth=depth, now=now, merge=False)
            if f.reason == "verified_query_changed"}


def test_a_compaction_then_a_routine_load_does_not_change_a_verified_answer(elk):
    """The four files compacted into one (the same rows, an overwrite in the write log), then a
    routine append: the answer differs from the verified one only by the new rows, and running the
    query either side of the compaction gives the same answer: no `verified_query_changed` at
    either depth (failed before: flagged at data depth, "since acme.core.t was rewritten")."""
    cat = elk.cat
    _daily(elk)
    elk.overwrite(T, _all_rows(elk, range(1, 5)), at=5)           # the compaction
    elk.append(T, {"d": ["2024-11-15"] * 2, "id": [10, 11], "kind": ["a", "b"]}, at=6)
    for depth in ("metadata", "data"):
        assert _changed(cat, elk.day(6), depth) == {}, depth


def test_an_identical_rerun_between_loads_does_not_change_a_verified_answer(elk):
    """A load re-run with identical rows (the table reloaded whole), loads before and after it:
    the same answer across the re-run, so nothing (failed before: flagged at data depth)."""
    cat = elk.cat
    _daily(elk)
    elk.append(T, {"d": ["2024-11-15"] * 2, "id": [10, 11], "kind": ["a", "b"]}, at=5)
    elk.overwrite(T, _all_rows(elk, range(1, 6)), at=5.5)         # the re-run
    elk.append(T, {"d": ["2024-11-16"] * 2, "id": [12, 13], "kind": ["a", "b"]}, at=6)
    assert _changed(cat, elk.day(6), "data") == {}


def test_a_rewrite_that_moves_the_answer_is_still_flagged(elk):
    """The counterpart: a rewrite that drops rows (a restatement) moves the answer across it, and the
    routine load after it does not hide that: flagged at data depth, re-verify."""
    cat = elk.cat
    _daily(elk)
    rows = _all_rows(elk, range(1, 5))
    elk.overwrite(T, {k: v[4:] for k, v in rows.items()}, at=5)   # days 1 and 2 restated away
    elk.append(T, {"d": ["2024-11-15"] * 2, "id": [10, 11], "kind": ["a", "b"]}, at=6)
    got = _changed(cat, elk.day(6), "data")
    assert len(got) == 2, got
    assert all([x.action for x in f.fixes] == ["reverify"] for f in got.values())


R = "acme.raw.lines"


def _keyless(elk: LakeBuilder, text: str, extra: dict[str, list], add: str = "load_note", kind: str = "string") -> None:
    """A raw table whose grain states no keys, one day loaded, then a load that doubles its rows and
    brings a new column `add` (schema and rows in one commit, as the Spark bridge appends with a
    schema change)."""
    cat = elk.cat
    elk.table(R, [("d", "date"), ("line_id", "bigint"), ("amt", "bigint")], at=0)
    elk.append(R, {"d": ["2024-11-11"] * 4, "line_id": [1, 2, 3, 4], "amt": [5, 6, 7, 8]}, at=1)
    sm.annotate(cat, R, {"grain": {"text": text, "keys": []}}, author="a", time=elk.day(1.5))
    sch = dict(elk.schemas[R])
    sch["columns"] = [*sch["columns"], {"id": 4, "name": add, "type": kind, "nullable": True}]
    sch["schema_id"] = 1
    elk.schemas[R] = sch
    rows = {"d": ["2024-11-12"] * 4, "amt": [5, 6, 7, 8], **extra}
    with cat.transaction(author="etl", message="load", time=elk.at(2), meta=elk._meta(R, "append", rows)) as txn:
        txn.merge(elk.path(R), {"schema": {"op": "set", "val": sch}})
        elk._add_rows(txn, R, rows)


def _grain(cat, now, depth):
    return [(f.reason, f.message) for f in sm.staleness(cat, R, depth=depth, now=now, merge=False)
            if f.annotation == "table.grain"]


def test_a_new_nullable_column_makes_no_grain_finding_on_a_keyless_grain(elk):
    """A grain with no key list ("one row per line as received") and a load that doubles the rows
    with a new unannotated column holding nulls: a column with nulls identifies no row, and the
    grain's text names no column it could split: no grain finding at either depth (failed before:
    schema_changed "rows may now be split by load_note" at both)."""
    _keyless(elk, "one row per line as received",
             {"line_id": [5, 6, 7, 8], "load_note": ["b1", None, "b1", None]})
    for depth in ("metadata", "data"):
        assert _grain(elk.cat, elk.day(3), depth) == [], depth


def test_a_keyless_grain_is_judged_on_the_columns_its_text_names(elk):
    """The counterpart: the grain's text names `line_id`, and the table is rebuilt as periodic
    snapshots (a `snap` date in every row, each `line_id` once per snapshot): flagged at both depths
    with the keys (line_id, snap) (failed before: set_keys (snap) alone, the text's column left out)."""
    cat = elk.cat
    elk.table(R, [("d", "date"), ("line_id", "bigint"), ("amt", "bigint")], at=0)
    elk.append(R, {"d": ["2024-11-11"] * 4, "line_id": [1, 2, 3, 4], "amt": [5, 6, 7, 8]}, at=1)
    sm.annotate(cat, R, {"grain": {"text": "one row per line_id as received", "keys": []}}, author="a",
                time=elk.day(1.5))
    elk.evolve(R, add=[("snap", "date")], at=2, rows={"d": ["2024-11-11"] * 8, "line_id": [1, 2, 3, 4] * 2,
                                                       "amt": [5, 6, 7, 8] * 2,
                                                       "snap": ["2024-11-11"] * 4 + ["2024-11-12"] * 4})
    for depth in ("metadata", "data"):
        got = [f for f in sm.staleness(cat, R, depth=depth, now=elk.day(3), merge=False) if f.annotation == "table.grain"]
        assert got, depth
        assert [(x.action, x.params.get("keys")) for x in got[0].fixes][:1] == [("set_keys", ["line_id", "snap"])], \
            (depth, got)


W = "acme.core.returns"


def test_a_widened_decimal_changes_no_claim_on_the_column(elk):
    """A routine load that widens a measure's decimal (7,2) -> (11,2), as a load whose sums need more
    digits does: every value reads the same, so its role, unit and description stay true (failed
    before: column_type_changed on each, a false alarm on a routine load). A change of scale
    (11,2) -> (11,4) still is flagged on the claim whose content depends on the type, the unit (the
    declared precision of the values changed); the role and description still hold."""
    cat = elk.cat
    elk.table(W, [("d", "date"), ("id", "bigint"), ("amt", "decimal(7,2)")], at=0)
    elk.append(W, {"d": ["2024-11-11"] * 2, "id": [1, 2], "amt": [1.5, 20.25]}, at=1)
    sm.annotate(cat, W, {"role": "measure", "unit": "dollars", "description": "amount returned"}, column="amt",
                author="a", time=elk.day(1.5))
    elk.evolve(W, retype={"amt": "decimal(11,2)"}, at=2)
    elk.append(W, {"d": ["2024-11-12"] * 2, "id": [3, 4], "amt": [3.5, 123456.75]}, at=2.1)
    got = [(f.annotation, f.reason) for f in sm.staleness(cat, W, now=elk.day(3), merge=False)]
    assert got == [], got
    elk.evolve(W, retype={"amt": "decimal(11,4)"}, at=4)
    got = {(f.annotation, f.reason) for f in sm.staleness(cat, W, now=elk.day(5), merge=False)}
    assert ("column.3.unit", "column_type_changed") in got, got
    assert not {("column.3.role", "column_type_changed"), ("column.3.description", "column_type_changed")} & got


def test_a_join_key_retyped_under_a_verified_query_is_judged_by_the_answer_across_the_change(elk):
    """A join key restated as zero-padded text: DuckDB still joins it to the integer key (an implicit
    cast), so the answer just before and just after the change is the same; a later routine load moves
    it, as loads do. Session 14 flagged the query's copy on the other table whatever the answer showed
    ("what the SQL means changed"); the trap generator's truth counts a verified answer false exactly
    when the change moved it, and development seed 1 (TPC-DS, `cs_ship_mode_sk`) showed the flag as a
    false alarm. So a change of a read column's type alone is judged by the answer across it, as a split
    of the rows is: cleared here on both copies; a query the retype breaks keeps its flag
    (tests/semantic/test_staleness_definitions.py, the literal '7')."""
    cat = elk.cat
    dim = "acme.core.dim"
    elk.table(dim, [("k", "bigint"), ("name", "string")], at=0, rows={"k": [1, 2, 3], "name": ["x", "y", "z"]})
    elk.table(T, [("d", "date"), ("k", "bigint")], at=0.5)
    for day in range(1, 4):
        elk.append(T, {"d": [f"2024-11-1{day}"] * 2, "k": [1, day]}, at=day)
    sm.verify_query(cat, "rows per name", "SELECT x.name, count(*) FROM acme.core.t o JOIN acme.core.dim x ON x.k = o.k "
                    "GROUP BY x.name ORDER BY x.name", author="a", time=elk.day(3.5))
    elk.evolve(T, retype={"k": "string"}, at=4, rows={"d": [f"2024-11-1{day}" for day in range(1, 4) for _ in range(2)],
                                                       "k": [f"{v:010d}" for day in range(1, 4) for v in (1, day)]})
    elk.append(T, {"d": ["2024-11-14"] * 2, "k": ["0000000001", "0000000002"]}, at=5)
    for name in (dim, T):
        meta = {f.reason for f in sm.staleness(cat, name, depth="metadata", now=elk.day(6), merge=False)
                if (f.annotation or "").startswith("verified_query.")}
        assert meta & {"column_type_changed", "schema_changed"}, meta  # metadata can only suspect it
        got = {f.reason for f in sm.staleness(cat, name, depth="data", now=elk.day(6), merge=False)
               if (f.annotation or "").startswith("verified_query.")}
        assert got == set(), (name, got)


def test_a_load_that_repeats_the_grain_keys_changes_a_verified_answer(elk):
    """A table whose grain is (id): a routine load of new ids changes the answer as the query is
    meant to (no flag), then the latest day is loaded again (every key twice, no schema change, no
    rewrite): the answer counts rows twice, flagged at data depth with re-verify (failed before:
    nothing, the different answer taken for routine growth). The keys repeating now and not when the
    query was verified is the evidence."""
    cat = elk.cat
    _daily(elk)
    sm.annotate(cat, T, {"grain": {"text": "one row per id", "keys": ["id"]}}, author="a", time=elk.day(4.7))
    elk.append(T, {"d": ["2024-11-15"] * 2, "id": [10, 11], "kind": ["a", "b"]}, at=5)
    assert _changed(cat, elk.day(5), "data") == {}
    elk.append(T, {"d": ["2024-11-15"] * 2, "id": [10, 11], "kind": ["a", "b"]}, at=6)
    got = _changed(cat, elk.day(6), "data")
    assert len(got) == 2, got
    assert all([x.action for x in f.fixes] == ["reverify"] and "repeat" in f.message for f in got.values())


def test_a_compaction_of_a_deprecated_table_is_not_a_load(elk):
    """A deprecated table compacted (its files rewritten as one, the same rows) or re-run with
    identical rows: nobody wrote new data to it, so no `deprecated_but_written` (failed before:
    "deprecated, but 1 load(s) since", a false alarm on a routine control). A load of new rows is
    still flagged."""
    cat = elk.cat
    _daily(elk)
    sm.annotate(cat, T, {"deprecated": {"reason": "use acme.core.t2"}}, author="a", time=elk.day(4.8))
    elk.overwrite(T, _all_rows(elk, range(1, 5)), at=5)           # the compaction
    elk.overwrite(T, _all_rows(elk, range(1, 5)), at=5.5)         # an identical re-run
    reasons = {f.reason for f in sm.staleness(cat, T, now=elk.day(6), merge=False)}
    assert "deprecated_but_written" not in reasons, reasons
    elk.append(T, {"d": ["2024-11-15"] * 2, "id": [10, 11], "kind": ["a", "b"]}, at=6)
    got = [f for f in sm.staleness(cat, T, now=elk.day(7), merge=False) if f.reason == "deprecated_but_written"]
    assert len(got) == 1 and got[0].evidence.values["loads"] == 1, got


def test_a_deprecated_table_restated_under_a_new_type_is_not_a_load(elk):
    """A deprecated table whose rows are restated once under a new column type (the same rows, a
    schema change that rewrites every file): maintenance of the rows already there, not someone
    still loading it, so no `deprecated_but_written` (failed before: "deprecated, but 1 load(s)
    since"). A restatement that drops rows adds nothing either. A load of new rows, or of a new
    period in place of old rows, is still flagged."""
    cat = elk.cat
    _daily(elk)
    sm.annotate(cat, T, {"deprecated": {"reason": "use acme.core.t2"}}, author="a", time=elk.day(4.8))
    rows = _all_rows(elk, range(1, 5))
    elk.evolve(T, retype={"id": "string"}, rows={**rows, "id": [f"{i:08d}" for i in rows["id"]]}, at=5)
    fewer = _all_rows(elk, range(2, 5))
    elk.overwrite(T, {**fewer, "id": [f"{i:08d}" for i in fewer["id"]]}, at=5.5)  # the oldest day deleted
    got = [f for f in sm.staleness(cat, T, now=elk.day(6), merge=False) if f.reason == "deprecated_but_written"]
    assert got == []
    rolled = _all_rows(elk, range(3, 6))  # a rolling window: the oldest day out, a new day in (same rows)
    v = elk.overwrite(T, {**rolled, "id": [f"{i:08d}" for i in rolled["id"]]}, at=6)
    got = [f for f in sm.staleness(cat, T, now=elk.day(6.5), merge=False) if f.reason == "deprecated_but_written"]
    assert len(got) == 1 and got[0].evidence.values["loads"] == 1 and v in got[0].evidence.vids, got
    elk.append(T, {"d": ["2024-11-15"] * 2, "id": ["00000010", "00000011"], "kind": ["a", "b"]}, at=7)
    got = [f for f in sm.staleness(cat, T, now=elk.day(7.5), merge=False) if f.reason == "deprecated_but_written"]
    assert len(got) == 1 and got[0].evidence.values["loads"] == 2, got


D = "acme.core.dim"


def _dim(elk: LakeBuilder, days: list[list[str]]) -> None:
    """A dimension rebuilt whole (always overwritten: its rewrites are routine), one rebuild a day with
    the categories of `days[i]`, two items each, and a verified query counting items per category
    after the last of them."""
    for day, cats in enumerate(days):
        rows = {"id": [10 * i + j for i in range(len(cats)) for j in (0, 1)], "category": [c for c in cats for _ in (0, 1)]}
        if day == 0:
            elk.table(D, [("id", "bigint"), ("category", "string")], at=0, rows=rows)
        else:
            elk.overwrite(D, rows, at=day)
    sm.verify_query(elk.cat, "items per category", "SELECT category, count(*) AS n FROM acme.core.dim GROUP BY category "
                    "ORDER BY category", author="a", time=elk.day(len(days) - 0.5))


def _dim_changed(cat, now):
    return {f.annotation: f for f in sm.staleness(cat, D, depth="data", now=now, merge=False)
            if f.reason == "verified_query_changed"}


def test_rows_removed_from_a_table_that_never_lost_rows_move_a_verified_answer(elk):
    """A dimension (always rebuilt whole, so a rebuild is routine) loses a category's rows after the
    query was verified: the answer moved across that commit, the first of the table's commits to
    leave fewer rows: flagged at data depth, re-verify (failed before: nothing, no schema change,
    rewrite or late data to name). Control: the same rebuild with every row kept."""
    cat = elk.cat
    _dim(elk, [["a", "b", "c"]])
    elk.overwrite(D, {"id": [0, 1, 10, 11, 20, 21], "category": ["a", "a", "b", "b", "c", "c"]}, at=1)
    assert _dim_changed(cat, elk.day(1)) == {}  # control: rebuilt with the same rows
    v = elk.overwrite(D, {"id": [0, 1, 10, 11], "category": ["a", "a", "b", "b"]}, at=2)  # 'c' removed
    got = _dim_changed(cat, elk.day(2))
    assert len(got) == 1, got
    f = next(iter(got.values()))
    assert f.status == "suspect" and v in f.evidence.vids and f.evidence.values["change"] == "removed"
    assert [x.action for x in f.fixes] == ["reverify"]


def test_rows_removed_from_a_table_that_sheds_rows_by_habit_are_routine(elk):
    """Control: a table whose rebuilds lost rows before the query was verified (a rolling window)
    loses rows again: routine, not flagged, though the answer moved."""
    cat = elk.cat
    _dim(elk, [["a", "b", "c"], ["b", "c"], ["a", "b", "c"]])
    elk.overwrite(D, {"id": [0, 1, 10, 11], "category": ["b", "b", "c", "c"]}, at=3)
    assert _dim_changed(cat, elk.day(3)) == {}
