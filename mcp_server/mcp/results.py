"""What a tool returns before the MCP SDK sees it (issue 47, cold start).

A read tool's result is its text (the summary line and the compact JSON, `bounds.render`) and its structured
content. `ToolResult` holds the two as plain Python, so a stdio session's front answers a first call without
importing `mcp_types` (its protocol models cost about 0.1 s of a new session's CPU). Where the SDK runs the
tool, `sdk_tool` wraps the function so the SDK receives the `mcp_types.CallToolResult` it expects, with the
signature the SDK reads: a family annotates its tool `-> Annotated[ToolResult, OutModel]`, which the SDK is
shown as `Annotated[CallToolResult, OutModel]` (a result validated against OutModel).

Invariant: `ToolResult.wire()` is `to_sdk().model_dump(by_alias=True, mode="json", exclude_none=True)` for every
result (tests/mcp_server/test_cold_front.py checks it over generated results)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Protocol, get_args, get_origin

if TYPE_CHECKING:
    from mcp_types import CallToolResult

__all__ = ["ToolResult", "ToolServer", "to_sdk", "sdk_tool", "sdk_annotations"]


class ToolServer(Protocol):
    """What a tool family's `register(server, s)` uses of a server: the `tool` decorator, with the tool's
    annotations as a plain dict (`args.READ`). `server.SemcatServer` and the front's collector are ones."""

    def tool(self, *, annotations: dict[str, bool]) -> Callable[[Callable[..., Any]], Callable[..., Any]]: ...


class TextBlock:
    """A text content block (`.type`, `.text`), as `mcp_types.TextContent` reads."""

    __slots__ = ("text",)
    type = "text"

    def __init__(self, text: str) -> None:
        self.text = text


class ToolResult:
    """A successful tool result: one text block and the structured content, JSON values as `model_dump(mode=
    "json")` gives them (no infinities). Never an error: errors are raised and become `errors.error_result`."""

    __slots__ = ("content", "structured_content")
    is_error = False

    def __init__(self, text: str, structured_content: dict[str, Any]) -> None:
        self.content = [TextBlock(text)]
        self.structured_content = structured_content

    def wire(self) -> dict[str, Any]:
        """The result's JSON object as the SDK dumps it (camelCase keys, no null fields)."""
        return {"content": [{"type": "text", "text": c.text} for c in self.content],
                "structuredContent": self.structured_content, "isError": False, "resultType": "complete"}

    def to_sdk(self) -> CallToolResult:
        from mcp_types import CallToolResult, TextContent

        return CallToolResult(content=[TextContent(type="text", text=c.text) for c in self.content],
                              structured_content=self.structured_content)


def to_sdk(out: Any) -> Any:
    """`out` as the SDK takes it: a `ToolResult` becomes a `CallToolResult`; anything else is kept."""
    return out.to_sdk() if isinstance(out, ToolResult) else out


def sdk_annotations(value: Any) -> Any:
    """Tool annotations given as a plain dict (`args.READ`, `args.WRITE`) as the SDK's `ToolAnnotations`."""
    if isinstance(value, dict):
        from mcp_types import ToolAnnotations

        return ToolAnnotations(**value)
    return value


def sdk_tool(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` for the SDK: its result through `to_sdk`, its signature evaluated and set on the wrapper, which the SDK
    reads, its `Annotated[ToolResult, OutModel]` return shown as `Annotated[CallToolResult, OutModel]`."""
    from mcp_types import CallToolResult

    if inspect.iscoroutinefunction(fn):
        raise TypeError(f"tool {fn.__name__}: the tools are synchronous functions (the SDK runs them in a thread)")
    sig = inspect.signature(fn, eval_str=True)
    ret = sig.return_annotation
    if get_origin(ret) is Annotated and get_args(ret)[0] is ToolResult:
        sig = sig.replace(return_annotation=Annotated[(CallToolResult, *get_args(ret)[1:])])

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        return to_sdk(fn(*args, **kwargs))

    run.__signature__ = sig  # type: ignore[attr-defined]
    return run
