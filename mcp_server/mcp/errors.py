"""Errors an agent can act on: `CodedToolError` (message + machine-readable code), the rewrite of
catalog texts for agents (`for_agents`), did-you-mean hints, and `guard`, which turns what a tool
raises into a ToolError and what it returns into a `ToolResult` (results.py: the SDK receives it as a
`CallToolResult`).

Invariant: every message names MCP tools, never Python calls; the code of a catalog error is its
class name (e.g. "NoSuchTableError"), "InvalidValueError" for arguments of the wrong shape.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from pydantic import BaseModel, ValidationError

from catalog_core.errors import CatalogError, NoSuchTableError, SnapshotNotFoundError
from mcp_server.mcp.bounds import render
from mcp_server.mcp.results import ToolResult
from mcp_server.mcp.sdk_errors import ToolError, UnexpectedToolError

if TYPE_CHECKING:
    from mcp_types import CallToolResult

__all__ = ["CodedToolError", "coded", "for_agents", "catalog_error", "closest", "table_suggestions", "guard",
           "result", "error_info", "error_result", "ERROR_META", "validation_message",
           "tool_failure"]


class CodedToolError(ToolError):
    """A ToolError with a machine-readable `code`: the name of the catalog error class it stands
    for (e.g. "NoSuchTableError", "SqlTimeoutError"), and for a "SqlRefusedError" the sandbox
    `rule` it broke. The message is what the agent reads; the code is for programs."""

    def __init__(self, message: str, code: str, rule: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.rule = rule


def closest(word: str, choices: Iterable[str], limit: int = 3) -> list[str]:
    """At most `limit` of `choices` close to `word` (rapidfuzz WRatio >= 55), best first."""
    from rapidfuzz import fuzz, process

    pool = list(dict.fromkeys(choices))
    if not pool:
        return []
    return [h[0] for h in process.extract(word, pool, scorer=fuzz.WRatio, limit=limit, score_cutoff=55)]


def table_suggestions(word: str, names: Iterable[str]) -> str:
    """'did you mean ...?' for an unknown table name, or where the tables are listed."""
    names = list(names)
    close = closest(word, names)
    if not close:  # also match the bare table name against the last part
        short = {n.rsplit(".", 1)[-1]: n for n in names}
        close = [short[s] for s in closest(word.rsplit(".", 1)[-1], short)]
    if close:
        return "did you mean " + " or ".join(repr(c) for c in close) + "?"
    return "search_tables lists the tables"


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


def catalog_error(exc: CatalogError, names: Callable[[], list[str]] | None = None) -> ToolError:
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


def result(out: tuple[BaseModel, str]) -> ToolResult:
    """The structured content, and as text the summary line followed by the same compact JSON."""
    model, summary = out
    data = model.model_dump(mode="json", exclude_none=True)
    return ToolResult(render(summary, data), data)


def guard(fn: Callable[[], tuple[BaseModel, str]]) -> ToolResult:
    """`result(fn())`; catalog and validation errors become ToolErrors the model can act on; no stack traces."""
    try:
        return result(fn())
    except ToolError:
        raise
    except CatalogError as exc:
        raise catalog_error(exc) from None
    except ValidationError as exc:
        parts = [f"{'.'.join(str(x) for x in e['loc']) or 'value'}: {e['msg']}" for e in exc.errors()[:5]]
        raise CodedToolError("invalid value: " + "; ".join(parts), "InvalidValueError") from None
    except (ValueError, TypeError) as exc:
        raise CodedToolError(f"invalid argument: {exc}", "InvalidValueError") from None


def error_info(exc: BaseException) -> dict[str, str]:
    """{"code", "message"[, "rule"]} of a failed call: the code of the first CodedToolError on the
    cause chain, "InvalidValueError" for argument validation, "InternalError" for a crash."""
    code, rule = "ToolError", None
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, CodedToolError):
            code, rule = seen.code, seen.rule
            break
        if isinstance(seen, ValidationError):
            code = "InvalidValueError"
            break
        seen = seen.__cause__
    else:
        if isinstance(exc, UnexpectedToolError) or not isinstance(exc, ToolError):
            code = "InternalError"
    out: dict[str, str] = {"code": code, "message": str(exc)}
    if rule:
        out["rule"] = rule
    return out


ERROR_META = "semcat/error"  # the `_meta` key of an error result: {"code"[, "rule"]}


def error_result(exc: BaseException) -> CallToolResult:
    """The result of a failed call: isError, text `[code] message`, `_meta[ERROR_META]` = {"code"[, "rule"]},
    and no structured content, so no output schema can reject it (docs/mcp.md, "Error results")."""
    from mcp_types import CallToolResult, TextContent

    info = error_info(exc)
    meta = {k: v for k, v in info.items() if k != "message"}
    return CallToolResult(content=[TextContent(type="text", text=f"[{info['code']}] {info['message']}")],
                          is_error=True, _meta={ERROR_META: meta})


def validation_message(exc: ValidationError) -> str:
    """One line per wrong argument (at most five): where, what was wrong, what was given."""
    parts = []
    for e in exc.errors()[:5]:
        where = ".".join(str(x) for x in e["loc"] if x != "arguments") or "value"
        got = repr(e.get("input"))
        parts.append(f"{where}: {e['msg']} (got {got[:60] + '...' if len(got) > 60 else got})")
    return "; ".join(parts)


def tool_failure(name: str, exc: BaseException) -> BaseException:
    """What a call of tool `name` that failed with the SDK's ToolError `exc` raises (`SemcatServer.call_tool`,
    and the stdio front, `front.py`): arguments or a result that failed pydantic validation become an
    InvalidValueError saying which value was wrong (raise it `from exc.__cause__`); any other `exc` itself."""
    if isinstance(exc.__cause__, ValidationError):
        return CodedToolError(f"Error executing tool {name}: invalid arguments: "
                              f"{validation_message(exc.__cause__)}", "InvalidValueError")
    return exc
