"""The SDK's own `tools/list` answer, kept on disk so a new stdio session's front (`front.py`) can answer it
before the MCP SDK is imported (issue 47, cold start: real clients send `tools/list` before their first call).

What is stored is the exact text the SDK wrote after `"result":` in its answer to a `tools/list` without a
cursor, keyed by a fingerprint of everything the answer depends on:

- the code: size and modification time of each source file of `mcp_server/mcp` (the tools, their argument
  and output models, the descriptions) and `semantic/models.py` (types the output models use), and of the
  `__init__.py` of the installed `mcp`, `mcp_types`, `pydantic` and `pydantic_core` (a new version of the SDK
  or of pydantic is installed over them), and the interpreter's version: about 30 `stat` calls, no import;
- the server's configuration: what `create_server` is given (the read model's class and settings, the token
  budget, `read_only`, the author) and the protocol version the session negotiated (the SDK shapes an answer
  per version).

A fingerprint that does not match finds nothing: that session's `tools/list` goes to the SDK, whose answer
is then stored. So the first session after the code, the SDK or the options change pays the SDK's import
before its `tools/list` (and, behind it in order, its first call) is answered; every later one does not.

Where: DATA/cache/mcp of an embedded catalog (`--data`), else (`--url`) the user's cache directory
(`$XDG_CACHE_HOME/semcat/mcp`, default `~/.cache/semcat/mcp`). Entries are written atomically (temporary
file, then rename) and only KEEP of them stay; a torn or foreign file is never served. `SEMCAT_LIST_STORE=0`
turns the store off (then the SDK answers every `tools/list`)."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from typing import Any

__all__ = ["fingerprint", "store_dir", "load", "save", "KEEP", "ENV"]

KEEP = 8  # entries kept (a few configurations and protocol versions)
ENV = "SEMCAT_LIST_STORE"
_PREFIX = "tools-list-"
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_DISTS = ("mcp", "mcp_types", "pydantic", "pydantic_core")


def store_dir(data_dir: str | None) -> str | None:
    """Where entries live: DATA/cache/mcp, or the user's cache directory without `data_dir`; None when off."""
    if os.environ.get(ENV, "1") == "0":
        return None
    if data_dir:
        return os.path.join(data_dir, "cache", "mcp")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "semcat", "mcp")


def _stat(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return f"{path}:-"
    return f"{path}:{st.st_size}:{st.st_mtime_ns}"


def _code() -> list[str]:
    import importlib.util

    parts = [sys.version]
    here = os.path.join(_ROOT, "mcp_server", "mcp")
    try:
        names = sorted(n for n in os.listdir(here) if n.endswith(".py"))
    except OSError:
        names = []
    parts += [_stat(os.path.join(here, n)) for n in names]
    parts.append(_stat(os.path.join(_ROOT, "semantic", "models.py")))
    for dist in _DISTS:
        spec = importlib.util.find_spec(dist) if dist not in sys.modules else sys.modules[dist].__spec__
        parts.append(_stat(spec.origin) if spec is not None and spec.origin else f"{dist}:-")
    return parts


def fingerprint(config: dict[str, Any], version: str) -> str:
    """The key of the `tools/list` answer of this code with server configuration `config` (JSON-able values)
    at protocol `version`."""
    text = json.dumps({"code": _code(), "config": config, "version": version}, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def _path(where: str, key: str) -> str:
    return os.path.join(where, f"{_PREFIX}{key[:32]}.json")


def load(where: str | None, key: str) -> str | None:
    """The stored result text for `key`, or None (no entry, another key's, or an unreadable one)."""
    if where is None:
        return None
    try:
        with open(_path(where, key), encoding="utf-8") as f:
            entry = json.load(f)
    except (OSError, ValueError):
        return None
    if not (isinstance(entry, dict) and entry.get("key") == key and isinstance(entry.get("result"), str)):
        return None
    text: str = entry["result"]
    try:
        if not isinstance(json.loads(text).get("tools"), list):
            return None
    except (ValueError, AttributeError):
        return None
    return text


def save(where: str | None, key: str, result_text: str) -> None:
    """Store `result_text` (the JSON text of a `tools/list` result) for `key`; never raises (a read-only or
    full disk only means the next session asks the SDK again)."""
    if where is None:
        return
    try:
        os.makedirs(where, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=where)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({"key": key, "result": result_text}, f)
            os.replace(tmp, _path(where, key))
        except BaseException:
            os.unlink(tmp)
            raise
        entries = sorted((os.path.join(where, n) for n in os.listdir(where) if n.startswith(_PREFIX)),
                         key=lambda p: os.stat(p).st_mtime_ns, reverse=True)
        for old in entries[KEEP:]:
            os.unlink(old)
    except OSError:
        pass
