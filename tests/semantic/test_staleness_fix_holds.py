"""A finding's fix holds for the annotation it is listed for (issue 45, fix accuracy): one change
merged into one finding per table (`merge_by_cause`) lists a repair only for the annotations that
repair can rewrite; the others of the same cause keep their own fix, or none (what to look at).
Small lakes of their own (eval.fixtures.lakes), never a trap seed; each with its control."""

from __future__ import annotations

import semantic as sm
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
