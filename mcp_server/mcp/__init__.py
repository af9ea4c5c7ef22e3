"""The MCP server of semcat (DESIGN.md, section MCP tools): snapshot-pinned, bounded tools for agents.

    from mcp_server.mcp import create_server
    server = create_server(cat)                      # an mcp.server.mcpserver.MCPServer
    server.run()                                     # stdio (what `semcat mcp --data DIR` does)

Over HTTP it is mounted at /mcp of `semcat serve` by `mcp_server.mcp.http.mount_mcp`. The names below
are looked up when first used, so `semcat mcp` (stdio.py) can answer `initialize` before the MCP SDK
is imported (issue 47, cold start).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp_server.mcp.server import READ_TOOLS, TOOL_NAMES, WRITE_TOOLS, create_server

__all__ = ["create_server", "TOOL_NAMES", "READ_TOOLS", "WRITE_TOOLS"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from mcp_server.mcp import server

        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
