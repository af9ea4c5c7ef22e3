"""Scoring an existing trapped copy with whatever detector is importable (`python -m eval.traps score-dir`).

Generation and scoring are separate steps: `python -m eval.traps generate` leaves a trapped copy (the
lake's files and catalogs after the traps, a `.traps-copy` marker naming the lake it was copied from, and
`traps.json`, the ground truth). This module needs nothing else: it copies the trapped copy to a scratch
directory (the trapped copy is never opened, so it is never changed and can be scored again by another
detector), re-points the scratch copy's catalog from the original lake's directory to the scratch one
(`Catalog.relocate`: the lake's files are stored by absolute path; no root and no mount namespace
needed), and runs `semantic.staleness`:

- before the traps: at the last vid timed at or before the truth's `now` (the generator's commits all
  come after it; its author `etl:traps` also wrote the TPC-DS world's own history), judged at `now`;
- after them: at the latest vid, judged at the truth's `check_time`;

then scores per class (`eval.traps.score`) and returns the same per-seed result as `score` writes.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

from eval.traps.lakeview import MARKER
from eval.traps.score import flags, score

__all__ = ["TRUTH", "GENERATOR_AUTHOR", "base_vid", "holds_traps", "read_copy", "score_copy", "detector_info",
           "opened_copy", "tables_at"]

TRUTH = "traps.json"
GENERATOR_AUTHOR = "etl:traps"


class NotATrappedCopy(SystemExit):
    pass


def holds_traps(base: int, last: int, vids: list[int]) -> bool:
    """Whether a catalog whose generator's commits are base+1..last holds the traps recorded at `vids`.
    A trap that writes nothing (a table that stops loading) records the vid it was made at, which is
    `base` when it comes first, so `base` itself belongs (a seed-103 copy was refused for it)."""
    return not vids or base <= min(vids) <= max(vids) <= last


def read_copy(trapped: str, history: str | None = None) -> tuple[str, dict[str, Any]]:
    """The original lake's directory (from the marker) and the truth of a trapped copy, or a clear error
    (also when `history`, a catalog directory under the copy, is given and missing)."""
    if not os.path.isdir(trapped):
        raise NotATrappedCopy(f"{trapped}: no such directory (give a copy made by `python -m eval.traps generate`)")
    truth_path, marker = os.path.join(trapped, TRUTH), os.path.join(trapped, MARKER)
    if not os.path.exists(truth_path) or not os.path.exists(marker):
        missing = TRUTH if not os.path.exists(truth_path) else MARKER
        raise NotATrappedCopy(f"{trapped} is not a finished trapped copy: {missing} is missing (generate it with "
                              "`python -m eval.traps generate --lake LAKE --seed N --out DIR`; a failed generation "
                              "leaves no traps.json)")
    with open(marker) as fh:
        src = fh.read().strip()
    with open(truth_path) as fh:
        truth = json.load(fh)
    for k in ("seed", "now", "check_time", "traps"):
        if k not in truth:
            raise NotATrappedCopy(f"{truth_path} has no {k!r}: not a truth written by eval.traps")
    if history is not None and not os.path.isdir(os.path.join(trapped, history)):
        have = sorted(d for d in os.listdir(trapped) if os.path.isdir(os.path.join(trapped, d)))
        raise NotATrappedCopy(f"{trapped} has no catalog {history!r} (give --history, one of: {', '.join(have)})")
    return src, truth


def base_vid(cat: Any, now: float) -> int:
    """The last vid before the generator's first commit: the first commit timed after the lake's now
    (the generator's clock starts past it). Its author does not decide: a lake's own planned history
    may be written by the generator's code before its now (the TPC-DS world's restatements and routine
    loads are authored `etl:traps`), and it belongs to "before"."""
    last = cat.resolve(None)
    base = 0
    for c in cat.commits(since=0):
        if float(c.time) > now:
            return base
        base = int(c.vid)
    return int(last)


def tables_at(cat: Any, vid: int) -> set[str]:
    from catalog_core import lake

    return {lake.name_of(o.path) for o in cat.query(lake.tables_query(None), vid=vid)}


def detector_info() -> dict[str, Any]:
    """Which detector code ran: the directory `semantic` was imported from and its git commit (if any)."""
    import semantic

    where = os.path.dirname(os.path.dirname(os.path.abspath(semantic.__file__)))
    info: dict[str, Any] = {"path": where}
    try:
        head = subprocess.run(["git", "-C", where, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", where, "status", "--porcelain", "--", "semantic"], capture_output=True,
                               text=True, timeout=10)
        if head.returncode == 0:
            info["commit"] = head.stdout.strip()
            info["semantic_dirty"] = bool(dirty.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    return info


@contextlib.contextmanager
def opened_copy(trapped: str, history: str = "enriched", work: str | None = None
                ) -> Iterator[tuple[Any, dict[str, Any], int, int]]:
    """A throwaway copy of the trapped copy at `trapped` (left unchanged), its catalog `history` opened
    and re-pointed at the copy: (catalog, truth, base vid, latest vid). Removed on exit."""
    import catalog_core as cc

    src, truth = read_copy(trapped, history)
    if work:
        os.makedirs(work, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="traps-score-", dir=work)
    try:
        dst = os.path.join(scratch, "lake")
        shutil.copytree(trapped, dst, symlinks=True, ignore=shutil.ignore_patterns("semcat.lock"))
        cdir = os.path.join(dst, history)
        cat = cc.open_catalog(cdir, offer_create=False)
        try:
            cat.relocate(os.path.abspath(src), os.path.abspath(dst))
            base = base_vid(cat, float(truth["now"]))
            last = int(cat.resolve(None))
            vids = [int(t["vid"]) for t in truth["traps"] if t.get("vid") is not None]
            if not holds_traps(base, last, vids):
                raise NotATrappedCopy(f"{trapped}: its catalog {history!r} (vids up to {last}, the generator's from "
                                      f"{base + 1}) does not hold the traps' commits (vids {min(vids)}..{max(vids)} "
                                      "in traps.json): the copy and its truth do not belong together")
            yield cat, truth, base, last
        finally:
            cat.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def score_copy(trapped: str, history: str = "enriched", depths: tuple[str, ...] = ("metadata", "data"),
               work: str | None = None, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Score the trapped copy at `trapped` (left unchanged) with the importable detector; the result is
    what `python -m eval.traps score` writes per seed (plus `copy`, `detector`, `seconds`)."""
    import semantic as sm

    t0 = time.time()
    with opened_copy(trapped, history, work) as (cat, truth, base, last):
        before_tables, after_tables = tables_at(cat, base), tables_at(cat, last)
        out: dict[str, Any] = {"seed": truth["seed"], "truth": truth, "scores": {}, "problems": [],
                               "before": {}, "flags": {}, "copy": os.path.abspath(trapped),
                               "base_vid": base, "vid": last, "detector": detector_info()}
        for d in depths:
            b = flags(sm.staleness(cat, snapshot=base, depth=d, now=float(truth["now"])), before_tables)
            a = flags(sm.staleness(cat, snapshot=last, depth=d, now=float(truth["check_time"])), after_tables)
            out["before"][d] = len(b)
            out["scores"][d] = score(truth, b, a)
            out["flags"][d] = {"before": b, "after": a}
            log(f"  {os.path.basename(trapped.rstrip('/'))} {d}: {len(b)} flags before, {len(a)} after "
                f"({round(time.time() - t0, 1)} s)")
    out["seconds"] = round(time.time() - t0, 1)
    return out
