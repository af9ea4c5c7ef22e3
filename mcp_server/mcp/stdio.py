"""`semcat mcp`: the MCP server over stdio, on an embedded catalog (`--data DIR`, this process owns
it) or in front of a remote one (`--url URL --token T`: every read and write goes through that
server, which checks the token).

One catalog, both transports: when DIR is held by a running `semcat serve` (it names itself in
DIR/serve.json, `served`), `--data DIR` connects through that server, saying so on stderr, if that
needs no guess (the server takes no token, or `--token` was given); otherwise it fails with the exact
`semcat mcp --url ... --token ...` line to use."""

from __future__ import annotations

import os
import sys

from catalog_core.api import CatalogAPI
from mcp_server.mcp.bounds import TOKEN_BUDGET
from mcp_server.mcp.reads import Reads
from mcp_server.mcp.served import find_server, mcp_line
from mcp_server.mcp.server import create_server

__all__ = ["run_stdio", "open_catalog"]

PRELOAD_DELAY_S = 3.0  # after start, when cc.prepare_sql builds the first snapshot's SQL database


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


def run_stdio(data_dir: str | None = None, url: str | None = None, token: str | None = None, *,
              reads: Reads | None = None, author: str | None = None,
              now: str | float | None = None, create: bool = False, token_budget: int = TOKEN_BUDGET,
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
    import threading

    cat = open_catalog(data_dir, url, token, create=create)
    # the SQL preload starts once the session has answered its first calls: on a small machine a worker
    # process starting beside initialize and the first describe_table slows both (issue 47, cold start)
    preload = threading.Timer(PRELOAD_DELAY_S, prepare_first_sql, args=(cat,))
    preload.daemon = True
    try:
        who = author or f"agent:{os.environ.get('USER', 'stdio')}"
        preload.start()
        server = create_server(cat, reads=reads, author=who, now=t_now, token_budget=token_budget,
                               read_only=read_only)
        try:
            server.run("stdio")
        except BaseException as exc:
            if not client_went_away(exc):
                raise
            quiet_stdout()  # the client is gone: end as a closed stdin would, with no traceback
    finally:
        preload.cancel()
        cat.close()


_GONE = (BrokenPipeError, ConnectionResetError)


def client_went_away(exc: BaseException) -> bool:
    """`exc` says only that the client closed its end of the pipe (a broken pipe, possibly inside the
    SDK's task-group exception groups): a normal end of a stdio session, not an error."""
    if isinstance(exc, BaseExceptionGroup):
        return all(client_went_away(e) for e in exc.exceptions)
    return isinstance(exc, _GONE)


def quiet_stdout() -> None:
    """Point fd 1 at /dev/null, so the interpreter's last flush of stdout does not report the broken pipe
    (the Python docs' recipe for SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no stdout at all
        pass
