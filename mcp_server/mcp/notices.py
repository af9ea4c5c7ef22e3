"""Logging and progress notifications of the MCP server: what a client that asked hears while a
tool runs.

Logging (`logging` capability). A client asks for log messages, and they are sent only then:
a handshake-era client (2025-11-25 and before) with `logging/setLevel`, which holds for the rest of
its connection (stdio, in-process; each request of the stateless HTTP endpoint is a connection of
its own, so there it holds for nothing after it); a 2026-07-28 client per request, with the
`io.modelcontextprotocol/logLevel` key of the request's `_meta` (the SDK enforces that opt-in).
Each tools/call then logs, as `notifications/message` from logger "semcat" at or above the level
asked: `debug` the call and its arguments (cut to LOG_TEXT characters), `info` its one-line
summary, `warning` the message of an error result.

Progress. When a tools/call of one of PROGRESS_TOOLS carries `_meta.progressToken`, the call
reports `notifications/progress`: 0 when it starts, then for a whole-catalog check_staleness each
table the scan checks (`semantic.progress`; at most PROGRESS_STEPS of them, evenly spread, `total`
the number of tables plus one), then the last step, which equals `total`, when the result is ready.
Progress strictly increases within a call. Nothing is sent without a token.

Over `semcat serve`, a request that asks for notifications (a progress token or a log level in its
`_meta`, `wants_stream`) is answered as an SSE stream, which can carry them before the result; any
other request is answered with plain JSON.

Invariant: a notification that cannot be sent (the client went away) is dropped and never fails
the call; notifications only ever go to the request that asked, on its own stream.
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any

import anyio.from_thread
from mcp.server.connection import allowed_log_levels
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp_types import (
    EmptyResult,
    LoggingLevel,
    LoggingMessageNotification,
    LoggingMessageNotificationParams,
    SetLevelRequestParams,
)

from mcp_server.mcp.bounds import cut
from semantic import progress as sm_progress

__all__ = ["register", "wants_stream", "PROGRESS_TOOLS", "PROGRESS_STEPS", "LEVELS", "LOGGER", "LOG_TEXT"]

log = logging.getLogger(__name__)

PROGRESS_TOOLS = ("check_staleness", "run_sql", "query_metric")
PROGRESS_STEPS = 100
LEVELS: tuple[LoggingLevel, ...] = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
LOGGER = "semcat"
LOG_TEXT = 500
_LEVEL_KEY = "semcat.log_level"  # in the connection's state: the level of its last logging/setLevel
LOG_LEVEL_META = "io.modelcontextprotocol/logLevel"


def _connection_state(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any] | None:
    # ServerSession keeps its Connection private; its `state` is the SDK's per-connection scratch space
    conn = getattr(ctx.session, "_connection", None)
    state = getattr(conn, "state", None)
    return state if isinstance(state, dict) else None


async def _set_level(ctx: ServerRequestContext[Any, Any], params: SetLevelRequestParams) -> EmptyResult:
    """logging/setLevel: the least severe level the rest of this connection's calls log at."""
    state = _connection_state(ctx)
    if state is not None:
        state[_LEVEL_KEY] = params.level
    return EmptyResult()


class _Call:
    """The notifications of one tools/call: log messages at the levels asked, progress when a token came."""

    def __init__(self, ctx: ServerRequestContext[Any, Any], tool: str) -> None:
        self.ctx = ctx
        self.tool = tool
        self.progress = 0
        meta: dict[str, Any] = dict(ctx.meta) if isinstance(ctx.meta, dict) else {}
        # report_progress is a no-op when the request carried no progress token (the SDK knows; the
        # in-process dispatcher keeps it out of `_meta`), so the tool's reports are always made
        self.wants_progress = tool in PROGRESS_TOOLS
        allowed = allowed_log_levels(ctx.protocol_version, meta)
        state = _connection_state(ctx)
        asked = state.get(_LEVEL_KEY) if state is not None else None
        if meta.get(LOG_LEVEL_META) in LEVELS:
            asked = meta[LOG_LEVEL_META]
        floor = LEVELS.index(asked) if asked in LEVELS else len(LEVELS)  # nothing asked: nothing sent
        self.levels = {lv for lv in allowed if LEVELS.index(lv) >= floor}

    async def log(self, level: LoggingLevel, text: str) -> None:
        if level not in self.levels:
            return
        note = LoggingMessageNotification(params=LoggingMessageNotificationParams(
            level=level, logger=LOGGER, data=cut(text, LOG_TEXT)))
        try:
            await self.ctx.session.send_notification(note, related_request_id=self.ctx.request_id)
        except Exception:  # noqa: BLE001 - a log line the client cannot receive must not fail the call
            log.debug("dropped a log notification of %s", self.tool, exc_info=True)

    async def report(self, progress: int, total: int | None, message: str) -> None:
        if not self.wants_progress or progress <= self.progress and progress != 0:
            return
        self.progress = progress
        try:
            await self.ctx.session.report_progress(progress, total, cut(message, LOG_TEXT))
        except Exception:  # noqa: BLE001 - as for log
            log.debug("dropped a progress notification of %s", self.tool, exc_info=True)

    def table_done(self, done: int, total: int, what: str) -> None:
        """semantic.progress reporter, called in the tool's worker thread after each table."""
        stride = max(1, math.ceil(total / PROGRESS_STEPS))
        if done % stride and done != total:
            return
        try:
            anyio.from_thread.run(self.report, done, total + 1, f"{self.tool}: checked {done} of {total} tables ({what})")
        except RuntimeError:  # not in an anyio worker thread (no event loop to send from): nothing to do
            pass

    async def run(self, call_next: CallNext) -> HandlerResult:
        if not self.levels and not self.wants_progress:  # nothing asked: the call as it is
            return await call_next(self.ctx)
        if "debug" in self.levels:
            args = (self.ctx.params or {}).get("arguments") if isinstance(self.ctx.params, dict) else None
            await self.log("debug", f"{self.tool} called with {cut(json.dumps(args or {}, default=str, ensure_ascii=False), LOG_TEXT)}")
        await self.report(0, None, f"{self.tool}: started")
        with sm_progress.reporting(self.table_done if self.wants_progress else None):
            result = await call_next(self.ctx)
        if self.levels:
            body = result if isinstance(result, dict) else (
                result.model_dump(by_alias=True, mode="json", exclude_none=True) if result is not None else {})
            texts = [c.get("text", "") for c in body.get("content") or [] if isinstance(c, dict)]
            first = (texts[0] if texts else "").split("\n", 1)[0]
            if body.get("isError"):
                await self.log("warning", f"{self.tool} failed: {first}")
            else:
                await self.log("info", f"{self.tool}: {first}")
        await self.report(self.progress + 1, self.progress + 1, f"{self.tool}: done")
        return result


async def _middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    if ctx.method != "tools/call" or ctx.request_id is None or not isinstance(ctx.params, dict):
        return await call_next(ctx)
    return await _Call(ctx, str(ctx.params.get("name", ""))).run(call_next)


def register(server: MCPServer) -> None:
    """Serve logging/setLevel (declaring the `logging` capability) and wrap every tools/call of
    `server` with its log and progress notifications."""
    lowlevel = server._lowlevel_server  # the SDK's request handlers and middleware chain
    lowlevel.add_request_handler("logging/setLevel", SetLevelRequestParams, _set_level)
    lowlevel.middleware.append(_middleware)


def wants_stream(body: bytes) -> bool:
    """Whether an HTTP POST body is a JSON-RPC request that asks for notifications (a progress token
    or a log level in its `_meta`), so its answer should be an SSE stream that can carry them."""
    try:
        msg = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return False
    if not isinstance(msg, dict) or "id" not in msg:
        return False
    params = msg.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and (meta.get("progressToken") is not None or meta.get(LOG_LEVEL_META) in LEVELS)
