"""The enterprise world's generated domains (eval.lake.enterprise_spec, eval.lake.enterprise): the plan's
structure at full size and scaled down (pure Python, fast), and, in the slow tier, a scaled-down write of
both catalogs with Spark and the trap generator."""

from __future__ import annotations

import datetime as dt
import os

import pytest

from eval.lake.enterprise_spec import DUAL_MONTHS, FULL, PRE_SLOTS, Sizes, World

SMALL = Sizes(facts=3, dims=2, domains=3)


def _all_writes(w: World) -> list[tuple[int, list[tuple[str, str, list]]]]:
    out = []
    lo = dt.date(2023, 8, 1)
    for i, s in enumerate(w.slots):
        hi = s - dt.timedelta(days=s.day) if i < len(PRE_SLOTS) else s - dt.timedelta(days=1)
        out.append((i, w.writes_at(i, lo, hi)))
        lo = hi + dt.timedelta(days=1)
    return out


def test_full_size_has_500_tables_in_8_domains_besides_acme():
    c = World(7, FULL).counts()
    assert c["tables"] + 22 >= 500, c  # the Acme core's 22 tables are the ninth domain
    assert len(c["per_domain"]) == 8 and min(c["per_domain"].values()) >= 40, c["per_domain"]
    kinds = c["per_kind"]
    for k in ("fact_v2", "fact_legacy", "fact_backup", "fact_test", "fact_daily", "fact_stg", "dim_backup", "dim_old"):
        assert kinds.get(k, 0) >= 10, (k, kinds)
    # annotated the way real catalogs are: many described, few certified, some wrong (stale history only)
    assert 0.45 <= c["described"] / c["tables"] <= 0.8, c
    assert 0 < c["certified"] <= 0.05 * c["tables"], c
    assert c["wrong_from_start"] >= 4 and c["stale_unflagged"] >= 10, c


def test_lookalike_clusters_share_the_head_and_its_columns():
    w = World(7, SMALL)
    for t in w.tables.values():
        head = w.tables[t.base]
        assert head.kind in ("base_fact", "base_dim")
        stem = head.name.split(".")[1]
        assert stem in t.name, (t.name, head.name)
        if t.kind in ("fact_legacy", "fact_backup", "fact_test", "dim_backup", "dim_old"):
            assert t.columns == head.columns  # a copy: a reader cannot tell them apart by schema
        if t.deprecated_at is not None:
            assert t.replaced_by in w.tables and w.tables[t.replaced_by].deprecated_at is None


def test_v2_is_dual_written_then_the_head_stops():
    w = World(7, FULL)
    writes = _all_writes(w)
    v2s = [t for t in w.tables.values() if t.kind == "fact_v2"]
    assert v2s
    for v2 in v2s:
        head = w.tables[v2.base]
        wrote = {i: {n for n, _, _ in ws} for i, ws in writes}
        both = [i for i in wrote if head.name in wrote[i] and v2.name in wrote[i]]
        assert len(both) == DUAL_MONTHS, (v2.name, both)
        assert max(i for i in wrote if head.name in wrote[i]) < max(i for i in wrote if v2.name in wrote[i])
        assert head.deprecated_at == both[-1] + 1 and head.replaced_by == v2.name
        for _i, ws in writes:
            rows = {n: r for n, _, r in ws}
            if head.name in rows and v2.name in rows:  # the same records, in dollars
                assert [r["amount_cents"] / 100 for r in rows[head.name]] == [r["amount_usd"] for r in rows[v2.name]]


def test_variants_derive_from_the_head_rows():
    w = World(7, SMALL)
    for _i, ws in _all_writes(w):
        rows = {n: r for n, _, r in ws}
        for n, r in rows.items():
            t = w.tables[n]
            if t.kind == "fact_daily" and t.base in rows:
                assert sum(x["amount_cents"] for x in r) == sum(x["amount_cents"] for x in rows[t.base])
                assert sum(x["row_count"] for x in r) == len(rows[t.base])
            if t.kind == "fact_test" and t.base in rows:
                assert 0 < len(r) < len(rows[t.base]) or len(rows[t.base]) <= 10


def test_backups_are_written_once_and_deprecated_copies_stop():
    w = World(7, SMALL)
    seen: dict[str, list[int]] = {}
    for i, ws in _all_writes(w):
        for n, _, _ in ws:
            seen.setdefault(n, []).append(i)
    for t in w.tables.values():
        if t.once:
            assert seen[t.name] == [t.first_slot]
        if t.last_slot is not None:
            assert max(seen[t.name]) <= t.last_slot < len(w.slots) - 1


def test_stale_history_differs_only_where_the_plan_says():
    w = World(7, FULL)
    for t in w.tables.values():
        e, s = w.table_fields(t, "enriched"), w.table_fields(t, "stale")
        if t.wrong:
            assert e["description"] != s["description"] and "cents" in e["description"]
        else:
            assert e == s


def _trap_text(w: World, t, history: str, upto: int) -> str:
    return " ".join(repr(f) for s in range(t.first_slot, upto + 1) for _c, f in w.trap_annotations(t, history, s))


def test_annotation_traps_only_the_enriched_history_states():
    """The five annotation-trap tables: created after the trap generator ran, written by every late load, and
    what their data cannot show is in the enriched annotations only (the stale ones omit it or keep the old
    truth); the rest of the plan is the plan without them."""
    from eval.lake.enterprise_spec import ANN_TRAPS, TRAP_FIRST, TRAP_SWITCH

    w = World(7, FULL)
    traps = {n: t for n, t in w.tables.items() if t.kind.startswith("trap_")}
    assert {n: t.kind.removeprefix("trap_") for n, t in traps.items()} == ANN_TRAPS
    assert TRAP_FIRST == len(PRE_SLOTS) and all(t.first_slot == TRAP_FIRST for t in traps.values())
    assert len(w.tables) - len(traps) == 505  # the world the generator sees is the one before the traps
    last = len(w.slots) - 1
    says = {(n, h): _trap_text(w, t, h, last) for n, t in traps.items() for h in ("enriched", "stale")}
    truths = {"merch.pos_sales": "8.25%", "crm.web_orders": "3, 11 and 42", "web_analytics.login_events":
              "America/Los_Angeles", "supply_chain.freight_invoices": "USD cents", "support.service_orders": "'90'"}
    for n, truth in truths.items():
        assert truth in says[(n, "enriched")] and truth not in says[(n, "stale")], (n, says[(n, "stale")])
    # before the switch both histories say the old truth; from it only the enriched one changes
    for n in ("supply_chain.freight_invoices", "support.service_orders"):
        t = traps[n]
        assert _trap_text(w, t, "enriched", TRAP_SWITCH - 1) == _trap_text(w, t, "stale", TRAP_SWITCH - 1)
        assert w.trap_annotations(t, "enriched", TRAP_SWITCH) and not w.trap_annotations(t, "stale", TRAP_SWITCH)


def test_annotation_traps_leave_evidence_only_where_a_detector_can_tell():
    """The unit switch is a clean scale shift in the loads from the switch (every cent amount above every dollar
    amount), and the new code appears in those loads only."""
    from eval.lake.enterprise_spec import CANCELLED, TRAP_SWITCH

    w = World(7, FULL)
    amounts: dict[bool, list[int]] = {False: [], True: []}
    codes: dict[bool, set[str]] = {False: set(), True: set()}
    for i, ws in _all_writes(w):
        for n, _, rows in ws:
            if n == "supply_chain.freight_invoices":
                amounts[i >= TRAP_SWITCH] += [r["amount"] for r in rows]
            if n == "support.service_orders":
                codes[i >= TRAP_SWITCH] |= {r["status_code"] for r in rows}
    assert min(amounts[True]) > max(amounts[False]) and max(amounts[False]) <= 3_000
    assert codes[False] == {"10", "20"} and CANCELLED in codes[True]


def test_deterministic_by_seed():
    a, b, c = World(7, SMALL), World(7, SMALL), World(8, SMALL)
    assert [(t.name, t.kind, t.first_slot, t.last_slot, t.described) for t in a.tables.values()] == \
           [(t.name, t.kind, t.first_slot, t.last_slot, t.described) for t in b.tables.values()]
    assert _all_writes(a) == _all_writes(b)
    assert [t.name for t in a.tables.values()] != [t.name for t in c.tables.values()] or _all_writes(a) != _all_writes(c)


def test_enterprise_refuses_the_cryptic_variant_before_building(tmp_path):
    from click.testing import CliRunner

    from mcp_server.cli import main

    out = tmp_path / "lake"
    res = CliRunner().invoke(main, ["eval", "build", "--data", str(out), "--scale", "enterprise", "--variant", "cryptic"])
    assert res.exit_code == 2 and "--variant plain" in res.output, res.output
    assert not out.exists()


# ---------------------------------------------------------------------- slow: Spark, the trap generator
@pytest.mark.slow  # Spark + the trap generator on two scaled-down domains: 122 s measured at load ~22 on the 2-core machine
def test_scaled_down_write_keeps_both_catalogs_physically_identical(tmp_path):
    import catalog_core as cc
    from eval.lake.calendar import at
    from eval.lake.enterprise import Enterprise
    from eval.lake.enterprise_spec import LATE_DAYS
    from spark_bridge import local_session

    spark = local_session(app_name="test-enterprise", cores=2)
    cats = {h: cc.Catalog.open(os.path.join(tmp_path, h)) for h in ("enriched", "stale")}
    try:
        e = Enterprise(cats, spark, os.path.join(tmp_path, "warehouse"), 7, sizes=Sizes(facts=2, dims=2, domains=2),
                       log=lambda m: None)
        e.prehistory()
        e.traps()
        for n in LATE_DAYS:
            e.late_load(n, at(n, 8.0))
        assert e.truth is not None and any(not t.get("control") for t in e.truth["traps"])
        names = sorted({f"{cc.lake.name_of(o.path)}" for o in cats["enriched"].query(cc.lake.tables_query(None))})
        assert len(names) == len(e.world.tables)
        for n in names:  # the same files in both catalogs, after the traps' replay
            files = [sorted(f.value["path"] for f in cats[h].plan_files(n)) for h in ("enriched", "stale")]
            assert files[0] == files[1], n
        first = min(c.time for c in cats["enriched"].commits())
        last = max(c.time for c in cats["enriched"].commits())
        assert (last - first) / 86400 >= 30 * 18 - 5 * 30  # 2023-08-28 .. d-7 (the Acme history adds the rest)
        kinds = {m["kind"] for m in e.stale_entries()}
        assert any(k.startswith("trap:") for k in kinds)
    finally:
        for c in cats.values():
            c.close()


@pytest.mark.slow  # Spark + eight scaled-down domains (one fact, one dimension each), no trap generator: 183 s measured at load ~20 (beside an enterprise build)
def test_annotation_traps_written_and_only_the_stale_history_is_flagged(tmp_path):
    """The five annotation-trap tables written through the bridge: the detector flags exactly the stale
    history's detectable ones (the unit switch, the new code) and nothing in the enriched history; the
    manifest entries name the flagged annotations."""
    import catalog_core as cc
    from eval.lake.calendar import at
    from eval.lake.enterprise import Enterprise
    from eval.lake.enterprise_spec import LATE_DAYS
    from semantic.staleness import staleness
    from spark_bridge import local_session

    spark = local_session(app_name="test-enterprise-traps", cores=1)
    cats = {h: cc.Catalog.open(os.path.join(tmp_path, h)) for h in ("enriched", "stale")}
    try:
        e = Enterprise(cats, spark, os.path.join(tmp_path, "warehouse"), 7, sizes=Sizes(facts=1, dims=1, domains=8),
                       log=lambda m: None, traps=False)
        e.prehistory()
        for n in LATE_DAYS:
            e.late_load(n, at(n, 8.0))
        entries = [m for m in e.stale_entries() if m["kind"].startswith("annotation_trap:")]
        truth = {t["table"]: t for t in e.annotation_traps()}
        assert len(truth) == 5 and {m["table"] for m in entries} == set(truth)
        for table, tr in truth.items():
            flagged = {h: {a for f in staleness(cats[h], table, depth="data", now="2025-03-10T00:00:00Z")
                           for a in f.annotations} for h in cats}
            assert not flagged["enriched"], (table, flagged)
            mine = {m["key"] for m in entries if m["table"] == table and m["detectable"]}
            assert bool(mine) == tr["detectable"], (table, mine)
            assert mine <= flagged["stale"] | {k for k in mine if k.endswith(".labels")}, (table, mine, flagged)
            if not tr["detectable"]:
                assert not flagged["stale"], (table, flagged)
        sql = "SELECT COUNT(*) FROM acme.support.service_orders WHERE status_code = '90'"
        assert [list(r) for r in cc.run_sql(cats["stale"], sql).rows][0][0] > 0
    finally:
        for c in cats.values():
            c.close()
