"""What every check shares: the table at the snapshot (`Table`: object, timeline, columns, statistics,
the latest load's file statistics), findings and fixes (`finding`, `make_fix`, `cause_of`), the
statistics algebra of renames (`pair_cost`, `scale_of`, `assign`) and the bounded statement runner (`Duck`)."""

from __future__ import annotations

import bisect
import math
import re
import threading
import time as _time
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any

import cachetools

from catalog_core import lake
from catalog_core.api import CatalogAPI
from catalog_core.errors import CatalogError, InvalidValueError
from catalog_core.model import Obj, parse_time
from semantic import _bounded
from semantic._sql import quote
from semantic._tables import column_id, table_columns
from semantic.history import Context, Timeline, type_family
from semantic.models import Annotation, ColumnStats, Evidence, Finding, Fix

DEPTHS = ("metadata", "data")


SCD2 = ("valid_from", "valid_to", "is_current")
VERSION_DATES = ("rec_start_date", "rec_end_date")  # a version's validity, as TPC-DS's dimensions name it


RANK = {"fresh": 0, "suspect": 1, "stale": 2}
KEY_SUFFIXES = ("_id", "_uuid", "_key", "_sk")  # a column named so is an identifier, never a measure


MATCH_LOW = 0.95          # relationship match rate below this is join_match_low


DAY = 86400.0


def worst(statuses: Iterable[str]) -> str:
    out = "fresh"
    for s in statuses:
        if RANK[s] > RANK[out]:
            out = s
    return out


def resolve_now(now: object) -> float:
    if now is None:
        return _time.time()
    t = parse_time(now)
    if t is None:
        raise InvalidValueError(f"now must be seconds since the epoch or an ISO-8601 time, got {now!r}")
    return t


def day_of(t: float) -> str:
    return datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%d")


def num(v: object) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def offset(bmin: float | None, bmax: float | None, amin: float | None, amax: float | None) -> bool:
    """Whether a numeric range [amin, amax] is [bmin, bmax] moved by one non-zero amount at both ends
    with its spread kept (keys restated + N): an offset, never a scale by 10^k, which multiplies the
    spread."""
    if None in (bmin, bmax, amin, amax):
        return False
    assert bmin is not None and bmax is not None and amin is not None and amax is not None
    return bmax != bmin and amax != bmax and math.isclose(amax - bmax, amin - bmin, rel_tol=1e-9, abs_tol=1e-9)


def scale_of(before: ColumnStats | dict[str, Any] | None, after: dict[str, Any] | None) -> int | None:
    """k when `after`'s numeric range is `before`'s scaled by 10^k (k may be 0), else None. Not when
    both ends moved by the same amount (an offset, e.g. keys restated + 100000000: [100001, 102500]
    -> [100100001, 100102500] keeps its spread, which a scale by 10^k would multiply)."""
    if before is None or after is None:
        return None
    b = before if isinstance(before, dict) else before.model_dump()
    bmax, amax, bmin, amin = num(b.get("max")), num(after.get("max")), num(b.get("min")), num(after.get("min"))
    if not bmax or not amax or (bmax > 0) != (amax > 0):
        return None
    if offset(bmin, bmax, amin, amax):
        return None
    lr = math.log10(abs(amax / bmax))
    k = round(lr)
    if abs(lr - k) > 0.15:
        return None
    if bmin and amin:
        if (bmin > 0) != (amin > 0) or abs(math.log10(abs(amin / bmin)) - k) > 0.5:
            return None
    elif (bmin or amin) and k != 0:  # one range starts at zero, the other does not
        return None
    return k


def finding(ann: Annotation | None, target: str, reason: str, status: str, message: str, vids: Iterable[int],
             times: Iterable[float] = (), values: dict[str, Any] | None = None,
             suggestion: str | None = None, fixes: Iterable[Fix] = (), cause: str | None = None,
             missing: str | None = None) -> Finding:
    """A finding. Invariant: a suggestion (prose for people) comes with at least one `Fix` (the same
    repair, typed, for programs); a program never needs to parse the suggestion. `cause` names the
    underlying change (see `cause_of`); findings of one cause are merged into one by `merge_by_cause`.
    `missing` (with `ann` None): the key of an annotation the table lacks and the change calls for (a
    replaced table's `table.deprecated`), the claim the finding is about."""
    fx = list(fixes)
    if suggestion is not None and not fx:
        raise ValueError(f"a {reason} finding with a suggestion needs its fixes")
    vs = list(dict.fromkeys([*([ann.vid] if ann is not None and ann.vid is not None else []), *vids]))
    key = missing if ann is None else ann.key
    return Finding(target=target, annotation=key, status=status,  # type: ignore[arg-type]
                   reason=reason, message=message,  # type: ignore[arg-type]
                   evidence=Evidence(vids=vs, times=list(times), values=values or {}), suggestion=suggestion,
                   fixes=fx, annotations=[key] if key else [], cause=cause)


def cause_of(kind: str, table: str, vid: int | None, detail: str | None = None) -> str:
    """The id of one underlying change: `kind:table@vid[:detail]` (e.g. `rename:acme.mart.x@122:net_cents`)."""
    return f"{kind}:{table}@{vid}" + (f":{detail}" if detail else "")


def cause_parts(cause: str | None) -> tuple[str, str, str | None]:
    """`kind:table@vid[:detail]` (`cause_of`) -> (kind, table, detail); ("", "", None) for anything else."""
    m = re.fullmatch(r"([a-z_]+):([^@]+)@[^:]*(?::(.*))?", cause or "")
    return (m.group(1), m.group(2), m.group(3)) if m else ("", "", None)


def load_at(t: Table, vid: int) -> int:
    """The vid of `t`'s last data commit at or before `vid` (`vid` itself when there is none): the rows a
    claim written at `vid` read. Claims written between the same two loads share one reading of them."""
    return max((v for v, _tt in t.tl.data_commits if v <= vid), default=vid)


def metric_names(ann: Annotation, fields: tuple[str, ...] = ("expression", "filter"), literals: bool = True
                 ) -> set[str]:
    """The lower-case identifiers a metric's `fields` name (its expression and filter; with
    `literals=False`, not the words inside string literals): the columns it computes with, whatever
    basis the writer recorded."""
    val = ann.value if isinstance(ann.value, dict) else {}
    text = " ".join(str(val.get(k) or "") for k in fields).lower()
    return set(re.findall(r"[a-z_]\w*", text if literals else re.sub(r"'(?:[^']|'')*'", " ", text)))


def declared_keys(anns: Iterable[Annotation]) -> list[str]:
    """The grain keys a table's `table.grain` annotation among `anns` declares, as written ([] without one)."""
    return next(([str(k) for k in (a.value or {}).get("keys") or []] for a in anns if a.key == "table.grain"), [])


def make_fix(action: str, **params: object) -> Fix:
    return Fix(action=action, params=params)  # type: ignore[arg-type]


def unit_word(k: int) -> str:
    return f"values ×10^{k}" if k > 0 else f"values ÷10^{-k}"


class Table:
    """One table at the snapshot: its object, timeline and current columns."""

    def __init__(self, ctx: Context, name: str, obj: Obj, tl: Timeline) -> None:
        self.ctx, self.name, self.obj, self.tl = ctx, name, obj, tl
        self.value = obj.value
        self.cols = {column_id(c): c for c in table_columns(self.value)}
        self.by_name = {c.name.lower(): c for c in self.cols.values()}
        self.stats = (self.value.get("stats") or {})
        self.col_stats: dict[str, Any] = self.stats.get("columns") or {}

    def col(self, name: str) -> lake.Column | None:
        return self.by_name.get(name.lower())

    def stat(self, name: str) -> dict[str, Any] | None:
        s = self.col_stats.get(name)
        return s if isinstance(s, dict) else None

    def recent_stats(self, since: int) -> dict[str, dict[str, Any]]:
        """Column stats of the latest data written after vid `since`: the partitions the latest
        load wrote (from the commit log), or the table's stats when it is not partitioned."""
        if not self.value.get("partition_by"):
            return self.col_stats
        acc: dict[str, dict[str, Any]] = {}
        for p in self.ctx.latest_partitions(self.name, since):
            for c, s in ((p.value.get("stats") or {}).get("columns") or {}).items():
                cur = acc.setdefault(c, {"min": None, "max": None})
                for k, better in (("min", lambda a, b: a < b), ("max", lambda a, b: a > b)):
                    v = s.get(k) if isinstance(s, dict) else None
                    try:
                        if v is not None and (cur[k] is None or better(v, cur[k])):
                            cur[k] = v
                    except TypeError:
                        pass
        return acc


    def files(self, vid: int) -> list[Obj]:
        """The table's data files at `vid` (`files_at`)."""
        return files_at(self.ctx, self.name, vid)

    def kept_files(self, before: int, vid: int) -> bool:
        """Every file the table held at `before` (it held some) it still holds at `vid`: the commits
        between only added files (appends), none removed or rewritten."""
        old = {f.path for f in self.files(before)}
        return bool(old) and old <= {f.path for f in self.files(vid)}

    def rewrote_all(self, vid: int) -> bool:
        """Every file the table holds at `vid` (it holds some) was written by the commit at `vid`: a
        rewrite in full, whatever its write log says (or when it logged none)."""
        files = self.files(vid)
        return bool(files) and all(int(f.vid or 0) == vid for f in files)

    def written_since(self, since: int) -> dict[str, dict[str, Any]]:
        """Column stats (min, max, null_count) of the files the latest load after vid `since` wrote
        (the snapshot's files of the newest version among those newer than `since`), merged; {}
        when nothing was written since. Cached per (table, vid, since)."""
        key = ("written_since", self.obj.path, self.ctx.vid, since)
        got = self.ctx.cache.findings.take(key)
        if got is not None:
            return got[0]
        acc: dict[str, dict[str, Any]] = {}
        files = self.files(self.ctx.vid)
        newest = max((f.vid or 0 for f in files), default=0)
        for f in files:
            if (f.vid or 0) <= since or (f.vid or 0) != newest:
                continue
            for c, st in (f.value.get("columns") or {}).items():
                if not isinstance(st, dict):
                    continue
                cur = acc.setdefault(c, {"min": None, "max": None, "null_count": 0})
                if isinstance(st.get("null_count"), int) and isinstance(cur["null_count"], int):
                    cur["null_count"] += st["null_count"]
                for k, better in (("min", lambda a, b: a < b), ("max", lambda a, b: a > b)):
                    v = st.get(k)
                    try:
                        if v is not None and (cur[k] is None or better(v, cur[k])):
                            cur[k] = v
                    except TypeError:
                        pass
        self.ctx.cache.findings.put(key, (acc,))
        return acc


def files_at(ctx: Context, name: str, vid: int) -> list[Obj]:
    """The data files of table `name` at `vid` (`plan_files`; [] when it cannot be planned), cached per
    (table, vid): several checks read the files of one version, the planning walks them all.
    Invariant: the files of a table at a vid never change, so the cache needs no invalidation."""
    key = ("plan_files", name, vid)
    got = ctx.cache.findings.take(key)
    if got is None:
        try:
            files = ctx.cat.plan_files(name, vid=vid)
        except CatalogError:
            files = []
        got = ctx.cache.findings.put(key, (files,))
    return got[0]


def rewrote_rows_read(ctx: Context, name: str, read_vid: int, vid: int) -> bool:
    """Did the commit at `vid` (after `read_vid`) remove or rewrite rows of table `name` that a reader at
    `read_vid` read? True when it removed a file written at or before `read_vid`, or one written after it
    by a commit that itself rewrote such rows (a compaction, an overwrite: the rows read live on in its
    files). False when it removed no file: an append of new rows, or a change of schema alone (a column
    dropped, renamed or widened leaves the rows read as they were). When neither version's files can be
    planned (a table without files), True: nothing says the rows read are intact."""
    return _rewrote(ctx, name, read_vid, vid, {})


def _rewrote(ctx: Context, name: str, read_vid: int, vid: int, memo: dict[int, bool]) -> bool:
    if vid in memo:
        return memo[vid]
    memo[vid] = False  # a commit is visited once (vids only decrease below, so no cycle; this bounds the walk)
    before, after = files_at(ctx, name, vid - 1), files_at(ctx, name, vid)
    if not before and not after:
        memo[vid] = True
        return True
    kept = {f.path for f in after}
    removed = [f for f in before if f.path not in kept]
    out = any(int(f.vid or 0) <= read_vid for f in removed) or any(
        _rewrote(ctx, name, read_vid, w, memo) for w in sorted({int(f.vid or 0) for f in removed})
        if read_vid < w < vid)
    memo[vid] = out
    return out


def name_of(c: lake.Column | None) -> str | None:
    return None if c is None else c.name


def type_of(c: lake.Column | None) -> str | None:
    return None if c is None else c.type


def _stats_at(t: Table, vid: int) -> tuple[dict[str, Any], int | None]:
    """(per-column statistics, row count) of the table's object as of `vid`, read once per (table, vid): the
    restatement checks ask for both at every data commit of a table, for each annotation (1,228 reads of a
    whole table value for one Acme card before; issue 47, cold start)."""
    key = ("stats_at", t.obj.path, vid)
    got = t.ctx.cache.findings.take(key)
    if got is None:
        obj = t.ctx.cat.get(t.obj.path, vid=vid) if vid > 0 else None
        stats = (obj.value.get("stats") or {}) if obj is not None else {}
        rows = stats.get("row_count")
        got = t.ctx.cache.findings.put(key, (stats.get("columns") or {}, rows if isinstance(rows, int) else None))
    return got


def stats_at(t: Table, vid: int) -> dict[str, Any]:
    """The table's per-column statistics as of `vid` (its object's version then; {} when absent)."""
    return _stats_at(t, vid)[0]


def rows_at(t: Table, vid: int) -> int | None:
    """The table's row count as of `vid` (None when unknown)."""
    return _stats_at(t, vid)[1]


def values_held(t: Table, col: str, vid: int) -> int | None:
    """How many rows of `t` hold a value of `col` as of `vid` (rows less nulls, from the table's
    statistics); None when the row count is unknown or the column had no statistics then."""
    rows, st = rows_at(t, vid), stats_at(t, vid).get(col)
    if rows is None or not isinstance(st, dict):
        return None
    nulls = st.get("null_count")
    return rows - nulls if isinstance(nulls, int) else rows


def values_removed(t: Table, col: str) -> list[tuple[int, float, int, int, int]]:
    """The data commits of `t` that removed rows holding a value of `col` (the rows holding one fell:
    a delete, or a rewrite with fewer such rows): (vid, time, rows before, rows after, values removed),
    oldest first. Cached per (table, snapshot, column)."""
    key = ("values_removed", t.obj.path, t.ctx.vid, col)
    got = t.ctx.cache.findings.take(key)
    if got is not None:
        return got[0]
    out = []
    for v, tt in t.tl.data_commits:
        hb, ha = values_held(t, col, v - 1), values_held(t, col, v)
        rb, ra = rows_at(t, v - 1), rows_at(t, v)
        if hb is not None and ha is not None and rb is not None and ra is not None and ha < hb:
            out.append((v, tt, rb, ra, hb - ha))
    t.ctx.cache.findings.put(key, (out,))
    return out


def pair_cost(before: dict[str, Any] | None, after: dict[str, Any] | None) -> tuple[float, int] | None:
    """How well column statistics `after` continue `before` (the same values, perhaps scaled by
    10^k): (cost, k), lower is better, or None when they cannot be the same column. Numbers compare
    min and max on a log scale around the best power of ten; other values must keep their range.
    Null counts that differ add to the cost. Names never enter."""
    if not before or not after:
        return None
    nb, na = before.get("null_count"), after.get("null_count")
    null_cost = 0.0
    if isinstance(nb, int) and isinstance(na, int) and nb != na:
        null_cost = 0.5 * abs(nb - na) / max(nb, na, 1)
    pairs = [(before.get(k), after.get(k)) for k in ("min", "max")]
    nums = [(num(b), num(a)) for b, a in pairs]
    if all(b is not None and a is not None for b, a in nums):
        ratios: list[float] = []
        for b, a in nums:
            assert b is not None and a is not None
            if (b == 0) != (a == 0) or (b != 0 and (b > 0) != (a > 0)):
                return None
            if b:
                ratios.append(math.log10(abs(a / b)))
        if not ratios:
            return null_cost, 0
        if offset(nums[0][0], nums[1][0], nums[0][1], nums[1][1]):
            return None  # moved by an offset: other values, not these scaled
        k = round(sum(ratios) / len(ratios))
        cost = sum(abs(r - k) for r in ratios) / len(ratios)
        return (None if cost > 0.15 else (cost + null_cost, k))
    if any(b is None or a is None for b, a in pairs):
        return None
    try:
        same = all(str(b) == str(a) for b, a in pairs)
    except TypeError:
        return None
    return (null_cost, 0) if same else None


def assign(costs: dict[tuple[str, str], float]) -> dict[str, str]:
    """A one-to-one assignment of left to right names minimising the summed cost (greedy over the
    cost matrix, cheapest pair first; exact for the small, well-separated matrices of renames)."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for (a, b), _c in sorted(costs.items(), key=lambda kv: (kv[1], kv[0])):
        if a not in out and b not in used:
            out[a] = b
            used.add(b)
    return out


def versioning(cols: list[lake.Column], prefixed: bool = True) -> bool:
    """Do these added columns make a table keep versions (SCD2)? By shape: a boolean flag with at
    least one date or timestamp (a validity range), or the conventional names (`SCD2`); with
    `prefixed`, also those names prefixed (`c_valid_from`), TPC-DS's `rec_start_date` / `rec_end_date`,
    or a flag named as the current rows' (`c_is_current`, a text 'Y' / 'N') with a date or timestamp."""
    fams = [type_family(c.type) for c in cols]
    names = [c.name.lower() for c in cols]
    if any(n in SCD2 for n in names) or ("bool" in fams and "time" in fams):
        return True
    return prefixed and (any(n.endswith(tuple("_" + x for x in SCD2 + VERSION_DATES)) or n in VERSION_DATES
                             for n in names) or
                         (any(n.endswith(("is_current", "current_flag")) for n in names) and "time" in fams))


def get_table(ctx: Context, name: str, tables: dict[str, Table | None]) -> Table | None:
    if name not in tables:
        obj = ctx.table(name)
        tl = ctx.timeline(name) if obj is not None else None
        tables[name] = Table(ctx, name, obj, tl) if obj is not None and tl is not None else None
    return tables[name]


def resolve_table(ctx: Context, home: Table, qualifier: str, tables: dict[str, Table | None]) -> Table | None:
    """The table a qualifier (`fct_orders`, `core.fct_orders`, a full name) names: exact, else the one
    table whose name ends with it, preferring the home table's namespace then its catalog."""
    q = qualifier.lower()
    names = list(ctx.tables())
    if q in names:
        return get_table(ctx, q, tables)
    ends = [n for n in names if n.lower().endswith("." + q)]
    if len(ends) > 1:
        ns = home.name.rsplit(".", 1)[0] + "."
        cat = home.name.split(".", 1)[0] + "."
        ends = [n for n in ends if n.startswith(ns)] or [n for n in ends if n.startswith(cat)] or ends
    return get_table(ctx, ends[0], tables) if len(ends) == 1 else None


def word_set(text: object) -> set[str]:
    return set(re.findall(r"[\w-]+", str(text or "").lower()))


def quote_id(*parts: str) -> str:
    return ".".join(map(quote, parts))


def quote_table(name: str) -> str:
    return quote_id(*name.split("."))


REMEMBER_ROWS = 10_000  # a statement's rows a Duck keeps for the next asker, at most
ANSWERED_ROWS = 400_000  # rows the router keeps of answers, across vids (least recently used out)

# A table as the checks name it (`quote_table`): three quoted identifiers joined by dots.
_NAMED = re.compile(r'"((?:[^"]|"")+)"\."((?:[^"]|"")+)"\."((?:[^"]|"")+)"')
_QUOTED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"")
_SOURCE = re.compile(r"(?<!distinct )\b(?:from|join)\b\s*(\S{0,5})", re.IGNORECASE)


def _reads(text: str) -> set[str] | None:
    """The paths of the tables `text` reads, when every table it reads is named as `quote_table`
    writes it (three quoted identifiers) and every FROM and JOIN is followed by such a name or a
    parenthesis; None otherwise (a name written another way, a comma join after a first quoted name,
    an introspection statement): such a statement is not routed. Literals and quoted identifiers are
    read as tokens, so a word inside them is never taken for a keyword."""
    if not text.lstrip()[:8].upper().startswith(("SELECT", "WITH", "DESCRIBE")):
        return None
    found = [[p.replace('""', '"') for p in m] for m in _NAMED.findall(text)]
    if not found or any(not re.fullmatch(r"[\w$-]+", p) for m in found for p in m):
        return None  # no table, or an id a path would spell otherwise
    names = {"/" + "/".join(m) for m in found}
    marked = _QUOTED.sub(lambda m: "Q" if m.group(0).startswith('"') else "L", text)
    for m in _SOURCE.finditer(marked):
        if not (m.group(1).startswith("(") or m.group(1).startswith("Q.Q.Q")):
            return None
    if re.search(r"Q\.Q\.Q\s*(?:AS\s+)?\w*\s*,", marked, re.IGNORECASE):
        return None  # a comma after a table: a second source this reading does not check
    return names


class Router:
    """Where the data checks' statements run, and their answers shared between vids (issue 45, item 6).

    Invariant: a statement that reads only the tables T has the same answer at every vid at which
    no table of T changed in between. A table changes only in a commit that writes a path under it
    that is not the catalog's own (`lake.is_reserved`: annotations are kept under `_semantic`), or a
    path above it (a namespace or catalog removed, cloned, replaced). So a statement asked at vid v is
    answered once per (text, lo), lo = the latest such commit of any table of T at or before v (the
    states of T are then fixed), and it runs at a vid of [lo, hi] (hi: the vid before the next such
    commit) where statements already ran, newest first: the checks of one pass read the basis of many
    claims at many vids, and each new vid costs the SQL layer the views of every table (~0.2 s on the
    Acme lake). Statements whose tables cannot be read from the text (`_reads`) run at v unshared.
    The commit log is read once, then only its new commits; a commit without paths changes every
    table. One router per catalog, kept with its caches (it holds no reference to the catalog, which
    those caches are weakly keyed by: the catalog is passed in)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.upto = 0                                   # commits up to this vid are indexed
        self.touched: dict[str, list[int]] = {}         # table path -> vids of its commits, ascending
        self.broad: list[tuple[int, str]] = []          # (vid, path above tables, "" for every table)
        self.ran: list[int] = []                        # vids statements ran at, in order of first use
        self.answers: cachetools.LRUCache[tuple[str, int], list[list[Any]]] = cachetools.LRUCache(
            maxsize=ANSWERED_ROWS, getsizeof=lambda rows: max(1, len(rows)))

    def _index(self, cat: CatalogAPI, vid: int) -> None:
        if vid <= self.upto:
            return
        top = max(vid, cat.latest_vid)
        for c in cat.commits(since=self.upto + 1, until=top):
            if not c.paths:
                self.broad.append((c.vid, ""))
            for p in c.paths:
                parts = p.split("/")
                if len(parts) < 4:
                    self.broad.append((c.vid, p.rstrip("/")))
                elif len(parts) == 4 or not lake.is_reserved(parts[4]):
                    got = self.touched.setdefault("/".join(parts[:4]), [])
                    if not got or got[-1] != c.vid:
                        got.append(c.vid)
        self.upto = top

    def _span(self, path: str, vid: int) -> tuple[int, int]:
        vids = self.touched.get(path, [])
        i = bisect.bisect_right(vids, vid)
        lo, hi = (vids[i - 1] if i else 0), (vids[i] - 1 if i < len(vids) else self.upto)
        for v, above in self.broad:
            if above == "" or path.startswith(above + "/"):
                if v <= vid:
                    lo = max(lo, v)
                else:
                    hi = min(hi, v - 1)
        return lo, hi

    def place(self, cat: CatalogAPI, text: str, vid: int) -> tuple[int, tuple[str, int] | None]:
        """The vid to run `text` at for an asker at `vid`, and the key its answer is shared under
        (None: not shared)."""
        names = _reads(text)
        if names is None:
            return vid, None
        with self.lock:
            self._index(cat, vid)
            lo, hi = 0, self.upto
            for n in names:
                if n not in self.touched and not any(above and n.startswith(above + "/") for _, above in self.broad):
                    return vid, None  # no commit wrote it: not a table's path as the log spells it
                a, b = self._span(n, vid)
                lo, hi = max(lo, a), min(hi, b)
            if not lo <= vid <= hi:  # cannot happen by construction; never route on a wrong span
                return vid, None
            at = max((v for v in self.ran if lo <= v <= hi), default=hi)
            if at not in self.ran:
                self.ran.append(at)
            return at, (text, lo)

    def answer(self, key: tuple[str, int]) -> list[list[Any]] | None:
        with self.lock:
            return self.answers.get(key)

    def keep(self, key: tuple[str, int], rows: list[list[Any]]) -> None:
        if len(rows) <= REMEMBER_ROWS:
            with self.lock:
                self.answers[key] = rows


def router_of(ctx: Context) -> Router:
    """The catalog's statement router (one per catalog, kept with its caches)."""
    with ctx.cache.lock:
        got = ctx.cache.router
        if not isinstance(got, Router):
            got = ctx.cache.router = Router()
        return got


class Duck:
    """The data checks' statements at one vid, each bounded like `run_sql` (`semantic._bounded`):
    sandboxed, in a SQL worker, within a time and a memory limit, whatever the annotation says.
    One Duck serves a whole-catalog pass, and several checks ask the same question (the distinct
    values of a column an enum and a relationship both name): a statement's rows are remembered
    for the Duck's life when they are few (`REMEMBER_ROWS`; `ran` counts the statements sent). With a
    `Router`, a statement is answered once for every vid at which the tables it reads are the same,
    and run at a vid other statements ran at (see `Router`). Invariant: the statements are read-only
    and all read the one snapshot `vid` (or one where every table they read is as at `vid`), so the
    same text has the same answer; a statement that failed (or went past a limit) is not remembered,
    the next asker runs it again."""

    def __init__(self, cat: CatalogAPI, vid: int, router: Router | None = None) -> None:
        self.cat, self.vid, self.router = cat, vid, router
        self._rows: dict[str, list[list[Any]]] = {}
        self.ran = 0

    def sql(self, text: str) -> list[list[Any]]:
        got = self._rows.get(text)
        if got is None:
            at, key = (self.vid, None) if self.router is None else self.router.place(self.cat, text, self.vid)
            got = self.router.answer(key) if self.router is not None and key is not None else None
            if got is None:
                self.ran += 1
                got = _bounded.query(self.cat, at, text)
                if self.router is not None and key is not None:
                    self.router.keep(key, got)
            if len(got) <= REMEMBER_ROWS:
                self._rows[text] = got
        return [list(r) for r in got]  # a caller may change its rows, never the remembered ones

    def close(self) -> None:
        pass


def duck_at(ctx: Context, vid: int) -> Duck:
    """The bounded statement runner at an earlier `vid`, one per (catalog, vid) while the cache keeps
    it: the checks that read the snapshot before a change (the copies of a verified query on each
    table it reads, a relationship's rows at its basis, a rewrite's rows either side) ask the same
    questions of the same vids (a statement's answer at a vid never changes)."""
    key = ("duck", vid)
    got = ctx.cache.findings.take(key)
    if got is None:
        got = ctx.cache.findings.put(key, (Duck(ctx.cat, vid, router_of(ctx)),))
    duck: Duck = got[0]
    return duck
