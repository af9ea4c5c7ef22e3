"""`completion/complete` for the arguments that name catalog objects, so that an IDE client can
offer table names while a user fills in a prompt or the table-card resource template:

    ref/resource semcat://table/{name}{?snapshot,cursor}   name: tables; snapshot: named snapshots
    ref/prompt   review_stale_annotations                   table: tables; snapshot: named snapshots
    ref/prompt   answer_question                            snapshot: named snapshots

A table matches when its dotted name, or the part of it after a dot, starts with the typed value
(case-insensitive): "fct" and "acme.core.fct" both offer acme.core.fct_orders. Full-name matches
come first, then the others, each by name. Tables are those at the snapshot the request's context
names (`context.arguments["snapshot"]`: a handle, vid, name or ISO time), else at the latest vid.

Invariants: at most MAX_VALUES values (the specification's limit), `total` is the number of matches
and `hasMore` says whether values were left out; an argument without completions, or a value
nothing matches, gets an empty list. An unknown prompt or resource template, or a snapshot in the
context that does not exist, is an invalid-params error (-32602) that says what exists.
"""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    CompleteRequestParams,
    CompleteResult,
    Completion,
    CompletionArgument,
    CompletionContext,
    PromptReference,
)

from mcp_server.mcp.auth import CALLER, principal_of
from mcp_server.mcp.context import ToolContext
from mcp_server.mcp.resources import TABLE_TEMPLATE

__all__ = ["register", "complete", "MAX_VALUES", "TABLE_ARGS"]

MAX_VALUES = 100
TABLE_URI = TABLE_TEMPLATE.split("{", 1)[0]  # semcat://table/

# (ref kind, ref name) -> {argument: what completes it}
TABLE_ARGS: dict[tuple[str, str], dict[str, str]] = {
    ("ref/resource", TABLE_TEMPLATE): {"name": "table", "snapshot": "snapshot"},
    ("ref/prompt", "review_stale_annotations"): {"table": "table", "snapshot": "snapshot"},
    ("ref/prompt", "answer_question"): {"snapshot": "snapshot"},
}


def _kind_of(ref: Any) -> tuple[str, str]:
    """The TABLE_ARGS key of `ref`; any URI under semcat://table/ is the table-card template."""
    if isinstance(ref, PromptReference):
        return "ref/prompt", ref.name
    uri = str(getattr(ref, "uri", ""))
    return "ref/resource", TABLE_TEMPLATE if uri.startswith(TABLE_URI) else uri


def _refused(message: str) -> MCPError:
    return MCPError(code=INVALID_PARAMS, message=message)


def _bounded(matches: list[str]) -> Completion:
    return Completion(values=matches[:MAX_VALUES], total=len(matches), has_more=len(matches) > MAX_VALUES)


def table_matches(names: list[str], value: str) -> list[str]:
    """The names whose dotted name, or a part of it after a dot, starts with `value` (any case):
    full-name matches first, then the others, each sorted."""
    v = value.strip().lower()
    full, part = [], []
    for name in sorted(names):
        low = name.lower()
        if low.startswith(v):
            full.append(name)
        elif any(low[i + 1:].startswith(v) for i, ch in enumerate(low) if ch == "."):
            part.append(name)
    return full + part


def complete(s: ToolContext, ref: Any, argument: CompletionArgument, context: CompletionContext | None) -> Completion:
    """The completion of `argument` of `ref` (see the module docstring); raises MCPError (-32602)
    for an unknown ref or snapshot."""
    kind = _kind_of(ref)
    if kind not in TABLE_ARGS:
        known = ", ".join(f"{k} {n}" for k, n in TABLE_ARGS)
        what = "prompt" if kind[0] == "ref/prompt" else "resource template"
        raise _refused(f"no {what} {kind[1]!r} to complete arguments of; the completable ones: {known}")
    target = TABLE_ARGS[kind].get(argument.name)
    if target is None:
        return Completion(values=[], total=0, has_more=False)
    if target == "snapshot":
        names = sorted({sn.name for sn in s.cat.snapshots()})
        v = argument.value.strip().lower()
        return _bounded([n for n in names if n.lower().startswith(v)])
    snapshot = (context.arguments or {}).get("snapshot") if context is not None else None
    try:
        vid = s.resolve(int(snapshot) if isinstance(snapshot, str) and snapshot.isascii() and snapshot.isdigit()
                        else snapshot)
    except ToolError as exc:
        raise _refused(f"context argument snapshot: {exc}") from None
    return _bounded(table_matches([n for n, o in s.tables(vid).items() if s.shows(o.path, vid)], argument.value))


def register(server: MCPServer, s: ToolContext) -> None:
    """Serve completion/complete for the table-naming arguments of `s` on `server` (and so declare
    the `completions` capability)."""

    async def table_names(ctx: ServerRequestContext[Any, Any], params: CompleteRequestParams) -> CompleteResult:
        # catalog reads block: off the event loop; the caller bound for grants (issue 48)
        bound = CALLER.set(principal_of(ctx, s.options.author))
        try:
            done = await anyio.to_thread.run_sync(complete, s, params.ref, params.argument, params.context)
        finally:
            CALLER.reset(bound)
        return CompleteResult(completion=done)

    server._lowlevel_server.add_request_handler("completion/complete", CompleteRequestParams, table_names)
