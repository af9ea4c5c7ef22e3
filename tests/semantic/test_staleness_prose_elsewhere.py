"""Prose naming a column of another table, qualified by that table's name (issue 45): a rename or a
drop of that column makes the text false wherever it is written, not only on the column's own table."""

from __future__ import annotations

import semantic as sm
from eval.fixtures.lakes import LakeBuilder
from semantic.models import Fix

T = "acme.ps.orders"
U = "acme.ps.deliveries"


def _lake(lk: LakeBuilder) -> None:
    lk.table(T, [("id", "bigint"), ("doc_type", "string"), ("note", "string")], at=0,
             rows={"id": [1, 2, 3], "doc_type": ["a", "b", "a"], "note": ["x", "y", "z"]})
    lk.table(U, [("id", "bigint"), ("doc_ref", "string"), ("status", "string")], at=0,
             rows={"id": [1, 2], "doc_ref": ["a", "b"], "status": ["open", "done"]})


def _by_ann(cat, table, now):
    return {(f.annotation, f.reason): f for f in sm.staleness(cat, table, now=now)}


def test_prose_naming_another_tables_renamed_column(elk):
    cat = elk.cat
    _lake(elk)
    sm.annotate(cat, T, {"description": "the document type; matches deliveries.doc_ref"}, column="doc_type",
                author="a", time=elk.day(1))
    sm.annotate(cat, T, {"description": "free text, see acme.ps.deliveries.status"}, column="note",
                author="a", time=elk.day(1))
    # controls: nothing of the other table changed; then a column the texts do not name
    assert not [f for f in sm.staleness(cat, T, now=elk.day(1)) if f.reason in ("column_renamed", "column_dropped")]
    elk.evolve(U, add=[("carrier", "string")], at=2)
    assert not [f for f in sm.staleness(cat, T, now=elk.day(2)) if f.reason in ("column_renamed", "column_dropped")]
    v = elk.evolve(U, rename={"doc_ref": "doc_ref_nk"}, at=3)
    f = _by_ann(cat, T, elk.day(3))
    got = f[("column.2.description", "column_renamed")]
    assert got.status == "stale" and v in got.evidence.vids
    assert got.evidence.values["table"] == U and got.evidence.values["now"] == "doc_ref_nk"
    assert got.fixes == [Fix(action="investigate", params={"table": U, "columns": ["doc_ref_nk"]})]
    assert "deliveries.doc_ref" in got.suggestion and "doc_ref_nk" in got.suggestion
    # the other text names another column of that table: untouched by the rename
    assert ("column.3.description", "column_renamed") not in f
    w = elk.evolve(U, drop=["status"], at=4)
    f = _by_ann(cat, T, elk.day(4))
    gone = f[("column.3.description", "column_dropped")]
    assert gone.status == "stale" and w in gone.evidence.vids and not gone.fixes


def test_ordinary_words_and_unqualified_names_are_not_claims(elk):
    cat = elk.cat
    _lake(elk)
    # 'status' unqualified is a word; 'doc_ref' unqualified names no table; 'e.g.' and 'v1.status' are not qualifiers
    sm.annotate(cat, T, {"description": "the status of the document, e.g. doc_ref or v1.status"}, column="doc_type",
                author="a", time=elk.day(1))
    elk.evolve(U, rename={"doc_ref": "doc_ref_nk"}, drop=["status"], at=2)
    assert not [f for f in sm.staleness(cat, T, now=elk.day(2))
                if f.reason in ("column_renamed", "column_dropped") and f.annotation == "column.2.description"]


def test_an_added_column_named_in_prose_about_another_table_is_that_tables(elk):
    """A table starts keeping versions (valid_from, valid_to, is_current added). Its description was
    written before and says how to join a dimension that keeps versions: "join acme.ps.deliveries on
    doc_ref and is_current". That is_current is the dimension's (the clause names it, and it has one),
    so the description stays true: no schema_changed (failed before: any added column's name in the
    text made it suspect). Controls: a description naming is_current with no other table in its clause,
    and one stating the grain the versions split ("one row per order"), are still suspect."""
    cat = elk.cat
    _lake(elk)
    elk.evolve(U, add=[("is_current", "boolean")], at=0.5, rows={"id": [1, 2], "doc_ref": ["a", "b"],
                                                                 "status": ["open", "done"], "is_current": [True, True]})
    other, third = "acme.ps.orders_b", "acme.ps.orders_c"
    elk.table(other, [("id", "bigint"), ("doc_type", "string")], at=0.6, rows={"id": [1, 2], "doc_type": ["a", "b"]})
    elk.table(third, [("id", "bigint"), ("doc_type", "string")], at=0.7, rows={"id": [1, 2], "doc_type": ["a", "b"]})
    sm.annotate(cat, T, {"description": "Orders since 2024. Deliveries: join acme.ps.deliveries on doc_ref and "
                                        "is_current. Live ones: deliveries.is_current"}, author="a", time=elk.day(1))
    sm.annotate(cat, other, {"description": "Orders; read the rows with is_current"}, author="a", time=elk.day(1.1))
    sm.annotate(cat, third, {"description": "one row per order (join acme.ps.deliveries on doc_ref and is_current)"},
                author="a", time=elk.day(1.2))
    versions = [("valid_from", "date"), ("valid_to", "date"), ("is_current", "boolean")]
    rows = {"id": [1, 2, 2], "doc_type": ["a", "b", "c"], "valid_from": ["2024-01-01"] * 2 + ["2024-11-14"],
            "valid_to": [None, "2024-11-14", None], "is_current": [True, False, True]}
    elk.evolve(T, add=versions, at=2, rows={**rows, "note": ["x", "y", "y"]})
    elk.evolve(other, add=versions, at=2, rows=rows)
    elk.evolve(third, add=versions, at=2, rows=rows)

    def changed(table, depth):
        return [f for f in sm.staleness(cat, table, depth=depth, now=elk.day(2), merge=False)
                if f.annotation == "table.description" and f.reason == "schema_changed"]

    for depth in ("metadata", "data"):
        assert changed(T, depth) == [], depth
        assert len(changed(other, depth)) == 1 and len(changed(third, depth)) == 1, depth


def test_a_clause_naming_another_table_speaks_of_its_columns(elk):
    """Prose whose clause names another table speaks of that table's columns there, unqualified:
    "join acme.ps.deliveries on doc_ref and is_current". When the other table renames is_current, the
    text names the old name: column_renamed, stale, what to look at (failed before: only
    `deliveries.is_current`, qualified, was read). Controls: the same identifier in a clause naming no
    other table; a plain word (`status`) of a clause naming the table, whose column is renamed too (a
    plain word may mean anything); `doc_ref`, renamed too, which the orders also have (the text's is
    theirs)."""
    cat = elk.cat
    _lake(elk)
    elk.evolve(U, add=[("is_current", "boolean")], at=0.5, rows={"id": [1, 2], "doc_ref": ["a", "b"],
                                                                 "status": ["open", "done"], "is_current": [True, True]})
    elk.evolve(T, add=[("doc_ref", "string")], at=0.6, rows={"id": [1, 2, 3], "doc_type": ["a", "b", "a"],
                                                              "note": ["x", "y", "z"], "doc_ref": ["a", "b", "a"]})
    sm.annotate(cat, T, {"description": "Orders. Deliveries: join acme.ps.deliveries on doc_ref and is_current"},
                author="a", time=elk.day(1))
    sm.annotate(cat, T, {"description": "free text; is_current rows only"}, column="note", author="a", time=elk.day(1.1))
    sm.annotate(cat, T, {"description": "the type; its status is in deliveries"}, column="doc_type", author="a",
                time=elk.day(1.2))
    v = elk.evolve(U, rename={"is_current": "is_live", "status": "state", "doc_ref": "doc_ref_nk"}, at=2)
    f = _by_ann(cat, T, elk.day(2))
    got = f[("table.description", "column_renamed")]
    assert got.status == "stale" and v in got.evidence.vids and got.evidence.values["now"] == "is_live"
    renamed = [x.evidence.values["now"] for x in sm.staleness(cat, T, now=elk.day(2), merge=False)
               if x.annotation == "table.description" and x.reason == "column_renamed"]
    assert renamed == ["is_live"]  # doc_ref: the orders have one too, so the text's doc_ref is theirs
    assert got.fixes == [Fix(action="investigate", params={"table": U, "columns": ["is_live"]})]
    assert ("column.3.description", "column_renamed") not in f and ("column.2.description", "column_renamed") not in f
