"""What every tool family shares: `ToolContext` (a catalog, the server `Options`, the semantic
`Reads`, and per-vid caches) resolves a `snapshot` argument once (handle `pin:<vid>`, vid, snapshot
name or ISO time), reads the tables and table cards at that vid, builds the inline warnings, and
fits each answer in the token budget. The families (discovery, data, history, write) are thin
adapters from typed arguments to these reads and back to the output models (`models`).

Invariants: every read of one call is at the vid its `snapshot` (or cursor) resolved to; cached
values are keyed by vid (they never change), cards also by a 30 s bucket of the clock.
"""

from __future__ import annotations

import json
import math
import threading
import time as _time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, TypeVar, cast

import cachetools
from pydantic import BaseModel

from catalog_core import lake
from catalog_core.api import CatalogAPI
from catalog_core.errors import CatalogError
from catalog_core.model import Obj
from mcp_server.mcp import models as M
from mcp_server.mcp.auth import current_caller
from mcp_server.mcp.bounds import TOKEN_BUDGET, Cursor, cut, decode_cursor, encode_cursor, fit
from mcp_server.mcp.errors import CodedToolError, catalog_error, table_suggestions
from mcp_server.mcp.reads import Reads
from mcp_server.mcp.relevance import Subject, Use, dedupe, relevant
from semantic.annotations import column_refs, table_refs
from semantic.grants import GRANTS, GrantSet, latest, principal_ids
from semantic.models import Finding, Fix, TableCard

__all__ = ["Options", "ToolContext", "HANDLE_PREFIX", "LIMITS", "iso", "cell", "finding", "fixes",
           "not_for_reporting", "grain_text", "int_or_none"]

HANDLE_PREFIX = "pin:"
MAX_VID_DIGITS = 19  # a vid is a 64-bit integer (int() of 4,300+ digits raises; 20 overflow the engine's key)
# tool -> (default limit, max limit)
LIMITS: dict[str, tuple[int, int]] = {
    "search_tables": (10, 50),
    "describe_table": (40, 200),
    "get_column_values": (20, 200),
    "list_metrics": (20, 100),
    "query_metric": (100, 1000),
    "query_catalog": (10, 200),
    "list_snapshots": (20, 200),
    "diff_snapshots": (50, 500),
    "check_staleness": (20, 200),
    "get_lineage": (50, 200),
    "run_sql": (50, 1000),
}
TEXT_SUMMARY = 240          # one-line descriptions in lists and summary cards
TEXT_FULL = 2000            # detail="full"
VALUE_CHARS = 1000          # query_catalog object values
CELL_CHARS = 300            # one SQL cell
MAX_WARNINGS = 5            # per table
MAX_FIXES = 5

T = TypeVar("T")
OutT = TypeVar("OutT", bound=BaseModel)


@dataclass(frozen=True)
class Options:
    """Server options; none changes any tool's output schema."""

    author: str = "agent"           # the author of annotations when the transport has no principal
    now: float | None = None        # freshness is judged at this time (tests); default: the clock
    token_budget: int = TOKEN_BUDGET  # o200k tokens per response; longer lists are cut with a next_cursor
    reads: Reads = field(default_factory=Reads)  # what the tools read of the semantic layer


def iso(t: float | None) -> str:
    """ISO-8601 UTC, milliseconds rounded up, so that resolving the text finds the commit at `t`."""
    if t is None:
        return ""
    ms = math.ceil(t * 1000) / 1000
    return datetime.fromtimestamp(ms, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def cell(v: object) -> object:
    """One SQL cell as the tools show it: long text cut to CELL_CHARS, NaN/inf as null."""
    if isinstance(v, str) and len(v) > CELL_CHARS:
        return cut(v, CELL_CHARS)
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, (list, dict)):
        text = json.dumps(v, default=str)
        return v if len(text) <= CELL_CHARS else cut(text, CELL_CHARS)
    return v


class _LRU:
    """A small thread-safe LRU of values that never change (keyed by vid or by text): cachetools'
    LRUCache under a lock; a hit counts as a use."""

    def __init__(self, size: int = 64) -> None:
        self.data: cachetools.LRUCache[Any, Any] = cachetools.LRUCache(maxsize=size)
        self.lock = threading.Lock()

    def get(self, key: Any, make: Callable[[], T]) -> T:
        with self.lock:
            if key in self.data:
                return cast(T, self.data[key])
        value = make()
        with self.lock:
            self.data[key] = value
        return value


_SQL_REFS_MAX = 512  # statements whose sqlglot table and column references are kept


_refs = _LRU(_SQL_REFS_MAX)  # (kind, text) -> sqlglot's references, or None when the text does not parse


def _parsed(kind: str, sql: str, make: Callable[[str], Any]) -> Any:
    """`make(sql)` (`table_refs` or `column_refs`), memoized by the text itself (both are pure
    functions of it: no catalog, no vid), at most `_SQL_REFS_MAX` texts, least recently used out.
    A text that does not parse is kept as such (None) and raises again for each caller. An agent
    session repeats statements (paging, retries, the same metric), and query_metric's SQL costs
    sqlglot 5-15 ms per parse."""

    def attempt() -> Any:
        try:
            return make(sql)
        except Exception:  # noqa: BLE001 - kept as "does not parse", raised below for every caller
            return None

    got = _refs.get((kind, sql), attempt)
    if got is None:
        raise ValueError("the statement does not parse")
    return got


def sql_table_refs(sql: str) -> list[tuple[str, ...]]:
    """`semantic.annotations.table_refs`, memoized per text (a new list each call)."""
    return list(_parsed("tables", sql, table_refs))


def sql_column_refs(sql: str) -> tuple[set[str], bool]:
    """`semantic.annotations.column_refs`, memoized per text (a new set each call)."""
    names, star = _parsed("columns", sql, column_refs)
    return set(names), star


AFTER_ANSWER_MAX_S = 30.0  # `after_answer` work waits at most this long for the first answer


_SCOPES_MAX = 256   # principals (by grants and ids) whose views a ToolContext keeps
_SCOPE_VIDS = 64    # vids per principal whose visible tables are kept
_SCOPE_SQL = 512    # statements per principal whose grant check is kept


class _Scope:
    """What one set of grants lets one principal (its ids) see: per vid, the tables it may describe
    and the names of the others, and the answers of the grant check of its statements (all of
    them functions of the grants, the ids and the vid, which never change)."""

    __slots__ = ("grants", "ids", "lim", "views", "checked")

    def __init__(self, grants: GrantSet, ids: tuple[str, ...]) -> None:
        self.grants, self.ids = grants, ids
        self.lim = (grants, ids)
        self.views: dict[int, tuple[dict[str, Obj], tuple[str, ...]]] = {}
        self.checked: dict[tuple[int, str, str], str | None] = {}

    def view(self, vid: int, every: Callable[[int], dict[str, Obj]]) -> tuple[dict[str, Obj], tuple[str, ...]]:
        got = self.views.get(vid)
        if got is None:
            allows, ids = self.grants.allows, self.ids
            tables = every(vid)
            seen = {n: o for n, o in tables.items() if allows(ids, "describe", o.path)}
            got = (seen, tuple(n for n in tables if n not in seen))
            if len(self.views) >= _SCOPE_VIDS:
                self.views.clear()
            self.views[vid] = got
        return got


def make_context(catalog: CatalogAPI, *, reads: Reads | None = None, author: str = "agent", now: float | None = None,
                 token_budget: int = TOKEN_BUDGET) -> ToolContext:
    """The tools' shared state over `catalog` (`create_server`'s options; the stdio front makes it before the
    server, which then takes it: front.py)."""
    if isinstance(token_budget, bool) or not isinstance(token_budget, int) or token_budget < 500:
        raise ValueError(f"token_budget must be an integer of at least 500 tokens, got {token_budget!r}")
    return ToolContext(catalog, Options(author=author, now=now, token_budget=token_budget, reads=reads or Reads()))


class ToolContext:
    """A catalog as the tools read it: snapshot resolution, tables and cards per vid, warnings, budget."""

    def __init__(self, cat: CatalogAPI, options: Options | None = None) -> None:
        self.cat = cat
        self.options = options or Options()
        self.reads = self.options.reads
        self._times = _LRU(4096)
        self._tables = _LRU(16)
        # grants (issue 48): (grants vid, principal ids) -> what those grants let that principal see,
        # and the last answer of `limits` (keyed by the latest vid and the caller's name and groups)
        self._scopes: dict[tuple[int, tuple[str, ...]], _Scope] = {}
        self._last_scope: tuple[int, str, tuple[str, ...], _Scope | None] | None = None
        self._cards = _LRU(512)
        # (lo, hi, prefix) -> summarized changes: the diff between two vids never changes, and a
        # wide one (vid 3 to 149 of the Acme lake: 6,000 objects read) costs ~1 s per page otherwise
        self.diffs = _LRU(16)
        # set by the stdio transport at its first answer to a call (issue 47, cold start): background work a call
        # starts (`after_answer`) waits for it, so nothing competes with a session's first answer; None: no wait
        self.answered: threading.Event | None = None

    def after_answer(self, work: Callable[[], object]) -> None:
        """Run `work` (a background hint that never raises, e.g. `cc.warm_sql`) now, or, before the session's
        first answer to a call has been written (`answered` not set), in a thread once it has (at most
        AFTER_ANSWER_MAX_S later)."""
        gate = self.answered
        if gate is None or gate.is_set():
            work()
            return

        def later() -> None:
            gate.wait(AFTER_ANSWER_MAX_S)
            work()

        threading.Thread(target=later, name="semcat-after-answer", daemon=True).start()

    # ------------------------------------------------------------------ snapshots
    def now(self) -> float:
        return self.options.now if self.options.now is not None else _time.time()
    def time_of(self, vid: int) -> float:
        def make() -> float:
            cs = self.cat.commits(since=vid, until=vid)
            return cs[-1].time if cs else 0.0
        return self._times.get(vid, make)

    def snap(self, vid: int) -> M.SnapshotOut:
        return M.SnapshotOut(vid=vid, time=iso(self.time_of(vid)), handle=f"{HANDLE_PREFIX}{vid}")

    def resolve(self, snapshot: int | str | None) -> int:
        """The vid of a snapshot argument."""
        if snapshot is None or snapshot == "":
            return self.cat.resolve(None)
        if isinstance(snapshot, bool):
            raise CodedToolError("snapshot must be a pin_snapshot handle, a vid, a snapshot name or an ISO time", "InvalidValueError")
        if isinstance(snapshot, str) and snapshot.startswith(HANDLE_PREFIX):
            rest = snapshot[len(HANDLE_PREFIX):]
            if not (rest.isascii() and rest.isdigit()):
                raise CodedToolError(f"{snapshot!r} is not a snapshot handle; pin_snapshot returns handles like 'pin:42'", "InvalidValueError")
            ref: int | str = int(rest) if len(rest) <= MAX_VID_DIGITS else rest  # a longer one: refused below
        else:
            ref = snapshot
        if isinstance(ref, str) and ref.isascii() and ref.isdigit() and len(ref) > MAX_VID_DIGITS:
            raise CodedToolError(f"vid {ref[:20]}... ({len(ref)} digits) does not exist: a vid has at most "
                                 f"{MAX_VID_DIGITS} digits (list_snapshots lists them)", "SnapshotNotFoundError")
        if isinstance(ref, int) and ref < 0:
            raise CodedToolError(f"vid {ref} does not exist; vids start at 0 (list_snapshots lists them)", "SnapshotNotFoundError")
        try:
            vid = self.cat.resolve(ref)
        except CatalogError as exc:
            raise catalog_error(exc) from None
        return vid

    def at(self, snapshot: int | str | None, cursor: str | None, tool: str, key: str) -> tuple[int, int]:
        """(vid, offset) for a paged call: a cursor carries the vid of its first page."""
        if cursor:
            c = decode_cursor(cursor, tool, key)
            if snapshot is not None and snapshot != "" and self.resolve(snapshot) != c.vid:
                raise CodedToolError("cursor was made at another snapshot than the one passed; pass the same snapshot "
                                "(or none) with a cursor", "InvalidValueError")
            return c.vid, c.offset
        return self.resolve(snapshot), 0

    def fit(self, out: OutT, summary: str, field: str, tool: str, vid: int, key: str,
            offset: int) -> tuple[OutT, str]:
        """(out, summary) within the token budget: the list `field` cut, next_cursor at the first item left out."""
        return fit(out, summary, field, lambda k: encode_cursor(Cursor(tool, vid, offset + k, key)),
                   self.options.token_budget)

    # ------------------------------------------------------------------ catalog views at a vid
    def all_tables(self, vid: int) -> dict[str, Obj]:
        """Every table at `vid` by dotted name, whoever calls (see `tables`)."""
        def make() -> dict[str, Obj]:
            objs = self.cat.query(lake.tables_query(), vid=vid)
            return {lake.name_of(o.path): o for o in objs if lake.is_table(o.value)}
        return self._tables.get(vid, make)

    # ------------------------------------------------------------------ grants (issue 48)
    def scope(self) -> _Scope | None:
        """What grants let the running call's caller see; None when they do not limit it (no caller
        or an admin one, or a catalog without grants). The latest grants decide at every vid: a
        revoked principal reads no old snapshot either (what was granted at a vid is
        `semantic.grants.list_grants(cat, vid)`).

        Cheap on the warm path (the cost target of issue 48: <= 5% of a warm describe_table): while
        the catalog's latest vid and the caller's name and groups are those of the last call, the
        last answer stands (a grant or revoke, by any process or straight through the catalog, is a
        commit: the latest vid moves, and `semantic.grants.latest` reads the new commits)."""
        who = current_caller()
        if who is None or who.admin:
            return None
        now = self.cat.latest_vid
        last = self._last_scope
        if last is not None and last[0] == now and last[1] == who.name and last[2] == who.groups:
            return last[3]
        grants = latest(self.cat)
        out: _Scope | None = None
        if grants.active:
            ids = principal_ids(who.name, who.groups)
            key = (grants.vid, ids)
            out = self._scopes.get(key)
            if out is None or out.grants is not grants:
                if len(self._scopes) >= _SCOPES_MAX:
                    self._scopes.clear()
                out = self._scopes[key] = _Scope(grants, ids)
        self._last_scope = (now, who.name, who.groups, out)
        return out

    def limits(self, vid: int) -> tuple[GrantSet, tuple[str, ...]] | None:
        """(the grants, the caller's principal ids) when grants limit the running call; None when they
        do not (see `scope`)."""
        sc = self.scope()
        return None if sc is None else sc.lim

    def tables(self, vid: int) -> dict[str, Obj]:
        """Every table at `vid` by dotted name that the caller may describe: the one place tools learn
        which tables exist, so an ungranted table is to them exactly a missing one."""
        sc = self.scope()
        if sc is None:
            return self.all_tables(vid)
        return sc.view(vid, self.all_tables)[0]

    def hidden(self, vid: int) -> tuple[str, ...]:
        """The dotted names of the tables at `vid` the caller may not describe (none when not limited)."""
        sc = self.scope()
        return () if sc is None else sc.view(vid, self.all_tables)[1]

    def may(self, priv: str, path: str, vid: int) -> bool:
        """Whether the caller holds `priv` on the object at `path` at `vid` (always, without limits)."""
        lim = self.limits(vid)
        return lim is None or lim[0].allows(lim[1], priv, path)

    def shows(self, path: str, vid: int) -> bool:
        """Whether query_catalog and diff_snapshots show the object at `path` to the caller: the read
        model's `shows`, and under grants only objects of tables it may describe (a catalog or
        namespace when it may describe something in it), never a `_grants` folder."""
        if not self.reads.shows(path):
            return False
        lim = self.limits(vid)
        if lim is None:
            return True
        parts = path.strip("/").split("/")
        if GRANTS in parts:
            return False
        if len(parts) >= 3 and not lake.is_reserved(parts[2]):
            return lim[0].allows(lim[1], "describe", path)
        if lim[0].allows(lim[1], "describe", path):
            return True
        prefix = "/" + "/".join(parts[:2]) + "/"
        return any(o.path.startswith(prefix) for o in self.tables(vid).values())

    def missing_table(self, name: str, vid: int) -> CodedToolError:
        """The refusal for a table that does not exist, or that the caller may not see (the same bytes)."""
        return CodedToolError(f"table {name!r} does not exist at vid {vid}; {table_suggestions(name, self.tables(vid))}",
                              "NoSuchTableError")

    def check_sql(self, sql: str, vid: int, priv: str = "select") -> None:
        """Under grants: refuse a statement that reads a table the caller may not `priv`, exactly as
        one that reads a missing table, and one that reads DuckDB's catalog
        (`mcp_server.http.access.sql_refusal`: the parsed statement, names resolved as DuckDB
        resolves them). The answer is kept per caller, vid and text."""
        sc = self.scope()
        if sc is None:
            return
        key = (vid, priv, sql)
        try:
            bad = sc.checked[key]
        except KeyError:
            from mcp_server.http.access import sql_refusal

            grants, ids = sc.lim
            bad = sql_refusal(sql, self.all_tables(vid), lambda p: grants.allows(ids, priv, p))
            if len(sc.checked) >= _SCOPE_SQL:
                sc.checked.clear()
            sc.checked[key] = bad
        if bad is None:
            return
        from mcp_server.http.access import INTROSPECTION_REFUSED, UNREADABLE_REFUSED

        if bad in (INTROSPECTION_REFUSED, UNREADABLE_REFUSED):  # DuckDB's catalog lists every table's view
            raise CodedToolError(bad, "PermissionDeniedError")
        raise self.missing_table(bad, vid)

    def table(self, name: str, vid: int, priv: str = "describe") -> Obj:
        if not isinstance(name, str) or not name.strip():
            raise CodedToolError("table must be a dotted name catalog.namespace.table; search_tables lists them", "InvalidValueError")
        tables = self.tables(vid)
        obj = tables.get(name.strip())
        if obj is None or (priv != "describe" and not self.may(priv, obj.path, vid)):
            raise self.missing_table(name, vid)
        return obj

    def card(self, name: str, vid: int) -> TableCard | None:
        """The `Reads.card` of a table (cached per vid for 30 s of freshness); None: no semantic layer."""
        bucket = int(self.now() // 30)
        return self._cards.get((name, vid, bucket), lambda: self.reads.card(self.cat, name, vid, self.now()))

    # ------------------------------------------------------------------ warnings
    def warnings_for(self, names: Iterable[str], vid: int, use: Use | None = None) -> list[M.Warning]:
        """The warnings of each table among `names` (in order), only those `use` rests on when given."""
        out: list[M.Warning] = []
        for name in dict.fromkeys(names):
            if name in self.tables(vid):
                out += self.table_warnings(name, vid, use)
        return out

    def table_warnings(self, name: str, vid: int, use: Use | None = None) -> list[M.Warning]:
        """Deprecation, missed freshness SLA and stale/suspect findings of one table: one warning per
        underlying change (`relevance.dedupe`), only those the answer rests on when `use` says what it
        read (`relevance.relevant`), at most MAX_WARNINGS."""
        items = dedupe(self._table_warnings(name, vid), fold)
        kept = relevant(items, use) if use is not None else [w for _s, w in items]
        seen: set[tuple[str | None, str]] = set()
        out: list[M.Warning] = []
        for w in kept:
            assert isinstance(w, M.Warning)
            if (w.reason, w.message) not in seen:
                seen.add((w.reason, w.message))
                out.append(w)
        return out[:MAX_WARNINGS]

    def _table_warnings(self, name: str, vid: int) -> list[tuple[Subject, M.Warning]]:
        """The card's deprecation, missed SLA and stale/suspect findings (none without a card)."""
        card = self.card(name, vid)
        out: list[tuple[Subject, M.Warning]] = []
        if card is None:
            return out
        dep = card.deprecation
        if dep is not None:
            out.append((Subject(name), dep_warning(name, dep.reason, dep.successor)))
        fr = card.freshness
        if fr.status == "missed":
            age = None if fr.age_seconds is None else fr.age_seconds / 3600
            out.append((Subject(name), M.Warning(
                table=name, kind="freshness", status="suspect", reason="freshness_sla_missed",
                message=f"past its freshness SLA {fr.sla}: last data load {'?' if age is None else f'{age:.1f} h'} "
                        "ago")))
        for f in card.findings:
            if f.status in ("stale", "suspect") and f.reason != "freshness_sla_missed":
                out.append((subject(name, f), M.Warning(
                    table=name, kind="finding", status=f.status, reason=f.reason,
                    message=cut(f.message, TEXT_SUMMARY),
                    suggestion=None if f.suggestion is None else cut(f.suggestion, 200),
                    fixes=fixes(f.fixes))))
        return out

    def period_warnings(self, sql: str, tables: Iterable[str], vid: int) -> list[M.Warning]:
        """A warning per table whose partial or failed period (its completeness at `vid`) the
        statement's filter on the table's date partition column reaches (semantic.completeness.
        periods_reached; none when that cannot be told, e.g. no filter on the column)."""
        from semantic.completeness import periods_reached

        out: list[M.Warning] = []
        for name in dict.fromkeys(tables):
            obj = self.tables(vid).get(name)
            card = self.card(name, vid) if obj is not None else None
            comp = None if card is None else card.freshness.completeness
            pcols = lake.partition_columns(obj.value) if obj is not None else []
            if comp is None or not comp.incomplete or not pcols:
                continue
            status = {p.period: p.status for p in comp.incomplete}
            for period in periods_reached(sql, name, pcols[0], list(status)) or []:
                out.append(M.Warning(
                    table=name, kind="freshness", status="suspect", reason="period_incomplete",
                    message=f"{period} is {status[period]} in {name} at this snapshot (complete through "
                            f"{comp.latest_complete or 'no period'}); the statement's filter on {pcols[0]} reaches it"))
        return out[:MAX_WARNINGS]

    def sql_use(self, sql: str, tables: Iterable[str]) -> Use:
        """What a statement reads: its tables and the column names it mentions (every column when it
        selects `*` or does not parse)."""
        try:
            names, star = sql_column_refs(sql)
        except Exception:  # noqa: BLE001 - unparsable: keep every warning of its tables
            names, star = set(), True
        return Use(frozenset(tables), None if star else frozenset(names))

    def sql_tables(self, sql: str, vid: int) -> list[str]:
        """The catalog tables a statement reads (sqlglot; CTE names excluded)."""
        try:
            refs = sql_table_refs(sql)
        except Exception:  # noqa: BLE001 - unparsable: no table
            return []
        tables = self.tables(vid)
        known: dict[str, str] | None = None  # lower case -> name (DuckDB's names are case-insensitive)
        out: list[str] = []
        for parts in refs:
            name = ".".join(parts)
            if name in tables:
                out.append(name)
                continue
            if known is None:
                known = {k.lower(): k for k in tables}
            name = name.lower()
            if name in known:
                out.append(known[name])
            elif len(parts) < 3:
                hits = [v for k, v in known.items() if k.endswith("." + name)]
                if len(hits) == 1:
                    out.append(hits[0])
        return list(dict.fromkeys(out))


def dep_warning(name: str, reason: str, successor: str | None) -> M.Warning:
    """The warning that `name` is deprecated, with its successor as a fix."""
    msg = f"{name} is deprecated" + (f": {cut(reason, 160)}" if reason else "")
    return M.Warning(table=name, kind="deprecated", message=msg,
                     suggestion=f"use {successor} instead" if successor else None,
                     fixes=[M.FixOut(action="successor", params={"table": successor})] if successor else [])


def finding(f: Finding) -> M.FindingOut:
    """A staleness finding as the tools show it."""
    ev = f.evidence
    return M.FindingOut(target=f.target, annotation=f.annotation, status=f.status, reason=f.reason,
                        message=cut(f.message, 400), suggestion=None if f.suggestion is None else cut(f.suggestion, 300),
                        fixes=fixes(f.fixes), evidence_vids=list(ev.vids or [])[:10],
                        scan_vid=_int(ev.values.get("scan_vid")), outdated_by=_int(ev.values.get("outdated_by")))


def _int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def fixes(items: Iterable[Fix]) -> list[M.FixOut]:
    """A finding's fixes as the tools show them: at most MAX_FIXES, list params cut to 20 items."""
    out = []
    for x in list(items or [])[:MAX_FIXES]:
        params = {k: (v[:20] if isinstance(v, list) else v) for k, v in (x.params or {}).items()}
        out.append(M.FixOut(action=x.action, params=params))
    return out


def not_for_reporting(v: object, text_limit: int) -> M.NotForReportingOut | None:
    """The table field not_for_reporting as the tools show it (None when absent or malformed)."""
    if not isinstance(v, dict):
        return None
    return M.NotForReportingOut(reason=cut(str(v.get("reason") or ""), text_limit),
                                use_instead=[str(x) for x in v.get("use_instead") or []][:10])


def grain_text(g: object) -> str:
    """A grain annotation as one line: its text and unique keys."""
    if isinstance(g, dict):
        text = str(g.get("text") or "")
        keys = g.get("keys") or []
        return text + (f" (unique: {', '.join(map(str, keys))})" if keys else "")
    return str(g)


def int_or_none(v: object) -> int | None:
    """`v` when it is an int (not a bool), else None."""
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def subject(table: str, f: Finding) -> Subject:
    """What a finding's annotation is about (see `relevance`)."""
    ann = str(f.annotation or "")
    vids = list(getattr(f.evidence, "vids", None) or [])
    change = max(vids) if vids else None
    cause = getattr(f, "cause", None)
    parts = str(f.target).split(".")
    if len(parts) >= 4:
        return Subject(table, "column", column=parts[-1], change=change, cause=cause)
    # one change to a column's values merged with the table annotations that name them (its target is
    # then the table): still about that column, so an answer that never reads it does not rest on it
    col = (getattr(f.evidence, "values", None) or {}).get("column")
    if isinstance(col, str) and (ann.startswith("column.") or f.reason == "values_restated"):
        return Subject(table, "column", column=col, change=change, cause=cause)
    if ann.startswith("relationship."):
        to = (getattr(f.evidence, "values", None) or {}).get("to")
        return Subject(table, "relationship", related=to if isinstance(to, str) else None, change=change, cause=cause)
    if ann.startswith("metric."):
        return Subject(table, "metric", name=ann.split(".", 1)[1], change=change, cause=cause)
    if ann.startswith("verified_query."):
        return Subject(table, "verified_query", name=ann.split(".", 1)[1], change=change, cause=cause)
    return Subject(table, change=change, cause=cause)


def fold(kept: M.Warning, other: M.Warning) -> M.Warning:
    """One warning for one change: the first, stale if either is, with the other's fixes and reason."""
    extra = [fx for fx in other.fixes if fx not in kept.fixes]
    note = f" (also {other.reason})" if other.reason and other.reason != kept.reason and \
        f"also {other.reason}" not in kept.message else ""
    return kept.model_copy(update={"status": "stale" if "stale" in (kept.status, other.status) else kept.status,
                                   "fixes": list(kept.fixes) + extra, "message": kept.message + note})

