"""Class `values_units`, a sign stated for some values of another column: a column's description says
its sign for some kinds of row ("Points earned or spent (negative for redeem, expire)"), true of every
row of those kinds when it was written, and rows of those kinds loaded since hold the other sign (the
loader now writes redeemed points positive). The column still holds both signs overall, so its range
says nothing (`sign_flipped` reads only a column that changed sign as a whole).

Evidence (data depth): the rows of the named kinds, and those of them of the other sign, at the claim's
basis and now. The kinds are values of a string column of the table, named by the value itself or, for a
coded column, by its label ('redeem' the label of code 'B9'). The finding needs the claim true then on at
least SIGN_MIN_ROWS rows (none of the other sign), and SIGN_MIN_NEW rows of the other sign since.
unit_drift, stale, `investigate`: which convention the rows follow now is for a person to write.
"""

from __future__ import annotations

import re

from catalog_core.errors import CatalogError
from semantic._bounded import LimitExceededError, literals
from semantic.history import type_family
from semantic.models import Annotation, Finding
from semantic.staleness.core import Duck, Table, cause_of, duck_at, finding, load_at, make_fix, quote_id, quote_table

__all__ = ["signs_by_value", "sign_claims"]

SIGN_MIN_ROWS = 20     # rows of the named kinds the claim rests on at its basis
SIGN_MIN_NEW = 3       # rows of those kinds of the other sign since
SIGN_VALUES = 50       # distinct values of a string column read to match the named kinds

_SIGN = re.compile(r"\b(negative|positive)\s+(?:for|on|when|in|with)\s+([^.;:()\[\]]+)", re.IGNORECASE)
_SPLIT = re.compile(r",|/|\band\b|\bor\b|\bnor\b", re.IGNORECASE)
_QUOTES = "'\"`"


def sign_claims(text: str) -> list[tuple[str, list[str]]]:
    """(negative | positive, the kinds named) of each "negative for a, b and c" in `text`, kinds lower case
    ("Points (negative for redeem, expire)" -> [('negative', ['redeem', 'expire'])])."""
    out = []
    for m in _SIGN.finditer(text):
        words = [w.strip().strip(_QUOTES).strip().lower() for w in _SPLIT.split(m.group(2))]
        words = [w for w in words if w and len(w.split()) <= 3]
        if words:
            out.append((m.group(1).lower(), words))
    return out


def _kinds(t: Table, anns: list[Annotation], col: str, duck: Duck, words: list[str]) -> tuple[str, list[str]] | None:
    """(string column, its values) naming every word of `words`, by value or by label, other than `col`."""
    labels: dict[int, dict[str, str]] = {}
    for a in anns:
        if a.kind == "column" and a.field == "labels" and isinstance(a.value, dict) and a.column_id is not None:
            labels[a.column_id] = {str(k): str(v).strip().lower() for k, v in a.value.items() if v}
    for cid, c in sorted(t.cols.items()):
        if c.name.lower() == col.lower() or type_family(c.type) != "string":
            continue
        q = quote_id(c.name)
        try:
            rows = duck.sql(f"SELECT DISTINCT CAST({q} AS VARCHAR) FROM {quote_table(t.name)} "
                            f"WHERE {q} IS NOT NULL LIMIT {SIGN_VALUES + 1}")
        except LimitExceededError:
            raise
        except CatalogError:
            continue
        values = [str(r[0]) for r in rows]
        if len(values) > SIGN_VALUES:
            continue  # no coded column: a free text or an identifier
        by_word = {v.lower(): v for v in values}
        for code, label in labels.get(cid, {}).items():
            if code in values:
                by_word.setdefault(label, code)
        if all(w in by_word for w in words):
            return c.name, sorted({by_word[w] for w in words})
    return None


def _counts(duck: Duck, table: str, col: str, kind_col: str, kinds: list[str], sign: str) -> tuple[int, int]:
    """(rows of `kinds`, those of them whose `col` has the other sign than `sign`)."""
    other = f"{quote_id(col)} > 0" if sign == "negative" else f"{quote_id(col)} < 0"
    rows = duck.sql(f"SELECT count(*), count(*) FILTER (WHERE {other}) FROM {quote_table(table)} "
                    f"WHERE CAST({quote_id(kind_col)} AS VARCHAR) IN ({literals(kinds)}) AND {quote_id(col)} IS NOT NULL")
    return int(rows[0][0] or 0), int(rows[0][1] or 0)


def signs_by_value(t: Table, ann: Annotation, anns: list[Annotation], duck: Duck | None) -> list[Finding]:
    """values_units, data: see the module docstring. `ann` is a column's description."""
    if duck is None or ann.kind != "column" or ann.field != "description" or not isinstance(ann.value, str):
        return []
    cur = t.cols.get(ann.column_id if ann.column_id is not None else -1)
    if cur is None or type_family(cur.type) != "number":
        return []
    basis = int(ann.provenance.basis.vid or 0)
    if not basis or not t.tl.data_after(basis):
        return []
    out: list[Finding] = []
    for sign, words in sign_claims(ann.value):
        got = _kinds(t, anns, cur.name, duck, words)
        if got is None:
            continue
        kind_col, kinds = got
        try:
            then_rows, then_off = _counts(duck_at(t.ctx, load_at(t, basis)), t.name, cur.name, kind_col, kinds, sign)
            now_rows, now_off = _counts(duck, t.name, cur.name, kind_col, kinds, sign)
        except LimitExceededError:
            raise
        except CatalogError:
            continue
        if then_rows < SIGN_MIN_ROWS or then_off or now_off - then_off < SIGN_MIN_NEW:
            continue
        loads = [v for v, _ in t.tl.data_after(basis)]
        other = "positive" if sign == "negative" else "negative"
        out.append(finding(ann, f"{t.name}.{cur.name}", "unit_drift", "stale",
                           f"the description says {cur.name} is {sign} for {', '.join(words)} ({kind_col} "
                           f"{', '.join(map(repr, kinds))}): all {then_rows} such rows were when it was written; "
                           f"{now_off} of the {now_rows - then_rows} loaded since are {other}: the sign those rows "
                           "are written with changed", [loads[0], loads[-1]],
                           values={"column": cur.name, "kind_column": kind_col, "kinds": kinds, "sign": sign,
                                   "rows_then": then_rows, "rows_now": now_rows, "other_sign_now": now_off},
                           suggestion=f"check which sign the {', '.join(words)} rows of {cur.name} are written with "
                                      "now, and rewrite the description (or the loads)",
                           fixes=[make_fix("investigate", columns=[cur.name, kind_col])],
                           cause=cause_of("sign", t.name, None, cur.name)))
    return out
