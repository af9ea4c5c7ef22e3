"""The staleness detector's precision and recall against the stale manifest (HARNESS.md, Stale history).

    detector_scores(stale_cat, enriched_cat, manifest, now=D0) -> {"metadata": DetectorScore, "data": ...}

- A manifest entry is *hit* when a non-fresh finding of the stale history names its (table, annotation
  key), or, for a `table.deprecated` entry (the flag that was never written), when any non-fresh finding
  names its table.
- Precision: the share of flagged (table, annotation key) pairs that are in the manifest.
- Recall: hit detectable entries / detectable entries.
- False alarms: non-fresh findings on the enriched history (where nothing is stale by construction);
  `None` when no enriched catalog is given.
Only the runner and the tests read the manifest; agents and the detector never do.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from typing import Any

from catalog_core.api import CatalogAPI

__all__ = ["DetectorScore", "detector_scores", "read_manifest", "DEPTHS"]

DEPTHS = ("metadata", "data")


@dataclass
class DetectorScore:
    depth: str
    precision: float
    recall: float
    flagged: int                 # distinct (table, annotation key) pairs flagged on the stale history
    flagged_in_manifest: int
    detectable: int
    hit: int
    false_alarms: int | None     # non-fresh findings on the enriched history
    missed: list[str] = field(default_factory=list)   # manifest annotations (detectable) not hit

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def read_manifest(lake_dir: str) -> dict[str, Any]:
    from eval.lake import MANIFEST

    path = os.path.join(lake_dir, MANIFEST)
    try:
        with open(path, encoding="utf-8") as fh:
            data: dict[str, Any] = json.load(fh)
    except OSError as e:
        raise FileNotFoundError(f"{path}: no stale manifest ({e.strerror}); build the lake with "
                                "`semcat eval build --data DIR`") from None
    if not isinstance(data.get("stale"), list):
        raise ValueError(f"{path}: not a stale manifest (no `stale` list)")
    return data


def _table(target: str) -> str:
    return ".".join(target.split(".")[:3])


def detector_scores(stale: CatalogAPI, enriched: CatalogAPI | None, manifest: dict[str, Any], *,
                    now: Any, snapshot: Any = None, enriched_snapshot: Any = None,
                    depths: tuple[str, ...] = DEPTHS) -> dict[str, DetectorScore]:
    """Precision / recall of `semantic.staleness` on the stale history, per depth."""
    import semantic as sm

    man = manifest["stale"]
    in_manifest = {(m["table"], m["key"]) for m in man}
    detectable = {(m["table"], m["key"]) for m in man if m["detectable"]}
    out: dict[str, DetectorScore] = {}
    for depth in depths:
        found = [f for f in sm.staleness(stale, snapshot=snapshot, now=now, depth=depth) if f.status != "fresh"]
        flagged = {(_table(f.target), f.annotation) for f in found if f.annotation}
        tables = {_table(f.target) for f in found}
        hit = {k for k in detectable if k in flagged or (k[1] == "table.deprecated" and k[0] in tables)}
        flagged_in = {k for k in flagged if k in in_manifest}
        alarms = None
        if enriched is not None:
            alarms = sum(1 for f in sm.staleness(enriched, snapshot=enriched_snapshot, now=now, depth=depth)
                         if f.status != "fresh")
        out[depth] = DetectorScore(
            depth=depth, precision=len(flagged_in) / max(1, len(flagged)), recall=len(hit) / max(1, len(detectable)),
            flagged=len(flagged), flagged_in_manifest=len(flagged_in), detectable=len(detectable), hit=len(hit),
            false_alarms=alarms,
            missed=sorted(m["annotation"] for m in man if m["detectable"] and (m["table"], m["key"]) not in hit))
    return out
