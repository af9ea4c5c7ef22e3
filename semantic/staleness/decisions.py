"""Review marks (`finding_id`, `undismissed`) and one finding per cause (`merge_by_cause`, `split_by_annotation`)."""

from __future__ import annotations

import hashlib

from semantic.models import Annotation, Finding, Fix
from semantic.staleness.core import RANK


def finding_id(f: Finding) -> str:
    """The review item id of a finding: the same at every vid it is raised at (semantic.review)."""
    key = "\x1f".join((f.target, f.annotation or "", str(f.reason)))
    return "f-" + hashlib.sha1(key.encode()).hexdigest()[:10]


def undismissed(findings: list[Finding], anns: list[Annotation]) -> list[Finding]:
    """`findings` without those a person dismissed (a `review.<id>` decision record among `anns`
    with decision `dismissed`) while nothing new happened to them: a finding whose evidence names a
    vid after the dismissal's `at_vid` is raised again."""
    dismissed: dict[str, int] = {}
    for a in anns:
        v = a.value
        if a.kind == "review" and isinstance(v, dict) and v.get("decision") == "dismissed":
            dismissed[str(v.get("item"))] = int(v.get("at_vid") or 0)
    if not dismissed:
        return findings
    return [f for f in findings
            if (at := dismissed.get(finding_id(f))) is None or max(f.evidence.vids, default=0) > at]


def split_by_annotation(f: Finding) -> list[Finding]:
    """A finding about several annotations as one finding per annotation (review items are per
    annotation; they share the cause, so a review decides the group at once)."""
    if len(f.annotations) <= 1:
        return [f]
    table = ".".join(f.target.split(".")[:3])
    col = f.evidence.values.get("column")
    return [f.model_copy(update={"annotation": k, "annotations": [k],
                                 "target": f"{table}.{col}" if k.startswith("column.") and col else table})
            for k in f.annotations]


def _looks_only(f: Finding) -> bool:
    """The finding's fixes only say what to look at (`investigate`): its evidence supports no repair
    of its annotation."""
    return bool(f.fixes) and all(x.action == "investigate" for x in f.fixes)


def merge_by_cause(findings: list[Finding]) -> list[Finding]:
    """One finding per underlying change and table: findings with the same `cause` on one table
    become one (the worst status, the first's message and reason, every annotation in
    `annotations`, the fixes and evidence vids of all), except that findings whose fix only says
    what to look at (`investigate`: no repair holds for their annotation) are merged apart from
    those offering a repair, so a repair is never listed for an annotation it does not hold for (a
    unit annotation's `update_unit` for the description the same change made false: a second
    finding of the same cause, decided in the same review group); a finding without a cause about
    an annotation that a caused finding of the table lists joins that finding; exact repeats of
    (annotation, reason) keep the worst. Order: first appearance."""
    groups: dict[tuple[str, str], list[Finding]] = {}
    order: list[tuple[str, str]] = []
    for f in findings:
        table = ".".join(f.target.split(".")[:3])
        key = (table, f"{f.cause}\x1flook" if f.cause and _looks_only(f) else f.cause if f.cause else f"~{f.annotation or ''}\x1f{f.reason}\x1f{f.target}")
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(f)
    by_ann: dict[tuple[str, str], tuple[str, str]] = {}
    for key in order:
        if not key[1].startswith("~"):
            for f in groups[key]:
                for a in f.annotations or ([f.annotation] if f.annotation else []):
                    by_ann.setdefault((key[0], a), key)
    for key in list(order):
        if key[1].startswith("~"):
            f0 = groups[key][0]
            home = by_ann.get((key[0], f0.annotation or ""))
            if home is not None:
                groups[home].extend(groups.pop(key))
                order.remove(key)
    out = []
    for key in order:
        fs = groups[key]
        if len(fs) == 1:
            out.append(fs[0])
            continue
        first = max(fs, key=lambda f: RANK[f.status])  # the worst, the first of equals
        anns = list(dict.fromkeys(a for f in [first, *fs] for a in (f.annotations or ([f.annotation] if f.annotation else []))))
        fixes: list[Fix] = []
        for f in [first, *fs]:
            for x in f.fixes:
                if x not in fixes:
                    fixes.append(x)
        targets = {f.target for f in fs}
        also = sorted({str(f.reason) for f in fs} - {str(first.reason)})
        msg = first.message + (f" (also {', '.join(also)})" if also else "") + \
            (f"; affects {len(anns)} annotations: {', '.join(anns[:8])}{'…' if len(anns) > 8 else ''}" if len(anns) > 1 else "")
        ev = first.evidence.model_copy(update={
            "vids": list(dict.fromkeys(v for f in [first, *fs] for v in f.evidence.vids)),
            "values": {**first.evidence.values, "reasons": {a: str(f.reason) for f in fs
                                                             for a in (f.annotations or [f.annotation or ""])}}})
        out.append(first.model_copy(update={
            "annotations": anns, "annotation": anns[0] if anns else first.annotation, "fixes": fixes[:10],
            "message": msg, "evidence": ev, "target": first.target if len(targets) == 1 else key[0],
            "suggestion": first.suggestion or next((f.suggestion for f in fs if f.suggestion), None)}))
    return out
