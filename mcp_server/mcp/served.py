"""One catalog, both transports: `semcat serve --data DIR` leaves DIR/serve.json naming where it serves, so a
`semcat mcp --data DIR` started while it runs (the catalog is locked: one process owns it) can say the exact
`semcat mcp --url ... --token ...` line to use instead, or connect through it (mcp_server.mcp.stdio).

    with advertised(data_dir, host, port, tokens=True): ...      # the serve process, while it holds DIR
    info = find_server(data_dir)                                  # {"url", "pid", "tokens"} of a live server, or None

Invariants: only the process that holds the catalog writes the file (it is written after the catalog
opened, from the MCP endpoint's lifespan); it is replaced atomically and removed at stop only if it is
still this process's; a file whose pid is not running (a server that was killed) is ignored. It holds no
secret: whether the server wants a token, never a token.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from typing import Any

__all__ = ["SERVE_FILE", "advertised", "find_server", "local_url", "mcp_line"]

SERVE_FILE = "serve.json"


def local_url(host: str, port: int) -> str:
    """The URL a process on this machine reaches a server bound to `host`:`port` by (a wildcard bind: loopback)."""
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


@contextlib.contextmanager
def advertised(data_dir: str, host: str, port: int, *, tokens: bool) -> Iterator[str]:
    """Write DATA_DIR/serve.json ({"url", "pid", "tokens", "started"}) for the life of the block; yields its path."""
    path = os.path.join(data_dir, SERVE_FILE)
    body = {"url": local_url(host, port), "pid": os.getpid(), "tokens": tokens,
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(body, f)
    os.replace(tmp, path)
    try:
        yield path
    finally:
        with contextlib.suppress(OSError):
            if _read(path).get("pid") == os.getpid():
                os.remove(path)


def _read(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _running(pid: object) -> bool:
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # running, as another user
        return True
    return True


def find_server(data_dir: str) -> dict[str, Any] | None:
    """{"url", "pid", "tokens"} of the running `semcat serve` that serves DATA_DIR, or None."""
    info = _read(os.path.join(data_dir, SERVE_FILE))
    if not isinstance(info.get("url"), str) or not _running(info.get("pid")):
        return None
    return info


def mcp_line(info: dict[str, Any]) -> str:
    """The `semcat mcp` command line that reaches the server `info` describes."""
    return f"semcat mcp --url {info['url']}" + (" --token <a token of that server>" if info.get("tokens") else "")
