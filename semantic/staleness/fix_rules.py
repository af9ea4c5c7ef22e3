"""When a check's fix holds: rules a registry entry names (`Check.fix_rule`) that keep a finding's
fix only when its evidence supports it for the annotation at hand, and otherwise replace it by
`investigate` with what to look at. A rule reads the finding, its annotation and the table; it
never adds a finding or changes its reason, status or evidence."""

from __future__ import annotations

import math

from semantic.history import SchemaChange, type_family
from semantic.models import Annotation, ColumnStats, Finding, Fix
from semantic.staleness.core import Table, make_fix, metric_names, scale_of
from semantic.staleness.values_units import (
    factor_text,
    load_stats,
    old_unit_loads,
    restated_scale,
    ten_exp,
)
from semantic.units import reworded


def _basis_stats(a: Annotation, col: str, t: Table) -> object:
    """The statistics of `col` (a current name) recorded at the annotation's basis."""
    cur = next((c for c in t.cols.values() if c.name == col), None)
    b = a.provenance.basis
    ref = next((r for r in b.columns if cur is not None and r.id == cur.id), None)
    return b.stats.get(ref.name) if ref is not None else b.stats.get(col)


def every_row_moved(t: Table, a: Annotation, col: str, factor: float, restated_vid: int | None = None) -> bool:
    """Whether every row of `col` is now its value at the annotation's basis times `factor` (10^k,
    or a factor between units such as x60): the snapshot holds no file written before a rewrite
    after the annotation's basis (`load_stats`: the files grouped by the vid that wrote them: no
    older row kept its values), and that rewrite kept the rows and moved the whole range by the
    factor (`restated_scale`; or the rewrite at `restated_vid` whose rows, paired by the grain's
    keys, all took the factor: `scale_rewritten`'s evidence), or, for a power of ten, the column's
    whole range now is its range at the basis scaled by it. False when new loads arrived in another
    scale beside older rows (an append of a few rows can move the range's ends as a rewrite would:
    the files it left untouched tell them apart), and whenever a load the snapshot holds still lies
    at the basis magnitude (`old_unit_loads`: a rewrite of the old rows after the basis that kept
    their unit)."""
    loads = [v for v, _cols, _rows in load_stats(t)]
    before = _basis_stats(a, col, t)
    basis_stats = before.model_dump() if isinstance(before, ColumnStats) else before
    d = math.log10(factor) if factor > 0 else 0.0
    if not d or isinstance(basis_stats, dict) and old_unit_loads(t, col, basis_stats, d):
        return False

    def rewritten_since(vid: int) -> bool:
        return bool(loads) and min(loads) > vid

    basis = a.provenance.basis.vid or 0
    got = restated_scale(t, col, basis)
    if got is not None and math.isclose(got[0], factor, rel_tol=1e-6) and rewritten_since(got[1] - 1):
        return True
    if restated_vid is not None and restated_vid > basis and rewritten_since(restated_vid - 1):
        return True
    k = ten_exp(factor)
    return k is not None and isinstance(before, dict | ColumnStats) and scale_of(before, t.stat(col)) == k \
        and rewritten_since(basis)


def unit_fix(t: Table, a: Annotation, f: Finding) -> Finding:
    """`update_unit {column, scale}` (or `{column, factor}`) holds only (1) for a claim that is a unit: a column's `unit`
    annotation, or a metric computing with the column (the review rewrites its expression and filter on
    the values as they were: the column divided by the factor, so the metric keeps its unit); sample
    values are text a person rewrites for the new scale; a description naming the unit once and
    nothing else a change of unit makes false gets `reword_unit {column, old, new}` instead:
    `semantic.units.reworded`), and (2) when every
    row of the column moved alike (`every_row_moved`): after new loads only, in another unit beside
    older rows that kept theirs, no single unit is right for the column. Otherwise, and for a unit
    drift found with no fix, the fix is `investigate {columns}` and the suggestion says what to
    look at."""
    if f.reason != "unit_drift" and not any(x.action == "update_unit" for x in f.fixes):
        return f
    keep = [x for x in f.fixes if x.action != "update_unit"]
    ok, why, cols = [], "", []
    for x in f.fixes:
        if x.action != "update_unit":
            continue
        col, k = str(x.params.get("column")), int(x.params.get("scale") or 0)
        given = x.params.get("factor")
        factor = float(given) if isinstance(given, int | float) and not isinstance(given, bool) else 10.0 ** k
        by = factor_text(factor)
        rv = f.evidence.values.get("restated_vid")
        cols.append(col)
        said = _reworded(t, a, f, col, factor)
        def moved(col: str = col, factor: float = factor, rv: object = rv) -> bool:
            return f.evidence.values.get("whole_table") is not False and every_row_moved(
                t, a, col, factor, rv if isinstance(rv, int) and not isinstance(rv, bool) else None)

        if said is not None:
            ok.append(said)
        elif a.kind == "metric" and col.lower() in metric_names(a, literals=False) and moved():
            # every row moved alike: the review rewrites the expression on the values as they were (`col`
            # divided by the factor), so the metric keeps its unit (the round-12 cryptic tester's marketing
            # spend restated in cents, "SUM(mstae_s) / 100.0, still USD")
            ok.append(x)
        elif not (a.kind == "column" and a.field == "unit"):
            what = {"metric": "the metric's expression", "column": f"the column's {a.field}"}.get(a.kind, a.key)
            why = (f"{col}'s values moved by {by}: check {what} against the values now and rewrite it for the new "
                   "scale (the unit annotation takes the new unit)")
        elif not moved():
            why = (f"only the latest loads of {col} moved by {by}; the older rows kept the annotated unit, so no "
                   "single unit is right for the column: check those loads and restate one side, then the unit")
        else:
            ok.append(x)
    if ok:
        return f.model_copy(update={"fixes": ok + keep})
    if not cols:  # a unit drift found with no fix: say what to look at
        if keep:
            return f
        found = f.evidence.values.get("column") or (f.target.split(".")[3] if f.target.count(".") >= 3 else None)
        if not found:
            return f
        cols = [str(found)]
        # the factor as the finding records it: `scale_factor`, or a power of ten as `scale_exp` (a description
        # beside a column restated x100 in place got `investigate` for want of `scale_factor`: held-out Acme 2903)
        sf = f.evidence.values.get("scale_factor")
        exp = f.evidence.values.get("scale_exp")
        if sf is None and isinstance(exp, int) and not isinstance(exp, bool):
            sf = 10.0 ** exp
        said = _reworded(t, a, f, str(found), float(sf)) if isinstance(sf, int | float) and not isinstance(sf, bool) \
            else None
        if said is not None:
            return f.model_copy(update={"fixes": [said], "suggestion": f"say {said.params['new']} instead of "
                                                                      f"{said.params['old']}"})
        by = factor_text(float(sf)) if isinstance(sf, int | float) else "by a power of ten"
        why = f"{found}'s values moved {by}: check them against this {a.kind} annotation and rewrite it"
    cols = list(dict.fromkeys(cols))
    return f.model_copy(update={"fixes": [make_fix("investigate", columns=cols), *keep],
                                "suggestion": f.suggestion if f.suggestion and not f.fixes else why})


def _reworded(t: Table, a: Annotation, f: Finding, col: str, factor: float) -> Fix | None:
    """`reword_unit {column, old, new}` for a column's description that names the unit once and nothing
    else a change of unit makes false (`semantic.units.reworded`), when every row of `col` moved by
    `factor` (`every_row_moved`); None otherwise."""
    words = reworded(a.value, factor) if a.kind == "column" and a.field == "description" else None
    rv = f.evidence.values.get("restated_vid")
    if words is None or f.evidence.values.get("whole_table") is False or \
            not every_row_moved(t, a, col, factor, rv if isinstance(rv, int) and not isinstance(rv, bool) else None):
        return None
    return make_fix("reword_unit", column=col, old=words[0], new=words[1])


def own_column_fix(t: Table, a: Annotation, f: Finding) -> Finding:
    """A column's own annotation: `own_rename_fix` after a rename in place, `own_drop_fix` after a drop."""
    return own_drop_fix(t, a, own_rename_fix(t, a, f))


def own_drop_fix(t: Table, a: Annotation, f: Finding) -> Finding:
    """A column's own annotation whose column was dropped and that no column took the place of (no
    rename candidate: `column_dropped` with no fix) describes nothing the table holds: `remove
    {column}`, which accept applies by removing the annotation (its history keeps it). Offered only
    when the evidence is the schema alone and complete: the annotation's column id is in no current
    column and no current column carries its name (a column dropped and added again under the same
    name is read as the same column; a person says whether the claim holds of it). Other findings
    keep their fixes. Not when the commit that dropped it added a column of the same type family (one that
    may continue it with other values: a person says whether to move the claim)."""
    if a.kind != "column" or f.reason != "column_dropped" or f.fixes or a.column_id is None:
        return f
    name = str(f.evidence.values.get("column") or a.column or "")
    if a.column_id in t.cols or not name or t.col(name) is not None or (a.column and t.col(str(a.column))):
        return f
    if _dropped_alone(t, a.column_id) is None:
        return f  # the commit that dropped it added a column of its kind: whether it took its place is a person's
    return f.model_copy(update={"fixes": [make_fix("remove", column=name)],
                                "suggestion": f"{name} is no longer in the table and no column took its place: "
                                              "remove the annotation"})


def _dropped_alone(t: Table, column_id: int) -> SchemaChange | None:
    """The schema change that dropped column `column_id`, when it added no column of that column's type
    family (one that may continue it under another name: then, and when no change dropped it, None)."""
    ch = next((c for c in t.tl.schema_changes if column_id in c.before and column_id not in c.after), None)
    if ch is None or any(type_family(str(c.type)) == type_family(str(ch.before[column_id].type)) for c in ch.added):
        return None
    return ch


def relationship_drop_fix(t: Table, a: Annotation, f: Finding) -> Finding:
    """A relationship whose own key column (a column of this table its `on` joins from) was dropped and
    that nothing continues (`join_key_missing` with no fix: no rename candidate, no other column of the
    table that joins the related key) relates nothing the table holds: `remove {column}`, which accept
    applies by removing the relationship (its history keeps it). On the evidence `own_drop_fix` reads: the
    column's id is in no current column, no current column carries its name, and the commit that dropped
    it added no column of its type family (one that may hold its keys under another name: a person
    says), nor the column a join on another pair would read (`join_candidate_column`: the key moved to a new
    column, `customer_uuid`). The round-12 Acme tester's `fct_web_sessions.converted_order_id` ("remove: no column to join
    on"); a related table's key dropped is not this (the relationship may move to its new key)."""
    if a.kind != "relationship" or f.reason != "join_key_missing" or f.fixes:
        return f
    ev = f.evidence.values
    name = str(ev.get("column") or "")
    pairs = [p for p in (a.value or {}).get("on") or [] if isinstance(p, (list, tuple)) and len(p) == 2] \
        if isinstance(a.value, dict) else []
    if not name or "to" in ev or ev.get("candidate") or name not in {str(x) for x, _ in pairs}:
        return f
    ref = next((r for r in a.provenance.basis.columns if r.name == name), None)
    if ref is None or ref.id in t.cols or t.col(name) is not None:
        return f
    ch = _dropped_alone(t, ref.id)
    if ch is None:
        return f
    cand = str(ev.get("join_candidate_column") or "").lower()
    if cand and any(c.name.lower() == cand for c in ch.added):
        return f  # the commit added the column a join may move to (a new key format): a person checks it
    return f.model_copy(update={"fixes": [make_fix("remove", column=name)],
                                "suggestion": f"{name} is no longer in the table and no column took its place: "
                                              "remove the relationship"})


def own_rename_fix(t: Table, a: Annotation, f: Finding) -> Finding:
    """A column's own annotation that names the column's old name after a rename in place (the same
    field id, so the annotation already follows the column: `semantic.staleness.claim_rules`): the
    review's `rename` re-points nothing; on prose (a description, instructions) it rewrites the old name
    in the text (`review._rename_prose`), so the fix is `rename {old, new, scale: 0}`; on any other
    field `investigate {columns}`, and the suggestion says which name to rewrite. Other findings keep
    their fixes."""
    if a.kind != "column" or f.reason != "column_renamed" or a.column_id not in t.cols:
        return f
    old, new = f.evidence.values.get("column"), f.evidence.values.get("now") or t.cols[a.column_id].name
    fix = make_fix("rename", old=str(old), new=str(new), scale=0) if old and a.field in ("description", "instructions") \
        and isinstance(a.value, str) else make_fix("investigate", columns=[str(new)])
    return f.model_copy(update={"fixes": [fix], "suggestion": f"its text names the old name {old}: rewrite it to say {new}"})
