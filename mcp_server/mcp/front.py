"""The front of a stdio session (issue 47, cold start): what answers the client while the MCP SDK loads.

Importing the SDK (`mcp`: its client, server, starlette, httpx) and building the server cost about half
of a new session's CPU before its first answer. `semcat mcp` (stdio.py) therefore reads the client's
lines itself first and answers, without the SDK:

- `initialize` (`handshake.initialize_answer`, the SDK's answer byte for byte), as before;
- `tools/list` without a cursor, with the SDK's own answer of an earlier session stored for this code,
  configuration and protocol version (`list_store`); nothing stored: the SDK answers it (and it is stored);
- `tools/call` of the read tools in SERVED, with the same tool functions the SDK runs (each family's
  `register` publishes them on a `_Collector` instead of an `MCPServer`), the same `ToolContext` (a pin
  it answered stays valid afterwards), and the SDK's result handling as SemcatServer and `Tool.run` do it:
  the output model validated, a tool's ToolError wrapped as `Error executing tool NAME: ...`, any other
  exception as `Error executing tool NAME` (InternalError), `errors.tool_failure`, `errors.error_result`,
  and the SDK's serialization (`mcp_types`: the result dumped, the protocol version's shape, the JSON-RPC
  envelope). A call is served only when its arguments surely pass the SDK's validation and convert to the
  same values: every argument named in the tool's published input schema, of a plain JSON type the schema
  allows (no objects, no numbers where the schema does not say integer, no schema keyword this module
  does not check, no string the SDK would parse as JSON first), the required ones present, no `_meta` but a progress token (which none of SERVED uses).
  Anything else goes to the SDK unexecuted, so a call runs exactly once, whoever answers it.

Handover: the first message the front does not answer is queued for the SDK, and so is everything after
it, in order; notifications are queued in order too (`notifications/initialized` first), and so is the
`initialize` the front answered (the SDK answers it again, and that answer is dropped: stdio._Wire). The
SDK's transport reads the queue before stdin. The front stops when the SDK is ready (between two
messages, never within one), when it queued a message, or at the end of stdin.

The SDK waits: the loading thread imports it only when the front answered its first call, queued a
message, saw stdin end, or has had nothing to read for FRONT_IDLE_S, so the first call does not share the
interpreter with the SDK's imports (stdio.py)."""

from __future__ import annotations

import inspect
import json
import queue
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from mcp_server.mcp import list_store
from mcp_server.mcp.handshake import HANDSHAKE_VERSIONS, initialize_answer
from mcp_server.mcp.results import ToolResult

if TYPE_CHECKING:
    from mcp_types import CallToolResult

    from mcp_server.mcp.context import ToolContext

__all__ = ["SERVED", "FRONT_ENV", "FRONT_IDLE_S", "FrontTools", "Front", "fits"]

# the read tools the front answers: not the audited ones (run_sql, get_column_values, query_metric: the audit log
# is written by SemcatServer) nor those that report progress (check_staleness, run_sql, query_metric: notices.py)
SERVED = frozenset({"pin_snapshot", "search_tables", "describe_table", "find_join_path", "list_metrics",
                    "query_catalog", "list_snapshots", "diff_snapshots", "get_lineage"})
FRONT_ENV = "SEMCAT_MCP_FRONT"  # "0": the front answers `initialize` only (tools/list and calls: the SDK)
FRONT_IDLE_S = 0.3  # the SDK starts loading after this long with nothing to read
_POLL_S = 0.05
_CHECKED = frozenset({"type", "anyOf", "enum", "const", "minimum", "maximum", "items", "default", "description",
                      "title"})
_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "array": lambda v: isinstance(v, list),
}


def fits(value: Any, schema: Any) -> bool:
    """Whether `value` surely passes the schema's pydantic model unchanged: True only for plain JSON values
    this checker fully understands (False means "not sure": the SDK decides)."""
    if not isinstance(schema, dict) or not set(schema) <= _CHECKED:
        return False
    if "anyOf" in schema:
        rest = {k: v for k, v in schema.items() if k not in ("anyOf", "default", "description", "title")}
        return isinstance(schema["anyOf"], list) and any(fits(value, s) for s in schema["anyOf"]) and \
            (not rest or fits(value, rest))
    if "const" in schema and not (type(value) is type(schema["const"]) and value == schema["const"]):
        return False
    if "enum" in schema and not any(type(value) is type(e) and value == e for e in schema["enum"]):
        return False
    kind = schema.get("type")
    if kind is None:
        return "enum" in schema or "const" in schema
    check = _TYPES.get(kind) if isinstance(kind, str) else None
    if check is None or not check(value):
        return False
    if kind == "integer":
        lo, hi = schema.get("minimum"), schema.get("maximum")
        if (lo is not None and not value >= lo) or (hi is not None and not value <= hi):
            return False
    if kind == "array":
        items = schema.get("items")
        return isinstance(items, dict) and all(fits(v, items) for v in value)
    return True


def _reparsed(value: Any) -> bool:
    """Whether the SDK may replace `value` before validation: a string holding JSON null, an array or an object
    (its `pre_parse_json`, for arguments not typed `str`)."""
    if not isinstance(value, str):
        return False
    try:
        parsed = json.loads(value)
    except (ValueError, RecursionError):
        return False
    return not isinstance(parsed, (str, int, float))


class _Collector:
    """What a tool family's `register(server, s)` needs of a server: the `tool` decorator. It keeps the
    functions instead of publishing them."""

    def __init__(self) -> None:
        self.tools: dict[str, Callable[..., Any]] = {}

    def tool(self, **_: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def keep(fn: Callable[..., Any]) -> Callable[..., Any]:
            self.tools[fn.__name__] = fn
            return fn

        return keep


class FrontTools:
    """The SERVED tools of `s`: the functions the SDK would run, and how the SDK handles what they give."""

    def __init__(self, s: ToolContext) -> None:
        from mcp_server.mcp import data, discovery, history

        self.s = s
        collector = _Collector()
        for family in (history, discovery, data):
            family.register(collector, s)  # the decorator is all register uses
        self.tools = {n: fn for n, fn in collector.tools.items() if n in SERVED}

    def call(self, name: str, arguments: dict[str, Any], schema: Any) -> ToolResult | CallToolResult | None:
        """The result of calling `name` with `arguments` as the SDK would give it; None (nothing run) when the
        front is not sure the SDK would accept the arguments as they are (`fits`)."""
        fn = self.tools.get(name)
        if fn is None or not isinstance(schema, dict) or set(schema) - {"type", "properties", "required",
                                                                       "additionalProperties", "title"}:
            return None
        props = schema.get("properties")
        if schema.get("type") != "object" or not isinstance(props, dict):
            return None
        if not all(k in props and fits(v, props[k]) and not _reparsed(v) for k, v in arguments.items()):
            return None
        if any(r not in arguments for r in schema.get("required") or []):
            return None
        params = inspect.signature(fn).parameters
        if set(params) != set(props) or any(p.kind is not p.POSITIONAL_OR_KEYWORD for p in params.values()):
            return None
        kwargs = {n: arguments[n] if n in arguments else p.default for n, p in params.items()}
        if any(v is inspect.Parameter.empty for v in kwargs.values()):
            return None
        return self._run(name, fn, kwargs)

    def _run(self, name: str, fn: Callable[..., Any], kwargs: dict[str, Any]) -> ToolResult | CallToolResult:
        """`fn(**kwargs)` as SemcatServer.call_tool and the SDK's Tool.run handle it (stdio: the caller is the
        server's author with full rights)."""
        import typing

        from mcp_server.mcp.auth import CALLER, principal_of
        from mcp_server.mcp.errors import error_result, tool_failure
        from mcp_server.mcp.sdk_errors import ResourceError, ToolError, UnexpectedToolError

        bound = CALLER.set(principal_of(None, self.s.options.author))
        try:
            try:
                out = fn(**kwargs)
                if not out.is_error:  # the SDK validates the structured content against the output model
                    model = typing.get_type_hints(fn, include_extras=True)["return"].__metadata__[0]
                    model.model_validate(out.structured_content)
                return cast("ToolResult | CallToolResult", out)
            except UnexpectedToolError as exc:  # the order of Tool.run's handlers
                raise UnexpectedToolError(f"Error executing tool {name}: {exc}") from exc
            except (ToolError, ResourceError) as exc:
                raise ToolError(f"Error executing tool {name}: {exc}") from exc
            except Exception as exc:
                raise UnexpectedToolError(f"Error executing tool {name}") from exc
        except ToolError as exc:
            failure = tool_failure(name, exc)
            if failure is not exc:
                failure.__cause__ = exc.__cause__
            return error_result(failure)
        finally:
            CALLER.reset(bound)


def call_answer(request_id: Any, result: ToolResult | CallToolResult, version: str) -> str:
    """The JSON-RPC line (no newline) the SDK writes for `result` of tools/call `request_id` in a session at
    handshake protocol `version` (mcp.server.runner: `_dump_result`, the version's shape; the envelope).
    A `ToolResult` with an integer or string id is written without `mcp_types` (the same serializer,
    pydantic_core's, as the SDK's `JSONRPCResponse.model_dump_json`)."""
    dumped = result.wire() if isinstance(result, ToolResult) else \
        result.model_dump(by_alias=True, mode="json", exclude_none=True)
    # mcp_types.methods.serialize_server_result("tools/call", version, dumped) for a handshake version, without
    # importing that module (its 2026 models: ~0.1 s): the surface of each is _v2025_11_25's CallToolResult
    # (tests/mcp_server/test_cold_front.py checks that)
    if version not in HANDSHAKE_VERSIONS:
        raise ValueError(f"the front answers handshake versions only, not {version!r}")
    plain = _plain_shape(dumped)
    if plain is not None and type(request_id) in (int, str):  # RequestId: int | str (a bool is neither)
        from pydantic_core import to_json

        return to_json({"jsonrpc": "2.0", "id": request_id, "result": plain}).decode()
    if plain is not None:
        dumped = plain
    else:
        from mcp_types._v2025_11_25 import CallToolResult as Shape

        dumped = Shape.model_validate(dumped, by_name=False).model_dump(by_alias=True, mode="json",
                                                                        exclude_none=True)
    from mcp_types import JSONRPCResponse

    return JSONRPCResponse(jsonrpc="2.0", id=request_id, result=dumped).model_dump_json(by_alias=True,
                                                                                         exclude_unset=True)


_PLAIN_KEYS = frozenset({"content", "structuredContent", "isError", "resultType"})


def _plain_shape(dumped: dict[str, Any]) -> dict[str, Any] | None:
    """What `_v2025_11_25.CallToolResult` validates and dumps `dumped` to, computed without importing it (about
    0.1 s of a first answer), for the results the read tools give: text contents, a structured object, the error
    flag. None for anything else (then the model does it). The model keeps its fields in its own order (content,
    isError, structuredContent; a text content's text, then type) and ignores those it does not know
    (`resultType`); tests/mcp_server/test_cold_front.py checks byte equality with the model."""
    if not set(dumped) <= _PLAIN_KEYS:
        return None
    content, error, structured = dumped.get("content"), dumped.get("isError"), dumped.get("structuredContent")
    if not isinstance(content, list) or not (error is None or isinstance(error, bool)) or \
            not (structured is None or (isinstance(structured, dict) and all(isinstance(k, str) for k in structured))):
        return None
    items = []
    for c in content:
        if not (isinstance(c, dict) and set(c) == {"type", "text"} and c["type"] == "text"
                and isinstance(c["text"], str)):
            return None
        items.append({"text": c["text"], "type": "text"})
    out: dict[str, Any] = {"content": items}
    if error is not None:
        out["isError"] = error
    if structured is not None:
        out["structuredContent"] = structured
    return out


def envelope(request_id: Any) -> str:
    """What the SDK writes before a result's JSON: `{"jsonrpc":"2.0","id":<id>,"result":`."""
    return '{"jsonrpc":"2.0","id":' + json.dumps(request_id, ensure_ascii=False) + ',"result":'


class Front:
    """Reads the client's lines from `lines` (a queue filled by stdio's reader thread; "" is the end of
    stdin) and answers what it can while the loading thread builds the SDK server (module docstring)."""

    def __init__(self, lines: queue.Queue[str], write: Callable[[str], None], *, store: str | None,
                 config: dict[str, Any], tools: Callable[[], FrontTools | None], sdk_ready: threading.Event,
                 failed: Callable[[], bool], answered_a_call: threading.Event, serve: bool = True,
                 go: threading.Event | None = None) -> None:
        self.lines = lines
        self.write = write
        self.store = store
        self.config = config
        self.tools = tools  # waits for the loading thread's FrontTools (None: it failed)
        self.sdk_ready = sdk_ready
        self.failed = failed
        self.answered_a_call = answered_a_call
        self.serve = serve  # False: answer `initialize` only
        self.go = go if go is not None else threading.Event()  # the SDK may load now
        self.pending: list[str] = []  # for the SDK, in order
        self.eof = False
        self.initialized: Any = None  # the id of the `initialize` the front answered
        self.version: str | None = None
        self.list_keys: dict[Any, str] = {}  # ids of tools/list requests queued for the SDK -> their store key
        self.deferred = False  # the front stopped at a message the SDK must answer
        self._schemas: dict[str, Any] | None = None
        self._list_text: str | None = None

    def run(self) -> None:
        """Answer until the handover (module docstring); `pending` then holds what the SDK must read first."""
        idle = time.monotonic()
        seen = 0
        while True:
            if self.sdk_ready.is_set() or self.failed():
                return
            try:
                line = self.lines.get(timeout=_POLL_S)
            except queue.Empty:
                if time.monotonic() - idle >= FRONT_IDLE_S:
                    self.go.set()
                continue
            seen += 1
            if not line:
                self.eof = True
                self.go.set()
                return
            if not self._handle(line, seen == 1):
                self.pending.append(line)
                self.deferred = True
                self.go.set()
                return
            idle = time.monotonic()

    def _handle(self, line: str, first: bool) -> bool:
        """Answer `line`, or queue it for the SDK and keep answering (a notification, the replayed
        `initialize`); False: the SDK must answer it, and what follows."""
        try:
            msg = json.loads(line)
        except ValueError:
            return False
        if not isinstance(msg, dict):
            return False
        method, rid = msg.get("method"), msg.get("id")
        if "id" not in msg:
            if isinstance(method, str) and self.initialized is not None:
                self.pending.append(line)  # a notification: the SDK hears it, in order
                return True
            return False
        if first:
            answer = initialize_answer(msg)
            if answer is None:
                return False
            self.initialized = rid
            asked = msg["params"]["protocolVersion"]
            self.version = asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
            self.write(answer)
            self.pending.append(line)  # the SDK's session is initialized with it too; its answer is dropped
            return True
        if not self.serve or self.version is None or msg.get("jsonrpc") != "2.0" or isinstance(rid, bool) \
                or not isinstance(rid, (int, str)):
            return False
        if method == "tools/list":
            return self._tools_list(msg)
        if method == "tools/call":
            return self._tools_call(msg)
        return False

    def _key(self) -> str:
        assert self.version is not None
        return list_store.fingerprint(self.config, self.version)

    def _listed(self) -> str | None:
        if self._list_text is None:
            self._list_text = list_store.load(self.store, self._key())
        return self._list_text

    def _tools_list(self, msg: dict[str, Any]) -> bool:
        params = msg.get("params")
        plain = params is None or params == {}
        text = self._listed() if plain else None
        if text is None:
            if plain and self.store is not None:
                self.list_keys[msg["id"]] = self._key()  # the SDK's answer is stored (stdio._Wire.write)
            return False
        self.write(envelope(msg["id"]) + text + "}")
        return True

    def _tools_call(self, msg: dict[str, Any]) -> bool:
        params = msg.get("params")
        if not isinstance(params, dict) or not set(params) <= {"name", "arguments", "_meta"}:
            return False
        name, arguments, meta = params.get("name"), params.get("arguments"), params.get("_meta")
        if arguments is None:
            arguments = {}
        text = self._listed()
        if not (isinstance(name, str) and name in SERVED and isinstance(arguments, dict) and text is not None
                and (meta is None or (isinstance(meta, dict) and set(meta) <= {"progressToken"}))):
            return False
        if self._schemas is None:
            self._schemas = {str(t.get("name")): t.get("inputSchema") for t in json.loads(text)["tools"]
                             if isinstance(t, dict)}
        tools = self.tools()
        result = None if tools is None else tools.call(name, arguments, self._schemas.get(name))
        if result is None:
            return False
        assert self.version is not None
        self.write(call_answer(msg["id"], result, self.version))
        self.answered_a_call.set()
        self.go.set()
        return True
