"""The staleness detector's precision, recall and suggestion accuracy against the stale manifest
(HARNESS.md, Stale history).

    detector_scores(stale_cat, enriched_cat, manifest, now=D0, naming=None) -> {"metadata": DetectorScore, ...}

- A finding names every annotation it affects (`Finding.annotations`; `annotation` for older
  findings). A manifest entry is *hit* when a non-fresh finding of the stale history names its
  (table, annotation key), or, for a `table.deprecated` entry (the flag that was never written),
  when any non-fresh finding names its table. A verified query is one annotation stored on every
  table it reads (its key is the hash of its question and SQL): a finding that names it on any of
  those tables names it.
- Precision: the share of flagged (table, annotation key) pairs that are in the manifest.
- Recall: hit detectable entries / detectable entries.
- Suggestion accuracy: of the hit entries whose change has a known repair (EXPECTED below, the lake
  spec's history in plain names, written through the lake's `naming` for a variant), the share whose
  findings offer that repair among their typed fixes (a finding without a fix counts as wrong).
- A coded column's `labels` count with its enum (`_counted_key`: the build writes, skips and does
  not count them apart, eval.lake.build.UNCOUNTED).
- False alarms: non-fresh findings on the enriched history (where nothing is stale by construction);
  `None` when no enriched catalog is given.
Only the runner and the tests read the manifest and EXPECTED; agents and the detector never do.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from catalog_core.api import CatalogAPI

__all__ = ["DetectorScore", "detector_scores", "read_manifest", "DEPTHS", "EXPECTED", "table_text"]

DEPTHS = ("metadata", "data")

# The repair each change of the lake's history (LAKE.md, History) calls for, by plain table and the
# annotation it applies to: (table, kind, subject) -> (action, params). `subject` is the column name
# for column annotations, the name after the kind's dot for others, "*" for any of that kind.
# Column names and coded values are written through the lake's naming before comparing.
_D80 = {c: c.replace("_cents", "_usd") for c in ("gross_revenue_cents", "discount_cents", "net_revenue_cents",
                                                 "refunds_cents")}
EXPECTED: dict[tuple[str, str, str], tuple[str, dict[str, Any]]] = {
    **{("mart.agg_daily_store_revenue", "column", old): ("rename", {"old": old, "new": new, "scale": -2})
       for old, new in _D80.items()},
    ("mart.agg_daily_store_revenue", "metric", "store_net_revenue"):
        ("rename", {"old": "net_revenue_cents", "new": "net_revenue_usd", "scale": -2}),
    ("legacy.sales_daily", "table", "*"): ("successor", {"table": "acme.mart.agg_daily_store_revenue"}),
    ("core.fct_orders", "column", "status"): ("value_map", {"column": "status", "map": {"returned": "refunded"}}),
    ("core.fct_orders", "metric", "returned_orders"): ("value_map", {"column": "status", "map": {"returned": "refunded"}}),
    ("mart.agg_weekly_category_sales", "table", "freshness_sla"): ("update_freshness_sla", {"min_days": 6, "max_days": 10}),
    ("core.dim_customer", "table", "grain"): ("set_keys|filter", {"keys": ["customer_sk"],
                                                                  "table": "acme.core.dim_customer",
                                                                  "column": "is_current"}),
    ("mart.rpt_finance_monthly_revenue", "table", "grain"): ("set_keys", {"keys": ["fiscal_year", "fiscal_period",
                                                                                   "region"]}),
    **{(t, "relationship", "customer"): ("filter", {"table": "acme.core.dim_customer", "column": "is_current"})
       for t in ("core.fct_orders", "core.fct_loyalty_events", "mart.agg_customer_ltv")},
    ("core.fct_web_sessions", "relationship", "customer"): ("join_on", {"from_column": "customer_uuid",
                                                                        "to_column": "customer_uuid"}),
}


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
    suggestion_accuracy: float | None = None           # right repairs / hit entries with a known repair
    suggestions_scored: int = 0
    suggestions_right: int = 0
    wrong_suggestions: list[str] = field(default_factory=list)  # "table:key: expected ..., offered ..."
    extra: list[str] = field(default_factory=list)     # flagged pairs not in the manifest
    alarms: list[str] = field(default_factory=list)    # the enriched history's non-fresh findings, one line each

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


def _keys(f: Any) -> list[str]:
    return list(getattr(f, "annotations", None) or ([f.annotation] if f.annotation else []))


def _counted_key(table: str, key: str, in_manifest: set[tuple[str, str]]) -> str:
    """The manifest key a flagged annotation key counts as. A coded column's `labels` (code ->
    meaning) are written with its enum and are not counted on their own (eval.lake.build.UNCOUNTED):
    the stale history skips an enum's update and its labels together, so labels that no longer
    explain the column's codes are stale exactly when its enum is, and a flag on `column.N.labels`
    counts for the manifest's `column.N.enum` entry of that table. Any other key, and labels whose
    enum the manifest does not list, count as themselves."""
    m = re.fullmatch(r"(column\.\d+)\.labels", key)
    if m and (table, f"{m.group(1)}.enum") in in_manifest and (table, key) not in in_manifest:
        return f"{m.group(1)}.enum"
    return key


def _expected(naming: Any, stale: CatalogAPI, entry: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The repair the manifest entry's change calls for, in the lake's names (None: none known)."""
    import semantic as sm

    key = str(entry["key"])
    kind = key.split(".", 1)[0]
    plain_table = None
    for (pt, k, subj), exp in EXPECTED.items():
        if naming.full_table(pt) != entry["table"] or k != kind:
            continue
        if kind == "column":
            anns = {a.key: a for a in sm.read_annotations(stale, entry["table"])}
            a = anns.get(key)
            if a is None or a.column != naming.column(subj):
                continue
        elif kind == "table":
            if subj not in ("*", key.split(".", 1)[1]):
                continue
        elif key.split(".", 1)[1] != subj:
            continue
        plain_table = pt
        action, params = exp
        return action, _translate(naming, params, plain_table)
    return None


def _translate(naming: Any, params: dict[str, Any], table: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    col = params.get("column")
    for k, v in params.items():
        if k in ("old", "new", "from_column", "to_column") or (k == "column" and isinstance(v, str)):
            out[k] = naming.column(v)
        elif k == "table" and isinstance(v, str):
            out[k] = naming.full_table(v)
        elif k == "keys":
            out[k] = [naming.column(x) for x in v]
        elif k == "map" and isinstance(v, dict) and isinstance(col, str):
            out[k] = {str(naming.code(col, a)): str(naming.code(col, b)) for a, b in v.items()}
        else:
            out[k] = v
    return out


def _matches(fix: Any, action: str, exp: dict[str, Any]) -> bool:
    p = fix.params or {}
    if fix.action not in action.split("|"):
        return False
    if fix.action == "rename":
        return p.get("old") == exp["old"] and p.get("new") == exp["new"] and int(p.get("scale") or 0) == exp["scale"]
    if fix.action == "successor":
        return p.get("table") == exp["table"]
    if fix.action == "filter":
        return p.get("table") == exp["table"] and p.get("column") == exp["column"]
    if fix.action == "join_on":
        return p.get("from_column") == exp["from_column"] and p.get("to_column") == exp["to_column"]
    if fix.action == "set_keys":
        return sorted(p.get("keys") or []) == sorted(exp["keys"])
    if fix.action == "value_map":
        got = {str(a): str(b) for a, b in (p.get("map") or {}).items()}
        return p.get("column") == exp["column"] and all(got.get(a) == b for a, b in exp["map"].items())
    if fix.action == "update_freshness_sla":
        from semantic.annotations import parse_duration

        try:
            days = parse_duration(p.get("sla")) / 86400
        except Exception:  # noqa: BLE001 - an unparsable duration is a wrong repair
            return False
        return exp["min_days"] <= days <= exp["max_days"]
    return False


def table_text(scores: dict[str, dict[str, DetectorScore]]) -> str:
    """The before/after table of docs/findings.md: one row per lake and depth."""
    lines = ["| lake | depth | precision | recall | suggestion accuracy | false alarms (enriched) |",
             "|---|---|---|---|---|---|"]
    for lake, by_depth in scores.items():
        for depth, s in by_depth.items():
            acc = "n/a" if s.suggestion_accuracy is None else f"{s.suggestion_accuracy:.2f} ({s.suggestions_right}/" \
                f"{s.suggestions_scored})"
            lines.append(f"| {lake} | {depth} | {s.precision:.2f} ({s.flagged_in_manifest}/{s.flagged}) | "
                         f"{s.recall:.2f} ({s.hit}/{s.detectable}) | {acc} | {s.false_alarms} |")
    return "\n".join(lines)


def detector_scores(stale: CatalogAPI, enriched: CatalogAPI | None, manifest: dict[str, Any], *,
                    now: Any, snapshot: Any = None, enriched_snapshot: Any = None,
                    depths: tuple[str, ...] = DEPTHS, naming: Any = None) -> dict[str, DetectorScore]:
    """Precision / recall / suggestion accuracy of `semantic.staleness` on the stale history, per
    depth. `naming`: the lake's `eval.lake.naming.Naming` (default: the plain names)."""
    import semantic as sm
    from eval.lake.naming import Naming

    naming = naming or Naming.plain()
    man = manifest["stale"]
    in_manifest = {(m["table"], m["key"]) for m in man}
    detectable = {(m["table"], m["key"]) for m in man if m["detectable"]}
    vq_home = {m["key"]: m["table"] for m in man if str(m["key"]).startswith("verified_query.")}
    expected = {(m["table"], m["key"]): ex for m in man if m["detectable"] and (ex := _expected(naming, stale, m))}
    out: dict[str, DetectorScore] = {}
    for depth in depths:
        found = [f for f in sm.staleness(stale, snapshot=snapshot, now=now, depth=depth) if f.status != "fresh"]
        flagged: set[tuple[str, str]] = set()
        fixes_of: dict[tuple[str, str], list[Any]] = {}
        for f in found:
            for k in _keys(f):
                home = vq_home.get(k, _table(f.target))
                pair = (home, _counted_key(home, k, in_manifest))
                flagged.add(pair)
                fixes_of.setdefault(pair, []).extend(f.fixes)
        tables = {_table(f.target) for f in found}
        hit = {k for k in detectable if k in flagged or (k[1] == "table.deprecated" and k[0] in tables)}
        for h in hit:
            if h not in fixes_of:  # the deprecation flag: the fixes of the table's table-wide findings
                fixes_of[h] = [x for f in found if _table(f.target) == h[0] and not re.match(r"column\.", f.annotation or "")
                               for x in f.fixes]
        flagged_in = {k for k in flagged if k in in_manifest}
        right, wrong = 0, []
        scored = [e for e in sorted(hit) if e in expected]
        for e in scored:
            action, exp = expected[e]
            if any(_matches(x, action, exp) for x in fixes_of.get(e, [])):
                right += 1
            else:
                offered = "; ".join(f"{x.action} {json.dumps(x.params, default=str)}" for x in fixes_of.get(e, [])[:3])
                wrong.append(f"{e[0]}:{e[1]}: expected {action} {json.dumps(exp)}, offered {offered or 'nothing'}")
        alarms = None
        alarm_lines: list[str] = []
        if enriched is not None:
            en = [f for f in sm.staleness(enriched, snapshot=enriched_snapshot, now=now, depth=depth)
                  if f.status != "fresh"]
            alarms = len(en)
            alarm_lines = [f"{f.target} {_keys(f)} {f.reason}: {f.message[:160]}" for f in en]
        out[depth] = DetectorScore(
            depth=depth, precision=len(flagged_in) / max(1, len(flagged)), recall=len(hit) / max(1, len(detectable)),
            flagged=len(flagged), flagged_in_manifest=len(flagged_in), detectable=len(detectable), hit=len(hit),
            false_alarms=alarms,
            missed=sorted(m["annotation"] for m in man if m["detectable"] and (m["table"], m["key"]) not in hit),
            suggestion_accuracy=right / len(scored) if scored else None, suggestions_scored=len(scored),
            suggestions_right=right, wrong_suggestions=wrong,
            extra=sorted(f"{t}:{k}" for t, k in flagged - in_manifest), alarms=alarm_lines)
    return out


def main(argv: list[str] | None = None) -> int:
    """`python -m eval.harness.detector LAKE_DIR [LAKE_DIR ...]`: the detector table of built lakes
    (each copied to a temporary directory first, so a shared lake is never opened in place)."""
    import argparse
    import shutil
    import tempfile

    import catalog_core as cc
    from eval.lake import D0, data_dir
    from eval.lake.naming import load_names

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("lakes", nargs="+")
    ap.add_argument("--verbose", action="store_true", help="print misses, extra flags, wrong suggestions, alarms")
    args = ap.parse_args(argv)
    table: dict[str, dict[str, DetectorScore]] = {}
    for lake in args.lakes:
        with tempfile.TemporaryDirectory(prefix="semcat-detector-") as tmp:
            copy = os.path.join(tmp, "lake")
            shutil.copytree(lake, copy, symlinks=True)
            st, en = cc.Catalog.open(data_dir(copy, "stale")), cc.Catalog.open(data_dir(copy, "enriched"))
            try:
                table[os.path.basename(os.path.normpath(lake))] = scores = detector_scores(
                    st, en, read_manifest(copy), now=D0, naming=load_names(copy))
            finally:
                st.close()
                en.close()
        if args.verbose:
            for d, s in scores.items():
                print(f"## {lake} {d}")
                for title, items in (("missed", s.missed), ("extra", s.extra), ("wrong", s.wrong_suggestions),
                                     ("alarms", s.alarms)):
                    for x in items:
                        print(f"  {title}: {x}")
    print(table_text(table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
