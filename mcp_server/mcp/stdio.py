"""`semcat mcp`: the MCP server over stdio, on an embedded catalog (`--data DIR`, this process owns
it) or in front of a remote one (`--url URL --token T`: every read and write goes through that
server, which checks the token).

One catalog, both transports: when DIR is held by a running `semcat serve` (it names itself in
DIR/serve.json, `served`), `--data DIR` connects through that server, saying so on stderr, if that
needs no guess (the server takes no token, or `--token` was given); otherwise it fails with the exact
`semcat mcp --url ... --token ...` line to use.

Cold start (issue 47): importing the MCP SDK, pydantic's models and the semantic layer costs most of a new
session's CPU, so this module imports none of them on its way to the first answer. `run_stdio` starts a
thread that opens the catalog and makes the tools (`_Build.first`), while the front (front.py) answers the
client's `initialize`, `tools/list` (stored: list_store.py) and first read calls itself, with the tools'
own code and the SDK's exact answers; the thread imports the SDK and builds the server on the same
`ToolContext` (`_Build.then`) only after that first call was answered (or the front met something it leaves
to the SDK, or stdin was idle). Then the SDK's stdio transport takes the wire: it reads first what the
front queued for it, in order (the `initialize` again, so its session is initialized as usual, whose second
answer is dropped: `_Wire`). The SQL preload starts only after that, and the SQL warm-up a `describe_table`
starts waits for the session's first answer to a call (`ToolContext.after_answer`). The cyclic garbage
collector is off from the start until that first answer (what the imports made is frozen once the server is
built: docs/performance.md, cold start, fourth pass). The wire is a private copy of fds 0 and 1, and fds 0
and 1 point at /dev/null and stderr, as the SDK's own transport does: stray output never corrupts it."""

from __future__ import annotations

import gc
import json
import os
import sys
import threading
from typing import TYPE_CHECKING, Any, BinaryIO

from mcp_server.mcp import list_store
from mcp_server.mcp.front import FRONT_ENV, Front, envelope
from mcp_server.mcp.served import find_server, mcp_line

if TYPE_CHECKING:
    from catalog_core.api import CatalogAPI
    from mcp_server.mcp.reads import Reads

__all__ = ["run_stdio", "open_catalog"]

# the SQL preload (cc.prepare_sql: a worker process builds the latest snapshot's SQL database) starts this long
# after the session's first answer to a call, or PRELOAD_IDLE_S after the server is built if no call came:
# on a small machine a worker process starting beside the first describe_table slows it (issue 47, cold start)
PRELOAD_DELAY_S = 1.0
PRELOAD_IDLE_S = 20.0
FAST_INIT_ENV = "SEMCAT_MCP_FAST_INIT"  # "0": leave `initialize` to the SDK (the test that compares the answers)


def open_catalog(data_dir: str | None, url: str | None, token: str | None, create: bool = False) -> CatalogAPI:
    """A client for `url`, or the catalog in `data_dir`: an existing one, or a new empty one with `create`
    (a directory that holds no catalog raises NotFoundError naming the catalogs below it)."""
    import catalog_core as cc
    from catalog_core.errors import CatalogError

    if not (url or data_dir):
        raise ValueError("give --data DIR (an embedded catalog) or --url URL (a semcat serve)")
    try:
        return cc.open(url or data_dir or "", token=token, create=create and not url)
    except CatalogError:
        info = find_server(data_dir) if data_dir and not url else None
        if info is None:
            raise
    said = f"catalog directory {data_dir} is open in `semcat serve` (pid {info['pid']}) at {info['url']}, which owns it"
    if info.get("tokens") and not token:
        raise ValueError(f"{said}; reach it through that server: {mcp_line(info)} (or point an HTTP MCP client at "
                         f"{info['url']}/mcp)") from None
    print(f"semcat: {said}; connecting through it (as `{mcp_line(info)}`)", file=sys.stderr, flush=True)
    return cc.open(str(info["url"]), token=token)


def prepare_first_sql(cat: CatalogAPI) -> None:
    """Have an idle SQL worker build the latest snapshot's sandboxed database in the background
    (`cc.prepare_sql`: never blocks, never raises), so an agent's first `run_sql` does not pay it."""
    import catalog_core as cc
    from mcp_server.mcp.data import SQL_TIMEOUT_S

    cc.prepare_sql(cat, timeout_s=SQL_TIMEOUT_S)


class _Loading(threading.Thread):
    """Beside the front: opens the catalog and makes the tools' context and the front's tools (`first`),
    then, once `go` is set (front.py: the SDK waits for the first call), imports the SDK and builds the
    server (`then`)."""

    def __init__(self, first: Any, then: Any, go: threading.Event) -> None:
        super().__init__(name="semcat-mcp-load", daemon=True)
        self._first = first
        self._then = then
        self.go = go
        self.tools_ready = threading.Event()
        self.done = threading.Event()
        self.front_tools: Any = None
        self.cat: Any = None
        self.result: tuple[Any, Any] | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            try:
                self.cat, ctx, self.front_tools = self._first()
            finally:
                self.tools_ready.set()
            self.go.wait()
            self.result = self.cat, self._then(self.cat, ctx)
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread, which raises it
            self.error = exc
            if self.cat is not None and self.result is None:
                self.cat.close()
        finally:
            self.tools_ready.set()
            self.done.set()

    def tools(self) -> Any:
        """The front's tools once made (None if the catalog or they failed)."""
        self.tools_ready.wait()
        return self.front_tools

    def get(self) -> tuple[Any, Any]:
        self.go.set()
        self.join()
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result


def _config(reads: Reads | None, who: str, token_budget: int | None, read_only: bool, url: str | None) -> dict[str, Any]:
    """What the server's tools/list depends on besides the code (list_store's key)."""
    return {"reads": None if reads is None else [type(reads).__module__, type(reads).__qualname__,
                                                 sorted((k, repr(v)) for k, v in vars(reads).items())],
            "author": who, "token_budget": token_budget, "read_only": read_only, "remote": url is not None}


class _Build:
    """What the loading thread does: `first` opens the catalog and makes the tools' context and the front's tools;
    `then` imports the SDK and builds the server on that context."""

    def __init__(self, data_dir: str | None, url: str | None, token: str | None, *, create: bool,
                 reads: Reads | None, who: str, now: float | None, token_budget: int | None, read_only: bool,
                 serve_calls: bool, answered: threading.Event) -> None:
        self.data_dir, self.url, self.token, self.create = data_dir, url, token, create
        self.reads, self.who, self.now, self.token_budget = reads, who, now, token_budget
        self.read_only, self.serve_calls, self.answered = read_only, serve_calls, answered
        self.freeze = False

    def first(self) -> tuple[Any, Any, Any]:
        cat = open_catalog(self.data_dir, self.url, self.token, create=self.create)  # a catalog that cannot open fails fast
        try:
            from mcp_server.mcp.bounds import TOKEN_BUDGET
            from mcp_server.mcp.context import make_context

            ctx = make_context(cat, reads=self.reads, author=self.who, now=self.now,
                               token_budget=TOKEN_BUDGET if self.token_budget is None else self.token_budget)
            ctx.answered = self.answered  # a call's background work waits for the session's first answer
            tools = None
            if self.serve_calls:
                from mcp_server.mcp.front import FrontTools

                tools = FrontTools(ctx)
        except BaseException:
            cat.close()
            raise
        return cat, ctx, tools

    def then(self, cat: Any, ctx: Any) -> Any:
        from mcp_server.mcp.server import create_server

        server = create_server(cat, read_only=self.read_only, context=ctx)
        if self.freeze:
            gc.freeze()  # what the imports made lives as long as the process: no collection looks at it again
        return server


def run_stdio(data_dir: str | None = None, url: str | None = None, token: str | None = None, *,
              reads: Reads | None = None, author: str | None = None,
              now: str | float | None = None, create: bool = False, token_budget: int | None = None,
              read_only: bool = False) -> None:
    """`reads`: what the tools read of the semantic layer (default all; the eval's conditions show less).
    `now`: judge freshness at this time (seconds or ISO-8601; default: the clock). `create`: make a
    new empty catalog in `data_dir` if it holds none (otherwise that is refused)."""
    t_now = None
    if now is not None:
        from catalog_core.model import parse_time

        t_now = parse_time(now)
        if t_now is None:
            raise ValueError(f"--now {now!r} is not an ISO-8601 time or seconds since the epoch, e.g. "
                             "2025-03-10T13:00:00Z")
    who = author or f"agent:{os.environ.get('USER', 'stdio')}"
    fast_init = os.environ.get(FAST_INIT_ENV, "1") != "0"
    serve_calls = fast_init and os.environ.get(FRONT_ENV, "1") != "0"
    answered_a_call = threading.Event()  # set at the first answer to a request other than initialize

    build = _Build(data_dir, url, token, create=create, reads=reads, who=who, now=t_now, token_budget=token_budget,
                   read_only=read_only, serve_calls=serve_calls, answered=answered_a_call)

    # no cyclic garbage collection until the first answer to a call (issue 47, cold start): the imports and the
    # first call allocate ~200,000 objects that live for the session and make almost no garbage with cycles
    # (measured: ~5,000 objects after the imports), yet the collector's passes over them cost ~15% of the imports
    gc_paused = build.freeze = gc.isenabled()
    gc.disable()
    go = threading.Event()
    if not serve_calls:
        go.set()
    loading = _Loading(build.first, build.then, go)
    loading.start()
    try:
        wire = _Wire.claim()
        wire.answered_a_call = answered_a_call
        got = _front(wire, loading, store=list_store.store_dir(None if url else data_dir),
                     config=_config(reads, who, token_budget, read_only, url), fast_init=fast_init,
                     serve_calls=serve_calls)
        if got is None:
            return  # the client ended the session before anything needed the SDK
        cat, server = got
    except BaseException:
        if gc_paused:
            gc.enable()
        raise
    cancel = threading.Event()

    def preload() -> None:
        answered_a_call.wait(PRELOAD_IDLE_S)
        if gc_paused:
            gc.enable()
        if not cancel.wait(PRELOAD_DELAY_S):
            prepare_first_sql(cat)

    threading.Thread(target=preload, name="semcat-sql-preload", daemon=True).start()
    try:
        try:
            _serve(server, wire)
        except BaseException as exc:
            if not client_went_away(exc):
                raise
    finally:
        cancel.set()
        answered_a_call.set()
        if gc_paused:
            gc.enable()
        cat.close()


def _front(wire: _Wire, loading: _Loading, *, store: str | None, config: dict[str, Any], fast_init: bool,
           serve_calls: bool) -> tuple[Any, Any] | None:
    """The front answers (front.py) until the server is built, then hands the wire over; (catalog, server), or
    None when stdin ended before anything needed the SDK (the catalog is closed then)."""
    front = Front(wire.lines, wire.write_line, store=store, config=config, tools=loading.tools,
                  sdk_ready=loading.done, failed=lambda: loading.error is not None,
                  answered_a_call=wire.answered_a_call, serve=serve_calls, go=loading.go)
    if fast_init:
        front.run()  # answers initialize, tools/list and the first read calls while the server loads
    wire.take_over(front)
    if front.eof and not front.deferred:
        loading.go.set()
        loading.done.wait()  # the loading ends at once or soon
        if loading.error is not None:
            raise loading.error  # a catalog that cannot open is refused even when stdin ended at once
        if loading.cat is not None:
            loading.cat.close()
        return None
    return loading.get()


def _serve(server: Any, wire: _Wire) -> None:
    """The SDK's stdio transport and session on `wire` (what MCPServer.run("stdio") does on fds 0 and 1)."""
    import anyio
    from mcp.server.stdio import stdio_server

    async def go() -> None:
        async with stdio_server(stdin=anyio.wrap_file(wire), stdout=anyio.wrap_file(wire)) as (read, write):  # type: ignore[arg-type]
            low = server._lowlevel_server
            await low.run(read, write, low.create_initialization_options())

    anyio.run(go)


class _Wire:
    """The session's stdin and stdout: private duplicates of fds 0 and 1, read and written as UTF-8 lines.
    A reader thread puts each line of stdin on `lines` ("" at its end), which the front reads first; the
    SDK's transport then reads what the front queued for it (`pending`), then `lines`. The SDK's answer to
    an `initialize` the front answered already is dropped (`answered`); its answer to a `tools/list` the
    front could not answer is stored (`list_keys`, list_store)."""

    def __init__(self, rfd: int, wfd: int) -> None:
        import io
        import queue

        self._in = io.TextIOWrapper(os.fdopen(rfd, "rb", closefd=False), encoding="utf-8", errors="replace")
        self._out: BinaryIO = os.fdopen(wfd, "wb", closefd=False)
        self.lines: queue.Queue[str] = queue.Queue()
        self.pending: list[str] = []
        self.eof = False
        self.answered: Any = None  # the id of the `initialize` answered by the front
        self.answered_a_call = threading.Event()  # set at the first answer to a request other than initialize
        self.list_keys: dict[Any, str] = {}
        self.store: str | None = None
        self._reader: threading.Thread | None = None

    def start_reading(self) -> None:
        def read() -> None:
            while True:
                try:
                    line = self._in.readline()
                except (OSError, ValueError):
                    line = ""
                self.lines.put(line)
                if not line:
                    return

        self._reader = threading.Thread(target=read, name="semcat-stdin", daemon=True)
        self._reader.start()

    @classmethod
    def claim(cls) -> _Wire:
        """Take fds 0 and 1 for the wire; point them at /dev/null and stderr for everything else (a child's
        or a library's stray output must not corrupt the JSON-RPC stream)."""
        try:
            import fcntl

            rfd = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
            wfd = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
        except ImportError:  # not POSIX: plain duplicates (not inherited: os.dup makes them non-inheritable)
            rfd, wfd = os.dup(0), os.dup(1)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        sys.stdout.flush()
        os.dup2(2, 1)
        wire = cls(rfd, wfd)
        wire.start_reading()
        return wire

    def take_over(self, front: Front) -> None:
        """What the front queued for the SDK comes first; then the rest of stdin (none after its end)."""
        self.pending = list(front.pending)
        self.eof = front.eof
        self.answered = front.initialized
        self.list_keys = dict(front.list_keys)
        self.store = front.store

    def write_line(self, text: str) -> None:
        """The front's answer (`text` without its newline), written at once."""
        self._out.write((text + "\n").encode("utf-8"))
        self._out.flush()

    # what anyio.wrap_file calls (in worker threads, one call at a time per direction)
    def readline(self) -> str:
        if self.pending:
            return self.pending.pop(0)
        if self.eof:
            return ""
        line = self.lines.get()
        if not line:
            self.eof = True
        return line

    def write(self, text: str) -> int:
        if self.answered is not None or not self.answered_a_call.is_set() or self.list_keys:
            try:
                msg = json.loads(text)
            except ValueError:
                msg = None
            is_answer = isinstance(msg, dict) and "id" in msg and ("result" in msg or "error" in msg)
            if is_answer and self.answered is not None and msg.get("id") == self.answered:
                self.answered = None  # the SDK's answer to the replayed `initialize`: the client has it already
                return len(text)
            if is_answer and not (isinstance(msg.get("result"), dict) and "serverInfo" in msg["result"]):
                self.answered_a_call.set()
            if is_answer and msg.get("id") in self.list_keys:
                self._out.write(text.encode("utf-8"))
                self._out.flush()
                self._keep_list(msg["id"], text)  # after the client has it
                return len(text)
        self._out.write(text.encode("utf-8"))
        return len(text)

    def _keep_list(self, request_id: Any, text: str) -> None:
        """Store the SDK's `tools/list` answer `text` for later sessions' fronts (list_store): the exact text
        after its envelope, if the answer has the envelope the front writes and the whole list."""
        key = self.list_keys.pop(request_id)
        head, line = envelope(request_id), text.rstrip("\n")
        if not (line.startswith(head) and line.endswith("}")):
            return
        body = line[len(head):-1]
        try:
            result = json.loads(body)
        except ValueError:
            return
        if isinstance(result, dict) and isinstance(result.get("tools"), list) and not result.get("nextCursor"):
            list_store.save(self.store, key, body)

    def flush(self) -> None:
        self._out.flush()


_GONE = (BrokenPipeError, ConnectionResetError)


def client_went_away(exc: BaseException) -> bool:
    """`exc` says only that the client closed its end of the pipe (a broken pipe, possibly inside the
    SDK's task-group exception groups): a normal end of a stdio session, not an error."""
    if isinstance(exc, BaseExceptionGroup):
        return all(client_went_away(e) for e in exc.exceptions)
    return isinstance(exc, _GONE)

