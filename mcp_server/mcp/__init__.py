"""The MCP server of semcat (DESIGN.md, section MCP tools): snapshot-pinned, bounded tools for agents.

    from mcp_server.mcp import create_server
    server = create_server(cat)                      # an mcp.server.mcpserver.MCPServer
    server.run()                                     # stdio (what `semcat mcp --data DIR` does)

Over HTTP it is mounted at /mcp of `semcat serve` by `mcp_server.mcp.http.mount_mcp`.
"""

from mcp_server.mcp.server import READ_TOOLS, TOOL_NAMES, WRITE_TOOLS, create_server

__all__ = ["create_server", "TOOL_NAMES", "READ_TOOLS", "WRITE_TOOLS"]
