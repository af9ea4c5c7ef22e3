"""completion/complete, logging and progress notifications (mcp_server.mcp.completions, .notices),
through the Python SDK client: in memory (2026-07-28, and the handshake era with mode="legacy")
and over streamable HTTP at /mcp of a real uvicorn server on a loopback port."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import PromptReference, ResourceTemplateReference

import catalog_core as cc
from eval.fixtures import mcplake
from eval.fixtures.lakes import LakeBuilder
from eval.fixtures.mcplake import DIM, FCT
from mcp_server.http.server import default_plugins, serve_in_thread
from mcp_server.mcp import create_server
from mcp_server.mcp.completions import MAX_VALUES
from mcp_server.mcp.notices import LOGGER, PROGRESS_STEPS
from mcp_server.mcp.resources import TABLE_TEMPLATE

# the SDK marks the logging capability deprecated at 2026-07-28; handshake-era clients still use it
pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

CARD = ResourceTemplateReference(type="ref/resource", uri=TABLE_TEMPLATE)
REVIEW = PromptReference(type="ref/prompt", name="review_stale_annotations")
ANSWER = PromptReference(type="ref/prompt", name="answer_question")
MANY = 130  # more tables than one completion shows


class Heard:
    """What a client was sent besides results: log messages and progress notifications."""

    def __init__(self) -> None:
        self.logs: list[tuple[str, Any]] = []
        self.progress: list[tuple[float, float | None, str | None]] = []

    async def log(self, params: Any) -> None:
        assert params.logger == LOGGER
        self.logs.append((params.level, params.data))

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append((progress, total, message))

    def levels(self) -> set[str]:
        return {lv for lv, _ in self.logs}


def session(server: Any, fn: Any, heard: Heard | None = None, **kw: Any) -> Any:
    async def go() -> Any:
        async with Client(server, logging_callback=heard.log if heard else None, **kw) as c:
            return await fn(c)
    return anyio.run(go)


def values(server: Any, ref: Any, name: str, value: str, context: dict[str, str] | None = None,
           **kw: Any) -> tuple[list[str], int | None, bool | None]:
    r = session(server, lambda c: c.complete(ref, {"name": name, "value": value}, context), **kw)
    return r.completion.values, r.completion.total, r.completion.has_more


def refused(server: Any, ref: Any, name: str, value: str, context: dict[str, str] | None = None) -> Any:
    """The error data of a completion request the server refuses."""
    async def go(c: Any) -> Any:
        try:
            await c.complete(ref, {"name": name, "value": value}, context)
        except MCPError as exc:
            return exc.error
        raise AssertionError("the completion was not refused")
    return session(server, go)


@pytest.fixture(scope="module")
def many_server(tmp_path_factory):
    """A server over the MCP lake with MANY extra tables (acme.misc.t000 ...)."""
    d = tmp_path_factory.mktemp("many")
    cat = cc.Catalog.open(str(d / "data"))
    mcplake.build(cat, d / "files", extra_tables=MANY)
    yield create_server(cat)
    cat.close()


# ------------------------------------------------------------------ completions
def test_table_names_complete_by_prefix_for_the_card_template_and_the_review_prompt(server):
    assert values(server, CARD, "name", "acme.core.f") == ([FCT], 1, False)
    assert values(server, CARD, "name", "fct_") == ([FCT], 1, False)  # a part after a dot
    assert values(server, CARD, "name", "ACME.CORE.D") == ([DIM], 1, False)  # any case
    names, total, more = values(server, REVIEW, "table", "acme.core.")
    assert names == sorted(names) and set(names) == {FCT, DIM, mcplake.OLD, mcplake.WIDE} and total == 4 and not more
    # full-name matches before part matches: "acme" is a full-name prefix of every table
    names, total, _ = values(server, CARD, "name", "")
    assert total == len(names) == 28 and names[:2] == [DIM, FCT]


def test_completion_is_bounded_with_total_and_has_more(many_server):
    names, total, more = values(many_server, CARD, "name", "acme.misc.")
    assert len(names) == MAX_VALUES and total == MANY and more is True
    assert names == sorted(names) and names[0] == "acme.misc.t00"
    names, total, more = values(many_server, CARD, "name", "acme.misc.t12")  # t12, t120..t129
    assert names == ["acme.misc.t12"] + [f"acme.misc.t{i}" for i in range(120, 130)] and total == 11 and not more


def test_an_unknown_prefix_or_an_argument_without_completions_gets_an_empty_list(server):
    assert values(server, CARD, "name", "nosuch") == ([], 0, False)
    assert values(server, ANSWER, "question", "net rev") == ([], 0, False)
    assert values(server, CARD, "cursor", "") == ([], 0, False)


def test_an_unknown_prompt_or_template_is_invalid_params(server):
    for ref, what in ((PromptReference(type="ref/prompt", name="nosuch_prompt"), "nosuch_prompt"),
                      (ResourceTemplateReference(type="ref/resource", uri="file:///{path}"), "file:///{path}")):
        error = refused(server, ref, "table", "acme")
        assert error.code == -32602 and what in error.message
        assert "review_stale_annotations" in error.message  # it says what can be completed


def test_tables_come_from_the_snapshot_in_the_context(fresh_cat):
    server = create_server(fresh_cat)
    before = fresh_cat.resolve(None)
    LakeBuilder(fresh_cat, "/nonexistent", catalog="acme").table("acme.core.fct_returns", [("id", "bigint")])
    assert values(server, CARD, "name", "acme.core.fct")[0] == [FCT, "acme.core.fct_returns"]
    assert values(server, CARD, "name", "acme.core.fct", {"snapshot": str(before)})[0] == [FCT]
    assert values(server, REVIEW, "table", "acme.core.fct", {"snapshot": f"pin:{before}"})[0] == [FCT]
    error = refused(server, CARD, "name", "acme", {"snapshot": "pin:99999"})
    assert error.code == -32602 and "snapshot" in error.message and "99999" in error.message


def test_the_snapshot_argument_completes_named_snapshots(fresh_cat):
    fresh_cat.snapshot("release-2024-q4")
    fresh_cat.snapshot("release-2025-q1")
    fresh_cat.snapshot("audit")
    server = create_server(fresh_cat)
    assert values(server, ANSWER, "snapshot", "rel") == (["release-2024-q4", "release-2025-q1"], 2, False)
    assert values(server, CARD, "snapshot", "AUD") == (["audit"], 1, False)


def test_the_capabilities_declare_completions_and_logging(server):
    async def capabilities(c):
        return c.server_capabilities
    for kw in ({}, {"mode": "legacy"}):
        caps = session(server, capabilities, **kw)
        assert caps.completions is not None and caps.logging is not None, kw


# ------------------------------------------------------------------ logging
def test_set_level_is_honoured_on_the_connection(server):
    """Handshake era: nothing until logging/setLevel, then every message at or above the level."""
    heard = Heard()

    async def go(c):
        marks = []
        await c.call_tool("describe_table", {"table": FCT})
        marks.append(len(heard.logs))
        await c.set_logging_level("info")
        await c.call_tool("describe_table", {"table": FCT})
        marks.append(len(heard.logs))
        await c.call_tool("describe_table", {"table": "acme.core.fct_ordres"})  # an error result
        marks.append(len(heard.logs))
        await c.set_logging_level("warning")
        await c.call_tool("describe_table", {"table": FCT})
        await c.call_tool("describe_table", {"table": "acme.core.fct_ordres"})
        marks.append(len(heard.logs))
        await c.set_logging_level("debug")
        await c.call_tool("run_sql", {"sql": "SELECT 1"})
        return marks

    marks = session(server, go, heard, mode="legacy")
    logs = heard.logs
    assert marks[0] == 0, logs  # no level asked: no log message
    assert logs[:1] == [("info", logs[0][1])] and logs[0][1].startswith(f"describe_table: {FCT}")
    assert marks[1] == 1 and [lv for lv, _ in logs[1:marks[2]]] == ["warning"]
    assert "fct_ordres" in logs[1][1] and "failed" in logs[1][1]
    assert [lv for lv, _ in logs[marks[2]:marks[3]]] == ["warning"]  # the success's info left out
    assert [lv for lv, _ in logs[marks[3]:]] == ["debug", "info"] and "SELECT 1" in logs[marks[3]][1]


def test_a_2026_client_opts_in_per_request(server):
    heard, quiet = Heard(), Heard()
    session(server, lambda c: c.call_tool("describe_table", {"table": FCT}), heard, log_level="info")
    session(server, lambda c: c.call_tool("describe_table", {"table": FCT}), quiet)
    assert heard.levels() == {"info"} and quiet.logs == []


# ------------------------------------------------------------------ progress
def _check_progress(progress: list[tuple[float, float | None, str | None]], tables: int) -> None:
    """0 at the start, then each table checked (at most PROGRESS_STEPS), then done = total; increasing."""
    assert progress[0][0] == 0 and "started" in (progress[0][2] or "")
    steps = [p for p in progress if "tables" in (p[2] or "")]
    assert 0 < len(steps) <= PROGRESS_STEPS and steps[-1][0] == tables and steps[-1][1] == tables + 1
    assert f"checked {tables} of {tables} tables" in (steps[-1][2] or "")
    assert progress[-1][:2] == (tables + 1, tables + 1) and "done" in (progress[-1][2] or "")
    ps = [p for p, _, _ in progress]
    assert ps == sorted(set(ps)), ps  # strictly increasing


def test_whole_catalog_check_staleness_reports_each_table(fresh_cat):
    server = create_server(fresh_cat)
    tables = len(server.tool_context.tables(fresh_cat.resolve(None)))  # type: ignore[attr-defined]
    heard = Heard()

    async def go(c):
        return await c.call_tool("check_staleness", {}, progress_callback=heard.on_progress)
    r = session(server, go)
    assert not r.is_error and r.structured_content["total"] >= 1
    _check_progress(heard.progress, tables)
    assert len([p for p in heard.progress if "tables" in (p[2] or "")]) == tables  # few tables: every one


def test_progress_is_bounded_on_a_large_catalog(many_server):
    heard = Heard()
    session(many_server, lambda c: c.call_tool("check_staleness", {"depth": "metadata"},
                                               progress_callback=heard.on_progress), mode="legacy")
    _check_progress(heard.progress, MANY + 4)
    assert len(heard.progress) < MANY  # every other table


def test_run_sql_query_metric_and_one_table_report_start_and_done(server):
    heard = Heard()

    async def go(c):
        await c.call_tool("run_sql", {"sql": f"SELECT count(*) FROM {FCT}"}, progress_callback=heard.on_progress)
        await c.call_tool("check_staleness", {"table": FCT}, progress_callback=heard.on_progress)
        await c.call_tool("query_metric", {"metric": "revenue"}, progress_callback=heard.on_progress)
        await c.call_tool("describe_table", {"table": FCT}, progress_callback=heard.on_progress)  # not a long call
        return None
    session(server, go)
    assert [(p, t) for p, t, _ in heard.progress] == [(0, None), (1, 1)] * 3
    assert [m.split(":")[0] for _, _, m in heard.progress] == ["run_sql"] * 2 + ["check_staleness"] * 2 + [
        "query_metric"] * 2


def test_no_progress_without_a_token(fresh_cat):
    heard = Heard()
    r = session(create_server(fresh_cat), lambda c: c.call_tool("check_staleness", {}), heard, log_level="debug")
    assert not r.is_error and heard.progress == [] and heard.levels() == {"debug", "info"}


# ------------------------------------------------------------------ over streamable HTTP
@pytest.fixture
def http_url(fresh_cat):
    handle = serve_in_thread(fresh_cat, plugins=default_plugins())
    yield handle.url + "/mcp"
    handle.stop()


def over_http(url: str) -> Any:
    return streamable_http_client(url, http_client=httpx2.AsyncClient(timeout=120))


def test_completion_logging_and_progress_over_http(http_url, fresh_cat):
    tables = len(create_server(fresh_cat).tool_context.tables(fresh_cat.resolve(None)))  # type: ignore[attr-defined]

    async def go(c: Any, legacy: bool, heard: Heard) -> Any:
        got = await c.complete(CARD, {"name": "name", "value": "fct"})
        if legacy:
            await c.set_logging_level("debug")  # accepted; stateless HTTP: it holds for no later request
        r = await c.call_tool("check_staleness", {"depth": "data" if legacy else "metadata"},
                              progress_callback=heard.on_progress)
        return got.completion, r

    for kw in ({"log_level": "info"}, {"mode": "legacy"}):
        heard = Heard()
        legacy = "mode" in kw
        completion, r = session(over_http(http_url), lambda c: go(c, legacy, heard), heard, **kw)  # noqa: B023
        assert completion.values == [FCT] and completion.total == 1, kw
        assert not r.is_error, r.content[0].text
        _check_progress(heard.progress, tables)  # a cold scan each: another depth
        assert heard.levels() == ({"info"} if "log_level" in kw else set()), (kw, heard.logs)


def test_http_answers_json_unless_a_request_asks_for_notifications(http_url):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "run_sql", "arguments": {"sql": "SELECT 1"}}}
    headers = {"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2025-11-25"}
    plain = httpx.post(http_url, json=body, headers=headers, timeout=120)
    assert plain.status_code == 200 and plain.headers["content-type"].startswith("application/json")
    assert plain.json()["result"]["structuredContent"]["rows"] == [[1]]
    body["params"]["_meta"] = {"progressToken": "tok-1"}
    streamed = httpx.post(http_url, json=body, headers=headers, timeout=120)
    assert streamed.status_code == 200 and streamed.headers["content-type"].startswith("text/event-stream")
    events = [line[len("data: "):] for line in streamed.text.splitlines() if line.startswith("data: ")]
    assert '"progressToken":"tok-1"' in events[0] and '"method":"notifications/progress"' in events[0]
    assert '"result"' in events[-1] and '"rows":[[1]]' in events[-1]


# ------------------------------------------------------------------ prompts/get errors (conformance)
def test_an_unknown_prompt_or_a_missing_argument_is_invalid_params(server):
    """The SDK answered both with JSON-RPC error code 0; the specification says -32602."""
    async def go(c: Any) -> list[Any]:
        errors = []
        for name, args in (("test_simple_prompt", {}), ("review_stale_annotations", {})):
            try:
                await c.get_prompt(name, args)
            except MCPError as exc:
                errors.append(exc.error)
        return errors
    for kw in ({}, {"mode": "legacy"}):
        unknown, missing = session(server, go, **kw)
        assert unknown.code == -32602 and "test_simple_prompt" in unknown.message
        assert "answer_question" in unknown.message and "review_stale_annotations" in unknown.message
        assert missing.code == -32602 and "table" in missing.message, missing


# ------------------------------------------------------------------ over stdio (semcat mcp)
@pytest.mark.slow
def test_set_level_and_progress_over_stdio(lake_dir, tmp_path):
    """`semcat mcp` as a subprocess: a handshake-era setLevel holds for the session's later calls."""
    import shutil
    import sys

    from mcp import StdioServerParameters

    from tests.mcp_server.test_mcp_transports import env

    data = tmp_path / "data"
    shutil.copytree(lake_dir, data)
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_server.cli", "mcp", "--data", str(data)],
                                   env=env())
    heard = Heard()

    async def go(c: Any) -> Any:
        await c.set_logging_level("info")
        got = await c.complete(REVIEW, {"name": "table", "value": "dim"})
        r = await c.call_tool("check_staleness", {}, progress_callback=heard.on_progress)
        return got.completion, r
    completion, r = session(params, go, heard, mode="legacy")
    assert completion.values == [DIM] and not r.is_error
    assert heard.levels() == {"info"} and heard.logs[0][1].startswith("check_staleness: ")
    _check_progress(heard.progress, 28)
