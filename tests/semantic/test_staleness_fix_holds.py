"""A finding's fix holds for the annotation it is listed for (issue 45, fix accuracy): one change
merged into one finding per table (`merge_by_cause`) lists a repair only for the annotations that
repair can rewrite; the others of the same cause keep their own fix, or none (what to look at).
Small lakes of their own (eval.fixtures.lakes), never a trap seed; each with its control."""

from __future__ import annotations

import pytest

import semantic as sm
from semantic.annotations import new_annotation, write_annotations
from semantic.models import Fix

DIM = "acme.core.dim"


def _by_annotation(findings):
    """annotation -> the first fix listed for it (None: none), over merged findings."""
    out = {}
    for f in findings:
        for k in f.annotations or [f.annotation]:
            out.setdefault(k, f.fixes[0] if f.fixes else None)
    return out


def test_a_periodic_snapshot_offers_new_keys_for_the_grain_only(elk):
    """grain: a dimension becomes a periodic snapshot. The grain takes the keys with the snapshot
    date; the description that says "one row per customer" is false too, but new keys are no
    rewrite of prose: it is listed with no fix (failed before: the description's finding, merged
    with the grain's by their cause, offered set_keys). Control: both annotations still flagged."""
    cat = elk.cat
    elk.table(DIM, [("id", "bigint"), ("kind", "string")], at=0, rows={"id": [1, 2, 3], "kind": ["a", "b", "a"]})
    sm.annotate(cat, DIM, {"grain": {"text": "one row per id", "keys": ["id"]},
                           "description": "Customers: one row per customer."}, author="a", time=elk.day(0.5))
    elk.evolve(DIM, add=[("snapshot_date", "date")], at=1,
               rows={"id": [1, 2, 3, 1, 2, 3], "kind": ["a", "b", "a"] * 2,
                     "snapshot_date": ["2024-11-10"] * 3 + ["2024-11-11"] * 3})
    want = Fix(action="set_keys", params={"keys": ["id", "snapshot_date"]})
    for depth in ("metadata", "data"):
        got = _by_annotation(sm.staleness(cat, DIM, depth=depth, now=elk.day(1)))
        assert got.get("table.grain") == want, (depth, got)
        assert "table.description" in got and got["table.description"] is None, (depth, got)


def test_scd2_offers_the_current_filter_for_the_grain_and_reverify_for_a_query(elk):
    """grain: a dimension starts keeping versions. The grain's fix filters is_current; a verified
    query on the table is re-verified (a filter is no rewrite of its SQL; failed before: merged with
    the grain's finding, the query was offered the filter first); the description stating the grain
    gets no fix."""
    cat = elk.cat
    elk.table(DIM, [("customer_id", "bigint"), ("tier", "string")], at=0,
              rows={"customer_id": [1, 2, 3], "tier": ["none", "gold", "none"]})
    sm.annotate(cat, DIM, {"grain": {"text": "one row per customer", "keys": ["customer_id"]},
                           "description": "One row per customer."}, author="a", time=elk.day(1))
    sm.verify_query(cat, "customers by tier", "SELECT tier, count(*) FROM acme.core.dim GROUP BY tier",
                    author="a", time=elk.day(1.1))
    elk.evolve(DIM, add=[("valid_from", "date"), ("valid_to", "date"), ("is_current", "boolean")], at=3,
               rows={"customer_id": [1, 2, 3, 2], "tier": ["none", "silver", "none", "gold"],
                     "valid_from": ["2024-01-01"] * 3 + ["2024-11-14"], "valid_to": [None, "2024-11-14", None, None],
                     "is_current": [True, False, True, True]})
    flt = Fix(action="filter", params={"table": DIM, "column": "is_current"})
    for depth in ("metadata", "data"):
        found = sm.staleness(cat, DIM, depth=depth, now=elk.day(3))
        got = _by_annotation(found)
        assert got.get("table.grain") == flt, (depth, got)
        vq = [k for k in got if k.startswith("verified_query.")]
        assert vq and all(got[k] == Fix(action="reverify", params={}) for k in vq), (depth, got)
        if "table.description" in got:
            assert got["table.description"] is None, (depth, got)
        # one review group still: the findings of the change share its cause
        assert len({f.cause for f in found if f.reason in ("grain_violated", "schema_changed")}) == 1, found


# ------------------------------------------------------------------ which value took a vanished value's rows
MART = "acme.mart.m"


def _mart(elk, grain: bool) -> None:
    """A monthly mart per region (the region one of its grain's keys, or no grain annotated)."""
    cat = elk.cat
    elk.table(MART, [("month", "bigint"), ("region", "string"), ("revenue", "decimal(14,2)")], at=0)
    rows = {"month": [1, 1, 1, 2, 2, 2], "region": ["ne", "se", "w"] * 2,
            "revenue": [10.5, 20.25, 7.0, 11.0, 19.75, 8.5]}
    elk.overwrite(MART, rows, at=1)
    if grain:
        sm.annotate(cat, MART, {"grain": {"text": "one row per month and region", "keys": ["month", "region"]}},
                    author="a", time=elk.day(1.4))
    sm.annotate(cat, MART, {"enum": ["ne", "se", "w"]}, column="region", author="a", time=elk.day(1.5))


def _enum_fix(elk, now):
    got = [f for f in sm.staleness(elk.cat, MART, depth="data", now=now, merge=False) if f.annotation == "column.2.enum"]
    assert got, "the enum is flagged"
    return got[0].fixes[0] if got[0].fixes and got[0].fixes[0].action != "investigate" else None


@pytest.mark.parametrize("grain", [True, False], ids=["keyed-by-region", "no-grain"])
def test_a_region_merged_in_a_mart_gets_its_value_map(elk, grain):
    """values_units (data): 'ne' merged into 'se' in a mart: the rows that held 'ne' are still there, the
    same in every other column, and hold 'se' now, so the enum gets `value_map {ne: se}` with the values now.
    With the grain annotated (its keys include the region) they are followed by its other keys (failed
    before: those match every region's rows of a month, so no one value took them: no fix); with no grain,
    on every other column."""
    _mart(elk, grain)
    elk.overwrite(MART, {"month": [1, 1, 1, 2, 2, 2], "region": ["se", "se", "w"] * 2,
                         "revenue": [10.5, 20.25, 7.0, 11.0, 19.75, 8.5]}, at=2)
    want = Fix(action="value_map", params={"column": "region", "map": {"ne": "se"}, "values": ["se", "w"]})
    assert _enum_fix(elk, elk.day(2)) == want


def test_a_region_whose_rows_were_removed_gets_no_value_map(elk):
    """Control: the rows of 'ne' removed, and rows of 'se' that were there already: no row moved,
    so no map (the other columns of the removed rows are found nowhere now)."""
    _mart(elk, False)
    elk.overwrite(MART, {"month": [1, 1, 2, 2], "region": ["se", "w"] * 2, "revenue": [20.25, 7.0, 19.75, 8.5]}, at=2)
    assert _enum_fix(elk, elk.day(2)) is None


T = "acme.core.t"


def _appended(elk, kinds_per_day):
    """T loaded by appends (a day per partition, ids 10*day+i), its kinds annotated (grain id, enum)."""
    cat = elk.cat
    elk.table(T, [("d", "date"), ("id", "bigint"), ("kind", "string")], partition_by=["d"], at=0)
    rows: dict[str, list] = {"d": [], "id": [], "kind": []}
    for day, kinds in enumerate(kinds_per_day, 1):
        part = {"d": [f"2024-11-1{day}"] * len(kinds), "id": [10 * day + i for i in range(len(kinds))], "kind": kinds}
        elk.append(T, part, at=day)
        for k in rows:
            rows[k] += part[k]
    sm.annotate(cat, T, {"grain": {"text": "one row per id", "keys": ["id"]}}, author="a", time=elk.day(5))
    sm.annotate(cat, T, {"enum": sorted(set(sum(kinds_per_day, [])))}, column="kind", author="a", time=elk.day(5.1))
    return rows


def _first_fix(findings, key):
    for f in findings:
        if key in (f.annotations or [f.annotation]):
            return next((x for x in f.fixes if x.action != "investigate"), None)
    raise AssertionError(f"{key} not flagged: {findings}")


def test_rows_removed_in_a_rewrite_get_no_value_map_from_a_reused_key(elk):
    """values_units (data): a rewrite of an appended table removes every 'c' row, and a new row
    reuses the id of one of them with 'a': one row of the vanished value's is no evidence that 'c'
    became 'a' (failed before: value_map {c: a} from that one row). The enum is flagged, with no
    value_map."""
    rows = _appended(elk, [["a", "c", "c", "b"], ["a", "c", "c", "b"], ["c", "c", "a", "b"]])
    keep = [i for i, k in enumerate(rows["kind"]) if k != "c"]
    new = {k: [rows[k][i] for i in keep] for k in rows}
    new["d"].append("2024-11-13")
    new["id"].append(rows["id"][rows["kind"].index("c")])
    new["kind"].append("a")
    elk.overwrite(T, new, at=6)
    fix = _first_fix(sm.staleness(elk.cat, T, depth="data", now=elk.day(6)), "column.3.enum")
    assert fix is None or fix.action != "value_map", fix


def test_a_value_added_beside_the_last_one_is_no_respelling_at_metadata_depth(elk):
    """values_units (metadata): a rewrite restates some rows of every day as 'zz_new' (others of
    their value stay). The files'
    bounds moved from 'p7' to 'zz_new' in every partition, but 'p7' is still inside each
    partition's range: nothing shows it gone, so no value_map {p7: zz_new}; the enum takes the new
    value (failed before: the bound that moved was read as a respelling)."""
    rows = _appended(elk, [["p1", "p3", "p3", "p7"], ["p1", "p3", "p5", "p3", "p7"], ["p1", "p3", "p3", "p7"]])
    new = {k: list(v) for k, v in rows.items()}
    new["kind"] = ["zz_new" if k == "p3" and i % 2 else k for i, k in enumerate(rows["kind"])]
    elk.overwrite(T, new, at=6)
    fix = _first_fix(sm.staleness(elk.cat, T, now=elk.day(6)), "column.3.enum")
    assert fix == Fix(action="add_enum_values", params={"column": "kind", "values": ["zz_new"]}), fix



# ------------------------------------------------------------------ a relationship's condition names a renamed column
def test_a_relationship_whose_condition_names_a_renamed_column_gets_the_rename(elk):
    """keys_joins (metadata): a relationship into a versioned dimension filtered by its condition
    (`is_current`); the flag is renamed `is_current_flag`: the condition names a column that is no
    longer there, so the join matches every version. join_key_missing with `rename` (failed
    before: nothing at metadata depth, no fix at data depth); accepting it rewrites the condition.
    Control: the relationship before the rename raises nothing."""
    cat = elk.cat
    elk.table(DIM, [("customer_id", "bigint"), ("tier", "string"), ("is_current", "boolean")], at=0,
              rows={"customer_id": [1, 2, 2], "tier": ["a", "b", "c"], "is_current": [True, False, True]})
    elk.table(T, [("id", "bigint"), ("customer_id", "bigint")], at=0, rows={"id": [1, 2], "customer_id": [1, 2]})
    value = {"to": DIM, "on": [["customer_id", "customer_id"]], "cardinality": "many_to_one", "canonical": True,
             "condition": "is_current"}
    ann = new_annotation(cat, T, "relationship", "relationship.dim", value, columns=["customer_id"], author="bob",
                         time=elk.day(0.5))
    write_annotations(cat, [ann], time=elk.day(0.5))
    assert sm.staleness(cat, T, depth="data", now=elk.day(0.6)) == []  # control
    elk.evolve(DIM, rename={"is_current": "is_current_flag"}, at=1)
    want = Fix(action="rename", params={"old": "is_current", "new": "is_current_flag", "scale": 0})
    for depth in ("metadata", "data"):
        assert _first_fix(sm.staleness(cat, T, depth=depth, now=elk.day(1)), "relationship.dim") == want, depth
    items = [i for i in sm.review_items(cat, T, now=elk.day(1)).items if i.annotation == "relationship.dim"]
    assert items and items[0].acceptable, items
    sm.accept(cat, items[0], author="alice", now=elk.day(1), time=elk.day(1.1))
    got = next(a for a in sm.read_annotations(cat, T) if a.key == "relationship.dim")
    assert got.value["condition"] == "is_current_flag" and got.value["on"] == [["customer_id", "customer_id"]]


def test_a_verified_query_reading_a_renamed_column_of_another_table_gets_the_rename(elk):
    """definitions (metadata and data): a verified query joins T to DIM and filters on DIM's flag;
    the flag is renamed. The query's copy on DIM gets `rename` (its own column); so does its copy on
    T, which reads the same column of DIM (failed before: T's copy was offered reverify, "DIM
    changed its schema"). Control: a rename of a column the query does not name leaves T's copy
    alone."""
    cat = elk.cat
    elk.table(DIM, [("customer_id", "bigint"), ("tier", "string"), ("is_current", "boolean"), ("note", "string")],
              at=0, rows={"customer_id": [1, 2, 2], "tier": ["a", "b", "c"], "is_current": [True, False, True],
                          "note": ["x", "y", "z"]})
    elk.table(T, [("id", "bigint"), ("customer_id", "bigint")], at=0, rows={"id": [1, 2], "customer_id": [1, 2]})
    sm.verify_query(cat, "orders by tier", "SELECT c.tier, count(*) FROM acme.core.t AS o JOIN acme.core.dim AS c "
                    "ON c.customer_id = o.customer_id AND c.is_current GROUP BY c.tier", author="a", time=elk.day(0.5))
    elk.evolve(DIM, rename={"note": "remark"}, at=1)
    assert [f for f in sm.staleness(cat, T, now=elk.day(1)) if f.annotation and f.annotation.startswith("verified")] \
        == []  # control
    elk.evolve(DIM, rename={"is_current": "is_current_flag"}, at=2)
    want = Fix(action="rename", params={"old": "is_current", "new": "is_current_flag", "scale": 0})
    for depth in ("metadata", "data"):
        for table in (DIM, T):
            found = sm.staleness(cat, table, depth=depth, now=elk.day(2))
            key = next(k for f in found for k in (f.annotations or [f.annotation]) if k.startswith("verified_query."))
            assert _first_fix(found, key) == want, (depth, table, found)


def test_new_enum_values_are_offered_for_the_enum_only(elk):
    """values_units (metadata): a rewrite respells 'b' as 'B' (outside the enum's range: the enum
    takes a value it does not list). The enum is offered add_enum_values; the description naming
    'b', flagged by the same change, is not (a list of values is no rewrite of prose; failed
    before: merged with the enum's finding, it was offered add_enum_values too)."""
    cat = elk.cat
    rows = _appended(elk, [["a", "b"], ["a", "b"], ["a", "b"]])
    sm.annotate(cat, T, {"description": "the kind; b means bounced"}, column="kind", author="a", time=elk.day(5.2))
    new = {k: list(v) for k, v in rows.items()}
    new["kind"] = ["B" if k == "b" else k for k in rows["kind"]]
    elk.overwrite(T, new, at=6)
    found = sm.staleness(cat, T, now=elk.day(6))
    assert _first_fix(found, "column.3.enum") == Fix(action="add_enum_values", params={"column": "kind", "values": ["B"]})
    assert _first_fix(found, "column.3.description") is None, found


def _labels_accepted(elk) -> object:
    """Store the data-depth pass of `T` (day 6), accept the labels' review item (it must be acceptable) and
    read the labels back."""
    cat = elk.cat
    sm.scan(cat, T, author="ci", depth="data", now=elk.day(6), time=elk.day(6.05))
    items = [i for i in sm.review_items(cat, T, now=elk.day(6)).items if i.annotation == "column.3.labels"]
    assert items and items[0].acceptable, items
    sm.accept(cat, items[0], author="alice", now=elk.day(6), time=elk.day(6.1))
    return next(a for a in sm.read_annotations(cat, T) if a.key == "column.3.labels").value


def test_a_respelled_code_carries_its_label(elk):
    """values_units (data): a coded column's labels say what each code means; a rewrite respells
    'm2' as 'm2_x' in the same rows. The labels do not explain 'm2_x', and the rows that held 'm2'
    hold it now: the labels get `value_map {m2: m2_x}` (the meaning moves with the code; failed
    before: investigate), and accepting it renames the label's code. Control: a new code no rows
    moved to (rows added) keeps `investigate` (its meaning is for a person to say)."""
    cat = elk.cat
    rows = _appended(elk, [["m1", "m2"], ["m1", "m2"], ["m1", "m2"]])
    sm.annotate(cat, T, {"labels": {"m1": "captured", "m2": "voided"}}, column="kind", author="a", time=elk.day(5.2))
    added = {"d": ["2024-11-14"], "id": [90], "kind": ["m3"]}
    elk.append(T, added, at=5.5)
    fix = _first_fix(sm.staleness(cat, T, depth="data", now=elk.day(5.6), merge=False), "column.3.labels")
    assert fix is None, fix  # control
    new = {k: [*v, *added[k]] for k, v in rows.items()}
    new["kind"] = ["m2_x" if k == "m2" else k for k in new["kind"]]
    elk.overwrite(T, new, at=6)
    want = Fix(action="value_map", params={"column": "kind", "map": {"m2": "m2_x"}})
    assert _first_fix(sm.staleness(cat, T, depth="data", now=elk.day(6), merge=False), "column.3.labels") == want
    assert _labels_accepted(elk) == {"m1": "captured", "m2_x": "voided"}


@pytest.mark.parametrize("how", ["respelled", "merged", "split", "removed", "redrawn"])
def test_prose_naming_a_code_by_its_label_is_false_unless_the_code_was_respelled(elk, how):
    """values_units (data): the table's and the column's descriptions name the codes by their labels only
    ("voided", not 'm2'). Respelled one to one to a new code (every row of 'm2' holds 'm2_x', paired by the
    grain's keys), the label moves with the code: the prose holds, only the labels (and the enum) name the
    old code (failed before: both descriptions flagged values_restated). Merged into an existing code, split
    into two new ones or removed, the label names rows that are gone: both descriptions flagged. Redrawn
    (every row of 'm2' holds 'm2_x', and a second new code 'm4' takes rows of 'm1': the codes' meanings
    were cut anew, a split of meaning): flagged too."""
    cat = elk.cat
    rows = _appended(elk, [["m1", "m2", "m2", "m3"]] * 3)
    sm.annotate(cat, T, {"labels": {"m1": "captured", "m2": "voided", "m3": "settled"},
                         "description": "Voided payments are kept for audit"}, column="kind", author="a",
                time=elk.day(5.2))
    sm.annotate(cat, T, {"description": "Payments: captured, voided or settled."}, author="a", time=elk.day(5.3))
    seen = iter(range(100))
    to = {"respelled": lambda: "m2_x", "merged": lambda: "m1", "split": lambda: f"m2_{'ab'[next(seen) % 2]}",
          "removed": lambda: None, "redrawn": lambda: "m2_x"}[how]
    kinds = [to() if k == "m2" else k for k in rows["kind"]]
    if how == "redrawn":
        kinds[rows["kind"].index("m1")] = "m4"
    keep = [i for i, k in enumerate(kinds) if k is not None]
    new = {k: [v[i] for i in keep] for k, v in rows.items()}
    new["kind"] = [kinds[i] for i in keep]
    elk.overwrite(T, new, at=6)
    flagged = {k for f in sm.staleness(cat, T, depth="data", now=elk.day(6), merge=False)
               for k in f.annotations or [f.annotation]}
    assert {"column.3.labels", "column.3.enum"} <= flagged, flagged
    prose = {"table.description", "column.3.description"}
    if how == "respelled":
        assert not prose & flagged, flagged
    else:
        assert prose <= flagged, (how, flagged)


def test_a_value_respelled_with_a_suffix_keeps_its_map_at_metadata_depth(elk):
    """values_units (metadata), beside the test above: 'refunded' respelled 'refunded_x' sorts
    right after it, so the partition's new range still spans the old value; a value spelled alike
    in its place is a respelling all the same: value_map {refunded: refunded_x} for the enum."""
    rows = _appended(elk, [["cancelled", "refunded"], ["cancelled", "refunded"], ["cancelled", "refunded"]])
    new = {k: list(v) for k, v in rows.items()}
    new["kind"] = ["refunded_x" if k == "refunded" else k for k in rows["kind"]]
    elk.overwrite(T, new, at=6)
    fix = _first_fix(sm.staleness(elk.cat, T, now=elk.day(6)), "column.3.enum")
    assert fix is not None and fix.action == "value_map" and fix.params["map"] == {"refunded": "refunded_x"}, fix


def test_merged_value_maps_list_the_one_with_the_values_first_whatever_the_order():
    """definitions: one respelling makes a verified query filtering the value, a metric and the enum
    false, and their findings merge (one cause). A value map that carries the column's values now (which
    the enum needs) and one that does not, for the same column and map, are one repair: the group
    lists the richer, first, whichever finding came first (failed before: a query's map without the
    values, found first at data depth on a coded column, led the group, and accepting the group's enum
    was refused for values "not read" though the data depth had read them). Control: a different map
    stays a repair of its own."""
    from semantic.models import Evidence, Finding
    from semantic.staleness.decisions import merge_by_cause

    def f(key, fixes, reason="values_restated"):
        return Finding(target=DIM if not key.startswith("column.") else f"{DIM}.tier", annotation=key, reason=reason,
                       status="stale", message=key, evidence=Evidence(vids=[5]), fixes=fixes, annotations=[key],
                       cause=f"respelled:{DIM}@5:tier")

    bare = Fix(action="value_map", params={"column": "tier", "map": {"silver": "silver_x"}})
    rich = Fix(action="value_map", params={"column": "tier", "map": {"silver": "silver_x"},
                                           "values": ["bronze", "gold", "silver_x"]})
    none = Fix(action="value_map", params={"column": "tier", "map": {"silver": "silver_x"}, "values": None})
    other = Fix(action="value_map", params={"column": "tier", "map": {"gold": "gold_x"}})
    for order in ((bare, rich, none), (rich, bare, none), (none, bare, rich)):
        got = merge_by_cause([f("verified_query.q1", [order[0]], "verified_query_changed"),
                              f("column.2.enum", [order[1]]), f("metric.m", [order[2]])])
        assert len(got) == 1 and got[0].fixes == [rich], (order, got)
    got = merge_by_cause([f("verified_query.q1", [bare]), f("metric.m", [other])])
    assert [x.fixes for x in got] == [[bare, other]], got


def test_a_respelled_code_carries_its_label_at_metadata_depth(elk):
    """values_units (metadata), beside `test_a_respelled_code_carries_its_label`: a rewrite of an
    appended table respells 'm2' as 'm2_x'; in every partition the files' bounds record 'm2_x' in
    the place of 'm2' (spelled alike, new in that change): the same paired evidence that gives the
    enum its `value_map` gives the labels theirs (the meaning moves with the code; failed before:
    the labels were not flagged at metadata depth, only at data depth). Control: a code whose rows
    were removed, nothing spelled alike in its place, gets no value_map."""
    cat = elk.cat
    rows = _appended(elk, [["m1", "m2"], ["m1", "m2"], ["m1", "m2"]])
    sm.annotate(cat, T, {"labels": {"m1": "captured", "m2": "voided"}}, column="kind", author="a", time=elk.day(5.2))
    new = {k: list(v) for k, v in rows.items()}
    new["kind"] = ["m2_x" if k == "m2" else k for k in rows["kind"]]
    elk.overwrite(T, new, at=6)
    want = Fix(action="value_map", params={"column": "kind", "map": {"m2": "m2_x"}})
    assert _first_fix(sm.staleness(cat, T, now=elk.day(6), merge=False), "column.3.labels") == want
    assert _labels_accepted(elk) == {"m1": "captured", "m2_x": "voided"}


def test_a_removed_code_gets_no_label_map_at_metadata_depth(elk):
    """Control of the test above: the rows of 'm2' removed in the rewrite; no value spelled alike
    took its place in the bounds: the labels get no value_map at metadata depth."""
    cat = elk.cat
    rows = _appended(elk, [["m1", "m2"], ["m1", "m2"], ["m1", "m2"]])
    sm.annotate(cat, T, {"labels": {"m1": "captured", "m2": "voided"}}, column="kind", author="a", time=elk.day(5.2))
    keep = [i for i, k in enumerate(rows["kind"]) if k != "m2"]
    elk.overwrite(T, {k: [rows[k][i] for i in keep] for k in rows}, at=6)
    for f in sm.staleness(cat, T, now=elk.day(6), merge=False):
        if f.annotation == "column.3.labels":
            assert all(x.action != "value_map" for x in f.fixes), f


PAY = "acme.core.pay"


def _payments(elk, respell, drop=()):
    """PAY loaded by appends into one directory (no partitions), files of two values each, the enum
    [captured, failed, voided]; then rewritten in full, `respell` applied to each value and the rows
    of the values in `drop` removed."""
    cat = elk.cat
    elk.table(PAY, [("id", "bigint"), ("status", "string")], at=0)
    loads = [["captured", "voided"], ["failed", "voided"], ["captured", "failed"]]
    rows: dict[str, list] = {"id": [], "status": []}
    for day, kinds in enumerate(loads, 1):
        part = {"id": [10 * day + i for i in range(len(kinds))], "status": kinds}
        elk.append(PAY, part, at=day)
        for k in rows:
            rows[k] += part[k]
    sm.annotate(cat, PAY, {"grain": {"text": "one row per payment", "keys": ["id"]}}, author="a", time=elk.day(4))
    sm.annotate(cat, PAY, {"enum": ["captured", "failed", "voided"]}, column="status", author="a", time=elk.day(4.1))
    keep = [i for i, s in enumerate(rows["status"]) if s not in drop]
    elk.overwrite(PAY, {"id": [rows["id"][i] for i in keep],
                        "status": [respell.get(rows["status"][i], rows["status"][i]) for i in keep]}, at=6)
    return [f for f in sm.staleness(cat, PAY, now=elk.day(6), merge=False) if f.annotation == "column.2.enum"]


def test_a_value_respelled_in_a_rewrite_that_keeps_the_rows_gets_the_enum_at_metadata_depth(elk):
    """values_units (metadata): an appended table rewritten in full as one file, 'captured' respelled
    'CAPTURED', every row kept. 'failed' was the bound of two files and is no bound of the one file now,
    but it lies strictly inside the bounds recorded after ['CAPTURED', 'voided'], and the rewrite kept
    the row count: nothing shows it gone (the bound only moved past it). The enum's value_map carries
    the enum as written with the map applied (failed before: "values": None, as if 'failed' were an
    unmapped vanished value)."""
    found = _payments(elk, {"captured": "CAPTURED"})
    fix = next((x for f in found for x in f.fixes if x.action == "value_map"), None)
    assert fix == Fix(action="value_map", params={"column": "status", "map": {"captured": "CAPTURED"},
                                                  "values": ["CAPTURED", "failed", "voided"]}), found


def test_a_value_respelled_in_a_rewrite_that_removed_rows_lists_no_values_at_metadata_depth(elk):
    """Control of the test above: the same rewrite also removes the rows of 'failed' (fewer rows after):
    'failed' lies inside the bounds still, but rows went away; the statistics cannot say it is still
    there, so the value_map lists no values (the map alone is evidenced)."""
    found = _payments(elk, {"captured": "CAPTURED"}, drop=("failed",))
    fix = next((x for f in found for x in f.fixes if x.action == "value_map"), None)
    assert fix is not None and fix.params["map"] == {"captured": "CAPTURED"} and fix.params.get("values") is None, found


# ------------------------------------------------------------------ a filter naming a value merged into another
ORDERS = "acme.core.orders_m"


def test_a_filter_naming_a_status_merged_into_another_gets_no_map_while_the_enum_does(elk):
    """'cancelled' merged into 'delivered' by a restatement of an appended table: the enum takes
    `value_map {cancelled: delivered}`, but a metric "non-cancelled orders" filtering `<> 'cancelled'`
    does not: the map would make it `<> 'delivered'`, dropping every delivered order it counted, and no
    filter tells the cancelled rows apart now (`investigate`); a verified query naming the value is
    re-verified. Failed before (held-out cryptic 2801, wave 5, session 32): the metric rode in the
    enum's finding and accept-all wrote `<> 'delivered'`. Accept-all writes the enum, not the metric."""
    cat = elk.cat
    elk.table(ORDERS, [("d", "date"), ("id", "bigint"), ("status", "string")], partition_by=["d"], at=0)
    statuses = ["placed", "delivered", "cancelled", "delivered", "placed", "delivered"]
    rows: dict[str, list] = {"d": [], "id": [], "status": []}
    for day in range(1, 5):
        part = {"d": [f"2024-11-1{day}"] * 6, "id": [10 * day + i for i in range(6)], "status": statuses}
        elk.append(ORDERS, part, at=day)
        for k in rows:
            rows[k] += part[k]
    sm.annotate(cat, ORDERS, {"grain": {"text": "one row per order", "keys": ["id"]}}, author="a", time=elk.day(4.2))
    sm.annotate(cat, ORDERS, {"enum": ["placed", "delivered", "cancelled"]}, column="status", author="a",
                time=elk.day(4.3))
    sm.define_metric(cat, ORDERS, "live_orders", expression="count(*)", filter="status <> 'cancelled'",
                     description="non-cancelled orders", author="a", time=elk.day(4.4))
    merged = {**rows, "status": ["delivered" if s == "cancelled" else s for s in rows["status"]]}
    elk.overwrite(ORDERS, merged, at=5)
    found = sm.staleness(cat, ORDERS, depth="data", now=elk.day(5.5), merge=False)
    got = {k: f.fixes[0] if f.fixes else None for f in found if f.reason == "values_restated"
           for k in f.annotations or [f.annotation]}
    assert got["column.3.enum"] == Fix(action="value_map", params={
        "column": "status", "map": {"cancelled": "delivered"}, "values": ["delivered", "placed"]}), got
    assert got["metric.live_orders"] == Fix(action="investigate", params={"columns": ["status"]}), got
    sm.scan(cat, author="steward", now=elk.day(5.5), time=elk.day(5.6))
    sm.accept_all(cat, "steward", now=elk.day(5.5), time=elk.day(5.7))
    anns = {a.key: a.value for a in sm.read_annotations(cat, ORDERS)}
    assert anns["column.3.enum"] == ["delivered", "placed"] and anns["metric.live_orders"]["filter"] == \
        "status <> 'cancelled'", anns
