"""The MCP server: typed tools over a catalog (official `mcp` SDK 2.x, `MCPServer`).

    server = create_server(cat)                               # every tool of DESIGN.md, MCP tools
    server = create_server(cat, hide_annotations=True)        # the eval's `bare` condition
    server = create_server(cat, hide_findings=True)           # `stale` without detection
    async with mcp.Client(server) as client: ...              # in memory (tests)

Each tool returns a `CallToolResult` whose structured content is the tool's output model (the
published output schema) and whose text content is `bounds.render`: a one-line summary, a newline,
then the same compact JSON, because many clients forward only the text to the model and every
warning and the snapshot must reach it (the token budget counts both copies, see `bounds`).

An error is a result with isError, its message as text (what was wrong and what to do) and
structured content {"error": {"code": <error class name, e.g. "NoSuchTableError">, "message": ...,
"rule": <the sandbox rule, for "SqlRefusedError">}}. Codes: a catalog error's class name;
"InvalidValueError" for arguments of the wrong name, type or shape; "PermissionDeniedError" for a
tool the caller's role may not call; "NotFoundError" for an unknown tool; "ToolError" for other
refusals; "InternalError" for a crash (no stack trace is sent).

Read tools are annotated read-only. Over HTTP the caller's role and principal come from the
bearer token (`mcp_server.mcp.http`): a `read` token is not offered `annotate` in tools/list, and
calling it anyway gets an error result saying which token role it needs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, ListToolsResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError
from rapidfuzz import fuzz, process

from catalog_core.api import CatalogAPI
from catalog_core.errors import CatalogError
from mcp_server.mcp import models as M
from mcp_server.mcp.bounds import TOKEN_BUDGET, render
from mcp_server.mcp.tools import LIMITS, CodedToolError, Options, Tools, _catalog_error, principal_digest

__all__ = ["create_server", "SemcatServer", "TOOL_NAMES", "READ_TOOLS", "WRITE_TOOLS", "caller", "SNAPSHOT_ARGS",
           "error_info", "role_of"]

log = logging.getLogger(__name__)

READ_TOOLS = ("pin_snapshot", "search_tables", "describe_table", "get_column_values", "find_join_path",
              "list_metrics", "query_metric", "query_catalog", "list_snapshots", "diff_snapshots",
              "check_staleness", "run_sql")
WRITE_TOOLS = ("annotate",)
TOOL_NAMES = READ_TOOLS + WRITE_TOOLS

INSTRUCTIONS = """semcat: a versioned catalog of a data lake. Start with pin_snapshot and pass its handle as
`snapshot` to every later call, so all answers describe the same state. Find tables with search_tables,
read one with describe_table (columns page with cursor), ground literals with get_column_values, join with
find_join_path, prefer list_metrics/query_metric over hand-written aggregates, and run SQL with run_sql.
Heed `warnings`: deprecated tables, missed freshness SLAs and stale annotations."""

Snapshot = Annotated[int | str | None, Field(
    description="what to read: a pin_snapshot handle ('pin:42'), a vid, a snapshot name or an ISO time; "
                "default: the latest commit")]
Cursor = Annotated[str | None, Field(description="next_cursor of the previous page; omit for the first page")]


# items per page of each paged tool (defaults and maxima in tools.LIMITS)
Limit_search_tables = Annotated[int, Field(ge=1, le=LIMITS["search_tables"][1], description=f"items per page (default {LIMITS['search_tables'][0]}, at most {LIMITS['search_tables'][1]})")]
Limit_get_column_values = Annotated[int, Field(ge=1, le=LIMITS["get_column_values"][1], description=f"items per page (default {LIMITS['get_column_values'][0]}, at most {LIMITS['get_column_values'][1]})")]
Limit_list_metrics = Annotated[int, Field(ge=1, le=LIMITS["list_metrics"][1], description=f"items per page (default {LIMITS['list_metrics'][0]}, at most {LIMITS['list_metrics'][1]})")]
Limit_query_metric = Annotated[int, Field(ge=1, le=LIMITS["query_metric"][1], description=f"items per page (default {LIMITS['query_metric'][0]}, at most {LIMITS['query_metric'][1]})")]
Limit_query_catalog = Annotated[int, Field(ge=1, le=LIMITS["query_catalog"][1], description=f"items per page (default {LIMITS['query_catalog'][0]}, at most {LIMITS['query_catalog'][1]})")]
Limit_list_snapshots = Annotated[int, Field(ge=1, le=LIMITS["list_snapshots"][1], description=f"items per page (default {LIMITS['list_snapshots'][0]}, at most {LIMITS['list_snapshots'][1]})")]
Limit_diff_snapshots = Annotated[int, Field(ge=1, le=LIMITS["diff_snapshots"][1], description=f"items per page (default {LIMITS['diff_snapshots'][0]}, at most {LIMITS['diff_snapshots'][1]})")]
Limit_check_staleness = Annotated[int, Field(ge=1, le=LIMITS["check_staleness"][1], description=f"items per page (default {LIMITS['check_staleness'][0]}, at most {LIMITS['check_staleness'][1]})")]
Limit_run_sql = Annotated[int, Field(ge=1, le=LIMITS["run_sql"][1], description=f"items per page (default {LIMITS['run_sql'][0]}, at most {LIMITS['run_sql'][1]})")]


TableName = Annotated[str, Field(description="dotted table name catalog.namespace.table")]

_READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)


def _request_of(ctx: Any) -> Any:
    """The transport's request of a tool `Context` or a handler's request context (None in memory or on stdio)."""
    if ctx is None:
        return None
    try:
        inner = ctx.request_context if isinstance(ctx, Context) else ctx
        return getattr(inner, "request", None)
    except (ValueError, AttributeError):
        return None


def role_of(request: Any) -> str:
    """The token role of an HTTP request ("read" or "write"); "write" without HTTP (stdio, in memory)."""
    scope = getattr(request, "scope", None)
    if not isinstance(scope, dict):
        return "write"
    return str((scope.get("state") or {}).get("role") or "write")


def caller(ctx: Context | None, options: Options) -> tuple[str, str]:
    """(role, principal) of the request: from the bearer token over HTTP, full rights otherwise
    (stdio: the user who started the server; a remote catalog behind it checks its own token)."""
    request = _request_of(ctx)
    scope = getattr(request, "scope", None)
    if not isinstance(scope, dict):
        return "write", options.author
    state = scope.get("state") or {}
    role = role_of(request)
    principal = state.get("principal")
    if isinstance(principal, str) and principal:
        return role, principal if principal.startswith("token:") else "token:" + principal[:12]
    auth = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
    token = auth.partition(" ")[2].strip()
    return role, principal_digest(token) if token else options.author


def _result(out: tuple[BaseModel, str]) -> CallToolResult:
    """The structured content, and as text the summary line followed by the same compact JSON."""
    model, summary = out
    data = model.model_dump(mode="json", exclude_none=True)
    return CallToolResult(content=[TextContent(type="text", text=render(summary, data))], structured_content=data)


def error_info(exc: BaseException) -> dict[str, Any]:
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
    out: dict[str, Any] = {"code": code, "message": str(exc)}
    if rule:
        out["rule"] = rule
    return out


def _guard(tools: Tools, fn: Callable[[], tuple[BaseModel, str]]) -> CallToolResult:
    """Catalog and validation errors become ToolErrors the model can act on; no stack traces."""
    try:
        return _result(fn())
    except ToolError:
        raise
    except CatalogError as exc:
        raise _catalog_error(exc) from None
    except ValidationError as exc:
        parts = [f"{'.'.join(str(x) for x in e['loc']) or 'value'}: {e['msg']}" for e in exc.errors()[:5]]
        raise CodedToolError("invalid value: " + "; ".join(parts), "InvalidValueError") from None
    except (ValueError, TypeError) as exc:
        raise CodedToolError(f"invalid argument: {exc}", "InvalidValueError") from None


# arguments that name a snapshot: an echoed `snapshot` object ({vid, time, handle}) is taken as its handle
SNAPSHOT_ARGS = ("snapshot", "from_snapshot", "to_snapshot", "as_of")
_SNAPSHOT_OBJECT = {"type": "object", "description": "the `snapshot` object a call echoed; its handle is used",
                    "properties": {"handle": {"type": "string"}, "vid": {"type": "integer"}, "time": {}},
                    "anyOf": [{"required": ["handle"]}, {"required": ["vid"]}]}


def _did_you_mean(name: str, known: list[str]) -> str:
    """The known argument closest to `name`, or '' when none is close."""
    best = process.extractOne(name, known, scorer=fuzz.ratio, score_cutoff=60)
    return str(best[0]) if best else ""


def validation_message(exc: ValidationError) -> str:
    """One line per wrong argument (at most five): where, what was wrong, what was given."""
    parts = []
    for e in exc.errors()[:5]:
        where = ".".join(str(x) for x in e["loc"] if x != "arguments") or "value"
        got = repr(e.get("input"))
        parts.append(f"{where}: {e['msg']} (got {got[:60] + '...' if len(got) > 60 else got})")
    return "; ".join(parts)


class SemcatServer(MCPServer):
    """MCPServer whose tools refuse unknown arguments by name (a misspelled `snapshot` would
    otherwise be dropped silently and the call answer at the latest vid), take an echoed snapshot
    object as its handle, and say in one line what was wrong with an argument. A caller sees only
    the tools its token role may call (tools/list), a call of another one is refused before its
    arguments are read, and every error result carries {"error": {"code", "message", "rule"?}} as
    structured content (`error_info`)."""

    async def _handle_list_tools(self, ctx: Any, params: Any) -> ListToolsResult:
        tools = await self.list_tools()
        if role_of(_request_of(ctx)) != "write":
            tools = [t for t in tools if t.name not in WRITE_TOOLS]
        return ListToolsResult(tools=tools)

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
            return CallToolResult(content=[TextContent(type="text", text=str(exc))],
                                  structured_content={"error": error_info(exc)}, is_error=True)

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Any = None) -> Any:
        tool = self._tool_manager.get_tool(name)
        role = role_of(_request_of(context))
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
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise CodedToolError(f"Error executing tool {name}: invalid arguments: "
                                     f"{validation_message(exc.__cause__)}", "InvalidValueError") from exc.__cause__
            raise


def _snapshot_arg(value: Any) -> Any:
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


def create_server(catalog: CatalogAPI, *, hide_annotations: bool = False, hide_findings: bool = False,
                  author: str = "agent", now: float | None = None, name: str = "semcat",
                  token_budget: int = TOKEN_BUDGET, read_only: bool = False) -> MCPServer:
    """An MCP server for `catalog` with every tool of DESIGN.md (section MCP tools). Every response
    stays within `token_budget` o200k tokens: a longer list is cut, with `truncated` and a
    `next_cursor` that resumes at the first item left out. `read_only`: no `annotate` tool at all
    (neither listed nor callable), whatever the caller's token."""
    if isinstance(token_budget, bool) or not isinstance(token_budget, int) or token_budget < 500:
        raise ValueError(f"token_budget must be an integer of at least 500 tokens, got {token_budget!r}")
    options = Options(hide_annotations=hide_annotations, hide_findings=hide_findings, author=author, now=now,
                      token_budget=token_budget)
    tools = Tools(catalog, options)
    server: MCPServer = SemcatServer(name, instructions=INSTRUCTIONS, version=_version(),
                                     log_level="WARNING", warn_on_duplicate_tools=True)
    server.tools = tools  # type: ignore[attr-defined]  # tests and benchmarks reach the implementation

    @server.tool(annotations=_READ)
    def pin_snapshot(
        as_of: Annotated[int | str | None, Field(description="vid or ISO time to pin; default: the latest")] = None,
        name: Annotated[str | None, Field(description="a named snapshot to pin instead")] = None,
    ) -> Annotated[CallToolResult, M.PinOut]:
        """Pin a snapshot first: returns a handle to pass as `snapshot` to every later call, so all
        answers read the same state of the lake even while it changes."""
        return _guard(tools, lambda: tools.pin_snapshot(as_of, name))

    @server.tool(annotations=_READ)
    def search_tables(
        query: Annotated[str, Field(description="words describing the data, e.g. 'net revenue by store'")] = "",
        snapshot: Snapshot = None, limit: Limit_search_tables = LIMITS["search_tables"][0],
        cursor: Cursor = None,
    ) -> Annotated[CallToolResult, M.SearchOut]:
        """Find tables for a question: ranked names with grain, one-line description, deprecation
        (and successor), freshness and warnings. Use before describe_table."""
        return _guard(tools, lambda: tools.search_tables(query, snapshot, limit, cursor))

    @server.tool(annotations=_READ)
    def describe_table(
        table: TableName,
        detail: Annotated[Literal["summary", "full"], Field(
            description="summary: columns with descriptions; full: also stats, annotations with provenance, findings")]
        = "summary",
        columns: Annotated[list[str] | None, Field(description="only these columns")] = None,
        snapshot: Snapshot = None,
        limit: Annotated[int | None, Field(ge=1, le=LIMITS["describe_table"][1],
                                           description="columns per page (default 40 summary, 20 full, at most 200)")]
        = None,
        cursor: Cursor = None,
    ) -> Annotated[CallToolResult, M.DescribeOut]:
        """Read one table before querying it: columns (paged), meaning, grain, stats, freshness,
        relationships, metrics, verified questions and warnings."""
        return _guard(tools, lambda: tools.describe_table(table, detail, columns, snapshot, limit, cursor))

    @server.tool(annotations=_READ)
    def get_column_values(
        table: TableName,
        column: Annotated[str, Field(description="column name")],
        query: Annotated[str | None, Field(description="only values containing this text (case-insensitive)")] = None,
        snapshot: Snapshot = None, limit: Limit_get_column_values = LIMITS["get_column_values"][0],
        cursor: Cursor = None,
    ) -> Annotated[CallToolResult, M.ColumnValuesOut]:
        """Distinct values of a column with counts, from the data: use it to write filter literals
        exactly as stored (e.g. 'Northeast' vs 'NE')."""
        return _guard(tools, lambda: tools.get_column_values(table, column, query, snapshot, limit, cursor))

    @server.tool(annotations=_READ)
    def find_join_path(
        from_table: TableName, to_table: TableName, snapshot: Snapshot = None,
    ) -> Annotated[CallToolResult, M.JoinOut]:
        """How to join two tables: hops over declared relationships, SQL join clauses, cardinality,
        canonical or not, and fan-out warnings. Use it instead of guessing join keys."""
        return _guard(tools, lambda: tools.find_join_path(from_table, to_table, snapshot))

    @server.tool(annotations=_READ)
    def list_metrics(
        table: Annotated[str | None, Field(description="only metrics of this table")] = None,
        query: Annotated[str | None, Field(description="words matching a metric's name, description or synonyms")]
        = None,
        snapshot: Snapshot = None, limit: Limit_list_metrics = LIMITS["list_metrics"][0], cursor: Cursor = None,
    ) -> Annotated[CallToolResult, M.MetricsOut]:
        """Defined business metrics with their SQL definitions: use these definitions (or
        query_metric) rather than inventing an aggregate."""
        return _guard(tools, lambda: tools.list_metrics(table, query, snapshot, limit, cursor))

    @server.tool(annotations=_READ)
    def query_metric(
        metric: Annotated[str, Field(description="metric name (table.metric when ambiguous)")],
        group_by: Annotated[list[str] | None, Field(description="dimension columns, e.g. ['dim_store.region']")] = None,
        where: Annotated[str | None, Field(description="extra SQL row condition")] = None,
        time_range: Annotated[list[str | None] | None, Field(
            min_length=2, max_length=2, description="[start inclusive, end exclusive] ISO dates; either may be null")]
        = None,
        grain: Annotated[Literal["day", "week", "month", "quarter", "year", "fiscal_week", "fiscal_period",
                                 "fiscal_quarter", "fiscal_year"] | None, Field(
            description="time grain of the metric's time column")] = None,
        snapshot: Snapshot = None, limit: Limit_query_metric = LIMITS["query_metric"][0],
        cursor: Cursor = None,
    ) -> Annotated[CallToolResult, M.MetricQueryOut]:
        """Compute a defined metric by dimensions and time grain: returns rows and the SQL it ran."""
        return _guard(tools, lambda: tools.query_metric(metric, group_by, where, time_range, grain, snapshot, limit,
                                                         cursor))

    @server.tool(annotations=_READ)
    def query_catalog(
        query: Annotated[str, Field(description='path query, e.g. /[obj_id = "acme"]/*/[obj_type = "table" '
                                                'and stats.row_count > 1000]')],
        snapshot: Snapshot = None, limit: Limit_query_catalog = LIMITS["query_catalog"][0], cursor: Cursor = None,
    ) -> Annotated[CallToolResult, M.QueryOut]:
        """Raw catalog objects matching a path query (one step per tree level: catalog, namespace,
        table, partition, file). For metadata questions the other tools do not answer."""
        return _guard(tools, lambda: tools.query_catalog(query, snapshot, limit, cursor))

    @server.tool(annotations=_READ)
    def list_snapshots(
        snapshot: Snapshot = None, limit: Limit_list_snapshots = LIMITS["list_snapshots"][0],
        cursor: Cursor = None,
    ) -> Annotated[CallToolResult, M.SnapshotsOut]:
        """The commit log (newest first) and named snapshots: when data was loaded and by whom."""
        return _guard(tools, lambda: tools.list_snapshots(snapshot, limit, cursor))

    @server.tool(annotations=_READ)
    def diff_snapshots(
        from_snapshot: Annotated[int | str, Field(description="the older state: handle, vid, name or ISO time")],
        to_snapshot: Annotated[int | str | None, Field(description="the newer state; default: the latest")] = None,
        prefix: Annotated[str | None, Field(description="only under this catalog/namespace/table (dotted or path)")]
        = None,
        limit: Limit_diff_snapshots = LIMITS["diff_snapshots"][0], cursor: Cursor = None,
    ) -> Annotated[CallToolResult, M.DiffOut]:
        """What changed between two snapshots: tables added or removed, schema changes, files
        loaded or dropped per table, annotations written."""
        return _guard(tools, lambda: tools.diff_snapshots(from_snapshot, to_snapshot, prefix, limit, cursor))

    @server.tool(annotations=_READ)
    def check_staleness(
        table: Annotated[str | None, Field(description="one table; default: every table")] = None,
        depth: Annotated[Literal["metadata", "data"], Field(
            description="metadata: compare annotations with the schema history (fast); data: also check the rows")]
        = "metadata",
        snapshot: Snapshot = None, limit: Limit_check_staleness = LIMITS["check_staleness"][0],
        cursor: Cursor = None,
    ) -> Annotated[CallToolResult, M.StalenessOut]:
        """Annotations that may no longer be true (stale or suspect), each with a reason and a
        suggestion. Check before trusting a description, grain, join or metric."""
        return _guard(tools, lambda: tools.check_staleness(table, depth, snapshot, limit, cursor))

    @server.tool(annotations=_READ)
    def run_sql(
        sql: Annotated[str, Field(description="one read-only DuckDB SELECT; tables as catalog.namespace.table")],
        snapshot: Snapshot = None, limit: Limit_run_sql = LIMITS["run_sql"][0],
        cursor: Cursor = None,
    ) -> Annotated[CallToolResult, M.SqlOut]:
        """Run one read-only SQL statement over exactly the files of the snapshot: rows (bounded),
        the tables it read, and warnings for deprecated or stale tables it used."""
        return _guard(tools, lambda: tools.run_sql(sql, snapshot, limit, cursor))

    @server.tool(annotations=_WRITE)
    def annotate(
        table: Annotated[str, Field(description="dotted table name (or catalog/namespace for instructions)")],
        fields: Annotated[dict[str, Any], Field(
            description="table: description, grain {text, keys}, owner, tags, synonyms, deprecated {reason, "
                        "replaced_by}, freshness_sla, certified, instructions; column: description, synonyms, unit, "
                        "sample_values, enum, role")],
        column: Annotated[str | None, Field(description="annotate this column instead of the table")] = None,
        confidence: Annotated[float, Field(ge=0.0, le=1.0, description="how sure you are, 0..1")] = 0.7,
        note: Annotated[str | None, Field(max_length=2000, description="why (evidence, query used)")] = None,
        ctx: Context | None = None,
    ) -> Annotated[CallToolResult, M.AnnotateOut]:
        """Record what you learned about a table or column (source 'agent', your token as author)
        so later agents can use it. Needs a write token over HTTP."""
        role, principal = caller(ctx, options)
        if role != "write":
            raise CodedToolError(f"a {role!r} token cannot annotate; use a token with role 'write'",
                                 "PermissionDeniedError")
        return _guard(tools, lambda: tools.annotate(table, column, fields, confidence, note, principal))

    if read_only:
        server.remove_tool("annotate")
    _strict_schemas(server)
    return server


def _version() -> str:
    """The installed semcat package's version (what `initialize` reports as serverInfo.version)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("semcat")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"
