"""Scoring an existing trapped copy (`python -m eval.traps score-dir`, eval/traps/scoredir.py).

The trapped copy here is made the way `generate` leaves one (a copy of the Acme lake whose catalog still
names the lake's own directory, a `.traps-copy` marker, `traps.json`), with one schema-only trap written
by a catalog transaction as the generator's author, so no Spark is needed. The scorer must find the
"before" at the vid before the trap (else the trap's flag counts as old and recall is 0), leave the
trapped copy untouched, write the per-seed JSON `score` writes, and `report` must print the table."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

import catalog_core as cc
from catalog_core import lake
from eval.traps.lakeview import MARKER, lake_now

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TABLE, COLUMN = "acme.core.fct_orders", "shipping_cents"


def _files(root):
    return {(os.path.join(d, f), os.path.getmtime(os.path.join(d, f)), os.path.getsize(os.path.join(d, f)))
            for d, _, fs in os.walk(root) for f in fs
            if not (f == "LOG" or f.startswith("LOG.old"))}  # RocksDB's info log (a reader writes it): not data


def _trapped_copy(lake_dir: str, dst: str, seed: int = 1) -> dict:
    """A copy of the lake with COLUMN dropped from TABLE's schema at now + 1 h, as `generate` leaves it."""
    import semantic as sm

    src = os.path.abspath(lake_dir)
    shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns("semcat.lock"))
    with open(os.path.join(dst, MARKER), "w") as fh:
        fh.write(src + "\n")
    cat = cc.Catalog.open(os.path.join(dst, "enriched"))
    try:
        cat.relocate(src, os.path.abspath(dst))          # write into the copy only
        now = lake_now(dst, cat)
        keys = [a.key for a in sm.read_annotations(cat, TABLE, None) if a.kind == "column" and a.column == COLUMN]
        assert keys, "the Acme lake annotates fct_orders.shipping_cents"
        tpath = lake.table_path(TABLE)
        with cat.transaction(author="etl:traps", message=f"drop {COLUMN}", time=now + 3600) as txn:
            schema = dict(txn.get(tpath).value["schema"])
            schema["columns"] = [c for c in schema["columns"] if c.get("name") != COLUMN]
            txn.merge(tpath, {"schema": {"op": "set", "val": schema}})
        vid = int(txn.vid)
        cat.relocate(os.path.abspath(dst), src)          # as generated: the catalog names the lake's directory
    finally:
        cat.close()
    truth = {"seed": seed, "now": now, "check_time": now + 2 * 86400 + 3600,
             "traps": [{"id": "schema.drop.0", "cls": "schema", "kind": "drop", "table": TABLE, "columns": [COLUMN],
                        "description": f"{TABLE}.{COLUMN} dropped", "vid": vid, "time": now + 3600,
                        "false": [[TABLE, k] for k in keys],
                        "fixes": {f"{TABLE}|{k}": {"action": "remove", "params": {"column": COLUMN}} for k in keys},
                        "tables": [TABLE], "control": False, "loads": 1}],
             "routine_loads": [], "skipped": [], "active": [], "stopped": []}
    with open(os.path.join(dst, "traps.json"), "w") as fh:
        json.dump(truth, fh)
    return truth


def _run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-m", "eval.traps", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=600)
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


@pytest.mark.slow  # two copies of the Acme lake, metadata depth twice, a subprocess: 50 s measured at load 18
def test_score_dir_scores_an_existing_trapped_copy_and_leaves_it_as_it_was(lake_dir, tmp_path):
    trapped = str(tmp_path / "acme-5")
    truth = _trapped_copy(lake_dir, trapped, seed=5)
    lake_files, copy_files = _files(lake_dir), _files(trapped)
    out = tmp_path / "results"
    proc = _run("score-dir", trapped, "--out", str(out), "--depths", "metadata", "--work", str(tmp_path / "work"))
    res = json.loads((out / "acme-5.json").read_text())
    assert res["seed"] == 5 and res["lake"] == "acme" and res["truth"] == truth
    assert res["base_vid"] == truth["traps"][0]["vid"] - 1 and res["vid"] == truth["traps"][0]["vid"]
    row = res["scores"]["metadata"]["classes"]["schema"]
    # the drop is new after the trap, so it is caught: "before" was read at the vid before the trap
    assert row["false"] == len(truth["traps"][0]["false"]) and row["caught"] == row["false"], row["misses"]
    assert res["before"]["metadata"] == len(res["flags"]["metadata"]["before"])
    assert res["detector"]["path"] == ROOT
    assert "**acme**" in proc.stdout and "| schema | P " in proc.stdout
    assert _files(trapped) == copy_files        # the trapped copy: not a file added, touched or removed
    assert _files(lake_dir) == lake_files       # nor the lake it was copied from
    assert not os.listdir(tmp_path / "work")    # the throwaway copy is gone
    rep = _run("report", str(out))
    assert "development 5, metadata" in rep.stdout
    assert f"| schema | P {row['tp']}/{row['tp'] + row['fp']} · R {row['caught']}/{row['false']}" in rep.stdout


def test_score_dir_refuses_what_is_not_a_trapped_copy_before_scoring_anything(lake_dir, tmp_path):
    half = tmp_path / "acme-1"
    half.mkdir()
    (half / MARKER).write_text(os.path.abspath(lake_dir) + "\n")   # a generation that failed: no traps.json
    proc = _run("score-dir", str(half), "--out", str(tmp_path / "r"), check=False)
    assert proc.returncode != 0 and "traps.json is missing" in proc.stderr
    assert not (tmp_path / "r").exists()
    proc = _run("score-dir", str(tmp_path / "nowhere"), "--out", str(tmp_path / "r"), check=False)
    assert proc.returncode != 0 and "no such directory" in proc.stderr
    proc = _run("score-dir", str(half), "--out", str(tmp_path / "r"), "--depths", "deep", check=False)
    assert proc.returncode != 0 and "unknown depth 'deep'" in proc.stderr


def test_base_vid_is_the_last_vid_before_the_generators_first_commit(lake_dir, tmp_path):
    from eval.traps.scoredir import base_vid

    trapped = str(tmp_path / "acme-2")
    truth = _trapped_copy(lake_dir, trapped, seed=2)
    cat = cc.Catalog.open(os.path.join(trapped, "enriched"))
    try:
        assert base_vid(cat, truth["now"]) == truth["traps"][0]["vid"] - 1
        # a commit timed after the lake's now ends the base even when another author wrote it
        assert base_vid(cat, truth["now"] - 1) < truth["traps"][0]["vid"] - 1
    finally:
        cat.close()
    with pytest.raises(SystemExit):
        from eval.traps.scoredir import read_copy

        read_copy(str(tmp_path / "absent"))


def _result(lake_name, seed, truth, after_flags):
    from eval.traps.score import score

    return {"lake": lake_name, "seed": seed, "truth": truth,
            "scores": {d: score(truth, [], after_flags) for d in ("metadata", "data")}}


def test_compare_puts_before_and_after_side_by_side_only_on_the_same_trapped_copies():
    import io

    from eval.traps.run import compare

    def truth(table):
        return {"traps": [{"id": "s", "cls": "schema", "kind": "drop", "table": table, "columns": ["c"],
                           "description": "", "tables": [table], "control": False, "loads": 1,
                           "false": [[table, "column.1.unit"]], "fixes": {f"{table}|column.1.unit": None}}],
                "routine_loads": []}

    hit = [{"table": "c.n.t", "key": "column.1.unit", "reason": "column_dropped", "status": "stale", "fixes": [],
            "message": "m", "evidence_vids": []}]
    before = [_result("acme", 1, truth("c.n.t"), []), _result("acme", 101, truth("c.n.t"), []),
              _result("acme", 2, truth("c.n.t"), [])]
    after = [_result("acme", 1, truth("c.n.t"), hit), _result("acme", 101, truth("c.n.t"), hit),
             _result("acme", 2, truth("c.n.other"), []), _result("acme", 3, truth("c.n.t"), hit)]
    out = io.StringIO()
    problems = compare(before, after, out, held_out=[101])
    text = out.getvalue()
    assert "**acme, development 1**" in text and "**acme, held-out 101**" in text
    assert "| class | metadata, before | metadata, after | data, before | data, after |" in text
    assert "| schema | P - · R 0/1 · F - | P 1/1 · R 1/1 · F 1/1 | P - · R 0/1 · F - | P 1/1 · R 1/1 · F 1/1 |" in text
    assert problems == ["acme seed 3: only after",
                        "acme seed 2: the before and after truths differ (not the same trapped copy)"]


def test_semcat_eval_traps_is_the_same_command_group():
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    exe = os.path.join(os.path.dirname(sys.executable), "semcat")
    proc = subprocess.run([exe, "eval", "traps", "score-dir", "--help"], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0 and "Score existing trapped copies" in proc.stdout, proc.stderr
    proc = subprocess.run([exe, "eval", "tpcds", "build", "--help"], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0 and "tpcgen-cli" in proc.stdout, proc.stderr


def test_score_dir_reports_every_copy_that_fails_and_writes_nothing_for_it(tmp_path):
    truth = {"seed": 1, "now": 0.0, "check_time": 1.0, "routine_loads": [],
             "traps": [{"id": "x", "cls": "schema", "kind": "drop", "table": "c.n.t", "vid": 12, "false": [],
                        "fixes": {}, "tables": ["c.n.t"], "control": False, "loads": 1}]}
    dirs = []
    for n in ("acme-1", "acme-2"):
        d = tmp_path / n
        (d / "enriched").mkdir(parents=True)
        if n == "acme-2":
            (d / "enriched" / "CURRENT").write_text("not a catalog\n")    # not a catalog at all
        (d / MARKER).write_text(str(tmp_path / "lake") + "\n")
        (d / "traps.json").write_text(json.dumps({**truth, "seed": int(n[-1])}))
        dirs.append(str(d))
    proc = _run("score-dir", ",".join(dirs), "--out", str(tmp_path / "r"), "--jobs", "2", check=False)
    assert proc.returncode != 0 and "2 copies failed" in proc.stderr, proc.stderr
    assert all(f"{d} FAILED" in proc.stderr for d in dirs)
    assert "does not hold the traps' commits" in proc.stderr or "NotFoundError" in proc.stderr
    assert os.listdir(tmp_path / "r") == []
    proc = _run("score-dir", dirs[0], "--out", str(tmp_path / "r"), "--history", "stale", check=False)
    assert proc.returncode != 0 and "has no catalog 'stale'" in proc.stderr and "one of: enriched" in proc.stderr


def test_a_trap_that_writes_nothing_may_sit_at_the_base_vid():
    """A stopped table is recorded at the vid it stopped at: the base, when it is the first trap. The
    scorer refused such copies as "not belonging together" (every seed-103 copy of this wave)."""
    from eval.traps.scoredir import holds_traps

    assert holds_traps(210, 222, [210, 211, 221])       # loads_freshness.stopped first, at the base
    assert holds_traps(210, 222, [])
    assert not holds_traps(210, 222, [209, 215])         # a trap before the generator's commits
    assert not holds_traps(210, 222, [215, 223])         # a trap past the catalog's last commit


def test_base_vid_keeps_the_lakes_own_history_written_by_the_generators_author(tmp_path):
    """The TPC-DS world's planned history (restatements, routine loads before its now) is authored
    `etl:traps` like the generator's traps: "before" must still include it, or the lake's own changes
    are scored as the traps' (they were: control alarms and renames on TPC-DS copies)."""
    from eval.fixtures.lakes import LakeBuilder
    from eval.traps.scoredir import GENERATOR_AUTHOR, base_vid

    cat = cc.Catalog.open(str(tmp_path / "data"))
    try:
        lk = LakeBuilder(cat, tmp_path / "files")
        lk.table("w.s.t", [("day", "date"), ("x", "bigint")], partition_by=["day"], at=0,
                 rows={"day": ["2026-01-01"], "x": [1]})
        own = lk.append("w.s.t", {"day": ["2026-01-02"], "x": [2]}, at=1, author=GENERATOR_AUTHOR)  # the lake's own
        now = lk.at(2)
        lk.append("w.s.t", {"day": ["2026-01-03"], "x": [3]}, at=3, author=GENERATOR_AUTHOR)       # a trap's
        assert base_vid(cat, now) == own
    finally:
        cat.close()


def test_accept_judge_sorts_each_written_fix_by_the_truth():
    from eval.traps.acceptall import judge

    ren = {"action": "rename", "params": {"old": "a", "new": "b", "scale": 0}}
    truth = {"traps": [
        {"id": "schema.rename.0", "control": False, "false": [["t", "column.1.description"], ["u", "relationship.t"]],
         "fixes": {"t|column.1.description": ren, "u|relationship.t": None}},
        {"id": "control.append.1", "control": True, "false": [["v", "table.grain"]], "fixes": {}}]}
    acc = [{"table": "t", "key": "column.1.description", "reason": "schema_changed", "fix": ren},
           {"table": "t", "key": "column.1.description", "reason": "schema_changed",
            "fix": {"action": "rename", "params": {"old": "a", "new": "c", "scale": 0}}},
           {"table": "u", "key": "relationship.t", "reason": "schema_changed", "fix": ren},   # truth: no fix
           {"table": "v", "key": "table.grain", "reason": "grain_violated", "fix": {"action": "set_keys", "params": {}}},
           {"table": "w", "key": "column.2.role", "reason": "column_renamed", "fix": ren}]
    got = judge(truth, acc, before={("w", "column.2.role", "column_renamed")})
    assert [(i["table"], i["fix"]["params"].get("new")) for i in got["right"]] == [("t", "b")]
    assert [(i["table"], i["fix"]["params"].get("new")) for i in got["wrong"]] == [("t", "c"), ("u", "b")]
    assert got["wrong"][1]["truth_fix"] is None and got["wrong"][0]["trap"] == "schema.rename.0"
    assert [i["table"] for i in got["on_true"]] == ["v"]     # a control's keys are true: its rewrite is on a true claim
    assert [i["table"] for i in got["before"]] == ["w"]


@pytest.mark.slow  # a copy of the Acme lake, a data-depth scan and accept-all in a subprocess
def test_accept_dir_accepts_on_a_throwaway_copy_and_never_writes_a_fix_the_truth_withholds(lake_dir, tmp_path):
    trapped = str(tmp_path / "acme-6")
    truth = _trapped_copy(lake_dir, trapped, seed=6)
    copy_files = _files(trapped)
    out = tmp_path / "accepted"
    proc = _run("accept-dir", trapped, "--out", str(out), "--work", str(tmp_path / "work"))
    res = json.loads((out / "acme-6.accept.json").read_text())
    assert res["seed"] == 6 and res["findings"] >= len(truth["traps"][0]["false"])
    judged = [i for v in ("right", "wrong", "on_true", "before") for i in res[v]]
    assert len(judged) == res["accepted"] <= res["offered"] <= res["findings"]
    # the dropped column's own claims go (truth: remove), each accepted as its own decision; nothing else
    # the trap made false is written (failed before the remove fix: none of them was offered)
    assert res["wrong"] == [] and res["on_true"] == [], res
    assert sorted(i["key"] for i in res["right"]) == sorted(k for _t, k in truth["traps"][0]["false"]), res
    assert "| acme-6 | " in proc.stdout
    assert _files(trapped) == copy_files and not os.listdir(tmp_path / "work")
