"""MCP prompts (stub)."""
from __future__ import annotations

from mcp.server.mcpserver import MCPServer


def register(server: MCPServer) -> None:
    """Publish the prompts."""
