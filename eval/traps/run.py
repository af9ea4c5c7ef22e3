"""One seed end to end: copy the lake, flag before (at the lake's now), apply the traps, flag after
(at the truth's check time) at each depth, score."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import IO, Any

from eval.traps.score import aggregate, flags, score, table_rows
from eval.traps.taxonomy import CLASSES

__all__ = ["run_seed", "seeds_of", "SEEDS_FILE", "write_table", "DEPTHS"]

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


def run_seed(lake_root: str, history: str, seed: int, dst: str, per_class: int = 1,
             depths: tuple[str, ...] = DEPTHS, log: Callable[[str], None] = print) -> dict[str, Any]:
    import catalog_core as cc
    from eval.traps.generator import generate
    from eval.traps.lakeview import copy_lake, lake_now

    cdir = copy_lake(lake_root, dst, history)
    cat = cc.Catalog.open(cdir)
    try:
        now = lake_now(dst, cat)
    finally:
        cat.close()
    before = {d: _flags(cdir, now, d) for d in depths}
    log(f"seed {seed}: lake now {now}, before: " + ", ".join(f"{d} {len(v)} flags" for d, v in before.items()))
    truth = generate(cdir, seed, now, per_class=per_class, spark=spark(), log=log)
    with open(os.path.join(dst, "traps.json"), "w") as fh:
        json.dump(truth, fh, indent=1, default=str)
    out: dict[str, Any] = {"seed": seed, "truth": truth, "scores": {}}
    for d in depths:
        after = _flags(cdir, truth["check_time"], d)
        out["scores"][d] = score(truth, before[d], after)
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
