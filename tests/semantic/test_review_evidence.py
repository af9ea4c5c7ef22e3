"""A review loop that never certifies what the data contradicts (issue 45 items 3 and 4), on small
catalogs built in each test: the data-depth pass stored per vid and its findings in the inbox
(`sm.scan`, `review_items`, `review_item`, accept), accept refused for a finding without a fix the
evidence supports, edits validated where the claim is checkable (grain, enum, unit, relationship,
successor), bulk accept never including no-fix items, and accepting everything the inbox offers
writing nothing false."""

from __future__ import annotations

import pytest

import catalog_core as cc
import semantic as sm
from eval.fixtures.lakes import LakeBuilder
from semantic.annotations import read_annotations
from semantic.errors import VerifiedQueryError
from semantic.models import Fix

T = "acme.core.orders"
D = "acme.core.stores"


def orders(lk: LakeBuilder) -> None:
    lk.table(T, [("order_id", "bigint"), ("status", "string"), ("store_id", "bigint"), ("amount_cents", "bigint")],
             at=0, rows={"order_id": [1, 2, 3, 4], "status": ["placed", "shipped", "placed", "returned"],
                         "store_id": [1, 2, 1, 2], "amount_cents": [1000, 2500, 400, 1200]})


def by_key(cat, table=T):
    return {a.key: a for a in read_annotations(cat, table)}


def items(cat, now, table=T, **kw):
    return sm.review_items(cat, table, now=now, limit=500, **kw).items


def one(cat, reason, now, table=T):
    got = [i for i in items(cat, now, table) if i.reason == reason]
    assert len(got) == 1, [(i.reason, i.annotation) for i in items(cat, now, table)]
    return got[0]


# ------------------------------------------------------------------ data-depth findings in the inbox
def test_data_depth_findings_are_review_items_stored_per_vid(cat, lk):
    orders(lk)
    sm.annotate(cat, T, {"enum": ["placed", "returned", "shipped"]}, column="status", author="ann", time=lk.day(1))
    # a new value that sorts inside the old min/max: the file statistics cannot see it, the data can
    lk.append(T, {"order_id": [5], "status": ["processing"], "store_id": [1], "amount_cents": [900]}, at=2)
    now = lk.day(2)
    assert not [i for i in items(cat, now) if i.reason == "enum_violated"]  # metadata depth alone misses it
    scanned = cat.resolve(None)
    res = sm.scan(cat, author="steward", now=now, time=lk.at(2.5))
    assert res.vid == scanned and res.written_vid == scanned + 1 and res.findings == 1 and res.tables == 1
    rec = by_key(cat)["review.scan"]
    assert rec.value["at_vid"] == scanned and rec.vid == res.written_vid and rec.provenance.source == "inferred"
    it = one(cat, "enum_violated", now)
    assert it.depth == "data" and it.scan_vid == scanned and not it.outdated
    assert it.acceptable and it.proposed == ["placed", "returned", "shipped", "processing"]
    assert sm.review_item(cat, it.id, now=now).id == it.id  # was NotFound for data-depth findings
    [f] = [f for f in sm.scanned_findings(cat) if f.reason == "enum_violated"]
    assert f.evidence.values["scan_vid"] == scanned and "outdated_by" not in f.evidence.values
    vid = sm.accept(cat, it, author="ann", now=now, time=lk.day(3))
    enum = by_key(cat)["column.2.enum"]
    assert enum.vid == vid and sorted(enum.value) == ["placed", "processing", "returned", "shipped"]
    assert not [i for i in items(cat, lk.day(3)) if i.reason == "enum_violated"]  # decided: gone from the stored pass
    assert not sm.scanned_findings(cat)


def test_a_stored_finding_is_outdated_once_the_table_changes(ecat, elk):
    orders(elk)
    sm.annotate(ecat, T, {"enum": ["placed", "returned", "shipped"]}, column="status", author="ann", time=elk.day(1))
    elk.append(T, {"order_id": [5], "status": ["processing"], "store_id": [1], "amount_cents": [900]}, at=2)
    sm.scan(ecat, author="steward", now=elk.day(2), time=elk.at(2.5))
    moved = elk.append(T, {"order_id": [6], "status": ["placed"], "store_id": [2], "amount_cents": [100]}, at=3)
    it = one(ecat, "enum_violated", elk.day(3))
    assert it.depth == "data" and it.outdated and not it.acceptable and it.refused == "outdated"
    assert "scan again" in (it.why_not or "")
    before = ecat.resolve(None)
    with pytest.raises(sm.ReviewRefusedError, match="changed since; scan again"):
        sm.accept(ecat, it.id, author="ann", now=elk.day(3))
    assert ecat.resolve(None) == before
    [f] = sm.scanned_findings(ecat)
    assert f.evidence.values["outdated_by"] == moved
    sm.scan(ecat, author="steward", now=elk.day(3), time=elk.at(3.5))  # a new pass: current again
    again = one(ecat, "enum_violated", elk.day(3))
    assert again.id == it.id and not again.outdated and again.acceptable and again.scan_vid == moved


def test_a_scheduled_scan_reads_only_what_changed_since_the_last_pass(ecat, elk):
    orders(elk)
    elk.table(D, [("store_id", "bigint"), ("region", "string")], at=0.5,
              rows={"store_id": [1, 2], "region": ["north", "south"]})
    sm.annotate(ecat, T, {"enum": ["placed", "returned", "shipped"]}, column="status", author="ann", time=elk.at(1))
    sm.annotate(ecat, D, {"description": "stores"}, author="ann", time=elk.at(1))
    first = sm.scan(ecat, author="cron", changed_only=True, now=elk.day(1), time=elk.at(1.1))
    assert first.tables == 2 and first.written_vid is not None  # no pass yet: both
    idle = sm.scan(ecat, author="cron", changed_only=True, now=elk.day(1), time=elk.at(1.2))
    assert idle.tables == 0 and idle.written_vid is None and ecat.resolve(None) == first.written_vid
    elk.append(T, {"order_id": [5], "status": ["processing"], "store_id": [1], "amount_cents": [9]}, at=2)
    one_ = sm.scan(ecat, author="cron", changed_only=True, now=elk.day(2), time=elk.at(2.1))
    assert one_.tables == 1 and one_.findings == 1  # orders only; its new status is found
    assert by_key(ecat, D)["review.scan"].value["at_vid"] == first.vid  # stores' record untouched
    assert [i.reason for i in items(ecat, elk.day(2)) if i.depth == "data"] == ["enum_violated"]
    sm.annotate(ecat, D, {"enum": ["north", "south"]}, column="region", author="ann", time=elk.at(3))
    again = sm.scan(ecat, author="cron", changed_only=True, now=elk.day(3), time=elk.at(3.1))
    assert again.tables == 1 and by_key(ecat, D)["review.scan"].value["at_vid"] == again.vid


def test_scan_refuses_metadata_depth_and_unknown_tables(ecat, elk):
    orders(elk)
    with pytest.raises(cc.errors.InvalidValueError, match="computed on every read"):
        sm.scan(ecat, author="x", depth="metadata")
    with pytest.raises(cc.errors.NotFoundError):
        sm.scan(ecat, "acme.core.nope", author="x")


# ------------------------------------------------------------------ accept only a fix the evidence supports
def test_a_finding_without_a_fix_cannot_be_accepted_as_is(ecat, elk):
    orders(elk)
    sm.annotate(ecat, T, {"grain": {"text": "one row per order", "keys": ["order_id"]},
                          "description": "one row per order"}, author="ann", time=elk.day(1))
    elk.append(T, {"order_id": [4], "status": ["placed"], "store_id": [1], "amount_cents": [5]}, at=2)  # a repeat
    it = one(ecat, "grain_violated", elk.day(2))
    assert not it.acceptable and it.refused == "no_fix" and it.proposed is None
    before = ecat.resolve(None)
    with pytest.raises(sm.NoFixError, match="no fix the evidence supports.*edit.*dismiss"):
        sm.accept(ecat, it.id, author="ann", now=elk.day(2))
    assert ecat.resolve(None) == before and by_key(ecat)["table.grain"].vid < before
    with pytest.raises(cc.errors.InvalidValueError, match="reason must say why"):
        sm.dismiss(ecat, it, author="ann", reason="")
    sm.dismiss(ecat, it, author="ann", reason="a late correction row; the load is fixed upstream", time=elk.day(3))
    assert not [i for i in items(ecat, elk.day(3)) if i.reason == "grain_violated"]


# ------------------------------------------------------------------ edits validated where checkable
def test_an_edit_is_validated_against_the_data(ecat, elk):
    orders(elk)
    elk.table(D, [("store_id", "bigint"), ("region", "string")], at=0.5,
              rows={"store_id": [1, 2, 2], "region": ["north", "south", "south-east"]})
    sm.annotate(ecat, T, {"grain": {"text": "one row per order", "keys": ["order_id"]}}, author="ann",
                time=elk.day(1))
    sm.annotate(ecat, T, {"enum": ["placed", "returned", "shipped"]}, column="status", author="ann",
                time=elk.at(1))
    # restated: a duplicate order, a new status, a nullable column, amounts now in dollars
    elk.evolve(T, add=[("snapshot_date", "string")], at=2,
               rows={"order_id": [1, 2, 3, 4, 4], "status": ["placed", "shipped", "placed", "returned", "pending"],
                     "store_id": [1, 2, 1, 2, 2], "amount_cents": [10, 25, 4, 12, 12],
                     "snapshot_date": [None, None, None, None, "d2"]})
    now = elk.day(2)
    sm.scan(ecat, author="steward", now=now, time=elk.at(2.5))
    grain = next(i for i in items(ecat, now) if i.annotation == "table.grain")
    before = ecat.resolve(None)
    for false, why in (({"text": "one row per order", "keys": ["order_id"]}, "repeat"),
                       (["order_id", "snapshot_date"], "never null"),  # a new nullable column in the keys
                       (["order_id", "nope"], "not a column")):
        with pytest.raises(cc.errors.InvalidValueError, match=why):
            sm.edit_and_accept(ecat, grain, author="bob", value=false)
    assert ecat.resolve(None) == before
    sm.edit_and_accept(ecat, grain, author="bob", value={"text": "one row per order and status",
                                                         "keys": ["order_id", "status"]}, time=elk.day(3))
    assert by_key(ecat)["table.grain"].value["keys"] == ["order_id", "status"]

    enum = one(ecat, "enum_violated", elk.day(3))
    with pytest.raises(sm.ReviewRefusedError, match=r"also holds \['pending'\]"):
        sm.edit_and_accept(ecat, enum, author="bob", value=["placed", "returned", "shipped"])
    with pytest.raises(sm.ReviewRefusedError, match=r"\['cancelled'\] no longer occur"):
        sm.edit_and_accept(ecat, enum, author="bob", value=["cancelled", "pending", "placed", "returned", "shipped"])
    sm.edit_and_accept(ecat, enum, author="bob", value=["pending", "placed", "returned", "shipped"], time=elk.day(4))
    assert sorted(by_key(ecat)["column.2.enum"].value) == ["pending", "placed", "returned", "shipped"]


def test_an_edited_relationship_or_successor_is_checked(ecat, elk):
    orders(elk)
    elk.table(D, [("store_id", "bigint"), ("region", "string")], at=0.5,
              rows={"store_id": [1, 2, 2], "region": ["north", "south", "south-east"]})
    sm.annotate(ecat, T, {"description": "orders, loaded daily", "freshness_sla": "P1D"}, author="ann",
                time=elk.day(1))
    elk.append(T, {"order_id": [5], "status": ["placed"], "store_id": [1], "amount_cents": [1]}, at=1.5)
    elk.append(D, {"store_id": [3], "region": ["west"]}, at=2)  # stores loads on; orders stopped at day 1.5
    before = ecat.resolve(None)
    # a table that stopped loading has no successor unless one took over: stores is no replacement
    from semantic.review import _Write, validate_write

    tobj = ecat.get("/acme/core/orders")
    for succ, why in ((D, "same rows"), (T, "cannot replace itself"), ("acme.core.gone", "does not exist")):
        w = _Write(kind="table", key="table.deprecated", value={"reason": "r", "replaced_by": succ, "since": None})
        with pytest.raises(sm.ReviewRefusedError, match=why):
            validate_write(ecat, T, tobj.value, w, before)
    # a replacement written beside it, created and loaded after it: accepted
    v2 = "acme.core.orders_v2"
    elk.table(v2, [("order_id", "bigint"), ("status", "string"), ("store_id", "bigint"), ("amount_cents", "bigint")],
              at=2.5, rows={"order_id": [6], "status": ["placed"], "store_id": [1], "amount_cents": [3]})
    w = _Write(kind="table", key="table.deprecated", value={"reason": "r", "replaced_by": v2, "since": None})
    validate_write(ecat, T, tobj.value, w, ecat.resolve(None))
    before = ecat.resolve(None)
    # a many-to-one join into a key that repeats is refused; into a unique one it runs
    bad = _Write(kind="relationship", key="relationship.store",
                 value={"to": D, "on": [["store_id", "store_id"]], "cardinality": "many_to_one"})
    with pytest.raises(sm.ReviewRefusedError, match="repeat in acme.core.stores"):
        validate_write(ecat, T, tobj.value, bad, before)
    ok = bad.model_copy(update={"value": {**bad.value, "cardinality": "many_to_many"}})
    validate_write(ecat, T, tobj.value, ok, before)
    assert ecat.resolve(None) == before


def test_an_edited_unit_the_data_contradicts_is_refused(ecat, elk):
    orders(elk)
    sm.annotate(ecat, T, {"unit": "cents", "role": "measure"}, column="amount_cents", author="ann", time=elk.day(1))
    elk.overwrite(T, {"order_id": [1, 2, 3, 4], "status": ["placed", "shipped", "placed", "returned"],
                      "store_id": [1, 2, 1, 2], "amount_cents": [10, 25, 4, 12]}, at=2)  # now dollars, in place
    it = one(ecat, "unit_drift", elk.day(2))
    assert any(f.params.get("scale") == -2 for f in it.fixes), it.fixes
    before = ecat.resolve(None)
    with pytest.raises(sm.ReviewRefusedError, match="moved by 10\\^-2"):
        sm.edit_and_accept(ecat, it, author="bob", value="cents")
    assert ecat.resolve(None) == before
    sm.edit_and_accept(ecat, it, author="bob", value="usd", time=elk.day(3))
    assert by_key(ecat)["column.4.unit"].value == "usd"


# ------------------------------------------------------------------ bulk accept
def test_bulk_accept_never_includes_a_finding_without_a_fix(ecat, elk):
    orders(elk)
    sm.annotate(ecat, T, {"description": "orders by `status`", "grain": {"text": "one row per order", "keys": ["order_id"]}},
                author="ann", time=elk.day(1))
    # a metric naming the column (a renamed column's own annotations follow its field id: not made false)
    sm.define_metric(ecat, T, "statuses", expression="count(DISTINCT status)", author="ann", time=elk.day(1))
    elk.evolve(T, rename={"status": "state"}, add=[("note", "string")], at=2)  # a rename, a new nullable column
    now = elk.day(2)
    desc = next(i for i in items(ecat, now) if i.annotation == "table.description")
    grain = next(i for i in items(ecat, now) if i.annotation == "table.grain")
    # the grain: no fix on this evidence, or a fix with the nullable column that validation refuses
    assert desc.refused == "no_fix" and grain.refused in ("no_fix", "grain_null") and desc.group == grain.group
    want = {"no_fix": 2} if grain.refused == "no_fix" else {"no_fix": 1, "grain_null": 1}
    # by group (the /ui's and `semcat review accept --group`'s bulk accept): both left open, counted by why
    res = sm.decide_group(ecat, desc.group, "accept", "ann", now=now)
    assert not res["decided"] and res["skipped_by"] == want
    # everything the inbox offers (`semcat review accept --all`): the rename only
    res = sm.accept_all(ecat, "ann", now=now, time=elk.day(3))
    assert len(res["decided"]) == 1
    assert res["skipped_by"] == want
    anns = by_key(ecat)
    assert anns["table.description"].vid < res["decided"][0]["vid"]  # not re-certified
    assert anns["table.grain"].value["keys"] == ["order_id"]
    assert {i.id for i in items(ecat, elk.day(3))} == {desc.id, grain.id}  # left open: edit or dismiss them


# ------------------------------------------------------------------ accepting everything writes nothing false
def test_accepting_everything_the_inbox_offers_writes_nothing_false(ecat, elk):
    lk, cat = elk, ecat
    orders(lk)
    lk.table(D, [("store_id", "bigint"), ("region", "string")], at=0.2,
             rows={"store_id": [1, 2], "region": ["north", "south"]})
    legacy = "acme.core.orders_legacy"
    lk.table(legacy, [("order_id", "bigint"), ("amount", "double")], at=0.3,
             rows={"order_id": [1, 2], "amount": [10.0, 25.0]})
    sm.annotate(cat, T, {"grain": {"text": "one row per order", "keys": ["order_id"]},
                         "description": "One row per order; status is placed, shipped or returned.",
                         "freshness_sla": "P1D"}, author="ann", time=lk.at(0.5))
    sm.annotate(cat, T, {"enum": ["placed", "returned", "shipped"], "description": "placed, shipped or returned"},
                column="status", author="ann", time=lk.at(0.5))
    sm.annotate(cat, T, {"unit": "cents"}, column="amount_cents", author="ann", time=lk.at(0.5))
    sm.relate(cat, T, D, on=[("store_id", "store_id")], cardinality="many_to_one", author="ann", time=lk.at(0.5))
    sm.annotate(cat, legacy, {"description": "the old order feed, loaded daily", "freshness_sla": "P1D",
                              "grain": {"text": "one row per order", "keys": ["order_id"]}},
                author="ann", time=lk.at(0.5))
    for day in range(1, 6):
        lk.append(T, {"order_id": [10 + day], "status": ["placed"], "store_id": [1], "amount_cents": [700 + day]},
                  at=day)
        lk.append(D, {"store_id": [10 + day], "region": ["east"]}, at=day + 0.1)
        if day < 3:  # the legacy feed simply stops loading on day 3
            lk.append(legacy, {"order_id": [10 + day], "amount": [7.0 + day]}, at=day + 0.2)
    # realistic changes: a status the description does not name (sorting inside the old range), a repeat
    # of an order by periodic snapshots with a new nullable column, amounts restated in dollars
    lk.append(T, {"order_id": [20], "status": ["pending"], "store_id": [2], "amount_cents": [9]}, at=6)
    lk.evolve(T, add=[("snapshot_date", "string")], at=7)
    lk.append(T, {"order_id": [20], "status": ["placed"], "store_id": [2], "amount_cents": [9],
                  "snapshot_date": ["d7"]}, at=7.5)
    now = lk.day(8)
    before = {t: by_key(cat, t) for t in (T, D, legacy)}
    sm.scan(cat, author="steward", now=now, time=lk.at(8.5))
    offered = [i for i in items(cat, now, None) if i.kind == "finding"]
    assert any(i.depth == "data" for i in offered)
    res = sm.accept_all(cat, "steward", now=now, time=lk.day(9))
    assert res["skipped_by"].get("no_fix"), res  # the descriptions and SLAs the data contradicts stay open
    written = {int(d["vid"]) for d in res["decided"]}
    for table in (T, D, legacy):
        for key, a in by_key(cat, table).items():
            if a.vid not in written or a.kind == "review":
                continue
            # every annotation an accept wrote is checked against the data at the latest vid
            from semantic.review import _Write, validate_write

            tobj = cat.get(cc.lake.table_path(table))
            w = _Write(kind=a.kind, key=a.key, value=a.value, column=a.column)
            validate_write(cat, table, tobj.value, w, cat.resolve(None))
            if a.kind == "table" and a.field == "grain":
                cols = {c["name"]: c for c in tobj.value["schema"]["columns"]}
                assert "snapshot_date" not in a.value["keys"], a.value
                assert all(k in cols for k in a.value["keys"])
            if a.field in ("description", "freshness_sla"):  # text the data contradicts is never re-certified
                assert key not in before[table] or before[table][key].value != a.value, (table, key)
            if a.field == "deprecated":
                pytest.fail(f"{table} was deprecated by bulk accept: {a.value}")
    # the contradicted descriptions are still open, to edit or dismiss
    open_now = {(i.table, i.annotation) for i in items(cat, lk.day(9), None)}
    assert (T, "table.description") in open_now


# ------------------------------------------------------------------ bulk accept at one backdated time
def test_bulk_accept_backdated_to_one_time_decides_every_item(cat, lk):
    """`accept_all(time=T)` decides each item in its own commit; commit times never go backwards and
    the engine takes one backdated instant at most twice (T, then T + 1 us), so every decision after
    the first takes the later of T and the latest commit's time (was: the third item onward refused
    with "commit times never go backwards", found by the stale+reviewed steward of issue 49)."""
    tables = [f"acme.core.t{i}" for i in range(4)]
    for i, t in enumerate(tables):
        lk.table(t, [("id", "bigint"), ("status", "string")], at=0.1 * i,
                 rows={"id": [1, 2], "status": ["placed", "shipped"]})
    for i, t in enumerate(tables):
        sm.annotate(cat, t, {"enum": ["placed", "shipped"]}, column="status", author="ann", time=lk.at(1 + 0.01 * i))
    for i, t in enumerate(tables):
        lk.append(t, {"id": [3], "status": ["processing"]}, at=2 + 0.01 * i)
    sm.scan(cat, author="steward", now=lk.day(2), time=lk.at(2.5))
    res = sm.accept_all(cat, "steward", now=lk.day(2), time=lk.day(3))
    assert len(res["decided"]) == len(tables), res["skipped"]
    assert not res["skipped"]
    times = [c.time for c in cat.commits(since=res["decided"][0]["vid"])]
    assert times == sorted(times) and times[0] == lk.day(3)


# ------------------------------------------------------------------ a coded column's new code needs its meaning
def test_a_coded_enums_new_code_is_not_accepted_without_its_meaning(ecat, elk):
    """A coded column (its `labels` say what each code means) gains a code: accept would add it to
    the enum silently (was: acceptable, the enum took '90' and no one said what it means), so the item
    is refused with `needs_meaning`, bulk accept leaves it open, an edit that gives the meaning writes
    the enum and the labels together (validated against the data), and an edit without it is refused.
    A plain enum's new value is still accepted."""
    cat, lk = ecat, elk
    lk.table(T, [("order_id", "bigint"), ("status_code", "string"), ("status", "string")], at=0,
             rows={"order_id": [1, 2, 3], "status_code": ["10", "20", "10"], "status": ["placed", "shipped", "placed"]})
    sm.annotate(cat, T, {"enum": ["10", "20"], "labels": {"10": "placed", "20": "fulfilled"}}, column="status_code",
                author="ann", time=lk.day(1))
    sm.annotate(cat, T, {"enum": ["placed", "shipped"]}, column="status", author="ann", time=lk.day(1))
    lk.append(T, {"order_id": [4], "status_code": ["90"], "status": ["zz_held"]}, at=2)  # beyond both max values
    now = lk.day(2)
    coded = next(i for i in items(cat, now) if i.annotation == "column.2.enum")
    plain = next(i for i in items(cat, now) if i.annotation == "column.3.enum")
    assert coded.reason == "enum_violated" and not coded.acceptable and coded.refused == "needs_meaning"
    assert "'90'" in coded.why_not and "meaning" in coded.why_not
    assert plain.acceptable and plain.proposed == ["placed", "shipped", "zz_held"]
    with pytest.raises(sm.ReviewRefusedError, match="needs_meaning|meaning") as e:
        sm.accept(cat, coded, author="bob", now=now)
    assert e.value.details["why"] == "needs_meaning"
    res = sm.accept_all(cat, "bob", now=now, time=lk.day(3))
    assert [d["item"] for d in res["decided"]] == [plain.id] and res["skipped_by"] == {"needs_meaning": 1}
    assert by_key(cat)["column.2.enum"].value == ["10", "20"]  # the code was not added silently
    coded = next(i for i in items(cat, lk.day(3)) if i.annotation == "column.2.enum")
    before = cat.resolve(None)
    for bad in (["10", "20", "90"], {"90": " "}, {"91": "typo"}):  # the enum alone, an empty meaning, another code
        with pytest.raises(sm.ReviewRefusedError) as e:
            sm.edit_and_accept(cat, coded, author="bob", value=bad, now=lk.day(3))
        assert e.value.details["why"] == "needs_meaning", bad
    assert cat.resolve(None) == before
    vid = sm.edit_and_accept(cat, coded, author="bob", value={"90": "cancelled (not revenue)"}, now=lk.day(3),
                             time=lk.day(4))
    anns = by_key(cat)
    assert anns["column.2.enum"].value == ["10", "20", "90"] and anns["column.2.enum"].vid == vid
    assert anns["column.2.labels"].value == {"10": "placed", "20": "fulfilled", "90": "cancelled (not revenue)"}
    assert anns["column.2.labels"].provenance.author == "bob" and anns["column.2.labels"].vid == vid
    assert not [i for i in items(cat, lk.day(4)) if i.annotation == "column.2.enum"]


# ------------------------------------------------------------------ a coded column's merged code
def test_a_merged_code_maps_the_labels_and_the_enum_and_accept_keeps_the_kept_codes_meaning(ecat, elk):
    """values_units, data: a coded column's code folded into another ('c' rows now hold 'b'): the enum
    and the `labels` (code -> meaning) both get value_map {c: b} (the enum with the values it holds
    now), from the same evidence, the rows that held 'c' found holding 'b' (failed before: the labels
    got a suspect finding with no fix). Accepting the labels' fix drops the merged code and keeps the
    meaning of the code that took its rows (not the merged code's meaning under the kept code)."""
    cat, lk = ecat, elk
    lk.table(D, [("id", "bigint"), ("kind", "string")], at=0)
    lk.overwrite(D, {"id": [1, 2, 3], "kind": ["a", "c", "b"]}, at=1)
    labels = {"a": "walk-in", "c": "phone order", "b": "web order"}
    sm.annotate(cat, D, {"enum": ["a", "b", "c"], "labels": labels}, column="kind", author="ann", time=lk.day(1.5))
    lk.overwrite(D, {"id": [1, 2, 3], "kind": ["a", "b", "b"]}, at=3)
    f = {x.annotation: x for x in sm.staleness(cat, D, depth="data", now=lk.day(3), merge=False)}
    assert f["column.2.enum"].fixes == [Fix(action="value_map", params={"column": "kind", "map": {"c": "b"},
                                                                            "values": ["a", "b"]})]
    assert f["column.2.labels"].reason == "enum_violated" and f["column.2.labels"].status == "stale"
    assert f["column.2.labels"].fixes == [Fix(action="value_map", params={"column": "kind", "map": {"c": "b"}})]
    sm.scan(cat, author="steward", now=lk.day(3), time=lk.at(3.5))
    it = next(i for i in items(cat, lk.day(3), table=D) if i.annotation == "column.2.labels")
    assert it.acceptable and it.proposed == {"a": "walk-in", "b": "web order"}
    sm.accept(cat, it, author="bob", now=lk.day(3), time=lk.day(4))
    assert by_key(cat, D)["column.2.labels"].value == {"a": "walk-in", "b": "web order"}


def test_a_data_finding_that_refines_the_metadata_one_is_what_the_inbox_offers(ecat, elk):
    """The same claim, the same reason at both depths: the statistics suspect the enum (code 'c' left the
    column's range: enum_violated, suspect, no fix), the rows show the merge (enum_violated, stale,
    value_map). The inbox offers the stored data-depth finding, acceptable with its fix, while the table
    is unchanged since the pass, and the metadata suspicion again once it changed (failed before: the scan
    stored no data finding whose item id the metadata depth also raised, so the inbox offered the
    suspicion, with nothing to accept)."""
    cat, lk = ecat, elk
    lk.table(D, [("id", "bigint"), ("kind", "string")], at=0)
    lk.overwrite(D, {"id": [1, 2, 3], "kind": ["a", "c", "b"]}, at=1)
    sm.annotate(cat, D, {"enum": ["a", "b", "c"]}, column="kind", author="ann", time=lk.day(1.5))
    lk.overwrite(D, {"id": [1, 2, 3], "kind": ["a", "b", "b"]}, at=3)
    meta = [x for x in sm.staleness(cat, D, now=lk.day(3), merge=False) if x.annotation == "column.2.enum"]
    assert [(x.reason, x.status, x.fixes) for x in meta] == [("enum_violated", "suspect", [])]
    res = sm.scan(cat, author="steward", now=lk.day(3), time=lk.at(3.5))
    assert res.findings == 1
    it = next(i for i in items(cat, lk.day(3), table=D) if i.annotation == "column.2.enum")
    assert (it.status, it.depth, it.acceptable) == ("stale", "data", True)
    assert [x.action for x in it.fixes] == ["value_map"] and it.proposed == ["a", "b"]
    assert sm.review_item(cat, it.id, now=lk.day(3)).fixes == it.fixes
    lk.append(D, {"id": [4], "kind": ["a"]}, at=4)  # the table changed after the pass: computed again
    it = next(i for i in items(cat, lk.day(4), table=D) if i.annotation == "column.2.enum")
    assert (it.status, it.depth) == ("suspect", "metadata")


def test_accept_decides_the_finding_the_item_shows_when_both_depths_raise_it(ecat, elk):
    """A metadata finding and the data pass's finding on one claim share an id (the annotation and the
    reason name it, not the depth). The item shows the data pass's (`value_map`); accepting it by id
    writes that fix, and an edit is checked against it (failed before: accept looked the id up among the
    metadata findings first, found the suspicion with no fix, and refused what `review show` had said
    accept would write: an independent tester's TPC-DS copy, a metric filtering a respelled value)."""
    cat, lk = ecat, elk
    lk.table(D, [("id", "bigint"), ("kind", "string")], at=0)
    lk.overwrite(D, {"id": [1, 2, 3], "kind": ["a", "c", "b"]}, at=1)
    sm.annotate(cat, D, {"enum": ["a", "b", "c"]}, column="kind", author="ann", time=lk.day(1.5))
    lk.overwrite(D, {"id": [1, 2, 3], "kind": ["a", "b", "b"]}, at=3)
    sm.scan(cat, author="steward", now=lk.day(3), time=lk.at(3.5))
    it = next(i for i in items(cat, lk.day(3), table=D) if i.annotation == "column.2.enum")
    assert (it.depth, it.acceptable, it.proposed) == ("data", True, ["a", "b"])
    shown = sm.review_item(cat, it.id, now=lk.day(3))
    assert shown.proposed == ["a", "b"]
    sm.accept(cat, it.id, author="bob", now=lk.day(3), time=lk.day(4))
    assert by_key(cat, D)["column.2.enum"].value == ["a", "b"]


# ------------------------------------------------------------------ a verified query that no longer runs
def test_a_query_reading_a_dropped_column_asks_to_reverify_and_accept_cannot_certify_it(ecat, elk):
    """A verified query whose column was dropped (no column continues it) offers `reverify` at both
    depths, also when merged with the column's own claims of the same drop (failed before: no fix);
    the review still refuses to accept it as is, and `verify_query` refuses the old SQL, which no
    longer runs: offering `reverify` cannot certify a broken query. A query a column rename broke keeps
    its `rename` alone (no `reverify` beside it for the other claims of the rename)."""
    orders(elk)
    sql = "SELECT status, sum(amount_cents) AS s FROM acme.core.orders GROUP BY status ORDER BY status"
    sm.verify_query(ecat, "spend per status", sql, author="ann", time=elk.day(0.5))
    sm.annotate(ecat, T, {"description": "order amount", "unit": "cents"}, column="amount_cents", author="ann",
                time=elk.day(0.6))
    elk.evolve(T, drop=["amount_cents"], at=1)
    for depth in ("metadata", "data"):
        for merge in (False, True):
            found = [f for f in sm.staleness(ecat, T, depth=depth, now=elk.day(1), merge=merge)
                     if any(k.startswith("verified_query.") for k in f.annotations or [f.annotation or ""])]
            fixes = [[x.action for x in f.fixes] for f in found]
            assert ["reverify"] in fixes and all(x in (["reverify"], []) for x in fixes), (depth, merge, found)
            assert merge is False or fixes == [["reverify"]], (depth, found)
            if merge:  # the column's own claims of the same drop are listed apart, without the query's repair
                cols = [f for f in sm.staleness(ecat, T, depth=depth, now=elk.day(1))
                        if "column.4.unit" in (f.annotations or [f.annotation])]
                assert cols and all(f.fixes == [Fix(action="remove", params={"column": "amount_cents"})]
                                    for f in cols)
    it = next(i for i in items(ecat, elk.day(1)) if (i.annotation or "").startswith("verified_query."))
    assert not it.acceptable and it.refused == "no_fix"
    before = ecat.resolve(None)
    with pytest.raises(sm.NoFixError, match="re-verified: edit it with the corrected SQL"):
        sm.accept(ecat, it.id, author="ann", now=elk.day(1))
    with pytest.raises(VerifiedQueryError):
        sm.verify_query(ecat, "spend per status", sql, author="ann", time=elk.day(1.5))
    assert ecat.resolve(None) == before
    # a rename: the query's repair is the rename, listed alone for every claim of that cause
    sm.define_metric(ecat, T, "placed_orders", expression="count(*)", filter="status = 'placed'", author="ann",
                     time=elk.day(1.6))
    sm.verify_query(ecat, "orders per status", "SELECT status, count(*) AS n FROM acme.core.orders GROUP BY status "
                    "ORDER BY status", author="ann", time=elk.day(1.7))
    elk.evolve(T, rename={"status": "order_status"}, at=2)
    for depth in ("metadata", "data"):
        renamed = [f for f in sm.staleness(ecat, T, depth=depth, now=elk.day(2))
                   if "metric.placed_orders" in (f.annotations or [f.annotation])]
        assert renamed and all([x.action for x in f.fixes] == ["rename"] for f in renamed), (depth, renamed)


# ------------------------------------------------------------------ a fix that would change nothing
def test_a_fix_that_leaves_the_annotation_unchanged_is_no_fix_and_accept_refuses_it(ecat, elk):
    """The review loop never re-certifies an annotation as if a fix had reviewed it (issue 45): a
    table's description names a status in another case ("Returned"); a full rewrite respells
    'returned' as 'returned_x'. The description is flagged (it names the value), but the fix
    rewrites the spelling the finding names, not the text's: applied, it leaves the text as it was.
    So the item is a no-fix item (edit or dismiss), accept refuses it saying what to do, and bulk
    accept skips it (failed before: offered, and accepting it wrote the same text again, certified
    by a person). Control: the enum's value_map changes the enum and is accepted."""
    cat, lk = ecat, elk
    lk.table(T, [("d", "date"), ("order_id", "bigint"), ("status", "string")], partition_by=["d"], at=0)
    rows: dict[str, list] = {"d": [], "order_id": [], "status": []}
    for day in range(1, 4):
        part = {"d": [f"2024-11-1{day}"] * 2, "order_id": [10 * day, 10 * day + 1], "status": ["placed", "returned"]}
        lk.append(T, part, at=day)
        for k in rows:
            rows[k] += part[k]
    text = "Orders; status: Placed or Returned."
    sm.annotate(cat, T, {"description": text, "grain": {"text": "one row per order", "keys": ["order_id"]}},
                author="ann", time=lk.day(4))
    sm.annotate(cat, T, {"enum": ["placed", "returned"]}, column="status", author="ann", time=lk.day(4.1))
    lk.overwrite(T, {**rows, "status": ["returned_x" if s == "returned" else s for s in rows["status"]]}, at=5)
    now = lk.day(5)
    got = {i.annotation: i for i in items(cat, now)}
    desc = got["table.description"]
    assert desc.reason == "values_restated", desc
    assert not desc.acceptable and desc.refused == "no_fix" and desc.proposed is None and desc.fixes == [], desc
    assert desc.why_not and "unchanged" in desc.why_not and "edit" in desc.why_not and "dismiss" in desc.why_not
    before = cat.resolve(None)
    with pytest.raises(sm.NoFixError, match="unchanged.*edit.*dismiss"):
        sm.accept(cat, desc.id, author="ann", now=now)
    assert cat.resolve(None) == before
    res = sm.accept_all(cat, "ann", now=now, time=lk.day(6))
    assert {x["item"]: x["code"] for x in res["skipped"]}.get(desc.id) == "no_fix", res
    anns = by_key(cat)
    assert anns["table.description"].vid < before and anns["table.description"].value == text  # not re-certified
    assert anns["column.3.enum"].vid > before and "returned_x" in anns["column.3.enum"].value  # control: accepted


def test_prose_naming_a_renamed_column_is_rewritten_by_accept_and_controls(elk):
    """A column renamed in place: its own description naming its old name (code-quoted), another column's
    description naming it, and the table's description naming it get `rename {old, new, scale 0}`, and
    accept rewrites the name in each text, nothing else (failed before: `investigate` on the first two and
    no fix on the table's, so accept-all left the old name; an independent tester's truth names the
    rename). Controls: the plain word "status" in prose is no name of the column (left as written); a
    column of another table qualified by its table keeps its name; the table's description naming two
    renamed columns gets no fix (one name per fix)."""
    cat = elk.cat
    elk.table(T, [("order_id", "bigint"), ("status", "string"), ("amount_cents", "bigint")], at=0,
              rows={"order_id": [1, 2, 3], "status": ["a", "b", "a"], "amount_cents": [100, 200, 300]})
    sm.annotate(cat, T, {"description": "Orders; `status` is the order status, amount_cents sums "
                                        "acme.core.dim.amount_cents"}, author="a", time=elk.day(0.5))
    sm.annotate(cat, T, {"description": "the order's `status`, see the status docs"}, column="status", author="a",
                time=elk.day(0.51))
    sm.annotate(cat, T, {"description": "charged; refunds change `status` too"}, column="amount_cents", author="a",
                time=elk.day(0.52))
    elk.evolve(T, rename={"status": "order_status"}, at=1)
    now = elk.day(1)
    got = {i.annotation: i for i in items(cat, now) if i.reason in ("column_renamed", "schema_changed")}
    ren = [Fix(action="rename", params={"old": "status", "new": "order_status", "scale": 0})]
    assert {k: got[k].fixes for k in ("table.description", "column.2.description", "column.3.description")} == {
        "table.description": ren, "column.2.description": ren, "column.3.description": ren}
    for i, k in enumerate(("column.2.description", "column.3.description", "table.description")):
        sm.accept(cat, got[k].id, author="ann", now=now, time=elk.day(1.1 + i / 100))
    anns = by_key(cat)
    assert anns["column.2.description"].value == "the order's `order_status`, see the status docs"
    assert anns["column.3.description"].value == "charged; refunds change `order_status` too"
    assert anns["table.description"].value == ("Orders; `order_status` is the order status, amount_cents sums "
                                               "acme.core.dim.amount_cents")
    # two renamed columns named in one text: no fix, a person rewrites it
    elk.evolve(T, rename={"order_status": "st", "amount_cents": "amt_cents"}, at=2)
    [f] = [i for i in items(cat, elk.day(2)) if i.annotation == "table.description"]
    assert f.reason == "schema_changed" and not [x for x in f.fixes if x.action == "rename"]


def test_a_table_text_naming_one_of_several_renamed_columns_gets_its_rename(elk):
    """Two columns renamed in one commit, the table's description naming one of them: `rename` for that one,
    which accept writes, leaving the rest of the text (failed before: no fix, since any second rename beside
    it withheld the fix; a TPC-DS tester's web_returns "dated by wr_returned_date" beside a renamed money
    column). A column renamed twice since the text was written gets the name it has now (a -> b -> c:
    `rename {a, c}`). Control: a text naming both renamed columns still gets no fix (one name per fix)."""
    cat = elk.cat
    elk.table(T, [("order_id", "bigint"), ("placed_date", "date"), ("amount", "bigint")], at=0,
              rows={"order_id": [1, 2, 3], "placed_date": ["2025-01-01"] * 3, "amount": [100, 200, 300]})
    sm.annotate(cat, T, {"description": "Orders, dated by placed_date; money in dollars"}, author="a",
                time=elk.day(0.5))
    elk.evolve(T, rename={"placed_date": "order_date", "amount": "amount_usd"}, at=1)
    now = elk.day(1)
    [f] = [i for i in items(cat, now) if i.annotation == "table.description"]
    assert f.fixes == [Fix(action="rename", params={"old": "placed_date", "new": "order_date", "scale": 0})], f
    sm.accept(cat, f.id, author="ann", now=now, time=elk.day(1.1))
    assert by_key(cat)["table.description"].value == "Orders, dated by order_date; money in dollars"
    # renamed twice after the text: the name now
    sm.annotate(cat, T, {"description": "Orders, dated by order_date"}, author="a", time=elk.day(1.5))
    elk.evolve(T, rename={"order_date": "odate"}, at=2)
    elk.evolve(T, rename={"odate": "ordered_on"}, at=3)
    [f] = [i for i in items(cat, elk.day(3)) if i.annotation == "table.description"]
    assert f.fixes == [Fix(action="rename", params={"old": "order_date", "new": "ordered_on", "scale": 0})], f
    # control: both renamed columns named: no fix
    sm.annotate(cat, T, {"description": "Orders, dated by ordered_on, amount_usd in dollars"}, author="a",
                time=elk.day(3.5))
    elk.evolve(T, rename={"ordered_on": "d", "amount_usd": "usd"}, at=4)
    [f] = [i for i in items(cat, elk.day(4)) if i.annotation == "table.description"]
    assert f.reason == "schema_changed" and not [x for x in f.fixes if x.action == "rename"], f


def test_accept_rewrites_a_respelled_value_in_prose_only_where_the_text_names_the_value(ecat, elk):
    """A region renamed in place ('online' -> 'digital'): the description "physical stores and the online
    store (store_id 0, region online)" takes the new value where it names the region, and keeps "the
    online store", which the rename did not change (the round-20 Acme tester's false accept-all write:
    "the digital store"). Where the word comes twice and neither names the value, accept refuses."""
    cat = ecat
    elk.table(D, [("store_id", "bigint"), ("region", "string")], at=0,
              rows={"store_id": [0, 1, 2, 3], "region": ["online", "east", "west", "east"]})
    sm.annotate(cat, D, {"description": "Stores: physical stores and the online store (store_id 0, region online)."},
                author="a", time=elk.at(0.5))
    sm.annotate(cat, D, {"enum": ["east", "online", "west"]}, column="region", author="a", time=elk.at(0.6))
    elk.overwrite(D, {"store_id": [0, 1, 2, 3], "region": ["digital", "east", "west", "east"]}, at=1)
    sm.scan(cat, author="steward", now=elk.day(1), time=elk.at(1.2))
    [it] = [i for i in sm.review_items(cat, D, now=elk.day(1)).items if i.annotation == "table.description"]
    assert [x.action for x in it.fixes] == ["value_map"], it
    sm.accept_all(cat, author="steward", table=D, now=elk.day(1), time=elk.at(1.5))
    assert by_key(cat, D)["table.description"].value == \
        "Stores: physical stores and the online store (store_id 0, region digital)."
    from catalog_core.errors import InvalidValueError
    from semantic.review import _respelled_prose

    with pytest.raises(InvalidValueError, match="is for a person"):
        _respelled_prose("the online store sells online only", "online", "digital", "region", "table.description")
