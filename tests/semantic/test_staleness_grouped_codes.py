"""values_units (issue 45): a coded column (its complete set of values declared by an enum) gains a value
beyond the range its statistics held when a verified query that groups by it was verified: the query
lists the codes, so its answer may now lack a group (or hold a new one). verified_query_changed, suspect,
re-verify; the data depth keeps it only when the answer moved."""

from __future__ import annotations

import semantic as sm
from semantic.models import Fix

DIM = "acme.core.dim_mode"
FCT = "acme.core.fct_ship"


def _lake(elk):
    cat = elk.cat
    elk.table(DIM, [("mode_id", "bigint"), ("mode_type", "string")], at=0,
              rows={"mode_id": [1, 2, 3], "mode_type": ["EXPRESS", "LIBRARY", "REGULAR"]})
    elk.table(FCT, [("ship_id", "bigint"), ("mode_id", "bigint"), ("paid", "bigint")], at=0,
              rows={"ship_id": [1, 2, 3, 4], "mode_id": [1, 2, 3, 1], "paid": [5, 6, 7, 8]})
    sm.annotate(cat, DIM, {"enum": ["EXPRESS", "LIBRARY", "REGULAR"]}, column="mode_type", author="a", time=elk.day(0.5))
    by_type = sm.verify_query(cat, "paid by mode type", "SELECT m.mode_type, SUM(s.paid) FROM acme.core.fct_ship s JOIN "
                              "acme.core.dim_mode m ON s.mode_id = m.mode_id GROUP BY m.mode_type ORDER BY m.mode_type",
                              author="a", time=elk.day(0.6))
    one = sm.verify_query(cat, "paid by express", "SELECT SUM(s.paid) FROM acme.core.fct_ship s JOIN acme.core.dim_mode m "
                          "ON s.mode_id = m.mode_id WHERE m.mode_type = 'EXPRESS'", author="a", time=elk.day(0.7))
    return cat, by_type, one


def _vq(cat, name, depth, now):
    return sorted((f.annotation, f.reason, f.status, tuple(f.fixes)) for f in
                  sm.staleness(cat, name, depth=depth, now=now, merge=False) if f.annotation and
                  f.annotation.startswith("verified_query"))


def test_a_code_beyond_the_old_range_falsifies_a_query_that_groups_by_it(elk):
    cat, _by_type, _one = _lake(elk)
    keys = {a.value["question"]: a.key for a in sm.read_annotations(cat, DIM) if a.kind == "verified_query"}
    elk.append(DIM, {"mode_id": [4], "mode_type": ["LIBRARY"]}, at=1)  # control: a known code again
    assert _vq(cat, DIM, "metadata", elk.day(1)) == []
    elk.append(DIM, {"mode_id": [5], "mode_type": ["ZZ_OTHER"]}, at=2)
    assert _vq(cat, DIM, "metadata", elk.day(2)) == [
        (keys["paid by mode type"], "verified_query_changed", "suspect", (Fix(action="reverify", params={}),))]
    # the data depth runs the query: no shipment uses the new mode, the answer is the one verified
    assert _vq(cat, DIM, "data", elk.day(2)) == []
    elk.append(FCT, {"ship_id": [9], "mode_id": [5], "paid": [3]}, at=3)
    assert [k for k, *_ in _vq(cat, DIM, "data", elk.day(3))] == [keys["paid by mode type"]]


def test_one_walker_lists_what_a_query_shows_or_lists(elk):
    """`grouped_columns` is the one walker over a verified query's SELECTs (it replaced a twin): by default
    the string columns selected or grouped by; with `listing`, the columns of any type grouped by or
    selected DISTINCT."""
    from semantic.history import Context
    from semantic.staleness.core import get_table
    from semantic.staleness.definitions_values import grouped_columns

    cat = elk.cat
    _lake(elk)
    sm.verify_query(cat, "modes and shipments", "SELECT DISTINCT mode_type, s.paid, ship_id FROM acme.core.fct_ship s "
                    "JOIN acme.core.dim_mode m ON s.mode_id = m.mode_id", author="a", time=elk.day(0.8))
    ctx, tables = Context(cat, cat.resolve(None)), {}
    fct = get_table(ctx, FCT, tables)
    assert fct is not None
    anns = {a.value["question"]: a for a in sm.read_annotations(cat, FCT) if a.kind == "verified_query"}

    def walk(q, **kw):
        return [(t.name, c) for t, c in grouped_columns(ctx, fct, anns[q], tables, **kw)]

    assert walk("paid by mode type") == [(DIM, "mode_type")]
    assert walk("paid by mode type", listing=True) == [(DIM, "mode_type")]
    assert walk("paid by express") == [] and walk("paid by express", listing=True) == []
    # selected: the string column only; DISTINCT: every column it selects, of any type
    assert walk("modes and shipments") == [(DIM, "mode_type")]
    assert walk("modes and shipments", listing=True) == [(DIM, "mode_type"), (FCT, "paid"), (FCT, "ship_id")]


def test_a_new_code_inside_the_old_range_falsifies_a_query_that_groups_by_it_at_data_depth(elk):
    """A dimension rebuilt (overwritten, as it always is) with some rows of 'LIBRARY' now 'LIBRARY_HOLD':
    a code the enum does not declare, inside the old [min, max] (the statistics cannot tell) and spelled
    like a code that still occurs (a split of the code, no respelling: grouped_values pairs a code gone
    with its new spelling). The data depth reads the codes: the query grouping by the column lists a group
    no one verified: verified_query_changed, suspect, re-verify (failed before: no finding at either
    depth). Controls: a rebuild with known codes only; the query comparing the column with a literal (it
    lists no set: its answer is judged by the answer check); the metadata depth (the bounds did not move)."""
    cat, _by_type, _one = _lake(elk)
    keys = {a.value["question"]: a.key for a in sm.read_annotations(cat, DIM) if a.kind == "verified_query"}
    elk.overwrite(DIM, {"mode_id": [1, 2, 3, 4], "mode_type": ["EXPRESS", "LIBRARY", "REGULAR", "LIBRARY"]}, at=1)
    assert _vq(cat, DIM, "data", elk.day(1)) == []
    elk.overwrite(DIM, {"mode_id": [1, 2, 3, 4], "mode_type": ["EXPRESS", "LIBRARY_HOLD", "REGULAR", "LIBRARY"]}, at=2)
    assert _vq(cat, DIM, "metadata", elk.day(2)) == []
    got = [f for f in sm.staleness(cat, DIM, depth="data", now=elk.day(2), merge=False)
           if f.annotation and f.annotation.startswith("verified_query")]
    assert [(f.annotation, f.reason, f.status, f.fixes) for f in got] == [
        (keys["paid by mode type"], "verified_query_changed", "suspect", [Fix(action="reverify", params={})])]
    assert got[0].evidence.values["new"] == ["LIBRARY_HOLD"] and "LIBRARY_HOLD" in got[0].message


def test_a_declared_code_merged_away_falsifies_a_query_that_groups_by_it(elk):
    """The mirror of a code gained: a dimension rebuilt (overwritten, as it always is) with the rows of
    'REGULAR' merged into 'EXPRESS'. The query grouping by the column lacks a group it listed when it was
    verified: verified_query_changed, suspect, re-verify, at both depths ('REGULAR', the old max, leaves
    the range: the statistics show it; the data shows the code holds no row). Controls: a rebuild with
    every code; the query comparing the column with a literal; a respelling ('REGULAR' -> 'REGULAR_X', the
    same rows: `grouped_values`' case, which names the pair) is no lost code (failed before: no finding on
    the merge at either depth)."""
    cat, _by_type, _one = _lake(elk)
    keys = {a.value["question"]: a.key for a in sm.read_annotations(cat, DIM) if a.kind == "verified_query"}
    sm.verify_query(cat, "modes", "SELECT mode_type, COUNT(*) AS n FROM acme.core.dim_mode GROUP BY mode_type "
                    "ORDER BY mode_type", author="a", time=elk.day(0.8))
    keys = {a.value["question"]: a.key for a in sm.read_annotations(cat, DIM) if a.kind == "verified_query"}
    elk.overwrite(DIM, {"mode_id": [1, 2, 3], "mode_type": ["EXPRESS", "LIBRARY", "REGULAR"]}, at=1)
    assert _vq(cat, DIM, "metadata", elk.day(1)) == [] and _vq(cat, DIM, "data", elk.day(1)) == []
    elk.overwrite(DIM, {"mode_id": [1, 2, 3], "mode_type": ["EXPRESS", "LIBRARY", "EXPRESS"]}, at=2)
    want = [(keys["modes"], "verified_query_changed", "suspect", (Fix(action="reverify", params={}),)),
            (keys["paid by mode type"], "verified_query_changed", "suspect", (Fix(action="reverify", params={}),))]
    assert _vq(cat, DIM, "metadata", elk.day(2)) == sorted(want)
    assert _vq(cat, DIM, "data", elk.day(2)) == sorted(want)
    got = [f for f in sm.staleness(cat, DIM, depth="metadata", now=elk.day(2), merge=False)
           if f.annotation == keys["modes"]]
    assert got[0].evidence.values["lost"] == ["REGULAR"] and "REGULAR" in got[0].message


def test_a_declared_code_gone_inside_the_range_is_read_from_the_data(elk):
    """'LIBRARY' (inside [EXPRESS, REGULAR]) merged into 'EXPRESS': the statistics do not move, the data
    shows the declared code holds no row (failed before)."""
    cat, _by_type, _one = _lake(elk)
    sm.verify_query(cat, "modes", "SELECT mode_type, COUNT(*) AS n FROM acme.core.dim_mode GROUP BY mode_type "
                    "ORDER BY mode_type", author="a", time=elk.day(0.8))
    keys = {a.value["question"]: a.key for a in sm.read_annotations(cat, DIM) if a.kind == "verified_query"}
    elk.overwrite(DIM, {"mode_id": [1, 2, 3], "mode_type": ["EXPRESS", "EXPRESS", "REGULAR"]}, at=2)
    assert _vq(cat, DIM, "metadata", elk.day(2)) == []
    got = [f for f in sm.staleness(cat, DIM, depth="data", now=elk.day(2), merge=False)
           if f.annotation == keys["modes"]]
    assert [(f.reason, f.status) for f in got] == [("verified_query_changed", "suspect")]
    assert got[0].evidence.values.get("lost") == ["LIBRARY"] and "LIBRARY" in got[0].message


def test_a_respelled_code_is_no_lost_code(elk):
    """'LIBRARY' respelled 'LIBRARYX' on the same rows: `grouped_values`' finding (it names the pair), not
    a lost code nor a new one."""
    cat, _by_type, _one = _lake(elk)
    sm.verify_query(cat, "modes", "SELECT mode_type, COUNT(*) AS n FROM acme.core.dim_mode GROUP BY mode_type "
                    "ORDER BY mode_type", author="a", time=elk.day(0.8))
    keys = {a.value["question"]: a.key for a in sm.read_annotations(cat, DIM) if a.kind == "verified_query"}
    elk.overwrite(DIM, {"mode_id": [1, 2, 3], "mode_type": ["EXPRESS", "LIBRARYX", "REGULAR"]}, at=2)
    got = [f for f in sm.staleness(cat, DIM, depth="data", now=elk.day(2), merge=False)
           if f.annotation == keys["modes"]]
    assert [f.reason for f in got] == ["verified_query_changed"]
    assert "lost" not in got[0].evidence.values and "new" not in got[0].evidence.values
