"""The MCP server: typed tools over a catalog (official `mcp` SDK 2.x, `MCPServer`).

    server = create_server(cat)                               # every tool of DESIGN.md, MCP tools
    server = create_server(cat, reads=Bare())                 # show less: a `reads.Reads` subclass
    async with mcp.Client(server) as client: ...              # in memory (tests)

The tools come in families, one module each, every tool a thin adapter from typed arguments to the
semantic read model (`reads.Reads`, shared state in `context.ToolContext`) and back to the output
models (`models`): `discovery` (search_tables, describe_table, find_join_path, query_catalog), `data`
(get_column_values, list_metrics, query_metric, run_sql), `history` (pin_snapshot, list_snapshots,
diff_snapshots, check_staleness) and `write` (annotate). `resources` and `prompts` publish the table
cards, the instructions and prompts for the common jobs; `completions` completes their table and
snapshot arguments (completion/complete), and `notices` sends the log messages a client asked for
(logging/setLevel) and the progress of long calls (check_staleness, run_sql, query_metric).

Each tool returns a `CallToolResult` whose structured content is the tool's output model (the
published output schema) and whose text content is `bounds.render`: a one-line summary, a newline,
then the same compact JSON, because many clients forward only the text to the model and every
warning and the snapshot must reach it (the token budget counts both copies, see `bounds`).

An error is a result with isError and NO structured content (the tool's output schema describes
its answer, and the TypeScript SDK clients reject structured content that does not match it; see
docs/mcp.md, "Error results"). Its text is `[<code>] <message>`: the machine-readable code, then
what was wrong and what to do; `_meta["semcat/error"]` holds {"code"[, "rule": <the sandbox rule,
for "SqlRefusedError">]}. Codes: a catalog error's class name (e.g. "NoSuchTableError");
"InvalidValueError" for arguments of the wrong name, type or shape; "PermissionDeniedError" for a
tool the caller's role may not call; "NotFoundError" for an unknown tool; "ToolError" for other
refusals; "InternalError" for a crash (no stack trace is sent).

Read tools are annotated read-only. Over HTTP the caller's role and principal come from the
bearer token (`mcp_server.mcp.http`): a `read` token is not offered `annotate` in tools/list, and
calling it anyway gets an error result saying which token role it needs.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, ListResourcesResult, ListToolsResult
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from catalog_core.api import CatalogAPI
from mcp_server.mcp import completions, data, discovery, handshake, history, notices, prompts, resources, write
from mcp_server.mcp.auth import CALLER, caller, principal_of, request_of, role_of
from mcp_server.mcp.bounds import TOKEN_BUDGET
from mcp_server.mcp.context import ToolContext, make_context
from mcp_server.mcp.errors import (
    ERROR_META,
    CodedToolError,
    error_info,
    error_result,
    tool_failure,
)
from mcp_server.mcp.reads import Reads
from mcp_server.mcp.results import sdk_annotations, sdk_tool
from mcp_server.mcp.sdk_errors import ToolError, UnexpectedToolError, bind

bind()  # mcp.server.mcpserver.exceptions, loaded before the SDK (sdk_errors.py), as an attribute of its package

__all__ = ["create_server", "SemcatServer", "TOOL_NAMES", "READ_TOOLS", "WRITE_TOOLS", "caller", "SNAPSHOT_ARGS",
           "error_info", "error_result", "role_of", "INSTRUCTIONS", "ERROR_META", "HANDSHAKE_VERSIONS",
           "MODERN_VERSIONS", "PROTOCOL_VERSIONS"]

log = logging.getLogger(__name__)

# The protocol versions served (the installed SDK's; docs/mcp.md, "Protocol versions"): `initialize` answers
# each HANDSHAKE version with itself and any other with the newest of them; the MODERN ones have no
# handshake (the version rides on every request; `server/discover` lists them).
HANDSHAKE_VERSIONS: tuple[str, ...] = tuple(HANDSHAKE_PROTOCOL_VERSIONS)
MODERN_VERSIONS: tuple[str, ...] = tuple(MODERN_PROTOCOL_VERSIONS)
PROTOCOL_VERSIONS = HANDSHAKE_VERSIONS + MODERN_VERSIONS

READ_TOOLS = ("pin_snapshot", "search_tables", "describe_table", "get_column_values", "find_join_path",
              "list_metrics", "query_metric", "query_catalog", "list_snapshots", "diff_snapshots",
              "check_staleness", "get_lineage", "run_sql")
WRITE_TOOLS = ("annotate",)
TOOL_NAMES = READ_TOOLS + WRITE_TOOLS

INSTRUCTIONS = handshake.INSTRUCTIONS  # what `initialize` says (handshake.py answers it before the SDK loads)


# arguments that name a snapshot: an echoed `snapshot` object ({vid, time, handle}) is taken as its handle
SNAPSHOT_ARGS = ("snapshot", "from_snapshot", "to_snapshot", "as_of")
_SNAPSHOT_OBJECT = {"type": "object", "description": "the `snapshot` object a call echoed; its handle is used",
                    "properties": {"handle": {"type": "string"}, "vid": {"type": "integer"}, "time": {}},
                    "anyOf": [{"required": ["handle"]}, {"required": ["vid"]}]}


def _did_you_mean(name: str, known: list[str]) -> str:
    """The known argument closest to `name`, or '' when none is close."""
    from rapidfuzz import fuzz, process  # here: a stdio session's first call needs none (issue 47, cold start)

    best = process.extractOne(name, known, scorer=fuzz.ratio, score_cutoff=60)
    return str(best[0]) if best else ""


class SemcatServer(MCPServer):
    """MCPServer whose tools refuse unknown arguments by name (a misspelled `snapshot` would
    otherwise be dropped silently and the call answer at the latest vid), take an echoed snapshot
    object as its handle, and say in one line what was wrong with an argument. A caller sees only
    the tools its token role may call (tools/list), a call of another one is refused before its
    arguments are read, and every error is a result with isError, its code in the text and in `_meta`
    and no structured content (`error_result`)."""

    def tool(self, *args: Any, **kwargs: Any) -> Callable[[Any], Any]:
        """The SDK's `tool` decorator for a family's tool (results.py): plain annotations become the SDK's
        `ToolAnnotations`, and the SDK runs the function through `sdk_tool` (its `ToolResult` becomes a
        `CallToolResult`). The decorated function itself is returned unchanged."""
        if "annotations" in kwargs:
            kwargs["annotations"] = sdk_annotations(kwargs["annotations"])
        publish = super().tool(*args, **kwargs)

        def decorate(fn: Any) -> Any:
            publish(sdk_tool(fn))
            return fn

        return decorate

    async def _handle_list_tools(self, ctx: Any, params: Any) -> ListToolsResult:
        tools = await self.list_tools()
        if role_of(request_of(ctx)) != "write":
            tools = [t for t in tools if t.name not in WRITE_TOOLS]
        return ListToolsResult(tools=tools)

    async def _handle_list_resources(self, ctx: Any, params: Any) -> ListResourcesResult:
        """resources/list with one table card per table, paged (`resources.list_page`)."""
        with self._as_caller(ctx):
            try:
                return resources.list_page(self.tool_context, await self.list_resources(),  # type: ignore[attr-defined]
                                           getattr(params, "cursor", None))
            except ValueError as exc:
                raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None

    async def _handle_read_resource(self, ctx: Any, params: Any) -> Any:
        with self._as_caller(ctx):
            return await super()._handle_read_resource(ctx, params)

    @contextlib.contextmanager
    def _as_caller(self, ctx: Any) -> Iterator[None]:
        """Bind the request's principal as the caller (grants and paths see it: issue 48)."""
        bound = CALLER.set(principal_of(ctx, self.tool_context.options.author))  # type: ignore[attr-defined]
        try:
            yield
        finally:
            CALLER.reset(bound)

    async def _handle_get_prompt(self, ctx: Any, params: Any) -> Any:
        """prompts/get; an unknown prompt or missing arguments are invalid params (-32602, as the
        specification says), naming the prompts or the arguments, not the SDK's bare error 0."""
        known = [p.name for p in await self.list_prompts()]
        if params.name not in known:
            raise MCPError(code=INVALID_PARAMS, message=f"unknown prompt {params.name!r}; the prompts are "
                                                        f"{', '.join(known)} (prompts/list describes them)")
        try:
            with self._as_caller(ctx):
                return await super()._handle_get_prompt(ctx, params)
        except ValueError as exc:  # the SDK's refusal of missing or malformed arguments
            raise MCPError(code=INVALID_PARAMS, message=f"prompt {params.name}: {exc}") from None

    async def _handle_call_tool(self, ctx: Any, params: Any) -> Any:
        context = Context(request_context=ctx, mcp_server=self, input_params=params, subscriptions=self._subscriptions)
        try:
            return await self.call_tool(params.name, params.arguments or {}, context)
        except MCPError:
            raise
        except Exception as exc:
            if isinstance(exc, ToolError) and not isinstance(exc, UnexpectedToolError):
                log.info("Tool %r failed: %r", params.name, str(exc))
            else:
                log.exception("Tool %r raised an unexpected exception", params.name)
            return error_result(exc)

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Any = None) -> Any:
        tool = self._tool_manager.get_tool(name)
        role = role_of(request_of(context))
        if tool is None:
            names = ", ".join(t.name for t in self._tool_manager.list_tools()
                              if role == "write" or t.name not in WRITE_TOOLS)
            raise CodedToolError(f"Error executing tool {name}: unknown tool {name!r}; the tools are {names}",
                                 "NotFoundError")
        if name in WRITE_TOOLS and role != "write":
            raise CodedToolError(f"Error executing tool {name}: a {role!r} token cannot call {name}; nothing was "
                                 "done. Ask for a token with role 'write' to record annotations", "PermissionDeniedError")
        if isinstance(arguments, dict):
            known = list((tool.parameters or {}).get("properties", {}))
            unknown = sorted(k for k in arguments if k not in known)
            if unknown:
                if len(unknown) == 1:
                    hint = _did_you_mean(unknown[0], known)
                    said = f"unknown argument {unknown[0]!r}" + (f"; did you mean {hint!r}?" if hint else "")
                else:
                    said = "unknown arguments " + ", ".join(
                        f"{u!r}" + (f" (did you mean {h!r}?)" if (h := _did_you_mean(u, known)) else "") for u in unknown)
                raise CodedToolError(f"Error executing tool {name}: {said} (its arguments: "
                                     f"{', '.join(known) or 'none'}); nothing was done", "InvalidValueError")
            arguments = {k: _snapshot_arg(v) if k in SNAPSHOT_ARGS else v for k, v in arguments.items()}
        author = self.tool_context.options.author  # type: ignore[attr-defined]
        who = principal_of(context, author)
        bound = CALLER.set(who)  # who calls: grants and paths see it (issue 48)
        try:
            out = await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if name in AUDITED:
                code = next((c for e in (exc, exc.__cause__, exc.__context__)
                             if isinstance(c := getattr(e, "code", None), str)), type(exc).__name__)
                _audit(self.tool_context, who.name, name, arguments, None, code)  # type: ignore[attr-defined]
            failure = tool_failure(name, exc)
            if failure is not exc:
                raise failure from exc.__cause__
            raise
        finally:
            CALLER.reset(bound)
        if name in AUDITED:
            _audit(self.tool_context, who.name, name, arguments, out, None)  # type: ignore[attr-defined]
        return out


# The tools that read data or write (issue 48 item 3): each call goes to the audit log.
AUDITED = frozenset({"run_sql", "get_column_values", "query_metric", "annotate"})


def _audit(s: Any, principal: str, name: str, arguments: dict[str, Any], out: Any, error: str | None) -> None:
    """One audit entry for a data tool's call (mcp_server.audit): its statement, tables, vid, rows."""
    from mcp_server.audit import audit_log

    log = audit_log(s.cat)
    if log is None:
        return
    content = getattr(out, "structured_content", None) or getattr(out, "structuredContent", None) or {}
    if not isinstance(content, dict):
        content = {}
    statement = arguments.get("sql") if name == "run_sql" else content.get("sql") or arguments.get("metric")
    tables = content.get("tables") or ([content["table"]] if isinstance(content.get("table"), str) else
                                       [arguments["table"]] if isinstance(arguments.get("table"), str) else [])
    if not tables and isinstance(statement, str) and name == "run_sql":  # a refused statement: what it named
        from mcp_server.mcp.context import sql_table_refs

        try:
            tables = [".".join(p) for p in sql_table_refs(statement)]
        except Exception:  # noqa: BLE001 - unparsable: no table
            tables = []
    snap = content.get("snapshot")
    vid = content.get("vid") if isinstance(content.get("vid"), int) else snap.get("vid") if isinstance(snap, dict) else None
    rows = content.get("row_count") if isinstance(content.get("row_count"), int) else (
        len(content["rows"]) if isinstance(content.get("rows"), list) else
        len(content["values"]) if isinstance(content.get("values"), list) else None)
    if getattr(out, "is_error", False) or getattr(out, "isError", False):
        error = error or "error"
    try:
        log.record(principal=principal, surface="mcp", action=name,
                   statement=statement if isinstance(statement, str) else None,
                   tables=[t for t in tables if isinstance(t, str)], vid=vid, rows=rows, ok=error is None, error=error)
    except OSError as exc:
        log_ = logging.getLogger(__name__)
        log_.error("semcat: cannot write the audit log %s: %s", log.path, exc)


def _snapshot_arg(value: object) -> object:
    if isinstance(value, dict):
        if isinstance(value.get("handle"), str):
            return value["handle"]
        if isinstance(value.get("vid"), int):
            return value["vid"]
    return value


def _strict_schemas(server: MCPServer) -> None:
    """Publish what call_tool enforces: no extra properties; snapshot arguments admit the echoed object."""
    for tool in server._tool_manager.list_tools():
        params = tool.parameters
        params["additionalProperties"] = False
        for key in SNAPSHOT_ARGS:
            prop = params.get("properties", {}).get(key)
            if isinstance(prop, dict) and isinstance(prop.get("anyOf"), list):
                prop["anyOf"].insert(len(prop["anyOf"]) - (1 if {"type": "null"} in prop["anyOf"] else 0),
                                     _SNAPSHOT_OBJECT)


def _untitled(schema: Any) -> Any:
    """`schema` without the `title` annotations pydantic derives from property and model names (they repeat
    the name: ~2.1K of tools/list's 14.7K o200k tokens, ~330 of them in the input schemas a model reads)."""
    if isinstance(schema, dict):
        # a string under "title" is the annotation; a property named "title" has a schema (a dict) as its value
        return {k: _untitled(v) for k, v in schema.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(schema, list):
        return [_untitled(v) for v in schema]
    return schema


def _compact(server: MCPServer) -> None:
    """Fewer tokens in tools/list, same meaning: descriptions as one line (docstrings without their
    indentation and line breaks, `inspect.cleandoc`), schemas without derived titles (`_untitled`)."""
    import inspect

    for tool in server._tool_manager.list_tools():
        if tool.description:
            tool.description = " ".join(inspect.cleandoc(tool.description).split())
        tool.parameters = _untitled(tool.parameters)
        if tool.fn_metadata.output_schema is not None:  # what tools/list publishes (Tool.output_schema caches it)
            tool.fn_metadata.output_schema = _untitled(tool.fn_metadata.output_schema)
            tool.__dict__.pop("output_schema", None)


TITLES = {
    "pin_snapshot": "Pin a snapshot", "search_tables": "Search tables", "describe_table": "Describe a table",
    "get_column_values": "Column values", "find_join_path": "Find a join path", "list_metrics": "List metrics",
    "query_metric": "Query a metric", "query_catalog": "Query the catalog tree", "list_snapshots": "List snapshots",
    "diff_snapshots": "Diff two snapshots", "check_staleness": "Check staleness", "get_lineage": "Get lineage", "run_sql": "Run SQL",
    "annotate": "Annotate a table or column",
}


def _titles(server: MCPServer) -> None:
    """Every tool gets a human-readable `title` (tools/list `title` and `annotations.title`, which
    clients show instead of the name): TITLES, else the name in words."""
    for tool in server._tool_manager.list_tools():
        title = TITLES.get(tool.name) or tool.name.replace("_", " ").capitalize()
        tool.title = tool.title or title
        if tool.annotations is not None and tool.annotations.title is None:
            tool.annotations = tool.annotations.model_copy(update={"title": title})


def create_server(catalog: CatalogAPI, *, reads: Reads | None = None, author: str = "agent",
                  now: float | None = None, name: str = "semcat", token_budget: int = TOKEN_BUDGET,
                  read_only: bool = False, context: ToolContext | None = None) -> MCPServer:
    """An MCP server for `catalog` with every tool of DESIGN.md (section MCP tools), the table cards
    and instructions as resources, and prompts for the common jobs. Every response stays within
    `token_budget` o200k tokens: a longer list is cut, with `truncated` and a `next_cursor` that
    resumes at the first item left out. `reads`: what the tools read of the semantic layer (default
    all of it; the eval passes a subclass that shows less). `read_only`: no `annotate` tool at all
    (neither listed nor callable), whatever the caller's token. `context`: the tools' state made already
    (`context.make_context`; the stdio front's, whose pins must stay valid), instead of one from the options."""
    ctx = context if context is not None else make_context(catalog, reads=reads, author=author, now=now,
                                                           token_budget=token_budget)
    server = SemcatServer(name, instructions=INSTRUCTIONS, version=_version(),
                                     log_level="WARNING", warn_on_duplicate_tools=True)
    server.tool_context = ctx  # type: ignore[attr-defined]  # tests, benchmarks and the eval reach the reads
    for family in (history, discovery, data, write):
        family.register(server, ctx)
    _order_tools(server)
    resources.register(server, ctx, INSTRUCTIONS)
    prompts.register(server, ctx)
    completions.register(server, ctx)  # completion/complete: table names for the card template and prompts
    notices.register(server)  # logging/setLevel; log and progress notifications of tools/call
    if read_only:
        server.remove_tool("annotate")
    _compact(server)
    _strict_schemas(server)
    _titles(server)
    return server


def _order_tools(server: MCPServer) -> None:
    """tools/list in the order of TOOL_NAMES (the published contract), whatever the families' order."""
    registered = server._tool_manager._tools
    ordered = {n: registered[n] for n in TOOL_NAMES if n in registered}
    ordered.update({n: t for n, t in registered.items() if n not in ordered})
    registered.clear()
    registered.update(ordered)


def _version() -> str:
    """The installed semcat package's version (what `initialize` reports as serverInfo.version)."""
    return handshake.server_version()
