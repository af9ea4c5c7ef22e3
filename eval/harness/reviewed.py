"""The `stale+reviewed` condition's catalog (issue 49): the stale history after a scripted steward has
worked the review inbox with the public review API, the end-to-end value of detection plus review.

    build_reviewed(LAKE)   # LAKE/reviewed (a copy of LAKE/stale, reviewed) and LAKE/reviewed_report.json

The steward, at the lake's now:
  1. runs the data-depth pass (`sm.scan`), so the inbox holds what only the data shows;
  2. accepts every finding whose fix the review loop validates (`sm.accept_all`: never a finding without
     a fix the evidence supports); a fix that changed a table can make another table's stored pass outdated, so it scans again and accepts again while a round still decides something
     (at most ROUNDS);
  3. dismisses every finding left open, with a reason naming why accept was not offered.

The report compares what the steward wrote with the lake's manifest and its enriched history (the
annotations as a team that kept up would have them): every accepted write is `fixed` (a stale
annotation now equal to the enriched one), `partial` (a stale annotation changed, not to the enriched
value), `reaffirmed` (an annotation the manifest says is true, written again with the enriched value)
or `false_fact` (an annotation the manifest says is true, now different from the enriched history:
a false fact the review wrote). Nothing of it is shown to agents: the condition serves LAKE/reviewed
like stale+detect serves LAKE/stale.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from typing import Any

__all__ = ["REVIEWED", "REPORT", "STEWARD", "ROUNDS", "build_reviewed", "steward", "compare", "annotation_values", "same_value"]

REVIEWED = "reviewed"
REPORT = "reviewed_report.json"
STEWARD = "steward:scripted"
ROUNDS = 5
NOTE = "scripted steward: every fix the review loop validates is accepted"


def steward(cat: Any, *, now: float, time: float, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Work the whole inbox of `cat` at `now` (see the module); commits at `time` and after. Returns
    {"rounds": [...], "accepted": [{"item", "vid", "table", "annotation"}], "dismissed": [...],
    "left_open": [...], "skipped_by": {code: n}}."""
    import semantic as sm
    from semantic.review import ReviewRefusedError

    clock = [time]

    def tick() -> float:
        clock[0] += 1.0
        return clock[0]

    accepted: list[dict[str, Any]] = []
    rounds: list[dict[str, Any]] = []
    last: dict[str, Any] = {}
    for r in range(ROUNDS):
        scanned = sm.scan(cat, author=STEWARD, now=now, time=tick(), changed_only=r > 0)
        before = {i.id: i for i in _findings(cat, now)}
        res = sm.accept_all(cat, STEWARD, NOTE, now=now, time=tick())  # every finding the loop validates
        for d in res["decided"]:
            it = before.get(d["item"])
            accepted.append({"item": d["item"], "vid": d["vid"], "table": it.table if it else None,
                             "annotation": (it.proposed_key or it.annotation) if it else None,
                             "reason": it.reason if it else None})
        last = res
        rounds.append({"scan_vid": scanned.vid, "scan_findings": scanned.findings, "accepted": len(res["decided"]),
                       "skipped_by": res["skipped_by"],
                       "skipped": [{**x, "table": before[x["item"]].table if x["item"] in before else None,
                                    "annotation": before[x["item"]].annotation if x["item"] in before else None}
                                   for x in res["skipped"]]})
        log(f"review round {r + 1}: scan stored {scanned.findings} data findings; accepted {len(res['decided'])}, "
            f"left {sum(res['skipped_by'].values())} ({res['skipped_by']})")
        if not res["decided"]:
            break
    why = {x["item"]: x["code"] for x in last.get("skipped", [])}
    dismissed: list[dict[str, Any]] = []
    left: list[dict[str, Any]] = []
    for it in _findings(cat, now):
        code = why.get(it.id) or it.refused or "not_offered"
        try:
            v = sm.dismiss(cat, it, STEWARD, f"scripted steward: accept not offered ({code})", now=now, time=tick())
            dismissed.append({"item": it.id, "vid": v, "table": it.table, "annotation": it.annotation, "code": code})
        except (ReviewRefusedError, ValueError) as exc:  # e.g. outdated: the steward leaves it open
            left.append({"item": it.id, "table": it.table, "annotation": it.annotation, "why": str(exc)})
        except Exception as exc:  # noqa: BLE001 - a conflict or a finding gone: recorded, never fatal
            left.append({"item": it.id, "table": it.table, "annotation": it.annotation, "why": str(exc)})
    by: dict[str, int] = {}
    for d in dismissed:
        by[d["code"]] = by.get(d["code"], 0) + 1
    log(f"review: accepted {len(accepted)}, dismissed {len(dismissed)} ({by}), left open {len(left)}")
    return {"rounds": rounds, "accepted": accepted, "dismissed": dismissed, "left_open": left, "dismissed_by": by}


def _findings(cat: Any, now: float) -> list[Any]:
    """Every open finding item of the inbox (all pages)."""
    import semantic as sm

    out, cursor = [], None
    while True:
        page = sm.review_items(cat, now=now, limit=500, cursor=cursor, kind="finding")
        out += page.items
        if not page.truncated:
            return out
        cursor = page.next_cursor


def annotation_values(cat: Any) -> dict[tuple[str, str], Any]:
    """(table, key) -> value of every annotation of `cat` at its latest vid, review records left out."""
    from semantic.annotations import read_catalog_annotations

    return {(t, a.key): a.value for t, anns in read_catalog_annotations(cat).items() for a in anns
            if a.kind != "review"}


def same_value(a: Any, b: Any) -> bool:
    """Equal values; lists of scalars (enums, sample values) compare as sets."""
    if isinstance(a, list) and isinstance(b, list) and all(not isinstance(x, (dict, list)) for x in a + b):
        return {json.dumps(x, sort_keys=True) for x in a} == {json.dumps(x, sort_keys=True) for x in b}
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def compare(stale: dict[tuple[str, str], Any], reviewed: dict[tuple[str, str], Any],
            enriched: dict[tuple[str, str], Any] | None, manifest: dict[str, Any] | None) -> dict[str, Any]:
    """What the review changed (annotations of `reviewed` that differ from `stale`: written or removed),
    each judged against the manifest and the enriched history (see the module)."""
    gone = object()
    stale_keys = {(m["table"], m["key"]) for m in (manifest or {}).get("stale", [])}
    changed = sorted(k for k in set(stale) | set(reviewed)
                     if not same_value(stale.get(k, gone), reviewed.get(k, gone)) or (k in stale) != (k in reviewed))
    out: dict[str, list[dict[str, Any]]] = {"fixed": [], "partial": [], "reaffirmed": [], "false_fact": [],
                                            "unjudged": []}
    for t, k in changed:
        rec = {"table": t, "key": k, "stale": stale.get((t, k)), "reviewed": reviewed.get((t, k)),
               "stale_per_manifest": (t, k) in stale_keys}
        if enriched is None:
            out["unjudged"].append(rec)
            continue
        rec["enriched"] = enriched.get((t, k))
        right = same_value(reviewed.get((t, k), gone), enriched.get((t, k), gone))
        if (t, k) in stale_keys:
            out["fixed" if right else "partial"].append(rec)
        else:
            out["reaffirmed" if right else "false_fact"].append(rec)
    counts = {k: len(v) for k, v in out.items()}
    return {"changed": len(changed), "counts": counts, **out}


def build_reviewed(root: str, *, now: float | None = None, force: bool = False,
                   log: Callable[[str], None] = print) -> dict[str, Any]:
    """LAKE/reviewed: a copy of LAKE/stale after the steward (`steward`), and LAKE/reviewed_report.json
    (what the steward did and `compare`'s judgement). The stale catalog must not be open elsewhere
    while it is copied. `now`: the lake's now (lake.json `d0`) unless given. Returns the report."""
    import catalog_core as cc
    from eval.harness.conditions import history_dir, lake_now
    from eval.lake import MANIFEST

    src, dst = history_dir(root, "stale"), history_dir(root, REVIEWED)
    if not os.path.isdir(src):
        raise FileNotFoundError(f"{src}: the stale history is missing; build the lake first (`semcat eval build "
                                f"--data {root}`)")
    if os.path.exists(dst):
        if not force:
            raise FileExistsError(f"{dst} exists; pass force=True (`--force`) to review the stale history again")
        shutil.rmtree(dst)
    tmp = dst + ".partial"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp)
    t_now = now if now is not None else lake_now(root).timestamp()
    manifest = None
    if os.path.exists(os.path.join(root, MANIFEST)):
        with open(os.path.join(root, MANIFEST), encoding="utf-8") as fh:
            manifest = json.load(fh)
    cat = cc.Catalog.open(tmp)
    try:
        stale = annotation_values(cat)
        last = cat.commits(limit=1)
        start = max([t_now] + [c.time for c in last])
        did = steward(cat, now=t_now, time=start, log=log)
        reviewed = annotation_values(cat)
    finally:
        cat.close()
    enriched = None
    if os.path.isdir(history_dir(root, "enriched")):
        ecat = cc.Catalog.open(history_dir(root, "enriched"))
        try:
            enriched = annotation_values(ecat)
        finally:
            ecat.close()
    judged = compare(stale, reviewed, enriched, manifest)
    os.rename(tmp, dst)
    report = {"now": t_now, "steward": STEWARD, **{k: v for k, v in did.items()}, "judged": judged,
              "summary": {"accepted": len(did["accepted"]), "dismissed": len(did["dismissed"]),
                          "left_open": len(did["left_open"]), **judged["counts"]}}
    with open(os.path.join(root, REPORT), "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=1, default=str)
    log(f"reviewed history: {report['summary']}")
    return report
