"""The stdio front (issue 47, cold start: mcp_server/mcp/front.py, list_store.py): a new `semcat mcp` session
answers `tools/list` (stored) and its first read calls before the MCP SDK is imported, with the SDK's answers,
each request answered once, in order, a call run once, and no stored `tools/list` reused for another
configuration. Real `semcat mcp` subprocesses; `HOLD` keeps the SDK's import waiting until the test releases it,
which proves who answered (the SDK cannot have)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import catalog_core as cc
from tests.helpers import build_lake
from tests.mcp_server.test_mcp_transports import env

NOW = "2025-04-01T00:00:00Z"

# `semcat mcp ARGS` (the CLI's own entry point) in a process whose import of `mcp` waits until the file named by
# argv[1] exists (not on sys.meta_path's lock: the wait is in the module's exec, which holds only `mcp`'s lock), and
# whose `discovery.describe` (what describe_table runs) says on stderr each time it runs
HOLD = """
import importlib.abc, importlib.machinery, os, runpy, sys, time
release = sys.argv[1]

class Held(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name != "mcp":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        self.real = spec.loader
        spec.loader = self
        return spec
    def create_module(self, spec):
        return self.real.create_module(spec)
    def exec_module(self, module):
        print("HOLD sdk", file=sys.stderr, flush=True)
        give_up = time.monotonic() + 600  # a failed test never releases it: do not linger
        while not os.path.exists(release) and time.monotonic() < give_up:
            time.sleep(0.01)
        self.real.exec_module(module)

if release != "-":
    sys.meta_path.insert(0, Held())
import mcp_server.mcp.discovery as discovery
real_describe = discovery.describe
def counted(*args, **kwargs):
    print("RUN describe", args[1], file=sys.stderr, flush=True)
    return real_describe(*args, **kwargs)
discovery.describe = counted
sys.argv = ["semcat", "mcp", *sys.argv[2:]]
runpy.run_module("mcp_server.cli", run_name="__main__")
"""


SESSIONS: list[subprocess.Popen[bytes]] = []


@pytest.fixture(autouse=True)
def _no_session_left():
    """A test that fails while a session waits leaves no process behind."""
    yield
    while SESSIONS:
        p = SESSIONS.pop()
        if p.poll() is None:
            p.kill()
            p.wait()


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> str:
    d = str(tmp_path_factory.mktemp("cold-front") / "data")
    cat = cc.Catalog.open(d)
    build_lake(cat)
    cat.close()
    return d


def _msg(i: int | str | None, method: str, params: dict[str, Any] | None = None) -> bytes:
    m: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if i is not None:
        m["id"] = i
    if params is not None:
        m["params"] = params
    return (json.dumps(m) + "\n").encode()


def _init(i: int | str = 1) -> bytes:
    return _msg(i, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                  "clientInfo": {"name": "cold", "version": "1"}})


def _call(i: int, name: str, arguments: dict[str, Any]) -> bytes:
    return _msg(i, "tools/call", {"name": name, "arguments": arguments})


class Session:
    """A `semcat mcp --data wh --now NOW` subprocess; with `hold`, its SDK import waits for `release()`."""

    def __init__(self, wh: str, tmp: str, *, hold: bool, extra: tuple[str, ...] = (), front: bool = True,
                 fast_init: bool = True) -> None:
        self.release_file = os.path.join(tmp, f"release-{time.monotonic_ns()}") if hold else "-"
        e = env()
        if not front:
            e["SEMCAT_MCP_FRONT"] = "0"
        if not fast_init:
            e["SEMCAT_MCP_FAST_INIT"] = "0"
        self.p = subprocess.Popen([sys.executable, "-c", HOLD, self.release_file, "--data", wh, "--now", NOW, *extra],
                                  env=e, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        SESSIONS.append(self.p)
        self.answers: list[dict[str, Any]] = []

    def send(self, *lines: bytes) -> None:
        assert self.p.stdin is not None
        self.p.stdin.write(b"".join(lines))
        self.p.stdin.flush()

    def until(self, i: int | str) -> dict[str, Any]:
        """Read answers until the one to request `i` (kept in `answers`, in the order written)."""
        assert self.p.stdout is not None
        while True:
            line = self.p.stdout.readline()
            assert line, self.stderr()
            msg = json.loads(line)
            self.answers.append(msg)
            if msg.get("id") == i:
                return msg

    def release(self) -> None:
        if self.release_file != "-":
            open(self.release_file, "w").close()

    def close(self) -> str:
        self.release()
        assert self.p.stdin is not None and self.p.stdout is not None
        self.p.stdin.close()
        self.answers += [json.loads(x) for x in self.p.stdout.read().splitlines()]
        assert self.p.wait(120) == 0, self.stderr()
        return self.stderr()

    def stderr(self) -> str:
        assert self.p.stderr is not None
        return self.p.stderr.read().decode()


def _table(wh: str) -> str:
    from mcp_server.mcp.context import ToolContext

    cat = cc.Catalog.open(wh)
    try:
        return sorted(ToolContext(cat).tables(cat.latest_vid))[0]
    finally:
        cat.close()


def _exchange(wh: str, tmp: str, table: str, **kw: Any) -> tuple[list[dict[str, Any]], str]:
    """initialize, initialized, tools/list, then calls the front serves: a describe_table, the same table again
    with a wrong name (an error result), pin_snapshot and search_tables; the answers by id and stderr."""
    s = Session(wh, tmp, hold=kw.pop("hold", False), **kw)
    s.send(_init(1), _msg(None, "notifications/initialized"), _msg(2, "tools/list"),
           _call(3, "describe_table", {"table": table}),
           _call(4, "describe_table", {"table": table + "_nope"}),
           _call(5, "pin_snapshot", {}),
           _call(6, "search_tables", {"query": "orders", "limit": 3, "snapshot": None, "cursor": None}))
    s.until(6)
    err = s.close()
    return s.answers, err


def test_the_fronts_answers_are_the_sdks_and_come_before_the_sdk(wh, tmp_path):
    """initialize, tools/list and the first calls (a card, an error result, a pin, a search) answered by the
    front while the SDK's import is held equal the SDK's own answers (the front off, SEMCAT_MCP_FAST_INIT=0),
    JSON for JSON; the first session stores tools/list (the SDK answered it), the next one is answered from it."""
    table = _table(wh)
    sdk, _ = _exchange(wh, str(tmp_path), table, fast_init=False)
    first, _ = _exchange(wh, str(tmp_path), table)  # nothing stored yet: tools/list (and what follows) by the SDK
    assert os.listdir(os.path.join(wh, "cache", "mcp")), "the SDK's tools/list answer was not stored"
    fronted, err = _exchange(wh, str(tmp_path), table, hold=True)  # all of it answered before the SDK loads
    assert [a["id"] for a in fronted] == [1, 2, 3, 4, 5, 6]  # the SDK runs calls concurrently; the front in order
    by_id = {a["id"]: a for a in sdk}
    assert len(sdk) == 6 and by_id == {a["id"]: a for a in fronted} == {a["id"]: a for a in first}
    assert by_id[4]["result"]["isError"] is True and "[NoSuchTableError]" in by_id[4]["result"]["content"][0]["text"]
    assert err.count("RUN describe") == 2, err  # each describe_table ran once


def test_a_burst_written_before_the_sdk_is_ready_is_answered_in_full_once_each_in_order(wh, tmp_path):
    """Requests and notifications written at once: the front answers what it can (a call), queues the first
    request it does not answer (ping) and everything after it for the SDK, in order: every request is answered
    exactly once, the front's answer before the SDK's, and the SDK, released only after the front answered,
    answers the rest; the describe_table queued behind ping runs once."""
    table = _table(wh)
    _exchange(wh, str(tmp_path), table)  # tools/list stored
    s = Session(wh, str(tmp_path), hold=True)
    s.send(_init("i"), _msg(None, "notifications/initialized"), _msg(2, "tools/list"),
           _call(3, "describe_table", {"table": table}), _msg(4, "ping"), _call(5, "describe_table", {"table": table}),
           _msg(None, "notifications/roots/list_changed"), _call(6, "list_snapshots", {"limit": 2}),
           _msg(7, "prompts/list"), _call(8, "describe_table", {"table": table, "limit": 0}))
    s.until(3)
    assert [a["id"] for a in s.answers] == ["i", 2, 3]  # the front's, while the SDK is held
    s.release()
    s.until(8)
    err = s.close()
    ids = [a["id"] for a in s.answers]
    assert sorted(ids, key=str) == sorted(["i", 2, 3, 4, 5, 6, 7, 8], key=str) and len(ids) == 8, ids
    assert ids[:3] == ["i", 2, 3]
    by = {a["id"]: a for a in s.answers}
    assert by[4]["result"] == {} and "prompts" in by[7]["result"]
    assert not by[5]["result"].get("isError") and not by[6]["result"].get("isError")
    assert by[8]["result"]["isError"] is True and "InvalidValueError" in by[8]["result"]["content"][0]["text"]
    assert err.count("RUN describe") == 2, err  # ids 3 and 5; 8 failed validation before it ran


def test_a_changed_configuration_does_not_reuse_a_stored_tools_list(wh, tmp_path):
    """A --read-only session's tools/list (no annotate) is never answered to a session without it, nor the other
    way round: each configuration gets the SDK's own list."""
    table = _table(wh)
    plain, _ = _exchange(wh, str(tmp_path), table)
    ro, _ = _exchange(wh, str(tmp_path), table, extra=("--read-only",))
    ro_sdk, _ = _exchange(wh, str(tmp_path), table, extra=("--read-only",), fast_init=False)
    plain_again, _ = _exchange(wh, str(tmp_path), table, hold=True)

    def names(answers: list[dict[str, Any]]) -> list[str]:
        return [t["name"] for t in next(a for a in answers if a["id"] == 2)["result"]["tools"]]

    assert "annotate" in names(plain) and "annotate" in names(plain_again)
    assert "annotate" not in names(ro) and names(ro) == names(ro_sdk)
    assert sorted(plain_again, key=lambda a: a["id"]) == sorted(plain, key=lambda a: a["id"])


def test_arguments_the_front_is_not_sure_of_go_to_the_sdk(wh, tmp_path):
    """A value of the wrong type, an unknown argument, an echoed snapshot object, a string the SDK parses as JSON
    first, a tool it does not serve and a cursor on tools/list are left to the SDK (held: nothing answered until it is released), and its answers are
    the SDK's."""
    table = _table(wh)
    _exchange(wh, str(tmp_path), table)
    for i, line in enumerate([_call(3, "describe_table", {"table": table, "limit": "5"}),
                              _call(3, "describe_table", {"table": table, "tabel": table}),
                              _call(3, "describe_table", {"table": table, "snapshot": {"vid": 1}}),
                              _call(3, "describe_table", {"table": table, "snapshot": "null"}),
                              _call(3, "check_staleness", {"table": table}),
                              _msg(3, "tools/list", {"cursor": "x"})]):
        s = Session(wh, str(tmp_path), hold=True)
        s.send(_init(1), _msg(None, "notifications/initialized"), line)
        s.until(1)
        deadline = time.monotonic() + 60
        assert s.p.stderr is not None
        while b"HOLD sdk" not in s.p.stderr.readline() and time.monotonic() < deadline:
            pass
        s.release()
        got = s.until(3)
        s.close()
        assert [a["id"] for a in s.answers] == [1, 3], (i, s.answers)
        assert "result" in got or "error" in got


def test_the_sdks_exception_classes_are_the_ones_the_tools_raise():
    """sdk_errors loads the SDK's exceptions module without the SDK; the SDK imported after it uses the same
    classes (a CodedToolError is the SDK's ToolError, so its message reaches the client)."""
    code = ("import sys\nfrom mcp_server.mcp.errors import CodedToolError\nassert 'mcp' not in sys.modules\n"
            "from mcp_server.mcp import server\nimport mcp.server.mcpserver as ms\n"
            "from mcp.server.mcpserver.exceptions import ToolError\n"
            "from mcp.server.mcpserver.tools.base import ToolError as T2\n"
            "assert issubclass(CodedToolError, ToolError) and T2 is ToolError and ms.exceptions.ToolError is ToolError\n"
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], env=env(), capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr[-2000:]


def test_the_front_checks_only_what_it_understands():
    from mcp_server.mcp.front import fits

    assert fits(3, {"type": "integer", "minimum": 1, "maximum": 5})
    assert not fits(0, {"type": "integer", "minimum": 1}) and not fits(True, {"type": "integer"})
    assert not fits(3.0, {"type": "integer"}) and not fits("3", {"type": "integer"})
    assert fits(None, {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None})
    assert fits(["a"], {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]})
    assert not fits(["a", 1], {"type": "array", "items": {"type": "string"}})
    assert fits("full", {"enum": ["summary", "full"], "type": "string"}) and not fits("x", {"enum": ["summary"]})
    assert not fits("x", {"type": "string", "pattern": "x"})  # a keyword it does not check: not sure
    assert not fits({"vid": 1}, {"anyOf": [{"type": "integer"}, {"type": "object"}]})


def test_the_fronts_shape_of_a_call_result_is_the_sdks_for_every_handshake_version():
    """front.call_answer shapes a tools/call result with _v2025_11_25's CallToolResult (not importing
    mcp_types.methods): the SDK's surface for every handshake version."""
    import mcp_types._v2025_11_25 as v2025
    from mcp_types import methods

    from mcp_server.mcp.handshake import HANDSHAKE_VERSIONS

    assert all(methods.SERVER_RESULTS[("tools/call", v)] is v2025.CallToolResult for v in HANDSHAKE_VERSIONS)


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
                     lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=4), kids, max_size=3),
                     max_leaves=8)


@settings(max_examples=150, deadline=None)
@given(texts=st.lists(st.text(max_size=8), max_size=3), error=st.booleans(),
       structured=st.none() | st.dictionaries(st.text(max_size=4), _json, max_size=4))
def test_the_fronts_plain_shape_is_the_models_byte_for_byte(texts, error, structured):
    """call_answer shapes a plain result (text contents, a structured object, the error flag) without importing
    _v2025_11_25 (front._plain_shape); the line it writes is the one the model's validation and dump give."""
    import mcp_types
    from mcp_types._v2025_11_25 import CallToolResult as Shape

    from mcp_server.mcp.front import _plain_shape, call_answer

    result = mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=t) for t in texts],
                                      structured_content=structured, is_error=error)
    dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    assert _plain_shape(dumped) is not None  # the fast path is taken for these
    want = Shape.model_validate(dumped, by_name=False).model_dump(by_alias=True, mode="json", exclude_none=True)
    assert json.dumps(_plain_shape(dumped)) == json.dumps(want)
    line = call_answer(7, result, "2025-06-18")
    assert line == mcp_types.JSONRPCResponse(jsonrpc="2.0", id=7, result=want).model_dump_json(by_alias=True,
                                                                                               exclude_unset=True)


def test_the_fronts_plain_shape_leaves_other_results_to_the_model():
    from mcp_server.mcp.front import _plain_shape

    assert _plain_shape({"content": [{"type": "image", "data": "x", "mimeType": "image/png"}]}) is None
    assert _plain_shape({"content": [], "_meta": {"k": 1}}) is None
    assert _plain_shape({"content": [{"type": "text", "text": "a", "annotations": {"priority": 1}}]}) is None
    assert _plain_shape({"content": [], "structuredContent": [1]}) is None


# what a tool's structured content holds: `model_dump(mode="json")` output (an infinity is already null there)
_json_out = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                         | st.text(max_size=5),
                         lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=4), kids, max_size=3),
                         max_leaves=8)


@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=12), structured=st.dictionaries(st.text(max_size=4), _json_out, max_size=4),
       request_id=st.integers(min_value=-2**53, max_value=2**53) | st.text(max_size=6))
def test_a_plain_tool_result_is_written_as_the_sdks_call_tool_result(text, structured, request_id):
    """The tools return a ToolResult (results.py: no mcp_types on the front's path); its wire form is the SDK
    CallToolResult's dump, and the line call_answer writes for it is the one the SDK's models give."""
    import mcp_types
    from mcp_types._v2025_11_25 import CallToolResult as Shape

    from mcp_server.mcp.front import call_answer
    from mcp_server.mcp.results import ToolResult

    plain = ToolResult(text, structured)
    sdk = plain.to_sdk()
    dumped = sdk.model_dump(by_alias=True, mode="json", exclude_none=True)
    assert plain.wire() == dumped and json.dumps(plain.wire()) == json.dumps(dumped)
    want = Shape.model_validate(dumped, by_name=False).model_dump(by_alias=True, mode="json", exclude_none=True)
    line = mcp_types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=want).model_dump_json(
        by_alias=True, exclude_unset=True)
    assert call_answer(request_id, plain, "2025-06-18") == line == call_answer(request_id, sdk, "2025-06-18")


def test_the_fronts_first_answer_imports_no_protocol_models(wh):
    """A stdio session's front answers describe_table without importing mcp_types (its models cost about 0.1 s
    of a new session's first answer, issue 47); the SDK's server built afterwards publishes the same tool."""
    table = _table(wh)
    code = f"""
import json, sys
import catalog_core as cc
from mcp_server.mcp.context import make_context
from mcp_server.mcp.front import FrontTools, call_answer
cat = cc.Catalog.open({wh!r})
tools = FrontTools(make_context(cat, now=0.0))
fn = tools.tools["describe_table"]
import inspect
schema = {{"type": "object", "properties": {{n: {{"type": "string"}} for n in inspect.signature(fn).parameters}}}}
out = tools.call("describe_table", {{"table": {table!r}}}, schema)
line = call_answer(3, out, "2025-06-18")
print(json.dumps({{"protocol_models": sorted(m for m in sys.modules if m.startswith("mcp_types")),
                  "error": json.loads(line)["result"].get("isError")}}))
from mcp_server.mcp.server import create_server
import asyncio
server = create_server(cat, context=tools.s)
r = asyncio.run(server.call_tool("describe_table", {{"table": {table!r}}}))
print(json.dumps({{"same": r.structured_content == out.structured_content, "sdk_type": type(r).__name__}}))
cat.close()
"""
    got = subprocess.run([sys.executable, "-c", code], env=env(), capture_output=True, text=True, timeout=180)
    assert got.returncode == 0, got.stderr[-3000:]
    first, second = (json.loads(x) for x in got.stdout.splitlines()[-2:])
    assert first == {"protocol_models": [], "error": False}, first
    assert second == {"same": True, "sdk_type": "CallToolResult"}, second
