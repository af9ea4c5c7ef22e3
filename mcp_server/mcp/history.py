"""History tools: pin a snapshot (pin_snapshot), the commit log (list_snapshots), what changed
between two snapshots (diff_snapshots), and which annotations stopped being true
(check_staleness). Thin adapters from typed arguments to the catalog's history and the semantic
read model; `register` publishes them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from catalog_core import lake
from catalog_core.errors import CatalogError
from catalog_core.model import Commit
from mcp_server.mcp import models as M
from mcp_server.mcp.args import (
    READ,
    Cursor,
    DiffLimit,
    LineageLimit,
    Snapshot,
    SnapshotsLimit,
    StalenessLimit,
    TableName,
)
from mcp_server.mcp.bounds import Cursor as PageCursor
from mcp_server.mcp.bounds import args_key, cut, encode_cursor, page
from mcp_server.mcp.context import LIMITS, ToolContext, finding, iso
from mcp_server.mcp.errors import CodedToolError, catalog_error, coded, guard
from mcp_server.mcp.results import ToolResult

if TYPE_CHECKING:  # the tools run without the SDK too (front.py, results.py: issue 47)
    from mcp_server.mcp.results import ToolServer

__all__ = ["register", "pin", "snapshots", "diff", "staleness", "lineage"]


def register(server: ToolServer, s: ToolContext) -> None:
    """Publish the history tools of `s` on `server`."""

    @server.tool(annotations=READ)
    def pin_snapshot(
        as_of: Annotated[int | str | None, Field(description="vid or ISO time to pin; default: the latest")] = None,
        name: Annotated[str | None, Field(description="a named snapshot to pin instead")] = None,
    ) -> Annotated[ToolResult, M.PinOut]:
        """Pin a snapshot first: returns a handle to pass as `snapshot` to every later call, so all
        answers read the same state of the lake even while it changes."""
        return guard(lambda: pin(s, as_of, name))

    @server.tool(annotations=READ)
    def list_snapshots(
        snapshot: Snapshot = None, limit: SnapshotsLimit = LIMITS["list_snapshots"][0],
        cursor: Cursor = None,
    ) -> Annotated[ToolResult, M.SnapshotsOut]:
        """The commit log (newest first) and named snapshots: when data was loaded and by whom."""
        return guard(lambda: snapshots(s, snapshot, limit, cursor))

    @server.tool(annotations=READ)
    def diff_snapshots(
        from_snapshot: Annotated[int | str, Field(description="the older state: handle, vid, name or ISO time")],
        to_snapshot: Annotated[int | str | None, Field(description="the newer state; default: the latest")] = None,
        prefix: Annotated[str | None, Field(description="only under this catalog/namespace/table (dotted or path)")]
        = None,
        limit: DiffLimit = LIMITS["diff_snapshots"][0], cursor: Cursor = None,
    ) -> Annotated[ToolResult, M.DiffOut]:
        """What changed between two snapshots: tables added or removed, schema changes, files
        loaded or dropped per table, annotations written."""
        return guard(lambda: diff(s, from_snapshot, to_snapshot, prefix, limit, cursor))

    @server.tool(annotations=READ)
    def check_staleness(
        table: Annotated[str | None, Field(description="one table; default: every table")] = None,
        depth: Annotated[Literal["metadata", "data"], Field(
            description="metadata: compare annotations with the schema history (fast); data: also check the rows")]
        = "metadata",
        snapshot: Snapshot = None, limit: StalenessLimit = LIMITS["check_staleness"][0],
        cursor: Cursor = None,
    ) -> Annotated[ToolResult, M.StalenessOut]:
        """Annotations that may no longer be true (stale or suspect), each with a reason and a
        suggestion. Check before trusting a description, grain, join or metric."""
        return guard(lambda: staleness(s, table, depth, snapshot, limit, cursor))

    @server.tool(annotations=READ)
    def get_lineage(
        table: TableName,
        direction: Literal["upstream", "downstream"] = "upstream",
        depth: Annotated[int, Field(ge=1, le=10)] = 3,
        snapshot: Snapshot = None, limit: LineageLimit = LIMITS["get_lineage"][0], cursor: Cursor = None,
    ) -> Annotated[ToolResult, M.LineageOut]:
        """Tables a table was built from (or that were built from it), the vid each build read, and
        upstream changes that make a table suspect."""
        return guard(lambda: lineage(s, table, direction, depth, snapshot, limit, cursor))


def pin(s: ToolContext, as_of: int | str | None, name: str | None) -> tuple[M.PinOut, str]:
    if as_of not in (None, "") and name not in (None, ""):
        raise CodedToolError("pass as_of or name, not both", "InvalidValueError")
    vid = s.resolve(name if name not in (None, "") else as_of)
    latest = s.cat.commits(limit=1)
    head = _commit(latest[-1]) if latest else M.CommitOut(vid=0, time="", author="", message="",
                                                                paths=[], paths_total=0)
    out = M.PinOut(snapshot=s.snap(vid), latest=head, behind=max(head.vid - vid, 0))
    return out, f"pinned vid {vid} ({out.snapshot.time}) as {out.snapshot.handle}; latest vid {head.vid}"


def _commit(c: Commit, paths: int = 5) -> M.CommitOut:
    """A commit as the tools show it: at most `paths` of its paths."""
    return M.CommitOut(vid=c.vid, time=iso(c.time), author=cut(c.author, 120), message=cut(c.message, 200),
                       paths=list(c.paths[:paths]), paths_total=len(c.paths))


def snapshots(s: ToolContext, snapshot: int | str | None, limit: int, cursor: str | None) -> tuple[M.SnapshotsOut, str]:
    key = args_key()
    vid, offset = s.at(snapshot, cursor, "list_snapshots", key)
    # newest first: commits with vid in (vid - offset - limit, vid - offset]
    top = vid - offset
    commits = s.cat.commits(until=top, limit=limit) if top >= 0 else []
    commits = sorted(commits, key=lambda c: -c.vid)[:limit]
    total = vid + 1
    end = offset + len(commits)
    nxt = encode_cursor(PageCursor("list_snapshots", vid, end, key)) if commits and commits[-1].vid > 0 else None
    named = []
    if offset == 0:
        snaps = sorted((sn for sn in s.cat.snapshots() if sn.vid <= vid), key=lambda sn: -sn.vid)
        named = [M.NamedSnapshotOut(name=sn.name, vid=sn.vid, time=iso(sn.time)) for sn in snaps[:limit]]
    out = M.SnapshotsOut(snapshot=s.snap(vid), commits=[_commit(c) for c in commits], named=named,
                         total=total, truncated=nxt is not None, next_cursor=nxt)
    first = f"vids {commits[0].vid}..{commits[-1].vid}" if commits else "no commits"
    return s.fit(out, f"{len(commits)} of {total} commits at vid {vid} ({first}), {len(named)} named snapshots",
                    "commits", "list_snapshots", vid, key, offset)


def diff(s: ToolContext, from_snapshot: int | str, to_snapshot: int | str | None, prefix: str | None,
                   limit: int, cursor: str | None) -> tuple[M.DiffOut, str]:
    if from_snapshot is None or from_snapshot == "":
        raise CodedToolError("from_snapshot is required: a handle, vid, snapshot name or ISO time", "InvalidValueError")
    a = s.resolve(from_snapshot)
    key = args_key(frm=a, prefix=prefix)
    b, offset = s.at(to_snapshot, cursor, "diff_snapshots", key)
    if prefix is not None and prefix != "":
        if not prefix.startswith("/"):
            try:
                prefix = lake.object_path(prefix)
            except CatalogError as exc:
                raise coded(exc, f"prefix: {exc}; give a path /acme/core or a dotted name acme.core") from None
    else:
        prefix = None
    lo, hi = min(a, b), max(a, b)
    changes, ncommits = s.diffs.get((lo, hi, prefix), lambda: _changes(s, lo, hi, prefix))
    pg = page(changes, limit, offset, "diff_snapshots", b, key)
    out = M.DiffOut(snapshot=s.snap(b), from_snapshot=s.snap(a), commits=ncommits, changes=pg.items,
                    total=pg.total, truncated=pg.truncated, next_cursor=pg.next_cursor)
    return s.fit(out, f"{pg.total} changes between vid {a} and vid {b} ({ncommits} commits); showing "
                    f"{len(pg.items)}", "changes", "diff_snapshots", b, key, offset)


def _changes(s: ToolContext, lo: int, hi: int, prefix: str | None) -> tuple[list[M.ChangeOut], int]:
    if lo == hi:
        return [], 0
    commits = [c for c in s.cat.commits(since=lo + 1, until=hi, prefix=prefix) if c.vid > lo]
    raw = [(ch.path, ch.kind, ch.before, ch.after) for ch in s.cat.diff(lo, hi, prefix=prefix)
           if s.shows(ch.path, hi)]
    return _summarize(s, raw), len(commits)


def _summarize(s: ToolContext, raw: list[tuple[str, str, Any, Any]]) -> list[M.ChangeOut]:
    files: dict[str, list[int]] = {}
    out: list[M.ChangeOut] = []
    for path, kind, before, after in raw:
        v = after if after is not None else before or {}
        otype = v.get("obj_type") if isinstance(v, dict) else None
        if "/_semantic" in path:
            if otype != "annotation":
                continue
            table = path.split("/_semantic")[0]
            out.append(M.ChangeOut(target=lake.name_of(table), path=path, kind=kind,  # type: ignore[arg-type]
                                   category="annotation", detail=str(v.get("key", path.rsplit("/", 1)[-1]))))
        elif otype == "file":
            table = _table_of(path)
            counts = files.setdefault(table, [0, 0])
            counts[0 if kind == "added" else 1] += 1
        elif otype == "partition":
            continue
        elif otype == "table" and kind == "updated":
            out += _table_change(path, before or {}, after or {})
        else:
            out.append(M.ChangeOut(target=lake.name_of(path), path=path, kind=kind,  # type: ignore[arg-type]
                                   category="table" if otype == "table" else "object",
                                   detail=str(otype or "")))
    for table, (added, removed) in sorted(files.items()):
        parts = ([f"+{added} files"] if added else []) + ([f"-{removed} files"] if removed else [])
        out.append(M.ChangeOut(target=lake.name_of(table), path=table, kind="updated", category="files",
                               detail=", ".join(parts)))
    return sorted(out, key=lambda c: (c.target, c.category, c.path))


def _table_of(path: str) -> str:
    """The table path of a file path (its first four levels)."""
    parts = path.split("/")
    return "/".join(parts[:4])


def _table_change(path: str, before: dict[str, Any], after: dict[str, Any]) -> list[M.ChangeOut]:
    name = lake.name_of(path)

    def cols(v: dict[str, Any]) -> dict[int, lake.Column]:
        return {i if c.id is None else int(c.id): c for i, c in enumerate(lake.TableValue.from_raw(v).columns)}

    cb, ca = cols(before), cols(after)
    bits = []
    added = [ca[i].name for i in ca if i not in cb]
    removed = [cb[i].name for i in cb if i not in ca]
    renamed = [f"{cb[i].name}->{ca[i].name}" for i in ca if i in cb and cb[i].name != ca[i].name]
    retyped = [f"{ca[i].name} {cb[i].type}->{ca[i].type}" for i in ca if i in cb and cb[i].type != ca[i].type]
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


def staleness(s: ToolContext, table: str | None, depth: str, snapshot: int | str | None, limit: int,
                    cursor: str | None) -> tuple[M.StalenessOut, str]:
    key = args_key(table=table, depth=depth)
    vid, offset = s.at(snapshot, cursor, "check_staleness", key)
    name = None if not table else lake.name_of(s.table(table, vid).path)
    try:
        found = s.reads.staleness(s.cat, name, vid, depth, s.now())
    except CatalogError as exc:
        raise catalog_error(exc, lambda: list(s.tables(vid))) from None
    if s.limits(vid) is not None:  # under grants: findings of tables the caller may describe
        visible = s.tables(vid)
        found = [f for f in found if ".".join(f.target.split(".")[:3]) in visible]
    order = {"stale": 0, "suspect": 1, "fresh": 2}
    found = sorted((f for f in found if f.status != "fresh"), key=lambda f: (order.get(f.status, 3), f.target))
    pg = page(found, limit, offset, "check_staleness", vid, key)
    out = M.StalenessOut(snapshot=s.snap(vid), depth=depth, findings=[finding(f) for f in pg.items],  # type: ignore[arg-type]
                         total=pg.total, truncated=pg.truncated, next_cursor=pg.next_cursor)
    stale = sum(1 for f in found if f.status == "stale")
    return s.fit(out, f"{pg.total} findings ({stale} stale) for {name or 'every table'} at vid {vid}", "findings",
                    "check_staleness", vid, key, offset)


def lineage(s: ToolContext, table: str, direction: str, depth: int, snapshot: int | str | None, limit: int,
            cursor: str | None) -> tuple[M.LineageOut, str]:
    key = args_key(table=table, direction=direction, depth=depth)
    vid, offset = s.at(snapshot, cursor, "get_lineage", key)
    name = lake.name_of(s.table(table, vid).path)
    try:
        got = s.reads.lineage(s.cat, name, vid, direction, depth, limit, offset)
    except CatalogError as exc:
        raise catalog_error(exc, lambda: list(s.tables(vid))) from None
    # (the graph's edges are the nodes' inputs: node `to` read `from` at `vid`)
    if s.limits(vid) is not None:  # under grants: only tables the caller may describe, inputs too
        visible = s.tables(vid)
        got = {**got, "nodes": [{**n, "inputs": [i for i in n["inputs"] if i.get("table") in visible]}
                                for n in got["nodes"] if n["table"] in visible]}
    nodes = [M.LineageNodeOut(
        table=n["table"], depth=n["depth"], built_vid=(n["built"] or {}).get("vid"),
        job=cut(n["job"], 120) if n["job"] else None,
        inputs=[M.LineageInputOut(**i) for i in n["inputs"][:10]],
        findings=[M.LineageFindingOut(reason=f["reason"], message=cut(f["message"], 300))
                  for f in n.get("findings", [])])
        for n in got["nodes"]]
    end = offset + len(nodes)
    nxt = encode_cursor(PageCursor("get_lineage", vid, end, key)) if got["truncated"] else None
    out = M.LineageOut(snapshot=s.snap(vid), table=name, nodes=nodes, total=got["total"], truncated=got["truncated"],
                       next_cursor=nxt)
    suspect = sum(1 for n in nodes if n.findings)
    return s.fit(out, f"{direction} lineage of {name} at vid {vid}: {got['total']} tables within {depth} hops "
                      f"({suspect} with upstream findings); showing {len(nodes)}", "nodes", "get_lineage", vid, key,
                 offset)
