"""What each MCP tool does, independent of the MCP wiring (`server.py` registers these).

`Tools(cat, options)` holds a catalog (`CatalogAPI`: embedded or remote) and answers each tool call
with an output model and a one-line summary. Every read resolves its `snapshot` argument once
(handle `pin:<vid>`, vid, snapshot name or ISO time) and reads only that vid. Errors an agent can
act on are `ToolError`s; catalog errors become `CodedToolError`s with their message, a hint, and
the error class name as `code` (the server puts it in the error result's structured content).
Messages an agent reads name MCP tools, not Python calls (`for_agents` rewrites catalog texts).

The semantic layer (`semantic`) is optional at import time: without it, search and describe read
the catalog's metadata and the raw annotation objects; with it they use `sm.describe`,
`sm.staleness`, `sm.join_path`, `sm.metrics`, `sm.metric_sql`, `sm.annotate` (and `sm.search`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
import threading
import time as _time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, TypeVar

from mcp.server.mcpserver.exceptions import ToolError

from catalog_core import lake
from catalog_core.api import CatalogAPI
from catalog_core.errors import CatalogError, NoSuchTableError, SnapshotNotFoundError
from catalog_core.model import Obj
from mcp_server.mcp import models as M
from mcp_server.mcp.bounds import (
    TOKEN_BUDGET,
    Cursor,
    args_key,
    cut,
    cut_value,
    decode_cursor,
    encode_cursor,
    fit,
    page,
)
from mcp_server.mcp.relevance import Subject, Use, dedupe, relevant

__all__ = ["Options", "Tools", "HANDLE_PREFIX", "LIMITS", "table_suggestions", "CodedToolError", "for_agents"]

HANDLE_PREFIX = "pin:"
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
    "run_sql": (50, 1000),
}
TEXT_SUMMARY = 240          # one-line descriptions in lists and summary cards
TEXT_FULL = 2000            # detail="full"
VALUE_CHARS = 1000          # query_catalog object values
CELL_CHARS = 300            # one SQL cell
SQL_TIMEOUT_S = 10.0
MAX_WARNINGS = 5            # per table

T = TypeVar("T")


@dataclass(frozen=True)
class Options:
    """Server options. `hide_annotations` is the eval's `bare` condition (no semantic layer at all);
    `hide_findings` shows annotations but never what staleness detection says about them (the
    eval's `stale` condition). Neither changes any tool's output schema."""

    hide_annotations: bool = False
    hide_findings: bool = False
    author: str = "agent"           # the author of annotations when the transport has no principal
    now: float | None = None        # freshness is judged at this time (tests); default: the clock
    token_budget: int = TOKEN_BUDGET  # o200k tokens per response; longer lists are cut with a next_cursor


def iso(t: float | None) -> str:
    """ISO-8601 UTC, milliseconds rounded up, so that resolving the text finds the commit at `t`."""
    if t is None:
        return ""
    ms = math.ceil(t * 1000) / 1000
    return datetime.fromtimestamp(ms, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _closest(word: str, choices: Iterable[str], limit: int = 3) -> list[str]:
    from rapidfuzz import fuzz, process

    pool = list(dict.fromkeys(choices))
    if not pool:
        return []
    return [h[0] for h in process.extract(word, pool, scorer=fuzz.WRatio, limit=limit, score_cutoff=55)]


def table_suggestions(word: str, names: Iterable[str]) -> str:
    names = list(names)
    close = _closest(word, names)
    if not close:  # also match the bare table name against the last part
        short = {n.rsplit(".", 1)[-1]: n for n in names}
        close = [short[s] for s in _closest(word.rsplit(".", 1)[-1], short)]
    if close:
        return "did you mean " + " or ".join(repr(c) for c in close) + "?"
    return "search_tables lists the tables"


class _LRU:
    """A small thread-safe LRU of values that never change (keyed by vid)."""

    def __init__(self, size: int = 64) -> None:
        self.size, self.data, self.lock = size, OrderedDict[Any, Any](), threading.Lock()

    def get(self, key: Any, make: Callable[[], T]) -> T:
        with self.lock:
            if key in self.data:
                self.data.move_to_end(key)
                return self.data[key]
        value = make()
        with self.lock:
            self.data[key] = value
            while len(self.data) > self.size:
                self.data.popitem(last=False)
        return value


def _semantic() -> Any:
    """The `semantic` package, or None before it exists."""
    try:
        import semantic
    except ImportError:
        return None
    return semantic


def has(fn: str) -> bool:
    sm = _semantic()
    return sm is not None and callable(getattr(sm, fn, None))


class CodedToolError(ToolError):
    """A ToolError with a machine-readable `code`: the name of the catalog error class it stands
    for (e.g. "NoSuchTableError", "SqlTimeoutError"), and for a "SqlRefusedError" the sandbox
    `rule` it broke. The message is what the agent reads; the code is for programs."""

    def __init__(self, message: str, code: str, rule: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.rule = rule


def coded(exc: CatalogError, message: str) -> CodedToolError:
    """`message` (rewritten `for_agents`) as a CodedToolError with the code and rule of `exc`."""
    rule = exc.details.get("rule") if isinstance(getattr(exc, "details", None), dict) else None
    return CodedToolError(for_agents(message), type(exc).__name__, rule if isinstance(rule, str) else None)


# Catalog texts written for Python callers and what an agent calling MCP tools should read instead
# (the catalog's own messages stay right for its Python API).
_FOR_AGENTS = (
    (re.compile(r"list snapshots with snapshots\(\)"), "list_snapshots lists them"),
    (re.compile(r",? or raise timeout_s"), " (the tool's time limit is fixed)"),
    (re.compile(r"cat\.clone\(source, branch\) \(semcat branch create\)"), "semcat branch create"),
    (re.compile(r"cat\.branches\(\)"), "semcat branch list"),
)


def for_agents(message: str) -> str:
    """`message` with hints that name Python calls or arguments rewritten to name MCP tools."""
    for pattern, text in _FOR_AGENTS:
        message = pattern.sub(text, message)
    return message


def _catalog_error(exc: CatalogError, names: Callable[[], list[str]] | None = None) -> ToolError:
    """A CodedToolError for a catalog error: its message (`for_agents`), plus did-you-mean for unknown tables."""
    msg = for_agents(exc.message if hasattr(exc, "message") else str(exc))
    hints: list[str] = []
    dym = exc.details.get("did_you_mean") if isinstance(getattr(exc, "details", None), dict) else None
    if isinstance(exc, NoSuchTableError) and not dym and names is not None and "did you mean" not in msg:
        name = exc.details.get("name") if isinstance(exc.details, dict) else None
        if isinstance(name, str):
            hints.append(table_suggestions(name, names()))
    if isinstance(exc, SnapshotNotFoundError) and "list_snapshots" not in msg:
        hints.append("snapshot takes a pin_snapshot handle, a vid, a snapshot name or an ISO time; "
                      "list_snapshots lists them")
    text = msg + ("; " + "; ".join(hints) if hints else "")
    return coded(exc, text)


class Tools:
    def __init__(self, cat: CatalogAPI, options: Options | None = None) -> None:
        self.cat = cat
        self.options = options or Options()
        self._times = _LRU(4096)
        self._tables = _LRU(16)
        self._anns = _LRU(16)
        self._cards = _LRU(512)
        # (lo, hi, prefix) -> summarized changes: the diff between two vids never changes, and a
        # wide one (vid 3 to 149 of the Acme lake: 6,000 objects read) costs ~1 s per page otherwise
        self._diffs = _LRU(16)

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
            ref: int | str = int(rest)
        else:
            ref = snapshot
        if isinstance(ref, int) and ref < 0:
            raise CodedToolError(f"vid {ref} does not exist; vids start at 0 (list_snapshots lists them)", "SnapshotNotFoundError")
        try:
            vid = self.cat.resolve(ref)
        except CatalogError as exc:
            raise _catalog_error(exc) from None
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

    def fit(self, out: Any, summary: str, field: str, tool: str, vid: int, key: str, offset: int) -> Any:
        """(out, summary) within the token budget: the list `field` cut, next_cursor at the first item left out."""
        return fit(out, summary, field, lambda k: encode_cursor(Cursor(tool, vid, offset + k, key)),
                   self.options.token_budget)

    # ------------------------------------------------------------------ catalog views at a vid
    def tables(self, vid: int) -> dict[str, Obj]:
        """Every table at `vid` by dotted name."""
        def make() -> dict[str, Obj]:
            objs = self.cat.query(lake.tables_query(), vid=vid)
            return {lake.name_of(o.path): o for o in objs if lake.is_table(o.value)}
        return self._tables.get(vid, make)

    def table(self, name: str, vid: int) -> Obj:
        if not isinstance(name, str) or not name.strip():
            raise CodedToolError("table must be a dotted name catalog.namespace.table; search_tables lists them", "InvalidValueError")
        tables = self.tables(vid)
        obj = tables.get(name.strip())
        if obj is None:
            raise CodedToolError(f"table {name!r} does not exist at vid {vid}; {table_suggestions(name, tables)}",
                                 "NoSuchTableError")
        return obj

    def raw_annotations(self, vid: int) -> dict[str, list[dict[str, Any]]]:
        """Annotation objects of every table at `vid` (raw stored values), by table name."""
        def make() -> dict[str, list[dict[str, Any]]]:
            out: dict[str, list[dict[str, Any]]] = {}
            q = '/*/*/*/[obj_id = "_semantic"]/[obj_type = "annotation"]'
            for o in self.cat.query(q, vid=vid):
                table = lake.name_of(o.path.rsplit("/", 2)[0])
                out.setdefault(table, []).append(dict(o.value, vid=o.vid))
            return out
        if self.options.hide_annotations:
            return {}
        return self._anns.get(vid, make)

    def card(self, name: str, vid: int) -> Any:
        """`sm.describe` of a table (cached per vid for 30 s of freshness), or None without it."""
        if self.options.hide_annotations or not has("describe"):
            return None
        sm = _semantic()
        bucket = int(self.now() // 30)
        return self._cards.get((name, vid, bucket), lambda: sm.describe(self.cat, name, snapshot=vid,
                                                                          now=self.now()))

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
        if self.options.hide_annotations:
            return []
        items = dedupe(self._table_warnings(name, vid), _fold)
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
        card = self.card(name, vid)
        out: list[tuple[Subject, M.Warning]] = []
        if card is not None:
            dep = card.deprecation
            if dep is not None:
                out.append((Subject(name), self._dep_warning(name, dep.reason, dep.successor)))
            fr = card.freshness
            if fr.status == "missed" and not self.options.hide_findings:
                age = None if fr.age_seconds is None else fr.age_seconds / 3600
                out.append((Subject(name), M.Warning(
                    table=name, kind="freshness", status="suspect", reason="freshness_sla_missed",
                    message=f"past its freshness SLA {fr.sla}: last data load {'?' if age is None else f'{age:.1f} h'} "
                            "ago")))
            if not self.options.hide_findings:
                for f in card.findings:
                    if f.status in ("stale", "suspect") and f.reason != "freshness_sla_missed":
                        out.append((_subject(name, f), M.Warning(
                            table=name, kind="finding", status=f.status, reason=f.reason,
                            message=cut(f.message, TEXT_SUMMARY),
                            suggestion=None if f.suggestion is None else cut(f.suggestion, 200),
                            fixes=_fixes(f.fixes))))
            return out
        for a in self.raw_annotations(vid).get(name, []):
            if a.get("key") == "table.deprecated" and isinstance(a.get("value"), dict):
                v = a["value"]
                out.append((Subject(name), self._dep_warning(name, str(v.get("reason") or ""), v.get("replaced_by"))))
        return out

    def sql_use(self, sql: str, tables: Iterable[str]) -> Use:
        """What a statement reads: its tables and the column names it mentions (every column when it
        selects `*` or does not parse)."""
        from semantic.annotations import column_refs

        try:
            names, star = column_refs(sql)
        except Exception:  # noqa: BLE001 - unparsable: keep every warning of its tables
            names, star = set(), True
        return Use(frozenset(tables), None if star else frozenset(names))

    @staticmethod
    def _dep_warning(name: str, reason: str, successor: str | None) -> M.Warning:
        msg = f"{name} is deprecated" + (f": {cut(reason, 160)}" if reason else "")
        return M.Warning(table=name, kind="deprecated", message=msg,
                         suggestion=f"use {successor} instead" if successor else None,
                         fixes=[M.FixOut(action="successor", params={"table": successor})] if successor else [])

    # ================================================================== tools
    def pin_snapshot(self, as_of: int | str | None, name: str | None) -> tuple[M.PinOut, str]:
        if as_of not in (None, "") and name not in (None, ""):
            raise CodedToolError("pass as_of or name, not both", "InvalidValueError")
        vid = self.resolve(name if name not in (None, "") else as_of)
        latest = self.cat.commits(limit=1)
        head = self._commit(latest[-1]) if latest else M.CommitOut(vid=0, time="", author="", message="",
                                                                    paths=[], paths_total=0)
        out = M.PinOut(snapshot=self.snap(vid), latest=head, behind=max(head.vid - vid, 0))
        return out, f"pinned vid {vid} ({out.snapshot.time}) as {out.snapshot.handle}; latest vid {head.vid}"

    def _commit(self, c: Any, paths: int = 5) -> M.CommitOut:
        return M.CommitOut(vid=c.vid, time=iso(c.time), author=cut(c.author, 120), message=cut(c.message, 200),
                           paths=list(c.paths[:paths]), paths_total=len(c.paths))

    def list_snapshots(self, snapshot: int | str | None, limit: int, cursor: str | None) -> tuple[M.SnapshotsOut, str]:
        key = args_key()
        vid, offset = self.at(snapshot, cursor, "list_snapshots", key)
        # newest first: commits with vid in (vid - offset - limit, vid - offset]
        top = vid - offset
        commits = self.cat.commits(until=top, limit=limit) if top >= 0 else []
        commits = sorted(commits, key=lambda c: -c.vid)[:limit]
        total = vid + 1
        end = offset + len(commits)
        nxt = encode_cursor(Cursor("list_snapshots", vid, end, key)) if commits and commits[-1].vid > 0 else None
        named = []
        if offset == 0:
            snaps = sorted((s for s in self.cat.snapshots() if s.vid <= vid), key=lambda s: -s.vid)
            named = [M.NamedSnapshotOut(name=s.name, vid=s.vid, time=iso(s.time)) for s in snaps[:limit]]
        out = M.SnapshotsOut(snapshot=self.snap(vid), commits=[self._commit(c) for c in commits], named=named,
                             total=total, truncated=nxt is not None, next_cursor=nxt)
        first = f"vids {commits[0].vid}..{commits[-1].vid}" if commits else "no commits"
        return self.fit(out, f"{len(commits)} of {total} commits at vid {vid} ({first}), {len(named)} named snapshots",
                        "commits", "list_snapshots", vid, key, offset)

    def query_catalog(self, query: str, snapshot: int | str | None, limit: int,
                      cursor: str | None) -> tuple[M.QueryOut, str]:
        if not isinstance(query, str) or not query.strip():
            raise CodedToolError('query must be a path query such as /[obj_id = "acme"]/*/[obj_type = "table"]', "InvalidValueError")
        key = args_key(query=query)
        vid, offset = self.at(snapshot, cursor, "query_catalog", key)
        try:
            objs = self.cat.query(query, vid=vid)
        except CatalogError as exc:
            raise coded(exc, f"{exc}; path queries look like /[obj_id = \"acme\"]/*/[obj_type = \"table\"] "
                            "(one step per tree level)") from None
        if self.options.hide_annotations:
            objs = [o for o in objs if "/_semantic" not in o.path]
        pg = page(objs, limit, offset, "query_catalog", vid, key)
        items = []
        for o in pg.items:
            value, was_cut = cut_value(o.value, VALUE_CHARS, "(query a narrower path, or describe_table)")
            items.append(M.ObjectOut(path=o.path, obj_type=o.value.get("obj_type"), vid=o.vid, leaf=o.leaf,
                                     value=value, cut=was_cut))
        out = M.QueryOut(snapshot=self.snap(vid), objects=items, total=pg.total, truncated=pg.truncated,
                         next_cursor=pg.next_cursor)
        return self.fit(out, f"{len(items)} of {pg.total} objects at vid {vid}", "objects", "query_catalog", vid, key,
                        offset)

    # ------------------------------------------------------------------ diff
    def diff_snapshots(self, from_snapshot: int | str, to_snapshot: int | str | None, prefix: str | None,
                       limit: int, cursor: str | None) -> tuple[M.DiffOut, str]:
        if from_snapshot is None or from_snapshot == "":
            raise CodedToolError("from_snapshot is required: a handle, vid, snapshot name or ISO time", "InvalidValueError")
        a = self.resolve(from_snapshot)
        key = args_key(frm=a, prefix=prefix)
        b, offset = self.at(to_snapshot, cursor, "diff_snapshots", key)
        if prefix is not None and prefix != "":
            if not prefix.startswith("/"):
                try:
                    prefix = lake.object_path(prefix)
                except CatalogError as exc:
                    raise coded(exc, f"prefix: {exc}; give a path /acme/core or a dotted name acme.core") from None
        else:
            prefix = None
        lo, hi = min(a, b), max(a, b)
        changes, ncommits = self._diffs.get((lo, hi, prefix), lambda: self._changes(lo, hi, prefix))
        pg = page(changes, limit, offset, "diff_snapshots", b, key)
        out = M.DiffOut(snapshot=self.snap(b), from_snapshot=self.snap(a), commits=ncommits, changes=pg.items,
                        total=pg.total, truncated=pg.truncated, next_cursor=pg.next_cursor)
        return self.fit(out, f"{pg.total} changes between vid {a} and vid {b} ({ncommits} commits); showing "
                        f"{len(pg.items)}", "changes", "diff_snapshots", b, key, offset)

    def _changes(self, lo: int, hi: int, prefix: str | None) -> tuple[list[M.ChangeOut], int]:
        if lo == hi:
            return [], 0
        commits = [c for c in self.cat.commits(since=lo + 1, until=hi, prefix=prefix) if c.vid > lo]
        raw: list[tuple[str, str, dict[str, Any] | None, dict[str, Any] | None]] = []
        diff = getattr(self.cat, "diff", None)
        if callable(diff):
            for ch in diff(lo, hi, prefix=prefix):
                raw.append((ch.path, ch.kind, ch.before, ch.after))
        else:
            paths = sorted({p for c in commits for p in c.paths
                            if prefix is None or p == prefix or p.startswith(prefix.rstrip("/") + "/")})
            for p in paths:
                before, after = self.cat.get(p, vid=lo), self.cat.get(p, vid=hi)
                bv, av = (None if before is None else before.value), (None if after is None else after.value)
                if bv == av:
                    continue
                kind = "added" if bv is None else "removed" if av is None else "updated"
                raw.append((p, kind, bv, av))
        return self._summarize(raw), len(commits)

    def _summarize(self, raw: list[tuple[str, str, Any, Any]]) -> list[M.ChangeOut]:
        files: dict[str, list[int]] = {}
        out: list[M.ChangeOut] = []
        hide = self.options.hide_annotations
        for path, kind, before, after in raw:
            v = after if after is not None else before or {}
            otype = v.get("obj_type") if isinstance(v, dict) else None
            if "/_semantic" in path:
                if hide or otype != "annotation":
                    continue
                table = path.split("/_semantic")[0]
                out.append(M.ChangeOut(target=lake.name_of(table), path=path, kind=kind,  # type: ignore[arg-type]
                                       category="annotation", detail=str(v.get("key", path.rsplit("/", 1)[-1]))))
            elif otype == "file":
                table = self._table_of(path)
                counts = files.setdefault(table, [0, 0])
                counts[0 if kind == "added" else 1] += 1
            elif otype == "partition":
                continue
            elif otype == "table" and kind == "updated":
                out += self._table_change(path, before or {}, after or {})
            else:
                out.append(M.ChangeOut(target=lake.name_of(path), path=path, kind=kind,  # type: ignore[arg-type]
                                       category="table" if otype == "table" else "object",
                                       detail=str(otype or "")))
        for table, (added, removed) in sorted(files.items()):
            parts = ([f"+{added} files"] if added else []) + ([f"-{removed} files"] if removed else [])
            out.append(M.ChangeOut(target=lake.name_of(table), path=table, kind="updated", category="files",
                                   detail=", ".join(parts)))
        return sorted(out, key=lambda c: (c.target, c.category, c.path))

    def _table_of(self, path: str) -> str:
        parts = path.split("/")
        return "/".join(parts[:4])

    def _table_change(self, path: str, before: dict[str, Any], after: dict[str, Any]) -> list[M.ChangeOut]:
        name = lake.name_of(path)

        def cols(v: dict[str, Any]) -> dict[int, dict[str, Any]]:
            return {int(c.get("id", i)): c for i, c in enumerate((v.get("schema") or {}).get("columns") or [])}

        cb, ca = cols(before), cols(after)
        bits = []
        added = [ca[i]["name"] for i in ca if i not in cb]
        removed = [cb[i]["name"] for i in cb if i not in ca]
        renamed = [f"{cb[i]['name']}->{ca[i]['name']}" for i in ca if i in cb and cb[i].get("name") != ca[i].get("name")]
        retyped = [f"{ca[i]['name']} {cb[i].get('type')}->{ca[i].get('type')}" for i in ca
                   if i in cb and cb[i].get("type") != ca[i].get("type")]
        for label, xs in (("added", added), ("dropped", removed), ("renamed", renamed), ("retyped", retyped)):
            if xs:
                bits.append(f"{label} {', '.join(xs[:10])}" + (f" (+{len(xs) - 10})" if len(xs) > 10 else ""))
        out = []
        if bits:
            out.append(M.ChangeOut(target=name, path=path, kind="updated", category="schema", detail="; ".join(bits)))
        rb = (before.get("stats") or {}).get("row_count")
        ra = (after.get("stats") or {}).get("row_count")
        rest_b = {k: v for k, v in before.items() if k not in ("stats", "schema")}
        rest_a = {k: v for k, v in after.items() if k not in ("stats", "schema")}
        if rb != ra or rest_b != rest_a or (not bits and before != after):
            detail = f"row_count {rb} -> {ra}" if rb != ra else "properties changed"
            out.append(M.ChangeOut(target=name, path=path, kind="updated", category="table", detail=detail))
        return out

    # ------------------------------------------------------------------ SQL
    def run_sql(self, sql: str, snapshot: int | str | None, limit: int,
                cursor: str | None = None) -> tuple[M.SqlOut, str]:
        import catalog_core as cc

        if not isinstance(sql, str) or not sql.strip():
            raise CodedToolError("sql must be one read-only SELECT statement", "InvalidValueError")
        key = args_key(sql=sql)
        vid, offset = self.at(snapshot, cursor, "run_sql", key)
        tables = self.sql_tables(sql, vid)
        try:  # a later page runs the statement again at the same snapshot and skips the rows already shown
            res = cc.run_sql(self.cat, sql, snapshot=vid, limit=offset + limit, timeout_s=SQL_TIMEOUT_S)
        except CatalogError as exc:
            raise self._sql_error(exc, sql, vid) from None
        rows = [[self._cell(v) for v in r] for r in res.rows[offset:]]
        nxt = encode_cursor(Cursor("run_sql", vid, offset + len(rows), key)) if res.truncated else None
        out = M.SqlOut(snapshot=self.snap(vid), columns=[M.SqlColumnOut(name=c.name, type=c.type) for c in res.columns],
                       rows=rows, row_count=len(rows), truncated=res.truncated, next_cursor=nxt, tables=tables,
                       warnings=self.warnings_for(tables, vid, self.sql_use(sql, tables)))
        more = " (truncated)" if res.truncated else ""
        out, summary = self.fit(out, f"{len(rows)} rows{more} x {len(res.columns)} columns at vid {vid} from "
                                f"{', '.join(tables) or 'no table'}", "rows", "run_sql", vid, key, offset)
        out.row_count = len(out.rows)
        return out, summary

    @staticmethod
    def _cell(v: Any) -> Any:
        if isinstance(v, str) and len(v) > CELL_CHARS:
            return cut(v, CELL_CHARS)
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, (list, dict)):
            text = json.dumps(v, default=str)
            return v if len(text) <= CELL_CHARS else cut(text, CELL_CHARS)
        return v

    def sql_tables(self, sql: str, vid: int) -> list[str]:
        """The catalog tables a statement reads (sqlglot; CTE names excluded)."""
        from semantic.annotations import table_refs

        try:
            refs = table_refs(sql)
        except Exception:
            return []
        known = self.tables(vid)
        out: list[str] = []
        for parts in refs:
            name = ".".join(parts)
            if name in known:
                out.append(name)
            elif len(parts) < 3:
                hits = [k for k in known if k.endswith("." + name)]
                if len(hits) == 1:
                    out.append(hits[0])
        return list(dict.fromkeys(out))

    def _sql_error(self, exc: CatalogError, sql: str, vid: int) -> ToolError:
        msg = str(exc)
        m = re.search(r"Table with name (\S+) does not exist", msg) or re.search(r"Catalog \"?([\w.]+)\"? does not exist", msg)
        hint = ""
        if m:
            hint = "; " + table_suggestions(m.group(1).strip('"'), self.tables(vid))
        else:
            m = re.search(r'column "?([\w]+)"? not found|Referenced column "?(\w+)"? not found', msg, re.I)
            if m:
                word = m.group(1) or m.group(2)
                cols = [c["name"] for t in self.sql_tables(sql, vid)
                        for c in (self.tables(vid)[t].value.get("schema") or {}).get("columns") or []]
                close = _closest(word, cols)
                if close:
                    hint = "; did you mean " + " or ".join(repr(c) for c in close) + "?"
        if hint and "describe_table" not in msg:
            hint += "; describe_table shows a table's columns"
        return coded(exc, cut(msg, 1200) + hint)

    def get_column_values(self, table: str, column: str, query: str | None, snapshot: int | str | None,
                          limit: int, cursor: str | None = None) -> tuple[M.ColumnValuesOut, str]:
        import catalog_core as cc

        key = args_key(table=table, column=column, query=query)
        vid, offset = self.at(snapshot, cursor, "get_column_values", key)
        obj = self.table(table, vid)
        name = lake.name_of(obj.path)
        cols = [str(c.get("name")) for c in (obj.value.get("schema") or {}).get("columns") or []]
        if column not in cols:
            close = _closest(column, cols) if isinstance(column, str) else []
            hint = ("did you mean " + " or ".join(repr(c) for c in close) + "?") if close else \
                f"its columns are {', '.join(cols[:30])}" + (" ..." if len(cols) > 30 else "")
            raise CodedToolError(f"table {name} has no column {column!r}; {hint}", "NotFoundError")
        q = '"' + column.replace('"', '""') + '"'
        where = ""
        if query:
            lit = "'%" + query.replace("'", "''").replace("%", "\\%").replace("_", "\\_") + "%'"
            where = f" WHERE CAST({q} AS VARCHAR) ILIKE {lit} ESCAPE '\\'"
        sql = (f"SELECT {q} AS value, count(*) AS n, count(*) OVER () AS distinct_values FROM {name}{where} "
               f"GROUP BY {q} ORDER BY n DESC, value NULLS LAST LIMIT {int(limit)} OFFSET {int(offset)}")
        try:
            res = cc.run_sql(self.cat, sql, snapshot=vid, limit=limit, timeout_s=SQL_TIMEOUT_S)
        except CatalogError as exc:
            raise coded(exc, f"could not read the values of {name}.{column}: {cut(str(exc), 600)}") from None
        values = [M.ValueCount(value=self._cell(r[0]), count=int(r[1])) for r in res.rows]
        total = int(res.rows[0][2]) if res.rows else 0
        more = total > offset + len(values)
        out = M.ColumnValuesOut(snapshot=self.snap(vid), table=name, column=column, values=values, total=total,
                                truncated=more, warnings=self.table_warnings(
                                    name, vid, Use(frozenset({name}), frozenset({column.lower()}))),
                                next_cursor=encode_cursor(Cursor("get_column_values", vid, offset + len(values), key))
                                if more else None)
        return self.fit(out, f"{len(values)} of {total} distinct values of {name}.{column} at vid {vid}", "values",
                        "get_column_values", vid, key, offset)

    # ------------------------------------------------------------------ search and describe
    def search_tables(self, query: str | None, snapshot: int | str | None, limit: int,
                      cursor: str | None) -> tuple[M.SearchOut, str]:
        key = args_key(query=query or "")
        vid, offset = self.at(snapshot, cursor, "search_tables", key)
        ranked = self._rank(query or "", vid)
        pg = page(ranked, limit, offset, "search_tables", vid, key)
        hits = [self._hit(name, score, vid) for name, score in pg.items]
        out = M.SearchOut(snapshot=self.snap(vid), tables=hits, total=pg.total, truncated=pg.truncated,
                          next_cursor=pg.next_cursor)
        top = ", ".join(h.name for h in hits[:3])
        return self.fit(out, f"{len(hits)} of {pg.total} tables for {query!r} at vid {vid}" + (f": {top}" if top else ""),
                        "tables", "search_tables", vid, key, offset)

    def _rank(self, query: str, vid: int) -> list[tuple[str, float]]:
        tables = self.tables(vid)
        if has("search") and not self.options.hide_annotations and query.strip():
            sm = _semantic()
            try:
                hits = sm.search(self.cat, query, limit=max(len(tables), 1), snapshot=vid)
                ranked = [(str(getattr(h, "table", None) or h.name), float(getattr(h, "score", 0.0)))
                          for h in hits]
                return [(n, round(sc, 3)) for n, sc in ranked if n in tables]
            except (TypeError, AttributeError):  # a search of another shape: rank by metadata below
                pass
        if not query.strip():
            return [(n, 0.0) for n in sorted(tables)]
        from rapidfuzz import fuzz

        anns = self.raw_annotations(vid)
        q = query.lower()
        words = [w for w in re.split(r"[^a-z0-9]+", q) if w]
        scored = []
        for name, obj in tables.items():
            short = name.rsplit(".", 1)[-1].lower()
            text_parts = [name.lower().replace("_", " ")]
            for a in anns.get(name, []):
                if a.get("key") in ("table.description", "table.synonyms", "table.tags", "table.grain"):
                    text_parts.append(json.dumps(a.get("value"), default=str).lower())
            cols = " ".join(str(c.get("name", "")).lower() for c in (obj.value.get("schema") or {}).get("columns") or [])
            text = " ".join(text_parts)
            score = max(fuzz.WRatio(q, short), fuzz.WRatio(q, name.lower()) * 0.95,
                        fuzz.token_set_ratio(q, text) * 0.9, fuzz.partial_ratio(q, text) * 0.8 if len(q) > 3 else 0,
                        fuzz.token_set_ratio(q, cols.replace("_", " ")) * 0.7)
            score += 5 * sum(1 for w in words if w in text or w in short)
            if score >= 50:
                scored.append((name, round(min(score, 100.0) / 100, 3)))
        return sorted(scored, key=lambda x: (-x[1], x[0]))

    def _ann_map(self, name: str, vid: int) -> dict[str, Any]:
        return {str(a.get("key")): a.get("value") for a in self.raw_annotations(vid).get(name, [])}

    def _hit(self, name: str, score: float, vid: int) -> M.TableHit:
        obj = self.tables(vid).get(name)
        rows = ((obj.value.get("stats") or {}).get("row_count") if obj else None)
        hit = M.TableHit(name=name, score=score, row_count=rows if isinstance(rows, int) else None)
        if self.options.hide_annotations:
            return hit
        card = self.card(name, vid)
        if card is not None:
            desc = card.annotations.get("description")
            grain = card.annotations.get("grain")
            hit.description = None if desc is None else cut(desc.value, TEXT_SUMMARY)
            hit.grain = None if grain is None else cut(_grain_text(grain.value), 160)
            if card.deprecation is not None:
                hit.deprecated = M.DeprecationOut(reason=cut(card.deprecation.reason, 160), since=card.deprecation.since,
                                                  successor=card.deprecation.successor)
            nfr = card.annotations.get("not_for_reporting")
            hit.not_for_reporting = _not_for_reporting(None if nfr is None else nfr.value, 160)
            hit.freshness = None if self.options.hide_findings else card.freshness.status
        else:
            anns = self._ann_map(name, vid)
            if isinstance(anns.get("table.description"), str):
                hit.description = cut(anns["table.description"], TEXT_SUMMARY)
            if anns.get("table.grain") is not None:
                hit.grain = cut(_grain_text(anns["table.grain"]), 160)
            dep = anns.get("table.deprecated")
            if isinstance(dep, dict):
                hit.deprecated = M.DeprecationOut(reason=cut(str(dep.get("reason") or ""), 160), since=dep.get("since"),
                                                  successor=dep.get("replaced_by"))
            hit.not_for_reporting = _not_for_reporting(anns.get("table.not_for_reporting"), 160)
        hit.warnings = self.table_warnings(name, vid)
        return hit

    def describe_table(self, table: str, detail: str, columns: list[str] | None, snapshot: int | str | None,
                       limit: int | None, cursor: str | None) -> tuple[M.DescribeOut, str]:
        key = args_key(table=table, detail=detail, columns=columns)
        vid, offset = self.at(snapshot, cursor, "describe_table", key)
        obj = self.table(table, vid)
        name = lake.name_of(obj.path)
        full = detail == "full"
        limit = limit or (LIMITS["describe_table"][0] if not full else 20)
        schema = obj.value.get("schema") or {}
        cols = list(schema.get("columns") or [])
        if columns:
            by = {str(c.get("name")): c for c in cols}
            missing = [c for c in columns if c not in by]
            if missing:
                close = _closest(missing[0], by)
                hint = ("did you mean " + " or ".join(repr(c) for c in close) + "?") if close else \
                    "describe_table without columns lists them"
                raise CodedToolError(f"table {name} has no column {missing[0]!r}; {hint}", "NotFoundError")
            cols = [by[c] for c in dict.fromkeys(columns)]
        pg = page(cols, limit, offset, "describe_table", vid, key)
        stats = obj.value.get("stats") or {}
        text_limit = TEXT_FULL if full else TEXT_SUMMARY
        out = M.DescribeOut(snapshot=self.snap(vid), table=name, detail="full" if full else "summary",
                            schema_id=schema.get("schema_id"), partition_by=lake.partition_columns(obj.value),
                            stats=M.StatsOut(row_count=_int(stats.get("row_count")),
                                             file_count=_int(stats.get("file_count")),
                                             size_bytes=_int(stats.get("size_bytes"))),
                            freshness=self._freshness_meta(stats), columns=[], total=pg.total,
                            truncated=pg.truncated, next_cursor=pg.next_cursor)
        col_stats = stats.get("columns") or {}
        card = self.card(name, vid)
        by_id = {c.id: c for c in card.columns} if card is not None else {}
        raw = {} if card is not None else self._ann_map(name, vid)
        for c in pg.items:
            cid = int(c.get("id", 0))
            co = M.ColumnOut(id=cid, name=str(c.get("name")), type=str(c.get("type")),
                             nullable=bool(c.get("nullable", True)))
            if full:
                s = col_stats.get(co.name)
                if isinstance(s, dict):
                    co.stats = M.ColumnStatsOut(min=self._cell(s.get("min")), max=self._cell(s.get("max")),
                                                null_count=_int(s.get("null_count")))
            fields: dict[str, Any] = {}
            status = None
            if card is not None and cid in by_id:
                fields = {k: v.value for k, v in by_id[cid].annotations.items()}
                sts = [v.status for v in by_id[cid].annotations.values()]
                status = "stale" if "stale" in sts else "suspect" if "suspect" in sts else ("fresh" if sts else None)
            elif raw:
                pre = f"column.{cid}."
                fields = {k[len(pre):]: v for k, v in raw.items() if k.startswith(pre)}
            self._column_fields(co, fields, full, text_limit)
            if not self.options.hide_findings:
                co.status = status  # type: ignore[assignment]
            out.columns.append(co)
        if card is not None:
            self._from_card(out, card, full, text_limit)
        elif raw:
            self._from_raw(out, raw, text_limit)
        out.warnings = self.table_warnings(name, vid)
        return self.fit(out, (f"{name} at vid {vid}: {len(out.columns)} of {pg.total} columns"
                              f"{' (more: next_cursor)' if pg.truncated else ''}, {out.stats.row_count} rows"
                              f"{', ' + str(len(out.warnings)) + ' warnings' if out.warnings else ''}"),
                        "columns", "describe_table", vid, key, offset)

    def _freshness_meta(self, stats: dict[str, Any]) -> M.FreshnessOut:
        ldc = stats.get("last_data_commit") if isinstance(stats.get("last_data_commit"), dict) else None
        fr = M.FreshnessOut()
        if ldc and isinstance(ldc.get("time"), (int, float)):
            fr.last_data_commit_vid = _int(ldc.get("vid"))
            fr.last_data_commit_time = iso(float(ldc["time"]))
            fr.age_hours = round((self.now() - float(ldc["time"])) / 3600, 1)
        return fr

    @staticmethod
    def _column_fields(co: M.ColumnOut, fields: dict[str, Any], full: bool, text_limit: int) -> None:
        if isinstance(fields.get("description"), str):
            co.description = cut(fields["description"], text_limit, "(detail='full' has more)" if not full else "")
        for f in ("role", "unit"):
            if isinstance(fields.get(f), str):
                setattr(co, f, fields[f])
        if full:
            for f in ("synonyms", "enum", "sample_values"):
                if isinstance(fields.get(f), list):
                    setattr(co, f, fields[f][:50])
        elif isinstance(fields.get("enum"), list):
            co.enum = fields["enum"][:20]
        add = fields.get("additivity")
        if isinstance(add, dict) and add.get("kind") in ("additive", "semi_additive", "non_additive"):
            co.additivity = M.AdditivityOut(kind=add["kind"], non_additive_dimension=add.get("non_additive_dimension"),
                                            window=add.get("window"))
        nw = fields.get("null_when")
        if isinstance(nw, dict) and isinstance(nw.get("state"), str):
            co.null_when = M.NullWhenOut(state=cut(nw["state"], 80), column=nw.get("column"),
                                         values=list(nw.get("values") or [])[:20])

    def _from_raw(self, out: M.DescribeOut, raw: dict[str, Any], text_limit: int) -> None:
        if isinstance(raw.get("table.description"), str):
            out.description = cut(raw["table.description"], text_limit)
        g = raw.get("table.grain")
        if g is not None:
            out.grain = cut(_grain_text(g), text_limit)
            out.grain_keys = list(g.get("keys") or []) if isinstance(g, dict) else None
        for f in ("owner", "instructions"):
            if isinstance(raw.get(f"table.{f}"), str):
                setattr(out, f, cut(raw[f"table.{f}"], text_limit))
        for f in ("tags", "synonyms"):
            if isinstance(raw.get(f"table.{f}"), list):
                setattr(out, f, [str(x) for x in raw[f"table.{f}"]][:30])
        if isinstance(raw.get("table.certified"), bool):
            out.certified = raw["table.certified"]
        dep = raw.get("table.deprecated")
        if isinstance(dep, dict):
            out.deprecation = M.DeprecationOut(reason=cut(str(dep.get("reason") or ""), text_limit),
                                               since=dep.get("since"), successor=dep.get("replaced_by"))
        if isinstance(raw.get("table.freshness_sla"), str):
            out.freshness.sla = raw["table.freshness_sla"]
        out.not_for_reporting = _not_for_reporting(raw.get("table.not_for_reporting"), text_limit)

    def _from_card(self, out: M.DescribeOut, card: Any, full: bool, text_limit: int) -> None:
        anns = card.annotations
        hide = self.options.hide_findings

        def val(field: str) -> Any:
            a = anns.get(field)
            return None if a is None else a.value
        if isinstance(val("description"), str):
            out.description = cut(val("description"), text_limit, "" if full else "(detail='full' has more)")
        if val("grain") is not None:
            out.grain = cut(_grain_text(val("grain")), text_limit)
            g = val("grain")
            out.grain_keys = list(g.get("keys") or []) if isinstance(g, dict) else None
        for f in ("owner", "instructions"):
            if isinstance(val(f), str):
                setattr(out, f, cut(val(f), text_limit))
        for f in ("tags", "synonyms"):
            if isinstance(val(f), list):
                setattr(out, f, [str(x) for x in val(f)][:30])
        if isinstance(val("certified"), bool):
            out.certified = val("certified")
        if card.deprecation is not None:
            out.deprecation = M.DeprecationOut(reason=cut(card.deprecation.reason, text_limit),
                                               since=card.deprecation.since, successor=card.deprecation.successor)
        out.not_for_reporting = _not_for_reporting(val("not_for_reporting"), text_limit)
        fr = card.freshness
        out.freshness.sla = fr.sla
        if not hide:
            out.freshness.status = fr.status
            out.status = card.status
        out.relationships = [M.RelationshipOut(name=r.name, to=r.to, on=[list(p) for p in r.on],
                                               cardinality=r.cardinality, canonical=r.canonical,
                                               condition=r.condition, status=None if hide else r.status)
                             for r in card.relationships[:50]]
        out.metrics = [m.name for m in card.metrics[:50]]
        out.verified_questions = [cut(q.question, 200) for q in card.verified_questions[:20]]
        if full:
            now = card.snapshot_time
            out.annotations = [M.AnnotationOut(key=a.key, value=cut_value(a.value, 600)[0], author=a.author,
                                               source=a.source, confidence=a.confidence, vid=a.vid,
                                               age_commits=a.age_commits,
                                               age_days=round(max(now - a.written_at, 0) / 86400, 1),
                                               status=None if hide else a.status, note=a.note)
                               for a in list(anns.values())[:60]]
            if not hide:
                out.findings = [_finding(f) for f in card.findings[:50]]

    # ------------------------------------------------------------------ semantic tools
    def _need(self, fn: str, tool: str) -> Any:
        if not has(fn):
            raise ToolError(f"{tool} needs the semantic layer, which this server does not have yet")
        return _semantic()

    def find_join_path(self, from_table: str, to_table: str, snapshot: int | str | None) -> tuple[M.JoinOut, str]:
        vid = self.resolve(snapshot)
        a = lake.name_of(self.table(from_table, vid).path)
        b = lake.name_of(self.table(to_table, vid).path)
        if a == b:
            raise CodedToolError("from_table and to_table are the same table; no join is needed", "InvalidValueError")
        if self.options.hide_annotations:
            raise CodedToolError(f"no declared relationship joins {a} to {b}; look at both tables' columns "
                            "(describe_table) to find join keys", "NotFoundError")
        sm = self._need("join_path", "find_join_path")
        try:
            jp = sm.join_path(self.cat, a, b, snapshot=vid)
        except CatalogError as exc:
            raise _catalog_error(exc, lambda: list(self.tables(vid))) from None
        hops = [M.HopOut(from_table=h.from_table, to_table=h.to_table, on=[list(p) for p in h.on],
                         cardinality=h.cardinality, canonical=h.canonical, relationship=h.relationship,
                         condition=h.condition) for h in jp.hops]
        path = [a] + [h.to_table for h in jp.hops]
        keys = frozenset(c.lower() for h in jp.hops for pair in h.on for c in pair)
        warns = self.warnings_for(path + [b], vid, Use(frozenset(path + [b]), keys))
        for w in jp.warnings:
            warns.append(M.Warning(table=a, kind="finding", status="suspect", reason="fan_out", message=cut(w, 240)))
        out = M.JoinOut(snapshot=self.snap(vid), from_table=a, to_table=b, hops=hops, sql=jp.sql,
                        cardinality=jp.cardinality, canonical=jp.canonical, warnings=warns)
        return out, f"{a} -> {b}: {len(hops)} hops, {jp.cardinality}{'' if jp.canonical else ', not canonical'}"

    def list_metrics(self, table: str | None, query: str | None, snapshot: int | str | None, limit: int,
                     cursor: str | None) -> tuple[M.MetricsOut, str]:
        key = args_key(table=table, query=query)
        vid, offset = self.at(snapshot, cursor, "list_metrics", key)
        name = None if not table else lake.name_of(self.table(table, vid).path)
        found: list[Any] = []
        if not self.options.hide_annotations:
            sm = self._need("metrics", "list_metrics")
            try:
                found = list(sm.metrics(self.cat, name, snapshot=vid))
            except CatalogError as exc:
                raise _catalog_error(exc, lambda: list(self.tables(vid))) from None
        if query:
            from rapidfuzz import fuzz

            q = query.lower()

            def score(m: Any) -> float:
                text = " ".join([m.name, m.description or "", " ".join(m.synonyms)]).lower().replace("_", " ")
                return max(fuzz.WRatio(q, m.name.lower()), fuzz.token_set_ratio(q, text), fuzz.partial_ratio(q, text))
            found = sorted((m for m in found if score(m) >= 60), key=lambda m: -score(m))
        pg = page(found, limit, offset, "list_metrics", vid, key)
        hide = self.options.hide_findings
        items = [M.MetricOut(name=m.qualified, table=m.table, expression=cut(m.expression, 600),
                             filter=None if m.filter is None else cut(m.filter, 400), time_column=m.time_column,
                             unit=m.unit, description=None if m.description is None else cut(m.description, TEXT_SUMMARY),
                             synonyms=list(m.synonyms)[:10], status=None if hide else self._metric_status(m, vid))
                 for m in pg.items]
        out = M.MetricsOut(snapshot=self.snap(vid), metrics=items, total=pg.total, truncated=pg.truncated,
                           next_cursor=pg.next_cursor, warnings=self.warnings_for([m.table for m in items], vid))
        return self.fit(out, f"{len(items)} of {pg.total} metrics at vid {vid}" + (
            f": {', '.join(m.name for m in items[:5])}" if items else ""), "metrics", "list_metrics", vid, key, offset)

    def _metric_status(self, m: Any, vid: int) -> Any:
        card = self.card(m.table, vid)
        if card is None:
            return None
        for mv in card.metrics:
            if mv.name == m.name:
                return mv.status
        return None

    def query_metric(self, metric: str, group_by: list[str] | None, where: str | None,
                     time_range: list[str | None] | None, grain: str | None, snapshot: int | str | None,
                     limit: int, cursor: str | None = None) -> tuple[M.MetricQueryOut, str]:
        import catalog_core as cc

        key = args_key(metric=metric, group_by=group_by, where=where, time_range=time_range, grain=grain)
        vid, offset = self.at(snapshot, cursor, "query_metric", key)
        if self.options.hide_annotations:
            raise CodedToolError(f"no metric {metric!r} is defined; write the SQL with run_sql", "NotFoundError")
        sm = self._need("metric_sql", "query_metric")
        try:
            sql = sm.metric_sql(self.cat, metric, group_by=list(group_by or []), where=where,
                                time_range=None if time_range is None else tuple(time_range), grain=grain,
                                snapshot=vid)
        except CatalogError as exc:
            msg = str(exc)
            if "did you mean" not in msg.lower() and "metric" in msg.lower():
                names = [m.qualified for m in sm.metrics(self.cat, snapshot=vid)]
                close = _closest(metric, names + [n.rsplit(".", 1)[-1] for n in names])
                if close:
                    msg += "; did you mean " + " or ".join(repr(c) for c in close) + "?"
                else:
                    msg += "; list_metrics lists the metrics"
            raise coded(exc, msg) from None
        try:
            res = cc.run_sql(self.cat, sql, snapshot=vid, limit=offset + limit, timeout_s=SQL_TIMEOUT_S)
        except CatalogError as exc:
            raise coded(exc, f"the metric's SQL failed: {cut(str(exc), 800)}; SQL: {cut(sql, 800)}") from None
        rows = [[self._cell(v) for v in r] for r in res.rows[offset:]]
        nxt = encode_cursor(Cursor("query_metric", vid, offset + len(rows), key)) if res.truncated else None
        tables = self.sql_tables(sql, vid)
        use = dataclasses.replace(self.sql_use(sql, tables), metric=metric, uses_metrics=True)
        out = M.MetricQueryOut(snapshot=self.snap(vid), metric=metric, sql=sql,
                               columns=[M.SqlColumnOut(name=c.name, type=c.type) for c in res.columns], rows=rows,
                               truncated=res.truncated, next_cursor=nxt, warnings=self.warnings_for(tables, vid, use))
        return self.fit(out, f"{metric}: {len(rows)} rows{' (truncated)' if res.truncated else ''} at vid {vid}", "rows",
                        "query_metric", vid, key, offset)

    def check_staleness(self, table: str | None, depth: str, snapshot: int | str | None, limit: int,
                        cursor: str | None) -> tuple[M.StalenessOut, str]:
        key = args_key(table=table, depth=depth)
        vid, offset = self.at(snapshot, cursor, "check_staleness", key)
        name = None if not table else lake.name_of(self.table(table, vid).path)
        found: list[Any] = []
        if not (self.options.hide_annotations or self.options.hide_findings):
            sm = self._need("staleness", "check_staleness")
            try:
                found = list(sm.staleness(self.cat, name, snapshot=vid, depth=depth, now=self.now()))
            except CatalogError as exc:
                raise _catalog_error(exc, lambda: list(self.tables(vid))) from None
        order = {"stale": 0, "suspect": 1, "fresh": 2}
        found = sorted((f for f in found if f.status != "fresh"), key=lambda f: (order.get(f.status, 3), f.target))
        pg = page(found, limit, offset, "check_staleness", vid, key)
        out = M.StalenessOut(snapshot=self.snap(vid), depth=depth, findings=[_finding(f) for f in pg.items],  # type: ignore[arg-type]
                             total=pg.total, truncated=pg.truncated, next_cursor=pg.next_cursor)
        stale = sum(1 for f in found if f.status == "stale")
        return self.fit(out, f"{pg.total} findings ({stale} stale) for {name or 'every table'} at vid {vid}", "findings",
                        "check_staleness", vid, key, offset)

    def annotate(self, table: str, column: str | None, fields: dict[str, Any], confidence: float,
                 note: str | None, author: str) -> tuple[M.AnnotateOut, str]:
        if self.options.hide_annotations:
            raise ToolError("this server runs without the semantic layer; annotations are off")
        sm = self._need("annotate", "annotate")
        if not isinstance(fields, dict) or not fields:
            raise CodedToolError('fields must be an object of annotation fields, e.g. {"description": "..."}', "InvalidValueError")
        vid = self.resolve(None)
        name = lake.name_of(self.table(table, vid).path) if table.count(".") == 2 else table
        try:
            new_vid = sm.annotate(self.cat, name, fields, column=column, author=author, source="agent",
                                  confidence=confidence, note=note)
        except CatalogError as exc:
            raise _catalog_error(exc, lambda: list(self.tables(vid))) from None
        if column is None:
            keys = [f"table.{f}" for f in fields]
        else:
            cols = (self.table(name, vid).value.get("schema") or {}).get("columns") or []
            cid = next((c.get("id") for c in cols if c.get("name") == column), column)
            keys = [f"column.{cid}.{f}" for f in fields]
        out = M.AnnotateOut(vid=new_vid, table=name, column=column, keys=keys, author=author)
        return out, f"annotated {name}{'.' + column if column else ''} ({', '.join(fields)}) at vid {new_vid}"


def _finding(f: Any) -> M.FindingOut:
    ev = getattr(f, "evidence", None)
    return M.FindingOut(target=f.target, annotation=f.annotation, status=f.status, reason=f.reason,
                        message=cut(f.message, 400), suggestion=None if f.suggestion is None else cut(f.suggestion, 300),
                        fixes=_fixes(getattr(f, "fixes", [])), evidence_vids=list(getattr(ev, "vids", []) or [])[:10])


MAX_FIXES = 5


def _fixes(fixes: Any) -> list[M.FixOut]:
    """A finding's fixes as the tools show them: at most MAX_FIXES, list params cut to 20 items."""
    out = []
    for x in list(fixes or [])[:MAX_FIXES]:
        params = {k: (v[:20] if isinstance(v, list) else v) for k, v in (x.params or {}).items()}
        out.append(M.FixOut(action=x.action, params=params))
    return out


def _not_for_reporting(v: Any, text_limit: int) -> M.NotForReportingOut | None:
    """The table field not_for_reporting as the tools show it (None when absent or malformed)."""
    if not isinstance(v, dict):
        return None
    return M.NotForReportingOut(reason=cut(str(v.get("reason") or ""), text_limit),
                                use_instead=[str(x) for x in v.get("use_instead") or []][:10])


def _grain_text(g: Any) -> str:
    if isinstance(g, dict):
        text = str(g.get("text") or "")
        keys = g.get("keys") or []
        return text + (f" (unique: {', '.join(map(str, keys))})" if keys else "")
    return str(g)


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def principal_digest(token: str) -> str:
    return "token:" + hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()[:12]


def _subject(table: str, f: Any) -> Subject:
    """What a finding's annotation is about (see `relevance`)."""
    ann = str(f.annotation or "")
    vids = list(getattr(f.evidence, "vids", None) or [])
    change = max(vids) if vids else None
    parts = str(f.target).split(".")
    if len(parts) >= 4:
        return Subject(table, "column", column=parts[-1], change=change)
    if ann.startswith("relationship."):
        to = (getattr(f.evidence, "values", None) or {}).get("to")
        return Subject(table, "relationship", related=to if isinstance(to, str) else None, change=change)
    if ann.startswith("metric."):
        return Subject(table, "metric", name=ann.split(".", 1)[1], change=change)
    if ann.startswith("verified_query."):
        return Subject(table, "verified_query", name=ann.split(".", 1)[1], change=change)
    return Subject(table, change=change)


def _fold(kept: Any, other: Any) -> Any:
    """One warning for one change: the first, stale if either is, with the other's fixes and reason."""
    extra = [fx for fx in other.fixes if fx not in kept.fixes]
    note = f" (also {other.reason})" if other.reason and other.reason != kept.reason and \
        f"also {other.reason}" not in kept.message else ""
    return kept.model_copy(update={"status": "stale" if "stale" in (kept.status, other.status) else kept.status,
                                   "fixes": list(kept.fixes) + extra, "message": kept.message + note})

