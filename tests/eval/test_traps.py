"""The trap generator and its scorer (eval/traps, issue 45).

Fast: the seeds are fixed and disjoint, the generator covers the taxonomy, the scorer's arithmetic.
Slow (Spark): every class's change is applied through a public write path to a copy of the Acme
lake and the truth it records matches the catalog afterwards; the same seed gives the same traps."""

from __future__ import annotations

import json
import os

import pytest

from eval.traps import taxonomy
from eval.traps.generator import Generator
from eval.traps.run import SEEDS_FILE, seeds_of
from eval.traps.score import aggregate, fix_matches, score


def test_seeds_are_fixed_and_held_out_is_disjoint():
    with open(SEEDS_FILE) as fh:
        fixed = json.load(fh)
    dev, held = fixed["development"], fixed["held_out"]
    assert dev and held and not set(dev) & set(held)
    assert seeds_of("development") == dev and seeds_of("held_out") == held
    assert seeds_of("7,8") == [7, 8]
    with pytest.raises(SystemExit, match="comma list"):
        seeds_of("heldout-ish")


def test_generator_has_a_change_for_every_kind_of_the_taxonomy():
    assert set(Generator.KINDS) == set(taxonomy.CLASSES) == set(Generator.ORDER)
    for cls, kinds in Generator.KINDS.items():
        assert set(kinds) == set(taxonomy.CLASSES[cls]["kinds"]), cls
        for fn in kinds.values():
            assert callable(getattr(Generator, fn)), fn
    for kind, fn in Generator.CONTROL_KINDS.items():
        assert kind in taxonomy.CONTROLS and callable(getattr(Generator, fn))


def test_fix_matches_compares_action_and_the_truths_params():
    want = {"action": "rename", "params": {"old": "a_cents", "new": "a_usd", "scale": -2}}
    assert fix_matches(want, {"action": "rename", "params": {"old": "A_CENTS", "new": "a_usd", "scale": -2.0}})
    assert not fix_matches(want, {"action": "rename", "params": {"old": "a_cents", "new": "a_usd", "scale": 0}})
    assert not fix_matches(want, {"action": "successor", "params": {"table": "x"}})
    assert not fix_matches(want, None)
    assert fix_matches(None, None)           # nothing determinable, nothing offered: right
    assert not fix_matches(None, want)       # a fix offered where none follows from the change: wrong
    succ = {"action": "successor", "params": {"table": "c.ns.t_v2"}}
    assert fix_matches(succ, {"action": "successor", "params": {"table": "c.ns.t_v2"}})
    assert not fix_matches(succ, {"action": "successor", "params": {"table": "c.ns.other"}})
    enum = {"action": "add_enum_values", "params": {"column": "s", "values": ["b", "a"]}}
    assert fix_matches(enum, {"action": "add_enum_values", "params": {"column": "s", "values": ["a", "b"]}})


def _flag(table, key, reason, fixes=()):
    return {"table": table, "key": key, "reason": reason, "status": "stale", "fixes": list(fixes), "message": "m",
            "evidence_vids": [1]}


def test_score_counts_per_class_against_the_truth():
    truth = {"traps": [
        {"id": "schema.rename.0", "cls": "schema", "kind": "rename", "table": "c.n.t", "columns": ["a"],
         "description": "a renamed b", "tables": ["c.n.t"], "control": False, "loads": 1,
         "false": [["c.n.t", "table.grain"], ["c.n.u", "relationship.t"]],
         "fixes": {"c.n.t|table.grain": {"action": "rename", "params": {"old": "a", "new": "b", "scale": 0}},
                   "c.n.u|relationship.t": None}},
        {"id": "control.compaction.1", "cls": "control", "kind": "compaction", "table": "c.n.k", "columns": [],
         "description": "", "tables": ["c.n.k"], "control": True, "loads": 1, "false": [], "fixes": {}},
    ], "routine_loads": [{"table": "c.n.k", "day": 1, "vid": 9}, {"table": "c.n.r", "day": 1, "vid": 9}]}
    before = [_flag("c.n.t", "table.grain", "grain_violated"), _flag("c.n.z", "table.description", "upstream_changed")]
    after = before + [
        _flag("c.n.t", "table.grain", "column_renamed", [{"action": "investigate", "params": {}},
                                                          {"action": "rename", "params": {"old": "a", "new": "b", "scale": 0}}]),
        _flag("c.n.t", "column.3.unit", "unit_drift"),                 # a flag on the trap's table that is not false
        _flag("c.n.k", "table.description", "schema_changed"),       # a control's false alarm
        _flag("c.n.z", "table.description", "upstream_changed"),      # flagged before: not new
        _flag("c.n.m", "table.grain", "upstream_changed"),            # a table nothing wrote
    ]
    s = score(truth, before, after)
    row = s["classes"]["schema"]
    assert (row["false"], row["caught"], row["tp"], row["fp"]) == (2, 1, 1, 1)
    assert (row["fix_right"], row["fix_total"]) == (1, 1)   # the first fix that is not `investigate`
    assert [m["key"] for m in row["misses"]] == ["relationship.t"]
    assert [a["table"] for a in s["control_alarms"]] == ["c.n.k"]
    assert s["control_loads"] == 3                          # the compaction + two routine loads
    assert [e["table"] for e in s["elsewhere"]] == ["c.n.m"]
    agg = aggregate([s, s])
    assert agg["classes"]["schema"]["caught"] == 2 and agg["control_loads"] == 6
    assert agg["alarms_per_20"] == pytest.approx(20 * 2 / 6)


def test_a_wrong_fix_and_a_fix_offered_without_evidence_count_as_wrong():
    truth = {"traps": [{"id": "x", "cls": "loads_freshness", "kind": "stopped", "table": "c.n.t", "columns": [],
                        "description": "", "tables": ["c.n.t"], "control": False, "loads": 0,
                        "false": [["c.n.t", "table.freshness_sla"]], "fixes": {"c.n.t|table.freshness_sla": None}}],
             "routine_loads": []}
    after = [_flag("c.n.t", "table.freshness_sla", "not_loaded_since",
                   [{"action": "successor", "params": {"table": "c.n.other"}}])]
    row = score(truth, [], after)["classes"]["loads_freshness"]
    assert (row["caught"], row["fix_right"], row["fix_total"]) == (1, 0, 1)
    assert row["wrong_fixes"][0]["offered"]["action"] == "successor"


# ---------------------------------------------------------------------- slow: Spark on a copy of the Acme lake
def _seed(lake_dir, dst, seed, **kw):
    from eval.traps.run import run_seed

    return run_seed(lake_dir, "enriched", seed, dst, depths=(), log=lambda m: None, **kw)


def _files(root):
    return {(os.path.join(d, f), os.path.getmtime(os.path.join(d, f)))
            for d, _, fs in os.walk(root) for f in fs
            if not (f == "LOG" or f.startswith("LOG.old"))}  # RocksDB's info log (a reader writes it): not data


# The three slow tests below share one seed's two runs (the `seed_runs` fixture): each used to run its own
# seed (1; 2 twice; 3 mounted and copied: five runs, 733 s of one slow-tier worker in CI's last preflight),
# while what each claims holds of any development seed run twice. Two runs of seed 1, mounted and re-pointed
# (re-pointed twice where this process cannot mount), still show: every class applied with a truth the
# catalog confirms (now checked on both runs), the same seed giving the same traps (two runs compared), the
# two isolations giving the same truth, and the lake untouched by either.
SEED = 1


@pytest.fixture(scope="module")
def seed_runs(lake_dir, tmp_path_factory):
    """SEED applied twice to two copies of the Acme lake: [(isolation, its result, its copy's directory)],
    the first mounted when this process can mount (root with util-linux `unshare`: CI), else re-pointed;
    the second re-pointed (`Catalog.relocate`). Also the lake's files before and after both runs."""
    from concurrent.futures import ThreadPoolExecutor

    from eval.traps.run import can_mount

    before = _files(lake_dir)
    root = tmp_path_factory.mktemp("traps")
    plan = [("mount" if can_mount() else "copy", str(root / ("mounted" if can_mount() else "copied-1"))),
            ("copy", str(root / "copied"))]
    # side by side: each run is a child process (and its JVM) that waits more than it computes (about 80 s of
    # CPU in 150 s of CI's slow tier), and the two share nothing but the lake they copy. pytest-timeout does not
    # bound fixtures (pyproject: timeout_func_only), so each run has its own bound (a test's was 600 s for two runs).
    with ThreadPoolExecutor(2) as pool:
        done = [pool.submit(_seed, lake_dir, dst, SEED, isolation=how, timeout=900) for how, dst in plan]
        runs = [(how, f.result(), dst) for (how, dst), f in zip(plan, done)]
    return {"runs": runs, "lake_before": before, "lake_after": _files(lake_dir)}


# Spark, through `seed_runs`: two runs of one seed on copies of the Acme lake (each about 150 s of CI's slow tier;
# before the fixture, this test's own run: 566 s measured at load average ~18 on the 2-core machine)
@pytest.mark.slow
def test_every_class_is_applied_and_its_truth_matches_the_catalog(seed_runs):
    for how, res, _ in seed_runs["runs"]:
        truth = res["truth"]
        assert res["problems"] == [], how   # eval.traps.verify: each change read back from the catalog
        traps = [t for t in truth["traps"] if not t["control"]]
        assert {t["cls"] for t in traps} == set(taxonomy.CLASSES), (how, truth["skipped"])
        controls = [t for t in truth["traps"] if t["control"]]
        assert controls and all(c["false"] == [] and c["fixes"] == {} for c in controls), how
        assert {c["kind"] for c in controls} <= set(taxonomy.CONTROLS), how
        assert truth["routine_loads"] and truth["check_time"] > max(t["time"] or 0 for t in truth["traps"]), how
        # the three public write paths mixed (verify above checked each commit's author and time)
        from eval.traps.generator import writer_of

        assert {writer_of(t) for t in truth["traps"]} >= {"spark", "iceberg"}, how
    assert seed_runs["lake_after"] == seed_runs["lake_before"]   # the lake itself: not a file added or touched


@pytest.mark.slow  # Spark, through `seed_runs` (above): the same seed's two runs compared
def test_the_same_seed_gives_the_same_traps(seed_runs):
    def traps(res):
        return [(t["cls"], t["kind"], t["table"], t["columns"], t["false"], t["fixes"]) for t in res["truth"]["traps"]]

    (_, first, _), (_, second, _) = seed_runs["runs"]
    a, b = traps(first), traps(second)
    assert a == b and len(a) >= 8


@pytest.mark.slow  # Spark, through `seed_runs` (above): the seed mounted and re-pointed
def test_a_copy_kept_apart_by_relocation_gets_the_same_traps_as_a_mounted_one(seed_runs, lake_dir):
    (how_a, a, _), (how_b, b, copied) = seed_runs["runs"]
    if how_a != "mount":
        pytest.skip("the mounted run needs root and util-linux unshare (CI runs as root)")
    assert how_b == "copy"
    assert a["truth"] == b["truth"]
    assert seed_runs["lake_after"] == seed_runs["lake_before"]
    with open(os.path.join(copied, ".traps-copy")) as fh:
        assert fh.read().strip() == os.path.abspath(lake_dir)   # names the lake, as score-dir expects


def test_a_verified_answer_made_false_is_reverified_unless_the_change_names_a_repair():
    from eval.traps.generator import Trap

    t = Trap(id="x", cls="definitions", kind="k", table="c.n.t", columns=[], description="")
    t.falsify([("c.n.t", "verified_query.ab12"), ("c.n.t", "column.3.unit")], None)
    t.falsify([("c.n.u", "verified_query.cd34")], {"action": "rename", "params": {"old": "a", "new": "b", "scale": 0}})
    assert t.fixes == {"c.n.t|verified_query.ab12": {"action": "reverify", "params": {}}, "c.n.t|column.3.unit": None,
                       "c.n.u|verified_query.cd34": {"action": "rename", "params": {"old": "a", "new": "b", "scale": 0}}}


def test_a_readers_lineage_flag_on_a_control_table_is_downstream_not_a_false_alarm():
    truth = {"traps": [{"id": "g", "cls": "grain", "kind": "duplicate_load", "table": "c.n.t", "columns": [],
                        "description": "", "tables": ["c.n.t"], "control": False, "loads": 1,
                        "false": [["c.n.t", "table.grain"]], "fixes": {"c.n.t|table.grain": None}}],
             "routine_loads": [{"table": "c.n.mart", "day": 1, "vid": 5}]}
    s = score(truth, [], [_flag("c.n.mart", "*", "upstream_changed"), _flag("c.n.mart", "table.grain", "schema_changed")])
    assert [a["key"] for a in s["control_alarms"]] == ["table.grain"]
    assert [(e["table"], e["key"]) for e in s["elsewhere"]] == [("c.n.mart", "*")]


def test_each_trap_gets_a_writer_its_kind_allows_from_the_seeds_own_stream():
    import random
    import types

    from eval.traps.generator import WRITER_KINDS, WRITERS, Skip, writer_of

    assert set(WRITER_KINDS) >= {k for c in taxonomy.CLASSES.values() for k in c["kinds"]} | set(taxonomy.CONTROLS)
    assert all(set(ws) <= set(WRITERS) for ws in WRITER_KINDS.values())

    def picks(writers, seed=1):
        g = types.SimpleNamespace(writers=writers, wrng=random.Random(f"writers-{seed}"))
        return [Generator.choose_writer(g, k) for k in sorted(WRITER_KINDS) if WRITER_KINDS[k]
                and set(WRITER_KINDS[k]) & set(writers)]

    mixed = picks(WRITERS)
    assert mixed == picks(WRITERS) and {"spark", "iceberg"} <= set(mixed)   # deterministic per seed, both used
    assert set(picks(("spark", "engine"))) == {"spark", "engine"}           # the writers before REST
    assert set(picks(("iceberg",))) == {"iceberg"}
    g = types.SimpleNamespace(writers=("iceberg",), wrng=random.Random(0))
    with pytest.raises(Skip, match="type_change is written by spark only"):
        Generator.choose_writer(g, "type_change")
    assert Generator.choose_writer(g, "stopped") == "none"                  # nothing is written
    # truths from before writers were recorded: the kind's first writer
    assert writer_of({"kind": "nullability_only"}) == "engine" and writer_of({"kind": "rename"}) == "spark"
    assert writer_of({"kind": "rename", "writer": "iceberg"}) == "iceberg"


def test_score_and_report_break_recall_down_per_writer():
    import io

    from eval.traps.run import parse_writers, report

    truth = {"traps": [
        {"id": "a", "cls": "schema", "kind": "rename", "table": "c.n.t", "columns": [], "description": "", "tables": ["c.n.t"],
         "control": False, "loads": 1, "writer": "iceberg", "false": [["c.n.t", "k1"], ["c.n.t", "k2"]],
         "fixes": {"c.n.t|k1": None, "c.n.t|k2": None}},
        {"id": "b", "cls": "grain", "kind": "duplicate_load", "table": "c.n.u", "columns": [], "description": "",
         "tables": ["c.n.u"], "control": False, "loads": 1, "writer": "spark", "false": [["c.n.u", "g"]],
         "fixes": {"c.n.u|g": None}},
        {"id": "c", "cls": "loads_freshness", "kind": "stopped", "table": "c.n.s", "columns": [], "description": "",
         "tables": ["c.n.s"], "control": False, "loads": 0, "false": [["c.n.s", "sla"]], "fixes": {"c.n.s|sla": None}},
    ], "routine_loads": []}
    s = score(truth, [], [_flag("c.n.t", "k1", "column_renamed"), _flag("c.n.t", "x", "unit_drift"),
                          _flag("c.n.u", "g", "grain_violated")])
    assert s["writers"]["iceberg"] == {"false": 2, "caught": 1, "tp": 1, "fp": 1, "traps": 1}
    assert s["writers"]["spark"] == {"false": 1, "caught": 1, "tp": 1, "fp": 0, "traps": 1}
    assert s["writers"]["none"]["false"] == 1 and s["writers"]["none"]["caught"] == 0   # a stopped table: no writer
    assert aggregate([s, s])["writers"]["iceberg"]["caught"] == 2
    out = io.StringIO()
    report([{"lake": "acme", "seed": 1, "truth": truth, "scores": {"metadata": s}}], out, held_out=[101])
    text = out.getvalue()
    assert "by writer" in text and "| iceberg | R 1/2 (0.50) · P 1/2 (0.50) · 1 traps |" in text
    assert parse_writers("iceberg, spark") == ("spark", "iceberg")
    with pytest.raises(SystemExit, match="--writers"):
        parse_writers("spark,trino")


def test_a_freshness_flag_on_a_table_the_routine_stopped_is_listed_apart_not_a_false_alarm():
    # the routine loads do not replay c.n.items (others join to its key): its SLA is really missed at the
    # check time, and no trap says so; a stopped trap's table and other reasons still count as before
    truth = {"traps": [
        {"id": "k", "cls": "keys_joins", "kind": "key_format_changed", "table": "c.n.p", "columns": [],
         "description": "", "tables": ["c.n.p"], "control": False, "loads": 1,
         "false": [["c.n.items", "relationship.product"]], "fixes": {"c.n.items|relationship.product": None}},
        {"id": "s", "cls": "loads_freshness", "kind": "stuck_reruns", "table": "c.n.inv", "columns": [],
         "description": "", "tables": ["c.n.inv"], "control": False, "loads": 2,
         "false": [["c.n.inv", "table.freshness_sla"]], "fixes": {"c.n.inv|table.freshness_sla": None}}],
        "routine_loads": [], "stopped": ["c.n.items", "c.n.inv"]}
    after = [_flag("c.n.items", "relationship.product", "join_match_low"),
             _flag("c.n.items", "table.freshness_sla", "freshness_sla_missed"),
             _flag("c.n.items", "table.description", "schema_changed"),
             _flag("c.n.inv", "table.freshness_sla", "freshness_sla_missed"),
             _flag("c.n.inv", "table.description", "not_loaded_since")]
    s = score(truth, [], after)
    assert [(e["table"], e["key"]) for e in s["stopped"]] == [("c.n.items", "table.freshness_sla")]
    kj, lf = s["classes"]["keys_joins"], s["classes"]["loads_freshness"]
    assert (kj["tp"], kj["fp"]) == (1, 1) and [a["key"] for a in kj["false_alarms"]] == ["table.description"]
    assert (lf["tp"], lf["fp"]) == (1, 1)   # the trap stopped c.n.inv: its own truth counts
    assert s["control_alarms"] == [] and s["elsewhere"] == []


def test_a_lineage_flag_on_a_table_a_trap_wrote_is_downstream_unless_the_table_has_a_false_claim():
    """A lineage flag about no annotation (`upstream_changed` / `upstream_incomplete` on "*") says the
    table's data was built from an input that changed or was partial after the read: no trap's truth
    says which tables' data its input's changes reach, so it is listed apart as downstream wherever it
    lands, also on a table a trap wrote (a replacement built from the table it replaces, whose input
    changed after the build; failed before: a false alarm of the replacement's class). It still counts
    as right on a table with an annotation made false, and any other flag on the trap's table still
    counts as a false alarm."""
    truth = {"traps": [{"id": "r", "cls": "replacement_deprecation", "kind": "replacement_beside", "table": "c.n.old",
                        "columns": [], "description": "", "tables": ["c.n.old", "c.n.old_v2"], "control": False,
                        "loads": 1, "false": [["c.n.old", "table.deprecated"]],
                        "fixes": {"c.n.old|table.deprecated": None}}],
             "routine_loads": []}
    after = [_flag("c.n.old_v2", "*", "upstream_changed"), _flag("c.n.old_v2", "*", "upstream_incomplete"),
             _flag("c.n.old", "*", "upstream_changed"), _flag("c.n.old", "table.deprecated", "not_loaded_since"),
             _flag("c.n.old_v2", "table.grain", "grain_violated")]
    s = score(truth, [], after)
    row = s["classes"]["replacement_deprecation"]
    assert (row["tp"], row["fp"]) == (2, 1), row
    assert [a["key"] for a in row["false_alarms"]] == ["table.grain"]
    assert [(e["table"], e["key"]) for e in s["elsewhere"]] == [("c.n.old_v2", "*")]
    assert s["writers"]


def test_rescore_scores_stored_flags_again_with_this_scorer(tmp_path):
    """`eval.traps rescore` recomputes each depth's scores from the flags a results file stored, so two detectors'
    results compare under one scoring rule; a results file without flags is refused, saying why."""
    from click.testing import CliRunner

    from eval.traps.cli import main

    truth = {"traps": [
        {"id": "a", "cls": "schema", "kind": "rename", "table": "c.n.t", "columns": [], "description": "",
         "tables": ["c.n.t"], "control": False, "loads": 1, "writer": "iceberg", "false": [["c.n.t", "k1"]],
         "fixes": {"c.n.t|k1": None}}], "routine_loads": []}
    after = [_flag("c.n.t", "k1", "column_renamed"), _flag("c.n.t", "x", "unit_drift")]
    res = tmp_path / "res"
    res.mkdir()
    stale = {"metadata": {"classes": {}, "stale": True}}  # what an older scorer wrote: not what this one gives
    (res / "acme-7.json").write_text(json.dumps({"lake": "acme", "seed": 7, "truth": truth, "scores": stale,
                                                 "flags": {"metadata": {"before": [], "after": after}}}))
    got = CliRunner().invoke(main, ["rescore", str(res), "--out", str(tmp_path / "out")])
    assert got.exit_code == 0, got.output
    redone = json.loads((tmp_path / "out" / "acme-7.json").read_text())
    assert redone["scores"] == {"metadata": json.loads(json.dumps(score(truth, [], after)))}
    assert redone["scores"]["metadata"]["classes"]["schema"]["tp"] == 1
    (res / "acme-8.json").write_text(json.dumps({"lake": "acme", "seed": 8, "truth": truth, "scores": stale}))
    bad = CliRunner().invoke(main, ["rescore", str(res), "--out", str(tmp_path / "out2")])
    assert bad.exit_code != 0 and "no stored flags" in bad.output


def test_truth_counts_prose_saying_a_gone_column_in_words():
    """The truth's prose rule: a dropped column said in words on its own table ("the GMT offset" for
    `ca_gmt_offset`, its short first part left out, or every part) is named; not when the column is still
    there (a rename), not on another table, not for a one-word remainder (`ca_zip`)."""
    from eval.traps import truth as tt

    text, table = "Addresses with the GMT offset of their time zone and zip code", "tpcds.core.customer_address"
    assert tt.prose_names(text, "ca_gmt_offset", table, home=True, gone=True)
    assert tt.prose_names("the time-zone offsets of the stores", "time_zone_offset", table, home=True, gone=True)
    assert not tt.prose_names(text, "ca_gmt_offset", table, home=True, gone=False)
    assert not tt.prose_names(text, "ca_gmt_offset", table, home=False, gone=True)
    assert not tt.prose_names(text, "ca_zip", table, home=True, gone=True)
    assert not tt.prose_names("an offset in GMT", "ca_gmt_offset", table, home=True, gone=True)
