"""Checks that each recorded trap is what the catalog holds after the run: the change is there (read
back through the catalog: schema, statistics, DuckDB over the table's files), every annotation the
truth calls false exists, and the commit the truth names was made by the recorded writer at the recorded
time (an Iceberg REST commit's author is `iceberg:<principal>`, the bridge's and the engine's the
generator's `etl:traps`). Run by `eval.traps.run` on the trapped copy; `problems` empty means the truth
matches the catalog."""

from __future__ import annotations

from typing import Any

from eval.traps.generator import writer_of
from eval.traps.lakeview import LakeView

__all__ = ["verify"]


def _one(cat: Any, sql: str) -> tuple[Any, ...]:
    import catalog_core as cc

    con = cc.open_duckdb(cat)
    try:
        row = con.execute(sql).fetchone()
    finally:
        con.close()
    return tuple(row or ())


def verify(cat: Any, truth: dict[str, Any], before: LakeView) -> list[str]:  # noqa: C901 - one check per kind
    import semantic as sm

    after = LakeView(cat)
    problems: list[str] = []

    def need(ok: bool, trap: dict[str, Any], what: str) -> None:
        if not ok:
            problems.append(f"{trap['id']} on {trap['table']}: {what}")

    commits: dict[int, Any] = {}
    vids = [int(t["vid"]) for t in truth["traps"] if t.get("vid")] + \
        [int(r["vid"]) for r in truth.get("routine_loads", []) if r.get("vid")]
    if vids:
        commits = {c.vid: c for c in cat.commits(since=min(vids) - 1, until=max(vids))}

    def wrote(trap: dict[str, Any], vid: Any, at: Any) -> None:
        w = writer_of(trap)
        if w == "none" or not vid:
            return
        c = commits.get(int(vid))
        if c is None:
            problems.append(f"{trap.get('id', trap.get('table'))}: no commit at vid {vid}")
            return
        by_rest = str(c.author).startswith("iceberg")
        if by_rest != (w == "iceberg"):
            problems.append(f"{trap.get('id', trap.get('table'))}: written by {w} in the truth, but vid {vid}'s "
                            f"author is {c.author!r}")
        if at is not None and abs(float(c.time) - float(at)) > 1e-3:
            problems.append(f"{trap.get('id', trap.get('table'))}: vid {vid} committed at {c.time}, the truth says {at}")

    for t in truth["traps"]:
        if t["kind"] not in ("stuck_reruns", "new_nullable_column"):  # several commits / the routine load's time
            wrote(t, t.get("vid"), t.get("time"))
    for r in truth.get("routine_loads", []):
        wrote({"kind": "routine", "writer": r.get("writer", "spark"), "table": r["table"]}, r.get("vid"), None)
    for t in truth["traps"]:
        if t["control"]:
            need(t["false"] == [] and t["fixes"] == {}, t, "a control records annotations made false")
            continue
        need(bool(t["false"]) or bool(t.get("pending")), t, "no annotation made false (nor pending)")
        need(all(f"{a}|{b}" in t["fixes"] for a, b in t["false"]), t, "a false annotation without a fix entry")
        for tb, key in t["false"]:
            held = {a.key for a in sm.read_annotations(cat, tb)}
            if t["kind"] == "replacement_beside" and (tb, key) == (t["table"], "table.deprecated"):
                # the claim the change calls for and the table lacks: absent, as the truth says
                need(key not in held, t, f"{tb} already has {key}, which the truth lists as lacking")
                continue
            need(key in held, t, f"{tb} has no annotation {key}")
        if t["time"] is not None:
            need(t["time"] > truth["now"], t, "committed before the lake's now")
        old, new = before.tables.get(t["table"]), after.tables.get(t["table"])
        if old is None or new is None:
            need(False, t, "table missing")
            continue
        kind, cols, name = t["kind"], t["columns"], t["table"]
        if kind in ("drop", "restate_scaled"):
            need(old.col(cols[0]) is not None and new.col(cols[0]) is None, t, f"{cols[0]} still there")
            if kind == "restate_scaled":
                need(new.col(cols[1]) is not None, t, f"{cols[1]} missing")
        elif kind in ("rename", "key_renamed"):
            oc, nc = old.col(cols[0]), new.col(cols[1])
            need(new.col(cols[0]) is None and nc is not None and oc is not None and nc.id == oc.id, t,
                 f"{cols[0]} not renamed {cols[1]} (same id)")
        elif kind == "type_change":
            need(new.type_of(cols[0]).lower() == "string", t, f"{cols[0]} is {new.type_of(cols[0])}")
        elif kind in ("enum_added_inside", "enum_added_outside"):
            val = next(f for f in t["fixes"].values() if f)["params"]["values"][0]
            n = _one(cat, f"SELECT count(*) FROM {name} WHERE \"{cols[0]}\" = '{val}'")[0]
            need(n > 0, t, f"no row holds {val!r}")
        elif kind in ("enum_removed", "categories_merged", "metric_filter_value_renamed"):
            gone = t["description"].split("'")[1]
            n = _one(cat, f"SELECT count(*) FROM {name} WHERE \"{cols[0]}\" = '{gone}'")[0]
            need(n == 0, t, f"rows still hold {gone!r}")
        elif kind in ("scd2_versions", "periodic_snapshot", "duplicate_load"):
            keys = ", ".join(f'"{k}"' for k in old.grain_keys())
            total, distinct = _one(cat, f"SELECT count(*), count(DISTINCT ({keys})) FROM {name}")
            need(total > distinct, t, f"the grain keys are still unique ({total} rows)")
        elif kind in ("stopped", "stuck_reruns", "replacement_beside"):
            need(name in truth["stopped"] and not [r for r in truth["routine_loads"] if r["table"] == name], t,
                 "the table kept loading")
            if kind == "replacement_beside":
                need(len(t["tables"]) == 2 and t["tables"][1] in after.tables, t, "no replacement table")
        elif kind == "date_range_exceeded":
            so, sn = old.cstat(cols[0]), new.cstat(cols[0])
            need(so is not None and sn is not None and str(sn.max) > str(so.max), t, "the max date did not grow")
        elif kind in ("unit_shift_restated", "metric_column_scaled", "unit_shift_new_load"):
            so, sn = old.cstat(cols[0]), new.cstat(cols[0])
            if so is not None and sn is not None and isinstance(so.max, (int, float)) and isinstance(sn.max, (int, float)) \
                    and so.max and kind != "unit_shift_new_load":
                ratio = abs(float(sn.max) / float(so.max))
                need(ratio >= 5 or ratio <= 0.2, t, f"max {so.max} -> {sn.max}: no scale change")
        elif kind == "unit_factor_restated":
            so, sn = old.cstat(cols[0]), new.cstat(cols[0])
            if so is not None and sn is not None and isinstance(so.max, (int, float)) and isinstance(sn.max, (int, float)) \
                    and so.max:
                need(abs(float(sn.max) / float(so.max) - 1) > 0.05, t, f"max {so.max} -> {sn.max}: no unit change")
        elif kind == "value_partly_respelled":
            was, now = t["description"].split("'")[1], t["description"].split("'")[3]
            n_old, n_new = _one(cat, f"SELECT count(*) FILTER (WHERE \"{cols[0]}\" = '{was}'), "
                                     f"count(*) FILTER (WHERE \"{cols[0]}\" = '{now}') FROM {name}")
            need(n_old > 0 and n_new > 0, t, f"{was!r} on {n_old} rows, {now!r} on {n_new}: not a partial respelling")
        elif kind in ("key_reformatted", "key_retargeted"):
            so, sn = old.cstat(cols[0]), new.cstat(cols[0])
            need(so is None or sn is None or (so.min, so.max) != (sn.min, sn.max), t, "the key's values look unchanged")
        elif kind == "key_format_changed":
            so, sn = old.cstat(cols[0]), new.cstat(cols[0])
            need(so is not None and sn is not None and isinstance(sn.min, (int, float)) and isinstance(so.max, (int, float))
                 and sn.min > so.max, t, "the key ranges still overlap")
    return problems
