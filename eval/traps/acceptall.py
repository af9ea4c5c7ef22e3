"""Accepting everything the inbox offers on a trapped copy, judged by the truth
(`python -m eval.traps accept-dir`, issue 45: "accepting everything the inbox offers writes nothing false").

On a throwaway copy of a trapped copy (`scoredir.opened_copy`: the copy itself is never changed) a steward
runs the data-depth pass (`semantic.scan`) at the truth's check time and accepts every item the inbox
offers (`semantic.accept_all`: each fix validated against the data at commit; items without a fix are
never accepted). Each accepted item wrote the first fix of its finding on one annotation; it is judged:

- `right`: the annotation is one a trap made false and the fix written is the truth's (`score.fix_matches`);
- `wrong`: the annotation is one a trap made false and the fix written is not the truth's (or the truth
  says no fix can be written mechanically): a false fact written;
- `on_true`: the annotation is one no trap made false, and the detector did not flag it before the traps:
  a claim the changes left true was rewritten (false unless the rewrite says the same);
- `before`: the detector flagged the same annotation for the same reason before the traps (the lake's own
  history): not judged by this truth.

"Writes nothing false" is `wrong` and `on_true` both empty. The result also counts the findings listed, those
accept was offered for, and why the others were not (`skipped_by`: no_fix, needs_value, ...).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from eval.traps.score import fix_matches, flags
from eval.traps.scoredir import detector_info, opened_copy, tables_at

__all__ = ["STEWARD", "accept_copy", "judge"]

STEWARD = "steward:traps-accept"


def _truth_false(truth: dict[str, Any]) -> dict[tuple[str, str], tuple[str, Any]]:
    """(table, key) -> (trap id, the truth's fix) of every annotation a trap (not a control) made false."""
    out: dict[tuple[str, str], tuple[str, Any]] = {}
    for tr in truth["traps"]:
        if tr.get("control"):
            continue
        for t, k in tr.get("false") or []:
            out.setdefault((t, k), (tr["id"], (tr.get("fixes") or {}).get(f"{t}|{k}")))
    return out


def judge(truth: dict[str, Any], accepted: list[dict[str, Any]], before: set[tuple[str, str, str]]
          ) -> dict[str, list[dict[str, Any]]]:
    """Each accepted item ({"table", "key", "reason", "fix"}: the fix accept wrote) sorted into right / wrong /
    on_true / before (module docstring); each entry keeps the item and, when a trap made it false, the trap
    and the truth's fix."""
    false = _truth_false(truth)
    out: dict[str, list[dict[str, Any]]] = {"right": [], "wrong": [], "on_true": [], "before": []}
    for it in accepted:
        hit = false.get((it["table"], it["key"]))
        if hit is not None:
            trap, want = hit
            verdict = "right" if fix_matches(want, it["fix"]) else "wrong"
            out[verdict].append({**it, "trap": trap, "truth_fix": want})
        elif (it["table"], it["key"], it["reason"]) in before:
            out["before"].append(it)
        else:
            out["on_true"].append(it)
    return out


def accept_copy(trapped: str, history: str = "enriched", work: str | None = None,
                log: Callable[[str], None] = print) -> dict[str, Any]:
    """Scan and accept everything on a throwaway copy of `trapped`; the judged result (module docstring)."""
    import semantic as sm

    t0 = time.time()
    with opened_copy(trapped, history, work) as (cat, truth, base, last):
        check = float(truth["check_time"])
        before = {(f["table"], f["key"], f["reason"])
                  for f in flags(sm.staleness(cat, snapshot=base, depth="data", now=float(truth["now"])),
                                 tables_at(cat, base))}
        sm.scan(cat, author=STEWARD, now=check, time=check)
        items: dict[str, Any] = {}
        cursor = None
        while True:
            page = sm.review_items(cat, now=check, limit=500, cursor=cursor, kind="finding")
            items.update((it.id, it) for it in page.items)
            cursor = page.next_cursor
            if not page.truncated or cursor is None:
                break
        res = sm.accept_all(cat, STEWARD, now=check, time=check)
        accepted = []
        for d in res["decided"]:
            it = items.get(d["item"])
            if it is None:  # listed by accept_all's own read only: judged as the item it names
                accepted.append({"table": "?", "key": d["item"], "reason": "?", "fix": None})
                continue
            fix = it.fixes[0].model_dump() if it.fixes else None
            accepted.append({"table": it.table, "key": it.annotation or "*", "reason": it.reason,
                             "fix": fix, "proposed": it.proposed, "message": it.message[:300]})
        verdicts = judge(truth, accepted, before)
    out = {"seed": truth["seed"], "copy": os.path.abspath(trapped), "detector": detector_info(),
           "findings": len(items), "offered": sum(1 for it in items.values() if it.acceptable),
           "accepted": len(accepted), "skipped_by": res["skipped_by"], **verdicts,
           "seconds": round(time.time() - t0, 1)}
    log(f"  {os.path.basename(trapped.rstrip('/'))}: {out['findings']} findings, {out['accepted']} accepted: "
        f"{len(verdicts['right'])} right, {len(verdicts['wrong'])} wrong, {len(verdicts['on_true'])} on a true claim, "
        f"{len(verdicts['before'])} flagged before ({out['seconds']} s)")
    return out
