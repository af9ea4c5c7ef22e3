"""`semcat mcp`: the MCP server over stdio, on an embedded catalog (`--data DIR`, this process owns
it) or in front of a remote one (`--url URL --token T`: every read and write goes through that
server, which checks the token).

One catalog, both transports: when DIR is held by a running `semcat serve` (it names itself in
DIR/serve.json, `served`), `--data DIR` connects through that server, saying so on stderr, if that
needs no guess (the server takes no token, or `--token` was given); otherwise it fails with the exact
`semcat mcp --url ... --token ...` line to use.

Cold start (issue 47): importing the MCP SDK, pydantic's models and the semantic layer costs ~2 s of
CPU, so this module imports none of them on its way to the first answer. `run_stdio` starts a thread
that imports them, opens the catalog and builds the server, and meanwhile answers the client's
`initialize` itself (`handshake.initialize_answer`: the SDK's answer, byte for byte). When the server
is built, the SDK's stdio transport takes the wire: it is handed the `initialize` again (so its
session is initialized as usual) and its second answer to it is dropped (`_Wire`). The SQL preload
starts only after that, a few seconds later, and the SQL warm-up a `describe_table` starts waits for the
session's first answer to a call (`ToolContext.after_answer`). The cyclic garbage collector is off from the
start until that first answer (what the imports made is frozen once the server is built: docs/performance.md,
cold start, fourth pass). The wire is a private copy of fds 0 and 1, and fds 0
and 1 point at /dev/null and stderr, as the SDK's own transport does: stray output never corrupts it."""

from __future__ import annotations

import gc
import json
import os
import sys
import threading
from typing import TYPE_CHECKING, Any, BinaryIO

from mcp_server.mcp.handshake import initialize_answer
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
    """Imports the SDK and the tools, opens the catalog and builds the server, beside the front."""

    def __init__(self, build: Any) -> None:
        super().__init__(name="semcat-mcp-load", daemon=True)
        self._build = build
        self.result: tuple[Any, Any] | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self._build()
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread, which raises it
            self.error = exc

    def get(self) -> tuple[Any, Any]:
        self.join()
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result


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

    def build() -> tuple[Any, Any]:
        cat = open_catalog(data_dir, url, token, create=create)  # first: a catalog that cannot open fails fast
        try:
            from mcp_server.mcp.bounds import TOKEN_BUDGET
            from mcp_server.mcp.server import create_server

            server = create_server(cat, reads=reads, author=who, now=t_now,
                                   token_budget=TOKEN_BUDGET if token_budget is None else token_budget,
                                   read_only=read_only)
        except BaseException:
            cat.close()
            raise
        if gc_paused:
            gc.freeze()  # what the imports made lives as long as the process: no collection looks at it again
        return cat, server

    # no cyclic garbage collection until the first answer to a call (issue 47, cold start): the imports and the
    # first call allocate ~200,000 objects that live for the session and make almost no garbage with cycles
    # (measured: ~5,000 objects after the imports), yet the collector's passes over them cost ~15% of the imports
    gc_paused = gc.isenabled()
    gc.disable()
    loading = _Loading(build)
    loading.start()
    try:
        wire = _Wire.claim()
        first = wire.front(loading)  # answers `initialize` while the server loads
        cat, server = loading.get()
    except BaseException:
        if gc_paused:
            gc.enable()
        raise
    server.tool_context.answered = wire.answered_a_call  # a call's background work waits for the first answer
    cancel = threading.Event()

    def preload() -> None:
        wire.answered_a_call.wait(PRELOAD_IDLE_S)
        if gc_paused:
            gc.enable()
        if not cancel.wait(PRELOAD_DELAY_S):
            prepare_first_sql(cat)

    threading.Thread(target=preload, name="semcat-sql-preload", daemon=True).start()
    try:
        if first is None:
            return  # the client closed stdin without a word
        try:
            _serve(server, wire)
        except BaseException as exc:
            if not client_went_away(exc):
                raise
    finally:
        cancel.set()
        wire.answered_a_call.set()
        if gc_paused:
            gc.enable()
        cat.close()


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
    What the SDK's transport reads first is what the front read (`pending`); the SDK's answer to an
    `initialize` the front answered already is dropped (`answered`)."""

    def __init__(self, rfd: int, wfd: int) -> None:
        import io

        self._in = io.TextIOWrapper(os.fdopen(rfd, "rb", closefd=False), encoding="utf-8", errors="replace")
        self._out: BinaryIO = os.fdopen(wfd, "wb", closefd=False)
        self.pending: list[str] = []
        self.answered: Any = None  # the id of the `initialize` answered by the front
        self.answered_a_call = threading.Event()  # set at the first answer to a request other than initialize

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
        return cls(rfd, wfd)

    def front(self, loading: _Loading) -> str | None:
        """Read the client's first line; answer it now if it is `initialize` (and the load has not failed).
        The line is kept for the SDK. None when stdin ended first."""
        line = self._in.readline()
        if not line:
            return None
        self.pending.append(line)
        if os.environ.get(FAST_INIT_ENV, "1") == "0" or loading.error is not None:
            return line
        try:
            message = json.loads(line)
        except ValueError:
            return line  # the SDK answers the parse error
        answer = initialize_answer(message)
        if answer is not None:
            self.answered = message["id"]
            self.write(answer + "\n", _front=True)
            self.flush()
        return line

    # what anyio.wrap_file calls (in worker threads, one call at a time per direction)
    def readline(self) -> str:
        if self.pending:
            return self.pending.pop(0)
        return self._in.readline()

    def write(self, text: str, _front: bool = False) -> int:
        if not _front and (self.answered is not None or not self.answered_a_call.is_set()):
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
        self._out.write(text.encode("utf-8"))
        return len(text)

    def flush(self) -> None:
        self._out.flush()


_GONE = (BrokenPipeError, ConnectionResetError)


def client_went_away(exc: BaseException) -> bool:
    """`exc` says only that the client closed its end of the pipe (a broken pipe, possibly inside the
    SDK's task-group exception groups): a normal end of a stdio session, not an error."""
    if isinstance(exc, BaseExceptionGroup):
        return all(client_went_away(e) for e in exc.exceptions)
    return isinstance(exc, _GONE)

