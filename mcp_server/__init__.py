"""semcat's servers: the FastAPI HTTP API (`http`), the MCP server (`mcp`) and the `semcat` CLI (`cli`)."""
