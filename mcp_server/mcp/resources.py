"""MCP resources (stub)."""
from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from mcp_server.mcp.context import ToolContext


def register(server: MCPServer, s: ToolContext, instructions: str) -> None:
    """Publish the resources."""
