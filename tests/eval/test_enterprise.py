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
