"""What `initialize` answers, in a module that imports nothing heavy: `semcat mcp` (stdio) answers a
client's `initialize` from here while the MCP SDK and the catalog load in the background (issue 47,
cold start: the SDK alone is ~1.3 s of CPU to import). `server.py` builds the SDK server from the same
INSTRUCTIONS and version; tests/mcp_server/test_cold_start.py checks that this answer is byte for byte
the SDK's, for every protocol version."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["INSTRUCTIONS", "HANDSHAKE_VERSIONS", "CAPABILITIES", "server_version", "initialize_answer"]

INSTRUCTIONS = """semcat: a versioned catalog of a data lake. Start with pin_snapshot and pass its handle as
`snapshot` to every later call, so all answers describe the same state. Find tables with search_tables,
read one with describe_table (columns page with cursor), ground literals with get_column_values, join with
find_join_path, prefer list_metrics/query_metric over hand-written aggregates, and run SQL with run_sql.
Heed `warnings`: deprecated tables, missed freshness SLAs and stale annotations."""

# the installed SDK's mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS, oldest first (a test compares them): an
# `initialize` naming one of them is answered with it, any other with the newest
HANDSHAKE_VERSIONS: tuple[str, ...] = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")

# what the SDK announces for the server create_server builds (tools, resources, prompts, completions, logging)
CAPABILITIES: dict[str, Any] = {"completions": {}, "logging": {}, "prompts": {"listChanged": False},
                                "resources": {"listChanged": False, "subscribe": False},
                                "tools": {"listChanged": False}}


def server_version() -> str:
    """The installed semcat package's version (`initialize`'s serverInfo.version)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("semcat")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


def _str(d: Any, key: str) -> bool:
    return isinstance(d, dict) and isinstance(d.get(key), str)


def initialize_answer(message: Any, *, name: str = "semcat") -> str | None:
    """The JSON-RPC line (no newline) answering `message` if it is a well-formed `initialize` request,
    exactly as the SDK would; None for anything else (which is left to the SDK, errors included)."""
    if not (isinstance(message, dict) and message.get("jsonrpc") == "2.0" and message.get("method") == "initialize"
            and isinstance(message.get("id"), (int, str)) and not isinstance(message.get("id"), bool)):
        return None
    params = message.get("params")
    if not isinstance(params, dict):
        return None
    if not (_str(params, "protocolVersion") and isinstance(params.get("capabilities"), dict)
            and _str(params.get("clientInfo"), "name") and _str(params.get("clientInfo"), "version")):
        return None  # the SDK says what is wrong with it
    asked = params["protocolVersion"]
    result = {"capabilities": CAPABILITIES, "instructions": INSTRUCTIONS,
              "protocolVersion": asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1],
              "serverInfo": {"name": name, "version": server_version()}}
    return json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}, separators=(",", ":"),
                      ensure_ascii=False)
