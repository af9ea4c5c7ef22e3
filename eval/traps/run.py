"""One seed end to end: copy the lake, flag before (at the lake's now), apply the traps, flag after
(at the truth's check time) at each depth, score."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import IO, Any

from eval.traps.score import aggregate, flags, score, table_rows
from eval.traps.taxonomy import CLASSES

__all__ = ["run_seed", "seeds_of", "SEEDS_FILE", "write_table", "DEPTHS", "ISOLATIONS", "can_mount", "parse_writers"]

SEEDS_FILE = os.path.join(os.path.dirname(__file__), "seeds.json")
DEPTHS = ("metadata", "data")
_SPARK: list[Any] = []


def seeds_of(which: str) -> list[int]:
    with open(SEEDS_FILE) as fh:
        fixed = json.load(fh)
    if which in ("development", "dev"):
        return list(fixed["development"])
    if which in ("held_out", "held-out", "heldout"):
        return list(fixed["held_out"])
    try:
        return [int(x) for x in which.split(",") if x.strip()]
    except ValueError:
        raise SystemExit(f"--seeds must be development, held_out or a comma list of integers, got {which!r}") from None


def parse_writers(text: str) -> tuple[str, ...]:
    """`--writers`: a comma list of the generator's write paths (spark, engine, iceberg)."""
    from eval.traps.generator import WRITERS

    got = tuple(w.strip().lower() for w in text.split(",") if w.strip())
    bad = [w for w in got if w not in WRITERS]
    if bad or not got:
        raise SystemExit(f"--writers must be a comma list of {', '.join(WRITERS)}, got {text!r}")
    return tuple(w for w in WRITERS if w in got)


def spark() -> Any:
    if not _SPARK:
        from spark_bridge import local_session

        _SPARK.append(local_session(app_name="semcat-traps", cores=2))
    return _SPARK[0]


def _flags(cdir: str, now: float, depth: str) -> list[dict[str, Any]]:
    import catalog_core as cc
    import semantic as sm
    from catalog_core import lake

    cat = cc.Catalog.open(cdir)
    try:
        tables = {lake.name_of(o.path) for o in cat.query(lake.tables_query(None))}
        return flags(sm.staleness(cat, depth=depth, now=now), tables)
    finally:
        cat.close()


ISOLATIONS = ("mount", "copy")


def can_mount() -> bool:
    """Whether this process can run a seed in a private mount namespace (root, Linux, util-linux `unshare`)."""
    import shutil

    return bool(shutil.which("unshare")) and hasattr(os, "geteuid") and os.geteuid() == 0


def run_seed(lake_root: str, history: str, seed: int, dst: str, per_class: int = 1,
             depths: tuple[str, ...] = DEPTHS, log: Callable[[str], None] = print,
             isolation: str | None = None, timeout: float | None = None,
             writers: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Copy the lake at `lake_root` to `dst`, then, in a child process, flag, trap, flag again and score on
    the copy; the lake itself is never opened. The catalog names the lake's files by absolute path, so the
    child must see the copy's files at those paths or be told where they are:

    - `mount` (the default as root with util-linux `unshare`): the child runs in a private mount
      namespace where the copy is bind-mounted over `lake_root`;
    - `copy` (the default otherwise): the copy's catalog is re-pointed from `lake_root` to `dst`
      (`Catalog.relocate`, every stored version) before the child runs on `dst`, and back after it.

    Either way the trapped copy left at `dst` names `lake_root` (what `score-dir` expects) and the traps,
    chosen by the seed from the catalog's tables, are the same. `timeout` (seconds): the child is killed
    after it and `subprocess.TimeoutExpired` raised (tests bound a run that hangs). `writers`: the write
    paths the traps may take (default all: `eval.traps.generator.WRITERS`)."""
    import subprocess
    import sys

    from eval.traps.lakeview import copy_lake

    how = isolation or ("mount" if can_mount() else "copy")
    if how not in ISOLATIONS:
        raise SystemExit(f"isolation must be one of {', '.join(ISOLATIONS)}, got {how!r}")
    if how == "mount" and not can_mount():
        raise SystemExit("--isolation mount runs each seed on a copy bind-mounted over the lake's own path, in a "
                         "private mount namespace: run it as root on Linux with util-linux's `unshare`, or use "
                         "--isolation copy")
    src, here = os.path.abspath(lake_root), os.path.abspath(dst)
    copy_lake(src, here)
    out = os.path.join(here, "result.json")
    seen_as = src if how == "mount" else here
    inner = [sys.executable, "-m", "eval.traps", "_seed", "--lake", seen_as, "--history", history, "--seed", str(seed),
             "--per-class", str(per_class), "--depths", ",".join(depths), "--result", out]
    if writers is not None:
        inner += ["--writers", ",".join(writers)]
    if how == "mount":
        cmd = ["unshare", "-m", "--propagation", "private", "sh", "-c",
               'mount --bind "$0" "$1" && shift && exec "$@"', here, src, *inner]
    else:
        _repoint(os.path.join(here, history), src, here)
        cmd = inner
    try:
        proc = subprocess.run(cmd, stdout=None, stderr=None, timeout=timeout)
    finally:
        if how == "copy":
            _repoint(os.path.join(here, history), here, src)
    if proc.returncode != 0 or not os.path.exists(out):
        raise RuntimeError(f"seed {seed} on {lake_root} failed (exit {proc.returncode}); see the output above")
    with open(out) as fh:
        return dict(json.load(fh))


def _repoint(cdir: str, old: str, new: str) -> int:
    import catalog_core as cc

    cat = cc.Catalog.open(cdir)
    try:
        return int(cat.relocate(old, new))
    finally:
        cat.close()


def seed_in_place(lake_root: str, history: str, seed: int, per_class: int, depths: tuple[str, ...],
                  log: Callable[[str], None] = print, writers: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The seed's work on the lake at `lake_root`, which must show a copy (`run_seed` mounts or re-points one
    there)."""
    import catalog_core as cc
    from eval.traps.generator import generate
    from eval.traps.lakeview import is_copy, lake_now

    if not is_copy(lake_root):
        raise SystemExit(f"{lake_root} is not a copy made by eval.traps (no marker): refusing to change it")
    cdir = os.path.join(lake_root, history)
    cat = cc.Catalog.open(cdir)
    try:
        now = lake_now(lake_root, cat)
    finally:
        cat.close()
    before = {d: _flags(cdir, now, d) for d in depths}
    from eval.traps.lakeview import LakeView
    from eval.traps.verify import verify

    cat = cc.Catalog.open(cdir)
    try:
        view = LakeView(cat)
    finally:
        cat.close()
    log(f"seed {seed}: lake now {now}, before: " + ", ".join(f"{d} {len(v)} flags" for d, v in before.items()))
    from eval.traps.generator import WRITERS

    truth = generate(cdir, seed, now, per_class=per_class, spark=spark(), log=log, writers=writers or WRITERS,
                     storage_root=lake_root)
    with open(os.path.join(lake_root, "traps.json"), "w") as fh:
        json.dump(truth, fh, indent=1, default=str)
    cat = cc.Catalog.open(cdir)
    try:
        problems = verify(cat, truth, view)
    finally:
        cat.close()
    for p in problems:
        log(f"  truth check: {p}")
    out: dict[str, Any] = {"seed": seed, "truth": truth, "scores": {}, "problems": problems,
                           "before": {d: len(v) for d, v in before.items()}, "flags": {}}
    for d in depths:
        after = _flags(cdir, truth["check_time"], d)
        out["scores"][d] = score(truth, before[d], after)
        out["flags"][d] = {"before": before[d], "after": after}  # to re-score under another rule
    return out


def write_table(results: list[dict[str, Any]], fh: IO[str]) -> None:
    """The per-class table (markdown) of these results, one block per lake and depth."""
    lakes = sorted({r.get("lake", "?") for r in results})
    for lk in lakes:
        rs = [r for r in results if r.get("lake", "?") == lk]
        seeds = ",".join(str(r["seed"]) for r in rs)
        for d in DEPTHS:
            runs = [r["scores"][d] for r in rs if d in r["scores"]]
            if not runs:
                continue
            agg = aggregate(runs)
            fh.write(f"\n{lk}, seeds {seeds}, {d} depth\n\n| class | precision | recall | fix accuracy |\n|---|---|---|---|\n")
            for row in table_rows(agg, list(CLASSES)):
                fh.write("| " + " | ".join(row) + " |\n")
            fh.write(f"| controls | {agg['control_alarms']} false alarms in {agg['control_loads']} loads "
                     f"({agg['alarms_per_20']:.2f} per 20) | | |\n")
            fh.write(f"\nnew flags on tables nothing wrote: {agg['elsewhere']}\n")


def _cell(v: dict[str, int] | None) -> str:
    if not v:
        return "-"

    def r(a: int, b: int) -> str:
        return f"{a}/{b}" if b else "-"
    return f"P {r(v['tp'], v['tp'] + v['fp'])} · R {r(v['caught'], v['false'])} · F {r(v['fix_right'], v['fix_total'])}"


def report(results: list[dict[str, Any]], fh: IO[str], held_out: list[int] | None = None) -> None:
    """One markdown table per lake: a row per class, a column per seed set and depth; each cell
    precision (P), recall (R) and fix accuracy (F) as counts summed over the seeds."""
    held = set(held_out if held_out is not None else seeds_of("held_out"))
    for lk in sorted({r.get("lake", "?") for r in results}):
        cols = []
        for label, pick in (("development", lambda s: s not in held), ("held-out", lambda s: s in held)):
            rs = [r for r in results if r.get("lake", "?") == lk and pick(r["seed"])]
            if not rs:
                continue
            seeds = ",".join(str(r["seed"]) for r in sorted(rs, key=lambda r: r["seed"]))
            for d in DEPTHS:
                runs = [r["scores"][d] for r in rs if d in r["scores"]]
                if runs:
                    cols.append((f"{label} {seeds}, {d}", aggregate(runs)))
        if not cols:
            continue
        fh.write(f"\n**{lk}**\n\n| class | " + " | ".join(c for c, _ in cols) + " |\n|---|" + "---|" * len(cols) + "\n")
        for cls in CLASSES:
            fh.write(f"| {cls} | " + " | ".join(_cell(a["classes"].get(cls)) for _, a in cols) + " |\n")
        fh.write("| all classes | " + " | ".join(_cell(_total(a)) for _, a in cols) + " |\n")
        fh.write("| controls: false alarms / loads (per 20) | " + " | ".join(
            f"{a['control_alarms']}/{a['control_loads']} ({a['alarms_per_20']:.1f})" for _, a in cols) + " |\n")
        fh.write("| new flags on tables nothing wrote | " + " | ".join(str(a["elsewhere"]) for _, a in cols) + " |\n")
        writers = sorted({w for _, a in cols for w in a.get("writers", {})})
        if writers:
            fh.write(f"\n*{lk}, by writer* (R: annotations made false that were flagged; P: new flags on an annotation "
                     "made false, of the new flags on the tables that writer's traps wrote; traps: how many)\n\n"
                     "| writer | " + " | ".join(c for c, _ in cols) + " |\n|---|" + "---|" * len(cols) + "\n")
            for w in writers:
                fh.write(f"| {w} | " + " | ".join(_wcell(a.get("writers", {}).get(w)) for _, a in cols) + " |\n")


def _wcell(v: dict[str, int] | None) -> str:
    if not v:
        return "-"

    def r(a: int, b: int) -> str:
        return f"{a}/{b} ({a / b:.2f})" if b else "-"
    return f"R {r(v['caught'], v['false'])} · P {r(v['tp'], v['tp'] + v['fp'])} · {v.get('traps', 0)} traps"


def _total(agg: dict[str, Any]) -> dict[str, int]:
    out = {"false": 0, "caught": 0, "tp": 0, "fp": 0, "fix_right": 0, "fix_total": 0}
    for v in agg["classes"].values():
        for k in out:
            out[k] += v[k]
    return out


def misses(results: list[dict[str, Any]], fh: IO[str]) -> None:
    """Every miss, false alarm and wrong fix, per lake, seed and depth (the evidence behind the table)."""
    for r in sorted(results, key=lambda r: (r.get("lake", "?"), r["seed"])):
        kinds = {t["id"]: t["kind"] for t in r["truth"]["traps"]}
        for d in DEPTHS:
            s = r["scores"].get(d)
            if not s:
                continue
            head = f"{r.get('lake', '?')} seed {r['seed']} {d}"
            for c, v in s["classes"].items():
                for m in v["misses"]:
                    fh.write(f"{head}: MISS {c}/{kinds.get(m['trap'], '?')} {m['table']} {m['key']}: {m['change']}\n")
                for m in v["false_alarms"]:
                    fh.write(f"{head}: FALSE ALARM {c} {m['table']} {m['key']} {m['reasons']}: {m['message'][:160]}\n")
                for m in v["wrong_fixes"]:
                    fh.write(f"{head}: WRONG FIX {c}/{kinds.get(m['trap'], '?')} {m['table']} {m['key']} "
                             f"{m['reasons']}: want {json.dumps(m['want'])}, offered {json.dumps(m['offered'])}\n")
            for m in s["control_alarms"]:
                fh.write(f"{head}: CONTROL ALARM {m['table']} {m['key']} {m['reasons']}: {m['message'][:160]}\n")
            for m in s["elsewhere"]:
                fh.write(f"{head}: ELSEWHERE {m['table']} {m['key']} {m['reasons']}: {m['message'][:160]}\n")


def _key(r: dict[str, Any]) -> tuple[str, int]:
    return (str(r.get("lake", "?")), int(r["seed"]))


def compare(before: list[dict[str, Any]], after: list[dict[str, Any]], fh: IO[str],
            held_out: list[int] | None = None) -> list[str]:
    """Before/after per lake and seed set (development, held-out): a row per class, a column per depth
    and side; each cell P · R · F as counts summed over the seeds that both sides scored. Returns the
    problems: a (lake, seed) scored on one side only, or on copies whose truths differ (then the two
    sides did not score the same traps, and that seed is left out)."""
    held = set(held_out if held_out is not None else seeds_of("held_out"))
    b, a = {_key(r): r for r in before}, {_key(r): r for r in after}
    problems = [f"{lk} seed {s}: only {'before' if k in b else 'after'}" for k in sorted(set(b) ^ set(a))
                for lk, s in [k]]
    same = []
    for k in sorted(set(b) & set(a)):
        if b[k]["truth"] != a[k]["truth"]:
            problems.append(f"{k[0]} seed {k[1]}: the before and after truths differ (not the same trapped copy)")
        else:
            same.append(k)
    for lk in sorted({k[0] for k in same}):
        for label, pick in (("development", lambda s: s not in held), ("held-out", lambda s: s in held)):
            keys = [k for k in same if k[0] == lk and pick(k[1])]
            if not keys:
                continue
            cols = []
            for d in DEPTHS:
                for side, runs in (("before", b), ("after", a)):
                    scored = [runs[k]["scores"][d] for k in keys if d in runs[k]["scores"]]
                    if scored:
                        cols.append((f"{d}, {side}", aggregate(scored)))
            if not cols:
                continue
            seeds = ",".join(str(k[1]) for k in keys)
            fh.write(f"\n**{lk}, {label} {seeds}**\n\n| class | " + " | ".join(c for c, _ in cols) + " |\n|---|"
                     + "---|" * len(cols) + "\n")
            for cls in CLASSES:
                fh.write(f"| {cls} | " + " | ".join(_cell(x["classes"].get(cls)) for _, x in cols) + " |\n")
            fh.write("| all classes | " + " | ".join(_cell(_total(x)) for _, x in cols) + " |\n")
            fh.write("| controls: false alarms / loads (per 20) | " + " | ".join(
                f"{x['control_alarms']}/{x['control_loads']} ({x['alarms_per_20']:.1f})" for _, x in cols) + " |\n")
            fh.write("| new flags on tables nothing wrote | " + " | ".join(str(x["elsewhere"]) for _, x in cols)
                     + " |\n")
    for p in problems:
        fh.write(f"\nNOTE: {p}\n")
    return problems
