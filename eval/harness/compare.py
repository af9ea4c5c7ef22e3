"""The comparator of HARNESS.md (Scoring): is a predicted result the gold result?

    compare(gold, pred, order_matters=False, decimals=2) -> Comparison(correct, reason)

Rules:
- Rows are a bag (a multiset): duplicates count, order is ignored unless `order_matters`.
- Columns: every gold column must match a *distinct* predicted column with the rows aligned (the
  same row of the predicted result supplies every gold value of a gold row). Column names are
  ignored. The predicted result may have at most `MAX_EXTRA_COLUMNS` (2) columns more than the gold.
  The assignment is searched exhaustively (backtracking over the candidate columns of each gold
  column, most constrained first, pruned by checking the bag of the partial projection), never
  greedily, so duplicated or look-alike columns cannot hide a valid assignment.
- Numbers (int, float, Decimal; not bool) are rounded to `decimals` then compared with relative
  tolerance `REL_TOL` (1e-6), so a 100x scaled answer (cents for dollars, percent for a fraction) is
  wrong. Two numbers whose raw values are within 1e-9 relative also match (float noise that rounding
  would split at a .5 boundary).
- NULL equals only NULL (never 0 nor "").
- Strings compare exactly (case and whitespace included). Dates and timestamps are compared as ISO
  text (`run_sql` returns them as `isoformat()` strings; `date`/`datetime` objects given directly are
  converted the same way). Decision: a DATE `2025-03-09` matches a timestamp at midnight of the same
  day (`2025-03-09T00:00:00`, `2025-03-09 00:00:00`, optionally with `+00:00`/`Z`), and an ISO string of
  the same date, because DuckDB returns a TIMESTAMP for some date arithmetic (`date_trunc`, `+ INTERVAL`)
  on DATE columns; any other time of day does not match.
- Booleans match only booleans.
- An empty gold result matches an empty predicted result with compatible columns.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Protocol, TypeGuard

__all__ = ["Comparison", "compare", "MAX_EXTRA_COLUMNS", "REL_TOL", "values_equal"]

MAX_EXTRA_COLUMNS = 2
REL_TOL = 1e-6
RAW_TOL = 1e-9
MAX_ASSIGNMENTS = 20_000     # complete assignments tried before giving up (reported as such)
MATCHING_LIMIT = 400         # leftover rows matched by augmenting paths; above it, sorted pairwise


Row = tuple[object, ...]   # a result row: DuckDB's values (numbers, text, dates, lists, ...) as they come


class _Result(Protocol):
    @property
    def columns(self) -> Sequence[object]: ...

    @property
    def rows(self) -> Sequence[Sequence[object]]: ...


@dataclass(frozen=True)
class Comparison:
    correct: bool
    reason: str


_MIDNIGHT = re.compile(r"^(\d{4}-\d{2}-\d{2})[T ]00:00(?::00(?:\.0+)?)?(?:Z|[+-]00(?::?00)?)?$")


def _is_number(v: object) -> TypeGuard[int | float | Decimal]:
    return isinstance(v, (int, float, Decimal)) and not isinstance(v, bool)


def _norm(v: object) -> object:
    """Non-numeric values in their compared form."""
    if isinstance(v, dt.datetime):
        v = v.isoformat()
    elif isinstance(v, dt.date):
        v = v.isoformat()
    if isinstance(v, str):
        m = _MIDNIGHT.match(v)
        if m:
            return m.group(1)
    if isinstance(v, list):
        return tuple(_norm(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((str(k), _norm(x)) for k, x in v.items()))
    return v


def _round(v: int | float | Decimal, decimals: int) -> float:
    try:
        d = Decimal(str(v)) if isinstance(v, float) else Decimal(v)
        return float(d.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_EVEN))
    except (InvalidOperation, ValueError, OverflowError):
        return float(v)


def _key(v: object, decimals: int) -> tuple[object, ...]:
    """A hashable canonical form: equal keys imply equal values (the converse up to tolerance)."""
    if v is None:
        return ("null",)
    if isinstance(v, bool):
        return ("bool", v)
    if _is_number(v):
        f = float(v)
        if not math.isfinite(f):
            return ("num", str(f))
        r = _round(v, decimals)
        return ("num", r + 0.0)  # -0.0 -> 0.0
    if isinstance(v, float):
        return ("num", str(v))
    n = _norm(v)
    return ("str", n) if isinstance(n, str) else ("other", repr(n))


def values_equal(a: object, b: object, decimals: int) -> bool:
    """One gold value against one predicted value, by the rules of the module docstring."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) and _is_number(b):
        fa, fb = float(a), float(b)
        if not (math.isfinite(fa) and math.isfinite(fb)):
            return str(fa) == str(fb)
        if math.isclose(fa, fb, rel_tol=RAW_TOL, abs_tol=0.0):
            return True
        ra, rb = _round(a, decimals), _round(b, decimals)
        return math.isclose(ra, rb, rel_tol=REL_TOL, abs_tol=0.0)
    if _is_number(a) or _is_number(b):
        return False
    return bool(_norm(a) == _norm(b))


def _rows_equal(g: Sequence[object], p: Sequence[object], decimals: int) -> bool:
    return all(values_equal(x, y, decimals) for x, y in zip(g, p, strict=True))


def _bag_equal(gold: list[Row], pred: list[Row], decimals: int) -> bool:
    """Multiset equality with tolerance: exact canonical keys first, then the leftovers matched by
    augmenting paths (or, for large leftovers, pairwise after sorting by key)."""
    if len(gold) != len(pred):
        return False
    gk = Counter(tuple(_key(v, decimals) for v in r) for r in gold)
    pk = Counter(tuple(_key(v, decimals) for v in r) for r in pred)
    if gk == pk:
        return True
    common = gk & pk
    left_g: list[Row] = []
    left_p: list[Row] = []
    used_g = Counter(common)
    used_p = Counter(common)
    for r in gold:
        k = tuple(_key(v, decimals) for v in r)
        if used_g[k] > 0:
            used_g[k] -= 1
        else:
            left_g.append(r)
    for r in pred:
        k = tuple(_key(v, decimals) for v in r)
        if used_p[k] > 0:
            used_p[k] -= 1
        else:
            left_p.append(r)
    if len(left_g) > MATCHING_LIMIT:
        sk = lambda r: tuple(repr(k) for k in (_key(v, decimals) for v in r))  # noqa: E731
        return all(_rows_equal(a, b, decimals) for a, b in zip(sorted(left_g, key=sk), sorted(left_p, key=sk),
                                                                 strict=True))
    return _perfect_matching(left_g, left_p, decimals)


def _perfect_matching(gold: list[Row], pred: list[Row], decimals: int) -> bool:
    """Bipartite matching (Kuhn's augmenting paths) of gold rows to tolerance-equal predicted rows."""
    adj = [[j for j, p in enumerate(pred) if _rows_equal(g, p, decimals)] for g in gold]
    if any(not a for a in adj):
        return False
    owner: list[int | None] = [None] * len(pred)

    def augment(i: int, seen: set[int]) -> bool:
        for j in adj[i]:
            if j in seen:
                continue
            seen.add(j)
            o = owner[j]
            if o is None or augment(o, seen):
                owner[j] = i
                return True
        return False

    return all(augment(i, set()) for i in range(len(gold)))


def _col_name(result: _Result, i: int) -> str:
    c = result.columns[i]
    name = getattr(c, "name", None)
    if name is None and isinstance(c, dict):
        name = c.get("name")
    return str(name if name is not None else c)


def _show(v: object) -> str:
    t = repr(v)
    return t if len(t) <= 40 else t[:39] + "…"


def _seq_equal(g: list[Row], p: list[Row], decimals: int) -> bool:
    return len(g) == len(p) and all(_rows_equal(a, b, decimals) for a, b in zip(g, p, strict=True))


def _column(rows: list[Row], i: int) -> list[Row]:
    return [(r[i],) for r in rows]


def _candidates(gold: _Result, g_rows: list[Row], p_rows: list[Row], n: int, m: int,
                order_matters: bool, decimals: int) -> list[list[int]] | Comparison:
    """For each gold column, the predicted columns equal to it on their own (a necessary
    condition), or the Comparison saying which gold column none matches."""
    cands: list[list[int]] = []
    for i in range(n):
        gi = _column(g_rows, i)
        ok = [j for j in range(m) if (_seq_equal(gi, _column(p_rows, j), decimals) if order_matters
                                      else _bag_equal(gi, _column(p_rows, j), decimals))]
        if not ok:
            if order_matters and any(_bag_equal(gi, _column(p_rows, j), decimals) for j in range(m)):
                return Comparison(False, f"gold column {i + 1} ({_col_name(gold, i)}) has its values in a "
                                         "different row order")
            why = f"no predicted column matches gold column {i + 1} ({_col_name(gold, i)})"
            if len(g_rows) == 1:
                why += f": gold {_show(g_rows[0][i])}, predicted {', '.join(_show(v) for v in p_rows[0])}"
            return Comparison(False, why)
        cands.append(ok)
    return cands


def _assign(g_rows: list[Row], p_rows: list[Row], cands: list[list[int]],
            order_matters: bool, decimals: int) -> bool | None:
    """Is there an assignment of distinct predicted columns to the gold columns (each among its
    candidates, fewest first) that aligns the rows? None: gave up after MAX_ASSIGNMENTS tries."""
    n = len(cands)
    order = sorted(range(n), key=lambda i: len(cands[i]))
    tried = 0
    assignment: dict[int, int] = {}

    def project(rows: list[Row], idx: list[int]) -> list[Row]:
        return [tuple(r[k] for k in idx) for r in rows]

    def consistent() -> bool:
        gi = [i for i in order if i in assignment]
        pj = [assignment[i] for i in gi]
        a, b = project(g_rows, gi), project(p_rows, pj)
        return _seq_equal(a, b, decimals) if order_matters else _bag_equal(a, b, decimals)

    def search(depth: int) -> bool | None:
        """True: a full assignment aligns the rows; False: none does; None: gave up (too many tries)."""
        nonlocal tried
        if depth == n:
            return True
        i = order[depth]
        used = set(assignment.values())
        for j in cands[i]:
            if j in used:
                continue
            assignment[i] = j
            tried += 1
            if tried > MAX_ASSIGNMENTS:
                return None
            if depth == 0 or consistent():
                r = search(depth + 1)
                if r is not False:
                    return r
            del assignment[i]
        return False

    return search(0)


def compare(gold: _Result, pred: _Result, *, order_matters: bool = False, decimals: int = 2,
            decode: Callable[[object], object] | None = None) -> Comparison:
    """Compare two results (`catalog_core.SqlResult` or anything with `columns` and `rows`). `decode`, when
    given, maps every cell of both sides first (a coded lake variant: codes back to their labels, so an
    answer with codes and one with decoded labels are judged alike)."""
    if decode is None:
        g_rows = [tuple(r) for r in gold.rows]
        p_rows = [tuple(r) for r in pred.rows]
    else:
        g_rows = [tuple(decode(v) for v in r) for r in gold.rows]
        p_rows = [tuple(decode(v) for v in r) for r in pred.rows]
    n, m = len(gold.columns), len(pred.columns)
    if m < n:
        return Comparison(False, f"predicted {m} column(s), gold has {n}")
    if m > n + MAX_EXTRA_COLUMNS:
        return Comparison(False, f"predicted {m} columns, gold has {n}: at most {MAX_EXTRA_COLUMNS} extra allowed")
    if len(g_rows) != len(p_rows):
        return Comparison(False, f"row count {len(p_rows)} vs {len(g_rows)} (predicted vs gold)")
    if not g_rows:
        return Comparison(True, "both empty")
    cands = _candidates(gold, g_rows, p_rows, n, m, order_matters, decimals)
    if isinstance(cands, Comparison):
        return cands
    found = _assign(g_rows, p_rows, cands, order_matters, decimals)
    if found:
        return Comparison(True, "match")
    if found is None:
        return Comparison(False, f"no column assignment found within {MAX_ASSIGNMENTS} tries")
    if not order_matters:
        return Comparison(False, "every gold column matches some predicted column, but no assignment of distinct "
                                 "columns aligns the rows")
    # order matters: would the bag match?
    bag = compare(gold, pred, order_matters=False, decimals=decimals)
    if bag.correct:
        return Comparison(False, "the same rows in a different order (the question says order matters)")
    return Comparison(False, "no assignment of distinct predicted columns aligns the rows in order")
