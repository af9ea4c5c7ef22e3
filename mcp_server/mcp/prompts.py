"""MCP prompts for the common jobs, so that an IDE client can start them from a menu:

    answer_question(question, snapshot?)      answer a data question at a pinned snapshot
    review_stale_annotations(table, snapshot?) review the stale and suspect annotations of a table

Each prompt is one user message naming the tools to call in order, with the snapshot pinned in its
text (the one given, else the latest vid as a `pin:` handle), so every call of the session reads
the same state. The review prompt also carries the table's current findings (check_staleness at
that snapshot, at most REVIEW_FINDINGS of them), so the model starts from the evidence.

Invariant: a prompt's arguments are checked like a tool's (an unknown table or snapshot is an error
that says what to do), and its text stays within the server's token budget.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from pydantic import Field

from mcp_server.mcp import history
from mcp_server.mcp.bounds import cut
from mcp_server.mcp.context import HANDLE_PREFIX, ToolContext

__all__ = ["register", "answer_question_text", "review_text", "REVIEW_FINDINGS"]

REVIEW_FINDINGS = 20


def _pinned(s: ToolContext, snapshot: str | None) -> str:
    """The handle of `snapshot` (default: the latest vid); raises a ToolError for an unknown one."""
    ref: int | str | None = snapshot
    if isinstance(snapshot, str) and snapshot.isascii() and snapshot.isdigit():
        ref = int(snapshot)
    return f"{HANDLE_PREFIX}{s.resolve(ref)}"


def answer_question_text(s: ToolContext, question: str, snapshot: str | None = None) -> str:
    """The answer_question prompt: the steps of a grounded answer at one pinned snapshot."""
    if not question.strip():
        raise ValueError("question must be the data question to answer, e.g. 'net revenue by store yesterday'")
    handle = _pinned(s, snapshot)
    return (f"Answer this data question from the semcat catalog: {cut(question.strip(), 2000)}\n\n"
            f"Read everything at snapshot {handle}: pass snapshot=\"{handle}\" to every tool call.\n"
            "1. search_tables for the question; prefer certified tables, never a deprecated one (use its successor).\n"
            "2. describe_table on the candidates: grain, units, not_for_reporting, relationships, metrics.\n"
            "3. If a defined metric fits, list_metrics and query_metric; otherwise find_join_path for joins and "
            "get_column_values to write filter literals exactly as stored.\n"
            "4. run_sql with one read-only SELECT.\n"
            "5. Heed every warning (deprecated, freshness SLA missed, stale or suspect annotations): say how it "
            "affects the answer, or abstain when the data cannot answer it.\n"
            f"Give the answer, the SQL that produced it and the snapshot ({handle}).")


def review_text(s: ToolContext, table: str, snapshot: str | None = None) -> str:
    """The review_stale_annotations prompt: the table's findings at the snapshot and how to act on them."""
    handle = _pinned(s, snapshot)
    out, summary = history.staleness(s, table, "metadata", handle, REVIEW_FINDINGS, None)
    lines = [f"Review the annotations of {table} "
             f"that may no longer be true, at snapshot {handle} (pass snapshot=\"{handle}\" to every call).",
             f"check_staleness says: {summary}."]
    for f in out.findings:
        fix = f"; suggestion: {f.suggestion}" if f.suggestion else ""
        lines.append(f"- [{f.status}/{f.reason}] {f.annotation or f.target}: {f.message}{fix}")
    if out.truncated:
        lines.append(f"(more findings: check_staleness with table=\"{table}\" and cursor=\"{out.next_cursor}\")")
    lines += ["For each finding: read the evidence (describe_table with detail=\"full\", diff_snapshots between the "
              "annotation's vid and the snapshot, get_column_values for the columns involved), decide whether the "
              "annotation is still true, and if not write the corrected value with annotate (note: the evidence). "
              "Leave annotations you cannot verify alone and say why."]
    return "\n".join(lines)


def _checked(make: Callable[[], str]) -> str:
    """`make()`; a refused argument becomes an invalid-params error carrying the tool's message (the
    SDK would otherwise replace it with "Error rendering prompt")."""
    try:
        return make()
    except (ToolError, ValueError) as exc:
        raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None


def register(server: MCPServer, s: ToolContext) -> None:
    """Publish the prompts of `s` on `server`."""

    @server.prompt(name="answer_question", title="Answer a data question at a pinned snapshot",
                   description="Steps to answer a data question from the catalog, every call at one snapshot")
    def answer_question(
        question: Annotated[str, Field(description="the data question, e.g. 'net revenue by store yesterday'")],
        snapshot: Annotated[str | None, Field(description="handle, vid, name or ISO time; default: latest")] = None,
    ) -> str:
        return _checked(lambda: answer_question_text(s, question, snapshot))

    @server.prompt(name="review_stale_annotations", title="Review stale annotations of a table",
                   description="A table's stale and suspect annotations with their evidence, and how to fix them")
    def review_stale_annotations(
        table: Annotated[str, Field(description="dotted table name catalog.namespace.table")],
        snapshot: Annotated[str | None, Field(description="handle, vid, name or ISO time; default: latest")] = None,
    ) -> str:
        return _checked(lambda: review_text(s, table, snapshot))
