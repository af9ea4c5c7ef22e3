"""Scoring a trapped lake: `semantic.staleness` at metadata and data depth before the traps (at the
lake's now) and after them (at the truth's check time); what is new after is set against the truth.

Units: an annotation is (table, key). A finding flags every key in its `annotations` (or its
`annotation`; a finding naming none flags (table, "*")). A flag is *new* when the same (table, key,
reason) was not flagged before the traps.

Per class of the taxonomy:
- recall: annotations made false that got a new flag / annotations made false;
- precision: new flags on an annotation made false / new flags on the tables the class's traps wrote
  or made false (a table-wide flag counts as right when its table has an annotation made false);
- fix accuracy: of the false annotations caught, those whose offered fix (the first one that is not
  `investigate`, of the first new finding) equals the truth's; when the truth has no fix (it is not
  determinable from the change), offering none is right and offering one is wrong.
Controls: new flags on tables only routine loads and control changes wrote, per 20 such loads.
New flags on tables nothing wrote (downstream marts, readers of a changed table) are listed apart, and so is
a lineage flag about no annotation (`upstream_*` on "*") on a table a trap wrote but made no claim of false
(a replacement built from the table it replaces): it says the table's data was built from an input that
changed or was partial after the read, which no trap's truth models.
A claim the truth holds `pending` (a trap's `pending`: a freshness SLA whose clock had not run out at the
check time) is scored neither way: a flag on it is listed apart (`pending`), no flag is no miss.
The routine loads stop some tables no trap stopped (`stopped` in the truth: a table others join to by
its natural key is not replayed); a freshness flag (`STOPPED_REASONS`) on one of them is true but no
trap's: listed apart (`stopped`), neither right nor a false alarm.
Per writer (`writers`: spark, engine, iceberg, none; the trap's `writer`): the same recall and precision
counts, by the write path of the trap that made the annotation false (or that wrote the table).
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from typing import Any

from eval.traps.generator import writer_of

__all__ = ["flags", "score", "fix_matches", "aggregate"]

NO_FIX = ("investigate",)
STOPPED_REASONS = ("freshness_sla_missed", "not_loaded_since")   # what a table that stopped loading makes true
STOPPING_KINDS = ("stopped", "stuck_reruns", "replacement_beside")  # the traps that stop their table's loads


def _table_of(target: str, tables: set[str]) -> str:
    if target in tables:
        return target
    head = target.rsplit(".", 1)[0]
    return head if head in tables or target.count(".") >= 3 else target


def flags(findings: list[Any], tables: set[str]) -> list[dict[str, Any]]:
    """One entry per (table, key, reason) a non-fresh finding flags, in the detector's order."""
    out = []
    seen = set()
    for f in findings:
        if f.status == "fresh":
            continue
        table = _table_of(f.target, tables)
        keys = list(f.annotations or ([f.annotation] if f.annotation else [])) or ["*"]
        fixes = [dict(x.model_dump()) for x in (f.fixes or [])]
        for k in keys:
            ident = (table, k, f.reason)
            if ident in seen:
                continue
            seen.add(ident)
            out.append({"table": table, "key": k, "reason": f.reason, "status": f.status, "fixes": fixes,
                        "message": f.message[:300], "evidence_vids": list(f.evidence.vids)[:6]})
    return out


def _norm(v: Any) -> Any:
    if isinstance(v, str):
        return v.strip().lower()
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, list):
        return sorted((_norm(x) for x in v), key=str)
    if isinstance(v, dict):
        return {str(k).lower(): _norm(x) for k, x in v.items()}
    return v


def fix_matches(truth: dict[str, Any] | list[dict[str, Any]] | None, offered: dict[str, Any] | None) -> bool:
    """Whether the offered fix is the truth's (or one of the truth's equivalent alternatives, a list):
    the same action and every parameter the truth names equal (names case-insensitively, numbers by
    value, lists as sets). No fix and no fix match."""
    if isinstance(truth, list):
        return any(fix_matches(t, offered) for t in truth)
    if truth is None or offered is None:
        return truth is None and offered is None
    if truth.get("action") != offered.get("action"):
        return False
    op = offered.get("params") or {}
    for k, v in (truth.get("params") or {}).items():
        if v is None:
            continue
        ov = op.get(k)
        if k in ("table", "to_table") and isinstance(v, str) and isinstance(ov, str):
            if _norm(v).split(".")[-1] != _norm(ov).split(".")[-1]:
                return False
            continue
        if _norm(ov) != _norm(v):
            return False
    return True


def _primary_fix(entries: list[dict[str, Any]]) -> dict[str, Any] | None:
    for e in entries:
        for fx in e["fixes"]:
            if fx.get("action") not in NO_FIX:
                return fx
        return None
    return None


def score(truth: dict[str, Any], before: list[dict[str, Any]], after: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: C901 - one count per class, writer and kind of flag
    """Per-class counts for one trapped lake at one depth (flags as from `flags`)."""
    old = {(e["table"], e["key"], e["reason"]) for e in before}
    new = [e for e in after if (e["table"], e["key"], e["reason"]) not in old]
    by_pair: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for e in new:
        by_pair[(e["table"], e["key"])].append(e)
    traps = [t for t in truth["traps"] if not t["control"]]
    controls = [t for t in truth["traps"] if t["control"]]
    false_of: dict[tuple[str, str], dict[str, Any]] = {}
    owner: dict[str, str] = {}               # table -> class whose trap wrote it or made its annotations false
    owner_w: dict[str, str] = {}             # table -> the writer of that trap
    for t in traps:
        for tb in t["tables"]:
            owner.setdefault(tb, t["cls"])
            owner_w.setdefault(tb, writer_of(t))
        for tb, k in t["false"]:
            false_of.setdefault((tb, k), t)
            owner.setdefault(tb, t["cls"])
            owner_w.setdefault(tb, writer_of(t))
    w_rows: dict[str, dict[str, int]] = defaultdict(lambda: {"false": 0, "caught": 0, "tp": 0, "fp": 0, "traps": 0})
    for t in traps:
        w_rows[writer_of(t)]["traps"] += 1
    false_tables = {tb for tb, _ in false_of}
    pending = {(str(p[0]), str(p[1])) for t in traps for p in t.get("pending") or []} - set(false_of)
    control_tables = {t["table"] for t in controls} | {r["table"] for r in truth.get("routine_loads", [])}
    control_tables -= set(owner)
    loads = sum(int(t.get("loads", 1)) for t in controls if t["table"] in control_tables) + \
        sum(1 for r in truth.get("routine_loads", []) if r["table"] in control_tables)

    cls_rows: dict[str, dict[str, Any]] = defaultdict(lambda: {"false": 0, "caught": 0, "tp": 0, "fp": 0,
                                                               "fix_right": 0, "fix_total": 0, "misses": [],
                                                               "false_alarms": [], "wrong_fixes": []})
    for t in traps:
        cls_rows[t["cls"]]
    for (tb, k), t in false_of.items():
        row = cls_rows[t["cls"]]
        row["false"] += 1
        w_rows[writer_of(t)]["false"] += 1
        got = by_pair.get((tb, k), [])
        if not got:
            row["misses"].append({"trap": t["id"], "table": tb, "key": k, "change": t["description"]})
            continue
        row["caught"] += 1
        w_rows[writer_of(t)]["caught"] += 1
        want = t["fixes"].get(f"{tb}|{k}")
        offered = _primary_fix(got)
        row["fix_total"] += 1
        if fix_matches(want, offered):
            row["fix_right"] += 1
        else:
            row["wrong_fixes"].append({"trap": t["id"], "table": tb, "key": k, "want": want, "offered": offered,
                                       "reasons": [e["reason"] for e in got]})
    control_alarms, elsewhere, stopped_flags, pending_flags = [], [], [], []
    # the tables the routine stopped (a trap that stops its table says what that makes false itself)
    stopped = set(truth.get("stopped") or []) - {t["table"] for t in traps if t["kind"] in STOPPING_KINDS}
    for (tb, k), got in by_pair.items():
        if (tb, k) in pending:  # neither true nor false at the check time: scored neither way
            pending_flags.append({"table": tb, "key": k, "reasons": [e["reason"] for e in got],
                                  "message": got[0]["message"]})
            continue
        if (tb, k) not in false_of and tb in stopped and all(e["reason"] in STOPPED_REASONS for e in got):
            # the routine loads stopped this table, not a trap: its freshness claims are false, and no trap says so
            stopped_flags.append({"table": tb, "key": k, "reasons": [e["reason"] for e in got],
                                  "message": got[0]["message"]})
            continue
        if (tb, k) in false_of:
            cls_rows[false_of[(tb, k)]["cls"]]["tp"] += 1
            w_rows[writer_of(false_of[(tb, k)])]["tp"] += 1
        elif k == "*" and tb in false_tables:
            cls_rows[owner[tb]]["tp"] += 1
            w_rows[owner_w[tb]]["tp"] += 1
        elif k == "*" and all(str(e["reason"]).startswith("upstream_") for e in got):
            # a lineage flag (about the table's data, no annotation) on a table no false claim is on,
            # a trap's or not: what its input's change reaches is no trap's truth; downstream
            elsewhere.append({"table": tb, "key": k, "reasons": [e["reason"] for e in got],
                              "message": got[0]["message"]})
        elif tb in owner:
            row = cls_rows[owner[tb]]
            row["fp"] += 1
            w_rows[owner_w[tb]]["fp"] += 1
            row["false_alarms"].append({"table": tb, "key": k, "reasons": [e["reason"] for e in got],
                                        "message": got[0]["message"]})
        elif all(str(e["reason"]).startswith("upstream_") for e in got):
            # a reader of a changed table marked suspect through its lineage: downstream, not a control's alarm
            elsewhere.append({"table": tb, "key": k, "reasons": [e["reason"] for e in got],
                              "message": got[0]["message"]})
        elif tb in control_tables:
            control_alarms.append({"table": tb, "key": k, "reasons": [e["reason"] for e in got],
                                   "message": got[0]["message"]})
        else:
            elsewhere.append({"table": tb, "key": k, "reasons": [e["reason"] for e in got],
                              "message": got[0]["message"]})
    return {"classes": {c: dict(v) for c, v in cls_rows.items()}, "control_loads": loads,
            "control_alarms": control_alarms, "elsewhere": elsewhere, "stopped": stopped_flags,
            "pending": pending_flags, "new_flags": len(new),
            "writers": {w: dict(v) for w, v in sorted(w_rows.items())}}


def _ratio(a: int, b: int) -> str:
    return f"{a}/{b} ({a / b:.2f})" if b else "-"


def aggregate(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Sum the counts of several scored runs (same lake, seed set and depth)."""
    tot: dict[str, dict[str, int]] = defaultdict(lambda: {"false": 0, "caught": 0, "tp": 0, "fp": 0,
                                                          "fix_right": 0, "fix_total": 0})
    wtot: dict[str, dict[str, int]] = defaultdict(lambda: {"false": 0, "caught": 0, "tp": 0, "fp": 0, "traps": 0})
    loads = alarms = elsewhere = 0
    for r in results:
        for w, v in (r.get("writers") or {}).items():
            for k in wtot[w]:
                wtot[w][k] += int(v.get(k, 0))
        for c, v in r["classes"].items():
            for k in ("false", "caught", "tp", "fp", "fix_right", "fix_total"):
                tot[c][k] += v[k]
        loads += r["control_loads"]
        alarms += len(r["control_alarms"])
        elsewhere += len(r["elsewhere"])
    rate = 20.0 * alarms / loads if loads else math.nan
    return {"classes": {c: dict(v) for c, v in tot.items()}, "control_loads": loads, "control_alarms": alarms,
            "alarms_per_20": rate, "elsewhere": elsewhere, "writers": {w: dict(v) for w, v in sorted(wtot.items())}}


def table_rows(agg: dict[str, Any], classes: list[str]) -> list[list[str]]:
    rows = []
    for c in classes:
        v = agg["classes"].get(c)
        if not v:
            rows.append([c, "-", "-", "-"])
            continue
        rows.append([c, _ratio(v["tp"], v["tp"] + v["fp"]), _ratio(v["caught"], v["false"]),
                     _ratio(v["fix_right"], v["fix_total"])])
    return rows


@dataclasses.dataclass
class Cell:
    lake: str
    seeds: str
    depth: str
